/*
 * cuda_fused_emu_write.c - writes, on stdout, the source of the compiled
 * programs tests/cuda_fused_emu.cpp runs: for each test program of
 * cuda_fused_emu.h, each dtype, fused (kind 0) and fused_multi (kind 3),
 * the ops read from the argument and written as constants, what
 * plugins/cuda/fused_source.c gives NVRTC, for the host compiler (after
 * cuda_fused_emu_shim.h, as NVRTC gets it after plugin_ops.h). Each
 * program goes into a namespace of its own with its kernel renamed (the
 * sources all define the same names), behind a C function run(a, p) in
 * the table emu_gens, with its key. The keys hold no layout: each
 * program's kernel takes the harness's emu_lay_rt (DLA_LAY_RUNTIME), so
 * one compiled program serves every layout, with the words fused.c
 * computed for the launch.
 */
#include "plugins/cuda/fused_kern.h"
#include "tests/cuda_fused_emu.h"

#include <stdio.h>
#include <stdlib.h>

_Static_assert(sizeof(dla__cu_fused_key_t) <= EMU_KEY_INTS * sizeof(int32_t) &&
                   sizeof(dla__cu_fused_key_t) % sizeof(int32_t) == 0,
               "the key fits emu_gen's");

int main(void)
{
    printf("/* Written by tests/cuda_fused_emu_write from plugins/cuda/fused_source.c; do not "
           "edit. */\n#include \"tests/cuda_fused_emu_shim.h\"\n#include "
           "\"tests/cuda_fused_emu.h\"\n#define DLA_LAY_RUNTIME emu_lay_rt\n");
    int n = 0;
    dla__cu_fused_key_t keys[EMU_NPROG * 8];
    int constops_of[EMU_NPROG * 8];
    for (int i = 0; i < EMU_NPROG; i++)
        for (int f64 = 0; f64 < 2; f64++)
            for (int multi = 0; multi < 2; multi++)
                for (int constops = 0; constops < 2; constops++) {
                    dla_fused_multi_args m;
                    emu_program(i, f64, &m);
                    dla__cu_fused_key_t *k = &keys[n];
                    if (multi)
                        dla__cu_fused_multi_key(&m, k);
                    else
                        dla__cu_fused_key(&m.program, 0, 0, k);
                    const size_t size = dla__cu_fused_source(k, constops, NULL, 0) + 1;
                    char *src = malloc(size);
                    if (!src)
                        return 1;
                    dla__cu_fused_source(k, constops, src, size);
                    printf("\nnamespace emu_g%d {\n#define %s emu_g%d_kernel\n%s\n#undef %s\n"
                           "static void run(const void *a, const void *p)\n{\n"
                           "    emu_g%d_kernel(*(const %s *)a, *(const dla_fprog *)p);\n}\n"
                           "} // namespace emu_g%d\n",
                           n, multi ? DLA__CU_K_FMULTI : DLA__CU_K_FUSED, n, src,
                           multi ? DLA__CU_K_FMULTI : DLA__CU_K_FUSED, n,
                           multi ? "dla_fmviews" : "dla_fviews", n);
                    free(src);
                    constops_of[n] = constops;
                    n++;
                }
    printf("\nextern \"C\" const emu_gen emu_gens[] = {\n");
    for (int g = 0; g < n; g++) {
        const int32_t *w = (const int32_t *)&keys[g];
        printf("    {{");
        for (size_t j = 0; j < sizeof keys[g] / sizeof(int32_t); j++)
            printf("%s%d", j ? ", " : "", (int)w[j]);
        printf("}, %d, emu_g%d::run},\n", constops_of[g], g);
    }
    printf("};\nextern \"C\" const int emu_ngens = %d;\n", n);
    return ferror(stdout) || fflush(stdout) ? 1 : 0;
}

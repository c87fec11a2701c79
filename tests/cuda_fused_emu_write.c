/*
 * cuda_fused_emu_write.c - writes, on stdout, the source of the compiled
 * programs tests/cuda_fused_emu.cpp runs: for each test program of
 * cuda_fused_emu.h, each dtype, fused (kind 0), fused_reduce (1), its pair
 * (2, second register EMU_REDUCE_REG2) and fused_multi (kind 3),
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
    dla__cu_fused_key_t keys[EMU_NPROG * 16];
    int constops_of[EMU_NPROG * 16], reduce_of[EMU_NPROG * 16];
    /* kind: 0 fused, 1 fused_reduce, 2 the pair, 3 fused_multi; the
     * reduces take the sums' programs */
    for (int i = 0; i < EMU_NPROG; i++)
        for (int f64 = 0; f64 < 2; f64++)
            for (int kind = 0; kind < 4; kind++)
                for (int constops = 0; constops < 2; constops++) {
                    if ((kind == 1 || kind == 2) && i >= EMU_NREDPROG)
                        continue;
                    dla_fused_multi_args m;
                    emu_program(i, f64, &m);
                    if (kind == 1 || kind == 2)
                        emu_reduce_program(i, f64, &m.program);
                    dla__cu_fused_key_t *k = &keys[n];
                    if (kind == 3)
                        dla__cu_fused_multi_key(&m, k);
                    else
                        dla__cu_fused_key(&m.program, kind, kind == 2 ? EMU_REDUCE_REG2 : 0, k);
                    const size_t size = dla__cu_fused_source(k, constops, NULL, 0) + 1;
                    char *src = malloc(size);
                    if (!src)
                        return 1;
                    dla__cu_fused_source(k, constops, src, size);
                    const int reduce = kind == 1 || kind == 2;
                    /* A reduce's block kernel names its shared memory
                     * inside the namespace: each program has its own. */
                    if (reduce)
                        printf("\nnamespace emu_g%d {\ndouble dla_fr_sm[%d];\n#define %s emu_g%d_kernel\n"
                               "#define %s emu_g%d_kernel2\n%s\n#undef %s\n#undef %s\n"
                               "static void run(const void *a, const void *p)\n{\n"
                               "    emu_g%d_kernel(*(const dla_fr *)a, *(const dla_fprog *)p);\n}\n"
                               "static void run2(const void *a, const void *p)\n{\n"
                               "    emu_g%d_kernel2(*(const dla_fr *)a, *(const dla_fprog *)p);\n}\n"
                               "} // namespace emu_g%d\n",
                               n, 2 * DLA__CU_FR_THREADS, DLA__CU_K_FR_BLOCK, n, DLA__CU_K_FR_THREAD, n, src,
                               DLA__CU_K_FR_BLOCK, DLA__CU_K_FR_THREAD, n, n, n);
                    else
                        printf("\nnamespace emu_g%d {\n#define %s emu_g%d_kernel\n%s\n#undef %s\n"
                               "static void run(const void *a, const void *p)\n{\n"
                               "    emu_g%d_kernel(*(const %s *)a, *(const dla_fprog *)p);\n}\n"
                               "} // namespace emu_g%d\n",
                               n, kind == 3 ? DLA__CU_K_FMULTI : DLA__CU_K_FUSED, n, src,
                               kind == 3 ? DLA__CU_K_FMULTI : DLA__CU_K_FUSED, n,
                               kind == 3 ? "dla_fmviews" : "dla_fviews", n);
                    free(src);
                    constops_of[n] = constops;
                    reduce_of[n] = reduce;
                    n++;
                }
    printf("\nextern \"C\" const emu_gen emu_gens[] = {\n");
    for (int g = 0; g < n; g++) {
        const int32_t *w = (const int32_t *)&keys[g];
        printf("    {{");
        for (size_t j = 0; j < sizeof keys[g] / sizeof(int32_t); j++)
            printf("%s%d", j ? ", " : "", (int)w[j]);
        printf("}, %d, emu_g%d::run, ", constops_of[g], g);
        if (reduce_of[g])
            printf("emu_g%d::run2},\n", g);
        else
            printf("nullptr},\n");
    }
    printf("};\nextern \"C\" const int emu_ngens = %d;\n", n);
    return ferror(stdout) || fflush(stdout) ? 1 : 0;
}

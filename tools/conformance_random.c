/*
 * conformance_random.c - the random kernel (ABI 1.3) against the cpu
 * plugin: bit for bit, as the header demands, for uniform and normal
 * draws in both float dtypes, seeds and counters anywhere in their 64 bits
 * (a counter just below a multiple of 2^32 makes its low word carry into
 * the high one within the draw), and views of every shape the suite draws
 * (permuted, with gaps and offsets; element i is the i-th in column-major
 * order over the dims, wherever the view puts it).
 */
#include "tools/conformance.h"

void cf_case_random(cf_case *c)
{
    /* Uniform and normal in turns, each in single and double in turns
     * (the kernel ids split by distribution, so a device may have one);
     * the other distribution when the device lacks this one. */
    int normal = c->index % 2;
    const int turn = c->index;
    c->index = turn / 2;
    int t = cf_float_dtype(c, normal ? DLA_KERNEL_RANDOM_NORMAL : DLA_KERNEL_RANDOM_UNIFORM);
    if (t < 0) {
        normal = !normal;
        t = cf_float_dtype(c, normal ? DLA_KERNEL_RANDOM_NORMAL : DLA_KERNEL_RANDOM_UNIFORM);
    }
    c->index = turn;
    c->variant = normal;
    if (t < 0) {
        c->skipped = 1;
        return;
    }
    uint64_t seed = cf_rnd(c), counter = cf_rnd(c);
    switch (cf_int(c, 0, 3)) {
    case 0: seed = (uint64_t)cf_int(c, 0, 3); break;
    case 1: counter = ((uint64_t)cf_int(c, 0, 5) << 32) - (uint64_t)cf_int(c, 1, 7); break;
    case 2: counter = (uint64_t)cf_int(c, 0, 1000); break;
    default: break;
    }
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    cf_dims(c, &nd, dims, 6, 9, 3);
    if (c->index == 0) /* large enough for the paths of big draws */
        nd = 2, dims[0] = 1001, dims[1] = 257;
    dla_view y;
    cf_buf *b = cf_buf_new(c, (dla_dtype)t, cf_view(c, &y, (dla_dtype)t, nd, dims, 0), -9, 9, 0);
    if (!b)
        return;
    char ds[96], vs[128];
    cf_describe(c, "random %s %s seed %llu counter %llu dims %s y%s",
                normal ? "normal" : "uniform", dla_dtype_name((dla_dtype)t),
                (unsigned long long)seed, (unsigned long long)counter,
                cf_dims_str(ds, sizeof ds, nd, dims), cf_view_str(vs, sizeof vs, &y));
    dla_random_args a = {.struct_size = sizeof a,
                         .dist = normal ? DLA_RANDOM_NORMAL : DLA_RANDOM_UNIFORM,
                         .seed = seed,
                         .counter = counter};
    for (int k = 0; k < 2; k++) {
        a.y = y;
        a.y.mem = b->mem[k];
        cf_record(c, k, cf_call(c, k, normal ? DLA_KERNEL_RANDOM_NORMAL : DLA_KERNEL_RANDOM_UNIFORM, &a, 0));
    }
    if (cf_agree(c))
        cf_compare(c, b, &y, CF_EXACT);
}

/*
 * copy.c - fill, strided copy and cast on CUDA devices.
 *
 * The fill value is converted here, once, exactly as the cpu plugin
 * converts it (dla_kit_fill_bits: integers saturate, NaN becomes 0,
 * logical is value != 0), and the kernel stores that bit pattern. A dense
 * fill whose pattern is one byte repeated (zeros above all) is a
 * cudaMemsetAsync, a dense copy a device-to-device cudaMemcpyAsync; the
 * rest run copy_kernels.cu over the views' coalesced space, moving 1-, 4-
 * or 8-byte patterns whatever the dtype. Everything is enqueued on the
 * device's stream. During a capture, fills and copies are recorded as
 * steps of a one-kernel replay (onekern.c), whichever way they ran.
 */
#include "plugins/cuda/copy_kern.h"
#include "plugins/cuda/onekern_kern.h"

#include <stdio.h>
#include <string.h>

/* The coalesced space is one run of consecutive elements in every view. */
static int dense_space(const dla__cu_space *sp, const dla__cu_vw *vw, int nops)
{
    if (sp->nd == 0)
        return 1;
    if (sp->nd > 1)
        return 0;
    for (int k = 0; k < nops; k++)
        if (vw[k].st[0] != 1)
            return 0;
    return 1;
}

dla_status dla__cu_fill(void *dev, const dla_view *y, double value)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "fill");
    if (s)
        return s;
    s = dla_kit_check_view(&d->kit, "fill", "y", y);
    if (s != DLA_OK || dla_kit_numel(y) == 0)
        return s;
    uint8_t bytes[8] = {0};
    if (!dla_kit_fill_bits(y->dtype, value, bytes))
        return dla__cu_host->error(DLA_ERR_DTYPE, "cuda fill: argument y: unknown dtype %d",
                                   (int)y->dtype);
    const size_t es = dla_kit_dtype_size(y->dtype);
    const dla_view *views[] = {y};
    dla__cu_space sp;
    dla__cu_vw vw[1];
    dla__cu_space_of(1, views, &sp, vw);

    uint64_t bits = 0;
    if (es == 1)
        bits = bytes[0];
    else if (es == 4) {
        uint32_t b32;
        memcpy(&b32, bytes, 4);
        bits = b32;
    } else
        memcpy(&bits, bytes, 8);
    int one_byte = 1;
    for (size_t k = 1; k < es; k++)
        one_byte &= bytes[k] == bytes[0];
    if (one_byte && dense_space(&sp, vw, 1))
        s = dla__cu_err(cudaMemsetAsync(vw[0].base, bytes[0], (size_t)sp.n * es, d->stream),
                        "fill: cudaMemsetAsync");
    else
        s = dla__cu_err(dla__cu_launch_fill(d->stream, dla__cu_blocks(d, sp.n), &sp, &vw[0],
                                            (int)es, bits),
                        "fill: kernel launch");
    if (s == DLA_OK)
        dla__cu_k1_note_move(d, DLA__CU_K1_FILL, &sp, vw, (int)es, bits);
    return s;
}

/* y = x for checked views of equal dims and element size. */
static dla_status copy_views(dla__cu_device *d, const dla_view *y, const dla_view *x,
                             const char *kernel)
{
    if (dla_kit_numel(y) == 0)
        return DLA_OK;
    const dla_view *views[] = {y, x};
    dla__cu_space sp;
    dla__cu_vw vw[2];
    dla__cu_space_of(2, views, &sp, vw);
    const size_t es = dla_kit_dtype_size(y->dtype);
    char what[64];
    dla_status s;
    if (dense_space(&sp, vw, 2)) {
        if (vw[0].base == vw[1].base)
            return DLA_OK; /* (a capture then stays a graph: no step recorded) */
        snprintf(what, sizeof what, "%s: cudaMemcpyAsync", kernel);
        s = dla__cu_err(cudaMemcpyAsync(vw[0].base, vw[1].base, (size_t)sp.n * es,
                                        cudaMemcpyDeviceToDevice, d->stream),
                        what);
    } else {
        snprintf(what, sizeof what, "%s: kernel launch", kernel);
        s = dla__cu_err(dla__cu_launch_copy(d->stream, dla__cu_blocks(d, sp.n), &sp, &vw[0],
                                            &vw[1], (int)es),
                        what);
    }
    if (s == DLA_OK)
        dla__cu_k1_note_move(d, DLA__CU_K1_COPY, &sp, vw, (int)es, 0);
    return s;
}

dla_status dla__cu_strided_copy(void *dev, const dla_view *y, const dla_view *x)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "strided_copy");
    if (s)
        return s;
    s = dla_kit_check_copy(&d->kit, "strided_copy", y, x, 1);
    if (s != DLA_OK)
        return s;
    return copy_views(d, y, x, "strided_copy");
}

dla_status dla__cu_cast(void *dev, const dla_view *y, const dla_view *x)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "cast");
    if (s)
        return s;
    s = dla_kit_check_copy(&d->kit, "cast", y, x, 0);
    if (s != DLA_OK)
        return s;
    if (x->dtype == y->dtype)
        return copy_views(d, y, x, "cast");
    _Static_assert(DLA_DTYPE_COUNT == 5, "a cast kernel per pair of dtypes");
    if ((unsigned)x->dtype >= DLA_DTYPE_COUNT || (unsigned)y->dtype >= DLA_DTYPE_COUNT)
        return dla__cu_host->error(DLA_ERR_DTYPE, "cuda cast: dtype %d to %d: unknown dtype",
                                   (int)x->dtype, (int)y->dtype);
    if (dla_kit_numel(y) == 0)
        return DLA_OK;
    const dla_view *views[] = {y, x};
    dla__cu_space sp;
    dla__cu_vw vw[2];
    dla__cu_space_of(2, views, &sp, vw);
    return dla__cu_err(dla__cu_launch_cast(d->stream, dla__cu_blocks(d, sp.n), &sp, &vw[0],
                                           &vw[1], (int)y->dtype, (int)x->dtype),
                       "cast: kernel launch");
}

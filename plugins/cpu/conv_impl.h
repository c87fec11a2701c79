/*
 * conv_impl.h - what the cpu plugin's convolution files share: one
 * convolution, checked and reduced to base pointers and element strides.
 *
 * conv.c checks the ABI arguments with the plugin kit (dla_kit_conv_prepare)
 * and fills a dla__cpu_conv; the algorithm files (conv_im2col.h for any
 * dtype and option, conv_avx512.c and conv_avx2.c for float with stride 1,
 * conv_avx2_f64.c for double)
 * read only this
 * struct. Spatial dims past nspatial have size 1, stride 1, dilation 1
 * and no padding, so every loop can run over three spatial dims.
 */
#ifndef DLA_PLUGIN_CPU_CONV_IMPL_H
#define DLA_PLUGIN_CPU_CONV_IMPL_H

#include "plugins/cpu/cpu.h"

typedef struct dla__cpu_conv {
    dla_dtype dtype;
    /* The kit's checked geometry (dlaccel/plugin_kit_geom.h): sizes, and
     * element strides x: spatial xs[3], channel xc, image xb; w: tap
     * ws[3], channel within the group wc, filter within the group wf,
     * group wg; y: spatial ys[3], filter yf, image yb; bias: bs. */
    dla_kit_conv g;
    /* Base pointers at each view's offset (bias NULL: none). */
    char *x, *w, *y;
    const char *bias;
    /* The epilogue of a forward or backward-data pass (conv_forward_fused,
     * conv_backward_data_fused), or NULL: each path runs it on images of
     * its result it has written (dla__cpu_conv_epilogue). */
    const dla_fused_args *epi;
} dla__cpu_conv;

/* The epilogue of images b0 .. b0 + nb - 1 once the convolution has
 * written them, on the calling thread; nothing without one. */
static inline void dla__cpu_conv_epilogue(const dla_fused_args *epi, int64_t b0, int64_t nb)
{
    if (epi)
        dla__cpu_fused_images(epi, b0, nb);
}

/* The three directions, in the order of the ABI's kernels (the kit's). */
typedef dla_kit_conv_dir dla__cpu_conv_dir;
#define DLA__CONV_FORWARD DLA_KIT_CONV_FORWARD
#define DLA__CONV_BACKWARD_DATA DLA_KIT_CONV_BACKWARD_DATA
#define DLA__CONV_BACKWARD_FILTER DLA_KIT_CONV_BACKWARD_FILTER

/* The im2col + GEMM algorithm (conv.c, from conv_im2col.h): every dtype the
 * plugin supports and every option. */
dla_status dla__cpu_conv_im2col(const dla__cpu_conv *p, dla__cpu_conv_dir dir);

/* The direct algorithm (conv_direct_body.h), every stride 1, and the
 * forward pass of strided convolutions with dilation 1 in the AVX-512
 * kernels (on phase planes): float32 with AVX-512 on a CPU with AVX-512F
 * (conv_avx512.c), with AVX2 on one with AVX2 and FMA (conv_avx2.c);
 * float64 with AVX2 and FMA (conv_avx2_f64.c); x86-64 only. Returns DLA_ERR_UNSUPPORTED (without a
 * message) when it does not apply, so the caller takes im2col. */
dla_status dla__cpu_conv_direct_avx512(const dla__cpu_conv *p, dla__cpu_conv_dir dir);
dla_status dla__cpu_conv_direct_avx2(const dla__cpu_conv *p, dla__cpu_conv_dir dir);
dla_status dla__cpu_conv_direct_avx2_f64(const dla__cpu_conv *p, dla__cpu_conv_dir dir);

/* The backward data or backward filter of a strided convolution with
 * dilation 1 as stride-1 calls of direct, one per phase (conv_phases.c).
 * DLA_ERR_UNSUPPORTED (without a message, perhaps after writing part of
 * the result, which the caller's im2col writes again) where it does not
 * apply, a phase's call declines, or DLACCEL_CPU_CONV_PHASES=off. */
dla_status dla__cpu_conv_phases(const dla__cpu_conv *p, dla__cpu_conv_dir dir,
                                dla_status (*direct)(const dla__cpu_conv *, dla__cpu_conv_dir));

/* dst[o] = src[2 o] for o < n (conv.c): AVX-512 where the CPU has it,
 * reading src up to src[2 n - 2] and no further. The rows of stride-2
 * layers, for im2col, the depthwise path's phases and the direct
 * kernels' phase planes. */
void dla__cpu_every_other_f32(float *dst, const float *src, int64_t n);

/* Depthwise convolutions (conv_depthwise.c): one channel and one filter a
 * group, one or two spatial dims, any stride, dilation and padding, float
 * and double. takes: whether this path runs p (a depthwise call with a
 * stride above 1, and DLACCEL_CPU_CONV unset: its im2col and direct values
 * keep those paths, for comparisons). */
int dla__cpu_conv_depthwise_takes(const dla__cpu_conv *p);
dla_status dla__cpu_conv_depthwise(const dla__cpu_conv *p, dla__cpu_conv_dir dir);

/* Scratch memory for one call (64-byte aligned), from the plugin's device
 * memory, whose cache keeps blocks of 1 MiB and more for the next request
 * of their size: a fresh block from the host costs a page fault per 4 KiB
 * on every call, more than a small convolution itself. NULL when refused
 * (with the message set); give it back with dla__cpu_conv_scratch_free. */
void *dla__cpu_conv_scratch(size_t bytes, dla_mem *mem);
void dla__cpu_conv_scratch_free(dla_mem mem);
/* Elements rounded up to whole 64-byte lines (for carving scratch). */
#define DLA__CONV_LINE(n, size) (((n) * (int64_t)(size) + 63) / 64 * 64 / (int64_t)(size))

/* Backward filter adds dW's terms image by image. Where the images are
 * shared out, they go in parts of consecutive images, each part summed
 * into its own dW (acc_bytes each) and the parts added in order: as many
 * parts as this says, for the shape alone and never the thread count, so
 * that dW has the same bits with any OMP_NUM_THREADS (the cpu device is
 * the reference every device and machine is compared with). At most 16,
 * one per image, and their sums together at most 64 MiB. Part k holds
 * images batch * k / parts up to batch * (k + 1) / parts. This is the
 * im2col path's count; the direct kernels, whose lane sums are 16 times
 * dW, take theirs from conv_direct_body.h's bwf_parts (8 MiB, a power of
 * two). */
#define DLA__CONV_BATCH_PARTS 16
#define DLA__CONV_PARTS_BYTES ((int64_t)64 << 20)
static inline int dla__conv_batch_parts(int64_t batch, int64_t acc_bytes)
{
    int parts = batch < DLA__CONV_BATCH_PARTS ? (int)(batch > 0 ? batch : 1)
                                              : DLA__CONV_BATCH_PARTS;
    while (parts > 1 && parts * acc_bytes > DLA__CONV_PARTS_BYTES)
        parts--;
    return parts;
}

/* The direct kernels this CPU runs for dtype, unless the environment
 * turns them off (DLACCEL_CPU_CONV=im2col): float AVX-512 where the CPU
 * has AVX-512F, else AVX2 where it has AVX2 and FMA; double AVX2 where it
 * has AVX2 and FMA; NULL for none. */
typedef dla_status (*dla__cpu_conv_direct_fn)(const dla__cpu_conv *p, dla__cpu_conv_dir dir);
dla__cpu_conv_direct_fn dla__cpu_conv_direct_usable(dla_dtype dtype);
/* DLACCEL_CPU_CONV, read at each call (tests and the benchmark change it):
 * DLA__CONV_IM2COL, DLA__CONV_DIRECT, or -1 (unset; an unknown value is
 * warned about once and counts as unset). */
enum { DLA__CONV_IM2COL = 0, DLA__CONV_DIRECT = 1 };
int dla__cpu_conv_env(void);

#endif

/*
 * conv_avx2_f64.c - direct float64 convolution with AVX2 and FMA, stride
 * 1: conv_avx2.c compiled for double (4-lane vectors, the same register
 * blocks), so that double, which MATLAB layers run in by default, leaves
 * im2col too: a depthwise 3x3 layer (bench conv3) took 5.7-9.4x its
 * single-precision time there, 1.9-2.1x here (docs/performance.md).
 *
 * conv.c calls it for double on every CPU with AVX2 and FMA, AVX-512 ones
 * included: there is no AVX-512 double instance yet (conv_avx512.c would
 * compile the same way, but no machine here could test it).
 */
#define DLA__CONV_F64 1
#include "plugins/cpu/conv_avx2.c"

/*
 * ops_crosschannel.c - crosschannelnorm (local response normalization).
 *
 * Written with public ops rather than as a kernel of its own: the window's
 * sum of squares is x .* x padded with zeros along C and summed over
 * `window` shifted slices, so autodiff, replay plans (whose fused programs
 * take the elementwise chain) and every plugin have it without new
 * kernels. The window is small (MATLAB's layer allows up to 16), so the
 * slices cost little against one pass of their own.
 */
#include "core/format.h"
#include "core/ops.h"
#include "core/ops_nn.h"
#include "core/tensor.h"

#include <math.h>
#include <string.h>

static const char op[] = "dla_crosschannelnorm";

/* The 0-based dim of x that holds C, or -1 with the error set. A C past
 * x's dims (a trailing singleton of data_format) is returned as such. */
static int channel_dim(dla_tensor *x, const char *data_format)
{
    const char *fmt = dla__format_of_arg(op, "x", x, data_format, "\"SSCB\", \"CB\"...");
    if (!fmt)
        return -1;
    const char *c = strchr(fmt, 'C');
    if (!c) {
        char xs[DLA__DIMS_BUF];
        dla__fail(DLA_ERR_FORMAT, "%s: argument x: %s \"%s\" has no channel (C) dim", op,
                  dla__tensor_dims_str(x, xs, sizeof xs), fmt);
        return -1;
    }
    return (int)(c - fmt);
}

DLA_API dla_tensor *dla_crosschannelnorm(dla_tensor *x, int64_t window,
                                         const dla_crosschannelnorm_options *opts)
{
    if (!x || x->status != DLA_OK)
        return dla__pass_arg(op, "x", x);
    if (!dla__nn_is_float(x->dtype))
        return dla__error(DLA_ERR_DTYPE, "%s: argument x: %s; needs single or double", op,
                          dla_dtype_name(x->dtype));
    static const dla_crosschannelnorm_options none;
    const dla_crosschannelnorm_options *o = opts ? opts : &none;
    const double alpha = o->alpha == 0 ? DLA_CROSSCHANNELNORM_ALPHA : o->alpha;
    const double beta = o->beta == 0 ? DLA_CROSSCHANNELNORM_BETA : o->beta;
    const double k = o->k == 0 ? DLA_CROSSCHANNELNORM_K : o->k;
    if (window < 1)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument window: %lld; it must be a "
                          "positive number of channels", op, (long long)window);
    if (!isfinite(alpha))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: option alpha: %g is not finite", op,
                          alpha);
    if (!(beta >= 0.01) || !isfinite(beta))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: option beta: %g; it must be finite and "
                          "at least 0.01", op, beta);
    if (!(k >= 1e-5) || !isfinite(k))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: option k: %g; it must be finite and at "
                          "least 1e-5", op, k);
    const int c = channel_dim(x, o->data_format);
    if (c < 0)
        return dla__return(dla__error_tensor());

    dla_scope_begin();
    dla_tensor *sq = dla_mul(x, x), *ss = sq;
    if (c < x->ndims && window > 1) {
        /* pad[i] = sq[i - back] along C: ss[c] = sum over j of pad[c + j].
         * No channel is more than n - 1 from another, so the window reaches
         * at most that far each way: the shifts past it would be slices of
         * padding alone, zeros added before and after the others (the same
         * sums, bit for bit). Taking every one of them made a window of
         * INT64_MAX loop for ever, and one of 10^6 pad C by 10^6 and add
         * 10^6 slices, where 2n - 1 do. The divisor keeps the window. */
        const int64_t n = x->dims[c], reach = n > 1 ? n - 1 : 0;
        const int64_t back = (window - 1) / 2 < reach ? (window - 1) / 2 : reach;
        const int64_t ahead = window / 2 < reach ? window / 2 : reach;
        int64_t before[DLA_MAX_DIMS] = {0}, after[DLA_MAX_DIMS] = {0};
        before[c] = back;
        after[c] = ahead;
        dla_tensor *pad = dla_pad(sq, c + 1, before, after, 0.0);
        ss = dla_slice(pad, c + 1, 0, 1, n);
        for (int64_t j = 1; j <= back + ahead; j++)
            ss = dla_add(ss, dla_slice(pad, c + 1, j, 1, j + n));
    }
    dla_tensor *den = dla_pows(dla_affine(ss, alpha / (double)window, k), beta);
    dla_tensor *r = dla_tensor_retain(dla_div(x, den));
    dla_scope_end();
    return dla__return(r);
}

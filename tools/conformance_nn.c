/*
 * conformance_nn.c - the suite's cases for the network kernels:
 * convolution forward, backward data and backward filter; pooling forward
 * and backward; gather and scatter_add.
 *
 * conv_forward_fused and conv_backward_data_fused (ABI 1.9) are checked
 * against the device's own pass and fused, bit for bit (their promise).
 *
 * Convolutions draw 1 to 3 spatial dims, stride, dilation, asymmetric and
 * negative padding, groups up to one channel each, bias, and dense or
 * strided views as the core sends them (a "CBT" input reaches a 1-d
 * convolution permuted, x strides 6,1,3; a bias of one value has stride
 * 0). A plugin may decline non-dense views with DLA_ERR_UNSUPPORTED:
 * cf_call then retries with dense copies as the core does. Index views
 * come with strides, offsets, a second dim of 1 (1xN positions) and x or
 * y with their trailing dims of 1 left off, as dla_index sends them. Sums are held to the
 * magnitude bound of conformance.h; max pooling, its positions, gather
 * and the bad-index refusals are exact.
 */
#include "tools/conformance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ conv */

typedef struct conv_case {
    int nsp;
    int64_t B, C, F, G, in[3], out[3], fs[3], st[3], dl[3], pb[3];
    int bias, strided;
} conv_case;

static void random_conv(cf_case *c, conv_case *k)
{
    memset(k, 0, sizeof *k);
    k->nsp = (int)cf_int(c, 1, 3);
    const int kind = (int)cf_int(c, 0, 9);
    k->G = kind < 5 ? 1 : kind < 8 ? cf_int(c, 2, 3) : cf_int(c, 2, 5);
    const int64_t Cg = kind < 8 ? cf_int(c, 1, 4) : 1;
    const int64_t Fg = cf_chance(c, 20) ? cf_int(c, 7, 12) : cf_int(c, 1, 5);
    k->C = Cg * k->G, k->F = Fg * k->G;
    k->B = cf_chance(c, 5) ? 0 : cf_int(c, 1, 3);
    k->bias = cf_chance(c, 50);
    k->strided = cf_chance(c, 50);
    const int64_t maxin = k->nsp == 3 ? 7 : k->nsp == 2 ? 12 : 40;
    for (int i = 0; i < k->nsp; i++) {
        k->fs[i] = cf_int(c, 1, k->nsp == 3 ? 3 : 5);
        k->dl[i] = cf_chance(c, 70) ? 1 : cf_int(c, 2, 3);
        k->st[i] = cf_chance(c, 60) ? 1 : cf_int(c, 2, 3);
        const int64_t span = k->dl[i] * (k->fs[i] - 1) + 1;
        k->in[i] = cf_int(c, 1, maxin);
        k->pb[i] = cf_chance(c, 15) ? -cf_int(c, 1, 2) : cf_int(c, 0, span);
        const int64_t pe = cf_chance(c, 15) ? -cf_int(c, 0, 2) : cf_int(c, 0, span);
        const int64_t num = k->in[i] + k->pb[i] + pe - span;
        k->out[i] = num >= 0 ? num / k->st[i] + 1 : 0;
        if (k->out[i] == 0 && !cf_chance(c, 10))
            k->out[i] = cf_int(c, 1, 3);
    }
    if (c->index == 1) {
        /* A batch of 33-70 small images, its geometry random: a kernel
         * may take other ways with many images (the cpu plugin sums the
         * filter gradient in parts of the batch and stacks small images;
         * cuDNN picks algorithms by shape), which the random cases, of 1
         * to 3 images, never reach. */
        k->B = cf_int(c, 33, 70);
        for (int i = 0; i < k->nsp; i++)
            if (k->in[i] > 8) {
                const int64_t span = k->dl[i] * (k->fs[i] - 1) + 1;
                k->in[i] = cf_int(c, 1, 8);
                const int64_t num = k->in[i] + k->pb[i] + cf_int(c, 0, span) - span;
                k->out[i] = num >= 0 ? num / k->st[i] + 1 : cf_int(c, 1, 3);
            }
    }
    if (c->index == 0) { /* a digit-sized layer: the work is not tiny */
        k->nsp = 2, k->B = 8, k->C = 4, k->F = 8, k->G = 1, k->bias = 1, k->strided = 0;
        for (int i = 0; i < 2; i++)
            k->in[i] = 28, k->fs[i] = 3, k->st[i] = 1, k->dl[i] = 1, k->pb[i] = 1, k->out[i] = 28;
    }
}

enum { FWD, BWD_DATA, BWD_FILTER };

/* The arguments and buffers of convolution k in direction dir (bias only
 * forward), views dense or strided as k says. 0 when a buffer could not be
 * made (the case is failed). */
typedef struct conv_bufs {
    int64_t xd[5], wd[6], yd[5];
    cf_buf *x, *w, *y, *b;
} conv_bufs;

static int conv_setup(cf_case *c, const conv_case *k, dla_dtype dt, int dir, dla_conv_args *a,
                      conv_bufs *cb)
{
    const int n = k->nsp;
    for (int i = 0; i < n; i++)
        cb->xd[i] = k->in[i], cb->wd[i] = k->fs[i], cb->yd[i] = k->out[i];
    cb->xd[n] = k->C, cb->xd[n + 1] = k->B;
    cb->wd[n] = k->C / k->G, cb->wd[n + 1] = k->F / k->G, cb->wd[n + 2] = k->G;
    cb->yd[n] = k->F, cb->yd[n + 1] = k->B;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->dtype = dt;
    a->nspatial = n;
    a->batch = k->B, a->in_channels = k->C, a->out_channels = k->F, a->groups = k->G;
    for (int i = 0; i < n; i++) {
        a->in_size[i] = k->in[i], a->out_size[i] = k->out[i], a->filter_size[i] = k->fs[i];
        a->stride[i] = k->st[i], a->dilation[i] = k->dl[i], a->pad_begin[i] = k->pb[i];
    }
    const int64_t nx = k->strided ? cf_view(c, &a->x, dt, n + 2, cb->xd, 0)
                                  : cf_dense(&a->x, dt, n + 2, cb->xd);
    const int64_t nw = k->strided ? cf_view(c, &a->w, dt, n + 3, cb->wd, 0)
                                  : cf_dense(&a->w, dt, n + 3, cb->wd);
    const int64_t ny = k->strided ? cf_view(c, &a->y, dt, n + 2, cb->yd, 0)
                                  : cf_dense(&a->y, dt, n + 2, cb->yd);
    cb->x = cf_buf_new(c, dt, nx, -1, 1, 0);
    cb->w = cb->x ? cf_buf_new(c, dt, nw, -1, 1, 0) : NULL;
    cb->y = cb->w ? cf_buf_new(c, dt, ny, -1, 1, 0) : NULL;
    cb->b = NULL;
    if (!cb->y)
        return 0;
    if (dir == FWD && k->bias) {
        const int64_t fd[1] = {k->F};
        if (!(cb->b = cf_buf_new(c, dt, k->strided ? cf_view(c, &a->bias, dt, 1, fd, 1)
                                                    : cf_dense(&a->bias, dt, 1, fd), -1, 1, 0)))
            return 0;
    }
    return 1;
}

/* a's views pointed at device d's memory of cb. */
static dla_conv_args conv_on(const dla_conv_args *a, const conv_bufs *cb, int d)
{
    dla_conv_args b = *a;
    b.x.mem = cb->x->mem[d], b.w.mem = cb->w->mem[d], b.y.mem = cb->y->mem[d];
    b.bias.mem = cb->b ? cb->b->mem[d] : NULL;
    return b;
}

static void conv_describe(cf_case *c, const char *name, const conv_case *k, const conv_bufs *cb,
                          const dla_conv_args *a)
{
    const int n = k->nsp;
    char s1[64], s2[64], s3[64];
    cf_describe(c, "%s %s x %s w %s y %s groups %lld stride %lld,%lld,%lld dilation "
                   "%lld,%lld,%lld pad_begin %lld,%lld,%lld%s%s",
                name, dla_dtype_name(a->dtype), cf_dims_str(s1, sizeof s1, n + 2, cb->xd),
                cf_dims_str(s2, sizeof s2, n + 3, cb->wd), cf_dims_str(s3, sizeof s3, n + 2, cb->yd),
                (long long)k->G, (long long)a->stride[0], (long long)a->stride[1],
                (long long)a->stride[2], (long long)a->dilation[0], (long long)a->dilation[1],
                (long long)a->dilation[2], (long long)a->pad_begin[0], (long long)a->pad_begin[1],
                (long long)a->pad_begin[2], cb->b ? " bias" : "", k->strided ? " strided views" : "");
}

static void conv_case_run(cf_case *c, int dir)
{
    static const dla_kernel kernels[] = {DLA_KERNEL_CONV_FORWARD, DLA_KERNEL_CONV_BACKWARD_DATA,
                                         DLA_KERNEL_CONV_BACKWARD_FILTER};
    static const char *const names[] = {"conv_forward", "conv_backward_data",
                                        "conv_backward_filter"};
    const dla_plugin *tb = CF_TABLE(c, CF_DUT);
    void *member = dir == FWD ? (void *)tb->conv_forward
                   : dir == BWD_DATA ? (void *)tb->conv_backward_data
                                     : (void *)tb->conv_backward_filter;
    const int t = cf_float_dtype(c, kernels[dir]);
    if (t < 0 || !member || c->suite->dev[CF_DUT]->abi_minor < 1) {
        c->skipped = 1;
        return;
    }
    conv_case k;
    random_conv(c, &k);
    const int n = k.nsp;
    const dla_dtype dt = (dla_dtype)t;
    dla_conv_args a;
    conv_bufs cb;
    if (!conv_setup(c, &k, dt, dir, &a, &cb))
        return;
    conv_describe(c, names[dir], &k, &cb, &a);
    const int bias = cb.b != NULL;
    cf_buf *out = dir == FWD ? cb.y : dir == BWD_DATA ? cb.x : cb.w;
    const dla_view *ov = dir == FWD ? &a.y : dir == BWD_DATA ? &a.x : &a.w;
    for (int d = 0; d < 2; d++) {
        const dla_conv_args b = conv_on(&a, &cb, d);
        cf_record(c, d, cf_call(c, d, kernels[dir], &b, 0));
    }
    if (!cf_agree(c))
        return;
    /* The magnitude: the same call on |operands| on the oracle. */
    cf_buf *mx = cf_buf_abs(c, cb.x), *mw = mx ? cf_buf_abs(c, cb.w) : NULL;
    cf_buf *my = mw ? cf_buf_abs(c, cb.y) : NULL, *mb = NULL;
    if (!my || (bias && !(mb = cf_buf_abs(c, cb.b))))
        return;
    dla_conv_args m = a;
    m.x.mem = mx->mem[CF_ORACLE], m.w.mem = mw->mem[CF_ORACLE], m.y.mem = my->mem[CF_ORACLE];
    m.bias.mem = bias ? mb->mem[CF_ORACLE] : NULL;
    if (cf_call(c, CF_ORACLE, kernels[dir], &m, 0) != DLA_OK) {
        cf_fail(c, "the oracle's magnitude run: %s", dla_last_error());
        return;
    }
    cf_buf *mo = dir == FWD ? my : dir == BWD_DATA ? mx : mw;
    double *mag = cf_oracle_values(c, mo);
    if (!mag)
        return;
    const int64_t taps = k.fs[0] * (n > 1 ? k.fs[1] : 1) * (n > 2 ? k.fs[2] : 1);
    const int64_t opx = k.out[0] * (n > 1 ? k.out[1] : 1) * (n > 2 ? k.out[2] : 1);
    const double terms = dir == FWD        ? (double)(k.C / k.G * taps + 1)
                         : dir == BWD_DATA ? (double)(k.F / k.G * taps)
                                           : (double)(k.B * opx);
    cf_compare(c, out, ov, (cf_tol){0, mag, terms});
    free(mag);
}

void cf_case_conv_forward(cf_case *c)
{
    conv_case_run(c, FWD);
}
void cf_case_conv_backward_data(cf_case *c)
{
    conv_case_run(c, BWD_DATA);
}
void cf_case_conv_backward_filter(cf_case *c)
{
    conv_case_run(c, BWD_FILTER);
}

/* ------------------------------------------------- conv_forward_fused */

/* A copy of buffer b, the same host image uploaded to both devices. */
static cf_buf *buf_twin(cf_case *c, const cf_buf *b)
{
    cf_buf *t = cf_buf_new(c, b->dtype, b->n, 0, 0, 0);
    if (!t)
        return NULL;
    memcpy(t->host, b->host, (size_t)b->n * dla_dtype_size(b->dtype));
    return cf_buf_upload(c, t) ? t : NULL;
}

/* Whether b holds the same bytes on the device under test as twin does
 * there; reports the first difference as what's. */
static int same_on_dut(cf_case *c, const cf_buf *b, const cf_buf *twin, const char *what)
{
    void *g1 = NULL, *w1 = NULL, *g2 = NULL, *w2 = NULL;
    int ok = cf_buf_download(c, b, &g1, &w1) && cf_buf_download(c, twin, &g2, &w2);
    const size_t es = dla_dtype_size(b->dtype);
    for (int64_t i = 0; ok && i < b->n; i++)
        if (memcmp((char *)g1 + i * es, (char *)g2 + i * es, es)) {
            cf_fail(c, "%s element %lld: %.9g, the two launches give %.9g", what, (long long)i,
                    b->dtype == DLA_F64 ? ((double *)g1)[i] : (double)((float *)g1)[i],
                    b->dtype == DLA_F64 ? ((double *)g2)[i] : (double)((float *)g2)[i]);
            ok = 0;
        }
    free(g1), free(w1), free(g2), free(w2);
    return ok;
}

/* The ABI 1.9 kernels' promise is the bits of the pass (conv_forward, or
 * conv_backward_data) and then fused on the same device, so that is the
 * reference: the call on the device under test against its own two
 * launches on twin buffers, byte for byte over the whole buffers of the
 * pass's result R (conv.y forward, conv.x backward) and of epilogue.y;
 * the oracle runs the same call and the two devices must agree on its
 * status (how close their values are is the pass's and fused's cases'
 * business). Epilogues are those the planner makes: R (at a random input)
 * with one or two per-channel vectors (stride 0 but along the channel
 * dim) added, subtracted or multiplied, in a third of the cases an input
 * of R's dims (a residual, a relu's mask), then a relu or an abs half the
 * time. epilogue.y is R's very view in two cases of five (in place, as
 * plans lay them out), else a view of its own. */
static void conv_fused_case(cf_case *c, int dir)
{
    const dla_kernel kernel =
        dir == FWD ? DLA_KERNEL_CONV_FORWARD_FUSED : DLA_KERNEL_CONV_BACKWARD_DATA_FUSED;
    const dla_plugin *tb = CF_TABLE(c, CF_DUT);
    const int t = cf_float_dtype(c, kernel);
    if (t < 0 || !(dir == FWD ? tb->conv_forward_fused : tb->conv_backward_data_fused) ||
        c->suite->dev[CF_DUT]->abi_minor < 9) {
        c->skipped = 1;
        return;
    }
    const dla_dtype dt = (dla_dtype)t;
    conv_case k;
    random_conv(c, &k);
    const int n = k.nsp;
    dla_conv_fused_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    conv_bufs cb;
    if (!conv_setup(c, &k, dt, dir, &a.conv, &cb))
        return;
    /* The pass's result: its view, buffer, dims and channel count. */
    const dla_view *rv = dir == FWD ? &a.conv.y : &a.conv.x;
    cf_buf *br = dir == FWD ? cb.y : cb.x;
    const int64_t *rd = dir == FWD ? cb.yd : cb.xd, nch = dir == FWD ? k.F : k.C;
    dla_fused_args *e = &a.epilogue;
    e->struct_size = sizeof *e;
    e->dtype = dt;
    const int nchan = (int)cf_int(c, 1, 2), residual = cf_chance(c, 33), act = cf_chance(c, 50);
    e->ninputs = 1 + nchan + residual;
    a.conv_input = (int32_t)cf_int(c, 0, e->ninputs - 1);
    cf_buf *in[DLA_FUSED_MAX_INPUTS] = {0};
    for (int i = 0, other = 0; i < e->ninputs; i++) {
        if (i == a.conv_input) {
            e->inputs[i] = *rv;
            in[i] = br;
            continue;
        }
        dla_view *v = &e->inputs[i];
        if (other++ < nchan) { /* a per-channel vector, broadcast over the rest */
            const int64_t fd[1] = {nch};
            dla_view vec;
            if (!(in[i] = cf_buf_new(c, dt, cf_view(c, &vec, dt, 1, fd, 0), -2, 2, 0)))
                return;
            *v = *rv;
            v->offset = vec.offset;
            for (int d = 0; d < n + 2; d++)
                v->strides[d] = d == n ? vec.strides[0] : 0;
        } else if (!(in[i] = cf_buf_new(c, dt, cf_view(c, v, dt, n + 2, rd, 0), -1, 1, 0))) {
            return;
        }
    }
    /* r0 = R (op) chan0; r1 = r0 (op) chan1; [(op) residual]; [relu|abs]. */
    static const dla_binary_op ops[] = {DLA_BINARY_ADD, DLA_BINARY_SUB, DLA_BINARY_MUL};
    int32_t reg = -1 - a.conv_input, next = 0;
    for (int i = 0; i < e->ninputs; i++) {
        if (i == a.conv_input)
            continue;
        e->insns[next] = (dla_fused_insn){DLA_FUSED_BINARY, ops[cf_int(c, 0, 2)], {reg, -1 - i, 0},
                                          0, 0};
        reg = next++;
    }
    if (act)
        e->insns[next++] = (dla_fused_insn){DLA_FUSED_UNARY,
                                            cf_chance(c, 70) ? DLA_UNARY_RELU : DLA_UNARY_ABS,
                                            {reg, 0, 0}, 0, 0};
    e->ninsns = next;
    const int in_place = cf_chance(c, 40);
    /* Else, half the time with an input of R's dims, y is that input's
     * very view (a residual written over, as a plan may lay it out). */
    const int over_input = !in_place && residual && cf_chance(c, 50);
    cf_buf *bz = br;
    if (in_place) {
        e->y = *rv;
    } else if (over_input) {
        e->y = e->inputs[e->ninputs - 1 == a.conv_input ? e->ninputs - 2 : e->ninputs - 1];
        bz = in[e->ninputs - 1 == a.conv_input ? e->ninputs - 2 : e->ninputs - 1];
    } else if (!(bz = cf_buf_new(c, dt, cf_view(c, &e->y, dt, n + 2, rd, 0), -1, 1, 0))) {
        return;
    }
    conv_describe(c, dir == FWD ? "conv_forward_fused" : "conv_backward_data_fused", &k, &cb,
                  &a.conv);
    cf_describe(c, "; epilogue of %d inputs (the result is %d), %d steps%s%s", (int)e->ninputs,
                (int)a.conv_input, (int)e->ninsns, residual ? ", one of its dims" : "",
                in_place     ? ", y in place over the result"
                : over_input ? ", y in place over that input"
                             : "");
    /* Twins of what the calls write, for the two launches. */
    cf_buf *tr = buf_twin(c, br), *tz = in_place ? tr : tr ? buf_twin(c, bz) : NULL;
    if (!tz)
        return;
    for (int d = 0; d < 2; d++) {
        dla_conv_fused_args b = a;
        b.conv = conv_on(&a.conv, &cb, d);
        b.epilogue.y.mem = bz->mem[d];
        for (int i = 0; i < e->ninputs; i++)
            b.epilogue.inputs[i].mem = in[i]->mem[d];
        cf_record(c, d, cf_call(c, d, kernel, &b, 0));
    }
    if (!cf_agree(c))
        return;
    dla_conv_args two = conv_on(&a.conv, &cb, CF_DUT);
    if (dir == FWD)
        two.y.mem = tr->mem[CF_DUT];
    else
        two.x.mem = tr->mem[CF_DUT];
    dla_fused_args prog = *e;
    prog.y.mem = tz->mem[CF_DUT];
    for (int i = 0; i < e->ninputs; i++)
        prog.inputs[i].mem = i == a.conv_input ? tr->mem[CF_DUT]
                             : in[i] == bz    ? tz->mem[CF_DUT]
                                              : in[i]->mem[CF_DUT];
    dla_status st = cf_call(c, CF_DUT,
                            dir == FWD ? DLA_KERNEL_CONV_FORWARD : DLA_KERNEL_CONV_BACKWARD_DATA,
                            &two, 0);
    if (st == DLA_OK)
        st = cf_call(c, CF_DUT, DLA_KERNEL_FUSED, &prog, 0);
    if (st != DLA_OK) {
        cf_fail(c, "the pass then fused on the device under test: %s", dla_last_error());
        return;
    }
    if (same_on_dut(c, bz, tz, "epilogue.y's buffer") && !in_place)
        same_on_dut(c, br, tr, dir == FWD ? "conv.y's buffer" : "conv.x's buffer");
}

void cf_case_conv_forward_fused(cf_case *c)
{
    conv_fused_case(c, FWD);
}
void cf_case_conv_backward_data_fused(cf_case *c)
{
    conv_fused_case(c, BWD_DATA);
}

/* ------------------------------------------------------------------ pool */

typedef struct pool_case {
    int n;
    int64_t in[3], out[3], win[3], stride[3], pad[3], channels, batch;
    dla_pool_mode mode;
    int exclude;
} pool_case;

static void random_pool(cf_case *c, pool_case *p)
{
    memset(p, 0, sizeof *p);
    p->n = (int)cf_int(c, 1, 3);
    p->mode = cf_chance(c, 50) ? DLA_POOL_MAX : DLA_POOL_AVG;
    p->exclude = p->mode == DLA_POOL_AVG && cf_chance(c, 50);
    for (int i = 0; i < p->n; i++) {
        p->win[i] = cf_int(c, 1, 3);
        p->stride[i] = cf_int(c, 1, 3);
        p->in[i] = cf_int(c, p->win[i], p->n == 3 ? 6 : 12);
        p->pad[i] = cf_chance(c, 40) ? cf_int(c, 0, p->win[i] - 1) : 0;
        const int64_t pe = cf_chance(c, 40) ? cf_int(c, 0, p->win[i] - 1) : 0;
        p->out[i] = (p->in[i] + p->pad[i] + pe - p->win[i]) / p->stride[i] + 1;
        /* A max window wholly in the padding has no maximum. */
        while (p->mode == DLA_POOL_MAX && p->out[i] > 1 &&
               (p->out[i] - 1) * p->stride[i] - p->pad[i] >= p->in[i])
            p->out[i]--;
    }
    p->channels = cf_int(c, 1, 4);
    p->batch = cf_int(c, 0, 3) ? cf_int(c, 1, 3) : 0;
    if (c->index == 0) {
        p->n = 2, p->mode = DLA_POOL_MAX, p->channels = 8, p->batch = 16;
        for (int i = 0; i < 2; i++)
            p->in[i] = 28, p->win[i] = 2, p->stride[i] = 2, p->pad[i] = 0, p->out[i] = 14;
    }
}

static int pool_args(cf_case *c, const pool_case *p, dla_dtype t, dla_pool_args *a, int64_t *xn,
                     int64_t *yn)
{
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->mode = p->mode;
    a->dtype = t;
    a->nspatial = p->n;
    a->avg_exclude_pad = p->exclude;
    a->channels = p->channels;
    a->batch = p->batch;
    int64_t xd[5], yd[5];
    for (int i = 0; i < p->n; i++) {
        a->in_size[i] = p->in[i], a->out_size[i] = p->out[i], a->window[i] = p->win[i];
        a->stride[i] = p->stride[i], a->pad_begin[i] = p->pad[i];
        xd[i] = p->in[i], yd[i] = p->out[i];
    }
    xd[p->n] = yd[p->n] = p->channels;
    xd[p->n + 1] = yd[p->n + 1] = p->batch;
    *xn = cf_view(c, &a->x, t, p->n + 2, xd, 0);
    *yn = cf_view(c, &a->y, t, p->n + 2, yd, 0);
    if (p->mode == DLA_POOL_MAX)
        cf_dense(&a->index, DLA_I32, p->n + 2, yd);
    return p->mode == DLA_POOL_MAX;
}

static void pool_describe(cf_case *c, const char *dir, const pool_case *p, dla_dtype t)
{
    cf_describe(c, "%s %s %s n %d in %lldx%lldx%lld out %lldx%lldx%lld window %lldx%lldx%lld "
                   "stride %lld,%lld,%lld pad %lld,%lld,%lld channels %lld batch %lld%s",
                dir, p->mode == DLA_POOL_MAX ? "max" : "avg", dla_dtype_name(t), p->n,
                (long long)p->in[0], (long long)p->in[1], (long long)p->in[2],
                (long long)p->out[0], (long long)p->out[1], (long long)p->out[2],
                (long long)p->win[0], (long long)p->win[1], (long long)p->win[2],
                (long long)p->stride[0], (long long)p->stride[1], (long long)p->stride[2],
                (long long)p->pad[0], (long long)p->pad[1], (long long)p->pad[2],
                (long long)p->channels, (long long)p->batch, p->exclude ? " exclude_pad" : "");
}

static void pool_case_run(cf_case *c, int backward)
{
    const dla_plugin *tb = CF_TABLE(c, CF_DUT);
    const dla_kernel kernel = backward ? DLA_KERNEL_POOL_BACKWARD : DLA_KERNEL_POOL_FORWARD;
    const int t = cf_float_dtype(c, kernel);
    if (t < 0 || !(backward ? (void *)tb->pool_backward : (void *)tb->pool_forward) ||
        (backward && !tb->pool_forward) || c->suite->dev[CF_DUT]->abi_minor < 1) {
        c->skipped = 1;
        return;
    }
    pool_case p;
    random_pool(c, &p);
    dla_pool_args a;
    int64_t xn, yn;
    const int is_max = pool_args(c, &p, (dla_dtype)t, &a, &xn, &yn);
    const int ties = is_max && cf_chance(c, 50);
    cf_buf *bx = cf_buf_new(c, (dla_dtype)t, xn, ties ? -2 : -3, ties ? 2 : 3, 0);
    cf_buf *by = bx ? cf_buf_new(c, (dla_dtype)t, yn, -3, 3, 0) : NULL;
    cf_buf *bi = by && is_max ? cf_buf_new(c, DLA_I32, cf_numel(a.index.ndims, a.index.dims), 0, 0,
                                           0)
                              : NULL;
    if (!by || (is_max && !bi))
        return;
    if (ties) {
        for (int64_t i = 0; i < bx->n; i++)
            cf_buf_set(bx, i, round(cf_buf_get(bx, i)));
        if (cf_chance(c, 30))
            cf_buf_set(bx, cf_int(c, 0, bx->n - 1), NAN);
        if (!cf_buf_upload(c, bx))
            return;
    }
    pool_describe(c, backward ? "pool_backward" : "pool_forward", &p, (dla_dtype)t);
    /* Forward on both (backward's max needs the forward's positions). */
    for (int k = 0; k < 2; k++) {
        dla_pool_args b = a;
        b.x.mem = bx->mem[k], b.y.mem = by->mem[k], b.index.mem = is_max ? bi->mem[k] : NULL;
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_POOL_FORWARD, &b, 0));
    }
    if (!cf_agree(c))
        return;
    if (!backward) {
        if (is_max) {
            if (cf_compare(c, by, &a.y, CF_EXACT))
                cf_compare(c, bi, &a.index, CF_EXACT);
            return;
        }
        cf_buf *mx = cf_buf_abs(c, bx), *my = mx ? cf_buf_abs(c, by) : NULL;
        if (!my)
            return;
        dla_pool_args m = a;
        m.x.mem = mx->mem[CF_ORACLE], m.y.mem = my->mem[CF_ORACLE];
        if (CF_TABLE(c, CF_ORACLE)->pool_forward(CF_CTX(c, CF_ORACLE), &m) != DLA_OK) {
            cf_fail(c, "the oracle's magnitude run: %s", dla_last_error());
            return;
        }
        double *mag = cf_oracle_values(c, my);
        if (mag)
            cf_compare(c, by, &a.y, (cf_tol){0, mag, (double)(p.win[0] * p.win[1] * p.win[2])});
        free(mag);
        return;
    }
    /* Backward: dL/dy into x, with the forward's index (the same on both:
     * a max index mismatch is the forward's failure, checked first). */
    if (is_max && !cf_compare(c, bi, &a.index, CF_EXACT))
        return;
    for (int64_t i = 0; i < by->n; i++)
        cf_buf_set(by, i, cf_unif(c, -3, 3));
    if (!cf_buf_upload(c, by))
        return;
    for (int k = 0; k < 2; k++) {
        dla_pool_args b = a;
        b.x.mem = bx->mem[k], b.y.mem = by->mem[k], b.index.mem = is_max ? bi->mem[k] : NULL;
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_POOL_BACKWARD, &b, 0));
    }
    if (!cf_agree(c))
        return;
    cf_buf *mx = cf_buf_abs(c, bx), *my = mx ? cf_buf_abs(c, by) : NULL;
    if (!my)
        return;
    dla_pool_args m = a;
    m.x.mem = mx->mem[CF_ORACLE], m.y.mem = my->mem[CF_ORACLE];
    m.index.mem = is_max ? bi->mem[CF_ORACLE] : NULL;
    if (CF_TABLE(c, CF_ORACLE)->pool_backward(CF_CTX(c, CF_ORACLE), &m) != DLA_OK) {
        cf_fail(c, "the oracle's magnitude run: %s", dla_last_error());
        return;
    }
    double *mag = cf_oracle_values(c, mx);
    if (mag)
        cf_compare(c, bx, &a.x, (cf_tol){0, mag, (double)(p.win[0] * p.win[1] * p.win[2])});
    free(mag);
}

void cf_case_pool_forward(cf_case *c)
{
    pool_case_run(c, 0);
}
void cf_case_pool_backward(cf_case *c)
{
    pool_case_run(c, 1);
}

/* ---------------------------------------------------------------- index */

/* The index view as dla_index sends it: len positions, 1-d or shaped
 * 1xN or Nx1, step istep elements apart from offset ioff. Returns the
 * elements its buffer needs; position i is element ioff + i * istep. */
static int64_t index_view(dla_view *v, int shape, int64_t len, int64_t istep, int64_t ioff)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = DLA_I32;
    v->offset = ioff;
    v->ndims = shape == 0 ? 1 : 2;
    v->dims[0] = shape == 1 ? 1 : len;
    v->strides[0] = shape == 1 ? 1 : istep;
    if (shape) {
        v->dims[1] = shape == 1 ? len : 1;
        v->strides[1] = shape == 1 ? istep : istep * len;
    }
    return ioff + (len - 1) * istep + 1;
}

/* Leaves off trailing dims of 1 (dims past ndims count as 1). */
static int trim(cf_case *c, const int64_t *dims, int nd, int force)
{
    while (nd > 0 && dims[nd - 1] == 1 && (force || cf_chance(c, 50)))
        nd--;
    return nd;
}

static void index_case_run(cf_case *c, int scatter)
{
    const dla_plugin *tb = CF_TABLE(c, CF_DUT);
    const dla_kernel kernel = scatter ? DLA_KERNEL_SCATTER_ADD : DLA_KERNEL_GATHER;
    const int t = scatter ? cf_float_dtype(c, kernel) : cf_any_dtype(c, kernel);
    if (t < 0 || !(scatter ? (void *)tb->scatter_add : (void *)tb->gather) ||
        c->suite->dev[CF_DUT]->abi_minor < 1) {
        c->skipped = 1;
        return;
    }
    int nd;
    int64_t base[DLA_MAX_DIMS];
    cf_dims(c, &nd, base, 4, 6, 0);
    if (nd == 0)
        nd = 1, base[0] = cf_int(c, 1, 6);
    int dim = (int)cf_int(c, 0, nd - 1);
    int64_t len = cf_int(c, 1, 12), target = cf_chance(c, 20) ? 1 : cf_int(c, 1, 8);
    int shape = (int)cf_int(c, 0, 2);
    int64_t istep = cf_chance(c, 40) ? 1 : cf_int(c, 2, 3), ioff = cf_int(c, 0, 3);
    /* Case 1 is what dla_index sent a plugin written from the old header:
     * x 1x3 against y 1x3x2 along dim 2 (0-based; the other way round for
     * scatter_add), and 1x4-shaped positions two elements apart. */
    const int forced = c->index == 1;
    if (forced) {
        nd = 3, base[0] = 1, base[1] = 3, dim = 2, target = 1, len = scatter ? 2 : 4;
        shape = 1, istep = 2, ioff = 1;
    }
    int64_t xd[DLA_MAX_DIMS], yd[DLA_MAX_DIMS];
    memcpy(xd, base, sizeof xd);
    memcpy(yd, base, sizeof yd);
    xd[dim] = scatter ? len : target;
    yd[dim] = scatter ? target : len;
    /* The operand whose dim is the target may lose its trailing 1s. */
    const int ndx = scatter ? nd : trim(c, xd, nd, forced);
    const int ndy = scatter ? trim(c, yd, nd, forced) : nd;
    /* An index outside the target: dla_index leaves that refusal to the
     * kernel (DLA_ERR_INVALID_ARGUMENT), so case 2 always has one. */
    const int bad = c->index == 2 || (!forced && cf_chance(c, 10));
    const dla_dtype dt = (dla_dtype)t;
    dla_index_args a = {.struct_size = sizeof a, .dim = dim};
    cf_buf *by = cf_buf_new(c, dt, cf_view(c, &a.y, dt, ndy, yd, 0), -9, 9, 0);
    cf_buf *bx = by ? cf_buf_new(c, dt, cf_view(c, &a.x, dt, ndx, xd, 0), -9, 9, 0) : NULL;
    cf_buf *bi = bx ? cf_buf_new(c, DLA_I32, index_view(&a.index, shape, len, istep, ioff), 0,
                                 target - 1, 0)
                    : NULL;
    if (!bi)
        return;
    if (scatter) /* repeated positions, which must add up in order */
        for (int64_t i = 0; i < len; i++)
            if (cf_chance(c, 40))
                cf_buf_set(bi, ioff + i * istep, (double)cf_int(c, 0, target > 2 ? 1 : 0));
    if (forced && len > 1 && !scatter)
        for (int64_t i = 0; i < bi->n; i++) /* what lies between the positions */
            if ((i - ioff) % istep != 0 || i < ioff)
                cf_buf_set(bi, i, 7); /* outside the target: read only by a mistake */
    if (bad)
        cf_buf_set(bi, ioff + cf_int(c, 0, len - 1) * istep,
                   cf_chance(c, 50) ? -1 : (double)target);
    if (!cf_buf_upload(c, bi))
        return;
    char s1[64], s2[64], v0[128], v1[128], v2[128];
    cf_describe(c, "%s %s y %s x %s dim %d (0-based) %lld positions into %lld y%s x%s index "
                   "%s%s%s",
                scatter ? "scatter_add" : "gather", dla_dtype_name(dt),
                cf_dims_str(s1, sizeof s1, ndy, yd), cf_dims_str(s2, sizeof s2, ndx, xd), dim,
                (long long)len, (long long)target, cf_view_str(v0, sizeof v0, &a.y),
                cf_view_str(v1, sizeof v1, &a.x),
                shape == 0 ? "" : shape == 1 ? "1xN " : "Nx1 ",
                cf_view_str(v2, sizeof v2, &a.index), bad ? " with a bad index" : "");
    for (int k = 0; k < 2; k++) {
        dla_index_args b = a;
        b.y.mem = by->mem[k], b.x.mem = bx->mem[k], b.index.mem = bi->mem[k];
        cf_record(c, k, cf_call(c, k, kernel, &b, 0));
    }
    if (!cf_agree(c))
        return;
    if (!scatter) {
        cf_compare(c, by, &a.y, CF_EXACT);
        return;
    }
    cf_buf *my = cf_buf_abs(c, by), *mx = my ? cf_buf_abs(c, bx) : NULL;
    if (!mx)
        return;
    dla_index_args m = a;
    m.y.mem = my->mem[CF_ORACLE], m.x.mem = mx->mem[CF_ORACLE], m.index.mem = bi->mem[CF_ORACLE];
    if (CF_TABLE(c, CF_ORACLE)->scatter_add(CF_CTX(c, CF_ORACLE), &m) != DLA_OK) {
        cf_fail(c, "the oracle's magnitude run: %s", dla_last_error());
        return;
    }
    double *mag = cf_oracle_values(c, my);
    if (mag)
        cf_compare(c, by, &a.y, (cf_tol){0, mag, (double)len});
    free(mag);
}

void cf_case_gather(cf_case *c)
{
    index_case_run(c, 0);
}
void cf_case_scatter_add(cf_case *c)
{
    index_case_run(c, 1);
}

/*
 * gradient.c - dla_gradient: the backward sweep over the feval's tape.
 *
 * Gradients live in a map from tensor to its accumulated gradient, each
 * let go once the node that made its tensor has had its turn. A first
 * forward pass over the nodes marks which tensors depend on the requested
 * ones, so backward rules run only where a gradient is wanted and can skip
 * inputs nobody asked about. View ops accumulate into a view of their
 * base's gradient buffer instead of running a backward, which makes the
 * backward of slicing a strided add into one zeroed buffer.
 *
 * With higher derivatives (dla_gradient_opts) the sweep is recorded on the
 * tape like the forward: its ops must then be differentiable themselves,
 * so sums make new tensors instead of adding in place, and a view's rule
 * is an op of its own (unview) whose derivative is the view again.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/launch.h"
#include "core/tape.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------ tensor -> slot map */

typedef struct gmap {
    dla_tensor **keys;
    dla_tensor **grad;   /* owned references; NULL: none yet */
    unsigned char *dep;  /* depends on a requested tensor */
    unsigned char *fresh; /* grad[i] is a buffer only the map holds */
    unsigned char *wanted; /* a requested tensor (wrt) */
    int *producer;        /* the tape node that made it; -1: none */
    size_t cap;
} gmap;

static size_t hash_ptr(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static dla_status gmap_init(gmap *m, size_t n)
{
    size_t cap = 64;
    while (cap < n * 2)
        cap *= 2;
    m->cap = cap;
    m->keys = dla__calloc(cap, sizeof *m->keys);
    m->grad = dla__calloc(cap, sizeof *m->grad);
    m->dep = dla__calloc(cap, 1);
    m->fresh = dla__calloc(cap, 1);
    m->wanted = dla__calloc(cap, 1);
    m->producer = dla__malloc(cap * sizeof *m->producer);
    if (m->producer)
        for (size_t i = 0; i < cap; i++)
            m->producer[i] = -1;
    if (!m->keys || !m->grad || !m->dep || !m->fresh || !m->wanted || !m->producer)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_gradient: cannot allocate the gradient map");
    return DLA_OK;
}

static void gmap_free(gmap *m)
{
    if (m->grad)
        for (size_t i = 0; i < m->cap; i++)
            dla_tensor_release(m->grad[i]);
    dla__free(m->keys);
    dla__free(m->grad);
    dla__free(m->dep);
    dla__free(m->fresh);
    dla__free(m->wanted);
    dla__free(m->producer);
}

/* The slot of t, inserted when absent (the map is sized so it never fills:
 * at most every tensor of the tape plus the loss and the requests). */
static size_t gmap_slot(gmap *m, const dla_tensor *t)
{
    size_t i = hash_ptr(t, m->cap);
    while (m->keys[i] && m->keys[i] != t)
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = (dla_tensor *)t;
    return i;
}

static size_t gmap_find(const gmap *m, const dla_tensor *t)
{
    size_t i = hash_ptr(t, m->cap);
    while (m->keys[i] && m->keys[i] != t)
        i = (i + 1) & (m->cap - 1);
    return m->keys[i] ? i : SIZE_MAX;
}

/* ------------------------------------------------------------ accumulation */

/* The sweep's own steps are ops too (a zeroed buffer, a private copy, an
 * in-place add into a view of it), so a trace recorded around dla_gradient
 * holds the whole backward pass and replays it without this file. */

typedef struct fill_attrs {
    double value;
} fill_attrs;

static dla_status fill_like_forward(const void *attrs, dla_tensor *const *in, int nin,
                                    dla_tensor **out, dla_tensor **saved)
{
    dla_tensor *t = in[0];
    dla_tensor *b = dla__tensor_alloc("dla_gradient", t->storage->device, t->dtype, t->format,
                                      t->ndims, t->dims);
    if (!b)
        return dla_last_status();
    dla_view v;
    dla__view_of(b, &v);
    dla_status st = dla__k_fill(b->storage->device, &v, ((const fill_attrs *)attrs)->value);
    if (st != DLA_OK) {
        dla_tensor_release(b);
        return st;
    }
    out[0] = b;
    return DLA_OK;
}

static const dla__op fill_like_op = {
    .name = "fill_like", .nin = 1, .nout = 1, .forward = fill_like_forward, .constant = 1,
    /* The value is a number it only writes. */
    .infer = dla__infer_like_input,
};
DLA__OP_REGISTER(fill_like_op, sizeof(fill_attrs));

static dla_status clone_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                                dla_tensor **saved)
{
    dla_tensor *t = in[0];
    dla_tensor *b = dla__tensor_alloc("dla_gradient", t->storage->device, t->dtype, t->format,
                                      t->ndims, t->dims);
    if (!b)
        return dla_last_status();
    dla_view v, src;
    dla__view_of(b, &v);
    dla__view_of(t, &src);
    dla_status st = dla__k_copy(b->storage->device, &v, &src);
    if (st != DLA_OK) {
        dla_tensor_release(b);
        return st;
    }
    out[0] = b;
    return DLA_OK;
}

/* A copy's derivative is the identity (a recorded sweep's copies are
 * differentiated again). */
static dla_status clone_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    (void)n;
    gin[0] = gout[0];
    return DLA_OK;
}

static const dla__op clone_op = {
    .name = "clone", .nin = 1, .nout = 1, .forward = clone_forward, .backward = clone_backward,
};
DLA__OP_REGISTER(clone_op, 0);

/* z = a + g by the device's kernel, g read with z's dims (its own, or
 * fewer trailing ones). */
static dla_status add_kernel(dla_tensor *z, const dla_tensor *a, const dla_tensor *g)
{
    dla_binary_args b = {.struct_size = sizeof b, .op = DLA_BINARY_ADD};
    dla__view_of(z, &b.z);
    dla__view_of(a, &b.a);
    dla__view_of(g, &b.b);
    b.b.ndims = b.z.ndims;
    for (int i = 0; i < b.z.ndims; i++) {
        b.b.dims[i] = b.z.dims[i];
        b.b.strides[i] = i < g->ndims ? g->strides[i] : 0;
    }
    return dla__k_binary(z->storage->device, &b);
}

/* a + b into a new dense buffer of a's dims (b's dims those, or with
 * fewer trailing ones): the second gradient reaching a tensor whose first
 * is not the sweep's own (add's backward hands one tensor to both sides).
 * One pass where a private copy and an add in place into it took two (on
 * ResNet-20's step, a copy of a whole activation at every residual
 * join). The buffer is then private, and later gradients add into it. */
static dla_status grad_sum_forward(const void *attrs, dla_tensor *const *in, int nin,
                                   dla_tensor **out, dla_tensor **saved)
{
    (void)attrs, (void)nin, (void)saved;
    dla_tensor *a = in[0], *g = in[1];
    dla_tensor *z = dla__tensor_alloc("dla_gradient", a->storage->device, a->dtype, a->format,
                                      a->ndims, a->dims);
    if (!z)
        return dla_last_status();
    dla_status st = add_kernel(z, a, g);
    if (st != DLA_OK) {
        dla_tensor_release(z);
        return st;
    }
    dla__storage_written(z->storage);
    out[0] = z;
    return DLA_OK;
}

static const dla__op grad_sum_op = {
    .name = "grad_sum", .nin = 2, .nout = 1, .forward = grad_sum_forward,
    .infer = dla__infer_like_input,
};
DLA__OP_REGISTER(grad_sum_op, 0);

#define DLA__VIEW_ATTRS_MAX 160
#define DLA__VIEW_CHAIN_MAX 4

typedef struct view_step {
    const dla__op *op;
    size_t attrs_size;
    unsigned char attrs[DLA__VIEW_ATTRS_MAX];
} view_step;

typedef struct accumulate_attrs {
    int nviews; /* 0: add into the whole buffer */
    view_step views[DLA__VIEW_CHAIN_MAX]; /* applied from the buffer outwards */
} accumulate_attrs;

/* buf (a private dense buffer) += g, or view_n(...view_1(buf)) += g: in
 * place, the result aliasing buf. A chain of views (reshape, slice,
 * reshape) adds straight into the first tensor's buffer, with no buffer
 * per level. */
static dla_status accumulate_forward(const void *attrs, dla_tensor *const *in, int nin,
                                     dla_tensor **out, dla_tensor **saved)
{
    const accumulate_attrs *a = attrs;
    dla_tensor *buf = in[0], *g = in[1], *dst = dla_tensor_retain(buf);
    dla_status st = DLA_OK;
    for (int i = 0; i < a->nviews && st == DLA_OK; i++) {
        /* The view op's own forward makes the view header, unrecorded. */
        dla_tensor *vo[DLA__OP_MAX_IO] = {0}, *vs[DLA__OP_MAX_IO] = {0};
        st = a->views[i].op->forward(a->views[i].attrs, &dst, 1, vo, vs);
        dla_tensor_release(dst);
        dst = st == DLA_OK ? vo[0] : NULL;
    }
    if (st != DLA_OK)
        return st;
    st = add_kernel(dst, dst, g);
    dla__storage_written(dst->storage);
    dla_tensor_release(dst);
    if (st != DLA_OK)
        return st;
    out[0] = dla__tensor_view("dla_gradient", buf);
    return out[0] ? DLA_OK : dla_last_status();
}

/* In a trace file the views are named, not pointed at: a u8 count, then
 * for each view the u8 length of its op's registered name, the name, and
 * the u16 length of its attributes followed by them (the view op's own
 * encoding). */
static dla_status accumulate_encode(const dla__attrs_io *io, const void *attrs, size_t attrs_size,
                                    unsigned char *buf, size_t cap, size_t *len)
{
    const accumulate_attrs *a = attrs;
    size_t n = 1;
    if (cap >= 1)
        buf[0] = (unsigned char)a->nviews;
    for (int i = 0; i < a->nviews; i++) {
        const dla__op_reg *r = dla__op_registration(a->views[i].op);
        if (!r)
            return dla__fail(DLA_ERR_UNSUPPORTED, "accumulate: view op \"%s\" is not registered",
                             a->views[i].op->name);
        size_t name = strlen(r->name), alen;
        dla_status st = dla__op_encode_attrs(r, io, a->views[i].attrs, a->views[i].attrs_size, NULL, 0, &alen);
        if (st != DLA_OK)
            return st;
        if (name > 0xFF || alen > 0xFFFF)
            return dla__fail(DLA_ERR_UNSUPPORTED, "accumulate: view op \"%s\" does not fit a "
                             "trace file", r->name);
        if (n + 3 + name + alen <= cap) {
            uint16_t al = (uint16_t)alen;
            buf[n] = (unsigned char)name;
            memcpy(buf + n + 1, r->name, name);
            memcpy(buf + n + 1 + name, &al, 2);
            dla__op_encode_attrs(r, io, a->views[i].attrs, a->views[i].attrs_size, buf + n + 3 + name, alen, &alen);
        }
        n += 3 + name + alen;
    }
    *len = n;
    return DLA_OK;
}

static dla_status accumulate_decode(const dla__attrs_io *io, const unsigned char *buf, size_t size,
                                    void *attrs, size_t attrs_size)
{
    accumulate_attrs *a = attrs;
    size_t pos = 1;
    int nviews = size ? buf[0] : -1;
    if (nviews < 0 || nviews > DLA__VIEW_CHAIN_MAX)
        return dla__fail(DLA_ERR_IO, "accumulate: %d views", nviews);
    for (int i = 0; i < nviews; i++) {
        size_t name = pos < size ? buf[pos] : size;
        if (size - pos < 3 + name)
            return dla__fail(DLA_ERR_IO, "accumulate: view %d runs past the attributes", i + 1);
        char nm[256];
        memcpy(nm, buf + pos + 1, name);
        nm[name] = '\0';
        uint16_t alen;
        memcpy(&alen, buf + pos + 1 + name, 2);
        pos += 3 + name;
        const dla__op *op = strlen(nm) == name ? dla__op_find(nm) : NULL;
        const dla__op_reg *r = op ? dla__op_registration(op) : NULL;
        if (!r || !op->view || r->attrs_size > DLA__VIEW_ATTRS_MAX || alen > size - pos)
            return dla__fail(DLA_ERR_IO, "accumulate: view %d (\"%s\", %u bytes) is not a view "
                             "op's", i + 1, nm, (unsigned)alen);
        dla_status st = dla__op_decode_attrs(r, io, buf + pos, alen, a->views[i].attrs);
        if (st != DLA_OK)
            return st;
        a->views[i].op = op;
        a->views[i].attrs_size = r->attrs_size;
        pos += alen;
    }
    if (pos != size)
        return dla__fail(DLA_ERR_IO, "accumulate: %zu bytes past the views", size - pos);
    a->nviews = nviews;
    return DLA_OK;
}

/* accumulate_forward applies its views to the buffer in[0], each view
 * op's forward trusting its attributes, then adds g into the last view
 * through g's strides: every view must fit the one before and g the
 * last. */
static dla_status accumulate_infer(const void *attrs, int nin, const dla__vshape *in,
                                   dla__vshape *out)
{
    (void)nin;
    const accumulate_attrs *a = attrs;
    dla__vshape v[2]; /* the view so far, and the next one */
    v[0] = in[0];
    for (int i = 0; i < a->nviews; i++) {
        const dla__op *op = a->views[i].op;
        if (!op->infer)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "accumulate: view %d (%s) cannot be "
                             "checked", i + 1, op->name);
        dla_status st = op->infer(a->views[i].attrs, 1, &v[0], &v[1]);
        if (st != DLA_OK) {
            dla__error_prefix("accumulate");
            return st;
        }
        v[0] = v[1];
    }
    const dla__vshape *g = &in[1];
    char bd[DLA__DIMS_BUF], gd[DLA__DIMS_BUF];
    if (!dla__shape_fits(g, v[0].ndims, v[0].dims))
        return dla__fail(DLA_ERR_SHAPE, "accumulate: argument g (%s) does not fit the view "
                         "(%s) its attributes make of the buffer",
                         dla__dims_str(gd, sizeof gd, g->ndims, g->dims),
                         dla__dims_str(bd, sizeof bd, v[0].ndims, v[0].dims));
    out[0] = in[0];
    return DLA_OK;
}

static const dla__op accumulate_op = {
    .name = "accumulate", .nin = 2, .nout = 1, .forward = accumulate_forward, .inplace = 1,
    .encode_attrs = accumulate_encode, .decode_attrs = accumulate_decode,
    .infer = accumulate_infer,
};
DLA__OP_REGISTER(accumulate_op, sizeof(accumulate_attrs));

/* A recorded sweep's rule for a view op: zeros like in[0] with in[1] (g)
 * added into the views of them. It is accumulate's step on a buffer of
 * its own instead of in place, so that a later sweep can differentiate
 * it: its derivative in g is the same views of the result's gradient,
 * and in[0] gives only the shape. */
static dla_status unview_forward(const void *attrs, dla_tensor *const *in, int nin,
                                 dla_tensor **out, dla_tensor **saved)
{
    (void)nin;
    fill_attrs zero = {0.0};
    dla_tensor *buf[DLA__OP_MAX_IO] = {0};
    dla_status st = fill_like_forward(&zero, in, 1, buf, saved);
    if (st != DLA_OK)
        return st;
    st = accumulate_forward(attrs, (dla_tensor *[]){buf[0], in[1]}, 2, out, saved);
    dla_tensor_release(buf[0]);
    return st;
}

static dla_status unview_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const accumulate_attrs *a = n->attrs;
    dla_tensor *g = gout[0];
    for (int i = 0; i < a->nviews; i++)
        g = dla__apply(a->views[i].op, a->views[i].attrs, a->views[i].attrs_size, 1, &g);
    gin[1] = g;
    return DLA_OK;
}

static const dla__op unview_op = {
    .name = "unview", .nin = 2, .nout = 1, .forward = unview_forward,
    .backward = unview_backward, .encode_attrs = accumulate_encode,
    .decode_attrs = accumulate_decode,
    /* accumulate's checks: the views fit in[0], g fits them, and the
     * result has in[0]'s shape. */
    .infer = accumulate_infer,
};
DLA__OP_REGISTER(unview_op, sizeof(accumulate_attrs));

/* The view steps of chain[0..n-1] (outermost last) as attributes. */
static void view_steps(const dla__node *const *chain, int n, accumulate_attrs *a)
{
    a->nviews = n;
    for (int i = 0; i < n; i++) {
        DLA_ASSERT(chain[i]->op->view && chain[i]->attrs_size <= DLA__VIEW_ATTRS_MAX);
        a->views[i].op = chain[i]->op;
        a->views[i].attrs_size = chain[i]->attrs_size;
        if (chain[i]->attrs_size)
            memcpy(a->views[i].attrs, chain[i]->attrs, chain[i]->attrs_size);
    }
}

/* Runs a one-output op unscoped; NULL on failure (message set). */
static dla_tensor *run1(const dla__op *op, const void *attrs, size_t size, int nin,
                        dla_tensor *const *in)
{
    dla_tensor *out[DLA__OP_MAX_IO] = {0}, *saved[DLA__OP_MAX_IO] = {0};
    return dla__run_op(op, attrs, size, nin, in, out, saved) == DLA_OK ? out[0] : NULL;
}

static int same_dims(const dla_tensor *a, const dla_tensor *b)
{
    return a->ndims == b->ndims && !memcmp(a->dims, b->dims, (size_t)a->ndims * sizeof *a->dims);
}

/* The private gradient buffer of t: the gradient so far copied, or zeros. */
static dla_tensor *buffer_for(gmap *m, size_t s, const dla_tensor *t)
{
    if (m->grad[s] && m->fresh[s])
        return m->grad[s];
    fill_attrs zero = {0.0};
    dla_tensor *like = (dla_tensor *)t;
    dla_tensor *b = m->grad[s] ? run1(&clone_op, NULL, 0, 1, &m->grad[s])
                               : run1(&fill_like_op, &zero, sizeof zero, 1, &like);
    if (!b)
        return NULL;
    dla_tensor_release(m->grad[s]);
    m->grad[s] = b;
    m->fresh[s] = 1;
    return b;
}

/* grad(t) += g, or chain(grad(t)) += g through the views of nodes
 * chain[0..n-1] (outermost last). */
static dla_status add_into(gmap *m, size_t s, const dla_tensor *t, dla_tensor *g,
                           const dla__node *const *chain, int n)
{
    if (n == 0 && m->grad[s] && !m->fresh[s] && dla__same_but_trailing_ones(m->grad[s], g)) {
        dla_tensor *sum = run1(&grad_sum_op, NULL, 0, 2, (dla_tensor *[]){m->grad[s], g});
        if (!sum)
            return dla_last_status();
        dla_tensor_release(m->grad[s]);
        m->grad[s] = sum;
        m->fresh[s] = 1;
        return DLA_OK;
    }
    dla_tensor *b = buffer_for(m, s, t);
    if (!b)
        return dla_last_status();
    accumulate_attrs a;
    view_steps(chain, n, &a);
    dla_tensor *nb = run1(&accumulate_op, &a, sizeof a, 2, (dla_tensor *[]){b, g});
    if (!nb)
        return dla_last_status();
    dla_tensor_release(m->grad[s]);
    m->grad[s] = nb;
    return DLA_OK;
}

/* grad[s] += g in a recorded sweep: a new tensor from a recorded add, so
 * that a later sweep differentiates the sum. g stays the caller's. */
static dla_status add_recorded(gmap *m, size_t s, dla_tensor *g)
{
    dla_tensor *acc = m->grad[s];
    /* Both are gradients of one tensor, with its dims and format: a view's
     * rule (unview) makes them so, and the sweep gives a backward rule's
     * results the input's own (so add, which compares formats, takes
     * them). */
    dla_scope_begin();
    dla_tensor *sum = dla_tensor_retain(dla_add(acc, g));
    dla_scope_end();
    if (sum->status != DLA_OK) {
        dla_status st = dla__fail(sum->status, "%s", sum->message);
        dla_tensor_release(sum);
        return st;
    }
    dla_tensor_release(acc);
    m->grad[s] = sum;
    return DLA_OK;
}

/* grad(t) += g, in place, or through a recorded add in a recorded sweep.
 * g is a reference the caller gives up. */
static dla_status accumulate(gmap *m, const dla_tensor *t, dla_tensor *g, int recorded)
{
    size_t s = gmap_slot(m, t);
    if (!m->grad[s]) {
        m->grad[s] = g;
        m->fresh[s] = 0;
        return DLA_OK;
    }
    dla_status st = recorded ? add_recorded(m, s, g) : add_into(m, s, t, g, NULL, 0);
    dla_tensor_release(g);
    return st;
}

/* A recorded sweep's view rule: the node's input gets g placed in zeros
 * through the node's view, by a differentiable op (no chains, no
 * buffer shared in place). */
static dla_status accumulate_view_recorded(gmap *m, const dla__node *n, dla_tensor *g)
{
    accumulate_attrs a;
    view_steps(&n, 1, &a);
    dla_tensor *gi = run1(&unview_op, &a, sizeof a, 2, (dla_tensor *[]){n->in[0], g});
    return gi ? accumulate(m, n->in[0], gi, 1) : dla_last_status();
}

/* grad(base) viewed as the node's output += g: the view ops' rule. When the
 * base is itself a view (made by an earlier view node) that nobody asked
 * for, the chain is followed down, so the gradient lands in the first
 * tensor's buffer through the composed views. */
static dla_status accumulate_view(gmap *m, const dla__tape *tape, const dla__node *n, dla_tensor *g)
{
    const dla__node *chain[DLA__VIEW_CHAIN_MAX];
    int len = DLA__VIEW_CHAIN_MAX;
    chain[--len] = n;
    const dla_tensor *base = n->in[0];
    /* A reshape that copied in the forward is a view only of a dense
     * buffer: then it stands alone, on its input's own buffer. */
    int chainable = n->out[0]->storage == n->in[0]->storage;
    while (chainable && len > 0) {
        size_t s = gmap_find(m, base);
        if (s == SIZE_MAX || m->wanted[s] || m->producer[s] < 0)
            break;
        const dla__node *p = &tape->nodes[m->producer[s]];
        /* Only steps that were views in the forward (a reshape may copy). */
        if (!p->op->view || p->out[0]->storage != p->in[0]->storage)
            break;
        chain[--len] = p;
        base = p->in[0];
    }
    /* The steps repeat on the dense gradient buffer exactly as they ran in
     * the forward only when the chain's base was dense too: drop steps from
     * the bottom until it is (the last step alone always works on a dense
     * buffer). */
    while (len < DLA__VIEW_CHAIN_MAX - 1 && !dla__is_dense(base)) {
        base = chain[len]->out[0];
        len++;
    }
    return add_into(m, gmap_slot(m, base), base, g, chain + len, DLA__VIEW_CHAIN_MAX - len);
}

/* ---------------------------------------------------------------- sweep */

/* After node n's turn its outputs' gradients are complete and read by no
 * one (their consumers came later on the tape and have had theirs), so the
 * map lets go of them unless they were asked for: an eager backward then
 * holds the forward's saved tensors and the gradients of the layer it is
 * at, not every gradient it made on its way. An output that is also an
 * input of n shares that input's slot and stays. */
static void drop_output_grads(gmap *m, const dla__node *n)
{
    for (int i = 0; i < n->nout; i++) {
        size_t s = gmap_find(m, n->out[i]);
        if (s == SIZE_MAX || !m->grad[s] || m->wanted[s])
            continue;
        int also_input = 0;
        for (int j = 0; j < n->nin; j++)
            also_input |= n->in[j] == n->out[i];
        if (also_input)
            continue;
        dla_tensor_release(m->grad[s]);
        m->grad[s] = NULL;
        m->fresh[s] = 0;
    }
}

/* The hand-over of final gradients (dla_gradient_hooked). wrt[i] is final
 * once the sweep has passed first[i], the first node that used it: the
 * sweep goes from the last node down, and only a node with wrt[i] among
 * its inputs adds to its gradient, directly or, for a chain of views,
 * through a later node whose chain leads down to it (that node comes after
 * the chain's first view, which has wrt[i] as input). order[] holds the
 * indices by first use, latest first; next is the first not handed over. */
typedef struct handover {
    const dla_gradient_hooks *hooks;
    int nwrt;
    dla_tensor *const *wrt;
    long *first;  /* -1: used by no node */
    int *order;
    int next;
} handover;

/* Hands over every gradient final before node k (k < 0: at the end). */
static void hand_over(gmap *m, handover *h, long k)
{
    if (!h || !h->hooks->ready)
        return;
    while (h->next < h->nwrt && (k < 0 || h->first[h->order[h->next]] > k)) {
        int i = h->order[h->next++];
        size_t s = gmap_find(m, h->wrt[i]);
        if (s != SIZE_MAX && m->grad[s])
            h->hooks->ready(h->hooks->ctx, i, m->grad[s]);
    }
}

/* Sweeps nodes count-1 down to 0. recorded: higher derivatives, the
 * sweep's ops going onto the tape (which may grow and move: each node is
 * read from a copy). */
static dla_status sweep(gmap *m, const dla__tape *tape, size_t count, handover *h, int recorded)
{
    for (size_t k = count; k-- > 0;) {
        hand_over(m, h, (long)k);
        if (h && h->hooks->between && k + 1 < count)
            h->hooks->between(h->hooks->ctx);
        dla__node node = tape->nodes[k], *n = &node;
        dla_tensor *gout[DLA__OP_MAX_IO] = {0};
        int any = 0;
        for (int i = 0; i < n->nout; i++) {
            size_t s = gmap_find(m, n->out[i]);
            if (s != SIZE_MAX && m->grad[s]) {
                gout[i] = m->grad[s];
                any = 1;
            }
        }
        if (!any)
            continue;
        int need_any = 0;
        for (int j = 0; j < n->nin; j++) {
            size_t s = gmap_find(m, n->in[j]);
            n->need[j] = s != SIZE_MAX && m->dep[s];
            need_any |= n->need[j];
        }
        if (!need_any) {
            drop_output_grads(m, n);
            continue;
        }
        dla_status st = DLA_OK;
        if (!n->op->view && !n->op->backward) {
            /* Gradients stop here by design, or a rule is missing: then
             * the path would be dropped without a word. */
            if (!n->op->constant)
                st = dla__fail(DLA_ERR_UNSUPPORTED, "the derivative of %s (%s) is not "
                               "supported, and the loss depends on it", n->op->name,
                               dla__op_registration(n->op) ? dla__op_registration(n->op)->name
                                                           : "an unregistered op");
        } else if (recorded && n->nsaved && !n->op->saved_constant) {
            st = dla__fail(DLA_ERR_UNSUPPORTED, "higher derivatives through %s are not "
                           "supported (its backward reads statistics it saved)", n->op->name);
        } else if (n->op->view) {
            st = recorded ? accumulate_view_recorded(m, n, gout[0])
                          : accumulate_view(m, tape, n, gout[0]);
        } else {
            dla_tensor *gin[DLA__OP_MAX_IO] = {0};
            dla_scope_begin();
            st = n->op->backward(n, gout, gin);
            for (int j = 0; j < n->nin && st == DLA_OK; j++)
                if (gin[j] && gin[j]->status != DLA_OK)
                    st = dla__fail(gin[j]->status, "%s", gin[j]->message);
            /* With the input's own dims and format: a rule may leave a
             * trailing one more or less, and a recorded sweep adds
             * gradients with dla_add, which compares formats. */
            for (int j = 0; j < n->nin && st == DLA_OK; j++)
                if (gin[j] && n->need[j] && dla__same_but_trailing_ones(gin[j], n->in[j]) &&
                    (!same_dims(gin[j], n->in[j]) || (recorded &&
                                                      strcmp(gin[j]->format, n->in[j]->format))))
                    gin[j] = dla_reshape(gin[j], n->in[j]->format, n->in[j]->ndims,
                                         n->in[j]->dims);
            for (int j = 0; j < n->nin; j++)
                gin[j] = (st == DLA_OK && n->need[j]) ? dla_tensor_retain(gin[j]) : NULL;
            dla_scope_end();
            for (int j = 0; j < n->nin; j++) {
                if (!gin[j])
                    continue;
                if (st == DLA_OK && !same_dims(gin[j], n->in[j])) {
                    char a[DLA__DIMS_BUF], b[DLA__DIMS_BUF];
                    st = dla__fail(DLA_ERR_STATE,
                                   "%s backward: gradient of input %d is %s, the input is %s", n->op->name,
                                   j + 1, dla__tensor_dims_str(gin[j], a, sizeof a),
                                   dla__tensor_dims_str(n->in[j], b, sizeof b));
                }
                if (st == DLA_OK)
                    st = accumulate(m, n->in[j], gin[j], recorded);
                else
                    dla_tensor_release(gin[j]);
            }
        }
        if (st != DLA_OK) {
            dla__error_prefix("dla_gradient");
            return st;
        }
        drop_output_grads(m, n);
    }
    hand_over(m, h, -1);
    return DLA_OK;
}

static void fail_grads(int nwrt, dla_tensor **grads)
{
    dla_tensor *e = dla__return(dla__error_tensor());
    for (int i = 0; i < nwrt; i++)
        grads[i] = i == 0 ? e : dla__return(dla_tensor_retain(e));
}

/* The hand-over's first uses and order (h->first and h->order allocated). */
static void handover_plan(handover *h, const dla__tape *tape, size_t count)
{
    for (int i = 0; i < h->nwrt; i++) {
        h->first[i] = -1;
        for (size_t k = 0; k < count && h->first[i] < 0; k++)
            for (int j = 0; j < tape->nodes[k].nin; j++)
                if (tape->nodes[k].in[j] == h->wrt[i]) {
                    h->first[i] = (long)k;
                    break;
                }
        h->order[i] = i;
    }
    /* Latest first use first; ties and unused ones in index order. */
    for (int i = 1; i < h->nwrt; i++)
        for (int j = i; j > 0 && h->first[h->order[j]] > h->first[h->order[j - 1]]; j--) {
            int t = h->order[j];
            h->order[j] = h->order[j - 1];
            h->order[j - 1] = t;
        }
}

/* Recording is paused around a plain sweep; a recorded one (higher
 * derivatives) leaves it as it is. */
static void pause_unless(int recorded)
{
    if (!recorded)
        dla__recording_pause();
}
static void resume_unless(int recorded)
{
    if (!recorded)
        dla__recording_resume();
}

/* Which of the first count nodes the loss is computed from (reach[k]): a
 * sweep from the loss back over the tape, through the values the map
 * knows (the nodes' outputs). Only those carry a gradient. */
static void nodes_to_loss(const dla__tape *tape, size_t count, const gmap *m,
                          const dla_tensor *loss, unsigned char *on_path, unsigned char *reach)
{
    size_t s = gmap_find(m, loss);
    if (s != SIZE_MAX)
        on_path[s] = 1;
    for (size_t k = count; k-- > 0;) {
        const dla__node *n = &tape->nodes[k];
        for (int o = 0; o < n->nout && !reach[k]; o++) {
            size_t so = gmap_find(m, n->out[o]);
            reach[k] = so != SIZE_MAX && on_path[so];
        }
        for (int j = 0; reach[k] && j < n->nin; j++) {
            size_t si = gmap_find(m, n->in[j]);
            if (si != SIZE_MAX)
                on_path[si] = 1;
        }
    }
}

/* A replay of an accelerated function on this tape (a dla_accel_call
 * inside dla_feval) reads a tensor made before its recording through a
 * header of the trace's own (trace_outer), which stands for the caller's
 * tensor but is another tensor to the tape: a gradient with respect to
 * that tensor, or to one it was computed from, would leave out the path
 * through the replay, which the eager call had (until 2026-11-29 it did
 * so silently: dw = 1 for sum(x .* w + w), eager x + 1). Refused, naming
 * what to do; a header read on its own (class weights of a loss) is
 * fine, and so is a replay the loss is not computed from (a metric beside
 * it): only nodes on the loss's path carry a gradient. Cost: a flag test
 * per node input; with a header read, a sweep back over the tape and a
 * storage search per such read. */
static dla_status check_trace_headers(const char *op, const dla__tape *tape, size_t count,
                                      const gmap *m, const dla_tensor *loss, int nwrt,
                                      dla_tensor *const *wrt)
{
    /* The loss's path, worked out only when a header was read at all: a
     * replay whose results the loss is not computed from (a metric beside
     * it, through the same function) gives no gradient eagerly either,
     * and was refused all the same. */
    int headers = 0;
    for (size_t k = 0; k < count && !headers; k++)
        for (int j = 0; j < tape->nodes[k].nin && !headers; j++)
            headers = tape->nodes[k].in[j]->trace_outer;
    if (!headers)
        return DLA_OK;
    unsigned char *on_path = dla__calloc(m->cap, 1), *reach = dla__calloc(count ? count : 1, 1);
    if (!on_path || !reach) {
        dla__free(on_path);
        dla__free(reach);
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot allocate the loss's path", op);
    }
    nodes_to_loss(tape, count, m, loss, on_path, reach);
    dla_status st = DLA_OK;
    for (size_t k = 0; k < count && st == DLA_OK; k++) {
        const dla__node *n = &tape->nodes[k];
        for (int j = 0; reach[k] && j < n->nin && st == DLA_OK; j++) {
            const dla_tensor *x = n->in[j];
            if (!x->trace_outer)
                continue;
            int hit = -1;
            for (int i = 0; i < nwrt && hit < 0; i++)
                if (wrt[i]->storage == x->storage)
                    hit = i;
            int via = 0;
            for (size_t e = 0; e < k && hit < 0 && !via; e++)
                for (int o = 0; o < tape->nodes[e].nout && !via; o++) {
                    const dla_tensor *y = tape->nodes[e].out[o];
                    size_t s = gmap_find(m, y);
                    via = y->storage == x->storage && s != SIZE_MAX && m->dep[s];
                }
            if (hit < 0 && !via)
                continue;
            char buf[DLA__DIMS_BUF], arg[64] = "a value computed from the arguments wrt";
            if (hit >= 0)
                snprintf(arg, sizeof arg, "argument wrt[%d]", hit);
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: %s (%s %s) was read by an accelerated function replayed on this "
                           "tape as a constant of its trace (made before the call, reached "
                           "through ctx or a global), so no gradient flows back through that "
                           "replay, where the function itself would give one. Pass the tensor "
                           "to the accelerated function as a tensor input (a network: "
                           "dla_accel_options.ctx_kind)", op, arg,
                           dla__tensor_dims_str(x, buf, sizeof buf), dla_dtype_name(x->dtype));
        }
    }
    dla__free(on_path);
    dla__free(reach);
    return st;
}

/* Nonzero when the loss is "traced" in MATLAB's sense: computed by the
 * tape's differentiable ops (not only through comparisons, fills or other
 * constant ops) from one of the dla_feval's single or double inputs or
 * from one of wrt. A loss made only of constants to the tape (gradients
 * of a plain sweep, tensors made before the call) is not: MATLAB's
 * dlgradient then fails ("Value to differentiate is not traced"), where a
 * traced loss that does not reach a variable gives that variable zeros.
 * -2: no memory (said). */
static int loss_is_traced(const dla__tape *tape, size_t count, dla_tensor *loss, int nwrt,
                          dla_tensor *const *wrt)
{
    size_t tensors = (size_t)nwrt + (size_t)tape->nin + 1;
    for (size_t k = 0; k < count; k++)
        tensors += (size_t)tape->nodes[k].nout;
    gmap m = {0};
    int traced = 0;
    if (gmap_init(&m, tensors) != DLA_OK) {
        gmap_free(&m);
        return -2; /* no memory, said */
    }
    for (int i = 0; i < nwrt; i++)
        m.dep[gmap_slot(&m, wrt[i])] = 1;
    for (int i = 0; i < tape->nin; i++)
        if (tape->in[i] && tape->in[i]->status == DLA_OK &&
            (tape->in[i]->dtype == DLA_F32 || tape->in[i]->dtype == DLA_F64))
            m.dep[gmap_slot(&m, tape->in[i])] = 1;
    for (size_t k = 0; k < count; k++) {
        const dla__node *n = &tape->nodes[k];
        int d = 0;
        for (int j = 0; j < n->nin && !d && !n->op->constant; j++) {
            size_t s = gmap_find(&m, n->in[j]);
            d = s != SIZE_MAX && m.dep[s];
        }
        for (int i = 0; d && i < n->nout; i++)
            m.dep[gmap_slot(&m, n->out[i])] = 1;
    }
    size_t s = gmap_find(&m, loss);
    traced = s != SIZE_MAX && m.dep[s];
    gmap_free(&m);
    return traced;
}

/* A tensor the loss's path reads (an input of a node the loss is computed
 * from) that is wrt's memory under another handle: made off the tape (no
 * node made it, and it depends on no requested tensor) and overlapping
 * wrt, itself made off the tape. NULL: none. The loss then reads wrt's
 * values as a constant, and zeros would be a silent mistake, not MATLAB's
 * unused variable: an accelerated model loss recorded with fresh handles
 * for its inputs (docs/networks.md's recipe) whose forward read the
 * network's own learnables through ctx instead of its inputs (no
 * dla_net_forward_options.learnables) gave every learnable zeros in the
 * accelerated call, where the same function eagerly gave the gradients.
 * on_path and reach: NULL until nodes_to_loss has filled them (calloc'd
 * here; the caller frees them). */
static const dla_tensor *read_under_another_handle(const dla__tape *tape, size_t count,
                                                   const gmap *m, const dla_tensor *loss,
                                                   const dla_tensor *w, unsigned char **on_path,
                                                   unsigned char **reach, dla_status *st)
{
    size_t sw = gmap_find(m, w);
    if (sw != SIZE_MAX && m->producer[sw] >= 0)
        return NULL; /* a view made on the tape (x(i) of a loss of x): MATLAB's zeros */
    if (!*on_path) {
        *on_path = dla__calloc(m->cap, 1);
        *reach = dla__calloc(count ? count : 1, 1);
        if (!*on_path || !*reach) {
            *st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_gradient: cannot allocate the loss's path");
            return NULL;
        }
        nodes_to_loss(tape, count, m, loss, *on_path, *reach);
    }
    for (size_t k = 0; k < count; k++) {
        const dla__node *n = &tape->nodes[k];
        for (int j = 0; (*reach)[k] && j < n->nin; j++) {
            const dla_tensor *x = n->in[j];
            if (x == w || x->storage != w->storage)
                continue;
            size_t s = gmap_find(m, x);
            if ((s == SIZE_MAX || (m->producer[s] < 0 && !m->dep[s])) &&
                dla__tensors_overlap(x, w))
                return x;
        }
    }
    return NULL;
}

/* missing: NULL, and a wrt[i] the loss does not depend on gets zeros when
 * the loss is traced (MATLAB's dlgradient: a traced loss that does not
 * reach a variable, or reaches it only through constant ops, gives it
 * zeros) and is an error when it is not (the public calls); otherwise its
 * gradient is zeros and *missing counts them (dla__gradient_or_zeros).
 * may_miss (may be NULL): the wrt[i] with may_miss[i] set get zeros when
 * the loss does not depend on them, traced or not
 * (dla__gradient_may_miss). one_needed: the loss counts as traced only
 * when it reaches some wrt[i] without may_miss[i] (dla_net_gradient: a
 * loss that reaches none of the network's learnables is an error). */
static dla_status gradient_run(dla_tensor *loss, int nwrt, dla_tensor *const *wrt,
                               dla_tensor **grads, const dla_gradient_hooks *hooks, int recorded,
                               int *missing, const char *may_miss, int one_needed)
{
    static const char op[] = "dla_gradient";
    if (nwrt < 0 || (nwrt && (!wrt || !grads)))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument wrt: %d tensors", op, nwrt);
    dla__tape *tape = dla__tape_current();
    if (tape && !dla__recording() && dla__forward_depth() != dla__feval_base()) {
        /* Under a tape, but inside an op's forward, whose ops belong to
         * that op and are on no tape: "outside dla_feval" was not true. */
        dla__fail(DLA_ERR_STATE, "%s: called inside the forward of an op (a custom layer's with "
                  "a backward of its own, an \"adjoint\" dla_ode45's slope), whose ops are on "
                  "no tape: a dla_feval opened there records its own, but its results are "
                  "constants to the caller's gradient (a dla_ode45 slope that takes gradients "
                  "needs gradient_mode \"direct\")", op);
        fail_grads(nwrt, grads);
        return DLA_ERR_STATE;
    }
    if (!tape || !dla__recording()) {
        dla__fail(DLA_ERR_STATE, "%s: called outside dla_feval; gradients need the tape that "
                  "dla_feval records", op);
        fail_grads(nwrt, grads);
        return DLA_ERR_STATE;
    }
    if (!loss || loss->status != DLA_OK) {
        dla_tensor *e = dla__pass_arg(op, "loss", loss);
        for (int i = 0; i < nwrt; i++)
            grads[i] = i == 0 ? e : dla__return(dla_tensor_retain(e));
        return e->status;
    }
    char buf[DLA__DIMS_BUF];
    if (dla__numel(loss->ndims, loss->dims) != 1 ||
        (loss->dtype != DLA_F32 && loss->dtype != DLA_F64)) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument loss: %s %s; it must be a real scalar",
                  op, dla__tensor_dims_str(loss, buf, sizeof buf), dla_dtype_name(loss->dtype));
        fail_grads(nwrt, grads);
        return DLA_ERR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < nwrt; i++)
        if (!wrt[i] || wrt[i]->status != DLA_OK) {
            dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument wrt[%d] is %s", op, i,
                      wrt[i] ? "an error tensor" : "NULL");
            fail_grads(nwrt, grads);
            return DLA_ERR_INVALID_ARGUMENT;
        } else if (wrt[i]->dtype != DLA_F32 && wrt[i]->dtype != DLA_F64) {
            /* No op passes a gradient into integers or logicals (a cast
             * from one is a constant to the sweep): "the loss does not
             * depend on it" would be false of a loss computed from it. */
            dla__fail(DLA_ERR_DTYPE, "%s: argument wrt[%d] (%s %s): gradients are taken with "
                      "respect to single or double tensors; cast it to one before computing the "
                      "loss from it", op, i, dla__tensor_dims_str(wrt[i], buf, sizeof buf),
                      dla_dtype_name(wrt[i]->dtype));
            fail_grads(nwrt, grads);
            return DLA_ERR_DTYPE;
        }
    if (dla__trace_recording() && dla__trace_check_wrt(op, nwrt, wrt) != DLA_OK) {
        fail_grads(nwrt, grads);
        return DLA_ERR_INVALID_ARGUMENT;
    }
    size_t count = tape->count, tensors = (size_t)nwrt + 1;
    const int earlier_plain = tape->plain_sweeps;
    for (size_t k = 0; k < count; k++)
        tensors += (size_t)(tape->nodes[k].nin + tape->nodes[k].nout);
    gmap m = {0};
    dla_status st = gmap_init(&m, tensors);
    /* Which tensors depend on a requested one: a forward pass over nodes. */
    for (int i = 0; st == DLA_OK && i < nwrt; i++) {
        /* Not asked for: nothing depends on it, so the sweep prunes
         * the ops that lead only to it; it gets zeros. */
        if (may_miss && may_miss[i] == 2)
            continue;
        size_t s = gmap_slot(&m, wrt[i]);
        m.dep[s] = 1;
        m.wanted[s] = 1;
    }
    for (size_t k = 0; st == DLA_OK && k < count; k++) {
        const dla__node *n = &tape->nodes[k];
        int d = 0;
        for (int j = 0; j < n->nin && !d; j++) {
            size_t s = gmap_find(&m, n->in[j]);
            d = s != SIZE_MAX && m.dep[s];
        }
        for (int i = 0; i < n->nout; i++) {
            size_t s = gmap_slot(&m, n->out[i]);
            m.producer[s] = (int)k;
            if (d)
                m.dep[s] = 1;
        }
    }
    if (st == DLA_OK)
        st = check_trace_headers(op, tape, count, &m, loss, nwrt, wrt);
    pause_unless(recorded);
    if (st == DLA_OK) {
        size_t s = gmap_slot(&m, loss);
        fill_attrs one = {1.0};
        m.grad[s] = run1(&fill_like_op, &one, sizeof one, 1, &loss);
        m.fresh[s] = 1;
        st = m.grad[s] ? DLA_OK : dla_last_status();
    }
    /* The hooks run in an eager sweep only: while a trace records, their
     * ops would join the trace (and a replay never calls them). */
    handover h = {.hooks = hooks, .nwrt = nwrt, .wrt = wrt}, *hp = NULL;
    if (st == DLA_OK && hooks && (hooks->ready || hooks->between) && !dla__trace_recording()) {
        h.first = dla__malloc(sizeof *h.first * (size_t)(nwrt ? nwrt : 1));
        h.order = dla__malloc(sizeof *h.order * (size_t)(nwrt ? nwrt : 1));
        if (!h.first || !h.order)
            st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for the hooks", op);
        else {
            handover_plan(&h, tape, count);
            hp = &h;
        }
    }
    if (st == DLA_OK)
        st = sweep(&m, tape, count, hp, recorded);
    dla__free(h.first);
    dla__free(h.order);
    resume_unless(recorded);
    tape->plain_sweeps += !recorded;
    /* -1: not asked yet. */
    int traced = -1;
    unsigned char *on_path = NULL, *reach = NULL;
    if (one_needed && st == DLA_OK) {
        traced = 0;
        for (int i = 0; i < nwrt && !traced; i++) {
            size_t s = gmap_find(&m, wrt[i]);
            traced = s != SIZE_MAX && m.grad[s] && !(may_miss && may_miss[i]);
        }
    }
    for (int i = 0; st == DLA_OK && i < nwrt; i++) {
        size_t s = gmap_find(&m, wrt[i]);
        if ((s == SIZE_MAX || !m.grad[s]) && !missing && !(may_miss && may_miss[i]) &&
            traced < 0)
            traced = loss_is_traced(tape, count, loss, nwrt, wrt);
        if (traced == -2) {
            st = DLA_ERR_OUT_OF_MEMORY;
            break;
        }
        const dla_tensor *alias = NULL;
        if ((s == SIZE_MAX || !m.grad[s]) && !missing && !(may_miss && may_miss[i]) &&
            traced > 0 &&
            (alias = read_under_another_handle(tape, count, &m, loss, wrt[i], &on_path, &reach,
                                               &st)) != NULL) {
            char abuf[DLA__DIMS_BUF];
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: argument wrt[%d] (%s %s): the loss does not depend on it, but "
                           "reads its memory through another tensor (%s %s) made before the "
                           "call, a constant to the tape: compute the loss from wrt[%d] itself "
                           "(an accelerated function gets fresh handles for its inputs: read "
                           "the input, not the caller's tensor through ctx or a global; a "
                           "network's learnables given as inputs: "
                           "dla_net_forward_options.learnables)", op, i,
                           dla__tensor_dims_str(wrt[i], buf, sizeof buf),
                           dla_dtype_name(wrt[i]->dtype),
                           dla__tensor_dims_str(alias, abuf, sizeof abuf),
                           dla_dtype_name(alias->dtype), i);
        } else if (st != DLA_OK) {
            break;
        } else if ((s == SIZE_MAX || !m.grad[s]) &&
                   (missing || (may_miss && may_miss[i]) || traced > 0)) {
            if (missing)
                ++*missing;
        } else if (s == SIZE_MAX || !m.grad[s])
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: argument wrt[%d] (%s %s): the loss does not depend on it, "
                           "nor on any other argument wrt or input of dla_feval through ops "
                           "with a derivative (MATLAB: \"Value to differentiate is not "
                           "traced\"; a loss that depends on one of them gives zeros for the "
                           "others)%s", op,
                           i, dla__tensor_dims_str(wrt[i], buf, sizeof buf),
                           dla_dtype_name(wrt[i]->dtype),
                           earlier_plain
                               ? " (gradients from dla_gradient are constants to a later one "
                                 "unless asked for with enable_higher_derivatives: "
                                 "dla_gradient_opts)"
                               : "");
    }
    dla__free(on_path);
    dla__free(reach);
    if (st != DLA_OK) {
        gmap_free(&m);
        fail_grads(nwrt, grads);
        return st;
    }
    /* Each gradient gets memory of its own: the sweep hands one tensor to
     * several arguments (add's backward passes its gradient to both
     * sides; wrt listing a tensor twice), and a write in place to one (a
     * collective summing gradients one at a time) would reach the other.
     * The copy is an op, so a trace replays it; off the tape, as the
     * sweep is (on it, for a recorded one). */
    pause_unless(recorded);
    for (int i = 0; i < nwrt; i++) {
        size_t s = gmap_find(&m, wrt[i]);
        fill_attrs zero = {0.0};
        dla_tensor *g = s != SIZE_MAX && m.grad[s]
                            ? dla_tensor_retain(m.grad[s])
                            : run1(&fill_like_op, &zero, sizeof zero, 1, &wrt[i]);
        for (int j = 0; g && j < i; j++)
            if (dla__tensors_overlap(g, grads[j])) {
                dla_tensor *c = run1(&clone_op, NULL, 0, 1, &g);
                dla_tensor_release(g);
                g = c;
                break;
            }
        if (!g) {
            st = dla_last_status();
            for (int j = 0; j < i; j++)
                dla_tensor_release(grads[j]);
            break;
        }
        grads[i] = g;
    }
    resume_unless(recorded);
    gmap_free(&m);
    if (st != DLA_OK) {
        fail_grads(nwrt, grads);
        return st;
    }
    for (int i = 0; i < nwrt; i++)
        grads[i] = dla__return(grads[i]);
    return DLA_OK;
}

DLA_API dla_status dla_gradient_opts(dla_tensor *loss, int nwrt, dla_tensor *const *wrt,
                                     dla_tensor **grads, const dla_gradient_options *opts)
{
    return gradient_run(loss, nwrt, wrt, grads, opts ? opts->hooks : NULL,
                        opts && opts->enable_higher_derivatives, NULL, NULL, 0);
}

dla_status dla__gradient_or_zeros(dla_tensor *loss, dla_tensor *x, dla_tensor **grad, int recorded,
                                  int *missing)
{
    return gradient_run(loss, 1, &x, grad, NULL, recorded, missing, NULL, 0);
}

DLA_API dla_status dla_gradient_hooked(dla_tensor *loss, int nwrt, dla_tensor *const *wrt,
                                       dla_tensor **grads, const dla_gradient_hooks *hooks)
{
    return gradient_run(loss, nwrt, wrt, grads, hooks, 0, NULL, NULL, 0);
}

dla_status dla__gradient_may_miss(dla_tensor *loss, int nwrt, dla_tensor *const *wrt,
                                  dla_tensor **grads, const dla_gradient_hooks *hooks,
                                  const char *may_miss)
{
    return gradient_run(loss, nwrt, wrt, grads, hooks, 0, NULL, may_miss, 1);
}

DLA_API dla_status dla_gradient(dla_tensor *loss, int nwrt, dla_tensor *const *wrt,
                                dla_tensor **grads)
{
    return gradient_run(loss, nwrt, wrt, grads, NULL, 0, NULL, NULL, 0);
}

/*
 * layer_custom_op.c - a custom layer with a backward of its own, run as
 * one op of the core (core/op.h): the forward calls the type's predict or
 * forward (whose ops then belong to this op, not to the tape), and
 * dla_gradient calls the type's backward instead of differentiating them
 * (MATLAB's custom backward function of a layer).
 *
 * This is the one file of nn/ that reaches below the public API: an op
 * with a backward given at run time is what the tape and the trace
 * recorder need, and the op contract is the core's. The op's inputs are
 * the layer's inputs, learnables and state; its outputs Z and the new
 * state, so there is one op per count of state (0..3). Its attributes name
 * the type by its registration, which lasts for the process; in a trace
 * file they are the type's name, found again in the registry at load.
 */
#include "nn/layer_custom.h"

#include "core/op.h"
#include "core/tape.h"

#include "core/scope.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct custom_attrs {
    const dla__custom_type *type;
    int training, nx, nl, ns;
    double props[DLA_LAYER_MAX_PROPERTIES];
} custom_attrs;

/* The io of the node's inputs. */
static void io_of(const custom_attrs *a, dla_tensor *const *in, dla_layer_io *io)
{
    *io = (dla_layer_io){.training = a->training, .nx = a->nx, .x = in, .nlearnables = a->nl,
                         .learnables = in + a->nx, .nstate = a->ns,
                         .state = in + a->nx + a->nl, .properties = a->props};
}

/* A +1 reference to t that is not one of the op's inputs: an op's output
 * is a tensor of its own on the tape and in a trace, so an input given
 * back (an identity layer, state left alone) becomes a view of it. */
static dla_tensor *fresh(dla_tensor *t, dla_tensor *const *in, int nin)
{
    for (int i = 0; i < nin; i++)
        if (t == in[i]) {
            int64_t dims[DLA_MAX_DIMS];
            int nd = dla_tensor_dims(t, dims);
            return dla_tensor_retain(dla_reshape(t, dla_tensor_format(t), nd, dims));
        }
    return dla_tensor_retain(t);
}

static dla_status op_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                             dla_tensor **saved)
{
    (void)saved;
    const custom_attrs *a = attrs;
    const dla_layer_type *t = &a->type->def;
    dla_layer_io io;
    io_of(a, in, &io);
    dla_status (*fn)(dla_layer_io *) = a->training && t->forward ? t->forward : t->predict;
    const char *which = fn == t->forward ? "forward" : "predict";
    dla__recording_pause();
    const int mark = dla__scope_open_guarded(NULL);
    dla_clear_error();
    dla_status st = fn(&io);
    char why[120];
    const int imbalance = dla__scope_guarded_imbalance(mark);
    if (st == DLA_OK && imbalance)
        st = dla_set_error(DLA_ERR_STATE, "%s: its %s %s", t->type, which,
                           dla__scope_imbalance_str(imbalance, why, sizeof why));
    if (st == DLA_OK && !io.y)
        st = dla_set_error(DLA_ERR_STATE, "%s: its %s set no output (io->y)", t->type, which);
    else if (st == DLA_OK && dla_tensor_status(io.y) != DLA_OK)
        st = dla_set_error(dla_tensor_status(io.y), "%s", dla_tensor_error(io.y));
    else if (st != DLA_OK && dla_last_status() == DLA_OK)
        dla_set_error(st, "%s: its %s failed (%s)", t->type, which, dla_status_str(st));
    if (st == DLA_OK && (st = dla__custom_new_state_check(&io, which)) != DLA_OK) {
        char m[400];
        snprintf(m, sizeof m, "%s", dla_last_error());
        st = dla_set_error(st, "%s: %s", t->type, m);
    }
    for (int k = 0; st == DLA_OK && k < a->ns; k++)
        if (io.new_state[k] && dla_tensor_status(io.new_state[k]) != DLA_OK)
            st = dla_set_error(dla_tensor_status(io.new_state[k]), "%s",
                               dla_tensor_error(io.new_state[k]));
    if (st == DLA_OK) {
        out[0] = fresh(io.y, in, nin);
        /* State forward left alone passes through. */
        for (int k = 0; k < a->ns; k++)
            out[1 + k] = fresh(io.new_state[k] ? io.new_state[k] : io.state[k],
                               in, nin);
        for (int k = 0; k <= a->ns; k++)
            if (!out[k] || dla_tensor_status(out[k]) != DLA_OK) {
                st = out[k] ? dla_set_error(dla_tensor_status(out[k]), "%s",
                                            dla_tensor_error(out[k]))
                            : dla_set_error(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", t->type);
                for (int j = 0; j <= a->ns; j++) {
                    dla_tensor_release(out[j]);
                    out[j] = NULL;
                }
                break;
            }
    }
    dla__scope_close_guarded(mark);
    dla__recording_resume();
    return st;
}

/* Zeros of t's dims, format and dtype on t's device. */
static dla_tensor *zeros_like(dla_tensor *t)
{
    int64_t d[DLA_MAX_DIMS];
    const int nd = dla_tensor_dims(t, d);
    dla_device *prev = dla_device_current();
    dla_device_set_current(dla_tensor_device(t));
    dla_tensor *z = dla_zeros(dla_tensor_dtype(t), dla_tensor_format(t), nd, d);
    dla_device_set_current(prev);
    return z;
}

static dla_status op_backward(const dla__node *node, dla_tensor *const *gout, dla_tensor **gin)
{
    const custom_attrs *a = node->attrs;
    const dla_layer_type *t = &a->type->def;
    if (!gout[0]) /* only the state reaches the loss: it has no gradient */
        return DLA_OK;
    dla_layer_io io;
    io_of(a, node->in, &io);
    io.y = node->out[0];
    dla_tensor *dx[DLA__CUSTOM_OP_MAX_IN] = {0}, *dl[DLA__CUSTOM_OP_MAX_IN] = {0};
    dla_clear_error();
    /* Guarded, as predict and forward are: one dla_scope_end too many in
     * a backward closed the gradient's scope under it. */
    const int mark = dla__scope_open_guarded(NULL);
    dla_status st = t->backward(&io, gout[0], dx, dl);
    const int imbalance = dla__scope_guarded_imbalance(mark);
    /* The gradients leave the guarded scope for the sweep's, where ops
     * made them before the guard. */
    for (int i = 0; i < a->nx + a->nl; i++) {
        dla_tensor *g = i < a->nx ? dx[i] : dl[i - a->nx];
        if (g && !imbalance)
            dla_keep(g);
    }
    dla__scope_close_guarded(mark);
    if (st == DLA_OK && imbalance) {
        char why[120];
        return dla_set_error(DLA_ERR_STATE, "%s: its backward %s", t->type,
                             dla__scope_imbalance_str(imbalance, why, sizeof why));
    }
    if (st != DLA_OK)
        return dla_last_status() != DLA_OK
                   ? dla_last_status()
                   : dla_set_error(st, "%s: its backward failed (%s)", t->type, dla_status_str(st));
    for (int i = 0; i < a->nx + a->nl; i++) {
        dla_tensor *g = i < a->nx ? dx[i] : dl[i - a->nx];
        /* NULL is a zero gradient (dla_layer_type.backward): left NULL,
         * the sweep took it for no path at all, and dla_net_gradient (so
         * trainnet) failed with "the loss does not depend on" a learnable
         * the layer used, or on every learnable before the layer. */
        if (!g) {
            const dla_dtype dt = dla_tensor_dtype(node->in[i]);
            if (dt != DLA_F32 && dt != DLA_F64)
                continue;
            g = zeros_like(node->in[i]);
            if (dla_tensor_status(g) != DLA_OK)
                return dla_set_error(dla_tensor_status(g), "%s: zeros for a NULL gradient: %s",
                                     t->type, dla_tensor_error(g));
        }
        char what[32];
        if (i < a->nx)
            snprintf(what, sizeof what, "dX%d", i + 1);
        else
            snprintf(what, sizeof what, "dLearnable%d", i - a->nx + 1);
        if (dla_tensor_status(g) != DLA_OK)
            return dla_set_error(dla_tensor_status(g), "%s: backward's %s: %s", t->type, what,
                                 dla_tensor_error(g));
        if (!dla__same_dims(g, node->in[i]) || dla_tensor_dtype(g) != dla_tensor_dtype(node->in[i])) {
            char gd[96], id[96];
            dla_tensor_describe(g, gd, sizeof gd);
            dla_tensor_describe(node->in[i], id, sizeof id);
            return dla_set_error(DLA_ERR_SHAPE, "%s: backward's %s is %s; it must have the dims "
                                 "and dtype of %s", t->type, what, gd, id);
        }
        /* Trailing ones aside, as accepted: with the input's own dims
         * (dla_gradient's check counts them). */
        if (dla_tensor_ndims(g) != dla_tensor_ndims(node->in[i])) {
            int64_t d[DLA_MAX_DIMS];
            const int nd = dla_tensor_dims(node->in[i], d);
            g = dla_reshape(g, dla_tensor_format(node->in[i]), nd, d);
            if (dla_tensor_status(g) != DLA_OK)
                return dla_set_error(dla_tensor_status(g), "%s: backward's %s: %s", t->type, what,
                                     dla_tensor_error(g));
        }
        gin[i] = g;
    }
    return DLA_OK;
}

/* A trace file names the type, not its address: the name, a zero, then
 * the attributes after the pointer. */
#define REST_OFFSET offsetof(custom_attrs, training)

static dla_status encode(const dla__attrs_io *io, const void *attrs, size_t attrs_size,
                         unsigned char *buf, size_t cap, size_t *len)
{
    (void)io;
    const custom_attrs *a = attrs;
    size_t n = strlen(a->type->def.type) + 1, rest = attrs_size - REST_OFFSET;
    *len = n + rest;
    if (*len <= cap) {
        memcpy(buf, a->type->def.type, n);
        memcpy(buf + n, (const unsigned char *)attrs + REST_OFFSET, rest);
    }
    return DLA_OK;
}

static dla_status decode(const dla__attrs_io *io, const unsigned char *buf, size_t size,
                         void *attrs, size_t attrs_size)
{
    (void)io;
    const unsigned char *end = memchr(buf, 0, size);
    size_t rest = attrs_size - REST_OFFSET;
    if (!end || size - (size_t)(end + 1 - buf) != rest)
        return dla_set_error(DLA_ERR_IO, "custom layer op: its attributes are corrupt");
    const dla__custom_type *r = dla__custom_type_find((const char *)buf);
    if (!r)
        return dla_set_error(DLA_ERR_UNSUPPORTED, "custom layer op: layer type \"%.80s\" is not "
                             "registered (dla_layer_type_register)", (const char *)buf);
    custom_attrs *a = attrs;
    memcpy((unsigned char *)attrs + REST_OFFSET, end + 1, rest);
    a->type = r;
    if (a->nx < 1 || a->nl < 0 || a->ns < 0 || a->nx + a->nl + a->ns > DLA__CUSTOM_OP_MAX_IN)
        return dla_set_error(DLA_ERR_IO, "custom layer op: its attributes are corrupt");
    return DLA_OK;
}

/* The type's callbacks read io->x by its count and the properties as
 * numbers they may size or index with: nx must be the type's input count
 * and the values pass the checks the layer's values passed when it was
 * made (finite, the type's validate). What the outputs are is the
 * callbacks' to say: not known here. */
static dla_status custom_infer(const void *attrs, int nin, const dla__vshape *in,
                               dla__vshape *out)
{
    (void)nin, (void)in, (void)out;
    const custom_attrs *a = attrs;
    const dla__custom_type *r = a->type;
    if ((a->training != 0 && a->training != 1) || a->nx != r->def.num_inputs)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "custom layer op: %s: attributes training "
                             "%d, %d inputs; the type takes %d", r->def.type, a->training, a->nx,
                             r->def.num_inputs);
    return dla__custom_check_values(r, a->props, "(a layer of a loaded trace)");
}

/* The op of ns states takes the layer's inputs, learnables and states. */
static int takes_io(const custom_attrs *a, int nin, int ns)
{
    return a->ns == ns && nin == a->nx + a->nl + a->ns;
}

#define CUSTOM_OP(ns_)                                                                             \
    static int takes_##ns_(const void *attrs, int nin) { return takes_io(attrs, nin, ns_); }      \
    static const dla__op custom_op_##ns_ = {                                                       \
        .name = "dla_custom_layer", .nin = -1, .nout = 1 + (ns_), .nsaved = 0,                     \
        .forward = op_forward, .backward = op_backward, .encode_attrs = encode,                    \
        .decode_attrs = decode, .takes = takes_##ns_, .infer = custom_infer,                       \
    };                                                                                             \
    DLA__OP_REGISTER_AS(custom_op_##ns_, "dla_custom_layer_" #ns_, sizeof(custom_attrs))
CUSTOM_OP(0);
CUSTOM_OP(1);
CUSTOM_OP(2);
CUSTOM_OP(3);

static const dla__op *const ops[DLA__CUSTOM_OP_MAX_STATE + 1] = {&custom_op_0, &custom_op_1,
                                                                  &custom_op_2, &custom_op_3};

dla_status dla__custom_op_run(const dla__custom_type *r, dla__call *c)
{
    dla_tensor *learn[DLA__MAX_PARAMS], *state[DLA__MAX_PARAMS];
    dla_layer_io io;
    dla__custom_io(c->layer, c, learn, state, &io);
    custom_attrs a = {r, c->training, io.nx, io.nlearnables, io.nstate, {0}};
    memcpy(a.props, io.properties, sizeof a.props);
    dla_tensor *in[DLA__CUSTOM_OP_MAX_IN], *out[1 + DLA__CUSTOM_OP_MAX_STATE];
    int n = 0;
    for (int i = 0; i < io.nx; i++)
        in[n++] = io.x[i];
    for (int i = 0; i < io.nlearnables; i++)
        in[n++] = learn[i];
    for (int i = 0; i < io.nstate; i++)
        in[n++] = state[i];
    dla_status st = dla__apply_n(ops[io.nstate], &a, sizeof a, n, in, out);
    if (st != DLA_OK)
        return st;
    c->y = out[0];
    for (int k = 0; k < io.nstate; k++)
        c->new_state[k] = out[1 + k];
    return DLA_OK;
}

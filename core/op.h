/*
 * op.h - the op contract: how an op computes, records itself on the
 * gradient tape and differentiates.
 *
 * Every differentiable op of the core is a `dla__op`: a forward that makes
 * its outputs from its inputs and a copy of its attributes, and a backward
 * written with public ops, so that recording the backward too gives higher
 * derivatives (dla_gradient_opts). The public function of an op validates
 * its arguments, fills an attribute struct and calls dla__apply(), which
 * runs the forward, records a node on the thread's tape when dla_feval is
 * recording, and hands the results to the caller (scope adoption
 * included). The trace recorder of dla_accelerate replays ops through the
 * same forward, from the same attributes, so forward must depend on
 * nothing but (attrs, inputs).
 *
 * A forward may produce extra "saved" tensors for its backward (the argmax
 * of max pooling, the batch statistics of batchnorm): they are not returned
 * to the caller, only kept on the node.
 */
#ifndef DLA_CORE_OP_H
#define DLA_CORE_OP_H

#include <dlaccel.h>
#include <stddef.h>

#define DLA__OP_MAX_IO 8

typedef struct dla__node dla__node;
typedef struct dla__attrs_io dla__attrs_io;

/* What a trace records of a value: enough to check an op's attributes
 * against the values it reads and makes without running it. */
typedef struct dla__vshape {
    dla_dtype dtype;
    int ndims;
    int64_t dims[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS + 1];
} dla__vshape;

typedef struct dla__op {
    const char *name; /* the public function, "dla_conv" */
    int nin;          /* inputs; -1: variable (given to dla__apply) */
    int nout;         /* outputs returned to the caller */
    int nsaved;       /* extra tensors forward makes for backward */
    /* Makes out[0..nout-1] and saved[0..nsaved-1] (+1 references each) from
     * in[] and attrs. Inputs are good tensors (never error tensors). On
     * failure: return the status with dla__fail's message naming the op,
     * and leave nothing allocated. */
    dla_status (*forward)(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                          dla_tensor **saved);
    /* Sets gin[j] = dL/d(in[j]) (dims equal to in[j]'s; leave NULL for an
     * input with no gradient, such as an integer index), given gout[i] =
     * dL/d(out[i]) (NULL when out[i] does not reach the loss: treat as
     * zero; at least one is non-NULL). Runs with recording off, inside a
     * scope that dla_gradient opens around each call: write it as model
     * code, with public ops and no release calls; dla_gradient takes its
     * own reference to each gin[j] before closing the scope. Return a
     * failing status (or put an error tensor in gin) on failure.
     * NULL backward: the op is not differentiable (gradients stop). */
    dla_status (*backward)(const dla__node *node, dla_tensor *const *gout, dla_tensor **gin);
    /* View ops only (reshape, permute, squeeze, slice): the same view of
     * another tensor with in[0]'s dims. dla_gradient then accumulates the
     * output's gradient straight into that view of one zeroed gradient
     * buffer of in[0], so several views of one tensor (three slices of it)
     * write each element of its gradient once, with no index lists and no
     * full-size temporaries; backward may be NULL. NULL for other ops. */
    dla_tensor *(*view)(const void *attrs, dla_tensor *base);
    /* Nonzero when forward draws from the thread's Philox stream (dropout,
     * rand like a tensor): a trace keeps such an op as an RNG slot that
     * draws new numbers on every replay, the same ones eager would draw. */
    int random;
    /* Nonzero when out[0] is in[0]'s storage updated in place (the
     * gradient accumulation of dla_gradient): in[0] must not be read after
     * it, which holds for the private buffers it is used on. */
    int inplace;
    /* Nonzero when the outputs have zero derivative wherever they have one
     * (comparisons, one-hot codes, random draws, fills): a NULL backward
     * then stops gradients by design. A sweep that meets an op with
     * neither backward, view nor this flag on the path to a requested
     * gradient fails naming it, rather than dropping that path. */
    int constant;
    /* Higher derivatives (dla_gradient_opts, enable_higher_derivatives)
     * record the backward rules on the tape, and a later sweep
     * differentiates them. Saved tensors are not outputs the sweep tracks,
     * so a recorded backward must not read a saved tensor whose values
     * depend on the inputs (batch statistics): nonzero when, while
     * recorded (dla__recording()), it reads only saved tensors that carry
     * no derivative (a max index, a dropout mask) or recomputes the rest
     * from its inputs. A recorded sweep refuses an op with nsaved > 0 and
     * 0 here. */
    int saved_constant;
    /* Messages about the call (an argument that is NULL): the public
     * function these attributes come from, where op->name is shared by
     * several ("binary" serves dla_add and dla_mul); NULL: op->name. */
    const char *(*call_name)(const void *attrs);
    /* The public function's names for in[0..nin-1] (NULL-terminated);
     * NULL: "input N". */
    const char *const *arg_names;
    /* Saving and loading traces (core/trace_file.c). Attributes are plain
     * data by default: they go to the file as their bytes and come back
     * with their size checked against the registered one. An op whose
     * attributes hold a pointer (another op, a device) names what it points
     * to instead, through these two. NULL for both: the plain bytes. */
    /* Sets *len to the bytes attrs (attrs_size bytes) take written so
     * that they mean the same in another process, and writes them into buf
     * when they fit in cap. A failing status with dla__fail's message when
     * they cannot be written. */
    dla_status (*encode_attrs)(const dla__attrs_io *io, const void *attrs, size_t attrs_size,
                               unsigned char *buf, size_t cap, size_t *len);
    /* Rebuilds attrs (attrs_size bytes, the registered size, zeroed) from
     * the size bytes encode_attrs wrote. Any bytes must be answered with
     * DLA_OK or a status with dla__fail's message: never read past size. */
    dla_status (*decode_attrs)(const dla__attrs_io *io, const unsigned char *buf, size_t size,
                               void *attrs, size_t attrs_size);
    /* Ops of nin -1 only: nonzero when an op with these attributes takes
     * nin inputs (its forward reads in[0..nin-1] and no further), so a
     * loaded trace's counts are checked, not trusted. NULL: any of 1 to
     * DLA__OP_MAX_IO. */
    int (*takes)(const void *attrs, int nin);
    /* Loaded traces: attributes come from a file that may have been
     * changed (and its checksum fixed), and forward trusts them (an op
     * enum indexes a table, a dim indexes dims). Given attrs and the
     * recorded shapes of the node's inputs in[0..nin-1], sets
     * out[0..nout-1] to the shapes forward would make, and
     * out[nout..nout+nsaved-1] to those of its saved tensors (later ops
     * of the trace read them), or returns a failing status with
     * dla__fail's message naming the attribute and the shapes when
     * forward could not run on them safely. dla_trace_load calls it once
     * per node and refuses the file when it fails or its shapes differ
     * from the recorded ones; an out[i] left with ndims -1 is not compared
     * (forward works its shape out from its inputs alone, or from code
     * the op does not know, a custom layer's). NULL: the op's attributes
     * cannot make forward read or write out of bounds (no attributes, or
     * numbers it only computes with). */
    dla_status (*infer)(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out);
} dla__op;

/* For infer: nonzero when the attribute string s of cap bytes ends within
 * them (a format, a label set), so forward can copy and read it. */
static inline int dla__attr_str_ok(const char *s, size_t cap)
{
    for (size_t i = 0; i < cap; i++)
        if (!s[i])
            return 1;
    return 0;
}

/* For infer: nonzero when shape s has dims[0..nd-1] (trailing ones either
 * way), as an operand a kernel reads through dims it was given must. */
static inline int dla__shape_fits(const dla__vshape *s, int nd, const int64_t *dims)
{
    int n = s->ndims > nd ? s->ndims : nd;
    for (int i = 0; i < n; i++)
        if ((i < s->ndims ? s->dims[i] : 1) != (i < nd ? dims[i] : 1))
            return 0;
    return 1;
}

/* For infer: the infer of an op whose attributes cannot misuse its input
 * (a device the decoder found, a fill value) and whose result has the
 * input's shape: that shape, so the recorded one is checked. */
dla_status dla__infer_like_input(const void *attrs, int nin, const dla__vshape *in,
                                 dla__vshape *out);

/* For infer: a tensor header t with s's dtype, dims (all DLA_MAX_DIMS of
 * them), format and dense strides, and no data, so that an op's own shape
 * checks, written for its forward on dla_tensor, judge a recorded value
 * (one check, not a second copy of it for the load). Its storage has no
 * device (so arguments compare as on one device) and no memory: only
 * checks may look at it, and it needs no release. */
void dla__tensor_of_shape(const dla__vshape *s, dla_tensor *t);

/* What an attribute codec may need beyond the bytes. */
struct dla__attrs_io {
    /* Encoding: the device the trace was recorded on (NULL: unknown). A
     * device attribute naming it is saved as "the replay device". */
    dla_device *recording_device;
};

struct dla__node {
    const dla__op *op;
    int nin, nout, nsaved;
    dla_tensor *in[DLA__OP_MAX_IO];    /* retained */
    dla_tensor *out[DLA__OP_MAX_IO];   /* retained */
    dla_tensor *saved[DLA__OP_MAX_IO]; /* retained */
    const void *attrs;                 /* the node's own copy */
    size_t attrs_size;
    /* Set by dla_gradient before backward: need[j] is nonzero when some
     * requested gradient depends on in[j]. A backward may leave gin[j] NULL
     * where need[j] is 0 (the data gradient of a first layer). */
    unsigned char need[DLA__OP_MAX_IO];
};

/* Runs op on in[0..nin-1] with attrs (attrs_size bytes, copied when
 * recorded) and returns its first output through dla__return: the usual
 * tail of a public op function. Error inputs are passed through (sticky). */
dla_tensor *dla__apply(const dla__op *op, const void *attrs, size_t attrs_size, int nin,
                       dla_tensor *const *in);
/* The same for ops with several outputs: out[0..op->nout-1] each receive a
 * handle (error tensors on failure, never NULL). Returns the status. */
dla_status dla__apply_n(const dla__op *op, const void *attrs, size_t attrs_size, int nin,
                        dla_tensor *const *in, dla_tensor **out);

/* The core of dla__apply without the scope: runs op's forward, announces
 * it (core/hooks.h: the tape and the trace being recorded, when any, record
 * it there), and leaves +1
 * references in out[0..nout-1] and saved[0..nsaved-1]. The trace replay
 * uses it directly. On failure nothing is left allocated. */
dla_status dla__run_op(const dla__op *op, const void *attrs, size_t attrs_size, int nin,
                       dla_tensor *const *in, dla_tensor **out, dla_tensor **saved);

/* Nonzero while an op's forward runs on this thread (its inner ops and host
 * reads belong to the op). */
int dla__in_forward(void);
/* How many op forwards are running on this thread, one inside another. */
int dla__forward_depth(void);
/* The forward depth the innermost dla_feval opened at (0 outside any);
 * dla_feval sets it with dla__feval_base_swap (which returns the one it
 * replaces) and restores it. Ops run at that depth inside a forward are
 * announced to that feval's tape alone (hooks.h, op_ran_nested). */
int dla__feval_base(void);
int dla__feval_base_swap(int base);
/* Nonzero when an op run now is announced to someone: outside forwards
 * to whoever hears op_ran, directly in a dla_feval a forward opened to
 * its tape. (A replay then runs op by op, for them to record.) */
int dla__ops_announced(void);

/* The device the innermost dla_trace_replay on this thread runs on; NULL
 * outside one. A loaded trace's moves to "the replay device" go there (to
 * the current device outside a dla_trace_replay). trace_api.c sets it
 * around a replay with dla__replay_device_swap, which returns the one it
 * replaces. (op_run.c) */
dla_device *dla__replay_device(void);
dla_device *dla__replay_device_swap(dla_device *dev);
/* The device the trace of that replay was recorded on (NULL for a loaded
 * trace, and outside one): there a move to it is a move to the replay
 * device, as in a saved trace, where it is written as "the replay
 * device". Read inside the forward of an op the replay runs (NULL inside
 * the ops a forward runs itself). Set beside dla__replay_device_swap;
 * the swap returns the one it replaces. (op_run.c) */
dla_device *dla__replay_from(void);
dla_device *dla__replay_from_swap(dla_device *dev);

/* Nonzero when ops on this thread are being recorded (inside dla_feval and
 * not inside a backward pass). */
int dla__recording(void);

/* ----------------------------------------------------------- registry */

/* Every op is registered under a name unique in the library, so a saved
 * trace can name its ops and a load can find them again. The name and the
 * size of the attributes are part of the trace file format
 * (docs/trace-format.md): renaming a registered op or changing the layout
 * of its attributes breaks saved traces, so such a change registers the op
 * under a new name. */
typedef struct dla__op_reg {
    const dla__op *op;
    const char *name;  /* NULL: op->name */
    size_t attrs_size; /* the bytes forward reads from attrs; 0: none */
    struct dla__op_reg *next;
} dla__op_reg;

/* One line after an op's definition: `DLA__OP_REGISTER(binary_op,
 * sizeof(binary_attrs));` registers it under op->name when the library is
 * loaded; DLA__OP_REGISTER_AS gives another name where op->name (the public
 * function, shown in messages) is shared with another op. */
#define DLA__OP_REGISTER(op_, attrs_size_) DLA__OP_REGISTER_AS(op_, NULL, attrs_size_)
#define DLA__OP_REGISTER_AS(op_, name_, attrs_size_)                                              \
    __attribute__((constructor)) static void dla__register_##op_(void)                             \
    {                                                                                              \
        static dla__op_reg reg = {&op_, name_, attrs_size_, NULL};                                 \
        dla__op_register(&reg);                                                                    \
    }                                                                                              \
    _Static_assert(__builtin_types_compatible_p(__typeof__(op_), const dla__op),                   \
                   "DLA__OP_REGISTER takes a static const dla__op")

/* Called by the constructors above (the library is loaded, one thread). */
void dla__op_register(dla__op_reg *reg);
/* The op registered under name; NULL when there is none. */
const dla__op *dla__op_find(const char *name);
/* The registration of op; NULL when it is not registered. */
const dla__op_reg *dla__op_registration(const dla__op *op);
/* The registrations in no particular order, for tests and tools: the
 * count, and the i-th (NULL when out of range). */
int dla__op_count(void);
const dla__op_reg *dla__op_at(int i);

/* The attribute codec of reg's op: its own when it has one, the plain
 * bytes otherwise, as encode_attrs and decode_attrs above (decode fills
 * reg->attrs_size bytes of attrs). */
dla_status dla__op_encode_attrs(const dla__op_reg *reg, const dla__attrs_io *io, const void *attrs,
                                size_t attrs_size, unsigned char *buf, size_t cap, size_t *len);
dla_status dla__op_decode_attrs(const dla__op_reg *reg, const dla__attrs_io *io,
                                const unsigned char *buf, size_t size, void *attrs);

/* For backward rules: sums g over the dims where `like` has size 1 and g
 * does not, so the gradient of a broadcast operand has its dims (formats
 * follow `like`). Returns a new tensor (scoped as any op result). */
dla_tensor *dla__sum_to(dla_tensor *g, const dla_tensor *like);

#endif

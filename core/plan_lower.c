/*
 * plan_lower.c - from what the planning replay saw to a plan.
 *
 * Each buffer the replay made becomes an arena region (it was freed before
 * the replay ended: an intermediate) or an output buffer made on every call
 * (an output still holds it). Launches of op invocations are dropped (the
 * op runs instead), and launches reading what an invocation made read it
 * through that value. Chains of elementwise launches are fused where the
 * device has the fused kernel: each link's result must feed the next link
 * only, reaching the same elements it was written to, so it never needs to
 * exist. Two rewrites that change no bits make more chains: a relu's
 * backward mask reads the relu's result instead of its input, and an
 * elementwise consumer moves up to its producer past launches it commutes
 * with. Then lifetimes (first to last use, in plan order) go to the arena
 * layout, the arena's and the constants' memory is written into the kept
 * launches once, and what changes per call (inputs, output buffers, values
 * of invocations) becomes a short list of patches.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/kernel_views.h"
#include "core/plan_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* --------------------------------------------------------------- fields */

static dla__field view_field(dla_view *v, int written)
{
    return (dla__field){&v->mem, &v->offset, NULL, dla_dtype_size(v->dtype), v, written, 0};
}

static dla__field gemm_field(dla_gemm_operand *o, dla_dtype dt, int written)
{
    return (dla__field){&o->mem, &o->offset, NULL, dla_dtype_size(dt), NULL, written, 0};
}

int dla__launch_fields(dla__launch *l, dla__field *f)
{
    switch (l->kind) {
    case DLA__LAUNCH_FILL:
        f[0] = view_field(&l->u.fill.y, 1);
        return 1;
    case DLA__LAUNCH_COPY:
    case DLA__LAUNCH_CAST:
        f[0] = view_field(&l->u.pair.y, 1);
        f[1] = view_field(&l->u.pair.x, 0);
        return 2;
    case DLA__LAUNCH_UNARY:
        f[0] = view_field(&l->u.unary.y, 1);
        f[1] = view_field(&l->u.unary.x, 0);
        return 2;
    case DLA__LAUNCH_BINARY:
        f[0] = view_field(&l->u.binary.z, 1);
        f[1] = view_field(&l->u.binary.a, 0);
        f[2] = view_field(&l->u.binary.b, 0);
        return 3;
    case DLA__LAUNCH_REDUCE:
        f[0] = view_field(&l->u.reduce.y, 1);
        f[1] = view_field(&l->u.reduce.x, 0);
        f[2] = view_field(&l->u.reduce.index, 1);
        return 3;
    case DLA__LAUNCH_GEMM:
        f[0] = gemm_field(&l->u.gemm.c, l->u.gemm.dtype, 1);
        f[0].reads = l->u.gemm.beta != 0.0;
        f[1] = gemm_field(&l->u.gemm.a, l->u.gemm.dtype, 0);
        f[2] = gemm_field(&l->u.gemm.b, l->u.gemm.dtype, 0);
        return 3;
    case DLA__LAUNCH_TERNARY:
        f[0] = view_field(&l->u.ternary.z, 1);
        f[1] = view_field(&l->u.ternary.cond, 0);
        f[2] = view_field(&l->u.ternary.a, 0);
        f[3] = view_field(&l->u.ternary.b, 0);
        return 4;
    case DLA__LAUNCH_CONV: {
        int wx = l->which == DLA_KERNEL_CONV_BACKWARD_DATA;
        int ww = l->which == DLA_KERNEL_CONV_BACKWARD_FILTER;
        f[0] = view_field(&l->u.conv.x, wx);
        f[1] = view_field(&l->u.conv.w, ww);
        f[2] = view_field(&l->u.conv.y, !wx && !ww);
        f[3] = view_field(&l->u.conv.bias, 0);
        return 4;
    }
    case DLA__LAUNCH_POOL: {
        int fwd = l->which == DLA_KERNEL_POOL_FORWARD;
        f[0] = view_field(&l->u.pool.x, !fwd);
        f[1] = view_field(&l->u.pool.y, fwd);
        f[2] = view_field(&l->u.pool.index, fwd);
        return 3;
    }
    case DLA__LAUNCH_INDEX:
        f[0] = view_field(&l->u.index.y, 1);
        f[0].reads = l->which == DLA_KERNEL_SCATTER_ADD;
        f[1] = view_field(&l->u.index.x, 0);
        f[2] = view_field(&l->u.index.index, 0);
        return 3;
    case DLA__LAUNCH_COPY_BYTES:
        f[0] = (dla__field){&l->u.bytes.dst, NULL, &l->u.bytes.doff, 1, NULL, 1, 0};
        f[1] = (dla__field){&l->u.bytes.src, NULL, &l->u.bytes.soff, 1, NULL, 0, 0};
        return 2;
    case DLA__LAUNCH_RANDOM:
        f[0] = view_field(&l->u.random.y, 1);
        return 1;
    case DLA__LAUNCH_FUSED: {
        dla_fused_args *a = l->u.fused;
        f[0] = view_field(&a->y, 1);
        for (int i = 0; i < a->ninputs; i++)
            f[1 + i] = view_field(&a->inputs[i], 0);
        return 1 + a->ninputs;
    }
    case DLA__LAUNCH_FUSED_MULTI: {
        dla_fused_multi_args *a = l->u.fused_multi;
        int n = 0;
        f[n++] = view_field(&a->program.y, 1);
        for (int k = 0; k < a->nextra; k++)
            f[n++] = view_field(&a->extra[k], 1);
        for (int i = 0; i < a->program.ninputs; i++)
            f[n++] = view_field(&a->program.inputs[i], 0);
        return n;
    }
    case DLA__LAUNCH_CONV_FUSED: {
        /* The convolution's fields first, as a conv launch's (x written
         * backward, y forward); then the epilogue's y and inputs. */
        dla_conv_fused_args *a = l->u.conv_fused;
        const int bwd = l->which == DLA_KERNEL_CONV_BACKWARD_DATA_FUSED;
        f[0] = view_field(&a->conv.x, bwd);
        f[1] = view_field(&a->conv.w, 0);
        f[2] = view_field(&a->conv.y, !bwd);
        f[3] = view_field(&a->conv.bias, 0);
        f[4] = view_field(&a->epilogue.y, 1);
        for (int i = 0; i < a->epilogue.ninputs; i++)
            f[5 + i] = view_field(&a->epilogue.inputs[i], 0);
        return 5 + a->epilogue.ninputs;
    }
    case DLA__LAUNCH_FUSED_REDUCE: {
        dla_fused_reduce_args *a = l->u.fused_reduce;
        int n = 0;
        f[n++] = view_field(&a->y, 1);
        if (a->y2.mem) /* ABI 1.4's second sum */
            f[n++] = view_field(&a->y2, 1);
        for (int i = 0; i < a->program.ninputs; i++)
            f[n++] = view_field(&a->program.inputs[i], 0);
        return n;
    }
    }
    DLA_ASSERT(!"a launch kind dla__launch_fields does not know");
    return 0;
}

/* ------------------------------------------------------------ lowering */

typedef struct lowering {
    dla__plan *p;
    dla__capture *c;
    dla__step *steps;
    int nsteps;
    int multi; /* the chain being built may keep results (fused_multi) */
    int capsteps;
    struct bias_split *splits; /* conv_bias_out */
    int nsplits;
} lowering;

static int fail(dla__plan *p, const char *fmt, const char *op)
{
    snprintf(p->why, sizeof p->why, fmt, op);
    return 0;
}

static const char *entry_name(const dla__capture *c, int entry)
{
    return entry >= 0 ? c->t->entries[entry].op->name : "the replay";
}

static int invoke_buffer(const dla__capture *c, int b)
{
    int e = c->bufs[b].entry;
    return e < 0 || c->entries[e].invoke;
}

/* A slot naming a buffer an invocation made: the value it belongs to. */
static int to_opval(lowering *L, dla__slot *s, const char *op)
{
    dla__capture *c = L->c;
    if (s->kind != DLA__SLOT_BUFFER || !invoke_buffer(c, s->id))
        return 1;
    const dla__cap_buffer *b = &c->bufs[s->id];
    if (b->opval < 0)
        return fail(L->p, "%s reads memory made inside an op run as itself that is not one of "
                    "its results", op);
    *s = (dla__slot){DLA__SLOT_OPVAL, b->opval, 0};
    return 1;
}

/* The same elements in the same order (a stride along a dim of 1 is moot). */
static int same_view(const dla_view *a, const dla_view *b)
{
    if (a->ndims != b->ndims || a->offset != b->offset || a->dtype != b->dtype)
        return 0;
    for (int i = 0; i < a->ndims; i++)
        if (a->dims[i] != b->dims[i] || (a->strides[i] != b->strides[i] && a->dims[i] != 1))
            return 0;
    return 1;
}

static int same_dims(const dla_view *a, const dla_view *b)
{
    return a->ndims == b->ndims && !memcmp(a->dims, b->dims, (size_t)a->ndims * sizeof *a->dims);
}

static int same_slot(dla__slot a, dla__slot b) { return a.kind == b.kind && a.id == b.id; }

/* ---------------------------------------------------------------- fusion */

/* The float dtype an elementwise launch computes in (its value operands'),
 * or DLA_DTYPE_COUNT for a launch no program can hold. */
static dla_dtype program_dtype(const dla__cap_launch *cl)
{
    switch (cl->l.kind) {
    case DLA__LAUNCH_UNARY: return cl->l.u.unary.x.dtype;
    case DLA__LAUNCH_BINARY: return cl->l.u.binary.a.dtype;
    case DLA__LAUNCH_TERNARY:
        return cl->l.u.ternary.op == DLA_TERNARY_WHERE ? cl->l.u.ternary.z.dtype : DLA_DTYPE_COUNT;
    case DLA__LAUNCH_FUSED: return cl->l.u.fused->dtype;
    default: return DLA_DTYPE_COUNT;
    }
}

/* A comparison: its result is logical, so it can only feed a later link. */
static int is_comparison(const dla__cap_launch *cl)
{
    return cl->l.kind == DLA__LAUNCH_BINARY && cl->l.u.binary.op >= DLA_BINARY_EQ;
}

/* A launch the fused kernel of the plan's device can take. */
static int fusible(const lowering *L, const dla__cap_launch *cl)
{
    dla_dtype dt = program_dtype(cl);
    return (dt == DLA_F32 || dt == DLA_F64) && dla__device_supports(L->p->dev, DLA_KERNEL_FUSED, dt);
}

static dla_view *out_view(dla__cap_launch *cl)
{
    return cl->l.kind == DLA__LAUNCH_FILL                                      ? &cl->l.u.fill.y
           : cl->l.kind == DLA__LAUNCH_COPY || cl->l.kind == DLA__LAUNCH_CAST ? &cl->l.u.pair.y
           : cl->l.kind == DLA__LAUNCH_UNARY  ? &cl->l.u.unary.y
           : cl->l.kind == DLA__LAUNCH_BINARY ? &cl->l.u.binary.z
           : cl->l.kind == DLA__LAUNCH_FUSED  ? &cl->l.u.fused->y
                                              : &cl->l.u.ternary.z;
}

typedef struct chain {
    int step[DLA_FUSED_MAX_INSNS]; /* the links, as step indices */
    int n;
    dla_fused_args a;
    dla__slot in_slot[DLA_FUSED_MAX_INPUTS];
    dla_view y; /* the last link's result, in the chain's dims (the first link's) */
    dla_view ys[DLA_FUSED_MAX_INSNS]; /* each link's */
    dla__slot yslot[DLA_FUSED_MAX_INSNS]; /* each link's result buffer */
    int reg[DLA_FUSED_MAX_INSNS];         /* and the register that holds it */
} chain;

/* v with dims of 1 dropped and neighbours merged where its strides allow:
 * two views with equal forms reach the same elements in the same order. */
static void coalesced(const dla_view *v, int *nd, int64_t *dims, int64_t *strides)
{
    *nd = 0;
    for (int d = 0; d < v->ndims; d++) {
        if (v->dims[d] == 1)
            continue;
        if (*nd && v->strides[d] == strides[*nd - 1] * dims[*nd - 1]) {
            dims[*nd - 1] *= v->dims[d];
            continue;
        }
        dims[*nd] = v->dims[d];
        strides[*nd] = v->strides[d];
        (*nd)++;
    }
}

/* The same elements in the same order, whatever dims express them. */
static int same_elements(const dla_view *a, const dla_view *b)
{
    int na, nb;
    int64_t da[DLA_MAX_DIMS], sa[DLA_MAX_DIMS], db[DLA_MAX_DIMS], sb[DLA_MAX_DIMS];
    if (a->dtype != b->dtype || a->offset != b->offset)
        return 0;
    coalesced(a, &na, da, sa);
    coalesced(b, &nb, db, sb);
    return na == nb && !memcmp(da, db, (size_t)na * sizeof *da) &&
           !memcmp(sa, sb, (size_t)na * sizeof *sa);
}

/* v expressed in like's dims, when its elements allow it: 0 otherwise.
 * Both lists of dims split the same elements (column-major, dim 0
 * fastest) into runs; they allow it when each of like's dims is made of
 * whole pieces of v's dims (or one piece of one) along which v's address
 * grows as one stride would make it grow: v dense (the batchnorm's
 * 576x20x1x128x1 result and the 24x24x20x128 relu reading it), one value
 * everywhere, or a per-channel vector (that batchnorm's 576x20x1x128x1
 * scale, stride 0 1 0 0 0, is 24x24x20x128 with strides 0 0 1 0). */
static int redim(dla_view *v, const dla_view *like)
{
    int64_t n = 1, m = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->dims[d];
    for (int d = 0; d < like->ndims; d++)
        m *= like->dims[d];
    if (n != m || n == 0)
        return 0;
    int64_t t[DLA_MAX_DIMS];
    int e = 0;
    int64_t used = 1; /* of v's dim e, the part like's earlier dims took */
    for (int d = 0; d < like->ndims; d++) {
        int64_t left = like->dims[d], grow = 0;
        t[d] = 0;
        int first = 1;
        while (left > 1) {
            while (e < v->ndims && v->dims[e] == 1)
                e++;
            if (e == v->ndims)
                return 0;
            const int64_t avail = v->dims[e] / used;
            int64_t piece;
            if (left % avail == 0)
                piece = avail;
            else if (avail % left == 0)
                piece = left;
            else
                return 0;
            const int64_t stride = v->strides[e] * used;
            if (first)
                t[d] = stride, first = 0;
            else if (stride != grow)
                return 0; /* two pieces that no single stride walks */
            grow = stride * piece;
            left /= piece;
            used *= piece;
            if (used == v->dims[e])
                e++, used = 1;
        }
    }
    /* A dim of 1 has a moot stride: the one that keeps a dense view dense
     * (and 0 where the view is one value everywhere). */
    int64_t next = -1;
    for (int d = 0; d < like->ndims; d++)
        if (like->dims[d] != 1) {
            next = t[d] == 0 ? 0 : 1;
            break;
        }
    for (int d = 0; d < like->ndims; d++) {
        if (like->dims[d] == 1)
            t[d] = next < 0 ? 1 : next;
        next = t[d] * like->dims[d];
    }
    v->ndims = like->ndims;
    for (int d = 0; d < like->ndims; d++) {
        v->dims[d] = like->dims[d];
        v->strides[d] = t[d];
    }
    return 1;
}

static dla__cap_launch *launch_at(lowering *L, int step)
{
    return &L->c->launches[L->steps[step].index];
}

/* An operand (slot s, view v in the chain's dims) as a program operand:
 * the register of the latest link that wrote its buffer, when it reads
 * that result as it was written, else an input (shared with an identical
 * one). -1 - DLA_FUSED_MAX_INPUTS when it cannot be had: inputs run out,
 * or it reads a link's result otherwise than it was written (that result
 * is not in memory before the fused launch). */
static int operand(chain *ch, dla__slot s, const dla_view *v)
{
    for (int m = ch->n - 1; s.kind == DLA__SLOT_BUFFER && m >= 0; m--)
        if (same_slot(ch->yslot[m], s))
            return same_view(v, &ch->ys[m]) ? ch->reg[m] : -1 - DLA_FUSED_MAX_INPUTS;
    for (int i = 0; i < ch->a.ninputs; i++)
        if (same_slot(ch->in_slot[i], s) && same_view(&ch->a.inputs[i], v))
            return -1 - i;
    if (ch->a.ninputs == DLA_FUSED_MAX_INPUTS)
        return -1 - DLA_FUSED_MAX_INPUTS;
    ch->in_slot[ch->a.ninputs] = s;
    ch->a.inputs[ch->a.ninputs] = *v;
    return -1 - ch->a.ninputs++;
}

/* Nonzero when what step `from` wrote into buffer b through view wv is
 * read by step `next` alone, through that view, before the buffer is
 * written over whole again or freed: then it need never be in memory. (A
 * buffer updated in place, as softmax does, has one such version per
 * writer.) */
static int only_reader(lowering *L, int b, const dla_view *wv, int from, int next)
{
    dla__capture *c = L->c;
    for (int s = from + 1; s < L->nsteps; s++) {
        if (L->steps[s].kind == DLA__STEP_INVOKE) {
            const dla__cap_entry *e = &c->entries[L->steps[s].index];
            for (int i = 0; i < c->t->entries[L->steps[s].index].nin; i++) {
                const dla__source *src = &c->sources[e->src0 + i];
                if (src->kind == DLA__SRC_SPEC && c->specs[src->id].slot.kind == DLA__SLOT_BUFFER &&
                    c->specs[src->id].slot.id == b)
                    return 0;
            }
            continue;
        }
        dla__cap_launch *cl = launch_at(L, s);
        dla__field f[DLA__LAUNCH_MAX_FIELDS];
        int n = dla__launch_fields(&cl->l, f), rewritten = 0;
        for (int i = 0; i < n; i++) {
            if (cl->slot[i].kind != DLA__SLOT_BUFFER || cl->slot[i].id != b)
                continue;
            if (f[i].reads)
                return 0; /* added into: the old one is read */
            if (f[i].written) {
                if (!f[i].view || !same_elements(f[i].view, wv))
                    return 0; /* partly over: the rest of the old one may still be read */
                rewritten = 1;
            } else if (s != next || !same_elements(f[i].view, wv)) {
                return 0;
            }
        }
        if (rewritten)
            return 1;
    }
    /* Never written over: it dies with the replay, unless it is an output. */
    return !invoke_buffer(c, b) && c->bufs[b].died >= 0;
}

/* only_reader of what step `from` wrote into its output buffer. */
static int only_next_reads(lowering *L, int from, int next)
{
    dla__cap_launch *w = launch_at(L, from);
    return only_reader(L, w->slot[0].id, out_view(w), from, next);
}

/* The operand k of a link (slot and view, in the chain's dims) as a
 * source (operand()); -1 - DLA_FUSED_MAX_INPUTS when it cannot be one: a
 * logical operand (where's condition) can only be a register. Counts in
 * reads_prev whether it is the last link's result. */
static int link_source(chain *ch, dla__slot slot, const dla_view *v, int *reads_prev)
{
    const int src = operand(ch, slot, v);
    if (src == -1 - DLA_FUSED_MAX_INPUTS || (src < 0 && v->dtype != ch->a.dtype))
        return -1 - DLA_FUSED_MAX_INPUTS;
    *reads_prev += ch->n && src == ch->reg[ch->n - 1];
    return src;
}

/* An elementwise launch (views v in the chain's dims) as the chain's next
 * instruction; its register, or -1 when an operand cannot be had (the
 * chain is then to be restored by the caller). */
static int join_insn(chain *ch, const dla__cap_launch *cl, const dla_view *v, int *reads_prev)
{
    const int j = ch->a.ninsns;
    dla_fused_insn *in = &ch->a.insns[j];
    memset(in, 0, sizeof *in);
    int nops;
    if (cl->l.kind == DLA__LAUNCH_UNARY) {
        in->kind = DLA_FUSED_UNARY;
        in->op = cl->l.u.unary.op;
        in->alpha = cl->l.u.unary.alpha;
        in->beta = cl->l.u.unary.beta;
        nops = 1;
    } else if (cl->l.kind == DLA__LAUNCH_BINARY) {
        in->kind = DLA_FUSED_BINARY;
        in->op = cl->l.u.binary.op;
        nops = 2;
    } else {
        in->kind = DLA_FUSED_WHERE;
        nops = 3;
    }
    for (int k = 0; k < nops; k++)
        if ((in->src[k] = link_source(ch, cl->slot[1 + k], &v[1 + k], reads_prev)) ==
            -1 - DLA_FUSED_MAX_INPUTS)
            return -1;
    ch->a.ninsns++;
    return j;
}

/* A program an op launched itself, after the chain's first link (a
 * convolution's bias before batchnorm's y = x .* a + b: conv_bias_out):
 * its instructions follow the chain's, its registers moved past them, its
 * inputs the chain's sources. Its result register, or -1. */
static int join_program(chain *ch, const dla__cap_launch *cl, const dla_view *v, int *reads_prev)
{
    const dla_fused_args *fa = cl->l.u.fused;
    const int j0 = ch->a.ninsns;
    if (fa->dtype != ch->a.dtype || j0 + fa->ninsns > DLA_FUSED_MAX_INSNS)
        return -1;
    int map[DLA_FUSED_MAX_INPUTS];
    for (int i = 0; i < fa->ninputs; i++)
        if ((map[i] = link_source(ch, cl->slot[1 + i], &v[1 + i], reads_prev)) ==
            -1 - DLA_FUSED_MAX_INPUTS)
            return -1;
    for (int k = 0; k < fa->ninsns; k++) {
        dla_fused_insn in = fa->insns[k];
        const int nsrc = in.kind == DLA_FUSED_UNARY ? 1 : in.kind == DLA_FUSED_BINARY ? 2 : 3;
        for (int q = 0; q < nsrc; q++)
            in.src[q] = in.src[q] >= 0 ? j0 + in.src[q] : map[-1 - in.src[q]];
        ch->a.insns[j0 + k] = in;
    }
    ch->a.ninsns += fa->ninsns;
    return ch->a.ninsns - 1;
}

/* A cast of a comparison's logical result to the chain's dtype, right
 * after that comparison: in a program the comparison's register already
 * holds 1 or 0 in the dtype (the ABI's fused program), so the cast is that
 * register, no instruction of its own. A max or min's gradient masks
 * (cast(a >= b) times the gradient) and clippedRelu's were a comparison
 * launch, a cast launch and the chain after them; now one program. */
static int comparison_cast(lowering *L, const chain *ch, const dla__cap_launch *cl)
{
    return cl->l.kind == DLA__LAUNCH_CAST && ch->n > 0 && ch->n < DLA_FUSED_MAX_INSNS &&
           cl->l.u.pair.x.dtype == DLA_BOOL && cl->l.u.pair.y.dtype == ch->a.dtype &&
           is_comparison(launch_at(L, ch->step[ch->n - 1])) &&
           ch->reg[ch->n - 1] == ch->a.ninsns - 1;
}

/* Appends the launch at step s to the chain as its next instruction; 0
 * when it does not fit (the chain is then left as it was). */
static int link(lowering *L, chain *ch, int s)
{
    dla__cap_launch *cl = launch_at(L, s);
    if (cl->l.kind == DLA__LAUNCH_FUSED && !ch->n) {
        /* A program an op launched itself (batchnorm's y = x .* a + b)
         * starts a chain as its instructions: the relu after it joins. */
        ch->a = *cl->l.u.fused;
        for (int i = 0; i < ch->a.ninputs; i++)
            ch->in_slot[i] = cl->slot[1 + i];
        ch->y = ch->ys[0] = ch->a.y;
        ch->yslot[0] = cl->slot[0];
        ch->reg[0] = ch->a.ninsns - 1;
        ch->step[ch->n++] = s;
        return 1;
    }
    chain save = *ch;
    /* The link's views in the chain's dims. */
    dla__field fs[DLA__LAUNCH_MAX_FIELDS];
    const int nf = dla__launch_fields(&cl->l, fs);
    dla_view v[DLA__LAUNCH_MAX_FIELDS];
    for (int i = 0; i < nf; i++) {
        v[i] = *fs[i].view;
        if (ch->n && !same_dims(&v[i], &ch->y) && !redim(&v[i], &ch->y))
            return 0;
    }
    int reads_prev = 0;
    int j;
    if (comparison_cast(L, ch, cl)) {
        /* It reads the comparison's result as written, or it is no alias. */
        if (!same_slot(cl->slot[1], ch->yslot[ch->n - 1]) || !same_view(&v[1], &ch->ys[ch->n - 1]))
            return 0;
        j = ch->reg[ch->n - 1];
        reads_prev = 1;
    } else {
        j = cl->l.kind == DLA__LAUNCH_FUSED ? join_program(ch, cl, v, &reads_prev)
                                            : join_insn(ch, cl, v, &reads_prev);
    }
    if (j < 0) {
        *ch = save;
        return 0;
    }
    ch->y = ch->ys[ch->n] = v[0];
    ch->yslot[ch->n] = cl->slot[0];
    ch->reg[ch->n] = j;
    /* Without fused_multi each link's result feeds the next link alone.
     * With it, a result may also be read later (it is then kept), but a
     * buffer that two links write must be written whole both times. */
    int ok = 1;
    if (!L->multi)
        ok = !ch->n || (reads_prev && only_next_reads(L, ch->step[ch->n - 1], s));
    for (int m = 0; ok && L->multi && m < ch->n; m++)
        ok = !same_slot(ch->yslot[m], cl->slot[0]) ||
             same_elements(out_view(launch_at(L, ch->step[m])), out_view(cl));
    if (!ok) {
        *ch = save;
        return 0;
    }
    ch->step[ch->n++] = s;
    return 1;
}

/* Nonzero when the value a launch wrote into buffer b through view wv is
 * still wanted from step `from` on: a step reads it before b is written
 * over whole, or b outlives the replay (an output). */
static int read_after(lowering *L, dla__slot b, const dla_view *wv, int from)
{
    dla__capture *c = L->c;
    if (b.kind != DLA__SLOT_BUFFER)
        return 1;
    for (int s = from; s < L->nsteps; s++) {
        if (L->steps[s].kind == DLA__STEP_INVOKE) {
            const dla__cap_entry *e = &c->entries[L->steps[s].index];
            for (int i = 0; i < c->t->entries[L->steps[s].index].nin; i++) {
                const dla__source *src = &c->sources[e->src0 + i];
                if (src->kind == DLA__SRC_SPEC && same_slot(c->specs[src->id].slot, b))
                    return 1;
            }
            continue;
        }
        if (L->steps[s].index < 0)
            continue; /* a launch dropped (dead_fills) */
        dla__cap_launch *cl = launch_at(L, s);
        dla__field f[DLA__LAUNCH_MAX_FIELDS];
        int n = dla__launch_fields(&cl->l, f), whole = 0;
        for (int i = 0; i < n; i++) {
            if (!same_slot(cl->slot[i], b))
                continue;
            if (!f[i].written || f[i].reads || !f[i].view || !same_elements(f[i].view, wv))
                return 1; /* read, added into, or written in part: the rest may be read */
            whole = 1;
        }
        if (whole)
            return 0;
    }
    return invoke_buffer(c, b.id) || c->bufs[b.id].died < 0;
}

/* Nonzero when the result of link m of the chain is wanted after the
 * chain: no later link writes its buffer again (link() made sure such a
 * write is whole), and it is read after the chain's last step. Such a
 * result is kept: written by the fused_multi launch as one of its
 * extras. */
static int wanted_after(lowering *L, const chain *ch, int m)
{
    for (int k = m + 1; k < ch->n; k++)
        if (same_slot(ch->yslot[k], ch->yslot[m]))
            return 0;
    return read_after(L, ch->yslot[m], out_view(launch_at(L, ch->step[m])),
                      ch->step[ch->n - 1] + 1);
}

/* The launch at step s can follow the chain: fusible, of the chain's
 * shape and dtype, after a link whose result is a buffer of the replay. */
static int can_follow(lowering *L, const chain *ch, int s)
{
    if (L->steps[s].kind != DLA__STEP_LAUNCH)
        return 0;
    dla__cap_launch *prev = launch_at(L, ch->step[ch->n - 1]), *next = launch_at(L, s);
    if (ch->n == DLA_FUSED_MAX_INSNS)
        return 0;
    if (!comparison_cast(L, ch, next) &&
        (ch->a.ninsns == DLA_FUSED_MAX_INSNS || !fusible(L, next) ||
         program_dtype(next) != ch->a.dtype))
        return 0;
    dla__slot b = prev->slot[0];
    return b.kind == DLA__SLOT_BUFFER && !invoke_buffer(L->c, b.id);
}

/* A new launch in the capture's list; its index, or -1 (out of memory:
 * the capture is failed). Pointers into the list move. */
static int new_launch(dla__capture *c)
{
    if (c->nlaunches == c->caplaunches) {
        const int cap = c->caplaunches + 64;
        dla__cap_launch *grown = dla__realloc(c->launches, (size_t)cap * sizeof *grown);
        if (!grown) {
            c->failed = 1;
            return -1;
        }
        c->launches = grown;
        c->caplaunches = cap;
    }
    memset(&c->launches[c->nlaunches], 0, sizeof *c->launches);
    return c->nlaunches++;
}

/* Replaces the chain's launches with one fused launch at the last one's
 * step (fused_multi when results of earlier links are wanted after it).
 * 0 when y overlaps an input other than exactly, or a result wanted after
 * cannot be kept: a comparison's, one in an input's buffer other than
 * exactly, more than DLA_FUSED_MAX_EXTRA of them. */
static int emit(lowering *L, chain *ch)
{
    dla__capture *c = L->c;
    /* y holds the program's dtype: a trailing comparison stays a launch. */
    while (ch->n && is_comparison(launch_at(L, ch->step[ch->n - 1]))) {
        ch->n--;
        ch->a.ninsns--;
    }
    if (ch->n < 2)
        return 0;
    ch->y = ch->ys[ch->n - 1];
    dla__cap_launch *last = launch_at(L, ch->step[ch->n - 1]);
    dla__slot yslot = last->slot[0];
    ch->a.struct_size = sizeof ch->a;
    ch->a.y = ch->y;
    for (int i = 0; i < ch->a.ninputs; i++)
        if (same_slot(ch->in_slot[i], yslot) && yslot.kind != DLA__SLOT_NONE &&
            !same_view(&ch->a.inputs[i], &ch->a.y))
            return 0;
    int kept[DLA_FUSED_MAX_EXTRA], nkept = 0;
    for (int m = 0; L->multi && m + 1 < ch->n; m++) {
        if (!wanted_after(L, ch, m))
            continue;
        if (nkept == DLA_FUSED_MAX_EXTRA || ch->ys[m].dtype != ch->a.dtype ||
            ch->yslot[m].kind == DLA__SLOT_NONE)
            return 0;
        for (int i = 0; i < ch->a.ninputs; i++)
            if (same_slot(ch->in_slot[i], ch->yslot[m]) && !same_view(&ch->a.inputs[i], &ch->ys[m]))
                return 0;
        kept[nkept++] = m;
    }
    const int fi = new_launch(c);
    if (fi < 0)
        return 0;
    last = launch_at(L, ch->step[ch->n - 1]); /* the list may have moved */
    dla__cap_launch *f = &c->launches[fi];
    if (nkept) {
        dla_fused_multi_args *m = dla__calloc(1, sizeof *m);
        if (!m) {
            c->failed = 1;
            return 0;
        }
        m->struct_size = sizeof *m;
        m->program = ch->a;
        m->nextra = nkept;
        f->l.kind = DLA__LAUNCH_FUSED_MULTI;
        f->l.which = DLA_KERNEL_FUSED_MULTI;
        f->l.u.fused_multi = m;
        for (int k = 0; k < nkept; k++) {
            m->extra_reg[k] = ch->reg[kept[k]];
            m->extra[k] = ch->ys[kept[k]];
            f->slot[1 + k] = ch->yslot[kept[k]];
        }
        for (int i = 0; i < ch->a.ninputs; i++)
            f->slot[1 + nkept + i] = ch->in_slot[i];
        L->p->nmulti++;
    } else {
        dla_fused_args *a = dla__malloc(sizeof *a);
        if (!a) {
            c->failed = 1;
            return 0;
        }
        *a = ch->a;
        f->l.kind = DLA__LAUNCH_FUSED;
        f->l.which = DLA_KERNEL_FUSED;
        f->l.u.fused = a;
        for (int i = 0; i < a->ninputs; i++)
            f->slot[1 + i] = ch->in_slot[i];
    }
    f->dev = last->dev;
    f->entry = last->entry;
    f->slot[0] = yslot;
    for (int m = 0; m < ch->n; m++) {
        launch_at(L, ch->step[m])->dropped = 1;
        L->steps[ch->step[m]].index = -1;
    }
    L->steps[ch->step[ch->n - 1]].index = fi;
    L->p->nfused++;
    L->p->fused_from += ch->n;
    return 1;
}

/* ------------------------------------------------------- filled values */

/* Nonzero when view v (of slot s) covers every byte of its replay buffer,
 * densely from its first: what it writes is the whole buffer. */
static int whole_buffer(const lowering *L, dla__slot s, const dla_view *v)
{
    if (s.kind != DLA__SLOT_BUFFER || v->offset != 0)
        return 0;
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++) {
        if (v->dims[d] != 1 && v->strides[d] != n)
            return 0;
        n *= v->dims[d];
    }
    return (size_t)n * dla_dtype_size(v->dtype) == L->c->bufs[s.id].bytes;
}

/* A sum or mean whose every output reduces one element (x's dims are y's:
 * the tiny MLP's loss of a batch of one, summed) is an elementwise launch,
 * which can join the chains around it: x * 1 + 0, the same bits, as each
 * plugin adds the element to a sum that starts at +0 (so -0 gives +0,
 * as 0 + -0 does) and divides a mean by 1. Max, min and sums with
 * positions keep their launch. */
static void single_reduces(lowering *L)
{
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH)
            continue;
        dla__cap_launch *cl = launch_at(L, s);
        dla__launch *l = &cl->l;
        if (l->kind != DLA__LAUNCH_REDUCE)
            continue;
        const dla_reduce_args r = l->u.reduce;
        if ((r.op != DLA_REDUCE_SUM && r.op != DLA_REDUCE_MEAN) || r.index.mem != NULL ||
            cl->slot[2].kind != DLA__SLOT_NONE || r.x.dtype != r.y.dtype ||
            (r.x.dtype != DLA_F32 && r.x.dtype != DLA_F64) || !same_dims(&r.x, &r.y))
            continue;
        l->kind = DLA__LAUNCH_UNARY;
        l->u.unary = (dla_unary_args){sizeof(dla_unary_args), DLA_UNARY_AFFINE, 1.0, 0.0, r.y, r.x};
    }
}

/* A product of one page with an inner dim of 1 (alpha 1, beta 0: the
 * backward pass of a batch of one, dW = dy * x', an outer product) is
 * elementwise: C(i,j) = A(i) * B(j), broadcast. As a fused launch it can
 * join the chains around it, and the tiny MLP's three such GEMMs leave the
 * plan. The program is mul then x * 1 + 0, the same bits as every
 * plugin's GEMM: a sum that starts at +0 takes the one product (rounded
 * once) and gives +0 where the product is an exact -0 (-0 * 1.5). One
 * difference remains: a product that underflows to -0 (below the
 * smallest subnormal) is -0 in a GEMM whose sum is an fma and +0 here.
 * Only on a device whose fused kernel takes the dtype (else the GEMM
 * stays: two launches would replace one), and only where C is dense, as
 * fused results are. With the cuda plugin's TF32 mode
 * (DLACCEL_CUDA_TF32=1), whose GEMMs round their operands to 10 bits, the
 * plan's product is the full one. */
static void outer_products(lowering *L)
{
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH)
            continue;
        dla__cap_launch *cl = launch_at(L, s);
        if (cl->l.kind != DLA__LAUNCH_GEMM)
            continue;
        const dla_gemm_args g = cl->l.u.gemm;
        if (g.k != 1 || g.batch != 1 || g.alpha != 1.0 || g.beta != 0.0 ||
            (g.dtype != DLA_F32 && g.dtype != DLA_F64) || (g.c.ld != g.m && g.n != 1) ||
            !dla__device_supports(L->p->dev, DLA_KERNEL_FUSED, g.dtype))
            continue;
        dla_fused_args *f = dla__calloc(1, sizeof *f);
        if (!f)
            return; /* without it, the GEMM stays: nothing else changes */
        f->struct_size = sizeof *f;
        f->dtype = g.dtype;
        f->ninputs = 2;
        f->ninsns = 2;
        /* op(A) is m x 1: A(i) at i, or at i * lda transposed (A stored
         * 1 x m). op(B) is 1 x n: B(j) at j * ldb, or at j transposed. */
        const dla_view c = {sizeof c, g.c.mem, g.dtype, 2, g.c.offset, {g.m, g.n}, {1, g.m}};
        f->y = c;
        f->inputs[0] = c;
        f->inputs[0].mem = g.a.mem;
        f->inputs[0].offset = g.a.offset;
        f->inputs[0].strides[0] = g.trans_a ? g.a.ld : 1;
        f->inputs[0].strides[1] = 0;
        f->inputs[1] = c;
        f->inputs[1].mem = g.b.mem;
        f->inputs[1].offset = g.b.offset;
        f->inputs[1].strides[0] = 0;
        f->inputs[1].strides[1] = g.trans_b ? 1 : g.b.ld;
        f->insns[0] = (dla_fused_insn){DLA_FUSED_BINARY, DLA_BINARY_MUL, {-1, -2, 0}, 0.0, 0.0};
        f->insns[1] = (dla_fused_insn){DLA_FUSED_UNARY, DLA_UNARY_AFFINE, {0, 0, 0}, 1.0, 0.0};
        /* The slots keep their places: c, a, b are y, input 0, input 1. */
        cl->l.kind = DLA__LAUNCH_FUSED;
        cl->l.which = DLA_KERNEL_FUSED;
        cl->l.u.fused = f;
    }
}

/* A multiply, add or subtract by a buffer that holds one value everywhere
 * (a fill, or a copy of one: the gradient's seed of ones, expanded) is an
 * affine of the other operand, with the same bits: x * c is x * c + -0
 * (-0 keeps every product's sign, an fma's too), x + c is x * 1 + c, x - c
 * is x * 1 + -c and c - x is x * -1 + c. The fill and the copy then often
 * have no reader left and go (dead_fills), and the affine joins a chain.
 * An affine of a buffer of ones over a whole buffer is a fill of
 * alpha + beta, rounded once as the plugin rounds 1 * alpha + beta (the
 * loss's seed scaled by 1/N). value[b]/known[b]: buffer b holds value
 * everywhere (as its dtype). */
/* The binary launch cl, an add, subtract or multiply whose operand a (ka)
 * or else b holds c everywhere, as an affine of the other operand. */
static void fold_binary(dla__cap_launch *cl, int ka, double c)
{
    dla__launch *l = &cl->l;
    const dla_binary_args b = l->u.binary;
    const dla__slot zs = cl->slot[0], xs = cl->slot[ka ? 2 : 1];
    dla_unary_args u = {sizeof u, DLA_UNARY_AFFINE, 1.0, c, b.z, ka ? b.b : b.a};
    if (b.op == DLA_BINARY_MUL)
        u.alpha = c, u.beta = -0.0;
    else if (b.op == DLA_BINARY_SUB && !ka)
        u.beta = -c;
    else if (b.op == DLA_BINARY_SUB)
        u.alpha = -1.0;
    l->kind = DLA__LAUNCH_UNARY;
    l->u.unary = u;
    memset(cl->slot, 0, sizeof cl->slot);
    cl->slot[0] = zs;
    cl->slot[1] = xs;
}

static void fold_fills(lowering *L, double *value, char *known)
{
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH) {
            /* An op run as itself: assume it may have written anything. */
            memset(known, 0, (size_t)(L->c->nbufs ? L->c->nbufs : 1));
            continue;
        }
        dla__cap_launch *cl = launch_at(L, s);
        dla__launch *l = &cl->l;
        if (l->kind == DLA__LAUNCH_BINARY &&
            (l->u.binary.z.dtype == DLA_F32 || l->u.binary.z.dtype == DLA_F64)) {
            const int ka = cl->slot[1].kind == DLA__SLOT_BUFFER && known[cl->slot[1].id];
            const int kb = cl->slot[2].kind == DLA__SLOT_BUFFER && known[cl->slot[2].id];
            const dla_binary_op op = l->u.binary.op;
            if (ka != kb && (op == DLA_BINARY_ADD || op == DLA_BINARY_SUB || op == DLA_BINARY_MUL))
                fold_binary(cl, ka, value[cl->slot[ka ? 1 : 2].id]);
        }
        if (l->kind == DLA__LAUNCH_UNARY && l->u.unary.op == DLA_UNARY_AFFINE &&
            cl->slot[1].kind == DLA__SLOT_BUFFER && known[cl->slot[1].id] &&
            value[cl->slot[1].id] == 1.0 && !same_slot(cl->slot[0], cl->slot[1]) &&
            whole_buffer(L, cl->slot[0], &l->u.unary.y)) {
            const dla_view y = l->u.unary.y;
            /* Two floats' sum in double, then rounded to float, is their
             * float sum (53 >= 2 * 24 + 2 bits). */
            const double v = y.dtype == DLA_F32
                                 ? (double)(float)((double)(float)l->u.unary.alpha +
                                                   (double)(float)l->u.unary.beta)
                                 : l->u.unary.alpha + l->u.unary.beta;
            if (isfinite(v)) {
                l->kind = DLA__LAUNCH_FILL;
                l->u.fill.y = y;
                l->u.fill.value = v;
                cl->slot[1] = (dla__slot){DLA__SLOT_NONE, 0, 0};
            }
        }
        /* What the launch writes: a fill of a finite value, or a copy of a
         * known buffer, over a whole buffer makes it known; anything else
         * it writes is not known. */
        dla__field f[DLA__LAUNCH_MAX_FIELDS];
        const int n = dla__launch_fields(l, f);
        for (int i = 0; i < n; i++)
            if (f[i].written && cl->slot[i].kind == DLA__SLOT_BUFFER)
                known[cl->slot[i].id] = 0;
        if (l->kind == DLA__LAUNCH_FILL && isfinite(l->u.fill.value) &&
            whole_buffer(L, cl->slot[0], &l->u.fill.y) &&
            (l->u.fill.y.dtype == DLA_F32 || l->u.fill.y.dtype == DLA_F64)) {
            const double v = l->u.fill.value;
            value[cl->slot[0].id] = l->u.fill.y.dtype == DLA_F32 ? (double)(float)v : v;
            known[cl->slot[0].id] = isfinite(value[cl->slot[0].id]);
        } else if (l->kind == DLA__LAUNCH_COPY && cl->slot[1].kind == DLA__SLOT_BUFFER &&
                   known[cl->slot[1].id] && !same_slot(cl->slot[0], cl->slot[1]) &&
                   l->u.pair.y.dtype == l->u.pair.x.dtype &&
                   whole_buffer(L, cl->slot[0], &l->u.pair.y)) {
            value[cl->slot[0].id] = value[cl->slot[1].id];
            known[cl->slot[0].id] = 1;
        }
    }
}

/* Nonzero when views a and b of one buffer reach no element in common,
 * known for translates only: the same coalesced dims and strides, the
 * offsets apart by delta. They share one when delta is sum(i_d * s_d)
 * with |i_d| < dims_d; the search takes the largest stride first and
 * only the i_d whose rest the smaller dims can still reach. */
static int share_search(int nd, const int64_t *dims, const int64_t *st, int64_t delta, int *budget)
{
    if (nd == 0)
        return delta == 0;
    if (--*budget < 0)
        return 1; /* too long a search: assume they share */
    int top = 0;
    for (int d = 1; d < nd; d++)
        if (st[d] > st[top])
            top = d;
    int64_t rd[DLA_MAX_DIMS], rs[DLA_MAX_DIMS], reach = 0;
    int m = 0;
    for (int d = 0; d < nd; d++)
        if (d != top) {
            rd[m] = dims[d];
            rs[m] = st[d];
            reach += st[d] * (dims[d] - 1);
            m++;
        }
    const int64_t s = st[top], lo = delta - reach, hi = delta + reach;
    /* i * s in [lo, hi], |i| < dims[top] */
    int64_t i0 = s ? (lo >= 0 ? (lo + s - 1) / s : -((-lo) / s)) : -(dims[top] - 1);
    int64_t i1 = s ? (hi >= 0 ? hi / s : -((-hi + s - 1) / s)) : dims[top] - 1;
    if (i0 < -(dims[top] - 1))
        i0 = -(dims[top] - 1);
    if (i1 > dims[top] - 1)
        i1 = dims[top] - 1;
    for (int64_t i = i0; i <= i1; i++)
        if (share_search(m, rd, rs, delta - i * s, budget))
            return 1;
    return 0;
}

static int disjoint_translates(const dla_view *a, const dla_view *b)
{
    int na, nb;
    int64_t da[DLA_MAX_DIMS], sa[DLA_MAX_DIMS], db[DLA_MAX_DIMS], sb[DLA_MAX_DIMS];
    if (a->dtype != b->dtype)
        return 0;
    coalesced(a, &na, da, sa);
    coalesced(b, &nb, db, sb);
    if (na != nb || memcmp(da, db, (size_t)na * sizeof *da) ||
        memcmp(sa, sb, (size_t)na * sizeof *sa))
        return 0;
    for (int d = 0; d < na; d++)
        if (sa[d] <= 0)
            return 0;
    int budget = 4096;
    return !share_search(na, da, sa, b->offset - a->offset, &budget);
}

/* Nonzero when no two positions of v reach one element, as far as a
 * simple test tells: its strides, smallest first, each at least the span
 * of the ones before. Written parts are counted by their elements. */
static int injective(const dla_view *v)
{
    int nd;
    int64_t dims[DLA_MAX_DIMS], st[DLA_MAX_DIMS];
    coalesced(v, &nd, dims, st);
    for (int i = 1; i < nd; i++) /* by stride: insertion */
        for (int j = i; j > 0 && st[j] < st[j - 1]; j--) {
            int64_t t = st[j];
            st[j] = st[j - 1], st[j - 1] = t;
            t = dims[j];
            dims[j] = dims[j - 1], dims[j - 1] = t;
        }
    int64_t span = 1;
    for (int d = 0; d < nd; d++) {
        if (st[d] < span)
            return 0;
        span = st[d] * dims[d];
    }
    return 1;
}

static int64_t view_numel(const dla_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->dims[d];
    return n;
}

/* Nonzero when view r reaches no element of the parts part[0..n-1] (of
 * the same buffer), as far as disjoint_translates knows. */
static int unwritten(const dla_view *part, int n, const dla_view *r)
{
    for (int k = 0; k < n; k++)
        if (!disjoint_translates(&part[k], r))
            return 0;
    return 1;
}

/* Regions of a filled buffer written after its fill that partial_fills
 * follows: translates of one another, pairwise apart (a gate's slice of
 * an LSTM's 4H x N gradient, 4 of them). */
#define PARTS_MOST 16

/* The rest of a fill after some of its buffer has been written: the
 * gradient of a slice is zeros with the slice's gradient added in
 * (accumulate), and an LSTM's four gate slices of its product each add
 * into the zeros of one buffer. fold_fills folds the first add only (the
 * buffer is known no longer once written in part), so three read zeros
 * and the fill ran on every step (8% of the LSTM's train step). Here, for
 * a fill of a whole buffer, the writes after it are followed while they
 * are translates apart from one another: an add that reads a part not
 * written yet reads the fill's value and is folded as fold_fills folds
 * (the same bits), and a fill whose parts cover the buffer before
 * anything reads what it wrote goes. */
static void partial_fills(lowering *L)
{
    dla__capture *c = L->c;
    int dropped = 0;
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH)
            continue;
        dla__cap_launch *fl = launch_at(L, s);
        if (fl->l.kind != DLA__LAUNCH_FILL || fl->slot[0].kind != DLA__SLOT_BUFFER)
            continue;
        const dla_view fv = fl->l.u.fill.y;
        const dla__slot b = fl->slot[0];
        if ((fv.dtype != DLA_F32 && fv.dtype != DLA_F64) || !isfinite(fl->l.u.fill.value) ||
            !whole_buffer(L, b, &fv) || invoke_buffer(c, b.id))
            continue;
        const double v = fv.dtype == DLA_F32 ? (double)(float)fl->l.u.fill.value
                                             : fl->l.u.fill.value;
        dla_view part[PARTS_MOST];
        int nparts = 0, needed = 0, covered = 0;
        int64_t left = view_numel(&fv);
        for (int t = s + 1; t < L->nsteps && !needed && !covered; t++) {
            /* An op run as itself may write anything (as fold_fills
             * assumes): the fill stays, and nothing after it is folded. */
            if (L->steps[t].kind == DLA__STEP_INVOKE) {
                needed = 1;
                break;
            }
            if (L->steps[t].index < 0)
                continue;
            dla__cap_launch *cl = launch_at(L, t);
            dla__launch *l = &cl->l;
            if (l->kind == DLA__LAUNCH_BINARY && l->u.binary.z.dtype == fv.dtype) {
                const int ka = same_slot(cl->slot[1], b), kb = same_slot(cl->slot[2], b);
                const dla_binary_op op = l->u.binary.op;
                const dla_view *r = ka ? &l->u.binary.a : &l->u.binary.b;
                if (ka != kb && r->dtype == fv.dtype &&
                    (op == DLA_BINARY_ADD || op == DLA_BINARY_SUB || op == DLA_BINARY_MUL) &&
                    unwritten(part, nparts, r))
                    fold_binary(cl, ka, v);
            }
            dla__field f[DLA__LAUNCH_MAX_FIELDS];
            const int n = dla__launch_fields(l, f);
            /* Reads first: an operand updated in place is read before it
             * is written. What reads the fill's value or a part keeps the
             * fill (a part alone would not need it: not worth knowing). */
            for (int i = 0; i < n && !needed; i++)
                if (same_slot(cl->slot[i], b) && (!f[i].written || f[i].reads))
                    needed = 1;
            for (int i = 0; i < n && !needed; i++) {
                if (!same_slot(cl->slot[i], b) || !f[i].written)
                    continue;
                const dla_view *w = f[i].view;
                if (!w || nparts == PARTS_MOST || w->dtype != fv.dtype ||
                    !unwritten(part, nparts, w) ||
                    (nparts == 0 && !injective(w))) {
                    needed = 1; /* a write it cannot follow */
                    break;
                }
                part[nparts++] = *w;
                left -= view_numel(w);
                covered = left == 0;
            }
        }
        if (covered && !needed) {
            fl->dropped = 1;
            L->steps[s].index = -1;
            dropped = 1;
        }
    }
    if (!dropped)
        return;
    int n = 0;
    for (int s = 0; s < L->nsteps; s++)
        if (L->steps[s].kind != DLA__STEP_LAUNCH || L->steps[s].index >= 0)
            L->steps[n++] = L->steps[s];
    L->nsteps = n;
}

/* Drops fills and copies whose result nothing reads any more (latest
 * first, so a copy's going frees its fill) and the steps they leave. */
static void dead_fills(lowering *L)
{
    for (int s = L->nsteps - 1; s >= 0; s--) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH)
            continue;
        dla__cap_launch *cl = launch_at(L, s);
        if ((cl->l.kind != DLA__LAUNCH_FILL && cl->l.kind != DLA__LAUNCH_COPY) ||
            cl->slot[0].kind != DLA__SLOT_BUFFER)
            continue;
        if (read_after(L, cl->slot[0], out_view(cl), s + 1))
            continue;
        cl->dropped = 1;
        L->steps[s].index = -1;
    }
    int n = 0;
    for (int s = 0; s < L->nsteps; s++)
        if (L->steps[s].kind != DLA__STEP_LAUNCH || L->steps[s].index >= 0)
            L->steps[n++] = L->steps[s];
    L->nsteps = n;
}

/* ------------------------------------------------------------ scheduling */

/* Nonzero when the launch at step s reads (written 0) or writes (1)
 * memory of slot b. An operand added into is read and written. */
static int touches(lowering *L, int s, dla__slot b, int written)
{
    dla__cap_launch *cl = launch_at(L, s);
    dla__field f[DLA__LAUNCH_MAX_FIELDS];
    int n = dla__launch_fields(&cl->l, f);
    for (int i = 0; i < n; i++)
        if ((written ? f[i].written : !f[i].written || f[i].reads) && same_slot(cl->slot[i], b))
            return 1;
    return 0;
}

/* Nonzero when step k and step e commute: no memory one writes is read or
 * written by the other. */
static int commute(lowering *L, int k, int e)
{
    dla__cap_launch *a = launch_at(L, k), *b = launch_at(L, e);
    dla__field fa[DLA__LAUNCH_MAX_FIELDS], fb[DLA__LAUNCH_MAX_FIELDS];
    int na = dla__launch_fields(&a->l, fa), nb = dla__launch_fields(&b->l, fb);
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if ((fa[i].written || fb[j].written) && a->slot[i].kind != DLA__SLOT_NONE &&
                same_slot(a->slot[i], b->slot[j]))
                return 0;
    return 1;
}

/* A fill that wrote at most this many bytes may become fixed. */
#define FIXED_FILL_MOST 65536

/* Nonzero when some step other than skip writes memory of buffer b, or
 * an op run as itself, or a result, can see b. */
static int touched_elsewhere(lowering *L, int b, int skip)
{
    const dla__capture *c = L->c;
    const dla__slot sb = {DLA__SLOT_BUFFER, b, 0};
    if (c->bufs[b].fresh >= 0 || c->bufs[b].opval >= 0 || invoke_buffer(c, b))
        return 1;
    for (int i = 0; i < c->nspecs; i++)
        if (same_slot(c->specs[i].slot, sb))
            return 1;
    for (int s = 0; s < L->nsteps; s++)
        if (s != skip && L->steps[s].kind == DLA__STEP_LAUNCH && touches(L, s, sb, 1))
            return 1;
    return 0;
}

/* Fills that no replay needs to repeat: a fill of a whole buffer (of at
 * most FIXED_FILL_MOST bytes) that no other step writes and that only
 * launches read, such as the cross-entropy's clamp at the least normal
 * float, an op's constant made inside the trace. Each leaves the steps
 * and runs once, when the plan is made (finish_fixed), into a place of
 * the arena that nothing else takes; the launches after it read what it
 * left there on every run. A replay of the weighted cross-entropy makes
 * one launch fewer of 6, the digit CNN's train step one of 68. */
static void fixed_fills(lowering *L)
{
    dla__capture *c = L->c;
    int n = 0;
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind == DLA__STEP_LAUNCH) {
            dla__cap_launch *cl = launch_at(L, s);
            const dla_view *y = &cl->l.u.fill.y;
            if (cl->l.kind == DLA__LAUNCH_FILL && whole_buffer(L, cl->slot[0], y) &&
                c->bufs[cl->slot[0].id].bytes <= FIXED_FILL_MOST &&
                !touched_elsewhere(L, cl->slot[0].id, s)) {
                c->bufs[cl->slot[0].id].fixed = L->steps[s].index + 1;
                continue;
            }
        }
        L->steps[n++] = L->steps[s];
    }
    L->nsteps = n;
}

/* Moves elementwise consumers up to their producers, so the chain fusion
 * that follows finds them adjacent: a batchnorm's result and the relu
 * after it are separated by the running statistics' updates, which
 * neither touches. A launch moves only past launches it commutes with. */
static void gather_consumers(lowering *L)
{
    for (int s = 0; s + 1 < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH || !fusible(L, launch_at(L, s)))
            continue;
        const dla__slot b = launch_at(L, s)->slot[0];
        if (b.kind != DLA__SLOT_BUFFER)
            continue;
        int e = s + 1;
        while (e < L->nsteps && L->steps[e].kind == DLA__STEP_LAUNCH && !touches(L, e, b, 0) &&
               !touches(L, e, b, 1))
            e++;
        if (e == s + 1 || e == L->nsteps || L->steps[e].kind != DLA__STEP_LAUNCH ||
            !fusible(L, launch_at(L, e)) || !touches(L, e, b, 0))
            continue;
        int ok = 1;
        for (int k = s + 1; ok && k < e; k++)
            ok = commute(L, k, e);
        if (!ok)
            continue;
        dla__step moved = L->steps[e];
        memmove(&L->steps[s + 2], &L->steps[s + 1], (size_t)(e - s - 1) * sizeof *L->steps);
        L->steps[s + 1] = moved;
    }
}

/* ------------------------------------------------- convolutions' bias */

/* A forward convolution adds its bias last, once, to each finished sum:
 * the cpu plugin's kernels as they write the sums out, the cuda plugin in
 * a pass of its own after cuDNN's. Where one elementwise step alone reads
 * the result (inference's batchnorm, a relu), the planner moves the
 * addition into that step's chain instead: the convolution runs without
 * its bias and y + b is the chain's first instruction. The same sum,
 * rounded once, so the same bits (but for one case: a sum of -0 with a
 * bias of -0 is -0 in the convolution and +0 this way, the plugin's
 * biasless sum being the sum plus 0), and on a device that adds the bias
 * in a pass of its own, a launch and a pass over y fewer. A split that no
 * chain took is put back after fusing (conv_bias_back). DLACCEL_PLAN=
 * conv-bias-in leaves every bias in its convolution. */
typedef struct bias_split {
    int conv, add; /* launch indices */
    dla_view bias;
    dla__slot slot;
} bias_split;

/* Inserts the launch of index li as step at (the steps after it move
 * down one); 0 when out of memory. */
static int insert_step(lowering *L, int at, int li)
{
    if (L->nsteps == L->capsteps) {
        const int cap = L->capsteps + 16;
        dla__step *grown = dla__realloc(L->steps, (size_t)cap * sizeof *grown);
        if (!grown)
            return 0;
        L->steps = grown;
        L->capsteps = cap;
    }
    memmove(&L->steps[at + 1], &L->steps[at], (size_t)(L->nsteps - at) * sizeof *L->steps);
    L->steps[at] = (dla__step){DLA__STEP_LAUNCH, li};
    L->nsteps++;
    return 1;
}

/* The step after convolution s that reads its result y: the first that
 * touches y, every step before it a launch that leaves the bias (slot
 * bias) as it is; -1 when there is none such. */
static int bias_reader(lowering *L, int s, dla__slot y, dla__slot bias)
{
    for (int e = s + 1; e < L->nsteps; e++) {
        if (L->steps[e].kind != DLA__STEP_LAUNCH)
            return -1;
        if (touches(L, e, y, 0) || touches(L, e, y, 1))
            return e;
        if (bias.kind != DLA__SLOT_NONE && touches(L, e, bias, 1))
            return -1;
    }
    return -1;
}

static void conv_bias_out(lowering *L)
{
    dla__capture *c = L->c;
    if (!dla__plan_conv_bias_out_allowed())
        return;
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH)
            continue;
        dla__cap_launch *cl = launch_at(L, s);
        if (cl->l.kind != DLA__LAUNCH_CONV || cl->l.which != DLA_KERNEL_CONV_FORWARD ||
            !cl->l.u.conv.bias.mem || cl->slot[3].kind == DLA__SLOT_NONE)
            continue;
        const dla_conv_args kc = cl->l.u.conv, *k = &kc; /* the list may move below */
        const dla__slot y = cl->slot[2], bias = cl->slot[3];
        const dla_dtype dt = k->dtype;
        if ((dt != DLA_F32 && dt != DLA_F64) || k->y.dtype != dt || k->bias.dtype != dt ||
            y.kind != DLA__SLOT_BUFFER || invoke_buffer(c, y.id) ||
            k->nspatial + 2 > k->y.ndims || k->bias.ndims != 1 ||
            k->bias.dims[0] != k->y.dims[k->nspatial])
            continue;
        const int e = bias_reader(L, s, y, bias);
        if (e < 0 || !fusible(L, launch_at(L, e)) || program_dtype(launch_at(L, e)) != dt ||
            !only_reader(L, y.id, &k->y, s, e))
            continue;
        bias_split *grown = dla__realloc(L->splits, (size_t)(L->nsplits + 1) * sizeof *grown);
        if (!grown)
            return; /* without the split, nothing changes */
        L->splits = grown;
        const int add = new_launch(c);
        if (add < 0)
            return;
        if (!insert_step(L, e, add)) {
            c->nlaunches--; /* never referred to */
            return;
        }
        cl = launch_at(L, s); /* the list may have moved */
        dla__cap_launch *al = &c->launches[add];
        /* z = y + b, y in place, b along y's channel dim. */
        dla_view b = k->y;
        b.mem = k->bias.mem;
        b.offset = k->bias.offset;
        for (int d = 0; d < b.ndims; d++)
            b.strides[d] = d == k->nspatial ? k->bias.strides[0] : 0;
        al->l.kind = DLA__LAUNCH_BINARY;
        al->l.u.binary = (dla_binary_args){sizeof al->l.u.binary, DLA_BINARY_ADD, k->y, k->y, b};
        al->dev = cl->dev;
        al->entry = cl->entry;
        al->slot[0] = al->slot[1] = y;
        al->slot[2] = bias;
        L->splits[L->nsplits++] = (bias_split){L->steps[s].index, add, k->bias, bias};
        memset(&cl->l.u.conv.bias, 0, sizeof cl->l.u.conv.bias);
        cl->l.u.conv.bias.struct_size = sizeof cl->l.u.conv.bias;
        cl->slot[3] = (dla__slot){DLA__SLOT_NONE, 0, 0};
    }
}

/* After fusing: a bias whose addition no chain took goes back into its
 * convolution, and its launch goes (it stood where nothing reads y). */
static void conv_bias_back(lowering *L)
{
    dla__capture *c = L->c;
    for (int i = 0; i < L->nsplits; i++) {
        const bias_split *sp = &L->splits[i];
        if (c->launches[sp->add].dropped)
            continue;
        c->launches[sp->conv].l.u.conv.bias = sp->bias;
        c->launches[sp->conv].slot[3] = sp->slot;
        for (int s = 0; s < L->nsteps; s++)
            if (L->steps[s].kind == DLA__STEP_LAUNCH && L->steps[s].index == sp->add) {
                memmove(&L->steps[s], &L->steps[s + 1],
                        (size_t)(L->nsteps - s - 1) * sizeof *L->steps);
                L->nsteps--;
                break;
            }
    }
    dla__free(L->splits);
    L->splits = NULL;
    L->nsplits = 0;
}

/* Greedy, in step order: a chain grows while the next step can join it.
 * With fused_multi a chain that cannot be emitted (too many results wanted
 * after it, say) is tried again one link shorter. */
static void fuse(lowering *L)
{
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH || !fusible(L, launch_at(L, s)))
            continue;
        const dla_dtype dt = program_dtype(launch_at(L, s));
        L->multi = dla__plan_multi_allowed() &&
                   dla__device_supports(L->p->dev, DLA_KERNEL_FUSED_MULTI, dt);
        for (int most = DLA_FUSED_MAX_INSNS; most >= 2; most--) {
            chain ch;
            memset(&ch, 0, sizeof ch);
            ch.a.dtype = dt;
            if (!link(L, &ch, s))
                break;
            int e = s + 1;
            while (e < L->nsteps && ch.n < most && can_follow(L, &ch, e) && link(L, &ch, e))
                e++;
            if (ch.n >= 2 && emit(L, &ch)) {
                s = e - 1;
                break;
            }
            if (!L->multi || ch.n < 2)
                break;
            most = ch.n; /* the loop's most-- makes it one link shorter */
        }
    }
    /* Drop the emptied steps. */
    int n = 0;
    for (int s = 0; s < L->nsteps; s++)
        if (L->steps[s].kind != DLA__STEP_LAUNCH || L->steps[s].index >= 0)
            L->steps[n++] = L->steps[s];
    L->nsteps = n;
}

/* ------------------------------------------------ convolution epilogues */

/* The field of a convolution launch (forward or backward data) that holds
 * its result: y (2) forward, x (0) backward. */
static int conv_result_field(dla_kernel which)
{
    return which == DLA_KERNEL_CONV_FORWARD || which == DLA_KERNEL_CONV_FORWARD_FUSED ? 2 : 0;
}

/* Nonzero when the fused launch fl can be the epilogue of the convolution
 * pass cl (dla_conv_fused_args): of the dims of the pass's result R,
 * reading R only through R's very view (at least once: *at is the first
 * such input), and writing a buffer of the replay that is none of the
 * pass's operands. Slots apart are memory apart in the plan: both
 * launches' buffers are live at the one step they become. */
static int epilogue_of(const lowering *L, const dla__cap_launch *cl, const dla__cap_launch *fl,
                       int *at)
{
    const dla_conv_args *k = &cl->l.u.conv;
    const int ri = conv_result_field(cl->l.which);
    const dla_view *r = ri == 2 ? &k->y : &k->x;
    const dla_fused_args *a = fl->l.u.fused;
    const dla__slot rs = cl->slot[ri], zs = fl->slot[0];
    if (a->dtype != k->dtype || r->ndims != k->nspatial + 2 || !same_dims(&a->y, r) ||
        rs.kind != DLA__SLOT_BUFFER || invoke_buffer(L->c, rs.id) ||
        zs.kind != DLA__SLOT_BUFFER || invoke_buffer(L->c, zs.id))
        return 0;
    for (int i = 0; i < 4; i++)
        if (same_slot(zs, cl->slot[i]) && i != ri)
            return 0; /* the program would write what the pass reads */
    *at = -1;
    for (int i = 0; i < a->ninputs; i++) {
        if (!same_slot(fl->slot[1 + i], rs))
            continue;
        if (!same_view(&a->inputs[i], r) || a->inputs[i].mem != r->mem)
            return 0;
        if (*at < 0)
            *at = i;
    }
    return *at >= 0;
}

/* The step right after the convolution at step s, if it is a fused launch
 * that reads the convolution's result; -1 otherwise. Only the next step:
 * ResNet-20's training has a filter gradient and a bias's sum between
 * each input gradient and its relu mask, and moving the mask up past them
 * to run it as an epilogue measured no faster (298 ms with it against 285
 * without, 7 alternating rounds): the pass after the mask, batch
 * normalization's sums, then read the gradient from memory instead. */
static int next_reader(lowering *L, int s)
{
    const dla__slot rs = launch_at(L, s)->slot[conv_result_field(launch_at(L, s)->l.which)];
    const int e = s + 1;
    if (L->steps[e].kind != DLA__STEP_LAUNCH || launch_at(L, e)->l.kind != DLA__LAUNCH_FUSED ||
        !touches(L, e, rs, 0))
        return -1;
    return e;
}

/* A convolution pass (forward, or backward data) and the fused launch
 * right after it that reads its result become one launch where the
 * device has the ABI 1.9 kernel: the device may then run the program over
 * each image as the pass writes it, while it is in cache, rather than in
 * a pass of its own over the whole activation (ResNet-20's inference: a
 * bias, a batch normalization's scale and shift, a residual and a relu
 * after each convolution; the gradient of a loss with respect to a
 * network's input alone: the relu's mask after each input gradient). The
 * same operations on the same values: the same bits.
 * DLACCEL_PLAN=no-epilogue leaves them two launches (for comparisons). */
static void conv_epilogues(lowering *L)
{
    dla__capture *c = L->c;
    if (!dla__plan_epilogue_allowed())
        return;
    for (int s = 0; s + 1 < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH)
            continue;
        const dla__cap_launch *cl = launch_at(L, s);
        if (cl->l.kind != DLA__LAUNCH_CONV || (cl->l.which != DLA_KERNEL_CONV_FORWARD &&
                                                cl->l.which != DLA_KERNEL_CONV_BACKWARD_DATA))
            continue;
        const dla_kernel which = cl->l.which == DLA_KERNEL_CONV_FORWARD
                                     ? DLA_KERNEL_CONV_FORWARD_FUSED
                                     : DLA_KERNEL_CONV_BACKWARD_DATA_FUSED;
        int at;
        const int e = dla__device_supports(L->p->dev, which, cl->l.u.conv.dtype) ? next_reader(L, s)
                                                                                : -1;
        if (e < 0 || launch_at(L, e)->dev != cl->dev || !epilogue_of(L, cl, launch_at(L, e), &at))
            continue;
        dla_conv_fused_args *a = dla__calloc(1, sizeof *a);
        const int ci = L->steps[s].index, fi = L->steps[e].index;
        const int li = a ? new_launch(c) : -1;
        if (li < 0) {
            dla__free(a);
            c->failed = 1;
            return;
        }
        dla__cap_launch *conv = &c->launches[ci], *fused = &c->launches[fi], *n = &c->launches[li];
        a->struct_size = sizeof *a;
        a->conv = conv->l.u.conv;
        a->epilogue = *fused->l.u.fused;
        a->conv_input = at;
        n->l.kind = DLA__LAUNCH_CONV_FUSED;
        n->l.which = which;
        n->l.u.conv_fused = a;
        n->dev = conv->dev;
        n->entry = conv->entry;
        for (int i = 0; i < 4; i++)
            n->slot[i] = conv->slot[i];
        for (int i = 0; i < 1 + a->epilogue.ninputs; i++)
            n->slot[4 + i] = fused->slot[i];
        conv->dropped = fused->dropped = 1;
        L->steps[s].index = li;
        memmove(&L->steps[e], &L->steps[e + 1], (size_t)(L->nsteps - e - 1) * sizeof *L->steps);
        L->nsteps--;
        L->p->nepilogue++;
    }
}

/* ------------------------------------------------ launches of inputs */

/* A launch that reads only the plan's inputs and constants and writes at
 * most this many elements moves up (hoist_input_only). */
#define HOIST_MOST 4096

/* Whether the launch at step s is elementwise, a fill, a copy or a
 * reduction (what a device merges into runs; a convolution or a product
 * is not small however few its elements), reads only inputs and
 * constants and writes at most HOIST_MOST elements into buffers of the
 * replay. */
static int input_only(lowering *L, int s)
{
    dla__cap_launch *cl = launch_at(L, s);
    switch (cl->l.kind) {
    case DLA__LAUNCH_FILL:
    case DLA__LAUNCH_COPY:
    case DLA__LAUNCH_UNARY:
    case DLA__LAUNCH_BINARY:
    case DLA__LAUNCH_TERNARY:
    case DLA__LAUNCH_REDUCE:
    case DLA__LAUNCH_FUSED:
    case DLA__LAUNCH_FUSED_MULTI: break;
    default: return 0;
    }
    dla__field f[DLA__LAUNCH_MAX_FIELDS];
    const int n = dla__launch_fields(&cl->l, f);
    int64_t written = 0;
    for (int i = 0; i < n; i++) {
        const dla__slot_kind k = cl->slot[i].kind;
        if (f[i].written) {
            if (k != DLA__SLOT_BUFFER || !f[i].view)
                return 0;
            written += dla__view_numel(f[i].view);
        } else if (k != DLA__SLOT_INPUT && k != DLA__SLOT_CONST && k != DLA__SLOT_NONE) {
            return 0;
        }
    }
    return written > 0 && written <= HOIST_MOST;
}

/* Small launches that wait for nothing the plan computes (inference's
 * batch normalizations turning their running statistics and parameters
 * into a scale and shift, a bias copied into a product's result) move up
 * to the plan's start, in their order, past the launches they commute
 * with: there they are one run of small launches, which the cuda plugin
 * makes one node of its graph (plugins/cuda/segment.c) where, one between
 * each convolution and the next, each was a node. Any order of launches
 * that commute gives the same results; the buffers they write live a
 * little longer. */
static void hoist_input_only(lowering *L)
{
    int top = 0;
    for (int e = 0; e < L->nsteps; e++) {
        if (L->steps[e].kind != DLA__STEP_LAUNCH || !input_only(L, e))
            continue;
        int p = e;
        while (p > top && L->steps[p - 1].kind == DLA__STEP_LAUNCH && commute(L, p - 1, e))
            p--;
        if (p < e) {
            const dla__step moved = L->steps[e];
            memmove(&L->steps[p + 1], &L->steps[p], (size_t)(e - p) * sizeof *L->steps);
            L->steps[p] = moved;
        }
        top = p + 1;
    }
}

/* ---------------------------------------------------------------- lower */

static void use(dla__cap_buffer *b, long step)
{
    if (b->first < 0 || step < b->first)
        b->first = step;
    if (step > b->last)
        b->last = step;
}

/* The plan's steps in order: each live entry's launches, or the entry
 * itself when it runs as an op. */
static int make_steps(lowering *L)
{
    dla__capture *c = L->c;
    const dla__trace *t = c->t;
    L->capsteps = c->nlaunches + t->nentries + 1;
    L->steps = dla__malloc((size_t)L->capsteps * sizeof *L->steps);
    if (!L->steps)
        return fail(L->p, "%s", "out of memory while planning");
    int li = 0;
    for (int k = 0; k < t->nentries; k++) {
        if (!c->entries[k].live) {
            L->p->ndead++;
            continue;
        }
        if (c->entries[k].invoke) {
            L->p->ninvoke++;
            L->steps[L->nsteps++] = (dla__step){DLA__STEP_INVOKE, k};
        }
        for (; li < c->nlaunches && c->launches[li].entry == k; li++)
            if (!c->entries[k].invoke)
                L->steps[L->nsteps++] = (dla__step){DLA__STEP_LAUNCH, li};
    }
    return 1;
}

/* Checks what the kept launches name and turns invocations' buffers into
 * their values. */
static int place_operands(lowering *L)
{
    dla__capture *c = L->c;
    dla__plan *p = L->p;
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH)
            continue;
        dla__cap_launch *cl = &c->launches[L->steps[s].index];
        const char *op = entry_name(c, cl->entry);
        if (cl->dev != p->dev)
            return fail(p, "%s launches a kernel on another device than the replay's", op);
        dla__field f[DLA__LAUNCH_MAX_FIELDS];
        int n = dla__launch_fields(&cl->l, f);
        for (int i = 0; i < n; i++) {
            if (cl->slot[i].kind == DLA__SLOT_UNKNOWN)
                return fail(p, "%s launches a kernel on memory that is neither an input, a "
                            "constant nor made by the replay", op);
            if (!to_opval(L, &cl->slot[i], op))
                return 0;
            if (cl->slot[i].kind == DLA__SLOT_INPUT && f[i].elsize != 1 &&
                f[i].elsize != dla_dtype_size(c->in[cl->slot[i].id]->dtype))
                return fail(p, "%s reads an input as another element size", op);
        }
    }
    for (int i = 0; i < c->nspecs; i++) {
        dla__spec *sp = &c->specs[i];
        if (sp->slot.kind == DLA__SLOT_UNKNOWN || sp->slot.kind == DLA__SLOT_NONE)
            return fail(p, "%s", "a value handed to an op lives in memory the planner cannot place");
        if (!to_opval(L, &sp->slot, "a value handed to an op"))
            return 0;
        if (sp->slot.kind == DLA__SLOT_INPUT && sp->dtype != c->in[sp->slot.id]->dtype)
            return fail(p, "%s", "a view of an input changes its dtype");
    }
    return 1;
}

/* Buffers still alive at the end hold outputs: they become per-call
 * buffers. Any other survivor is something the planner does not know. */
static int find_outputs(lowering *L)
{
    dla__capture *c = L->c;
    dla__plan *p = L->p;
    for (int b = 0; b < c->nbufs; b++) {
        dla__cap_buffer *buf = &c->bufs[b];
        if (invoke_buffer(c, b))
            continue;
        if (buf->dev != p->dev)
            return fail(p, "%s makes memory on another device than the replay's",
                        entry_name(c, buf->entry));
        if (buf->died >= 0)
            continue;
        int held = 0;
        for (int i = 0; i < c->t->nout && !held; i++)
            held = c->out_mem[i] == buf->mem;
        if (!held)
            return fail(p, "a buffer %s made outlives the replay without being an output",
                        entry_name(c, buf->entry));
        buf->fresh = p->nfresh++;
    }
    p->fresh_bytes = dla__calloc((size_t)(p->nfresh ? p->nfresh : 1), sizeof *p->fresh_bytes);
    p->fresh = dla__calloc((size_t)(p->nfresh ? p->nfresh : 1), sizeof *p->fresh);
    if (!p->fresh_bytes || !p->fresh)
        return fail(p, "%s", "out of memory while planning");
    for (int b = 0; b < c->nbufs; b++)
        if (c->bufs[b].fresh >= 0) {
            p->fresh_bytes[c->bufs[b].fresh] = c->bufs[b].bytes;
            p->fresh_total += c->bufs[b].bytes;
        }
    return 1;
}

/* BUFFER slots -> ARENA (offset) or FRESH. */
static dla__slot lowered(const dla__capture *c, dla__slot s)
{
    if (s.kind != DLA__SLOT_BUFFER)
        return s;
    const dla__cap_buffer *b = &c->bufs[s.id];
    if (b->fresh >= 0)
        return (dla__slot){DLA__SLOT_FRESH, b->fresh, 0};
    return (dla__slot){DLA__SLOT_ARENA, s.id, 0};
}

/* ------------------------------------------------------ results in place */

/* An elementwise step (unary, binary, fused) whose result z is a buffer
 * it writes first, and which reads an intermediate y for the last time
 * through exactly z's view (dtype, dims, strides, offset), lets z take
 * y's memory: the ABI has those kernels write over an input they read
 * exactly. Then z's lines are not loaded into the cache before they are
 * written (the write-allocate: a pass over z fewer, out of three for a
 * step such as inference's y + b, then batch normalization and relu), and
 * the arena is smaller. Each step's values are the same, so the bits are
 * too. root[b] is the buffer whose memory b takes (b itself: its own);
 * the root's last use grows to the group's. DLACCEL_PLAN=no-in-place
 * gives every result its own memory (for comparisons). */
static void results_in_place(lowering *L, int *root)
{
    dla__capture *c = L->c;
    for (int b = 0; b < c->nbufs; b++)
        root[b] = b;
    if (!dla__plan_in_place_allowed())
        return;
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind != DLA__STEP_LAUNCH)
            continue;
        dla__cap_launch *cl = &c->launches[L->steps[s].index];
        const int kind = cl->l.kind;
        if (kind != DLA__LAUNCH_UNARY && kind != DLA__LAUNCH_BINARY && kind != DLA__LAUNCH_FUSED &&
            kind != DLA__LAUNCH_CONV_FUSED)
            continue;
        dla__field f[DLA__LAUNCH_MAX_FIELDS];
        const int n = dla__launch_fields(&cl->l, f);
        /* A convolution's epilogue writes its y (field 4) over the pass's
         * result only (y forward, x backward: conv_result_field): over
         * another input it could be what the pass reads, which
         * dla_conv_fused_args forbids. */
        const int zi = kind == DLA__LAUNCH_CONV_FUSED ? 4 : 0;
        const int ri = zi ? conv_result_field(cl->l.which) : -1;
        const dla__slot zs = cl->slot[zi];
        if (zs.kind != DLA__SLOT_BUFFER || f[zi].reads || !f[zi].view)
            continue;
        dla__cap_buffer *z = &c->bufs[zs.id];
        if (invoke_buffer(c, zs.id) || z->fresh >= 0 || z->fixed || z->first != s)
            continue;
        for (int i = zi ? ri : 1; i < n; i++) {
            const dla__slot ys = cl->slot[i];
            if (ys.kind != DLA__SLOT_BUFFER || ys.id == zs.id || !f[i].view || (zi && i != ri))
                continue;
            const dla__cap_buffer *y = &c->bufs[ys.id];
            const int r = root[ys.id]; /* roots point at themselves */
            dla__cap_buffer *rb = &c->bufs[r];
            if (invoke_buffer(c, ys.id) || y->fresh >= 0 || y->fixed || y->last != s ||
                rb->fixed || rb->bytes < z->bytes || !same_view(f[i].view, f[zi].view))
                continue;
            /* Every read of y by this step through that view. */
            int exact = 1;
            for (int j = 0; j < n; j++)
                if (j != zi && same_slot(cl->slot[j], ys) &&
                    (!f[j].view || !same_view(f[j].view, f[zi].view)))
                    exact = 0;
            if (!exact)
                continue;
            root[zs.id] = r;
            if (z->last > rb->last)
                rb->last = z->last;
            break;
        }
    }
}

/* Lifetimes of the intermediates, then the arena. */
static int lay_out(lowering *L, size_t *offset)
{
    dla__capture *c = L->c;
    dla__plan *p = L->p;
    /* Time is the step's place in the plan, which may differ from the
     * order the capture saw (consumers moved up to their producers). */
    for (int s = 0; s < L->nsteps; s++) {
        if (L->steps[s].kind == DLA__STEP_INVOKE) {
            const int k = L->steps[s].index;
            for (int i = 0; i < c->t->entries[k].nin; i++) {
                const dla__source *src = &c->sources[c->entries[k].src0 + i];
                if (src->kind == DLA__SRC_SPEC && c->specs[src->id].slot.kind == DLA__SLOT_BUFFER)
                    use(&c->bufs[c->specs[src->id].slot.id], s);
            }
            continue;
        }
        dla__cap_launch *cl = &c->launches[L->steps[s].index];
        dla__field f[DLA__LAUNCH_MAX_FIELDS];
        int n = dla__launch_fields(&cl->l, f);
        for (int i = 0; i < n; i++)
            if (cl->slot[i].kind == DLA__SLOT_BUFFER)
                use(&c->bufs[cl->slot[i].id], s);
    }
    dla__interval *iv = dla__calloc((size_t)(c->nbufs ? c->nbufs : 1), sizeof *iv);
    int *which = dla__calloc((size_t)(c->nbufs ? c->nbufs : 1), sizeof *which);
    int *root = dla__calloc((size_t)(c->nbufs ? c->nbufs : 1), sizeof *root);
    if (!iv || !which || !root) {
        dla__free(iv);
        dla__free(which);
        dla__free(root);
        return fail(p, "%s", "out of memory while planning");
    }
    results_in_place(L, root);
    int n = 0;
    for (int b = 0; b < c->nbufs; b++) {
        const dla__cap_buffer *buf = &c->bufs[b];
        if (invoke_buffer(c, b) || buf->fresh >= 0)
            continue;
        p->ninter++;
        p->inter_bytes += buf->bytes;
        if (root[b] != b)
            continue; /* in the memory of an earlier buffer */
        if (buf->fixed) /* filled once, read on every run: a place of its own */
            iv[n] = (dla__interval){buf->bytes, 0, (long)L->nsteps, 0};
        else if (buf->first < 0)
            continue; /* fused away, or never used */
        else
            iv[n] = (dla__interval){buf->bytes, buf->first, buf->last, 0};
        which[n++] = b;
    }
    dla_status st = dla__plan_memory(iv, n, &p->arena_bytes);
    for (int i = 0; st == DLA_OK && i < n; i++)
        offset[which[i]] = iv[i].offset;
    for (int b = 0; st == DLA_OK && b < c->nbufs; b++)
        if (root[b] != b)
            offset[b] = offset[root[b]];
    dla__free(iv);
    dla__free(which);
    dla__free(root);
    if (st != DLA_OK)
        return fail(p, "%s", "out of memory while planning");
    if (n) { /* even of 0 bytes: launches on empty intermediates name its memory */
        p->arena = dla__storage_alloc("dla_accelerate", p->dev, p->arena_bytes);
        if (!p->arena)
            return fail(p, "cannot allocate the arena: %s", dla_last_error());
    }
    return 1;
}

/* Points memory operand f of cl's launch at the arena, off bytes in. */
static int to_arena(lowering *L, const dla__cap_launch *cl, size_t off, const dla__field *f)
{
    if (off % f->elsize)
        return fail(L->p, "%s views an intermediate with wider elements than it was made of",
                    entry_name(L->c, cl->entry));
    *f->mem = L->p->arena->mem;
    if (f->eoff)
        *f->eoff += (int64_t)(off / f->elsize);
    else
        *f->boff += off;
    return 1;
}

/* Writes the fixed memory into the kept launches and lists the patches. */
static int finish_launches(lowering *L, const size_t *offset)
{
    dla__capture *c = L->c;
    dla__plan *p = L->p;
    int nl = 0, np = 0;
    for (int s = 0; s < L->nsteps; s++)
        if (L->steps[s].kind == DLA__STEP_LAUNCH)
            nl++;
    p->launches = dla__calloc((size_t)(nl ? nl : 1), sizeof *p->launches);
    p->patch0 = dla__calloc((size_t)nl + 1, sizeof *p->patch0);
    p->patches = dla__calloc((size_t)nl * DLA__LAUNCH_MAX_FIELDS + 1, sizeof *p->patches);
    p->steps = dla__calloc((size_t)(L->nsteps ? L->nsteps : 1), sizeof *p->steps);
    if (!p->launches || !p->patch0 || !p->patches || !p->steps)
        return fail(p, "%s", "out of memory while planning");
    for (int s = 0; s < L->nsteps; s++) {
        p->steps[s] = L->steps[s];
        if (L->steps[s].kind != DLA__STEP_LAUNCH)
            continue;
        dla__cap_launch *cl = &c->launches[L->steps[s].index];
        dla__launch *l = &p->launches[nl = p->nlaunches++];
        *l = cl->l;
        if (l->kind == DLA__LAUNCH_FUSED)
            cl->l.u.fused = NULL; /* the plan owns it now */
        else if (l->kind == DLA__LAUNCH_FUSED_REDUCE)
            cl->l.u.fused_reduce = NULL;
        else if (l->kind == DLA__LAUNCH_FUSED_MULTI)
            cl->l.u.fused_multi = NULL;
        else if (l->kind == DLA__LAUNCH_CONV_FUSED)
            cl->l.u.conv_fused = NULL;
        p->steps[s].index = nl;
        p->patch0[nl] = np;
        dla__field f[DLA__LAUNCH_MAX_FIELDS];
        int n = dla__launch_fields(l, f);
        for (int i = 0; i < n; i++) {
            dla__slot sl = lowered(c, cl->slot[i]);
            switch (sl.kind) {
            case DLA__SLOT_ARENA:
                if (!to_arena(L, cl, offset[sl.id], &f[i]))
                    return 0;
                break;
            case DLA__SLOT_INPUT: {
                int64_t in_off = c->in[sl.id]->offset;
                int64_t rel = f[i].eoff ? *f[i].eoff - in_off
                                        : (int64_t)*f[i].boff - in_off * (int64_t)
                                              dla_dtype_size(c->in[sl.id]->dtype);
                p->patches[np++] = (dla__patch){f[i].mem, f[i].eoff, f[i].boff, rel,
                                                dla_dtype_size(c->in[sl.id]->dtype), sl};
                break;
            }
            case DLA__SLOT_FRESH:
            case DLA__SLOT_OPVAL:
                p->patches[np++] = (dla__patch){f[i].mem, f[i].eoff, f[i].boff,
                                                f[i].eoff ? *f[i].eoff : (int64_t)*f[i].boff,
                                                f[i].elsize, sl};
                break;
            default: break; /* constants and absent operands stay as captured */
            }
        }
    }
    p->patch0[p->nlaunches] = np;
    p->npatches = np;
    p->nsteps = L->nsteps;
    return 1;
}

/* The checks of values that invocations make and kept launches read. */
static int list_checks(lowering *L)
{
    dla__capture *c = L->c;
    dla__plan *p = L->p;
    p->checks = dla__calloc((size_t)(c->nbufs ? c->nbufs : 1), sizeof *p->checks);
    if (!p->checks)
        return fail(p, "%s", "out of memory while planning");
    for (int b = 0; b < c->nbufs; b++) {
        const dla__cap_buffer *buf = &c->bufs[b];
        if (buf->opval < 0 || !invoke_buffer(c, b))
            continue;
        p->checks[p->nchecks++] = (dla__opval_check){buf->opval, buf->bytes, buf->opval_offset};
    }
    return 1;
}

/* Runs the fixed fills (fixed_fills) into their places of the arena:
 * once, now, on the plan's device, ahead of any run on its queue. */
static int finish_fixed(lowering *L, const size_t *offset)
{
    for (int b = 0; b < L->c->nbufs; b++) {
        if (!L->c->bufs[b].fixed)
            continue;
        const dla__cap_launch *cl = &L->c->launches[L->c->bufs[b].fixed - 1];
        dla__launch l = cl->l;
        dla__field f[DLA__LAUNCH_MAX_FIELDS];
        dla__launch_fields(&l, f);
        if (!to_arena(L, cl, offset[b], &f[0]))
            return 0;
        if (dla__k_launch(L->p->dev, &l) != DLA_OK)
            return fail(L->p, "%s", "a fill of a constant failed when the plan was made");
        L->p->nfixed++;
    }
    return 1;
}

int dla__plan_lower(dla__plan *p, dla__capture *c)
{
    lowering L = {p, c, NULL, 0, 0, 0, NULL, 0};
    size_t *offset = dla__calloc((size_t)(c->nbufs ? c->nbufs : 1), sizeof *offset);
    int ok = offset ? 1 : fail(p, "%s", "out of memory while planning");
    ok = ok && make_steps(&L) && place_operands(&L) && find_outputs(&L);
    if (ok) {
        single_reduces(&L);
        outer_products(&L);
        double *value = dla__calloc((size_t)(c->nbufs ? c->nbufs : 1), sizeof *value);
        char *known = dla__calloc((size_t)(c->nbufs ? c->nbufs : 1), 1);
        if (value && known) { /* without them, the fills stay: nothing else changes */
            fold_fills(&L, value, known);
            partial_fills(&L);
            dead_fills(&L);
        }
        dla__free(value);
        dla__free(known);
        gather_consumers(&L);
        conv_bias_out(&L);
        fuse(&L);
        conv_bias_back(&L);
        hoist_input_only(&L);
        fixed_fills(&L);
        conv_epilogues(&L);
        ok = !c->failed || fail(p, "%s", "out of memory while planning");
    }
    ok = ok && lay_out(&L, offset) && finish_launches(&L, offset) && finish_fixed(&L, offset) &&
         list_checks(&L);
    if (ok) {
        /* What the run needs of the record. */
        const dla__trace *t = c->t;
        p->entries = c->entries;
        c->entries = NULL;
        p->specs = c->specs;
        c->specs = NULL;
        p->nspecs = c->nspecs;
        for (int i = 0; i < p->nspecs; i++) {
            dla__spec *sp = &p->specs[i];
            sp->slot = lowered(c, sp->slot);
            if (sp->slot.kind == DLA__SLOT_ARENA)
                sp->slot.offset = offset[sp->slot.id];
        }
        p->sources = c->sources;
        c->sources = NULL;
        p->nsources = c->nsources;
        p->out_src = c->out_src;
        c->out_src = NULL;
        p->rt = dla__calloc((size_t)(t->nvalues ? t->nvalues : 1), sizeof *p->rt);
        ok = p->rt != NULL || fail(p, "%s", "out of memory while planning");
    }
    dla__free(offset);
    dla__free(L.steps);
    return ok;
}

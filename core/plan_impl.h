/*
 * plan_impl.h - what the planner's files share: the capture record, the
 * plan, and the steps from one to the other (internal to core/plan_*.c).
 *
 *   plan_capture.c  the capture (an observer of core/hooks.h) and the planning
 *                   replay that feeds it
 *   plan_lower.c    capture -> plan: slots, op invocations, fusion, patches
 *   plan_memory.c   lifetimes -> arena offsets
 *   plan_exec.c     the plans of a trace, running one
 *   plan_print.c    printing them, step by step
 */
#ifndef DLA_CORE_PLAN_IMPL_H
#define DLA_CORE_PLAN_IMPL_H

#include "core/hooks.h"
#include "core/plan.h"

#include <stdatomic.h>
#include <stdint.h>

/* Where a memory operand lives. During capture BUFFER names a storage made
 * by the replay; lowering turns each into ARENA (an intermediate) or FRESH
 * (an output's storage, made per call). */
typedef enum dla__slot_kind {
    DLA__SLOT_NONE,    /* no memory: an optional operand left out */
    DLA__SLOT_UNKNOWN, /* memory the capture could not place */
    DLA__SLOT_INPUT,   /* the storage of in[id] */
    DLA__SLOT_CONST,   /* the storage of the plan's constant id */
    DLA__SLOT_BUFFER,  /* capture buffer id */
    DLA__SLOT_ARENA,   /* the arena, at byte offset (lowered) */
    DLA__SLOT_FRESH,   /* output buffer id of this call */
    DLA__SLOT_OPVAL    /* the storage of value id, made by an op invocation */
} dla__slot_kind;

typedef struct dla__slot {
    dla__slot_kind kind;
    int id;
    size_t offset; /* ARENA: bytes */
} dla__slot;

/* The memory operands of a launch, in a fixed order per kind. */
/* fused_multi: y, the extras, the inputs; a convolution with an
 * epilogue: x, w, y, bias, the epilogue's y, its inputs */
#define DLA__LAUNCH_MAX_FIELDS (1 + DLA_FUSED_MAX_EXTRA + DLA_FUSED_MAX_INPUTS)
_Static_assert(DLA__LAUNCH_MAX_FIELDS >= 5 + DLA_FUSED_MAX_INPUTS,
               "a convolution's with an epilogue fit a launch's");

typedef struct dla__field {
    dla_mem *mem;
    int64_t *eoff;  /* offset in elements, or NULL */
    size_t *boff;   /* offset in bytes (byte copies), or NULL */
    size_t elsize;  /* bytes per element of the operand */
    dla_view *view; /* the operand when it is a view, else NULL */
    int written;
    int reads; /* written, and what was there read first: scatter_add adds
                  into y, a GEMM with beta != 0 into C */
} dla__field;

/* Fills f[] with l's memory operands; returns how many. */
int dla__launch_fields(dla__launch *l, dla__field *f);

/* The name of launch l for messages and listings: its kernel
 * (plan_print.c). */
const char *dla__launch_name(const dla__launch *l);

/* ------------------------------------------------------------- capture */

typedef struct dla__cap_buffer {
    const dla__storage *st; /* identity while alive */
    dla_mem mem;
    dla_device *dev;
    size_t bytes;
    int entry;         /* the entry that made it */
    long died;         /* when it was freed (event count); < 0: alive at the end */
    int opval;         /* made by an op invocation: the value it is the storage of; -1 */
    int64_t opval_offset; /* that value's offset then */
    /* lowering */
    int fresh;         /* output buffer index; -1 */
    long first, last;  /* first and last use by a kept step; first < 0: unused */
    int fixed;         /* filled once when the plan is made: 1 + its fill's launch (fixed_fills) */
} dla__cap_buffer;

typedef struct dla__cap_launch {
    dla__launch l;
    dla_device *dev;
    int entry;
    int dropped; /* fused away */
    dla__slot slot[DLA__LAUNCH_MAX_FIELDS];
} dla__cap_launch;

/* A tensor the plan must hand out at run time (an op invocation's input,
 * a trace output) that a kept launch made: a view on a slot. */
typedef struct dla__spec {
    int value;
    dla__slot slot;
    dla_dtype dtype;
    int ndims;
    int64_t dims[DLA_MAX_DIMS];
    int64_t strides[DLA_MAX_DIMS];
    int64_t offset; /* elements from the slot's start (INPUT: from the input's offset) */
    char format[DLA_MAX_DIMS + 1];
} dla__spec;

typedef enum dla__source_kind {
    DLA__SRC_INPUT, /* in[id] */
    DLA__SRC_CONST, /* the plan's constant id */
    DLA__SRC_RT,    /* the run's tensor of value id (an op invocation made it) */
    DLA__SRC_SPEC   /* spec id */
} dla__source_kind;

typedef struct dla__source {
    dla__source_kind kind;
    int id;
} dla__source;

typedef struct dla__cap_entry {
    int live;    /* not dead code */
    int invoke;  /* runs as the op itself */
    int src0;    /* invoke: sources of its inputs at plan->sources[src0..] */
} dla__cap_entry;

typedef struct dla__capture dla__capture;
struct dla__capture {
    dla__observer hook; /* first: the hooks hand it back as self */
    const dla__trace *t;
    dla_device *dev;
    dla_tensor *const *in;
    dla_tensor **consts;
    int entry; /* running now; -1 between entries */
    int transfer; /* the running entry moved data to or from the host */
    int drew;     /* the running entry launched the device's random kernel */
    long time; /* events so far */
    dla__cap_buffer *bufs;
    int nbufs, capbufs;
    dla__cap_launch *launches;
    int nlaunches, caplaunches;
    dla__cap_entry *entries;
    dla__spec *specs;
    int nspecs, capspecs;
    dla__source *sources; /* invoke inputs, then outputs */
    int nsources, capsources;
    int *out_src; /* per trace output: index into sources */
    dla_mem *out_mem; /* per trace output: its storage when the replay ended */
    int failed;   /* out of memory while capturing */
};

/* Fails c (and so the plan) for want of memory; keeps the first reason. */
void dla__capture_fail(dla__capture *c);
void dla__capture_free_record(dla__capture *c);

/* ---------------------------------------------------------------- plan */

typedef enum dla__step_kind { DLA__STEP_LAUNCH, DLA__STEP_INVOKE } dla__step_kind;

typedef struct dla__step {
    dla__step_kind kind;
    int index; /* launch index, or entry index */
} dla__step;

/* A per-call rewrite of one memory operand of a kept launch. */
typedef struct dla__patch {
    dla_mem *mem;
    int64_t *eoff;
    size_t *boff;
    int64_t rel; /* offset from the slot's start: elements (eoff) or bytes (boff) */
    size_t elsize;
    dla__slot slot; /* INPUT, FRESH or OPVAL */
} dla__patch;

/* What a value made by an op invocation must look like for the kept
 * launches that read its storage (checked on every run). */
typedef struct dla__opval_check {
    int value;
    size_t bytes;
    int64_t offset;
} dla__opval_check;

typedef enum dla__plan_state { DLA__PLAN_CAPTURING, DLA__PLAN_READY, DLA__PLAN_FAILED } dla__plan_state;

typedef struct dla__plan {
    struct dla__plan *next;
    dla_device *dev;
    atomic_int busy;
    _Atomic dla__plan_state state;
    char why[256]; /* FAILED: the reason */

    /* Inputs as planned: layout a run must match. */
    int nin;
    int *in_value;        /* in[i] is a value of the trace (not a repeat) */
    int *in_ndims;
    int64_t (*in_strides)[DLA_MAX_DIMS];
    int64_t *in_offset;
    dla_dtype *in_dtype;

    dla_tensor **consts; /* on dev, retained */
    int nconsts, hoisted;
    size_t hoisted_bytes;
    int nfixed; /* fills run once when the plan was made, not per run */

    dla__storage *arena; /* NULL: no intermediates */
    size_t arena_bytes, inter_bytes;
    int ninter;
    size_t *fresh_bytes;
    int nfresh;
    size_t fresh_total;

    dla__launch *launches;
    int nlaunches;
    int *patch0; /* launch i's per-call patches: patches[patch0[i] .. patch0[i + 1]) */
    dla__patch *patches;
    int npatches;
    dla__step *steps;
    int nsteps;
    dla__cap_entry *entries; /* per trace entry */
    dla__spec *specs;
    int nspecs;
    dla__source *sources;
    int nsources;
    int *out_src;
    dla__opval_check *checks;
    int nchecks;

    /* what lowering did */
    int ninvoke, ndead, nfused, fused_from;
    int nmulti; /* of nfused, launches of fused_multi */
    int nepilogue; /* of nfused, convolutions that run the fused launch after them */

    /* scratch of a run (one run at a time) */
    dla_tensor **rt;         /* per value */
    dla__storage **fresh;    /* per output buffer */

    /* ABI 1.5 plan_replay: the plan's id for the device (never reused),
     * whether its runs qualify (1 yes, 0 no, -1 not yet looked at), and
     * the memory of a run (its inputs, then its output buffers). */
    uint64_t serial;
    atomic_int replayable;
    dla_plan_mem *run_mems;

    atomic_long runs, fused_launches, device_runs;

    /* DLACCEL_PLAN_PROFILE (read when the plan is made): each run times its
     * steps one by one, waiting for the device after each, and leaves the
     * device's own whole-plan replay and hooks aside (a wait inside a
     * capture would break it). step_ns: per step, the nanoseconds summed
     * over the profiled runs (made with the plan); run_ns: the run now
     * going (added only when it succeeds). */
    int profile;
    uint64_t *step_ns, *run_ns;
    uint64_t run_total_ns; /* the profiled runs' wall time, all of it */
    atomic_long profiled_runs;
} dla__plan;

/* Capture -> plan. On failure the plan's why says what could not be
 * planned; returns nonzero on success. */
int dla__plan_lower(dla__plan *p, dla__capture *c);

/* Lays out n intervals (bytes, first..last use, inclusive) in one arena:
 * greedy by size, each at the best-fitting gap among those alive at the
 * same time, aligned as plan_memory.c says. Sets *arena_bytes. */
typedef struct dla__interval {
    size_t bytes;
    long first, last;
    size_t offset; /* out */
} dla__interval;
dla_status dla__plan_memory(dla__interval *iv, int n, size_t *arena_bytes);

/* The planning replay (plan_capture.c): runs t on in[] as the plain replay
 * does, watched, and lowers what it saw into p. The status is the run's:
 * its outputs are this call's results whether or not p could be made. */
dla_status dla__plan_capture(dla__plan *p, const dla__trace *t, dla_tensor *const *in,
                             dla_tensor **out);

void dla__plan_free(dla__plan *p);

/* Whether plans may use fused_multi (DLACCEL_PLAN is not single-result). */
int dla__plan_multi_allowed(void);
/* Whether a convolution's bias may move into the chain after it
 * (DLACCEL_PLAN is not conv-bias-in). */
int dla__plan_conv_bias_out_allowed(void);
/* Whether an elementwise result may take the memory of an input it reads
 * for the last time (DLACCEL_PLAN is not no-in-place). */
int dla__plan_in_place_allowed(void);
/* Whether plans may run a convolution and the fused program after it as
 * one launch (conv_forward_fused, conv_backward_data_fused; DLACCEL_PLAN is
 * not no-epilogue). */
int dla__plan_epilogue_allowed(void);

#endif

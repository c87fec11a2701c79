/*
 * trace.h - traces: what dla_accelerate records and replays (internal).
 *
 * A trace is an SSA program over values. Value 0..nin-1 are the function's
 * tensor inputs; constants are tensors the function used that no recorded
 * op made (a tensor made from host data inside the function, weights
 * reached through ctx): their values at recording time are baked in. Every
 * other value is an output (or a saved tensor) of an entry. Entries are the
 * ops dla__run_op ran while recording, forward and backward alike, in order.
 */
#ifndef DLA_CORE_TRACE_H
#define DLA_CORE_TRACE_H

#include "core/op.h"

#include <stdint.h>
#include <stdio.h>

typedef enum dla__value_kind { DLA__VALUE_INPUT, DLA__VALUE_CONST, DLA__VALUE_OP } dla__value_kind;

typedef struct dla__trace_value {
    dla__value_kind kind;
    int index; /* input number, constant number, or producing entry */
    dla_dtype dtype;
    int ndims;
    int64_t dims[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS + 1];
    int last_use; /* the last entry reading it; -1: none */
    int is_output;
} dla__trace_value;

typedef struct dla__trace_entry {
    const dla__op *op;
    void *attrs;
    size_t attrs_size;
    int nin, nout, nsaved;
    /* Nonzero when the op ran off the function's own tape: inside a
     * dla_feval the function called (its ops are on that call's tape
     * only), or while recording was paused (a plain dla_gradient sweep, a
     * conversion inside an op's wrapper). Eagerly such an op is on no tape
     * an enclosing dla_feval differentiates, so a replay runs it with
     * recording paused: replayed inside dla_feval (a dla_accel_call, a
     * dla_trace_replay), it must not carry a gradient the eager call did
     * not (until 2026-11-29 it did: a nested dla_feval's result was
     * differentiated through, and a replayed sweep's accumulate failed
     * the outer dla_gradient). */
    unsigned char off_tape;
    int in[DLA__OP_MAX_IO];
    int out[2 * DLA__OP_MAX_IO]; /* outputs, then saved tensors */
} dla__trace_entry;

typedef struct dla__trace {
    int refs; /* dla_trace handles and cache entries; atomic through accel's use */
    /* Of refs, those accelerated functions' cache entries hold (atomic):
     * dla_trace_release refuses to take one of them (docs/checks.md). */
    int cache_refs;
    uint32_t magic; /* DLA__HANDLE_TRACE; DEAD once freed (docs/checks.md) */
    dla__trace_entry *entries;
    int nentries;
    dla__trace_value *values;
    int nvalues;
    int nin, nout;
    /* Per input slot: the earlier slot whose tensor it was when recorded
     * (the same tensor passed twice is one value: the trace reads the
     * earlier slot in both places), or -1. NULL when no slot aliases, and
     * in a loaded trace of format 1.0, whose slots without a value alias
     * an earlier one the file does not name. */
    int *in_alias;
    int in_alias_unknown; /* such a 1.0 trace has a slot without a value */
    int *outputs;        /* nout value ids */
    dla_tensor **consts; /* nconsts, retained, as they were recorded */
    int nconsts;
    /* Per constant: nonzero for one made before the recording started
     * (reached through ctx or a global). The trace holds such a constant
     * through a private header on its storage (counted in the storage's
     * trace_views), so a storage no one else holds a header on is one the
     * caller let go of; const_writes is the storage's write count when it
     * was recorded (for one the function made: when the recording ended).
     * NULL for a loaded trace (nothing to check). */
    unsigned char *const_outer;
    uint64_t *const_writes;
    /* Per constant of a loaded trace: nonzero for one the file places on
     * a device of its own (format 1.3, section CDEV: recorded on another
     * device than the inputs'), which replays leave there. NULL when none
     * is, and in a recorded trace (its device says). */
    unsigned char *const_pinned;
    int inner_consts;    /* constants the function made while recording */
    uint64_t serial_start;
    int rng_entries;     /* entries that draw random numbers */
    int data_dependent;  /* host reads of traced values while recording */
    char data_dependent_note[256];
    double record_seconds;
    /* The device it was recorded on (input 1's; the current device without
     * inputs); NULL for a loaded trace. A saved trace names it as "the
     * replay device" wherever an op moved data to it. */
    dla_device *device;
    /* Its replay plans, one per device (core/plan_exec.c): a cache that
     * only grows while the trace lives, so a const trace may add to it. */
    struct dla__plan *plans;
    /* Set by the planner with its first plan: frees them (the recorder
     * that frees a trace does not call the planner by name). */
    void (*plans_free)(struct dla__trace *t);
} dla__trace;

/* ------------------------------------------------------------- recording */

/* Nonzero when this thread records a trace now. */
int dla__trace_recording(void);
/* Starts recording on this thread with in[0..nin-1] as the inputs.
 * Recordings do not nest: DLA_ERR_STATE if one is active. own_tape: the
 * function will run inside a dla_feval of its own, which opens after this
 * (dla_accel_feval), else at the current tape depth (dla_accel_call): its
 * own ops are those run there, the others are marked off_tape. */
dla_status dla__trace_begin(int nin, dla_tensor *const *in, int own_tape);
/* While recording, the recorder hears every outermost op run and every
 * host read of a value (dla_tensor_to_host...) through the hooks
 * (core/hooks.h). */
/* dla_gradient while recording: DLA_ERR_INVALID_ARGUMENT, with a message
 * naming wrt[i] and telling to pass it as an input, when wrt[i] is a
 * tensor made before the recording that is not one of its inputs (its
 * value would be baked into the trace). DLA_OK otherwise. */
dla_status dla__trace_check_wrt(const char *op, int n, dla_tensor *const *wrt);
/* Ends recording: out[0..nout-1] are the function's outputs. On success
 * *trace is a new trace (free with dla__trace_free). With ok == 0 the
 * recording is dropped and *trace is NULL. */
dla_status dla__trace_end(int ok, int nout, dla_tensor *const *out, dla__trace **trace);
void dla__trace_free(dla__trace *t);

/* -------------------------------------------------------------- replay */

/* Nonzero when a constant has changed since the recording: its storage
 * was written (any constant: one the function made and kept somewhere a
 * collective reached it, too), or, for one made before the recording, no
 * one but traces holds it any more (the caller replaced or released it);
 * why receives a sentence naming it. Cost: a few loads per constant. */
int dla__trace_stale(const dla__trace *t, char *why, size_t size);

/* Nonzero when a replay whose inputs are on dev reads constant j moved
 * there: when it is on the device the trace was recorded on (input 1's),
 * or the trace was loaded and the file did not place it on a device of
 * its own (it is on the device the trace was loaded on). A constant on another device (made on a current device other than
 * the inputs') stays there, as eagerly: the ops that read it (a move to
 * the inputs' device, an op on that device's values) and the results
 * that are it were recorded with it there. Until 2026-11-29 every
 * constant moved to input 1's device, so such a trace failed every
 * replay ("dla_mul: arguments a and b are on opencl:0 and cpu:0") or
 * returned a constant on another device than its recording call did. */
int dla__trace_const_moves(const dla__trace *t, int j, const dla_device *dev);

/* Runs the trace on in[0..nin-1] (the trace's dtypes and dims; any
 * device), giving +1 references in out[0..nout-1]. Ops are run through
 * dla__run_op, so a replay inside dla_feval or inside another recording is
 * recorded there too. */
dla_status dla__trace_replay(const dla__trace *t, dla_tensor *const *in, dla_tensor **out);

/* A result that is, or is a view of, a constant the trace made its own (one
 * the function made while recording; any of a loaded trace's) would hand
 * the caller the trace's storage: an in-place write there (a collective on
 * the result) would change every later replay, and every other result of
 * it, at once. Each such out[i] (a +1 reference) is replaced by a dense
 * copy. On failure every out[i] is released and set to NULL. Replays do
 * this themselves; the recording call does it once the trace is made. */
dla_status dla__trace_unalias(const dla__trace *t, int nout, dla_tensor **out);


/* Writes the trace as text (ops, shapes, RNG entries, constants, memory). */
void dla__trace_print(const dla__trace *t, FILE *f);

#endif

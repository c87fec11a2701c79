/*
 * dlaccel/accel.h - included by dlaccel.h; do not include it directly.
 *
 * dla_accelerate: MATLAB's dlaccelerate and AcceleratedFunction. The first
 * call with a new input pattern runs the function eagerly with a recorder
 * attached, which yields both the results and a trace (every op the call
 * ran, the backward of dla_gradient included); a later call with the same
 * pattern replays the trace without running the C function at all.
 *
 *     dla_accel *accfun = dla_accelerate(model_loss, NULL);
 *     for (...) {
 *         dla_tensor *out[3];
 *         dla_accel_feval(accfun, NULL, 3, (dla_tensor *[]){w, x, t}, 3, out); // dlfeval(accfun, ...)
 *         ...
 *     }
 *     printf("hit rate %.0f%%\n", dla_accel_hit_rate(accfun));
 *     dla_accel_free(accfun);
 *
 * Networks and other structured inputs (MATLAB's modelLoss(net, X, T)):
 * give the accelerated function a ctx kind and pass the network as ctx.
 *
 *     static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in,
 *                                  int nout, dla_tensor **out)
 *     {
 *         dla_net *net = ctx;                         // function [loss, grads, state] = modelLoss(net, X, T)
 *         int nl = dla_net_learnable_count(net);
 *         dla_tensor *y;
 *         dla_net_forward(net, 1, &in[0], 1, &y, out + 1 + nl, NULL);
 *         out[0] = dla_crossentropy(y, in[1], NULL);
 *         return dla_net_gradient(net, out[0], out + 1);
 *     }
 *     dla_accel *accfun = dla_accelerate(model_loss, &(dla_accel_options){
 *         .name = "modelLoss", .ctx_kind = dla_net_accel_kind()});
 *     dla_accel_feval(accfun, net, 2, (dla_tensor *[]){x, t}, nout, out);
 *
 * The kind lists the tensors inside ctx (a network's learnables, state and
 * fixed parameters): they are traced inputs of the call, after in[], so a
 * replay after an optimizer update computes with the new values, and the
 * recording function sees the network itself, whose tensors are those
 * inputs. The kind's key (a network's architecture and parameter sizes)
 * and each listed tensor's dtype, dims, format and device join the key;
 * their values do not. dla_accel_kind documents how to write a kind for a
 * struct of your own (a network with a scalar or an options struct).
 *
 * The cache key (MATLAB's): the function; for each tensor input its dtype,
 * dims, format and device, and (dlaccel's own) its strides and which
 * earlier input, if any, is the same tensor; the calling thread's current
 * device (where the function's own constants are made); the ctx kind's structure
 * bytes and the same of each tensor it lists; the values of the other
 * inputs (through dla_accel_options.key; without a key or a ctx kind, the
 * ctx pointer itself); the number of outputs; and whether the call records
 * gradients (dla_accel_feval) or not (dla_accel_call).
 *
 * What a trace bakes in: tensors the function used that are neither inputs
 * nor results of ops on them (a tensor made from host data or with dla_rand
 * inside the function, weights reached through ctx without a ctx kind) are
 * constants of the trace, with the values they had when it was recorded.
 * Pass what changes between calls as tensor inputs (or through a ctx
 * kind). Where it calls the function for real (a recording, the
 * tolerance check) it passes fresh handles for the tensor inputs, exact
 * views of the caller's (one per tensor given; the caller's own for a
 * tensor the ctx kind also lists), so a caller's tensor the function
 * reaches through an opaque ctx or a global is such a constant even when
 * it is also passed in: f(x) = x - mu recorded on f(mu) replays a - mu on
 * f(a). An input returned unchanged is handed back as the caller's
 * tensor. Two checks catch the mistake (docs/accelerate.md): while
 * recording, dla_gradient with respect to a tensor made before the call
 * that is not an input fails (DLA_ERR_INVALID_ARGUMENT, naming it); and a
 * replay whose trace baked such a tensor is a miss, re-recorded, when the
 * tensor was written since or the caller no longer holds it (replaced it
 * by an update, released it), with the reason in dla_accel_last_miss and
 * one warning (DLACCEL_LOG warn). A result that is a constant the
 * function made (or a view of one) is handed out as a copy of its own on
 * every call, so writing to it in place (a collective) changes neither
 * the trace nor other results. Random numbers drawn *like a traced
 * tensor* (dla_rand_like, dla_randn_like, dla_dropout) are RNG slots: every
 * replay draws new numbers from the thread's stream, the same ones eager
 * would draw. Control flow that depends on values read on the host
 * (dla_tensor_item, dla_tensor_to_host) is frozen in the trace: such a read
 * while recording warns once and marks the trace data-dependent.
 * CheckMode "tolerance" finds traces that differ from the function.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_ACCEL_H
#define DLACCEL_ACCEL_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dla_accel dla_accel;

/* Writes the values of the function's non-tensor inputs (read from ctx)
 * into buf, at most size bytes, and returns how many bytes they take (the
 * library calls again with a larger buf when that is more than size, and
 * the second answer must be the same). A call fails with
 * DLA_ERR_INVALID_ARGUMENT naming the key function when it writes past
 * size (seen up to 4096 bytes past), returns more than 2^30 bytes
 * ((size_t)-1 for a failure), or answers the second call otherwise. */
typedef size_t (*dla_accel_key_fn)(void *ctx, void *buf, size_t size);

/* A kind of structured ctx: a value holding tensors that the function
 * reads (a dla_net: dla_net_accel_kind() in net.h). For a struct of your
 * own, write the two functions: tensors lists the tensors inside (call
 * dla_net_accel_kind()->tensors for a network member, then add your
 * tensor members), key writes the structure and the non-tensor values the
 * function reads (the network's key, then a learning rate or an option
 * string's characters), as a dla_accel_key_fn does. */
typedef struct dla_accel_kind {
    /* Shown in miss reasons ("dla_net"). */
    const char *name;
    /* The tensors inside value, in an order fixed by its structure: writes
     * the first cap of them (borrowed; a good tensor each) into tensors and
     * returns how many there are; a negative number with dla_last_error
     * set when value cannot be used (a network not initialized). It is
     * called again with room for them all when there are more than cap
     * (the same count again). Writing past cap is an error naming the
     * kind (seen up to 64 entries past). */
    int (*tensors)(void *value, int cap, dla_tensor **tensors);
    /* The structure as key bytes (a network's architecture and parameter
     * sizes), as dla_accel_key_fn; NULL: none. */
    dla_accel_key_fn key;
} dla_accel_kind;

typedef struct dla_accel_options {
    /* Shown by dla_accel_describe ("modelLoss"); NULL: the address. */
    const char *name;
    /* NULL: the ctx pointer is the non-tensor part of the key (with a ctx
     * kind: the kind's key alone). With a ctx kind, these bytes follow the
     * kind's. */
    dla_accel_key_fn key;
    /* NULL: ctx is opaque. Otherwise ctx is a value of this kind, whose
     * tensors are traced inputs of every call (see above). */
    const dla_accel_kind *ctx_kind;
} dla_accel_options;

/* A new accelerated function for fn (opts may be NULL). Enabled, CacheSize
 * 50, CheckMode "none", CheckTolerance 1e-4. NULL when out of memory. */
DLA_API dla_accel *dla_accelerate(dla_function fn, const dla_accel_options *opts);
/* Frees af and its traces; NULL does nothing. */
DLA_API void dla_accel_free(dla_accel *af);

/* MATLAB dlfeval(accfun, ...): as dla_feval(fn, ...), gradients included,
 * served from a trace when the key matches one. Outputs are +1 references
 * (or the current scope's). Returns the status; out[i] are error tensors
 * on failure. Safe from several threads at once; inside a recording (an
 * accelerated function calling another) the call is recorded inline.
 * Inside an outer dla_feval it is, hit or miss, a dla_feval of its own:
 * no gradient of the outer function flows back through its ops. */
DLA_API dla_status dla_accel_feval(dla_accel *af, void *ctx, int nin, dla_tensor *const *in,
                                   int nout, dla_tensor **out);
/* MATLAB accfun(...): the same for a function that takes no gradients
 * (inference): fn runs in a scope, without a tape. As with dla_feval, an
 * output that is an error tensor fails the call with its status (the
 * other outputs stand) and no trace is kept. */
DLA_API dla_status dla_accel_call(dla_accel *af, void *ctx, int nin, dla_tensor *const *in,
                                  int nout, dla_tensor **out);

/* Properties, as AcceleratedFunction's. The setters, dla_accel_clear,
 * dla_accel_trace and dla_accel_print_trace refuse a NULL af ("argument af
 * is NULL") and a freed one (docs/checks.md) with
 * DLA_ERR_INVALID_ARGUMENT. */
DLA_API void dla_accel_set_enabled(dla_accel *af, int enabled); /* 0: every call runs fn */
DLA_API int dla_accel_enabled(const dla_accel *af);
/* Traces kept at most (>= 1; DLA_ERR_INVALID_ARGUMENT otherwise). Lowering
 * it evicts at once. Eviction removes the trace with the least
 * (ops recorded + 1) x (hits + 1) / (calls since its last use + 1): rarely
 * used cheap traces go first, a costly one that is hit often stays, and
 * among equals the least recently used goes; the trace of the current call
 * is never evicted by it. */
DLA_API dla_status dla_accel_set_cache_size(dla_accel *af, int size);
DLA_API int dla_accel_cache_size(const dla_accel *af);
/* Percent of calls (since creation or dla_accel_clear) served by a trace
 * (MATLAB's HitRate): a call that found its trace but whose replay failed
 * is a call and no hit.
 * This, Occupancy and dla_accel_describe may be read while other threads
 * call af (they read under its lock). */
DLA_API double dla_accel_hit_rate(const dla_accel *af);
/* Traces held now: a count (0 .. CacheSize), which dla_accel_trace and
 * dla_accel_print_trace index. */
DLA_API int dla_accel_occupancy(const dla_accel *af);
/* MATLAB's Occupancy: the percent of the cache in use, 100 x traces held
 * / CacheSize (one trace in the default cache of 50 is 2, as MATLAB's
 * example shows after its first dlfeval). dla_accel_describe shows this
 * one. 0 for a NULL af. */
DLA_API double dla_accel_occupancy_percent(const dla_accel *af);
/* "none" or "tolerance": with "tolerance", every call served by a trace
 * also runs fn and warns (DLACCEL_LOG warn) "Accelerated outputs differ
 * from underlying function outputs", naming the output and the largest
 * absolute and relative difference, when both exceed CheckTolerance, or
 * the two sizes and classes (and labels) when the output's dims, class or
 * format labels differ.
 * DLA_ERR_INVALID_ARGUMENT for another mode. */
DLA_API dla_status dla_accel_set_check_mode(dla_accel *af, const char *mode);
DLA_API const char *dla_accel_check_mode(const dla_accel *af);
DLA_API dla_status dla_accel_set_check_tolerance(dla_accel *af, double tolerance);
DLA_API double dla_accel_check_tolerance(const dla_accel *af);
/* Empties the cache and resets the statistics (MATLAB clearCache). */
DLA_API void dla_accel_clear(dla_accel *af);

/* Why the last call was not served by a trace ("first call", "input 2 dims
 * 28x28x1x128 -> 28x28x1x64", "ctx (dla_net) key changed (...)",
 * "a trace was found but its replay failed: <the error>",
 * "constant 1 (16x2 single), made outside the function and baked into its
 * trace, is held only by the trace now: ...", "Enabled is false: the
 * function ran itself", "called while another accelerated function
 * records: ...", "called inside an op's forward ...": a call from the
 * forward of an op, such as a custom layer's with a backward of its own
 * or an "adjoint" dla_ode45's solve, whose ops belong to that op, replays
 * a trace the cache has but records none, also while another accelerated
 * function records around the op, and a miss there runs the function
 * itself, as does a call while the plan of the trace around the op is
 * made, "... while the plan of that op's trace is made ..."; a stale
 * trace met there is left for a call that records, and the reason is the
 * stale one's); "" when it was. Valid until the next call on af
 * from any thread. Also logged at DLACCEL_LOG=info (the uncounted calls'
 * reasons, from "Enabled is false" on, are not). */
DLA_API const char *dla_accel_last_miss(const dla_accel *af);
/* The message of the last failed check ("" when none failed). */
DLA_API const char *dla_accel_last_check(const dla_accel *af);
/* The properties as MATLAB displays an AcceleratedFunction, into buf
 * (snprintf rules): HitRate and Occupancy as percentages. */
DLA_API int dla_accel_describe(const dla_accel *af, char *buf, size_t size);
/* Writes trace i (0 .. occupancy-1, most recently used first) as text:
 * ops with shapes, RNG slots, constants, memory, and per device its plan's
 * steps (with each step's time when the plan was made under
 * DLACCEL_PLAN_PROFILE=1: docs/environment.md). DLA_ERR_INVALID_ARGUMENT
 * when i is out of range. */
DLA_API dla_status dla_accel_print_trace(const dla_accel *af, int i, FILE *f);

/* ---------------------------------------------------------------- traces */

/* A recorded trace: device-independent (an SSA list of ops with
 * attributes, shapes, constants, RNG slots and outputs), reference counted. */
typedef struct dla_trace dla_trace;

/* Trace i of af (0 .. occupancy-1, most recently used first), +1
 * reference; NULL when i is out of range or af is NULL or freed. */
DLA_API dla_trace *dla_accel_trace(dla_accel *af, int i);
DLA_API dla_trace *dla_trace_retain(dla_trace *t);
/* Releases one reference. One more release than dla_accel_trace and
 * dla_trace_retain gave, while the trace is still cached, is refused and
 * logged (DLA_ERR_INVALID_ARGUMENT as the last error): the cache's own
 * reference is not the caller's. */
DLA_API void dla_trace_release(dla_trace *t);
/* Runs t on in[0..nin-1] (for a trace of an accelerated function with a
 * ctx kind: in[] followed by the tensors the kind lists), which must have the dtypes, dims and
 * formats the trace was recorded with (DLA_ERR_SHAPE / DLA_ERR_DTYPE /
 * DLA_ERR_FORMAT otherwise, naming the input), on any device: a trace recorded on one device replays on
 * another (what it moved to the device it was recorded on goes to the
 * replay's, as "the replay device" of dla_trace_save). An input recorded as the same tensor as an earlier one (f(x,
 * x)) is read from that earlier one: it must be given the same tensor
 * again (DLA_ERR_INVALID_ARGUMENT otherwise, naming both). Outputs as
 * dla_accel_call's. */
DLA_API dla_status dla_trace_replay(dla_trace *t, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out);
/* Writes t as text: ops with shapes, RNG slots, constants, memory. */
DLA_API dla_status dla_trace_print(const dla_trace *t, FILE *f);

/* Saves t to path in the trace file format (docs/trace-format.md, format
 * 1.3): each op by its registered name with its attributes, every value's
 * dtype, dims and format, the constants' data (copied from their device to
 * the host now), the outputs and the diagnostics (data-dependent reads).
 * The file is written under a temporary name and renamed over path, so
 * path holds the whole old file or the whole new one; a file replaced
 * keeps its permission bits, a new one gets 0666 less the umask.
 * DLA_ERR_IO with the path and the system's reason when it cannot be
 * written;
 * DLA_ERR_UNSUPPORTED when an op cannot be saved. A device an op moved
 * data to is saved by name ("cpu:0"), or, when it is the device the trace
 * was recorded on, as "the replay device". */
DLA_API dla_status dla_trace_save(const dla_trace *t, const char *path);
/* Loads a trace saved by dla_trace_save: *out is a new trace (+1
 * reference; NULL on failure) that replays with dla_trace_replay on any
 * device, as the saved one did. Its constants are made on the calling
 * thread's current device (replay copies them to another device on every
 * replay: load where you replay), but for one recorded on another device
 * than the inputs' (made on another current device), which is made and
 * stays on that device (DLA_ERR_NO_DEVICE when it cannot be had). A move to "the replay device" goes to
 * the device of the replay's first input; a move to a named device needs
 * that device here (DLA_ERR_NO_DEVICE otherwise). The file is checked
 * whole before anything is made; every failure names the file and the
 * problem: DLA_ERR_IO when it cannot be read, is not a regular file (a
 * folder, a FIFO: refused at once, without waiting for a writer), is not
 * a trace file, is truncated or corrupt (checksum, or contents that do
 * not add up);
 * DLA_ERR_UNSUPPORTED when it is a trace this library cannot read (a newer
 * format major version, another byte order or data layout, an op this
 * library does not have). Never trusts a count or an id it has not checked,
 * but a file made to pass the checksum with senseless attributes is
 * trusted: load files you would run. What a failure's message quotes
 * from the file (a section's or an op's name) has its control characters
 * as \xNN text. */
DLA_API dla_status dla_trace_load(const char *path, dla_trace **out);
/* The names a trace file may give its ops (every op of this library, each
 * under a unique name), for tools and tests: their count, and the i-th in
 * no particular order (NULL when i is out of range). */
DLA_API int dla_trace_op_count(void);
DLA_API const char *dla_trace_op_name(int i);

/* Random numbers drawn like x (its dims, dtype, format and device) from
 * the thread's stream: uniform [0, 1) and standard normal. Inside an
 * accelerated function they are RNG slots, drawn anew on every replay. */
DLA_API dla_tensor *dla_rand_like(dla_tensor *x);
DLA_API dla_tensor *dla_randn_like(dla_tensor *x);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_ACCEL_H */

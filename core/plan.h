/*
 * plan.h - the replay planner of dla_accelerate (internal).
 *
 * A trace is lowered once per device into a plan, by watching it run: the
 * first replay on a device runs in capture mode, where the capture hears
 * every storage allocation and free (tensor.c) and every kernel launch
 * (launch.c) through the hooks (core/hooks.h). From that record the planner keeps the launches themselves
 * with their memory operands mapped to slots (an input, a constant, an
 * arena region, an output buffer made per call), lays the intermediates out
 * in one arena by liveness, fuses chains of elementwise launches, and keeps
 * the constants on the device. Later replays on that device patch the
 * inputs' and outputs' memory into the kept launches and make them again,
 * with no shape checks, no allocation of intermediates and no op code.
 *
 * Ops whose forward is more than launches (random numbers drawn on the
 * host, uploads, device moves) stay ops: the plan runs them through
 * dla__run_op at their place, as the plain replay would.
 *
 * Whatever the planner cannot prove it handles makes it step aside: the
 * plain replay (trace_replay.c) runs instead, and the reason is printed
 * with the trace.
 */
#ifndef DLA_CORE_PLAN_H
#define DLA_CORE_PLAN_H

#include "core/launch.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <stdio.h>

/* ------------------------------------------- for trace_replay.c (plan_exec.c) */

/* Replays t on in[] through its plan for the inputs' device, making that
 * plan first when there is none. Returns 1 when it served the call (with
 * its status in *status and, on success, +1 references in out[]), 0 when
 * the plain replay must run instead: ops are being recorded (a tape or an
 * outer trace must see them), another thread runs the plan now, the inputs
 * are laid out otherwise than when the plan was made, the trace could not
 * be planned, or DLACCEL_PLAN=off. */
int dla__plan_replay(const dla__trace *t, dla_tensor *const *in, dla_tensor **out,
                     dla_status *status);

/* Nonzero while a plan is being made on this thread (its capture hears
 * every storage made and launch): the code running then is one of its
 * trace's ops, and what that op's forward makes must be made there, where
 * the capture places it (dla_accel_call replays nothing there). */
int dla__plan_capturing(void);

/* Writes the "memory plan" section of dla_trace_print: per device, the
 * arena against the sum of the intermediates, the outputs, the steps, the
 * fusion, the runs; or why there is no plan. */
void dla__plan_print(const dla__trace *t, FILE *f);

#endif

/*
 * plan_print.c - what dla_accel_print_trace says of a trace's plans: per
 * device, the memory plan, the counts of what lowering did, and the steps
 * a replay runs, one line each (a launch: its kernel, op or fused program
 * and the dims it reads and writes; an op that runs as itself: its name).
 * The list is how one sees what the planner fused and what it left alone.
 * It reads the launches' dims and kinds, which no run changes, and, to
 * mark a step "(in place)", their memory, which each run patches: a plan
 * is held, as a run holds it, while it is printed.
 */
#include "core/alloc.h"
#include "core/kernels.h"
#include "core/op.h"
#include "core/plan_impl.h"
#include "core/trace.h"

#include <dlaccel/plugin_kit.h> /* the ops' names */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The name of launch l for messages (plan_exec.c) and the listing: its kernel. */
const char *dla__launch_name(const dla__launch *l)
{
    static const char *const names[] = {
        [DLA__LAUNCH_FILL] = "fill",       [DLA__LAUNCH_COPY] = "strided_copy",
        [DLA__LAUNCH_CAST] = "cast",       [DLA__LAUNCH_UNARY] = "unary",
        [DLA__LAUNCH_BINARY] = "binary",   [DLA__LAUNCH_REDUCE] = "reduce",
        [DLA__LAUNCH_GEMM] = "gemm",       [DLA__LAUNCH_TERNARY] = "ternary",
        [DLA__LAUNCH_CONV] = "conv",       [DLA__LAUNCH_POOL] = "pool",
        [DLA__LAUNCH_INDEX] = "gather/scatter_add", [DLA__LAUNCH_COPY_BYTES] = "copy",
        [DLA__LAUNCH_FUSED] = "fused",     [DLA__LAUNCH_FUSED_REDUCE] = "fused_reduce",
        [DLA__LAUNCH_RANDOM] = "random",   [DLA__LAUNCH_FUSED_MULTI] = "fused_multi",
        [DLA__LAUNCH_CONV_FUSED] = "conv_fused",
    };
    return names[l->kind];
}

/* A fused program's instructions, by their ops: "[step mul]". */
static void print_program(FILE *f, const dla_fused_args *a)
{
    fputc('[', f);
    for (int k = 0; k < a->ninsns; k++) {
        const dla_fused_insn *in = &a->insns[k];
        fprintf(f, "%s%s", k ? " " : "",
                in->kind == DLA_FUSED_UNARY    ? dla_kit_unary_name((dla_unary_op)in->op)
                : in->kind == DLA_FUSED_BINARY ? dla_kit_binary_name((dla_binary_op)in->op)
                                               : "where");
    }
    fputc(']', f);
}

static int64_t numel(const dla_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->dims[d];
    return n;
}

static void print_dims(FILE *f, const dla_view *v)
{
    char buf[DLA_KIT_DIMS_BUF];
    fputs(dla_kit_dims_str(buf, sizeof buf, v->ndims, v->dims), f);
}

static void print_launch(FILE *f, dla__launch *l)
{
    switch (l->kind) {
    case DLA__LAUNCH_UNARY:
        fprintf(f, "unary %s", dla_kit_unary_name((dla_unary_op)l->u.unary.op));
        break;
    case DLA__LAUNCH_BINARY:
        fprintf(f, "binary %s", dla_kit_binary_name((dla_binary_op)l->u.binary.op));
        break;
    case DLA__LAUNCH_FUSED:
        fputs("fused ", f);
        print_program(f, l->u.fused);
        break;
    case DLA__LAUNCH_FUSED_REDUCE:
        fprintf(f, "fused_reduce%s ", l->u.fused_reduce->y2.mem ? " (pair)" : "");
        print_program(f, &l->u.fused_reduce->program);
        break;
    case DLA__LAUNCH_FUSED_MULTI:
        fprintf(f, "fused_multi (%d results) ", 1 + (int)l->u.fused_multi->nextra);
        print_program(f, &l->u.fused_multi->program);
        break;
    case DLA__LAUNCH_CONV_FUSED:
        /* The convolution pass, then its epilogue. */
        fprintf(f, "%s%s, then fused ",
                l->which == DLA_KERNEL_CONV_FORWARD_FUSED ? "conv_forward" : "conv_backward_data",
                l->u.conv_fused->conv.bias.mem ? " + bias" : "");
        print_program(f, &l->u.conv_fused->epilogue);
        break;
    case DLA__LAUNCH_CONV:
        /* A forward's bias may be its own or moved into the chain after it
         * (plan_lower.c's conv_bias_out): which, the listing says. */
        fprintf(f, "%s%s", dla__kernel_name(l->which),
                l->which == DLA_KERNEL_CONV_FORWARD && l->u.conv.bias.mem ? " + bias" : "");
        break;
    case DLA__LAUNCH_POOL:
    case DLA__LAUNCH_INDEX: fputs(dla__kernel_name(l->which), f); break;
    default: fputs(dla__launch_name(l), f);
    }
    /* The dims it reads (its largest operand) and writes (its first
     * written view): a full pass over an activation shows as such. */
    dla__field fs[DLA__LAUNCH_MAX_FIELDS];
    const int n = dla__launch_fields(l, fs);
    const dla_view *in = NULL, *out = NULL;
    for (int i = 0; i < n; i++) {
        if (!fs[i].view)
            continue;
        if (fs[i].written && !out)
            out = fs[i].view;
        else if (!fs[i].written && (!in || numel(fs[i].view) > numel(in)))
            in = fs[i].view;
    }
    if (in && (!out || numel(in) != numel(out))) {
        fputc(' ', f);
        print_dims(f, in);
    }
    if (out) {
        fputs(" -> ", f);
        print_dims(f, out);
    }
}

/* Whether l writes its result over one of its inputs in the arena
 * (plan_lower.c's results_in_place): the same memory and offset. A
 * convolution with an epilogue: the epilogue's y (field 4) over one of
 * the epilogue's inputs (fields 5 on; the pass's own result is one). */
static int in_place(const dla__plan *p, dla__launch *l)
{
    dla__field fs[DLA__LAUNCH_MAX_FIELDS];
    const int n = dla__launch_fields(l, fs);
    const int z = l->kind == DLA__LAUNCH_CONV_FUSED ? 4 : 0;
    if (!p->arena || n < z + 2 || !fs[z].written || !fs[z].view || *fs[z].mem != p->arena->mem)
        return 0;
    for (int i = z + 1; i < n; i++)
        if (fs[i].view && !fs[i].written && *fs[i].mem == *fs[z].mem &&
            *fs[i].eoff == *fs[z].eoff)
            return 1;
    return 0;
}

/* The kernel step s of p makes, for the profile's totals by kernel; an op
 * run as itself by its name. */
static const char *step_kernel(const dla__plan *p, const dla__trace *t, int s)
{
    if (p->steps[s].kind == DLA__STEP_INVOKE)
        return t->entries[p->steps[s].index].op->name;
    const dla__launch *l = &p->launches[p->steps[s].index];
    switch (l->kind) {
    case DLA__LAUNCH_CONV:
    case DLA__LAUNCH_POOL:
    case DLA__LAUNCH_INDEX:
    case DLA__LAUNCH_CONV_FUSED: return dla__kernel_name(l->which);
    default: return dla__launch_name(l);
    }
}

/* A time of ns nanoseconds as the profile prints it: microseconds below
 * 100 of them (a tiny network's steps), else milliseconds. */
static const char *profile_time(char *buf, size_t size, double ns)
{
    if (ns < 1e5)
        snprintf(buf, size, "%.2f us", ns * 1e-3);
    else
        snprintf(buf, size, "%.3f ms", ns * 1e-6);
    return buf;
}

/* DLACCEL_PLAN_PROFILE's totals: a run's time in its steps, and that
 * time by kernel, largest first. */
static void print_profile(const dla__plan *p, const dla__trace *t, FILE *f,
                          const uint64_t *step_ns, long nruns)
{
    enum { MAX_KERNELS = 48 };
    const char *name[MAX_KERNELS];
    uint64_t ns[MAX_KERNELS], total = 0;
    int n = 0;
    for (int s = 0; s < p->nsteps; s++) {
        const char *k = step_kernel(p, t, s);
        int i = 0;
        while (i < n && strcmp(name[i], k))
            i++;
        if (i == n && n == MAX_KERNELS)
            i = n - 1; /* more kinds than a listing can use: the last row takes the rest */
        else if (i == n)
            name[n] = k, ns[n++] = 0;
        ns[i] += step_ns[s];
        total += step_ns[s];
    }
    const double runs = (double)nruns;
    const uint64_t all = __atomic_load_n(&p->run_total_ns, __ATOMIC_RELAXED);
    char b1[32], b2[32];
    fprintf(f, "  plan profile on %s (DLACCEL_PLAN_PROFILE): %ld runs timed step by step, "
            "waiting for the device after each step; %s a run in its steps, %s in all (the "
            "host's own work around them included); by kernel:",
            p->dev->name, nruns, profile_time(b1, sizeof b1, (double)total / runs),
            profile_time(b2, sizeof b2, (double)all / runs));
    for (int printed = 0; printed < n; printed++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (name[i] && (best < 0 || ns[i] > ns[best]))
                best = i;
        fprintf(f, "%s %s %s (%.1f%%)", printed ? "," : "", name[best],
                profile_time(b1, sizeof b1, (double)ns[best] / runs),
                total ? 100.0 * (double)ns[best] / (double)total : 0.0);
        name[best] = NULL;
    }
    fputc('\n', f);
}

static void print_steps(const dla__plan *p, const dla__trace *t, FILE *f, const uint64_t *ns,
                        long runs)
{
    /* Profiled (ns): each step's mean time a run and its share of the run. */
    uint64_t total = 0;
    for (int s = 0; ns && s < p->nsteps; s++)
        total += ns[s];
    /* One unit for the column: microseconds for a run under 1 ms. */
    const int runs_in_us = runs > 0 && (double)total / (double)runs < 1e6;
    for (int s = 0; s < p->nsteps; s++) {
        fprintf(f, "    step %3d: ", s);
        if (p->steps[s].kind == DLA__STEP_INVOKE)
            fprintf(f, "op %s (runs as itself)", t->entries[p->steps[s].index].op->name);
        else {
            dla__launch *l = &p->launches[p->steps[s].index];
            print_launch(f, l);
            if (in_place(p, l))
                fputs(" (in place)", f);
        }
        /* Profiled: the step's mean time a run and its share, after the
         * step (the listing's lines keep their form). */
        if (ns && runs_in_us)
            fprintf(f, " | %.2f us %.1f%%", (double)ns[s] / (double)runs * 1e-3,
                    total ? 100.0 * (double)ns[s] / (double)total : 0.0);
        else if (ns)
            fprintf(f, " | %.3f ms %.1f%%", (double)ns[s] / (double)runs * 1e-6,
                    total ? 100.0 * (double)ns[s] / (double)total : 0.0);
        fputc('\n', f);
    }
}

void dla__plan_print(const dla__trace *t, FILE *f)
{
    const dla__plan *first = __atomic_load_n(&t->plans, __ATOMIC_ACQUIRE);
    if (!first) {
        fputs("  memory plan: none yet (one is made on the first replay on each device)\n", f);
        return;
    }
    for (const dla__plan *p = first; p; p = p->next) {
        dla__plan_state state = atomic_load(&p->state);
        if (state == DLA__PLAN_CAPTURING) {
            fprintf(f, "  memory plan on %s: being made\n", p->dev->name);
            continue;
        }
        if (state == DLA__PLAN_FAILED) {
            fprintf(f, "  memory plan on %s: none, replays run op by op: %s\n", p->dev->name,
                    p->why);
            continue;
        }
        /* Taken as a run takes it: a run patches its launches' memory and
         * offsets in place (and sets replayable on its first), which the
         * listing reads; printed while another thread replayed the trace,
         * the two raced (ThreadSanitizer, 2026-11-29). A call that finds it
         * taken meanwhile takes the plain replay, as for any busy plan. */
        dla__plan *held = (dla__plan *)p;
        while (atomic_exchange(&held->busy, 1))
            sched_yield();
        fprintf(f, "  memory plan on %s: arena %zu bytes for %d intermediates of %zu bytes "
                "(%.1f%%); %d output buffers of %zu bytes made per call; %d constants moved "
                "to the device once (%zu bytes); %d buffers of constants filled once, when the "
                "plan was made\n", p->dev->name, p->arena_bytes, p->ninter,
                p->inter_bytes, p->inter_bytes ? 100.0 * (double)p->arena_bytes / (double)p->inter_bytes
                                               : 0.0,
                p->nfresh, p->fresh_total, p->hoisted, p->hoisted_bytes, p->nfixed);
        fprintf(f, "  plan steps on %s: %d launches (%d fused, from %d), %d ops run as "
                "themselves, %d dead ops left out; %ld runs, %ld fused launches; %d fused "
                "launches keep several results; %d run as a convolution's epilogue\n",
                p->dev->name, p->nlaunches, p->nfused, p->fused_from, p->ninvoke, p->ndead,
                atomic_load(&p->runs), atomic_load(&p->fused_launches), p->nmulti,
                p->nepilogue);
        if (p->replayable == 1)
            fprintf(f, "  plan runs on %s offered whole to the device (plan_replay): %ld run "
                    "by the device itself as one (the cuda plugin: a CUDA graph), the others "
                    "launch by launch\n",
                    p->dev->name, atomic_load(&p->device_runs));
        /* The sums read once (a run on another thread may be adding), so
         * that the shares add up; without memory for them, no times. */
        const long runs = p->step_ns ? atomic_load(&p->profiled_runs) : 0;
        uint64_t *ns = runs > 0 ? dla__malloc((size_t)p->nsteps * sizeof *ns + 1) : NULL;
        for (int s = 0; ns && s < p->nsteps; s++)
            ns[s] = __atomic_load_n(&p->step_ns[s], __ATOMIC_RELAXED);
        if (ns)
            print_profile(p, t, f, ns, runs);
        else if (p->profile)
            fprintf(f, "  plan profile on %s (DLACCEL_PLAN_PROFILE): %s\n", p->dev->name,
                    runs > 0 ? "out of memory for the listing's times"
                             : "no run timed yet (the first call makes the plan; the calls "
                               "after it are timed)");
        print_steps(p, t, f, ns, runs);
        atomic_store(&held->busy, 0);
        dla__free(ns);
    }
}

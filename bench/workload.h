/*
 * workload.h - what a benchmark workload is, and the tables that list them.
 *
 * A workload is one table entry: a name for --workload to match, the work
 * one run does (flops or bytes, so the report can turn time into a rate), and
 * setup/run/teardown. Device workloads run once per device with that device
 * current; reference workloads (direct OpenBLAS, memcpy) run once on the host
 * and give the device figures something to be compared with. A device
 * workload names its reference and the target ratio from the issue that set
 * it, so the comparison a person needs is printed beside the figure.
 *
 * Adding a workload is appending one entry to a table (workloads_core.c for
 * the tensor ops of issue 2; a later area gets its own workloads_<area>.c
 * and one line in workloads.c).
 */
#ifndef DLA_BENCH_WORKLOAD_H
#define DLA_BENCH_WORKLOAD_H

#include <dlaccel.h>
#include <stddef.h>

typedef enum bench_unit {
    BENCH_FLOPS, /* reported as GFLOP/s */
    BENCH_BYTES  /* reported as GB/s (1e9 bytes), reads plus writes */
} bench_unit;

typedef struct bench_workload bench_workload;

struct bench_workload {
    /* What --workload matches and the report prints ("sgemm1024"). */
    const char *name;
    bench_unit unit;
    /* Flops or bytes moved by one call of run(). */
    double work;
    /* A size for setup (matrix order, bytes...): one setup serves a family. */
    int64_t size;
    /* A workload whose size is its batch (0 there: 128): the batch this
     * entry runs at and its work is for; 0 for a workload without a batch.
     * dlaccel-bench --batch N runs such an entry at N (bench/batch.c). */
    int64_t batch;
    /* Makes the operands; *state is handed to run and teardown. Runs with
     * the device under test current. Not timed. A failure is reported with
     * its status and dla_last_error() (or the message it printed). */
    dla_status (*setup)(const bench_workload *w, void **state);
    /* One timed call. Whatever it allocates it releases before returning:
     * what a user pays for an op (the result's allocation) is in the time. */
    dla_status (*run)(void *state);
    /* Frees what setup made; NULL-safe state. */
    void (*teardown)(void *state);

    /* A device workload: the subject of its ratio line ("sgemm 1024").
     * A reference workload: how ratio lines quote it ("cblas"). */
    const char *label;
    /* The comparison (device workloads only): a reference workload's name,
     * NULL for none, and the ratio to reach, 0 when no target is set. */
    const char *reference;
    double target;
    /* A line of figures beside the timing (a plan's memory), written into
     * buf after the timed calls, from the workload's state and its median;
     * NULL for none. */
    void (*note)(void *state, double median_ms, char *buf, size_t size);
};

/* dlaccel-bench --print-plan: a workload's teardown hands each accelerated
 * function it made to bench_print_plan, which writes its most recent
 * trace and plans (dla_accel_print_trace) to stderr when the option was
 * given (with DLACCEL_PLAN_PROFILE=1, each step's time), and does nothing
 * otherwise. NULL af: nothing. */
void bench_print_plan(const dla_accel *af);

/* The tables. Each ends with an entry whose name is NULL. */
extern const bench_workload bench_core_workloads[];      /* workloads_core.c */
extern const bench_workload bench_reference_workloads[]; /* reference.c */
extern const bench_workload bench_autodiff_workloads[];  /* workloads_autodiff.c */
extern const bench_workload bench_cnn_workloads[];       /* workloads_cnn.c */
extern const bench_workload bench_slice_workloads[];     /* workloads_slice.c */
extern const bench_workload bench_conv_workloads[];      /* workloads_conv.c */
extern const bench_workload bench_nn_workloads[];        /* workloads_nn.c */
extern const bench_workload bench_replay_workloads[];    /* workloads_replay.c */
extern const bench_workload bench_resnet_workloads[];    /* workloads_resnet.c */
extern const bench_workload bench_higher_workloads[];    /* workloads_higher.c */
extern const bench_workload bench_attention_workloads[]; /* workloads_attention.c */
extern const bench_workload bench_ode_workloads[];       /* workloads_ode.c */
extern const bench_workload bench_lstm_workloads[];      /* workloads_lstm.c */
extern const bench_workload bench_mobile_workloads[];    /* workloads_netstep.c */
/* The eager runs the replays are timed beside (workloads_replay.c). */
extern const bench_workload bench_replay_reference_workloads[];
/* The eager run the higher-derivative replay is timed beside
 * (workloads_higher.c). */
extern const bench_workload bench_higher_reference_workloads[];
/* The eager run the attention replay is timed beside (workloads_attention.c). */
extern const bench_workload bench_attention_reference_workloads[];
/* The eager run the neural ODE's replay and adjoint are timed beside
 * (workloads_ode.c). */
extern const bench_workload bench_ode_reference_workloads[];
/* The im2col + OpenBLAS references of the conv workloads (workloads_conv.c). */
extern const bench_workload bench_conv_reference_workloads[];

/* Every device workload table, in report order; ends with NULL. */
extern const bench_workload *const bench_device_tables[];

/* The reference workload called name; NULL when none. */
const bench_workload *bench_find_reference(const char *name);

#endif

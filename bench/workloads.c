/*
 * workloads.c - the list of workload tables, and finding a reference by name.
 *
 * A new area (convolutions, training steps, replay) brings its own
 * workloads_<area>.c with a table and adds one line here.
 */
#include "bench/workload.h"

#include <string.h>

const bench_workload *const bench_device_tables[] = {
    bench_core_workloads,
    bench_autodiff_workloads,
    bench_cnn_workloads,
    bench_slice_workloads,
    bench_conv_workloads,
    bench_nn_workloads,
    bench_replay_workloads,
    bench_resnet_workloads,
    bench_higher_workloads,
    bench_attention_workloads,
    bench_ode_workloads,
    bench_lstm_workloads,
    bench_mobile_workloads,
    NULL,
};

/* The tables references are found in. */
static const bench_workload *const reference_tables[] = {
    bench_reference_workloads,
    bench_conv_reference_workloads,
    bench_replay_reference_workloads,
    bench_higher_reference_workloads,
    bench_attention_reference_workloads,
    bench_ode_reference_workloads,
    NULL,
};

const bench_workload *bench_find_reference(const char *name)
{
    for (int t = 0; name && reference_tables[t]; t++)
        for (const bench_workload *w = reference_tables[t]; w->name; w++)
            if (strcmp(w->name, name) == 0)
                return w;
    return NULL;
}

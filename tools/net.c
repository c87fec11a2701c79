/*
 * net.c - `dlaccel net FILE`: a network saved with dla_net_save (a
 * trainnet checkpoint, an example's --save), as MATLAB displays one: the
 * summary of its layers, then each learnable with its dims, dtype and the
 * factors trainnet applies to it (a learn-rate factor of 0 is a frozen
 * one), then its state.
 *
 * Loading is the whole check: a file the library refuses is reported with
 * the library's message and exit status 1.
 */
#include "tools/commands.h"

#include <dlaccel.h>
#include <dlaccel/net.h>
#include <stdio.h>
#include <string.h>

/* One row: layer/parameter, dims and dtype, and the factors (learnables). */
static void print_row(dla_table *t, int r, int factors)
{
    char name[160], dims[96];
    snprintf(name, sizeof name, "%s/%s", dla_table_layer(t, r), dla_table_parameter(t, r));
    dla_tensor *v = dla_table_value(t, r);
    int64_t d[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(v, d);
    size_t used = 0;
    dims[0] = '\0';
    for (int k = 0; k < nd && used < sizeof dims; k++) {
        int w = snprintf(dims + used, sizeof dims - used, "%s%lld", k ? "x" : "", (long long)d[k]);
        used += w > 0 ? (size_t)w : 0;
    }
    printf("  %-32s %-16s ", name, dims);
    printf(factors ? "%-7s" : "%s", dla_dtype_name(dla_tensor_dtype(v)));
    if (factors) {
        const double lr = dla_table_learn_rate_factor(t, r);
        printf(" %12g %10g%s", lr, dla_table_l2_factor(t, r), lr == 0 ? "  frozen" : "");
    }
    printf("\n");
}

int dla_tool_net(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "dlaccel net: takes one file, a network saved with dla_net_save\n");
        return DLA_TOOL_USAGE;
    }
    dla_net *net = NULL;
    if (dla_net_load(argv[1], &net) != DLA_OK) {
        fprintf(stderr, "dlaccel net: %s\n", dla_last_error());
        return DLA_TOOL_FAILED;
    }
    printf("%s:\n", argv[1]);
    dla_status st = dla_net_print(net, stdout);
    dla_table *l = dla_net_learnables(net), *s = dla_net_state(net);
    char title[64];
    snprintf(title, sizeof title, "Learnables (%d)", dla_table_count(l));
    printf("\n%-34s %-16s %-7s %12s %10s\n", title, "dims", "dtype", "learn rate", "L2");
    for (int r = 0; r < dla_table_count(l); r++)
        print_row(l, r, 1);
    printf("\nState (%d)\n", dla_table_count(s));
    for (int r = 0; r < dla_table_count(s); r++)
        print_row(s, r, 0);
    dla_net_free(net);
    if (st != DLA_OK || fflush(stdout) != 0) {
        fprintf(stderr, "dlaccel net: cannot write the text\n");
        return DLA_TOOL_FAILED;
    }
    return DLA_TOOL_OK;
}

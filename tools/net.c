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

/* Display columns of s (UTF-8: continuation bytes take none). */
static int columns(const char *s)
{
    int c = 0;
    for (; *s; s++)
        c += ((unsigned char)*s & 0xC0) != 0x80;
    return c;
}

/* The name column's width: "layer/parameter" of every row, whole (layer
 * names have any length: cut to a buffer's size, two long names sharing
 * their start, and a layer's Weights and Bias, showed as one), at least
 * 32 columns. */
static int name_width(dla_table *const *tables, int n)
{
    int w = 32;
    for (int k = 0; k < n; k++)
        for (int r = 0; r < dla_table_count(tables[k]); r++) {
            int c = columns(dla_table_layer(tables[k], r)) + 1 +
                    columns(dla_table_parameter(tables[k], r));
            w = c > w ? c : w;
        }
    return w;
}

/* One row: layer/parameter, dims and dtype, and the factors (learnables). */
static void print_row(dla_table *t, int r, int factors, int width)
{
    char dims[96];
    const char *layer = dla_table_layer(t, r), *param = dla_table_parameter(t, r);
    dla_tensor *v = dla_table_value(t, r);
    int64_t d[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(v, d);
    size_t used = 0;
    dims[0] = '\0';
    for (int k = 0; k < nd && used < sizeof dims; k++) {
        int w = snprintf(dims + used, sizeof dims - used, "%s%lld", k ? "x" : "", (long long)d[k]);
        used += w > 0 ? (size_t)w : 0;
    }
    printf("  %s/%s%*s %-16s ", layer, param, width - columns(layer) - 1 - columns(param), "",
           dims);
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
    const int width = name_width((dla_table *[]){l, s}, 2);
    char title[64];
    snprintf(title, sizeof title, "Learnables (%d)", dla_table_count(l));
    printf("\n%-*s %-16s %-7s %12s %10s\n", width + 2, title, "dims", "dtype", "learn rate", "L2");
    for (int r = 0; r < dla_table_count(l); r++)
        print_row(l, r, 1, width);
    printf("\nState (%d)\n", dla_table_count(s));
    for (int r = 0; r < dla_table_count(s); r++)
        print_row(s, r, 0, width);
    dla_net_free(net);
    if (st != DLA_OK || fflush(stdout) != 0) {
        fprintf(stderr, "dlaccel net: cannot write the text\n");
        return DLA_TOOL_FAILED;
    }
    return DLA_TOOL_OK;
}

/*
 * net_factors.c - a network's learn-rate and L2 factors by layer and
 * parameter name (MATLAB's setLearnRateFactor, getLearnRateFactor,
 * setL2Factor, getL2Factor on a dlnetwork). They live in the Learnables
 * table's rows, which a re-initialization keeps (nn/net_init.c), so a
 * layer frozen before dla_net_replace_layer stays frozen after it.
 */
#include "nn/nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Row r is a learnable of layer: parameter's, or any (NULL). */
static int row_matches(const dla_table *t, int r, const char *layer, const char *parameter)
{
    return !strcmp(t->layer[r], layer) && (!parameter || !strcmp(t->param[r], parameter));
}

/* The reason no row matches, as an error of fn. */
static dla_status no_rows(const dla_net *net, const char *layer, const char *parameter,
                          const char *fn)
{
    const dla_table *t = &net->tables[DLA__LEARNABLE];
    if (dla__net_find(net, layer) < 0)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: no layer is named '%.200s'", fn, layer);
    char names[512] = "";
    size_t used = 0;
    for (int r = 0; r < t->count && used < sizeof names; r++)
        if (!strcmp(t->layer[r], layer)) {
            int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                             t->param[r]);
            used += w > 0 ? (size_t)w : 0;
        }
    if (names[0])
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: layer '%s' has no learnable '%.200s' "
                            "(its learnables: %s)", fn, layer, parameter, names);
    return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: layer '%s' has no learnables%s", fn, layer,
                        net->initialized ? "" : " yet (dla_net_init makes a new layer's)");
}

static dla_status set_factor(dla_net *net, const char *layer, const char *parameter, double f,
                             int l2, const char *fn)
{
    if (!net || !layer)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", fn,
                            net ? "layer" : "net");
    if (dla__net_check(net, fn) != DLA_OK)
        return dla_last_status();
    /* Finite and >= 0, as dla_table_set_factors wants them. */
    if (!(f >= 0) || !isfinite(f))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: factor %g for '%s/%s': a factor is "
                            "finite and >= 0 (0 freezes)", fn, f, layer, parameter ? parameter : "*");
    dla_table *t = &net->tables[DLA__LEARNABLE];
    int found = 0;
    for (int r = 0; r < t->count; r++)
        if (row_matches(t, r, layer, parameter)) {
            (l2 ? t->l2_factor : t->lr_factor)[r] = f;
            found++;
        }
    return found ? DLA_OK : no_rows(net, layer, parameter, fn);
}

static double get_factor(const dla_net *net, const char *layer, const char *parameter, int l2,
                         const char *fn)
{
    if (!net || !layer || !parameter) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", fn,
                     !net ? "net" : !layer ? "layer" : "parameter");
        return NAN;
    }
    if (dla__net_check(net, fn) != DLA_OK)
        return NAN;
    const dla_table *t = &net->tables[DLA__LEARNABLE];
    for (int r = 0; r < t->count; r++)
        if (row_matches(t, r, layer, parameter))
            return (l2 ? t->l2_factor : t->lr_factor)[r];
    no_rows(net, layer, parameter, fn);
    return NAN;
}

DLA_API dla_status dla_net_set_learn_rate_factor(dla_net *net, const char *layer,
                                                 const char *parameter, double factor)
{
    return set_factor(net, layer, parameter, factor, 0, "dla_net_set_learn_rate_factor");
}

DLA_API dla_status dla_net_set_l2_factor(dla_net *net, const char *layer, const char *parameter,
                                         double factor)
{
    return set_factor(net, layer, parameter, factor, 1, "dla_net_set_l2_factor");
}

DLA_API double dla_net_learn_rate_factor(const dla_net *net, const char *layer,
                                         const char *parameter)
{
    return get_factor(net, layer, parameter, 0, "dla_net_learn_rate_factor");
}

DLA_API double dla_net_l2_factor(const dla_net *net, const char *layer, const char *parameter)
{
    return get_factor(net, layer, parameter, 1, "dla_net_l2_factor");
}

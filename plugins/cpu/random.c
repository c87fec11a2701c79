/*
 * random.c - the cpu plugin's random kernel (ABI 1.3): numbers of the
 * library's Philox stream written into any view.
 *
 * The loops are core/philox.c's, compiled into this plugin (the stream's
 * definition, core/philox_stream.h, is shared with the host and the
 * opencl plugin), so the cpu plugin is the reference by construction: it
 * gives exactly what the host drew before ABI 1.3, and what every other
 * plugin's kernel must match bit for bit.
 */
#include "core/philox.h"
#include "plugins/cpu/cpu.h"
#include "plugins/cpu/strided.h"

dla_status dla__cpu_random(void *dev, const dla_random_args *args)
{
    const dla_plugin_host *h = dla__cpu_host;
    if (args == NULL || args->struct_size < sizeof *args)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "cpu random: argument args: struct_size %zu, "
                        "ABI 1.3 needs %zu", args ? args->struct_size : 0, sizeof *args);
    if (args->dist != DLA_RANDOM_UNIFORM && args->dist != DLA_RANDOM_NORMAL)
        return h->error(DLA_ERR_UNSUPPORTED, "cpu random: argument dist: %d is not a "
                        "dla_random_dist this plugin knows", (int)args->dist);
    const dla_view *y = &args->y;
    dla_status s = dla__cpu_check_view("random", "y", y);
    if (s == DLA_OK)
        s = dla__cpu_check_float("random", "y", y);
    if (s != DLA_OK)
        return s;
    const int f64 = y->dtype == DLA_F64;
    char *base = (char *)y->mem + (size_t)y->offset * (f64 ? 8 : 4);
    if (y->mem)
        dla__philox_strided(args->seed, args->counter, args->dist == DLA_RANDOM_NORMAL, f64, base,
                            y->ndims, y->dims, y->strides);
    return DLA_OK;
}

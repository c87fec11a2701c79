/*
 * random.c - the cpu plugin's random kernel (ABI 1.3): numbers of the
 * library's Philox stream written into any view.
 *
 * The loops are core/philox.c's, compiled into this plugin (the stream's
 * definition, the plugin kit's dlaccel/plugin_philox.h, is shared with
 * the host and the opencl plugin), so the cpu plugin is the reference by
 * construction: it gives exactly what the host drew before ABI 1.3, and
 * what every other plugin's kernel must match bit for bit.
 */
#include "core/philox.h"
#include "plugins/cpu/cpu.h"
#include "plugins/cpu/strided.h"

dla_status dla__cpu_random(void *dev, const dla_random_args *args)
{
    const dla_status s = dla_kit_check_random(&dla__cpu_kit, args);
    if (s != DLA_OK)
        return s;
    const dla_view *y = &args->y;
    const int f64 = y->dtype == DLA_F64;
    char *base = (char *)y->mem + (size_t)y->offset * (f64 ? 8 : 4);
    if (y->mem)
        dla__philox_strided(args->seed, args->counter, args->dist == DLA_RANDOM_NORMAL, f64, base,
                            y->ndims, y->dims, y->strides);
    return DLA_OK;
}

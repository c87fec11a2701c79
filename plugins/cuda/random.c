/*
 * random.c - the random kernel (ABI 1.3) on CUDA devices: the Philox
 * stream of dla_random_args, the same bits as the cpu plugin, drawn on the
 * GPU by random_kernels.cu (one thread per block of the stream) into any
 * strided y.
 */
#include "plugins/cuda/cu.h"
#include "plugins/cuda/random_kern.h"

dla_status dla__cu_random(void *dev, const dla_random_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "random");
    if (s)
        return s;
    s = dla_kit_check_random(&d->kit, args);
    if (s != DLA_OK || dla_kit_numel(&args->y) == 0)
        return s;
    const int normal = args->dist == DLA_RANDOM_NORMAL, f64 = args->y.dtype == DLA_F64;
    const dla_view *views[] = {&args->y};
    dla__cu_space sp;
    dla__cu_vw vw[1];
    dla__cu_space_of(1, views, &sp, vw);
    const int per = normal || f64 ? 2 : 4;
    const int64_t nblocks = (sp.n + per - 1) / per;
    return dla__cu_err(dla__cu_launch_random(d->stream, dla__cu_blocks(d, nblocks), &sp, &vw[0],
                                             normal, f64, args->seed, args->counter),
                       "random: kernel launch");
}

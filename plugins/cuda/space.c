/*
 * space.c - the helpers every kernel family of the cuda plugin uses:
 * making the device current, CUDA errors as dla_status values, launch
 * sizes, scratch memory, and the coalesced space of a set of views.
 */
#include "plugins/cuda/cu.h"
#include "plugins/cuda/fastdiv.h"

#include <string.h>

/* The errors of a kernel that failed while running. They are sticky:
 * every later call of the context returns them, whatever it is. */
static int failed_while_running(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
        return 1;
    default:
        return 0;
    }
}

/* e with the note that it may be earlier work's: launches and replays
 * return before their kernels have run (plan_end too, unless
 * DLACCEL_CUDA_PLAN_WAIT=1), so a wait, or any call after a kernel failed
 * while running, is where the failure is first seen. */
static dla_status queued_err(cudaError_t e, const char *what)
{
    return dla__cu_host->error(DLA_ERR_DEVICE,
                               "cuda %s: %s (%s); it may come from a kernel queued before "
                               "this call that failed while running (DLACCEL_CUDA_PLAN_WAIT=1 "
                               "makes each replay wait, so that such a failure is the "
                               "replay's error; CUDA_LAUNCH_BLOCKING=1, each launch)",
                               what, cudaGetErrorString(e), cudaGetErrorName(e));
}

dla_status dla__cu_err(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return DLA_OK;
    if (failed_while_running(e))
        return queued_err(e, what);
    return dla__cu_host->error(e == cudaErrorMemoryAllocation ? DLA_ERR_OUT_OF_MEMORY
                                                              : DLA_ERR_DEVICE,
                               "cuda %s: %s (%s)", what, cudaGetErrorString(e),
                               cudaGetErrorName(e));
}

dla_status dla__cu_wait_err(cudaError_t e, const char *what)
{
    if (e == cudaSuccess || e == cudaErrorMemoryAllocation)
        return dla__cu_err(e, what);
    return queued_err(e, what);
}

dla_status dla__cu_launched(const char *what)
{
    return dla__cu_err(cudaGetLastError(), what);
}

/* A per-thread address names the thread; the device this thread runs a
 * plan on, if any. */
static __thread char thread_tag;
static __thread const dla__cu_device *thread_plan;

int dla__cu_planning_here(const dla__cu_device *d)
{
    return thread_plan == d;
}

void dla__cu_set_planning_here(const dla__cu_device *d)
{
    thread_plan = d;
}

dla_status dla__cu_enter(dla__cu_device *d, const char *member)
{
    uintptr_t me = (uintptr_t)&thread_tag, first = 0;
    if (!__atomic_compare_exchange_n(&d->user, &first, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
        first != me && !__atomic_load_n(&d->multi, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&d->multi, 1, __ATOMIC_RELEASE);
        dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: a second thread uses the device: planned "
                                         "replays run without CUDA graphs from now on",
                          d->index);
    }
    /* Set before the gate: a plan_begin that takes the gate after this
     * thread passed it sees multi and does not capture. */
    if (thread_plan != d && __atomic_load_n(&d->multi, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&d->gate);
        pthread_mutex_unlock(&d->gate);
    }
    /* A capture becomes one kernel only if every member it calls records
     * a step (onekern.c). */
    if (thread_plan == d && d->capturing)
        dla__cu_k1_count(d, member);
    /* cudaSetDevice is per thread and cheap when the device is current. */
    return dla__cu_err(cudaSetDevice(d->index), member);
}

unsigned dla__cu_blocks(const dla__cu_device *d, int64_t n)
{
    if (n <= 0)
        return 1;
    int64_t blocks = (n + DLA__CU_THREADS - 1) / DLA__CU_THREADS;
    /* A grid-stride loop: a few waves of full occupancy are enough, more
     * blocks only cost scheduling. */
    const int64_t cap = (int64_t)(d->sms > 0 ? d->sms : 16) * 32;
    if (blocks > cap)
        blocks = cap;
    return (unsigned)blocks;
}

dla__cu_mem *dla__cu_scratch(dla__cu_device *d, size_t bytes, const char *what)
{
    /* While a plan is captured, a block an earlier member gave back
     * (dla__cu_scratch_done): the capture is one stream, so the graph runs
     * its kernels in the order they were captured, and a later member's
     * use of the block follows the earlier one's, as the pool's reuse
     * does outside a capture. Without this the graph would hold the sum of
     * its members' workspaces, not the largest. The smallest that fits. */
    if (d->capturing && dla__cu_planning_here(d)) {
        dla__cu_mem **best = NULL;
        for (dla__cu_mem **link = &d->scratch_free; *link; link = &(*link)->next)
            if ((*link)->cap >= bytes && (!best || (*link)->cap < (*best)->cap))
                best = link;
        if (best) {
            dla__cu_mem *m = *best;
            *best = m->next;
            m->next = NULL;
            m->bytes = bytes;
            return m;
        }
    }
    dla_mem m = NULL;
    if (dla__cu_mem_alloc(d, bytes > 0 ? bytes : 1, &m) != DLA_OK) {
        dla__cu_host->error(DLA_ERR_OUT_OF_MEMORY, "cuda %s: scratch of %zu bytes", what, bytes);
        return NULL;
    }
    return (dla__cu_mem *)m;
}

void dla__cu_space_of(int nops, const dla_view *const *views, dla__cu_space *sp, dla__cu_vw *vw)
{
    const dla_view *v0 = views[0];
    memset(sp, 0, sizeof *sp);
    sp->n = 1;
    for (int k = 0; k < nops; k++) {
        memset(&vw[k], 0, sizeof vw[k]);
        vw[k].base = dla__cu_ptr(views[k]->mem) +
                     views[k]->offset * (int64_t)dla_kit_dtype_size(views[k]->dtype);
    }
    for (int d = 0; d < v0->ndims; d++) {
        const int64_t n = v0->dims[d];
        sp->n *= n;
        if (n == 1)
            continue;
        const int j = sp->nd - 1;
        int merge = j >= 0;
        for (int k = 0; k < nops && merge; k++)
            merge = views[k]->strides[d] == vw[k].st[j] * sp->dims[j];
        if (merge) {
            sp->dims[j] *= n;
            continue;
        }
        sp->dims[sp->nd] = n;
        for (int k = 0; k < nops; k++)
            vw[k].st[sp->nd] = views[k]->strides[d];
        sp->nd++;
    }
    for (int d = 0; d < sp->nd; d++)
        dla__cu_fastdiv_make(sp->dims[d], &sp->mul[d], &sp->shift[d]);
}

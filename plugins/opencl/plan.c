/*
 * plan.c - the plan hooks (ABI 1.3) of the opencl plugin: a planned replay
 * of dla_accelerate as one enqueued sequence of commands chained by
 * events, and one host wait at its end.
 *
 * Between plan_begin and plan_end the calling thread's commands on the
 * device are recorded: each is enqueued with the previous one's event as
 * its wait list and keeps its own event and what it is ("gemm", "unary"),
 * with no clFlush or clFinish in between. plan_end waits for the last
 * event (which, the chain being complete, is all of them), then reads
 * every event's status, so a command that failed while running becomes
 * the replay's error with the command named, and releases the events.
 *
 * Why an in-order queue with events, not an out-of-order one: the plugin's
 * kernels each use the whole device (one NDRange over all the elements),
 * so running two at once would gain little on the devices it meets, while
 * every member outside a plan, the cpu fallback's copies and CLBlast rely
 * on in-order execution. The wait lists make the order explicit all the
 * same, so the sequence stays correct if the queue is ever made
 * out-of-order. Memory freed during the sequence needs nothing here:
 * clReleaseMemObject keeps a buffer until the commands using it are done.
 *
 * The record is per thread (members may be called from several threads,
 * each running its own plan or eager ops); commands of other threads are
 * not part of it. Out of host memory for the record, the plugin stops
 * recording and plan_end waits with clFinish instead: correct, only the
 * failing command can no longer be named.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

typedef struct command {
    cl_event event;
    char what[32];
} command;

typedef struct plan {
    dla__ocl_device *d;
    int32_t nlaunches;
    command *cmds;
    int n, cap;
    int lost;       /* a command's event could not be kept */
    int pending;    /* dla__ocl_plan_event handed out cmds[n] */
    long waits;     /* host waits while the plan ran (plan_end's included) */
} plan;

static _Thread_local plan *current;

static plan *plan_of(const dla__ocl_device *d)
{
    return current && current->d == d ? current : NULL;
}

cl_event *dla__ocl_plan_event(dla__ocl_device *d, const char *what, cl_uint *nwait,
                              const cl_event **wait)
{
    plan *p = plan_of(d);
    *nwait = 0;
    *wait = NULL;
    if (!p || p->lost)
        return NULL;
    if (p->n == p->cap) {
        const int cap = p->cap ? 2 * p->cap : 64;
        command *c = dla__ocl_host->alloc((size_t)cap * sizeof *c, 0);
        if (!c) {
            p->lost = 1;
            return NULL;
        }
        if (p->n)
            memcpy(c, p->cmds, (size_t)p->n * sizeof *c);
        dla__ocl_host->free(p->cmds);
        p->cmds = c;
        p->cap = cap;
    }
    if (p->n) {
        *nwait = 1;
        *wait = &p->cmds[p->n - 1].event;
    }
    command *c = &p->cmds[p->n];
    c->event = NULL;
    size_t len = strlen(what);
    if (len >= sizeof c->what)
        len = sizeof c->what - 1;
    memcpy(c->what, what, len);
    c->what[len] = '\0';
    p->pending = 1;
    return &c->event;
}

void dla__ocl_plan_enqueued(dla__ocl_device *d, cl_int err)
{
    plan *p = plan_of(d);
    if (!p || !p->pending)
        return;
    p->pending = 0;
    if (err == CL_SUCCESS && p->cmds[p->n].event)
        p->n++;
}

void dla__ocl_plan_waited(dla__ocl_device *d)
{
    plan *p = plan_of(d);
    if (p)
        p->waits++;
}

dla_status dla__ocl_plan_begin(void *dev, int32_t nlaunches)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla__ocl_device *d = dev;
    if (current)
        return h->error(DLA_ERR_STATE, "opencl plan_begin: this thread is already running a "
                        "plan on opencl:%d", current->d->index);
    plan *p = h->alloc(sizeof *p, 0);
    if (!p)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "opencl plan_begin: the plan's record");
    memset(p, 0, sizeof *p);
    p->d = d;
    p->nlaunches = nlaunches;
    current = p;
    return DLA_OK;
}

dla_status dla__ocl_plan_end(void *dev)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla__ocl_device *d = dev;
    plan *p = plan_of(d);
    if (!p)
        return h->error(DLA_ERR_STATE, "opencl plan_end: no plan_begin on opencl:%d on this "
                        "thread", d->index);
    current = NULL;
    cl_int err = CL_SUCCESS;
    if (p->lost)
        err = clFinish(d->queue);
    else if (p->n)
        err = clWaitForEvents(1, &p->cmds[p->n - 1].event);
    p->waits++;
    dla_status s = DLA_OK;
    for (int i = 0; i < p->n; i++) {
        cl_int status = CL_COMPLETE;
        cl_int q = clGetEventInfo(p->cmds[i].event, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                  sizeof status, &status, NULL);
        if (s == DLA_OK && (q != CL_SUCCESS || status < 0))
            s = h->error(DLA_ERR_DEVICE, "opencl plan_end: command %d of %d (%s) failed on "
                         "opencl:%d: %s", i + 1, p->n, p->cmds[i].what, d->index,
                         DLA__OCL_ERR(q != CL_SUCCESS ? q : status));
        clReleaseEvent(p->cmds[i].event);
    }
    if (s == DLA_OK && err != CL_SUCCESS)
        s = h->error(DLA_ERR_DEVICE, "opencl plan_end: waiting for the plan's %d commands on "
                     "opencl:%d: %s", p->n, d->index, DLA__OCL_ERR(err));
    h->log(DLA_LOG_DEBUG, "opencl:%d: plan of %d launches: %d commands enqueued, %ld host "
           "wait%s", d->index, (int)p->nlaunches, p->n, p->waits, p->waits == 1 ? "" : "s");
    h->free(p->cmds);
    h->free(p);
    return s;
}

/*
 * hooks.c - the observers of each thread and the announcements to them
 * (hooks.h). A thread has at most a handful (a tape, a recorder, a
 * capture), so a list walked in order is all it takes.
 */
#include "core/hooks.h"

#include "core/error.h"

_Thread_local unsigned dla__hooks_heard;
static _Thread_local dla__observer *first;

static unsigned events_of(const dla__observer *o)
{
    return (o->storage_made || o->storage_freed ? DLA__HEAR_STORAGE : 0u) |
           (o->launch ? DLA__HEAR_LAUNCH : 0u) | (o->transfer ? DLA__HEAR_TRANSFER : 0u) |
           (o->op_ran ? DLA__HEAR_OP_RAN : 0u) | (o->host_read ? DLA__HEAR_HOST_READ : 0u) |
           (o->op_ran_nested ? DLA__HEAR_OP_NESTED : 0u);
}

static void recount(void)
{
    unsigned heard = 0;
    for (const dla__observer *o = first; o; o = o->next)
        heard |= o->events;
    dla__hooks_heard = heard;
}

void dla__hooks_subscribe(dla__observer *o)
{
    dla__observer **at = &first;
    while (*at) {
        DLA_ASSERT(*at != o);
        at = &(*at)->next;
    }
    o->next = NULL;
    o->events = events_of(o);
    *at = o;
    recount();
}

dla__observer *dla__hooks_mute(void)
{
    dla__observer *saved = first;
    first = NULL;
    recount();
    return saved;
}

void dla__hooks_unmute(dla__observer *saved)
{
    DLA_ASSERT(first == NULL);
    first = saved;
    recount();
}

void dla__hooks_unsubscribe(dla__observer *o)
{
    for (dla__observer **at = &first; *at; at = &(*at)->next) {
        if (*at == o) {
            *at = o->next;
            o->next = NULL;
            break;
        }
    }
    recount();
}

/* An observer may unsubscribe itself while it is told (nothing does yet,
 * but a capture that gives up could): the next one is read first. */
#define EACH(o, nxt) for (dla__observer *o = first, *nxt; o && ((nxt = o->next), 1); o = nxt)

void dla__hooks_storage_made(const struct dla__storage *st)
{
    EACH(o, n) {
        if (o->storage_made)
            o->storage_made(o, st);
    }
}

void dla__hooks_storage_freed(const struct dla__storage *st)
{
    EACH(o, n) {
        if (o->storage_freed)
            o->storage_freed(o, st);
    }
}

void dla__hooks_launch(struct dla_device *dev, const struct dla__launch *l)
{
    EACH(o, n) {
        if (o->launch)
            o->launch(o, dev, l);
    }
}

void dla__hooks_transfer(void)
{
    EACH(o, n) {
        if (o->transfer)
            o->transfer(o);
    }
}

dla_status dla__hooks_op_ran(const struct dla__op *op, const void *attrs, size_t attrs_size,
                             int nin, dla_tensor *const *in, dla_tensor *const *out,
                             dla_tensor *const *saved)
{
    EACH(o, n) {
        if (!o->op_ran)
            continue;
        dla_status st = o->op_ran(o, op, attrs, attrs_size, nin, in, out, saved);
        if (st != DLA_OK)
            return st;
    }
    return DLA_OK;
}

dla_status dla__hooks_op_ran_nested(const struct dla__op *op, const void *attrs,
                                    size_t attrs_size, int nin, dla_tensor *const *in,
                                    dla_tensor *const *out, dla_tensor *const *saved)
{
    EACH(o, n) {
        if (!o->op_ran_nested)
            continue;
        dla_status st = o->op_ran_nested(o, op, attrs, attrs_size, nin, in, out, saved);
        if (st != DLA_OK)
            return st;
    }
    return DLA_OK;
}

void dla__hooks_host_read(const dla_tensor *x)
{
    EACH(o, n) {
        if (o->host_read)
            o->host_read(o, x);
    }
}

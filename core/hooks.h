/*
 * hooks.h - what the runtime announces, and who listens (internal).
 *
 * The lower layers of the core say what happens on the calling thread and
 * name no one: tensor.c when a storage is made or freed, launch.c when a
 * kernel is launched or data crosses to or from the host, op_run.c when an
 * outermost op has run, transfer.c when the user's code reads a tensor on
 * the host. The layers above that want to know subscribe an observer for
 * the thread: the gradient tape (op runs, while it records), the trace
 * recorder (op runs, host reads) and the replay planner's capture
 * (storage, launches, transfers). So the arrows point one way: the runtime
 * is compiled and linked without the tape, the recorder or the planner.
 *
 * Observers are per thread, as everything they watch is, and are called in
 * the order they subscribed. Nothing is announced to an observer that did
 * not ask for the event (its member NULL), and an event no one on the
 * thread listens to costs one thread-local load and a test.
 */
#ifndef DLA_CORE_HOOKS_H
#define DLA_CORE_HOOKS_H

#include <dlaccel.h>
#include <stddef.h>

struct dla__storage;
struct dla__launch;
struct dla__op;
struct dla_device;

typedef struct dla__observer dla__observer;

/* Each member may be NULL (not listened to); self is the observer, which
 * the subscriber embeds in its own record. */
struct dla__observer {
    /* A storage was made for a tensor (dla__tensor_alloc), or is about to
     * be freed (its memory is still valid). */
    void (*storage_made)(dla__observer *self, const struct dla__storage *st);
    void (*storage_freed)(dla__observer *self, const struct dla__storage *st);
    /* A kernel launch is being made on dev; l is the caller's (copy it). */
    void (*launch)(dla__observer *self, struct dla_device *dev, const struct dla__launch *l);
    /* Data is being copied between the host and a device. */
    void (*transfer)(dla__observer *self);
    /* An outermost op (not one run inside another op's forward) ran and
     * succeeded; a status other than DLA_OK fails the op (its results are
     * released) and stops the announcement. */
    dla_status (*op_ran)(dla__observer *self, const struct dla__op *op, const void *attrs,
                         size_t attrs_size, int nin, dla_tensor *const *in,
                         dla_tensor *const *out, dla_tensor *const *saved);
    /* An op ran inside another op's forward, directly in a dla_feval that
     * forward opened (dla__feval_base, core/op.h): to the tape of that
     * feval it is outermost, to everyone else part of the enclosing op.
     * Only the tape listens; as op_ran otherwise. */
    dla_status (*op_ran_nested)(dla__observer *self, const struct dla__op *op,
                                const void *attrs, size_t attrs_size, int nin,
                                dla_tensor *const *in, dla_tensor *const *out,
                                dla_tensor *const *saved);
    /* The user's code (not an op's forward) reads x on the host. */
    void (*host_read)(dla__observer *self, const dla_tensor *x);
    /* hooks.c's own. */
    dla__observer *next;
    unsigned events;
};

/* The events someone on this thread listens to, one bit each. */
enum {
    DLA__HEAR_STORAGE = 1u << 0, /* storage_made and storage_freed */
    DLA__HEAR_LAUNCH = 1u << 1,
    DLA__HEAR_TRANSFER = 1u << 2,
    DLA__HEAR_OP_RAN = 1u << 3,
    DLA__HEAR_HOST_READ = 1u << 4,
    DLA__HEAR_OP_NESTED = 1u << 5,
};
extern _Thread_local unsigned dla__hooks_heard;

/* Starts announcing to o on this thread (its non-NULL members), after the
 * observers already there. o stays the caller's; it must not be
 * subscribed already. */
void dla__hooks_subscribe(dla__observer *o);
/* Announces nothing on this thread until dla__hooks_unmute(saved), for the
 * core's own work no observer may see (the dense retry's copies of a
 * declined kernel call: a capture must keep only the declined call, which
 * its replay declines and retries again). Returns what unmute restores;
 * nothing may subscribe or unsubscribe in between. */
dla__observer *dla__hooks_mute(void);
void dla__hooks_unmute(dla__observer *saved);
/* Stops announcing to o; nothing when o is not subscribed. */
void dla__hooks_unsubscribe(dla__observer *o);

/* ----------------------------------------------------------- announcing */

void dla__hooks_storage_made(const struct dla__storage *st);
void dla__hooks_storage_freed(const struct dla__storage *st);
void dla__hooks_launch(struct dla_device *dev, const struct dla__launch *l);
void dla__hooks_transfer(void);
dla_status dla__hooks_op_ran(const struct dla__op *op, const void *attrs, size_t attrs_size,
                             int nin, dla_tensor *const *in, dla_tensor *const *out,
                             dla_tensor *const *saved);
dla_status dla__hooks_op_ran_nested(const struct dla__op *op, const void *attrs,
                                    size_t attrs_size, int nin, dla_tensor *const *in,
                                    dla_tensor *const *out, dla_tensor *const *saved);
void dla__hooks_host_read(const dla_tensor *x);

/* Nonzero when an observer on this thread listens to any of events (a
 * DLA__HEAR_* mask): the announcers test it before building an event. */
static inline int dla__hooks_hear(unsigned events) { return (dla__hooks_heard & events) != 0; }

#endif

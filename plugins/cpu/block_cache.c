/*
 * block_cache.c - the cpu plugin's cache of freed large blocks: the policy
 * (block_cache.h says why the cap adapts and what bounds it).
 */
#include "plugins/cpu/block_cache.h"

#include <stdint.h>
#include <string.h>

void dla__bc_init(dla__bcache *c, size_t base)
{
    memset(c, 0, sizeof *c);
    c->base = base;
    c->limit = base;
}

static void ghost_drop_oldest(dla__bcache *c)
{
    c->ghost_bytes -= c->ghost[0];
    memmove(&c->ghost[0], &c->ghost[1], (size_t)(--c->ghosts) * sizeof c->ghost[0]);
}

/* Remembers a size let go for lack of room. The ghosts cover at most the
 * cap's bytes (or the one block, when it alone is larger): a miss they
 * explain is one a cache up to twice as large would have served, so the
 * cap grows at most twofold per round of the program's reuse, and only as
 * far as its blocks come back. */
static void ghost_add(dla__bcache *c, size_t size)
{
    size_t room = c->limit > size ? c->limit : size;
    while (c->ghosts > 0 && (c->ghosts == DLA__BC_GHOSTS || c->ghost_bytes + size > room))
        ghost_drop_oldest(c);
    c->ghost[c->ghosts++] = size;
    c->ghost_bytes += size;
}

/* Uses up the newest ghost of this size; 1 if there was one. */
static int ghost_take(dla__bcache *c, size_t size)
{
    for (int i = c->ghosts - 1; i >= 0; i--) {
        if (c->ghost[i] != size)
            continue;
        c->ghost_bytes -= size;
        memmove(&c->ghost[i], &c->ghost[i + 1], (size_t)(c->ghosts - i - 1) * sizeof c->ghost[0]);
        c->ghosts--;
        return 1;
    }
    return 0;
}

void *dla__bc_take(dla__bcache *c, size_t size, int *regret)
{
    *regret = 0;
    for (int i = c->count - 1; i >= 0; i--) {
        if (c->slot[i].size != size)
            continue;
        void *block = c->slot[i].block;
        memmove(&c->slot[i], &c->slot[i + 1], (size_t)(c->count - i - 1) * sizeof c->slot[0]);
        c->count--;
        c->bytes -= size;
        return block;
    }
    *regret = ghost_take(c, size);
    return NULL;
}

size_t dla__bc_resident(const dla__bcache *c)
{
    size_t r = 0;
    for (int i = 0; i < c->count; i++)
        r += c->slot[i].size - c->slot[i].released;
    return r;
}

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t dla__bc_ceiling(const dla__bcache *c, size_t incoming, size_t available)
{
    if (available == 0)
        return c->base;
    size_t half = add_sat(add_sat(dla__bc_resident(c), incoming), available) / 2;
    return half > c->base ? half : c->base;
}

/* The cap moved to want, kept between the base and the ceiling. */
static void set_limit(dla__bcache *c, size_t want, size_t ceiling)
{
    if (want > ceiling)
        want = ceiling;
    c->limit = want > c->base ? want : c->base;
}

void dla__bc_grow(dla__bcache *c, size_t size, size_t ceiling)
{
    set_limit(c, add_sat(c->limit, size), ceiling);
}

int dla__bc_put(dla__bcache *c, void *block, size_t size, size_t ceiling, double now, void **out)
{
    int n = 0;
    if (ceiling < c->limit)
        set_limit(c, ceiling, ceiling);
    if (size > c->limit) {
        ghost_add(c, size);
        out[n++] = block;
        return n;
    }
    while (c->count == DLA__BC_SLOTS || c->bytes + size > c->limit) {
        /* Only a block let go for want of bytes is evidence the cap is
         * small; a full table of slots says nothing of the bytes. */
        if (c->bytes + size > c->limit)
            ghost_add(c, c->slot[0].size);
        out[n++] = c->slot[0].block;
        c->bytes -= c->slot[0].size;
        memmove(&c->slot[0], &c->slot[1], (size_t)(--c->count) * sizeof c->slot[0]);
    }
    c->slot[c->count++] =
        (dla__bc_entry){.block = block, .size = size, .released = 0, .put_at = now};
    c->bytes += size;
    return n;
}

void dla__bc_release(dla__bcache *c, size_t want, dla__bc_give_back_fn give_back, void *user)
{
    size_t done = 0;
    for (int i = 0; i < c->count && done < want; i++) {
        dla__bc_entry *e = &c->slot[i];
        size_t resident = e->size - e->released;
        if (resident == 0)
            continue;
        /* Only what the miss asks for: a 1 MiB miss does not cost a
         * 320 MiB block all its pages. */
        size_t n = want - done < resident ? want - done : resident;
        give_back(e->block, resident - n, n, user);
        e->released += n;
        done += n;
    }
}

size_t dla__bc_decay(dla__bcache *c, double now, double idle, dla__bc_give_back_fn give_back,
                     void *user)
{
    size_t done = 0;
    for (int i = 0; i < c->count; i++) {
        dla__bc_entry *e = &c->slot[i];
        size_t resident = e->size - e->released;
        if (resident == 0 || e->put_at > now - idle)
            continue;
        give_back(e->block, 0, resident, user);
        e->released = e->size;
        done += resident;
    }
    return done;
}

int dla__bc_drain(dla__bcache *c, void **out)
{
    int n = c->count;
    for (int i = 0; i < n; i++)
        out[i] = c->slot[i].block;
    dla__bc_init(c, c->base);
    return n;
}

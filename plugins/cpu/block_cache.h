/*
 * block_cache.h - which freed large blocks the cpu plugin keeps for reuse,
 * and how many bytes it may keep: the policy alone, without locks or system
 * calls, so that tests/test_block_cache.c drives its decisions one by one.
 * memory.c holds the lock, allocates and frees, gives pages back and reads
 * how much memory the system has available.
 *
 * The cap adapts to what the program recycles. It starts at a base (memory.c:
 * an eighth of RAM, at most 2 GiB) and grows only on evidence: a block let
 * go for lack of room leaves a "ghost" (its size), and a later miss of that
 * size is a block the cache would have served had it been larger by that
 * much, so the cap grows by it. A training step that frees and remakes
 * more than the base each iteration thus stops paying fresh pages after a
 * step or two, while a program whose large blocks are never reused keeps
 * the base cap. Growth is bounded by the memory available (the ceiling,
 * half of what would be available without the cache's resident blocks),
 * read anew at each growth and at each put above the base, so the cap
 * comes back down when the machine fills.
 *
 * Blocks that sit in the cache unused give their pages back after a while
 * (dla__bc_decay, as jemalloc's decay does: driven by the program's own
 * allocations, no thread of its own), so a program that trained and moved
 * on to smaller work does not keep gigabytes resident for blocks it no
 * longer asks for; a training loop puts and takes its blocks every step and
 * never reaches the idle time. dla_device_release_cached empties the cache
 * at once (memory.c).
 */
#ifndef DLA_PLUGIN_CPU_BLOCK_CACHE_H
#define DLA_PLUGIN_CPU_BLOCK_CACHE_H

#include <stddef.h>

/* Blocks kept at most. */
#define DLA__BC_SLOTS 64
/* Ghosts remembered at most (and at most the cap's bytes of them). */
#define DLA__BC_GHOSTS 64

typedef struct dla__bc_entry {
    void *block;
    size_t size;     /* its size class */
    size_t released; /* bytes at its end whose pages went back to the kernel */
    double put_at;   /* the caller's clock (seconds) when it was put */
} dla__bc_entry;

typedef struct dla__bcache {
    dla__bc_entry slot[DLA__BC_SLOTS]; /* oldest first */
    int count;
    size_t bytes; /* sum of the cached sizes */
    size_t base;  /* the cap without evidence; never lowered */
    size_t limit; /* the cap now: at least base */
    size_t ghost[DLA__BC_GHOSTS]; /* sizes let go for lack of room, oldest first */
    int ghosts;
    size_t ghost_bytes;
} dla__bcache;

void dla__bc_init(dla__bcache *c, size_t base);

/* The newest cached block of this size, taken out of the cache, or NULL.
 * On a miss *regret is 1 when a block of this size was let go for lack of
 * room (its ghost is used up: one growth per block let go), else 0. */
void *dla__bc_take(dla__bcache *c, size_t size, int *regret);

/* The most bytes the cache may hold when `available` bytes are available
 * to the system besides its resident blocks and `incoming` bytes being put:
 * half of all of them, never under the base. available 0 (unknown): the
 * base. */
size_t dla__bc_ceiling(const dla__bcache *c, size_t incoming, size_t available);

/* After a miss with regret: the cap grows by size, up to the ceiling. */
void dla__bc_grow(dla__bcache *c, size_t size, size_t ceiling);

/* Keeps block (of size bytes) under a cap lowered to ceiling if above it,
 * stamped with now (the caller's clock, in seconds). The blocks the caller
 * must free now (the oldest, or block itself when it is larger than the
 * cap) go to out (room for DLA__BC_SLOTS + 1); returns their number. */
int dla__bc_put(dla__bcache *c, void *block, size_t size, size_t ceiling, double now, void **out);

/* Bytes of the cached blocks whose pages have not been given back. */
size_t dla__bc_resident(const dla__bcache *c);

/* Gives back to the kernel the pages of about `want` bytes of the oldest
 * cached blocks, from each one's end, through give_back(block, offset,
 * bytes, user); a block keeps its place and its address. */
typedef void (*dla__bc_give_back_fn)(void *block, size_t offset, size_t bytes, void *user);
void dla__bc_release(dla__bcache *c, size_t want, dla__bc_give_back_fn give_back, void *user);

/* Gives back the pages still resident of every block put at or before
 * now - idle, through give_back as dla__bc_release does (the blocks keep
 * their places and addresses); returns the bytes given back. */
size_t dla__bc_decay(dla__bcache *c, double now, double idle, dla__bc_give_back_fn give_back,
                     void *user);

/* Empties the cache into out (room for DLA__BC_SLOTS) and returns the count;
 * the cap goes back to the base and the ghosts are forgotten (called when an
 * allocation was refused, and at close). */
int dla__bc_drain(dla__bcache *c, void **out);

#endif

/*
 * test_block_cache.c - the cpu plugin's cache of freed blocks, its policy
 * driven decision by decision (plugins/cpu/block_cache.c), and the readers
 * of the memory available (plugins/cpu/mem_avail.c). Sizes are in MiB-like
 * units; the blocks are fake addresses, never dereferenced.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "plugins/cpu/block_cache.h"
#include "plugins/cpu/mem_avail.h"

#define B(i) ((void *)(uintptr_t)(0x1000 * (i)))

/* No memory figure, no ceiling: the cap is the base. */
#define NO_BOUND SIZE_MAX

static void put_all_kept(dla__bcache *c, int first, int n, size_t size)
{
    void *out[DLA__BC_SLOTS + 1];
    for (int i = 0; i < n; i++)
        assert_int_equal(dla__bc_put(c, B(first + i), size, NO_BOUND, 0.0, out), 0);
}

/* The same size hits, newest first; another size misses, with no regret. */
static void test_take_newest_of_size(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 100);
    put_all_kept(&c, 1, 2, 10);
    put_all_kept(&c, 3, 1, 20);
    int regret;
    assert_ptr_equal(dla__bc_take(&c, 10, &regret), B(2));
    assert_int_equal(regret, 0);
    assert_null(dla__bc_take(&c, 30, &regret));
    assert_int_equal(regret, 0);
    assert_int_equal(c.bytes, 30);
    assert_int_equal(c.count, 2);
}

/* Over the cap the oldest go, and each one leaves a ghost: a later miss of
 * that size regrets it and the cap grows by it, up to the ceiling. */
static void test_regret_grows_the_cap(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 60);
    /* A step that frees seven blocks of 10 (70) with room for six. */
    void *out[DLA__BC_SLOTS + 1];
    put_all_kept(&c, 1, 6, 10);
    assert_int_equal(dla__bc_put(&c, B(7), 10, NO_BOUND, 0.0, out), 1);
    assert_ptr_equal(out[0], B(1));
    assert_int_equal(c.ghosts, 1);
    /* The next step takes the six back, and misses the seventh. */
    int regret;
    for (int i = 0; i < 6; i++) {
        assert_non_null(dla__bc_take(&c, 10, &regret));
        assert_int_equal(regret, 0);
    }
    assert_null(dla__bc_take(&c, 10, &regret));
    assert_int_equal(regret, 1);
    dla__bc_grow(&c, 10, 1000);
    assert_int_equal(c.limit, 70);
    /* Then all seven fit: nothing is let go. */
    put_all_kept(&c, 11, 7, 10);
    assert_int_equal(c.bytes, 70);
    /* The ghost was used up: a second miss of that size does not grow. */
    for (int i = 0; i < 7; i++)
        assert_non_null(dla__bc_take(&c, 10, &regret));
    assert_null(dla__bc_take(&c, 10, &regret));
    assert_int_equal(regret, 0);
}

/* Blocks that never come back leave the cap where it was: a program with no
 * reuse keeps the base. */
static void test_no_reuse_no_growth(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 30);
    void *out[DLA__BC_SLOTS + 1];
    for (int i = 0; i < 20; i++)
        dla__bc_put(&c, B(i + 1), (size_t)(10 + i), NO_BOUND, 0.0, out);
    int regret;
    for (int i = 0; i < 20; i++) {
        assert_null(dla__bc_take(&c, (size_t)(100 + i), &regret));
        assert_int_equal(regret, 0);
    }
    assert_int_equal(c.limit, 30);
    assert_true(c.bytes <= 30);
}

/* Growth stops at the ceiling, and never goes under the base. */
static void test_grow_bounded(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 50);
    dla__bc_grow(&c, 40, 70);
    assert_int_equal(c.limit, 70);
    dla__bc_grow(&c, 40, 70);
    assert_int_equal(c.limit, 70);
    dla__bc_grow(&c, 40, 10);
    assert_int_equal(c.limit, 50);
}

/* A put under a lower ceiling (the machine filled) lowers the cap, and the
 * oldest blocks go to fit it. */
static void test_put_lowers_to_ceiling(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 20);
    dla__bc_grow(&c, 100, 1000);
    assert_int_equal(c.limit, 120);
    put_all_kept(&c, 1, 10, 10);
    void *out[DLA__BC_SLOTS + 1];
    int n = dla__bc_put(&c, B(11), 10, 40, 0.0, out);
    assert_int_equal(c.limit, 40);
    assert_int_equal(n, 7);
    for (int i = 0; i < n; i++)
        assert_ptr_equal(out[i], B(i + 1));
    assert_int_equal(c.bytes, 40);
}

/* A block larger than the cap goes straight back, leaving a ghost. */
static void test_too_large_block(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 20);
    void *out[DLA__BC_SLOTS + 1];
    assert_int_equal(dla__bc_put(&c, B(1), 30, NO_BOUND, 0.0, out), 1);
    assert_ptr_equal(out[0], B(1));
    assert_int_equal(c.count, 0);
    int regret;
    assert_null(dla__bc_take(&c, 30, &regret));
    assert_int_equal(regret, 1);
    dla__bc_grow(&c, 30, 1000);
    assert_int_equal(dla__bc_put(&c, B(2), 30, NO_BOUND, 0.0, out), 0);
}

/* The ghosts cover at most the cap's bytes: only blocks a cache twice as
 * large would have kept count as evidence. */
static void test_ghosts_bounded(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 20);
    void *out[DLA__BC_SLOTS + 1];
    for (int i = 0; i < 10; i++)
        dla__bc_put(&c, B(i + 1), 10, NO_BOUND, 0.0, out);
    assert_true(c.ghost_bytes <= 20);
    assert_int_equal(c.ghosts, 2);
}

/* The table of slots full lets the oldest go without a ghost: it says
 * nothing about the bytes. */
static void test_slots_full_no_ghost(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 1000);
    put_all_kept(&c, 1, DLA__BC_SLOTS, 1);
    void *out[DLA__BC_SLOTS + 1];
    assert_int_equal(dla__bc_put(&c, B(100), 1, NO_BOUND, 0.0, out), 1);
    assert_ptr_equal(out[0], B(1));
    assert_int_equal(c.ghosts, 0);
}

/* The ceiling: half of what would be available without the cache's
 * resident blocks, with the incoming one; unknown memory keeps the base. */
static void test_ceiling(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 10);
    dla__bc_grow(&c, 100, 1000);
    put_all_kept(&c, 1, 4, 10);
    assert_int_equal(dla__bc_ceiling(&c, 20, 100), (40 + 20 + 100) / 2);
    assert_int_equal(dla__bc_ceiling(&c, 0, 0), 10);
    assert_int_equal(dla__bc_ceiling(&c, 0, 2), 21);
    dla__bcache small;
    dla__bc_init(&small, 500);
    assert_int_equal(dla__bc_ceiling(&small, 0, 100), 500);
}

static struct {
    void *block[8];
    size_t offset[8], bytes[8];
    int n;
} given;

static void record_give_back(void *block, size_t offset, size_t bytes, void *user)
{
    (void)user;
    given.block[given.n] = block;
    given.offset[given.n] = offset;
    given.bytes[given.n] = bytes;
    given.n++;
}

/* A miss gives back as many bytes as it asks for, from the ends of the
 * oldest blocks, and the resident count follows. */
static void test_release_proportional(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 1000);
    put_all_kept(&c, 1, 1, 320);
    put_all_kept(&c, 2, 1, 100);
    given.n = 0;
    dla__bc_release(&c, 2, record_give_back, NULL);
    assert_int_equal(given.n, 1);
    assert_ptr_equal(given.block[0], B(1));
    assert_int_equal(given.offset[0], 318);
    assert_int_equal(given.bytes[0], 2);
    assert_int_equal(dla__bc_resident(&c), 418);
    /* The next release goes on below what is gone, then to the next block. */
    given.n = 0;
    dla__bc_release(&c, 350, record_give_back, NULL);
    assert_int_equal(given.n, 2);
    assert_int_equal(given.offset[0], 0);
    assert_int_equal(given.bytes[0], 318);
    assert_ptr_equal(given.block[1], B(2));
    assert_int_equal(given.offset[1], 68);
    assert_int_equal(given.bytes[1], 32);
    assert_int_equal(dla__bc_resident(&c), 68);
    /* A block taken and put back is whole again. */
    int regret;
    assert_ptr_equal(dla__bc_take(&c, 320, &regret), B(1));
    put_all_kept(&c, 1, 1, 320);
    assert_int_equal(dla__bc_resident(&c), 388);
}

/* Blocks idle for the idle time give back all their pages, once; a block
 * put since keeps its pages, and one taken and put again is whole and
 * stamped anew. */
static void test_decay_idle_blocks(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 1000);
    void *out[DLA__BC_SLOTS + 1];
    assert_int_equal(dla__bc_put(&c, B(1), 320, NO_BOUND, 100.0, out), 0);
    assert_int_equal(dla__bc_put(&c, B(2), 100, NO_BOUND, 105.0, out), 0);
    assert_int_equal(dla__bc_put(&c, B(3), 50, NO_BOUND, 112.0, out), 0);
    given.n = 0;
    /* At 109.9 nothing has been idle 10 s yet. */
    assert_int_equal(dla__bc_decay(&c, 109.9, 10.0, record_give_back, NULL), 0);
    assert_int_equal(given.n, 0);
    /* At 115 the block put at 100 and the one at 105 have; the one at 112
     * has not. */
    assert_int_equal(dla__bc_decay(&c, 115.0, 10.0, record_give_back, NULL), 420);
    assert_int_equal(given.n, 2);
    assert_ptr_equal(given.block[0], B(1));
    assert_int_equal(given.offset[0], 0);
    assert_int_equal(given.bytes[0], 320);
    assert_ptr_equal(given.block[1], B(2));
    assert_int_equal(given.bytes[1], 100);
    assert_int_equal(dla__bc_resident(&c), 50);
    assert_int_equal(c.count, 3); /* the blocks stay cached, at their addresses */
    /* Their pages are gone already: nothing more to give. */
    given.n = 0;
    assert_int_equal(dla__bc_decay(&c, 200.0, 100.0, record_give_back, NULL), 0);
    assert_int_equal(given.n, 0);
    /* A block partly given back by a miss gives the rest when it idles. */
    dla__bc_release(&c, 20, record_give_back, NULL);
    assert_int_equal(dla__bc_resident(&c), 30);
    given.n = 0;
    assert_int_equal(dla__bc_decay(&c, 122.0, 10.0, record_give_back, NULL), 30);
    assert_int_equal(given.offset[0], 0);
    assert_int_equal(given.bytes[0], 30);
    /* Taken and put back: whole, stamped now, so not idle. */
    int regret;
    assert_ptr_equal(dla__bc_take(&c, 320, &regret), B(1));
    assert_int_equal(dla__bc_put(&c, B(1), 320, NO_BOUND, 130.0, out), 0);
    assert_int_equal(dla__bc_resident(&c), 320);
    assert_int_equal(dla__bc_decay(&c, 135.0, 10.0, record_give_back, NULL), 0);
    assert_int_equal(dla__bc_decay(&c, 140.0, 10.0, record_give_back, NULL), 320);
}

/* A refused allocation drains everything and sets the cap back to the base,
 * forgetting the ghosts. */
static void test_drain_resets(void **state)
{
    (void)state;
    dla__bcache c;
    dla__bc_init(&c, 20);
    void *out[DLA__BC_SLOTS + 1];
    for (int i = 0; i < 4; i++)
        dla__bc_put(&c, B(i + 1), 10, NO_BOUND, 0.0, out);
    dla__bc_grow(&c, 50, 1000);
    put_all_kept(&c, 10, 3, 10);
    assert_int_equal(dla__bc_drain(&c, out), 5);
    assert_int_equal(c.count, 0);
    assert_int_equal(c.bytes, 0);
    assert_int_equal(c.limit, 20);
    assert_int_equal(c.ghosts, 0);
    int regret;
    assert_null(dla__bc_take(&c, 10, &regret));
    assert_int_equal(regret, 0);
}

static void test_parse_meminfo(void **state)
{
    (void)state;
    assert_int_equal(dla__cpu_parse_meminfo("MemTotal:       24684092 kB\n"
                                            "MemFree:        22569264 kB\n"
                                            "MemAvailable:   24188236 kB\n"
                                            "Buffers:           16324 kB\n"),
                     (size_t)24188236 * 1024);
    assert_int_equal(dla__cpu_parse_meminfo("MemTotal: 1 kB\nMemFree: 1 kB\n"), 0);
    assert_int_equal(dla__cpu_parse_meminfo(""), 0);
}

static void test_parse_cgroup(void **state)
{
    (void)state;
    char path[64];
    int v1 = -1;
    assert_int_equal(dla__cpu_parse_cgroup("0::/user.slice/session-1.scope\n", path, sizeof path, &v1),
                     1);
    assert_string_equal(path, "/user.slice/session-1.scope");
    assert_int_equal(v1, 0);
    /* v1's memory controller wins over the v2 line, wherever it is. */
    assert_int_equal(dla__cpu_parse_cgroup("9:name=systemd:/\n5:devices:/\n"
                                           "4:memory,other:/process_api/3c18\n0::/\n",
                                           path, sizeof path, &v1),
                     1);
    assert_string_equal(path, "/process_api/3c18");
    assert_int_equal(v1, 1);
    assert_int_equal(dla__cpu_parse_cgroup("5:devices:/\n", path, sizeof path, &v1), 0);
    /* A path too long for the buffer is no path. */
    assert_int_equal(dla__cpu_parse_cgroup("0::/abc\n", path, 3, &v1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_newest_of_size),
        cmocka_unit_test(test_regret_grows_the_cap),
        cmocka_unit_test(test_no_reuse_no_growth),
        cmocka_unit_test(test_grow_bounded),
        cmocka_unit_test(test_put_lowers_to_ceiling),
        cmocka_unit_test(test_too_large_block),
        cmocka_unit_test(test_ghosts_bounded),
        cmocka_unit_test(test_slots_full_no_ghost),
        cmocka_unit_test(test_ceiling),
        cmocka_unit_test(test_release_proportional),
        cmocka_unit_test(test_drain_resets),
        cmocka_unit_test(test_decay_idle_blocks),
        cmocka_unit_test(test_parse_meminfo),
        cmocka_unit_test(test_parse_cgroup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

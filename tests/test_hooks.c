/*
 * test_hooks.c - the observers of core/hooks.h: each hears only what it
 * asked for, in the order they subscribed, on its own thread; a failing
 * op_ran stops the announcement; unsubscribing stops it all.
 */
#include "core/hooks.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

typedef struct listener {
    dla__observer hook; /* first, as the core's subscribers keep it */
    char name;
    dla_status answer;
} listener;

static char heard[64];
static size_t nheard;

static void note(const dla__observer *self, char what)
{
    if (nheard + 2 < sizeof heard) {
        heard[nheard++] = ((const listener *)self)->name;
        heard[nheard++] = what;
        heard[nheard] = '\0';
    }
}

static void on_made(dla__observer *self, const struct dla__storage *st)
{
    (void)st;
    note(self, 'm');
}

static void on_freed(dla__observer *self, const struct dla__storage *st)
{
    (void)st;
    note(self, 'f');
}

static void on_launch(dla__observer *self, struct dla_device *dev, const struct dla__launch *l)
{
    (void)dev, (void)l;
    note(self, 'l');
}

static dla_status on_op(dla__observer *self, const struct dla__op *op, const void *attrs,
                        size_t attrs_size, int nin, dla_tensor *const *in,
                        dla_tensor *const *out, dla_tensor *const *saved)
{
    (void)op, (void)attrs, (void)attrs_size, (void)nin, (void)in, (void)out, (void)saved;
    note(self, 'o');
    return ((listener *)self)->answer;
}

static void on_read(dla__observer *self, const dla_tensor *x)
{
    (void)x;
    note(self, 'r');
}

static void reset_heard(void)
{
    nheard = 0;
    heard[0] = '\0';
}

static void announce_all(void)
{
    dla__hooks_storage_made(NULL);
    dla__hooks_launch(NULL, NULL);
    dla__hooks_transfer();
    dla__hooks_op_ran(NULL, NULL, 0, 0, NULL, NULL, NULL);
    dla__hooks_host_read(NULL);
    dla__hooks_storage_freed(NULL);
}

static void observers_hear_what_they_asked_for_in_order(void **state)
{
    (void)state;
    assert_int_equal(dla__hooks_heard, 0);
    listener a = {.hook = {.launch = on_launch, .op_ran = on_op}, .name = 'A'};
    listener b = {.hook = {.storage_made = on_made, .storage_freed = on_freed, .op_ran = on_op,
                           .host_read = on_read},
                  .name = 'B'};
    dla__hooks_subscribe(&a.hook);
    assert_true(dla__hooks_hear(DLA__HEAR_LAUNCH));
    assert_false(dla__hooks_hear(DLA__HEAR_STORAGE | DLA__HEAR_HOST_READ | DLA__HEAR_TRANSFER));
    dla__hooks_subscribe(&b.hook);
    assert_true(dla__hooks_hear(DLA__HEAR_STORAGE));
    assert_true(dla__hooks_hear(DLA__HEAR_HOST_READ));
    assert_false(dla__hooks_hear(DLA__HEAR_TRANSFER));

    reset_heard();
    announce_all();
    assert_string_equal(heard, "BmAlAoBoBrBf");

    /* A failing op_ran is the status, and the observers after it are not told. */
    a.answer = DLA_ERR_OUT_OF_MEMORY;
    reset_heard();
    assert_int_equal(dla__hooks_op_ran(NULL, NULL, 0, 0, NULL, NULL, NULL), DLA_ERR_OUT_OF_MEMORY);
    assert_string_equal(heard, "Ao");

    dla__hooks_unsubscribe(&a.hook);
    assert_false(dla__hooks_hear(DLA__HEAR_LAUNCH));
    dla__hooks_unsubscribe(&a.hook); /* twice: nothing */
    reset_heard();
    announce_all();
    assert_string_equal(heard, "BmBoBrBf");

    /* Subscribing again puts it last. */
    a.answer = DLA_OK;
    dla__hooks_subscribe(&a.hook);
    reset_heard();
    dla__hooks_op_ran(NULL, NULL, 0, 0, NULL, NULL, NULL);
    assert_string_equal(heard, "BoAo");

    dla__hooks_unsubscribe(&b.hook);
    dla__hooks_unsubscribe(&a.hook);
    assert_int_equal(dla__hooks_heard, 0);
    reset_heard();
    announce_all();
    assert_string_equal(heard, "");
}

static void *other_thread(void *arg)
{
    (void)arg;
    static unsigned seen;
    seen = dla__hooks_heard;
    announce_all();
    return &seen;
}

static void observers_belong_to_their_thread(void **state)
{
    (void)state;
    listener a = {.hook = {.launch = on_launch, .op_ran = on_op}, .name = 'A'};
    dla__hooks_subscribe(&a.hook);
    reset_heard();
    pthread_t th;
    void *seen;
    assert_int_equal(pthread_create(&th, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(th, &seen), 0);
    assert_int_equal(*(unsigned *)seen, 0);
    assert_string_equal(heard, "");
    dla__hooks_unsubscribe(&a.hook);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(observers_hear_what_they_asked_for_in_order),
        cmocka_unit_test(observers_belong_to_their_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

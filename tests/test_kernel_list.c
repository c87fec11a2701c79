/*
 * test_kernel_list.c - the rows of DLA_KERNEL_LIST are the one place a
 * kernel's facts live: the core's lookups answer from them, and the kernel
 * table of docs/plugins.md agrees with them (a member per row, in the
 * list's order, marked with the minor that added it, naming the kernel ids
 * that share a member or came later), so the guide cannot drift from the
 * header.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "core/kernels.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifndef DLA_TEST_SRCDIR
#error "DLA_TEST_SRCDIR (the source tree, for docs/plugins.md) must be defined by the build"
#endif

typedef struct row {
    const char *name, *member;
    int minor;
} row;

#define ROW(id, name, member, minor) {name, #member, minor},
static const row rows[] = {DLA_KERNEL_LIST(ROW)};
#undef ROW

static void lookups_read_the_rows(void **state)
{
    (void)state;
    assert_string_equal(dla__kernel_name(DLA_KERNEL_FILL), "fill");
    assert_string_equal(dla__kernel_name(DLA_KERNEL_FUSED_REDUCE_PAIR), "fused_reduce_pair");
    assert_string_equal(dla__kernel_name(DLA_KERNEL_COUNT), "?");
    assert_int_equal(dla__kernel_member(DLA_KERNEL_GEMM), offsetof(dla_plugin, gemm));
    assert_int_equal(dla__kernel_member(DLA_KERNEL_RANDOM_NORMAL), offsetof(dla_plugin, random));
    assert_int_equal(dla__kernel_member(DLA_KERNEL_FUSED_REDUCE_PAIR),
                     offsetof(dla_plugin, fused_reduce));
    assert_int_equal(dla__kernel_minor(DLA_KERNEL_CAST), 0);
    assert_int_equal(dla__kernel_minor(DLA_KERNEL_SCATTER_ADD), 1);
    assert_int_equal(dla__kernel_minor(DLA_KERNEL_FUSED), 2);
    assert_int_equal(dla__kernel_minor(DLA_KERNEL_RANDOM_UNIFORM), 3);
    assert_int_equal(dla__kernel_minor(DLA_KERNEL_FUSED_REDUCE_PAIR), 4);
    /* Minors never go down along the list: rows are only appended. */
    for (int k = 1; k < DLA_KERNEL_COUNT; k++)
        assert_true(dla__kernel_minor((dla_kernel)k) >= dla__kernel_minor((dla_kernel)(k - 1)));
}

/* The table's row for member ("| `member(..."), or NULL; *line_end set to
 * its end. */
static const char *doc_row(const char *table, const char *member, const char **line_end)
{
    char head[96];
    snprintf(head, sizeof head, "\n| `%s(", member);
    const char *p = strstr(table, head);
    if (!p)
        return NULL;
    p++;
    *line_end = strchr(p, '\n');
    if (!*line_end)
        *line_end = p + strlen(p);
    return p;
}

/* Nonzero when needle occurs in [p, end). */
static int within(const char *p, const char *end, const char *needle)
{
    const size_t n = strlen(needle);
    for (; p + n <= end; p++)
        if (memcmp(p, needle, n) == 0)
            return 1;
    return 0;
}

/* Checks the kernel table text against the rows; returns the number of
 * disagreements, each described on stderr. */
static int check_table(const char *table)
{
    int bad = 0;
    const char *prev = table;
    for (int k = 0; k < DLA_KERNEL_COUNT; k++) {
        const row *r = &rows[k];
        /* The member's minor is that of its first kernel. */
        int first = 0;
        while (strcmp(rows[first].member, r->member) != 0)
            first++;
        const char *end, *p = doc_row(table, r->member, &end);
        if (!p) {
            fprintf(stderr, "docs/plugins.md: no row for member `%s` (kernel %s)\n", r->member,
                    r->name);
            bad++;
            continue;
        }
        if (first == k) {
            if (p < prev) {
                fprintf(stderr, "docs/plugins.md: `%s` is not in DLA_KERNEL_LIST's order\n",
                        r->member);
                bad++;
            }
            prev = p;
            char mark[32];
            snprintf(mark, sizeof mark, "*(1.%d)*", r->minor);
            const int marked = within(p, end, "*(1.");
            if (r->minor == 0 ? marked : !within(p, end, mark)) {
                fprintf(stderr, "docs/plugins.md: `%s` should be marked %s\n", r->member,
                        r->minor ? mark : "with no minor (ABI 1.0)");
                bad++;
            }
        }
        /* A kernel id that is not its member's name is named in the row;
         * one added after its member, with the minor that added it. */
        char id[64];
        snprintf(id, sizeof id, "`%s`", r->name);
        if (strcmp(r->name, r->member) != 0 && !within(p, end, id)) {
            fprintf(stderr, "docs/plugins.md: the row of `%s` does not name kernel %s\n",
                    r->member, id);
            bad++;
        }
        char later[32];
        snprintf(later, sizeof later, "**1.%d:**", r->minor);
        if (r->minor > rows[first].minor && !within(p, end, later)) {
            fprintf(stderr, "docs/plugins.md: the row of `%s` does not say %s adds %s\n",
                    r->member, later, id);
            bad++;
        }
    }
    return bad;
}

static char *read_kernel_table(void)
{
    const char *path = DLA_TEST_SRCDIR "/docs/plugins.md";
    /* The guide is well under the buffer; a read that fills it fails. */
    enum { CAP = 1 << 21 };
    char *text = calloc(1, CAP);
    FILE *f = fopen(path, "rb");
    assert_non_null(text);
    assert_non_null(f);
    assert_true(fread(text, 1, CAP - 1, f) < CAP - 1);
    fclose(f);
    /* From the section's heading to the first blank line after its table. */
    char *start = strstr(text, "\n### Kernels\n");
    assert_non_null(start);
    char *table = strstr(start, "\n| member |");
    assert_non_null(table);
    char *stop = strstr(table + 1, "\n\n");
    if (stop)
        stop[1] = '\0';
    memmove(text, table, strlen(table) + 1);
    return text;
}

static void docs_table_matches_the_rows(void **state)
{
    (void)state;
    char *table = read_kernel_table();
    assert_int_equal(check_table(table), 0);
    free(table);
}

/* The check sees a table that drifted: a row missing, a wrong minor, a
 * shared kernel id not named. */
static void drifted_tables_are_caught(void **state)
{
    (void)state;
    char *table = read_kernel_table();
    char *copy = strdup(table);
    assert_non_null(copy);

    char *gather = strstr(copy, "\n| `gather(");
    assert_non_null(gather);
    gather[3] = 'G'; /* `Gather(: no row for gather */
    assert_true(check_table(copy) > 0);

    strcpy(copy, table);
    char *mark = strstr(strstr(copy, "\n| `fused("), "*(1.2)*");
    assert_non_null(mark);
    mark[4] = '1'; /* fused marked 1.1 */
    assert_true(check_table(copy) > 0);

    strcpy(copy, table);
    char *pair = strstr(copy, "`fused_reduce_pair`");
    assert_non_null(pair);
    memcpy(pair + 1, "fused_reduce_PAIR", 17);
    assert_true(check_table(copy) > 0);

    free(copy);
    free(table);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lookups_read_the_rows),
        cmocka_unit_test(docs_table_matches_the_rows),
        cmocka_unit_test(drifted_tables_are_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * batch.c - a workload entry at another batch (see batch.h).
 */
#include "bench/batch.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct batched {
    bench_workload w;
    char name[96];
    char label[192];
    char reference[96];
    struct batched *next;
} batched;

static batched *copies;

void bench_batch_base_name(const char *name, char *buf, size_t size)
{
    size_t len = strlen(name), end = len;
    while (end > 0 && isdigit((unsigned char)name[end - 1]))
        end--;
    /* "_b" and at least one digit: a batch suffix; anything else stays. */
    if (end < len && end >= 2 && name[end - 1] == 'b' && name[end - 2] == '_')
        len = end - 2;
    snprintf(buf, size, "%.*s", (int)len, name);
}

static void name_at(const char *name, int64_t n, char *buf, size_t size)
{
    char base[96];
    bench_batch_base_name(name, base, sizeof base);
    /* Names are short table literals: a cut one would still be unique. */
    if (snprintf(buf, size, "%s_b%lld", base, (long long)n) >= (int)size)
        buf[size - 1] = '\0';
}

/* label with its "(batch <digits>" made "(batch n"; a label that names no
 * batch gets " (batch n)" after it. */
static void label_at(const char *label, int64_t n, char *buf, size_t size)
{
    static const char key[] = "(batch ";
    const char *at = label ? strstr(label, key) : NULL;
    if (!at) {
        snprintf(buf, size, "%s (batch %lld)", label ? label : "", (long long)n);
        return;
    }
    const char *digits = at + sizeof key - 1, *rest = digits;
    while (isdigit((unsigned char)*rest))
        rest++;
    snprintf(buf, size, "%.*s%lld%s", (int)(digits - label), label, (long long)n, rest);
}

const bench_workload *bench_at_batch(const bench_workload *w, int64_t n)
{
    if (!w || n <= 0 || w->batch <= 0)
        return w;
    batched *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->w = *w;
    b->w.size = n;
    b->w.batch = n;
    /* The work of these workloads is proportional to the batch (every op
     * of a step is per image but the update, which is noise beside it). */
    b->w.work = w->work * (double)n / (double)w->batch;
    name_at(w->name, n, b->name, sizeof b->name);
    b->w.name = b->name;
    label_at(w->label, n, b->label, sizeof b->label);
    b->w.label = b->label;
    const bench_workload *ref = bench_find_reference(w->reference);
    if (ref && ref->batch > 0) {
        name_at(ref->name, n, b->reference, sizeof b->reference);
        b->w.reference = b->reference;
    }
    b->next = copies;
    copies = b;
    return &b->w;
}

void bench_batch_release(void)
{
    while (copies) {
        batched *next = copies->next;
        free(copies);
        copies = next;
    }
}

/*
 * scope.c - scopes: a thread-local stack of tensor lists.
 *
 * A scope holds one reference to every tensor a dlaccel call returned while
 * it was innermost. dla_keep moves that reference one scope out (or to the
 * caller), so keeping is a transfer, never a copy.
 */
#include "core/scope.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/handle.h"
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

typedef struct scope {
    dla_tensor **items;
    size_t count, capacity;
    /* Opened by dlaccel around a user's callback (dla__scope_open_guarded):
     * the callback's dla_scope_end cannot close it, and ends_refused counts
     * the times it tried. */
    int guarded, ends_refused;
} scope;

/* A fixed stack: opening a scope never allocates, so it cannot fail for
 * memory and leave later temporaries without an owner. Nesting deeper than
 * this is refused (and still balanced: end() of a refused level is a no-op). */
#define DLA__SCOPE_MAX_DEPTH 64

static _Thread_local scope stack[DLA__SCOPE_MAX_DEPTH];
static _Thread_local size_t depth, refused;

int dla__scope_active(void) { return depth > 0; }

DLA_API int dla_scope_depth(void) { return (int)(depth + refused); }

static dla_status push_item(scope *s, dla_tensor *t)
{
    if (s->count == s->capacity) {
        size_t cap = s->capacity ? s->capacity * 2 : 32;
        dla_tensor **items = dla__realloc(s->items, cap * sizeof *items);
        if (!items)
            return dla__fail(DLA_ERR_OUT_OF_MEMORY, "scope: cannot hold %zu tensors",
                             s->count + 1);
        s->items = items;
        s->capacity = cap;
    }
    s->items[s->count++] = t;
    return DLA_OK;
}

DLA_API dla_status dla_scope_begin(void)
{
    if (refused || depth == DLA__SCOPE_MAX_DEPTH) {
        refused++;
        return dla__fail(DLA_ERR_STATE, "dla_scope_begin: scopes nest at most %d deep",
                         DLA__SCOPE_MAX_DEPTH);
    }
    memset(&stack[depth], 0, sizeof stack[depth]);
    depth++;
    return DLA_OK;
}

static void scope_close(void);

DLA_API void dla_scope_end(void)
{
    /* One dla_scope_end too many inside a callback closed the scope
     * dlaccel opened around it, releasing what the callback had just made
     * (its result), and dlaccel's own end then closed the caller's scope:
     * every tensor the caller held there was released under it. */
    if (depth > 0 && !refused && stack[depth - 1].guarded) {
        stack[depth - 1].ends_refused++;
        dla__misuse(DLA_ERR_STATE, "dla_scope_end: the scope open here is the one dlaccel opened "
                    "around a callback (the callback called dla_scope_end more times than "
                    "dla_scope_begin); it stays open");
        return;
    }
    scope_close();
}

static void scope_close(void)
{
    if (depth == 0) {
        /* Nothing to return it through: the log and the last error say it. */
        dla__misuse(DLA_ERR_STATE, "dla_scope_end: no scope is open on this thread (one more "
                    "dla_scope_end than dla_scope_begin)");
        return;
    }
    if (refused) {
        refused--;
        return;
    }
    scope *s = &stack[depth - 1];
    /* Newest first, so a view is dropped before the tensor it came from. */
    for (size_t i = s->count; i-- > 0;)
        dla__tensor_scope_release(s->items[i]);
    dla__free(s->items);
    memset(s, 0, sizeof *s);
    depth--;
}

int dla__scope_open_guarded(dla_status *status)
{
    dla_status st = dla_scope_begin();
    if (st == DLA_OK)
        stack[depth - 1].guarded = 1;
    if (status)
        *status = st;
    return (int)(depth + refused);
}

int dla__scope_guarded_imbalance(int mark)
{
    const size_t now = depth + refused;
    if (now > (size_t)mark)
        return (int)(now - (size_t)mark);
    return now == (size_t)mark && !refused && depth > 0 ? -stack[depth - 1].ends_refused : 0;
}

int dla__scope_close_guarded(int mark)
{
    int left_open = 0, ends = 0;
    /* The callback's own scopes it left open: closed (their tensors were
     * its temporaries), and counted for the message. */
    while (depth + refused > (size_t)mark) {
        scope_close();
        left_open++;
    }
    if (depth + refused == (size_t)mark && depth + refused > 0) {
        if (!refused)
            ends = stack[depth - 1].ends_refused;
        scope_close();
    }
    return left_open ? left_open : -ends;
}

dla_status dla__scope_adopt(dla_tensor *t)
{
    DLA_ASSERT(depth > 0);
    dla_status st = push_item(&stack[depth - 1], t);
    if (st == DLA_OK)
        dla__tensor_scope_took(t);
    return st;
}

DLA_API dla_tensor *dla_keep(dla_tensor *t)
{
    if (!t || !dla__tensor_check(t, "dla_keep") || depth == 0)
        return t;
    scope *s = &stack[depth - 1];
    for (size_t i = s->count; i-- > 0;) {
        if (s->items[i] != t)
            continue;
        memmove(&s->items[i], &s->items[i + 1], (s->count - i - 1) * sizeof *s->items);
        s->count--;
        if (depth >= 2 && push_item(&stack[depth - 2], t) != DLA_OK) {
            /* The outer scope cannot take it: leave it where it was, so the
             * reference is still owned and nothing leaks. */
            s->items[s->count++] = t;
        } else if (depth == 1) {
            dla__tensor_scope_gave(t); /* the caller's now */
        }
        return t;
    }
    return t; /* not owned by this scope: already the caller's */
}

const char *dla__scope_imbalance_str(int imbalance, char *buf, size_t size)
{
    if (imbalance > 0)
        snprintf(buf, size, "left %d scope%s open (dla_scope_begin without dla_scope_end)",
                 imbalance, imbalance == 1 ? "" : "s");
    else
        snprintf(buf, size, "called dla_scope_end %d more time%s than dla_scope_begin",
                 -imbalance, imbalance == -1 ? "" : "s");
    return buf;
}

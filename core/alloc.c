/*
 * alloc.c - host allocation through the user's hook (Lua's lua_Alloc shape).
 *
 * Jansson is routed here too, so a refused allocation inside manifest parsing
 * is an ordinary error. Aligned blocks store the raw pointer just before the
 * aligned one, so they can be freed through the same hook.
 */
#include "core/alloc.h"

#include "core/handle.h"

#include <dlaccel.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *user, void *ptr, size_t size)
{
    (void)user;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, size);
}

static dla_alloc_fn alloc_fn = default_alloc;
static void *alloc_user;

static void *json_malloc(size_t size) { return dla__malloc(size); }
static void json_free(void *ptr) { dla__free(ptr); }

DLA_API void dla_set_allocator(dla_alloc_fn fn, void *user)
{
    /* Parked handles go back to the allocator that made them; a user's
     * allocator gets full rings, so its count of live blocks stays steady. */
    dla__quarantine_flush();
    alloc_fn = fn ? fn : default_alloc;
    alloc_user = fn ? user : NULL;
    json_set_alloc_funcs(json_malloc, json_free);
    if (fn)
        dla__quarantine_fill();
}

void *dla__malloc(size_t size)
{
    /* size 0 would mean "free" to the hook; hand out a real block instead. */
    return alloc_fn(alloc_user, NULL, size ? size : 1);
}

void *dla__calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = dla__malloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *dla__realloc(void *ptr, size_t size)
{
    return alloc_fn(alloc_user, ptr, size ? size : 1);
}

void dla__free(void *ptr)
{
    if (ptr)
        alloc_fn(alloc_user, ptr, 0);
}

void *dla__malloc_aligned(size_t size, size_t align)
{
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (size > SIZE_MAX - align - sizeof(void *))
        return NULL;
    unsigned char *raw = dla__malloc(size + align + sizeof(void *));
    if (!raw)
        return NULL;
    uintptr_t start = (uintptr_t)(raw + sizeof(void *));
    uintptr_t aligned = (start + align - 1) & ~(uintptr_t)(align - 1);
    ((void **)aligned)[-1] = raw;
    return (void *)aligned;
}

void dla__free_aligned(void *ptr)
{
    if (ptr)
        dla__free(((void **)ptr)[-1]);
}

char *dla__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = dla__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

DLA_API void *dla_malloc(size_t size) { return dla__malloc(size); }
DLA_API void *dla_realloc(void *ptr, size_t size) { return dla__realloc(ptr, size); }
DLA_API void dla_free(void *ptr) { dla__free(ptr); }

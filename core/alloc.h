/*
 * alloc.h - the one door for host memory.
 *
 * Every host allocation of the library goes through dla__alloc/dla__free so
 * that the user's hook (dla_set_allocator) sees it, and tests can refuse the
 * Nth one. Failure is reported by the caller with DLA_ERR_OUT_OF_MEMORY.
 */
#ifndef DLA_CORE_ALLOC_H
#define DLA_CORE_ALLOC_H

#include <stddef.h>

/* malloc/realloc/free through the hook. dla__realloc keeps ptr on failure. */
void *dla__malloc(size_t size);
void *dla__calloc(size_t count, size_t size);
void *dla__realloc(void *ptr, size_t size);
void dla__free(void *ptr);
/* size bytes aligned to align (a power of two); freed with dla__free_aligned. */
void *dla__malloc_aligned(size_t size, size_t align);
void dla__free_aligned(void *ptr);
/* strdup through the hook. */
char *dla__strdup(const char *s);

#endif

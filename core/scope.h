/*
 * scope.h - per-thread scopes that own the tensors made inside them
 * (autorelease pools), so model code needs no release calls.
 */
#ifndef DLA_CORE_SCOPE_H
#define DLA_CORE_SCOPE_H

#include <dlaccel.h>

/* Nonzero when the calling thread has an open scope. */
int dla__scope_active(void);
/* Gives the innermost scope the caller's reference to t. DLA_ERR_OUT_OF_MEMORY
 * when the scope cannot grow (the reference stays with the caller). */
dla_status dla__scope_adopt(dla_tensor *t);

#endif

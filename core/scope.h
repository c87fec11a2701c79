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

/* A scope opened around a user's callback (a model function, a custom
 * layer's predict, a datastore's read): the callback's dla_scope_end
 * cannot close it (it is refused, as a misuse, and counted), so one end
 * too many never releases the callback's results nor closes the caller's
 * scope. Returns the mark dla__scope_close_guarded takes; *status (when
 * not NULL) is dla_scope_begin's. */
int dla__scope_open_guarded(dla_status *status);
/* Closes the scopes the callback left open above mark, then the guarded
 * scope. Returns how many the callback left open (> 0), minus the ends it
 * called too many (< 0), or 0 when it was balanced. */
int dla__scope_close_guarded(int mark);
/* What dla__scope_close_guarded would return, without closing anything. */
int dla__scope_guarded_imbalance(int mark);
/* The message for a nonzero dla__scope_close_guarded: "called
 * dla_scope_end 1 more time than dla_scope_begin" or "left 2 scopes open
 * (dla_scope_begin without dla_scope_end)". */
const char *dla__scope_imbalance_str(int imbalance, char *buf, size_t size);

#endif

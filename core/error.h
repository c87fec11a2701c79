/*
 * error.h - the thread's last error and the helpers that set it.
 *
 * Every failing path calls dla__fail() with a message naming the op, the
 * argument and the shapes; the message is kept per thread for
 * dla_last_error() and copied into the error tensor the op returns.
 */
#ifndef DLA_CORE_ERROR_H
#define DLA_CORE_ERROR_H

#include <dlaccel.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Records status and the formatted message for the calling thread; returns
 * status so callers can `return dla__fail(...)`. */
dla_status dla__fail(dla_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
dla_status dla__failv(dla_status status, const char *fmt, va_list ap);
/* How many failures this thread has recorded (dla__fail, dla_set_error):
 * a caller of user code compares it before and after, to tell a function
 * that returned an error without a message (the last error is then an
 * older, unrelated one) from one that said why. */
unsigned long dla__fail_count(void);
/* After fn returned st: when st is an error and fn recorded no failure,
 * records one naming op and st, so the last error is not an older one. */
void dla__fail_unsaid(const char *op, dla_status st, unsigned long count_before);

/* Rewrites the thread's last error with its control characters (C0, DEL
 * and UTF-8's C1, U+0080 to U+009F) as \xNN text, and returns st: a
 * loader's message quotes what the file holds (a layer or op name, a
 * section's), and a tool or application printing it wrote a crafted
 * file's escape sequences to the terminal. */
dla_status dla__fail_as_text(dla_status st);

/* Prefixes the thread's current message with "op: " (used when a plugin's
 * message needs the op that called it). */
void dla__error_prefix(const char *op);

/* Our own broken invariant: abort with the place. Never for user input. */
#define DLA_ASSERT(cond)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "dlaccel: internal error: %s at %s:%d\n", #cond,   \
                    __FILE__, __LINE__);                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Writes dims as "28x28x1x128" ("scalar" for none) into buf. */
const char *dla__dims_str(char *buf, size_t size, int ndims, const int64_t *dims);
#define DLA__DIMS_BUF 160

#endif

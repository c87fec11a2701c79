/*
 * env_choice.h - a DLACCEL_* variable that takes one of a fixed set of
 * values, read and checked.
 *
 * Why: a misspelt value (DLACCEL_PLAN=of, DLACCEL_CPU_CONV=Direct) used to
 * leave the default in place with no word, so the user measured the
 * default believing they had changed it. An unknown value now logs one
 * warning (visible at the default DLACCEL_LOG) naming the variable, the
 * value and the accepted values, and the default applies.
 *
 * Header-only, so the plugins (which do not link the core) share it: the
 * core passes dla__log, a plugin its host->log. The includer defines
 * _GNU_SOURCE before its first include (secure_getenv: a set-user-ID
 * program ignores these variables, as the registry does).
 */
#ifndef DLA_CORE_ENV_CHOICE_H
#define DLA_CORE_ENV_CHOICE_H

#include <dlaccel/plugin.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*dla__env_log_fn)(dla_log_level level, const char *fmt, ...);

/* The index in accepted (a NULL-terminated list) of the value of name;
 * -1 when it is unset or empty, and for any other value, which is logged
 * at warn the first time *warned is clear (one flag per variable keeps it
 * to one line per process, however often the caller reads it). */
static inline int dla__env_choice(const char *name, const char *const *accepted,
                                  atomic_int *warned, dla__env_log_fn log)
{
    const char *v = secure_getenv(name);
    if (!v || !*v)
        return -1;
    for (int i = 0; accepted[i]; i++)
        if (!strcmp(v, accepted[i]))
            return i;
    if (log && !atomic_exchange(warned, 1)) {
        char list[256] = "";
        size_t n = 0;
        for (int i = 0; accepted[i] && n < sizeof list; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", accepted[i]);
        log(DLA_LOG_WARN, "%s=%.64s%s is not one of its values (%s); ignored, the default applies",
            name, v, strlen(v) > 64 ? "..." : "", list);
    }
    return -1;
}

#endif

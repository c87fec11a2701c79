/*
 * log.c - leveled diagnostics chosen by DLACCEL_LOG.
 *
 * Environment is read with secure_getenv so a setuid program cannot be made
 * to log (or, in the registry, load plugins) by its caller.
 */
#define _GNU_SOURCE
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int cached_level = -1;

static dla_log_level parse_level(const char *s)
{
    if (!s || !*s)
        return DLA_LOG_WARN;
    static const char *const names[] = {"none", "error", "warn", "info", "debug"};
    for (int i = 0; i < 5; i++)
        if (strcasecmp(s, names[i]) == 0)
            return (dla_log_level)i;
    return DLA_LOG_WARN;
}

dla_log_level dla__log_level(void)
{
    if (cached_level < 0) {
        const char *v = secure_getenv("DLACCEL_LOG");
        cached_level = (int)parse_level(v);
        /* Said once per read, after the level is set (dla__log reads it). */
        if (v && *v && strcasecmp(v, "warn") && cached_level == DLA_LOG_WARN)
            dla__log(DLA_LOG_WARN,
                     "DLACCEL_LOG=%.64s is not one of its values (none, error, warn, info, debug, "
                     "any case); warn applies",
                     v);
    }
    return (dla_log_level)cached_level;
}

void dla__log_reset(void) { cached_level = -1; }

void dla__logv(dla_log_level level, const char *prefix, const char *fmt, va_list ap)
{
    static const char *const tags[] = {"", "error", "warn", "info", "debug"};
    if (level > dla__log_level())
        return;
    /* One fprintf per line keeps lines from several threads whole. */
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "dlaccel[%s]: %s%s\n", tags[level], prefix ? prefix : "", line);
}

void dla__log(dla_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__logv(level, NULL, fmt, ap);
    va_end(ap);
}

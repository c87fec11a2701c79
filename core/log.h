/*
 * log.h - the DLACCEL_LOG diagnostics (error|warn|info|debug) on stderr.
 */
#ifndef DLA_CORE_LOG_H
#define DLA_CORE_LOG_H

#include <dlaccel/plugin.h>
#include <stdarg.h>

/* The level from DLACCEL_LOG, read once (default: warn). */
dla_log_level dla__log_level(void);
/* Re-reads DLACCEL_LOG (tests change it between cases). */
void dla__log_reset(void);
/* "dlaccel[info]: <message>\n" on stderr when level <= the set level. */
void dla__log(dla_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dla__logv(dla_log_level level, const char *prefix, const char *fmt, va_list ap);

#endif

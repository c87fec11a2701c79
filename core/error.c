/*
 * error.c - status strings and the per-thread last error.
 */
#include "core/error.h"

#include <dlaccel/plugin_kit.h>

#include <stdio.h>
#include <string.h>

#define DLA__STATUS_STR(name, str) str,
static const char *const status_names[] = {DLA_STATUS_LIST(DLA__STATUS_STR)};
_Static_assert(sizeof status_names / sizeof status_names[0] == DLA_STATUS_COUNT,
               "status names out of step with DLA_STATUS_LIST");

static _Thread_local char last_message[1024];
static _Thread_local dla_status last_status;
static _Thread_local unsigned long fail_count;

DLA_API const char *dla_status_str(dla_status status)
{
    if ((unsigned)status >= DLA_STATUS_COUNT)
        return "unknown status";
    return status_names[status];
}

DLA_API const char *dla_last_error(void) { return last_message; }
DLA_API dla_status dla_last_status(void) { return last_status; }

DLA_API void dla_clear_error(void)
{
    last_message[0] = '\0';
    last_status = DLA_OK;
}

dla_status dla__failv(dla_status status, const char *fmt, va_list ap)
{
    /* Formatted aside first: a message that quotes the last one
     * (dla_set_error(st, "...: %s", dla_last_error())) would otherwise be
     * read while it is overwritten. */
    char msg[sizeof last_message];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(last_message, msg, sizeof msg);
    last_status = status;
    fail_count++;
    return status;
}

unsigned long dla__fail_count(void) { return fail_count; }

void dla__fail_unsaid(const char *op, dla_status st, unsigned long count_before)
{
    if (st != DLA_OK && fail_count == count_before)
        dla__fail(st, "%s: the function returned \"%s\" and gave no reason (dla_set_error "
                  "gives one)", op, dla_status_str(st));
}

dla_status dla__fail(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__failv(status, fmt, ap);
    va_end(ap);
    return status;
}

dla_status dla__fail_as_text(dla_status st)
{
    const unsigned char *m = (const unsigned char *)last_message;
    char text[sizeof last_message];
    size_t at = 0;
    for (size_t i = 0; m[i] && at + 9 < sizeof text; i++) {
        const int c1 = m[i] == 0xc2 && m[i + 1] >= 0x80 && m[i + 1] <= 0x9f;
        if ((m[i] < 0x20 && m[i] != '\t') || m[i] == 0x7f || c1) {
            at += (size_t)snprintf(text + at, sizeof text - at, c1 ? "\\xc2\\x%02x" : "\\x%02x",
                                   c1 ? m[i + 1] : m[i]);
            i += (size_t)c1;
        } else {
            text[at++] = (char)m[i];
        }
    }
    text[at] = '\0';
    return dla__fail(st, "%s", text);
}

void dla__error_prefix(const char *op)
{
    size_t n = strlen(op);
    if ((strncmp(last_message, op, n) == 0 && last_message[n] == ':') ||
        strncmp(last_message, "dla_", 4) == 0)
        return; /* already names the op (every public op's messages start "dla_") */
    char tmp[sizeof last_message + 64];
    snprintf(tmp, sizeof tmp, "%s: %s", op, last_message);
    memcpy(last_message, tmp, sizeof last_message - 1);
    last_message[sizeof last_message - 1] = '\0';
}

const char *dla__dims_str(char *buf, size_t size, int ndims, const int64_t *dims)
{
    return dla_kit_dims_str(buf, size, ndims, dims); /* the plugins' wording too */
}

DLA_API dla_status dla_set_error(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__failv(status, fmt, ap);
    va_end(ap);
    return status;
}

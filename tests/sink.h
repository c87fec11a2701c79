/*
 * sink.h - what a function prints, collected as text, for the suites that
 * test output (test_train, test_progress). open_memstream is POSIX 2008:
 * the including file defines _GNU_SOURCE (or _POSIX_C_SOURCE) first.
 */
#ifndef DLA_TEST_SINK_H
#define DLA_TEST_SINK_H

#include <stdio.h>

/* What a function writes to a FILE, as text (open_memstream): open, hand
 * f over, then tu_sink_text closes it and gives the text (free it). */
typedef struct tu_sink {
    FILE *f;
    char *text;
    size_t len;
} tu_sink;

__attribute__((unused)) static FILE *tu_sink_open(tu_sink *s)
{
    s->text = NULL;
    s->len = 0;
    return s->f = open_memstream(&s->text, &s->len);
}

__attribute__((unused)) static char *tu_sink_text(tu_sink *s)
{
    fclose(s->f);
    s->f = NULL;
    return s->text;
}

#endif

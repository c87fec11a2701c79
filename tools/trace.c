/*
 * trace.c - `dlaccel trace FILE`: a trace saved with dla_trace_save, as
 * text (the same text dla_trace_print writes), and `dlaccel trace --ops`:
 * the op names a trace file may use.
 *
 * Loading is the whole check: a file the library refuses is reported with
 * the library's message (which names the file and the problem) and exit
 * status 1.
 */
#include "tools/commands.h"

#include <dlaccel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int list_ops(void)
{
    int n = dla_trace_op_count();
    const char **names = malloc(sizeof *names * (size_t)(n ? n : 1));
    if (!names) {
        fprintf(stderr, "dlaccel trace: out of memory\n");
        return DLA_TOOL_FAILED;
    }
    for (int i = 0; i < n; i++)
        names[i] = dla_trace_op_name(i);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++)
        printf("%s\n", names[i]);
    free(names);
    return DLA_TOOL_OK;
}

int dla_tool_trace(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "dlaccel trace: takes one file (or --ops)\n");
        return DLA_TOOL_USAGE;
    }
    if (strcmp(argv[1], "--ops") == 0)
        return list_ops();
    dla_trace *t;
    if (dla_trace_load(argv[1], &t) != DLA_OK) {
        fprintf(stderr, "dlaccel trace: %s\n", dla_last_error());
        return DLA_TOOL_FAILED;
    }
    printf("%s:\n", argv[1]);
    dla_status st = dla_trace_print(t, stdout);
    dla_trace_release(t);
    if (st != DLA_OK || fflush(stdout) != 0) {
        fprintf(stderr, "dlaccel trace: cannot write the text\n");
        return DLA_TOOL_FAILED;
    }
    return DLA_TOOL_OK;
}

/*
 * file_special.h - whether a path names something other than a file.
 *
 * Why: the library writes nets, traces and charts through a temporary file
 * renamed over the path, so a failed write never leaves half a file. Renamed
 * over /dev/null (a user silencing the chart with `--chart /dev/null`), a
 * FIFO or a terminal, that replaces the device node itself with a regular
 * file: /dev/null became a 0-byte file on a test machine and every program
 * that checks it (tmux) stopped working. Such paths are written in place.
 */
#ifndef DLA_CORE_FILE_SPECIAL_H
#define DLA_CORE_FILE_SPECIAL_H

#include <sys/stat.h>

/* 1 when path exists and is neither a regular file nor a directory (a
 * device, FIFO or socket, after following symbolic links): write it in
 * place, never rename over it. */
static inline int dla__path_is_special(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

#endif

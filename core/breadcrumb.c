/*
 * breadcrumb.c - the files that name a plugin whose init never returned
 * (see breadcrumb.h for why).
 *
 * Where: $XDG_CACHE_HOME/dlaccel, else $HOME/.cache/dlaccel, else
 * /tmp/dlaccel-<uid>; none in a set-user-ID or set-group-ID program, which
 * should not write files on the strength of a caller's environment. Each file is init-<pid>.crumb,
 * holding the plugin's name and library on two lines: a process writes
 * only its own, so processes starting at the same time never mistake each
 * other's init in progress for a crash (a breadcrumb whose process still
 * runs is left alone). A folder that is not ours, or is open to others,
 * is not used: a breadcrumb is a hint, never worth trusting someone else's
 * files for.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "core/breadcrumb.h"

#include "core/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "init-"
#define SUFFIX ".crumb"

/* A folder we own that others cannot write to; created (0700) if absent. */
static int usable_dir(const char *dir, int create)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (!create || errno != ENOENT || mkdir(dir, 0700) != 0 || lstat(dir, &st) != 0)
            return 0;
    }
    return S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* The breadcrumb folder into buf; 0 when there is none to use. */
static int crumb_dir(char *buf, size_t size, int create)
{
    if (getauxval(AT_SECURE))
        return 0;
    const char *xdg = secure_getenv("XDG_CACHE_HOME"), *home = secure_getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') { /* the XDG spec ignores a relative value */
        n = snprintf(buf, size, "%s/dlaccel", xdg);
        if (create)
            mkdir(xdg, 0700);
    } else if (home && home[0] == '/') {
        char cache[4096];
        snprintf(cache, sizeof cache, "%s/.cache", home);
        if (create)
            mkdir(cache, 0700);
        n = snprintf(buf, size, "%s/.cache/dlaccel", home);
    } else {
        n = snprintf(buf, size, "/tmp/dlaccel-%lu", (unsigned long)geteuid());
    }
    return n > 0 && (size_t)n < size && usable_dir(buf, create);
}

int dla__breadcrumb_drop(const char *name, const char *lib, const char *stage, char *path,
                         size_t size)
{
    char dir[4096];
    path[0] = '\0';
    dir[0] = '\0';
    if (!crumb_dir(dir, sizeof dir, 1)) {
        dla__log(DLA_LOG_DEBUG, "plugin '%s': no folder for the init breadcrumb (%s)", name,
                 dir[0] ? dir : "set-ID program");
        return -1;
    }
    int n = snprintf(path, size, "%s/" PREFIX "%ld" SUFFIX, dir, (long)getpid());
    if (n < 0 || (size_t)n >= size) {
        path[0] = '\0';
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    char text[8192];
    int len = snprintf(text, sizeof text, "%s\n%s\n%s\n", name, lib, stage);
    if (fd < 0 || len < 0 || (size_t)len >= sizeof text || write(fd, text, (size_t)len) != len) {
        dla__log(DLA_LOG_DEBUG, "plugin '%s': cannot write the init breadcrumb %s: %s", name, path,
                 strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        path[0] = '\0';
        return -1;
    }
    close(fd);
    dla__log(DLA_LOG_DEBUG, "plugin '%s': %s breadcrumb %s", name, stage, path);
    return 0;
}

void dla__breadcrumb_pick(const char *path)
{
    if (path && path[0])
        unlink(path);
}

/* Whether process pid still runs (EPERM: it does, as another user's). */
static int alive(long pid)
{
    return pid > 0 && pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* Reports and removes the breadcrumb dir/file, if its process is gone. */
static void report_one(const char *dir, const char *file)
{
    char *end;
    long pid = strtol(file + strlen(PREFIX), &end, 10);
    if (end == file + strlen(PREFIX) || strcmp(end, SUFFIX) != 0 || alive(pid))
        return;
    char path[4096 + 256], text[8192] = "";
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        ssize_t got = read(fd, text, sizeof text - 1);
        text[got > 0 ? got : 0] = '\0';
        close(fd);
    }
    /* name, library, stage: one a line (no stage: a breadcrumb of init,
     * as every one was before the device listing had its own). */
    char *lib = strchr(text, '\n'), *stage = NULL;
    if (lib) {
        *lib++ = '\0';
        stage = strchr(lib, '\n');
        if (stage) {
            *stage++ = '\0';
            stage[strcspn(stage, "\n")] = '\0';
        }
    }
    if (text[0])
        dla__log(DLA_LOG_WARN,
                 "plugin '%s' (%s) crashed during its %s in an earlier run (process %ld): "
                 "if it does again, DLACCEL_PLUGINS_DISABLE=%s skips it",
                 text, lib && *lib ? lib : "library unknown", stage && *stage ? stage : "init",
                 pid, text);
    unlink(path);
}

void dla__breadcrumb_report(void)
{
    char dir[4096];
    if (!crumb_dir(dir, sizeof dir, 0))
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (!strncmp(e->d_name, PREFIX, strlen(PREFIX)))
            report_one(dir, e->d_name);
    closedir(d);
}

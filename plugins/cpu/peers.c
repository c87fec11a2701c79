/*
 * peers.c - the dlaccel processes of this user on this machine, so that
 * each takes its share of the CPUs (threads.c).
 *
 * Why: two training jobs on a 2-core machine each run 2 threads by default,
 * 4 threads on 2 cores; a team's barrier then waits for a teammate the
 * scheduler has put aside, and both jobs run far slower than at 1 thread
 * each (issue 19). MPI ranks know their count from the launcher; separate
 * processes know nothing of each other. So each process that loads the cpu
 * plugin holds a shared flock on a file of its own in
 * /dev/shm/dlaccel-<uid>/, named by its pid, for as long as it lives (the
 * kernel drops the lock when the process ends, however it ends); a count
 * is the files whose lock someone holds, and a file whose lock can be taken
 * is a dead process's and is removed.
 *
 * A file is locked before it has its name (made under a temporary name,
 * locked, then renamed), so no count ever sees a live process's file
 * unlocked. Nothing here is needed for correctness: where /dev/shm cannot
 * be used, a process counts itself alone.
 */
#define _GNU_SOURCE /* O_CLOEXEC, O_NOFOLLOW */
#include "plugins/cpu/cpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static int self_fd = -1;

int dla__cpu_peers_join(void)
{
    if (self_fd >= 0)
        return dla__cpu_peers_count();
    snprintf(dir, sizeof dir, "/dev/shm/dlaccel-%u", (unsigned)getuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return 0;
    struct stat st;
    /* Ours alone: a folder someone else made under our name is not used. */
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
        return 0;
    char tmp[96], path[96];
    snprintf(tmp, sizeof tmp, "%s/.new-%d", dir, (int)getpid());
    snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return 0;
    if (flock(fd, LOCK_SH) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        close(fd);
        return 0;
    }
    self_fd = fd;
    return dla__cpu_peers_count();
}

int dla__cpu_peers_count(void)
{
    DIR *d = dir[0] ? opendir(dir) : NULL;
    if (!d)
        return 1;
    int n = 0;
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') /* ., .. and files not yet named */
            continue;
        char path[sizeof dir + sizeof e->d_name + 1];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlink(path); /* nobody holds it: its process has ended */
        else
            n++;
        close(fd); /* and with it the probe's lock */
    }
    closedir(d);
    return n > 0 ? n : 1;
}

/*
 * fuzz_file.h - what the libFuzzer harnesses share. The readers under test
 * take a path, so each input is written to one private file and read back
 * from there: the harnesses go through the same door as a user's file.
 */
#ifndef DLA_FUZZ_FILE_H
#define DLA_FUZZ_FILE_H

#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file each input goes through: under /dev/shm when there is one, so
 * a run costs no disk; one per process so parallel fuzzers do not meet. */
static char dla_fuzz_path[256];

static void dla_fuzz_remove(void) { unlink(dla_fuzz_path); }

/* Sets the environment every harness wants (the build tree's plugins, one
 * OpenMP thread so a run is cheap and deterministic, quiet logging) and
 * picks the file name; suffix is the file's extension. */
static void dla_fuzz_init(const char *suffix)
{
#ifdef DLA_FUZZ_PLUGIN_PATH
    setenv("DLACCEL_PLUGIN_PATH", DLA_FUZZ_PLUGIN_PATH, 0);
#endif
    setenv("OMP_NUM_THREADS", "1", 0);
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(dla_fuzz_path, sizeof dla_fuzz_path, "%s/dla-fuzz-%ld%s", dir ? dir : "/tmp",
             (long)getpid(), suffix);
    atexit(dla_fuzz_remove);
}

/* Writes the input to the file; aborts when it cannot (a harness that
 * silently tests nothing would look clean). */
static const char *dla_fuzz_write(const uint8_t *data, size_t size)
{
    FILE *f = fopen(dla_fuzz_path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(dla_fuzz_path);
        abort();
    }
    return dla_fuzz_path;
}

#endif

/*
 * replay_main.c - a harness's LLVMFuzzerTestOneInput run once on each
 * file named (or each file in a folder named), without libFuzzer: `make
 * check` builds every harness so with the project's compiler and replays
 * the seeds through it (tests/fuzz_seeds.sh). A harness that no longer
 * builds, or an input that once crashed and crashes again, then fails the
 * ordinary build and test rather than the next fuzzing session. Prints
 * how many inputs ran; exits 1 when none did (a replay of nothing would
 * look clean).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    const int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        fprintf(stderr, "%s: %s\n", path, buf ? "read error" : "out of memory");
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 1;
}

/* Files of a folder in name order, so a run is the same each time. */
static int replay_folder(const char *dir)
{
    struct dirent **names;
    const int count = scandir(dir, &names, NULL, alphasort);
    if (count < 0) {
        perror(dir);
        return -1;
    }
    int ran = 0, failed = 0;
    for (int i = 0; i < count; i++) {
        char path[4096];
        struct stat st;
        if (!failed && names[i]->d_name[0] != '.' &&
            snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name) < (int)sizeof path &&
            stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            const int r = replay_file(path);
            failed = r < 0;
            ran += r > 0;
        }
        free(names[i]);
    }
    free(names);
    return failed ? -1 : ran;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    int ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        const int r = S_ISDIR(st.st_mode) ? replay_folder(argv[i]) : replay_file(argv[i]);
        if (r < 0)
            return 1;
        ran += r;
    }
    printf("%d inputs replayed\n", ran);
    return ran > 0 ? 0 : 1;
}

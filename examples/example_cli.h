/*
 * example_cli.h - what the examples that make their own data share: the
 * command line [--epochs N] [--count N] [--seed S], and the test accuracy
 * per class from a network's scores.
 */
#ifndef DLACCEL_EXAMPLES_EXAMPLE_CLI_H
#define DLACCEL_EXAMPLES_EXAMPLE_CLI_H

#include <dlaccel.h>
#include <dlaccel/loss.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*example_run_fn)(int epochs, int64_t count, uint64_t seed);

/* Reads --epochs, --count (training examples; at least 64) and --seed
 * over the defaults given, then runs run inside a scope (every tensor it
 * makes is released at its end) and returns its status; 2 on bad
 * arguments, with a message naming the example. */
static inline int example_main(int argc, char **argv, const char *name, int epochs, int64_t count,
                               example_run_fn run)
{
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--epochs") && i + 1 < argc)
            epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--epochs N] [--count N] [--seed S]\n", argv[0]);
            return 2;
        }
    }
    if (epochs < 1 || count < 64) {
        fprintf(stderr, "%s: --epochs needs a positive count and --count at least 64\n", name);
        return 2;
    }
    dla_scope_begin();
    const int rc = run(epochs, count, seed);
    dla_scope_end();
    return rc;
}

/* How many of each class's test examples the scores name right: prints
 * "test accuracy: P% of N <what> (name right/all, ...)" and returns the
 * percentage, or a negative number when the tensors cannot be read. */
static inline double example_per_class(dla_tensor *targets, dla_tensor *scores, int classes,
                                       const char *const *names, const char *what)
{
    const int64_t n = dla_tensor_numel(targets);
    int32_t *want = malloc(sizeof *want * (size_t)n), *got = malloc(sizeof *got * (size_t)n);
    int64_t *right = calloc((size_t)classes, sizeof *right);
    int64_t *all = calloc((size_t)classes, sizeof *all);
    double accuracy = -1;
    if (want && got && right && all &&
        dla_tensor_to_host(targets, want, sizeof *want * (size_t)n) == DLA_OK &&
        dla_tensor_to_host(dla_cast(dla_onehotdecode(scores, NULL), DLA_I32), got,
                           sizeof *got * (size_t)n) == DLA_OK) {
        int64_t total = 0;
        for (int64_t i = 0; i < n; i++) {
            all[want[i]]++;
            right[want[i]] += got[i] == want[i];
            total += got[i] == want[i];
        }
        accuracy = 100.0 * (double)total / (double)n;
        printf("\ntest accuracy: %.2f%% of %lld %s (", accuracy, (long long)n, what);
        for (int k = 0; k < classes; k++)
            printf("%s%s %lld/%lld", k ? ", " : "", names[k], (long long)right[k],
                   (long long)all[k]);
        printf(")\n");
    }
    free(want);
    free(got);
    free(right);
    free(all);
    return accuracy;
}

#endif

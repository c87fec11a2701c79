/*
 * example_cli.h - what the examples that make their own data share: the
 * command line [--epochs N] [--count N] [--seed S], and the test accuracy
 * per class from a network's scores.
 */
#ifndef DLACCEL_EXAMPLES_EXAMPLE_CLI_H
#define DLACCEL_EXAMPLES_EXAMPLE_CLI_H

#include "example_args.h"

#include <dlaccel.h>
#include <dlaccel/loss.h>
#include <dlaccel/net.h>
#include <dlaccel/train.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*example_run_fn)(int epochs, int64_t count, uint64_t seed);

/* The examples' own stream (splitmix64), so that the data they make does
 * not depend on what else draws from the library's. */
static inline uint64_t example_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi) from that stream. */
static inline double example_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(example_next(s) >> 11) / 9007199254740992.0;
}

/* Reads --epochs, --count (training examples; at least 64) and --seed
 * over the defaults given, then runs run inside a scope (every tensor it
 * makes is released at its end) and returns its status; 2 on bad
 * arguments, with a message naming the example (example_args.h); 0
 * after the usage for --help. */
static inline int example_main(int argc, char **argv, const char *name, int epochs, int64_t count,
                               example_run_fn run)
{
    unsigned long long seed = 1;
    long long n;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--epochs") && i + 1 < argc) {
            if (!example_int32(name, "--epochs", argv[++i], 1, 1000000, &epochs))
                return 2;
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            if (!example_int(name, "--count", argv[++i], 64, INT64_MAX, &n))
                return 2;
            count = n;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            if (!example_seed(name, argv[++i], &seed))
                return 2;
        } else
            return example_usage(argv[0], "[--epochs N] [--count N] [--seed S]", argv[i]);
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

/* trainnet's cross-entropy on train with o (whose validation data is
 * test), then the test accuracy per class from dla_minibatchpredict's
 * scores (example_per_class) and testnet's accuracy and cross-entropy.
 * Returns 0 with the accuracy in *accuracy, or 1 after a message naming
 * the example and the step that failed. */
static inline int example_train_and_test(const char *name, dla_net *net,
                                         const dla_train_data *train, const dla_train_data *test,
                                         const dla_training_options *o, int classes,
                                         const char *const *names, const char *what,
                                         double *accuracy)
{
    dla_net *trained = NULL;
    dla_training_info *info = NULL;
    dla_tensor *y = NULL;
    const char *failed = NULL;
    double m[2];
    if (dla_trainnet(train, net, &(dla_train_loss){.name = "crossentropy"}, o, &trained, &info) !=
        DLA_OK)
        failed = "trainnet";
    else if (dla_minibatchpredict(trained, test, NULL, &y) != DLA_OK)
        failed = "minibatchpredict";
    else if ((*accuracy = example_per_class(test->targets, y, classes, names, what)) < 0)
        failed = "accuracy";
    /* MATLAB's testnet(net, XTest, TTest, ["accuracy" "crossentropy"]). */
    else if (dla_testnet(trained, test, "accuracy,crossentropy", NULL, m) != DLA_OK)
        failed = "testnet";
    else
        printf("testnet: accuracy %.2f%%, cross-entropy %.4f\n", m[0], m[1]);
    if (failed)
        fprintf(stderr, "%s: %s: %s\n", name, failed, dla_last_error());
    dla_training_info_free(info);
    dla_net_free(trained);
    return failed ? 1 : 0;
}

#endif

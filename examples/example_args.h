/*
 * example_args.h - the examples' command-line numbers and usage, read the
 * same way everywhere: a number that is not a whole decimal number in its
 * range is an error naming the option (atoi turned `--seed abc` into seed
 * 0 and `--epochs 3x` into 3 without a word), and `--help` or `-h`
 * prints the usage on stdout and succeeds, as a user trying the option
 * expects, where any other unknown argument prints it on stderr and fails.
 */
#ifndef DLACCEL_EXAMPLES_EXAMPLE_ARGS_H
#define DLACCEL_EXAMPLES_EXAMPLE_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads s as a whole decimal integer in [min, max] into *out; returns 1,
 * or 0 after "PROG: OPT wants a whole number in [min, max], not 'S'" on
 * stderr. */
static inline int example_int(const char *prog, const char *opt, const char *s, long long min,
                              long long max, long long *out)
{
    char *end = NULL;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < min || v > max) {
        fprintf(stderr, "%s: %s wants a whole number in [%lld, %lld], not '%s'\n", prog, opt, min,
                max, s);
        return 0;
    }
    *out = v;
    return 1;
}

/* The same for an int option. */
static inline int example_int32(const char *prog, const char *opt, const char *s, int min, int max,
                                int *out)
{
    long long v;
    if (!example_int(prog, opt, s, min, max, &v))
        return 0;
    *out = (int)v;
    return 1;
}

/* A seed: any whole number from 0 to 2^64 - 1 (strtoull alone takes
 * "-1", and " -1" past its leading blanks, as 2^64 - 1 and "abc" as 0):
 * digits only. */
static inline int example_seed(const char *prog, const char *s, unsigned long long *out)
{
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || errno) {
        fprintf(stderr, "%s: --seed wants a whole number from 0 to 2^64 - 1, not '%s'\n", prog, s);
        return 0;
    }
    *out = v;
    return 1;
}

/* For an argument no option took: with --help or -h prints "usage: PROG
 * USAGE" on stdout (PROG: argv[0]'s last component) and returns 0; otherwise names the argument and prints
 * the usage on stderr, returning 2 (the examples' exit code for bad
 * arguments). An option given last without its value lands here too. */
static inline int example_usage(const char *prog, const char *usage, const char *arg)
{
    /* The program's name, not the path libtool's wrapper runs it by. */
    const char *slash = strrchr(prog, '/');
    prog = slash ? slash + 1 : prog;
    const char *sep = *usage ? " " : "";
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
        printf("usage: %s%s%s\n", prog, sep, usage);
        return 0;
    }
    fprintf(stderr, "%s: unknown argument or missing value: '%s'\nusage: %s%s%s\n", prog, arg, prog,
            sep, usage);
    return 2;
}

/* For the examples without options, which take at most max_names plain
 * arguments (a file name): returns -1 to go on, or the exit code to end
 * with (0 after --help, 2 on anything else that starts with '-' or on one
 * argument too many). accelerate_loss took `--help` for its trace file's
 * name and wrote one called "--help"; the others ran on, whatever they
 * were given. */
static inline int example_plain_args(int argc, char **argv, const char *usage, int max_names)
{
    for (int i = 1; i < argc; i++)
        if ((argv[i][0] == '-' && argv[i][1] != '\0') || i > max_names)
            return example_usage(argv[0], usage, argv[i]);
    return -1;
}

/* For the examples whose one optional argument is a count of iterations:
 * reads argv[1], when there is one, into *iterations; returns -1 to go
 * on, or the exit code to end with (0 after --help, 2 on a bad argument). */
static inline int example_iterations_arg(int argc, char **argv, const char *name, int *iterations)
{
    if (argc > 2)
        return example_usage(argv[0], "[ITERATIONS]", argv[2]);
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
        return example_usage(argv[0], "[ITERATIONS]", argv[1]);
    if (argc == 2 && !example_int32(name, "ITERATIONS", argv[1], 1, 100000000, iterations))
        return 2;
    return -1;
}

#endif

/*
 * check_plugin.c - `dlaccel check-plugin MANIFEST`: the conformance suite
 * (conformance.h) run on every device of the plugin a manifest describes,
 * with the cpu plugin as the oracle.
 *
 * The manifest's folder is put first on DLACCEL_PLUGIN_PATH, so its
 * plugin is found before any installed one of that name, and the cpu
 * plugin comes from the path that was already there (an installed
 * dlaccel's, or a build tree's plugins.d). Every kernel the device runs
 * natively gets --cases random cases; a kernel it leaves to the cpu
 * plugin is skipped and said so. Calls are made as the core makes them
 * (cf_call: a decline is retried with dense views, and one the core would
 * not rescue fails). Output is a line per device and kernel (TAP with
 * --tap, which `make check` reads) saying what ran per dtype and
 * distribution, how many calls were declined or refused, and which dtypes
 * the kernel takes that no case ran and why; and a line per failing case
 * that reruns it alone. Exit status 0 when everything passed, 1 when a
 * case failed or the plugin cannot be had, 2 for bad arguments.
 */
#define _GNU_SOURCE /* realpath, setenv */
#include "tools/commands.h"
#include "tools/conformance.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const cf_kernel cf_kernels[] = {
    {"memory", DLA_KERNEL_COUNT, cf_case_memory},
    {"fill", DLA_KERNEL_FILL, cf_case_fill},
    {"strided_copy", DLA_KERNEL_STRIDED_COPY, cf_case_strided_copy},
    {"cast", DLA_KERNEL_CAST, cf_case_cast},
    {"unary", DLA_KERNEL_UNARY, cf_case_unary},
    {"binary", DLA_KERNEL_BINARY, cf_case_binary},
    {"ternary", DLA_KERNEL_TERNARY, cf_case_ternary},
    {"reduce", DLA_KERNEL_REDUCE, cf_case_reduce},
    {"gemm", DLA_KERNEL_GEMM, cf_case_gemm},
    {"conv_forward", DLA_KERNEL_CONV_FORWARD, cf_case_conv_forward},
    {"conv_backward_data", DLA_KERNEL_CONV_BACKWARD_DATA, cf_case_conv_backward_data},
    {"conv_backward_filter", DLA_KERNEL_CONV_BACKWARD_FILTER, cf_case_conv_backward_filter},
    {"pool_forward", DLA_KERNEL_POOL_FORWARD, cf_case_pool_forward},
    {"pool_backward", DLA_KERNEL_POOL_BACKWARD, cf_case_pool_backward},
    {"gather", DLA_KERNEL_GATHER, cf_case_gather},
    {"scatter_add", DLA_KERNEL_SCATTER_ADD, cf_case_scatter_add},
    {"fused", DLA_KERNEL_FUSED, cf_case_fused},
    {"fused_reduce", DLA_KERNEL_FUSED_REDUCE, cf_case_fused_reduce},
    {"random", DLA_KERNEL_RANDOM_UNIFORM, cf_case_random}, /* and _NORMAL */
    {"fused_reduce_pair", DLA_KERNEL_FUSED_REDUCE_PAIR, cf_case_fused_reduce_pair},
    {"fused_multi", DLA_KERNEL_FUSED_MULTI, cf_case_fused_multi},
    {"conv_forward_fused", DLA_KERNEL_CONV_FORWARD_FUSED, cf_case_conv_forward_fused},
    {"conv_backward_data_fused", DLA_KERNEL_CONV_BACKWARD_DATA_FUSED,
     cf_case_conv_backward_data_fused},
};
const int cf_kernel_count = (int)(sizeof cf_kernels / sizeof cf_kernels[0]);
_Static_assert(DLA_KERNEL_COUNT == 23, "a new kernel of the ABI needs its cases here");

typedef struct options {
    const char *manifest;
    const char *kernel; /* NULL: all */
    int device;         /* -1: all of the plugin's */
    int cases;
    int only_case;
    uint64_t seed;
    int tap;
} options;

static int usage(const char *why)
{
    fprintf(stderr, "dlaccel check-plugin: %s (see dlaccel help check-plugin)\n", why);
    return DLA_TOOL_USAGE;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.device = -1, .cases = 25, .only_case = -1, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (strcmp(a, "--tap") == 0) {
            o->tap = 1;
        } else if (strcmp(a, "--kernel") == 0 && v) {
            o->kernel = v, i++;
        } else if ((strcmp(a, "--cases") == 0 || strcmp(a, "--case") == 0 ||
                    strcmp(a, "--device") == 0 || strcmp(a, "--seed") == 0) &&
                   v) {
            /* strtoull takes "-1" as 2^64 - 1, and says ERANGE past it. */
            errno = 0;
            const unsigned long long n = strtoull(v, &end, 10);
            if (!isdigit((unsigned char)*v) || *end != '\0' || errno == ERANGE ||
                (a[2] != 's' && n >= INT_MAX))
                return usage("a number was expected (0 or more, and below 2^31 but for --seed)");
            if (strcmp(a, "--cases") == 0 && n == 0)
                return usage("--cases: at least 1");
            if (strcmp(a, "--cases") == 0)
                o->cases = (int)n;
            else if (strcmp(a, "--case") == 0)
                o->only_case = (int)n;
            else if (strcmp(a, "--device") == 0)
                o->device = (int)n;
            else
                o->seed = n;
            i++;
        } else if (a[0] == '-' || o->manifest) {
            return usage(a[0] == '-' ? "unknown option or missing value" : "one manifest only");
        } else {
            o->manifest = a;
        }
    }
    if (!o->manifest)
        return usage("which manifest?");
    if (o->kernel) {
        int known = 0;
        for (int k = 0; k < cf_kernel_count; k++)
            known |= strcmp(cf_kernels[k].name, o->kernel) == 0;
        if (!known) {
            /* The list comes from the table the suite runs, so the message
             * cannot fall behind a kernel the ABI adds (help text can). */
            fprintf(stderr, "dlaccel check-plugin: --kernel: '%s' is not a kernel of the suite (",
                    o->kernel);
            for (int k = 0; k < cf_kernel_count; k++)
                fprintf(stderr, "%s%s", k ? ", " : "", cf_kernels[k].name);
            fprintf(stderr, "; see dlaccel help check-plugin)\n");
            return DLA_TOOL_USAGE;
        }
    }
    if (o->only_case >= 0 && o->cases <= o->only_case)
        o->cases = o->only_case + 1;
    return DLA_TOOL_OK;
}

/* Puts the manifest's folder first on the search path and finds its
 * plugin's name; NULL (said why) when it cannot be had. */
static const char *find_plugin(const options *o, char *real, size_t size, int *count, int *index)
{
    char *r = realpath(o->manifest, NULL);
    if (!r) {
        fprintf(stderr, "dlaccel check-plugin: %s: cannot be read\n", o->manifest);
        return NULL;
    }
    snprintf(real, size, "%s", r);
    free(r);
    /* Said before the folder is searched: a folder given as the manifest
     * (`check-plugin /tmp`) put its parent on the path, every manifest
     * there was read and warned about, and the answer was "not found by
     * discovery (not a .json file?)". */
    struct stat st;
    const int found = stat(real, &st) == 0;
    if (!found || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "dlaccel check-plugin: %s: %s, not a manifest (the plugin's .json file)\n",
                o->manifest, found && S_ISDIR(st.st_mode) ? "a folder" : "not a regular file");
        return NULL;
    }
    const size_t len = strlen(o->manifest);
    if (len < 5 || strcmp(o->manifest + len - 5, ".json") != 0) {
        fprintf(stderr,
                "dlaccel check-plugin: %s: discovery reads only files whose names end in "
                ".json: no program would find this manifest\n",
                o->manifest);
        return NULL;
    }
    /* The folder the manifest is named in, not its real file's: a
     * symbolic link's relative library_path is joined to the link's
     * folder, as discovery does for every program (taken from the real
     * file's folder, a link whose library no program finds passed). */
    char given[PATH_MAX];
    snprintf(given, sizeof given, "%s", o->manifest);
    char *slash = strrchr(given, '/');
    if (slash == given)
        given[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(given, sizeof given, ".");
    char folder[PATH_MAX];
    if (!realpath(given, folder)) {
        fprintf(stderr, "dlaccel check-plugin: %s: its folder cannot be read\n", o->manifest);
        return NULL;
    }
    /* The path is colon-separated: such a folder would be two (it was
     * "not found by discovery (not a .json file?)"). */
    if (strchr(folder, ':')) {
        fprintf(stderr,
                "dlaccel check-plugin: %s: its folder %s has a ':', which DLACCEL_PLUGIN_PATH "
                "cannot hold (its folders are separated by ':'): no program would find it there\n",
                o->manifest, folder);
        return NULL;
    }
    const char *old = getenv("DLACCEL_PLUGIN_PATH");
    char *path = malloc(strlen(folder) + (old ? strlen(old) : 0) + 2);
    if (!path)
        return NULL;
    sprintf(path, "%s%s%s", folder, old && *old ? ":" : "", old ? old : "");
    setenv("DLACCEL_PLUGIN_PATH", path, 1);
    free(path);
    dla_device_count(); /* loads every plugin, so the states are final */
    for (int i = 0; i < dla_manifest_count(); i++) {
        dla_manifest_info m = {.struct_size = sizeof m};
        if (dla_manifest_get(i, &m) != DLA_OK)
            continue;
        char *p = realpath(m.path, NULL);
        const int same = p && strcmp(p, real) == 0;
        free(p);
        if (!same)
            continue;
        if (m.state != DLA_MANIFEST_LOADED) {
            /* An invalid manifest may name no plugin ("plugin '' invalid"). */
            fprintf(stderr, "dlaccel check-plugin: %s: %s%s%s%s%s%s\n", o->manifest,
                    m.plugin[0] ? "plugin '" : "", m.plugin, m.plugin[0] ? "' " : "",
                    dla_manifest_state_name(m.state), m.reason[0] ? ": " : "", m.reason);
            return NULL;
        }
        *count = m.device_count;
        *index = i;
        return m.plugin;
    }
    fprintf(stderr, "dlaccel check-plugin: %s: not found by discovery (not a .json file?)\n",
            o->manifest);
    return NULL;
}

/* Why a kernel without a case that ran is fine. */
static const char *not_native(const cf_kernel *k)
{
    return k->kernel == DLA_KERNEL_FUSED || k->kernel == DLA_KERNEL_FUSED_REDUCE
               ? "not offered (the host launches the steps one by one)"
           : k->kernel == DLA_KERNEL_FUSED_REDUCE_PAIR
               ? "not offered (the host sums each register on its own)"
           : k->kernel == DLA_KERNEL_FUSED_MULTI
               ? "not offered (the host fuses only chains whose intermediates nothing reads)"
           : k->kernel == DLA_KERNEL_CONV_FORWARD_FUSED
               ? "not offered (the host runs conv_forward, then fused)"
           : k->kernel == DLA_KERNEL_CONV_BACKWARD_DATA_FUSED
               ? "not offered (the host runs conv_backward_data, then fused)"
           : k->kernel == DLA_KERNEL_RANDOM_UNIFORM
               ? "not offered (the host draws the numbers and copies them)"
               : "not native (it runs on the cpu plugin)";
}

/* What a kernel's cases ran, per distribution (random: uniform, normal;
 * else only [0]) and dtype, and how many the device declined and passed
 * on the dense retry. */
typedef struct coverage {
    int ran[2][DLA_DTYPE_COUNT];
    int retried;
    int refused;
} coverage;

/* Runs kernel k's cases on one device pair; returns the failed count and
 * sets *ran to the cases that were not skipped. */
static int run_kernel(const cf_suite *s, const cf_kernel *k, int *ran, coverage *cov)
{
    int failed = 0;
    *ran = 0;
    memset(cov, 0, sizeof *cov);
    /* --case I is case I of the same numbering (its own random stream, by
     * the index): started at, not counted up to (--case 2000000000 spun
     * through two billion skipped indices per kernel, 26 s). */
    for (int i = s->only_case >= 0 ? s->only_case : 0; i < s->cases; i++) {
        if (s->only_case >= 0 && i != s->only_case)
            break;
        cf_case c;
        memset(&c, 0, sizeof c);
        c.suite = s;
        c.kernel = k->name;
        c.index = i;
        c.dtype = -1;
        /* Its own stream: the same case whatever ran before it. */
        c.rng = s->seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)(k - cf_kernels) << 40 ^ (uint64_t)i;
        dla_clear_error();
        k->run(&c);
        cf_case_end(&c);
        failed += c.failed;
        *ran += !c.skipped;
        if (!c.skipped && c.dtype >= 0 && c.dtype < DLA_DTYPE_COUNT)
            cov->ran[c.variant != 0][c.dtype]++;
        cov->retried += c.retried;
        cov->refused += c.refused;
    }
    return failed;
}

static int native(const cf_device *dev, dla_kernel k, dla_dtype t)
{
    return dev->table->supports == NULL || dev->table->supports(dev->ctx, k, t);
}

/* What the kernel's cases covered and what they left out, and why. */
static void describe_coverage(char *out, size_t size, const cf_suite *s, const cf_kernel *k,
                              const coverage *cov)
{
    size_t used = 0;
    const char *sep = "";
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (used < size)                                                                           \
            used += (size_t)snprintf(out + used, size - used, __VA_ARGS__);                        \
        sep = ", ";                                                                                \
    } while (0)
    if (k->kernel >= DLA_KERNEL_COUNT)
        return; /* memory: no dtype */
    const int random = k->kernel == DLA_KERNEL_RANDOM_UNIFORM;
    static const char *const dist[2] = {"uniform ", "normal "};
    for (int v = 0; v < 1 + random; v++)
        for (int t = 0; t < DLA_DTYPE_COUNT; t++)
            if (cov->ran[v][t])
                PUT("%s%s%s %d", sep, random ? dist[v] : "", dla_dtype_name((dla_dtype)t),
                    cov->ran[v][t]);
    const int two = k->kernel == DLA_KERNEL_CONV_FORWARD_FUSED ||
                    k->kernel == DLA_KERNEL_CONV_BACKWARD_DATA_FUSED;
    if (cov->retried)
        PUT("%s%d declined and passed %s", sep, cov->retried,
            two ? "as the core runs them then, two launches" : "on the dense retry");
    if (cov->refused)
        PUT("%s%d refused with the oracle's status", sep, cov->refused);
    /* What the kernel takes (on either device) that no case ran, and why. */
    for (int v = 0; v < 1 + random; v++) {
        const dla_kernel id = v ? DLA_KERNEL_RANDOM_NORMAL : k->kernel;
        for (int t = 0; t < DLA_DTYPE_COUNT; t++) {
            const int dut = native(s->dev[CF_DUT], id, (dla_dtype)t);
            const int ora = native(s->dev[CF_ORACLE], id, (dla_dtype)t);
            if (cov->ran[v][t] || (!dut && !ora))
                continue;
            PUT("%sskipped %s%s (%s)", sep, random ? dist[v] : "", dla_dtype_name((dla_dtype)t),
                !dut   ? "the device's supports() says no: the cpu plugin runs it"
                : !ora ? "the oracle does not run it: not checked"
                       : "no case drew it");
        }
    }
#undef PUT
}

int dla_tool_check_plugin(int argc, char **argv)
{
    options o;
    int st = parse(argc, argv, &o);
    if (st != DLA_TOOL_OK)
        return st;
    char real[PATH_MAX];
    int count = 0, index = -1;
    const char *name = find_plugin(&o, real, sizeof real, &count, &index);
    if (!name)
        return DLA_TOOL_FAILED;
    dla_device *oracle = dla_device_get("cpu");
    if (!oracle) {
        fprintf(stderr, "dlaccel check-plugin: no cpu plugin to compare with: %s\n",
                dla_last_error());
        return DLA_TOOL_FAILED;
    }
    if (count <= 0 || o.device >= count) {
        fprintf(stderr, "dlaccel check-plugin: plugin '%s' has no device%s (it has %d)\n", name,
                o.device >= 0 ? " of that index" : "", count > 0 ? count : 0);
        return DLA_TOOL_FAILED;
    }
    /* Each device of the plugin asked for by its name: the devices that
     * open are checked, one that does not is a failure with the reason.
     * (Taken from dla_device_at, which passes over a device that fails to
     * open, a plugin whose second device could not be opened passed on its
     * first, "1 device ... every case passed", and `--device 1` said it
     * had "no device of that index"; and only its first 64 were checked.) */
    dla_device **devs = calloc((size_t)count, sizeof *devs);
    char(*unopened)[600] = calloc((size_t)count, sizeof *unopened);
    if (!devs || !unopened) {
        free(devs);
        free(unopened);
        fprintf(stderr, "dlaccel check-plugin: out of memory\n");
        return DLA_TOOL_FAILED;
    }
    int ndev = 0, nbad = 0;
    for (int i = 0; i < count; i++) {
        if (o.device >= 0 && i != o.device)
            continue;
        char dn[64];
        snprintf(dn, sizeof dn, "%s:%d", name, i);
        dla_device *d = dla_device_get(dn);
        if (d)
            devs[ndev++] = d;
        else
            snprintf(unopened[nbad++], sizeof unopened[0], "%s cannot be opened: %s", dn,
                     dla_last_error());
    }
    int nk = 0;
    for (int k = 0; k < cf_kernel_count; k++)
        nk += !o.kernel || strcmp(o.kernel, cf_kernels[k].name) == 0;
    if (o.tap)
        printf("1..%d\n", nk * ndev + nbad);
    else
    {
        char which[64];
        if (o.only_case >= 0)
            snprintf(which, sizeof which, "case %d of each kernel", o.only_case);
        else
            snprintf(which, sizeof which, "%d cases per kernel", o.cases);
        printf("dlaccel check-plugin: %s (plugin '%s'), %d device%s against %s, %s, seed %llu\n",
               o.manifest, name, ndev, ndev == 1 ? "" : "s", dla_device_name(oracle), which,
               (unsigned long long)o.seed);
    }
    /* The minor the manifest declares is informational to the library,
     * but the guide's checklist asks for the version init answers:
     * otherwise `dlaccel devices` shows the two apart and a reader of the
     * manifest is told another ABI than the one the plugin speaks. */
    dla_manifest_info mi = {.struct_size = sizeof mi};
    if (dla_manifest_get(index, &mi) == DLA_OK && mi.abi_major >= 0) {
        char answered[32];
        snprintf(answered, sizeof answered, "%d.%d", mi.abi_major, mi.abi_minor);
        int dmaj = -1, dmin = -1;
        if (sscanf(mi.abi_declared, "%d.%d", &dmaj, &dmin) != 2 || dmaj != mi.abi_major ||
            dmin != mi.abi_minor)
            printf("%snote: the manifest declares ABI %s and the plugin answers %s: keep the "
                   "two the same (docs/plugins.md, section 2)\n",
                   o.tap ? "# " : "", mi.abi_declared, answered);
    }
    for (int b = 0; b < nbad; b++) {
        if (o.tap)
            printf("not ok %d - %s\n", b + 1, unopened[b]);
        else
            printf("FAIL %s\n", unopened[b]);
    }
    /* A plugin named cpu is the oracle too: the registry lets one manifest
     * answer to a name, so a replacement cpu plugin (a folder before the
     * installed one, as DLACCEL_PLUGIN_PATH allows) was compared with
     * itself, and "every case passed" said nothing of the reference's
     * results. Said, with the manifests it shadows. */
    if (strcmp(name, "cpu") == 0) {
        const char *c = o.tap ? "# " : "";
        printf("%snote: plugin 'cpu' is its own oracle: the cases check that its results agree "
               "with themselves (threads, views, retries), not with another cpu plugin\n",
               c);
        for (int i = 0; i < dla_manifest_count(); i++) {
            dla_manifest_info m = {.struct_size = sizeof m};
            if (dla_manifest_get(i, &m) == DLA_OK && strcmp(m.plugin, "cpu") == 0 &&
                m.state == DLA_MANIFEST_DUPLICATE && strstr(m.reason, "already taken"))
                printf("%snote: it shadows the cpu plugin of %s, which is not the oracle\n", c,
                       m.path);
        }
    }
    int test = nbad, failures = nbad;
    for (int d = 0; d < ndev; d++) {
        cf_device dut = cf_device_of(devs[d]), ref = cf_device_of(oracle);
        cf_suite s = {.dev = {&dut, &ref}, .seed = o.seed, .cases = o.cases,
                      .only_case = o.only_case, .manifest = o.manifest, .out = stdout,
                      .tap = o.tap};
        for (int k = 0; k < cf_kernel_count; k++) {
            const cf_kernel *kern = &cf_kernels[k];
            if (o.kernel && strcmp(o.kernel, kern->name) != 0)
                continue;
            test++;
            int ran = 0;
            coverage cov;
            const int failed = run_kernel(&s, kern, &ran, &cov);
            char what[768] = "";
            describe_coverage(what, sizeof what, &s, kern, &cov);
            failures += failed;
            const char *dn = dla_device_name(devs[d]);
            if (o.tap && failed)
                printf("not ok %d - %s %s: %d of %d cases failed\n", test, dn, kern->name, failed,
                       ran);
            else if (o.tap && ran == 0)
                printf("ok %d - %s %s # SKIP %s\n", test, dn, kern->name, not_native(kern));
            else if (o.tap)
                printf("ok %d - %s %s: %d cases%s%s\n", test, dn, kern->name, ran,
                       what[0] ? ": " : "", what);
            else if (failed || !ran)
                printf("%-10s %-22s %s\n", dn, kern->name,
                       failed ? "FAILED (see above)" : not_native(kern));
            else
                printf("%-10s %-22s ok, %d cases%s%s\n", dn, kern->name, ran, what[0] ? ": " : "",
                       what);
            fflush(stdout);
        }
    }
    free(devs);
    free(unopened);
    if (!o.tap)
        printf("%s\n", failures > nbad ? "some cases failed"
                       : nbad         ? "some devices cannot be opened (see above)"
                                      : "every case passed");
    return failures ? DLA_TOOL_FAILED : DLA_TOOL_OK;
}

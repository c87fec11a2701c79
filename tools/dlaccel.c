/*
 * dlaccel.c - the `dlaccel` command line: finds the subcommand and runs it.
 *
 * The subcommands are rows of one table, so `dlaccel help` and the
 * dispatch cannot disagree; `version` and `help` are small enough to live
 * here, the others have a file each (see commands.h).
 */
#include "tools/commands.h"

#include <dlaccel.h>
#include <dlaccel/plugin.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const dla_tool_command commands[] = {
    {"devices", "", "list plugins, their manifests and devices, and the default device",
     "Shows the plugin search path and where each folder comes from, every\n"
     "manifest found, whether its plugin loaded and if not why, the ABI it\n"
     "speaks, each device with its properties, and which device is the default\n"
     "and why. Exits with 1 when there is no default device, which is the case\n"
     "when DLACCEL_DEVICE names nothing that can be had. Run with\n"
     "DLACCEL_LOG=debug to see discovery step by step.",
     dla_tool_devices},
    {"trace", "FILE | --ops", "print a saved trace: ops, shapes, RNG slots, constants",
     "Loads FILE, a trace saved with dla_trace_save (docs/trace-format.md),\n"
     "and prints it as dla_trace_print does: its inputs and constants with\n"
     "dims, dtype and format, every op with the values it reads and makes\n"
     "([rng] marks an RNG slot), the outputs, and the memory it needs. A file\n"
     "that cannot be loaded (missing, not a trace, truncated, corrupt, from a\n"
     "newer dlaccel) is reported with the reason and exit status 1. The\n"
     "constants are made on the default device, as a load does (see\n"
     "DLACCEL_DEVICE). With --ops, lists the op names a trace file may use.",
     dla_tool_trace},
    {"net", "FILE", "print a saved network: layers, learnables with their factors, state",
     "Loads FILE, a network saved with dla_net_save (a trainnet checkpoint,\n"
     "examples/transfer --save), and prints its summary as dla_net_print does,\n"
     "then each learnable (layer/parameter) with its dims, dtype, learn-rate\n"
     "and L2 factors (\"frozen\" where the learn-rate factor is 0), then each\n"
     "state. A file that cannot be loaded (missing, not a network, truncated,\n"
     "corrupt) is reported with the reason and exit status 1. The values are\n"
     "made on the default device, as a load does (see DLACCEL_DEVICE).",
     dla_tool_net},
    {"check-plugin", "[options] MANIFEST",
     "run the conformance suite on a plugin, against the cpu plugin",
     "Loads the plugin of MANIFEST (its folder put first on DLACCEL_PLUGIN_PATH)\n"
     "beside the cpu plugin and runs every kernel of the plugin ABI on each of\n"
     "its devices with random shapes, dtypes, strides, broadcasts and options,\n"
     "comparing each output with the cpu plugin's: exact for copies, casts,\n"
     "comparisons, selections, max/min and correctly rounded arithmetic; a few\n"
     "ulps for the functions OpenCL and CUDA may approximate; 4 (n + 4) eps\n"
     "times the sum of magnitudes for sums of n terms. A call the plugin declines\n"
     "(DLA_ERR_UNSUPPORTED) is made again with dense copies of its non-dense\n"
     "views, as the library does; a decline the library would not rescue fails.\n"
     "Each kernel's line says the cases run per dtype (and distribution), the\n"
     "declines and refusals, and what was skipped and why; kernels the plugin\n"
     "leaves to the cpu plugin are skipped. A failing case prints one line with\n"
     "the call and how to rerun it alone; a device that cannot be opened fails\n"
     "with device_open's message. Exit status 1 when a case fails.\n"
     "Options: --kernel NAME (memory, fill, strided_copy, cast, unary, binary,\n"
     "ternary, reduce, gemm, conv_forward, conv_backward_data,\n"
     "conv_backward_filter, pool_forward, pool_backward, gather, scatter_add,\n"
     "fused, fused_reduce, random, fused_reduce_pair, fused_multi,\n"
     "conv_forward_fused, conv_backward_data_fused), --cases N\n"
     "(per kernel, default 25), --case I (only case I), --seed S (default 1),\n"
     "--device I (only device I of the plugin), --tap.",
     dla_tool_check_plugin},
    {"export-images", "[--split train|test] [--limit N] [--dir IDXDIR] OUTDIR",
     "write Fashion-MNIST as PNG files, one folder per class",
     "Reads a split of Fashion-MNIST (IDXDIR, default the folder of Debian's\n"
     "dataset-fashion-mnist) and writes each image as an 8-bit gray PNG file\n"
     "OUTDIR/<class>/<index>.png, the class folders named \"0_T-shirt-top\" ..\n"
     "\"9_Ankle_boot\" so that their sorted order is the label order, and the\n"
     "files named by their index in the IDX file. This is the folder tree an\n"
     "image datastore reads with labels from folder names (docs/data.md).\n"
     "--limit N writes only the first N images. An OUTDIR whose class folders\n"
     "hold PNG files this export does not write (an earlier export's) is an\n"
     "error, exit status 1, nothing written: a datastore would read them with\n"
     "the new ones.",
     dla_tool_export_images},
    {"version", "", "print the library and plugin ABI versions",
     "Prints the version of libdlaccel and the plugin ABI it speaks.", cmd_version},
    {"help", "[command]", "show this list, or the details of one command",
     "Without an argument lists the commands; with one explains it.", cmd_help},
};
#define COMMAND_COUNT (int)(sizeof commands / sizeof commands[0])

static const dla_tool_command *find_command(const char *name)
{
    for (int i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void print_usage(FILE *out)
{
    fprintf(out, "usage: dlaccel <command> [arguments]\n\ncommands:\n");
    /* The name and usage are printed whole (a 64-byte buffer cut
     * export-images' OUTDIR to "O"); a long one puts its summary on the
     * next line rather than pushing it off to the right. */
    for (int i = 0; i < COMMAND_COUNT; i++) {
        int len = fprintf(out, "  %s%s%s", commands[i].name, commands[i].usage[0] ? " " : "",
                          commands[i].usage);
        if (len > 2 + 18)
            fprintf(out, "\n  %-18s", "");
        else
            fprintf(out, "%*s", 2 + 18 - len, "");
        fprintf(out, " %s\n", commands[i].summary);
    }
    fprintf(out, "\n`dlaccel help <command>` or `dlaccel <command> --help` explains one.\n");
    fprintf(out, "\nEnvironment: DLACCEL_PLUGIN_PATH, DLACCEL_DEVICE, DLACCEL_PLUGINS_DISABLE,\n"
                 "DLACCEL_LOG (see docs/environment.md).\n");
}

static void print_command_help(const dla_tool_command *c)
{
    printf("usage: dlaccel %s%s%s\n\n%s\n", c->name, c->usage[0] ? " " : "", c->usage, c->help);
}

static int cmd_help(int argc, char **argv)
{
    if (argc == 1) {
        print_usage(stdout);
        return DLA_TOOL_OK;
    }
    const dla_tool_command *c = argc == 2 ? find_command(argv[1]) : NULL;
    if (!c) {
        if (argc == 2)
            fprintf(stderr, "dlaccel help: no command '%s' (`dlaccel help` lists them)\n", argv[1]);
        else
            fprintf(stderr, "dlaccel help: takes at most one command name\n");
        return DLA_TOOL_USAGE;
    }
    print_command_help(c);
    return DLA_TOOL_OK;
}

/* Whether a subcommand's arguments ask for its help (--help or -h
 * anywhere among them): each subcommand read them as its own, and
 * `dlaccel check-plugin --help` said "unknown option". */
static int asks_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}

static int cmd_version(int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "dlaccel version: takes no arguments\n");
        return DLA_TOOL_USAGE;
    }
    printf("dlaccel %s (plugin ABI %d.%d)\n", dla_version_string(), DLA_PLUGIN_ABI_MAJOR,
           DLA_PLUGIN_ABI_MINOR);
    return DLA_TOOL_OK;
}

/* A standard stream the caller closed (`dlaccel devices >&-`) is held by
 * /dev/null opened read-only. Left closed, the first file the library
 * opened took its number (the cpu plugin's lock file in /dev/shm, a
 * plugin's breadcrumb), the listing was written into that file and the
 * exit status was 0. Read-only, every write to it fails (EBADF), so the
 * output check at the end reports it. */
static void hold_closed_streams(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        int held = open("/dev/null", O_RDONLY);
        if (held >= 0 && held != fd) {
            dup2(held, fd);
            close(held);
        }
    }
}

int main(int argc, char **argv)
{
    hold_closed_streams();
    if (argc < 2) {
        print_usage(stderr);
        return DLA_TOOL_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    else if (strcmp(name, "--version") == 0)
        name = "version";
    const dla_tool_command *c = find_command(name);
    if (!c) {
        fprintf(stderr, "dlaccel: unknown command '%s'\n\n", argv[1]);
        print_usage(stderr);
        return DLA_TOOL_USAGE;
    }
    int rc;
    if (asks_help(argc - 1, argv + 1)) {
        print_command_help(c);
        rc = DLA_TOOL_OK;
    } else {
        rc = c->run(argc - 1, argv + 1);
    }
    /* Output that never reached its file (a full disk, a closed pipe) is
     * a failure, whatever the command thought of its own work. */
    errno = 0;
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == DLA_TOOL_OK) {
        fprintf(stderr, "dlaccel %s: cannot write the output%s%s\n", c->name, errno ? ": " : "",
                errno ? strerror(errno) : "");
        rc = DLA_TOOL_FAILED;
    }
    return rc;
}

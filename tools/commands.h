/*
 * commands.h - the subcommands of the `dlaccel` tool.
 *
 * Each subcommand lives in its own file and is one row of the table in
 * dlaccel.c: it gets the arguments after its name (argv[0] is the
 * subcommand's name) and returns the process exit status. A new subcommand
 * (run, trace, plugin check) is a new file, a declaration here and a row.
 */
#ifndef DLA_TOOLS_COMMANDS_H
#define DLA_TOOLS_COMMANDS_H

/* Exit statuses shared by every subcommand. */
enum {
    DLA_TOOL_OK = 0,
    DLA_TOOL_FAILED = 1, /* the command ran and what was asked cannot be had */
    DLA_TOOL_USAGE = 2   /* bad arguments */
};

typedef struct dla_tool_command {
    const char *name;
    const char *usage;   /* arguments after the name, "" when none */
    const char *summary; /* one line for `dlaccel help` */
    const char *help;    /* a paragraph for `dlaccel help <name>` */
    int (*run)(int argc, char **argv);
} dla_tool_command;

/* `dlaccel devices`: search path, manifests, plugins, devices, default. */
int dla_tool_devices(int argc, char **argv);
/* `dlaccel trace FILE`: a saved trace as text; `--ops`: the op names. */
int dla_tool_trace(int argc, char **argv);
/* `dlaccel net FILE`: a saved network's layers, learnables with their
 * factors, and state (net.c). */
int dla_tool_net(int argc, char **argv);
/* `dlaccel check-plugin MANIFEST`: the conformance suite against the cpu
 * plugin on every device of that manifest's plugin. */
int dla_tool_check_plugin(int argc, char **argv);
/* `dlaccel export-images OUTDIR`: Fashion-MNIST as PNG files, one folder
 * per class (export_images.c). */
int dla_tool_export_images(int argc, char **argv);

#endif

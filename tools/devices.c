/*
 * devices.c - `dlaccel devices`: what the registry found and chose, and why.
 *
 * Like vulkaninfo or clinfo, it answers "why does my program run where it
 * runs?" from the library's own introspection API: the search path, every
 * manifest and its fate, every device, and the default with its reason. It
 * loads every plugin (dla_device_count) so that each manifest's state is
 * final, not merely "found".
 */
#include "tools/commands.h"

#include <dlaccel.h>
#include <dlaccel/plugin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at s (2..4), 0 when none. */
static int utf8_length(const unsigned char *s)
{
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    if (s[0] >= 0xf5)
        n = 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* Overlong three- and four-byte forms, surrogates, past U+10FFFF. */
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* Writes text from a manifest, a plugin or the environment with its
 * control characters escaped: a description holding "\u001b[2J" cleared
 * the terminal (until 2026-11-29 every string went out raw). C0 controls
 * and DEL are written \xNN, C1 controls (U+0080..U+009F, which terminals
 * may obey as escape sequences too) \u00NN, and a byte that is no part of
 * well-formed UTF-8 \xNN; a backslash stays one (the escapes are for the
 * eye, not to be read back). */
static void show(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        if (*s < 0x20 || *s == 0x7f) {
            printf("\\x%02x", *s++);
        } else if (*s < 0x80) {
            putchar(*s++);
        } else {
            int n = utf8_length(s);
            if (n == 0)
                printf("\\x%02x", *s++);
            else if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0) {
                printf("\\u00%02x", s[1]);
                s += 2;
            } else {
                fwrite(s, 1, (size_t)n, stdout);
                s += n;
            }
        }
    }
}

/* label, then the value shown, then a new line. */
static void show_line(const char *label, const char *value)
{
    fputs(label, stdout);
    show(value);
    putchar('\n');
}

static const char *env_or_unset(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "(unset)";
}

static void print_environment(void)
{
    static const char *const vars[] = {"DLACCEL_PLUGIN_PATH", "DLACCEL_DEVICE",
                                       "DLACCEL_PLUGINS_DISABLE", "DLACCEL_INSTALLED_PLUGINS",
                                       "DLACCEL_LOG"};
    printf("Environment:\n");
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    {
        printf("  %-24s ", vars[i]);
        show_line("", env_or_unset(vars[i]));
    }
}

static void print_search_path(void)
{
    int n = dla_manifest_folder_count();
    printf("\nSearch path (%d folder%s, searched in this order):\n", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        dla_manifest_folder_info f = {.struct_size = sizeof f};
        if (dla_manifest_folder_get(i, &f) != DLA_OK)
            continue;
        printf("  %d. ", i + 1);
        show_line("", f.path);
        printf("     from %s; ", f.origin);
        if (f.manifest_count < 0)
            show_line("cannot be read: ", f.error);
        else
            printf("%d manifest%s\n", f.manifest_count, f.manifest_count == 1 ? "" : "s");
    }
}

static void print_manifest(int i)
{
    dla_manifest_info m = {.struct_size = sizeof m};
    if (dla_manifest_get(i, &m) != DLA_OK)
        return;
    show_line("  ", m.path);
    if (m.plugin[0])
        show_line("    plugin        ", m.plugin);
    if (m.library[0])
        show_line("    library       ", m.library);
    if (m.abi_declared[0]) {
        printf("    ABI           declared ");
        show(m.abi_declared);
        if (m.abi_major >= 0)
            printf(", plugin speaks %d.%d", m.abi_major, m.abi_minor);
        printf(" (this library: %d.%d)\n", DLA_PLUGIN_ABI_MAJOR, DLA_PLUGIN_ABI_MINOR);
    }
    if (m.plugin[0]) {
        printf("    priority      %d\n", m.priority);
        printf("    device types  ");
        for (int t = 0; t < m.device_type_count; t++) {
            fputs(t ? ", " : "", stdout);
            show(m.device_types[t]);
        }
        printf("%s\n", m.device_type_count ? "" : "(none)");
    }
    if (m.description[0])
        show_line("    description   ", m.description);
    printf("    state         %s", dla_manifest_state_name(m.state));
    if (m.state == DLA_MANIFEST_LOADED)
        printf(", %d device%s", m.device_count, m.device_count == 1 ? "" : "s");
    printf("\n");
    if (m.reason[0])
        show_line("    reason        ", m.reason);
}

static void print_memory(uint64_t bytes)
{
    if (bytes == 0) {
        printf("unknown\n");
        return;
    }
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        printf("%llu bytes\n", (unsigned long long)bytes);
    else
        printf("%.1f %s (%llu bytes)\n", v, units[u], (unsigned long long)bytes);
}

static void print_device(int i, const dla_device *def)
{
    dla_device *dev = dla_device_at(i);
    if (!dev) {
        printf("  device %d: cannot be opened: %s\n", i, dla_last_error());
        return;
    }
    printf("  %s%s\n", dla_device_name(dev), dev == def ? "  (default)" : "");
    show_line("    description       ", dla_device_description(dev));
    show_line("    plugin            ", dla_device_plugin(dev));
    show_line("    type              ", dla_device_type(dev));
    printf("    memory            ");
    print_memory(dla_device_memory(dev));
    int units = dla_device_compute_units(dev);
    if (units > 0)
        printf("    compute units     %d\n", units);
    else
        printf("    compute units     unknown\n");
    printf("    host addressable  %s\n", dla_device_host_addressable(dev) ? "yes" : "no");
    const char *props = dla_device_properties(dev);
    show_line("    properties        ", props[0] ? props : "(none)");
}

int dla_tool_devices(int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "dlaccel devices: takes no arguments\n");
        return DLA_TOOL_USAGE;
    }
    printf("dlaccel %s (plugin ABI %d.%d)\n\n", dla_version_string(), DLA_PLUGIN_ABI_MAJOR,
           DLA_PLUGIN_ABI_MINOR);
    print_environment();
    print_search_path();

    /* Load everything first so every manifest shows its final state. */
    int devices = dla_device_count();
    dla_device *def = dla_device_default();
    /* Copied now: listing the devices below may overwrite the thread's
     * last error, which is where a failure's reason lives. */
    char why[1024];
    snprintf(why, sizeof why, "%s", dla_device_default_reason());

    int n = dla_manifest_count();
    printf("\nManifests (%d):\n", n);
    if (n == 0)
        printf("  (none found)\n");
    for (int i = 0; i < n; i++)
        print_manifest(i);

    printf("\nDevices (%d):\n", devices);
    if (devices == 0)
        printf("  (none)\n");
    for (int i = 0; i < devices; i++)
        print_device(i, def);

    if (def) {
        printf("\nDefault device: %s\n", dla_device_name(def));
        show_line("  why: ", why);
        return DLA_TOOL_OK;
    }
    /* The registry has logged the reason on stderr already. */
    printf("\nDefault device: none\n");
    show_line("  why: ", why);
    return DLA_TOOL_FAILED;
}

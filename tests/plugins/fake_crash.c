/*
 * fake_crash.c - a plugin whose init crashes (a segmentation fault, as a
 * driver bug would give), for tests/tool_plugin_crash.sh: the process dies
 * inside init, and the next start must name this plugin.
 */
#include <dlaccel/plugin.h>
#include <signal.h>

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *t)
{
    (void)h, (void)t;
    raise(SIGSEGV);
    return DLA_ERR_PLUGIN; /* not reached unless SIGSEGV is ignored */
}

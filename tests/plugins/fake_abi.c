/*
 * fake_abi.c - a plugin built for a future ABI: it answers major 2, so the
 * host must refuse it without calling anything in its table.
 */
#include <dlaccel/plugin.h>

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *t)
{
    t->abi_major = DLA_PLUGIN_ABI_MAJOR + 1;
    t->abi_minor = 3;
    return DLA_OK;
}

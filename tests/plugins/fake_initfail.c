/*
 * fake_initfail.c - a plugin whose init fails the documented way: a status
 * and a message through host->error, which the host must show.
 */
#include <dlaccel/plugin.h>

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *t)
{
    return h->error(DLA_ERR_DEVICE, "no fake hardware on this machine (driver 0.0 missing)");
}

/*
 * fake_nosym.c - a shared object that loads but is no plugin: it exports a
 * near-miss of the entry point name, never dlaccel_plugin_init.
 */
#include <dlaccel/plugin.h>

DLA_PLUGIN_EXPORT int dlaccel_plugin_initialize(void) { return 0; }

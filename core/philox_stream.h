/*
 * philox_stream.h - the random stream's definition now lives in the
 * installed plugin kit, dlaccel/plugin_philox.h, so that third-party
 * plugins draw the same bits; the core's includers keep this name.
 */
#include <dlaccel/plugin_philox.h>

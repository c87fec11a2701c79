/*
 * accel_advice.h - what the library's own accelerated functions tell
 * dla_accelerate to say when a run of calls misses its cache (internal).
 *
 * The warning's remedy for calls whose inputs change ("keep it fixed
 * between calls, or call the function itself") speaks to whoever calls
 * dla_accel_feval. A function the library accelerates by itself (a
 * network's forward and predict) is called by trainnet and by custom
 * loops that cannot do either: the inputs are their data, and the function
 * is not theirs to call. Such a function names its own remedy.
 */
#ifndef DLA_CORE_ACCEL_ADVICE_H
#define DLA_CORE_ACCEL_ADVICE_H

#include <dlaccel.h>

/* The remedy the low-hit-rate warning gives for af when the calls' inputs
 * change (copied, at most 319 characters; NULL or "": the general one). */
void dla__accel_set_miss_advice(dla_accel *af, const char *advice);

#endif

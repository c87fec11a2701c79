/*
 * mem_avail.h - how much memory the system can still give this process:
 * what bounds the cpu plugin's cache of freed blocks (block_cache.h).
 */
#ifndef DLA_PLUGIN_CPU_MEM_AVAIL_H
#define DLA_PLUGIN_CPU_MEM_AVAIL_H

#include <stddef.h>

/* MemAvailable of /proc/meminfo's text, in bytes; 0 when absent. */
size_t dla__cpu_parse_meminfo(const char *text);

/* The path of this process's memory cgroup from /proc/self/cgroup's text:
 * the v1 "memory" controller's line if there is one (*v1 = 1), else the
 * v2 line "0::PATH" (*v1 = 0). Writes at most size bytes; 0 when neither. */
int dla__cpu_parse_cgroup(const char *text, char *path, size_t size, int *v1);

/* Bytes available now: MemAvailable, lowered to the room left under this
 * process's memory cgroup limit when it has one (a container's limit is
 * what ends the process, not the machine's RAM). 0 when unknown. */
size_t dla__cpu_mem_available(void);

#endif

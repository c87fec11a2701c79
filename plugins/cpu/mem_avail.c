/*
 * mem_avail.c - the memory the system can still give this process
 * (mem_avail.h), read from /proc and the memory cgroup's files.
 */
#include "plugins/cpu/mem_avail.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t dla__cpu_parse_meminfo(const char *text)
{
    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        unsigned long long kb;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            return kb > SIZE_MAX / 1024 ? SIZE_MAX : (size_t)kb * 1024;
    }
    return 0;
}

int dla__cpu_parse_cgroup(const char *text, char *path, size_t size, int *v1)
{
    int found = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        /* ID:CONTROLLERS:PATH */
        const char *c = strchr(line, ':'), *end = strchr(line, '\n');
        const char *p = c ? strchr(c + 1, ':') : NULL;
        if (!p || (end && p > end))
            continue;
        size_t len = end ? (size_t)(end - p - 1) : strlen(p + 1);
        if (len >= size)
            continue;
        int is_v1 = 0;
        for (const char *w = c + 1; w < p;) {
            const char *comma = memchr(w, ',', (size_t)(p - w));
            const char *we = comma ? comma : p;
            if (we - w == 6 && memcmp(w, "memory", 6) == 0)
                is_v1 = 1;
            w = we + 1;
        }
        int is_v2 = p == c + 1 && line[0] == '0' && c == line + 1;
        if (is_v1 || (is_v2 && !found)) {
            memcpy(path, p + 1, len);
            path[len] = '\0';
            *v1 = is_v1;
            found = 1;
            if (is_v1)
                return 1;
        }
    }
    return found;
}

/* The whole (small) file as text; 0 when it cannot be read. */
static int read_text(const char *name, char *buf, size_t size)
{
    FILE *f = fopen(name, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n > 0;
}

/* A cgroup file holding one number of bytes ("max": none, SIZE_MAX). */
static size_t read_bytes(const char *dir, const char *file)
{
    char name[4352], buf[64];
    if (snprintf(name, sizeof name, "%s/%s", dir, file) >= (int)sizeof name ||
        !read_text(name, buf, sizeof buf))
        return SIZE_MAX;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    return end == buf || v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

static size_t cgroup_room(void)
{
    char text[4096], path[4096], dir[4200];
    int v1;
    if (!read_text("/proc/self/cgroup", text, sizeof text) ||
        !dla__cpu_parse_cgroup(text, path, sizeof path, &v1))
        return SIZE_MAX;
    if (snprintf(dir, sizeof dir, "%s%s", v1 ? "/sys/fs/cgroup/memory" : "/sys/fs/cgroup", path) >=
        (int)sizeof dir)
        return SIZE_MAX;
    size_t limit = read_bytes(dir, v1 ? "memory.limit_in_bytes" : "memory.max");
    size_t usage = read_bytes(dir, v1 ? "memory.usage_in_bytes" : "memory.current");
    /* v1 says "no limit" with a number near 2^63. */
    if (limit == SIZE_MAX || usage == SIZE_MAX || limit >= (size_t)1 << 60)
        return SIZE_MAX;
    return limit > usage ? limit - usage : 0;
}

size_t dla__cpu_mem_available(void)
{
    char text[8192];
    if (!read_text("/proc/meminfo", text, sizeof text))
        return 0;
    size_t avail = dla__cpu_parse_meminfo(text), room = cgroup_room();
    return room < avail ? room : avail;
}

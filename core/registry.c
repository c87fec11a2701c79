/*
 * registry.c - the device plugins: found, loaded on demand, chosen.
 *
 * Phase 1 (discovery) reads every manifest of the search path and decides,
 * from the manifests alone, which plugin answers to each name. Phase 2
 * (loading) dlopens a plugin, negotiates the ABI and lists its devices, and
 * happens only when one of its devices is needed; a device is opened only
 * when it is handed out. Every failure is logged with the file and the
 * reason and kept for introspection, and none stops another plugin.
 *
 * One mutex guards all of it; devices, once handed out, are read without it
 * (nothing in a dla_device changes after it is opened). The registry reads
 * the environment once, at discovery; dla__registry_reset() forgets
 * everything so tests can change it.
 */
#define _GNU_SOURCE
#include "core/alloc.h"
#include "core/breadcrumb.h"
#include "core/device.h"
#include "core/env_choice.h"
#include "core/error.h"
#include "core/kernels.h"
#include "core/log.h"
#include "core/manifest.h"
#include "core/blas_defaults.h"
#include "core/omp_defaults.h"

#include <dlaccel/device_table.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DLACCEL_PLUGINS_DIR
#error "DLACCEL_PLUGINS_DIR (the installed plugins.d folder) must be defined by the build"
#endif

#define DLA__STATE_NAME(name, str) str,
static const char *const state_names[] = {DLA_MANIFEST_STATE_LIST(DLA__STATE_NAME)};
#undef DLA__STATE_NAME
_Static_assert(sizeof state_names / sizeof state_names[0] == DLA_MANIFEST_STATE_COUNT,
               "state names out of step with DLA_MANIFEST_STATE_LIST");

/* A device as the registry keeps it; dla_device comes first so the pointer
 * handed out is also a pointer to its slot. */
typedef struct device_slot {
    dla_device dev;
    int opened;
    dla_status open_status; /* a failed open is remembered, not retried */
    char open_error[DLA__REASON_MAX];
} device_slot;

struct dla__plugin {
    dla__manifest m;
    int folder;
    dla_manifest_state state;
    char reason[DLA__REASON_MAX];
    int claims_name; /* the record that answers to m.name */
    /* Phase 2. */
    void *handle;
    dla_plugin table;
    dla_plugin_host host;
    int log_slot;
    int abi_major, abi_minor; /* as answered; -1 until then */
    int device_count;         /* slots kept; -1 until loaded */
    device_slot *devices;
    int passed_over; /* named in the default's reason already */
};

static struct {
    int ready;
    char *env_device;  /* DLACCEL_DEVICE, NULL when unset or blank */
    char *env_disable; /* DLACCEL_PLUGINS_DISABLE, NULL when unset */
    dla__search_folder *folders;
    int folder_count;
    struct dla__plugin **plugins;
    int plugin_count;
    int default_done;
    dla_device *default_dev;
    dla_status default_status;
    char default_reason[1024]; /* why it is the default, or why none is */
    int default_pinned; /* a DLACCEL_DEVICE entry with an index chose it */
} reg;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Bumped by every reset, so a thread's current device from before is
 * recognised as gone instead of dangling. */
static atomic_uint reg_generation = 1;
static _Thread_local dla_device *current_dev;
static _Thread_local unsigned current_gen;
/* The default device as this thread last resolved it: it is fixed until
 * the registry is reset (a new generation), and dla_accelerate reads the
 * current device on every call (its key), where the lock of
 * dla_device_default cost 28 ns of a 300 ns hit. */
static _Thread_local dla_device *default_seen;
static _Thread_local unsigned default_gen;

/* Reasons nest (a DLACCEL_DEVICE failure quotes a load failure quoting
 * dlerror()); past the buffer they are cut short, which is all right. */
static void appendf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

#define setf(buf, size, ...) ((buf)[0] = '\0', appendf((buf), (size), __VA_ARGS__))

/* ------------------------------------------------------------ host table */

/* host->log carries no context, so each loaded plugin gets its own
 * trampoline whose prefix names it, whatever thread it logs from. */
#define LOG_SLOT_LIST(X)                                                       \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define LOG_SLOTS 16
static char log_prefix[LOG_SLOTS][DLA__PLUGIN_NAME_MAX + 3];
static int log_slot_used[LOG_SLOTS];

static void plugin_logv(const char *prefix, dla_log_level level, const char *fmt, va_list ap)
{
    /* A plugin's level is outside our control; keep it in the table's range. */
    if ((int)level < DLA_LOG_ERROR)
        level = DLA_LOG_ERROR;
    if ((int)level > DLA_LOG_DEBUG)
        level = DLA_LOG_DEBUG;
    dla__logv(level, prefix, fmt, ap);
}

#define LOG_SLOT_FN(i)                                                         \
    static void plugin_log_##i(dla_log_level level, const char *fmt, ...)      \
    {                                                                          \
        va_list ap;                                                            \
        va_start(ap, fmt);                                                     \
        plugin_logv(log_prefix[i], level, fmt, ap);                            \
        va_end(ap);                                                            \
    }
LOG_SLOT_LIST(LOG_SLOT_FN)
#undef LOG_SLOT_FN

typedef void (*host_log_fn)(dla_log_level, const char *, ...);
#define LOG_SLOT_PTR(i) plugin_log_##i,
static const host_log_fn log_slot_fns[] = {LOG_SLOT_LIST(LOG_SLOT_PTR)};
#undef LOG_SLOT_PTR
_Static_assert(sizeof log_slot_fns / sizeof log_slot_fns[0] == LOG_SLOTS, "log slots");

/* Past LOG_SLOTS loaded plugins the name is lost, the line is not. */
static void plugin_log_unnamed(dla_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    plugin_logv("plugin: ", level, fmt, ap);
    va_end(ap);
}

static dla_status host_error(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__failv(status, fmt, ap);
    va_end(ap);
    return status;
}

static void *host_alloc(size_t size, size_t align)
{
    if (align == 0)
        align = _Alignof(max_align_t);
    if (align & (align - 1))
        return NULL;
    return dla__malloc_aligned(size, align);
}

static void host_free(void *ptr) { dla__free_aligned(ptr); }

static void host_table_init(struct dla__plugin *p)
{
    dla_plugin_host *h = &p->host;
    memset(h, 0, sizeof *h);
    h->struct_size = sizeof *h;
    h->abi_major = DLA_PLUGIN_ABI_MAJOR;
    h->abi_minor = DLA_PLUGIN_ABI_MINOR;
    h->log = plugin_log_unnamed;
    for (int i = 0; i < LOG_SLOTS; i++) {
        if (!log_slot_used[i]) {
            log_slot_used[i] = 1;
            p->log_slot = i;
            snprintf(log_prefix[i], sizeof log_prefix[i], "%s: ", p->m.name);
            h->log = log_slot_fns[i];
            break;
        }
    }
    h->error = host_error;
    h->alloc = host_alloc;
    h->free = host_free;
}

/* --------------------------------------------------------------- loading */

/* The plugin's own message when it gave one through host->error. */
static const char *plugin_message(void)
{
    return dla_last_error()[0] ? dla_last_error() : "(the plugin gave no message)";
}

/* Closes what phase 2 opened; the record keeps its state and reason. */
static void plugin_unload(struct dla__plugin *p, int call_shutdown)
{
    for (int i = 0; i < p->device_count; i++) {
        device_slot *s = &p->devices[i];
        if (!s->opened)
            continue;
        if (p->table.sync)
            p->table.sync(s->dev.ctx);
        if (p->table.device_close)
            p->table.device_close(s->dev.ctx);
    }
    if (call_shutdown && p->table.shutdown)
        p->table.shutdown();
    if (p->handle)
        dlclose(p->handle);
    p->handle = NULL;
    dla__free(p->devices);
    p->devices = NULL;
    p->device_count = -1;
    if (p->log_slot >= 0)
        log_slot_used[p->log_slot] = 0;
    p->log_slot = -1;
}

/* Records and logs why the plugin cannot be used, and unloads it. */
static dla_status plugin_fail(struct dla__plugin *p, int call_shutdown, dla_log_level level,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static dla_status plugin_fail(struct dla__plugin *p, int call_shutdown, dla_log_level level,
                              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
    p->state = DLA_MANIFEST_FAILED;
    dla__log(level, "plugin '%s' (%s): %s; plugin skipped", p->m.name, p->m.path, p->reason);
    plugin_unload(p, call_shutdown);
    return DLA_ERR_PLUGIN;
}

/* Members ABI 1.0 requires; the rest may be NULL. */
static const char *missing_required_member(const dla_plugin *t)
{
    if (!t->device_count) return "device_count";
    if (!t->device_info) return "device_info";
    if (!t->device_open) return "device_open";
    if (!t->mem_alloc) return "mem_alloc";
    if (!t->mem_free) return "mem_free";
    if (!t->copy_to_device) return "copy_to_device";
    if (!t->copy_to_host) return "copy_to_host";
    return NULL;
}

static dla_status plugin_list_devices(struct dla__plugin *p)
{
    const char *lib = p->m.library;
    int n = 0;
    dla_clear_error();
    dla_status st = p->table.device_count(&n);
    if (st != DLA_OK)
        return plugin_fail(p, 1, DLA_LOG_WARN, "%s: device_count failed (%s): %s", lib,
                           dla_status_str(st), plugin_message());
    if (n < 0)
        return plugin_fail(p, 1, DLA_LOG_WARN, "%s: device_count answered %d", lib, n);
    /* A count no machine has is a plugin's bug (an unset int), not a
     * reason to fail everyone: its slots, asked for, were "default device:
     * out of memory" with the cpu plugin ready, and no device at all. */
    if (n > DLA__PLUGIN_DEVICES_MAX)
        return plugin_fail(p, 1, DLA_LOG_WARN, "%s: device_count answered %d (at most %d)", lib,
                           n, DLA__PLUGIN_DEVICES_MAX);
    if (n == 0) {
        /* A plugin may say why (set by host->error, status DLA_OK). */
        if (dla_last_error()[0])
            plugin_fail(p, 1, DLA_LOG_INFO, "%s: no device (%s)", lib, dla_last_error());
        else
            plugin_fail(p, 1, DLA_LOG_INFO, "%s: no device", lib);
        dla_clear_error();
        p->device_count = 0;
        return DLA_ERR_PLUGIN;
    }
    dla__log(DLA_LOG_DEBUG, "plugin '%s': %d device(s)", p->m.name, n);

    p->devices = dla__calloc((size_t)n, sizeof *p->devices);
    if (!p->devices)
        return DLA_ERR_OUT_OF_MEMORY;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        device_slot *s = &p->devices[kept];
        memset(s, 0, sizeof *s);
        s->dev.info.struct_size = sizeof s->dev.info;
        dla_clear_error();
        st = p->table.device_info(i, &s->dev.info);
        if (st != DLA_OK) {
            dla__log(DLA_LOG_WARN, "plugin '%s' (%s): device %d: device_info failed (%s): %s; device skipped",
                     p->m.name, p->m.path, i, dla_status_str(st), plugin_message());
            continue;
        }
        dla_plugin_device_info *info = &s->dev.info;
        info->description[sizeof info->description - 1] = '\0';
        info->type[sizeof info->type - 1] = '\0';
        info->properties[sizeof info->properties - 1] = '\0';
        s->dev.plugin = p;
        s->dev.table = &p->table;
        s->dev.index = i;
        s->dev.plugin_name = p->m.name;
        s->dev.abi_minor = p->abi_minor;
        snprintf(s->dev.name, sizeof s->dev.name, "%s:%d", p->m.name, i);
        dla__log(DLA_LOG_DEBUG, "plugin '%s': device %s: %s (type %s, %llu bytes, %d units)",
                 p->m.name, s->dev.name, info->description, info->type,
                 (unsigned long long)info->memory_bytes, (int)info->compute_units);
        kept++;
    }
    p->device_count = kept;
    if (kept == 0)
        return plugin_fail(p, 1, DLA_LOG_WARN, "%s: none of its %d device(s) could be described",
                           lib, n);
    return DLA_OK;
}

/* Phase 2: dlopen, init, ABI check, devices. DLA_OK when LOADED;
 * DLA_ERR_PLUGIN (reason in p->reason) when it cannot be; an out-of-memory
 * leaves the record FOUND so a later call may try again. */
static dla_status plugin_load(struct dla__plugin *p)
{
    if (p->state == DLA_MANIFEST_LOADED)
        return DLA_OK;
    if (p->state != DLA_MANIFEST_FOUND)
        return DLA_ERR_PLUGIN;
    const char *lib = p->m.library;
    dla__log(DLA_LOG_DEBUG, "plugin '%s': dlopen %s", p->m.name, lib);
    dla__omp_defaults();  /* before a plugin can load the OpenMP runtime */
    dla__blas_defaults(); /* and OpenBLAS */
    dlerror();
    p->handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!p->handle) {
        const char *e = dlerror();
        return plugin_fail(p, 0, DLA_LOG_WARN, "cannot load library %s: %s", lib,
                           e ? e : "unknown dlopen error");
    }
    /* A path that came to name a loaded library after discovery compared
     * the files (a symbolic link retargeted in between) gives its handle
     * again: the same state, so the same rule as discovery's. */
    for (int i = 0; i < reg.plugin_count; i++) {
        struct dla__plugin *q = reg.plugins[i];
        if (q != p && q->state == DLA_MANIFEST_LOADED && q->handle == p->handle)
            return plugin_fail(p, 0, DLA_LOG_WARN,
                               "library %s is the library %s of plugin '%s' (manifest %s), "
                               "loaded already: a library is loaded once, with one state, and "
                               "serves one plugin", lib, q->m.library, q->m.name, q->m.path);
    }
    dlerror();
    void *sym = dlsym(p->handle, DLA_PLUGIN_INIT_SYMBOL);
    if (!sym) {
        const char *e = dlerror();
        return plugin_fail(p, 0, DLA_LOG_WARN, "%s does not export %s: %s", lib,
                           DLA_PLUGIN_INIT_SYMBOL, e ? e : "symbol is NULL");
    }
    dla_plugin_init_fn init;
    _Static_assert(sizeof init == sizeof sym, "function and object pointers differ");
    memcpy(&init, &sym, sizeof init);

    host_table_init(p);
    memset(&p->table, 0, sizeof p->table);
    p->table.struct_size = sizeof p->table;
    /* Named before the call, at info, and in a breadcrumb for the next
     * start: a crash inside init leaves nothing else that says which
     * plugin it was (breadcrumb.h). */
    dla__log(DLA_LOG_INFO, "plugin '%s': calling %s of %s (host ABI %d.%d)", p->m.name,
             DLA_PLUGIN_INIT_SYMBOL, lib, DLA_PLUGIN_ABI_MAJOR, DLA_PLUGIN_ABI_MINOR);
    char crumb[4200];
    dla__breadcrumb_drop(p->m.name, lib, "init", crumb, sizeof crumb);
    dla_clear_error();
    dla_status st = init(&p->host, &p->table);
    dla__breadcrumb_pick(crumb);
    if (st != DLA_OK)
        return plugin_fail(p, 0, DLA_LOG_WARN, "%s: init failed (%s): %s", lib,
                           dla_status_str(st), plugin_message());
    p->abi_major = (int)p->table.abi_major;
    p->abi_minor = (int)p->table.abi_minor;
    /* With another major the table's layout is unknown: call nothing in it. */
    if (p->table.abi_major != DLA_PLUGIN_ABI_MAJOR)
        return plugin_fail(p, 0, DLA_LOG_WARN,
                           "%s speaks plugin ABI %u.%u; this library speaks %d.%d and the major must match",
                           lib, (unsigned)p->table.abi_major, (unsigned)p->table.abi_minor,
                           DLA_PLUGIN_ABI_MAJOR, DLA_PLUGIN_ABI_MINOR);
    size_t size = p->table.struct_size;
    size_t needed = offsetof(dla_plugin, copy_to_host) + sizeof p->table.copy_to_host;
    if (size < needed)
        return plugin_fail(p, 0, DLA_LOG_WARN,
                           "%s: table struct_size %zu is smaller than ABI 1.0's required members (%zu)",
                           lib, size, needed);
    if (size > sizeof p->table)
        size = sizeof p->table;
    /* Whatever lies past the plugin's size is not its to set. */
    memset((char *)&p->table + size, 0, sizeof p->table - size);
    /* ABI 1.3 members go only to a plugin that answered 1.3: one built
     * against an older header never set them, whatever its size says. */
    if (p->abi_minor < 3 && size > offsetof(dla_plugin, fused_reduce)) {
        memset((char *)&p->table + offsetof(dla_plugin, fused_reduce), 0,
               sizeof p->table - offsetof(dla_plugin, fused_reduce));
        size = offsetof(dla_plugin, fused_reduce);
    }
    if (p->abi_minor < 5 && size > offsetof(dla_plugin, plan_replay)) {
        memset((char *)&p->table + offsetof(dla_plugin, plan_replay), 0,
               sizeof p->table - offsetof(dla_plugin, plan_replay));
        size = offsetof(dla_plugin, plan_replay);
    }
    if (p->abi_minor < 6 && size > offsetof(dla_plugin, coll_probe)) {
        memset((char *)&p->table + offsetof(dla_plugin, coll_probe), 0,
               sizeof p->table - offsetof(dla_plugin, coll_probe));
        size = offsetof(dla_plugin, coll_probe);
    }
    if (p->abi_minor < 7 && size > offsetof(dla_plugin, mem_trim)) {
        memset((char *)&p->table + offsetof(dla_plugin, mem_trim), 0,
               sizeof p->table - offsetof(dla_plugin, mem_trim));
        size = offsetof(dla_plugin, mem_trim);
    }
    if (p->abi_minor < 8 && size > offsetof(dla_plugin, fused_multi)) {
        memset((char *)&p->table + offsetof(dla_plugin, fused_multi), 0,
               sizeof p->table - offsetof(dla_plugin, fused_multi));
        size = offsetof(dla_plugin, fused_multi);
    }
    if (p->abi_minor < 9 && size > offsetof(dla_plugin, conv_forward_fused)) {
        memset((char *)&p->table + offsetof(dla_plugin, conv_forward_fused), 0,
               sizeof p->table - offsetof(dla_plugin, conv_forward_fused));
        size = offsetof(dla_plugin, conv_forward_fused);
    }
    p->table.struct_size = size;
    const char *missing = missing_required_member(&p->table);
    if (missing)
        return plugin_fail(p, 1, DLA_LOG_WARN, "%s: required member %s is NULL", lib, missing);

    /* The GPU plugins first call their driver here (cuda's
     * cudaGetDeviceCount, opencl's ICD loader), not in init: named and
     * breadcrumbed the same way. */
    dla__log(DLA_LOG_INFO, "plugin '%s': listing the devices of %s (device_count, device_info)",
             p->m.name, lib);
    dla__breadcrumb_drop(p->m.name, lib, "device listing (device_count, device_info)", crumb,
                         sizeof crumb);
    st = plugin_list_devices(p);
    dla__breadcrumb_pick(crumb);
    if (st != DLA_OK) {
        if (st == DLA_ERR_OUT_OF_MEMORY)
            plugin_unload(p, 1);
        return st;
    }
    p->state = DLA_MANIFEST_LOADED;
    p->reason[0] = '\0';
    dla__log(DLA_LOG_INFO, "plugin '%s': loaded %s (ABI %d.%d), %d device(s)", p->m.name, lib,
             p->abi_major, p->abi_minor, p->device_count);
    return DLA_OK;
}

static dla_status device_open(device_slot *s)
{
    if (s->opened)
        return DLA_OK;
    if (s->open_status != DLA_OK)
        return s->open_status;
    const dla_plugin *t = s->dev.table;
    const struct dla__plugin *p = s->dev.plugin;
    void *ctx = NULL;
    /* Where a GPU plugin makes its context (cuda's cudaSetDevice and
     * stream): named and breadcrumbed as init and the device listing are. */
    char stage[96], crumb[4200];
    snprintf(stage, sizeof stage, "device_open (%s)", s->dev.name);
    dla__log(DLA_LOG_INFO, "device %s: calling device_open of %s", s->dev.name, p->m.library);
    dla__breadcrumb_drop(p->m.name, p->m.library, stage, crumb, sizeof crumb);
    dla_clear_error();
    dla_status st = t->device_open(s->dev.index, &ctx);
    dla__breadcrumb_pick(crumb);
    if (st != DLA_OK) {
        setf(s->open_error, sizeof s->open_error, "device %s: device_open failed (%s): %s",
                 s->dev.name, dla_status_str(st), plugin_message());
        s->open_status = st;
        dla__log(DLA_LOG_WARN, "%s", s->open_error);
        return st;
    }
    s->dev.ctx = ctx;
    s->opened = 1;
    dla__log(DLA_LOG_DEBUG, "device %s: opened", s->dev.name);
    return DLA_OK;
}

/* ------------------------------------------------------------- discovery */

/* The next comma-separated entry of a list at *p (blanks around it left
 * out): [*first, *last), *p moved past it; 0 at the list's end. */
static int next_entry(const char **p, const char **first, const char **last)
{
    const char *at = *p;
    while (at && (*at == ' ' || *at == '\t' || *at == ','))
        at++;
    if (!at || !*at)
        return 0;
    const char *end = at;
    while (*end && *end != ',')
        end++;
    const char *stop = end;
    while (stop > at && (stop[-1] == ' ' || stop[-1] == '\t'))
        stop--;
    *first = at;
    *last = stop;
    *p = end;
    return 1;
}

/* Whether name is one of the comma-separated entries of list (blanks
 * around entries ignored). */
static int list_contains(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list, *first, *last; next_entry(&p, &first, &last);)
        if ((size_t)(last - first) == n && strncmp(first, name, n) == 0)
            return 1;
    return 0;
}

static struct dla__plugin *find_claim(const char *name)
{
    for (int i = 0; i < reg.plugin_count; i++)
        if (reg.plugins[i]->claims_name && strcmp(reg.plugins[i]->m.name, name) == 0)
            return reg.plugins[i];
    return NULL;
}

/* Whether library paths a and b (absolute: manifest.c joins a relative
 * one to its folder) name one file: one inode (a symlink or a hard link
 * to it, which dlopen would hand back as the one loaded copy); for a path
 * stat cannot see (a missing file), the same text after symlinks. */
static int same_library(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ra[PATH_MAX], rb[PATH_MAX];
    return strcmp(realpath(a, ra) ? ra : a, realpath(b, rb) ? rb : b) == 0;
}

/* The plugin whose library is the file lib names (after symlinks and hard
 * links), among those that claim a name; NULL when none. */
static struct dla__plugin *find_library_claim(const char *lib)
{
    for (int i = 0; i < reg.plugin_count; i++) {
        struct dla__plugin *q = reg.plugins[i];
        if (q->claims_name && same_library(lib, q->m.library))
            return q;
    }
    return NULL;
}

/* Sorts the manifest's fate from what it says and what came before. */
static void classify(struct dla__plugin *p)
{
    dla__manifest *m = &p->m;
    struct dla__plugin *first;
    if (list_contains(reg.env_disable, m->name)) {
        p->state = DLA_MANIFEST_DISABLED;
        setf(p->reason, sizeof p->reason, "disabled by DLACCEL_PLUGINS_DISABLE");
        dla__log(DLA_LOG_INFO, "manifest %s: plugin '%s' disabled by DLACCEL_PLUGINS_DISABLE; skipped",
                 m->path, m->name);
    } else if (m->abi_major != DLA_PLUGIN_ABI_MAJOR) {
        /* Not loaded, and it claims no name: an older or newer build of
         * the same plugin further down the path may still serve. */
        p->state = DLA_MANIFEST_FAILED;
        setf(p->reason, sizeof p->reason,
                 "field 'plugin.abi_version': declares plugin ABI %s; this library speaks %d.%d and the major must match",
                 m->abi, DLA_PLUGIN_ABI_MAJOR, DLA_PLUGIN_ABI_MINOR);
        dla__log(DLA_LOG_WARN, "manifest %s: %s; library not loaded", m->path, p->reason);
    } else if ((first = find_claim(m->name)) != NULL) {
        p->state = DLA_MANIFEST_DUPLICATE;
        setf(p->reason, sizeof p->reason,
                 "plugin name '%s' is already taken by %s (the first found wins)", m->name,
                 first->m.path);
        dla__log(DLA_LOG_WARN, "manifest %s: %s; skipped", m->path, p->reason);
    } else if ((first = find_library_claim(m->library)) != NULL && strcmp(m->name, "cpu") == 0) {
        /* The cpu plugin is every device's fallback: it keeps its library
         * from a plugin found before it under another name (a renamed
         * copy of cpu.json earlier on the path), which is skipped. */
        first->state = DLA_MANIFEST_DUPLICATE;
        first->claims_name = 0;
        setf(first->reason, sizeof first->reason,
             "library %s is also that of plugin 'cpu' (manifest %s), which keeps it as the "
             "fallback of every device: a library is loaded once, with one state, and serves "
             "one plugin", first->m.library, m->path);
        dla__log(DLA_LOG_WARN, "manifest %s: %s; skipped", first->m.path, first->reason);
        p->state = DLA_MANIFEST_FOUND;
        p->claims_name = 1;
    } else if (first) {
        /* dlopen gives the one loaded copy again: its init would run a
         * second time over the first plugin's state, and two plugins'
         * devices would share it (and close it twice). */
        p->state = DLA_MANIFEST_DUPLICATE;
        setf(p->reason, sizeof p->reason,
             "library %s is already that of plugin '%s' (manifest %s): a library is loaded "
             "once, with one state, and serves one plugin (the first found wins)",
             m->library, first->m.name, first->m.path);
        dla__log(DLA_LOG_WARN, "manifest %s: %s; skipped", m->path, p->reason);
    } else {
        p->state = DLA_MANIFEST_FOUND;
        p->claims_name = 1;
        dla__log(DLA_LOG_DEBUG, "manifest %s: plugin '%s', library %s, ABI %s, priority %d", m->path,
                 m->name, m->library, m->abi, m->priority);
    }
}

static dla_status add_manifest(const char *path, int folder)
{
    struct dla__plugin **grown =
        dla__realloc(reg.plugins, (size_t)(reg.plugin_count + 1) * sizeof *grown);
    if (!grown)
        return DLA_ERR_OUT_OF_MEMORY;
    reg.plugins = grown;
    struct dla__plugin *p = dla__calloc(1, sizeof *p);
    if (!p)
        return DLA_ERR_OUT_OF_MEMORY;
    p->folder = folder;
    p->log_slot = -1;
    p->abi_major = p->abi_minor = p->device_count = -1;

    dla__log(DLA_LOG_DEBUG, "manifest %s: reading", path);
    dla_status st = dla__manifest_read(path, reg.folders[folder].path, &p->m, p->reason,
                                       sizeof p->reason);
    if (st == DLA_ERR_OUT_OF_MEMORY) {
        dla__manifest_clear(&p->m);
        dla__free(p);
        return st;
    }
    reg.plugins[reg.plugin_count++] = p;

    /* The same file seen again (folder listed twice, a symlink) is the same
     * plugin: say so quietly, before reporting its problems a second time. */
    for (int i = 0; i + 1 < reg.plugin_count; i++) {
        struct dla__plugin *q = reg.plugins[i];
        if (strcmp(q->m.real_path, p->m.real_path) == 0) {
            p->state = DLA_MANIFEST_DUPLICATE;
            setf(p->reason, sizeof p->reason, "same file as %s (read once)", q->m.path);
            dla__log(DLA_LOG_INFO, "manifest %s: %s; skipped", path, p->reason);
            return DLA_OK;
        }
    }
    if (st != DLA_OK) {
        p->state = DLA_MANIFEST_INVALID;
        dla__log(DLA_LOG_WARN, "manifest %s: %s; manifest skipped", path, p->reason);
        return DLA_OK;
    }
    classify(p);
    return DLA_OK;
}

static void registry_free(void)
{
    for (int i = 0; i < reg.plugin_count; i++) {
        struct dla__plugin *p = reg.plugins[i];
        if (p->state == DLA_MANIFEST_LOADED)
            plugin_unload(p, 1);
        dla__manifest_clear(&p->m);
        dla__free(p);
    }
    dla__free(reg.plugins);
    dla__search_path_free(reg.folders, reg.folder_count);
    dla__free(reg.env_device);
    dla__free(reg.env_disable);
    memset(&reg, 0, sizeof reg);
}

/* A copy of the variable, or NULL when it is unset or has nothing but
 * blanks and commas in it. */
static dla_status env_copy(const char *name, char **out)
{
    const char *v = secure_getenv(name);
    *out = NULL;
    if (!v || v[strspn(v, " \t,")] == '\0')
        return DLA_OK;
    *out = dla__strdup(v);
    return *out ? DLA_OK : DLA_ERR_OUT_OF_MEMORY;
}

/* DLACCEL_PLUGINS_DISABLE entries that cannot be a plugin's name
 * ([a-z0-9_-], 1 to DLA__PLUGIN_NAME_MAX characters: "cuda:1", "OpenCL")
 * disable nothing: said, rather than running with the plugin meant. A
 * well-formed name no manifest has is fine (a script's DISABLE=cuda on a
 * machine without it). */
static void check_disable_entries(const char *list)
{
    for (const char *p = list, *first, *last; next_entry(&p, &first, &last);) {
        int ok = last > first && last - first <= DLA__PLUGIN_NAME_MAX;
        for (const char *c = first; ok && c < last; c++)
            ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-';
        if (!ok && last > first)
            dla__log(DLA_LOG_WARN,
                     "DLACCEL_PLUGINS_DISABLE entry '%.*s' is not a plugin name ([a-z0-9_-], as "
                     "manifests name plugins; a device cannot be disabled alone): it disables "
                     "nothing",
                     (int)(last - first), first);
    }
}

static dla_status discover(void)
{
    const char *path = secure_getenv("DLACCEL_PLUGIN_PATH");
    dla_status st = env_copy("DLACCEL_DEVICE", &reg.env_device);
    if (st == DLA_OK)
        st = env_copy("DLACCEL_PLUGINS_DISABLE", &reg.env_disable);
    /* off: only DLACCEL_PLUGIN_PATH is searched, so what an installation
     * put in the compiled-in folder cannot change a program that brings
     * its plugins (the test suite: an installed opencl plugin moved the
     * default device and caught a fake plugin's crash). */
    static atomic_int warned_installed;
    static const char *const installed_values[] = {"on", "1", "yes", "off", "0", "no", NULL};
    const int installed =
        dla__env_choice("DLACCEL_INSTALLED_PLUGINS", installed_values, &warned_installed, dla__log);
    if (st == DLA_OK)
        st = dla__search_path_build(path, installed >= 3 ? NULL : DLACCEL_PLUGINS_DIR, &reg.folders,
                                    &reg.folder_count);
    if (st != DLA_OK)
        return st;
    dla__breadcrumb_report();
    check_disable_entries(reg.env_disable);
    dla__log(DLA_LOG_DEBUG, "discovery: DLACCEL_PLUGIN_PATH=%s, installed folder %s%s, %d folder(s) to search",
             path ? path : "(unset)", DLACCEL_PLUGINS_DIR,
             installed >= 3 ? " (not searched: DLACCEL_INSTALLED_PLUGINS=off)" : "", reg.folder_count);
    for (int i = 0; i < reg.folder_count && st == DLA_OK; i++) {
        dla__search_folder *f = &reg.folders[i];
        char **files;
        int n;
        dla__log(DLA_LOG_DEBUG, "discovery: folder %d/%d: %s (from %s)", i + 1, reg.folder_count,
                 f->path, f->origin);
        if ((st = dla__manifest_scan(f, &files, &n)) != DLA_OK)
            break;
        if (f->manifest_count < 0) {
            /* A missing installed folder is normal; a folder the user named is
             * worth a word. */
            dla__log(strcmp(f->origin, "installed") ? DLA_LOG_INFO : DLA_LOG_DEBUG,
                     "discovery: cannot read folder %s (from %s): %s", f->path, f->origin, f->error);
            continue;
        }
        dla__log(DLA_LOG_DEBUG, "discovery: %s: %d manifest(s)", f->path, n);
        for (int j = 0; j < n && st == DLA_OK; j++)
            st = add_manifest(files[j], i);
        dla__manifest_paths_free(files, n);
    }
    if (st == DLA_OK) {
        int usable = 0;
        for (int i = 0; i < reg.plugin_count; i++)
            usable += reg.plugins[i]->claims_name;
        dla__log(DLA_LOG_DEBUG, "discovery: %d manifest(s) found, %d usable", reg.plugin_count,
                 usable);
    }
    return st;
}

/* Runs discovery once; a failed one (out of memory) leaves nothing behind
 * and is tried again on the next call. */
static dla_status ensure_ready(void)
{
    if (reg.ready)
        return DLA_OK;
    dla_status st = discover();
    if (st != DLA_OK) {
        registry_free();
        return dla__fail(st, "plugin discovery: out of memory");
    }
    reg.ready = 1;
    return DLA_OK;
}

/* ------------------------------------------------------------- selection */

/* Gives the device named by entry ("plugin" or "plugin:index"), loading the
 * plugin and opening the device. On failure writes why into why and
 * returns NULL; *status is DLA_ERR_OUT_OF_MEMORY when that was the cause
 * (the caller must not remember such a failure), else DLA_ERR_NO_DEVICE. */
static dla_device *resolve_entry(const char *entry, size_t len, char *why, size_t size,
                                 dla_status *status)
{
    *status = DLA_ERR_NO_DEVICE;
    char name[DLA__PLUGIN_NAME_MAX + 1];
    const char *colon = memchr(entry, ':', len);
    size_t name_len = colon ? (size_t)(colon - entry) : len;
    int index = -1;
    if (name_len == 0 || name_len > DLA__PLUGIN_NAME_MAX) {
        setf(why, size, "not of the form plugin or plugin:index");
        return NULL;
    }
    memcpy(name, entry, name_len);
    name[name_len] = '\0';
    if (colon) {
        const char *d = colon + 1, *end = entry + len;
        if (d == end || end - d > 6) {
            setf(why, size, "not of the form plugin or plugin:index");
            return NULL;
        }
        index = 0;
        for (; d < end; d++) {
            if (*d < '0' || *d > '9') {
                setf(why, size, "not of the form plugin or plugin:index");
                return NULL;
            }
            index = index * 10 + (*d - '0');
        }
    }

    struct dla__plugin *p = find_claim(name);
    if (!p) {
        for (int i = 0; i < reg.plugin_count; i++) {
            struct dla__plugin *q = reg.plugins[i];
            if (q->m.name && strcmp(q->m.name, name) == 0) {
                setf(why, size, "plugin '%s' (%s) is not usable (%s): %s", name,
                         q->m.path, state_names[q->state], q->reason);
                return NULL;
            }
        }
        setf(why, size, "no plugin named '%s' among the %d manifest(s) found", name,
                 reg.plugin_count);
        return NULL;
    }
    dla_status st = plugin_load(p);
    if (st == DLA_ERR_OUT_OF_MEMORY) {
        *status = st;
        setf(why, size, "plugin '%s': out of memory while loading", name);
        return NULL;
    }
    if (st != DLA_OK) {
        setf(why, size, "plugin '%s' (%s) failed to load: %s", name, p->m.path, p->reason);
        return NULL;
    }
    why[0] = '\0';
    for (int i = 0; i < p->device_count; i++) {
        device_slot *s = &p->devices[i];
        if (index >= 0 && s->dev.index != index)
            continue;
        if (device_open(s) == DLA_OK)
            return &s->dev;
        setf(why, size, "%s", s->open_error);
        if (index >= 0)
            return NULL;
    }
    if (!why[0]) {
        setf(why, size, "plugin '%s' has no device %d; it offers", name, index);
        for (int i = 0; i < p->device_count; i++)
            appendf(why, size, "%s %s", i ? "," : "", p->devices[i].dev.name);
    }
    return NULL;
}

static void set_default(dla_device *dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_default(dla_device *dev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reg.default_reason, sizeof reg.default_reason, fmt, ap);
    va_end(ap);
    reg.default_dev = dev;
    reg.default_status = dev ? DLA_OK : DLA_ERR_NO_DEVICE;
    reg.default_done = 1;
}

/* DLACCEL_DEVICE: entries in order, the first that gives a device wins; a
 * list where none does is an error naming each entry and its reason. */
static dla_status default_from_list(void)
{
    char failed[768] = "";
    char why[DLA__REASON_MAX];
    dla_status st;
    for (const char *p = reg.env_device; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *end = p;
        while (*end && *end != ',')
            end++;
        const char *last = end;
        while (last > p && (last[-1] == ' ' || last[-1] == '\t'))
            last--;
        size_t len = (size_t)(last - p);
        if (len == 0)
            break;
        dla_device *dev = resolve_entry(p, len, why, sizeof why, &st);
        if (st == DLA_ERR_OUT_OF_MEMORY && !dev)
            return st;
        if (dev) {
            reg.default_pinned = memchr(p, ':', len) != NULL;
            if (failed[0])
                set_default(dev, "DLACCEL_DEVICE entry '%.*s' (passed over: %s)", (int)len, p, failed);
            else
                set_default(dev, "DLACCEL_DEVICE entry '%.*s'", (int)len, p);
            return DLA_OK;
        }
        dla__log(DLA_LOG_WARN, "DLACCEL_DEVICE entry '%.*s' gives no device: %s", (int)len, p, why);
        appendf(failed, sizeof failed, "%s'%.*s': %s", failed[0] ? "; " : "", (int)len, p, why);
        p = end;
    }
    set_default(NULL, "DLACCEL_DEVICE=\"%s\" names no device that can be had: %s", reg.env_device,
                failed);
    return DLA_OK;
}

/* A device's priority: its type's in the manifest's priority_by_type,
 * else its plugin's. */
static int type_priority(const struct dla__plugin *p, const char *type)
{
    for (int i = 0; i < p->m.type_priority_count; i++)
        if (strcmp(p->m.type_priority_types[i], type) == 0)
            return p->m.type_priority_values[i];
    return p->m.priority;
}

/* The highest priority a device of the plugin can have: known from the
 * manifest alone, before the plugin is loaded. */
static int top_priority(const struct dla__plugin *p)
{
    int top = p->m.priority;
    for (int i = 0; i < p->m.type_priority_count; i++)
        if (p->m.type_priority_values[i] > top)
            top = p->m.type_priority_values[i];
    return top;
}

int dla__device_priority(const dla_device *dev)
{
    return dev && dev->plugin ? type_priority(dev->plugin, dev->info.type) : 0;
}

/* Unset DLACCEL_DEVICE: the device of the highest priority (type_priority),
 * ties in discovery order, then device order. Plugins are looked at by the
 * highest priority they can give (top_priority), and one is loaded only
 * while it could still beat the best device found, so a plugin below the
 * default stays unloaded. A device that fails to open is passed over and
 * the choice made again without it. */
static dla_status default_by_priority(void)
{
    char failed[768] = "";
    int candidates = 0;
    for (int i = 0; i < reg.plugin_count; i++) {
        candidates += reg.plugins[i]->claims_name;
        reg.plugins[i]->passed_over = 0;
    }
    while (candidates) {
        int prev = -1, best_plugin = -1, best_prio = 0;
        device_slot *best_slot = NULL;
        for (;;) {
            /* The next record in (top priority down, discovery order up)
             * after prev; no sorted copy, so nothing to allocate. */
            int next = -1;
            for (int i = 0; i < reg.plugin_count; i++) {
                struct dla__plugin *q = reg.plugins[i];
                if (!q->claims_name)
                    continue;
                int top = top_priority(q);
                if (prev >= 0) {
                    int pp = top_priority(reg.plugins[prev]);
                    if (top > pp || (top == pp && i <= prev))
                        continue;
                }
                if (next < 0 || top > top_priority(reg.plugins[next]))
                    next = i;
            }
            if (next < 0)
                break;
            prev = next;
            struct dla__plugin *q = reg.plugins[next];
            int top = top_priority(q);
            if (best_slot && (top < best_prio || (top == best_prio && next > best_plugin)))
                break;
            dla_status st = plugin_load(q);
            if (st == DLA_ERR_OUT_OF_MEMORY)
                return st;
            if (st != DLA_OK) {
                if (!q->passed_over)
                    appendf(failed, sizeof failed, "%s'%s' (%d): plugin '%s' (%s) failed to load: %s",
                            failed[0] ? "; " : "", q->m.name, top, q->m.name, q->m.path, q->reason);
                q->passed_over = 1;
                continue;
            }
            for (int k = 0; k < q->device_count; k++) {
                device_slot *sl = &q->devices[k];
                int pr = type_priority(q, sl->dev.info.type);
                if (sl->open_status != DLA_OK)
                    continue;
                if (!best_slot || pr > best_prio || (pr == best_prio && next < best_plugin)) {
                    best_slot = sl;
                    best_prio = pr;
                    best_plugin = next;
                }
            }
        }
        if (!best_slot)
            break;
        if (device_open(best_slot) == DLA_OK) {
            if (failed[0])
                set_default(&best_slot->dev, "highest priority that gives a device (%d; passed over: %s)",
                            best_prio, failed);
            else
                set_default(&best_slot->dev, "highest priority (%d)", best_prio);
            return DLA_OK;
        }
        appendf(failed, sizeof failed, "%s'%s' (%d): %s", failed[0] ? "; " : "",
                best_slot->dev.plugin_name, best_prio, best_slot->open_error);
    }
    if (candidates) {
        set_default(NULL, "no plugin gives a device: %s", failed);
        return DLA_OK;
    }
    char folders[512] = "";
    for (int i = 0; i < reg.folder_count; i++)
        appendf(folders, sizeof folders, "%s%s (%s)", i ? ", " : "", reg.folders[i].path,
                reg.folders[i].origin);
    set_default(NULL, "no usable plugin manifest among the %d found in: %s", reg.plugin_count,
                folders[0] ? folders : "(no folder)");
    return DLA_OK;
}

static dla_status resolve_default(void)
{
    dla_status st = ensure_ready();
    if (st != DLA_OK || reg.default_done)
        return st;
    st = reg.env_device ? default_from_list() : default_by_priority();
    if (st != DLA_OK)
        return dla__fail(st, "default device: out of memory");
    if (reg.default_dev)
        dla__log(DLA_LOG_INFO, "default device %s: %s", reg.default_dev->name, reg.default_reason);
    else
        dla__log(DLA_LOG_WARN, "no default device: %s", reg.default_reason);
    return DLA_OK;
}

/* Loads every FOUND plugin (for listing). Out of memory stops early. */
static void load_all(void)
{
    for (int i = 0; i < reg.plugin_count; i++)
        if (plugin_load(reg.plugins[i]) == DLA_ERR_OUT_OF_MEMORY)
            return;
}

/* ---------------------------------------------------------- public: devices */

DLA_API dla_device *dla_device_default(void)
{
    pthread_mutex_lock(&reg_lock);
    dla_device *dev = NULL;
    if (resolve_default() == DLA_OK) {
        dev = reg.default_dev;
        if (!dev)
            dla__fail(reg.default_status, "%s", reg.default_reason);
    }
    pthread_mutex_unlock(&reg_lock);
    return dev;
}

int dla__device_default_pinned(void)
{
    pthread_mutex_lock(&reg_lock);
    int pinned = resolve_default() == DLA_OK && reg.default_dev && reg.default_pinned;
    pthread_mutex_unlock(&reg_lock);
    return pinned;
}

DLA_API const char *dla_device_default_reason(void)
{
    pthread_mutex_lock(&reg_lock);
    const char *why = resolve_default() == DLA_OK ? reg.default_reason : dla_last_error();
    pthread_mutex_unlock(&reg_lock);
    return why;
}

DLA_API dla_device *dla_device_get(const char *name)
{
    if (!name) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_device_get: argument name: NULL");
        return NULL;
    }
    pthread_mutex_lock(&reg_lock);
    dla_device *dev = NULL;
    if (ensure_ready() == DLA_OK) {
        char why[DLA__REASON_MAX];
        dla_status st;
        dev = resolve_entry(name, strlen(name), why, sizeof why, &st);
        if (!dev)
            dla__fail(st, "dla_device_get: '%s': %s", name, why);
    }
    pthread_mutex_unlock(&reg_lock);
    return dev;
}

DLA_API int dla_device_count(void)
{
    pthread_mutex_lock(&reg_lock);
    int n = 0;
    if (ensure_ready() == DLA_OK) {
        load_all();
        for (int i = 0; i < reg.plugin_count; i++)
            if (reg.plugins[i]->state == DLA_MANIFEST_LOADED)
                n += reg.plugins[i]->device_count;
    }
    pthread_mutex_unlock(&reg_lock);
    return n;
}

DLA_API dla_device *dla_device_at(int i)
{
    pthread_mutex_lock(&reg_lock);
    dla_device *dev = NULL;
    int found = 0;
    if (ensure_ready() == DLA_OK) {
        load_all();
        for (int k = 0; k < reg.plugin_count && !found && i >= 0; k++) {
            struct dla__plugin *p = reg.plugins[k];
            if (p->state != DLA_MANIFEST_LOADED)
                continue;
            if (i < p->device_count) {
                device_slot *s = &p->devices[i];
                found = 1;
                if (device_open(s) == DLA_OK)
                    dev = &s->dev;
                else
                    dla__fail(DLA_ERR_DEVICE, "dla_device_at: %s", s->open_error);
            }
            i -= p->device_count;
        }
        if (!found)
            dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_device_at: argument i: out of range");
    }
    pthread_mutex_unlock(&reg_lock);
    return dev;
}

DLA_API const char *dla_device_name(const dla_device *dev) { return dev ? dev->name : ""; }
DLA_API const char *dla_device_description(const dla_device *dev)
{
    return dev ? dev->info.description : "";
}
DLA_API const char *dla_device_plugin(const dla_device *dev) { return dev ? dev->plugin_name : ""; }
DLA_API const char *dla_device_type(const dla_device *dev) { return dev ? dev->info.type : ""; }
DLA_API uint64_t dla_device_memory(const dla_device *dev) { return dev ? dev->info.memory_bytes : 0; }
DLA_API int dla_device_compute_units(const dla_device *dev)
{
    return dev ? (int)dev->info.compute_units : 0;
}
DLA_API int dla_device_host_addressable(const dla_device *dev)
{
    return dev ? dev->info.host_addressable != 0 : 0;
}
DLA_API const char *dla_device_properties(const dla_device *dev)
{
    return dev ? dev->info.properties : "";
}

DLA_API dla_device *dla_device_current(void)
{
    const unsigned gen = atomic_load(&reg_generation);
    if (current_dev && current_gen == gen)
        return current_dev;
    if (default_seen && default_gen == gen)
        return default_seen;
    dla_device *dev = dla_device_default();
    /* The generation read before the default was: a reset in between
     * leaves a stale pair that the next call does not trust. */
    default_seen = dev;
    default_gen = gen;
    return dev;
}

DLA_API void dla_device_set_current(dla_device *dev)
{
    current_dev = dev;
    current_gen = atomic_load(&reg_generation);
}

DLA_API dla_status dla_device_sync(dla_device *dev)
{
    if (!dev)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_device_sync: argument dev: NULL");
    if (!dev->table->sync)
        return DLA_OK;
    dla_clear_error();
    dla_status st = dev->table->sync(dev->ctx);
    if (st != DLA_OK) {
        if (!dla_last_error()[0])
            dla__fail(st, "%s: sync failed", dev->name);
        dla__error_prefix("dla_device_sync");
    }
    return st;
}

/* One device's memory kept for reuse back to the system: after a sync, so
 * that no queued work still uses a freed block (mem_trim's contract). */
static dla_status release_cached(dla_device *dev, size_t *bytes)
{
    *bytes = 0;
    if (!dev->table->mem_trim)
        return DLA_OK;
    dla_clear_error();
    dla_status st = dev->table->sync ? dev->table->sync(dev->ctx) : DLA_OK;
    if (st == DLA_OK)
        st = dev->table->mem_trim(dev->ctx, bytes);
    if (st != DLA_OK) {
        if (!dla_last_error()[0])
            dla__fail(st, "%s: mem_trim failed", dev->name);
        dla__error_prefix("dla_device_release_cached");
    }
    return st;
}

DLA_API dla_status dla_device_release_cached(dla_device *dev, size_t *released)
{
    if (released)
        *released = 0;
    size_t total = 0, bytes;
    if (dev) {
        dla_status st = release_cached(dev, &bytes);
        if (released)
            *released = bytes;
        return st;
    }
    /* Every device opened so far (the others hold nothing). Collected under
     * the lock, released outside it: a sync may take long, and devices live
     * until the library is unloaded. */
    enum { MAX_DEVS = 256 };
    dla_device *open[MAX_DEVS];
    int n = 0;
    pthread_mutex_lock(&reg_lock);
    for (int k = 0; k < reg.plugin_count; k++) {
        struct dla__plugin *p = reg.plugins[k];
        if (p->state != DLA_MANIFEST_LOADED)
            continue;
        for (int i = 0; i < p->device_count && n < MAX_DEVS; i++)
            if (p->devices[i].opened)
                open[n++] = &p->devices[i].dev;
    }
    pthread_mutex_unlock(&reg_lock);
    dla_status first = DLA_OK;
    char why[DLA__REASON_MAX] = "";
    for (int i = 0; i < n; i++) {
        dla_status st = release_cached(open[i], &bytes);
        total += bytes;
        if (st != DLA_OK && first == DLA_OK) {
            first = st;
            snprintf(why, sizeof why, "%s", dla_last_error());
        }
    }
    if (released)
        *released = total;
    /* The others were still released; the first failure is the answer. */
    return first == DLA_OK ? DLA_OK : dla__fail(first, "%s", why);
}

/* ------------------------------------------------------- internal: devices */

dla_device *dla__device_cpu(void)
{
    pthread_mutex_lock(&reg_lock);
    dla_device *dev = NULL;
    if (ensure_ready() == DLA_OK) {
        char why[DLA__REASON_MAX];
        dla_status st;
        dev = resolve_entry("cpu", 3, why, sizeof why, &st);
        if (!dev)
            dla__fail(st, "the cpu plugin (the fallback for every device): %s", why);
    }
    pthread_mutex_unlock(&reg_lock);
    return dev;
}

int dla__device_supports(dla_device *dev, dla_kernel kernel, dla_dtype dtype)
{
    if (!dev || (unsigned)kernel >= DLA_KERNEL_COUNT || dev->abi_minor < dla__kernel_minor(kernel))
        return 0;
    void (*member)(void);
    memcpy(&member, (const char *)dev->table + dla__kernel_member(kernel), sizeof member);
    if (!member)
        return 0;
    return !dev->table->supports || dev->table->supports(dev->ctx, kernel, dtype) != 0;
}

/* ------------------------------------- public: the table (device_table.h) */

DLA_API const dla_plugin *dla_device_table(const dla_device *dev) { return dev ? dev->table : NULL; }

DLA_API void *dla_device_context(const dla_device *dev) { return dev ? dev->ctx : NULL; }

DLA_API int dla_device_index(const dla_device *dev) { return dev ? dev->index : -1; }

DLA_API int dla_device_abi_minor(const dla_device *dev) { return dev ? dev->abi_minor : -1; }

DLA_API int dla_device_runs_natively(const dla_device *dev, dla_kernel kernel, dla_dtype dtype)
{
    return dla__device_supports((dla_device *)dev, kernel, dtype);
}

void dla__registry_reset(void)
{
    pthread_mutex_lock(&reg_lock);
    registry_free();
    atomic_fetch_add(&reg_generation, 1);
    current_dev = NULL;
    dla__log_reset();
    pthread_mutex_unlock(&reg_lock);
}

/* ---------------------------------------------------- public: introspection */

DLA_API const char *dla_manifest_state_name(dla_manifest_state state)
{
    if ((unsigned)state >= DLA_MANIFEST_STATE_COUNT)
        return "unknown";
    return state_names[state];
}

DLA_API int dla_manifest_folder_count(void)
{
    pthread_mutex_lock(&reg_lock);
    int n = ensure_ready() == DLA_OK ? reg.folder_count : 0;
    pthread_mutex_unlock(&reg_lock);
    return n;
}

/* Copies the members of a full-size src that lie within the caller's size. */
static dla_status copy_sized(void *dst, const void *src, size_t full)
{
    size_t size;
    memcpy(&size, dst, sizeof size);
    if (size < sizeof size)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "argument info: struct_size %zu is too small",
                         size);
    if (size > full)
        size = full;
    memcpy((char *)dst + sizeof size, (const char *)src + sizeof size, size - sizeof size);
    return DLA_OK;
}

DLA_API dla_status dla_manifest_folder_get(int i, dla_manifest_folder_info *info)
{
    if (!info)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_manifest_folder_get: argument info: NULL");
    pthread_mutex_lock(&reg_lock);
    dla_status st = ensure_ready();
    if (st == DLA_OK && (i < 0 || i >= reg.folder_count))
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                       "dla_manifest_folder_get: argument i: %d is out of range 0..%d", i,
                       reg.folder_count - 1);
    if (st == DLA_OK) {
        const dla__search_folder *f = &reg.folders[i];
        dla_manifest_folder_info full = {
            .struct_size = sizeof full,
            .path = f->path,
            .origin = f->origin,
            .manifest_count = f->manifest_count,
            .error = f->error,
        };
        st = copy_sized(info, &full, sizeof full);
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

DLA_API int dla_manifest_count(void)
{
    pthread_mutex_lock(&reg_lock);
    int n = ensure_ready() == DLA_OK ? reg.plugin_count : 0;
    pthread_mutex_unlock(&reg_lock);
    return n;
}

static const char *or_empty(const char *s) { return s ? s : ""; }

DLA_API dla_status dla_manifest_get(int i, dla_manifest_info *info)
{
    if (!info)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_manifest_get: argument info: NULL");
    pthread_mutex_lock(&reg_lock);
    dla_status st = ensure_ready();
    if (st == DLA_OK && (i < 0 || i >= reg.plugin_count))
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                       "dla_manifest_get: argument i: %d is out of range 0..%d", i,
                       reg.plugin_count - 1);
    if (st == DLA_OK) {
        const struct dla__plugin *p = reg.plugins[i];
        dla_manifest_info full = {
            .struct_size = sizeof full,
            .path = or_empty(p->m.path),
            .folder = p->folder,
            .plugin = or_empty(p->m.name),
            .library = or_empty(p->m.library),
            .abi_declared = or_empty(p->m.abi),
            .priority = p->m.priority,
            .device_type_count = p->m.device_type_count,
            .device_types = (const char *const *)p->m.device_types,
            .description = or_empty(p->m.description),
            .state = p->state,
            .reason = p->reason,
            .abi_major = p->abi_major,
            .abi_minor = p->abi_minor,
            .device_count = p->device_count,
        };
        st = copy_sized(info, &full, sizeof full);
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

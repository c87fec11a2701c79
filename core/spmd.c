/*
 * spmd.c - the spmd world: which communicator serves it, set up once.
 *
 * Why a plugin: libdlaccel must not link MPI (a program that never runs in
 * parallel should not load it, nor need it installed), so the collectives
 * reach MPI through a communicator plugin (dlaccel/comm_plugin.h) whose
 * manifest sits in the "comm" subfolder of each plugin folder, where the
 * device registry does not look (it lists only *.json files).
 *
 * The plugin is loaded only when a launcher started this process as one of
 * a job (its environment says so: Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's
 * PMIX_RANK, MPICH's PMI_SIZE). Anything else is a world of one, as is a
 * job whose plugin is missing or fails (with a warning: each process then
 * trains alone). DLACCEL_COMM=single forces a world of one.
 */
#define _GNU_SOURCE
#include "core/spmd.h"

#include "core/alloc.h"
#include "core/env_choice.h"
#include "core/error.h"
#include "core/log.h"
#include "core/manifest.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static dla__spmd world;
static pthread_once_t world_once = PTHREAD_ONCE_INIT;
static void *lib_handle;

double dla__spmd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ host table */

static void comm_log(dla_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__logv(level, "comm: ", fmt, ap);
    va_end(ap);
}

static dla_status comm_error(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__failv(status, fmt, ap);
    va_end(ap);
    return status;
}

static void *comm_alloc(size_t size, size_t align)
{
    if (align == 0)
        align = _Alignof(max_align_t);
    if (align & (align - 1))
        return NULL;
    return dla__malloc_aligned(size, align);
}

static void comm_free(void *ptr) { dla__free_aligned(ptr); }

static const dla_plugin_host comm_host = {
    .struct_size = sizeof comm_host,
    .abi_major = DLA_COMM_ABI_MAJOR,
    .abi_minor = DLA_COMM_ABI_MINOR,
    .log = comm_log,
    .error = comm_error,
    .alloc = comm_alloc,
    .free = comm_free,
};

/* ------------------------------------------------------------ discovery */

/* The launcher's word that this process is one of a job, or NULL. */
static const char *launcher_variable(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = secure_getenv(vars[i]);
        if (v && *v)
            return vars[i];
    }
    return NULL;
}

/* Loads the plugin of one manifest; DLA_OK with world.p set, or an error
 * with the reason as the last error. */
static dla_status load_plugin(const dla__manifest *m)
{
    if (m->abi_major != DLA_COMM_ABI_MAJOR)
        return dla__fail(DLA_ERR_PLUGIN, "communicator ABI %s (this library speaks %d.x)", m->abi,
                         DLA_COMM_ABI_MAJOR);
    /* RTLD_GLOBAL: an MPI library may dlopen components of its own that
     * expect its symbols in the global scope (Open MPI builds whose mca_*.so
     * do not link libmpi; Debian's do, and load either way). */
    void *h = dlopen(m->library, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        const char *e = dlerror();
        return dla__fail(DLA_ERR_PLUGIN, "dlopen %s: %s", m->library, e ? e : "unknown error");
    }
    dla_comm_plugin_init_fn init;
    *(void **)&init = dlsym(h, DLA_COMM_PLUGIN_INIT_SYMBOL);
    const dla_comm_plugin *p = NULL;
    dla_status st;
    if (!init)
        st = dla__fail(DLA_ERR_PLUGIN, "%s: no symbol %s", m->library, DLA_COMM_PLUGIN_INIT_SYMBOL);
    else if ((st = init(&comm_host, &p)) != DLA_OK)
        dla__error_prefix("plugin init");
    else if (!p || p->abi_major != DLA_COMM_ABI_MAJOR ||
             p->struct_size < offsetof(dla_comm_plugin, recv) + sizeof p->recv)
        st = dla__fail(DLA_ERR_PLUGIN, "%s: answered no table, another ABI major or a short table",
                       m->library);
    else {
        for (void *const *f = (void *const *)&p->init; f <= (void *const *)&p->recv; f++)
            if (!*f)
                st = dla__fail(DLA_ERR_PLUGIN, "%s: a member of its table is NULL", m->library);
    }
    if (st == DLA_OK) {
        memset(&world.world, 0, sizeof world.world);
        world.world.struct_size = sizeof world.world;
        if ((st = p->init(&world.ctx, &world.world)) != DLA_OK)
            dla__error_prefix("communicator init");
        else if (world.world.size < 1 || world.world.rank < 0 ||
                 world.world.rank >= world.world.size || world.world.local_size < 1 ||
                 world.world.local_rank < 0 || world.world.local_rank >= world.world.local_size) {
            p->finalize(world.ctx);
            st = dla__fail(DLA_ERR_PLUGIN, "communicator init: rank %d of %d (local %d of %d)",
                           world.world.rank, world.world.size, world.world.local_rank,
                           world.world.local_size);
        }
    }
    if (st != DLA_OK) {
        /* A plugin that started MPI may have registered handlers: keep it
         * mapped (as the device registry does for a failed init). */
        if (!p)
            dlclose(h);
        return st;
    }
    world.p = p;
    snprintf(world.backend, sizeof world.backend, "%s", m->name);
    lib_handle = h;
    return DLA_OK;
}

/* The comm manifests of the plugin folders, tried by priority (then path
 * order) until one loads. */
static void discover(const char *why)
{
    dla__search_folder *folders = NULL;
    int nfold = 0;
    if (dla__search_path_build(secure_getenv("DLACCEL_PLUGIN_PATH"), DLACCEL_PLUGINS_DIR,
                               &folders, &nfold) != DLA_OK) {
        dla__log(DLA_LOG_WARN, "spmd: out of memory looking for a communicator plugin");
        return;
    }
    dla__manifest best[8];
    int nbest = 0, seen = 0;
    for (int i = 0; i < nfold; i++) {
        size_t len = strlen(folders[i].path);
        char *sub = dla__malloc(len + 6);
        if (!sub)
            break;
        memcpy(sub, folders[i].path, len);
        memcpy(sub + len, "/comm", 6);
        dla__search_folder f = {.path = sub, .origin = folders[i].origin};
        char **files = NULL;
        int n = 0;
        if (dla__manifest_scan(&f, &files, &n) == DLA_OK) {
            for (int j = 0; j < n && nbest < (int)(sizeof best / sizeof best[0]); j++) {
                char reason[DLA__REASON_MAX];
                seen++;
                if (dla__manifest_read(files[j], sub, &best[nbest], reason, sizeof reason) != DLA_OK) {
                    dla__log(DLA_LOG_WARN, "spmd: manifest %s: %s; skipped", files[j], reason);
                    dla__manifest_clear(&best[nbest]);
                    continue;
                }
                nbest++;
            }
            dla__manifest_paths_free(files, n);
        }
        dla__free(sub);
    }
    dla__search_path_free(folders, nfold);
    /* Highest priority first; a stable order among equals. */
    for (int i = 1; i < nbest; i++)
        for (int j = i; j > 0 && best[j].priority > best[j - 1].priority; j--) {
            dla__manifest t = best[j];
            best[j] = best[j - 1];
            best[j - 1] = t;
        }
    char tried[512] = "";
    size_t used = 0;
    for (int i = 0; i < nbest && !world.p; i++) {
        if (load_plugin(&best[i]) == DLA_OK) {
            dla__log(DLA_LOG_INFO, "spmd: communicator '%s' (%s): rank %d of %d, local %d of %d; %s",
                     best[i].name, world.world.description, world.world.rank, world.world.size,
                     world.world.local_rank, world.world.local_size,
                     world.world.initialized_here ? "MPI started by dlaccel"
                                                  : "MPI started by the program");
        } else {
            dla__log(DLA_LOG_WARN, "spmd: communicator plugin '%s' (%s): %s", best[i].name,
                     best[i].path, dla_last_error());
            if (used < sizeof tried)
                used += (size_t)snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "",
                                         best[i].name);
        }
    }
    for (int i = 0; i < nbest; i++)
        dla__manifest_clear(&best[i]);
    if (!world.p)
        dla__log(DLA_LOG_WARN,
                 "spmd: started by a launcher (%s is set) but %s: this process is a world of one "
                 "(rank 0 of 1); build with MPI (configure --enable-mpi) or set "
                 "DLACCEL_PLUGIN_PATH to the folder that holds comm/mpi.json",
                 why, seen == 0 ? "no communicator plugin was found" : "no communicator plugin loaded");
    dla_clear_error();
}

static void finalize_at_exit(void)
{
    if (!world.p)
        return;
    if (world.broken) {
        /* Finalizing waits for the ranks that are missing: leave without,
         * and let the launcher end the job. */
        dla__log(DLA_LOG_WARN, "spmd: not finalizing MPI: %s", world.broken_why);
        return;
    }
    world.p->finalize(world.ctx);
    world.p = NULL;
}

static void world_setup(void)
{
    world.world.struct_size = sizeof world.world;
    world.world.size = 1;
    world.world.local_size = 1;
    snprintf(world.world.description, sizeof world.world.description, "a world of one");
    static atomic_int warned;
    static const char *const choices[] = {"auto", "single", NULL};
    if (dla__env_choice("DLACCEL_COMM", choices, &warned, dla__log) == 1)
        return;
    const char *why = launcher_variable();
    if (!why)
        return;
    discover(why);
    if (world.p)
        atexit(finalize_at_exit);
}

dla__spmd *dla__spmd_get(void)
{
    pthread_once(&world_once, world_setup);
    return &world;
}

dla_status dla__spmd_check_broken(dla__spmd *w, const char *op)
{
    if (!w->broken)
        return DLA_OK;
    return dla__fail(DLA_ERR_STATE, "%s: the spmd world is broken since an earlier collective: %s",
                     op, w->broken_why);
}

void dla__spmd_break(dla__spmd *w)
{
    if (!w->broken)
        snprintf(w->broken_why, sizeof w->broken_why, "%s", dla_last_error());
    w->broken = 1;
}

/* ------------------------------------------------------------ public */

DLA_API int dla_spmd_rank(void) { return dla__spmd_get()->world.rank; }
DLA_API int dla_spmd_size(void) { return dla__spmd_get()->world.size; }
DLA_API int dla_spmd_local_rank(void) { return dla__spmd_get()->world.local_rank; }
DLA_API int dla_spmd_local_size(void) { return dla__spmd_get()->world.local_size; }

DLA_API const char *dla_spmd_backend(void)
{
    dla__spmd *w = dla__spmd_get();
    return w->p ? w->backend : "single";
}

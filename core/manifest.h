/*
 * manifest.h - where plugin manifests are looked for and what one says.
 *
 * Phase 1 of plugin loading: the registry builds the search path, lists the
 * *.json files of each folder in name order and reads each one into a
 * dla__manifest. Nothing here loads a library; every problem comes back as
 * a reason naming the field, for the registry to log and remember.
 */
#ifndef DLA_CORE_MANIFEST_H
#define DLA_CORE_MANIFEST_H

#include <dlaccel.h>
#include <stddef.h>

/* The manifest format this library reads: same major, any minor. */
#define DLA__MANIFEST_FORMAT_MAJOR 1

/* Longest plugin name; leaves room for ":index" in a 64-byte device name. */
#define DLA__PLUGIN_NAME_MAX 47

/* Room for a reason string ("field 'plugin.name': missing"). */
#define DLA__REASON_MAX 512
/* Devices one plugin may offer (device_count's answer); past it the
 * plugin is skipped (plugin.h, device_count). */
#define DLA__PLUGIN_DEVICES_MAX 1024

/* A folder of the search path. */
typedef struct dla__search_folder {
    char *path;
    const char *origin;   /* static: "DLACCEL_PLUGIN_PATH" or "installed" */
    int manifest_count;   /* *.json files listed; -1 when unreadable */
    char error[128];      /* why it could not be read; "" otherwise */
} dla__search_folder;

/* The folders of env_path (DLACCEL_PLUGIN_PATH's value, may be NULL; empty
 * components are skipped) in order, then installed (DLACCEL_PLUGINS_DIR).
 * *folders is freed with dla__search_path_free. DLA_ERR_OUT_OF_MEMORY. */
dla_status dla__search_path_build(const char *env_path, const char *installed,
                                  dla__search_folder **folders, int *count);
void dla__search_path_free(dla__search_folder *folders, int count);

/* The full paths of the *.json regular files in folder->path, sorted by
 * file name (byte order, so the order does not depend on the locale). Sets
 * folder->manifest_count and folder->error. An unreadable folder is not an
 * error: it yields no files. DLA_ERR_OUT_OF_MEMORY. */
dla_status dla__manifest_scan(dla__search_folder *folder, char ***paths, int *count);
void dla__manifest_paths_free(char **paths, int count);

/* What a manifest says. Strings are owned (dla__malloc); a field that could
 * not be read is NULL. */
typedef struct dla__manifest {
    char *path;        /* as found: folder/file.json */
    char *real_path;   /* realpath(path); identifies the file */
    char *name;        /* plugin.name */
    char *library;     /* plugin.library_path, resolved against the folder (made absolute) */
    char *abi;         /* plugin.abi_version as written ("1.0") */
    int abi_major, abi_minor;
    char **device_types; /* plugin.device_types; optional, default none */
    int device_type_count;
    int priority;        /* plugin.priority; optional, default 0 */
    /* plugin.priority_by_type; optional: a device whose type is one of
     * these ranks with the number beside it instead of priority. */
    char **type_priority_types;
    int *type_priority_values;
    int type_priority_count;
    char *description;   /* plugin.description; optional, default "" */
} dla__manifest;

/* Reads the manifest at path (found in folder) into *m, which is zeroed
 * first. DLA_OK when every field is well formed; DLA_ERR_PLUGIN with reason
 * naming the field and the problem otherwise (the fields read before the
 * problem stay in *m, so the name can be shown); DLA_ERR_OUT_OF_MEMORY.
 * Either way *m is released with dla__manifest_clear. The declared ABI is
 * only parsed here: whether it suits this host is the registry's call. */
dla_status dla__manifest_read(const char *path, const char *folder, dla__manifest *m,
                              char *reason, size_t reason_size);
void dla__manifest_clear(dla__manifest *m);

#endif

/*
 * manifest.c - the plugin search path and the manifest file format.
 *
 * Reading is strict so that a typo is reported where it is, not discovered
 * later as a plugin that mysteriously fails to load: every field is checked
 * for presence, type and form, and the first problem becomes the reason,
 * naming the field. Unknown fields are ignored so that a newer minor of the
 * format still reads. All memory, Jansson's included, goes through the hook.
 */
#define _GNU_SOURCE
#include "core/manifest.h"

#include "core/alloc.h"
#include "core/json_read.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ search path */

static dla_status folder_add(dla__search_folder **folders, int *count, int *cap,
                             const char *path, size_t len, const char *origin)
{
    if (*count == *cap) {
        int ncap = *cap ? *cap * 2 : 4;
        dla__search_folder *n = dla__realloc(*folders, (size_t)ncap * sizeof *n);
        if (!n)
            return DLA_ERR_OUT_OF_MEMORY;
        *folders = n;
        *cap = ncap;
    }
    dla__search_folder *f = &(*folders)[*count];
    memset(f, 0, sizeof *f);
    f->path = dla__malloc(len + 1);
    if (!f->path)
        return DLA_ERR_OUT_OF_MEMORY;
    memcpy(f->path, path, len);
    f->path[len] = '\0';
    f->origin = origin;
    f->manifest_count = -1;
    (*count)++;
    return DLA_OK;
}

dla_status dla__search_path_build(const char *env_path, const char *installed,
                                  dla__search_folder **folders, int *count)
{
    dla__search_folder *list = NULL;
    int n = 0, cap = 0;
    dla_status st = DLA_OK;
    for (const char *p = env_path; p && *p && st == DLA_OK;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0)
            st = folder_add(&list, &n, &cap, p, len, "DLACCEL_PLUGIN_PATH");
        p = end ? end + 1 : p + len;
    }
    if (st == DLA_OK && installed && *installed)
        st = folder_add(&list, &n, &cap, installed, strlen(installed), "installed");
    if (st != DLA_OK) {
        dla__search_path_free(list, n);
        return st;
    }
    *folders = list;
    *count = n;
    return DLA_OK;
}

void dla__search_path_free(dla__search_folder *folders, int count)
{
    for (int i = 0; i < count; i++)
        dla__free(folders[i].path);
    dla__free(folders);
}

/* ------------------------------------------------------------ folder scan */

static int has_json_suffix(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".json") == 0;
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *path_join(const char *folder, const char *name)
{
    size_t a = strlen(folder), b = strlen(name);
    int slash = a > 0 && folder[a - 1] != '/';
    char *s = dla__malloc(a + (size_t)slash + b + 1);
    if (!s)
        return NULL;
    memcpy(s, folder, a);
    if (slash)
        s[a] = '/';
    memcpy(s + a + slash, name, b + 1);
    return s;
}

void dla__manifest_paths_free(char **paths, int count)
{
    for (int i = 0; i < count; i++)
        dla__free(paths[i]);
    dla__free(paths);
}

dla_status dla__manifest_scan(dla__search_folder *folder, char ***paths, int *count)
{
    *paths = NULL;
    *count = 0;
    folder->manifest_count = -1;
    folder->error[0] = '\0';
    DIR *dir = opendir(folder->path);
    if (!dir) {
        char buf[128];
        snprintf(folder->error, sizeof folder->error, "%s", strerror_r(errno, buf, sizeof buf));
        return DLA_OK;
    }
    char **list = NULL;
    int n = 0, cap = 0;
    dla_status st = DLA_OK;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (!has_json_suffix(e->d_name))
            continue;
        char *full = path_join(folder->path, e->d_name);
        if (!full) {
            st = DLA_ERR_OUT_OF_MEMORY;
            break;
        }
        /* stat follows symlinks: a link to a manifest counts, a folder named
         * x.json does not. */
        struct stat sb;
        if (stat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            dla__free(full);
            continue;
        }
        if (n == cap) {
            int ncap = cap ? cap * 2 : 8;
            char **grown = dla__realloc(list, (size_t)ncap * sizeof *grown);
            if (!grown) {
                dla__free(full);
                st = DLA_ERR_OUT_OF_MEMORY;
                break;
            }
            list = grown;
            cap = ncap;
        }
        list[n++] = full;
    }
    closedir(dir);
    if (st != DLA_OK) {
        dla__manifest_paths_free(list, n);
        return st;
    }
    /* Same folder prefix everywhere, so this is the order of the names. */
    if (n > 1)
        qsort(list, (size_t)n, sizeof *list, compare_paths);
    folder->manifest_count = n;
    *paths = list;
    *count = n;
    return DLA_OK;
}

/* ---------------------------------------------------------------- reading */

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "an unknown value";
}

/* Exactly `parts` dot-separated decimal numbers, nothing else. */
static int parse_version(const char *s, int parts, unsigned *out)
{
    for (int i = 0; i < parts; i++) {
        unsigned v = 0;
        int digits = 0;
        while (*s >= '0' && *s <= '9') {
            if (++digits > 9)
                return 0;
            v = v * 10 + (unsigned)(*s++ - '0');
        }
        if (digits == 0)
            return 0;
        out[i] = v;
        if (i + 1 < parts && *s++ != '.')
            return 0;
    }
    return *s == '\0';
}

static int valid_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

/* Writes "field 'f': <what>" into reason and returns DLA_ERR_PLUGIN. */
static dla_status field_problem(char *reason, size_t size, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static dla_status field_problem(char *reason, size_t size, const char *field, const char *fmt, ...)
{
    int n = snprintf(reason, size, "field '%s': ", field);
    if (n >= 0 && (size_t)n < size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason + n, size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return DLA_ERR_PLUGIN;
}

/* A required (or, when absent is allowed, optional) string member. */
static dla_status get_string(const json_t *obj, const char *key, const char *field, int required,
                             const char **out, char *reason, size_t size)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v)
        return required ? field_problem(reason, size, field, "missing") : DLA_OK;
    if (!json_is_string(v))
        return field_problem(reason, size, field, "expected a string, found %s", json_type_name(v));
    *out = json_string_value(v);
    return DLA_OK;
}

static dla_status dup_into(char **dst, const char *src)
{
    *dst = dla__strdup(src);
    return *dst ? DLA_OK : DLA_ERR_OUT_OF_MEMORY;
}

static dla_status read_format_version(const json_t *root, char *reason, size_t size)
{
    const char *s;
    dla_status st = get_string(root, "file_format_version", "file_format_version", 1, &s, reason, size);
    if (st != DLA_OK)
        return st;
    unsigned v[3];
    if (!parse_version(s, 3, v))
        return field_problem(reason, size, "file_format_version",
                             "\"%s\" is not of the form \"major.minor.patch\"", s);
    if (v[0] != DLA__MANIFEST_FORMAT_MAJOR)
        return field_problem(reason, size, "file_format_version",
                             "major version %u is unknown (this library reads %d.x.x)", v[0],
                             DLA__MANIFEST_FORMAT_MAJOR);
    return DLA_OK;
}

static dla_status read_library(const json_t *plugin, const char *folder, dla__manifest *m,
                               char *reason, size_t size)
{
    const char *s;
    dla_status st = get_string(plugin, "library_path", "plugin.library_path", 1, &s, reason, size);
    if (st != DLA_OK)
        return st;
    if (!*s)
        return field_problem(reason, size, "plugin.library_path", "empty");
    m->library = s[0] == '/' ? dla__strdup(s) : path_join(folder, s);
    return m->library ? DLA_OK : DLA_ERR_OUT_OF_MEMORY;
}

static dla_status read_abi(const json_t *plugin, dla__manifest *m, char *reason, size_t size)
{
    const char *s;
    dla_status st = get_string(plugin, "abi_version", "plugin.abi_version", 1, &s, reason, size);
    if (st != DLA_OK)
        return st;
    unsigned v[2];
    if (!parse_version(s, 2, v) || v[0] > INT_MAX || v[1] > INT_MAX)
        return field_problem(reason, size, "plugin.abi_version",
                             "\"%s\" is not of the form \"major.minor\"", s);
    m->abi_major = (int)v[0];
    m->abi_minor = (int)v[1];
    return dup_into(&m->abi, s);
}

static dla_status read_device_types(const json_t *plugin, dla__manifest *m, char *reason,
                                    size_t size)
{
    const json_t *arr = json_object_get(plugin, "device_types");
    if (!arr)
        return DLA_OK;
    if (!json_is_array(arr))
        return field_problem(reason, size, "plugin.device_types",
                             "expected an array of strings, found %s", json_type_name(arr));
    size_t n = json_array_size(arr);
    if (n > 64)
        return field_problem(reason, size, "plugin.device_types", "%zu entries (at most 64)", n);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, i);
        char field[48];
        snprintf(field, sizeof field, "plugin.device_types[%zu]", i);
        if (!json_is_string(v))
            return field_problem(reason, size, field, "expected a string, found %s",
                                 json_type_name(v));
        if (!*json_string_value(v))
            return field_problem(reason, size, field, "empty");
    }
    if (n == 0)
        return DLA_OK;
    m->device_types = dla__calloc(n, sizeof *m->device_types);
    if (!m->device_types)
        return DLA_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) {
        if (dup_into(&m->device_types[i], json_string_value(json_array_get(arr, i))) != DLA_OK)
            return DLA_ERR_OUT_OF_MEMORY;
        m->device_type_count = (int)i + 1;
    }
    return DLA_OK;
}

/* plugin.priority_by_type: {"gpu": 150, "cpu": 50}, types as device_info
 * names them, integer priorities. */
static dla_status read_priority_by_type(const json_t *plugin, dla__manifest *m, char *reason,
                                        size_t size)
{
    const json_t *obj = json_object_get(plugin, "priority_by_type");
    if (!obj)
        return DLA_OK;
    if (!json_is_object(obj))
        return field_problem(reason, size, "plugin.priority_by_type",
                             "expected an object of integers by device type, found %s",
                             json_type_name(obj));
    size_t n = json_object_size(obj);
    if (n > 64)
        return field_problem(reason, size, "plugin.priority_by_type", "%zu entries (at most 64)", n);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        char field[96];
        snprintf(field, sizeof field, "plugin.priority_by_type.%.40s", key);
        if (!*key)
            return field_problem(reason, size, "plugin.priority_by_type", "an empty device type");
        if (!json_is_integer(v))
            return field_problem(reason, size, field, "expected an integer, found %s",
                                 json_type_name(v));
        json_int_t p = json_integer_value(v);
        if (p < INT_MIN || p > INT_MAX)
            return field_problem(reason, size, field, "%lld is out of range", (long long)p);
    }
    if (n == 0)
        return DLA_OK;
    m->type_priority_types = dla__calloc(n, sizeof *m->type_priority_types);
    m->type_priority_values = dla__calloc(n, sizeof *m->type_priority_values);
    if (!m->type_priority_types || !m->type_priority_values)
        return DLA_ERR_OUT_OF_MEMORY;
    json_object_foreach((json_t *)obj, key, v) {
        int i = m->type_priority_count;
        if (dup_into(&m->type_priority_types[i], key) != DLA_OK)
            return DLA_ERR_OUT_OF_MEMORY;
        m->type_priority_values[i] = (int)json_integer_value(v);
        m->type_priority_count = i + 1;
    }
    return DLA_OK;
}

static dla_status read_plugin(const json_t *plugin, const char *folder, dla__manifest *m,
                              char *reason, size_t size)
{
    const char *s;
    dla_status st = get_string(plugin, "name", "plugin.name", 1, &s, reason, size);
    if (st != DLA_OK)
        return st;
    if (!valid_name(s))
        return field_problem(reason, size, "plugin.name",
                             "\"%s\" must be made of [a-z0-9_-] and not be empty", s);
    if (strlen(s) > DLA__PLUGIN_NAME_MAX)
        return field_problem(reason, size, "plugin.name", "\"%s\" is longer than %d characters",
                             s, DLA__PLUGIN_NAME_MAX);
    if ((st = dup_into(&m->name, s)) != DLA_OK)
        return st;
    if ((st = read_library(plugin, folder, m, reason, size)) != DLA_OK)
        return st;
    if ((st = read_abi(plugin, m, reason, size)) != DLA_OK)
        return st;
    if ((st = read_device_types(plugin, m, reason, size)) != DLA_OK)
        return st;

    const json_t *prio = json_object_get(plugin, "priority");
    if (prio) {
        if (!json_is_integer(prio))
            return field_problem(reason, size, "plugin.priority", "expected an integer, found %s",
                                 json_type_name(prio));
        json_int_t p = json_integer_value(prio);
        if (p < INT_MIN || p > INT_MAX)
            return field_problem(reason, size, "plugin.priority", "%lld is out of range",
                                 (long long)p);
        m->priority = (int)p;
    }
    if ((st = read_priority_by_type(plugin, m, reason, size)) != DLA_OK)
        return st;
    if ((st = get_string(plugin, "description", "plugin.description", 0, &s, reason, size)) != DLA_OK)
        return st;
    return dup_into(&m->description, s ? s : "");
}

/* Manifests are a few hundred bytes; a file past this is not one. */
#define MANIFEST_MAX_BYTES (1 << 20)

/* Read whole, then parsed by core/json_read.c rather than json_loadf:
 * Jansson's parser misreads and overruns its buffers when an allocation
 * is refused (docs/hardening.md), and a manifest read short of memory
 * must neither crash nor look invalid. */
static dla_status read_file(const char *path, json_t **root, char *reason, size_t size)
{
    *root = NULL;
    FILE *f = fopen(path, "re"); /* e: not inherited across exec */
    if (!f) {
        char buf[128];
        snprintf(reason, size, "cannot read the file: %s", strerror_r(errno, buf, sizeof buf));
        return DLA_ERR_PLUGIN;
    }
    char *text = dla__malloc(MANIFEST_MAX_BYTES + 1);
    if (!text) {
        fclose(f);
        return DLA_ERR_OUT_OF_MEMORY;
    }
    size_t len = fread(text, 1, MANIFEST_MAX_BYTES + 1, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || len > MANIFEST_MAX_BYTES) {
        snprintf(reason, size, failed ? "cannot read the file" : "larger than %d bytes: not a manifest",
                 MANIFEST_MAX_BYTES);
        dla__free(text);
        return DLA_ERR_PLUGIN;
    }
    /* A UTF-8 byte order mark, which some editors write and none shows,
     * is passed over as RFC 8259 allows: read as text it was "invalid
     * JSON at line 1, column 1: a value expected", in a file that looks
     * right. Lines and columns count from after it, as an editor does. */
    const char *json = text;
    if (len >= 3 && memcmp(json, "\xEF\xBB\xBF", 3) == 0)
        json += 3, len -= 3;
    char why[160];
    size_t at = 0;
    dla_status st = dla__json_read(json, len, root, why, sizeof why, &at);
    if (st == DLA_ERR_IO) {
        /* Line and column, 1-based, as a user's editor shows them. */
        int line = 1, column = 1;
        for (size_t i = 0; i < at && i < len; i++, column++)
            if (json[i] == '\n')
                line++, column = 0;
        snprintf(reason, size, "invalid JSON at line %d, column %d: %s", line, column, why);
        st = DLA_ERR_PLUGIN;
    }
    dla__free(text);
    return st;
}

dla_status dla__manifest_read(const char *path, const char *folder, dla__manifest *m,
                              char *reason, size_t reason_size)
{
    memset(m, 0, sizeof *m);
    reason[0] = '\0';
    char real[PATH_MAX];
    dla_status st = dup_into(&m->path, path);
    if (st == DLA_OK)
        st = dup_into(&m->real_path, realpath(path, real) ? real : path);
    if (st != DLA_OK)
        return st;

    json_t *root;
    if ((st = read_file(path, &root, reason, reason_size)) != DLA_OK)
        return st;
    if (!json_is_object(root)) {
        snprintf(reason, reason_size, "top level: expected an object, found %s",
                 json_type_name(root));
        st = DLA_ERR_PLUGIN;
    }
    if (st == DLA_OK)
        st = read_format_version(root, reason, reason_size);
    const json_t *plugin = st == DLA_OK ? json_object_get(root, "plugin") : NULL;
    if (st == DLA_OK && !plugin)
        st = field_problem(reason, reason_size, "plugin", "missing");
    else if (st == DLA_OK && !json_is_object(plugin))
        st = field_problem(reason, reason_size, "plugin", "expected an object, found %s",
                           json_type_name(plugin));
    /* A relative library path is joined to the folder made absolute now:
     * the library is loaded later, when a device is needed, and a folder
     * of DLACCEL_PLUGIN_PATH given relative ("plugins.d") would then be
     * taken from whatever the working directory has become. */
    char real_folder[PATH_MAX];
    if (st == DLA_OK)
        st = read_plugin(plugin, realpath(folder, real_folder) ? real_folder : folder, m, reason,
                         reason_size);
    json_decref(root);
    return st;
}

void dla__manifest_clear(dla__manifest *m)
{
    dla__free(m->path);
    dla__free(m->real_path);
    dla__free(m->name);
    dla__free(m->library);
    dla__free(m->abi);
    for (int i = 0; i < m->device_type_count; i++)
        dla__free(m->device_types[i]);
    dla__free(m->device_types);
    for (int i = 0; i < m->type_priority_count; i++)
        dla__free(m->type_priority_types[i]);
    dla__free(m->type_priority_types);
    dla__free(m->type_priority_values);
    dla__free(m->description);
    memset(m, 0, sizeof *m);
}

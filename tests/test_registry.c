/*
 * test_registry.c - plugin discovery, loading and selection (DESIGN 6).
 *
 * Each test writes manifests into its own mkdtemp folder, points
 * DLACCEL_PLUGIN_PATH at it, resets the registry and checks two things: what
 * the introspection API says (state and reason), and the log line a user
 * running with DLACCEL_LOG=debug would read. Broken cases always sit beside
 * a good plugin that must still load. The fake plugins are built from
 * tests/plugins/ as uninstalled libtool modules.
 */
#define _GNU_SOURCE
#include "core/registry.h"

#include <dlaccel/device_table.h>

#include <dlaccel.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#ifndef DLACCEL_PLUGINS_DIR
#error "the test build defines DLACCEL_PLUGINS_DIR as its own installed folder"
#endif

static char dir[PATH_MAX];  /* this test's DLACCEL_PLUGIN_PATH folder */
static char dir2[PATH_MAX]; /* a second one, for tests that need two */

/* ------------------------------------------------------------- helpers */

/* snprintf whose truncation is fine (paths here are short). */
static char *strf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static char *strf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return buf;
}

static const char *builddir(void)
{
    const char *b = getenv("DLA_TEST_BUILDDIR");
    return b && *b ? b : DLA_TEST_BUILDDIR_DEFAULT;
}

/* The built fake plugin tests/plugins/<name>.la as a shared object. */
static const char *fake(const char *name)
{
    static char ring[4][PATH_MAX];
    static int next;
    char *s = ring[next++ % 4];
    strf(s, PATH_MAX, "%s/tests/plugins/.libs/%s.so", builddir(), name);
    return s;
}

/* A copy of fake(name) at folder/as: another file, loaded apart, for a
 * test that needs two plugins of one kind (one library serves one). */
static const char *fake_copy(const char *folder, const char *name, const char *as)
{
    static char ring[4][PATH_MAX];
    static int next;
    char *s = ring[next++ % 4];
    strf(s, PATH_MAX, "%s/%s", folder, as);
    FILE *in = fopen(fake(name), "rb"), *out = fopen(s, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[1 << 14];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
    return s;
}

static void write_file(const char *folder, const char *file, const char *text)
{
    char path[PATH_MAX];
    strf(path, sizeof path, "%s/%s", folder, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* A well-formed manifest for plugin name in library lib. */
static void plugin_manifest(const char *folder, const char *file, const char *name,
                            const char *lib, const char *abi, int priority)
{
    char text[2 * PATH_MAX];
    strf(text, sizeof text,
             "{\"file_format_version\": \"1.0.0\",\n"
             " \"plugin\": {\"name\": \"%s\", \"library_path\": \"%s\",\n"
             "            \"abi_version\": \"%s\", \"device_types\": [\"test\"],\n"
             "            \"priority\": %d, \"description\": \"fake %s\"}}\n",
             name, lib, abi, priority, name);
    write_file(folder, file, text);
}

static void good_manifest(const char *folder)
{
    plugin_manifest(folder, "good.json", "good", fake("fake_good"), "1.0", 5);
}

static char *path_in(const char *folder, const char *file)
{
    static char ring[4][PATH_MAX];
    static int next;
    char *s = ring[next++ % 4];
    strf(s, PATH_MAX, "%s/%s", folder, file);
    return s;
}

/* The manifest found at path; fails the test when there is none. */
static dla_manifest_info manifest_at(const char *path)
{
    dla_manifest_info info = {.struct_size = sizeof info};
    int n = dla_manifest_count();
    for (int i = 0; i < n; i++) {
        assert_int_equal(dla_manifest_get(i, &info), DLA_OK);
        if (strcmp(info.path, path) == 0)
            return info;
    }
    fail_msg("no manifest %s among %d", path, n);
    return info;
}

#define assert_contains(text, needle)                                          \
    do {                                                                       \
        const char *t_ = (text), *n_ = (needle);                               \
        if (!strstr(t_, n_))                                                   \
            fail_msg("\"%s\" not found in:\n%s", n_, t_);                      \
    } while (0)

#define assert_state(where, st)                                                \
    do {                                                                       \
        dla_manifest_info i_ = manifest_at(where);                             \
        if (i_.state != (st))                                                  \
            fail_msg("%s: state %s (%s), expected %s", i_.path,                \
                     dla_manifest_state_name(i_.state), i_.reason,             \
                     dla_manifest_state_name(st));                             \
    } while (0)

/* The good plugin of the folder still loads and gives its device. */
static void assert_good_still_loads(void)
{
    dla_device *dev = dla_device_get("good");
    if (!dev)
        fail_msg("good plugin did not load: %s", dla_last_error());
    assert_string_equal(dla_device_name(dev), "good:0");
    assert_state(path_in(dir, "good.json"), DLA_MANIFEST_LOADED);
}

/* Log capture: stderr goes to a file while the registry works. */
static int saved_stderr = -1;
static FILE *capture_file;
static char captured[1 << 16];

static void capture_begin(void)
{
    fflush(stderr);
    capture_file = tmpfile();
    assert_non_null(capture_file);
    saved_stderr = dup(2);
    assert_true(saved_stderr >= 0);
    assert_true(dup2(fileno(capture_file), 2) >= 0);
}

/* Restores stderr, echoes what was logged (for the test log) and returns it. */
static const char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    saved_stderr = -1;
    rewind(capture_file);
    size_t n = fread(captured, 1, sizeof captured - 1, capture_file);
    captured[n] = '\0';
    fclose(capture_file);
    fputs(captured, stderr);
    return captured;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void remove_tree(const char *path)
{
    if (path[0])
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int setup(void **state)
{
    strf(dir, sizeof dir, "/tmp/dla-registry-XXXXXX");
    strf(dir2, sizeof dir2, "/tmp/dla-registry-XXXXXX");
    if (!mkdtemp(dir) || !mkdtemp(dir2))
        return -1;
    setenv("DLACCEL_PLUGIN_PATH", dir, 1);
    setenv("DLACCEL_LOG", "debug", 1);
    unsetenv("DLACCEL_DEVICE");
    unsetenv("DLACCEL_PLUGINS_DISABLE");
    unsetenv("DLACCEL_INSTALLED_PLUGINS");
    remove_tree(DLACCEL_PLUGINS_DIR);
    dla__registry_reset();
    dla_clear_error();
    return 0;
}

static int teardown(void **state)
{
    if (saved_stderr >= 0)
        capture_end();
    dla__registry_reset();
    remove_tree(dir);
    remove_tree(dir2);
    remove_tree(DLACCEL_PLUGINS_DIR);
    unsetenv("DLACCEL_DEVICE");
    unsetenv("DLACCEL_PLUGINS_DISABLE");
    unsetenv("DLACCEL_INSTALLED_PLUGINS");
    return 0;
}

/* ------------------------------------------------------- a good plugin */

static void good_plugin_is_read_first_and_loaded_only_when_needed(void **state)
{
    good_manifest(dir);
    capture_begin();
    int n = dla_manifest_count();
    dla_manifest_info before = manifest_at(path_in(dir, "good.json"));
    const char *log1 = strdup(capture_end());

    assert_int_equal(n, 1);
    assert_int_equal(before.state, DLA_MANIFEST_FOUND);
    assert_int_equal(before.abi_major, -1);
    assert_int_equal(before.device_count, -1);
    assert_string_equal(before.plugin, "good");
    assert_string_equal(before.abi_declared, "1.0");
    assert_int_equal(before.priority, 5);
    assert_int_equal(before.device_type_count, 1);
    assert_string_equal(before.device_types[0], "test");
    assert_string_equal(before.description, "fake good");
    assert_contains(log1, "dlaccel[debug]: manifest ");
    assert_contains(log1, "good.json: plugin 'good', library ");
    assert_null(strstr(log1, "dlopen"));
    free((void *)log1);

    capture_begin();
    dla_device *dev = dla_device_default();
    const char *log = capture_end();
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "good:0");
    assert_string_equal(dla_device_plugin(dev), "good");
    assert_string_equal(dla_device_description(dev), "fake test device");
    assert_string_equal(dla_device_type(dev), "test");
    assert_int_equal(dla_device_memory(dev), 1u << 20);
    assert_int_equal(dla_device_compute_units(dev), 3);
    assert_int_equal(dla_device_host_addressable(dev), 1);
    assert_string_equal(dla_device_properties(dev), "fake=yes; queue=none");
    dla_manifest_info after = manifest_at(path_in(dir, "good.json"));
    assert_int_equal(after.state, DLA_MANIFEST_LOADED);
    assert_int_equal(after.abi_major, DLA_PLUGIN_ABI_MAJOR);
    assert_int_equal(after.abi_minor, DLA_PLUGIN_ABI_MINOR);
    assert_int_equal(after.device_count, 1);
    assert_contains(log, "dlaccel[debug]: plugin 'good': dlopen ");
    /* The plugin's own line carries its name. */
    assert_contains(log, "dlaccel[debug]: good: fake_good init, host ABI 1.");
    assert_contains(log, "dlaccel[info]: default device good:0: highest priority (5)");
    assert_string_equal(dla_device_default_reason(), "highest priority (5)");
}

static size_t hook_allocs, hook_frees;

static void *counting_alloc(void *user, void *ptr, size_t size)
{
    if (size == 0) {
        hook_frees += ptr != NULL;
        free(ptr);
        return NULL;
    }
    hook_allocs += ptr == NULL;
    return realloc(ptr, size);
}

static void plugin_and_manifest_memory_go_through_the_users_allocator(void **state)
{
    good_manifest(dir);
    dla_set_allocator(counting_alloc, NULL);
    hook_allocs = hook_frees = 0;
    assert_int_equal(dla_manifest_count(), 1);
    /* Jansson parsed the manifest through the hook too. */
    assert_true(hook_allocs > 5);

    dla_device *dev = dla_device_get("good");
    assert_non_null(dev);
    size_t allocs = hook_allocs, frees = hook_frees;
    dla_mem mem = NULL;
    assert_int_equal(dla_device_table(dev)->mem_alloc(dla_device_context(dev), 256, &mem), DLA_OK);
    assert_int_equal(hook_allocs, allocs + 1);
    assert_true(((uintptr_t)mem & 63) == 0);
    const char msg[] = "through the host table";
    char back[sizeof msg];
    assert_int_equal(
        dla_device_table(dev)->copy_to_device(dla_device_context(dev), mem, 8, msg, sizeof msg),
        DLA_OK);
    assert_int_equal(
        dla_device_table(dev)->copy_to_host(dla_device_context(dev), back, mem, 8, sizeof msg),
        DLA_OK);
    assert_string_equal(back, msg);
    dla_device_table(dev)->mem_free(dla_device_context(dev), mem);
    assert_int_equal(hook_frees, frees + 1);

    dla__registry_reset();
    /* Everything the registry took, it gave back. */
    assert_int_equal(hook_allocs, hook_frees);
    dla_set_allocator(NULL, NULL);
}

static long alloc_number, fail_number;

/* Refuses the fail_number-th allocation; counts the rest like counting_alloc. */
static void *failing_alloc(void *user, void *ptr, size_t size)
{
    if (size == 0)
        return counting_alloc(user, ptr, size);
    if (++alloc_number == fail_number)
        return NULL;
    return counting_alloc(user, ptr, size);
}

static void every_refused_allocation_is_an_error_then_forgotten(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "broken.json", "broken", fake("fake_initfail"), "1.0", 9);
    long n;
    for (n = 1;; n++) {
        dla_set_allocator(failing_alloc, NULL);
        alloc_number = 0;
        fail_number = n;
        hook_allocs = hook_frees = 0;
        dla_device *dev = dla_device_default();
        int refused = alloc_number >= n;
        if (!dev) {
            if (!refused || dla_last_status() != DLA_ERR_OUT_OF_MEMORY)
                fail_msg("allocation %ld refused: %s (%s)", n, dla_status_str(dla_last_status()),
                         dla_last_error());
            /* Out of memory is not remembered: the next call succeeds. */
            fail_number = 0;
            dev = dla_device_default();
            if (!dev)
                fail_msg("after refusing allocation %ld: %s", n, dla_last_error());
        }
        assert_string_equal(dla_device_name(dev), "good:0");
        dla__registry_reset();
        assert_int_equal(hook_allocs, hook_frees);
        dla_set_allocator(NULL, NULL);
        if (!refused)
            break; /* every allocation of the workflow was refused once */
    }
    assert_true(n > 10);
}

static void device_supports_needs_the_member_and_the_plugins_yes(void **state)
{
    good_manifest(dir);
    dla_device *dev = dla_device_get("good");
    assert_non_null(dev);
    assert_int_equal(dla__device_supports(dev, DLA_KERNEL_FILL, DLA_F32), 1);
    assert_int_equal(dla__device_supports(dev, DLA_KERNEL_FILL, DLA_F64), 0);
    /* No gemm member: never supported, whatever supports() would say. */
    assert_int_equal(dla__device_supports(dev, DLA_KERNEL_GEMM, DLA_F32), 0);
    assert_int_equal(dla__device_supports(dev, DLA_KERNEL_COUNT, DLA_F32), 0);
}

static void table_past_the_plugins_struct_size_reads_as_null(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "short.json", "short", fake("fake_short"), "1.0", 1);
    dla_device *dev = dla_device_get("short");
    if (!dev)
        fail_msg("short plugin did not load: %s", dla_last_error());
    /* fake_short wrote 0xA5 over everything past its size. */
    assert_int_equal(dla_device_table(dev)->struct_size,
                     offsetof(dla_plugin, copy_to_host) +
                         sizeof dla_device_table(dev)->copy_to_host);
    assert_null(dla_device_table(dev)->sync);
    assert_null(dla_device_table(dev)->supports);
    assert_null(dla_device_table(dev)->fill);
    assert_null(dla_device_table(dev)->cast);
    assert_null(dla_device_table(dev)->device_close);
    assert_int_equal(dla__device_supports(dev, DLA_KERNEL_FILL, DLA_F32), 0);
    assert_int_equal(dla_device_sync(dev), DLA_OK);
    assert_good_still_loads();
}

/* ------------------------------------------------------- bad manifests */

static void invalid_json_is_skipped_naming_line_and_column(void **state)
{
    good_manifest(dir);
    write_file(dir, "a_broken.json",
               "{\"file_format_version\": \"1.0.0\",\n \"plugin\": {\"name\": \"x\",, }}\n");
    capture_begin();
    int n = dla_device_count();
    const char *log = capture_end();
    assert_int_equal(n, 1);
    dla_manifest_info info = manifest_at(path_in(dir, "a_broken.json"));
    assert_int_equal(info.state, DLA_MANIFEST_INVALID);
    assert_contains(info.reason, "invalid JSON at line 2, column");
    char line[PATH_MAX + 64];
    strf(line, sizeof line, "dlaccel[warn]: manifest %s: invalid JSON at line 2",
             path_in(dir, "a_broken.json"));
    assert_contains(log, line);
    assert_contains(log, "manifest skipped");
    assert_good_still_loads();
}

/* A UTF-8 byte order mark (Notepad's) is passed over: the manifest reads,
 * and a problem after it is placed as the editor shows it. It was "invalid
 * JSON at line 1, column 1: a value expected" in a file that looks right. */
static void byte_order_mark_is_passed_over(void **state)
{
    char text[2 * PATH_MAX];
    strf(text, sizeof text,
         "\xEF\xBB\xBF{\"file_format_version\": \"1.0.0\",\n"
         " \"plugin\": {\"name\": \"good\", \"library_path\": \"%s\",\n"
         "            \"abi_version\": \"1.0\", \"priority\": 5}}\n",
         fake("fake_good"));
    write_file(dir, "good.json", text);
    write_file(dir, "late.json", "\xEF\xBB\xBF{\"file_format_version\": 1.0}");
    capture_begin();
    dla_device_count();
    capture_end();
    assert_string_equal(manifest_at(path_in(dir, "late.json")).reason,
                        "field 'file_format_version': expected a string, found a real number");
    write_file(dir, "late.json", "\xEF\xBB\xBF{,}");
    dla__registry_reset();
    capture_begin();
    dla_device_count();
    capture_end();
    assert_contains(manifest_at(path_in(dir, "late.json")).reason,
                    "invalid JSON at line 1, column 2:");
    assert_good_still_loads();
}

static void missing_field_is_skipped_naming_the_field(void **state)
{
    good_manifest(dir);
    write_file(dir, "nolib.json",
               "{\"file_format_version\": \"1.0.0\",\n"
               " \"plugin\": {\"name\": \"nolib\", \"abi_version\": \"1.0\"}}\n");
    capture_begin();
    dla_device_count();
    const char *log = capture_end();
    dla_manifest_info info = manifest_at(path_in(dir, "nolib.json"));
    assert_int_equal(info.state, DLA_MANIFEST_INVALID);
    assert_string_equal(info.reason, "field 'plugin.library_path': missing");
    /* What was read before the problem is still shown. */
    assert_string_equal(info.plugin, "nolib");
    char line[PATH_MAX + 64];
    strf(line, sizeof line, "dlaccel[warn]: manifest %s: field 'plugin.library_path': missing",
             path_in(dir, "nolib.json"));
    assert_contains(log, line);
    assert_good_still_loads();
}

static void field_of_the_wrong_type_or_form_is_skipped_naming_it(void **state)
{
    good_manifest(dir);
    write_file(dir, "a.json",
               "{\"file_format_version\": \"1.0.0\", \"plugin\": {\"name\": \"a\", "
               "\"library_path\": \"x.so\", \"abi_version\": \"1.0\", \"priority\": \"high\"}}");
    write_file(dir, "b.json",
               "{\"file_format_version\": \"1.0.0\", \"plugin\": {\"name\": \"Bad Name\", "
               "\"library_path\": \"x.so\", \"abi_version\": \"1.0\"}}");
    write_file(dir, "c.json",
               "{\"file_format_version\": \"1.0.0\", \"plugin\": {\"name\": \"c\", "
               "\"library_path\": \"x.so\", \"abi_version\": \"1\"}}");
    write_file(dir, "d.json",
               "{\"file_format_version\": \"1.0.0\", \"plugin\": {\"name\": \"d\", "
               "\"library_path\": \"x.so\", \"abi_version\": \"1.0\", \"device_types\": [\"gpu\", 7]}}");
    write_file(dir, "e.json", "[1, 2]");
    capture_begin();
    dla_device_count();
    const char *log = capture_end();
    assert_string_equal(manifest_at(path_in(dir, "a.json")).reason,
                        "field 'plugin.priority': expected an integer, found a string");
    assert_contains(manifest_at(path_in(dir, "b.json")).reason,
                    "field 'plugin.name': \"Bad Name\" must be made of [a-z0-9_-]");
    assert_contains(manifest_at(path_in(dir, "c.json")).reason,
                    "field 'plugin.abi_version': \"1\" is not of the form \"major.minor\"");
    assert_string_equal(manifest_at(path_in(dir, "d.json")).reason,
                        "field 'plugin.device_types[1]': expected a string, found an integer");
    assert_string_equal(manifest_at(path_in(dir, "e.json")).reason,
                        "top level: expected an object, found an array");
    assert_contains(log, "a.json: field 'plugin.priority': expected an integer");
    assert_contains(log, "d.json: field 'plugin.device_types[1]'");
    assert_good_still_loads();
}

static void unknown_file_format_major_is_skipped_and_newer_minor_read(void **state)
{
    good_manifest(dir);
    write_file(dir, "future.json",
               "{\"file_format_version\": \"2.0.0\", \"plugin\": {\"name\": \"future\", "
               "\"library_path\": \"x.so\", \"abi_version\": \"1.0\"}}");
    write_file(dir, "minor.json",
               "{\"file_format_version\": \"1.7.2\", \"extra\": {\"later\": true},"
               " \"plugin\": {\"name\": \"minor\", \"library_path\": \"x.so\","
               " \"abi_version\": \"1.0\", \"new_field\": 3}}");
    capture_begin();
    dla_manifest_count();
    const char *log = capture_end();
    dla_manifest_info info = manifest_at(path_in(dir, "future.json"));
    assert_int_equal(info.state, DLA_MANIFEST_INVALID);
    assert_string_equal(info.reason,
                        "field 'file_format_version': major version 2 is unknown (this library reads 1.x.x)");
    assert_contains(log, "future.json: field 'file_format_version': major version 2 is unknown");
    assert_state(path_in(dir, "minor.json"), DLA_MANIFEST_FOUND);
    assert_good_still_loads();
}

/* ------------------------------------------------------- bad libraries */

static void missing_library_fails_with_dlerror_and_resolved_path(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "gone.json", "gone", "libdlaccel-gone.so", "1.0", 50);
    capture_begin();
    dla_device *dev = dla_device_default();
    const char *log = capture_end();
    dla_manifest_info info = manifest_at(path_in(dir, "gone.json"));
    assert_int_equal(info.state, DLA_MANIFEST_FAILED);
    /* Relative to the manifest's folder. */
    assert_string_equal(info.library, path_in(dir, "libdlaccel-gone.so"));
    char want[PATH_MAX + 64];
    strf(want, sizeof want, "cannot load library %s/libdlaccel-gone.so: ", dir);
    assert_contains(info.reason, want);
    assert_contains(info.reason, "No such file or directory"); /* dlerror() */
    assert_contains(log, "dlaccel[warn]: plugin 'gone' (");
    assert_contains(log, want);
    /* The higher-priority plugin failed; the good one took over. */
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "good:0");
    assert_contains(dla_device_default_reason(), "passed over: 'gone' (50)");
    assert_good_still_loads();
}

/* A folder of DLACCEL_PLUGIN_PATH given relative, with a relative
 * library_path: the library is loaded later, after the program may have
 * changed its working directory, and is still the one beside the manifest
 * (it was looked for relative to the new working directory). */
static void relative_library_in_a_relative_folder_survives_a_chdir(void **state)
{
    char lib[PATH_MAX], cwd[PATH_MAX];
    strf(lib, sizeof lib, "%s/lib", dir);
    assert_int_equal(mkdir(lib, 0700), 0);
    assert_int_equal(symlink(fake("fake_good"), path_in(lib, "good.so")), 0);
    plugin_manifest(dir, "good.json", "good", "lib/good.so", "1.0", 5);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir("/tmp"), 0);
    setenv("DLACCEL_PLUGIN_PATH", dir + strlen("/tmp/"), 1); /* "dla-registry-..." */
    dla__registry_reset();
    assert_int_equal(dla_manifest_count(), 1); /* discovery, from /tmp */
    assert_int_equal(chdir("/"), 0);
    dla_device *dev = dla_device_get("good");
    const char *err = dev ? "" : dla_last_error();
    dla_manifest_info info = {.struct_size = sizeof info};
    assert_int_equal(dla_manifest_get(0, &info), DLA_OK);
    assert_int_equal(chdir(cwd), 0);
    if (!dev)
        fail_msg("the plugin did not load after a chdir: %s", err);
    assert_string_equal(info.library, path_in(lib, "good.so"));
}

static void library_without_entry_symbol_fails(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "nosym.json", "nosym", fake("fake_nosym"), "1.0", 1);
    capture_begin();
    dla_device_count();
    const char *log = capture_end();
    dla_manifest_info info = manifest_at(path_in(dir, "nosym.json"));
    assert_int_equal(info.state, DLA_MANIFEST_FAILED);
    assert_contains(info.reason, "fake_nosym.so does not export dlaccel_plugin_init");
    assert_contains(log, "dlaccel[warn]: plugin 'nosym' (");
    assert_contains(log, "does not export dlaccel_plugin_init");
    assert_good_still_loads();
}

static void abi_major_declared_in_manifest_is_refused_without_loading(void **state)
{
    /* The same plugin built for ABI 2 comes first; it must not hide the
     * ABI 1 build further down the path. */
    plugin_manifest(dir, "a_next.json", "good", fake("fake_good"), "2.0", 5);
    good_manifest(dir);
    capture_begin();
    dla_device_count();
    const char *log = capture_end();
    dla_manifest_info info = manifest_at(path_in(dir, "a_next.json"));
    assert_int_equal(info.state, DLA_MANIFEST_FAILED);
    assert_int_equal(info.abi_major, -1); /* never asked: not loaded */
    assert_contains(info.reason, "declares plugin ABI 2.0; this library speaks 1.");
    assert_contains(log, "a_next.json: field 'plugin.abi_version': declares plugin ABI 2.0");
    assert_contains(log, "library not loaded");
    assert_good_still_loads();
}

static void abi_major_answered_by_plugin_is_refused(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "abi.json", "abi", fake("fake_abi"), "1.0", 1);
    capture_begin();
    dla_device_count();
    const char *log = capture_end();
    dla_manifest_info info = manifest_at(path_in(dir, "abi.json"));
    assert_int_equal(info.state, DLA_MANIFEST_FAILED);
    assert_int_equal(info.abi_major, DLA_PLUGIN_ABI_MAJOR + 1);
    assert_int_equal(info.abi_minor, 3);
    assert_contains(info.reason, "speaks plugin ABI 2.3; this library speaks 1.");
    assert_contains(log, "dlaccel[warn]: plugin 'abi' (");
    assert_contains(log, "speaks plugin ABI 2.3");
    assert_good_still_loads();
}

static void init_failure_reports_the_plugins_message(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "initfail.json", "initfail", fake("fake_initfail"), "1.0", 1);
    capture_begin();
    dla_device_count();
    const char *log = capture_end();
    dla_manifest_info info = manifest_at(path_in(dir, "initfail.json"));
    assert_int_equal(info.state, DLA_MANIFEST_FAILED);
    assert_contains(info.reason,
                    "init failed (device error): no fake hardware on this machine (driver 0.0 missing)");
    assert_contains(log, "dlaccel[warn]: plugin 'initfail' (");
    assert_contains(log, "init failed (device error): no fake hardware");
    assert_good_still_loads();
}

static void plugin_without_devices_is_skipped_after_its_shutdown(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "nodev.json", "nodev", fake("fake_nodevice"), "1.0", 1);
    capture_begin();
    dla_device_count();
    const char *log = capture_end();
    dla_manifest_info info = manifest_at(path_in(dir, "nodev.json"));
    assert_int_equal(info.state, DLA_MANIFEST_FAILED);
    assert_int_equal(info.device_count, 0);
    assert_contains(info.reason, "fake_nodevice.so: no device");
    assert_contains(log, "dlaccel[info]: plugin 'nodev' (");
    assert_contains(log, "dlaccel[info]: nodev: fake_nodevice shutdown");
    assert_good_still_loads();
}

/* A plugin answering a device count no machine has fails alone: its slots,
 * asked for, were "default device: out of memory", no device at all. */
static void plugin_with_an_absurd_device_count_fails_alone(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "many.json", "many", fake("fake_nodevice"), "1.0", 10);
    setenv("DLA_FAKE_DEVICE_COUNT", "1073741824", 1);
    capture_begin();
    dla_device *dev = dla_device_default();
    const char *err = dev ? "" : dla_last_error();
    const char *log = capture_end();
    unsetenv("DLA_FAKE_DEVICE_COUNT");
    if (!dev)
        fail_msg("no default device: %s", err);
    assert_string_equal(dla_device_name(dev), "good:0");
    dla_manifest_info info = manifest_at(path_in(dir, "many.json"));
    assert_int_equal(info.state, DLA_MANIFEST_FAILED);
    assert_contains(info.reason, "device_count answered 1073741824 (at most 1024)");
    assert_contains(log, "plugin 'many' (");
}

/* ---------------------------------------------------------- duplicates */

static void same_folder_listed_twice_reads_each_manifest_once(void **state)
{
    good_manifest(dir);
    char path[2 * PATH_MAX + 2];
    strf(path, sizeof path, "%s:%s/", dir, dir);
    setenv("DLACCEL_PLUGIN_PATH", path, 1);
    capture_begin();
    int devices = dla_device_count();
    const char *log = capture_end();
    assert_int_equal(dla_manifest_count(), 2);
    assert_int_equal(devices, 1);
    dla_manifest_info second = {.struct_size = sizeof second};
    assert_int_equal(dla_manifest_get(1, &second), DLA_OK);
    assert_int_equal(second.state, DLA_MANIFEST_DUPLICATE);
    assert_int_equal(second.folder, 1);
    char want[PATH_MAX + 32];
    strf(want, sizeof want, "same file as %s/good.json", dir);
    assert_contains(second.reason, want);
    assert_contains(log, "dlaccel[info]: manifest ");
    assert_contains(log, want);
    assert_good_still_loads();
}

static void symlinked_manifest_is_read_once(void **state)
{
    good_manifest(dir);
    assert_int_equal(symlink(path_in(dir, "good.json"), path_in(dir2, "alias.json")), 0);
    char path[2 * PATH_MAX + 2];
    strf(path, sizeof path, "%s:%s", dir, dir2);
    setenv("DLACCEL_PLUGIN_PATH", path, 1);
    capture_begin();
    int devices = dla_device_count();
    const char *log = capture_end();
    assert_int_equal(devices, 1);
    dla_manifest_info info = manifest_at(path_in(dir2, "alias.json"));
    assert_int_equal(info.state, DLA_MANIFEST_DUPLICATE);
    assert_contains(info.reason, "same file as");
    assert_contains(log, "alias.json: same file as");
    assert_good_still_loads();
}

static void second_manifest_with_a_taken_name_is_skipped(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "other_good.json", "good", fake("fake_initfail"), "1.0", 99);
    capture_begin();
    dla_device *dev = dla_device_default();
    const char *log = capture_end();
    dla_manifest_info info = manifest_at(path_in(dir, "other_good.json"));
    assert_int_equal(info.state, DLA_MANIFEST_DUPLICATE);
    char want[PATH_MAX + 64];
    strf(want, sizeof want, "plugin name 'good' is already taken by %s/good.json", dir);
    assert_contains(info.reason, want);
    assert_contains(log, "dlaccel[warn]: manifest ");
    assert_contains(log, want);
    /* Its higher priority does not matter: it is not a candidate. */
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "good:0");
    assert_good_still_loads();
}

/* Two names for one library: dlopen hands back the one loaded copy, so
 * the second plugin's init ran again over the first's state (fake_good's
 * host table replaced, its log lines named by the second), and two
 * plugins' devices shared it. The second manifest found is a duplicate,
 * named with the first, whichever path reaches the file (a symlink). */
static void second_manifest_naming_a_taken_library_is_skipped(void **state)
{
    good_manifest(dir);
    char link_path[PATH_MAX];
    strf(link_path, sizeof link_path, "%s/alias.so", dir2);
    assert_int_equal(symlink(fake("fake_good"), link_path), 0);
    plugin_manifest(dir, "twin.json", "twin", fake("fake_good"), "1.0", 99);
    plugin_manifest(dir2, "linked.json", "linked", link_path, "1.0", 99);
    char path[2 * PATH_MAX + 2];
    strf(path, sizeof path, "%s:%s", dir, dir2);
    setenv("DLACCEL_PLUGIN_PATH", path, 1);
    capture_begin();
    int devices = dla_device_count();
    dla_device *dev = dla_device_default();
    const char *log = capture_end();
    assert_int_equal(devices, 1);
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "good:0");
    char want[3 * PATH_MAX];
    strf(want, sizeof want, "library %s is already that of plugin 'good' (manifest %s/good.json)",
         fake("fake_good"), dir);
    dla_manifest_info info = manifest_at(path_in(dir, "twin.json"));
    assert_int_equal(info.state, DLA_MANIFEST_DUPLICATE);
    assert_contains(info.reason, want);
    strf(want, sizeof want, "manifest %s/twin.json: library %s is already that of plugin 'good' "
         "(manifest %s/good.json)", dir, fake("fake_good"), dir);
    assert_contains(log, want);
    info = manifest_at(path_in(dir2, "linked.json"));
    assert_int_equal(info.state, DLA_MANIFEST_DUPLICATE);
    strf(want, sizeof want, "library %s is already that of plugin 'good' (manifest %s/good.json)",
         link_path, dir);
    assert_contains(info.reason, want);
    assert_null(dla_device_get("twin"));
    assert_good_still_loads();
}

/* The cpu plugin, every device's fallback, keeps its library from a
 * renamed copy of its manifest found before it, which is skipped. */
static void cpu_keeps_its_library_from_a_plugin_found_before_it(void **state)
{
    plugin_manifest(dir, "mycpu.json", "mycpu", fake("fake_good"), "1.0", 1);
    plugin_manifest(dir2, "cpu.json", "cpu", fake("fake_good"), "1.0", 1);
    char path[2 * PATH_MAX + 2];
    strf(path, sizeof path, "%s:%s", dir, dir2);
    setenv("DLACCEL_PLUGIN_PATH", path, 1);
    capture_begin();
    dla_device *cpu = dla__device_cpu();
    const char *log = capture_end();
    assert_non_null(cpu);
    assert_string_equal(dla_device_name(cpu), "cpu:0");
    dla_manifest_info info = manifest_at(path_in(dir, "mycpu.json"));
    assert_int_equal(info.state, DLA_MANIFEST_DUPLICATE);
    char want[3 * PATH_MAX];
    strf(want, sizeof want, "library %s is also that of plugin 'cpu' (manifest %s/cpu.json)",
         fake("fake_good"), dir2);
    assert_contains(info.reason, want);
    assert_contains(log, want);
    assert_int_equal(dla_device_count(), 1);
}

/* A hard link is another path to the same file (one inode): discovery
 * sees it as it sees a symlink, and the later manifest is skipped naming
 * the first plugin. */
static void hard_link_to_a_taken_library_is_skipped_naming_its_plugin(void **state)
{
    char hard[PATH_MAX];
    strf(hard, sizeof hard, "%s/hard.so", dir);
    if (link(fake("fake_good"), hard) != 0)
        skip(); /* another file system */
    good_manifest(dir);
    plugin_manifest(dir, "hard.json", "hard", hard, "1.0", 1);
    capture_begin();
    int devices = dla_device_count();
    const char *log = capture_end();
    assert_int_equal(devices, 1);
    dla_manifest_info info = manifest_at(path_in(dir, "hard.json"));
    assert_int_equal(info.state, DLA_MANIFEST_DUPLICATE);
    char want[3 * PATH_MAX];
    strf(want, sizeof want, "library %s is already that of plugin 'good' (manifest %s/good.json)",
         hard, dir);
    assert_contains(info.reason, want);
    assert_contains(log, want);
    assert_null(dla_device_get("hard"));
    assert_good_still_loads();
}

/* The cpu plugin keeps its library from a plugin found before it that
 * names a hard link of it (which dlopen alone would see only once the
 * other had loaded, leaving no cpu plugin, every device's fallback). */
static void cpu_keeps_its_library_from_a_hard_link_found_before_it(void **state)
{
    char hard[PATH_MAX];
    strf(hard, sizeof hard, "%s/hard.so", dir);
    if (link(fake("fake_good"), hard) != 0)
        skip(); /* another file system */
    plugin_manifest(dir, "aaa.json", "aaa", hard, "1.0", 1);
    plugin_manifest(dir2, "cpu.json", "cpu", fake("fake_good"), "1.0", 1);
    char path[2 * PATH_MAX + 2];
    strf(path, sizeof path, "%s:%s", dir, dir2);
    setenv("DLACCEL_PLUGIN_PATH", path, 1);
    capture_begin();
    dla_device *cpu = dla__device_cpu();
    capture_end();
    assert_non_null(cpu);
    assert_string_equal(dla_device_name(cpu), "cpu:0");
    dla_manifest_info info = manifest_at(path_in(dir, "aaa.json"));
    assert_int_equal(info.state, DLA_MANIFEST_DUPLICATE);
    char want[3 * PATH_MAX];
    strf(want, sizeof want, "library %s is also that of plugin 'cpu' (manifest %s/cpu.json)", hard,
         dir2);
    assert_contains(info.reason, want);
    assert_int_equal(dla_device_count(), 1);
}

/* --------------------------------------------------------- environment */

static void plugin_path_comes_before_the_installed_folder(void **state)
{
    assert_int_equal(mkdir(DLACCEL_PLUGINS_DIR, 0755), 0);
    plugin_manifest(DLACCEL_PLUGINS_DIR, "good.json", "good", fake("fake_initfail"), "1.0", 5);
    plugin_manifest(DLACCEL_PLUGINS_DIR, "installed.json", "installed",
                    fake_copy(DLACCEL_PLUGINS_DIR, "fake_good", "installed.so"), "1.0", 1);
    good_manifest(dir);
    capture_begin();
    int devices = dla_device_count();
    const char *log = capture_end();
    assert_int_equal(devices, 2);

    assert_int_equal(dla_manifest_folder_count(), 2);
    dla_manifest_folder_info f = {.struct_size = sizeof f};
    assert_int_equal(dla_manifest_folder_get(0, &f), DLA_OK);
    assert_string_equal(f.path, dir);
    assert_string_equal(f.origin, "DLACCEL_PLUGIN_PATH");
    assert_int_equal(f.manifest_count, 1);
    assert_int_equal(dla_manifest_folder_get(1, &f), DLA_OK);
    assert_string_equal(f.path, DLACCEL_PLUGINS_DIR);
    assert_string_equal(f.origin, "installed");
    assert_int_equal(f.manifest_count, 2);
    assert_int_equal(dla_manifest_folder_get(2, &f), DLA_ERR_INVALID_ARGUMENT);

    dla_manifest_info first = {.struct_size = sizeof first};
    assert_int_equal(dla_manifest_get(0, &first), DLA_OK);
    assert_string_equal(first.path, path_in(dir, "good.json"));
    assert_state(path_in(DLACCEL_PLUGINS_DIR, "good.json"), DLA_MANIFEST_DUPLICATE);
    assert_state(path_in(DLACCEL_PLUGINS_DIR, "installed.json"), DLA_MANIFEST_LOADED);
    assert_contains(log, "(from DLACCEL_PLUGIN_PATH)");
    assert_contains(log, "(from installed)");
    assert_good_still_loads();
}

/* DLACCEL_INSTALLED_PLUGINS=off: only DLACCEL_PLUGIN_PATH is searched (a
 * test that brings its plugins, unchanged by an installation); a value
 * outside the set warns and the folder is searched. */
static void installed_folder_is_left_out_when_asked(void **state)
{
    assert_int_equal(mkdir(DLACCEL_PLUGINS_DIR, 0755), 0);
    plugin_manifest(DLACCEL_PLUGINS_DIR, "installed.json", "installed",
                    fake_copy(DLACCEL_PLUGINS_DIR, "fake_good", "installed.so"), "1.0", 99);
    good_manifest(dir);
    setenv("DLACCEL_INSTALLED_PLUGINS", "off", 1);
    dla__registry_reset();
    capture_begin();
    int devices = dla_device_count();
    const char *log = capture_end();
    assert_int_equal(devices, 1);
    assert_int_equal(dla_manifest_folder_count(), 1);
    assert_int_equal(dla_manifest_count(), 1);
    assert_contains(log, "(not searched: DLACCEL_INSTALLED_PLUGINS=off)");
    assert_string_equal(dla_device_name(dla_device_default()), "good:0");

    setenv("DLACCEL_INSTALLED_PLUGINS", "of", 1);
    dla__registry_reset();
    capture_begin();
    devices = dla_device_count();
    log = capture_end();
    assert_int_equal(devices, 2);
    assert_int_equal(dla_manifest_folder_count(), 2);
    assert_contains(log, "DLACCEL_INSTALLED_PLUGINS=of is not one of its values");
    assert_string_equal(dla_device_name(dla_device_default()), "installed:0");
}

static void unreadable_folder_in_plugin_path_is_reported_and_passed(void **state)
{
    good_manifest(dir);
    char path[2 * PATH_MAX + 16];
    strf(path, sizeof path, "%s/nowhere:%s", dir2, dir);
    setenv("DLACCEL_PLUGIN_PATH", path, 1);
    capture_begin();
    int folders = dla_manifest_folder_count();
    const char *log = capture_end();
    assert_int_equal(folders, 3);
    dla_manifest_folder_info f = {.struct_size = sizeof f};
    assert_int_equal(dla_manifest_folder_get(0, &f), DLA_OK);
    assert_int_equal(f.manifest_count, -1);
    assert_string_equal(f.error, "No such file or directory");
    assert_contains(log, "dlaccel[info]: discovery: cannot read folder ");
    assert_contains(log, "nowhere (from DLACCEL_PLUGIN_PATH): No such file or directory");
    assert_good_still_loads();
}

static void device_list_falls_back_past_an_unknown_name(void **state)
{
    good_manifest(dir);
    setenv("DLACCEL_DEVICE", "nosuch, good", 1);
    capture_begin();
    dla_device *dev = dla_device_default();
    const char *log = capture_end();
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "good:0");
    assert_contains(dla_device_default_reason(), "DLACCEL_DEVICE entry 'good'");
    assert_contains(dla_device_default_reason(), "passed over: 'nosuch': no plugin named 'nosuch'");
    assert_contains(log, "dlaccel[warn]: DLACCEL_DEVICE entry 'nosuch' gives no device");
    assert_contains(log, "dlaccel[info]: default device good:0: DLACCEL_DEVICE entry 'good'");
}

static void device_list_of_only_an_unknown_name_fails_without_fallback(void **state)
{
    good_manifest(dir);
    setenv("DLACCEL_DEVICE", "nosuch", 1);
    capture_begin();
    dla_device *dev = dla_device_default();
    const char *log = capture_end();
    assert_null(dev);
    assert_int_equal(dla_last_status(), DLA_ERR_NO_DEVICE);
    assert_contains(dla_last_error(), "DLACCEL_DEVICE=\"nosuch\" names no device that can be had");
    assert_contains(dla_last_error(), "'nosuch': no plugin named 'nosuch' among the 1 manifest(s)");
    assert_contains(log, "dlaccel[warn]: no default device: DLACCEL_DEVICE=\"nosuch\"");
    /* No silent fallback: the good plugin was not even loaded. */
    assert_state(path_in(dir, "good.json"), DLA_MANIFEST_FOUND);
    assert_null(dla_device_current());
    assert_int_equal(dla_last_status(), DLA_ERR_NO_DEVICE);
}

static void device_list_naming_a_failing_plugin_reports_its_failure(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "broken.json", "broken", fake("fake_initfail"), "1.0", 1);
    setenv("DLACCEL_DEVICE", "broken", 1);
    capture_begin();
    dla_device *dev = dla_device_default();
    capture_end();
    assert_null(dev);
    assert_int_equal(dla_last_status(), DLA_ERR_NO_DEVICE);
    assert_contains(dla_last_error(), "'broken': plugin 'broken' (");
    assert_contains(dla_last_error(), "failed to load: ");
    assert_contains(dla_last_error(), "no fake hardware on this machine");
    assert_string_equal(dla_device_default_reason(), dla_last_error());
}

static void device_entry_with_an_index_the_plugin_lacks_fails(void **state)
{
    good_manifest(dir);
    setenv("DLACCEL_DEVICE", "good:3,good:x", 1);
    assert_null(dla_device_default());
    assert_contains(dla_last_error(), "'good:3': plugin 'good' has no device 3; it offers good:0");
    assert_contains(dla_last_error(), "'good:x': not of the form plugin or plugin:index");
    assert_non_null(dla_device_get("good:0"));
    assert_null(dla_device_get("good:1"));
    assert_int_equal(dla_last_status(), DLA_ERR_NO_DEVICE);
    assert_contains(dla_last_error(), "dla_device_get: 'good:1': plugin 'good' has no device 1");
}

/* An entry that cannot be a plugin's name (a device, a capital) disables
 * nothing, and says so; a well-formed unknown name ("other") is quiet. */
static void disable_entry_that_is_no_plugin_name_is_named(void **state)
{
    good_manifest(dir);
    setenv("DLACCEL_PLUGINS_DISABLE", "good:0, Good ,other", 1);
    capture_begin();
    dla_device *dev = dla_device_default();
    const char *log = capture_end();
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "good:0");
    assert_contains(log, "dlaccel[warn]: DLACCEL_PLUGINS_DISABLE entry 'good:0' is not a plugin "
                         "name");
    assert_contains(log, "DLACCEL_PLUGINS_DISABLE entry 'Good' is not a plugin name");
    assert_contains(log, "it disables nothing");
    if (strstr(log, "entry 'other'"))
        fail_msg("a well-formed name was warned about:\n%s", log);
}

static void disabled_plugin_is_skipped_and_named_as_disabled(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "first.json", "first", fake("fake_good"), "1.0", 10);
    setenv("DLACCEL_PLUGINS_DISABLE", "other, first", 1);
    capture_begin();
    dla_device *dev = dla_device_default();
    const char *log = capture_end();
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "good:0");
    dla_manifest_info info = manifest_at(path_in(dir, "first.json"));
    assert_int_equal(info.state, DLA_MANIFEST_DISABLED);
    assert_string_equal(info.reason, "disabled by DLACCEL_PLUGINS_DISABLE");
    assert_contains(log, "dlaccel[info]: manifest ");
    assert_contains(log, "first.json: plugin 'first' disabled by DLACCEL_PLUGINS_DISABLE");
    assert_null(dla_device_get("first"));
    assert_contains(dla_last_error(), "is not usable (disabled): disabled by DLACCEL_PLUGINS_DISABLE");
}

static void highest_priority_wins_with_ties_in_discovery_order(void **state)
{
    plugin_manifest(dir, "a_low.json", "low", fake("fake_good"), "1.0", 1);
    plugin_manifest(dir, "b_high.json", "high", fake_copy(dir2, "fake_good", "high.so"), "1.0", 9);
    plugin_manifest(dir, "c_tie.json", "tie", fake_copy(dir2, "fake_good", "tie.so"), "1.0", 9);
    capture_begin();
    dla_device *dev = dla_device_default();
    const char *log = capture_end();
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "high:0");
    assert_string_equal(dla_device_default_reason(), "highest priority (9)");
    assert_contains(log, "dlaccel[info]: default device high:0: highest priority (9)");
    /* Loading is lazy: the others were never opened. */
    assert_state(path_in(dir, "a_low.json"), DLA_MANIFEST_FOUND);
    assert_state(path_in(dir, "c_tie.json"), DLA_MANIFEST_FOUND);
    assert_ptr_equal(dla_device_current(), dev);
}

static void registry_reset_reads_the_environment_again(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "other.json", "other", fake_copy(dir2, "fake_good", "other.so"), "1.0", 1);
    setenv("DLACCEL_DEVICE", "other", 1);
    dla_device *dev = dla_device_default();
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "other:0");
    setenv("DLACCEL_DEVICE", "good", 1);
    assert_ptr_equal(dla_device_default(), dev); /* read once */
    dla__registry_reset();
    dev = dla_device_default();
    assert_non_null(dev);
    assert_string_equal(dla_device_name(dev), "good:0");
}

/* -------------------------------------------------- devices and threads */

static void *current_on_a_new_thread(void *out)
{
    *(dla_device **)out = dla_device_current();
    return NULL;
}

static void current_device_is_per_thread_and_defaults_to_default(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "other.json", "other", fake_copy(dir2, "fake_good", "other.so"), "1.0", 1);
    dla_device *good = dla_device_default();
    dla_device *other = dla_device_get("other:0");
    assert_non_null(good);
    assert_non_null(other);
    assert_ptr_equal(dla_device_current(), good);
    dla_device_set_current(other);
    assert_ptr_equal(dla_device_current(), other);
    dla_device *seen = NULL;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, current_on_a_new_thread, &seen), 0);
    pthread_join(t, NULL);
    assert_ptr_equal(seen, good);
    dla_device_set_current(NULL);
    assert_ptr_equal(dla_device_current(), good);
    /* A reset forgets the current device rather than leave it dangling. */
    dla_device_set_current(other);
    dla__registry_reset();
    assert_string_equal(dla_device_name(dla_device_current()), "good:0");
}

static void devices_are_listed_in_discovery_order(void **state)
{
    good_manifest(dir);
    plugin_manifest(dir, "zz_short.json", "short", fake("fake_short"), "1.0", 100);
    plugin_manifest(dir, "broken.json", "broken", fake("fake_initfail"), "1.0", 1);
    assert_int_equal(dla_device_count(), 2);
    assert_string_equal(dla_device_name(dla_device_at(0)), "good:0");
    assert_string_equal(dla_device_name(dla_device_at(1)), "short:0");
    assert_null(dla_device_at(2));
    assert_null(dla_device_at(-1));
    assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
}

static void cpu_fallback_is_the_plugin_named_cpu(void **state)
{
    plugin_manifest(dir, "cpu.json", "cpu", fake("fake_good"), "1.0", 1);
    plugin_manifest(dir, "fast.json", "fast", fake_copy(dir2, "fake_good", "fast.so"), "1.0", 100);
    setenv("DLACCEL_DEVICE", "fast", 1);
    dla_device *cpu = dla__device_cpu();
    assert_non_null(cpu);
    assert_string_equal(dla_device_name(cpu), "cpu:0");
    assert_string_equal(dla_device_name(dla_device_default()), "fast:0");

    setenv("DLACCEL_PLUGINS_DISABLE", "cpu", 1);
    dla__registry_reset();
    assert_null(dla__device_cpu());
    assert_contains(dla_last_error(), "the cpu plugin (the fallback for every device): ");
    assert_contains(dla_last_error(), "disabled by DLACCEL_PLUGINS_DISABLE");
}

static void no_manifest_anywhere_names_the_folders_searched(void **state)
{
    assert_null(dla_device_default());
    assert_int_equal(dla_last_status(), DLA_ERR_NO_DEVICE);
    char want[2 * PATH_MAX];
    strf(want, sizeof want, "no usable plugin manifest among the 0 found in: %s (DLACCEL_PLUGIN_PATH), %s (installed)",
             dir, DLACCEL_PLUGINS_DIR);
    assert_string_equal(dla_last_error(), want);
    assert_int_equal(dla_device_count(), 0);
}

static void build_tree_cpu_plugin_loads(void **state)
{
    char path[PATH_MAX];
    strf(path, sizeof path, "%s/plugins.d", builddir());
    setenv("DLACCEL_PLUGIN_PATH", path, 1);
    setenv("DLACCEL_DEVICE", "cpu", 1);
    dla_device *dev = dla_device_default();
    if (!dev)
        fail_msg("cpu plugin from %s: %s", path, dla_last_error());
    assert_string_equal(dla_device_name(dev), "cpu:0");
    assert_string_equal(dla_device_type(dev), "cpu");
    assert_ptr_equal(dla__device_cpu(), dev);
    assert_state(path_in(path, "cpu.json"), DLA_MANIFEST_LOADED);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(good_plugin_is_read_first_and_loaded_only_when_needed),
        T(plugin_and_manifest_memory_go_through_the_users_allocator),
        T(every_refused_allocation_is_an_error_then_forgotten),
        T(device_supports_needs_the_member_and_the_plugins_yes),
        T(table_past_the_plugins_struct_size_reads_as_null),
        T(invalid_json_is_skipped_naming_line_and_column),
        T(byte_order_mark_is_passed_over),
        T(missing_field_is_skipped_naming_the_field),
        T(field_of_the_wrong_type_or_form_is_skipped_naming_it),
        T(unknown_file_format_major_is_skipped_and_newer_minor_read),
        T(missing_library_fails_with_dlerror_and_resolved_path),
        T(relative_library_in_a_relative_folder_survives_a_chdir),
        T(library_without_entry_symbol_fails),
        T(abi_major_declared_in_manifest_is_refused_without_loading),
        T(abi_major_answered_by_plugin_is_refused),
        T(init_failure_reports_the_plugins_message),
        T(plugin_without_devices_is_skipped_after_its_shutdown),
        T(plugin_with_an_absurd_device_count_fails_alone),
        T(same_folder_listed_twice_reads_each_manifest_once),
        T(symlinked_manifest_is_read_once),
        T(second_manifest_with_a_taken_name_is_skipped),
        T(second_manifest_naming_a_taken_library_is_skipped),
        T(hard_link_to_a_taken_library_is_skipped_naming_its_plugin),
        T(cpu_keeps_its_library_from_a_hard_link_found_before_it),
        T(cpu_keeps_its_library_from_a_plugin_found_before_it),
        T(plugin_path_comes_before_the_installed_folder),
        T(installed_folder_is_left_out_when_asked),
        T(unreadable_folder_in_plugin_path_is_reported_and_passed),
        T(device_list_falls_back_past_an_unknown_name),
        T(device_list_of_only_an_unknown_name_fails_without_fallback),
        T(device_list_naming_a_failing_plugin_reports_its_failure),
        T(device_entry_with_an_index_the_plugin_lacks_fails),
        T(disabled_plugin_is_skipped_and_named_as_disabled),
        T(disable_entry_that_is_no_plugin_name_is_named),
        T(highest_priority_wins_with_ties_in_discovery_order),
        T(registry_reset_reads_the_environment_again),
        T(current_device_is_per_thread_and_defaults_to_default),
        T(devices_are_listed_in_discovery_order),
        T(cpu_fallback_is_the_plugin_named_cpu),
        T(no_manifest_anywhere_names_the_folders_searched),
        T(build_tree_cpu_plugin_loads),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

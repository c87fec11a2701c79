/*
 * fuzz_manifest.c - the plugin manifest reader (core/manifest.c,
 * dla__manifest_read) on arbitrary bytes. It is internal to the library,
 * so the harness is built with manifest.c and alloc.c themselves. A read
 * gives DLA_OK with every required field set, or a status with a reason;
 * either way the manifest is cleared.
 */
#include "fuzz/fuzz_file.h"

#include "core/handle.h"
#include "core/manifest.h"

/* alloc.c's dla_set_allocator hands the handle quarantine (handle.c) back
 * to the allocator first; this harness builds the reader without the
 * handles and never sets an allocator, so there is nothing to hand back. */
void dla__quarantine_flush(void) {}
void dla__quarantine_fill(void) {}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dla_fuzz_init(".json");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = dla_fuzz_write(data, size);
    char folder[256];
    snprintf(folder, sizeof folder, "%s", path);
    *strrchr(folder, '/') = '\0';
    dla__manifest m;
    char reason[DLA__REASON_MAX] = "";
    dla_status st = dla__manifest_read(path, folder, &m, reason, sizeof reason);
    if (st == DLA_OK && (!m.name || !m.library || !m.abi))
        abort();
    if (st != DLA_OK && st != DLA_ERR_OUT_OF_MEMORY && !reason[0])
        abort(); /* a refusal always says why */
    dla__manifest_clear(&m);
    return 0;
}

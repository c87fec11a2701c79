/*
 * version.c - the library's version, from the numbers in dlaccel.h.
 */
#include <dlaccel.h>

#define DLA__STR2(x) #x
#define DLA__STR(x) DLA__STR2(x)

DLA_API const char *dla_version_string(void)
{
    return DLA__STR(DLA_VERSION_MAJOR) "." DLA__STR(DLA_VERSION_MINOR) "." DLA__STR(
        DLA_VERSION_PATCH);
}

DLA_API void dla_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = DLA_VERSION_MAJOR;
    if (minor)
        *minor = DLA_VERSION_MINOR;
    if (patch)
        *patch = DLA_VERSION_PATCH;
}

/*
 * kernels.h - what the core knows of each kernel, read from the rows of
 * DLA_KERNEL_LIST (api/dlaccel/plugin.h) and from nowhere else: a kernel
 * added to the ABI is one row there, and the registry (availability), the
 * dispatch (launch.c) and the log lines follow from it.
 *
 * Header-only so that the files tests link in directly (the registry test
 * compiles registry.c on its own) need no other object.
 */
#ifndef DLA_CORE_KERNELS_H
#define DLA_CORE_KERNELS_H

#include <dlaccel/plugin.h>

#include <stddef.h>

/* The kernel's name as logs and tools print it ("fused_reduce_pair"); "?"
 * for a value outside the list. */
static inline const char *dla__kernel_name(dla_kernel kernel)
{
#define DLA__KERNEL_NAME(id, name, ...) [id] = name,
    static const char *const names[] = {DLA_KERNEL_LIST(DLA__KERNEL_NAME)};
#undef DLA__KERNEL_NAME
    _Static_assert(sizeof names / sizeof names[0] == DLA_KERNEL_COUNT, "a kernel without a name");
    return (unsigned)kernel < DLA_KERNEL_COUNT ? names[kernel] : "?";
}

/* Where the member that runs the kernel lies in dla_plugin (kernels may
 * share one: random's two distributions, fused_reduce's pair). The caller
 * checks the kernel is in the list. */
static inline size_t dla__kernel_member(dla_kernel kernel)
{
#define DLA__KERNEL_MEMBER(id, name, member, ...) [id] = offsetof(dla_plugin, member),
    static const size_t offsets[] = {DLA_KERNEL_LIST(DLA__KERNEL_MEMBER)};
#undef DLA__KERNEL_MEMBER
    _Static_assert(sizeof offsets / sizeof offsets[0] == DLA_KERNEL_COUNT,
                   "a kernel without a table member");
    return offsets[kernel];
}

/* The ABI minor that added the kernel: a plugin that answered an older
 * one never heard of it, whatever its table or supports() say. */
static inline int dla__kernel_minor(dla_kernel kernel)
{
#define DLA__KERNEL_MINOR(id, name, member, minor) [id] = (minor),
    static const unsigned char minors[] = {DLA_KERNEL_LIST(DLA__KERNEL_MINOR)};
#undef DLA__KERNEL_MINOR
    _Static_assert(sizeof minors / sizeof minors[0] == DLA_KERNEL_COUNT,
                   "a kernel without its ABI minor");
    return minors[kernel];
}

#endif

/*
 * check.c - what the plugin kit's argument checks need of the opencl
 * plugin (a buffer's size), and the names of OpenCL errors in messages.
 *
 * Every kernel starts with the kit's checks (dlaccel/plugin_kit.h): a view
 * that reaches past its buffer is refused before the device could read or
 * write outside it, where a mistake is a device fault or silent
 * corruption, not a segfault in a debugger.
 */
#include "plugins/opencl/ocl.h"

#include <stdio.h>

size_t dla__ocl_mem_bytes(dla_mem mem)
{
    return ((const dla__ocl_mem *)mem)->bytes;
}

const char *dla__ocl_err_str(cl_int err, char *buf, size_t size)
{
    const char *name;
    switch (err) {
#define E(c)                                                                                       \
    case c: name = #c; break;
        E(CL_DEVICE_NOT_FOUND)
        E(CL_DEVICE_NOT_AVAILABLE)
        E(CL_COMPILER_NOT_AVAILABLE)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        E(CL_OUT_OF_RESOURCES)
        E(CL_OUT_OF_HOST_MEMORY)
        E(CL_BUILD_PROGRAM_FAILURE)
        E(CL_INVALID_VALUE)
        E(CL_INVALID_DEVICE)
        E(CL_INVALID_CONTEXT)
        E(CL_INVALID_COMMAND_QUEUE)
        E(CL_INVALID_MEM_OBJECT)
        E(CL_INVALID_BUILD_OPTIONS)
        E(CL_INVALID_PROGRAM)
        E(CL_INVALID_PROGRAM_EXECUTABLE)
        E(CL_INVALID_KERNEL_NAME)
        E(CL_INVALID_KERNEL)
        E(CL_INVALID_ARG_INDEX)
        E(CL_INVALID_ARG_VALUE)
        E(CL_INVALID_ARG_SIZE)
        E(CL_INVALID_KERNEL_ARGS)
        E(CL_INVALID_WORK_DIMENSION)
        E(CL_INVALID_WORK_GROUP_SIZE)
        E(CL_INVALID_WORK_ITEM_SIZE)
        E(CL_INVALID_GLOBAL_OFFSET)
        E(CL_INVALID_EVENT_WAIT_LIST)
        E(CL_INVALID_OPERATION)
        E(CL_INVALID_BUFFER_SIZE)
        E(CL_INVALID_GLOBAL_WORK_SIZE)
        E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
#undef E
    case -1001: name = "CL_PLATFORM_NOT_FOUND_KHR"; break;
    default: name = "OpenCL error"; break;
    }
    snprintf(buf, size, "%s (%d)", name, (int)err);
    return buf;
}

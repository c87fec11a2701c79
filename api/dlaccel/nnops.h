/*
 * dlaccel/nnops.h - included by dlaccel.h; do not include it directly.
 */
#ifndef DLACCEL_NNOPS_H
#define DLACCEL_NNOPS_H

#include <dlaccel.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_NNOPS_H */

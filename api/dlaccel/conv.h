/*
 * dlaccel/conv.h - included by dlaccel.h; do not include it directly.
 */
#ifndef DLACCEL_CONV_H
#define DLACCEL_CONV_H

#include <dlaccel.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_CONV_H */

/*
 * dlaccel/loss.h - included by dlaccel.h; do not include it directly.
 */
#ifndef DLACCEL_LOSS_H
#define DLACCEL_LOSS_H

#include <dlaccel.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_LOSS_H */

/*
 * crc32c.h - CRC-32C (Castagnoli) for the files the library writes: a
 * trace (core/trace_file.c) and a network (nn/net_io.c) carry one, so that
 * a flipped bit or a damaged block is refused when the file is read
 * instead of running as a different program or network. It guards against
 * accidents, not against a file made to pass it.
 */
#ifndef DLA_CORE_CRC32C_H
#define DLA_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C (reflected, initial and final value 0xFFFFFFFF) of the n
 * bytes at p continuing crc, the value of the bytes before them: 0 for
 * the first, so dla__crc32c(dla__crc32c(0, a, na), b, nb) is the CRC of a
 * followed by b. Thread-safe. */
uint32_t dla__crc32c(uint32_t crc, const void *p, size_t n);

#endif

/*
 * json_read.h - a JSON reader that survives refused allocations, for the
 * network files (nn/net_io.c, nn/net_arch.c) and the plugin manifests
 * (core/manifest.c).
 *
 * Jansson's own parser is not safe when an allocation is refused: its
 * lexer drops the bytes it cannot save (a string read back shorter than it
 * is, "covolution2d"), then fails an assertion or writes past a buffer.
 * This reader parses the text itself and builds the same Jansson tree with
 * Jansson's constructors, each of which reports a refusal, so the tree is
 * either the whole document or nothing and the caller learns which.
 */
#ifndef DLA_CORE_JSON_READ_H
#define DLA_CORE_JSON_READ_H

#include <dlaccel.h>
#include <jansson.h>

/* Parses the len bytes of text as one JSON value (RFC 8259: UTF-8,
 * whitespace around it, nothing after; an object may not repeat a key, and
 * a string may not hold U+0000, as Jansson's JSON_REJECT_DUPLICATES).
 * Returns DLA_OK with *out the tree (json_decref it); DLA_ERR_OUT_OF_MEMORY
 * when an allocation was refused; DLA_ERR_IO when the text is not JSON,
 * with what is wrong in why (NUL-terminated, at most why_size bytes) and
 * the byte offset in *at. Sets no last error: the caller names the file. */
dla_status dla__json_read(const char *text, size_t len, json_t **out, char *why, size_t why_size,
                          size_t *at);

#endif

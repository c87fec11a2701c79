/*
 * op_registry.c - every op of the library findable by a unique name, and
 * the default attribute codec.
 *
 * Ops register themselves from constructors (DLA__OP_REGISTER in op.h) while
 * the library is loaded, before any thread can look, so the list needs no
 * lock: it is only read afterwards. Lookups walk it; they happen when a
 * trace is saved or loaded, never on the op path.
 */
#include "core/error.h"
#include "core/op.h"

#include <string.h>

static dla__op_reg *head;
static int count;

void dla__op_register(dla__op_reg *reg)
{
    if (!reg->name)
        reg->name = reg->op->name;
    reg->next = head;
    head = reg;
    count++;
}

const dla__op *dla__op_find(const char *name)
{
    for (const dla__op_reg *r = head; r && name; r = r->next)
        if (strcmp(r->name, name) == 0)
            return r->op;
    return NULL;
}

const dla__op_reg *dla__op_registration(const dla__op *op)
{
    for (const dla__op_reg *r = head; r; r = r->next)
        if (r->op == op)
            return r;
    return NULL;
}

int dla__op_count(void) { return count; }

const dla__op_reg *dla__op_at(int i)
{
    const dla__op_reg *r = head;
    for (; r && i > 0; i--)
        r = r->next;
    return i == 0 ? r : NULL;
}

dla_status dla__op_encode_attrs(const dla__op_reg *reg, const dla__attrs_io *io, const void *attrs,
                                size_t attrs_size, unsigned char *buf, size_t cap, size_t *len)
{
    *len = 0;
    if (attrs_size != reg->attrs_size)
        /* The registration disagrees with what the op records: our bug,
         * but a failed save is kinder than a file no load accepts. */
        return dla__fail(DLA_ERR_STATE, "op \"%s\": its attributes are %zu bytes, but it is "
                         "registered with %zu", reg->name, attrs_size, reg->attrs_size);
    if (reg->op->encode_attrs)
        return reg->op->encode_attrs(io, attrs, attrs_size, buf, cap, len);
    if (attrs_size && attrs_size <= cap)
        memcpy(buf, attrs, attrs_size);
    *len = attrs_size;
    return DLA_OK;
}

dla_status dla__op_decode_attrs(const dla__op_reg *reg, const dla__attrs_io *io,
                                const unsigned char *buf, size_t size, void *attrs)
{
    if (reg->op->decode_attrs)
        return reg->op->decode_attrs(io, buf, size, attrs, reg->attrs_size);
    if (size != reg->attrs_size)
        return dla__fail(DLA_ERR_IO, "op \"%s\": %zu bytes of attributes; it takes %zu", reg->name,
                         size, reg->attrs_size);
    if (size)
        memcpy(attrs, buf, size);
    return DLA_OK;
}

DLA_API int dla_trace_op_count(void) { return dla__op_count(); }

DLA_API const char *dla_trace_op_name(int i)
{
    const dla__op_reg *r = i >= 0 ? dla__op_at(i) : NULL;
    return r ? r->name : NULL;
}

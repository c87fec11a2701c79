/*
 * json_read.c - a recursive-descent JSON reader into a Jansson tree, for
 * the network files (why not Jansson's own parser: json_read.h).
 *
 * Every allocation goes through Jansson's constructors (routed to the
 * library's hook by dla_set_allocator) or through the one scratch buffer
 * taken at the start, and every refusal ends the parse with
 * DLA_ERR_OUT_OF_MEMORY and the partial tree released. Nesting is bounded,
 * so a hostile file cannot run the stack out.
 */
#include "core/json_read.h"
#include <dlaccel.h> /* dla_malloc: the hook, from the library and from its tests alike */

#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 512

typedef struct reader {
    const unsigned char *p, *end, *start;
    char *scratch; /* len + 1 bytes: a decoded string never outgrows its text */
    dla_status st;
    char *why;
    size_t why_size;
    size_t at;
} reader;

static json_t *syntax(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static json_t *syntax(reader *r, const char *fmt, ...)
{
    if (r->st == DLA_OK) {
        r->st = DLA_ERR_IO;
        r->at = (size_t)(r->p - r->start);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, r->why_size, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static json_t *no_memory(reader *r)
{
    if (r->st == DLA_OK) {
        r->st = DLA_ERR_OUT_OF_MEMORY;
        r->at = (size_t)(r->p - r->start);
        snprintf(r->why, r->why_size, "out of memory");
    }
    return NULL;
}

static void skip_space(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

/* The length of the UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF); 0 when it is not one. */
static size_t utf8_length(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

static int hex4(const unsigned char *p, const unsigned char *end, unsigned *out)
{
    if (end - p < 4)
        return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return 0;
        v = v * 16 + d;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the string at r->p (its opening quote) into r->scratch,
 * NUL-terminated; returns its length, or -1 (error set). Strings are read
 * one at a time and consumed before the next, so one buffer serves all. */
static long read_string(reader *r)
{
    const unsigned char *open = r->p++;
    char *o = r->scratch;
    while (r->p < r->end && *r->p != '"') {
        unsigned c = *r->p;
        if (c < 0x20)
            return syntax(r, "a control character (0x%02x) inside a string", c), -1;
        if (c != '\\') {
            size_t n = utf8_length(r->p, r->end);
            if (!n)
                return syntax(r, "a string that is not UTF-8"), -1;
            memcpy(o, r->p, n);
            o += n;
            r->p += n;
            continue;
        }
        if (r->end - r->p < 2) { /* a backslash last: the string does not end */
            r->p = r->end;
            break;
        }
        c = r->p[1];
        const char *simple = strchr("\"\\/bfnrt", (int)c);
        if (c && simple) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            *o++ = decoded[simple - "\"\\/bfnrt"];
            r->p += 2;
            continue;
        }
        unsigned cp;
        if (c != 'u' || !hex4(r->p + 2, r->end, &cp))
            return syntax(r, "an invalid escape in a string"), -1;
        r->p += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
                !hex4(r->p + 2, r->end, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                return syntax(r, "a \\u escape of a lone UTF-16 surrogate"), -1;
            r->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return syntax(r, "a \\u escape of a lone UTF-16 surrogate"), -1;
        } else if (cp == 0) {
            return syntax(r, "\\u0000 inside a string"), -1;
        }
        o += put_utf8(o, cp);
    }
    if (r->p >= r->end) {
        r->p = open;
        return syntax(r, "a string that does not end"), -1;
    }
    r->p++; /* the closing quote */
    *o = '\0';
    return (long)(o - r->scratch);
}

static json_t *read_number(reader *r)
{
    const unsigned char *s = r->p;
    int real = 0;
    if (r->p < r->end && *r->p == '-')
        r->p++;
    if (r->p < r->end && *r->p == '0')
        r->p++;
    else if (r->p < r->end && *r->p >= '1' && *r->p <= '9')
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
            r->p++;
    else
        return syntax(r, "an invalid number");
    if (r->p < r->end && *r->p == '.') {
        real = 1;
        r->p++;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9')
            return syntax(r, "an invalid number");
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
            r->p++;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        real = 1;
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
            r->p++;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9')
            return syntax(r, "an invalid number");
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
            r->p++;
    }
    /* The scratch buffer is free between strings: a terminated copy. */
    size_t n = (size_t)(r->p - s);
    memcpy(r->scratch, s, n);
    r->scratch[n] = '\0';
    char *stop;
    errno = 0;
    if (!real) {
        long long v = strtoll(r->scratch, &stop, 10);
        if (errno == ERANGE || (size_t)(stop - r->scratch) != n) {
            r->p = s;
            return syntax(r, "an integer too large");
        }
        json_t *j = json_integer((json_int_t)v);
        return j ? j : no_memory(r);
    }
    /* strtod reads the locale's decimal point; JSON's is '.'. */
    const char *point = localeconv()->decimal_point;
    char *dot = strchr(r->scratch, '.');
    if (dot && point && point[0] && !point[1])
        *dot = point[0];
    double v = strtod(r->scratch, &stop);
    if ((errno == ERANGE && (v > 1 || v < -1)) || (size_t)(stop - r->scratch) != n) {
        r->p = s;
        return syntax(r, "a real number too large");
    }
    json_t *j = json_real(v);
    return j ? j : no_memory(r);
}

static int literal(reader *r, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n))
        return 0;
    r->p += n;
    return 1;
}

static json_t *read_value(reader *r, int depth);

static json_t *read_array(reader *r, int depth)
{
    json_t *a = json_array();
    if (!a)
        return no_memory(r);
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return a;
    }
    for (;;) {
        json_t *v = read_value(r, depth + 1);
        if (!v)
            break;
        if (json_array_append_new(a, v)) { /* releases v */
            no_memory(r);
            break;
        }
        skip_space(r);
        if (r->p < r->end && *r->p == ']') {
            r->p++;
            return a;
        }
        if (r->p >= r->end || *r->p != ',') {
            syntax(r, "',' or ']' expected in an array");
            break;
        }
        r->p++;
    }
    json_decref(a);
    return NULL;
}

static json_t *read_object(reader *r, int depth)
{
    json_t *o = json_object();
    if (!o)
        return no_memory(r);
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return o;
    }
    for (;;) {
        skip_space(r);
        if (r->p >= r->end || *r->p != '"') {
            syntax(r, "a string key expected in an object");
            break;
        }
        const unsigned char *key_at = r->p;
        long klen = read_string(r);
        if (klen < 0)
            break;
        /* The key is copied out of the scratch buffer before the value
         * (which may be a string) reuses it. */
        char *key = dla_malloc((size_t)klen + 1);
        if (!key) {
            no_memory(r);
            break;
        }
        memcpy(key, r->scratch, (size_t)klen + 1);
        if (json_object_get(o, key)) {
            r->p = key_at;
            syntax(r, "the key \"%.60s\" twice in one object", key);
            dla_free(key);
            break;
        }
        skip_space(r);
        if (r->p >= r->end || *r->p != ':') {
            dla_free(key);
            syntax(r, "':' expected after an object key");
            break;
        }
        r->p++;
        json_t *v = read_value(r, depth + 1);
        int failed = !v || json_object_set_new_nocheck(o, key, v); /* releases v */
        dla_free(key);
        if (failed) {
            if (v)
                no_memory(r);
            break;
        }
        skip_space(r);
        if (r->p < r->end && *r->p == '}') {
            r->p++;
            return o;
        }
        if (r->p >= r->end || *r->p != ',') {
            syntax(r, "',' or '}' expected in an object");
            break;
        }
        r->p++;
    }
    json_decref(o);
    return NULL;
}

static json_t *read_value(reader *r, int depth)
{
    if (depth > MAX_DEPTH)
        return syntax(r, "nesting deeper than %d", MAX_DEPTH);
    skip_space(r);
    if (r->p >= r->end)
        return syntax(r, "a value expected, found the end of the text");
    switch (*r->p) {
    case '{':
        return read_object(r, depth);
    case '[':
        return read_array(r, depth);
    case '"': {
        long n = read_string(r);
        if (n < 0)
            return NULL;
        /* Checked above: UTF-8 without U+0000. */
        json_t *s = json_stringn_nocheck(r->scratch, (size_t)n);
        return s ? s : no_memory(r);
    }
    case 't':
        if (literal(r, "true"))
            return json_true();
        break;
    case 'f':
        if (literal(r, "false"))
            return json_false();
        break;
    case 'n':
        if (literal(r, "null"))
            return json_null();
        break;
    default:
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))
            return read_number(r);
    }
    return syntax(r, "a value expected");
}

dla_status dla__json_read(const char *text, size_t len, json_t **out, char *why, size_t why_size,
                          size_t *at)
{
    *out = NULL;
    if (why_size)
        why[0] = '\0';
    *at = 0;
    reader r = {(const unsigned char *)text, (const unsigned char *)text + len,
                (const unsigned char *)text, NULL, DLA_OK, why, why_size, 0};
    r.scratch = dla_malloc(len + 1);
    if (!r.scratch) {
        no_memory(&r);
        return r.st;
    }
    json_t *root = read_value(&r, 0);
    if (root) {
        skip_space(&r);
        if (r.p != r.end) {
            syntax(&r, "text after the value");
            json_decref(root);
            root = NULL;
        }
    }
    dla_free(r.scratch);
    *at = r.at;
    if (!root)
        return r.st;
    *out = root;
    return DLA_OK;
}

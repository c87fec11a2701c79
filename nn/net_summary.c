/*
 * net_summary.c - the text display of a network, as MATLAB shows a
 * dlnetwork and analyzeNetwork its layers: one row per layer with its
 * activation for one observation, its learnables and its description.
 */
#include "nn/nn.h"

#include <stdio.h>
#include <string.h>

typedef struct out_buf {
    char *buf;
    size_t size, at;
    int total;
} out_buf;

static void emit(out_buf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(out_buf *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf ? o->buf + (o->at < o->size ? o->at : o->size) : NULL,
                      o->at < o->size ? o->size - o->at : 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        o->at += (size_t)n;
        o->total += n;
    }
}

/* s left-aligned in width display columns, then sep: printf's %-*s
 * counts bytes, and a name with an accented letter (layer names are any
 * UTF-8 text) pushed its row's columns one to the left. */
static void cell(out_buf *o, const char *s, int width, const char *sep)
{
    int pad = width - dla__text_columns(s, strlen(s));
    emit(o, "%s%*s%s", s, pad > 0 ? pad : 0, "", sep);
}

/* "17,310" */
static void thousands(long long v, char *buf, size_t size)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", v);
    size_t n = strlen(raw), at = 0;
    for (size_t i = 0; i < n && at + 2 < size; i++) {
        if (i && (n - i) % 3 == 0)
            buf[at++] = ',';
        buf[at++] = raw[i];
    }
    buf[at] = '\0';
}

typedef struct row {
    char num[12], act[128], desc[192];
    char *learn; /* whole: a fixed 160 bytes cut large attention layers'
                  * lists mid-number ("OutputBias 1" for 1024x1) */
} row;

/* A layer's learnables, "6,540 (QueryWeights 128x12, ...)" or "-", into o;
 * returns their count of elements. */
static long long learnables_text(out_buf *o, const dla_net *net, const dla_layer *l)
{
    const dla_table *lt = &net->tables[DLA__LEARNABLE];
    long long count = 0;
    for (int j = 0; net->initialized && j < l->nparams; j++)
        if (l->param[j].kind == DLA__LEARNABLE)
            count += dla_tensor_numel(lt->values[l->param[j].row]);
    if (!count) {
        emit(o, "-");
        return 0;
    }
    char c[32];
    thousands(count, c, sizeof c);
    emit(o, "%s (", c);
    for (int j = 0, first = 1; j < l->nparams; j++) {
        if (l->param[j].kind != DLA__LEARNABLE)
            continue;
        const dla_tensor *v = lt->values[l->param[j].row];
        int64_t dims[DLA_MAX_DIMS];
        char d[64];
        dla__dims_text(dla_tensor_dims(v, dims), dims, d, sizeof d);
        emit(o, "%s%s %s", first ? "" : ", ", lt->param[l->param[j].row], d);
        first = 0;
    }
    emit(o, ")");
    return count;
}

static int is_sequence(const dla_net *net)
{
    if (net->nconn != net->nlayers - 1)
        return 0;
    for (int k = 0; k < net->nconn; k++)
        if (net->conn[k].src != k || net->conn[k].dst != k + 1 || net->conn[k].sport)
            return 0;
    return 1;
}

DLA_API int dla_net_summary(const dla_net *net, char *buf, size_t size)
{
    out_buf o = {buf, size, 0, 0};
    if (buf && size)
        buf[0] = '\0';
    if (!net) {
        emit(&o, "(no network)\n");
        return o.total;
    }
    const dla_table *lt = &net->tables[DLA__LEARNABLE], *stt = &net->tables[DLA__STATE];
    emit(&o, "  dla_net with %d layer%s, %d connection%s, %d learnable%s, %d state%s%s\n",
         net->nlayers, net->nlayers == 1 ? "" : "s", net->nconn, net->nconn == 1 ? "" : "s",
         lt->count, lt->count == 1 ? "" : "s", stt->count, stt->count == 1 ? "" : "s",
         net->initialized ? "" : " (not initialized)");
    if (net->initialized) {
        emit(&o, "  Inputs:");
        for (int k = 0; k < net->ninputs; k++)
            emit(&o, " %s", net->input_names[k]);
        emit(&o, "   Outputs:");
        for (int k = 0; k < net->noutputs; k++)
            emit(&o, " %s", net->output_names[k]);
        emit(&o, "\n");
    }
    emit(&o, "\n");
    row *rows = dla__nn_calloc((size_t)(net->nlayers ? net->nlayers : 1), sizeof *rows);
    if (!rows) {
        emit(&o, "  (out of memory)\n");
        return o.total;
    }
    int wn = 4, wt = 4, wa = 11, wl = 10;
    long long total = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dla_layer *l = net->layers[i];
        row *r = &rows[i];
        snprintf(r->num, sizeof r->num, "%d", i + 1);
        const dla__shape *in = NULL;
        dla__shape in_shape;
        if (net->initialized) {
            dla__shape_str(&l->out, r->act, sizeof r->act);
            if (!l->kind->is_input && l->nin && net->src[i][0] >= 0) {
                in = dla__layer_out_shape(net->layers[net->src[i][0]], net->src_port[i][0]);
            } else if (!l->kind->is_input) {
                for (int k = 0; k < net->ninputs; k++)
                    if (net->inputs[k].layer == i)
                        in_shape = net->input_shapes[k], in = &in_shape;
            }
        } else {
            snprintf(r->act, sizeof r->act, "-");
        }
        out_buf measure = {NULL, 0, 0, 0};
        total += learnables_text(&measure, net, l);
        r->learn = dla__nn_malloc(measure.at + 1);
        if (r->learn) {
            out_buf text = {r->learn, measure.at + 1, 0, 0};
            learnables_text(&text, net, l);
        }
        l->kind->describe(&l->props, in, r->desc, sizeof r->desc);
        int a = dla__text_columns(l->name, strlen(l->name));
        int b = dla__text_columns(l->kind->display, strlen(l->kind->display));
        int c = dla__text_columns(r->act, strlen(r->act));
        const char *learn = r->learn ? r->learn : "(out of memory)";
        int d = dla__text_columns(learn, strlen(learn));
        wn = a > wn ? a : wn;
        wt = b > wt ? b : wt;
        wa = c > wa ? c : wa;
        wl = d > wl ? d : wl;
    }
    for (int i = -1; i < net->nlayers; i++) {
        emit(&o, "  %3s  ", i < 0 ? "#" : rows[i].num);
        cell(&o, i < 0 ? "Name" : net->layers[i]->name, wn, "  ");
        cell(&o, i < 0 ? "Type" : net->layers[i]->kind->display, wt, "  ");
        cell(&o, i < 0 ? "Activations" : rows[i].act, wa, "  ");
        cell(&o, i < 0 ? "Learnables" : rows[i].learn ? rows[i].learn : "(out of memory)", wl, "  ");
        emit(&o, "%s\n", i < 0 ? "Description" : rows[i].desc);
    }
    for (int i = 0; i < net->nlayers; i++)
        dla__nn_free(rows[i].learn);
    dla__nn_free(rows);
    if (!is_sequence(net) && net->nconn) {
        emit(&o, "\n  Connections:\n");
        for (int k = 0; k < net->nconn; k++)
            emit(&o, "    %s -> %s\n", net->conn[k].text[0], net->conn[k].text[1]);
    }
    char t[32];
    thousands(total, t, sizeof t);
    emit(&o, "\n  Total learnables: %s\n", net->initialized ? t : "-");
    if (buf && size && o.at >= size)
        buf[size - 1] = '\0';
    return o.total;
}

DLA_API dla_status dla_net_print(const dla_net *net, FILE *f)
{
    if (!f)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_net_print: argument f is NULL");
    int n = dla_net_summary(net, NULL, 0);
    char *buf = dla__nn_malloc((size_t)n + 1);
    if (!buf)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_net_print: out of memory");
    dla_net_summary(net, buf, (size_t)n + 1);
    fputs(buf, f);
    dla__nn_free(buf);
    return DLA_OK;
}

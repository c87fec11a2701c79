/*
 * train_table.c - the iteration table trainnet prints with Verbose, in the
 * layout of MATLAB's trainNetwork:
 *
 *   |======================================================================================================================|
 *   |  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Validation  |  Mini-batch  |  Validation  |  Base Learning  |
 *   |         |             |   (hh:mm:ss)   |   Accuracy   |   Accuracy   |     Loss     |     Loss     |      Rate       |
 *   |======================================================================================================================|
 *   |       1 |           1 |       00:00:00 |        9.38% |       10.05% |       2.5426 |       2.4190 |          0.0100 |
 *
 * With solver "lbfgs" the layout is
 *
 *   |  Iteration  |  Time Elapsed  |  Training  |  Validation  |  Gradient  |    Step    |
 *   |             |   (hh:mm:ss)   |    Loss    |     Loss     |    Norm    |    Norm    |
 *
 * (the whole data is each iteration's batch, so there is no epoch, and the
 * norms say how near the tolerances it is; the metrics' columns come
 * before the loss, as above).
 *
 * Columns come and go with the metrics and the validation data; a
 * validation cell stays blank at iterations without a validation, and a
 * figure that was computed but is NaN reads "NaN" (MATLAB's table does the
 * same), so a diverged loss never looks like one not computed.
 */
#include <dlaccel.h>

#include "nn/train_impl.h"

#include <math.h>
#include <string.h>

typedef enum kind { K_EPOCH, K_ITER, K_TIME, K_PERCENT, K_NUMBER } kind;

/* The most columns a table has (of the 12 figures a row can show). */
#define MAX_COLUMNS 10

typedef struct column {
    const char *top, *bottom; /* header lines, centred in the width */
    int width;                /* between the bars */
    kind k;
} column;

/* The columns of t in MATLAB's order, with the figure each shows. */
static int columns(const dla__train_table *t, column *c, int which[])
{
    int n = 0;
    const char *batch = t->lbfgs ? "Training" : "Mini-batch";
    if (!t->lbfgs)
        c[n] = (column){"Epoch", "", 9, K_EPOCH}, which[n++] = 0;
    c[n] = (column){"Iteration", "", 13, K_ITER}, which[n++] = 1;
    c[n] = (column){"Time Elapsed", "(hh:mm:ss)", 16, K_TIME}, which[n++] = 2;
    if (t->accuracy) {
        c[n] = (column){batch, "Accuracy", 14, K_PERCENT}, which[n++] = 3;
        if (t->validation)
            c[n] = (column){"Validation", "Accuracy", 14, K_PERCENT}, which[n++] = 4;
    }
    if (t->rmse) {
        c[n] = (column){batch, "RMSE", 14, K_NUMBER}, which[n++] = 5;
        if (t->validation)
            c[n] = (column){"Validation", "RMSE", 14, K_NUMBER}, which[n++] = 6;
    }
    c[n] = (column){batch, "Loss", 14, K_NUMBER}, which[n++] = 7;
    if (t->validation)
        c[n] = (column){"Validation", "Loss", 14, K_NUMBER}, which[n++] = 8;
    if (t->lbfgs) {
        c[n] = (column){"Gradient", "Norm", 14, K_NUMBER}, which[n++] = 10;
        c[n] = (column){"Step", "Norm", 14, K_NUMBER}, which[n++] = 11;
    } else {
        c[n] = (column){"Base Learning", "Rate", 17, K_NUMBER}, which[n++] = 9;
    }
    return n;
}

typedef struct out {
    char *buf;
    size_t size, len;
} out;

static void add(out *o, const char *s, int n)
{
    for (int i = 0; i < n; i++) {
        if (o->len + 1 < o->size)
            o->buf[o->len] = s[i];
        o->len++;
    }
    if (o->size)
        o->buf[o->len < o->size ? o->len : o->size - 1] = '\0';
}

static void centred(out *o, const char *s, int width)
{
    int len = (int)strlen(s), left = (width - len) / 2, right = width - len - left;
    for (int i = 0; i < left; i++)
        add(o, " ", 1);
    add(o, s, len);
    for (int i = 0; i < right; i++)
        add(o, " ", 1);
}

static int total_width(const column *c, int n)
{
    int w = 1;
    for (int i = 0; i < n; i++)
        w += c[i].width + 1;
    return w;
}

int dla__train_table_rule(const dla__train_table *t, char *buf, size_t size)
{
    column c[MAX_COLUMNS];
    int which[MAX_COLUMNS], n = columns(t, c, which), w = total_width(c, n);
    out o = {buf, buf ? size : 0, 0};
    add(&o, "|", 1);
    for (int i = 0; i < w - 2; i++)
        add(&o, "=", 1);
    add(&o, "|\n", 2);
    return (int)o.len;
}

int dla__train_table_header(const dla__train_table *t, char *buf, size_t size)
{
    column c[MAX_COLUMNS];
    int which[MAX_COLUMNS], n = columns(t, c, which);
    out o = {buf, buf ? size : 0, 0};
    char rule[512];
    int rn = dla__train_table_rule(t, rule, sizeof rule);
    add(&o, rule, rn);
    for (int line = 0; line < 2; line++) {
        add(&o, "|", 1);
        for (int i = 0; i < n; i++) {
            centred(&o, line ? c[i].bottom : c[i].top, c[i].width);
            add(&o, "|", 1);
        }
        add(&o, "\n", 1);
    }
    add(&o, rule, rn);
    return (int)o.len;
}

int dla__train_table_row(const dla__train_table *t, const dla_training_state *s, int validated,
                         char *buf, size_t size)
{
    column c[MAX_COLUMNS];
    int which[MAX_COLUMNS], n = columns(t, c, which);
    double fig[12] = {s->epoch, (double)s->iteration, s->time_elapsed, s->training_accuracy,
                      s->validation_accuracy, s->training_rmse, s->validation_rmse,
                      s->training_loss, s->validation_loss, s->learn_rate, s->gradient_norm,
                      s->step_norm};
    out o = {buf, buf ? size : 0, 0};
    add(&o, "|", 1);
    for (int i = 0; i < n; i++) {
        double v = fig[which[i]];
        char cell[64] = "";
        /* which[] 4, 6, 8: the validation columns. */
        int validation = which[i] == 4 || which[i] == 6 || which[i] == 8;
        if (c[i].k == K_TIME) {
            long sec = v > 0 ? (long)v : 0;
            snprintf(cell, sizeof cell, "%02ld:%02ld:%02ld", sec / 3600, sec / 60 % 60, sec % 60);
        } else if (validation && !validated) {
            cell[0] = '\0';
        } else if (isnan(v)) {
            snprintf(cell, sizeof cell, "NaN");
        } else if (c[i].k == K_EPOCH || c[i].k == K_ITER) {
            snprintf(cell, sizeof cell, "%.0f", v);
        } else if (c[i].k == K_PERCENT) {
            snprintf(cell, sizeof cell, "%.2f%%", v);
        } else if (isinf(v)) {
            snprintf(cell, sizeof cell, "%sInf", v < 0 ? "-" : "");
        } else {
            snprintf(cell, sizeof cell, fabs(v) >= 1e5 || (v != 0 && fabs(v) < 1e-4) ? "%.4e" : "%.4f", v);
        }
        char padded[80];
        snprintf(padded, sizeof padded, "%*s ", c[i].width - 1, cell);
        add(&o, padded, (int)strlen(padded));
        add(&o, "|", 1);
    }
    add(&o, "\n", 1);
    return (int)o.len;
}

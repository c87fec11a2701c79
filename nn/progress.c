/*
 * progress.c - the training progress display (MATLAB's
 * trainingProgressMonitor): a bar redrawn in place on a terminal, plain
 * lines at each tenth elsewhere, and the metrics recorded per iteration,
 * which nn/chart.c draws as SVG.
 *
 * A bar only makes sense where a carriage return moves back over it, so
 * the mode is chosen from isatty() on the stream unless the caller forces
 * one; logs and pipes get a line per tenth instead of thousands of
 * redraws.
 */
#define _POSIX_C_SOURCE 200809L /* fileno, isatty, clock_gettime */
#include <dlaccel.h>

#include "nn/chart.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_METRICS DLA__CHART_MAX_SERIES
#define BAR_WIDTH 30
#define TEXT_MAX 200

typedef struct metric {
    char name[64];
    int64_t n, cap;
    int64_t *x;
    double *v;
} metric;

enum { MODE_NONE = -2, MODE_LINES = -1, MODE_BAR = 1 };

struct dla_progress {
    FILE *stream;
    int mode;
    int64_t total, done;
    char text[TEXT_MAX + 1];
    char title[128], xlabel[64];
    int started, shown;   /* timer started; a bar line is on screen */
    double start, last_draw;
    int last_tenth;
    metric metrics[MAX_METRICS];
    int nmetrics;
    int nmarks, capmarks;
    int *mark_epoch;
    int64_t *mark_x;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

DLA_API dla_progress *dla_progress_create(const dla_progress_options *opts)
{
    dla_progress *p = dla_malloc(sizeof *p);
    if (!p) {
        dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_progress_create: out of memory");
        return NULL;
    }
    memset(p, 0, sizeof *p);
    dla_progress_options o = opts ? *opts : (dla_progress_options){0};
    p->stream = o.stream ? o.stream : stdout;
    if (o.bar == 0)
        p->mode = isatty(fileno(p->stream)) ? MODE_BAR : MODE_LINES;
    else
        p->mode = o.bar > 0 ? MODE_BAR : o.bar == -1 ? MODE_LINES : MODE_NONE;
    p->total = o.total > 0 ? o.total : 0;
    snprintf(p->title, sizeof p->title, "%s", o.title ? o.title : "Training Progress");
    snprintf(p->xlabel, sizeof p->xlabel, "%s", o.xlabel ? o.xlabel : "Iteration");
    p->last_tenth = -1;
    return p;
}

DLA_API void dla_progress_free(dla_progress *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nmetrics; i++) {
        dla_free(p->metrics[i].x);
        dla_free(p->metrics[i].v);
    }
    dla_free(p->mark_epoch);
    dla_free(p->mark_x);
    dla_free(p);
}

static metric *find_metric(const dla_progress *p, const char *name)
{
    for (int i = 0; i < p->nmetrics; i++)
        if (!strcmp(p->metrics[i].name, name))
            return (metric *)&p->metrics[i];
    return NULL;
}

DLA_API dla_status dla_progress_record(dla_progress *p, const char *name, int64_t x, double value)
{
    if (!p || !name || !*name || strlen(name) >= sizeof p->metrics[0].name)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_progress_record: argument %s",
                             !p ? "p is NULL" : "name: NULL, empty or longer than 63 characters");
    metric *m = find_metric(p, name);
    if (!m) {
        if (p->nmetrics == MAX_METRICS)
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "dla_progress_record: metric '%s': at most %d metrics", name,
                                 MAX_METRICS);
        m = &p->metrics[p->nmetrics++];
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "%s", name);
    }
    if (m->n == m->cap) {
        int64_t cap = m->cap ? m->cap * 2 : 256;
        int64_t *nx = dla_realloc(m->x, sizeof *nx * (size_t)cap);
        if (nx)
            m->x = nx;
        double *nv = nx ? dla_realloc(m->v, sizeof *nv * (size_t)cap) : NULL;
        if (nv)
            m->v = nv;
        if (!nx || !nv)
            return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_progress_record: out of memory");
        m->cap = cap;
    }
    m->x[m->n] = x;
    m->v[m->n] = value;
    m->n++;
    return DLA_OK;
}

DLA_API int64_t dla_progress_metric(const dla_progress *p, const char *name, const int64_t **x,
                                    const double **values)
{
    const metric *m = p && name ? find_metric(p, name) : NULL;
    if (!m)
        return -1;
    if (x)
        *x = m->x;
    if (values)
        *values = m->v;
    return m->n;
}

DLA_API dla_status dla_progress_mark_epoch(dla_progress *p, int epoch, int64_t x)
{
    if (!p)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_progress_mark_epoch: p is NULL");
    if (p->nmarks == p->capmarks) {
        int cap = p->capmarks ? p->capmarks * 2 : 16;
        int *ne = dla_realloc(p->mark_epoch, sizeof *ne * (size_t)cap);
        if (ne)
            p->mark_epoch = ne;
        int64_t *nx = ne ? dla_realloc(p->mark_x, sizeof *nx * (size_t)cap) : NULL;
        if (nx)
            p->mark_x = nx;
        if (!ne || !nx)
            return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_progress_mark_epoch: out of memory");
        p->capmarks = cap;
    }
    p->mark_epoch[p->nmarks] = epoch;
    p->mark_x[p->nmarks] = x;
    p->nmarks++;
    return DLA_OK;
}

/* "01:02:03"; hours keep growing past 99. */
static void hms(char *buf, size_t size, double s)
{
    long t = s > 0 && isfinite(s) ? (long)(s + 0.5) : 0;
    snprintf(buf, size, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* The fields bar and line share: percentage, count, elapsed and left. */
static void fields(const dla_progress *p, char *buf, size_t size, int line)
{
    char el[32], left[32] = "";
    double e = dla_progress_elapsed(p);
    hms(el, sizeof el, e);
    if (p->total && p->done > 0 && p->done < p->total)
        hms(left, sizeof left, e / (double)p->done * (double)(p->total - p->done));
    if (p->total)
        snprintf(buf, size, "%3d%%  %lld/%lld  %s %s %s",
                 (int)(100.0 * (double)p->done / (double)p->total), (long long)p->done,
                 (long long)p->total, el, *left ? (line ? "elapsed," : "<") : (line ? "elapsed" : ""),
                 *left ? left : "");
    else
        snprintf(buf, size, "%lld  %s%s", (long long)p->done, el, line ? " elapsed" : "");
    if (line && *left)
        strncat(buf, " left", size - strlen(buf) - 1);
}

static void draw_bar(dla_progress *p)
{
    char f[128], bar[BAR_WIDTH + 1];
    int filled = p->total ? (int)((double)BAR_WIDTH * (double)p->done / (double)p->total) : 0;
    if (filled > BAR_WIDTH)
        filled = BAR_WIDTH;
    for (int i = 0; i < BAR_WIDTH; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    fields(p, f, sizeof f, 0);
    /* \033[K clears what a longer previous line left behind. */
    fprintf(p->stream, "\r[%s] %s  %s\033[K", bar, f, p->text);
    fflush(p->stream);
    p->shown = 1;
    p->last_draw = now();
}

static void draw_line(dla_progress *p)
{
    char f[128];
    fields(p, f, sizeof f, 1);
    fprintf(p->stream, "[progress] %s  %s\n", f, p->text);
    fflush(p->stream);
}

DLA_API void dla_progress_update(dla_progress *p, int64_t done, const char *text)
{
    if (!p)
        return;
    if (!p->started) {
        p->started = 1;
        p->start = now();
    }
    p->done = done;
    if (text)
        snprintf(p->text, sizeof p->text, "%s", text);
    int end = p->total && done >= p->total;
    if (p->mode == MODE_BAR) {
        if (end || !p->shown || now() - p->last_draw >= 0.1)
            draw_bar(p);
    } else if (p->mode == MODE_LINES && p->total) {
        int tenth = (int)(10 * done / p->total);
        if (tenth > p->last_tenth && (tenth > 0 || done > 0)) {
            p->last_tenth = tenth;
            draw_line(p);
        }
    }
}

DLA_API void dla_progress_printf(dla_progress *p, const char *fmt, ...)
{
    if (!p || !fmt)
        return;
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (p->mode == MODE_BAR && p->shown)
        fputs("\r\033[K", p->stream);
    fputs(line, p->stream);
    size_t len = strlen(line);
    if (!len || line[len - 1] != '\n')
        fputc('\n', p->stream);
    if (p->mode == MODE_BAR && p->shown)
        draw_bar(p);
    fflush(p->stream);
}

DLA_API void dla_progress_finish(dla_progress *p, const char *line)
{
    if (!p)
        return;
    if (p->mode == MODE_BAR && p->started) {
        draw_bar(p);
        fputc('\n', p->stream);
    } else if (p->mode == MODE_LINES && p->started && p->last_tenth < 10) {
        draw_line(p);
    }
    p->shown = 0;
    p->last_tenth = 10;
    if (line)
        fprintf(p->stream, "%s\n", line);
    fflush(p->stream);
}

DLA_API double dla_progress_elapsed(const dla_progress *p)
{
    return p && p->started ? now() - p->start : 0.0;
}

/* The panel a metric goes to: its name without "Training"/"Validation". */
static const char *panel_of(const char *name, int *validation)
{
    *validation = !strncmp(name, "Validation", 10) && name[10];
    if (*validation)
        return name + 10;
    return !strncmp(name, "Training", 8) && name[8] ? name + 8 : name;
}

DLA_API dla_status dla_progress_write_chart(const dla_progress *p, const char *path)
{
    if (!p || !path || !*path)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_progress_write_chart: argument %s",
                             !p ? "p is NULL" : "path is NULL or empty");
    int points = 0;
    for (int i = 0; i < p->nmetrics; i++)
        points += p->metrics[i].n > 0;
    if (!points)
        return dla_set_error(DLA_ERR_STATE, "dla_progress_write_chart: %s: no metric recorded yet",
                             path);

    /* Panels in order of first appearance, Accuracy hoisted above Loss as
     * MATLAB stacks them. */
    dla__chart_series series[MAX_METRICS];
    dla__chart_panel panels[MAX_METRICS];
    int npanels = 0;
    for (int i = 0; i < p->nmetrics; i++) {
        int val;
        const char *pn = panel_of(p->metrics[i].name, &val);
        series[i] = (dla__chart_series){p->metrics[i].name, p->metrics[i].n, p->metrics[i].x,
                                        p->metrics[i].v, val};
        int k = 0;
        while (k < npanels && strcmp(panels[k].name, pn))
            k++;
        if (k == npanels)
            panels[npanels++] = (dla__chart_panel){.name = pn};
        panels[k].series[panels[k].nseries++] = &series[i];
    }
    for (int k = 1; k < npanels; k++)
        if (strstr(panels[k].name, "Accuracy") && !strstr(panels[0].name, "Accuracy")) {
            dla__chart_panel t = panels[k];
            memmove(&panels[1], &panels[0], sizeof *panels * (size_t)k);
            panels[0] = t;
            break;
        }
    dla__chart c = {p->title, p->xlabel, npanels, panels, p->nmarks, p->mark_epoch, p->mark_x};

    size_t n = strlen(path) + 16;
    char *tmp = dla_malloc(n);
    if (!tmp)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_progress_write_chart: out of memory");
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        dla_status st = dla_set_error(DLA_ERR_IO, "dla_progress_write_chart: %s: %s", path,
                                      strerror(errno));
        dla_free(tmp);
        return st;
    }
    dla_status st = dla__chart_write_svg(f, &c);
    int err = errno;
    if (fclose(f) != 0 && st == DLA_OK) {
        st = DLA_ERR_IO;
        err = errno;
    }
    if (st == DLA_OK && rename(tmp, path) != 0) {
        st = DLA_ERR_IO;
        err = errno;
    }
    if (st != DLA_OK) {
        remove(tmp);
        dla_set_error(st, "dla_progress_write_chart: %s: %s", path, strerror(err));
    }
    dla_free(tmp);
    return st;
}

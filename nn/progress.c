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
 *
 * The bar line never reaches the terminal's last column: a line that
 * wraps is left behind by the next \r as a stale line, one per redraw.
 * The width is read (TIOCGWINSZ) at every draw, at most ten a second, so
 * a resized window is followed without a SIGWINCH handler, which would
 * take the signal from the program. At a resize the terminal itself may
 * rewrap the line already drawn; that one line can stay behind.
 */
#define _DEFAULT_SOURCE /* fileno, isatty, clock_gettime, TIOCGWINSZ */
#include <dlaccel.h>

#include "core/handle.h" /* the handle checks (docs/checks.md) */
#include "core/file_special.h"
#include "nn/chart.h"
#include "nn/nn.h" /* dla__text_columns */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_METRICS DLA__CHART_MAX_SERIES
#define BAR_WIDTH 30 /* the bar's cells when the terminal has room */
#define BAR_MIN 8    /* ... and the fewest worth drawing */
#define TEXT_MIN 8   /* the caller's text is left out rather than cut shorter */
#define TEXT_MAX 200

typedef struct metric {
    char name[64];
    int64_t n, cap;
    int64_t *x;
    double *v;
} metric;

enum { MODE_NONE = -2, MODE_LINES = -1, MODE_BAR = 1 };

struct dla_progress {
    uint32_t magic; /* DLA__HANDLE_PROGRESS; DEAD once freed (docs/checks.md) */
    FILE *stream;
    int mode;
    int64_t total, done, done0; /* done0: at the first update, where the rate starts */
    char text[TEXT_MAX + 1];
    char title[128], xlabel[64];
    int started, shown;   /* timer started; a bar line is on screen */
    int finished;         /* dla_progress_finish ran; the next update starts anew */
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
    p->magic = DLA__HANDLE_PROGRESS;
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

/* Nonzero when p is a live display; else logs why for op. */
static int progress_live(const dla_progress *p, const char *op)
{
    if (p->magic == DLA__HANDLE_PROGRESS)
        return 1;
    dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", op, (const void *)p,
                p->magic == DLA__HANDLE_DEAD ? "a progress display freed already (freed twice, "
                "or used after dla_progress_free)" : "not a progress display handle");
    return 0;
}

/* NULL does nothing (as before); a dead handle also logs. */
#define LIVE(p, op) ((p) && progress_live((p), (op)))

DLA_API void dla_progress_free(dla_progress *p)
{
    if (!LIVE(p, "dla_progress_free"))
        return;
    for (int i = 0; i < p->nmetrics; i++) {
        dla_free(p->metrics[i].x);
        dla_free(p->metrics[i].v);
    }
    dla_free(p->mark_epoch);
    dla_free(p->mark_x);
    p->magic = DLA__HANDLE_DEAD; /* parked, not freed: a stale pointer reads "dead" */
    p->nmetrics = p->nmarks = 0;
    p->mark_epoch = NULL;
    p->mark_x = NULL;
    dla__quarantine(DLA__RING_OBJECTS, p);
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
    if (!progress_live(p, "dla_progress_record"))
        return DLA_ERR_INVALID_ARGUMENT;
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
    const metric *m = LIVE(p, "dla_progress_metric") && name ? find_metric(p, name) : NULL;
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
    if (!progress_live(p, "dla_progress_mark_epoch"))
        return DLA_ERR_INVALID_ARGUMENT;
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

/* v as an int, within +-1e9. A count far above the total (done 2^62 of
 * 10) gave a percentage past INT_MAX, whose conversion is undefined: the
 * line read "-2147483648%", and 10 * done overflowed before it. */
static int clamp_int(double v)
{
    return isnan(v) ? 0 : v >= 1e9 ? 1000000000 : v <= -1e9 ? -1000000000 : (int)v;
}

/* done of total as a whole percent, rounded to the nearest as the
 * display's other numbers are (the times to whole seconds, the accuracy to
 * its digit): 2 of 3 is 67%, it read 66%. A count short of the total never
 * reads 100% (999 of 1000 is 99%). */
static int percent(const dla_progress *p)
{
    int r = clamp_int(floor(100.0 * (double)p->done / (double)p->total + 0.5));
    return r >= 100 && p->done < p->total ? 99 : r;
}

/* Whole seconds of s, within 1e15 (a time left past LONG_MAX seconds, at a
 * slow rate towards a total near INT64_MAX, overflowed the same way). */
static long whole_seconds(double s)
{
    return s > 0 && isfinite(s) ? (long)(fmin(s, 1e15) + 0.5) : 0;
}

/* "01:02:03"; hours keep growing past 99. */
static void hms(char *buf, size_t size, double s)
{
    long t = whole_seconds(s);
    snprintf(buf, size, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* The bar's shorter form: "02:03" under an hour, "1:02:03" past it. */
static void mss(char *buf, size_t size, double s)
{
    long t = whole_seconds(s);
    if (t < 3600)
        snprintf(buf, size, "%02ld:%02ld", t / 60, t % 60);
    else
        snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* Iterations per second since the first update; 0 before a second one.
 * The first update's iteration is left out of the count, so the trace
 * recording of an accelerated first call does not drag the rate down for
 * the rest of training. */
static double rate(const dla_progress *p)
{
    double dt = dla_progress_elapsed(p);
    int64_t dn = p->done - p->done0;
    return dn > 0 && dt > 0 ? (double)dn / dt : 0.0;
}

/* "42.1 it/s", "12.5k it/s", or "3.2 s/it" when an iteration takes more
 * than a second (tqdm's convention); "" while there is no rate yet. */
static void rate_text(const dla_progress *p, char *buf, size_t size)
{
    double r = rate(p);
    if (!(r > 0) || !isfinite(r))
        buf[0] = '\0';
    else if (r >= 999.5e3)
        snprintf(buf, size, "%.1fM it/s", r / 1e6);
    else if (r >= 999.5)
        snprintf(buf, size, "%.1fk it/s", r / 1e3);
    else if (r >= 99.95)
        snprintf(buf, size, "%.0f it/s", r);
    else if (r >= 1)
        snprintf(buf, size, "%.1f it/s", r);
    else
        snprintf(buf, size, "%.1f s/it", 1.0 / r);
}

/* Seconds left at the current rate; negative when unknown. */
static double seconds_left(const dla_progress *p)
{
    double r = rate(p);
    if (!p->total || p->done >= p->total || !(r > 0))
        return -1;
    return (double)(p->total - p->done) / r;
}

/* The plain line's fields: percentage, count, elapsed, left and rate. */
static void line_fields(const dla_progress *p, char *buf, size_t size)
{
    char el[32], left[32], r[32];
    hms(el, sizeof el, dla_progress_elapsed(p));
    double s = seconds_left(p);
    rate_text(p, r, sizeof r);
    int n;
    if (p->total)
        n = snprintf(buf, size, "%3d%%  %lld/%lld  %s elapsed", percent(p),
                     (long long)p->done, (long long)p->total, el);
    else
        n = snprintf(buf, size, "%lld  %s elapsed", (long long)p->done, el);
    if (s >= 0 && n > 0 && (size_t)n < size) {
        hms(left, sizeof left, s);
        n += snprintf(buf + n, size - (size_t)n, ", %s left", left);
    }
    if (*r && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "  %s", r);
}

/* Columns the bar line may use: the terminal's width, read again at every
 * draw so a resized window is followed without a SIGWINCH handler (which
 * would take the signal from the program); COLUMNS where the stream is no
 * terminal (a forced bar), else 80. */
static int stream_columns(FILE *f)
{
    struct winsize ws;
    int fd = fileno(f);
    if (fd >= 0 && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *c = getenv("COLUMNS");
    char *end;
    long v = c ? strtol(c, &end, 10) : 0;
    if (c && end != c && *end == '\0' && v > 0 && v <= 100000)
        return (int)v;
    return 80;
}

/* Bytes of text that fit in cols columns: all of it, else up to the last
 * field separator ("  ") that fits, else up to the last word that fits,
 * else a cut between characters. */
static size_t fit_text(const char *text, int cols)
{
    size_t n = strlen(text);
    if (dla__text_columns(text, n) <= cols)
        return n;
    size_t cut = 0;
    for (int c = 0; text[cut] && (c < cols || ((unsigned char)text[cut] & 0xC0) == 0x80); cut++)
        c += ((unsigned char)text[cut] & 0xC0) != 0x80;
    for (int sep = 2; sep >= 1; sep--)
        for (size_t i = cut + 1; i >= (size_t)sep + 1; i--) {
            /* A separator of sep blanks ends at i - 1 (the cut itself may
             * fall on one). */
            int blanks = 1;
            for (int k = 1; k <= sep; k++)
                blanks &= text[i - 1 - (size_t)(sep - k)] == ' ';
            if (!blanks)
                continue;
            size_t k = i - (size_t)sep;
            while (k > 0 && text[k - 1] == ' ')
                k--;
            if (k > 0)
                return k;
        }
    return cut;
}

/* The bar line for a terminal cols wide, at most cols - 1 columns (a line
 * that fills the last column wraps at once on some terminals, and the
 * next \r then leaves it behind as a stale line). What does not fit goes
 * in this order: the text is shortened, the bar shrinks from BAR_WIDTH to
 * BAR_MIN, then the times, the rate, the bar and the count are dropped. */
static void compose_bar(const dla_progress *p, int cols, char *out, size_t size)
{
    char pct[16] = "", count[48], times[64] = "", r[32];
    if (p->total)
        snprintf(pct, sizeof pct, "%3d%%", percent(p));
    if (p->total)
        snprintf(count, sizeof count, "%lld/%lld", (long long)p->done, (long long)p->total);
    else
        snprintf(count, sizeof count, "%lld", (long long)p->done);
    char el[24], left[24];
    mss(el, sizeof el, dla_progress_elapsed(p));
    double s = seconds_left(p);
    if (s >= 0) {
        mss(left, sizeof left, s);
        snprintf(times, sizeof times, "%s < %s", el, left);
    } else {
        snprintf(times, sizeof times, "%s", el);
    }
    rate_text(p, r, sizeof r);

    const int avail = cols > 1 ? cols - 1 : 1;
    /* Levels, from everything down to the percentage (or count) alone. */
    for (int level = 0; level < 5; level++) {
        const int with_bar = level <= 2, with_times = level == 0, with_rate = level <= 1,
                  with_count = level <= 3 || !p->total;
        char fixed[192];
        int n = snprintf(fixed, sizeof fixed, "%s", pct);
        const char *parts[] = {with_count ? count : "", with_times ? times : "",
                               with_rate ? r : ""};
        for (int i = 0; i < 3; i++)
            if (*parts[i] && n >= 0 && (size_t)n < sizeof fixed)
                n += snprintf(fixed + n, sizeof fixed - (size_t)n, "%s%s", n ? "  " : "", parts[i]);
        int flen = dla__text_columns(fixed, strlen(fixed));
        int need = flen + (with_bar ? 3 + BAR_MIN : 0);
        if (need > avail && level < 4)
            continue;
        int room = avail - flen - (with_bar ? 3 + BAR_MIN : 0); /* for the text and a longer bar */
        size_t tlen = 0;
        if (*p->text && room >= 2 + TEXT_MIN)
            tlen = fit_text(p->text, room - 2);
        int tcols = tlen ? dla__text_columns(p->text, tlen) + 2 : 0;
        int bw = 0;
        if (with_bar) {
            bw = BAR_MIN + (room - tcols);
            /* room >= 0 whenever the bar is drawn (need <= avail); the
             * lower clamp says so to the compiler (-Wstringop-overflow in
             * the sanitizer build) and to the reader. */
            bw = bw > BAR_WIDTH ? BAR_WIDTH : bw < 0 ? 0 : bw;
        }
        char bar[BAR_WIDTH + 1];
        int filled = p->total ? clamp_int((double)bw * (double)p->done / (double)p->total) : 0;
        filled = filled > bw ? bw : filled < 0 ? 0 : filled;
        for (int i = 0; i < bw; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[bw] = '\0';
        if (with_bar)
            snprintf(out, size, "[%s] %s%s%.*s", bar, fixed, tlen ? "  " : "", (int)tlen, p->text);
        else
            snprintf(out, size, "%s%s%.*s", fixed, tlen ? "  " : "", (int)tlen, p->text);
        /* The last resort on a very narrow terminal: cut the line. */
        size_t keep = fit_text(out, avail);
        out[keep] = '\0';
        return;
    }
}

static void draw_bar(dla_progress *p)
{
    char line[512];
    compose_bar(p, stream_columns(p->stream), line, sizeof line);
    /* \033[K clears what a longer previous line left behind. */
    fprintf(p->stream, "\r%s\033[K", line);
    fflush(p->stream);
    p->shown = 1;
    p->last_draw = now();
}

static void draw_line(dla_progress *p)
{
    char f[160];
    line_fields(p, f, sizeof f);
    fprintf(p->stream, "[progress] %s  %s\n", f, p->text);
    fflush(p->stream);
}

DLA_API void dla_progress_update(dla_progress *p, int64_t done, const char *text)
{
    if (!LIVE(p, "dla_progress_update"))
        return;
    /* A new bar after dla_progress_finish, as documented: the plain lines
     * stayed at the tenth the finish set, so a second run printed none,
     * and its rate and time left were counted from the first run's start. */
    if (p->finished) {
        p->finished = 0;
        p->started = 0;
        p->last_tenth = -1;
    }
    if (!p->started) {
        p->started = 1;
        p->start = now();
        p->done0 = done;
    }
    p->done = done;
    if (text) {
        snprintf(p->text, sizeof p->text, "%s", text);
        /* A newline or tab in it would break the one line the bar is. */
        for (char *c = p->text; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = ' ';
    }
    int end = p->total && done >= p->total;
    if (p->mode == MODE_BAR) {
        if (end || !p->shown || now() - p->last_draw >= 0.1)
            draw_bar(p);
    } else if (p->mode == MODE_LINES && p->total) {
        int tenth = done > INT64_MAX / 10 || done < INT64_MIN / 10
                        ? clamp_int(10.0 * (double)done / (double)p->total)
                        : clamp_int((double)(10 * done / p->total));
        if (tenth > p->last_tenth && (tenth > 0 || done > 0)) {
            p->last_tenth = tenth;
            draw_line(p);
        }
    }
}

DLA_API void dla_progress_printf(dla_progress *p, const char *fmt, ...)
{
    if (!LIVE(p, "dla_progress_printf") || !fmt)
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
    if (!LIVE(p, "dla_progress_finish"))
        return;
    if (p->mode == MODE_BAR && p->started) {
        draw_bar(p);
        fputc('\n', p->stream);
    } else if (p->mode == MODE_LINES && p->started && p->last_tenth < 10) {
        draw_line(p);
    }
    p->shown = 0;
    p->last_tenth = 10;
    p->finished = 1;
    if (line)
        fprintf(p->stream, "%s\n", line);
    fflush(p->stream);
}

DLA_API double dla_progress_elapsed(const dla_progress *p)
{
    return LIVE(p, "dla_progress_elapsed") && p->started ? now() - p->start : 0.0;
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
    if (!progress_live(p, "dla_progress_write_chart"))
        return DLA_ERR_INVALID_ARGUMENT;
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
    /* /dev/null, a FIFO: written in place, never renamed over. */
    const int in_place = dla__path_is_special(path);
    FILE *f = fopen(in_place ? path : tmp, "w");
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
    if (st == DLA_OK && !in_place && rename(tmp, path) != 0) {
        st = DLA_ERR_IO;
        err = errno;
    }
    if (st != DLA_OK) {
        if (!in_place)
            remove(tmp);
        dla_set_error(st, "dla_progress_write_chart: %s: %s", path, strerror(err));
    }
    dla_free(tmp);
    return st;
}

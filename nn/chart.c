/*
 * chart.c - draws the training chart as SVG text: one panel per group of
 * metrics (accuracy above loss, as MATLAB's training plot), a shared
 * iteration axis, alternating bands for epochs, training series as a light
 * raw line under a smoothed one, validation series as dashes with markers,
 * and a legend with each series' last value.
 *
 * Written by hand: the file is a few hundred elements, and SVG needs no
 * library. Everything user-given (names, title) is escaped.
 */
#include "nn/chart.h"

#include <math.h>
#include <string.h>

#define WIDTH 960.0
#define LEFT 72.0
#define RIGHT 200.0
#define TITLE_H 46.0
#define PANEL_H 250.0
#define PANEL_TOP 26.0
#define PANEL_BOTTOM 44.0
#define MAX_POINTS 3000
#define MAX_TICKS 100 /* lines of a grid; a nice step gives about 10 */

typedef struct palette {
    const char *dark, *light;
} palette;

static const palette colors[] = {
    {"#0072BD", "#A9CCEB"}, {"#D95319", "#F3BBA0"}, {"#77AC30", "#C9E2A8"},
    {"#7E2F8E", "#D8BCDF"}, {"#4DBEEE", "#BDE7F9"}, {"#A2142F", "#E4A6B2"},
};
#define NCOLORS (int)(sizeof colors / sizeof colors[0])

/* The length of the UTF-8 sequence at s that XML 1.0 takes as one
 * character (1 to 4 bytes), or 0 when it is not one: a stray or
 * truncated byte, an overlong form, a surrogate, U+FFFE or U+FFFF, or a
 * code point past U+10FFFF. */
static int utf8_char(const unsigned char *s)
{
    const unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] > 0x8F) || (c == 0xEF && s[1] == 0xBF && s[2] >= 0xBE))
        return 0;
    return n;
}

static void put_escaped(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        /* The file says it is UTF-8: a title or metric name in Latin-1
         * ("caf\xe9") was copied byte for byte, and browsers refused the
         * whole chart as not well-formed. Such a byte becomes U+FFFD. */
        const int n = utf8_char((const unsigned char *)s);
        if (n == 0) {
            fputs("\xEF\xBF\xBD", f);
            continue;
        }
        if (n > 1) {
            fwrite(s, 1, (size_t)n, f);
            s += n - 1;
            continue;
        }
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            /* Control characters are not allowed in XML 1.0 text. */
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, f);
        }
    }
}

/* A step of 1, 2 or 5 times a power of ten giving about n intervals. */
static double nice_step(double range, int n)
{
    if (!(range > 0))
        return 1;
    double raw = range / n, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

static void fmt_num(char *buf, size_t size, double v)
{
    if (fabs(v) < 1e-12)
        v = 0;
    snprintf(buf, size, "%.4g", v);
}

typedef struct frame {
    double x0, x1, y0, y1;       /* data range */
    double px, py, pw, ph;       /* plot area in pixels */
} frame;

static double sx(const frame *fr, double x) { return fr->px + (x - fr->x0) / (fr->x1 - fr->x0) * fr->pw; }
static double sy(const frame *fr, double y) { return fr->py + fr->ph - (y - fr->y0) / (fr->y1 - fr->y0) * fr->ph; }

static int is_percent(const char *panel) { return panel && strstr(panel, "Accuracy") != NULL; }

/* The y range of a panel: percent panels 0..100; others from 0 (or the
 * lowest value, when negative) to a tick above the highest. */
static void panel_range(const dla__chart_panel *p, double *lo, double *hi)
{
    if (is_percent(p->name)) {
        *lo = 0;
        *hi = 100;
        return;
    }
    double mn = INFINITY, mx = -INFINITY;
    for (int s = 0; s < p->nseries; s++)
        for (int64_t i = 0; i < p->series[s]->n; i++) {
            double v = p->series[s]->y[i];
            if (isfinite(v)) {
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
        }
    if (!isfinite(mn)) {
        *lo = 0;
        *hi = 1;
        return;
    }
    *lo = mn < 0 ? mn : 0;
    /* Past 2^53 a double has no room for + 1: a lone value of -1e20 kept
     * the range empty, and the grid below never got past its first line
     * (the chart grew without end). The range then takes the value's own
     * size. */
    if (mx <= *lo)
        mx = *lo + 1;
    if (mx <= *lo)
        mx = *lo + fabs(*lo);
    double step = nice_step(mx - *lo, 5);
    *lo = floor(*lo / step) * step;
    *hi = ceil(mx / step) * step;
    if (*hi <= *lo)
        *hi = *lo + step;
}

/* Points of a series as an SVG points list; every stride-th, and NaNs
 * break the line into several polylines. */
static void polyline(FILE *f, const frame *fr, const int64_t *x, const double *y, int64_t n,
                     const char *style)
{
    int64_t stride = n > MAX_POINTS ? (n + MAX_POINTS - 1) / MAX_POINTS : 1;
    int open = 0;
    for (int64_t i = 0; i < n; i += stride) {
        int64_t j = i + stride < n ? i : n - 1; /* keep the last point */
        if (!isfinite(y[j])) {
            if (open)
                fputs("\"/>\n", f);
            open = 0;
            continue;
        }
        if (!open)
            fprintf(f, "<polyline %s points=\"", style);
        fprintf(f, "%s%.1f,%.1f", open ? " " : "", sx(fr, (double)x[j]), sy(fr, y[j]));
        open = 1;
    }
    if (open)
        fputs("\"/>\n", f);
}

/* Exponential smoothing with bias correction (as TensorBoard smooths), so
 * the first points are not pulled toward zero. NaNs are skipped. */
static void smooth(const double *y, int64_t n, double *out)
{
    double a = n > 200 ? 0.9 : n > 40 ? 0.75 : 0.5, s = 0, w = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(y[i])) {
            out[i] = NAN;
            continue;
        }
        s = a * s + (1 - a) * y[i];
        w = a * w + (1 - a);
        out[i] = s / w;
    }
}

static double last_finite(const dla__chart_series *s)
{
    for (int64_t i = s->n; i > 0; i--)
        if (isfinite(s->y[i - 1]))
            return s->y[i - 1];
    return NAN;
}

static void draw_panel(FILE *f, const dla__chart *c, int k, double top, double xlo, double xhi)
{
    const dla__chart_panel *p = &c->panels[k];
    frame fr = {.x0 = xlo, .x1 = xhi, .px = LEFT, .py = top + PANEL_TOP,
                .pw = WIDTH - LEFT - RIGHT, .ph = PANEL_H - PANEL_TOP - PANEL_BOTTOM};
    panel_range(p, &fr.y0, &fr.y1);
    char num[32];

    /* Epoch bands, every other one shaded. */
    for (int e = 0; e < c->nmarks; e++) {
        double a = (double)c->mark_x[e], b = e + 1 < c->nmarks ? (double)c->mark_x[e + 1] : xhi;
        if (a < xlo)
            a = xlo;
        if (b > xhi)
            b = xhi;
        if (b <= a)
            continue;
        if (c->mark_epoch[e] % 2 == 0)
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#F0F0F0\"/>\n",
                    sx(&fr, a), fr.py, sx(&fr, b) - sx(&fr, a), fr.ph);
        if (k == 0 && sx(&fr, b) - sx(&fr, a) > 48)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#777777\">Epoch %d</text>\n",
                    sx(&fr, a) + 4, fr.py + 13, c->mark_epoch[e]);
    }

    /* Grid and ticks, counted: v += step stops moving once the step is
     * below half a unit in the last place of v (iterations near 2^63, or
     * values past 2^53), and such a loop wrote lines until the disk was
     * full. MAX_TICKS is far more than any nice step gives. */
    double ys = nice_step(fr.y1 - fr.y0, 5);
    for (int i = 0; i <= MAX_TICKS; i++) {
        const double v = fr.y0 + i * ys;
        if (!(v <= fr.y1 + ys * 1e-6))
            break;
        fmt_num(num, sizeof num, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#DDDDDD\"/>\n",
                fr.px, sy(&fr, v), fr.px + fr.pw, sy(&fr, v));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n",
                fr.px - 6, sy(&fr, v) + 4, num);
    }
    double xs = nice_step(xhi - xlo, 8);
    for (int i = 0; i <= MAX_TICKS; i++) {
        const double v = ceil(xlo / xs) * xs + i * xs;
        if (!(v <= xhi + xs * 1e-6))
            break;
        fmt_num(num, sizeof num, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999999\"/>\n",
                sx(&fr, v), fr.py + fr.ph, sx(&fr, v), fr.py + fr.ph + 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
                sx(&fr, v), fr.py + fr.ph + 17, num);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"#999999\"/>\n", fr.px, fr.py, fr.pw, fr.ph);
    fprintf(f, "<text x=\"0\" y=\"0\" font-size=\"13\" text-anchor=\"middle\" "
               "transform=\"translate(20 %.1f) rotate(-90)\">", fr.py + fr.ph / 2);
    put_escaped(f, p->name);
    if (is_percent(p->name))
        fputs(" (%)", f);
    fputs("</text>\n", f);
    if (k == c->npanels - 1) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\">",
                fr.px + fr.pw / 2, fr.py + fr.ph + 36);
        put_escaped(f, c->xlabel);
        fputs("</text>\n", f);
    }

    /* Series, clipped to the plot area. */
    fprintf(f, "<clipPath id=\"plot%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
               "</clipPath>\n<g clip-path=\"url(#plot%d)\">\n", k, fr.px, fr.py, fr.pw, fr.ph, k);
    int ntrain = 0;
    for (int s = 0; s < p->nseries; s++) {
        const dla__chart_series *se = p->series[s];
        if (se->validation) {
            polyline(f, &fr, se->x, se->y, se->n,
                     "fill=\"none\" stroke=\"#000000\" stroke-width=\"1.2\" stroke-dasharray=\"5 3\"");
            int64_t stride = se->n > 400 ? (se->n + 399) / 400 : 1;
            for (int64_t i = 0; i < se->n; i += stride)
                if (isfinite(se->y[i]))
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#000000\"/>\n",
                            sx(&fr, (double)se->x[i]), sy(&fr, se->y[i]));
            continue;
        }
        const palette *pal = &colors[(k + ntrain++) % NCOLORS];
        char style[160];
        snprintf(style, sizeof style, "fill=\"none\" stroke=\"%s\" stroke-width=\"1\"", pal->light);
        polyline(f, &fr, se->x, se->y, se->n, style);
        double *sm = se->n ? dla_malloc(sizeof *sm * (size_t)se->n) : NULL;
        if (sm) {
            smooth(se->y, se->n, sm);
            snprintf(style, sizeof style, "fill=\"none\" stroke=\"%s\" stroke-width=\"2\"", pal->dark);
            polyline(f, &fr, se->x, sm, se->n, style);
            dla_free(sm);
        }
    }
    fputs("</g>\n", f);

    /* Legend, right of the plot. */
    double lx = fr.px + fr.pw + 16, ly = fr.py + 8;
    ntrain = 0;
    for (int s = 0; s < p->nseries; s++, ly += 34) {
        const dla__chart_series *se = p->series[s];
        const char *stroke = se->validation ? "#000000" : colors[(k + ntrain++) % NCOLORS].dark;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"%s/>\n", lx, ly, lx + 22, ly, stroke,
                se->validation ? " stroke-dasharray=\"5 3\"" : "");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", lx + 28, ly + 4);
        put_escaped(f, se->name);
        fputs("</text>\n", f);
        double last = last_finite(se);
        if (isfinite(last)) {
            fmt_num(num, sizeof num, last);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#666666\">last %s%s</text>\n",
                    lx + 28, ly + 18, num, is_percent(p->name) ? "%" : "");
        }
    }
}

dla_status dla__chart_write_svg(FILE *f, const dla__chart *c)
{
    double xlo = INFINITY, xhi = -INFINITY;
    for (int k = 0; k < c->npanels; k++)
        for (int s = 0; s < c->panels[k].nseries; s++)
            for (int64_t i = 0; i < c->panels[k].series[s]->n; i++) {
                double x = (double)c->panels[k].series[s]->x[i];
                xlo = x < xlo ? x : xlo;
                xhi = x > xhi ? x : xhi;
            }
    if (!isfinite(xlo))
        xlo = 0, xhi = 1;
    if (xlo > 0 && xlo <= 1)
        xlo = 0;
    if (xhi <= xlo)
        xhi = xlo + 1;
    if (xhi <= xlo) /* one iteration past 2^53: see panel_range */
        xhi = xlo + fabs(xlo);
    double height = TITLE_H + PANEL_H * c->npanels + 10;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
               "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, "
               "sans-serif\">\n", WIDTH, height, WIDTH, height);
    fputs("<title>", f);
    put_escaped(f, c->title);
    fputs("</title>\n", f);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#FFFFFF\"/>\n", WIDTH,
            height);
    fprintf(f, "<text x=\"%.1f\" y=\"28\" font-size=\"16\" font-weight=\"bold\" "
               "text-anchor=\"middle\">", LEFT + (WIDTH - LEFT - RIGHT) / 2);
    put_escaped(f, c->title);
    fputs("</text>\n", f);
    for (int k = 0; k < c->npanels; k++)
        draw_panel(f, c, k, TITLE_H + PANEL_H * k, xlo, xhi);
    fputs("</svg>\n", f);
    return ferror(f) ? DLA_ERR_IO : DLA_OK;
}

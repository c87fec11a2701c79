/*
 * chart.h - the SVG chart of training metrics that nn/progress.c keeps and
 * nn/chart.c draws: panels of series of (iteration, value) points over a
 * shared x axis, with epoch bands behind them.
 */
#ifndef DLA_NN_CHART_H
#define DLA_NN_CHART_H

#include <dlaccel.h>
#include <stdio.h>

#define DLA__CHART_MAX_SERIES 16

typedef struct dla__chart_series {
    const char *name;
    int64_t n;
    const int64_t *x;
    const double *y;
    int validation; /* dashed black with markers, not smoothed */
} dla__chart_series;

typedef struct dla__chart_panel {
    const char *name; /* "Loss", "Accuracy" */
    int nseries;
    const dla__chart_series *series[DLA__CHART_MAX_SERIES];
} dla__chart_panel;

typedef struct dla__chart {
    const char *title, *xlabel;
    int npanels;
    const dla__chart_panel *panels;
    /* Epoch k starts at mark_x[k - first]; nmarks of them. */
    int nmarks;
    const int *mark_epoch;
    const int64_t *mark_x;
} dla__chart;

/* Writes c as a standalone SVG document to f. DLA_ERR_IO when a write
 * fails. */
dla_status dla__chart_write_svg(FILE *f, const dla__chart *c);

#endif

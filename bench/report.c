/*
 * report.c - the text table, the ratio lines and the JSON document.
 */
#include "bench/report.h"

#include <omp.h>
#include <string.h>

double bench_rate(const bench_record *r)
{
    double seconds = r->stats.median_ms * 1e-3;
    return seconds > 0 ? r->workload->work / seconds * 1e-9 : 0.0;
}

static const char *rate_unit(const bench_workload *w)
{
    return w->unit == BENCH_FLOPS ? "GFLOP/s" : "GB/s";
}

void bench_report_head(FILE *out)
{
    fprintf(out, "%-10s %-16s %10s %10s %10s %16s %7s\n", "device", "workload", "median_ms",
            "min_ms", "max_ms", "rate", "reps");
}

void bench_report_line(FILE *out, const bench_record *r)
{
    if (r->status != DLA_OK) {
        fprintf(out, "%-10s %-16s failed: %s\n", r->device, r->workload->name, r->error);
    } else {
        char rate[32];
        double v = bench_rate(r);
        snprintf(rate, sizeof rate, v >= 10 ? "%.1f %s" : "%.3g %s", v, rate_unit(r->workload));
        /* Microsecond workloads (dispatch overhead) need the extra places. */
        int places = r->stats.median_ms < 0.1 ? 5 : 3;
        fprintf(out, "%-10s %-16s %10.*f %10.*f %10.*f %16s %7d\n", r->device, r->workload->name,
                places, r->stats.median_ms, places, r->stats.min_ms, places, r->stats.max_ms,
                rate, r->stats.reps);
    }
    fflush(out);
}

/* The reference record a device record is compared with: the one timed
 * beside it. */
static const bench_record *reference_of(const bench_record *r, const bench_record *recs,
                                        size_t n)
{
    if (r->is_reference || r->status != DLA_OK || !r->workload->reference)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (recs[i].is_reference && recs[i].status == DLA_OK && recs[i].against &&
            strcmp(recs[i].against, r->device) == 0 &&
            strcmp(recs[i].workload->name, r->workload->reference) == 0)
            return &recs[i];
    return NULL;
}

static void target_text(char *buf, size_t size, double ratio, double target)
{
    if (target > 0)
        snprintf(buf, size, "target >= %.2f: %s", target, ratio >= target ? "met" : "MISSED");
    else
        snprintf(buf, size, "no target");
}

int bench_report_ratios(FILE *out, const bench_record *recs, size_t n)
{
    int lines = 0;
    for (size_t i = 0; i < n; i++) {
        const bench_record *r = &recs[i], *ref = reference_of(r, recs, n);
        if (!ref)
            continue;
        double rate = bench_rate(r), ref_rate = bench_rate(ref), ratio = rate / ref_rate;
        char target[48];
        target_text(target, sizeof target, ratio, r->workload->target);
        if (r->workload->unit == BENCH_FLOPS)
            fprintf(out, "%s on %s: plugin/%s = %.2f (%s)\n", r->workload->label, r->device,
                    ref->workload->label, ratio, target);
        else
            fprintf(out, "%s on %s: %.1f %s = %.2f of %s %.1f %s (%s)\n", r->workload->label,
                    r->device, rate, rate_unit(r->workload), ratio, ref->workload->label,
                    ref_rate, rate_unit(ref->workload), target);
        lines++;
    }
    return lines;
}

void bench_report_notes(FILE *out, const bench_record *recs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (recs[i].status == DLA_OK && recs[i].note[0])
            fprintf(out, "%s on %s: %s\n", recs[i].workload->label, recs[i].device, recs[i].note);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void json_record(FILE *out, const bench_record *r)
{
    fputs("{\"device\": ", out);
    json_string(out, r->device);
    fputs(", \"workload\": ", out);
    json_string(out, r->workload->name);
    fprintf(out,
            ", \"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, \"%s\": %.3f, "
            "\"reps\": %d",
            r->stats.median_ms, r->stats.min_ms, r->stats.max_ms,
            r->workload->unit == BENCH_FLOPS ? "gflops" : "gbps", bench_rate(r), r->stats.reps);
    if (r->workload->batch > 0) /* per-sample figures need it */
        fprintf(out, ", \"batch\": %lld", (long long)r->workload->batch);
    if (r->against) {
        fputs(", \"against\": ", out);
        json_string(out, r->against);
    }
    if (r->note[0]) {
        fputs(", \"note\": ", out);
        json_string(out, r->note);
    }
    fputc('}', out);
}

static void json_ratio(FILE *out, const bench_record *r, const bench_record *ref)
{
    double ratio = bench_rate(r) / bench_rate(ref);
    fputs("{\"device\": ", out);
    json_string(out, r->device);
    fputs(", \"workload\": ", out);
    json_string(out, r->workload->name);
    fputs(", \"reference\": ", out);
    json_string(out, ref->workload->name);
    fputs(", \"label\": ", out);
    json_string(out, r->workload->label);
    fprintf(out, ", \"ratio\": %.4f", ratio);
    if (r->workload->target > 0)
        fprintf(out, ", \"target\": %.2f, \"met\": %s}", r->workload->target,
                ratio >= r->workload->target ? "true" : "false");
    else
        fputs(", \"target\": null, \"met\": null}", out);
}

static void json_error(FILE *out, const bench_record *r)
{
    fputs("{\"device\": ", out);
    json_string(out, r->device);
    fputs(", \"workload\": ", out);
    json_string(out, r->workload->name);
    fputs(", \"status\": ", out);
    json_string(out, dla_status_str(r->status));
    fputs(", \"message\": ", out);
    json_string(out, r->error);
    fputc('}', out);
}

/* Opens item number count of an array: the separator, then the indent. */
static void json_item(FILE *out, int count)
{
    fputs(count ? ",\n    " : "\n    ", out);
}

static void json_close(FILE *out, int count, const char *after)
{
    fprintf(out, "%s]%s", count ? "\n  " : "", after);
}

void bench_report_json(FILE *out, const bench_record *recs, size_t n)
{
    int count = 0;
    fputs("{\n  \"version\": ", out);
    json_string(out, dla_version_string());
    fprintf(out, ",\n  \"threads\": %d,\n  \"records\": [", omp_get_max_threads());
    for (size_t i = 0; i < n; i++)
        if (recs[i].status == DLA_OK) {
            json_item(out, count++);
            json_record(out, &recs[i]);
        }
    json_close(out, count, ",\n  \"ratios\": [");
    count = 0;
    for (size_t i = 0; i < n; i++) {
        const bench_record *ref = reference_of(&recs[i], recs, n);
        if (ref) {
            json_item(out, count++);
            json_ratio(out, &recs[i], ref);
        }
    }
    json_close(out, count, ",\n  \"errors\": [");
    count = 0;
    for (size_t i = 0; i < n; i++)
        if (recs[i].status != DLA_OK) {
            json_item(out, count++);
            json_error(out, &recs[i]);
        }
    json_close(out, count, "\n}\n");
    fflush(out);
}

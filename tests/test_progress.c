/*
 * test_progress.c - the progress display's lines: on a terminal the bar
 * fits the terminal's width at every draw (no line that wraps and stays
 * behind as a stale line), follows a change of width, and shows the rate;
 * through a pipe it is plain lines with the rate; after a finish, a new
 * run gets a new bar or new lines.
 *
 * A memory stream is no terminal, so the width comes from COLUMNS, the
 * fallback the display uses where TIOCGWINSZ does not answer (the bar is
 * forced with .bar = 1). tests/tool_progress_tty.sh checks a real
 * terminal (tmux) as well. Counts far past the total keep a positive
 * percentage; the chart of points too large for a double's + 1 is a file
 * of finite size, and UTF-8 whatever bytes its names hold.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "sink.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LONG_TEXT "epoch 12/30  loss 0.4213  accuracy 85.2%  validation 0.3917  learn rate 0.01"

/* Lines of text that end with what (a suffix with its newline). */
static int count_lines_with(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static void pause_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* The columns each line of text takes (a line: what lies between \r or
 * \n, without the escape sequences). Fails when one is wider than max;
 * returns the number of non-empty lines and copies the last bar drawn
 * (the last line with text before an escape sequence: a draw ends with
 * "\033[K") to last. */
static int check_widths(const char *text, int max, char *last, size_t size)
{
    int lines = 0, cols = 0, drawn = 0;
    char cur[1024];
    size_t n = 0;
    *last = '\0';
    for (const char *p = text;; p++) {
        if (*p == '\r' || *p == '\n' || *p == '\0') {
            if (cols > max)
                fail_msg("a line of %d columns on a terminal of %d: \"%.*s\"", cols, max + 1,
                         (int)n, cur);
            if (n && drawn)
                snprintf(last, size, "%.*s", (int)n, cur);
            lines += n > 0;
            if (!*p)
                break;
            cols = 0;
            n = 0;
            drawn = 0;
            continue;
        }
        if (*p == '\033') { /* CSI: ESC [ parameters final-byte */
            drawn = n > 0;
            p++;
            if (*p == '[')
                while (p[1] && !(p[1] >= '@' && p[1] <= '~'))
                    p++;
            p++;
            continue;
        }
        cols += ((unsigned char)*p & 0xC0) != 0x80;
        if (n < sizeof cur)
            cur[n++] = *p;
    }
    return lines;
}

/* 20 updates with a long text on a forced bar at COLUMNS=width, a line
 * printed above the bar, and the end. */
static char *draw_at(int width, int total, const char *text)
{
    char cols[16];
    snprintf(cols, sizeof cols, "%d", width);
    setenv("COLUMNS", cols, 1);
    tu_sink s;
    assert_non_null(tu_sink_open(&s));
    dla_progress *p = dla_progress_create(&(dla_progress_options){.stream = s.f, .bar = 1,
                                                                  .total = total});
    assert_non_null(p);
    for (int i = 1; i <= 20; i++) {
        pause_ms(2);
        dla_progress_update(p, i * total / 20, text);
        if (i == 10 && width >= 10)
            dla_progress_printf(p, "halfway");
    }
    dla_progress_finish(p, width >= 10 ? "done" : NULL);
    dla_progress_free(p);
    unsetenv("COLUMNS");
    return tu_sink_text(&s);
}

static void bar_fits_the_width_and_shows_the_rate(void **state)
{
    (void)state;
    static const int widths[] = {40, 80, 120};
    for (int w = 0; w < 3; w++) {
        char *text = draw_at(widths[w], 2340, LONG_TEXT);
        char last[1024];
        int lines = check_widths(text, widths[w] - 1, last, sizeof last);
        assert_true(lines >= 3);
        /* The last draw: complete, with the rate and the count. */
        assert_non_null(strstr(last, "100%"));
        assert_non_null(strstr(last, "2340/2340"));
        assert_non_null(strstr(last, " it/s"));
        /* Only the printed line, the end of the bar and "done" end lines:
         * a redraw never leaves one behind. */
        int newlines = 0;
        for (const char *c = text; *c; c++)
            newlines += *c == '\n';
        assert_int_equal(newlines, 3);
        assert_non_null(strstr(text, "\r\033[Khalfway\n\r["));
        if (widths[w] >= 80) /* the text, shortened at a field boundary */
            assert_non_null(strstr(last, "epoch 12/30  loss 0.4213"));
        if (widths[w] >= 120) /* and the elapsed time */
            assert_non_null(strstr(last, "100%  2340/2340  00:00  "));
        if (widths[w] >= 120)
            assert_non_null(strstr(last, "validation 0.3917"));
        free(text);
    }
}

static void bar_degrades_on_narrow_terminals(void **state)
{
    (void)state;
    for (int width = 1; width <= 60; width += 3) {
        char *text = draw_at(width, 100000, LONG_TEXT);
        char last[1024];
        check_widths(text, width > 1 ? width - 1 : 1, last, sizeof last);
        if (width >= 16)
            assert_non_null(strstr(last, "100%"));
        free(text);
    }
    /* A control character in the text does not break the line. */
    char *nl = draw_at(80, 100, "epoch 1\nloss\t0.5\r");
    char nl_last[1024];
    check_widths(nl, 79, nl_last, sizeof nl_last);
    assert_non_null(strstr(nl_last, "epoch 1 loss 0.5"));
    int newlines = 0;
    for (const char *c = nl; *c; c++)
        newlines += *c == '\n';
    assert_int_equal(newlines, 3); /* "halfway", the bar's end, "done" */
    free(nl);
    /* A UTF-8 text is cut between characters, never inside one. */
    char *text = draw_at(60, 100, "époque 1/3  perte 0.42  précision 85%  validation 0.39");
    char last[1024];
    check_widths(text, 59, last, sizeof last);
    assert_non_null(strstr(last, "époque 1/3"));
    free(text);
}

static void bar_follows_a_change_of_width(void **state)
{
    (void)state;
    tu_sink s;
    assert_non_null(tu_sink_open(&s));
    setenv("COLUMNS", "120", 1);
    dla_progress *p = dla_progress_create(&(dla_progress_options){.stream = s.f, .bar = 1,
                                                                  .total = 100});
    dla_progress_update(p, 1, LONG_TEXT);
    pause_ms(2);
    dla_progress_update(p, 50, LONG_TEXT);
    fflush(s.f);
    size_t before = s.len;
    setenv("COLUMNS", "50", 1);
    dla_progress_printf(p, "resized"); /* redraws the bar below it */
    dla_progress_finish(p, NULL);
    dla_progress_free(p);
    unsetenv("COLUMNS");
    char *text = tu_sink_text(&s);
    char last[1024];
    assert_true(check_widths(text, 119, last, sizeof last) >= 2);
    check_widths(text + before, 49, last, sizeof last);
    assert_non_null(strstr(last, "100%") ? last : strstr(last, "50%"));
    free(text);
}

static void pipe_gets_plain_lines_with_the_rate(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    FILE *w = fdopen(fds[1], "w");
    assert_non_null(w);
    setenv("COLUMNS", "40", 1); /* not a terminal: no width applies */
    dla_progress *p = dla_progress_create(&(dla_progress_options){.stream = w, .total = 40});
    for (int i = 1; i <= 40; i++) {
        pause_ms(1);
        dla_progress_update(p, i, LONG_TEXT);
    }
    dla_progress_finish(p, NULL);
    dla_progress_free(p);
    unsetenv("COLUMNS");
    fclose(w);
    char buf[8192];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof buf - 1 && (got = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)got;
    buf[n] = '\0';
    close(fds[0]);
    assert_null(strchr(buf, '\r'));
    assert_null(strchr(buf, '\033'));
    int lines = 0;
    for (char *c = buf; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 11); /* the first update, then each tenth */
    const char *last = strstr(buf, "[progress] 100%  40/40  00:00:00 elapsed");
    assert_non_null(last);
    assert_non_null(strstr(last, " it/s  " LONG_TEXT "\n"));
    assert_non_null(strstr(buf, "left"));
}

static void a_display_freed_twice_or_used_after_is_refused(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    dla_progress *p =
        dla_progress_create(&(dla_progress_options){.stream = f, .bar = -1, .total = 10});
    assert_int_equal(dla_progress_record(p, "TrainingLoss", 1, 0.5), DLA_OK);
    dla_progress_free(p);
    /* Wrote through the freed display before, without a word. */
    dla_clear_error();
    dla_progress_update(p, 10, "epoch 1/1");
    assert_non_null(strstr(dla_last_error(), "dla_progress_update"));
    assert_non_null(strstr(dla_last_error(), "freed already"));
    assert_int_equal(dla_progress_record(p, "TrainingLoss", 2, 0.4), DLA_ERR_INVALID_ARGUMENT);
    dla_clear_error();
    dla_progress_printf(p, "a line");
    assert_non_null(strstr(dla_last_error(), "dla_progress_printf"));
    dla_progress_finish(p, "done");
    assert_non_null(strstr(dla_last_error(), "dla_progress_finish"));
    assert_int_equal(dla_progress_write_chart(p, "never-written.svg"), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_progress_write_chart"));
    assert_int_equal(access("never-written.svg", F_OK), -1);
    dla_clear_error();
    dla_progress_free(p); /* freed the metrics and the display again before */
    assert_non_null(strstr(dla_last_error(), "dla_progress_free"));
    fclose(f);
    assert_int_equal(len, 0); /* nothing reached the stream */
    free(buf);
}

/* After dla_progress_finish, later updates start a new bar. Before: the
 * plain lines stayed at the tenth the finish had set, and a second run
 * printed none of its progress. */
static void a_finished_display_starts_a_new_bar(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    dla_progress *p = dla_progress_create(&(dla_progress_options){.stream = f, .bar = -1,
                                                                  .total = 10});
    for (int phase = 1; phase <= 2; phase++) {
        char text[32];
        snprintf(text, sizeof text, "phase %d", phase);
        for (int i = 1; i <= 10; i++)
            dla_progress_update(p, i, text);
        dla_progress_finish(p, phase == 1 ? "first run done" : "second run done");
    }
    dla_progress_free(p);
    fclose(f);
    assert_int_equal(count_lines_with(buf, "phase 1\n"), 10);
    assert_int_equal(count_lines_with(buf, "phase 2\n"), 10);
    const char *second = strstr(buf, "first run done\n");
    assert_non_null(second);
    assert_non_null(strstr(second, "[progress]  10%  1/10  00:00:00 elapsed  phase 2\n"));
    assert_non_null(strstr(second, "[progress] 100%  10/10"));
    free(buf);
}

/* The chart says it is UTF-8: a title or metric name in Latin-1 was
 * copied byte for byte, and browsers refused the whole file as not
 * well-formed. Bytes that are no UTF-8 character become U+FFFD; UTF-8
 * text stays as it is. */
static void a_chart_is_utf8_whatever_its_names(void **state)
{
    (void)state;
    char path[] = "/tmp/dla-progress-utf8-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    dla_progress *p = dla_progress_create(&(dla_progress_options){
        .bar = -2, .title = "caf\xe9 \xc3\xa9t\xc3\xa9", .xlabel = "it\xff\xfe"});
    assert_int_equal(dla_progress_record(p, "TrainingLoss \xed\xa0\x80 \xc3", 1, 0.5), DLA_OK);
    assert_int_equal(dla_progress_record(p, "TrainingLoss \xed\xa0\x80 \xc3", 2, 0.25), DLA_OK);
    assert_int_equal(dla_progress_write_chart(p, path), DLA_OK);
    dla_progress_free(p);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[100000];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    unlink(path);
    /* Every byte above 0x7f belongs to a UTF-8 sequence of the right
     * length (the checks here are those of the replacement's text). */
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)text[i];
        if (c < 0x80)
            continue;
        size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
        if (!len || c > 0xF4)
            fail_msg("byte %zu: 0x%02x starts no UTF-8 character", i, c);
        for (size_t k = 1; k < len; k++)
            if (i + k >= n || ((unsigned char)text[i + k] & 0xC0) != 0x80)
                fail_msg("byte %zu: 0x%02x is not followed by %zu continuation bytes", i, c,
                         len - 1);
        assert_false(c == 0xED && (unsigned char)text[i + 1] >= 0xA0); /* a surrogate */
        i += len - 1;
    }
    assert_non_null(strstr(text, "caf\xef\xbf\xbd \xc3\xa9t\xc3\xa9"));
    assert_non_null(strstr(text, "it\xef\xbf\xbd\xef\xbf\xbd"));
    assert_non_null(strstr(text, ">TrainingLoss \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd<"));
}

/* The percentage is rounded to the nearest, as the times and the accuracy
 * beside it are: 2 of 3 read 66%. Short of the total it stays below 100%. */
static void the_percentage_is_rounded_and_short_of_the_total_below_100(void **state)
{
    (void)state;
    for (int bar = -1; bar <= 1; bar += 2) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_non_null(f);
        setenv("COLUMNS", "120", 1);
        dla_progress *p = dla_progress_create(&(dla_progress_options){.stream = f, .bar = bar,
                                                                      .total = 3});
        dla_progress_update(p, 1, "one");
        dla_progress_update(p, 2, "two");
        dla_progress_finish(p, NULL); /* the bar draws its last count */
        dla_progress_free(p);
        p = dla_progress_create(&(dla_progress_options){.stream = f, .bar = bar, .total = 1000});
        dla_progress_update(p, 5, "five");
        dla_progress_update(p, 999, "almost");
        dla_progress_finish(p, NULL);
        dla_progress_free(p);
        unsetenv("COLUMNS");
        fclose(f);
        static const char *const want[] = {" 67%  2/3", " 99%  999/1000", " 33%  1/3",
                                           "  1%  5/1000"};
        for (int i = 0; i < (bar > 0 ? 2 : 4); i++) /* the bar may skip the first draws */
            if (!strstr(buf, want[i]))
                fail_msg("bar %d: no \"%s\" in \"%s\"", bar, want[i], buf);
        if (strstr(buf, "100%"))
            fail_msg("bar %d: 100%% short of the total in \"%s\"", bar, buf);
        free(buf);
    }
}

/* A count far above the total (a total that was an estimate) or near
 * INT64_MAX: before, the percentage past INT_MAX came out of an undefined
 * conversion as "-2147483648%", and 10 * done overflowed. */
static void counts_far_above_the_total_stay_positive(void **state)
{
    (void)state;
    for (int bar = -1; bar <= 1; bar += 2) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_non_null(f);
        setenv("COLUMNS", "120", 1);
        dla_progress *p = dla_progress_create(&(dla_progress_options){.stream = f, .bar = bar,
                                                                      .total = 10});
        dla_progress_update(p, 5, "half");
        dla_progress_update(p, INT64_MAX / 2, "far past");
        dla_progress_update(p, INT64_MAX, "the end");
        dla_progress_finish(p, NULL);
        dla_progress_free(p);
        unsetenv("COLUMNS");
        fclose(f);
        if (strstr(buf, "-2147483648") || strstr(buf, "-1000000000"))
            fail_msg("bar %d: a negative percentage in \"%s\"", bar, buf);
        assert_non_null(strstr(buf, " 50%"));
        assert_non_null(strstr(buf, "1000000000%"));
        free(buf);
    }
}

/* Writes the chart of one point (x, value) to path in a child process
 * that may write 4 MiB and run 20 s, so that a chart that never ends
 * fails the test instead of filling the disk; returns the child's wait
 * status. */
static int chart_of_one_point(const char *path, int64_t x, double value)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit lim = {4 << 20, 4 << 20};
        setrlimit(RLIMIT_FSIZE, &lim);
        alarm(20);
        dla_progress *p = dla_progress_create(&(dla_progress_options){.bar = -2});
        int ok = p && dla_progress_record(p, "TrainingLoss", x, value) == DLA_OK &&
                 dla_progress_write_chart(p, path) == DLA_OK;
        dla_progress_free(p);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* Before: a single point at an iteration past 2^53 (a timestamp in
 * nanoseconds as x) or of a value past -2^53 left the axis with a range
 * that x + 1 could not widen, and the grid's loop, v += step, never moved
 * v: the chart was written without end (100 MB a second). */
static void a_chart_of_huge_values_is_finite(void **state)
{
    (void)state;
    char path[] = "/tmp/dla-progress-chart-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    const struct {
        int64_t x;
        double value;
    } points[] = {{1700000000000000000LL, 0.5}, {1, -1e20}, {INT64_MAX, -1e300}, {3, 0.25}};
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        int status = chart_of_one_point(path, points[i].x, points[i].value);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("the chart of (%lld, %g): %s %d", (long long)points[i].x, points[i].value,
                     WIFSIGNALED(status) ? "killed by signal" : "exit status",
                     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        struct stat sb;
        assert_int_equal(stat(path, &sb), 0);
        assert_true(sb.st_size > 1000 && sb.st_size < 100000);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        char text[100000];
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = '\0';
        assert_non_null(strstr(text, "</svg>\n"));
        assert_null(strstr(text, "nan"));
        assert_null(strstr(text, "inf"));
    }
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(bar_fits_the_width_and_shows_the_rate),
        TU_TEST(bar_degrades_on_narrow_terminals),
        TU_TEST(bar_follows_a_change_of_width),
        TU_TEST(pipe_gets_plain_lines_with_the_rate),
        TU_TEST(a_display_freed_twice_or_used_after_is_refused),
        TU_TEST(a_chart_of_huge_values_is_finite),
        TU_TEST(counts_far_above_the_total_stay_positive),
        TU_TEST(the_percentage_is_rounded_and_short_of_the_total_below_100),
        TU_TEST(a_chart_is_utf8_whatever_its_names),
        TU_TEST(a_finished_display_starts_a_new_bar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

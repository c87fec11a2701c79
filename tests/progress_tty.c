/*
 * progress_tty.c - draws the progress bar on stdout as training would (a
 * long text, a line printed above the bar halfway, about ten redraws), for
 * tests/tool_progress_tty.sh to run in a real terminal.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <dlaccel.h>
#include <time.h>

int main(void)
{
    enum { TOTAL = 500 };
    dla_progress *p = dla_progress_create(&(dla_progress_options){.total = TOTAL});
    if (!p)
        return 1;
    for (int i = 1; i <= TOTAL; i++) {
        nanosleep(&(struct timespec){0, 2000000L}, NULL);
        dla_progress_update(p, i, "epoch 2/3  loss 0.4213  accuracy 85.2%  validation 0.3917");
        if (i == TOTAL / 2)
            dla_progress_printf(p, "halfway");
    }
    dla_progress_finish(p, "done");
    dla_progress_free(p);
    return 0;
}

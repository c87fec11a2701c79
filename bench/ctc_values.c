/*
 * ctc_values.c - dla_ctc's losses and gradients on fixed data, written
 * for bench/torch_ctc.py to compare with PyTorch's ctc_loss: logits of
 * 5 classes (blank first) x 3 observations x 10 steps through a softmax,
 * input lengths 10, 7, 9 (a y_mask), targets [1 2 2], [4], [3 3 1 2]
 * (a targets_mask; a repeated label), double precision. Writes the
 * logits, each observation's loss (reduction "none") and the gradient of
 * their sum with respect to the logits, one number a line, to argument 1
 * (default ctc_values.txt).
 */
#include <dlaccel.h>
#include <dlaccel/loss.h>
#include <dlaccel/nnops.h>
#include <math.h>
#include <stdio.h>

#define C 5
#define B 3
#define T 10
#define S 4

static dla_status loss_and_gradient(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_ctc(dla_softmax(in[0]), in[1], in[2], in[3],
                     &(dla_ctc_options){.reduction = "none"});
    dla_tensor *sum = dla_sum(out[0], 0, NULL);
    return dla_gradient(sum, 1, in, out + 1);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "ctc_values.txt";
    double z[C * B * T], tg[B * S], ym[B * T], tm[B * S];
    /* Logits from a fixed sequence, not rand(): the same on every libc. */
    for (int i = 0; i < C * B * T; i++)
        z[i] = 2.0 * sin(1.7 * i + 0.3) + 0.3 * (i % C);
    const int target_len[B] = {3, 1, 4}, input_len[B] = {10, 7, 9};
    const int labels[B][S] = {{1, 2, 2, 0}, {4, 0, 0, 0}, {3, 3, 1, 2}};
    for (int b = 0; b < B; b++) {
        for (int s = 0; s < S; s++) {
            tg[b + B * s] = labels[b][s];
            tm[b + B * s] = s < target_len[b];
        }
        for (int t = 0; t < T; t++)
            ym[b + B * t] = t < input_len[b];
    }
    dla_scope_begin();
    dla_tensor *in[4] = {dla_tensor_from_host(z, DLA_F64, "CBT", DLA_DIMS(C, B, T)),
                         dla_tensor_from_host(tg, DLA_F64, "", DLA_DIMS(B, S)),
                         dla_tensor_from_host(ym, DLA_F64, "", DLA_DIMS(B, T)),
                         dla_tensor_from_host(tm, DLA_F64, "", DLA_DIMS(B, S))},
               *out[2];
    if (dla_feval(loss_and_gradient, NULL, 4, in, 2, out) != DLA_OK) {
        fprintf(stderr, "ctc_values: %s\n", dla_last_error());
        return 1;
    }
    double loss[B], grad[C * B * T];
    FILE *f = fopen(path, "w");
    if (!f || dla_tensor_to_host(out[0], loss, sizeof loss) != DLA_OK ||
        dla_tensor_to_host(out[1], grad, sizeof grad) != DLA_OK) {
        fprintf(stderr, "ctc_values: cannot write %s or read the results\n", path);
        return 1;
    }
    for (int i = 0; i < C * B * T; i++)
        fprintf(f, "%.17g\n", z[i]);
    for (int b = 0; b < B; b++)
        fprintf(f, "%.17g\n", loss[b]);
    for (int i = 0; i < C * B * T; i++)
        fprintf(f, "%.17g\n", grad[i]);
    fclose(f);
    dla_scope_end();
    printf("ctc_values: wrote %s\n", path);
    return 0;
}

/*
 * rnn_lrn_values.c - dla_lstm, dla_gru and dla_crosschannelnorm on fixed
 * data, written for bench/torch_rnn_lrn.py to compare with PyTorch's
 * nn.LSTM, nn.GRU and local_response_norm. MATLAB's gate orders are
 * PyTorch's (LSTM input, forget, cell, output; GRU reset, update,
 * candidate), PyTorch's GRU is MATLAB's "recurrent-bias-after-
 * multiplication" with the bias [b_ih; b_hh], and its LSTM's two biases
 * add up to MATLAB's one. Double precision; one number a line to
 * argument 1 (default rnn_lrn_values.txt): x (C x B x T), for each of the
 * LSTM and the GRU its weights, recurrent weights, bias, h0 (and c0), y
 * and the final states; then the LRN's x (4 x 3 x 7 x 2 SSCB) and y for
 * window 5, alpha 0.5, beta 0.75, k 1.5 (an odd window: PyTorch's even
 * windows look one channel further back than MATLAB's).
 */
#include <dlaccel.h>
#include <dlaccel/nnops.h>
#include <math.h>
#include <stdio.h>

#define C 3
#define B 2
#define T 5
#define H 4

static double seq = 0;
static void fill(double *v, int n, double scale)
{
    for (int i = 0; i < n; i++, seq += 1)
        v[i] = scale * sin(1.3 * seq + 0.7);
}

static void put(FILE *f, const double *v, int n)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "%.17g\n", v[i]);
}

static int put_tensor(FILE *f, dla_tensor *t)
{
    double v[4 * 3 * 7 * 2];
    const int n = (int)dla_tensor_numel(t);
    if (n > (int)(sizeof v / sizeof v[0]) || dla_tensor_to_host(dla_cast(t, DLA_F64), v,
                                                                sizeof(double) * (size_t)n) != DLA_OK)
        return 1;
    put(f, v, n);
    return 0;
}

int main(int argc, char **argv)
{
    FILE *f = fopen(argc > 1 ? argv[1] : "rnn_lrn_values.txt", "w");
    if (!f)
        return 1;
    dla_scope_begin();
    double x[C * B * T], w[4 * H * C], r[4 * H * H], b[6 * H], h0[H * B], c0[H * B];
    fill(x, C * B * T, 1.0);
    dla_tensor *tx = dla_tensor_from_host(x, DLA_F64, "CBT", DLA_DIMS(C, B, T)), *y, *hs, *cs;
    put(f, x, C * B * T);
    int bad = 0;
    /* LSTM */
    fill(w, 4 * H * C, 0.5), fill(r, 4 * H * H, 0.5), fill(b, 4 * H, 0.3);
    fill(h0, H * B, 0.2), fill(c0, H * B, 0.2);
    put(f, w, 4 * H * C), put(f, r, 4 * H * H), put(f, b, 4 * H), put(f, h0, H * B),
        put(f, c0, H * B);
    bad |= dla_lstm(tx, dla_tensor_from_host(h0, DLA_F64, "", DLA_DIMS(H, B)),
                    dla_tensor_from_host(c0, DLA_F64, "", DLA_DIMS(H, B)),
                    dla_tensor_from_host(w, DLA_F64, "", DLA_DIMS(4 * H, C)),
                    dla_tensor_from_host(r, DLA_F64, "", DLA_DIMS(4 * H, H)),
                    dla_tensor_from_host(b, DLA_F64, "", DLA_DIMS(4 * H, 1)), NULL, &y, &hs,
                    &cs) != DLA_OK;
    bad = bad || put_tensor(f, y) || put_tensor(f, hs) || put_tensor(f, cs);
    /* GRU, recurrent bias after the multiplication (PyTorch's) */
    fill(w, 3 * H * C, 0.5), fill(r, 3 * H * H, 0.5), fill(b, 6 * H, 0.3), fill(h0, H * B, 0.2);
    put(f, w, 3 * H * C), put(f, r, 3 * H * H), put(f, b, 6 * H), put(f, h0, H * B);
    bad = bad || dla_gru(tx, dla_tensor_from_host(h0, DLA_F64, "", DLA_DIMS(H, B)),
                         dla_tensor_from_host(w, DLA_F64, "", DLA_DIMS(3 * H, C)),
                         dla_tensor_from_host(r, DLA_F64, "", DLA_DIMS(3 * H, H)),
                         dla_tensor_from_host(b, DLA_F64, "", DLA_DIMS(6 * H, 1)),
                         &(dla_recurrent_options){
                             .reset_gate_mode = "recurrent-bias-after-multiplication"},
                         &y, &hs) != DLA_OK;
    bad = bad || put_tensor(f, y) || put_tensor(f, hs);
    /* Local response normalization */
    double lx[4 * 3 * 7 * 2];
    fill(lx, 4 * 3 * 7 * 2, 3.0);
    put(f, lx, 4 * 3 * 7 * 2);
    dla_tensor *ly = dla_crosschannelnorm(
        dla_tensor_from_host(lx, DLA_F64, "SSCB", DLA_DIMS(4, 3, 7, 2)), 5,
        &(dla_crosschannelnorm_options){.alpha = 0.5, .beta = 0.75, .k = 1.5});
    bad = bad || put_tensor(f, ly);
    fclose(f);
    if (bad)
        fprintf(stderr, "rnn_lrn_values: %s\n", dla_last_error());
    dla_scope_end();
    return bad;
}

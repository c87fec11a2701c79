#!/usr/bin/env python3
"""dla_lstm, dla_gru and dla_crosschannelnorm against PyTorch on
bench/rnn_lrn_values's fixed data:

    bench/rnn_lrn_values /tmp/rnn_lrn_values.txt     # in the build tree
    python3 bench/torch_rnn_lrn.py /tmp/rnn_lrn_values.txt

Loads the same weights into torch.nn.LSTM (bias_ih = MATLAB's bias,
bias_hh = 0), torch.nn.GRU (bias_ih, bias_hh = the two halves of the
recurrent-bias-after-multiplication bias) and local_response_norm, in
double, and prints the largest difference of each output.
"""
import sys

import torch

C, B, T, H = 3, 2, 5, 4
v = iter(float(x) for x in open(sys.argv[1] if len(sys.argv) > 1 else "rnn_lrn_values.txt"))


def take(*shape_fortran):
    """The next numbers as a tensor of dlaccel's column-major dims."""
    n = 1
    for d in shape_fortran:
        n *= d
    flat = torch.tensor([next(v) for _ in range(n)], dtype=torch.float64)
    return flat.reshape(tuple(reversed(shape_fortran))).permute(*reversed(range(len(shape_fortran))))


x = take(C, B, T)                      # [c, b, t]
xs = x.permute(2, 1, 0).contiguous()   # PyTorch's (T, B, C)
worst = 0.0

lstm = torch.nn.LSTM(C, H).double()
w, r, b, h0, c0 = take(4 * H, C), take(4 * H, H), take(4 * H), take(H, B), take(H, B)
with torch.no_grad():
    lstm.weight_ih_l0.copy_(w), lstm.weight_hh_l0.copy_(r)
    lstm.bias_ih_l0.copy_(b), lstm.bias_hh_l0.zero_()
    y, (hn, cn) = lstm(xs, (h0.t().unsqueeze(0).contiguous(), c0.t().unsqueeze(0).contiguous()))
yd, hd, cd = take(H, B, T), take(H, B), take(H, B)
d = max((y - yd.permute(2, 1, 0)).abs().max().item(), (hn[0] - hd.t()).abs().max().item(),
        (cn[0] - cd.t()).abs().max().item())
print("LSTM (torch.nn.LSTM):  largest difference %.3g" % d)
worst = max(worst, d)

gru = torch.nn.GRU(C, H).double()
w, r, b, h0 = take(3 * H, C), take(3 * H, H), take(6 * H), take(H, B)
with torch.no_grad():
    gru.weight_ih_l0.copy_(w), gru.weight_hh_l0.copy_(r)
    gru.bias_ih_l0.copy_(b[:3 * H]), gru.bias_hh_l0.copy_(b[3 * H:])
    y, hn = gru(xs, h0.t().unsqueeze(0).contiguous())
yd, hd = take(H, B, T), take(H, B)
d = max((y - yd.permute(2, 1, 0)).abs().max().item(), (hn[0] - hd.t()).abs().max().item())
print("GRU (torch.nn.GRU):    largest difference %.3g" % d)
worst = max(worst, d)

lx = take(4, 3, 7, 2)                  # [h, w, c, b]
ly = take(4, 3, 7, 2)
ref = torch.nn.functional.local_response_norm(lx.permute(3, 2, 0, 1), 5, alpha=0.5, beta=0.75,
                                              k=1.5)
d = (ref - ly.permute(3, 2, 0, 1)).abs().max().item()
print("LRN (local_response_norm, window 5): largest difference %.3g" % d)
worst = max(worst, d)
print("PyTorch", torch.__version__)
sys.exit(0 if worst < 1e-12 else 1)

#!/usr/bin/env python3
"""The PyTorch reference of dlaccel-bench's lstm_train_step /
lstm_inference: torch.nn.LSTM(3, 128) and a Linear(128, 3) on 64
sequences of 99 steps in float32, the mean squared error against targets,
its gradients and an Adam update (a train step), or the forward pass alone
under torch.no_grad (inference).

    python3 bench/torch_lstm.py [--rounds 5] [--steps 10] [--threads 2]

Prints the median over rounds of the mean time per step, in ms, for both,
and the PyTorch version.
"""
import argparse
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    lstm, fc = torch.nn.LSTM(3, 128), torch.nn.Linear(128, 3)
    params = list(lstm.parameters()) + list(fc.parameters())
    opt = torch.optim.Adam(params, lr=0.001)
    x, t = torch.randn(99, 64, 3), torch.randn(99, 64, 3)

    def train():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(fc(lstm(x)[0]), t)
        loss.backward()
        opt.step()
        return loss.item()

    def infer():
        with torch.no_grad():
            return fc(lstm(x)[0])

    for name, step in (("train step", train), ("inference", infer)):
        for _ in range(3):
            step()
        times = []
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            for _ in range(a.steps):
                step()
            times.append((time.perf_counter() - t0) * 1e3 / a.steps)
        print("torch %s: LSTM %s (3 -> 128 -> fc 3, 64 x 99 steps), %.3f ms (median of %d "
              "rounds of %d; rounds %s)"
              % (torch.__version__, name, statistics.median(times), a.rounds, a.steps,
                 " ".join("%.2f" % v for v in times)))


if __name__ == "__main__":
    main()

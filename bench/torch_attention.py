#!/usr/bin/env python3
"""The PyTorch reference of dlaccel-bench's attention_replay /
attention_eager: torch.nn.MultiheadAttention (64 channels, 4 heads, the
queries, keys and values projected from one input, an output
projection), on 32 sequences of 64 steps in float32, and the gradients of
sum(y**2) with respect to its parameters: one step without an update, as
the bench times it.

    python3 bench/torch_attention.py [--rounds 5] [--steps 50] [--threads 2]
                                     [--device cpu|cuda] [--compile]

Prints the median over rounds of the mean time per step, in ms, and the
PyTorch version.
"""
import argparse
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(9)
    dev = torch.device(a.device)
    att = torch.nn.MultiheadAttention(64, 4, batch_first=True).to(dev)
    x = torch.randn(32, 64, 64, device=dev)
    params = list(att.parameters())

    def loss_of(x):
        y, _ = att(x, x, x, need_weights=False)
        return (y ** 2).sum()

    fwd = torch.compile(loss_of) if a.compile else loss_of

    def step():
        return torch.autograd.grad(fwd(x), params)

    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(10):
        step()
    sync()
    times = []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        sync()
        times.append((time.perf_counter() - t0) * 1e3 / a.steps)
    print("torch %s on %s%s: self-attention step (64 channels, 4 heads, 32 x 64 steps), "
          "%.4f ms (median of %d rounds of %d; rounds %s)"
          % (torch.__version__, dev, ", torch.compile" if a.compile else "",
             statistics.median(times), a.rounds, a.steps,
             " ".join("%.4f" % t for t in times)))


if __name__ == "__main__":
    main()

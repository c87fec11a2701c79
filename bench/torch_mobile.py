#!/usr/bin/env python3
"""The PyTorch reference of dlaccel-bench's mobile_train_step /
mobile_inference: the MobileNet-style network of `cnn_fmnist --mobile`
(examples/mobile_net.h) on a batch of 128 28x28x1 images in float32.

    conv 3x3x16 (same) -> BN -> ReLU6
    -> depthwise 3x3 stride 2 (same) -> BN -> ReLU6 -> 1x1x32 -> BN -> ReLU6
    -> depthwise 3x3 stride 2 (same) -> BN -> ReLU6 -> 1x1x64 -> BN -> ReLU6
    -> squeeze-and-excitation: avgpool -> 1x1x16 -> ReLU -> 1x1x64 -> sigmoid -> times
    -> Dropout2d(0.1) -> Linear(3136, 10) -> cross-entropy

A train step is the forward pass, the loss, its gradients and an SGD step
with momentum 0.9 and learning rate 0.01; inference is the forward pass
in eval mode under torch.no_grad.

    python3 bench/torch_mobile.py [--rounds 5] [--steps 10] [--threads 2] [--compile]

Prints the median over rounds of the mean time per step, in ms, and the
PyTorch version. --compile times torch.compile's model as well.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn


class SE(nn.Module):
    def __init__(self, c, r):
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(c, r, 1), nn.Conv2d(r, c, 1)

    def forward(self, x):
        g = torch.sigmoid(self.expand(torch.relu(self.reduce(x.mean((2, 3), keepdim=True)))))
        return x * g


def block(cin, cout, k, stride, groups):
    # MATLAB's "same" with stride 2 pads 28 and 14 by 0 before and 1 after;
    # one on each side gives the same output size and work (the windows
    # one pixel over).
    return [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups), nn.BatchNorm2d(cout),
            nn.ReLU6()]


def network():
    return nn.Sequential(
        *block(1, 16, 3, 1, 1),
        *block(16, 16, 3, 2, 16), *block(16, 32, 1, 1, 1),
        *block(32, 32, 3, 2, 32), *block(32, 64, 1, 1, 1),
        SE(64, 16), nn.Dropout2d(0.1), nn.Flatten(), nn.Linear(7 * 7 * 64, 10))


def timed(step, rounds, steps):
    for _ in range(3):
        step()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - t0) * 1e3 / steps)
    return statistics.median(times), times


def arguments():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    return a


def run_network(make, x, t, what, a):
    """Times make()'s train step (SGDM 0.01 / 0.9, cross-entropy) and
    inference on x, t, eager and (--compile) compiled; what names it in the
    lines printed. Shared with torch_volume.py."""
    variants = [("eager", lambda m: m)]
    if a.compile:
        variants.append(("torch.compile", torch.compile))
    for label, wrap in variants:
        model = make()
        run = wrap(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def train():
            model.train()
            opt.zero_grad()
            loss = nn.functional.cross_entropy(run(x), t)
            loss.backward()
            opt.step()
            return loss.item()

        def infer():
            model.eval()
            with torch.no_grad():
                return run(x).sum().item()

        for name, step in (("train step", train), ("inference", infer)):
            med, times = timed(step, a.rounds, a.steps)
            print("torch %s %s: %s %s (batch %d), %.3f ms (median of %d rounds of %d; rounds %s)"
                  % (torch.__version__, label, what, name, x.shape[0], med, a.rounds, a.steps,
                     " ".join("%.2f" % v for v in times)))


def main():
    a = arguments()
    x = torch.rand(128, 1, 28, 28)
    t = torch.arange(128) % 10
    run_network(network, x, t, "MobileNet-style", a)


if __name__ == "__main__":
    main()

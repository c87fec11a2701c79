#!/usr/bin/env python3
"""The PyTorch reference of dlaccel-bench's pinn_replay / pinn_eager: the
physics-informed MLP of examples/pinn.c (1-20-20-1, tanh, float32), its
loss at 64 collocation points with u'' taken by two torch.autograd.grad
calls with create_graph=True, and the gradient of the loss with respect
to the parameters: one step without the update, as the bench times it.

    python3 bench/torch_pinn.py [--rounds 5] [--steps 200] [--threads 2]
                                [--device cpu|cuda]

Prints the median over rounds of the mean time per step, in ms, and the
PyTorch version. (torch.compile does not take a double backward through
autograd.grad, so there is only the eager figure.)
"""
import argparse
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.set_num_threads(a.threads)
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(1, 20), torch.nn.Tanh(),
                                torch.nn.Linear(20, 20), torch.nn.Tanh(),
                                torch.nn.Linear(20, 1)).to(dev)
    params = list(model.parameters())
    x = torch.rand(64, 1, device=dev, requires_grad=True)
    f = torch.randn(64, 1, device=dev)
    x0 = torch.tensor([[0.0], [1.0]], device=dev)

    def step():
        u = model(x)
        ux, = torch.autograd.grad(u.sum(), x, create_graph=True)
        uxx, = torch.autograd.grad(ux.sum(), x, create_graph=True)
        loss = ((uxx - f) ** 2).mean() + 100 * (model(x0) ** 2).mean()
        return torch.autograd.grad(loss, params)

    # A GPU's launches are asynchronous: each round ends when its last
    # step's results exist.
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(50):
        step()
    sync()
    times = []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        sync()
        times.append((time.perf_counter() - t0) * 1e3 / a.steps)
    print("torch %s on %s: pinn step (u'' by two autograd.grad, loss gradient), 64 points: "
          "%.4f ms (median of %d rounds of %d; rounds %s)"
          % (torch.__version__, dev, statistics.median(times), a.rounds, a.steps,
             " ".join("%.4f" % t for t in times)))


if __name__ == "__main__":
    main()

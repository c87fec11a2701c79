"""The PyTorch side of examples/neural_ode: the same neural ODE trained on
the same trajectory, solved by torchdiffeq's dopri5 (the Dormand-Prince
pair, as dla_ode45) at MATLAB's default tolerances, gradients through the
solver's operations (torchdiffeq's odeint: dlaccel's "direct" mode) or,
with --adjoint, by odeint_adjoint (its "adjoint" mode).

    pip install torchdiffeq   (into the interpreter that has torch)
    python bench/torch_neural_ode.py [--iterations N] [--threads T] [--device cuda] [--adjoint]

Prints the loss every 50 iterations, the time per iteration (the first
left out, as the example does), the function evaluations of the last
iteration's solve, and the mean absolute error of the four predictions
over [0, 15], in the lines examples/neural_ode prints.
"""
import argparse
import time

import torch
from torchdiffeq import odeint, odeint_adjoint

SAMPLES, HORIZON, BATCH, HIDDEN, T_END = 2000, 40, 200, 20, 15.0


class Dynamics(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(2, HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, 2)
        for fc in (self.fc1, self.fc2):  # initializeGlorot, zero bias
            torch.nn.init.xavier_uniform_(fc.weight)
            torch.nn.init.zeros_(fc.bias)
        self.evaluations = 0

    def forward(self, t, x):
        self.evaluations += 1
        return self.fc2(torch.tanh(self.fc1(x)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=1200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--adjoint", action="store_true",
                    help="gradients by odeint_adjoint (dla_ode45's \"adjoint\" mode)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    dev = torch.device(args.device)
    A = torch.tensor([[-0.1, -1.0], [1.0, -0.1]], device=dev)
    t = torch.linspace(0, T_END, SAMPLES, device=dev)

    def true_path(x0):
        with torch.no_grad():
            return odeint(lambda s, x: x @ A.T, x0, t, rtol=1e-7, atol=1e-6, method="dopri5")

    xt = true_path(torch.tensor([[2.0, 0.0]], device=dev))[:, 0, :]  # SAMPLES x 2
    f = Dynamics().to(dev)
    opt = torch.optim.Adam(f.parameters(), lr=0.002, betas=(0.9, 0.999), eps=1e-8)
    ts = t[: HORIZON + 1]
    print(f"PyTorch {torch.__version__} on {dev}, torchdiffeq dopri5 (rtol 1e-3, atol 1e-6), "
          f"gradients {'adjoint' if args.adjoint else 'direct'}, {torch.get_num_threads()} threads")
    t0 = time.perf_counter()
    first = None
    for it in range(1, args.iterations + 1):
        ti = time.perf_counter()
        s = torch.randperm(SAMPLES - HORIZON, device=dev)[:BATCH]
        x0 = xt[s]
        targets = torch.stack([xt[s + 1 + k] for k in range(HORIZON)])  # HORIZON x BATCH x 2
        f.evaluations = 0
        solve = odeint_adjoint if args.adjoint else odeint
        x = solve(f, x0, ts, rtol=1e-3, atol=1e-6, method="dopri5")[1:]
        loss = (x - targets).abs().mean()  # l1loss, "all-elements"
        opt.zero_grad()
        loss.backward()
        opt.step()
        if first is None:
            first = time.perf_counter() - ti
        if it == 1 or it % 50 == 0 or it == args.iterations:
            print(f"iteration {it:4d}: loss {loss.item():.5f}  ({time.perf_counter() - t0:.1f} s)")
    n = args.iterations
    per = (time.perf_counter() - t0 - first) / (n - 1) if n > 1 else first
    print(f"time per iteration: {per * 1e3:.2f} ms (the first: {first * 1e3:.2f} ms)")
    print(f"the solver, in the last iteration: {f.evaluations} evaluations "
          f"(forward{' and adjoint' if args.adjoint else ''})")
    with torch.no_grad():
        for start in ([2 ** 0.5, 2 ** 0.5], [-1.0, -1.5], [0.0, 2.0], [-2.0, 0.0]):
            x0 = torch.tensor([start], device=dev)
            want = true_path(x0)[1:, 0]
            got = odeint(f, x0, t, rtol=1e-3, atol=1e-6, method="dopri5")[1:, 0]
            print(f"prediction from [{start[0]:g}; {start[1]:g}] over [0, {T_END:g}]: "
                  f"mean absolute error {(got - want).abs().mean().item():.4f}")


if __name__ == "__main__":
    main()

"""Where PyTorch's GPU time goes in the digit CNN (../shared/peers/cnn_cuda.py's Net) at batch 128:
torch.profiler over eager inference and eager training steps, with cuDNN's TF32 on (PyTorch's
default, torch.backends.cudnn.allow_tf32) and off. Prints, per setting and workload, the kernels
by CUDA time per step (microseconds) with their calls per step: the figures dlaccel's own profile
(DLACCEL_CUDA_PROFILE=1) and cuDNN algorithm log (DLACCEL_LOG=debug) are set beside.

    python3 torch_cuda_profile.py [--steps N]     # beside cnn_cuda.py (it imports Net from it)
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn_cuda import Net  # noqa: E402


def kernels(prof, steps, top):
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", None)
        if t is None:
            t = e.self_cuda_time_total
        if t > 0 and e.device_type == torch.autograd.DeviceType.CUDA:
            rows.append((t / steps, e.count / steps, e.key))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    out = ["    %8.1f us/step in %5.1f kernels/step (all kernels)" % (total, sum(r[1] for r in rows))]
    for t, c, k in rows[:top]:
        out.append("    %8.1f us %5.1f x  %s" % (t, c, k[:110]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--top", type=int, default=14)
    a = ap.parse_args()
    dev = "cuda"
    torch.backends.cudnn.benchmark = False
    for tf32 in (True, False):
        torch.backends.cudnn.allow_tf32 = tf32
        net = Net().to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, fused=True)
        x = torch.randn(a.batch, 1, 28, 28, device=dev)
        y = torch.randint(0, 10, (a.batch,), device=dev)

        def step():
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(net(x), y).backward()
            opt.step()

        def infer():
            with torch.no_grad():
                net(x)

        for name, fn in (("inference", infer), ("train step", step)):
            net.train(name != "inference")
            if name == "inference":
                net.eval()
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(a.steps):
                    fn()
                torch.cuda.synchronize()
            print("torch %s, batch %d, cudnn.allow_tf32=%s, %s" % (torch.__version__, a.batch, tf32, name))
            print("\n".join(kernels(prof, a.steps, a.top)))
            sys.stdout.flush()


if __name__ == "__main__":
    main()

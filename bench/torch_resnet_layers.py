"""PyTorch's time for ResNet-20's layers one by one (batch 128, NCHW): the 3x3 convolutions of the three
stages and the two strided ones, forward, input gradient alone and weight gradient alone
(aten::convolution_backward with one output mask), and BatchNorm2d forward and forward + backward.
Beside `dlaccel-bench --workload =convN_fwd` (_bwd_data, _bwd_filter; conv4-6 and conv9-10 are these
layers). Prints one JSON object: fastest and median ms of 20 calls each. OMP_NUM_THREADS (default 1)
sets the threads.

    T2 python: see ../shared/peers/torch2_setup.sh
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
import json  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def best(f, reps=20):
    """Fastest and median ms of reps calls of f, after 3 warm-up calls."""
    for _ in range(3):
        f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
    ts.sort()
    return round(ts[0], 3), round(ts[len(ts) // 2], 3)


LAYERS = {  # name: (size, in channels, out channels, stride)
    "conv4 32x32 16->16": (32, 16, 16, 1),
    "conv5 16x16 32->32": (16, 32, 32, 1),
    "conv6 8x8 64->64": (8, 64, 64, 1),
    "conv9 32x32 16->32 s2": (32, 16, 32, 2),
    "conv10 16x16 32->64 s2": (16, 32, 64, 2),
}


def main():
    res = {}
    conv_bwd = torch.ops.aten.convolution_backward
    for name, (hw, c, f, s) in LAYERS.items():
        x, w = torch.randn(128, c, hw, hw), torch.randn(f, c, 3, 3)
        gy = torch.randn_like(F.conv2d(x, w, stride=s, padding=1))
        res[name + " fwd"] = best(lambda: F.conv2d(x, w, stride=s, padding=1))
        res[name + " bwd_data"] = best(lambda: conv_bwd(gy, x, w, None, [s, s], [1, 1], [1, 1], False,
                                                        [0, 0], 1, [True, False, False]))
        res[name + " bwd_filter"] = best(lambda: conv_bwd(gy, x, w, None, [s, s], [1, 1], [1, 1], False,
                                                          [0, 0], 1, [False, True, False]))
    for hw, c in ((32, 16), (16, 32), (8, 64)):
        x = torch.randn(128, c, hw, hw, requires_grad=True)
        bn = torch.nn.BatchNorm2d(c)
        g = torch.randn_like(bn(x))
        res[f"bn {hw}x{hw}x{c} fwd"] = best(lambda: bn(x))
        res[f"bn {hw}x{hw}x{c} fwd+bwd"] = best(lambda: torch.autograd.grad(bn(x), x, g))
    print(json.dumps(res))


if __name__ == "__main__":
    main()

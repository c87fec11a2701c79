"""PyTorch's side of the batch sweep (bench/batch_sweep.sh, issue 19 part 5).

Times the train step (SGD with momentum: zero_grad, forward, cross-entropy,
backward, step) and an inference batch of the two networks dlaccel-bench
times, at each batch size asked for, eager and with torch.compile, and
prints one JSON object of median milliseconds.

The networks are those of the peers (../shared/peers/cnn_fmnist.py, whose
Net cnn_torch2.py times, and ../shared/peers/resnet20.py), written out here
because those scripts load Fashion-MNIST or run their benchmark when
imported:

  cnn:    conv 5x5x20 -> BN -> relu, twice conv 3x3x20 pad 1 -> BN -> relu,
          fc 10; 28x28x1 images; SGD lr 0.01 momentum 0.9
  resnet: ResNet-20 for 32x32x3 (3 stages of 3 basic blocks, 16/32/64
          channels, stride 2 and a 1x1 projection with BN where the size
          changes), global average pooling, fc 10; SGD lr 0.1 momentum 0.9

Data are random (the time does not depend on the values), as dlaccel-bench's
are. torch.compile is asked for dynamic=False and a fresh module per batch, so
each batch gets the code specialised to its shape, as a user who trains at
one batch gets (no dynamic-shape kernels from a recompilation).

    $T2PY bench/torch_batch_sweep.py --net cnn --batches 1,8,32,128,512
    $T2PY bench/torch_batch_sweep.py --net resnet --batches 16,64,128 --modes eager

Run with 2 threads unless OMP_NUM_THREADS says otherwise.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


class DigitCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.bn1 = nn.BatchNorm2d(20)
        self.conv2 = nn.Conv2d(20, 20, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(20)
        self.conv3 = nn.Conv2d(20, 20, 3, padding=1)
        self.bn3 = nn.BatchNorm2d(20)
        self.fc = nn.Linear(20 * 24 * 24, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        return self.fc(torch.flatten(x, 1))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet20(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.b = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                layers.append(Block(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.layers(F.relu(self.b(self.c(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class WithLoss(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)


NETS = {
    # name: (module, image shape (C, H, W), learning rate)
    "cnn": (DigitCNN, (1, 28, 28), 0.01),
    "resnet": (ResNet20, (3, 32, 32), 0.1),
}


def train_step(net, lr, compiled):
    wl = WithLoss(net)
    if compiled:
        wl = torch.compile(wl, dynamic=False)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = wl(x, y)
        loss.backward()
        opt.step()
        return loss

    return step


def inference(net, compiled):
    net = copy.deepcopy(net).eval()
    g = torch.compile(net, dynamic=False) if compiled else net

    def infer(x, y):
        with torch.inference_mode():
            return g(x)

    return infer


def timed(fns, data, repeats, block_s, warmup):
    """fns: {name: f(x, y)}. Warm each up (a compiled one compiles on its first
    call), size a block of calls to about block_s from the warm-up, then run
    the variants' blocks round-robin `repeats` times, so a slow spell of the
    shared machine hits them alike. Returns {name: median ms a call} and the
    seconds the first calls took."""
    first_s, per_call = {}, {}
    for k, f in fns.items():
        t0 = time.perf_counter()
        f(*data[0])
        first_s[k] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(warmup):
            f(*data[i % len(data)])
        per_call[k] = (time.perf_counter() - t0) / max(warmup, 1)
    iters = {k: max(1, min(1000, int(block_s / max(per_call[k], 1e-6)))) for k in fns}
    out = {k: [] for k in fns}
    n = 0
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(iters[k]):
                f(*data[n % len(data)])
                n += 1
            out[k].append((time.perf_counter() - t0) * 1e3 / iters[k])
    return {k: round(statistics.median(v), 4) for k, v in out.items()}, first_s


def sweep_one(name, batch, modes, what, args):
    make, shape, lr = NETS[name]
    torch.manual_seed(0)
    data = [(torch.randn(batch, *shape), torch.randint(0, 10, (batch,))) for _ in range(4)]
    base = make()
    res, first = {}, {}
    if "train" in what:
        fns = {}
        for m in modes:
            net = copy.deepcopy(base)
            fns[m] = train_step(net, lr, m == "compile")
        res["train_ms"], f = timed(fns, data, args.repeats, args.block_s, args.warmup)
        first.update({"train_" + k: round(v, 2) for k, v in f.items()})
    if "infer" in what:
        fns = {m: inference(base, m == "compile") for m in modes}
        res["infer_ms"], f = timed(fns, data, args.repeats, args.block_s, args.warmup)
        first.update({"infer_" + k: round(v, 2) for k, v in f.items()})
    res["first_call_s"] = first
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--net", choices=sorted(NETS), required=True)
    ap.add_argument("--batches", default="1,8,32,128,512",
                    help="comma-separated batch sizes (default %(default)s)")
    ap.add_argument("--modes", default="eager,compile",
                    help="eager and/or compile (default %(default)s)")
    ap.add_argument("--what", default="train,infer", help="train and/or infer")
    ap.add_argument("--repeats", type=int, default=5, help="timed blocks a variant")
    ap.add_argument("--block-s", type=float, default=0.15, help="seconds a timed block")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls after the first")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if any(m not in ("eager", "compile") for m in modes):
        ap.error("--modes takes eager and/or compile")
    if "compile" in modes and not hasattr(torch, "compile"):
        modes.remove("compile")  # PyTorch 1.x: eager only
    what = args.what.split(",")
    t0 = time.perf_counter()
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(), "net": args.net,
           "modes": modes, "batches": {}}
    for b in (int(x) for x in args.batches.split(",") if x):
        out["batches"][str(b)] = sweep_one(args.net, b, modes, what, args)
        print(f"# {args.net} batch {b}: {out['batches'][str(b)]}", file=sys.stderr, flush=True)
    out["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())

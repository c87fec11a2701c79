#!/usr/bin/python3
"""Trains the PyTorch peer (../shared/peers/cnn_fmnist.py) from dlaccel's start.

examples/cnn_fmnist --save-initial NET writes the initialized network (a
safetensors file, docs/networks.md); this script loads its weights and its
mean image into the peer's Net and trains it as the peer does (SGD momentum
0.9, lr 0.01, batch 128, the last partial batch dropped) on the mini-batches
dlaccel's queue makes with the same seed (numpy's default_rng(seed), one
permutation per epoch). It prints the loss of the first iterations and the
test accuracy after each epoch, to set beside

    examples/cnn_fmnist --seed S --save-initial NET --first-losses N

Same start, same batches: the two differ only in rounding, so the first
losses agree to about 1e-5 and the runs drift apart from there (a few
iterations in, as two float32 PyTorch runs with different summation orders
do); the final accuracies then differ as runs with different seeds do.

    /usr/bin/python3 bench/pytorch_same_start.py NET [--seed S] [--epochs E] [--first-losses N]

Needs python3-torch, python3-numpy and dataset-fashion-mnist; DLA_PEERS
names the peers folder (default ../shared/peers beside the repository).
"""
import argparse
import json
import os
import struct
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("DLA_PEERS", os.path.join(ROOT, "..", "shared", "peers")))
import bench_common as bc  # noqa: E402  (the peers' data loader)
import cnn_fmnist as peer  # noqa: E402


def read_net(path):
    """name -> numpy array in dlaccel's reversed (row-major) shape."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    out = {}
    for name, e in head.items():
        if name == "__metadata__":
            continue
        if e["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {e['dtype']}; this script reads single precision nets")
        b, f = e["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + f], "<f4").reshape(e["shape"]).copy()
    return out


def load_into(net, t):
    """dlaccel's S1 is the image row (MATLAB's height), PyTorch's last dim
    the column: the reversed shape [F, C, S2, S1] is [F, C, col, row], so
    filters swap their last two dims, and the fc weights' input index
    (row + 24 col + 576 channel) is reordered to PyTorch's flatten
    (col + 24 row + 576 channel)."""
    with torch.no_grad():
        for i, conv in enumerate([net.conv1, net.conv2, net.conv3], 1):
            conv.weight.copy_(torch.from_numpy(t[f"learnables/conv{i}/Weights"]).transpose(2, 3))
            conv.bias.copy_(torch.from_numpy(t[f"learnables/conv{i}/Bias"].reshape(-1)))
        for i, bn in enumerate([net.bn1, net.bn2, net.bn3], 1):
            bn.weight.copy_(torch.from_numpy(t[f"learnables/bn{i}/Scale"].reshape(-1)))
            bn.bias.copy_(torch.from_numpy(t[f"learnables/bn{i}/Offset"].reshape(-1)))
            bn.running_mean.copy_(torch.from_numpy(t[f"state/bn{i}/TrainedMean"].reshape(-1)))
            bn.running_var.copy_(torch.from_numpy(t[f"state/bn{i}/TrainedVariance"].reshape(-1)))
        w = t["learnables/fc/Weights"].reshape(-1, 10).T  # MATLAB's 10 x 11520, (row, col, c) inputs
        w = w.reshape(10, 20, 24, 24).transpose(0, 1, 3, 2).reshape(10, -1)
        net.fc.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
        net.fc.bias.copy_(torch.from_numpy(t["learnables/fc/Bias"].reshape(-1)))
    # the input layer's mean image, rows and columns back in numpy's order
    return t["fixed/input/Mean"].reshape(28, 28).T.copy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("net")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--first-losses", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    t = read_net(args.net)
    net = peer.Net()
    mean = load_into(net, t)
    xtr, ytr, xte, yte = bc.load_fashion_mnist()
    xtr = torch.from_numpy((xtr.astype(np.float32) / 255.0 - mean)[:, None].copy())
    xte = torch.from_numpy((xte.astype(np.float32) / 255.0 - mean)[:, None].copy())
    ytr, yte = torch.from_numpy(ytr.astype(np.int64)), torch.from_numpy(yte.astype(np.int64))
    step = peer.make_step(peer.WithLoss(net), net.parameters())
    rng = np.random.default_rng(args.seed)
    nb, k = xtr.shape[0] // peer.BATCH, 0
    for ep in range(1, args.epochs + 1):
        perm = torch.from_numpy(rng.permutation(xtr.shape[0]))
        tot, t0 = 0.0, time.perf_counter()
        for i in range(nb):
            idx = perm[i * peer.BATCH:(i + 1) * peer.BATCH]
            loss = step(xtr[idx], ytr[idx]).item()
            tot += loss
            k += 1
            if k <= args.first_losses:
                print(f"iteration {k}: loss {loss:.6f}", flush=True)
        acc = peer.evaluate(net, xte, yte)
        print(f"epoch {ep}/{args.epochs}: {time.perf_counter() - t0:.1f} s, mean loss {tot / nb:.4f}, "
              f"test accuracy {100 * acc:.2f}%", flush=True)


if __name__ == "__main__":
    main()

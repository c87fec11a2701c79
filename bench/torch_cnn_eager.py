#!/usr/bin/env python3
"""The digit CNN's train step and inference in eager PyTorch, measured as
../shared/peers/cnn_torch2.py measures them (its data, network, step and
cnn_fmnist.interleaved: 20 calls x 5 repeats, warm-up 10 and 5, batch 128,
2 threads) but without the torch.compile variants, so that PyTorch 1.13
(Debian's, which has no torch.compile) runs it too. `cnn_fmnist.py timing`
times ten variants and a profile instead: under load it ran over five
minutes before its first line, where this takes one or two.

    /usr/bin/python3 bench/torch_cnn_eager.py [--threads 2]   # DLA_PEERS: the peers folder

Prints one JSON object: train_ms and infer_ms (medians of the repeats).
"""
import argparse
import json
import os
import statistics
import sys

sys.dont_write_bytecode = True  # nothing written into the shared peers folder
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("DLA_PEERS", os.path.join(here, "..", "..", "shared", "peers")))
import torch  # noqa: E402
import cnn_fmnist as cf  # noqa: E402  (bench_common sets 2 threads)

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=2)
torch.set_num_threads(ap.parse_args().threads)
torch.manual_seed(0)
xtr, ytr, _, _ = cf.prepare_data()
batches = cf.make_batches(xtr, ytr, 40)
net = cf.Net()
train = cf.interleaved({"eager": cf.make_step(cf.WithLoss(net), net.parameters())}, batches,
                       iters=20, repeats=5, warmup=10)
net.eval()
with torch.inference_mode():
    infer = cf.interleaved({"eager": lambda x, y: net(x)}, batches, iters=20, repeats=5, warmup=5)
print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                  "train_ms": {k: round(statistics.median(v), 2) for k, v in train.items()},
                  "infer_ms": {k: round(statistics.median(v), 2) for k, v in infer.items()}}))

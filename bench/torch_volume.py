#!/usr/bin/env python3
"""The PyTorch reference of dlaccel-bench's volume_train_step /
volume_inference: the 3-D network of examples/volumes
(examples/volume_net.h) on a batch of 32 16x16x16x1 volumes in float32.

    conv 3x3x3x8 (same) -> BN -> ReLU -> maxpool 2x2x2 stride 2
    -> conv 3x3x3x16 (same) -> BN -> ReLU -> maxpool 2x2x2 stride 2
    -> conv 3x3x3x32 (same) -> ReLU -> global average pooling
    -> Linear(32, 3) -> cross-entropy

The step and the timing are bench/torch_mobile.py's (SGD with momentum
0.9 at 0.01; inference in eval mode under torch.no_grad).

    python3 bench/torch_volume.py [--rounds 5] [--steps 10] [--threads 2] [--compile]
"""
import torch
import torch.nn as nn

from torch_mobile import arguments, run_network


def network():
    return nn.Sequential(
        nn.Conv3d(1, 8, 3, padding=1), nn.BatchNorm3d(8), nn.ReLU(), nn.MaxPool3d(2, 2),
        nn.Conv3d(8, 16, 3, padding=1), nn.BatchNorm3d(16), nn.ReLU(), nn.MaxPool3d(2, 2),
        nn.Conv3d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool3d(1), nn.Flatten(),
        nn.Linear(32, 3))


def main():
    a = arguments()
    x = torch.rand(32, 1, 16, 16, 16)
    t = torch.arange(32) % 3
    run_network(network, x, t, "3-D CNN", a)


if __name__ == "__main__":
    main()

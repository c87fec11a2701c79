#!/usr/bin/env python3
"""dla_ctc against PyTorch's ctc_loss on bench/ctc_values's fixed data:

    bench/ctc_values /tmp/ctc_values.txt      # in the build tree
    python3 bench/torch_ctc.py /tmp/ctc_values.txt

The same logits go through log_softmax into torch.nn.functional.ctc_loss
(blank 0, reduction "none", input lengths 10 7 9, target lengths 3 1 4);
prints both losses and the largest differences of the losses and of the
gradients with respect to the logits, in double. Through the softmax,
because PyTorch's CTC backward gives the gradient for log-probabilities
that are a log_softmax's (it differs by 1 from the plain derivative for
inputs taken as they are); dla_ctc gives the plain derivative, which its
finite-difference tests check.
"""
import sys

import torch

C, B, T = 5, 3, 10
v = [float(x) for x in open(sys.argv[1] if len(sys.argv) > 1 else "ctc_values.txt")]
n = C * B * T
# dlaccel's C x B x T, column-major: element c + C*(b + B*t) is [t][b][c].
z = torch.tensor(v[:n], dtype=torch.float64).reshape(T, B, C).requires_grad_(True)
loss_dla = torch.tensor(v[n:n + B], dtype=torch.float64)
grad_dla = torch.tensor(v[n + B:], dtype=torch.float64).reshape(T, B, C)
targets = torch.tensor([[1, 2, 2, 0], [4, 0, 0, 0], [3, 3, 1, 2]])
loss = torch.nn.functional.ctc_loss(torch.log_softmax(z, dim=2), targets,
                                    torch.tensor([10, 7, 9]), torch.tensor([3, 1, 4]),
                                    blank=0, reduction="none")
loss.sum().backward()
print("PyTorch %s losses: %s" % (torch.__version__, loss.detach().tolist()))
print("dla_ctc losses:        %s" % loss_dla.tolist())
dl = (loss.detach() - loss_dla).abs().max().item()
dg = (z.grad - grad_dla).abs().max().item()
print("largest difference: losses %.3g, gradients %.3g (largest gradient %.3g)"
      % (dl, dg, z.grad.abs().max().item()))
sys.exit(0 if dl < 1e-10 and dg < 1e-10 else 1)

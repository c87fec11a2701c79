#!/usr/bin/env python3
"""The PyTorch reference of dlaccel-bench's token_train_step /
token_inference: the transformer encoder of examples/tokens
(examples/token_net.h) on a batch of 32 token sequences of 24 steps
(tokens 1..50, sequence b holding 8 + b % 17 of them, then padding 0, as
the benchmark's), float32.

    embedding (51 x 32: tokens 1..50, anything else the last row, as
    MATLAB's wordEmbeddingLayer) + learned position embedding (24 x 32)
    -> MultiheadAttention(32, 4 heads, key_padding_mask: the padded
       steps) + residual -> LayerNorm
    -> Linear(32, 64) -> GELU -> Linear(64, 32) + residual -> LayerNorm
    -> max over the data steps -> Linear(32, 2) -> cross-entropy

The padding mask is token_net.h's: the tokens themselves (0 is padding),
given to the attention (selfAttentionLayer's HasPaddingMaskInput) and to
the max (padded steps set to -1e30, as the masked globalMaxPooling1d).

The step and the timing are bench/torch_mobile.py's (SGD with momentum
0.9 at 0.01; inference in eval mode under torch.no_grad).

    python3 bench/torch_tokens.py [--rounds 5] [--steps 10] [--threads 2] [--compile]
"""
import torch
import torch.nn as nn

from torch_mobile import arguments, run_network

VOCAB, T, D, HEADS, CLASSES, B = 50, 24, 32, 4, 2, 32


class TokenNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.words = nn.Embedding(VOCAB + 1, D)
        self.positions = nn.Parameter(torch.randn(T, D) * 0.01)
        self.attention = nn.MultiheadAttention(D, HEADS, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
        self.fc = nn.Linear(D, CLASSES)

    def forward(self, tokens):
        # MATLAB's map-to-last: 1..VOCAB to rows 0..VOCAB-1, the rest (the
        # padding 0) to row VOCAB.
        inside = (tokens >= 1) & (tokens <= VOCAB)
        x = self.words(torch.where(inside, tokens - 1, VOCAB))
        x = x + self.positions[: tokens.shape[1]]
        padded = tokens == 0
        x = self.norm1(x + self.attention(x, x, x, key_padding_mask=padded,
                                          need_weights=False)[0])
        x = self.norm2(x + self.ff(x))
        x = x.masked_fill(padded.unsqueeze(-1), -1e30)
        return self.fc(x.amax(1))


def main():
    a = arguments()
    x = torch.zeros(B, T, dtype=torch.long)
    for b in range(B):
        for t in range(8 + b % 17):
            x[b, t] = 1 + (b * 7 + t * 13) % VOCAB
    t = torch.arange(B) % CLASSES
    run_network(TokenNet, x, t, "transformer encoder", a)


if __name__ == "__main__":
    main()

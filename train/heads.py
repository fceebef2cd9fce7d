"""Head scores as TransformerLens defines them, on a sequence repeated twice.

A probe is n random tokens followed by the same n tokens: [B, 2n].
  previous-token score of a head: mean over queries i >= 1 of its attention to i - 1;
  induction score: mean over the second copy's queries n + i of its attention to
                   i + 1, the token after the query token's first occurrence;
  first-token score: mean over queries i >= 1 of attention to position 0 (a sink).
tests/daemon/check_mini_heads.c computes the same previous-token and induction scores,
the viewer's "Find heads" (web/findheads.js) all three.
"""

import numpy as np
import torch


def repeated_tokens(vocab_plain, rows, n, rng):
    """[rows, 2n] ids: n uniform ids from [0, vocab_plain), then the same n again."""
    first = rng.integers(0, vocab_plain, size=(rows, n))
    return torch.from_numpy(np.concatenate([first, first], axis=1))


def scores(att, n):
    """att [B, H, 2n, 2n] -> (prev [H], induction [H], first [H])."""
    L = att.shape[-1]
    i = torch.arange(1, L)
    prev = att[:, :, i, i - 1].mean(dim=(0, 2))
    q = torch.arange(n, L)
    ind = att[:, :, q, q - n + 1].mean(dim=(0, 2))
    first = att[:, :, 1:, 0].mean(dim=(0, 2))
    return prev, ind, first


def best_scores(atts, n):
    """Best previous-token and induction score over every layer's heads."""
    prev = max(scores(a, n)[0].max().item() for a in atts)
    ind = max(scores(a, n)[1].max().item() for a in atts)
    return prev, ind

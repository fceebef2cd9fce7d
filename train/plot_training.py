"""Draws the training log of train_mini.py: losses and head scores against steps.

    /usr/bin/python3 train/plot_training.py models/mini/training.csv docs/mini-model-training.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def column(rows, name):
    return [float(r[name]) if r[name] != "" else float("nan") for r in rows]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    steps = column(rows, "step")
    fig, (loss, heads) = plt.subplots(1, 2, figsize=(10, 3.6), dpi=100)
    loss.plot(steps, column(rows, "train_loss"), label="train (moving average)")
    loss.plot(steps, column(rows, "val_loss"), label="held-out fortunes (rows mixed as in training)")
    loss.set_xlabel("step")
    loss.set_ylabel("cross-entropy (nats per token)")
    loss.set_title("Loss")
    loss.legend()
    loss.grid(alpha=0.3)
    heads.plot(steps, column(rows, "prev_token"), label="best previous-token score")
    heads.plot(steps, column(rows, "induction"), label="best induction score")
    heads.axhline(0.8, color="C0", ls=":", lw=1)
    heads.axhline(0.5, color="C1", ls=":", lw=1)
    heads.set_ylim(0, 1)
    heads.set_xlabel("step")
    heads.set_title("Heads on 50 random tokens, repeated")
    heads.legend(loc="lower right")
    heads.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst)


if __name__ == "__main__":
    main()

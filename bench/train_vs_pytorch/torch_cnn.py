#!/usr/bin/python3
"""examples/train_cnn's model and training loop in PyTorch, for bench/train_vs_pytorch/run.py.

conv 5x5 (32, SAME) -> relu -> max-pool 2x2 -> conv 5x5 (64, SAME) -> relu -> max-pool 2x2
-> dense 128 (relu) -> dense 10; softmax cross-entropy; Adam; Fashion-MNIST from the gzipped
IDX files. Prints train_cnn's epoch line, so one parser reads both:
  epoch 1/1: loss L  train accuracy A  test loss L  test accuracy A  (N images/s, S s)
images/s covers the training loop only (batch assembly, step, reading loss and accuracy), like
train_cnn's; the shuffle before it and the evaluation after it are not timed.

By default the weights start from dagrad's Glorot draws and the batches come in dagrad's order
(same seed), so both frameworks train the same model on the same batches and their accuracies
are comparable run for run. Needs Debian's python3-torch and python3-numpy
(scripts/setup.sh --bench), which run on /usr/bin/python3.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


# dagrad's SplitMix64 (core/random.hpp), vectorised: numpy's uint64 arrays wrap like C++'s.
def splitmix_stream(state, count):
    with np.errstate(over="ignore"):
        z = np.uint64(state) + np.arange(1, count + 1, dtype=np.uint64) * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def splitmix_seed(seed, stream):
    """State of SplitMix64(seed, stream) after its constructor's first draw."""
    return ((seed ^ ((stream * 0xD1B54A32D192ED03 + GOLDEN) & MASK)) + GOLDEN) & MASK


def dagrad_glorot(seed, var_index, shape, fan_in, fan_out):
    """The values of layers::VariableSet::create_glorot for variable number `var_index`."""
    stream_state = splitmix_seed(seed, var_index)
    var_seed = int(splitmix_stream(stream_state, 1)[0])
    bits = splitmix_stream(var_seed, int(np.prod(shape)))
    u = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return (limit * (2 * u - 1)).astype(np.float32).reshape(shape)


def dagrad_batch_order(n, seed, epoch):
    """BatchSampler's Fisher-Yates permutation for (seed, epoch)."""
    order = list(range(n))
    draws = splitmix_stream(splitmix_seed(seed, epoch), max(n - 1, 0)).tolist()
    for k, i in enumerate(range(n, 1, -1)):
        j = (draws[k] * i) >> 64
        order[i - 1], order[j] = order[j], order[i - 1]
    return torch.tensor(order, dtype=torch.int64)


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        raw = f.read()
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        sys.exit(f"error: {path}: not an unsigned-byte IDX file")
    rank = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def load_split(data_dir, split):
    def find(name):
        for p in (os.path.join(data_dir, name + ".gz"), os.path.join(data_dir, name)):
            if os.path.exists(p):
                return p
        sys.exit(f"error: {data_dir}: no {name}[.gz]")

    images = read_idx(find(f"{split}-images-idx3-ubyte"))
    labels = read_idx(find(f"{split}-labels-idx1-ubyte"))
    # As core/dataset.cpp: byte * (1/255) in double, rounded once to float.
    x = (images.astype(np.float64) * (1.0 / 255.0)).astype(np.float32)
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(labels.astype(np.int64))  # NCHW


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding="same")
        self.conv2 = nn.Conv2d(32, 64, 5, padding="same")
        self.dense1 = nn.Linear(64 * 7 * 7, 128)
        self.dense2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.dense1(torch.flatten(x, 1)))
        return self.dense2(x)

    @torch.no_grad()
    def init_like_dagrad(self, seed):
        """dagrad's variables in creation order (kernel, bias per layer), moved to PyTorch's layouts:
        HWIO -> OIHW, and dense1's rows from NHWC's (h, w, c) flatten order to NCHW's (c, h, w)."""
        g = lambda i, shape, fi, fo: torch.from_numpy(dagrad_glorot(seed, i, shape, fi, fo))
        self.conv1.weight.copy_(g(0, (5, 5, 1, 32), 25, 25 * 32).permute(3, 2, 0, 1))
        self.conv2.weight.copy_(g(2, (5, 5, 32, 64), 25 * 32, 25 * 64).permute(3, 2, 0, 1))
        d1 = g(4, (7, 7, 64, 128), 3136, 128)
        self.dense1.weight.copy_(d1.permute(3, 2, 0, 1).reshape(128, 3136))
        self.dense2.weight.copy_(g(6, (128, 10), 128, 10).t())
        for layer in (self.conv1, self.conv2, self.dense1, self.dense2):
            layer.bias.zero_()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images (0: all)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--init", choices=("dagrad", "torch"), default="dagrad",
                    help="dagrad: its Glorot weights and batch order; torch: PyTorch's defaults")
    ap.add_argument("--channels-last", action="store_true", help="NHWC memory format for images and weights")
    o = ap.parse_args()

    # Before any parallel work: PyTorch fixes its pools at first use.
    torch.set_num_interop_threads(1)
    torch.set_num_threads(o.threads)

    x_train, y_train = load_split(o.data, "train")
    if 0 < o.limit < len(x_train):
        x_train, y_train = x_train[: o.limit], y_train[: o.limit]
    x_test, y_test = load_split(o.data, "t10k")
    fmt = torch.channels_last if o.channels_last else torch.contiguous_format
    x_train, x_test = x_train.contiguous(memory_format=fmt), x_test.contiguous(memory_format=fmt)

    torch.manual_seed(o.seed)
    model = Net()
    if o.init == "dagrad":
        model.init_like_dagrad(o.seed)
    model = model.to(memory_format=fmt)
    # Keras' betas and epsilon, as dagrad's Adam. PyTorch adds epsilon before the bias correction
    # of sqrt(v), TF (and dagrad) after; at 1e-7 that changes nothing visible.
    opt = torch.optim.Adam(model.parameters(), lr=o.lr, betas=(0.9, 0.999), eps=1e-7)

    n = len(x_train)
    print(f"training on {n} images, testing on {len(x_test)}; batch {o.batch_size}, adam lr {o.lr:g}, "
          f"seed {o.seed}, {o.threads} threads, PyTorch {torch.__version__} "
          f"({'channels_last' if o.channels_last else 'NCHW'}, init {o.init})", flush=True)
    for epoch in range(o.epochs):
        if o.init == "dagrad":
            order = dagrad_batch_order(n, o.seed, epoch)
        else:
            order = torch.randperm(n, generator=torch.Generator().manual_seed(o.seed * 1000 + epoch))
        model.train()
        loss_sum = correct = 0.0
        start = time.perf_counter()
        for begin in range(0, n, o.batch_size):
            idx = order[begin : begin + o.batch_size]
            x, y = x_train[idx], y_train[idx]
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(idx)
            correct += (logits.argmax(1) == y).sum().item()
        seconds = time.perf_counter() - start
        test_loss, test_acc = evaluate(model, x_test, y_test)
        print(f"epoch {epoch + 1}/{o.epochs}: loss {loss_sum / n:.4f}  train accuracy {correct / n:.4f}  "
              f"test loss {test_loss:.4f}  test accuracy {test_acc:.4f}  ({n / seconds:.0f} images/s, {seconds:.1f} s)",
              flush=True)


@torch.no_grad()
def evaluate(model, x, y):
    """Mean loss and accuracy over a split. Batches of 100, not train_cnn's 1000: PyTorch's 100 MB
    activations of 1000 images come fresh from mmap each time and fault in page by page (8x slower)."""
    model.eval()
    loss = correct = 0.0
    for begin in range(0, len(x), 100):
        logits = model(x[begin : begin + 100])
        loss += F.cross_entropy(logits, y[begin : begin + 100], reduction="sum").item()
        correct += (logits.argmax(1) == y[begin : begin + 100]).sum().item()
    return loss / len(x), correct / len(x)


if __name__ == "__main__":
    main()

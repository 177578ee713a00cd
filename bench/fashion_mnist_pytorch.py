#!/usr/bin/env python3
"""PyTorch twin of wick-train, for wall-time comparisons on the same machine.

Same data (the IDX files of Debian's dataset-fashion-mnist, normalized with mean 0.2860 and
std 0.3530), same models, optimizer, batch size, epochs and loader settings (shuffled batches
from one worker, pinned on a GPU, the loss read every 10 steps on a GPU), so that the two
programs do the same work:

    python3 bench/fashion_mnist_pytorch.py --model cnn --epochs 5
    build/bin/wick-train --model cnn --epochs 5 --plot ""
"""
import argparse
import gzip
import os
import struct
import time

import numpy as np
import torch
from torch import nn


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(root, train):
    prefix = "train" if train else "t10k"
    images = read_idx(os.path.join(root, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(root, f"{prefix}-labels-idx1-ubyte.gz"))
    x = (torch.from_numpy(images.astype(np.float32) / 255.0) - 0.2860) / 0.3530
    return torch.utils.data.TensorDataset(x.unsqueeze(1), torch.from_numpy(labels.astype(np.int64)))


def make_model(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            correct += (model(x).argmax(1) == y).sum().item()
            total += y.numel()
    model.train()
    return correct / total


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()

    start = time.perf_counter()
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    pin = device.type == "cuda"
    train_loader = torch.utils.data.DataLoader(load(args.data_dir, True), batch_size=args.batch_size, shuffle=True,
                                               num_workers=args.workers, pin_memory=pin)
    test_loader = torch.utils.data.DataLoader(load(args.data_dir, False), batch_size=1000,
                                              num_workers=args.workers, pin_memory=pin)
    model = make_model(args.model).to(device)
    criterion = nn.CrossEntropyLoss()
    if args.optimizer == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    read_every = 10 if pin else 1
    print(f"pytorch {torch.__version__}: {args.model} on Fashion-MNIST, {device}, {args.epochs} epochs, "
          f"batch {args.batch_size}, {args.optimizer} lr {args.lr}, seed {args.seed}")

    steps = len(train_loader)
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        epoch_start = time.perf_counter()
        losses = []
        for step, (x, y) in enumerate(train_loader, 1):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            if step % read_every == 0 or step == steps:
                losses.append(loss.item())
        seconds = time.perf_counter() - epoch_start
        accuracy = evaluate(model, test_loader, device)
        print(f"epoch {epoch}/{args.epochs}: train loss {sum(losses) / len(losses):.4f}, "
              f"test accuracy {100 * accuracy:.2f}%, {len(train_loader.dataset) / seconds:.0f} samples/s, "
              f"{seconds:.1f} s")
    total = time.perf_counter() - start
    print(f"test accuracy {100 * accuracy:.2f}% after {args.epochs} epochs, {total:.1f} s in all")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small, self-checking Horovod + PyTorch training job on synthetic data.

What multinode.horovod.horovod_launch runs when no command is given. Nothing is downloaded: each
rank draws its own batches of a synthetic regression problem. It runs on CPUs with Gloo and on
NVIDIA GPUs with NCCL (one GPU per process, chosen by local rank), and it checks the cluster
rather than trusting it:

* every rank logs its rank, local rank, host and device;
* an allreduce (sum) of ``rank + 1`` must equal ``n(n+1)/2``; every rank prints the result and
  exits with status 3 when it is wrong;
* after training, the model parameters must be identical on every rank (status 4 otherwise);
* rank 0 prints the hosts that took part and, with ``--output-dir``, writes ``result.json``.

Run it under horovodrun, for example ``horovodrun -np 2 -H localhost:2 python3 horovod_train_example.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

import horovod.torch as hvd
import torch
from torch import nn

EXIT_ALLREDUCE = 3
EXIT_DIVERGED = 4
FEATURES = 32


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3, help="passes over the synthetic data")
    parser.add_argument("--steps-per-epoch", type=int, default=20, help="batches per epoch and rank")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per batch and rank")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate of one process (scaled by size)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="auto: cuda when present")
    parser.add_argument("--output-dir", default="", help="directory for result.json (rank 0)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the problem; each rank adds its rank")
    return parser.parse_args(argv)


def log(message: str) -> None:
    print(f"[rank {hvd.rank()}/{hvd.size()} {socket.gethostname()}] {message}", flush=True)


def pick_device(choice: str) -> torch.device:
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no CUDA device is visible to this process")
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def check_allreduce(device: torch.device) -> float:
    """Sum ``rank + 1`` over all ranks; it must be n(n+1)/2 on every rank."""
    size = hvd.size()
    total = hvd.allreduce(torch.tensor([hvd.rank() + 1.0], device=device), op=hvd.Sum, name="check.sum")
    value = float(total.item())
    expected = size * (size + 1) / 2
    verdict = "OK" if value == expected else "WRONG"
    log(f"allreduce check: sum of rank+1 over {size} ranks = {value:g} (expected {expected:g}) {verdict}")
    if verdict != "OK":
        sys.exit(EXIT_ALLREDUCE)
    return value


def train(args: argparse.Namespace, device: torch.device) -> float:
    torch.manual_seed(args.seed)  # the same problem and initial model on every rank ...
    true_weights = torch.randn(FEATURES, 1)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    generator = torch.Generator().manual_seed(args.seed + 1 + hvd.rank())  # ... different data per rank
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    loss_fn = nn.MSELoss()
    loss = torch.zeros(())
    for epoch in range(1, args.epochs + 1):
        started = time.monotonic()
        for _ in range(args.steps_per_epoch):
            features = torch.randn(args.batch_size, FEATURES, generator=generator)
            target = features @ true_weights + 0.01 * torch.randn(args.batch_size, 1, generator=generator)
            optimizer.zero_grad()
            loss = loss_fn(model(features.to(device)), target.to(device))
            loss.backward()
            optimizer.step()
        mean_loss = float(hvd.allreduce(loss.detach(), op=hvd.Average, name=f"loss.{epoch}").item())
        if hvd.rank() == 0:
            log(f"epoch {epoch}/{args.epochs} loss {mean_loss:.4f} ({time.monotonic() - started:.2f}s)")
    # Identical parameters on every rank is what data-parallel training promises.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).to(device)
    spread = hvd.allreduce(flat, op=hvd.Max, name="params.max") - hvd.allreduce(flat, op=hvd.Min, name="params.min")
    largest = float(spread.abs().max().item())
    if largest > 1e-5:
        log(f"parameters differ between ranks by up to {largest:g}: training diverged")
        sys.exit(EXIT_DIVERGED)
    log(f"parameters identical on all ranks; final loss {float(loss.item()):.4f}")
    return mean_loss


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    hvd.init()
    device = pick_device(args.device)
    log(f"started: local rank {hvd.local_rank()}, device {device}, pid {os.getpid()}, torch {torch.__version__}")
    total = check_allreduce(device)
    hosts = hvd.allgather_object(socket.gethostname(), name="hosts")
    loss = train(args, device)
    if hvd.rank() == 0:
        distinct = sorted(set(hosts))
        log(f"hosts: {len(distinct)} distinct of {hvd.size()} ranks: {', '.join(distinct)}")
        if args.output_dir:
            os.makedirs(args.output_dir, exist_ok=True)
            result = {
                "size": hvd.size(),
                "hosts_by_rank": hosts,
                "distinct_hosts": distinct,
                "allreduce_sum": total,
                "allreduce_expected": hvd.size() * (hvd.size() + 1) / 2,
                "final_loss": loss,
                "device": str(device),
            }
            path = os.path.join(args.output_dir, "result.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(result, handle, indent=2, sort_keys=True)
            log(f"wrote {path}")
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())

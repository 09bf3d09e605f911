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

With ``--elastic`` it is an elastic job (``horovodrun --host-discovery-script ...``, what
horovod_launch_elastic starts): the model, optimizer, epoch and batch are a ``hvd.elastic.TorchState``
committed every ``--commit-every`` batches, so when a host leaves or joins the ranks that remain go back
to the last commit, the world is rebuilt and training goes on. Every (re)start of the world logs
``elastic: world of N ranks`` and repeats the allreduce check at the new size; ``result.json`` then
holds the sizes the run went through (``sizes``). ``--step-delay`` makes each batch last longer (a
stand-in for real work, so that a short test has time to remove and add a host).

It runs on every Horovod release the role launches (0.18.2 on): the collectives it uses are those
0.18.2 has (``allreduce``, with ``average=False`` for a sum where ``op=`` is missing, and ``allgather``
of tensors); ``hvd.Max`` and ``allgather_object`` came later.

Run it under horovodrun, for example ``horovodrun -np 2 -H localhost:2 python3 horovod_train_example.py``.
"""

import argparse
import json
import os
import socket
import sys
import time
from typing import List, NamedTuple, Optional  # Python 3.6: no PEP 585/604 forms

import horovod.torch as hvd
import torch
from torch import nn

RESULT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW  # novermin (not a union type)

# A host name's bytes, padded, to gather them as a tensor (RFC 1035 names have at most 253).
HOSTNAME_BYTES = 256
EXIT_ALLREDUCE = 3
EXIT_DIVERGED = 4
FEATURES = 32


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3, help="passes over the synthetic data")
    parser.add_argument("--steps-per-epoch", type=int, default=20, help="batches per epoch and rank")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per batch and rank")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate of one process (scaled by size)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="auto: cuda when present")
    parser.add_argument("--output-dir", default="", help="directory for result.json (rank 0)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the problem; each rank adds its rank")
    parser.add_argument("--elastic", action="store_true", help="run as an elastic job (hvd.elastic state and commits)")
    parser.add_argument("--commit-every", type=int, default=5, help="--elastic: batches between two commits")
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds each batch waits (a stand-in for work)")
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


def allreduce_sum(tensor: torch.Tensor, name: str) -> torch.Tensor:
    """The sum over all ranks: ``op=hvd.Sum`` from 0.19, ``average=False`` before (deprecated since)."""
    if hasattr(hvd, "Sum"):
        return hvd.allreduce(tensor, op=hvd.Sum, name=name)
    return hvd.allreduce(tensor, average=False, name=name)


def allreduce_mean(tensor: torch.Tensor, name: str) -> torch.Tensor:
    return hvd.allreduce(tensor, name=name)  # the average, by default on every release


def gather_hostnames() -> List[str]:
    """Every rank's host name, in rank order (allgather of tensors, as 0.18.2 has it)."""
    encoded = socket.gethostname().encode()[:HOSTNAME_BYTES]
    row = torch.zeros(1, HOSTNAME_BYTES, dtype=torch.uint8)
    row[0, : len(encoded)] = torch.tensor(list(encoded), dtype=torch.uint8)
    rows = hvd.allgather(row, name="hosts")
    return [bytes(r.tolist()).rstrip(b"\0").decode(errors="replace") for r in rows]


def check_allreduce(device: torch.device) -> float:
    """Sum ``rank + 1`` over all ranks; it must be n(n+1)/2 on every rank."""
    size = hvd.size()
    total = allreduce_sum(torch.tensor([hvd.rank() + 1.0], device=device), "check.sum")
    value = float(total.item())
    expected = size * (size + 1) / 2
    verdict = "OK" if value == expected else "WRONG"
    log(f"allreduce check: sum of rank+1 over {size} ranks = {value:g} (expected {expected:g}) {verdict}")
    if verdict != "OK":
        sys.exit(EXIT_ALLREDUCE)
    return value


class Job(NamedTuple):
    """What every rank trains: the model, its Horovod optimizer, the problem's true weights, the device."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    true_weights: torch.Tensor
    device: torch.device


def build(args: argparse.Namespace, device: torch.device) -> Job:
    """The same problem and initial model on every rank; the optimizer wrapped by Horovod."""
    torch.manual_seed(args.seed)
    true_weights = torch.randn(FEATURES, 1)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    return Job(model, optimizer, true_weights, device)


def step(args: argparse.Namespace, job: Job, generator: torch.Generator) -> torch.Tensor:
    """One batch of this rank's data (different on every rank), one optimizer step."""
    features = torch.randn(args.batch_size, FEATURES, generator=generator)
    target = features @ job.true_weights + 0.01 * torch.randn(args.batch_size, 1, generator=generator)
    job.optimizer.zero_grad()
    loss = nn.functional.mse_loss(job.model(features.to(job.device)), target.to(job.device))
    loss.backward()
    job.optimizer.step()
    if args.step_delay > 0:
        time.sleep(args.step_delay)
    return loss


def check_identical(model: nn.Module, loss: torch.Tensor, device: torch.device) -> None:
    """Identical parameters on every rank is what data-parallel training promises (status 4 otherwise)."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).to(device)
    every = hvd.allgather(flat.unsqueeze(0), name="params")  # one row per rank; the model is small
    largest = float((every.max(dim=0).values - every.min(dim=0).values).abs().max().item())
    if largest > 1e-5:
        log(f"parameters differ between ranks by up to {largest:g}: training diverged")
        sys.exit(EXIT_DIVERGED)
    log(f"parameters identical on all ranks; final loss {float(loss.item()):.4f}")


def epoch_done(args: argparse.Namespace, epoch: int, loss: torch.Tensor, started: float) -> float:
    mean_loss = float(allreduce_mean(loss.detach(), f"loss.{epoch}").item())
    if hvd.rank() == 0:
        log(f"epoch {epoch}/{args.epochs} loss {mean_loss:.4f} ({time.monotonic() - started:.2f}s)")
    return mean_loss


def train(args: argparse.Namespace, device: torch.device) -> float:
    job = build(args, device)
    generator = torch.Generator().manual_seed(args.seed + 1 + hvd.rank())
    hvd.broadcast_parameters(job.model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(job.optimizer, root_rank=0)
    loss = torch.zeros(())
    mean_loss = 0.0
    for epoch in range(1, args.epochs + 1):
        started = time.monotonic()
        for _step in range(args.steps_per_epoch):
            loss = step(args, job, generator)
        mean_loss = epoch_done(args, epoch, loss, started)
    check_identical(job.model, loss, device)
    return mean_loss


def train_elastic(args: argparse.Namespace, device: torch.device, sizes: List[int]) -> float:
    """Training as an elastic job: state committed every --commit-every batches, the world rebuilt on change."""
    job = build(args, device)
    state = hvd.elastic.TorchState(model=job.model, optimizer=job.optimizer, epoch=1, batch=0, loss=0.0)

    def on_reset() -> None:
        for group in job.optimizer.param_groups:  # the learning rate follows the number of ranks
            group["lr"] = args.lr * hvd.size()

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def run(state: hvd.elastic.TorchState) -> float:
        sizes.append(hvd.size())
        log(f"elastic: world of {hvd.size()} ranks at epoch {state.epoch} batch {state.batch}")
        check_allreduce(device)
        loss = torch.zeros(())
        while state.epoch <= args.epochs:
            # Each rank's data depends on where the run is, so a rank that joins late draws its own.
            generator = torch.Generator().manual_seed(args.seed + 1 + hvd.rank() + 1000 * state.epoch + state.batch)
            started = time.monotonic()
            while state.batch < args.steps_per_epoch:
                loss = step(args, job, generator)
                state.batch += 1
                if state.batch % args.commit_every == 0:
                    state.commit()
            state.loss = epoch_done(args, state.epoch, loss, started)
            state.epoch += 1
            state.batch = 0
            state.commit()
        check_identical(job.model, loss, device)
        return state.loss

    return run(state)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    hvd.init()
    device = pick_device(args.device)
    log(f"started: local rank {hvd.local_rank()}, device {device}, pid {os.getpid()}, torch {torch.__version__}")
    sizes: List[int] = []
    if args.elastic:
        if args.commit_every < 1:
            raise SystemExit("--commit-every must be 1 or more")
        loss = train_elastic(args, device, sizes)
        total = check_allreduce(device)
    else:
        total = check_allreduce(device)
        loss = train(args, device)
    hosts = gather_hostnames()
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
                "elastic": args.elastic,
                # The world sizes this rank saw, one per (re)start of the world (elastic runs).
                "sizes": sizes or [hvd.size()],
            }
            path = os.path.join(args.output_dir, "result.json")
            # The output may be on the share, where root on any node can plant a link at this fixed name.
            fd = os.open(path, RESULT_FLAGS, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(result, handle, indent=2, sort_keys=True)
            log(f"wrote {path}")
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())

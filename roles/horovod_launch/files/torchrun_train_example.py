# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small, self-checking PyTorch DDP training job on synthetic data, for torchrun.

What multinode.horovod.horovod_launch runs when no command is given and horovod_launch_launcher is
torchrun. Nothing is downloaded and Horovod is not needed: torch.distributed's process group comes from
torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Gloo on CPUs and NCCL on
NVIDIA GPUs (one GPU per process, by local rank). It checks the cluster rather than trusting it:

* every rank logs its rank, local rank, host and device;
* an all_reduce (sum) of ``rank + 1`` must equal ``n(n+1)/2`` (status 3 otherwise);
* after training, the model's parameters must be identical on every rank (status 4 otherwise);
* with ``--output-dir``, rank 0 writes a checkpoint after every epoch (``checkpoint.pt``: model, optimizer,
  epoch) and ``result.json`` at the end, and TensorBoard events (the loss per epoch) when
  torch.utils.tensorboard can be imported. A run started again with more ``--epochs`` resumes from the
  checkpoint: every rank loads it (``map_location`` to its own device) and goes on at the next epoch.
* ``--fail-rank N`` makes rank N exit with status 7 after its first epoch (the tests' failing rank).

Run it under torchrun, for example ``torchrun --nproc_per_node 2 torchrun_train_example.py``. It runs on
torch 1.10 (the oldest with torchrun) and newer.
"""

import argparse
import gc
import json
import os
import socket
import sys
import time
from typing import Dict, List, NamedTuple, Optional  # Python 3.6: no PEP 585/604 forms

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

RESULT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW  # novermin (not a union type)
HOSTNAME_BYTES = 256
EXIT_ALLREDUCE = 3
EXIT_DIVERGED = 4
EXIT_ASKED = 7
FEATURES = 32
CHECKPOINT = "checkpoint.pt"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3, help="passes over the synthetic data (in all, resumed too)")
    parser.add_argument("--steps-per-epoch", type=int, default=20, help="batches per epoch and rank")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per batch and rank")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="auto: cuda when present")
    parser.add_argument("--output-dir", default="", help="checkpoint, result.json and TensorBoard events (rank 0)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the problem; each rank adds its rank")
    parser.add_argument("--fail-rank", type=int, default=-1, help="this rank exits with status 7 after epoch 1")
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds each batch waits (a stand-in for work)")
    return parser.parse_args(argv)


def log(message: str) -> None:
    print(f"[rank {dist.get_rank()}/{dist.get_world_size()} {socket.gethostname()}] {message}", flush=True)


def pick_device(choice: str, local_rank: int) -> torch.device:
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no CUDA device is visible to this process")
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def check_allreduce(device: torch.device) -> float:
    """Sum ``rank + 1`` over all ranks; it must be n(n+1)/2 on every rank."""
    size = dist.get_world_size()
    total = torch.tensor([dist.get_rank() + 1.0], device=device)
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    value = float(total.item())
    expected = size * (size + 1) / 2
    verdict = "OK" if value == expected else "WRONG"
    log(f"allreduce check: sum of rank+1 over {size} ranks = {value:g} (expected {expected:g}) {verdict}")
    if verdict != "OK":
        sys.exit(EXIT_ALLREDUCE)
    return value


def gather_hostnames(device: torch.device) -> List[str]:
    encoded = socket.gethostname().encode()[:HOSTNAME_BYTES]
    row = torch.zeros(HOSTNAME_BYTES, dtype=torch.uint8, device=device)
    row[: len(encoded)] = torch.tensor(list(encoded), dtype=torch.uint8, device=device)
    rows = [torch.zeros_like(row) for _unused in range(dist.get_world_size())]
    dist.all_gather(rows, row)
    return [bytes(r.cpu().tolist()).rstrip(b"\0").decode(errors="replace") for r in rows]


def check_identical(model: nn.Module, device: torch.device) -> None:
    """Identical parameters on every rank is what data-parallel training promises (status 4 otherwise)."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).to(device)
    low, high = flat.clone(), flat.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    largest = float((high - low).abs().max().item())
    if largest > 1e-5:
        log(f"parameters differ between ranks by up to {largest:g}: training diverged")
        sys.exit(EXIT_DIVERGED)
    log("parameters identical on all ranks")


def events(output_dir: str) -> Optional[object]:
    """A TensorBoard writer in the output directory (rank 0), or None without TensorBoard."""
    if not output_dir or dist.get_rank() != 0:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: PLC0415 - optional
    except ImportError:
        log("no TensorBoard in the image: no events written")
        return None
    return SummaryWriter(os.path.join(output_dir, "tensorboard"))


def save(path: str, model: nn.Module, optimizer: torch.optim.Optimizer, epoch: int) -> None:
    """The checkpoint, written beside its name and renamed onto it (a run stopped while writing keeps the last)."""
    fresh = f"{path}.{os.getpid()}.new"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, fresh)
    os.replace(fresh, path)


class Job(NamedTuple):
    """What every rank trains: the model, its DDP wrapper and optimizer, the problem's weights, the device."""

    model: nn.Module
    ddp: nn.Module
    optimizer: torch.optim.Optimizer
    true_weights: torch.Tensor
    device: torch.device


def build(args: argparse.Namespace, device: torch.device) -> Job:
    """The same problem and initial model on every rank (DDP broadcasts rank 0's parameters anyway)."""
    torch.manual_seed(args.seed)
    true_weights = torch.randn(FEATURES, 1)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    return Job(model, ddp, torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9), true_weights, device)


def resume(job: Job, checkpoint: str) -> int:
    """The first epoch to train: 1, or the one after the checkpoint's, which every rank loads."""
    if not checkpoint or not os.path.isfile(checkpoint):
        return 1
    state = torch.load(checkpoint, map_location=job.device)
    job.model.load_state_dict(state["model"])
    job.optimizer.load_state_dict(state["optimizer"])
    log(f"resumed from {checkpoint} after epoch {state['epoch']}")
    return int(state["epoch"]) + 1


def epoch(args: argparse.Namespace, job: Job, generator: torch.Generator) -> float:
    """One epoch of this rank's data (different on every rank); the loss averaged over the ranks."""
    loss = torch.zeros((), device=job.device)
    for _step in range(args.steps_per_epoch):
        features = torch.randn(args.batch_size, FEATURES, generator=generator)
        target = features @ job.true_weights + 0.01 * torch.randn(args.batch_size, 1, generator=generator)
        job.optimizer.zero_grad()
        loss = nn.functional.mse_loss(job.ddp(features.to(job.device)), target.to(job.device))
        loss.backward()
        job.optimizer.step()
        if args.step_delay > 0:
            time.sleep(args.step_delay)
    mean = loss.detach().clone()
    dist.all_reduce(mean, op=dist.ReduceOp.SUM)
    return float(mean.item()) / dist.get_world_size()


def train(args: argparse.Namespace, job: Job) -> List[int]:
    """Train from the checkpoint on; rank 0 writes the checkpoint and the loss's events every epoch."""
    rank = dist.get_rank()
    checkpoint = os.path.join(args.output_dir, CHECKPOINT) if args.output_dir else ""
    first = resume(job, checkpoint)
    if rank == 0 and args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
    writer = events(args.output_dir)
    generator = torch.Generator().manual_seed(args.seed + 1 + rank + 1000 * first)
    trained: List[int] = []
    for number in range(first, args.epochs + 1):
        started = time.monotonic()
        mean_loss = epoch(args, job, generator)
        trained.append(number)
        if rank == 0:
            log(f"epoch {number}/{args.epochs} loss {mean_loss:.4f} ({time.monotonic() - started:.2f}s)")
            if writer is not None:
                writer.add_scalar("loss", mean_loss, number)  # type: ignore[attr-defined]
                writer.flush()  # type: ignore[attr-defined]
            if checkpoint:
                save(checkpoint, job.model, job.optimizer, number)
        if rank == args.fail_rank:
            log(f"--fail-rank {rank}: exiting with status {EXIT_ASKED}")
            sys.exit(EXIT_ASKED)
        dist.barrier()
    if writer is not None:
        writer.close()  # type: ignore[attr-defined]
    return trained


def write_result(args: argparse.Namespace, result: Dict[str, object]) -> None:
    path = os.path.join(args.output_dir, "result.json")
    # The output may be on the share, where root on any node can plant a link at this fixed name.
    fd = os.open(path, RESULT_FLAGS, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2, sort_keys=True)
    log(f"wrote {path}")


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    backend = "nccl" if args.device != "cpu" and torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    size = dist.get_world_size()
    device = pick_device(args.device, local_rank)
    log(f"started: local rank {local_rank}, device {device}, backend {backend}, torch {torch.__version__}")
    total = check_allreduce(device)
    job = build(args, device)
    trained = train(args, job)
    check_identical(job.model, device)
    hosts = gather_hostnames(device)
    if dist.get_rank() == 0:
        distinct = sorted(set(hosts))
        log(f"hosts: {len(distinct)} distinct of {size} ranks: {', '.join(distinct)}")
        if args.output_dir:
            result: Dict[str, object] = {
                "size": size,
                "hosts_by_rank": hosts,
                "distinct_hosts": distinct,
                "allreduce_sum": total,
                "allreduce_expected": size * (size + 1) / 2,
                "epochs_trained": trained,
                "device": str(device),
                "backend": backend,
                "torch": torch.__version__,
            }
            write_result(args, result)
    log("done")
    # DDP's reducer must go before its process group: torch 1.13's, destroyed after the group (when main
    # returns), never returns on some ranks (seen on the lab: a rank hung in its exit, every rank done).
    del job
    gc.collect()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Time Horovod's allreduce over message sizes, or train a model on synthetic data, as training runs.

playbooks/benchmark.yml runs it through multinode.horovod.horovod_launch. Tensors live on the GPU of
each process's local rank when one is visible (NCCL), else on the CPU (Gloo). Rank 0 writes the result
as JSON into the run directory (HOROVOD_LAUNCH_RUN_DIR, or --output-dir); the controller computes the
rates (plugins/module_utils/horovod_bench.py).

allreduce: a float32 sum per size: a few to warm up, one timed alone to choose how many fit in
--seconds (at most --iters; rank 0 decides for all), then those, timed together.
synthetic: as Horovod's examples/pytorch/pytorch_synthetic_benchmark.py, a torchvision model trained
on one random batch with DistributedOptimizer, --batches timed after --warmup-batches.
"""

import argparse
import json
import os
import platform
import socket
import time
from typing import Any, Dict, List  # Python 3.6: no PEP 585/604 forms

import horovod.torch as hvd
import torch
import torch.nn.functional as F
from torch import optim


def parse_args() -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    common.add_argument("--output-dir", default=os.environ.get("HOROVOD_LAUNCH_RUN_DIR", "."))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step")
    steps.required = True  # add_subparsers(required=) is Python 3.7's
    allreduce = steps.add_parser("allreduce", parents=[common])
    allreduce.add_argument("--sizes", required=True, help="message sizes in bytes, comma-separated (multiples of 4)")
    allreduce.add_argument("--iters", type=int, default=50, help="most timed allreduces per size")
    allreduce.add_argument("--seconds", type=float, default=2.0, help="time per size the timed allreduces aim at")
    allreduce.add_argument("--warmup", type=int, default=3, help="allreduces before the timing, per size")
    synthetic = steps.add_parser("synthetic", parents=[common])
    synthetic.add_argument("--model", default="resnet50", help="a model of torchvision.models")
    synthetic.add_argument("--batch-size", type=int, default=32, help="images per batch and process")
    synthetic.add_argument("--image-size", type=int, default=224, help="height and width of the images")
    synthetic.add_argument("--warmup-batches", type=int, default=10)
    synthetic.add_argument("--batches", type=int, default=50, help="timed batches per process")
    synthetic.add_argument(
        "--node-batches", type=int, default=0, help="batches each process first times alone, no allreduce (0: none)"
    )
    return parser.parse_args()


def pick_device(choice: str) -> torch.device:
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no CUDA device is visible to this process")
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def about(device: torch.device) -> Dict[str, Any]:
    backend = "nccl" if device.type == "cuda" and hvd.nccl_built() else ("mpi" if hvd.mpi_enabled() else "gloo")
    return {"np": hvd.size(), "device": device.type, "backend": backend, "torch": torch.__version__,
            "python": platform.python_version()}  # fmt: skip


def nccl_version() -> str:
    """NCCL's version as torch reports it: a tuple (torch 1.10 and later), a packed number before."""
    version = torch.cuda.nccl.version()
    return ".".join(map(str, version)) if isinstance(version, (tuple, list)) else str(version)


def allreduce(args: argparse.Namespace, device: torch.device) -> Dict[str, Any]:
    results = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        tensor = torch.zeros(size // 4, dtype=torch.float32, device=device)  # zeros: the sum stays finite
        name = f"bench.allreduce.{size}"
        for _unused in range(max(1, args.warmup if size < 64 * 1024**2 else 1)):
            hvd.allreduce_(tensor, op=hvd.Sum, name=name)
        sync(device)
        start = time.perf_counter()
        hvd.allreduce_(tensor, op=hvd.Sum, name=name)
        sync(device)
        once = time.perf_counter() - start
        iters = hvd.broadcast_object(max(1, min(args.iters, int(args.seconds / max(once, 1e-6)))), root_rank=0)
        sync(device)
        start = time.perf_counter()
        for _unused in range(iters):
            hvd.allreduce_(tensor, op=hvd.Sum, name=name)
        sync(device)
        seconds = (time.perf_counter() - start) / iters
        results.append({"bytes": size, "iters": iters, "time_s": seconds})
        if hvd.rank() == 0:
            print(f"allreduce {size} B: {seconds * 1e3:.3f} ms ({iters} iterations)", flush=True)
    cuda = device.type == "cuda"
    return {**about(device), "cuda": torch.version.cuda if cuda else None, "nccl": nccl_version() if cuda else None,
            "hosts_by_rank": hvd.allgather_object(socket.gethostname()), "results": results}  # fmt: skip


def synthetic(args: argparse.Namespace, device: torch.device) -> Dict[str, Any]:
    if device.type == "cpu":
        # Each process gets its share of this host's cores, as Horovod's example leaves to the user.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, hvd.local_size())))
    from torchvision import models  # noqa: PLC0415 - only this step needs torchvision

    model = getattr(models, args.model)().to(device)
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    target = torch.randint(0, 1000, (args.batch_size,), device=device)
    # Each process alone first, before DistributedOptimizer hooks an allreduce into every backward: in the
    # synchronized steps below every rank waits for the slowest, so only this says which node computes slowly.
    nodes = alone(model, data, target, args, device) if args.node_batches > 0 else None
    optimizer = optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    for _unused in range(args.warmup_batches):
        step()
    sync(device)
    start = time.perf_counter()
    for _unused in range(args.batches):
        step()
    sync(device)
    rate = args.batch_size * args.batches / (time.perf_counter() - start)
    total = float(hvd.allreduce(torch.tensor([rate]), op=hvd.Sum, name="bench.synthetic.rate").item())
    if hvd.rank() == 0:
        print(f"{args.model}: {total:.1f} images/s on {hvd.size()} processes ({device.type})", flush=True)
    return {**about(device), "model": args.model, "batch_size": args.batch_size, "image_size": args.image_size,
            "batches": args.batches, "img_per_s": total, **({"nodes": nodes} if nodes is not None else {})}  # fmt: skip


def alone(model: Any, data: Any, target: Any, args: argparse.Namespace, device: torch.device) -> List[Dict[str, Any]]:
    """Each rank's images/s alone (one batch to warm up, then --node-batches timed, a plain SGD step each), with
    its hostname, gathered in rank order; the broadcast of rank 0's parameters afterwards undoes the steps."""
    optimizer = optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    step()
    sync(device)
    start = time.perf_counter()
    for _unused in range(args.node_batches):
        step()
    sync(device)
    rate = args.batch_size * args.node_batches / (time.perf_counter() - start)
    optimizer.zero_grad()
    return hvd.allgather_object({"hostname": socket.gethostname(), "img_per_s": rate})


def main() -> None:
    args = parse_args()
    hvd.init()
    device = pick_device(args.device)
    result = {"allreduce": allreduce, "synthetic": synthetic}[args.step](args, device)
    if hvd.rank() == 0:
        path = os.path.join(args.output_dir, f"{args.step}.json")
        with open(path + ".tmp", "w") as file:
            json.dump(result, file, indent=1)
        os.replace(path + ".tmp", path)
        print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()

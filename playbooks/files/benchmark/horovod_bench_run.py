# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Time an allreduce over message sizes, or train a model on synthetic data, as training runs.

playbooks/benchmark.yml runs it through multinode.horovod.horovod_launch, under horovodrun (--launcher
horovodrun: Horovod's allreduce, DistributedOptimizer) or torchrun (--launcher torchrun:
torch.distributed's all_reduce, DistributedDataParallel), the run's launcher. Tensors live on the GPU of each process's
local rank when one is visible (NCCL), else on the CPU (Gloo). Rank 0 writes the result as JSON into the
run directory (HOROVOD_LAUNCH_RUN_DIR, or --output-dir); the controller computes the rates
(plugins/module_utils/horovod_bench.py).

allreduce: a float32 sum per size: a few to warm up, one timed alone to choose how many fit in
--seconds (at most --iters; rank 0 decides for all), then those, timed together.
synthetic: as Horovod's examples/pytorch/pytorch_synthetic_benchmark.py, a torchvision model trained
on one random batch with DistributedOptimizer (or DDP), --batches timed after --warmup-batches.
"""

import argparse
import json
import os
import platform
import socket
import time
from typing import Any, Dict, List, Tuple  # Python 3.6: no PEP 585/604 forms

import torch
import torch.nn.functional as F
from torch import optim


class HorovodComm:
    """The collectives through Horovod (horovodrun started the ranks)."""

    launcher = "horovodrun"

    def __init__(self) -> None:
        import horovod.torch as hvd  # noqa: PLC0415 - a torchrun image need not have Horovod

        self.hvd = hvd
        hvd.init()

    def start(self, device: torch.device) -> None:
        """Horovod chose its backend at init."""

    def rank(self) -> int:
        return self.hvd.rank()

    def size(self) -> int:
        return self.hvd.size()

    def local_rank(self) -> int:
        return self.hvd.local_rank()

    def local_size(self) -> int:
        return self.hvd.local_size()

    def backend(self, device: torch.device) -> str:
        hvd = self.hvd
        return "nccl" if device.type == "cuda" and hvd.nccl_built() else ("mpi" if hvd.mpi_enabled() else "gloo")

    def allreduce_(self, tensor: Any, name: str) -> None:
        self.hvd.allreduce_(tensor, op=self.hvd.Sum, name=name)

    def total(self, value: float, name: str, device: torch.device) -> float:
        return float(self.hvd.allreduce(torch.tensor([value]), op=self.hvd.Sum, name=name).item())

    def broadcast_object(self, value: Any) -> Any:
        return self.hvd.broadcast_object(value, root_rank=0)

    def allgather_object(self, value: Any) -> List[Any]:
        return self.hvd.allgather_object(value)

    def distributed(self, model: Any, lr: float, device: torch.device) -> Tuple[Any, Any]:
        """The model and an optimizer whose step averages the gradients, rank 0's state on every rank."""
        hvd = self.hvd
        optimizer = hvd.DistributedOptimizer(
            optim.SGD(model.parameters(), lr=lr), named_parameters=model.named_parameters()
        )
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        return model, optimizer

    def end(self) -> None:
        """horovod.torch shuts down at exit."""


class TorchComm:
    """The collectives through torch.distributed (torchrun started the ranks: its environment says where
    the ranks meet); NCCL on GPUs, Gloo on CPUs."""

    launcher = "torchrun"

    def __init__(self) -> None:
        import torch.distributed as dist  # noqa: PLC0415 - only this launcher needs it

        self.dist = dist

    def start(self, device: torch.device) -> None:
        self.dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")

    def rank(self) -> int:
        return self.dist.get_rank()

    def size(self) -> int:
        return self.dist.get_world_size()

    def local_rank(self) -> int:
        # Before start(): pick_device needs it to choose the GPU the process group uses.
        return int(os.environ.get("LOCAL_RANK", "0"))

    def local_size(self) -> int:
        return int(os.environ.get("LOCAL_WORLD_SIZE", "1"))

    def backend(self, device: torch.device) -> str:
        return str(self.dist.get_backend())

    def allreduce_(self, tensor: Any, name: str) -> None:
        self.dist.all_reduce(tensor, op=self.dist.ReduceOp.SUM)

    def total(self, value: float, name: str, device: torch.device) -> float:
        tensor = torch.tensor([value], dtype=torch.float64, device=device)  # NCCL reduces GPU tensors only
        self.dist.all_reduce(tensor, op=self.dist.ReduceOp.SUM)
        return float(tensor.item())

    def broadcast_object(self, value: Any) -> Any:
        box = [value]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def allgather_object(self, value: Any) -> List[Any]:
        out = [None] * self.size()
        self.dist.all_gather_object(out, value)
        return out

    def distributed(self, model: Any, lr: float, device: torch.device) -> Tuple[Any, Any]:
        """DDP: its constructor gives every rank rank 0's parameters, its backward averages the gradients."""
        from torch.nn.parallel import DistributedDataParallel  # noqa: PLC0415

        model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        return model, optim.SGD(model.parameters(), lr=lr)

    def end(self) -> None:
        self.dist.destroy_process_group()


# By the launcher that started the ranks (the role's horovod_launch_launcher).
COMMS = {comm.launcher: comm for comm in (HorovodComm, TorchComm)}


def parse_args() -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    common.add_argument(
        "--launcher", choices=sorted(COMMS), default=HorovodComm.launcher, help="what started the ranks"
    )
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


def pick_device(choice: str, comm: Any) -> torch.device:
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no CUDA device is visible to this process")
        torch.cuda.set_device(comm.local_rank() % torch.cuda.device_count())
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def about(comm: Any, device: torch.device) -> Dict[str, Any]:
    return {"np": comm.size(), "device": device.type, "backend": comm.backend(device), "launcher": comm.launcher,
            "torch": torch.__version__, "python": platform.python_version()}  # fmt: skip


def nccl_version() -> str:
    """NCCL's version as torch reports it: a tuple (torch 1.10 and later), a packed number before."""
    version = torch.cuda.nccl.version()
    return ".".join(map(str, version)) if isinstance(version, (tuple, list)) else str(version)


def allreduce(args: argparse.Namespace, comm: Any, device: torch.device) -> Dict[str, Any]:
    results = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        tensor = torch.zeros(size // 4, dtype=torch.float32, device=device)  # zeros: the sum stays finite
        name = f"bench.allreduce.{size}"
        for _unused in range(max(1, args.warmup if size < 64 * 1024**2 else 1)):
            comm.allreduce_(tensor, name)
        sync(device)
        start = time.perf_counter()
        comm.allreduce_(tensor, name)
        sync(device)
        once = time.perf_counter() - start
        iters = comm.broadcast_object(max(1, min(args.iters, int(args.seconds / max(once, 1e-6)))))
        sync(device)
        start = time.perf_counter()
        for _unused in range(iters):
            comm.allreduce_(tensor, name)
        sync(device)
        seconds = (time.perf_counter() - start) / iters
        results.append({"bytes": size, "iters": iters, "time_s": seconds})
        if comm.rank() == 0:
            print(f"allreduce {size} B: {seconds * 1e3:.3f} ms ({iters} iterations)", flush=True)
    cuda = device.type == "cuda"
    return {**about(comm, device), "cuda": torch.version.cuda if cuda else None,
            "nccl": nccl_version() if cuda else None, "hosts_by_rank": comm.allgather_object(socket.gethostname()),
            "results": results}  # fmt: skip


def synthetic(args: argparse.Namespace, comm: Any, device: torch.device) -> Dict[str, Any]:
    if device.type == "cpu":
        # Each process gets its share of this host's cores, as Horovod's example leaves to the user.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, comm.local_size())))
    from torchvision import models  # noqa: PLC0415 - only this step needs torchvision

    model = getattr(models, args.model)().to(device)
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    target = torch.randint(0, 1000, (args.batch_size,), device=device)
    # Each process alone first, before DistributedOptimizer hooks an allreduce into every backward: in the
    # synchronized steps below every rank waits for the slowest, so only this says which node computes slowly.
    nodes = alone(model, data, target, args, comm=comm, device=device) if args.node_batches > 0 else None
    model, optimizer = comm.distributed(model, 0.01 * comm.size(), device)

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
    total = comm.total(rate, "bench.synthetic.rate", device)
    if comm.rank() == 0:
        print(f"{args.model}: {total:.1f} images/s on {comm.size()} processes ({device.type})", flush=True)
    # DDP's hooks hold the process group: gone before it is destroyed (a torchrun run hung at exit without).
    model = optimizer = None
    return {**about(comm, device), "model": args.model, "batch_size": args.batch_size, "image_size": args.image_size,
            "batches": args.batches, "img_per_s": total, **({"nodes": nodes} if nodes is not None else {})}  # fmt: skip


def alone(
    model: Any, data: Any, target: Any, args: argparse.Namespace, *, comm: Any, device: torch.device
) -> List[Dict[str, Any]]:
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
    return comm.allgather_object({"hostname": socket.gethostname(), "img_per_s": rate})


def main() -> None:
    args = parse_args()
    comm = COMMS[args.launcher]()
    device = pick_device(args.device, comm)
    comm.start(device)
    result = {"allreduce": allreduce, "synthetic": synthetic}[args.step](args, comm, device)
    rank = comm.rank()
    comm.end()
    if rank == 0:
        path = os.path.join(args.output_dir, f"{args.step}.json")
        with open(path + ".tmp", "w") as file:
            json.dump(result, file, indent=1)
        os.replace(path + ".tmp", path)
        print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()

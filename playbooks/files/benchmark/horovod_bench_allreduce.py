#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Time Horovod's allreduce over a sweep of message sizes (float32, sum), as training runs it.

playbooks/benchmark.yml runs it through multinode.horovod.horovod_launch, so it uses the hosts, slots,
ssh port and network interfaces of training. Tensors live on the GPU of each process's local rank when
one is visible (NCCL), else on the CPU (Gloo). For each size: a few allreduces to warm up, one timed
alone to choose how many fit in --seconds (at most --iters; rank 0 decides for all), then those, timed
together. Rank 0 writes ``allreduce.json`` into the run directory (HOROVOD_LAUNCH_RUN_DIR, or
--output-dir): the sizes, iterations and mean seconds per allreduce; bandwidths are computed on the
controller (plugins/module_utils/horovod_bench.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import time

import horovod.torch as hvd
import torch


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", required=True, help="message sizes in bytes, comma-separated (multiples of 4)")
    parser.add_argument("--iters", type=int, default=50, help="most timed allreduces per size")
    parser.add_argument("--seconds", type=float, default=2.0, help="time per size the timed allreduces aim at")
    parser.add_argument("--warmup", type=int, default=3, help="allreduces before the timing, per size")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--output-dir", default=os.environ.get("HOROVOD_LAUNCH_RUN_DIR", "."))
    return parser.parse_args()


def pick_device(choice: str) -> torch.device:
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no CUDA device is visible to this process")
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def backend(device: torch.device) -> str:
    if device.type == "cuda" and hvd.nccl_built():
        return "nccl"
    return "mpi" if hvd.mpi_enabled() else "gloo"


def nccl_version() -> str:
    """NCCL's version as torch reports it: a tuple (torch 1.10 and later), a packed number before."""
    version = torch.cuda.nccl.version()
    return ".".join(map(str, version)) if isinstance(version, tuple | list) else str(version)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    args = parse_args()
    hvd.init()
    device = pick_device(args.device)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = []
    for size in sizes:
        tensor = torch.zeros(size // 4, dtype=torch.float32, device=device)  # zeros: the sum stays finite
        name = f"bench.allreduce.{size}"
        for _ in range(max(1, args.warmup if size < 64 * 1024**2 else 1)):
            hvd.allreduce_(tensor, op=hvd.Sum, name=name)
        sync(device)
        start = time.perf_counter()
        hvd.allreduce_(tensor, op=hvd.Sum, name=name)
        sync(device)
        once = time.perf_counter() - start
        iters = hvd.broadcast_object(max(1, min(args.iters, int(args.seconds / max(once, 1e-6)))), root_rank=0)
        sync(device)
        start = time.perf_counter()
        for _ in range(iters):
            hvd.allreduce_(tensor, op=hvd.Sum, name=name)
        sync(device)
        seconds = (time.perf_counter() - start) / iters
        results.append({"bytes": size, "iters": iters, "time_s": seconds})
        if hvd.rank() == 0:
            print(f"allreduce {size} B: {seconds * 1e3:.3f} ms ({iters} iterations)", flush=True)
    hosts = hvd.allgather_object(socket.gethostname())
    if hvd.rank() == 0:
        out = {
            "np": hvd.size(),
            "device": device.type,
            "backend": backend(device),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "cuda": torch.version.cuda if device.type == "cuda" else None,
            "nccl": nccl_version() if device.type == "cuda" else None,
            "hosts_by_rank": hosts,
            "results": results,
        }
        path = os.path.join(args.output_dir, "allreduce.json")
        with open(path + ".tmp", "w") as file:
            json.dump(out, file, indent=1)
        os.replace(path + ".tmp", path)
        print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()

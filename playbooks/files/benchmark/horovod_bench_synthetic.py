#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Images per second of a torchvision model trained on synthetic data, as Horovod's
examples/pytorch/pytorch_synthetic_benchmark.py measures them.

playbooks/benchmark.yml runs it through multinode.horovod.horovod_launch at one process and at every
slot, which gives the scaling efficiency. Each process trains the model on one random batch with
Horovod's DistributedOptimizer (gradients allreduced every step), on the GPU of its local rank when
one is visible, else on the CPU. After --warmup-batches, --batches are timed; rank 0 writes
``synthetic.json`` into the run directory (HOROVOD_LAUNCH_RUN_DIR, or --output-dir) with the images
per second of all processes together.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import horovod.torch as hvd
import torch
import torch.nn.functional as F
from torch import optim
from torchvision import models


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50", help="a model of torchvision.models")
    parser.add_argument("--batch-size", type=int, default=32, help="images per batch and process")
    parser.add_argument("--image-size", type=int, default=224, help="height and width of the images")
    parser.add_argument("--warmup-batches", type=int, default=10)
    parser.add_argument("--batches", type=int, default=50, help="timed batches per process")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--output-dir", default=os.environ.get("HOROVOD_LAUNCH_RUN_DIR", "."))
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    hvd.init()
    if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no CUDA device is visible to this process")
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
        # Each process gets its share of this host's cores, as Horovod's example leaves to the user.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, hvd.local_size())))
    model = getattr(models, args.model)().to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    target = torch.randint(0, 1000, (args.batch_size,), device=device)

    def step() -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    for _ in range(args.warmup_batches):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.batches):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    rate = args.batch_size * args.batches / (time.perf_counter() - start)
    total = float(hvd.allreduce(torch.tensor([rate]), op=hvd.Sum, name="bench.synthetic.rate").item())
    if hvd.rank() == 0:
        print(f"{args.model}: {total:.1f} images/s on {hvd.size()} processes ({device.type})", flush=True)
        out = {
            "np": hvd.size(),
            "device": device.type,
            "backend": "nccl"
            if device.type == "cuda" and hvd.nccl_built()
            else ("mpi" if hvd.mpi_enabled() else "gloo"),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "model": args.model,
            "batch_size": args.batch_size,
            "image_size": args.image_size,
            "batches": args.batches,
            "img_per_s": total,
        }
        path = os.path.join(args.output_dir, "synthetic.json")
        with open(path + ".tmp", "w") as file:
            json.dump(out, file, indent=1)
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()

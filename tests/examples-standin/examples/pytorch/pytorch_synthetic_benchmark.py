# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Synthetic-data throughput benchmark of a torchvision model under Horovod.

Written for multinode.horovod as a stand-in for Horovod's script of the same name (same options,
same kind of output): each rank trains the model on random images, Horovod averages the gradients,
and rank 0 prints images per second per process and in total. It also logs to tensorboardX and
shows tqdm progress, the packages the guide installs with pip, so a run proves they are there.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import timeit

import horovod.torch as hvd
import torch
import torch.nn.functional as F
import tqdm
from tensorboardX import SummaryWriter
from torch import optim
from torchvision import models


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fp16-allreduce", action="store_true", help="use fp16 compression during allreduce")
    parser.add_argument("--model", default="resnet50", help="model to benchmark (a torchvision.models name)")
    parser.add_argument("--batch-size", type=int, default=32, help="input batch size")
    parser.add_argument("--num-warmup-batches", type=int, default=10, help="batches before benchmarking")
    parser.add_argument("--num-batches-per-iter", type=int, default=10, help="batches per benchmark iteration")
    parser.add_argument("--num-iters", type=int, default=10, help="benchmark iterations")
    parser.add_argument("--no-cuda", action="store_true", help="disable CUDA training")
    parser.add_argument("--use-adasum", action="store_true", help="use the adasum algorithm for allreduce")
    # Not in Horovod's script: smaller images keep a CPU lab quick; a log directory for tensorboardX.
    parser.add_argument("--image-size", type=int, default=224, help="height and width of the synthetic images")
    parser.add_argument("--log-dir", default="", help="tensorboardX log directory (rank 0); empty: none")
    args = parser.parse_args(argv)
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    return args


def build(args: argparse.Namespace) -> tuple[torch.nn.Module, optim.Optimizer]:
    """The model and Horovod's distributed optimizer, both broadcast from rank 0."""
    model = getattr(models, args.model)()
    lr_scaler = hvd.size() if not args.use_adasum else 1
    if args.cuda:
        model.cuda()
    optimizer = optim.SGD(model.parameters(), lr=0.01 * lr_scaler)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(
        optimizer,
        named_parameters=model.named_parameters(),
        compression=compression,
        op=hvd.Adasum if args.use_adasum else hvd.Average,
    )
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    return model, optimizer


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    hvd.init()
    if args.cuda:
        torch.cuda.set_device(hvd.local_rank())
    device = "GPU" if args.cuda else "CPU"

    model, optimizer = build(args)

    generator = torch.Generator().manual_seed(hvd.rank())
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, generator=generator)
    target = torch.randint(0, 1000, (args.batch_size,), generator=generator)
    if args.cuda:
        data, target = data.cuda(), target.cuda()

    def benchmark_step() -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def log(text: str) -> None:
        if hvd.rank() == 0:
            print(text, flush=True)

    writer = SummaryWriter(args.log_dir) if args.log_dir and hvd.rank() == 0 else None
    log(f"Model: {args.model}")
    log(f"Batch size: {args.batch_size}")
    log(f"Number of {device}s: {hvd.size()}")
    print(f"rank {hvd.rank()} of {hvd.size()} on {os.uname().nodename} ({device})", flush=True)

    log("Running warmup...")
    timeit.timeit(benchmark_step, number=args.num_warmup_batches)

    log("Running benchmark...")
    rates = []
    iterations = tqdm.trange(args.num_iters, disable=hvd.rank() != 0, file=sys.stdout, mininterval=0, ascii=True)
    for index in iterations:
        seconds = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
        rate = args.batch_size * args.num_batches_per_iter / seconds
        log(f"Iter #{index}: {rate:.1f} img/sec per {device}")
        if writer is not None:
            writer.add_scalar("img_per_sec", rate, index)
        rates.append(rate)

    mean = statistics.fmean(rates)
    conf = 1.96 * (statistics.stdev(rates) if len(rates) > 1 else 0.0)
    log(f"Img/sec per {device}: {mean:.1f} +-{conf:.1f}")
    log(f"Total img/sec on {hvd.size()} {device}(s): {hvd.size() * mean:.1f} +-{hvd.size() * conf:.1f}")
    if writer is not None:
        writer.close()
    # Every rank must have trained the same model: the averaged gradients keep the parameters equal.
    checksum = torch.tensor([float(sum(p.detach().double().sum() for p in model.parameters()))])
    spread = hvd.allreduce(checksum, op=hvd.Max) - hvd.allreduce(checksum, op=hvd.Min)
    if not math.isfinite(float(checksum)) or float(spread) > 1e-6 * max(1.0, abs(float(checksum))):
        print(f"rank {hvd.rank()}: parameters differ between ranks (spread {float(spread)})", flush=True)
        return 4
    log(f"Parameters agree on all {hvd.size()} ranks")
    return 0


if __name__ == "__main__":
    sys.exit(main())

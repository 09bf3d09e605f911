# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""ResNet-50 on an ImageFolder data set under Horovod, with checkpoints, TensorBoard logs and resume.

Written for multinode.horovod as a stand-in for the script the guide runs, Horovod v0.18.2's
examples/pytorch_imagenet_resnet50.py (same path and options; a constant learning rate, without its
warmup and decay): every rank trains on its
part of --train-dir and validates on its part of --val-dir; rank 0 writes tensorboardX scalars into
--log-dir and a checkpoint per epoch to --checkpoint-format, and a new run resumes from the newest
checkpoint there (epochs already done are not trained again). Progress is tqdm's, as in Horovod's.
"""

from __future__ import annotations

import argparse
import os

import horovod.torch as hvd
import torch
import torch.nn.functional as F
import torch.utils.data.distributed
from tensorboardX import SummaryWriter
from torch import optim
from torchvision import datasets, models, transforms
from tqdm import tqdm

NORMALIZE = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-dir", default=os.path.expanduser("~/imagenet/train"))
    parser.add_argument("--val-dir", default=os.path.expanduser("~/imagenet/validation"))
    parser.add_argument("--log-dir", default="./logs")
    parser.add_argument("--checkpoint-format", default="./checkpoint-{epoch}.pth.tar")
    parser.add_argument("--fp16-allreduce", action="store_true")
    parser.add_argument("--batches-per-allreduce", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--val-batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--base-lr", type=float, default=0.0125)
    parser.add_argument("--warmup-epochs", type=float, default=5)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--wd", type=float, default=0.00005)
    parser.add_argument("--no-cuda", action="store_true")
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args(argv)


def newest_checkpoint(checkpoint_format: str, epochs: int) -> int:
    """The highest epoch up to `epochs` with a checkpoint file, 0 for none."""
    return next((e for e in range(epochs, 0, -1) if os.path.exists(checkpoint_format.format(epoch=e))), 0)


def loader(directory: str, transform: transforms.Compose, batch_size: int) -> torch.utils.data.DataLoader:
    data = datasets.ImageFolder(directory, transform=transform)
    sampler = torch.utils.data.distributed.DistributedSampler(data, num_replicas=hvd.size(), rank=hvd.rank())
    return torch.utils.data.DataLoader(data, batch_size=batch_size, sampler=sampler)


def mean(value: torch.Tensor, name: str) -> float:
    return float(hvd.allreduce(value.detach().cpu(), name=name))


def main() -> None:
    args = parse_args()
    cuda = not args.no_cuda and torch.cuda.is_available()
    hvd.init()
    torch.manual_seed(args.seed)
    if cuda:
        torch.cuda.set_device(hvd.local_rank())
    # Rank 0 has the checkpoints; every rank starts where it says.
    start = int(hvd.broadcast(torch.tensor(newest_checkpoint(args.checkpoint_format, args.epochs)), 0, "resume"))
    writer = SummaryWriter(args.log_dir) if hvd.rank() == 0 else None
    train_loader = loader(
        args.train_dir,
        transforms.Compose(
            [transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(), NORMALIZE]
        ),
        args.batch_size * args.batches_per_allreduce,
    )
    val_loader = loader(
        args.val_dir,
        transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(), NORMALIZE]),
        args.val_batch_size,
    )
    model = models.resnet50()
    if cuda:
        model.cuda()
    lr = args.base_lr * args.batches_per_allreduce * hvd.size()
    optimizer = optim.SGD(model.parameters(), lr=lr, momentum=args.momentum, weight_decay=args.wd)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters(), compression=compression,
        backward_passes_per_step=args.batches_per_allreduce,
    )  # fmt: skip
    if start > 0 and hvd.rank() == 0:
        state = torch.load(args.checkpoint_format.format(epoch=start))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    for epoch in range(start, args.epochs):
        model.train()
        train_loader.sampler.set_epoch(epoch)
        losses = []
        with tqdm(total=len(train_loader), desc=f"Train Epoch     #{epoch + 1}", disable=hvd.rank() != 0) as progress:
            for batch in train_loader:
                data, target = (t.cuda() for t in batch) if cuda else batch
                optimizer.zero_grad()
                loss = F.cross_entropy(model(data), target)
                loss.backward()
                optimizer.step()
                losses.append(mean(loss, "train_loss"))
                progress.set_postfix({"loss": losses[-1]})
                progress.update(1)
        model.eval()
        correct = []
        with (
            torch.no_grad(),
            tqdm(total=len(val_loader), desc=f"Validate Epoch  #{epoch + 1}", disable=hvd.rank() != 0) as progress,
        ):
            for batch in val_loader:
                data, target = (t.cuda() for t in batch) if cuda else batch
                hits = model(data).argmax(1).eq(target).float().mean()
                correct.append(mean(hits, "val_accuracy"))
                progress.update(1)
        if hvd.rank() == 0:
            writer.add_scalar("train/loss", sum(losses) / max(len(losses), 1), epoch)
            writer.add_scalar("val/accuracy", sum(correct) / max(len(correct), 1), epoch)
            writer.flush()
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
            torch.save(state, args.checkpoint_format.format(epoch=epoch + 1))


if __name__ == "__main__":
    main()

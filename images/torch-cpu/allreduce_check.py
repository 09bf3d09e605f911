# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The build's torchrun check (images/torch-cpu/Dockerfile): every rank of a Gloo group all-reduces its
rank + 1, and the sum must be 1 + 2 + ... + world size."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, size = dist.get_rank(), dist.get_world_size()
assert int(os.environ["LOCAL_WORLD_SIZE"]) == size
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
print(f"rank {rank}/{size} all_reduce {total.item()}", flush=True)
assert total.item() == size * (size + 1) / 2
dist.destroy_process_group()

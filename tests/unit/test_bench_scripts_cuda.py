# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU branch of the benchmark's script (playbooks/files/benchmark/horovod_bench_run.py), with
stand-ins for torch, torch.distributed, torchvision and horovod.torch that record what the script asks
of them, under each launcher (--launcher horovodrun and --launcher torchrun).

No GPU here, and the lab's image has CPU torch: `make bench` runs these scripts for real on the CPU
(Gloo); what only a GPU takes (the device of each local rank, CUDA's queue drained before and after
each timing, the backend and versions reported) is checked here against the torch API the script
calls, on 2 of 4 "GPUs" per host. A real run needs a GPU host (tests/gpu/).
"""

from __future__ import annotations

import ast
import json
import os
import socket
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from checkout import load

SCRIPT = "playbooks/files/benchmark/horovod_bench_run.py"


class Log(list):
    """What the scripts asked for, in order: ("set_device", 1), ("synchronize",), ("allreduce", ...)."""


class Device:
    def __init__(self, kind: str, index: int | None = None) -> None:
        self.type, self.index = kind, index

    def __repr__(self) -> str:
        return f"{self.type}:{self.index}"


class Tensor:
    def __init__(self, log: Log, numel: int, device: Any, value: float = 0.0) -> None:
        self.log, self.numel, self.device, self.value = log, numel, device, value

    def item(self) -> float:
        return self.value

    def __float__(self) -> float:
        return self.value

    def backward(self) -> None:
        self.log.append(("backward",))


def fake_torch(log: Log, gpus: int, nccl_version: Any = (2, 14, 3)) -> dict[str, ModuleType]:
    """torch, torch.nn.functional, torch.optim, torchvision.models: what the scripts call, recorded."""
    current = {"device": 0}

    def set_device(index: int) -> None:
        log.append(("set_device", index))
        current["device"] = index

    cuda = SimpleNamespace(
        is_available=lambda: gpus > 0,
        device_count=lambda: gpus,
        set_device=set_device,
        current_device=lambda: current["device"],
        synchronize=lambda: log.append(("synchronize",)),
        nccl=SimpleNamespace(version=lambda: nccl_version),
    )

    def zeros(numel: int, dtype: Any = None, device: Any = None) -> Tensor:
        log.append(("zeros", numel, repr(device)))
        return Tensor(log, numel, device)

    torch = ModuleType("torch")
    torch.__version__ = "1.13.1+cu117"
    torch.float32 = "float32"
    torch.device = Device
    torch.cuda = cuda
    torch.version = SimpleNamespace(cuda="11.7")
    torch.zeros = zeros
    torch.randn = lambda *shape, device=None: log.append(("randn", repr(device))) or Tensor(log, 0, device)
    torch.randint = lambda low, high, shape, device=None: Tensor(log, 0, device)
    torch.float64 = "float64"
    torch.tensor = lambda values, dtype=None, device=None: Tensor(log, len(values), device, values[0])
    torch.set_num_threads = lambda n: log.append(("set_num_threads", n))

    functional = ModuleType("torch.nn.functional")
    functional.cross_entropy = lambda output, target: Tensor(log, 1, None)
    nn = ModuleType("torch.nn")
    nn.functional = functional
    parallel = ModuleType("torch.nn.parallel")

    def ddp(model: Any, device_ids: Any = None) -> Any:
        log.append(("ddp", device_ids))
        return model

    parallel.DistributedDataParallel = ddp
    nn.parallel = parallel
    torch.nn = nn
    optim = ModuleType("torch.optim")
    optim.SGD = lambda params, lr: SimpleNamespace(zero_grad=lambda: None, step=lambda: log.append(("sgd.step",)))
    torch.optim = optim

    class Model:
        def to(self, device: Any) -> Any:
            log.append(("model.to", repr(device)))
            return self

        def parameters(self) -> list[Any]:
            return []

        def named_parameters(self) -> list[Any]:
            return []

        def state_dict(self) -> dict[str, Any]:
            return {}

        def __call__(self, data: Any) -> Tensor:
            return Tensor(log, 1, data.device)

    models = ModuleType("torchvision.models")
    models.resnet50 = Model
    torchvision = ModuleType("torchvision")
    torchvision.models = models
    return {
        "torch": torch,
        "torch.nn": nn,
        "torch.nn.parallel": parallel,
        "torch.nn.functional": functional,
        "torch.optim": optim,
        "torchvision": torchvision,
        "torchvision.models": models,
    }


def fake_horovod(log: Log, local_rank: int, nccl: bool) -> dict[str, ModuleType]:
    """horovod.torch for rank 0 of a 2-process run, this process on local rank `local_rank`."""
    hvd = ModuleType("horovod.torch")
    hvd.Sum = "sum"
    hvd.init = lambda: log.append(("init",))
    hvd.rank = lambda: 0
    hvd.size = lambda: 2
    hvd.local_rank = lambda: local_rank
    hvd.local_size = lambda: 2
    hvd.nccl_built = lambda: nccl
    hvd.mpi_enabled = lambda: False
    hvd.allreduce_ = lambda tensor, op, name: log.append(("allreduce_", repr(tensor.device)))
    # The other process's rate the same as this one's: the sum is twice it.
    hvd.allreduce = lambda tensor, op, name: Tensor(log, 1, None, 2 * tensor.value)
    hvd.broadcast_object = lambda value, root_rank: value
    # The other process's the same as this one's, on another node.
    hvd.allgather_object = lambda value: (
        [value, {**value, "hostname": "node-b"}] if isinstance(value, dict) else ["node-a", "node-b"]
    )
    hvd.DistributedOptimizer = lambda optimizer, named_parameters: SimpleNamespace(
        zero_grad=lambda: None, step=lambda: log.append(("step",))
    )
    hvd.broadcast_parameters = lambda state, root_rank: None
    hvd.broadcast_optimizer_state = lambda optimizer, root_rank: None
    package = ModuleType("horovod")
    package.torch = hvd
    return {"horovod": package, "horovod.torch": hvd}


def fake_distributed(log: Log, torch: ModuleType) -> dict[str, ModuleType]:
    """torch.distributed for rank 0 of a 2-process torchrun run; torchrun's environment gives the local rank."""
    dist = ModuleType("torch.distributed")
    state = {"backend": None}

    def init_process_group(backend: str) -> None:
        log.append(("init_process_group", backend))
        state["backend"] = backend

    def all_reduce(tensor: Tensor, op: Any) -> None:
        log.append(("all_reduce", repr(tensor.device)))
        tensor.value *= 2  # the other process's the same as this one's

    def broadcast_object_list(box: list[Any], src: int) -> None:
        log.append(("broadcast_object_list", src))

    def all_gather_object(out: list[Any], value: Any) -> None:
        out[:] = [value, {**value, "hostname": "node-b"}] if isinstance(value, dict) else [value, "node-b"]

    dist.init_process_group = init_process_group
    dist.get_rank = lambda: 0
    dist.get_world_size = lambda: 2
    dist.get_backend = lambda: state["backend"]
    dist.ReduceOp = SimpleNamespace(SUM="sum")
    dist.all_reduce = all_reduce
    dist.broadcast_object_list = broadcast_object_list
    dist.all_gather_object = all_gather_object
    dist.destroy_process_group = lambda: log.append(("destroy_process_group",))
    torch.distributed = dist
    return {"torch.distributed": dist}


def run_script(
    monkeypatch: pytest.MonkeyPatch,
    step: str,
    args: list[str],
    *,
    gpus: int,
    local_rank: int = 3,
    nccl: bool = True,
    nccl_version: Any = (2, 14, 3),
    launcher: str = "horovodrun",
) -> Log:
    log = Log()
    modules = fake_torch(log, gpus, nccl_version)
    if launcher == "torchrun":
        # No horovod module at all: a torchrun image need not have Horovod.
        modules.update(fake_distributed(log, modules["torch"]))
        monkeypatch.setitem(sys.modules, "horovod", None)
        monkeypatch.setitem(sys.modules, "horovod.torch", None)
        monkeypatch.setenv("LOCAL_RANK", str(local_rank))
        monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
        args = [*args, "--launcher", "torchrun"]
    else:
        modules.update(fake_horovod(log, local_rank, nccl))
    for module_name, module in modules.items():
        monkeypatch.setitem(sys.modules, module_name, module)
    script = load(SCRIPT, "bench_script")
    monkeypatch.setattr(sys, "argv", ["horovod_bench_run.py", step, *args])
    script.main()
    return log


def test_allreduce_on_the_gpu_of_the_local_rank_through_nccl(monkeypatch, tmp_path):
    log = run_script(
        monkeypatch,
        "allreduce",
        ["--sizes", "1024,4096", "--iters", "2", "--warmup", "1", "--output-dir", str(tmp_path)],
        gpus=2,
    )
    assert ("set_device", 1) in log  # local rank 3 on a host with 2 GPUs
    assert ("zeros", 256, "cuda:1") in log and ("zeros", 1024, "cuda:1") in log
    assert {entry for entry in log if entry[0] == "allreduce_"} == {("allreduce_", "cuda:1")}
    # For each size: CUDA's queue drained before and after the single timing and the timed loop.
    assert sum(entry == ("synchronize",) for entry in log) == 2 * 4
    report = json.loads((tmp_path / "allreduce.json").read_text())
    assert report["device"] == "cuda" and report["backend"] == "nccl"
    assert report["cuda"] == "11.7" and report["nccl"] == "2.14.3"
    assert [r["bytes"] for r in report["results"]] == [1024, 4096]
    assert all(r["time_s"] > 0 and r["iters"] >= 1 for r in report["results"])
    assert report["hosts_by_rank"] == ["node-a", "node-b"]


def test_allreduce_reports_an_older_torchs_packed_nccl_version(monkeypatch, tmp_path):
    args = ["--sizes", "1024", "--iters", "1", "--warmup", "1", "--output-dir", str(tmp_path)]
    run_script(monkeypatch, "allreduce", args, gpus=1, nccl_version=2708)
    assert json.loads((tmp_path / "allreduce.json").read_text())["nccl"] == "2708"


def test_allreduce_on_gpus_without_nccl_names_the_backend_horovod_uses(monkeypatch, tmp_path):
    args = ["--sizes", "1024", "--iters", "1", "--device", "cuda", "--output-dir", str(tmp_path)]
    run_script(monkeypatch, "allreduce", args, gpus=1, nccl=False)
    report = json.loads((tmp_path / "allreduce.json").read_text())
    assert report["device"] == "cuda" and report["backend"] == "gloo"


def test_allreduce_stays_on_the_cpu_without_a_gpu(monkeypatch, tmp_path):
    args = ["--sizes", "1024", "--iters", "1", "--output-dir", str(tmp_path)]
    log = run_script(monkeypatch, "allreduce", args, gpus=0)
    assert not [entry for entry in log if entry[0] in ("set_device", "synchronize")]
    report = json.loads((tmp_path / "allreduce.json").read_text())
    assert (report["device"], report["backend"], report["cuda"], report["nccl"]) == ("cpu", "gloo", None, None)


@pytest.mark.parametrize("step", ["allreduce", "synthetic"])
def test_device_cuda_without_a_gpu_stops_with_the_reason(monkeypatch, tmp_path, step):
    args = ["--device", "cuda", "--output-dir", str(tmp_path)] + (["--sizes", "1024"] if step == "allreduce" else [])
    with pytest.raises(SystemExit, match="--device cuda: no CUDA device is visible to this process"):
        run_script(monkeypatch, step, args, gpus=0)


def test_synthetic_trains_on_the_gpu_of_the_local_rank(monkeypatch, tmp_path):
    args = ["--batch-size", "4", "--warmup-batches", "1", "--batches", "2", "--output-dir", str(tmp_path)]
    log = run_script(monkeypatch, "synthetic", args, gpus=4, local_rank=2)
    assert ("set_device", 2) in log
    assert ("model.to", "cuda:2") in log and ("randn", "cuda:2") in log
    assert not [entry for entry in log if entry[0] == "set_num_threads"]  # the CPU's share only on the CPU
    assert sum(entry == ("step",) for entry in log) == 3
    # Drained after the warm-up and after the timed batches.
    assert sum(entry == ("synchronize",) for entry in log) == 2
    report = json.loads((tmp_path / "synthetic.json").read_text())
    assert report["device"] == "cuda" and report["backend"] == "nccl"
    assert report["np"] == 2 and report["img_per_s"] > 0


def test_synthetic_on_the_cpu_takes_its_share_of_the_cores(monkeypatch, tmp_path):
    args = ["--batch-size", "4", "--warmup-batches", "1", "--batches", "1", "--output-dir", str(tmp_path)]
    log = run_script(monkeypatch, "synthetic", args, gpus=0)
    assert [entry for entry in log if entry[0] == "set_num_threads"]
    assert not [entry for entry in log if entry[0] in ("set_device", "synchronize")]
    report = json.loads((tmp_path / "synthetic.json").read_text())
    assert (report["device"], report["backend"]) == ("cpu", "gloo")


def test_synthetic_times_each_process_alone_before_the_distributed_optimizer(monkeypatch, tmp_path):
    args = ["--batch-size", "4", "--warmup-batches", "1", "--batches", "2", "--node-batches", "3",
            "--output-dir", str(tmp_path)]  # fmt: skip
    log = run_script(monkeypatch, "synthetic", args, gpus=4, local_rank=2)
    # One batch to warm up and three timed, each a plain SGD step: no allreduce hooked in yet.
    assert sum(entry == ("sgd.step",) for entry in log) == 4
    assert log.index(("sgd.step",)) < log.index(("step",))
    report = json.loads((tmp_path / "synthetic.json").read_text())
    assert [n["hostname"] for n in report["nodes"]] == [socket.gethostname(), "node-b"]
    assert all(n["img_per_s"] > 0 for n in report["nodes"])


def test_synthetic_times_no_process_alone_unless_asked(monkeypatch, tmp_path):
    args = ["--batch-size", "4", "--warmup-batches", "1", "--batches", "1", "--output-dir", str(tmp_path)]
    log = run_script(monkeypatch, "synthetic", args, gpus=0)
    assert ("sgd.step",) not in log
    assert "nodes" not in json.loads((tmp_path / "synthetic.json").read_text())


def test_the_stand_ins_cover_every_name_the_script_imports():
    """A script that starts importing more than the stand-ins give fails here, not on a GPU host."""
    tree = ast.parse((Path(__file__).resolve().parents[2] / SCRIPT).read_text())
    imports = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imports |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imports <= {
        "__future__",
        "argparse",
        "json",
        "os",
        "platform",
        "socket",
        "time",
        "typing",
        "horovod.torch",
        "torch",
        "torch.distributed",
        "torch.nn.functional",
        "torch.nn.parallel",
        "torchvision",
    }, imports


def test_allreduce_under_torchrun_on_the_gpu_of_the_local_rank_through_nccl(monkeypatch, tmp_path):
    args = ["--sizes", "1024,4096", "--iters", "2", "--warmup", "1", "--output-dir", str(tmp_path)]
    log = run_script(monkeypatch, "allreduce", args, gpus=2, launcher="torchrun")
    # The GPU chosen from torchrun's LOCAL_RANK before the process group starts on it.
    assert log.index(("set_device", 1)) < log.index(("init_process_group", "nccl"))
    assert {entry for entry in log if entry[0] == "all_reduce"} == {("all_reduce", "cuda:1")}
    assert ("broadcast_object_list", 0) in log
    assert log[-1] == ("destroy_process_group",)
    report = json.loads((tmp_path / "allreduce.json").read_text())
    assert (report["launcher"], report["device"], report["backend"]) == ("torchrun", "cuda", "nccl")
    assert [r["bytes"] for r in report["results"]] == [1024, 4096]
    assert report["hosts_by_rank"] == [socket.gethostname(), "node-b"]


def test_allreduce_under_torchrun_on_the_cpu_through_gloo(monkeypatch, tmp_path):
    args = ["--sizes", "1024", "--iters", "1", "--output-dir", str(tmp_path)]
    log = run_script(monkeypatch, "allreduce", args, gpus=0, launcher="torchrun")
    assert ("init_process_group", "gloo") in log and ("all_reduce", "cpu:None") in log
    report = json.loads((tmp_path / "allreduce.json").read_text())
    assert (report["launcher"], report["device"], report["backend"]) == ("torchrun", "cpu", "gloo")


def test_synthetic_under_torchrun_trains_with_ddp_after_timing_each_process_alone(monkeypatch, tmp_path):
    args = ["--batch-size", "4", "--warmup-batches", "1", "--batches", "2", "--node-batches", "3",
            "--output-dir", str(tmp_path)]  # fmt: skip
    log = run_script(monkeypatch, "synthetic", args, gpus=4, local_rank=2, launcher="torchrun")
    assert ("ddp", [2]) in log
    # Each process alone first (plain SGD, no DDP yet), then DDP, then the timed steps.
    assert log.index(("sgd.step",)) < log.index(("ddp", [2]))
    assert sum(entry == ("sgd.step",) for entry in log) == 4 + 3  # alone: 1 + 3; DDP's SGD: 1 + 2
    # The images/s summed over the processes on the GPU (NCCL reduces GPU tensors only).
    assert ("all_reduce", "cuda:2") in log
    report = json.loads((tmp_path / "synthetic.json").read_text())
    assert (report["launcher"], report["backend"], report["np"]) == ("torchrun", "nccl", 2)
    assert report["img_per_s"] > 0 and [n["hostname"] for n in report["nodes"]] == [socket.gethostname(), "node-b"]


def test_synthetic_under_torchrun_on_the_cpu_takes_its_share_of_the_cores(monkeypatch, tmp_path):
    args = ["--batch-size", "4", "--warmup-batches", "1", "--batches", "1", "--output-dir", str(tmp_path)]
    log = run_script(monkeypatch, "synthetic", args, gpus=0, launcher="torchrun")
    assert ("set_num_threads", max(1, (os.cpu_count() or 1) // 4)) in log
    assert ("ddp", None) in log
    report = json.loads((tmp_path / "synthetic.json").read_text())
    assert (report["device"], report["backend"]) == ("cpu", "gloo")

#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The local lab: three Docker-in-Docker machines that stand in for GPU servers (docs/architecture.md "The lab").

``up`` creates (or reuses) the machines ``lab-master``, ``lab-worker1`` and ``lab-worker2`` from the
``machine`` image on a private bridge, each with systemd, sshd and its own Docker storage, and one
host directory mounted at ``/data1/share`` in all three (this kernel cannot mount NFS), and another
at ``/data1/artifacts``, read-only on the workers (the artifact directory: what every node executes,
written by the master only). They are reached over ssh like production hosts: a lab key is
authorised in each and their host keys are pinned in a known_hosts file read through ``docker exec``
(an authenticated channel), never by trust on first use. The CPU Horovod image travels the
air-gapped way, as an archive in the artifact directory.

``site`` converges the site twice and times a launch; ``site --example horovod`` then runs the
guide's own flow: Horovod's examples checked out from a git repository in the artifact directory at
tag v0.28.1 (``--examples PATH``: a clone of Horovod's repository; by default the stand-in of
tests/examples-standin), tensorboardX and tqdm installed through ``horovod_pip_packages`` from a
wheel directory there, and ``examples/pytorch/pytorch_synthetic_benchmark.py --no-cuda`` on
the three machines, every rank's output checked.

``scale-out`` (after ``up`` and a converge; ``make lab-scale-out``, in ``make test-all``) adds a
fourth machine, ``lab-worker3``, while a run goes on: the site with ``--limit lab-master,lab-worker3
--skip-tags launch``, the run's processes and containers on the three machines unchanged, the run
ending rc 0, a next run on four machines, then the site without it and no node pinning it any more.

``old-runner`` (after ``up``; ``make lab-old-horovod``, in ``make test-all``) runs the site with the
guide's Horovod release, 0.18.2 (``images/horovod-cpu-0.18.2``: no ``-i``, no ``--network-interface(s)``),
from its archive in the artifact directory: containers recreated from it, the bundled example on the
three machines (rc 0, three hosts in its result, a launch line without those options), the site again
with nothing changed; then the site with the lab's own image again.

``guide-imagenet`` (after ``up``; ``make lab-guide-imagenet``, in ``make test-all``) runs the guide's
workload through the site three times: ``examples/pytorch_imagenet_resnet50.py`` at tag v0.18.2
(``--examples PATH``: Horovod's own; by default the stand-in) on a small ImageFolder data set in the
artifact directory, checkpoints and TensorBoard logs in ``horovod_launch_output_dir``. ``--epochs 1``
trains epoch 1, ``--epochs 2`` resumes and trains epoch 2 only, the same again trains nothing; each run
ends rc 0 with the checkpoints and event files there.

``tensorboard`` (after ``up`` and a converge; ``make lab-tensorboard``, in ``make test-all``) trains a
small model on the three machines whose rank 0 writes scalars with ``torch.utils.tensorboard`` into its
run's directory, then runs playbooks/tensorboard.yml on that run: check mode starts nothing; started, the
playbook's TensorBoard listens on the master's loopback only (refused on its cluster address), the same
settings again change nothing and the launch preflight sees no running job; through the ``ssh -L``
command the playbook prints, the page, the run's log directory and the scalars' data (its tag, every step,
the values rank 0 wrote) answer on this machine, and a headless Chromium (installed from Debian's mirror
when missing) takes a screenshot of the scalars dashboard that must show the run's curve
(``/var/lib/multinode-horovod/lab/tensorboard/tensorboard.png``); another port replaces it, and stopped
(check mode first) it is gone while a TensorBoard the playbook did not start runs on.

``bench`` runs playbooks/benchmark.yml on the lab as it is (``make lab`` first) with a sweep up to
16 MiB and a small synthetic model, and prints the report's table; the report stays in
``/var/lib/multinode-horovod/lab/benchmarks/<name>/`` (docs/measurements.md shows one).

``bench-slow-node`` (after ``up`` and a converge; ``make lab-bench-slow-node``, in ``make test-all``)
measures what iperf3 reaches between two lab machines, shapes ``lab-worker2``'s link to the lab bridge to
a tenth of it with ``tc`` (a token bucket on each end of its veth pair: in the machine on what it sends, on
this host on what it receives),
runs the benchmark's link step and checks that the report names ``lab-worker2`` as the slow node (its
link), its rate beside the others', the grade its cause with what to check; then holds ``lab-worker1``'s
Horovod container to a fifth of a CPU (``docker update --cpu-quota`` by its own dockerd), runs the scaling
step and checks that ``lab-worker1`` is named the slow node (compute). Each limit is removed, always.

``down`` removes exactly what ``up`` created (containers, volumes and the network carry the label
``org.multinode-horovod.lab``), plus the lab's key and share under ``/var/lib/multinode-horovod/lab``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import machines  # tools/machines.py: the DinD machine, defined once
import prepare_host  # tools/prepare_host.py: Debian packages this machine lacks
import progress  # tools/progress.py: how far a long command is

REPO = Path(__file__).resolve().parent.parent
IMAGES = REPO / "tools" / "images.py"
LABEL = "org.multinode-horovod.lab"
# The machines run the Debian release under test (MNH_DEBIAN, as tools/images.py builds them).
MACHINE_IMAGE = machines.image("machine")
CPU_IMAGE = "horovod-cpu"
NETWORK = "mnh-lab"
SUBNET = "10.213.9.0/24"
LAB_DIR = Path("/var/lib/multinode-horovod/lab")
# The site's defaults (plugins/module_utils/defaults.py; tests/unit/test_shared_values.py checks them):
# the lab mounts its share at the default horovod_share_dir, and the site names the container.
SHARE_DIR = "/data1/share"
# The default horovod_artifact_dir: what every node executes, written by the master only. The lab's
# "existing" storage gives it to the workers read-only, as a real shared filesystem should (SECURITY.md).
ARTIFACT_DIR = "/data1/artifacts"
CONTAINER = "horovod"
# Where ssh_trust keeps a node's known_hosts and authorized_keys on the host (defaults.SSH_DIR).
SSH_TRUST_DIR = "/etc/multinode-horovod/ssh"


@dataclass(frozen=True)
class Machine:
    name: str
    address: str

    @property
    def container(self) -> str:
        return f"mnh-{self.name}"


MACHINES = (
    Machine("lab-master", "10.213.9.11"),
    Machine("lab-worker1", "10.213.9.12"),
    Machine("lab-worker2", "10.213.9.13"),
)


def log(msg: str) -> None:
    print(f"[lab] {msg}", flush=True)


def run(argv: Sequence[str], *, check: bool = True, capture: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(argv), text=True, capture_output=capture, check=False)
    if check and res.returncode != 0:
        detail = (res.stderr or res.stdout or "").strip() if capture else ""
        raise SystemExit(f"lab: {' '.join(argv)} failed (rc {res.returncode}): {detail}")
    return res


def checked(argv: Sequence[str], what: str) -> None:
    """Run a long command, its lines and a heartbeat shown as it goes (tools/progress.py)."""
    rc = progress.watch(argv, lambda text: log(f"{what}: {text}"))
    if rc != 0:
        raise SystemExit(f"lab: {' '.join(argv)} failed (rc {rc}); its output is above")


class Timer:
    """Says what a long step does and how long it took."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.start = 0.0

    def __enter__(self) -> Timer:
        log(f"{self.what} ...")
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            log(f"{self.what}: done in {time.monotonic() - self.start:.0f}s")


def lab_dir() -> Path:
    """One lab per machine (fixed names and addresses), so its key, pinned host keys and share live
    at a fixed path that the lab inventory names, whichever checkout or Molecule run uses it."""
    return LAB_DIR


def machine_run_argv(machine: Machine, share: Path, artifacts: Path) -> list[str]:
    """docker run arguments for one lab machine: the DinD machine of tools/machines.py, its Docker data
    in a labelled volume of its own (machines.DIFFERENCES), the lab's network and mounts."""
    argv = ["docker", "run", "-d", "--name", machine.container, "--hostname", machine.name]
    argv += ["--label", f"{LABEL}=machine", "--network", NETWORK, "--ip", machine.address]
    argv += machines.docker_run_args()
    argv += [
        "--mount",
        f"type=volume,src={machine.container}-docker,dst={machines.DOCKER_DATA},volume-label={LABEL}=docker",
    ]
    argv += ["-v", f"{share}:{SHARE_DIR}"]
    argv += ["-v", f"{artifacts}:{ARTIFACT_DIR}" + ("" if machine == MACHINES[0] else ":ro")]
    argv += [MACHINE_IMAGE, machines.COMMAND]
    return argv


def mounts_of(machine: Machine) -> list[str]:
    """The paths a lab machine has mounts at."""
    res = run(["docker", "inspect", "-f", "{{range .Mounts}}{{.Destination}} {{end}}", machine.container], check=False)
    return res.stdout.split()


def exists(kind: str, name: str) -> bool:
    return run(["docker", kind, "inspect", name], check=False).returncode == 0


def image_archive(name: str) -> Path:
    """Build or reuse a workload image and its docker save archive (tools/images.py); the archive's path.
    Only the path is read (images.py's standard output): the build's progress goes to its standard
    error, which is the user's, so a build of many minutes is seen as it goes."""
    argv = [sys.executable, str(IMAGES), name, "--print-archive"]
    res = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
    paths = res.stdout.split()
    if res.returncode != 0 or not paths:
        raise SystemExit(f"lab: {' '.join(argv)} failed (rc {res.returncode}); its output is above")
    return Path(paths[-1])


def ensure_images() -> Path:
    with Timer("build or reuse the machine and CPU Horovod images (cached by recipe hash)"):
        run([sys.executable, str(IMAGES), "machine"], capture=False)
        return image_archive(CPU_IMAGE)


def ensure_key(ssh_dir: Path) -> Path:
    key = ssh_dir / "id_ed25519"
    if not key.exists():
        ssh_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "multinode-horovod-lab", "-f", str(key)])
    return key


def place_archive(archive: Path, artifacts: Path, name: str = f"{CPU_IMAGE}.tar") -> None:
    """Put the image archive in the artifact directory; a hard link when possible (no copy of gigabytes)."""
    target = artifacts / "images" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and os.path.samefile(target, archive):
        return
    tmp = target.with_suffix(".tar.part")
    tmp.unlink(missing_ok=True)
    try:
        os.link(archive, tmp)
    except OSError:
        with Timer(f"copy {archive.name} onto the share"):
            checked(["cp", str(archive), str(tmp)], "copy")
    tmp.replace(target)


def ensure_network() -> None:
    if not exists("network", NETWORK):
        run(["docker", "network", "create", "--label", f"{LABEL}=network", "--subnet", SUBNET, NETWORK])


def wait_ready(machine: Machine, timeout: float = 120) -> str:
    """Wait for sshd and the host key made at first boot; return the host public key."""
    start = time.monotonic()
    deadline, said = start + timeout, start
    while time.monotonic() < deadline:
        if time.monotonic() - said >= progress.HEARTBEAT_S:
            said = time.monotonic()
            log(f"still waiting for {machine.name}'s sshd ({progress.elapsed(said - start)})")
        res = run(
            [
                "docker",
                "exec",
                machine.container,
                "sh",
                "-c",
                "systemctl is-active --quiet ssh && cat /etc/ssh/ssh_host_ed25519_key.pub",
            ],
            check=False,
        )
        if res.returncode == 0 and res.stdout.startswith("ssh-ed25519 "):
            return res.stdout.strip()
        time.sleep(1)
    raise SystemExit(f"lab: {machine.name} did not start sshd within {timeout:.0f}s (docker logs {machine.container})")


def authorise(machine: Machine, pubkey: str) -> None:
    script = (
        "install -d -m 700 /root/.ssh && touch /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys"
        f" && (grep -qxF '{pubkey}' /root/.ssh/authorized_keys || echo '{pubkey}' >> /root/.ssh/authorized_keys)"
    )
    run(["docker", "exec", machine.container, "sh", "-c", script])


def wait_ssh(machine: Machine, key: Path, known_hosts: Path, timeout: float = 60) -> None:
    argv = [
        "ssh", "-i", str(key), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
        "-o", f"UserKnownHostsFile={known_hosts}", "-o", "StrictHostKeyChecking=yes",
        "-o", "ConnectTimeout=5", f"root@{machine.address}", "true",
    ]  # fmt: skip
    deadline = time.monotonic() + timeout
    while True:
        res = run(argv, check=False)
        if res.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"lab: ssh to {machine.name} ({machine.address}) failed: {res.stderr.strip()}")
        time.sleep(1)


def up() -> None:
    start = time.monotonic()
    archive = ensure_images()
    base = lab_dir()
    share, artifacts = base / "share", base / "artifacts"
    share.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    place_archive(archive, artifacts)
    key = ensure_key(base / "ssh")
    pubkey = key.with_suffix(".pub").read_text().strip()
    ensure_network()
    with Timer("start the lab machines"):
        for machine in MACHINES:
            state = run(["docker", "inspect", "-f", "{{.State.Running}}", machine.container], check=False)
            if state.returncode == 0 and ARTIFACT_DIR not in mounts_of(machine):
                log(f"{machine.name} predates the artifact directory; making it again")
                run(["docker", "rm", "-f", "-v", machine.container])
                state = run(["docker", "inspect", machine.container], check=False)
            if state.returncode != 0:
                run(machine_run_argv(machine, share, artifacts))
            elif state.stdout.strip() != "true":
                run(["docker", "start", machine.container])
        host_keys = {m: wait_ready(m) for m in MACHINES}
    known_hosts = base / "ssh" / "known_hosts"
    known_hosts.write_text("".join(f"{m.address} {k}\n" for m, k in host_keys.items()))
    for machine in MACHINES:
        authorise(machine, pubkey)
        wait_ssh(machine, key, known_hosts)
    log(f"lab machines up in {time.monotonic() - start:.0f}s: " + ", ".join(f"{m.name}={m.address}" for m in MACHINES))


def down() -> None:
    with Timer("remove the lab machines, their volumes and the lab network"):
        ids = run(["docker", "ps", "-aq", "--filter", f"label={LABEL}"]).stdout.split()
        if ids:
            run(["docker", "rm", "-f", "-v", *ids])
        vols = run(["docker", "volume", "ls", "-q", "--filter", f"label={LABEL}"]).stdout.split()
        if vols:
            run(["docker", "volume", "rm", *vols])
        if exists("network", NETWORK):
            run(["docker", "network", "rm", NETWORK])
        run(["rm", "-rf", str(lab_dir())])


RECAP_RE = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


def playbook(*extra: str, book: str = "site.yml") -> tuple[float, int, str]:
    """Run the site (or another playbook) on the lab; return wall seconds, total changed, and the output."""
    env = dict(os.environ, ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_roles", ANSIBLE_NOCOLOR="1")
    argv = ["ansible-playbook", book, "-i", "inventories/lab", *extra]
    log(" ".join(argv))
    start = time.monotonic()
    lines: list[str] = []

    def echo(line: str) -> None:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)

    # Ansible prints a task's result when every host is done with it: a heartbeat while one runs on
    # (an image loaded on each machine, a benchmark step).
    rc = progress.watch(argv, log, echo=echo, env=env, cwd=REPO)
    wall = time.monotonic() - start
    out = "".join(lines)
    if rc != 0:
        raise SystemExit(f"lab: {book} failed (rc {rc}) after {wall:.0f}s")
    changed = sum(int(m.group(3)) for m in RECAP_RE.finditer(out))
    return wall, changed, out


def site() -> None:
    """Converge the site on the lab, then again to show the no-op re-run, and report both."""
    first, first_changed, _ = playbook()
    second, second_changed, _ = playbook()
    run_name = time.strftime("timing-%Y%m%d-%H%M%S")
    launch, _, launch_out = playbook("--tags", "launch", "-e", f"horovod_run_name={run_name}")
    by_hand = hand_typed_launch(run_name)
    seen = re.search(r"its end seen\s+([0-9.]+)\s+s\s+after\s+it", launch_out)
    report = [
        "lab measurements (this machine: " + machine_summary() + ")",
        f"  converge (first run here):   {first:6.0f}s  changed={first_changed}",
        f"  no-op re-run:                {second:6.0f}s  changed={second_changed}"
        f"  ratio {second / first:.2f} of the first run",
        f"  launch role, new run:        {launch:6.0f}s  (--tags launch: gate, probes, launch, wait, summary)",
        f"  the same horovodrun by hand: {by_hand:6.0f}s  the role's cost {launch - by_hand:4.1f}s",
        f"  the run's end seen by the role {seen.group(1) if seen else '?'}s after it",
    ]
    (lab_dir() / "measurements.txt").write_text("\n".join(report) + "\n")
    print("\n".join(report), flush=True)
    if second_changed:
        raise SystemExit(f"lab: the re-run changed {second_changed} things; it must change nothing")


def hand_typed_launch(run_name: str) -> float:
    """Run the launch script the role wrote, by hand in the master's container, and time it."""
    script = f"{ARTIFACT_DIR}/runs/{run_name}/horovod-launch.sh"
    by_hand = f"{ARTIFACT_DIR}/runs/{run_name}-by-hand"
    # The same horovodrun line, with its own output directory so the role's run stays as it was.
    command = (
        f"mkdir -p {by_hand} && sed -e 's#/runs/{run_name}#/runs/{run_name}-by-hand#g' {script} > {by_hand}/run.sh"
        f" && sh {by_hand}/run.sh"
    )
    log(f"the same horovodrun by hand: docker exec {CONTAINER} sh -c '{command}'")
    start = time.monotonic()
    run(["docker", "exec", MACHINES[0].container, "docker", "exec", CONTAINER, "sh", "-c", command])
    return time.monotonic() - start


# The guide's pip packages, pinned (tensorboardX needs protobuf >= 3.20; its newest releases refuse
# 3.20-era generated code, so protobuf is pinned too).
GUIDE_PIP = {"tensorboardX": "2.6.2.2", "tqdm": "4.67.1", "protobuf": "3.20.3"}
GUIDE_TAG = "v0.28.1"
STANDIN = REPO / "tests" / "examples-standin"
# Options that Horovod's script and the stand-in both know; small, so three CPU ranks finish quickly.
GUIDE_ARGS = ["--no-cuda", "--model", "resnet18", "--batch-size", "4", "--num-warmup-batches", "1",
              "--num-batches-per-iter", "2", "--num-iters", "2"]  # fmt: skip


# The stand-in's commit has a fixed date, so the repository made again on a later call has the same
# commit and the role's check of a moved tag does not refuse the lab's own checkout. A clone of
# Horovod's repository and the stand-in tag different commits with the same names, so each has its own
# repository and checkout (examples_source): switching between them on one lab is not a moved tag.
GIT_DATE = "2026-01-01T00:00:00+00:00"


def git(*argv: str) -> None:
    argv = ["git", "-c", "user.name=multinode.horovod lab", "-c", "user.email=lab@example.invalid", *argv]
    env = dict(os.environ, GIT_AUTHOR_DATE=GIT_DATE, GIT_COMMITTER_DATE=GIT_DATE)
    res = subprocess.run(argv, text=True, capture_output=True, check=False, env=env)
    if res.returncode != 0:
        raise SystemExit(f"lab: {' '.join(argv)} failed (rc {res.returncode}): {res.stderr.strip()}")


def examples_source(source: Path | None) -> str:
    """The name of the examples' repository and checkouts: Horovod's clone or the stand-in."""
    return "horovod-examples" if source is not None else "standin-examples"


def examples_repo(artifacts: Path, source: Path | None, tag: str = GUIDE_TAG) -> str:
    """A git repository in the artifact directory holding Horovod's examples at `tag`; its path in
    the machines (the stand-in is tagged with GUIDE_TAG and IMAGENET_TAG)."""
    repo = artifacts / "src" / f"{examples_source(source)}.git"
    run(["rm", "-rf", str(repo)])
    repo.parent.mkdir(parents=True, exist_ok=True)
    if source is not None:
        # A clone of Horovod's repository: all its tags, no work tree, no submodules.
        run(["git", "clone", "--quiet", "--mirror", str(source), str(repo)])
        run(["git", "-C", str(repo), "rev-parse", "--verify", f"{tag}^{{commit}}"])
    else:
        work = artifacts / "src" / f"{examples_source(source)}-work"
        run(["rm", "-rf", str(work)])
        run(["cp", "-r", str(STANDIN), str(work)])
        git("-C", str(work), "init", "--quiet", "--initial-branch=master")
        git("-C", str(work), "add", "-A")
        git("-C", str(work), "commit", "--quiet", "--message", "stand-in for Horovod's examples")
        git("-C", str(work), "tag", GUIDE_TAG)
        git("-C", str(work), "tag", IMAGENET_TAG)
        run(["git", "clone", "--quiet", "--mirror", str(work), str(repo)])
        run(["rm", "-rf", str(work)])
    return f"{ARTIFACT_DIR}/src/{repo.name}"


def guide_code(artifacts: Path, source: Path | None, tag: str, checkout: str) -> dict[str, object]:
    """The examples' repository at `tag` and the guide's pip packages in the wheel directory of the
    artifact directory, as the site's extra variables (the code checked out in the workspace's `checkout`)."""
    repo = examples_repo(artifacts, source, tag)
    wheels = artifacts / "wheels"
    wheels.mkdir(exist_ok=True)
    with Timer("download the guide's pip packages into the wheel directory in the artifact directory"):
        pins = [f"{name}=={version}" for name, version in GUIDE_PIP.items()]
        pip = [sys.executable, "-m", "pip", "download", "--progress-bar", "off", "--no-deps", "--dest", str(wheels)]
        checked([*pip, *pins], "pip")
    return {
        "horovod_pip_packages": [{"name": n, "version": v} for n, v in GUIDE_PIP.items()],
        "docker_horovod_pip_wheel_dir": f"{ARTIFACT_DIR}/wheels",
        "horovod_launch_code_repo": repo,
        "horovod_launch_code_version": tag,
        "horovod_launch_code_dest": f"{ARTIFACT_DIR}/workspace/{checkout}",
    }


def guide_example(source: Path | None) -> None:
    """Horovod's synthetic benchmark from a checkout in the artifact directory, with the guide's pip packages."""
    artifacts = lab_dir() / "artifacts"
    code = guide_code(artifacts, source, GUIDE_TAG, examples_source(source))
    run_name = time.strftime("guide-%Y%m%d-%H%M%S")
    extra = {
        **code,
        "horovod_train_command": ["python3", "examples/pytorch/pytorch_synthetic_benchmark.py", *GUIDE_ARGS],
        "horovod_run_name": run_name,
    }
    wall, _, _ = playbook("-e", json.dumps(extra))
    # Horovod's script prints on rank 0 only; every rank has its log directory, and rank 0 counts them all.
    logs = [artifacts / "runs" / run_name / f"rank.{rank}" / "stdout" for rank in range(len(MACHINES))]
    missing = [str(p) for p in logs if not p.is_file()]
    # horovodrun prefixes each line with "[RANK]<stdout>:".
    pattern = rf"^(?:\[0\]<stdout>:)?Total img/sec on {len(MACHINES)} CPU\(s\): .*$"
    total = None if missing else re.search(pattern, logs[0].read_text(), re.MULTILINE)
    if missing or total is None:
        raise SystemExit(f"lab: the guide's example left no log at {missing} or no line {pattern!r} in {logs[0]}")
    print(f"guide's example ({'Horovod ' + GUIDE_TAG if source else 'stand-in'}), {wall:.0f}s: {total.group(0)}")


# The guide's workload: Horovod v0.18.2's examples/pytorch_imagenet_resnet50.py (or the stand-in of that
# path) on a small ImageFolder data set in the artifact directory, which every machine reads, with its
# checkpoints and TensorBoard logs in an output directory of rank 0's. Small enough for three CPU ranks.
IMAGENET_TAG = "v0.18.2"
IMAGENET_SCRIPT = "examples/pytorch_imagenet_resnet50.py"
IMAGENET_CLASSES = ("cat", "dog")
IMAGENET_IMAGES = {"train": 6, "val": 3}  # per class: 4 training images and 2 validation ones per rank
EPOCH_RE = re.compile(r"Train Epoch\s+#(\d+)")


def ppm(path: Path, shade: int) -> None:
    """A 32x32 binary PPM image (ImageFolder reads .ppm through PIL) of one colour with a diagonal."""
    pixels = bytearray()
    for y in range(32):
        for x in range(32):
            pixels += bytes((255, 255, 255)) if x == y else bytes((shade, 255 - shade, (shade * 7) % 256))
    path.write_bytes(b"P6 32 32 255\n" + bytes(pixels))


def imagefolder(root: Path) -> None:
    """train/ and val/ with a directory of images per class, as ImageNet's layout."""
    for split, count in IMAGENET_IMAGES.items():
        for number, name in enumerate(IMAGENET_CLASSES):
            directory = root / split / name
            directory.mkdir(parents=True, exist_ok=True)
            for index in range(count):
                ppm(directory / f"{index}.ppm", 40 + 150 * number + index)


def trained_epochs(run_dir: Path) -> list[int]:
    """The epochs rank 0 trained in a run, from tqdm's lines in its output."""
    text = "".join(p.read_text(errors="replace") for p in (run_dir / "rank.0").glob("std*") if p.is_file())
    return sorted({int(m) for m in EPOCH_RE.findall(text)})


def guide_imagenet(source: Path | None) -> None:
    """The guide's workload three times through the site: one epoch (a checkpoint and TensorBoard events
    written), two epochs (resumes from the first: trains epoch 2 only), two epochs again (trains nothing)."""
    artifacts = lab_dir() / "artifacts"
    code = guide_code(artifacts, source, IMAGENET_TAG, f"{examples_source(source)}-imagenet")
    data = artifacts / "data" / "imagefolder"
    run(["rm", "-rf", str(data)])
    imagefolder(data)
    output = artifacts / "outputs" / "guide-imagenet"
    run(["rm", "-rf", str(output)])
    out, pictures = f"{ARTIFACT_DIR}/outputs/guide-imagenet", f"{ARTIFACT_DIR}/data/imagefolder"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    problems = []
    for step, (epochs, expected) in enumerate(((1, [1]), (2, [2]), (2, [])), start=1):
        run_name = f"guide-imagenet-{stamp}-{step}"
        extra = {
            **code,
            "horovod_launch_output_dir": out,
            "horovod_train_command": [
                "python3",
                IMAGENET_SCRIPT,
                "--no-cuda",
                "--train-dir",
                f"{pictures}/train",
                "--val-dir",
                f"{pictures}/val",
                "--log-dir",
                f"{out}/logs",
                "--checkpoint-format",
                f"{out}/checkpoint-{{epoch}}.pth.tar",
                "--batch-size",
                "2",
                "--val-batch-size",
                "2",
                "--epochs",
                str(epochs),
            ],
            "horovod_run_name": run_name,
        }
        with Timer(f"the guide's workload, run {step}: --epochs {epochs}"):
            playbook("-e", json.dumps(extra))
        run_dir = artifacts / "runs" / run_name
        rc_file = run_dir / "rc"
        rc = rc_file.read_text().strip() if rc_file.is_file() else "none"
        trained = trained_epochs(run_dir)
        log(f"run {step} (--epochs {epochs}): rc {rc}, trained epochs {trained}")
        if rc != "0":
            problems.append(f"run {step} ended with rc {rc} ({run_dir}/launcher.log)")
        if trained != expected:
            problems.append(f"run {step} (--epochs {epochs}) trained epochs {trained}, not {expected}")
        checkpoints = sorted(p.name for p in output.glob("checkpoint-*.pth.tar"))
        wanted = [f"checkpoint-{e}.pth.tar" for e in range(1, epochs + 1)]
        if checkpoints != wanted:
            problems.append(f"after run {step} {output} holds checkpoints {checkpoints}, not {wanted}")
        if not list((output / "logs").glob("events.out.tfevents.*")):
            problems.append(f"after run {step} {output}/logs holds no TensorBoard events")
    if problems:
        raise SystemExit("lab: guide-imagenet: " + "; ".join(problems))
    what = f"Horovod {IMAGENET_TAG}'s {IMAGENET_SCRIPT}" if source else "the stand-in"
    log(f"guide-imagenet passed: {what} trained epoch 1, resumed for epoch 2, then trained nothing")


# A fourth machine, only while ``scale-out`` runs: the server that arrives while the others train.
NEW_WORKER = Machine("lab-worker3", "10.213.9.14")
# The run that goes on while the new worker joins: every rank waits for a file on the share, then
# allreduces across the three machines and ends rc 0 (so the run is proven whole after the site ran).
HOLD_FILE = f"{SHARE_DIR}/scale-out-release"
HOLD_CODE = (
    "import os, time, torch, horovod.torch as hvd; hvd.init(); print('scale-out rank', hvd.rank(), flush=True)\n"
    "deadline = time.time() + 1200\n"
    f"while not os.path.exists({HOLD_FILE!r}) and time.time() < deadline: time.sleep(1)\n"
    "total = hvd.allreduce(torch.ones(1), op=hvd.Sum).item(); print('scale-out sum', total, flush=True)\n"
    "assert total == hvd.size()\n"
)


def in_container(machine: Machine, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command in the Horovod container of a lab machine."""
    return run(["docker", "exec", machine.container, "docker", "exec", CONTAINER, *argv], check=check)


def snapshot(machines: Sequence[Machine]) -> dict[str, dict[str, object]]:
    """What must not change on the nodes already there: the container's start time and the run's
    processes (pid, start time, command) in it."""
    out: dict[str, dict[str, object]] = {}
    for machine in machines:
        started = run(
            ["docker", "exec", machine.container, "docker", "inspect", "-f", "{{.State.StartedAt}}", CONTAINER]
        )
        procs = in_container(machine, "ps", "-eo", "pid=,lstart=,args=").stdout.splitlines()
        out[machine.name] = {
            "container_started": started.stdout.strip(),
            "run_processes": sorted(line.strip() for line in procs if "scale-out rank" in line or "horovodrun" in line),
        }
    return out


def pin_lab_machine(known_hosts: Path, machine: Machine, host_key: str | None) -> None:
    """The controller's known_hosts for the lab with the machine's line replaced by `host_key`, or
    dropped when it is None."""
    lines = [line for line in known_hosts.read_text().splitlines() if not line.startswith(machine.address + " ")]
    lines += [f"{machine.address} {host_key}"] if host_key else []
    known_hosts.write_text("".join(f"{line}\n" for line in lines))


def start_new_worker(share: Path, artifacts: Path) -> None:
    base = lab_dir()
    run(["docker", "rm", "-f", "-v", NEW_WORKER.container], check=False)
    run(machine_run_argv(NEW_WORKER, share, artifacts))
    known_hosts = base / "ssh" / "known_hosts"
    pin_lab_machine(known_hosts, NEW_WORKER, wait_ready(NEW_WORKER))
    key = base / "ssh" / "id_ed25519"
    authorise(NEW_WORKER, key.with_suffix(".pub").read_text().strip())
    wait_ssh(NEW_WORKER, key, known_hosts)


def scale_out() -> None:
    """Add a fourth machine while a run goes on, with the documented ``--limit``; prove the run and the
    nodes already there untouched, a next run on four nodes, then the worker removed everywhere."""
    base = lab_dir()
    share, artifacts = base / "share", base / "artifacts"
    overlay = base / "scale-out.yml"
    (share / "scale-out-release").unlink(missing_ok=True)
    held = time.strftime("scale-out-%Y%m%d-%H%M%S")
    with Timer("start a run on the three machines that waits (horovod_launch_wait: false)"):
        playbook("--tags", "launch", "-e", f"horovod_run_name={held}", "-e", "horovod_launch_wait=false",
                 "-e", json.dumps({"horovod_train_command": ["python3", "-c", HOLD_CODE]}))  # fmt: skip
    before = snapshot(MACHINES)
    if not all(state["run_processes"] for state in before.values()):
        raise SystemExit(f"lab: scale-out: the run's processes are not on every machine: {before}")
    with Timer(f"start {NEW_WORKER.name} ({NEW_WORKER.address})"):
        start_new_worker(share, artifacts)
    worker = {"hosts": {NEW_WORKER.name: {"ansible_host": NEW_WORKER.address}}}
    inventory = {"all": {"children": {"horovod_cluster": {"children": {"horovod_workers": worker}}}}}
    overlay.write_text(
        f"# {NEW_WORKER.name}, added by tools/lab.py scale-out (removed at its end)\n{json.dumps(inventory)}\n"
    )
    limit = f"{MACHINES[0].name},{NEW_WORKER.name}"
    with Timer(f"the site on the new worker and the master only (--limit {limit} --skip-tags launch)"):
        _, changed, _ = playbook("-i", str(overlay), "--limit", limit, "--skip-tags", "launch")
    after = snapshot(MACHINES)
    if after != before:
        raise SystemExit(f"lab: scale-out: the nodes already there changed under the run:\n{before}\n{after}")
    log(f"the run's processes and containers on {', '.join(before)} are as they were ({changed} changed elsewhere)")
    (share / "scale-out-release").write_text("go\n")
    rc_file = artifacts / "runs" / held / "rc"
    deadline = time.monotonic() + 120
    while not rc_file.exists() and time.monotonic() < deadline:
        time.sleep(1)
    rc = rc_file.read_text().strip() if rc_file.exists() else "none"
    if rc != "0":
        raise SystemExit(f"lab: scale-out: the run that went on ended with rc {rc} ({rc_file.parent}/launcher.log)")
    log(f"run {held} went on and ended rc 0 (every rank's allreduce after the site ran)")
    with Timer("a new run on the four machines"):
        _, _, out = playbook("-i", str(overlay), "--tags", "launch", "-e", f"horovod_run_name={held}-four")
    names = ", ".join(m.name for m in (*MACHINES, NEW_WORKER))
    if not re.search(r"np 4 on " + re.escape(names), out):
        raise SystemExit(f"lab: scale-out: the next run did not use the four machines ({names})")
    overlay.unlink()
    with Timer(f"the site without {NEW_WORKER.name}"):
        playbook()
    for machine in MACHINES:
        pins = run(["docker", "exec", machine.container, "cat", f"{SSH_TRUST_DIR}/known_hosts"]).stdout
        keys = run(["docker", "exec", machine.container, "cat", f"{SSH_TRUST_DIR}/authorized_keys"]).stdout
        config = run(["docker", "exec", machine.container, "cat", f"{SSH_TRUST_DIR}/config"]).stdout
        # Its host key pins, its key (mesh) or its address in the keys' from=, its block in the client config.
        if any(NEW_WORKER.address in text or NEW_WORKER.name in text for text in (pins, keys, config)):
            raise SystemExit(f"lab: scale-out: {machine.name} still pins or authorises {NEW_WORKER.name}")
    log(f"{NEW_WORKER.name} left the inventory: no node pins or authorises it any more")
    run(["docker", "rm", "-f", "-v", NEW_WORKER.container])
    pin_lab_machine(base / "ssh" / "known_hosts", NEW_WORKER, None)
    log("scale-out: passed")


# The guide's Horovod release, built for Debian 12 (images/horovod-cpu-0.18.2): no -i, no
# --network-interface(s).
OLD_IMAGE = "horovod-cpu-0.18.2"
OLD_VERSION = "0.18.2"


def launch_line(script: str) -> str:
    """The horovodrun line of a launch script (horovod-launch.sh)."""
    lines = [
        line
        for line in script.splitlines()
        if not line.lstrip().startswith("#") and re.search(r"(^|\s|/)horovodrun\s", line)
    ]
    if len(lines) != 1:
        raise SystemExit(f"lab: expected one horovodrun line in the launch script, found {len(lines)}:\n{script}")
    return lines[0]


def old_runner() -> None:
    """The site with the guide's Horovod release on the three machines, twice (the second changes
    nothing), its run checked (rc 0, three hosts, the command line 0.18.2 takes, the interface in the
    command's environment), then the lab's image again."""
    artifacts = lab_dir() / "artifacts"
    with Timer(f"build or reuse the Horovod {OLD_VERSION} image (cached by recipe hash)"):
        archive = image_archive(OLD_IMAGE)
    place_archive(archive, artifacts, f"{OLD_IMAGE}.tar")
    run_name = time.strftime("old-runner-%Y%m%d-%H%M%S")
    extra = json.dumps(
        {
            "horovod_image": f"multinode-horovod/{OLD_IMAGE}:local",
            "horovod_image_archive": f"{ARTIFACT_DIR}/images/{OLD_IMAGE}.tar",
            "horovod_run_name": run_name,
        }
    )
    try:
        with Timer(f"the site with Horovod {OLD_VERSION} (containers recreated from it, then a run)"):
            _, _, first = playbook("-e", extra)
        with Timer(f"the site with Horovod {OLD_VERSION} again"):
            _, changed, _ = playbook("-e", extra)
        run_dir = artifacts / "runs" / run_name
        line = launch_line((run_dir / "horovod-launch.sh").read_text())
        result_file = run_dir / "output" / "result.json"
        result = json.loads(result_file.read_text()) if result_file.is_file() else {}
        rc_file = run_dir / "rc"
        rc = rc_file.read_text().strip() if rc_file.is_file() else "none"
        options = (" -i ", "--network-interface")
        problems = [f"the launch line has {option.strip()}: {line}" for option in options if option in line]
        # 0.18 takes no interface option: the interface found goes in the command's environment.
        if " env HOROVOD_GLOO_IFACE=" not in line:
            problems.append(f"the launch line sets no HOROVOD_GLOO_IFACE in the command's environment: {line}")
        if f"Horovod {OLD_VERSION} (gloo)" not in first:
            problems.append(f"the preflight did not report Horovod {OLD_VERSION}")
        if changed:
            problems.append(f"the second site run changed {changed} things")
        if rc != "0":
            problems.append(f"the run ended with rc {rc} (launcher.log)")
        if len(result.get("distinct_hosts", [])) != len(MACHINES):
            problems.append(f"{result_file} does not name {len(MACHINES)} hosts: {result}")
        if problems:
            raise SystemExit(f"lab: old-runner ({run_dir}): " + "; ".join(problems))
        log(f"Horovod {OLD_VERSION} ran on {', '.join(result['distinct_hosts'])}: {line.strip()}")
    finally:
        with Timer("the site with the lab's image again"):
            playbook()
    log("old-runner: passed")


def module_utils(name: str) -> ModuleType:
    """The collection's own module_utils module `name`, so that the lab judges with the collection's code."""
    sys.path.insert(0, str(REPO / ".cache" / "collections"))  # make venv links this checkout there
    return importlib.import_module(f"ansible_collections.multinode.horovod.plugins.module_utils.{name}")


# torchrun on the lab (``torchrun``): the bundled DDP example through the site with horovod_launcher:
# torchrun, then the benchmark under torchrun (torch.distributed's bus bandwidth, graded), on the lab's
# Horovod image (Debian 12's torch 1.13) and on the torch-cpu image (PyPI's 2.5.1).
TORCH_IMAGE = "torch-cpu"


def torchrun_run(name: str, extra: dict[str, object], torch_prefix: str) -> list[str]:
    """One torchrun run of the bundled example through the site; what is wrong with it (empty: nothing)."""
    artifacts = lab_dir() / "artifacts"
    _, _, out = playbook("-e", json.dumps({**extra, "horovod_launcher": "torchrun", "horovod_run_name": name}))
    run_dir = artifacts / "runs" / name
    result_file = run_dir / "output" / "result.json"
    result = json.loads(result_file.read_text()) if result_file.is_file() else {}
    manifest_file = run_dir / "manifest.json"
    manifest = json.loads(manifest_file.read_text()) if manifest_file.is_file() else {}
    rc_file = run_dir / "rc"
    rc = rc_file.read_text().strip() if rc_file.is_file() else "none"
    problems = []
    if rc != "0":
        problems.append(f"the run ended with rc {rc} ({run_dir}/launcher.log)")
    if len(result.get("distinct_hosts", [])) != len(MACHINES):
        problems.append(f"{result_file} does not name {len(MACHINES)} hosts: {result}")
    ranks = sorted(p.name for p in run_dir.glob("rank.*") if (p / "stdout").is_file())
    if ranks != [f"rank.{n}" for n in range(len(MACHINES))]:
        problems.append(f"rank logs {ranks} in {run_dir}")
    nodes = sorted(p.name for p in run_dir.glob("node.*.log"))
    if len(nodes) != len(MACHINES):
        problems.append(f"node logs {nodes} in {run_dir}")
    if manifest.get("launcher") != "torchrun" or not str((manifest.get("torch") or {}).get("version", "")).startswith(
        torch_prefix
    ):
        problems.append(f"the manifest says {manifest.get('launcher')} with torch {manifest.get('torch')}")
    if "torchrun (torch " + torch_prefix not in out:
        problems.append(f"the preflight did not report torchrun with torch {torch_prefix}")
    if not problems:
        log(f"torchrun, torch {manifest['torch']['version']}: rc 0 on {', '.join(result['distinct_hosts'])}")
    return problems


def torchrun_bench_problems(report: Mapping[str, object], steps: Sequence[str], torch_prefix: str) -> list[str]:
    """What is wrong with a benchmark report of torchrun runs (empty: nothing): torch.distributed's bus
    bandwidth over the lab's machines, graded, and the synthetic step's scaling when it ran."""
    problems = [f"report: {p}" for p in module_utils("horovod_bench").sanity(report)]
    allreduce = report.get("allreduce") or {}
    if report.get("launcher") != "torchrun":
        problems.append(f"the report's launcher is {report.get('launcher')!r}")
    if not str((report.get("versions") or {}).get("torch", "")).startswith(torch_prefix):
        problems.append(f"the report's torch is {(report.get('versions') or {}).get('torch')!r}")
    if allreduce.get("np") != len(MACHINES) or not allreduce.get("best_busbw_Bps"):
        problems.append(f"no bus bandwidth over {len(MACHINES)} processes: {allreduce!r}")
    if report.get("backend") != "gloo":
        problems.append(f"the allreduce went through {report.get('backend')!r}, not gloo")
    if (report.get("grade") or {}).get("verdict") not in ("good", "below"):
        problems.append(f"no grade: {report.get('grade')!r}")
    if "synthetic" in steps and not (report.get("synthetic") or {}).get("scaling_efficiency"):
        problems.append(f"no scaling efficiency: {report.get('synthetic')!r}")
    return problems


def torchrun() -> None:
    """The bundled DDP example under torchrun on the three machines, then the benchmark under torchrun:
    on the lab's image, then on the torch-cpu image (loaded from its archive on every machine; it has no
    torchvision, so no synthetic step), then the lab's image again."""
    artifacts = lab_dir() / "artifacts"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    problems = []
    torchrun_setting = {"horovod_launcher": "torchrun"}
    with Timer("torchrun on the lab's image (torch 1.13)"):
        problems += torchrun_run(f"torchrun-{stamp}", {}, "1.13")
    with Timer("the benchmark under torchrun on the lab's image (torch 1.13)"):
        steps = ["link", "allreduce", "synthetic"]
        report = bench_report(f"lab-torchrun-{stamp}", steps, torchrun_setting)
        problems += [f"benchmark, torch 1.13: {p}" for p in torchrun_bench_problems(report, steps, "1.13")]
    with Timer(f"build or reuse the {TORCH_IMAGE} image (cached by recipe hash)"):
        archive = image_archive(TORCH_IMAGE)
    place_archive(archive, artifacts, f"{TORCH_IMAGE}.tar")
    extra = {
        "horovod_image": f"multinode-horovod/{TORCH_IMAGE}:local",
        "horovod_image_archive": f"{ARTIFACT_DIR}/images/{TORCH_IMAGE}.tar",
    }
    try:
        with Timer(f"torchrun on the {TORCH_IMAGE} image (torch 2.5.1; containers recreated from it)"):
            problems += torchrun_run(f"torchrun-2-{stamp}", extra, "2.5.1")
        with Timer(f"the benchmark under torchrun on the {TORCH_IMAGE} image (torch 2.5.1)"):
            steps = ["link", "allreduce"]
            report = bench_report(f"lab-torchrun-2-{stamp}", steps, {**torchrun_setting, **extra})
            problems += [f"benchmark, torch 2.5.1: {p}" for p in torchrun_bench_problems(report, steps, "2.5.1")]
    finally:
        with Timer("the site with the lab's image again"):
            playbook()
    if problems:
        raise SystemExit("lab: torchrun: " + "; ".join(problems))
    log("torchrun: passed")


# TensorBoard on the share (``tensorboard``). Not TensorBoard's default port, so the setting is proven.
TB_PORT = 16006
TB_TAG = "train/loss"
TB_STEPS = 20
# A run of the three machines: a linear model trained with Horovod's DistributedOptimizer, each step's
# loss averaged over the ranks (allreduce); rank 0 writes it with torch.utils.tensorboard into the run's
# output directory, and the same values into loss.json to compare with what TensorBoard serves.
TB_CODE = (
    "import json, os, torch, horovod.torch as hvd\n"
    "from torch.utils.tensorboard import SummaryWriter\n"
    "hvd.init(); torch.manual_seed(0)\n"
    "x, y = torch.eye(4), torch.arange(1.0, 5.0).unsqueeze(1)\n"
    "model = torch.nn.Linear(4, 1)\n"
    "hvd.broadcast_parameters(model.state_dict(), root_rank=0)\n"
    "opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.2), "
    "named_parameters=model.named_parameters())\n"
    "out = os.environ['HOROVOD_LAUNCH_OUTPUT_DIR']\n"
    "writer = SummaryWriter(out) if hvd.rank() == 0 else None\n"
    "losses = []\n"
    f"for step in range({TB_STEPS}):\n"
    "    opt.zero_grad(); loss = torch.nn.functional.mse_loss(model(x), y); loss.backward(); opt.step()\n"
    "    losses.append(hvd.allreduce(loss.detach(), name='loss').item())\n"
    f"    if writer: writer.add_scalar({TB_TAG!r}, losses[-1], step)\n"
    "if writer:\n"
    "    writer.close()\n"
    "    with open(os.path.join(out, 'loss.json'), 'w') as f: json.dump(losses, f)\n"
    "print('tensorboard-lab rank', hvd.rank(), 'final loss', losses[-1], flush=True)\n"
)
# The run's colour in TensorBoard's scalars dashboard (the first of its palette, #ff7043; the log
# directory holds one run): the screenshot must show a curve of it right of the run list, below the bar.
TB_CURVE_RGB = (255, 112, 67)
TB_CURVE_PIXELS = 150
# No proxy between this machine and the tunnel's end on its own loopback.
LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def tb_processes(pattern: str) -> list[tuple[str, str]]:
    """(pid, args) of the processes in the master's container whose command line `pattern` matches."""
    lines = in_container(MACHINES[0], "ps", "-eo", "pid=,args=").stdout.splitlines()
    found = [line.strip().split(None, 1) for line in lines]
    return [(words[0], words[1]) for words in found if len(words) == 2 and re.search(pattern, words[1])]


def get(url: str, timeout: float = 10) -> bytes:
    with LOCAL.open(url, timeout=timeout) as answer:
        return answer.read()


def get_json_until(url: str, ready: object, what: str, wait: float = 90) -> object:
    """The JSON at `url` once `ready(value)` holds (TensorBoard loads the event files in the background)."""
    deadline, value = time.monotonic() + wait, None
    while time.monotonic() < deadline:
        try:
            value = json.loads(get(url))
            if ready(value):  # type: ignore[operator]
                return value
        except OSError:
            pass
        time.sleep(2)
    raise SystemExit(f"lab: tensorboard: {what} not seen at {url} within {wait:.0f}s; last answer: {value}")


def open_tunnel(command: str, url: str) -> subprocess.Popen[str]:
    """The playbook's ``ssh -N -L`` command with the lab's key and pinned host keys (a user's own ssh
    configuration would give them), running until it is terminated; returned once `url` answers."""
    words = shlex.split(command)
    ssh_dir = lab_dir() / "ssh"
    options = ["-i", str(ssh_dir / "id_ed25519"), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
               "-o", f"UserKnownHostsFile={ssh_dir / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
               "-o", "ExitOnForwardFailure=yes"]  # fmt: skip
    log(f"the tunnel: {command} (with the lab's key)")
    tunnel = subprocess.Popen([words[0], *options, *words[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if tunnel.poll() is not None:
            _, why = tunnel.communicate()
            raise SystemExit(f"lab: tensorboard: the tunnel ended (rc {tunnel.returncode}): {why.strip()}")
        try:
            get(url, timeout=5)
            return tunnel
        except OSError:
            time.sleep(1)
    tunnel.terminate()
    raise SystemExit(f"lab: tensorboard: {url} did not answer through the tunnel within 30s")


def curve_pixels(png: Path) -> int:
    """How many pixels of the screenshot `png` have the run's colour, right of the run list and below the bar."""
    import matplotlib.image  # noqa: PLC0415 - the controller's toolchain has it (requirements.txt)

    pixels = (matplotlib.image.imread(str(png))[80:, 360:, :3] * 255).round()
    return int((abs(pixels - TB_CURVE_RGB) <= 12).all(axis=-1).sum())


def screenshot(url: str, png: Path) -> None:
    """A headless Chromium's screenshot of `url` (Debian's, installed when missing)."""
    prepare_host.install_missing({"chromium": "chromium"})
    profile = png.parent / "chromium-profile"
    shutil.rmtree(profile, ignore_errors=True)
    png.unlink(missing_ok=True)
    # As root Chromium needs --no-sandbox; the page is drawn by JavaScript, so it gets 15 s of virtual time.
    run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-proxy-server",
         f"--user-data-dir={profile}", "--window-size=1400,900", "--virtual-time-budget=15000",
         f"--screenshot={png}", url])  # fmt: skip
    shutil.rmtree(profile, ignore_errors=True)
    if not png.is_file():
        raise SystemExit(f"lab: tensorboard: chromium wrote no screenshot {png}")


def tb_idle_pattern() -> str:
    """How a process of the playbook's TensorBoard looks (the collection's own definition)."""
    return module_utils("horovod_tensorboard").IDLE_PATTERN


def tb_train(name: str, run_dir: str) -> list[float]:
    """The run that writes the event files; the losses rank 0 wrote."""
    on_host = lab_dir() / "artifacts" / "runs" / name
    with Timer("a run on the three machines that writes TensorBoard scalars"):
        playbook("--tags", "launch", "-e", json.dumps({"horovod_run_name": name, "horovod_launch_output_dir":
                 f"{run_dir}/output", "horovod_train_command": ["python3", "-c", TB_CODE]}))  # fmt: skip
    rc = (on_host / "rc").read_text().strip() if (on_host / "rc").is_file() else "none"
    events = sorted((on_host / "output").glob("events.out.tfevents.*"))
    written = json.loads((on_host / "output" / "loss.json").read_text()) if rc == "0" else []
    if rc != "0" or not events or len(written) != TB_STEPS:
        raise SystemExit(f"lab: tensorboard: run {name} ended rc {rc} with event files {events} ({on_host})")
    log(f"run {name}: {len(events)} event file(s), loss {written[0]:.4f} -> {written[-1]:.4f}")
    return [float(value) for value in written]


def printed_tunnel(out: str) -> str | None:
    """The ssh tunnel command in the playbook's output (a line of its last message), None without one."""
    found = re.search(r"From the controller: (ssh -N -L [^'\"\n]+)", out)
    return found.group(1).strip() if found else None


def tb_start(given: list[str], run_dir: str, mine: str) -> str:
    """Check mode, the start, the same again, the preflight beside it, its loopback; the tunnel command."""
    book, master = "playbooks/tensorboard.yml", MACHINES[0]
    if tb_processes(mine):  # left by an earlier test that stopped half-way
        playbook("-e", "horovod_tensorboard_state=stopped", book=book)
    _, _, out = playbook(*given, "--check", book=book)
    if "Check mode: TensorBoard would be started" not in out or tb_processes(mine):
        raise SystemExit("lab: tensorboard: check mode did not only say what it would start")
    with Timer("the playbook starts TensorBoard"):
        _, changed, out = playbook(*given, book=book)
    started = tb_processes(mine)
    wanted = f"--logdir {run_dir} --host 127.0.0.1 --port {TB_PORT}"
    if not changed or len(started) != 1 or wanted not in started[0][1]:
        raise SystemExit(f"lab: tensorboard: started ({changed} changed), but its processes are {started}")
    expected = f"ssh -N -L {TB_PORT}:127.0.0.1:{TB_PORT} root@{master.address}"
    if printed_tunnel(out) != expected:
        raise SystemExit(f"lab: tensorboard: the playbook printed no tunnel {expected!r}")
    _, changed, _ = playbook(*given, book=book)
    if changed or tb_processes(mine) != started:
        raise SystemExit(f"lab: tensorboard: the same settings again changed {changed} or its process")
    _, _, out = playbook(book="playbooks/preflight.yml")
    if "running jobs: none" not in out:
        raise SystemExit("lab: tensorboard: the launch preflight counts the playbook's TensorBoard as a job")
    try:
        socket.create_connection((master.address, TB_PORT), timeout=5).close()
    except OSError:
        log(f"{master.address}:{TB_PORT} refuses: TensorBoard listens on the master's loopback only")
    else:
        raise SystemExit(f"lab: tensorboard: it answers on {master.address}:{TB_PORT}, not on loopback only")
    return expected


def tb_through_tunnel(url: str, run_dir: str, written: list[float], out_dir: Path) -> None:
    """The page, the log directory and the scalars through the tunnel, and the screenshot's curve."""
    page = get(url).decode(errors="replace")
    environment = json.loads(get(f"{url}data/environment"))
    if "<title>TensorBoard</title>" not in page or environment.get("data_location") != run_dir:
        raise SystemExit(f"lab: tensorboard: the page or its log directory is wrong: {environment}")
    get_json_until(f"{url}data/plugin/scalars/tags", lambda tags: TB_TAG in tags.get("output", {}), TB_TAG)
    query = urllib.parse.urlencode({"run": "output", "tag": TB_TAG})
    scalars = json.loads(get(f"{url}data/plugin/scalars/scalars?{query}"))
    (out_dir / "scalars.json").write_text(json.dumps(scalars) + "\n")
    steps, values = [int(s[1]) for s in scalars], [float(s[2]) for s in scalars]
    # TensorBoard keeps float32: equal to what rank 0 wrote up to that rounding.
    close = len(values) == len(written) and all(
        abs(v - w) <= 1e-5 * max(1.0, abs(w)) for v, w in zip(values, written, strict=True)
    )
    if steps != list(range(TB_STEPS)) or not close:
        raise SystemExit(f"lab: tensorboard: the scalars served {scalars} are not those rank 0 wrote {written}")
    log(f"through the tunnel: the page, --logdir {run_dir}, {TB_TAG} at steps 0-{TB_STEPS - 1} as written")
    png = out_dir / "tensorboard.png"
    with Timer("a screenshot of the scalars dashboard in headless Chromium"):
        screenshot(f"{url}#scalars", png)
    curve = curve_pixels(png)
    if curve < TB_CURVE_PIXELS:
        raise SystemExit(f"lab: tensorboard: {png} shows {curve} pixels of the run's curve, not {TB_CURVE_PIXELS}")
    log(f"{png}: {curve} pixels of the run's curve")


def tb_replace_and_stop(name: str, run_dir: str, mine: str) -> list[tuple[str, str]]:
    """Another port replaces it; stopped (check mode first) it is gone and another TensorBoard is not. The
    other TensorBoard's (pid, args), for the caller to end."""
    book, master = "playbooks/tensorboard.yml", MACHINES[0]
    before = tb_processes(mine)
    _, changed, _ = playbook("-e", f"horovod_run_name={name}", "-e", f"horovod_tensorboard_port={TB_PORT + 1}",
                             book=book)  # fmt: skip
    moved = tb_processes(mine)
    if not changed or len(moved) != 1 or moved == before or f"--port {TB_PORT + 1}" not in moved[0][1]:
        raise SystemExit(f"lab: tensorboard: another port did not replace it: {before} -> {moved}")
    other = rf"^python3 -m tensorboard\.main .*--port {TB_PORT + 2}"
    run(["docker", "exec", master.container, "docker", "exec", "-d", CONTAINER, "python3", "-m", "tensorboard.main",
         "--logdir", run_dir, "--host", "127.0.0.1", "--port", str(TB_PORT + 2), "--load_fast=false"])  # fmt: skip
    time.sleep(2)
    bystander = tb_processes(other)
    stop = ["-e", "horovod_tensorboard_state=stopped"]
    playbook(*stop, "--check", book=book)
    if tb_processes(mine) != moved:
        raise SystemExit("lab: tensorboard: check mode stopped it")
    _, changed, _ = playbook(*stop, book=book)
    left, others = tb_processes(mine), tb_processes(other)
    if not changed or left or not bystander or others != bystander:
        raise SystemExit(f"lab: tensorboard: stopped ({changed} changed): left {left}; other {bystander} -> {others}")
    _, changed, _ = playbook(*stop, book=book)
    if changed:
        raise SystemExit(f"lab: tensorboard: stopping it again changed {changed}")
    return bystander


def tensorboard() -> None:
    """playbooks/tensorboard.yml on the event files of a run of the three machines (the module docstring)."""
    mine = tb_idle_pattern()
    out_dir = lab_dir() / "tensorboard"
    out_dir.mkdir(parents=True, exist_ok=True)
    name = time.strftime("tensorboard-%Y%m%d-%H%M%S")
    run_dir = f"{ARTIFACT_DIR}/runs/{name}"
    written = tb_train(name, run_dir)
    given = ["-e", f"horovod_run_name={name}", "-e", f"horovod_tensorboard_port={TB_PORT}"]
    url = f"http://127.0.0.1:{TB_PORT}/"
    command = tb_start(given, run_dir, mine)
    tunnel = open_tunnel(command, url)
    bystander: list[tuple[str, str]] = []
    try:
        tb_through_tunnel(url, run_dir, written, out_dir)
        bystander = tb_replace_and_stop(name, run_dir, mine)
    finally:
        tunnel.terminate()
        tunnel.wait()
        for pid, _ in bystander or tb_processes(rf"^python3 -m tensorboard\.main .*--port {TB_PORT + 2}"):
            in_container(MACHINES[0], "kill", pid, check=False)
    log(f"tensorboard: passed (screenshot {out_dir / 'tensorboard.png'})")


# The lab's benchmark: small enough for three machines that share this host's cores (the defaults,
# 1 KiB to 256 MiB and ResNet-50 at 224 px, are for real clusters).
BENCH_SETTINGS = {
    "horovod_bench_allreduce_max_bytes": "16M",
    "horovod_bench_allreduce_seconds": 1,
    "horovod_bench_link_seconds": 3,
    "horovod_bench_synthetic_model": "resnet18",
    "horovod_bench_synthetic_batch_size": 8,
    "horovod_bench_synthetic_image_size": 64,
    "horovod_bench_synthetic_warmup_batches": 2,
    "horovod_bench_synthetic_batches": 10,
}


def bench() -> None:
    """The benchmark playbook on the lab as it is; print the report's table."""
    name = time.strftime("lab-bench-%Y%m%d-%H%M%S", time.gmtime())
    fetch = lab_dir() / "benchmarks"
    extra = {**BENCH_SETTINGS, "horovod_bench_name": name, "horovod_bench_fetch_dir": str(fetch)}
    wall, _, _ = playbook("-e", json.dumps(extra), book="playbooks/benchmark.yml")
    report = fetch / name / "report.md"
    if not report.is_file():
        raise SystemExit(f"lab: the benchmark left no {report}")
    print(report.read_text(), flush=True)
    print(f"lab benchmark {name} in {wall:.0f}s on this machine ({machine_summary()}): {report.parent}", flush=True)


# The slow node (docs/benchmark.md, "The slow node"; make lab-bench-slow-node, in make test-all): one lab
# machine's link shaped to a tenth of the rate its neighbours reach, then one machine's Horovod container held
# to a fifth of a CPU; each time the benchmark's report must name that machine.
SLOW_LINK = MACHINES[2]
SLOW_COMPUTE = MACHINES[1]
SLOW_LINK_SHARE = 0.1
# A fifth of a CPU: the other two containers share this host's cores (about one each on 2 cores), so the
# limited one is well under half of theirs, the judgement's threshold (COMPUTE_SLOW).
SLOW_CPU_PERIOD = 100_000
SLOW_CPU_QUOTA = 20_000
SLOW_BASELINE_PORT = 5202


def lab_interface(machine: Machine) -> str:
    """The interface that holds a lab machine's address, in the machine (its containers have its network)."""
    res = run(["docker", "exec", machine.container, "ip", "-o", "-4", "addr", "show", "to", machine.address])
    fields = res.stdout.split()
    if len(fields) < 2:
        raise SystemExit(f"lab: no interface of {machine.name} holds {machine.address}: {res.stdout!r}")
    return fields[1].split("@")[0]


def host_peer(machine: Machine, interface: str, net: Path = Path("/sys/class/net")) -> str:
    """The host's end of the veth pair whose other end is `interface` in the machine (the lab bridge's port)."""
    iflink = run(["docker", "exec", machine.container, "cat", f"/sys/class/net/{interface}/iflink"]).stdout.strip()
    for entry in sorted(net.iterdir()):
        try:
            if (entry / "ifindex").read_text().strip() == iflink:
                return entry.name
        except OSError:
            continue
    raise SystemExit(f"lab: no interface of this host has the index {iflink!r} of {machine.name}'s {interface} peer")


def throttle_argvs(machine: Machine, interface: str, peer: str, bits_per_second: float) -> list[list[str]]:
    """The tc commands that shape both directions of the machine's link to the lab bridge, each with a token
    bucket on what leaves an end of its veth pair: in the machine (it has NET_ADMIN) what it sends, on this
    host (the pair's other end, `peer`) what it receives. Not a policer on the machine's ingress: the
    kernels of these hosts have no police action (tc: "Failed to load TC action module"). iperf3 measures
    each pair one way, so a node's links to it and from it both slow down."""
    kbit = max(1, int(bits_per_second / 1000))
    # The bucket holds a few milliseconds at the rate (and a full-size frame at least), as tc-tbf(8) advises.
    burst = max(16 * 1024, int(bits_per_second / 8 * 0.004))
    bucket = ["root", "tbf", "rate", f"{kbit}kbit", "burst", str(burst), "latency", "50ms"]
    return [
        ["docker", "exec", machine.container, "tc", "qdisc", "replace", "dev", interface, *bucket],
        ["tc", "qdisc", "replace", "dev", peer, *bucket],
    ]


def unthrottle_argvs(machine: Machine, interface: str, peer: str) -> list[list[str]]:
    """What removes both buckets (each may be gone already: run unchecked)."""
    return [
        ["docker", "exec", machine.container, "tc", "qdisc", "del", "dev", interface, "root"],
        ["tc", "qdisc", "del", "dev", peer, "root"],
    ]


def baseline_bits(server: Machine, client: Machine, seconds: int = 3) -> float:
    """What iperf3 reaches between two unthrottled lab machines' containers, in bits per second."""
    argv = ["docker", "exec", server.container, "docker", "exec", CONTAINER, "timeout", str(seconds + 30),
            "iperf3", "-s", "-1", "-B", server.address, "-p", str(SLOW_BASELINE_PORT)]  # fmt: skip
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as listening:
        time.sleep(2)
        res = in_container(client, "iperf3", "-J", "-c", server.address, "-B", client.address, "-p",
                           str(SLOW_BASELINE_PORT), "-t", str(seconds), check=False)  # fmt: skip
        listening.wait(timeout=seconds + 40)
    return iperf3_bits(res.stdout)


def iperf3_bits(text: str) -> float:
    """The received rate of an iperf3 -J client's output; SystemExit with its error when there is none."""
    try:
        out = json.loads(text or "{}")
        bits = float(out["end"]["sum_received"]["bits_per_second"])
    except (ValueError, KeyError, TypeError):
        raise SystemExit(f"lab: iperf3 between the lab machines gave no rate: {text[-400:]!r}") from None
    if bits <= 0:
        raise SystemExit(f"lab: iperf3 between the lab machines measured {bits} bit/s")
    return bits


def slow_node_problems(report: dict[str, object], kind: str, machine: str) -> list[str]:
    """Why a report does not name `machine` as the slow node of `kind` (link, compute), the grade its cause
    with what to check: [] when it does."""
    slow = report.get("slow")
    if not isinstance(slow, dict):
        return ["the report has no slow-node judgement (slow)"]
    judged = slow.get(kind) or {}
    problems = []
    if judged.get("verdict") != "node" or judged.get("nodes") != [machine]:
        problems.append(
            f"slow.{kind} names {judged.get('nodes')!r} (verdict {judged.get('verdict')!r}), not [{machine!r}]: "
            f"{judged.get('line')}"
        )
    if machine not in judged.get("rates", {}):
        problems.append(f"slow.{kind}.rates has no rate of {machine} beside the others'")
    grade = report.get("grade") or {}
    if not any(machine in cause for cause in grade.get("cause") or []) or machine not in grade.get("line", ""):
        problems.append(f"the grade does not name {machine} as the cause: {grade.get('line')!r}")
    wanted = "ethtool" if kind == "link" else "nvidia-smi -q -d CLOCK,PERFORMANCE"
    if not any(wanted in item for item in grade.get("check") or []):
        problems.append(f"the grade's check does not say {wanted}: {grade.get('check')!r}")
    return problems


def bench_report(name: str, steps: Sequence[str], more: Mapping[str, object] | None = None) -> dict[str, object]:
    """Run the benchmark on the lab (its steps only, the lab's small settings, ``more`` besides); its report.json."""
    fetch = lab_dir() / "benchmarks"
    extra = {**BENCH_SETTINGS, "horovod_bench_name": name, "horovod_bench_fetch_dir": str(fetch),
             "horovod_bench_steps": list(steps), **(more or {})}  # fmt: skip
    playbook("-e", json.dumps(extra), book="playbooks/benchmark.yml")
    path = fetch / name / "report.json"
    if not path.is_file():
        raise SystemExit(f"lab: the benchmark left no {path}")
    print((fetch / name / "report.md").read_text(), flush=True)
    return json.loads(path.read_text())


def cpu_limit_argv(machine: Machine, quota: int) -> list[str]:
    """docker update of a lab machine's Horovod container's CPU quota (-1: none), run by its own dockerd."""
    return ["docker", "exec", machine.container, "docker", "update", "--cpu-period", str(SLOW_CPU_PERIOD),
            "--cpu-quota", str(quota), CONTAINER]  # fmt: skip


def bench_slow_node() -> None:
    """The benchmark names a lab machine whose link is shaped to a tenth, then one held to a fifth of a CPU."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    problems: list[str] = []
    base = baseline_bits(MACHINES[0], MACHINES[1])
    interface = lab_interface(SLOW_LINK)
    peer = host_peer(SLOW_LINK, interface)
    log(f"slow node: lab-worker1 -> lab-master {base / 1e9:.2f} Gbit/s; shaping {SLOW_LINK.name}'s {interface} "
        f"and its host end {peer} to {SLOW_LINK_SHARE:g} of it, both ways")  # fmt: skip
    try:
        for argv in throttle_argvs(SLOW_LINK, interface, peer, base * SLOW_LINK_SHARE):
            run(argv)
        report = bench_report(f"lab-slow-link-{stamp}", ["link"])
        problems += [f"link: {p}" for p in slow_node_problems(report, "link", SLOW_LINK.name)]
    finally:
        for argv in unthrottle_argvs(SLOW_LINK, interface, peer):
            run(argv, check=False)
        log(f"slow node: the shaper on {SLOW_LINK.name}'s {interface} removed")
    held = run(["docker", "exec", SLOW_COMPUTE.container, "docker", "inspect", "-f",
                "{{.HostConfig.CpuQuota}} {{.HostConfig.NanoCpus}}", CONTAINER]).stdout.split()  # fmt: skip
    if held != ["0", "0"]:
        raise SystemExit(f"lab: {SLOW_COMPUTE.name}'s {CONTAINER} container already has a CPU limit ({held})")
    log(f"slow node: {SLOW_COMPUTE.name}'s {CONTAINER} container held to {SLOW_CPU_QUOTA / SLOW_CPU_PERIOD:g} CPU")
    try:
        run(cpu_limit_argv(SLOW_COMPUTE, SLOW_CPU_QUOTA))
        report = bench_report(f"lab-slow-compute-{stamp}", ["synthetic"])
        problems += [f"compute: {p}" for p in slow_node_problems(report, "compute", SLOW_COMPUTE.name)]
    finally:
        run(cpu_limit_argv(SLOW_COMPUTE, -1), check=False)
        log(f"slow node: the CPU limit of {SLOW_COMPUTE.name}'s {CONTAINER} container removed")
    if problems:
        raise SystemExit("lab: bench-slow-node failed:\n" + "\n".join(problems))
    log(f"bench-slow-node: passed ({SLOW_LINK.name} named for its link, {SLOW_COMPUTE.name} for its compute)")


def machine_summary() -> str:
    cpus = os.cpu_count() or 0
    mem = 0
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // (1024 * 1024)
    return f"{cpus} cores, {mem} GiB"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "action",
        choices=("up", "site", "bench", "bench-slow-node", "scale-out", "old-runner", "tensorboard", "guide-imagenet",
                 "torchrun", "down"),
    )  # fmt: skip
    parser.add_argument("--example", choices=("", "horovod"), default="", help="site: then run the guide's example")
    parser.add_argument("--examples", type=Path, help="a clone of Horovod's repository (default: the stand-in)")
    args = parser.parse_args(argv)
    actions = {"up": up, "site": site, "bench": bench, "bench-slow-node": bench_slow_node, "scale-out": scale_out,
               "old-runner": old_runner, "tensorboard": tensorboard, "torchrun": torchrun, "down": down,
               "guide-imagenet": lambda: guide_imagenet(args.examples)}  # fmt: skip
    actions[args.action]()
    if args.action == "site" and args.example == "horovod":
        guide_example(args.examples)
    return 0


if __name__ == "__main__":
    sys.exit(main())

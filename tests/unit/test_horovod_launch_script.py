# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run's launch script (roles/horovod_launch/templates/horovod-launch.sh.j2), rendered by Ansible and
run here with stand-ins for ssh and horovodrun: the run's environment never reaches horovodrun (which puts
its own environment on every rank's command line), goes to the other nodes on ssh's standard input, and
is removed from every node when the run ends; the ssh wrapper comes first on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from checkout import COLLECTIONS, REPO

TEMPLATES = REPO / "roles/horovod_launch/templates"
SECRET = "s3cret-value-not-to-be-seen"

pytestmark = pytest.mark.skipif(not shutil.which("ansible-playbook"), reason="ansible-playbook is not on PATH")


def render(tmp_path: Path, *, env: dict[str, str], elastic: bool = False) -> Path:
    """The launch script and rank-env.sh of a run on three hosts, rendered into tmp_path/run."""
    run = tmp_path / "run"
    run.mkdir()
    rank_env = str(run / "rank-env.sh")
    variables = {
        "__horovod_launch_run": {
            "name": "run-test",
            "dir": str(run),
            "np": 3,
            "workdir": str(tmp_path),
            "output_dir": str(tmp_path / "out dir"),
            "env_file": str(tmp_path / "root" / ".horovod-launch-run-test.env"),
            "argv": ["horovodrun", "-np", "3", "sh", rank_env, "train", "--epochs", "1"],
        },
        "horovod_launch_hosts": [
            {"name": "localhost", "address": "10.0.0.1", "slots": 1},
            {"name": "node-b", "address": "10.0.0.2", "slots": 1},
            {"name": "node-c", "address": "10.0.0.3", "slots": 1},
        ],
        "horovod_launch_container": "horovod",
        "horovod_launch_timeout": 0,
        "horovod_launch_env": env,
        "horovod_launch_elastic": elastic,
        "__horovod_launch_ssh_wrapper": str(tmp_path / "wrapper" / "ssh"),
        "__horovod_launch_ssh_argv": ["ssh", "-p", "12345", "-o", "BatchMode=yes"],
        "__horovod_launch_env_hosts": ["10.0.0.2", "10.0.0.3"],
    }
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "vars": variables,
            "tasks": [
                {"ansible.builtin.template": {"src": str(TEMPLATES / name), "dest": str(run / dest), "mode": "0755"}}
                for name, dest in (("horovod-launch.sh.j2", "horovod-launch.sh"), ("rank-env.sh.j2", "rank-env.sh"))
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    env_vars = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1")
    done = subprocess.run(
        [
            *("ansible-playbook", "-i", "localhost,", "-c", "local"),
            *("-e", f"ansible_python_interpreter={sys.executable}", str(tmp_path / "play.yml")),
        ],
        env=env_vars,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return run


def stand_ins(tmp_path: Path, *, ssh_fails_for: str = "") -> Path:
    """A PATH with an ssh that records its argv and stdin per call, and a horovodrun that records its
    environment and runs the rank command once here (as a rank would on the master)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    log.mkdir()
    (bin_dir / "ssh").write_text(
        "#!/bin/sh\n"
        f'n=$$; printf "%s\\n" "$@" > {log}/ssh.$n.argv; cat > {log}/ssh.$n.stdin\n'
        f'case "$*" in *"{ssh_fails_for or "no-such-host"}"*) exit 255;; esac\n'
    )
    (bin_dir / "horovodrun").write_text(
        "#!/bin/sh\n"
        f"env > {log}/horovodrun.env; printf '%s\\n' \"$@\" > {log}/horovodrun.argv\n"
        'while [ "$1" != sh ]; do shift; done\n'
        f'"$@" > {log}/rank.out 2>&1\n'
    )
    (bin_dir / "train").write_text(
        "#!/bin/sh\n"
        f'echo "MNH_SECRET=$MNH_SECRET PATH=$PATH" > {log}/train.env\n'
        f'echo "$HOROVOD_LAUNCH_OUTPUT_DIR" > {log}/train.output_dir\n'
    )
    for name in ("ssh", "horovodrun", "train"):
        (bin_dir / name).chmod(0o755)
    return bin_dir


def launch(run: Path, bin_dir: Path, env_file: Path | None) -> subprocess.CompletedProcess[str]:
    if env_file is not None:
        env_file.parent.mkdir(exist_ok=True)
        env_file.write_text(f"MNH_SECRET={SECRET}\n")
        env_file.chmod(0o600)
    path = f"{bin_dir}:/usr/bin:/bin"
    return subprocess.run(
        ["sh", str(run / "horovod-launch.sh")], env={"PATH": path}, capture_output=True, text=True, check=False
    )


def test_the_environment_reaches_the_ranks_but_never_horovodrun(tmp_path: Path) -> None:
    run = render(tmp_path, env={"MNH_SECRET": SECRET})
    bin_dir = stand_ins(tmp_path)
    env_file = tmp_path / "root" / ".horovod-launch-run-test.env"
    done = launch(run, bin_dir, env_file)
    log = tmp_path / "log"
    assert done.returncode == 0 and (run / "rc").read_text() == "0\n", (run / "launcher.log").read_text()
    # horovodrun's environment (which it puts on every rank's command line) lacks the value...
    assert SECRET not in (log / "horovodrun.env").read_text()
    assert SECRET not in (log / "horovodrun.argv").read_text()
    # ...the rank has it, loaded from the root-only file, and the wrapper's directory is first on PATH.
    assert (log / "train.env").read_text().startswith(f"MNH_SECRET={SECRET} PATH={tmp_path}/wrapper:")
    # Every rank is told where to write, a path with a space kept whole.
    assert (log / "train.output_dir").read_text() == f"{tmp_path}/out dir\n"
    # Each other node got the file on ssh's standard input (never on its command line), then its removal.
    copies = sorted(log.glob("ssh.*.argv"))
    argvs = [p.read_text() for p in copies]
    assert all(SECRET not in argv for argv in argvs)
    copied = [p for p in copies if "cat >" in p.read_text()]
    assert [p.read_text().splitlines()[-2] for p in copied] == ["10.0.0.2", "10.0.0.3"]
    assert all(Path(str(p).replace(".argv", ".stdin")).read_text() == f"MNH_SECRET={SECRET}\n" for p in copied)
    removed = [a for a in argvs if "rm -f" in a]
    assert sorted(a.splitlines()[-2] for a in removed) == ["10.0.0.2", "10.0.0.3"]
    # The master's copy is gone too, and nothing in the run's directory holds the value.
    assert not env_file.exists()
    assert not [p for p in run.rglob("*") if p.is_file() and SECRET in p.read_text()]


def test_a_node_the_environment_cannot_reach_stops_the_run_before_horovodrun(tmp_path: Path) -> None:
    run = render(tmp_path, env={"MNH_SECRET": SECRET})
    bin_dir = stand_ins(tmp_path, ssh_fails_for="10.0.0.3")
    env_file = tmp_path / "root" / ".horovod-launch-run-test.env"
    done = launch(run, bin_dir, env_file)
    assert done.returncode == 2 and (run / "rc").read_text() == "2\n"
    assert "cannot copy the run's environment to 10.0.0.3's container" in (run / "launcher.log").read_text()
    assert not (tmp_path / "log" / "horovodrun.env").exists()
    assert not env_file.exists()


def test_an_elastic_run_goes_on_without_a_node_it_cannot_reach(tmp_path: Path) -> None:
    run = render(tmp_path, env={"MNH_SECRET": SECRET}, elastic=True)
    bin_dir = stand_ins(tmp_path, ssh_fails_for="10.0.0.3")
    done = launch(run, bin_dir, tmp_path / "root" / ".horovod-launch-run-test.env")
    assert done.returncode == 0
    assert "could not be copied to 10.0.0.3's container" in (run / "launcher.log").read_text()


def test_a_missing_environment_file_stops_the_run(tmp_path: Path) -> None:
    run = render(tmp_path, env={"MNH_SECRET": SECRET})
    done = launch(run, stand_ins(tmp_path), None)
    assert done.returncode == 2
    assert "cannot read the run's environment" in (run / "launcher.log").read_text()


def test_a_rank_without_its_environment_file_fails_with_the_reason(tmp_path: Path) -> None:
    run = render(tmp_path, env={"MNH_SECRET": SECRET})
    done = subprocess.run(["sh", str(run / "rank-env.sh"), "true"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "cannot read the run's environment from" in done.stderr


def test_a_run_without_an_environment_copies_nothing(tmp_path: Path) -> None:
    run = render(tmp_path, env={})
    bin_dir = stand_ins(tmp_path)
    (bin_dir / "horovodrun").write_text(f"#!/bin/sh\nprintf '%s\\n' \"$PATH\" > {tmp_path}/log/path\n")
    done = launch(run, bin_dir, None)
    assert done.returncode == 0
    assert not list((tmp_path / "log").glob("ssh.*"))
    assert (tmp_path / "log" / "path").read_text().startswith(f"{tmp_path}/wrapper:")
    assert "env_file" not in (run / "horovod-launch.sh").read_text()
    assert json.dumps(SECRET) not in (run / "horovod-launch.sh").read_text()

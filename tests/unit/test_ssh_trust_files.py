# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""What ssh_trust runs inside the containers: files/ssh_link.py (the wrapper linked first on the PATH)
and files/ssh_matrix.py (one row of the ssh matrix), run as the role runs them (python3 -c CODE ARGS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from checkout import REPO

FILES = REPO / "roles" / "ssh_trust" / "files"


def run(name: str, *args: str, path: str) -> dict:
    argv = [sys.executable, "-c", (FILES / name).read_text(), *args]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, env=dict(os.environ, PATH=path))
    return json.loads(done.stdout)


def container(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """A container's tree: /usr/bin/ssh (the real one), /usr/local/bin (the link's place, first on PATH)."""
    real, local = tmp_path / "usr" / "bin", tmp_path / "usr" / "local" / "bin"
    real.mkdir(parents=True)
    (real / "ssh").write_text("#!/bin/sh\n")
    (real / "ssh").chmod(0o755)
    return real / "ssh", local / "ssh", tmp_path / "root" / ".ssh" / "bin" / "ssh", f"{local}:{real}"


def test_the_link_is_made_and_found_first(tmp_path):
    real, link, wrapper, path = container(tmp_path)
    args = (str(link), str(wrapper), str(real))
    assert run("ssh_link.py", "read", *args, path=path) == {
        "before": [f"no link at {link}", f"first {real}"],
        "after": [f"no link at {link}", f"first {real}"],
    }
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text("#!/bin/sh\n")
    wrapper.chmod(0o755)
    wanted = [f"link {wrapper}", f"first {link}"]
    assert run("ssh_link.py", "link", *args, path=path) == {
        "before": [f"no link at {link}", f"first {real}"],
        "after": wanted,
    }
    assert run("ssh_link.py", "link", *args, path=path) == {"before": wanted, "after": wanted}
    # The role's constants name the same pair (the wrapper written only later is found then).
    constants = yaml.safe_load((REPO / "roles/ssh_trust/vars/main.yml").read_text())
    assert constants["__ssh_trust_link_wanted"] == [
        "link {{ __ssh_trust_wrapper }}",
        "first {{ __ssh_trust_wrapper_link }}",
    ]
    assert constants["__ssh_trust_link_args"][0] == "{{ __ssh_trust_wrapper_link }}"


def test_a_link_elsewhere_is_replaced_and_a_file_never(tmp_path):
    real, link, wrapper, path = container(tmp_path)
    args = (str(link), str(wrapper), str(real))
    link.parent.mkdir(parents=True)
    link.symlink_to("/somewhere/else")
    assert run("ssh_link.py", "link", *args, path=path)["after"][0] == f"link {wrapper}"
    link.unlink()
    link.write_text("#!/bin/sh\n")
    found = run("ssh_link.py", "link", *args, path=path)
    assert found["after"][0] == f"a file that is not a link at {link}"
    assert link.read_text() == "#!/bin/sh\n"


def test_without_the_real_ssh_nothing_is_first(tmp_path):
    real, link, wrapper, path = container(tmp_path)
    real.unlink()
    assert run("ssh_link.py", "read", str(link), str(wrapper), str(real), path=path)["after"] == [
        f"no link at {link}",
        f"no {real}",
    ]


def test_the_matrix_logs_in_side_by_side_and_keeps_the_last_two_lines_of_an_error(tmp_path):
    """A fake ssh: node-a's login waits until node-c's has started (logins one after the other would never
    get there: node-a then times out and fails), node-b fails with a two-line error, node-d with none."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(
        "#!/bin/sh\n"
        'node=""; for a; do [ "$a" = true ] && break; node=$a; done\n'
        f'touch "{tmp_path}/started.$node"\n'
        'case "$node" in\n'
        f'  node-a) i=0; while [ ! -e "{tmp_path}/started.node-c" ]; do i=$((i + 1));'
        ' [ $i -gt 100 ] && { echo "timed out" >&2; exit 255; }; sleep 0.1; done; exit 0;;\n'
        '  node-b) printf "zero\\nfirst\\tline\\r\\nPermission denied (publickey).\\n" >&2; exit 255;;\n'
        "  node-d) exit 255;;\n"
        "  *) exit 0;;\n"
        "esac\n"
    )
    (bin_dir / "ssh").chmod(0o755)
    found = run("ssh_matrix.py", "5", "node-a", "node-b", "node-c", "node-d", path=f"{bin_dir}:{os.environ['PATH']}")
    assert found == {
        "node-a": "ok",
        "node-b": "first line  Permission denied (publickey).",
        "node-c": "ok",
        "node-d": "ssh failed",
    }
    assert list(found) == ["node-a", "node-b", "node-c", "node-d"]

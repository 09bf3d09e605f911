# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""listed_in_place (plugins/filter/listing.py): a write task is skipped only when the read shows the
file exactly as that task would leave it; every difference runs it."""

from __future__ import annotations

import base64
import grp
import os
import pwd
import subprocess

import pytest
import yaml
from checkout import REPO, load

f = load("plugins/filter/listing.py", "listing_filters")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


LISTING = "\n".join(
    [
        "## 700 root:root /etc/mnh/ssh",
        "## 644 root:root /etc/mnh/ssh/config",
        "@@ /etc/mnh/ssh/config",
        b64("Host a\n    Port 1\n"),
        "## 600 root:root /etc/mnh/ssh/empty",
        "@@ /etc/mnh/ssh/empty",
        "",
        "## 644 alice:root /etc/mnh/ssh/theirs",
        "@@ /etc/mnh/ssh/theirs",
        b64("x\n"),
    ]
)


def test_a_file_as_the_task_writes_it_is_in_place():
    assert f.listed_in_place(LISTING, "/etc/mnh/ssh/config", "0644", "Host a\n    Port 1\n")
    assert f.listed_in_place(LISTING, "/etc/mnh/ssh/empty", "0600", "")
    assert f.listed_in_place(LISTING, "/etc/mnh/ssh", "0700")


@pytest.mark.parametrize(
    ("path", "mode", "content"),
    [
        ("/etc/mnh/ssh/config", "0644", "Host a\n    Port 1"),  # the trailing newline differs
        ("/etc/mnh/ssh/config", "0644", "Host b\n    Port 1\n"),  # the text differs
        ("/etc/mnh/ssh/config", "0600", "Host a\n    Port 1\n"),  # the mode differs
        ("/etc/mnh/ssh/theirs", "0644", "x\n"),  # the owner differs
        ("/etc/mnh/ssh/missing", "0644", ""),  # not there
        ("/etc/mnh/ssh", "0755", None),  # a directory with another mode
        ("/etc/mnh/ssh/other", "0700", None),  # a directory that is not there
    ],
)
def test_every_difference_runs_the_write(path, mode, content):
    assert not f.listed_in_place(LISTING, path, mode, content)


def test_a_file_listed_without_its_text_is_not_in_place_when_text_is_wanted():
    assert not f.listed_in_place("## 644 root:root /a", "/a", "0644", "")
    assert f.listed_in_place("## 644 root:root /a", "/a", "0644")


def test_the_ssh_trust_read_command_lists_what_listed_in_place_reads(tmp_path):
    """ssh_trust's read command (tasks/read.yml), run on a tree of its own."""
    task = next(t for t in yaml.safe_load((REPO / "roles/ssh_trust/tasks/read.yml").read_text())
                if t["name"] == "Read the host public keys and this role's files")  # fmt: skip
    argv = task["ansible.builtin.command"]["argv"]
    host_dir, ssh_dir = tmp_path / "sshd", tmp_path / "ssh"
    (ssh_dir / "bin").mkdir(parents=True)
    host_dir.mkdir()
    os.chmod(ssh_dir, 0o700)
    os.chmod(ssh_dir / "bin", 0o755)
    (ssh_dir / "config").write_text("Host a\n")
    os.chmod(ssh_dir / "config", 0o644)
    (ssh_dir / "bin" / "ssh").write_text("#!/bin/sh\n")
    os.chmod(ssh_dir / "bin" / "ssh", 0o755)
    out = subprocess.run([*argv[:4], str(host_dir), str(ssh_dir)], capture_output=True, text=True, check=True).stdout
    who = {"owner": pwd.getpwuid(os.getuid()).pw_name, "group": grp.getgrgid(os.getgid()).gr_name}
    assert f.listed_in_place(out, str(ssh_dir), "0700", **who)
    assert f.listed_in_place(out, str(ssh_dir / "bin"), "0755", **who)
    assert f.listed_in_place(out, str(ssh_dir / "config"), "0644", "Host a\n", **who)
    assert f.listed_in_place(out, str(ssh_dir / "bin" / "ssh"), "0755", "#!/bin/sh\n", **who)
    assert not f.listed_in_place(out, str(ssh_dir / "config"), "0644", "Host b\n", **who)
    assert not f.listed_in_place(out, str(ssh_dir / "known_hosts"), "0644", "", **who)


def test_sections_of_a_read_command_are_not_files():
    listing = "@@ inspect\n[\n]\n@@ files\n## 600 root:root /x\n@@ /x\n" + b64("a\n") + "\n@@ /bad\nnot base64!\n"
    assert f.listed_in_place(listing, "/x", "0600", "a\n")
    assert f.listed_paths(listing) == ["/x"]
    assert "/bad" not in f.listed_texts(listing)


def test_listed_json_reads_a_section_up_to_the_next():
    listing = '@@ inspect\n[\n {"State": {"Running": true}}\n]\n## 700 root:root /x\n@@ /x\n'
    assert f.listed_json(listing, "inspect") == {"State": {"Running": True}}
    assert f.listed_json("@@ inspect\n[]\n## 700 root:root /x\n", "inspect") is None  # no such container
    assert f.listed_json("@@ inspect\n## 700 root:root /x\n", "inspect") is None  # docker printed nothing
    assert f.listed_json("## 700 root:root /x\n", "inspect") is None  # no section
    assert f.listed_json('@@ other\n{"a": 1}\n', "other") == {"a": 1}

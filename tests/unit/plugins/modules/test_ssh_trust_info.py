# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugins/modules/ssh_trust_info.py: a node's host keys (one key per file, or refused), its pins, its
authorised keys, its client key and its host names, read from real files."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from checkout import NEEDS_ANSIBLE_CLI, REPO, load, run_module

m = load("plugins/modules/ssh_trust_info.py", "ssh_trust_info")
FIXTURE = json.loads((REPO / "tests" / "unit" / "fixtures" / "ssh_trust_jinja.json").read_text())


def key(kind: str, seed: str = "k", embedded: str | None = None) -> str:
    """``"type blob"`` of a public key of type `kind` as ssh-keygen writes one: the blob is an SSH string
    (4-byte big-endian length, then the text) of the type (`embedded`, default `kind`), then `seed`."""

    def string(text: str) -> bytes:
        return len(text.encode()).to_bytes(4, "big") + text.encode()

    return f"{kind} {base64.b64encode(string(embedded or kind) + string(seed)).decode()}"


ED_A = key("ssh-ed25519", "A")
ED_K = key("ssh-ed25519", "K")
RSA_B = key("ssh-rsa", "B")


def read(tmp_path: Path, files: dict[str, str | bytes], addresses: tuple[str, ...] = ()) -> dict[str, Any]:
    """The module's result on a tree of its own: `files` by path under it (sshd/..., ssh/...)."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    sshd, ssh = str(tmp_path / "sshd"), str(tmp_path / "ssh")
    return m.describe(sshd, ssh, f"{ssh}/id_ed25519", list(addresses), run_command)


def run_command(argv):
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("index", range(len(FIXTURE["cases"][0]["reads"])))
def test_it_keeps_what_the_roles_former_read_kept(tmp_path, index):
    """The files of the fixture's samples (as the role's Jinja once slurped them), read by the module."""
    sample = FIXTURE["cases"][0]["reads"][index]
    files = {
        result["source"].replace("/etc/multinode-horovod/", ""): base64.b64decode(result["content"])
        for result in sample["results"]
    }
    found = read(tmp_path, files)
    assert found["bad_host_keys"] == []
    assert {f"__ssh_trust_{k}": found[k] for k in ("authorized_lines", "host_keys", "pinned_lines")} == sample["out"]


def test_it_keeps_type_and_blob_and_drops_comments(tmp_path):
    found = read(
        tmp_path,
        {
            "sshd/ssh_host_rsa_key.pub": f"{RSA_B} root@x\n",
            "sshd/ssh_host_ed25519_key.pub": f"{ED_A} root@x\n",
            "sshd/ssh_host_rsa_key": "PRIVATE, never read\n",
            "ssh/known_hosts": f"# managed\n\n [a]:1 {ED_A} \n[b]:1 ssh-foo AAAA\n",
            "ssh/authorized_keys": f"{ED_K} c\n#x\n",
        },
    )
    assert found == {
        "host_keys": [ED_A, RSA_B],
        "bad_host_keys": [],
        "pinned_lines": [f"[a]:1 {ED_A}"],
        "authorized_lines": [f"{ED_K} c"],
        "key": {},
        "sources": [],
        "unresolved": [],
    }
    assert read(tmp_path / "none", {}) == {
        "host_keys": [],
        "bad_host_keys": [],
        "pinned_lines": [],
        "authorized_lines": [],
        "key": {},
        "sources": [],
        "unresolved": [],
    }


@pytest.mark.parametrize(
    ("text", "why"),
    [
        # Root on the node plants a second line: in known_hosts it would pin that key for any host.
        (f"{ED_A}\n* {ED_K}\n", "holds 2 lines, not one key on one line"),
        (f"ssh-foo AAAA\n* {ED_K}", "holds 2 lines, not one key on one line"),
        (f"{ED_A} root@b\n\n", "holds 2 lines"),
        (f"{ED_A}\r\n", "is not one key as TYPE BLOB [COMMENT]"),
        ("ssh-foo AAAAB3NzaC1yc2E=\n", "holds a key of type 'ssh-foo', not one of ssh-ed25519, ssh-rsa,"),
        ("ssh-dss AAAAB3NzaC1kc3M=\n", "holds a key of type 'ssh-dss'"),
        ("ssh-ed25519 AAAA*C3Nz\n", "holds a key of type ssh-ed25519 whose blob is not base64"),
        ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE\n", "holds a key of type ssh-ed25519 whose blob is not base64"),
        (key("ssh-ed25519", "A", embedded="ssh-rsa"), "key of type ssh-ed25519 whose blob is of type 'ssh-rsa'"),
        (key("ssh-rsa", "B", embedded="ssh-rsa-cert"), "key of type ssh-rsa whose blob is of type 'ssh-rsa-cert'"),
        # The length says more than the blob holds: the type is cut off.
        ("ssh-rsa " + base64.b64encode(b"\0\0\0\x20ssh-rsa").decode() + "\n", "whose blob is cut short"),
        ("ssh-rsa AAAA\n", "holds a key of type ssh-rsa whose blob is cut short"),
        ("ssh-rsa " + base64.b64encode(b"\0\0\0\x05\x1b[2Kx").decode(), "whose blob is of type '\\x1b[2Kx'"),
        ("ssh-rsa " + base64.b64encode(b"\0\0\0\x07ssh-dss").decode(), "whose blob is of type 'ssh-dss'"),
        (f"{ED_A} root@b\x1b[2K\n", "holds a comment with the control character U+001B"),
        (f"{ED_A} root@b\x85x\n", "holds a comment with the control character U+0085"),
        (f"{ED_A} root\u202eb\n", "holds a comment with the control character U+202E"),
        (f"{ED_A} root@b\u2028* {ED_K}\n", "holds a comment with the control character U+2028"),
        (f"{ED_A} root@\xff\n".encode("latin-1"), "holds a comment with the control character U+DCFF"),
        ("", "holds no key"),
        (" \n", "holds no key"),
        ("ssh-ed25519\n", "is not one key as TYPE BLOB [COMMENT]"),
    ],
)
def test_a_host_key_file_that_is_not_one_known_key_is_refused_naming_the_file(tmp_path, text, why):
    found = read(tmp_path, {"sshd/ssh_host_ed25519_key.pub": text, "sshd/ssh_host_rsa_key.pub": f"{RSA_B}\n"})
    assert found["host_keys"] == [RSA_B]
    assert len(found["bad_host_keys"]) == 1
    assert found["bad_host_keys"][0].startswith(f"{tmp_path}/sshd/ssh_host_ed25519_key.pub "), found
    assert why in found["bad_host_keys"][0], found


# The host key types sshd offers, certificates aside.
KNOWN_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


@pytest.mark.parametrize("kind", KNOWN_TYPES)
@pytest.mark.parametrize("ending", ["\n", "", " root@node-b\n", "\troot@node-b (made by sshd-keygen) \n"])
def test_one_key_of_each_known_type_is_read_with_or_without_its_newline_and_comment(tmp_path, kind, ending):
    found = read(tmp_path, {"sshd/ssh_host_x_key.pub": key(kind, "X") + ending})
    assert (found["host_keys"], found["bad_host_keys"]) == ([key(kind, "X")], [])


def test_only_files_named_as_host_keys_are_read(tmp_path):
    found = read(
        tmp_path,
        {
            "sshd/ssh_host_dsa-x_key.pub": "anything\n",
            "sshd/other.pub": "anything\n",
            "sshd/ssh_host_ed25519_key.pub.bak": "anything\n",
            "sshd/ssh_host_Ed25519_key.pub": f"{ED_A}\n",
        },
    )
    assert (found["host_keys"], found["bad_host_keys"]) == ([ED_A], [])


@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="ssh-keygen is not on PATH")
def test_real_host_keys_of_ssh_keygen_are_read(tmp_path):
    (tmp_path / "sshd").mkdir()
    for kind in ("ed25519", "rsa", "ecdsa"):
        path = tmp_path / "sshd" / f"ssh_host_{kind}_key"
        subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "root@node", "-f", str(path)], check=True)
    found = read(tmp_path, {})
    publics = [(tmp_path / "sshd" / f"ssh_host_{k}_key.pub").read_text() for k in ("ed25519", "rsa", "ecdsa")]
    assert found["bad_host_keys"] == []
    assert sorted(found["host_keys"]) == sorted(" ".join(text.split()[:2]) for text in publics)


@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="ssh-keygen is not on PATH")
@pytest.mark.parametrize(
    ("passphrase", "mode", "loads"),
    [("", 0o600, True), ("secret", 0o600, False), ("", 0o644, False)],
    ids=["loads", "passphrase", "others-may-read-it"],
)
def test_the_client_key_and_the_public_key_it_derives(tmp_path, passphrase, mode, loads):
    path = tmp_path / "ssh" / "id_ed25519"
    path.parent.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "c", "-f", str(path)], check=True)
    public = " ".join(path.with_suffix(".pub").read_text().split()[:2])
    path.with_suffix(".pub").write_text("ssh-ed25519 AAAAother edited by hand\n")  # never read for the key
    os.chmod(path, mode)
    found = read(tmp_path, {})["key"]
    assert found["mode"] == f"{mode:04o}"
    assert found["public_key"] == (public if loads else "")
    assert path.read_text().splitlines()[1] not in json.dumps(found)


def test_sources_are_every_ip_address_then_the_resolved_ones_once_and_never_loopback():
    found = {
        "node-c.lan": ["192.0.2.12", "2001:db8::12", "127.0.1.1", "::1", "192.0.2.12"],
        "other.lan": ["192.0.2.10", "127.0.0.1", "::ffff:192.0.2.13"],
        "gone.lan": [],
    }
    addresses = ["192.0.2.10", "192.0.2.11", "node-c.lan", "2001:db8::4", "other.lan", "gone.lan", "127.0.0.1"]
    assert m.sources(addresses, found.__getitem__) == (
        ["192.0.2.10", "192.0.2.11", "2001:db8::4", "192.0.2.12", "2001:db8::12", "::ffff:192.0.2.13"],
        ["gone.lan"],
    )
    assert m.sources(["192.0.2.10", "fe80::1"], found.__getitem__) == (["192.0.2.10", "fe80::1"], [])


def test_host_names_are_resolved_here(tmp_path):
    found = read(tmp_path, {}, ("192.0.2.1", "localhost", "no-such-host.invalid"))
    assert found["sources"] == ["192.0.2.1"]  # localhost is loopback only
    assert found["unresolved"] == ["no-such-host.invalid"]
    assert "127.0.0.1" in m.resolve("localhost")


@NEEDS_ANSIBLE_CLI
def test_the_module_runs_through_ansible_in_check_mode(tmp_path):
    (tmp_path / "sshd").mkdir()
    (tmp_path / "sshd" / "ssh_host_ed25519_key.pub").write_text(f"{ED_A}\n* {ED_K}\n")
    args = {"host_key_dir": f"{tmp_path}/sshd", "ssh_dir": f"{tmp_path}/ssh", "key": f"{tmp_path}/ssh/id_ed25519"}
    result = run_module("ssh_trust_info", args, check=True)
    assert result["changed"] is False and result["host_keys"] == []
    assert result["bad_host_keys"] == [
        f"{tmp_path}/sshd/ssh_host_ed25519_key.pub holds 2 lines, not one key on one line"
    ]

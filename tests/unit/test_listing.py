# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""listed_in_place (plugins/filter/listing.py): a write task is skipped only when the read shows the
file exactly as that task would leave it; every difference runs it."""

from __future__ import annotations

import base64

import pytest
from checkout import load

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


def test_listed_lines_is_a_sections_lines_or_none():
    listing = "@@ inspect\n[]\n@@ ssh-link\nlink /root/.ssh/bin/ssh\nfirst /usr/local/bin/ssh\n## 700 root:root /x\n"
    assert f.listed_lines(listing, "ssh-link") == ["link /root/.ssh/bin/ssh", "first /usr/local/bin/ssh"]
    assert f.listed_lines(listing, "inspect") == ["[]"]
    assert f.listed_lines("@@ ssh-link\n", "ssh-link") == []  # the command printed nothing
    assert f.listed_lines(listing, "other") is None
    assert f.listed_lines("", "ssh-link") is None


def pair_listing(*, priv_mode="600", pub_mode="600", owner="root", derived="ssh-ed25519 AAAAC3key", pub=None):
    path = "/etc/mnh/sshd/ssh_host_ed25519_key"
    lines = [f"## {priv_mode} {owner}:root {path}"]
    if derived is not None:
        lines += [f"@@ derived {path}", derived]
    if pub_mode is not None:
        text = "ssh-ed25519 AAAAC3key root@a (c)\n" if pub is None else pub
        lines += [f"## {pub_mode} root:root {path}.pub", f"@@ {path}.pub", b64(text)]
    return "\n".join(lines)


KEY = "/etc/mnh/sshd/ssh_host_ed25519_key"


def test_a_key_pair_as_the_module_leaves_it_is_in_place():
    assert f.listed_key_pair_in_place(pair_listing(), KEY, "root@a (c)")
    # ssh-keygen -y may print the private key's comment too: only the type and the key count.
    assert f.listed_key_pair_in_place(pair_listing(derived="ssh-ed25519 AAAAC3key old comment"), KEY, "root@a (c)")


@pytest.mark.parametrize(
    ("listing", "comment"),
    [
        (pair_listing(), "root@b (c)"),  # another comment wanted
        (pair_listing(pub="ssh-ed25519 AAAAC3key root@a (c)"), "root@a (c)"),  # no trailing newline
        (pair_listing(pub="ssh-ed25519 AAAAC3other root@a (c)\n"), "root@a (c)"),  # not the private key's
        (pair_listing(derived=None), "root@a (c)"),  # the private key does not load (broken, passphrase)
        (pair_listing(derived=""), "root@a (c)"),  # ssh-keygen printed nothing
        (pair_listing(priv_mode="644"), "root@a (c)"),  # the private key's mode
        (pair_listing(pub_mode="644"), "root@a (c)"),  # the public key's mode
        (pair_listing(owner="alice"), "root@a (c)"),  # the owner
        (pair_listing(pub_mode=None), "root@a (c)"),  # no public key file
        ("", "root@a (c)"),  # nothing there
    ],
)
def test_every_difference_of_a_key_pair_runs_the_module(listing, comment):
    assert not f.listed_key_pair_in_place(listing, KEY, comment)


def test_listed_derived_keys_keeps_type_and_blob_of_keys_that_load():
    listing = "\n".join(
        ["@@ derived /k/a", "ssh-ed25519 AAAa root@a", "@@ derived /k/b", "## 600 root:root /k/c", "@@ derived /k/d"]
    )
    assert f.listed_derived_keys(listing) == {"/k/a": "ssh-ed25519 AAAa"}

# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for plugins/module_utils/controller_ssh.py: the ssh command printed for the controller."""

from __future__ import annotations

import shlex

import pytest
from ansible_collections.multinode.horovod.plugins.module_utils.controller_ssh import ssh_command


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ({"host": "10.0.0.1", "user": "root", "port": 22}, "ssh root@10.0.0.1"),
        ({"host": "10.0.0.1", "user": "root", "port": "22"}, "ssh root@10.0.0.1"),
        ({"host": "gpu-a.example", "user": "", "port": 2222}, "ssh -p 2222 gpu-a.example"),
        ({"host": "gpu-a.example"}, "ssh gpu-a.example"),
    ],
)
def test_the_port_and_user_appear_only_when_the_inventory_names_them(node, expected):
    assert ssh_command(node) == expected


def test_options_go_before_the_destination_and_the_command_after_it():
    node = {"host": "node-a", "user": "ml", "port": 2200}
    assert ssh_command(node, ["-N", "-L", "6006:127.0.0.1:6006"]) == "ssh -N -L 6006:127.0.0.1:6006 -p 2200 ml@node-a"
    follow = ssh_command(node, command=["tail", "-f", "/x/launcher.log"])
    assert follow == "ssh -p 2200 ml@node-a tail -f /x/launcher.log"


def test_every_word_is_quoted_for_the_shell():
    command = ssh_command({"host": "node-a", "user": "", "port": 22}, command=["tail", "-f", "/runs/a b;rm -rf x"])
    assert command == "ssh node-a tail -f '/runs/a b;rm -rf x'"
    assert shlex.split(command)[-1] == "/runs/a b;rm -rf x"

# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Input rules of nfs_client (plugins/plugin_utils/nfs_client_rules.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.multinode.horovod.plugins.filter.nfs_client import FilterModule as NfsClientFilters
from ansible_collections.multinode.horovod.plugins.filter.role_rules import role_problems
from ansible_collections.multinode.horovod.plugins.plugin_utils import nfs_client_rules as rules


def inputs(*mounts, **overrides):
    """The role's inputs with its defaults, `mounts` (default: one sound mount) and overrides."""
    values = {
        "nfs_client_mounts": list(mounts) or [mount()],
        "nfs_client_default_options": ["nfsvers=4.2", "hard", "_netdev", "noatime", "nosuid", "nodev"],
        "nfs_client_wait_timeout": 120,
    }
    values.update(overrides)
    return values


WEAK_OK = {"nfs_client_allow_weak_options": True}


def mount(**fields):
    values = {"server": "192.0.2.10", "path": "/data1/share", "mountpoint": "/data1/share"}
    values.update(fields)
    return values


def test_role_defaults_and_the_scenario_mounts_are_sound():
    assert rules.problems(inputs(nfs_client_mounts=[])) == []
    assert (
        rules.problems(
            inputs(
                mount(server="10.213.7.10", state="present"),
                mount(
                    server="nfs-a",
                    path="/export/data/",
                    mountpoint="/mnt/data",
                    options=["nfsvers=4.1", "soft", "ro", "nosuid", "nodev"],
                    state="present",
                ),
            )
        )
        == []
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"server": "node-a"},
        {"server": "node-a.cluster.example"},
        {"server": "2001:db8::10"},
        {"server": "::1"},
        {"server": "127.0.0.1", "path": "/data1/share/", "mountpoint": "/data1/other/"},
        {"state": "mounted"},
        {"state": "unmounted"},
        {"state": "absent"},
        {"state": None, "options": None},
        {"options": []},
        {"options": ["vers=4", "proto=tcp6", "port=2049", "timeo=600", "retrans=2", "rsize=1048576"]},
        {"options": ["nfsvers=3", "mountproto=udp", "mountport=20048", "mountvers=3", "nolock", "noacl"]},
        {"options": ["nfsvers=4.0", "wsize=1048576", "nconnect=16", "actimeo=30", "lookupcache=positive"]},
        {"options": ["acregmin=3", "acregmax=60", "acdirmin=30", "acdirmax=60", "sec=krb5p:krb5i", "intr"]},
        {"options": ["x-systemd.mount-timeout=30", "x-systemd.automount", "x-systemd.idle-timeout=600", "nofail"]},
        {"options": ["x-systemd.requires=network-online.target", "x-systemd.after=wg-quick@wg0.service"]},
        {"options": ["x-systemd.requires-mounts-for=/data1", "x-systemd.device-timeout=0", "bg", "retry=2"]},
        {"options": ["clientaddr=192.0.2.11", "mounthost=node-a", "local_lock=flock", "xprtsec=tls", "softerr"]},
        {"options": ["proto=rdma", "port=20049", "max_connect=4", "minorversion=1", "defaults", "relatime"]},
        {"options": ["rw", "nosuid", "nodev", "noexec", "noauto", "user", "nodiratime", "lazytime", "sync"]},
    ],
)
def test_sound_mounts_have_no_problems(fields):
    options = fields.get("options")
    if options is not None:  # each keeps nosuid and nodev (test_weak_mount_options_are_refused_unless_allowed)
        fields = {**fields, "options": [*options, *(keep for keep in ("nosuid", "nodev") if keep not in options)]}
    assert rules.problems(inputs(mount(**fields))) == []


@pytest.mark.parametrize("flag", rules.MOUNT_FLAGS)
def test_every_flag_is_accepted_alone(flag):
    # Alone, without nosuid and nodev: the switch lets that through (test_weak_mount_options_*).
    assert rules.problems(inputs(mount(options=[flag]), **WEAK_OK)) == []


@pytest.mark.parametrize("timeout", [1, 120, "6", 86400])
def test_positive_timeouts_are_sound(timeout):
    assert rules.problems(inputs(nfs_client_wait_timeout=timeout)) == []


@pytest.mark.parametrize(
    ("overrides", "variable", "fragment"),
    [
        # the timeout and the default options
        ({"nfs_client_wait_timeout": 0}, "nfs_client_wait_timeout", "0 is not positive"),
        ({"nfs_client_wait_timeout": -5}, "nfs_client_wait_timeout", "-5 is not positive"),
        ({"nfs_client_wait_timeout": "0"}, "nfs_client_wait_timeout", "'0' is not positive"),
        ({"nfs_client_wait_timeout": "two minutes"}, "nfs_client_wait_timeout", "is not a whole number of seconds"),
        ({"nfs_client_wait_timeout": 1.5}, "nfs_client_wait_timeout", "1.5 is not a whole number"),
        ({"nfs_client_wait_timeout": True}, "nfs_client_wait_timeout", "True is not a whole number"),
        ({"nfs_client_wait_timeout": None}, "nfs_client_wait_timeout", "None is not a whole number"),
        ({"nfs_client_default_options": "hard,_netdev"}, "nfs_client_default_options", "is not a list"),
        ({"nfs_client_default_options": ["hard", 4]}, "nfs_client_default_options", "4 in ['hard', 4] is not a"),
        ({"nfs_client_default_options": ["hard", "soft"]}, "nfs_client_default_options", "'hard' and 'soft'"),
        ({"nfs_client_default_options": ["nfsvers=2"]}, "nfs_client_default_options", "value of nfsvers must be"),
        # the list and its items
        ({"nfs_client_mounts": "192.0.2.10:/data1/share"}, "nfs_client_mounts", "is not a list"),
        ({"nfs_client_mounts": {"server": "a"}}, "nfs_client_mounts", "is not a list"),
        ({"nfs_client_mounts": ["a:/x"]}, "nfs_client_mounts", "item 1 ('a:/x') is not a mapping"),
        ({"nfs_client_mounts": [mount(opts=["hard"])]}, "nfs_client_mounts", "field 'opts' is unknown"),
        ({"nfs_client_mounts": [mount(state="gone")]}, "nfs_client_mounts", "state 'gone' is not one of mounted"),
        # the server
        ({"nfs_client_mounts": [mount(server=None)]}, "nfs_client_mounts", "server is missing"),
        ({"nfs_client_mounts": [{"path": "/x", "mountpoint": "/mnt/x"}]}, "nfs_client_mounts", "server is missing"),
        ({"nfs_client_mounts": [mount(server="")]}, "nfs_client_mounts", "server '' is not a host name"),
        ({"nfs_client_mounts": [mount(server="10.213.7.10:/data1")]}, "nfs_client_mounts", "without path, port"),
        ({"nfs_client_mounts": [mount(server="node-a:2049")]}, "nfs_client_mounts", "'node-a:2049' is not"),
        ({"nfs_client_mounts": [mount(server="node-a/data1")]}, "nfs_client_mounts", "'node-a/data1' is not"),
        ({"nfs_client_mounts": [mount(server="[2001:db8::10]")]}, "nfs_client_mounts", "'[2001:db8::10]' is not"),
        ({"nfs_client_mounts": [mount(server="fe80::1%eth0")]}, "nfs_client_mounts", "'fe80::1%eth0' is not"),
        ({"nfs_client_mounts": [mount(server="node a")]}, "nfs_client_mounts", "server 'node a' is not a host"),
        ({"nfs_client_mounts": [mount(server="node-a ")]}, "nfs_client_mounts", "server 'node-a ' is not a host"),
        ({"nfs_client_mounts": [mount(server="node_a")]}, "nfs_client_mounts", "server 'node_a' is not a host"),
        ({"nfs_client_mounts": [mount(server="192.0.2.0/24")]}, "nfs_client_mounts", "'192.0.2.0/24' is not"),
        ({"nfs_client_mounts": [mount(server="*")]}, "nfs_client_mounts", "server '*' is not a host name"),
        ({"nfs_client_mounts": [mount(server="192.0.2.300")]}, "nfs_client_mounts", "'192.0.2.300' is not"),
        ({"nfs_client_mounts": [mount(server="0.0.0.0")]}, "nfs_client_mounts", "the unspecified address"),
        ({"nfs_client_mounts": [mount(server=10)]}, "nfs_client_mounts", "server 10 is not a string"),
        # paths
        ({"nfs_client_mounts": [mount(path="data1/share")]}, "nfs_client_mounts", "path 'data1/share' is not absolute"),
        ({"nfs_client_mounts": [mount(mountpoint="data1/x")]}, "nfs_client_mounts", "mountpoint 'data1/x' is not"),
        ({"nfs_client_mounts": [mount(path=None)]}, "nfs_client_mounts", "path is missing"),
        ({"nfs_client_mounts": [mount(mountpoint=None)]}, "nfs_client_mounts", "item 1: mountpoint is missing"),
        ({"nfs_client_mounts": [mount(path="/data1/../etc")]}, "nfs_client_mounts", "is not normalised"),
        ({"nfs_client_mounts": [mount(mountpoint="/")]}, "nfs_client_mounts", "mountpoint '/' is not normalised"),
        ({"nfs_client_mounts": [mount(mountpoint="/etc")]}, "nfs_client_mounts", "inside the system directory /etc"),
        ({"nfs_client_mounts": [mount(mountpoint="/data1/a b")]}, "nfs_client_mounts", "contains whitespace"),
        ({"nfs_client_mounts": [mount(mountpoint="/data1/a\n/b")]}, "nfs_client_mounts", "contains whitespace"),
        ({"nfs_client_mounts": [mount(path="/data1/a,b")]}, "nfs_client_mounts", "characters that are not allowed"),
        (
            {"nfs_client_mounts": [mount(mountpoint="/data1/x"), mount(server="b", mountpoint="/data1/x/")]},
            "nfs_client_mounts",
            "mount point '/data1/x' is used by more than one mount",
        ),
        # options: shapes that add an option, a field or a comment
        ({"nfs_client_mounts": [mount(options="hard,intr")]}, "nfs_client_mounts", "options 'hard,intr' is not a list"),
        ({"nfs_client_mounts": [mount(options=["hard,intr"])]}, "nfs_client_mounts", "contains ','"),
        ({"nfs_client_mounts": [mount(options=["hard intr"])]}, "nfs_client_mounts", "contains ' '"),
        ({"nfs_client_mounts": [mount(options=["hard\t0"])]}, "nfs_client_mounts", "contains '\\t'"),
        ({"nfs_client_mounts": [mount(options=["hard#"])]}, "nfs_client_mounts", "contains '#'"),
        ({"nfs_client_mounts": [mount(options=["'hard'"])]}, "nfs_client_mounts", 'contains "\'"'),
        ({"nfs_client_mounts": [mount(options=["hard\\"])]}, "nfs_client_mounts", "contains '\\\\'"),
        ({"nfs_client_mounts": [mount(options=[7])]}, "nfs_client_mounts", "7 in options [7] is not a string"),
        # options: names and values
        ({"nfs_client_mounts": [mount(options=["hrad"])]}, "nfs_client_mounts", "'hrad' is not a known nfs(5)"),
        ({"nfs_client_mounts": [mount(options=["udp"])]}, "nfs_client_mounts", "'udp' is not a known"),
        ({"nfs_client_mounts": [mount(options=[""])]}, "nfs_client_mounts", "option '' is not a known"),
        ({"nfs_client_mounts": [mount(options=["hard=1"])]}, "nfs_client_mounts", "hard takes no value"),
        ({"nfs_client_mounts": [mount(options=["x-systemd.automount=yes"])]}, "nfs_client_mounts", "takes no value"),
        ({"nfs_client_mounts": [mount(options=["nfsvers"])]}, "nfs_client_mounts", "'nfsvers' needs a value"),
        ({"nfs_client_mounts": [mount(options=["nfsvers=2"])]}, "nfs_client_mounts", "value of nfsvers must be"),
        ({"nfs_client_mounts": [mount(options=["nfsvers=4.3"])]}, "nfs_client_mounts", "value of nfsvers must be"),
        ({"nfs_client_mounts": [mount(options=["vers=4.2=x"])]}, "nfs_client_mounts", "the value of vers must be"),
        ({"nfs_client_mounts": [mount(options=["proto=udp"])]}, "nfs_client_mounts", "the value of proto must be"),
        ({"nfs_client_mounts": [mount(options=["mountproto=sctp"])]}, "nfs_client_mounts", "value of mountproto"),
        ({"nfs_client_mounts": [mount(options=["port=65536"])]}, "nfs_client_mounts", "value of port must be"),
        ({"nfs_client_mounts": [mount(options=["port=-1"])]}, "nfs_client_mounts", "value of port must be"),
        ({"nfs_client_mounts": [mount(options=["port=0x801"])]}, "nfs_client_mounts", "value of port must be"),
        ({"nfs_client_mounts": [mount(options=["timeo=0"])]}, "nfs_client_mounts", "the value of timeo must be"),
        ({"nfs_client_mounts": [mount(options=["timeo=10s"])]}, "nfs_client_mounts", "the value of timeo must be"),
        ({"nfs_client_mounts": [mount(options=["retrans=two"])]}, "nfs_client_mounts", "value of retrans must be"),
        ({"nfs_client_mounts": [mount(options=["rsize=512"])]}, "nfs_client_mounts", "value of rsize must be"),
        ({"nfs_client_mounts": [mount(options=["wsize="])]}, "nfs_client_mounts", "the value of wsize must be"),
        ({"nfs_client_mounts": [mount(options=["nconnect=17"])]}, "nfs_client_mounts", "value of nconnect must be"),
        ({"nfs_client_mounts": [mount(options=["nconnect=0"])]}, "nfs_client_mounts", "value of nconnect must be"),
        ({"nfs_client_mounts": [mount(options=["actimeo=1.5"])]}, "nfs_client_mounts", "value of actimeo must be"),
        ({"nfs_client_mounts": [mount(options=["acregmin=-1"])]}, "nfs_client_mounts", "value of acregmin must"),
        ({"nfs_client_mounts": [mount(options=["sec=none"])]}, "nfs_client_mounts", "the value of sec must be"),
        ({"nfs_client_mounts": [mount(options=["sec=krb5:krb5"])]}, "nfs_client_mounts", "the value of sec must"),
        ({"nfs_client_mounts": [mount(options=["lookupcache=some"])]}, "nfs_client_mounts", "value of lookupcache"),
        ({"nfs_client_mounts": [mount(options=["local_lock=both"])]}, "nfs_client_mounts", "value of local_lock"),
        ({"nfs_client_mounts": [mount(options=["clientaddr=node-b"])]}, "nfs_client_mounts", "value of clientaddr"),
        ({"nfs_client_mounts": [mount(options=["mounthost=a_b"])]}, "nfs_client_mounts", "value of mounthost"),
        ({"nfs_client_mounts": [mount(options=["x-systemd.mount-timeout=5min"])]}, "nfs_client_mounts", "must be"),
        ({"nfs_client_mounts": [mount(options=["x-systemd.mount-timeout"])]}, "nfs_client_mounts", "needs a value"),
        ({"nfs_client_mounts": [mount(options=["x-systemd.after=network"])]}, "nfs_client_mounts", "systemd unit"),
        ({"nfs_client_mounts": [mount(options=["x-systemd.requires-mounts-for=x"])]}, "nfs_client_mounts", "absolute"),
        # options: repeated or contradicted
        ({"nfs_client_mounts": [mount(options=["hard", "hard"])]}, "nfs_client_mounts", "set hard twice"),
        ({"nfs_client_mounts": [mount(options=["vers=4.2", "nfsvers=4.1"])]}, "nfs_client_mounts", "nfsvers twice"),
        ({"nfs_client_mounts": [mount(options=["port=1", "port=2"])]}, "nfs_client_mounts", "set port twice"),
        ({"nfs_client_mounts": [mount(options=["ro", "rw"])]}, "nfs_client_mounts", "'ro' and 'rw' contradict"),
        ({"nfs_client_mounts": [mount(options=["tcp", "proto=rdma"])]}, "nfs_client_mounts", "contradict"),
    ],
)
def test_bad_input_names_the_variable_and_the_problem(overrides, variable, fragment):
    found = rules.problems(inputs(**overrides))
    assert [message for name, message in found if name == variable and fragment in message], found


@pytest.mark.parametrize("group", rules.MOUNT_CONFLICTS)
def test_every_contradiction_is_refused(group):
    options = [name + "=tcp" if name == "proto" else name for name in group]
    found = rules.problems(inputs(mount(options=options), **WEAK_OK))
    assert found == [
        (
            "nfs_client_mounts",
            f"the mount on '/data1/share': options {' and '.join(map(repr, options))} contradict each other; keep one",
        )
    ]


@pytest.mark.parametrize("option", sorted(set(rules.MOUNT_OPTIONS) - set(rules.MOUNT_FLAGS)))
def test_every_valued_option_needs_its_value(option):
    found = rules.problems(inputs(mount(options=[option]), **WEAK_OK))
    assert found == [("nfs_client_mounts", found[0][1])]
    assert f"option {option!r} needs a value" in found[0][1]


def test_each_problem_is_reported():
    found = rules.problems(inputs(mount(server="a:/b", path="rel", options=["hard", "soft", "nfsvers=2"])))
    assert len(found) == 6, found  # with the two of nosuid, nodev that the options lack


@pytest.mark.parametrize(
    "value",
    [
        None,
        -2,
        "x",
        {},
        [None],
        [[]],
        [{"server": [], "path": {}, "mountpoint": 1, "options": 1, "state": []}],
        [{1: 2}],
    ],
)
@pytest.mark.parametrize("variable", ["nfs_client_mounts", "nfs_client_default_options", "nfs_client_wait_timeout"])
def test_wrong_types_give_problems_not_exceptions(variable, value):
    found = rules.problems(inputs(**{variable: value}))
    assert found
    assert all(isinstance(name, str) and isinstance(message, str) for name, message in found)


def test_missing_variables_are_not_checked():
    assert rules.problems({}) == []


def test_messages_leave_the_variable_name_to_the_caller():
    given = {"nfs_client_default_options": ["x"], "nfs_client_wait_timeout": 0, **WEAK_OK}
    found = rules.problems(inputs(mount(server=""), **given))
    assert len(found) == 3
    assert not [message for name, message in found if message.startswith(name)]


def test_the_role_filter_reads_these_rules():
    bad = inputs(mount(server="10.213.7.10:/data1"))
    assert role_problems(bad, "nfs_client") == [
        f"nfs_client_mounts: {message}" for _unused, message in rules.problems(bad)
    ]
    assert role_problems(inputs(), "nfs_client") == []


# The mount's source and the wait's options (nfs_client's filters, tasks/main.yml and tasks/wait.yml).


def test_mount_source_brackets_ipv6_and_drops_the_trailing_slash():
    assert rules.mount_source(mount(path="/data1/share/")) == "192.0.2.10:/data1/share"
    assert rules.mount_source(mount(server="2001:db8::10", path="/x")) == "[2001:db8::10]:/x"
    assert rules.mount_source(mount(server="nfs-a.example", path="/x//")) == "nfs-a.example:/x"


def test_mount_options_are_the_mounts_own_else_the_defaults():
    defaults = ["nfsvers=4.2", "hard"]
    assert rules.mount_options(mount(), defaults) == defaults
    assert rules.mount_options(mount(options=None), defaults) == defaults
    assert rules.mount_options(mount(options=["soft"]), defaults) == ["soft"]
    assert rules.mount_options(mount(options=[]), defaults) == []


def test_wait_options_keep_how_the_server_is_reached_and_drop_boot_and_fstab_ones():
    options = ["nfsvers=4.1", "hard", "_netdev", "bg", "nofail", "noauto", "rw", "retry=5", "x-systemd.automount"]
    options += ["comment=x", "port=2049", "proto=tcp", "sec=krb5"]
    assert rules.wait_options(mount(options=options), []) == "nfsvers=4.1,hard,port=2049,proto=tcp,sec=krb5"
    assert rules.wait_options(mount(), ["nfsvers=4.2", "hard", "_netdev", "noatime"]) == "nfsvers=4.2,hard,noatime"
    assert rules.wait_options(mount(options=["bg", "ro"]), []) == "defaults"


def test_the_filter_gives_what_the_mount_task_and_the_wait_need():
    filter_ = NfsClientFilters().filters()["nfs_client_mount"]
    given = {"server": "2001:db8::10", "path": "/srv/share/", "mountpoint": "/mnt/share/", "options": None}
    assert filter_(given, ["nfsvers=4.2", "hard", "_netdev"]) == {
        "src": "[2001:db8::10]:/srv/share",
        "path": "/mnt/share",
        "opts": "nfsvers=4.2,hard,_netdev",
        "wait_options": "nfsvers=4.2,hard",
    }
    assert filter_({**given, "options": []}, ["hard"])["opts"] == ""


# A trailing "/" is dropped in one place (plugins/module_utils/paths.py, strip_slash): any other way
# of dropping one, in code, tasks or templates, is a second definition that can drift (issue 11).
TRAILING_SLASH_PATTERNS = ('rstrip("/")', "rstrip('/')", "/+$", "/*$", 'rstrip("/") or')


def test_a_trailing_slash_is_dropped_in_one_place_only():
    repo = Path(__file__).resolve().parents[4]
    found = []
    for top in ("plugins", "roles", "playbooks", "tools"):
        for path in sorted((repo / top).rglob("*")):
            definition = path.name == "paths.py" and "module_utils" in path.parts
            if path.suffix not in (".py", ".yml", ".j2", ".sh") or definition:
                continue
            text = path.read_text()
            found += [f"{path.relative_to(repo)}: {pattern}" for pattern in TRAILING_SLASH_PATTERNS if pattern in text]
    assert found == [], "drop trailing slashes with strip_slash (plugins/module_utils/paths.py), not again here"


@pytest.mark.parametrize(
    ("options", "fragments"),
    [
        (["hard"], ["the options ['hard'] lack nosuid: a set-user-ID program", "lack nodev: a device node"]),
        (["hard", "nodev"], ["the options ['hard', 'nodev'] lack nosuid"]),
        (["hard", "nosuid"], ["the options ['hard', 'nosuid'] lack nodev"]),
        (["hard", "suid", "nodev"], ["option 'suid' undoes nosuid: a set-user-ID program"]),
        (["hard", "nosuid", "dev"], ["option 'dev' undoes nodev: a device node"]),
        (["defaults"], ["lack nosuid", "lack nodev"]),
    ],
)
@pytest.mark.parametrize("where", ["nfs_client_mounts", "nfs_client_default_options"])
def test_weak_mount_options_are_refused_unless_allowed(options, fragments, where):
    """A mount without nosuid or nodev lets root on another client reach root here (issue 42, finding 6)."""
    given = {where: [mount(options=options)] if where == "nfs_client_mounts" else options}
    found = rules.problems(inputs(**given))
    assert [variable for variable, _message in found] == [where] * len(fragments), found
    for fragment, (_variable, message) in zip(fragments, found, strict=True):
        assert fragment in message, message
        assert message.endswith("or set nfs_client_allow_weak_options: true if that is really meant"), message
    assert rules.problems(inputs(**given, **WEAK_OK)) == []
    assert rules.problems(inputs(**given, nfs_client_allow_weak_options="yes")) == []


def test_a_mount_without_options_is_judged_by_the_default_options():
    found = rules.problems(inputs(mount(), nfs_client_default_options=["hard"]))
    assert [variable for variable, _message in found] == ["nfs_client_default_options"] * 2, found


def test_the_weak_switch_is_a_boolean():
    found = rules.problems(inputs(nfs_client_allow_weak_options="maybe"))
    assert found == [("nfs_client_allow_weak_options", "'maybe' is not a boolean; use true or false")]


def test_the_role_warns_when_weak_mount_options_are_allowed():
    task = " ".join((Path(__file__).resolve().parents[4] / "roles/nfs_client/tasks/assert.yml").read_text().split())
    assert "when: nfs_client_allow_weak_options | bool" in task
    assert "nfs_client_allow_weak_options is true" in task

# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Input rules of nfs_server (plugins/plugin_utils/nfs_server_rules.py)."""

from __future__ import annotations

import pytest
from ansible_collections.multinode.horovod.plugins.filter.role_rules import role_problems
from ansible_collections.multinode.horovod.plugins.plugin_utils import nfs_server_rules as rules

INJECTION = "fsid=0) *(rw,insecure,no_root_squash"


def inputs(*exports, **overrides):
    """The role's inputs with its defaults, `exports` (default: one sound export) and overrides."""
    values = {
        "nfs_server_exports": list(exports) or [export()],
        "nfs_server_default_options": ["rw", "sync", "no_subtree_check"],
        "nfs_server_allow_any_client": False,
        "nfs_server_allow_weak_options": False,
    }
    values.update(overrides)
    return values


def export(**fields):
    values = {"path": "/data1/share", "clients": ["192.0.2.11", "192.0.2.12"]}
    values.update(fields)
    return values


def test_role_defaults_and_the_scenario_exports_are_sound():
    assert rules.problems(inputs(nfs_server_exports=[])) == []
    assert (
        rules.problems(
            inputs(
                export(options=["rw", "sync", "no_subtree_check", "no_root_squash"]),
                export(path="/data1/scratch/", clients=["10.213.7.0/24"], owner="nobody", group="nogroup", mode="0770"),
            )
        )
        == []
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"clients": ["node-b", "node-c.cluster.example", "NODE-D", "a1"]},
        {"clients": ["10.213.7.11", "2001:db8::11", "::ffff:192.0.2.1"]},
        {"clients": ["10.213.7.0/24", "10.213.7.11/32", "2001:db8::/64", "10.0.0.0/8"]},
        {"clients": ["localhost"]},
        {"path": "/data1/share/"},
        {"path": "/srv/nfs/share", "owner": 1000, "group": "1000", "mode": "2775"},
        {"owner": "ml-user", "group": "_ml.group", "mode": "755"},
        {"owner": None, "group": None, "mode": None, "options": None},
        {"options": []},
        {"options": ["ro", "async", "secure", "no_wdelay", "hide", "nocrossmnt", "subtree_check", "insecure_locks"]},
        {"options": ["fsid=root", "sec=krb5p:krb5i:krb5:sys", "anonuid=65534", "anongid=65534", "all_squash"]},
        {"options": ["fsid=0", "no_root_squash", "mountpoint", "no_all_squash", "acl", "pnfs", "security_label"]},
        {"options": ["fsid=4294967295", "mp=/data1", "root_squash", "all_squash"]},
        {"options": ["fsid=6a1cbd0e-3a5f-4d1e-9b5c-0a2b3c4d5e6f", "mountpoint=/"]},
        {"options": ["fsid=6A1CBD0E3A5F4D1E9B5C0A2B3C4D5E6F", "auth_nlm", "nordirplus", "no_acl", "no_pnfs"]},
        {"options": ["refer=/data1/share@node-b+192.0.2.13:/data2@node-c"]},
        {"options": ["replicas=/data1/share@node-b"]},
    ],
)
def test_sound_exports_have_no_problems(fields):
    assert rules.problems(inputs(export(**fields))) == []


@pytest.mark.parametrize("flag", [flag for flag in rules.EXPORT_FLAGS if flag not in rules.WEAK_OPTIONS])
def test_every_flag_is_accepted_alone(flag):
    assert rules.problems(inputs(export(options=[flag]))) == []


@pytest.mark.parametrize(
    ("option", "opens"),
    [
        ("insecure", "from any port of a client, so any user there (not only root"),
        ("anonuid=0", "maps the squashed users (with all_squash: every user of every client) to root"),
        ("anongid=0", "to root's group"),
        ("crossmnt", "exports every file system mounted below the export too"),
        ("nohide", "shows this export's file system to the clients of an export above it"),
    ],
)
@pytest.mark.parametrize("where", ["export", "default options"])
def test_weak_options_are_refused_unless_allowed(option, opens, where):
    given = {"nfs_server_default_options": [option]} if where != "export" else {}
    weak = inputs(export(options=[option]) if where == "export" else export(), **given)
    found = rules.problems(weak)
    variable = "nfs_server_exports" if where == "export" else "nfs_server_default_options"
    prefix = "the export of '/data1/share': " if where == "export" else ""
    assert [name for name, _unused in found] == [variable]
    assert found[0][1].startswith(f"{prefix}option {option!r} ")
    assert opens in found[0][1]
    assert found[0][1].endswith("remove it, or set nfs_server_allow_weak_options: true if that is really meant")
    for allow in (True, "yes"):
        assert rules.problems({**weak, "nfs_server_allow_weak_options": allow}) == []


@pytest.mark.parametrize(
    "options", [["anonuid=65534", "anongid=65534", "all_squash"], ["anonuid=00"], ["secure"], ["nocrossmnt", "hide"]]
)
def test_other_anonymous_ids_and_secure_are_not_weak(options):
    assert not [message for _unused, message in rules.problems(inputs(export(options=options))) if "weak" in message]


@pytest.mark.parametrize("allow", [True, "yes", "true", 1])
@pytest.mark.parametrize("client", ["*", "0.0.0.0/0", "::/0"])
def test_any_host_only_when_allowed(allow, client):
    assert rules.problems(inputs(export(clients=[client]), nfs_server_allow_any_client=allow)) == []
    assert rules.problems(inputs(export(clients=[client]))) == [
        (
            "nfs_server_exports",
            f"the export of '/data1/share': client {client!r} allows any host; list the cluster's own addresses "
            "instead, or set nfs_server_allow_any_client: true if that is really meant",
        )
    ]


@pytest.mark.parametrize(
    ("overrides", "variable", "fragment"),
    [
        # the switch and the default options
        ({"nfs_server_allow_any_client": "maybe"}, "nfs_server_allow_any_client", "'maybe' is not a boolean"),
        ({"nfs_server_allow_any_client": None}, "nfs_server_allow_any_client", "None is not a boolean"),
        ({"nfs_server_allow_weak_options": "maybe"}, "nfs_server_allow_weak_options", "'maybe' is not a boolean"),
        ({"nfs_server_default_options": "rw,sync"}, "nfs_server_default_options", "'rw,sync' is not a list"),
        ({"nfs_server_default_options": ["rw", 1]}, "nfs_server_default_options", "1 in ['rw', 1] is not a string"),
        ({"nfs_server_default_options": ["rw", "nosuch"]}, "nfs_server_default_options", "'nosuch' is not a known"),
        ({"nfs_server_default_options": ["rw", "ro"]}, "nfs_server_default_options", "'rw' and 'ro' contradict"),
        ({"nfs_server_default_options": [INJECTION]}, "nfs_server_default_options", "contains ')'"),
        # the list and its items
        ({"nfs_server_exports": "/data1/share"}, "nfs_server_exports", "'/data1/share' is not a list"),
        ({"nfs_server_exports": {"path": "/data1"}}, "nfs_server_exports", "is not a list"),
        ({"nfs_server_exports": ["/data1/share"]}, "nfs_server_exports", "item 1 ('/data1/share') is not a mapping"),
        ({"nfs_server_exports": [export(opts=["rw"])]}, "nfs_server_exports", "field 'opts' is unknown"),
        # paths
        ({"nfs_server_exports": [{"clients": ["node-b"]}]}, "nfs_server_exports", "item 1: path is missing"),
        ({"nfs_server_exports": [export(path="data1/rel")]}, "nfs_server_exports", "'data1/rel' is not absolute"),
        ({"nfs_server_exports": [export(path="/data1/../etc")]}, "nfs_server_exports", "is not normalised"),
        ({"nfs_server_exports": [export(path="/data1//share")]}, "nfs_server_exports", "is not normalised"),
        ({"nfs_server_exports": [export(path="//")]}, "nfs_server_exports", "path '/' is not normalised"),
        ({"nfs_server_exports": [export(path="/etc/")]}, "nfs_server_exports", "inside the system directory /etc"),
        ({"nfs_server_exports": [export(path="/data1/my share")]}, "nfs_server_exports", "contains whitespace"),
        ({"nfs_server_exports": [export(path="/data1/a\n/b")]}, "nfs_server_exports", "contains whitespace"),
        ({"nfs_server_exports": [export(path="/data1/a(b")]}, "nfs_server_exports", "characters that are not allowed"),
        ({"nfs_server_exports": [export(path=7)]}, "nfs_server_exports", "path 7 is not a path"),
        (
            {"nfs_server_exports": [export(path="/data1/dup"), export(path="/data1/dup/")]},
            "nfs_server_exports",
            "path '/data1/dup' is exported more than once",
        ),
        # clients
        ({"nfs_server_exports": [{"path": "/data1/share"}]}, "nfs_server_exports", "clients is missing or empty"),
        ({"nfs_server_exports": [export(clients=[])]}, "nfs_server_exports", "clients is missing or empty"),
        ({"nfs_server_exports": [export(clients="node-b")]}, "nfs_server_exports", "clients 'node-b' is not a list"),
        ({"nfs_server_exports": [export(clients=[None])]}, "nfs_server_exports", "client None is not a string"),
        ({"nfs_server_exports": [export(clients=["10.213.7.11(rw)"])]}, "nfs_server_exports", "is not a host name"),
        ({"nfs_server_exports": [export(clients=["a,b"])]}, "nfs_server_exports", "client 'a,b' is not a host name"),
        ({"nfs_server_exports": [export(clients=["a b"])]}, "nfs_server_exports", "client 'a b' is not a host name"),
        ({"nfs_server_exports": [export(clients=["*.example.com"])]}, "nfs_server_exports", "no wildcards"),
        ({"nfs_server_exports": [export(clients=["node-?"])]}, "nfs_server_exports", "'node-?' is not a host name"),
        ({"nfs_server_exports": [export(clients=["@trusted"])]}, "nfs_server_exports", "'@trusted' is not a host"),
        ({"nfs_server_exports": [export(clients=["-node"])]}, "nfs_server_exports", "'-node' is not a host name"),
        ({"nfs_server_exports": [export(clients=["node_b"])]}, "nfs_server_exports", "'node_b' is not a host name"),
        ({"nfs_server_exports": [export(clients=["a" * 64])]}, "nfs_server_exports", "is not a host name"),
        ({"nfs_server_exports": [export(clients=["node.", "node..b"])]}, "nfs_server_exports", "'node.' is not"),
        ({"nfs_server_exports": [export(clients=["192.0.2.256"])]}, "nfs_server_exports", "'192.0.2.256' is not"),
        ({"nfs_server_exports": [export(clients=["192.0.2.011"])]}, "nfs_server_exports", "'192.0.2.011' is not"),
        ({"nfs_server_exports": [export(clients=["10.1"])]}, "nfs_server_exports", "'10.1' is not a host name"),
        ({"nfs_server_exports": [export(clients=["fe80::1%eth0"])]}, "nfs_server_exports", "'fe80::1%eth0' is not"),
        ({"nfs_server_exports": [export(clients=["0.0.0.0"])]}, "nfs_server_exports", "the unspecified address"),
        ({"nfs_server_exports": [export(clients=["::"])]}, "nfs_server_exports", "the unspecified address"),
        ({"nfs_server_exports": [export(clients=["node-b\n"])]}, "nfs_server_exports", "is not a host name"),
        ({"nfs_server_exports": [export(clients=["10.0.0.1/24"])]}, "nfs_server_exports", "as 10.0.0.0/24"),
        ({"nfs_server_exports": [export(clients=["10.0.0.0/33"])]}, "nfs_server_exports", "not a network in CIDR"),
        ({"nfs_server_exports": [export(clients=["10.0.0.0/024"])]}, "nfs_server_exports", "not a network in CIDR"),
        ({"nfs_server_exports": [export(clients=["10.0.0.0/255.0.0.0"])]}, "nfs_server_exports", "in CIDR form"),
        ({"nfs_server_exports": [export(clients=["0.0.0.0/0.0.0.0"])]}, "nfs_server_exports", "in CIDR form"),
        ({"nfs_server_exports": [export(clients=["node-b/24"])]}, "nfs_server_exports", "in CIDR form"),
        ({"nfs_server_exports": [export(clients=["10.0.0.0/"])]}, "nfs_server_exports", "in CIDR form"),
        ({"nfs_server_exports": [export(clients=["node-b", "node-b"])]}, "nfs_server_exports", "listed twice"),
        (
            {"nfs_server_exports": [export(clients=["*.example.com"])], "nfs_server_allow_any_client": True},
            "nfs_server_exports",
            "'*.example.com' is not a host name",
        ),
        # options: shapes that end the list or add a client
        ({"nfs_server_exports": [export(options=[INJECTION])]}, "nfs_server_exports", f"option {INJECTION!r}"),
        ({"nfs_server_exports": [export(options=["rw,insecure"])]}, "nfs_server_exports", "contains ','"),
        ({"nfs_server_exports": [export(options=["rw *(rw"])]}, "nfs_server_exports", "contains ' '"),
        ({"nfs_server_exports": [export(options=["rw)"])]}, "nfs_server_exports", "contains ')'"),
        ({"nfs_server_exports": [export(options=["(rw"])]}, "nfs_server_exports", "contains '('"),
        ({"nfs_server_exports": [export(options=["*"])]}, "nfs_server_exports", "contains '*'"),
        ({"nfs_server_exports": [export(options=['"rw"'])]}, "nfs_server_exports", "contains '\"'"),
        ({"nfs_server_exports": [export(options=["rw#x"])]}, "nfs_server_exports", "contains '#'"),
        ({"nfs_server_exports": [export(options=["rw\n/etc"])]}, "nfs_server_exports", "contains '\\n'"),
        ({"nfs_server_exports": [export(options=["sec=sys,krb5"])]}, "nfs_server_exports", "contains ','"),
        ({"nfs_server_exports": [export(options="rw,sync")]}, "nfs_server_exports", "options 'rw,sync' is not a list"),
        ({"nfs_server_exports": [export(options=[None])]}, "nfs_server_exports", "None in options [None] is not"),
        # options: names and values
        ({"nfs_server_exports": [export(options=["no_such_option"])]}, "nfs_server_exports", "is not a known"),
        ({"nfs_server_exports": [export(options=[""])]}, "nfs_server_exports", "option '' is not a known exports(5)"),
        ({"nfs_server_exports": [export(options=["=rw"])]}, "nfs_server_exports", "option '=rw' is not a known"),
        ({"nfs_server_exports": [export(options=["RW"])]}, "nfs_server_exports", "option 'RW' is not a known"),
        ({"nfs_server_exports": [export(options=["rw=1"])]}, "nfs_server_exports", "rw takes no value"),
        ({"nfs_server_exports": [export(options=["no_root_squash="])]}, "nfs_server_exports", "takes no value"),
        ({"nfs_server_exports": [export(options=["fsid"])]}, "nfs_server_exports", "'fsid' needs a value"),
        ({"nfs_server_exports": [export(options=["sec"])]}, "nfs_server_exports", "'sec' needs a value"),
        ({"nfs_server_exports": [export(options=["fsid="])]}, "nfs_server_exports", "the value of fsid must be"),
        ({"nfs_server_exports": [export(options=["fsid==0"])]}, "nfs_server_exports", "the value of fsid must be"),
        ({"nfs_server_exports": [export(options=["fsid=0=1"])]}, "nfs_server_exports", "the value of fsid must be"),
        ({"nfs_server_exports": [export(options=["fsid=abc"])]}, "nfs_server_exports", "the value of fsid must be"),
        ({"nfs_server_exports": [export(options=["fsid=-1"])]}, "nfs_server_exports", "the value of fsid must be"),
        ({"nfs_server_exports": [export(options=["fsid=4294967296"])]}, "nfs_server_exports", "value of fsid"),
        ({"nfs_server_exports": [export(options=["fsid=0x10"])]}, "nfs_server_exports", "value of fsid"),
        (
            {"nfs_server_exports": [export(options=["fsid=6a1cbd0e-3a5f4d1e9b5c0a2b3c4d5e6f"])]},
            "nfs_server_exports",
            "of fsid",
        ),
        (
            {"nfs_server_exports": [export(options=["fsid=6a1cbd0e3a5f4d1e9b5c0a2b3c4d5e6"])]},
            "nfs_server_exports",
            "of fsid",
        ),
        ({"nfs_server_exports": [export(options=["anonuid=-1"])]}, "nfs_server_exports", "value of anonuid must be"),
        ({"nfs_server_exports": [export(options=["anonuid=nobody"])]}, "nfs_server_exports", "value of anonuid"),
        ({"nfs_server_exports": [export(options=["anongid=1.5"])]}, "nfs_server_exports", "value of anongid must"),
        ({"nfs_server_exports": [export(options=["sec=none"])]}, "nfs_server_exports", "the value of sec must be"),
        ({"nfs_server_exports": [export(options=["sec=sys:sys"])]}, "nfs_server_exports", "the value of sec must be"),
        ({"nfs_server_exports": [export(options=["sec=sys:"])]}, "nfs_server_exports", "the value of sec must be"),
        ({"nfs_server_exports": [export(options=["sec=KRB5"])]}, "nfs_server_exports", "the value of sec must be"),
        ({"nfs_server_exports": [export(options=["mountpoint=data1"])]}, "nfs_server_exports", "value of mountpoint"),
        ({"nfs_server_exports": [export(options=["mp=/data1/../x"])]}, "nfs_server_exports", "the value of mp must"),
        ({"nfs_server_exports": [export(options=["mp=/data1/"])]}, "nfs_server_exports", "the value of mp must be"),
        ({"nfs_server_exports": [export(options=["mountpoint="])]}, "nfs_server_exports", "value of mountpoint"),
        ({"nfs_server_exports": [export(options=["refer=/data1"])]}, "nfs_server_exports", "the value of refer must"),
        ({"nfs_server_exports": [export(options=["refer=data1@node-b"])]}, "nfs_server_exports", "value of refer"),
        ({"nfs_server_exports": [export(options=["refer=/data1@"])]}, "nfs_server_exports", "the value of refer"),
        ({"nfs_server_exports": [export(options=["refer=/data1@node-b+"])]}, "nfs_server_exports", "value of refer"),
        ({"nfs_server_exports": [export(options=["refer=/data1@2001:db8::1"])]}, "nfs_server_exports", "of refer"),
        ({"nfs_server_exports": [export(options=["replicas=/d@a:"])]}, "nfs_server_exports", "value of replicas"),
        ({"nfs_server_exports": [export(options=["replicas=/d@a@b"])]}, "nfs_server_exports", "value of replicas"),
        # options: repeated or contradicted
        ({"nfs_server_exports": [export(options=["rw", "rw"])]}, "nfs_server_exports", "'rw' and 'rw' set rw twice"),
        ({"nfs_server_exports": [export(options=["fsid=0", "fsid=1"])]}, "nfs_server_exports", "set fsid twice"),
        ({"nfs_server_exports": [export(options=["mp", "mountpoint=/x"])]}, "nfs_server_exports", "mountpoint twice"),
        ({"nfs_server_exports": [export(options=["sec=sys", "sec=krb5"])]}, "nfs_server_exports", "set sec twice"),
        (
            {"nfs_server_exports": [export(options=["auth_nlm", "insecure_locks"])]},
            "nfs_server_exports",
            "'auth_nlm' and 'insecure_locks' contradict",
        ),
        (
            {"nfs_server_exports": [export(options=["no_root_squash", "all_squash"])]},
            "nfs_server_exports",
            "'all_squash' and 'no_root_squash' contradict",
        ),
        # owner, group, mode
        ({"nfs_server_exports": [export(owner="ml user")]}, "nfs_server_exports", "owner 'ml user' is not a user"),
        ({"nfs_server_exports": [export(owner="root;id")]}, "nfs_server_exports", "owner 'root;id' is not"),
        ({"nfs_server_exports": [export(group="")]}, "nfs_server_exports", "group '' is not a user or group name"),
        ({"nfs_server_exports": [export(group=-1)]}, "nfs_server_exports", "group -1 is not"),
        ({"nfs_server_exports": [export(owner=True)]}, "nfs_server_exports", "owner True is not"),
        ({"nfs_server_exports": [export(mode=493)]}, "nfs_server_exports", "mode 493 is a number"),
        ({"nfs_server_exports": [export(mode="0999")]}, "nfs_server_exports", "mode '0999' is not an octal string"),
        ({"nfs_server_exports": [export(mode="u=rwx")]}, "nfs_server_exports", "mode 'u=rwx' is not an octal"),
        ({"nfs_server_exports": [export(mode="07550")]}, "nfs_server_exports", "mode '07550' is not an octal"),
        ({"nfs_server_exports": [export(mode="75")]}, "nfs_server_exports", "mode '75' is not an octal"),
    ],
)
def test_bad_input_names_the_variable_and_the_problem(overrides, variable, fragment):
    found = rules.problems(inputs(**overrides))
    assert [message for name, message in found if name == variable and fragment in message], found


@pytest.mark.parametrize("group", rules.EXPORT_CONFLICTS)
def test_every_contradiction_is_refused(group):
    # Allowed, so that secure/insecure shows the contradiction alone.
    found = rules.problems(inputs(export(options=list(group)), nfs_server_allow_weak_options=True))
    assert found == [
        (
            "nfs_server_exports",
            f"the export of '/data1/share': options {' and '.join(map(repr, group))} contradict each other; keep one",
        )
    ]


def test_the_injection_of_issue_9_gives_one_clear_problem():
    assert rules.problems(inputs(export(path="/data1/share/", options=["rw", INJECTION]))) == [
        (
            "nfs_server_exports",
            f"the export of '/data1/share': option {INJECTION!r} contains ')', which could end the option list or "
            "add another entry; give exactly one exports(5) option per list item, such as fsid=0",
        )
    ]


def test_each_problem_is_reported():
    found = rules.problems(inputs(export(path="rel", clients=["*", "a b"], options=["rw", "ro"], mode=493)))
    assert len(found) == 5, found


@pytest.mark.parametrize(
    "value",
    [None, 2, "x", {}, [None], [[]], [{"path": None, "clients": {}, "options": 1, "mode": [], "owner": {}}], [{1: 2}]],
)
@pytest.mark.parametrize(
    "variable",
    [
        "nfs_server_exports",
        "nfs_server_default_options",
        "nfs_server_allow_any_client",
        "nfs_server_allow_weak_options",
    ],
)
def test_wrong_types_give_problems_not_exceptions(variable, value):
    found = rules.problems(inputs(**{variable: value}))
    assert found
    assert all(isinstance(name, str) and isinstance(message, str) for name, message in found)


def test_missing_variables_fall_back_to_what_is_safe():
    assert rules.problems({}) == []
    assert rules.problems({"nfs_server_exports": [export(clients=["*"])]})[0][1].endswith("if that is really meant")


def test_messages_leave_the_variable_name_to_the_caller():
    found = rules.problems(
        inputs(export(clients=["*"]), nfs_server_default_options=["x"], nfs_server_allow_any_client="maybe")
    )
    assert len(found) == 3
    assert not [message for name, message in found if message.startswith(name)]


def test_the_role_filter_reads_these_rules():
    assert role_problems(inputs(export(options=[INJECTION])), "nfs_server") == [
        f"nfs_server_exports: {message}" for _unused, message in rules.problems(inputs(export(options=[INJECTION])))
    ]
    assert role_problems(inputs(), "nfs_server") == []


def test_the_exports_file_has_one_line_per_export_with_its_own_options_or_the_defaults():
    exports = [
        {"path": "/data1/share/", "clients": ["192.0.2.11", "192.0.2.0/24"], "options": ["rw", "no_root_squash"]},
        {"path": "/data1/artifacts", "clients": ["node-b"]},
        {"path": "/data1/none", "clients": ["node-b"], "options": None},
    ]
    assert rules.export_lines(exports, ["ro", "sync"]) == [
        "/data1/share 192.0.2.11(rw,no_root_squash) 192.0.2.0/24(rw,no_root_squash)",
        "/data1/artifacts node-b(ro,sync)",
        "/data1/none node-b(ro,sync)",
    ]

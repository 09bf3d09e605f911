# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure parts of the tools/umlbed package: addresses, names, command lines, the recipe hash, the state
files; and its entry points (the directory and ``python3 -m umlbed``) with a command that needs no root."""

import ast
import ipaddress
import json
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest
from checkout import REPO, load_package

umlbed = load_package("tools/umlbed", "umlbed")
cli = import_module("umlbed.__main__")
debian = import_module("umlbed.debian")
host = import_module("umlbed.host")
instance = import_module("umlbed.instance")
kernel = import_module("umlbed.kernel")
network = import_module("umlbed.network")
rootfs = import_module("umlbed.rootfs")
state = import_module("umlbed.state")

BED = network.Bed("mnhst0", ipaddress.IPv4Network("10.213.57.0/24"))


def test_host_takes_the_first_address():
    assert str(BED.host_address) == "10.213.57.1"


@pytest.mark.parametrize("addr", ["10.213.57.10", "10.213.57.254"])
def test_check_address_accepts_hosts_of_the_subnet(addr):
    assert str(BED.check_address(addr)) == addr


@pytest.mark.parametrize(
    ("addr", "message"),
    [
        ("10.213.58.10", "not a host address of the bed subnet"),
        ("10.213.57.0", "not a host address"),
        ("10.213.57.255", "not a host address"),
        ("10.213.57.1", "the host's address"),
        ("master", "not an IPv4 address"),
        ("fd00::1", "not an IPv4 address"),
    ],
)
def test_check_address_refuses_with_a_reason(addr, message):
    with pytest.raises(host.BedError, match=message):
        BED.check_address(addr)


def test_link_names_follow_the_address_and_fit_ifnamsiz():
    assert BED.link_name(ipaddress.IPv4Address("10.213.57.10")) == "mnhst0-10"
    wide = network.Bed("mnhst0", ipaddress.IPv4Network("10.213.0.0/16"))
    assert wide.link_name(ipaddress.IPv4Address("10.213.1.2")) == "mnhst0-258"
    too_long = network.Bed("mnhstorage0", ipaddress.IPv4Network("10.213.0.0/16"))
    with pytest.raises(host.BedError, match="too long"):
        too_long.link_name(ipaddress.IPv4Address("10.213.250.1"))
    # The peer's name (one more character) must fit too: 8 characters of bridge name are the most.
    assert network.peer_name("mnhst0-10") == "mnhst0-10p"
    with pytest.raises(host.BedError, match="max 8"):
        network.Bed("mnhstor09", ipaddress.IPv4Network("10.213.0.0/16")).link_name(
            ipaddress.IPv4Address("10.213.250.1")
        )
    assert (
        network.Bed("mnhstor8", ipaddress.IPv4Network("10.213.0.0/16")).link_name(ipaddress.IPv4Address("10.213.250.1"))
        == "mnhstor8-64001"
    )


def test_mac_is_local_unicast_and_stable():
    mac = network.mac_for(ipaddress.IPv4Address("10.213.57.11"))
    assert mac == "02:6d:6e:d5:39:0b"
    first = int(mac.split(":")[0], 16)
    assert first & 0b10 and not first & 0b1  # locally administered, unicast
    assert network.mac_for(ipaddress.IPv4Address("10.213.57.12")) != mac


def test_forward_rules_accept_within_the_bridge_and_drop_the_rest():
    accept, drop = BED.forward_rules()
    assert accept[:5] == ["FORWARD", "-i", "mnhst0", "-o", "mnhst0"]
    assert accept[-2:] == ["-j", "ACCEPT"]
    assert drop[:6] == ["FORWARD", "-i", "mnhst0", "!", "-o", "mnhst0"]
    assert drop[-2:] == ["-j", "DROP"]
    for rule in (accept, drop):
        assert network.RULE_COMMENT in rule  # so a human can tell whose rule it is


@pytest.mark.parametrize("name", ["master", "worker1", "w-2"])
def test_check_name_accepts(name):
    assert instance.check_name(name) == name


@pytest.mark.parametrize("name", ["", "Master", "1st", "a b", "x" * 25, "../etc"])
def test_check_name_refuses(name):
    with pytest.raises(host.BedError, match="must match"):
        instance.check_name(name)


def test_parse_pairs():
    assert instance.parse_pairs(["master", "10.0.0.2", "worker1", "10.0.0.3"]) == [
        ("master", "10.0.0.2"),
        ("worker1", "10.0.0.3"),
    ]


@pytest.mark.parametrize(
    ("words", "message"),
    [
        ([], "pairs"),
        (["master"], "pairs"),
        (["master", "10.0.0.2", "worker1"], "pairs"),
        (["a", "10.0.0.2", "a", "10.0.0.3"], "name given twice: a"),
        (["a", "10.0.0.2", "b", "10.0.0.2"], "address given twice: 10.0.0.2"),
    ],
)
def test_parse_pairs_refuses(words, message):
    with pytest.raises(host.BedError, match=message):
        instance.parse_pairs(words)


def test_kernel_cmdline():
    argv = instance.kernel_cmdline(
        umid="mnhst0-master",
        uml_dir=Path("/state/uml"),
        mem="512M",
        cow=Path("/state/instances/master/disk.cow"),
        base=Path("/cache/abc/base.img"),
        link="mnhst0-10",
        mac="02:6d:6e:d5:39:0a",
        name="master",
        ip=ipaddress.IPv4Address("10.213.57.10"),
        bed=BED,
    )
    assert "ubd0=/state/instances/master/disk.cow,/cache/abc/base.img" in argv
    assert "root=/dev/ubda" in argv
    # Raw transport on the veth peer (the tap transport cannot attach again after a reboot).
    assert "vec0:transport=raw,ifname=mnhst0-10p,mac=02:6d:6e:d5:39:0a" in argv
    assert "ip=10.213.57.10::10.213.57.1:255.255.255.0::vec0:off" in argv
    assert "systemd.hostname=master" in argv
    assert "umid=mnhst0-master" in argv
    assert "uml_dir=/state/uml" in argv
    # The console goes to stdout (the console log), nothing reads stdin.
    assert "con0=null,fd:1" in argv
    assert "con=null" in argv


def test_ssh_argv_uses_the_bed_key_only():
    argv = instance.ssh_argv(Path("/cache/abc/bed_key"), "10.213.57.10", ["true"])
    assert argv[0] == "ssh"
    assert argv[argv.index("-i") + 1] == "/cache/abc/bed_key"
    assert "IdentitiesOnly=yes" in argv
    assert "BatchMode=yes" in argv
    assert argv[-2:] == ["root@10.213.57.10", "true"]


def test_recipe_hash_follows_every_input():
    base = rootfs.recipe("6.1.176", b"dep")
    digest = rootfs.recipe_hash(base)
    assert len(digest) == 16
    assert rootfs.recipe_hash(rootfs.recipe("6.1.176", b"dep")) == digest
    assert rootfs.recipe_hash(rootfs.recipe("6.1.177", b"dep")) != digest
    assert rootfs.recipe_hash(rootfs.recipe("6.1.176", b"other")) != digest
    changed = dict(base, files={**base["files"], "/etc/extra": "x"})
    assert rootfs.recipe_hash(changed) != digest


def test_recipe_script_installs_everything_and_blocks_nothing_left():
    script = rootfs.chroot_script(rootfs.PACKAGES)
    for pkg in ("nfs-kernel-server", "nfs-common", "openssh-server", "python3-apt", "systemd-sysv", "docker.io"):
        assert pkg in script
    assert "iptables-nft" in script
    assert "systemctl disable nfs-server.service" in script


def test_kernel_version_needs_exactly_one_tree(tmp_path):
    with pytest.raises(host.BedError, match="found none"):
        kernel.kernel_version(tmp_path)
    (tmp_path / "6.1.176").mkdir()
    (tmp_path / "6.1.176" / "modules.dep").write_text("")
    assert kernel.kernel_version(tmp_path) == "6.1.176"
    (tmp_path / "6.1.177").mkdir()
    (tmp_path / "6.1.177" / "modules.dep").write_text("")
    with pytest.raises(host.BedError, match="expected one"):
        kernel.kernel_version(tmp_path)


def test_missing_commands_names_the_packages(tmp_path):
    missing = host.missing_commands(path=str(tmp_path))
    assert missing["patchelf"] == "patchelf"
    assert missing["uml_mconsole"] == "uml-utilities"
    exe = tmp_path / "patchelf"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert "patchelf" not in host.missing_commands(path=str(tmp_path))


def fake_kernel(directory, version="7.2.7", *, complete=True):
    root = directory / "root"
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/linux.uml").write_text("")
    (root / "usr/lib/uml/modules" / version).mkdir(parents=True)
    (root / "usr/lib/uml/modules" / version / "modules.dep").write_text("")
    if complete:
        (directory / "kernel.json").write_text("{}")


def test_a_fetched_kernel_is_reused_without_the_network(tmp_path, monkeypatch):
    monkeypatch.delenv("MNH_UML_KERNEL", raising=False)
    fake_kernel(tmp_path / "kernel" / "7.2um1-aaaa")
    # A fetch that never finished (no kernel.json) is not taken.
    fake_kernel(tmp_path / "kernel" / "7.3um1-bbbb", "7.3.0", complete=False)

    def no_fetch(_root):
        raise AssertionError("fetched although a kernel was there")

    monkeypatch.setattr(kernel, "fetch_kernel", no_fetch)
    found = kernel.ensure_kernel(tmp_path)
    assert found.binary == tmp_path / "kernel/7.2um1-aaaa/root/usr/bin/linux.uml"
    assert found.version == "7.2.7"


def test_without_a_kernel_one_is_fetched(tmp_path, monkeypatch):
    monkeypatch.delenv("MNH_UML_KERNEL", raising=False)
    fetched = []
    monkeypatch.setattr(kernel, "fetch_kernel", lambda root: fetched.append(root) or "fetched")
    (tmp_path / "kernel" / "fetch-leftover").mkdir(parents=True)
    assert kernel.ensure_kernel(tmp_path) == "fetched"
    assert fetched == [tmp_path / "kernel"]
    assert not (tmp_path / "kernel" / "fetch-leftover").exists()


def test_a_given_kernel_is_used_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setenv("MNH_UML_KERNEL", "/usr/bin/linux.uml")
    monkeypatch.setenv("MNH_UML_MODULES", str(tmp_path))
    found = kernel.ensure_kernel(tmp_path / "cache")
    assert found.binary == Path("/usr/bin/linux.uml")
    assert found.modules == tmp_path
    assert not (tmp_path / "cache").exists()


def test_apt_reads_only_its_own_sources_and_lists(tmp_path):
    opts = kernel.apt_options(tmp_path)
    pairs = dict(o.split("=", 1) for o in opts if o != "-o")
    assert pairs["Dir::Etc::SourceList"] == str(tmp_path / "sources.list")
    assert pairs["Dir::Etc::SourceParts"] == "/dev/null"
    assert pairs["Dir::State::Lists"] == str(tmp_path / "lists")
    assert pairs["Dir::Cache"] == str(tmp_path / "apt-cache")


def test_the_base_image_follows_the_kernel(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    fake_kernel(old, "7.2.7")
    fake_kernel(new, "7.3.0")
    assert rootfs.current_recipe(kernel.kernel_from(old))[1] != rootfs.current_recipe(kernel.kernel_from(new))[1]


def test_instance_state_round_trip_and_broken_files_are_skipped(tmp_path):
    inst = state.Instance(
        name="master",
        address="10.213.57.10",
        tap="mnhst0-10",
        mac="02:6d:6e:d5:39:0a",
        umid="mnhst0-master",
        base="/cache/abc/base.img",
        cow=str(tmp_path / "instances/master/disk.cow"),
        console=str(tmp_path / "instances/master/console.log"),
        pid=1234,
    )
    state.save_instance(tmp_path, inst)
    broken = tmp_path / "instances" / "junk" / "instance.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")
    assert state.load_instances(tmp_path) == [inst]
    assert inst.key == Path("/cache/abc/bed_key")
    assert json.loads((tmp_path / "instances/master/instance.json").read_text())["pid"] == 1234


def test_bed_state_defaults_to_nothing_created(tmp_path):
    assert state.load_bed_state(tmp_path) == {"bridge": None, "rules": []}
    state.save_bed_state(tmp_path, {"bridge": "mnhst0", "rules": [["FORWARD", "-j", "ACCEPT"]]})
    assert state.load_bed_state(tmp_path)["rules"] == [["FORWARD", "-j", "ACCEPT"]]


def test_pid_alive_checks_the_umid():
    # This test process is alive but is not a UML kernel of that umid.
    assert not instance.pid_alive(os.getpid(), "mnhst0-master")
    assert not instance.pid_alive(2**22 + 1, "mnhst0-master")


def test_cli_refuses_odd_pairs_before_touching_anything(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(host, "preflight", lambda: None)
    monkeypatch.setattr(cli.os, "geteuid", lambda: 0)
    rc = cli.main(["--state-dir", str(tmp_path / "state"), "--cache-dir", str(tmp_path / "cache"), "up", "m"])
    assert rc == 1
    assert "pairs" in capsys.readouterr().err
    assert not (tmp_path / "state").exists()
    assert not (tmp_path / "cache").exists()


def test_tail_text_drops_colours_and_blank_lines():
    text = "a\r\n\r\n[\x1b[0;32m  OK  \x1b[0m] Started b\r\n\r\nc\n"
    assert instance.tail_text(text, 2) == "[  OK  ] Started b\nc"
    assert instance.tail_text("", 5) == "(empty)"


def test_a_base_image_knows_its_release(tmp_path):
    (tmp_path / "recipe.json").write_text(json.dumps({"suite": "trixie"}))
    assert rootfs.suite_of(tmp_path) == "trixie"
    assert rootfs.suite_of(tmp_path / "missing") is None
    (tmp_path / "recipe.json").write_text("not json")
    assert rootfs.suite_of(tmp_path) is None


def test_an_untested_release_is_refused(monkeypatch):
    monkeypatch.setattr(debian, "DEBIAN_SUITE", "buster")
    with pytest.raises(host.BedError, match="MNH_DEBIAN='buster' is not a tested release"):
        host.preflight()


def test_debian_13_gets_the_docker_command_line_that_its_docker_io_only_recommends():
    assert "docker-cli" in rootfs.packages("trixie")
    assert "docker-cli" not in rootfs.packages("bookworm")  # bookworm's docker.io holds it
    assert set(rootfs.PACKAGES) <= set(rootfs.packages("trixie"))


@pytest.mark.parametrize(
    ("argv", "cwd"),
    [([sys.executable, "tools/umlbed"], REPO), ([sys.executable, "-m", "umlbed"], REPO / "tools")],
)
def test_the_entry_points_run_the_command_line(argv, cwd, tmp_path):
    # `list` needs no root and touches nothing: it reads the (empty) state directory.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run(
        [*argv, "--state-dir", str(tmp_path), "list"], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert (res.returncode, res.stdout, res.stderr) == (0, "[]\n", "")


MODULES = ["debian", "host", "kernel", "state", "rootfs", "network", "instance", "__main__"]


def test_each_module_imports_only_the_modules_listed_above_it():
    # The order of umlbed/__init__.py's list: kernel.py never imports rootfs.py, and so on.
    listed = [line.split()[1] for line in Path(umlbed.__file__).read_text().splitlines() if line.startswith("#   ")]
    assert listed == [f"{m}.py" for m in MODULES]
    for i, name in enumerate(MODULES):
        tree = ast.parse((REPO / "tools/umlbed" / f"{name}.py").read_text())
        used = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("umlbed")):
                base = (node.module or "").removeprefix("umlbed").strip(".")
                used |= {base} if base else {alias.name for alias in node.names}
        assert used <= set(MODULES[:i]), f"{name}.py imports {sorted(used - set(MODULES[:i]))}"

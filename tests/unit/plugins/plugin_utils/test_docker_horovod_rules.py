# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The docker_horovod role's input rules (plugins/plugin_utils/docker_horovod_rules.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.module_utils import docker_horovod_values as values
from ansible_collections.multinode.horovod.plugins.plugin_utils import cluster, gate, roles
from ansible_collections.multinode.horovod.plugins.plugin_utils import docker_horovod_rules as rules
from checkout import REPO, load

ROLE = REPO / "roles" / "docker_horovod"
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
role_rules = load("plugins/filter/role_rules.py", "mnh_role_rules_docker_horovod")


def defaults() -> dict[str, Any]:
    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


@pytest.fixture
def ca_bundle(tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    path.write_text(PEM)
    return str(path)


def good(ca_bundle: str) -> dict[str, Any]:
    """Every option set to a sound, non-default value (as the Molecule scenario does, and more)."""
    return {
        **defaults(),
        "docker_horovod_image": "registry.example.org:5000/ml/horovod:0.28.1-cpu@sha256:" + "a" * 64,
        "docker_horovod_image_archive": "/data1/share/images/horovod-0.28.1.tar",
        "docker_horovod_image_archive_checksum": "sha256:" + "0123456789abcdefABCDEF" * 2 + "0123456789abcdefABCD",
        "docker_horovod_container_name": "horovod.node_1-a",
        "docker_horovod_share_root": "/srv/share",
        "docker_horovod_shm_size": "1536m",
        "docker_horovod_restart_policy": "always",
        "docker_horovod_volumes": [
            {"source": "/scratch", "target": "/scratch", "read_only": False},
            {"source": "/srv/data", "target": "/root/.sshd", "read_only": True},
        ],
        "docker_horovod_devices": [
            {"path": "/dev/fuse", "container_path": "", "permissions": "rwm"},
            {"path": "/dev/nvidia-caps", "container_path": "/dev/caps", "permissions": "r"},
        ],
        "docker_horovod_env": {"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": 4, "_FLAG": True, "RATIO": 0.5, "EMPTY": ""},
        "docker_horovod_idle_process_patterns": ["^jupyter-lab", r"tensorboard --logdir \S+"],
        "docker_horovod_pip_packages": [
            {"name": "tqdm", "version": "4.66.1"},
            {"name": "tensorboardX", "version": "2.6.2.2"},
            {"name": "torch", "version": "2.1.0+cpu"},
        ],
        "docker_horovod_pip_index_url": "https://pypi.example.org/simple",
        "docker_horovod_pip_wheel_dir": "/srv/share/wheels",
        "docker_horovod_extra_ca_bundle": ca_bundle,
        "docker_horovod_nvidia_repo_key_fingerprint": "c95b 321b 61e8 8c18 09c4  f759 ddca e044 f796 ecb0",
    }


def test_the_role_defaults_are_sound() -> None:
    assert rules.problems(defaults()) == []


def test_sound_settings_are_accepted(ca_bundle: str) -> None:
    assert rules.problems(good(ca_bundle)) == []


@pytest.mark.parametrize("value", ["auto", "Auto", True, False, "yes", "false", "on", 0])
def test_rdma_is_auto_or_any_boolean(value: object) -> None:
    assert rules.problems({"docker_horovod_rdma": value}) == []


def test_left_out_variables_take_the_role_defaults() -> None:
    assert rules.problems({}) == []


def test_reserved_targets_are_the_roles_constants() -> None:
    # The container spec mounts these (test_docker_horovod_filters.py: the fixed targets are the reserved ones).
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    targets = [
        role_vars["__docker_horovod_sshd_dir"],
        role_vars["__docker_horovod_container_ssh_dir"],
        role_vars["__docker_horovod_own_dir"],
    ]
    assert list(rules.RESERVED_TARGETS) == targets


def test_restart_policies_are_the_argument_spec_choices() -> None:
    spec = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert list(rules.RESTART_POLICIES) == options["docker_horovod_restart_policy"]["choices"]


def volume(**item: Any) -> list[dict[str, Any]]:
    return [{"source": "/scratch", "target": "/scratch", "read_only": False, **item}]


def device(**item: Any) -> list[dict[str, Any]]:
    return [{"path": "/dev/fuse", "container_path": "", "permissions": "rwm", **item}]


def package(**item: Any) -> list[dict[str, Any]]:
    return [{"name": "tqdm", "version": "4.66.1", **item}]


# (variable, bad value, fragment of the message)
BAD: list[tuple[str, Any, str]] = [
    ("docker_horovod_image", "multinode-horovod/sshbox", "'multinode-horovod/sshbox' has no tag; use"),
    ("docker_horovod_image", "horovod/horovod:latest", "has the tag latest, which moves"),
    ("docker_horovod_image", "horovod/horovod@sha256:" + "a" * 64, "has no tag"),
    ("docker_horovod_image", "Horovod/Horovod:0.28.1", "'Horovod/Horovod:0.28.1' is not a valid image reference"),
    ("docker_horovod_image", "horovod/horovod:", "is not a valid image reference"),
    ("docker_horovod_image", "horovod/horovod:0.28.1 ", "is not a valid image reference"),
    ("docker_horovod_image", "horovod/horovod:0.28.1\n", "is not a valid image reference"),
    ("docker_horovod_image", "", "'' is not a valid image reference"),
    ("docker_horovod_image", None, "None is not a string"),
    ("docker_horovod_image", ["horovod/horovod:0.28.1"], "is not a string"),
    ("docker_horovod_image_archive", "images/horovod.tar", "'images/horovod.tar' is not an absolute, normalised file"),
    ("docker_horovod_image_archive", "/data1/share/../images/h.tar", "is not an absolute, normalised file path"),
    ("docker_horovod_image_archive", "/data1//share/h.tar", "is not an absolute, normalised file path"),
    ("docker_horovod_image_archive", "//data1/share/h.tar", "is not an absolute, normalised file path"),
    ("docker_horovod_image_archive", "/data1/share/", "is not an absolute, normalised file path"),
    ("docker_horovod_image_archive", "/", "is not an absolute, normalised file path"),
    ("docker_horovod_image_archive", "/data1/h.tar\n", "is not an absolute, normalised file path"),
    ("docker_horovod_image_archive", None, "None is not a string; use the absolute path of a docker save archive"),
    ("docker_horovod_image_archive_checksum", "abc", "'abc' is not a sha256 checksum; use \"sha256:\" and the 64"),
    ("docker_horovod_image_archive_checksum", "a" * 64, "is not a sha256 checksum"),
    ("docker_horovod_image_archive_checksum", "sha256:" + "a" * 63, "is not a sha256 checksum"),
    ("docker_horovod_image_archive_checksum", "sha256:" + "g" * 64, "is not a sha256 checksum"),
    ("docker_horovod_image_archive_checksum", "md5:" + "a" * 32, "is not a sha256 checksum"),
    ("docker_horovod_image_archive_checksum", "sha256:" + "a" * 64 + "\n", "is not a sha256 checksum"),
    ("docker_horovod_image_archive_checksum", None, "None is not a string"),
    ("docker_horovod_container_name", "h", "'h' is not a valid container name"),
    ("docker_horovod_container_name", "-horovod", "is not a valid container name"),
    ("docker_horovod_container_name", "/horovod", "is not a valid container name"),
    ("docker_horovod_container_name", "horo vod", "is not a valid container name"),
    ("docker_horovod_container_name", "horovod\n", "is not a valid container name"),
    ("docker_horovod_container_name", "", "is not a valid container name"),
    ("docker_horovod_container_name", 42, "42 is not a valid container name"),
    ("docker_horovod_share_root", "/", "'/' is not normalised"),
    ("docker_horovod_share_root", "/etc", "inside the system directory /etc"),
    ("docker_horovod_share_root", "/usr/local/share", "inside the system directory /usr"),
    ("docker_horovod_share_root", "/data1/../etc", "is not normalised"),
    ("docker_horovod_share_root", "/data1/", "is not normalised"),
    ("docker_horovod_share_root", "data1", "is not absolute"),
    ("docker_horovod_share_root", "/data 1", "characters that are not allowed"),
    ("docker_horovod_share_root", None, "None is not a path"),
    ("docker_horovod_shm_size", "lots", "'lots' is not a size Docker can parse"),
    ("docker_horovod_shm_size", "0", "'0' is zero bytes; give a size of at least one byte"),
    ("docker_horovod_shm_size", "0g", "'0g' is zero bytes; give a size of at least one byte"),
    ("docker_horovod_shm_size", "00 MB", "is zero bytes"),
    ("docker_horovod_shm_size", 0, "0 is zero bytes"),
    ("docker_horovod_shm_size", "-1g", "is not a size Docker can parse"),
    ("docker_horovod_shm_size", "1.5g", "is not a size Docker can parse"),
    ("docker_horovod_shm_size", "16x", "is not a size Docker can parse"),
    ("docker_horovod_shm_size", True, "True is not a size Docker can parse"),
    ("docker_horovod_shm_size", None, "None is not a size"),
    ("docker_horovod_rdma", "maybe", "'maybe' is not auto, true or false; leave it auto"),
    ("docker_horovod_rdma", None, "None is not auto, true or false"),
    ("docker_horovod_rdma", ["auto"], "is not auto, true or false"),
    ("docker_horovod_restart_policy", "no", "'no' is not allowed; use unless-stopped or always"),
    ("docker_horovod_restart_policy", "on-failure:3", "is not allowed"),
    ("docker_horovod_restart_policy", "Always", "is not allowed"),
    ("docker_horovod_restart_policy", None, "None is not allowed"),
    ("docker_horovod_volumes", "/scratch:/scratch", "'/scratch:/scratch' is not a list"),
    ("docker_horovod_volumes", {"source": "/a", "target": "/b"}, "is not a list"),
    ("docker_horovod_volumes", ["/scratch:/scratch"], "item 1 ('/scratch:/scratch') is not a mapping"),
    ("docker_horovod_volumes", volume(source="scratch"), "source 'scratch' is not an absolute path"),
    ("docker_horovod_volumes", volume(target="scratch"), "target 'scratch' is not an absolute path"),
    ("docker_horovod_volumes", volume(source=None), "source None is not an absolute path"),
    ("docker_horovod_volumes", volume(source="/a:/b"), "source '/a:/b' contains ':'"),
    ("docker_horovod_volumes", volume(target="/root/.ssh"), "target '/root/.ssh' is mounted by the role itself"),
    ("docker_horovod_volumes", volume(target="/root/.ssh/"), "is mounted by the role itself"),
    ("docker_horovod_volumes", volume(target="/etc/multinode-horovod/sshd"), "is mounted by the role itself"),
    ("docker_horovod_volumes", volume(target="/etc/multinode-horovod/container"), "is mounted by the role itself"),
    ("docker_horovod_volumes", volume(target="/data1"), "target '/data1' is mounted by the role itself"),
    ("docker_horovod_volumes", volume(target="/data1/./"), "is mounted by the role itself"),
    ("docker_horovod_devices", "/dev/fuse", "'/dev/fuse' is not a list"),
    ("docker_horovod_devices", ["/dev/fuse"], "item 1 ('/dev/fuse') is not a mapping"),
    ("docker_horovod_devices", device(path="/tmp/fuse"), "path '/tmp/fuse' is not an absolute, normalised path under"),
    ("docker_horovod_devices", device(path="/dev/../etc/shadow"), "is not an absolute, normalised path under /dev"),
    ("docker_horovod_devices", device(path="/dev/"), "is not an absolute, normalised path under /dev"),
    ("docker_horovod_devices", device(path="/dev/a:b"), "path '/dev/a:b' contains ':'"),
    ("docker_horovod_devices", device(path=None), "path None is not"),
    ("docker_horovod_devices", device(container_path="/fuse"), "container_path '/fuse' is not an absolute"),
    ("docker_horovod_devices", device(container_path=None), "container_path None is not"),
    ("docker_horovod_devices", device(permissions="rwx"), "permissions 'rwx' is not a combination of r, w and m"),
    ("docker_horovod_devices", device(permissions="rr"), "permissions 'rr' is not a combination"),
    ("docker_horovod_devices", device(permissions="rwmr"), "is not a combination"),
    ("docker_horovod_devices", device(permissions=""), "permissions '' is not a combination"),
    ("docker_horovod_devices", device(permissions="rwm\n"), "is not a combination"),
    ("docker_horovod_devices", device(permissions=None), "permissions None is not a combination"),
    ("docker_horovod_env", ["NCCL_DEBUG=INFO"], "['NCCL_DEBUG=INFO'] is not a mapping"),
    ("docker_horovod_env", "NCCL_DEBUG=INFO", "is not a mapping"),
    ("docker_horovod_env", {"NCCL-DEBUG": "INFO"}, "'NCCL-DEBUG' is not a valid variable name"),
    ("docker_horovod_env", {"1X": "y"}, "'1X' is not a valid variable name"),
    ("docker_horovod_env", {"A=B": "y"}, "is not a valid variable name"),
    ("docker_horovod_env", {"": "y"}, "'' is not a valid variable name"),
    ("docker_horovod_env", {1: "y"}, "1 is not a valid variable name"),
    ("docker_horovod_env", {"NCCL_DEBUG": None}, "NCCL_DEBUG has no value (null)"),
    ("docker_horovod_env", {"PATHS": ["/a", "/b"]}, "PATHS's value ['/a', '/b'] is not a string, number or boolean"),
    ("docker_horovod_env", {"CONF": {"a": 1}}, "is not a string, number or boolean"),
    ("docker_horovod_idle_process_patterns", "jupyter", "'jupyter' is not a list"),
    ("docker_horovod_idle_process_patterns", ["jupyter("], "'jupyter(' is not a valid regular expression"),
    ("docker_horovod_idle_process_patterns", [3], "3 is not a string"),
    ("docker_horovod_idle_process_patterns", [None], "None is not a string"),
    ("docker_horovod_pip_packages", "tqdm==4.66.1", "'tqdm==4.66.1' is not a list"),
    ("docker_horovod_pip_packages", ["tqdm==4.66.1"], "item 1 ('tqdm==4.66.1') is not a mapping"),
    ("docker_horovod_pip_packages", package(version=">=4"), "version '>=4' is not an exact version"),
    ("docker_horovod_pip_packages", package(version="4.66.1\n"), "is not an exact version"),
    ("docker_horovod_pip_packages", package(version=""), "version '' is not an exact version"),
    ("docker_horovod_pip_packages", package(version=4.66), "version 4.66 is not a string; quote it"),
    ("docker_horovod_pip_packages", package(version=None), "version None is not a string"),
    ("docker_horovod_pip_packages", package(name="tqdm[cli]"), "name 'tqdm[cli]' is not a distribution name"),
    ("docker_horovod_pip_packages", package(name="tqdm-"), "is not a distribution name"),
    ("docker_horovod_pip_packages", package(name="tqdm\n"), "is not a distribution name"),
    ("docker_horovod_pip_packages", package(name=None), "name None is not a distribution name"),
    ("docker_horovod_pip_packages", [*package(), *package()], "'tqdm' is listed twice (also as 'tqdm')"),
    (
        "docker_horovod_pip_packages",
        [*package(), {"name": "TQDM", "version": "4.66.2"}],
        "'TQDM' is listed twice (also as 'tqdm')",
    ),
    (
        "docker_horovod_pip_packages",
        [{"name": "tensorboard_x", "version": "1"}, {"name": "tensorboard.X", "version": "1"}],
        "'tensorboard.X' is listed twice (also as 'tensorboard_x')",
    ),
    ("docker_horovod_pip_index_url", "pypi.org/simple", "'pypi.org/simple' is not an http(s) URL"),
    ("docker_horovod_pip_index_url", "ftp://pypi.org/simple", "is not an http(s) URL"),
    ("docker_horovod_pip_index_url", "https://", "is not an http(s) URL"),
    ("docker_horovod_pip_index_url", "https://pypi.org/sim ple", "is not an http(s) URL"),
    ("docker_horovod_pip_index_url", None, "None is not a string"),
    ("docker_horovod_pip_wheel_dir", "/data1", "'/data1' is not below the share root '/data1'"),
    ("docker_horovod_pip_wheel_dir", "/data10/wheels", "is not below the share root '/data1'"),
    ("docker_horovod_pip_wheel_dir", "/srv/wheels", "is not below the share root"),
    ("docker_horovod_pip_wheel_dir", "/data1/share/../../etc", "is not normalised"),
    ("docker_horovod_pip_wheel_dir", "wheels", "'wheels' is not absolute"),
    ("docker_horovod_pip_wheel_dir", "/data1/my wheels", "characters that are not allowed"),
    ("docker_horovod_pip_wheel_dir", None, "None is not a string"),
    ("docker_horovod_share_mounts", "/data1/share", "'/data1/share' is not a list"),
    ("docker_horovod_share_mounts", ["/data1/share", "/srv/other"], "item 2 ('/srv/other') is not the share root"),
    ("docker_horovod_share_mounts", ["/data10/share"], "is not the share root '/data1' or below it"),
    ("docker_horovod_share_mounts", ["/data1/share/"], "item 1: '/data1/share/' is not normalised"),
    ("docker_horovod_share_mounts", ["share"], "item 1: 'share' is not absolute"),
    ("docker_horovod_share_mounts", [None], "item 1: None is not a path"),
    ("docker_horovod_extra_ca_bundle", "/nonexistent/ca.pem", "'/nonexistent/ca.pem' is not a file on the controller"),
    ("docker_horovod_extra_ca_bundle", "ca.pem", "'ca.pem' is not an absolute path"),
    ("docker_horovod_extra_ca_bundle", "/", "is not a file on the controller"),
    ("docker_horovod_extra_ca_bundle", None, "None is not a string"),
    ("docker_horovod_nvidia_repo_key_fingerprint", "DDCAE044F796ECB0", "'DDCAE044F796ECB0' is not an OpenPGP"),
    ("docker_horovod_nvidia_repo_key_fingerprint", "", "is not an OpenPGP fingerprint"),
    ("docker_horovod_nvidia_repo_key_fingerprint", "0x" + "A" * 40, "is not an OpenPGP fingerprint"),
    ("docker_horovod_nvidia_repo_key_fingerprint", None, "None is not an OpenPGP fingerprint"),
]


@pytest.mark.parametrize(("variable", "value", "fragment"), BAD, ids=[f"{v}={x!r}" for v, x, _unused in BAD])
def test_each_bad_input_is_refused_by_name(variable: str, value: Any, fragment: str) -> None:
    found = rules.problems({**defaults(), variable: value})
    assert [name for name, _unused in found] == [variable], found
    message = found[0][1]
    assert fragment in message
    assert not message.startswith(variable)


def test_a_pem_file_without_certificates_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "key.pem"
    path.write_text("-----BEGIN PRIVATE KEY-----\n")
    found = rules.problems({"docker_horovod_extra_ca_bundle": str(path)})
    assert found == [
        (
            "docker_horovod_extra_ca_bundle",
            f"{str(path)!r} holds no PEM certificate (no '-----BEGIN CERTIFICATE-----' line); use the absolute path "
            'of a PEM file of CA certificates on the controller, or "" for none',
        )
    ]


def test_a_binary_ca_bundle_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ca.der"
    path.write_bytes(b"\xff\xfe" + PEM.encode())
    found = rules.problems({"docker_horovod_extra_ca_bundle": str(path)})
    assert [(name, "is not a text file" in message) for name, message in found] == [
        ("docker_horovod_extra_ca_bundle", True)
    ]


def test_a_directory_is_not_a_ca_bundle(tmp_path: Path) -> None:
    found = rules.problems({"docker_horovod_extra_ca_bundle": str(tmp_path)})
    assert [name for name, _unused in found] == ["docker_horovod_extra_ca_bundle"]
    assert "is not a file on the controller" in found[0][1]


def test_the_wheel_dir_follows_the_share_root(ca_bundle: str) -> None:
    settings = {**good(ca_bundle), "docker_horovod_pip_wheel_dir": "/data1/share/wheels"}
    assert [name for name, _unused in rules.problems(settings)] == ["docker_horovod_pip_wheel_dir"]


def test_share_mounts_at_or_below_the_share_root_are_accepted() -> None:
    assert rules.problems({"docker_horovod_share_mounts": ["/data1", "/data1/share", "/data1/share/scratch"]}) == []


def test_a_broken_share_root_is_reported_once() -> None:
    found = rules.problems({"docker_horovod_share_root": "/etc", "docker_horovod_pip_wheel_dir": "/etc/wheels"})
    assert [name for name, _unused in found] == ["docker_horovod_share_root", "docker_horovod_pip_wheel_dir"]
    assert "is not below the share root" not in found[1][1]


def test_every_bad_item_is_reported() -> None:
    found = rules.problems(
        {
            "docker_horovod_volumes": [*volume(source="a"), 7, *volume(target="/root/.ssh")],
            "docker_horovod_env": {"A-B": 1, "C": None},
        }
    )
    assert [(name, message.split(" ", 2)[:2]) for name, message in found] == [
        ("docker_horovod_volumes", ["item", "1"]),
        ("docker_horovod_volumes", ["item", "2"]),
        ("docker_horovod_volumes", ["item", "3"]),
        ("docker_horovod_env", ["'A-B'", "is"]),
        ("docker_horovod_env", ["C", "has"]),
    ]


WRONG_TYPES = [None, True, 0, -1, 1.5, "", "x", [], ["x"], [None], [{}], {}, {"x": None}, object()]


@pytest.mark.parametrize("variable", sorted(roles.spec("docker_horovod")))
@pytest.mark.parametrize("value", WRONG_TYPES, ids=lambda value: type(value).__name__)
def test_a_value_of_any_type_gives_problems_not_exceptions(variable: str, value: Any) -> None:
    found = rules.problems({variable: value})
    assert all(name == variable and isinstance(message, str) and message for name, message in found)


@pytest.mark.parametrize(
    "variable",
    [
        "docker_horovod_image",
        "docker_horovod_image_archive",
        "docker_horovod_container_name",
        "docker_horovod_share_root",
        "docker_horovod_shm_size",
        "docker_horovod_restart_policy",
        "docker_horovod_volumes",
        "docker_horovod_devices",
        "docker_horovod_env",
        "docker_horovod_idle_process_patterns",
        "docker_horovod_pip_packages",
        "docker_horovod_pip_index_url",
        "docker_horovod_pip_wheel_dir",
        "docker_horovod_extra_ca_bundle",
    ],
)
def test_null_is_refused_by_name(variable: str) -> None:
    assert [name for name, _unused in rules.problems({variable: None})] == [variable]


def test_the_filter_prefixes_the_variable() -> None:
    lines = role_rules.role_problems({"docker_horovod_shm_size": "lots"}, "docker_horovod")
    assert lines == [
        "docker_horovod_shm_size: 'lots' is not a size Docker can parse; use a whole number above 0 with an optional "
        "unit b, k, m, g or t (for example 16g or 1536m)"
    ]


@pytest.mark.parametrize("value", [0, -5, "0", "ten", 1.5, None, True])
def test_a_load_timeout_must_be_whole_seconds(value: Any) -> None:
    found = rules.problems({"docker_horovod_image_load_timeout": value})
    assert [name for name, _unused in found] == ["docker_horovod_image_load_timeout"], found
    assert "is not a number of seconds; use a whole number of 1 or more" in found[0][1]


def test_a_load_timeout_may_be_long() -> None:
    assert rules.problems({"docker_horovod_image_load_timeout": "3600"}) == []


def test_a_checksum_needs_an_archive() -> None:
    found = rules.problems({"docker_horovod_image_archive_checksum": "sha256:" + "a" * 64})
    assert found == [
        (
            "docker_horovod_image_archive_checksum",
            f"'sha256:{'a' * 64}' is set but docker_horovod_image_archive is empty: only an archive is checked "
            "(a pulled image is verified by its registry); set docker_horovod_image_archive, or leave the "
            "checksum empty",
        )
    ]


# --- docker_horovod_ulimits (the site's horovod_container_ulimits) ------------------------------------


@pytest.mark.parametrize(
    ("ulimits", "message"),
    [
        ([{"name": "core", "soft": 0, "hard": 0}], "give name (one of memlock, stack, nofile), soft and hard"),
        ([{"name": "nofile", "soft": 1024}], "give name (one of memlock, stack, nofile), soft and hard"),
        ([{"name": "nofile", "soft": "many", "hard": 1024}], "soft and hard must be whole numbers, -1 for unlimited"),
        ([{"name": "stack", "soft": -2, "hard": -1}], "soft and hard must be whole numbers, -1 for unlimited"),
        ([{"name": "nofile", "soft": 4096, "hard": 1024}], "soft 4096 is above hard 1024; Docker refuses it"),
        ([{"name": "memlock", "soft": -1, "hard": 1024}], "soft -1 is above hard 1024; Docker refuses it"),
        (["nofile=1024:1024"], "is not a mapping; use one such as {name: nofile, soft: 65536, hard: 65536}"),
        ([{"name": "nofile", "soft": 1, "hard": 2}, {"name": "nofile", "soft": 1, "hard": 2}], "nofile is given twice"),
    ],
)
def test_bad_ulimits_are_refused(ulimits, message, ca_bundle):
    found = rules.problems({**good(ca_bundle), "docker_horovod_ulimits": ulimits})
    assert [variable for variable, _text in found] == ["docker_horovod_ulimits"]
    assert message in found[0][1]


def test_sound_ulimits_pass_and_reach_the_container(ca_bundle):
    ulimits = [{"name": "nofile", "soft": "65536", "hard": 65536}, {"name": "memlock", "soft": -1, "hard": -1}]
    assert rules.problems({**good(ca_bundle), "docker_horovod_ulimits": ulimits}) == []
    assert values.ulimits(ulimits, rdma=False) == ["nofile:65536:65536", "memlock:-1:-1"]
    # RDMA's unlimited memlock stays unless the user gives one; the user's replaces it.
    assert values.ulimits([{"name": "stack", "soft": 8, "hard": 8}], rdma=True) == ["memlock:-1:-1", "stack:8:8"]
    assert values.ulimits([{"name": "memlock", "soft": 1, "hard": 2}], rdma=True) == ["memlock:1:2"]
    spec = values.container_spec({"share_root": "/data1", "shm_size": "1g", "docker_horovod_ulimits": ulimits})
    assert spec["ulimits"] == ["nofile:65536:65536", "memlock:-1:-1"]


def test_the_gate_and_the_role_name_the_setting_for_bad_ulimits():
    groups = {"horovod_master": ["a"], "horovod_workers": [], "horovod_cluster": ["a"]}
    bad = [{"name": "core", "soft": 0, "hard": 0}]
    hostvars = {"a": {"ansible_host": "192.0.2.20", "horovod_container_ulimits": bad}}
    errors = [line for line in gate.check(groups, hostvars).errors if "ulimits" in line]
    assert len(errors) == 1
    assert errors[0].startswith("horovod_container_ulimits (as docker_horovod_ulimits): item 1 ({'name': 'core'")
    names = cluster.setting_names(cluster.Site(groups, hostvars), "a", "docker_horovod")
    (line,) = role_rules.role_problems({"docker_horovod_ulimits": bad}, "docker_horovod", names)
    assert line == errors[0].removesuffix(" (on a)")


# --- docker_horovod_gpu_ids (the site's per-host horovod_gpu_ids) -------------------------------------


@pytest.mark.parametrize(
    ("gpu_ids", "message"),
    [
        ("0,1", "'0,1' is not a list; give nvidia-smi -L indexes such as [0, 1]"),
        ([0, "GPU-1"], "'GPU-1' is not a GPU index (a whole number from 0, as nvidia-smi -L lists)"),
        ([-1], "-1 is not a GPU index"),
        ([0, "1", 1], "GPU 1 is given twice; give each GPU once"),
    ],
)
def test_bad_gpu_ids_are_refused(gpu_ids, message, ca_bundle):
    found = rules.problems({**good(ca_bundle), "docker_horovod_gpu_ids": gpu_ids})
    assert [variable for variable, _text in found] == ["docker_horovod_gpu_ids"]
    assert message in found[0][1]


def test_gpu_ids_give_the_container_those_gpus_only(ca_bundle):
    assert rules.problems({**good(ca_bundle), "docker_horovod_gpu_ids": [0, "3"]}) == []
    options = {"share_root": "/data1", "shm_size": "1g", "docker_horovod_gpu_count": "8"}
    assert values.container_spec({**options, "docker_horovod_gpu_ids": [0, "3"]})["device_requests"] == [
        {"driver": "nvidia", "device_ids": ["0", "3"], "capabilities": [["gpu"]]}
    ]
    assert values.container_spec({**options, "docker_horovod_gpu_ids": []})["device_requests"] == [
        {"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}
    ]


def test_the_gate_names_the_per_host_gpu_ids():
    groups = {"horovod_master": ["a"], "horovod_workers": ["b"], "horovod_cluster": ["a", "b"]}
    hostvars = {
        "a": {"ansible_host": "192.0.2.20", "horovod_gpu_ids": [0, 1]},
        "b": {"ansible_host": "192.0.2.21", "horovod_gpu_ids": ["x"]},
    }
    report = gate.check(groups, hostvars)
    assert [line for line in report.errors if "gpu_ids" in line] == [
        "horovod_gpu_ids (as docker_horovod_gpu_ids): 'x' is not a GPU index (a whole number from 0, as "
        "nvidia-smi -L lists) (on b)"
    ]  # a per-host setting: the hosts may differ
    assert report.inputs["a"]["docker_horovod"]["docker_horovod_gpu_ids"] == ["0", "1"]
    site = cluster.Site(groups, hostvars)
    assert [node["slots"] for node in site.nodes] == [2, 1]

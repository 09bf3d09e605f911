# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The container_sshd role's input rules (plugins/plugin_utils/container_sshd_rules.py)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.plugin_utils import container_sshd_rules as rules
from ansible_collections.multinode.horovod.plugins.plugin_utils import roles
from checkout import REPO, load

ROLE = REPO / "roles" / "container_sshd"
role_rules = load("plugins/filter/role_rules.py", "mnh_role_rules_container_sshd")


def defaults() -> dict[str, Any]:
    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def test_the_role_defaults_are_sound() -> None:
    assert rules.problems(defaults()) == []


def test_left_out_variables_take_the_role_defaults() -> None:
    assert rules.problems({}) == []


@pytest.mark.parametrize(
    "settings",
    [
        {"container_sshd_port": 1, "container_sshd_wait_timeout": 1},
        {"container_sshd_port": 65535},
        {"container_sshd_port": "2222", "container_sshd_wait_timeout": "60"},
        {"container_sshd_host_key_types": ["ecdsa"]},
        {"container_sshd_host_key_types": ["rsa", "ecdsa", "ed25519"]},
        {"container_sshd_listen_addresses": ["192.0.2.10", "0.0.0.0", "2001:db8::10", "[::1]", "::", "fe80::1%eth0"]},
        {"container_sshd_container_name": "my-horovod.1_a"},
        {"container_sshd_allow_from": ["192.0.2.10", "198.51.100.0/24", "2001:db8::10", "2001:db8::/64"]},
        {"container_sshd_allow_from": ["192.0.2.7/24"]},
        {"container_sshd_allow_from": ["0.0.0.0/1", "0.0.0.0/8", "128.0.0.0/1"]},  # not every address
        {"container_sshd_allow_from": ["*", "0.0.0.0/0", "::/0", "0.0.0.0"], "container_sshd_allow_any_source": True},
        {"container_sshd_allow_from": ["::"], "container_sshd_allow_any_source": "yes"},
    ],
)
def test_sound_settings_are_accepted(settings: dict[str, Any]) -> None:
    assert rules.problems({**defaults(), **settings}) == []


def test_key_types_are_those_the_role_makes() -> None:
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    spec = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    choices = spec["argument_specs"]["main"]["options"]["container_sshd_host_key_types"]["choices"]
    assert list(rules.KEY_TYPES) == role_vars["__container_sshd_all_key_types"] == choices


# (variable, bad value, fragment of the message)
BAD: list[tuple[str, Any, str]] = [
    ("container_sshd_port", 0, "0 is not a TCP port; use a whole number from 1 to 65535"),
    ("container_sshd_port", 65536, "65536 is not a TCP port"),
    ("container_sshd_port", 70000, "70000 is not a TCP port"),
    ("container_sshd_port", -22, "-22 is not a TCP port"),
    ("container_sshd_port", "0", "'0' is not a TCP port"),
    ("container_sshd_port", "22x", "'22x' is not a TCP port"),
    ("container_sshd_port", "", "'' is not a TCP port"),
    ("container_sshd_port", 2222.0, "2222.0 is not a TCP port"),
    ("container_sshd_port", True, "True is not a TCP port"),
    ("container_sshd_port", None, "None is not a TCP port"),
    ("container_sshd_port", [2222], "[2222] is not a TCP port"),
    ("container_sshd_host_key_types", [], "the list is empty and sshd needs a host key"),
    ("container_sshd_host_key_types", "ed25519", "'ed25519' is not a list"),
    ("container_sshd_host_key_types", None, "None is not a list"),
    ("container_sshd_host_key_types", ["dsa"], "'dsa' is not a host key type this role makes; use ed25519, ecdsa, rsa"),
    ("container_sshd_host_key_types", ["ED25519"], "'ED25519' is not a host key type"),
    ("container_sshd_host_key_types", ["ssh-rsa"], "'ssh-rsa' is not a host key type"),
    ("container_sshd_host_key_types", [""], "'' is not a host key type"),
    ("container_sshd_host_key_types", [None], "None is not a host key type"),
    ("container_sshd_host_key_types", ["rsa", "ed25519", "rsa"], "rsa is listed more than once"),
    ("container_sshd_listen_addresses", [""], "'' is not an IP address"),
    ("container_sshd_listen_addresses", ["  "], "'  ' is not an IP address"),
    ("container_sshd_listen_addresses", [" 192.0.2.10"], "' 192.0.2.10' is not an IP address"),
    ("container_sshd_listen_addresses", ["node-a"], "'node-a' is not an IP address"),
    ("container_sshd_listen_addresses", ["192.0.2.10:2222"], "'192.0.2.10:2222' is not an IP address"),
    ("container_sshd_listen_addresses", ["[::1]:2222"], "'[::1]:2222' is not an IP address"),
    ("container_sshd_listen_addresses", ["10.0.0.0/8"], "'10.0.0.0/8' is not an IP address"),
    ("container_sshd_listen_addresses", ["192.0.2.300"], "is not an IP address"),
    ("container_sshd_listen_addresses", ["[192.0.2.10]"], "'[192.0.2.10]' puts an IPv4 address in brackets"),
    ("container_sshd_listen_addresses", [None], "None is not a string"),
    ("container_sshd_listen_addresses", [3232235786], "3232235786 is not a string"),
    ("container_sshd_listen_addresses", "192.0.2.10", "'192.0.2.10' is not a list"),
    ("container_sshd_listen_addresses", None, "None is not a list"),
    ("container_sshd_listen_addresses", ["192.0.2.10", "192.0.2.10"], "192.0.2.10 is listed more than once"),
    ("container_sshd_allow_from", ["node-a"], "'node-a' is not an IP address or network"),
    ("container_sshd_allow_from", ["node-a"], "sshd matches sources by address, not by name"),
    ("container_sshd_allow_from", [""], "'' is not an IP address or network"),
    ("container_sshd_allow_from", ["192.0.2.0/33"], "'192.0.2.0/33' is not an IP address or network"),
    ("container_sshd_allow_from", ["[2001:db8::1]"], "is not an IP address or network"),
    ("container_sshd_allow_from", ["192.0.2.10:22"], "is not an IP address or network"),
    ("container_sshd_allow_from", ["192.0.2.*"], "is not an IP address or network"),
    ("container_sshd_allow_from", [None], "None is not a string"),
    ("container_sshd_allow_from", "192.0.2.10", "'192.0.2.10' is not a list"),
    ("container_sshd_allow_from", ["192.0.2.10", "192.0.2.10"], "192.0.2.10 is listed more than once"),
    ("container_sshd_allow_from", ["0.0.0.0/0"], "'0.0.0.0/0' admits every address, so root may log in from anywhere"),
    ("container_sshd_allow_from", ["192.0.2.10", "::/0"], "'::/0' admits every address"),
    ("container_sshd_allow_from", ["10.1.2.3/0"], "'10.1.2.3/0' admits every address"),
    ("container_sshd_allow_from", ["0.0.0.0"], "or set container_sshd_allow_any_source: true if that is really meant"),
    ("container_sshd_allow_from", ["::"], "'::' admits every address"),
    ("container_sshd_allow_from", ["*"], "'*' admits every address"),
    ("container_sshd_allow_any_source", "maybe", "'maybe' is not a boolean; use true or false"),
    ("container_sshd_allow_any_source", None, "None is not a boolean"),
    ("container_sshd_container_name", "h", "'h' is not a valid container name"),
    ("container_sshd_container_name", "-horovod", "is not a valid container name"),
    ("container_sshd_container_name", "horo vod", "is not a valid container name"),
    ("container_sshd_container_name", "horovod;rm", "is not a valid container name"),
    ("container_sshd_container_name", "", "'' is not a valid container name"),
    ("container_sshd_container_name", None, "None is not a valid container name"),
    ("container_sshd_wait_timeout", 0, "0 is not a number of seconds above 0"),
    ("container_sshd_wait_timeout", -5, "-5 is not a number of seconds above 0"),
    ("container_sshd_wait_timeout", "soon", "'soon' is not a number of seconds"),
    ("container_sshd_wait_timeout", None, "None is not a number of seconds"),
    ("container_sshd_wait_timeout", False, "False is not a number of seconds"),
]


@pytest.mark.parametrize(("variable", "value", "fragment"), BAD, ids=[f"{v}={x!r}" for v, x, _unused in BAD])
def test_each_bad_input_is_refused_by_name(variable: str, value: Any, fragment: str) -> None:
    found = rules.problems({**defaults(), variable: value})
    assert [name for name, _unused in found] == [variable], found
    message = found[0][1]
    assert fragment in message
    assert not message.startswith(variable)


def test_every_bad_item_is_reported() -> None:
    found = rules.problems({"container_sshd_host_key_types": ["dsa", "rsa", "rsa", 7]})
    assert [message.split(" ")[0] for _unused, message in found] == ["'dsa'", "7", "rsa"]


WRONG_TYPES = [None, True, 0, -1, 1.5, "", "x", [], ["x"], [None], [{}], {}, {"x": None}, object()]


@pytest.mark.parametrize("variable", sorted(roles.spec("container_sshd")))
@pytest.mark.parametrize("value", WRONG_TYPES, ids=lambda value: type(value).__name__)
def test_a_value_of_any_type_gives_a_problem_not_an_exception(variable: str, value: Any) -> None:
    found = rules.problems({variable: value})
    if variable == "container_sshd_allow_any_source" and value in (True, 0):
        assert found == [], "a boolean as Ansible reads one"
    elif not (variable in ("container_sshd_listen_addresses", "container_sshd_allow_from") and value == []):
        # [] is every address, any source
        assert found, f"{variable}={value!r} was accepted"
    assert all(name == variable and isinstance(message, str) and message for name, message in found)


def test_the_filter_prefixes_the_variable() -> None:
    assert role_rules.role_problems({"container_sshd_port": 0}, "container_sshd") == [
        "container_sshd_port: 0 is not a TCP port; use a whole number from 1 to 65535 that is not the host's own "
        "sshd port (default 12345)"
    ]

# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A role's inputs as the role sees them: the options of its argument spec, over its defaults.

A role lists its variables once, in meta/argument_specs.yml (the option) and defaults/main.yml (its
default); nothing else lists them. Its controller-side rules are ``problems(inputs) -> [(variable,
message)]`` in ``plugins/plugin_utils/<role>_rules.py``. The role runs them first, on every option of
its spec (tasks/assert.yml: ``vars | multinode.horovod.role_problems('<role>')``), and the site's
gate runs them on what the site will hand the role, before any play touches a host.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import jinja2.sandbox
import yaml

COLLECTION = Path(__file__).resolve().parents[2]
ROLES = ("nfs_server", "nfs_client", "docker_horovod", "container_sshd", "ssh_trust", "horovod_launch")
Problems = list[tuple[str, str]]


def _load(role: str, *parts: str) -> Any:
    path = COLLECTION.joinpath("roles", role, *parts)
    return yaml.safe_load(path.read_text()) if path.is_file() else None


@functools.cache
def spec(role: str) -> dict[str, Any]:
    """The options of the role's argument spec (entry point main)."""
    specs = (_load(role, "meta", "argument_specs.yml") or {}).get("argument_specs", {})
    return specs.get("main", {}).get("options", {})


@functools.cache
def defaults(role: str) -> dict[str, Any]:
    """The role's defaults/main.yml, as written (a default may be a template)."""
    return _load(role, "defaults", "main.yml") or {}


def inputs(role: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The options of the role's spec as the role sees them: `given` over the defaults, the defaults
    that are templates rendered as Ansible renders them. An option with neither is left out."""
    kept = {name: value for name, value in defaults(role).items() if name not in given}
    return _resolve({name: value for name, value in {**kept, **given}.items() if name in spec(role)}, kept)


def rules(role: str) -> Callable[[Mapping[str, Any]], Problems] | None:
    """The ``problems`` function of the role's rules module (None for a role without one)."""
    try:
        module = importlib.import_module(f"ansible_collections.multinode.horovod.plugins.plugin_utils.{role}_rules")
    except ModuleNotFoundError:
        return None
    return module.problems


def _resolve(values: Mapping[str, Any], templated: Iterable[str]) -> dict[str, Any]:
    """`values` with those named in `templated` (the role's own defaults, such as
    "{{ horovod_launch_share_dir }}/runs") rendered, each once, after the ones it refers to.

    Every other value is what the role gets, already templated by Ansible or raw text the inventory
    marked ``!unsafe``: it is never rendered, nor is the text a default takes in from it."""
    # Only the collection's own defaults are rendered; the sandbox keeps even those from Python's internals.
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False)
    out = dict(values)
    pending: dict[str, set[str]] = {}
    for name in templated:
        value = out.get(name)
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            with contextlib.suppress(jinja2.TemplateError):
                pending[name] = set(jinja2.meta.find_undeclared_variables(env.parse(value)))
    while ready := [name for name, refs in pending.items() if not refs & set(pending)]:
        for name in ready:
            del pending[name]
            with contextlib.suppress(jinja2.TemplateError):  # left as it is: the role's check reports it
                out[name] = env.from_string(out[name]).render(out)
    return out

# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""A setting is one row: SETTINGS in plugins/plugin_utils/cluster.py.

INPUTS is built from it; what cannot be built from it is checked against it here:

- the cluster_input lookups of playbooks/site.yml and playbooks/vars/launch.yml hand each role exactly
  the role variables INPUTS maps, each under its own name;
- inventories/example/group_vars/horovod_cluster.yml shows every setting, with its default;
- each row of the README's settings table names settings of the table, with their defaults;
- each document that says which settings are per host names exactly the table's.

Each check returns its problems as lines that say what to add where; a test feeds each a broken copy.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.plugin_utils import cluster, roles

REPO = Path(__file__).resolve().parents[2]
SITE_FILES = ("playbooks/site.yml", "playbooks/vars/launch.yml")
EXAMPLE = "inventories/example/group_vars/horovod_cluster.yml"
LOOKUP = re.compile(
    r"^\s*(?P<key>\w+):\s*[>|-]*\s*\n?\s*\"?\{\{\s*lookup\('multinode\.horovod\.cluster_input',\s*'(?P<name>\w+)'", re.M
)
# The documents that say which settings are per host, and the sentence that does.
PER_HOST_DOCS = {
    "README.md": r"Per host there are only [^.]*?:(?P<text>.*?)\. Every other",
    "docs/architecture.md": r"per host there are only(?P<text>.*?)\. A node address",
    EXAMPLE: r"\(only(?P<text>[^)]*?)are per host\)",
}


def read(path: str) -> str:
    return (REPO / path).read_text()


def lookups(texts: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
    """{file: [(the variable set, the variable it looks up)]}: every cluster_input lookup of a role variable."""
    return {
        path: [(m["key"], m["name"]) for m in LOOKUP.finditer(text) if m["name"] not in cluster.BY_NAME]
        for path, text in texts.items()
    }


def lookup_problems(texts: dict[str, str]) -> list[str]:
    found = lookups(texts)
    problems = [
        f"{path}: {key} looks up {name}; each role variable takes its own value" for path, pairs in found.items()
        for key, name in pairs if key != name
    ]  # fmt: skip
    looked_up = {name for pairs in found.values() for _key, name in pairs}
    # Every role the site runs is told which settings its inputs came from, so its checks name them.
    mapped = set(cluster.BY_VARIABLE) | {f"__{role}_setting_names" for role in cluster.INPUTS}
    problems += [
        f"{variable}: mapped in cluster.py but no playbook hands it to {cluster.role_of(variable.strip('_'))}; add "
        f"`{variable}: \"{{{{ lookup('multinode.horovod.cluster_input', '{variable}') }}}}\"` to the role's "
        f"include in {SITE_FILES[1] if variable.startswith('horovod_launch_') else SITE_FILES[0]}"
        for variable in sorted(mapped - looked_up)
    ]
    problems += [
        f"{variable}: looked up in the playbooks, but cluster.py maps no such role variable"
        for variable in sorted(looked_up - mapped)
    ]
    return problems


def example_problems(text: str) -> list[str]:
    shown = {m[1]: m[2] for m in re.finditer(r"^# (horovod_\w+): (.*?)(?:[ \t]+#.*)?$", text, re.M)}
    problems = []
    for setting in cluster.SETTINGS:
        line = f"# {setting.name}: {yaml.safe_dump(setting.default, default_flow_style=True).strip()}"
        line = line.removesuffix("\n...").removesuffix(" ...")
        if setting.default is None:
            if setting.name not in text:
                problems.append(f"{EXAMPLE}: {setting.name} is not shown; say what it is: {setting.doc}")
        elif setting.name not in shown:
            problems.append(f"{EXAMPLE}: {setting.name} is not shown; add `{line}  # {setting.doc}`")
        elif yaml.safe_load(shown[setting.name]) != setting.default:
            problems.append(
                f"{EXAMPLE}: {setting.name} shows {shown[setting.name]}, its default is {setting.default!r}"
            )
    problems += [
        f"{EXAMPLE}: {name} is no setting of cluster.SETTINGS" for name in shown if name not in cluster.BY_NAME
    ]
    return problems


def readme_problems(text: str) -> list[str]:
    """Each row of the settings table (between its header and the first line that is no row)."""
    table = text.split("| setting | default | what it is |", 1)[1].split("\n\n", 1)[0]
    problems = []
    for row in table.splitlines()[2:]:
        names_cell, default_cell = row.split("|")[1:3]
        names = re.findall(r"`([^`]+)`", names_cell)
        values = re.findall(r"`([^`]+)`", default_cell)
        for index, name in enumerate(names):
            if name not in cluster.BY_NAME:
                problems.append(f"README.md: {name} is no setting of cluster.SETTINGS")
                continue
            shown = values[index] if len(values) == len(names) else values[0] if values else None
            default = cluster.BY_NAME[name].default
            if shown is not None and not shown.startswith("<") and yaml.safe_load(shown) != default:
                problems.append(f"README.md: {name} shows the default {shown}, the table's is {default!r}")
    return problems


def per_host_problems(texts: dict[str, str]) -> list[str]:
    per_host = {s.name for s in cluster.SETTINGS if not s.cluster_wide}
    problems = []
    for path, pattern in PER_HOST_DOCS.items():
        match = re.search(pattern, " ".join(texts[path].replace("#", " ").split()), re.S)
        named = set(re.findall(r"horovod_\w+", match["text"])) if match else set()
        if named != per_host:
            problems.append(
                f"{path}: says the per-host settings are {sorted(named)}; the table's are {sorted(per_host)}"
            )
    return problems


def test_the_playbooks_look_up_exactly_the_mapping():
    assert lookup_problems({path: read(path) for path in SITE_FILES}) == []


def test_a_missing_or_stray_lookup_is_found():
    texts = {path: read(path) for path in SITE_FILES}
    texts[SITE_FILES[0]] = texts[SITE_FILES[0]].replace(
        "docker_horovod_shm_size: \"{{ lookup('multinode.horovod.cluster_input', 'docker_horovod_shm_size') }}\"",
        "docker_horovod_shm_size: \"{{ lookup('multinode.horovod.cluster_input', 'docker_horovod_shm') }}\"",
    )
    problems = lookup_problems(texts)
    assert problems[0] == (
        "playbooks/site.yml: docker_horovod_shm_size looks up docker_horovod_shm; each role variable takes its own "
        "value"
    )
    assert problems[1].startswith(
        "docker_horovod_shm_size: mapped in cluster.py but no playbook hands it to docker_horovod"
    )
    assert problems[2] == "docker_horovod_shm: looked up in the playbooks, but cluster.py maps no such role variable"
    assert len(problems) == 3


def test_the_example_inventory_shows_every_setting():
    assert example_problems(read(EXAMPLE)) == []


def test_a_setting_missing_from_the_example_is_found():
    text = re.sub(r"^# horovod_shm_size: .*\n", "", read(EXAMPLE), flags=re.M)
    text = text.replace("# horovod_ssh_port: 12345", "# horovod_ssh_port: 2222")
    assert example_problems(text) == [
        f"{EXAMPLE}: horovod_shm_size is not shown; add `# horovod_shm_size: 16g  # the container's /dev/shm`",
        f"{EXAMPLE}: horovod_ssh_port shows 2222, its default is 12345",
    ]


def test_the_readme_table_agrees_with_the_settings():
    assert readme_problems(read("README.md")) == []


def test_a_wrong_readme_row_is_found():
    text = read("README.md").replace("| `horovod_ssh_port` | `12345` |", "| `horovod_ssh_prot` | `12345` |")
    text = text.replace('| `horovod_run_name` | `""` |', "| `horovod_run_name` | `run` |")
    assert readme_problems(text) == [
        "README.md: horovod_ssh_prot is no setting of cluster.SETTINGS",
        "README.md: horovod_run_name shows the default run, the table's is ''",
    ]


def test_the_documents_name_the_per_host_settings_of_the_table():
    assert per_host_problems({path: read(path) for path in PER_HOST_DOCS}) == []


def test_a_document_with_another_per_host_setting_is_found(monkeypatch: pytest.MonkeyPatch):
    row = cluster.BY_NAME["horovod_shm_size"]
    monkeypatch.setattr(
        cluster, "SETTINGS", (*cluster.SETTINGS, type(row)("horovod_gpu_x", "list", "", (), None, False))
    )
    problems = per_host_problems({path: read(path) for path in PER_HOST_DOCS})
    assert [line.split(":")[0] for line in problems] == list(PER_HOST_DOCS)


@pytest.mark.parametrize("setting", cluster.SETTINGS, ids=str)
def test_a_row_names_role_variables_of_the_argument_specs(setting: Any):
    for variable in setting.becomes:
        assert variable in roles.spec(cluster.role_of(variable)), f"{setting.name}: {variable} is no role option"
    assert setting.doc and "\n" not in setting.doc


# --- the site hands each role the names of the settings its inputs came from ---------------------------

GROUPS = {"horovod_master": ["gpu-a"], "horovod_workers": ["gpu-b"], "horovod_cluster": ["gpu-a", "gpu-b"]}


def hostvars(**master: Any) -> dict[str, dict[str, Any]]:
    return {"gpu-a": {"ansible_host": "192.0.2.20", **master}, "gpu-b": {"ansible_host": "192.0.2.21"}}


def test_the_site_names_the_settings_behind_a_roles_inputs():
    names = cluster.setting_names(cluster.Site(GROUPS, hostvars()), "gpu-a", "horovod_launch")
    assert names["horovod_launch_ssh_port"] == "horovod_ssh_port"
    assert names["horovod_launch_runs_dir"] == "horovod_artifact_dir"
    assert names["horovod_launch_hosts.address"] == "horovod_node_address"
    assert names["horovod_launch_hosts.slots"] == "horovod_slots"
    assert "horovod_launch_image_ids" not in names  # read from the nodes, no setting
    # A role variable the site takes from the inventory when set there is the user's own.
    own = cluster.setting_names(cluster.Site(GROUPS, hostvars(horovod_launch_runs_dir="/x")), "gpu-a", "horovod_launch")
    assert "horovod_launch_runs_dir" not in own


def test_a_roles_check_names_the_setting_the_user_set():
    role_rules = pytest.importorskip("ansible_collections.multinode.horovod.plugins.filter.role_rules")
    names = cluster.setting_names(cluster.Site(GROUPS, hostvars()), "gpu-a", "container_sshd")
    bad = {"container_sshd_port": 0, "container_sshd_container_name": "horovod"}
    alone = role_rules.role_problems(bad, "container_sshd")
    site = role_rules.role_problems(bad, "container_sshd", names)
    assert alone and all(line.startswith("container_sshd_port: ") for line in alone)
    assert site == [f"horovod_ssh_port (as container_sshd_port): {line.split(': ', 1)[1]}" for line in alone]


def test_the_lookup_hands_a_role_its_setting_names():
    lookup = pytest.importorskip("ansible_collections.multinode.horovod.plugins.lookup.cluster_input")
    variables = {"groups": GROUPS, "hostvars": hostvars(), "inventory_hostname": "gpu-b"}
    assert lookup.cluster_input(variables, "__docker_horovod_setting_names") == cluster.setting_names(
        cluster.Site(GROUPS, hostvars()), "gpu-b", "docker_horovod"
    )
    assert lookup.cluster_input(variables, "__docker_horovod_setting_names")["docker_horovod_image"] == "horovod_image"


# --- a host's slots: one decision, for the site's node list and the probe play alike -------------------


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ({}, {"slots": 1, "source": "0 GPU(s) found", "problem": ""}),
        ({"docker_horovod_gpu_count": "2"}, {"slots": 2, "source": "2 GPU(s) found", "problem": ""}),
        ({"docker_horovod_gpu_count": 2, "horovod_slots": 1}, {"slots": 1, "source": "horovod_slots", "problem": ""}),
        ({"horovod_slots": 4}, {"slots": 4, "source": "horovod_slots", "problem": ""}),  # not probed yet
    ],
)
def test_a_hosts_slots(host: dict[str, Any], expected: dict[str, Any]):
    assert cluster.slots_of("gpu-a", host) == expected
    assert cluster.nodes(["gpu-a"], {"gpu-a": host})[0]["slots"] == expected["slots"]


def test_slots_above_the_gpus_found_stop_the_run_naming_both():
    assert cluster.slots_of("gpu-a", {"docker_horovod_gpu_count": 2, "horovod_slots": 4})["problem"] == (
        "horovod_slots is 4 on gpu-a, but the node has 2 GPU(s) (nvidia-smi -L). Lower horovod_slots to at most 2, "
        "or remove it to run one process per GPU."
    )


def test_the_gpus_of_horovod_gpu_ids_are_the_slots_and_must_be_listed():
    host = {"docker_horovod_gpu_count": 4, "horovod_gpu_ids": [0, 2]}
    assert cluster.slots_of("gpu-a", host, listed=[0, 1, 2, 3]) == {
        "slots": 2,
        "source": "2 GPU(s) of horovod_gpu_ids",
        "problem": "",
    }
    assert cluster.slots_of("gpu-a", {**host, "horovod_gpu_ids": ["0", "5"]}, listed=[0, 1, 2, 3])["problem"] == (
        "horovod_gpu_ids on gpu-a: GPU 5 is not one the NVIDIA driver lists there (nvidia-smi -L: 0, 1, 2, 3). "
        "Give indexes that nvidia-smi -L lists, or remove horovod_gpu_ids to give the container every GPU."
    )
    assert cluster.slots_of("gpu-a", {**host, "horovod_slots": 3}, listed=[0, 1, 2, 3])["problem"].startswith(
        "horovod_slots is 3 on gpu-a, but horovod_gpu_ids gives it 2 GPU(s). Lower horovod_slots to at most 2"
    )
    assert cluster.slots_of("gpu-a", host)["problem"] == ""  # before the probe read the GPUs


def test_the_gpus_a_node_s_facts_name_never_become_its_slots():
    """horovod_gpu_ids decides a node's slots, which the master's hostfile takes: the gate's value, never one
    a worker's module result set as a fact (which Ansible puts above the inventory)."""
    forged = {"horovod_gpu_ids": [0, 1, 2, 3], "ansible_facts": {"horovod_gpu_ids": [0, 1, 2, 3]}}
    judged = {"gpu-a": {"address": "192.0.2.10", "slots": None, "gpu_ids": [0]}}
    assert cluster.slots_of("gpu-a", forged, judged)["slots"] == 1
    with pytest.raises(ValueError, match="horovod_gpu_ids is set by a fact the node returned"):
        cluster.slots_of("gpu-a", forged)

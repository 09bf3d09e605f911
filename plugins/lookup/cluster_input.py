# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: cluster_input
author: multinode.horovod contributors (!UNKNOWN)
version_added: 0.1.0
short_description: What the site hands a role variable on this host, or one of the site's settings
description:
  - For a role variable, the value the site's mapping gives it on the current host, from the site's settings
    and the inventory groups (C(INPUTS) in C(plugins/plugin_utils/cluster.py)). It is the one definition of
    what C(playbooks/site.yml) hands the roles and what the gate checks before any play runs. Only what the value
    needs is read (the node list only for the variables that hold one).
  - For a setting (C(horovod_*)), the inventory's value on the current host, or its default; a trailing
    C(/) of a path is dropped.
  - For C(__<role>_setting_names), what the site hands the role with its inputs, the setting each role variable
    comes from on the current host (a dict), so that the role's own checks name the settings the user set.
  - Reads the play's C(groups), C(hostvars) and C(inventory_hostname).
options:
  _terms:
    description: >-
      One role variable, such as C(docker_horovod_image), one setting, such as C(horovod_share_dir), or
      C(__<role>_setting_names), such as C(__docker_horovod_setting_names).
    required: true
    type: list
    elements: str
  node_ips:
    description:
      - The IPv4 addresses of each node by its name, as the current node resolves the cluster's addresses
        (filter C(multinode.horovod.cluster_node_ips)).
      - Needed by C(container_sshd_listen_addresses) and C(container_sshd_allow_from) when a node is given by
        a host name.
    type: dict
"""

EXAMPLES = r"""
- name: Run the container with the site's image
  ansible.builtin.include_role:
    name: multinode.horovod.docker_horovod
  vars:
    docker_horovod_image: "{{ lookup('multinode.horovod.cluster_input', 'docker_horovod_image') }}"
"""

RETURN = r"""
_raw:
  description: The value of each term on the current host.
  type: list
  elements: raw
"""

from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.multinode.horovod.plugins.plugin_utils import cluster


def cluster_input(variables: dict[str, Any], name: str, node_ips: Any = None) -> Any:
    """The value of role variable or setting `name` on the host of `variables`."""
    # The gate's judged addresses and slots, from this host's own copy (a set_fact, which no fact a node
    # returns can outrank).
    judged = (variables.get(cluster.GATE_FACT) or {}).get("nodes")
    site = cluster.Site(variables["groups"], variables["hostvars"], node_ips=node_ips, judged=judged)
    host = variables["inventory_hostname"]
    if name in cluster.BY_NAME:
        return site.settings(host)[name]
    role = name.removeprefix("__").removesuffix("_setting_names")
    if name == f"__{role}_setting_names" and role in cluster.INPUTS:
        return cluster.setting_names(site, host, role)
    if name not in cluster.BY_VARIABLE:
        raise AnsibleLookupError(f"cluster_input: {name} is neither a setting of the site nor a role variable it sets")
    value = cluster.value_of(site, host, name)
    if value is cluster.OMIT:
        raise AnsibleLookupError(f"cluster_input: {name} needs the nodes' IPv4 addresses (node_ips)")
    return value


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        self.set_options(var_options=variables, direct=kwargs)
        node_ips = self.get_option("node_ips")
        return [cluster_input(variables or {}, str(term), node_ips) for term in terms]

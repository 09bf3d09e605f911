#!/usr/bin/python
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read what the directory of a horovod_launch run tells of it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: horovod_run_info
short_description: Read the state of a horovod_launch run from its directory on the share
description:
  - Reads the files the run's launch script writes beside itself (C(horovod-launch.sh), C(started),
    C(finished), C(rc), C(launcher.log)), C(stopped) (written by the role's stop), C(hosts.log) (an elastic
    run's discovery script) and, for a run that failed, the output of the rank horovodrun names as the
    first to fail. multinode.horovod.horovod_launch reads an earlier run of the same name before it decides
    whether to start it, and the run's end once it is over.
  - It only reads.
version_added: 0.1.0
author: multinode.horovod contributors (!UNKNOWN)
options:
  path:
    description: The run's directory (C(horovod_launch_runs_dir)/NAME), absolute.
    type: path
    required: true
  launchers:
    description:
      - Command lines of the launch scripts that run in the master's container (the preflight lists them).
        A run whose C(horovod-launch.sh) is among them is running.
    type: list
    elements: str
    default: []
  tail_lines:
    description: Lines of the failing rank's output and of C(launcher.log) returned for a run that failed.
    type: int
    default: 40
attributes:
  check_mode:
    description: It only reads; RV(check_mode) tells whether it ran in check mode.
    support: full
"""

EXAMPLES = r"""
- name: Read the run
  multinode.horovod.horovod_run_info:
    path: "{{ horovod_launch_runs_dir }}/run-0123456789ab"
    launchers: "{{ horovod_launch_preflight.launchers }}"
  register: run
"""

RETURN = r"""
state:
  description:
    - C(new) (never started), C(running) (its launch script is among O(launchers)), C(interrupted) (started,
      no exit status, not running), C(finished) (rc 0), C(failed) or C(stopped) (by the role's stop).
  returned: always
  type: str
started:
  description: When the run started, in epoch seconds; null when it has not.
  returned: always
  type: int
finished_at:
  description:
    - When the run ended, in epoch seconds; null while it has not.
    - Not C(finished), a result key Ansible reserves for async jobs (ansible-core 2.21 turns it into a bool).
  returned: always
  type: int
exit_status:
  description: horovodrun's exit status (124 when the time limit stopped it); null while the run has none.
  returned: always
  type: int
duration_s:
  description: Seconds from start to end; null while the run has not ended.
  returned: always
  type: int
elastic:
  description: Whether the run has a C(hosts.log), which only an elastic run's discovery script writes.
  returned: always
  type: bool
host_sets:
  description: An elastic run's host sets in order, each C({since, hosts}) (epoch seconds, C(ADDRESS:SLOTS) items).
  returned: always
  type: list
  elements: dict
failed_rank:
  description: For a run that failed, the rank horovodrun names as the first to fail; null when it names none.
  returned: always
  type: int
failed_exit_code:
  description: That rank's exit code as horovodrun prints it; null when it prints none.
  returned: always
  type: int
launcher_tail:
  description: For a run that failed, the last O(tail_lines) lines of C(launcher.log); else empty.
  returned: always
  type: str
rank_output:
  description: The last O(tail_lines) lines of the failing rank's stdout and stderr, each under a C(==> PATH <==) line.
  returned: always
  type: str
check_mode:
  description: Whether the module ran in check mode (from C(--check) or a task's C(check_mode)).
  returned: always
  type: bool
"""

from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.multinode.horovod.plugins.module_utils.horovod_run import read


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "launchers": {"type": "list", "elements": "str", "default": []},
            "tail_lines": {"type": "int", "default": 40},
        },
        supports_check_mode=True,
    )
    params = module.params
    found = read(Path(params["path"]), params["launchers"], params["tail_lines"])
    module.exit_json(changed=False, check_mode=module.check_mode, **found)


if __name__ == "__main__":
    main()

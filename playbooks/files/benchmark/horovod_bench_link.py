# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Measure the links between the cluster's containers with iperf3, from the master's container.

Run as ``python3 -c CODE PLAN`` (playbooks/benchmark.yml), PLAN being the plan's ``link`` as JSON
(plugins/module_utils/horovod_bench.py). The containers run with the host's network, so binding to a
node's cluster address measures the interface Horovod uses; the others are reached over the
containers' ssh with the pinned host keys, as horovodrun does. Every host must have iperf3, else
nothing is measured and ``reason`` names the hosts. Each iperf3 server serves one client and exits,
under ``timeout``; ``left`` names any server still running afterwards. Prints one JSON object.
"""

import json
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List  # Python 3.6: no PEP 585/604 forms


class Hosts:
    def __init__(self, plan: Dict[str, Any]) -> None:
        self.local, self.addresses, self.ssh = plan["local"], plan["hosts"], plan["ssh_argv"]

    def argv(self, host: str, command: List[str]) -> List[str]:
        return (
            command
            if host == self.local
            else [*self.ssh, self.addresses[host], " ".join(shlex.quote(word) for word in command)]
        )

    def run(self, host: str, command: List[str], timeout: float) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                self.argv(host, command),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                universal_newlines=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(exc.cmd, 124, str(exc.stdout or ""), f"timed out after {timeout:.0f} s")

    def each(self, look: Callable[[str], Any]) -> List[Any]:
        with ThreadPoolExecutor(max_workers=8) as pool:
            return list(pool.map(look, list(self.addresses)))


def measure(hosts: Hosts, client: str, server: str, plan: Dict[str, Any]) -> Dict[str, Any]:
    port, seconds = str(plan["port"]), plan["seconds"]
    server_address, client_address = hosts.addresses[server], hosts.addresses[client]
    serving = subprocess.Popen(
        hosts.argv(server, ["timeout", str(seconds + 30), "iperf3", "-s", "-1", "-B", server_address, "-p", port]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
    )
    command = ["iperf3", "-c", server_address, "-B", client_address, "-p", port,
               "-t", str(seconds), "-P", str(plan["streams"]), "-J"]  # fmt: skip
    result: Dict[str, Any] = {"bits_per_second": None, "error": None}
    deadline = time.monotonic() + 15
    while True:
        res = hosts.run(client, command, timeout=seconds + 30)
        try:
            answer = json.loads(res.stdout) if res.stdout.strip() else {}
        except json.JSONDecodeError:
            answer = {}
        error = answer.get("error") or (res.stderr.strip() if res.returncode else "")
        # The server may not listen yet: try again for a while.
        if not (error and "refused" in str(error) and serving.poll() is None and time.monotonic() < deadline):
            break
        time.sleep(0.3)
    if error or res.returncode:
        result["error"] = f"iperf3 client on {client}: {error or res.stdout.strip()[-300:]} (rc {res.returncode})"
    else:
        result["bits_per_second"] = answer["end"]["sum_received"]["bits_per_second"]
    try:
        out, _unused = serving.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        serving.kill()
        out, _unused = serving.communicate()
    if result["error"] and out.strip():
        result["error"] = f"{result['error']}; server on {server}: {out.strip()[-300:]}"
    return result


def main(plan: Dict[str, Any]) -> Dict[str, Any]:
    hosts = Hosts(plan)
    out: Dict[str, Any] = {key: plan[key] for key in ("port", "seconds", "streams")}
    out.update({"tool": "iperf3", "reason": None, "missing": [], "pairs": [], "left": {}})
    found = hosts.each(lambda host: (host, hosts.run(host, ["sh", "-c", "command -v iperf3"], timeout=60)))
    # command -v: 1 (bash) or 127 (dash) when there is no such command; ssh fails with 255.
    out["missing"] = [host for host, res in found if res.returncode in (1, 127)]
    unreachable = [f"{host} ({res.stderr.strip() or f'rc {res.returncode}'})" for host, res in found
                   if res.returncode not in (0, 1, 127)]  # fmt: skip
    if out["missing"] or unreachable:
        reasons = [f"the command iperf3 is missing in the container on {', '.join(out['missing'])} (add the "
                   "package iperf3 to the image)"] if out["missing"] else []  # fmt: skip
        out["reason"] = "; ".join(reasons + ([f"cannot ask {', '.join(unreachable)}"] if unreachable else []))
        return out
    for pair in plan["pairs"]:
        out["pairs"].append({**pair, **measure(hosts, pair["client"], pair["server"], plan)})
    pattern = f"iperf3 -s -1 -B [^ ]+ -p {plan['port']}$"
    running = hosts.each(lambda host: (host, hosts.run(host, ["pgrep", "-a", "-f", pattern], timeout=30)))
    out["left"] = {host: res.stdout.strip() for host, res in running if res.returncode == 0 and res.stdout.strip()}
    return out


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))

#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Measure the links between the cluster's containers with iperf3, from the master's container.

playbooks/benchmark.yml runs it once (``python3 -c CODE``, through ``docker exec``) with the pairs to
measure (``--pair CLIENT=CLIENT_ADDRESS,SERVER=SERVER_ADDRESS,KIND``). The containers run with the
host's network, so binding to a node's cluster address measures the interface Horovod uses. Another
host's container is reached over the containers' ssh (--ssh-argv: the pinned host keys, as horovodrun).

For each pair in turn: an iperf3 server on the server's address and --port that serves one client and
exits (``-1``), under ``timeout`` so that it never outlives the measurement; the client, bound to its own
address, runs --seconds with --streams; the receiver's rate is kept. Before anything starts, every host
must have iperf3 in its container; when one lacks it nothing is measured and the answer names the
hosts. After the last pair, no iperf3 server of this port may be left on any host. Prints one JSON
object; Python's standard library suffices.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", required=True, help="the name of this host (its container runs this)")
    parser.add_argument("--host", action="append", default=[], help="NAME=ADDRESS of every host")
    parser.add_argument("--pair", action="append", default=[], help="CLIENT,SERVER,KIND")
    parser.add_argument("--ssh-argv", required=True, help="JSON list: ssh and its options, without the host")
    parser.add_argument("--port", type=int, default=5201)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--streams", type=int, default=4)
    return parser.parse_args()


class Hosts:
    def __init__(self, local: str, addresses: dict[str, str], ssh: list[str]) -> None:
        self.local, self.addresses, self.ssh = local, addresses, ssh

    def argv(self, host: str, command: list[str]) -> list[str]:
        if host == self.local:
            return command
        return [*self.ssh, self.addresses[host], shlex.join(command)]

    def run(self, host: str, command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                self.argv(host, command), capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(exc.cmd, 124, str(exc.stdout or ""), f"timed out after {timeout:.0f} s")


def server_command(address: str, port: int, seconds: int) -> list[str]:
    # One client, then exit; timeout ends it whatever happens to the client.
    return ["timeout", str(seconds + 30), "iperf3", "-s", "-1", "-B", address, "-p", str(port)]


def measure(hosts: Hosts, client: str, server: str, args: argparse.Namespace) -> dict[str, object]:
    server_address, client_address = hosts.addresses[server], hosts.addresses[client]
    serving = subprocess.Popen(
        hosts.argv(server, server_command(server_address, args.port, args.seconds)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    command = ["iperf3", "-c", server_address, "-B", client_address, "-p", str(args.port),
               "-t", str(args.seconds), "-P", str(args.streams), "-J"]  # fmt: skip
    result: dict[str, object] = {"bits_per_second": None, "error": None}
    deadline = time.monotonic() + 15
    while True:
        res = hosts.run(client, command, timeout=args.seconds + 30)
        try:
            answer = json.loads(res.stdout) if res.stdout.strip() else {}
        except json.JSONDecodeError:
            answer = {}
        error = answer.get("error") or (res.stderr.strip() if res.returncode else "")
        # The server may not listen yet: try again for a while.
        if error and "refused" in str(error) and serving.poll() is None and time.monotonic() < deadline:
            time.sleep(0.3)
            continue
        break
    if error or res.returncode:
        result["error"] = f"iperf3 client on {client}: {error or res.stdout.strip()[-300:]} (rc {res.returncode})"
    else:
        result["bits_per_second"] = answer["end"]["sum_received"]["bits_per_second"]
    try:
        out, _ = serving.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        serving.kill()
        out, _ = serving.communicate()
    if result["error"] and out.strip():
        result["error"] = f"{result['error']}; server on {server}: {out.strip()[-300:]}"
    return result


def leftovers(hosts: Hosts, port: int) -> dict[str, str]:
    """iperf3 servers of this port still running on each host (there must be none)."""
    pattern = f"iperf3 -s -1 -B [^ ]+ -p {port}$"

    def look(host: str) -> tuple[str, str]:
        res = hosts.run(host, ["pgrep", "-a", "-f", pattern], timeout=30)
        return host, res.stdout.strip() if res.returncode == 0 else ""

    with ThreadPoolExecutor(max_workers=8) as pool:
        return {h: out for h, out in pool.map(look, list(hosts.addresses)) if out}


def main() -> None:
    args = parse_args()
    addresses = dict(item.split("=", 1) for item in args.host)
    hosts = Hosts(args.local, addresses, json.loads(args.ssh_argv))
    out: dict[str, object] = {"tool": "iperf3", "port": args.port, "seconds": args.seconds, "streams": args.streams,
                              "reason": None, "missing": [], "pairs": [], "left": {}}  # fmt: skip

    def has_iperf3(host: str) -> tuple[str, int, str]:
        res = hosts.run(host, ["sh", "-c", "command -v iperf3"], timeout=60)
        return host, res.returncode, res.stderr.strip()

    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(has_iperf3, list(addresses)))
    # command -v: 1 (bash) or 127 (dash) when there is no such command; ssh fails with 255.
    unreachable = [f"{h} ({err or 'rc ' + str(rc)})" for h, rc, err in found if rc not in (0, 1, 127)]
    missing = [h for h, rc, _ in found if rc in (1, 127)]
    out["missing"] = missing
    if missing or unreachable:
        out["reason"] = "; ".join(
            ([f"the command iperf3 is missing in the container on {', '.join(missing)} (add the package iperf3 to "
              "the image)"] if missing else [])
            + ([f"cannot ask {', '.join(unreachable)}"] if unreachable else [])
        )  # fmt: skip
    else:
        for item in args.pair:
            client, server, kind = item.split(",")
            out["pairs"].append(
                {"client": client, "server": server, "kind": kind, **measure(hosts, client, server, args)}
            )
        out["left"] = leftovers(hosts, args.port)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

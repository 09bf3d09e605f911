# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The command line of the bed: argument parsing and dispatch to the modules, nothing else.

Run as ``python3 tools/umlbed SUBCOMMAND`` (the directory) or ``python3 -m umlbed SUBCOMMAND`` with
tools/ on the module path; the subcommands are listed in the package's docstring (``--help``).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

if not __package__:  # `python3 tools/umlbed`: sys.path[0] is this directory; import the package from tools/
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import umlbed
from umlbed import host, instance, kernel, network, rootfs, state
from umlbed.host import BedError


def cmd_kernel(args: argparse.Namespace, bed: network.Bed) -> int:
    found = kernel.ensure_kernel(args.cache_dir)
    print(f"{found.binary} {found.version}")
    return 0


def cmd_base(args: argparse.Namespace, bed: network.Bed) -> int:
    base = rootfs.ensure_base(args.cache_dir, args.state_dir, kernel.ensure_kernel(args.cache_dir), args.force)
    print(base.directory)
    return 0


def cmd_up(args: argparse.Namespace, bed: network.Bed) -> int:
    pairs = instance.parse_pairs(args.pairs)
    insts = instance.up(pairs, bed, state_dir=args.state_dir, cache=args.cache_dir, mem=args.mem, timeout=args.timeout)
    print(json.dumps([instance.describe(i) for i in insts], indent=2))
    return 0


def cmd_down(args: argparse.Namespace, bed: network.Bed) -> int:
    instance.down(args.names, args.state_dir)
    return 0


def cmd_down_all(args: argparse.Namespace, bed: network.Bed) -> int:
    instance.down_all(args.state_dir)
    return 0


def cmd_list(args: argparse.Namespace, bed: network.Bed) -> int:
    print(json.dumps([instance.describe(i) for i in state.load_instances(args.state_dir)], indent=2))
    return 0


def cmd_ssh(args: argparse.Namespace, bed: network.Bed) -> int:
    return instance.ssh(args.state_dir, args.name, args.cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="umlbed", description=umlbed.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=host.default_state_dir(),
        help="where instances, links and rules are recorded (env MNH_UMLBED_STATE)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=host.default_cache_dir(),
        help="where base images are kept (env MNH_CACHE_DIR)",
    )
    parser.add_argument("--bridge", default=network.DEFAULT_BRIDGE, help="bed bridge name (at most 8 characters)")
    parser.add_argument(
        "--subnet", default=network.DEFAULT_SUBNET, help="bed IPv4 subnet; the host takes its first address"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("kernel", help="fetch or reuse the UML kernel; prints its binary and version").set_defaults(
        func=cmd_kernel
    )
    p_base = sub.add_parser("base", help="build or reuse the base image; prints its directory")
    p_base.add_argument("--force", action="store_true", help="rebuild even when the recipe hash matches")
    p_base.set_defaults(func=cmd_base)
    p_up = sub.add_parser("up", help="boot instances and wait for ssh; prints them as JSON")
    p_up.add_argument("pairs", nargs="+", metavar="NAME ADDR", help="instance name and address, repeatable")
    p_up.add_argument("--mem", default="512M", help="memory per instance (default 512M)")
    p_up.add_argument("--timeout", type=float, default=300, help="seconds to wait for ssh (default 300)")
    p_up.set_defaults(func=cmd_up)
    p_down = sub.add_parser("down", help="hard-stop instances and remove their link and disk")
    p_down.add_argument("names", nargs="+", metavar="NAME")
    p_down.set_defaults(func=cmd_down)
    sub.add_parser("down-all", help="remove every instance, link, rule and the bridge this tool created").set_defaults(
        func=cmd_down_all
    )
    sub.add_parser("list", help="print the recorded instances as JSON").set_defaults(func=cmd_list)
    p_ssh = sub.add_parser("ssh", help="run a command on an instance as root")
    p_ssh.add_argument("name")
    p_ssh.add_argument("cmd", nargs=argparse.REMAINDER)
    p_ssh.set_defaults(func=cmd_ssh)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        bed = network.Bed(args.bridge, ipaddress.IPv4Network(args.subnet))
    except ValueError as exc:
        parser.error(f"--subnet: {exc}")
    try:
        if args.command in ("kernel", "base", "up"):
            host.preflight()
        if os.geteuid() != 0 and args.command != "list":
            raise BedError("needs root (bridges, veth links, iptables, debootstrap)")
        return int(args.func(args, bed))
    except BedError as exc:
        print(f"umlbed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

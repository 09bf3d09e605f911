#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run Molecule scenarios, one after the other or side by side, the way `make molecule` does.

For each scenario: run `molecule destroy -s <scenario>`, then `molecule test -s <scenario>
--destroy=never` with its output both on the terminal and in .cache/logs/<scenario>.log, then
`molecule destroy -s <scenario>` again, and time it all. The first destroy matters because
--destroy=never also skips the test sequence's own first destroy, which is what forgets the state of
a run that never ended (a killed run, a rebooted machine): without it Molecule would skip `create`
for instances that are gone. (Not `molecule reset`: the Docker driver's reset removes the containers
of every scenario, also those another scenario is running on.)
With --jobs N, N scenarios run side by side (make test runs two: on two cores a scenario leaves
the CPU idle a quarter to two fifths of its time, waiting on Docker, image loads and training runs; the
scenarios share no instance, network or host directory), each line shown then starting with its
scenario's name; each log file stays the scenario's own. Every scenario runs even when an earlier
one failed, so one run shows every failure. Nothing else is
done here: a scenario builds or reuses the images it needs itself (its Molecule `dependency` step
calls tools/images.py), so `molecule test -s <scenario>` typed by hand does the same. The output
goes to a log file, so it is asked for without colours unless the caller's environment says otherwise.

A CI log is often shown only in part, around its first error or at its end. So a failure is named in
both places: Molecule stops right after the failing step (no cleanup and destroy output between the
failed task and Molecule's ERROR line), the failing task with Ansible's message is printed again at
once, before the instances are destroyed, and the run ends with a table of results and, for each
failed scenario, that task once more.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

import progress  # tools/progress.py: how far a long command is

ROOT = Path(__file__).resolve().parent.parent
TASK_RE = re.compile(r"^TASK \[")
# "FAILED - RETRYING" lines are Ansible's retries (`until`), not failures.
FAILURE_RE = re.compile(r"^(fatal: \[|failed: \[|\[ERROR\]: |ERROR  |FAILED (?!- RETRYING)|E  |_{5,} test_)")
DIGEST_LINES = 60
# Molecule's line at the start of each step of a scenario's sequence: "[horovod_launch > prepare] Executing".
STEP_RE = re.compile(r"^INFO +\[[^ \]]+ > (?P<step>[a-z_]+)\] Executing")
# A log file is read as text: no ANSI colour codes in it (Molecule colours when TERM says xterm).
PLAIN_OUTPUT = {"ANSIBLE_FORCE_COLOR": "false", "PY_COLORS": "0", "NO_COLOR": "1"}


def last_failure(lines: list[str], limit: int = DIGEST_LINES) -> list[str]:
    """The lines around the last failure in a Molecule log: from the TASK header before the last
    failed task (or failing test) on, at most `limit` lines. Failures that a scenario provokes on
    purpose and rescues come earlier in the log; the one that stopped it is the last."""
    hits = [i for i, line in enumerate(lines) if FAILURE_RE.match(line)]
    # Molecule's own closing ERROR lines repeat the command; prefer an Ansible or pytest failure.
    specific = [i for i in hits if not lines[i].startswith("ERROR  ")]
    if not hits:
        return lines[-limit:]
    last = (specific or hits)[-1]
    start = last
    while start > 0 and last - start < limit // 3 and not TASK_RE.match(lines[start]):
        start -= 1
    return lines[start : start + limit]


class StepClock:
    """How long each step of Molecule's sequence took (make test has a budget: where its time goes),
    from the line Molecule prints as a step starts; a step that runs twice (cleanup, destroy) adds up.
    The clock is a parameter so that the tests can drive it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.steps: dict[str, float] = {}
        self.current: tuple[str, float] | None = None

    def line(self, text: str) -> None:
        match = STEP_RE.match(text)
        if match:
            now = self.clock()
            self.stop(now)
            self.current = (match["step"], now)

    def stop(self, now: float | None = None) -> None:
        if self.current is not None:
            step, since = self.current
            self.steps[step] = self.steps.get(step, 0.0) + (self.clock() if now is None else now) - since
            self.current = None

    def summary(self) -> str:
        """The steps in the order they first ran, as "create 18s, prepare 95s"."""
        return ", ".join(f"{step} {took:.0f}s" for step, took in self.steps.items())


class Terminal:
    """Where a scenario's lines are shown. With scenarios running side by side (--jobs), each line
    starts with its scenario's name and is written whole, under one lock shared by all of them."""

    lock = threading.Lock()

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    def write(self, text: str) -> None:
        lines = "".join(f"{self.prefix}{line}" for line in text.splitlines(keepends=True))
        with self.lock:
            sys.stdout.write(lines if lines.endswith("\n") else lines + "\n")
            sys.stdout.flush()


def run(scenario: str, logdir: Path, shown: Terminal | None = None) -> tuple[bool, float, Path, str]:
    """Test one scenario; returns whether it passed, how long it took, its log and, when it failed,
    the digest of its failure (taken before the destroy, whose output comes after it in the log)."""
    shown = shown or Terminal()
    begin = time.monotonic()
    logfile = logdir / log_name(scenario, os.environ)
    shown.write(f"=== molecule scenario {scenario}")
    failure = ""
    steps = StepClock()
    with logfile.open("w") as out:
        rc = stream(["molecule", "destroy", "-s", scenario], out, shown=shown)
        if rc == 0:
            rc = stream(["molecule", "test", "-s", scenario, "--destroy=never"], out, steps.line, shown=shown)
        steps.stop()
        if rc != 0:
            failure = "\n".join(last_failure(logfile.read_text(errors="replace").splitlines()))
            shown.write(f"=== molecule scenario {scenario} FAILED (rc {rc}); the failing task:\n{failure}")
        # --destroy=never leaves the instances (also after a pass, where the sequence's destroy step
        # is skipped too): remove them now, after the failure has been shown.
        destroyed = stream(["molecule", "destroy", "-s", scenario], out, shown=shown)
    took = time.monotonic() - begin
    if rc == 0 and destroyed != 0:
        rc = destroyed
        failure = f"molecule destroy -s {scenario} failed with rc {destroyed}"
    verdict = "passed" if rc == 0 else f"FAILED (rc {rc})"
    shown.write(f"=== molecule scenario {scenario} {verdict} in {took:.0f}s; its steps: {steps.summary()}")
    return rc == 0, took, logfile, failure


def release(environ: Mapping[str, str]) -> str:
    """The Debian release of the test hosts (MNH_DEBIAN, as tools/images.py and tools/umlbed/ read it)."""
    return environ.get("MNH_DEBIAN") or "bookworm"


def log_name(scenario: str, environ: Mapping[str, str]) -> str:
    """A scenario's log file: one per release, so that make test-all keeps both."""
    suffix = "" if release(environ) == "bookworm" else f"-{release(environ)}"
    return f"{scenario}{suffix}.log"


def scope(environ: Mapping[str, str]) -> str:
    """Which tests the scenarios run: MNH_TESTS=all adds the long fault and operations tests that
    scenarios import only then (make test-all); anything else is the CI set (make test)."""
    if environ.get("MNH_TESTS", "") == "all":
        return "tests: all (MNH_TESTS=all: with the long fault and operations tests)"
    return "tests: the CI set (MNH_TESTS=all, as make test-all sets it, adds the long fault and operations tests)"


def plain_env(environ: Mapping[str, str]) -> dict[str, str]:
    """environ, asking Molecule, Ansible and pytest for no colour codes unless it says otherwise."""
    return {**PLAIN_OUTPUT, **environ}


def stream(
    argv: list[str],
    out: TextIO,
    seen: Callable[[str], None] | None = None,
    heartbeat: float = progress.HEARTBEAT_S,
    shown: Terminal | None = None,
) -> int:
    """Run argv in the repository, its output to the terminal and to `out` (and to `seen`), line by line; while it
    prints nothing (Ansible prints a task when every host is done with it: an image build or load, a
    training run), a line on the terminal every `heartbeat` seconds with the last one it printed."""

    shown = shown or Terminal()

    def echo(line: str) -> None:
        shown.write(line)
        out.write(line)
        out.flush()
        if seen is not None:
            seen(line)

    def say(text: str) -> None:
        shown.write(f"=== {text}")

    env = plain_env(os.environ)
    return progress.watch(argv, say, echo=echo, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, heartbeat=heartbeat)


def run_all(names: list[str], logdir: Path, jobs: int) -> list[tuple[str, bool, float, Path, str]]:
    """Every scenario, `jobs` of them at a time, each started when a lane is free in the order given;
    the results in that order. Side by side, each line shown starts with its scenario's name."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as lanes:
        futures = [lanes.submit(run, name, logdir, Terminal(f"[{name}] " if jobs > 1 else "")) for name in names]
        return [(name, *future.result()) for name, future in zip(names, futures, strict=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+", help="scenario names under molecule/")
    parser.add_argument("--logs", default=str(ROOT / ".cache" / "logs"), help="where each scenario's log goes")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="scenarios run side by side, taken in the order given (default 1: one after the other)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give 1 or more")
    unknown = [s for s in args.scenarios if not (ROOT / "molecule" / s / "molecule.yml").exists()]
    if unknown:
        parser.error(f"no such scenario: {', '.join(unknown)} (see molecule/*/molecule.yml)")
    logdir = Path(args.logs)
    logdir.mkdir(parents=True, exist_ok=True)
    print(f"=== {scope(os.environ)}; hosts: Debian {release(os.environ)} (MNH_DEBIAN)", flush=True)
    begin = time.monotonic()
    results = run_all(args.scenarios, logdir, args.jobs)
    wall, busy = time.monotonic() - begin, sum(result[2] for result in results)
    print(f"\n=== molecule results: {len(results)} scenarios, {args.jobs} at a time, in {wall:.0f}s", end="")
    print(f" (their times add up to {busy:.0f}s)" if args.jobs > 1 else "", flush=True)
    for scenario, ok, took, logfile, _failure in results:
        print(f"  {scenario:<16} {'passed' if ok else 'FAILED':<7} {took:6.0f}s  {logfile}")
    for scenario, ok, _took, logfile, failure in results:
        if ok:
            continue
        print(f"\n=== {scenario} failed; its last failure (whole log: {logfile}):")
        print(failure, flush=True)
    return 0 if all(result[1] for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())

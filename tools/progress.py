#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Say how far a long command is, so that no step of make, make lab or an image build is silent.

A CI log or a terminal that shows nothing for minutes reads as a hang. ``watch`` runs a command and
says what it waits for at least every ``HEARTBEAT_S`` seconds: each line the command prints (or, for
chatty builders, each new milestone such as a Dockerfile step), and while it prints nothing, a line
with the time so far and the last thing it said. Plain text, no colours.

Command line:
    progress.py run LABEL -- COMMAND...   run COMMAND, print its lines and a heartbeat when it is silent
    progress.py gaps [--over S] -- COMMAND...
                                          run COMMAND with its output unchanged, then list every silence
                                          longer than S seconds (default 30) with the line before it
                                          (how `make test` and `make lab` are checked for silent steps)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
HEARTBEAT_S = 20.0
SHOWN_WIDTH = 100


def plain(line: str) -> str:
    """A line of output without colours, cursor moves or trailing blanks."""
    return ANSI_RE.sub("", line).replace("\r", "").rstrip()


def elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def shortened(text: str, width: int = SHOWN_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def watch(
    argv: Sequence[str],
    say: Callable[[str], None],
    *,
    log_file: Path | None = None,
    milestone: Callable[[str], str | None] | None = None,
    heartbeat: float = HEARTBEAT_S,
    env: Mapping[str, str] | None = None,
    stderr: int | None = subprocess.STDOUT,
    echo: Callable[[str], None] | None = None,
    cwd: Path | None = None,
    stdin: int | None = None,
) -> int:
    """Run argv and return its exit status, telling ``say`` how far it is. Its output goes to
    log_file when given; what is shown is each new milestone (what ``milestone`` makes of a line)
    or, without one, every non-empty line; after ``heartbeat`` seconds with nothing shown,
    ``still running`` with the milestone reached and the command's last line. With ``echo``, every
    line goes to it unchanged as it comes (ansible-playbook's and Molecule's own output, kept as it
    is) and ``say`` gets only the heartbeat."""
    start = time.monotonic()
    seen: set[str] = set()
    state = {"shown": start, "at": "", "last": ""}
    lock = threading.Lock()

    def show(text: str) -> None:
        with lock:
            state["shown"] = time.monotonic()
            say(f"{text} ({elapsed(state['shown'] - start)})")

    proc = subprocess.Popen(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=None if env is None else dict(env),
        cwd=cwd,
        stdin=stdin,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    assert proc.stdout is not None
    out: TextIO | None = log_file.open("w", encoding="utf-8", errors="replace") if log_file else None

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if out:
                out.write(line)
                out.flush()
            text = plain(line)
            if text:
                state["last"] = text
            if echo is not None:
                with lock:
                    echo(line)
                    state["shown"] = time.monotonic()
                continue
            if milestone is None:
                if text:
                    show(shortened(text))
                continue
            found = milestone(line)
            if found and found not in seen:
                seen.add(found)
                state["at"] = found
                show(found)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        while reader.is_alive():
            reader.join(timeout=min(1.0, heartbeat))
            if reader.is_alive() and time.monotonic() - state["shown"] >= heartbeat:
                where = f", at {state['at']}" if state["at"] else ""
                last = f"; last output: {shortened(state['last'])}" if state["last"] else ""
                show(f"still running{where}{last}")
        return proc.wait()
    finally:
        if out:
            out.close()


def silences(argv: Sequence[str], over: float, sink: TextIO = sys.stdout) -> tuple[int, list[tuple[float, str]]]:
    """Run argv with its output copied to sink unchanged; return its exit status and every silence
    longer than ``over`` seconds as (seconds, the line before it)."""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    assert proc.stdout is not None
    found: list[tuple[float, str]] = []
    last_time, last_line = time.monotonic(), "(the command's start)"
    for line in proc.stdout:
        now = time.monotonic()
        if now - last_time > over:
            found.append((now - last_time, last_line))
        sink.write(line)
        sink.flush()
        last_time, last_line = now, plain(line) or last_line
    rc = proc.wait()
    if time.monotonic() - last_time > over:
        found.append((time.monotonic() - last_time, last_line))
    return rc, found


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="verb", required=True)
    run = sub.add_parser("run", help="run a command and say how far it is")
    run.add_argument("label")
    run.add_argument("command", nargs=argparse.REMAINDER)
    gaps = sub.add_parser("gaps", help="run a command and list its silences")
    gaps.add_argument("--over", type=float, default=30.0)
    gaps.add_argument("command", nargs=argparse.REMAINDER)
    opts = parser.parse_args(args)
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not command:
        parser.error("give the command after --")
    if opts.verb == "run":
        return watch(command, lambda text: print(f"[{opts.label}] {text}", flush=True))
    rc, found = silences(command, opts.over)
    print(f"[progress] {len(found)} silence(s) longer than {opts.over:.0f} s in: {' '.join(command)}", flush=True)
    for seconds, line in found:
        print(f"[progress]   {seconds:.0f} s after: {shortened(line, 160)}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())

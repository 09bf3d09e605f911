# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""tools/progress.py: a long command says how far it is, and silences are found."""

from __future__ import annotations

import io
import re
import sys

from checkout import load

progress = load("tools/progress.py", "progress")


def run_python(code: str) -> list[str]:
    return [sys.executable, "-c", "import sys, time\n" + code]


def test_every_line_is_shown_and_a_silence_gets_a_heartbeat_with_the_last_line():
    said: list[str] = []
    code = "print('Collecting torch', flush=True)\ntime.sleep(1.3)\nprint('Installing', flush=True)\nsys.exit(3)\n"
    rc = progress.watch(run_python(code), said.append, heartbeat=0.4)
    texts = [re.sub(r" \(\d+s\)$", "", line) for line in said]
    assert rc == 3
    assert texts[0] == "Collecting torch" and texts[-1] == "Installing"
    still = texts[1:-1]
    assert still and all(line == "still running; last output: Collecting torch" for line in still)


def test_a_quiet_command_gets_no_heartbeat():
    said: list[str] = []
    assert progress.watch(run_python("print('done')"), said.append, heartbeat=5) == 0
    assert [re.sub(r" \(\d+s\)$", "", line) for line in said] == ["done"]


def test_milestones_replace_the_lines_and_go_to_the_log(tmp_path):
    said: list[str] = []
    log = tmp_path / "out.log"
    code = "for w in ['a1', 'x', 'a1', 'a2']: print(w, flush=True)\n"
    progress.watch(
        run_python(code),
        said.append,
        log_file=log,
        milestone=lambda line: line.strip() if line.startswith("a") else None,
    )
    assert [re.sub(r" \(\d+s\)$", "", line) for line in said] == ["a1", "a2"]
    assert log.read_text().split() == ["a1", "x", "a1", "a2"]


def test_silences_are_listed_with_the_line_before_them():
    sink = io.StringIO()
    rc, found = progress.silences(run_python("print('one', flush=True)\ntime.sleep(0.6)\nprint('two')\n"), 0.4, sink)
    assert rc == 0 and sink.getvalue() == "one\ntwo\n"
    assert [line for _unused, line in found] == ["one"] and found[0][0] >= 0.6


def test_a_command_that_talks_has_no_silence():
    rc, found = progress.silences(run_python("print('one')"), 5, io.StringIO())
    assert (rc, found) == (0, [])


def test_echoed_lines_pass_unchanged_and_a_silence_still_gets_a_heartbeat():
    echoed: list[str] = []
    said: list[str] = []
    code = "print('TASK [load the image] ***', flush=True)\ntime.sleep(1.3)\nprint('ok: [m1]', flush=True)\n"
    assert progress.watch(run_python(code), said.append, echo=echoed.append, heartbeat=0.4) == 0
    assert echoed == ["TASK [load the image] ***\n", "ok: [m1]\n"]
    assert said and all(
        re.fullmatch(r"still running; last output: TASK \[load the image\] \*\*\* \(\d+s\)", line) for line in said
    )

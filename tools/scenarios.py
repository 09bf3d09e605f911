#!/usr/bin/env python3
"""Run Molecule scenarios one after the other, the way `make molecule` does.

For each scenario: build the images listed in molecule/<scenario>/images (tools/images.py, cached
by recipe hash), run `molecule test -s <scenario>` with its output both on the terminal and in
.cache/logs/<scenario>.log, and time it. Every scenario runs even when an earlier one failed, so one
run shows every failure. At the end it prints a table of results and, for each failed scenario, the
task that failed with what Ansible said, so that the end of a CI log (often all that is shown of
it) names the cause instead of Molecule's destroy output.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK_RE = re.compile(r"^TASK \[")
FAILURE_RE = re.compile(r"^(fatal: \[|failed: \[|\[ERROR\]: |ERROR  |FAILED |E  |_{5,} test_)")
DIGEST_LINES = 60


def images_of(scenario: str) -> list[str]:
    path = ROOT / "molecule" / scenario / "images"
    if not path.exists():
        return []
    return [w for line in path.read_text().splitlines() if not line.startswith("#") for w in line.split()]


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


def run(scenario: str, logdir: Path) -> tuple[bool, float, Path]:
    begin = time.monotonic()
    images = images_of(scenario)
    logfile = logdir / f"{scenario}.log"
    print(f"=== molecule scenario {scenario}", flush=True)
    if images:
        built = subprocess.run([sys.executable, str(ROOT / "tools" / "images.py"), *images], check=False, cwd=ROOT)
        if built.returncode != 0:
            logfile.write_text(f"tools/images.py {' '.join(images)} failed with rc {built.returncode}\n")
            return False, time.monotonic() - begin, logfile
    with logfile.open("w") as out:
        proc = subprocess.Popen(
            ["molecule", "test", "-s", scenario],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            out.write(line)
        rc = proc.wait()
    took = time.monotonic() - begin
    verdict = "passed" if rc == 0 else f"FAILED (rc {rc})"
    print(f"=== molecule scenario {scenario} {verdict} in {took:.0f}s", flush=True)
    return rc == 0, took, logfile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+", help="scenario names under molecule/")
    parser.add_argument("--logs", default=str(ROOT / ".cache" / "logs"), help="where each scenario's log goes")
    args = parser.parse_args(argv)
    unknown = [s for s in args.scenarios if not (ROOT / "molecule" / s / "molecule.yml").exists()]
    if unknown:
        parser.error(f"no such scenario: {', '.join(unknown)} (see molecule/*/molecule.yml)")
    logdir = Path(args.logs)
    logdir.mkdir(parents=True, exist_ok=True)
    results = [(s, *run(s, logdir)) for s in args.scenarios]
    print("\n=== molecule results", flush=True)
    for scenario, ok, took, logfile in results:
        print(f"  {scenario:<16} {'passed' if ok else 'FAILED':<7} {took:6.0f}s  {logfile}")
    for scenario, ok, _took, logfile in results:
        if ok:
            continue
        print(f"\n=== {scenario} failed; its last failure (whole log: {logfile}):")
        print("\n".join(last_failure(logfile.read_text(errors="replace").splitlines())), flush=True)
    return 0 if all(ok for _s, ok, _t, _l in results) else 1


if __name__ == "__main__":
    sys.exit(main())

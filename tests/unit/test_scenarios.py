# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""tools/scenarios.py: every scenario runs, and the end of the output names the failure."""

from __future__ import annotations

import stat
import sys

import pytest
import yaml
from checkout import load

scenarios = load("tools/scenarios.py", "mnh_scenarios")

RESCUED_THEN_REAL = """\
TASK [Run horovod_launch (a command that exits 1 on rank 2)] *******************
fatal: [launch-a]: FAILED! =>
    msg: rank 2 gives up on launch-c
TASK [Check where it stopped and what it said (a command that exits 1 on rank 2)] ***
ok: [launch-a]
TASK [Check that the refused run never started] ********************************
fatal: [launch-a]: FAILED! =>
    assertion: not __runs.results[1].stat.exists
    msg: Assertion failed
PLAY RECAP *********************************************************************
launch-a                   : ok=10   changed=0    unreachable=0    failed=1
INFO     [horovod_launch > destroy] Executing
TASK [Destroy molecule instance(s)] ********************************************
changed: [localhost] => (item=launch-a)
ERROR    Ansible return code was 2, command was: ansible-playbook verify.yml
"""


def test_the_digest_shows_the_last_failed_task_not_a_rescued_one():
    digest = scenarios.last_failure(RESCUED_THEN_REAL.splitlines())
    assert digest[0] == "TASK [Check that the refused run never started] ********************************"
    assert "    assertion: not __runs.results[1].stat.exists" in digest
    assert not any("rank 2 gives up" in line for line in digest)


def test_the_digest_shows_a_failing_testinfra_test():
    log = ["collected 3 items", "tests/test_x.py::test_a PASSED"]
    log += ["_____ test_b[ansible://node] _____", "E   assert 1 == 2"]
    log += ["filler"] * 10 + ["ERROR    Molecule executed 1 scenario (1 failed)"]
    digest = scenarios.last_failure(log, limit=8)
    assert "E   assert 1 == 2" in digest
    assert len(digest) <= 8


def test_the_digest_falls_back_to_the_end_of_the_log():
    log = [f"line {n}" for n in range(100)]
    assert scenarios.last_failure(log, limit=5) == ["line 95", "line 96", "line 97", "line 98", "line 99"]


@pytest.fixture
def fake_repo(tmp_path, monkeypatch):
    """A repository with three scenarios and a `molecule` that fails the one named bad."""
    for name in ("one", "bad", "two"):
        (tmp_path / "molecule" / name).mkdir(parents=True)
        (tmp_path / "molecule" / name / "molecule.yml").write_text("---\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    molecule = bindir / "molecule"
    molecule.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = destroy ]; then echo "destroyed $3"; echo "destroyed $3" >> "$0.calls"; '
        'printf "FAILED - RETRYING: [localhost]: Wait for instance(s) deletion\\n"; exit 0; fi\n'
        '[ "$1 $4" = "test --destroy=never" ] || { echo "unexpected: $*"; exit 3; }\n'
        'grep -qx "destroyed $3" "$0.calls" || { echo "not destroyed before the test: $3"; exit 4; }\n'
        'echo "running $3 colour=${NO_COLOR-unset}/${PY_COLORS-unset}/${ANSIBLE_FORCE_COLOR-unset}"\n'
        'if [ "$3" = bad ]; then printf "TASK [Check it]\\nfatal: [n]: FAILED! =>\\n    msg: broken\\n"; exit 2; fi\n'
    )
    molecule.chmod(molecule.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    for name in scenarios.PLAIN_OUTPUT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(scenarios, "ROOT", tmp_path)
    return tmp_path


def test_every_scenario_runs_and_the_failure_comes_last(fake_repo, capsys):
    rc = scenarios.main(["one", "bad", "two", "--logs", str(fake_repo / "logs")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "running two" in out
    log = (fake_repo / "logs" / "two.log").read_text()
    # Destroyed first (a killed earlier run leaves state behind), then tested, then destroyed again.
    assert log.startswith("destroyed two\n")
    assert "running two colour=1/0/false\ndestroyed two\n" in log
    tail = out[out.index("=== molecule results") :]
    assert "bad              FAILED" in tail
    assert tail.rstrip().endswith("    msg: broken")


def test_the_failure_is_shown_before_the_instances_are_destroyed(fake_repo, capsys):
    scenarios.main(["one", "bad", "two", "--logs", str(fake_repo / "logs")])
    out = capsys.readouterr().out
    shown = out.index("=== molecule scenario bad FAILED (rc 2); the failing task:\nTASK [Check it]")
    assert out.index("destroyed bad") < shown < out.index("destroyed bad", shown) < out.index("running two")
    # Every scenario's instances are removed before and after, whether it passed or not.
    assert [line for line in out.splitlines() if line.startswith("destroyed")] == [
        "destroyed one",
        "destroyed one",
        "destroyed bad",
        "destroyed bad",
        "destroyed two",
        "destroyed two",
    ]


def test_retries_are_not_failures():
    log = ["TASK [Wait]", "FAILED - RETRYING: [n]: Wait (3 retries left).", "ok: [n]", "all good"]
    assert scenarios.last_failure(log, limit=2) == ["ok: [n]", "all good"]


def test_all_passing_scenarios_return_0(fake_repo, capsys):
    assert scenarios.main(["one", "two", "--logs", str(fake_repo / "logs")]) == 0


def test_an_unknown_scenario_is_refused_before_anything_runs(fake_repo, capsys):
    with pytest.raises(SystemExit):
        scenarios.main(["one", "nope", "--logs", str(fake_repo / "logs")])
    assert "no such scenario: nope" in capsys.readouterr().err
    assert not (fake_repo / "logs").exists()


def test_the_log_asks_for_no_colours_unless_the_caller_does(fake_repo, capsys, monkeypatch):
    monkeypatch.setenv("PY_COLORS", "1")
    monkeypatch.setenv("NO_COLOR", "")
    assert scenarios.main(["one", "--logs", str(fake_repo / "logs")]) == 0
    assert "\nrunning one colour=/1/false\n" in (fake_repo / "logs" / "one.log").read_text()


def test_a_scenario_builds_its_own_images_in_its_dependency_step():
    """The images a scenario runs come from its own molecule.yml, so `molecule test -s x` typed by hand
    builds or reuses them as `make molecule` does (tools/scenarios.py builds nothing itself)."""
    root = scenarios.ROOT / "molecule"
    for molecule_yml in sorted(root.glob("*/molecule.yml")):
        config = yaml.safe_load(molecule_yml.read_text())
        images = {
            image
            for platform in config.get("platforms", [])
            if str(platform.get("image", "")).startswith("multinode-horovod/")
            for image in [platform["image"].split("/", 1)[1].split(":", 1)[0]]
        }
        if not images:
            continue
        dependency = config.get("dependency", {})
        assert dependency.get("name") == "shell" and dependency.get("enabled") is True, molecule_yml
        command = dependency["command"].split()
        assert command[:2] == ["python3", '"${MOLECULE_PROJECT_DIRECTORY}/tools/images.py"'], molecule_yml
        assert images <= set(command[2:]), f"{molecule_yml}: the dependency step does not build {images}"
        sequence = config.get("scenario", {}).get("test_sequence")
        assert sequence is None or sequence[0] == "dependency", f"{molecule_yml}: test_sequence skips dependency"


def test_scope_names_what_runs():
    assert scenarios.scope({"MNH_TESTS": "all"}).startswith("tests: all")
    assert scenarios.scope({}).startswith("tests: the CI set")
    assert scenarios.scope({"MNH_TESTS": "yes"}).startswith("tests: the CI set")


def test_each_release_keeps_its_own_log():
    assert scenarios.release({}) == "bookworm"
    assert scenarios.log_name("storage", {}) == "storage.log"
    assert scenarios.log_name("storage", {"MNH_DEBIAN": "bookworm"}) == "storage.log"
    assert scenarios.log_name("storage", {"MNH_DEBIAN": "trixie"}) == "storage-trixie.log"


def test_a_silent_step_gets_a_heartbeat_on_the_terminal_not_in_the_log(capfd, tmp_path):
    # Molecule prints a task when every host is done with it: the terminal hears from make test anyway.
    code = "import time; print('TASK [Build the image] ***', flush=True); time.sleep(1.3); print('ok: [m1]')"
    log = tmp_path / "scenario.log"
    with log.open("w") as out:
        assert scenarios.stream([sys.executable, "-c", code], out, heartbeat=0.4) == 0
    shown = capfd.readouterr().out.splitlines()
    assert shown[0] == "TASK [Build the image] ***" and shown[-1] == "ok: [m1]"
    assert any(line.startswith("=== still running; last output: TASK [Build the image]") for line in shown[1:-1])
    assert log.read_text() == "TASK [Build the image] ***\nok: [m1]\n"


def test_each_step_is_timed_from_molecule_s_lines_and_a_repeated_step_adds_up():
    now = iter([0.0, 5.0, 20.0, 21.0, 40.0, 42.0])
    steps = scenarios.StepClock(clock=lambda: next(now))
    for line in [
        "INFO     [horovod_launch > cleanup] Executing",  # 0
        "TASK [x] ***",
        "INFO     [horovod_launch > create] Executing",  # 5: cleanup 5
        "INFO     [horovod_launch > create] Executed: Successful",
        "INFO     [horovod_launch > cleanup] Executing",  # 20: create 15
        "INFO     [horovod_launch > verify] Executing",  # 21: cleanup 1 more
        "INFO     [horovod_launch > verifyx] Executed: Successful",
    ]:
        steps.line(line)
    steps.stop()  # 40: verify 19
    steps.stop()  # nothing runs: no clock read
    assert steps.steps == {"cleanup": 6.0, "create": 15.0, "verify": 19.0}
    assert steps.summary() == "cleanup 6s, create 15s, verify 19s"


def test_scenarios_side_by_side_overlap_and_each_line_names_its_scenario(fake_repo, capsys):
    """With --jobs 2, `one` waits for `two` to have started: run one after the other, it would give up."""
    molecule = fake_repo / "bin" / "molecule"
    molecule.write_text(
        molecule.read_text().replace(
            'if [ "$3" = bad ]',
            'touch "$0.started-$3"; if [ "$3" = one ]; then i=0; until [ -e "$0.started-two" ]; do '
            'i=$((i + 1)); [ $i -gt 200 ] && { echo "two never started beside one"; exit 5; }; sleep 0.05; done; '
            'echo "one saw two running"; fi\nif [ "$3" = bad ]',
        )
    )
    rc = scenarios.main(["one", "two", "bad", "--jobs", "2", "--logs", str(fake_repo / "logs")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "[one] one saw two running" in out.splitlines()
    assert "[two] running two colour=1/0/false" in out.splitlines()
    assert "[bad] === molecule scenario bad FAILED (rc 2); the failing task:" in out
    # The logs stay each scenario's own, without the names; the table keeps the order given.
    assert "one saw two running\n" in (fake_repo / "logs" / "one.log").read_text()
    tail = out[out.index("=== molecule results: 3 scenarios, 2 at a time") :].splitlines()
    assert [line.split()[0] for line in tail[1:4]] == ["one", "two", "bad"]
    assert tail[-1] == "    msg: broken"


def test_jobs_below_one_are_refused(fake_repo, capsys):
    with pytest.raises(SystemExit):
        scenarios.main(["one", "--jobs", "0", "--logs", str(fake_repo / "logs")])
    assert "--jobs 0: give 1 or more" in capsys.readouterr().err

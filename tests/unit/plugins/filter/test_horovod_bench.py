# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for plugins/module_utils/horovod_bench.py, its filters and the benchmark's controller-side
scripts (the iperf3 run and the plot)."""

from __future__ import annotations

import base64
import copy
import io
import json
import math
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.filter import horovod_bench as f
from ansible_collections.multinode.horovod.plugins.module_utils import horovod_bench as b
from ansible_collections.multinode.horovod.plugins.plugin_utils import gate
from checkout import load

HOSTS = [
    {"name": "m", "address": "10.0.0.1", "slots": 1},
    {"name": "w1", "address": "10.0.0.2", "slots": 1},
    {"name": "w2", "address": "10.0.0.3", "slots": 1},
]
GBIT = 1e9  # bits per second
NOW = datetime(2026, 12, 2, 8, 0, 0, tzinfo=UTC)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def make_plan(given=None, hosts=None, **over):
    where = {"share_dir": "/data1/share", "artifact_dir": "/data1/artifacts", "ssh_port": 12345, "now": NOW,
             "cwd": "/home/me"} | over  # fmt: skip
    return b.plan(given or {}, HOSTS if hosts is None else hosts, **where)


PREFLIGHT = {"hosts": HOSTS, "network_interfaces": ["eth0"], "horovod_version": "0.28.1", "image": None}


def make_report(plan=None, plot=None, **over):
    link = {"seconds": 5, "streams": 4, "reason": None,
            "pairs": [{"client": "w1", "server": "m", "kind": "to-master", "bits_per_second": 10 * GBIT},
                      {"client": "w2", "server": "m", "kind": "to-master", "bits_per_second": 8 * GBIT}]}  # fmt: skip
    allreduce = {"np": 3, "device": "cpu", "backend": "gloo", "torch": "1.13.1",
                 "results": [{"bytes": 1024, "iters": 50, "time_s": 1e-4},
                             {"bytes": 1024**2, "iters": 20, "time_s": 2e-3}]}  # fmt: skip
    one = {"np": 1, "model": "resnet18", "batch_size": 4, "image_size": 64, "img_per_s": 10.0}
    every = {"np": 3, "model": "resnet18", "batch_size": 4, "image_size": 64, "img_per_s": 24.0}
    parts = {"link": link, "allreduce": allreduce, "synthetic_one": one, "synthetic_all": every} | over
    results = {key: value for key, value in parts.items() if key != "link" and value is not None}
    return b.report(plan or make_plan(), PREFLIGHT, parts["link"], results, plot)


def test_defaults_sweep_1k_to_256m_and_have_no_problem():
    s, problems = b.settings({})
    assert problems == []
    sweep = b.sizes(s["horovod_bench_allreduce_min_bytes"], s["horovod_bench_allreduce_max_bytes"], 2)
    assert sweep[0] == 1024 and sweep[-1] == 256 * 1024**2 and len(sweep) == 19


def test_sizes_end_at_the_largest_even_off_the_factor():
    assert b.sizes(1024, 5000, 4) == [1024, 4096, 5000]
    assert b.sizes(64, 64, 2) == [64]


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("16M", 16 * 1024**2),
        ("1KiB", 1024),
        ("4096", 4096),
        (8, 8),
        ("2G", 2 * 1024**3),
        ("x", None),
        (True, None),
        ("1.5M", None),
    ],
)
def test_parse_bytes(text, size):
    assert b.parse_bytes(text) == size


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"horovod_bench_allreduce_max_bytes": "16M"}, None),
        ({"horovod_bench_allreduce_max_bytes": 1023}, "horovod_bench_allreduce_max_bytes: 1023 is not a size"),
        ({"horovod_bench_allreduce_min_bytes": "64M", "horovod_bench_allreduce_max_bytes": "1M"}, "is more than"),
        ({"horovod_bench_allreduce_factor": 1}, "must be 2 or more"),
        ({"horovod_bench_link_port": 70000}, "is not a TCP port"),
        ({"horovod_bench_link_seconds": "five"}, "horovod_bench_link_seconds: 'five' is not a whole number"),
        ({"horovod_bench_steps": ["link", "nccl"]}, "must name one or more of link, allreduce, synthetic"),
        ({"horovod_bench_steps": "link"}, None),
        ({"horovod_bench_device": "gpu"}, "horovod_bench_device: 'gpu' is not one of auto, cpu, cuda"),
        ({"horovod_bench_name": "../x"}, "horovod_bench_name: '../x' may hold"),
        ({"horovod_bench_name": "mine\n"}, "horovod_bench_name: 'mine\\n' may hold"),
        ({"horovod_bench_dir": "relative"}, "horovod_bench_dir: 'relative' must be an absolute path"),
        ({"horovod_bench_alreduce_iters": 3}, "horovod_bench_alreduce_iters: the benchmark has no such setting"),
    ],
)
def test_settings_name_the_variable_and_the_fix(given, expected):
    _unused, problems = b.settings(given)
    if expected is None:
        assert problems == []
    else:
        assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("value", "number", "problem"),
    [
        ("600", 600, None),
        (" +600 ", 600, None),  # numbers.whole, as Ansible's int() and the site's gate: _int refused the "+"
        (600, 600, None),
        ("-5", -5, "horovod_bench_timeout: -5 must be 1 or more."),
        ("6e2", None, "horovod_bench_timeout: '6e2' is not a whole number."),
        ("600.0", None, "horovod_bench_timeout: '600.0' is not a whole number."),
        (600.0, None, "horovod_bench_timeout: 600.0 is not a whole number."),
        (True, None, "horovod_bench_timeout: True is not a whole number."),
    ],
)
def test_a_whole_number_setting_is_read_by_numbers_whole(value, number, problem):
    out, problems = b.settings({"horovod_bench_timeout": value})
    assert out["horovod_bench_timeout"] == number
    assert problems == ([] if problem is None else [problem])


def test_the_gate_knows_every_setting():
    assert set(b.SETTING_NAMES) <= gate.known_names()


def test_link_pairs_workers_to_master_then_the_ring_once_each():
    pairs = [(p["client"], p["server"], p["kind"]) for p in b.link_pairs(["m", "w1", "w2"])]
    assert pairs == [("w1", "m", "to-master"), ("w2", "m", "to-master"), ("m", "w1", "ring"), ("w1", "w2", "ring")]
    assert [(p["client"], p["server"]) for p in b.link_pairs(["m", "w1"])] == [("w1", "m")]
    assert b.link_pairs(["m"]) == []


def test_plan_names_runs_and_places_the_report():
    p = make_plan({"horovod_bench_allreduce_max_bytes": "4K", "horovod_bench_device": "cpu"})
    assert p["problems"] == []
    assert p["name"] == "bench-20261202-080000" and p["created"] == "2026-12-02T08:00:00Z"
    assert [(r["key"], r["name"], r["np"], r["alone"], r["result"]) for r in p["runs"]] == [
        ("allreduce", "bench-20261202-080000-allreduce", 0, False, "allreduce.json"),
        ("synthetic_one", "bench-20261202-080000-synthetic-np1", 1, True, "synthetic.json"),
        ("synthetic_all", "bench-20261202-080000-synthetic-np3", 3, False, "synthetic.json"),
    ]
    script = "/data1/artifacts/benchmark/horovod_bench_run.py"
    assert p["runs"][0]["command"] == ["python3", script, "allreduce", "--sizes", "1024,2048,4096", "--iters", "50",
                                       "--seconds", "2", "--device", "cpu"]  # fmt: skip
    assert p["runs"][1]["command"] == p["runs"][2]["command"] == [
        "python3", script, "synthetic", "--model", "resnet50", "--batch-size", "32", "--image-size", "224",
        "--warmup-batches", "10", "--batches", "50", "--device", "cpu"]  # fmt: skip
    assert p["sizes"] == [1024, 2048, 4096] and p["timeout"] == 3600
    assert p["report_dir"] == "/data1/share/benchmarks/bench-20261202-080000"
    assert p["fetch_dir"] == "/home/me/benchmarks/bench-20261202-080000"
    assert p["script_dir"] == "/data1/artifacts/benchmark"
    link = p["link"]
    assert link["local"] == "m" and link["hosts"]["w2"] == "10.0.0.3" and len(link["pairs"]) == 4
    assert (link["port"], link["seconds"], link["streams"]) == (5201, 5, 4)
    assert link["ssh_argv"][:5] == ["ssh", "-p", "12345", "-i", "/root/.ssh/id_ed25519"]
    assert "StrictHostKeyChecking=yes" in link["ssh_argv"]
    assert p["lines"][0].startswith("link: iperf3") and p["lines"][1].startswith("allreduce: float32 sum on 3")


def test_plan_with_only_the_link_or_one_host():
    p = make_plan({"horovod_bench_steps": ["link"], "horovod_bench_name": "mine"}, artifact_dir="", share_dir="/s")
    assert p["runs"] == [] and p["sizes"] == [] and p["script_dir"] == "/s/benchmark" and p["name"] == "mine"
    alone = make_plan({"horovod_bench_steps": "link"}, hosts=HOSTS[:1])
    assert alone["link"] is None and alone["lines"][0] == "link: not measured (one host)"


def test_a_plan_with_a_wrong_setting_is_only_its_problems():
    assert make_plan({"horovod_bench_device": "gpu"}) == {
        "problems": ["horovod_bench_device: 'gpu' is not one of auto, cpu, cuda."]
    }


def test_busbw_is_algbw_times_2_n_minus_1_over_n():
    rows = b.allreduce_rows([{"bytes": 4 * 1024**2, "iters": 10, "time_s": 0.004}], 4)
    assert rows[0]["algbw_Bps"] == pytest.approx(4 * 1024**2 / 0.004)
    assert rows[0]["busbw_Bps"] == pytest.approx(rows[0]["algbw_Bps"] * 1.5)
    assert b.allreduce_rows([{"bytes": 1024, "time_s": 1.0}], 1)[0]["busbw_Bps"] is None
    with pytest.raises(ValueError, match="positive"):
        b.allreduce_rows([{"bytes": 1024, "time_s": 0}], 2)


def test_report_link_ratio_and_scaling_efficiency():
    r = make_report()
    assert r["schema"] == b.SCHEMA
    assert r["link"]["rate_Bps"] == pytest.approx(1e9)  # the slowest pair, 8 Gbit/s
    best = 1024**2 / 2e-3 * 4 / 3
    assert r["allreduce"]["best_busbw_Bps"] == pytest.approx(best)
    assert r["allreduce"]["best_busbw_bytes"] == 1024**2
    assert r["allreduce"]["busbw_to_link"] == pytest.approx(best / 1e9)
    assert r["synthetic"]["scaling_efficiency"] == pytest.approx(24.0 / (3 * 10.0))
    assert r["device"] == "cpu" and r["backend"] == "gloo" and r["versions"]["torch"] == "1.13.1"
    assert b.sanity(r) == []
    json.dumps(r)  # plain JSON


def test_a_missing_iperf3_gives_a_null_rate_with_the_reason():
    reason = "the command iperf3 is missing in the container on w2 (add the package iperf3 to the image)"
    r = make_report(link={"reason": reason, "missing": ["w2"], "pairs": []})
    assert r["link"]["rate_Bps"] is None and r["link"]["reason"] == reason
    assert r["allreduce"]["busbw_to_link"] is None
    assert b.sanity(r) == []
    assert "iperf3 is missing in the container on w2" in b.markdown(r)
    assert any("none: the command iperf3 is missing" in line for line in b.summary(r))


def test_a_failed_pair_gives_no_rate_but_its_error():
    link = {"reason": None, "pairs": [{"client": "w1", "server": "m", "kind": "to-master", "bits_per_second": None,
                                       "error": "iperf3 client on w1: unable to connect"}]}  # fmt: skip
    r = make_report(link=link)
    assert r["link"]["rate_Bps"] is None and "w1 -> m: iperf3 client on w1: unable to connect" in r["link"]["reason"]


def test_steps_not_run_are_null():
    plan = make_plan({"horovod_bench_steps": ["link"]})
    r = make_report(plan, allreduce=None, synthetic_one=None, synthetic_all=None, link=None)
    assert r["allreduce"] is None and r["synthetic"] is None
    assert r["link"]["rate_Bps"] is None and r["link"]["reason"]


def test_markdown_has_the_summary_table():
    md = b.markdown(make_report())
    assert "| link rate (iperf3, slowest pair) | 8.00 Gbit/s (1 GB/s) |" in md
    assert "| best bus bandwidth / link rate | " in md
    assert "| scaling efficiency | 0.80 |" in md
    assert "| hosts | m (10.0.0.1, 1 slot), w1 (10.0.0.2, 1 slot), w2 (10.0.0.3, 1 slot) |" in md
    assert "| versions | horovod 0.28.1, torch 1.13.1 |" in md
    assert "| 1 MiB | 20 | 2.000 ms |" in md


def bad(report, path, value):
    out = copy.deepcopy(report)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("schema",), "other/2", "schema is 'other/2'"),
        (("hosts",), [], "names no host"),
        (("link", "rate_Bps"), -1.0, "the link rate -1.0 is not positive"),
        (("link", "reason"), None, None),  # a rate and no reason is fine
        (("allreduce", "results", 0, "time_s"), 0.0, "time_s 0.0 is not positive"),
        (("allreduce", "results", 1, "busbw_Bps"), 5e9, "more than 4 times the link rate"),
        (("allreduce", "results", 1, "busbw_Bps"), math.nan, "busbw nan is not positive"),
        (("allreduce", "results"), [], "allreduce has no results"),
        (("synthetic", "points", 1, "img_per_s"), 0, "img_per_s 0 is not positive"),
        (("synthetic", "scaling_efficiency"), None, "scaling efficiency None is not positive"),
    ],
)
def test_sanity_finds_each_bad_number(path, value, expected):
    problems = b.sanity(bad(make_report(), path, value))
    if expected is None:
        assert problems == []
    else:
        assert any(expected in p for p in problems), problems


def test_sanity_of_a_wrong_shape():
    assert b.sanity([]) == ["the report is not a mapping but list"]
    report = make_report()
    del report["link"]
    assert b.sanity(report) == ["the report has no 'link'"]
    null_rate = bad(bad(make_report(), ("link", "rate_Bps"), None), ("link", "reason"), None)
    assert "the link rate is null without a reason" in b.sanity(null_rate)


def test_the_outputs_hold_both_files_and_the_plays_last_lines():
    plan = make_plan()
    out = b.outputs(plan, make_report(plan, plot={"drawn": True, "reason": None}))
    assert json.loads(out["files"]["report.json"]) == out["report"]
    assert out["share_files"] == ["report.json", "report.md", "report.png"]
    assert out["report"]["files"]["plot"] == plan["report_dir"] + "/report.png"
    assert out["files"]["report.md"].endswith("![bus bandwidth and images/s](report.png)\n")
    assert out["summary"][0] == "Benchmark bench-20261202-080000 on m, w1, w2:"
    where = f"report: {plan['report_dir']}/report.{{json,md,png}} on m, and in {plan['fetch_dir']} here"
    assert out["summary"][-1] == where
    reason = "matplotlib is not installed for python3 on the controller (pip install matplotlib)"
    unplotted = b.outputs(plan, make_report(plan, plot={"drawn": False, "reason": reason}))
    assert unplotted["report"]["files"] | {"json": None, "markdown": None} == {
        "json": None, "markdown": None, "plot": None, "plot_reason": reason}  # fmt: skip
    assert f"No plot: {reason}" in unplotted["files"]["report.md"]
    assert unplotted["share_files"] == ["report.json", "report.md"]
    assert "report.{json,md} on m" in unplotted["summary"][-2] and unplotted["summary"][-1].startswith("No plot:")
    insane = make_report(plan, allreduce={"np": 3, "results": [{"bytes": 1024**2, "iters": 1, "time_s": 1e-6}]})
    assert "more than 4 times the link rate" in b.outputs(plan, insane)["summary"][-1]


def slurped(results):
    return [{"item": {"key": key}, "content": base64.b64encode(json.dumps(value).encode()).decode()}
            for key, value in results.items()]  # fmt: skip


def test_filters_take_ansible_values_and_refuse_bad_results():
    plan = f.bench_plan({"horovod_bench_allreduce_max_bytes": "16M"}, HOSTS, "/s", "/a", "22")
    assert plan["problems"] == [] and plan["sizes"][-1] == 16 * 1024**2
    with pytest.raises(AnsibleFilterError, match="expects a mapping"):
        f.bench_plan([], HOSTS, "/s", "/a", 22)
    one = {"np": 1, "model": "m", "img_per_s": 10.0}
    out = f.bench_report(plan, PREFLIGHT, None, slurped({"synthetic_one": one}))
    assert out["report"]["synthetic"]["points"][0]["img_per_s"] == 10.0 and "plot" not in out["report"]["files"]
    with pytest.raises(AnsibleFilterError, match="not what the benchmark writes"):
        f.bench_report(plan, PREFLIGHT, {}, slurped({"allreduce": {"np": 2, "results": [{"bytes": 4}]}}))
    assert f.bench_sanity(make_report()) == []
    assert set(f.FilterModule().filters()) == {"horovod_bench_plan", "horovod_bench_report", "horovod_bench_sanity"}


def run_plot(monkeypatch, capsys, report, png):
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(report)))
    return load("playbooks/files/benchmark/horovod_bench_plot.py", "horovod_bench_plot").main(str(png))


def test_the_plot_is_a_png(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "report.png"
    assert run_plot(monkeypatch, capsys, make_report(), png) == {"drawn": True, "reason": None}
    assert png.read_bytes().startswith(PNG_SIGNATURE)


def test_the_plot_says_when_matplotlib_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = run_plot(monkeypatch, capsys, make_report(), tmp_path / "r.png")
    assert out["drawn"] is False and "matplotlib is not installed" in out["reason"]
    assert not (tmp_path / "r.png").exists()


class FakeContainers:
    """The link script's commands, answered as the master's container would: iperf3 missing on
    `missing`, each client's rate 8 Gbit/s, no iperf3 server left."""

    def __init__(self, missing=()):
        self.missing, self.commands = set(missing), []

    def run(self, argv, **_unused):
        self.commands.append(argv)
        host = {h["address"]: h["name"] for h in HOSTS}[argv[-2]] if argv[0] == "ssh" else "m"
        command = argv[-1] if argv[0] == "ssh" else " ".join(argv)
        if "command -v iperf3" in command:
            return subprocess.CompletedProcess(argv, 1 if host in self.missing else 0, "", "")
        if "iperf3 -c" in command:
            answer = {"end": {"sum_received": {"bits_per_second": 8 * GBIT}}}
            return subprocess.CompletedProcess(argv, 0, json.dumps(answer), "")
        return subprocess.CompletedProcess(argv, 1, "", "")  # pgrep: none left

    def popen(self, argv, **_unused):
        self.commands.append(argv)
        return type("Server", (), {"poll": lambda self: None, "communicate": lambda self, timeout=None: ("", None)})()


def run_link(monkeypatch, containers, hosts=None):
    script = load("playbooks/files/benchmark/horovod_bench_link.py", "horovod_bench_link")
    monkeypatch.setattr(script.subprocess, "run", containers.run)
    monkeypatch.setattr(script.subprocess, "Popen", containers.popen)
    return script.main(make_plan(hosts=hosts)["link"])


def test_the_link_script_measures_every_pair_over_the_containers_ssh(monkeypatch):
    containers = FakeContainers()
    out = run_link(monkeypatch, containers)
    assert out["reason"] is None and out["left"] == {} and (out["port"], out["seconds"]) == (5201, 5)
    assert [(p["client"], p["server"], p["bits_per_second"]) for p in out["pairs"]] == [
        ("w1", "m", 8 * GBIT), ("w2", "m", 8 * GBIT), ("m", "w1", 8 * GBIT), ("w1", "w2", 8 * GBIT)]  # fmt: skip
    remote = [argv for argv in containers.commands if argv[0] == "ssh"]
    assert remote and all("StrictHostKeyChecking=yes" in argv for argv in remote)
    assert ["timeout", "35", "iperf3", "-s", "-1", "-B", "10.0.0.1", "-p", "5201"] in containers.commands
    assert b.link_summary(out, True)["rate_Bps"] == 1e9


def test_the_link_script_names_the_hosts_without_iperf3_and_measures_nothing(monkeypatch):
    out = run_link(monkeypatch, FakeContainers(missing={"w2"}))
    assert out["missing"] == ["w2"] and out["pairs"] == []
    assert out["reason"] == "the command iperf3 is missing in the container on w2 (add the package iperf3 to the image)"

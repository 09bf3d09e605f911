# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""tools/images.py: recipe parents and hashes decide when an image is rebuilt."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time

import pytest
from checkout import load


def load_images_module():
    load("tools/progress.py", "progress")  # images.py imports it as its sibling
    return load("tools/images.py", "mnh_images")


@pytest.fixture
def images(tmp_path, monkeypatch):
    module = load_images_module()
    recipes = tmp_path / "images"
    (recipes / "base").mkdir(parents=True)
    (recipes / "child").mkdir()
    (recipes / "child" / "Dockerfile").write_text("# parent: base\nARG BASE\nFROM ${BASE}\n")
    (recipes / "grandchild").mkdir()
    (recipes / "grandchild" / "Dockerfile").write_text("# parent: child\nARG BASE\nFROM ${BASE}\n")
    (recipes / "orphan").mkdir()
    (recipes / "orphan" / "Dockerfile").write_text("FROM debian\n")
    monkeypatch.setattr(module, "RECIPES", recipes)
    return module


def test_every_real_recipe_names_a_known_parent():
    module = load_images_module()
    names = module.known()
    assert "base" in names
    for name in names:
        parent = module.parent_of(name)
        assert parent is None or parent in names, f"{name} names unknown parent {parent}"


def test_parent_comes_from_the_first_line(images):
    assert images.parent_of("base") is None
    assert images.parent_of("child") == "base"
    assert images.parent_of("grandchild") == "child"


def test_recipe_without_parent_line_is_refused(images):
    with pytest.raises(SystemExit, match="must start with '# parent:"):
        images.parent_of("orphan")


def test_the_gpu_image_is_built_only_when_named():
    module = load_images_module()
    assert "horovod-gpu" in module.known()
    assert "horovod-gpu" not in module.default_names()
    assert "horovod-cpu" in module.default_names()
    assert module.ref("horovod-gpu") == "multinode-horovod/horovod-gpu:local"


def test_the_torch_image_is_a_bookworm_workload_image_built_only_when_named(monkeypatch):
    # PyPI's torch pulls several GB of CUDA libraries: make image-torch, test-all and the lab build it,
    # never make images (the default list), make test or CI.
    module = load_images_module()
    monkeypatch.setenv("MNH_DEBIAN", "trixie")
    assert "torch-cpu" in module.known()
    assert "torch-cpu" not in module.default_names()
    assert module.parent_of("torch-cpu") == "base"
    assert module.ref("torch-cpu") == "multinode-horovod/torch-cpu:local"
    assert module.release_of("torch-cpu") == "bookworm"


def test_the_torch_image_pins_every_pypi_package_and_checks_hopper_nccl_and_torchrun():
    module = load_images_module()
    recipe = module.RECIPES / "torch-cpu"
    pins = [
        line.split("#")[0].strip()
        for line in (recipe / "requirements.txt").read_text().splitlines()
        if line.split("#")[0].strip()
    ]
    unpinned = [pin for pin in pins if not re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][A-Za-z0-9.]*", pin)]
    assert not unpinned, f"every PyPI package of torch-cpu pinned with ==: {unpinned}"
    assert {"torch==2.5.1", "nvidia-nccl-cu12==2.21.5", "tensorboard==2.19.0"} <= set(pins)
    dockerfile = (recipe / "Dockerfile").read_text()
    # --no-deps: nothing outside requirements.txt comes in; pip check: nothing it needs is left out.
    assert re.search(r"pip install --no-cache-dir --no-deps -r /tmp/requirements.txt;\s*\\\s*pip check;", dockerfile)
    assert not [pin for pin in pins if pin.lower().startswith("horovod")]
    for check in (
        '"sm_90" in torch._C._cuda_getArchFlags().split()',
        "d.is_nccl_available()",
        "torchrun --help",
        "torchrun --standalone --nnodes=1 --nproc_per_node=2 /tmp/allreduce_check.py",
        'a.Scalars("x")',
    ):
        assert check in dockerfile, check
    assert dockerfile.rstrip().endswith('CMD ["sleep", "infinity"]')


def test_unknown_recipe_is_refused(images):
    with pytest.raises(SystemExit, match="no recipe"):
        images.parent_of("nope")


def test_hash_is_stable_and_follows_the_recipe_and_its_parents(images):
    first = images.recipe_hash("grandchild", b"")
    assert first == images.recipe_hash("grandchild", b"")
    (images.RECIPES / "child" / "extra.txt").write_text("changed")
    assert images.recipe_hash("grandchild", b"") != first


def test_extra_ca_bundle_changes_derived_images_only(images):
    assert images.recipe_hash("base", b"") == images.recipe_hash("base", b"PEM")
    assert images.recipe_hash("child", b"") != images.recipe_hash("child", b"PEM")


def test_image_reference(images, monkeypatch):
    monkeypatch.delenv("MNH_DEBIAN", raising=False)
    assert images.ref("machine") == "multinode-horovod/machine:bookworm"
    monkeypatch.setenv("MNH_DEBIAN", "trixie")
    assert images.ref("machine") == "multinode-horovod/machine:trixie"
    # Workload images run in the containers: bookworm and the tag local, whatever the hosts run.
    assert images.ref("horovod-cpu") == "multinode-horovod/horovod-cpu:local"
    assert images.release_of("horovod-cpu") == "bookworm"
    assert images.release_of("machine") == "trixie"


def test_an_untested_release_is_refused(images):
    assert images.host_release({}) == "bookworm"
    assert images.host_release({"MNH_DEBIAN": "trixie"}) == "trixie"
    with pytest.raises(SystemExit, match="MNH_DEBIAN='buster' is not a tested release; use one of bookworm, trixie"):
        images.host_release({"MNH_DEBIAN": "buster"})


def test_the_release_is_part_of_the_recipe_and_reaches_the_parents(images):
    assert images.recipe_hash("base", b"", "bookworm") != images.recipe_hash("base", b"", "trixie")
    assert images.recipe_hash("grandchild", b"", "bookworm") != images.recipe_hash("grandchild", b"", "trixie")


def test_an_image_of_the_same_recipe_under_another_tag_is_tagged_not_built(images, monkeypatch):
    calls = []
    monkeypatch.setattr(images, "current_hash", lambda reference: None)
    monkeypatch.setattr(images, "image_with_hash", lambda want: "sha256:feed")
    monkeypatch.setattr(images, "docker", lambda *args, **kw: calls.append(args))
    monkeypatch.setattr(images, "build_base", lambda *a: calls.append(("built base",)))
    monkeypatch.setattr(images, "build_recipe", lambda *a: calls.append(("built", a[0])))
    images.ensure("child", b"", "debootstrap", False, set(), release="bookworm")
    assert calls == [
        ("tag", "sha256:feed", "multinode-horovod/base:bookworm"),
        ("tag", "sha256:feed", "multinode-horovod/child:bookworm"),
    ]


@pytest.fixture
def host_bundle(tmp_path, monkeypatch):
    """The host's own CA bundle, as a file under tmp_path, with MNH_EXTRA_CA_BUNDLE unset."""
    module = load_images_module()
    bundle = tmp_path / "ca-certificates.crt"
    bundle.write_bytes(b"HOST PEM")
    monkeypatch.setattr(module, "HOST_CA_BUNDLE", bundle)
    monkeypatch.delenv("MNH_EXTRA_CA_BUNDLE", raising=False)
    # main() takes the cache's lock: this test's own cache, not the machine's.
    monkeypatch.setenv("MNH_CACHE_DIR", str(tmp_path / "cache"))
    return module, bundle


def test_the_extra_ca_bundle_defaults_to_the_hosts_own(host_bundle):
    images, bundle = host_bundle
    assert images.default_extra_ca_bundle({}) == str(bundle)
    bundle.unlink()
    assert images.default_extra_ca_bundle({}) == ""


def test_mnh_extra_ca_bundle_wins_over_the_host_bundle_even_when_empty(host_bundle):
    images, _unused = host_bundle
    assert images.default_extra_ca_bundle({"MNH_EXTRA_CA_BUNDLE": "/srv/proxy-ca.pem"}) == "/srv/proxy-ca.pem"
    assert images.default_extra_ca_bundle({"MNH_EXTRA_CA_BUNDLE": ""}) == ""


def ensured_with(images, monkeypatch, argv):
    """The extra CA bytes main(argv) builds with (nothing is built: ensure is recorded)."""
    seen = []
    monkeypatch.setattr(images, "ensure", lambda name, extra_ca, *rest: seen.append(extra_ca) or "hash")
    assert images.main(argv) == 0
    return seen


def test_a_plain_call_builds_with_the_host_bundle_as_the_makefile_passed_it(host_bundle, monkeypatch):
    images, bundle = host_bundle
    assert ensured_with(images, monkeypatch, ["base"]) == [b"HOST PEM"]
    # The same bytes as MNH_EXTRA_CA_BUNDLE=<host bundle> (what `make molecule` exported): same recipe hash.
    monkeypatch.setenv("MNH_EXTRA_CA_BUNDLE", str(bundle))
    assert ensured_with(images, monkeypatch, ["base"]) == [b"HOST PEM"]
    monkeypatch.setenv("MNH_EXTRA_CA_BUNDLE", "")
    assert ensured_with(images, monkeypatch, ["base"]) == [b""]
    assert ensured_with(images, monkeypatch, ["base", "--extra-ca-bundle", str(bundle)]) == [b"HOST PEM"]


def test_an_unreadable_extra_ca_bundle_is_named_with_the_fix(host_bundle, monkeypatch, tmp_path):
    images, _unused = host_bundle
    monkeypatch.setenv("MNH_EXTRA_CA_BUNDLE", str(tmp_path / "missing.pem"))
    with pytest.raises(SystemExit, match=r"missing\.pem .*MNH_EXTRA_CA_BUNDLE= \(empty\) for none"):
        ensured_with(images, monkeypatch, ["base"])


# Progress while building: the builder is a fake (a script named docker first on PATH), never Docker.


def test_a_step_line_of_either_builder_becomes_one_short_plain_line():
    images = load_images_module()
    assert images.build_step("Step 3/9 : RUN apt-get update\n") == "step 3/9 RUN apt-get update"
    assert images.build_step("#7 [3/9] RUN pip  install\thorovod\n") == "step 3/9 RUN pip install horovod"
    assert images.build_step("#9 [build 2/4] COPY . /src\n") == "step 2/4 COPY . /src"
    assert images.build_step("\x1b[1m\x1b[34mStep 1/2 : FROM x\x1b[0m\r\n") == "step 1/2 FROM x"
    long = images.build_step("Step 1/1 : RUN " + "x" * 300)
    assert long.startswith("step 1/1 RUN x") and long.endswith("...") and len(long) <= 9 + images.progress.SHOWN_WIDTH
    for other in ("#7 0.345 Get:1 http://deb.debian.org", " ---> Running in 1234", "#7 DONE 12.3s", ""):
        assert images.build_step(other) is None


def test_debootstrap_lines_give_its_phases():
    images = load_images_module()
    assert images.debootstrap_phase("I: Retrieving adduser 3.134\n") == "Retrieving"
    assert images.debootstrap_phase("I: Base system installed successfully.\n") == "Base"
    assert images.debootstrap_phase("W: Cannot check Release signature\n") is None


def fake_builder(tmp_path, monkeypatch, script: str):
    """A `docker` on PATH that runs script (Python); it writes its argv and BUILDKIT_PROGRESS to call.json."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    record = (
        f"json.dump([sys.argv[1:], os.environ.get('BUILDKIT_PROGRESS')], open({str(tmp_path / 'call.json')!r}, 'w'))"
    )
    docker.write_text(f"#!{sys.executable}\nimport json, os, sys, time\n{record}\n" + script)
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "call.json"


CLASSIC = (
    "print('DEPRECATED: The legacy builder is deprecated', flush=True)\n"
    "print('Step 1/3 : ARG BASE', flush=True)\n"
    "print('Step 2/3 : FROM ${BASE}', flush=True)\n"
    "print(' ---> 1234', flush=True)\n"
    "print('Step 3/3 : RUN pip install horovod', flush=True)\n"
    "time.sleep(float(os.environ.get('FAKE_STEP_S', '0')))\n"
    "print('error: compiling horovod failed', flush=True)\n"
    "sys.exit(int(os.environ.get('FAKE_RC', '0')))\n"
)


def progress_lines(out: str) -> list[str]:
    """The progress lines, their elapsed times taken out."""
    return [re.sub(r" \((\d+m)?\d+s\)$", "", line) for line in out.splitlines()]


def test_a_build_prints_each_step_as_the_builder_starts_it(images, tmp_path, monkeypatch, capsys):
    call = fake_builder(tmp_path, monkeypatch, CLASSIC)
    images.build_recipe("child", "abc123", b"", "bookworm")
    out = capsys.readouterr().out
    assert progress_lines(out) == [
        "[images] child: step 1/3 ARG BASE",
        "[images] child: step 2/3 FROM ${BASE}",
        "[images] child: step 3/3 RUN pip install horovod",
    ]
    assert all(re.search(r" \(\d+s\)$", line) for line in out.splitlines())
    assert "\x1b" not in out
    argv, progress = json.loads(call.read_text())
    assert argv[:2] == ["build", "--build-arg"] and f"{images.LABEL}=abc123" in argv and progress == "plain"


def test_a_long_step_says_it_is_still_running(images, tmp_path, monkeypatch, capsys):
    fake_builder(tmp_path, monkeypatch, CLASSIC)
    monkeypatch.setenv("FAKE_STEP_S", "1.5")
    monkeypatch.setattr(images, "HEARTBEAT_S", 0.4)
    images.build_recipe("child", "abc123", b"", "bookworm")
    lines = progress_lines(capsys.readouterr().out)
    still = [line for line in lines if "still running" in line]
    expected = (
        "[images] child: still running, at step 3/3 RUN pip install horovod; "
        "last output: Step 3/3 : RUN pip install horovod"
    )
    assert still and all(line == expected for line in still)
    assert lines.index(still[0]) > lines.index("[images] child: step 3/3 RUN pip install horovod")


def test_buildkit_steps_are_printed_once_each(images, tmp_path, monkeypatch, capsys):
    script = (
        "for line in ['#1 [internal] load build definition', '#5 [1/2] FROM base', '#6 [2/2] RUN make',\n"
        "             '#6 0.1 compiling', '#5 [1/2] FROM base', '#6 [2/2] RUN make', '#6 DONE 1.0s']:\n"
        "    print(line, flush=True)\n"
    )
    fake_builder(tmp_path, monkeypatch, script)
    images.build_recipe("child", "abc123", b"", "bookworm")
    assert progress_lines(capsys.readouterr().out) == [
        "[images] child: step 1/2 FROM base",
        "[images] child: step 2/2 RUN make",
    ]


def test_a_failed_build_ends_with_the_builders_last_lines(images, tmp_path, monkeypatch, capsys):
    fake_builder(tmp_path, monkeypatch, CLASSIC)
    monkeypatch.setenv("FAKE_RC", "1")
    with pytest.raises(SystemExit) as failed:
        images.build_recipe("child", "abc123", b"", "bookworm")
    message = str(failed.value)
    assert message.startswith("images: building multinode-horovod/child:bookworm failed:\n")
    assert message.endswith("Step 3/3 : RUN pip install horovod\nerror: compiling horovod failed")
    assert "step 3/3 RUN pip install horovod" in capsys.readouterr().out


def test_a_second_run_waits_for_the_one_holding_the_image_cache(tmp_path, capsys):
    """Scenarios side by side (tools/scenarios.py --jobs) each run tools/images.py in their dependency step:
    one run at a time builds or saves, the other says it waits and goes on once the first is done."""
    images = load_images_module()
    events = []
    with images.one_at_a_time(tmp_path):
        waiter = threading.Thread(target=_hold, args=(images, tmp_path, events))
        waiter.start()
        deadline = time.monotonic() + 10
        while "waiting for it" not in capsys.readouterr().out and time.monotonic() < deadline:
            time.sleep(0.05)
        events.append("first done")
    waiter.join(10)
    assert events == ["first done", "second in"]


def _hold(images, cache, events):
    with images.one_at_a_time(cache):
        events.append("second in")

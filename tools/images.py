#!/usr/bin/env python3
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the project's container images locally, cached by a hash of their recipe.

Nothing here needs a container registry. The root image ``base`` is Debian: pulled as
``debian:<release>`` when a registry answers (``--base-source pull``/``auto``), otherwise made with
``debootstrap --variant=minbase`` from the Debian mirror and ``docker import``-ed.
Every other image is ``images/<name>/Dockerfile``, whose first line names its parent
(``# parent: base``); it is built ``FROM`` the parent (build argument ``BASE``).

Two kinds of images, two releases. *Host images* (``machine``, ``machine-engine``, ``role-host``)
stand for the servers the roles configure: they are built on the Debian release under test,
``MNH_DEBIAN`` (``bookworm``, the default, or ``trixie``), and tagged with it
(``multinode-horovod/machine:trixie``). *Workload images* (``horovod-cpu``, ``horovod-cpu-0.18.2`` for the
guide's Horovod release, ``sshbox``) are what
runs in the containers: always Debian bookworm (Horovod 0.28.1 builds only against its torch 1.13),
tagged ``local``, whatever the hosts run. ``horovod-gpu`` (Horovod 0.28.1 with NCCL and PyPI's
CUDA 12.1 PyTorch 2.1, for GPUs up to Hopper) is one too, but it is built only when named
(``make image-gpu``): it downloads several GB and compiles CUDA kernels, so the default list (no
names, ``make images``) leaves it out and no scenario or CI builds it. So is ``torch-cpu`` (PyPI's
torch 2.5.1, no Horovod, for the torchrun launcher): its wheel pulls several GB of CUDA libraries, so
only ``make image-torch``, ``make test-all`` and the lab's torchrun runs build it.

An image is labelled with the hash of its recipe (the recipe directory, the parent's hash and the
extra CA bundle; the release for ``base``). A build whose hash matches the label of the existing image
is skipped, so a warm run costs one ``docker inspect`` per image; an image of that hash under another
tag is tagged, not built again.
``--save`` also writes ``<cache>/images/<name>-<hash>.tar`` (``docker save``) and reuses it while
the hash holds.

The extra CA bundle is for networks whose TLS is inspected by a proxy: it is copied into the build
context as ``extra-ca.crt`` and the recipes add it to the image's trust store before they use pip or
apt over https. It is ``--extra-ca-bundle``, else ``MNH_EXTRA_CA_BUNDLE`` when that is set (empty:
none), else this machine's own bundle ``/etc/ssl/certs/ca-certificates.crt`` when it has one, so the
images trust what the host trusts, whoever calls this tool (``make``, Molecule or a person).

A build says how far it is while it runs (the CPU Horovod image takes many minutes on a fresh
machine): one line per Dockerfile step as the builder starts it (the classic builder's ``Step 3/9 :``
and BuildKit's plain ``#7 [3/9]`` alike) and per debootstrap phase, each with the time since the build
began, and every 20 seconds while a step runs on, the last line the builder printed (pip's and apt's
progress). The builder's whole output goes to a log file, whose last lines are shown when the build
fails. Plain text, no colours: readable in a CI log.

With ``--print-archive`` the archives' paths are the only thing on standard output, one a line, and
everything else (these lines, the builders' own) goes to standard error: a caller (tools/lab.py)
reads the paths and the user still sees the build as it goes.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import progress  # tools/progress.py: how far a long command is

REPO = Path(__file__).resolve().parent.parent
RECIPES = REPO / "images"
REPOSITORY = "multinode-horovod"
LABEL = "org.multinode-horovod.recipe-hash"
# MNH_DEBIAN: the Debian release of the host images (module docstring).
RELEASES = ("bookworm", "trixie")
DEFAULT_RELEASE = "bookworm"
WORKLOAD_IMAGES = frozenset({"horovod-cpu", "horovod-cpu-0.18.2", "horovod-gpu", "sshbox", "torch-cpu"})
# Built only when named: left out of the default list (module docstring).
EXPLICIT_IMAGES = frozenset({"horovod-gpu", "torch-cpu"})
WORKLOAD_TAG = "local"
DEBIAN_MIRROR = os.environ.get("MNH_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PARENT_RE = re.compile(r"^#\s*parent:\s*([a-z0-9-]+)\s*$")
EXTRA_CA_ENV = "MNH_EXTRA_CA_BUNDLE"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# A Dockerfile step as the builder announces it: the classic builder, then BuildKit's plain progress
# (``#7 [3/9] RUN ...``, or ``#7 [stage 3/9] ...`` in a multi-stage build).
STEP_RES = (
    re.compile(r"^Step (\d+)/(\d+) : (.*)$"),
    re.compile(r"^#\d+ \[(?:\S+ )?(\d+)/(\d+)\] (.*)$"),
)
HEARTBEAT_S = progress.HEARTBEAT_S


def log(msg: str) -> None:
    print(f"[images] {msg}", flush=True)


def default_cache_dir() -> Path:
    env = os.environ.get("MNH_CACHE_DIR")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/cache/multinode-horovod")
    return Path.home() / ".cache" / "multinode-horovod"


def default_extra_ca_bundle(environ: Mapping[str, str] = os.environ) -> str:
    """MNH_EXTRA_CA_BUNDLE when it is set (an empty value means none), else the host's own bundle
    when it has one, else none."""
    if EXTRA_CA_ENV in environ:
        return environ[EXTRA_CA_ENV]
    return str(HOST_CA_BUNDLE) if HOST_CA_BUNDLE.is_file() else ""


def read_extra_ca(bundle: str) -> bytes:
    """The bytes of the extra CA bundle (nothing when none is named)."""
    if not bundle:
        return b""
    try:
        return Path(bundle).read_bytes()
    except OSError as err:
        raise SystemExit(
            f"images: cannot read the extra CA bundle {bundle} ({err.strerror}); point --extra-ca-bundle or "
            f"{EXTRA_CA_ENV} at a PEM file, or set {EXTRA_CA_ENV}= (empty) for none"
        ) from None


def host_release(environ: Mapping[str, str] = os.environ) -> str:
    """The Debian release of the host images: MNH_DEBIAN, else bookworm."""
    release = environ.get("MNH_DEBIAN") or DEFAULT_RELEASE
    if release not in RELEASES:
        raise SystemExit(f"images: MNH_DEBIAN={release!r} is not a tested release; use one of {', '.join(RELEASES)}")
    return release


def release_of(name: str) -> str:
    """The Debian release `name` is built on when asked for directly (its parents follow it)."""
    return DEFAULT_RELEASE if name in WORKLOAD_IMAGES else host_release()


def ref(name: str, release: str | None = None) -> str:
    """The image's reference: workload images are tagged local, the others with their release."""
    tag = WORKLOAD_TAG if name in WORKLOAD_IMAGES else (release or release_of(name))
    return f"{REPOSITORY}/{name}:{tag}"


def parent_of(name: str) -> str | None:
    if name == "base":
        return None
    dockerfile = RECIPES / name / "Dockerfile"
    if not dockerfile.is_file():
        raise SystemExit(f"images: no recipe {dockerfile}; known: {', '.join(known())}")
    first = dockerfile.read_text().splitlines()[0]
    match = PARENT_RE.match(first)
    if not match:
        raise SystemExit(f"images: {dockerfile} must start with '# parent: <image>'")
    return match.group(1)


def known() -> list[str]:
    """``base`` (made by this tool, no recipe directory needed) and every ``images/<name>/Dockerfile``."""
    return ["base", *sorted(p.name for p in RECIPES.iterdir() if (p / "Dockerfile").is_file())]


def default_names() -> list[str]:
    """What a build with no names builds: every known image but those built only when named."""
    return [name for name in known() if name not in EXPLICIT_IMAGES]


def recipe_hash(name: str, extra_ca: bytes, release: str | None = None) -> str:
    release = release or release_of(name)
    digest = hashlib.sha256()
    digest.update(name.encode())
    recipe_dir = RECIPES / name
    for path in sorted(recipe_dir.rglob("*")) if recipe_dir.is_dir() else []:
        if path.is_file():
            digest.update(str(path.relative_to(recipe_dir)).encode())
            digest.update(path.read_bytes())
    parent = parent_of(name)
    if parent is None:
        digest.update(f"{release} {DEBIAN_MIRROR} minbase".encode())
    else:
        digest.update(recipe_hash(parent, extra_ca, release).encode())
        digest.update(extra_ca)
    return digest.hexdigest()[:16]


def docker(*args: str, check: bool = True, capture: bool = False, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args],
        check=check,
        text=True,
        capture_output=capture,
        **kw,  # type: ignore[arg-type]
    )


def current_hash(reference: str) -> str | None:
    res = docker(
        "image", "inspect", "--format", f'{{{{index .Config.Labels "{LABEL}"}}}}', reference, check=False, capture=True
    )
    if res.returncode != 0:
        return None
    return res.stdout.strip() or None


def image_with_hash(want: str) -> str | None:
    """An image already built from this recipe hash, under any tag (its ID), or None."""
    res = docker("images", "--quiet", "--filter", f"label={LABEL}={want}", check=False, capture=True)
    found = res.stdout.split() if res.returncode == 0 else []
    return found[0] if found else None


def build_step(line: str) -> str | None:
    """``step 3/9 RUN ...`` when the line starts a Dockerfile step, else None."""
    line = progress.plain(line)
    for step_re in STEP_RES:
        match = step_re.match(line)
        if match:
            number, total, what = match.groups()
            return f"step {number}/{total} {progress.shortened(what)}"
    return None


def debootstrap_phase(line: str) -> str | None:
    """The phase of an ``I: <Phase> ...`` line of debootstrap (Retrieving, Extracting, Unpacking, ...)."""
    line = progress.plain(line)
    return line[3:].split()[0].rstrip(".:") if line.startswith("I: ") and len(line) > 3 else None


def run_with_progress(
    argv: Sequence[str],
    label: str,
    log_file: Path,
    milestone: Callable[[str], str | None],
    *,
    stderr: int | None = subprocess.STDOUT,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run argv with its output in log_file, saying how far it is (tools/progress.py): each new
    milestone, and every HEARTBEAT_S seconds without one the last line the builder printed."""
    return progress.watch(
        argv,
        lambda text: log(f"{label}: {text}"),
        log_file=log_file,
        milestone=milestone,
        heartbeat=HEARTBEAT_S,
        env=env,
        stderr=stderr,
    )


def build_base(want: str, source: str, release: str) -> None:
    if source in ("auto", "pull"):
        pulled = docker("pull", f"debian:{release}", check=False, capture=True, timeout=120)
        if pulled.returncode == 0:
            tag_with_label(f"debian:{release}", ref("base", release), want)
            return
        if source == "pull":
            raise SystemExit(f"images: docker pull debian:{release} failed: {pulled.stderr.strip()}")
        log(f"no registry answered ({pulled.stderr.strip().splitlines()[-1:]}); using debootstrap")
    if not shutil.which("debootstrap"):
        raise SystemExit("images: debootstrap is missing (apt-get install debootstrap), or use --base-source pull")
    with tempfile.TemporaryDirectory(prefix="mnh-base-") as tmp:
        root = Path(tmp) / "root"
        argv = ["debootstrap", "--variant=minbase", release, str(root), DEBIAN_MIRROR]
        # Its messages (stdout) give the phases; its errors (stderr) reach the terminal as before.
        log_file = Path(tmp) / "debootstrap.log"
        rc = run_with_progress(argv, "base (debootstrap)", log_file, debootstrap_phase, stderr=None)
        if rc != 0:
            raise subprocess.CalledProcessError(rc, argv)
        # Keep the image small and its apt lists out of it, as the official image does.
        subprocess.run(["chroot", str(root), "apt-get", "clean"], check=True)
        for lists in (root / "var/lib/apt/lists").glob("*_*"):
            lists.unlink()
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        docker(
            "import",
            "--change",
            f"LABEL {LABEL}={want}",
            "--change",
            'CMD ["bash"]',
            "-",
            ref("base", release),
            stdin=tar.stdout,
            capture=True,
        )
        if tar.wait() != 0:
            raise SystemExit("images: tar of the debootstrap tree failed")


def tag_with_label(source: str, reference: str, want: str) -> None:
    with tempfile.TemporaryDirectory() as ctx:
        Path(ctx, "Dockerfile").write_text(f"FROM {source}\nLABEL {LABEL}={want}\n")
        docker("build", "-q", "-t", reference, ctx, capture=True)


def build_recipe(name: str, want: str, extra_ca: bytes, release: str) -> None:
    parent = parent_of(name)
    assert parent is not None
    with tempfile.TemporaryDirectory(prefix=f"mnh-{name}-") as tmp:
        ctx = Path(tmp) / "ctx"
        shutil.copytree(RECIPES / name, ctx)
        (ctx / "extra-ca.crt").write_bytes(extra_ca)
        build_log = Path(tmp) / "build.log"
        argv = [
            "docker",
            "build",
            "--build-arg",
            f"BASE={ref(parent, release)}",
            "--label",
            f"{LABEL}={want}",
            "-t",
            ref(name, release),
            str(ctx),
        ]
        # BuildKit, where it builds, prints its steps as plain lines (the classic builder ignores this).
        env = {**os.environ, "BUILDKIT_PROGRESS": "plain"}
        returncode = run_with_progress(argv, name, build_log, build_step, env=env)
        if returncode != 0:
            tail = build_log.read_text(errors="replace").splitlines()[-40:]
            raise SystemExit(f"images: building {ref(name, release)} failed:\n" + "\n".join(tail))


def ensure(name: str, extra_ca: bytes, source: str, force: bool, done: set[str], *, release: str | None = None) -> str:
    release = release or release_of(name)
    reference = ref(name, release)
    if reference in done:
        return recipe_hash(name, extra_ca, release)
    parent = parent_of(name)
    if parent is not None:
        ensure(parent, extra_ca, source, force, done, release=release)
    want = recipe_hash(name, extra_ca, release)
    have = current_hash(reference)
    same = None if force else image_with_hash(want)
    if have == want and not force:
        log(f"{reference} is current (recipe {want}), reused")
    elif same is not None:
        docker("tag", same, reference, capture=True)
        log(f"{reference} tagged from the image of the same recipe {want} ({same})")
    else:
        start = time.monotonic()
        log(f"building {reference} (recipe {want}, was {have or 'absent'})")
        if parent is None:
            build_base(want, source, release)
        else:
            build_recipe(name, want, extra_ca, release)
        log(f"built {reference} in {time.monotonic() - start:.0f}s")
    done.add(reference)
    return want


def save(name: str, want: str, cache: Path) -> Path:
    out_dir = cache / "images"
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = out_dir / f"{name}-{want}.tar"
    if archive.is_file():
        log(f"{archive} is current, reused")
        return archive
    start = time.monotonic()
    for stale in out_dir.glob(f"{name}-*.tar"):
        stale.unlink()
    partial = archive.with_suffix(".tar.part")
    docker("save", "-o", str(partial), ref(name))
    partial.rename(archive)
    log(f"saved {archive} in {time.monotonic() - start:.0f}s")
    return archive


@contextlib.contextmanager
def one_at_a_time(cache: Path) -> Iterator[None]:
    """Hold the cache's lock: scenarios run side by side (tools/scenarios.py --jobs) each build or
    reuse their images in their own dependency step, and two builds of one image, or a save beside a
    build, must not overlap. The second run waits, then finds the image current. Closing the file
    releases the lock, also when the run fails or is killed."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / "images.lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another tools/images.py run holds the image cache; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "names", nargs="*", help=f"images to build (default: all recipes but {', '.join(sorted(EXPLICIT_IMAGES))})"
    )
    parser.add_argument("--save", action="store_true", help="also write a docker save archive to the cache")
    parser.add_argument("--force", action="store_true", help="rebuild even when the recipe hash matches")
    parser.add_argument(
        "--base-source",
        choices=("auto", "pull", "debootstrap"),
        default=os.environ.get("MNH_BASE_SOURCE", "auto"),
        help="where the Debian base comes from (default: auto = pull, else debootstrap)",
    )
    parser.add_argument(
        "--extra-ca-bundle",
        default=default_extra_ca_bundle(),
        help=f"PEM bundle trusted in addition to Debian's CAs inside the images (default: ${EXTRA_CA_ENV} when "
        f"set, empty for none; else {HOST_CA_BUNDLE} when it exists)",
    )
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument("--print-archive", action="store_true", help="print the archive path of each image")
    args = parser.parse_args(argv)

    result = sys.stdout
    if args.print_archive:
        # The paths on standard output, the rest (this process's lines and its children's) on standard
        # error, where the user sees it while the caller reads the paths (module docstring).
        sys.stdout.flush()
        result = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    extra_ca = read_extra_ca(args.extra_ca_bundle)
    done: set[str] = set()
    with one_at_a_time(args.cache_dir):
        for name in args.names or default_names():
            want = ensure(name, extra_ca, args.base_source, args.force, done)
            if args.save or args.print_archive:
                archive = save(name, want, args.cache_dir)
                if args.print_archive:
                    print(archive, file=result, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The environment variables from which a rank loads code, and where a value of one leads.

Root on any worker may change the share, so what every rank executes must not come from there
(docs/architecture.md, "What every node executes, only the master writes"). Code comes in through the
command, and through the environment: ``CODE_PATH_VARIABLES`` lists every variable from which Python,
the dynamic loader, NCCL, torch, Triton, CUDA, a compiler or a compiler cache loads code, or data it
executes (compiled kernels, bytecode, ``.pth`` files), with where the name comes from and what it loads
there. horovod_launch's rules (``_share_code``, and so the site's gate) refuse any of them in
``horovod_launch_env`` whose value leads onto the share. This table is the one list: the role README,
SECURITY.md and docs/architecture.md point here.

How a value is read, by ``kind``:

- ``DIRS``: a list of directories, ``:``-separated (the loader also takes ``;``); every entry counts, a
  relative one is below the working directory, and an empty entry in a non-empty list *is* the working
  directory (glibc's ld.so, Python's getpath both read it so).
- ``PATH``: one file or directory; relative to the working directory; empty means unset.
- ``PROGRAM``: a program or library, possibly with arguments (``CC="ccache gcc"``): a bare name is looked
  up on ``PATH`` or the loader's path (which the rules guard), a word with ``/`` is a path.
- ``WORDS``: a family of names whose values are of many kinds: every word (split at ``:;,=`` and blanks)
  that has a ``/`` or starts with ``~`` is a path.
- ``PREFIXED``: a path below a directory only the image knows (``PYTHONPLATLIBDIR`` below Python's
  prefix, which may be a virtual environment anywhere): an absolute value is checked as it is; a
  relative one can leave that directory only with ``..``, and leads onto the share when what follows the
  ``..`` can enter the share from outside it (``../../data1/share/lib``, ``../share/lib``): see
  ``leads_onto``.

Every path is resolved as the rank would see it: ``~`` (and ``~/...``) is the home directory (the
``HOME`` of ``horovod_launch_env``, else root's ``/root`` in the container), ``~root`` is ``/root`` and
``~NAME`` is ``/home/NAME``; a relative path is joined to the working directory; ``..`` and ``.`` are
normalised. In ld.so's lists ``$ORIGIN`` (the program's directory) is a base only the image knows, read
as ``PREFIXED`` is; ``$LIB`` and ``$PLATFORM`` are names that do not climb.

A name ending in ``*`` (or holding one) stands for a family (``fnmatch``): ``PYTHON*``, ``XDG_*``,
``TRITON_*``, ``CCACHE_*``, OpenMPI's ``OMPI_MCA_*``/``PRTE_MCA_*``/``PMIX_MCA_*`` and ``NCCL_*_PLUGIN``
hold paths of every kind, and a variable added to them later is covered without a new row. An exact
name takes precedence over a family. Families are *not* made of prefixes whose members name outputs
users put on the share on purpose: ``NCCL_*`` (``NCCL_DEBUG_FILE``, ``NCCL_TOPO_DUMP_FILE``), ``TORCH_*``
(``TORCH_TRACE``, ``TORCH_COMPILE_DEBUG_DIR``), ``HOROVOD_*`` (``HOROVOD_TIMELINE``,
``HOROVOD_AUTOTUNE_LOG``: files Horovod writes, none it loads). Names that change how every program is
loaded whatever their value (``LD_PRELOAD``, ``LD_AUDIT``, ``PYTHONHOME``, ``PATH``, ``BASH_ENV``,
``ENV``) are refused outright in ``horovod_launch_env`` by the rules' ``RESERVED_ENV``; they are rows here
too, for a command that sets them itself (``env LD_PRELOAD=... python3 train.py``).

Not covered: what the training job itself reads as data and trusts (checkpoints and datasets it
unpickles, Hugging Face caches): SECURITY.md says what a job's processes trust; compiler flags
(``CFLAGS``, ``NVCC_APPEND_FLAGS``) and interpreters other than Python and sh.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ansible_collections.multinode.horovod.plugins.module_utils.paths import is_inside

DIRS, PATH, PROGRAM, WORDS, PREFIXED = "dirs", "path", "program", "words", "prefixed"

# Root's home in the containers (docker exec runs as root; the image's passwd gives /root).
CONTAINER_HOME = "/root"


@dataclass(frozen=True)
class CodePath:
    """How to read one variable's value (``kind``), who reads it (``reader``, for the message), what it
    loads from there (``loads``), where the name is documented (``doc``), and whether the reader writes
    there too (``cache``: the fix is then a directory of the container, the artifact directory being
    read-only on the workers)."""

    kind: str
    reader: str
    loads: str
    doc: str
    cache: bool = False


PY = "python3 --help-env (Python 3.11), the site and tempfile modules"
LDSO = "man 8 ld.so; glibc's unsecvars.h (dropped for setuid programs)"
GLIBC = "glibc's unsecvars.h (dropped for setuid programs)"
NCCL = "NCCL's Environment Variables and plugin documentation (NCCL_NET_PLUGIN ...)"
MPI = "OpenMPI's MCA parameters (ompi_info --all)"
TEMP = "temporary files, among them torch.compile's default cache of the kernels it builds"


def _row(kind: str, reader: str, loads: str, doc: str, cache: bool = False) -> CodePath:
    return CodePath(kind, reader, loads, doc, cache)


CODE_PATH_VARIABLES: dict[str, CodePath] = {
    # Python
    "PYTHONPATH": _row(DIRS, "Python", "the modules every rank imports before the image's", PY),
    "PYTHONHOME": _row(DIRS, "Python", "its standard library (<prefix>[:<exec_prefix>])", PY),
    "PYTHONUSERBASE": _row(PATH, "Python", "the user site-packages, whose .pth files run code at start-up", PY),
    "PYTHONPYCACHEPREFIX": _row(PATH, "Python", "the bytecode (.pyc) it runs instead of the sources", PY, cache=True),
    "PYTHONSTARTUP": _row(PATH, "Python", "a file it runs when it starts interactively", PY),
    "PYTHONPLATLIBDIR": _row(PREFIXED, "Python", "its own compiled modules (below its prefix)", PY),
    "PYTHON*": _row(WORDS, "Python", "what its variables name (those of a later Python too)", PY),
    "HOME": _row(
        PATH,
        "Python, torch, Triton, CUDA and NCCL",
        "the user site-packages (~/.local: .pth files run code), the caches of torch (~/.cache/torch), Triton "
        "(~/.triton) and CUDA (~/.nv), NCCL's ~/.nccl.conf",
        "POSIX; Python's site module, torch.hub, Triton, the CUDA driver, NCCL",
        cache=True,
    ),
    "XDG_*": _row(
        WORDS,
        "torch and other programs",
        "caches and configuration (torch.hub's code and torch's extension builds: $XDG_CACHE_HOME/torch)",
        "the freedesktop base directory specification; torch.hub",
        cache=True,
    ),
    "TMPDIR": _row(PATH, "Python", TEMP, f"POSIX; {PY}", cache=True),
    "TMP": _row(PATH, "Python", TEMP, PY, cache=True),
    "TEMP": _row(PATH, "Python", TEMP, PY, cache=True),
    # The dynamic loader and glibc
    "PATH": _row(DIRS, "the shell and execvp", "the programs named without a '/' (python3 itself)", "POSIX"),
    "BASH_ENV": _row(PATH, "bash", "a script it runs before any other", "bash(1)"),
    "ENV": _row(PATH, "sh", "a script it runs at start", "POSIX sh"),
    "LD_PRELOAD": _row(WORDS, "the dynamic loader", "shared libraries it loads into every program first", LDSO),
    "LD_AUDIT": _row(WORDS, "the dynamic loader", "auditing libraries it loads into every program", LDSO),
    "LD_LIBRARY_PATH": _row(
        DIRS, "the dynamic loader", "the shared libraries of every program, before the image's", LDSO
    ),
    "LD_ORIGIN_PATH": _row(PATH, "the dynamic loader", "the libraries a library's $ORIGIN search path names", LDSO),
    "GCONV_PATH": _row(DIRS, "glibc", "the character-set converters (shared libraries) of iconv", GLIBC),
    "LOCPATH": _row(DIRS, "glibc", "the locale files it maps and parses in every program", GLIBC),
    "NLSPATH": _row(DIRS, "glibc", "the message catalogues, whose format strings programs print through", GLIBC),
    # NCCL: a plugin is libnccl-<type>-<name>.so on the loader's path, or a file name.
    "NCCL_NET_PLUGIN": _row(PROGRAM, "NCCL", "its network plugin (a shared library)", NCCL),
    "NCCL_TUNER_PLUGIN": _row(PROGRAM, "NCCL", "its tuner plugin (a shared library)", NCCL),
    "NCCL_PROFILER_PLUGIN": _row(PROGRAM, "NCCL", "its profiler plugin (a shared library)", NCCL),
    "NCCL_ENV_PLUGIN": _row(PROGRAM, "NCCL", "its environment plugin (a shared library)", NCCL),
    "NCCL_*_PLUGIN": _row(PROGRAM, "NCCL", "a plugin (a shared library; one of a later NCCL too)", NCCL),
    "NCCL_CONF_FILE": _row(PATH, "NCCL", "its settings, which may name the plugins above", NCCL),
    # torch and Triton
    "TORCH_HOME": _row(
        PATH, "torch", "torch.hub's repositories (hubconf.py runs) and checkpoints", "torch.hub", cache=True
    ),
    "TORCH_EXTENSIONS_DIR": _row(
        PATH, "torch", "the C++/CUDA extensions it builds", "torch.utils.cpp_extension", cache=True
    ),
    "TORCHINDUCTOR_CACHE_DIR": _row(
        PATH, "torch", "the kernels torch.compile (Inductor) builds", "torch._inductor", cache=True
    ),
    "PYTORCH_KERNEL_CACHE_PATH": _row(
        PATH, "torch", "the CUDA kernels it compiles at run time", "ATen's CUDA jit_utils", cache=True
    ),
    "TRITON_CACHE_DIR": _row(PATH, "Triton", "the GPU kernels and launchers it compiles", "Triton", cache=True),
    "TRITON_HOME": _row(
        PATH, "Triton", "its .triton directory: compiled kernels and their overrides", "Triton", cache=True
    ),
    "TRITON_*": _row(
        WORDS,
        "Triton",
        "kernel overrides, the compilers and libraries it runs (TRITON_PTXAS_PATH, ...)",
        "Triton (triton.knobs)",
        cache=True,
    ),
    # CUDA, compilers and compiler caches
    "CUDA_CACHE_PATH": _row(
        PATH, "the CUDA driver", "the GPU code it compiled from PTX", "CUDA's JIT cache", cache=True
    ),
    "CUDA_HOME": _row(PATH, "torch and Triton", "the CUDA toolkit: nvcc and libraries", "torch.utils.cpp_extension"),
    "CUDA_PATH": _row(PATH, "torch", "the CUDA toolkit: nvcc and libraries", "torch.utils.cpp_extension"),
    "CC": _row(PROGRAM, "Triton and torch.compile", "the C compiler they run to build what they load", "Triton"),
    "CXX": _row(PROGRAM, "torch.compile", "the C++ compiler it runs to build what it loads", "torch._inductor"),
    "CCACHE_*": _row(
        WORDS,
        "ccache",
        "its cache of compiled objects, the compilers it runs, its configuration",
        "ccache(1)",
        cache=True,
    ),
    "SCCACHE_DIR": _row(PATH, "sccache", "its cache of compiled objects", "sccache", cache=True),
    "NUMBA_CACHE_DIR": _row(PATH, "Numba", "the functions it compiled", "Numba", cache=True),
    "CUPY_CACHE_DIR": _row(PATH, "CuPy", "the kernels it compiled", "CuPy", cache=True),
    # MPI (horovod_launch_controller: mpi)
    "OMPI_MCA_*": _row(WORDS, "OpenMPI", "components (mca_base_component_path), parameter files, programs", MPI),
    "PRTE_MCA_*": _row(WORDS, "PRRTE", "components, parameter files, programs", MPI),
    "PMIX_MCA_*": _row(WORDS, "PMIx", "components and parameter files", MPI),
    "OPAL_PREFIX": _row(
        PATH, "OpenMPI", "its installation: the libraries and components of mpirun and every rank", MPI
    ),
}

SPLIT = {DIRS: re.compile(r"[:;]"), PROGRAM: re.compile(r"\s+"), WORDS: re.compile(r"[:;,=\s]+")}
ORIGIN_RE = re.compile(r"\$(ORIGIN|\{ORIGIN\})(/|$)")
# $LIB and $PLATFORM expand to names that do not climb (lib/x86_64-linux-gnu, x86_64).
TOKEN_RE = re.compile(r"\$(LIB|PLATFORM|\{LIB\}|\{PLATFORM\})")


def code_path(name: str) -> CodePath | None:
    """The row of `name`: its own, else its family's (the longest pattern that matches); None if none."""
    if name in CODE_PATH_VARIABLES:
        return CODE_PATH_VARIABLES[name]
    families = [key for key in CODE_PATH_VARIABLES if "*" in key and fnmatch.fnmatchcase(name, key)]
    return CODE_PATH_VARIABLES[max(families, key=len)] if families else None


def home_dir(env: Mapping[str, object], cwd: str | None) -> str | None:
    """The ranks' home directory: ``HOME`` of the run's environment (relative: below `cwd`), else root's."""
    home = env.get("HOME")
    if not isinstance(home, str) or home == "":
        return CONTAINER_HOME
    return resolve(home, cwd, None)


def resolve(path: str, cwd: str | None, home: str | None) -> str | None:
    """`path` as an absolute, normalised path: ``~`` through `home`, relative through `cwd`; None when
    its base is not known (a malformed working directory)."""
    if path == "~" or path.startswith("~/"):
        base, path = home, path[2:]
    elif path.startswith("~"):
        user, _slash, rest = path[1:].partition("/")
        base, path = ("/root" if user == "root" else f"/home/{user}"), rest
    elif path.startswith("/"):
        base = "/"
    else:
        base = cwd
    if base is None:
        return None
    # normpath keeps a leading "//" (POSIX leaves its meaning open; Linux reads it as "/").
    return "/" + posixpath.normpath(f"{base}/{path}").lstrip("/")


def leads_onto(place: str, root: str) -> bool:
    """Whether `place` (from ``places``) is `root` or below it. A relative place climbs out of a directory
    only the image knows (``../../data1/share``): it leads there when, from some directory outside
    `root`, it can enter it, i.e. what follows the ``..`` begins with a tail of `root`'s components."""
    if place.startswith("/"):
        return is_inside(place, root)
    rest = [part for part in place.split("/") if part not in ("..", "")]
    parts = root.strip("/").split("/")
    return any(rest[: len(parts) - start] == parts[start:] for start in range(len(parts)))


def _unknown_base(path: str, what: str) -> Iterator[tuple[str, str]]:
    """A relative `path` below a directory only the image knows: only one that climbs out of it can leave."""
    climbed = posixpath.normpath(path) if path else "."
    if climbed == ".." or climbed.startswith("../"):
        yield climbed, f"relative to {what}, which it climbs out of with '..'"


def places(row: CodePath, value: str, cwd: str | None, home: str | None) -> Iterator[tuple[str, str]]:
    """Every place a variable of `row` set to `value` leads to, with how it got there: ``(place, how)``,
    the place absolute, or relative when it climbs out of a directory only the image knows (see
    ``leads_onto``)."""
    if row.kind == PREFIXED and not value.startswith(("/", "~")):
        yield from _unknown_base(value, "the image's Python prefix")
        return
    words = [value] if row.kind in (PATH, PREFIXED) else SPLIT[row.kind].split(value)
    if row.kind != DIRS or value == "":
        words = [word for word in words if word != ""]
    for word in words:
        if row.kind in (PROGRAM, WORDS) and "/" not in word and not word.startswith("~"):
            continue  # a name looked up on PATH or the loader's path, or not a path at all
        if row.kind == DIRS and ORIGIN_RE.match(word):
            yield from _unknown_base(
                TOKEN_RE.sub("x", ORIGIN_RE.sub("", word, count=1)), "$ORIGIN (the program's directory)"
            )
            continue
        if row.kind == DIRS:
            word = TOKEN_RE.sub("x", word)  # noqa: PLW2901 - the entry as the loader reads it
        if word == "":
            how = "an empty entry, which is the working directory"
        elif word.startswith("~"):
            how = "through the home directory"
        elif word.startswith("/"):
            how = "absolute"
        else:
            how = "relative to the working directory"
        where = resolve(word, cwd, home)
        if where is not None:
            yield where, how

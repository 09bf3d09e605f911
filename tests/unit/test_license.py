# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection says one license everywhere: LICENSE, galaxy.yml, the role metas, every code file.

A code file is a tracked ``*.py`` or ``*.sh`` file, a Makefile, or any tracked file that starts with
``#!``. Left out on purpose: templates (``*.j2``: a header there would land in the rendered file on
every host, changing it), and the image recipes under images/ (their bytes are the recipe hash: a
header would rebuild every image).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SPDX = "GPL-3.0-or-later"
HEADER = ("# Copyright: multinode.horovod contributors", f"# SPDX-License-Identifier: {SPDX}")


def tracked() -> list[str]:
    if not shutil.which("git"):
        pytest.skip("needs git")
    res = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        pytest.skip("needs a git checkout")
    return [name for name in res.stdout.split("\0") if name and (REPO / name).is_file()]


def is_code(name: str, text: str) -> bool:
    path = Path(name)
    if path.suffix == ".j2" or name.startswith("images/"):
        return False
    return path.suffix in (".py", ".sh") or path.name == "Makefile" or text.startswith("#!")


def header_problem(text: str) -> str | None:
    """Why a code file's header is wrong (the two lines first, after a shebang), or None."""
    lines = text.splitlines()
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    if tuple(lines[:2]) != HEADER:
        return f"does not start with {' / '.join(HEADER)!r} (after any #! line)"
    return None


def test_every_code_file_carries_the_license_header():
    missing = []
    for name in tracked():
        text = (REPO / name).read_text(errors="replace")
        if is_code(name, text) and (problem := header_problem(text)):
            missing.append(f"{name}: {problem}")
    assert missing == []


def test_the_header_check_finds_a_missing_or_misplaced_header():
    good = "\n".join(HEADER) + '\n"""Doc."""\n'
    assert header_problem(good) is None
    assert header_problem("#!/usr/bin/env python3\n" + good) is None
    assert header_problem('"""Doc."""\n') is not None
    assert header_problem('# SPDX-License-Identifier: Apache-2.0\n"""Doc."""\n') is not None
    assert header_problem('"""Doc."""\n' + good) is not None  # not at the top
    assert is_code("tools/x.py", "") and is_code(".ci/run", "#!/bin/sh\n") and is_code("Makefile", "")
    assert not is_code("roles/r/templates/x.sh.j2", "#!/bin/sh\n") and not is_code("images/a/Dockerfile", "")


def test_license_is_the_gpl_3_text():
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("GNU GENERAL PUBLIC LICENSE\n                       Version 3, 29 June 2007")
    assert "END OF TERMS AND CONDITIONS" in text


def test_galaxy_yml_and_every_role_meta_name_the_same_license():
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())
    assert galaxy["license"] == [SPDX]
    assert "license_file" not in galaxy  # ansible-galaxy takes one of the two
    for meta in sorted((REPO / "roles").glob("*/meta/main.yml")):
        assert yaml.safe_load(meta.read_text())["galaxy_info"]["license"] == SPDX, meta


def test_galaxy_yml_names_no_invented_address():
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())
    for field in ("repository", "documentation", "homepage", "issues"):
        value = galaxy.get(field)
        assert not value or (".invalid" not in value and "example." not in value), f"{field}: {value}"

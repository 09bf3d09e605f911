"""This checkout's plugins and tools, loaded by path (they are files of a collection, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load(relpath: str, name: str) -> ModuleType:
    """A fresh module from REPO/relpath, registered as `name` (dataclasses resolve their module by name)."""
    spec = importlib.util.spec_from_file_location(name, REPO / relpath)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

"""tools/images.py: recipe parents and hashes decide when an image is rebuilt."""

from __future__ import annotations

import pytest
from checkout import load


def load_images_module():
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


def test_image_reference(images):
    assert images.ref("machine") == "multinode-horovod/machine:local"

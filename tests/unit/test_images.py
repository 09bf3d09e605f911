# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
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


@pytest.fixture
def host_bundle(tmp_path, monkeypatch):
    """The host's own CA bundle, as a file under tmp_path, with MNH_EXTRA_CA_BUNDLE unset."""
    module = load_images_module()
    bundle = tmp_path / "ca-certificates.crt"
    bundle.write_bytes(b"HOST PEM")
    monkeypatch.setattr(module, "HOST_CA_BUNDLE", bundle)
    monkeypatch.delenv("MNH_EXTRA_CA_BUNDLE", raising=False)
    return module, bundle


def test_the_extra_ca_bundle_defaults_to_the_hosts_own(host_bundle):
    images, bundle = host_bundle
    assert images.default_extra_ca_bundle({}) == str(bundle)
    bundle.unlink()
    assert images.default_extra_ca_bundle({}) == ""


def test_mnh_extra_ca_bundle_wins_over_the_host_bundle_even_when_empty(host_bundle):
    images, _ = host_bundle
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
    images, _ = host_bundle
    monkeypatch.setenv("MNH_EXTRA_CA_BUNDLE", str(tmp_path / "missing.pem"))
    with pytest.raises(SystemExit, match=r"missing\.pem .*MNH_EXTRA_CA_BUNDLE= \(empty\) for none"):
        ensured_with(images, monkeypatch, ["base"])

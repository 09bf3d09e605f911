# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""horovod_code_ref_kind: a pinned ref is a tag or a full commit id; a branch, a short id or a typo is not."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.multinode.horovod.plugins.filter.horovod_code import code_ref_kind

C1 = "1" * 40
C2 = "2" * 40
LS_REMOTE = (
    f"{C1}\trefs/heads/master\n"
    f"{C1}\trefs/heads/release\n"
    f"{C2}\trefs/tags/v0.28.1\n"
    f"{C1}\trefs/tags/v0.28.1^{{}}\n"
    f"{C2}\trefs/tags/release\n"
    f"{C1}\trefs/tags/light\n"
)


@pytest.mark.parametrize(
    ("version", "kind"),
    [
        ("v0.28.1", "tag"),
        ("refs/tags/v0.28.1", "tag"),
        ("light", "tag"),
        (" light ", "tag"),
        ("master", "branch"),
        ("refs/heads/master", "branch"),
        ("release", "ambiguous"),
        ("refs/tags/release", "tag"),
        ("refs/heads/release", "branch"),
        ("a" * 40, "commit"),
        ("b" * 64, "commit"),
        ("a" * 39, "missing"),
        ("abc1234", "missing"),
        ("A" * 40, "missing"),
        ("v0.28.2", "missing"),
        ("refs/tags/master", "missing"),
        ("refs/heads/v0.28.1", "missing"),
        ("HEAD", "missing"),
    ],
)
def test_kind_of_ref(version, kind):
    assert code_ref_kind(LS_REMOTE, version) == kind


def test_an_empty_repository_has_no_refs():
    assert code_ref_kind("", "v1") == "missing"


def test_non_text_is_refused():
    with pytest.raises(AnsibleFilterError):
        code_ref_kind(None, "v1")

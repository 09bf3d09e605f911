# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The OpenPGP key reader (plugins/module_utils/openpgp.py) behind docker_horovod's pin of NVIDIA's
repository key. Fixtures are Debian's public archive keys; the fingerprints are what
`gpg --show-keys --with-colons` prints for them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.multinode.horovod.plugins.module_utils import openpgp
from checkout import load

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BOOKWORM_AUTOMATIC = "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8"
TWO_KEYS = ["4D64FEC119C2029067D6E791F8D2585B8783D481", "05AB90340C0C5E797F44A8C8254CF3B5AEC0A8F0"]


def keys(name):
    return openpgp.primary_keys((FIXTURES / name).read_bytes())


def test_binary_and_armoured_files_give_the_same_fingerprint():
    for name in ("debian-bookworm-automatic.gpg", "debian-bookworm-automatic.asc"):
        found = keys(name)
        assert [key["fingerprint"] for key in found] == [BOOKWORM_AUTOMATIC], name
        assert found[0]["user_ids"] == ["Debian Archive Automatic Signing Key (12/bookworm) <ftpmaster@debian.org>"]


def test_every_primary_key_of_a_keyring_is_listed_subkeys_not():
    assert [key["fingerprint"] for key in keys("debian-bookworm-two-keys.gpg")] == TWO_KEYS


def test_armour_headers_and_crlf_are_read():
    text = (FIXTURES / "debian-bookworm-automatic.asc").read_bytes()
    text = text.replace(b"-----\n\n", b"-----\nComment: a header\nVersion: x\n\n", 1).replace(b"\n", b"\r\n")
    assert [key["fingerprint"] for key in openpgp.primary_keys(text)] == [BOOKWORM_AUTOMATIC]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"<html>not found</html>", "not an OpenPGP packet header"),
        (b"", "no public key in it"),
        ((FIXTURES / "debian-bookworm-automatic.gpg").read_bytes()[:500], "cut short"),
        (b"-----BEGIN PGP SIGNATURE-----\nabc\n-----END PGP SIGNATURE-----\n", "not a PGP PUBLIC KEY BLOCK"),
        (b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!!\n-----END PGP PUBLIC KEY BLOCK-----\n", "not valid base64"),
    ],
)
def test_what_is_not_a_key_file_is_refused(data, problem):
    with pytest.raises(openpgp.KeyFileError, match=problem):
        openpgp.primary_keys(data)


key_info = load("plugins/modules/openpgp_key_info.py", "openpgp_key_info")


def test_the_module_matches_the_key_against_the_pin_as_people_write_it():
    data = (FIXTURES / "debian-bookworm-automatic.asc").read_bytes()
    spaced = " ".join(BOOKWORM_AUTOMATIC[i : i + 4] for i in range(0, 40, 4)).lower()
    read = key_info.describe(data, spaced)
    assert (read["fingerprints"], read["pinned"], read["matches"]) == ([BOOKWORM_AUTOMATIC], BOOKWORM_AUTOMATIC, True)
    assert not key_info.describe(data, TWO_KEYS[0])["matches"]
    assert not key_info.describe(data)["matches"]
    # A keyring that holds the pinned key and another one is not the pinned key.
    assert not key_info.describe((FIXTURES / "debian-bookworm-two-keys.gpg").read_bytes(), TWO_KEYS[0])["matches"]


def test_fingerprints_as_people_write_them_are_normalised():
    assert openpgp.normalise_fingerprint("c95b 321b 61e8 8c18 09c4  f759 ddca e044 f796 ecb0") == (
        "C95B321B61E88C1809C4F759DDCAE044F796ECB0"
    )


def test_the_module_returns_what_its_return_doc_names():
    documented = set(yaml.safe_load(key_info.RETURN))
    returned = set(key_info.describe((FIXTURES / "debian-bookworm-automatic.asc").read_bytes(), TWO_KEYS[0]))
    assert returned == documented

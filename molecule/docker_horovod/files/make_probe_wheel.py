# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the scenario's probe wheel: a tiny pure-Python distribution, built without network or
build tools (a wheel is a zip with a dist-info directory), so prepare.yml needs only Python."""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

NAME, VERSION = "mnh_probe", "1.0.0"
FILES = {
    f"{NAME}/__init__.py": '"""Probe of the docker_horovod scenario."""\n\nMARKER = "mnh-probe-1.0.0"\n',
    f"{NAME}-{VERSION}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: mnh-probe\nVersion: {VERSION}\n",
    f"{NAME}-{VERSION}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: make_probe_wheel\nRoot-Is-Purelib: true\n"
    "Tag: py3-none-any\n",
    f"{NAME}-{VERSION}.dist-info/top_level.txt": f"{NAME}\n",
}


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def main(out_dir: str) -> int:
    wheel = Path(out_dir) / f"{NAME}-{VERSION}-py3-none-any.whl"
    record_path = f"{NAME}-{VERSION}.dist-info/RECORD"
    lines = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in FILES.items():
            data = text.encode()
            archive.writestr(path, data)
            lines.append(record_line(path, data))
        lines.append(f"{record_path},,")
        archive.writestr(record_path, "\n".join(lines) + "\n")
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

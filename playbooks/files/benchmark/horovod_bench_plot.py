# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Draw a benchmark report (playbooks/benchmark.yml), read on stdin, as a PNG, on the controller.

Left: the allreduce's bus bandwidth against the message size, with the link rate as a line. Right:
images per second against the number of processes, with perfect scaling from one process as a line.
Prints {"drawn": true|false, "reason": why not}: without matplotlib (requirements.txt) the report is
written without its plot.

    python3 horovod_bench_plot.py report.png < report.json
"""

from __future__ import annotations

import json
import sys
from typing import Any


def render(report: dict[str, Any], path: str) -> None:
    # Imported here: without matplotlib, main() says so instead of failing at the import.
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt  # noqa: PLC0415

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), dpi=80)
    allreduce, link = report.get("allreduce"), report.get("link") or {}
    rows = [r for r in (allreduce or {}).get("results", []) if r.get("busbw_Bps")]
    if rows:
        left.plot([r["bytes"] for r in rows], [r["busbw_Bps"] / 1e9 for r in rows], "o-", label="allreduce busbw")
        left.set_xscale("log", base=2)
    if link.get("rate_Bps"):
        left.axhline(link["rate_Bps"] / 1e9, color="tab:red", linestyle="--", label="link rate (iperf3)")
    left.set_xlabel("message size (bytes, float32)")
    left.set_ylabel("GB/s")
    left.set_title(f"allreduce, {report.get('np')} processes ({report.get('backend') or '-'})")
    left.grid(True, alpha=0.3)
    if rows or link.get("rate_Bps"):
        left.legend(loc="best", fontsize="small")
    points = sorted((report.get("synthetic") or {}).get("points", []), key=lambda p: p["np"])
    if points:
        right.plot([p["np"] for p in points], [p["img_per_s"] for p in points], "o-", label="measured")
        one = next((p for p in points if p["np"] == 1), None)
        if one:
            top = points[-1]["np"]
            right.plot([1, top], [one["img_per_s"], one["img_per_s"] * top], ":", color="gray", label="perfect scaling")
        right.set_xticks(sorted({1, *(p["np"] for p in points)}))
        right.legend(loc="best", fontsize="small")
        right.set_title(
            f"{report['synthetic'].get('model')}, efficiency {report['synthetic'].get('scaling_efficiency') or 0:.2f}"
        )
    right.set_xlabel("processes")
    right.set_ylabel("images/s")
    right.grid(True, alpha=0.3)
    fig.suptitle(
        f"{report.get('name')}: {', '.join(h.get('name', '') for h in report.get('hosts', []))}", fontsize="medium"
    )
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


def main(png: str) -> dict[str, Any]:
    try:
        import matplotlib  # noqa: F401, PLC0415
    except ImportError:
        return {"drawn": False, "reason": f"matplotlib is not installed for {sys.executable} on the controller "
                "(pip install matplotlib)"}  # fmt: skip
    render(json.load(sys.stdin), png)
    return {"drawn": True, "reason": None}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))

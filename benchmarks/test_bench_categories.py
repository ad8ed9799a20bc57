"""The categories benchmark's short tier: python -m pytest benchmarks/test_bench_categories.py -q"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_categories  # noqa: E402


def test_bench_categories_quick_prints_every_row(capsys):
    bench_categories.run(quick=True)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    peers = [r for r in rows if "flights" in r]
    data = {r.split("|")[1] for r in peers}
    assert len(peers) == 3 * 2 * len(data) and len(data) >= 1       # 3 methods x 2 epsilons
    for line in peers:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2] in ("flat", "tree", "OpenDP") and float(cells[3]) > 0
    flat = {(r.split("|")[1], r.split("|")[2]): float(r.split("|")[4]) for r in peers
            if "| flat |" in r}
    opendp = {(r.split("|")[1], r.split("|")[2]): float(r.split("|")[4]) for r in peers
              if "| OpenDP |" in r}
    # the same mechanism (discrete Laplace of scale 1/epsilon per level): the same error
    # law; a loose factor keeps this a smoke test of the script, not a statistical test
    for key, value in flat.items():
        assert value < 3 * opendp[key] + 1
    assert sum(1 for r in rows if r.endswith("| flat |") or r.endswith("| tree |")) == 2

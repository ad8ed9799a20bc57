"""Short tier of benchmarks/bench_partition_rule.py: the tables on a tiny subsample.

Checks structure (a row per set, epsilon and kind; finite ratios; the first candidate is
1 against itself; the halves partition the nine sets), not accuracy.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest  # noqa: E402

import bench_accuracy  # noqa: E402
import bench_partition_rule as bench  # noqa: E402


def test_halves_split_the_nine_sets():
    names = [s[0] for s in bench_accuracy.datasets(1, 50)]
    names += ["nyc departure s", "nyc air time", "diamond price", "movie votes"]
    assert sorted(bench.TUNE + bench.CHECK) == sorted(names)
    assert not set(bench.TUNE) & set(bench.CHECK)


def test_tables_on_a_tiny_subsample(capsys, tmp_path):
    summary = bench.main(["--half", "check", "--data", "default", "--kinds", "small,data",
                          "--candidates", "2:0.25 4:0.35", "--subsample", "1500", "--reps", "2",
                          "--queries", "30", "--epsilons", "1", "--peer-buckets", "256",
                          "--peers-cache", str(tmp_path / "p.json")])
    out = capsys.readouterr().out
    rows = [l for l in out.splitlines() if l.startswith("| flights delay")
            or l.startswith("| zip longitude")]
    assert len(rows) == 2 * 2
    assert set(summary) == {(k, 1.0, c) for k in ("small", "data") for c in ("2:0.25", "4:0.35")}
    for (kind, eps, label), rs in summary.items():
        assert len(rs) == 2
        for to_peer, to_first in rs:
            assert math.isfinite(to_peer) and to_peer > 0 and math.isfinite(to_first)
            if label == "2:0.25":
                assert to_first == 1.0
    assert (tmp_path / "p.json").is_file()
    few = bench.main(["--half", "tune", "--data", "default", "--kinds", "small", "--no-peers",
                      "--candidates", "2:0.25 4:0.5", "--subsample", "800", "--reps", "2",
                      "--queries", "20", "--epsilons", "3"])
    assert {k[2] for k in few} == {"2:0.25", "4:0.5"}
    assert all(math.isnan(r) for rs in few.values() for r, _ in rs)


def test_bad_candidates():
    with pytest.raises(ValueError):
        bench.parse_candidates("")
    assert bench.parse_candidates("4:0.35") == [{"privtree_fanout": 4, "partition_share": 0.35}]
    assert bench.parse_candidates("cells rule") == [{"partition": "cells"}, {}]


def test_cells_and_the_rule_as_candidates(capsys):
    # a domain above 2**20 values: cells do not apply (nan, left out of the summary)
    summary = bench.main(["--half", "all", "--data", "default", "--kinds", "small", "--no-peers",
                          "--candidates", "4:0.35 cells rule", "--subsample", "800", "--reps",
                          "2", "--queries", "20", "--epsilons", "1"])
    out = capsys.readouterr().out
    assert any(l.startswith("| flights time ns") and "nan" in l for l in out.splitlines())
    cells = summary[("small", 1.0, "cells")]
    assert any(math.isnan(f) for _, f in cells) and any(math.isfinite(f) for _, f in cells)
    # the rule takes cells on flights distance (2**13 values): the same release as cells
    rows = {l.split("|")[1].strip(): l for l in out.splitlines() if l.startswith("| flights")}
    dist = [x.strip() for x in rows["flights distance"].split("|")[1:-1]]
    assert dist[-2] == dist[-1]

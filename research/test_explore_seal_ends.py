"""Short tier of research/explore_seal_ends.py.

Its ``equal`` model re-implements the adaptive grid's answers in numpy; it
must equal ``count_many`` (an independent check of the C answer kernel and
the seal model), and the per-end model must give finite answers.
"""
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "benchmarks"))

import explore_seal_ends  # noqa: E402


@pytest.mark.parametrize("dims,data", [(2, "default"), (3, "extra")])
def test_equal_model_is_the_grid_and_the_table_prints(dims, data, capsys):
    rows = explore_seal_ends.main(["--dims", str(dims), "--data", data, "--subsample", "4000",
                                   "--reps", "1", "--queries", "80", "--eps", "1"])
    out = capsys.readouterr().out
    assert len(rows) == (2 if dims == 2 and data == "default" else 1) * 3, out
    for name, eps, kind, rmse in rows:
        assert rmse["equal"] == pytest.approx(rmse["count_many"], rel=1e-9, abs=1e-9), (name, kind)
        assert np.isfinite(rmse["ends"]) and rmse["ends"] >= 0
    assert sum(line.startswith("| ") for line in out.splitlines()) == len(rows) + 1


def test_equal_model_answer_by_answer():
    import bench_accuracy
    import pydp_synopsis as ps
    from pydp_synopsis.rectangles import RectangleSynopsis

    name, pts, dom = bench_accuracy.datasets(2, 5000)[0]
    wl = bench_accuracy.make_workloads(2, pts, dom, 50, seed=3)
    syn = RectangleSynopsis.build(pts, domain=dom, epsilon=0.5, rng=ps.Rng(seed=4))
    for kind, (lo, hi, _) in wl.items():
        mine = explore_seal_ends.answers(syn, pts, lo, hi, "equal", np.random.default_rng(0))
        np.testing.assert_allclose(mine, syn.count_many(lo, hi), rtol=1e-9, atol=1e-7,
                                   err_msg=kind)

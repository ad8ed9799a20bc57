"""Short tier of research/explore_short_bias.py.

Both models keep every leaf's count, so they answer unions of whole leaves
exactly from the true counts; the ``uniform`` model is the release's own
estimator, so fed the release's leaves it must give the same bias as a direct
per-value count; the linear density stays non-negative.
"""
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "benchmarks"))

import explore_short_bias as esb  # noqa: E402


def _leaves():
    rng = np.random.default_rng(5)
    keys = np.sort(np.concatenate([rng.integers(0, 400, 3000), np.full(200, 37),
                                   rng.integers(700, 1000, 500)])).astype(np.int64)
    ends = np.array([20, 37, 90, 250, 399, 699, 850, 999], dtype=np.int64)
    return keys, esb.leaf_counts(ends, keys)


def test_leaf_counts_are_the_true_counts():
    keys, (first, ends, count) = _leaves()
    for a, b, c in zip(first, ends, count):
        assert c == np.count_nonzero((keys >= a) & (keys <= b))
    assert count.sum() == keys.size


@pytest.mark.parametrize("model", esb.MODELS)
def test_whole_leaves_are_exact_and_masses_kept(model):
    keys, (first, ends, count) = _leaves()
    i, j = np.triu_indices(ends.size)
    est = esb.answers(model, first, ends, count, first[i], ends[j])
    truth = np.array([np.count_nonzero((keys >= first[a]) & (keys <= ends[b]))
                      for a, b in zip(i, j)])
    np.testing.assert_allclose(est, truth, rtol=0, atol=1e-7)


def test_uniform_is_the_even_spread_and_linear_stays_nonnegative():
    keys, (first, ends, count) = _leaves()
    x = np.arange(0, 1000)
    uni = esb.answers("uniform", first, ends, count, x, x)       # one value each
    k = np.searchsorted(ends, x)
    np.testing.assert_allclose(uni, count[k] / (ends[k] - first[k] + 1), rtol=1e-12)
    lin = esb.answers("linear", first, ends, count, x, x)
    assert np.all(lin >= -1e-9)
    assert not np.allclose(lin, uni)                               # a slope somewhere
    s = esb.slopes(first, ends, count)
    assert s[1] == 0.0 and s[-1] == 0.0                            # a peak, the last leaf


def test_the_table_prints(capsys):
    rows = esb.main(["--subsample", "4000", "--reps", "1", "--queries", "60", "--eps", "1"])
    out = capsys.readouterr().out
    assert len(rows) == 5
    for name, eps, kind, rmse in rows:
        assert kind == "small" and all(np.isfinite(v) and v >= 0 for v in rmse.values()), name
    assert sum(line.startswith("| ") for line in out.splitlines()) == len(rows) + 1      # the header and the rows


def test_bad_kind_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        esb.main(["--kinds", "tiny"])
    assert exc.value.code == 2
    assert "--kinds" in capsys.readouterr().err

"""Side doors (issue #12): nothing but the released numbers may depend on the data.

Each test compares neighbouring inputs -- or inputs that differ only in data
-- and requires everything outside the release to be identical: the budget
ledger and BudgetError texts (1), exception messages (2), raising vs
releasing at the limits (3), what ``pydp-synopsis build`` prints (4).  The
broader per-mechanism leak checks (repr, saved header and meta, key
whitelists) are in tests/privacy/test_leaks.py.
"""
import csv
import re
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import cli
from pydp_synopsis.partition import OnlinePartition
from pydp_synopsis.rectangles import release as rect_release


def _error(fn):
    """``(type, message)`` of the exception ``fn()`` raises."""
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def _same_error(fn_x, fn_y, *secrets):
    """Both raise the same exception with the same text, which shows no secret."""
    ex, ey = _error(fn_x), _error(fn_y)
    assert ex == ey
    for s in secrets:
        assert not re.search(rf"(?<![\d.]){re.escape(str(s))}(?![\d.])", ex[1]), (s, ex[1])
    return ex[1]


BUILDERS = {
    "interval": lambda data, **kw: ps.IntervalSynopsis.build(
        np.asarray(data)[:, 0], domain=(0, 2**20), epsilon=1, rng=ps.Rng(seed=1), **kw),
    "adaptive": lambda data, **kw: ps.RectangleSynopsis.build(
        data, domain=[(0, 2**20)] * 2, epsilon=1, rng=ps.Rng(seed=1), **kw),
    "multitree": lambda data, **kw: ps.RectangleSynopsis.build(
        data, domain=[(0, 2**20)] * 2, epsilon=1, rng=ps.Rng(seed=1), structure="multitree", **kw),
}
X = np.arange(1234 * 2, dtype=np.int64).reshape(-1, 2)   # 1234 items
X_PRIME = np.vstack([X, [[7, 7]]])                       # 1235 items


# ------------------------------------------------------------- 1. the ledger
@pytest.mark.parametrize("name", BUILDERS)
def test_ledger_and_budget_error_carry_public_facts_only(name):
    build = BUILDERS[name]
    ledgers, refusals = [], []
    for data in (X, X_PRIME):
        budget = ps.Budget(2)
        build(data, budget=budget)
        ledgers.append(budget.ledger)
        refusals.append(_error(lambda: build(data, budget=ps.Budget(Fraction(1, 2)))))
    assert ledgers[0] == ledgers[1]
    assert refusals[0] == refusals[1] and refusals[0][0] is ps.BudgetError
    (what, eps), = ledgers[0]
    assert eps == 1 and "epsilon=1" in what and "1048576" in what     # public: epsilon, domain
    for text in (what, refusals[0][1]):
        assert "1234" not in text and "1235" not in text


def test_describe_formats_public_facts():
    from pydp_synopsis.budget import describe
    assert describe("KaryTreeCounter", horizon=10, epsilon=Fraction(1, 2)) == \
        "KaryTreeCounter(horizon=10, epsilon=1/2)"


# ------------------------------------------------------ 2. exception messages
def test_partition_messages_name_the_rule_not_the_data():
    op = lambda: OnlinePartition(size=10, epsilon=1, rng=ps.Rng(seed=1))  # noqa: E731
    _same_error(lambda: op().feed([1, -1]), lambda: op().feed([5, -7, 3]), -7, -1)
    _same_error(lambda: op().feed_sparse([2, 9], [1, 1], 3),
                lambda: op().feed_sparse([2, 7], [1, 1], 3), 9, 7)
    _same_error(lambda: op().feed_sparse([2], [-3], 3), lambda: op().feed_sparse([2], [-4], 3),
                -3, -4)
    # how many items a batch holds is data too
    _same_error(lambda: op().feed_sparse([1, 2], [1], 3), lambda: op().feed_sparse([1, 2, 2], [1], 3),
                "(2,)", "(3,)")


@pytest.mark.parametrize("name", BUILDERS)
def test_build_messages_do_not_show_values_or_counts(name):
    build = BUILDERS[name]
    bad_x, bad_y = X.copy(), X_PRIME.copy()
    bad_x[5, 0], bad_y[9, 0] = 2**20 + 1, 2**20 + 99
    _same_error(lambda: build(bad_x), lambda: build(bad_y), 2**20 + 1, 2**20 + 99, 1234, 1235)
    if name != "interval":
        # a wrong number of columns: the message may name the columns, not the rows
        _same_error(lambda: build(np.zeros((1234, 3), dtype=np.int64)),
                    lambda: build(np.zeros((1235, 3), dtype=np.int64)), 1234, 1235)
        _same_error(lambda: build(np.zeros(1234, dtype=np.int64)),
                    lambda: build(np.zeros(1235, dtype=np.int64)), 1234, 1235)


# --------------------------------------------------- 3. raising vs releasing
COUNT_LIMITS = [2**61 - 129, 2**61 - 128, 2**61 - 1, 2**61, 2**62 - 1, 2**62, 2**63 - 2]


@pytest.mark.parametrize("a", COUNT_LIMITS)
def test_online_partition_counts_at_the_limits_release(a):
    """Neighbouring counts a and a + 1 at the old limits (the float guard raised
    at 2^61 - 128, C at 2^62) both release, and with one seed identically:
    the segment count saturates at 2^62 instead of raising."""
    outs = []
    for c in (a, a + 1):
        op = OnlinePartition(size=6, epsilon=1, rng=ps.Rng(seed=3))
        outs.append((op.feed([0, c, 0, c, c, 0]).tolist(),
                     op.to_state()["count"]))
        sp = OnlinePartition(size=6, epsilon=1, rng=ps.Rng(seed=3))
        outs.append((sp.feed_sparse([1, 3, 3, 4], [c, c, c, c], 6).tolist(), 0))
    assert outs[0] == outs[2] and outs[1] == outs[3]


def test_online_partition_takes_uint64_counts_beyond_int64():
    op = OnlinePartition(size=4, epsilon=1, rng=ps.Rng(seed=4))
    sealed = op.feed(np.array([0, 2**64 - 1, 2**63, 0], dtype=np.uint64))
    assert sealed.tolist()[-1] == 3


def test_multitree_point_limit_is_declared_and_checked_before_anything(monkeypatch):
    """The multi-tree's limit (2**32 - 1 points, the C kernel's) is a declared
    public part of the input space: n above it is refused before the budget is
    charged or a random bit drawn, with a message naming only the limit; the
    adaptive grid has no limit.  The real limit needs 2**32 points in memory,
    so the rule is exercised with the constant lowered."""
    from pydp_synopsis.rectangles.multitree import MAX_POINTS
    assert MAX_POINTS == 2**32 - 1 == ps._core.LIMITS.multitree_point_limit - 1
    monkeypatch.setattr(rect_release, "MAX_POINTS", 3)
    pts = [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]]
    build = lambda p, **kw: ps.RectangleSynopsis.build(  # noqa: E731
        p, domain=[(0, 7)] * 2, epsilon=1, structure="multitree", **kw)
    build(pts[:3])
    budget, rng = ps.Budget(10), ps.Rng(seed=5)
    text = _same_error(lambda: build(pts[:4], budget=budget, rng=rng),
                       lambda: build(pts[:5], budget=budget, rng=rng), 4, 5)
    assert "2**32 - 1" in text
    assert budget.spent == 0 and rng.random_uint64() == ps.Rng(seed=5).random_uint64()
    ps.RectangleSynopsis.build(pts, domain=[(0, 7)] * 2, epsilon=1)       # adaptive: no limit


# ------------------------------------------------------------ 4. the command
def _csv(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["a", "b"])
        w.writerows(rows)


@pytest.mark.parametrize("columns", ["a", "a,b"])
def test_cli_build_prints_only_released_numbers(tmp_path, capsys, columns):
    """stdout names the file, the structure's released size and epsilon; the true
    number of rows appears nowhere (the only data-dependent number is the
    released segment or node count, read back from the saved file)."""
    outs = []
    for name, n in (("x", 1234), ("y", 1235)):
        src, dst = tmp_path / f"{name}.csv", tmp_path / f"{name}.pds"
        _csv(src, [[i % 1000, (7 * i) % 1000] for i in range(n)])
        code = cli.main(["build", "--input", str(src), "--columns", columns, "--domain=0:999",
                         "--epsilon", "1", "--seed", "7", "--output", str(dst)])
        out, err = capsys.readouterr()
        assert code == 0 and err == ""
        syn = ps.load(dst)
        released = len(syn) if columns == "a" else syn.num_nodes
        outs.append(out.replace(str(dst), "OUT").replace(f"{released:,}", "RELEASED"))
    assert outs[0] == outs[1]
    assert not re.search(r"123[45]|1,23[45]", outs[0])
    assert re.fullmatch(r"wrote OUT: (interval synopsis: RELEASED segments|rectangle synopsis "
                        r"over 2 columns: RELEASED nodes), epsilon=1\n", outs[0])

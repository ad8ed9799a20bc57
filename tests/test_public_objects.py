"""Every public object reads well: a repr of public facts (never the data's size, never a
key), one spelling of record kinds (the old one still loads), signatures without sentinels,
class docstrings that start with what the class does for a user."""
import inspect
import json
import pathlib
import re

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import persist, sources

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
N = 1234     # a data size that must appear in no repr


def public_objects(tmp_path):
    gen = np.random.default_rng(0)
    values = gen.integers(0, 10_000, N)
    points = gen.integers(0, 1000, (N, 2))
    rng = ps.Rng(seed=b"not in the repr")
    csv = tmp_path / "t.csv"
    csv.write_text("x\n" + "".join(f"{v}\n" for v in values))
    counter = ps.KaryTreeCounter(horizon=10_000, epsilon=1.0, rng=rng)
    counter.update_many(np.ones(50, dtype=np.int64))     # time is public: not N
    sparse = ps.SparseStreamCounter(horizon=2**40, epsilon=1.0, rng=rng)
    sparse.update_many(np.ones(50, dtype=np.int64))
    online = ps.OnlinePartition(size=2**20, epsilon=1.0, rng=rng)
    online.feed(np.full(50, 3, dtype=np.int64))          # position is public: not N
    budget = ps.Budget(3)
    return {
        "IntervalSynopsis": ps.IntervalSynopsis.build(values, domain=(0, 9_999), epsilon=1.0,
                                                      rng=rng, budget=budget),
        "RectangleSynopsis": ps.RectangleSynopsis.build(points, domain=[(0, 999)] * 2,
                                                        epsilon=1.0, rng=rng),
        "Partition": ps.private_partition(values, domain=(0, 9_999), epsilon=1.0, rng=rng),
        "OnlinePartition": online,
        "TreePartition": ps.IntervalSynopsis.build(values, domain=(0, 9_999), epsilon=1.0,
                                                   rng=rng).partition,
        "CellPartition": ps.CellPartition(domain=(0, 9_999), beta=0.05),
        "BinaryTreeCounter": ps.BinaryTreeCounter(horizon=5000, epsilon=1.0, rng=rng),
        "KaryTreeCounter": counter,
        "SparseStreamCounter": sparse,
        "SqrtFactorizationCounter": ps.SqrtFactorizationCounter(horizon=100, epsilon=1.0,
                                                                delta=1e-6, rng=rng),
        "Budget": budget,
        "Rng": rng,
        "CsvSource": sources.files(str(csv), ["x"]),
        "ArraySource": sources.ArraySource([values]),
        "SqlSource": sources.SqlSource("postgresql://me:hunter2@db/x", ["a"], table="t"),
        "Column": ps.Column.datetime("pickup", unit="s", tz="UTC", resolution="1h"),
        "ErrorBars": ps.IntervalSynopsis.build(values, domain=(0, 9_999), epsilon=1.0,
                                               rng=rng).confidence_intervals([10], [5000], 0.9),
        "LevelHistogram": ps.LevelHistogram.build(np.array(["a", "b"])[values % 2],
                                                  levels=["a", "b"], epsilon=1.0, rng=rng),
    }


def test_every_public_object_has_a_readable_repr(tmp_path):
    objs = public_objects(tmp_path)
    for name in [n for n in ps.__all__ if inspect.isclass(getattr(ps, n))
                 and not issubclass(getattr(ps, n), Exception)]:
        assert name in objs, f"no repr check for {name}"
    for name, obj in objs.items():
        text = repr(obj)
        assert type(obj).__repr__ is not object.__repr__, name
        assert text.startswith(type(obj).__name__ + "("), text
        assert " at 0x" not in text and "\n" not in text and len(text) < 300, text
        assert not re.search(rf"\b{N}\b|\b1,234\b", text), text       # never the data's size
        assert "hunter2" not in text and "not in the repr" not in text, text
    assert repr(objs["Rng"]) == "Rng(<seeded: tests only>)"
    assert repr(objs["SqlSource"]) == "SqlSource('postgresql://me:***@db/x', table='t', columns=['a'])"


def test_record_kinds_have_one_spelling_and_old_files_load(tmp_path):
    kinds = set()
    for name, obj in public_objects(tmp_path).items():
        if hasattr(obj, "_to_record"):
            kinds.add(obj._to_record()[0])
    assert kinds == {"interval-synopsis", "rectangle-synopsis", "binary-tree-counter",
                     "kary-tree-counter", "sparse-stream-counter", "sqrt-factorization-counter",
                     "dnrr-partition", "privtree-partition", "online-partition", "cell-partition",
                     "level-histogram"}
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)+", k) for k in kinds)
    # release 0.1 files carry the underscored counter kinds and still load
    for name in ("counter_binary", "counter_kary", "counter_sparse"):
        raw = (FIXTURES / f"{name}.pds").read_bytes()
        assert b"_tree_counter" in raw or b"sparse_stream_counter" in raw
        counter = ps.load(FIXTURES / f"{name}.pds")
        ps.save(counter, tmp_path / f"{name}.pds")
        kind = persist.read_record(tmp_path / f"{name}.pds")[0]
        assert "_" not in kind and ps.load(tmp_path / f"{name}.pds").time == counter.time
    expected = json.loads((FIXTURES / "release-0.1.json").read_text())
    assert {k for k in expected if k.startswith("counter_")} == {"counter_binary", "counter_kary",
                                                                 "counter_sparse"}


def test_builder_signatures_show_no_sentinels():
    for fn in (ps.RectangleSynopsis.build, ps.IntervalSynopsis.build, ps.private_partition):
        text = str(inspect.signature(fn))
        assert "Ellipsis" not in text and "..." not in text and "<" not in text, text
    params = inspect.signature(ps.RectangleSynopsis.build).parameters
    assert list(params)[:4] == ["points", "domain", "epsilon", "beta"]
    assert params["tuning"].kind is inspect.Parameter.VAR_KEYWORD


@pytest.mark.parametrize("cls", [ps.IntervalSynopsis, ps.RectangleSynopsis])
def test_class_docstrings_start_with_what_the_class_does(cls):
    doc = inspect.getdoc(cls)
    first = doc.split("\n\n")[0]
    assert first.startswith("How many")
    opening = doc[:doc.index("The mechanism")] if "The mechanism" in doc else doc[:1200]
    opening = " ".join(opening.split())
    for word in ("epsilon", "error bars", "privacy"):
        assert word in opening
    for jargon in ("DNRR", "Fig. 1", "threshold", "Laplace"):
        assert jargon not in opening


def test_error_bars_are_exported():
    """``ps.ErrorBars`` is the type ``confidence_intervals`` returns (issue 31 part 7)."""
    s = ps.IntervalSynopsis.build([3, 5, 5, 9], domain=(0, 15), epsilon=1.0, rng=ps.Rng(seed=1))
    bars = s.confidence_intervals([0], [15], 0.9)
    assert type(bars) is ps.ErrorBars and "ErrorBars" in ps.__all__
    answer, low, high, std, noise, bias = bars
    assert bars._fields == ("answer", "low", "high", "std", "noise", "bias")
    assert np.array_equal(low, answer - noise - bias)
    assert inspect.getdoc(ps.ErrorBars).startswith("Per-query error bars")

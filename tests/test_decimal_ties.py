"""One rounding rule for decimals, whatever carries them: a float stands for its shortest
decimal form, rounded half to even like the text it was parsed from.  The same decimal
column, half of it on half-unit ties at ``scale=1e6``, releases the same synopsis under a
seed from CSV text, Parquet doubles, a SQLite REAL column and a numpy float64 array
(issue 32, "the same decimal column can release differently")."""
import sqlite3
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.inputs import to_fixed_point

# 300 values of 7 decimals ending in 5 (ties at scale 1e6) and 300 that are not
_DIGITS = np.random.default_rng(32).integers(0, 4 * 10**6, 600)
TEXT = [f"41.{d:06d}5" for d in _DIGITS[:300]] + [f"41.{d:07d}" for d in _DIGITS[300:]]
DOMAIN = ("41.0", "45.0")


def record(syn):
    kind, meta, arrays, _ = syn._to_record()
    return kind, {k: v.tolist() for k, v in arrays.items()}


def build(data, **kw):
    return ps.IntervalSynopsis.build(data, domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=11),
                                     **kw)


def test_a_float_rounds_as_its_shortest_decimal():
    floats = np.array([float(t) for t in TEXT])
    # the nearest doubles of "41.xxxxxx5" fall on both sides of the tie: their exact
    # binary values would round some up where the text rounds to even
    exact = [round(Fraction(float(f)) * 10**6) for f in floats[:300]]
    text = to_fixed_point(TEXT, "1e6")
    assert exact != text[:300].tolist()           # the old rule disagreed on some ties
    assert to_fixed_point(floats, "1e6").tolist() == text.tolist()
    assert to_fixed_point(floats.astype(object), "1e6").tolist() == text.tolist()
    assert ps.Column.decimal("x", scale="1e6").to_int(list(floats)).tolist() == text.tolist()


def test_csv_parquet_sqlite_numpy_release_the_same(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    floats = np.array([float(t) for t in TEXT])
    want = record(build(np.array(TEXT, dtype=object), scale="1e6"))
    (tmp_path / "x.csv").write_text("x\n" + "\n".join(TEXT) + "\n")
    pq.write_table(pa.table({"x": floats}), tmp_path / "x.parquet")
    db = tmp_path / "x.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (x REAL)")
        con.executemany("INSERT INTO t VALUES (?)", [(f,) for f in floats.tolist()])
    got = {
        "numpy": build(floats, scale="1e6"),
        "csv": build(sources.files(str(tmp_path / "x.csv"), ["x"], scale="1e6")),
        "parquet": build(sources.files(str(tmp_path / "x.parquet"), ["x"], scale="1e6")),
        "sqlite": build(sources.SqlSource(f"sqlite:///{db}", ["x"], table="t", scale="1e6")),
    }
    for name, syn in got.items():
        assert record(syn) == want, name

"""Refusals say nothing about the rows: two neighbouring inputs (one row added or removed) that
trigger the same documented refusal -- a value outside the domain, a value that is no number, a
NULL -- print byte for byte the same message, on every path that does not go through a database
(a numpy array, a pandas Series, a CSV, Parquet or npz file, the CLI build from a CSV file).

The messages name the argument or column and the rule only: never the value, its length, the row
holding it, nor the number of rows (docs/security-messages.md)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

#: a row number or a number of rows
ROW_NUMBER = re.compile(r"\brows? *[0-9]|[0-9] *rows?\b")
GOOD = [str(v) for v in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5)]


def _insert(rows, at, value):
    return rows[:at] + [value] + rows[at:]


def neighbours(bad_a, bad_b):
    """Pairs (A, B) of row lists, B = A with one row added, both holding a bad value: the added
    row is the other bad value (first, last, in the middle) or a good row before the bad one
    (which moves the bad row)."""
    a = _insert(GOOD, 5, bad_a)
    return [(a, _insert(a, 0, bad_b)), (a, a + [bad_b]), (a, _insert(a, 8, bad_b)),
            (a, ["7"] + a), ([bad_a], [bad_a, bad_b])]


CLASSES = {
    # refusal class: the two bad values of a pair
    "outside the domain": ("1000000000", "1000000007"),
    "no number": ("TOPSECRET", "x"),
    "NULL": ("", ""),
}


def message(build):
    try:
        build()
    except Exception as exc:            # the one line a user sees: its class and text
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError("the build did not refuse")


def build(data, **kw):
    return ps.IntervalSynopsis.build(data, domain=(0, 100), epsilon=1, rng=ps.Rng(seed=1), **kw)


def as_numpy(rows, refusal):
    if refusal == "NULL":
        return np.array([float(v) if v else np.nan for v in rows])
    if refusal == "no number":
        return np.array(rows)             # a str array: its dtype's length is the longest value
    return np.array([int(v) for v in rows])


def as_series(rows, refusal):
    if refusal == "NULL":
        return pd.Series([int(v) if v else None for v in rows], dtype="Int64", name="x")
    if refusal == "no number":
        return pd.Series(rows, name="x")
    return pd.Series([int(v) for v in rows], name="x")


def write_csv(path, rows):
    # two columns, so that an empty field is a NULL and not a blank line
    path.write_text("x,y\n" + "".join(f"{v},1\n" for v in rows))


def write_parquet(path, rows, refusal):
    if refusal == "no number":
        col = pa.array(rows)
    else:
        col = pa.array([int(v) if v else None for v in rows], type=pa.int64())
    pq.write_table(pa.table({"x": col}), path)


def write_npz(path, rows, refusal):
    np.savez(path, x=as_numpy(rows, refusal))


PATHS = {
    "numpy": lambda tmp, rows, refusal: message(lambda: build(as_numpy(rows, refusal))),
    "pandas": lambda tmp, rows, refusal: message(lambda: build(as_series(rows, refusal))),
    "csv": lambda tmp, rows, refusal: (write_csv(tmp / "in.csv", rows), message(
        lambda: build(sources.files(str(tmp / "in.csv"), ["x"]))))[1],
    "csv scale": lambda tmp, rows, refusal: (write_csv(tmp / "in.csv", rows), message(
        lambda: build(sources.files(str(tmp / "in.csv"), ["x"], scale="1"))))[1],
    "parquet": lambda tmp, rows, refusal: (write_parquet(tmp / "in.parquet", rows, refusal),
                                           message(lambda: build(sources.files(
                                               str(tmp / "in.parquet"), ["x"]))))[1],
    "npz": lambda tmp, rows, refusal: (write_npz(tmp / "in.npz", rows, refusal), message(
        lambda: build(sources.files(str(tmp / "in.npz"), ["x"]))))[1],
}


@pytest.mark.parametrize("refusal", list(CLASSES))
@pytest.mark.parametrize("path", list(PATHS))
def test_neighbours_get_the_same_message(tmp_path, path, refusal):
    seen = set()
    for a, b in neighbours(*CLASSES[refusal]):
        text_a, text_b = PATHS[path](tmp_path, a, refusal), PATHS[path](tmp_path, b, refusal)
        assert text_a == text_b, (a, b)
        seen.add(text_a)
    text, = seen                                # one message for the whole class
    text = text.replace(str(tmp_path), "<dir>")    # the file's name is the caller's
    assert "\n" not in text
    for secret in ("1000000000", "TOPSECRET", str(len(GOOD))):
        assert secret not in text, text
    assert not ROW_NUMBER.search(text), text
    assert "<U" not in text                     # no string length either


def test_the_message_names_the_column_and_the_rule():
    text = message(lambda: build(pd.Series(["1", "TOPSECRET"], name="x")))
    assert "'x'" in text and "not a number" in text
    text = message(lambda: build(pd.Series([1, None], dtype="Int64", name="x")))
    assert "column 'x' holds NULL values" in text and "dropna=True" in text
    assert "--" not in text                     # the API names no command-line flag
    assert message(lambda: build(np.array([5, 10**9]))) == (
        "DomainError: values must lie in the domain [0, 100]: some value is outside it")


def test_counts_and_rectangles_name_no_row_count():
    # a counts= array of the wrong length: the rule, not the two lengths
    texts = {message(lambda: build(np.arange(n) % 50, counts=np.ones(n + 1, dtype=np.int64)))
             for n in (10, 11)}
    text, = texts
    assert "10" not in text and "11" not in text and "12" not in text
    pts = [np.array([[1, 2], [3, 10**9]]), np.array([[1, 2], [3, 10**9], [4, 10**9 + 7]])]
    texts = {message(lambda: ps.RectangleSynopsis.build(p, domain=[(0, 9), (0, 9)], epsilon=1))
             for p in pts}
    assert len(texts) == 1
    strings = [np.array([["1", "2"], ["3", "TOPSECRET"]]), np.array([["1", "2"], ["3", "x"]])]
    texts = {message(lambda: ps.RectangleSynopsis.build(p, domain=[(0, 9), (0, 9)], epsilon=1))
             for p in strings}
    assert len(texts) == 1 and "<U" not in texts.pop()


@pytest.mark.integration
@pytest.mark.parametrize("refusal", list(CLASSES))
def test_cli_build_prints_the_same_bytes_for_neighbours(tmp_path, refusal):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ps.__file__)))
    out = tmp_path / "o.syn"
    cmd = [sys.executable, "-m", "pydp_synopsis.cli", "build", "--input", str(tmp_path / "in.csv"),
           "--columns", "x", "--domain", "0:100", "--epsilon", "1", "--output", str(out)]
    a, b = neighbours(*CLASSES[refusal])[0]
    printed = []
    for rows in (a, b):
        write_csv(tmp_path / "in.csv", rows)
        proc = subprocess.run(cmd, capture_output=True, env=env, timeout=120, cwd=tmp_path)
        assert proc.returncode == 2 and not out.exists()
        printed.append(proc.stdout + b"\0" + proc.stderr)
    assert printed[0] == printed[1]
    assert printed[0].count(b"\n") == 1 and not ROW_NUMBER.search(printed[0].decode())


@pytest.mark.parametrize("call", [
    lambda xs: ps.KaryTreeCounter(horizon=100, epsilon=1, rng=ps.Rng(seed=1)).update_many(xs),
    lambda xs: ps.SqrtFactorizationCounter(horizon=100, epsilon=1, delta=1e-6,
                                           rng=ps.Rng(seed=1)).update_many(xs),
    lambda xs: ps.SparseStreamCounter(horizon=100, epsilon=1, rng=ps.Rng(seed=1)).update_sparse(xs),
    lambda xs: ps.private_partition(xs, domain=(0, 99), epsilon=1, counts=np.ones(2, np.int64)),
], ids=["kary", "sqrt", "sparse-positions", "partition-counts"])
def test_stream_and_partition_inputs_never_tell_a_string_length(call):
    """'got dtype <U9' would tell the longest string's length: every neighbour reads 'str'."""
    said = []
    for xs in (np.array(["1", "TOPSECRET"]), np.array(["1", "x"])):
        with pytest.raises(TypeError) as info:
            call(xs)
        said.append(str(info.value))
    assert said[0] == said[1] and "<U" not in said[0]

"""Fuzz tier over the input surfaces of issue 30: ``.npy`` headers, ``.npz`` archives and
query files.

Each example mutates a valid file (the ``.npy`` header's shape, dtype and
order, the data's length; the zip directory's sizes, CRC and method; the
query file's header and fields) and reads it as a user would.  The only
outcomes allowed: the data read correctly (equal to ``numpy.load`` of the
same file) or one clean :class:`~pydp_synopsis.errors.InputError` /
:class:`~pydp_synopsis.errors.FormatError` (the command line: exit 0, or
exit 2 with one line).  Never a MemoryError, never another exception, never
a hang (an alarm fails the example after 10 s).  Bounded: 150 examples per
surface (``PDS_FUZZ_EXAMPLES`` sets more), each a few milliseconds.
"""
import contextlib
import io
import os
import signal
import struct
import zipfile

import numpy as np
import numpy.lib.format as npformat
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pydp_synopsis as ps
from pydp_synopsis import cli
from pydp_synopsis.errors import InputError
from pydp_synopsis.inputs import read_columns
from pydp_synopsis.sources import files

pytestmark = pytest.mark.fuzz

FUZZ = settings(max_examples=int(os.environ.get("PDS_FUZZ_EXAMPLES", 150)), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

DESCRS = ["<i8", ">i8", "<u8", "<i4", "|u1", "<f8", ">f4", "|b1", "<U3", "<U64", "<U65", "|O",
          "|S4", "|V8", "<c16", "<M8[D]", "<m8[s]", "<i8,<i8", "garbage", "", 7]
SHAPES = st.one_of(
    st.lists(st.integers(-3, 40), max_size=3).map(tuple),
    st.lists(st.sampled_from([0, 1, 2**31, 2**37, 2**62, 2**64, -2**63]), min_size=1,
             max_size=3).map(tuple),
    st.sampled_from(["(3,)", "3", None, (3.0,), (True,)]))


def _hang(signum, frame):
    raise AssertionError("hang: reading a fuzzed input took 10 s")


@contextlib.contextmanager
def deadline(seconds=10):
    signal.signal(signal.SIGALRM, _hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)


def header_bytes(d, version):
    """An .npy magic and header for the dict ``d`` written as text (not checked)."""
    text = repr(d).encode("latin1", "replace")
    pad = 64 - (len(text) + 10 + version) % 64
    text += b" " * pad + b"\n"
    if version == 1:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text
    return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(text)) + text


@st.composite
def npy_files(draw):
    base = np.arange(draw(st.integers(0, 12)), dtype=np.int64) * 3 - 5
    if draw(st.booleans()):          # a real file, then one field changed
        buf = io.BytesIO()
        arr = base.reshape(-1, 2) if base.size % 2 == 0 and draw(st.booleans()) else base
        np.save(buf, np.asfortranarray(arr) if draw(st.booleans()) else arr)
        raw = bytearray(buf.getvalue())
        if raw and draw(st.booleans()):
            pos = draw(st.integers(0, len(raw) - 1))
            raw[pos] = draw(st.integers(0, 255))
        cut = draw(st.integers(-8, 8))
        return bytes(raw[:len(raw) + cut] if cut < 0 else raw + b"\0" * cut)
    d = {"descr": draw(st.sampled_from(DESCRS)), "fortran_order": draw(st.sampled_from(
        [False, True, 0, "no"])), "shape": draw(SHAPES)}
    if draw(st.booleans()):
        d[draw(st.sampled_from(["extra", "descr", "shape"]))] = draw(st.sampled_from([1, "x", ()]))
    data = draw(st.binary(max_size=96))
    return header_bytes(d, draw(st.sampled_from([1, 2]))) + data


def _same_as_numpy(path, got, columns):
    """Whatever we read equals numpy's reading of the same file."""
    want = np.load(path, allow_pickle=False)
    if want.ndim == 1:
        want = want[:, None]
    for k, col in enumerate(got):
        assert np.array_equal(np.asarray(col), want[:, int(columns[k]) if columns else k])


@FUZZ
@given(raw=npy_files())
@example(raw=b"\x93NUMPY\x01\x00v\x00\x00'descr': '<i8', 'fortran_order': False, 'shape': (1,), }"
             + b" " * 60 + b"\n" + b"\xfb" + b"\xff" * 7)       # tokenize.TokenError in numpy
@example(raw=b"\x93NUMPY\x01\x006\x00{'descr': (), 'fortran_order': False, 'shape': ()}   \n")
def test_fuzzed_npy_reads_correctly_or_raises_input_error(tmp_path, raw):
    path = tmp_path / "f.npy"
    path.write_bytes(raw)
    with deadline():
        try:
            got = read_columns(str(path), [])
        except InputError:
            got = None
        try:
            chunks = list(files(str(path), [], chunk_rows=4).chunks())
        except InputError:
            chunks = None
    if got is not None:
        _same_as_numpy(path, got, None)
    if chunks:
        whole = [np.concatenate([c[k] for c in chunks]) for k in range(len(chunks[0]))]
        _same_as_numpy(path, whole, None)


@st.composite
def npz_files(draw):
    x = np.arange(draw(st.integers(0, 30)), dtype=np.int64) - 7
    buf = io.BytesIO()
    (np.savez_compressed if draw(st.booleans()) else np.savez)(buf, x=x, y=x * 2)
    raw = bytearray(buf.getvalue())
    heads = [i for i in range(len(raw) - 4) if raw[i:i + 4] in (b"PK\x01\x02", b"PK\x03\x04")]
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.sampled_from(heads))
        central = raw[at + 2] == 1
        field = draw(st.sampled_from(["crc", "csize", "usize", "method", "byte"]))
        where = {"crc": 16, "csize": 20, "usize": 24, "method": 10}.get(field)
        if where is None:
            pos = draw(st.integers(0, len(raw) - 1))
            raw[pos] = draw(st.integers(0, 255))
            continue
        where = where if central or field == "method" else where - 2
        if field == "method":
            struct.pack_into("<H", raw, at + where, draw(st.sampled_from([0, 8, 12, 14, 99])))
        else:
            struct.pack_into("<I", raw, at + where, draw(st.sampled_from(
                [0, 1, 2**31, 2**32 - 1, draw(st.integers(0, 2**32 - 1))])))
    return bytes(raw)


@FUZZ
@given(raw=npz_files())
def test_fuzzed_npz_reads_correctly_or_raises_input_error(tmp_path, raw):
    path = tmp_path / "f.npz"
    path.write_bytes(raw)
    with deadline():
        try:
            got = read_columns(str(path), ["x", "y"])
        except InputError:
            got = None
        try:
            chunks = list(files(str(path), ["y"], chunk_rows=7).chunks())
        except InputError:
            chunks = None
    if got is not None:
        assert np.array_equal(got[0], member(path, "x")) and np.array_equal(got[1], member(path, "y"))
    if chunks:
        assert np.array_equal(np.concatenate([c[0] for c in chunks]), member(path, "y"))


def member(path, name):
    """numpy's reading of one member (numpy.load sniffs the first bytes; zipfile, as the
    package, reads the directory at the end)."""
    with zipfile.ZipFile(path) as zf, zf.open(f"{name}.npy") as fh:
        return npformat.read_array(fh, allow_pickle=False)


@pytest.fixture(scope="module")
def synopses(tmp_path_factory):
    d = tmp_path_factory.mktemp("syn")
    one, two = d / "i.pds", d / "r.pds"
    ps.IntervalSynopsis.build(np.arange(100) % 50, domain=(0, 99), epsilon=1,
                              rng=ps.Rng(seed=1)).save(one)
    ps.RectangleSynopsis.build(np.column_stack([np.arange(100) % 50, np.arange(100) % 7]),
                               domain=[(0, 99), (0, 9)], epsilon=1, rng=ps.Rng(seed=1)).save(two)
    return {1: one, 2: two}


FIELDS = st.one_of(st.integers(-5, 120).map(str), st.sampled_from(
    ["", " 3 ", "1e3", "0x10", "1.5", "-0", "+4", "99999999999999999999", "NaN", "é", "\x00",
     '"5"', "5,6", "\ufeff7", "2**64"]))


@st.composite
def query_files(draw, dims):
    names = ["lo", "hi"] if dims == 1 else ["lo_0", "lo_1", "hi_0", "hi_1"]
    header = list(names)
    if draw(st.booleans()):
        header = draw(st.permutations(header + ["note"]))
    if draw(st.integers(0, 9)) == 0:
        header = header[:-1]                       # a missing column
    rows = draw(st.lists(st.lists(FIELDS, min_size=len(header), max_size=len(header)),
                         max_size=12))
    if rows and draw(st.booleans()):
        rows[draw(st.integers(0, len(rows) - 1))].pop()   # a ragged row
    text = ",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in rows)
    raw = text.encode()
    if draw(st.integers(0, 9)) == 0:
        pos = draw(st.integers(0, len(raw)))
        raw = raw[:pos] + b"\xff" + raw[pos:]
    return raw


@FUZZ
@given(data=st.data())
def test_fuzzed_query_files_answer_or_exit_2_with_one_line(tmp_path, synopses, data):
    dims = data.draw(st.sampled_from([1, 2]))
    path = tmp_path / "q.csv"
    path.write_bytes(data.draw(query_files(dims)))
    out, err = io.StringIO(), io.StringIO()
    with deadline(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["query", str(synopses[dims]), "--queries", str(path)])
    if rc == 0:
        # at most one note: queries reaching outside the domain are answered clipped
        notes = err.getvalue().splitlines()
        assert len(notes) <= 1 and all(
            n.startswith("pydp-synopsis: note: ") and "outside the domain" in n for n in notes)
        assert out.getvalue().startswith("lo")
    else:
        assert rc == 2 and out.getvalue() == ""
        assert len(err.getvalue().splitlines()) == 1
        assert err.getvalue().startswith("pydp-synopsis: error: ")
        assert "Traceback" not in err.getvalue()


def test_the_zip_member_reader_refuses_a_member_that_is_not_npy(tmp_path):
    """The archive route of the fuzzed cases: a member of raw bytes, refused in one line."""
    path = tmp_path / "r.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x.npy", b"not an array at all")
    with pytest.raises(InputError, match="array 'x': not a .npy array"):
        read_columns(str(path), ["x"])

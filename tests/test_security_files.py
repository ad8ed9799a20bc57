"""Crafted files and resource bombs on the input side (issue 30, sections 4 and 5).

Each test builds the hostile file the review used (a real record with one
field changed and a recomputed checksum, a sparse file, a tiny archive that
claims a huge array) and checks the refusal: one clean error, found before
anything of the declared size is allocated, in bounded time and memory.
Memory is measured in a child process under ``RLIMIT_AS`` (a MemoryError
there would be a traceback, not one line).
"""
import hashlib
import io
import json
import os
import pickle
import re
import resource
import signal
import struct
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import numpy.lib.format as npformat
import pytest

import pydp_synopsis as ps
from pydp_synopsis import cli, persist, plot, queryfiles
from pydp_synopsis.errors import InputError
from pydp_synopsis.inputs import read_columns
from pydp_synopsis.sources import files
from pydp_synopsis.privtree import root_depth

MAGIC = b"PDSYN\x00v1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_limited(code, limit_bytes=3 << 29, timeout=60):
    """Run ``code`` in a fresh Python under an address-space limit; ``(rc, out, err)``."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    # the package the tests import (an installed one has its C core; a checkout may not),
    # run from a directory that holds no other copy of it
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__))))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limit, env=env,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    return proc.returncode, proc.stdout, proc.stderr


#: Peak resident memory of this process in KiB (Linux's VmHWM: the process's own
#: memory, unlike ru_maxrss, which a child started by fork + exec inherits from its
#: parent -- a large test process made every child look large).
PEAK = ('int(next(l.split()[1] for l in open("/proc/self/status") '
        'if l.startswith("VmHWM:")))')
#: Reset the peak to the current resident size (Linux ``clear_refs`` 5).
RESET_PEAK = 'open("/proc/self/clear_refs", "w").write("5")'


def peak_kib():
    with open("/proc/self/status") as fh:
        return int(next(line.split()[1] for line in fh if line.startswith("VmHWM:")))


def reset_peak():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _alarm(signum, frame):
    raise AssertionError("hang: load looped for 10 s")


def with_timeout(fn, seconds=10):
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)


# ---------------------------------------------------------------- 1. shards
def test_root_depth_is_bounded_and_refuses_an_empty_shard():
    """The old loop ran forever for width 0 (a shard of no value)."""
    assert [root_depth(16, w) for w in (16, 8, 5, 4, 1)] == [0, 1, 2, 2, 4]
    assert root_depth(2**64, 1) == 64
    for width in (0, -1, 17):
        with pytest.raises(ps.ParameterError, match=r"shard width must be in \[1, 16\]"):
            with_timeout(lambda: root_depth(16, width))


def test_tree_partition_refuses_more_shards_than_values():
    with pytest.raises(ps.ParameterError, match=r"^shards must be in \[1, 4\], got 16$"):
        with_timeout(lambda: ps.TreePartition(np.array([3], dtype=np.uint64), domain=(0, 3),
                                              epsilon=1, beta=0.1, shards=16))


def test_a_record_with_more_shards_than_values_is_refused_in_one_line(tmp_path):
    """The crafted file of the review: ``shards`` above the domain's size, checksum valid."""
    good = tmp_path / "good.pds"
    ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1)).save(good)
    kind, meta, arrays, _ = persist.read_record(good)
    assert meta["shards"] == 1
    for shards in (11, 100, 2**16):
        bad = tmp_path / "bad.pds"
        persist.write_record(bad, kind, dict(meta, shards=shards), arrays)
        with pytest.raises(ps.FormatError, match=r"shards must be in \[1, 10\]"):
            with_timeout(lambda: ps.load(bad))


def test_info_and_query_on_a_record_with_too_many_shards_exit_2_in_one_line(tmp_path, capsys):
    good = tmp_path / "good.pds"
    ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1)).save(good)
    kind, meta, arrays, _ = persist.read_record(good)
    bad = tmp_path / "bad.pds"
    persist.write_record(bad, kind, dict(meta, shards=16), arrays)
    for args in (["info", str(bad)], ["query", str(bad), "--lo", "0", "--hi", "9"]):
        assert with_timeout(lambda: cli.main(args)) == 2
        err = capsys.readouterr().err
        assert err == "pydp-synopsis: error: invalid interval synopsis record: shards must be " \
                      "in [1, 10], got 16\n"


# ----------------------------------------------------------- 2. sparse file
def _sparse_record(tmp_path, total=2 << 30):
    """A real record followed by zeros up to ``total`` bytes (sparse: no disk used)."""
    path = tmp_path / "sparse.pds"
    ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1)).save(path)
    with open(path, "r+b") as fh:
        fh.truncate(total)
    return path


@pytest.mark.integration
def test_sparse_2gib_file_is_refused_fast_in_bounded_memory(tmp_path):
    """Old: the file read whole (6.3 GB, 41-49 s; MemoryError under a limit).  Now its
    declared sizes are compared with its real size before anything else is read."""
    path = _sparse_record(tmp_path)
    rc, out, err = run_limited(f"""
        import resource, time
        import pydp_synopsis as ps
        t0 = time.perf_counter()
        try:
            ps.load({str(path)!r})
        except ps.FormatError as exc:
            print(str(exc).replace({str(path)!r}, "PATH"))
        print(time.perf_counter() - t0)
        print({PEAK})
    """)
    assert rc == 0 and err == "", err
    message, elapsed, rss_kib = out.splitlines()
    assert message == "PATH: the file's size does not match its header (file truncated, " \
                      "extended or modified)"
    assert float(elapsed) < 0.5
    assert int(rss_kib) < 300 * 1024


def test_a_record_longer_than_its_content_is_refused(tmp_path):
    path = tmp_path / "x.pds"
    ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1)).save(path)
    with open(path, "ab") as fh:
        fh.write(b"\0" * 100)
    with pytest.raises(ps.FormatError, match="checksum mismatch"):
        ps.load(path)     # small: hashed to tell damage from crafting


def test_declared_array_size_is_checked_against_the_file_before_allocating(tmp_path):
    """A header declaring a 2**40-element array over a tiny payload (checksum valid):
    refused on the sizes, nothing allocated (old: offsets checked, now also exact size)."""
    spec = {"name": "a", "dtype": "int64", "shape": [2**37], "offset": 0, "nbytes": 2**40}
    head = json.dumps({"format_version": 1, "kind": "interval-synopsis",
                       "created": "2026-01-01T00:00:00+00:00", "meta": {}, "arrays": [spec]})
    body = MAGIC + struct.pack("<Q", len(head)) + head.encode() + b"\0" * 64
    path = tmp_path / "claim.pds"
    path.write_bytes(body + hashlib.sha256(body).digest())
    with pytest.raises(ps.FormatError, match="does not match its header|out of bounds"):
        ps.load(path)


def test_overlapping_arrays_are_refused(tmp_path):
    """Two arrays over the same bytes would be allocated twice (a memory multiplier)."""
    good = tmp_path / "good.pds"
    ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1)).save(good)
    raw = good.read_bytes()
    hlen = struct.unpack_from("<Q", raw, len(MAGIC))[0]
    head = json.loads(raw[len(MAGIC) + 8:len(MAGIC) + 8 + hlen])
    payload = raw[len(MAGIC) + 8 + hlen:-32]
    head["arrays"][1]["offset"] = 0
    new = json.dumps(head).encode()
    body = MAGIC + struct.pack("<Q", len(new)) + new + payload
    bad = tmp_path / "bad.pds"
    bad.write_bytes(body + hashlib.sha256(body).digest())
    with pytest.raises(ps.FormatError, match="out of bounds"):
        ps.load(bad)


def test_large_records_still_round_trip(tmp_path):
    """Arrays longer than one read block come back bit for bit."""
    path = tmp_path / "big.pds"
    arrays = {"a": np.arange(300_000, dtype=np.int64), "b": np.arange(5, dtype=np.uint8),
              "c": np.zeros((0, 3), dtype=np.float64)}
    persist.write_record(path, "test-kind", {"x": 1}, arrays)
    kind, meta, got, _ = persist.read_record(path)
    assert kind == "test-kind" and meta == {"x": 1}
    for name, arr in arrays.items():
        assert got[name].dtype == arr.dtype and got[name].shape == arr.shape
        assert np.array_equal(got[name], arr)


# ------------------------------------------------------------- 3. npz / npy
def npy_bytes(shape, descr="<i8", data=b"", fortran=False):
    """A ``.npy`` file's bytes: numpy's own header for ``shape``, then ``data``."""
    buf = io.BytesIO()
    npformat.write_array_header_1_0(buf, {"descr": descr, "fortran_order": fortran,
                                          "shape": tuple(shape)})
    return buf.getvalue() + data


def npz_with(path, members, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, raw in members.items():
            zf.writestr(name, raw)
    return path


def test_a_300_byte_npz_claiming_2_37_values_is_refused_in_one_line(tmp_path):
    """Old: "Unable to allocate 1.00 TiB" (MemoryError) from numpy.load."""
    path = npz_with(tmp_path / "claim.npz", {"x.npy": npy_bytes([2**37], data=b"\0" * 64)})
    assert path.stat().st_size < 300
    for read in (lambda: list(files(str(path), ["x"]).chunks()),
                 lambda: read_columns(str(path), ["x"])):
        with pytest.raises(InputError, match=r"^[^\n]*claim.npz: array 'x': the declared size does "
                                             r"not match the archive's"):
            read()


def test_a_npy_claiming_more_than_the_file_holds_is_refused(tmp_path):
    path = tmp_path / "claim.npy"
    path.write_bytes(npy_bytes([2**37], data=b"\0" * 64))
    for read in (lambda: list(files(str(path), []).chunks()),
                 lambda: list(files(str(path), ["0"]).chunks()),
                 lambda: read_columns(str(path), [])):
        with pytest.raises(InputError, match="declared size does not match the file's"):
            read()
    path.write_bytes(npy_bytes([3], data=b"\0" * 24 + b"extra"))     # longer than declared
    with pytest.raises(InputError, match="declared size does not match the file's"):
        read_columns(str(path), [])


@pytest.mark.parametrize("descr, fragment", [("|O", "dtype"), ("<c16", "dtype"), ("|S4", "dtype"),
                                             ("<U1000", "dtype"), ("<M8[D]", "dtype")])
def test_npy_dtypes_outside_numbers_are_refused(tmp_path, descr, fragment):
    path = tmp_path / "d.npy"
    path.write_bytes(npy_bytes([2], descr=descr, data=b"\0" * 2 * np.dtype(descr).itemsize))
    with pytest.raises(InputError, match=fragment):
        read_columns(str(path), [])


def test_a_pickle_member_is_refused_without_being_unpickled(tmp_path):
    path = npz_with(tmp_path / "p.npz", {"x.npy": pickle.dumps([1, 2, 3])})
    with pytest.raises(InputError, match="not a .npy array"):
        list(files(str(path), ["x"]).chunks())


def test_a_member_whose_zip_sizes_lie_is_refused_while_streaming(tmp_path):
    """The zip directory declares 2 GiB (consistent with the .npy header) but the member
    holds 64 bytes: the sizes agree, so it is streamed, and refused when the data ends
    (nothing of the declared size allocated)."""
    raw_member = npy_bytes([2**31], descr="|i1", data=b"\0" * 64)
    declared = len(npy_bytes([2**31], descr="|i1")) + 2**31
    path = npz_with(tmp_path / "lie.npz", {"x.npy": raw_member}, compression=zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    for at in [i for i in range(len(raw) - 4) if raw[i:i + 4] in (b"PK\x01\x02", b"PK\x03\x04")]:
        struct.pack_into("<I", raw, at + (24 if raw[at + 2] == 1 else 22), declared)
    path.write_bytes(bytes(raw))
    with zipfile.ZipFile(path) as zf:
        assert zf.infolist()[0].file_size == declared
    reset_peak()
    rss = peak_kib()
    with pytest.raises(InputError, match="array 'x': the data ends before its declared size"):
        list(files(str(path), ["x"]).chunks())
    assert peak_kib() - rss < 100 * 1024


@pytest.mark.slow
@pytest.mark.integration
def test_a_zip_bomb_is_streamed_in_bounded_memory(tmp_path):
    """A 2 MB .npz of 2**26 zeros (512 MiB inflated): old numpy.load allocated it whole;
    now it is read 2**20 rows at a time (RSS well under the content's size) under a
    1.5 GB address-space limit.  About 6 s (making the archive is most of it)."""
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("x.npy", "w", force_zip64=True) as fh:
            fh.write(npy_bytes([2**26]))
            block = bytes(1 << 24)
            for _ in range(2**29 // len(block)):
                fh.write(block)
    assert path.stat().st_size < 4 << 20
    rc, out, err = run_limited(f"""
        import resource
        from pydp_synopsis.sources import files
        rows = sum(len(c[0]) for c in files({str(path)!r}, ["x"]).chunks())
        print(rows, {PEAK})
    """, limit_bytes=3 << 29)
    assert rc == 0 and err == "", err
    rows, rss_kib = map(int, out.split())
    assert rows == 2**26
    assert rss_kib < 250 * 1024


def test_a_normal_npz_and_npy_give_the_same_release_as_before(tmp_path):
    """The releases of release 0.2 (numpy.load, then chunks) for a seed, to the bit."""
    x = (np.arange(5000) * 7919) % 1000
    y = (np.arange(5000) * 104729) % 500
    np.savez_compressed(tmp_path / "c.npz", x=x, y=y)
    np.save(tmp_path / "f.npy", np.asfortranarray(np.column_stack([x, y])))
    for src in (files(str(tmp_path / "c.npz"), ["x"], chunk_rows=700),
                files(str(tmp_path / "f.npy"), ["0"], chunk_rows=700)):
        s = ps.IntervalSynopsis.build(src, domain=(0, 999), epsilon=1, rng=ps.Rng(seed=5))
        assert s.count_many(np.array([0, 100, 500]), np.array([99, 499, 999])).tolist() == \
            [500.70407481067423, 1988.0909064151188, 2482.576184908141]
    for src in (files(str(tmp_path / "c.npz"), ["x", "y"], chunk_rows=700),
                files(str(tmp_path / "f.npy"), [], chunk_rows=700)):
        s = ps.RectangleSynopsis.build(src, domain=[(0, 999), (0, 499)], epsilon=1,
                                       rng=ps.Rng(seed=5))
        assert s.count_many(np.array([[0, 0], [100, 100]]), np.array([[499, 249], [999, 499]])
                            ).tolist() == [1187.0780070417788, 3577.819353564272]
    assert [c.tolist() for c in read_columns(str(tmp_path / "c.npz"), ["y", "x"])] == \
        [y.tolist(), x.tolist()]
    assert [c.tolist() for c in read_columns(str(tmp_path / "f.npy"), [])] == [x.tolist(), y.tolist()]


# ------------------------------------------------------------------ 5. plot
def _rect_file(tmp_path):
    path = tmp_path / "r.pds"
    pts = np.array([[1, 2], [3, 4], [5, 6]])
    ps.RectangleSynopsis.build(pts, domain=[(0, 99), (0, 99)], epsilon=1,
                               rng=ps.Rng(seed=1)).save(path)
    return path


@pytest.mark.parametrize("bins, allowed", [("0", r"\[1, 10000\]"), ("-1", r"\[1, 10000\]"),
                                           ("100000", r"\[1, 10000\]"), ("501", r"\[1, 500\]")])
def test_plot_bins_out_of_range_is_one_line_before_any_work(tmp_path, capsys, bins, allowed):
    """Old: --bins 0 and -1 drew 200 bins; --bins 100000 on a 2-D synopsis ran out of memory."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.png"
    assert cli.main(["plot", str(_rect_file(tmp_path)), "-o", str(out), "--bins", bins]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert re.match(rf"pydp-synopsis: error: --bins[^\n]* must be in {allowed}, got {bins}$", err)
    assert not out.exists()


def test_plot_api_bounds_bins(tmp_path):
    pytest.importorskip("matplotlib")
    syn = ps.load(_rect_file(tmp_path))
    for bins in (0, -3, 501, 100_000):
        with pytest.raises(ps.ParameterError, match=r"^bins must be in \[1, 500\]"):
            plot.plot_rectangle(syn, window=[(0, 99), (0, 99)], bins=bins)
    one = ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1))
    with pytest.raises(ps.ParameterError, match=r"^bins must be in \[1, 10000\], got 0"):
        plot.plot_interval(one, bins=0)


# ----------------------------------------------------------- 4. query files
def _query_case(tmp_path, n=7):
    syn = tmp_path / "i.pds"
    ps.IntervalSynopsis.build((np.arange(3000) * 7) % 1000, domain=(0, 999), epsilon=1,
                              rng=ps.Rng(seed=3)).save(syn)
    queries = tmp_path / "q.csv"
    queries.write_text("hi,lo,note\n" + "".join(f"{(i * 37) % 1000},{(i * 11) % 500},n{i}\n"
                                                for i in range(n)))
    return syn, queries


#: sha256 of the output for _query_case as one chunk (release 0.2 held the whole file in
#: memory; its bytes were 2b0d99e5...b98cf until the per-query intervals were read from
#: released counts, docs/guide/error-bars.md).
OLD_QUERY_OUTPUT = "fc1bd0c498f659bab239a90bedf72be1bc3f86804a02d354c6d289a16e84b76a"


@pytest.mark.parametrize("chunk", [1, 3, 1 << 14])
def test_query_file_streamed_in_chunks_writes_the_same_bytes(tmp_path, capsys, monkeypatch, chunk):
    syn, queries = _query_case(tmp_path)
    monkeypatch.setattr(queryfiles, "QUERY_CHUNK_ROWS", chunk)
    assert cli.main(["query", str(syn), "--queries", str(queries)]) == 0
    shown = capsys.readouterr().out
    assert hashlib.sha256(shown.encode()).hexdigest() == OLD_QUERY_OUTPUT
    out = tmp_path / "a.csv"
    assert cli.main(["query", str(syn), "--queries", str(queries), "--output", str(out)]) == 0
    assert out.read_text() == shown


def test_a_bad_query_row_prints_nothing(tmp_path, capsys, monkeypatch):
    """All-or-nothing: a bad row in the third chunk leaves standard output and --output empty."""
    syn, queries = _query_case(tmp_path)
    queries.write_text(queries.read_text() + "5,x,bad\n")
    monkeypatch.setattr(queryfiles, "QUERY_CHUNK_ROWS", 3)
    assert cli.main(["query", str(syn), "--queries", str(queries)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.strip().endswith("column 'lo': a value is not a number")
    out = tmp_path / "a.csv"
    assert cli.main(["query", str(syn), "--queries", str(queries), "--output", str(out)]) == 2
    assert not out.exists()
    capsys.readouterr()
    queries.write_text(queries.read_text().replace("5,x,bad", "5,9,lo above hi"))
    assert cli.main(["query", str(syn), "--queries", str(queries)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == "pydp-synopsis: error: lo must be <= hi, got lo > hi " \
                                        "at index 7\n"


@pytest.mark.slow
@pytest.mark.integration
def test_a_large_query_file_is_answered_in_bounded_memory(tmp_path):
    """100,000 queries: old 62 MB more RSS (the rows as dicts, the output as one string;
    744 MB for 10^6); now O(chunk).  About 6 s (formatting the answers)."""
    syn, queries = _query_case(tmp_path)
    lo = (np.arange(100_000) * 11) % 500
    hi = lo + (np.arange(100_000) * 37) % 500
    queries.write_text("lo,hi\n" + "".join(f"{a},{b}\n" for a, b in zip(lo.tolist(), hi.tolist())))
    rc, out, err = run_limited(f"""
        import resource
        from pydp_synopsis import cli
        cli.main(["query", {str(syn)!r}, "--lo", "0", "--hi", "9"])   # warm: imports, load
        {RESET_PEAK}
        base = {PEAK}
        rc = cli.main(["query", {str(syn)!r}, "--queries", {str(queries)!r},
                       "--output", {str(tmp_path / 'a.csv')!r}])
        print(rc, {PEAK} - base)
    """)
    assert err == "", err
    rc, grown_kib = map(int, out.split()[-2:])
    assert rc == 0
    assert grown_kib < 25 * 1024
    assert len((tmp_path / "a.csv").read_text().splitlines()) == 100_001


# --------------------------------------------------- 6. date and time steps
@pytest.mark.parametrize("kind, tz, step", [("date", None, 2**31), ("date", None, 10**15),
                                            ("datetime", None, 2**31), ("datetime", "UTC", 2**31 + 1),
                                            ("datetime", "Europe/Paris", 2**40)])
def test_a_step_of_2_31_or_more_loads_and_counts(tmp_path, kind, tz, step):
    """Columns allow steps up to 1e15 (a century in seconds is 3.2e9 > 2**31): a file
    with such a step loads and answers in user units (the review saw a TypeError)."""
    if kind == "date":
        col, dom = ps.Column("t", "date", step=step), ("1970-01-01", "9000-01-01")
        values = np.array(["2001-01-01", "2030-01-02"], dtype="datetime64[D]")
    else:
        col = ps.Column("t", "datetime", unit="s", step=step, tz=tz)
        dom = ("1970-01-01T00:00:00", "2200-01-01T00:00:00")
        values = np.array(["2001-01-01T00:00:00", "2030-01-02T00:00:00"], dtype="datetime64[s]")
    path = tmp_path / "t.pds"
    ps.IntervalSynopsis.build(values, domain=dom, columns=[col], epsilon=1000,
                              rng=ps.Rng(seed=1)).save(path)
    syn = with_timeout(lambda: ps.load(path))
    assert syn.column.step == step
    assert round(syn.count(*dom)) == 2
    assert np.round(syn.count_many(np.array([dom[0]] * 2), np.array([dom[1]] * 2))).tolist() == [2, 2]


@pytest.mark.parametrize("step", [0, -1, 10**15 + 1, 2**64, 1.5, True])
def test_a_step_outside_what_columns_allow_is_one_format_error(tmp_path, step):
    path = tmp_path / "t.pds"
    ps.IntervalSynopsis.build(np.array(["2001-01-01"], dtype="datetime64[D]"),
                              domain=("2001-01-01", "2001-12-31"), columns=[ps.Column("t", "date")],
                              epsilon=1, rng=ps.Rng(seed=1)).save(path)
    kind, meta, arrays, _ = persist.read_record(path)
    meta["columns"][0]["step"] = step
    persist.write_record(path, kind, meta, arrays)
    with pytest.raises(ps.FormatError, match="malformed column description") as info:
        ps.load(path)
    assert "\n" not in str(info.value)


# ------------------------------------------------------ 7. non-UTF-8 rows
BAD_ROW = b"x,y\n" + b"".join(b"%d,%d\n" % (i, i) for i in range(5)) + b"3,\xffsecret\n1,2\n"


@pytest.mark.parametrize("options", [{}, {"scale": "1e2"}, {"units": "integer"}])
def test_a_non_utf8_data_row_is_not_reported_as_the_header(tmp_path, options):
    """Old: "the header row is not UTF-8 text" (the header read decoded the first 8 KiB)."""
    path = tmp_path / "a.csv"
    path.write_bytes(BAD_ROW)
    if options.get("units"):
        options = {"units": [ps.Column("y", "integer")]}
    with pytest.raises(InputError) as info:
        ps.IntervalSynopsis.build(files(str(path), ["y"], **options), domain=(0, 9), epsilon=1,
                                  rng=ps.Rng(seed=1))
    assert str(info.value) == f"{path}: a data row is not UTF-8 text"     # no bytes, no row


def test_read_columns_reports_a_non_utf8_row_without_its_bytes(tmp_path):
    """Old: "cannot read ('utf-8' codec can't decode byte 0xff in position 26 ...)"."""
    path = tmp_path / "a.csv"
    path.write_bytes(BAD_ROW)
    with pytest.raises(InputError) as info:
        read_columns(str(path), ["y"])
    assert str(info.value) == f"{path}: a data row is not UTF-8 text"     # no bytes, no row


def test_a_non_utf8_header_is_still_the_header(tmp_path):
    path = tmp_path / "h.csv"
    path.write_bytes(b"x,\xffy\n1,2\n")
    for read in (lambda: ps.IntervalSynopsis.build(files(str(path), ["x"]), domain=(0, 9),
                                                   epsilon=1, rng=ps.Rng(seed=1)),
                 lambda: read_columns(str(path), ["x"])):
        with pytest.raises(InputError, match="the header row is not UTF-8 text$"):
            read()


def test_the_docs_example_runs_and_prints_what_it_says(capsys):
    """docs/security-files.md: its example runs and prints its last comment line."""
    with open(os.path.join(ROOT, "docs", "security-files.md")) as fh:
        code = re.findall(r"```python\n(.*?)```", fh.read(), re.S)[0]
    exec(compile(code, "security-files.md", "exec"), {})
    assert capsys.readouterr().out.strip() == code.strip().splitlines()[-1].lstrip("# ")

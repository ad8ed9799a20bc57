"""Crafted files: every failure is a FormatError, found before the file is read whole.

The checksum is unkeyed, so anyone can write a file that passes it: these
tests craft records with the package's own encoder and a recomputed digest.
"""
import hashlib
import json
import os
import pathlib
import resource
import signal
import struct
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pydp_synopsis as ps
from pydp_synopsis import persist

MAGIC = b"PDSYN\x00v1"


def craft(header, payload=b""):
    """A record with a valid checksum around any header object (or raw header bytes)."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    body = MAGIC + struct.pack("<Q", len(raw)) + raw + payload
    return body + hashlib.sha256(body).digest()


def header(**over):
    h = {"format_version": 1, "kind": "interval-synopsis", "created": "2026-01-01T00:00:00+00:00",
         "meta": {}, "arrays": []}
    h.update(over)
    return h


@pytest.mark.parametrize("raw", [
    json.dumps(header(meta=[1, 2])).encode(),                          # meta not a dict
    json.dumps(header()).replace('"meta": {}', '"meta": {"x": Infinity}').encode(),
    json.dumps(header()).replace('"meta": {}', '"meta": {"x": NaN}').encode(),
    b"[" * 100_000 + b"]" * 100_000,                                   # deep nesting
    b"\xff\xfe not utf-8",
    json.dumps([1, 2, 3]).encode(),                                    # not an object
    json.dumps(header(kind=7)).encode(),
    json.dumps(header(format_version=2)).encode(),
    json.dumps(header(arrays={"a": 1})).encode(),
    json.dumps(header(arrays=[{"name": "a", "dtype": "object", "shape": [1], "offset": 0,
                               "nbytes": 8}])).encode(),
    json.dumps(header(arrays=[{"name": "a", "dtype": "int64", "shape": [256] * 8, "offset": 0,
                               "nbytes": 0}])).encode(),                # 256^8 wraps to 0 in int64
    json.dumps(header(arrays=[{"name": "a", "dtype": "int64", "shape": [2**62, 4], "offset": 0,
                               "nbytes": 0}])).encode(),
    json.dumps(header(arrays=[{"name": "a", "dtype": "int64", "shape": [1], "offset": -8,
                               "nbytes": 8}])).encode(),
    json.dumps(header(arrays=[{"name": "a", "dtype": "int64", "shape": [1.5], "offset": 0,
                               "nbytes": 8}])).encode(),
    json.dumps(header(arrays=[{"name": "a", "dtype": "int64", "shape": [True], "offset": 0,
                               "nbytes": 8}])).encode(),
])
def test_crafted_headers_raise_format_error(tmp_path, raw):
    path = tmp_path / "crafted.pds"
    path.write_bytes(craft(raw))
    with pytest.raises(ps.FormatError):
        ps.load(path)


def test_crafted_meta_fields_raise_format_error(tmp_path):
    """Loaders see hostile meta values (wrong types, huge ints): FormatError, never another error."""
    good = tmp_path / "good.pds"
    ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1)).save(good)
    kind, meta, arrays, _ = persist.read_record(good)
    for key in list(meta):
        for bad in (None, "x", [1, 10**400], {"a": 1}, -1, 10**30, 0.5):
            h = dict(meta, **{key: bad})
            path = tmp_path / "bad.pds"
            persist.write_record(path, kind, h, arrays)
            try:
                ps.load(path)
            except ps.FormatError:
                pass


def test_magic_is_checked_before_reading(tmp_path):
    """A 3 GB junk file (sparse: costs no disk) is refused in milliseconds, without reading it."""
    path = tmp_path / "junk.bin"
    with open(path, "wb") as fh:
        fh.truncate(3 * 10**9)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    with pytest.raises(ps.FormatError, match="not a pydp_synopsis file"):
        ps.load(path)
    elapsed = time.perf_counter() - t0
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 50 * 1024          # not read whole (3 GB would show)
    assert elapsed < 5                     # generous: the point is O(1), not O(size)


def test_header_length_beyond_the_file_is_refused(tmp_path):
    path = tmp_path / "h.pds"
    body = MAGIC + struct.pack("<Q", 2**63) + b"{}"
    path.write_bytes(body + hashlib.sha256(body).digest())
    with pytest.raises(ps.FormatError, match="header length"):
        ps.load(path)


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "dir"])
def test_devices_fifos_and_directories_are_refused_without_blocking(tmp_path, special):
    if special == "fifo":
        path = tmp_path / "f"
        os.mkfifo(path)
    elif special == "dir":
        path = tmp_path
    else:
        path = special
    result = {}

    def run():
        try:
            ps.load(path)
        except Exception as exc:  # noqa: BLE001 - recorded and checked below
            result["exc"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "load blocked"
    assert isinstance(result.get("exc"), ps.FormatError)


FIXTURES = sorted((pathlib.Path(__file__).parent / "fixtures").glob("*.pds"))


def _exercise(obj):
    """Use a loaded object the way a user would: answers and bounds, or one counter step."""
    if isinstance(obj, (ps.IntervalSynopsis, ps.RectangleSynopsis)):
        lo, hi = obj.domain if isinstance(obj, ps.IntervalSynopsis) else zip(*obj.domain)
        lo, hi = np.array([lo], dtype=object), np.array([hi], dtype=object)
        if isinstance(obj, ps.RectangleSynopsis):
            lo, hi = lo.reshape(1, -1), hi.reshape(1, -1)
        obj.count_many(lo.astype(np.int64), hi.astype(np.int64))
        obj.error_bound(0.9)
    else:
        obj.update(1)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.fuzz
def test_fuzz_mutated_records_only_raise_format_error(tmp_path, fixture, data):
    """Structured mutations of a record of every kind, checksum recomputed: load either
    raises FormatError or returns an object that answers (never another exception, a
    crash or a hang; alarm after 10 s)."""
    raw = fixture.read_bytes()
    hlen = struct.unpack_from("<Q", raw, len(MAGIC))[0]
    head = json.loads(raw[len(MAGIC) + 8:len(MAGIC) + 8 + hlen])
    payload = raw[len(MAGIC) + 8 + hlen:-32]
    where = data.draw(st.sampled_from(["meta", "array", "payload"]))
    values = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=False), st.text(max_size=5),
                       st.none(), st.lists(st.integers(-3, 2**65), max_size=3), st.booleans(),
                       st.sampled_from(["kary", "binary", "hierarchical", "adaptive", "multitree",
                                        "uniform", "cover", 1, 0, -1, 0.5, 2**64, [256] * 8]))
    if where == "meta" and head["meta"]:
        key = data.draw(st.sampled_from(sorted(head["meta"])))
        head["meta"][key] = data.draw(values)
    elif where == "array" and head["arrays"]:
        spec = data.draw(st.sampled_from(head["arrays"]))
        spec[data.draw(st.sampled_from(["shape", "offset", "nbytes", "dtype"]))] = data.draw(values)
    elif payload:
        pos = data.draw(st.integers(0, len(payload) - 1))
        payload = payload[:pos] + bytes([data.draw(st.integers(0, 255))]) + payload[pos + 1:]
    path = tmp_path / "m.pds"
    path.write_bytes(craft(head, payload))
    signal.signal(signal.SIGALRM, _hang)
    signal.alarm(10)
    try:
        try:
            obj = ps.load(path)
        except ps.FormatError:
            return
        _exercise(obj)
    except ps.SynopsisError:
        pass                         # a clean refusal of the use (e.g. a horizon reached)
    finally:
        signal.alarm(0)


def _hang(signum, frame):
    raise AssertionError("hang: a crafted record made load or a query loop for 10 s")


def test_grid_record_whose_sizes_wrap_int64_is_refused(tmp_path):
    """The release-0.1 segfault: 8 axes of 256 fine cells each make 256^8 = 2^64 cells,
    which wrapped to 0 in an int64 product; the loader now refuses the sizes, and the
    C kernel would refuse the read anyway (it checks every index against the lengths)."""
    pts = np.zeros((5, 8), dtype=np.int64)
    syn = ps.RectangleSynopsis.build(pts, domain=[(0, 255)] * 8, epsilon=1, rng=ps.Rng(seed=1))
    good = tmp_path / "g.pds"
    syn.save(good)
    kind, meta, arrays, _ = persist.read_record(good)
    assert meta["structure"] == "adaptive"
    arrays = dict(arrays)
    for a in range(8):
        arrays[f"ends_{a}"] = np.arange(256, dtype=np.uint64)
    meta = dict(meta, merge=[256] * 8)
    arrays.update(coarse=np.zeros(1, dtype=np.int64), fine=np.zeros(0, dtype=np.int64),
                  fine_shape=np.full((1, 8), 256, dtype=np.int64))
    bad = tmp_path / "b.pds"
    persist.write_record(bad, kind, meta, arrays)
    with pytest.raises(ps.FormatError):
        ps.load(bad)

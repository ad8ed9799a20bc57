"""The versioned, checksummed, atomic file format."""
import json
import os
import stat

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import persist


def write(tmp_path, mode=0o644):
    path = tmp_path / "x.pds"
    arrays = {"ends": np.array([3, 9, 2**64 - 1], dtype=np.uint64),
              "noisy": np.array([-2, 5, 7], dtype=np.int64), "grid": np.zeros((2, 3))}
    persist.write_record(path, "test-kind", {"epsilon": "1/2", "n": 3}, arrays, mode=mode)
    return path, arrays


def test_round_trip(tmp_path):
    path, arrays = write(tmp_path)
    kind, meta, got, info = persist.read_record(path)
    assert kind == "test-kind" and meta == {"epsilon": "1/2", "n": 3}
    assert info["format_version"] == persist.FORMAT_VERSION and info["created"]
    for name, arr in arrays.items():
        assert got[name].dtype == arr.dtype and np.array_equal(got[name], arr)
        assert got[name].flags.writeable


@pytest.mark.parametrize("mode", [0o600, 0o644])
def test_mode_and_no_leftover_temp_files(tmp_path, mode):
    path, _ = write(tmp_path, mode)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert os.listdir(tmp_path) == ["x.pds"]


def test_truncated_file_refused(tmp_path):
    path, _ = write(tmp_path)
    data = path.read_bytes()
    for cut in (5, 20, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(ps.FormatError):
            persist.read_record(path)


def test_edited_file_refused(tmp_path):
    path, _ = write(tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ps.FormatError, match="checksum"):
        persist.read_record(path)


def test_other_version_and_foreign_file_refused(tmp_path):
    path, _ = write(tmp_path)
    data = bytearray(path.read_bytes())
    data[7] = ord("9")
    path.write_bytes(bytes(data))
    with pytest.raises(ps.FormatError, match="version 9"):
        persist.read_record(path)
    path.write_bytes(b"\x80\x04K\x01." + bytes(100))  # a pickle is not a record
    with pytest.raises(ps.FormatError, match="not a pydp_synopsis file"):
        persist.read_record(path)


def test_unknown_kind_refused_by_load(tmp_path):
    path, _ = write(tmp_path)
    with pytest.raises(ps.FormatError, match="unknown kind"):
        persist.load(path)


def test_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(TypeError, match="dtype"):
        persist.write_record(tmp_path / "y.pds", "k", {}, {"bad": np.array(["a"])})
    with pytest.raises(TypeError):
        persist.write_record(tmp_path / "y.pds", "k", {"x": object()}, {})
    assert os.listdir(tmp_path) == []


def test_save_rejects_non_synopsis(tmp_path):
    with pytest.raises(TypeError, match="cannot save"):
        persist.save(object(), tmp_path / "z.pds")


def test_header_is_plain_json(tmp_path):
    path, _ = write(tmp_path)
    data = path.read_bytes()
    hlen = int.from_bytes(data[8:16], "little")
    header = json.loads(data[16:16 + hlen])
    assert header["kind"] == "test-kind" and len(header["arrays"]) == 3


# ---------------------------------------------- every releasing object saves and loads
def test_partitions_save_and_load(tmp_path):
    """ps.save(Partition / TreePartition / OnlinePartition) was refused (TypeError, "not a
    synopsis or counter"); now each has a record kind and loads equal (issue 31 part 7)."""
    gen = np.random.default_rng(0)
    part = ps.private_partition(gen.integers(0, 1000, 300), domain=(-5, 2000), epsilon=1.0,
                                rng=ps.Rng(seed=1))
    tree = ps.IntervalSynopsis.build(gen.integers(0, 1000, 300), domain=(0, 2**40), epsilon=1.0,
                                     shards=3, rng=ps.Rng(seed=1)).partition
    for obj in (part, tree):
        ps.save(obj, tmp_path / "p.pds")
        back = ps.load(tmp_path / "p.pds")
        assert type(back) is type(obj) and np.array_equal(back.ends, obj.ends)
        assert (back.domain, back.epsilon, back.beta, back.threshold_factor, len(back)) == (
            obj.domain, obj.epsilon, obj.beta, obj.threshold_factor, len(obj))
        (tmp_path / "p.pds").unlink()
    assert ps.load(_saved(tree, tmp_path)).shards == 3
    # a record whose ends are not PrivTree leaves, or out of order, is refused
    kind, meta, arrays, _ = tree._to_record()
    persist.write_record(tmp_path / "bad.pds", kind, meta, {"end_offsets": arrays["end_offsets"][::-1]})
    with pytest.raises(ps.FormatError):
        ps.load(tmp_path / "bad.pds")


def _saved(obj, tmp_path, name="s.pds"):
    ps.save(obj, tmp_path / name)
    return tmp_path / name


def test_online_partition_saves_and_continues_the_same_release(tmp_path):
    gen = np.random.default_rng(1)
    first, then = gen.integers(0, 5, 500), gen.integers(0, 5, 700)
    saved, twin = (ps.OnlinePartition(size=2**20, epsilon=0.5, rng=ps.Rng(seed=3))
                   for _ in range(2))
    assert np.array_equal(saved.feed(first), twin.feed(first))
    path = _saved(saved, tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600              # the noisy threshold is secret
    loaded = ps.load(path)
    assert np.array_equal(loaded.feed(then), twin.feed(then))
    assert np.array_equal(loaded.segments, twin.segments) and loaded.position == twin.position

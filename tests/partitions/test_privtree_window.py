"""The spilled PrivTree walk (csrc/privtree.c pds_privtree_build_fd) and the C pass that
gathers sorted chunks as distinct keys and running totals (csrc/aggregate.c pds_runs_cum):
exactly the in-memory kernel's leaves under a seed, whatever the window, and every bad input
refused before anything is allocated or drawn."""
import os
import tempfile
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.aggregates import SortedAggregator
from pydp_synopsis.errors import ParameterError
from pydp_synopsis.partitions import privtree
from pydp_synopsis.privtree import privtree_of_sorted
from pydp_synopsis.spill import SpillError, write_file
from pydp_synopsis._core import ffi, lib
from clirun import PACKAGE_PARENT

TOP = 2**64 - 1


def _files(tmp_path, keys, cum):
    kp, cp = str(tmp_path / "k"), str(tmp_path / "c")
    write_file(kp, np.asarray(keys, dtype=np.uint64))
    write_file(cp, np.asarray(cum, dtype=np.int64))
    return kp, cp


def _case(gen, kind):
    """Distinct sorted keys and counts of one random case, and its domain's last offset."""
    if kind == "dense":
        last = int(gen.integers(2, 60000))
        n = int(gen.integers(1, min(last + 1, 20000)))
        keys = np.sort(gen.choice(last + 1, n, replace=False)).astype(np.uint64)
    elif kind == "top":       # keys near 2^64
        last = TOP
        keys = np.unique(TOP - gen.integers(0, 5000, 3000).astype(np.uint64))
    else:                     # clustered in a wide domain
        last = 2**40 - 1
        centres = gen.integers(0, 2**40 - 2**20, 5)
        keys = np.unique((centres[:, None] + gen.integers(0, 2**12, (5, 2000))).ravel()
                         .astype(np.uint64))
    counts = gen.integers(1, 9, keys.size)
    counts[gen.random(keys.size) < 0.1] = int(gen.integers(20, 400))   # heavy values
    return keys, counts, last


@pytest.mark.parametrize("seed", range(6))
def test_windowed_walk_gives_the_in_memory_leaves(tmp_path, seed):
    gen = np.random.default_rng(seed)
    for kind in ("dense", "top", "wide"):
        keys, counts, last = _case(gen, kind)
        cum = np.cumsum(counts)
        kp, cp = _files(tmp_path, keys, cum)
        for fanout in (2, 4):
            lam, delta = privtree.privtree_parameters(Fraction(int(gen.integers(1, 8)), 2),
                                                      fanout)
            ref = privtree.privtree_kernel(keys, cum, 0, last, ps.Rng(seed=seed), scale=lam,
                                           bias=delta, fanout=fanout)
            for window in (2, 3, 17, 1000, 1 << 20):
                got = privtree.privtree_kernel_files(kp, cp, keys.size, 0, last,
                                                     ps.Rng(seed=seed), scale=lam, bias=delta,
                                                     fanout=fanout, window=window)
                assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1]), \
                    (kind, fanout, window)
            assert ref[1].sum() == counts.sum()
        os.remove(kp)
        os.remove(cp)


def test_windowed_walk_of_nothing_and_of_one_key(tmp_path):
    for keys, last in (([], 100), ([TOP], TOP), ([0], 0)):
        cum = np.arange(1, len(keys) + 1)
        kp, cp = _files(tmp_path, keys, cum)
        ref = privtree.privtree_kernel(np.asarray(keys, dtype=np.uint64), cum, 0, last,
                                       ps.Rng(seed=3), scale=Fraction(3), bias=3)
        got = privtree.privtree_kernel_files(kp, cp, len(keys), 0, last, ps.Rng(seed=3),
                                             scale=Fraction(3), bias=3, window=2)
        assert all(np.array_equal(a, b) for a, b in zip(got, ref))
        os.remove(kp)
        os.remove(cp)


def _gathered(chunks):
    runs = privtree._Runs(iter(chunks))
    try:
        if runs.spilled:
            return (np.fromfile(os.path.join(runs._dir, "k"), dtype=np.uint64),
                    np.fromfile(os.path.join(runs._dir, "c"), dtype=np.int64), True)
        return runs.keys, runs.cum, False
    finally:
        runs.close()


@pytest.mark.parametrize("spill", [1 << 22, 7])
def test_runs_cum_gathers_what_numpy_does(monkeypatch, spill):
    # chunks cutting runs of equal keys, zero counts, empty chunks, keys near 2^64
    monkeypatch.setattr(privtree, "_SPILL_ENTRIES", spill)
    gen = np.random.default_rng(11)
    for case in range(40):
        top = TOP if case % 3 == 0 else 1000
        keys = np.sort(top - gen.integers(0, 60, int(gen.integers(0, 300))).astype(np.uint64))
        counts = gen.integers(0, 4, keys.size)
        cuts = np.sort(gen.integers(0, keys.size + 1, int(gen.integers(0, 6))))
        bounds = [0, *cuts.tolist(), keys.size]
        chunks = [(keys[a:b], counts[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        k, c, spilled = _gathered(chunks)
        rk, rc = privtree._runs_of_sorted(keys, counts)
        assert np.array_equal(k, rk) and np.array_equal(c, rc), case
        assert spilled == (rk.size > spill)


def test_sorted_runs_to_the_windowed_walk_equal_the_in_memory_build(monkeypatch):
    # several spilled runs sharing keys (duplicates across runs), an empty chunk, and the
    # walk through a tiny window: the release of the sorted column in memory
    monkeypatch.setattr(privtree, "_SPILL_ENTRIES", 500)
    monkeypatch.setattr(privtree, "_WINDOW_ENTRIES", 5)
    gen = np.random.default_rng(4)
    for top in (TOP, 50000):
        v = np.uint64(top) - gen.integers(0, 40000, 30000).astype(np.uint64)
        with SortedAggregator(memory_entries=4000, block_entries=700) as agg:
            for piece in (v[:0], *np.array_split(v, 9)):
                agg.add(piece)
            assert agg.spilled_runs > 2
            part, weights = privtree.privtree_of_chunks(agg.chunks(), (0, TOP), Fraction(1),
                                                        0.05, ps.Rng(seed=9))
        ref, ref_w = privtree_of_sorted(np.sort(v), (0, TOP), Fraction(1), 0.05,
                                        ps.Rng(seed=9), leaf_counts=True)
        assert part == ref and np.array_equal(weights, ref_w) and weights.sum() == v.size


def test_a_single_run_and_no_run(monkeypatch):
    monkeypatch.setattr(privtree, "_SPILL_ENTRIES", 3)
    monkeypatch.setattr(privtree, "_WINDOW_ENTRIES", 2)
    v = np.array([5, 5, 9, 9, 9, 200, 999], dtype=np.uint64)
    k, c = np.unique(v, return_counts=True)
    part, w = privtree.privtree_of_chunks(iter([(k, c)]), (0, 999), Fraction(2), 0.05,
                                          ps.Rng(seed=1))
    assert part == privtree_of_sorted(v, (0, 999), Fraction(2), 0.05, ps.Rng(seed=1))
    part, w = privtree.privtree_of_chunks(iter([]), (0, 999), Fraction(2), 0.05,
                                          ps.Rng(seed=1))
    assert part == privtree_of_sorted(v[:0], (0, 999), Fraction(2), 0.05, ps.Rng(seed=1))
    assert w.sum() == 0


# ---------------------------------------------------------------- bad inputs
def _fd_call(kp, cp, nk, window=4, last=100, rng=None):
    rng = rng or ps.Rng(seed=1)
    out, err = ffi.new("pds_privtree *"), ffi.new("int32_t *")
    fk, fc = os.open(kp, os.O_RDONLY), os.open(cp, os.O_RDONLY)
    try:
        with rng.native() as state:
            st = lib.pds_privtree_build_fd(state, fk, fc, nk, window, 0, last, 0, 3, 1, 3, 0,
                                           1 << 20, 2, err, out)
    finally:
        os.close(fk)
        os.close(fc)
        lib.pds_privtree_free(out)
    return st


def test_bad_files_and_sizes_are_refused_before_anything_is_drawn(tmp_path):
    kp, cp = _files(tmp_path, [1, 5, 9], [1, 2, 4])
    assert _fd_call(kp, cp, 3) == lib.PDS_OK
    for nk in (2, 4, 2**61):                       # not the files' sizes
        assert _fd_call(kp, cp, nk) == lib.PDS_EINVAL
    for window in (0, 1, (1 << 27) + 1, 2**64 - 1):
        assert _fd_call(kp, cp, 3, window=window) == lib.PDS_EINVAL
    assert _fd_call(kp, cp, 3, last=8) == lib.PDS_EINVAL        # a key past the domain
    for keys, cum in (([1, 9, 5], [1, 2, 4]), ([1, 5, 5], [1, 2, 4]), ([1, 5, 9], [1, 3, 2]),
                      ([1, 5, 9], [-1, 2, 4]), ([1, 5, 9], [1, 2, 2**62 + 1])):
        bad = tmp_path / "bad"
        bad.mkdir()
        bk, bc = _files(bad, keys, cum)
        rng = ps.Rng(seed=7)
        assert _fd_call(bk, bc, 3, window=2, rng=rng) == lib.PDS_EINVAL
        assert rng.integers(0, 2**62) == ps.Rng(seed=7).integers(0, 2**62)   # nothing drawn
        os.remove(bk)
        os.remove(bc)
        bad.rmdir()
    d = os.open(str(tmp_path), os.O_RDONLY)      # not a regular file
    out, err = ffi.new("pds_privtree *"), ffi.new("int32_t *")
    with ps.Rng(seed=1).native() as state:
        assert lib.pds_privtree_build_fd(state, d, d, 0, 4, 0, 100, 0, 3, 1, 3, 0, 1 << 20, 2,
                                         err, out) == lib.PDS_EINVAL
        assert lib.pds_privtree_build_fd(state, -1, d, 0, 4, 0, 100, 0, 3, 1, 3, 0, 1 << 20, 2,
                                         err, out) == lib.PDS_EINVAL
    os.close(d)
    for window in (1, 0, (1 << 27) + 1, 2.0, True):
        with pytest.raises(ParameterError, match="window must be an int in"):
            privtree.privtree_kernel_files(kp, cp, 3, 0, 100, ps.Rng(seed=1), scale=3, bias=3,
                                           window=window)
    with pytest.raises(SpillError, match="could not open the temporary file"):
        privtree.privtree_kernel_files(kp + "x", cp, 3, 0, 100, ps.Rng(seed=1), scale=3,
                                       bias=3)


def _cum(keys, counts, final=1, capacity=None, state=None):
    keys = np.asarray(keys, dtype=np.uint64)
    counts = np.asarray(counts, dtype=np.int64)
    state = state or ffi.new("pds_cum_state *")
    cap = keys.size + 1 if capacity is None else capacity
    ok, oc, n = np.empty(max(cap, 1), np.uint64), np.empty(max(cap, 1), np.int64), \
        ffi.new("uint64_t *")
    st = lib.pds_runs_cum(ffi.from_buffer("uint64_t[]", keys), ffi.from_buffer("int64_t[]", counts),
                          keys.size, final, state, ffi.from_buffer("uint64_t[]", ok),
                          ffi.from_buffer("int64_t[]", oc), cap, n)
    return st, ok[:n[0]].tolist(), oc[:n[0]].tolist()


def test_runs_cum_refuses_bad_chunks_and_moves_nothing():
    assert _cum([1, 1, 4, TOP], [2, 0, 0, 3]) == (lib.PDS_OK, [1, TOP], [2, 5])
    assert _cum([3, 2], [1, 1])[0] == lib.PDS_EINVAL
    assert _cum([1, 2], [1, -1])[0] == lib.PDS_EINVAL
    assert _cum([1, 2], [1, 1], capacity=2)[0] == lib.PDS_EINVAL
    assert _cum([1, 2], [1, 1], final=2)[0] == lib.PDS_EINVAL
    assert _cum([1, 2], [2**61, 2**61 + 1])[0] == lib.PDS_ERANGE
    state = ffi.new("pds_cum_state *")
    assert _cum([5, 7], [1, 1], final=0, state=state) == (lib.PDS_OK, [5], [1])
    assert _cum([6], [1], state=state)[0] == lib.PDS_EINVAL       # below the pending key
    assert (state.key, state.pending, state.total, state.has) == (7, 1, 1, 1)
    assert _cum([7, 8], [2, 1], state=state) == (lib.PDS_OK, [7, 8], [4, 5])
    state.has = 2
    assert _cum([9], [1], state=state)[0] == lib.PDS_EINVAL


def test_a_failing_walk_leaves_no_spill_behind(monkeypatch, tmp_path):
    monkeypatch.setattr(privtree, "_SPILL_ENTRIES", 10)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def broken(*args, **kw):
        assert os.listdir(tmp_path)                  # the runs are on disk
        raise SpillError("could not read the temporary files")

    monkeypatch.setattr(privtree, "privtree_kernel_files", broken)
    chunks = [(np.arange(100, dtype=np.uint64), np.ones(100, dtype=np.int64))]
    with pytest.raises(SpillError):
        privtree.privtree_of_chunks(iter(chunks), (0, 999), Fraction(1), 0.05, ps.Rng(seed=1))
    assert os.listdir(tmp_path) == []


# ------------------------------------------------- the runs and their merge
@pytest.mark.parametrize("peek", [1, 3, 4096])
def test_unit_runs_count_repeats_across_their_blocks(tmp_path, monkeypatch, peek):
    # mostly distinct chunks are spilled as their sorted keys (8 bytes an entry); a stretch
    # of one key longer than a block is counted whole, never split between two chunks
    from pydp_synopsis import aggregates
    monkeypatch.setattr(aggregates, "_PEEK", peek)
    gen = np.random.default_rng(peek)
    v = np.concatenate([gen.integers(0, 2**64 - 1, 3000, dtype=np.uint64, endpoint=True),
                        np.full(400, 2**63, dtype=np.uint64), np.full(30, TOP, dtype=np.uint64)])
    gen.shuffle(v)
    with SortedAggregator(memory_entries=1200, block_entries=7, directory=tmp_path) as agg:
        for piece in np.array_split(v, 13):
            agg.add(piece)
        chunks = list(agg.chunks())
        assert agg.spilled_runs >= 2
        assert any(name.endswith(".keys") for name in os.listdir(next(tmp_path.iterdir())))
    keys = np.concatenate([k for k, _ in chunks])
    counts = np.concatenate([c for _, c in chunks])
    u, c = np.unique(v, return_counts=True)
    assert np.array_equal(keys, u) and np.array_equal(counts, c)
    assert list(tmp_path.iterdir()) == []


def test_the_pairwise_merge_equals_the_heap_and_numpy():
    from pydp_synopsis.aggregates import merge
    gen = np.random.default_rng(2)
    for k in (1, 2, 3, 5, 17, 64, 65):
        for repeats in (False, True) if k > 1 else (False,):   # repeats: the heap's path
            parts = []
            for _ in range(k):
                keys = np.sort(gen.integers(0, 300, int(gen.integers(0, 80))).astype(np.uint64))
                if not repeats:
                    keys = np.unique(keys)
                parts.append((keys, gen.integers(0, 5, keys.size)))
            got = merge(parts)
            allk = np.concatenate([p[0] for p in parts])
            allc = np.concatenate([p[1] for p in parts])
            u, inv = np.unique(allk, return_inverse=True)
            assert np.array_equal(got[0], u)
            assert np.array_equal(got[1], np.bincount(inv, weights=allc, minlength=u.size)
                                  .astype(np.int64))


def test_a_run_failing_in_the_background_raises_in_the_caller(tmp_path):
    # the full run is sorted and spilled in a background thread: its failure (here: no
    # directory to spill to) is raised by the next call, and nothing is left behind
    missing = str(tmp_path / "gone" / "deeper")
    agg = SortedAggregator(memory_entries=100, block_entries=10, directory=missing)
    agg.add(np.arange(150, dtype=np.uint64))            # a full run: sorted meanwhile
    with pytest.raises(SpillError, match="could not create a temporary directory"):
        agg.add(np.arange(150, 300, dtype=np.uint64))
        list(agg.chunks())
    agg.close()
    assert list(tmp_path.iterdir()) == []
    with SortedAggregator(memory_entries=100, block_entries=10, directory=str(tmp_path)) as agg:
        for start in range(0, 1000, 150):
            agg.add(np.arange(start, start + 150, dtype=np.uint64)[::-1])
        agg.add(np.arange(5, dtype=np.uint64), np.array([1, 0, 2, 0, 1]))   # waits first
        got = list(agg.chunks())
    keys = np.concatenate([k for k, _ in got])
    counts = np.concatenate([c for _, c in got])
    assert np.array_equal(keys, np.arange(1050, dtype=np.uint64))
    assert counts.sum() == 1050 + 4 and list(tmp_path.iterdir()) == []


_RESIDENT = r"""
import os, sys
import numpy as np
import pydp_synopsis as ps
from pydp_synopsis.partitions import privtree
from pydp_synopsis.spill import create, write_array

d, n = sys.argv[1], 1 << 23                  # 8M distinct keys: 128 MiB of files
kp, cp = os.path.join(d, "k"), os.path.join(d, "c")
with create(kp) as fk, create(cp) as fc:
    for start in range(0, n, 1 << 20):
        i = np.arange(start, start + (1 << 20), dtype=np.uint64)
        write_array(fk, 3 * i, kp)
        write_array(fc, (i + 1).astype(np.int64), cp)
del i

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) << 10

with open("/proc/self/clear_refs", "w") as fh:   # the high-water mark starts afresh
    fh.write("5")
before = hwm()
ends, counts = privtree.privtree_kernel_files(kp, cp, n, 0, 3 * n, ps.Rng(seed=1), scale=3,
                                              bias=3, window=1 << 16)
print(hwm() - before, int(counts.sum()) == n, ends.size)
"""


@pytest.mark.slow
def test_the_windowed_walk_keeps_its_files_out_of_memory(tmp_path):
    # 128 MiB of keys and totals walked through a 1 MiB window: the process's peak grows by
    # the window and the leaves only (a memory map of the files would add their 128 MiB)
    import subprocess
    import sys
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux's /proc/self/clear_refs")
    # the installed package, never a checkout's sources without the built core (cwd)
    proc = subprocess.run([sys.executable, "-c", _RESIDENT, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split()
    grown, whole, leaves = int(out[0]), out[1], int(out[2])
    assert whole == "True" and leaves > 1000
    assert grown < 24 * leaves + (8 << 20), (grown, leaves)

"""PrivTree of fanout 4 (``privtree_fanout=4``) and the private merge of adjacent leaves
(``privtree_merge=``): exact law, exact privacy loss, mutants, weight bounds, records and
every bad input.

The 4-ary law is computed exactly in Python from the definition (a tested node splits with
probability P(Z >= theta - b + 1); a split is two halvings, a half of width 1 not halved
again); the C kernel's leaves are tested against it (chi-square, alpha = 1e-6), the privacy
loss of every outcome is computed exactly for neighbouring inputs, and kernels run with a
wrong lambda or delta (mutants) are rejected by the same tests.
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import persist
from pydp_synopsis._core import ffi, lib
from pydp_synopsis.errors import DomainError, FormatError, ParameterError
from pydp_synopsis.partitions import merge, partition_of_sorted, privtree
from pydp_synopsis.partitions.merge import MergedPartition, merged_runs
from pydp_synopsis.partitions.privtree import TreePartition, privtree_parameters

from stattests import assert_gof, assert_mean_var
from privtree_law import split_prob


# ----------------------------------------------------------------- the exact law
def _children(first, last):
    """The children of a 4-ary split of [first, last]: two halvings, width 1 kept."""
    mid = first + (last - first) // 2
    out = []
    for a, b in ((first, mid), (mid + 1, last)):
        if a == b:
            out.append((a, b))
        else:
            m = a + (b - a) // 2
            out += [(a, m), (m + 1, b)]
    return out


def _law4(counts, first, last, lam, delta, depth=0):
    """{leaf ends: probability} of the 4-ary tree over [first, last] (exhaustive)."""
    if first == last:
        return {(last,): 1.0}
    p, q = split_prob(int(sum(counts[first:last + 1])), depth, lam, delta)
    out = {(last,): q}
    combos = {(): p}
    for a, b in _children(first, last):
        sub = _law4(counts, a, b, lam, delta, depth + 1)
        combos = {k + sk: pk * sp for k, pk in combos.items() for sk, sp in sub.items()}
    for k, v in combos.items():
        out[k] = out.get(k, 0.0) + v
    return out


def _outcome4(counts, ends, lam, delta):
    """P(the leaves are exactly ``ends``), walking the 4-ary tree they imply."""
    ends = set(ends)

    def walk(first, last, depth):
        if first == last:
            return 1.0 if last in ends else 0.0
        p, q = split_prob(int(sum(counts[first:last + 1])), depth, lam, delta)
        if last in ends and not any(first <= e < last for e in ends):
            return q
        out = p
        for a, b in _children(first, last):
            out *= walk(a, b, depth + 1)
        return out

    return walk(0, len(counts) - 1, 0)


def _grow4(values, size, eps, rng, depth0=0, scale_bias=None):
    srt = np.sort(np.asarray(values, dtype=np.uint64))
    lam, delta = scale_bias or privtree_parameters(Fraction(eps), 4)
    return privtree.privtree_kernel(srt, None, 0, size - 1, rng, scale=lam, bias=delta,
                                    depth0=depth0, fanout=4)[0]


def _seen(counts, eps, runs, seed, scale_bias=None, size=None):
    size = size or len(counts)
    lam, delta = privtree_parameters(Fraction(eps), 4)
    law = _law4(counts, 0, size - 1, float(lam), delta)
    keys = sorted(law)
    index = {k: i for i, k in enumerate(keys)}
    values = np.repeat(np.arange(size), counts)
    rng = ps.Rng(seed=seed)
    seen = np.zeros(len(keys) + 1)
    for _ in range(runs):
        ends = tuple(int(e) for e in _grow4(values, size, eps, rng, scale_bias=scale_bias))
        seen[index.get(ends, len(keys))] += 1
    return seen, np.array([law[k] for k in keys])


def test_parameters_are_corollary_1_for_beta_4():
    for eps in (Fraction(1, 10), Fraction(1), Fraction(7, 3)):
        lam, delta = privtree_parameters(eps, 4)
        assert lam == Fraction(7, 3) / eps                       # (2 beta - 1)/((beta - 1) eps)
        assert delta >= float(lam) * math.log(4) and delta - 1 < float(lam) * math.log(4)
        assert privtree_parameters(eps) == privtree_parameters(eps, 2)


def test_law_is_a_distribution_and_children_are_halvings():
    assert _children(0, 7) == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert _children(0, 2) == [(0, 0), (1, 1), (2, 2)] and _children(0, 1) == [(0, 0), (1, 1)]
    for counts in ([0] * 16, [5, 0, 0, 1, 9, 9, 0, 2, 0, 0, 3, 0, 0, 0, 0, 8], [40] * 7):
        law = _law4(counts, 0, len(counts) - 1, 2.0, 3)
        assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
        for ends in law:       # every outcome is a valid 4-ary leaf set
            TreePartition(list(ends), domain=(0, len(counts) - 1), epsilon=1, beta=0.1, fanout=4)


def test_leaves_follow_the_exact_law():
    seen, probs = _seen([0, 3, 0, 0, 6, 0, 0, 1, 2, 0, 0, 0, 0, 0, 5, 5], 1.0, 3000,
                        b"privtree4-law")
    assert seen[-1] == 0
    assert_gof(seen[:-1], probs)


@pytest.mark.slow
@pytest.mark.parametrize("counts,eps", [([4, 4, 0, 0, 0, 0, 9], 0.7), ([0] * 8, 2.0),
                                        ([1, 0, 2, 0, 0, 7, 0, 0, 0, 0, 0, 3], 1.5)])
def test_leaves_follow_the_exact_law_more_shapes(counts, eps):
    seen, probs = _seen(counts, eps, 6000, f"privtree4-law|{counts}".encode())
    assert seen[-1] == 0
    assert_gof(seen[:-1], probs)


@pytest.mark.parametrize("wrong", ["delta_of_beta_2", "lambda_of_1_over_eps"])
def test_a_kernel_with_a_wrong_lambda_or_delta_is_rejected_by_the_law(wrong):
    """Mutants: the 4-ary kernel run with the binary tree's delta (lambda ln 2), or with
    lambda = 1/epsilon (the (2 beta - 1)/(beta - 1) factor forgotten), fails the
    chi-square test against the correct law at alpha = 1e-6."""
    counts = [0, 3, 0, 0, 6, 0, 0, 1, 2, 0, 0, 0, 0, 0, 5, 5]
    eps = Fraction(1)
    lam, delta = privtree_parameters(eps, 4)
    bad = ((lam, math.ceil(float(lam) * math.log(2))) if wrong == "delta_of_beta_2"
           else (1 / eps, math.ceil(math.log(4) / float(eps))))
    seen, probs = _seen(counts, eps, 3000, b"privtree4-law", scale_bias=bad)
    with pytest.raises(AssertionError):
        assert seen[-1] == 0
        assert_gof(seen[:-1], probs)


# ------------------------------------------------------------- exact privacy loss
def _max_loss4(a, b, lam, delta):
    la, lb = _law4(a, 0, len(a) - 1, lam, delta), _law4(b, 0, len(b) - 1, lam, delta)
    assert set(la) == set(lb)
    return max(abs(math.log(la[k]) - math.log(lb[k])) for k in la)


NEIGHBOURS = [[0] * 16, [1] * 16, [0, 0, 0, 7] + [0] * 12, [2, 9, 4, 0, 0, 1, 30, 0] * 2,
              [6, 6, 6, 6] + [0] * 12, [0] * 15 + [25]]


def _worst(lam, delta):
    worst = 0.0
    for base in NEIGHBOURS:
        for extra in range(0, 16, 3):
            plus = list(base)
            plus[extra] += 1
            worst = max(worst, _max_loss4(base, plus, lam, delta))
    return worst


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_exact_loss_of_neighbours_is_at_most_epsilon(eps):
    lam, delta = privtree_parameters(Fraction(eps), 4)
    worst = _worst(float(lam), delta)
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.5 * eps          # the bound is not vacuous


def test_the_loss_oracle_sees_a_wrong_delta_or_lambda():
    """delta = 0 on a 64-value domain (three 4-ary levels on an item's path): adding one
    item to the empty domain costs more than epsilon; so does lambda = 1 / epsilon."""
    eps = 1.0
    lam, delta = privtree_parameters(Fraction(eps), 4)
    empty, one = [0] * 64, [0] * 64
    one[0] = 1
    ends = (0, 1, 2, 3, 7, 11, 15, 31, 47, 63)      # the leaves along item 0's path
    loss = lambda d: abs(math.log(_outcome4(one, ends, float(lam), d))  # noqa: E731
                         - math.log(_outcome4(empty, ends, float(lam), d)))
    assert loss(0) > 1.2 * eps
    assert loss(delta) <= eps
    assert _worst(1 / eps, math.ceil(math.log(4) / eps)) > 1.2 * eps


# ----------------------------------------------------------------- validation
def test_tree_partition_of_fanout_4_validates_its_leaves():
    p = TreePartition([1, 3, 5, 7], domain=(0, 7), epsilon=1, beta=0.05, fanout=4)
    assert p.depths.tolist() == [1, 1, 1, 1] and p.fanout == 4
    p = TreePartition([0, 1, 3, 5, 7], domain=(0, 7), epsilon=1, beta=0.05, fanout=4)
    assert p.depths.tolist() == [2, 2, 1, 1, 1]    # width-1 leaves of a width-2 node: level 2
    assert TreePartition([0, 1, 2], domain=(0, 2), epsilon=1, beta=0.05, fanout=4).depths.tolist() \
        == [1, 1, 1]
    # a binary leaf of width >= 2 one halving below a 4-ary node is not a 4-ary leaf
    for ends in ([3, 7], [1, 3, 7], [0, 1, 3, 7]):
        with pytest.raises(DomainError):
            TreePartition(ends, domain=(0, 7), epsilon=1, beta=0.05, fanout=4)
    for bad in (3, 8, True, 2.0, "4"):
        with pytest.raises(ParameterError, match="privtree_fanout must be 2 or 4"):
            TreePartition([7], domain=(0, 7), epsilon=1, beta=0.05, fanout=bad)
    assert privtree.root_depth(16, 4, 4) == 1 and privtree.root_depth(16, 2, 4) == 2


def test_kernel_refuses_a_bad_fanout_before_drawing():
    rng = ps.Rng(seed=1)
    keys = np.array([1, 5, 9], dtype=np.uint64)
    cum = np.array([1, 2, 3], dtype=np.int64)
    out = ffi.new("pds_privtree *")
    depths = np.empty(2, dtype=np.uint8)
    try:
        with rng.native() as state:
            for fanout in (0, 1, 3, 8):
                st = lib.pds_privtree_build_k(state, ffi.from_buffer("uint64_t[]", keys),
                                              ffi.from_buffer("int64_t[]", cum), 3, 0, 9, 0, 3,
                                              1, 2, 0, 100, 0, fanout, out)
                assert st == lib.PDS_EINVAL and out.m == 0
                assert lib.pds_privtree_depths_k(
                    ffi.from_buffer("uint64_t[]", np.array([4, 9], np.uint64)), 2, 0, 9, 0,
                    fanout, ffi.from_buffer("uint8_t[]", depths)) == lib.PDS_EINVAL
        assert rng.random_uint64() == ps.Rng(seed=1).random_uint64()
    finally:
        lib.pds_privtree_free(out)


@pytest.mark.parametrize("kwargs,word", [
    (dict(privtree_fanout=3), "privtree_fanout must be 2 or 4"),
    (dict(privtree_fanout="4"), "privtree_fanout must be 2 or 4"),   # None is the default now
    (dict(privtree_merge=0), "privtree_merge"),
    (dict(privtree_merge=1), "privtree_merge"),
    (dict(privtree_merge=True), "privtree_merge"),
    (dict(partition="dnrr", privtree_fanout=4), "partition='privtree' only"),
    (dict(partition="dnrr", privtree_merge=0.5), "partition='privtree' only"),
    (dict(epsilon=1e-14, privtree_merge=0.5), "epsilon"),
])
def test_bad_options_are_refused_before_the_budget_or_randomness(kwargs, word):
    budget = ps.Budget(10)
    kwargs = dict(kwargs)
    args_eps = kwargs.pop("epsilon", 1)
    rng = ps.Rng(seed=2)
    args = dict(domain=(0, 99), epsilon=args_eps, budget=budget, rng=rng, **kwargs)
    with pytest.raises(ParameterError, match=word) as info:
        ps.IntervalSynopsis.build([5, 6, 7], **args)
    assert "\n" not in str(info.value)
    assert budget.spent == 0
    assert rng.random_uint64() == ps.Rng(seed=2).random_uint64()


def test_a_merge_share_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="privtree_merge"):
        ps.IntervalSynopsis.build([5], domain=(0, 9), epsilon=1, privtree_merge="x")


# ------------------------------------------------------------------- exactness
def _data():
    gen = np.random.default_rng(8)
    return np.concatenate([gen.integers(0, 10**6, 20000), np.full(3000, 777),
                           gen.normal(5e5, 300, 5000).astype(np.int64)]).astype(np.int64)


def test_in_memory_weighted_and_sharded_paths_agree():
    v = _data()
    dom = (0, 10**6 - 1)
    a = ps.IntervalSynopsis.build(v, domain=dom, epsilon=1, rng=ps.Rng(seed=5), privtree_fanout=4)
    u, c = np.unique(v, return_counts=True)
    b = ps.IntervalSynopsis.build(u, counts=c, domain=dom, epsilon=1, rng=ps.Rng(seed=5),
                                  privtree_fanout=4)
    assert a.partition == b.partition and a.partition.fanout == 4
    assert np.array_equal(a._released, b._released)
    s1 = ps.IntervalSynopsis.build(v, domain=dom, epsilon=1, rng=ps.Rng(seed=5), shards=3,
                                   privtree_fanout=4)
    s2 = ps.IntervalSynopsis.build(u, counts=c, domain=dom, epsilon=1, rng=ps.Rng(seed=5),
                                   shards=3, privtree_fanout=4)
    assert s1.partition == s2.partition and s1.partition.shards == 3
    # the 4-ary tree is not the binary one
    binary = ps.IntervalSynopsis.build(v, domain=dom, epsilon=1, rng=ps.Rng(seed=5))
    assert binary.partition != a.partition
    m1 = ps.IntervalSynopsis.build(v, domain=dom, epsilon=1, rng=ps.Rng(seed=5), privtree_merge=0.5)
    m2 = ps.IntervalSynopsis.build(u, counts=c, domain=dom, epsilon=1, rng=ps.Rng(seed=5),
                                   privtree_merge=0.5)
    assert m1.partition == m2.partition and np.array_equal(m1._released, m2._released)


@pytest.mark.slow
def test_weight_bound_holds_for_every_tested_leaf_of_fanout_4():
    gen = np.random.default_rng(5)
    values = np.concatenate([gen.integers(0, 2**40, 3000), np.full(2000, 12345),
                             gen.normal(2**39, 2**20, 4000).astype(np.int64)]).astype(np.uint64)
    srt = np.sort(values)
    rng = ps.Rng(seed=b"privtree4-weights")
    tight = 0.0
    for _ in range(200):
        part = privtree.privtree_of_sorted(srt, (0, 2**40 - 1), Fraction(1, 5), 1e-9, rng,
                                           fanout=4)
        w = np.bincount(np.searchsorted(part.end_offsets, srt), minlength=len(part))
        bounds = part.leaf_weight_bounds()
        tested = bounds > 0
        assert np.all(w[tested] <= bounds[tested])
        tight = max(tight, float((w[tested] / bounds[tested]).max()))
    assert tight > 0.2


def test_save_and_load_round_trip_and_crafted_records(tmp_path):
    v = _data()
    for kw in (dict(privtree_fanout=4, shards=2), dict(privtree_merge=0.5),
               dict(privtree_merge=0.25, privtree_fanout=4, level_ratio=1)):
        syn = ps.IntervalSynopsis.build(v, domain=(0, 10**6 - 1), epsilon=1, rng=ps.Rng(seed=9),
                                        **kw)
        path = tmp_path / "s.pds"
        syn.save(path)
        back = ps.load(path)
        assert back.partition == syn.partition
        assert np.array_equal(back.count_many([0, 10], [10**6 - 1, 600000]),
                              syn.count_many([0, 10], [10**6 - 1, 600000]))
        assert back.error_bound(0.9) == syn.error_bound(0.9)
        ps.save(syn.partition, tmp_path / "p.pds")
        assert ps.load(tmp_path / "p.pds") == syn.partition
    kind, meta, arrays = syn._to_record()[:3]
    assert meta["format"] == 5
    noisy = arrays["leaf_noisy_counts"].copy()
    noisy[::2] += 1000
    for m, a, word in [(meta, dict(arrays, leaf_noisy_counts=noisy), "merge"),
                       (dict(meta, privtree_fanout=3), arrays, "privtree_fanout"),
                       ({k: x for k, x in meta.items() if k != "privtree_fanout"}, arrays,
                        "privtree_fanout")]:
        persist.write_record(tmp_path / "bad.pds", kind, m, a)
        with pytest.raises(FormatError, match=word):
            ps.load(tmp_path / "bad.pds")
    # the default build still writes the formats of earlier releases
    plain = ps.IntervalSynopsis.build(v, domain=(0, 10**6 - 1), epsilon=1, rng=ps.Rng(seed=9))
    assert plain._to_record()[1]["format"] == 4
    assert plain.partition._to_record()[1]["version"] == 1


# ------------------------------------------------------------------------ merge
def _reference_runs(ends, noisy, tau):
    """The merge rule in plain Python (exact rationals)."""
    last, c_run, w_run, start = [], 0, 0, 0
    for k, (e, c) in enumerate(zip(ends, noisy)):
        w = int(e) - start + 1
        if k and abs(c * w_run - c_run * w) > tau * max(w_run, w):
            last.append(k - 1)
            c_run = w_run = 0
        c_run, w_run, start = c_run + int(c), w_run + w, int(e) + 1
    return last + [len(ends) - 1]


def test_merge_rule_matches_its_definition():
    gen = np.random.default_rng(3)
    for _ in range(50):
        m = int(gen.integers(1, 60))
        ends = np.cumsum(gen.integers(1, 50, m)).astype(np.uint64)
        noisy = gen.integers(-20, 200, m).astype(np.int64)
        for scale in (Fraction(1, 2), Fraction(3), Fraction(40)):
            tau = merge.MERGE_FACTOR * scale
            assert merged_runs(ends, noisy, scale).tolist() == _reference_runs(ends, noisy, tau)
    # equal densities merge, a jump splits
    assert merged_runs(np.array([9, 19, 29, 39], np.uint64), np.array([10, 10, 500, 500]),
                       Fraction(1)).tolist() == [1, 3]
    with pytest.raises(ParameterError, match="invalid argument"):
        merged_runs(np.array([9, 5], np.uint64), np.array([1, 1]), Fraction(1))


def test_merged_counts_are_sums_and_the_noise_is_discrete_laplace():
    """The segments' true counts are the sums of their leaves'; the noisy leaf counts
    minus the true ones are discrete Laplace of scale 1 / epsilon_m (mean 0, variance
    2a/(1-a)^2, alpha = 1e-6)."""
    v = np.sort(_data().astype(np.uint64))
    eps_p = Fraction(1, 2)
    rng = ps.Rng(seed=b"privtree-merge-noise")
    errors = []
    for _ in range(20):
        part, counts = partition_of_sorted(v, (0, 10**6 - 1), eps_p, 0.05, None, rng,
                                           method="privtree", weights=True,
                                           privtree_merge=Fraction(1, 2))
        assert isinstance(part, MergedPartition) and part.epsilon == eps_p
        assert part.merge_epsilon == Fraction(1, 4) and part.leaves.epsilon == Fraction(1, 4)
        true_leaf = np.bincount(np.searchsorted(part.leaves.end_offsets, v),
                                minlength=len(part.leaves))
        assert np.array_equal(counts, np.bincount(np.searchsorted(part.end_offsets, v),
                                                  minlength=len(part)))
        errors.append(part.noisy_counts - true_leaf)
        bounds = part.leaf_weight_bounds()
        assert np.all(counts <= bounds + (bounds == 0) * counts)
    z = np.concatenate(errors)
    a = math.exp(-0.25)
    assert_mean_var(z.astype(np.float64), 0.0, 2 * a / (1 - a) ** 2)
    assert len(part) < len(part.leaves)            # the merge merges


def test_merged_synopsis_epsilon_and_error_bars_hold():
    v = _data()
    syn = ps.IntervalSynopsis.build(v, domain=(0, 10**6 - 1), epsilon=1, rng=ps.Rng(seed=4),
                                    privtree_merge=0.5)
    assert syn.epsilon == 1 and syn.epsilon_partition == Fraction(1, 4)
    gen = np.random.default_rng(1)
    q = np.sort(gen.integers(0, 10**6, (200, 2)), axis=1)
    srt = np.sort(v)
    truth = np.searchsorted(srt, q[:, 1], "right") - np.searchsorted(srt, q[:, 0], "left")
    bars = syn.confidence_intervals(q[:, 0], q[:, 1], 0.95)
    err = np.abs(syn.count_many(q[:, 0], q[:, 1]) - truth)
    assert np.all(err <= bars.noise + bars.bias)


# -------------------------------------------------------------------------- CLI
@pytest.mark.integration
def test_cli_flags_build_record_and_refuse_in_one_line(tmp_path):
    from clirun import run

    data = tmp_path / "v.csv"
    data.write_text("x\n" + "\n".join(str(v) for v in np.arange(2000) % 700) + "\n")
    common = ["build", "--input", data, "--columns", "x", "--domain", "0:999", "--epsilon", 1,
              "--seed", 1, "--output"]
    out = tmp_path / "s.pds"
    proc = run(*common, out, "--privtree-fanout", 4, "--privtree-merge", 0.5)
    assert proc.returncode == 0, proc.stderr
    syn = ps.load(out)
    assert syn.partition.fanout == 4 and isinstance(syn.partition, MergedPartition)
    info = run("info", out)
    assert "privtree (fanout 4)" in info.stdout and "merged" in info.stdout
    for bad, word in ((["--privtree-fanout", 3], "--privtree-fanout"),
                      (["--privtree-merge", 1.5], "privtree_merge"),
                      (["--privtree-fanout", 4, "--partition", "dnrr"], "privtree")):
        proc = run(*common, tmp_path / "bad.pds", *bad)
        assert proc.returncode == 2 and word in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        assert not (tmp_path / "bad.pds").exists()


def test_a_streamed_source_gives_the_in_memory_release(tmp_path):
    """A database read in chunks (the source runner) gives, under a seed, exactly the
    in-memory release: fanout 4, the merge, and both over public shards."""
    import sqlite3

    from pydp_synopsis import sources

    v = _data()[::7]
    db = tmp_path / "d.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(int(x),) for x in v])
    for kw in (dict(privtree_fanout=4), dict(privtree_merge=0.25),
               dict(privtree_fanout=4, privtree_merge=0.5, shards=3)):
        src = sources.SqlSource(f"sqlite:///{db}", ["x"], table="t", chunk_rows=777)
        got = ps.IntervalSynopsis.build(src, domain=(0, 10**6 - 1), epsilon=1, rng=ps.Rng(seed=6),
                                        **kw)
        want = ps.IntervalSynopsis.build(v, domain=(0, 10**6 - 1), epsilon=1, rng=ps.Rng(seed=6),
                                         **kw)
        assert got.partition == want.partition, kw
        assert np.array_equal(got._released, want._released), kw


@pytest.mark.integration
def test_a_dask_collection_sharded_on_workers_gives_the_in_memory_release():
    """Each shard's 4-ary tree grows on a worker (the runner's remote path); the merge
    then runs here on the assembled leaves: the same release as in memory."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    distributed = pytest.importorskip("distributed")
    v = _data()[::5]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        frame = dd.from_pandas(pd.DataFrame({"x": v}), npartitions=4)
        for kw in (dict(privtree_fanout=4), dict(privtree_fanout=4, privtree_merge=0.25)):
            got = ps.IntervalSynopsis.build(frame["x"], domain=(0, 10**6 - 1), epsilon=1,
                                            rng=ps.Rng(seed=3), shards=3, **kw)
            want = ps.IntervalSynopsis.build(v, domain=(0, 10**6 - 1), epsilon=1,
                                             rng=ps.Rng(seed=3), shards=3, **kw)
            assert got.partition == want.partition, kw
            assert np.array_equal(got._released, want._released), kw

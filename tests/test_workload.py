"""workload= on IntervalSynopsis.build: the declared workload, the tree chosen for it, its record,
its refusals, and the chooser's variance against seeded releases (issue 33, item 1)."""
import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import pydp_synopsis as ps
from pydp_synopsis import cli, trees
from pydp_synopsis.errors import DomainError, FormatError, ParameterError
from pydp_synopsis.interval_options import tree_scales
from pydp_synopsis.interval_record import from_record
from pydp_synopsis.interval_workload import (LEVEL_RATIOS, TREE_FANOUTS, TreeCandidate,
                                             choose_tree, partition_rule,
                                             query_variances, tree_candidates)
from pydp_synopsis.rectangles.workload import (GRID_COARSE_SHARES, MULTITREE_FANOUTS,
                                               cover_nodes, multitree_variances)
from pydp_synopsis.workload import (CLASSES, LATTICE_SIZE, Workload, check_workload,
                                    class_offsets, segment_offsets)
from stattests import ALPHA

DOMAIN = (0, 10**6)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    return np.concatenate([rng.normal(3e5, 2e4, 20000), rng.uniform(0, 1e6, 5000)]).astype(
        np.int64).clip(*DOMAIN)


def _declared(seed=1, q=500, width=2000):
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, DOMAIN[1] - width, q)
    return lo, lo + rng.integers(0, width, q)


def _total_var(syn, lo, hi):
    return float(np.sum(syn.count_many(lo, hi, return_std=True)[1] ** 2))


# ------------------------------------------------------------------ the choice
@pytest.mark.parametrize("workload", ["short", "mixed", "long", "declared"])
def test_chosen_tree_is_never_worse_than_the_default_on_the_workload(data, workload):
    wl = _declared() if workload == "declared" else workload
    # the partition the class's public rule picks (test_workload_partition.py), given explicitly
    f, share = partition_rule(workload, Fraction(1, 2))
    base = ps.IntervalSynopsis.build(data, domain=DOMAIN, epsilon=0.5, rng=ps.Rng(seed=9),
                                     privtree_fanout=f, partition_share=share)
    syn = ps.IntervalSynopsis.build(data, domain=DOMAIN, epsilon=0.5, rng=ps.Rng(seed=9),
                                    workload=wl)
    # the same seed: the same released partition, then a tree chosen over it
    assert np.array_equal(syn.partition.end_offsets, base.partition.end_offsets)
    choice = syn.workload
    assert (choice.fanout, choice.level_ratio) == (syn.fanout, syn.level_ratio)
    assert (choice.default_fanout, choice.default_level_ratio) == (16, Fraction(7, 4))
    assert choice.variance <= choice.default_variance          # exact: the default is a candidate
    # the family and, over at most MAX_FLAT segments, the flat tree (one level)
    assert choice.candidates == len(TREE_FANOUTS) * len(LEVEL_RATIOS) + 1 == len(
        tree_candidates(TreeCandidate(16, Fraction(7, 4)), 0, len(syn.partition)))
    assert syn.epsilon == base.epsilon and syn.pure_epsilon == base.pure_epsilon
    # the chooser's numbers are the synopses' own exact noise std on the workload
    lo, hi = (_declared() if workload == "declared" else
              class_offsets(workload, [syn.partition.end_offsets], [(0, DOMAIN[1])]))
    got, want = _total_var(syn, lo, hi), _total_var(base, lo, hi)
    assert math.isclose(got, choice.variance * lo.size, rel_tol=1e-9)
    assert math.isclose(want, choice.default_variance * lo.size, rel_tol=1e-9)
    assert got <= want * (1 + 1e-12)


def test_short_queries_get_flat_leaf_heavy_trees_and_long_ones_do_not(data):
    kw = dict(domain=DOMAIN, epsilon=1.0)
    syn = ps.IntervalSynopsis.build(data, rng=ps.Rng(seed=3), workload="short", **kw)
    short = syn.workload
    long_ = ps.IntervalSynopsis.build(data, rng=ps.Rng(seed=3), workload="long", **kw).workload
    # short ranges: the flat tree (every count all of the tree's epsilon) or leaf-heavy levels
    assert short.fanout == len(syn) or short.level_ratio > long_.level_ratio
    assert long_.fanout in TREE_FANOUTS
    assert short.variance < 0.8 * short.default_variance       # a real gain where declared


def test_choice_is_deterministic_and_takes_the_default_on_ties(data):
    part = ps.IntervalSynopsis.build(data, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=4)).partition
    kw = dict(eps_tree=Fraction(3, 4), estimator="uniform", consistency=True)
    one = choose_tree(Workload("mixed"), part, TreeCandidate(16, Fraction(7, 4)), **kw)
    two = choose_tree(Workload("mixed"), part, TreeCandidate(16, Fraction(7, 4)), **kw)
    assert one == two
    # every candidate's variance recomputed: the choice is the first least one, default first
    ends = np.asarray(part.end_offsets, dtype=np.uint64)
    lo, hi = class_offsets("mixed", [ends], [(0, DOMAIN[1])])
    cands = tree_candidates(TreeCandidate(16, Fraction(7, 4)), 0, ends.size)
    assert cands[-1] == TreeCandidate(ends.size, Fraction(1))        # the flat tree, last
    totals = [float(np.sum(query_variances(ends, lo, hi, c, **kw))) for c in cands]
    best = int(np.argmin(totals))
    assert (one.fanout, one.level_ratio) == (cands[best].fanout, cands[best].level_ratio)
    assert one.variance * lo.size == totals[best]
    # a one-query workload on a single segment: every candidate ties -> the default
    tie = Workload("declared", np.array([0], np.uint64), np.array([0], np.uint64))
    single = ps.IntervalSynopsis.build([0] * 10, domain=(0, 0), epsilon=1.0, rng=ps.Rng(seed=1))
    got = choose_tree(tie, single.partition, TreeCandidate(16, Fraction(7, 4)), **kw)
    assert (got.fanout, got.level_ratio) == (16, Fraction(7, 4))


def test_candidates_hold_the_default_first_and_only_equal_splits_with_delta():
    cands = tree_candidates(TreeCandidate(16, Fraction(7, 4)))
    assert cands[0] == TreeCandidate(16, Fraction(7, 4)) and len(set(cands)) == len(cands)
    assert TreeCandidate(16, Fraction(1)) in cands and TreeCandidate(4, Fraction(64)) in cands
    assert all(c.level_ratio == 1 for c in tree_candidates(TreeCandidate(16, Fraction(1)),
                                                           delta=Fraction(1, 10**6)))
    custom = tree_candidates(TreeCandidate(128, Fraction(2)))
    assert custom[0] == TreeCandidate(128, Fraction(2)) and len(custom) == 41


def test_workload_with_delta_and_other_estimators(data):
    for kw in ({"delta": 1e-6}, {"estimator": "cover"}, {"partition": "dnrr"},
               {"consistency": False}):
        syn = ps.IntervalSynopsis.build(data, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=2),
                                        workload="short", **kw)
        c = syn.workload
        assert c.variance <= c.default_variance
        lo, hi = class_offsets("short", [syn.partition.end_offsets], [(0, DOMAIN[1])])
        assert math.isclose(_total_var(syn, lo, hi), c.variance * lo.size, rel_tol=1e-9)
        if "delta" in kw:
            assert syn.level_ratio == 1


# ------------------------------------------------------------------ the classes
def test_classes_are_fixed_public_designs_over_the_released_segments():
    ends = np.array([9, 19, 999, 10**6], dtype=np.uint64)
    for name in CLASSES:
        lo, hi = class_offsets(name, [ends], [(0, 10**6)])
        assert lo.shape == hi.shape == (LATTICE_SIZE,) and lo.dtype == np.uint64
        assert (lo <= hi).all() and hi.max() <= 10**6
        again = class_offsets(name, [ends], [(0, 10**6)])
        assert np.array_equal(again[0], lo) and np.array_equal(again[1], hi)
    # long: ends uniform over the domain (not the segments), exactly floor(t D)
    lo, hi = class_offsets("long", [ends], [(0, 2**64 - 1)])
    assert int(hi.max()) < 2**64 and int(hi.max()) > 2**64 * 0.99
    # short: at most 1% of the segments (at least a quarter segment) wide
    many = np.arange(999, 10**6, 1000, dtype=np.uint64)          # 1000 segments of 1000
    lo, hi = class_offsets("short", [many], [(0, 10**6)])
    widths = (hi - lo).astype(np.int64) + 1
    assert widths.max() <= 10 * 1000 + 1000 and np.median(widths) < 3000
    assert np.array_equal(segment_offsets(many, np.array([0.0, 0.5, 999.999])),
                          np.array([0, 500, 999_999], dtype=np.uint64))


# ------------------------------------------------------------------ record
def test_file_round_trip_and_old_files(tmp_path, data):
    syn = ps.IntervalSynopsis.build(data, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=6),
                                    workload=_declared())
    syn.save(tmp_path / "w.pds")
    back = ps.load(tmp_path / "w.pds")
    assert back.workload == syn.workload and back.workload.workload == "declared"
    assert back.workload.queries == 500
    lo, hi = _declared(seed=8)
    assert np.array_equal(back.count_many(lo, hi), syn.count_many(lo, hi))
    kind, meta, arrays = syn._to_record()[:3]
    for bad in ({"fanout": "x"}, {"level_ratio": [1, 0]}, {"queries": True}):
        rec = dict(meta, workload=dict(meta["workload"], **bad))
        with pytest.raises(FormatError, match="workload"):
            from_record(rec, arrays, type(syn)._from_release)
    other = 4 if syn.fanout != 4 else 8
    rec = dict(meta, workload=dict(meta["workload"], fanout=other))
    with pytest.raises(FormatError, match="workload's tree"):
        from_record(rec, arrays, type(syn)._from_release)
    # files written before workload= (release fixtures) load with workload None
    here = os.path.join(os.path.dirname(__file__), "fixtures")
    olds = [ps.load(os.path.join(here, f)) for f in sorted(os.listdir(here)) if f.endswith(".pds")]
    ivs = [o for o in olds if isinstance(o, ps.IntervalSynopsis)]
    assert ivs and all(o.workload is None for o in ivs)
    plain = ps.IntervalSynopsis.build(data, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=6))
    assert "workload" not in plain._to_record()[1]


def test_user_units_workload():
    days = np.datetime64("2001-01-01") + np.random.default_rng(1).integers(0, 365, 3000)
    lo = np.array(["2001-03-01", "2001-06-01"], dtype="datetime64[D]")
    hi = np.array(["2001-03-07", "2001-06-02"], dtype="datetime64[D]")
    syn = ps.IntervalSynopsis.build(days, domain=("2001-01-01", "2001-12-31"), epsilon=1.0,
                                    rng=ps.Rng(seed=2), workload=(lo, hi))
    assert syn.workload.queries == 2 and syn.workload.variance <= syn.workload.default_variance
    with pytest.raises(DomainError):
        ps.IntervalSynopsis.build(days, domain=("2001-01-01", "2001-12-31"), epsilon=1.0,
                                  workload=(lo, np.array(["2002-03-07", "2001-06-02"],
                                                         dtype="datetime64[D]")))


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("workload, exc, words", [
    ("medium", ParameterError, "workload must be one of"),
    ("", ParameterError, "workload must be one of"),
    (([], []), ParameterError, "at least one query"),
    (([1, 2], [3]), ParameterError, "same shape"),
    (([[1, 2]], [[3, 4]]), ParameterError, r"shape \(q,\)"),
    (([5], [4]), DomainError, "lo must be <= hi"),
    (([-1], [4]), DomainError, "workload lo"),
    (([1], [10**6 + 1]), DomainError, "workload hi"),
    (([1.5], [4]), TypeError, "workload lo"),
    ((np.zeros(3), ), TypeError, "workload must be"),
    (7, TypeError, "workload must be"),
])
def test_bad_workload_is_one_line_before_any_budget_or_randomness(workload, exc, words):
    budget = ps.Budget(10)
    rng = ps.Rng(seed=5)
    first = ps.Rng(seed=5).random_uint64()
    with pytest.raises(exc, match=words) as err:
        ps.IntervalSynopsis.build([1, 2, 3], domain=DOMAIN, epsilon=1.0, budget=budget,
                                  rng=rng, workload=workload)
    assert "\n" not in str(err.value)
    assert budget.spent == 0 and rng.random_uint64() == first


def test_workload_needs_the_hierarchical_tree_and_caps_its_size(monkeypatch):
    for tree in ("binary", "kary"):
        with pytest.raises(ParameterError, match="structure='hierarchical'"):
            ps.IntervalSynopsis.build([1], domain=DOMAIN, epsilon=1.0, structure=tree,
                                      workload="short")
    monkeypatch.setattr("pydp_synopsis.workload.MAX_QUERIES", 3)
    with pytest.raises(ParameterError, match="at most 3 queries"):
        check_workload(([1] * 4, [2] * 4), [DOMAIN])


# ------------------------------------------------------------------ statistics
def test_released_answers_have_the_variance_the_chooser_computed():
    """Many seeded releases of the chosen tree over one fixed partition: each query's answer
    has mean = its noiseless value and variance = the chooser's (alpha = 1e-6, CLT band)."""
    ends = np.array(sorted({int(x) for x in np.linspace(50, 99_999, 300)} | {99_999}),
                    dtype=np.uint64)
    counts = np.random.default_rng(3).integers(0, 50, ends.size)
    part = ps.IntervalSynopsis.build([0], domain=(0, 99_999), epsilon=1.0, partition="dnrr",
                                     rng=ps.Rng(seed=1)).partition
    # a partition object with these ends (DNRR's type takes any ends), built from public ends
    part = type(part)(ends, domain=(0, 99_999), epsilon=part.epsilon, beta=part.beta,
                      threshold_factor=part.threshold_factor)
    eps_t = Fraction(1, 2)
    choice = choose_tree(Workload("short"), part, TreeCandidate(16, Fraction(7, 4)),
                         eps_tree=eps_t, estimator="uniform", consistency=True)
    cand = TreeCandidate(choice.fanout, choice.level_ratio)
    lo, hi = class_offsets("short", [ends], [(0, 99_999)])
    pick = np.arange(0, lo.size, lo.size // 6)[:6]
    lo, hi = lo[pick], hi[pick]
    var = query_variances(ends, lo, hi, cand, eps_tree=eps_t, estimator="uniform",
                          consistency=True, lookup=part.lookup)
    levels = trees.tree_shape(ends.size, cand.fanout)[0]
    scales = tree_scales(levels, eps_t, cand.level_ratio)
    weights = None if scales is None else trees.LevelWeights(scales)
    exact = trees.interval_answers(ends, lo, hi, "uniform", 0.0,
                                   prefix=np.concatenate(([0.0], np.cumsum(counts))))
    rng, reps = ps.Rng(seed=11), 1500
    ans = np.empty((reps, lo.size))
    for r in range(reps):
        nodes = trees.noisy_tree(counts, cand.fanout, eps_t, rng, scales=scales)
        leaf = trees.consistent_leaves(nodes, ends.size, cand.fanout, weights)
        ans[r] = trees.interval_answers(ends, lo, hi, "uniform", 0.0,
                                        prefix=np.concatenate(([0.0], np.cumsum(leaf))))
    z = float(stats.norm.isf(ALPHA / (4 * lo.size)))
    for j in range(lo.size):
        x = ans[:, j] - exact[j]
        assert abs(x.mean()) < z * math.sqrt(var[j] / reps)
        m4 = float(np.mean(x ** 4))
        se = math.sqrt(max(m4 - var[j] ** 2, 1e-300) / reps)
        assert abs(float(np.mean(x ** 2)) - var[j]) < z * se, (j, np.mean(x ** 2), var[j])


# ------------------------------------------------------------------ command line
@pytest.mark.integration
def test_cli_build_with_a_workload_class_and_file(tmp_path):
    table = tmp_path / "t.csv"
    v = np.random.default_rng(2).integers(0, 5000, 3000)
    table.write_text("x\n" + "\n".join(map(str, v)) + "\n")
    queries = tmp_path / "q.csv"
    queries.write_text("lo,hi\n10,20\n100,130\n4000,4010\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ps.__file__)))
    cmd = [sys.executable, "-m", "pydp_synopsis.cli", "build", "--input", str(table),
           "--columns", "x", "--domain", "0:9999", "--epsilon", "1", "--seed", "3"]
    for wl in ("short", str(queries)):
        out = tmp_path / "s.pds"
        proc = subprocess.run(cmd + ["--workload", wl, "--output", str(out)], env=env,
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        syn = ps.load(out)
        assert syn.workload.workload == ("short" if wl == "short" else "declared")
        assert syn.workload.queries == (3 if wl != "short" else LATTICE_SIZE)
    bad = tmp_path / "bad.csv"
    for text, word in (("lo,hi\n5,4\n", "lo must be <= hi"), ("lo,hi\n", "no queries"),
                       ("lo\n1\n", "missing column"), ("lo,hi\n1,99999\n", "workload hi")):
        bad.write_text(text)
        proc = subprocess.run(cmd + ["--workload", str(bad), "--output", str(tmp_path / "b.pds")],
                              env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 2 and word in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "b.pds").exists()
    proc = subprocess.run(cmd + ["--workload", "medium", "--output", str(tmp_path / "b.pds")],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and "--workload must be a CSV file" in proc.stderr
    # two columns: a rectangle synopsis, boxes from lo_0,lo_1,hi_0,hi_1
    table2 = tmp_path / "t2.csv"
    table2.write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in zip(v, v[::-1])) + "\n")
    boxes = tmp_path / "b.csv"
    boxes.write_text("lo_0,lo_1,hi_0,hi_1\n1,2,300,400\n10,10,20,5000\n")
    out = tmp_path / "r.pds"
    proc = subprocess.run([sys.executable, "-m", "pydp_synopsis.cli", "build", "--input",
                           str(table2), "--columns", "x,y", "--domain", "0:9999,0:9999",
                           "--epsilon", "1", "--seed", "3", "--workload", str(boxes),
                           "--output", str(out)], env=env, capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ps.load(out).workload.queries == 2


# ------------------------------------------------------------------ rectangles
@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(8)
    a = rng.normal([3e5, 6e5], [3e4, 5e4], (6000, 2))
    b = rng.uniform(0, 1e6, (2000, 2))
    return np.concatenate([a, b]).astype(np.int64).clip(0, 10**6)


BOXES = [(0, 10**6), (0, 10**6)]


@pytest.mark.parametrize("fanout", [2, 4, 1024])
@pytest.mark.parametrize("estimator", ["uniform", "cover"])
def test_multitree_variance_formula_is_the_exact_noise(points, fanout, estimator):
    # an unpruned multi-tree: the chooser's per-box variance equals the structure's own
    syn = ps.RectangleSynopsis.build(points, domain=BOXES, epsilon=1.0, rng=ps.Rng(seed=3),
                                     structure="multitree", fanout=fanout, prune=None,
                                     final_share=1, estimator=estimator)
    mech = syn._mechanism
    lo, hi = class_offsets("mixed", [np.asarray(e, np.uint64) for e in syn._axes.ends],
                           [(0, int(e[-1])) for e in syn._axes.ends])
    lo = np.concatenate([lo, class_offsets("short", [np.asarray(e, np.uint64)
                                                     for e in syn._axes.ends],
                                           [(0, 10**6)] * 2)[0]])
    hi = np.concatenate([hi, lo[hi.shape[0]:]])
    var = multitree_variances(syn._axes, lo, hi, mech.shape, mech.scales[1], estimator)
    std = syn.count_many(lo.astype(np.int64), hi.astype(np.int64), return_std=True)[1]
    assert np.allclose(var, std ** 2, rtol=1e-9, atol=0)


def test_multitree_choice_is_exact_never_worse_and_recorded(tmp_path, points):
    for wl in ("short", "long", _boxes()):
        syn = ps.RectangleSynopsis.build(points, domain=BOXES, epsilon=1.0, rng=ps.Rng(seed=4),
                                         structure="multitree", fanout=4, workload=wl)
        c = syn.workload
        assert c.option == "fanout" and c.exact and c.default == (4, 4)
        assert c.value == tuple(syn.fanout) and c.score <= c.default_score
        assert c.candidates == 1 + len([f for f in MULTITREE_FANOUTS if f != 4])
        syn.save(tmp_path / "m.pds")
        assert ps.load(tmp_path / "m.pds").workload == c
    # determinism: the same seed, the same choice and release
    again = ps.RectangleSynopsis.build(points, domain=BOXES, epsilon=1.0, rng=ps.Rng(seed=4),
                                       structure="multitree", fanout=4, workload=_boxes())
    assert again.workload == syn.workload
    q = _boxes(seed=9)
    assert np.array_equal(again.count_many(*q), syn.count_many(*q))


def test_grid_choice_by_formula_is_recorded_and_old_files_load(tmp_path, points):
    # epsilon < 1/2: "short" keeps the adaptive grid (the quadtree rule: tests/test_quadtree.py)
    base = ps.RectangleSynopsis.build(points, domain=BOXES, epsilon=0.4, rng=ps.Rng(seed=5))
    syn = ps.RectangleSynopsis.build(points, domain=BOXES, epsilon=0.4, rng=ps.Rng(seed=5),
                                     workload="short")
    c = syn.workload
    assert c.option == "coarse_share" and not c.exact and c.default == Fraction(2, 5)
    assert c.score <= c.default_score and c.value in GRID_COARSE_SHARES
    assert syn._mechanism.coarse_share == float(c.value)
    assert syn.epsilon == base.epsilon and base.workload is None
    assert [np.array_equal(a, b) for a, b in zip(syn._axes.ends, base._axes.ends)] == [True] * 2
    syn.save(tmp_path / "g.pds")
    back = ps.load(tmp_path / "g.pds")
    assert back.workload == c
    kind, meta, arrays = syn._to_record()[:3]
    meta = dict(meta, workload=dict(meta["workload"], value=[1, 10]))
    ps.persist.write_record(tmp_path / "bad.pds", kind, meta, arrays)
    with pytest.raises(FormatError, match="workload"):
        ps.load(tmp_path / "bad.pds")
    assert "workload" not in base._to_record()[1]


def _boxes(seed=2, q=300):
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, 9 * 10**5, (q, 2))
    return lo, lo + rng.integers(0, 10**5, (q, 2))


@pytest.mark.parametrize("workload, exc, words", [
    ("tiny", ParameterError, "workload must be one of"),
    (([1, 2], [3, 4]), ParameterError, r"shape \(q, 2\)"),
    (([[1, 2, 3]], [[3, 4, 5]]), ParameterError, r"shape \(q, 2\)"),
    (([[5, 5]], [[4, 6]]), DomainError, "lo must be <= hi"),
    (([[0, 0]], [[1, 10**6 + 1]]), DomainError, r"workload hi\[1\]"),
    ((np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64)), ParameterError, "at least one"),
])
def test_bad_box_workload_is_refused_before_any_budget_or_randomness(workload, exc, words):
    budget = ps.Budget(10)
    rng = ps.Rng(seed=5)
    first = ps.Rng(seed=5).random_uint64()
    with pytest.raises(exc, match=words) as err:
        ps.RectangleSynopsis.build([[1, 2]], domain=BOXES, epsilon=1.0, budget=budget,
                                   rng=rng, workload=workload)
    assert "\n" not in str(err.value)
    assert budget.spent == 0 and rng.random_uint64() == first


def test_cover_nodes_counts_the_minimal_cover():
    # brute force: the fewest nodes of a k-ary tree (ragged right edge) covering [a, b)
    for k, m in ((2, 13), (3, 10), (4, 64), (16, 40)):
        levels = trees.tree_shape(m, k)[0]
        a, b = np.array([(x, y) for x in range(m) for y in range(x, m + 1)]).T
        got = cover_nodes(a, b, k, levels, m)

        def inside(level, u, x, y):
            lo_, hi_ = u * k ** level, min((u + 1) * k ** level, m)
            return x <= lo_ and hi_ <= y

        def brute(x, y):
            # a node is in the minimal cover iff it lies inside and its parent does not
            # (nodes of the top stored level have no stored parent)
            return sum(1 for level in range(levels) for u in range(-(-m // k ** level))
                       if inside(level, u, x, y)
                       and not (level + 1 < levels and inside(level + 1, u // k, x, y)))
        want = [brute(int(x), int(y)) for x, y in zip(a, b)]
        assert got.tolist() == want, (k, m)


def test_the_choice_reads_the_released_partition_only_not_the_data(data):
    # neighbouring inputs (one item added) whose seeded partitions coincide get the same tree:
    # the choice is a function of the released segment ends and public inputs
    same = 0
    for seed in range(6):
        a = ps.IntervalSynopsis.build(data, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=seed),
                                      workload="short")
        b = ps.IntervalSynopsis.build(np.append(data, 123_456), domain=DOMAIN, epsilon=1.0,
                                      rng=ps.Rng(seed=seed), workload="short")
        if np.array_equal(a.partition.end_offsets, b.partition.end_offsets):
            same += 1
            assert a.workload == b.workload
    assert same >= 1


def test_info_prints_the_workload_choice(tmp_path, capsys):
    v = np.random.default_rng(0).integers(0, 10_000, 5000)
    ps.IntervalSynopsis.build(v, domain=(0, 9999), epsilon=1, workload="short",
                              rng=ps.Rng(seed=1)).save(tmp_path / "i.pds")
    pts = np.random.default_rng(1).integers(0, 1000, (3000, 2))
    ps.RectangleSynopsis.build(pts, domain=[(0, 999)] * 2, epsilon=1, workload="short",
                               structure="adaptive", rng=ps.Rng(seed=1)).save(tmp_path / "a.pds")
    ps.IntervalSynopsis.build(v, domain=(0, 9999), epsilon=1,
                              rng=ps.Rng(seed=1)).save(tmp_path / "n.pds")
    shown = {}
    for name in ("i", "a", "n"):
        assert cli.main(["info", str(tmp_path / f"{name}.pds")]) == 0
        shown[name] = [l for l in capsys.readouterr().out.splitlines() if l.startswith("workload:")]
    (line,) = shown["i"]
    assert "short (4,181 queries): fanout" in line and "(default tree" in line
    (line,) = shown["a"]
    assert "short (4,181 boxes): coarse_share" in line and "(default 2/5)" in line
    assert shown["n"] == []

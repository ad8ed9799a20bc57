"""Python-level mutants of the quadtree (``structure="quadtree"``) and their detectors.

Why Python: the C mutants (:mod:`privacy.mutants`, ``csrc/mutation.c``) scale the
discrete Laplace sampler as a whole, so they reach the quadtree's noise (its
registration declares all three), but its split test -- ``lambda``, ``delta``,
``theta`` and which draw is a leaf's -- is Python
(:mod:`pydp_synopsis.rectangles.quadtree`).  These mutants replace, for the
duration of a ``with`` block in the *test* process, a name that module looks up at
call time (:data:`MUTANTS`); the package has no switch, and every name is restored on
exit (``tests/privacy/test_quadtree_mutants.py`` checks that a seeded release is the
same before and after):

``leaf_noise_off``
    the leaves' draw returns zeros (a draw is a leaf's when it is made outside
    ``grow``, which makes every split draw);
``leaf_scale_half``
    the leaves' noise at scale ``1 / (2 epsilon_leaf)``;
``split_delta_zero``
    ``privtree_parameters`` returns ``delta = 0`` (no depth decay; then ``theta = 0``
    too): every node on the added point's path loses ``1 / lambda``;
``split_lambda_small``
    ``lambda = 1 / epsilon_split`` (Corollary 1's ``7/3`` forgotten), ``delta =
    lambda ln 4``.

Detectors, on the pair each mutant needs (:data:`DETECTOR_PAIR`): the two-phase audit
(:func:`privacy.audit_pair`: *detected* when the lower bound of the privacy loss
exceeds the epsilon the synopsis reports) and, for the split mutants, a chi-square
test at alpha = 1e-6 of the probe leaf's depth against its exact law
(:func:`probe_depth_law`, given that the partitions are the full 32 x 32 grid of single
values, as they are in nearly all of the split pair's releases; the others are
dropped).  Both detectors catch every mutant (the audit on the split pair needs
8,000 releases a side, about 100 s a mutant, so the slow tier runs the exact law
there; ``python -m privacy.quadtree_mutants`` from ``tests/`` runs every detector
and prints the lower bounds).
"""
import argparse
import contextlib
import json
import math
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import stats

import pydp_synopsis as ps
from pydp_synopsis.partitions.privtree import privtree_parameters
from pydp_synopsis.rectangles import quadtree as qt

from privtree_law import split_prob

from .audit import ALPHA, Tier, audit_pair
from .quadtree import SPLIT_PAIR
from .registry import MECHANISMS

__all__ = ["MUTANTS", "DETECTOR_PAIR", "TIERS", "LAW_RUNS", "mutant", "probe_depth_law",
           "probe_depth", "law_pvalue", "detect", "NAME", "TIGHT_PAIR", "main"]

NAME = "rectangle/quadtree"
TIGHT_PAIR = "tight: one noisy leaf"
#: Releases for the exact-law detector.
LAW_RUNS = 3000


def _leaf_draws(transform):
    """Replace the leaves' ``discrete_laplace`` calls by ``transform(scale, size, rng)``;
    the split draws (every call inside ``grow``) are left alone."""
    real_grow, real_draw = qt.grow, qt.discrete_laplace
    inside = []

    def grow(*args, **kwargs):
        inside.append(True)
        try:
            return real_grow(*args, **kwargs)
        finally:
            inside.pop()

    def draw(scale, size=None, *, rng=None):
        if inside:
            return real_draw(scale, size=size, rng=rng)
        return transform(real_draw, scale, size, rng)

    return {"grow": grow, "discrete_laplace": draw}


def _parameters(fn):
    real = qt.privtree_parameters

    def privtree_parameters(epsilon, fanout=2):
        return fn(real, epsilon, fanout)

    return {"privtree_parameters": privtree_parameters}


#: name -> the names of :mod:`pydp_synopsis.rectangles.quadtree` it replaces (a function
#: returning ``{name: replacement}``).
MUTANTS = {
    "leaf_noise_off": lambda: _leaf_draws(
        lambda draw, scale, size, rng: np.zeros(size, dtype=np.int64)),
    "leaf_scale_half": lambda: _leaf_draws(
        lambda draw, scale, size, rng: draw(Fraction(scale) / 2, size=size, rng=rng)),
    "split_delta_zero": lambda: _parameters(
        lambda real, eps, fanout: (real(eps, fanout)[0], 0)),
    "split_lambda_small": lambda: _parameters(
        lambda real, eps, fanout: (1 / Fraction(eps),
                                   math.ceil(math.log(fanout) / float(eps) * (1 + 1e-12)))),
}
#: The pair each mutant is detected on.
DETECTOR_PAIR = {"leaf_noise_off": TIGHT_PAIR, "leaf_scale_half": TIGHT_PAIR,
                 "split_delta_zero": SPLIT_PAIR, "split_lambda_small": SPLIT_PAIR}
#: The audit's sample sizes per side (selection, test) on each pair: the tight pair's loss
#: under the leaf mutants is 2 epsilon or more; the split pair needs more releases (its
#: best event has probability 0.003 on one side).
TIERS = {TIGHT_PAIR: (200, 1200), SPLIT_PAIR: (3000, 8000)}


@contextlib.contextmanager
def mutant(name):
    """Within the block, the quadtree module runs mutant ``name`` (None: unchanged)."""
    replace = MUTANTS[name]() if name is not None else {}
    saved = {k: getattr(qt, k) for k in replace}
    try:
        for k, v in replace.items():
            setattr(qt, k, v)
        yield
    finally:
        for k, v in saved.items():
            setattr(qt, k, v)


def probe_depth(syn, params):
    """The outcome of a split-pair release: the depth of the probe's leaf, or -1 when the
    partitions are not the full grid of single values (the law's premise)."""
    size = params["domain"][0][1] - params["domain"][0][0] + 1
    if any(len(p) != size for p in syn.partitions):
        return -1
    return int(MECHANISMS[NAME].features(syn, params)[4])


def probe_depth_law(data, params):
    """The exact law of :func:`probe_depth` on the split pair's input ``data`` (honest
    build): ``(outcomes, probabilities)`` with outcome -1 (not the full grid) of
    probability 0: the law given the full grid.

    On the grid of S x S single-value segments (S = 2^k) the probe ``(0, S - 1)``'s root
    path is the root (all points) and the blocks ``[0, S/2^d - 1] x [S - S/2^d, S - 1]``
    of depths d = 1 .. k - 1, holding the points of ``data`` there (none, or the probe);
    each splits independently with PrivTree's probability (``privtree_law.split_prob``)
    and the depth-k node is one cell, a leaf without a draw.
    """
    lo, hi = params["domain"][0]
    size = hi - lo + 1
    levels = size.bit_length() - 1
    pts = np.asarray(data, dtype=np.int64).reshape(-1, 2)
    pts = pts - np.array([d[0] for d in params["domain"]])
    # epsilon_split as a release records it (public: the saved meta holds it)
    eps_split = MECHANISMS[NAME].run(data, ps.Rng(seed=0), **params)._mechanism.epsilon_split
    lam, delta = privtree_parameters(eps_split, 4)      # the package's, never a mutant's
    theta = -params["split_levels"] * delta
    outcomes, probs, reach = [], [], 1.0
    for d in range(levels + 1):
        width = size >> d
        inside = (pts[:, 0] < width) & (pts[:, 1] >= size - width)
        count = int(inside.sum())
        if d == levels:                       # one cell: a leaf without a draw
            outcomes.append(d)
            probs.append(reach)
            break
        p_split, p_stop = split_prob(count, d, float(lam), delta, theta)
        outcomes.append(d)
        probs.append(reach * p_stop)
        reach *= p_split
    return [-1] + outcomes, [0.0] + probs


def law_pvalue(mech, data, params, runs, rng):
    """Chi-square p-value of the probe depths of ``runs`` releases on ``data`` against
    :func:`probe_depth_law`, given the full grid (a release whose partitions are not the
    grid of single values is dropped: the split draws are independent of the partitions'
    given them, so the law holds conditionally)."""
    outcomes, probs = probe_depth_law(data, params)
    seen = np.array([probe_depth(mech.run(data, rng, **params), params) for _ in range(runs)])
    seen = seen[seen >= 0]
    counts = np.array([(seen == o).sum() for o in outcomes[1:]], dtype=float)
    expected = np.asarray(probs[1:]) * seen.size
    if np.any(counts[expected == 0] > 0):
        return 0.0
    keep = expected > 0
    counts, expected = counts[keep], expected[keep]
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    ok = exp > 0
    chi2 = float(np.sum((obs[ok] - exp[ok]) ** 2 / exp[ok]))
    return float(stats.chi2.sf(chi2, ok.sum() - 1))


def detect(name, pair_name=None, seed=0, audit=True, law_runs=LAW_RUNS):
    """Run the detectors of mutant ``name`` (None: the honest build) on its pair.

    ``audit=False`` skips the audit (the split pair's costs about 100 s; its exact law
    ``law_runs`` releases, a few seconds).  Returns a dict: ``epsilon``, the audit's
    ``lower_bound`` (None when skipped), ``law_pvalue`` (split pair only), ``detected``
    and ``by`` (``"audit"``, ``"exact law"`` or None), ``n_test``, ``seconds`` and the
    audit's ``events``.
    """
    mech = MECHANISMS[NAME]
    pair = mech.pair(pair_name or DETECTOR_PAIR[name])
    params = {**mech.params, **pair.params}
    n_select, n_test = TIERS[pair.name]
    t0 = time.perf_counter()
    r = pvalue = None
    with mutant(name):
        if audit:
            r = audit_pair(mech, pair, Tier(f"quadtree-mutant:{name}", n_select, n_test),
                           seed=f"quadtree-mutant|{name}|{seed}")
        if pair.name == SPLIT_PAIR:
            pvalue = law_pvalue(mech, pair.x_prime, params, law_runs,
                                ps.Rng(seed=f"quadtree-law|{name}|{seed}".encode()))
    eps = Fraction(params["epsilon"])
    by = ("audit" if r is not None and r.violated else
          "exact law" if pvalue is not None and pvalue < ALPHA else None)
    return {"mutant": name, "pair": pair.name, "epsilon": float(eps),
            "lower_bound": None if r is None else r.lower_bound, "law_pvalue": pvalue,
            "detected": by is not None, "by": by, "n_test": None if r is None else r.n_test,
            "seconds": time.perf_counter() - t0, "events": [] if r is None else r.events}


def main(argv=None):
    """Every detector on every mutant and on the honest build; prints a table."""
    parser = argparse.ArgumentParser(description="The quadtree's Python-level mutants: "
                                     "audit lower bounds and exact-law p-values.")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--seed", default="0")
    args = parser.parse_args(argv)
    runs = [(None, TIGHT_PAIR), (None, SPLIT_PAIR)] + [(m, None) for m in MUTANTS]
    results = []
    print(f"{'mutant':<20} {'pair':<58} {'eps':>4} {'lower bound':>11} {'law p':>9} "
          f"{'caught by':>10} {'s':>5}")
    for name, pair in runs:
        r = detect(name, pair, seed=args.seed)
        results.append(r)
        p = "" if r["law_pvalue"] is None else f"{r['law_pvalue']:.2g}"
        print(f"{name or 'honest':<20} {r['pair'][:58]:<58} {r['epsilon']:>4g} "
              f"{r['lower_bound']:>11.3f} {p:>9} {r['by'] or '-':>10} {r['seconds']:>5.0f}",
              flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

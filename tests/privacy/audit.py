"""Two-phase privacy audits: choose events on one sample, bound them on a fresh one.

For a mechanism M and neighbours (x, x'), pure epsilon-DP means
``P[M(x) in S] <= e^eps P[M(x') in S]`` and back, for every event S.

1. **Selection** (``n_select`` releases per side).  The release's features
   are cut into keys -- each coordinate alone, pairs of coordinates, and all
   coordinates together when there are few -- by bins taken from the pooled
   sample (exact values when there are few of them).  Candidate events, in
   both directions, built on one half of the sample: the orthants of each
   view of at most three coordinates (``{f_i >= s_i, f_j <= s_j, ...}``,
   the natural events of noise added to counts) and the prefixes of the
   keys ranked by their smoothed likelihood ratio (the Neyman-Pearson
   shape).  The ``events`` candidates whose Clopper-Pearson lower bound,
   predicted at the test sample size from their hit rates on the *other*
   half, is largest are kept.
2. **Test** (``n_test`` fresh releases per side).  For each kept event S the
   privacy loss is bounded below by ``ln(CP_lower(P_a[S]) / CP_upper(P_b[S]))``,
   each one-sided bound at level ``ALPHA / (2 * events)`` (Bonferroni over
   the events), so for a correct mechanism the largest lower bound exceeds
   epsilon with probability at most ``ALPHA``.

The selection only ever sees the first sample, so the test's level holds
whatever the selection did; it only decides the power.

References
----------
.. [DWWVK18] Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer, "Detecting
   Violations of Differential Privacy", CCS 2018 (events from one sample,
   hypothesis test on another).
.. [CP34] C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial
   limits illustrated in the case of the binomial", Biometrika 1934.
"""
import dataclasses
import hashlib
import os
import time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing

import numpy as np
from scipy import special

import pydp_synopsis as ps

from .registry import MECHANISMS, draw

__all__ = ["ALPHA", "TIGHT_FRACTION", "Tier", "TIERS", "AuditResult", "audit_pair", "sample_pair",
           "select_events", "test_events", "loss_lower_bound"]

ALPHA = 1e-6
#: A tight pair must show at least this fraction of epsilon.
TIGHT_FRACTION = 0.8


@dataclasses.dataclass(frozen=True)
class Tier:
    """Sample sizes per side: ``n_select`` for phase 1, ``n_test`` for phase 2.

    ``pair_samples``: apply the pairs' ``samples`` factors (the CI tier gives
    pairs that only need to show no violation fewer releases; the long
    tiers give every pair the full size).
    """

    name: str
    n_select: int
    n_test: int
    events: int = 4
    pair_samples: bool = True


TIERS = {
    "ci": Tier("ci", 600, 4000),
    "medium": Tier("medium", 5_000, 50_000, pair_samples=False),
    "long": Tier("long", 100_000, 1_000_000, pair_samples=False),
}


@dataclasses.dataclass
class AuditResult:
    """The outcome of one audit: the largest lower bound over the tested events."""

    mechanism: str
    pair: str
    tier: str
    epsilon: object
    lower_bound: float
    n_select: int
    n_test: int
    seconds: float
    events: list

    @property
    def ratio(self):
        """``lower_bound / epsilon``."""
        return self.lower_bound / float(self.epsilon)

    @property
    def violated(self):
        """True when the lower bound exceeds epsilon (a privacy violation at level ALPHA)."""
        return self.lower_bound > float(self.epsilon)

    def to_json(self):
        d = dataclasses.asdict(self)
        d["epsilon"] = [self.epsilon.numerator, self.epsilon.denominator]
        d["epsilon_float"] = float(self.epsilon)
        d["ratio"] = self.ratio
        return d


# ------------------------------------------------------------------ sampling
def _seed(*parts):
    return hashlib.sha256("|".join(map(str, parts)).encode()).digest()


def _draw_job(job):
    name, data, n, seed, params = job
    return draw(MECHANISMS[name], data, n, ps.Rng(seed=seed), params)


def sample_pair(mechanism, pair, n, tag, seed=0, workers=None):
    """``n`` releases on each side: ``(X, X_prime, epsilon)`` (feature matrices).

    Seeded from (mechanism, pair, tag, seed): reproducible.  ``workers``
    processes (default ``$PDS_AUDIT_WORKERS`` or 1) split the work; they
    look the mechanism up in the registry, so it must be registered at
    import time.
    """
    workers = int(os.environ.get("PDS_AUDIT_WORKERS", "1")) if workers is None else workers
    params = {**mechanism.params, **pair.params}
    out, eps = [], set()
    for side, data in (("x", pair.x), ("x'", pair.x_prime)):
        if workers <= 1 or n < 200 * workers or mechanism.sample is not None:
            feats, e = draw(mechanism, data, n, ps.Rng(seed=_seed(mechanism.name, pair.name, tag,
                                                                  side, seed)), params)
        else:
            sizes = [n // workers + (i < n % workers) for i in range(workers)]
            jobs = [(mechanism.name, data, size,
                     _seed(mechanism.name, pair.name, tag, side, seed, i), params)
                    for i, size in enumerate(sizes)]
            ctx = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                parts = list(pool.map(_draw_job, jobs))
            feats = np.vstack([p[0] for p in parts])
            e = parts[0][1]
            if any(p[1] != e for p in parts):
                raise AssertionError("epsilon differs between workers")
        out.append(feats)
        eps.add(e)
    if len(eps) != 1:
        raise AssertionError(f"{mechanism.name}: x and x' report different epsilons {eps}")
    if out[0].shape[1] != out[1].shape[1]:
        raise AssertionError(f"{mechanism.name}: x and x' give features of different lengths")
    return out[0], out[1], eps.pop()


# ------------------------------------------------------------------- bounds
def _cp_lower(k, n, gamma):
    """One-sided Clopper-Pearson lower bound: the gamma quantile of Beta(k, n - k + 1)."""
    k = np.asarray(k, dtype=float)
    with np.errstate(all="ignore"):
        lo = special.betaincinv(np.maximum(k, 1e-300), np.maximum(n - k + 1, 1e-300), gamma)
    return np.where(k <= 0, 0.0, lo)


def _cp_upper(k, n, gamma):
    """One-sided Clopper-Pearson upper bound: the 1 - gamma quantile of Beta(k + 1, n - k)."""
    k = np.asarray(k, dtype=float)
    with np.errstate(all="ignore"):
        hi = special.betaincinv(k + 1, np.maximum(n - k, 1e-300), 1 - gamma)
    return np.where(k >= n, 1.0, hi)


def loss_lower_bound(k_a, n_a, k_b, n_b, gamma):
    """``ln(CP_lower(k_a/n_a) / CP_upper(k_b/n_b))``, each bound one-sided at level ``gamma``.

    A lower confidence bound (level ``2 gamma``) on ``ln(P_a[S] / P_b[S])``;
    ``-inf`` when ``k_a = 0``.  Vectorised; fractional counts are allowed
    (predictions).
    """
    lo = _cp_lower(k_a, n_a, gamma)
    hi = _cp_upper(k_b, n_b, gamma)
    with np.errstate(divide="ignore"):
        return np.log(lo) - np.log(hi)


# ------------------------------------------------------------ event choice
@dataclasses.dataclass
class Event:
    """``S = {release : key(view) in keys}``; ``direction`` +1: more likely under x'."""

    view: tuple
    edges: list
    keys: np.ndarray
    direction: int
    predicted: float

    def hits(self, X):
        return np.isin(_keys(X, self.view, self.edges), self.keys)

    def describe(self):
        return {"view": list(self.view), "keys": int(self.keys.size),
                "direction": "x'>x" if self.direction > 0 else "x>x'",
                "predicted": round(float(self.predicted), 4)}


def _edges(col, levels):
    u = np.unique(col)
    if u.size <= levels:
        return (u[1:] + u[:-1]) / 2
    return np.unique(np.quantile(col, np.linspace(0, 1, levels + 1)[1:-1]))


def _keys(X, view, edges):
    key = np.zeros(X.shape[0], dtype=np.int64)
    for j, e in zip(view, edges):
        key = key * (len(e) + 1) + np.searchsorted(e, X[:, j], side="right")
    return key


def _views(d):
    views = [((j,), 48) for j in range(d)]
    if 3 <= d <= 8:
        views += [((i, j), 12) for i in range(d) for j in range(i + 1, d)]
    if 2 <= d <= 12:
        views.append((tuple(range(d)), max(2, int(4096 ** (1.0 / d)))))
    return views


def _orthants(view, edges, c0, c1, n0, n1, n_test, gamma):
    """Candidate events ``{bin_j >= s_j or <= s_j for every j in view}`` (corners of
    the binned view): the natural events of noise added to counts."""
    shape = tuple(len(e) + 1 for e in edges)
    t0, t1 = c0.reshape(shape), c1.reshape(shape)
    cells = np.arange(t0.size).reshape(shape)
    out = []
    for orient in np.ndindex(*(2,) * len(shape)):
        a0, a1 = t0, t1
        for ax, o in enumerate(orient):   # o = 0: ">= corner", 1: "<= corner"
            flip = (lambda t, ax=ax: np.flip(t, ax)) if o == 0 else (lambda t: t)
            a0 = flip(np.cumsum(flip(a0), axis=ax))
            a1 = flip(np.cumsum(flip(a1), axis=ax))
        for direction in (1, -1):
            ka, kb = (a1, a0) if direction > 0 else (a0, a1)
            na, nb = (n1, n0) if direction > 0 else (n0, n1)
            pred = loss_lower_bound(ka * n_test / na, n_test, kb * n_test / nb, n_test, gamma)
            for flat in np.argsort(-pred.ravel())[:6]:
                corner = np.unravel_index(flat, shape)
                sl = tuple(slice(c, None) if o == 0 else slice(0, c + 1)
                           for c, o in zip(corner, orient))
                out.append(Event(view, edges, np.sort(cells[sl].ravel()), direction,
                                 float(pred.ravel()[flat])))
    return out


def select_events(X, Xp, n_test, k_events):
    """Phase 1: the ``k_events`` events with the best predicted lower bound at ``n_test``.

    Candidates are built on the first half of the selection sample and
    ranked by the lower bound predicted from their hit rates on the second
    half (an honest estimate: ranking on the sample that built them favours
    events fitted to its noise).
    """
    h0, h1 = X.shape[0] // 2, Xp.shape[0] // 2
    cands = _candidates(X[:h0], Xp[:h1], n_test, k_events)
    B0, B1 = X[h0:], Xp[h1:]
    gamma = ALPHA / (2 * k_events)
    keys = {}                          # the held-out keys of each view, computed once
    ka, kb, na, nb = (np.empty(len(cands)) for _ in range(4))
    for i, e in enumerate(cands):
        sig = (e.view, tuple(len(x) for x in e.edges), id(e.edges))
        if sig not in keys:
            keys[sig] = (_keys(B0, e.view, e.edges), _keys(B1, e.view, e.edges))
        k0, k1 = keys[sig]
        c0, c1 = float(np.isin(k0, e.keys).sum()), float(np.isin(k1, e.keys).sum())
        ka[i], kb[i] = (c1, c0) if e.direction > 0 else (c0, c1)
        na[i], nb[i] = (B1.shape[0], B0.shape[0]) if e.direction > 0 else (B0.shape[0], B1.shape[0])
    # shrink the held-out rates toward the unfavourable side (80% bounds): the best
    # of many candidates is otherwise the luckiest, not the best
    pa, pb = _cp_lower(ka, na, 0.1), _cp_upper(kb, nb, 0.1)
    predicted = loss_lower_bound(pa * n_test, n_test, pb * n_test, n_test, gamma)
    for e, p in zip(cands, predicted):
        e.predicted = float(p)
    cands.sort(key=lambda e: -e.predicted)
    chosen, seen = [], set()
    for e in cands:
        sig = (e.view, e.direction, e.keys.tobytes())
        if sig not in seen:
            seen.add(sig)
            chosen.append(e)
        if len(chosen) == k_events:
            break
    return chosen


def _candidates(X, Xp, n_test, k_events):
    """Candidate events from one sample: orthants and likelihood-ratio prefixes per view."""
    n0, n1 = X.shape[0], Xp.shape[0]
    pooled = np.vstack([X, Xp])
    gamma = ALPHA / (2 * k_events)
    cands = []
    for view, levels in _views(X.shape[1]):
        edges = [_edges(pooled[:, j], levels) for j in view]
        size = int(np.prod([len(e) + 1 for e in edges]))
        k0, k1 = _keys(X, view, edges), _keys(Xp, view, edges)
        if len(view) <= 3 and size <= 1 << 16:
            c0 = np.bincount(k0, minlength=size).astype(float)
            c1 = np.bincount(k1, minlength=size).astype(float)
            cands += _orthants(view, edges, c0, c1, n0, n1, n_test, gamma)
        keys, inv = np.unique(np.concatenate([k0, k1]), return_inverse=True)
        c0 = np.bincount(inv[:n0], minlength=keys.size).astype(float)
        c1 = np.bincount(inv[n0:], minlength=keys.size).astype(float)
        lr = np.log((c1 + 0.5) / n1) - np.log((c0 + 0.5) / n0)
        for direction in (1, -1):
            order = np.argsort(-direction * lr, kind="stable")
            ca, cb = (c1, c0) if direction > 0 else (c0, c1)
            na, nb = (n1, n0) if direction > 0 else (n0, n1)
            ka, kb = np.cumsum(ca[order]), np.cumsum(cb[order])
            pred = loss_lower_bound(ka * n_test / na, n_test, kb * n_test / nb, n_test, gamma)
            for j in np.argsort(-pred)[:4]:
                cands.append(Event(view, edges, np.sort(keys[order[:j + 1]]), direction,
                                   float(pred[j])))
    return cands


def test_events(events, X, Xp):
    """Phase 2: ``(largest lower bound, per-event details)`` on fresh samples."""
    n0, n1 = X.shape[0], Xp.shape[0]
    gamma = ALPHA / (2 * len(events))
    best, details = 0.0, []
    for e in events:
        h0, h1 = int(e.hits(X).sum()), int(e.hits(Xp).sum())
        if e.direction > 0:
            lb = float(loss_lower_bound(h1, n1, h0, n0, gamma))
        else:
            lb = float(loss_lower_bound(h0, n0, h1, n1, gamma))
        if not lb > 0:          # -inf (no hits) or no evidence
            lb = 0.0
        details.append({**e.describe(), "hits_x": h0, "hits_x_prime": h1,
                        "lower_bound": round(lb, 6)})
        best = max(best, lb)
    return best, details


def audit_pair(mechanism, pair, tier="ci", seed=0, workers=None):
    """Run the two-phase audit of one pair; returns an :class:`AuditResult`.

    ``tier`` is a key of :data:`TIERS` or a :class:`Tier`; the sample sizes
    are multiplied by the mechanism's and the pair's ``samples`` factors.
    """
    tier = TIERS[tier] if isinstance(tier, str) else tier
    factor = mechanism.samples * (pair.samples if tier.pair_samples else 1.0)
    n_sel, n_test = int(tier.n_select * factor), int(tier.n_test * factor)
    t0 = time.perf_counter()
    X, Xp, eps = sample_pair(mechanism, pair, n_sel, "select", seed, workers)
    events = select_events(X, Xp, n_test, tier.events)
    T, Tp, eps2 = sample_pair(mechanism, pair, n_test, "test", seed, workers)
    if eps2 != eps:
        raise AssertionError("epsilon changed between the phases")
    lb, details = test_events(events, T, Tp)
    return AuditResult(mechanism.name, pair.name, tier.name, eps, lb, n_sel, n_test,
                       time.perf_counter() - t0, details)

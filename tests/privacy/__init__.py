"""The privacy harness: adapters, neighbour pairs, exact oracles, audits, mutants.

Layout
------
``registry.py``
    :class:`Mechanism` (an adapter: run, features, epsilon read from the
    release), :class:`Pair` (two neighbouring inputs, tags ``ci`` /
    ``tight``), :func:`register`.
``mechanisms.py``
    The package's mechanisms and their pair catalogues (registered on import).
``audit.py``
    The two-phase test: events chosen on one sample, Clopper-Pearson lower
    bounds of the privacy loss on fresh samples (alpha = 1e-6, Bonferroni).
``oracles.py``
    Exact laws: Fig. 1's segment ends, the discrete Laplace, the tree
    counters' noise terms and covariance.
``leaks.py``
    Everything besides the released numbers (exception texts, ledger,
    repr, saved header and meta) must not depend on the data.
``mutants.py``
    The test-only mutant build of the C core and the detectors run on it.
``quadtree.py``, ``quadtree_mutants.py``
    The rectangles' quadtree (``structure="quadtree"``): its adapter and pairs, and
    its Python-level mutants (the split test's ``lambda``/``delta``, the leaves'
    noise), switched on in the test process only, with their detectors.

Registering a mechanism
-----------------------
One adapter and its neighbour pairs; every audit, the tight-pair check, the
mutant detectors and ``benchmarks/audit_privacy.py`` pick it up::

    from privacy import Mechanism, Pair, register

    register(Mechanism(
        name="counter/gaussian-sqrt",
        run=lambda xs, rng, **p: ps.SqrtFactorizationCounter(
            horizon=len(xs), rng=rng, **p).update_many(xs),     # one real release
        features=lambda releases, params: releases,            # what the audit reads
        epsilon=lambda releases: ...,                          # read from the release
        params={"epsilon": 2, "delta": 1e-6},
        pairs=(Pair("one item first", [0, 0, 0], [1, 0, 0], {"ci", "tight"}),),
        mutants=("epsilon_1_5", "half_node_scale"),            # which C mutants reach it
    ))

A pair tagged ``tight`` must reach a lower bound of 0.8 epsilon in CI, so
pick one whose exact loss is close to epsilon; ``mutants`` names the C-level
mutants that change the mechanism's noise (CI fails if one survives).  An
approximate-DP mechanism needs events whose delta is accounted for: the
audit bounds ``ln(P[S]/P'[S])``, which delta can exceed on rare events.
"""
from .audit import ALPHA, TIERS, TIGHT_FRACTION, AuditResult, Tier, audit_pair
from .registry import MECHANISMS, MUTANTS, Mechanism, Pair, get, register
from . import mechanisms  # noqa: F401  (registers the package's mechanisms)
from . import sums  # noqa: F401  (registers the range sums)
from . import quantiles  # noqa: F401  (registers private_quantiles)
from . import quadtree  # noqa: F401  (registers the rectangles' quadtree)

__all__ = ["ALPHA", "TIERS", "TIGHT_FRACTION", "AuditResult", "Tier", "audit_pair",
           "MECHANISMS", "MUTANTS", "Mechanism", "Pair", "get", "register"]

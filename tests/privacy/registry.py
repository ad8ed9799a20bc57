"""The registry: one adapter per mechanism, with its catalogue of neighbour pairs.

A mechanism joins the harness by one :func:`register` call (see the package
docstring for an example).  Everything else -- the two-phase audit, the tight
pair check, the mutants, the long-tier script -- reads the registry.
"""
import dataclasses
from fractions import Fraction
from typing import Callable, Optional

import numpy as np

__all__ = ["MUTANTS", "Pair", "Mechanism", "register", "MECHANISMS", "get", "draw",
           "law_pvalue"]

#: The test-only mutants of the C core (``pds_mutant`` in csrc/pydp_synopsis.h):
#: name -> the value passed to ``pds_test_mutation``.
MUTANTS = {"epsilon_1_5": 1, "half_node_scale": 2, "sensitivity_off_by_one": 3}


@dataclasses.dataclass(frozen=True)
class Pair:
    """Two neighbouring inputs of one mechanism.

    Attributes
    ----------
    name : str
        What makes the pair adversarial (shown in reports).
    x, x_prime : object
        The inputs, in the form the mechanism's ``run`` takes.
    tags : frozenset of str
        ``"ci"``: audited by the CI tier (every pair is audited by the long
        tier); ``"tight"``: a known tight pair -- the audit must show a privacy
        loss of at least ``TIGHT_FRACTION * epsilon``, so the test cannot go
        blind; ``"mutants"``: the pair the mutant detectors use (default: the
        first tight pair); ``"leaks"``: the pair the leak check uses (default:
        the mutant pair).
    params : dict
        Keyword arguments for ``run`` overriding the mechanism's ``params``.
    samples : float
        Multiplier of the tier's sample sizes for this pair (a pair that only
        has to show no violation needs less power than a tight one).
    """

    name: str
    x: object
    x_prime: object
    tags: frozenset = frozenset()
    params: dict = dataclasses.field(default_factory=dict)
    samples: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "tags", frozenset(self.tags))


@dataclasses.dataclass(frozen=True)
class Mechanism:
    """How the harness runs one mechanism and reads its release.

    Attributes
    ----------
    name : str
        Unique, ``family/variant`` (e.g. ``"interval/kary"``).
    run : callable
        ``run(data, rng, **params) -> release``: one real release (the public
        API, never a mock) with the given ``pydp_synopsis.Rng``.
    features : callable
        ``features(release, params) -> 1-D array``: the released numbers the
        audit looks at (same length for every release of one pair);
        ``params`` are the run's keyword arguments.
    epsilon : callable
        ``epsilon(release) -> Fraction``: read from the released object itself.
    pairs : tuple of Pair
        The catalogue.
    mutants : tuple of str
        Keys of :data:`MUTANTS` this mechanism must expose (CI fails if one
        survives).
    params : dict
        Default keyword arguments of ``run``.
    sample : callable, optional
        ``sample(data, n, rng, **params) -> (features (n, d), epsilon)``: a
        vectorised ``run`` + ``features`` for cheap mechanisms.
    samples : float
        Multiplier of every tier's sample sizes (cheap mechanisms take more).
    released : callable, optional
        ``released(release) -> dict of arrays``: *everything* the release
        publishes (the leak checks require all else to be equal when two
        releases publish the same arrays).
    probes : tuple of callable
        ``probe(release)`` raises; its exception text must not depend on the
        data beyond the release (leak checks).
    record : callable, optional
        ``record(release) -> object`` that :func:`pydp_synopsis.save` writes
        (leak checks compare the saved header and meta), or None.
    charges : bool
        ``run`` accepts ``budget=``: the ledger is compared too.
    exact_law : callable, optional
        ``exact_law(data, params) -> (outcomes, probabilities)``: the exact
        law of the release (an oracle whose privacy loss is computed
        exactly); with ``outcome(release) -> int`` the implementation is
        tested against it (chi-square), which also detects mutants that
        change the law without raising the loss of any event the sampled
        audit can resolve.
    outcome : callable, optional
        See ``exact_law``.
    mutant_samples : dict
        Mutant name -> multiplier of its detector's sample sizes, overriding
        ``privacy.mutants.STRENGTH`` (e.g. the sensitivity mutant loses only
        1.5 epsilon where S = 2 nodes hold an item).
    """

    name: str
    run: Callable
    features: Callable
    epsilon: Callable
    pairs: tuple
    mutants: tuple = tuple(MUTANTS)
    params: dict = dataclasses.field(default_factory=dict)
    sample: Optional[Callable] = None
    samples: float = 1.0
    released: Optional[Callable] = None
    probes: tuple = ()
    record: Optional[Callable] = None
    charges: bool = False
    exact_law: Optional[Callable] = None
    outcome: Optional[Callable] = None
    mutant_samples: dict = dataclasses.field(default_factory=dict)

    def pair(self, name):
        """The pair called ``name``."""
        for p in self.pairs:
            if p.name == name:
                return p
        raise KeyError(f"{self.name} has no pair {name!r}")

    def tagged(self, tag):
        """The pairs carrying ``tag``."""
        return [p for p in self.pairs if tag in p.tags]

    def mutant_pair(self):
        """The pair the mutant detectors use."""
        marked = self.tagged("mutants") or self.tagged("tight")
        if not marked:
            raise AssertionError(f"{self.name} registers no tight pair")
        return marked[0]

    def leak_pair(self):
        """The pair the leak check looks for colliding releases on: the first pair tagged
        ``"leaks"`` (one whose releases collide often), else :meth:`mutant_pair`."""
        marked = self.tagged("leaks")
        return marked[0] if marked else self.mutant_pair()


#: name -> Mechanism, in registration order.
MECHANISMS = {}


def register(mechanism):
    """Add ``mechanism`` to the registry (returns it).  Names are unique."""
    if mechanism.name in MECHANISMS:
        raise ValueError(f"mechanism {mechanism.name!r} is already registered")
    unknown = set(mechanism.mutants) - set(MUTANTS)
    if unknown:
        raise ValueError(f"unknown mutants {sorted(unknown)}")
    names = [p.name for p in mechanism.pairs]
    if len(set(names)) != len(names):
        raise ValueError(f"{mechanism.name}: pair names must be unique")
    MECHANISMS[mechanism.name] = mechanism
    return mechanism


def get(name):
    """The registered mechanism ``name``."""
    return MECHANISMS[name]


def draw(mechanism, data, n, rng, params):
    """``n`` releases of ``mechanism`` on ``data``: ``(features (n, d), epsilon)``.

    The epsilon is read from every release and must be the same for all.
    """
    if mechanism.sample is not None:
        feats, eps = mechanism.sample(data, n, rng, **params)
        return np.asarray(feats, dtype=np.float64).reshape(n, -1), Fraction(eps)
    rows, eps = [], None
    for _ in range(n):
        release = mechanism.run(data, rng, **params)
        e = Fraction(mechanism.epsilon(release))
        if eps is None:
            eps = e
        elif e != eps:
            raise AssertionError(f"{mechanism.name}: epsilon differs between releases")
        rows.append(np.asarray(mechanism.features(release, params), dtype=np.float64).ravel())
    if len({r.size for r in rows}) > 1:
        raise AssertionError(f"{mechanism.name}: features of different lengths")
    return np.vstack(rows), eps


def law_pvalue(mechanism, data, n, rng, params):
    """Chi-square p-value of ``n`` releases on ``data`` against the mechanism's exact law."""
    from scipy import stats

    outcomes, probs = mechanism.exact_law(data, params)
    index = {int(o): i for i, o in enumerate(outcomes)}
    counts = np.zeros(len(outcomes))
    for _ in range(n):
        counts[index[int(mechanism.outcome(mechanism.run(data, rng, **params)))]] += 1
    # pool the outcomes expected fewer than 5 times into one bin
    expected = np.asarray(probs) * n
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    chi2 = float(np.sum((obs[keep] - exp[keep]) ** 2 / exp[keep]))
    if np.any(obs[~keep] > 0):
        return 0.0
    return float(stats.chi2.sf(chi2, keep.sum() - 1))

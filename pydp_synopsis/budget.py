"""A privacy budget under sequential composition.

Releasing mechanisms that are ε₁-, ε₂-, … -DP on the same data is
(ε₁ + ε₂ + …)-DP (basic sequential composition, Dwork & Roth 2014,
Theorem 3.14).  :class:`Budget` keeps that sum in exact rational arithmetic
and refuses a release that would take it past the total.  The builders
(`IntervalSynopsis.build`, `RectangleSynopsis.build`, the counters) accept
``budget=`` and charge it *after* validating their arguments and *before*
drawing any noise, so a refused or invalid request spends nothing.

The ledger and :class:`~pydp_synopsis.errors.BudgetError` messages are shown
to whoever holds the budget, so the package's own charge descriptions carry
public facts only -- the mechanism, epsilon, the domain or horizon -- never
the data or a number derived from it such as the number of items
(:func:`describe`).  Descriptions given to :meth:`Budget.charge` by users are
stored as given.
"""
import threading
from fractions import Fraction

from .errors import BudgetError
from .params import exact_epsilon

__all__ = ["Budget", "charge", "describe"]


class Budget:
    """A total ε that releases draw from, never overspent.

    Parameters
    ----------
    total_epsilon : int, float or Fraction
        The total privacy loss allowed on one data set (> 0); floats are
        rounded down exactly as :func:`pydp_synopsis.exact_epsilon` does.

    Examples
    --------
    >>> b = Budget(1)
    >>> b.charge(0.25, "latitude intervals")
    Fraction(1, 4)
    >>> b.remaining
    Fraction(3, 4)
    >>> b.charge(1, "too much")
    Traceback (most recent call last):
    ...
    pydp_synopsis.errors.BudgetError: cannot spend epsilon=1 on 'too much': only 3/4 of the total 1 remains

    References
    ----------
    .. [DR14] C. Dwork, A. Roth. "The Algorithmic Foundations of Differential
       Privacy." 2014, Theorem 3.14 (sequential composition).
    """

    def __init__(self, total_epsilon):
        self._total = exact_epsilon(total_epsilon, name="total_epsilon")
        self._spent = Fraction(0)
        self._ledger = []
        self._lock = threading.Lock()

    @property
    def total(self):
        """The total ε (Fraction)."""
        return self._total

    @property
    def spent(self):
        """ε charged so far (Fraction)."""
        return self._spent

    @property
    def remaining(self):
        """ε still available (Fraction)."""
        return self._total - self._spent

    @property
    def ledger(self):
        """List of ``(what, epsilon)`` charges, oldest first."""
        return list(self._ledger)

    def check(self, epsilon, what=""):
        """Raise BudgetError if ``epsilon`` cannot be charged now; spends nothing. O(1)."""
        eps = exact_epsilon(epsilon)
        if eps > self.remaining:
            raise BudgetError(
                f"cannot spend epsilon={eps} on {what!r}: only {self.remaining} of the total "
                f"{self._total} remains")
        return eps

    def charge(self, epsilon, what=""):
        """Record a release of ``epsilon``; returns the exact ε charged. O(1).

        Raises
        ------
        BudgetError
            The charge would exceed the total; nothing is recorded.
        """
        with self._lock:
            eps = self.check(epsilon, what)
            self._spent += eps
            self._ledger.append((what, eps))
            return eps

    def __repr__(self):
        return f"Budget(total={self._total}, spent={self._spent})"


def describe(mechanism, **public):
    """A ledger description from public facts only: ``"Mechanism(key=value, ...)"``.

    Builders pass what a reader of the ledger may know -- epsilon, the
    domain, the horizon, options -- never the data or a count derived from
    it (the number of items is data: two neighbouring data sets differ in
    it).  Keyword order is kept.

    Examples
    --------
    >>> describe("IntervalSynopsis", domain=(0, 9), epsilon=Fraction(1, 2))
    'IntervalSynopsis(domain=(0, 9), epsilon=1/2)'
    """
    return f"{mechanism}(" + ", ".join(f"{k}={v}" for k, v in public.items()) + ")"


def charge(budget, epsilon, what):
    """Charge ``budget`` (a :class:`Budget` or None) for a release of ``epsilon``.

    The builders call this after validating every argument and before
    drawing noise.  ``None`` charges nothing.
    """
    if budget is None:
        return
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a pydp_synopsis.Budget or None, not {type(budget).__name__}")
    budget.charge(epsilon, what)

"""A privacy budget under sequential composition.

Releasing mechanisms that are ε₁-, ε₂-, … -DP on the same data is
(ε₁ + ε₂ + …)-DP (basic sequential composition, Dwork & Roth 2014,
Theorem 3.14); with δs, (Σεᵢ, Σδᵢ)-DP (Theorem 3.16).  :class:`Budget`
keeps both sums in exact rational arithmetic
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
from .accounting import check_delta_or_zero
from .params import exact_epsilon

__all__ = ["Budget", "charge", "describe"]


class Budget:
    """A total (ε, δ) that releases draw from, never overspent.

    Parameters
    ----------
    total_epsilon : int, float or Fraction
        The total privacy loss allowed on one data set (> 0); floats are
        rounded down exactly as :func:`pydp_synopsis.exact_epsilon` does.
    total_delta : int, float or Fraction
        The total delta allowed, in ``[0, 1)``; 0 (the default) admits pure
        ε-DP releases only.  Taken at its exact value.

    Notes
    -----
    Basic composition: releases that are (ε₁, δ₁)-, (ε₂, δ₂)-, … -DP on the
    same data are (Σεᵢ, Σδᵢ)-DP together (Dwork & Roth 2014, Theorem 3.16;
    Theorem 3.14 for δ = 0).  Both sums are exact rationals.  A charge is
    refused (:class:`~pydp_synopsis.errors.BudgetError`, nothing recorded)
    when either total cannot cover it.

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
    >>> b = Budget(2, total_delta=Fraction(1, 10**6))
    >>> b.charge(1, "tree", delta=Fraction(1, 10**6))
    Fraction(1, 1)
    >>> b.remaining_delta
    Fraction(0, 1)

    References
    ----------
    .. [DR14] C. Dwork, A. Roth. "The Algorithmic Foundations of Differential
       Privacy." 2014, Theorem 3.14 (sequential composition) and Theorem
       3.16 (basic composition of (ε, δ)-DP mechanisms).
    """

    def __init__(self, total_epsilon, total_delta=0):
        self._total = exact_epsilon(total_epsilon, name="total_epsilon")
        self._total_delta = check_delta_or_zero(total_delta, "total_delta")
        self._spent = Fraction(0)
        self._spent_delta = Fraction(0)
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
    def total_delta(self):
        """The total δ (Fraction; 0: pure ε only)."""
        return self._total_delta

    @property
    def spent_delta(self):
        """δ charged so far (Fraction)."""
        return self._spent_delta

    @property
    def remaining_delta(self):
        """δ still available (Fraction)."""
        return self._total_delta - self._spent_delta

    @property
    def ledger(self):
        """List of ``(what, epsilon)`` charges, oldest first (δ: :attr:`charges`)."""
        return [(what, eps) for what, eps, _ in self._ledger]

    @property
    def charges(self):
        """List of ``(what, epsilon, delta)`` charges, oldest first (exact Fractions)."""
        return list(self._ledger)

    def check(self, epsilon, what="", delta=0):
        """Raise BudgetError if ``(epsilon, delta)`` cannot be charged now; spends nothing.

        Returns the exact ε (δ is checked too).  O(1).
        """
        eps = exact_epsilon(epsilon)
        dlt = check_delta_or_zero(delta)
        if eps > self.remaining:
            raise BudgetError(
                f"cannot spend epsilon={eps} on {what!r}: only {self.remaining} of the total "
                f"{self._total} remains")
        if dlt > self.remaining_delta:
            raise BudgetError(
                f"cannot spend delta={dlt} on {what!r}: only {self.remaining_delta} of the total "
                f"delta {self._total_delta} remains")
        return eps

    def charge(self, epsilon, what="", delta=0):
        """Record a release of ``(epsilon, delta)``; returns the exact ε charged. O(1).

        Parameters
        ----------
        epsilon : int, float or Fraction
            > 0, rounded down as :func:`~pydp_synopsis.exact_epsilon` does.
        what : str
            The ledger's description (public facts only).
        delta : int, float or Fraction
            In ``[0, 1)``, at its exact value; 0 for a pure ε release.

        Raises
        ------
        BudgetError
            ε or δ would exceed its total; nothing is recorded.
        """
        with self._lock:
            eps = self.check(epsilon, what, delta)
            dlt = check_delta_or_zero(delta)
            self._spent += eps
            self._spent_delta += dlt
            self._ledger.append((what, eps, dlt))
            return eps

    def __repr__(self):
        if self._total_delta:
            return (f"Budget(total={self._total}, spent={self._spent}, "
                    f"total_delta={self._total_delta}, spent_delta={self._spent_delta})")
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


def charge(budget, epsilon, what, delta=0):
    """Charge ``budget`` (a :class:`Budget` or None) for a release of ``(epsilon, delta)``.

    The builders call this after validating every argument and before
    drawing noise.  ``None`` charges nothing.
    """
    if budget is None:
        return
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a pydp_synopsis.Budget or None, not {type(budget).__name__}")
    budget.charge(epsilon, what, delta)

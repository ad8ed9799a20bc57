"""PrivTree's split probabilities, exactly: the pieces of the exact leaf laws of the tests."""
import math

__all__ = ["geq", "split_prob"]


def geq(j, lam):
    """(P(Z >= j), P(Z < j)) for the discrete Laplace of scale lam (pmf prop. to
    exp(-|z|/lam)), each without cancellation."""
    a = math.exp(-1.0 / lam)
    if j >= 1:
        p = a ** j / (1 + a)
        return p, 1.0 - p
    q = a ** (1 - j) / (1 + a)
    return 1.0 - q, q


def split_prob(c, d, lam, delta, theta=0):
    """(P(split), P(no split)) of a tested node of count c at depth d."""
    b = max(theta - delta, c - d * delta)
    return geq(theta - b + 1, lam)

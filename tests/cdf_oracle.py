"""A brute-force private CDF, independent of the package's C code: the textbook
least-squares monotone fit of the prefix answers at the segment ends, clipped at 0, then
each segment's count spread uniformly over its integers; and the quantile rule read from
it (numpy's ``"inverted_cdf"``)."""
import numpy as np

__all__ = ["pava", "interpolated_cdf", "oracle_quantile"]


def pava(y):
    """Least-squares non-decreasing fit, the textbook stack (independent of csrc)."""
    blocks = []                                   # [sum, length]
    for v in y:
        blocks.append([float(v), 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    return [s / n for s, n in blocks for _ in range(n)]


def interpolated_cdf(prefix, ends, lo):
    """Per integer x from ``lo`` to the last end, the count of rows <= x: ``prefix`` (the
    private answers for ``[lo, end]``) fitted, clipped at 0 and interpolated."""
    cum = [0.0] + [max(v, 0.0) for v in pava(prefix)]
    f, start = [], lo
    for i, e in enumerate(ends):
        w = e - start + 1
        f += [cum[i] + (cum[i + 1] - cum[i]) * (x - start + 1) / w for x in range(start, e + 1)]
        start = e + 1
    return np.array(f)


def oracle_quantile(f, lo, q):
    """The smallest x with ``f(x) >= q f(hi)`` (for ``q = 0`` the smallest with ``f > 0``)."""
    total = f[-1]
    if q == 0:
        return lo + int(np.argmax(f > 0))
    return lo + int(np.argmax(f >= q * total - 1e-9 * total))

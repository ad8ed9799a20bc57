"""The exact law of the DNRR partition (Fig. 1) on a small domain, and the test data it is computed for."""
import math

import numpy as np

from pydp_synopsis import partition as P

__all__ = ["BETA", "COUNTS", "EPS", "EXACT_FIRST", "EXACT_NSEG", "SCALE", "T_INT", "VALUES", "dlap_pmf",
           "exact_laws", "histograms", "p_seal", "segment_law"]


# ---------------------------------------------------------------- exact law
# The law of Fig. 1 computed from its definition: a segment starting at s
# with noisy threshold tau seals at the first e with C(s, e) + nu_e > tau,
# C(s, e) the count of positions s..e, or at the last position.

def dlap_pmf(scale, zmax):
    a = math.exp(-1.0 / scale)
    z = np.arange(-zmax, zmax + 1)
    return z, (1 - a) / (1 + a) * a ** np.abs(z)


def p_seal(m, scale):
    """P(nu >= m) for the discrete Laplace of scale `scale` (vectorised)."""
    a = math.exp(-1.0 / scale)
    m = np.asarray(m, dtype=float)
    return np.where(m >= 1, a ** np.maximum(m, 1) / (1 + a),
                    1 - a ** np.maximum(1 - m, 1) / (1 + a))


def segment_law(counts, scale, threshold):
    """Q[s, e] = P(the segment starting at s seals at e)."""
    d = len(counts)
    zs, pz = dlap_pmf(scale, int(60 * scale) + 5)
    tau = threshold + zs
    q = np.zeros((d, d))
    for s in range(d):
        alive = pz.copy()
        c = 0
        for e in range(s, d):
            c += counts[e]
            if e == d - 1:
                q[s, e] = alive.sum()
                break
            ps_ = p_seal(tau - c + 1, scale)
            q[s, e] = (alive * ps_).sum()
            alive = alive * (1 - ps_)
    return q


def exact_laws(counts, scale, threshold):
    """(law of the first seal position, law of the number of segments)."""
    d = len(counts)
    q = segment_law(counts, scale, threshold)
    first = q[0].copy()
    # g[k, s]: P(segment k+1 starts at s); a segment ending at d-1 is the last.
    nseg = np.zeros(d + 1)
    g = np.zeros(d)
    g[0] = 1.0
    for k in range(1, d + 1):
        nseg[k] = g @ q[:, d - 1]
        nxt = np.zeros(d)
        nxt[1:] = g @ q[:, :-1]
        g = nxt
    return first, nseg[1:]


def histograms(seal_lists, d):
    first = np.zeros(d)
    nseg = np.zeros(d)
    for seals in seal_lists:
        first[int(seals[0])] += 1
        nseg[len(seals) - 1] += 1
    return first, nseg


# Items clustered with long empty gaps, so both the skip and the per-item
# steps matter; T = ceil(3 (ln 64 + ln 2)) = 15 with epsilon = 1, beta = 1/2.
COUNTS = np.zeros(64, dtype=np.int64)
COUNTS[[3, 10, 11, 30, 31, 50, 63]] = [10, 7, 1, 15, 1, 8, 2]
EPS, BETA, SCALE = 1, 0.5, 1.0
T_INT = P.Partition([63], domain=(0, 63), epsilon=EPS, beta=BETA).threshold
VALUES = np.repeat(np.arange(64), COUNTS)
EXACT_FIRST, EXACT_NSEG = exact_laws(COUNTS, SCALE, T_INT)

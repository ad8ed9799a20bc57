/* The interval synopsis's answers: a query's whole segments and its two
 * boundary segments, per estimator, from the tree (tree.c's cover) or from
 * prefix sums of the segment estimates.
 *
 * Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for Rectangle
 * Queries via Private Partitions", section 3.2.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "internal.h"

enum { EST_COVER = 0, EST_UNIFORM = 1, EST_SEAL = 2, EST_SEAL_UNIFORM = 3 };

static pds_boundary_use boundary(int estimator, uint64_t first, uint64_t end,
                             uint64_t x, uint64_t y)
{
    pds_boundary_use u = {0, 0, 0, 0.0};
    if (x == first && y == end) {
        u.whole = 1;
        return u;
    }
    switch (estimator) {
    case EST_COVER:
        u.whole = 1;
        break;
    case EST_UNIFORM:
        /* spans reach 2^64, which uint64 cannot hold: "+ 1" in double
         * (relative error below 2^-52) */
        u.used = 1;
        u.frac = ((double)(y - x) + 1.0) / ((double)(end - first) + 1.0);
        break;
    case EST_SEAL:
        /* counted iff the seal (the segment's end) is inside the query */
        u.whole = y == end;
        break;
    default:
        /* seal point holds est - iota, the interior [first, end - 1] holds
         * iota = clip(est, 0, tau) spread uniformly; end > first here */
        u.used = 1;
        u.clip = 1;
        if (y == end) {
            u.whole = 1;
            u.frac = -(double)(x - first) / (double)(end - first);
        } else {
            u.frac = ((double)(y - x) + 1.0) / (double)(end - first);
        }
        break;
    }
    return u;
}

int pds_tree_plan_query(uint64_t m, const uint64_t *ends, uint64_t lo,
                      uint64_t hi, uint64_t k, uint64_t r, int estimator,
                      pds_interval_plan *p)
{
    uint64_t kfirst, rfirst;
    if (lo > hi || k > r || r >= m || hi > ends[r] || lo > ends[k]
        || (k > 0 && lo <= ends[k - 1]) || (r > 0 && hi <= ends[r - 1]))
        return PDS_EINVAL;
    p->kl = k;
    p->kr = r;
    kfirst = k == 0 ? 0 : ends[k - 1] + 1;
    rfirst = r == 0 ? 0 : ends[r - 1] + 1;
    if (k == r) {
        p->ul = boundary(estimator, kfirst, ends[k], lo, hi);
        p->ur.used = 0;
        p->wa = k + !p->ul.whole;
        p->wb = k + 1;
        return PDS_OK;
    }
    p->ul = boundary(estimator, kfirst, ends[k], lo, ends[k]);
    p->ur = boundary(estimator, rfirst, ends[r], rfirst, hi);
    p->wa = k + !p->ul.whole;
    p->wb = r + p->ur.whole;
    return PDS_OK;
}

static double contribution(pds_boundary_use u, double est, double tau)
{
    if (!u.used)
        return 0.0;
    if (u.clip)
        est = est < 0.0 ? 0.0 : (est > tau ? tau : est);
    return u.frac * est;
}

int pds_tree_answer_args_ok(uint64_t m, const uint64_t *ends, const uint64_t *lo,
                          const uint64_t *hi, const uint64_t *seg_lo,
                          const uint64_t *seg_hi, size_t count, int estimator,
                          double tau, const double *out)
{
    if (m == 0 || ends == NULL || estimator < EST_COVER
        || estimator > EST_SEAL_UNIFORM || !(tau >= 0.0))
        return 0;
    return count == 0 || (lo != NULL && hi != NULL && seg_lo != NULL
                          && seg_hi != NULL && out != NULL);
}

pds_status pds_interval_answer_tree(const int64_t *nodes, uint64_t m,
                                    uint32_t fanout, const uint64_t *ends,
                                    const uint64_t *lo, const uint64_t *hi,
                                    const uint64_t *seg_lo, const uint64_t *seg_hi,
                                    size_t count, int estimator, double tau,
                                    double *out)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    int st;

    if (nodes == NULL || !pds_tree_answer_args_ok(m, ends, lo, hi, seg_lo, seg_hi,
                                         count, estimator, tau, out))
        return PDS_EINVAL;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    pds_tree_layout(m, fanout, levels, start, width);
    for (size_t q = 0; q < count; q++) {
        pds_interval_plan p;
        int64_t whole = 0;
        st = pds_tree_plan_query(m, ends, lo[q], hi[q], seg_lo[q], seg_hi[q],
                        estimator, &p);
        if (st != PDS_OK)
            return st;
        if (p.wa < p.wb) {
            st = pds_tree_cover_sum(nodes, start, m, fanout, levels, p.wa, p.wb, &whole);
            if (st != PDS_OK)
                return st;
        }
        out[q] = (double)whole + contribution(p.ul, (double)nodes[p.kl], tau)
                 + contribution(p.ur, (double)nodes[p.kr], tau);
    }
    return PDS_OK;
}

pds_status pds_interval_answer_prefix(const double *prefix, uint64_t m,
                                      const uint64_t *ends, const uint64_t *lo,
                                      const uint64_t *hi, const uint64_t *seg_lo,
                                      const uint64_t *seg_hi, size_t count,
                                      int estimator, double tau, double *out)
{
    int st;
    if (prefix == NULL || !pds_tree_answer_args_ok(m, ends, lo, hi, seg_lo, seg_hi,
                                          count, estimator, tau, out))
        return PDS_EINVAL;
    for (size_t q = 0; q < count; q++) {
        pds_interval_plan p;
        double a = 0.0;
        st = pds_tree_plan_query(m, ends, lo[q], hi[q], seg_lo[q], seg_hi[q],
                        estimator, &p);
        if (st != PDS_OK)
            return st;
        if (p.wa < p.wb)
            a = prefix[p.wb] - prefix[p.wa];
        a += contribution(p.ul, prefix[p.kl + 1] - prefix[p.kl], tau);
        a += contribution(p.ur, prefix[p.kr + 1] - prefix[p.kr], tau);
        out[q] = a;
    }
    return PDS_OK;
}

/* One level of the quadtree over partition cells (rectangles/quadtree.py, grow).
 *
 * structure="quadtree" of the rectangle synopsis: the split tests of a level
 * are drawn in Python (one discrete Laplace fill); this pass moves every row
 * of a node that split to its child and counts the next level, dropping the
 * rows of the nodes that became leaves.  O(n) per level, no allocation.
 */
#include <stdint.h>
#include <stddef.h>

#include "pydp_synopsis.h"

pds_status pds_quad_level(uint32_t *cells, int64_t *weight, int64_t *node, uint64_t n,
                          const int64_t *slot, uint64_t n_level, const int64_t *mid,
                          const int64_t *child, uint64_t n_split, int64_t *counts,
                          uint64_t n_next, uint64_t *kept)
{
    if (kept == NULL || slot == NULL || (n > 0 && (cells == NULL || weight == NULL
                                                   || node == NULL))
        || (n_split > 0 && (mid == NULL || child == NULL))
        || (n_next > 0 && counts == NULL))
        return PDS_EINVAL;
    uint64_t w = 0;
    for (uint64_t i = 0; i < n; i++) {
        int64_t k = node[i];
        if (k < 0 || (uint64_t)k >= n_level)
            return PDS_EINVAL;
        int64_t s = slot[k];
        if (s < 0)
            continue;                           /* its node is a leaf: the row is done */
        if ((uint64_t)s >= n_split)
            return PDS_EINVAL;
        uint32_t x = cells[2 * i], y = cells[2 * i + 1];
        unsigned side = (unsigned)((int64_t)x > mid[2 * s])
                        | ((unsigned)((int64_t)y > mid[2 * s + 1]) << 1);
        int64_t ch = child[4 * s + side];
        if (ch < 0 || (uint64_t)ch >= n_next)
            return PDS_EINVAL;
        int64_t wt = weight[i];
        cells[2 * w] = x;
        cells[2 * w + 1] = y;
        weight[w] = wt;
        node[w] = ch;
        counts[ch] += wt;
        w++;
    }
    *kept = w;
    return PDS_OK;
}

/* The boxes' answers over a released quadtree (rectangles/quadtree.py, parts).
 *
 * Depth first per box with an explicit stack (work: stack_size entries): a
 * node outside the box in the data's coordinates is skipped, a node inside it
 * adds its subtree's sum (sums[2 k]) and number of leaves (sums[2 k + 1]), a
 * cut leaf adds its noisy count times its share of segment cells inside the
 * box's snapped range [i, j], and a cut split node pushes its children. */
pds_status pds_quad_answer(uint64_t n_nodes, const uint64_t *cfirst, const uint64_t *clast,
                           const int64_t *first, const int64_t *last, const int64_t *child,
                           const int64_t *nchild, const int64_t *leaf, const double *sums,
                           const int64_t *counts, uint64_t n_leaves, uint64_t q,
                           const uint64_t *lo, const uint64_t *hi, const int64_t *bi,
                           const int64_t *bj, int64_t *work, uint64_t stack_size,
                           double *answer, double *sumsq, double *maxabs, double *cut)
{
    if (n_nodes == 0 || cfirst == NULL || clast == NULL || first == NULL || last == NULL
        || child == NULL || nchild == NULL || leaf == NULL || sums == NULL
        || (n_leaves > 0 && counts == NULL) || work == NULL || stack_size == 0
        || (q > 0 && (lo == NULL || hi == NULL || bi == NULL || bj == NULL || answer == NULL
                      || sumsq == NULL || maxabs == NULL || cut == NULL)))
        return PDS_EINVAL;
    for (uint64_t b = 0; b < q; b++) {
        double ans = 0.0, ss = 0.0, mx = 0.0, csum = 0.0, cn = 0.0;
        uint64_t top = 0;
        work[top++] = 0;
        while (top > 0) {
            int64_t k = work[--top];
            if (k < 0 || (uint64_t)k >= n_nodes)
                return PDS_EINVAL;
            int out = 0, in = 1;
            for (int a = 0; a < 2; a++) {
                uint64_t f = cfirst[2 * k + a], l = clast[2 * k + a];
                uint64_t blo = lo[2 * b + a], bhi = hi[2 * b + a];
                if (l < blo || f > bhi)
                    out = 1;
                if (f < blo || l > bhi)
                    in = 0;
            }
            if (out)
                continue;
            if (in) {
                ans += sums[2 * k];
                ss += sums[2 * k + 1];
                if (mx < 1.0)
                    mx = 1.0;
                continue;
            }
            int64_t lf = leaf[k];
            if (lf >= 0) {
                if ((uint64_t)lf >= n_leaves)
                    return PDS_EINVAL;
                double share = 1.0;
                for (int a = 0; a < 2; a++) {
                    int64_t s = first[2 * k + a], e = last[2 * k + a];
                    int64_t t = e < bj[2 * b + a] ? e : bj[2 * b + a];
                    int64_t u = s > bi[2 * b + a] ? s : bi[2 * b + a];
                    double w = t >= u ? (double)(t - u + 1) : 0.0;
                    share *= w / (double)(e - s + 1);
                }
                double v = (double)counts[lf];
                ans += share * v;
                ss += share * share;
                if (mx < share)
                    mx = share;
                csum += v;
                cn += 1.0;
                continue;
            }
            int64_t c0 = child[k], nc = nchild[k];
            if (c0 <= k || nc < 1 || nc > 4 || (uint64_t)(c0 + nc) > n_nodes
                || top + (uint64_t)nc > stack_size)
                return PDS_EINVAL;
            for (int64_t c = nc - 1; c >= 0; c--)
                work[top++] = c0 + c;
        }
        answer[b] = ans;
        sumsq[b] = ss;
        maxabs[b] = mx;
        cut[2 * b] = csum;
        cut[2 * b + 1] = cn;
    }
    return PDS_OK;
}

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

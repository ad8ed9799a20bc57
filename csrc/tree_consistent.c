/* The interval synopsis's tree, consistency: the least-squares estimate of
 * the leaves from the noisy nodes, and the largest coefficient of a node in
 * it (its sensitivity after smoothing).
 *
 * Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of Differentially
 * Private Histograms Through Consistency", VLDB 2010, section 4 (the
 * two-pass least-squares estimate).  Layout: tree.c.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "internal.h"

/* Every given array has one entry per level, finite and > 0? */
int pds_tree_levels_ok(const pds_level_weights *lw, uint32_t levels)
{
    const double *w[2] = {lw->rho, lw->fac};
    if ((w[0] || w[1]) && lw->n != levels)
        return 0;
    for (int i = 0; i < 2; i++)
        for (uint32_t l = 0; w[i] && l < levels; l++)
            if (!(w[i][l] > 0.0) || w[i][l] > 1e300)
                return 0;
    return 1;
}

/* Least squares with the released nodes of level l of variance rho[l]
 * (rho NULL: all 1, Hay et al.'s equal-variance case) and no observation
 * of the (unreleased) root.  Bottom-up, z[v] is the best estimate of node v
 * from its own subtree and var[v] its variance; a missing child of the
 * ragged right edge is a padded segment whose count is known to be 0
 * (z = 0, var = 0).  Top-down, a parent's final estimate minus its
 * children's z is shared among the children in proportion to their var.
 * For complete trees of equal variances this is Hay et al.'s Theorem 3
 * recurrence (any fanout); with per-level variances and for the ragged
 * edge it is the same minimum-variance estimate (Gaussian smoothing on a
 * tree: the inverse-variance average of a node's own count and the sum of
 * its children's estimates).  `levels` is explicit so that one top-level
 * subtree can be smoothed alone (its root level then has one node). */
void pds_tree_consistent_pass(const double *y, uint64_t m, uint32_t f,
                            uint32_t levels, const uint64_t *start,
                            const uint64_t *width, const pds_level_weights *lw,
                            double *z, double *var)
{
    double r0 = pds_lw_rho(lw, 0);
    for (uint64_t u = 0; u < m; u++) {
        z[u] = y[u];
        var[u] = r0;
    }
    for (uint32_t l = 1; l < levels; l++) {
        uint64_t b = start[l - 1], h = start[l];
        double r = pds_lw_rho(lw, l);
        for (uint64_t u = 0; u < width[l]; u++) {
            uint64_t c0 = u * f, c1 = c0 + f;
            double sz = 0.0, sv = 0.0;
            if (c1 > width[l - 1])
                c1 = width[l - 1];
            for (uint64_t c = c0; c < c1; c++) {
                sz += z[b + c];
                sv += var[b + c];
            }
            /* inverse-variance average of the node's own count (var r) and
             * the sum of its children's estimates (var sv) */
            z[h + u] = (y[h + u] * sv + sz * r) / (sv + r);
            var[h + u] = sv * r / (sv + r);
        }
    }
    /* top-level z are final: the root releases nothing to reconcile with */
    for (uint32_t l = levels - 1; l >= 1; l--) {
        uint64_t b = start[l - 1], h = start[l];
        for (uint64_t u = 0; u < width[l]; u++) {
            uint64_t c0 = u * f, c1 = c0 + f;
            double sz = 0.0, sv = 0.0, r;
            if (c1 > width[l - 1])
                c1 = width[l - 1];
            for (uint64_t c = c0; c < c1; c++) {
                sz += z[b + c];
                sv += var[b + c];
            }
            r = z[h + u] - sz;
            for (uint64_t c = c0; c < c1; c++)
                z[b + c] += var[b + c] / sv * r;
        }
    }
}

static pds_status consistent_leaves(const int64_t *nodes, uint64_t m, uint32_t fanout,
                                    const pds_level_weights *lw, double *leaf)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    double *z, *var, *y;
    int st;

    if (nodes == NULL || leaf == NULL)
        return PDS_EINVAL;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    if (!pds_tree_levels_ok(lw, levels))
        return PDS_EINVAL;
    pds_tree_layout(m, fanout, levels, start, width);
    z = malloc(3 * total * sizeof *z);
    if (z == NULL)
        return PDS_ENOMEM;
    var = z + total;
    y = var + total;
    for (uint64_t v = 0; v < total; v++)
        y[v] = (double)nodes[v];
    pds_tree_consistent_pass(y, m, fanout, levels, start, width, lw, z, var);
    for (uint64_t u = 0; u < m; u++)
        leaf[u] = z[u];
    free(z);
    return PDS_OK;
}

pds_status pds_tree_consistent_leaves(const int64_t *nodes, uint64_t m,
                                      uint32_t fanout, double *leaf)
{
    return consistent_leaves(nodes, m, fanout, PDS_TREE_UNIT_LEVELS, leaf);
}

pds_status pds_tree_consistent_leaves_levels(const int64_t *nodes, uint64_t m,
                                             uint32_t fanout, const double *rho,
                                             uint32_t n_levels, double *leaf)
{
    pds_level_weights lw = {rho, NULL, n_levels};
    if (rho == NULL)
        return PDS_EINVAL;
    return consistent_leaves(nodes, m, fanout, &lw, leaf);
}

/* max over the nodes v of one subtree of fac[level of v] * (max_p G(p) -
 * min_p G(p)), G the prefix sums of the leaf response to a unit
 * observation at v. */
static int subtree_max_coef(uint64_t ms, uint32_t f, uint32_t levels,
                            const pds_level_weights *lw, double *best)
{
    uint64_t start[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS], total;
    double *y, *z, *var;
    pds_tree_layout(ms, f, levels, start, width);
    total = start[levels - 1] + width[levels - 1];
    y = calloc(3 * total, sizeof *y);
    if (y == NULL)
        return PDS_ENOMEM;
    z = y + total;
    var = z + total;
    for (uint32_t l = 0; l < levels; l++)
        for (uint64_t v = start[l]; v < start[l] + width[l]; v++) {
            double g = 0.0, hi = 0.0, lo = 0.0, c;
            y[v] = 1.0;
            pds_tree_consistent_pass(y, ms, f, levels, start, width, lw, z, var);
            y[v] = 0.0;
            for (uint64_t u = 0; u < ms; u++) {
                g += z[u];
                hi = g > hi ? g : hi;
                lo = g < lo ? g : lo;
            }
            c = (hi - lo) * pds_lw_fac(lw, l);
            if (c > *best)
                *best = c;
        }
    free(y);
    return PDS_OK;
}

static pds_status consistent_max_coef(uint64_t m, uint32_t fanout,
                                      const pds_level_weights *lw, uint64_t max_work,
                                      double *out)
{
    uint32_t levels;
    uint64_t total, span = 1, first, last, sub_nodes;
    double best = 0.0;
    int st;
    if (out == NULL)
        return PDS_EINVAL;
    st = pds_tree_shape(m, fanout, &levels, &total);
    if (st != PDS_OK)
        return st;
    if (!pds_tree_levels_ok(lw, levels))
        return PDS_EINVAL;
    /* Top-level nodes have no common parent, so a unit observation moves
     * only the estimates of its own top-level subtree: every subtree but the
     * last is the same complete tree of f^(levels-1) leaves. */
    for (uint32_t l = 1; l < levels; l++)
        span *= fanout;
    first = span < m ? span : m;
    last = m - (m - 1) / span * span;
    sub_nodes = 0;
    for (uint64_t w = first, l = 0; l < levels; l++, w = (w - 1) / fanout + 1)
        sub_nodes += w;
    if (sub_nodes > max_work / sub_nodes / 2)
        return PDS_ERANGE;
    st = subtree_max_coef(first, fanout, levels, lw, &best);
    if (st == PDS_OK && last != first)
        st = subtree_max_coef(last, fanout, levels, lw, &best);
    if (st != PDS_OK)
        return st;
    *out = best;
    return PDS_OK;
}

pds_status pds_tree_consistent_max_coef(uint64_t m, uint32_t fanout,
                                        uint64_t max_work, double *out)
{
    return consistent_max_coef(m, fanout, PDS_TREE_UNIT_LEVELS, max_work, out);
}

pds_status pds_tree_consistent_max_coef_levels(uint64_t m, uint32_t fanout,
                                               const double *rho, const double *fac,
                                               uint32_t n_levels, uint64_t max_work,
                                               double *out)
{
    pds_level_weights lw = {rho, fac, n_levels};
    if (rho == NULL || fac == NULL)
        return PDS_EINVAL;
    return consistent_max_coef(m, fanout, &lw, max_work, out);
}

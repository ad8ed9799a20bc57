/* The interval synopsis's answer noise: per query, the sum of the squared
 * weights and the largest weight of the node noises in its answer (raw
 * tree, consistent tree, k-ary counter), for exact variances and Chernoff
 * tails.  Layout and cover: tree.c; the least squares: tree_consistent.c;
 * the query plan: tree_answers.c.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "internal.h"

/* ------------------------------------------------------------ answer noise
 *
 * Every answer above is linear in the released noise: its noise is
 * sum_v w_v Z_v over independent node noises Z_v of one scale.  The kernels
 * below write, per query, sum_v w_v^2 (Var = that times Var(Z)) and
 * max_v |w_v| (for Chernoff tails).  "seal_uniform" clips a boundary
 * segment's estimate into [0, tau]; the clip is monotone and 1-Lipschitz,
 * so the noise moves that term by theta * frac * (estimate noise) for some
 * theta in [0, 1]: the answer's noise is affine in (theta_l, theta_r) and
 * lies between the noises of the four corners theta in {0, 1}^2.  Corner j
 * (bit 0: theta_l = 1, bit 1: theta_r = 1) is written at [4 q + j]; corner
 * 3 is the unclipped linear map.  The other estimators are linear: their
 * four corners are equal.
 *
 * A query's weights on the segments are written as c = sum_j beta_j
 * 1[p < t_j] over segments p (at most 6 terms: the whole range and the two
 * boundary segments), i.e. the answer is sum_j beta_j P(t_j) for the prefix
 * sums P of the segment estimates; P(0) = 0 carries no noise. */
typedef struct {
    int n;
    uint64_t t[6];
    double beta[6];
} prefix_combo;

static void combo_add(prefix_combo *c, uint64_t t, double beta)
{
    if (t == 0 || beta == 0.0)
        return;
    for (int j = 0; j < c->n; j++)
        if (c->t[j] == t) {
            c->beta[j] += beta;
            return;
        }
    c->t[c->n] = t;
    c->beta[c->n] = beta;
    c->n++;
}

/* The fraction a boundary use contributes at a corner (0 if none). */
static double corner_frac(pds_boundary_use u, int keep)
{
    return u.used && (!u.clip || keep) ? u.frac : 0.0;
}

static void plan_combo(const pds_interval_plan *p, int corner, prefix_combo *c)
{
    double fl = corner_frac(p->ul, corner & 1);
    double fr = p->kr == p->kl ? 0.0 : corner_frac(p->ur, corner & 2);
    c->n = 0;
    if (p->wa < p->wb) {
        combo_add(c, p->wb, 1.0);
        combo_add(c, p->wa, -1.0);
    }
    combo_add(c, p->kl + 1, fl);
    combo_add(c, p->kl, -fl);
    combo_add(c, p->kr + 1, fr);
    combo_add(c, p->kr, -fr);
}

/* c at segment p */
static double combo_at(const prefix_combo *c, uint64_t p)
{
    double v = 0.0;
    for (int j = 0; j < c->n; j++)
        if (c->t[j] > p)
            v += c->beta[j];
    return v;
}

static int has_clip(const pds_interval_plan *p)
{
    return (p->ul.used && p->ul.clip)
           || (p->kr != p->kl && p->ur.used && p->ur.clip);
}

/* Leaf x in a cover's level-0 runs? */
static int leaf_in_cover(const pds_cover_run *runs, int n, uint64_t x)
{
    for (int r = 0; r < n; r++)
        if (runs[r].level == 0 && runs[r].first <= x && x < runs[r].end)
            return 1;
    return 0;
}

/* Raw tree: the cover's nodes with weight 1, the boundary leaves with their
 * fractions (added to their weight when a leaf is itself in the cover).
 * A node of level l counts rho[l] w^2 in sumsq and fac[l] |w| in maxabs. */
static void raw_weights(uint64_t m, uint32_t f, uint32_t levels,
                        const pds_level_weights *lw, const pds_interval_plan *p,
                        int corner, double *sumsq, double *maxabs)
{
    pds_cover_run runs[2 * PDS_TREE_MAX_LEVELS];
    int n = 0;
    double fb[2], s = 0.0, sn = 0.0, mx = 0.0;
    uint64_t leaf[2];
    if (p->wa < p->wb)
        n = pds_tree_cover_runs(m, f, levels, p->wa, p->wb, runs);
    fb[0] = corner_frac(p->ul, corner & 1);
    fb[1] = p->kr == p->kl ? 0.0 : corner_frac(p->ur, corner & 2);
    leaf[0] = p->kl;
    leaf[1] = p->kr;
    for (int r = 0; r < n; r++) {
        uint64_t cnt = runs[r].end - runs[r].first;
        uint32_t l = runs[r].level;
        for (int b = 0; b < 2; b++)      /* a boundary leaf in the cover: below */
            if (l == 0 && fb[b] != 0.0 && runs[r].first <= leaf[b] && leaf[b] < runs[r].end)
                cnt--;
        sn += (double)cnt * pds_lw_rho(lw, l);
        if (cnt > 0 && pds_lw_fac(lw, l) > mx)
            mx = pds_lw_fac(lw, l);
    }
    for (int b = 0; b < 2; b++) {
        double w = fb[b];
        if (w == 0.0)
            continue;
        if (leaf_in_cover(runs, n, leaf[b]))
            w += 1.0;     /* its fraction may be negative: 1 + frac can be 0 */
        s += w * w * pds_lw_rho(lw, 0);
        w = (w < 0.0 ? -w : w) * pds_lw_fac(lw, 0);
        mx = w > mx ? w : mx;
    }
    *sumsq = s + sn;
    *maxabs = mx;
}

/* ---- consistent tree.  The least-squares estimate is the posterior mean
 * of node totals x_v under a flat prior on the leaves, every released node
 * observed with unit variance (consistent_pass).  Bottom up, var[v] is the
 * variance of the estimate of x_v from its own subtree; given its parent's
 * total, the children of p are x_c = g_c x_p + e_c, g_c = var_c / S_p
 * (S_p = sum of the children's var), Cov(e_c, e_c') = var_c [c = c'] -
 * var_c var_c' / S_p, independent of everything outside p's subtree; the
 * top-level nodes (no root is released) have posterior variance var_v and
 * are independent.  For F = sum_p c_p x_p restricted to a subtree u,
 * F_u = alpha_u x_u + N_u with N_u independent of x_u:
 *   alpha_u = sum_c alpha_c var_c / S_u,
 *   R_u = Var(N_u) = sum_c R_c + sum_c var_c (alpha_c - alpha_u)^2,
 * constant c on u's leaves giving alpha_u = c, R_u = 0.  Then Var(F) =
 * sum_top (alpha_v^2 var_v + R_v) (in units of one node's variance).  The
 * weight of the raw count of node v in the estimate of F is Cov(x_v, F):
 * top level alpha_v var_v, below C_c = g_c C_p + var_c (alpha_c - alpha_p);
 * inside a constant subtree C shrinks by the g factors, so the largest
 * weight is at a node on the path of a breakpoint of c or a child of one.
 * All nodes off those paths are handled in runs: O(f-free) work per query,
 * O(levels * 6) nodes in all. */
typedef struct {
    uint64_t m;
    uint32_t f, levels;
    uint64_t span[PDS_TREE_MAX_LEVELS], width[PDS_TREE_MAX_LEVELS];
    double v_full[PDS_TREE_MAX_LEVELS], v_last[PDS_TREE_MAX_LEVELS];
    /* own[l] = fac[l] / rho[l]: |raw weight| * fac per unit |cov| at level l;
     * mf_full/mf_last: its max over a complete (last) node's subtree, the
     * covariances of a subtree on which c is constant shrinking by the
     * factors g = var_child / S_parent from the node down */
    double own[PDS_TREE_MAX_LEVELS];
    double mf_full[PDS_TREE_MAX_LEVELS], mf_last[PDS_TREE_MAX_LEVELS];
} smooth_shape;

static void smooth_init(smooth_shape *sh, uint64_t m, uint32_t f, uint32_t levels,
                        const pds_level_weights *lw)
{
    uint64_t start[PDS_TREE_MAX_LEVELS];
    sh->m = m;
    sh->f = f;
    sh->levels = levels;
    pds_tree_layout(m, f, levels, start, sh->width);
    sh->span[0] = 1;
    sh->v_full[0] = sh->v_last[0] = pds_lw_rho(lw, 0);
    sh->own[0] = sh->mf_full[0] = sh->mf_last[0] = pds_lw_fac(lw, 0) / pds_lw_rho(lw, 0);
    for (uint32_t l = 1; l < levels; l++) {
        /* f^l <= f^(levels-1) < m: no overflow */
        uint64_t last_children = sh->width[l - 1] - (sh->width[l] - 1) * f;
        double r = pds_lw_rho(lw, l);
        double s_full = (double)f * sh->v_full[l - 1];
        double s_last = (double)(last_children - 1) * sh->v_full[l - 1] + sh->v_last[l - 1];
        double own = pds_lw_fac(lw, l) / r, below;
        sh->span[l] = sh->span[l - 1] * f;
        sh->v_full[l] = s_full * r / (s_full + r);
        sh->v_last[l] = s_last * r / (s_last + r);
        sh->own[l] = own;
        below = sh->mf_full[l - 1] / (double)f;
        sh->mf_full[l] = below > own ? below : own;
        below = sh->v_last[l - 1] / s_last * sh->mf_last[l - 1];
        if (last_children > 1 && sh->v_full[l - 1] / s_last * sh->mf_full[l - 1] > below)
            below = sh->v_full[l - 1] / s_last * sh->mf_full[l - 1];
        sh->mf_last[l] = below > own ? below : own;
    }
}

enum { SM_MAX_PART = 6, SM_MAX_PIECES = 16 };

/* The nodes of one level that a breakpoint of c cuts, and their values. */
typedef struct {
    int n;
    uint64_t u[SM_MAX_PART];
    double alpha[SM_MAX_PART], r[SM_MAX_PART], cov[SM_MAX_PART];
} smooth_part;

/* A run of n nodes of one level with one alpha and one var; part >= 0 for a
 * cut node (n = 1, its index in the level's smooth_part). */
typedef struct {
    uint64_t n, first;
    double alpha, var, r;
    int part;
    double mf;     /* max |weight| * fac per unit |cov| over the piece's nodes and,
                    * uncut, their subtrees (a cut node's subtree is visited) */
} smooth_piece;

static int find_part(const smooth_part *pt, uint64_t u)
{
    for (int i = 0; i < pt->n; i++)
        if (pt->u[i] == u)
            return i;
    return -1;
}

static void sort_u64(uint64_t *a, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
            uint64_t t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
}

/* Nodes [c0, c1) of level l as pieces: runs of uncut, complete nodes on
 * which c is constant, and single nodes (cut ones, the level's last node,
 * and those where c changes at their first leaf). */
static int smooth_pieces(const smooth_shape *sh, const prefix_combo *c,
                         const smooth_part *pt, uint32_t l, uint64_t c0,
                         uint64_t c1, smooth_piece *out)
{
    uint64_t stop[SM_MAX_PART + 2];
    int ns = 0, np = 0;
    uint64_t span = sh->span[l], lastn = sh->width[l] - 1, cur = c0;
    for (int j = 0; j < c->n; j++) {
        uint64_t t = c->t[j], u = t / span;
        if (t < sh->m && u >= c0 && u < c1)
            stop[ns++] = u;
    }
    if (lastn >= c0 && lastn < c1)
        stop[ns++] = lastn;
    stop[ns++] = c1;
    sort_u64(stop, ns);
    for (int i = 0; i < ns; i++) {
        uint64_t s = stop[i];
        if (s < cur)
            continue;
        if (s > cur)
            out[np++] = (smooth_piece){s - cur, cur, combo_at(c, cur * span),
                                       sh->v_full[l], 0.0, -1, sh->mf_full[l]};
        if (s == c1)
            break;
        {
            int k = find_part(pt, s);
            smooth_piece one = {1, s, 0.0, s == lastn ? sh->v_last[l] : sh->v_full[l],
                                0.0, k, s == lastn ? sh->mf_last[l] : sh->mf_full[l]};
            if (k >= 0) {
                one.alpha = pt->alpha[k];
                one.r = pt->r[k];
                one.mf = sh->own[l];
            } else {
                one.alpha = combo_at(c, s * span);
            }
            out[np++] = one;
        }
        cur = s + 1;
    }
    return np;
}

static void consistent_weights(const smooth_shape *sh, const prefix_combo *c,
                               double *sumsq, double *maxabs)
{
    smooth_part part[PDS_TREE_MAX_LEVELS];
    smooth_piece pc[SM_MAX_PIECES];
    uint32_t top = sh->levels - 1;
    double var = 0.0, mx = 0.0;
    int np;

    /* the cut nodes of every level (none among the leaves) */
    part[0].n = 0;
    for (uint32_t l = 1; l <= top; l++) {
        part[l].n = 0;
        for (int j = 0; j < c->n; j++) {
            uint64_t t = c->t[j];
            if (t < sh->m && t % sh->span[l] != 0 && find_part(&part[l], t / sh->span[l]) < 0)
                part[l].u[part[l].n++] = t / sh->span[l];
        }
    }
    /* bottom up: alpha and R of every cut node */
    for (uint32_t l = 1; l <= top; l++)
        for (int i = 0; i < part[l].n; i++) {
            uint64_t c0 = part[l].u[i] * sh->f;
            uint64_t c1 = c0 + sh->f < sh->width[l - 1] ? c0 + sh->f : sh->width[l - 1];
            double sa = 0.0, s = 0.0, r = 0.0, alpha;
            np = smooth_pieces(sh, c, &part[l - 1], l - 1, c0, c1, pc);
            for (int k = 0; k < np; k++) {
                sa += (double)pc[k].n * pc[k].alpha * pc[k].var;
                s += (double)pc[k].n * pc[k].var;
            }
            alpha = sa / s;
            for (int k = 0; k < np; k++) {
                double d = pc[k].alpha - alpha;
                r += pc[k].r + (double)pc[k].n * pc[k].var * d * d;
            }
            part[l].alpha[i] = alpha;
            part[l].r[i] = r;
        }
    /* the top level: independent nodes */
    np = smooth_pieces(sh, c, &part[top], top, 0, sh->width[top], pc);
    for (int k = 0; k < np; k++) {
        double cov = pc[k].alpha * pc[k].var, a = (cov < 0.0 ? -cov : cov) * pc[k].mf;
        var += (double)pc[k].n * pc[k].alpha * cov + pc[k].r;
        mx = a > mx ? a : mx;
        if (pc[k].part >= 0)
            part[top].cov[pc[k].part] = cov;
    }
    /* top down: the weights of the cut nodes' children */
    for (uint32_t l = top; l >= 1; l--)
        for (int i = 0; i < part[l].n; i++) {
            uint64_t c0 = part[l].u[i] * sh->f;
            uint64_t c1 = c0 + sh->f < sh->width[l - 1] ? c0 + sh->f : sh->width[l - 1];
            double s = 0.0;
            np = smooth_pieces(sh, c, &part[l - 1], l - 1, c0, c1, pc);
            for (int k = 0; k < np; k++)
                s += (double)pc[k].n * pc[k].var;
            for (int k = 0; k < np; k++) {
                double cov = pc[k].var / s * part[l].cov[i]
                             + pc[k].var * (pc[k].alpha - part[l].alpha[i]);
                double a = (cov < 0.0 ? -cov : cov) * pc[k].mf;
                mx = a > mx ? a : mx;
                if (pc[k].part >= 0)
                    part[l - 1].cov[pc[k].part] = cov;
            }
        }
    *sumsq = var;
    *maxabs = mx;
}

/* ---- kary counter (tree="kary").  P(t) is the counter's release at time
 * t: the true prefix plus the noise terms in use, which Algorithm 2 of APT
 * (counters.c) keeps per level l in slots 0 .. |d_l| - 1, d_l the offset
 * base-k digit of t.  A term is drawn when its slot enters use and kept
 * while the digits above l stay the same and the slot stays in use; slots
 * of negative and positive digits are different draws (a carry redraws all
 * of a level, then |d| falls to 0 before it grows again).  So the term at
 * (l, slot j) is identified by (l, j, sign d_l, the digits above l), and
 * sum_j beta_j P(t_j) has at slot j of a group of t's agreeing on the
 * last two the coefficient sum of beta over the group's |d_l| > j. */
typedef struct {
    int64_t high;
    int sign;
    int64_t mag;
    double beta;
} kary_term;

static void kary_weights(uint32_t k, const prefix_combo *c, double *sumsq,
                         double *maxabs)
{
    int64_t x[6], half = (int64_t)(k - 1) / 2;
    double s = 0.0, mx = 0.0;
    int live = c->n;
    for (int j = 0; j < c->n; j++)
        x[j] = (int64_t)c->t[j];   /* t <= m < 2^62 */
    while (live > 0) {
        kary_term tm[6];
        int n = 0;
        live = 0;
        for (int j = 0; j < c->n; j++) {
            int64_t d = (x[j] + half) % (int64_t)k - half;
            x[j] = (x[j] - d) / (int64_t)k;
            live += x[j] != 0;
            if (d != 0)
                tm[n++] = (kary_term){x[j], d > 0 ? 1 : -1, d > 0 ? d : -d, c->beta[j]};
        }
        /* group by (high, sign), ascending |d| */
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0; j--) {
                kary_term *a = &tm[j - 1], *b = &tm[j];
                int later = a->high > b->high || (a->high == b->high && (a->sign > b->sign
                            || (a->sign == b->sign && a->mag > b->mag)));
                if (!later)
                    break;
                kary_term t = *a;
                *a = *b;
                *b = t;
            }
        for (int i = 0; i < n;) {
            int e = i;
            int64_t prev = 0;
            while (e < n && tm[e].high == tm[i].high && tm[e].sign == tm[i].sign)
                e++;
            for (int a = i; a < e; a++) {
                double coef = 0.0, ac;
                for (int b = a; b < e; b++)
                    coef += tm[b].beta;
                /* slots prev .. |d_a| - 1 are used by members a .. e-1 */
                s += (double)(tm[a].mag - prev) * coef * coef;
                ac = coef < 0.0 ? -coef : coef;
                if (tm[a].mag > prev && ac > mx)
                    mx = ac;
                prev = tm[a].mag;
            }
            i = e;
        }
    }
    *sumsq = s;
    *maxabs = mx;
}

enum { NOISE_RAW = 0, NOISE_CONSISTENT = 1, NOISE_KARY = 2 };

static pds_status interval_noise(int kind, uint64_t m, uint32_t fanout,
                                 const pds_level_weights *lw,
                                 const uint64_t *ends, const uint64_t *lo,
                                 const uint64_t *hi, const uint64_t *seg_lo,
                                 const uint64_t *seg_hi, size_t count,
                                 int estimator, int all_corners, double *sumsq,
                                 double *maxabs)
{
    smooth_shape sh;
    uint32_t levels = 1;
    uint64_t total;
    int st;
    if (!pds_tree_answer_args_ok(m, ends, lo, hi, seg_lo, seg_hi, count, estimator, 0.0,
                        sumsq) || (count > 0 && maxabs == NULL)
        || (all_corners != 0 && all_corners != 1))
        return PDS_EINVAL;
    if (kind == NOISE_KARY) {
        if (fanout < 3 || fanout > PDS_MAX_COUNTER_FANOUT || !(fanout & 1)
            || m >= PDS_TREE_SEGMENT_LIMIT)
            return PDS_EINVAL;
    } else {
        st = pds_tree_shape(m, fanout, &levels, &total);
        if (st != PDS_OK)
            return st;
        if (!pds_tree_levels_ok(lw, levels))
            return PDS_EINVAL;
        if (kind == NOISE_CONSISTENT)
            smooth_init(&sh, m, fanout, levels, lw);
    }
    for (size_t q = 0; q < count; q++) {
        pds_interval_plan p;
        int corners;
        st = pds_tree_plan_query(m, ends, lo[q], hi[q], seg_lo[q], seg_hi[q], estimator, &p);
        if (st != PDS_OK)
            return st;
        corners = all_corners && has_clip(&p) ? 4 : 1;
        for (int j = 0; j < corners; j++) {
            int corner = corners == 4 ? j : 3;
            prefix_combo c;
            double *s = &sumsq[4 * q + (corners == 4 ? j : 0)];
            double *mx = &maxabs[4 * q + (corners == 4 ? j : 0)];
            if (kind == NOISE_RAW) {
                raw_weights(m, fanout, levels, lw, &p, corner, s, mx);
                continue;
            }
            plan_combo(&p, corner, &c);
            if (kind == NOISE_CONSISTENT)
                consistent_weights(&sh, &c, s, mx);
            else
                kary_weights(fanout, &c, s, mx);
        }
        for (int j = corners; j < 4; j++) {
            sumsq[4 * q + j] = sumsq[4 * q];
            maxabs[4 * q + j] = maxabs[4 * q];
        }
    }
    return PDS_OK;
}

pds_status pds_interval_var_tree(uint64_t m, uint32_t fanout, int consistent,
                                 const uint64_t *ends, const uint64_t *lo,
                                 const uint64_t *hi, const uint64_t *seg_lo,
                                 const uint64_t *seg_hi, size_t count,
                                 int estimator, int all_corners, double *sumsq,
                                 double *maxabs)
{
    if (consistent != 0 && consistent != 1)
        return PDS_EINVAL;
    return interval_noise(consistent ? NOISE_CONSISTENT : NOISE_RAW, m, fanout, PDS_TREE_UNIT_LEVELS,
                          ends, lo, hi, seg_lo, seg_hi, count, estimator,
                          all_corners, sumsq, maxabs);
}

pds_status pds_interval_var_tree_levels(uint64_t m, uint32_t fanout, int consistent,
                                        const double *rho, const double *fac,
                                        uint32_t n_levels, const uint64_t *ends,
                                        const uint64_t *lo, const uint64_t *hi,
                                        const uint64_t *seg_lo, const uint64_t *seg_hi,
                                        size_t count, int estimator, int all_corners,
                                        double *sumsq, double *maxabs)
{
    pds_level_weights lw = {rho, fac, n_levels};
    if ((consistent != 0 && consistent != 1) || rho == NULL || fac == NULL)
        return PDS_EINVAL;
    return interval_noise(consistent ? NOISE_CONSISTENT : NOISE_RAW, m, fanout, &lw,
                          ends, lo, hi, seg_lo, seg_hi, count, estimator,
                          all_corners, sumsq, maxabs);
}

pds_status pds_interval_var_kary(uint64_t m, uint32_t k, const uint64_t *ends,
                                 const uint64_t *lo, const uint64_t *hi,
                                 const uint64_t *seg_lo, const uint64_t *seg_hi,
                                 size_t count, int estimator, int all_corners,
                                 double *sumsq, double *maxabs)
{
    return interval_noise(NOISE_KARY, m, k, PDS_TREE_UNIT_LEVELS, ends, lo, hi, seg_lo, seg_hi, count,
                          estimator, all_corners, sumsq, maxabs);
}

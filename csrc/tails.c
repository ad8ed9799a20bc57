/* Chernoff tails of weighted sums of discrete Laplace noise, one query at a
 * time: the per-query error bars (pydp_synopsis/tails.py).  Floating point
 * on purpose: these numbers describe accuracy and decide nothing released.
 *
 * For S = sum_g sum_i w_gi Z_gi with independent discrete Laplace Z_gi of
 * scale b_g (pmf proportional to exp(-|z| / b_g)), sum_i w_gi^2 <= V_g and
 * |w_gi| <= s_g: log M_b(x) = 2 log(1 - p) - log(1 - p e^x) - log(1 - p e^-x)
 * (p = e^(-1/b), |x| < 1/b; Canonne, Kamath, Steinke 2020) is even and
 * log M(x) / x^2 grows with |x|, so sum_i log M(lam w_i) <= (V / s^2)
 * log M(lam s) and
 *     P(S >= t) <= exp(sum_g (V_g / s_g^2) log M_g(lam s_g) - lam t)
 * for every lam in (0, min_g 1 / (b_g s_g)).  The smallest t with right
 * side delta is t(lam) = (K(lam) + log(1/delta)) / lam, K convex with
 * K(0) = 0: t is unimodal in lam, its minimum where lam K'(lam) - K(lam)
 * = log(1/delta), found by a bracketed Newton iteration; any lam gives a
 * valid bound. */
#include <math.h>
#include <stdint.h>
#include <stddef.h>

#include "internal.h"

enum { TAIL_STEPS = 60 };

/* One noise group: g = 1/b, p = e^-g, q2 = (1 - p)^2. */
typedef struct {
    double g, p, q2;
} tail_group;

/* K(lam) = sum_g r_g log M_g(lam s_g) (r = V / s^2) and its first two
 * derivatives.  With x = lam s, sh = sinh(x / 2): (1 - p e^x)(1 - p e^-x)
 * = D = (1 - p)^2 (1 - u), u = 4 p sh^2 / (1 - p)^2, so log M = -log1p(-u)
 * (precise for small x and large scales), (log M)' = 2 p sinh x / D,
 * (log M)'' = (2 p cosh x D + 4 p^2 sinh^2 x) / D^2. */
static void cumulant(double lam, uint32_t groups, const tail_group *t, const double *r,
                     const double *s, double *k, double *k1, double *k2)
{
    *k = *k1 = *k2 = 0.0;
    for (uint32_t j = 0; j < groups; j++) {
        if (r[j] <= 0.0)
            continue;
        double x = lam * s[j], sh = sinh(0.5 * x), ch = cosh(0.5 * x);
        double sx = 2.0 * sh * ch, cx = 1.0 + 2.0 * sh * sh;
        double u = 4.0 * t[j].p * sh * sh / t[j].q2, d = t[j].q2 * (1.0 - u);
        *k -= r[j] * log1p(-u);
        *k1 += r[j] * s[j] * 2.0 * t[j].p * sx / d;
        *k2 += r[j] * s[j] * s[j] * (2.0 * t[j].p * cx * d + 4.0 * t[j].p * t[j].p * sx * sx)
               / (d * d);
    }
}

pds_status pds_laplace_weighted_tail(size_t count, uint32_t groups, const double *scale,
                                     const double *sumsq, const double *maxabs,
                                     const double *log_inv, double *out)
{
    tail_group t[PDS_TAIL_MAX_GROUPS];
    if (groups == 0 || groups > PDS_TAIL_MAX_GROUPS || scale == NULL)
        return PDS_EINVAL;
    if (count > 0 && (sumsq == NULL || maxabs == NULL || log_inv == NULL || out == NULL))
        return PDS_EINVAL;
    for (uint32_t j = 0; j < groups; j++) {
        if (!(scale[j] > 0.0 && scale[j] < INFINITY))
            return PDS_EINVAL;
        t[j].g = 1.0 / scale[j];
        t[j].p = exp(-t[j].g);
        t[j].q2 = expm1(-t[j].g) * expm1(-t[j].g);
    }
    for (size_t q = 0; q < count; q++) {
        const double *v = sumsq + q * groups;
        double r[PDS_TAIL_MAX_GROUPS], s[PDS_TAIL_MAX_GROUPS], lam_max = INFINITY, var = 0.0;
        double L = log_inv[q], lo = 0.0, hi, lam, k, k1, k2;
        if (!(L > 0.0 && L < INFINITY))
            return PDS_EINVAL;
        for (uint32_t j = 0; j < groups; j++) {
            double sj = maxabs[q * groups + j];
            if (!(v[j] >= 0.0 && v[j] < INFINITY && sj >= 0.0 && sj < INFINITY))
                return PDS_EINVAL;
            /* s >= sqrt(V / n) > 0 when V > 0; guard a max that underflowed */
            s[j] = sj > sqrt(v[j]) * 1e-12 ? sj : sqrt(v[j]) * 1e-12;
            r[j] = v[j] > 0.0 ? v[j] / (s[j] * s[j]) : 0.0;
            if (v[j] > 0.0) {
                var += v[j] * 2.0 * t[j].p / t[j].q2;
                if (t[j].g / s[j] < lam_max)
                    lam_max = t[j].g / s[j];
            }
        }
        if (lam_max == INFINITY) {
            out[q] = 0.0;          /* no noise */
            continue;
        }
        /* the optimal lam solves h(lam) = lam K' - K = L (t(lam) = (K + L) / lam
         * has t' = (h - L) / lam^2, h increasing from 0): Newton's method kept
         * inside a shrinking bracket, from the Gaussian guess sqrt(2 L / var) */
        hi = lam_max * (1.0 - 1e-12);
        lam = sqrt(2.0 * L / var);
        if (!(lam < hi))
            lam = 0.5 * hi;
        for (int i = 0; i < TAIL_STEPS; i++) {
            double h, step;
            cumulant(lam, groups, t, r, s, &k, &k1, &k2);
            h = lam * k1 - k;
            if (h < L)
                lo = lam;
            else
                hi = lam;
            if (fabs(h - L) <= 1e-8 * L)     /* t is flat at its minimum: error ~1e-16 */
                break;
            step = lam + (L - h) / (lam * k2);
            lam = step > lo && step < hi ? step : 0.5 * (lo + hi);
        }
        cumulant(lam, groups, t, r, s, &k, &k1, &k2);
        /* valid at any lam in (0, lam_max); the factor absorbs the float
         * evaluation's rounding (relative error far below 1e-9) */
        out[q] = (k + L) / lam * (1.0 + 1e-9);
    }
    return PDS_OK;
}

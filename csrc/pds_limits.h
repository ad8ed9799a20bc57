/* pydp_synopsis C core: every kernel's limits, in one place.  Named
 * pds_limits.h, not limits.h: csrc/ is on the include path, where a
 * limits.h would shadow the standard one.
 *
 * Private (included by the .c files; build.py feeds only pydp_synopsis.h to
 * cffi's cdef()), so it may use macros.  Python reads these values through
 * pds_get_limits() (limits.c) as pydp_synopsis._core.LIMITS instead of
 * retyping them.  Naming: PDS_MAX_* are inclusive maxima (x <= max), the
 * *_LIMIT are exclusive bounds (x < limit).
 */
#ifndef PDS_LIMITS_H
#define PDS_LIMITS_H

#include <stdint.h>

/* Rational parameters -- noise scales t/s, probabilities num/den: every
 * part < 2^62, so products with small factors and sums stay in 64 bits. */
#define PDS_PARAM_LIMIT ((uint64_t)1 << 62)

/* noise.c: discrete Laplace fills (pds_dlap_*) of scale t/s <= this use
 * the inversion sampler; larger scales keep CKS Algorithm 2 (see noise.c). */
#define PDS_DLAP_FAST_MAX_SCALE ((uint64_t)1 << 30)
/* noise.c: draws per chunk of a chunked fill (pds_dlap_fill_chunks): chunk c
 * draws from block c * 2^32 of the fill stream. */
#define PDS_DLAP_CHUNK ((uint64_t)1 << 16)

/* counters.c: a counter's horizon T, 1 <= T <= 2^63 - 1 (the shape
 * computation needs 2T to fit uint64). */
#define PDS_MAX_HORIZON (((uint64_t)1 << 63) - 1)
/* counters.c: a counter's prefix sum; partition.c: an open segment's count.
 * 0 <= count <= 2^62. */
#define PDS_MAX_COUNT ((int64_t)1 << 62)
/* counters.c: odd fanout k <= 65535, keeping the state small (a level holds
 * (k - 1) / 2 noise terms). */
#define PDS_MAX_COUNTER_FANOUT ((uint64_t)65535)

/* partition.c: the threshold T, 0 <= T <= 2^53 (exact in a double). */
#define PDS_MAX_THRESHOLD ((int64_t)1 << 53)
/* partition.c: a noisy threshold's noise |Z| <= 2^61 (beyond: PDS_ERANGE,
 * probability exp(-2^61 / b)), which keeps every later sum inside int64. */
#define PDS_MAX_NOISE ((int64_t)1 << 61)

/* tree.c: m < 2^62 segments, fanout 2 .. 2^24, so at most 62 <= 64 levels. */
#define PDS_TREE_SEGMENT_LIMIT ((uint64_t)1 << 62)
#define PDS_MAX_TREE_FANOUT ((uint32_t)1 << 24)
enum { PDS_TREE_MAX_LEVELS = 64 };

/* multitree.c and grid.c: c <= 8 axes. */
enum { PDS_MAX_AXES = 8 };
/* multitree.c: m[a] < 2^32 segments per axis (segment ids are uint32), so
 * with k >= 2 an axis tree has <= 32 levels (arrays hold 33); n < 2^32
 * points (point ids are uint32); max_records <= 2^40. */
#define PDS_MT_SEGMENT_LIMIT ((uint64_t)1 << 32)
#define PDS_MT_POINT_LIMIT ((uint64_t)1 << 32)
#define PDS_MT_MAX_RECORDS ((uint64_t)1 << 40)
enum { PDS_MT_MAX_LEVELS = 33 };

/* tails.c: noise groups (distinct scales) of one weighted sum. */
enum { PDS_TAIL_MAX_GROUPS = 8 };

_Static_assert(PDS_TREE_SEGMENT_LIMIT <= ((uint64_t)1 << (PDS_TREE_MAX_LEVELS - 1)),
               "a tree of fanout >= 2 has at most PDS_TREE_MAX_LEVELS levels");
_Static_assert(PDS_MT_SEGMENT_LIMIT <= ((uint64_t)1 << (PDS_MT_MAX_LEVELS - 1)),
               "an axis tree of fanout >= 2 fits PDS_MT_MAX_LEVELS levels");
_Static_assert(PDS_MT_SEGMENT_LIMIT <= PDS_TREE_SEGMENT_LIMIT,
               "an axis tree is a tree.c tree");

#endif /* PDS_LIMITS_H */

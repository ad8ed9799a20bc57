/* pydp_synopsis C core: the one public header, everything Python can call.
 *
 * Declarations only -- no #include, no macros -- because build.py feeds this
 * file verbatim to cffi's cdef().  Every .c file includes <stdint.h> and
 * <stddef.h> before this header (through the private csrc/internal.h, which
 * also declares the helpers shared between .c files and includes
 * csrc/pds_limits.h).  All state lives in caller-owned structs;
 * there are no globals except constants and rng.c's count of forks (its
 * fork check; written only by a pthread_atfork child handler).  Functions
 * return a pds_status (PDS_OK = 0 on success) unless documented
 * otherwise -- the only others
 * are pds_strerror (a string), pds_multitree_free and pds_privtree_free (nothing); results
 * go to out-parameters.  pds_strerror() names a status.
 */

typedef enum {
    PDS_OK = 0,
    PDS_EINVAL = 1,      /* an argument is outside its documented range */
    PDS_EENTROPY = 2,    /* getrandom() failed: no OS entropy */
    PDS_ERANGE = 3,      /* a result would not fit in int64/uint64 */
    PDS_ENOMEM = 4,      /* an allocation failed */
    PDS_EPRECISION = 5,  /* an exact decision needs more precision than C has:
                            the caller resolves it (see partition.c) */
    PDS_EHORIZON = 6,    /* a stream went past its horizon / domain end */
    PDS_ESTATE = 7       /* a restored state is inconsistent */
} pds_status;

/* A static message for a status; never NULL (no error sentinel): codes
 * that are not a pds_status give "unknown status". */
const char *pds_strerror(int status);

/* ------------------------------------------------------------- limits.c --
 * The kernels' limits (csrc/pds_limits.h), for the Python layer to read
 * instead of retyping them.  max_* are inclusive maxima (x <= max),
 * *_limit are exclusive bounds (x < limit).
 */
typedef struct pds_limits {
    uint64_t param_limit;        /* every part of a rational parameter (noise
                                    scale t/s, probability num/den): 2^62 */
    uint64_t max_horizon;        /* a counter's horizon T: 2^63 - 1 */
    int64_t max_count;           /* a counter's prefix sum, a partition
                                    segment's count: 2^62 */
    uint64_t max_counter_fanout; /* counter fanout k: 65535 */
    int64_t max_threshold;       /* partition threshold T: 2^53 */
    int64_t max_noise;           /* |noise| of a partition's noisy threshold
                                    (larger draws: PDS_ERANGE): 2^61 */
    uint64_t tree_segment_limit; /* segments m of a tree.c tree: 2^62 */
    uint32_t max_tree_fanout;    /* tree.c fanout: 2^24 */
    uint32_t max_axes;           /* axes c of a multi-tree or grid: 8 */
    uint64_t multitree_segment_limit; /* segments m[a] per multi-tree axis: 2^32 */
    uint64_t multitree_point_limit;   /* points n of a multi-tree build: 2^32 */
    uint64_t max_multitree_records;   /* max_records of a multi-tree: 2^40 */
    uint64_t dlap_fast_max_scale;     /* pds_dlap fills of scale t/s up to this
                                         use inversion, larger ones CKS: 2^30 */
    uint64_t dlap_chunk;              /* draws per chunk of pds_dlap_fill_chunks:
                                         2^16 */
} pds_limits;

/* Fill *out; PDS_EINVAL if out is NULL. */
pds_status pds_get_limits(pds_limits *out);

/* ---------------------------------------------------------------- rng.c --
 * ChaCha20 (RFC 8439) keystream as a CSPRNG.  key = 32 bytes, nonce fixed
 * to zero, 64-bit block counter (low word = RFC counter word, high word =
 * first nonce word).  Eight blocks are generated per refill.
 */
typedef struct pds_rng {
    uint32_t key[8];
    uint64_t block;        /* index of the next block to generate */
    uint64_t buf[64];      /* 8 keystream blocks as little-endian uint64 */
    uint32_t pos;          /* next unread word of buf; 64 = empty */
    uint32_t half;         /* unread upper half of a word (if nhalf) */
    uint32_t nhalf;        /* 1 when half holds unread bits */
    uint64_t bits;         /* unread single bits for fair coins */
    uint32_t nbits;        /* how many bits of `bits` are unread */
    int32_t seeded;        /* 1: explicit seed (tests/benchmarks only) */
    int64_t pid;           /* process that owns the stream (fork check) */
    uint64_t fork_gen;     /* the process's fork generation when pid was last
                              found equal to getpid() (rng.c: the fork check
                              calls getpid() only when the generation moved) */
} pds_rng;

/* Seed from 32 bytes of getrandom(); PDS_EENTROPY on failure. */
pds_status pds_rng_init_os(pds_rng *rng);
/* Reproducible stream from a 32-byte key (tests and benchmarks only). */
pds_status pds_rng_init_key(pds_rng *rng, const uint8_t *key32);
/* The 32-byte key of child stream `index` of a generator: the ChaCha20 block
 * of the parent's key with nonce (index >> 32, 1, index mod 2^32), which the
 * parent's own stream (nonce (block >> 32, 0, 0)) never produces.  A child
 * is pds_rng_init_key of that key: keyed by (parent key, index), seekable
 * by block like any stream, independent of the parent's stream and of the
 * other children.  Reads the parent's key only: its position is unchanged.
 * For shards of a distributed build, each drawing from its own stream. */
pds_status pds_rng_derive(const pds_rng *parent, uint64_t index, uint8_t *key32);
/* n keystream words.  Every entry point that draws first reseeds from the
 * OS if the calling process is not the one that seeded (a fork()
 * happened), so a child never replays its parent's stream.  The check is a
 * load and a compare: getpid() runs only after a fork (see rng.c). */
pds_status pds_rng_fill_u64(pds_rng *rng, uint64_t *out, size_t n);
/* The key of a fill stream: draws two words F, G of rng (after the fork
 * check) and writes the first 32 bytes of block 0 of rng's key with nonce
 * (F >> 32, 2 + 4 (G mod 2^30), F mod 2^32) -- second nonce word 2 mod 4,
 * which neither rng's own stream (0) nor pds_rng_derive's children (1) ever
 * use.  A chunked fill (pds_dlap_fill_chunks) seeks into that stream, one
 * block range per chunk, so its result is a function of rng's state alone. */
pds_status pds_rng_split(pds_rng *rng, uint8_t *key32);
/* pds_rng_init_key of key32, positioned at block `block` (seeking), a
 * multiple of 8 (else PDS_EINVAL). */
pds_status pds_rng_init_at(pds_rng *rng, const uint8_t *key32, uint64_t block);
/* RFC 8439 section 2.3 block function, for the test vectors. */
pds_status pds_chacha20_block(const uint8_t *key32, uint32_t counter,
                              const uint8_t *nonce12, uint8_t *out64);

/* -------------------------------------------------------------- noise.c --
 * Exact samplers, integer arithmetic only (Canonne, Kamath, Steinke 2020,
 * "The Discrete Gaussian for Differential Privacy", section 5).
 * Rational parameters num/den need 1 <= den < 2^62 and 0 <= num < 2^62.
 */
/* Batch entry points: check the arguments and the fork (as rng.c does), then
 * fill out[0 .. count) with independent draws. */
/* Uniform on {0, ..., n - 1}, n >= 1 (any uint64). */
pds_status pds_uniform_fill(pds_rng *rng, uint64_t n, uint64_t *out, size_t count);
/* Bernoulli(num / den), num <= den. */
pds_status pds_bernoulli_frac_fill(pds_rng *rng, uint64_t num, uint64_t den,
                                   uint8_t *out, size_t count);
/* Bernoulli(exp(-num / den)). */
pds_status pds_bernoulli_exp_fill(pds_rng *rng, uint64_t num, uint64_t den,
                                  uint8_t *out, size_t count);
/* P(k) = (1 - e^{-g}) e^{-g k}, k >= 0, g = num/den > 0 (num >= 1);
 * saturates at UINT64_MAX, which has probability < 2^-60 for g >= 2^-50. */
pds_status pds_geometric_exp_fill(pds_rng *rng, uint64_t num, uint64_t den,
                                  uint64_t *out, size_t count);
/* Discrete Laplace, pmf proportional to exp(-|z| s / t) (scale t/s,
 * s >= 1), by CKS Algorithm 2: the draws of the C kernels' single-draw
 * sampler (trees, counters, partitions), in a batch. */
pds_status pds_discrete_laplace_fill(pds_rng *rng, uint64_t t, uint64_t s,
                                     int64_t *out, size_t count);

/* Discrete Laplace batch fills by inversion (the public sampler,
 * pydp_synopsis.discrete_laplace): one keystream word per draw, decided in
 * double only when rigorous error bounds settle it; otherwise the fill stops
 * with PDS_EPRECISION and the draw pending, Python decides its magnitude
 * exactly (pydp_synopsis/_exact.py, extending U with further words of the
 * same stream) and hands it to pds_dlap_resolve, and the fill continues.
 * Scales t/s above dlap_fast_max_scale use CKS Algorithm 2 (never pending).
 * Derivation and proof: csrc/noise.c. */
typedef struct pds_dlap {
    uint64_t t, s;          /* scale t/s, 1 <= t, s < 2^62 */
    int32_t fast;           /* 1: inversion; 0: CKS Algorithm 2 */
    int32_t pending;        /* 1: out[next] waits for pds_dlap_resolve */
    uint64_t next;          /* index of out the fill continues at */
    uint64_t pending_word;  /* the keystream word of the pending draw: sign
                               = top bit, U in [u 2^-63, (u+1) 2^-63) from
                               the low 63 bits u */
    uint64_t stream;        /* chunked fills: 1 + the chunk whose stream the
                               chunk generator holds (0: none) */
    double slack;           /* error allowance per elementary function */
    double slack_ld;        /* the same for the long double tier */
    double b;               /* t/s in double */
    double k_lo, k_hi;      /* bounds of K = (t/s) ln(2 / (1 + e^{-s/t})) */
    double margin_rel;      /* the margin of y: margin_rel * (A + k_hi) */
    double margin_abs;      /*                  + margin_abs            */
    long double bl, kl_lo, kl_hi, ml_rel, ml_abs;   /* the same in long double */
} pds_dlap;

/* Start a fill of scale t/s at index 0 (1 <= t, s < 2^62, else PDS_EINVAL;
 * draws nothing). */
pds_status pds_dlap_init(pds_dlap *d, uint64_t t, uint64_t s);
/* Test hook: error allowances per elementary function of the double tier
 * (default and minimum 1e-12) and of the long double tier (default and
 * minimum 1e-12 2^(53 - LDBL_MANT_DIG); 0 keeps it).  Above 2^-10 a tier
 * decides nothing: with both, every draw is pending. */
pds_status pds_dlap_set_slack(pds_dlap *d, double slack, double slack_ld);
/* Fill out[d->next .. end) from rng (checks the fork first): PDS_OK, or
 * PDS_EPRECISION with out[d->next] pending (then pds_dlap_resolve and call
 * again; further words of the pending draw come from the same rng). */
pds_status pds_dlap_fill(pds_dlap *d, pds_rng *rng, int64_t *out, uint64_t end);
/* The same for a chunked fill: draw i belongs to chunk c = i / dlap_chunk,
 * whose draws come from the stream of key32 (pds_rng_split) from block
 * c * 2^32 on (end <= dlap_chunk * 2^32, else PDS_ESTATE); *chunk_rng holds the current chunk's stream (and gives the
 * further words of a pending draw).  Any split of [0, count) into ranges
 * gives the same draws. */
pds_status pds_dlap_fill_chunks(pds_dlap *d, pds_rng *chunk_rng, const uint8_t *key32,
                                int64_t *out, uint64_t end);
/* Write the pending draw, out[d->next] = +-magnitude (the sign of
 * pending_word), and move on.  PDS_ESTATE if nothing is pending. */
pds_status pds_dlap_resolve(pds_dlap *d, int64_t *out, uint64_t magnitude);

/* ---------------------------------------------------------- partition.c --
 * DNRR Fig. 1 private partition (online), with the exact skip of Remark 2.2
 * over runs of positions whose running count is constant.  Positions are
 * uint64 offsets 0..last from the domain's low end (last = D - 1, so D may be
 * 2^64).  Noise is discrete Laplace of scale t/s (= 1/epsilon).
 */
typedef struct pds_partition {
    uint64_t last;            /* offset of the domain's last position, D - 1 */
    uint64_t t, s;            /* noise scale 1/epsilon = t/s, 1 <= t, s < 2^62 */
    int64_t threshold;        /* T (an integer, see partition.py) */
    int64_t noisy_threshold;  /* T~ = T + Z of the open segment */
    int64_t count;            /* count of the open segment, saturated at 2^62 */
    uint64_t position;        /* next position to process (offset) */
    int32_t finished;         /* 1 once the last position has sealed */
    /* The batch being sampled (it starts at `position`; one run, or several
     * consecutive runs sampled at the rate of the last by thinning): */
    int32_t phase;            /* 0 none; 1 deciding whether the batch has a
                                 candidate; 2 drawing the candidate's high
                                 offset bits (high to low); 3 drawing its low
                                 block; 4 deciding whether to keep the low
                                 block low_value */
    int32_t bit;              /* phase 2: index of the next offset bit */
    int32_t pending;          /* 1: a comparison awaits an exact decision */
    int32_t pending_kind;     /* 1: U < 1 - (1-p)^mult;  2: U < 1/(1 + (1-p)^-mult) */
    int32_t outcome;          /* -1, or the exact decision given by resolve */
    int64_t run_m;            /* m = T~ - count + 1 of the batch's last run:
                                 the rate p = P(nu >= m) */
    uint64_t run_lm1;         /* the batch's length (positions) minus one */
    uint64_t prefix;          /* phases 2-4: offset bits drawn so far */
    uint64_t pending_mult;    /* the comparison's multiplier of lambda */
    uint64_t pending_word;    /* first 64 bits of the comparison's uniform U */
    uint64_t batch_items;     /* phases 1-4: the entries of pos[] (after the
                                 consumed ones) inside the batch, whose counts
                                 are not yet added */
    uint64_t low_value;       /* phase 4: the low block's proposal */
    int32_t low_bits;         /* phases 2-4: size of the low block */
    uint32_t batch_cap;       /* policy: at most this many entries of pos[]
                                 in a batch after its first run (0: every
                                 batch is one run) */
    double batch_limit;       /* policy: a batch of N < 2^(h+1) positions and
                                 last run m keeps 2^(h+1) p(m) <= batch_limit */
    double batch_limit_used;  /* the batch_limit batch_mreq was filled for */
    double block_limit;       /* policy: a low block of k bits keeps
                                 2^k * 2 tail(m) <= block_limit */
    int64_t batch_dmax;       /* the count may grow by at most this much
                                 inside a batch (dmax * s < 2^63) */
    int32_t more_items;       /* set by the caller: 1 when entries beyond
                                 pos[n) (at positions > end) will follow; the
                                 call then stops, at phase 0, before a batch
                                 that could reach them (fewer than batch_cap
                                 entries left), so a stream fed in chunks is
                                 sampled as if fed at once */
    uint64_t stat_batches;    /* for tests: batches of more than one run, */
    uint64_t stat_dropped;    /* candidates dropped by thinning, */
    uint64_t stat_blocks;     /* low-block proposals (never read by the kernel) */
    double run_lambda;        /* -ln(1-p) of the run, rounded */
    double run_err;           /* relative error bound of run_lambda (< 0: none) */
    double slack;             /* relative error allowed for elementary functions
                                 (tests may raise it to force the exact fallback) */
    double inv_scale;         /* s/t rounded */
    double log1p_a;           /* log1p(exp(-s/t)) rounded */
    double tail_lo[64];       /* tail_lo[j] >= a^j / (1 + a), a = e^{-s/t} */
    double tail_hi[256];      /* tail_hi[h] >= a^(64 h) */
    int64_t batch_mreq[64];   /* policy: the least m of a batch's last run when
                                 N < 2^(h+1) (from batch_limit, in double) */
} pds_partition;

/* Start a partition of positions 0..last; draws the first T~.
 * threshold in [0, 2^53]. */
pds_status pds_partition_init(pds_partition *p, pds_rng *rng, uint64_t last,
                              uint64_t t, uint64_t s, int64_t threshold);
/* Rebuild a partition from a checkpoint without drawing anything; PDS_ESTATE
 * if the fields are inconsistent. */
pds_status pds_partition_restore(pds_partition *p, uint64_t last, uint64_t t,
                                 uint64_t s, int64_t threshold,
                                 int64_t noisy_threshold, int64_t count,
                                 uint64_t position, int32_t finished);
/* Process positions p->position .. end (inclusive, end <= last).  The
 * positions pos[0..n) (non-decreasing, each in [p->position, end]) carry
 * counts cnt[i] >= 0 (cnt == NULL: 1 each, duplicates allowed); every other
 * position carries 0.  Sealed positions are appended to seals (at most cap
 * of them; the call stops early when seals is full).  *consumed = number of
 * items whose counts are added (those with pos < p->position, and while a
 * batch is being sampled -- p->phase != 0 -- those at p->position; the
 * batch's later items are not, see partition.c).  Returns PDS_OK (done,
 * seals full, or with p->more_items stopped before a batch that could
 * reach later entries: compare p->position with end and *nseals with cap),
 * PDS_EPRECISION (p->pending
 * set: decide it exactly, call pds_partition_resolve, then call again with
 * the items not yet consumed and the same end; other items give
 * PDS_EINVAL),
 * PDS_EINVAL, PDS_ERANGE (a noisy threshold's noise beyond 2^61, probability
 * exp(-2^61 s/t)).  The open segment's count saturates at 2^62 (it never
 * fails on the data: see partition.c). */
pds_status pds_partition_feed(pds_partition *p, pds_rng *rng, const uint64_t *pos,
                              const int64_t *cnt, size_t n, uint64_t end,
                              size_t *consumed, uint64_t *seals, size_t cap,
                              size_t *nseals);
/* Record the exact outcome (0 or 1) of the pending comparison; the next
 * pds_partition_feed call continues from it.  Draws nothing. */
pds_status pds_partition_resolve(pds_partition *p, int32_t outcome);

/* ----------------------------------------------------------- counters.c --
 * Continual counters (Andersson, Pagh, Torkamani): fanout k in 2..65535
 * with digits [low, low + k - 1]: standard digits [0, k-1] without
 * subtraction (Algorithm 1; k = 2 is the binary tree of their section 3.1),
 * offset digits with subtraction ([-(k-1)/2, (k-1)/2] for odd k: Algorithm
 * 2; [-k/2+1, k/2] for even k: Appendix A.3).  The caller owns the struct
 * and the three arrays (sizes from pds_counter_layout) and keeps them
 * alive.  Release at time t = prefix + noise, noise = sum of the terms in
 * use.  New terms come from a pool of pre-drawn noise (first in, first out)
 * so that a step's duration does not depend on the noise it releases; see
 * counters.c for the argument.
 */
typedef struct pds_counter {
    uint64_t horizon;      /* T: number of updates allowed */
    uint64_t time;         /* updates done so far */
    uint64_t fanout;       /* k >= 2 */
    uint64_t scale_t;      /* noise scale = scale_t / scale_s = h / epsilon */
    uint64_t scale_s;
    int64_t prefix;        /* true prefix sum, 0 <= prefix <= 2^62 */
    int64_t noise;         /* sum of the noise terms in use */
    int32_t subtraction;   /* 1: offset digits (Algorithm 2 / A.3); 0: standard */
    int32_t low;           /* smallest digit (0 or negative) */
    int32_t high;          /* largest digit, low + k - 1: the slots per level */
    int32_t height;        /* h */
    int32_t capacity;      /* slots: h * high */
    int32_t failed;        /* 1 after PDS_ERANGE: refuses further updates */
    int32_t *digits;       /* h digits of time, level 1 first */
    int64_t *slots;        /* level l (0-based) owns slots[l*high .. l*high+high-1];
                              the first |digits[l]| are in use, others 0 */
    int64_t *pool;         /* pre-drawn terms, next to use: pool[pool_next .. pool_end) */
    int32_t pool_capacity; /* pool_low + min(256, T) */
    int32_t pool_low;      /* the most terms one step takes, (h-1)|low| + 1:
                              the pool is refilled below it */
    int32_t pool_next;
    int32_t pool_end;
    int64_t pool_pid;      /* process that drew the pool (a forked child drops it) */
    int64_t peak;          /* max(0, every release so far): the monotone release
                              (public); kept here so that an update's work does not
                              depend on whether its release is a new maximum */
} pds_counter;

/* Height h, slot count, pool size and pool low-water mark for a fanout,
 * digit set and horizon (1 <= T < 2^63); pool_capacity and pool_low may be
 * NULL.  PDS_EINVAL for k outside 2..65535 or subtraction not 0/1. */
pds_status pds_counter_layout(uint64_t fanout, int32_t subtraction, uint64_t horizon,
                              int32_t *height, int32_t *capacity, int32_t *pool_capacity,
                              int32_t *pool_low);
/* pds_counter_layout with subtraction = 1 (for k = 2: the binary tree). */
pds_status pds_counter_shape(uint64_t fanout, uint64_t horizon, int32_t *height,
                             int32_t *capacity);
/* Start at time 0 with an empty pool; the sizes must equal
 * pds_counter_layout's.  Draws nothing. */
pds_status pds_counter_init(pds_counter *c, uint64_t fanout, int32_t subtraction,
                            uint64_t horizon, uint64_t scale_t, uint64_t scale_s,
                            int32_t *digits, int64_t *slots, int64_t *pool,
                            int32_t height, int32_t capacity, int32_t pool_capacity);
/* Validate a restored state (digits represent time, noise = sum of the
 * slots in use, unused slots zero, pool indices in range): PDS_OK or
 * PDS_ESTATE. */
pds_status pds_counter_check(const pds_counter *c);
/* Draw the pool full if fewer than pool_low terms remain (before the first
 * release: see counters.c); PDS_ESTATE on a failed counter. */
pds_status pds_counter_fill_pool(pds_counter *c, pds_rng *rng);
/* Restore the pool of a checkpoint: values[0..n) are used first.  Draws
 * nothing (rng only marks the pool as this process's). */
pds_status pds_counter_set_pool(pds_counter *c, pds_rng *rng, const int64_t *values,
                                int32_t n);
/* n updates: out[i] = noisy prefix sum after xs[i]; c->peak follows the
 * largest release.  The whole batch is checked first (PDS_EHORIZON past the
 * horizon, PDS_EINVAL for x < 0, PDS_ERANGE if the prefix would pass 2^62),
 * so on error nothing changed. */
pds_status pds_counter_update_many(pds_counter *c, pds_rng *rng, const int64_t *xs,
                                   int64_t *out, size_t n);
/* pds_counter_update_many of the one item x (the same checks, statuses,
 * draws and release), the release in *release: the one-item entry of
 * update(x), which passes x by value.  PDS_EINVAL for release NULL. */
pds_status pds_counter_update_one(pds_counter *c, pds_rng *rng, int64_t x, int64_t *release);
/* Offset of the item passed to pds_counter_update_item: update(x) passes
 * x + PDS_COUNTER_ITEM_BIAS, so that every item in [0, 2^30 - 1024) reaches C
 * as a one-digit CPython int above the cached range (0 and 1 alike: the
 * same interpreter paths; see counters.c, "Timing against the item"). */
enum { PDS_COUNTER_ITEM_BIAS = 1024 };
/* What pds_counter_update_item writes: the release, or why it refused. */
typedef struct pds_counter_output {
    int64_t release;       /* the release after the item (when true is returned) */
    pds_status status;     /* PDS_OK after a release, else pds_counter_update_one's status */
} pds_counter_output;
/* pds_counter_update_one of the item x = biased - PDS_COUNTER_ITEM_BIAS,
 * which must lie in [0, max_item] (else status PDS_EINVAL, nothing changed;
 * also for max_item < 0).  Returns true after a release (out->release),
 * false otherwise (out->status): a bool, so the caller reads no status int
 * (CPython's cached 0, which an item 0 shares) and the range check runs in
 * C with a branch that goes the same way for every item in range.  out must
 * not be NULL. */
_Bool pds_counter_update_item(pds_counter *c, pds_rng *rng, int64_t biased, int64_t max_item,
                              pds_counter_output *out);

/* --------------------------------------------------------------- tree.c --
 * DNRR section 3.2: a noisy tree of fanout f (2 <= f <= 2^24; f = 2 is
 * DNRR's binary tree) over the m segments of a private partition.  Level 0
 * holds the m segments (leaves); level l holds ceil(m / f^l) nodes, node u
 * covering segments [u f^l, min((u+1) f^l, m)).  Levels 0 .. levels-1 are
 * materialised and noised, levels = max(1, ceil(log_f m)): the root is never
 * part of a minimal cover -- the whole range is its children -- so it is
 * neither stored nor noised, and one item changes exactly `levels` released
 * counts (L1 sensitivity = levels).  Nodes are stored level by level, leaves
 * first, in one int64 array of pds_tree_shape()'s `nodes` entries.
 * Segment ranges [i, j] are 0-based and inclusive.
 */
/* levels and node count of the tree over m >= 1 segments (m < 2^62). */
pds_status pds_tree_shape(uint64_t m, uint32_t fanout, uint32_t *levels, uint64_t *nodes);
/* nodes[] = true node counts from the m segment counts (all >= 0) plus
 * independent discrete Laplace noise of scale t/s on every node
 * (t/s = levels / epsilon_t for epsilon_t-DP).  t = 0 adds no noise (tests).
 * PDS_ERANGE if a count or noisy count leaves int64. */
pds_status pds_tree_build(pds_rng *rng, const int64_t *counts, uint64_t m,
                          uint32_t fanout, uint64_t t, uint64_t s, int64_t *nodes,
                          uint64_t n_nodes);
/* The same with level l's nodes noised at scale t[l]/s[l] (n_levels =
 * pds_tree_shape's levels; every t[l], s[l] in [1, 2^62)): one item changes
 * one node per level by 1, so the release is sum_l s[l]/t[l]-DP. */
pds_status pds_tree_build_levels(pds_rng *rng, const int64_t *counts, uint64_t m,
                                 uint32_t fanout, const uint64_t *t, const uint64_t *s,
                                 uint32_t n_levels, int64_t *nodes, uint64_t n_nodes);
/* One run of a cover: nodes [first, end) of stored level `level`. */
typedef struct pds_cover_run {
    uint32_t level;
    uint64_t first;
    uint64_t end;
} pds_cover_run;
/* The canonical cover of the half-open segment range [a, b) (a < b <= m)
 * of the tree above, shared by every tree query (tree.c, multitree.c): the
 * stored nodes whose segments lie inside [a, b) and whose parent's do not
 * (or that are on the top stored level) -- the minimal cover, a node per
 * maximal subtree inside.  Written to runs[] as <= 2 levels - 1 runs in
 * left-to-right segment order: below the stop level one run of < f
 * siblings at each end, then the stop level's run (<= 2 (f - 1) nodes, or
 * <= f on the top level).  runs[] has cap entries and must hold the
 * 2 levels - 1 runs a cover of this tree may need (128 always do);
 * *n_runs receives the number written.  PDS_EINVAL (*n_runs = 0) on
 * invalid arguments or a too small cap. */
pds_status pds_tree_cover(uint64_t m, uint32_t fanout, uint64_t a, uint64_t b,
                          pds_cover_run *runs, size_t cap, uint32_t *n_runs);
/* out[q] = sum of the noisy counts of the minimal cover of segments
 * [i[q], j[q]] (<= 2 (f - 1) nodes per level below the top, <= f on the top
 * level); PDS_EINVAL if i > j or j >= m. */
pds_status pds_tree_cover_sums(const int64_t *nodes, uint64_t m, uint32_t fanout,
                               const uint64_t *i, const uint64_t *j, size_t count,
                               int64_t *out);
/* Hay et al. 2010 consistency: the least-squares (equal-variance) leaf
 * estimates implied by all released node counts, written to leaf[m]. */
pds_status pds_tree_consistent_leaves(const int64_t *nodes, uint64_t m,
                                      uint32_t fanout, double *leaf);
/* The least-squares leaf estimates when level l's nodes have variance
 * rho[l] (n_levels = the tree's levels, every rho[l] > 0 and finite). */
pds_status pds_tree_consistent_leaves_levels(const int64_t *nodes, uint64_t m,
                                             uint32_t fanout, const double *rho,
                                             uint32_t n_levels, double *leaf);
/* *out = max over released nodes v and segment ranges R of |a_v|, where the
 * consistent estimate of R is sum_v a_v * (noisy count of v): computed
 * exactly by smoothing a unit observation at every node of the (at most
 * two distinct) top-level subtrees.  PDS_ERANGE (nothing written) when that
 * costs more than about max_work node updates. */
pds_status pds_tree_consistent_max_coef(uint64_t m, uint32_t fanout,
                                        uint64_t max_work, double *out);
/* The same for the estimate of pds_tree_consistent_leaves_levels (node
 * variances rho[l]), each |a_v| multiplied by fac[l] of v's level. */
pds_status pds_tree_consistent_max_coef_levels(uint64_t m, uint32_t fanout,
                                               const double *rho, const double *fac,
                                               uint32_t n_levels, uint64_t max_work,
                                               double *out);
/* Interval answers.  ends[m]: segment end offsets (strictly increasing,
 * ends[m-1] = domain size - 1); lo/hi: query offsets (lo <= hi <= ends[m-1]);
 * seg_lo/seg_hi: the segments holding lo and hi.  A segment wholly inside
 * [lo, hi] is always counted whole.  A boundary segment S = [first, end]
 * that [lo, hi] meets only in part, by estimator:
 *   0 "cover": counted whole (DNRR's minimal cover);
 *   1 "uniform": its estimate times the fraction of its span inside;
 *   2 "seal": counted whole iff its end (where it sealed) is inside, else 0;
 *   3 "seal_uniform": its end holds est - iota and its interior
 *     [first, end - 1] holds iota = clip(est, 0, tau) spread uniformly.
 * The _tree variant reads the raw noisy tree of fanout f (minimal covers);
 * the _prefix variant reads prefix[m + 1] (prefix[0] = 0) of segment
 * estimates.  PDS_EINVAL on inconsistent indices. */
pds_status pds_interval_answer_tree(const int64_t *nodes, uint64_t m,
                                    uint32_t fanout, const uint64_t *ends,
                                    const uint64_t *lo, const uint64_t *hi,
                                    const uint64_t *seg_lo, const uint64_t *seg_hi,
                                    size_t count, int estimator, double tau,
                                    double *out);
pds_status pds_interval_answer_prefix(const double *prefix, uint64_t m,
                                      const uint64_t *ends, const uint64_t *lo,
                                      const uint64_t *hi, const uint64_t *seg_lo,
                                      const uint64_t *seg_hi, size_t count,
                                      int estimator, double tau, double *out);
/* The noise of those answers, exactly: an answer's noise is sum_v w_v Z_v
 * over the independent, equally distributed noises Z_v of the released
 * counts (tree nodes; kary: the counter's noise terms), and per query q
 * sumsq[4q + j] = sum_v w_v^2, maxabs[4q + j] = max_v |w_v| at clip corner
 * j.  "seal_uniform" clips a boundary estimate into [0, tau], which moves
 * that term's noise by a factor theta in [0, 1]; the noise then lies
 * between those of the corners theta in {0, 1}^2 (bit 0 of j: the left
 * boundary's fraction kept, bit 1: the right one's); j = 3 is the unclipped
 * linear map.  Other estimators, and all_corners = 0 (only the unclipped
 * map, the std's), write four equal corners.
 * _tree: the raw tree (consistent = 0: the minimal cover plus the boundary
 * leaves) or its least-squares consistent estimate (consistent = 1: the
 * weights of Hay et al.'s estimator on the raw nodes, computed by Gaussian
 * smoothing on the tree in O(levels) per query, for any fanout).
 * _kary: the prefix sums of the k-ary counter with subtraction over the m
 * segments (APT Algorithm 2, odd k, as counters.c; prefix 0 is exact).
 * Same query arguments and errors as the answer kernels. */
pds_status pds_interval_var_tree(uint64_t m, uint32_t fanout, int consistent,
                                 const uint64_t *ends, const uint64_t *lo,
                                 const uint64_t *hi, const uint64_t *seg_lo,
                                 const uint64_t *seg_hi, size_t count,
                                 int estimator, int all_corners, double *sumsq,
                                 double *maxabs);
/* _tree_levels: the tree's level l has node variance rho[l] (the consistent
 * estimate is pds_tree_consistent_leaves_levels'); then sumsq = sum_v
 * rho[l(v)] w_v^2 (the variance, in the units of rho) and maxabs = max_v
 * fac[l(v)] |w_v|.  n_levels = the tree's levels, rho and fac > 0. */
pds_status pds_interval_var_tree_levels(uint64_t m, uint32_t fanout, int consistent,
                                        const double *rho, const double *fac,
                                        uint32_t n_levels, const uint64_t *ends,
                                        const uint64_t *lo, const uint64_t *hi,
                                        const uint64_t *seg_lo, const uint64_t *seg_hi,
                                        size_t count, int estimator, int all_corners,
                                        double *sumsq, double *maxabs);
pds_status pds_interval_var_kary(uint64_t m, uint32_t k, const uint64_t *ends,
                                 const uint64_t *lo, const uint64_t *hi,
                                 const uint64_t *seg_lo, const uint64_t *seg_hi,
                                 size_t count, int estimator, int all_corners,
                                 double *sumsq, double *maxabs);

/* ---------------------------------------------------------- multitree.c --
 * DNRR section 3.3 and Remark 3.4: the c-dimensional multi-tree over the
 * per-axis segments of c private partitions, built pruned.
 *
 * Axis a (0-based) has m[a] < 2^32 segments and a tree of fanout k[a] over
 * them with tree.c's layout, shape (pds_tree_shape) and cover
 * (pds_tree_cover): level 0 = segments, level l has ceil(m / k^l) nodes,
 * node u covering segments [u k^l, min((u+1) k^l, m)); the root is never
 * materialised.
 * Every materialised node of an axis-a tree (a < c-1) owns a successor tree
 * over axis a+1 built from the points in its rectangle.
 *
 * Records (struct of arrays, n_records long, DFS preorder): count[r] is the
 * released noisy count (0 for a pruned node), child[r] the record of the
 * node's first child (children are contiguous, -1 when pruned or a leaf),
 * succ[r] the first top-level record of its successor tree (-1 when pruned
 * or on the last axis).  Record 0 starts the axis-0 tree's top level.
 * Node classes: "intermediate" (axes < c-1, used only to prune) get discrete
 * Laplace noise of scale t_int/s_int and survive iff noisy >= thr_int;
 * "final" (axis c-1) nodes get t_fin/s_fin and survive iff noisy >= thr_fin.
 * t_fin = 0 disables the final nodes' noise (tests only).  t_int = 0 (with
 * s_int = 0) leaves intermediate nodes uncounted: count 0, no noise drawn,
 * never pruned (for unpruned builds, whose queries read final nodes only;
 * then the intermediate class needs no budget).  A node that does not
 * survive is stored with count 0 and neither children nor successor: their
 * noise is never drawn (post-processing of the full noisy tree).
 */
typedef struct pds_multitree {
    int64_t *count;
    int64_t *child;
    int64_t *succ;
    uint64_t n_records;
    uint64_t capacity;
} pds_multitree;

/* Build.  seg: n x c row-major segment indices (seg[i c + a] < m[a]);
 * max_records bounds the size (PDS_ENOMEM beyond it).  On success *out owns
 * malloc'ed arrays: release them with pds_multitree_free (also safe after a
 * failed build, which leaves *out empty). */
pds_status pds_multitree_build(pds_rng *rng, const uint32_t *seg, uint64_t n,
                               uint32_t c, const uint64_t *m, const uint32_t *k,
                               uint64_t t_int, uint64_t s_int, int64_t thr_int,
                               uint64_t t_fin, uint64_t s_fin, int64_t thr_fin,
                               uint64_t max_records, pds_multitree *out);
/* The same with point weights: weight[i] >= 0 copies of point i (NULL: 1
 * each), so a node's true count is the sum of its points' weights -- the
 * release of the points repeated by their weights, drawn identically, in
 * O(n) for n distinct points.  PDS_EINVAL for a negative weight, PDS_ERANGE
 * when the weights total more than 2^62 (pds_limits.max_count). */
pds_status pds_multitree_build_weighted(pds_rng *rng, const uint32_t *seg,
                                        const int64_t *weight, uint64_t n,
                                        uint32_t c, const uint64_t *m,
                                        const uint32_t *k, uint64_t t_int,
                                        uint64_t s_int, int64_t thr_int,
                                        uint64_t t_fin, uint64_t s_fin,
                                        int64_t thr_fin, uint64_t max_records,
                                        pds_multitree *out);
void pds_multitree_free(pds_multitree *tree);
/* Check that caller-supplied records describe a well-formed multi-tree for
 * (c, m, k): every block in bounds, every record reached exactly once.
 * PDS_ESTATE if not.  Answers are meaningful only on a checked tree (on
 * others they still stay inside the arrays). */
pds_status pds_multitree_check(const int64_t *count, const int64_t *child,
                               const int64_t *succ, uint64_t n_records, uint32_t c,
                               const uint64_t *m, const uint32_t *k);
/* Answers.  Per query q and axis a (arrays q x c row-major): whole
 * segments [wa, wb) (wa == wb: none) and up to two partial boundary
 * segments kl, kr with weights fl, fr in [0, 1] (0 = unused).  out[q] is
 * the sum over the product of the per-axis weighted covers of the final
 * nodes' counts times the product of the weights; absent nodes count 0.
 * cum (n_records + 1) holds the records' prefix sums of count mod 2^64
 * (cum[r] = sum of count[0 .. r-1]): final-axis runs are read as one
 * difference per sibling block.  Every record index followed is checked
 * against n_records: PDS_ESTATE, instead of a read outside the arrays, when
 * one points past them (pds_multitree_check refuses those and more). */
pds_status pds_multitree_answer(const int64_t *count, const int64_t *child,
                                const int64_t *succ, const uint64_t *cum,
                                uint64_t n_records, uint32_t c,
                                const uint64_t *m, const uint32_t *k,
                                const uint64_t *wa, const uint64_t *wb,
                                const uint64_t *kl, const double *fl,
                                const uint64_t *kr, const double *fr,
                                size_t count_q, double *out);
/* The noise of those answers, exactly: an answer is sum_v w_v (count of
 * final node v), w_v the product of the per-axis weights, so its noise is
 * sum_v w_v Z_v over the final nodes that hold a noisy count.  present
 * (n_records + 1 entries) counts them: present[r] = number of records
 * before r that are final nodes with a noisy count (not pruned).
 * sumsq[q] = sum_v w_v^2 over those, maxabs[q] = max_v |w_v|.  Same query
 * arguments and errors as pds_multitree_answer. */
pds_status pds_multitree_noise(const int64_t *child, const int64_t *succ,
                               const uint64_t *present, uint64_t n_records,
                               uint32_t c, const uint64_t *m, const uint32_t *k,
                               const uint64_t *wa, const uint64_t *wb,
                               const uint64_t *kl, const double *fl,
                               const uint64_t *kr, const double *fr,
                               size_t count_q, double *sumsq, double *maxabs);
/* For every record: its axis, level and node index (for tests, Claim 3.3). */
pds_status pds_multitree_describe(const int64_t *child, const int64_t *succ,
                                  uint64_t n_records, uint32_t c, const uint64_t *m,
                                  const uint32_t *k, uint8_t *axis, uint8_t *level,
                                  uint64_t *index, int64_t *pred);

/* --------------------------------------------------------------- grid.c --
 * Adaptive two-level grid (rectangles/grid.py, structure="adaptive"): coarse
 * cells = runs of g[a] of the m[a] partition segments per axis, t1[a] =
 * ceil(m[a] / g[a]) per axis, n_cells = prod t1 cells, row-major; cell i
 * holds a fine grid of q[i c + a] runs of its w partition segments per axis
 * (1 <= q <= w; run j starts at ceil(j w / q)), stored row-major at
 * fine[base[i] ...] inside fine[0 .. n_fine).  q has n_cells x c entries,
 * base n_cells; every cell's grid is checked against n_fine before it is
 * read or written (PDS_EINVAL if it does not fit).
 */
/* Turn every cell's fine estimates in place into inclusive prefix sums over
 * its own grid (nothing is written unless every cell fits). */
pds_status pds_grid_fine_prefix(uint32_t c, uint64_t n_cells, const int64_t *q,
                                const int64_t *base, double *fine,
                                uint64_t n_fine);
/* coarse (n_cells entries, which must equal prod t1) holds the inclusive
 * prefix sums of the cells' totals (row-major over t1), fine the per-cell
 * prefix sums; per query i and axis a (count_q x c row-major) the
 * partition-segment weights are fk at k, 1 on (k, r), fr at r (k == r: fk
 * alone); the fine estimates are spread uniformly over their partition
 * segments.  out[i] = sum over partition cells of the product of weights
 * times the spread estimate: coarse cells strictly inside on every axis
 * from the coarse prefix, the O(perimeter) boundary cells from their fine
 * prefix sums.  PDS_EINVAL on bad arguments (k > r, r >= m, weights
 * outside [0, 1], n_cells != prod t1, a boundary cell's q outside [1, w] or
 * its grid outside fine[0 .. n_fine)). */
pds_status pds_grid_answer(uint32_t c, const uint64_t *m, const uint64_t *g,
                           const double *coarse, uint64_t n_cells,
                           const int64_t *q, const int64_t *base,
                           const double *fine, uint64_t n_fine, size_t count_q,
                           const uint64_t *k, const uint64_t *r, const double *fk,
                           const double *fr, double *out);
/* The noise of those answers, exactly.  With lam[i] the constrained
 * inference weight of coarse cell i (its estimate lam v + (1 - lam) S of
 * its noisy count v and the sum S of its M fine counts; every fine count
 * then moves by (v' - S) / M), an answer is a linear combination of the
 * released coarse and fine counts.  Per query i: sumsq[2i] = the sum of
 * the squared weights on the coarse counts, sumsq[2i + 1] on the fine
 * counts; maxabs[2i], maxabs[2i + 1] bound the largest |weight| of each
 * (exact on the boundary cells, the largest lam or 1 - lam of any cell for
 * cells strictly inside).  v1 and v2 hold the inclusive prefix sums (as
 * coarse in pds_grid_answer) of lam^2 and M (1 - lam)^2, the cells inside
 * the query's weights.  Also the fine cells the query cuts (weight strictly
 * between 0 and 1: where spreading an estimate can miscount): cut[2i] = the
 * sum of their released (raw) counts, read from ufine, every cell's
 * inclusive prefix sums of the raw fine counts (as fine in
 * pds_grid_answer), and cut[2i + 1] = their number.  lam outside [0, 1]:
 * PDS_EINVAL; otherwise the same arguments and errors as pds_grid_answer. */
pds_status pds_grid_noise(uint32_t c, const uint64_t *m, const uint64_t *g,
                          const double *lam, const double *v1, const double *v2,
                          uint64_t n_cells, const int64_t *q, const int64_t *base,
                          const double *ufine, uint64_t n_fine, size_t count_q,
                          const uint64_t *k, const uint64_t *r, const double *fk,
                          const double *fr, double *sumsq, double *maxabs,
                          double *cut);

/* -------------------------------------------------------------- tails.c --
 * Per query q, a t with P(S >= t) <= exp(-log_inv[q]) for S = sum_g sum_i
 * w_gi Z_gi, the Z_gi independent discrete Laplace of scale scale[g] and
 * the weights known through sum_i w_gi^2 <= sumsq[q groups + g] and
 * |w_gi| <= maxabs[q groups + g]: the Chernoff bound with the exact moment
 * generating function, minimised over its parameter (float arithmetic: for
 * accuracy statements only).  out[q] = 0 when every sumsq is 0.
 * 1 <= groups <= 8; PDS_EINVAL for a scale, sumsq, maxabs or log_inv that
 * is not finite and positive (>= 0 for sumsq and maxabs). */
pds_status pds_laplace_weighted_tail(size_t count, uint32_t groups, const double *scale,
                                     const double *sumsq, const double *maxabs,
                                     const double *log_inv, double *out);

/* ----------------------------------------------------------- gaussian.c --
 * Exact discrete Gaussian, P(z) proportional to exp(-z^2 / (2 sigma^2)),
 * sigma^2 = num/den (Canonne, Kamath, Steinke 2020, Algorithm 3), integer
 * arithmetic only.  Admitted parameters: 1 <= num, den < 2^63 with
 * t = floor(sqrt(num/den)) + 1, den * t < 2^64 and 2 num den t^2 < 2^127
 * (pydp_synopsis/gaussian.py rounds sigma^2 up into this range).
 */
/* PDS_OK if sigma^2 = num/den is admitted, else PDS_EINVAL; draws nothing. */
pds_status pds_discrete_gaussian_check(uint64_t sigma2_num, uint64_t sigma2_den);
/* count samples; checks the arguments and the fork first. */
pds_status pds_discrete_gaussian_fill(pds_rng *rng, uint64_t sigma2_num,
                                      uint64_t sigma2_den, int64_t *out,
                                      size_t count);

/* ------------------------------------------------------ factorization.c --
 * out[t] = sum_{i <= t} coef[t - i] * x[i] for t < n, exactly (the product
 * of the lower-triangular Toeplitz matrix of coef with x).  coef and x are
 * non-negative (PDS_EINVAL otherwise); PDS_ERANGE (nothing written) unless
 * max(coef) * sum(x) < 2^62.  O(n log n) (number-theoretic transform);
 * PDS_ENOMEM if its two buffers of 2n words cannot be allocated.
 */
pds_status pds_lower_toeplitz_apply(const int64_t *coef, const int64_t *x,
                                    size_t n, int64_t *out);

/* ---------------------------------------------------------------- flip.c --
 * Permute-and-flip (McKenna, Sheldon 2020) over m >= 1 integer scores
 * (pydp_synopsis/flip_quantiles.py): the index of the selected candidate
 * into *out.  Candidate r is accepted, in a uniformly random order, with
 * probability exp(-(max score - scores[r]) num / den), exactly; the caller
 * passes num/den = epsilon / sensitivity (1 <= den < 2^62, num < 2^62), the
 * sensitivity (>= 1) of the score gaps (2 Delta for scores of sensitivity
 * Delta).  work: m words of caller-owned scratch.  PDS_EINVAL for a bad
 * argument. */
pds_status pds_permute_and_flip(pds_rng *rng, const int64_t *scores, uint64_t m,
                                uint64_t num, uint64_t den, uint64_t sensitivity,
                                uint64_t *work, uint64_t *out);

/* ----------------------------------------------------------- mutation.c --
 * TEST-ONLY mutants for the privacy harness (tests/privacy/mutants.py):
 * deliberately broken noise that the audits must detect.  They exist only
 * in a build compiled with PDS_TEST_MUTANTS=1; in every other build
 * pds_test_mutation refuses with PDS_EINVAL and no kernel has a mutant code
 * path.  In a mutant build the mutant applies to every release from the
 * call on:
 *   EPSILON_1_5: every noise scale (partition, nodes, cells, counter terms,
 *     discrete_laplace) times 2/3: the releases are 1.5 epsilon-DP;
 *   HALF_NODE_SCALE: the scale of tree nodes, multi-tree nodes, counter
 *     terms and pds_discrete_laplace_fill draws (grid cells, the public
 *     sampler) halved; the partition is unchanged;
 *   SENSITIVITY_OFF_BY_ONE: noise calibrated to a sensitivity one less than
 *     the true one -- node scales S/(S+1) of what S + 1 would need (S the
 *     levels of a tree, Claim 3.3's S of a multi-tree class, h of a
 *     counter, 1 for a fill), and the partition counts every item twice.
 *   Permute-and-flip's rate epsilon/S: times 3/2 (EPSILON_1_5), 2
 *     (HALF_NODE_SCALE: a wrong epsilon split), S/(S-1) (SENSITIVITY_OFF_BY_ONE).
 */
typedef enum {
    PDS_MUTANT_NONE = 0,
    PDS_MUTANT_EPSILON_1_5 = 1,
    PDS_MUTANT_HALF_NODE_SCALE = 2,
    PDS_MUTANT_SENSITIVITY_OFF_BY_ONE = 3
} pds_mutant;

/* Select the mutant (PDS_MUTANT_NONE: none).  PDS_EINVAL in every build
 * without PDS_TEST_MUTANTS, and for an unknown mutant. */
pds_status pds_test_mutation(int32_t mutant);

/* ------------------------------------------------------------ privtree.c --
 * PrivTree in one dimension (pydp_synopsis/privtree.py).
 */
typedef struct pds_privtree {
    uint64_t *ends;        /* leaf right ends (offsets), increasing; malloc'ed */
    uint8_t *depths;       /* leaf depths (root 0); malloc'ed */
    int64_t *counts;       /* leaf true counts (NOT private: for the noisy tree); malloc'ed */
    uint64_t m;            /* number of leaves */
    uint64_t capacity;
    uint64_t tested;       /* noise draws made (nodes of width >= 2 visited) */
} pds_privtree;

/* The leaves of PrivTree over [first, last] for the sorted distinct offsets
 * keys[0..nk) (strictly increasing, inside [first, last]) with running count
 * totals cum[0..nk) (nondecreasing, >= 0, <= 2^62) -- or, with cum NULL,
 * the sorted column keys[0..nk) itself (nondecreasing, repeats allowed, one
 * item per entry, not with release) --, the root of depth
 * depth0 <= 64: a node [a, b] of width
 * >= 2 at depth d with count c splits at a + (b - a) / 2 iff
 * max(theta - delta, c - d delta) + Z > theta, Z discrete Laplace of scale
 * t/s (1 <= t, s < 2^62); 0 <= delta <= 2^62, |theta| <= 2^62.  On success
 * *out owns malloc'ed arrays (release with pds_privtree_free, also safe
 * after a failure, which leaves *out empty).  PDS_EINVAL for bad arguments
 * (nothing drawn), PDS_ENOMEM past max_leaves leaves or on allocation
 * failure.  release = 1 only for read-only file mappings: their pages behind
 * the walk are dropped (madvise), keeping resident memory small. */
pds_status pds_privtree_build(pds_rng *rng, const uint64_t *keys, const int64_t *cum,
                              uint64_t nk, uint64_t first, uint64_t last, uint32_t depth0,
                              uint64_t t, uint64_t s, int64_t delta, int64_t theta,
                              uint64_t max_leaves, int32_t release, pds_privtree *out);
/* The same with fanout 2 (as above) or 4: a node that splits is halved
 * twice (a half of width 1 is not halved again), depths count 4-ary levels
 * (csrc/privtree.c).  PDS_EINVAL for any other fanout. */
pds_status pds_privtree_build_k(pds_rng *rng, const uint64_t *keys, const int64_t *cum,
                                uint64_t nk, uint64_t first, uint64_t last, uint32_t depth0,
                                uint64_t t, uint64_t s, int64_t delta, int64_t theta,
                                uint64_t max_leaves, int32_t release, uint32_t fanout,
                                pds_privtree *out);
/* The same walk over distinct keys and running totals held in two files
 * (open descriptors of regular files of exactly 8 nk bytes each: native
 * uint64 keys, int64 totals; else PDS_EINVAL before anything is allocated),
 * read with pread through a window of at most `window` entries of each
 * (2 <= window <= 2^27): resident memory 16 window bytes whatever nk.  One
 * forward pass checks them as pds_privtree_build_k checks its arrays
 * (PDS_EINVAL, nothing drawn); the walk then moves the window rightwards
 * only, reading an entry outside it alone.  A failed read: PDS_ESTATE with
 * *read_errno set (EIO for a file that ended early), *out left empty. */
pds_status pds_privtree_build_fd(pds_rng *rng, int32_t fd_keys, int32_t fd_cum, uint64_t nk,
                                 uint64_t window, uint64_t first, uint64_t last,
                                 uint32_t depth0, uint64_t t, uint64_t s, int64_t delta,
                                 int64_t theta, uint64_t max_leaves, uint32_t fanout,
                                 int32_t *read_errno, pds_privtree *out);
void pds_privtree_free(pds_privtree *tree);
/* Check that ends[0..m) are the leaves, in order, of a binary halving tree
 * over [first, last] (each node [a, b] split at a + (b - a) / 2) and write
 * each leaf's depth (the root's is depth0 <= 64).  PDS_ESTATE if they are not, PDS_EINVAL for bad
 * arguments.  O(m log D). */
pds_status pds_privtree_depths(const uint64_t *ends, uint64_t m, uint64_t first,
                               uint64_t last, uint32_t depth0, uint8_t *depths);
/* The same for the tree of fanout 2 or 4 (4: every leaf of width >= 2 an even
 * number of halvings below the root, else PDS_ESTATE; depths in 4-ary levels,
 * a width-1 leaf one halving into its level counted in it). */
pds_status pds_privtree_depths_k(const uint64_t *ends, uint64_t m, uint64_t first,
                                 uint64_t last, uint32_t depth0, uint32_t fanout,
                                 uint8_t *depths);
/* The merge of adjacent leaves (post-processing of released numbers): leaf k
 * (ends increasing, the first >= first; noisy[k] its noisy count) joins the run
 * before it iff |c W - C w| <= tau max(W, w) (c, w the leaf's noisy count and
 * width; C, W the run's); last_leaf[0..*n_out) gets the index of each run's
 * last leaf (capacity m).  PDS_EINVAL for bad arguments (tau in [0, 1e300]).
 * O(m). */
pds_status pds_privtree_merge(const uint64_t *ends, const int64_t *noisy, uint64_t m,
                              uint64_t first, double tau, uint64_t *last_leaf, uint64_t *n_out);

/* ---------------------------------------------------------- aggregate.c --
 * The data path of streamed builds (pydp_synopsis/aggregates.py).
 */
/* Merge k runs of (key, count) pairs, each sorted by key (non-decreasing;
 * PDS_EINVAL otherwise), into out_keys/out_counts (capacity entries, at
 * least the runs' total): keys strictly increasing, the counts of equal keys
 * summed.  The counts must total less than 2^63 (sums are taken modulo
 * 2^64, never overflowing).  *n_out = entries written.  O(n log k) time,
 * O(k) scratch memory. */
pds_status pds_merge_runs(uint32_t k, const uint64_t *const *keys,
                          const int64_t *const *counts, const uint64_t *lens,
                          uint64_t *out_keys, int64_t *out_counts,
                          uint64_t capacity, uint64_t *n_out);
/* Sorted keys[0..n) (nondecreasing, else PDS_EINVAL) as their distinct values
 * out_keys[0..*n_out) with how often each occurs, out_counts; out_keys may be
 * keys itself; capacity >= n.  O(n), one pass. */
pds_status pds_reduce_sorted(const uint64_t *keys, uint64_t n, uint64_t *out_keys,
                             int64_t *out_counts, uint64_t capacity, uint64_t *n_out);
/* The state of pds_runs_cum between chunks (zero it to start). */
typedef struct pds_cum_state {
    uint64_t key;          /* the pending key (its run may go on) */
    int64_t pending;       /* its count so far */
    int64_t total;         /* the running total of the keys written */
    int32_t has;           /* 1 if a key is pending */
} pds_cum_state;
/* One chunk keys[0..n) with counts[0..n) (keys nondecreasing, none below the
 * pending key; counts >= 0; the running total at most 2^62: else PDS_EINVAL /
 * PDS_ERANGE, nothing written or moved) as distinct keys with their running
 * totals: out_keys/out_cum get every key whose run ended (a larger key
 * followed) and whose total is > 0, with the total through it; the last key
 * stays pending in *st, written by a call with final = 1 (n may be 0).
 * capacity >= n + 1.  *n_out = entries written.  O(n). */
pds_status pds_runs_cum(const uint64_t *keys, const int64_t *counts, uint64_t n,
                        int32_t final, pds_cum_state *st, uint64_t *out_keys,
                        int64_t *out_cum, uint64_t capacity, uint64_t *n_out);
/* Outputs [first, last) of the merge of the sorted arrays a (na entries)
 * and b (nb entries) into out[first .. last): disjoint output slices can be
 * written by different threads (merge path; each call finds where its slice
 * starts in a and b by bisection, O(log n + last - first)).  Unsorted inputs
 * give an unsorted output but nothing outside the arrays is touched. */
pds_status pds_merge_sorted_u64(const uint64_t *a, uint64_t na, const uint64_t *b,
                                uint64_t nb, uint64_t *out, uint64_t first,
                                uint64_t last);
/* out[i] = the number of ends[0 .. m) below x[i] (numpy's searchsorted(ends,
 * x, 'left')): the segment of x[i] for a partition with those segment ends.
 * ends strictly increasing, 1 <= m <= 2^32 - 1, every x[i] <= ends[m - 1].
 * table (table_len = (ends[m - 1] >> shift) + 2 entries, non-decreasing, each
 * <= m) holds table[b] = the number of ends below b << shift (the last entry
 * m): it narrows each search to one bucket.  A table that does not satisfy
 * this gives wrong answers but never reads outside the arrays (its entries
 * and the x[i] are checked: PDS_EINVAL).  O(n log(ends per bucket)). */
pds_status pds_segment_index(const uint64_t *ends, uint64_t m, const uint32_t *table,
                             uint64_t table_len, uint32_t shift, const uint64_t *x,
                             size_t n, uint32_t *out);
/* Add the rows to the adaptive grid's counts (rectangles/grid.py, the
 * layout of grid.c): row i lies in partition segments seg[i c + a] < m[a]
 * and weighs weight[i] (NULL: 1).  Coarse cells are runs of g[a] partition
 * segments per axis, t1[a] = ceil(m[a] / g[a]) of them, row-major.  With
 * fine NULL, counts (n_counts = prod t1 entries) gets each row's coarse
 * cell; otherwise fine holds one record of c + 1 entries per coarse cell i,
 * its base and its q[0 .. c): the cell holds a fine grid of q[a] runs per
 * axis (run j of its w segments starting at ceil(j w / q[a])), row-major at
 * counts[base ...], and counts gets each row's fine cell.  Every segment is
 * checked against m first; a fine grid that does not fit (a q outside
 * [1, w], a cell at or beyond n_counts) is PDS_EINVAL when a row meets it,
 * the rows before it counted: counts is never written outside its n_counts
 * entries.  One pass: O(n c). */
pds_status pds_grid_count(uint32_t c, const uint64_t *m, const uint64_t *g,
                          const uint32_t *seg, const int64_t *weight, uint64_t n,
                          const int64_t *fine, int64_t *counts, uint64_t n_counts);
/* Rows read over refined partitions (rectangles/axes.py, refine_ends: every
 * segment's end split off as its own segment) mapped back to the released
 * segments, and the rows on a segment's end counted.  Axis a's table is
 * map[off[a] .. off[a] + r[a]), one entry per refined segment: (the released
 * segment holding it << 1) | 1 if it is a released segment's end.
 * out[i c + a] = map[off[a] + seg[i c + a]] >> 1; with acc non-NULL, acc[a]
 * also gains weight[i] (NULL: 1) for every row whose refined segment on axis
 * a is an end.  Every segment is checked against r first (PDS_EINVAL,
 * nothing written).  O(n c), one pass per axis. */
pds_status pds_cells_unrefine(uint32_t c, const uint64_t *off, const uint64_t *r,
                              const uint64_t *map, const uint32_t *seg, const int64_t *weight,
                              uint64_t n, uint32_t *out, int64_t *acc);
/* The same cells as pds_grid_count, written to cells[i] (one per row)
 * instead of counted: for count arrays too large for the cache, the caller
 * sorts the cells and adds them in order. */
pds_status pds_grid_cells(uint32_t c, const uint64_t *m, const uint64_t *g,
                          const uint32_t *seg, uint64_t n, const int64_t *fine,
                          uint64_t n_counts, uint64_t *cells);

/* ----------------------------------------------------------- quadtree.c --
 * One level of the quadtree over partition cells (rectangles/quadtree.py):
 * rows i < n of cells (two uint32 segment indices each), weight and node
 * (its node among the level's n_level); slot[k] is node k's index among the
 * level's n_split split nodes or -1 (a leaf).  A row of a split node s moves
 * to child[4 s + side] (side bit a: cell index > mid[2 s + a]), is compacted
 * to the front and adds its weight to counts[child] (n_next entries); rows
 * of leaves are dropped; *kept = the rows kept.  An index out of range is
 * PDS_EINVAL (the rows before it moved).  O(n). */
pds_status pds_quad_level(uint32_t *cells, int64_t *weight, int64_t *node, uint64_t n,
                          const int64_t *slot, uint64_t n_level, const int64_t *mid,
                          const int64_t *child, uint64_t n_split, int64_t *counts,
                          uint64_t n_next, uint64_t *kept);

/* The answers of q boxes over a released quadtree of n_nodes nodes: per node
 * its box in the data's coordinates (cfirst, clast: 2 uint64 each) and in
 * segment indices (first, last), its first child and number of children
 * (1..4; child > the node), its leaf index or -1, its subtree's (sum of
 * noisy counts, number of leaves) in sums; per box lo, hi (2 uint64 each)
 * and the snapped segment range bi, bj (2 int64 each).  Outputs per box:
 * answer, sumsq and maxabs of the weights on the leaf counts, and cut[2 b],
 * cut[2 b + 1] the noisy sum and the number of the leaves it cuts.  work:
 * stack_size int64 entries (3 depth + 4 suffice).  A node or leaf index out
 * of range, or a full stack, is PDS_EINVAL.  O(nodes the boundary meets). */
pds_status pds_quad_answer(uint64_t n_nodes, const uint64_t *cfirst, const uint64_t *clast,
                           const int64_t *first, const int64_t *last, const int64_t *child,
                           const int64_t *nchild, const int64_t *leaf, const double *sums,
                           const int64_t *counts, uint64_t n_leaves, uint64_t q,
                           const uint64_t *lo, const uint64_t *hi, const int64_t *bi,
                           const int64_t *bj, int64_t *work, uint64_t stack_size,
                           double *answer, double *sumsq, double *maxabs, double *cut);

/* ----------------------------------------------------------- isotonic.c --
 * out = the least-squares non-decreasing fit of y[0 .. n) (pool adjacent
 * violators, O(n)); out may be y.  PDS_EINVAL for a NULL array with n > 0
 * or a y that is not finite, PDS_ENOMEM if the O(n) work space fails. */
pds_status pds_isotonic(size_t n, const double *y, double *out);

/* ChaCha20 keystream as the package's only source of randomness.
 *
 * RFC 8439 section 2.3 block function.  The generator keeps a 256-bit key
 * and a 64-bit block index; block b uses the RFC counter word = low 32 bits
 * of b and the first nonce word = high 32 bits (the other nonce words are 0),
 * so one key yields 2^64 blocks before repeating -- far beyond any run.
 * Eight blocks are computed together in vector lanes; their 64
 * little-endian uint64 words are handed out in order.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/random.h>
#include "internal.h"

/* Fork check without a system call per draw.
 *
 * A generator records the process that seeded it (pid); a child created by
 * fork() must reseed before its first draw, or it would replay its parent's
 * stream (two releases sharing noise leak their difference).  Comparing pid
 * with getpid() at every entry point costs a system call (glibc does not
 * cache the pid), which one-item calls such as a counter update feel.
 *
 * Instead the library counts forks: fork_child, registered with
 * pthread_atfork before the first generator is seeded, adds one to
 * fork_generation in every child, before fork() returns there.  A generator
 * remembers the generation at which it last found pid == getpid()
 * (fork_gen); while the generation is unchanged no fork separates the
 * calling process from that check, so the check passes without getpid().
 * Claim: fork_gen == the caller's generation implies the caller is the
 * process that made that check.  Within a process the counter never
 * changes (only a child adds to its own copy), and a child starts at its
 * parent's value plus one; a generator's memory in a child is the parent's
 * as of the fork, so a fork_gen recorded in an ancestor is at most that
 * ancestor's generation, below every descendant's.
 * If pthread_atfork fails, fork_gen is set to UINT64_MAX, which the counter
 * never reaches, and every check calls getpid() as before.
 * Not covered: a process created without running the atfork handlers
 * (a raw clone system call, glibc's _Fork) that then draws; os.fork and
 * multiprocessing's fork call fork(), which runs them. */
static uint64_t fork_generation;      /* atomic; written in children only */
static int fork_hooked;               /* 1 once fork_child is registered */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
    __atomic_add_fetch(&fork_generation, 1, __ATOMIC_RELAXED);
}

static void fork_register(void)
{
    if (pthread_atfork(NULL, NULL, fork_child) == 0)
        __atomic_store_n(&fork_hooked, 1, __ATOMIC_RELEASE);
}

/* The generation to record after a successful pid check, or UINT64_MAX
 * (never equal to the counter) when forks are not counted. */
static uint64_t checked_generation(void)
{
    pthread_once(&fork_once, fork_register);
    if (!__atomic_load_n(&fork_hooked, __ATOMIC_ACQUIRE))
        return UINT64_MAX;
    return __atomic_load_n(&fork_generation, __ATOMIC_RELAXED);
}

static const uint32_t SIGMA[4] = {0x61707865u, 0x3320646eu, 0x79622d32u,
                                  0x6b206574u};

static inline uint32_t load32_le(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

/* Eight blocks are computed at once, one per vector lane (GCC/Clang vector
 * extension, no intrinsics): x[i] holds word i of the eight block states.
 *
 * Speed (issue #17).  The rotations by 16 and 8 move whole bytes, so on
 * AVX2 they are one byte shuffle (vpshufb) each instead of two shifts and an
 * or; the rotations by 12 and 7 stay shifts.  The output is transposed in
 * registers (32-bit interleave, then 4x4 transposes of 64-bit words) and
 * stored as the stream's 64-bit words in block order, instead of 128 scalar
 * extractions.  On x86-64 with GCC an AVX2 copy is picked at run time where
 * the CPU has it (__builtin_cpu_supports), a baseline (SSE2) one otherwise;
 * other targets and compilers get the portable version (shifts).  Both
 * compute the RFC 8439 block function word for word, so the keystream is
 * bit-identical whichever runs (the RFC test vectors and the seeded-stream
 * tests check the one the machine picks). */
#define LANES 8
typedef uint32_t lanes_u32 __attribute__((vector_size(32)));
typedef uint64_t lanes_u64 __attribute__((vector_size(32)));

#define ROTL(v, c) (((v) << (c)) | ((v) >> (32 - (c))))

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PDS_CHACHA_DISPATCH 1
typedef uint8_t lanes_u8 __attribute__((vector_size(32)));
/* Byte i of a little-endian word rotated left by 16 (8) is byte i - 2
 * (i - 1) mod 4 of the word. */
#define ROT16_BYTES(v)                                                        \
    ((lanes_u32)__builtin_shuffle((lanes_u8)(v), (lanes_u8){                  \
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,                 \
        18, 19, 16, 17, 22, 23, 20, 21, 26, 27, 24, 25, 30, 31, 28, 29}))
#define ROT8_BYTES(v)                                                         \
    ((lanes_u32)__builtin_shuffle((lanes_u8)(v), (lanes_u8){                  \
        3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,                 \
        19, 16, 17, 18, 23, 20, 21, 22, 27, 24, 25, 26, 31, 28, 29, 30}))
#endif

/* The quarter round of RFC 8439 section 2.1; R16 and R8 rotate by 16, 8. */
#define QUARTER(a, b, c, d, R16, R8)                          \
    do {                                                      \
        x[a] += x[b]; x[d] ^= x[a]; x[d] = R16(x[d]);         \
        x[c] += x[d]; x[b] ^= x[c]; x[b] = ROTL(x[b], 12);    \
        x[a] += x[b]; x[d] ^= x[a]; x[d] = R8(x[d]);          \
        x[c] += x[d]; x[b] ^= x[c]; x[b] = ROTL(x[b], 7);     \
    } while (0)
#define ROT16_SHIFT(v) ROTL(v, 16)
#define ROT8_SHIFT(v) ROTL(v, 8)

/* Stores the 64-bit words 4j .. 4j+3 of the blocks whose words are the
 * 64-bit lanes of r0..r3 (r_i = word 4j + i of four blocks): a 4x4
 * transpose.  Block e of the four goes to out[8 * blk[e] + 4j ..]. */
#define TRANSPOSE_STORE(r0, r1, r2, r3, j, b0, b1, b2, b3)                    \
    do {                                                                      \
        lanes_u64 t0 = __builtin_shuffle(r0, r1, (lanes_u64){0, 4, 2, 6});    \
        lanes_u64 t1 = __builtin_shuffle(r0, r1, (lanes_u64){1, 5, 3, 7});    \
        lanes_u64 t2 = __builtin_shuffle(r2, r3, (lanes_u64){0, 4, 2, 6});    \
        lanes_u64 t3 = __builtin_shuffle(r2, r3, (lanes_u64){1, 5, 3, 7});    \
        lanes_u64 c0 = __builtin_shuffle(t0, t2, (lanes_u64){0, 1, 4, 5});    \
        lanes_u64 c1 = __builtin_shuffle(t1, t3, (lanes_u64){0, 1, 4, 5});    \
        lanes_u64 c2 = __builtin_shuffle(t0, t2, (lanes_u64){2, 3, 6, 7});    \
        lanes_u64 c3 = __builtin_shuffle(t1, t3, (lanes_u64){2, 3, 6, 7});    \
        memcpy(out + 8 * (b0) + 4 * (j), &c0, sizeof c0);                     \
        memcpy(out + 8 * (b1) + 4 * (j), &c1, sizeof c1);                     \
        memcpy(out + 8 * (b2) + 4 * (j), &c2, sizeof c2);                     \
        memcpy(out + 8 * (b3) + 4 * (j), &c3, sizeof c3);                     \
    } while (0)

/* LANES consecutive blocks (counter words counter0 + l mod 2^32, l < 8), as
 * the keystream's 64-bit little-endian words in order:
 * out[8 l + i] = word 2i | word 2i+1 << 32 of block l. */
#define CHACHA_BODY(R16, R8)                                                  \
    do {                                                                      \
        lanes_u32 init[16], x[16];                                            \
        for (int i = 0; i < 4; i++) init[i] = (lanes_u32){0} + SIGMA[i];      \
        for (int i = 0; i < 8; i++) init[4 + i] = (lanes_u32){0} + key[i];    \
        init[12] = (lanes_u32){0, 1, 2, 3, 4, 5, 6, 7} + counter0;            \
        for (int i = 0; i < 3; i++) init[13 + i] = (lanes_u32){0} + nonce[i]; \
        for (int i = 0; i < 16; i++) x[i] = init[i];                          \
        for (int r = 0; r < 10; r++) {                                        \
            QUARTER(0, 4, 8, 12, R16, R8);                                    \
            QUARTER(1, 5, 9, 13, R16, R8);                                    \
            QUARTER(2, 6, 10, 14, R16, R8);                                   \
            QUARTER(3, 7, 11, 15, R16, R8);                                   \
            QUARTER(0, 5, 10, 15, R16, R8);                                   \
            QUARTER(1, 6, 11, 12, R16, R8);                                   \
            QUARTER(2, 7, 8, 13, R16, R8);                                    \
            QUARTER(3, 4, 9, 14, R16, R8);                                    \
        }                                                                     \
        for (int i = 0; i < 16; i++) x[i] += init[i];                         \
        /* Interleave words 2i, 2i+1 into 64-bit lanes within each 128-bit   \
         * half: lo[i] holds blocks 0, 1, 4, 5 and hi[i] blocks 2, 3, 6, 7. */\
        lanes_u64 lo[8], hi[8];                                               \
        for (int i = 0; i < 8; i++) {                                         \
            lo[i] = (lanes_u64)__builtin_shuffle(x[2 * i], x[2 * i + 1],      \
                        (lanes_u32){0, 8, 1, 9, 4, 12, 5, 13});               \
            hi[i] = (lanes_u64)__builtin_shuffle(x[2 * i], x[2 * i + 1],      \
                        (lanes_u32){2, 10, 3, 11, 6, 14, 7, 15});             \
        }                                                                     \
        TRANSPOSE_STORE(lo[0], lo[1], lo[2], lo[3], 0, 0, 1, 4, 5);           \
        TRANSPOSE_STORE(lo[4], lo[5], lo[6], lo[7], 1, 0, 1, 4, 5);           \
        TRANSPOSE_STORE(hi[0], hi[1], hi[2], hi[3], 0, 2, 3, 6, 7);           \
        TRANSPOSE_STORE(hi[4], hi[5], hi[6], hi[7], 1, 2, 3, 6, 7);           \
    } while (0)

static void chacha_blocks_portable(const uint32_t key[8], uint32_t counter0,
                                   const uint32_t nonce[3], uint64_t out[64])
{
    CHACHA_BODY(ROT16_SHIFT, ROT8_SHIFT);
}

#ifdef PDS_CHACHA_DISPATCH
__attribute__((target("avx2")))
static void chacha_blocks_avx2(const uint32_t key[8], uint32_t counter0,
                               const uint32_t nonce[3], uint64_t out[64])
{
    CHACHA_BODY(ROT16_BYTES, ROT8_BYTES);
}
#endif

static void chacha_blocks(const uint32_t key[8], uint32_t counter0,
                          const uint32_t nonce[3], uint64_t out[64])
{
#ifdef PDS_CHACHA_DISPATCH
    if (__builtin_cpu_supports("avx2")) {
        chacha_blocks_avx2(key, counter0, nonce, out);
        return;
    }
#endif
    chacha_blocks_portable(key, counter0, nonce, out);
}

pds_status pds_chacha20_block(const uint8_t *key32, uint32_t counter,
                              const uint8_t *nonce12, uint8_t *out64)
{
    if (!key32 || !nonce12 || !out64) return PDS_EINVAL;
    uint32_t key[8], nonce[3];
    uint64_t words[8 * LANES];
    for (int i = 0; i < 8; i++) key[i] = load32_le(key32 + 4 * i);
    for (int i = 0; i < 3; i++) nonce[i] = load32_le(nonce12 + 4 * i);
    chacha_blocks(key, counter, nonce, words);
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 8; b++)
            out64[8 * i + b] = (uint8_t)(words[i] >> (8 * b));
    return PDS_OK;
}

void pds_rng_refill(pds_rng *rng)
{
    uint32_t nonce[3] = {(uint32_t)(rng->block >> 32), 0, 0};
    uint32_t counter = (uint32_t)rng->block;
    /* LANES divides 2^32 and block advances in steps of LANES, so a batch
     * never straddles a change of the high word. */
    chacha_blocks(rng->key, counter, nonce, rng->buf);
    rng->block += LANES;
    rng->pos = 0;
}

static void set_key(pds_rng *rng, const uint8_t *key32)
{
    for (int i = 0; i < 8; i++) rng->key[i] = load32_le(key32 + 4 * i);
    rng->block = 0;
    rng->pos = 8 * LANES;
    rng->half = 0;
    rng->nhalf = 0;
    rng->bits = 0;
    rng->nbits = 0;
    memset(rng->buf, 0, sizeof rng->buf);
    rng->fork_gen = checked_generation();   /* registers fork_child first */
    rng->pid = (int64_t)getpid();
}

pds_status pds_rng_init_os(pds_rng *rng)
{
    if (!rng) return PDS_EINVAL;
    uint8_t key[32];
    size_t got = 0;
    while (got < sizeof key) {
        ssize_t r = getrandom(key + got, sizeof key - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return PDS_EENTROPY;
        }
        got += (size_t)r;
    }
    set_key(rng, key);
    rng->seeded = 0;
    /* Do not leave key material on the stack. */
    memset(key, 0, sizeof key);
    __asm__ __volatile__("" : : "r"(key) : "memory");
    return PDS_OK;
}

pds_status pds_rng_init_key(pds_rng *rng, const uint8_t *key32)
{
    if (!rng || !key32) return PDS_EINVAL;
    set_key(rng, key32);
    rng->seeded = 1;
    return PDS_OK;
}

/* The first 32 bytes of block 0 of `key` with `nonce`, as a key. */
static void key_of_block(const uint32_t key[8], const uint32_t nonce[3], uint8_t *key32)
{
    uint64_t words[8 * LANES];
    chacha_blocks(key, 0, nonce, words);
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 8; b++)
            key32[8 * i + b] = (uint8_t)(words[i] >> (8 * b));
    memset(words, 0, sizeof words);
    __asm__ __volatile__("" : : "r"(words) : "memory");
}

pds_status pds_rng_derive(const pds_rng *parent, uint64_t index, uint8_t *key32)
{
    if (parent == NULL || key32 == NULL)
        return PDS_EINVAL;
    /* The parent's stream uses nonce words (block >> 32, 0, 0); a child key
     * is the first 32 bytes of the block with nonce (index >> 32, 1, index)
     * under the parent's key, so no child key is ever a block of the
     * parent's stream, and children of different indices are independent
     * (ChaCha20 is a PRF in its nonce).  Nothing of the parent changes. */
    uint32_t nonce[3] = {(uint32_t)(index >> 32), 1u, (uint32_t)index};
    key_of_block(parent->key, nonce, key32);
    return PDS_OK;
}

pds_status pds_rng_split(pds_rng *rng, uint8_t *key32)
{
    if (rng == NULL || key32 == NULL)
        return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK)
        return st;
    /* Second nonce word 2 mod 4: a block neither the stream (0) nor a
     * child key (1) uses, so the fill key is independent of both (PRF).
     * The other 94 nonce bits are fresh words F, G of the stream, so two
     * fills share a key with probability 2^-94 per pair (64 bits alone
     * would give a birthday bound of n^2 2^-65 over n fills), and the
     * generator moves on exactly as if it had handed out F and G. */
    uint64_t f = pds_rng_u64(rng);
    uint64_t g = pds_rng_u64(rng);
    uint32_t nonce[3] = {(uint32_t)(f >> 32), 2u + ((uint32_t)g << 2), (uint32_t)f};
    key_of_block(rng->key, nonce, key32);
    return PDS_OK;
}

pds_status pds_rng_init_at(pds_rng *rng, const uint8_t *key32, uint64_t block)
{
    /* Batches of LANES blocks must not straddle a change of the high word
     * (refill): the block must be a multiple of LANES. */
    if (!rng || !key32 || block % LANES != 0) return PDS_EINVAL;
    set_key(rng, key32);
    rng->block = block;
    rng->seeded = 1;
    return PDS_OK;
}

pds_status pds_rng_check_fork(pds_rng *rng)
{
    if (!rng) return PDS_EINVAL;
    /* No fork since this generator's last pid check (comment at the top). */
    if (rng->fork_gen == __atomic_load_n(&fork_generation, __ATOMIC_RELAXED))
        return PDS_OK;
    if (rng->pid == (int64_t)getpid()) {
        rng->fork_gen = checked_generation();
        return PDS_OK;
    }
    /* A forked child must never replay its parent's stream, seeded or not:
     * two releases with shared noise would leak their difference. */
    return pds_rng_init_os(rng);
}

pds_status pds_rng_fill_u64(pds_rng *rng, uint64_t *out, size_t n)
{
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;
    if (n && !out) return PDS_EINVAL;
    while (n > 0) {   /* the words of pds_rng_u64, a buffer at a time */
        if (rng->pos >= 8 * LANES) pds_rng_refill(rng);
        size_t k = 8 * LANES - rng->pos;
        if (k > n) k = n;
        memcpy(out, rng->buf + rng->pos, k * sizeof *out);
        rng->pos += (uint32_t)k;
        out += k;
        n -= k;
    }
    return PDS_OK;
}

const char *pds_strerror(int status)
{
    switch (status) {
    case PDS_OK: return "success";
    case PDS_EINVAL: return "invalid argument";
    case PDS_EENTROPY: return "the operating system could not supply random bytes (getrandom failed)";
    case PDS_ERANGE: return "result out of the representable range";
    case PDS_ENOMEM: return "out of memory";
    case PDS_EPRECISION: return "exact decision needs more precision";
    case PDS_EHORIZON: return "stream went past its horizon";
    case PDS_ESTATE: return "inconsistent state";
    default: return "unknown status";
    }
}

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
 * target_clones builds an AVX2 version picked at load time where the CPU
 * has it, and a baseline (SSE2/NEON) one otherwise. */
#define LANES 8
typedef uint32_t lanes_u32 __attribute__((vector_size(32)));

#define ROTL(v, c) (((v) << (c)) | ((v) >> (32 - (c))))
/* The quarter round of RFC 8439 section 2.1. */
#define QUARTER(a, b, c, d)                                   \
    do {                                                      \
        x[a] += x[b]; x[d] ^= x[a]; x[d] = ROTL(x[d], 16);    \
        x[c] += x[d]; x[b] ^= x[c]; x[b] = ROTL(x[b], 12);    \
        x[a] += x[b]; x[d] ^= x[a]; x[d] = ROTL(x[d], 8);     \
        x[c] += x[d]; x[b] ^= x[c]; x[b] = ROTL(x[b], 7);     \
    } while (0)

/* Computes LANES consecutive blocks: words out[l][0..15]. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void chacha_blocks(const uint32_t key[8], uint32_t counter0,
                          const uint32_t nonce[3], uint32_t out[LANES][16])
{
    lanes_u32 init[16], x[16];
    for (int i = 0; i < 4; i++) init[i] = (lanes_u32){0} + SIGMA[i];
    for (int i = 0; i < 8; i++) init[4 + i] = (lanes_u32){0} + key[i];
    /* The counter word never wraps inside a batch: batches start at a
     * multiple of LANES (see refill). */
    for (int l = 0; l < LANES; l++) init[12][l] = counter0 + (uint32_t)l;
    for (int i = 0; i < 3; i++) init[13 + i] = (lanes_u32){0} + nonce[i];
    for (int i = 0; i < 16; i++) x[i] = init[i];
    for (int r = 0; r < 10; r++) {
        QUARTER(0, 4, 8, 12);
        QUARTER(1, 5, 9, 13);
        QUARTER(2, 6, 10, 14);
        QUARTER(3, 7, 11, 15);
        QUARTER(0, 5, 10, 15);
        QUARTER(1, 6, 11, 12);
        QUARTER(2, 7, 8, 13);
        QUARTER(3, 4, 9, 14);
    }
    for (int i = 0; i < 16; i++) {
        lanes_u32 w = x[i] + init[i];
        for (int l = 0; l < LANES; l++) out[l][i] = w[l];
    }
}

pds_status pds_chacha20_block(const uint8_t *key32, uint32_t counter,
                              const uint8_t *nonce12, uint8_t *out64)
{
    if (!key32 || !nonce12 || !out64) return PDS_EINVAL;
    uint32_t key[8], nonce[3], blocks[LANES][16];
    for (int i = 0; i < 8; i++) key[i] = load32_le(key32 + 4 * i);
    for (int i = 0; i < 3; i++) nonce[i] = load32_le(nonce12 + 4 * i);
    chacha_blocks(key, counter, nonce, blocks);
    for (int i = 0; i < 16; i++)
        for (int b = 0; b < 4; b++)
            out64[4 * i + b] = (uint8_t)(blocks[0][i] >> (8 * b));
    return PDS_OK;
}

static void refill(pds_rng *rng)
{
    uint32_t nonce[3] = {(uint32_t)(rng->block >> 32), 0, 0};
    uint32_t counter = (uint32_t)rng->block;
    uint32_t blocks[LANES][16];
    /* LANES divides 2^32 and block advances in steps of LANES, so a batch
     * never straddles a change of the high word. */
    chacha_blocks(rng->key, counter, nonce, blocks);
    for (int l = 0; l < LANES; l++)
        for (int i = 0; i < 8; i++)
            rng->buf[8 * l + i] = (uint64_t)blocks[l][2 * i] |
                                  ((uint64_t)blocks[l][2 * i + 1] << 32);
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
    uint32_t blocks[LANES][16];
    chacha_blocks(parent->key, 0, nonce, blocks);
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++)
            key32[4 * i + b] = (uint8_t)(blocks[0][i] >> (8 * b));
    memset(blocks, 0, sizeof blocks);
    __asm__ __volatile__("" : : "r"(blocks) : "memory");
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

uint64_t pds_rng_u64(pds_rng *rng)
{
    if (rng->pos >= 8 * LANES) refill(rng);
    return rng->buf[rng->pos++];
}

pds_status pds_rng_fill_u64(pds_rng *rng, uint64_t *out, size_t n)
{
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;
    if (n && !out) return PDS_EINVAL;
    for (size_t i = 0; i < n; i++) out[i] = pds_rng_u64(rng);
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

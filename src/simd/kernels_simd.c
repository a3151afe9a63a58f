/* The vector kernels: dot products over float32 and every stored weight
 * type, norms, activations, softmax. Built once per instruction set
 * (AS_ISA names it; the Makefile passes the matching -m flags) into a
 * table kernels.c chooses from at run time; see simd.h. */
#include "simd.h"

#include "attnscope/quant.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef AS_ISA
#error "build with -DAS_ISA=generic|avx2|avx512 (see the Makefile)"
#endif

/* ---------------------------------------------------------------- dot products */

/* Vectors as wide as the target has (GCC/Clang vector extensions, so the
 * same source builds everywhere); loads through memcpy are unaligned. */
#if defined(__AVX512F__)
#define VL 16
#elif defined(__AVX__)
#define VL 8
#else
#define VL 4
#endif
typedef float vfloat __attribute__((vector_size(VL * sizeof(float))));
#if VL == 16 && defined(__AVX512F__)
#define HAVE_LUT16 1 /* 4-bit types through vpermps tables (below) */
#endif
typedef int32_t vint __attribute__((vector_size(VL * sizeof(int32_t))));

static inline vfloat vload(const float *p)
{
    vfloat v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Lane permutations with constant indices: __builtin_shufflevector is in
 * clang and GCC >= 12, __builtin_shuffle in older GCC. */
#if defined(__clang__) || __GNUC__ >= 12
#define SHUF(v, ...) __builtin_shufflevector(v, v, __VA_ARGS__)
#else
#define SHUF(v, ...) __builtin_shuffle(v, (vint){__VA_ARGS__})
#endif
#if VL == 16
#define SWAP_HALVES(v) SHUF(v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7)
#define SWAP_QUARTERS(v) SHUF(v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11)
#define SWAP_PAIRS(v) SHUF(v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14)
#elif VL == 8
#define SWAP_QUARTERS(v) SHUF(v, 4, 5, 6, 7, 0, 1, 2, 3)
#define SWAP_PAIRS(v) SHUF(v, 1, 0, 3, 2, 5, 4, 7, 6)
#else
#define SWAP_PAIRS(v) SHUF(v, 1, 0, 3, 2)
#endif

/* Lanes summed as a tree (halves, quarters, ...). */
static inline float hsum(vfloat v)
{
#if VL >= 16
    v += SWAP_HALVES(v);
#endif
#if VL >= 8
    v += SWAP_QUARTERS(v);
#endif
    return (v[0] + v[2]) + (v[1] + v[3]);
}

/* a·b + c, fused where the target has FMA (one rounding, and one
 * instruction on the path that streams every weight). */
static inline vfloat vfma(vfloat a, vfloat b, vfloat c)
{
#if defined(__AVX512F__)
    return _mm512_fmadd_ps(a, b, c);
#elif defined(__AVX__) && defined(__FMA__)
    return _mm256_fmadd_ps(a, b, c);
#else
    return a * b + c;
#endif
}

/* m ? a : b lane by lane (m from a vector comparison: all ones or zeros);
 * C has no vector ?:, so through the bits. */
static inline vfloat vsel(vint m, vfloat a, vfloat b)
{
    vint ai, bi, r;
    vfloat out;
    memcpy(&ai, &a, sizeof ai);
    memcpy(&bi, &b, sizeof bi);
    r = (ai & m) | (bi & ~m);
    memcpy(&out, &r, sizeof out);
    return out;
}

/* e^x for a vector, within 2 ulp of expf over the range that matters
 * (Cody-Waite reduction to |r| <= ln2/2, Cephes' degree-6 polynomial, then
 * the exponent bits). NaN stays NaN; below -87.3 gives 0, above 88 +inf. */
static inline vfloat vexp(vfloat x)
{
    const vfloat hi = (vfloat){0} + 88.0f, lo = (vfloat){0} - 87.3365f;
    vfloat xc = vsel(x > hi, hi, x);
    xc = vsel((xc < lo) | (xc != xc), lo, xc); /* NaN never reaches the int conversion */
    vfloat half = vsel(xc < 0, (vfloat){0} - 0.5f, (vfloat){0} + 0.5f);
    vfloat n = __builtin_convertvector(__builtin_convertvector(xc * 1.44269504f + half, vint), vfloat);
    vfloat r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    vfloat p = (vfloat){0} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    vint e = (__builtin_convertvector(n, vint) + 127) << 23;
    vfloat scale;
    memcpy(&scale, &e, sizeof scale);
    vfloat y = p * scale;
    y = vsel(x < lo, (vfloat){0}, y);
    y = vsel(x > hi, (vfloat){0} + INFINITY, y);
    return vsel(x != x, x, y);
}

static inline void vstore(float *p, vfloat v)
{
    memcpy(p, &v, sizeof v);
}

/* One row at a time, four accumulators: the weights stream through in a
 * single sequential pass, which the hardware prefetcher follows best (four
 * rows side by side ran ~30% slower: four streams, and x, reused across
 * them, sits in L1 anyway). */
static float simd_dot(const float *a, const float *b, int n)
{
    vfloat a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    int j = 0;
    for (; j + 4 * VL <= n; j += 4 * VL) {
        a0 = vfma(vload(a + j), vload(b + j), a0);
        a1 = vfma(vload(a + j + VL), vload(b + j + VL), a1);
        a2 = vfma(vload(a + j + 2 * VL), vload(b + j + 2 * VL), a2);
        a3 = vfma(vload(a + j + 3 * VL), vload(b + j + 3 * VL), a3);
    }
    for (; j + VL <= n; j += VL)
        a0 = vfma(vload(a + j), vload(b + j), a0);
    float s = hsum((a0 + a1) + (a2 + a3));
    for (; j < n; j++)
        s += a[j] * b[j];
    return s;
}

/* ---------------------------------------------------------------- typed rows */

/* Row · x for the stored types, decoding as the row streams in. Each has
 * the F32 kernel's shape (vectors of VL, fused multiply-add, the same
 * tree sum), so a row's value depends only on the row and x. */

#if defined(__F16C__) && defined(__AVX__)
#define HAVE_F16C 1
#endif

/* VL halves at h widened to floats. */
static inline vfloat vload_f16(const uint16_t *h)
{
#if HAVE_F16C && VL == 16
    return (vfloat)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h));
#elif HAVE_F16C && VL == 8
    return (vfloat)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
#else
    vfloat v;
    for (int k = 0; k < VL; k++)
        v[k] = as_f16_to_f32(h[k]);
    return v;
#endif
}

typedef uint16_t vu16 __attribute__((vector_size(VL * sizeof(uint16_t))));
typedef uint32_t vu32 __attribute__((vector_size(VL * sizeof(uint32_t))));
typedef int8_t vi8 __attribute__((vector_size(VL)));

/* VL bfloat16s at h widened to floats: their bits are a float's top half. */
/* (GCC scalarizes __builtin_convertvector between these widths, so the
 * x86 paths widen with the instructions made for it.) */
static inline vfloat vload_bf16(const uint16_t *h)
{
#if VL == 16 && defined(__AVX512F__)
    return (vfloat)_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)h)), 16));
#elif VL == 8 && defined(__AVX2__)
    return (vfloat)_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)h)), 16));
#else
    vu16 u;
    memcpy(&u, h, sizeof u);
    vu32 w = __builtin_convertvector(u, vu32) << 16;
    vfloat f;
    memcpy(&f, &w, sizeof f);
    return f;
#endif
}

static inline vfloat vload_i8(const int8_t *q)
{
#if VL == 16 && defined(__AVX512F__)
    return (vfloat)_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)q)));
#elif VL == 8 && defined(__AVX2__)
    return (vfloat)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)q)));
#else
    vi8 v;
    memcpy(&v, q, sizeof v);
    return __builtin_convertvector(v, vfloat);
#endif
}

/* One float16 (a block's scale). */
static inline float f16_scalar(uint16_t h)
{
#if HAVE_F16C
    return _cvtsh_ss(h);
#else
    return as_f16_to_f32(h);
#endif
}

/* Row · x for a 16-bit type: simd_dot's loop with the row widened as read. */
#define DOT_16BIT(NAME, LOAD, SCALAR)                                         \
    static float NAME(const uint16_t *w, const float *x, int n)               \
    {                                                                         \
        vfloat a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                        \
        int j = 0;                                                            \
        for (; j + 4 * VL <= n; j += 4 * VL) {                                \
            a0 = vfma(LOAD(w + j), vload(x + j), a0);                         \
            a1 = vfma(LOAD(w + j + VL), vload(x + j + VL), a1);               \
            a2 = vfma(LOAD(w + j + 2 * VL), vload(x + j + 2 * VL), a2);       \
            a3 = vfma(LOAD(w + j + 3 * VL), vload(x + j + 3 * VL), a3);       \
        }                                                                     \
        for (; j + VL <= n; j += VL)                                          \
            a0 = vfma(LOAD(w + j), vload(x + j), a0);                         \
        float s = hsum((a0 + a1) + (a2 + a3));                                \
        for (; j < n; j++)                                                    \
            s += SCALAR(w[j]) * x[j];                                         \
        return s;                                                             \
    }

DOT_16BIT(dot_f16, vload_f16, as_f16_to_f32)
DOT_16BIT(dot_bf16, vload_bf16, as_bf16_to_f32)

/* Q8_0: blocks of a float16 scale d and 32 int8 q. A block adds
 * d · (Σ_i q_i·x_i) to acc: its own sum in a vector, scaled once, which
 * saves a multiply per element over scaling every q (measured: 10% more
 * on one core, where Q8_0 is bound by decoding rather than by memory). */
static inline vfloat q8_0_block(const uint8_t *w, const float *x, vfloat acc)
{
    const int8_t *q = (const int8_t *)(w + 2);
    vfloat p = vload_i8(q) * vload(x);
    for (int j = VL; j < AS_QK8_0; j += VL)
        p = vfma(vload_i8(q + j), vload(x + j), p);
    uint16_t dh;
    memcpy(&dh, w, 2);
    return vfma((vfloat){0} + f16_scalar(dh), p, acc);
}

/* Blocks in pairs into two accumulators, so one block's scaling need not
 * wait for the previous one's. */
static float dot_q8_0(const uint8_t *w, const float *x, int n)
{
    enum { B = 2 + AS_QK8_0 };
    vfloat a0 = {0}, a1 = {0};
    int b = 0, nb = n / AS_QK8_0;
    for (; b + 2 <= nb; b += 2, w += 2 * B, x += 2 * AS_QK8_0) {
        a0 = q8_0_block(w, x, a0);
        a1 = q8_0_block(w + B, x + AS_QK8_0, a1);
    }
    if (b < nb)
        a0 = q8_0_block(w, x, a0);
    return hsum(a0 + a1);
}

/* ---- 4-, 5- and 6-bit block types (ggml's layouts) ----
 * Weights are small integers q with a block scale d (and, for some types,
 * an offset m): a block's share of row · x is d·(q · x) + m·Σx. q · x is
 * taken in float lanes: the bytes are split into their bit fields as
 * integer vectors, widened to floats, and fused into the accumulators. */

typedef uint8_t vu8 __attribute__((vector_size(VL)));

static inline vu8 vload_u8(const uint8_t *p)
{
    vu8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* VL unsigned bytes widened to floats. */
static inline vfloat vcvt_u8(vu8 v)
{
#if VL == 16 && defined(__AVX512F__)
    __m128i b;
    memcpy(&b, &v, sizeof b);
    return (vfloat)_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
#elif VL == 8 && defined(__AVX2__)
    __m128i b = _mm_setzero_si128();
    memcpy(&b, &v, sizeof v);
    return (vfloat)_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
#else
    vfloat f;
    for (int k = 0; k < VL; k++)
        f[k] = (float)v[k];
    return f;
#endif
}

/* VL bytes holding small integers q, widened to floats as q - bias (the
 * bias taken in the integer lanes, where it costs no float work). */
static inline vfloat vcvt_u8_minus(vu8 v, int bias)
{
    vi8 q = (vi8)v - (int8_t)bias;
    vfloat f;
#if VL == 16 && defined(__AVX512F__)
    __m128i b;
    memcpy(&b, &q, sizeof b);
    f = (vfloat)_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
#elif VL == 8 && defined(__AVX2__)
    __m128i b = _mm_setzero_si128();
    memcpy(&b, &q, sizeof q);
    f = (vfloat)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
#else
    for (int k = 0; k < VL; k++)
        f[k] = (float)q[k];
#endif
    return f;
}

static inline float half_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return f16_scalar(h);
}

/* Σ x over n floats (a multiple of VL), as a vector of lane sums. */
static inline vfloat vsum(const float *x, int n)
{
    vfloat s = {0};
    for (int j = 0; j < n; j += VL)
        s += vload(x + j);
    return s;
}

/* Q4_0: d (f16), 16 bytes; element j < 16 is the low nibble of byte j,
 * element 16 + j its high nibble; w = d·(q - 8). Q4_1 adds m: w = d·q + m
 * (its m·Σx term through the block's sum of x). */
#ifndef HAVE_LUT16
static float dot_q4(const uint8_t *w, const float *x, int n, bool offset)
{
    size_t bytes = offset ? 20 : 18;
    vfloat acc = {0};
    for (int b = 0; b < n / 32; b++, w += bytes, x += 32) {
        const uint8_t *qs = w + (offset ? 4 : 2);
        vfloat qx = {0};
        int bias = offset ? 0 : 8; /* Q4_0's zero point, taken in the integer lanes */
        for (int j = 0; j < 16; j += VL) {
            vu8 q = vload_u8(qs + j);
            qx = vfma(vcvt_u8_minus(q & 0xF, bias), vload(x + j), qx);
            qx = vfma(vcvt_u8_minus(q >> 4, bias), vload(x + 16 + j), qx);
        }
        float d = half_at(w);
        acc = vfma(qx, (vfloat){0} + d, acc);
        if (offset)
            acc = vfma(vsum(x, 32), (vfloat){0} + half_at(w + 2), acc);
    }
    return hsum(acc);
}
#endif

/* Q5_0: d, 4 bytes qh (bit j: the fifth bit of element j), 16 bytes of
 * nibbles as Q4_0; w = d·(q - 16). Q5_1: d, m, qh, qs; w = d·q + m. */
static float dot_q5(const uint8_t *w, const float *x, int n, bool offset)
{
    size_t bytes = offset ? 24 : 22;
    vfloat acc = {0};
    for (int b = 0; b < n / 32; b++, w += bytes, x += 32) {
        const uint8_t *qhp = w + (offset ? 4 : 2), *qs = qhp + 4;
        uint32_t qh;
        memcpy(&qh, qhp, 4);
        vfloat qx = {0};
        for (int j = 0; j < 16; j += VL) {
            vu8 q = vload_u8(qs + j), h0, h1;
#ifdef HAVE_LUT16
            /* the fifth bits as byte masks: one masked move each, not 16 scalar inserts */
            __m128i m0 = _mm_maskz_mov_epi8((__mmask16)(qh >> j), _mm_set1_epi8(16));
            __m128i m1 = _mm_maskz_mov_epi8((__mmask16)(qh >> (j + 16)), _mm_set1_epi8(16));
            memcpy(&h0, &m0, sizeof h0);
            memcpy(&h1, &m1, sizeof h1);
#else
            for (int k = 0; k < VL; k++) {
                h0[k] = (uint8_t)(((qh >> (j + k)) & 1) << 4);
                h1[k] = (uint8_t)(((qh >> (j + k + 16)) & 1) << 4);
            }
#endif
            qx = vfma(vcvt_u8_minus((q & 0xF) | h0, offset ? 0 : 16), vload(x + j), qx);
            qx = vfma(vcvt_u8_minus((q >> 4) | h1, offset ? 0 : 16), vload(x + 16 + j), qx);
        }
        float d = half_at(w);
        acc = vfma(qx, (vfloat){0} + d, acc);
        if (offset)
            acc = vfma(vsum(x, 32), (vfloat){0} + half_at(w + 2), acc);
    }
    return hsum(acc);
}

/* The 6-bit scale and min of sub-block j of a Q4_K/Q5_K super-block,
 * packed in 12 bytes as ggml packs them. */
static inline void scale_min_k4(int j, const uint8_t *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Q4_K (144 bytes per 256) and Q5_K (176): d, dmin (f16), 12 bytes of
 * scales and mins, [Q5_K: 32 bytes of fifth bits], 128 bytes of nibbles:
 * each 32 bytes hold two sub-blocks of 32 (low nibbles, then high).
 * w = d·sc·q - dmin·m per sub-block. */
/* Σx over each 32 of x[n]: the K-quants' min terms need them for every
 * row, so a matrix-vector product takes them once for all its rows. */
#define XSUM_MAX 2048 /* sums kept on the stack: rows of up to 65536 */
static void block_sums(const float *x, int n, float *xs)
{
    for (int i = 0; i < n / 32; i++)
        xs[i] = hsum(vsum(x + 32 * i, 32));
}

static float dot_qk45(const uint8_t *w, const float *x, int n, bool five, const float *xs)
{
    vfloat acc = {0};
    float mins = 0;
    for (int b = 0; b < n / 256; b++, w += five ? 176 : 144, xs += 8) {
        float d = half_at(w), dmin = half_at(w + 2);
        const uint8_t *scales = w + 4, *qh = w + 16, *qs = w + (five ? 48 : 16);
        for (int s = 0; s < 8; s += 2, qs += 32, x += 64) {
            int sc0, m0, sc1, m1;
            scale_min_k4(s, scales, &sc0, &m0);
            scale_min_k4(s + 1, scales, &sc1, &m1);
            vfloat qx0 = {0}, qx1 = {0};
            for (int j = 0; j < 32; j += VL) {
                vu8 q = vload_u8(qs + j), lo = q & 0xF, hi = q >> 4;
                if (five) {
                    vu8 h = vload_u8(qh + j);
#ifdef HAVE_LUT16
                    /* bit s of each byte as a mask, then 16 where set: no byte shifts */
                    __m128i hb, b0, b1;
                    memcpy(&hb, &h, sizeof hb);
                    b0 = _mm_maskz_mov_epi8(_mm_test_epi8_mask(hb, _mm_set1_epi8((char)(1 << s))), _mm_set1_epi8(16));
                    b1 = _mm_maskz_mov_epi8(_mm_test_epi8_mask(hb, _mm_set1_epi8((char)(2 << s))), _mm_set1_epi8(16));
                    vu8 f0, f1;
                    memcpy(&f0, &b0, sizeof f0);
                    memcpy(&f1, &b1, sizeof f1);
                    lo |= f0;
                    hi |= f1;
#else
                    lo |= ((h >> s) & 1) << 4;
                    hi |= ((h >> (s + 1)) & 1) << 4;
#endif
                }
                qx0 = vfma(vcvt_u8(lo), vload(x + j), qx0);
                qx1 = vfma(vcvt_u8(hi), vload(x + 32 + j), qx1);
            }
            acc = vfma(qx0, (vfloat){0} + d * (float)sc0, acc);
            acc = vfma(qx1, (vfloat){0} + d * (float)sc1, acc);
            mins += dmin * ((float)m0 * xs[s] + (float)m1 * xs[s + 1]);
        }
    }
    return hsum(acc) - mins;
}

/* Bytes shifted through 16-bit lanes (x86 has no byte shifts: GCC builds
 * a byte << 4 from four adds). Bits cross into the neighbouring byte, so
 * callers mask what they keep; shr16's top 4 bits come from the next byte
 * and are masked here. */
typedef uint16_t vu16b __attribute__((vector_size(VL)));
static inline vu8 shl16(vu8 v, int k)
{
    return (vu8)((vu16b)v << k);
}
static inline vu8 shr16(vu8 v, int k)
{
    return (vu8)((vu16b)v >> k) & (uint8_t)(0xFF >> k);
}

/* Q6_K (210 bytes per 256): 128 bytes of low nibbles ql, 64 of 2-bit high
 * parts qh, 16 int8 scales, d. In each half of 128: element l (l < 32) is
 * ql[l] low | qh[l] bits 0-1; l+32: ql[l+32] low | bits 2-3; l+64: ql[l]
 * high | bits 4-5; l+96: ql[l+32] high | bits 6-7; w = d·sc·(q - 32),
 * one scale per 16 elements. */
static float dot_q6_k(const uint8_t *w, const float *x, int n)
{
    vfloat acc = {0};
    for (int b = 0; b < n / 256; b++, w += 210) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192);
        float d = half_at(w + 208);
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, x += 128)
            for (int l = 0; l < 32; l += 16) {
                /* Four named accumulators, not an array: GCC kept an array
                 * of them on the stack (a store and load per block each). */
                vfloat p0 = {0}, p1 = {0}, p2 = {0}, p3 = {0};
                for (int j = l; j < l + 16; j += VL) {
                    vu8 a = vload_u8(ql + j), c = vload_u8(ql + 32 + j), h = vload_u8(qh + j);
                    p0 = vfma(vcvt_u8_minus((a & 0xF) | (shl16(h, 4) & 0x30), 32), vload(x + j), p0);
                    p1 = vfma(vcvt_u8_minus((c & 0xF) | (shl16(h, 2) & 0x30), 32), vload(x + 32 + j), p1);
                    p2 = vfma(vcvt_u8_minus(shr16(a, 4) | (h & 0x30), 32), vload(x + 64 + j), p2);
                    p3 = vfma(vcvt_u8_minus(shr16(c, 4) | (shr16(h, 2) & 0x30), 32), vload(x + 96 + j), p3);
                }
                int is = l / 16;
                acc = vfma(p0, (vfloat){0} + d * (float)sc[is], acc);
                acc = vfma(p1, (vfloat){0} + d * (float)sc[is + 2], acc);
                acc = vfma(p2, (vfloat){0} + d * (float)sc[is + 4], acc);
                acc = vfma(p3, (vfloat){0} + d * (float)sc[is + 6], acc);
            }
    }
    return hsum(acc);
}

/* ---- 4-bit types through a table of sixteen (AVX-512) ----
 * A block's 16 possible weights (d·(q-8) for Q4_0, d·q + m for Q4_1, the
 * K-quants' (d·sc)·q - dmin·m, the IQ4 grid times d) are computed once as
 * one vector, then each lane's nibble picks its weight with a single
 * permute (vpermps reads the low 4 bits of each index lane, so the low
 * nibble needs no mask). That replaces widening every weight to a float
 * (subtract, sign-extend, convert) with one instruction, and the weights
 * come out exactly as the reference decoders give them, so the dot is the
 * float dot of the decoded row. Measured on the bench machine (one core,
 * a 768 x 2048 Q4_0 matrix in cache): 16.1 -> 18.0-18.5 G weights/s.
 * Q4_0 and Q4_K now go through the mask kernels below (faster still, but
 * they need x laid out per product); the tables remain for Q4_1, the IQ4
 * types, Q4_0's last blocks and rows wider than XP_COLS_MAX. */
#ifdef HAVE_LUT16
static const float iq4_grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

static inline vfloat splat(float v)
{
    return (vfloat){0} + v;
}

static inline vfloat iota16(void)
{
    return (vfloat){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
}

/* 16 bytes of nibbles as 16 int32 lanes: the low nibble in bits 0-3, the
 * high one in bits 4-7 (shift by 4 to pick it). */
static inline __m512i nibble_lanes(const uint8_t *p)
{
    __m128i b;
    memcpy(&b, p, sizeof b);
    return _mm512_cvtepu8_epi32(b);
}

static inline vfloat pick(__m512i idx, vfloat lut)
{
    return (vfloat)_mm512_permutexvar_ps(idx, (__m512)lut);
}

/* Σ over 32 weights of lut[nibble]·x: 16 bytes, low nibbles for x[0..15],
 * high for x[16..31] (Q4_0, Q4_1, IQ4_NL, an IQ4_XS sub-block). */
static inline void lut_block32(const uint8_t *qs, vfloat lut, const float *x, vfloat *a0, vfloat *a1)
{
    __m512i q = nibble_lanes(qs);
    *a0 = vfma(pick(q, lut), vload(x), *a0);
    *a1 = vfma(pick(_mm512_srli_epi32(q, 4), lut), vload(x + 16), *a1);
}

static float dot_q4_lut(const uint8_t *w, const float *x, int n, bool offset)
{
    size_t bytes = offset ? 20 : 18;
    vfloat a0 = {0}, a1 = {0}, levels = offset ? iota16() : iota16() - 8;
    for (int b = 0; b < n / 32; b++, w += bytes, x += 32) {
        vfloat lut = offset ? vfma(levels, splat(half_at(w)), splat(half_at(w + 2))) : levels * splat(half_at(w));
        lut_block32(w + (offset ? 4 : 2), lut, x, &a0, &a1);
    }
    return hsum(a0 + a1);
}

static float dot_iq4_nl(const uint8_t *w, const float *x, int n)
{
    vfloat a0 = {0}, a1 = {0}, grid = vload(iq4_grid);
    for (int b = 0; b < n / 32; b++, w += 18, x += 32)
        lut_block32(w + 2, grid * splat(half_at(w)), x, &a0, &a1);
    return hsum(a0 + a1);
}

/* IQ4_XS sub-block j's scale, less its bias of 32 (quant.c's layout) */
static inline int iq4_xs_scale(const uint8_t *w, int j)
{
    uint16_t high;
    memcpy(&high, w + 2, 2);
    return (((w[4 + j / 2] >> (4 * (j % 2))) & 15) | ((high >> (2 * j)) & 3) << 4) - 32;
}

static float dot_iq4_xs(const uint8_t *w, const float *x, int n)
{
    vfloat a0 = {0}, a1 = {0}, grid = vload(iq4_grid);
    for (int b = 0; b < n / 256; b++, w += 136) {
        float d = half_at(w);
        for (int j = 0; j < 8; j++, x += 32)
            lut_block32(w + 8 + 16 * j, grid * splat(d * (float)iq4_xs_scale(w, j)), x, &a0, &a1);
    }
    return hsum(a0 + a1);
}

/* Q4_K: each sub-block's table holds its min too, so no Σx is needed. */
static float dot_q4_k_lut(const uint8_t *w, const float *x, int n)
{
    vfloat a0 = {0}, a1 = {0}, levels = iota16();
    for (int b = 0; b < n / 256; b++, w += 144) {
        float d = half_at(w), dmin = half_at(w + 2);
        const uint8_t *qs = w + 16;
        for (int s = 0; s < 8; s += 2, qs += 32, x += 64) {
            int sc0, m0, sc1, m1;
            scale_min_k4(s, w + 4, &sc0, &m0);
            scale_min_k4(s + 1, w + 4, &sc1, &m1);
            vfloat lut0 = levels * splat(d * (float)sc0) - splat(dmin * (float)m0);
            vfloat lut1 = levels * splat(d * (float)sc1) - splat(dmin * (float)m1);
            for (int j = 0; j < 32; j += 16) {
                __m512i q = nibble_lanes(qs + j);
                a0 = vfma(pick(q, lut0), vload(x + j), a0);
                a1 = vfma(pick(_mm512_srli_epi32(q, 4), lut1), vload(x + 32 + j), a1);
            }
        }
    }
    return hsum(a0 + a1);
}

/* IQ4 rows decoded for panels (prompts) through the same tables. */
static bool lut_row(as_ggml_type type, const uint8_t *row, int n, float *out)
{
    vfloat grid = vload(iq4_grid);
    if (type == AS_GGML_IQ4_NL) {
        for (int b = 0; b < n / 32; b++, row += 18, out += 32) {
            vfloat lut = grid * splat(half_at(row));
            __m512i q = nibble_lanes(row + 2);
            vstore(out, pick(q, lut));
            vstore(out + 16, pick(_mm512_srli_epi32(q, 4), lut));
        }
        return true;
    }
    if (type == AS_GGML_IQ4_XS) {
        for (int b = 0; b < n / 256; b++, row += 136) {
            float d = half_at(row);
            for (int j = 0; j < 8; j++, out += 32) {
                vfloat lut = grid * splat(d * (float)iq4_xs_scale(row, j));
                __m512i q = nibble_lanes(row + 8 + 16 * j);
                vstore(out, pick(q, lut));
                vstore(out + 16, pick(_mm512_srli_epi32(q, 4), lut));
            }
        }
        return true;
    }
    return false;
}

/* ---- Q4_0, Q4_K, Q5_K and Q6_K by masks, with x laid out to match (AVX-512) ----
 * A 512-bit load of packed weights holds 16 lanes of 32 bits, each with 8
 * nibbles (Q6_K: 4 six-bit values once its high bits are merged in). The
 * value in bits 4k..4k+3 is taken by one AND, which leaves it as q·2^(4k),
 * an integer the conversion to float gives exactly; x is laid out once per
 * matrix-vector product so that lane l of vector k holds the x that
 * multiplies lane l's k-th value, times 2^(-4k), and the FMA then adds
 * q·x exactly as the reference's product. So 16 weights cost an AND, a
 * conversion and an FMA with no shuffles (the table lookups above spend a
 * vpermps and a widening per 16). The zero points (8, 32) and Q4_K's mins
 * come in through x's block sums: Σ d·(q - 8)·x = d·(Σ q·x - 8·Σx).
 * The products are the reference's; the sums run in another order, so
 * the results equal the reference decoders' dot within rounding (the
 * zero point subtracted after summing can cost a few ulps of Σ|w·x|;
 * tests/test_weight.c holds every type to its bound). An x below about
 * 1e-31 in magnitude loses bits to the 2^-24 scaling (activations are
 * normalised, so never in practice).
 * Measured (one core, a 768 x 2048 matrix in cache, G weights/s):
 * Q4_0 19.3 -> 23.7, Q4_K 12.8 -> 23.2, Q6_K 10.5 -> 17.3; Q5_K (bench --only
 * kernels, hot, one thread) 10.5 -> 15.7. */
#define XP_COLS_MAX 16384                  /* wider rows take the kernels above */
#define XP_FLOATS_MAX (XP_COLS_MAX / 256 * 320) /* Q6_K's layout is the largest */

/* Lane 4p + j of the result is lane 4j + p of v (a 4x4 transpose in each
 * 128-bit quarter). */
static inline __m512 quarter_transpose(__m512 v)
{
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), v);
}

/* Four runs of 16 floats read with stride 4: o[p] lane 4m + j is run m's
 * element 4j + p. */
static inline void stride4(const float *r0, const float *r1, const float *r2, const float *r3, __m512 o[4])
{
    __m512 t0 = quarter_transpose(_mm512_loadu_ps(r0)), t1 = quarter_transpose(_mm512_loadu_ps(r1));
    __m512 t2 = quarter_transpose(_mm512_loadu_ps(r2)), t3 = quarter_transpose(_mm512_loadu_ps(r3));
    __m512 u0 = _mm512_shuffle_f32x4(t0, t1, 0x44), u1 = _mm512_shuffle_f32x4(t0, t1, 0xEE);
    __m512 u2 = _mm512_shuffle_f32x4(t2, t3, 0x44), u3 = _mm512_shuffle_f32x4(t2, t3, 0xEE);
    o[0] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    o[1] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
    o[2] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    o[3] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
}

/* 2^(-e) as a float (e <= 28): scaling by it is exact for normal x */
static inline __m512 pow2_neg(int e)
{
    return _mm512_set1_ps(1.0f / (float)(1u << e));
}

/* x laid out for `type` in xp; false when the type has no mask kernel or
 * the row is wider than XP_COLS_MAX. Per 4 blocks of Q4_0 (128 x): 8
 * vectors (value k of each lane; k = 7 unscaled, the kernel shifts it down)
 * and one of -8·Σx spread over the 4 lanes of each block. Per Q4_K and
 * Q5_K super-block: 2 x 8 vectors, then the 8 sub-blocks' Σx. Per Q6_K super-block: for each half
 * of 128, 8 vectors (byte p of each lane, scaled 2^(-8p)), then 2 of
 * -32·Σx spread over the 4 lanes of each sub-block of 16. */
static bool xp_prepare(as_ggml_type type, const float *x, int n, float *xp)
{
    __m512 o[4];
    if (n > XP_COLS_MAX)
        return false;
    switch (type) {
    case AS_GGML_Q4_0:
        for (int g = 0; g < n / 128; g++, x += 128, xp += 144) {
            __m512 sum = _mm512_setzero_ps();
            for (int nb = 0; nb < 2; nb++) {
                stride4(x + 16 * nb, x + 32 + 16 * nb, x + 64 + 16 * nb, x + 96 + 16 * nb, o);
                for (int p = 0; p < 4; p++) {
                    int k = 2 * p + nb;
                    sum = _mm512_add_ps(sum, o[p]);
                    _mm512_storeu_ps(xp + 16 * k, k == 7 ? o[p] : _mm512_mul_ps(o[p], pow2_neg(4 * k)));
                }
            }
            _mm512_storeu_ps(xp + 128, _mm512_mul_ps(sum, _mm512_set1_ps(-8.0f)));
        }
        return true;
    case AS_GGML_Q4_K:
    case AS_GGML_Q5_K: /* the same lanes; Q4_K scaled by nibble (k = 7 left for the shift), Q5_K by byte */
        for (int s = 0; s < n / 256; s++, x += 256, xp += 264) {
            for (int z = 0; z < 2; z++)
                for (int nb = 0; nb < 2; nb++) {
                    const float *r = x + 16 * (8 * z + 2 * nb);
                    stride4(r, r + 16, r + 64, r + 80, o);
                    for (int p = 0; p < 4; p++) {
                        int k = 2 * p + nb, e = type == AS_GGML_Q5_K ? 8 * p : k == 7 ? 0 : 4 * k;
                        _mm512_storeu_ps(xp + 128 * z + 16 * k, _mm512_mul_ps(o[p], pow2_neg(e)));
                    }
                }
            block_sums(x, 256, xp + 256);
        }
        return true;
    case AS_GGML_Q6_K:
        for (int s = 0; s < n / 256; s++, x += 256, xp += 320)
            for (int h = 0; h < 2; h++)
                for (int nb = 0; nb < 2; nb++) {
                    const float *r = x + 128 * h + 64 * nb;
                    __m512 sum = _mm512_setzero_ps();
                    stride4(r, r + 16, r + 32, r + 48, o);
                    for (int p = 0; p < 4; p++) {
                        sum = _mm512_add_ps(sum, o[p]);
                        _mm512_storeu_ps(xp + 128 * h + 16 * (2 * p + nb), _mm512_mul_ps(o[p], pow2_neg(8 * p)));
                    }
                    _mm512_storeu_ps(xp + 256 + 32 * h + 16 * nb, _mm512_mul_ps(sum, _mm512_set1_ps(-32.0f)));
                }
        return true;
    default:
        return false;
    }
}

/* The value in bits 4k..4k+3 of each lane, as q·2^(4k), times xp's vector k */
#define NIBBLE_FMA(v, k, xp, acc)                                                                                  \
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)(0xFu << (4 * (k)))))), \
                          _mm512_loadu_ps((xp) + 16 * (k)), acc)
/* All 8 values of v: even k into a0, odd into a1; the top one shifted down
 * (as an int32 it would be negative). */
#define NIBBLES8(v, xp, a0, a1)                                                                                    \
    do {                                                                                                           \
        NIBBLE_FMA(v, 0, xp, a0);                                                                                  \
        NIBBLE_FMA(v, 1, xp, a1);                                                                                  \
        NIBBLE_FMA(v, 2, xp, a0);                                                                                  \
        NIBBLE_FMA(v, 3, xp, a1);                                                                                  \
        NIBBLE_FMA(v, 4, xp, a0);                                                                                  \
        NIBBLE_FMA(v, 5, xp, a1);                                                                                  \
        NIBBLE_FMA(v, 6, xp, a0);                                                                                  \
        a1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(v, 28)), _mm512_loadu_ps((xp) + 112), a1);      \
    } while (0)

/* Q4_0, 4 blocks at a time: their 16-byte nibble runs side by side (lanes
 * 4b..4b+3 are block b's), each lane's sum times its block's d; the last
 * n/32 mod 4 blocks through the table. */
static float dot_q4_0_mask(const uint8_t *w, const float *x, const float *xp, int n)
{
    const __m512i quad = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512 tot = _mm512_setzero_ps();
    int g = 0;
    for (; g < n / 128; g++, w += 72, xp += 144) {
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(w + 2)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(w + 20)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(w + 38)), 2);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(w + 56)), 3);
        uint64_t dq = 0;
        for (int b = 0; b < 4; b++) {
            uint16_t h;
            memcpy(&h, w + 18 * b, 2);
            dq |= (uint64_t)h << (16 * b);
        }
        __m512 d = _mm512_permutexvar_ps(quad, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)dq))));
        __m512 a0 = _mm512_loadu_ps(xp + 128), a1 = _mm512_setzero_ps();
        NIBBLES8(v, xp, a0, a1);
        tot = _mm512_fmadd_ps(_mm512_add_ps(a0, a1), d, tot);
    }
    vfloat t0 = {0}, t1 = {0}, levels = iota16() - 8;
    x += 128 * g;
    for (int b = 4 * g; b < n / 32; b++, w += 18, x += 32)
        lut_block32(w + 2, levels * splat(half_at(w)), x, &t0, &t1);
    return hsum((vfloat)tot + (t0 + t1));
}

/* Q4_K: the 128 nibble bytes as two loads; in load z, lanes 0-7 cover
 * sub-blocks 4z (even k) and 4z + 1 (odd), lanes 8-15 4z + 2 and 4z + 3. */
/* A Q4_K/Q5_K super-block's 8 scales times d (returned) and its mins
 * times dmin dotted with x's sub-block sums xs, added to *mins. */
static inline __m256 k_scales(const uint8_t *w, const float *xs, __m256 *mins)
{
    uint32_t u0, u1, u2; /* the 12 bytes of 6-bit scales and mins, as quant.c unpacks them */
    memcpy(&u0, w + 4, 4);
    memcpy(&u1, w + 8, 4);
    memcpy(&u2, w + 12, 4);
    uint64_t sc = (u0 & 0x3f3f3f3fu) | (uint64_t)((u2 & 0x0f0f0f0fu) | ((u0 >> 2) & 0x30303030u)) << 32;
    uint64_t mn = (u1 & 0x3f3f3f3fu) | (uint64_t)(((u2 >> 4) & 0x0f0f0f0fu) | ((u1 >> 2) & 0x30303030u)) << 32;
    __m256 mnf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mn))),
                               _mm256_set1_ps(half_at(w + 2)));
    *mins = _mm256_fmadd_ps(mnf, _mm256_loadu_ps(xs), *mins);
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc))),
                         _mm256_set1_ps(half_at(w)));
}

/* tot += a0·(scale of sub-blocks 4z, 4z + 2 by lane half) + a1·(4z + 1, 4z + 3) */
static inline __m512 k_scaled(__m512 a0, __m512 a1, __m256 scales, int z, __m512 tot)
{
    const __m512i halves = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    __m512 s16 = _mm512_castps256_ps512(scales);
    __m512i i0 = _mm512_add_epi32(halves, _mm512_set1_epi32(4 * z));
    tot = _mm512_fmadd_ps(a0, _mm512_permutexvar_ps(i0, s16), tot);
    return _mm512_fmadd_ps(a1, _mm512_permutexvar_ps(_mm512_add_epi32(i0, _mm512_set1_epi32(1)), s16), tot);
}

static inline float k_total(__m512 tot, __m256 mins)
{
    vfloat m16 = (vfloat)_mm512_castps256_ps512(mins);
    for (int i = 8; i < 16; i++)
        m16[i] = 0;
    return hsum((vfloat)tot) - hsum(m16);
}

static float dot_q4_k_mask(const uint8_t *w, const float *xp, int n)
{
    __m512 tot = _mm512_setzero_ps();
    __m256 mins = _mm256_setzero_ps();
    for (int s = 0; s < n / 256; s++, w += 144, xp += 264) {
        __m256 scales = k_scales(w, xp + 256, &mins);
        for (int z = 0; z < 2; z++) {
            __m512i v = _mm512_loadu_si512(w + 16 + 64 * z);
            const float *xz = xp + 128 * z;
            __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
            NIBBLES8(v, xz, a0, a1);
            tot = k_scaled(a0, a1, scales, z, tot);
        }
    }
    return k_total(tot, mins);
}

/* e and o (even and odd k) hold a value in bits 8p.. of each lane under
 * mask << 8p; each taken by one AND as q·2^(8p), times xp's vector k
 * (laid out scaled by 2^(-8p)), into a0 (even) and a1 (odd). */
static inline void byte_values(__m512i e, __m512i o, unsigned mask, const float *xp, __m512 *a0, __m512 *a1)
{
    for (int p = 0; p < 4; p++) {
        __m512i m = _mm512_set1_epi32((int)(mask << (8 * p)));
        *a0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(e, m)), _mm512_loadu_ps(xp + 32 * p), *a0);
        *a1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(o, m)), _mm512_loadu_ps(xp + 32 * p + 16), *a1);
    }
}

/* Q5_K: Q4_K's lanes, with each value's fifth bit from qh (32 bytes, in
 * both halves of a load: lane L's dword is qh bytes 4(L mod 8)..+3, and
 * the bit for sub-block j is bit j of its byte). Merged per load into e
 * (even k) and o (odd k), bits 8p..8p+4 of each lane a 5-bit value, taken
 * by one AND as q·2^(8p) (xp is scaled by byte). The fifth bit moves from
 * bit 2c + nb of its byte (c = 2z + (L >= 8)) to bit 4: left for z = 0,
 * right for z = 1. */
static float dot_q5_k_mask(const uint8_t *w, const float *xp, int n)
{
    const __m512i left_e = _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i left_o = _mm512_setr_epi32(3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i right_e = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i right_o = _mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m512i low4 = _mm512_set1_epi32(0x0F0F0F0F), bit4 = _mm512_set1_epi32(0x10101010);
    __m512 tot = _mm512_setzero_ps();
    __m256 mins = _mm256_setzero_ps();
    for (int s = 0; s < n / 256; s++, w += 176, xp += 264) {
        __m256 scales = k_scales(w, xp + 256, &mins);
        __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w + 16)));
        for (int z = 0; z < 2; z++) {
            __m512i v = _mm512_loadu_si512(w + 48 + 64 * z);
            __m512i he = z ? _mm512_srlv_epi32(qh, right_e) : _mm512_sllv_epi32(qh, left_e);
            __m512i ho = z ? _mm512_srlv_epi32(qh, right_o) : _mm512_sllv_epi32(qh, left_o);
            /* 0xE4: low4 ? the nibble : the fifth bit */
            __m512i e = _mm512_ternarylogic_epi32(v, _mm512_and_si512(he, bit4), low4, 0xE4);
            __m512i o = _mm512_ternarylogic_epi32(_mm512_srli_epi32(v, 4), _mm512_and_si512(ho, bit4), low4, 0xE4);
            __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
            byte_values(e, o, 0x1F, xp + 128 * z, &a0, &a1);
            tot = k_scaled(a0, a1, scales, z, tot);
        }
    }
    return k_total(tot, mins);
}

/* Q6_K: per half, the 64 low-nibble bytes as one load and the 32 high-bit
 * bytes in both halves of another. Lane L, byte p of ql holds elements
 * 4L + p (low nibble) and 4L + p + 64 (high); their high bits sit in qh
 * byte 4(L mod 8) + p at bit 2·(L >= 8) (+4 for the second). Merged once
 * per half into e (even k) and o (odd): bits 8p..8p+5 of each lane hold
 * a 6-bit value, taken by one AND as q·2^(8p). Lanes 4i..4i+3 cover
 * sub-block i (even k) and i + 4 (odd). */
static float dot_q6_k_mask(const uint8_t *w, const float *xp, int n)
{
    const __m512i up = _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i down = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i quad = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i low4 = _mm512_set1_epi32(0x0F0F0F0F), high2 = _mm512_set1_epi32(0x30303030);
    __m512 tot = _mm512_setzero_ps();
    for (int s = 0; s < n / 256; s++, w += 210, xp += 320) {
        __m512 scales = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(w + 192)))),
                                      _mm512_set1_ps(half_at(w + 208)));
        for (int h = 0; h < 2; h++) {
            __m512i ql = _mm512_loadu_si512(w + 64 * h);
            __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w + 128 + 32 * h)));
            /* 0xE4: low4 ? ql : the high bits */
            __m512i e = _mm512_ternarylogic_epi32(ql, _mm512_and_si512(_mm512_sllv_epi32(qh, up), high2), low4, 0xE4);
            __m512i o = _mm512_ternarylogic_epi32(_mm512_srli_epi32(ql, 4),
                                                  _mm512_and_si512(_mm512_srlv_epi32(qh, down), high2), low4, 0xE4);
            const float *xh = xp + 128 * h;
            __m512 a0 = _mm512_loadu_ps(xp + 256 + 32 * h), a1 = _mm512_loadu_ps(xp + 256 + 32 * h + 16);
            byte_values(e, o, 0x3F, xh, &a0, &a1);
            __m512i i0 = _mm512_add_epi32(quad, _mm512_set1_epi32(8 * h));
            tot = _mm512_fmadd_ps(a0, _mm512_permutexvar_ps(i0, scales), tot);
            tot = _mm512_fmadd_ps(a1, _mm512_permutexvar_ps(_mm512_add_epi32(i0, _mm512_set1_epi32(4)), scales), tot);
        }
    }
    return hsum((vfloat)tot);
}

/* A row of a type xp_prepare laid x out for */
static float dot_xp(as_ggml_type type, const uint8_t *row, const float *x, const float *xp, int n)
{
    switch (type) {
    case AS_GGML_Q4_0:
        return dot_q4_0_mask(row, x, xp, n);
    case AS_GGML_Q4_K:
        return dot_q4_k_mask(row, xp, n);
    case AS_GGML_Q5_K:
        return dot_q5_k_mask(row, xp, n);
    default:
        return dot_q6_k_mask(row, xp, n);
    }
}
#endif

/* Any other type the table decodes: a chunk of whole blocks at a time
 * decoded by its reference decoder into a buffer that stays in L1, then
 * dotted as floats. Every type is right this way before it is fast; the
 * common ones have kernels of their own above. */
#define CHUNK 256 /* a multiple of every block size (32, 256) */
static float dot_blocks(as_ggml_type type, const uint8_t *row, const float *x, int n)
{
    const as_ggml_traits *tr = as_ggml_traits_of(type);
    float buf[CHUNK] __attribute__((aligned(64)));
    size_t chunk_bytes = (size_t)CHUNK / tr->block_elems * tr->block_bytes;
    float s = 0;
    int j = 0;
    for (; j + CHUNK <= n; j += CHUNK, row += chunk_bytes) {
        tr->to_f32(row, CHUNK, buf);
        s += simd_dot(buf, x + j, CHUNK);
    }
    if (j < n) { /* rows of 32-blocks need not fill the last chunk */
        tr->to_f32(row, (uint64_t)(n - j), buf);
        s += simd_dot(buf, x + j, n - j);
    }
    return s;
}

/* Row r decoded, vectorized as the dots are (a prompt decodes every row
 * of every matrix into panels). The same values as the reference
 * decoders in quant.c: conversions are exact, Q8_0's d·q one rounding. */
static void simd_weight_row(const as_weight *w, int r, float *out)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
    int n = w->cols, j = 0;
    switch (w->type) {
    case AS_GGML_F16:
        for (; j + VL <= n; j += VL)
            vstore(out + j, vload_f16((const uint16_t *)row + j));
        for (; j < n; j++)
            out[j] = as_f16_to_f32(((const uint16_t *)row)[j]);
        return;
    case AS_GGML_BF16:
        for (; j + VL <= n; j += VL)
            vstore(out + j, vload_bf16((const uint16_t *)row + j));
        for (; j < n; j++)
            out[j] = as_bf16_to_f32(((const uint16_t *)row)[j]);
        return;
    case AS_GGML_Q8_0:
        for (int b = 0; b < n / AS_QK8_0; b++, row += 2 + AS_QK8_0, out += AS_QK8_0) {
            uint16_t dh;
            memcpy(&dh, row, 2);
            vfloat d = (vfloat){0} + f16_scalar(dh);
            for (int k = 0; k < AS_QK8_0; k += VL)
                vstore(out + k, vload_i8((const int8_t *)row + 2 + k) * d);
        }
        return;
    case AS_GGML_Q4_0: /* (q - 8)·d, as q4_0_to_f32 */
        for (int b = 0; b < n / 32; b++, row += 18, out += 32) {
            vfloat d = (vfloat){0} + half_at(row);
            for (int l = 0; l < 16; l += VL) {
                vu8 q = vload_u8(row + 2 + l);
                vstore(out + l, vcvt_u8_minus(q & 0xF, 8) * d);
                vstore(out + 16 + l, vcvt_u8_minus(q >> 4, 8) * d);
            }
        }
        return;
    case AS_GGML_Q4_K: /* (d·sc)·q - dmin·m per sub-block of 32, as q4_k_to_f32 */
        for (int b = 0; b < n / 256; b++, row += 144, out += 256) {
            float d = half_at(row), dmin = half_at(row + 2);
            for (int s = 0; s < 8; s += 2) {
                int sc0, m0, sc1, m1;
                scale_min_k4(s, row + 4, &sc0, &m0);
                scale_min_k4(s + 1, row + 4, &sc1, &m1);
                vfloat d0 = (vfloat){0} + d * (float)sc0, n0 = (vfloat){0} + dmin * (float)m0;
                vfloat d1 = (vfloat){0} + d * (float)sc1, n1 = (vfloat){0} + dmin * (float)m1;
                const uint8_t *qs = row + 16 + 16 * s;
                for (int l = 0; l < 32; l += VL) {
                    vu8 q = vload_u8(qs + l);
                    vstore(out + 32 * s + l, vcvt_u8(q & 0xF) * d0 - n0);
                    vstore(out + 32 * s + 32 + l, vcvt_u8(q >> 4) * d1 - n1);
                }
            }
        }
        return;
    case AS_GGML_Q6_K: /* (d·sc)·(q - 32), one scale per 16, as q6_k_to_f32 */
        for (int b = 0; b < n / 256; b++, row += 210, out += 256) {
            const int8_t *sc = (const int8_t *)(row + 192);
            float d = half_at(row + 208);
            for (int h = 0; h < 2; h++) {
                const uint8_t *ql = row + 64 * h, *qh = row + 128 + 32 * h;
                float *o = out + 128 * h;
                for (int l = 0; l < 32; l += VL) {
                    vu8 a = vload_u8(ql + l), c = vload_u8(ql + 32 + l), hb = vload_u8(qh + l);
                    const int8_t *s16 = sc + 8 * h + l / 16; /* VL <= 16: one scale per vector */
                    vstore(o + l, vcvt_u8_minus((a & 0xF) | (shl16(hb, 4) & 0x30), 32) *
                                      ((vfloat){0} + d * (float)s16[0]));
                    vstore(o + 32 + l, vcvt_u8_minus((c & 0xF) | (shl16(hb, 2) & 0x30), 32) *
                                           ((vfloat){0} + d * (float)s16[2]));
                    vstore(o + 64 + l, vcvt_u8_minus(shr16(a, 4) | (hb & 0x30), 32) *
                                           ((vfloat){0} + d * (float)s16[4]));
                    vstore(o + 96 + l, vcvt_u8_minus(shr16(c, 4) | (shr16(hb, 2) & 0x30), 32) *
                                           ((vfloat){0} + d * (float)s16[6]));
                }
            }
        }
        return;
    case AS_GGML_F32:
        memcpy(out, row, (size_t)n * sizeof *out);
        return;
    default:
#ifdef HAVE_LUT16
        if (lut_row(w->type, row, n, out))
            return;
#endif
        as_ggml_traits_of(w->type)->to_f32(row, (uint64_t)n, out);
        return;
    }
}

/* A Q4_K/Q5_K row with x's block sums given (a matrix-vector product's,
 * taken once), or taken here. */
static float dot_k_sums(const as_weight *w, const uint8_t *row, const float *x, const float *xs)
{
    float own[XSUM_MAX];
    bool five = w->type == AS_GGML_Q5_K;
    if (xs)
        return dot_qk45(row, x, w->cols, five, xs);
    if (w->cols / 32 <= XSUM_MAX) {
        block_sums(x, w->cols, own);
        return dot_qk45(row, x, w->cols, five, own);
    }
    /* wider than any model: the sums a chunk at a time would need a heap
     * buffer; take them block by block instead */
    float s = 0;
    size_t bytes = five ? 176 : 144;
    for (int b = 0; b < w->cols / 256; b++) {
        block_sums(x + 256 * b, 256, own);
        s += dot_qk45(row + b * bytes, x + 256 * b, 256, five, own);
    }
    return s;
}

static float simd_weight_dot(const as_weight *w, int r, const float *x)
{
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
#ifdef HAVE_LUT16
    /* the layout a matrix-vector product makes once, made for one row, so
     * that a row's dot is the product's row bit for bit */
    float xp[XP_FLOATS_MAX] __attribute__((aligned(64)));
    if (xp_prepare(w->type, x, w->cols, xp))
        return dot_xp(w->type, row, x, xp, w->cols);
#endif
    switch (w->type) {
    case AS_GGML_F16:
        return dot_f16((const uint16_t *)row, x, w->cols);
    case AS_GGML_BF16:
        return dot_bf16((const uint16_t *)row, x, w->cols);
    case AS_GGML_Q8_0:
        return dot_q8_0(row, x, w->cols);
    case AS_GGML_Q4_0:
    case AS_GGML_Q4_1:
#ifdef HAVE_LUT16
        return dot_q4_lut(row, x, w->cols, w->type == AS_GGML_Q4_1);
    case AS_GGML_IQ4_NL:
        return dot_iq4_nl(row, x, w->cols);
    case AS_GGML_IQ4_XS:
        return dot_iq4_xs(row, x, w->cols);
    case AS_GGML_Q4_K:
        return dot_q4_k_lut(row, x, w->cols);
#else
        return dot_q4(row, x, w->cols, w->type == AS_GGML_Q4_1);
    case AS_GGML_Q4_K:
        return dot_k_sums(w, row, x, NULL);
#endif
    case AS_GGML_Q5_0:
    case AS_GGML_Q5_1:
        return dot_q5(row, x, w->cols, w->type == AS_GGML_Q5_1);
    case AS_GGML_Q5_K:
        return dot_k_sums(w, row, x, NULL);
    case AS_GGML_Q6_K:
        return dot_q6_k(row, x, w->cols);
    case AS_GGML_F32:
        return simd_dot((const float *)row, x, w->cols);
    default:
        return dot_blocks(w->type, row, x, w->cols);
    }
}

static void simd_matvec_rows_ld(const float *x, int in, const float *w, size_t ld, float *y, int r0, int r1);

static void simd_matvec_rows(const float *x, const as_weight *wt, const float *b, float *y, int r0, int r1)
{
    float xs[XSUM_MAX];
#ifdef HAVE_LUT16
    float xp[XP_FLOATS_MAX] __attribute__((aligned(64)));
    bool laid = xp_prepare(wt->type, x, wt->cols, xp);
    /* rows too wide for the layout: Q4_K's tables hold the mins, Q5_K takes the sums */
    bool ksums = !laid && wt->type == AS_GGML_Q5_K && wt->cols / 32 <= XSUM_MAX;
#else
    bool ksums = (wt->type == AS_GGML_Q4_K || wt->type == AS_GGML_Q5_K) && wt->cols / 32 <= XSUM_MAX;
#endif
    if (ksums)
        block_sums(x, wt->cols, xs);
#ifdef HAVE_LUT16
    if (laid) {
        const uint8_t *rows = wt->data;
        for (int r = r0; r < r1; r++)
            y[r] = dot_xp(wt->type, rows + (size_t)r * wt->row_bytes, x, xp, wt->cols);
    } else
#endif
    if (wt->type == AS_GGML_F32)
        simd_matvec_rows_ld(x, wt->cols, wt->data, wt->row_bytes / sizeof(float), y, r0, r1);
    else if (ksums)
        for (int r = r0; r < r1; r++)
            y[r] = dot_k_sums(wt, (const uint8_t *)wt->data + (size_t)r * wt->row_bytes, x, xs);
    else
        for (int r = r0; r < r1; r++)
            y[r] = simd_weight_dot(wt, r, x);
    if (b)
        for (int r = r0; r < r1; r++)
            y[r] += b[r];
}

static void simd_matvec_rows_ld(const float *x, int in, const float *w, size_t ld, float *y, int r0, int r1)
{
    /* Rows apart in memory (a head's keys in the KV cache) defeat the
     * hardware's sequential prefetch: ask for a row a few ahead. */
    bool strided = ld > (size_t)in;
    for (int r = r0; r < r1; r++) {
        if (strided && r + 8 < r1)
            for (int j = 0; j < in; j += 64 / (int)sizeof(float))
                __builtin_prefetch(w + (size_t)(r + 8) * ld + j);
        y[r] = simd_dot(w + (size_t)r * ld, x, in);
    }
}

static void simd_mix_heads(const float *const *p, int heads, int keys, const float *v, size_t ld, int group, int h0,
                  float *z, int dh)
{
    memset(z, 0, (size_t)heads * (size_t)dh * sizeof *z);
    /* Key by key, so each cached row's slice is read whole and the rows in
     * order. Every z element still sums its keys in order, fused where the
     * vector path fuses, whatever the heads' grouping. */
    for (int t = 0; t < keys; t++) {
        const float *vt = v + (size_t)t * ld;
        /* Rows ld apart: prefetch the slice a few keys ahead (see simd_matvec_rows_ld). */
        for (size_t a = (size_t)(h0 / group) * dh; t + 8 < keys && a < (size_t)((h0 + heads - 1) / group + 1) * dh;
             a += 64 / sizeof(float))
            __builtin_prefetch(vt + 8 * ld + a);
        for (int h = 0; h < heads; h++) {
            const float *vh = vt + (size_t)((h0 + h) / group) * (size_t)dh;
            float *zh = z + (size_t)h * (size_t)dh, pt = p[h][t];
            int j = 0;
            for (; j + VL <= dh; j += VL)
                vstore(zh + j, vfma((vfloat){0} + pt, vload(vh + j), vload(zh + j)));
            for (; j < dh; j++)
                zh[j] += pt * vh[j];
        }
    }
}

static bool simd_all_finite(const float *x, long n)
{
    typedef uint32_t vbits __attribute__((vector_size(VL * sizeof(uint32_t))));
    const vbits expo = (vbits){0} + 0x7f800000u;
    vbits bad = {0};
    long j = 0;
    /* Inf and NaN are the values whose exponent bits are all ones. */
    for (; j + VL <= n; j += VL) {
        vbits u;
        memcpy(&u, x + j, sizeof u);
        bad |= (u & expo) == expo;
    }
    for (int k = 0; k < VL; k++)
        if (bad[k])
            return false;
    for (; j < n; j++)
        if (!isfinite(x[j]))
            return false;
    return true;
}

static void top_insert(as_norm_stat *st, int dim, float v)
{
    float a = fabsf(v);
    int k = AS_NORM_TOP;
    while (k > 0 && (st->top_dim[k - 1] < 0 || fabsf(st->top_val[k - 1]) < a))
        k--;
    if (k >= AS_NORM_TOP)
        return;
    for (int j = AS_NORM_TOP - 1; j > k; j--) {
        st->top_dim[j] = st->top_dim[j - 1];
        st->top_val[j] = st->top_val[j - 1];
    }
    st->top_dim[k] = dim;
    st->top_val[k] = v;
}

typedef double vdouble __attribute__((vector_size(VL / 2 * sizeof(double))));
typedef float vhalf __attribute__((vector_size(VL / 2 * sizeof(float))));

/* x[i] (i a multiple of VL/2) widened to doubles. */
static inline vdouble vload_wide(const float *x)
{
    vhalf h;
    memcpy(&h, x, sizeof h);
    return __builtin_convertvector(h, vdouble);
}

static double hsum_wide(vdouble v)
{
    double s = 0;
    for (int k = 0; k < VL / 2; k++)
        s += v[k];
    return s;
}

/* Σ (x[i] - c)² in double. */
static double sum_sq(const float *x, int d, double c)
{
    vdouble acc = {0};
    int i = 0;
    for (; i + VL / 2 <= d; i += VL / 2) {
        vdouble v = vload_wide(x + i) - c;
        acc += v * v;
    }
    double s = hsum_wide(acc);
    for (; i < d; i++)
        s += (x[i] - c) * (x[i] - c);
    return s;
}

static double sum_wide(const float *x, int d)
{
    vdouble acc = {0};
    int i = 0;
    for (; i + VL / 2 <= d; i += VL / 2)
        acc += vload_wide(x + i);
    double s = hsum_wide(acc);
    for (; i < d; i++)
        s += x[i];
    return s;
}

static void min_max(const float *x, int d, float *mn_out, float *mx_out)
{
    vfloat mn = (vfloat){0} + x[0], mx = mn;
    int i = 0;
    for (; i + VL <= d; i += VL) {
        vfloat v = vload(x + i);
        /* fminf/fmaxf's rule: a NaN operand is ignored */
        mn = vsel((v < mn) | (mn != mn), v, mn);
        mx = vsel((v > mx) | (mx != mx), v, mx);
    }
    float a = mn[0], b = mx[0];
    for (int k = 1; k < VL; k++) {
        a = mn[k] < a || a != a ? mn[k] : a;
        b = mx[k] > b || b != b ? mx[k] : b;
    }
    for (; i < d; i++) {
        a = x[i] < a || a != a ? x[i] : a;
        b = x[i] > b || b != b ? x[i] : b;
    }
    *mn_out = a, *mx_out = b;
}

/* The largest magnitudes, first dimension first among equals. Whole
 * vectors below the current fourth are skipped; top_insert sees the rest
 * in order, as it would see every element. */
static void top_dims(const float *x, int d, as_norm_stat *st)
{
    int i = 0;
    for (; i < d && st->top_dim[AS_NORM_TOP - 1] < 0; i++)
        top_insert(st, i, x[i]);
    float thr = fabsf(st->top_val[AS_NORM_TOP - 1]);
    for (; i + VL <= d; i += VL) {
        vfloat v = vload(x + i), a = vsel(v < 0, -v, v);
        vint over = a > thr;
        bool any = false;
        for (int k = 0; k < VL; k++)
            any |= over[k] != 0;
        if (!any)
            continue;
        /* Only lanes above the threshold as it was can enter; the rest
         * would be refused by top_insert itself. */
        for (int k = 0; k < VL; k++)
            if (over[k] && fabsf(x[i + k]) > thr) {
                top_insert(st, i + k, x[i + k]);
                thr = fabsf(st->top_val[AS_NORM_TOP - 1]);
            }
    }
    for (; i < d; i++)
        top_insert(st, i, x[i]);
}

static void simd_norm_measure(const float *x, int d, float eps, bool rms, as_norm_stat *st)
{
    /* Sums in double: a norm's statistics are what users read to find
     * outliers, so they should not themselves be rounding artefacts. */
    for (int k = 0; k < AS_NORM_TOP; k++) {
        st->top_dim[k] = -1;
        st->top_val[k] = 0;
    }
    top_dims(x, d, st);
    double mean = sum_wide(x, d) / d, sq = sum_sq(x, d, rms ? 0.0 : mean);
    min_max(x, d, &st->min, &st->max);
    st->mean = (float)mean;
    st->var = (float)(sq / d);
    st->scale = (float)sqrt(sq / d + eps);
}

static void simd_norm_apply(const float *x, int d, const as_norm_stat *st, bool rms, const float *w,
                   const float *b, float *y)
{
    float inv = 1.0f / st->scale, mean = rms ? 0.0f : st->mean;
    int i = 0;
    for (; i + VL <= d; i += VL) {
        vfloat v = (vload(x + i) - mean) * inv * vload(w + i);
        vstore(y + i, b ? v + vload(b + i) : v);
    }
    for (; i < d; i++) {
        float v = (x[i] - mean) * inv * w[i];
        y[i] = b ? v + b[i] : v;
    }
}

/* The elementwise kernels below run whole vectors through vexp and finish
 * the tail one element at a time with the same formula (so results do not
 * depend on where a row's tail falls). */
static inline vfloat vgelu(vfloat v)
{
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    vfloat u = c * (v + 0.044715f * v * v * v);
    /* tanh(u) = 1 - 2 / (e^2u + 1), which saturates cleanly at ±1 */
    vfloat t = 1.0f - 2.0f / (vexp(2.0f * u) + 1.0f);
    return 0.5f * v * (1.0f + t);
}

static inline vfloat vsilu(vfloat g)
{
    return g / (1.0f + vexp(-g));
}

/* One element through a vector kernel, for tails. */
#define SCALAR_VIA(fn, v) (fn((vfloat){0} + (v))[0])

static void simd_gelu_tanh(const float *x, float *y, long n)
{
    long i = 0;
    for (; i + VL <= n; i += VL)
        vstore(y + i, vgelu(vload(x + i)));
    for (; i < n; i++)
        y[i] = SCALAR_VIA(vgelu, x[i]);
}

static void simd_swiglu(const float *gate, const float *up, float *y, long n)
{
    long i = 0;
    for (; i + VL <= n; i += VL)
        vstore(y + i, vsilu(vload(gate + i)) * vload(up + i));
    for (; i < n; i++)
        y[i] = SCALAR_VIA(vsilu, gate[i]) * up[i];
}

static void simd_rope_apply(const float *x, float *y, int n_heads, int d_head, int rope_dim, const float *cs)
{
    /* y[2i] = a·c - b·s and y[2i+1] = a·s + b·c for the pair (a, b), written
     * as x[j]·cos[j] + x[j^1]·sin±[j]: the same products and sums, so the
     * same bits, in whole vectors. */
    const float *cosv = cs, *sinv = cs + rope_dim;
    for (int h = 0; h < n_heads; h++) {
        const float *xh = x + (long)h * d_head;
        float *yh = y + (long)h * d_head;
        int j = 0;
        for (; j + VL <= rope_dim; j += VL) {
            vfloat v = vload(xh + j);
            vstore(yh + j, v * vload(cosv + j) + SWAP_PAIRS(v) * vload(sinv + j));
        }
        for (; j < rope_dim; j++)
            yh[j] = xh[j] * cosv[j] + xh[j ^ 1] * sinv[j];
        for (; j < d_head; j++)
            yh[j] = xh[j];
    }
}

static float max_ignoring_nan(const float *x, int n)
{
    vfloat m = (vfloat){0} + x[0];
    int i = 0;
    for (; i + VL <= n; i += VL) {
        vfloat v = vload(x + i);
        m = vsel((v > m) | (m != m), v, m); /* fmaxf's rule: a NaN operand is ignored */
    }
    float mx = m[0];
    for (int k = 1; k < VL; k++)
        mx = m[k] > mx || mx != mx ? m[k] : mx;
    for (; i < n; i++)
        mx = x[i] > mx || mx != mx ? x[i] : mx;
    return mx;
}

static void simd_softmax(const float *x, float *y, int n)
{
    float mx = max_ignoring_nan(x, n);
    vfloat acc = {0};
    int i = 0;
    for (; i + VL <= n; i += VL) {
        vfloat e = vexp(vload(x + i) - mx);
        vstore(y + i, e);
        acc += e;
    }
    float sum = hsum(acc);
    for (; i < n; i++)
        sum += y[i] = SCALAR_VIA(vexp, x[i] - mx);
    float inv = 1.0f / sum;
    for (i = 0; i + VL <= n; i += VL)
        vstore(y + i, vload(y + i) * inv);
    for (; i < n; i++)
        y[i] *= inv;
}

static void simd_add(const float *a, const float *b, float *y, long n)
{
    long i = 0;
    for (; i + VL <= n; i += VL)
        vstore(y + i, vload(a + i) + vload(b + i));
    for (; i < n; i++)
        y[i] = a[i] + b[i];
}

static void simd_geglu(const float *gate, const float *up, float *y, long n)
{
    long i = 0;
    for (; i + VL <= n; i += VL)
        vstore(y + i, vgelu(vload(gate + i)) * vload(up + i));
    for (; i < n; i++)
        y[i] = SCALAR_VIA(vgelu, gate[i]) * up[i];
}

#define AS_CAT_(a, b) a##b
#define AS_CAT(a, b) AS_CAT_(a, b)
#define AS_STR_(a) #a
#define AS_STR(a) AS_STR_(a)

const as_simd_ops AS_CAT(as_simd_, AS_ISA) = {
    .name = AS_STR(AS_ISA),
    .dot = simd_dot,
    .weight_row = simd_weight_row,
    .weight_dot = simd_weight_dot,
    .matvec_rows = simd_matvec_rows,
    .matvec_rows_ld = simd_matvec_rows_ld,
    .mix_heads = simd_mix_heads,
    .all_finite = simd_all_finite,
    .norm_measure = simd_norm_measure,
    .norm_apply = simd_norm_apply,
    .gelu_tanh = simd_gelu_tanh,
    .swiglu = simd_swiglu,
    .geglu = simd_geglu,
    .rope_apply = simd_rope_apply,
    .softmax = simd_softmax,
    .add = simd_add,
};

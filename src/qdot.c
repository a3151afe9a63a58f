/* qdot: activations quantized as ggml does, and integer dot products of
 * quantized weight rows with them (qdot.h). Block layouts are ggml's
 * (ggml-common.h), read byte by byte.
 *
 * Every integer sum is exact in int32 for every type here (the largest,
 * Q6_K's and IQ4_XS's scaled sums, stay below 2^28), so only the float
 * steps after them decide the bits, and both kernels of a type take the
 * same ones: a 32-block type sums 8 lanes per block (lane l: elements
 * 4l..4l+3, which is what maddubs/madd leave in an AVX2 register) times
 * the scales' product, lane by lane over the blocks (dot32_c); a
 * super-block type sums its scaled integers over the super-block and
 * takes one fin_k step. The AVX2 kernels therefore give the portable
 * kernels' bits. */
#include "attnscope/qdot.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* The float steps must be the same operations in every kernel: no
 * contraction into FMA (GCC's ISO C mode, which the Makefile uses, has
 * it off; clang's default would fuse within an expression). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ---------------------------------------------------------------- block layouts */

#define Q8_0_BYTES 34  /* fp16 d, int8 qs[32] */
#define Q8_1_BYTES 36  /* fp16 d, fp16 s, int8 qs[32] */
#define Q8_K_BYTES 292 /* float d, int8 qs[256], int16 bsums[16] */
#define Q8_K_QS 4
#define Q8_K_BSUMS 260

static const int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

static inline float f16_at(const uint8_t *p) { return as_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

static inline void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline float q8k_d(const uint8_t *a)
{
    float d;
    memcpy(&d, a, sizeof d);
    return d;
}

static inline int q8k_bsum(const uint8_t *a, int g)
{
    int16_t s;
    memcpy(&s, a + Q8_K_BSUMS + 2 * g, sizeof s);
    return s;
}

/* ggml's nearest_int: round half to even by the 1.5·2^23 trick (the
 * rounding _mm256_round_ps(_MM_ROUND_NEAREST) does), exact for |v| < 2^22. */
static inline int nearest_int(float v)
{
    float t = v + 12582912.f;
    int32_t i;
    memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* ---------------------------------------------------------------- quantizing activations */

/* ggml's quantize_row_q8_0 / q8_1 as its x86 code runs them with AVX:
 * d = max|x| / 127 (stored fp16), x·(127 / max|x|) rounded half to even;
 * Q8_1 adds s = d · Σq (d before its fp16 rounding). */
static void quantize_q8(const float *x, int n, uint8_t *out, bool with_sum)
{
    size_t bytes = with_sum ? Q8_1_BYTES : Q8_0_BYTES;
    int qs = with_sum ? 4 : 2;
    for (int b = 0; b < n / 32; b++, x += 32, out += bytes) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        float d = amax / 127.f, id = amax != 0.0f ? 127.f / amax : 0.0f;
        put16(out, as_f32_to_f16(d));
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            int q = nearest_int(x[j] * id);
            out[qs + j] = (uint8_t)(int8_t)q;
            sum += q;
        }
        if (with_sum)
            put16(out + 2, as_f32_to_f16(d * (float)sum));
    }
}

/* ggml's quantize_row_q8_K_ref (x86 has no other): the scale from the
 * value of largest magnitude, its sign kept (-127 / max), d = 1 / scale as
 * a float, and the sums of each 16 values for the K-quants' mins. An
 * all-zero block is all zeros (ggml leaves its bsums unwritten). */
static void quantize_q8_k(const float *x, int n, uint8_t *out)
{
    for (int b = 0; b < n / AS_QK_K; b++, x += AS_QK_K, out += Q8_K_BYTES) {
        memset(out, 0, Q8_K_BYTES);
        float max = 0.0f, amax = 0.0f;
        for (int j = 0; j < AS_QK_K; j++)
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        if (amax == 0.0f)
            continue;
        float iscale = -127.f / max;
        int8_t *qs = (int8_t *)(out + Q8_K_QS);
        for (int j = 0; j < AS_QK_K; j++) {
            int v = nearest_int(iscale * x[j]);
            qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < AS_QK_K / 16; g++) {
            int16_t s = 0;
            for (int j = 0; j < 16; j++)
                s = (int16_t)(s + qs[16 * g + j]);
            memcpy(out + Q8_K_BSUMS + 2 * g, &s, sizeof s);
        }
        float d = 1 / iscale;
        memcpy(out, &d, sizeof d);
    }
}

/* ---------------------------------------------------------------- the shared float steps */

/* Eight lanes summed as a tree (the 32-block types' accumulators). */
static inline float reduce8(const float *a) { return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])); }
/* A super-block: its scaled integer sum and, for the types with mins, the
 * mins times the activations' 16-sums. */
static inline float fin_k(float sumf, float dw, float da, int isum, float dminw, int summs)
{
    return sumf + (dw * da) * (float)isum - (dminw * da) * (float)summs;
}

/* Q4_K and Q5_K's 6-bit scales and mins, 8 each, from their 12 bytes. */
static inline void k4_scales(const uint8_t *q, uint8_t *sc, uint8_t *m)
{
    for (int j = 0; j < 8; j++)
        if (j < 4) {
            sc[j] = q[j] & 63;
            m[j] = q[j + 4] & 63;
        } else {
            sc[j] = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
            m[j] = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
        }
}

/* Σ over the 16 groups of 16 of the activations' sums times a per-32 min. */
static inline int k4_summs(const uint8_t *a, const uint8_t *m)
{
    int s = 0;
    for (int g = 0; g < 16; g++)
        s += q8k_bsum(a, g) * m[g / 2];
    return s;
}

/* ---------------------------------------------------------------- portable kernels */

/* A 32-block type's weights as ints, one block: v[j] is element j. */
typedef void (*block_ints)(const uint8_t *w, int *v);

static void ints_q8_0_c(const uint8_t *w, int *v)
{
    for (int j = 0; j < 32; j++)
        v[j] = (int8_t)w[2 + j];
}

static void ints_q4_0_c(const uint8_t *w, int *v)
{
    for (int j = 0; j < 16; j++)
        v[j] = (w[2 + j] & 0xF) - 8, v[j + 16] = (w[2 + j] >> 4) - 8;
}

static void ints_q4_1_c(const uint8_t *w, int *v)
{
    for (int j = 0; j < 16; j++)
        v[j] = w[4 + j] & 0xF, v[j + 16] = w[4 + j] >> 4;
}

static void ints_q5_c(const uint8_t *qh4, const uint8_t *qs, int offset, int *v)
{
    uint32_t qh = (uint32_t)qh4[0] | (uint32_t)qh4[1] << 8 | (uint32_t)qh4[2] << 16 | (uint32_t)qh4[3] << 24;
    for (int j = 0; j < 16; j++) {
        v[j] = (int)((qs[j] & 0xF) | ((qh >> j) & 1) << 4) - offset;
        v[j + 16] = (int)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - offset;
    }
}

static void ints_q5_0_c(const uint8_t *w, int *v) { ints_q5_c(w + 2, w + 6, 16, v); }
static void ints_q5_1_c(const uint8_t *w, int *v) { ints_q5_c(w + 4, w + 8, 0, v); }

static void ints_iq4_nl_c(const uint8_t *w, int *v)
{
    for (int j = 0; j < 16; j++)
        v[j] = kvalues_iq4nl[w[2 + j] & 0xF], v[j + 16] = kvalues_iq4nl[w[2 + j] >> 4];
}

/* The 32-block types: each block's 8 lanes (lane l: elements 4l..4l+3,
 * exact in int32) times the product of the two scales, summed lane by
 * lane over the blocks, then the lanes as a tree; the types with a
 * minimum add m·s block by block beside them. */
static float dot32_c(block_ints ints, size_t wb, size_t ab, bool with_min, const void *row, const void *act, int n)
{
    const uint8_t *w = row, *a = act;
    float acc[8] = {0}, summ = 0.0f;
    int qs = with_min ? 4 : 2, v[32];
    for (int b = 0; b < n / 32; b++, w += wb, a += ab) {
        ints(w, v);
        const int8_t *q8 = (const int8_t *)(a + qs);
        float dd = f16_at(w) * f16_at(a);
        for (int l = 0; l < 8; l++) {
            int s = v[4 * l] * q8[4 * l] + v[4 * l + 1] * q8[4 * l + 1] + v[4 * l + 2] * q8[4 * l + 2] +
                    v[4 * l + 3] * q8[4 * l + 3];
            acc[l] = acc[l] + dd * (float)s;
        }
        if (with_min)
            summ = summ + f16_at(w + 2) * f16_at(a + 2);
    }
    return with_min ? reduce8(acc) + summ : reduce8(acc);
}

static float dot_q8_0_c(const void *row, const void *act, int n) { return dot32_c(ints_q8_0_c, 34, Q8_0_BYTES, false, row, act, n); }
static float dot_q4_0_c(const void *row, const void *act, int n) { return dot32_c(ints_q4_0_c, 18, Q8_0_BYTES, false, row, act, n); }
static float dot_q4_1_c(const void *row, const void *act, int n) { return dot32_c(ints_q4_1_c, 20, Q8_1_BYTES, true, row, act, n); }
static float dot_q5_0_c(const void *row, const void *act, int n) { return dot32_c(ints_q5_0_c, 22, Q8_0_BYTES, false, row, act, n); }
static float dot_q5_1_c(const void *row, const void *act, int n) { return dot32_c(ints_q5_1_c, 24, Q8_1_BYTES, true, row, act, n); }
static float dot_iq4_nl_c(const void *row, const void *act, int n)
{
    return dot32_c(ints_iq4_nl_c, 18, Q8_0_BYTES, false, row, act, n);
}

/* Q2_K: scales[16] (low nibble the scale, high the min), qs[64], d, dmin. */
static float dot_q2_k_c(const void *row, const void *act, int n)
{
    const uint8_t *w = row, *a = act;
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += 84, a += Q8_K_BYTES) {
        const uint8_t *sc = w, *q2 = w + 16;
        const int8_t *q8 = (const int8_t *)(a + Q8_K_QS);
        int summs = 0, isum = 0, is = 0;
        for (int g = 0; g < 16; g++)
            summs += q8k_bsum(a, g) * (sc[g] >> 4);
        for (int k = 0; k < 2; k++, q2 += 32)
            for (int shift = 0; shift < 8; shift += 2, q8 += 32)
                for (int h = 0; h < 2; h++) {
                    int s = 0;
                    for (int l = 16 * h; l < 16 * h + 16; l++)
                        s += q8[l] * ((q2[l] >> shift) & 3);
                    isum += (sc[is++] & 0xF) * s;
                }
        sumf = fin_k(sumf, f16_at(w + 80), q8k_d(a), isum, f16_at(w + 82), summs);
    }
    return sumf;
}

/* Q3_K: hmask[32], qs[64], scales[12] (16 six-bit, offset 32), d. */
/* Q3_K's and Q6_K's integer sum: 16 groups of 16 values, each group's
 * dot with the activations times the group's scale. */
static int isum_groups16(const int8_t *v, const int8_t *q8, const int *sc)
{
    int isum = 0;
    for (int g = 0; g < 16; g++) {
        int t = 0;
        for (int l = 0; l < 16; l++)
            t += v[16 * g + l] * q8[16 * g + l];
        isum += sc[g] * t;
    }
    return isum;
}

static float dot_q3_k_c(const void *row, const void *act, int n)
{
    const uint8_t *w = row, *a = act;
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += 110, a += Q8_K_BYTES) {
        const uint8_t *hm = w, *q3 = w + 32, *s = w + 96;
        const int8_t *q8 = (const int8_t *)(a + Q8_K_QS);
        int sc[16];
        for (int j = 0; j < 16; j++) {
            int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
            int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
            sc[j] = (lo | hi << 4) - 32;
        }
        int8_t v[AS_QK_K];
        for (int c = 0; c < 2; c++)
            for (int sh = 0; sh < 4; sh++)
                for (int l = 0; l < 32; l++)
                    v[128 * c + 32 * sh + l] = (int8_t)(((q3[32 * c + l] >> (2 * sh)) & 3) -
                                                        (hm[l] & (1 << (4 * c + sh)) ? 0 : 4));
        int isum = isum_groups16(v, q8, sc);
        sumf = fin_k(sumf, f16_at(w + 108), q8k_d(a), isum, 0.0f, 0);
    }
    return sumf;
}

/* Q4_K: d, dmin, scales[12], qs[128]; Q5_K adds qh[32] before qs. */
static float dot_q45_k_c(const void *row, const void *act, int n, bool five)
{
    const uint8_t *w = row, *a = act;
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += five ? 176 : 144, a += Q8_K_BYTES) {
        uint8_t sc[8], m[8];
        k4_scales(w + 4, sc, m);
        const uint8_t *qh = w + 16, *q4 = w + (five ? 48 : 16);
        const int8_t *q8 = (const int8_t *)(a + Q8_K_QS);
        int isum = 0;
        for (int j = 0; j < 4; j++) {
            int s0 = 0, s1 = 0;
            for (int l = 0; l < 32; l++) {
                int v0 = q4[32 * j + l] & 0xF, v1 = q4[32 * j + l] >> 4;
                if (five) {
                    v0 |= ((qh[l] >> (2 * j)) & 1) << 4;
                    v1 |= ((qh[l] >> (2 * j + 1)) & 1) << 4;
                }
                s0 += v0 * q8[64 * j + l];
                s1 += v1 * q8[64 * j + 32 + l];
            }
            isum += sc[2 * j] * s0 + sc[2 * j + 1] * s1;
        }
        sumf = fin_k(sumf, f16_at(w), q8k_d(a), isum, f16_at(w + 2), k4_summs(a, m));
    }
    return sumf;
}

static float dot_q4_k_c(const void *row, const void *act, int n) { return dot_q45_k_c(row, act, n, false); }
static float dot_q5_k_c(const void *row, const void *act, int n) { return dot_q45_k_c(row, act, n, true); }

/* Q6_K: ql[128], qh[64], int8 scales[16], d; values 0..63 less 32. */
static float dot_q6_k_c(const void *row, const void *act, int n)
{
    const uint8_t *w = row, *a = act;
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += 210, a += Q8_K_BYTES) {
        const int8_t *q8 = (const int8_t *)(a + Q8_K_QS), *s8 = (const int8_t *)(w + 192);
        int8_t v[AS_QK_K];
        int sc[16];
        for (int g = 0; g < 16; g++)
            sc[g] = s8[g];
        for (int c = 0; c < 2; c++) {
            const uint8_t *ql = w + 64 * c, *qh = w + 128 + 32 * c;
            for (int l = 0; l < 32; l++) {
                v[128 * c + l] = (int8_t)(((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32);
                v[128 * c + l + 32] = (int8_t)(((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32);
                v[128 * c + l + 64] = (int8_t)(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
                v[128 * c + l + 96] = (int8_t)(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
            }
        }
        int isum = isum_groups16(v, q8, sc);
        sumf = fin_k(sumf, f16_at(w + 208), q8k_d(a), isum, 0.0f, 0);
    }
    return sumf;
}

/* IQ4_XS: d, scales_h (16 bits), scales_l[4], qs[128]; 8 sub-blocks of 32
 * with 6-bit scales (offset 32) over the IQ4_NL table. */
static float dot_iq4_xs_c(const void *row, const void *act, int n)
{
    const uint8_t *w = row, *a = act;
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += 136, a += Q8_K_BYTES) {
        unsigned h = (unsigned)w[2] | (unsigned)w[3] << 8;
        const uint8_t *qs = w + 8;
        const int8_t *q8 = (const int8_t *)(a + Q8_K_QS);
        int isum = 0;
        for (int ib = 0; ib < 8; ib++, qs += 16, q8 += 32) {
            int ls = (int)(((w[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | ((h >> (2 * ib)) & 3) << 4) - 32;
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += q8[j] * kvalues_iq4nl[qs[j] & 0xF] + q8[j + 16] * kvalues_iq4nl[qs[j] >> 4];
            isum += ls * s;
        }
        sumf = fin_k(sumf, f16_at(w), q8k_d(a), isum, 0.0f, 0);
    }
    return sumf;
}

/* ---------------------------------------------------------------- AVX2 kernels */

#if defined(__x86_64__)
#define AVX2 __attribute__((target("avx2,f16c")))

AVX2 static inline int hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

AVX2 static inline __m256i loadu(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Σ x·y over 32 signed bytes each, as 8 int32 lanes (|x|·sign(y, x): no
 * saturation for |x|, |y| <= 128, 127). */
AVX2 static inline __m256i dot_i8(__m256i x, __m256i y)
{
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}



/* Unsigned weights (< 64) times signed activations, 16 pairs summed into
 * int16 lanes, then times a scale per lane pair into int32. */
AVX2 static inline __m256i dot_u8_scaled(__m256i q, __m256i y, __m256i scale16)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, y), scale16);
}

AVX2 static float dot_q45_k_avx2(const void *row, const void *act, int n, bool five)
{
    const uint8_t *w = row, *a = act;
    const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += five ? 176 : 144, a += Q8_K_BYTES) {
        uint8_t sc[8], m[8];
        k4_scales(w + 4, sc, m);
        const uint8_t *q4 = w + (five ? 48 : 16), *q8 = a + Q8_K_QS;
        __m256i hb = five ? loadu(w + 16) : _mm256_setzero_si256(), acc = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            __m256i q = loadu(q4 + 32 * j);
            __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (five) {
                __m256i h0 = _mm256_and_si256(_mm256_srl_epi16(hb, _mm_cvtsi32_si128(2 * j)), one);
                __m256i h1 = _mm256_and_si256(_mm256_srl_epi16(hb, _mm_cvtsi32_si128(2 * j + 1)), one);
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(h0, 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(h1, 4));
            }
            acc = _mm256_add_epi32(acc, dot_u8_scaled(lo, loadu(q8 + 64 * j), _mm256_set1_epi16(sc[2 * j])));
            acc = _mm256_add_epi32(acc, dot_u8_scaled(hi, loadu(q8 + 64 * j + 32), _mm256_set1_epi16(sc[2 * j + 1])));
        }
        sumf = fin_k(sumf, f16_at(w), q8k_d(a), hsum_i32(acc), f16_at(w + 2), k4_summs(a, m));
    }
    return sumf;
}

AVX2 static float dot_q4_k_avx2(const void *row, const void *act, int n) { return dot_q45_k_avx2(row, act, n, false); }
AVX2 static float dot_q5_k_avx2(const void *row, const void *act, int n) { return dot_q45_k_avx2(row, act, n, true); }

/* Half c of a Q6_K super-block: its 128 unsigned values (0..63), four
 * registers of 32, from 64 bytes of low nibbles and 32 of high bits. */
AVX2 static inline void q6_k_unpack(const uint8_t *ql, const uint8_t *qh, __m256i q[4])
{
    const __m256i m4 = _mm256_set1_epi8(0xF), m3 = _mm256_set1_epi8(3), m30 = _mm256_set1_epi8(0x30);
    __m256i l0 = loadu(ql), l1 = loadu(ql + 32), h = loadu(qh);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m3), 4));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m3), 4));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m30));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
}

/* Q6_K: the unsigned values (0..63) through maddubs, each 16 times its
 * scale; the offset 32 comes back through the activations' 16-sums. */
AVX2 static float dot_q6_k_avx2(const void *row, const void *act, int n)
{
    const uint8_t *w = row, *a = act;
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += 210, a += Q8_K_BYTES) {
        const int8_t *sc = (const int8_t *)(w + 192);
        __m256i acc = _mm256_setzero_si256();
        for (int c = 0; c < 2; c++) {
            const uint8_t *ql = w + 64 * c, *q8 = a + Q8_K_QS + 128 * c;
            __m256i q[4];
            q6_k_unpack(ql, w + 128 + 32 * c, q);
            for (int k = 0; k < 4; k++) {
                __m256i s16 = _mm256_set_m128i(_mm_set1_epi16(sc[8 * c + 2 * k + 1]), _mm_set1_epi16(sc[8 * c + 2 * k]));
                acc = _mm256_add_epi32(acc, dot_u8_scaled(q[k], loadu(q8 + 32 * k), s16));
            }
        }
        int off = 0;
        for (int g = 0; g < 16; g++)
            off += sc[g] * q8k_bsum(a, g);
        sumf = fin_k(sumf, f16_at(w + 208), q8k_d(a), hsum_i32(acc) - 32 * off, 0.0f, 0);
    }
    return sumf;
}

/* 32 bytes, 0xFF where bit j of the 32 bits at p is set (ggml's bytes_from_bits_32). */
AVX2 static inline __m256i bits_to_bytes(const uint8_t *p)
{
    uint32_t x32;
    memcpy(&x32, p, sizeof x32);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x32), shuf);
    bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

/* A 32-block's 16 bytes of nibbles: the low ones first, as the blocks order them. */
AVX2 static inline __m256i nibbles(const uint8_t *p)
{
    __m128i t = _mm_loadu_si128((const __m128i *)p);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0xF));
}

AVX2 static inline __m256i dot_u8(__m256i q, __m256i y)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, y), _mm256_set1_epi16(1));
}




/* IQ4's codes looked up in its table of 16 int8 values. */
AVX2 static inline __m256i iq4_values(const uint8_t *p)
{
    const __m128i t = _mm_loadu_si128((const __m128i *)kvalues_iq4nl);
    return _mm256_shuffle_epi8(_mm256_set_m128i(t, t), nibbles(p));
}


AVX2 static float dot_iq4_xs_avx2(const void *row, const void *act, int n)
{
    const uint8_t *w = row, *a = act;
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += 136, a += Q8_K_BYTES) {
        unsigned h = (unsigned)w[2] | (unsigned)w[3] << 8;
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            int ls = (int)(((w[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | ((h >> (2 * ib)) & 3) << 4) - 32;
            __m256i x = iq4_values(w + 8 + 16 * ib), y = loadu(a + Q8_K_QS + 32 * ib);
            __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16((short)ls)));
        }
        sumf = fin_k(sumf, f16_at(w), q8k_d(a), hsum_i32(acc), 0.0f, 0);
    }
    return sumf;
}

AVX2 static float dot_q2_k_avx2(const void *row, const void *act, int n)
{
    const uint8_t *w = row, *a = act;
    const __m256i m3 = _mm256_set1_epi8(3);
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += 84, a += Q8_K_BYTES) {
        const uint8_t *sc = w;
        int summs = 0;
        for (int g = 0; g < 16; g++)
            summs += q8k_bsum(a, g) * (sc[g] >> 4);
        __m256i acc = _mm256_setzero_si256();
        for (int k = 0; k < 2; k++) {
            __m256i q2 = loadu(w + 16 + 32 * k);
            for (int j = 0; j < 4; j++) {
                __m256i q = _mm256_and_si256(_mm256_srl_epi16(q2, _mm_cvtsi32_si128(2 * j)), m3);
                int is = 8 * k + 2 * j;
                __m256i s16 = _mm256_set_m128i(_mm_set1_epi16(sc[is + 1] & 0xF), _mm_set1_epi16(sc[is] & 0xF));
                acc = _mm256_add_epi32(acc, dot_u8_scaled(q, loadu(a + Q8_K_QS + 128 * k + 32 * j), s16));
            }
        }
        sumf = fin_k(sumf, f16_at(w + 80), q8k_d(a), hsum_i32(acc), f16_at(w + 82), summs);
    }
    return sumf;
}

/* Q3_K: the values 0..7 (two low bits, the high one from hmask) through
 * maddubs, each 16 times its scale; the offset 4 comes back through the
 * activations' 16-sums. */
AVX2 static float dot_q3_k_avx2(const void *row, const void *act, int n)
{
    const uint8_t *w = row, *a = act;
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    float sumf = 0.0f;
    for (int b = 0; b < n / AS_QK_K; b++, w += 110, a += Q8_K_BYTES) {
        const uint8_t *s = w + 96;
        int sc[16], off = 0;
        for (int j = 0; j < 16; j++) {
            int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
            int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
            sc[j] = (lo | hi << 4) - 32;
            off += sc[j] * q8k_bsum(a, j);
        }
        __m256i hm = loadu(w), acc = _mm256_setzero_si256();
        for (int c = 0; c < 2; c++) {
            __m256i q3 = loadu(w + 32 + 32 * c);
            for (int sh = 0; sh < 4; sh++) {
                __m256i lo = _mm256_and_si256(_mm256_srl_epi16(q3, _mm_cvtsi32_si128(2 * sh)), m3);
                __m256i hb = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(4 * c + sh)), one);
                __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hb, 2));
                int g = 8 * c + 2 * sh;
                __m256i s16 = _mm256_set_m128i(_mm_set1_epi16((short)sc[g + 1]), _mm_set1_epi16((short)sc[g]));
                acc = _mm256_add_epi32(acc, dot_u8_scaled(q, loadu(a + Q8_K_QS + 128 * c + 32 * sh), s16));
            }
        }
        sumf = fin_k(sumf, f16_at(w + 108), q8k_d(a), hsum_i32(acc) - 4 * off, 0.0f, 0);
    }
    return sumf;
}
#endif

#if defined(__x86_64__)
/* An fp16 scale as a float (exactly as_f16_to_f32's). */
AVX2 static inline float f16c_at(const uint8_t *p) { return _cvtsh_ss((unsigned short)(p[0] | p[1] << 8)); }

/* Each 32-block's integer sums as 8 int32 lanes (w: the weights' block,
 * a: the activations'). */
AVX2 static inline __m256i ints_q8_0(const uint8_t *w, const uint8_t *a) { return dot_i8(loadu(w + 2), loadu(a + 2)); }
AVX2 static inline __m256i ints_q4_0(const uint8_t *w, const uint8_t *a)
{
    return dot_i8(_mm256_sub_epi8(nibbles(w + 2), _mm256_set1_epi8(8)), loadu(a + 2));
}
AVX2 static inline __m256i ints_q4_1(const uint8_t *w, const uint8_t *a) { return dot_u8(nibbles(w + 4), loadu(a + 4)); }
AVX2 static inline __m256i ints_q5_0(const uint8_t *w, const uint8_t *a)
{
    __m256i q = _mm256_or_si256(nibbles(w + 6), _mm256_and_si256(bits_to_bytes(w + 2), _mm256_set1_epi8(0x10)));
    return dot_i8(_mm256_sub_epi8(q, _mm256_set1_epi8(16)), loadu(a + 2));
}
AVX2 static inline __m256i ints_q5_1(const uint8_t *w, const uint8_t *a)
{
    __m256i q = _mm256_or_si256(nibbles(w + 8), _mm256_and_si256(bits_to_bytes(w + 4), _mm256_set1_epi8(0x10)));
    return dot_u8(q, loadu(a + 4));
}
AVX2 static inline __m256i ints_iq4_nl(const uint8_t *w, const uint8_t *a) { return dot_i8(iq4_values(w + 2), loadu(a + 2)); }

/* A 32-block type's kernel: dot32_c's lanes are maddubs/madd's int32
 * lanes (lane l: elements 4l..4l+3), so each block is a conversion, a
 * multiply by the scales' product and an add; MIN: the types whose blocks
 * add m·s (Q4_1, Q5_1). */
#define DOT32_AVX2(NAME, INTS, WB, AB, MIN)                                                      \
    AVX2 static float NAME(const void *row, const void *act, int n)                             \
    {                                                                                            \
        const uint8_t *w = row, *a = act;                                                        \
        __m256 acc = _mm256_setzero_ps();                                                        \
        float summ = 0.0f, lanes[8];                                                             \
        for (int b = 0; b < n / 32; b++, w += (WB), a += (AB)) {                                 \
            __m256 dd = _mm256_set1_ps(f16c_at(w) * f16c_at(a));                                 \
            acc = _mm256_add_ps(acc, _mm256_mul_ps(dd, _mm256_cvtepi32_ps(INTS(w, a))));         \
            if (MIN)                                                                             \
                summ = summ + f16c_at(w + 2) * f16c_at(a + 2);                                   \
        }                                                                                        \
        _mm256_storeu_ps(lanes, acc);                                                            \
        return MIN ? reduce8(lanes) + summ : reduce8(lanes);                                     \
    }

DOT32_AVX2(dot_q8_0_avx2, ints_q8_0, 34, Q8_0_BYTES, false)
DOT32_AVX2(dot_q4_0_avx2, ints_q4_0, 18, Q8_0_BYTES, false)
DOT32_AVX2(dot_q4_1_avx2, ints_q4_1, 20, Q8_1_BYTES, true)
DOT32_AVX2(dot_q5_0_avx2, ints_q5_0, 22, Q8_0_BYTES, false)
DOT32_AVX2(dot_q5_1_avx2, ints_q5_1, 24, Q8_1_BYTES, true)
DOT32_AVX2(dot_iq4_nl_avx2, ints_iq4_nl, 18, Q8_0_BYTES, false)
#endif

#if defined(__x86_64__)
/* ---------------------------------------------------------------- quantizing activations, AVX2 */

/* The portable quantizers' bytes, eight values at a time: the same float
 * products, nearest_int's integer trick lane by lane (not the CPU's
 * rounding, so that inf and NaN products give what nearest_int gives), and
 * the low byte of each int32 (the portable code's int8 cast, not a
 * saturating pack). */
AVX2 static inline __m256i nearest_int8(__m256 v)
{
    __m256i i = _mm256_castps_si256(_mm256_add_ps(v, _mm256_set1_ps(12582912.f)));
    return _mm256_sub_epi32(_mm256_and_si256(i, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x00400000));
}

/* Four vectors of 8 int32 to their 32 low bytes, in order. */
AVX2 static inline __m256i low_bytes(__m256i a, __m256i b, __m256i c, __m256i d)
{
    const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1, -1,
                                          -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    /* each 128-bit half keeps its 4 low bytes in its first dword */
    __m256i ab = _mm256_unpacklo_epi32(_mm256_shuffle_epi8(a, pick), _mm256_shuffle_epi8(b, pick));
    __m256i cd = _mm256_unpacklo_epi32(_mm256_shuffle_epi8(c, pick), _mm256_shuffle_epi8(d, pick));
    /* ab: a0-3 b0-3 | a4-7 b4-7 (in the first 8 bytes of each half) */
    __m256i all = _mm256_unpacklo_epi64(ab, cd); /* a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7 */
    /* to a0-7 b0-7 c0-7 d0-7: dwords 0 4 1 5 2 6 3 7 */
    return _mm256_permutevar8x32_epi32(all, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* The largest of |x[0..n)| (n a multiple of 8) as the portable loops find
 * it: a NaN never replaces the running maximum (max_ps returns its second
 * operand when either is NaN, and the running maximum is never NaN). */
AVX2 static inline float amax_avx2(const float *x, int n)
{
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < n; j += 8)
        m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + j), abs), m);
    float l[8], r = 0.0f;
    _mm256_storeu_ps(l, m);
    for (int j = 0; j < 8; j++)
        r = l[j] > r ? l[j] : r;
    return r;
}

AVX2 static void quantize_q8_avx2(const float *x, int n, uint8_t *out, bool with_sum)
{
    size_t bytes = with_sum ? Q8_1_BYTES : Q8_0_BYTES;
    int qs = with_sum ? 4 : 2;
    for (int b = 0; b < n / 32; b++, x += 32, out += bytes) {
        float amax = amax_avx2(x, 32);
        float d = amax / 127.f, id = amax != 0.0f ? 127.f / amax : 0.0f;
        put16(out, as_f32_to_f16(d));
        __m256 vid = _mm256_set1_ps(id);
        __m256i q[4];
        for (int k = 0; k < 4; k++)
            q[k] = nearest_int8(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid));
        _mm256_storeu_si256((__m256i *)(out + qs), low_bytes(q[0], q[1], q[2], q[3]));
        if (with_sum) /* the sum of the ints before their cast, as the portable loop takes it */
            put16(out + 2, as_f32_to_f16(d * (float)hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]),
                                                                           _mm256_add_epi32(q[2], q[3])))));
    }
}

AVX2 static void quantize_q8_k_avx2(const float *x, int n, uint8_t *out)
{
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int b = 0; b < n / AS_QK_K; b++, x += AS_QK_K, out += Q8_K_BYTES) {
        float amax = amax_avx2(x, AS_QK_K);
        if (amax == 0.0f) {
            memset(out, 0, Q8_K_BYTES);
            continue;
        }
        /* the first value of that magnitude, its sign kept */
        int first = 0;
        for (int j = 0; j < AS_QK_K; j += 8) {
            __m256 e = _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + j), abs), _mm256_set1_ps(amax), _CMP_EQ_OQ);
            int mask = _mm256_movemask_ps(e);
            if (mask) {
                first = j + __builtin_ctz((unsigned)mask);
                break;
            }
        }
        float iscale = -127.f / x[first];
        __m256 vs = _mm256_set1_ps(iscale);
        const __m256i top = _mm256_set1_epi32(127), ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
        for (int c = 0; c < AS_QK_K; c += 32) {
            __m256i q[4];
            for (int k = 0; k < 4; k++)
                q[k] = _mm256_min_epi32(nearest_int8(_mm256_mul_ps(_mm256_loadu_ps(x + c + 8 * k), vs)), top);
            __m256i bytes = low_bytes(q[0], q[1], q[2], q[3]);
            _mm256_storeu_si256((__m256i *)(out + Q8_K_QS + c), bytes);
            /* the two 16-sums of these 32 bytes (exact: |sum| <= 2048) */
            __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, bytes), ones16);
            s = _mm256_hadd_epi32(s, s);
            s = _mm256_hadd_epi32(s, s);
            int16_t s0 = (int16_t)_mm256_extract_epi32(s, 0), s1 = (int16_t)_mm256_extract_epi32(s, 4);
            memcpy(out + Q8_K_BSUMS + 2 * (c / 16), &s0, sizeof s0);
            memcpy(out + Q8_K_BSUMS + 2 * (c / 16 + 1), &s1, sizeof s1);
        }
        float d = 1 / iscale;
        memcpy(out, &d, sizeof d);
    }
}
#endif

#if defined(__x86_64__)
/* ---------------------------------------------------------------- several positions at once, AVX2 */

/* One weight row against AS_QDOT_POS positions: each weight block decoded
 * once and multiplied with each position's block. For every position the
 * float steps are its one-row kernel's, in the same order (the integer
 * sums are exact, whatever order they are taken in), so out[p] has the
 * one-row kernel's bits; fewer positions go through the one-row kernel. */
#define P4 AS_QDOT_POS

/* A 32-block type: PREP turns the weights' block into the vector MUL
 * takes with each position's 32 activations (signed types: the weights'
 * magnitudes and signs, by dot_i8's sign trick). */
AVX2 static inline __m256i prep_q8_0(const uint8_t *w) { return loadu(w + 2); }
AVX2 static inline __m256i prep_q4_0(const uint8_t *w) { return _mm256_sub_epi8(nibbles(w + 2), _mm256_set1_epi8(8)); }
AVX2 static inline __m256i prep_q4_1(const uint8_t *w) { return nibbles(w + 4); }
AVX2 static inline __m256i prep_q5_0(const uint8_t *w)
{
    __m256i q = _mm256_or_si256(nibbles(w + 6), _mm256_and_si256(bits_to_bytes(w + 2), _mm256_set1_epi8(0x10)));
    return _mm256_sub_epi8(q, _mm256_set1_epi8(16));
}
AVX2 static inline __m256i prep_q5_1(const uint8_t *w)
{
    return _mm256_or_si256(nibbles(w + 8), _mm256_and_si256(bits_to_bytes(w + 4), _mm256_set1_epi8(0x10)));
}
AVX2 static inline __m256i prep_iq4_nl(const uint8_t *w) { return iq4_values(w + 2); }

#define DOT32_MANY_AVX2(NAME, ONE, PREP, SIGNED, WB, AB, MIN)                                      \
    AVX2 static void NAME(const void *row, const void *act, size_t stride, int np, int n, float *out) \
    {                                                                                              \
        if (np != P4) {                                                                            \
            for (int p = 0; p < np; p++)                                                           \
                out[p] = ONE(row, (const uint8_t *)act + (size_t)p * stride, n);                   \
            return;                                                                                \
        }                                                                                          \
        const uint8_t *w = row, *a = act;                                                          \
        const int qs = (MIN) ? 4 : 2;                                                              \
        __m256 acc[P4];                                                                            \
        float summ[P4];                                                                            \
        for (int p = 0; p < P4; p++)                                                               \
            acc[p] = _mm256_setzero_ps(), summ[p] = 0.0f;                                          \
        for (int b = 0; b < n / 32; b++, w += (WB)) {                                              \
            __m256i x = PREP(w), ax = SIGNED ? _mm256_sign_epi8(x, x) : x;                         \
            float dw = f16c_at(w), mw = (MIN) ? f16c_at(w + 2) : 0.0f;                             \
            _Pragma("GCC unroll 4") for (int p = 0; p < P4; p++)                                   \
            {                                                                                      \
                const uint8_t *ap = a + (size_t)p * stride + (size_t)b * (AB);                     \
                __m256i y = loadu(ap + qs);                                                        \
                __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, SIGNED ? _mm256_sign_epi8(y, x) : y), \
                                              _mm256_set1_epi16(1));                               \
                __m256 dd = _mm256_set1_ps(dw * f16c_at(ap));                                      \
                acc[p] = _mm256_add_ps(acc[p], _mm256_mul_ps(dd, _mm256_cvtepi32_ps(s)));          \
                if (MIN)                                                                           \
                    summ[p] = summ[p] + mw * f16c_at(ap + 2);                                      \
            }                                                                                      \
        }                                                                                          \
        for (int p = 0; p < P4; p++) {                                                             \
            float lanes[8];                                                                        \
            _mm256_storeu_ps(lanes, acc[p]);                                                       \
            out[p] = (MIN) ? reduce8(lanes) + summ[p] : reduce8(lanes);                            \
        }                                                                                          \
    }

DOT32_MANY_AVX2(many_q8_0_avx2, dot_q8_0_avx2, prep_q8_0, true, 34, Q8_0_BYTES, false)
DOT32_MANY_AVX2(many_q4_0_avx2, dot_q4_0_avx2, prep_q4_0, true, 18, Q8_0_BYTES, false)
DOT32_MANY_AVX2(many_q4_1_avx2, dot_q4_1_avx2, prep_q4_1, false, 20, Q8_1_BYTES, true)
DOT32_MANY_AVX2(many_q5_0_avx2, dot_q5_0_avx2, prep_q5_0, true, 22, Q8_0_BYTES, false)
DOT32_MANY_AVX2(many_q5_1_avx2, dot_q5_1_avx2, prep_q5_1, false, 24, Q8_1_BYTES, true)
DOT32_MANY_AVX2(many_iq4_nl_avx2, dot_iq4_nl_avx2, prep_iq4_nl, true, 18, Q8_0_BYTES, false)

AVX2 static void many_q45_k_avx2(const void *row, const void *act, size_t stride, int np, int n, float *out, bool five)
{
    if (np != P4) {
        for (int p = 0; p < np; p++)
            out[p] = dot_q45_k_avx2(row, (const uint8_t *)act + (size_t)p * stride, n, five);
        return;
    }
    const uint8_t *w = row, *a = act;
    const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
    float sumf[P4] = {0};
    for (int b = 0; b < n / AS_QK_K; b++, w += five ? 176 : 144) {
        uint8_t sc[8], m[8];
        k4_scales(w + 4, sc, m);
        const uint8_t *q4 = w + (five ? 48 : 16);
        __m256i hb = five ? loadu(w + 16) : _mm256_setzero_si256(), acc[P4];
        for (int p = 0; p < P4; p++)
            acc[p] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            __m256i q = loadu(q4 + 32 * j);
            __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (five) {
                __m256i h0 = _mm256_and_si256(_mm256_srl_epi16(hb, _mm_cvtsi32_si128(2 * j)), one);
                __m256i h1 = _mm256_and_si256(_mm256_srl_epi16(hb, _mm_cvtsi32_si128(2 * j + 1)), one);
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(h0, 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(h1, 4));
            }
            __m256i slo = _mm256_set1_epi16(sc[2 * j]), shi = _mm256_set1_epi16(sc[2 * j + 1]);
#pragma GCC unroll 4
            for (int p = 0; p < P4; p++) {
                const uint8_t *q8 = a + (size_t)p * stride + (size_t)b * Q8_K_BYTES + Q8_K_QS + 64 * j;
                acc[p] = _mm256_add_epi32(acc[p], _mm256_add_epi32(dot_u8_scaled(lo, loadu(q8), slo),
                                                                   dot_u8_scaled(hi, loadu(q8 + 32), shi)));
            }
        }
        float dw = f16_at(w), dmin = f16_at(w + 2);
        for (int p = 0; p < P4; p++) {
            const uint8_t *ap = a + (size_t)p * stride + (size_t)b * Q8_K_BYTES;
            sumf[p] = fin_k(sumf[p], dw, q8k_d(ap), hsum_i32(acc[p]), dmin, k4_summs(ap, m));
        }
    }
    memcpy(out, sumf, sizeof sumf);
}

AVX2 static void many_q4_k_avx2(const void *row, const void *act, size_t stride, int np, int n, float *out)
{
    many_q45_k_avx2(row, act, stride, np, n, out, false);
}
AVX2 static void many_q5_k_avx2(const void *row, const void *act, size_t stride, int np, int n, float *out)
{
    many_q45_k_avx2(row, act, stride, np, n, out, true);
}

AVX2 static void many_q6_k_avx2(const void *row, const void *act, size_t stride, int np, int n, float *out)
{
    if (np != P4) {
        for (int p = 0; p < np; p++)
            out[p] = dot_q6_k_avx2(row, (const uint8_t *)act + (size_t)p * stride, n);
        return;
    }
    const uint8_t *w = row, *a = act;
    float sumf[P4] = {0};
    for (int b = 0; b < n / AS_QK_K; b++, w += 210) {
        const int8_t *sc = (const int8_t *)(w + 192);
        __m256i acc[P4];
        for (int p = 0; p < P4; p++)
            acc[p] = _mm256_setzero_si256();
        for (int c = 0; c < 2; c++) {
            const uint8_t *ql = w + 64 * c;
            __m256i q[4];
            q6_k_unpack(ql, w + 128 + 32 * c, q);
            for (int k = 0; k < 4; k++) {
                __m256i s16 = _mm256_set_m128i(_mm_set1_epi16(sc[8 * c + 2 * k + 1]), _mm_set1_epi16(sc[8 * c + 2 * k]));
#pragma GCC unroll 4
                for (int p = 0; p < P4; p++) {
                    const uint8_t *q8 = a + (size_t)p * stride + (size_t)b * Q8_K_BYTES + Q8_K_QS + 128 * c + 32 * k;
                    acc[p] = _mm256_add_epi32(acc[p], dot_u8_scaled(q[k], loadu(q8), s16));
                }
            }
        }
        float dw = f16_at(w + 208);
        for (int p = 0; p < P4; p++) {
            const uint8_t *ap = a + (size_t)p * stride + (size_t)b * Q8_K_BYTES;
            int off = 0;
            for (int g = 0; g < 16; g++)
                off += sc[g] * q8k_bsum(ap, g);
            sumf[p] = fin_k(sumf[p], dw, q8k_d(ap), hsum_i32(acc[p]) - 32 * off, 0.0f, 0);
        }
    }
    memcpy(out, sumf, sizeof sumf);
}
#endif

/* ---------------------------------------------------------------- the table */

typedef struct qdot_row {
    as_ggml_type act; /* 0 (F32): none */
    as_qdot_fn portable, avx2;
    as_qdot_many_fn many_avx2; /* NULL: the one-row kernel position by position */
} qdot_row;

#if defined(__x86_64__)
#define X86(f) f
#else
#define X86(f) NULL
#endif

static const qdot_row rows[AS_GGML_TYPE_END] = {
    [AS_GGML_Q4_0] = {AS_GGML_Q8_0, dot_q4_0_c, X86(dot_q4_0_avx2), X86(many_q4_0_avx2)},
    [AS_GGML_Q4_1] = {AS_GGML_Q8_1, dot_q4_1_c, X86(dot_q4_1_avx2), X86(many_q4_1_avx2)},
    [AS_GGML_Q5_0] = {AS_GGML_Q8_0, dot_q5_0_c, X86(dot_q5_0_avx2), X86(many_q5_0_avx2)},
    [AS_GGML_Q5_1] = {AS_GGML_Q8_1, dot_q5_1_c, X86(dot_q5_1_avx2), X86(many_q5_1_avx2)},
    [AS_GGML_Q8_0] = {AS_GGML_Q8_0, dot_q8_0_c, X86(dot_q8_0_avx2), X86(many_q8_0_avx2)},
    [AS_GGML_Q2_K] = {AS_GGML_Q8_K, dot_q2_k_c, X86(dot_q2_k_avx2)},
    [AS_GGML_Q3_K] = {AS_GGML_Q8_K, dot_q3_k_c, X86(dot_q3_k_avx2)},
    [AS_GGML_Q4_K] = {AS_GGML_Q8_K, dot_q4_k_c, X86(dot_q4_k_avx2), X86(many_q4_k_avx2)},
    [AS_GGML_Q5_K] = {AS_GGML_Q8_K, dot_q5_k_c, X86(dot_q5_k_avx2), X86(many_q5_k_avx2)},
    [AS_GGML_Q6_K] = {AS_GGML_Q8_K, dot_q6_k_c, X86(dot_q6_k_avx2), X86(many_q6_k_avx2)},
    [AS_GGML_IQ4_NL] = {AS_GGML_Q8_0, dot_iq4_nl_c, X86(dot_iq4_nl_avx2), X86(many_iq4_nl_avx2)},
    [AS_GGML_IQ4_XS] = {AS_GGML_Q8_K, dot_iq4_xs_c, X86(dot_iq4_xs_avx2)},
};

static const qdot_row *row_of(as_ggml_type w)
{
    return (unsigned)w < AS_GGML_TYPE_END && rows[w].portable ? &rows[w] : NULL;
}

as_ggml_type as_qdot_act_type(as_ggml_type w)
{
    const qdot_row *r = row_of(w);
    return r ? r->act : AS_GGML_F32;
}

size_t as_qdot_act_bytes(as_ggml_type w, int n)
{
    switch (as_qdot_act_type(w)) {
    case AS_GGML_Q8_0:
        return (size_t)n / 32 * Q8_0_BYTES;
    case AS_GGML_Q8_1:
        return (size_t)n / 32 * Q8_1_BYTES;
    case AS_GGML_Q8_K:
        return (size_t)n / AS_QK_K * Q8_K_BYTES;
    default:
        return 0;
    }
}

void as_qdot_quantize_isa(as_qdot_isa isa, as_ggml_type w, const float *x, int n, void *act)
{
#if defined(__x86_64__)
    if (isa == AS_QDOT_AVX2 && as_qdot_isa_runs(AS_QDOT_AVX2)) {
        switch (as_qdot_act_type(w)) {
        case AS_GGML_Q8_0:
            quantize_q8_avx2(x, n, act, false);
            return;
        case AS_GGML_Q8_1:
            quantize_q8_avx2(x, n, act, true);
            return;
        case AS_GGML_Q8_K:
            quantize_q8_k_avx2(x, n, act);
            return;
        default:
            return;
        }
    }
#else
    (void)isa;
#endif
    switch (as_qdot_act_type(w)) {
    case AS_GGML_Q8_0:
        quantize_q8(x, n, act, false);
        break;
    case AS_GGML_Q8_1:
        quantize_q8(x, n, act, true);
        break;
    case AS_GGML_Q8_K:
        quantize_q8_k(x, n, act);
        break;
    default:
        break;
    }
}

void as_qdot_quantize(as_ggml_type w, const float *x, int n, void *act)
{
    as_qdot_quantize_isa(AS_QDOT_AVX2, w, x, n, act);
}

#if defined(__x86_64__)
#include <cpuid.h>
/* F16C from CPUID leaf 1 (ECX bit 29), as kernels.c reads it. */
static bool has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

bool as_qdot_isa_runs(as_qdot_isa isa)
{
#if defined(__x86_64__)
    if (isa == AS_QDOT_AVX2) {
        /* asked at every product: CPUID once (it traps to the hypervisor
         * in a virtual machine), the answer kept like the CPU it describes */
        static _Atomic int avx2 = -1;
        int known = atomic_load_explicit(&avx2, memory_order_relaxed);
        if (known < 0) {
            __builtin_cpu_init();
            known = __builtin_cpu_supports("avx2") && has_f16c();
            atomic_store_explicit(&avx2, known, memory_order_relaxed);
        }
        return known;
    }
#endif
    return isa == AS_QDOT_PORTABLE;
}

as_qdot_fn as_qdot_kernel(as_qdot_isa isa, as_ggml_type w)
{
    const qdot_row *r = row_of(w);
    if (!r)
        return NULL;
    return isa == AS_QDOT_AVX2 && r->avx2 && as_qdot_isa_runs(AS_QDOT_AVX2) ? r->avx2 : r->portable;
}

/* Position by position through the one-row kernel f: the portable code
 * for every type and the AVX2 code for the types without a many-position
 * kernel. */
void as_qdot_many_by_one(as_qdot_fn f, const void *row, const void *act, size_t stride, int np, int n, float *out)
{
    for (int p = 0; p < np; p++)
        out[p] = f(row, (const unsigned char *)act + (size_t)p * stride, n);
}

as_qdot_many_fn as_qdot_kernel_many(as_qdot_isa isa, as_ggml_type w)
{
    const qdot_row *r = row_of(w);
    if (!r)
        return NULL;
    return isa == AS_QDOT_AVX2 && r->many_avx2 && as_qdot_isa_runs(AS_QDOT_AVX2) ? r->many_avx2 : NULL;
}

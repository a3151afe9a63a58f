#include "attnscope/kernels.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void as_linear(const float *x, int n, int in, const float *w, int out, const float *b, float *y)
{
    if (n == 1) {
        /* One position: a matrix-vector product, which BLAS does faster than a 1-row gemm. */
        if (b)
            memcpy(y, b, (size_t)out * sizeof *y);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, w, in, x, 1, b ? 1.0f : 0.0f, y, 1);
        return;
    }
    if (b)
        for (int i = 0; i < n; i++)
            memcpy(y + (long)i * out, b, (size_t)out * sizeof *y);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in,
                b ? 1.0f : 0.0f, y, out);
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

void as_norm_measure(const float *x, int d, float eps, bool rms, as_norm_stat *st)
{
    /* Sums in double: a norm's statistics are what users read to find
     * outliers, so they should not themselves be rounding artefacts. */
    double sum = 0, sq = 0;
    float mn = x[0], mx = x[0];
    for (int k = 0; k < AS_NORM_TOP; k++) {
        st->top_dim[k] = -1;
        st->top_val[k] = 0;
    }
    for (int i = 0; i < d; i++) {
        sum += x[i];
        mn = fminf(mn, x[i]);
        mx = fmaxf(mx, x[i]);
        top_insert(st, i, x[i]);
    }
    double mean = sum / d;
    for (int i = 0; i < d; i++) {
        double c = rms ? x[i] : x[i] - mean;
        sq += c * c;
    }
    st->mean = (float)mean;
    st->var = (float)(sq / d);
    st->scale = (float)sqrt(sq / d + eps);
    st->min = mn;
    st->max = mx;
}

void as_norm_apply(const float *x, int d, const as_norm_stat *st, bool rms, const float *w,
                   const float *b, float *y)
{
    float inv = 1.0f / st->scale, mean = rms ? 0.0f : st->mean;
    for (int i = 0; i < d; i++) {
        float v = (x[i] - mean) * inv * w[i];
        y[i] = b ? v + b[i] : v;
    }
}

void as_gelu_tanh(const float *x, float *y, int n)
{
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
}

void as_swiglu(const float *gate, const float *up, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

void as_rope(const float *x, float *y, int n_heads, int d_head, int rope_dim, int pos, float base)
{
    for (int i = 0; i < rope_dim / 2; i++) {
        double theta = pos * pow(base, -2.0 * i / rope_dim);
        float c = (float)cos(theta), s = (float)sin(theta);
        for (int h = 0; h < n_heads; h++) {
            const float *xh = x + (long)h * d_head;
            float *yh = y + (long)h * d_head;
            float a = xh[2 * i], b = xh[2 * i + 1];
            yh[2 * i] = a * c - b * s;
            yh[2 * i + 1] = a * s + b * c;
        }
    }
    for (int h = 0; h < n_heads; h++)
        for (int i = rope_dim; i < d_head; i++)
            y[(long)h * d_head + i] = x[(long)h * d_head + i];
}

void as_softmax(const float *x, float *y, int n)
{
    float mx = x[0];
    for (int i = 1; i < n; i++)
        mx = fmaxf(mx, x[i]);
    float sum = 0;
    for (int i = 0; i < n; i++) {
        y[i] = expf(x[i] - mx);
        sum += y[i];
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < n; i++)
        y[i] *= inv;
}

void as_add(const float *a, const float *b, float *y, long n)
{
    for (long i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}

void as_set_threads(int n)
{
    openblas_set_num_threads(n);
}

int as_get_threads(void)
{
    return openblas_get_num_threads();
}

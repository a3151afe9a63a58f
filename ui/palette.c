#include "palette.h"

#include <math.h>
#include <stdlib.h>

static const int cube_level[6] = {0, 95, 135, 175, 215, 255};

typedef struct lab {
    double l, a, b;
} lab;

static double linear(int c)
{
    double v = c / 255.0;
    return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
}

static double lab_f(double t)
{
    return t > 0.008856 ? cbrt(t) : 7.787 * t + 16.0 / 116.0;
}

static lab to_lab(const uint8_t rgb[3])
{
    double r = linear(rgb[0]), g = linear(rgb[1]), b = linear(rgb[2]);
    double x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
    double y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
    double z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
    return (lab){116 * lab_f(y) - 16, 500 * (lab_f(x) - lab_f(y)), 200 * (lab_f(y) - lab_f(z))};
}

static double dist2(const uint8_t a[3], const uint8_t b[3])
{
    lab p = to_lab(a), q = to_lab(b);
    return (p.l - q.l) * (p.l - q.l) + (p.a - q.a) * (p.a - q.a) + (p.b - q.b) * (p.b - q.b);
}

double pal_lightness(const uint8_t rgb[3])
{
    return to_lab(rgb).l;
}

void pal_256_rgb(int index, uint8_t rgb[3])
{
    static const uint8_t base[16][3] = {
        {0, 0, 0},       {205, 0, 0},   {0, 205, 0},   {205, 205, 0},   {0, 0, 238},   {205, 0, 205},
        {0, 205, 205},   {229, 229, 229}, {127, 127, 127}, {255, 0, 0}, {0, 255, 0}, {255, 255, 0},
        {92, 92, 255},   {255, 0, 255}, {0, 255, 255}, {255, 255, 255}};
    if (index < 0 || index > 255)
        index = 0;
    if (index < 16) {
        for (int c = 0; c < 3; c++)
            rgb[c] = base[index][c];
    } else if (index < 232) {
        int i = index - 16;
        rgb[0] = (uint8_t)cube_level[i / 36];
        rgb[1] = (uint8_t)cube_level[(i / 6) % 6];
        rgb[2] = (uint8_t)cube_level[i % 6];
    } else {
        rgb[0] = rgb[1] = rgb[2] = (uint8_t)(8 + 10 * (index - 232));
    }
}

int pal_nearest_256(const uint8_t rgb[3])
{
    int best = 16;
    double best_d = INFINITY;
    for (int i = 16; i < 256; i++) {
        uint8_t c[3];
        pal_256_rgb(i, c);
        double d = dist2(rgb, c);
        if (d < best_d) {
            best_d = d;
            best = i;
        }
    }
    return best;
}

/* Candidate colours sorted by lightness, for pal_ramp_256. */
static int by_lightness(const void *a, const void *b)
{
    uint8_t ca[3], cb[3];
    pal_256_rgb(*(const int *)a, ca);
    pal_256_rgb(*(const int *)b, cb);
    double la = pal_lightness(ca), lb = pal_lightness(cb);
    return la < lb ? -1 : la > lb;
}

int pal_ramp_256(const uint8_t (*rgb)[3], int n, int *out)
{
    enum { NC = 240 };
    int cand[NC];
    for (int i = 0; i < NC; i++)
        cand[i] = 16 + i;
    qsort(cand, NC, sizeof cand[0], by_lightness);
    double *cost = malloc((size_t)n * NC * sizeof *cost);
    int *from = malloc((size_t)n * NC * sizeof *from);
    if (!cost || !from || n < 1) {
        free(cost);
        free(from);
        return n < 1 ? 0 : -1;
    }
    /* cost[i][j]: the least total error of levels 0..i with level i on
     * candidate j; candidates are in lightness order, so "never darker"
     * is "j never decreases", and the best predecessor is a running min. */
    for (int i = 0; i < n; i++) {
        double run = INFINITY;
        int arg = 0;
        for (int j = 0; j < NC; j++) {
            uint8_t c[3];
            pal_256_rgb(cand[j], c);
            if (i > 0 && cost[(i - 1) * NC + j] < run) {
                run = cost[(i - 1) * NC + j];
                arg = j;
            }
            cost[i * NC + j] = dist2(rgb[i], c) + (i > 0 ? run : 0);
            from[i * NC + j] = arg;
        }
    }
    int j = 0;
    for (int k = 1; k < NC; k++)
        if (cost[(n - 1) * NC + k] < cost[(n - 1) * NC + j])
            j = k;
    for (int i = n - 1; i >= 0; i--) {
        out[i] = cand[j];
        j = from[i * NC + j];
    }
    free(cost);
    free(from);
    return 0;
}

int pal_direct(const uint8_t rgb[3])
{
    return (rgb[0] << 16) | (rgb[1] << 8) | rgb[2];
}

bool pal_is_light(const uint8_t rgb[3])
{
    /* Rec. 709 luma; 140 keeps white text on viridis's middle greens. */
    return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] > 140;
}

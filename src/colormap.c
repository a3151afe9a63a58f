#include "attnscope/colormap.h"

#include <math.h>
#include <string.h>

#include "colormap_tables.h"

void as_colormap(as_cmap cmap, float t, uint8_t rgb[3])
{
    if (!(t > 0.0f))
        t = 0.0f;
    if (t > 1.0f)
        t = 1.0f;
    if (cmap == AS_CMAP_RDBU) {
        /* ColorBrewer RdBu (11 classes), from blue to red, linearly between. */
        static const uint8_t k[11][3] = {
            {0x05, 0x30, 0x61}, {0x21, 0x66, 0xac}, {0x43, 0x93, 0xc3}, {0x92, 0xc5, 0xde},
            {0xd1, 0xe5, 0xf0}, {0xf7, 0xf7, 0xf7}, {0xfd, 0xdb, 0xc7}, {0xf4, 0xa5, 0x82},
            {0xd6, 0x60, 0x4d}, {0xb2, 0x18, 0x2b}, {0x67, 0x00, 0x1f}};
        float x = t * 10.0f;
        int a = x >= 10.0f ? 9 : (int)x;
        float f = x - (float)a;
        for (int j = 0; j < 3; j++)
            rgb[j] = (uint8_t)lrintf((float)k[a][j] + f * ((float)k[a + 1][j] - (float)k[a][j]));
        return;
    }
    int i = (int)lrintf(t * 255.0f);
    if (cmap == AS_CMAP_GRAY) {
        rgb[0] = rgb[1] = rgb[2] = (uint8_t)i;
        return;
    }
    const unsigned char *c = cmap == AS_CMAP_MAGMA ? magma_table[i] : viridis_table[i];
    rgb[0] = c[0];
    rgb[1] = c[1];
    rgb[2] = c[2];
}

int as_cmap_parse(const char *name)
{
    if (!strcmp(name, "viridis"))
        return AS_CMAP_VIRIDIS;
    if (!strcmp(name, "magma"))
        return AS_CMAP_MAGMA;
    if (!strcmp(name, "gray") || !strcmp(name, "grey"))
        return AS_CMAP_GRAY;
    return -1;
}

const char *as_cmap_name(as_cmap cmap)
{
    static const char *const names[] = {"viridis", "magma", "gray", "rdbu"};
    return cmap <= AS_CMAP_RDBU ? names[cmap] : "?";
}

void as_masked_rgb(as_cmap cmap, uint8_t rgb[3])
{
    static const uint8_t grey[3] = {0xC0, 0xC0, 0xC0}, tint[3] = {0xC6, 0xD6, 0xEE};
    memcpy(rgb, cmap == AS_CMAP_GRAY || cmap == AS_CMAP_RDBU ? tint : grey, 3);
}

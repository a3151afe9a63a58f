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
    static const char *const names[] = {"viridis", "magma", "gray"};
    return cmap < AS_CMAP_COUNT ? names[cmap] : "?";
}

void as_masked_rgb(as_cmap cmap, uint8_t rgb[3])
{
    static const uint8_t grey[3] = {0xC0, 0xC0, 0xC0}, tint[3] = {0xC6, 0xD6, 0xEE};
    memcpy(rgb, cmap == AS_CMAP_GRAY ? tint : grey, 3);
}

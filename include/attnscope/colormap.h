/* colormap: perceptually uniform colour scales shared by the full-screen
 * view and the figures, so a head looks the same on screen and on paper.
 * Tables come from matplotlib's viridis and magma (assets/colormaps/). */
#ifndef ATTNSCOPE_COLORMAP_H
#define ATTNSCOPE_COLORMAP_H

#include <stdint.h>

/* AS_CMAP_COUNT counts the sequential maps, the ones attention is shown
 * with (and the view cycles through). AS_CMAP_RDBU is diverging — blue
 * for low, near-white for the middle, red for high (ColorBrewer's 11-class
 * RdBu, reversed, as TransformerLens's patching plots use) — for signed
 * tables such as activation-patching effects; centre the scale on 0. */
typedef enum as_cmap { AS_CMAP_VIRIDIS, AS_CMAP_MAGMA, AS_CMAP_GRAY, AS_CMAP_COUNT,
                       AS_CMAP_RDBU = AS_CMAP_COUNT } as_cmap;

/* Colour for t in [0, 1] (clamped; NaN gives the low end). */
void as_colormap(as_cmap cmap, float t, uint8_t rgb[3]);
/* By name ("viridis", "magma", "gray"/"grey"; not "rdbu"); -1 if unknown. */
int as_cmap_parse(const char *name);
const char *as_cmap_name(as_cmap cmap);
/* The colour of masked (causally hidden) cells: a neutral grey that
 * viridis and magma never reach; for the grey ramp, which does, a pale
 * blue tint, so masked never reads as a value. */
void as_masked_rgb(as_cmap cmap, uint8_t rgb[3]);

#endif

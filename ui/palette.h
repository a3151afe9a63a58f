/* palette: colours for terminals without a terminal. Maps RGB to the
 * nearest of xterm's 256 colours (the 6x6x6 cube and the grey ramp), back
 * again, and decides whether text over a colour reads better dark or light.
 * Pure functions, unit-tested; term.c uses them to pick colour numbers. */
#ifndef ATTNSCOPE_UI_PALETTE_H
#define ATTNSCOPE_UI_PALETTE_H

#include <stdbool.h>
#include <stdint.h>

/* Nearest colour among indices 16-255 (the first 16 are user-themed, so
 * never chosen), by distance in CIELAB. */
int pal_nearest_256(const uint8_t rgb[3]);
/* Maps a colour scale (n colours, dark to light) to 256-colour indices:
 * nearest in CIELAB overall, with lightness never decreasing along the
 * scale, so the cube's coarse steps never make a larger value look darker.
 * Returns 0, or -1 when out of memory. */
int pal_ramp_256(const uint8_t (*rgb)[3], int n, int *out);
/* CIE L* (0-100) of an sRGB colour. */
double pal_lightness(const uint8_t rgb[3]);
/* The RGB xterm shows for a 256-colour index (0-15: xterm's defaults). */
void pal_256_rgb(int index, uint8_t rgb[3]);
/* Direct-colour number (0xRRGGBB) for terminals with 2^24 colours. */
int pal_direct(const uint8_t rgb[3]);
/* True when black text reads better than white over rgb. */
bool pal_is_light(const uint8_t rgb[3]);

#endif

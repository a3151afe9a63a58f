/* image: reading an image file and preparing it as a vision model's input.
 * Owns the decoding (PNG through libpng: grey, grey + alpha, RGB, RGBA,
 * palette, 1 to 16 bits per sample, interlaced or not, alpha dropped;
 * binary and plain PGM / PPM), and the preparation a model file asks for:
 * channels converted (grey to RGB by copying, RGB to grey by ITU-R 601-2
 * luma as torchvision's Grayscale), resized to the model's square size
 * (bilinear as torch.nn.functional.interpolate with align_corners=False
 * and antialias=False, or nearest), then normalised per channel by mean
 * and std. A missing, truncated or non-image file gets one message naming
 * the file and what is wrong. */
#ifndef ATTNSCOPE_IMAGE_H
#define ATTNSCOPE_IMAGE_H

#include <stdint.h>

#include "attnscope/error.h"

/* Images larger than this (pixels) are refused before anything is allocated. */
#define AS_IMAGE_MAX_PIXELS (1 << 26)

/* A decoded image: samples as stored (0..maxval), row-major, channels
 * interleaved (grey: 1, RGB: 3). */
typedef struct as_image {
    int width, height, channels;
    int maxval;        /* 255 for 8-bit (and fewer bits, scaled up), 65535 for 16-bit */
    uint16_t *data;    /* height * width * channels */
} as_image;

typedef enum as_resize { AS_RESIZE_BILINEAR, AS_RESIZE_NEAREST } as_resize;

/* Reads a PNG, PGM or PPM file (told apart by their signatures). */
int as_image_load(as_image *out, const char *path, as_error *err);
void as_image_free(as_image *img);
/* The resize mode a model file names ("bilinear", "nearest"); AS_ERR if unknown. */
int as_resize_parse(const char *name, as_resize *out, as_error *err);

/* What a model wants of its input. */
typedef struct as_image_spec {
    int channels;      /* 1 or 3 */
    int size;          /* the square side, in pixels */
    as_resize resize;
    float mean[3], std[3];
} as_image_spec;

/* out[channels][size][size] = (resized(sample / maxval) - mean) / std. */
int as_image_prepare(const as_image *img, const as_image_spec *spec, float *out, as_error *err);
/* The resize alone, on one plane of floats: in[h][w] -> out[oh][ow]. */
void as_image_resize_plane(const float *in, int w, int h, float *out, int ow, int oh, as_resize mode);

#endif

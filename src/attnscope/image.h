/* image: reading an image file and preparing it as a vision model's input.
 * Owns the decoding (PNG through libpng: grey, grey + alpha, RGB, RGBA,
 * palette, 1 to 16 bits per sample, interlaced or not, alpha dropped;
 * binary and plain PGM / PPM; JPEG through libjpeg(-turbo): grey, YCbCr,
 * RGB, CMYK and YCCK made RGB as PIL does, progressive or not, its EXIF
 * Orientation (1-8) applied as PIL's ImageOps.exif_transpose), and two
 * preparations. A GGUF / torchvision ViT's:
 * channels converted (grey to RGB by copying, RGB to grey by ITU-R 601-2
 * luma as torchvision's Grayscale), resized to the model's square size
 * (bilinear as torch.nn.functional.interpolate with align_corners=False
 * and antialias=False, or nearest), then normalised per channel by mean
 * and std. A Hugging Face directory's preprocessor_config.json
 * (ViTImageProcessor, CLIPImageProcessor: `as_pil_spec`) as transformers
 * runs it: 8-bit RGB, PIL's resize (Resample.c's separable filters with
 * their fixed-point coefficients, rounding to 8 bits after each pass),
 * the centre crop, rescale and normalise in float32. A missing, truncated
 * or non-image file gets one message naming the file and what is wrong. */
#ifndef ATTNSCOPE_IMAGE_H
#define ATTNSCOPE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "attnscope/error.h"
#include "attnscope/types.h"

/* Images larger than this (pixels) are refused before anything is allocated. */
#define AS_IMAGE_MAX_PIXELS (1 << 26)

/* A decoded image: samples as stored (0..maxval), row-major, channels
 * interleaved (grey: 1, RGB: 3). */
typedef struct as_image {
    int width, height, channels;
    int maxval;        /* 255 for 8-bit (and fewer bits, scaled up), 65535 for 16-bit */
    uint16_t *data;    /* height * width * channels */
    int pnm;           /* read from PGM/PPM: PIL scales its samples to 8 bits by rounding (a PNG's 16-bit: the high byte) */
} as_image;

/* as_resize, as_pil_spec, as_image_spec (what a model wants of its input): types.h. */

/* Reads a PNG, JPEG, PGM or PPM file (told apart by their signatures). A
 * JPEG's EXIF orientation is applied; `orientation` tells which it was. */
int as_image_load_ex(as_image *out, const char *path, int *orientation, as_error *err);
int as_image_load(as_image *out, const char *path, as_error *err);
void as_image_free(as_image *img);
/* The resize mode a model file names ("bilinear", "nearest"); AS_ERR if unknown. */
int as_resize_parse(const char *name, as_resize *out, as_error *err);

/* PIL's filters by its numbering (Image.Resampling). */
enum { AS_PIL_NEAREST = 0, AS_PIL_LANCZOS = 1, AS_PIL_BILINEAR = 2, AS_PIL_BICUBIC = 3, AS_PIL_BOX = 4,
       AS_PIL_HAMMING = 5 };
const char *as_pil_filter_name(int filter);

/* out[channels][size][size] = (resized(sample / maxval) - mean) / std. */
int as_image_prepare(const as_image *img, const as_image_spec *spec, float *out, as_error *err);
/* The resize alone, on one plane of floats: in[h][w] -> out[oh][ow]. */
void as_image_resize_plane(const float *in, int w, int h, float *out, int ow, int oh, as_resize mode);
/* PIL's Image.resize of an 8-bit image (ch interleaved channels):
 * in[h][w][ch] -> out[oh][ow][ch], filter AS_PIL_*. */
int as_pil_resize(const uint8_t *in, int w, int h, int ch, uint8_t *out, int ow, int oh, int filter, as_error *err);
/* The size transformers resizes a w x h image to under `pil`. */
void as_pil_resize_size(const as_pil_spec *pil, int w, int h, int *ow, int *oh);
/* The image as PIL's 8-bit RGB (grey copied) or grey ("L": PIL's luma):
 * a 16-bit PNG's high byte, a PGM/PPM's v * 255 / maxval rounded, as PIL
 * reads RGB ones (PIL reads 16-bit grey as 32-bit integers, which
 * transformers does not prepare; here they are scaled the same way):
 * malloc'd [h][w][channels]. */
uint8_t *as_image_u8(const as_image *img, int channels, as_error *err);
/* A JPEG APP1 segment's EXIF Orientation (1..8; 1 when absent or unreadable). */
int as_exif_orientation(const uint8_t *app1, size_t n);

#endif

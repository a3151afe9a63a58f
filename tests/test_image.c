/* image: decoding against the samples libpng was given to write (every PNG
 * colour type and depth attnscope reads), PGM/PPM, the resize against
 * PyTorch's interpolate (fixtures from models/recipes/make_fixtures.py),
 * and one clear message per bad file. */
#include <criterion/criterion.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/image.h"
#include "helpers.h"

/* Writes samples (values in 0..2^depth-1, `in_ch` per pixel) as a PNG of
 * the given colour type through libpng's own writer; palette images take
 * indices and a palette whose entry i is (i*7, i*13, i*29) mod 256. */
static void write_png(const char *path, int w, int h, int color, int depth, int in_ch, const uint16_t *s,
                      bool interlace)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    cr_assert(png && info);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color,
                 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_color pal[256];
    for (int i = 0; i < 256; i++)
        pal[i] = (png_color){(png_byte)(i * 7), (png_byte)(i * 13), (png_byte)(i * 29)};
    if (color == PNG_COLOR_TYPE_PALETTE)
        png_set_PLTE(png, info, pal, 1 << depth);
    png_write_info(png, info);
    if (depth < 8)
        png_set_packing(png);
    int bytes = depth == 16 ? 2 : 1;
    png_bytep buf = malloc((size_t)w * (size_t)h * (size_t)in_ch * 2);
    png_bytep *rows = malloc((size_t)h * sizeof *rows);
    for (int y = 0; y < h; y++) {
        rows[y] = buf + (size_t)y * (size_t)w * (size_t)in_ch * (size_t)bytes;
        for (int i = 0; i < w * in_ch; i++) {
            uint16_t v = s[(size_t)y * (size_t)w * (size_t)in_ch + (size_t)i];
            if (bytes == 2) {
                rows[y][2 * i] = (png_byte)(v >> 8);
                rows[y][2 * i + 1] = (png_byte)(v & 255);
            } else {
                rows[y][i] = (png_byte)v;
            }
        }
    }
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
    free(rows);
    free(buf);
}

static uint16_t *samples(int n, int max, uint64_t seed)
{
    uint16_t *s = malloc((size_t)n * sizeof *s);
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        s[i] = (uint16_t)((seed >> 33) % (uint64_t)(max + 1));
    }
    return s;
}

static char tmp_path[64];
static const char *tmp_file(const char *ext)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/attnscope-img-%d%s", (int)getpid(), ext);
    return tmp_path;
}

/* A PNG of colour type / depth decodes to what was written: grey and RGB
 * as given, alpha dropped, palette indices looked up, low depths scaled to
 * 8 bits as libpng's expansion does (v * 255 / (2^depth - 1)). */
static void roundtrip(int color, int depth, bool interlace)
{
    int w = 13, h = 7;
    int in_ch = color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_PALETTE ? 1
                : color == PNG_COLOR_TYPE_GRAY_ALPHA                           ? 2
                : color == PNG_COLOR_TYPE_RGB                                  ? 3
                                                                               : 4;
    int max = (1 << depth) - 1;
    uint16_t *s = samples(w * h * in_ch, max, (uint64_t)(color * 100 + depth));
    const char *path = tmp_file(".png");
    write_png(path, w, h, color, depth, in_ch, s, interlace);
    as_image img;
    as_error err;
    cr_assert_eq(as_image_load(&img, path, &err), AS_OK, "%s", err.msg);
    unlink(path);
    int want_ch = (color & PNG_COLOR_MASK_COLOR) ? 3 : 1;
    cr_assert_eq(img.width, w);
    cr_assert_eq(img.height, h);
    cr_assert_eq(img.channels, want_ch, "color type %d: %d channels", color, img.channels);
    cr_assert_eq(img.maxval, depth == 16 ? 65535 : 255);
    for (int p = 0; p < w * h; p++) {
        for (int c = 0; c < want_ch; c++) {
            int want;
            if (color == PNG_COLOR_TYPE_PALETTE) {
                int i = s[p];
                want = (c == 0 ? i * 7 : c == 1 ? i * 13 : i * 29) & 255;
            } else {
                want = s[p * in_ch + c];
                if (depth < 8)
                    want = want * 255 / max;
            }
            cr_assert_eq(img.data[p * want_ch + c], want, "type %d depth %d pixel %d channel %d: %d, wrote %d",
                         color, depth, p, c, img.data[p * want_ch + c], want);
        }
    }
    as_image_free(&img);
    free(s);
}

Test(image, png_grey_8_and_16_bit) { roundtrip(PNG_COLOR_TYPE_GRAY, 8, false); roundtrip(PNG_COLOR_TYPE_GRAY, 16, false); }
Test(image, png_grey_low_depths_scale_to_8_bit)
{
    roundtrip(PNG_COLOR_TYPE_GRAY, 1, false);
    roundtrip(PNG_COLOR_TYPE_GRAY, 2, false);
    roundtrip(PNG_COLOR_TYPE_GRAY, 4, false);
}
Test(image, png_rgb_8_and_16_bit) { roundtrip(PNG_COLOR_TYPE_RGB, 8, false); roundtrip(PNG_COLOR_TYPE_RGB, 16, false); }
Test(image, png_alpha_is_dropped)
{
    roundtrip(PNG_COLOR_TYPE_GRAY_ALPHA, 8, false);
    roundtrip(PNG_COLOR_TYPE_RGB_ALPHA, 8, false);
    roundtrip(PNG_COLOR_TYPE_RGB_ALPHA, 16, false);
}
Test(image, png_palette_is_looked_up) { roundtrip(PNG_COLOR_TYPE_PALETTE, 8, false); roundtrip(PNG_COLOR_TYPE_PALETTE, 4, false); }
Test(image, png_interlaced) { roundtrip(PNG_COLOR_TYPE_RGB, 8, true); }

Test(image, pgm_and_ppm_binary_and_plain)
{
    const char *path = tmp_file(".pnm");
    as_image img;
    as_error err;
    FILE *f = fopen(path, "wb");
    fputs("P5\n# a comment\n3 2\n255\n", f);
    fwrite("\x00\x10\x20\x80\xf0\xff", 1, 6, f);
    fclose(f);
    cr_assert_eq(as_image_load(&img, path, &err), AS_OK, "%s", err.msg);
    uint16_t want5[] = {0, 16, 32, 128, 240, 255};
    cr_assert_eq(img.channels, 1);
    cr_assert_eq(memcmp(img.data, want5, sizeof want5), 0);
    as_image_free(&img);
    f = fopen(path, "wb");
    fputs("P6 1 2 1000\n", f);
    fwrite("\x00\x01\x03\xe8\x00\x00\x01\x00\x02\x00\x03\x00", 1, 12, f);
    fclose(f);
    cr_assert_eq(as_image_load(&img, path, &err), AS_OK, "%s", err.msg);
    uint16_t want6[] = {1, 1000, 0, 256, 512, 768};
    cr_assert_eq(img.channels, 3);
    cr_assert_eq(img.maxval, 1000);
    cr_assert_eq(memcmp(img.data, want6, sizeof want6), 0);
    as_image_free(&img);
    f = fopen(path, "wb");
    fputs("P2\n2 1\n15\n3 15\n", f);
    fclose(f);
    cr_assert_eq(as_image_load(&img, path, &err), AS_OK, "%s", err.msg);
    cr_assert(img.data[0] == 3 && img.data[1] == 15 && img.maxval == 15);
    as_image_free(&img);
    unlink(path);
}

/* The resize fixtures: a PNG, and PyTorch's interpolate of its samples
 * / 255 (float64) to 28 x 28 per channel, in the mode named. */
static void resize_matches_torch(const char *png, const char *npyf, int channels, as_resize mode)
{
    as_image img;
    as_error err;
    cr_assert_eq(as_image_load(&img, png, &err), AS_OK, "%s", err.msg);
    npy ref;
    cr_assert_eq(npy_read(npyf, &ref), 0, "%s", npyf);
    as_image_spec spec = {.channels = channels, .size = 28, .resize = mode, .mean = {0, 0, 0}, .std = {1, 1, 1}};
    float out[3 * 28 * 28];
    cr_assert_eq(as_image_prepare(&img, &spec, out, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(ref.count, (size_t)channels * 28 * 28);
    double worst = 0;
    for (size_t i = 0; i < ref.count; i++)
        worst = fmax(worst, fabs((double)out[i] - ref.f[i]));
    /* The bound is one grey level; float32 against float64 is far inside it. */
    cr_assert_leq(worst * 255, 1.0, "%s: max diff %.3g grey levels", png, worst * 255);
    cr_expect_leq(worst, 1e-5, "%s: max diff %.3g", png, worst);
    npy_free(&ref);
    as_image_free(&img);
}

Test(image, bilinear_down_and_up_equal_torch_interpolate)
{
    resize_matches_torch("fixtures/image/grey-45x37.png", "fixtures/image/grey-45x37.bilinear28.npy", 1,
                         AS_RESIZE_BILINEAR);
    resize_matches_torch("fixtures/image/grey-17x11.png", "fixtures/image/grey-17x11.bilinear28.npy", 1,
                         AS_RESIZE_BILINEAR);
    resize_matches_torch("fixtures/image/rgb-40x30.png", "fixtures/image/rgb-40x30.bilinear28.npy", 3,
                         AS_RESIZE_BILINEAR);
}

Test(image, nearest_equals_torch_interpolate)
{
    resize_matches_torch("fixtures/image/grey-45x37.png", "fixtures/image/grey-45x37.nearest28.npy", 1,
                         AS_RESIZE_NEAREST);
}

Test(image, rgb_to_grey_and_grey_to_rgb_as_torchvision)
{
    resize_matches_torch("fixtures/image/rgb-40x30.png", "fixtures/image/rgb-40x30.grey-bilinear28.npy", 1,
                         AS_RESIZE_BILINEAR);
    resize_matches_torch("fixtures/image/grey-45x37.png", "fixtures/image/grey-45x37.rgb-bilinear28.npy", 3,
                         AS_RESIZE_BILINEAR);
}

Test(image, prepare_normalises_by_mean_and_std)
{
    as_image img = {.width = 2, .height = 1, .channels = 1, .maxval = 255, .data = (uint16_t[]){0, 255}};
    as_image_spec spec = {.channels = 1, .size = 2, .mean = {0.25f}, .std = {0.5f}};
    float out[4];
    as_error err;
    /* 2 x 1 resized to 2 x 2 repeats the row */
    cr_assert_eq(as_image_prepare(&img, &spec, out, &err), AS_OK);
    cr_assert_float_eq(out[0], -0.5f, 1e-6);
    cr_assert_float_eq(out[1], 1.5f, 1e-6);
    cr_assert_float_eq(out[2], -0.5f, 1e-6);
}

static void load_fails(const char *path, const char *what)
{
    as_image img;
    as_error err;
    cr_assert_neq(as_image_load(&img, path, &err), AS_OK, "%s loaded", path);
    cr_assert(strstr(err.msg, path), "the message names the file: %s", err.msg);
    cr_assert(strstr(err.msg, what), "the message says '%s': %s", what, err.msg);
    cr_assert_null(img.data);
}

Test(image, bad_files_get_one_clear_message)
{
    load_fails("fixtures/image/no-such-file.png", "No such file");
    /* every cut of a real PNG is refused as truncated */
    FILE *f = fopen("fixtures/image/grey-45x37.png", "rb");
    cr_assert(f);
    unsigned char buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *path = tmp_file(".png");
    size_t cuts[] = {4, 8, 20, 33, n / 2, n - 13};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        f = fopen(path, "wb");
        fwrite(buf, 1, cuts[i], f);
        fclose(f);
        load_fails(path, "truncated");
    }
    f = fopen(path, "wb");
    fputs("hello, I am a text file\n", f);
    fclose(f);
    load_fails(path, "not an image");
    f = fopen(path, "wb");
    fclose(f);
    load_fails(path, "empty");
    f = fopen(path, "wb");
    fputs("P5\n3 2\n255\n\x01\x02", f);
    fclose(f);
    load_fails(path, "truncated PGM/PPM");
    f = fopen(path, "wb");
    fputs("P5\n100000 100000\n255\n", f);
    fclose(f);
    load_fails(path, "larger than");
    unlink(path);
}

/* The test images (the fixtures' and the demo's) decode to what libpng's
 * own simplified reader gives for them, sample for sample. */
Test(image, test_images_equal_libpngs_own_decode)
{
    const char *files[] = {"fixtures/image/grey-45x37.png", "fixtures/image/grey-17x11.png",
                           "fixtures/image/rgb-40x30.png",  "fixtures/tiny-vit/image.png",
                           "../assets/fashion/sneaker.png", "../assets/fashion/shirt.png",
                           "../assets/fashion/ankle-boot.png"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        as_image img;
        as_error err;
        cr_assert_eq(as_image_load(&img, files[f], &err), AS_OK, "%s", err.msg);
        png_image ref;
        memset(&ref, 0, sizeof ref);
        ref.version = PNG_IMAGE_VERSION;
        cr_assert(png_image_begin_read_from_file(&ref, files[f]), "%s: %s", files[f], ref.message);
        ref.format = img.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
        size_t n = PNG_IMAGE_SIZE(ref);
        uint8_t *buf = malloc(n);
        cr_assert(png_image_finish_read(&ref, NULL, buf, 0, NULL), "%s: %s", files[f], ref.message);
        cr_assert_eq((int)ref.width, img.width);
        cr_assert_eq((int)ref.height, img.height);
        cr_assert_eq(n, (size_t)img.width * (size_t)img.height * (size_t)img.channels);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(img.data[i], buf[i], "%s: sample %zu is %d, libpng's %d", files[f], i, img.data[i], buf[i]);
        free(buf);
        as_image_free(&img);
    }
}

/* ---------------------------------------------------------------- against PIL */

/* PIL's answers (tests/image/pil_ref.py, run now with Debian's
 * python3-pil) in a fresh folder; false, after a loud SKIP, without it. */
static char pil_dir[96];
static bool pil_ref(void)
{
    snprintf(pil_dir, sizeof pil_dir, "/tmp/attnscope-pilref-%d", (int)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 image/pil_ref.py %s 2>&1", pil_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "**** SKIP: python3 with PIL (python3-pil) could not run image/pil_ref.py: the JPEG and "
                        "resize checks against PIL are NOT CHECKED ****\n");
        return false;
    }
    return true;
}

static void pil_clean(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", pil_dir);
    cr_assert_eq(system(cmd), 0);
}

static uint8_t *read_raw(const char *name, size_t n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", pil_dir, name);
    FILE *f = fopen(p, "rb");
    cr_assert(f, "%s", p);
    uint8_t *b = malloc(n + 1);
    cr_assert_eq(fread(b, 1, n + 1, f), n, "%s: not %zu bytes", p, n);
    fclose(f);
    return b;
}

/* Every JPEG (sizes, 4:4:4, 4:2:2, 4:2:0, progressive, grey, CMYK, EXIF
 * orientations 1-8 little- and big-endian) decodes to PIL's pixels after
 * ImageOps.exif_transpose: both decode with libjpeg-turbo, so exactly,
 * CMYK through PIL's own conversion to RGB. */
Test(image, jpeg_equals_pils_decode)
{
    if (!pil_ref())
        return;
    char mf[160], line[512];
    snprintf(mf, sizeof mf, "%s/manifest.txt", pil_dir);
    FILE *m = fopen(mf, "r");
    cr_assert(m);
    int cases = 0, turned = 0;
    while (fgets(line, sizeof line, m)) {
        char kind[16], file[128], ref[128];
        int w, h, c;
        if (sscanf(line, "%15s %127s %127s %d %d %d", kind, file, ref, &w, &h, &c) != 6 || strcmp(kind, "decode"))
            continue;
        char p[256];
        snprintf(p, sizeof p, "%s/%s", pil_dir, file);
        as_image img;
        as_error err;
        int o;
        cr_assert_eq(as_image_load_ex(&img, p, &o, &err), AS_OK, "%s", err.msg);
        cr_assert(img.width == w && img.height == h && img.channels == c && img.maxval == 255,
                  "%s: %d x %d x %d, PIL's %d x %d x %d", file, img.width, img.height, img.channels, w, h, c);
        int want_o = !strncmp(file, "orient", 6) ? file[6] - '0' : 1;
        cr_assert_eq(o, want_o, "%s: orientation %d", file, o);
        turned += o > 1;
        size_t n = (size_t)w * (size_t)h * (size_t)c;
        uint8_t *want = read_raw(ref, n);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(img.data[i], want[i], "%s: sample %zu (x %zu, y %zu) is %d, PIL's %d", file, i,
                         i / (size_t)c % (size_t)w, i / (size_t)c / (size_t)w, img.data[i], want[i]);
        free(want);
        as_image_free(&img);
        cases++;
    }
    fclose(m);
    cr_assert_geq(cases, 19, "only %d decode cases", cases);
    cr_assert_eq(turned, 8, "%d turned images", turned);
    pil_clean();
}

/* as_pil_resize equals PIL's Image.resize on RGB photos (300 x 200,
 * 97 x 131, 640 x 480, 50 x 37) to 224 x 224, 61 x 45, (w x 224) and
 * 333 x 256, down and up, in every filter (nearest, lanczos, bilinear,
 * bicubic, box, hamming): within one grey level, and the count of
 * differing samples is reported (expected: none). */
Test(image, resize_equals_pils)
{
    if (!pil_ref())
        return;
    char mf[160], line[512];
    snprintf(mf, sizeof mf, "%s/manifest.txt", pil_dir);
    FILE *m = fopen(mf, "r");
    cr_assert(m);
    int cases = 0;
    size_t off = 0, total = 0;
    while (fgets(line, sizeof line, m)) {
        char kind[16], src[128], ref[128];
        int w, h, ow, oh, flt;
        if (sscanf(line, "%15s %127s %d %d %127s %d %d %d", kind, src, &w, &h, ref, &ow, &oh, &flt) != 8 ||
            strcmp(kind, "resize"))
            continue;
        uint8_t *in = read_raw(src, (size_t)w * (size_t)h * 3), *want = read_raw(ref, (size_t)ow * (size_t)oh * 3);
        uint8_t *got = malloc((size_t)ow * (size_t)oh * 3);
        as_error err;
        cr_assert_eq(as_pil_resize(in, w, h, 3, got, ow, oh, flt, &err), AS_OK, "%s", err.msg);
        for (size_t i = 0; i < (size_t)ow * (size_t)oh * 3; i++) {
            int d = abs((int)got[i] - (int)want[i]);
            cr_assert_leq(d, 1, "%s (%s %d x %d -> %d x %d): sample %zu is %d, PIL's %d", ref, as_pil_filter_name(flt),
                          w, h, ow, oh, i, got[i], want[i]);
            off += d != 0;
        }
        total += (size_t)ow * (size_t)oh * 3;
        free(in), free(want), free(got);
        cases++;
    }
    fclose(m);
    cr_assert_eq(cases, 96, "%d resize cases", cases);
    fprintf(stderr, "resize vs PIL: %d cases, %zu of %zu samples differ (by 1)\n", cases, off, total);
    pil_clean();
}

/* PGM/PPM of other maxvals (15, 1000, 65535) and a 16-bit RGB PNG become
 * the 8-bit RGB PIL's convert("RGB") gives: what transformers prepares. */
Test(image, eight_bit_rgb_equals_pils)
{
    if (!pil_ref())
        return;
    char mf[160], line[512];
    snprintf(mf, sizeof mf, "%s/manifest.txt", pil_dir);
    FILE *m = fopen(mf, "r");
    cr_assert(m);
    int cases = 0;
    while (fgets(line, sizeof line, m)) {
        char kind[16], file[128], ref[128];
        int w, h;
        if (sscanf(line, "%15s %127s %127s %d %d", kind, file, ref, &w, &h) != 5 || strcmp(kind, "rgb8"))
            continue;
        char p[256];
        snprintf(p, sizeof p, "%s/%s", pil_dir, file);
        as_image img;
        as_error err;
        cr_assert_eq(as_image_load(&img, p, &err), AS_OK, "%s", err.msg);
        size_t n = (size_t)w * (size_t)h * 3;
        uint8_t *got = as_image_u8(&img, 3, &err), *want = read_raw(ref, n);
        cr_assert(got, "%s", err.msg);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(got[i], want[i], "%s: sample %zu (%d) is %d, PIL's %d", file, i,
                         img.data[i / 3 * (size_t)img.channels + (img.channels == 3 ? i % 3 : 0)], got[i], want[i]);
        free(got), free(want);
        as_image_free(&img);
        cases++;
    }
    fclose(m);
    cr_assert_eq(cases, 4, "%d cases", cases);
    pil_clean();
}

/* as_image_prepare with a preprocessor's spec equals transformers'
 * preparation (pil_ref.py's, written from image_processing_vit.py and
 * image_processing_clip.py: PIL resize to a square or CLIP's shortest
 * edge, centre crop, float64 rescale cast to float32, float32 (x - mean)
 * / std; a grey model's PIL "L"), bit for bit. */
Test(image, pil_preparation_equals_transformers)
{
    if (!pil_ref())
        return;
    char mf[160], line[512];
    snprintf(mf, sizeof mf, "%s/manifest.txt", pil_dir);
    FILE *m = fopen(mf, "r");
    cr_assert(m);
    int cases = 0;
    const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, sd[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    while (fgets(line, sizeof line, m)) {
        char kind[16], file[128], ref[128];
        int flt, rh, rw, edge, ch, cw, c;
        if (sscanf(line, "%15s %127s %127s %d %d %d %d %d %d %d", kind, file, ref, &flt, &rh, &rw, &edge, &ch, &cw,
                   &c) != 10 || strcmp(kind, "prep"))
            continue;
        int S = ch ? ch : rh;
        as_image_spec spec = {.channels = c, .size = S, .pil = {1, flt, rh, rw, edge, ch, cw, 1.0 / 255}};
        memcpy(spec.mean, mean, sizeof mean), memcpy(spec.std, sd, sizeof sd);
        char p[256];
        snprintf(p, sizeof p, "%s/%s", pil_dir, file);
        as_image img;
        as_error err;
        cr_assert_eq(as_image_load(&img, p, &err), AS_OK, "%s", err.msg);
        size_t n = (size_t)c * (size_t)S * (size_t)S;
        float *got = malloc(n * sizeof *got), *want = (float *)read_raw(ref, n * sizeof *want);
        cr_assert_eq(as_image_prepare(&img, &spec, got, &err), AS_OK, "%s", err.msg);
        for (size_t i = 0; i < n; i++)
            cr_assert(got[i] == want[i], "%s (%s): value %zu is %.9g, transformers' %.9g", file, ref, i, got[i],
                      want[i]);
        free(got), free(want);
        as_image_free(&img);
        cases++;
    }
    fclose(m);
    cr_assert_eq(cases, 5, "%d preparation cases", cases);
    pil_clean();
}

/* What PIL refuses (a JPEG cut in half, cut in its header, with no frame)
 * gets one message naming the file; so does every cut of a real JPEG and
 * a JPEG claiming 65000 x 65000 pixels; nothing crashes or exits. */
Test(image, bad_jpegs_get_one_clear_message)
{
    if (!pil_ref())
        return;
    const char *bad[] = {"truncated.jpg", "header-only.jpg", "no-frame.jpg"};
    for (int i = 0; i < 3; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", pil_dir, bad[i]);
        load_fails(p, "JPEG");
    }
    char p[256];
    snprintf(p, sizeof p, "%s/photo0.jpg", pil_dir);
    FILE *f = fopen(p, "rb");
    cr_assert(f);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *path = tmp_file(".jpg");
    for (size_t cut = 2; cut < n; cut += cut < 700 ? 37 : 2311) {
        f = fopen(path, "wb");
        fwrite(buf, 1, cut, f);
        fclose(f);
        load_fails(path, "JPEG");
    }
    /* the SOF0 frame's height and width (bytes after ff c0, length, precision) */
    for (size_t i = 0; i + 9 < n; i++) {
        if (buf[i] == 0xff && buf[i + 1] == 0xc0) {
            buf[i + 5] = buf[i + 7] = 0xfd, buf[i + 6] = buf[i + 8] = 0xe8;
            break;
        }
    }
    f = fopen(path, "wb");
    fwrite(buf, 1, n, f);
    fclose(f);
    load_fails(path, "larger than");
    unlink(path);
    pil_clean();
}

/* Orientation tags the parser must not trust: values outside 1-8, a
 * wrong type, offsets past the segment, a short segment: all 1. */
Test(image, exif_orientation_parser_is_bounded)
{
    uint8_t seg[64] = "Exif\0\0II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0\x06\0\0\0";
    cr_assert_eq(as_exif_orientation(seg, 32), 6);
    seg[24] = 9;
    cr_assert_eq(as_exif_orientation(seg, 32), 1, "orientation 9");
    seg[24] = 6, seg[18] = 4; /* LONG, not SHORT */
    cr_assert_eq(as_exif_orientation(seg, 32), 1, "a LONG");
    seg[18] = 3;
    cr_assert_eq(as_exif_orientation(seg, 20), 1, "the entry is past the segment");
    seg[10] = 0xf0; /* IFD0 past the end */
    cr_assert_eq(as_exif_orientation(seg, 32), 1, "IFD0 offset past the segment");
    cr_assert_eq(as_exif_orientation((const uint8_t *)"Exif\0\0MM", 8), 1, "a short segment");
    cr_assert_eq(as_exif_orientation((const uint8_t *)"JFXX\0\0II*\0\x08\0\0\0", 14), 1, "not Exif");
}

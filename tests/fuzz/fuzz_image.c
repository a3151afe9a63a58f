/* Fuzz target: image files (PNG, JPEG with its EXIF segment, PGM/PPM)
 * through as_image_load_ex, then both preparations (PyTorch's resize for
 * a GGUF ViT; transformers' PIL resize, crop and normalisation for a
 * Hugging Face directory's, in every PIL filter).
 * Input: the file's bytes, written to the scratch directory.
 * Properties: a refused file gets a message naming the file, holding no
 * byte a terminal would obey, and no pixels; a loaded one has a size
 * within the limit, its channels 1 or 3, every sample within maxval, an
 * EXIF orientation in 1..8; its preparations succeed (or refuse with a
 * message) and give finite values. libjpeg's fatal errors come back as
 * messages: the process never exits. */
#include "fuzz.h"

#include <math.h>
#include <string.h>

#include "attnscope/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/input.img", fuzz_scratch_dir());
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f, "cannot write %s", path);
    fwrite(data, 1, size, f);
    fclose(f);
    as_image img;
    as_error err = {{0}};
    int o = 0;
    if (as_image_load_ex(&img, path, &o, &err) != AS_OK) {
        size_t where;
        FUZZ_CHECK(strstr(err.msg, path), "the message does not name the file: %s", err.msg);
        FUZZ_CHECK(fuzz_terminal_safe(err.msg, strlen(err.msg), &where), "control byte at %zu: %s", where, err.msg);
        FUZZ_CHECK(img.data == NULL, "pixels left after a refusal");
        return 0;
    }
    FUZZ_CHECK(img.width > 0 && img.height > 0 && (long long)img.width * img.height <= AS_IMAGE_MAX_PIXELS,
               "%d x %d", img.width, img.height);
    FUZZ_CHECK(img.channels == 1 || img.channels == 3, "%d channels", img.channels);
    FUZZ_CHECK(o >= 1 && o <= 8, "orientation %d", o);
    size_t n = (size_t)img.width * (size_t)img.height * (size_t)img.channels;
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(img.data[i] <= img.maxval, "sample %zu is %d, above %d", i, img.data[i], img.maxval);
    /* keep the preparations cheap on large inputs */
    if ((long long)img.width * img.height <= 1 << 16) {
        enum { S = 16 };
        static float out[3 * S * S];
        as_image_spec torch = {.channels = 3, .size = S, .resize = AS_RESIZE_BILINEAR,
                               .mean = {0.5f, 0.5f, 0.5f}, .std = {0.5f, 0.5f, 0.5f}};
        FUZZ_CHECK(as_image_prepare(&img, &torch, out, &err) == AS_OK, "%s", err.msg);
        for (int filter = 0; filter <= 5; filter++) {
            as_image_spec pil = torch;
            pil.channels = filter % 2 ? 1 : 3;
            pil.pil = (as_pil_spec){1, filter, 0, 0, filter < 3 ? S : 20, S, S, 1.0 / 255};
            if (filter >= 3)
                pil.pil.resize_h = 20, pil.pil.resize_w = 24, pil.pil.shortest_edge = 0;
            FUZZ_CHECK(as_image_prepare(&img, &pil, out, &err) == AS_OK, "filter %d: %s", filter, err.msg);
            for (int i = 0; i < pil.channels * S * S; i++)
                FUZZ_CHECK(isfinite(out[i]), "filter %d: value %d is %g", filter, i, out[i]);
        }
    }
    as_image_free(&img);
    return 0;
}

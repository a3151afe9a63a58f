/* arch vit beyond the fixture's hooks (test_interp.c): broken files are
 * refused by what and where, and the image is read as the file says. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/gguf.h"
#include "attnscope/model.h"
#include "helpers.h"

#define VIT "fixtures/tiny-vit.gguf"

typedef struct edit {
    const char *skip_key;    /* left out, or NULL */
    const char *u32_key;     /* set to u32, or NULL */
    uint32_t u32;
    const char *str_key;     /* set to str, or NULL */
    const char *str;
    int n_names;             /* > 0: clip.vision.class_names gets this many names */
    int n_mean;              /* > 0: clip.vision.image_mean gets this many values */
    int n_std;               /* > 0: clip.vision.image_std too */
    const char *drop;        /* a tensor left out, or NULL */
} edit;

/* A copy of tiny-vit with one edit, loaded; returns the error message. */
static void load_edited(const edit *e, char *msg, size_t cap)
{
    as_gguf *g;
    as_gguf_writer *w = edit_gguf(VIT, e->skip_key, e->drop, &g);
    if (e->u32_key)
        as_gguf_writer_set_u32(w, e->u32_key, e->u32);
    if (e->str_key)
        as_gguf_writer_set_str(w, e->str_key, e->str);
    if (e->n_names) {
        const char *names[16] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"};
        as_gguf_writer_set_arr_str(w, "clip.vision.class_names", names, (uint64_t)e->n_names);
    }
    if (e->n_mean) {
        float v[3] = {0.5f, 0.5f, 0.5f};
        as_gguf_writer_set_arr(w, "clip.vision.image_mean", AS_GGUF_FLOAT32, v, (uint64_t)e->n_mean);
    }
    if (e->n_std) {
        float v[3] = {0.5f, 0.5f, 0.5f};
        as_gguf_writer_set_arr(w, "clip.vision.image_std", AS_GGUF_FLOAT32, v, (uint64_t)e->n_std);
    }
    load_refused(w, g, msg, cap);
}

Test(vit, broken_files_are_refused_by_name)
{
    char msg[1024];
    load_edited(&(edit){.n_names = 9}, msg, sizeof msg);
    cr_assert(strstr(msg, "v.head.weight") && strstr(msg, "[32, 9]"), "9 names for 10 classes: %s", msg);
    load_edited(&(edit){.skip_key = "clip.vision.class_names"}, msg, sizeof msg);
    cr_assert(strstr(msg, "clip.vision.class_names") && strstr(msg, "missing"), "%s", msg);
    load_edited(&(edit){.u32_key = "clip.vision.patch_size", .u32 = 5}, msg, sizeof msg);
    cr_assert(strstr(msg, "image_size 28 is not a multiple of patch_size 5"), "%s", msg);
    load_edited(&(edit){.u32_key = "clip.vision.channels", .u32 = 3, .n_mean = 3}, msg, sizeof msg);
    cr_assert(strstr(msg, "image_std"), "std has one value for 3 channels: %s", msg);
    load_edited(&(edit){.u32_key = "clip.vision.channels", .u32 = 2}, msg, sizeof msg);
    cr_assert(strstr(msg, "clip.vision.channels = 2"), "%s", msg);
    load_edited(&(edit){.n_mean = 2}, msg, sizeof msg);
    cr_assert(strstr(msg, "clip.vision.image_mean") && strstr(msg, "one per channel"), "%s", msg);
    load_edited(&(edit){.str_key = "clip.vision.resize", .str = "bicubic"}, msg, sizeof msg);
    cr_assert(strstr(msg, "clip.vision.resize") && strstr(msg, "bicubic"), "%s", msg);
    load_edited(&(edit){.drop = "v.class_embd"}, msg, sizeof msg);
    cr_assert(strstr(msg, "'v.class_embd' is missing"), "%s", msg);
    load_edited(&(edit){.u32_key = "clip.vision.image_size", .u32 = 35}, msg, sizeof msg);
    cr_assert(strstr(msg, "v.position_embd.weight"), "5 x 5 patches need 26 positions: %s", msg);
}

/* A file saying 3 channels whose patch kernel takes 1 is refused at the
 * kernel, with both shapes. */
Test(vit, patch_kernel_shape_is_checked)
{
    char msg[1024];
    load_edited(&(edit){.u32_key = "clip.vision.channels", .u32 = 3, .n_mean = 3, .n_std = 3}, msg, sizeof msg);
    cr_assert(strstr(msg, "'v.patch_embd.weight' has shape [7, 7, 1, 32]") && strstr(msg, "[7, 7, 3, 32]"), "%s",
              msg);
}

/* A PGM of the fixture's samples gives the PNG's logits, bit for bit. */
Test(vit, an_image_in_another_format_gives_the_same_logits)
{
    as_session *a = open_session(VIT, 64), *b = open_session(VIT, 64);
    run_ok(a, "image fixtures/tiny-vit/image.png; finish");
    /* the same samples as a binary PGM */
    npy px;
    cr_assert_eq(npy_read("fixtures/tiny-vit/pixels.npy", &px), 0);
    char path[64];
    snprintf(path, sizeof path, "/tmp/attnscope-vit-%d.pgm", (int)getpid());
    FILE *f = fopen(path, "wb");
    fprintf(f, "P5\n28 28\n255\n");
    for (size_t i = 0; i < px.count; i++) {
        /* pixels.npy is (x / 255 - 0.25) / 0.4: back to the 8-bit sample */
        long v = lrintf((px.f[i] * 0.4f + 0.25f) * 255.0f);
        fputc((int)v, f);
    }
    fclose(f);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "image %s; finish", path);
    run_ok(b, cmd);
    unlink(path);
    cr_assert_eq(memcmp(as_interp_logits(a->it), as_interp_logits(b->it), 10 * sizeof(float)), 0);
    npy_free(&px);
    close_session(a);
    close_session(b);
}

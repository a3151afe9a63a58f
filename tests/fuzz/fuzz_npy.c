/* Fuzz target: the .npy writer's inputs -- dtype, number of dimensions,
 * shape and file name -- through as_npy_header and as_npy_write.
 * Input: dtype byte (0 f4, 1 i4, else an invalid enum value), ndim byte
 * (read as int8, so negative too), a flags byte (bit 0: shape values are 8
 * raw bytes each, else 1 byte each), the shape, then the file name (every
 * '/' and NUL dropped, at most 300 bytes; written in a scratch directory).
 * Properties: a header, when one is made, is what NumPy reads (magic,
 * version 1.0, length a multiple of 64 ending in '\n', the dict with the
 * exact shape); a small valid array written is read back byte for byte; a
 * shape whose size overflows, a negative ndim or an unknown dtype is
 * refused before the data is read; a failed write names the file and
 * leaves no temporary file. */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "attnscope/npy.h"

#define MAX_DIMS 12

/* Parses what as_npy_header wrote, as numpy.lib.format would. */
static void check_header(const char *h, size_t len, as_npy_dtype dtype, const size_t *shape, int ndim)
{
    FUZZ_CHECK(len % 64 == 0 && len >= 64 && len <= 256, "header length %zu", len);
    FUZZ_CHECK(!memcmp(h, "\x93NUMPY\x01\x00", 8), "magic");
    FUZZ_CHECK((size_t)((unsigned char)h[8] | (unsigned char)h[9] << 8) == len - 10, "HEADER_LEN field");
    FUZZ_CHECK(h[len - 1] == '\n', "header does not end in a newline");
    char want[300];
    int o = snprintf(want, sizeof want, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     dtype == AS_NPY_F32 ? "<f4" : "<i4");
    for (int i = 0; i < ndim; i++)
        o += snprintf(want + o, sizeof want - (size_t)o, "%zu%s", shape[i], ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
    o += snprintf(want + o, sizeof want - (size_t)o, "), }");
    FUZZ_CHECK((size_t)o <= len - 11 && !memcmp(h + 10, want, (size_t)o), "dict: %.*s", (int)(len - 10), h + 10);
    for (size_t i = 10 + (size_t)o; i < len - 1; i++)
        FUZZ_CHECK(h[i] == ' ', "padding byte %zu is %02x", i, (unsigned char)h[i]);
}

/* A leftover of as_write_atomic: "NAME.tmp.XXXXXX". */
static bool tmp_left(const char *name)
{
    bool left = false;
    size_t n = strlen(name);
    DIR *d = opendir(fuzz_scratch_dir());
    for (struct dirent *e; d && (e = readdir(d));)
        left |= strlen(e->d_name) == n + 11 && !strncmp(e->d_name, name, n) && !strncmp(e->d_name + n, ".tmp.", 5);
    if (d)
        closedir(d);
    return left;
}

static void check_file(const char *name, const char *header, size_t hlen, const void *data, size_t bytes)
{
    FILE *f = fopen(name, "rb");
    FUZZ_CHECK(f != NULL, "written file '%s' cannot be opened: %s", name, strerror(errno));
    char *got = malloc(hlen + bytes + 1);
    size_t n = fread(got, 1, hlen + bytes + 1, f);
    fclose(f);
    FUZZ_CHECK(n == hlen + bytes, "file has %zu bytes, expected %zu", n, hlen + bytes);
    FUZZ_CHECK(!memcmp(got, header, hlen) && !memcmp(got + hlen, data, bytes), "file content differs");
    free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    fuzz_scratch_enter();
    as_npy_dtype dtype = data[0] == 0 ? AS_NPY_F32 : data[0] == 1 ? AS_NPY_I32 : (as_npy_dtype)data[0];
    bool dtype_ok = data[0] <= 1;
    int ndim = (int8_t)data[1] % (MAX_DIMS + 1);
    bool wide = data[2] & 1;
    size_t pos = 3, shape[MAX_DIMS] = {0};
    for (int i = 0; i < ndim; i++) {
        if (wide && pos + 8 <= size) {
            uint64_t v;
            memcpy(&v, data + pos, 8);
            shape[i] = (size_t)v;
            pos += 8;
        } else if (!wide && pos < size) {
            shape[i] = data[pos++];
        }
    }
    char name[301];
    size_t nl = 0;
    for (; pos < size && nl < 300; pos++)
        if (data[pos] != '/' && data[pos] != '\0')
            name[nl++] = (char)data[pos];
    name[nl] = '\0';

    /* the header alone, into a buffer exactly as large as the cap given */
    char *hdr = malloc(256);
    size_t hlen = as_npy_header(hdr, 256, dtype, shape, ndim);
    bool small = ndim >= 0 && ndim <= 4;
    for (int i = 0; i < ndim && small; i++)
        small = shape[i] < 1000000000u;
    if (hlen)
        check_header(hdr, hlen, dtype, shape, ndim);
    else
        FUZZ_CHECK(!(small && dtype_ok), "no header for a small shape (ndim %d)", ndim);
    FUZZ_CHECK(!(hlen && (!dtype_ok || ndim < 0)), "header made for dtype %d, ndim %d", (int)data[0], ndim);
    char tiny[64];
    FUZZ_CHECK(as_npy_header(tiny, sizeof tiny, dtype, shape, ndim) == 0 || hlen == 64, "cap ignored");

    /* the element count, with overflow noticed */
    size_t count = 1;
    bool overflow = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] && count > SIZE_MAX / 4 / shape[i])
            overflow = true;
        count *= shape[i];
    }
    as_error err;
    memset(&err, 0, sizeof err);
    const char *path = nl ? name : "x.npy";
    if (overflow || !dtype_ok || ndim < 0) {
        float four[4] = {0};
        FUZZ_CHECK(as_npy_write(path, dtype, four, shape, ndim, &err) == AS_ERR,
                   "write accepted (overflow %d, dtype %d, ndim %d)", overflow, (int)data[0], ndim);
    } else if (count <= 4096) {
        size_t bytes = count * 4;
        uint8_t *vals = malloc(bytes ? bytes : 1);
        for (size_t i = 0; i < bytes; i++)
            vals[i] = (uint8_t)(i * 131 + 7);
        int rc = as_npy_write(path, dtype, vals, shape, ndim, &err);
        if (rc == AS_OK) {
            FUZZ_CHECK(hlen != 0, "written without a header");
            check_file(path, hdr, hlen, vals, bytes);
        } else {
            char shown[sizeof name];
            snprintf(shown, sizeof shown, "%s", path);
            as_defang(shown); /* messages show control bytes as '?' */
            FUZZ_CHECK(strstr(err.msg, shown) != NULL, "message does not name the file: %s", err.msg);
        }
        free(vals);
    }
    FUZZ_CHECK(!tmp_left(path), "a temporary file was left behind");
    fuzz_scratch_clean(NULL);
    fuzz_scratch_leave();
    free(hdr);
    return 0;
}

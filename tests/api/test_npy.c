/* .npy: write/read round trips, the exact layout of written files, and
   gpuir_npy_load on hand-built byte buffers (accepted and rejected). */
#define _POSIX_C_SOURCE 200809L
#include "../../gpuir.h"
#include "../check.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];

/* A temp directory per run; files are removed as each test finishes. */
static bool make_tmpdir(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gpuir-npy-XXXXXX", base && strlen(base) < 40 ? base : "/tmp");
    return mkdtemp(tmpdir) != NULL;
}

static void tmp_path(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", tmpdir, name);
}

static unsigned char *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = (unsigned char *)malloc(len > 0 ? (size_t)len : 1);
    *n = b ? fread(b, 1, (size_t)len, f) : 0;
    fclose(f);
    return b;
}

static bool contains(const unsigned char *b, size_t n, const char *s) {
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(b + i, s, k) == 0) return true;
    return false;
}

/* Builds a .npy image: magic, version major.0, header length (2 bytes for
   1.0, 4 for 2.0 and 3.0), the header text as given, then `data`. */
static unsigned char *npy_image(unsigned major, const char *header, const void *data,
                                size_t ndata, size_t *size) {
    size_t hl = strlen(header), pre = major == 1 ? 10 : 12;
    unsigned char *b = (unsigned char *)malloc(pre + hl + ndata + 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    b[8] = (unsigned char)(hl & 0xff);
    b[9] = (unsigned char)(hl >> 8 & 0xff);
    if (major != 1) { b[10] = (unsigned char)(hl >> 16 & 0xff); b[11] = (unsigned char)(hl >> 24); }
    memcpy(b + pre, header, hl);
    if (ndata) memcpy(b + pre + hl, data, ndata);
    *size = pre + hl + ndata;
    return b;
}

/* Loads an image made by npy_image and checks the result code; on success
   returns the array (else it must be zeroed). */
static gpuir_result load(gpuir_ctx *ctx, unsigned major, const char *header, const void *data,
                         size_t ndata, gpuir_array *out) {
    size_t size;
    unsigned char *b = npy_image(major, header, data, ndata, &size);
    gpuir_result r = gpuir_npy_load(ctx, b, size, out);
    free(b);
    return r;
}

/* Expects `header` (+ data) to be refused with `want`; resets the context. */
#define CHECK_REJECT(ctx, major, header, bytes_, nbytes_, want)                                 \
    do {                                                                                    \
        gpuir_array check__a;                                                               \
        memset(&check__a, 0xAB, sizeof check__a);                                           \
        CHECK_RESULT(ctx, load(ctx, major, header, bytes_, nbytes_, &check__a), want);          \
        CHECK(gpuir_ctx_result(ctx) == (want));                                             \
        CHECK(check__a.data == NULL && check__a.rank == 0);                                 \
        if (check__a.data && check__a.rank >= 0 && check__a.rank <= GPUIR_MAX_RANK)         \
            gpuir_array_release(&check__a);                                                 \
        gpuir_ctx_clear_error(ctx);                                                         \
    } while (0)

/* ---- write -> read ---- */

static bool same_array(const gpuir_array *a, const gpuir_array *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    size_t bytes = gpuir_array_count(a) * gpuir_dtype_size(a->dtype);
    return bytes == 0 || memcmp(a->data, b->data, bytes) == 0;
}

TEST(write_read_roundtrip) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    static const gpuir_dtype dts[] = {GPUIR_F32, GPUIR_F16, GPUIR_I32, GPUIR_I64};
    static const int64_t shapes[][3] = {{0, 0, 0}, {7, 0, 0}, {3, 5, 0}, {2, 3, 4}};
    int cases = 0;
    for (size_t d = 0; d < 4; d++) {
        for (int rank = 0; rank <= 3; rank++) {
            gpuir_array a, b;
            CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, dts[d], rank, shapes[rank]), GPUIR_OK);
            gpuir_array_fill_random(&a, 100 + d * 10 + (uint64_t)rank);
            if (dts[d] == GPUIR_F32 && rank == 3) {   /* specials survive bit-exactly */
                gpuir_array_set(&a, 0, -0.0);
                gpuir_array_set(&a, 1, INFINITY);
                gpuir_array_set(&a, 2, NAN);
            }
            char path[128], name[32];
            snprintf(name, sizeof name, "rt_%s_%d.npy", gpuir_dtype_name(dts[d]), rank);
            tmp_path(path, sizeof path, name);
            CHECK_RESULT(ctx, gpuir_npy_write(ctx, path, &a), GPUIR_OK);
            CHECK_RESULT(ctx, gpuir_npy_read(ctx, path, &b), GPUIR_OK);
            if (!same_array(&a, &b)) {
                fprintf(stderr, "round trip differs: %s rank %d\n", gpuir_dtype_name(dts[d]), rank);
                check__failed = 1;
            }
            /* the file also loads from memory */
            size_t n;
            unsigned char *bytes = read_bytes(path, &n);
            gpuir_array c;
            CHECK(bytes != NULL);
            if (bytes) {
                CHECK_RESULT(ctx, gpuir_npy_load(ctx, bytes, n, &c), GPUIR_OK);
                CHECK(same_array(&a, &c));
                gpuir_array_release(&c);
                free(bytes);
            }
            gpuir_array_release(&a);
            gpuir_array_release(&b);
            remove(path);
            cases++;
        }
    }
    CHECK(cases == 16);
    gpuir_ctx_destroy(ctx);
}

TEST(write_read_zero_size) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    static const int64_t shapes[][3] = {{0, 0, 0}, {3, 0, 0}, {2, 0, 5}};
    static const int ranks[] = {1, 2, 3};
    static const char *const want_shape[] = {"(0,)", "(3, 0)", "(2, 0, 5)"};
    for (int k = 0; k < 3; k++) {
        gpuir_array a, b;
        char path[128];
        tmp_path(path, sizeof path, "zero.npy");
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, GPUIR_F32, ranks[k], shapes[k]), GPUIR_OK);
        CHECK(gpuir_array_count(&a) == 0);
        CHECK_RESULT(ctx, gpuir_npy_write(ctx, path, &a), GPUIR_OK);
        size_t n;
        unsigned char *bytes = read_bytes(path, &n);
        CHECK(bytes && n == 128);                    /* header only: 10 + 58 bytes, padded to 128 */
        if (bytes) {
            char shape[64];
            snprintf(shape, sizeof shape, "'shape': %s, }", want_shape[k]);
            CHECK(contains(bytes, n, shape));
            free(bytes);
        }
        CHECK_RESULT(ctx, gpuir_npy_read(ctx, path, &b), GPUIR_OK);
        CHECK(same_array(&a, &b));
        CHECK(b.rank == ranks[k] && b.dims[ranks[k] - 1] == shapes[k][ranks[k] - 1]);
        gpuir_array_release(&a);
        gpuir_array_release(&b);
        remove(path);
    }
    gpuir_ctx_destroy(ctx);
}

/* The written file: "\x93NUMPY" 1.0, a little-endian header length, a
   header that is the Python dict numpy writes, padded with spaces and a
   final newline so that the data starts at a multiple of 64. */
TEST(written_file_layout) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    struct { gpuir_dtype dt; int rank; int64_t dims[8]; const char *dict; } cases[] = {
        {GPUIR_F32, 0, {0}, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"},
        {GPUIR_F16, 1, {5}, "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }"},
        {GPUIR_I32, 2, {2, 3}, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }"},
        {GPUIR_I64, 3, {2, 3, 4}, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3, 4), }"},
        /* a long header that needs more than one 64-byte block */
        {GPUIR_F32, 8, {1, 1, 1, 1, 1, 1, 1, 1000000},
         "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1000000), }"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gpuir_array a;
        char path[128];
        tmp_path(path, sizeof path, "layout.npy");
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, cases[k].dt, cases[k].rank, cases[k].dims), GPUIR_OK);
        size_t count = gpuir_array_count(&a), esize = gpuir_dtype_size(cases[k].dt);
        for (size_t i = 0; i < count; i++) gpuir_array_set(&a, i, (double)(i % 100));
        CHECK_RESULT(ctx, gpuir_npy_write(ctx, path, &a), GPUIR_OK);
        size_t n;
        unsigned char *b = read_bytes(path, &n);
        CHECK(b != NULL);
        if (b && n >= 10) {
            CHECK(memcmp(b, "\x93NUMPY\x01\x00", 8) == 0);
            size_t hl = (size_t)b[8] | (size_t)b[9] << 8;
            size_t start = 10 + hl;
            CHECK(start % 64 == 0);
            CHECK(n == start + count * esize);
            size_t dl = strlen(cases[k].dict);
            CHECK(hl >= dl + 1 && memcmp(b + 10, cases[k].dict, dl) == 0);
            for (size_t i = 10 + dl; i + 1 < start; i++) CHECK(b[i] == ' ');
            CHECK(b[start - 1] == '\n');
            /* minimal padding: the header block is the smallest multiple of 64 */
            CHECK(start - (10 + dl + 1) < 64);
            CHECK(start <= n && memcmp(b + start, a.data, count * esize) == 0);
        }
        free(b);
        gpuir_array_release(&a);
        remove(path);
    }
    gpuir_ctx_destroy(ctx);
}

TEST(write_refuses_bf16) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_array a;
    int64_t dims[1] = {4};
    char path[128];
    tmp_path(path, sizeof path, "bf16.npy");
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, GPUIR_BF16, 1, dims), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_npy_write(ctx, path, &a), GPUIR_ERR_NPY);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_NPY);
    CHECK(strstr(gpuir_ctx_error(ctx), "bf16") != NULL);
    CHECK(strstr(gpuir_ctx_error(ctx), path) != NULL);      /* the file named: it said "npy_write: bf16 ..." */
    FILE *f = fopen(path, "rb");
    CHECK(f == NULL);                        /* nothing was created */
    if (f) { fclose(f); remove(path); }
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&a);
    gpuir_ctx_destroy(ctx);
}

TEST(read_missing_file_is_io_error) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char path[128];
    gpuir_array a;
    tmp_path(path, sizeof path, "does-not-exist.npy");
    CHECK_RESULT(ctx, gpuir_npy_read(ctx, path, &a), GPUIR_ERR_IO);
    CHECK(a.data == NULL);
    gpuir_ctx_clear_error(ctx);
    tmp_path(path, sizeof path, "no-such-dir/x.npy");
    int64_t dims[1] = {2};
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, GPUIR_F32, 1, dims), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_npy_write(ctx, path, &a), GPUIR_ERR_IO);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&a);
    gpuir_ctx_destroy(ctx);
}

/* ---- load: accepted headers ---- */

TEST(load_versions_and_shapes) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_array a;
    float f5[5] = {1, 2, 3, 4.5f, -0.0f};
    int32_t i6[6] = {1, -2, 3, -4, 5, 2147483647};

    /* 1.0, shape (5,) */
    CHECK_RESULT(ctx, load(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }\n",
                           f5, sizeof f5, &a), GPUIR_OK);
    CHECK(a.dtype == GPUIR_F32 && a.rank == 1 && a.dims[0] == 5);
    CHECK(a.data && memcmp(a.data, f5, sizeof f5) == 0);
    CHECK(gpuir_array_get(&a, 3) == 4.5);
    gpuir_array_release(&a);

    /* 2.0 (4-byte header length), keys in another order, no trailing comma */
    CHECK_RESULT(ctx, load(ctx, 2, "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}",
                           i6, sizeof i6, &a), GPUIR_OK);
    CHECK(a.dtype == GPUIR_I32 && a.rank == 2 && a.dims[0] == 2 && a.dims[1] == 3);
    CHECK(a.data && memcmp(a.data, i6, sizeof i6) == 0);
    CHECK(gpuir_array_get(&a, 5) == 2147483647.0);
    gpuir_array_release(&a);

    /* 3.0 is the same layout as 2.0 */
    CHECK_RESULT(ctx, load(ctx, 3, "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }",
                           i6, sizeof i6, &a), GPUIR_OK);
    CHECK(a.rank == 1 && a.dims[0] == 6);
    gpuir_array_release(&a);

    /* shape () is a scalar: one element */
    int64_t one = -5;
    CHECK_RESULT(ctx, load(ctx, 1, "{'fortran_order': False, 'descr': '<i8', 'shape': ()}",
                           &one, 8, &a), GPUIR_OK);
    CHECK(a.dtype == GPUIR_I64 && a.rank == 0 && gpuir_array_count(&a) == 1);
    CHECK(a.data && gpuir_array_get(&a, 0) == -5.0);
    gpuir_array_release(&a);

    /* f16, odd spacing and double quotes */
    uint16_t h3[3] = {0x3C00, 0xC000, 0x7BFF};
    CHECK_RESULT(ctx, load(ctx, 1, "{ \"descr\" :\"<f2\" ,\"fortran_order\":False,\"shape\":( 3 , ) }   \n",
                           h3, sizeof h3, &a), GPUIR_OK);
    CHECK(a.dtype == GPUIR_F16 && a.rank == 1 && a.dims[0] == 3);
    CHECK(a.data && gpuir_array_get(&a, 0) == 1.0 && gpuir_array_get(&a, 1) == -2.0 &&
          gpuir_array_get(&a, 2) == 65504.0);
    gpuir_array_release(&a);

    /* a zero-size array: no data bytes */
    CHECK_RESULT(ctx, load(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }",
                           NULL, 0, &a), GPUIR_OK);
    CHECK(a.rank == 2 && a.dims[0] == 0 && a.dims[1] == 4 && gpuir_array_count(&a) == 0);
    gpuir_array_release(&a);

    /* rank 8 is the cap, and allowed */
    CHECK_RESULT(ctx, load(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 2), }",
                           f5, 8, &a), GPUIR_OK);
    CHECK(a.rank == 8 && a.dims[7] == 2);
    gpuir_array_release(&a);
    gpuir_ctx_destroy(ctx);
}

/* ---- load: rejected input ---- */

#define HDR(descr, fortran, shape) \
    "{'descr': '" descr "', 'fortran_order': " fortran ", 'shape': " shape ", }\n"

TEST(load_rejects_bad_framing) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    float f6[6] = {0};
    gpuir_array a;
    size_t size;
    unsigned char *b;

    /* bad magic */
    b = npy_image(1, HDR("<f4", "False", "(6,)"), f6, sizeof f6, &size);
    b[1] = 'n';
    CHECK_RESULT(ctx, gpuir_npy_load(ctx, b, size, &a), GPUIR_ERR_NPY);
    gpuir_ctx_clear_error(ctx);
    b[1] = 'N';
    b[0] = 0x92;
    CHECK_RESULT(ctx, gpuir_npy_load(ctx, b, size, &a), GPUIR_ERR_NPY);
    gpuir_ctx_clear_error(ctx);
    free(b);

    /* too short for even the preamble: truncated, not "missing the magic"
       (a 2.0 preamble cut after 11 bytes too) */
    static const struct { const char *bytes; size_t size; const char *says; } short_files[] = {
        {"\x93NUMPY\x01", 7, ".npy: truncated: 7 bytes, fewer than the 10"},
        {"\x93NUMPY", 6, ".npy: truncated: 6 bytes"},
        {"\x93NU", 3, ".npy: truncated: 3 bytes"},
        {"\x93nu", 3, ".npy: missing the \\x93NUMPY magic"},
        {"", 0, ".npy: empty"},
        {"\x93NUMPY\x02\x00\x00\x00\x00", 11, ".npy: truncated: 11 bytes, fewer than the 12"},
    };
    for (size_t i = 0; i < sizeof short_files / sizeof short_files[0]; i++) {
        CHECK_RESULT(ctx, gpuir_npy_load(ctx, short_files[i].bytes, short_files[i].size, &a), GPUIR_ERR_NPY);
        CHECK_MSG(ctx, short_files[i].says);
        gpuir_ctx_clear_error(ctx);
    }

    /* versions 4.0 and 0.0 */
    CHECK_REJECT(ctx, 4, HDR("<f4", "False", "(6,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 0, HDR("<f4", "False", "(6,)"), f6, sizeof f6, GPUIR_ERR_NPY);

    /* header length past the end of the buffer */
    b = npy_image(1, HDR("<f4", "False", "(6,)"), f6, sizeof f6, &size);
    b[8] = 0xff; b[9] = 0x7f;
    CHECK_RESULT(ctx, gpuir_npy_load(ctx, b, size, &a), GPUIR_ERR_NPY);
    gpuir_ctx_clear_error(ctx);
    free(b);
    b = npy_image(2, HDR("<f4", "False", "(6,)"), f6, sizeof f6, &size);
    b[11] = 0xff;                            /* ~4 GiB header: must not wrap */
    CHECK_RESULT(ctx, gpuir_npy_load(ctx, b, size, &a), GPUIR_ERR_NPY);
    gpuir_ctx_clear_error(ctx);
    free(b);

    /* truncated data, and extra trailing bytes */
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(6,)"), f6, sizeof f6 - 1, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(6,)"), f6, 0, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(5,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "()"), f6, 8, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(0,)"), f6, 4, GPUIR_ERR_NPY);

    /* a file cut short on disk */
    char path[128];
    tmp_path(path, sizeof path, "cut.npy");
    b = npy_image(1, HDR("<f4", "False", "(6,)"), f6, sizeof f6, &size);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) { fwrite(b, 1, size - 3, f); fclose(f); }
    CHECK_RESULT(ctx, gpuir_npy_read(ctx, path, &a), GPUIR_ERR_NPY);
    CHECK(a.data == NULL);
    gpuir_ctx_clear_error(ctx);
    remove(path);
    free(b);
    gpuir_ctx_destroy(ctx);
}

TEST(load_rejects_bad_headers) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    float f6[6] = {0};
    double d6[6] = {0};
    /* fortran order */
    CHECK_REJECT(ctx, 1, HDR("<f4", "True", "(2, 3)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "false", "(6,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "0", "(6,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    /* dtypes: big-endian, f8, bool, bf16 has no descr, unknown */
    CHECK_REJECT(ctx, 1, HDR(">f4", "False", "(6,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR(">i4", "False", "(6,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f8", "False", "(6,)"), d6, sizeof d6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("|b1", "False", "(6,)"), f6, 6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("b1", "False", "(6,)"), f6, 6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<u4", "False", "(6,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("", "False", "(6,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4<f4<f4<f4<f4<f4", "False", "(6,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    /* unknown key, missing keys, duplicated structure errors */
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}",
                 f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'fortran_order': False}", f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'shape': (6,)}", f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{'fortran_order': False, 'shape': (6,)}", f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{}", f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "", f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "[1, 2]", f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,)", f6, sizeof f6,
                 GPUIR_ERR_NPY);                                   /* no closing brace */
    CHECK_REJECT(ctx, 1, "{'descr': '<f4' 'fortran_order': False, 'shape': (6,)}", f6, sizeof f6,
                 GPUIR_ERR_NPY);                                   /* missing comma */
    CHECK_REJECT(ctx, 1, "{'descr: '<f4', 'fortran_order': False, 'shape': (6,)}", f6, sizeof f6,
                 GPUIR_ERR_NPY);                                   /* broken quoting */
    CHECK_REJECT(ctx, 1, "{descr: '<f4', 'fortran_order': False, 'shape': (6,)}", f6, sizeof f6,
                 GPUIR_ERR_NPY);                                   /* bare key */
    /* garbage in the shape */
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(2, x)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(-6,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(2 3)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(2,,3)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "[6]"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "6"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(6.0,)"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(6"), f6, sizeof f6, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,", f6, sizeof f6,
                 GPUIR_ERR_NPY);
    gpuir_ctx_destroy(ctx);
}

TEST(load_rejects_limits) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    float f6[6] = {0};
    /* rank 9 is above the cap */
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 6)"), f6, sizeof f6,
                 GPUIR_ERR_LIMIT);
    /* a dimension that does not fit in 64 bits */
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(99999999999999999999,)"), f6, sizeof f6,
                 GPUIR_ERR_LIMIT);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(18446744073709551617,)"), f6, sizeof f6,
                 GPUIR_ERR_LIMIT);
    /* dims that fit alone but whose product overflows */
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(4294967296, 4294967296)"), f6, sizeof f6,
                 GPUIR_ERR_LIMIT);
    CHECK_REJECT(ctx, 1, HDR("<i8", "False", "(2305843009213693952,)"), f6, sizeof f6,
                 GPUIR_ERR_LIMIT);      /* 2^61 elements: the byte count overflows */
    /* larger than the default 16 GiB */
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(65536, 65537)"), f6, sizeof f6, GPUIR_ERR_LIMIT);
    gpuir_ctx_destroy(ctx);

    /* a context with a small max_tensor_bytes */
    ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.max_tensor_bytes = 16});
    gpuir_array a;
    CHECK_RESULT(ctx, load(ctx, 1, HDR("<f4", "False", "(4,)"), f6, 16, &a), GPUIR_OK);  /* at the limit */
    CHECK(a.data && a.dims[0] == 4);
    gpuir_array_release(&a);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(5,)"), f6, 20, GPUIR_ERR_LIMIT);
    CHECK_REJECT(ctx, 1, HDR("<f4", "False", "(2, 3)"), f6, 24, GPUIR_ERR_LIMIT);
    CHECK_REJECT(ctx, 1, HDR("<i8", "False", "(3,)"), f6, 24, GPUIR_ERR_LIMIT);
    /* writing is bounded the same way */
    gpuir_array big;
    memset(&big, 0, sizeof big);
    big.dtype = GPUIR_F32;
    big.rank = 1;
    big.dims[0] = 6;
    big.data = f6;
    char path[128];
    tmp_path(path, sizeof path, "big.npy");
    CHECK_RESULT(ctx, gpuir_npy_write(ctx, path, &big), GPUIR_ERR_LIMIT);
    gpuir_ctx_clear_error(ctx);
    remove(path);
    gpuir_ctx_destroy(ctx);
}

/* Errors are sticky: after a failure, load does nothing until cleared. */
TEST(load_after_error_does_nothing) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    float f1 = 2.0f;
    gpuir_array a;
    CHECK_RESULT(ctx, load(ctx, 1, HDR(">f4", "False", "(1,)"), &f1, 4, &a), GPUIR_ERR_NPY);
    CHECK_RESULT(ctx, load(ctx, 1, HDR("<f4", "False", "(1,)"), &f1, 4, &a), GPUIR_ERR_NPY);
    CHECK(a.data == NULL);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, load(ctx, 1, HDR("<f4", "False", "(1,)"), &f1, 4, &a), GPUIR_OK);
    CHECK(a.data && gpuir_array_get(&a, 0) == 2.0);
    gpuir_array_release(&a);
    gpuir_ctx_destroy(ctx);
}

/* ---- strict headers: NUL in a string, duplicate keys, text after the dict ---- */
TEST(load_is_strict) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    float f3[3] = {1, 2, 3};
    static const char nul_descr[] = "{'descr': '<f4\0', 'fortran_order': False, 'shape': (3,), }";
    size_t size;
    unsigned char *b = npy_image(1, "{'descr': '<f4@', 'fortran_order': False, 'shape': (3,), }", f3, 12, &size);
    b[10 + 14] = '\0';                                   /* the '@' */
    CHECK(memcmp(b + 10, nul_descr, 16) == 0);
    gpuir_array a;
    CHECK_RESULT(ctx, gpuir_npy_load(ctx, b, size, &a), GPUIR_ERR_NPY);
    CHECK(strstr(gpuir_ctx_error(ctx), "control or non-ASCII byte") != NULL);
    gpuir_ctx_clear_error(ctx);
    free(b);
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f3, 12,
                 GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'shape': (3,), }", f3, 12,
                 GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'fortran_order': False, 'shape': (3,)}", f3, 12,
                 GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } x", f3, 12, GPUIR_ERR_NPY);
    CHECK_REJECT(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }}", f3, 12, GPUIR_ERR_NPY);
    /* NumPy's own padding (spaces, then a newline) is fine */
    CHECK_RESULT(ctx, load(ctx, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }     \n", f3, 12, &a),
                 GPUIR_OK);
    gpuir_array_release(&a);
    gpuir_ctx_destroy(ctx);
}

/* Writes an image to a file in the temp directory. */
static void write_image(const char *path, const char *header, const void *data, size_t n) {
    size_t size;
    unsigned char *b = npy_image(1, header, data, n, &size);
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(b, 1, size, f); fclose(f); }
    free(b);
}

/* NumPy's default float64 and bool, converted to the dtype asked for. */
TEST(read_as_converts_f8_and_b1) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char f8[128], b1[128];
    double d[3] = {1.0, 2.5, -0.1};
    unsigned char bools[3] = {1, 0, 1};
    tmp_path(f8, sizeof f8, "f8.npy");
    tmp_path(b1, sizeof b1, "b1.npy");
    write_image(f8, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }\n", d, sizeof d);
    write_image(b1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3, 1), }\n", bools, 3);
    gpuir_array a;
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, f8, GPUIR_F32, &a), GPUIR_OK);
    CHECK(a.dtype == GPUIR_F32 && a.rank == 1 && a.dims[0] == 3);
    CHECK(gpuir_array_get(&a, 0) == 1.0 && gpuir_array_get(&a, 1) == 2.5 && gpuir_array_get(&a, 2) == (double)-0.1f);
    gpuir_array_release(&a);
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, f8, GPUIR_BF16, &a), GPUIR_OK);
    CHECK(a.dtype == GPUIR_BF16 && gpuir_array_get(&a, 1) == 2.5);
    gpuir_array_release(&a);
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, b1, GPUIR_I32, &a), GPUIR_OK);
    CHECK(a.dtype == GPUIR_I32 && a.rank == 2 && a.dims[0] == 3 && a.dims[1] == 1);
    CHECK(gpuir_array_get(&a, 0) == 1 && gpuir_array_get(&a, 1) == 0 && gpuir_array_get(&a, 2) == 1);
    gpuir_array_release(&a);
    /* f64 into an integer: refused, naming the file and both dtypes */
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, f8, GPUIR_I32, &a), GPUIR_ERR_NPY);
    CHECK(strstr(gpuir_ctx_error(ctx), f8) && strstr(gpuir_ctx_error(ctx), "'<f8' (f64), i32 is wanted"));
    CHECK(a.data == NULL);
    gpuir_ctx_clear_error(ctx);
    /* without a dtype to convert to, f64 is refused naming the call that converts */
    CHECK_RESULT(ctx, gpuir_npy_read(ctx, f8, &a), GPUIR_ERR_NPY);
    CHECK(strstr(gpuir_ctx_error(ctx), "gpuir_npy_read_as") != NULL);
    gpuir_ctx_clear_error(ctx);
    /* a finite f64 past the dtype's range is refused, naming the element (it
       became inf); inf and nan are kept, and 65519 rounds to f16's 65504 */
    double big[4] = {1.0, -1e300, 1e-300, 70000.0}, edge[4] = {INFINITY, -INFINITY, NAN, 65519.0};
    write_image(f8, "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }\n", big, sizeof big);
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, f8, GPUIR_F32, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, ".npy: element 1, -1e+300, is out of f32's range, -3.40282347e+38 to 3.40282347e+38");
    CHECK(a.data == NULL);
    gpuir_ctx_clear_error(ctx);
    big[1] = -1e30;
    write_image(f8, "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }\n", big, sizeof big);
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, f8, GPUIR_F32, &a), GPUIR_OK);
    gpuir_array_release(&a);
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, f8, GPUIR_F16, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, ".npy: element 1, -1e+30, is out of f16's range, -65504 to 65504");
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, f8, GPUIR_BF16, &a), GPUIR_OK);
    gpuir_array_release(&a);
    write_image(f8, "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }\n", edge, sizeof edge);
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, f8, GPUIR_F16, &a), GPUIR_OK);
    CHECK(isinf(gpuir_array_get(&a, 0)) && isnan(gpuir_array_get(&a, 2)) && gpuir_array_get(&a, 3) == 65504.0);
    gpuir_array_release(&a);
    /* a file of another dtype than asked: both named */
    float f1 = 1;
    write_image(f8, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", &f1, 4);
    CHECK_RESULT(ctx, gpuir_npy_read_as(ctx, f8, GPUIR_I64, &a), GPUIR_ERR_NPY);
    CHECK(strstr(gpuir_ctx_error(ctx), "'<f4' (f32), i64 is wanted") != NULL);
    gpuir_ctx_clear_error(ctx);
    remove(f8);
    remove(b1);
    gpuir_ctx_destroy(ctx);
}

/* Only regular files: a device never ends, a FIFO blocks, a directory is
   none; the size must be the header's before the data is read. */
TEST(read_refuses_devices_and_fifos) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_array a;
    CHECK_RESULT(ctx, gpuir_npy_read(ctx, "/dev/zero", &a), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(ctx), "/dev/zero: not a regular file") != NULL);
    gpuir_ctx_clear_error(ctx);
    char fifo[128];
    tmp_path(fifo, sizeof fifo, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_RESULT(ctx, gpuir_npy_read(ctx, fifo, &a), GPUIR_ERR_IO);       /* at once, with no writer */
    CHECK(strstr(gpuir_ctx_error(ctx), "not a regular file") != NULL);
    gpuir_ctx_clear_error(ctx);
    remove(fifo);
    CHECK_RESULT(ctx, gpuir_npy_read(ctx, tmpdir, &a), GPUIR_ERR_IO);
    gpuir_ctx_clear_error(ctx);
    char big[128];
    float f4[4] = {0};
    tmp_path(big, sizeof big, "long.npy");                 /* more data than the shape */
    write_image(big, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", f4, sizeof f4);
    CHECK_RESULT(ctx, gpuir_npy_read(ctx, big, &a), GPUIR_ERR_NPY);
    CHECK(strstr(gpuir_ctx_error(ctx), "needs 8 data bytes, the file has 16") != NULL);
    gpuir_ctx_clear_error(ctx);
    remove(big);
    gpuir_ctx_destroy(ctx);
}

/* npy_write replaces only a regular file, and only whole: a FIFO (which
   it opened and blocked on for ever, waiting for a reader) and a symbolic
   link are refused and left as they were; a write that fails part way
   (the file size limit here) leaves the old file whole and no temporary
   file behind (main's rmdir finds the directory empty). */
TEST(write_replaces_regular_files_whole) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    int64_t d2[1] = {2};
    gpuir_array a, b;
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, GPUIR_F32, 1, d2), GPUIR_OK);
    gpuir_array_set(&a, 1, -2.0);
    char fifo[128], link[128], path[128];
    tmp_path(fifo, sizeof fifo, "out.fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_RESULT(ctx, gpuir_npy_write(ctx, fifo, &a), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(ctx), "not a regular file (a FIFO is never replaced)") != NULL);
    gpuir_ctx_clear_error(ctx);
    struct stat st;
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    remove(fifo);
    tmp_path(path, sizeof path, "old.npy");
    mode_t mask = umask(077);                   /* a new file: 0666 less the umask, as fopen gives */
    CHECK_RESULT(ctx, gpuir_npy_write(ctx, path, &a), GPUIR_OK);
    umask(mask);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
    tmp_path(link, sizeof link, "link.npy");
    CHECK(symlink(path, link) == 0);
    CHECK_RESULT(ctx, gpuir_npy_write(ctx, link, &a), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(ctx), "a symbolic link is never replaced") != NULL);
    gpuir_ctx_clear_error(ctx);
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    remove(link);
    enum { N = 4096 };
    int64_t dn[1] = {N};
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &b, GPUIR_F32, 1, dn), GPUIR_OK);
    struct rlimit old, lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = 4096;                        /* under the 16 KB of data: the write fails part way */
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    CHECK_RESULT(ctx, gpuir_npy_write(ctx, path, &b), GPUIR_ERR_IO);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, was);
    CHECK(strstr(gpuir_ctx_error(ctx), "npy_write: cannot write") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_array back;
    CHECK_RESULT(ctx, gpuir_npy_read(ctx, path, &back), GPUIR_OK);      /* the old file, whole */
    CHECK(back.rank == 1 && back.dims[0] == 2 && gpuir_array_get(&back, 1) == -2.0);
    gpuir_array_release(&back);
    gpuir_array_release(&a);
    gpuir_array_release(&b);
    remove(path);
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    if (!make_tmpdir()) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    RUN(write_read_roundtrip);
    RUN(write_read_zero_size);
    RUN(written_file_layout);
    RUN(write_refuses_bf16);
    RUN(read_missing_file_is_io_error);
    RUN(load_versions_and_shapes);
    RUN(load_rejects_bad_framing);
    RUN(load_rejects_bad_headers);
    RUN(load_rejects_limits);
    RUN(load_after_error_does_nothing);
    RUN(load_is_strict);
    RUN(read_as_converts_f8_and_b1);
    RUN(read_refuses_devices_and_fifos);
    RUN(write_replaces_regular_files_whole);
    if (rmdir(tmpdir) != 0) {
        fprintf(stderr, "temp dir %s not empty\n", tmpdir);
        return 1;
    }
    return CHECK_EXIT();
}

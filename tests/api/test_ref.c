/* The reference interpreter (gpuir_ref_run) against hand-computed results, for
   what is awkward to write as a text test: parameters, dynamic dims, aliasing
   of results, globals, input checking, exact integer extremes, f16/bf16 bit
   patterns, zero-size and rank-0 tensors. The op-by-op, dtype-by-dtype value
   tables live in the .gir files of tests/ir/ref. */
#include "../../gpuir.h"
#include "../check.h"

#include <stdint.h>
#include <stdlib.h>

/* ---- helpers ------------------------------------------------------------ */

static gpuir_array make_array(gpuir_dtype dt, int rank, const int64_t *dims, void *data) {
    gpuir_array a;
    memset(&a, 0, sizeof a);
    a.dtype = dt;
    a.rank = rank;
    for (int i = 0; i < rank; i++) a.dims[i] = dims[i];
    a.data = data;
    return a;
}

static float f32_at(const gpuir_array *a, size_t i) { return ((const float *)a->data)[i]; }
static int32_t i32_at(const gpuir_array *a, size_t i) { return ((const int32_t *)a->data)[i]; }
static int64_t i64_at(const gpuir_array *a, size_t i) { return ((const int64_t *)a->data)[i]; }
static uint16_t u16_at(const gpuir_array *a, size_t i) { return ((const uint16_t *)a->data)[i]; }

/* Bitwise equality of floats (so -0 != 0), any NaN equals any NaN. */
static int same_f32(float got, float want) {
    if (isnan(want)) return isnan(got);
    return memcmp(&got, &want, sizeof got) == 0;
}

static int dims_are(const gpuir_array *a, gpuir_dtype dt, int rank, int64_t d0, int64_t d1,
                    int64_t d2) {
    int64_t d[3] = {d0, d1, d2};
    if (a->dtype != dt || a->rank != rank) return 0;
    for (int i = 0; i < rank && i < 3; i++)
        if (a->dims[i] != d[i]) return 0;
    return 1;
}

#define CHECK_F32S(arr, ...)                                                          \
    do {                                                                              \
        const float want__[] = {__VA_ARGS__};                                         \
        size_t n__ = sizeof want__ / sizeof want__[0];                                \
        CHECK(gpuir_array_count(arr) == n__);                                         \
        for (size_t i__ = 0; i__ < n__ && i__ < gpuir_array_count(arr); i__++)        \
            if (!same_f32(f32_at(arr, i__), want__[i__])) {                           \
                fprintf(stderr, "%s:%d: element %zu: got %.9g, want %.9g\n", __FILE__, \
                        __LINE__, i__, f32_at(arr, i__), want__[i__]);                \
                check__failed = 1;                                                    \
            }                                                                         \
    } while (0)

#define CHECK_INTS(arr, at, ...)                                                      \
    do {                                                                              \
        const int64_t want__[] = {__VA_ARGS__};                                       \
        size_t n__ = sizeof want__ / sizeof want__[0];                                \
        CHECK(gpuir_array_count(arr) == n__);                                         \
        for (size_t i__ = 0; i__ < n__ && i__ < gpuir_array_count(arr); i__++)        \
            if ((int64_t)at(arr, i__) != want__[i__]) {                               \
                fprintf(stderr, "%s:%d: element %zu: got %lld, want %lld\n", __FILE__, \
                        __LINE__, i__, (long long)at(arr, i__), (long long)want__[i__]); \
                check__failed = 1;                                                    \
            }                                                                         \
    } while (0)

#define CHECK_U16S(arr, ...)                                                          \
    do {                                                                              \
        const uint16_t want__[] = {__VA_ARGS__};                                      \
        size_t n__ = sizeof want__ / sizeof want__[0];                                \
        CHECK(gpuir_array_count(arr) == n__);                                         \
        for (size_t i__ = 0; i__ < n__ && i__ < gpuir_array_count(arr); i__++)        \
            if (u16_at(arr, i__) != want__[i__]) {                                    \
                fprintf(stderr, "%s:%d: element %zu: got bits 0x%04x, want 0x%04x\n",  \
                        __FILE__, __LINE__, i__, u16_at(arr, i__), want__[i__]);      \
                check__failed = 1;                                                    \
            }                                                                         \
    } while (0)

static void release_all(gpuir_array *a, size_t n) {
    for (size_t i = 0; i < n; i++) gpuir_array_release(&a[i]);
}

/* ---- parameters ---------------------------------------------------------- */

TEST(params_broadcast_add) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {\n"
        "  %0 = add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
        "  return %0 : tensor<2x3xf32>\n"
        "}\n");
    CHECK(m != NULL);
    float av[] = {1, 2, 3, 4, 5, 6}, bv[] = {0.5f, -10, 100};
    int64_t ad[] = {2, 3}, bd[] = {3};
    gpuir_array in[2] = {make_array(GPUIR_F32, 2, ad, av), make_array(GPUIR_F32, 1, bd, bv)};
    gpuir_array out;
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 1, &out), GPUIR_OK);
    CHECK(dims_are(&out, GPUIR_F32, 2, 2, 3, 0));
    CHECK_F32S(&out, 1.5f, -8, 103, 4.5f, -5, 106);
    /* inputs are borrowed, never written */
    CHECK(av[0] == 1 && av[5] == 6 && bv[0] == 0.5f && bv[2] == 100);
    gpuir_array_release(&out);
    /* a second run gives the same again */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 1, &out), GPUIR_OK);
    CHECK_F32S(&out, 1.5f, -8, 103, 4.5f, -5, 106);
    gpuir_array_release(&out);
    gpuir_ctx_destroy(ctx);
}

/* The builder path, not only the parser: y = relu(x . W + b) of examples/mlp.c. */
TEST(builder_mlp) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    int64_t xs[] = {2, 3}, ws[] = {3, 4}, bs[] = {4};
    gpuir_func_begin(m, "mlp");
    gpuir_value x = gpuir_param(m, "x", gpuir_tensor_type(GPUIR_F32, 2, xs));
    gpuir_value b = gpuir_param(m, "b", gpuir_tensor_type(GPUIR_F32, 1, bs));
    gpuir_value w = gpuir_global(m, "W", gpuir_tensor_type(GPUIR_F32, 2, ws));
    gpuir_value y = gpuir_relu(m, gpuir_add(m, gpuir_matmul(m, x, w, 0), b));
    CHECK_RESULT(ctx, gpuir_func_return(m, 1, &y), GPUIR_OK);
    float xv[] = {1, 2, 3, -1, 0, 1};
    float wv[] = {1, 0, -1, 2, 0, 1, 0, -1, 1, 1, 1, 0};
    float bv[] = {0.5f, -10, 0, 1};
    gpuir_array in[2] = {make_array(GPUIR_F32, 2, xs, xv), make_array(GPUIR_F32, 1, bs, bv)};
    gpuir_array W = make_array(GPUIR_F32, 2, ws, wv), out;
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &W), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "mlp", 2, in, 1, &out), GPUIR_OK);
    /* x.W = [[4,5,2,0],[0,1,2,-2]]; + b = [[4.5,-5,2,1],[0.5,-9,2,-1]]; relu */
    CHECK(dims_are(&out, GPUIR_F32, 2, 2, 4, 0));
    CHECK_F32S(&out, 4.5f, 0, 2, 1, 0.5f, 0, 2, 0);
    gpuir_array_release(&out);
    gpuir_ctx_destroy(ctx);
}

/* ---- dynamic dims ---------------------------------------------------------- */

static const char *dyn_text =
    "func.func @rows(%x: tensor<?x4xf32>) -> (tensor<?xf32>, tensor<?x4xf32>) {\n"
    "  %0 = reduce_sum %x {axes = [1]} : (tensor<?x4xf32>) -> tensor<?xf32>\n"
    "  %1 = relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>\n"
    "  return %0, %1 : tensor<?xf32>, tensor<?x4xf32>\n"
    "}\n"
    "func.func @flat(%x: tensor<?x4xf32>) -> (tensor<?xf32>, tensor<2x?xf32>) {\n"
    "  %0 = reshape %x : (tensor<?x4xf32>) -> tensor<?xf32>\n"
    "  %1 = reshape %x : (tensor<?x4xf32>) -> tensor<2x?xf32>\n"
    "  return %0, %1 : tensor<?xf32>, tensor<2x?xf32>\n"
    "}\n"
    "func.func @bad5(%x: tensor<?x4xf32>) -> tensor<?x5xf32> {\n"
    "  %0 = reshape %x : (tensor<?x4xf32>) -> tensor<?x5xf32>\n"
    "  return %0 : tensor<?x5xf32>\n"
    "}\n"
    "func.func @to8(%x: tensor<?x4xf32>) -> tensor<8xf32> {\n"
    "  %0 = reshape %x : (tensor<?x4xf32>) -> tensor<8xf32>\n"
    "  return %0 : tensor<8xf32>\n"
    "}\n"
    "func.func @mm(%x: tensor<?x4xf32>, %w: tensor<4x?xf32>) -> tensor<?x?xf32> {\n"
    "  %0 = matmul %x, %w : (tensor<?x4xf32>, tensor<4x?xf32>) -> tensor<?x?xf32>\n"
    "  return %0 : tensor<?x?xf32>\n"
    "}\n"
    "func.func @tr(%x: tensor<?x4xf32>) -> tensor<4x?xf32> {\n"
    "  %0 = transpose %x {perm = [1, 0]} : (tensor<?x4xf32>) -> tensor<4x?xf32>\n"
    "  return %0 : tensor<4x?xf32>\n"
    "}\n"
    "func.func @bc(%x: tensor<?x1xi32>) -> tensor<?x3xi32> {\n"
    "  %0 = broadcast %x : (tensor<?x1xi32>) -> tensor<?x3xi32>\n"
    "  return %0 : tensor<?x3xi32>\n"
    "}\n"
    "func.func @add(%a: tensor<?xi64>, %b: tensor<?xi64>) -> tensor<?xi64> {\n"
    "  %0 = add %a, %b : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>\n"
    "  return %0 : tensor<?xi64>\n"
    "}\n"
    "func.func @sm(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {\n"
    "  %0 = softmax %x {axis = -1} : (tensor<?x?xf32>) -> tensor<?x?xf32>\n"
    "  return %0 : tensor<?x?xf32>\n"
    "}\n";

TEST(dynamic_dims) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, dyn_text);
    CHECK(m != NULL);
    float xv[] = {1, -2, 3, -4, 5, 6, 7, 8, -0.5f, 0.25f, 0, 1};
    int64_t xd[] = {3, 4};
    gpuir_array x = make_array(GPUIR_F32, 2, xd, xv), out[2];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "rows", 1, &x, 2, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_F32, 1, 3, 0, 0));
    CHECK_F32S(&out[0], -2, 26, 0.75f);
    CHECK(dims_are(&out[1], GPUIR_F32, 2, 3, 4, 0));
    CHECK_F32S(&out[1], 1, 0, 3, 0, 5, 6, 7, 8, 0, 0.25f, 0, 1);
    release_all(out, 2);

    /* the same function on another row count */
    int64_t xd1[] = {1, 4};
    gpuir_array x1 = make_array(GPUIR_F32, 2, xd1, xv + 4);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "rows", 1, &x1, 2, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_F32, 1, 1, 0, 0));
    CHECK_F32S(&out[0], 26);
    release_all(out, 2);

    /* reshape with a ? result: 12 elements -> [12] and [2, 6] */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "flat", 1, &x, 2, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_F32, 1, 12, 0, 0));
    CHECK(dims_are(&out[1], GPUIR_F32, 2, 2, 6, 0));
    CHECK_F32S(&out[0], 1, -2, 3, -4, 5, 6, 7, 8, -0.5f, 0.25f, 0, 1);
    CHECK_F32S(&out[1], 1, -2, 3, -4, 5, 6, 7, 8, -0.5f, 0.25f, 0, 1);
    release_all(out, 2);

    /* 12 elements do not fit ?x5, nor 8 */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "bad5", 1, &x, 1, out), GPUIR_ERR_SHAPE);
    CHECK(out[0].data == NULL);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "to8", 1, &x, 1, out), GPUIR_ERR_SHAPE);
    gpuir_ctx_clear_error(ctx);
    /* ... but 2x4 fits 8 */
    int64_t xd2[] = {2, 4};
    gpuir_array x2 = make_array(GPUIR_F32, 2, xd2, xv);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "to8", 1, &x2, 1, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_F32, 1, 8, 0, 0));
    CHECK_F32S(&out[0], 1, -2, 3, -4, 5, 6, 7, 8);
    gpuir_array_release(&out[0]);

    /* matmul [3,4] x [4,2] with both ? */
    float wv[] = {1, 0, 0, 1, 1, 0, 0, 1};
    int64_t wd[] = {4, 2};
    gpuir_array mmin[2] = {x, make_array(GPUIR_F32, 2, wd, wv)};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "mm", 2, mmin, 1, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_F32, 2, 3, 2, 0));
    CHECK_F32S(&out[0], 4, -6, 12, 14, -0.5f, 1.25f);
    gpuir_array_release(&out[0]);

    /* transpose [3,4] -> [4,3] */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "tr", 1, &x, 1, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_F32, 2, 4, 3, 0));
    CHECK_F32S(&out[0], 1, 5, -0.5f, -2, 6, 0.25f, 3, 7, 0, -4, 8, 1);
    gpuir_array_release(&out[0]);

    /* broadcast [2,1] -> [?,3] = [2,3] */
    int32_t bv[] = {-7, 9};
    int64_t bd[] = {2, 1};
    gpuir_array b = make_array(GPUIR_I32, 2, bd, bv);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "bc", 1, &b, 1, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_I32, 2, 2, 3, 0));
    CHECK_INTS(&out[0], i32_at, -7, -7, -7, 9, 9, 9);
    gpuir_array_release(&out[0]);

    /* ? + ?: [3] + [3] adds; [3] + [1] is refused, as the compiled backends
       refuse it (a dynamic dim is not broadcast: it pairs with its own size
       only), and so is [3] + [2] */
    int64_t av[] = {1, 2, 3}, a3[] = {100, 200, 300}, a1[] = {100}, d3[] = {3}, d1[] = {1}, d2[] = {2};
    gpuir_array ab[2] = {make_array(GPUIR_I64, 1, d3, av), make_array(GPUIR_I64, 1, d3, a3)};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "add", 2, ab, 1, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_I64, 1, 3, 0, 0));
    CHECK_INTS(&out[0], i64_at, 101, 202, 303);
    gpuir_array_release(&out[0]);
    ab[1] = make_array(GPUIR_I64, 1, d1, a1);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "add", 2, ab, 1, out), GPUIR_ERR_SHAPE);
    CHECK(strstr(gpuir_ctx_error(ctx), "dim 0 of operand #1 %b is 1 in this run, dim 0 of the result 3 "
                                       "(a dynamic dim is not broadcast)") != NULL);
    CHECK(out[0].data == NULL);
    gpuir_ctx_clear_error(ctx);
    ab[1] = make_array(GPUIR_I64, 1, d2, av);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "add", 2, ab, 1, out), GPUIR_ERR_SHAPE);
    CHECK(out[0].data == NULL);
    gpuir_ctx_clear_error(ctx);

    /* softmax over the last axis of a ?x? = [2,2] */
    float sv[] = {0, 0, 1000, -INFINITY};
    int64_t sd[] = {2, 2};
    gpuir_array s = make_array(GPUIR_F32, 2, sd, sv);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "sm", 1, &s, 1, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_F32, 2, 2, 2, 0));
    CHECK_F32S(&out[0], 0.5f, 0.5f, 1, 0);
    gpuir_array_release(&out[0]);
    gpuir_ctx_destroy(ctx);
}

/* ---- what a function returns ------------------------------------------------ */

TEST(return_param_and_same_value_twice) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @id(%x: tensor<3xi32>) -> tensor<3xi32> {\n"
        "  return %x : tensor<3xi32>\n"
        "}\n"
        "func.func @twice(%x: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) {\n"
        "  %0 = neg %x : (tensor<3xi32>) -> tensor<3xi32>\n"
        "  return %0, %x, %0 : tensor<3xi32>, tensor<3xi32>, tensor<3xi32>\n"
        "}\n");
    CHECK(m != NULL);
    int32_t xv[] = {5, -6, 2147483647};
    int64_t xd[] = {3};
    gpuir_array x = make_array(GPUIR_I32, 1, xd, xv), out[3];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "id", 1, &x, 1, out), GPUIR_OK);
    CHECK(out[0].data != NULL && out[0].data != (void *)xv);   /* a copy, the caller's */
    CHECK(dims_are(&out[0], GPUIR_I32, 1, 3, 0, 0));
    CHECK_INTS(&out[0], i32_at, 5, -6, 2147483647);
    xv[0] = 99;                                                 /* the copy is independent */
    CHECK(i32_at(&out[0], 0) == 5);
    xv[0] = 5;
    gpuir_array_release(&out[0]);

    CHECK_RESULT(ctx, gpuir_ref_run(m, "twice", 1, &x, 3, out), GPUIR_OK);
    CHECK(out[0].data != out[2].data);                          /* two buffers: both released */
    CHECK(out[1].data != (void *)xv);
    CHECK_INTS(&out[0], i32_at, -5, 6, -2147483647);
    CHECK_INTS(&out[1], i32_at, 5, -6, 2147483647);
    CHECK_INTS(&out[2], i32_at, -5, 6, -2147483647);
    ((int32_t *)out[0].data)[0] = 1;
    CHECK(i32_at(&out[2], 0) == -5);
    release_all(out, 3);
    gpuir_ctx_destroy(ctx);
}

TEST(multiple_results_of_each_dtype) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @f(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf16>, tensor<2xbf16>, "
        "tensor<2xi32>, tensor<2xi64>) {\n"
        "  %0 = cast %x : (tensor<2xf32>) -> tensor<2xf16>\n"
        "  %1 = cast %x : (tensor<2xf32>) -> tensor<2xbf16>\n"
        "  %2 = cast %x : (tensor<2xf32>) -> tensor<2xi32>\n"
        "  %3 = cast %x : (tensor<2xf32>) -> tensor<2xi64>\n"
        "  %4 = mul %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
        "  return %4, %0, %1, %2, %3 : tensor<2xf32>, tensor<2xf16>, tensor<2xbf16>, "
        "tensor<2xi32>, tensor<2xi64>\n"
        "}\n");
    CHECK(m != NULL);
    float xv[] = {-2.5f, 0.1f};
    int64_t xd[] = {2};
    gpuir_array x = make_array(GPUIR_F32, 1, xd, xv), out[5];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, &x, 5, out), GPUIR_OK);
    /* f32(0.1)^2: the double product rounded once to f32 (0.0100000007) */
    CHECK_F32S(&out[0], 6.25f, (float)((double)xv[1] * (double)xv[1]));
    CHECK(out[1].dtype == GPUIR_F16 && out[2].dtype == GPUIR_BF16);
    CHECK_U16S(&out[1], 0xC100, 0x2E66);   /* -2.5, 0.0999755859 */
    CHECK_U16S(&out[2], 0xC020, 0x3DCD);   /* -2.5, 0.100097656 */
    CHECK(out[3].dtype == GPUIR_I32 && out[4].dtype == GPUIR_I64);
    CHECK_INTS(&out[3], i32_at, -2, 0);
    CHECK_INTS(&out[4], i64_at, -2, 0);
    release_all(out, 5);
    gpuir_ctx_destroy(ctx);
}

/* ---- globals --------------------------------------------------------------- */

TEST(globals_bind_rebind_unbound) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "global @W : tensor<2x2xi64>\n"
        "func.func @f(%x: tensor<2xi64>) -> (tensor<2x2xi64>, tensor<2x2xi64>) {\n"
        "  %0 = get_global {name = @W} : () -> tensor<2x2xi64>\n"
        "  %1 = mul %0, %x : (tensor<2x2xi64>, tensor<2xi64>) -> tensor<2x2xi64>\n"
        "  return %1, %0 : tensor<2x2xi64>, tensor<2x2xi64>\n"
        "}\n");
    CHECK(m != NULL);
    int64_t xv[] = {10, -1}, xd[] = {2}, wd[] = {2, 2};
    gpuir_array x = make_array(GPUIR_I64, 1, xd, xv), out[2];
    CHECK(!gpuir_module_global_bound(m, 0));

    /* unbound: NOT_FOUND, outputs left empty */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, &x, 2, out), GPUIR_ERR_NOT_FOUND);
    CHECK(out[0].data == NULL && out[1].data == NULL);
    gpuir_ctx_clear_error(ctx);

    int64_t w1[] = {1, 2, 3, 4};
    gpuir_array W = make_array(GPUIR_I64, 2, wd, w1);
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &W), GPUIR_OK);
    CHECK(gpuir_module_global_bound(m, 0));
    w1[0] = 1000;                              /* bind copies the data */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, &x, 2, out), GPUIR_OK);
    CHECK_INTS(&out[0], i64_at, 10, -2, 30, -4);
    CHECK_INTS(&out[1], i64_at, 1, 2, 3, 4);   /* the global returned: a copy */
    release_all(out, 2);

    /* rebinding replaces the data */
    int64_t w2[] = {-5, 0, 7, INT64_MAX};
    W.data = w2;
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &W), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, &x, 2, out), GPUIR_OK);
    CHECK_INTS(&out[0], i64_at, -50, 0, 70, -INT64_MAX);
    CHECK_INTS(&out[1], i64_at, -5, 0, 7, INT64_MAX);
    /* the returned copy is the caller's: writing it leaves the global alone */
    ((int64_t *)out[1].data)[0] = 42;
    release_all(out, 2);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, &x, 2, out), GPUIR_OK);
    CHECK_INTS(&out[1], i64_at, -5, 0, 7, INT64_MAX);
    release_all(out, 2);

    /* bad binds */
    int32_t w3[] = {1, 2, 3, 4};
    gpuir_array Wd = make_array(GPUIR_I32, 2, wd, w3);
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &Wd), GPUIR_ERR_DTYPE);
    gpuir_ctx_clear_error(ctx);
    int64_t wd4[] = {4};
    gpuir_array Ws = make_array(GPUIR_I64, 1, wd4, w2);
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &Ws), GPUIR_ERR_SHAPE);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "V", &W), GPUIR_ERR_NOT_FOUND);
    gpuir_ctx_clear_error(ctx);
    /* a failed bind keeps the old data */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, &x, 2, out), GPUIR_OK);
    CHECK_INTS(&out[1], i64_at, -5, 0, 7, INT64_MAX);
    release_all(out, 2);
    gpuir_ctx_destroy(ctx);
}

/* ---- input checking ------------------------------------------------------- */

TEST(bad_inputs) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @f(%a: tensor<2x3xf32>, %b: tensor<?xi32>) -> tensor<2x3xf32> {\n"
        "  %0 = neg %a : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
        "  return %0 : tensor<2x3xf32>\n"
        "}\n");
    CHECK(m != NULL);
    float av[6] = {0};
    int64_t bv[4] = {0};   /* big enough for 4 i64 or 4 i32 */
    int64_t d23[] = {2, 3}, d32[] = {3, 2}, d6[] = {6}, d4[] = {4}, d22[] = {2, 2};
    gpuir_array in[3] = {make_array(GPUIR_F32, 2, d23, av), make_array(GPUIR_I32, 1, d4, bv),
                         make_array(GPUIR_F32, 2, d23, av)};
    gpuir_array out[2];
    out[0].data = (void *)av;     /* outputs are cleared even when the run fails */

    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 1, out), GPUIR_OK);
    CHECK_F32S(&out[0], -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f);
    gpuir_array_release(&out[0]);

    gpuir_array bad = in[0];
    bad.dtype = GPUIR_F16;                                 /* wrong dtype */
    gpuir_array try1[2] = {bad, in[1]};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, try1, 1, out), GPUIR_ERR_DTYPE);
    CHECK(out[0].data == NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_array try2[2] = {in[0], make_array(GPUIR_I64, 1, d4, bv)};   /* i64 for ?xi32 */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, try2, 1, out), GPUIR_ERR_DTYPE);
    gpuir_ctx_clear_error(ctx);

    gpuir_array try3[2] = {make_array(GPUIR_F32, 2, d32, av), in[1]};  /* 3x2 for 2x3 */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, try3, 1, out), GPUIR_ERR_SHAPE);
    gpuir_ctx_clear_error(ctx);
    gpuir_array try4[2] = {make_array(GPUIR_F32, 1, d6, av), in[1]};   /* rank 1 for rank 2 */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, try4, 1, out), GPUIR_ERR_SHAPE);
    gpuir_ctx_clear_error(ctx);
    gpuir_array try5[2] = {in[0], make_array(GPUIR_I32, 2, d22, bv)};  /* rank 2 for ? */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, try5, 1, out), GPUIR_ERR_SHAPE);
    gpuir_ctx_clear_error(ctx);

    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, in, 1, out), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 3, in, 1, out), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 2, out), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(out[0].data == NULL && out[1].data == NULL);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 0, NULL), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);

    gpuir_array nodata[2] = {make_array(GPUIR_F32, 2, d23, NULL), in[1]};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, nodata, 1, out), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "g", 2, in, 1, out), GPUIR_ERR_NOT_FOUND);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_ref_run(m, NULL, 2, in, 1, out), GPUIR_OK);    /* the only host function, @f */
    gpuir_array_release(&out[0]);

    /* a sticky error stops the next run until cleared */
    CHECK_RESULT(ctx, gpuir_ref_run(m, "g", 2, in, 1, out), GPUIR_ERR_NOT_FOUND);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 1, out), GPUIR_ERR_NOT_FOUND);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 1, out), GPUIR_OK);
    gpuir_array_release(&out[0]);
    gpuir_ctx_destroy(ctx);
}

/* ---- integer semantics, exact ------------------------------------------------ */

static const char *int_text =
    "func.func @i32(%a: tensor<8xi32>, %b: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>, "
    "tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>) {\n"
    "  %0 = add %a, %b : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>\n"
    "  %1 = sub %a, %b : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>\n"
    "  %2 = mul %a, %b : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>\n"
    "  %3 = div %a, %b : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>\n"
    "  %4 = neg %a : (tensor<8xi32>) -> tensor<8xi32>\n"
    "  %5 = abs %a : (tensor<8xi32>) -> tensor<8xi32>\n"
    "  return %0, %1, %2, %3, %4, %5 : tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, "
    "tensor<8xi32>, tensor<8xi32>, tensor<8xi32>\n"
    "}\n"
    "func.func @i64(%a: tensor<8xi64>, %b: tensor<8xi64>) -> (tensor<8xi64>, tensor<8xi64>, "
    "tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>) {\n"
    "  %0 = add %a, %b : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>\n"
    "  %1 = sub %a, %b : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>\n"
    "  %2 = mul %a, %b : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>\n"
    "  %3 = div %a, %b : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>\n"
    "  %4 = neg %a : (tensor<8xi64>) -> tensor<8xi64>\n"
    "  %5 = abs %a : (tensor<8xi64>) -> tensor<8xi64>\n"
    "  return %0, %1, %2, %3, %4, %5 : tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, "
    "tensor<8xi64>, tensor<8xi64>, tensor<8xi64>\n"
    "}\n";

TEST(int_wraparound_and_division) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, int_text);
    CHECK(m != NULL);
    int64_t d8[] = {8};
    gpuir_array out[6];
    int32_t a32[] = {INT32_MAX, INT32_MIN, INT32_MIN, 65537, -7, 7, 5, 0};
    int32_t b32[] = {1, 1, -1, 65537, 2, -2, 0, 0};
    gpuir_array in32[2] = {make_array(GPUIR_I32, 1, d8, a32), make_array(GPUIR_I32, 1, d8, b32)};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "i32", 2, in32, 6, out), GPUIR_OK);
    CHECK_INTS(&out[0], i32_at, INT32_MIN, INT32_MIN + 1, INT32_MAX, 131074, -5, 5, 5, 0);
    CHECK_INTS(&out[1], i32_at, INT32_MAX - 1, INT32_MAX, INT32_MIN + 1, 0, -9, 9, 5, 0);
    /* 65537^2 = 2^32 + 2^17 + 1 wraps to 131073; INT_MIN * -1 wraps to INT_MIN */
    CHECK_INTS(&out[2], i32_at, INT32_MAX, INT32_MIN, INT32_MIN, 131073, -14, -14, 0, 0);
    /* truncation toward zero; INT_MIN / -1 = INT_MIN; x / 0 = 0 */
    CHECK_INTS(&out[3], i32_at, INT32_MAX, INT32_MIN, INT32_MIN, 1, -3, -3, 0, 0);
    CHECK_INTS(&out[4], i32_at, -INT32_MAX, INT32_MIN, INT32_MIN, -65537, 7, -7, -5, 0);
    CHECK_INTS(&out[5], i32_at, INT32_MAX, INT32_MIN, INT32_MIN, 65537, 7, 7, 5, 0);
    release_all(out, 6);

    const int64_t big = 4294967297;   /* 2^32 + 1 */
    int64_t a64[] = {INT64_MAX, INT64_MIN, INT64_MIN, big, -7, 9007199254740993, 5, 0};
    int64_t b64[] = {1, 1, -1, big, 2, 1, 0, 0};
    gpuir_array in64[2] = {make_array(GPUIR_I64, 1, d8, a64), make_array(GPUIR_I64, 1, d8, b64)};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "i64", 2, in64, 6, out), GPUIR_OK);
    /* 2^53 + 1 + 1 must be exact: 64-bit arithmetic, no trip through double */
    CHECK_INTS(&out[0], i64_at, INT64_MIN, INT64_MIN + 1, INT64_MAX, 2 * big, -5,
               9007199254740994, 5, 0);
    CHECK_INTS(&out[1], i64_at, INT64_MAX - 1, INT64_MAX, INT64_MIN + 1, 0, -9,
               9007199254740992, 5, 0);
    /* (2^32+1)^2 = 2^64 + 2^33 + 1 wraps to 2^33 + 1 */
    CHECK_INTS(&out[2], i64_at, INT64_MAX, INT64_MIN, INT64_MIN, 8589934593, -14,
               9007199254740993, 0, 0);
    CHECK_INTS(&out[3], i64_at, INT64_MAX, INT64_MIN, INT64_MIN, 1, -3, 9007199254740993, 0, 0);
    CHECK_INTS(&out[4], i64_at, -INT64_MAX, INT64_MIN, INT64_MIN, -big, 7, -9007199254740993, -5, 0);
    CHECK_INTS(&out[5], i64_at, INT64_MAX, INT64_MIN, INT64_MIN, big, 7, 9007199254740993, 5, 0);
    release_all(out, 6);
    gpuir_ctx_destroy(ctx);
}

TEST(int_matmul_reduce_exact) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @f(%a: tensor<2x2xi64>, %b: tensor<2x1xi64>) -> (tensor<2x1xi64>, tensor<2xi64>, "
        "tensor<2xi64>, tensor<2xi64>) {\n"
        "  %0 = matmul %a, %b : (tensor<2x2xi64>, tensor<2x1xi64>) -> tensor<2x1xi64>\n"
        "  %1 = reduce_sum %a {axes = [1]} : (tensor<2x2xi64>) -> tensor<2xi64>\n"
        "  %2 = reduce_mean %a {axes = [1]} : (tensor<2x2xi64>) -> tensor<2xi64>\n"
        "  %3 = reduce_max %a {axes = [1]} : (tensor<2x2xi64>) -> tensor<2xi64>\n"
        "  return %0, %1, %2, %3 : tensor<2x1xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>\n"
        "}\n"
        "func.func @g(%a: tensor<2x3xi32>) -> (tensor<2xi32>, tensor<2xi32>) {\n"
        "  %0 = reduce_sum %a {axes = [1]} : (tensor<2x3xi32>) -> tensor<2xi32>\n"
        "  %1 = reduce_mean %a {axes = [1]} : (tensor<2x3xi32>) -> tensor<2xi32>\n"
        "  return %0, %1 : tensor<2xi32>, tensor<2xi32>\n"
        "}\n");
    CHECK(m != NULL);
    const int64_t p40 = (int64_t)1 << 40, p62 = (int64_t)1 << 62;
    int64_t av[] = {p40 + 1, 3, p62, p62 - 3};
    int64_t bv[] = {((int64_t)1 << 20) + 3, 1};
    int64_t ad[] = {2, 2}, bd[] = {2, 1};
    gpuir_array in[2] = {make_array(GPUIR_I64, 2, ad, av), make_array(GPUIR_I64, 2, bd, bv)};
    gpuir_array out[4];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 4, out), GPUIR_OK);
    /* (2^40+1)(2^20+3) + 3 = 2^60 + 3*2^40 + 2^20 + 6, exact in 64 bits;
       2^62 (2^20+3) + 2^62 - 3 wraps: 2^82 = 0 mod 2^64, so 4*2^62 - 3 = -3 */
    CHECK_INTS(&out[0], i64_at, ((int64_t)1 << 60) + 3 * p40 + ((int64_t)1 << 20) + 6, -3);
    /* 2^40 + 4; 2^63 - 3 fits */
    CHECK_INTS(&out[1], i64_at, p40 + 4, INT64_MAX - 2);
    /* (2^40 + 4) / 2 = 2^39 + 2; (2^63 - 3) / 2 = 2^62 - 2 (truncated) */
    CHECK_INTS(&out[2], i64_at, ((int64_t)1 << 39) + 2, p62 - 2);
    CHECK_INTS(&out[3], i64_at, p40 + 1, p62);
    release_all(out, 4);

    int32_t gv[] = {INT32_MAX, INT32_MAX, 1, -7, -7, -6};
    int64_t gd[] = {2, 3};
    gpuir_array g = make_array(GPUIR_I32, 2, gd, gv);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "g", 1, &g, 2, out), GPUIR_OK);
    /* 2^32 - 1 wraps to -1 in i32; the mean uses the 64-bit sum: (2^32-1)/3 */
    CHECK_INTS(&out[0], i32_at, -1, -20);
    CHECK_INTS(&out[1], i32_at, 1431655765, -6);
    release_all(out, 2);
    gpuir_ctx_destroy(ctx);
}

TEST(float_to_int_casts_exact) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @f(%x: tensor<8xf32>) -> (tensor<8xi32>, tensor<8xi64>) {\n"
        "  %0 = cast %x : (tensor<8xf32>) -> tensor<8xi32>\n"
        "  %1 = cast %x : (tensor<8xf32>) -> tensor<8xi64>\n"
        "  return %0, %1 : tensor<8xi32>, tensor<8xi64>\n"
        "}\n"
        "func.func @g(%x: tensor<4xi64>) -> (tensor<4xi32>, tensor<4xi64>) {\n"
        "  %0 = cast %x : (tensor<4xi64>) -> tensor<4xi32>\n"
        "  %1 = cast %0 : (tensor<4xi32>) -> tensor<4xi64>\n"
        "  return %0, %1 : tensor<4xi32>, tensor<4xi64>\n"
        "}\n");
    CHECK(m != NULL);
    float xv[] = {-2.9f, 2.9f, 3e9f, -3e9f, 1e19f, -1e19f, NAN, 2147483520.0f};
    int64_t xd[] = {8};
    gpuir_array x = make_array(GPUIR_F32, 1, xd, xv), out[2];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, &x, 2, out), GPUIR_OK);
    CHECK_INTS(&out[0], i32_at, -2, 2, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0, 2147483520);
    CHECK_INTS(&out[1], i64_at, -2, 2, 3000000000, -3000000000, INT64_MAX, INT64_MIN, 0,
               2147483520);
    release_all(out, 2);
    int64_t gv[] = {((int64_t)1 << 32) + 5, (int64_t)INT32_MAX + 1, -1, INT64_MIN + 7};
    int64_t gd[] = {4};
    gpuir_array g = make_array(GPUIR_I64, 1, gd, gv);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "g", 1, &g, 2, out), GPUIR_OK);
    CHECK_INTS(&out[0], i32_at, 5, INT32_MIN, -1, 7);          /* wraps to the low 32 bits */
    CHECK_INTS(&out[1], i64_at, 5, INT32_MIN, -1, 7);          /* sign extension */
    release_all(out, 2);
    gpuir_ctx_destroy(ctx);
}

/* i64 -> f32 must round once (nearest even), like (float)int64_t in C. */
TEST(int64_to_float_rounds_once) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @f(%x: tensor<3xi64>) -> (tensor<3xf32>, tensor<3xbf16>) {\n"
        "  %0 = cast %x : (tensor<3xi64>) -> tensor<3xf32>\n"
        "  %1 = cast %x : (tensor<3xi64>) -> tensor<3xbf16>\n"
        "  return %0, %1 : tensor<3xf32>, tensor<3xbf16>\n"
        "}\n");
    CHECK(m != NULL);
    /* 2^60 + 2^36 + 1: just above the f32 midpoint of 2^60 and 2^60 + 2^37.
       2^60 + 2^52 + 1: just above the bf16 midpoint of 2^60 and 2^60 + 2^53.
       2^53 + 1: a tie in double, but exact rounding to f32 gives 2^53 too. */
    const int64_t p60 = (int64_t)1 << 60;
    int64_t xv[] = {p60 + ((int64_t)1 << 36) + 1, p60 + ((int64_t)1 << 52) + 1, 9007199254740993};
    int64_t xd[] = {3};
    gpuir_array x = make_array(GPUIR_I64, 1, xd, xv), out[2];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, &x, 2, out), GPUIR_OK);
    /* what C's (float)int64_t gives (written out: valgrind's emulation of that
       conversion rounds twice) */
    float want0 = 0x1.000002p60f, want1 = 0x1.01p60f, want2 = 0x1p53f;
    CHECK_F32S(&out[0], want0, want1, want2);
    CHECK_U16S(&out[1], 0x5D80, 0x5D81, 0x5A00);   /* 2^60, 2^60+2^53, 2^53 */
    release_all(out, 2);
    gpuir_ctx_destroy(ctx);
}

/* ---- floats: NaN, infinities, f16/bf16 rounding --------------------------------- */

TEST(float_nan_and_division) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @f(%a: tensor<6xf32>, %b: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, "
        "tensor<6xf32>, tensor<6xf32>, tensor<f32>, tensor<2xf32>) {\n"
        "  %0 = max %a, %b : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>\n"
        "  %1 = min %a, %b : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>\n"
        "  %2 = div %a, %b : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>\n"
        "  %3 = relu %a : (tensor<6xf32>) -> tensor<6xf32>\n"
        "  %4 = reduce_max %a {axes = [0]} : (tensor<6xf32>) -> tensor<f32>\n"
        "  %5 = reshape %b : (tensor<6xf32>) -> tensor<3x2xf32>\n"
        "  %6 = reduce_max %5 {axes = [0]} : (tensor<3x2xf32>) -> tensor<2xf32>\n"
        "  return %0, %1, %2, %3, %4, %6 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, "
        "tensor<6xf32>, tensor<f32>, tensor<2xf32>\n"
        "}\n");
    CHECK(m != NULL);
    float av[] = {NAN, 1, -1, 0, 3, -INFINITY};
    float bv[] = {1, NAN, 0, 0, -2, -INFINITY};
    int64_t d6[] = {6};
    gpuir_array in[2] = {make_array(GPUIR_F32, 1, d6, av), make_array(GPUIR_F32, 1, d6, bv)};
    gpuir_array out[6];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 6, out), GPUIR_OK);
    CHECK_F32S(&out[0], NAN, NAN, 0, 0, 3, -INFINITY);
    CHECK_F32S(&out[1], NAN, NAN, -1, 0, -2, -INFINITY);
    CHECK_F32S(&out[2], NAN, NAN, -INFINITY, NAN, -1.5f, NAN);
    CHECK_F32S(&out[3], NAN, 1, 0, 0, 3, 0);
    CHECK(out[4].rank == 0);
    CHECK_F32S(&out[4], NAN);
    /* b as 3x2 = [[1, nan], [0, 0], [-2, -inf]]: column maxima 1 and nan */
    CHECK_F32S(&out[5], 1, NAN);
    release_all(out, 6);
    gpuir_ctx_destroy(ctx);
}

TEST(f16_bf16_rounding) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @h(%a: tensor<6xf16>, %b: tensor<6xf16>) -> (tensor<6xf16>, tensor<6xf16>) {\n"
        "  %0 = add %a, %b : (tensor<6xf16>, tensor<6xf16>) -> tensor<6xf16>\n"
        "  %1 = mul %a, %b : (tensor<6xf16>, tensor<6xf16>) -> tensor<6xf16>\n"
        "  return %0, %1 : tensor<6xf16>, tensor<6xf16>\n"
        "}\n"
        "func.func @b(%a: tensor<4xbf16>, %b: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xbf16>) {\n"
        "  %0 = add %a, %b : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>\n"
        "  %1 = mul %a, %b : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>\n"
        "  return %0, %1 : tensor<4xbf16>, tensor<4xbf16>\n"
        "}\n");
    CHECK(m != NULL);
    /* f16 bits: 2048 0x6800, 1 0x3C00, 3 0x4200, 65504 0x7BFF, 16 0x4C00,
       0.1 -> 0.0999755859 0x2E66, 2^-24 (smallest subnormal) 0x0001, 0.5 0x3800 */
    uint16_t ha[] = {0x6800, 0x6800, 0x7BFF, 0x2E66, 0x0001, 0x0001};
    uint16_t hb[] = {0x3C00, 0x4200, 0x4C00, 0x4200, 0x3800, 0x0001};
    int64_t d6[] = {6}, d4[] = {4};
    gpuir_array hin[2] = {make_array(GPUIR_F16, 1, d6, ha), make_array(GPUIR_F16, 1, d6, hb)};
    gpuir_array out[2];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "h", 2, hin, 2, out), GPUIR_OK);
    /* sums: 2049 -> 2048 (tie, even); 2051 -> 2052 (0x6802); 65520 -> inf (tie);
       0.0999755859+3 = 3.09997559 -> 3.099609375 (0x4233); 2^-24 + 0.5 -> 0.5;
       2^-24 + 2^-24 = 2^-23 (0x0002) */
    CHECK_U16S(&out[0], 0x6800, 0x6802, 0x7C00, 0x4233, 0x3800, 0x0002);
    /* products: 2048; 6144 (0x6E00); 65504*16 -> inf; 3*0.0999755859 =
       0.2999267578125 is a tie -> 0.2998046875 (0x34CC); 2^-25 -> 0 (tie, even);
       2^-48 -> 0 */
    CHECK_U16S(&out[1], 0x6800, 0x6E00, 0x7C00, 0x34CC, 0x0000, 0x0000);
    release_all(out, 2);

    /* bf16 bits: 256 0x4380, 1 0x3F80, 3 0x4040, 0.1 -> 0.100097656 0x3DCD */
    uint16_t ba[] = {0x4380, 0x4380, 0x3DCD, 0x7F7F};
    uint16_t bb[] = {0x3F80, 0x4040, 0x4040, 0x4000};
    gpuir_array bin[2] = {make_array(GPUIR_BF16, 1, d4, ba), make_array(GPUIR_BF16, 1, d4, bb)};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "b", 2, bin, 2, out), GPUIR_OK);
    /* sums: 257 -> 256; 259 -> 260 (0x4382); 3.10009766 -> 3.09375 (0x4046);
       max-finite + 2 -> max-finite */
    CHECK_U16S(&out[0], 0x4380, 0x4382, 0x4046, 0x7F7F);
    /* products: 256; 768 (0x4440); 0.30029296875 -> 0.30078125 (0x3E9A); 2*max -> inf */
    CHECK_U16S(&out[1], 0x4380, 0x4440, 0x3E9A, 0x7F80);
    release_all(out, 2);
    gpuir_ctx_destroy(ctx);
}

/* ---- zero-size and rank-0 tensors ----------------------------------------- */

TEST(zero_size_dims) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @sum(%x: tensor<0x3xf32>) -> (tensor<3xf32>, tensor<0xf32>, tensor<1x3xf32>) {\n"
        "  %0 = reduce_sum %x {axes = [0]} : (tensor<0x3xf32>) -> tensor<3xf32>\n"
        "  %1 = reduce_sum %x {axes = [1]} : (tensor<0x3xf32>) -> tensor<0xf32>\n"
        "  %2 = reduce_sum %x {axes = [0], keepdims = true} : (tensor<0x3xf32>) -> tensor<1x3xf32>\n"
        "  return %0, %1, %2 : tensor<3xf32>, tensor<0xf32>, tensor<1x3xf32>\n"
        "}\n"
        "func.func @ops(%x: tensor<0x3xi32>, %w: tensor<3x2xi32>) -> (tensor<0x3xi32>, "
        "tensor<0x2xi32>, tensor<3x0xi32>, tensor<0x3xi32>) {\n"
        "  %0 = add %x, %x : (tensor<0x3xi32>, tensor<0x3xi32>) -> tensor<0x3xi32>\n"
        "  %1 = matmul %x, %w : (tensor<0x3xi32>, tensor<3x2xi32>) -> tensor<0x2xi32>\n"
        "  %2 = transpose %x {perm = [1, 0]} : (tensor<0x3xi32>) -> tensor<3x0xi32>\n"
        "  return %0, %1, %2, %x : tensor<0x3xi32>, tensor<0x2xi32>, tensor<3x0xi32>, tensor<0x3xi32>\n"
        "}\n"
        "func.func @k0(%a: tensor<2x0xf16>, %b: tensor<0x2xf16>) -> tensor<2x2xf16> {\n"
        "  %0 = matmul %a, %b : (tensor<2x0xf16>, tensor<0x2xf16>) -> tensor<2x2xf16>\n"
        "  return %0 : tensor<2x2xf16>\n"
        "}\n"
        "func.func @dyn(%x: tensor<?x3xi32>) -> (tensor<3xi32>, tensor<3xi32>) {\n"
        "  %0 = reduce_sum %x {axes = [0]} : (tensor<?x3xi32>) -> tensor<3xi32>\n"
        "  %1 = reduce_mean %x {axes = [0]} : (tensor<?x3xi32>) -> tensor<3xi32>\n"
        "  return %0, %1 : tensor<3xi32>, tensor<3xi32>\n"
        "}\n"
        "func.func @dynmax(%x: tensor<?x3xf32>) -> tensor<3xf32> {\n"
        "  %0 = reduce_max %x {axes = [0]} : (tensor<?x3xf32>) -> tensor<3xf32>\n"
        "  return %0 : tensor<3xf32>\n"
        "}\n");
    CHECK(m != NULL);
    int64_t d03[] = {0, 3}, d32[] = {3, 2}, d20[] = {2, 0}, d02[] = {0, 2};
    gpuir_array x;
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &x, GPUIR_F32, 2, d03), GPUIR_OK);
    gpuir_array out[4];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "sum", 1, &x, 3, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_F32, 1, 3, 0, 0));
    CHECK_F32S(&out[0], 0, 0, 0);
    CHECK(dims_are(&out[1], GPUIR_F32, 1, 0, 0, 0));
    CHECK(gpuir_array_count(&out[1]) == 0);
    CHECK(dims_are(&out[2], GPUIR_F32, 2, 1, 3, 0));
    CHECK_F32S(&out[2], 0, 0, 0);
    release_all(out, 3);
    gpuir_array_release(&x);

    /* an empty array may come without data */
    int32_t wv[] = {1, 2, 3, 4, 5, 6};
    gpuir_array in[2] = {make_array(GPUIR_I32, 2, d03, NULL), make_array(GPUIR_I32, 2, d32, wv)};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "ops", 2, in, 4, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_I32, 2, 0, 3, 0));
    CHECK(dims_are(&out[1], GPUIR_I32, 2, 0, 2, 0));
    CHECK(dims_are(&out[2], GPUIR_I32, 2, 3, 0, 0));
    CHECK(dims_are(&out[3], GPUIR_I32, 2, 0, 3, 0));
    release_all(out, 4);

    /* K = 0: every dot product is an empty sum */
    gpuir_array k0[2] = {make_array(GPUIR_F16, 2, d20, NULL), make_array(GPUIR_F16, 2, d02, NULL)};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "k0", 2, k0, 1, out), GPUIR_OK);
    CHECK(dims_are(&out[0], GPUIR_F16, 2, 2, 2, 0));
    CHECK_U16S(&out[0], 0, 0, 0, 0);
    gpuir_array_release(&out[0]);

    /* a ? dim that is 0 at run time: reductions give their identity (sum 0,
       int mean 0, max -inf), not a crash (integer division by the zero count) */
    gpuir_array e = make_array(GPUIR_I32, 2, d03, NULL);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "dyn", 1, &e, 2, out), GPUIR_OK);
    CHECK_INTS(&out[0], i32_at, 0, 0, 0);
    CHECK_INTS(&out[1], i32_at, 0, 0, 0);
    release_all(out, 2);
    gpuir_array ef = make_array(GPUIR_F32, 2, d03, NULL);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "dynmax", 1, &ef, 1, out), GPUIR_OK);
    CHECK(f32_at(&out[0], 0) == -INFINITY && f32_at(&out[0], 2) == -INFINITY);
    gpuir_array_release(&out[0]);
    /* ... and with one row, both are that row */
    int64_t d13[] = {1, 3};
    int32_t rv[] = {-4, 0, 9};
    gpuir_array r = make_array(GPUIR_I32, 2, d13, rv);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "dyn", 1, &r, 2, out), GPUIR_OK);
    CHECK_INTS(&out[0], i32_at, -4, 0, 9);
    CHECK_INTS(&out[1], i32_at, -4, 0, 9);
    release_all(out, 2);
    gpuir_ctx_destroy(ctx);
}

TEST(rank0_scalars) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx,
        "func.func @f(%s: tensor<f32>, %t: tensor<f32>, %v: tensor<3xf32>) -> (tensor<f32>, "
        "tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<1x1xf32>) {\n"
        "  %0 = mul %s, %t : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
        "  %1 = sub %v, %s : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>\n"
        "  %2 = reduce_sum %v {axes = [0]} : (tensor<3xf32>) -> tensor<f32>\n"
        "  %3 = exp %t : (tensor<f32>) -> tensor<f32>\n"
        "  %4 = reshape %s : (tensor<f32>) -> tensor<1x1xf32>\n"
        "  return %0, %1, %2, %3, %4 : tensor<f32>, tensor<3xf32>, tensor<f32>, tensor<f32>, "
        "tensor<1x1xf32>\n"
        "}\n"
        "func.func @g(%s: tensor<i64>) -> (tensor<i64>, tensor<2x2xi64>, tensor<i64>) {\n"
        "  %0 = neg %s : (tensor<i64>) -> tensor<i64>\n"
        "  %1 = broadcast %s : (tensor<i64>) -> tensor<2x2xi64>\n"
        "  %2 = reduce_max %1 {axes = [0, 1]} : (tensor<2x2xi64>) -> tensor<i64>\n"
        "  return %0, %1, %2 : tensor<i64>, tensor<2x2xi64>, tensor<i64>\n"
        "}\n");
    CHECK(m != NULL);
    float s = 2.5f, t = 0, vv[] = {1, 2, 4};
    int64_t d3[] = {3};
    gpuir_array in[3] = {make_array(GPUIR_F32, 0, NULL, &s), make_array(GPUIR_F32, 0, NULL, &t),
                         make_array(GPUIR_F32, 1, d3, vv)};
    gpuir_array out[5];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 3, in, 5, out), GPUIR_OK);
    CHECK(out[0].rank == 0 && out[2].rank == 0 && out[3].rank == 0);
    CHECK_F32S(&out[0], 0);
    CHECK_F32S(&out[1], -1.5f, -0.5f, 1.5f);
    CHECK_F32S(&out[2], 7);
    CHECK_F32S(&out[3], 1);
    CHECK(dims_are(&out[4], GPUIR_F32, 2, 1, 1, 0));
    CHECK_F32S(&out[4], 2.5f);
    release_all(out, 5);
    /* a rank-1 array for a rank-0 parameter is a shape error */
    int64_t d1[] = {1};
    gpuir_array wrong[3] = {make_array(GPUIR_F32, 1, d1, &s), in[1], in[2]};
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 3, wrong, 5, out), GPUIR_ERR_SHAPE);
    gpuir_ctx_clear_error(ctx);

    int64_t sv = INT64_MIN + 1;
    gpuir_array si = make_array(GPUIR_I64, 0, NULL, &sv);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "g", 1, &si, 3, out), GPUIR_OK);
    CHECK_INTS(&out[0], i64_at, INT64_MAX);
    CHECK(dims_are(&out[1], GPUIR_I64, 2, 2, 2, 0));
    CHECK_INTS(&out[1], i64_at, INT64_MIN + 1, INT64_MIN + 1, INT64_MIN + 1, INT64_MIN + 1);
    CHECK_INTS(&out[2], i64_at, INT64_MIN + 1);
    release_all(out, 3);
    gpuir_ctx_destroy(ctx);
}

/* Constants built through the C API: dense data in the host format
   (f16/bf16 as bits) and splats rounded to the dtype. */
TEST(builder_constants) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    int64_t d3[] = {3}, d2[] = {2};
    uint16_t hbits[] = {0x3C00, 0x7BFF, 0x8001};      /* 1, 65504, -2^-24 */
    int64_t ivals[] = {INT64_MIN, -1, INT64_MAX};
    gpuir_func_begin(m, "c");
    gpuir_value h = gpuir_constant_dense(m, gpuir_tensor_type(GPUIR_F16, 1, d3), hbits);
    gpuir_value h2 = gpuir_add(m, h, h);
    gpuir_value i = gpuir_constant_dense(m, gpuir_tensor_type(GPUIR_I64, 1, d3), ivals);
    gpuir_value one = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_I64, 0, NULL), 1);
    gpuir_value i2 = gpuir_add(m, i, one);
    gpuir_value b = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_BF16, 1, d2), 0.1);
    gpuir_value f = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_F32, 1, d2), 0.1);
    gpuir_value res[] = {h2, i2, b, f};
    CHECK_RESULT(ctx, gpuir_func_return(m, 4, res), GPUIR_OK);
    gpuir_array out[4];
    CHECK_RESULT(ctx, gpuir_ref_run(m, "c", 0, NULL, 4, out), GPUIR_OK);
    CHECK_U16S(&out[0], 0x4000, 0x7C00, 0x8002);      /* 2, inf, -2^-23 */
    CHECK_INTS(&out[1], i64_at, INT64_MIN + 1, 0, INT64_MIN);
    CHECK_U16S(&out[2], 0x3DCD, 0x3DCD);
    CHECK_F32S(&out[3], 0.1f, 0.1f);
    release_all(out, 4);
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(params_broadcast_add);
    RUN(builder_mlp);
    RUN(dynamic_dims);
    RUN(return_param_and_same_value_twice);
    RUN(multiple_results_of_each_dtype);
    RUN(globals_bind_rebind_unbound);
    RUN(bad_inputs);
    RUN(int_wraparound_and_division);
    RUN(int_matmul_reduce_exact);
    RUN(float_to_int_casts_exact);
    RUN(int64_to_float_rounds_once);
    RUN(float_nan_and_division);
    RUN(f16_bf16_rounding);
    RUN(zero_size_dims);
    RUN(rank0_scalars);
    RUN(builder_constants);
    return CHECK_EXIT();
}

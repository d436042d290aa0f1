/* The builder API: shape inference of every op class, the printed text of a
   built module (byte for byte), determinism, the print -> parse -> print
   fixed point, introspection, names and strings, array compare and random
   fill. */
#include "../../gpuir.h"
#include "../check.h"

#include <float.h>
#include <stdlib.h>

#define DYN GPUIR_DYN

static gpuir_type T(gpuir_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t d[GPUIR_MAX_RANK] = {d0, d1, d2, d3, 1, 1, 1, 1};   /* rank 9 reads 8 */
    return gpuir_tensor_type(dt, rank, d);
}
#define T0(dt) T(dt, 0, 0, 0, 0, 0)
#define T1(dt, a) T(dt, 1, a, 0, 0, 0)
#define T2(dt, a, b) T(dt, 2, a, b, 0, 0)
#define T3(dt, a, b, c) T(dt, 3, a, b, c, 0)
#define T4(dt, a, b, c, d) T(dt, 4, a, b, c, d)

/* The value's type as text must be `want`. */
#define CHECK_TYPE(m, v, want)                                                            \
    do {                                                                                  \
        char check__b[160];                                                               \
        gpuir_value check__v = (v);                                                       \
        CHECK(check__v.id != 0);                                                          \
        gpuir_type_str(gpuir_value_type(m, check__v), check__b, sizeof check__b);         \
        if (strcmp(check__b, want) != 0) {                                                \
            fprintf(stderr, "%s:%d: type %s, want %s (%s)\n", __FILE__, __LINE__,         \
                    check__b, want, gpuir_ctx_error(gpuir_module_ctx(m)));                \
            check__failed = 1;                                                            \
        }                                                                                 \
    } while (0)

/* The builder call must fail with `code`, return id 0, and leave the error
   in the context; the error is then cleared. */
#define CHECK_BUILD_FAILS(m, expr, code)                                                  \
    do {                                                                                  \
        gpuir_value check__v = (expr);                                                    \
        gpuir_ctx *check__c = gpuir_module_ctx(m);                                        \
        CHECK(check__v.id == 0);                                                          \
        CHECK_RESULT(check__c, gpuir_ctx_result(check__c), code);                         \
        CHECK(gpuir_ctx_error(check__c)[0] != '\0');                                      \
        gpuir_ctx_clear_error(check__c);                                                  \
    } while (0)

static bool text_eq(const char *got, const char *want) {
    if (got && want && strcmp(got, want) == 0) return true;
    fprintf(stderr, "---- got ----\n%s---- want ----\n%s-------------\n", got ? got : "(null)", want);
    return false;
}

/* ---- shape inference ---- */

TEST(infer_unary_binary) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value a23 = gpuir_param(m, "a23", T2(GPUIR_F32, 2, 3));
    gpuir_value a3 = gpuir_param(m, "a3", T1(GPUIR_F32, 3));
    gpuir_value a413 = gpuir_param(m, "a413", T3(GPUIR_F32, 4, 1, 3));
    gpuir_value a51 = gpuir_param(m, "a51", T2(GPUIR_F32, 5, 1));
    gpuir_value q3 = gpuir_param(m, "q3", T2(GPUIR_F32, DYN, 3));
    gpuir_value o3 = gpuir_param(m, "o3", T2(GPUIR_F32, 1, 3));
    gpuir_value q1 = gpuir_param(m, "q1", T2(GPUIR_F32, DYN, 1));
    gpuir_value qq = gpuir_param(m, "qq", T2(GPUIR_F32, DYN, DYN));
    gpuir_value s = gpuir_param(m, "s", T0(GPUIR_F32));
    gpuir_value z = gpuir_param(m, "z", T2(GPUIR_F32, 2, 0));
    gpuir_value i23 = gpuir_param(m, "i23", T2(GPUIR_I32, 2, 3));
    gpuir_value h23 = gpuir_param(m, "h23", T2(GPUIR_F16, 2, 3));
    gpuir_value b4 = gpuir_param(m, "b4", T1(GPUIR_BF16, 4));
    gpuir_value a4 = gpuir_param(m, "a4", T1(GPUIR_F32, 4));
    gpuir_value o1 = gpuir_param(m, "o1", T1(GPUIR_F32, 1));

    CHECK_TYPE(m, gpuir_add(m, a23, a3), "tensor<2x3xf32>");
    CHECK_TYPE(m, gpuir_add(m, a3, a23), "tensor<2x3xf32>");
    CHECK_TYPE(m, gpuir_sub(m, a413, a51), "tensor<4x5x3xf32>");
    CHECK_TYPE(m, gpuir_mul(m, q3, a23), "tensor<2x3xf32>");     /* ? vs 2: 2 */
    CHECK_TYPE(m, gpuir_div(m, a23, q3), "tensor<2x3xf32>");
    CHECK_TYPE(m, gpuir_max(m, q3, o3), "tensor<?x3xf32>");      /* ? vs 1: ? */
    CHECK_TYPE(m, gpuir_min(m, q3, q1), "tensor<?x3xf32>");
    CHECK_TYPE(m, gpuir_add(m, qq, a3), "tensor<?x3xf32>");
    CHECK_TYPE(m, gpuir_add(m, qq, q1), "tensor<?x?xf32>");
    CHECK_TYPE(m, gpuir_pow(m, s, a23), "tensor<2x3xf32>");      /* rank 0 broadcasts */
    CHECK_TYPE(m, gpuir_add(m, s, s), "tensor<f32>");
    CHECK_TYPE(m, gpuir_add(m, z, o1), "tensor<2x0xf32>");       /* 0 vs 1 */
    CHECK_TYPE(m, gpuir_add(m, o1, s), "tensor<1xf32>");
    CHECK_TYPE(m, gpuir_binary(m, GPUIR_OP_MAX, i23, i23), "tensor<2x3xi32>");
    CHECK_TYPE(m, gpuir_add(m, h23, h23), "tensor<2x3xf16>");
    /* unary: same type; neg/abs/relu on ints */
    CHECK_TYPE(m, gpuir_neg(m, i23), "tensor<2x3xi32>");
    CHECK_TYPE(m, gpuir_abs(m, i23), "tensor<2x3xi32>");
    CHECK_TYPE(m, gpuir_relu(m, i23), "tensor<2x3xi32>");
    CHECK_TYPE(m, gpuir_exp(m, q3), "tensor<?x3xf32>");
    CHECK_TYPE(m, gpuir_log(m, h23), "tensor<2x3xf16>");
    CHECK_TYPE(m, gpuir_sqrt(m, b4), "tensor<4xbf16>");
    CHECK_TYPE(m, gpuir_rsqrt(m, s), "tensor<f32>");
    CHECK_TYPE(m, gpuir_tanh(m, z), "tensor<2x0xf32>");
    CHECK_TYPE(m, gpuir_sigmoid(m, a3), "tensor<3xf32>");
    CHECK_TYPE(m, gpuir_gelu(m, a3), "tensor<3xf32>");
    CHECK_TYPE(m, gpuir_silu(m, b4), "tensor<4xbf16>");
    CHECK_TYPE(m, gpuir_round_tf32(m, q3), "tensor<?x3xf32>");
    CHECK_TYPE(m, gpuir_unary(m, GPUIR_OP_ABS, h23), "tensor<2x3xf16>");

    CHECK_BUILD_FAILS(m, gpuir_add(m, a23, a51), GPUIR_ERR_SHAPE);    /* 3 vs 1 ok, 2 vs 5 not */
    CHECK_BUILD_FAILS(m, gpuir_add(m, a23, a4), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_add(m, z, a3), GPUIR_ERR_SHAPE);        /* 0 vs 3 */
    CHECK_BUILD_FAILS(m, gpuir_add(m, a23, h23), GPUIR_ERR_DTYPE);
    CHECK_BUILD_FAILS(m, gpuir_pow(m, i23, i23), GPUIR_ERR_DTYPE);
    CHECK_BUILD_FAILS(m, gpuir_exp(m, i23), GPUIR_ERR_DTYPE);
    CHECK_BUILD_FAILS(m, gpuir_round_tf32(m, i23), GPUIR_ERR_DTYPE);   /* floats only */
    CHECK_BUILD_FAILS(m, gpuir_gelu(m, i23), GPUIR_ERR_DTYPE);
    CHECK_BUILD_FAILS(m, gpuir_unary(m, GPUIR_OP_ADD, a3), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_BUILD_FAILS(m, gpuir_binary(m, GPUIR_OP_NEG, a3, a3), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_BUILD_FAILS(m, gpuir_unary(m, GPUIR_OP_INVALID, a3), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_value bad = {999};
    CHECK_BUILD_FAILS(m, gpuir_neg(m, bad), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_value none = {0};
    CHECK_BUILD_FAILS(m, gpuir_add(m, a3, none), GPUIR_ERR_INVALID_ARGUMENT);
    /* sticky: after an error, builder calls return 0 until cleared */
    CHECK(gpuir_exp(m, i23).id == 0);
    CHECK(gpuir_neg(m, a3).id == 0);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_DTYPE);
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_neg(m, a3).id != 0);
    gpuir_ctx_destroy(ctx);
}

TEST(infer_matmul) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value a23 = gpuir_param(m, "a23", T2(GPUIR_F32, 2, 3));
    gpuir_value b34 = gpuir_param(m, "b34", T2(GPUIR_F32, 3, 4));
    gpuir_value a32 = gpuir_param(m, "a32", T2(GPUIR_F32, 3, 2));
    gpuir_value b43 = gpuir_param(m, "b43", T2(GPUIR_F32, 4, 3));
    gpuir_value a523 = gpuir_param(m, "a523", T3(GPUIR_F32, 5, 2, 3));
    gpuir_value a2145 = gpuir_param(m, "a2145", T4(GPUIR_F32, 2, 1, 4, 5));
    gpuir_value b356 = gpuir_param(m, "b356", T3(GPUIR_F32, 3, 5, 6));
    gpuir_value a732 = gpuir_param(m, "a732", T3(GPUIR_F32, 7, 3, 2));
    gpuir_value b743 = gpuir_param(m, "b743", T3(GPUIR_F32, 7, 4, 3));
    gpuir_value q3 = gpuir_param(m, "q3", T2(GPUIR_F32, DYN, 3));
    gpuir_value b3q = gpuir_param(m, "b3q", T2(GPUIR_F32, 3, DYN));
    gpuir_value a2q = gpuir_param(m, "a2q", T2(GPUIR_F32, 2, DYN));
    gpuir_value b54 = gpuir_param(m, "b54", T2(GPUIR_F32, 5, 4));
    gpuir_value qb = gpuir_param(m, "qb", T3(GPUIR_F32, DYN, 3, 4));
    gpuir_value a1 = gpuir_param(m, "a1", T1(GPUIR_F32, 3));
    gpuir_value h34 = gpuir_param(m, "h34", T2(GPUIR_F16, 3, 4));
    gpuir_value i23 = gpuir_param(m, "i23", T2(GPUIR_I32, 2, 3));
    gpuir_value i34 = gpuir_param(m, "i34", T2(GPUIR_I32, 3, 4));
    gpuir_value a223 = gpuir_param(m, "a223", T3(GPUIR_F32, 2, 2, 3));
    gpuir_value b334 = gpuir_param(m, "b334", T3(GPUIR_F32, 3, 3, 4));
    gpuir_value a13 = gpuir_param(m, "a13", T2(GPUIR_F32, 2, 1));

    CHECK_TYPE(m, gpuir_matmul(m, a23, b34, 0), "tensor<2x4xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, a523, b34, 0), "tensor<5x2x4xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, a2145, b356, 0), "tensor<2x3x4x6xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, a32, b34, GPUIR_TRANSPOSE_A), "tensor<2x4xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, a23, b43, GPUIR_TRANSPOSE_B), "tensor<2x4xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, a732, b743, GPUIR_TRANSPOSE_A | GPUIR_TRANSPOSE_B),
               "tensor<7x2x4xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, b34, b43, 0), "tensor<3x3xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, b34, b34, GPUIR_TRANSPOSE_A), "tensor<4x4xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, q3, b3q, 0), "tensor<?x?xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, a2q, b54, 0), "tensor<2x4xf32>");    /* K = ? against 5 */
    CHECK_TYPE(m, gpuir_matmul(m, a523, qb, 0), "tensor<5x2x4xf32>");  /* batch ? vs 5 */
    CHECK_TYPE(m, gpuir_matmul(m, a23, qb, 0), "tensor<?x2x4xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, i23, i34, 0), "tensor<2x4xi32>");
    CHECK_TYPE(m, gpuir_matmul(m, a23, b43, GPUIR_TRANSPOSE_B | GPUIR_TF32), "tensor<2x4xf32>");
    CHECK_TYPE(m, gpuir_matmul(m, a23, b43, GPUIR_TRANSPOSE_B | GPUIR_WGMMA), "tensor<2x4xf32>");   /* lowering refuses it */

    CHECK_BUILD_FAILS(m, gpuir_matmul(m, a23, b43, 0), GPUIR_ERR_SHAPE);           /* K 3 vs 4 */
    CHECK_BUILD_FAILS(m, gpuir_matmul(m, a23, b34, GPUIR_TRANSPOSE_A), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_matmul(m, a13, b34, 0), GPUIR_ERR_SHAPE);           /* K 1 vs 3 */
    CHECK_BUILD_FAILS(m, gpuir_matmul(m, a1, b34, 0), GPUIR_ERR_SHAPE);            /* rank 1 */
    CHECK_BUILD_FAILS(m, gpuir_matmul(m, a223, b334, 0), GPUIR_ERR_SHAPE);         /* batch 2 vs 3 */
    CHECK_BUILD_FAILS(m, gpuir_matmul(m, a23, h34, 0), GPUIR_ERR_DTYPE);
    gpuir_ctx_destroy(ctx);
}

/* The lowered text of a [256 x 64] x [64 x 256] matmul of dt built with
   `flags` (planned for the default target, sm_90), or NULL when lowering
   fails (the error in ctx). The caller frees it. */
static char *lowered_matmul(gpuir_ctx *ctx, gpuir_dtype dt, unsigned flags) {
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value a = gpuir_param(m, "a", T2(dt, 256, 64));
    gpuir_value b = gpuir_param(m, "b", T2(dt, 64, 256));
    gpuir_value c = gpuir_matmul(m, a, b, flags);
    gpuir_func_return(m, 1, &c);
    char *text = gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL) ? NULL : gpuir_module_print(m);
    gpuir_module_destroy(m);
    return text;
}

/* The `wgmma` attribute from the C API: no flag, configure decides (wgmma
   on sm_90, B read as it is: no transpose); GPUIR_WGMMA forces it (an
   error where it cannot run: f32), GPUIR_NO_WGMMA forbids it (mma.sync);
   both at once are an error naming the flags. */
TEST(matmul_wgmma_flags) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char *plain = lowered_matmul(ctx, GPUIR_BF16, 0), *forced = lowered_matmul(ctx, GPUIR_BF16, GPUIR_WGMMA);
    char *forbidden = lowered_matmul(ctx, GPUIR_BF16, GPUIR_NO_WGMMA);
    CHECK(plain && strstr(plain, "form = \"wgmma.128x128x64.s6\"") && !strstr(plain, "transpose ") &&
          !strstr(plain, "wgmma = "));
    CHECK(forced && strstr(forced, "wgmma = true") && strstr(forced, "form = \"wgmma.128x128x64.s6\""));
    CHECK(forbidden && strstr(forbidden, "wgmma = false") && strstr(forbidden, "form = \"mma_sync.128x128x32.s3\"") &&
          !strstr(forbidden, "transpose "));
    gpuir_free(plain);
    gpuir_free(forced);
    gpuir_free(forbidden);
    CHECK(lowered_matmul(ctx, GPUIR_F32, GPUIR_WGMMA) == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "matmul {wgmma = true} cannot take the wgmma kernel on sm_90: wgmma needs f16 or bf16 operands");
    gpuir_ctx_clear_error(ctx);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value a = gpuir_param(m, "a", T2(GPUIR_BF16, 16, 16));
    CHECK_BUILD_FAILS(m, gpuir_matmul(m, a, a, GPUIR_WGMMA | GPUIR_NO_WGMMA), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_matmul(m, a, a, GPUIR_WGMMA | GPUIR_NO_WGMMA);
    CHECK_MSG(ctx, "matmul: flags: GPUIR_WGMMA forces the wgmma kernel and GPUIR_NO_WGMMA forbids it");
    gpuir_ctx_destroy(ctx);
}

/* Split-K: k_slices = S partials, f32 [S, batch..., M, N] whatever the
   operands' dtype; slices of ceil(K / S) rounded up to 32, none empty. */
TEST(infer_matmul_k_slices) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value a = gpuir_param(m, "a", T3(GPUIR_BF16, 2, 8, 300));
    gpuir_value b = gpuir_param(m, "b", T2(GPUIR_BF16, 300, 6));
    gpuir_value bt = gpuir_param(m, "bt", T2(GPUIR_BF16, 6, 300));
    gpuir_value f = gpuir_param(m, "f", T2(GPUIR_F32, 8, 64));
    gpuir_value g = gpuir_param(m, "g", T2(GPUIR_F32, 64, 4));
    gpuir_value i = gpuir_param(m, "i", T2(GPUIR_I32, 8, 64));
    gpuir_value j = gpuir_param(m, "j", T2(GPUIR_I32, 64, 4));
    CHECK(gpuir_matmul_k_slice_len(300, 3) == 128 && gpuir_matmul_k_slice_len(64, 2) == 32 &&
          gpuir_matmul_k_slice_len(1000, 3) == 352 && gpuir_matmul_k_slice_len(10, 0) == 0);
    CHECK_TYPE(m, gpuir_matmul_k_slices(m, a, b, 0, 3), "tensor<3x2x8x6xf32>");
    CHECK_TYPE(m, gpuir_matmul_k_slices(m, a, bt, GPUIR_TRANSPOSE_B, 2), "tensor<2x2x8x6xf32>");
    CHECK_TYPE(m, gpuir_matmul_k_slices(m, f, g, GPUIR_TF32, 2), "tensor<2x8x4xf32>");
    CHECK_BUILD_FAILS(m, gpuir_matmul_k_slices(m, f, g, 0, 1), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_matmul_k_slices(m, f, g, 0, 0), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_matmul_k_slices(m, f, g, 0, 3), GPUIR_ERR_ATTRIBUTE);  /* 32, 32, then none */
    CHECK_BUILD_FAILS(m, gpuir_matmul_k_slices(m, i, j, 0, 2), GPUIR_ERR_DTYPE);
    gpuir_ctx_destroy(ctx);
}

TEST(infer_reduce_transpose_reshape_broadcast_cast_softmax) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value x = gpuir_param(m, "x", T3(GPUIR_F32, 2, 3, 4));
    gpuir_value q = gpuir_param(m, "q", T2(GPUIR_F32, DYN, 3));
    gpuir_value z = gpuir_param(m, "z", T2(GPUIR_F32, 0, 3));
    gpuir_value i = gpuir_param(m, "i", T2(GPUIR_I32, 2, 3));
    gpuir_value v3 = gpuir_param(m, "v3", T1(GPUIR_F32, 3));
    gpuir_value v1 = gpuir_param(m, "v1", T1(GPUIR_F32, 1));
    gpuir_value vq = gpuir_param(m, "vq", T1(GPUIR_F32, DYN));

    int64_t ax1[1] = {1}, axn[2] = {-1, 0}, ax_all[3] = {2, 0, 1}, ax3[1] = {3};
    int64_t ax_rep[2] = {1, -2}, axm4[1] = {-4}, ax0[1] = {0};
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, x, 1, ax1, false), "tensor<2x4xf32>");
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_MAX, x, 1, ax1, true), "tensor<2x1x4xf32>");
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_MEAN, x, 2, axn, false), "tensor<3xf32>");
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_MEAN, x, 2, axn, true), "tensor<1x3x1xf32>");
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, x, 3, ax_all, false), "tensor<f32>");
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, q, 1, ax0, false), "tensor<3xf32>");
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, z, 1, ax0, true), "tensor<1x3xf32>");
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_MAX, i, 1, ax1, false), "tensor<2xi32>");
    /* the caller's axes are not modified */
    CHECK(axn[0] == -1 && axn[1] == 0);
    CHECK_BUILD_FAILS(m, gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, x, 1, ax3, false), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, x, 1, axm4, false), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, x, 2, ax_rep, false), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, x, 0, ax1, false), GPUIR_ERR_ATTRIBUTE);
    /* an empty axis reduces to the identity: legal for every reduction */
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_MAX, z, 1, ax0, false), "tensor<3xf32>");
    CHECK_TYPE(m, gpuir_reduce(m, GPUIR_OP_REDUCE_MEAN, z, 1, ax0, false), "tensor<3xf32>");
    CHECK_BUILD_FAILS(m, gpuir_reduce(m, GPUIR_OP_ADD, x, 1, ax1, false), GPUIR_ERR_INVALID_ARGUMENT);

    int64_t p201[3] = {2, 0, 1}, p001[3] = {0, 0, 1}, p01[2] = {0, 1}, p013[3] = {0, 1, 3};
    int64_t p10[2] = {1, 0};
    CHECK_TYPE(m, gpuir_transpose(m, x, 3, p201), "tensor<4x2x3xf32>");
    CHECK_TYPE(m, gpuir_transpose(m, q, 2, p10), "tensor<3x?xf32>");
    CHECK_BUILD_FAILS(m, gpuir_transpose(m, x, 3, p001), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_transpose(m, x, 2, p01), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_transpose(m, x, 3, p013), GPUIR_ERR_ATTRIBUTE);

    int64_t r64[2] = {6, 4}, r24[1] = {24}, rq[1] = {DYN}, rqq[2] = {DYN, DYN}, r7[1] = {7};
    int64_t r4q[2] = {4, DYN};
    CHECK_TYPE(m, gpuir_reshape(m, x, 2, r64), "tensor<6x4xf32>");
    CHECK_TYPE(m, gpuir_reshape(m, x, 1, r24), "tensor<24xf32>");
    CHECK_TYPE(m, gpuir_reshape(m, q, 1, rq), "tensor<?xf32>");
    CHECK_TYPE(m, gpuir_reshape(m, x, 2, r4q), "tensor<4x?xf32>");
    CHECK_TYPE(m, gpuir_reshape(m, v1, 0, NULL), "tensor<f32>");
    CHECK_BUILD_FAILS(m, gpuir_reshape(m, x, 1, r7), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_reshape(m, q, 2, rqq), GPUIR_ERR_SHAPE);

    int64_t b23[2] = {2, 3}, b24[2] = {2, 4}, b3[1] = {3}, b2q[2] = {2, DYN}, bq[1] = {DYN};
    int64_t b523[3] = {5, 2, 3};
    CHECK_TYPE(m, gpuir_broadcast(m, v3, 2, b23), "tensor<2x3xf32>");
    CHECK_TYPE(m, gpuir_broadcast(m, v1, 2, b24), "tensor<2x4xf32>");
    CHECK_TYPE(m, gpuir_broadcast(m, vq, 2, b2q), "tensor<2x?xf32>");
    CHECK_TYPE(m, gpuir_broadcast(m, i, 3, b523), "tensor<5x2x3xi32>");
    CHECK_BUILD_FAILS(m, gpuir_broadcast(m, v3, 2, b24), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_broadcast(m, i, 1, b3), GPUIR_ERR_SHAPE);    /* lower rank */
    CHECK_BUILD_FAILS(m, gpuir_broadcast(m, v1, 1, bq), GPUIR_ERR_SHAPE);   /* 1 -> ? */

    CHECK_TYPE(m, gpuir_cast(m, x, GPUIR_I32), "tensor<2x3x4xi32>");
    CHECK_TYPE(m, gpuir_cast(m, q, GPUIR_BF16), "tensor<?x3xbf16>");
    CHECK_TYPE(m, gpuir_cast(m, i, GPUIR_I64), "tensor<2x3xi64>");
    CHECK_TYPE(m, gpuir_cast(m, i, GPUIR_I32), "tensor<2x3xi32>");
    CHECK_BUILD_FAILS(m, gpuir_cast(m, x, GPUIR_DTYPE_INVALID), GPUIR_ERR_DTYPE);
    CHECK_BUILD_FAILS(m, gpuir_cast(m, x, GPUIR_DTYPE_COUNT), GPUIR_ERR_DTYPE);

    CHECK_TYPE(m, gpuir_softmax(m, x, -1), "tensor<2x3x4xf32>");
    CHECK_TYPE(m, gpuir_softmax(m, q, 0), "tensor<?x3xf32>");
    CHECK_BUILD_FAILS(m, gpuir_softmax(m, x, 3), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_softmax(m, x, -4), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_softmax(m, i, 0), GPUIR_ERR_DTYPE);
    gpuir_ctx_destroy(ctx);
}

TEST(infer_constants_and_globals) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    float f4[4] = {1, 2, 3, 4};
    int32_t i3[3] = {1, -2, 3};
    CHECK_TYPE(m, gpuir_constant_splat(m, T2(GPUIR_F32, 2, 3), 1.5), "tensor<2x3xf32>");
    CHECK_TYPE(m, gpuir_constant_splat(m, T0(GPUIR_I64), 7), "tensor<i64>");
    CHECK_TYPE(m, gpuir_constant_splat(m, T1(GPUIR_I32, 0), -1), "tensor<0xi32>");
    CHECK_TYPE(m, gpuir_constant_dense(m, T2(GPUIR_F32, 2, 2), f4), "tensor<2x2xf32>");
    CHECK_TYPE(m, gpuir_constant_dense(m, T1(GPUIR_I32, 3), i3), "tensor<3xi32>");
    CHECK_TYPE(m, gpuir_constant_dense(m, T1(GPUIR_F32, 0), NULL), "tensor<0xf32>");
    CHECK_BUILD_FAILS(m, gpuir_constant_splat(m, T1(GPUIR_F32, DYN), 1), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_constant_dense(m, T1(GPUIR_F32, DYN), f4), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_constant_splat(m, T1(GPUIR_I32, 2), 1.5), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_constant_splat(m, T1(GPUIR_I32, 2), 3e9), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_constant_splat(m, T1(GPUIR_I64, 2), NAN), GPUIR_ERR_ATTRIBUTE);
    CHECK_BUILD_FAILS(m, gpuir_constant_dense(m, T1(GPUIR_F32, 2), NULL), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_BUILD_FAILS(m, gpuir_constant_splat(m, T1(GPUIR_F32, -3), 1), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_constant_splat(m, T(GPUIR_F32, 9, 1, 1, 1, 1), 1), GPUIR_ERR_LIMIT);
    int64_t d4[1] = {4};
    gpuir_type memref = gpuir_memref_type(GPUIR_F32, 1, d4, 1);
    CHECK_BUILD_FAILS(m, gpuir_constant_splat(m, memref, 1), GPUIR_ERR_VERIFY);

    CHECK_TYPE(m, gpuir_global(m, "W", T2(GPUIR_F32, 3, 4)), "tensor<3x4xf32>");
    CHECK_TYPE(m, gpuir_global(m, "W", T2(GPUIR_F32, 3, 4)), "tensor<3x4xf32>");   /* found */
    CHECK_TYPE(m, gpuir_global(m, "b.1$x", T1(GPUIR_F16, 4)), "tensor<4xf16>");
    CHECK(gpuir_module_global_count(m) == 2);
    CHECK_BUILD_FAILS(m, gpuir_global(m, "W", T2(GPUIR_F32, 4, 3)), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_global(m, "W", T2(GPUIR_F16, 3, 4)), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_global(m, "D", T1(GPUIR_F32, DYN)), GPUIR_ERR_SHAPE);
    CHECK_BUILD_FAILS(m, gpuir_global(m, "1bad", T1(GPUIR_F32, 2)), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_BUILD_FAILS(m, gpuir_global(m, "", T1(GPUIR_F32, 2)), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_BUILD_FAILS(m, gpuir_global(m, NULL, T1(GPUIR_F32, 2)), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(gpuir_module_global_count(m) == 2);
    gpuir_ctx_destroy(ctx);
}

TEST(builder_structure_errors) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_value x0 = {1};
    CHECK_BUILD_FAILS(m, gpuir_neg(m, x0), GPUIR_ERR_INVALID_ARGUMENT);     /* no open function */
    CHECK_BUILD_FAILS(m, gpuir_param(m, "x", T1(GPUIR_F32, 2)), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_RESULT(ctx, gpuir_func_return(m, 0, NULL), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_func_begin(m, "bad name").id == 0);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    char longname[GPUIR_MAX_NAME + 1];
    memset(longname, 'a', GPUIR_MAX_NAME);
    longname[GPUIR_MAX_NAME] = '\0';
    CHECK(gpuir_func_begin(m, longname).id == 0);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    longname[GPUIR_MAX_NAME - 1] = '\0';               /* 127 bytes: allowed */
    gpuir_func f = gpuir_func_begin(m, longname);
    CHECK(f.id != 0);
    CHECK(gpuir_func_begin(m, "g").id == 0);             /* still open */
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    gpuir_value x = gpuir_param(m, "x", T1(GPUIR_F32, 2));
    CHECK_BUILD_FAILS(m, gpuir_param(m, "x", T1(GPUIR_F32, 2)), GPUIR_ERR_VERIFY);
    CHECK_BUILD_FAILS(m, gpuir_param(m, "9x", T1(GPUIR_F32, 2)), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_BUILD_FAILS(m, gpuir_param(m, "y", T(GPUIR_F32, 9, 1, 1, 1, 1)), GPUIR_ERR_LIMIT);
    CHECK_BUILD_FAILS(m, gpuir_param(m, "y", T1(GPUIR_DTYPE_INVALID, 2)), GPUIR_ERR_DTYPE);
    CHECK_BUILD_FAILS(m, gpuir_param(m, "y", T2(GPUIR_F32, INT64_MAX, 4)), GPUIR_ERR_LIMIT);
    CHECK_RESULT(ctx, gpuir_func_return(m, 1, &x), GPUIR_OK);
    CHECK(gpuir_func_begin(m, longname).id == 0);         /* defined twice */
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_VERIFY);
    gpuir_ctx_clear_error(ctx);
    /* a value of another function */
    gpuir_func_begin(m, "g");
    gpuir_value y = gpuir_param(m, "y", T1(GPUIR_F32, 2));
    CHECK_BUILD_FAILS(m, gpuir_add(m, x, y), GPUIR_ERR_VERIFY);
    CHECK_RESULT(ctx, gpuir_func_return(m, 1, &x), GPUIR_ERR_VERIFY);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_module_verify(m), GPUIR_ERR_VERIFY);     /* @g is open */
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_func_return(m, 1, &y), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_module_verify(m), GPUIR_OK);
    /* lookups */
    CHECK(gpuir_module_find_func(m, "g").id == 2);
    CHECK(gpuir_module_find_func(m, "nope").id == 0);
    CHECK(gpuir_module_find_func(m, NULL).id == 0);
    gpuir_array a;
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, GPUIR_F32, 1, (int64_t[]){2}), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "nope", &a), GPUIR_ERR_NOT_FOUND);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&a);
    gpuir_ctx_destroy(ctx);
}

/* ---- the printed text of a built module ---- */

/* Builds the same module every time; returns NULL (and reports) on error. */
static gpuir_module *build_golden(gpuir_ctx *ctx) {
    gpuir_module *m = gpuir_module_make(ctx);
    int64_t d23[2] = {2, 3}, d4[1] = {4}, d2q[2] = {2, DYN}, d8[1] = {8}, d34[2] = {3, 4};
    int64_t m48[2] = {4, 8}, mq8[2] = {DYN, 8};
    gpuir_func_begin(m, "main");
    gpuir_value x = gpuir_param(m, "x", gpuir_tensor_type(GPUIR_F32, 2, d23));
    gpuir_value b = gpuir_param(m, "b", gpuir_tensor_type(GPUIR_F32, 1, d4));
    gpuir_value idx = gpuir_param(m, "idx", gpuir_tensor_type(GPUIR_I32, 2, d2q));
    gpuir_value w = gpuir_global(m, "W", gpuir_tensor_type(GPUIR_F32, 2, d34));
    gpuir_value v1 = gpuir_matmul(m, x, w, 0);
    gpuir_value v2 = gpuir_matmul(m, w, x, GPUIR_TRANSPOSE_A | GPUIR_TRANSPOSE_B);
    gpuir_value v3 = gpuir_add(m, v1, b);
    gpuir_value v4 = gpuir_relu(m, v3);
    int64_t axes[2] = {-1, 0};
    gpuir_value v5 = gpuir_reduce(m, GPUIR_OP_REDUCE_MEAN, v4, 2, axes, false);
    int64_t perm[2] = {1, 0};
    gpuir_value v6 = gpuir_transpose(m, v2, 2, perm);
    gpuir_value v7 = gpuir_reshape(m, v6, 1, d8);
    gpuir_value v8 = gpuir_broadcast(m, b, 2, d34);
    gpuir_value v9 = gpuir_cast(m, idx, GPUIR_F32);
    gpuir_value v10 = gpuir_softmax(m, v4, -1);
    gpuir_value v11 = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_F32, 1, d4), 1.5);
    float dense[4] = {1.0f, -2.5f, 0.25f, 3.0f};
    int64_t d22[2] = {2, 2};
    gpuir_value v12 = gpuir_constant_dense(m, gpuir_tensor_type(GPUIR_F32, 2, d22), dense);
    int64_t big[3] = {1, -2, INT64_MIN + 1};
    int64_t d3[1] = {3};
    gpuir_value v13 = gpuir_constant_dense(m, gpuir_tensor_type(GPUIR_I64, 1, d3), big);
    gpuir_value v14 = gpuir_sub(m, v8, v11);
    int64_t ax1[1] = {1};
    gpuir_value v15 = gpuir_reduce(m, GPUIR_OP_REDUCE_MAX, v14, 1, ax1, true);
    (void)v9; (void)v12; (void)v13; (void)v15;
    gpuir_value res[3] = {v10, v5, v7};
    gpuir_func_return(m, 3, res);

    gpuir_func_begin(m, "none");
    gpuir_param(m, "m", gpuir_memref_type(GPUIR_F32, 2, m48, 3));
    gpuir_func_return(m, 0, NULL);

    gpuir_func_begin(m, "pass");
    gpuir_value p = gpuir_param(m, "p", gpuir_memref_type(GPUIR_BF16, 2, mq8, 0));
    gpuir_value h = gpuir_param(m, "h.1$", gpuir_tensor_type(GPUIR_F16, 0, NULL));
    uint16_t hbits[1] = {0x3C00};
    gpuir_value hc = gpuir_constant_dense(m, gpuir_tensor_type(GPUIR_F16, 0, NULL), hbits);
    gpuir_value hn = gpuir_neg(m, gpuir_mul(m, h, hc));
    gpuir_value pr[2] = {p, hn};
    gpuir_func_return(m, 2, pr);
    if (gpuir_ctx_result(ctx) != GPUIR_OK) {
        fprintf(stderr, "build_golden: %s\n", gpuir_ctx_error(ctx));
        return NULL;
    }
    return m;
}

static const char golden_text[] =
    "global @W : tensor<3x4xf32>\n"
    "\n"
    "func.func @main(%x: tensor<2x3xf32>, %b: tensor<4xf32>, %idx: tensor<2x?xi32>) -> "
    "(tensor<2x4xf32>, tensor<f32>, tensor<8xf32>) {\n"
    "  %0 = get_global {name = @W} : () -> tensor<3x4xf32>\n"
    "  %1 = matmul %x, %0 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>\n"
    "  %2 = matmul %0, %x {transpose_a = true, transpose_b = true} : "
    "(tensor<3x4xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>\n"
    "  %3 = add %1, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>\n"
    "  %4 = relu %3 : (tensor<2x4xf32>) -> tensor<2x4xf32>\n"
    "  %5 = reduce_mean %4 {axes = [0, 1]} : (tensor<2x4xf32>) -> tensor<f32>\n"
    "  %6 = transpose %2 {perm = [1, 0]} : (tensor<4x2xf32>) -> tensor<2x4xf32>\n"
    "  %7 = reshape %6 : (tensor<2x4xf32>) -> tensor<8xf32>\n"
    "  %8 = broadcast %b : (tensor<4xf32>) -> tensor<3x4xf32>\n"
    "  %9 = cast %idx : (tensor<2x?xi32>) -> tensor<2x?xf32>\n"
    "  %10 = softmax %4 {axis = 1} : (tensor<2x4xf32>) -> tensor<2x4xf32>\n"
    "  %11 = constant {value = 1.5} : () -> tensor<4xf32>\n"
    "  %12 = constant {value = dense<[1.0, -2.5, 0.25, 3.0]>} : () -> tensor<2x2xf32>\n"
    "  %13 = constant {value = dense<[1, -2, -9223372036854775807]>} : () -> tensor<3xi64>\n"
    "  %14 = sub %8, %11 : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>\n"
    "  %15 = reduce_max %14 {axes = [1], keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>\n"
    "  return %10, %5, %7 : tensor<2x4xf32>, tensor<f32>, tensor<8xf32>\n"
    "}\n"
    "\n"
    "func.func @none(%m: memref<4x8xf32, 3>) {\n"
    "  return\n"
    "}\n"
    "\n"
    "func.func @pass(%p: memref<?x8xbf16>, %h.1$: tensor<f16>) -> (memref<?x8xbf16>, tensor<f16>) {\n"
    "  %0 = constant {value = dense<[1.0]>} : () -> tensor<f16>\n"
    "  %1 = mul %h.1$, %0 : (tensor<f16>, tensor<f16>) -> tensor<f16>\n"
    "  %2 = neg %1 : (tensor<f16>) -> tensor<f16>\n"
    "  return %p, %2 : memref<?x8xbf16>, tensor<f16>\n"
    "}\n";

TEST(print_golden) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = build_golden(ctx);
    CHECK(m != NULL);
    if (m) {
        CHECK_RESULT(ctx, gpuir_module_verify(m), GPUIR_OK);
        char *t = gpuir_module_print(m);
        CHECK(text_eq(t, golden_text));
        gpuir_free(t);
    }
    gpuir_ctx_destroy(ctx);
}

TEST(print_deterministic) {
    gpuir_ctx *c1 = gpuir_ctx_make(NULL), *c2 = gpuir_ctx_make(NULL);
    gpuir_module *m1 = build_golden(c1), *m2 = build_golden(c2);
    gpuir_module *m3 = build_golden(c1);                 /* a second module in one ctx */
    CHECK(m1 && m2 && m3);
    if (m1 && m2 && m3) {
        char *t1 = gpuir_module_print(m1), *t2 = gpuir_module_print(m2);
        char *t3 = gpuir_module_print(m3), *t1b = gpuir_module_print(m1);
        CHECK(t1 && t2 && t3 && t1b);
        CHECK(t1 && t2 && strcmp(t1, t2) == 0);
        CHECK(t1 && t3 && strcmp(t1, t3) == 0);
        CHECK(t1 && t1b && strcmp(t1, t1b) == 0);       /* printing does not change it */
        gpuir_free(t1); gpuir_free(t2); gpuir_free(t3); gpuir_free(t1b);
    }
    gpuir_module_destroy(m3);
    gpuir_ctx_destroy(c1);
    gpuir_ctx_destroy(c2);
}

TEST(print_parse_fixed_point) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = build_golden(ctx);
    char *t1 = m ? gpuir_module_print(m) : NULL;
    CHECK(t1 != NULL);
    if (t1) {
        gpuir_module *p = gpuir_module_parse(ctx, t1, strlen(t1), "golden");
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
        char *t2 = p ? gpuir_module_print(p) : NULL;
        CHECK(t2 && strcmp(t1, t2) == 0);
        /* the parsed module answers introspection like the built one */
        if (p) {
            CHECK(gpuir_module_func_count(p) == 3);
            CHECK(gpuir_module_global_count(p) == 1);
            CHECK(gpuir_func_result_count(p, gpuir_module_find_func(p, "main")) == 3);
        }
        gpuir_free(t2);
        /* a non-terminated buffer: len is what counts */
        char *copy = (char *)malloc(strlen(t1) + 8);
        memcpy(copy, t1, strlen(t1));
        memcpy(copy + strlen(t1), "garbage", 7);
        gpuir_module *q = gpuir_module_parse(ctx, copy, strlen(t1), NULL);
        char *t3 = q ? gpuir_module_print(q) : NULL;
        CHECK(t3 && strcmp(t1, t3) == 0);
        gpuir_free(t3);
        /* the same bytes with the garbage are refused */
        CHECK(gpuir_module_parse(ctx, copy, strlen(t1) + 7, "g.gir") == NULL);
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_PARSE);
        CHECK(strncmp(gpuir_ctx_error(ctx), "g.gir:", 6) == 0);
        gpuir_ctx_clear_error(ctx);
        free(copy);
    }
    gpuir_free(t1);
    gpuir_ctx_destroy(ctx);
}

/* README: "Floats print with the fewest digits that read back exactly".
   For an f32 value that is the shortest decimal that rounds to the same
   float (0.1f prints "0.1", not 0.100000001 or 0.10000000149011612). */
TEST(print_float_fewest_digits) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    int64_t d1[1] = {1}, d9[1] = {9};
    gpuir_func_begin(m, "f");
    gpuir_value c = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_F32, 1, d1), 0.1);
    float vals[9] = {0.1f, 0.0f, 1.0f / 3.0f, 16777216.0f, 0.0f, FLT_MAX, 123456.789f, 1e20f, -2.5e-5f};
    vals[1] = nextafterf(0.1f, 1.0f);
    vals[4] = nextafterf(0.0f, 1.0f);                /* smallest subnormal */
    gpuir_value d = gpuir_constant_dense(m, gpuir_tensor_type(GPUIR_F32, 1, d9), vals);
    gpuir_value r[2] = {c, d};
    gpuir_func_return(m, 2, r);
    char *t = gpuir_module_print(m);
    CHECK(t && strstr(t, "%0 = constant {value = 0.1} : () -> tensor<1xf32>\n") != NULL);
    CHECK(t && strstr(t, "{value = dense<[0.1, 0.10000001, 0.33333334, 16777216.0, 1e-45, "
                         "3.4028235e+38, 123456.79, 1e+20, -2.5e-05]>}") != NULL);
    if (t && !strstr(t, "0.33333334,")) fprintf(stderr, "%s", t);
    /* and they read back to the same bits */
    gpuir_module *p = t ? gpuir_module_parse(ctx, t, strlen(t), "p") : NULL;
    char *t2 = p ? gpuir_module_print(p) : NULL;
    CHECK(t2 && strcmp(t, t2) == 0);
    gpuir_free(t2);
    gpuir_free(t);
    gpuir_ctx_destroy(ctx);
}

TEST(splat_values_round_to_dtype) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    int64_t d1[1] = {1};
    gpuir_func_begin(m, "f");
    gpuir_value v[6];
    v[0] = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_F16, 1, d1), 65519.0);
    v[1] = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_F16, 1, d1), 65520.0);
    v[2] = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_BF16, 1, d1), 1.0 + ldexp(1.0, -8) + ldexp(1.0, -40));
    v[3] = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_F32, 1, d1), -0.0);
    v[4] = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_I64, 1, d1), -3.0);
    v[5] = gpuir_constant_splat(m, gpuir_tensor_type(GPUIR_F16, 1, d1), 1.0 + ldexp(1.0, -11) + ldexp(1.0, -40));
    gpuir_func_return(m, 6, v);
    char *t = gpuir_module_print(m);
    CHECK(t && strstr(t, "%0 = constant {value = 65504.0} : () -> tensor<1xf16>\n"));
    CHECK(t && strstr(t, "%1 = constant {value = inf} : () -> tensor<1xf16>\n"));
    CHECK(t && strstr(t, "%2 = constant {value = 1.0078125} : () -> tensor<1xbf16>\n"));
    CHECK(t && strstr(t, "%3 = constant {value = -0.0} : () -> tensor<1xf32>\n"));
    CHECK(t && strstr(t, "%4 = constant {value = -3} : () -> tensor<1xi64>\n"));
    /* f16 1 + 2^-10 (rounded up from above the tie, directly from double):
       whatever digits print, they read back as 0x3C01 */
    const char *v5 = t ? strstr(t, "%5 = constant {value = ") : NULL;
    CHECK(v5 != NULL);
    if (v5) CHECK(gpuir_f32_to_f16((float)strtod(v5 + strlen("%5 = constant {value = "), NULL)) == 0x3C01);
    if (t && !strstr(t, "65504.0")) fprintf(stderr, "%s", t);
    gpuir_free(t);
    gpuir_ctx_destroy(ctx);
}

/* ---- introspection ---- */

TEST(introspection) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = build_golden(ctx);
    CHECK(m != NULL);
    if (!m) { gpuir_ctx_destroy(ctx); return; }
    char b[160];
    CHECK(gpuir_module_ctx(m) == ctx);
    CHECK(gpuir_module_func_count(m) == 3);
    gpuir_func f0 = gpuir_module_func_at(m, 0), f1 = gpuir_module_func_at(m, 1);
    gpuir_func f2 = gpuir_module_func_at(m, 2), fx = gpuir_module_func_at(m, 3);
    CHECK(strcmp(gpuir_func_name(m, f0), "main") == 0);
    CHECK(strcmp(gpuir_func_name(m, f1), "none") == 0);
    CHECK(strcmp(gpuir_func_name(m, f2), "pass") == 0);
    CHECK(fx.id == 0 && strcmp(gpuir_func_name(m, fx), "") == 0);
    CHECK(gpuir_module_find_func(m, "pass").id == f2.id);
    CHECK(gpuir_func_param_count(m, f0) == 3);
    CHECK(gpuir_func_param_count(m, f1) == 1);
    CHECK(gpuir_func_param_count(m, fx) == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_func_param_type(m, f0, 2), b, sizeof b), "tensor<2x?xi32>") == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_func_param_type(m, f1, 0), b, sizeof b), "memref<4x8xf32, 3>") == 0);
    gpuir_type pt = gpuir_func_param_type(m, f1, 0);
    CHECK(pt.kind == GPUIR_TYPE_MEMREF && pt.space == 3 && pt.rank == 2 && pt.dims[1] == 8);
    CHECK(gpuir_func_param_type(m, f0, 3).kind == GPUIR_TYPE_INVALID);
    CHECK(gpuir_func_param_type(m, fx, 0).kind == GPUIR_TYPE_INVALID);
    CHECK(gpuir_func_result_count(m, f0) == 3);
    CHECK(gpuir_func_result_count(m, f1) == 0);
    CHECK(gpuir_func_result_count(m, f2) == 2);
    CHECK(strcmp(gpuir_type_str(gpuir_func_result_type(m, f0, 0), b, sizeof b), "tensor<2x4xf32>") == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_func_result_type(m, f0, 1), b, sizeof b), "tensor<f32>") == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_func_result_type(m, f2, 0), b, sizeof b), "memref<?x8xbf16>") == 0);
    CHECK(gpuir_func_result_type(m, f0, 3).kind == GPUIR_TYPE_INVALID);
    CHECK(gpuir_func_result_type(m, f1, 0).kind == GPUIR_TYPE_INVALID);
    CHECK(gpuir_module_global_count(m) == 1);
    CHECK(strcmp(gpuir_module_global_name(m, 0), "W") == 0);
    CHECK(strcmp(gpuir_module_global_name(m, 1), "") == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_module_global_type(m, 0), b, sizeof b), "tensor<3x4xf32>") == 0);
    CHECK(gpuir_module_global_type(m, 1).kind == GPUIR_TYPE_INVALID);
    CHECK(!gpuir_module_global_bound(m, 0));
    CHECK(!gpuir_module_global_bound(m, 1));
    gpuir_array w, wrong;
    int64_t d34[2] = {3, 4}, d43[2] = {4, 3};
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &wrong, GPUIR_F32, 2, d43), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &wrong), GPUIR_ERR_SHAPE);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&wrong);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &wrong, GPUIR_F16, 2, d34), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &wrong), GPUIR_ERR_DTYPE);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&wrong);
    CHECK(!gpuir_module_global_bound(m, 0));
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &w, GPUIR_F32, 2, d34), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &w), GPUIR_OK);
    CHECK(gpuir_module_global_bound(m, 0));
    gpuir_array_release(&w);
    /* printing is unaffected by binding */
    char *t = gpuir_module_print(m);
    CHECK(text_eq(t, golden_text));
    gpuir_free(t);
    gpuir_value bad = {12345};
    CHECK(gpuir_value_type(m, bad).kind == GPUIR_TYPE_INVALID);
    gpuir_ctx_destroy(ctx);
}

/* ---- names and strings ---- */

TEST(type_str) {
    char b[64];
    int64_t d[3] = {4, DYN, 0};
    CHECK(strcmp(gpuir_type_str(gpuir_tensor_type(GPUIR_F32, 2, d), b, sizeof b), "tensor<4x?xf32>") == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_tensor_type(GPUIR_I64, 3, d), b, sizeof b), "tensor<4x?x0xi64>") == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_tensor_type(GPUIR_BF16, 0, NULL), b, sizeof b), "tensor<bf16>") == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_memref_type(GPUIR_F16, 2, d, 3), b, sizeof b), "memref<4x?xf16, 3>") == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_memref_type(GPUIR_I32, 1, d, 0), b, sizeof b), "memref<4xi32>") == 0);
    CHECK(strcmp(gpuir_type_str(gpuir_memref_type(GPUIR_F32, 1, d, 15), b, sizeof b), "memref<4xf32, 15>") == 0);
    gpuir_type inv;
    memset(&inv, 0, sizeof inv);
    CHECK(strcmp(gpuir_type_str(inv, b, sizeof b), "<invalid type>") == 0);
    /* a bad dtype prints as "invalid" rather than crashing */
    CHECK(strcmp(gpuir_type_str(gpuir_tensor_type((gpuir_dtype)77, 1, d), b, sizeof b), "tensor<4xinvalid>") == 0);
    /* truncated, always terminated */
    char small[8];
    memset(small, 'Z', sizeof small);
    CHECK(gpuir_type_str(gpuir_tensor_type(GPUIR_F32, 2, d), small, sizeof small) == small);
    CHECK(strcmp(small, "tensor<") == 0);
    char one[1] = {'Z'};
    gpuir_type_str(gpuir_tensor_type(GPUIR_F32, 2, d), one, 1);
    CHECK(one[0] == '\0');
    CHECK(gpuir_type_str(gpuir_tensor_type(GPUIR_F32, 2, d), NULL, 0) == NULL);
    /* the longest type: rank 8 of 19-digit dims fits the documented use */
    int64_t huge[8];
    for (int i = 0; i < 8; i++) huge[i] = INT64_MAX;
    char big[256];
    gpuir_type_str(gpuir_tensor_type(GPUIR_F32, 8, huge), big, sizeof big);
    CHECK(strlen(big) == strlen("tensor<>f32") + 8 * 20);
    /* equality */
    CHECK(gpuir_type_equal(gpuir_tensor_type(GPUIR_F32, 2, d), gpuir_tensor_type(GPUIR_F32, 2, d)));
    CHECK(!gpuir_type_equal(gpuir_tensor_type(GPUIR_F32, 2, d), gpuir_memref_type(GPUIR_F32, 2, d, 0)));
    CHECK(!gpuir_type_equal(gpuir_memref_type(GPUIR_F32, 2, d, 1), gpuir_memref_type(GPUIR_F32, 2, d, 0)));
    CHECK(!gpuir_type_equal(gpuir_tensor_type(GPUIR_F32, 2, d), gpuir_tensor_type(GPUIR_F32, 3, d)));
    CHECK(!gpuir_type_equal(gpuir_tensor_type(GPUIR_F32, 2, d), gpuir_tensor_type(GPUIR_F16, 2, d)));
}

TEST(op_dtype_result_names) {
    static const char *const ops[] = {
        "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu",
        "round_tf32", "add", "sub", "mul", "div", "max", "min", "pow", "matmul", "reduce_sum", "reduce_max",
        "reduce_mean", "transpose", "reshape", "broadcast", "cast", "constant", "get_global",
        "softmax", "return"};
    CHECK(GPUIR_OP_COUNT == 43);
    CHECK(strcmp(gpuir_op_name(GPUIR_OP_MEMREF_RESHAPE), "memref.reshape") == 0);
    CHECK(strcmp(gpuir_op_name(GPUIR_OP_ATTENTION), "attention") == 0);
    for (int k = 1; k < GPUIR_OP_COUNT && k <= 31; k++)
        if (strcmp(gpuir_op_name((gpuir_op_kind)k), ops[k - 1]) != 0) {
            fprintf(stderr, "op %d: %s, want %s\n", k, gpuir_op_name((gpuir_op_kind)k), ops[k - 1]);
            check__failed = 1;
        }
    CHECK(strcmp(gpuir_op_name(GPUIR_OP_MATMUL), "matmul") == 0);
    CHECK(strcmp(gpuir_op_name(GPUIR_OP_GET_GLOBAL), "get_global") == 0);
    CHECK(strcmp(gpuir_op_name(GPUIR_OP_INVALID), "invalid") == 0);
    CHECK(strcmp(gpuir_op_name(GPUIR_OP_COUNT), "invalid") == 0);
    CHECK(strcmp(gpuir_op_name((gpuir_op_kind)-1), "invalid") == 0);
    CHECK(strcmp(gpuir_op_name((gpuir_op_kind)1000), "invalid") == 0);

    CHECK(strcmp(gpuir_dtype_name(GPUIR_F32), "f32") == 0 && gpuir_dtype_size(GPUIR_F32) == 4);
    CHECK(strcmp(gpuir_dtype_name(GPUIR_F16), "f16") == 0 && gpuir_dtype_size(GPUIR_F16) == 2);
    CHECK(strcmp(gpuir_dtype_name(GPUIR_BF16), "bf16") == 0 && gpuir_dtype_size(GPUIR_BF16) == 2);
    CHECK(strcmp(gpuir_dtype_name(GPUIR_I32), "i32") == 0 && gpuir_dtype_size(GPUIR_I32) == 4);
    CHECK(strcmp(gpuir_dtype_name(GPUIR_I64), "i64") == 0 && gpuir_dtype_size(GPUIR_I64) == 8);
    CHECK(strcmp(gpuir_dtype_name(GPUIR_DTYPE_INVALID), "invalid") == 0);
    CHECK(gpuir_dtype_size(GPUIR_DTYPE_INVALID) == 0);
    CHECK(strcmp(gpuir_dtype_name(GPUIR_DTYPE_COUNT), "invalid") == 0);
    CHECK(gpuir_dtype_size(GPUIR_DTYPE_COUNT) == 0);
    CHECK(gpuir_dtype_size((gpuir_dtype)-3) == 0);
    CHECK(gpuir_dtype_is_float(GPUIR_F32) && gpuir_dtype_is_float(GPUIR_F16) &&
          gpuir_dtype_is_float(GPUIR_BF16));
    CHECK(!gpuir_dtype_is_float(GPUIR_I32) && !gpuir_dtype_is_float(GPUIR_I64) &&
          !gpuir_dtype_is_float(GPUIR_DTYPE_INVALID) && !gpuir_dtype_is_float(GPUIR_DTYPE_COUNT));

    static const char *const names[] = {
        "GPUIR_OK", "GPUIR_ERR_INVALID_ARGUMENT", "GPUIR_ERR_OUT_OF_MEMORY", "GPUIR_ERR_LIMIT",
        "GPUIR_ERR_PARSE", "GPUIR_ERR_SHAPE", "GPUIR_ERR_DTYPE", "GPUIR_ERR_ATTRIBUTE",
        "GPUIR_ERR_VERIFY", "GPUIR_ERR_NOT_FOUND", "GPUIR_ERR_IO", "GPUIR_ERR_NPY",
        "GPUIR_ERR_MISMATCH", "GPUIR_ERR_UNAVAILABLE", "GPUIR_ERR_COMPILE", "GPUIR_ERR_CUDA"};
    CHECK(GPUIR_RESULT_COUNT == 16);
    for (int r = 0; r < GPUIR_RESULT_COUNT && r < 16; r++) {
        CHECK(strcmp(gpuir_result_name((gpuir_result)r), names[r]) == 0);
        CHECK(gpuir_result_string((gpuir_result)r)[0] != '\0');
        for (int s = 0; s < r; s++)
            CHECK(strcmp(gpuir_result_string((gpuir_result)r), gpuir_result_string((gpuir_result)s)) != 0);
    }
    CHECK(strcmp(gpuir_result_string(GPUIR_OK), "ok") == 0);
    CHECK(strcmp(gpuir_result_string(GPUIR_ERR_PARSE), "syntax error") == 0);
    CHECK(strcmp(gpuir_result_string(GPUIR_ERR_NPY), "malformed or unsupported .npy data") == 0);
    CHECK(strcmp(gpuir_result_name(GPUIR_RESULT_COUNT), "GPUIR_(unknown)") == 0);
    CHECK(strcmp(gpuir_result_name((gpuir_result)-1), "GPUIR_(unknown)") == 0);
    CHECK(strcmp(gpuir_result_string(GPUIR_RESULT_COUNT), "unknown result") == 0);
}

/* The version macros, the string and gpuir_version() say the same. */
TEST(version_agrees) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", GPUIR_VERSION_MAJOR, GPUIR_VERSION_MINOR, GPUIR_VERSION_PATCH);
    CHECK(strcmp(want, GPUIR_VERSION_STRING) == 0);
    CHECK(strcmp(gpuir_version(), GPUIR_VERSION_STRING) == 0);
    CHECK(GPUIR_VERSION_NUMBER == GPUIR_VERSION_MAJOR * 10000 + GPUIR_VERSION_MINOR * 100 + GPUIR_VERSION_PATCH);
    CHECK(GPUIR_VERSION_NUMBER >= 200);                   /* 0.2.0: the first release with a changelog */
}

/* ---- arrays ---- */

static void fill_f32(gpuir_array *a, const float *v) {
    memcpy(a->data, v, gpuir_array_count(a) * 4);
}

TEST(array_compare) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_array g, w;
    int64_t d[2] = {2, 3};
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &g, GPUIR_F32, 2, d), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &w, GPUIR_F32, 2, d), GPUIR_OK);
    float wv[6] = {1.0f, -1.0f, 0.0f, NAN, INFINITY, -INFINITY};
    float gv[6] = {1.75f, -0.25f, 0.25f, NAN, INFINITY, -INFINITY};
    fill_f32(&w, wv);
    fill_f32(&g, gv);
    /* tol for want 1 and -1: 0.25 + 0.5 * 1 = 0.75; for 0: 0.25. All exactly
       representable, so the boundary is exact: <= passes. */
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 0.5, 0.25), GPUIR_OK);
    gpuir_array_set(&g, 0, nextafterf(1.75f, 2.0f));
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 0.5, 0.25), GPUIR_ERR_MISMATCH);
    CHECK(strstr(gpuir_ctx_error(ctx), "[0, 0]") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_set(&g, 0, 0.25);                          /* 1 - 0.75 */
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 0.5, 0.25), GPUIR_OK);
    gpuir_array_set(&g, 1, -1.75);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 0.5, 0.25), GPUIR_OK);
    gpuir_array_set(&g, 1, nextafterf(-1.75f, -2.0f));
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 0.5, 0.25), GPUIR_ERR_MISMATCH);
    CHECK(strstr(gpuir_ctx_error(ctx), "[0, 1]") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_set(&g, 1, -1.0);
    /* rtol is relative to want, not got */
    gpuir_array_set(&g, 2, -0.25);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 0.5, 0.25), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 100.0, 0.0), GPUIR_ERR_MISMATCH);
    CHECK(strstr(gpuir_ctx_error(ctx), "[0, 2]") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_set(&g, 2, 0.0);
    /* exact compare with zero tolerances */
    fill_f32(&g, wv);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 0.0, 0.0), GPUIR_OK);
    /* NaN matches only NaN */
    gpuir_array_set(&g, 3, 1.0);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 1e9, 1e9), GPUIR_ERR_MISMATCH);
    CHECK(strstr(gpuir_ctx_error(ctx), "[1, 0]") != NULL);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &w, &g, 1e9, 1e9), GPUIR_ERR_MISMATCH);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_set(&g, 3, NAN);
    /* inf only matches the same inf, whatever the tolerance */
    gpuir_array_set(&g, 4, 3e38);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 1e9, 1e9), GPUIR_ERR_MISMATCH);
    CHECK(strstr(gpuir_ctx_error(ctx), "[1, 1]") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_set(&g, 4, -INFINITY);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 1e9, 1e9), GPUIR_ERR_MISMATCH);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_set(&g, 4, INFINITY);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, 0, 0), GPUIR_OK);
    /* an infinite rtol takes any finite value, a want of 0 too (inf * 0
       was NaN: two zeros did not match) */
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &g, &w, INFINITY, 0), GPUIR_OK);

    /* shape, rank and dtype mismatches */
    gpuir_array s, r, t;
    int64_t d32[2] = {3, 2}, d6[1] = {6};
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &s, GPUIR_F32, 2, d32), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &r, GPUIR_F32, 1, d6), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &t, GPUIR_F16, 2, d), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &s, &w, 1e9, 1e9), GPUIR_ERR_MISMATCH);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &r, &w, 1e9, 1e9), GPUIR_ERR_MISMATCH);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &t, &w, 1e9, 1e9), GPUIR_ERR_MISMATCH);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&s);
    gpuir_array_release(&r);
    gpuir_array_release(&t);

    /* ints are exact whatever the tolerance; i64 beyond 2^53 too */
    gpuir_array ia, ib, la, lb;
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &ia, GPUIR_I32, 1, d6), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &ib, GPUIR_I32, 1, d6), GPUIR_OK);
    gpuir_array_set(&ia, 5, 5);
    gpuir_array_set(&ib, 5, 6);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &ia, &ib, 1.0, 10.0), GPUIR_ERR_MISMATCH);
    CHECK(strstr(gpuir_ctx_error(ctx), "[5]") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_set(&ib, 5, 5);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &ia, &ib, 0, 0), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &la, GPUIR_I64, 1, d6), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &lb, GPUIR_I64, 1, d6), GPUIR_OK);
    int64_t x = ((int64_t)1 << 60) + 1, y = (int64_t)1 << 60;
    memcpy(la.data, &x, 8);
    memcpy(lb.data, &y, 8);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &la, &lb, 1.0, 1.0), GPUIR_ERR_MISMATCH);
    /* named in full (to 9 digits the two read the same) */
    CHECK(strstr(gpuir_ctx_error(ctx), "got 1152921504606846977, expected 1152921504606846976") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&ia); gpuir_array_release(&ib);
    gpuir_array_release(&la); gpuir_array_release(&lb);

    /* f16 compares the rounded values */
    gpuir_array ha, hb;
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &ha, GPUIR_F16, 1, d6), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &hb, GPUIR_F16, 1, d6), GPUIR_OK);
    gpuir_array_set(&ha, 0, 1.0);
    gpuir_array_set(&hb, 0, 1.0 + ldexp(1.0, -10));
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &ha, &hb, 0, ldexp(1.0, -10)), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &ha, &hb, 0, ldexp(1.0, -11)), GPUIR_ERR_MISMATCH);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&ha); gpuir_array_release(&hb);

    double rtol = -1, atol = -1;
    gpuir_dtype_tolerance(GPUIR_F32, &rtol, &atol);
    CHECK(rtol == 1e-5 && atol == 1e-6);
    gpuir_dtype_tolerance(GPUIR_I32, &rtol, &atol);
    CHECK(rtol == 0 && atol == 0);
    gpuir_array_release(&g);
    gpuir_array_release(&w);
    gpuir_ctx_destroy(ctx);
}

TEST(array_fill_random) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    static const gpuir_dtype dts[] = {GPUIR_F32, GPUIR_F16, GPUIR_BF16, GPUIR_I32, GPUIR_I64};
    int64_t d[2] = {16, 33};
    for (int k = 0; k < 5; k++) {
        gpuir_array a, b, c;
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, dts[k], 2, d), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &b, dts[k], 2, d), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &c, dts[k], 2, d), GPUIR_OK);
        gpuir_array_fill_random(&a, 42);
        gpuir_array_fill_random(&b, 42);
        gpuir_array_fill_random(&c, 43);
        size_t n = gpuir_array_count(&a), bytes = n * gpuir_dtype_size(dts[k]);
        CHECK(n == 16 * 33);
        CHECK(memcmp(a.data, b.data, bytes) == 0);
        CHECK(memcmp(a.data, c.data, bytes) != 0);
        size_t same = 0, distinct_min = 0, distinct_max = 0;
        double lo = 1e9, hi = -1e9;
        for (size_t i = 0; i < n; i++) {
            double v = gpuir_array_get(&a, i);
            same += v == gpuir_array_get(&c, i);
            if (v < lo) lo = v;
            if (v > hi) hi = v;
            if (!gpuir_dtype_is_float(dts[k]) && v != floor(v)) check__failed = 1;
        }
        distinct_min = lo < 0;
        distinct_max = hi > 0;
        CHECK(distinct_min && distinct_max);
        if (gpuir_dtype_is_float(dts[k])) {
            CHECK(lo >= -1.0 && hi <= 1.0);         /* [-1, 1), rounding may reach 1 in f16 */
            CHECK(lo < -0.9 && hi > 0.9);
            CHECK(same < n / 4);
        } else {
            CHECK(lo >= -16 && hi <= 16);
            CHECK(lo == -16 && hi == 16);          /* 528 draws from 33 values hit both ends */
            CHECK(same < n / 4);
        }
        gpuir_array_release(&a);
        gpuir_array_release(&b);
        gpuir_array_release(&c);
    }
    /* a prefix does not depend on the array's size */
    gpuir_array s, l;
    int64_t d5[1] = {5}, d50[1] = {50};
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &s, GPUIR_F32, 1, d5), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &l, GPUIR_F32, 1, d50), GPUIR_OK);
    gpuir_array_fill_random(&s, 7);
    gpuir_array_fill_random(&l, 7);
    CHECK(memcmp(s.data, l.data, 20) == 0);
    gpuir_array_release(&s);
    gpuir_array_release(&l);
    gpuir_ctx_destroy(ctx);
}

TEST(parse_errors_have_codes) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    static const struct { const char *text; gpuir_result want; } cases[] = {
        {"func.func @f( {", GPUIR_ERR_PARSE},
        {"func.func @f() { return %x }", GPUIR_ERR_PARSE},
        {"func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
         "  %0 = get_global {name = @nope} : () -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}",
         GPUIR_ERR_NOT_FOUND},
        {"func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> { return %x : tensor<2xf32> }",
         GPUIR_ERR_VERIFY},
        {"func.func @f(%x: tensor<2x1x1x1x1x1x1x1x1xf32>) { return }", GPUIR_ERR_LIMIT},
        {"func.func @f(%x: tensor<2xf32>) {\n  %0 = add %x, %x {foo = 1} : (tensor<2xf32>, "
         "tensor<2xf32>) -> tensor<2xf32>\n  return\n}", GPUIR_ERR_ATTRIBUTE},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gpuir_module *m = gpuir_module_parse(ctx, cases[k].text, strlen(cases[k].text), "t.gir");
        CHECK(m == NULL);
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), cases[k].want);
        CHECK(strncmp(gpuir_ctx_error(ctx), "t.gir:", 6) == 0);
        gpuir_ctx_clear_error(ctx);
    }
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(infer_unary_binary);
    RUN(infer_matmul);
    RUN(infer_matmul_k_slices);
    RUN(matmul_wgmma_flags);
    RUN(infer_reduce_transpose_reshape_broadcast_cast_softmax);
    RUN(infer_constants_and_globals);
    RUN(builder_structure_errors);
    RUN(print_golden);
    RUN(print_deterministic);
    RUN(print_parse_fixed_point);
    RUN(print_float_fewest_digits);
    RUN(splat_values_round_to_dtype);
    RUN(introspection);
    RUN(type_str);
    RUN(op_dtype_result_names);
    RUN(array_compare);
    RUN(array_fill_random);
    RUN(parse_errors_have_codes);
    RUN(version_agrees);
    return CHECK_EXIT();
}

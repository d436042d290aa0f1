/* Fused attention: the attention op's checks (errors naming the operand),
   and NVRTC compiling every fused kernel of tests/ir/run/attention.gir
   (f16 and bf16, head dims 64 and 128, causal, masks) for sm_80 and sm_90
   with 0 spilled bytes, no local memory, on mma.sync, ldmatrix and
   cp.async (no GPU needed; SKIP without libnvrtc). The kernels' results
   are checked on the emulator by tests/ir/run/attention.gir. */
#define _POSIX_C_SOURCE 200809L
#include "../../gpuir.h"
#include "../check.h"

#include <stdlib.h>

/* Parses quietly: several cases expect a parse error. */
static gpuir_module *parse_quiet(gpuir_ctx *ctx, const char *text) { return parse_as(ctx, text, "test"); }

/* Parses `op` (the attention line) in a function of q, k, v and mask. */
static gpuir_result parse_attention(const char *op, char *error, size_t size) {
    char text[1536];
    snprintf(text, sizeof text,
             "func.func @f(%%q: tensor<2x17x64xf16>, %%k: tensor<2x20x64xf16>, %%v: tensor<2x20x64xf16>, "
             "%%m: tensor<17x20xf16>, %%w: tensor<2x20x32xf16>, %%b: tensor<2x20x64xbf16>, %%k1: tensor<1x20x64xf16>, "
             "%%v2: tensor<20x64xf16>, %%k3: tensor<3x20x64xf16>, %%m1: tensor<2x1x20xf16>, %%m2: tensor<17x1xf16>, "
             "%%m3: tensor<3x17x20xf16>) -> tensor<2x17x64xf16> {\n"
             "  %%o = attention %s -> tensor<2x17x64xf16>\n  return %%o : tensor<2x17x64xf16>\n}\n", op);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse_quiet(ctx, text);
    gpuir_result r = m ? GPUIR_OK : gpuir_ctx_result(ctx);
    snprintf(error, size, "%s", gpuir_ctx_error(ctx));
    gpuir_ctx_destroy(ctx);
    return r;
}

/* The attention op's operands: 3 or 4, one dtype, shapes that fit. */
TEST(attention_op_checks_its_operands) {
    char e[512];
    const char *qkv = "(tensor<2x17x64xf16>, tensor<2x20x64xf16>, tensor<2x20x64xf16>";
    char op[512];
    snprintf(op, sizeof op, "%%q, %%k, %%v {scale = 0.125, causal = true} : %s)", qkv);
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_OK);
    snprintf(op, sizeof op, "%%q, %%k, %%v, %%m : %s, tensor<17x20xf16>)", qkv);
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_OK);
    /* k and v broadcast over q's batch (shared by heads: 1, or absent); the mask over the scores */
    snprintf(op, sizeof op, "%%q, %%k1, %%v2 : (tensor<2x17x64xf16>, tensor<1x20x64xf16>, tensor<20x64xf16>)");
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_OK);
    snprintf(op, sizeof op, "%%q, %%k3, %%v : (tensor<2x17x64xf16>, tensor<3x20x64xf16>, tensor<2x20x64xf16>)");
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_ERR_SHAPE && strstr(e, "attention: k tensor<3x20x64xf16>") &&
          strstr(e, "batch dims q's or 1"));
    snprintf(op, sizeof op, "%%q, %%k, %%v, %%m1 : %s, tensor<2x1x20xf16>)", qkv);
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_OK);
    snprintf(op, sizeof op, "%%q, %%k, %%v, %%m2 : %s, tensor<17x1xf16>)", qkv);
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_OK);
    snprintf(op, sizeof op, "%%q, %%k, %%v, %%m3 : %s, tensor<3x17x20xf16>)", qkv);
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_ERR_SHAPE &&
          strstr(e, "mask tensor<3x17x20xf16> does not broadcast to the scores tensor<2x17x20xf16>"));
    snprintf(op, sizeof op, "%%q, %%k : (tensor<2x17x64xf16>, tensor<2x20x64xf16>)");
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_ERR_VERIFY && strstr(e, "expected 3 or 4 operands"));
    snprintf(op, sizeof op, "%%q, %%k, %%w : (tensor<2x17x64xf16>, tensor<2x20x64xf16>, tensor<2x20x32xf16>)");
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_ERR_SHAPE && strstr(e, "result type"));
    snprintf(op, sizeof op, "%%q, %%v, %%k, %%q : %s, tensor<2x17x64xf16>)", qkv);
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_ERR_SHAPE && strstr(e, "mask tensor<2x17x64xf16>"));
    snprintf(op, sizeof op, "%%q, %%q, %%v : (tensor<2x17x64xf16>, tensor<2x17x64xf16>, tensor<2x20x64xf16>)");
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_ERR_SHAPE && strstr(e, "attention: v tensor<2x20x64xf16>"));
    snprintf(op, sizeof op, "%%q, %%b, %%v : (tensor<2x17x64xf16>, tensor<2x20x64xbf16>, tensor<2x20x64xf16>)");
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_ERR_DTYPE);
    snprintf(op, sizeof op, "%%q, %%k, %%v {scale = 1} : %s)", qkv);
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_ERR_ATTRIBUTE && strstr(e, "'scale' must be a float"));
    snprintf(op, sizeof op, "%%q, %%k, %%v {axis = 1} : %s)", qkv);
    CHECK(parse_attention(op, e, sizeof e) == GPUIR_ERR_ATTRIBUTE && strstr(e, "unknown attribute 'axis'"));
}

/* q of rank 1 is a shape error; causal attention of dynamic lengths the
   fused kernel cannot run (f32 at head dim 300, past the f32 kernel's
   registers; head dim 128 on sm_75, whose shared memory its tiles do not
   fit: no static mask for the unfused form) fails in decompose, at the
   op's location, saying why the kernel cannot run it. At head dim 64 the
   same f32 attention lowers (attention.simt.m64). */
TEST(attention_errors_name_the_operand_and_place) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *rank1 = "func.func @a(%q: tensor<64xf16>) -> tensor<64xf16> {\n"
                        "  %o = attention %q, %q, %q : (tensor<64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<64xf16>\n"
                        "  return %o : tensor<64xf16>\n}\n";
    CHECK(parse_quiet(ctx, rank1) == NULL && gpuir_ctx_result(ctx) == GPUIR_ERR_SHAPE);
    CHECK(strstr(gpuir_ctx_error(ctx), "test:2:3") && strstr(gpuir_ctx_error(ctx), "q tensor<64xf16> needs rank >= 2"));
    gpuir_ctx_clear_error(ctx);
    const char *dynamic = "func.func @b(%q: tensor<?x300xf32>) -> tensor<?x300xf32> {\n"
                          "  %o = attention %q, %q, %q {causal = true} : (tensor<?x300xf32>, tensor<?x300xf32>, "
                          "tensor<?x300xf32>) -> tensor<?x300xf32>\n  return %o : tensor<?x300xf32>\n}\n";
    gpuir_module *m = parse_quiet(ctx, dynamic);
    CHECK(m != NULL);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL), GPUIR_ERR_SHAPE);
    CHECK(strstr(gpuir_ctx_error(ctx), "test:2:3") && strstr(gpuir_ctx_error(ctx), "dynamic sequence lengths"));
    CHECK(strstr(gpuir_ctx_error(ctx), "it takes f32 head dims (q's and v's) 1 to 256"));
    gpuir_ctx_clear_error(ctx);
    const char *d64 = "func.func @b(%q: tensor<?x64xf32>) -> tensor<?x64xf32> {\n"
                      "  %o = attention %q, %q, %q {causal = true} : (tensor<?x64xf32>, tensor<?x64xf32>, "
                      "tensor<?x64xf32>) -> tensor<?x64xf32>\n  return %o : tensor<?x64xf32>\n}\n";
    m = parse_quiet(ctx, d64);
    CHECK(m != NULL);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL), GPUIR_OK);
    const char *sm75 = "func.func @c(%q: tensor<2x?x128xf16>) -> tensor<2x?x128xf16> {\n"
                       "  %o = attention %q, %q, %q {causal = true} : (tensor<2x?x128xf16>, tensor<2x?x128xf16>, "
                       "tensor<2x?x128xf16>) -> tensor<2x?x128xf16>\n  return %o : tensor<2x?x128xf16>\n}\n";
    m = parse_quiet(ctx, sm75);
    CHECK(m != NULL);
    gpuir_target t75 = {75, 40};
    gpuir_module_set_target(m, t75);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL), GPUIR_ERR_SHAPE);
    CHECK(strstr(gpuir_ctx_error(ctx), "test:2:3") && strstr(gpuir_ctx_error(ctx), "do not fit the target's shared memory"));
    gpuir_ctx_destroy(ctx);
}

/* Runs function f of `text` on the emulator and the interpreter with q
   [2, Sq, 64], k and v [2, Sk, 64] and a mask [1, Sk] of random values,
   and compares; returns the program's result (its error in ctx). */
static gpuir_result run_lengths(gpuir_ctx *ctx, gpuir_program *p, gpuir_module *ref, int64_t Sq, int64_t Sk,
                                int64_t Sv, int64_t Sm) {
    const int64_t dims[4][3] = {{2, Sq, 64}, {2, Sk, 64}, {2, Sv, 64}, {1, Sm, 0}};
    gpuir_array in[4], want, got;
    memset(&want, 0, sizeof want), memset(&got, 0, sizeof got);
    for (int i = 0; i < 4; i++) {
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in[i], GPUIR_F16, i == 3 ? 2 : 3, dims[i]), GPUIR_OK);
        gpuir_array_fill_random(&in[i], 7 + (uint64_t)i);
    }
    gpuir_result r = gpuir_program_run(p, "f", 4, in, 1, &got);
    if (!r) {
        CHECK_RESULT(ctx, gpuir_ref_run(ref, "f", 4, in, 1, &want), GPUIR_OK);
        double rtol, atol;
        gpuir_backend_tolerance(GPUIR_BACKEND_EMU, GPUIR_F16, &rtol, &atol);
        CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got, &want, rtol, atol), GPUIR_OK);
    }
    for (int i = 0; i < 4; i++) gpuir_array_release(&in[i]);
    gpuir_array_release(&want);
    gpuir_array_release(&got);
    return r;
}

/* One compiled program of dynamic lengths (a causal attention with a
   padding mask over the keys, fused: one kernel; its diagonal 3 keys
   right, or bottom-right and 2 keys left) runs at queries and keys of
   different lengths, none among them (no keys: 0); lengths its operands
   disagree on (k's and v's, the mask's keys and k's) are shape errors
   naming the op and both sizes, and the program runs on after. */
TEST(dynamic_attention_runs_at_any_lengths_and_checks_them) {
    static const char *const attrs[2] = {"causal_offset = 3", "causal_offset = -2, causal_bottom_right = true"};
    for (int a = 0; a < 2; a++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "func.func @f(%%q: tensor<2x?x64xf16>, %%k: tensor<2x?x64xf16>, %%v: tensor<2x?x64xf16>, "
                 "%%m: tensor<1x?xf16>) -> tensor<2x?x64xf16> {\n"
                 "  %%o = attention %%q, %%k, %%v, %%m {scale = 0.125, causal = true, %s} : (tensor<2x?x64xf16>, "
                 "tensor<2x?x64xf16>, tensor<2x?x64xf16>, tensor<1x?xf16>) -> tensor<2x?x64xf16>\n"
                 "  return %%o : tensor<2x?x64xf16>\n}\n", attrs[a]);
        gpuir_ctx *ctx = gpuir_ctx_make(NULL);
        gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "t");
        gpuir_module *ref = gpuir_module_parse(ctx, text, strlen(text), "t");
        gpuir_program_desc d;
        memset(&d, 0, sizeof d);
        d.backend = GPUIR_BACKEND_EMU;
        gpuir_program *p = m ? gpuir_program_make(m, &d) : NULL;
        CHECK(p != NULL && ref != NULL);
        if (!p || !ref) { gpuir_ctx_destroy(ctx); return; }
        CHECK(strstr(gpuir_program_source(p), "gpuir_k_f_k0(") && !strstr(gpuir_program_source(p), "gpuir_k_f_k1("));
        static const int64_t lengths[][2] = {{33, 100}, {100, 1}, {1, 130}, {130, 64}, {0, 5}, {5, 0}};
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
            int64_t Sq = lengths[i][0], Sk = lengths[i][1];
            CHECK_RESULT(ctx, run_lengths(ctx, p, ref, Sq, Sk, Sk, Sk), GPUIR_OK);
        }
        CHECK(run_lengths(ctx, p, ref, 20, 10, 11, 10) == GPUIR_ERR_SHAPE);
        CHECK(strstr(gpuir_ctx_error(ctx), "dynamic sizes disagree: attention: dim 1") &&
              strstr(gpuir_ctx_error(ctx), " is 10") && strstr(gpuir_ctx_error(ctx), " is 11"));
        gpuir_ctx_clear_error(ctx);
        CHECK(run_lengths(ctx, p, ref, 20, 10, 10, 9) == GPUIR_ERR_SHAPE);
        CHECK(strstr(gpuir_ctx_error(ctx), "dynamic sizes disagree: attention:") && strstr(gpuir_ctx_error(ctx), " is 9"));
        gpuir_ctx_clear_error(ctx);
        CHECK_RESULT(ctx, run_lengths(ctx, p, ref, 20, 10, 10, 10), GPUIR_OK);
        gpuir_program_destroy(p);
        gpuir_ctx_destroy(ctx);
    }
}

/* The default pipeline runs the attention pass before split-k and fuse. */
TEST(attention_pass_is_in_the_default_pipeline) {
    bool listed = false;
    for (size_t i = 0; i < gpuir_pass_count(); i++) listed |= strcmp(gpuir_pass_name(i), "attention") == 0;
    CHECK(listed);
    CHECK(strstr(GPUIR_DEFAULT_PIPELINE, "canonicalize,attention,split-k,stage-matmul,fuse") != NULL);
}

/* The emulator holds a kernel to its target's shared memory per block,
   as that GPU would: the 128-row form at head dim 128 (102 KiB) forced on
   sm_86 (99 KiB) fails to launch, naming both sizes; on sm_90 it runs, and
   left to configure, sm_86 takes the 64-row form. */
TEST(the_emulator_has_the_targets_shared_memory) {
    static const char text[] =
        "func.func @f(%q: tensor<1x17x128xbf16>, %k: tensor<1x20x128xbf16>) -> tensor<1x17x128xbf16> {\n"
        "  %o = attention %q, %k, %k {scale = 0.0883883476, form = \"attention.fa2.m128\"} : (tensor<1x17x128xbf16>, "
        "tensor<1x20x128xbf16>, tensor<1x20x128xbf16>) -> tensor<1x17x128xbf16>\n"
        "  return %o : tensor<1x17x128xbf16>\n}\n";
    const int sms[3] = {86, 90, 86};
    for (int i = 0; i < 3; i++) {
        gpuir_ctx *ctx = gpuir_ctx_make(NULL);
        const char *t = text;
        char unforced[sizeof text];
        if (i == 2) {                    /* configure's own choice */
            snprintf(unforced, sizeof unforced, "%s", text);
            char *f = strstr(unforced, ", form = ");
            if (f) memmove(f, f + strlen(", form = \"attention.fa2.m128\""), strlen(f + strlen(", form = \"attention.fa2.m128\"")) + 1);
            t = unforced;
        }
        gpuir_module *m = gpuir_module_parse(ctx, t, strlen(t), "t");
        gpuir_target target = {sms[i], 132};
        gpuir_module_set_target(m, target);
        gpuir_program_desc d;
        memset(&d, 0, sizeof d);
        d.backend = GPUIR_BACKEND_EMU;
        gpuir_program *p = gpuir_program_make(m, &d);
        CHECK(p != NULL);
        gpuir_array in[2], out;
        const int64_t qd[3] = {1, 17, 128}, kd[3] = {1, 20, 128};
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in[0], GPUIR_BF16, 3, qd), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in[1], GPUIR_BF16, 3, kd), GPUIR_OK);
        gpuir_array_fill_random(&in[0], 1);
        gpuir_array_fill_random(&in[1], 2);
        memset(&out, 0, sizeof out);
        gpuir_result r = p ? gpuir_program_run(p, "f", 2, in, 1, &out) : gpuir_ctx_result(ctx);
        if (i == 0)
            CHECK(r == GPUIR_ERR_LIMIT && strstr(gpuir_ctx_error(ctx), "104448 bytes of shared memory") &&
                  strstr(gpuir_ctx_error(ctx), "allows 101376"));
        else CHECK_RESULT(ctx, r, GPUIR_OK);
        if (i == 2) CHECK(p && strstr(gpuir_program_source(p), "128 threads per block") != NULL);  /* 64 rows */
        gpuir_array_release(&in[0]);
        gpuir_array_release(&in[1]);
        gpuir_array_release(&out);
        gpuir_ctx_destroy(ctx);
    }
}

/* Whether the PTX of entry `name` (up to the next entry) uses local memory. */
static bool entry_uses_local(const char *ptx, const char *name) {
    char head[128];
    snprintf(head, sizeof head, ".visible .entry %s(", name);
    const char *at = ptx ? strstr(ptx, head) : NULL, *next = at ? strstr(at + 1, ".visible .entry") : NULL;
    const char *local = at ? strstr(at, ".local") : NULL;
    return !at || (local && (!next || local < next));
}

/* The module of test file `path` after the default pipeline, in a fresh
   context (*ctx; NULL module on a failure, checked here). */
static gpuir_module *lowered_file(const char *path, gpuir_ctx **ctx) {
    *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_parse_file(*ctx, path);
    CHECK(m != NULL);
    CHECK_RESULT(*ctx, gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL), GPUIR_OK);
    return m;
}

/* Every fused kernel of the run test compiles for sm_80 and sm_90: no
   spills, no local memory, tensor cores (the f32 kernels on the FMA
   units: no local memory either, at head dim 256 too). */
TEST(attention_kernels_compile_without_spills) {
    gpuir_ctx *ctx;
    gpuir_module *m = lowered_file("tests/ir/run/attention.gir", &ctx);
    static const int archs[] = {80, 90};
    for (size_t i = 0; i < 2 && m; i++) {
        char *ptx = NULL;
        long spilled = -2;
        gpuir_result r = gpuir_module_compile_cuda(m, archs[i], &spilled, &ptx);
        if (r == GPUIR_ERR_UNAVAILABLE) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
        CHECK_RESULT(ctx, r, GPUIR_OK);
        CHECK(spilled == 0);
        CHECK(ptx && strstr(ptx, ".visible .entry gpuir_k_causal_d128_bf16_k0("));
        CHECK(ptx && strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
        CHECK(ptx && strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
        CHECK(ptx && strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
        CHECK(ptx && strstr(ptx, "cp.async.cg.shared.global") && strstr(ptx, "ex2.approx"));
        static const char *const fused[] = {"gpuir_k_d64_bf16_k0", "gpuir_k_d128_f16_cross_k0", "gpuir_k_causal_f16_k0",
                                            "gpuir_k_holes_f16_k0", "gpuir_k_seq1_bf16_k0", "gpuir_k_causal_d128_bf16_k0",
                                            "gpuir_k_tiles_f16_k0", "gpuir_k_gqa_bf16_k0", "gpuir_k_mqa_causal_f16_k0",
                                            "gpuir_k_padding_f16_k0", "gpuir_k_head_dims_k0", "gpuir_k_head_dims_k1",
                                            "gpuir_k_head_dims_k2", "gpuir_k_head_dims_k3", "gpuir_k_head_dims_k4",
                                            "gpuir_k_causal_f32_k0", "gpuir_k_offset_f32_k0", "gpuir_k_bshd_f32_k0",
                                            "gpuir_k_f32_ops_padding_k0", "gpuir_k_f32_odd_dims_k0", "gpuir_k_f32_d256_k0",
                                            "gpuir_k_f32_written_gqa_k0", "gpuir_k_d40_f16_k0",
                                            "gpuir_k_d72_bf16_causal_k0", "gpuir_k_d8_f16_k0", "gpuir_k_d120_bf16_k0",
                                            "gpuir_k_dv64_d96_f16_k0", "gpuir_k_dv128_d64_bf16_causal_k0",
                                            "gpuir_k_dv24_d40_bshd_f16_k0", "gpuir_k_d256_bf16_causal_k0",
                                            "gpuir_k_d160_f16_k0", "gpuir_k_dv256_d128_bf16_k0"};
        for (size_t k = 0; k < sizeof fused / sizeof fused[0]; k++)
            if (entry_uses_local(ptx, fused[k])) {
                fprintf(stderr, "sm_%d: %s uses local memory (or is missing)\n", archs[i], fused[k]);
                check__failed = 1;
            }
        CHECK(ptx && strstr(ptx, "cvt.rn.bf16x2.f32") && strstr(ptx, "cvt.rn.f16x2.f32"));
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
}

/* The kernels over dynamic sizes (tests/ir/run/attention-dynamic.gir, the
   wgmma forms among them) compile for sm_90 without spills or local
   memory too. */
TEST(dynamic_attention_kernels_compile_without_spills) {
    gpuir_ctx *ctx;
    gpuir_module *m = lowered_file("tests/ir/run/attention-dynamic.gir", &ctx);
    char *ptx = NULL;
    long spilled = -2;
    gpuir_result r = m ? gpuir_module_compile_cuda(m, 90, &spilled, &ptx) : GPUIR_ERR_VERIFY;
    if (r == GPUIR_ERR_UNAVAILABLE) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
    CHECK_RESULT(ctx, r, GPUIR_OK);
    CHECK(spilled == 0);
    CHECK(ptx && strstr(ptx, "wgmma.mma_async") && strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    static const char *const fused[] = {"gpuir_k_seq_f16_k0", "gpuir_k_decode_bf16_k0", "gpuir_k_causal_bf16_k0",
                                        "gpuir_k_mask_f16_k0", "gpuir_k_bshd_padding_bf16_k0", "gpuir_k_mqa_causal_f16_k0",
                                        "gpuir_k_batches_f16_k0", "gpuir_k_wgmma_causal_bf16_k0",
                                        "gpuir_k_wgmma_scores_f16_k0", "gpuir_k_repeat_kv_bf16_k0",
                                        "gpuir_k_causal_mask_f32_k0", "gpuir_k_causal_d256_bf16_k0"};
    for (size_t k = 0; k < sizeof fused / sizeof fused[0]; k++)
        if (entry_uses_local(ptx, fused[k])) {
            fprintf(stderr, "sm_90: %s uses local memory (or is missing)\n", fused[k]);
            check__failed = 1;
        }
    gpuir_free(ptx);
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(attention_op_checks_its_operands);
    RUN(attention_errors_name_the_operand_and_place);
    RUN(attention_pass_is_in_the_default_pipeline);
    RUN_PLAIN(attention_kernels_compile_without_spills);
    RUN(dynamic_attention_kernels_compile_without_spills);
    RUN(the_emulator_has_the_targets_shared_memory);
    RUN(dynamic_attention_runs_at_any_lengths_and_checks_them);
    return CHECK_EXIT();
}

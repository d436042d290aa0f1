/* The runtime's API: backend choice and its errors, runs with new inputs,
   the kernel cache, input checks, launch limits, NVRTC compile checks of
   every generated kernel (no GPU needed) and deterministic CUDA C. */
#define _POSIX_C_SOURCE 200809L
#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

#include <malloc.h>
#include <stdlib.h>

static const char *const chain_text = CHAIN_TEXT;

/* The programs of a test file, parsed and lowered by the default
   pipeline; NULL (a failed check) when the file cannot be read. */
static gpuir_module *lowered_file(gpuir_ctx *ctx, const char *path) {
    size_t n;
    char *text = gpuir__slurp(path, &n);
    CHECK(text != NULL);
    if (!text) return NULL;
    gpuir_module *m = gpuir_module_parse(ctx, text, n, path);
    free(text);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL), GPUIR_OK);
    return m;
}

/* Compiles m with NVRTC for sm_<arch> (its PTX in *ptx unless ptx is
   NULL) and checks that it compiled without spills; false when there is no
   NVRTC (the caller skips). */
static bool nvrtc_compiles(gpuir_ctx *ctx, gpuir_module *m, int arch, char **ptx) {
    long spilled = -2;
    gpuir_result r = gpuir_module_compile_cuda(m, arch, &spilled, ptx);
    if (r == GPUIR_ERR_UNAVAILABLE) return false;
    CHECK_RESULT(ctx, r, GPUIR_OK);
    CHECK(spilled == 0);
    return true;
}

/* A program's text, parsed and lowered by the default pipeline. */
static gpuir_module *lowered_text(gpuir_ctx *ctx, const char *text) {
    gpuir_module *m = parse(ctx, text);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL), GPUIR_OK);
    return m;
}

static gpuir_program *make(gpuir_module *m, gpuir_backend backend, const char *cc) {
    return gpuir_program_make(m, &(gpuir_program_desc){.backend = backend, .cc = cc});
}

/* Fills inputs for @f with a seed, runs the program and the interpreter and
   compares. */
static void check_against_ref(gpuir_ctx *ctx, gpuir_program *p, uint64_t seed) {
    gpuir_module *ref = parse(ctx, chain_text);
    gpuir_array in[2], want[2], got[2];
    int64_t xd[] = {5, 7}, bd[] = {7};
    memset(want, 0, sizeof want);
    memset(got, 0, sizeof got);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, xd), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 1, bd), GPUIR_OK);
    gpuir_array_fill_random(&in[0], seed);
    gpuir_array_fill_random(&in[1], seed + 1);
    CHECK_RESULT(ctx, gpuir_ref_run(ref, "f", 2, in, 2, want), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 2, got), GPUIR_OK);
    for (int i = 0; i < 2; i++) CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got[i], &want[i], 1e-5, 1e-6), GPUIR_OK);
    for (int i = 0; i < 2; i++) { gpuir_array_release(&in[i]); gpuir_array_release(&want[i]); gpuir_array_release(&got[i]); }
    gpuir_module_destroy(ref);
}

TEST(cuda_unavailable_is_a_clear_error) {
    setenv("GPUIR_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_program *p = make(parse(ctx, chain_text), GPUIR_BACKEND_CUDA, NULL);
    CHECK(p == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_UNAVAILABLE);
    CHECK(strstr(gpuir_ctx_error(ctx), "CUDA is unavailable") != NULL);
    CHECK(strstr(gpuir_ctx_error(ctx), "/nonexistent/libcuda.so.1") != NULL);
    gpuir_ctx_destroy(ctx);
    unsetenv("GPUIR_CUDA_LIBRARY");
}

TEST(auto_falls_back_to_the_emulator_and_says_why) {
    setenv("GPUIR_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_program *p = make(parse(ctx, chain_text), GPUIR_BACKEND_AUTO, NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    CHECK(p && gpuir_program_backend(p) == GPUIR_BACKEND_EMU);
    CHECK(p && strstr(gpuir_program_why_not_cuda(p), "CUDA is unavailable") != NULL);
    CHECK(p && strstr(gpuir_program_source(p), "gpuir emulator prelude") != NULL);
    if (p) check_against_ref(ctx, p, 5);
    gpuir_ctx_destroy(ctx);              /* destroys the program too */
    unsetenv("GPUIR_CUDA_LIBRARY");
    CHECK(strcmp(gpuir_backend_name(GPUIR_BACKEND_EMU), "emu") == 0);
    double rtol, atol;
    gpuir_backend_tolerance(GPUIR_BACKEND_REF, GPUIR_F32, &rtol, &atol);
    CHECK(rtol == 1e-5 && atol == 1e-6);
    gpuir_backend_tolerance(GPUIR_BACKEND_CUDA, GPUIR_F32, &rtol, &atol);
    CHECK(rtol == 1e-5 && atol == 1e-5);
    gpuir_backend_tolerance(GPUIR_BACKEND_EMU, GPUIR_F16, &rtol, &atol);
    CHECK(rtol == 1e-3 && atol == 1e-2);
    CHECK(strcmp(gpuir_backend_name((gpuir_backend)42), "invalid") == 0);
}

TEST(a_compiler_that_fails_is_a_compile_error) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    CHECK(make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, "false") == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_COMPILE);
    CHECK(strstr(gpuir_ctx_error(ctx), "false failed to compile") != NULL);
    gpuir_ctx_clear_error(ctx);
    CHECK(make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, "/nonexistent/cc") == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_COMPILE);
    gpuir_ctx_destroy(ctx);
}



/* A compiler that exits 0 without writing the object is a compile error
   (it was a CUDA "invalid image" one); one that writes an object the
   loader refuses is the loader's error, a CUDA error. */
TEST(a_module_that_does_not_load_is_a_cuda_error) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    CHECK(make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, "true") == NULL);   /* "compiles" nothing */
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_COMPILE);
    CHECK(strstr(gpuir_ctx_error(ctx), "emu: true exited 0 but wrote no shared object") != NULL);
    gpuir_ctx_clear_error(ctx);
    char dir[] = "/tmp/gpuir-junk-cc-XXXXXX", cc[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cc, sizeof cc, "%s/cc", dir);
    FILE *f = fopen(cc, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && echo junk > \"$2\"; shift; done\nexit 0\n", f);
        fclose(f);
        chmod(cc, 0700);
        CHECK(make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, cc) == NULL);   /* writes junk */
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_CUDA);
        CHECK(strstr(gpuir_ctx_error(ctx), "cuModuleLoadData failed (CUDA_ERROR_INVALID_IMAGE") != NULL);
    }
    unlink(cc);
    rmdir(dir);
    gpuir_ctx_destroy(ctx);
}

TEST(a_program_runs_again_with_new_inputs) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_program *p = make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL);
    CHECK(p != NULL);
    for (uint64_t seed = 1; p && seed <= 3; seed++) check_against_ref(ctx, p, seed * 100);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
}

TEST(the_cache_serves_later_programs_from_memory_and_disk) {
    char dir[] = "/tmp/gpuir-test-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[64];
    snprintf(sub, sizeof sub, "%s/c", dir);
    gpuir_ctx_desc cd = {.cache_dir = sub};
    gpuir_ctx *ctx = gpuir_ctx_make(&cd);
    gpuir_program_destroy(make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL));
    gpuir_cache_stats st = gpuir_ctx_cache_stats(ctx);
    CHECK(st.misses == 1 && st.writes == 1 && st.mem_hits == 0);
    CHECK(strcmp(gpuir_ctx_cache_dir(ctx), sub) == 0);
    CHECK(strcmp(gpuir_ctx_cache_status(ctx), "ok") == 0);
    gpuir_program_destroy(make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL));
    CHECK(gpuir_ctx_cache_stats(ctx).mem_hits == 1);
    gpuir_ctx_destroy(ctx);
    ctx = gpuir_ctx_make(&cd);                 /* as a new process would */
    gpuir_program *p = make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL);
    CHECK(gpuir_ctx_cache_stats(ctx).disk_hits == 1 && gpuir_ctx_cache_stats(ctx).misses == 0);
    if (p) check_against_ref(ctx, p, 9);
    gpuir_ctx_destroy(ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

TEST(wrong_inputs_are_rejected) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_program *p = make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL);
    gpuir_array in[2], out[2];
    int64_t xd[] = {5, 7}, bd[] = {6};
    gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, xd);
    gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 1, bd);
    CHECK_RESULT(ctx, gpuir_program_run(p, "f", 1, in, 2, out), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 2, out), GPUIR_ERR_SHAPE);
    CHECK(strstr(gpuir_ctx_error(ctx), "input #1: parameter %b is tensor<7xf32>, the array is tensor<6xf32>") != NULL);
    gpuir_ctx_clear_error(ctx);
    in[1].dtype = GPUIR_I32;
    in[1].dims[0] = 7;
    CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 2, out), GPUIR_ERR_DTYPE);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_program_run(p, "g", 2, in, 2, out), GPUIR_ERR_NOT_FOUND);
    gpuir_array_release(&in[0]);
    gpuir_array_release(&in[1]);
    gpuir_ctx_destroy(ctx);
}

/* Runs `func` of p (made in pctx) on two random f32 matrices of dims a and
   b (made in ctx), expecting the error `want` with `says` in its message. */
static void run_expecting(gpuir_ctx *ctx, gpuir_ctx *pctx, gpuir_program *p, const char *func, const int64_t *a,
                          const int64_t *b, gpuir_result want, const char *says) {
    CHECK(p != NULL);
    gpuir_array in[2], out[1];
    gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, a);
    gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 2, b);
    gpuir_array_fill_random(&in[0], 1);
    gpuir_array_fill_random(&in[1], 2);
    CHECK_RESULT(pctx, p ? gpuir_program_run(p, func, 2, in, 1, out) : GPUIR_ERR_VERIFY, want);
    CHECK(strstr(gpuir_ctx_error(pctx), says) != NULL);
    if (!strstr(gpuir_ctx_error(pctx), says)) fprintf(stderr, "    the error was: %s\n", gpuir_ctx_error(pctx));
    gpuir_ctx_clear_error(pctx);
    gpuir_array_release(&in[0]);
    gpuir_array_release(&in[1]);
}

/* One program for every size of its dynamic dims; sizes that disagree (an
   elementwise op's, a matmul's K) are an error naming the op, the values
   and dims, a size over max_tensor_bytes is a limit error naming the
   function, the parameter and its sizes (it said "a memref<?x8xf32> buffer
   (value 1)"), and nothing leaks (ASan). */
TEST(dynamic_dims_run_at_any_size_and_must_agree) {
    static const char text[] =
        "func.func @f(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {\n"
        "  %a = add %x, %y : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>\n"
        "  return %a : tensor<?x8xf32>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_program *p = make(parse(ctx, text), GPUIR_BACKEND_EMU, NULL);
    CHECK(p != NULL);
    if (!p) { gpuir_ctx_destroy(ctx); return; }
    for (int64_t rows = 2; rows <= 2000; rows *= 10) {
        gpuir_array in[2], out[1];
        int64_t d[] = {rows, 8};
        gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, d);
        gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 2, d);
        for (int64_t i = 0; i < rows * 8; i++) {
            ((float *)in[0].data)[i] = (float)i;
            ((float *)in[1].data)[i] = 0.5f;
        }
        CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 1, out), GPUIR_OK);
        CHECK(out[0].rank == 2 && out[0].dims[0] == rows && out[0].dims[1] == 8);
        bool right = true;
        for (int64_t i = 0; i < rows * 8 && out[0].data; i++) right &= ((float *)out[0].data)[i] == (float)i + 0.5f;
        CHECK(right);
        gpuir_array_release(&out[0]);
        gpuir_array_release(&in[0]);
        gpuir_array_release(&in[1]);
    }
    int64_t dx[] = {5, 8}, dy[] = {3, 8};
    run_expecting(ctx, ctx, p, "f", dx, dy, GPUIR_ERR_SHAPE,
                  "2:3: error: launching @f_k0: dynamic sizes disagree: add: dim 0 of %arg1 (%y) is 3, dim 0 of its result is 5");
    gpuir_program_destroy(p);

    gpuir_ctx_desc small;                     /* a run-time size over max_tensor_bytes */
    memset(&small, 0, sizeof small);
    small.max_tensor_bytes = 1024;
    gpuir_ctx *sctx = gpuir_ctx_make(&small);
    p = make(parse(sctx, text), GPUIR_BACKEND_EMU, NULL);
    int64_t big[] = {100, 8};                 /* 3200 bytes, from the roomy context */
    run_expecting(ctx, sctx, p, "f", big, big, GPUIR_ERR_LIMIT,
                  "@f: %x, tensor<?x8xf32>, sized 100x8 in this run is more than max_tensor_bytes (1024)");
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(sctx);

    static const char mm[] =
        "func.func @g(%x: tensor<4x?xf32>, %w: tensor<?x4xf32>) -> tensor<4x4xf32> {\n"
        "  %m = matmul %x, %w : (tensor<4x?xf32>, tensor<?x4xf32>) -> tensor<4x4xf32>\n"
        "  return %m : tensor<4x4xf32>\n}\n";
    p = make(parse(ctx, mm), GPUIR_BACKEND_EMU, NULL);
    int64_t da[] = {4, 6}, db[] = {5, 4};          /* K: 6 and 5 */
    run_expecting(ctx, ctx, p, "g", da, db, GPUIR_ERR_SHAPE,
                  "launching @g_k0: dynamic sizes disagree: matmul: dim 1 of %arg0 (%x) is 6, dim 0 of %arg1 (%w) is 5");
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
}

TEST(launch_limits_are_checked_before_launching) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, chain_text);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL), GPUIR_OK);
    char *text = gpuir_module_print(m);
    char *at = text ? strstr(text, "block = [") : NULL;    /* the first launch's block, whatever it is */
    char *end = at ? strchr(at, ']') : NULL;
    CHECK(at != NULL && end != NULL);
    if (at && end) {
        static const char big[] = "block = [2, 1, 128]";
        size_t n = strlen(text) + sizeof big;
        char *edited = (char *)malloc(n);
        snprintf(edited, n, "%.*s%s%s", (int)(at - text), text, big, end + 1);
        gpuir_program *p = make(parse(ctx, edited), GPUIR_BACKEND_EMU, NULL);
        gpuir_array in[2], out[2];
        int64_t xd[] = {5, 7}, bd[] = {7};
        gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, xd);
        gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 1, bd);
        CHECK_RESULT(ctx, p ? gpuir_program_run(p, "f", 2, in, 2, out) : GPUIR_ERR_VERIFY, GPUIR_ERR_LIMIT);
        CHECK(strstr(gpuir_ctx_error(ctx), "block.z is 128; the device allows 1..64") != NULL);
        gpuir_array_release(&in[0]);
        gpuir_array_release(&in[1]);
        free(edited);
    }
    gpuir_free(text);
    gpuir_ctx_destroy(ctx);
}

/* Lowers a file's programs and compiles them with NVRTC for each arch: no
   spills, and the PTX holds what the kernels should use. */
TEST(nvrtc_compiles_every_kernel_without_spills) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_file(ctx, "tests/ir/run/ops.gir");
    if (!m) { gpuir_ctx_destroy(ctx); return; }
    static const int archs[] = {75, 80, 90};
    for (size_t i = 0; i < 3; i++) {
        char *ptx = NULL;                      /* the PTX once: each compile takes seconds */
        if (!nvrtc_compiles(ctx, m, archs[i], i == 2 ? &ptx : NULL)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
        if (i == 2) {
            CHECK(ptx && strstr(ptx, ".visible .entry gpuir_k_mlp_k0("));
            CHECK(ptx && strstr(ptx, "bar.sync") && strstr(ptx, "shfl.sync.down"));
            /* 16-byte accesses: elementwise quads, softmax rows, matmul tiles */
            CHECK(ptx && strstr(ptx, "ld.global.v4.f32") && strstr(ptx, "st.global.v4.f32"));
            CHECK(ptx && strstr(ptx, "ld.shared.v4.f32"));
        }
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
}

/* The plain matmul kernel (dynamic sizes, an author's form) keeps its 16
   accumulators a thread in registers with an f16 or bf16 epilogue: its
   loops over them are unrolled (each epilogue op's rounding made the last
   loop too long for NVRTC to unroll on its own: a 64-byte stack frame). */
TEST(nvrtc_keeps_plain_matmul_accumulators_in_registers) {
    static const char text[] =
        "func.func @f16_gelu(%a: tensor<?x64xf16>, %b: tensor<64x128xf16>) -> tensor<?x128xf16> {\n"
        "  %m = matmul %a, %b : (tensor<?x64xf16>, tensor<64x128xf16>) -> tensor<?x128xf16>\n"
        "  %g = gelu %m : (tensor<?x128xf16>) -> tensor<?x128xf16>\n"
        "  return %g : tensor<?x128xf16>\n}\n"
        "func.func @bf16_bias_silu(%a: tensor<96x64xbf16>, %b: tensor<64x80xbf16>, %c: tensor<80xbf16>)"
        " -> tensor<96x80xbf16> {\n"
        "  %m = matmul %a, %b {form = \"plain.64x64x16\"} : (tensor<96x64xbf16>, tensor<64x80xbf16>) -> tensor<96x80xbf16>\n"
        "  %s = add %m, %c : (tensor<96x80xbf16>, tensor<80xbf16>) -> tensor<96x80xbf16>\n"
        "  %g = silu %s : (tensor<96x80xbf16>) -> tensor<96x80xbf16>\n"
        "  return %g : tensor<96x80xbf16>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_text(ctx, text);
    char *src = gpuir_module_emit_cuda(m);
    CHECK(src && strstr(src, "float acc[16];"));
    gpuir_free(src);
    static const int archs[] = {80, 90};
    for (size_t i = 0; i < 2; i++) {
        char *ptx = NULL;
        if (!nvrtc_compiles(ctx, m, archs[i], &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
        CHECK(ptx && strstr(ptx, ".visible .entry gpuir_k_f16_gelu_k0(") && !strstr(ptx, ".local"));
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
}

/* The f32 register-tiled matmuls (tests/ir/run/matmul-f32.gir: 128x128
   tiles, 8x8 outputs a thread; 64x64 tiles, 4x4; matmul-f32-256.gir: the
   256x128x8 variant, 16x8, 203-255 registers) compile for sm_80 and sm_90
   without spills or local memory, reading shared memory and global
   memory 16 bytes at a time. */
TEST(nvrtc_compiles_register_tiled_matmuls) {
    static const char *const files[] = {"tests/ir/run/matmul-f32.gir", "tests/ir/run/matmul-f32-256.gir"};
    static const char *const accs[][2] = {{"float acc[8][8];", "float acc[4][4];"}, {"float acc[16][8];", "float acc[16][8];"}};
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    for (size_t f = 0; f < 2; f++) {
        gpuir_module *m = lowered_file(ctx, files[f]);
        if (!m) break;
        char *src = gpuir_module_emit_cuda(m);
        CHECK(src && strstr(src, accs[f][0]) && strstr(src, accs[f][1]));
        gpuir_free(src);
        static const int archs[] = {80, 90};
        for (size_t i = 0; i < 2; i++) {
            char *ptx = NULL;
            if (!nvrtc_compiles(ctx, m, archs[i], &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
            CHECK(ptx && !strstr(ptx, ".local"));
            CHECK(ptx && strstr(ptx, "ld.shared.v4.f32") && strstr(ptx, "st.shared.v4.f32"));
            CHECK(ptx && (strstr(ptx, "ld.global.v4.f32") || strstr(ptx, "ld.global.nc.v4.f32")));
            gpuir_free(ptx);
        }
    }
    gpuir_ctx_destroy(ctx);
}

/* The split-K kernels (tests/ir/run/split-k.gir: k slices of the plain,
   register-tiled and tensor-core matmuls, and the thread-per-output sums
   with their epilogues) compile for sm_80 and sm_90 without spills (as
   many registers as unsplit: 124-129 for the tensor-core partials, 64 for
   the register-tiled ones, 26-32 for the sums), the partials' loops
   bounded by the slice (kn, ke). */
TEST(nvrtc_compiles_split_k_kernels) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_file(ctx, "tests/ir/run/split-k.gir");
    if (!m) { gpuir_ctx_destroy(ctx); return; }
    char *src = gpuir_module_emit_cuda(m);
    CHECK(src && strstr(src, "/* k slice */") && strstr(src, "for (long long kt = -2; kt < kn; kt++)") &&
          strstr(src, "for (long long kt = 0; kt < kn; kt++)") && strstr(src, "for (int j = 0; j < 8; j++)"));
    gpuir_free(src);
    static const int archs[] = {80, 90};
    for (size_t i = 0; i < 2; i++) {
        char *ptx = NULL;
        if (!nvrtc_compiles(ctx, m, archs[i], &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
        CHECK(ptx && strstr(ptx, "mma.sync.aligned.m16n8k16") && strstr(ptx, "mma.sync.aligned.m16n8k8"));
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
}

/* Kernels with dynamic dims compile too: their sizes are long long
   parameters after the buffers. */
TEST(nvrtc_compiles_dynamic_kernels) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_file(ctx, "tests/ir/run/dynamic.gir");
    if (!m) { gpuir_ctx_destroy(ctx); return; }
    char *ptx = NULL;
    if (!nvrtc_compiles(ctx, m, 80, &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
    /* @chain_k0: four buffers, then three sizes (x_d0_, y_d0_, out0_d0_) */
    CHECK(ptx && strstr(ptx, ".param .u64 gpuir_k_chain_k0_param_6") &&
          !strstr(ptx, "gpuir_k_chain_k0_param_7"));
    gpuir_free(ptx);
    gpuir_ctx_destroy(ctx);
}

/* Bytes the C heap holds in use (every arena). */
static size_t heap_in_use(void) { return mallinfo2().uordblks; }

/* NVRTC loaded, used and closed by one context after another keeps no
   more heap each time: its libstdc++'s exception pool (72,704 bytes) was
   allocated at each load and lost at each close. NVRTC's own caches grow
   over its first compiles (1.9 MB at the second, then some KB a compile,
   measured with NVRTC 13.0), so the heap is measured from the second
   context on, in the plain build: four more loads must keep less than two
   pools would (they kept 290 KB and more). Under ASan, LeakSanitizer finds
   a lost pool at exit (no test holds NVRTC open any more). */
#define NVRTC_POOL_BYTES 72704
TEST(nvrtc_loaded_again_keeps_no_memory) {
    size_t from = 0;
    for (int i = 0; i < 6; i++) {
        gpuir_ctx *ctx = gpuir_ctx_make(NULL);
        gpuir_module *m = lowered_text(ctx, NEG_TEXT);
        gpuir_result r = m ? gpuir_module_compile_cuda(m, 80, NULL, NULL) : GPUIR_ERR_PARSE;
        gpuir_ctx_destroy(ctx);
        if (r == GPUIR_ERR_UNAVAILABLE) SKIP("no libnvrtc");
        CHECK(r == GPUIR_OK);
        if (i == 1) from = heap_in_use();
    }
    long long grown = (long long)heap_in_use() - (long long)from;
    if (!TEST_ASAN && grown >= 2 * NVRTC_POOL_BYTES) {
        fprintf(stderr, "four more NVRTC loads left %lld more bytes of heap in use\n", grown);
        CHECK(grown < 2 * NVRTC_POOL_BYTES);
    }
}

/* Kernel parameters named after the IR (reserved names, "a.b", dynamic
   dims of renamed ones) compile with NVRTC. */
TEST(nvrtc_compiles_named_parameters) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_file(ctx, "tests/ir/codegen/names.gir");
    if (!m) { gpuir_ctx_destroy(ctx); return; }
    char *ptx = NULL;
    if (!nvrtc_compiles(ctx, m, 80, &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
    CHECK(ptx && strstr(ptx, ".visible .entry gpuir_k_names_k0(") && strstr(ptx, ".visible .entry gpuir_k_scale("));
    gpuir_free(ptx);
    gpuir_ctx_destroy(ctx);
}

/* The softmax over another axis than the last (tests/ir/run/softmax-columns.gir:
   columns held in registers, and read twice; f32, f16, bf16) compiles for
   sm_80 and sm_90 without spills or local memory: a column's 21 values
   stay registers. */
TEST(nvrtc_compiles_softmax_columns) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_file(ctx, "tests/ir/run/softmax-columns.gir");
    if (!m) { gpuir_ctx_destroy(ctx); return; }
    static const int archs[] = {80, 90};
    for (size_t i = 0; i < 2; i++) {
        char *ptx = NULL;
        if (!nvrtc_compiles(ctx, m, archs[i], &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
        CHECK(ptx && strstr(ptx, ".visible .entry gpuir_k_channels_k0(") &&
              strstr(ptx, ".visible .entry gpuir_k_long_columns_k0(") && !strstr(ptx, ".local"));
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
}

/* The row kernels (tests/ir/run/row-fusion.gir: LayerNorm, RMSNorm,
   softmax variants, siblings; rows in registers, in shared memory and
   streamed with online pairs, dynamic dims) compile for sm_80 and sm_90 without spills or local memory: the
   row's registers stay registers, filled and stored a quad at a time. */
TEST(nvrtc_compiles_row_kernels) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_file(ctx, "tests/ir/run/row-fusion.gir");
    if (!m) { gpuir_ctx_destroy(ctx); return; }
    static const int archs[] = {80, 90};
    for (size_t i = 0; i < 2; i++) {
        char *ptx = NULL;
        if (!nvrtc_compiles(ctx, m, archs[i], &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
        CHECK(ptx && strstr(ptx, ".visible .entry gpuir_k_layernorm_k0(") && !strstr(ptx, ".local"));
        CHECK(ptx && strstr(ptx, "bar.sync") && strstr(ptx, "shfl.sync.down"));
        /* rows of a multiple of 4: quads, 16 bytes (f32) or 8 bytes (bf16, f16) an access */
        CHECK(ptx && strstr(ptx, "ld.global.v4.f32") && strstr(ptx, "st.global.v4.f32"));
        CHECK(ptx && strstr(ptx, "ld.global.u64") && strstr(ptx, "st.global.u64"));
        /* rows cached in shared memory: copied 16 bytes at a time, read from there */
        CHECK(ptx && strstr(ptx, "ld.global.v4.u32") && strstr(ptx, "st.shared.v4.u32"));
        CHECK(ptx && strstr(ptx, "ld.shared.f32") && strstr(ptx, "ld.shared.u16"));
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
}

/* The program of `file`, lowered, compiles for sm_80 and sm_90 without
   spills or local memory, each PTX holding every string of `want`
   (NULL-ended); false when there is no NVRTC (the caller skips). */
static bool file_ptx_holds(const char *file, const char *const *want) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_file(ctx, file);
    static const int archs[] = {80, 90};
    bool nvrtc = true;
    for (size_t i = 0; i < 2 && m && nvrtc; i++) {
        char *ptx = NULL;
        nvrtc = nvrtc_compiles(ctx, m, archs[i], &ptx);
        CHECK(!nvrtc || (ptx && !strstr(ptx, ".local")));
        for (size_t w = 0; nvrtc && want[w]; w++) CHECK(ptx && strstr(ptx, want[w]));
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
    return nvrtc;
}

/* The column reductions (tests/ir/run/column-reductions.gir: column
   tiles over f32 and bf16, with fused producers and users, and a thread
   per short column) compile for sm_80 and sm_90 without spills or local
   memory; the lanes' partials meet through shared memory. */
TEST(nvrtc_compiles_column_reductions) {
    static const char *const want[] = {".visible .entry gpuir_k_tokens_mean_k0(", ".visible .entry gpuir_k_short_middle_k0(",
                                       "st.shared.f64", "ld.shared.f64", "bar.sync", NULL};
    if (!file_ptx_holds("tests/ir/run/column-reductions.gir", want)) SKIP("no libnvrtc");
}

/* Column groups (tests/ir/run/column-groups.gir: LayerNorm over the
   channels in registers, bf16, two reductions, the statistics stored)
   compile for sm_80 and sm_90 without spills or local memory, their lanes'
   partials through shared memory between barriers. */
TEST(nvrtc_compiles_column_groups) {
    static const char *const want[] = {".visible .entry gpuir_k_layernorm2d_k0(", ".visible .entry gpuir_k_bf16_k0(",
                                       ".visible .entry gpuir_k_wide_channels_k0(",
                                       ".visible .entry gpuir_k_two_reductions_k0(",
                                       ".visible .entry gpuir_k_stats_returned_k0(", "st.shared.f64", "bar.sync",
                                       NULL};
    if (!file_ptx_holds("tests/ir/run/column-groups.gir", want)) SKIP("no libnvrtc");
}

/* A block per output with the elementwise ops on its result
   (tests/ir/run/block-users.gir: i32 and f16, several users) and a total
   split into rows and their total (tests/ir/run/totals.gir) compile for
   sm_80 and sm_90 without spills or local memory. */
TEST(nvrtc_compiles_reductions_with_users_and_totals) {
    static const char *const users[] = {".visible .entry gpuir_k_int_users_k0(", ".visible .entry gpuir_k_f16_users_k0(",
                                        NULL};
    static const char *const totals[] = {".visible .entry gpuir_k_mse_k0(", ".visible .entry gpuir_k_mse_k1(",
                                         ".visible .entry gpuir_k_total_bf16_k1(", NULL};
    if (!file_ptx_holds("tests/ir/run/block-users.gir", users)) SKIP("no libnvrtc");
    CHECK(file_ptx_holds("tests/ir/run/totals.gir", totals));
}

/* Row kernels with a reshape of their rows and ops after it
   (tests/ir/run/reshaped-rows.gir: GroupNorm's affine over [N, C, H, W],
   rows in registers and streamed in quads) compile for sm_80 and sm_90
   without spills or local memory. */
TEST(nvrtc_compiles_reshaped_rows) {
    static const char *const want[] = {".visible .entry gpuir_k_group_norm_k0(", ".visible .entry gpuir_k_long_rows_k0(",
                                       ".visible .entry gpuir_k_group_norm_bf16_k0(", NULL};
    if (!file_ptx_holds("tests/ir/run/reshaped-rows.gir", want)) SKIP("no libnvrtc");
}

/* The sibling kernels (tests/ir/run/sibling-fusion.gir: reductions of one
   matrix over axis 0, axis 1 and both in one kernel) compile for sm_80 and
   sm_90 without spills or local memory: the tickets are global atomics
   behind a fence, the partials' combine reads volatile (ld.volatile). */
TEST(nvrtc_compiles_sibling_kernels) {
    static const char *const want[] = {".visible .entry gpuir_k_siblings_k0(", "atom.global.add.u32", "membar.gl",
                                       "ld.volatile.global.u32", /* partials: a double's bits */ "shfl.sync.down", NULL};
    if (!file_ptx_holds("tests/ir/run/sibling-fusion.gir", want)) SKIP("no libnvrtc");
}

/* A sibling kernel with column variances (BatchNorm's statistics in one
   pass: shifted sums in double, Chan's merge in the last block) compiles
   for sm_80 and sm_90 without spills or local memory. */
TEST(nvrtc_compiles_column_variance_kernels) {
    static const char *const want[] = {".visible .entry gpuir_k_batchnorm_k0(",
                                       ".visible .entry gpuir_k_two_variances_k0(", "atom.global.add.u32", NULL};
    if (!file_ptx_holds("tests/ir/run/column-norms.gir", want)) SKIP("no libnvrtc");
}

/* A sibling kernel runs again with new inputs and the same answers as the
   interpreter: each launch gets counters zeroed anew (a launch that found
   them taken would write no column, row or total). */
TEST(sibling_kernels_run_again_with_new_inputs) {
    static const char text[] =
        "func.func @f(%x: tensor<300x21xf32>) -> (tensor<21xf32>, tensor<300xf32>, tensor<f32>) {\n"
        "  %a = reduce_max %x {axes = [0]} : (tensor<300x21xf32>) -> tensor<21xf32>\n"
        "  %b = reduce_sum %x {axes = [1]} : (tensor<300x21xf32>) -> tensor<300xf32>\n"
        "  %c = reduce_sum %x {axes = [0, 1]} : (tensor<300x21xf32>) -> tensor<f32>\n"
        "  return %a, %b, %c : tensor<21xf32>, tensor<300xf32>, tensor<f32>\n"
        "}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *ref = parse(ctx, text);
    gpuir_program *p = make(parse(ctx, text), GPUIR_BACKEND_EMU, NULL);
    CHECK(p != NULL);
    int64_t xd[] = {300, 21};
    for (uint64_t seed = 1; p && seed <= 3; seed++) {
        gpuir_array in, want[3], got[3];
        memset(want, 0, sizeof want);
        memset(got, 0, sizeof got);
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in, GPUIR_F32, 2, xd), GPUIR_OK);
        gpuir_array_fill_random(&in, seed * 77);
        CHECK_RESULT(ctx, gpuir_ref_run(ref, "f", 1, &in, 3, want), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_program_run(p, "f", 1, &in, 3, got), GPUIR_OK);
        for (int i = 0; i < 3; i++) CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got[i], &want[i], 1e-5, 1e-5), GPUIR_OK);
        gpuir_array_release(&in);
        for (int i = 0; i < 3; i++) { gpuir_array_release(&want[i]); gpuir_array_release(&got[i]); }
    }
    gpuir_program_destroy(p);
    gpuir_module_destroy(ref);
    gpuir_ctx_destroy(ctx);
}

/* The tensor-core matmuls compile for sm_80 and sm_90 to mma.sync
   m16n8k16 (f16, bf16; fragments through ldmatrix, .trans for a B that is
   not transposed) and m16n8k8 (tf32, operands through cvt.rna) fed by
   cp.async into three stages of dynamic shared memory, and for sm_75 to m16n8k8 (f16) and shuffles (bf16, tf32); no
   spills, no local memory. (`wgmma = false`: planned for sm_90, f16 and
   bf16 would take wgmma.) */
TEST(nvrtc_compiles_tensor_core_kernels) {
    static const char text[] =
        "func.func @h(%x: tensor<200x64xf16>, %w: tensor<64x72xf16>, %b: tensor<72xf16>) -> tensor<200x72xf16> {\n"
        "  %m = matmul %x, %w {wgmma = false} : (tensor<200x64xf16>, tensor<64x72xf16>) -> tensor<200x72xf16>\n"
        "  %s = add %m, %b : (tensor<200x72xf16>, tensor<72xf16>) -> tensor<200x72xf16>\n"
        "  %r = relu %s : (tensor<200x72xf16>) -> tensor<200x72xf16>\n"
        "  return %r : tensor<200x72xf16>\n}\n"
        "func.func @bt(%x: tensor<70x48xbf16>, %w: tensor<65x48xbf16>) -> tensor<70x65xbf16> {\n"
        "  %m = matmul %x, %w {transpose_b = true, wgmma = false} : (tensor<70x48xbf16>, tensor<65x48xbf16>) -> tensor<70x65xbf16>\n"
        "  return %m : tensor<70x65xbf16>\n}\n"
        "func.func @t(%x: tensor<130x44xf32>, %w: tensor<44x136xf32>) -> tensor<130x136xf32> {\n"
        "  %m = matmul %x, %w {tf32 = true} : (tensor<130x44xf32>, tensor<44x136xf32>) -> tensor<130x136xf32>\n"
        "  return %m : tensor<130x136xf32>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_text(ctx, text);
    static const int archs[] = {80, 90, 75};
    for (size_t i = 0; i < 3; i++) {
        char *ptx = NULL;
        if (!nvrtc_compiles(ctx, m, archs[i], &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
        CHECK(ptx && !strstr(ptx, ".local"));
        CHECK(ptx && strstr(ptx, ".extern .shared .align 16 .b8 smem[];"));   /* the stages: 55.5 or 60 KiB */
        CHECK(ptx && strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
        CHECK(ptx && strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
        if (archs[i] >= 80) {
            CHECK(ptx && strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
            CHECK(ptx && strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
            CHECK(ptx && strstr(ptx, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") && strstr(ptx, "cvt.rna.tf32.f32"));
            CHECK(ptx && strstr(ptx, "ld.shared.f32"));    /* tf32 fragments: a float a register */
            /* three stages: wait for all but the newest copy */
            CHECK(ptx && strstr(ptx, "cp.async.cg.shared.global") && strstr(ptx, "cp.async.wait_group 1;"));
        } else {
            CHECK(ptx && strstr(ptx, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"));
            CHECK(ptx && !strstr(ptx, "bf16.bf16") && !strstr(ptx, "tf32.tf32") && !strstr(ptx, "cp.async"));
            CHECK(ptx && strstr(ptx, "shfl.sync.idx"));
        }
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
}

/* The tensor-core stages are dynamic shared memory: a launch must give
   them (gpuir__launch_kernel_smem). On the emulator a launch that gives less
   fails, naming both sizes, where a GPU would fault; with them it runs
   (the mma.sync kernel, launched by hand with its 256 threads). */
TEST(emulator_refuses_a_launch_short_of_dynamic_shared_memory) {
    static const char text[] =
        "func.func @h(%x: tensor<64x32xbf16>, %w: tensor<32x64xbf16>) -> tensor<64x64xbf16> {\n"
        "  %m = matmul %x, %w {wgmma = false} : (tensor<64x32xbf16>, tensor<32x64xbf16>) -> tensor<64x64xbf16>\n"
        "  return %m : tensor<64x64xbf16>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_text(ctx, text);
    gpuir_program *p = make(m, GPUIR_BACKEND_EMU, NULL);
    CHECK(p != NULL && stbds_arrlenu(p->kernels) == 1 && p->kernels[0].dynamic_bytes > 48 * 1024);
    if (!p || stbds_arrlenu(p->kernels) != 1) { gpuir_ctx_destroy(ctx); return; }
    const gpuir__op *launch = NULL;
    for (size_t i = 0; i < stbds_arrlenu(m->ops) && !launch; i++)
        if (m->ops[i].kind == GPUIR_OP_GPU_LAUNCH_FUNC) launch = &m->ops[i];
    CHECK(launch && gpuir__launch_kernel_smem(p, launch, gpuir__run_launch_kernel(p, launch)) == (int64_t)p->kernels[0].dynamic_bytes);
    gpuir__drv *d = &p->drv;
    gpuir__dptr args[3] = {0, 0, 0};
    void *params[3] = {&args[0], &args[1], &args[2]};
    const size_t bytes[3] = {64 * 32 * 2, 32 * 64 * 2, 64 * 64 * 2};
    const unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1};
    CHECK(d->enter(d->self) == 0);
    for (int i = 0; i < 3; i++) CHECK(d->mem_alloc(d->self, &args[i], bytes[i], 0) == 0);
    int rc = d->launch(d->self, p->functions[0], grid, block, 0, params, 3, 0);
    if (!rc) rc = d->synchronize(d->self);
    const char *name = "", *what = "", *detail = "";
    d->describe(d->self, rc, &name, &what, &detail);
    CHECK(rc == 719 && strstr(detail, "declares") && strstr(detail, "the launch gave 0"));
    rc = d->launch(d->self, p->functions[0], grid, block, p->kernels[0].dynamic_bytes, params, 3, 0);
    CHECK(rc == 0 && d->synchronize(d->self) == 0);
    for (int i = 0; i < 3; i++) d->mem_free(d->self, args[i], 0);
    d->synchronize(d->self);
    d->leave(d->self);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
}

/* EXPERIMENTAL: a matmul with `wgmma = true` (bf16 and f16, B transposed)
   compiles for sm_90 as sm_90a to the warp-specialized kernel: bulk
   tensor copies (2d; 3d for a batched operand) from tensor maps passed by
   value, completing on mbarriers (init, arrive.expect_tx, try_wait.parity,
   and the consumers' arrive), wgmma.mma_async m64n128k16 with both
   operands from 128-byte-swizzle descriptors, fenced, committed, one group
   left in flight (wait_group 1), then all (0); setmaxnreg moves registers
   from the producer to the consumers; no spills, no local memory.
   For sm_80 and sm_75 the same text compiles to the portable path (no
   wgmma, no bulk copies). Whether it runs right on an H100 is for
   tools/gpu-check.sh to say. */
TEST(nvrtc_compiles_wgmma_kernels_for_sm_90a) {
    static const char text[] =
        "func.func @w(%x: tensor<200x64xbf16>, %w: tensor<72x64xbf16>, %b: tensor<72xbf16>) -> tensor<200x72xbf16> {\n"
        "  %m = matmul %x, %w {transpose_b = true, wgmma = true} : (tensor<200x64xbf16>, tensor<72x64xbf16>) -> tensor<200x72xbf16>\n"
        "  %s = add %m, %b : (tensor<200x72xbf16>, tensor<72xbf16>) -> tensor<200x72xbf16>\n"
        "  %r = gelu %s : (tensor<200x72xbf16>) -> tensor<200x72xbf16>\n"
        "  return %r : tensor<200x72xbf16>\n}\n"
        "func.func @h(%x: tensor<2x4096x4096xf16>, %w: tensor<4096x4096xf16>) -> tensor<2x4096x4096xf16> {\n"
        "  %m = matmul %x, %w {transpose_b = true, wgmma = true} : (tensor<2x4096x4096xf16>, tensor<4096x4096xf16>) -> tensor<2x4096x4096xf16>\n"
        "  return %m : tensor<2x4096x4096xf16>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_text(ctx, text);
    char *ptx = NULL;
    if (!nvrtc_compiles(ctx, m, 90, &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
    CHECK(ptx && strstr(ptx, ".target sm_90a"));
    CHECK(ptx && !strstr(ptx, ".local"));
    CHECK(ptx && strstr(ptx, ".maxntid 384, 1, 1") && strstr(ptx, ".minnctapersm 1"));
    CHECK(ptx && strstr(ptx, ".param .align 64 .b8 gpuir_k_w_k0_param_4[128]") &&   /* tma_a, tma_b: by value */
          strstr(ptx, ".param .align 64 .b8 gpuir_k_w_k0_param_5[128]"));
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
    /* @h's 2 x 32 x 16 tiles of 128x256 fill the SMs: that variant by default */
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"));
    CHECK(ptx && strstr(ptx, "wgmma.fence.sync.aligned") && strstr(ptx, "wgmma.commit_group.sync.aligned") &&
          strstr(ptx, "wgmma.wait_group.sync.aligned 1") && strstr(ptx, "wgmma.wait_group.sync.aligned 0"));
    CHECK(ptx && strstr(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"));
    CHECK(ptx && strstr(ptx, "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"));
    CHECK(ptx && strstr(ptx, "mbarrier.init.shared::cta.b64") && strstr(ptx, "mbarrier.arrive.expect_tx.shared::cta.b64") &&
          strstr(ptx, "mbarrier.try_wait.parity.shared::cta.b64") && strstr(ptx, "mbarrier.arrive.shared::cta.b64"));
    /* the descriptors' constant bits, per the PTX ISA's layout: LBO 16 >> 4
       at bit 16, SBO 1024 >> 4 at bit 32, layout type 1 (128-byte swizzle)
       at bit 62: 0x4000004000010000 */
    CHECK(ptx && strstr(ptx, "4611686293305360384"));
    CHECK(ptx && !strstr(ptx, "cp.async.cg.shared.global"));
    /* the producer gives registers to the consumers */
    CHECK(ptx && strstr(ptx, "setmaxnreg.dec.sync.aligned.u32 40;") && strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 232;"));
    gpuir_free(ptx);
    /* the portable path: accumulators in local memory, no spills */
    static const int others[] = {80, 75};
    for (size_t i = 0; i < 2; i++) {
        ptx = NULL;
        CHECK(nvrtc_compiles(ctx, m, others[i], &ptx));
        CHECK(ptx && !strstr(ptx, "wgmma") && !strstr(ptx, "cp.async.bulk") && !strstr(ptx, "mbarrier"));
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
}

/* The wgmma kernel's 128x256 variant (`form`, wgmma-variants.gir) compiles
   for sm_90a with wgmma.mma_async m64n256k16 (its own helper, which a
   module of 128x128 kernels leaves out), the registers moved as it plans
   them (the producer down to 24, the consumers' 128 accumulators up to
   240), with and without a fused bias, gelu and residual, persistent or
   not, beside a persistent 128x128 kernel, the tf32 kernels
   (wgmma-tf32.gir: m64n128k8 and m64n256k8) and a fused attention with
   its scores on wgmma (attention-wgmma.gir: m64n64k16), and one with P V
   on wgmma too (A from registers, V N-major): no spills, no local
   memory. */
TEST(nvrtc_compiles_the_wgmma_variants_for_sm_90a) {
    static const char text[] =
        "func.func @v(%x: tensor<300x64xbf16>, %w: tensor<520x64xbf16>, %b: tensor<520xbf16>, %r: tensor<300x520xbf16>) -> tensor<300x520xbf16> {\n"
        "  %m = matmul %x, %w {transpose_b = true, form = \"wgmma.128x256x64.s4\"} : (tensor<300x64xbf16>, tensor<520x64xbf16>) -> tensor<300x520xbf16>\n"
        "  %s = add %m, %b : (tensor<300x520xbf16>, tensor<520xbf16>) -> tensor<300x520xbf16>\n"
        "  %g = gelu %s : (tensor<300x520xbf16>) -> tensor<300x520xbf16>\n"
        "  %o = add %g, %r : (tensor<300x520xbf16>, tensor<300x520xbf16>) -> tensor<300x520xbf16>\n"
        "  return %o : tensor<300x520xbf16>\n}\n"
        "func.func @p(%x: tensor<4096x4096xf16>, %w: tensor<4096x4096xf16>) -> tensor<4096x4096xf16> {\n"
        "  %m = matmul %x, %w {transpose_b = true, form = \"wgmma.128x256x64.s4.persistent\"} : (tensor<4096x4096xf16>, tensor<4096x4096xf16>) -> tensor<4096x4096xf16>\n"
        "  return %m : tensor<4096x4096xf16>\n}\n"
        "func.func @q(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {\n"
        "  %m = matmul %x, %w {transpose_b = true, form = \"wgmma.128x128x64.s6.persistent\"} : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>\n"
        "  return %m : tensor<4096x4096xbf16>\n}\n"
        "func.func @t(%x: tensor<4096x4096xf32>, %w: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {\n"
        "  %m = matmul %x, %w {tf32 = true, transpose_b = true, wgmma = true} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>\n"
        "  return %m : tensor<4096x4096xf32>\n}\n"
        "func.func @u(%x: tensor<4096x4096xf32>, %w: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {\n"
        "  %m = matmul %x, %w {tf32 = true, transpose_b = true, form = \"wgmma.128x256x32.s4.persistent\"} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>\n"
        "  return %m : tensor<4096x4096xf32>\n}\n"
        "func.func @a(%q: tensor<8x16x4096x128xbf16>, %k: tensor<8x16x4096x128xbf16>, %v: tensor<8x16x4096x128xbf16>) -> tensor<8x16x4096x128xbf16> {\n"
        "  %o = attention %q, %k, %v {scale = 0.0883883476, causal = true, form = \"attention.fa2_wgmma.m128\"} : (tensor<8x16x4096x128xbf16>, tensor<8x16x4096x128xbf16>, tensor<8x16x4096x128xbf16>) -> tensor<8x16x4096x128xbf16>\n"
        "  return %o : tensor<8x16x4096x128xbf16>\n}\n"
        "func.func @w(%q: tensor<8x16x4096x128xbf16>, %k: tensor<8x16x4096x128xbf16>, %v: tensor<8x16x4096x128xbf16>) -> tensor<8x16x4096x128xbf16> {\n"
        "  %o = attention %q, %k, %v {scale = 0.0883883476, form = \"attention.wgmma.m128\"} : (tensor<8x16x4096x128xbf16>, tensor<8x16x4096x128xbf16>, tensor<8x16x4096x128xbf16>) -> tensor<8x16x4096x128xbf16>\n"
        "  return %o : tensor<8x16x4096x128xbf16>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_text(ctx, text);
    char *ptx = NULL;
    if (!nvrtc_compiles(ctx, m, 90, &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
    CHECK(ptx && strstr(ptx, ".target sm_90a") && !strstr(ptx, ".local"));
    /* the fused attention's scores on wgmma, P V on mma.sync */
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16") &&
          strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
    /* and P V on wgmma: A from registers, V N-major */
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f") &&
          strstr(ptx, ", 1, 1, 1, 1;"));
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"));
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
    CHECK(ptx && strstr(ptx, "setmaxnreg.dec.sync.aligned.u32 24;") && strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 240;"));
    CHECK(ptx && strstr(ptx, "setmaxnreg.dec.sync.aligned.u32 40;") && strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 232;"));
    /* tf32: no transposes in the instruction; its stages filled by bulk tensor copies as the halves' are
       (the producer at 24 registers beside the 256-column consumers, as theirs) */
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32") &&
          strstr(ptx, "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32") && strstr(ptx, "cp.async.bulk.tensor.2d"));
    CHECK(ptx && !strstr(ptx, "setmaxnreg.dec.sync.aligned.u32 32;"));
    gpuir_free(ptx);
    /* a module of 128x128 kernels alone carries no m64n256k16 */
    static const char plain[] =
        "func.func @w(%x: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64x64xbf16> {\n"
        "  %m = matmul %x, %w {transpose_b = true, wgmma = true} : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>\n"
        "  return %m : tensor<64x64xbf16>\n}\n";
    char *src = gpuir_module_emit_cuda(lowered_text(ctx, plain));
    CHECK(src && strstr(src, "m64n128k16") && !strstr(src, "m64n256k16"));
    gpuir_free(src);
    gpuir_ctx_destroy(ctx);
}

/* The clustered wgmma kernels (`.c2`): NVRTC compiles them for sm_90a with
   no spill and no local memory, each a kernel of two-block clusters whose
   producer multicasts its half of B's tile and whose consumers arrive on
   the other block's mbarriers; the 256-column producer keeps 32 registers
   (24 spilled its copy loop's map address). */
TEST(nvrtc_compiles_the_clustered_wgmma_kernels_for_sm_90a) {
    static const char text[] =
        "func.func @n(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {\n"
        "  %m = matmul %x, %w {form = \"wgmma.128x256x64.s4.persistent.c2\"} : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>\n"
        "  return %m : tensor<4096x4096xbf16>\n}\n"
        "func.func @k(%x: tensor<8x512x1024xf16>, %w: tensor<8x1024x1024xf16>) -> tensor<8x512x1024xf16> {\n"
        "  %m = matmul %x, %w {transpose_b = true, form = \"wgmma.128x256x64.s4.persistent.c2\"} : (tensor<8x512x1024xf16>, tensor<8x1024x1024xf16>) -> tensor<8x512x1024xf16>\n"
        "  return %m : tensor<8x512x1024xf16>\n}\n"
        "func.func @s(%x: tensor<300x64xbf16>, %w: tensor<64x520xbf16>, %b: tensor<520xbf16>, %r: tensor<300x520xbf16>) -> tensor<300x520xbf16> {\n"
        "  %m = matmul %x, %w {form = \"wgmma.128x128x64.s6.persistent.c2\"} : (tensor<300x64xbf16>, tensor<64x520xbf16>) -> tensor<300x520xbf16>\n"
        "  %s = add %m, %b : (tensor<300x520xbf16>, tensor<520xbf16>) -> tensor<300x520xbf16>\n"
        "  %g = gelu %s : (tensor<300x520xbf16>) -> tensor<300x520xbf16>\n"
        "  %o = add %g, %r : (tensor<300x520xbf16>, tensor<300x520xbf16>) -> tensor<300x520xbf16>\n"
        "  return %o : tensor<300x520xbf16>\n}\n"
        "func.func @a(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {\n"
        "  %m = matmul %x, %w {transpose_a = true, form = \"wgmma.128x256x64.s4.persistent.c2\"} : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>\n"
        "  return %m : tensor<4096x4096xbf16>\n}\n"
        "func.func @t(%x: tensor<4096x4096xf32>, %w: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {\n"
        "  %m = matmul %x, %w {tf32 = true, form = \"wgmma.128x256x32.s4.persistent.c2\"} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>\n"
        "  return %m : tensor<4096x4096xf32>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_text(ctx, text);
    char *ptx = NULL;
    if (!nvrtc_compiles(ctx, m, 90, &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
    CHECK(ptx && strstr(ptx, ".target sm_90a") && !strstr(ptx, ".local"));
    CHECK(ptx && strstr(ptx, ".reqnctapercluster 2, 1, 1"));
    CHECK(ptx && strstr(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster") &&
          strstr(ptx, "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"));
    CHECK(ptx && strstr(ptx, "mapa.shared::cluster.u32") && strstr(ptx, "mbarrier.arrive.shared::cluster.b64") &&
          strstr(ptx, "barrier.cluster.arrive.release") && strstr(ptx, "barrier.cluster.wait.acquire"));
    CHECK(ptx && strstr(ptx, "setmaxnreg.dec.sync.aligned.u32 32;") && strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 240;"));
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32"));
    gpuir_free(ptx);
    gpuir_ctx_destroy(ctx);
}

/* Split-K on the wgmma kernel: the skinny bf16 matmul the split-k pass
   splits (32 x 4096 x 4096: 4 slices of 1024), and slices written in the
   IR on the persistent and clustered variants, compile for sm_90a with 0
   spills and no local memory; the partial products are wgmma's, the k
   coordinate of each copy starts at the slice (kb). */
TEST(nvrtc_compiles_the_split_wgmma_kernels_for_sm_90a) {
    static const char text[] =
        "func.func @s(%x: tensor<32x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<32x4096xbf16> {\n"
        "  %m = matmul %x, %w : (tensor<32x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<32x4096xbf16>\n"
        "  return %m : tensor<32x4096xbf16>\n}\n"
        "func.func @p(%x: tensor<256x16384xf16>, %w: tensor<16384x256xf16>) -> tensor<8x256x256xf32> {\n"
        "  %m = matmul %x, %w {k_slices = 8, form = \"wgmma.128x256x64.s4.persistent\"} : (tensor<256x16384xf16>, tensor<16384x256xf16>) -> tensor<8x256x256xf32>\n"
        "  return %m : tensor<8x256x256xf32>\n}\n"
        "func.func @c(%x: tensor<256x16384xbf16>, %w: tensor<16384x256xbf16>) -> tensor<8x256x256xf32> {\n"
        "  %m = matmul %x, %w {k_slices = 8, form = \"wgmma.128x128x64.s6.persistent.c2\"} : (tensor<256x16384xbf16>, tensor<16384x256xbf16>) -> tensor<8x256x256xf32>\n"
        "  return %m : tensor<8x256x256xf32>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = lowered_text(ctx, text);
    char *cuda = gpuir_module_emit_cuda(m);
    CHECK(cuda && strstr(cuda, "long long kb = batch / (1LL) * 1024LL") && strstr(cuda, "(int)(kb + kt * 64)"));
    gpuir_free(cuda);
    char *ptx = NULL;
    if (!nvrtc_compiles(ctx, m, 90, &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
    CHECK(ptx && strstr(ptx, ".target sm_90a") && !strstr(ptx, ".local"));
    CHECK(ptx && strstr(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") &&
          strstr(ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"));
    CHECK(ptx && strstr(ptx, ".reqnctapercluster 2, 1, 1"));
    gpuir_free(ptx);
    gpuir_ctx_destroy(ctx);
}

/* A plain bf16 matmul (B as [K, N], no attribute) planned for sm_90 takes
   the wgmma kernel by default, reading B as it is (N-major: one kernel),
   and NVRTC compiles the module for sm_90a with wgmma.mma_async in its
   PTX; the same program planned for sm_80 takes mma.sync (no wgmma). */
TEST(nvrtc_compiles_the_default_bf16_matmul_to_wgmma_on_sm_90) {
    static const char text[] =
        "func.func @f(%x: tensor<256x64xbf16>, %w: tensor<64x256xbf16>) -> tensor<256x256xbf16> {\n"
        "  %m = matmul %x, %w : (tensor<256x64xbf16>, tensor<64x256xbf16>) -> tensor<256x256xbf16>\n"
        "  return %m : tensor<256x256xbf16>\n}\n";
    static const int targets[] = {90, 80};
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    for (size_t i = 0; i < 2; i++) {
        gpuir_module *m = parse(ctx, text);
        gpuir_module_set_target(m, (gpuir_target){targets[i], 132});
        CHECK_RESULT(ctx, gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL), GPUIR_OK);
        char *ptx = NULL;
        if (!nvrtc_compiles(ctx, m, targets[i], &ptx)) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
        bool hopper = targets[i] == 90;
        CHECK(ptx && (strstr(ptx, ".target sm_90a") != NULL) == hopper);
        CHECK(ptx && (strstr(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") != NULL) == hopper);
        CHECK(ptx && strstr(ptx, "gpuir_k_f_k0") && !strstr(ptx, "gpuir_k_f_k1"));    /* one kernel */
        CHECK(ptx && (strstr(ptx, "mma.sync.aligned.m16n8k16") != NULL) == !hopper);
        gpuir_free(ptx);
    }
    gpuir_ctx_destroy(ctx);
}

/* A tensor-core kernel strides over its tiles: with fewer blocks than
   tiles (a grid the text sets), each block computes several, refilling
   its shared-memory stages, and the result is still the interpreter's. */
TEST(tensor_core_tiles_stride_over_any_grid) {
    static const char text[] =
        "func.func @g(%x: tensor<2x200x104xbf16>, %w: tensor<2x104x264xbf16>) -> tensor<2x200x264xbf16> {\n"
        "  %m = matmul %x, %w : (tensor<2x200x104xbf16>, tensor<2x104x264xbf16>) -> tensor<2x200x264xbf16>\n"
        "  return %m : tensor<2x200x264xbf16>\n}\n";
    static const char *const grids[] = {"grid = [1, 1, 1]", "grid = [5, 1, 1]", "grid = [2, 2, 1]", "grid = [3, 2, 2]"};
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, text), *ref = parse(ctx, text);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL), GPUIR_OK);
    char *lowered = gpuir_module_print(m);
    char *at = lowered ? strstr(lowered, "grid = [3, 2, 2]") : NULL;    /* 12 tiles: 3 x 2, 2 batches */
    CHECK(at != NULL);
    gpuir_array in[2], want, got;
    int64_t xd[] = {2, 200, 104}, wd[] = {2, 104, 264};
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in[0], GPUIR_BF16, 3, xd), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in[1], GPUIR_BF16, 3, wd), GPUIR_OK);
    gpuir_array_fill_random(&in[0], 11);
    gpuir_array_fill_random(&in[1], 12);
    CHECK_RESULT(ctx, gpuir_ref_run(ref, "g", 2, in, 1, &want), GPUIR_OK);
    double rtol, atol;
    gpuir_backend_tolerance(GPUIR_BACKEND_EMU, GPUIR_BF16, &rtol, &atol);
    for (size_t i = 0; at && i < sizeof grids / sizeof grids[0]; i++) {
        size_t n = strlen(lowered) + 1;
        char *edited = (char *)malloc(n);
        snprintf(edited, n, "%.*s%s%s", (int)(at - lowered), lowered, grids[i], at + strlen(grids[i]));
        gpuir_program *p = make(parse(ctx, edited), GPUIR_BACKEND_EMU, NULL);
        CHECK_RESULT(ctx, p ? gpuir_program_run(p, "g", 2, in, 1, &got) : gpuir_ctx_result(ctx), GPUIR_OK);
        if (p) CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got, &want, rtol, atol), GPUIR_OK);
        if (p) gpuir_array_release(&got);
        free(edited);
    }
    gpuir_array_release(&in[0]);
    gpuir_array_release(&in[1]);
    gpuir_array_release(&want);
    gpuir_free(lowered);
    gpuir_ctx_destroy(ctx);
}

TEST(cuda_source_is_deterministic) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *a = parse(ctx, chain_text), *b = parse(ctx, chain_text);
    gpuir_module_run_passes(a, GPUIR_DEFAULT_PIPELINE, NULL);
    gpuir_module_run_passes(b, GPUIR_DEFAULT_PIPELINE, NULL);
    char *sa = gpuir_module_emit_cuda(a), *sb = gpuir_module_emit_cuda(b);
    CHECK(sa && sb && strcmp(sa, sb) == 0);
    gpuir_free(sa);
    gpuir_free(sb);
    gpuir_ctx_destroy(ctx);
}


TEST(cuda_available_says_why_not) {
    setenv("GPUIR_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char why[512];
    CHECK(!gpuir_cuda_available(ctx, why, sizeof why));
    CHECK(strstr(why, "CUDA is unavailable") != NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);   /* asking is not an error */
    gpuir_ctx_destroy(ctx);
    unsetenv("GPUIR_CUDA_LIBRARY");
}

/* A compile error names the offending line, its kernel and the IR op it was
   generated for (codegen comments each one). */
TEST(nvrtc_errors_point_back_to_the_ir_op) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir__nvrtc nv;
    memset(&nv, 0, sizeof nv);
    if (gpuir__nvrtc_load(ctx, &nv) != GPUIR_OK) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
    const char *src = "/* @bad_k0: 256 threads per block */\n"
                      "extern \"C\" __global__ void k(float *p0) {\n"
                      "        /* op 7: add (line 3) */\n"
                      "        float v0 = p0[0] +* ;\n"
                      "}\n";
    char *image = NULL, *log = NULL;
    size_t size;
    CHECK_RESULT(ctx, gpuir__nvrtc_compile(ctx, &nv, src, "gpuir_kernels.cu", 80, false, false, NULL, 0, &image,
                                           &size, &log, NULL), GPUIR_ERR_COMPILE);
    CHECK(strstr(gpuir_ctx_error(ctx), "gpuir_kernels.cu(4) reads:") != NULL);
    CHECK(strstr(gpuir_ctx_error(ctx), "in kernel @bad_k0, from IR op 7: add (line 3)") != NULL);
    free(image);
    free(log);
    gpuir__nvrtc_unload(&nv);
    gpuir_ctx_destroy(ctx);
}

/* gpuir_module_compile_cuda takes the PTX from the cubin's compile (one
   NVRTC run, not two): the same text a compile for PTX alone gives, for a
   plain and an arch-specific (sm_90a) target; ptxas's report still comes. */
TEST(the_ptx_comes_from_the_cubins_compile) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir__nvrtc nv;
    memset(&nv, 0, sizeof nv);
    if (gpuir__nvrtc_load(ctx, &nv) != GPUIR_OK) { gpuir_ctx_destroy(ctx); SKIP("no libnvrtc"); }
    static const struct { int sm; bool specific; } targets[] = {{80, false}, {90, true}};
    const char *src = "extern \"C\" __global__ void k(float *p0) { p0[threadIdx.x] *= 2.0f; }\n";
    for (size_t i = 0; i < 2; i++) {
        const char *verbose = GPUIR__NVRTC_OPT_PTXAS_VERBOSE;
        char *cubin = NULL, *log = NULL, *ptx_too = NULL, *ptx = NULL;
        size_t size;
        CHECK_RESULT(ctx, gpuir__nvrtc_compile(ctx, &nv, src, "t.cu", targets[i].sm, targets[i].specific, false,
                                               &verbose, 1, &cubin, &size, &log, &ptx_too), GPUIR_OK);
        CHECK(log && gpuir__nvrtc_spilled_bytes(log) == 0);
        CHECK_RESULT(ctx, gpuir__nvrtc_compile(ctx, &nv, src, "t.cu", targets[i].sm, targets[i].specific, true,
                                               NULL, 0, &ptx, &size, NULL, NULL), GPUIR_OK);
        CHECK(ptx_too && ptx && strcmp(ptx_too, ptx) == 0);
        free(cubin);
        free(log);
        free(ptx_too);
        free(ptx);
    }
    gpuir__nvrtc_unload(&nv);
    gpuir_ctx_destroy(ctx);
}

#if defined(__SANITIZE_ADDRESS__)
/* In an ASan build the emulated kernels can be built with ASan too. */
TEST(emulated_kernels_build_with_asan) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    gpuir_program_desc d = {.backend = GPUIR_BACKEND_EMU, .emu_sanitize = true};
    gpuir_program *p = gpuir_program_make(parse(ctx, chain_text), &d);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    if (p) check_against_ref(ctx, p, 3);
    gpuir_ctx_destroy(ctx);
}
#endif


/* A global's device copy is uploaded once and again after a rebinding:
   each run sees the data bound at the time. */
TEST(a_rebound_global_is_uploaded_again) {
    static const char text[] = GLOBAL_MATMUL_TEXT;
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *ref = parse(ctx, text), *low = parse(ctx, text);
    gpuir_program *p = make(low, GPUIR_BACKEND_EMU, NULL);
    gpuir_array w, x, want, got;
    int64_t wd[] = {6, 4}, xd[] = {3, 6};
    gpuir_array_alloc(ctx, &w, GPUIR_F32, 2, wd);
    gpuir_array_alloc(ctx, &x, GPUIR_F32, 2, xd);
    gpuir_array_fill_random(&x, 4);
    for (uint64_t seed = 10; p && seed < 13; seed++) {
        gpuir_array_fill_random(&w, seed);
        CHECK_RESULT(ctx, gpuir_module_bind_global(ref, "W", &w), GPUIR_OK);
        if (seed != 11) CHECK_RESULT(ctx, gpuir_module_bind_global(low, "W", &w), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_ref_run(ref, "g", 1, &x, 1, &want), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_program_run(p, "g", 1, &x, 1, &got), GPUIR_OK);
        /* seed 11 is bound to the interpreter only: the program still has 10's */
        gpuir_result r = gpuir_array_compare(ctx, &got, &want, 1e-5, 1e-6);
        CHECK(seed == 11 ? r == GPUIR_ERR_MISMATCH : r == GPUIR_OK);
        gpuir_ctx_clear_error(ctx);
        gpuir_array_release(&want);
        gpuir_array_release(&got);
    }
    gpuir_array_release(&w);
    gpuir_array_release(&x);
    gpuir_ctx_destroy(ctx);
}


/* A dense constant (an initialized global after bufferize) crosses the bus
   once per program however many runs read it; each run copies only its
   input in and its result out. Rebinding the global uploads it again. */
TEST(a_dense_constant_is_uploaded_once_per_program) {
    static const char text[] =
        "func.func @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {\n"
        "  %c = constant {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]>} : () -> tensor<2x4xf32>\n"
        "  %y = mul %x, %c : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>\n"
        "  return %y : tensor<2x4xf32>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, text);
    gpuir_program *p = make(m, GPUIR_BACKEND_EMU, NULL);
    CHECK(p != NULL);
    CHECK(gpuir_module_global_count(m) == 1 && strcmp(gpuir_module_global_name(m, 0), "__const_0") == 0);
    gpuir_array x, y;
    int64_t d[] = {2, 4};
    gpuir_array_alloc(ctx, &x, GPUIR_F32, 2, d);
    for (int run = 0; p && run < 3; run++) {
        for (int i = 0; i < 8; i++) ((float *)x.data)[i] = (float)(run + i);
        CHECK_RESULT(ctx, gpuir_program_run(p, "f", 1, &x, 1, &y), GPUIR_OK);
        for (int i = 0; y.data && i < 8; i++) CHECK(((float *)y.data)[i] == (float)(run + i) * (float)(i + 1));
        gpuir_array_release(&y);
    }
    gpuir_program_stats st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    CHECK(st.runs == 3 && st.launches == 3);
    CHECK(st.uploads == 1 && st.upload_bytes == 32);
    CHECK(st.h2d_copies == 3 && st.h2d_bytes == 3 * 32 && st.d2h_copies == 3 && st.d2h_bytes == 3 * 32);
    gpuir_array c;
    gpuir_array_alloc(ctx, &c, GPUIR_F32, 2, d);
    for (int i = 0; i < 8; i++) ((float *)c.data)[i] = -1.0f;
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "__const_0", &c), GPUIR_OK);
    if (p) CHECK_RESULT(ctx, gpuir_program_run(p, "f", 1, &x, 1, &y), GPUIR_OK);
    for (int i = 0; p && y.data && i < 8; i++) CHECK(((float *)y.data)[i] == -((float *)x.data)[i]);
    if (p) CHECK(gpuir_program_get_stats(p).uploads == 2);
    if (p) gpuir_array_release(&y);
    gpuir_array_release(&c);
    gpuir_array_release(&x);
    gpuir_ctx_destroy(ctx);
}

/* A program that would hold more device memory at once than the context
   allows is refused when it is made, naming the function, the op and the
   figures; the peak is in the stats. Here the two 4 KiB inputs and the
   4 KiB result of the matmul live together: 12 KiB. */
TEST(a_program_over_the_device_memory_cap_is_refused) {
    static const char text[] =
        "func.func @f(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>) -> tensor<32x32xf32> {\n"
        "  %c = matmul %a, %b : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>\n"
        "  return %c : tensor<32x32xf32>\n}\n";
    gpuir_ctx_desc cd = {.max_device_bytes = 3 * 4096};
    gpuir_ctx *ctx = gpuir_ctx_make(&cd);
    gpuir_program *p = make(parse(ctx, text), GPUIR_BACKEND_EMU, NULL);
    CHECK(p != NULL);
    if (p) CHECK(gpuir_program_get_stats(p).peak_device_bytes == 3 * 4096);
    gpuir_ctx_destroy(ctx);
    cd.max_device_bytes = 3 * 4096 - 1;
    ctx = gpuir_ctx_make(&cd);
    p = make(parse(ctx, text), GPUIR_BACKEND_EMU, NULL);
    CHECK(p == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_LIMIT);
    CHECK(strstr(gpuir_ctx_error(ctx), "@f holds 12288 bytes of device memory at once") != NULL);
    CHECK(strstr(gpuir_ctx_error(ctx), "max_device_bytes of 12287") != NULL);
    gpuir_ctx_destroy(ctx);
}


/* Damages a file: flips byte `at` (negative: from the end), or, with
   keep >= 0, keeps only its first `keep` bytes (negative: all but -keep). */
static void damage_file(const char *path, long at, long keep, bool cut) {
    size_t size;
    char *data = gpuir__slurp(path, &size);
    CHECK(data != NULL && size > 128);
    if (!data) return;
    if (cut) size = keep >= 0 ? (size_t)keep : size - (size_t)-keep;
    else data[at < 0 ? (long)size + at : at] ^= 0x5a;
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, size, f) == size);
    if (f) fclose(f);
    free(data);
}

/* Puts two CUDA modules (a cubin and a PTX text, as NVRTC would make them
   for two programs) into ctx's memory cache; their keys in keys. */
static void put_cuda_modules(gpuir_ctx *ctx, char keys[2][65]) {
    static const char cubin[] = CUDA_ELF_HEADER " a cubin's bytes, long enough to damage them in the middle .........."
                                "......................................................................",
                      ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n";
    const char *parts[] = {"cuda", chain_text};
    gpuir__cache_key(parts, 2, keys[0]);
    gpuir__cache_key(parts, 1, keys[1]);
    gpuir__cache *c = gpuir__ctx_cache(ctx);
    CHECK_RESULT(ctx, gpuir__cache_put(c, keys[0], "cubin", cubin, sizeof cubin), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir__cache_put(c, keys[1], "ptx", ptx, sizeof ptx), GPUIR_OK);
}

/* A bundle exported by a context that holds two CUDA modules warms another
   context's cache: it finds both in memory (no compile), writes them to
   its disk cache (a third context gets disk hits). An emulator module is
   host code: never exported (tests/api/test_cache.c). A bundle with a
   flipped byte in a module, a cut one, one with a bad magic, or trailing
   bytes, is refused whole, naming the file and the fault, and imports
   nothing. */
TEST(a_cache_bundle_warms_another_context) {
    char dir[] = "/tmp/gpuir-test-bundle-XXXXXX", path[96], warm[128];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/kernels.bundle", dir);
    snprintf(warm, sizeof warm, "%s/cache", dir);
    gpuir_ctx_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.cache_dir = "";                                  /* memory only */
    gpuir_ctx *a = gpuir_ctx_make(&cd);
    char keys[2][65];
    put_cuda_modules(a, keys);
    CHECK(make(parse(a, chain_text), GPUIR_BACKEND_EMU, NULL) != NULL);
    size_t n = 0;
    CHECK_RESULT(a, gpuir_ctx_cache_export(a, path, &n), GPUIR_OK);
    CHECK(n == 2);
    gpuir_ctx_destroy(a);

    cd.cache_dir = warm;
    gpuir_ctx *b = gpuir_ctx_make(&cd);
    CHECK_RESULT(b, gpuir_ctx_cache_import(b, path, &n), GPUIR_OK);
    CHECK(n == 2 && gpuir_ctx_cache_stats(b).writes == 2);
    const void *bytes;
    size_t size;
    CHECK(gpuir__cache_get(gpuir__ctx_cache(b), keys[0], "cubin", &bytes, &size));
    CHECK(gpuir__cache_get(gpuir__ctx_cache(b), keys[1], "ptx", &bytes, &size));
    gpuir_cache_stats st = gpuir_ctx_cache_stats(b);
    CHECK(st.mem_hits == 2 && st.misses == 0);
    gpuir_ctx_destroy(b);
    gpuir_ctx *c = gpuir_ctx_make(&cd);                 /* the imported modules are on disk */
    CHECK(gpuir__cache_get(gpuir__ctx_cache(c), keys[0], "cubin", &bytes, &size));
    CHECK(gpuir_ctx_cache_stats(c).disk_hits == 1 && gpuir_ctx_cache_stats(c).misses == 0);
    gpuir_ctx_destroy(c);

    static const struct { long at; bool cut; const char *why; } faults[] = {
        {-1, false, "entry 2 of 2: an entry's module does not match its SHA-256"},
        {-100, true, "entry 2 of 2: truncated"},
        {0, false, "not a gpuir cache bundle"},
        {10, true, "not a gpuir cache bundle"},
        {0, true, "bytes after the last entry"},           /* "junk" appended below */
    };
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        cd.cache_dir = "";
        a = gpuir_ctx_make(&cd);
        put_cuda_modules(a, keys);
        CHECK_RESULT(a, gpuir_ctx_cache_export(a, path, &n), GPUIR_OK);
        gpuir_ctx_destroy(a);
        if (faults[i].cut && faults[i].at == 0) {
            FILE *f = fopen(path, "ab");
            CHECK(f && fputs("junk", f) >= 0);
            if (f) fclose(f);
        } else damage_file(path, faults[i].at, faults[i].at, faults[i].cut);
        b = gpuir_ctx_make(&cd);
        CHECK_RESULT(b, gpuir_ctx_cache_import(b, path, &n), GPUIR_ERR_IO);
        CHECK(strstr(gpuir_ctx_error(b), path) && strstr(gpuir_ctx_error(b), faults[i].why) &&
              strstr(gpuir_ctx_error(b), "nothing imported"));
        gpuir_ctx_clear_error(b);
        CHECK(!gpuir__cache_get(gpuir__ctx_cache(b), keys[0], "cubin", &bytes, &size));
        CHECK(gpuir_ctx_cache_stats(b).mem_hits == 0);  /* nothing of the bad bundle was taken */
        gpuir_ctx_destroy(b);
    }
    b = gpuir_ctx_make(&cd);
    CHECK_RESULT(b, gpuir_ctx_cache_import(b, "/nonexistent/bundle", NULL), GPUIR_ERR_IO);
    gpuir_ctx_clear_error(b);
    CHECK_RESULT(b, gpuir_ctx_cache_export(b, "/nonexistent/dir/bundle", NULL), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(b), "cannot write '/nonexistent/dir/bundle'") != NULL);
    gpuir_ctx_destroy(b);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* A corrupted cache entry is detected, counted, rebuilt and replaced; a
   different program misses. */
TEST(a_corrupt_cache_entry_is_rebuilt) {
    char dir[] = "/tmp/gpuir-test-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx_desc cd = {.cache_dir = dir};
    gpuir_ctx *ctx = gpuir_ctx_make(&cd);
    gpuir_program_destroy(make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL));
    gpuir_ctx_destroy(ctx);
    char cmd[256];                            /* flip a byte in the middle of every entry holding the module */
    snprintf(cmd, sizeof cmd, "for f in %s/*.so %s/*.lowered; do printf '\\377' | dd of=$f bs=1 seek=2000 "
             "conv=notrunc status=none; done", dir, dir);
    CHECK(system(cmd) == 0);
    ctx = gpuir_ctx_make(&cd);
    gpuir_program *p = make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL);
    gpuir_cache_stats st = gpuir_ctx_cache_stats(ctx);
    CHECK(st.corrupt == 2 && st.misses == 1 && st.writes == 1 && st.disk_hits == 0);   /* the module, its copy */
    if (p) check_against_ref(ctx, p, 21);
    gpuir_ctx_destroy(ctx);
    ctx = gpuir_ctx_make(&cd);                /* healed: a hit again */
    gpuir_program_destroy(make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL));
    CHECK(gpuir_ctx_cache_stats(ctx).disk_hits == 1);
    static const char other[] = "func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
                                "  %e = tanh %x : (tensor<8xf32>) -> tensor<8xf32>\n  return %e : tensor<8xf32>\n}\n";
    gpuir_program_destroy(make(parse(ctx, other), GPUIR_BACKEND_EMU, NULL));
    CHECK(gpuir_ctx_cache_stats(ctx).misses == 1);
    gpuir_ctx_destroy(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* A cache directory that cannot be used leaves the memory cache, and says
   why; nothing fails. */
TEST(an_unusable_cache_dir_is_a_reason_not_an_error) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = "/proc/gpuir-cache"});
    gpuir_program *p = make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    CHECK(strcmp(gpuir_ctx_cache_dir(ctx), "") == 0);
    CHECK(strstr(gpuir_ctx_cache_status(ctx), "/proc/gpuir-cache") != NULL);
    if (p) check_against_ref(ctx, p, 22);
    gpuir_ctx_destroy(ctx);
}

TEST(no_libnvrtc_is_unavailable) {
    setenv("GPUIR_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.13", 1);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, chain_text);
    gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL);
    long spilled;
    CHECK_RESULT(ctx, gpuir_module_compile_cuda(m, 90, &spilled, NULL), GPUIR_ERR_UNAVAILABLE);
    CHECK(strstr(gpuir_ctx_error(ctx), "/nonexistent/libnvrtc.so.13") != NULL);
    gpuir_ctx_destroy(ctx);
    unsetenv("GPUIR_NVRTC_LIBRARY");
}

/* A device allocation the emulator cannot make is the driver's out-of-memory
   error, and the run frees what it had. (ASan's allocator aborts on a
   1 TiB request instead of failing it.) */
TEST(a_device_allocation_failure_is_a_cuda_error) {
#if defined(__SANITIZE_ADDRESS__)
    SKIP("AddressSanitizer aborts on a 1 TiB allocation");
#else
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.max_tensor_bytes = (uint64_t)1 << 44});
    static const char text[] =
        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %b = broadcast %x : (tensor<4xf32>) -> tensor<68719476736x4xf32>\n"
        "  %s = reduce_sum %b {axes = [0]} : (tensor<68719476736x4xf32>) -> tensor<4xf32>\n"
        "  return %s : tensor<4xf32>\n}\n";
    gpuir_program *p = make(parse(ctx, text), GPUIR_BACKEND_EMU, NULL);
    CHECK(p != NULL);
    gpuir_array x, out;
    int64_t d[] = {4};
    gpuir_array_alloc(ctx, &x, GPUIR_F32, 1, d);
    if (p) CHECK_RESULT(ctx, gpuir_program_run(p, "f", 1, &x, 1, &out), GPUIR_ERR_CUDA);
    CHECK(strstr(gpuir_ctx_error(ctx), "cuMemAllocAsync failed (CUDA_ERROR_OUT_OF_MEMORY") != NULL);
    gpuir_array_release(&x);
    gpuir_ctx_destroy(ctx);
#endif
}


/* A parameter in device memory cannot take a host array. */
TEST(a_device_parameter_refuses_a_host_array) {
    static const char text[] =
        "gpu.module @kernels {\n"
        "  gpu.func @k(%a: memref<4xf32, 1>) kernel {\n"
        "    exp %a, %a : (memref<4xf32, 1>, memref<4xf32, 1>) -> ()\n"
        "    return\n  }\n}\n"
        "func.func @f(%x: memref<4xf32, 1>) {\n"
        "  gpu.launch_func %x {kernel = @kernels::@k, grid = [1, 1, 1], block = [32, 1, 1]} : (memref<4xf32, 1>) -> ()\n"
        "  return\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_program *p = make(parse(ctx, text), GPUIR_BACKEND_EMU, NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    gpuir_array x;
    int64_t d[] = {4};
    gpuir_array_alloc(ctx, &x, GPUIR_F32, 1, d);
    if (p) CHECK_RESULT(ctx, gpuir_program_run(p, "f", 1, &x, 0, NULL), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(ctx), "input #0: parameter %x is in device memory") != NULL);
    gpuir_ctx_clear_error(ctx);
    /* a buffer of the wrong size: the types as written (memrefs here) */
    gpuir_buffer_desc bd = {.backend = GPUIR_BACKEND_EMU, .dtype = GPUIR_F32, .rank = 1, .dims = {5}};
    gpuir_buffer b = gpuir_buffer_make(ctx, &bd);
    gpuir_arg in[1] = {gpuir_arg_buffer(b)};
    gpuir_run_desc rd = {.func = "f", .n_inputs = 1, .inputs = in};
    if (p) CHECK_RESULT(ctx, gpuir_program_run_args(p, &rd), GPUIR_ERR_SHAPE);
    CHECK(strstr(gpuir_ctx_error(ctx), "input #0 (%x): memref<4xf32, 1> is wanted, the argument is memref<5xf32, 1>"));
    gpuir_buffer_destroy(ctx, b);
    gpuir_array_release(&x);
    gpuir_ctx_destroy(ctx);
}

/* GPUIR_LOG and GPUIR_DUMP_DIR: lines through the context's log callback,
   read once when the context is made (changing the environment later does
   nothing to it). */
typedef struct log_lines { char text[8192]; int n; } log_lines;

static void collect(void *user, const char *message) {
    log_lines *l = (log_lines *)user;
    size_t len = strlen(l->text);
    snprintf(l->text + len, sizeof l->text - len, "%s\n", message);
    l->n++;
}

static gpuir_ctx *logging_ctx(log_lines *l) {
    gpuir_ctx_desc d;
    memset(&d, 0, sizeof d);
    memset(l, 0, sizeof *l);
    d.log = collect;
    d.log_user = l;
    return gpuir_ctx_make(&d);
}

TEST(gpuir_log_goes_through_the_log_callback) {
    log_lines l;
    setenv("GPUIR_LOG", "2", 1);
    gpuir_ctx *ctx = logging_ctx(&l);
    unsetenv("GPUIR_LOG");                              /* read once: already taken */
    gpuir_program *p = make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL);
    CHECK(p != NULL);
    if (p) check_against_ref(ctx, p, 5);
    CHECK(strstr(l.text, "compile: emu module of ") != NULL);
    CHECK(strstr(l.text, "copy: 140 bytes host to device") != NULL);      /* %x: 5x7 f32 */
    CHECK(strstr(l.text, "copy: 20 bytes device to host") != NULL);       /* %s: 5 f32 */
    CHECK(strstr(l.text, "launch gpuir_k_f_k0: grid ") != NULL && strstr(l.text, ", block ") != NULL);
    CHECK(strstr(l.text, "run @f on emu: ") != NULL);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);

    setenv("GPUIR_LOG", "1", 1);                        /* level 1: no run times */
    ctx = logging_ctx(&l);
    p = make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL);
    if (p) check_against_ref(ctx, p, 6);
    CHECK(strstr(l.text, "compile: emu module of ") && strstr(l.text, "memory cache hit") == NULL);
    CHECK(strstr(l.text, "launch gpuir_k_f_k0") != NULL && strstr(l.text, "run @f") == NULL);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);

    unsetenv("GPUIR_LOG");                              /* off: the callback hears only errors */
    ctx = logging_ctx(&l);
    setenv("GPUIR_LOG", "2", 1);                        /* too late for this context */
    p = make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL);
    if (p) check_against_ref(ctx, p, 7);
    CHECK(l.n == 0);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
    unsetenv("GPUIR_LOG");
}

TEST(gpuir_dump_dir_writes_cuda_and_ir) {
    char dir[] = "/tmp/gpuir-test-dump-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[64];
    snprintf(sub, sizeof sub, "%s/d", dir);
    setenv("GPUIR_DUMP_DIR", sub, 1);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    unsetenv("GPUIR_DUMP_DIR");
    gpuir_program *p = make(parse(ctx, chain_text), GPUIR_BACKEND_EMU, NULL);
    CHECK(p != NULL);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "grep -q 'GPUIR_KERNEL gpuir_k_f_k0(' %s/*.cu && grep -q 'gpu.launch_func' %s/*.gir && "
             "[ $(ls %s | wc -l) = 2 ]", sub, sub, sub);
    CHECK(system(cmd) == 0);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    RUN(nvrtc_loaded_again_keeps_no_memory);
    RUN(cuda_unavailable_is_a_clear_error);
    RUN(auto_falls_back_to_the_emulator_and_says_why);
    RUN(a_compiler_that_fails_is_a_compile_error);
    RUN(a_module_that_does_not_load_is_a_cuda_error);
    RUN(a_program_runs_again_with_new_inputs);
    RUN(the_cache_serves_later_programs_from_memory_and_disk);
    RUN(wrong_inputs_are_rejected);
    RUN(launch_limits_are_checked_before_launching);
    RUN_PLAIN(nvrtc_compiles_every_kernel_without_spills);
    RUN_PLAIN(nvrtc_compiles_register_tiled_matmuls);
    RUN_PLAIN(nvrtc_keeps_plain_matmul_accumulators_in_registers);
    RUN_PLAIN(nvrtc_compiles_split_k_kernels);
    RUN(nvrtc_compiles_dynamic_kernels);
    RUN(nvrtc_compiles_named_parameters);
    RUN_PLAIN(nvrtc_compiles_softmax_columns);
    RUN_PLAIN(nvrtc_compiles_column_reductions);
    RUN_PLAIN(nvrtc_compiles_column_groups);
    RUN_PLAIN(nvrtc_compiles_reductions_with_users_and_totals);
    RUN_PLAIN(nvrtc_compiles_row_kernels);
    RUN_PLAIN(nvrtc_compiles_reshaped_rows);
    RUN_PLAIN(nvrtc_compiles_sibling_kernels);
    RUN_PLAIN(nvrtc_compiles_column_variance_kernels);
    RUN(sibling_kernels_run_again_with_new_inputs);
    RUN_PLAIN(nvrtc_compiles_tensor_core_kernels);
    RUN_PLAIN(nvrtc_compiles_wgmma_kernels_for_sm_90a);
    RUN_PLAIN(nvrtc_compiles_the_wgmma_variants_for_sm_90a);
    RUN_PLAIN(nvrtc_compiles_the_clustered_wgmma_kernels_for_sm_90a);
    RUN_PLAIN(nvrtc_compiles_the_split_wgmma_kernels_for_sm_90a);
    RUN(nvrtc_compiles_the_default_bf16_matmul_to_wgmma_on_sm_90);
    RUN(tensor_core_tiles_stride_over_any_grid);
    RUN(emulator_refuses_a_launch_short_of_dynamic_shared_memory);
    RUN(dynamic_dims_run_at_any_size_and_must_agree);
    RUN(cuda_source_is_deterministic);
    RUN(cuda_available_says_why_not);
    RUN(a_rebound_global_is_uploaded_again);
    RUN(a_dense_constant_is_uploaded_once_per_program);
    RUN(a_program_over_the_device_memory_cap_is_refused);
    RUN(a_cache_bundle_warms_another_context);
    RUN(a_corrupt_cache_entry_is_rebuilt);
    RUN(an_unusable_cache_dir_is_a_reason_not_an_error);
    RUN(no_libnvrtc_is_unavailable);
    RUN(a_device_allocation_failure_is_a_cuda_error);
    RUN(a_device_parameter_refuses_a_host_array);
    RUN(gpuir_log_goes_through_the_log_callback);
    RUN(gpuir_dump_dir_writes_cuda_and_ir);
    RUN(nvrtc_errors_point_back_to_the_ir_op);
    RUN(the_ptx_comes_from_the_cubins_compile);
#if defined(__SANITIZE_ADDRESS__)
    RUN(emulated_kernels_build_with_asan);
#endif
    return CHECK_EXIT();
}

/* Fault injection through the device table (ctx->fault): for end-to-end
   programs on the emulator, fail each table call in turn (k = 1..N, N the
   calls a clean make and two runs take), once and for good. Every failure is
   a GPUIR_ERR_CUDA naming the call and the injection; after a transient one
   the context works again and gives the interpreter's results; nothing
   leaks (the emulator asserts zero live device buffers and modules when a
   program goes; LeakSanitizer checks host memory in the ASan build). And a
   fatal error (an illegal address) loses the device context: later runs
   fail fast with the reason. */
#define _POSIX_C_SOURCE 200809L
#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

#include <stdlib.h>

/* A chain with a reduction; two independent matmuls on streams with a
   dense constant and a global (resident); a softmax. */
static const char *const programs[] = {
    "func.func @f(%x: tensor<5x7xf32>, %b: tensor<7xf32>) -> (tensor<5x7xf32>, tensor<5xf32>) {\n"
    "  %e = exp %x : (tensor<5x7xf32>) -> tensor<5x7xf32>\n"
    "  %a = add %e, %b : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>\n"
    "  %s = reduce_sum %x {axes = [1]} : (tensor<5x7xf32>) -> tensor<5xf32>\n"
    "  return %a, %s : tensor<5x7xf32>, tensor<5xf32>\n}\n",

    "global @W : tensor<8x8xf32>\n"
    "func.func @f(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {\n"
    "  %w = get_global {name = @W} : () -> tensor<8x8xf32>\n"
    "  %c = constant {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]>} : () -> tensor<8xf32>\n"
    "  %p = matmul %x, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>\n"
    "  %q = matmul %y, %y : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>\n"
    "  %r = add %q, %c : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>\n"
    "  return %p, %r : tensor<8x8xf32>, tensor<8x8xf32>\n}\n",

    "func.func @f(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {\n"
    "  %s = softmax %x {axis = -1} : (tensor<4x64xf32>) -> tensor<4x64xf32>\n"
    "  %m = mul %s, %y : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>\n"
    "  return %s, %m : tensor<4x64xf32>, tensor<4x64xf32>\n}\n",
};
#define N_PROGRAMS (sizeof programs / sizeof programs[0])

typedef struct fixture {
    gpuir_ctx *ctx;
    gpuir_module *ref;
    gpuir_array in[2], want[2];
} fixture;

static gpuir_module *parse(gpuir_ctx *ctx, const char *text) {
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "test");
    if (m && gpuir_module_global_count(m)) {            /* @W: a fixed pattern */
        gpuir_array w;
        int64_t d[] = {8, 8};
        gpuir_array_alloc(ctx, &w, GPUIR_F32, 2, d);
        gpuir_array_fill_random(&w, 77);
        gpuir_module_bind_global(m, "W", &w);
        gpuir_array_release(&w);
    }
    return m;
}

static void fixture_make(fixture *fx, const char *text) {
    memset(fx, 0, sizeof *fx);
    fx->ctx = gpuir_ctx_make(NULL);
    fx->ref = parse(fx->ctx, text);
    const gpuir__func *f = gpuir__func_at(fx->ref, gpuir__find_func(fx->ref, "f"));
    for (int i = 0; i < 2; i++) {
        gpuir_type t = gpuir__value_at(fx->ref, f->params[i])->type;
        gpuir_array_alloc(fx->ctx, &fx->in[i], t.dtype, t.rank, t.dims);
        gpuir_array_fill_random(&fx->in[i], 5 + (uint64_t)i);
    }
    CHECK_RESULT(fx->ctx, gpuir_ref_run(fx->ref, "f", 2, fx->in, 2, fx->want), GPUIR_OK);
}

static void fixture_free(fixture *fx) {
    for (int i = 0; i < 2; i++) {
        gpuir_array_release(&fx->in[i]);
        gpuir_array_release(&fx->want[i]);
    }
    gpuir_ctx_destroy(fx->ctx);     /* destroys modules and programs; the emulator asserts no leaks */
}

/* Runs p and compares with the interpreter. */
static gpuir_result run_and_compare(fixture *fx, gpuir_program *p) {
    gpuir_array got[2];
    memset(got, 0, sizeof got);
    gpuir_result r = gpuir_program_run(p, "f", 2, fx->in, 2, got);
    for (int i = 0; !r && i < 2; i++) r = gpuir_array_compare(fx->ctx, &got[i], &fx->want[i], 1e-5, 1e-5);
    for (int i = 0; i < 2; i++) gpuir_array_release(&got[i]);
    return r;
}

static gpuir_program *make_emu(gpuir_module *m) {
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_EMU;
    return gpuir_program_make(m, &d);
}

/* A lowered copy of the program, a program on it, and two runs; the
   first failure's code. */
static gpuir_result make_and_run_twice(fixture *fx, const char *text) {
    gpuir_module *m = parse(fx->ctx, text);
    gpuir_program *p = m ? make_emu(m) : NULL;
    gpuir_result r = p ? GPUIR_OK : gpuir_ctx_result(fx->ctx);
    for (int i = 0; !r && i < 2; i++) r = run_and_compare(fx, p);
    gpuir_program_destroy(p);
    gpuir_module_destroy(m);
    return r;
}

/* The table calls a clean make and two runs take. */
static uint64_t count_calls(const char *text) {
    fixture fx;
    fixture_make(&fx, text);
    fx.ctx->fault.fail_at = UINT64_MAX;             /* wrap, never fail */
    CHECK_RESULT(fx.ctx, make_and_run_twice(&fx, text), GPUIR_OK);
    uint64_t n = fx.ctx->fault.calls;
    fixture_free(&fx);
    return n;
}

static uint64_t injected_total, cases_total;

/* Fails call k (once, or from k on), checks the error, then turns the
   fault off and checks that the same context works. */
static void inject(const char *text, uint64_t k, bool persistent) {
    fixture fx;
    fixture_make(&fx, text);
    fx.ctx->fault.fail_at = k;
    fx.ctx->fault.persistent = persistent;
    gpuir_result r = make_and_run_twice(&fx, text);
    uint64_t injected = fx.ctx->fault.injected;
    injected_total += injected;
    cases_total++;
    if (injected) {
        CHECK_RESULT(fx.ctx, r, GPUIR_ERR_CUDA);
        CHECK(strstr(gpuir_ctx_error(fx.ctx), "injected by the fault test") != NULL);
        if (r != GPUIR_ERR_CUDA) fprintf(stderr, "  k=%llu%s\n", (unsigned long long)k, persistent ? " (persistent)" : "");
    } else {
        CHECK_RESULT(fx.ctx, r, GPUIR_OK);
    }
    gpuir_ctx_clear_error(fx.ctx);
    fx.ctx->fault.fail_at = 0;
    CHECK_RESULT(fx.ctx, make_and_run_twice(&fx, text), GPUIR_OK);
    fixture_free(&fx);
}

TEST(every_table_call_fails_cleanly_once) {
    for (size_t i = 0; i < N_PROGRAMS; i++) {
        uint64_t n = count_calls(programs[i]);
        CHECK(n > 20);
        for (uint64_t k = 1; k <= n; k++) inject(programs[i], k, false);
    }
}

TEST(every_table_call_fails_cleanly_for_good) {
    for (size_t i = 0; i < N_PROGRAMS; i++) {
        uint64_t n = count_calls(programs[i]);
        for (uint64_t k = 1; k <= n; k++) inject(programs[i], k, true);
    }
}

/* An illegal address (fatal to a CUDA context) in a run: that run fails,
   and so does every later run of the program, at once and with the reason;
   a new program (its own emulated device) works. */
TEST(a_fatal_error_loses_the_device_context) {
    fixture fx;
    fixture_make(&fx, programs[0]);
    gpuir_module *m = parse(fx.ctx, programs[0]);
    gpuir_program *p = make_emu(m);
    CHECK(p != NULL);
    if (p) {
        CHECK_RESULT(fx.ctx, run_and_compare(&fx, p), GPUIR_OK);
        gpuir__fault_wrap(p);                /* from here: the next run's first call fails fatally */
        fx.ctx->fault.calls = 0;
        fx.ctx->fault.fail_at = 1;
        fx.ctx->fault.code = 700;            /* CUDA_ERROR_ILLEGAL_ADDRESS */
        CHECK_RESULT(fx.ctx, run_and_compare(&fx, p), GPUIR_ERR_CUDA);
        CHECK(strstr(gpuir_ctx_error(fx.ctx), "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL);
        gpuir_ctx_clear_error(fx.ctx);
        fx.ctx->fault.fail_at = 0;           /* no more faults: the loss alone fails the next run */
        CHECK_RESULT(fx.ctx, run_and_compare(&fx, p), GPUIR_ERR_CUDA);
        CHECK(strstr(gpuir_ctx_error(fx.ctx), "the device context is lost") != NULL);
        CHECK(strstr(gpuir_ctx_error(fx.ctx), "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL);
        gpuir_ctx_clear_error(fx.ctx);
    }
    fx.ctx->fault.code = 0;
    CHECK_RESULT(fx.ctx, make_and_run_twice(&fx, programs[0]), GPUIR_OK);
    fixture_free(&fx);
}

int main(void) {
    RUN(every_table_call_fails_cleanly_once);
    RUN(every_table_call_fails_cleanly_for_good);
    RUN(a_fatal_error_loses_the_device_context);
    printf("# %llu injection cases, %llu failures injected\n", (unsigned long long)cases_total,
           (unsigned long long)injected_total);
    return CHECK_EXIT();
}

/* Arguments that live where the caller keeps them (gpuir_program_run_args),
   on the emulator: device buffers in and out with no copies (h2d and d2h
   bytes zero), preallocated outputs written in place with no allocation,
   the caller's memory wrapped and never freed, runs on the caller's stream
   that return before the work is done and stay ordered with uploads,
   downloads and each other (across programs, under seeded interleavings),
   arguments staged through the host where the host code needs them, a
   global bound to a buffer, pinned memory, and every bad argument as a
   clear error naming it, leaving the context usable. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>

/* Host allocations are counted (an in-place output allocates less). */
static uint64_t host_allocs;
static void *count_malloc(size_t n) { host_allocs++; return malloc(n); }
#define GPUIR_MALLOC(size) count_malloc(size)
#define GPUIR_REALLOC(p, size) realloc(p, size)
#define GPUIR_FREE(p) free(p)

#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

/* y = relu(x · W + b): W a global, x and b parameters. */
static const char *const mlp =
    "global @W : tensor<8x16xf32>\n"
    "func.func @mlp(%x: tensor<4x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {\n"
    "  %w = get_global {name = @W} : () -> tensor<8x16xf32>\n"
    "  %m = matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>\n"
    "  %a = add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>\n"
    "  %y = relu %a : (tensor<4x16xf32>) -> tensor<4x16xf32>\n"
    "  return %y : tensor<4x16xf32>\n}\n";

/* The host code needs %x (it is returned as it is): staged. */
static const char *const echo =
    "func.func @f(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {\n"
    "  %e = exp %x : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
    "  return %e, %x : tensor<4x4xf32>, tensor<4x4xf32>\n}\n";

typedef struct fixture {
    gpuir_ctx *ctx;
    gpuir_module *m, *ref;
    gpuir_program *p;
    gpuir_array x, b, w, want;
} fixture;

static gpuir_program *make_emu(gpuir_module *m, uint64_t seed) {
    return gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU, .emu_seed = seed});
}

static void fixture_make(fixture *fx, uint64_t seed, bool bind_w) {
    memset(fx, 0, sizeof *fx);
    fx->ctx = gpuir_ctx_make(NULL);
    int64_t xd[] = {4, 8}, bd[] = {16}, wd[] = {8, 16};
    gpuir_array_alloc(fx->ctx, &fx->x, GPUIR_F32, 2, xd);
    gpuir_array_alloc(fx->ctx, &fx->b, GPUIR_F32, 1, bd);
    gpuir_array_alloc(fx->ctx, &fx->w, GPUIR_F32, 2, wd);
    gpuir_array_fill_random(&fx->x, 1);
    gpuir_array_fill_random(&fx->b, 2);
    gpuir_array_fill_random(&fx->w, 3);
    fx->ref = gpuir_module_parse(fx->ctx, mlp, strlen(mlp), "mlp");
    gpuir_module_bind_global(fx->ref, "W", &fx->w);
    gpuir_array in[2] = {fx->x, fx->b};
    CHECK_RESULT(fx->ctx, gpuir_ref_run(fx->ref, "mlp", 2, in, 1, &fx->want), GPUIR_OK);
    fx->m = gpuir_module_parse(fx->ctx, mlp, strlen(mlp), "mlp");
    if (bind_w) gpuir_module_bind_global(fx->m, "W", &fx->w);
    fx->p = make_emu(fx->m, seed);
    CHECK(fx->p != NULL);
}

static void fixture_free(fixture *fx) {
    gpuir_array_release(&fx->x);
    gpuir_array_release(&fx->b);
    gpuir_array_release(&fx->w);
    gpuir_array_release(&fx->want);
    gpuir_ctx_destroy(fx->ctx);
}

static gpuir_buffer buffer_like(gpuir_ctx *ctx, const gpuir_array *a, uint64_t ptr) {
    gpuir_buffer_desc d = {.backend = GPUIR_BACKEND_EMU, .dtype = a->dtype, .rank = a->rank};
    memcpy(d.dims, a->dims, sizeof d.dims);
    d.device_ptr = ptr;
    return gpuir_buffer_make(ctx, &d);
}

static gpuir_run_desc run_desc(gpuir_arg *in, size_t n_in, gpuir_arg *out, size_t n_out, gpuir_stream s) {
    gpuir_run_desc d = {.inputs = in, .n_inputs = n_in, .outputs = out, .n_outputs = n_out, .stream = s};
    return d;
}

/* Downloads buffer b and compares it with want. */
static void check_buffer(fixture *fx, gpuir_buffer b, const gpuir_array *want, gpuir_stream s) {
    gpuir_array got;
    CHECK_RESULT(fx->ctx, gpuir_array_alloc(fx->ctx, &got, want->dtype, want->rank, want->dims), GPUIR_OK);
    CHECK_RESULT(fx->ctx, gpuir_buffer_download(fx->ctx, b, &got, s), GPUIR_OK);
    if (s) CHECK_RESULT(fx->ctx, gpuir_stream_synchronize(fx->ctx, s), GPUIR_OK);
    CHECK_RESULT(fx->ctx, gpuir_array_compare(fx->ctx, &got, want, 1e-5, 1e-5), GPUIR_OK);
    gpuir_array_release(&got);
}

/* Device mode: no copy in or out on any of several runs, the right result,
   and the report says so; W is uploaded once. */
TEST(device_buffers_move_no_bytes) {
    fixture fx;
    fixture_make(&fx, 0, true);
    gpuir_buffer bx = buffer_like(fx.ctx, &fx.x, 0), bb = buffer_like(fx.ctx, &fx.b, 0);
    gpuir_buffer by = buffer_like(fx.ctx, &fx.want, 0);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bx, &fx.x, NULL), GPUIR_OK);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bb, &fx.b, NULL), GPUIR_OK);
    gpuir_arg in[2] = {gpuir_arg_buffer(bx), gpuir_arg_buffer(bb)}, out[1] = {gpuir_arg_buffer(by)};
    gpuir_run_desc d = run_desc(in, 2, out, 1, NULL);
    gpuir_program_stats s0 = gpuir_program_get_stats(fx.p);
    for (int i = 0; i < 5; i++) CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
    gpuir_program_stats s1 = gpuir_program_get_stats(fx.p);
    CHECK(s1.h2d_bytes == s0.h2d_bytes && s1.d2h_bytes == s0.d2h_bytes);
    CHECK(s1.h2d_copies == s0.h2d_copies && s1.d2h_copies == s0.d2h_copies);
    CHECK(s1.runs == s0.runs + 5 && s1.uploads == 1);
    check_buffer(&fx, by, &fx.want, NULL);
    const char *rep = gpuir_module_placement_report(fx.m);
    CHECK(strstr(rep, "@mlp: %x: device-resident: no copy") != NULL);
    CHECK(strstr(rep, "@mlp: %b: device-resident: no copy") != NULL);
    CHECK(strstr(rep, "@mlp: result #0: device-resident: no copy") != NULL);
    /* the same program still takes host arrays, copying as before */
    gpuir_array got;
    gpuir_array ins[2] = {fx.x, fx.b};
    CHECK_RESULT(fx.ctx, gpuir_program_run(fx.p, "mlp", 2, ins, 1, &got), GPUIR_OK);
    CHECK(gpuir_program_get_stats(fx.p).h2d_bytes == s1.h2d_bytes + (4 * 8 + 16) * 4);
    CHECK(gpuir_program_get_stats(fx.p).d2h_bytes == s1.d2h_bytes + 4 * 16 * 4);
    CHECK_RESULT(fx.ctx, gpuir_array_compare(fx.ctx, &got, &fx.want, 1e-5, 1e-5), GPUIR_OK);
    gpuir_array_release(&got);
    fixture_free(&fx);
}

/* Preallocated outputs: a host array is written in place (same memory,
   fewer host allocations than a new array), a mixed run (host input,
   device output) copies only the input. */
TEST(preallocated_outputs_are_written_in_place) {
    fixture fx;
    fixture_make(&fx, 0, true);
    gpuir_array y;
    gpuir_array_alloc(fx.ctx, &y, GPUIR_F32, 2, fx.want.dims);
    void *data = y.data;
    gpuir_arg in[2] = {gpuir_arg_host(fx.x), gpuir_arg_host(fx.b)}, out[1] = {gpuir_arg_host(y)};
    gpuir_run_desc d = run_desc(in, 2, out, 1, NULL);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);   /* warm */
    uint64_t before = host_allocs;
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
    uint64_t in_place = host_allocs - before;
    CHECK(out[0].host.data == data);
    CHECK_RESULT(fx.ctx, gpuir_array_compare(fx.ctx, &y, &fx.want, 1e-5, 1e-5), GPUIR_OK);
    out[0].kind = GPUIR_ARG_NONE;       /* a new array each run */
    memset(&out[0].host, 0, sizeof out[0].host);
    before = host_allocs;
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
    CHECK(host_allocs - before > in_place);
    CHECK(out[0].host.data != NULL && out[0].host.data != data);
    CHECK_RESULT(fx.ctx, gpuir_array_compare(fx.ctx, &out[0].host, &fx.want, 1e-5, 1e-5), GPUIR_OK);
    gpuir_array_release(&out[0].host);
    gpuir_buffer by = buffer_like(fx.ctx, &fx.want, 0);
    out[0] = gpuir_arg_buffer(by);
    gpuir_program_stats s0 = gpuir_program_get_stats(fx.p);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
    gpuir_program_stats s1 = gpuir_program_get_stats(fx.p);
    CHECK(s1.h2d_bytes - s0.h2d_bytes == (4 * 8 + 16) * 4 && s1.d2h_bytes == s0.d2h_bytes);
    check_buffer(&fx, by, &fx.want, NULL);
    gpuir_array_release(&y);
    fixture_free(&fx);
}

/* The caller's memory, wrapped: used in place, never freed (the test
   writes and frees it after the buffer and the context are gone). */
TEST(caller_memory_is_never_freed) {
    fixture fx;
    fixture_make(&fx, 0, true);
    size_t ybytes = 4 * 16 * sizeof(float);
    float *mine_x = (float *)malloc(4 * 8 * sizeof(float)), *mine_y = (float *)malloc(ybytes);
    memcpy(mine_x, fx.x.data, 4 * 8 * sizeof(float));
    gpuir_buffer bx = buffer_like(fx.ctx, &fx.x, (uint64_t)(uintptr_t)mine_x);
    gpuir_buffer by = buffer_like(fx.ctx, &fx.want, (uint64_t)(uintptr_t)mine_y);
    gpuir_buffer bb = buffer_like(fx.ctx, &fx.b, 0);
    CHECK(gpuir_buffer_device_ptr(fx.ctx, bx) == (uint64_t)(uintptr_t)mine_x);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bb, &fx.b, NULL), GPUIR_OK);
    gpuir_arg in[2] = {gpuir_arg_buffer(bx), gpuir_arg_buffer(bb)}, out[1] = {gpuir_arg_buffer(by)};
    gpuir_run_desc d = run_desc(in, 2, out, 1, NULL);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
    gpuir_array y = fx.want;
    y.data = mine_y;                    /* the result is in the caller's memory */
    CHECK_RESULT(fx.ctx, gpuir_array_compare(fx.ctx, &y, &fx.want, 1e-5, 1e-5), GPUIR_OK);
    gpuir_buffer_destroy(fx.ctx, bx);
    gpuir_buffer_destroy(fx.ctx, by);
    CHECK(!gpuir_buffer_valid(fx.ctx, bx));
    fixture_free(&fx);
    mine_x[0] = 1.0f;                   /* still the caller's: ASan would see a use after free */
    mine_y[0] = 2.0f;
    free(mine_x);
    free(mine_y);
}

/* -y: reads the mlp's result on the device. */
static const char *const negate =
    "func.func @g(%y: tensor<4x16xf32>) -> tensor<4x16xf32> {\n"
    "  %n = neg %y : (tensor<4x16xf32>) -> tensor<4x16xf32>\n"
    "  return %n : tensor<4x16xf32>\n}\n";

/* On the caller's stream: the run returns before its work is done (the
   emulator holds it until a wait), and uploads, a run of one program, a
   run of another reading its result, and a download stay in stream order
   under several interleavings (each program's streams are joined into the
   caller's stream at exit). */
TEST(runs_on_the_callers_stream_are_async_and_ordered) {
    for (uint64_t seed = 1; seed <= 6; seed++) {
        fixture fx;
        fixture_make(&fx, seed, true);
        gpuir_module *m2 = gpuir_module_parse(fx.ctx, negate, strlen(negate), "negate");
        gpuir_program *p2 = make_emu(m2, seed + 100);
        gpuir_stream s = gpuir_stream_make(fx.ctx, GPUIR_BACKEND_EMU);
        CHECK(s != NULL && p2 != NULL);
        gpuir_buffer bx = buffer_like(fx.ctx, &fx.x, 0), bb = buffer_like(fx.ctx, &fx.b, 0);
        gpuir_buffer by = buffer_like(fx.ctx, &fx.want, 0), bz = buffer_like(fx.ctx, &fx.want, 0);
        CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bx, &fx.x, s), GPUIR_OK);
        CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bb, &fx.b, s), GPUIR_OK);
        gpuir_arg in[2] = {gpuir_arg_buffer(bx), gpuir_arg_buffer(bb)}, out[1] = {gpuir_arg_buffer(by)};
        gpuir_run_desc d = run_desc(in, 2, out, 1, s);
        CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);   /* uploads W */
        CHECK_RESULT(fx.ctx, gpuir_stream_synchronize(fx.ctx, s), GPUIR_OK);
        float *y = (float *)(uintptr_t)gpuir_buffer_device_ptr(fx.ctx, by);
        y[0] = -12345.0f;               /* emulated device memory is host memory */
        CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
        CHECK(y[0] == -12345.0f);       /* enqueued, not run: the run is asynchronous */
        CHECK_RESULT(fx.ctx, gpuir_program_wait(fx.p), GPUIR_OK);
        CHECK(y[0] != -12345.0f);
        for (int round = 0; round < 3; round++) {
            y[0] = -12345.0f;
            CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
            gpuir_arg in2[1] = {gpuir_arg_buffer(by)}, out2[1] = {gpuir_arg_buffer(bz)};
            gpuir_run_desc d2 = run_desc(in2, 1, out2, 1, s);
            CHECK_RESULT(fx.ctx, gpuir_program_run_args(p2, &d2), GPUIR_OK);   /* after p's run, on s */
            gpuir_array got;
            gpuir_array_alloc(fx.ctx, &got, GPUIR_F32, 2, fx.want.dims);
            CHECK_RESULT(fx.ctx, gpuir_buffer_download(fx.ctx, bz, &got, s), GPUIR_OK);
            CHECK_RESULT(fx.ctx, gpuir_stream_synchronize(fx.ctx, s), GPUIR_OK);
            for (size_t i = 0; i < gpuir_array_count(&got); i++)
                CHECK_NEAR(gpuir_array_get(&got, i), -gpuir_array_get(&fx.want, i), 1e-5);
            gpuir_array_release(&got);
        }
        gpuir_stream_destroy(fx.ctx, s);
        CHECK_RESULT(fx.ctx, gpuir_ctx_result(fx.ctx), GPUIR_OK);
        fixture_free(&fx);
    }
}

/* Two asynchronous runs of one sibling program (a column max, a row sum and
   a total of one matrix: one kernel, tests/ir/run/sibling-fusion.gir) on
   two streams, enqueued before either runs, under several interleavings:
   each launch has a workspace of its own (allocated by its run, counters
   zeroed by its own launch), so both match the interpreter. The emulator
   runs a launch whole, so this cannot show sharing itself; the placed IR
   (sibling-fusion.gir, LAUNCH) pins that the workspace is per launch. */
TEST(two_async_runs_of_one_sibling_program_on_two_streams) {
    static const char text[] =
        "func.func @f(%x: tensor<300x21xf32>) -> (tensor<21xf32>, tensor<300xf32>, tensor<f32>) {\n"
        "  %a = reduce_max %x {axes = [0]} : (tensor<300x21xf32>) -> tensor<21xf32>\n"
        "  %b = reduce_sum %x {axes = [1]} : (tensor<300x21xf32>) -> tensor<300xf32>\n"
        "  %c = reduce_sum %x {axes = [0, 1]} : (tensor<300x21xf32>) -> tensor<f32>\n"
        "  return %a, %b, %c : tensor<21xf32>, tensor<300xf32>, tensor<f32>\n}\n";
    for (uint64_t seed = 1; seed <= 4; seed++) {
        gpuir_ctx *ctx = gpuir_ctx_make(NULL);
        gpuir_module *ref = gpuir_module_parse(ctx, text, strlen(text), "ref");
        gpuir_program *p = make_emu(gpuir_module_parse(ctx, text, strlen(text), "sib"), seed);
        CHECK(ref != NULL && p != NULL);
        gpuir_stream s[2] = {gpuir_stream_make(ctx, GPUIR_BACKEND_EMU), gpuir_stream_make(ctx, GPUIR_BACKEND_EMU)};
        int64_t xd[] = {300, 21};
        gpuir_array x[2], want[2][3];
        gpuir_buffer bx[2], bo[2][3];
        memset(want, 0, sizeof want);
        for (int r = 0; r < 2; r++) {       /* both enqueued before either runs */
            gpuir_array_alloc(ctx, &x[r], GPUIR_F32, 2, xd);
            gpuir_array_fill_random(&x[r], seed * 10 + (uint64_t)r);
            CHECK_RESULT(ctx, gpuir_ref_run(ref, "f", 1, &x[r], 3, want[r]), GPUIR_OK);
            bx[r] = buffer_like(ctx, &x[r], 0);
            CHECK_RESULT(ctx, gpuir_buffer_upload(ctx, bx[r], &x[r], s[r]), GPUIR_OK);
            gpuir_arg in[1] = {gpuir_arg_buffer(bx[r])}, out[3];
            for (int o = 0; o < 3; o++) out[o] = gpuir_arg_buffer(bo[r][o] = buffer_like(ctx, &want[r][o], 0));
            gpuir_run_desc d = run_desc(in, 1, out, 3, s[r]);
            CHECK_RESULT(ctx, gpuir_program_run_args(p, &d), GPUIR_OK);
        }
        CHECK_RESULT(ctx, gpuir_program_wait(p), GPUIR_OK);
        for (int r = 0; r < 2; r++)
            for (int o = 0; o < 3; o++) {
                gpuir_array got;
                gpuir_array_alloc(ctx, &got, GPUIR_F32, want[r][o].rank, want[r][o].dims);
                CHECK_RESULT(ctx, gpuir_buffer_download(ctx, bo[r][o], &got, s[r]), GPUIR_OK);
                CHECK_RESULT(ctx, gpuir_stream_synchronize(ctx, s[r]), GPUIR_OK);
                CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got, &want[r][o], 1e-5, 1e-5), GPUIR_OK);
                gpuir_array_release(&got);
                gpuir_array_release(&want[r][o]);
                gpuir_buffer_destroy(ctx, bo[r][o]);
            }
        for (int r = 0; r < 2; r++) {
            gpuir_buffer_destroy(ctx, bx[r]);
            gpuir_array_release(&x[r]);
            gpuir_stream_destroy(ctx, s[r]);
        }
        gpuir_program_destroy(p);
        gpuir_module_destroy(ref);
        gpuir_ctx_destroy(ctx);
    }
}

/* A staged input is copied out only after the caller's stream has done
   the work that writes it (another program's asynchronous run). */
TEST(a_staged_input_waits_for_the_callers_stream) {
    static const char *const echo16 =
        "func.func @f(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {\n"
        "  %e = neg %x : (tensor<4x16xf32>) -> tensor<4x16xf32>\n"
        "  return %e, %x : tensor<4x16xf32>, tensor<4x16xf32>\n}\n";
    fixture fx;
    fixture_make(&fx, 3, true);
    gpuir_module *m2 = gpuir_module_parse(fx.ctx, echo16, strlen(echo16), "echo16");
    gpuir_program *p2 = make_emu(m2, 5);
    gpuir_stream s = gpuir_stream_make(fx.ctx, GPUIR_BACKEND_EMU);
    gpuir_buffer bx = buffer_like(fx.ctx, &fx.x, 0), bb = buffer_like(fx.ctx, &fx.b, 0);
    gpuir_buffer by = buffer_like(fx.ctx, &fx.want, 0);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bx, &fx.x, s), GPUIR_OK);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bb, &fx.b, s), GPUIR_OK);
    float *y = (float *)(uintptr_t)gpuir_buffer_device_ptr(fx.ctx, by);
    y[0] = -12345.0f;
    gpuir_arg in[2] = {gpuir_arg_buffer(bx), gpuir_arg_buffer(bb)}, out[1] = {gpuir_arg_buffer(by)};
    gpuir_run_desc d = run_desc(in, 2, out, 1, s);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);      /* queued */
    gpuir_array same, neg;
    gpuir_array_alloc(fx.ctx, &same, GPUIR_F32, 2, fx.want.dims);
    gpuir_array_alloc(fx.ctx, &neg, GPUIR_F32, 2, fx.want.dims);
    gpuir_arg in2[1] = {gpuir_arg_buffer(by)}, out2[2] = {gpuir_arg_host(neg), gpuir_arg_host(same)};
    gpuir_run_desc d2 = run_desc(in2, 1, out2, 2, s);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(p2, &d2), GPUIR_OK);
    CHECK_RESULT(fx.ctx, gpuir_array_compare(fx.ctx, &same, &fx.want, 1e-5, 1e-5), GPUIR_OK);
    for (size_t i = 0; i < gpuir_array_count(&neg); i++)
        CHECK_NEAR(gpuir_array_get(&neg, i), -gpuir_array_get(&fx.want, i), 1e-5);
    gpuir_array_release(&same);
    gpuir_array_release(&neg);
    fixture_free(&fx);
}

/* A run with a host argument on the caller's stream waits for the stream
   first and is done when it returns. */
TEST(a_run_with_host_arguments_on_a_stream_is_synchronous) {
    fixture fx;
    fixture_make(&fx, 7, true);
    gpuir_stream s = gpuir_stream_make(fx.ctx, GPUIR_BACKEND_EMU);
    gpuir_buffer bx = buffer_like(fx.ctx, &fx.x, 0);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bx, &fx.x, s), GPUIR_OK);
    gpuir_array y;
    gpuir_array_alloc(fx.ctx, &y, GPUIR_F32, 2, fx.want.dims);
    gpuir_arg in[2] = {gpuir_arg_buffer(bx), gpuir_arg_host(fx.b)}, out[1] = {gpuir_arg_host(y)};
    gpuir_run_desc d = run_desc(in, 2, out, 1, s);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
    CHECK_RESULT(fx.ctx, gpuir_array_compare(fx.ctx, &y, &fx.want, 1e-5, 1e-5), GPUIR_OK);
    gpuir_array_release(&y);
    fixture_free(&fx);
}

/* Where the host code needs a device-resident argument it is staged: the
   input copied out (and counted), the returned parameter copied into the
   output buffer; the report says so. */
TEST(arguments_the_host_code_needs_are_staged) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_parse(ctx, echo, strlen(echo), "echo");
    gpuir_program *p = make_emu(m, 0);
    int64_t dims[] = {4, 4};
    gpuir_array x, want[2];
    gpuir_array_alloc(ctx, &x, GPUIR_F32, 2, dims);
    gpuir_array_fill_random(&x, 9);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 1, &x, 2, want), GPUIR_OK);
    fixture fx;
    memset(&fx, 0, sizeof fx);
    fx.ctx = ctx;
    gpuir_buffer bx = buffer_like(ctx, &x, 0), be = buffer_like(ctx, &x, 0), bo = buffer_like(ctx, &x, 0);
    CHECK_RESULT(ctx, gpuir_buffer_upload(ctx, bx, &x, NULL), GPUIR_OK);
    gpuir_arg in[1] = {gpuir_arg_buffer(bx)}, out[2] = {gpuir_arg_buffer(be), gpuir_arg_buffer(bo)};
    gpuir_run_desc d = run_desc(in, 1, out, 2, NULL);
    gpuir_program_stats s0 = gpuir_program_get_stats(p);
    CHECK_RESULT(ctx, gpuir_program_run_args(p, &d), GPUIR_OK);
    gpuir_program_stats s1 = gpuir_program_get_stats(p);
    CHECK(s1.d2h_bytes - s0.d2h_bytes == 64);   /* x out to the host once */
    check_buffer(&fx, be, &want[0], NULL);
    check_buffer(&fx, bo, &want[1], NULL);
    const char *rep = gpuir_module_placement_report(m);
    CHECK(strstr(rep, "@f: %x: device-resident: staged through the host") != NULL);
    CHECK(strstr(rep, "@f: result #1: device-resident: staged through the host") != NULL);
    gpuir_array_release(&x);
    gpuir_array_release(&want[0]);
    gpuir_array_release(&want[1]);
    gpuir_ctx_destroy(ctx);
}

/* A placed program whose parameters are in device memory takes device
   buffers as they are (the kernel writes the second in place), and refuses
   a host array for them, naming it. */
TEST(device_parameters_take_buffers_and_refuse_host_arrays) {
    static const char *const placed =
        "gpu.module @kernels {\n"
        "  gpu.func @k(%arg0: memref<4xf32, 1>, %arg1: memref<4xf32, 1>) kernel {\n"
        "    exp %arg0, %arg1 : (memref<4xf32, 1>, memref<4xf32, 1>) -> ()\n"
        "    return\n  }\n}\n"
        "func.func @f(%a: memref<4xf32, 1>, %out: memref<4xf32, 1>) {\n"
        "  gpu.launch_func %a, %out {kernel = @kernels::@k, grid = [1, 1, 1], block = [4, 1, 1]} "
        ": (memref<4xf32, 1>, memref<4xf32, 1>) -> ()\n"
        "  return\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_parse(ctx, placed, strlen(placed), "placed");
    gpuir_program *p = make_emu(m, 0);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    float av[4] = {0, 1, -1, 2}, ov[4];
    gpuir_array a = {GPUIR_F32, 1, {4}, av}, o = {GPUIR_F32, 1, {4}, ov};
    fixture fx;
    memset(&fx, 0, sizeof fx);
    fx.ctx = ctx;
    gpuir_buffer ba = buffer_like(ctx, &a, 0), bo = buffer_like(ctx, &o, 0);
    CHECK_RESULT(ctx, gpuir_buffer_upload(ctx, ba, &a, NULL), GPUIR_OK);
    gpuir_arg in[2] = {gpuir_arg_buffer(ba), gpuir_arg_buffer(bo)};
    gpuir_run_desc d = run_desc(in, 2, NULL, 0, NULL);
    CHECK_RESULT(ctx, gpuir_program_run_args(p, &d), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_buffer_download(ctx, bo, &o, NULL), GPUIR_OK);
    for (int i = 0; i < 4; i++) CHECK_NEAR(ov[i], exp(av[i]), 1e-5);
    CHECK(gpuir_program_get_stats(p).h2d_bytes == 0 && gpuir_program_get_stats(p).d2h_bytes == 0);
    in[0] = gpuir_arg_host(a);
    CHECK_RESULT(ctx, gpuir_program_run_args(p, &d), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(ctx), "input #0: parameter %a is in device memory") != NULL);
    gpuir_ctx_destroy(ctx);
}

/* A global bound to a device buffer: never uploaded, no module data. */
TEST(a_global_reads_a_device_buffer) {
    fixture fx;
    fixture_make(&fx, 0, false);       /* the module has no data for @W */
    gpuir_buffer bw = buffer_like(fx.ctx, &fx.w, 0);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bw, &fx.w, NULL), GPUIR_OK);
    CHECK_RESULT(fx.ctx, gpuir_program_bind_global_buffer(fx.p, "W", bw), GPUIR_OK);
    gpuir_arg in[2] = {gpuir_arg_host(fx.x), gpuir_arg_host(fx.b)}, out[1] = {{GPUIR_ARG_NONE, {GPUIR_F32, 0, {0}, NULL}, {0}}};
    gpuir_run_desc d = run_desc(in, 2, out, 1, NULL);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
    CHECK(gpuir_program_get_stats(fx.p).uploads == 0);
    CHECK_RESULT(fx.ctx, gpuir_array_compare(fx.ctx, &out[0].host, &fx.want, 1e-5, 1e-5), GPUIR_OK);
    gpuir_array_release(&out[0].host);
    gpuir_buffer wrong = buffer_like(fx.ctx, &fx.x, 0);
    CHECK_RESULT(fx.ctx, gpuir_program_bind_global_buffer(fx.p, "W", wrong), GPUIR_ERR_SHAPE);
    CHECK(strstr(gpuir_ctx_error(fx.ctx), "global @W: tensor<8x16xf32> is wanted, the argument is tensor<4x8xf32>") != NULL);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_program_bind_global_buffer(fx.p, "V", bw), GPUIR_ERR_NOT_FOUND);
    gpuir_ctx_clear_error(fx.ctx);
    /* a program that reads the global on the host: refused at the bind
       (it was taken, and every run failed) */
    static const char host_reads[] =
        "global @H : tensor<4xf32>\n"
        "func.func @f(%out: memref<4xf32>) {\n"
        "  %h = memref.get_global {name = @H} : () -> memref<4xf32>\n"
        "  memref.copy %h, %out : (memref<4xf32>, memref<4xf32>) -> ()\n"
        "  return\n}\n";
    gpuir_program *ph = gpuir_program_make(parse(fx.ctx, host_reads), &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU});
    gpuir_array h4 = {.dtype = GPUIR_F32, .rank = 1, .dims = {4}};
    gpuir_buffer bh = buffer_like(fx.ctx, &h4, 0);
    CHECK_RESULT(fx.ctx, gpuir_program_bind_global_buffer(ph, "H", bh), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(fx.ctx), "@f reads global @H on the host") != NULL);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_program_bind_global_buffer(ph, "H", (gpuir_buffer){0}), GPUIR_OK);  /* unbinding is fine */
    gpuir_program_destroy(ph);
    fixture_free(&fx);
}

/* Lifetimes and memory the caller gets wrong, found by an audit of the
   API: each is finished, refused or named, never a use of freed memory. */
TEST(misused_lifetimes_and_memory_are_safe) {
    fixture fx;
    fixture_make(&fx, 0, true);
    gpuir_ctx *ctx = fx.ctx;
    /* a buffer destroyed while a run on the caller's stream still uses it:
       the destroy finishes that work first (as cuMemFree waits for the
       GPU's); the emulator's kernel read freed memory before */
    gpuir_stream s = gpuir_stream_make(ctx, GPUIR_BACKEND_EMU);
    gpuir_buffer bx = buffer_like(ctx, &fx.x, 0), bb = buffer_like(ctx, &fx.b, 0), by = buffer_like(ctx, &fx.want, 0);
    CHECK_RESULT(ctx, gpuir_buffer_upload(ctx, bx, &fx.x, NULL), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_buffer_upload(ctx, bb, &fx.b, NULL), GPUIR_OK);
    gpuir_arg in[2] = {gpuir_arg_buffer(bx), gpuir_arg_buffer(bb)}, out[1] = {gpuir_arg_buffer(by)};
    gpuir_run_desc d = run_desc(in, 2, out, 1, s);
    CHECK_RESULT(ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);      /* enqueued */
    gpuir_buffer_destroy(ctx, bx);
    gpuir_buffer_destroy(ctx, bb);
    CHECK_RESULT(ctx, gpuir_stream_synchronize(ctx, s), GPUIR_OK);
    check_buffer(&fx, by, &fx.want, NULL);
    gpuir_stream_destroy(ctx, s);

    /* a global bound to a buffer later destroyed: the run says so */
    gpuir_module *m = gpuir_module_parse(ctx, mlp, strlen(mlp), "mlp");
    gpuir_program *p = make_emu(m, 0);
    gpuir_buffer bw = buffer_like(ctx, &fx.w, 0);
    CHECK_RESULT(ctx, gpuir_buffer_upload(ctx, bw, &fx.w, NULL), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_program_bind_global_buffer(p, "W", bw), GPUIR_OK);
    gpuir_buffer_destroy(ctx, bw);
    gpuir_array xs[2] = {fx.x, fx.b}, y;
    CHECK_RESULT(ctx, gpuir_program_run(p, "mlp", 2, xs, 1, &y), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(ctx), "global @W: the device buffer bound to it") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_program_destroy(p);

    /* wrapped memory not at a multiple of 16 bytes (the kernels move 16 at a time) */
    float *raw = (float *)malloc(64 * sizeof(float));
    gpuir_buffer odd = buffer_like(ctx, &fx.b, (uint64_t)(uintptr_t)(raw + 1));
    CHECK(odd.id == 0);
    CHECK(strstr(gpuir_ctx_error(ctx), "is not a multiple of 16 bytes") != NULL);
    gpuir_ctx_clear_error(ctx);

    /* outputs overlapping inputs without being the same array */
    int64_t d4[] = {4, 4};
    gpuir_module *me = gpuir_module_parse(ctx, echo, strlen(echo), "echo");
    gpuir_program *pe = make_emu(me, 0);
    gpuir_array a = {GPUIR_F32, 2, {4, 4}, raw}, o = {GPUIR_F32, 2, {4, 4}, raw + 8}, o2;
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &o2, GPUIR_F32, 2, d4), GPUIR_OK);
    gpuir_arg ein[1] = {gpuir_arg_host(a)}, eout[2] = {gpuir_arg_host(o), gpuir_arg_host(o2)};
    gpuir_run_desc de = run_desc(ein, 1, eout, 2, NULL);
    CHECK_RESULT(ctx, gpuir_program_run_args(pe, &de), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(ctx), "output #0 aliases input #0") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&o2);
    gpuir_program_destroy(pe);

    /* a registered range inside a new one, and a range past the address space */
    CHECK_RESULT(ctx, gpuir_host_register(ctx, GPUIR_BACKEND_EMU, raw + 16, 16 * sizeof(float)), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_host_register(ctx, GPUIR_BACKEND_EMU, raw, 64 * sizeof(float)),
                 GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(ctx), "overlaps memory that is already pinned") != NULL);
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_host_register(ctx, GPUIR_BACKEND_EMU, raw + 48, SIZE_MAX), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    CHECK(!gpuir_host_is_pinned(ctx, raw + 40, 4));
    CHECK_RESULT(ctx, gpuir_host_unregister(ctx, raw + 16), GPUIR_OK);

    /* release_pinned of an array it did not pin keeps the pointer */
    gpuir_array plain;
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &plain, GPUIR_F32, 2, d4), GPUIR_OK);
    void *kept = plain.data;
    gpuir_array_release_pinned(ctx, &plain);
    CHECK(plain.data == kept);
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&plain);
    free(raw);

    /* a buffer or a pinned array of rank 9: the limit, named, as for arrays */
    gpuir_buffer_desc bd9 = {.backend = GPUIR_BACKEND_EMU, .dtype = GPUIR_F32, .rank = 9};
    CHECK(gpuir_buffer_make(ctx, &bd9).id == 0);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_LIMIT);
    CHECK(strstr(gpuir_ctx_error(ctx), "gpuir_buffer_make: rank 9 is outside 0..8") != NULL);
    gpuir_ctx_clear_error(ctx);

    /* a host input of rank 9: the limit, named (a shape of nine dims before) */
    gpuir_array nine = fx.x;
    nine.rank = 9;
    gpuir_array ins9[2] = {nine, fx.b}, y9;
    CHECK_RESULT(ctx, gpuir_program_run(fx.p, "mlp", 2, ins9, 1, &y9), GPUIR_ERR_LIMIT);
    CHECK(strstr(gpuir_ctx_error(ctx), "input #0: rank 9 is outside 0..8") != NULL);
    gpuir_ctx_clear_error(ctx);

    /* a slot made and destroyed 4096 times: its first id stays stale (the
       id's 12-bit generation wrapped, and it named the slot's new buffer) */
    gpuir_buffer first = buffer_like(ctx, &fx.b, 0);
    gpuir_buffer_destroy(ctx, first);
    for (int i = 0; i < 4095; i++) gpuir_buffer_destroy(ctx, buffer_like(ctx, &fx.b, 0));
    gpuir_buffer live = buffer_like(ctx, &fx.b, 0);
    CHECK(gpuir_buffer_valid(ctx, live) && !gpuir_buffer_valid(ctx, first) && live.id != first.id);
    gpuir_buffer_destroy(ctx, live);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    fixture_free(&fx);
}

/* A global's module data in an asynchronous run: uploaded before the
   kernels that read it, on the first run and after a gpuir_module_bind_global
   (the upload was queued on the caller's stream after the run's entry, so
   the kernels on the run's other streams could read the device copy before
   it was written: NaN or the old data, at some emulator seeds), and not read
   from the module's data after a later bind frees it (the queued copy read
   freed memory: valgrind and ASan show it). An output that is the buffer a
   global is bound to is refused (the run wrote what it read). */
TEST(an_async_run_uploads_its_globals_before_their_readers) {
    for (uint64_t seed = 0; seed < 8; seed++) {
        gpuir_ctx *ctx = gpuir_ctx_make(NULL);
        gpuir_module *ref = parse(ctx, GLOBAL_MATMUL_TEXT), *m = parse(ctx, GLOBAL_MATMUL_TEXT);
        int64_t wd[] = {6, 4}, xd[] = {3, 6};
        gpuir_array w[3], x, got, want;
        for (int i = 0; i < 3; i++) {
            gpuir_array_alloc(ctx, &w[i], GPUIR_F32, 2, wd);
            gpuir_array_fill_random(&w[i], 10 + (uint64_t)i);
        }
        gpuir_array_alloc(ctx, &x, GPUIR_F32, 2, xd);
        gpuir_array_fill_random(&x, 3);
        CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &w[0]), GPUIR_OK);
        gpuir_program *p = gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU, .emu_seed = seed});
        gpuir_stream s = gpuir_stream_make(ctx, GPUIR_BACKEND_EMU);
        gpuir_buffer bx = buffer_like(ctx, &x, 0), bo[2];
        CHECK_RESULT(ctx, gpuir_buffer_upload(ctx, bx, &x, NULL), GPUIR_OK);
        for (int run = 0; run < 2; run++) {      /* W0, then W1 bound after the first run */
            gpuir_array shape = {.dtype = GPUIR_F32, .rank = 2, .dims = {3, 4}};
            bo[run] = buffer_like(ctx, &shape, 0);
            if (run == 1) CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &w[1]), GPUIR_OK);
            gpuir_arg in[1] = {gpuir_arg_buffer(bx)}, out[1] = {gpuir_arg_buffer(bo[run])};
            gpuir_run_desc d = run_desc(in, 1, out, 1, s);
            CHECK_RESULT(ctx, gpuir_program_run_args(p, &d), GPUIR_OK);
        }
        CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &w[2]), GPUIR_OK);   /* W1's data freed */
        CHECK_RESULT(ctx, gpuir_stream_synchronize(ctx, s), GPUIR_OK);
        for (int run = 0; run < 2; run++) {
            memset(&want, 0, sizeof want);
            CHECK_RESULT(ctx, gpuir_module_bind_global(ref, "W", &w[run]), GPUIR_OK);
            CHECK_RESULT(ctx, gpuir_ref_run(ref, "g", 1, &x, 1, &want), GPUIR_OK);
            gpuir_array_alloc(ctx, &got, GPUIR_F32, 2, want.dims);
            CHECK_RESULT(ctx, gpuir_buffer_download(ctx, bo[run], &got, NULL), GPUIR_OK);
            CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got, &want, 1e-5, 1e-5), GPUIR_OK);
            gpuir_array_release(&got);
            gpuir_array_release(&want);
        }
        if (seed == 0) {
            gpuir_buffer bw = buffer_like(ctx, &w[0], 0);
            CHECK_RESULT(ctx, gpuir_program_bind_global_buffer(p, "W", bw), GPUIR_OK);
            gpuir_arg in[1] = {gpuir_arg_buffer(bx)}, out[1] = {gpuir_arg_buffer(bw)};
            gpuir_run_desc d = run_desc(in, 1, out, 1, s);
            CHECK_RESULT(ctx, gpuir_program_run_args(p, &d), GPUIR_ERR_INVALID_ARGUMENT);
            CHECK(strstr(gpuir_ctx_error(ctx), "output #0 is the buffer global @W is bound to") != NULL);
            gpuir_ctx_clear_error(ctx);
        }
        for (int i = 0; i < 3; i++) gpuir_array_release(&w[i]);
        gpuir_array_release(&x);
        gpuir_ctx_destroy(ctx);
    }
}

/* Pinned arrays and registered memory: found as pinned, copied from on a
   stream, released; unpinned memory is not pinned. */
TEST(pinned_host_memory) {
    fixture fx;
    fixture_make(&fx, 0, true);
    gpuir_array px;
    CHECK_RESULT(fx.ctx, gpuir_array_alloc_pinned(fx.ctx, GPUIR_BACKEND_EMU, &px, GPUIR_F32, 2, fx.x.dims), GPUIR_OK);
    CHECK(gpuir_host_is_pinned(fx.ctx, px.data, 4 * 8 * sizeof(float)));
    CHECK(!gpuir_host_is_pinned(fx.ctx, px.data, 4 * 8 * sizeof(float) + 1));
    CHECK(!gpuir_host_is_pinned(fx.ctx, fx.x.data, 4));
    memcpy(px.data, fx.x.data, 4 * 8 * sizeof(float));
    CHECK_RESULT(fx.ctx, gpuir_host_register(fx.ctx, GPUIR_BACKEND_EMU, fx.b.data, 16 * sizeof(float)), GPUIR_OK);
    CHECK(gpuir_host_is_pinned(fx.ctx, fx.b.data, 16 * sizeof(float)));
    gpuir_stream s = gpuir_stream_make(fx.ctx, GPUIR_BACKEND_EMU);
    gpuir_buffer bx = buffer_like(fx.ctx, &fx.x, 0);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bx, &px, s), GPUIR_OK);
    gpuir_arg in[2] = {gpuir_arg_host(px), gpuir_arg_host(fx.b)}, out[1] = {gpuir_arg_buffer(buffer_like(fx.ctx, &fx.want, 0))};
    gpuir_run_desc d = run_desc(in, 2, out, 1, s);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
    check_buffer(&fx, out[0].buffer, &fx.want, s);
    CHECK_RESULT(fx.ctx, gpuir_host_register(fx.ctx, GPUIR_BACKEND_EMU, fx.b.data, 4), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(fx.ctx), "already pinned") != NULL);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_host_register(fx.ctx, GPUIR_BACKEND_EMU, NULL, 4), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_host_unregister(fx.ctx, fx.b.data), GPUIR_OK);
    CHECK(!gpuir_host_is_pinned(fx.ctx, fx.b.data, 4));
    CHECK_RESULT(fx.ctx, gpuir_host_unregister(fx.ctx, fx.b.data), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(fx.ctx);
    /* after an error, unregistering still unpins (a release), keeping the error */
    CHECK_RESULT(fx.ctx, gpuir_host_register(fx.ctx, GPUIR_BACKEND_EMU, fx.b.data, 8), GPUIR_OK);
    gpuir_stream_synchronize(fx.ctx, NULL);                 /* an error */
    CHECK_RESULT(fx.ctx, gpuir_host_unregister(fx.ctx, fx.b.data), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(!gpuir_host_is_pinned(fx.ctx, fx.b.data, 4));
    CHECK(strstr(gpuir_ctx_error(fx.ctx), "stream is NULL") != NULL);
    gpuir_ctx_clear_error(fx.ctx);
    gpuir_array_release_pinned(fx.ctx, &px);
    CHECK(px.data == NULL);
    CHECK_RESULT(fx.ctx, gpuir_ctx_result(fx.ctx), GPUIR_OK);
    fixture_free(&fx);
}

/* Runs d expecting `want` with `needle` in the message; then the context
   is cleared and a good run works. */
static void expect_error(fixture *fx, gpuir_run_desc *d, gpuir_result want, const char *needle) {
    CHECK_RESULT(fx->ctx, gpuir_program_run_args(fx->p, d), want);
    if (!strstr(gpuir_ctx_error(fx->ctx), needle)) {
        fprintf(stderr, "  want \"%s\" in: %s\n", needle, gpuir_ctx_error(fx->ctx));
        CHECK(0);
    }
    gpuir_ctx_clear_error(fx->ctx);
    gpuir_array y;
    gpuir_array_alloc(fx->ctx, &y, GPUIR_F32, 2, fx->want.dims);
    gpuir_arg in[2] = {gpuir_arg_host(fx->x), gpuir_arg_host(fx->b)}, out[1] = {gpuir_arg_host(y)};
    gpuir_run_desc good = run_desc(in, 2, out, 1, NULL);
    CHECK_RESULT(fx->ctx, gpuir_program_run_args(fx->p, &good), GPUIR_OK);
    CHECK_RESULT(fx->ctx, gpuir_array_compare(fx->ctx, &y, &fx->want, 1e-5, 1e-5), GPUIR_OK);
    gpuir_array_release(&y);
}

/* Every bad argument: a clear error naming it; nothing leaks (ASan); the
   context works after. */
TEST(bad_arguments_are_named) {
    fixture fx;
    fixture_make(&fx, 0, true);
    gpuir_ctx *other = gpuir_ctx_make(NULL);
    gpuir_buffer bx = buffer_like(fx.ctx, &fx.x, 0), bb = buffer_like(fx.ctx, &fx.b, 0);
    gpuir_buffer by = buffer_like(fx.ctx, &fx.want, 0), foreign = buffer_like(other, &fx.x, 0);
    gpuir_array xi = fx.x;
    xi.dtype = GPUIR_I32;
    gpuir_buffer wrong_dtype = buffer_like(fx.ctx, &xi, 0), wrong_shape = buffer_like(fx.ctx, &fx.b, 0);
    gpuir_buffer dead = buffer_like(fx.ctx, &fx.x, 0);
    gpuir_buffer_destroy(fx.ctx, dead);
    gpuir_arg in[2] = {gpuir_arg_buffer(bx), gpuir_arg_buffer(bb)}, out[1] = {gpuir_arg_buffer(by)};
    gpuir_run_desc d = run_desc(in, 2, out, 1, NULL);

    in[0] = gpuir_arg_buffer(wrong_dtype);
    /* the types as the program was written (tensors), not as lowered */
    expect_error(&fx, &d, GPUIR_ERR_DTYPE,
                 "input #0 (%x): tensor<4x8xf32> is wanted, the argument is tensor<4x8xi32>");
    in[0] = gpuir_arg_buffer(wrong_shape);
    expect_error(&fx, &d, GPUIR_ERR_SHAPE,
                 "input #0 (%x): tensor<4x8xf32> is wanted, the argument is tensor<16xf32>");
    in[0] = gpuir_arg_buffer(foreign);
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "input #0 (%x): the buffer belongs to another context");
    in[0] = gpuir_arg_buffer(dead);
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "input #0 (%x): the buffer was destroyed");
    gpuir_buffer none = {0};
    in[0] = gpuir_arg_buffer(none);
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "input #0 (%x): no buffer");
    in[0].kind = GPUIR_ARG_NONE;
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "input #0 (%x): no argument");
    in[0] = gpuir_arg_buffer(bx);
    out[0] = gpuir_arg_buffer(bx);
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "output #0 aliases input #0");
    gpuir_buffer inner = buffer_like(fx.ctx, &fx.want, gpuir_buffer_device_ptr(fx.ctx, bb) + 16);
    out[0] = gpuir_arg_buffer(inner);   /* wraps memory overlapping input #1's */
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "output #0 aliases input #1");
    out[0] = gpuir_arg_buffer(wrong_shape);
    expect_error(&fx, &d, GPUIR_ERR_SHAPE, "output #0: tensor<4x16xf32> is wanted, the argument is tensor<16xf32>");
    gpuir_array small = fx.want;
    small.dims[1] = 15;
    out[0] = gpuir_arg_host(small);
    expect_error(&fx, &d, GPUIR_ERR_SHAPE, "output #0: tensor<4x16xf32> is wanted, the argument is tensor<4x15xf32>");
    out[0] = gpuir_arg_host(fx.x);
    in[0] = gpuir_arg_host(fx.x);
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "output #0 aliases input #0");
    in[0] = gpuir_arg_buffer(bx);
    out[0] = gpuir_arg_buffer(by);
    int not_a_stream = 0;
    d.stream = &not_a_stream;
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "desc.stream");
    gpuir_stream theirs = gpuir_stream_make(other, GPUIR_BACKEND_EMU);
    d.stream = theirs;
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "desc.stream");
    d.stream = NULL;
    d.n_inputs = 1;
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "takes 2 inputs, 1 given");
    d.n_inputs = 2;
    d.n_outputs = 0;
    expect_error(&fx, &d, GPUIR_ERR_INVALID_ARGUMENT, "returns 1 values, 0 outputs given");
    d.n_outputs = 1;
    d.func = "nope";
    expect_error(&fx, &d, GPUIR_ERR_NOT_FOUND, "no host function @nope");
    d.func = NULL;
    out[0] = gpuir_arg_host(fx.want);   /* a failed run leaves a preallocated output the caller's */
    in[0] = gpuir_arg_buffer(dead);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(out[0].host.data == fx.want.data);
    out[0].kind = GPUIR_ARG_NONE;       /* and a new-array output empty, releasable */
    out[0].host.data = &not_a_stream;
    out[0].host.rank = 77;
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(out[0].host.data == NULL && out[0].host.rank == 0);
    gpuir_array_release(&out[0].host);
    gpuir_ctx_clear_error(fx.ctx);
    in[0] = gpuir_arg_buffer(bx);
    out[0] = gpuir_arg_buffer(by);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, NULL), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(NULL, &d), GPUIR_ERR_INVALID_ARGUMENT);
    /* uploads, downloads, streams and pinning */
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bx, &fx.b, NULL), GPUIR_ERR_SHAPE);
    CHECK(strstr(gpuir_ctx_error(fx.ctx), "gpuir_buffer_upload: the array: tensor<4x8xf32> is wanted, "
                                          "the argument is tensor<16xf32>") != NULL);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_buffer_download(fx.ctx, dead, &fx.x, NULL), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bx, &fx.x, &not_a_stream), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_stream_synchronize(fx.ctx, NULL), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(fx.ctx), "stream is NULL") != NULL);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_stream_synchronize(fx.ctx, &not_a_stream), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(fx.ctx);
    gpuir_buffer_desc bd = {.backend = GPUIR_BACKEND_EMU};
    CHECK(gpuir_buffer_make(fx.ctx, &bd).id == 0);          /* no dtype: as gpuir_array_alloc says */
    CHECK_RESULT(fx.ctx, gpuir_ctx_result(fx.ctx), GPUIR_ERR_DTYPE);
    gpuir_ctx_clear_error(fx.ctx);
    bd.dtype = GPUIR_F32;
    bd.rank = 1;
    bd.dims[0] = -3;
    CHECK(gpuir_buffer_make(fx.ctx, &bd).id == 0);
    CHECK_RESULT(fx.ctx, gpuir_ctx_result(fx.ctx), GPUIR_ERR_SHAPE);
    gpuir_ctx_clear_error(fx.ctx);
    bd.dims[0] = 4;
    bd.backend = GPUIR_BACKEND_REF;
    CHECK(gpuir_buffer_make(fx.ctx, &bd).id == 0);
    CHECK_RESULT(fx.ctx, gpuir_ctx_result(fx.ctx), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, gpuir_host_register(fx.ctx, GPUIR_BACKEND_EMU, fx.x.data, 0), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(fx.ctx);
    gpuir_host_free(fx.ctx, fx.x.data);                       /* not gpuir_host_alloc's */
    CHECK_RESULT(fx.ctx, gpuir_ctx_result(fx.ctx), GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(fx.ctx);
    /* NULL-safety of the new calls */
    gpuir_buffer_destroy(NULL, bx);
    gpuir_stream_destroy(fx.ctx, NULL);
    gpuir_host_free(fx.ctx, NULL);
    CHECK(gpuir_buffer_device_ptr(NULL, bx) == 0);
    CHECK_RESULT(fx.ctx, gpuir_program_wait(NULL), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_RESULT(fx.ctx, gpuir_ctx_result(fx.ctx), GPUIR_OK);
    gpuir_ctx_destroy(other);
    fixture_free(&fx);
}

/* A table that says the caller's stream is being captured (the emulator's
   streams never are; CUDA's are, between cuStreamBeginCapture and End). */
static int says_capturing(void *self, void *stream, int *capturing) {
    (void)self;
    (void)stream;
    *capturing = 1;
    return 0;
}

/* A run issued while the caller's stream is captured: one that would wait
   on the host (host arguments) or upload a global fails before issuing
   anything, saying why; an all-device run goes ahead (into the graph, on
   CUDA) and waits for nothing. */
TEST(a_run_into_a_captured_stream_fails_clearly_or_goes_ahead) {
    fixture fx;
    fixture_make(&fx, 0, true);
    gpuir_stream s = gpuir_stream_make(fx.ctx, GPUIR_BACKEND_EMU);
    gpuir_buffer bx = buffer_like(fx.ctx, &fx.x, 0), bb = buffer_like(fx.ctx, &fx.b, 0);
    gpuir_buffer by = buffer_like(fx.ctx, &fx.want, 0);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bx, &fx.x, s), GPUIR_OK);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bb, &fx.b, s), GPUIR_OK);
    fx.p->drv.stream_capturing = says_capturing;
    gpuir_arg in[2] = {gpuir_arg_buffer(bx), gpuir_arg_buffer(bb)}, out[1] = {gpuir_arg_buffer(by)};
    gpuir_run_desc d = run_desc(in, 2, out, 1, s);
    uint64_t launches = gpuir_program_get_stats(fx.p).launches;
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_ERR_INVALID_ARGUMENT);   /* @W not uploaded */
    CHECK(strstr(gpuir_ctx_error(fx.ctx), "being captured into a graph, and global @W is not on the device yet"));
    CHECK(gpuir_program_get_stats(fx.p).launches == launches);
    gpuir_ctx_clear_error(fx.ctx);
    in[1] = gpuir_arg_host(fx.b);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(fx.ctx), "being captured into a graph, and this run has host arguments"));
    gpuir_ctx_clear_error(fx.ctx);
    in[1] = gpuir_arg_buffer(bb);
    gpuir_buffer bw = buffer_like(fx.ctx, &fx.w, 0);
    CHECK_RESULT(fx.ctx, gpuir_buffer_upload(fx.ctx, bw, &fx.w, NULL), GPUIR_OK);
    CHECK_RESULT(fx.ctx, gpuir_program_bind_global_buffer(fx.p, "W", bw), GPUIR_OK);
    CHECK_RESULT(fx.ctx, gpuir_program_run_args(fx.p, &d), GPUIR_OK);
    CHECK(gpuir_program_get_stats(fx.p).launches == launches + 1);
    CHECK_RESULT(fx.ctx, gpuir_stream_synchronize(fx.ctx, s), GPUIR_OK);
    check_buffer(&fx, by, &fx.want, s);
    fixture_free(&fx);
}

/* CUDA: the same buffers when a GPU is here (none in CI). */
TEST(cuda_buffers_round_trip) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char why[256];
    if (!gpuir_cuda_available(ctx, why, sizeof why)) {
        gpuir_ctx_destroy(ctx);
        SKIP("no CUDA device");
    }
    int64_t dims[] = {3, 5};
    gpuir_array a, b;
    gpuir_array_alloc(ctx, &a, GPUIR_F32, 2, dims);
    gpuir_array_alloc(ctx, &b, GPUIR_F32, 2, dims);
    gpuir_array_fill_random(&a, 4);
    gpuir_buffer_desc d = {.backend = GPUIR_BACKEND_CUDA, .dtype = GPUIR_F32, .rank = 2};
    d.dims[0] = 3;
    d.dims[1] = 5;
    gpuir_buffer buf = gpuir_buffer_make(ctx, &d);
    gpuir_stream s = gpuir_stream_make(ctx, GPUIR_BACKEND_CUDA);
    CHECK_RESULT(ctx, gpuir_buffer_upload(ctx, buf, &a, s), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_buffer_download(ctx, buf, &b, s), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_stream_synchronize(ctx, s), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &b, &a, 0, 0), GPUIR_OK);
    gpuir_array_release(&a);
    gpuir_array_release(&b);
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(device_buffers_move_no_bytes);
    RUN(preallocated_outputs_are_written_in_place);
    RUN(caller_memory_is_never_freed);
    RUN(runs_on_the_callers_stream_are_async_and_ordered);
    RUN(two_async_runs_of_one_sibling_program_on_two_streams);
    RUN(a_run_with_host_arguments_on_a_stream_is_synchronous);
    RUN(a_staged_input_waits_for_the_callers_stream);
    RUN(arguments_the_host_code_needs_are_staged);
    RUN(device_parameters_take_buffers_and_refuse_host_arrays);
    RUN(a_global_reads_a_device_buffer);
    RUN(misused_lifetimes_and_memory_are_safe);
    RUN(pinned_host_memory);
    RUN(an_async_run_uploads_its_globals_before_their_readers);
    RUN(bad_arguments_are_named);
    RUN(a_run_into_a_captured_stream_fails_clearly_or_goes_ahead);
    RUN(cuda_buffers_round_trip);
    return CHECK_EXIT();
}

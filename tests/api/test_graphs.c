/* Graphs (desc.graphs): a function's device work recorded on its first run
   and replayed by later runs. On the emulator a replay makes the recorded
   table calls again, streams held and interleaved by seed as in any run, so
   a replay that reused a stale input, lost an event or wrote a result into
   the wrong array shows as a mismatch with the interpreter. */
#define _POSIX_C_SOURCE 200809L
#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

#include <stdlib.h>

static gpuir_program *make_graphs(gpuir_module *m, uint64_t seed, bool synchronous) {
    return gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU, .emu_seed = seed,
                                                       .synchronous = synchronous, .graphs = true});
}

static const char *const streams_text = STREAMS_TEXT;

#define RUNS 4

/* Runs @g RUNS times with fresh inputs, keeping every run's results, then
   compares them all with the interpreter (a later replay must not write
   into an earlier run's arrays). */
static void check_replays(uint64_t seed, bool synchronous) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *ref = parse(ctx, streams_text), *m = parse(ctx, streams_text);
    gpuir_program *p = m ? make_graphs(m, seed, synchronous) : NULL;
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    gpuir_array in[RUNS][4], got[RUNS][3];
    int64_t ad[] = {32, 48}, bd[] = {48, 40};
    memset(in, 0, sizeof in);
    memset(got, 0, sizeof got);
    uint64_t launches_first = 0;
    for (int run = 0; p && run < RUNS; run++) {
        for (int i = 0; i < 4; i++) {
            gpuir_array_alloc(ctx, &in[run][i], GPUIR_F32, 2, i % 2 ? bd : ad);
            gpuir_array_fill_random(&in[run][i], seed * 100 + (uint64_t)(run * 4 + i));
        }
        CHECK_RESULT(ctx, gpuir_program_run(p, "g", 4, in[run], 3, got[run]), GPUIR_OK);
        if (run == 0) launches_first = gpuir_program_get_stats(p).launches;
    }
    for (int run = 0; p && run < RUNS; run++) {
        gpuir_array want[3];
        memset(want, 0, sizeof want);
        CHECK_RESULT(ctx, gpuir_ref_run(ref, "g", 4, in[run], 3, want), GPUIR_OK);
        for (int i = 0; i < 3; i++) {
            CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got[run][i], &want[i], 1e-5, 1e-5), GPUIR_OK);
            gpuir_array_release(&want[i]);
        }
    }
    gpuir_program_stats st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    CHECK(st.runs == RUNS && st.graph_records == 1 && st.graph_replays == RUNS - 1);
    CHECK(launches_first >= 3 && st.launches == RUNS * launches_first);
    CHECK(st.h2d_copies == RUNS * 4 && st.d2h_copies == RUNS * 3);
    for (int run = 0; run < RUNS; run++) {
        for (int i = 0; i < 4; i++) gpuir_array_release(&in[run][i]);
        for (int i = 0; i < 3; i++) gpuir_array_release(&got[run][i]);
    }
    gpuir_ctx_destroy(ctx);
}

TEST(replays_with_new_inputs_match_the_interpreter) {
    for (uint64_t seed = 1; seed <= 6; seed++) check_replays(seed, false);
}

/* A sibling kernel (a column max, a row sum and a total of one matrix:
   one kernel whose blocks meet through counters) replays with new inputs:
   the graph holds the launch zeroing its counters, so every replay starts
   from zero counters in the same workspace (without it the second run's
   tickets would start where the first run's ended). */
TEST(sibling_kernels_replay_with_zeroed_counters) {
    static const char text[] =
        "func.func @g(%x: tensor<300x21xf32>) -> (tensor<21xf32>, tensor<300xf32>, tensor<f32>) {\n"
        "  %a = reduce_max %x {axes = [0]} : (tensor<300x21xf32>) -> tensor<21xf32>\n"
        "  %b = reduce_sum %x {axes = [1]} : (tensor<300x21xf32>) -> tensor<300xf32>\n"
        "  %c = reduce_sum %x {axes = [0, 1]} : (tensor<300x21xf32>) -> tensor<f32>\n"
        "  return %a, %b, %c : tensor<21xf32>, tensor<300xf32>, tensor<f32>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *ref = parse(ctx, text), *m = parse(ctx, text);
    gpuir_program *p = m ? make_graphs(m, 5, false) : NULL;
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    int64_t xd[] = {300, 21};
    for (int run = 0; p && run < RUNS; run++) {
        gpuir_array x, got[3], want[3];
        memset(got, 0, sizeof got);
        memset(want, 0, sizeof want);
        gpuir_array_alloc(ctx, &x, GPUIR_F32, 2, xd);
        gpuir_array_fill_random(&x, 900 + (uint64_t)run);
        CHECK_RESULT(ctx, gpuir_program_run(p, "g", 1, &x, 3, got), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_ref_run(ref, "g", 1, &x, 3, want), GPUIR_OK);
        for (int i = 0; i < 3; i++) {
            CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got[i], &want[i], 1e-5, 1e-5), GPUIR_OK);
            gpuir_array_release(&got[i]);
            gpuir_array_release(&want[i]);
        }
        gpuir_array_release(&x);
    }
    gpuir_program_stats st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    CHECK(st.graph_records == 1 && st.graph_replays == RUNS - 1 && st.launches == RUNS * 2);
    gpuir_ctx_destroy(ctx);
}

TEST(synchronous_replays_match_the_interpreter) { check_replays(3, true); }

/* A dynamic batch: a new size records again; a size seen before but not
   the latest records again too (one graph per function). */
TEST(a_new_size_records_again) {
    static const char text[] =
        "func.func @f(%x: tensor<?x16xf32>, %w: tensor<16x8xf32>) -> tensor<?x8xf32> {\n"
        "  %m = matmul %x, %w : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>\n"
        "  %r = relu %m : (tensor<?x8xf32>) -> tensor<?x8xf32>\n"
        "  return %r : tensor<?x8xf32>\n}\n";
    static const int64_t batches[] = {3, 3, 70, 70, 70, 3};
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *ref = parse(ctx, text), *m = parse(ctx, text);
    gpuir_program *p = m ? make_graphs(m, 5, false) : NULL;
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    for (size_t k = 0; p && k < sizeof batches / sizeof batches[0]; k++) {
        gpuir_array in[2], want, got;
        int64_t xd[] = {batches[k], 16}, wd[] = {16, 8};
        gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, xd);
        gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 2, wd);
        gpuir_array_fill_random(&in[0], 40 + k);
        gpuir_array_fill_random(&in[1], 80 + k);
        memset(&want, 0, sizeof want);
        memset(&got, 0, sizeof got);
        CHECK_RESULT(ctx, gpuir_ref_run(ref, "f", 2, in, 1, &want), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 1, &got), GPUIR_OK);
        CHECK(got.rank == 2 && got.dims[0] == batches[k]);
        CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got, &want, 1e-5, 1e-5), GPUIR_OK);
        gpuir_array_release(&in[0]);
        gpuir_array_release(&in[1]);
        gpuir_array_release(&want);
        gpuir_array_release(&got);
    }
    gpuir_program_stats st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    CHECK(st.graph_records == 3 && st.graph_replays == 3);
    gpuir_ctx_destroy(ctx);
}

/* Resident globals are uploaded outside the graph: a replay after a
   rebinding computes with the new data, and the upload happens once per
   binding. */
TEST(a_replay_sees_a_rebound_global) {
    static const char text[] = GLOBAL_MATMUL_TEXT;
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *ref = parse(ctx, text), *m = parse(ctx, text);
    gpuir_array w, x;
    int64_t wd[] = {6, 4}, xd[] = {3, 6};
    gpuir_array_alloc(ctx, &w, GPUIR_F32, 2, wd);
    gpuir_array_alloc(ctx, &x, GPUIR_F32, 2, xd);
    gpuir_array_fill_random(&x, 4);
    gpuir_program *p = NULL;
    for (uint64_t seed = 10; seed < 16; seed++) {
        if (seed % 2 == 0) {                /* rebinds before runs 0, 2 and 4 */
            gpuir_array_fill_random(&w, seed);
            CHECK_RESULT(ctx, gpuir_module_bind_global(ref, "W", &w), GPUIR_OK);
            CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &w), GPUIR_OK);
        }
        if (!p) p = make_graphs(m, 0, false);
        gpuir_array want, got;
        memset(&want, 0, sizeof want);
        memset(&got, 0, sizeof got);
        CHECK_RESULT(ctx, gpuir_ref_run(ref, "g", 1, &x, 1, &want), GPUIR_OK);
        if (p) CHECK_RESULT(ctx, gpuir_program_run(p, "g", 1, &x, 1, &got), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got, &want, 1e-5, 1e-6), GPUIR_OK);
        gpuir_array_release(&want);
        gpuir_array_release(&got);
    }
    gpuir_program_stats st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    CHECK(st.graph_records == 1 && st.graph_replays == 5 && st.uploads == 3);
    gpuir_array_release(&w);
    gpuir_array_release(&x);
    gpuir_ctx_destroy(ctx);
}

/* A global bound to a device buffer is read at the buffer's address,
   which the recorded launches hold: binding another buffer, or unbinding
   (the module's data, uploaded to memory of the program's own), records
   the graph again (it replayed with the first buffer, even after that
   buffer was destroyed). */
TEST(a_replay_sees_a_global_bound_to_another_buffer) {
    static const char text[] = GLOBAL_MATMUL_TEXT;
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *ref = parse(ctx, text), *m = parse(ctx, text);
    gpuir_program *p = m ? make_graphs(m, 0, false) : NULL;
    gpuir_array w[3], x;
    int64_t wd[] = {6, 4}, xd[] = {3, 6};
    gpuir_buffer b[2] = {{0}, {0}};
    gpuir_buffer_desc bd = {.backend = GPUIR_BACKEND_EMU, .dtype = GPUIR_F32, .rank = 2, .dims = {6, 4}};
    for (int i = 0; i < 3; i++) {
        gpuir_array_alloc(ctx, &w[i], GPUIR_F32, 2, wd);
        gpuir_array_fill_random(&w[i], 20 + (uint64_t)i);
    }
    gpuir_array_alloc(ctx, &x, GPUIR_F32, 2, xd);
    gpuir_array_fill_random(&x, 5);
    for (int i = 0; i < 2; i++) {
        b[i] = gpuir_buffer_make(ctx, &bd);
        CHECK_RESULT(ctx, gpuir_buffer_upload(ctx, b[i], &w[i], NULL), GPUIR_OK);
    }
    CHECK_RESULT(ctx, gpuir_module_bind_global(m, "W", &w[2]), GPUIR_OK);
    /* which W each run reads: b[0] twice, b[1] twice (b[0] destroyed
       between them), the module's data twice */
    static const int reads[6] = {0, 0, 1, 1, 2, 2};
    for (int run = 0; p && run < 6; run++) {
        if (run == 0 || run == 2) CHECK_RESULT(ctx, gpuir_program_bind_global_buffer(p, "W", b[reads[run]]), GPUIR_OK);
        if (run == 3) gpuir_buffer_destroy(ctx, b[0]);
        if (run == 4) CHECK_RESULT(ctx, gpuir_program_bind_global_buffer(p, "W", (gpuir_buffer){0}), GPUIR_OK);
        gpuir_array want, got;
        memset(&want, 0, sizeof want);
        memset(&got, 0, sizeof got);
        CHECK_RESULT(ctx, gpuir_module_bind_global(ref, "W", &w[reads[run]]), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_ref_run(ref, "g", 1, &x, 1, &want), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_program_run(p, "g", 1, &x, 1, &got), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got, &want, 1e-5, 1e-6), GPUIR_OK);
        gpuir_array_release(&want);
        gpuir_array_release(&got);
    }
    gpuir_program_stats st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    CHECK(st.graph_records == 3 && st.graph_replays == 3);
    gpuir_buffer_destroy(ctx, b[1]);
    for (int i = 0; i < 3; i++) gpuir_array_release(&w[i]);
    gpuir_array_release(&x);
    gpuir_ctx_destroy(ctx);
}

/* A placed program whose host copies a result the device wrote back
   (after waiting for it) cannot be replayed from a graph: it runs op by op,
   and right. */
TEST(a_host_read_of_a_copied_back_buffer_runs_op_by_op) {
    static const char text[] =
        "gpu.module @kernels {\n"
        "  gpu.func @k(%arg0: memref<4xf32, 1>, %arg1: memref<4xf32, 1>) kernel {\n"
        "    exp %arg0, %arg1 : (memref<4xf32, 1>, memref<4xf32, 1>) -> ()\n"
        "    return\n  }\n}\n"
        "func.func @f(%a: memref<4xf32>, %out: memref<4xf32>) -> memref<4xf32> {\n"
        "  %0 = gpu.alloc {stream = 0} : () -> memref<4xf32, 1>\n"
        "  gpu.memcpy %0, %a {stream = 0} : (memref<4xf32, 1>, memref<4xf32>) -> ()\n"
        "  %1 = gpu.alloc {stream = 0} : () -> memref<4xf32, 1>\n"
        "  gpu.launch_func %0, %1 {kernel = @kernels::@k, grid = [1, 1, 1], block = [4, 1, 1], stream = 0} "
        ": (memref<4xf32, 1>, memref<4xf32, 1>) -> ()\n"
        "  gpu.dealloc %0 {stream = 0} : (memref<4xf32, 1>) -> ()\n"
        "  gpu.memcpy %out, %1 {stream = 0, event = 0} : (memref<4xf32>, memref<4xf32, 1>) -> ()\n"
        "  gpu.dealloc %1 {stream = 0} : (memref<4xf32, 1>) -> ()\n"
        "  %2 = memref.alloc : () -> memref<4xf32>\n"
        "  gpu.wait {events = [0]} : () -> ()\n"
        "  memref.copy %out, %2 : (memref<4xf32>, memref<4xf32>) -> ()\n"
        "  return %2 : memref<4xf32>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, text);
    gpuir_program *p = m ? make_graphs(m, 0, false) : NULL;
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    gpuir_array in[2], res;
    int64_t d[] = {4};
    gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 1, d);
    gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 1, d);
    for (int run = 0; p && run < 2; run++) {
        for (int i = 0; i < 4; i++) {
            ((float *)in[0].data)[i] = (float)(i + run);
            ((float *)in[1].data)[i] = 0.0f;
        }
        memset(&res, 0, sizeof res);
        CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 1, &res), GPUIR_OK);
        for (int i = 0; res.data && i < 4; i++) {
            CHECK_NEAR(((float *)res.data)[i], exp((double)(i + run)), 1e-5);
            CHECK_NEAR(((float *)in[1].data)[i], exp((double)(i + run)), 1e-5);
        }
        gpuir_array_release(&res);
    }
    gpuir_program_stats st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    CHECK(st.runs == 2 && st.graph_records == 0 && st.graph_replays == 0 && st.launches == 2);
    gpuir_array_release(&in[0]);
    gpuir_array_release(&in[1]);
    gpuir_ctx_destroy(ctx);
}

/* Every table call of a graph run failing in turn (first run records, the
   second replays): each failure is an error naming the call, nothing
   leaks (the emulator asserts so when the program goes, and the ASan build
   runs this too), and the program runs right again afterwards. */
TEST(a_failing_table_call_in_a_graph_run_leaks_nothing) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    int failures = 0;
    for (uint64_t k = 1; k < 400; k++) {
        gpuir_module *ref = parse(ctx, streams_text), *m = parse(ctx, streams_text);
        ctx->fault.fail_at = 0;
        gpuir_program *p = m ? make_graphs(m, 2, false) : NULL;
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
        if (!p) break;
        gpuir_array in[4], want[3], got[3];
        int64_t ad[] = {32, 48}, bd[] = {48, 40};
        for (int i = 0; i < 4; i++) {
            gpuir_array_alloc(ctx, &in[i], GPUIR_F32, 2, i % 2 ? bd : ad);
            gpuir_array_fill_random(&in[i], 7 + (uint64_t)i);
        }
        memset(want, 0, sizeof want);
        CHECK_RESULT(ctx, gpuir_ref_run(ref, "g", 4, in, 3, want), GPUIR_OK);
        gpuir__fault_unwrap(p);
        memset(&ctx->fault, 0, sizeof ctx->fault);
        ctx->fault.fail_at = k;
        CHECK_RESULT(ctx, gpuir__fault_wrap(p), GPUIR_OK);
        bool failed = false;
        for (int run = 0; run < 3; run++) {          /* record, replay, replay */
            memset(got, 0, sizeof got);
            gpuir_result r = gpuir_program_run(p, "g", 4, in, 3, got);
            if (r) {
                failed = true;
                CHECK(r == GPUIR_ERR_CUDA && strstr(gpuir_ctx_error(ctx), "emu: "));
                gpuir_ctx_clear_error(ctx);
            } else
                for (int i = 0; i < 3; i++)
                    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got[i], &want[i], 1e-5, 1e-5), GPUIR_OK);
            for (int i = 0; i < 3; i++) gpuir_array_release(&got[i]);
        }
        bool past_the_end = ctx->fault.calls < k;
        memset(&ctx->fault, 0, sizeof ctx->fault);
        gpuir__fault_unwrap(p);
        memset(got, 0, sizeof got);                 /* and it runs right afterwards */
        CHECK_RESULT(ctx, gpuir_program_run(p, "g", 4, in, 3, got), GPUIR_OK);
        for (int i = 0; i < 3; i++) {
            CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got[i], &want[i], 1e-5, 1e-5), GPUIR_OK);
            gpuir_array_release(&got[i]);
            gpuir_array_release(&want[i]);
        }
        for (int i = 0; i < 4; i++) gpuir_array_release(&in[i]);
        gpuir_program_destroy(p);
        gpuir_module_destroy(ref);
        gpuir_module_destroy(m);
        failures += failed;
        if (past_the_end) break;
    }
    CHECK(failures > 30);           /* 55 when written: calls of a record and two replays */
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(replays_with_new_inputs_match_the_interpreter);
    RUN(sibling_kernels_replay_with_zeroed_counters);
    RUN(synchronous_replays_match_the_interpreter);
    RUN(a_new_size_records_again);
    RUN(a_replay_sees_a_rebound_global);
    RUN(a_replay_sees_a_global_bound_to_another_buffer);
    RUN(a_host_read_of_a_copied_back_buffer_runs_op_by_op);
    RUN(a_failing_table_call_in_a_graph_run_leaks_nothing);
    return CHECK_EXIT();
}

/* Streams and events at run time (the async pass's output): the emulator
   holds queued work until the host waits for it and runs the streams in a
   seeded interleaving, so a missing wait or a missing event shows as wrong
   results; with the waits the pass writes, every interleaving matches the
   interpreter. */
#define _POSIX_C_SOURCE 200809L
#include "../../gpuir.h"
#include "../check.h"

#include <stdlib.h>

static gpuir_program *make_emu(gpuir_module *m, uint64_t seed, bool synchronous) {
    return gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU, .emu_seed = seed,
                                                       .synchronous = synchronous});
}

/* A placed program by hand: exp of %a on the device, copied back into
   %out, then read by the host (memref.copy). WAIT is "" or a gpu.wait. */
static char *host_reads_text(const char *wait) {
    static const char fmt[] =
        "gpu.module @kernels {\n"
        "  gpu.func @k(%%arg0: memref<4xf32, 1>, %%arg1: memref<4xf32, 1>) kernel {\n"
        "    exp %%arg0, %%arg1 : (memref<4xf32, 1>, memref<4xf32, 1>) -> ()\n"
        "    return\n  }\n}\n"
        "func.func @f(%%a: memref<4xf32>, %%out: memref<4xf32>) -> memref<4xf32> {\n"
        "  %%0 = gpu.alloc {stream = 0} : () -> memref<4xf32, 1>\n"
        "  gpu.memcpy %%0, %%a {stream = 0} : (memref<4xf32, 1>, memref<4xf32>) -> ()\n"
        "  %%1 = gpu.alloc {stream = 0} : () -> memref<4xf32, 1>\n"
        "  gpu.launch_func %%0, %%1 {kernel = @kernels::@k, grid = [1, 1, 1], block = [4, 1, 1], stream = 0} "
        ": (memref<4xf32, 1>, memref<4xf32, 1>) -> ()\n"
        "  gpu.dealloc %%0 {stream = 0} : (memref<4xf32, 1>) -> ()\n"
        "  gpu.memcpy %%out, %%1 {stream = 0, event = 0} : (memref<4xf32>, memref<4xf32, 1>) -> ()\n"
        "  gpu.dealloc %%1 {stream = 0} : (memref<4xf32, 1>) -> ()\n"
        "  %%2 = memref.alloc : () -> memref<4xf32>\n"
        "%s"
        "  memref.copy %%out, %%2 : (memref<4xf32>, memref<4xf32>) -> ()\n"
        "  return %%2 : memref<4xf32>\n}\n";
    size_t n = sizeof fmt + strlen(wait);
    char *text = (char *)malloc(n);
    snprintf(text, n, fmt, wait);
    return text;
}

/* Runs the host-reads program on the emulator: *copied gets what the host
   copied, out what the device wrote back. */
static void run_host_reads(gpuir_ctx *ctx, const char *wait, float copied[4], float out[4]) {
    char *text = host_reads_text(wait);
    gpuir_module *m = parse(ctx, text);
    free(text);
    gpuir_program *p = m ? make_emu(m, 0, false) : NULL;
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    gpuir_array in[2], res;
    int64_t d[] = {4};
    gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 1, d);
    gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 1, d);
    for (int i = 0; i < 4; i++) {
        ((float *)in[0].data)[i] = (float)i;
        ((float *)in[1].data)[i] = 0.0f;
    }
    memset(&res, 0, sizeof res);
    if (p) CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 1, &res), GPUIR_OK);
    for (int i = 0; i < 4; i++) {
        copied[i] = res.data ? ((float *)res.data)[i] : -1.0f;
        out[i] = ((float *)in[1].data)[i];
    }
    gpuir_array_release(&res);
    gpuir_array_release(&in[0]);
    gpuir_array_release(&in[1]);
    gpuir_module_destroy(m);
}

/* Without the gpu.wait the host would copy %out while the copy-back may
   still be writing it (the emulator held it, and the host copied zeros):
   the verifier refuses the program, naming the copy. With the wait, the
   host copies exp(a), and the copy-back lands in the caller's array. */
TEST(the_host_sees_a_copy_back_only_after_waiting_for_it) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char *text = host_reads_text("");
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "test");
    free(text);
    CHECK(m == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_VERIFY);
    CHECK(strstr(gpuir_ctx_error(ctx), "test:16:3: error: memref.copy reads operand #0, a host buffer the gpu.memcpy "
                                       "on stream 0 (line 13) may still be writing") != NULL);
    gpuir_module_destroy(m);
    gpuir_ctx_clear_error(ctx);
    float copied[4], out[4];
    run_host_reads(ctx, "  gpu.wait {events = [0]} : () -> ()\n", copied, out);
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(copied[i], exp((double)i), 1e-5);
        CHECK_NEAR(out[i], exp((double)i), 1e-5);
    }
    gpuir_ctx_destroy(ctx);
}

static const char *const graph_text = STREAMS_TEXT;

/* Runs text's @g on the emulator with `seed` and compares each result with
   the interpreter's; the number of results that differ. */
static int mismatches(gpuir_ctx *ctx, const char *text, uint64_t seed) {
    gpuir_module *ref = parse(ctx, graph_text), *m = parse(ctx, text);
    gpuir_program *p = m ? make_emu(m, seed, false) : NULL;
    gpuir_array in[4], want[3], got[3];
    int64_t ad[] = {32, 48}, bd[] = {48, 40};
    memset(want, 0, sizeof want);
    memset(got, 0, sizeof got);
    for (int i = 0; i < 4; i++) {
        gpuir_array_alloc(ctx, &in[i], GPUIR_F32, 2, i % 2 ? bd : ad);
        gpuir_array_fill_random(&in[i], 100 + (uint64_t)i);
    }
    int bad = 3;
    if (p && gpuir_ref_run(ref, "g", 4, in, 3, want) == GPUIR_OK &&
        gpuir_program_run(p, "g", 4, in, 3, got) == GPUIR_OK) {
        bad = 0;
        for (int i = 0; i < 3; i++) bad += gpuir_array_compare(ctx, &got[i], &want[i], 1e-5, 1e-5) != GPUIR_OK;
        gpuir_ctx_clear_error(ctx);
    }
    for (int i = 0; i < 4; i++) gpuir_array_release(&in[i]);
    for (int i = 0; i < 3; i++) { gpuir_array_release(&want[i]); gpuir_array_release(&got[i]); }
    gpuir_module_destroy(ref);
    gpuir_module_destroy(m);
    return bad;
}

/* The lowered program, as text. */
static char *lowered(gpuir_ctx *ctx, const char *pipeline) {
    gpuir_module *m = parse(ctx, graph_text);
    char *text = m && gpuir_module_run_passes(m, pipeline, NULL) == GPUIR_OK ? gpuir_module_print(m) : NULL;
    gpuir_module_destroy(m);
    return text;
}

TEST(every_interleaving_of_the_streams_matches_the_interpreter) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char *text = lowered(ctx, GPUIR_DEFAULT_PIPELINE);
    CHECK(text && strstr(text, "stream = 2") && strstr(text, "wait = [") && strstr(text, "gpu.wait {events"));
    for (uint64_t seed = 1; text && seed <= 24; seed++) {
        int bad = mismatches(ctx, text, seed);
        if (bad) fprintf(stderr, "seed %llu: %d results differ\n", (unsigned long long)seed, bad);
        CHECK(bad == 0);
    }
    gpuir_free(text);
    gpuir_ctx_destroy(ctx);
}

/* The emulator would catch a pass that forgot an event: with every stream
   wait removed, some interleavings read data not yet copied or computed
   (wrong results), or touch memory another stream already freed (an
   illegal-address error naming the freed memory). */
TEST(a_missing_event_wait_shows_in_some_interleaving) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char *text = lowered(ctx, GPUIR_DEFAULT_PIPELINE);
    CHECK(text != NULL);
    for (char *w = text ? strstr(text, ", wait = [") : NULL; w; w = strstr(w, ", wait = [")) {
        char *end = strchr(w, ']');          /* blank it out: ", wait = [1, 2]" */
        memset(w, ' ', (size_t)(end - w) + 1);
    }
    int seeds_wrong = 0;
    for (uint64_t seed = 1; text && seed <= 24; seed++) {
        seeds_wrong += mismatches(ctx, text, seed) > 0;   /* wrong data, or work on freed memory */
        gpuir_ctx_clear_error(ctx);
    }
    CHECK(seeds_wrong > 0);
    gpuir_free(text);
    gpuir_ctx_destroy(ctx);
}

TEST(synchronous_programs_use_no_streams) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char *text = lowered(ctx, GPUIR_SYNC_PIPELINE);
    CHECK(text && !strstr(text, "stream =") && !strstr(text, "gpu.wait"));
    gpuir_module *m = parse(ctx, graph_text);
    gpuir_program *p = m ? make_emu(m, 0, true) : NULL;
    char *placed = p ? gpuir_module_print(m) : NULL;
    CHECK(placed && !strstr(placed, "stream ="));
    if (text) CHECK(mismatches(ctx, text, 7) == 0);
    gpuir_free(placed);
    gpuir_free(text);
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(the_host_sees_a_copy_back_only_after_waiting_for_it);
    RUN(every_interleaving_of_the_streams_matches_the_interpreter);
    RUN(a_missing_event_wait_shows_in_some_interleaving);
    RUN(synchronous_programs_use_no_streams);
    return CHECK_EXIT();
}

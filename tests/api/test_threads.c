/* The thread contract (gpuir.h, THREADS): separate contexts in parallel.
   Several threads, each with its own context but one disk cache directory,
   parse, lower, compile (the same programs at once: concurrent cache
   writes) and run programs on the emulator, and compare every result with
   the interpreter; then the same with processes. Built a second time with
   -fsanitize=thread (tests/check-tsan.sh), which must report nothing. */
#define _POSIX_C_SOURCE 200809L
#include "../../gpuir.h"
#include "../check.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define RUNS 3

/* An elementwise chain with a reduction (fibers: barriers), a matmul with
   an epilogue (shared memory), a row softmax, two independent chains
   (streams), and a sibling kernel (a column max with an elementwise op of
   the same matrix: per-block partials combined by the last block, through
   a workspace each launch gets anew). */
static const char *const programs[] = {
    "func.func @f(%x: tensor<6x40xf32>, %b: tensor<40xf32>) -> (tensor<6x40xf32>, tensor<6xf32>) {\n"
    "  %e = exp %x : (tensor<6x40xf32>) -> tensor<6x40xf32>\n"
    "  %a = add %e, %b : (tensor<6x40xf32>, tensor<40xf32>) -> tensor<6x40xf32>\n"
    "  %s = reduce_sum %a {axes = [1]} : (tensor<6x40xf32>) -> tensor<6xf32>\n"
    "  return %a, %s : tensor<6x40xf32>, tensor<6xf32>\n}\n",

    "func.func @f(%x: tensor<24x40xf32>, %w: tensor<40x16xf32>) -> (tensor<24x16xf32>, tensor<24x16xf32>) {\n"
    "  %m = matmul %x, %w : (tensor<24x40xf32>, tensor<40x16xf32>) -> tensor<24x16xf32>\n"
    "  %r = relu %m : (tensor<24x16xf32>) -> tensor<24x16xf32>\n"
    "  %t = tanh %m : (tensor<24x16xf32>) -> tensor<24x16xf32>\n"
    "  return %r, %t : tensor<24x16xf32>, tensor<24x16xf32>\n}\n",

    "func.func @f(%x: tensor<8x100xf32>, %y: tensor<8x100xf32>) -> (tensor<8x100xf32>, tensor<8x100xf32>) {\n"
    "  %s = softmax %x {axis = -1} : (tensor<8x100xf32>) -> tensor<8x100xf32>\n"
    "  %z = sigmoid %y : (tensor<8x100xf32>) -> tensor<8x100xf32>\n"
    "  return %s, %z : tensor<8x100xf32>, tensor<8x100xf32>\n}\n",

    "func.func @f(%x: tensor<70x300xf32>, %w: tensor<300xf32>) -> (tensor<70x300xf32>, tensor<300xf32>) {\n"
    "  %e = mul %x, %w : (tensor<70x300xf32>, tensor<300xf32>) -> tensor<70x300xf32>\n"
    "  %a = reduce_max %x {axes = [0]} : (tensor<70x300xf32>) -> tensor<300xf32>\n"
    "  return %e, %a : tensor<70x300xf32>, tensor<300xf32>\n}\n",
};
#define N_PROGRAMS (sizeof programs / sizeof programs[0])

typedef struct worker {
    int id;
    const char *cache_dir;
    int runs, failures;
    char error[512];
} worker;

static void note(worker *w, gpuir_ctx *ctx, const char *what) {
    w->failures++;
    if (!w->error[0]) snprintf(w->error, sizeof w->error, "thread %d: %s: %s", w->id, what, gpuir_ctx_error(ctx));
}

/* One program: RUNS runs with fresh inputs, each compared with the
   interpreter. */
static void run_program(worker *w, gpuir_ctx *ctx, const char *text, uint64_t seed) {
    gpuir_module *ref = gpuir_module_parse(ctx, text, strlen(text), "ref");
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "prog");
    gpuir_program_desc d = {.backend = GPUIR_BACKEND_EMU, .emu_seed = seed};
    gpuir_program *p = m ? gpuir_program_make(m, &d) : NULL;
    if (!ref || !p) { note(w, ctx, "make"); gpuir_ctx_clear_error(ctx); goto done; }
    gpuir_func f = gpuir_module_find_func(ref, "f");
    for (int run = 0; run < RUNS; run++) {
        gpuir_array in[2], want[2], got[2];
        memset(want, 0, sizeof want);
        memset(got, 0, sizeof got);
        for (int i = 0; i < 2; i++) {
            gpuir_type t = gpuir_func_param_type(ref, f, (size_t)i);
            gpuir_array_alloc(ctx, &in[i], t.dtype, t.rank, t.dims);
            gpuir_array_fill_random(&in[i], seed * 100 + (uint64_t)(run * 2 + i));
        }
        gpuir_result r = gpuir_ref_run(ref, "f", 2, in, 2, want);
        if (!r) r = gpuir_program_run(p, "f", 2, in, 2, got);
        for (int i = 0; !r && i < 2; i++) r = gpuir_array_compare(ctx, &got[i], &want[i], 1e-5, 1e-5);
        if (r) note(w, ctx, "run");
        gpuir_ctx_clear_error(ctx);
        w->runs++;
        for (int i = 0; i < 2; i++) {
            gpuir_array_release(&in[i]);
            gpuir_array_release(&want[i]);
            gpuir_array_release(&got[i]);
        }
    }
done:
    gpuir_program_destroy(p);
    gpuir_module_destroy(m);
    gpuir_module_destroy(ref);
}

static void *worker_main(void *arg) {
    worker *w = (worker *)arg;
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = w->cache_dir});
    for (size_t i = 0; i < N_PROGRAMS; i++)          /* every thread: every program, in its own order */
        run_program(w, ctx, programs[(i + (size_t)w->id) % N_PROGRAMS], (uint64_t)w->id + 1);
    gpuir_ctx_destroy(ctx);
    return NULL;
}

/* A later context finds every program in the cache directory: disk hits
   only, nothing corrupt, and right results. */
static void check_all_on_disk(const char *dir, uint64_t seed) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = dir});
    worker late;
    memset(&late, 0, sizeof late);
    for (size_t i = 0; i < N_PROGRAMS; i++) run_program(&late, ctx, programs[i], seed);
    gpuir_cache_stats st = gpuir_ctx_cache_stats(ctx);
    CHECK(late.failures == 0 && st.disk_hits == N_PROGRAMS && st.misses == 0 && st.corrupt == 0);
    if (late.error[0]) fprintf(stderr, "%s\n", late.error);
    gpuir_ctx_destroy(ctx);
}

TEST(contexts_in_parallel_threads_compile_and_run_correctly) {
    char dir[] = "/tmp/gpuir-test-threads-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    pthread_t tid[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i;
        w[i].cache_dir = dir;
        CHECK(pthread_create(&tid[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(tid[i], NULL);
        CHECK(w[i].runs == (int)N_PROGRAMS * RUNS);
        CHECK(w[i].failures == 0);
        if (w[i].error[0]) fprintf(stderr, "%s\n", w[i].error);
    }
    check_all_on_disk(dir, 9);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* Processes, too: four children race to compile the same programs into
   one cache directory (each writes its entry through a private temporary
   file and a rename); afterwards every entry loads, none is corrupt, and
   no temporary file is left behind. */
TEST(processes_share_one_cache_directory) {
    char dir[] = "/tmp/gpuir-test-procs-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    pid_t kids[THREADS];
    for (int i = 0; i < THREADS; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            worker w;
            memset(&w, 0, sizeof w);
            w.id = i;
            w.cache_dir = dir;
            worker_main(&w);
            _exit(w.failures == 0 && w.runs == (int)N_PROGRAMS * RUNS ? 0 : 1);
        }
        CHECK(kids[i] > 0);
    }
    for (int i = 0; i < THREADS; i++) {
        int status = -1;
        if (kids[i] > 0) waitpid(kids[i], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    check_all_on_disk(dir, 11);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "test -z \"$(find %s -name '*.tmp')\"", dir);
    CHECK(system(cmd) == 0);                          /* no temporary file left */
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    RUN(contexts_in_parallel_threads_compile_and_run_correctly);
    RUN(processes_share_one_cache_directory);
    return CHECK_EXIT();
}

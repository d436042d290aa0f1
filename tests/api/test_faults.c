/* Fault injection through the device table (ctx->fault) and the host
   allocator (GPUIR_MALLOC, defined below). Device table: for end-to-end
   programs on the emulator, fail each table call in turn (k = 1..N, N the
   calls a clean make and two runs take), once and for good. Every failure is
   a GPUIR_ERR_CUDA naming the call and the injection (except a cached
   module's load or kernel lookup failing once: the module is evicted and
   compiled again, and the make succeeds); after a transient one
   the context works again and gives the interpreter's results; nothing
   leaks (the emulator asserts zero live device buffers and modules when a
   program goes; LeakSanitizer checks host memory in the ASan build). And a
   fatal error (an illegal address) loses the device context: later runs
   fail fast with the reason. Host allocator: the same flow (warm and with
   no disk cache), the interpreter and gpuir_ctx_make, failing each of
   gpuir's own allocations in turn: every failure is reported as out of
   memory (the header's GPUIR_MALLOC note says how), nothing leaks, and the
   context works again afterwards. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

/* Host allocations go through this file's allocator (GPUIR_MALLOC and
   friends), which counts them while armed and fails the k-th (and, when
   persistent, every later one). */
typedef struct host_plan {
    uint64_t fail_at;             /* 0: off; UINT64_MAX: count only */
    bool persistent;
    uint64_t calls, injected;
} host_plan;
static host_plan host;

static void host_arm(uint64_t fail_at, bool persistent) {
    host = (host_plan){fail_at, persistent, 0, 0};
}

static bool host_should_fail(void) {
    if (!host.fail_at) return false;
    host.calls++;
    if (host.calls == host.fail_at || (host.persistent && host.calls > host.fail_at)) {
        host.injected++;
        return true;
    }
    return false;
}
static void *test_malloc(size_t size) { return host_should_fail() ? NULL : malloc(size); }
static void *test_realloc(void *p, size_t size) { return host_should_fail() ? NULL : realloc(p, size); }
#define GPUIR_MALLOC(size) test_malloc(size)
#define GPUIR_REALLOC(p, size) test_realloc(p, size)
#define GPUIR_FREE(p) free(p)

#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

/* A chain with a reduction, and a view of it (reshape) written in place and
   returned; two independent matmuls on streams with a dense constant and a
   global (resident); a softmax; a matmul and a reduction with dynamic dims
   (sized at run time: `?` is DYNAMIC_SIZE here). */
static const char *const programs[] = {
    "func.func @f(%x: tensor<5x7xf32>, %b: tensor<7xf32>) -> (tensor<35xf32>, tensor<5xf32>) {\n"
    "  %e = exp %x : (tensor<5x7xf32>) -> tensor<5x7xf32>\n"
    "  %a = add %e, %b : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>\n"
    "  %r = reshape %a : (tensor<5x7xf32>) -> tensor<35xf32>\n"
    "  %n = neg %r : (tensor<35xf32>) -> tensor<35xf32>\n"
    "  %s = reduce_sum %x {axes = [1]} : (tensor<5x7xf32>) -> tensor<5xf32>\n"
    "  return %n, %s : tensor<35xf32>, tensor<5xf32>\n}\n",

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

    "func.func @f(%x: tensor<?x8xf32>, %w: tensor<8x?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>) {\n"
    "  %m = matmul %x, %w : (tensor<?x8xf32>, tensor<8x?xf32>) -> tensor<?x?xf32>\n"
    "  %r = relu %m : (tensor<?x?xf32>) -> tensor<?x?xf32>\n"
    "  %s = reduce_sum %x {axes = [1]} : (tensor<?x8xf32>) -> tensor<?xf32>\n"
    "  return %r, %s : tensor<?x?xf32>, tensor<?xf32>\n}\n",
};
#define DYNAMIC_SIZE 6
#define N_PROGRAMS (sizeof programs / sizeof programs[0])

typedef struct fixture {
    gpuir_ctx *ctx;
    gpuir_module *ref;
    gpuir_array in[2], want[2];
} fixture;

/* Parses text and binds its global @W, if any, to a fixed pattern. */
static gpuir_module *parse_bound(gpuir_ctx *ctx, const char *text) {
    gpuir_module *m = parse_as(ctx, text, "test");    /* silent: faults make parses fail */
    if (m && gpuir_module_global_count(m)) {
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
    fx->ref = parse_bound(fx->ctx, text);
    const gpuir__func *f = gpuir__func_at(fx->ref, gpuir__find_func(fx->ref, "f"));
    for (int i = 0; i < 2; i++) {
        gpuir_type t = gpuir__value_at(fx->ref, f->params[i])->type;
        for (int d = 0; d < t.rank; d++)
            if (t.dims[d] == GPUIR_DYN) t.dims[d] = DYNAMIC_SIZE;
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
    return gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU});
}

/* A fixture for text, and an emulator program on a parse of its own. */
static gpuir_program *fixture_with_program(fixture *fx, const char *text) {
    fixture_make(fx, text);
    gpuir_program *p = make_emu(parse_bound(fx->ctx, text));
    CHECK(p != NULL);
    return p;
}

/* A lowered copy of the program, a program on it, two runs, and the
   lowered module printed as text and as a graph; the first failure's code. */
static gpuir_result make_and_run_twice(fixture *fx, const char *text) {
    gpuir_module *m = parse_bound(fx->ctx, text);
    gpuir_program *p = m ? make_emu(m) : NULL;
    gpuir_result r = p ? GPUIR_OK : gpuir_ctx_result(fx->ctx);
    for (int i = 0; !r && i < 2; i++) r = run_and_compare(fx, p);
    for (int i = 0; !r && i < 2; i++) {           /* the lowered module as text and as a graph */
        char *text = i ? gpuir_module_print_dot(m) : gpuir_module_print(m);
        r = text ? GPUIR_OK : gpuir_ctx_result(fx->ctx);
        if (!text && !r) r = GPUIR_ERR_INVALID_ARGUMENT;  /* a NULL without an error: caught below */
        gpuir_free(text);
    }
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
    if (injected && r == GPUIR_OK) {
        /* a module from the cache that fails to load (or to give a kernel)
           is evicted and compiled again, once: a transient failure there
           is survived, and the cache status says so */
        CHECK(!persistent && strstr(gpuir_ctx_cache_status(fx.ctx), "evicted from the cache and compiled again"));
    } else if (injected) {
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

/* The host allocations a clean make and two runs take; the kernel cache's
   misses in *misses when asked. */
static uint64_t count_host_allocations(const char *text, uint64_t *misses) {
    fixture fx;
    fixture_make(&fx, text);
    host_arm(UINT64_MAX, false);
    CHECK_RESULT(fx.ctx, make_and_run_twice(&fx, text), GPUIR_OK);
    uint64_t n = host.calls;
    host.fail_at = 0;
    if (misses) *misses = gpuir_ctx_cache_stats(fx.ctx).misses;
    fixture_free(&fx);
    return n;
}

static uint64_t host_injected_total, host_cases_total;

/* Whether a failed host allocation was reported as the header says: out of
   host memory; the emulated device out of memory (its memory is the
   host's); or a kernel-cache entry not loaded, noted in the cache status
   and compiled again. */
static bool reported_as_out_of_memory(gpuir_ctx *ctx, gpuir_result r) {
    const char *error = gpuir_ctx_error(ctx);
    if (r == GPUIR_ERR_OUT_OF_MEMORY) return strstr(error, "out of host memory") != NULL;
    if (r == GPUIR_ERR_CUDA) return strstr(error, "emu: ") && strstr(error, "CUDA_ERROR_OUT_OF_MEMORY");
    return r == GPUIR_OK && strstr(gpuir_ctx_cache_status(ctx), "out of memory") != NULL;
}

/* Fails host allocation k (once, or from k on) in a make and two runs: the
   failure is reported as out of memory, and with the allocator working
   again the same context makes and runs the program. */
static void inject_host(const char *text, uint64_t k, bool persistent) {
    fixture fx;
    fixture_make(&fx, text);
    host_arm(k, persistent);
    gpuir_result r = make_and_run_twice(&fx, text);
    host.fail_at = 0;
    host_injected_total += host.injected;
    host_cases_total++;
    if (host.injected) {
        bool ok = reported_as_out_of_memory(fx.ctx, r);
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "  host allocation k=%llu%s: %s: %s\n", (unsigned long long)k,
                    persistent ? " (persistent)" : "", gpuir_result_name(r), gpuir_ctx_error(fx.ctx));
    } else {
        CHECK_RESULT(fx.ctx, r, GPUIR_OK);
    }
    gpuir_ctx_clear_error(fx.ctx);
    CHECK_RESULT(fx.ctx, make_and_run_twice(&fx, text), GPUIR_OK);
    fixture_free(&fx);
}

TEST(every_host_allocation_fails_cleanly_once) {
    for (size_t i = 0; i < N_PROGRAMS; i++) {
        uint64_t n = count_host_allocations(programs[i], NULL);
        CHECK(n > 20);
        for (uint64_t k = 1; k <= n; k++) inject_host(programs[i], k, false);
    }
}

TEST(every_host_allocation_fails_cleanly_for_good) {
    for (size_t i = 0; i < N_PROGRAMS; i++) {
        uint64_t n = count_host_allocations(programs[i], NULL);
        for (uint64_t k = 1; k <= n; k++) inject_host(programs[i], k, true);
    }
}

/* Without a disk cache every case compiles: the code generator, the host
   compiler's spawn and the module load fail too (one program, once each). */
TEST(every_host_allocation_of_a_cold_make_fails_cleanly) {
    setenv("GPUIR_CACHE_DISABLE", "1", 1);
    uint64_t misses = 0, n = count_host_allocations(programs[0], &misses);
    CHECK(misses == 1);                     /* it did compile */
    for (uint64_t k = 1; k <= n; k++) inject_host(programs[0], k, false);
    unsetenv("GPUIR_CACHE_DISABLE");
}

/* The interpreter: every failure is out of host memory, and the next run
   gives the same results. */
TEST(every_host_allocation_of_the_interpreter_fails_cleanly) {
    for (size_t i = 0; i < N_PROGRAMS; i++) {
        fixture fx;
        fixture_make(&fx, programs[i]);
        gpuir_array got[2];
        host_arm(UINT64_MAX, false);
        memset(got, 0, sizeof got);
        CHECK_RESULT(fx.ctx, gpuir_ref_run(fx.ref, "f", 2, fx.in, 2, got), GPUIR_OK);
        uint64_t n = host.calls;
        host_arm(0, false);
        for (int j = 0; j < 2; j++) gpuir_array_release(&got[j]);
        CHECK(n > 5);
        for (uint64_t k = 1; k <= n; k++) {
            host_arm(k, false);
            memset(got, 0, sizeof got);
            gpuir_result r = gpuir_ref_run(fx.ref, "f", 2, fx.in, 2, got);
            host_arm(0, false);
            host_injected_total++, host_cases_total++;
            CHECK_RESULT(fx.ctx, r, GPUIR_ERR_OUT_OF_MEMORY);
            CHECK(got[0].data == NULL && got[1].data == NULL);
            for (int j = 0; j < 2; j++) gpuir_array_release(&got[j]);
            gpuir_ctx_clear_error(fx.ctx);
            r = gpuir_ref_run(fx.ref, "f", 2, fx.in, 2, got);
            CHECK_RESULT(fx.ctx, r, GPUIR_OK);
            for (int j = 0; !r && j < 2; j++)
                CHECK_RESULT(fx.ctx, gpuir_array_compare(fx.ctx, &got[j], &fx.want[j], 0, 0), GPUIR_OK);
            for (int j = 0; j < 2; j++) gpuir_array_release(&got[j]);
        }
        fixture_free(&fx);
    }
}

/* A context that cannot be made is NULL, with nothing left behind. */
TEST(a_context_without_memory_is_null) {
    host_arm(UINT64_MAX, false);
    gpuir_ctx_destroy(gpuir_ctx_make(NULL));
    uint64_t n = host.calls;
    CHECK(n >= 1);
    for (uint64_t k = 1; k <= n; k++) {
        host_arm(k, false);
        gpuir_ctx *ctx = gpuir_ctx_make(NULL);
        host.fail_at = 0;
        CHECK(ctx == NULL);
        gpuir_ctx_destroy(ctx);
    }
}

/* An illegal address (fatal to a CUDA context) in a run: that run fails,
   and so does every later run of the program, at once and with the reason;
   a new program (its own emulated device) works. */
TEST(a_fatal_error_loses_the_device_context) {
    fixture fx;
    gpuir_program *p = fixture_with_program(&fx, programs[0]);
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

/* The table's tensor-map encoding: the emulator's checks what
   cuTensorMapEncodeTiled checks and says which argument is wrong; the
   fault wrapper forwards a good one and fails an injected one. */
TEST(tensor_map_encoding_through_the_table) {
    fixture fx;
    gpuir_program *p = fixture_with_program(&fx, programs[0]);
    if (p) {
        gpuir__tmap map;
        gpuir__tmap_desc d = {GPUIR__TMAP_F16, 2, 4096, {96, 200}, {192}, {64, 128}, GPUIR__TMAP_SWIZZLE_128B};
        CHECK(p->drv.tensor_map_encode(p->drv.self, &map, &d) == 0);
        CHECK(map.words[1] == 4096 && map.words[2] == 96 && map.words[3] == 200 && map.words[7] == 192);
        CHECK(map.words[11] == (64ull | 128ull << 32));
        const char *name, *text, *detail;
        gpuir__tmap_desc bad = d;
        bad.strides[0] = 200;                             /* not a multiple of 16 */
        int rc = p->drv.tensor_map_encode(p->drv.self, &map, &bad);
        CHECK(rc == 1);
        p->drv.describe(p->drv.self, rc, &name, &text, &detail);
        CHECK(strstr(detail, "global stride") != NULL);
        bad = d;
        bad.box[0] = 128;                                 /* 256 bytes: wider than the 128-byte swizzle */
        CHECK(p->drv.tensor_map_encode(p->drv.self, &map, &bad) == 1);
        gpuir__fault_wrap(p);
        fx.ctx->fault.calls = 0;
        fx.ctx->fault.fail_at = 2;
        CHECK(p->drv.tensor_map_encode(p->drv.self, &map, &d) == 0);
        CHECK(p->drv.tensor_map_encode(p->drv.self, &map, &d) == 1);
        p->drv.describe(p->drv.self, 1, &name, &text, &detail);
        CHECK(strstr(detail, "injected") != NULL);
        fx.ctx->fault.fail_at = 0;
    }
    fixture_free(&fx);
}

/* The device tables: every operation named (gpuir__drv_complete) for the
   emulator, CUDA (over a CUDA state no driver made: making the table calls
   nothing) and the fault wrapper; each says its dialect and what the device
   is (facts rt.exec reads instead of the CUDA state); compiling is the
   table's build, and the fault wrapper hands it the wrapped table's self,
   not its own. */
static void *built_self;
static gpuir_result record_build(void *self, gpuir_program *p, struct gpuir__built *b) {
    (void)p, (void)b;
    built_self = self;
    return GPUIR_OK;
}
TEST(device_tables_name_every_operation_and_build_inside) {
    fixture fx;
    fixture_make(&fx, programs[0]);
    gpuir_program *p = make_emu(parse(fx.ctx, programs[0]));
    CHECK(p != NULL);
    if (!p) { fixture_free(&fx); return; }
    CHECK(gpuir__drv_complete(&p->drv) && p->drv.dialect == &gpuir__cg_emu && p->drv.capture_alloc);
    CHECK(p->drv.sm == 0 && p->drv.total_mem == 0 && strcmp(p->drv.name, "emu") == 0);
    gpuir__drv missing = p->drv;
    missing.stream_capturing = NULL;
    CHECK(!gpuir__drv_complete(&missing));
    gpuir__cudart C;
    memset(&C, 0, sizeof C);
    C.dev.sm = 90, C.dev.sm_count = 132, C.dev.total_mem = 80ull << 30, C.dev.memory_pools = false;
    gpuir__drv cuda = gpuir__cudart_table(&C);
    CHECK(gpuir__drv_complete(&cuda) && cuda.self == &C && cuda.dialect == &gpuir__cg_cuda && cuda.lost == C.lost);
    CHECK(cuda.sm == 90 && cuda.sm_count == 132 && cuda.total_mem == 80ull << 30 && !cuda.capture_alloc);
    gpuir__drv fake = p->drv;                         /* the emulator's, but its build records its self */
    fake.build = record_build;
    gpuir__fault *F = NULL;
    gpuir__drv wrapped = fake;
    CHECK(gpuir__fault_wrap_drv(fx.ctx, &wrapped, &F) == GPUIR_OK);
    CHECK(gpuir__drv_complete(&wrapped) && wrapped.self == F && wrapped.dialect == fake.dialect);
    CHECK(wrapped.capture_alloc == fake.capture_alloc && wrapped.lost == fake.lost);
    fx.ctx->fault.calls = 0;
    gpuir__built b;
    memset(&b, 0, sizeof b);
    CHECK(wrapped.build(wrapped.self, p, &b) == GPUIR_OK && built_self == fake.self);
    CHECK(fx.ctx->fault.calls == 0);                  /* compiling is no device call */
    GPUIR_FREE(F);
    fixture_free(&fx);
}

/* The wgmma kernel takes tensor maps the runtime encodes at its launch
   through the table, once per launch and address: a second run encodes
   none. With each table call of a make and a run failing in turn, every
   failure is the injected one, one of them names cuTensorMapEncodeTiled,
   and nothing leaks (the emulator asserts it when the context goes). */
TEST(a_failing_tensor_map_encode_fails_the_run_cleanly) {
    static const char text[] =
        "func.func @f(%x: tensor<40x72xf16>, %w: tensor<24x72xf16>) -> tensor<40x24xf16> {\n"
        "  %m = matmul %x, %w {transpose_b = true, wgmma = true} : (tensor<40x72xf16>, tensor<24x72xf16>) -> tensor<40x24xf16>\n"
        "  return %m : tensor<40x24xf16>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *ref = parse_bound(ctx, text);
    gpuir_array in[2], want, got;
    int64_t dims[2][2] = {{40, 72}, {24, 72}};
    for (int i = 0; i < 2; i++) {
        gpuir_array_alloc(ctx, &in[i], GPUIR_F16, 2, dims[i]);
        gpuir_array_fill_random(&in[i], 3 + (uint64_t)i);
    }
    CHECK_RESULT(ctx, gpuir_ref_run(ref, "f", 2, in, 1, &want), GPUIR_OK);
    gpuir_module *m = parse_bound(ctx, text);
    gpuir_program *p = make_emu(m);
    CHECK(p != NULL);
    if (p) {
        CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 1, &got), GPUIR_OK);
        CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got, &want, 1e-2, 1e-2), GPUIR_OK);
        gpuir_array_release(&got);
        CHECK(p->tmaps_encoded == 2);            /* A's and B^T's */
        size_t op = 0;                           /* the launch, again: the same addresses encode nothing */
        while (op < stbds_arrlenu(m->ops) && m->ops[op].kind != GPUIR_OP_GPU_LAUNCH_FUNC) op++;
        gpuir__dptr args[3] = {4096, 8192, 12288};
        gpuir__tmap maps[2];
        gpuir__doing doing;
        gpuir__doing_fixed(&doing, "test");
        CHECK_RESULT(ctx, gpuir__launch_tensor_maps(p, op, 0, args, maps, &doing), GPUIR_OK);
        CHECK(p->tmaps_encoded == 4);
        CHECK_RESULT(ctx, gpuir__launch_tensor_maps(p, op, 0, args, maps, &doing), GPUIR_OK);
        CHECK(p->tmaps_encoded == 4 && maps[0].words[1] == 4096 && maps[1].words[1] == 8192);
        args[1] = 16384;                         /* B moved: only its map again */
        CHECK_RESULT(ctx, gpuir__launch_tensor_maps(p, op, 0, args, maps, &doing), GPUIR_OK);
        CHECK(p->tmaps_encoded == 5 && maps[1].words[1] == 16384);
    }
    gpuir_program_destroy(p);
    int named = 0;
    for (uint64_t k = 1; k < 64; k++) {
        ctx->fault.calls = ctx->fault.injected = 0;
        ctx->fault.fail_at = k;
        p = make_emu(m);
        memset(&got, 0, sizeof got);
        gpuir_result r = p ? gpuir_program_run(p, "f", 2, in, 1, &got) : gpuir_ctx_result(ctx);
        uint64_t injected = ctx->fault.injected;
        ctx->fault.fail_at = 0;
        gpuir_array_release(&got);              /* a failed run may leave its output (as run_and_compare) */
        gpuir_program_destroy(p);
        if (!injected) { CHECK_RESULT(ctx, r, GPUIR_OK); break; }   /* past the last call */
        if (r == GPUIR_OK) {                    /* a cached module's load: evicted, compiled again */
            CHECK(strstr(gpuir_ctx_cache_status(ctx), "evicted from the cache and compiled again") != NULL);
            continue;
        }
        CHECK_RESULT(ctx, r, GPUIR_ERR_CUDA);
        CHECK(strstr(gpuir_ctx_error(ctx), "injected by the fault test") != NULL);
        named += strstr(gpuir_ctx_error(ctx), "cuTensorMapEncodeTiled") != NULL;
        gpuir_ctx_clear_error(ctx);
    }
    CHECK(named == 2);
    for (int i = 0; i < 2; i++) gpuir_array_release(&in[i]);
    gpuir_array_release(&want);
    gpuir_ctx_destroy(ctx);
}

/* The emulator's spins (mbarrier waits): a thread that yields lets the
   others run, so a spin on what a later thread writes ends; a spin that
   nothing can end is reported as a deadlock, not hung, and the engine
   runs the next launch. */
static void spin_until_the_last_thread(gpuir_emu_lane *l, void **p) {
    volatile int *flag = (volatile int *)p[0];
    if (l->thread_idx.x == l->block_dim.x - 1) {
        *flag = 1;
        ++*l->progress;
        return;
    }
    while (!*flag) l->yield(l);
}
static void spin_forever(gpuir_emu_lane *l, void **p) {
    (void)p;
    if (l->thread_idx.x == 0) return;           /* one thread exits: the rest spin on nothing */
    for (;;) l->yield(l);
}

TEST(emulator_spins_yield_and_a_hopeless_spin_is_a_deadlock) {
    gpuir__emu_engine *e = gpuir__emu_engine_make(0);
    char err[512] = "";
    const unsigned grid[3] = {2, 1, 1}, block[3] = {96, 1, 1};
    int flag = 0;
    void *params[1] = {&flag};
    CHECK(gpuir__emu_engine_launch(e, spin_until_the_last_thread, params, grid, block, 0, 1, 1, err, sizeof err) == 0);
    CHECK(flag == 1);
    CHECK(gpuir__emu_engine_launch(e, spin_forever, params, grid, block, 0, 1, 1, err, sizeof err) != 0);
    CHECK(strstr(err, "deadlock in block (0,0,0)") && strstr(err, "spin on mbarrier waits") && strstr(err, "1 exited"));
    flag = 0;
    CHECK(gpuir__emu_engine_launch(e, spin_until_the_last_thread, params, grid, block, 0, 1, 1, err, sizeof err) == 0);
    gpuir__emu_engine_destroy(e);
}

/* Clusters: the blocks of a cluster run together, each lane sees every
   block's shared memory (cluster_shared + rank * shared_stride) and the
   cluster's barrier waits for all of them; a barrier no thread can complete
   is a deadlock naming the cluster, and a grid the cluster does not divide
   is refused. */
static void swap_through_the_peer(gpuir_emu_lane *l, void **p) {
    int *out = (int *)p[0];
    unsigned t = l->thread_idx.x, peer = l->cluster_rank ^ 1u;
    ((int *)l->shared)[t] = (int)(l->block_idx.x * 1000 + t);
    l->sync_cluster(l);                                 /* every block has written its own */
    const int *theirs = (const int *)(l->cluster_shared + peer * l->shared_stride);
    out[l->block_idx.x * l->block_dim.x + t] = theirs[l->block_dim.x - 1 - t];
    l->sync_cluster(l);                                 /* nobody leaves while the peer reads */
}
static void cluster_barrier_never_met(gpuir_emu_lane *l, void **p) {
    (void)p;
    if (l->cluster_rank == 1 && l->thread_idx.x == 0) l->sync_cluster(l);
    else if (l->cluster_rank == 1) l->sync_block(l);
    else l->sync_cluster(l);
}

TEST(emulator_clusters_share_their_blocks_memory_and_barrier) {
    gpuir__emu_engine *e = gpuir__emu_engine_make(0);
    char err[512] = "";
    const unsigned grid[3] = {4, 1, 1}, block[3] = {96, 1, 1};
    int out[4 * 96];
    void *params[1] = {out};
    memset(out, 0, sizeof out);
    CHECK(gpuir__emu_engine_launch(e, swap_through_the_peer, params, grid, block, 96 * sizeof(int), 1, 2, err,
                                   sizeof err) == 0);
    int wrong = 0;
    for (unsigned b = 0; b < 4; b++)
        for (unsigned t = 0; t < 96; t++) wrong += out[b * 96 + t] != (int)((b ^ 1u) * 1000 + 95 - t);
    CHECK(wrong == 0);
    CHECK(gpuir__emu_engine_launch(e, cluster_barrier_never_met, params, grid, block, 0, 1, 2, err, sizeof err) != 0);
    CHECK(strstr(err, "deadlock in the cluster of blocks (0..1,0,0)") &&
          strstr(err, "95 thread(s) wait at __syncthreads (first: linear thread 1 of block 1)") &&
          strstr(err, "97 at the cluster's barrier (first: linear thread 0 of block 0)"));
    const unsigned odd[3] = {3, 1, 1};
    CHECK(gpuir__emu_engine_launch(e, swap_through_the_peer, params, odd, block, 96 * sizeof(int), 1, 2, err,
                                   sizeof err) != 0);
    CHECK(strstr(err, "clusters of 2 blocks over a grid of 3 along x") != NULL);
    const unsigned wide[3] = {1024, 1, 1};
    CHECK(gpuir__emu_engine_launch(e, swap_through_the_peer, params, grid, wide, 0, 1, 4, err, sizeof err) != 0);
    CHECK(strstr(err, "a cluster of 4 blocks of 1024 threads is more than 2048 threads") != NULL);
    memset(out, 0, sizeof out);                         /* the engine runs the next launch */
    CHECK(gpuir__emu_engine_launch(e, swap_through_the_peer, params, grid, block, 96 * sizeof(int), 1, 2, err,
                                   sizeof err) == 0);
    CHECK(out[0] == 1095);
    gpuir__emu_engine_destroy(e);
}

/* Shuffling (GPUIR_EMU_SHUFFLE's seed in the engine): the threads start
   in a random order, not in turn, the same one for the same seed; spins
   and clusters work as in turn, and a spin no thread can end is still a
   deadlock. */
static void note_the_order(gpuir_emu_lane *l, void **p) {
    unsigned *order = (unsigned *)p[0], *next = (unsigned *)p[1];
    order[(*next)++] = l->thread_idx.x;
}

TEST(emulator_shuffling_runs_threads_in_a_seeded_random_order) {
    gpuir__emu_engine *e = gpuir__emu_engine_make(0);
    char err[512] = "";
    const unsigned one[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    unsigned order[2][64], next = 0;
    void *params[2] = {order[0], &next};
    e->shuffle = 12345;
    CHECK(gpuir__emu_engine_launch(e, note_the_order, params, one, block, 0, 1, 1, err, sizeof err) == 0);
    unsigned in_turn = 0;
    for (unsigned i = 0; i < 64; i++) in_turn += order[0][i] == i;
    CHECK(next == 64 && in_turn < 16);                 /* not the queue's order */
    next = 0;
    params[0] = order[1];
    e->shuffle = 12345;
    CHECK(gpuir__emu_engine_launch(e, note_the_order, params, one, block, 0, 1, 1, err, sizeof err) == 0);
    CHECK(memcmp(order[0], order[1], sizeof order[0]) == 0);   /* the same seed, the same order */
    int flag = 0;
    void *spin[1] = {&flag};
    const unsigned grid[3] = {2, 1, 1}, warps[3] = {96, 1, 1};
    for (unsigned seed = 1; seed <= 8; seed++) {
        e->shuffle = seed;
        flag = 0;
        CHECK(gpuir__emu_engine_launch(e, spin_until_the_last_thread, spin, grid, warps, 0, 1, 1, err, sizeof err) == 0);
        int out[4 * 96];
        void *swap[1] = {out};
        const unsigned four[3] = {4, 1, 1};
        CHECK(gpuir__emu_engine_launch(e, swap_through_the_peer, swap, four, warps, 96 * sizeof(int), 1, 2, err,
                                       sizeof err) == 0);
        CHECK(out[0] == 1095 && out[4 * 96 - 1] == 2000);
    }
    CHECK(gpuir__emu_engine_launch(e, spin_forever, spin, grid, warps, 0, 1, 1, err, sizeof err) != 0);
    CHECK(strstr(err, "spin on mbarrier waits") != NULL);
    gpuir__emu_engine_destroy(e);
}

/* Every test above ran with TMPDIR set to a private directory: after the
   emulator's compiles and module loads (and their failures, a compiler that
   fails and one that cannot start included) the directory is empty. */
static char private_tmp[] = "/tmp/gpuir-test-faults-XXXXXX";

TEST(no_temporary_file_is_left_behind) {
    fixture fx;
    fixture_make(&fx, programs[0]);
    const char *compilers[] = {"false", "/nonexistent/cc"};
    for (int i = 0; i < 2; i++) {
        gpuir_module *m = parse_bound(fx.ctx, programs[0]);
        gpuir_program_desc d = {.backend = GPUIR_BACKEND_EMU, .cc = compilers[i]};
        CHECK(gpuir_program_make(m, &d) == NULL);
        CHECK_RESULT(fx.ctx, gpuir_ctx_result(fx.ctx), GPUIR_ERR_COMPILE);
        gpuir_ctx_clear_error(fx.ctx);
        gpuir_module_destroy(m);
    }
    fixture_free(&fx);
    DIR *dir = opendir(private_tmp);
    CHECK(dir != NULL);
    int left = 0;
    for (struct dirent *e; dir && (e = readdir(dir)) != NULL;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            fprintf(stderr, "left behind: %s/%s\n", private_tmp, e->d_name);
            left++;
        }
    if (dir) closedir(dir);
    CHECK(left == 0);
}

/* Run arguments through the table: pinned memory (alloc, register), a
   caller's stream, device buffers, an asynchronous all-device run on the
   stream, a run with host arguments on it, a download, and everything
   released; the first failure's code. The context's device is wrapped
   like a program's when fail_at is set before it is made. */
static const char *const device_program =
    "global @G : tensor<8x8xf32>\n"
    "func.func @f(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {\n"
    "  %g = get_global {name = @G} : () -> tensor<8x8xf32>\n"
    "  %m = matmul %x, %y : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>\n"
    "  %a = add %m, %g : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>\n"
    "  %r = relu %a : (tensor<8x8xf32>) -> tensor<8x8xf32>\n"
    "  return %r : tensor<8x8xf32>\n}\n";

/* @G's data: y's pattern again (uploaded by the first asynchronous run). */
static void bind_g(gpuir_module *m) {
    gpuir_array g;
    int64_t d[] = {8, 8};
    if (!m || gpuir_array_alloc(gpuir_module_ctx(m), &g, GPUIR_F32, 2, d)) return;
    gpuir_array_fill_random(&g, 6);
    gpuir_module_bind_global(m, "G", &g);
    gpuir_array_release(&g);
}

static gpuir_result first_error(gpuir_ctx *ctx, gpuir_result r) { return r ? r : gpuir_ctx_result(ctx); }

static gpuir_result device_flow(gpuir_ctx *ctx, const gpuir_array *want) {
    const gpuir_backend E = GPUIR_BACKEND_EMU;
    int64_t d[] = {8, 8};
    gpuir_array x, y, out;
    gpuir_result r = gpuir_array_alloc_pinned(ctx, E, &x, GPUIR_F32, 2, d);
    gpuir_array_alloc(ctx, &y, GPUIR_F32, 2, d);
    gpuir_array_alloc(ctx, &out, GPUIR_F32, 2, d);
    if (x.data) gpuir_array_fill_random(&x, 5);
    gpuir_array_fill_random(&y, 6);
    if (!r) r = gpuir_host_register(ctx, E, y.data, 8 * 8 * sizeof(float));
    gpuir_stream s = gpuir_stream_make(ctx, E);
    gpuir_buffer_desc bd = {.backend = E, .dtype = GPUIR_F32, .rank = 2};
    bd.dims[0] = bd.dims[1] = 8;
    gpuir_buffer bx = gpuir_buffer_make(ctx, &bd), by = gpuir_buffer_make(ctx, &bd), bo = gpuir_buffer_make(ctx, &bd);
    r = first_error(ctx, r);
    if (!r) r = gpuir_buffer_upload(ctx, bx, &x, s);
    if (!r) r = gpuir_buffer_upload(ctx, by, &y, s);
    gpuir_module *m = gpuir_module_parse(ctx, device_program, strlen(device_program), "device");
    bind_g(m);
    gpuir_program *p = !r && m ? make_emu(m) : NULL;
    r = first_error(ctx, r);
    gpuir_arg in[2] = {gpuir_arg_buffer(bx), gpuir_arg_buffer(by)}, o[1] = {gpuir_arg_buffer(bo)};
    gpuir_run_desc rd = {.inputs = in, .n_inputs = 2, .outputs = o, .n_outputs = 1, .stream = s};
    if (!r) r = gpuir_program_run_args(p, &rd);
    if (!r) r = gpuir_stream_synchronize(ctx, s);
    if (!r) r = gpuir_buffer_download(ctx, bo, &out, s);
    if (!r) r = gpuir_stream_synchronize(ctx, s);
    if (!r) r = gpuir_array_compare(ctx, &out, want, 1e-5, 1e-5);
    in[0] = gpuir_arg_host(x);                  /* host arguments on the stream: waits for it */
    o[0] = gpuir_arg_host(out);
    if (!r) r = gpuir_program_run_args(p, &rd);
    if (!r) r = gpuir_array_compare(ctx, &out, want, 1e-5, 1e-5);
    gpuir_program_destroy(p);
    gpuir_module_destroy(m);
    gpuir_buffer_destroy(ctx, bx);
    gpuir_buffer_destroy(ctx, by);
    gpuir_buffer_destroy(ctx, bo);
    gpuir_stream_destroy(ctx, s);
    if (gpuir_host_is_pinned(ctx, y.data, 4)) {
        gpuir_result u = gpuir_host_unregister(ctx, y.data);
        if (!r) r = u;
    }
    gpuir_array_release_pinned(ctx, &x);
    gpuir_array_release(&y);
    gpuir_array_release(&out);
    return first_error(ctx, r);
}

/* The interpreter's result of device_program on device_flow's inputs. */
static void device_want(gpuir_ctx *ctx, gpuir_array *want) {
    int64_t d[] = {8, 8};
    gpuir_array in[2];
    gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, d);
    gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 2, d);
    gpuir_array_fill_random(&in[0], 5);
    gpuir_array_fill_random(&in[1], 6);
    gpuir_module *m = gpuir_module_parse(ctx, device_program, strlen(device_program), "ref");
    bind_g(m);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 1, want), GPUIR_OK);
    gpuir_module_destroy(m);
    gpuir_array_release(&in[0]);
    gpuir_array_release(&in[1]);
}

/* Every table call of the run-argument flow fails in turn (once, then for
   good): a GPUIR_ERR_CUDA naming the injection, nothing leaks, the same
   context works after; and each new call (pinning, unpinning, streams:
   create, destroy, synchronize, bind, capture status) is among those failed. */
TEST(every_table_call_of_run_arguments_fails_cleanly) {
    static const char *const calls[] = {"cuMemHostAlloc", "cuMemHostRegister", "cuMemHostUnregister", "cuMemFreeHost",
                                        "cuStreamCreate", "cuStreamDestroy", "cuStreamSynchronize",
                                        "cuStreamIsCapturing", "cuStreamWaitEvent", "cuEventSynchronize"};
    bool seen[sizeof calls / sizeof calls[0]] = {false};
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_array want;
    device_want(ctx, &want);
    ctx->fault.fail_at = UINT64_MAX;
    CHECK_RESULT(ctx, device_flow(ctx, &want), GPUIR_OK);
    uint64_t n = ctx->fault.calls;
    CHECK(n > 20);
    gpuir_ctx_destroy(ctx);
    for (int persistent = 0; persistent < 2; persistent++)
        for (uint64_t k = 1; k <= n; k++) {
            ctx = gpuir_ctx_make(NULL);
            ctx->fault.fail_at = k;
            ctx->fault.persistent = persistent;
            gpuir_result r = device_flow(ctx, &want);
            if (ctx->fault.injected && r == GPUIR_OK) {
                /* a cached module's load or kernel lookup failing once:
                   evicted and compiled again, and the cache status says so */
                CHECK(!persistent && strstr(gpuir_ctx_cache_status(ctx), "evicted from the cache and compiled again"));
            } else if (ctx->fault.injected) {
                CHECK_RESULT(ctx, r, GPUIR_ERR_CUDA);
                CHECK(strstr(gpuir_ctx_error(ctx), "injected by the fault test") != NULL);
                for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++)
                    seen[c] = seen[c] || strstr(gpuir_ctx_error(ctx), calls[c]) != NULL;
                if (r != GPUIR_ERR_CUDA) fprintf(stderr, "  k=%llu: %s\n", (unsigned long long)k, gpuir_ctx_error(ctx));
            } else {
                CHECK_RESULT(ctx, r, GPUIR_OK);
            }
            gpuir_ctx_clear_error(ctx);
            ctx->fault.fail_at = 0;
            CHECK_RESULT(ctx, device_flow(ctx, &want), GPUIR_OK);
            gpuir_ctx_destroy(ctx);
        }
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++)
        if (!seen[c]) {
            fprintf(stderr, "  no injected failure named %s\n", calls[c]);
            CHECK(0);
        }
    gpuir_array_release(&want);
}

int main(void) {
    if (!mkdtemp(private_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("TMPDIR", private_tmp, 1);
    RUN(every_table_call_fails_cleanly_once);
    RUN(every_table_call_fails_cleanly_for_good);
    RUN(every_table_call_of_run_arguments_fails_cleanly);
    RUN(a_fatal_error_loses_the_device_context);
    RUN(tensor_map_encoding_through_the_table);
    RUN(device_tables_name_every_operation_and_build_inside);
    RUN(a_failing_tensor_map_encode_fails_the_run_cleanly);
    RUN(emulator_spins_yield_and_a_hopeless_spin_is_a_deadlock);
    RUN(emulator_clusters_share_their_blocks_memory_and_barrier);
    RUN(emulator_shuffling_runs_threads_in_a_seeded_random_order);
    RUN(every_host_allocation_fails_cleanly_once);
    RUN(every_host_allocation_fails_cleanly_for_good);
    RUN(every_host_allocation_of_a_cold_make_fails_cleanly);
    RUN(every_host_allocation_of_the_interpreter_fails_cleanly);
    RUN(a_context_without_memory_is_null);
    RUN(no_temporary_file_is_left_behind);
    rmdir(private_tmp);
    printf("# %llu injection cases, %llu failures injected\n", (unsigned long long)cases_total,
           (unsigned long long)injected_total);
    printf("# %llu host allocation cases, %llu failures injected\n",
           (unsigned long long)host_cases_total, (unsigned long long)host_injected_total);
    return CHECK_EXIT();
}

/* JIT latency: NVRTC's own cache is always off (gpuir's is the one cache,
   and an NVRTC hit made a "cold" compile look like 13 ms); a program's
   make reports its phases and the cache counts the compiler's runs; a
   module, an option or a target that differs from a cached entry's is a
   miss that compiles (never the wrong kernels); a fresh process given a
   warm cache (a copied directory; for CUDA an imported bundle) never runs
   the compiler. */
#define _POSIX_C_SOURCE 200809L
#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const add_text =
    "func.func @f(%x: tensor<64x16xf32>, %b: tensor<16xf32>) -> tensor<64x16xf32> {\n"
    "  %a = add %x, %b : (tensor<64x16xf32>, tensor<16xf32>) -> tensor<64x16xf32>\n"
    "  return %a : tensor<64x16xf32>\n}\n";
/* The same program but for its shape: other kernels. */
static const char *const add_text_wider =
    "func.func @f(%x: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {\n"
    "  %a = add %x, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>\n"
    "  return %a : tensor<64x32xf32>\n}\n";

static gpuir_ctx *ctx_with_cache(const char *dir) {
    gpuir_ctx_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.cache_dir = dir;
    return gpuir_ctx_make(&cd);
}

static gpuir_program *make(gpuir_ctx *ctx, const char *text, gpuir_backend b) {
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "test");
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = b;
    return m ? gpuir_program_make(m, &d) : NULL;
}

/* Runs @f (x: rows x cols, b: cols) on p and compares with the interpreter. */
static void check_runs(gpuir_ctx *ctx, gpuir_program *p, const char *text, int64_t rows, int64_t cols) {
    CHECK(p != NULL);
    if (!p) return;
    gpuir_module *ref = gpuir_module_parse(ctx, text, strlen(text), "ref");
    gpuir_array in[2], want, got;
    int64_t xd[] = {rows, cols}, bd[] = {cols};
    memset(&want, 0, sizeof want);
    memset(&got, 0, sizeof got);
    gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, xd);
    gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 1, bd);
    gpuir_array_fill_random(&in[0], 1);
    gpuir_array_fill_random(&in[1], 2);
    CHECK_RESULT(ctx, gpuir_ref_run(ref, "f", 2, in, 1, &want), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 1, &got), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got, &want, 1e-6, 1e-6), GPUIR_OK);
    for (int i = 0; i < 2; i++) gpuir_array_release(&in[i]);
    gpuir_array_release(&want);
    gpuir_array_release(&got);
    gpuir_module_destroy(ref);
}

static void rm_rf(const char *path) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    CHECK(system(cmd) == 0);
}

static bool has_option(const char **opts, int n, const char *want) {
    for (int i = 0; i < n; i++)
        if (strcmp(opts[i], want) == 0) return true;
    return false;
}

/* NVRTC 12.9+ caches compiles itself, invisibly to gpuir: gpuir turns that
   off in every compile, not only when ptxas is verbose. */
TEST(nvrtc_cache_is_always_off) {
    gpuir__nvrtc n;
    memset(&n, 0, sizeof n);
    const char *extra[1] = {"--fmad=false"};
    int count = 0;
    n.major = 13, n.minor = 0;
    const char **opts = gpuir__nvrtc_options(&n, "--gpu-architecture=sm_90", extra, 1, &count);
    CHECK(opts && has_option(opts, count, "--no-cache") && has_option(opts, count, "--fmad=false"));
    GPUIR_FREE(opts);
    opts = gpuir__nvrtc_options(&n, "--gpu-architecture=sm_90", NULL, 0, &count);
    CHECK(opts && has_option(opts, count, "--no-cache") && has_option(opts, count, "--minimal"));
    GPUIR_FREE(opts);
    n.major = 12, n.minor = 8;                       /* no cache, no option to turn it off */
    opts = gpuir__nvrtc_options(&n, "--gpu-architecture=sm_90", NULL, 0, &count);
    CHECK(opts && !has_option(opts, count, "--no-cache"));
    GPUIR_FREE(opts);
}

/* A cold make compiles once and says where its time went; a warm one (a
   fresh context on the same directory) compiles nothing. */
TEST(a_make_reports_its_phases_and_the_compiles) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx *a = ctx_with_cache(dir);
    gpuir_program *p = make(a, add_text, GPUIR_BACKEND_EMU);
    check_runs(a, p, add_text, 64, 16);
    gpuir_program_stats st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    gpuir_cache_stats cs = gpuir_ctx_cache_stats(a);
    CHECK(cs.compiles == 1 && cs.misses == 1 && cs.writes == 1);
    CHECK(st.compile_ms > 0 && st.lower_ms > 0 && st.codegen_ms > 0 && st.load_ms > 0 && st.cache_ms > 0);
    gpuir_ctx_destroy(a);
    gpuir_ctx *b = ctx_with_cache(dir);
    p = make(b, add_text, GPUIR_BACKEND_EMU);
    check_runs(b, p, add_text, 64, 16);
    st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    cs = gpuir_ctx_cache_stats(b);
    CHECK(cs.compiles == 0 && cs.disk_hits == 1 && cs.misses == 0);
    CHECK(st.compile_ms == 0 && st.cache_ms > 0 && st.load_ms > 0);
    p = make(b, add_text, GPUIR_BACKEND_EMU);        /* the same context again: from memory */
    cs = gpuir_ctx_cache_stats(b);
    CHECK(p && cs.compiles == 0 && cs.mem_hits == 1);
    gpuir_ctx_destroy(b);
    rm_rf(dir);
}

/* What is cached is found only by what produced it: another module, the
   same module under another compiler option (an emulator built with
   sanitizers is another key; checked on the key's parts), another target
   or another gpuir version misses and compiles, and the program it makes
   runs its own kernels. */
TEST(an_entry_that_no_longer_matches_misses) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx *a = ctx_with_cache(dir);
    check_runs(a, make(a, add_text, GPUIR_BACKEND_EMU), add_text, 64, 16);
    gpuir_ctx_destroy(a);
    gpuir_ctx *b = ctx_with_cache(dir);               /* another module: a miss, its own kernels */
    gpuir_program *p = make(b, add_text_wider, GPUIR_BACKEND_EMU);
    check_runs(b, p, add_text_wider, 64, 32);
    gpuir_cache_stats cs = gpuir_ctx_cache_stats(b);
    CHECK(cs.compiles == 1 && cs.disk_hits == 0);
    CHECK(p && strstr(gpuir_program_source(p), "32") != NULL);
    gpuir_ctx_destroy(b);
    /* The key's parts (gpuir__cuda_build, gpuir__emu_build): each one that
       differs gives another key. */
    const char *base[5] = {"cuda", "source", "sm_90", "nvrtc 13.0", GPUIR_VERSION_STRING};
    char k0[65], k1[65];
    gpuir__cache_key(base, 5, k0);
    const char *changed[4][2] = {{"source", "source2"}, {"sm_90", "sm_80"}, {"nvrtc 13.0", "nvrtc 13.1"},
                                 {GPUIR_VERSION_STRING, "0.0.0-other"}};
    for (int c = 0; c < 4; c++) {
        const char *parts[5];
        memcpy(parts, base, sizeof parts);
        for (int i = 0; i < 5; i++)
            if (strcmp(parts[i], changed[c][0]) == 0) parts[i] = changed[c][1];
        gpuir__cache_key(parts, 5, k1);
        CHECK(strcmp(k0, k1) != 0);
    }
    const char *split[4] = {"cuda", "sourc", "esm_90", "nvrtc 13.0"};   /* parts are framed, not concatenated */
    const char *whole[4] = {"cuda", "source", "sm_90", "nvrtc 13.0"};
    gpuir__cache_key(split, 4, k0);
    gpuir__cache_key(whole, 4, k1);
    CHECK(strcmp(k0, k1) != 0);
    rm_rf(dir);
}

/* A fake driver for the primary context: cuDevicePrimaryCtxRetain takes
   a while (as creating a context does), then succeeds or fails; what it
   did is recorded. */
static struct {
    pthread_t main;
    int retain_rc, retains, releases;
    bool on_other_thread, finished;
} fake;

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {}
}

static gpuir__CUresult fake_retain(gpuir__CUcontext *c, gpuir__CUdevice d) {
    (void)d;
    fake.on_other_thread = !pthread_equal(pthread_self(), fake.main);
    sleep_ms(30);
    fake.retains++;
    if (!fake.retain_rc) *c = (gpuir__CUcontext)&fake;
    fake.finished = true;
    return fake.retain_rc;
}
static gpuir__CUresult fake_release(gpuir__CUdevice d) { (void)d; fake.releases++; return 0; }
static gpuir__CUresult fake_push(gpuir__CUcontext c) { return c == (gpuir__CUcontext)&fake ? 0 : 201; }

static gpuir__cudart *fake_cudart(int retain_rc) {
    memset(&fake, 0, sizeof fake);
    fake.main = pthread_self();
    fake.retain_rc = retain_rc;
    gpuir__cudart *C = (gpuir__cudart *)gpuir__calloc(1, sizeof *C);
    if (!C) return NULL;
    C->cu.cuDevicePrimaryCtxRetain = fake_retain;
    C->cu.cuDevicePrimaryCtxRelease = fake_release;
    C->cu.cuCtxPushCurrent = fake_push;
    return C;
}

/* The CUDA context is created on a thread of its own while the caller
   compiles; the first use waits for it; its failure is an error naming the
   call; a make that fails on the compile side while the context is still
   being made leaks nothing (the thread joined, the context released once,
   or not at all when it was never made). No GPU needed: a fake driver. */
TEST(the_context_is_created_while_the_kernels_compile) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir__cudart *C = fake_cudart(0);               /* succeeds: ready waits for it */
    CHECK(C != NULL);
    if (!C) return;
    gpuir__cudart_retain_start(C);                  /* the caller goes on meanwhile */
    CHECK_RESULT(ctx, gpuir__cudart_ready(ctx, C), GPUIR_OK);
    CHECK(fake.finished && fake.on_other_thread && fake.retains == 1 && C->context == (gpuir__CUcontext)&fake);
    CHECK(gpuir__cudart_enter(C) == 0);
    gpuir__cudart_close(C);
    CHECK(fake.releases == 1);

    C = fake_cudart(2);                              /* CUDA_ERROR_OUT_OF_MEMORY */
    gpuir__cudart_retain_start(C);
    CHECK_RESULT(ctx, gpuir__cudart_ready(ctx, C), GPUIR_ERR_CUDA);
    CHECK(strstr(gpuir_ctx_error(ctx), "cuDevicePrimaryCtxRetain") &&
          strstr(gpuir_ctx_error(ctx), "CUDA_ERROR_OUT_OF_MEMORY") &&
          strstr(gpuir_ctx_error(ctx), "opening the device's context"));
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir__cudart_enter(C) == 2);              /* every later use fails the same way */
    gpuir__cudart_close(C);
    CHECK(fake.releases == 0);                       /* never made, never released */

    C = fake_cudart(0);                              /* the compile failed: closed while retaining */
    gpuir__cudart_retain_start(C);
    gpuir__cudart_close(C);
    CHECK(fake.finished && fake.retains == 1 && fake.releases == 1);

    C = fake_cudart(2);                              /* both fail: nothing to release */
    gpuir__cudart_retain_start(C);
    gpuir__cudart_close(C);
    CHECK(fake.finished && fake.releases == 0);
    gpuir_ctx_destroy(ctx);
}

/* The emulator keeps what it dlopen'ed per context: a second make of the
   same program (alive or destroyed) takes the same handle, no dlopen; the
   programs sharing it run, and run on after one of them is destroyed;
   another program's object is opened; another context opens its own. */
TEST(a_second_make_in_a_context_does_not_dlopen_again) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx *ctx = ctx_with_cache(dir);
    gpuir_program *a = make(ctx, add_text, GPUIR_BACKEND_EMU);
    check_runs(ctx, a, add_text, 64, 16);
    gpuir__emu_toolchain *h = ctx->emu_toolchain;
    CHECK(h && h->dlopens == 1);
    if (!h) { gpuir_ctx_destroy(ctx); rm_rf(dir); return; }
    gpuir_program *b = make(ctx, add_text, GPUIR_BACKEND_EMU);       /* while a lives */
    CHECK(h->dlopens == 1);
    gpuir_program_destroy(a);
    check_runs(ctx, b, add_text, 64, 16);                            /* a's going closed nothing */
    gpuir_program_destroy(b);
    gpuir_program *c = make(ctx, add_text, GPUIR_BACKEND_EMU);       /* after both are gone */
    CHECK(h->dlopens == 1);
    check_runs(ctx, c, add_text, 64, 16);
    gpuir_program *w = make(ctx, add_text_wider, GPUIR_BACKEND_EMU); /* other bytes: opened */
    CHECK(h->dlopens == 2 && stbds_arrlenu(h->objects) == 2);
    check_runs(ctx, w, add_text_wider, 64, 32);
    gpuir_ctx_destroy(ctx);
    gpuir_ctx *other = ctx_with_cache(dir);                          /* a context of its own */
    check_runs(other, make(other, add_text, GPUIR_BACKEND_EMU), add_text, 64, 16);
    CHECK(other->emu_toolchain && other->emu_toolchain->dlopens == 1);
    gpuir_ctx_destroy(other);
    rm_rf(dir);
}

/* A fake CUDA device (sm_90) for makes through the CUDA backend with no
   GPU: modules "load" (the image's first bytes are kept, to see what was
   loaded) and every kernel is found; nothing runs. Installed as the
   context's CUDA state, as its first CUDA program would make it. */
static struct { int loads; char first[64]; } fakedev;
static gpuir__CUresult fd_push(gpuir__CUcontext c) { (void)c; return 0; }
static gpuir__CUresult fd_pop(gpuir__CUcontext *c) { *c = NULL; return 0; }
static gpuir__CUresult fd_sync(void) { return 0; }
static gpuir__CUresult fd_load(gpuir__CUmodule *m, const void *image) {
    fakedev.loads++;
    memcpy(fakedev.first, image, sizeof fakedev.first);
    *m = (gpuir__CUmodule)&fakedev;
    return 0;
}
static gpuir__CUresult fd_unload(gpuir__CUmodule m) { return m == (gpuir__CUmodule)&fakedev ? 0 : 400; }
static gpuir__CUresult fd_function(gpuir__CUfunction *f, gpuir__CUmodule m, const char *name) {
    (void)name;
    *f = (gpuir__CUfunction)m;
    return 0;
}

static gpuir_ctx *ctx_with_fake_device(const char *dir) {
    gpuir_ctx *ctx = ctx_with_cache(dir);
    gpuir__cudart *C = (gpuir__cudart *)gpuir__calloc(1, sizeof *C);
    if (!ctx || !C) { GPUIR_FREE(C); return ctx; }
    gpuir__cuda_device d = {0, 0, "fake H100", 9, 0, 90, 132, 1024, {1024, 1024, 64}, {2147483647, 65535, 65535},
                            49152, 232448, 32, 1, (size_t)80 << 30, 13000};
    C->dev = d;
    C->context = (gpuir__CUcontext)&fakedev;
    C->cu.cuCtxPushCurrent = fd_push;
    C->cu.cuCtxPopCurrent = fd_pop;
    C->cu.cuCtxSynchronize = fd_sync;
    C->cu.cuModuleLoadData = fd_load;
    C->cu.cuModuleUnload = fd_unload;
    C->cu.cuModuleGetFunction = fd_function;
    ctx->cuda = C;
    return ctx;
}

/* A CUDA make remembers NVRTC's version in the cache: a later process's
   warm make (a lowered-program hit) loads the cubin without loading NVRTC,
   even where NVRTC cannot be loaded at all; what decides which libnvrtc
   loads ($GPUIR_NVRTC_LIBRARY here) changing makes it ask NVRTC again. */
TEST(a_warm_cuda_make_does_not_load_nvrtc) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx *cold = ctx_with_fake_device(dir);
    gpuir_program *p = make(cold, add_text, GPUIR_BACKEND_CUDA);
    gpuir__cudart *C = cold->cuda;
    if (!p && strstr(gpuir_ctx_error(cold), "NVRTC is unavailable")) {
        gpuir_ctx_destroy(cold);
        rm_rf(dir);
        SKIP("no NVRTC on this machine");
    }
    CHECK(p && C->nv_loaded && gpuir_ctx_cache_stats(cold).compiles == 1 && fakedev.loads == 1);
    CHECK(memcmp(fakedev.first, "\177ELF", 4) == 0);                /* a cubin */
    gpuir_ctx_destroy(cold);
    char *was = getenv("GPUIR_NVRTC_LIBRARY");
    char *saved = was ? strdup(was) : NULL;
    char unloadable[64];
    snprintf(unloadable, sizeof unloadable, "%s/no-libnvrtc.so", dir);
    gpuir_ctx *warm = ctx_with_fake_device(dir);                     /* NVRTC as it was */
    memset(&fakedev, 0, sizeof fakedev);
    p = make(warm, add_text, GPUIR_BACKEND_CUDA);
    gpuir_cache_stats cs = gpuir_ctx_cache_stats(warm);
    CHECK(p && !warm->cuda->nv_loaded && cs.lowered_hits == 1 && cs.compiles == 0 && fakedev.loads == 1);
    CHECK(memcmp(fakedev.first, "\177ELF", 4) == 0);
    char bundle[96];                                                 /* the warm cubin exports (none did) */
    snprintf(bundle, sizeof bundle, "%s/warm.bundle", dir);
    size_t exported = 0;
    CHECK_RESULT(warm, gpuir_ctx_cache_export(warm, bundle, &exported), GPUIR_OK);
    CHECK(exported == 1);
    gpuir_ctx_destroy(warm);
    setenv("GPUIR_NVRTC_LIBRARY", unloadable, 1);                    /* another NVRTC: asked, and absent */
    warm = ctx_with_fake_device(dir);
    CHECK(make(warm, add_text, GPUIR_BACKEND_CUDA) == NULL && strstr(gpuir_ctx_error(warm), "no-libnvrtc.so"));
    gpuir_ctx_destroy(warm);
    if (saved) setenv("GPUIR_NVRTC_LIBRARY", saved, 1);
    else unsetenv("GPUIR_NVRTC_LIBRARY");
    free(saved);
    rm_rf(dir);
}

/* The fake driver (tests/fake/libcuda.c, built by `make` as
   build/fake/libcuda.so): gpuir loads it as it would libcuda; its stats
   say what was called. Its retain sleeps GPUIR_FAKE_RETAIN_MS, then
   returns GPUIR_FAKE_RETAIN_RC. NULL (and a failed CHECK) when absent. */
typedef struct fake_cuda_stats {
    int inits, retains, releases, loads, unloads;
    int retain_off_init_thread;
    double retain_started_ms, retain_ended_ms, first_load_ms;
} fake_cuda_stats;
#define FAKE_LIBCUDA "build/fake/libcuda.so"

static double monotonic_ms(void) {                  /* the fake driver's clock */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static fake_cuda_stats *fake_driver(int retain_ms, int retain_rc) {
    char v[16];
    setenv("GPUIR_CUDA_LIBRARY", FAKE_LIBCUDA, 1);
    snprintf(v, sizeof v, "%d", retain_ms);
    setenv("GPUIR_FAKE_RETAIN_MS", v, 1);
    snprintf(v, sizeof v, "%d", retain_rc);
    setenv("GPUIR_FAKE_RETAIN_RC", v, 1);
    void *lib = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    void *sym = lib ? dlsym(lib, "gpuir_fake_cuda_stats") : NULL;
    CHECK(sym != NULL);                              /* `make` builds it; run from the repository */
    if (!sym) return NULL;
    fake_cuda_stats *(*get)(void);
    memcpy(&get, &sym, sizeof get);
    fake_cuda_stats *s = get();
    memset(s, 0, sizeof *s);
    return s;                                        /* the library stays open: gpuir's dlopen shares it */
}

/* Whether a make through the fake driver failed for want of NVRTC: then
   ctx and the test's cache directory are gone and the fake driver is no
   longer named (the caller SKIPs). */
static bool nvrtc_missing(gpuir_ctx *ctx, const gpuir_program *p, const char *dir) {
    if (p || !strstr(gpuir_ctx_error(ctx), "NVRTC is unavailable")) return false;
    gpuir_ctx_destroy(ctx);
    rm_rf(dir);
    unsetenv("GPUIR_CUDA_LIBRARY");
    return true;
}

/* The TF32 wgmma kernel makes on CUDA like the others (its operands are
   rounded by stage-matmul, its stages filled by bulk tensor copies of f32:
   the producer that went wrong on an H200 on 2026-12-04 is gone): NVRTC
   compiles it for the fake sm_90 device and the module loads. The
   emulator makes it too. Through the fake driver: no GPU needed; SKIP
   where NVRTC is absent. */
TEST(cuda_makes_the_tf32_wgmma_kernel) {
    static const char text[] =
        "func.func @f(%a: tensor<64x32xf32>, %b: tensor<48x32xf32>) -> tensor<64x48xf32> {\n"
        "  %m = matmul %a, %b {transpose_b = true, tf32 = true, wgmma = true} : "
        "(tensor<64x32xf32>, tensor<48x32xf32>) -> tensor<64x48xf32>\n"
        "  return %m : tensor<64x48xf32>\n}\n";
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    fake_cuda_stats *fs = fake_driver(0, 0);
    if (!fs) { rm_rf(dir); return; }
    gpuir_ctx *ctx = ctx_with_cache(dir);
    gpuir_program *p = make(ctx, text, GPUIR_BACKEND_CUDA);
    if (nvrtc_missing(ctx, p, dir)) SKIP("no NVRTC on this machine");
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    CHECK(p && fs->loads == 1);
    const char *src = p ? gpuir_program_source(p) : "";
    CHECK(strstr(src, "m64n128k8.f32.tf32.tf32") && strstr(src, "gpuir_tma_load_2d(sa, GPUIR_TMAP(tma_a), (int)(kt * 32)"));
    gpuir_ctx_destroy(ctx);
    CHECK(fs->releases == fs->retains);
    unsetenv("GPUIR_CUDA_LIBRARY");
    ctx = ctx_with_cache(dir);
    p = make(ctx, text, GPUIR_BACKEND_EMU);
    CHECK(p != NULL);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
    rm_rf(dir);
}

/* AUTO creates the device's context on a thread while it lowers and
   compiles, as CUDA does (the device's start-up, 200-500 ms, overlaps
   NVRTC). When the context comes the program is CUDA's; when it fails the
   program goes to the emulator after all (the module as lowered for the
   device, its CUDA C rendered again for the emulator), runs right and says
   why, and the failed state is gone from the gpuir context (nothing
   released: nothing was made). The lowered entry is not stored under the
   CUDA key: a later make on a device that works lowers and compiles for
   CUDA again. Asked for CUDA, the failure is the make's. Through the fake
   driver: no GPU needed; SKIP where NVRTC is absent. */
TEST(auto_creates_the_context_while_compiling_and_falls_back_when_it_fails) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    fake_cuda_stats *fs = fake_driver(200, 0);
    if (!fs) { rm_rf(dir); return; }
    gpuir_ctx *ctx = ctx_with_cache(dir);
    gpuir_program *p = make(ctx, add_text, GPUIR_BACKEND_AUTO);
    double made_ms = monotonic_ms();
    if (nvrtc_missing(ctx, p, dir)) SKIP("no NVRTC on this machine");
    CHECK(p && gpuir_program_backend(p) == GPUIR_BACKEND_CUDA && !*gpuir_program_why_not_cuda(p));
    CHECK(fs->inits == 1 && fs->retains == 1 && fs->retain_off_init_thread && fs->loads == 1);
    CHECK(fs->first_load_ms >= fs->retain_ended_ms);  /* the load waited for the context */
    /* NVRTC ran while the context was being made: the make did not spend
       a whole compile after the context came (made one after the other, it
       would have) */
    CHECK(p && made_ms - fs->retain_ended_ms < gpuir_program_get_stats(p).compile_ms);
    gpuir_ctx_destroy(ctx);
    CHECK(fs->releases == 1 && fs->unloads == 1);
    rm_rf(dir);

    char dir2[] = "/tmp/gpuir-test-jit-XXXXXX";     /* an empty cache */
    CHECK(mkdtemp(dir2) != NULL);
    fs = fake_driver(50, 2);                         /* CUDA_ERROR_OUT_OF_MEMORY, after the compile */
    ctx = ctx_with_cache(dir2);
    p = make(ctx, add_text, GPUIR_BACKEND_AUTO);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    CHECK(p && gpuir_program_backend(p) == GPUIR_BACKEND_EMU);
    const char *why = p ? gpuir_program_why_not_cuda(p) : "";
    CHECK(strstr(why, "cuDevicePrimaryCtxRetain") && strstr(why, "CUDA_ERROR_OUT_OF_MEMORY"));
    CHECK(fs->retains == 1 && fs->retain_off_init_thread && fs->loads == 0 && ctx->cuda == NULL);
    CHECK(gpuir_ctx_cache_stats(ctx).compiles == 2);  /* NVRTC for the device, then cc */
    CHECK(p && strstr(gpuir_program_source(p), "gpuir emulator prelude") != NULL);
    check_runs(ctx, p, add_text, 64, 16);
    gpuir_ctx_destroy(ctx);
    CHECK(fs->releases == 0);

    fs = fake_driver(0, 0);                          /* the same cache, a device that works */
    ctx = ctx_with_cache(dir2);
    p = make(ctx, add_text, GPUIR_BACKEND_AUTO);
    gpuir_cache_stats cs = gpuir_ctx_cache_stats(ctx);
    CHECK(p && gpuir_program_backend(p) == GPUIR_BACKEND_CUDA && fs->loads == 1);
    CHECK(cs.lowered_hits == 0 && cs.compiles == 1);  /* the fallback stored no CUDA entry */
    gpuir_ctx_destroy(ctx);

    fs = fake_driver(0, 2);                          /* asked for CUDA: the failure is the make's */
    ctx = ctx_with_cache(dir2);
    CHECK(make(ctx, add_text, GPUIR_BACKEND_CUDA) == NULL);
    CHECK(strstr(gpuir_ctx_error(ctx), "cuDevicePrimaryCtxRetain") != NULL);
    gpuir_ctx_destroy(ctx);
    rm_rf(dir2);
    unsetenv("GPUIR_CUDA_LIBRARY");
    unsetenv("GPUIR_FAKE_RETAIN_MS");
    unsetenv("GPUIR_FAKE_RETAIN_RC");
}

/* The bundle half of the next test where no GPU is: on the fake driver
   (makes only, nothing runs), a make for its sm_90 device compiles with
   NVRTC, the export carries the cubin, and a fresh process with an empty
   cache and the bundle lowers the program and loads that cubin, compiling
   nothing (NVRTC is loaded for its version, which the key names: docs/cache.md). */
static void a_bundle_ships_warm_to_the_fake_device(void) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX", bundle[] = "/tmp/gpuir-test-jit-bundle-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    int fd = mkstemp(bundle);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    fake_cuda_stats *fs = fake_driver(0, 0);
    gpuir_ctx *g = fs ? ctx_with_cache(dir) : NULL;
    gpuir_program *p = g ? make(g, add_text, GPUIR_BACKEND_CUDA) : NULL;
    bool no_nvrtc = !p && g && strstr(gpuir_ctx_error(g), "NVRTC is unavailable");
    CHECK(no_nvrtc || (p && fs->loads == 1 && gpuir_ctx_cache_stats(g).compiles == 1));
    size_t count = 0;
    if (p) CHECK_RESULT(g, gpuir_ctx_cache_export(g, bundle, &count), GPUIR_OK);
    CHECK(no_nvrtc || count >= 1);
    gpuir_ctx_destroy(g);
    fflush(NULL);
    pid_t pid = p ? fork() : -1;
    if (pid == 0) {                                  /* a fresh process, an empty cache, the bundle */
        char fresh[] = "/tmp/gpuir-test-jit-XXXXXX";
        gpuir_ctx *c = mkdtemp(fresh) ? ctx_with_cache(fresh) : NULL;
        int bad = !c || gpuir_ctx_cache_import(c, bundle, NULL) != GPUIR_OK;
        memset(fs, 0, sizeof *fs);
        gpuir_program *q = bad ? NULL : make(c, add_text, GPUIR_BACKEND_CUDA);
        if (!q && c) fprintf(stderr, "the deployed make: %s\n", gpuir_ctx_error(c));
        bad |= !q || gpuir_ctx_cache_stats(c).compiles != 0 || fs->loads != 1;
        gpuir_ctx_destroy(c);
        rm_rf(fresh);
        _exit(bad);
    }
    int status = -1;
    if (p) CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unlink(bundle);
    rm_rf(dir);
    unsetenv("GPUIR_CUDA_LIBRARY");
    if (no_nvrtc) SKIP("no NVRTC on this machine");
}

/* Deployment: a fresh process given a warm cache compiles nothing. On the
   emulator the warm cache is a copied directory (emulator modules never
   travel in bundles); on CUDA, an imported bundle (with no GPU, on the
   fake driver: a_bundle_ships_warm_to_the_fake_device). */
TEST(a_fresh_process_with_a_warm_cache_never_compiles) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX", copy[64], cmd[256];
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx *a = ctx_with_cache(dir);
    check_runs(a, make(a, add_text, GPUIR_BACKEND_EMU), add_text, 64, 16);
    gpuir_ctx_destroy(a);
    snprintf(copy, sizeof copy, "%s-copy", dir);
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", dir, copy);
    CHECK(system(cmd) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {                                  /* the deployed process */
        gpuir_ctx *c = ctx_with_cache(copy);
        gpuir_program *p = make(c, add_text, GPUIR_BACKEND_EMU);
        check_runs(c, p, add_text, 64, 16);
        gpuir_cache_stats cs = gpuir_ctx_cache_stats(c);
        int bad = !p || cs.compiles != 0 || cs.disk_hits != 1 || check__failed;
        gpuir_ctx_destroy(c);
        _exit(bad);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    rm_rf(dir);
    rm_rf(copy);
    gpuir_ctx *g = gpuir_ctx_make(NULL);
    char why[256];
    bool cuda = gpuir_cuda_available(g, why, sizeof why);
    if (!cuda) { gpuir_ctx_destroy(g); a_bundle_ships_warm_to_the_fake_device(); return; }
    char bundle[] = "/tmp/gpuir-test-jit-bundle-XXXXXX";
    int fd = mkstemp(bundle);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    check_runs(g, make(g, add_text, GPUIR_BACKEND_CUDA), add_text, 64, 16);
    size_t count = 0;
    CHECK_RESULT(g, gpuir_ctx_cache_export(g, bundle, &count), GPUIR_OK);
    CHECK(count >= 1);
    gpuir_ctx_destroy(g);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {                                  /* a fresh process, an empty cache, the bundle */
        char fresh[] = "/tmp/gpuir-test-jit-XXXXXX";
        gpuir_ctx *c = mkdtemp(fresh) ? ctx_with_cache(fresh) : NULL;
        int bad = !c || gpuir_ctx_cache_import(c, bundle, NULL) != GPUIR_OK;
        gpuir_program *p = bad ? NULL : make(c, add_text, GPUIR_BACKEND_CUDA);
        check_runs(c, p, add_text, 64, 16);
        gpuir_cache_stats cs = gpuir_ctx_cache_stats(c);
        bad |= !p || cs.compiles != 0 || check__failed;
        gpuir_ctx_destroy(c);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", fresh);
        bad |= system(cmd) != 0;
        _exit(bad);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unlink(bundle);
}

/* One make in a fresh context on dir, as a process would: the emulator
   compiled by cc (NULL: the default), cache entries keyed by gpuir version
   `version` (NULL: this one); checks that the program runs right and
   returns the context's compiles (~0 when the make failed). */
static uint64_t compiles_with(const char *dir, const char *cc, const char *version) {
    gpuir_ctx *ctx = ctx_with_cache(dir);
    ctx->test_version = version;
    gpuir_module *m = gpuir_module_parse(ctx, add_text, strlen(add_text), "test");
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_EMU;
    d.cc = cc;
    gpuir_program *p = m ? gpuir_program_make(m, &d) : NULL;
    check_runs(ctx, p, add_text, 64, 16);
    uint64_t compiles = p ? gpuir_ctx_cache_stats(ctx).compiles : ~(uint64_t)0;
    gpuir_ctx_destroy(ctx);
    return compiles;
}

/* The same on the fake CUDA device of compute capability sm (NVRTC keyed
   as version nvrtc_major.nvrtc_minor when nvrtc_major is not 0: the real
   NVRTC, loaded first, says so); the compiles, and the loaded cubin's ELF
   e_flags (its architecture) in *flags. */
static uint64_t cuda_compiles_with(const char *dir, int sm, int nvrtc_major, int nvrtc_minor, uint32_t *flags) {
    gpuir_ctx *ctx = ctx_with_fake_device(dir);
    gpuir__cudart *C = ctx->cuda;
    C->dev.sm = sm, C->dev.cc_major = sm / 10, C->dev.cc_minor = sm % 10;
    if (nvrtc_major && gpuir__nvrtc_load(ctx, &C->nv) == GPUIR_OK) {
        C->nv_loaded = true;
        C->nv.major = nvrtc_major, C->nv.minor = nvrtc_minor;
    }
    memset(&fakedev, 0, sizeof fakedev);
    gpuir_program *p = make(ctx, add_text, GPUIR_BACKEND_CUDA);
    CHECK(p && fakedev.loads == 1 && memcmp(fakedev.first, "\177ELF", 4) == 0);
    memcpy(flags, fakedev.first + 48, 4);
    uint64_t compiles = p ? gpuir_ctx_cache_stats(ctx).compiles : ~(uint64_t)0;
    gpuir_ctx_destroy(ctx);
    return compiles;
}

/* End to end through the cache directory: what a make stored under one
   gpuir version, compiler or target is never loaded under another (the
   make misses, compiles once more, and runs its own kernels); the same
   again hits. The emulator's compiler is another file (a wrapper script of
   cc); CUDA's target is another device, its compiler another NVRTC
   version (a fake device: no GPU needed; SKIP where NVRTC is absent). */
TEST(an_entry_under_another_version_target_or_compiler_misses) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX", cc[96];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cc, sizeof cc, "%s-cc", dir);
    FILE *f = fopen(cc, "w");
    CHECK(f && fputs("#!/bin/sh\nexec cc \"$@\"\n", f) >= 0 && fclose(f) == 0 && chmod(cc, 0700) == 0);
    CHECK(compiles_with(dir, NULL, NULL) == 1);
    CHECK(compiles_with(dir, NULL, NULL) == 0);
    CHECK(compiles_with(dir, NULL, "0.0.0-other") == 1);         /* gpuir version */
    CHECK(compiles_with(dir, cc, NULL) == 1);                    /* the compiler */
    CHECK(compiles_with(dir, cc, NULL) == 0);
    CHECK(compiles_with(dir, NULL, "0.0.0-other") == 0);
    unlink(cc);
    gpuir__nvrtc nv;
    gpuir_ctx *probe = gpuir_ctx_make(NULL);
    bool have_nvrtc = gpuir__nvrtc_load(probe, &nv) == GPUIR_OK;
    if (have_nvrtc) gpuir__nvrtc_unload(&nv);
    gpuir_ctx_destroy(probe);
    if (!have_nvrtc) { rm_rf(dir); SKIP("no NVRTC: the CUDA half needs it"); }
    uint32_t f90 = 0, f80 = 0, again = 0, other = 0;
    CHECK(cuda_compiles_with(dir, 90, 0, 0, &f90) == 1);
    CHECK(cuda_compiles_with(dir, 90, 0, 0, &again) == 0 && again == f90);
    CHECK(cuda_compiles_with(dir, 80, 0, 0, &f80) == 1 && f80 != f90);      /* target */
    CHECK(cuda_compiles_with(dir, 90, 12, 8, &other) == 1 && other == f90);  /* NVRTC version */
    CHECK(cuda_compiles_with(dir, 80, 0, 0, &again) == 0 && again == f80);
    rm_rf(dir);
}

/* One emulator make of add_text in a fresh context on dir, as a process of
   build `build` would (NULL: this one); its lowered hits and compiles. */
static void make_under_build(const char *dir, const char *build, uint64_t *lowered_hits, uint64_t *compiles) {
    gpuir_ctx *ctx = ctx_with_cache(dir);
    ctx->test_build = build;
    gpuir_module *m = gpuir_module_parse(ctx, add_text, strlen(add_text), "test");
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_EMU;
    gpuir_program *p = m ? gpuir_program_make(m, &d) : NULL;
    check_runs(ctx, p, add_text, 64, 16);
    gpuir_cache_stats cs = gpuir_ctx_cache_stats(ctx);
    *lowered_hits = p ? cs.lowered_hits : ~(uint64_t)0;
    *compiles = p ? cs.compiles : ~(uint64_t)0;
    gpuir_ctx_destroy(ctx);
}

/* Another build of the implementation (a developer's rebuild: the same
   version, other codegen) is never served a lowered program this build
   stored: it lowers again, and finds the compiled module by its source
   (no compile, since the code is the same). */
TEST(another_build_lowers_again_and_finds_the_compiled_module) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    uint64_t hits = 0, compiles = 0;
    make_under_build(dir, "build-a", &hits, &compiles);
    CHECK(hits == 0 && compiles == 1);
    make_under_build(dir, "build-a", &hits, &compiles);
    CHECK(hits == 1 && compiles == 0);
    make_under_build(dir, "build-b", &hits, &compiles);
    CHECK(hits == 0 && compiles == 0);
    make_under_build(dir, NULL, &hits, &compiles);             /* GPUIR_BUILD_ID */
    CHECK(hits == 0 && compiles == 0);
    make_under_build(dir, NULL, &hits, &compiles);
    CHECK(hits == 1 && compiles == 0);
    rm_rf(dir);
}

/* Lines in the file at path (0 when it is not there). */
static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    int n = 0;
    for (int c; f && (c = fgetc(f)) != EOF;) n += c == '\n';
    if (f) fclose(f);
    return n;
}

/* A warm make in a new process runs no compiler: the emulator's compiler
   (a binary) is asked for its version once per file, the cache remembers
   the answer; the same file changed (here its modification time) is asked
   again and keys anew (a miss, a compile). A script compiler, whose
   identity does not cover what it runs, is asked in every context. */
TEST(a_warm_make_does_not_ask_the_compiler_its_version) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX", cache[96], src[96], cc[96], log[96], cmd[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(src, sizeof src, "%s/cc.c", dir);
    snprintf(cc, sizeof cc, "%s/logcc", dir);
    snprintf(log, sizeof log, "%s/asked", dir);
    FILE *f = fopen(src, "w");
    CHECK(f && fprintf(f, "#include <stdio.h>\n#include <string.h>\n#include <unistd.h>\n"
                          "int main(int c, char **v) {\n"
                          "    FILE *f = c > 1 && !strcmp(v[1], \"--version\") ? fopen(\"%s\", \"a\") : NULL;\n"
                          "    if (f) fputs(\"asked\\n\", f), fclose(f);\n"
                          "    v[0] = \"cc\";\n    execvp(\"cc\", v);\n    return 127;\n}\n", log) > 0);
    if (f) fclose(f);
    snprintf(cmd, sizeof cmd, "cc -o '%s' '%s'", cc, src);
    CHECK(system(cmd) == 0);
    CHECK(compiles_with(cache, cc, NULL) == 1 && count_lines(log) == 1);
    CHECK(compiles_with(cache, cc, NULL) == 0 && count_lines(log) == 1);     /* remembered */
    CHECK(compiles_with(cache, cc, NULL) == 0 && count_lines(log) == 1);
    struct timespec later[2] = {{0, UTIME_OMIT}, {12345, 0}};
    CHECK(utimensat(AT_FDCWD, cc, later, 0) == 0);                           /* the file changed */
    CHECK(compiles_with(cache, cc, NULL) == 1 && count_lines(log) == 2);
    CHECK(compiles_with(cache, cc, NULL) == 0 && count_lines(log) == 2);
    f = fopen(cc, "w");                                                      /* a script: every context */
    CHECK(f && fprintf(f, "#!/bin/sh\n[ \"$1\" = --version ] && echo asked >> '%s'\nexec cc \"$@\"\n", log) > 0);
    if (f) fclose(f);
    CHECK(compiles_with(cache, cc, NULL) == 1 && count_lines(log) == 3);
    CHECK(compiles_with(cache, cc, NULL) == 0 && count_lines(log) == 4);
    rm_rf(dir);
}

/* SHA-256, which every warm hit runs over its entry (the key, the
   checksum), against the FIPS 180-2 examples: one block, two blocks, and
   a million bytes fed in pieces. */
TEST(sha256_matches_the_standard_examples) {
    static const char *const want[3] = {
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"};
    unsigned char d[32];
    char hex[65];
    gpuir__cache_sha256_buf("abc", 3, d);
    gpuir__cache_hex(d, hex);
    CHECK(strcmp(hex, want[0]) == 0);
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    gpuir__cache_sha256_buf(two, strlen(two), d);
    gpuir__cache_hex(d, hex);
    CHECK(strcmp(hex, want[1]) == 0);
    static char as[1001];                            /* fed 999 and 1001 bytes at a time */
    memset(as, 'a', sizeof as);
    gpuir__cache_sha256 s;
    gpuir__cache_sha256_init(&s);
    for (int i = 0; i < 1000; i++) gpuir__cache_sha256_update(&s, as, i % 2 ? 999 : 1001);
    gpuir__cache_sha256_final(&s, d);
    gpuir__cache_hex(d, hex);
    CHECK(strcmp(hex, want[2]) == 0);
    /* With the CPU's SHA instructions (when it has them) and without: the
       same digests, for every length around the block boundaries. */
    static unsigned char bytes[300];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 131u + 7u);
    gpuir__cache_sha256 probe;
    gpuir__cache_sha256_init(&probe);
    if (!probe.ni) printf("# this CPU has no SHA extensions: the portable rounds only\n");
    int differ = 0;
    for (size_t n = 0; n <= sizeof bytes; n++) {
        unsigned char a[32], b[32];
        gpuir__cache_sha256 x, y;
        gpuir__cache_sha256_init(&x);
        gpuir__cache_sha256_init(&y);
        y.ni = false;
        gpuir__cache_sha256_update(&x, bytes, n / 3);
        gpuir__cache_sha256_update(&x, bytes + n / 3, n - n / 3);
        gpuir__cache_sha256_update(&y, bytes, n);
        gpuir__cache_sha256_final(&x, a);
        gpuir__cache_sha256_final(&y, b);
        differ += memcmp(a, b, 32) != 0;
    }
    CHECK(differ == 0);
}

/* The path of dir's only entry ending in `suffix` (false when not exactly one). */
static bool entry_path(const char *dir, const char *suffix, char *out, size_t size) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c '%s$' | grep -qx 1 && ls -d '%s'/*%s", dir, suffix, dir, suffix);
    FILE *f = popen(cmd, "r");
    if (!f) return false;
    bool ok = fgets(out, (int)size, f) != NULL;
    pclose(f);
    if (ok) out[strcspn(out, "\n")] = '\0';
    return ok && *out;
}

/* text without its C comments (malloc'd). */
static char *without_comments(const char *text) {
    char *out = (char *)calloc(1, strlen(text) + 1), *o = out;
    for (const char *c = text; out && *c;) {
        const char *end = strncmp(c, "/*", 2) == 0 ? strstr(c + 2, "*/") : NULL;
        if (end) c = end + 2;
        else *o++ = *c++;
    }
    return out;
}

/* A warm make in a fresh context takes the lowered program from the cache:
   no passes, no codegen, no compile, the same results (and the source
   rendered when asked: the same but for its comments, which number the
   ops and lines of the module they came from); the same make again in that context comes from
   memory. */
TEST(a_warm_make_skips_the_passes_and_codegen) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx *a = ctx_with_cache(dir);
    gpuir_program *p = make(a, add_text, GPUIR_BACKEND_EMU);
    check_runs(a, p, add_text, 64, 16);
    gpuir_cache_stats cs = gpuir_ctx_cache_stats(a);
    CHECK(cs.lowered_hits == 0 && cs.compiles == 1);
    char *cold_source = p ? without_comments(gpuir_program_source(p)) : NULL;
    gpuir_ctx_destroy(a);
    char path[600];
    CHECK(entry_path(dir, ".lowered", path, sizeof path));
    gpuir_ctx *b = ctx_with_cache(dir);
    gpuir_module *m = gpuir_module_parse(b, add_text, strlen(add_text), "test");
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_EMU;
    p = m ? gpuir_program_make(m, &d) : NULL;
    gpuir_program_stats st = p ? gpuir_program_get_stats(p) : (gpuir_program_stats){0};
    cs = gpuir_ctx_cache_stats(b);
    CHECK(cs.lowered_hits == 1 && cs.compiles == 0 && cs.disk_hits == 1 && cs.misses == 0 && cs.corrupt == 0);
    CHECK(st.lower_ms == 0 && st.codegen_ms == 0 && st.compile_ms == 0 && st.cache_ms > 0 && st.load_ms > 0);
    CHECK(m && gpuir_module_func_count(m) > 1);          /* the module is the lowered one: kernels outlined */
    CHECK(m && *gpuir_module_placement_report(m));        /* kept with it */
    check_runs(b, p, add_text, 64, 16);
    char *warm_source = p ? without_comments(gpuir_program_source(p)) : NULL;
    CHECK(cold_source && warm_source && strlen(warm_source) > 1000 && strcmp(warm_source, cold_source) == 0);
    free(warm_source);
    p = make(b, add_text, GPUIR_BACKEND_EMU);
    cs = gpuir_ctx_cache_stats(b);
    CHECK(p && cs.lowered_hits == 2 && cs.compiles == 0 && cs.mem_hits == 1);
    check_runs(b, p, add_text, 64, 16);
    CHECK(strcmp(gpuir_ctx_cache_status(b), "ok") == 0);
    free(cold_source);
    gpuir_ctx_destroy(b);
    rm_rf(dir);
}

/* Makes add_text in a fresh context on dir with the given changes; returns
   the context's lowered-program hits (and checks the program runs right). */
static uint64_t lowered_hits_with(const char *dir, const char *text, gpuir_target target, bool synchronous,
                                  uint32_t max_shared, const char *version) {
    gpuir_ctx_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.cache_dir = dir;
    cd.max_shared_bytes = max_shared;
    gpuir_ctx *ctx = gpuir_ctx_make(&cd);
    ctx->test_version = version;
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "test");
    if (m && target.sm) gpuir_module_set_target(m, target);
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_EMU;
    d.synchronous = synchronous;
    gpuir_program *p = m ? gpuir_program_make(m, &d) : NULL;
    check_runs(ctx, p, text, 64, text == add_text ? 16 : 32);
    uint64_t hits = gpuir_ctx_cache_stats(ctx).lowered_hits;
    gpuir_ctx_destroy(ctx);
    return hits;
}

/* A stored lowered program is found only by everything that produced it:
   the module's text, an option (synchronous, the shared-memory limit), the
   target (sm, SM count) or the gpuir version that differs misses (and the
   program lowered again runs right); the same again hits. */
TEST(a_lowered_program_that_no_longer_matches_misses) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    gpuir_target none = {0, 0}, sm80 = {80, 132}, sm80_few = {80, 16};
    CHECK(lowered_hits_with(dir, add_text, none, false, 0, NULL) == 0);
    CHECK(lowered_hits_with(dir, add_text, none, false, 0, NULL) == 1);
    CHECK(lowered_hits_with(dir, add_text_wider, none, false, 0, NULL) == 0);    /* module text */
    CHECK(lowered_hits_with(dir, add_text, none, true, 0, NULL) == 0);           /* options */
    CHECK(lowered_hits_with(dir, add_text, none, false, 40000, NULL) == 0);
    CHECK(lowered_hits_with(dir, add_text, sm80, false, 0, NULL) == 0);          /* target */
    CHECK(lowered_hits_with(dir, add_text, sm80_few, false, 0, NULL) == 0);      /* SM count */
    CHECK(lowered_hits_with(dir, add_text, none, false, 0, "0.0.0-other") == 0); /* gpuir version */
    CHECK(lowered_hits_with(dir, add_text, sm80_few, false, 0, NULL) == 1);
    CHECK(lowered_hits_with(dir, add_text, none, false, 0, "0.0.0-other") == 1);
    rm_rf(dir);
}

/* Rewrites the lowered entry at path: payload byte `at` (from the end when
   negative) becomes `byte`, the header left as it was (its digest and tag
   then fail). */
static void flip_byte(const char *path, long at, int byte) {
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fseek(f, at, at < 0 ? SEEK_END : SEEK_SET) == 0);
    fputc(byte, f);
    fclose(f);
}

/* Makes add_text in a fresh context on dir: true when the program runs
   right, with *hits its lowered-program hits, *corrupt the refusals. */
static void make_fresh(const char *dir, uint64_t *hits, uint64_t *corrupt, char *status, size_t size) {
    gpuir_ctx *ctx = ctx_with_cache(dir);
    gpuir_program *p = make(ctx, add_text, GPUIR_BACKEND_EMU);
    check_runs(ctx, p, add_text, 64, 16);
    gpuir_cache_stats cs = gpuir_ctx_cache_stats(ctx);
    *hits = cs.lowered_hits, *corrupt = cs.corrupt;
    snprintf(status, size, "%s", gpuir_ctx_cache_status(ctx));
    gpuir_ctx_destroy(ctx);
}

/* Stores `payload` as the lowered entry for add_text (a real key, a real
   tag: what gpuir itself would have written, were it wrong). */
static void store_lowered(const char *dir, const char *key, const char *payload, size_t size) {
    gpuir_ctx *ctx = ctx_with_cache(dir);
    gpuir__cache *c = gpuir__ctx_cache(ctx);
    CHECK(c && gpuir__cache_put(c, key, GPUIR__LOWERED_EXT, payload, size) == GPUIR_OK);
    gpuir_ctx_destroy(ctx);
}

/* The stored lowered program for add_text, read back (malloc'd; its size
   in *size: it ends with the compiled module's bytes). */
static char *load_lowered(const char *dir, char key[65], size_t *out_size) {
    gpuir_ctx *ctx = ctx_with_cache(dir);
    gpuir_module *m = gpuir_module_parse(ctx, add_text, strlen(add_text), "test");
    gpuir_program dummy;
    memset(&dummy, 0, sizeof dummy);
    dummy.ctx = ctx, dummy.m = m, dummy.backend = GPUIR_BACKEND_EMU;
    dummy.drv.compiler_id = gpuir__emu_compiler_id;     /* the emulator's table names its compiler */
    gpuir__lowered L;
    memset(&L, 0, sizeof L);
    char *out = NULL;
    const void *bytes;
    size_t size;
    if (m && gpuir__lowered_key(&dummy, &L) == GPUIR_OK &&
        gpuir__cache_get(gpuir__ctx_cache(ctx), L.key, GPUIR__LOWERED_EXT, &bytes, &size)) {
        out = (char *)calloc(1, size + 1);
        memcpy(out, bytes, size);
        memcpy(key, L.key, 65);
        *out_size = size;
    }
    stbds_arrfree(L.sources);                            /* the key's input locations */
    gpuir_ctx_destroy(ctx);
    return out;
}

/* A warm make (a lowered program from the cache, whose text holds no
   source locations) keeps each op's line from the entry's locations: a
   run's error names the line of the op, as the cold make's does. */
TEST(a_warm_program_names_its_ops_lines) {
    static const char text[] =
        "func.func @f(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {\n"
        "  %a = add %x, %y : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>\n"
        "  return %a : tensor<?x8xf32>\n}\n";
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    for (uint64_t warm = 0; warm < 2; warm++) {
        gpuir_ctx *ctx = ctx_with_cache(dir);
        gpuir_program *p = make(ctx, text, GPUIR_BACKEND_EMU);
        CHECK(p && gpuir_ctx_cache_stats(ctx).lowered_hits == warm);
        gpuir_array in[2], out[1];
        int64_t dx[] = {5, 8}, dy[] = {3, 8};
        gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, dx);
        gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 2, dy);
        CHECK(p && gpuir_program_run(p, "f", 2, in, 1, out) == GPUIR_ERR_SHAPE);
        CHECK(strstr(gpuir_ctx_error(ctx), "test:2:3: error: launching @f_k0: dynamic sizes disagree: add: "
                                           "dim 0 of %arg1 (%y) is 3, dim 0 of its result is 5") != NULL);
        gpuir_array_release(&in[0]);
        gpuir_array_release(&in[1]);
        gpuir_ctx_destroy(ctx);
    }
    rm_rf(dir);
}

/* A stored lowered program that is damaged or forged (digest and tag fail),
   whose module does not parse, whose kernels or source locations do not
   match its module, or that names another backend's module is refused: never loaded, counted,
   evicted, said in gpuir_ctx_cache_status, and the program is lowered again
   and runs right; the next make hits again. One whose compiled module (its
   copy in the entry) fails to load is evicted with it and compiled again. */
TEST(a_bad_lowered_program_is_refused_and_rebuilt) {
    char dir[] = "/tmp/gpuir-test-jit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    uint64_t hits, corrupt;
    char status[1024], path[600], key[65];
    make_fresh(dir, &hits, &corrupt, status, sizeof status);
    CHECK(entry_path(dir, ".lowered", path, sizeof path));
    flip_byte(path, -3, 'X');                          /* damaged or forged: the tag fails */
    make_fresh(dir, &hits, &corrupt, status, sizeof status);
    CHECK(hits == 0 && corrupt == 1 && strstr(status, ".lowered") && strstr(status, "deleted"));
    make_fresh(dir, &hits, &corrupt, status, sizeof status);
    CHECK(hits == 1 && corrupt == 0);
    size_t good_size = 0;
    char *good = load_lowered(dir, key, &good_size);
    CHECK(good != NULL);
    if (!good) { rm_rf(dir); return; }
    /* Authentic (tagged here) but wrong: each is refused and rebuilt. */
    static const char *const edits[7][3] = {
        {"func.func", "func.fXnc", "does not parse"},               /* its module does not parse */
        {" gpuir_k", " gpuirXk", "do not match"},                   /* a kernel's C name is not its module's */
        {"object so ", "object ab ", "another backend's kind"},     /* another backend's module */
        {"\nkernels 1\n", "\nkernels 2\n", "malformed"},           /* a kernel line missing: malformed */
        {"\nimage ", "\nimagX ", "malformed"},                      /* its compiled module's bytes unnamed */
        {"\nlocations ", "\nlocatioXs ", "locations are malformed"},   /* its ops' source lines unnamed */
        {"\nlocations ", "\nlocations 0", "do not match its ops"},    /* a count (first digit 0) not its ops' */
    };
    for (int k = 0; k < 7; k++) {
        char *bad = (char *)malloc(good_size + 1), *at;
        CHECK(bad != NULL);
        if (!bad) continue;
        memcpy(bad, good, good_size + 1);
        at = strstr(bad, edits[k][0]);                              /* in the text, before the bytes */
        CHECK(at != NULL);
        if (!at) { free(bad); continue; }
        memcpy(at, edits[k][1], strlen(edits[k][1]));
        store_lowered(dir, key, bad, good_size);
        make_fresh(dir, &hits, &corrupt, status, sizeof status);
        CHECK(hits == 0 && corrupt == 1);
        CHECK(strstr(status, "lowered program") && strstr(status, "refused") && strstr(status, "lowered again") &&
              strstr(status, edits[k][2]));
        make_fresh(dir, &hits, &corrupt, status, sizeof status);     /* rebuilt and stored again */
        CHECK(hits == 1 && corrupt == 0);
        free(bad);
    }
    /* Authentic and sound, but its compiled module (the entry's copy) does
       not load: compiled again, and the entry evicted with the module. */
    char *bad = (char *)malloc(good_size + 1), *image = NULL, *end = NULL;
    if (bad) memcpy(bad, good, good_size + 1);
    image = bad ? strstr(bad, "\nimage ") : NULL;
    size_t n = image ? strtoul(image + 7, &end, 10) : 0;
    CHECK(image && end && *end == '\n' && n > 0 && (size_t)(end + 1 - bad) + n == good_size);
    if (image && end) memset(end + 1, 'X', n);
    if (bad) store_lowered(dir, key, bad, good_size);
    make_fresh(dir, &hits, &corrupt, status, sizeof status);
    CHECK(hits == 1 && corrupt == 0 && strstr(status, "failed to load") && strstr(status, "compiled again"));
    CHECK(!entry_path(dir, ".lowered", path, sizeof path));        /* evicted: lowered again next */
    make_fresh(dir, &hits, &corrupt, status, sizeof status);
    CHECK(hits == 0 && corrupt == 0);
    make_fresh(dir, &hits, &corrupt, status, sizeof status);
    CHECK(hits == 1 && corrupt == 0);
    free(bad);
    free(good);
    rm_rf(dir);
}

int main(void) {
    RUN(sha256_matches_the_standard_examples);
    RUN(nvrtc_cache_is_always_off);
    RUN(a_make_reports_its_phases_and_the_compiles);
    RUN(an_entry_that_no_longer_matches_misses);
    RUN(a_warm_make_skips_the_passes_and_codegen);
    RUN(a_lowered_program_that_no_longer_matches_misses);
    RUN(a_bad_lowered_program_is_refused_and_rebuilt);
    RUN(a_warm_program_names_its_ops_lines);
    RUN(the_context_is_created_while_the_kernels_compile);
    RUN(a_fresh_process_with_a_warm_cache_never_compiles);
    RUN(a_second_make_in_a_context_does_not_dlopen_again);
    RUN(a_warm_cuda_make_does_not_load_nvrtc);
    RUN(auto_creates_the_context_while_compiling_and_falls_back_when_it_fails);
    RUN(cuda_makes_the_tf32_wgmma_kernel);
    RUN(an_entry_under_another_version_target_or_compiler_misses);
    RUN(another_build_lowers_again_and_finds_the_compiled_module);
    RUN(a_warm_make_does_not_ask_the_compiler_its_version);
    return CHECK_EXIT();
}

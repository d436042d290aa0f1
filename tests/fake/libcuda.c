/* A fake CUDA driver for tests on machines with no GPU, loaded by gpuir
   through GPUIR_CUDA_LIBRARY=build/fake/libcuda.so (`make` builds it). One
   device, "gpuir fake sm_90" (132 multiprocessors, 80 GiB); cuInit and the
   device queries succeed at once. cuDevicePrimaryCtxRetain, which creates a
   context (the device's start-up, 200-500 ms on an H100 host), sleeps
   $GPUIR_FAKE_RETAIN_MS (default 100) and returns $GPUIR_FAKE_RETAIN_RC
   (default 0, CUDA_SUCCESS). Modules "load" and their kernels are found;
   nothing runs: every other entry point answers CUDA_ERROR_NOT_SUPPORTED.
   gpuir_fake_cuda_stats() tells a test what happened (dlsym it from the
   same library: dlopen of the same path gives the same copy). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct gpuir_fake_cuda_stats_t {
    int inits, retains, releases, loads, unloads;
    int retain_off_init_thread;   /* the retain ran on another thread than cuInit */
    double retain_started_ms, retain_ended_ms, first_load_ms;   /* CLOCK_MONOTONIC */
} gpuir_fake_cuda_stats_t;

static gpuir_fake_cuda_stats_t stats;
static pthread_t init_thread;
static int ctx_token, module_token;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static long env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : fallback;
}

gpuir_fake_cuda_stats_t *gpuir_fake_cuda_stats(void) { return &stats; }

int cuGetErrorName(int rc, const char **s) {
    *s = rc == 0 ? "CUDA_SUCCESS" : rc == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : rc == 801 ? "CUDA_ERROR_NOT_SUPPORTED"
                                                                                   : "CUDA_ERROR_UNKNOWN";
    return 0;
}
int cuGetErrorString(int rc, const char **s) {
    *s = rc == 0 ? "no error" : rc == 2 ? "out of memory" : rc == 801 ? "operation not supported (fake driver)"
                                                                      : "unknown error";
    return 0;
}

static int fake_driver_version(int *v) { *v = 12080; return 0; }
static int fake_init(unsigned flags) { (void)flags; stats.inits++; init_thread = pthread_self(); return 0; }
static int fake_device_count(int *n) { *n = 1; return 0; }
static int fake_device_get(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
static int fake_device_name(char *name, int len, int d) { (void)d; snprintf(name, (size_t)len, "gpuir fake sm_90"); return 0; }
static int fake_total_mem(size_t *bytes, int d) { (void)d; *bytes = (size_t)80 << 30; return 0; }
static int fake_attribute(int *v, int attrib, int d) {
    (void)d;
    switch (attrib) {
    case 1: case 2: *v = 1024; break;              /* threads per block, block x */
    case 3: *v = 1024; break;
    case 4: *v = 64; break;
    case 5: *v = 2147483647; break;
    case 6: case 7: *v = 65535; break;
    case 8: *v = 49152; break;                     /* shared memory per block */
    case 10: *v = 32; break;
    case 16: *v = 132; break;
    case 75: *v = 9; break;                        /* compute capability 9.0 */
    case 76: *v = 0; break;
    case 97: *v = 232448; break;                   /* shared memory per block, opt-in */
    case 115: *v = 1; break;
    default: *v = 0; break;
    }
    return 0;
}
static int fake_retain(void **ctx, int d) {
    (void)d;
    stats.retain_started_ms = now_ms();
    stats.retain_off_init_thread = !pthread_equal(pthread_self(), init_thread);
    long ms = env_long("GPUIR_FAKE_RETAIN_MS", 100);
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {}
    int rc = (int)env_long("GPUIR_FAKE_RETAIN_RC", 0);
    stats.retains++;
    if (rc == 0) *ctx = &ctx_token;
    stats.retain_ended_ms = now_ms();
    return rc;
}
static int fake_release(int d) { (void)d; stats.releases++; return 0; }
static int fake_push(void *c) { return c == &ctx_token ? 0 : 201; }
static int fake_pop(void **c) { *c = &ctx_token; return 0; }
static int fake_ok(void) { return 0; }
static int fake_load(void **m, const void *image) {
    (void)image;
    if (!stats.loads++) stats.first_load_ms = now_ms();
    *m = &module_token;
    return 0;
}
static int fake_unload(void *m) { (void)m; stats.unloads++; return 0; }
static int fake_function(void **f, void *m, const char *name) { (void)name; *f = m; return 0; }
static int fake_func_attribute(int *v, int attrib, void *f) { (void)f; *v = attrib == 0 ? 1024 : 0; return 0; }
static int fake_handle(void **h) { static int token; *h = &token; return 0; }
static int fake_unsupported(void) { return 801; }

typedef void (*fake_fn)(void);   /* the generic function type: cast back at the call */
static const struct { const char *name; fake_fn fn; } procs[] = {
    {"cuDriverGetVersion", (fake_fn)fake_driver_version}, {"cuInit", (fake_fn)fake_init},
    {"cuDeviceGetCount", (fake_fn)fake_device_count}, {"cuDeviceGet", (fake_fn)fake_device_get},
    {"cuDeviceGetName", (fake_fn)fake_device_name}, {"cuDeviceTotalMem", (fake_fn)fake_total_mem},
    {"cuDeviceGetAttribute", (fake_fn)fake_attribute}, {"cuDevicePrimaryCtxRetain", (fake_fn)fake_retain},
    {"cuDevicePrimaryCtxRelease", (fake_fn)fake_release}, {"cuCtxPushCurrent", (fake_fn)fake_push},
    {"cuCtxPopCurrent", (fake_fn)fake_pop}, {"cuCtxSynchronize", (fake_fn)fake_ok},
    {"cuModuleLoadData", (fake_fn)fake_load}, {"cuModuleUnload", (fake_fn)fake_unload},
    {"cuModuleGetFunction", (fake_fn)fake_function}, {"cuFuncGetAttribute", (fake_fn)fake_func_attribute},
    {"cuFuncSetAttribute", (fake_fn)fake_ok}, {"cuStreamCreate", (fake_fn)fake_handle}, {"cuStreamDestroy", (fake_fn)fake_ok},
    {"cuEventCreate", (fake_fn)fake_handle}, {"cuEventDestroy", (fake_fn)fake_ok},
};

/* Every entry point by name; the ones not above fail when called (called
   through a pointer of another type: the fake relies on the x86-64 and
   AArch64 calling conventions, where a caller's extra arguments are ignored). */
int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status) {
    (void)version, (void)flags;
    fake_fn fn = (fake_fn)fake_unsupported;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
        if (strcmp(procs[i].name, symbol) == 0) fn = procs[i].fn;
    memcpy(pfn, &fn, sizeof fn);
    if (status) *status = 0;
    return 0;
}

/* A host application that keeps its data on the device: the weights of a
   recurrent layer, s' = tanh(s · W + b), uploaded once; the state s in two
   device buffers, one of them memory the application allocated itself and
   lends to gpuir; 64 steps on the application's own stream, each reading
   one buffer and writing the other, with nothing copied in or out; the
   state read back once at the end and checked against the interpreter.
   Runs on a GPU when there is one, else on the emulator (`make` builds
   it; docs/device-buffers.md explains it). */
#define _POSIX_C_SOURCE 200809L
#define GPUIR_IMPLEMENTATION
#include "../gpuir.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

enum { BATCH = 8, WIDTH = 64, STEPS = 64 };

static const char *const layer =
    "func.func @step(%s: tensor<8x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {\n"
    "  %m = matmul %s, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>\n"
    "  %a = add %m, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>\n"
    "  %t = tanh %a : (tensor<8x64xf32>) -> tensor<8x64xf32>\n"
    "  return %t : tensor<8x64xf32>\n}\n";

/* Device memory the application allocates itself: cuMemAlloc in the
   device's primary context (the one gpuir uses), or on the emulator,
   whose device memory is host memory, plain aligned memory. */
typedef struct my_cuda {
    void *lib;
    int (*get)(int *, int);
    int (*retain)(void **, int);
    int (*release)(int);
    int (*push)(void *);
    int (*pop)(void **);
    int (*alloc)(unsigned long long *, size_t);
    int (*free)(unsigned long long);
} my_cuda;

static int sym(void *lib, const char *name, void *fn, size_t size) {
    void *p = dlsym(lib, name);
    if (p) memcpy(fn, &p, size);          /* POSIX: function and object pointers agree */
    return p != NULL;
}

static int my_cuda_load(my_cuda *cu) {
    memset(cu, 0, sizeof *cu);
    cu->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return cu->lib && sym(cu->lib, "cuDeviceGet", &cu->get, sizeof cu->get) &&
           sym(cu->lib, "cuDevicePrimaryCtxRetain", &cu->retain, sizeof cu->retain) &&
           sym(cu->lib, "cuDevicePrimaryCtxRelease_v2", &cu->release, sizeof cu->release) &&
           sym(cu->lib, "cuCtxPushCurrent_v2", &cu->push, sizeof cu->push) &&
           sym(cu->lib, "cuCtxPopCurrent_v2", &cu->pop, sizeof cu->pop) &&
           sym(cu->lib, "cuMemAlloc_v2", &cu->alloc, sizeof cu->alloc) &&
           sym(cu->lib, "cuMemFree_v2", &cu->free, sizeof cu->free);
}

static uint64_t my_device_alloc(gpuir_backend backend, size_t bytes, my_cuda *cu) {
    void *host = NULL;
    if (backend == GPUIR_BACKEND_EMU) return posix_memalign(&host, 256, bytes) ? 0 : (uint64_t)(uintptr_t)host;
    int dev = 0;
    void *ctx = NULL;
    unsigned long long ptr = 0;
    if (!my_cuda_load(cu) || cu->get(&dev, 0) || cu->retain(&ctx, dev)) return 0;
    if (cu->push(ctx) || cu->alloc(&ptr, bytes)) ptr = 0;
    cu->pop(&ctx);
    return ptr;
}

static void my_device_free(gpuir_backend backend, uint64_t ptr, my_cuda *cu) {
    if (backend == GPUIR_BACKEND_EMU) { free((void *)(uintptr_t)ptr); return; }
    int dev = 0;
    void *ctx = NULL;
    if (cu->lib && !cu->get(&dev, 0) && !cu->retain(&ctx, dev)) {
        if (!cu->push(ctx)) {
            cu->free(ptr);
            cu->pop(&ctx);
        }
        cu->release(dev);        /* this function's retain */
        cu->release(dev);        /* my_device_alloc's */
    }
    if (cu->lib) dlclose(cu->lib);
}

static gpuir_buffer buffer(gpuir_ctx *ctx, gpuir_backend backend, int rank, int64_t d0, int64_t d1, uint64_t mine) {
    gpuir_buffer_desc d = {0};
    d.backend = backend;
    d.dtype = GPUIR_F32;
    d.rank = rank;
    d.dims[0] = d0;
    d.dims[1] = d1;
    d.device_ptr = mine;           /* 0: gpuir allocates; else the application's memory */
    return gpuir_buffer_make(ctx, &d);
}

int main(void) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_parse(ctx, layer, strlen(layer), "layer");
    gpuir_program *p = gpuir_program_make(m, NULL);           /* CUDA if usable, else the emulator */
    if (!p) {
        fprintf(stderr, "make failed: %s\n", gpuir_ctx_error(ctx));
        gpuir_ctx_destroy(ctx);
        return 1;
    }
    gpuir_backend be = gpuir_program_backend(p);
    printf("backend: %s\n", gpuir_backend_name(be));

    /* Host data, once: state, weights (scaled to keep tanh off its rails), bias. */
    int64_t sd[] = {BATCH, WIDTH}, wd[] = {WIDTH, WIDTH}, bd[] = {WIDTH};
    gpuir_array s0, w, b, got;
    gpuir_array_alloc(ctx, &s0, GPUIR_F32, 2, sd);
    gpuir_array_alloc(ctx, &w, GPUIR_F32, 2, wd);
    gpuir_array_alloc(ctx, &b, GPUIR_F32, 1, bd);
    gpuir_array_alloc(ctx, &got, GPUIR_F32, 2, sd);
    gpuir_array_fill_random(&s0, 1);
    gpuir_array_fill_random(&w, 2);
    gpuir_array_fill_random(&b, 3);
    for (size_t i = 0; i < gpuir_array_count(&w); i++) gpuir_array_set(&w, i, gpuir_array_get(&w, i) * 0.2);

    /* Device data: weights and bias owned by gpuir, the state ping-pongs
       between a gpuir buffer and one wrapping the application's memory. */
    my_cuda cu;
    memset(&cu, 0, sizeof cu);
    uint64_t mine = my_device_alloc(be, BATCH * WIDTH * sizeof(float), &cu);
    if (!mine) fprintf(stderr, "cannot allocate device memory myself\n");
    gpuir_buffer W = buffer(ctx, be, 2, WIDTH, WIDTH, 0), B = buffer(ctx, be, 1, WIDTH, 0, 0);
    gpuir_buffer S[2] = {buffer(ctx, be, 2, BATCH, WIDTH, 0), buffer(ctx, be, 2, BATCH, WIDTH, mine)};
    gpuir_stream stream = gpuir_stream_make(ctx, be);         /* the application's stream */
    gpuir_buffer_upload(ctx, W, &w, stream);
    gpuir_buffer_upload(ctx, B, &b, stream);
    gpuir_buffer_upload(ctx, S[0], &s0, stream);

    /* 64 steps, all on the device and on the stream: each run returns once
       enqueued; nothing is copied. */
    gpuir_program_stats before = gpuir_program_get_stats(p);
    for (int t = 0; t < STEPS && gpuir_ctx_result(ctx) == GPUIR_OK; t++) {
        gpuir_arg in[3] = {gpuir_arg_buffer(S[t % 2]), gpuir_arg_buffer(W), gpuir_arg_buffer(B)};
        gpuir_arg out[1] = {gpuir_arg_buffer(S[(t + 1) % 2])};
        gpuir_run_desc run = {0};
        run.inputs = in;
        run.n_inputs = 3;
        run.outputs = out;
        run.n_outputs = 1;
        run.stream = stream;
        gpuir_program_run_args(p, &run);
    }
    gpuir_buffer_download(ctx, S[STEPS % 2], &got, stream);   /* read back once */
    gpuir_stream_synchronize(ctx, stream);
    gpuir_program_stats after = gpuir_program_get_stats(p);

    /* The same 64 steps on the interpreter, from host arrays. */
    gpuir_array s = s0, next;
    int ok = gpuir_ctx_result(ctx) == GPUIR_OK;
    for (int t = 0; ok && t < STEPS; t++) {
        gpuir_array in[3] = {s, w, b};
        ok = gpuir_ref_run(m, "step", 3, in, 1, &next) == GPUIR_OK;
        if (t) gpuir_array_release(&s);
        s = next;
    }
    ok = ok && gpuir_array_compare(ctx, &got, &s, 1e-4, 1e-4) == GPUIR_OK;
    printf("%d steps: %llu bytes to the device, %llu back during the runs; s[0][0..3] = %.5f %.5f %.5f %.5f\n",
           STEPS, (unsigned long long)(after.h2d_bytes - before.h2d_bytes),
           (unsigned long long)(after.d2h_bytes - before.d2h_bytes), gpuir_array_get(&got, 0),
           gpuir_array_get(&got, 1), gpuir_array_get(&got, 2), gpuir_array_get(&got, 3));
    ok = ok && after.h2d_bytes == before.h2d_bytes && after.d2h_bytes == before.d2h_bytes;
    printf("%s\n", ok ? "ok: matches the interpreter" : gpuir_ctx_error(ctx));

    if (STEPS) gpuir_array_release(&s);
    gpuir_array_release(&s0);
    gpuir_array_release(&w);
    gpuir_array_release(&b);
    gpuir_array_release(&got);
    gpuir_stream_destroy(ctx, stream);
    gpuir_buffer_destroy(ctx, S[1]);            /* gpuir forgets it; the memory stays the application's */
    gpuir_ctx_destroy(ctx);
    if (mine) my_device_free(be, mine, &cu);
    return ok ? 0 : 1;
}

/* The seed program: C = A·B with A 5376x2048 and B 2048x5376 (f32), built
   through the C API, JIT-compiled and run on the GPU, or on the CPU
   emulator when there is none (then at 336x128 · 128x336 unless a shape is
   given: the emulator runs the same CUDA C, far slower). Prints the
   placement report, checks 64 entries against a double-precision dot
   product and runs the compiled program a second time with new inputs.
       examples/seed_matmul [M K N] */
#define GPUIR_IMPLEMENTATION
#include "../gpuir.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The largest error of 64 sampled entries against a double dot product. */
static double check_sample(const gpuir_array *a, const gpuir_array *b, const gpuir_array *c, uint64_t seed) {
    int64_t M = a->dims[0], K = a->dims[1], N = b->dims[1];
    double worst = 0;
    for (int s = 0; s < 64; s++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int64_t i = (int64_t)((seed >> 33) % (uint64_t)M), j = (int64_t)((seed >> 13) % (uint64_t)N);
        double want = 0, scale = 0;
        for (int64_t k = 0; k < K; k++) {
            double t = gpuir_array_get(a, (size_t)(i * K + k)) * gpuir_array_get(b, (size_t)(k * N + j));
            want += t;
            scale += fabs(t);
        }
        double err = fabs(gpuir_array_get(c, (size_t)(i * N + j)) - want) / (scale > 0 ? scale : 1);
        if (err > worst) worst = err;
    }
    return worst;
}

int main(int argc, char **argv) {
    int64_t M = 5376, K = 2048, N = 5376;
    bool given = argc == 4;
    if (given) { M = atoll(argv[1]); K = atoll(argv[2]); N = atoll(argv[3]); }
    if (M <= 0 || K <= 0 || N <= 0 || (argc != 1 && !given)) {
        fprintf(stderr, "usage: seed_matmul [M K N]\n");
        return 2;
    }
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char why[512];
    if (!given && !gpuir_cuda_available(ctx, why, sizeof why)) {
        M = 336; K = 128; N = 336;
        printf("no GPU (%s)\nrunning 336x128 . 128x336 on the emulator instead\n", why);
    }
    gpuir_module *m = gpuir_module_make(ctx);
    int64_t ad[2] = {M, K}, bd[2] = {K, N};
    gpuir_func_begin(m, "seed");
    gpuir_value a = gpuir_param(m, "a", gpuir_tensor_type(GPUIR_F32, 2, ad));
    gpuir_value b = gpuir_param(m, "b", gpuir_tensor_type(GPUIR_F32, 2, bd));
    gpuir_value c = gpuir_matmul(m, a, b, 0);
    gpuir_func_return(m, 1, &c);
    double t0 = now_ms();
    gpuir_program *p = gpuir_program_make(m, NULL);          /* lower, compile (cached), load */
    double t1 = now_ms();
    gpuir_array in[2], out;
    gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, ad);
    gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 2, bd);
    int rc = gpuir_ctx_result(ctx) != GPUIR_OK;
    if (!rc) printf("backend %s; program ready in %.1f ms\n%s", gpuir_backend_name(gpuir_program_backend(p)), t1 - t0,
                    gpuir_module_placement_report(m));
    for (uint64_t run = 1; !rc && run <= 2; run++) {         /* compiled once, run twice */
        gpuir_array_fill_random(&in[0], 2 * run);
        gpuir_array_fill_random(&in[1], 2 * run + 1);
        double r0 = now_ms();
        rc = gpuir_program_run(p, "seed", 2, in, 1, &out) != GPUIR_OK;
        double r1 = now_ms();
        if (rc) break;
        double err = check_sample(&in[0], &in[1], &out, run);
        printf("run %llu: %lld x %lld x %lld in %.1f ms (copies included); sampled error %.1e (relative to sum |a*b|)\n",
               (unsigned long long)run, (long long)M, (long long)K, (long long)N, r1 - r0, err);
        rc = !(err < 1e-5);
        gpuir_array_release(&out);
    }
    if (gpuir_ctx_result(ctx) != GPUIR_OK) fprintf(stderr, "%s\n", gpuir_ctx_error(ctx));
    gpuir_array_release(&in[0]);
    gpuir_array_release(&in[1]);
    gpuir_ctx_destroy(ctx);
    return rc;
}

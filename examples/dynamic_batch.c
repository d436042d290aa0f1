/* One compiled program for every size: an MLP layer, y = relu(x · W + b),
   whose batch and input dims are dynamic (x is ?x?, W is ?x32), built
   through the C API, compiled once (CUDA, or the CPU emulator without a
   GPU) and run at batch sizes 1, 7 and 300 with 64 inputs, each checked
   against the reference interpreter. Then an x whose rows do not match W
   is refused with a clear error before anything is launched. */
#define GPUIR_IMPLEMENTATION
#include "../gpuir.h"

#include <stdio.h>

int main(void) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx), *ref = gpuir_module_make(ctx);

    /* Build the same function twice: one module to compile, one for the
       interpreter (a program lowers its module in place). */
    int64_t xs[] = {GPUIR_DYN, GPUIR_DYN}, ws[] = {GPUIR_DYN, 32}, bs[] = {32}, w_dims[] = {64, 32};
    gpuir_module *mods[2] = {m, ref};
    for (int i = 0; i < 2; i++) {
        gpuir_func_begin(mods[i], "layer");
        gpuir_value x = gpuir_param(mods[i], "x", gpuir_tensor_type(GPUIR_F32, 2, xs));
        gpuir_value w = gpuir_param(mods[i], "w", gpuir_tensor_type(GPUIR_F32, 2, ws));
        gpuir_value b = gpuir_param(mods[i], "b", gpuir_tensor_type(GPUIR_F32, 1, bs));
        gpuir_value y = gpuir_relu(mods[i], gpuir_add(mods[i], gpuir_matmul(mods[i], x, w, 0), b));
        gpuir_func_return(mods[i], 1, &y);
    }
    gpuir_program_desc desc;
    memset(&desc, 0, sizeof desc);                    /* GPUIR_BACKEND_AUTO */
    gpuir_program *p = gpuir_ctx_result(ctx) == GPUIR_OK ? gpuir_program_make(m, &desc) : NULL;
    if (!p) {
        fprintf(stderr, "build failed: %s\n", gpuir_ctx_error(ctx));
        return 1;
    }
    printf("backend: %s\n", gpuir_backend_name(gpuir_program_backend(p)));

    gpuir_array w, b;
    gpuir_array_alloc(ctx, &w, GPUIR_F32, 2, w_dims);
    gpuir_array_alloc(ctx, &b, GPUIR_F32, 1, bs);
    gpuir_array_fill_random(&w, 2);
    gpuir_array_fill_random(&b, 3);
    static const int64_t batches[] = {1, 7, 300};
    int failures = 0;
    for (int i = 0; i < 3; i++) {
        int64_t dims[] = {batches[i], 64};
        gpuir_array in[3], got, want;
        gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, dims);
        gpuir_array_fill_random(&in[0], 10 + (uint64_t)i);
        in[1] = w;
        in[2] = b;
        double rtol, atol;
        gpuir_backend_tolerance(gpuir_program_backend(p), GPUIR_F32, &rtol, &atol);
        gpuir_result r = gpuir_program_run(p, "layer", 3, in, 1, &got);
        if (!r) r = gpuir_ref_run(ref, "layer", 3, in, 1, &want);
        if (!r) r = gpuir_array_compare(ctx, &got, &want, rtol, atol);
        printf("batch %3lld: y is %lldx%lld, %s\n", (long long)batches[i], (long long)got.dims[0],
               (long long)got.dims[1], r ? gpuir_ctx_error(ctx) : "matches the interpreter");
        failures += r != GPUIR_OK;
        gpuir_ctx_clear_error(ctx);
        if (!r) { gpuir_array_release(&got); gpuir_array_release(&want); }
        gpuir_array_release(&in[0]);
    }
    gpuir_program_stats st = gpuir_program_get_stats(p);
    gpuir_cache_stats cs = gpuir_ctx_cache_stats(ctx);
    printf("%llu runs, %llu launches; kernels compiled or loaded from the disk cache %llu time(s)\n",
           (unsigned long long)st.runs, (unsigned long long)st.launches,
           (unsigned long long)(cs.misses + cs.disk_hits));

    int64_t bad_dims[] = {4, 48};                       /* K: 48 against W's 64 */
    gpuir_array in[3], out;
    gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, bad_dims);
    gpuir_array_fill_random(&in[0], 1);
    in[1] = w;
    in[2] = b;
    if (gpuir_program_run(p, "layer", 3, in, 1, &out) == GPUIR_OK) {
        printf("a 4x48 x was accepted\n");
        failures++;
        gpuir_array_release(&out);
    } else {
        printf("refused: %s\n", gpuir_ctx_error(ctx));
    }
    gpuir_ctx_clear_error(ctx);
    gpuir_array_release(&in[0]);
    gpuir_array_release(&w);
    gpuir_array_release(&b);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
    return failures ? 1 : 0;
}

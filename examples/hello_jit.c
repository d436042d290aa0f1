/* The newcomer's example: y = relu(x · W + b) built through the C API,
   JIT-compiled and run on the GPU if there is one, else on the CPU
   emulator (the same generated CUDA C, compiled by the host compiler). It
   says which ran, shows the kernel gpuir generated (the matmul, the bias
   and the relu fused into one), and prints numbers to check by eye.
   `make run` builds and runs it; the implementation is compiled once in
   examples/gpuir_impl.c. */
#include "../gpuir.h"

#include <stdio.h>
#include <string.h>

/* Prints the generated kernel's name and the IR ops its code came from
   (each statement of the CUDA C is commented with its op). */
static void print_kernel(const char *source) {
    const char *k = strstr(source, "GPUIR_KERNEL gpuir_k_"), *end = k ? strstr(k, "\n}\n") : NULL;
    if (!k || !end) return;
    k += strlen("GPUIR_KERNEL ");
    printf("kernel: %.*s, fusing:", (int)strcspn(k, "("), k);
    for (const char *op = strstr(k, "/* op "); op && op < end; op = strstr(op + 1, "/* op "))
        printf(" %.*s", (int)strcspn(strchr(op, ':') + 2, " "), strchr(op, ':') + 2);
    printf("\n");
}

int main(void) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);

    /* Build: x is 2x3, W a 3x2 weight (a global, bound once), b a 2-vector. */
    int64_t xs[] = {2, 3}, ws[] = {3, 2}, bs[] = {2};
    gpuir_func_begin(m, "layer");
    gpuir_value x = gpuir_param(m, "x", gpuir_tensor_type(GPUIR_F32, 2, xs));
    gpuir_value b = gpuir_param(m, "b", gpuir_tensor_type(GPUIR_F32, 1, bs));
    gpuir_value w = gpuir_global(m, "W", gpuir_tensor_type(GPUIR_F32, 2, ws));
    gpuir_value y = gpuir_relu(m, gpuir_add(m, gpuir_matmul(m, x, w, 0), b));
    gpuir_func_return(m, 1, &y);

    float xv[] = {1, 2, 3,
                  4, 5, 6};
    float wv[] = {1, 0,                 /* column 0 sums x's columns 0 and 2, */
                  0, 1,                 /* column 1 its columns 1 and 2 */
                  1, 1};
    float bv[] = {0.5f, -10};
    gpuir_array W = {GPUIR_F32, 2, {3, 2}, wv};
    gpuir_array in[2] = {{GPUIR_F32, 2, {2, 3}, xv}, {GPUIR_F32, 1, {2}, bv}};
    gpuir_array out = {GPUIR_F32, 0, {0}, NULL};
    gpuir_module_bind_global(m, "W", &W);

    /* JIT: lower, generate CUDA C, compile it (NVRTC on a GPU, the host C
       compiler for the emulator; cached on disk), load it. */
    gpuir_program_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.backend = GPUIR_BACKEND_AUTO;             /* the GPU if usable, else the emulator */
    gpuir_program *p = gpuir_program_make(m, &desc);
    if (p) gpuir_program_run(p, "layer", 2, in, 1, &out);
    if (gpuir_ctx_result(ctx) != GPUIR_OK) {       /* one check for build, compile and run */
        fprintf(stderr, "failed: %s\n", gpuir_ctx_error(ctx));
        gpuir_ctx_destroy(ctx);
        return 1;
    }

    if (gpuir_program_backend(p) == GPUIR_BACKEND_CUDA) printf("ran on: cuda (the GPU)\n");
    else printf("ran on: emu, the CPU emulator (no usable GPU; why: %.60s...)\n", gpuir_program_why_not_cuda(p));
    print_kernel(gpuir_program_source(p));
    printf("launches: %llu\n", (unsigned long long)gpuir_program_get_stats(p).launches);
    for (int i = 0; i < 2; i++)
        printf("y[%d] = [%g, %g]\n", i, gpuir_array_get(&out, i * 2), gpuir_array_get(&out, i * 2 + 1));
    printf("expected: y[0] = [4.5, 0], y[1] = [10.5, 1]\n");

    gpuir_array_release(&out);
    gpuir_ctx_destroy(ctx);                        /* frees the module and the program too */
    return 0;
}

/* An MLP layer, y = relu(x · W + b), built through the C API, printed, and run
   on the reference interpreter. `make run` builds and runs it. */
#define GPUIR_IMPLEMENTATION
#include "../gpuir.h"

#include <stdio.h>

int main(void) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);

    /* Build: x is 2x3, W is a global 3x4 weight, b a 4-vector parameter. */
    int64_t xs[] = {2, 3}, ws[] = {3, 4}, bs[] = {4};
    gpuir_func_begin(m, "mlp");
    gpuir_value x = gpuir_param(m, "x", gpuir_tensor_type(GPUIR_F32, 2, xs));
    gpuir_value b = gpuir_param(m, "b", gpuir_tensor_type(GPUIR_F32, 1, bs));
    gpuir_value w = gpuir_global(m, "W", gpuir_tensor_type(GPUIR_F32, 2, ws));
    gpuir_value y = gpuir_relu(m, gpuir_add(m, gpuir_matmul(m, x, w, 0), b));
    gpuir_func_return(m, 1, &y);
    if (gpuir_ctx_result(ctx) != GPUIR_OK) {           /* one check for the whole build */
        fprintf(stderr, "build failed: %s\n", gpuir_ctx_error(ctx));
        return 1;
    }
    char *text = gpuir_module_print(m);
    printf("%s\n", text);
    gpuir_free(text);

    /* Run: bind the weight once, then call with inputs. */
    float xv[] = {1, 2, 3, -1, 0, 1};
    float wv[] = {1, 0, -1, 2, 0, 1, 0, -1, 1, 1, 1, 0};
    float bv[] = {0.5f, -10, 0, 1};
    gpuir_array in[2] = {{GPUIR_F32, 2, {2, 3}, xv}, {GPUIR_F32, 1, {4}, bv}};
    gpuir_array W = {GPUIR_F32, 2, {3, 4}, wv}, out;
    if (gpuir_module_bind_global(m, "W", &W) || gpuir_ref_run(m, "mlp", 2, in, 1, &out)) {
        fprintf(stderr, "run failed: %s\n", gpuir_ctx_error(ctx));
        return 1;
    }
    for (int i = 0; i < 2; i++)
        printf("y[%d] = [%g, %g, %g, %g]\n", i, gpuir_array_get(&out, i * 4 + 0),
               gpuir_array_get(&out, i * 4 + 1), gpuir_array_get(&out, i * 4 + 2),
               gpuir_array_get(&out, i * 4 + 3));
    gpuir_array_release(&out);
    gpuir_ctx_destroy(ctx);
    return 0;
}

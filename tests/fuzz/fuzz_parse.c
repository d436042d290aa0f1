/* Fuzz harness: text -> parse -> verify -> print -> parse -> print (a fixed
   point), then canonicalize,decompose and the lowering pipeline (async
   included), with the reference interpreter on functions without
   parameters after each; the lowered module must print to a fixed point
   too, and renders as CUDA C. Built with clang's libFuzzer by `make fuzz`,
   or with any compiler and -DGPUIR_FUZZ_REPLAY as a program that replays the
   files named on its command line (`make test` replays the corpus); either
   way linked with the implementation compiled once (examples/gpuir_impl.c). */
#include "../../gpuir.h"
#include "fuzz_common.h"

static void fuzz_run(gpuir_module *m) {
    gpuir_array out[GPUIR_MAX_OPERANDS];
    for (size_t i = 0; i < gpuir_module_func_count(m) && i < 4; i++) {
        gpuir_func f = gpuir_module_func_at(m, i);
        size_t n = gpuir_func_result_count(m, f);
        if (gpuir_func_param_count(m, f) != 0) continue;
        if (gpuir_ref_run(m, gpuir_func_name(m, f), 0, NULL, n, out) == GPUIR_OK)
            for (size_t k = 0; k < n; k++) gpuir_array_release(&out[k]);
        gpuir_ctx_clear_error(gpuir_module_ctx(m));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpuir_ctx_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.max_tensor_bytes = 1 << 20;        /* keep the interpreter small */
    gpuir_ctx *ctx = gpuir_ctx_make(&desc);
    gpuir_module *m = gpuir_module_parse(ctx, (const char *)data, size, "fuzz");
    if (m) {
        fuzz_roundtrip(ctx, m, "parsed");
        fuzz_run(m);
        if (gpuir_module_run_passes(m, "canonicalize,decompose", NULL) == GPUIR_OK) fuzz_run(m);
        gpuir_ctx_clear_error(ctx);
        if (gpuir_module_run_passes(m, "fuse,bufferize,outline,place,configure,plan-shared-memory,async",
                                    NULL) == GPUIR_OK) {
            fuzz_roundtrip(ctx, m, "lowered");
            fuzz_run(m);
            gpuir_free(gpuir_module_emit_cuda(m));
        }
        gpuir_ctx_clear_error(ctx);
    }
    gpuir_ctx_destroy(ctx);
    return 0;
}

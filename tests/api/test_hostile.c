/* Hostile IR on the emulator and runtime: memory used after the emulator
   gave it back is an illegal address, not a write to freed host memory;
   kernels holding only fills or dense constants compile for the GPU too
   (NVRTC, no GPU needed; SKIP without libnvrtc). */
#define _XOPEN_SOURCE 700
#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

/* The emulator's table directly: an allocation freed on stream 0 goes to
   the quarantine at once (the streams are idle); a copy into it afterwards
   used to write freed host memory (ASan: heap-use-after-free) and return
   success. */
TEST(emulator_memory_given_back_is_an_illegal_address) {
    gpuir__emu *E = (gpuir__emu *)calloc(1, sizeof *E);
    gpuir__dptr d = 0, d2 = 0;
    float host[4] = {1, 2, 3, 4};
    CHECK(gpuir__emu_mem_alloc(E, &d, sizeof host, 0) == 0);
    CHECK(gpuir__emu_mem_alloc(E, &d2, sizeof host, 0) == 0);
    CHECK(gpuir__emu_mem_free(E, d, 0) == 0);
    CHECK(stbds_arrlenu(E->allocs) == 1);                  /* given back */
    CHECK(gpuir__emu_htod(E, d, host, sizeof host, 0) == GPUIR__CU_ILLEGAL_ADDRESS);
    CHECK(strstr(E->detail, "already freed") != NULL);
    CHECK(gpuir__emu_dtoh(E, host, d + 4, 4, 0) == GPUIR__CU_ILLEGAL_ADDRESS);
    CHECK(gpuir__emu_dtod(E, d2, d, sizeof host, 0) == GPUIR__CU_ILLEGAL_ADDRESS);
    CHECK(gpuir__emu_htod(E, d2, host, sizeof host, 0) == 0);   /* live memory still works */
    CHECK(gpuir__emu_mem_free(E, d2, 0) == 0);
    CHECK(E->live_allocs == 0 && E->gone_held == 2);
    while (E->gone_held) gpuir__emu_gone_drop_oldest(E);   /* as gpuir__emu_free does */
    stbds_arrfree(E->allocs);
    free(E);
}

/* A fill-only kernel and a dense constant (a const table before its
   kernel) are CUDA C NVRTC compiles, with the table in the source. */
TEST(kernel_constants_compile_for_the_gpu) {
    static const char text[] =
        "gpu.module @kernels {\n"
        "  gpu.func @fill(%o: memref<16xf32, 1>) kernel {\n"
        "    constant %o {value = 2.5} : (memref<16xf32, 1>) -> ()\n"
        "    return\n  }\n"
        "  gpu.func @add(%a: memref<2x4xf16, 1>, %o: memref<2x4xf16, 1>) kernel {\n"
        "    %c = memref.alloc : () -> memref<4xf16, 5>\n"
        "    constant %c {value = dense<[1.0, 2.0, -3.0, 0.5]>} : (memref<4xf16, 5>) -> ()\n"
        "    add %a, %c, %o : (memref<2x4xf16, 1>, memref<4xf16, 5>, memref<2x4xf16, 1>) -> ()\n"
        "    return\n  }\n"
        "}\n"
        "func.func @f(%a: memref<2x4xf16>, %o: memref<2x4xf16>, %p: memref<16xf32>) {\n"
        "  gpu.launch_func %a, %o {kernel = @kernels::@add} : (memref<2x4xf16>, memref<2x4xf16>) -> ()\n"
        "  gpu.launch_func %p {kernel = @kernels::@fill} : (memref<16xf32>) -> ()\n"
        "  return\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "constants.gir");
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "place,configure", NULL), GPUIR_OK);
    char *cuda = gpuir_module_emit_cuda(m);
    CHECK(cuda && strstr(cuda, "GPUIR_TABLE float gpuir_dense_"));
    CHECK(cuda && strstr(cuda, "{1.0f, 2.0f, -3.0f, 0.5f}"));
    gpuir_free(cuda);
    long spilled = 0;     /* libnvrtc keeps an allocation LeakSanitizer reports: not under ASan */
    gpuir_result r = TEST_ASAN ? GPUIR_ERR_UNAVAILABLE : gpuir_module_compile_cuda(m, 90, &spilled, NULL);
    if (r == GPUIR_ERR_UNAVAILABLE) {
        gpuir_ctx_destroy(ctx);
        SKIP(TEST_ASAN ? "NVRTC under ASan" : "no libnvrtc");
    }
    CHECK_RESULT(ctx, r, GPUIR_OK);
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(emulator_memory_given_back_is_an_illegal_address);
    RUN(kernel_constants_compile_for_the_gpu);
    return CHECK_EXIT();
}

/* Hostile IR on the emulator and runtime: memory used after the emulator
   gave it back is an illegal address, not a write to freed host memory;
   (more cases below). */
#define _XOPEN_SOURCE 700
#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

/* The emulator's table directly: an allocation freed on stream 0 is given
   back at once (the streams are idle); a copy into it afterwards used to
   write freed host memory (ASan: heap-use-after-free) and return success. */
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
    CHECK(E->live_allocs == 0);
    stbds_arrfree(E->allocs);
    free(E);
}

int main(void) {
    RUN(emulator_memory_given_back_is_an_illegal_address);
    return CHECK_EXIT();
}

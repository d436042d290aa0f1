/* Translation unit 1 of the two-TU link test: holds the implementation. */
#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../../gpuir.h"   /* including twice is harmless */

#ifdef __cplusplus
extern "C"
#endif
int tu_other(void);

int main(void) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    int ok = ctx && gpuir_ctx_result(ctx) == GPUIR_OK && tu_other() == 4;
    gpuir_ctx_destroy(ctx);
    return ok ? 0 : 1;
}

/* What the fuzz harnesses share: the print -> parse -> print fixed point,
   and, with -DGPUIR_FUZZ_REPLAY, a main that replays the files named on its
   command line through LLVMFuzzerTestOneInput. Include after gpuir.h. */
#ifndef GPUIR_FUZZ_COMMON_H
#define GPUIR_FUZZ_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* print -> parse -> print must be a fixed point; aborts (a finding) if not. */
static void fuzz_roundtrip(gpuir_ctx *ctx, gpuir_module *m, const char *stage) {
    char *a = gpuir_module_print(m);
    gpuir_module *again = a ? gpuir_module_parse(ctx, a, strlen(a), "printed") : NULL;
    char *b = again ? gpuir_module_print(again) : NULL;
    if (!a || !b || strcmp(a, b) != 0) {
        fprintf(stderr, "%s: print -> parse -> print is not a fixed point:\n%s\n---\n%s\n%s\n", stage,
                a ? a : "", b ? b : "", gpuir_ctx_error(ctx));
        abort();
    }
    gpuir_free(a);
    gpuir_free(b);
    gpuir_module_destroy(again);
}

#ifdef GPUIR_FUZZ_REPLAY
#ifndef FUZZ_NAME
#define FUZZ_NAME "fuzz"
#endif
int main(int argc, char **argv) {
    static unsigned char buf[1 << 20];
    int replayed = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) { fprintf(stderr, "cannot open %s\n", argv[i]); return 1; }
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        replayed++;
    }
    printf("PASS " FUZZ_NAME ": replayed %d inputs\n", replayed);
    return 0;
}
#endif
#endif

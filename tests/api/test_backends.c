/* Every program of the interpreter's tests (every .gir under tests/ir/ref,
   tests/ir/codegen and tests/ir/run) lowered, compiled and run on the emulator, and on
   CUDA where a GPU is usable, against the reference interpreter: fresh
   random inputs from a fixed seed, compared within the backend's tolerance
   (gpuir_backend_tolerance). A function with dynamic dims (`?`) runs at
   several sizes from the same compiled program.
   With GPUIR_TEST_GRAPHS=1 the programs record graphs (desc.graphs) and
   each function runs twice per size, with new inputs: recorded, then
   replayed (tools/gpu-check.sh does this on CUDA; tests/api/test_graphs.c
   covers the emulator).
   A chunk with a `// test-backends: atol=X` line compares with an absolute
   tolerance of at least X (a deep program whose values grow past what the
   dtype's own atol means: tests/ir/run/transformer-block.gir says why);
   one with a `// test-backends: no-cuda REASON` line is skipped on CUDA,
   with the reason (kernels the runtime does not launch on a GPU:
   tests/ir/run/wgmma-tf32.gir).
   One PASS/FAIL/SKIP line per file, backend, function (and size).
   `test_backends FILE...` checks only those files (on the emulator; on
   CUDA with GPUIR_TEST_BACKENDS=cuda, SKIP where CUDA is unavailable). */
#define _POSIX_C_SOURCE 200809L
#include "../../gpuir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dirs[] = {"tests/ir/ref", "tests/ir/codegen", "tests/ir/run"};

static int failures;
static bool graphs;     /* GPUIR_TEST_GRAPHS */

static void report(const char *status, const char *backend, const char *file, const char *func, const char *why) {
    printf("%s %s: %s @%s%s%s%s\n", status, backend, file, func, why ? " (" : "", why ? why : "", why ? ")" : "");
    if (status[0] == 'F') failures++;
}

/* Runs function f on the program and the interpreter from the same random
   inputs (run `again` > 0: other ones), each dynamic dim `dyn` long (-1:
   none), and compares. */
static void check_func(gpuir_ctx *ctx, gpuir_program *p, gpuir_module *ref, gpuir_func f, const char *file,
                       const char *bname, gpuir_backend backend, int64_t dyn, int again, double min_atol) {
    char name[GPUIR_MAX_NAME + 64];
    const char *fname = gpuir_func_name(ref, f);
    if (dyn >= 0) snprintf(name, sizeof name, "%s [? = %lld]%s", fname, (long long)dyn, again ? " again" : "");
    else snprintf(name, sizeof name, "%s%s", fname, again ? " again" : "");
    size_t n_in = gpuir_func_param_count(ref, f), n_out = gpuir_func_result_count(ref, f);
    gpuir_array in[GPUIR_MAX_OPERANDS], want[GPUIR_MAX_OPERANDS], got[GPUIR_MAX_OPERANDS];
    memset(in, 0, sizeof in); memset(want, 0, sizeof want); memset(got, 0, sizeof got);
    gpuir_result r = GPUIR_OK;
    for (size_t k = 0; k < n_in && !r; k++) {
        gpuir_type t = gpuir_func_param_type(ref, f, k);
        for (int d = 0; d < t.rank; d++)
            if (t.dims[d] == GPUIR_DYN) t.dims[d] = dyn;
        r = gpuir_array_alloc(ctx, &in[k], t.dtype, t.rank, t.dims);
        if (!r) gpuir_array_fill_random(&in[k], 1 + k + 1000 * (uint64_t)again);
    }
    if (!r) r = gpuir_ref_run(ref, fname, n_in, in, n_out, want);
    if (!r) r = gpuir_program_run(p, fname, n_in, in, n_out, got);
    for (size_t k = 0; k < n_out && !r; k++) {
        double rtol, atol;
        gpuir_backend_tolerance(backend, want[k].dtype, &rtol, &atol);
        if (atol < min_atol) atol = min_atol;
        r = gpuir_array_compare(ctx, &got[k], &want[k], rtol, atol);
    }
    report(r ? "FAIL" : "PASS", bname, file, name, r ? gpuir_ctx_error(ctx) : NULL);
    gpuir_ctx_clear_error(ctx);
    for (size_t k = 0; k < GPUIR_MAX_OPERANDS; k++) {
        gpuir_array_release(&in[k]); gpuir_array_release(&want[k]); gpuir_array_release(&got[k]);
    }
}

/* Runs every host function of one chunk on `backend` and the interpreter. */
static void check_chunk(const char *file, const char *text, size_t len, gpuir_backend backend) {
    const char *bname = backend == GPUIR_BACKEND_CUDA ? (graphs ? "cuda+graphs" : "cuda")
                                                      : (graphs ? "emu+graphs" : "emu");
    const char *no_cuda = strstr(text, "// test-backends: no-cuda ");
    if (no_cuda && backend == GPUIR_BACKEND_CUDA) {       /* the runtime refuses it there: say why */
        const char *why = no_cuda + strlen("// test-backends: no-cuda ");
        char reason[200];
        snprintf(reason, sizeof reason, "%.*s", (int)strcspn(why, "\n"), why);
        report("SKIP", bname, file, "*", reason);
        return;
    }
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *ref = gpuir_module_parse(ctx, text, len, file);
    gpuir_module *low = ref ? gpuir_module_parse(ctx, text, len, file) : NULL;
    if (!low) { gpuir_ctx_destroy(ctx); return; }          /* expected-error chunks */
    size_t n_funcs = gpuir_module_func_count(ref);
    for (size_t g = 0; g < gpuir_module_global_count(ref); g++) {
        gpuir_array w;
        gpuir_type t = gpuir_module_global_type(ref, g);
        if (gpuir_array_alloc(ctx, &w, t.dtype, t.rank, t.dims) != GPUIR_OK) break;
        gpuir_array_fill_random(&w, 77 + g);
        gpuir_module_bind_global(ref, gpuir_module_global_name(ref, g), &w);
        gpuir_module_bind_global(low, gpuir_module_global_name(low, g), &w);
        gpuir_array_release(&w);
    }
    const char *given = strstr(text, "// test-backends: atol=");
    double min_atol = given ? strtod(given + strlen("// test-backends: atol="), NULL) : 0;
    gpuir_program *p = gpuir_program_make(low, &(gpuir_program_desc){.backend = backend, .graphs = graphs});
    if (!p) {
        bool no_gpu = backend == GPUIR_BACKEND_CUDA && gpuir_ctx_result(ctx) == GPUIR_ERR_UNAVAILABLE;
        report(no_gpu ? "SKIP" : "FAIL", bname, file, "*", gpuir_ctx_error(ctx));
        gpuir_ctx_destroy(ctx);
        return;
    }
    for (size_t i = 0; i < n_funcs; i++) {
        gpuir_func f = gpuir_module_func_at(ref, i);
        if (gpuir_func_is_kernel(ref, f)) continue;
        static const int64_t sizes[] = {0, 1, 37, 300};  /* what each `?` gets, in turn */
        bool dynamic = false;
        for (size_t k = 0; k < gpuir_func_param_count(ref, f); k++) {
            gpuir_type t = gpuir_func_param_type(ref, f, k);
            for (int d = 0; d < t.rank; d++) dynamic |= t.dims[d] == GPUIR_DYN;
        }
        for (size_t s = 0; s < (dynamic ? 4u : 1u); s++)
            for (int again = 0; again < (graphs ? 2 : 1); again++)
                check_func(ctx, p, ref, f, file, bname, backend, dynamic ? sizes[s] : -1, again, min_atol);
    }
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
}
/* The whole file, NUL-terminated (malloc'd), or NULL. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long n = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = (char *)malloc((size_t)n + 1)) != NULL) {
        *len = fread(text, 1, (size_t)n, f);
        text[*len] = '\0';
    }
    if (f) fclose(f);
    return text;
}

/* Splits a file at `// -----` lines (keeping line numbers) and checks each
   chunk. */
static void check_file(const char *path, gpuir_backend backend) {
    size_t len;
    char *text = read_file(path, &len);
    if (!text) { report("FAIL", "emu", path, "*", "cannot read"); return; }
    size_t start = 0;
    while (start <= len) {
        const char *sep = strstr(text + start, "\n// -----");
        size_t end = sep ? (size_t)(sep - text) + 1 : len;
        char *chunk = (char *)calloc(end + 1, 1);
        for (size_t i = 0; i < start; i++) chunk[i] = text[i] == '\n' ? '\n' : ' ';
        memcpy(chunk + start, text + start, end - start);
        check_chunk(path, chunk, end, backend);
        free(chunk);
        if (!sep) break;
        start = end;
        while (start < len && text[start] != '\n') start++;
    }
    free(text);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void check_dir(const char *dir, gpuir_backend backend) {
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".gir") == 0) {
            names[n] = (char *)malloc(strlen(dir) + l + 2);
            sprintf(names[n++], "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof names[0], by_name);
    for (size_t i = 0; i < n; i++) { check_file(names[i], backend); free(names[i]); }
}

/* GPUIR_TEST_BACKENDS (default "emu,cuda") chooses the backends. */
int main(int argc, char **argv) {
    graphs = getenv("GPUIR_TEST_GRAPHS") && strcmp(getenv("GPUIR_TEST_GRAPHS"), "1") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0);   /* a line a result, even if the run is killed */
    const char *which = getenv("GPUIR_TEST_BACKENDS");
    gpuir_backend files_on = which && strcmp(which, "cuda") == 0 ? GPUIR_BACKEND_CUDA : GPUIR_BACKEND_EMU;
    for (int i = 1; i < argc; i++) check_file(argv[i], files_on);
    if (argc > 1) return failures ? 1 : 0;
    if (!which) which = "emu,cuda";
    if (strstr(which, "emu"))
        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) check_dir(dirs[i], GPUIR_BACKEND_EMU);
    if (!strstr(which, "cuda")) return failures ? 1 : 0;
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *probe_text = "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                             "  %e = exp %x : (tensor<4xf32>) -> tensor<4xf32>\n"
                             "  return %e : tensor<4xf32>\n}\n";
    gpuir_module *m = gpuir_module_parse(ctx, probe_text, strlen(probe_text), "probe");
    gpuir_program_desc desc = {.backend = GPUIR_BACKEND_CUDA};
    gpuir_program *probe = m ? gpuir_program_make(m, &desc) : NULL;
    if (probe) {
        gpuir_program_destroy(probe);
        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) check_dir(dirs[i], GPUIR_BACKEND_CUDA);
    } else {
        printf("SKIP cuda: every program (no usable GPU: %s)\n", gpuir_ctx_error(ctx));
    }
    gpuir_ctx_destroy(ctx);
    return failures ? 1 : 0;
}

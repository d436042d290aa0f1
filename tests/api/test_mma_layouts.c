/* Where each output of a tensor-core matmul takes its operands from.
   Random inputs say whether a kernel is right; these say, when it is not,
   which fragment or descriptor mapping is off. Each probe feeds inputs
   whose products are small integers (exact in bf16, f16 and TF32) naming
   their source, and checks every output of a 128x128x128 matmul:
     rows (kc):  A[m][kc] = m + 1, B[kc][n] = 1, zeros elsewhere: C[m][n]
                 must be m + 1; a wrong value v is row v - 1's A
     cols (kc):  A[m][kc] = 1, B[kc][n] = n + 1: C[m][n] = n + 1; a wrong
                 value is column v - 1's B
     k:          A[m][k] = 1 at one k per row, k(m) = (37 m + 5) % 128, and
                 B[k][n] = k + 1 for all n: C[m][n] = k(m) + 1; a wrong value
                 is the k that was paired
   for the tensor-core kernel (bf16; f16 with B transposed; TF32; `wgmma =
   false`) and the wgmma kernel (bf16, f16; and bf16 as the sm_90 default
   takes it, B transposed by a kernel first), on the emulator, and on CUDA when
   a GPU is usable (else SKIP): on a GPU this is where a wrong ldmatrix
   lane map, mma fragment or wgmma descriptor shows its shape. Each test
   also checks that the program took the kernel it probes. */
#define _POSIX_C_SOURCE 200809L
#include "../../gpuir.h"
#include "../check.h"

#include <stdlib.h>

#define SIZE 128                /* M = N = K */

typedef struct kernel_kind {
    const char *dtype;          /* of A, B and C */
    const char *attrs;          /* the matmul's attributes */
    bool tb;                    /* B stored N x K */
    const char *marker;         /* in the program's source when it took the kernel */
} kernel_kind;

typedef enum probe { PROBE_ROWS, PROBE_COLS, PROBE_K } probe;

static int k_of_row(int m) { return (37 * m + 5) % SIZE; }

/* The program of one matmul of `kind` on `backend`, or NULL (SKIP when the
   backend is CUDA and no GPU is usable). */
static gpuir_program *make_program(gpuir_ctx *ctx, const kernel_kind *kind, gpuir_backend backend) {
    char text[1024], bshape[64];
    snprintf(bshape, sizeof bshape, "%dx%dx%s", SIZE, SIZE, kind->dtype);
    snprintf(text, sizeof text,
             "func.func @f(%%a: tensor<%s>, %%b: tensor<%s>) -> tensor<%s> {\n"
             "  %%c = matmul %%a, %%b %s : (tensor<%s>, tensor<%s>) -> tensor<%s>\n"
             "  return %%c : tensor<%s>\n"
             "}\n",
             bshape, bshape, bshape, kind->attrs, bshape, bshape, bshape, bshape);
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "probe");
    gpuir_program_desc desc = {backend, 0, NULL, false, false, 0, false};
    return m ? gpuir_program_make(m, &desc) : NULL;
}

/* B's element (k, n), wherever it is stored. */
static void set_b(gpuir_array *b, const kernel_kind *kind, int k, int n, double v) {
    gpuir_array_set(b, kind->tb ? (size_t)n * SIZE + k : (size_t)k * SIZE + n, v);
}

static void fill(gpuir_array *a, gpuir_array *b, const kernel_kind *kind, probe pr, int kc) {
    for (size_t i = 0; i < gpuir_array_count(a); i++) gpuir_array_set(a, i, 0.0);
    for (size_t i = 0; i < gpuir_array_count(b); i++) gpuir_array_set(b, i, 0.0);
    for (int i = 0; i < SIZE; i++) {
        if (pr == PROBE_ROWS) {
            gpuir_array_set(a, (size_t)i * SIZE + kc, i + 1);
            set_b(b, kind, kc, i, 1.0);
        } else if (pr == PROBE_COLS) {
            gpuir_array_set(a, (size_t)i * SIZE + kc, 1.0);
            set_b(b, kind, kc, i, i + 1);
        } else {
            gpuir_array_set(a, (size_t)i * SIZE + k_of_row(i), 1.0);
            for (int n = 0; n < SIZE; n++) set_b(b, kind, i, n, i + 1);
        }
    }
}

static double want_at(probe pr, int m, int n) {
    return pr == PROBE_ROWS ? m + 1 : pr == PROBE_COLS ? n + 1 : k_of_row(m) + 1;
}

/* What a wrong output's value says about where it came from. */
static void describe(char *buf, size_t size, probe pr, double v) {
    static const char *const what[] = {"row %d's A", "column %d's B", "k = %d"};
    if (v == 0.0) snprintf(buf, size, "nothing: no product reached it");
    else if (v != (double)(int)v || v < 1 || v > SIZE) snprintf(buf, size, "a mix of sources");
    else snprintf(buf, size, what[pr], (int)v - 1);
}

/* Runs one probe; prints up to 6 wrong outputs and their sources: the
   first of each row for the probes whose answer depends on the row, the
   first of a row for the columns probe. */
static void run_probe(gpuir_ctx *ctx, gpuir_program *p, const kernel_kind *kind, probe pr, int kc) {
    static const char *const names[] = {"rows", "cols", "k"};
    int64_t dims[2] = {SIZE, SIZE};
    gpuir_array in[2], out;
    memset(in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    gpuir_dtype dt = strcmp(kind->dtype, "bf16") == 0 ? GPUIR_BF16 : strcmp(kind->dtype, "f16") == 0 ? GPUIR_F16 : GPUIR_F32;
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in[0], dt, 2, dims), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &in[1], dt, 2, dims), GPUIR_OK);
    fill(&in[0], &in[1], kind, pr, kc);
    CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 1, &out), GPUIR_OK);
    int wrong = 0, shown = 0, shown_row = -1;
    for (int m = 0; m < SIZE && gpuir_array_count(&out) == SIZE * SIZE; m++)
        for (int n = 0; n < SIZE; n++) {
            double got = gpuir_array_get(&out, (size_t)m * SIZE + n), want = want_at(pr, m, n);
            if (got == want) continue;
            wrong++;
            bool show = shown < 6 && (pr == PROBE_COLS ? shown_row < 0 || shown_row == m : shown_row != m);
            if (show) {
                shown++;
                shown_row = m;
                char src[64], want_src[64];
                describe(src, sizeof src, pr, got);
                describe(want_src, sizeof want_src, pr, want);
                fprintf(stderr, "  %s probe (k column %d), %s: C[%d][%d] = %g, from %s (want %s)\n", names[pr], kc,
                        gpuir_backend_name(gpuir_program_backend(p)), m, n, got, src, want_src);
            }
        }
    if (wrong) fprintf(stderr, "  %s probe (k column %d): %d of %d outputs wrong\n", names[pr], kc, wrong, SIZE * SIZE);
    CHECK(wrong == 0 && gpuir_array_count(&out) == SIZE * SIZE);
    gpuir_array_release(&in[0]);
    gpuir_array_release(&in[1]);
    gpuir_array_release(&out);
}

static void probe_kind(const kernel_kind *kind, gpuir_backend backend) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    if (backend == GPUIR_BACKEND_CUDA && !gpuir_cuda_available(ctx, NULL, 0)) {
        gpuir_ctx_destroy(ctx);
        SKIP("no usable CUDA device");
    }
    gpuir_program *p = make_program(ctx, kind, backend);
    CHECK(p != NULL);
    if (!p) fprintf(stderr, "  %s\n", gpuir_ctx_error(ctx));
    CHECK(p && strstr(gpuir_program_source(p), kind->marker) != NULL);     /* the kernel it probes */
    const int columns[] = {0, 9, SIZE - 1};
    for (int i = 0; p && i < 3; i++) {
        run_probe(ctx, p, kind, PROBE_ROWS, columns[i]);
        run_probe(ctx, p, kind, PROBE_COLS, columns[i]);
    }
    if (p) run_probe(ctx, p, kind, PROBE_K, 0);
    gpuir_ctx_destroy(ctx);
}

static const kernel_kind tc_bf16 = {"bf16", "{wgmma = false}", false, "GPUIR_MMA_BF16("};
static const kernel_kind tc_f16_tb = {"f16", "{transpose_b = true, wgmma = false}", true, "GPUIR_MMA_F16("};
static const kernel_kind tc_tf32 = {"f32", "{tf32 = true}", false, "GPUIR_MMA_TF32("};
static const kernel_kind wgmma_bf16 = {"bf16", "{transpose_b = true, wgmma = true}", true, "GPUIR_WGMMA_BF16("};
static const kernel_kind wgmma_f16 = {"f16", "{transpose_b = true, wgmma = true}", true, "GPUIR_WGMMA_F16("};
/* the default on sm_90: B stored K x N, transposed by a kernel, then wgmma */
static const kernel_kind default_bf16 = {"bf16", "", false, "GPUIR_WGMMA_BF16("};

TEST(tensor_cores_bf16_on_the_emulator) { probe_kind(&tc_bf16, GPUIR_BACKEND_EMU); }
TEST(tensor_cores_f16_b_transposed_on_the_emulator) { probe_kind(&tc_f16_tb, GPUIR_BACKEND_EMU); }
TEST(tensor_cores_tf32_on_the_emulator) { probe_kind(&tc_tf32, GPUIR_BACKEND_EMU); }
TEST(wgmma_bf16_on_the_emulator) { probe_kind(&wgmma_bf16, GPUIR_BACKEND_EMU); }
TEST(wgmma_f16_on_the_emulator) { probe_kind(&wgmma_f16, GPUIR_BACKEND_EMU); }
TEST(default_bf16_on_the_emulator) { probe_kind(&default_bf16, GPUIR_BACKEND_EMU); }
TEST(tensor_cores_bf16_on_cuda) { probe_kind(&tc_bf16, GPUIR_BACKEND_CUDA); }
TEST(tensor_cores_f16_b_transposed_on_cuda) { probe_kind(&tc_f16_tb, GPUIR_BACKEND_CUDA); }
TEST(tensor_cores_tf32_on_cuda) { probe_kind(&tc_tf32, GPUIR_BACKEND_CUDA); }
TEST(wgmma_bf16_on_cuda) { probe_kind(&wgmma_bf16, GPUIR_BACKEND_CUDA); }
TEST(wgmma_f16_on_cuda) { probe_kind(&wgmma_f16, GPUIR_BACKEND_CUDA); }
TEST(default_bf16_on_cuda) { probe_kind(&default_bf16, GPUIR_BACKEND_CUDA); }

int main(void) {
    RUN(tensor_cores_bf16_on_the_emulator);
    RUN(tensor_cores_f16_b_transposed_on_the_emulator);
    RUN(tensor_cores_tf32_on_the_emulator);
    RUN(wgmma_bf16_on_the_emulator);
    RUN(wgmma_f16_on_the_emulator);
    RUN(default_bf16_on_the_emulator);
    RUN(tensor_cores_bf16_on_cuda);
    RUN(tensor_cores_f16_b_transposed_on_cuda);
    RUN(tensor_cores_tf32_on_cuda);
    RUN(wgmma_bf16_on_cuda);
    RUN(wgmma_f16_on_cuda);
    RUN(default_bf16_on_cuda);
    return CHECK_EXIT();
}

/* gpuir-bench: gpuir against what a user would pick instead, in one run.

   gpuir-bench matmul [--m=M --n=N --k=K] [--dtype=f32|tf32|f16|bf16]
                      [--epilogue=bias,relu|gelu|silu,residual] [--repeat=R]
                      [--wgmma | --no-wgmma] [--transpose-a] [--form=NAME]
                      [--k-slices=S[,S..]]
       matmul C = A·B (row-major) with gpuir's generated kernel and with
       cuBLAS (libcublas opened with dlopen; f32: cublasSgemm with FP32 math;
       tf32: f32 data, gpuir's `tf32` matmul against cublasGemmEx with
       CUBLAS_COMPUTE_32F_FAST_TF32; f16 and bf16: cublasGemmEx with f32
       accumulation and an output of the inputs' type, like gpuir's
       tensor-core kernel), on the
       same device buffers: CUDA-event timing of each launch after a warm-up,
       the median of R (default 30) launches, inputs rotated among copies so
       the L2 does not hold them, fresh random data; the two results are
       compared. Prints TFLOP/s of both and the ratio gpuir / cuBLAS time.
       Default shapes: the seed 5376x2048 · 2048x5376, then square 1024,
       2048, 4096, 8192. Without a GPU it runs a small shape on the emulator
       (64x64x64 for f32; 200x136x72 for the tensor-core kernels: not tile
       multiples; --m, --n, --k choose another, keep it small)
       against the interpreter, for correctness only, and says so.
       A matmul too small to fill the device (gpuir's split-k pass, e.g.
       --m=32 --n=4096 --k=4096) runs as two kernels, the K-sliced partial
       products and their sum with the epilogue: both are timed (and run
       alone on the emulator), and the output says split-K with its S
       (k_slices=S in the machine-readable line; 0 unsplit).
       --epilogue fuses C = act(A·B + bias) + residual into gpuir's kernel
       (any of bias, one activation, residual); cuBLAS still runs the
       matmul alone, so the ratio is what the fused epilogue costs on top of
       a plain GEMM, and the check applies the epilogue to cuBLAS's result
       on the host.
       f16 and bf16 take gpuir's default on the device: on an H100 or H200
       the wgmma kernel reads B as it is stored, [K, N] (one kernel; where
       a kernel transposes an operand first, both are timed and the output
       says "2 kernels: an operand transposed first").
       --wgmma (f16, bf16): B stored N x K, gpuir's matmul with transpose_b
       and `wgmma = true` (no transpose kernel) against cublasGemmEx on the
       same B (transposed). --no-wgmma (f16, bf16): `wgmma = false`, the
       mma.sync kernel (the default before 2026-11-25), B stored K x N.
       --form=NAME gives the matmul a kernel form by name (`form`, e.g.
       mma_sync.128x128x32.s3, wgmma.128x128x64.s6, plain.64x64x16; the
       target must run it, else lowering says why); lines say `form NAME`.
       --form=NAME,NAME,... (up to 8) times each form at each shape in one
       run (a process, cuBLAS loaded once: the candidates of a short GPU
       lease side by side), shape by shape, each line against its own
       cuBLAS timing; `default` in the list is configure's own choice. A
       wgmma form without --wgmma (f16, bf16: B stored K x N) reads B as
       it is, N-major, in the one kernel (as the default does), against
       --wgmma's B stored N x K. --transpose-a stores A as K x M (the
       matmul's transpose_a; cuBLAS reads the same A transposed): by
       default A is transposed by a kernel first; a wgmma form reads it
       M-major in the one kernel.
       --k-slices=S,S,... (up to 8, each 2 to 1024; `default`: as the
       split-k pass decides) splits the matmul in S along K as that pass
       writes it (`k_slices = S`, the partials' sum, the cast), each S
       with each form at each shape: the split counts a cost model would
       choose among, timed side by side (the sum's kernel too). A count the
       shape cannot take (a slice left empty) is an error on its line; the
       others run. Without a GPU and without --m, K is 64 S - 24.
   gpuir-bench bandwidth [--elements=N] [--repeat=R] [--rows=PAT[,PAT..]]
       Memory-bound kernels against a device-to-device copy of the bytes
       they must move (input read once, output written once): a fused chain
       of 8 elementwise ops and a row softmax over N f32 (default 64M, 256 MB),
       a transpose (alone, and with a gelu before and a mul after it), relu,
       sigmoid and x * 2 of one input of N f32 (three outputs, one kernel:
       elementwise siblings), gelu(a) * sigmoid(b) of N f32 (two chains a
       mul ties, one kernel), then a LayerNorm and an RMSNorm over 16384 x 4096 (f32 and bf16; one
       row kernel each, scale and shift as constants), Gemma's RMSNorm
       `norm(x) * (1 + w)` (bf16), a gated RMSNorm `norm(x) * w * silu(z)`
       and a cross-entropy against weighted targets (f32), 16384 x 4096
       (each one kernel with the chain beside its rows), a LayerNorm over
       2048 x 16384 and 512 x 65536 f32 (long rows: cached in shared
       memory, and streamed twice), the three sibling
       reductions of a 16384 x 4096 f32 matrix (column maxima, row sums,
       total: one kernel, one read), a BatchNorm over 16384 x 512, BatchNorms
       in training over 32 x 64 x 56 x 56 and 32 x 128 x 28 x 28 f32 (NCHW:
       one row kernel takes both statistics, a column group merges them)
       and 32 x 2048 x 7 x 7 (a block a channel for each statistic),
       an InstanceNorm over 16 x 256 x 64 x 64 f32 (one row kernel over
       [N, C, H*W]), GroupNorms(32) over 8 x 320 x 64 x 64 and
       1 x 512 x 64 x 64 f32 in torch's form (one row kernel over
       [N, G, C/G*H*W], the affine over [N, C, H, W] inside it), LayerNorms
       over the channels of 32 x 96 x 56 x 56 and 32 x 384 x 14 x 14 f32
       (ConvNeXt's LayerNorm2d: one column group), a softmax
       over the 21 channels of 16 x 21 x 256 x 256 f32 and a log-softmax
       over them (softmax.columns), means over the tokens of 16 x 2048 x 1024
       and over the channels of 16 x 256 x 64 x 64 f32
       (reduce.column_tiles), the mean of the squares of a 16384 x 4096
       f32 matrix (a total: row sums, then their total), kernels alone (device
       buffers allocated and filled once, copies left out), CUDA-event
       median of R replays. --rows=PAT,.. runs only the rows whose label
       holds one of the patterns, case ignored (--rows=gemma,gated: two
       rows of a short lease); none picked is an error listing the labels.
   gpuir-bench copy [--mb=N] [--chunk-mb=C] [--repeat=R]
       Host<->device copies of N MB (default 256): plain cuMemcpy from
       pageable memory, from pinned memory (the reference), and staged
       through two pinned chunks of C MB (default 8) with the host copy of one
       overlapping the DMA of the other; wall-clock medians.
   gpuir-bench compile FILE
       Time to a loaded program from text: cold (empty cache directory) and
       warm (the compiled module found on disk, no compiler run; median of
       9; in a fresh context, in one that made another program first, and
       in one that made the same program first: a second make in a process),
       on CUDA when there is a GPU, else on the
       emulator, each by phase (parse, passes, backend open, codegen, cache
       read and check, compile, module load); and NVRTC's own phases (front
       end, NVVM optimizer, ptxas: its --time option) for sm_90 and sm_80
       cubins (no GPU needed). NVRTC's cache is off (gpuir passes --no-cache).
   gpuir-bench launch [--kernels=N] [--repeat=R]
       Host cost per kernel of a program of N (default 100) chained 16x16
       matmuls, one kernel each: whole runs of gpuir_program_run divided by
       N, plain and with desc.graphs (a recorded graph replayed), against a
       host loop making the same number of raw launches of the same kernel
       and one synchronize (cuLaunchKernel on a GPU); and gpuir's own host
       work, with the device table swapped for one that does nothing.
       Wall-clock medians of R (default 30) runs.
   gpuir-bench passes [--ops=N,N,...] [--repeat=R] [--no-verify]
       The default pipeline on generated programs of N ops (default 1000,
       10000, 100000): blocks of matmul, bias, activation, row reduction and
       normalization on 16x16 tensors. Parse time, each pass's time (the
       verifier after each included, unless --no-verify), the total and the time per op; the
       ratio of the time per op to that of the smallest program shows
       whether the pipeline stays linear (1.0: linear). Best of R (default 3).
   gpuir-bench e2e [--small] [--repeat=R]
       End to end, where the arguments live: the seed matmul and a
       two-layer MLP (weights as parameters), each run four ways: host
       pageable arrays, host pinned arrays (gpuir_array_alloc_pinned),
       device buffers on a caller's stream, and that device run captured
       into a CUDA graph and replayed; against the kernels alone (the
       program's launches on device buffers, no copies) and the pinned-copy
       bound (its bytes in and out from pinned memory, plus the kernels).
       Wall-clock medians of R (default 20) complete runs; copy bytes per
       run from the program's stats. One line per mode: "bench e2e
       program= mode= ms= kernel_ms= ratio= h2d_bytes= d2h_bytes=". Without
       a GPU (or with --small) small shapes on the emulator, each mode
       checked against the interpreter; device-graph needs CUDA (ms=nan).
   Each figure is also printed as one machine-readable line starting "bench ".
   Options are read with getopt_long (tools/cli.h): `gpuir-bench SUB --help`
   prints a line per option; an unknown option or a number that is not one
   (--repeat=abc) is refused naming it, with status 2.
   --plot=FILE.png with any subcommand draws the ratios it printed as bars
   (gnuplot, when installed; else an error saying so), titled with the
   backend the times came from (GPU, emulator or host CPU). */
#define _POSIX_C_SOURCE 200809L
#define GPUIR_IMPLEMENTATION
#include "../gpuir.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* A subcommand's options: getopt_long over its own arguments (argv[0..argc)
   follow the subcommand's name in main's argv, which getopt takes as the
   program name). --help prints a line per flag of the subcommand. */
enum { B_M = 256, B_N, B_K, B_DTYPE, B_EPILOGUE, B_REPEAT, B_WGMMA, B_NO_WGMMA, B_TRANSPOSE_A, B_FORM, B_ELEMENTS, B_MB, B_CHUNK_MB, B_OPS,
       B_NO_VERIFY, B_KERNELS, B_SMALL, B_SEQ, B_KV_HEADS, B_HEAD_DIM, B_LAYOUT, B_ROWS, B_K_SLICES };

static int sub_next(int argc, char **argv, const char *tool, const cli_flag *flags, size_t n) {
    return cli_next(argc + 1, argv - 1, tool, "", flags, n);
}

/* --help of a subcommand, or an argument that is no option of it (2). */
static int sub_end(int c, int argc, char **argv, const char *tool, const char *usage, const cli_flag *flags,
                   size_t n) {
    if (c == CLI_HELP) return cli_help(usage, flags, n, NULL), -1;
    if (c == -1 && optind <= argc) {
        cli_err("%s: unexpected argument '%s' (see --help)\n", tool, argv[optind - 1]);
        return 2;
    }
    return 2;
}

/* A growable string for the generated programs (malloc'd, terminated). */
typedef struct strbuf { char *buf; size_t len, cap; } strbuf;

static void strbuf_appendf(strbuf *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = (t->len + (size_t)n + 1) * 2;
        char *bigger = (char *)realloc(t->buf, cap);
        if (!bigger) { cli_err("gpuir-bench: out of memory\n"); exit(1); }
        t->buf = bigger, t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* A whole file, malloc'd and terminated; NULL when it cannot be read. */
static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    strbuf t = {NULL, 0, 0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) strbuf_appendf(&t, "%.*s", (int)got, chunk);
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed) { free(t.buf); return NULL; }
    if (!t.buf) strbuf_appendf(&t, "%s", "");
    *len = t.len;
    return t.buf;
}

#define B_HELP {"help", no_argument, CLI_HELP, NULL, "print this help and exit"}
#define B_REPEAT_FLAG(what) {"repeat", required_argument, B_REPEAT, "R", what}

typedef int (*cublas_create_fn)(void **handle);
typedef int (*cublas_destroy_fn)(void *handle);
typedef int (*cublas_sgemm_fn)(void *handle, int ta, int tb, int m, int n, int k, const float *alpha,
                               const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc);
typedef int (*cublas_math_fn)(void *handle, int mode);
typedef int (*cublas_gemm_ex_fn)(void *handle, int ta, int tb, int m, int n, int k, const void *alpha, const void *a,
                                 int a_type, int lda, const void *b, int b_type, int ldb, const void *beta, void *c,
                                 int c_type, int ldc, int compute_type, int algo);

typedef struct cublas {
    void *lib, *handle;
    cublas_create_fn create;
    cublas_destroy_fn destroy;
    cublas_sgemm_fn sgemm;
    cublas_math_fn set_math_mode;
    cublas_gemm_ex_fn gemm_ex;
} cublas;

/* cuBLAS's names for what gpuir-bench passes to cublasGemmEx. */
enum {
    CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14,
    CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77, CUBLAS_GEMM_DEFAULT = -1
};

/* libcublas through dlopen; false (and why) when it is not there. */
static bool cublas_open(cublas *b, char *why, size_t size) {
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    memset(b, 0, sizeof *b);
    for (size_t i = 0; i < 3 && !b->lib; i++) b->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!b->lib) { snprintf(why, size, "no libcublas (%s)", dlerror()); return false; }
    void *s[5] = {dlsym(b->lib, "cublasCreate_v2"), dlsym(b->lib, "cublasDestroy_v2"), dlsym(b->lib, "cublasSgemm_v2"),
                  dlsym(b->lib, "cublasSetMathMode"), dlsym(b->lib, "cublasGemmEx")};
    memcpy(&b->create, &s[0], sizeof s[0]);
    memcpy(&b->destroy, &s[1], sizeof s[1]);
    memcpy(&b->sgemm, &s[2], sizeof s[2]);
    memcpy(&b->set_math_mode, &s[3], sizeof s[3]);
    memcpy(&b->gemm_ex, &s[4], sizeof s[4]);
    if (!s[0] || !s[1] || !s[2] || !s[3] || !s[4] || b->create(&b->handle) != 0) {
        snprintf(why, size, "libcublas has no usable cublasCreate_v2/cublasSgemm_v2/cublasGemmEx");
        dlclose(b->lib);
        return false;
    }
    b->set_math_mode(b->handle, 0);        /* CUBLAS_DEFAULT_MATH: FP32, no TF32 */
    return true;
}

static void cublas_close(cublas *b) {
    if (b->handle) b->destroy(b->handle);
    if (b->lib) dlclose(b->lib);
}

/* ---- --plot=FILE.png: the ratios a run printed, as bars (gnuplot) ---- */

typedef struct plot_bar {
    char label[64];
    double ratio;           /* gpuir / the reference, in time (or as the subcommand says) */
} plot_bar;

typedef struct plot_data {
    plot_bar bars[64];
    int n;
    const char *what;       /* the y axis */
    char from[96];          /* where the times came from (the title says) */
} plot_data;

static plot_data plot;      /* this tool's one run: filled by the subcommand, drawn by main */

static void plot_add(const char *what, const char *label, double ratio) {
    if (plot.n == 64) return;
    plot.what = what;
    snprintf(plot.bars[plot.n].label, sizeof plot.bars[0].label, "%s", label);
    plot.bars[plot.n++].ratio = ratio;
}

/* Where this run's times came from: "cuda (GPU)", "emu (CPU emulator: not
   GPU times)", the host CPU; --plot's title says it. */
static void plot_from(const char *backend) {
    snprintf(plot.from, sizeof plot.from, "%s", backend);
}

/* Draws the bars into png with gnuplot; 0, or 1 with a message. */
static int plot_draw(const char *png, const char *title) {
    if (!plot.n) { cli_err("gpuir-bench: --plot: this run measured no ratio to draw\n"); return 1; }
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        cli_err("gpuir-bench: --plot needs gnuplot (Debian: apt-get install gnuplot-nox)\n");
        return 1;
    }
    FILE *g = popen("gnuplot", "w");
    if (!g) { cli_err("gpuir-bench: --plot: cannot start gnuplot\n"); return 1; }
    fprintf(g, "set terminal pngcairo size 900,500\nset output '%s'\nset title 'gpuir-bench %s: times from %s'\n"
               "set ylabel '%s'\n"
               "set style fill solid 0.6\nset boxwidth 0.7\nset yrange [0:*]\nset xtics rotate by -30\n"
               "set grid ytics\nplot '-' using 0:2:xtic(1) with boxes notitle, 1 with lines lt 2 notitle\n",
            png, title, plot.from[0] ? plot.from : "an unrecorded backend", plot.what);
    for (int i = 0; i < plot.n; i++) fprintf(g, "\"%s\" %g\n", plot.bars[i].label, plot.bars[i].ratio);
    fprintf(g, "e\n");
    int rc = pclose(g);
    if (rc != 0) cli_err("gpuir-bench: --plot: gnuplot failed (exit %d)\n", rc);
    return rc != 0;
}

/* bandwidth --rows=PAT[,PAT..]: only the rows whose label holds one of
   the patterns (case ignored), so that a short GPU lease measures the rows
   it is for; every row when patterns is NULL. The tool's one run, as plot:
   the labels of the rows left out are kept to name the choices when no
   row was picked. */
static struct rows_pick {
    const char *patterns;
    int picked;
    int n_left;
    char left[96][64];
} rows_pick;

/* Whether label holds pattern's first n bytes, case ignored. */
static bool label_holds(const char *label, const char *pattern, size_t n) {
    for (; *label; label++) {
        size_t i = 0;
        while (i < n && label[i] && tolower((unsigned char)label[i]) == tolower((unsigned char)pattern[i])) i++;
        if (i == n) return true;
    }
    return false;
}

/* Whether the row named label runs (counted, or its label kept). */
static bool row_picked(const char *label) {
    if (!rows_pick.patterns) return true;
    for (const char *p = rows_pick.patterns; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n && label_holds(label, p, n)) return rows_pick.picked++, true;
        p += n + (comma != NULL);
    }
    if (rows_pick.n_left < 96) snprintf(rows_pick.left[rows_pick.n_left++], sizeof rows_pick.left[0], "%s", label);
    return false;
}

/* 0, or 2 with the rows' labels when --rows picked none. */
static int rows_pick_end(const char *tool) {
    if (!rows_pick.patterns || rows_pick.picked) return 0;
    cli_err("%s: --rows=%s: no row's label holds any of these; the rows are:\n", tool, rows_pick.patterns);
    for (int i = 0; i < rows_pick.n_left; i++) cli_err("  %s\n", rows_pick.left[i]);
    return 2;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* What --epilogue fuses after the matmul: C = act(A·B + bias) + residual. */
typedef struct mm_epilogue {
    bool bias;              /* + a row vector of N */
    const char *act;        /* "relu", "gelu", "silu" or NULL */
    bool residual;          /* + an M x N matrix */
} mm_epilogue;

typedef struct mm_case {
    int m, n, k;
    gpuir_dtype dtype;
    bool tf32;              /* f32 data, TF32 tensor cores */
    mm_epilogue epi;
    bool wgmma;             /* B stored N x K, the `wgmma` kernel (f16, bf16) */
    bool no_wgmma;          /* `wgmma = false`: the mma.sync kernel on sm_90 too (f16, bf16) */
    const char *form;       /* --form: the matmul's `form` (a kernel form by name), or NULL */
    bool ta;                /* --transpose-a: A stored K x M, the matmul's transpose_a */
    int k_slices;           /* --k-slices: the matmul split in S (`k_slices = S`, then its sum); 0: as
                               the split-k pass decides */
} mm_case;

/* The precision and the layouts, as lines name them: "bf16", "bf16-wgmma"
   (B stored N x K), "bf16-ta" (A stored K x M), ... */
static const char *mm_precision(const mm_case *c, char *buf, size_t size) {
    const char *p = c->wgmma ? (c->dtype == GPUIR_BF16 ? "bf16-wgmma" : "f16-wgmma")
                  : c->no_wgmma ? (c->dtype == GPUIR_BF16 ? "bf16-mma" : "f16-mma")
                  : c->tf32 ? "tf32" : gpuir_dtype_name(c->dtype);
    snprintf(buf, size, "%s%s", p, c->ta ? "-ta" : "");
    return buf;
}

/* The epilogue as --epilogue spells it ("none" without one). */
static const char *mm_epilogue_name(const mm_epilogue *e, char *buf, size_t size) {
    snprintf(buf, size, "%s%s%s%s%s", e->bias ? "bias" : "", e->bias && e->act ? "," : "", e->act ? e->act : "",
             (e->bias || e->act) && e->residual ? "," : "", e->residual ? "residual" : "");
    if (!buf[0]) snprintf(buf, size, "none");
    return buf;
}

/* Parses --epilogue's list; false on a word it does not know or two activations. */
static bool mm_epilogue_parse(const char *list, mm_epilogue *e) {
    static const char *const acts[] = {"relu", "gelu", "silu"};
    memset(e, 0, sizeof *e);
    if (!strcmp(list, "none")) return true;
    while (*list) {
        size_t len = strcspn(list, ",");
        bool known = false;
        if (len == 4 && !strncmp(list, "bias", 4)) e->bias = known = true;
        else if (len == 8 && !strncmp(list, "residual", 8)) e->residual = known = true;
        for (int i = 0; i < 3 && !known; i++)
            if (len == 4 && !strncmp(list, acts[i], 4) && !e->act) e->act = acts[i], known = true;
        if (!known) return false;
        list += len + (list[len] == ',');
    }
    return true;
}

/* The epilogue on the host, over cuBLAS's result y (bias and res as the
   kernel got them): what gpuir's fused kernel should have computed. */
static void mm_epilogue_apply(const mm_case *c, gpuir_array *y, const gpuir_array *bias, const gpuir_array *res) {
    for (size_t i = 0; i < gpuir_array_count(y); i++) {
        double v = gpuir_array_get(y, i);
        if (c->epi.bias) v += gpuir_array_get(bias, i % (size_t)c->n);
        if (c->epi.act && !strcmp(c->epi.act, "relu")) v = v > 0 ? v : 0;
        else if (c->epi.act && !strcmp(c->epi.act, "gelu")) v = 0.5 * v * (1.0 + erf(v * 0.70710678118654752));
        else if (c->epi.act) v = v / (1.0 + exp(-v));
        if (c->epi.residual) v += gpuir_array_get(res, i);
        gpuir_array_set(y, i, v);
    }
}

/* cublasGemmEx's type of a dtype. */
static int cuda_type(gpuir_dtype d) { return d == GPUIR_F16 ? CUDA_R_16F : d == GPUIR_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

/* The gpuir kernels' launches, in program order (the internal API's plan
   of the program): one for a matmul, two when it is split (split-K: the
   partial products into a scratch buffer, then their sum with the
   epilogue), or more when stage-matmul staged its operands (a transpose,
   TF32 rounding) into temporaries first. Each argument of step s is the
   device copy of a parameter of @mm (role[s][j] >= 0), the output (-1) or
   a temporary (-2): at[s][j] bytes into one scratch allocation that holds
   them all. */
#define MM_MAX_STEPS 4
#define MM_SCRATCH_ALIGN 256
typedef struct mm_launch {
    int n;
    gpuir__internal_launch step[MM_MAX_STEPS];
    int role[MM_MAX_STEPS][GPUIR_MAX_OPERANDS];
    size_t at[MM_MAX_STEPS][GPUIR_MAX_OPERANDS];
    size_t scratch_bytes;   /* the temporaries', each aligned; 0 without any */
    long long k_slices;     /* S of a split matmul, else 0 */
} mm_launch;

static bool find_mm_launch(gpuir_program *p, mm_launch *L) {
    memset(L, 0, sizeof *L);
    gpuir__internal_plan plan;
    gpuir__internal_plan_make(p, NULL, &plan);
    int temp[MM_MAX_STEPS * 2];             /* the plan's buffers given a place in the scratch, */
    size_t temp_at[MM_MAX_STEPS * 2];       /* and where */
    int n_temps = 0;
    bool fits = stbds_arrlenu(plan.launches) <= MM_MAX_STEPS;
    for (size_t i = 0; i < stbds_arrlenu(plan.launches) && fits; i++, L->n++) {
        const gpuir__internal_launch *S = &plan.launches[i];
        L->step[L->n] = *S;
        for (unsigned j = 0; j < S->n_args && fits; j++) {
            const gpuir__internal_buffer *b = S->arg[j] >= 0 ? &plan.buffers[S->arg[j]] : NULL;
            int role = b ? b->from_param : -1, t = 0;
            if (b && role < 0 && !b->to_host) {
                role = -2;
                while (t < n_temps && temp[t] != S->arg[j]) t++;
                if (t == n_temps && (fits = n_temps < MM_MAX_STEPS * 2)) {
                    temp[n_temps] = S->arg[j];
                    temp_at[n_temps++] = L->scratch_bytes;
                    L->scratch_bytes += (b->bytes + MM_SCRATCH_ALIGN - 1) / MM_SCRATCH_ALIGN * MM_SCRATCH_ALIGN;
                }
                if (fits) L->at[L->n][j] = temp_at[t];
            }
            L->role[L->n][j] = role;
        }
        if (S->k_slices) L->k_slices = S->k_slices;
    }
    gpuir__internal_plan_free(&plan);
    return fits && L->n > 0;
}

/* Launches the steps of L through p's table: `in` are @mm's parameters'
   device copies, out the output, scratch the partials; the wgmma kernel
   also takes its tensor maps after its buffers. */
static int mm_run_steps(gpuir_program *p, const mm_launch *L, const gpuir__dptr *in, gpuir__dptr out,
                        gpuir__dptr scratch) {
    const gpuir__drv *d = gpuir__internal_table(p);
    int rc = 0;
    for (int s = 0; s < L->n && !rc; s++) {
        const gpuir__internal_launch *S = &L->step[s];
        gpuir__dptr args[GPUIR_MAX_OPERANDS];
        void *params[GPUIR_MAX_OPERANDS + 2];
        gpuir__tmap maps[2];
        for (unsigned j = 0; j < S->n_args; j++) {
            int r = L->role[s][j];
            args[j] = r == -1 ? out : r == -2 ? scratch + L->at[s][j] : in[r];
            params[j] = &args[j];
        }
        int n_maps = gpuir__internal_tensor_maps(p, S, args, maps);
        if (n_maps < 0) return 1;
        for (int i = 0; i < n_maps; i++) params[S->n_args + (unsigned)i] = &maps[i];
        rc = d->launch(d->self, S->fn, S->grid, S->block, S->smem, params, S->n_args + (unsigned)n_maps, 0);
    }
    return rc;
}

/* " (split-K: S slices, 2 kernels)" for a split matmul, " (2 kernels: an
   operand transposed first)" for one stage-matmul staged (" (3 kernels:
   operands staged first)" for more), else "". */
static const char *mm_split_text(const mm_launch *L, char *buf, size_t size) {
    if (!L->k_slices && L->n < 2) return "";
    if (!L->k_slices) snprintf(buf, size, " (%d kernels: %s first)", L->n,
                               L->n == 2 ? "an operand transposed" : "operands staged");
    else snprintf(buf, size, " (split-K: %lld slices, %d kernels)", L->k_slices, L->n);
    return buf;
}

/* Median milliseconds of `repeat` launches of `which` (0 gpuir, 1 cuBLAS),
   rotating among `sets` input copies of A and B; the epilogue's inputs
   (bias, residual: parameters 2 and on) are extra[0], extra[1]. */
static float time_launches(gpuir_program *p, const gpuir__internal_cuda *C, cublas *cb, int which, const mm_case *c,
                           gpuir__dptr *a, gpuir__dptr *b, const gpuir__dptr *extra, gpuir__dptr out,
                           gpuir__dptr scratch, int sets, int repeat, const mm_launch *L) {
    float *ms = (float *)calloc((size_t)repeat, sizeof *ms);
    gpuir__CUevent e0, e1;
    C->cu->cuEventCreate(&e0, 0);
    C->cu->cuEventCreate(&e1, 0);
    const float one = 1.0f, zero = 0.0f;
    int rc = 0;
    for (int i = -3; i < repeat && rc == 0; i++) {   /* three warm-up launches */
        int s = (i + 3) % sets;
        gpuir__dptr in[4] = {a[s], b[s], extra[0], extra[1]};
        C->cu->cuEventRecord(e0, NULL);
        if (which == 0) rc = mm_run_steps(p, L, in, out, scratch);     /* both kernels when split */
        else if (c->dtype == GPUIR_F32 && !c->tf32)
            rc = cb->sgemm(cb->handle, 0, c->ta ? 1 : 0, c->n, c->m, c->k, &one, (const float *)(uintptr_t)b[s], c->n,
                           (const float *)(uintptr_t)a[s], c->ta ? c->m : c->k, &zero, (float *)(uintptr_t)out, c->n);
        else   /* row-major C = A B is column-major C^T = B^T A^T (B N x K, A K x M: their storage transposed) */
            rc = cb->gemm_ex(cb->handle, c->wgmma ? 1 : 0, c->ta ? 1 : 0, c->n, c->m, c->k, &one, (const void *)(uintptr_t)b[s],
                             cuda_type(c->dtype), c->wgmma ? c->k : c->n, (const void *)(uintptr_t)a[s], cuda_type(c->dtype),
                             c->ta ? c->m : c->k, &zero, (void *)(uintptr_t)out,
                             cuda_type(c->dtype), c->n, c->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT);
        C->cu->cuEventRecord(e1, NULL);
        C->cu->cuEventSynchronize(e1);
        if (i >= 0) C->cu->cuEventElapsedTime(&ms[i], e0, e1);
    }
    C->cu->cuEventDestroy(e0);
    C->cu->cuEventDestroy(e1);
    qsort(ms, (size_t)repeat, sizeof *ms, cmp_float);
    float med = rc ? (float)NAN : ms[repeat / 2];
    if (rc)
        cli_err("gpuir-bench: %s failed with status %d\n",
                !which ? "the gpuir launch" : c->dtype == GPUIR_F32 && !c->tf32 ? "cublasSgemm" : "cublasGemmEx", rc);
    free(ms);
    return med;
}

/* The matmul's attributes as text (" {...}", or "" without any). */
static const char *mm_attrs(const mm_case *c, char *buf, size_t size) {
    char form[96] = "";
    if (c->form) snprintf(form, sizeof form, "form = \"%s\"", c->form);
    char flag[96];
    snprintf(flag, sizeof flag, "%s%s%s", c->ta ? "transpose_a = true" : "",
             c->ta && (c->tf32 || c->wgmma || c->no_wgmma) ? ", " : "",
             c->tf32 ? "tf32 = true" : c->wgmma ? "transpose_b = true, wgmma = true" : c->no_wgmma ? "wgmma = false" : "");
    char slices[32] = "";
    if (c->k_slices) snprintf(slices, sizeof slices, "k_slices = %d", c->k_slices);
    if (!*flag && !*form && !*slices) return "";
    snprintf(buf, size, " {%s%s%s%s%s}", flag, *flag && *form ? ", " : "", form,
             (*flag || *form) && *slices ? ", " : "", slices);
    return buf;
}

/* @mm(a, b[, bias][, res]): the matmul and its epilogue, as text; with
   --k-slices, the matmul's S partials (f32) summed, then cast to the
   dtype, as the split-k pass writes it. */
static gpuir_module *mm_module(gpuir_ctx *ctx, const mm_case *c) {
    char a[64], b[64], o[64], v[64], attrs[256], parts[80], sum[64];
    strbuf text = {NULL, 0, 0};
    const char *dt = gpuir_dtype_name(c->dtype);
    snprintf(a, sizeof a, "tensor<%dx%dx%s>", c->ta ? c->k : c->m, c->ta ? c->m : c->k, dt);
    snprintf(b, sizeof b, "tensor<%dx%dx%s>", c->wgmma ? c->n : c->k, c->wgmma ? c->k : c->n, dt);
    snprintf(o, sizeof o, "tensor<%dx%dx%s>", c->m, c->n, dt);
    snprintf(v, sizeof v, "tensor<%dx%s>", c->n, dt);
    snprintf(parts, sizeof parts, "tensor<%dx%dx%dxf32>", c->k_slices, c->m, c->n);
    snprintf(sum, sizeof sum, "tensor<%dx%dxf32>", c->m, c->n);
    strbuf_appendf(&text, "func.func @mm(%%a: %s, %%b: %s%s%s%s%s) -> %s {\n"
                     "  %%%s = matmul %%a, %%b%s : (%s, %s) -> %s\n", a, b, c->epi.bias ? ", %bias: " : "",
                     c->epi.bias ? v : "", c->epi.residual ? ", %res: " : "", c->epi.residual ? o : "", o,
                     c->k_slices ? "p" : "c", mm_attrs(c, attrs, sizeof attrs), a, b, c->k_slices ? parts : o);
    if (c->k_slices && c->dtype == GPUIR_F32)
        strbuf_appendf(&text, "  %%c = reduce_sum %%p {axes = [0]} : (%s) -> %s\n", parts, o);
    else if (c->k_slices)
        strbuf_appendf(&text, "  %%p32 = reduce_sum %%p {axes = [0]} : (%s) -> %s\n"
                              "  %%c = cast %%p32 : (%s) -> %s\n", parts, sum, sum, o);
    const char *last = "c";
    if (c->epi.bias)
        strbuf_appendf(&text, "  %%s = add %%%s, %%bias : (%s, %s) -> %s\n", last, o, v, o), last = "s";
    if (c->epi.act)
        strbuf_appendf(&text, "  %%g = %s %%%s : (%s) -> %s\n", c->epi.act, last, o, o), last = "g";
    if (c->epi.residual)
        strbuf_appendf(&text, "  %%r = add %%%s, %%res : (%s, %s) -> %s\n", last, o, o, o), last = "r";
    strbuf_appendf(&text, "  return %%%s : %s\n}\n", last, o);
    gpuir_module *m = gpuir_module_parse(ctx, text.buf, text.len, "matmul");
    free(text.buf);
    return m;
}

/* A small CUDA program, to reach the driver through (NULL without a GPU);
   *d is left asking for CUDA. */
static gpuir_program *cuda_probe(gpuir_ctx *ctx, gpuir_program_desc *d) {
    mm_case probe = {64, 64, 64, GPUIR_F32, false, {false, NULL, false}, false, false, NULL, false, 0};
    memset(d, 0, sizeof *d);
    d->backend = GPUIR_BACKEND_CUDA;
    return gpuir_program_make(mm_module(ctx, &probe), d);
}

/* ||x - y|| / ||y|| over two arrays of one shape. */
static double rel_error(const gpuir_array *x, const gpuir_array *y) {
    double d = 0, r = 0;
    for (size_t i = 0; i < gpuir_array_count(y); i++) {
        double u = gpuir_array_get(x, i), v = gpuir_array_get(y, i);
        d += (u - v) * (u - v);
        r += v * v;
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

/* The relative error two implementations may differ by: both accumulate in
   f32 (in different orders); f16 and bf16 outputs are rounded once more,
   and cuBLAS may round TF32 operands otherwise than gpuir (to nearest). */
static double rel_error_bound(const mm_case *c) {
    return c->dtype == GPUIR_F16 ? 2e-3 : c->dtype == GPUIR_BF16 ? 1.6e-2 : c->tf32 ? 5e-3 : 1e-4;
}

/* One shape on the GPU: both kernels, timed and compared. */
static int bench_mm_cuda(gpuir_program *p, cublas *cb, const mm_case *c, int repeat) {
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
    mm_launch L;
    if (!find_mm_launch(p, &L)) { cli_err("gpuir-bench: no launch\n"); return 1; }
    size_t es = gpuir_dtype_size(c->dtype), na = (size_t)c->m * c->k, nb = (size_t)c->k * c->n;
    int64_t nc = (int64_t)c->m * c->n;
    size_t per_set = (na + nb) * es;
    int sets = (int)((200u << 20) / per_set) + 1;        /* > 2x the L2 in flight */
    if (sets > 8) sets = 8;
    if (sets < 2) sets = 2;
    gpuir__dptr a[8] = {0}, b[8] = {0}, out = 0;
    int rc = 0;                                          /* the first failing driver call's */
    gpuir_array host = {c->dtype, 1, {(int64_t)(na > nb ? na : nb)}, malloc((na > nb ? na : nb) * es)};
    gpuir_array r0 = {c->dtype, 1, {nc}, malloc((size_t)nc * es)}, r1 = {c->dtype, 1, {nc}, malloc((size_t)nc * es)};
    C->cu->cuCtxPushCurrent(C->context);
    uint64_t seed = 12345;
    for (int s = 0; s < sets && !rc; s++) {
        rc = C->cu->cuMemAlloc(&a[s], na * es);
        if (!rc) rc = C->cu->cuMemAlloc(&b[s], nb * es);
        host.dims[0] = (int64_t)na;
        gpuir_array_fill_random(&host, seed++);
        if (!rc) rc = C->cu->cuMemcpyHtoD(a[s], host.data, na * es);
        host.dims[0] = (int64_t)nb;
        gpuir_array_fill_random(&host, seed++);
        if (!rc) rc = C->cu->cuMemcpyHtoD(b[s], host.data, nb * es);
    }
    /* the epilogue's inputs, once: bias (N), then the residual (M x N) */
    gpuir_array bias = {c->dtype, 1, {c->n}, malloc((size_t)c->n * es)}, res = {c->dtype, 1, {nc}, malloc((size_t)nc * es)};
    gpuir__dptr extra[2] = {0, 0};
    int n_extra = 0;
    if (c->epi.bias && !rc) {
        gpuir_array_fill_random(&bias, seed++);
        rc = C->cu->cuMemAlloc(&extra[n_extra], (size_t)c->n * es);
        if (!rc) rc = C->cu->cuMemcpyHtoD(extra[n_extra++], bias.data, (size_t)c->n * es);
    }
    if (c->epi.residual && !rc) {
        gpuir_array_fill_random(&res, seed++);
        rc = C->cu->cuMemAlloc(&extra[n_extra], (size_t)nc * es);
        if (!rc) rc = C->cu->cuMemcpyHtoD(extra[n_extra++], res.data, (size_t)nc * es);
    }
    if (!rc) rc = C->cu->cuMemAlloc(&out, (size_t)nc * es);
    gpuir__dptr scratch = 0;
    if (!rc && L.scratch_bytes) rc = C->cu->cuMemAlloc(&scratch, L.scratch_bytes);
    if (rc) {
        cli_err("gpuir-bench: device memory for %d x %d x %d (%d input sets): CUDA error %d\n", c->m, c->n,
                c->k, sets, rc);
        for (int s = 0; s < sets; s++) {
            if (a[s]) C->cu->cuMemFree(a[s]);
            if (b[s]) C->cu->cuMemFree(b[s]);
        }
        for (int i = 0; i < 2; i++)
            if (extra[i]) C->cu->cuMemFree(extra[i]);
        if (out) C->cu->cuMemFree(out);
        gpuir__CUcontext popped;
        C->cu->cuCtxPopCurrent(&popped);
        free(host.data); free(r0.data); free(r1.data); free(bias.data); free(res.data);
        return 1;
    }
    float tg = time_launches(p, C, cb, 0, c, a, b, extra, out, scratch, sets, repeat, &L);
    C->cu->cuMemsetD8(out, 0xff, (size_t)nc * es);
    time_launches(p, C, cb, 0, c, a, b, extra, out, scratch, 1, 1, &L);
    C->cu->cuMemcpyDtoH(r0.data, out, (size_t)nc * es);
    float tc = cb ? time_launches(p, C, cb, 1, c, a, b, extra, out, scratch, sets, repeat, &L) : 0;
    double err = 0;
    if (cb) {
        C->cu->cuMemsetD8(out, 0xff, (size_t)nc * es);
        time_launches(p, C, cb, 1, c, a, b, extra, out, scratch, 1, 1, &L);
        C->cu->cuMemcpyDtoH(r1.data, out, (size_t)nc * es);
        mm_epilogue_apply(c, &r1, &bias, &res);
        err = rel_error(&r0, &r1);
    }
    for (int s = 0; s < sets; s++) { C->cu->cuMemFree(a[s]); C->cu->cuMemFree(b[s]); }
    for (int i = 0; i < n_extra; i++) C->cu->cuMemFree(extra[i]);
    C->cu->cuMemFree(out);
    if (scratch) C->cu->cuMemFree(scratch);
    gpuir__CUcontext popped;
    C->cu->cuCtxPopCurrent(&popped);
    double flops = 2.0 * c->m * c->n * c->k;
    char prec[32];
    const char *dt = mm_precision(c, prec, sizeof prec);
    char epi[64];
    mm_epilogue_name(&c->epi, epi, sizeof epi);
    printf("%-4s %5d x %5d x %5d  gpuir %8.3f ms %7.2f TFLOP/s", dt, c->m, c->n, c->k, tg, flops / tg / 1e9);
    if (cb) printf("  cuBLAS %8.3f ms %7.2f TFLOP/s  ratio %6.2f  rel.err %.1e", tc, flops / tc / 1e9, tg / tc, err);
    char split[64];
    printf("%s%s%s%s%s\n", strcmp(epi, "none") ? "  epilogue " : "", strcmp(epi, "none") ? epi : "",
           mm_split_text(&L, split, sizeof split), c->form ? "  form " : "", c->form ? c->form : "");
    printf("bench matmul %s m=%d n=%d k=%d epilogue=%s gpuir_ms=%.4f cublas_ms=%.4f ratio=%.3f rel_err=%.2e k_slices=%lld "
           "form=%s kernels=%d\n", dt, c->m, c->n, c->k, epi, tg, tc, cb && tc > 0 ? tg / tc : 0.0, err, L.k_slices,
           c->form ? c->form : "default", L.n);
    char label[64];
    snprintf(label, sizeof label, "%s %dx%dx%d", dt, c->m, c->n, c->k);
    if (cb && tc > 0) plot_add("gpuir time / cuBLAS time", label, tg / tc);
    plot_from("cuda (GPU, CUDA events)");
    free(host.data); free(r0.data); free(r1.data); free(bias.data); free(res.data);
    return cb && !(err < rel_error_bound(c)) ? 1 : 0;
}

/* The kernel alone through p's device table, its arguments placed as
   find_mm_launch says, as the GPU path launches it; the result in *got
   (allocated like in[0]'s dtype, M x N). Nonzero: a table call failed. */
static int mm_launch_alone(gpuir_program *p, const mm_case *c, const gpuir_array *in, int n_in, gpuir_array *got) {
    mm_launch L;
    if (!find_mm_launch(p, &L)) return -1;
    gpuir__drv *d = &p->drv;
    gpuir__dptr dev[4] = {0, 0, 0, 0}, out = 0, scratch = 0;
    size_t out_bytes = gpuir_array_count(got) * gpuir_dtype_size(c->dtype);
    int rc = d->enter(d->self);
    for (int i = 0; i < n_in && !rc; i++) {
        size_t bytes = gpuir_array_count(&in[i]) * gpuir_dtype_size(c->dtype);
        rc = d->mem_alloc(d->self, &dev[i], bytes, 0);
        if (!rc) rc = d->copy_htod(d->self, dev[i], in[i].data, bytes, 0);
    }
    if (!rc) rc = d->mem_alloc(d->self, &out, out_bytes, 0);
    if (!rc && L.scratch_bytes) rc = d->mem_alloc(d->self, &scratch, L.scratch_bytes, 0);
    if (!rc) rc = mm_run_steps(p, &L, dev, out, scratch);
    if (!rc) rc = d->copy_dtoh(d->self, got->data, out, out_bytes, 0);
    if (!rc) rc = d->synchronize(d->self);
    for (int i = 0; i < n_in; i++)
        if (dev[i]) d->mem_free(d->self, dev[i], 0);
    if (out) d->mem_free(d->self, out, 0);
    if (scratch) d->mem_free(d->self, scratch, 0);
    d->synchronize(d->self);
    d->leave(d->self);
    return rc;
}

/* The emulator's result against the interpreter's: element by element
   within the backend's tolerance, or else, for a long K (each output a sum
   of K f32 products: f32 accumulation drifts from the interpreter's double
   by about sqrt(K) units in the last place), within the norm-wise bound
   the GPU path holds gpuir and cuBLAS to (rel_error_bound). */
static gpuir_result mm_emu_compare(gpuir_ctx *ctx, const mm_case *c, const gpuir_array *got, const gpuir_array *want,
                                   double rtol, double atol, double *normwise) {
    gpuir_result r = gpuir_array_compare(ctx, got, want, rtol, atol);
    double e = r == GPUIR_ERR_MISMATCH && c->k >= 1024 ? rel_error(got, want) : 1.0;
    if (!(e < rel_error_bound(c))) return r;
    gpuir_ctx_clear_error(ctx);
    if (e > *normwise) *normwise = e;           /* the largest over the checks, for the line */
    return GPUIR_OK;
}

/* Without a GPU: the emulator at a small size, against the interpreter:
   the program run, then its kernel launched alone as the GPU path does.
   c's shape when `sized` (--m, --n, --k: keep them small, the emulator is
   slow), else 64 x 64 x 64 for f32, 200 x 136 x 72 for the tensor cores
   (not tile multiples). */
static int bench_mm_emu(mm_case c, bool sized) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_dtype dtype = c.dtype;
    bool wgmma = c.wgmma;
    const char *form = c.form;
    if (!sized) c.m = c.n = c.k = 64;
    if (!sized && (dtype != GPUIR_F32 || c.tf32)) c.m = 200, c.n = 136, c.k = 72;
    if (!sized && c.k_slices) c.k = 64 * c.k_slices - 24;    /* S slices of 64, the last of 40 */
    gpuir_module *ref = mm_module(ctx, &c), *m = mm_module(ctx, &c);
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_EMU;
    gpuir_program *p = gpuir_program_make(m, &d);
    gpuir_array in[4], want, got;
    memset(in, 0, sizeof in);
    memset(&want, 0, sizeof want);
    memset(&got, 0, sizeof got);
    int64_t dims[4][2] = {{c.ta ? c.k : c.m, c.ta ? c.m : c.k}, {wgmma ? c.n : c.k, wgmma ? c.k : c.n}, {c.n, 0}, {c.m, c.n}};
    int n_in = 0;
    for (int i = 0; i < 4; i++) {       /* a, b, then the bias and residual the epilogue takes */
        if ((i == 2 && !c.epi.bias) || (i == 3 && !c.epi.residual)) continue;
        gpuir_array_alloc(ctx, &in[n_in], dtype, i == 2 ? 1 : 2, dims[i]);
        gpuir_array_fill_random(&in[n_in], (uint64_t)i + 1);
        n_in++;
    }
    double rtol, atol;
    gpuir_backend_tolerance(GPUIR_BACKEND_EMU, dtype, &rtol, &atol);
    gpuir_result r = gpuir_ref_run(ref, "mm", n_in, in, 1, &want);
    if (!r && p) r = gpuir_program_run(p, "mm", n_in, in, 1, &got);
    double normwise = 0;                        /* > 0: a check passed norm-wise only (mm_emu_compare) */
    if (!r && p) r = mm_emu_compare(ctx, &c, &got, &want, rtol, atol, &normwise);
    int launch_rc = 0;
    if (!r && p) {
        memset(got.data, 0xff, gpuir_array_count(&got) * gpuir_dtype_size(dtype));
        launch_rc = mm_launch_alone(p, &c, in, n_in, &got);
        if (!launch_rc) r = mm_emu_compare(ctx, &c, &got, &want, rtol, atol, &normwise);
    }
    char epi_name[64], split[64], prec[32];
    mm_launch L;
    if (!p || !find_mm_launch(p, &L)) memset(&L, 0, sizeof L);
    char within[96] = "";
    if (normwise > 0)
        snprintf(within, sizeof within, " (norm-wise: rel. err. %.1e, bound %.0e, as the GPU path)", normwise,
                 rel_error_bound(&c));
    printf("emu %s%s%s %d x %d x %d, epilogue %s: %s%s%s (correctness only: the emulator's timings are not GPU timings)\n",
           mm_precision(&c, prec, sizeof prec), form ? " form " : "", form ? form : "", c.m, c.n, c.k, mm_epilogue_name(&c.epi, epi_name, sizeof epi_name),
           !p || r ? gpuir_ctx_error(ctx) : launch_rc ? "the kernel launched alone failed"
                                                  : "matches the interpreter (run, and kernel launched alone)",
           !p || r || launch_rc ? "" : within, mm_split_text(&L, split, sizeof split));
    int rc = !p || r || launch_rc;
    for (int i = 0; i < n_in; i++) gpuir_array_release(&in[i]);
    gpuir_array_release(&want);
    gpuir_array_release(&got);
    gpuir_ctx_destroy(ctx);
    return rc;
}

/* --form's list: up to MM_MAX_FORMS names split at commas into buf (each
   NUL-ended there), `default` as NULL (configure's choice); none: one
   NULL. The count, or -1 for an empty name or too many. */
#define MM_MAX_FORMS 8
static int mm_form_list(const char *arg, char *buf, size_t size, const char **forms) {
    if (!arg) { forms[0] = NULL; return 1; }
    if (strlen(arg) >= size) return -1;
    memcpy(buf, arg, strlen(arg) + 1);
    int n = 0;
    for (char *name = buf, *comma; name; name = comma ? comma + 1 : NULL) {
        comma = strchr(name, ',');
        if (comma) *comma = '\0';
        if (!*name || n == MM_MAX_FORMS) return -1;
        forms[n++] = strcmp(name, "default") ? name : NULL;
    }
    return n;
}

/* --k-slices' list: up to MM_MAX_FORMS counts, each 2 to 1024, or
   `default` (0: as the split-k pass decides), split as --form's list is
   (mm_form_list); none: one 0. The count, or -1 for anything else. */
static int mm_slices_list(const char *arg, int *slices) {
    char buf[512];
    const char *names[MM_MAX_FORMS];
    int n = mm_form_list(arg, buf, sizeof buf, names);
    for (int i = 0; i < n; i++) {
        char *end;
        long v = names[i] ? strtol(names[i], &end, 10) : 0;
        if (names[i] && (*end || !isdigit((unsigned char)names[i][0]) || v < 2 || v > 1024)) return -1;
        slices[i] = (int)v;
    }
    return n;
}

static int bench_matmul(int argc, char **argv) {
    static const int shapes[5][3] = {{5376, 5376, 2048}, {1024, 1024, 1024}, {2048, 2048, 2048},
                                     {4096, 4096, 4096}, {8192, 8192, 8192}};
    int n_cases = 5, repeat = 30, m = 0, n = 0, k = 0;
    gpuir_dtype dtype = GPUIR_F32;
    bool tf32 = false, wgmma = false, no_wgmma = false, ta = false;
    const char *form = NULL, *slices_arg = NULL;
    mm_epilogue epi = {false, NULL, false};
    static const cli_flag flags[] = {
        {"m", required_argument, B_M, "M", "rows of A and C (with --n and --k: one shape)"},
        {"n", required_argument, B_N, "N", "columns of B and C"},
        {"k", required_argument, B_K, "K", "columns of A, rows of B"},
        {"dtype", required_argument, B_DTYPE, "T", "f32 (default), tf32, f16 or bf16"},
        {"epilogue", required_argument, B_EPILOGUE, "LIST", "fuse bias, one of relu|gelu|silu, residual"},
        B_REPEAT_FLAG("timed launches per shape (default 30)"),
        {"wgmma", no_argument, B_WGMMA, NULL, "f16/bf16: B stored N x K, wgmma forced (`wgmma = true`)"},
        {"no-wgmma", no_argument, B_NO_WGMMA, NULL, "f16/bf16: `wgmma = false`, the mma.sync kernel on sm_90 too"},
        {"form", required_argument, B_FORM, "NAME[,NAME..]",
         "the matmul's kernel form by name (e.g. mma_sync.128x128x32.s3); a list: each at every shape, `default` configure's"},
        {"transpose-a", no_argument, B_TRANSPOSE_A, NULL, "A stored K x M, the matmul's transpose_a"},
        {"k-slices", required_argument, B_K_SLICES, "S[,S..]",
         "the matmul split in S along K (`k_slices = S` and its sum); a list: each, `default` the split-k pass's"},
        B_HELP,
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *T = "gpuir-bench matmul";
    int c;
    optind = 1;
    while ((c = sub_next(argc, argv, T, flags, nf)) != -1) {
        const char *v = optarg;
        if (c == B_WGMMA) { wgmma = true; continue; }
        if (c == B_NO_WGMMA) { no_wgmma = true; continue; }
        if (c == B_TRANSPOSE_A) { ta = true; continue; }
        if (c == B_FORM) { form = v; continue; }
        if (c == B_K_SLICES) { slices_arg = v; continue; }
        if (c == B_EPILOGUE) {
            if (mm_epilogue_parse(v, &epi)) continue;
            cli_err("gpuir-bench matmul: --epilogue takes a list of bias, one of relu, gelu or silu, "
                    "and residual, not %s\n", v);
            return 2;
        }
        if (c == B_M && cli_int32(T, "--m", v, 1, 1 << 20, &m)) continue;
        if (c == B_N && cli_int32(T, "--n", v, 1, 1 << 20, &n)) continue;
        if (c == B_K && cli_int32(T, "--k", v, 1, 1 << 20, &k)) continue;
        if (c == B_DTYPE) {
            tf32 = !strcmp(v, "tf32");
            dtype = !strcmp(v, "f32") || tf32 ? GPUIR_F32 : !strcmp(v, "f16") ? GPUIR_F16 : !strcmp(v, "bf16") ? GPUIR_BF16
                                                                                                   : GPUIR_DTYPE_INVALID;
            if (dtype != GPUIR_DTYPE_INVALID) continue;
            cli_err("gpuir-bench matmul: --dtype takes f32, tf32, f16 or bf16, not %s\n", v);
            return 2;
        }
        if (c == B_REPEAT && cli_int32(T, "--repeat", v, 1, 1000000, &repeat)) continue;
        int rc = sub_end(c, argc, argv, T, "usage: gpuir-bench matmul [options]", flags, nf);
        return rc < 0 ? 0 : rc;
    }
    if (optind <= argc) return sub_end(-1, argc, argv, T, NULL, flags, nf);
    if ((m || n || k) && (m <= 0 || n <= 0 || k <= 0)) {
        cli_err("gpuir-bench matmul: give --m, --n and --k > 0\n");
        return 2;
    }
    if ((wgmma || no_wgmma) && dtype != GPUIR_F16 && dtype != GPUIR_BF16) {
        cli_err("gpuir-bench matmul: --wgmma and --no-wgmma take --dtype=f16 or bf16\n");
        return 2;
    }
    if (wgmma && no_wgmma) {
        cli_err("gpuir-bench matmul: --wgmma forces the wgmma kernel, --no-wgmma forbids it: give one\n");
        return 2;
    }
    if (m) n_cases = 1;
    char form_list[512];                     /* --form's names, each NUL-ended in place */
    const char *forms[MM_MAX_FORMS];
    int n_forms = mm_form_list(form, form_list, sizeof form_list, forms);
    if (n_forms < 0) {
        cli_err("gpuir-bench matmul: --form takes up to %d names, comma-separated, none empty: %s\n",
                MM_MAX_FORMS, form);
        return 2;
    }
    int slices[MM_MAX_FORMS];
    int n_slices = mm_slices_list(slices_arg, slices);
    if (n_slices < 0) {
        cli_err("gpuir-bench matmul: --k-slices takes up to %d counts, comma-separated, each 2 to 1024 "
                "or default: %s\n", MM_MAX_FORMS, slices_arg);
        return 2;
    }
    int n_variants = n_forms * n_slices;        /* each form in each split, at every shape */
    mm_case cases[5 * MM_MAX_FORMS * MM_MAX_FORMS];
    for (int i = 0; i < n_cases; i++)
        for (int f = 0; f < n_forms; f++)
            for (int s = 0; s < n_slices; s++) {
                mm_case c = {m ? m : shapes[i][0], m ? n : shapes[i][1], m ? k : shapes[i][2], dtype, tf32, epi, wgmma,
                             no_wgmma, forms[f], ta, slices[s]};
                cases[(i * n_forms + f) * n_slices + s] = c;
            }
    n_cases *= n_variants;
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_program_desc d;
    gpuir_program *pp = cuda_probe(ctx, &d);
    if (!pp) {
        printf("no GPU (%s)\n", gpuir_ctx_error(ctx));
        gpuir_ctx_destroy(ctx);
        int rc = 0;
        for (int f = 0; f < n_variants; f++) rc |= bench_mm_emu(cases[f], m != 0);   /* the first shape's, each */
        return rc;
    }
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(pp, C);
    printf("device %s (sm_%d, %d SMs), driver %d, gpuir %s\n", C->name, C->sm, C->sm_count, C->driver_version, GPUIR_VERSION_STRING);
    C->cu->cuCtxPushCurrent(C->context);
    cublas cb;
    char why[256];
    bool have_cublas = cublas_open(&cb, why, sizeof why);
    gpuir__CUcontext popped;
    C->cu->cuCtxPopCurrent(&popped);
    if (!have_cublas) printf("cuBLAS: %s; gpuir only\n", why);
    int rc = 0;
    for (int i = 0; i < n_cases; i++) {
        gpuir_program *p = gpuir_program_make(mm_module(ctx, &cases[i]), &d);
        if (!p) {                            /* (a form or split the shape cannot take: the next may) */
            cli_err("%s\n", gpuir_ctx_error(ctx));
            gpuir_ctx_clear_error(ctx);
            rc = 1;
            continue;
        }
        rc |= bench_mm_cuda(p, have_cublas ? &cb : NULL, &cases[i], repeat);
        gpuir_program_destroy(p);
    }
    if (have_cublas) {
        C->cu->cuCtxPushCurrent(C->context);
        cublas_close(&cb);
        C->cu->cuCtxPopCurrent(&popped);
    }
    gpuir_ctx_destroy(ctx);
    return rc;
}


/* ---- kernel-only replay: a placed program's launches on device buffers ---- */

typedef struct replay_launch {
    void *fn;
    unsigned grid[3], block[3], smem, n_args;
    gpuir__dptr args[GPUIR_MAX_OPERANDS];
    void *params[GPUIR_MAX_OPERANDS];
} replay_launch;

typedef struct replay {
    gpuir__dptr *bufs;        /* stb_ds: every device buffer, freed at the end */
    replay_launch *launches;  /* stb_ds */
} replay;

/* The replay of launch S, its buffers at bufs[] (the plan's). */
static replay_launch replay_launch_of(const gpuir__internal_launch *S, const gpuir__dptr *bufs) {
    replay_launch L;
    memset(&L, 0, sizeof L);
    L.fn = S->fn;
    memcpy(L.grid, S->grid, sizeof L.grid);
    memcpy(L.block, S->block, sizeof L.block);
    L.smem = S->smem;
    L.n_args = S->n_args;
    for (unsigned a = 0; a < S->n_args; a++) L.args[a] = S->arg[a] >= 0 ? bufs[S->arg[a]] : 0;
    return L;
}

/* Allocates every device buffer of @func once (random data) and lists its
   launches in order; copies and frees are left out, so a replay times the
   kernels alone. */
static bool replay_prepare(gpuir_ctx *ctx, gpuir_program *p, const char *func, replay *rp) {
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
    gpuir__internal_plan plan;
    memset(rp, 0, sizeof *rp);
    gpuir__internal_plan_make(p, func, &plan);
    uint64_t seed = 99;
    for (size_t i = 0; i < stbds_arrlenu(plan.buffers); i++) {
        const gpuir__internal_buffer *b = &plan.buffers[i];
        gpuir_array host;
        gpuir_array_alloc(ctx, &host, b->dtype, 1, (const int64_t[]){(int64_t)b->count});
        gpuir_array_fill_random(&host, seed++);
        gpuir__dptr dev = 0;
        C->cu->cuMemAlloc(&dev, b->bytes ? b->bytes : 1);
        if (b->bytes) C->cu->cuMemcpyHtoD(dev, host.data, b->bytes);
        gpuir_array_release(&host);
        stbds_arrput(rp->bufs, dev);
    }
    for (size_t i = 0; i < stbds_arrlenu(plan.launches); i++)
        stbds_arrput(rp->launches, replay_launch_of(&plan.launches[i], rp->bufs));
    for (size_t i = 0; i < stbds_arrlenu(rp->launches); i++)     /* the array no longer moves */
        for (int a = 0; a < GPUIR_MAX_OPERANDS; a++) rp->launches[i].params[a] = &rp->launches[i].args[a];
    gpuir__internal_plan_free(&plan);
    return stbds_arrlenu(rp->launches) > 0;
}

static void replay_free(gpuir_program *p, replay *rp) {
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
    for (size_t i = 0; i < stbds_arrlenu(rp->bufs); i++) C->cu->cuMemFree(rp->bufs[i]);
    stbds_arrfree(rp->bufs);
    stbds_arrfree(rp->launches);
}

/* Median milliseconds of `repeat` replays (after 3 warm-ups); with no
   replay (rp NULL), of a device-to-device copy of `bytes`. */
static float time_replay(gpuir_program *p, const replay *rp, gpuir__dptr dst, gpuir__dptr src, size_t bytes,
                         int repeat) {
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
    float *ms = (float *)calloc((size_t)repeat, sizeof *ms);
    gpuir__CUevent e0, e1;
    C->cu->cuEventCreate(&e0, 0);
    C->cu->cuEventCreate(&e1, 0);
    int rc = 0;
    for (int i = -3; i < repeat && !rc; i++) {
        C->cu->cuEventRecord(e0, NULL);
        if (!rp) rc = C->cu->cuMemcpyDtoD(dst, src, bytes);
        for (size_t k = 0; rp && k < stbds_arrlenu(rp->launches) && !rc; k++) {
            const replay_launch *L = &rp->launches[k];
            const gpuir__drv *d = gpuir__internal_table(p);
            rc = d->launch(d->self, L->fn, L->grid, L->block, L->smem, (void **)L->params, L->n_args, 0);
        }
        C->cu->cuEventRecord(e1, NULL);
        C->cu->cuEventSynchronize(e1);
        if (i >= 0) C->cu->cuEventElapsedTime(&ms[i], e0, e1);
    }
    if (rc) cli_err("gpuir-bench: a launch or copy failed with status %d\n", rc);
    C->cu->cuEventDestroy(e0);
    C->cu->cuEventDestroy(e1);
    qsort(ms, (size_t)repeat, sizeof *ms, cmp_float);
    float med = rc ? (float)NAN : ms[repeat / 2];
    free(ms);
    return med;
}

/* gpuir's kernels for `text` against a device-to-device copy of the bytes
   the function must move at least (its input read, its output written). */
/* A bandwidth row: a device-to-device copy of io_bytes / 2 bytes timed on
   p's device (its context current) as the yardstick, and gpuir's time tk
   (ms, `kernels` kernels) printed against it: the table line, the
   machine-readable line, the plot's point. */
static void bench_bw_report(gpuir_program *p, const gpuir__internal_cuda *C, const char *label, size_t kernels,
                            float tk, size_t io_bytes, int repeat) {
    gpuir__dptr a = 0, b = 0;
    C->cu->cuMemAlloc(&a, io_bytes / 2);
    C->cu->cuMemAlloc(&b, io_bytes / 2);
    C->cu->cuMemsetD8(a, 0x3c, io_bytes / 2);
    float tc = time_replay(p, NULL, b, a, io_bytes / 2, repeat);
    C->cu->cuMemFree(a);
    C->cu->cuMemFree(b);
    double gbk = io_bytes / (tk * 1e6), gbc = io_bytes / (tc * 1e6);
    printf("%-34s %2zu kernels %8.3f ms %7.0f GB/s   copy %8.3f ms %7.0f GB/s   gpuir at %5.1f %% of copy\n", label,
           kernels, tk, gbk, tc, gbc, 100.0 * tc / tk);
    printf("bench bandwidth %s kernels=%zu gpuir_ms=%.4f copy_ms=%.4f ratio=%.3f\n", label, kernels, tk, tc, tc / tk);
    plot_add("gpuir bandwidth / device copy bandwidth", label, tc / tk);
}

static int bench_bw_case(gpuir_ctx *ctx, const char *label, const char *text, size_t io_bytes, int repeat) {
    if (!row_picked(label)) return 0;
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_CUDA;
    gpuir_program *p = gpuir_program_make(gpuir_module_parse(ctx, text, strlen(text), label), &d);
    if (!p) { cli_err("%s\n", gpuir_ctx_error(ctx)); return 1; }
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
    C->cu->cuCtxPushCurrent(C->context);
    replay rp;
    bool ok = replay_prepare(ctx, p, "f", &rp);
    float tk = ok ? time_replay(p, &rp, 0, 0, 0, repeat) : (float)NAN;
    bench_bw_report(p, C, label, stbds_arrlenu(rp.launches), tk, io_bytes, repeat);
    replay_free(p, &rp);
    gpuir__CUcontext popped;
    C->cu->cuCtxPopCurrent(&popped);
    plot_from("cuda (GPU, CUDA events)");
    gpuir_program_destroy(p);
    return ok ? 0 : 1;
}

/* The dims of type t, each dynamic one `dyn`. */
static void dims_at(const gpuir_type *t, long long dyn, int64_t *dims) {
    for (int i = 0; i < t->rank; i++) dims[i] = t->dims[i] < 0 ? (int64_t)dyn : t->dims[i];
}

/* @f's parameters (at most 4) as random host arrays, each `?` dim `dyn`
   (the first's seed 7); their number, or -1 (the context holds why). */
static int random_inputs(gpuir_ctx *ctx, gpuir_module *m, long long dyn, gpuir_array in[4]) {
    gpuir_func f = gpuir_module_find_func(m, "f");
    size_t n = gpuir_func_param_count(m, f);
    if (n > 4) return -1;
    for (size_t k = 0; k < n; k++) {
        gpuir_type t = gpuir_func_param_type(m, f, k);
        int64_t dims[GPUIR_MAX_RANK];
        dims_at(&t, dyn, dims);
        if (gpuir_array_alloc(ctx, &in[k], t.dtype, t.rank, dims)) {
            while (k) gpuir_array_release(&in[--k]);
            return -1;
        }
        gpuir_array_fill_random(&in[k], 7 + k);
    }
    return (int)n;
}

/* Without a GPU: the program (its inputs random, each `?` dim `dyn`; n_out
   results) on the emulator against the interpreter. */
static int check_on_emu_n(gpuir_ctx *ctx, const char *label, const char *text, size_t n_out, long long dyn) {
    if (!row_picked(label)) return 0;
    gpuir_module *ref = gpuir_module_parse(ctx, text, strlen(text), label);
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), label);
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_EMU;
    gpuir_program *p = m ? gpuir_program_make(m, &d) : NULL;
    gpuir_array in[4], want[4], got[4];
    memset(want, 0, sizeof want);
    memset(got, 0, sizeof got);
    int n_in = p ? random_inputs(ctx, ref, dyn, in) : -1;
    gpuir_result r = n_in < 0 ? gpuir_ctx_result(ctx) : GPUIR_OK;
    if (!r) r = gpuir_ref_run(ref, "f", (size_t)n_in, in, n_out, want);
    if (!r) r = gpuir_program_run(p, "f", (size_t)n_in, in, n_out, got);
    double rtol = 1e-5, atol = 1e-6;
    if (n_in > 0 && in[0].dtype != GPUIR_F32) gpuir_backend_tolerance(GPUIR_BACKEND_EMU, in[0].dtype, &rtol, &atol);
    for (size_t i = 0; i < n_out && !r; i++) r = gpuir_array_compare(ctx, &got[i], &want[i], rtol, atol);
    printf("%-34s emu: %s, %zu kernel%s\n", label, r ? gpuir_ctx_error(ctx) : "matches the interpreter",
           p ? stbds_arrlenu(p->kernels) : 0, p && stbds_arrlenu(p->kernels) == 1 ? "" : "s");
    for (int k = 0; k < n_in; k++) gpuir_array_release(&in[k]);
    for (size_t i = 0; i < n_out; i++) { gpuir_array_release(&want[i]); gpuir_array_release(&got[i]); }
    gpuir_program_destroy(p);
    gpuir_module_destroy(ref);
    gpuir_ctx_clear_error(ctx);
    return r != GPUIR_OK;
}

static int check_on_emu(gpuir_ctx *ctx, const char *label, const char *text) {
    return check_on_emu_n(ctx, label, text, 1, 0);
}

/* The issue's three sibling reductions of one rows x 4096 f32 matrix (the
   column maxima, the row sums, the total: one kernel that reads it once)
   against a copy of the same bytes, which reads and writes half of them:
   reading once, the kernel moves what the copy moves. */
static int bench_siblings(gpuir_ctx *ctx, bool gpu, int repeat) {
    static char text[2048];
    long long rows = gpu ? 16384 : 64, cols = 4096;
    char F[64];
    snprintf(F, sizeof F, "tensor<%lldx%lldxf32>", rows, cols);
    snprintf(text, sizeof text,
             "func.func @f(%%x: %s) -> (tensor<%lldxf32>, tensor<%lldxf32>, tensor<f32>) {\n"
             "  %%a = reduce_max %%x {axes = [0]} : (%s) -> tensor<%lldxf32>\n"
             "  %%b = reduce_sum %%x {axes = [1]} : (%s) -> tensor<%lldxf32>\n"
             "  %%c = reduce_sum %%x {axes = [0, 1]} : (%s) -> tensor<f32>\n"
             "  return %%a, %%b, %%c : tensor<%lldxf32>, tensor<%lldxf32>, tensor<f32>\n}\n",
             F, cols, rows, F, cols, F, rows, F, cols, rows);
    char label[64];
    snprintf(label, sizeof label, "sibling reductions %lldx%lld, f32", rows, cols);
    size_t bytes = (size_t)(rows * cols + cols + rows + 1) * 4;
    return gpu ? bench_bw_case(ctx, label, text, bytes, repeat) : check_on_emu_n(ctx, label, text, 3, 0);
}

/* The statistics and the normalization of %x (type F) over `axes`, with
   keepdims (statistics of type S): %m the mean, %d = %x - %m, %v the
   mean of %d's squares, %r = rsqrt(%v + 1e-5), %n = %d * %r. */
static void centred_norm_text(strbuf *t, const char *F, const char *S, const char *axes) {
    strbuf_appendf(t,
                   "  %%m = reduce_mean %%x {axes = [%s], keepdims = true} : (%s) -> %s\n"
                   "  %%d = sub %%x, %%m : (%s, %s) -> %s\n"
                   "  %%q = mul %%d, %%d : (%s, %s) -> %s\n"
                   "  %%v = reduce_mean %%q {axes = [%s], keepdims = true} : (%s) -> %s\n"
                   "  %%eps = constant {value = 1.0e-5} : () -> tensor<f32>\n"
                   "  %%ve = add %%v, %%eps : (%s, tensor<f32>) -> %s\n"
                   "  %%r = rsqrt %%ve : (%s) -> %s\n"
                   "  %%n = mul %%d, %%r : (%s, %s) -> %s\n",
                   axes, F, S, F, S, F, F, F, F, axes, F, S, S, S, S, S, F, S, F);
}

/* BatchNorm's normalization over the rows of a rows x 512 f32 matrix (a
   channel a column: NHWC's N*H*W rows): the column mean and variance in
   one sibling kernel that reads it once, the rsqrt, the normalization;
   against a copy of the same bytes (x read, y written: the statistics'
   read is the third pass). */
static int bench_batchnorm(gpuir_ctx *ctx, bool gpu, int repeat) {
    long long rows = gpu ? 16384 : 70, cols = 512;
    char F[64], S[64];
    snprintf(F, sizeof F, "tensor<%lldx%lldxf32>", rows, cols);
    snprintf(S, sizeof S, "tensor<1x%lldxf32>", cols);
    strbuf text = {NULL, 0, 0};
    strbuf_appendf(&text, "func.func @f(%%x: %s) -> %s {\n", F, F);
    centred_norm_text(&text, F, S, "0");
    strbuf_appendf(&text, "  return %%n : %s\n}\n", F);
    char label[64];
    snprintf(label, sizeof label, "BatchNorm %lldx%lld, f32", rows, cols);
    size_t bytes = (size_t)(rows * cols) * 4 * 2;
    int rc = gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
    free(text.buf);
    return rc;
}

/* A normalization of [N, C, H, W] f32 over `axes` (its statistics of type
   S) with a per-channel weight and bias of [C, 1, 1], against a copy of
   the same bytes (x read, y written); `name` labels it. */
static int bench_nchw_norm(gpuir_ctx *ctx, bool gpu, int repeat, const char *name, long long n, long long c,
                           long long hw, const char *S, const char *axes) {
    char F[64], W[64];
    snprintf(F, sizeof F, "tensor<%lldx%lldx%lldx%lldxf32>", n, c, hw, hw);
    snprintf(W, sizeof W, "tensor<%lldx1x1xf32>", c);
    strbuf text = {NULL, 0, 0};
    strbuf_appendf(&text, "func.func @f(%%x: %s, %%g: %s, %%b: %s) -> %s {\n", F, W, W, F);
    centred_norm_text(&text, F, S, axes);
    strbuf_appendf(&text,
                   "  %%s = mul %%n, %%g : (%s, %s) -> %s\n"
                   "  %%y = add %%s, %%b : (%s, %s) -> %s\n"
                   "  return %%y : %s\n}\n", F, W, F, F, W, F, F);
    char label[64];
    snprintf(label, sizeof label, "%s %lldx%lldx%lldx%lld, f32", name, n, c, hw, hw);
    size_t bytes = (size_t)(n * c * hw * hw) * 4 * 2;
    int rc = gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
    free(text.buf);
    return rc;
}

/* InstanceNorm over [N, C, H, W] f32 (the mean and variance over [H, W]
   of each image and channel, then a per-channel scale and shift given as
   [C, 1, 1]): one row kernel over the view [N, C, H*W] (canonicalize's
   trailing merge; was four kernels reading x three times), against a copy
   of the same bytes (x read, y written). */
static int bench_instancenorm(gpuir_ctx *ctx, bool gpu, int repeat) {
    long long n = gpu ? 16 : 2, c = gpu ? 256 : 3, hw = gpu ? 64 : 9;
    char S[64];
    snprintf(S, sizeof S, "tensor<%lldx%lldx1x1xf32>", n, c);
    return bench_nchw_norm(ctx, gpu, repeat, "InstanceNorm", n, c, hw, S, "2, 3");
}

/* GroupNorm in torch's form over [N, C, H, W] f32 (a diffusion UNet's:
   32 groups): the statistics over the rows of the view [N, G, C/G*H*W],
   the normalization, then the view back to [N, C, H, W] and the
   per-channel weight and bias of [C, 1, 1]: one row kernel (was two: the
   affine a kernel of its own reading and writing x again), against a copy
   of the same bytes (x read, y written). Two sizes: batch 8 of 320
   channels (256 rows of 40,960 values, each cached in shared memory) and
   batch 1 of 512 (32 rows of 65,536, streamed twice: fewer rows than
   SMs). */
static int bench_groupnorm_case(gpuir_ctx *ctx, bool gpu, int repeat, long long n, long long c, long long hw) {
    long long g = gpu ? 32 : 3;
    char X[64], F[64], S[64], W[64];
    snprintf(X, sizeof X, "tensor<%lldx%lldx%lldx%lldxf32>", n, c, hw, hw);
    snprintf(F, sizeof F, "tensor<%lldx%lldx%lldxf32>", n, g, c / g * hw * hw);
    snprintf(S, sizeof S, "tensor<%lldx%lldx1xf32>", n, g);
    snprintf(W, sizeof W, "tensor<%lldx1x1xf32>", c);
    strbuf text = {NULL, 0, 0};
    strbuf_appendf(&text, "func.func @f(%%in: %s, %%g: %s, %%b: %s) -> %s {\n"
                          "  %%x = reshape %%in : (%s) -> %s\n", X, W, W, X, X, F);
    centred_norm_text(&text, F, S, "2");
    strbuf_appendf(&text,
                   "  %%n4 = reshape %%n : (%s) -> %s\n"
                   "  %%s = mul %%n4, %%g : (%s, %s) -> %s\n"
                   "  %%y = add %%s, %%b : (%s, %s) -> %s\n"
                   "  return %%y : %s\n}\n", F, X, X, W, X, X, W, X, X);
    char label[64];
    snprintf(label, sizeof label, "GroupNorm(%lld) %lldx%lldx%lldx%lld, f32", g, n, c, hw, hw);
    size_t bytes = (size_t)(n * c * hw * hw) * 4 * 2;
    int rc = gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
    free(text.buf);
    return rc;
}

/* BatchNorm in training over [N, C, H, W] f32 (the statistics over N, H
   and W, a per-channel weight and bias of [C, 1, 1]): decompose's split
   over the gap (each image's channel a row: one row kernel takes both
   statistics in one pass, a column group merges them by the law of total
   variance, then the normalization; was a block a channel for each
   statistic, x read three times), against a copy of the same bytes (x
   read, y written). Three stages of a ResNet-50 at batch 32: 64 x 56 x 56
   and 128 x 28 x 28 split so, 2048 x 7 x 7 not (rows of 49: a block a
   channel for each statistic, four loads in flight a thread). */
static int bench_batchnorm_nchw_case(gpuir_ctx *ctx, bool gpu, int repeat, long long n, long long c, long long hw) {
    char S[64];
    snprintf(S, sizeof S, "tensor<1x%lldx1x1xf32>", c);
    return bench_nchw_norm(ctx, gpu, repeat, "BatchNorm NCHW", n, c, hw, S, "0, 2, 3");
}

static int bench_batchnorm_nchw(gpuir_ctx *ctx, bool gpu, int repeat) {
    if (!gpu) return bench_batchnorm_nchw_case(ctx, gpu, repeat, 2, 8, 128);    /* 2^18 values: split */
    return bench_batchnorm_nchw_case(ctx, gpu, repeat, 32, 64, 56) | bench_batchnorm_nchw_case(ctx, gpu, repeat, 32, 128, 28) |
           bench_batchnorm_nchw_case(ctx, gpu, repeat, 32, 2048, 7);
}

/* LayerNorm over the channels of [N, C, H, W] f32 (ConvNeXt's
   LayerNorm2d, its per-channel weight and bias of [C, 1, 1]): one column
   group (reduce.column_group: a tile of neighbouring positions a block,
   lanes down the channels, three passes down each column, from registers
   up to 32 channels a lane), against a copy of the same bytes (x read, y
   written). Two sizes of a ConvNeXt-T at batch 32: the first stage's
   96 x 56 x 56 and the third's 384 x 14 x 14. */
static int bench_layernorm_channels_case(gpuir_ctx *ctx, bool gpu, int repeat, long long n, long long c,
                                         long long hw) {
    char S[64];
    snprintf(S, sizeof S, "tensor<%lldx1x%lldx%lldxf32>", n, hw, hw);
    return bench_nchw_norm(ctx, gpu, repeat, "LayerNorm over C", n, c, hw, S, "1");
}

static int bench_layernorm_channels(gpuir_ctx *ctx, bool gpu, int repeat) {
    if (!gpu) return bench_layernorm_channels_case(ctx, gpu, repeat, 2, 12, 5);
    return bench_layernorm_channels_case(ctx, gpu, repeat, 32, 96, 56) |
           bench_layernorm_channels_case(ctx, gpu, repeat, 32, 384, 14);
}

static int bench_groupnorm(gpuir_ctx *ctx, bool gpu, int repeat) {
    if (!gpu) return bench_groupnorm_case(ctx, gpu, repeat, 2, 6, 5);
    return bench_groupnorm_case(ctx, gpu, repeat, 8, 320, 64) | bench_groupnorm_case(ctx, gpu, repeat, 1, 512, 64);
}

/* A softmax over the channels of [N, C, H, W] f32 (a segmentation head's,
   C = 21), and a log-softmax (the log after it, as a segmentation loss
   takes it): one softmax.columns kernel each, a thread per column (the log
   on each value before it is stored), against a copy of the same bytes
   (x read, y written). */
static int bench_softmax_channels(gpuir_ctx *ctx, bool gpu, int repeat) {
    long long n = gpu ? 16 : 2, c = 21, hw = gpu ? 256 : 9;
    char F[64];
    snprintf(F, sizeof F, "tensor<%lldx%lldx%lldx%lldxf32>", n, c, hw, hw);
    int rc = 0;
    for (int log = 0; log < 2; log++) {
        strbuf text = {NULL, 0, 0};
        strbuf_appendf(&text, "func.func @f(%%x: %s) -> %s {\n  %%s = softmax %%x {axis = 1} : (%s) -> %s\n", F, F,
                       F, F);
        if (log) strbuf_appendf(&text, "  %%l = log %%s : (%s) -> %s\n  return %%l : %s\n}\n", F, F, F);
        else strbuf_appendf(&text, "  return %%s : %s\n}\n", F);
        char label[64];
        snprintf(label, sizeof label, "%s over C %lldx%lldx%lldx%lld, f32", log ? "log-softmax" : "softmax", n, c,
                 hw, hw);
        size_t bytes = (size_t)(n * c * hw * hw) * 4 * 2;
        rc |= gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
        free(text.buf);
    }
    return rc;
}

/* A transpose of x (rank 4, by perm) with a bias over x's last axis
   before it and gelu after it: a transpose group, one kernel (was three),
   against a copy of the same bytes (x read, y written). */
static int bench_transpose_case(gpuir_ctx *ctx, bool gpu, int repeat, const char *what, const char *dt,
                                const long long *dims, const int *perm) {
    char X[80], Y[80], B[40], label[96];
    long long n = dims[0] * dims[1] * dims[2] * dims[3];
    snprintf(X, sizeof X, "tensor<%lldx%lldx%lldx%lldx%s>", dims[0], dims[1], dims[2], dims[3], dt);
    snprintf(Y, sizeof Y, "tensor<%lldx%lldx%lldx%lldx%s>", dims[perm[0]], dims[perm[1]], dims[perm[2]],
             dims[perm[3]], dt);
    snprintf(B, sizeof B, "tensor<%lldx%s>", dims[3], dt);
    strbuf text = {NULL, 0, 0};
    strbuf_appendf(&text,
                   "func.func @f(%%x: %s, %%bias: %s) -> %s {\n"
                   "  %%y = add %%x, %%bias : (%s, %s) -> %s\n"
                   "  %%t = transpose %%y {perm = [%d, %d, %d, %d]} : (%s) -> %s\n"
                   "  %%g = gelu %%t : (%s) -> %s\n"
                   "  return %%g : %s\n}\n", X, B, Y, X, B, X, perm[0], perm[1], perm[2], perm[3], X, Y, Y, Y, Y);
    snprintf(label, sizeof label, "%s, bias, gelu %lldx%lldx%lldx%lld, %s", what, dims[0], dims[1], dims[2],
             dims[3], dt);
    size_t bytes = (size_t)n * (strcmp(dt, "f32") == 0 ? 4 : 2) * 2;
    int rc = gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
    free(text.buf);
    return rc;
}

/* Attention's heads split in bf16 ([B, S, H, D] -> [B, H, S, D]: the last
   axis stays, a thread an element reads its source where the split puts
   it) and an activation moved from NHWC to NCHW in f32 (the last axis
   moves: 32x32 shared-memory tiles over C and H*W). */
static int bench_transposes(gpuir_ctx *ctx, bool gpu, int repeat) {
    static const int heads[4] = {0, 2, 1, 3}, nchw[4] = {0, 3, 1, 2};
    const long long split[4] = {gpu ? 8 : 2, gpu ? 1024 : 5, gpu ? 16 : 3, 64};
    const long long nhwc[4] = {gpu ? 32 : 2, gpu ? 56 : 5, gpu ? 56 : 5, gpu ? 96 : 7};
    return bench_transpose_case(ctx, gpu, repeat, "heads split", "bf16", split, heads) |
           bench_transpose_case(ctx, gpu, repeat, "NHWC to NCHW", "f32", nhwc, nchw);
}

/* The mean of the squares of an f32 matrix over every axis (an MSE's
   shape of total), against a copy of the same bytes (x read once: the
   copy reads and writes half of them): decompose makes it row sums of the
   squares (a block a row) and the total of those, the rows 4096 long, or
   768 (fewer than 1024 columns: the rows are the last axis). */
static int bench_mean_of_squares(gpuir_ctx *ctx, long long rows, long long cols, bool gpu, int repeat) {
    char F[64], label[64];
    snprintf(F, sizeof F, "tensor<%lldx%lldxf32>", rows, cols);
    strbuf text = {NULL, 0, 0};
    strbuf_appendf(&text,
                   "func.func @f(%%x: %s) -> tensor<f32> {\n"
                   "  %%q = mul %%x, %%x : (%s, %s) -> %s\n"
                   "  %%m = reduce_mean %%q {axes = [0, 1]} : (%s) -> tensor<f32>\n"
                   "  return %%m : tensor<f32>\n}\n", F, F, F, F, F);
    snprintf(label, sizeof label, "mean of squares over %lldx%lld, f32", rows, cols);
    size_t bytes = (size_t)(rows * cols) * 4;
    int rc = gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
    free(text.buf);
    return rc;
}

/* The programs over f32 vectors (bench_vector): a sum; Dice's loss over
   two vectors (three sums and the scalar ops on them); a softmax and a
   LayerNorm (no weight or bias) of one long row, its totals grid totals
   and the ops that read them back an elementwise kernel after them (x
   read three times, y written once: the bytes counted); and the softmax
   with `form = "softmax.rows"` written, the row kernel it was (one block
   reading the row), its bytes counted alike so that the two rows'
   percentages compare; the LayerNorm with `form = "reduce.rows"`
   written alike. The last four over a few rows too (R rows of n: a block
   a row, or grid totals of rows). */
typedef enum {
    VECTOR_SUM, VECTOR_DICE, VECTOR_SOFTMAX, VECTOR_SOFTMAX_ONE_BLOCK, VECTOR_LAYERNORM, VECTOR_LAYERNORM_ONE_BLOCK
} vector_program;
static const struct { const char *label; bool one_block; int bytes_per_element; } vector_programs[] = {
    [VECTOR_SUM] = {"sum", false, 4},
    [VECTOR_DICE] = {"Dice", false, 8},
    [VECTOR_SOFTMAX] = {"softmax", false, 16},
    [VECTOR_SOFTMAX_ONE_BLOCK] = {"softmax", true, 16},
    [VECTOR_LAYERNORM] = {"LayerNorm", false, 16},
    [VECTOR_LAYERNORM_ONE_BLOCK] = {"LayerNorm", true, 16},
};

/* Program `which` over R rows of n f32 (R = 1: vectors; `what`: "prime
   length " or ""), against a copy of its bytes (on the emulator:
   checked). */
static int bench_vector(gpuir_ctx *ctx, long long R, long long n, const char *what, vector_program which, bool gpu,
                        int repeat) {
    char V[64], T[48], label[128], of[32];
    if (R > 1) snprintf(V, sizeof V, "tensor<%lldx%lldxf32>", R, n), snprintf(T, sizeof T, "tensor<%lldx1xf32>", R);
    else snprintf(V, sizeof V, "tensor<%lldxf32>", n), snprintf(T, sizeof T, "tensor<1xf32>");
    int axis = R > 1 ? 1 : 0;
    strbuf text = {NULL, 0, 0};
    switch (which) {
    case VECTOR_SUM:
        strbuf_appendf(&text,
                       "func.func @f(%%x: %s) -> tensor<f32> {\n"
                       "  %%s = reduce_sum %%x {axes = [0]} : (%s) -> tensor<f32>\n"
                       "  return %%s : tensor<f32>\n}\n", V, V);
        break;
    case VECTOR_DICE:
        strbuf_appendf(&text,
                       "func.func @f(%%p: %s, %%t: %s) -> tensor<f32> {\n"
                       "  %%pt = mul %%p, %%t : (%s, %s) -> %s\n"
                       "  %%i = reduce_sum %%pt {axes = [0]} : (%s) -> tensor<f32>\n"
                       "  %%sp = reduce_sum %%p {axes = [0]} : (%s) -> tensor<f32>\n"
                       "  %%st = reduce_sum %%t {axes = [0]} : (%s) -> tensor<f32>\n"
                       "  %%two = constant {value = 2.0} : () -> tensor<f32>\n"
                       "  %%one = constant {value = 1.0} : () -> tensor<f32>\n"
                       "  %%n = mul %%two, %%i : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
                       "  %%d = add %%sp, %%st : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
                       "  %%r = div %%n, %%d : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
                       "  %%l = sub %%one, %%r : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
                       "  return %%l : tensor<f32>\n}\n", V, V, V, V, V, V, V, V);
        break;
    case VECTOR_SOFTMAX:
    case VECTOR_SOFTMAX_ONE_BLOCK:
        strbuf_appendf(&text,
                       "func.func @f(%%x: %s) -> %s {\n"
                       "  %%y = softmax %%x {axis = %d%s} : (%s) -> %s\n"
                       "  return %%y : %s\n}\n", V, V, axis,
                       which == VECTOR_SOFTMAX_ONE_BLOCK ? ", form = \"softmax.rows\"" : "", V, V, V);
        break;
    case VECTOR_LAYERNORM:
    case VECTOR_LAYERNORM_ONE_BLOCK:
        strbuf_appendf(&text,
                       "func.func @f(%%x: %s) -> %s {\n"
                       "  %%m = reduce_mean %%x {axes = [%d], keepdims = true%s} : (%s) -> %s\n"
                       "  %%d = sub %%x, %%m : (%s, %s) -> %s\n"
                       "  %%q = mul %%d, %%d : (%s, %s) -> %s\n"
                       "  %%v = reduce_mean %%q {axes = [%d], keepdims = true} : (%s) -> %s\n"
                       "  %%eps = constant {value = 1.0e-5} : () -> tensor<f32>\n"
                       "  %%ve = add %%v, %%eps : (%s, tensor<f32>) -> %s\n"
                       "  %%rs = rsqrt %%ve : (%s) -> %s\n"
                       "  %%y = mul %%d, %%rs : (%s, %s) -> %s\n"
                       "  return %%y : %s\n}\n", V, V, axis,
                       which == VECTOR_LAYERNORM_ONE_BLOCK ? ", form = \"reduce.rows\"" : "", V, T, V, T, V, V, V,
                       V, axis, V, T, T, T, T, T, V, T, V, V);
        break;
    }
    if (R > 1) snprintf(of, sizeof of, "%lld rows", R);
    else snprintf(of, sizeof of, "%s", which == VECTOR_DICE ? "two vectors" : "a vector");
    snprintf(label, sizeof label, "%s of %s of %s%lld, f32%s", vector_programs[which].label, of, what, n,
             !vector_programs[which].one_block ? "" : R > 1 ? ", a block a row" : ", one block");
    size_t bytes = (size_t)(R * n) * (size_t)vector_programs[which].bytes_per_element;
    int rc = gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
    free(text.buf);
    return rc;
}

/* Totals: the means of squares (bench_mean_of_squares), a vector's sum
   and Dice's three totals of two vectors (of 16M and of a prime length),
   a softmax and a LayerNorm of a vector of prime length
   (bench_vector), and `x - x.max()` over a matrix. */
static int bench_total(gpuir_ctx *ctx, bool gpu, int repeat) {
    long long rows = gpu ? 16384 : 200, cols = gpu ? 4096 : 1500;
    int rc = bench_mean_of_squares(ctx, rows, cols, gpu, repeat);
    rc |= bench_mean_of_squares(ctx, gpu ? 65536 : 400, gpu ? 768 : 700, gpu, repeat);
    char F[64], label[64];
    snprintf(F, sizeof F, "tensor<%lldx%lldxf32>", rows, cols);
    strbuf text = {NULL, 0, 0};
    /* a vector's sum (decompose: rows of a view, then their total); one
       of prime length (no view to split it into rows: a grid total,
       reduce.grid, its blocks' partials combined by the last); and `x -
       x.max()` over a matrix (the max split too, then the subtraction: x
       read twice, written once) */
    long long n = gpu ? 16ll << 20 : 300000;
    long long prime = gpu ? 16777259 : 300007;
    rc |= bench_vector(ctx, 1, n, "", VECTOR_SUM, gpu, repeat);
    rc |= bench_vector(ctx, 1, prime, "prime length ", VECTOR_SUM, gpu, repeat);
    /* Dice's loss over two vectors: of 16M, three sibling totals on one
       view (a row kernel reading p and t once, then one kernel for the
       three totals of its rows' results and the loss); of a prime length,
       one grid total's kernel for the three and the loss */
    rc |= bench_vector(ctx, 1, n, "", VECTOR_DICE, gpu, repeat);
    rc |= bench_vector(ctx, 1, prime, "prime length ", VECTOR_DICE, gpu, repeat);
    /* a softmax and a LayerNorm of a vector of prime length (grid totals,
       then an elementwise kernel), and the softmax as one block (its form
       written: what it was) */
    rc |= bench_vector(ctx, 1, prime, "prime length ", VECTOR_SOFTMAX, gpu, repeat);
    rc |= bench_vector(ctx, 1, prime, "prime length ", VECTOR_SOFTMAX_ONE_BLOCK, gpu, repeat);
    rc |= bench_vector(ctx, 1, prime, "prime length ", VECTOR_LAYERNORM, gpu, repeat);
    /* the same over a few rows (4 of 4M: grid totals of rows, then an
       elementwise kernel; and a block a row, the form written: what it
       was) */
    long long row = gpu ? 4ll << 20 : 131072;
    for (vector_program p = VECTOR_SOFTMAX; p <= VECTOR_LAYERNORM_ONE_BLOCK; p++)
        rc |= bench_vector(ctx, 4, row, "", p, gpu, repeat);
    text.len = 0;
    strbuf_appendf(&text,
                   "func.func @f(%%x: %s) -> %s {\n"
                   "  %%m = reduce_max %%x {axes = [0, 1]} : (%s) -> tensor<f32>\n"
                   "  %%d = sub %%x, %%m : (%s, tensor<f32>) -> %s\n"
                   "  return %%d : %s\n}\n", F, F, F, F, F, F);
    snprintf(label, sizeof label, "x - max(x) over %lldx%lld, f32", rows, cols);
    rc |= gpu ? bench_bw_case(ctx, label, text.buf, (size_t)(rows * cols) * 12, repeat)
              : check_on_emu(ctx, label, text.buf);
    free(text.buf);
    return rc;
}

/* Means over axes that end before the last (reduce.column_tiles: a block
   per tile of neighbouring columns, lanes down each): over the tokens of
   [B, S, H] (mean pooling) and over the channels of [N, C, H, W], f32,
   against a copy of the same bytes (x read once, the means written: the
   copy reads and writes half of them). */
static int bench_column_means(gpuir_ctx *ctx, bool gpu, int repeat) {
    static const struct { const char *what; long long lead, axis, rest[2]; } cases[2] = {
        {"mean over tokens", 16, 2048, {1024, 0}},
        {"mean over channels", 16, 256, {64, 64}},
    };
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        long long a = gpu ? cases[i].lead : 2, r = gpu ? cases[i].axis : 37;
        bool spatial = cases[i].rest[1] != 0;   /* [N, C, H, W] (on the emulator [2, 37, 20, 30]) */
        long long w = gpu ? cases[i].rest[0] : spatial ? 20 : 600, h = !spatial ? 0 : gpu ? cases[i].rest[1] : 30;
        char F[80], Y[80], label[96];
        if (h) {
            snprintf(F, sizeof F, "tensor<%lldx%lldx%lldx%lldxf32>", a, r, w, h);
            snprintf(Y, sizeof Y, "tensor<%lldx1x%lldx%lldxf32>", a, w, h);
            snprintf(label, sizeof label, "%s %lldx%lldx%lldx%lld, f32", cases[i].what, a, r, w, h);
        } else {
            snprintf(F, sizeof F, "tensor<%lldx%lldx%lldxf32>", a, r, w);
            snprintf(Y, sizeof Y, "tensor<%lldx1x%lldxf32>", a, w);
            snprintf(label, sizeof label, "%s %lldx%lldx%lld, f32", cases[i].what, a, r, w);
        }
        strbuf text = {NULL, 0, 0};
        strbuf_appendf(&text,
                       "func.func @f(%%x: %s) -> %s {\n"
                       "  %%m = reduce_mean %%x {axes = [1], keepdims = true} : (%s) -> %s\n"
                       "  return %%m : %s\n}\n", F, Y, F, Y, Y);
        long long out = a * w * (h ? h : 1);
        size_t bytes = (size_t)(out * r + out) * 4;
        rc |= gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
        free(text.buf);
    }
    return rc;
}

/* A LayerNorm (mean, centre, variance, eps, rsqrt, then a scale and a
   shift: splat constants, no weight vectors) or an RMSNorm (mean of
   squares, eps, rsqrt, scale) over the rows of a rows x cols tensor of
   dtype dt (rows < 0: `?`, a count known when it runs), as the text of @f. */
static void norm_text(strbuf *text, bool layer, long long rows, long long cols, const char *dt) {
    char F[64], R[64], rs[24] = "?";
    if (rows >= 0) snprintf(rs, sizeof rs, "%lld", rows);
    snprintf(F, sizeof F, "tensor<%sx%lldx%s>", rs, cols, dt);
    snprintf(R, sizeof R, "tensor<%sx1x%s>", rs, dt);
    strbuf_appendf(text, "func.func @f(%%x: %s) -> %s {\n", F, F);
    if (layer)
        strbuf_appendf(text,
                      "  %%m = reduce_mean %%x {axes = [1], keepdims = true} : (%s) -> %s\n"
                      "  %%d = sub %%x, %%m : (%s, %s) -> %s\n", F, R, F, R, F);
    const char *c = layer ? "%d" : "%x";       /* what is normalized: centred, or x itself */
    strbuf_appendf(text,
                  "  %%q = mul %s, %s : (%s, %s) -> %s\n"
                  "  %%v = reduce_mean %%q {axes = [1], keepdims = true} : (%s) -> %s\n"
                  "  %%eps = constant {value = 1.0e-5} : () -> tensor<%s>\n"
                  "  %%ve = add %%v, %%eps : (%s, tensor<%s>) -> %s\n"
                  "  %%r = rsqrt %%ve : (%s) -> %s\n"
                  "  %%n = mul %s, %%r : (%s, %s) -> %s\n"
                  "  %%g = constant {value = 1.5} : () -> tensor<%lldx%s>\n"
                  "  %%s = mul %%n, %%g : (%s, tensor<%lldx%s>) -> %s\n", c, c, F, F, F, F, R, dt, R, dt, R, R, R, c, F,
                  R, F, cols, dt, F, cols, dt, F);
    if (layer)
        strbuf_appendf(text,
                 "  %%b = constant {value = 0.25} : () -> tensor<%lldx%s>\n"
                 "  %%y = add %%s, %%b : (%s, tensor<%lldx%s>) -> %s\n  return %%y : %s\n}\n", cols, dt, F, cols, dt,
                 F, F);
    else strbuf_appendf(text, "  return %%s : %s\n}\n", F);
}

/* LayerNorm and RMSNorm over 16384 x 4096 (f32, bf16), then LayerNorm
   over rows of 16384 and 65536 f32: one row kernel each, against a copy
   of the same bytes. */
static int bench_norms(gpuir_ctx *ctx, bool gpu, int repeat) {
    static const char *dts[2] = {"f32", "bf16"};
    long long rows = gpu ? 16384 : 4, cols = 4096;
    int rc = 0;
    for (int layer = 1; layer >= 0; layer--)
        for (int d = 0; d < 2; d++) {
            char label[64];
            strbuf text = {NULL, 0, 0};
            norm_text(&text, layer, rows, cols, dts[d]);
            snprintf(label, sizeof label, "%s %lldx%lld, %s", layer ? "LayerNorm" : "RMSNorm", rows, cols, dts[d]);
            size_t bytes = (size_t)(rows * cols) * (d ? 2 : 4) * 2;
            rc |= gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
            free(text.buf);
        }
    /* long rows, f32, 128 MB: 16384 is past registers and cached in shared
       memory (read once); 65536 is past that too and streams, the mean
       and variance in one pass (read twice) */
    static const long long long_cols[2] = {16384, 65536};
    for (int i = 0; i < 2; i++) {
        char label[64];
        strbuf text = {NULL, 0, 0};
        long long long_rows = gpu ? (32ll << 20) / long_cols[i] : 2;
        norm_text(&text, true, long_rows, long_cols[i], "f32");
        snprintf(label, sizeof label, "LayerNorm %lldx%lld, f32", long_rows, long_cols[i]);
        size_t bytes = (size_t)(long_rows * long_cols[i]) * 4 * 2;
        rc |= gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
        free(text.buf);
    }
    return rc;
}

static gpuir_buffer e2e_buffer(gpuir_ctx *ctx, gpuir_backend be, const gpuir_array *a);
static void *e2e_capture(gpuir_ctx *ctx, gpuir_program *p, gpuir_run_desc *rd, const char *who);

/* gpuir's kernels for @f on device buffers (its inputs random, each `?`
   dim `dyn`), one run captured into a CUDA graph and the graph replayed,
   against a device-to-device copy of the bytes the function must move at
   least: bench_bw_case's figure for programs whose launches depend on
   their arguments' dims, which a replay of the plan does not know. */
static int bench_bw_graph(gpuir_ctx *ctx, const char *label, const char *text, long long dyn, size_t io_bytes,
                          int repeat) {
    if (!row_picked(label)) return 0;
    gpuir_module *ref = gpuir_module_parse(ctx, text, strlen(text), label);    /* the types, as written */
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), label);      /* lowered by program_make */
    gpuir_program_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.backend = GPUIR_BACKEND_CUDA;
    gpuir_program *p = m ? gpuir_program_make(m, &pd) : NULL;
    gpuir_array in[4];
    int n_in = p ? random_inputs(ctx, ref, dyn, in) : -1;
    gpuir_func f = ref ? gpuir_module_find_func(ref, "f") : (gpuir_func){0};
    size_t n_out = ref ? gpuir_func_result_count(ref, f) : 0;
    if (n_in < 0 || n_out > 4) {
        cli_err("gpuir-bench bandwidth: %s: %s\n", label,
                n_out > 4 ? "more than 4 results" : gpuir_ctx_error(ctx));
        while (n_in > 0) gpuir_array_release(&in[--n_in]);
        gpuir_program_destroy(p);
        gpuir_module_destroy(m);
        gpuir_module_destroy(ref);
        gpuir_ctx_clear_error(ctx);
        return 1;
    }
    gpuir_buffer buf[8];
    gpuir_arg args[8];
    for (int k = 0; k < n_in; k++) {
        buf[k] = e2e_buffer(ctx, GPUIR_BACKEND_CUDA, &in[k]);
        gpuir_buffer_upload(ctx, buf[k], &in[k], NULL);
        args[k] = gpuir_arg_buffer(buf[k]);
    }
    for (size_t o = 0; o < n_out; o++) {
        gpuir_type t = gpuir_func_result_type(ref, f, o);
        gpuir_buffer_desc bd;
        memset(&bd, 0, sizeof bd);
        bd.backend = GPUIR_BACKEND_CUDA;
        bd.dtype = t.dtype;
        bd.rank = t.rank;
        dims_at(&t, dyn, bd.dims);
        buf[n_in + o] = gpuir_buffer_make(ctx, &bd);
        args[n_in + o] = gpuir_arg_buffer(buf[n_in + o]);
    }
    gpuir_stream stream = gpuir_stream_make(ctx, GPUIR_BACKEND_CUDA);
    gpuir_run_desc rd = {"f", (size_t)n_in, args, n_out, args + n_in, stream};
    bool placed = gpuir_ctx_result(ctx) == GPUIR_OK;            /* the buffers, their data, the stream */
    if (!placed) cli_err("gpuir-bench bandwidth: %s: %s\n", label, gpuir_ctx_error(ctx));
    void *graph = placed ? e2e_capture(ctx, p, &rd, "gpuir-bench bandwidth") : NULL;
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
    C->cu->cuCtxPushCurrent(C->context);
    float tk = NAN, *ms = (float *)calloc((size_t)repeat, sizeof *ms);
    gpuir__CUevent e0, e1;
    C->cu->cuEventCreate(&e0, 0);
    C->cu->cuEventCreate(&e1, 0);
    int rc = graph ? 0 : 1;
    for (int i = -3; i < repeat && !rc; i++) {
        C->cu->cuEventRecord(e0, (gpuir__CUstream)stream);
        rc = C->cu->cuGraphLaunch((gpuir__CUgraphExec)graph, (gpuir__CUstream)stream);
        C->cu->cuEventRecord(e1, (gpuir__CUstream)stream);
        C->cu->cuEventSynchronize(e1);
        if (i >= 0 && !rc) C->cu->cuEventElapsedTime(&ms[i], e0, e1);
    }
    if (!rc) {
        qsort(ms, (size_t)repeat, sizeof *ms, cmp_float);
        tk = ms[repeat / 2];
    }
    free(ms);
    C->cu->cuEventDestroy(e0);
    C->cu->cuEventDestroy(e1);
    if (graph) C->cu->cuGraphExecDestroy((gpuir__CUgraphExec)graph);
    bench_bw_report(p, C, label, gpuir__internal_kernel_count(p), tk, io_bytes, repeat);
    gpuir__CUcontext popped;
    C->cu->cuCtxPopCurrent(&popped);
    if (rc && graph) cli_err("gpuir-bench bandwidth: %s: a graph launch failed (%d)\n", label, rc);
    gpuir_stream_destroy(ctx, stream);
    for (size_t k = 0; k < (size_t)n_in + n_out; k++) gpuir_buffer_destroy(ctx, buf[k]);
    for (int k = 0; k < n_in; k++) gpuir_array_release(&in[k]);
    gpuir_program_destroy(p);
    gpuir_module_destroy(m);
    gpuir_module_destroy(ref);
    gpuir_ctx_clear_error(ctx);
    return rc;
}

/* LayerNorm (f32) and RMSNorm (bf16) over `?` x 4096 with 16384 rows when
   they run: the row count known only then, the temporaries private to
   the kernel as with static rows (one kernel, no f32 copy of x written);
   against a copy of the same bytes, as the static rows of bench_norms. */
static int bench_dynamic_norms(gpuir_ctx *ctx, bool gpu, int repeat) {
    long long rows = gpu ? 16384 : 5, cols = 4096;
    int rc = 0;
    for (int layer = 1; layer >= 0; layer--) {
        const char *dt = layer ? "f32" : "bf16";
        char label[64];
        strbuf text = {NULL, 0, 0};
        norm_text(&text, layer, -1, cols, dt);
        snprintf(label, sizeof label, "%s ?x%lld (%lld rows), %s", layer ? "LayerNorm" : "RMSNorm", cols, rows, dt);
        size_t bytes = (size_t)(rows * cols) * (layer ? 4 : 2) * 2;
        rc |= gpu ? bench_bw_graph(ctx, label, text.buf, rows, bytes, repeat)
                  : check_on_emu_n(ctx, label, text.buf, 1, rows);
        free(text.buf);
    }
    return rc;
}

/* Cosine similarity of the rows of a and b (rows x 4096 f32) with the
   three products written before their row sums: one kernel that reads a
   and b once, against a copy of the same bytes. */
static int bench_cosine(gpuir_ctx *ctx, bool gpu, int repeat) {
    long long rows = gpu ? 16384 : 6, cols = 4096;
    char F[64], R[64];
    snprintf(F, sizeof F, "tensor<%lldx%lldxf32>", rows, cols);
    snprintf(R, sizeof R, "tensor<%lldxf32>", rows);
    strbuf text = {NULL, 0, 0};
    strbuf_appendf(&text, "func.func @f(%%a: %s, %%b: %s) -> %s {\n", F, F, R);
    static const char *const products[3][3] = {{"ab", "a", "b"}, {"aa", "a", "a"}, {"bb", "b", "b"}};
    for (int i = 0; i < 3; i++)
        strbuf_appendf(&text, "  %%%s = mul %%%s, %%%s : (%s, %s) -> %s\n", products[i][0], products[i][1],
                       products[i][2], F, F, F);
    for (int i = 0; i < 3; i++)
        strbuf_appendf(&text, "  %%s%s = reduce_sum %%%s {axes = [1]} : (%s) -> %s\n", products[i][0], products[i][0],
                       F, R);
    strbuf_appendf(&text,
                   "  %%p = mul %%saa, %%sbb : (%s, %s) -> %s\n"
                   "  %%r = rsqrt %%p : (%s) -> %s\n"
                   "  %%y = mul %%sab, %%r : (%s, %s) -> %s\n"
                   "  return %%y : %s\n}\n", R, R, R, R, R, R, R, R, R);
    char label[64];
    snprintf(label, sizeof label, "cosine, products first %lldx%lld, f32", rows, cols);
    size_t bytes = (size_t)(2 * rows * cols + rows) * 4;
    int rc = gpu ? bench_bw_case(ctx, label, text.buf, bytes, repeat) : check_on_emu(ctx, label, text.buf);
    free(text.buf);
    return rc;
}

/* Row groups with the elementwise chains beside them (one kernel each,
   were two): Gemma's RMSNorm `norm(x) * (1 + w)` in bf16 (torch's
   casts to f32 and back; the [4096] chain `1 + w` computed at each
   element), Mamba2's gated RMSNorm `norm(x) * w * silu(z)` in f32 (the
   chain silu(z) of the rows' shape: read z once, no intermediate), and
   a cross-entropy against class-weighted soft targets, `-sum(log_softmax(x)
   * (t * w))` a row, in f32; 16384 x 4096, against a copy of the bytes
   each must move. */
static int bench_row_chains(gpuir_ctx *ctx, bool gpu, int repeat) {
    long long rows = gpu ? 16384 : 4, cols = 4096;
    char F[64], B[64], R[64], W[64], label[80];
    snprintf(F, sizeof F, "tensor<%lldx%lldxf32>", rows, cols);
    snprintf(B, sizeof B, "tensor<%lldx%lldxbf16>", rows, cols);
    snprintf(R, sizeof R, "tensor<%lldx1xf32>", rows);
    snprintf(W, sizeof W, "tensor<%lldxf32>", cols);
    strbuf text = {NULL, 0, 0};
    strbuf_appendf(&text,
                   "func.func @f(%%xb: %s, %%wb: tensor<%lldxbf16>) -> %s {\n"
                   "  %%x = cast %%xb : (%s) -> %s\n"
                   "  %%q = mul %%x, %%x : (%s, %s) -> %s\n"
                   "  %%m = reduce_mean %%q {axes = [1], keepdims = true} : (%s) -> %s\n"
                   "  %%eps = constant {value = 1.0e-6} : () -> tensor<f32>\n"
                   "  %%me = add %%m, %%eps : (%s, tensor<f32>) -> %s\n"
                   "  %%r = rsqrt %%me : (%s) -> %s\n"
                   "  %%n = mul %%x, %%r : (%s, %s) -> %s\n"
                   "  %%w = cast %%wb : (tensor<%lldxbf16>) -> %s\n"
                   "  %%one = constant {value = 1.0} : () -> tensor<f32>\n"
                   "  %%w1 = add %%w, %%one : (%s, tensor<f32>) -> %s\n"
                   "  %%y = mul %%n, %%w1 : (%s, %s) -> %s\n"
                   "  %%yb = cast %%y : (%s) -> %s\n"
                   "  return %%yb : %s\n}\n",
                   B, cols, B, B, F, F, F, F, F, R, R, R, R, R, F, R, F, cols, W, W, W, F, W, F, F, B, B);
    snprintf(label, sizeof label, "Gemma RMSNorm, (1 + w) %lldx%lld, bf16", rows, cols);
    int rc = gpu ? bench_bw_case(ctx, label, text.buf, (size_t)(rows * cols) * 2 * 2, repeat)
                 : check_on_emu(ctx, label, text.buf);
    text.len = 0;
    strbuf_appendf(&text,
                   "func.func @f(%%x: %s, %%z: %s, %%w: %s) -> %s {\n"
                   "  %%q = mul %%x, %%x : (%s, %s) -> %s\n"
                   "  %%m = reduce_mean %%q {axes = [1], keepdims = true} : (%s) -> %s\n"
                   "  %%r = rsqrt %%m : (%s) -> %s\n"
                   "  %%n = mul %%x, %%r : (%s, %s) -> %s\n"
                   "  %%nw = mul %%n, %%w : (%s, %s) -> %s\n"
                   "  %%sz = sigmoid %%z : (%s) -> %s\n"
                   "  %%g = mul %%z, %%sz : (%s, %s) -> %s\n"
                   "  %%y = mul %%nw, %%g : (%s, %s) -> %s\n"
                   "  return %%y : %s\n}\n",
                   F, F, W, F, F, F, F, F, R, R, R, F, R, F, F, W, F, F, F, F, F, F, F, F, F, F);
    snprintf(label, sizeof label, "gated RMSNorm, * silu(z) %lldx%lld, f32", rows, cols);
    rc |= gpu ? bench_bw_case(ctx, label, text.buf, (size_t)(rows * cols) * 4 * 3, repeat)
              : check_on_emu(ctx, label, text.buf);
    text.len = 0;
    strbuf_appendf(&text,
                   "func.func @f(%%x: %s, %%t: %s, %%w: %s) -> %s {\n"
                   "  %%mx = reduce_max %%x {axes = [1], keepdims = true} : (%s) -> %s\n"
                   "  %%d = sub %%x, %%mx : (%s, %s) -> %s\n"
                   "  %%e = exp %%d : (%s) -> %s\n"
                   "  %%se = reduce_sum %%e {axes = [1], keepdims = true} : (%s) -> %s\n"
                   "  %%l = log %%se : (%s) -> %s\n"
                   "  %%lsm = sub %%d, %%l : (%s, %s) -> %s\n"
                   "  %%tw = mul %%t, %%w : (%s, %s) -> %s\n"
                   "  %%p = mul %%lsm, %%tw : (%s, %s) -> %s\n"
                   "  %%s = reduce_sum %%p {axes = [1], keepdims = true} : (%s) -> %s\n"
                   "  %%y = neg %%s : (%s) -> %s\n"
                   "  return %%y : %s\n}\n",
                   F, F, W, R, F, R, F, R, F, F, F, F, R, R, R, F, R, F, F, W, F, F, F, F, F, R, R, R, R);
    snprintf(label, sizeof label, "cross-entropy, weighted targets %lldx%lld, f32", rows, cols);
    rc |= gpu ? bench_bw_case(ctx, label, text.buf, (size_t)(rows * cols) * 4 * 2, repeat)
              : check_on_emu(ctx, label, text.buf);
    free(text.buf);
    return rc;
}

static int bench_bandwidth(int argc, char **argv) {
    int repeat = 30;
    long long n = 64ll << 20;                      /* 256 MB of f32 */
    static const cli_flag flags[] = {
        {"elements", required_argument, B_ELEMENTS, "N", "f32 elements per kernel (default 64M; 1024 or more)"},
        {"rows", required_argument, B_ROWS, "PAT[,PAT..]", "only the rows whose label holds a pattern (case ignored)"},
        B_REPEAT_FLAG("timed replays (default 30)"),
        B_HELP,
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *T = "gpuir-bench bandwidth";
    int c;
    optind = 1;
    while ((c = sub_next(argc, argv, T, flags, nf)) != -1) {
        if (c == B_REPEAT && cli_int32(T, "--repeat", optarg, 1, 1000000, &repeat)) continue;
        if (c == B_ELEMENTS && cli_int(T, "--elements", optarg, 1024, 1LL << 40, &n)) continue;
        if (c == B_ROWS && optarg[strspn(optarg, ",")]) { rows_pick.patterns = optarg; continue; }
        if (c == B_ROWS) { cli_err("%s: --rows=%s: no pattern\n", T, optarg); return 2; }
        int rc = sub_end(c, argc, argv, T, "usage: gpuir-bench bandwidth [options]", flags, nf);
        return rc < 0 ? 0 : rc;
    }
    if (optind <= argc) return sub_end(-1, argc, argv, T, NULL, flags, nf);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char why[512];
    bool gpu = gpuir_cuda_available(ctx, why, sizeof why);
    if (!gpu) {
        printf("no GPU (%s): the programs run on the emulator at 16K elements, for correctness only\n", why);
        n = 16 << 10;
    }
    strbuf text = {NULL, 0, 0};
    const char *ops[8][2] = {{"mul", "1.5"}, {"add", "0.25"}, {"max", "0.0"}, {"mul", "0.5"},
                             {"sub", "1.0"}, {"min", "4.0"}, {"add", "2.0"}, {"mul", "3.0"}};
    strbuf_appendf(&text, "func.func @f(%%x: tensor<%lldxf32>) -> tensor<%lldxf32> {\n", n, n);
    for (int i = 0; i < 8; i++)
        strbuf_appendf(&text,
                        "  %%c%d = constant {value = %s} : () -> tensor<%lldxf32>\n"
                        "  %%v%d = %s %%%s%d, %%c%d : (tensor<%lldxf32>, tensor<%lldxf32>) -> tensor<%lldxf32>\n",
                        i, ops[i][1], n, i + 1, ops[i][0], i ? "v" : "x", i ? i : 0, i, n, n, n);
    strbuf_appendf(&text, "  return %%v8 : tensor<%lldxf32>\n}\n", n);
    char *fix = strstr(text.buf, "%x0");                 /* the first op reads %x */
    if (fix) memmove(fix + 2, fix + 3, strlen(fix + 3) + 1), text.len--;
    int rc = gpu ? bench_bw_case(ctx, "elementwise chain of 8 ops, f32", text.buf, (size_t)n * 8, repeat)
                 : check_on_emu(ctx, "elementwise chain of 8 ops, f32", text.buf);
    long long cols = 4096, rows = n / cols;
    text.len = 0;
    strbuf_appendf(&text,
             "func.func @f(%%x: tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32> {\n"
             "  %%s = softmax %%x {axis = 1} : (tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32>\n"
             "  return %%s : tensor<%lldx%lldxf32>\n}\n", rows, cols, rows, cols, rows, cols, rows, cols, rows, cols);
    char label[64];
    snprintf(label, sizeof label, "row softmax %lldx%lld, f32", rows, cols);
    rc |= gpu ? bench_bw_case(ctx, label, text.buf, (size_t)n * 8, repeat) : check_on_emu(ctx, label, text.buf);
    for (int fused = 0; fused < 2; fused++) {     /* a transpose alone, then with ops on both sides (one kernel) */
        text.len = 0;
        strbuf_appendf(&text, "func.func @f(%%x: tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32> {\n", rows, cols, cols, rows);
        if (fused)
            strbuf_appendf(&text, "  %%g = gelu %%x : (tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32>\n", rows, cols, rows, cols);
        strbuf_appendf(&text, "  %%t = transpose %%%s {perm = [1, 0]} : (tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32>\n",
                       fused ? "g" : "x", rows, cols, cols, rows);
        if (fused)
            strbuf_appendf(&text, "  %%c = constant {value = 0.5} : () -> tensor<f32>\n"
                                  "  %%y = mul %%t, %%c : (tensor<%lldx%lldxf32>, tensor<f32>) -> tensor<%lldx%lldxf32>\n",
                           cols, rows, cols, rows);
        strbuf_appendf(&text, "  return %%%s : tensor<%lldx%lldxf32>\n}\n", fused ? "y" : "t", cols, rows);
        snprintf(label, sizeof label, fused ? "gelu, transpose, mul %lldx%lld, f32" : "transpose %lldx%lld, f32",
                 rows, cols);
        rc |= gpu ? bench_bw_case(ctx, label, text.buf, (size_t)n * 8, repeat) : check_on_emu(ctx, label, text.buf);
    }
    text.len = 0;                 /* elementwise siblings: three outputs of one input, one kernel */
    strbuf_appendf(&text,
                   "func.func @f(%%x: tensor<%lldxf32>) -> (tensor<%lldxf32>, tensor<%lldxf32>, tensor<%lldxf32>) {\n"
                   "  %%a = relu %%x : (tensor<%lldxf32>) -> tensor<%lldxf32>\n"
                   "  %%b = sigmoid %%x : (tensor<%lldxf32>) -> tensor<%lldxf32>\n"
                   "  %%c = constant {value = 2.0} : () -> tensor<f32>\n"
                   "  %%d = mul %%x, %%c : (tensor<%lldxf32>, tensor<f32>) -> tensor<%lldxf32>\n"
                   "  return %%a, %%b, %%d : tensor<%lldxf32>, tensor<%lldxf32>, tensor<%lldxf32>\n}\n",
                   n, n, n, n, n, n, n, n, n, n, n, n, n);
    rc |= gpu ? bench_bw_case(ctx, "relu, sigmoid, x*2 of one x, f32", text.buf, (size_t)n * 16, repeat)
              : check_on_emu_n(ctx, "relu, sigmoid, x*2 of one x, f32", text.buf, 3, 0);
    text.len = 0;                 /* two chains a mul ties: one kernel (gpuir__fuse_merge) */
    strbuf_appendf(&text,
                   "func.func @f(%%a: tensor<%lldxf32>, %%b: tensor<%lldxf32>) -> tensor<%lldxf32> {\n"
                   "  %%g = gelu %%a : (tensor<%lldxf32>) -> tensor<%lldxf32>\n"
                   "  %%s = sigmoid %%b : (tensor<%lldxf32>) -> tensor<%lldxf32>\n"
                   "  %%y = mul %%g, %%s : (tensor<%lldxf32>, tensor<%lldxf32>) -> tensor<%lldxf32>\n"
                   "  return %%y : tensor<%lldxf32>\n}\n", n, n, n, n, n, n, n, n, n, n, n);
    rc |= gpu ? bench_bw_case(ctx, "gelu(a) * sigmoid(b), f32", text.buf, (size_t)n * 12, repeat)
              : check_on_emu(ctx, "gelu(a) * sigmoid(b), f32", text.buf);
    for (int half = 0; half < 2; half++) {    /* a bias broadcast over rows: elementwise.v4 */
        const char *dt = half ? "bf16" : "f32";
        text.len = 0;
        strbuf_appendf(&text,
                       "func.func @f(%%x: tensor<%lldx%lldx%s>, %%b: tensor<%lldx%s>) -> tensor<%lldx%lldx%s> {\n"
                       "  %%s = add %%x, %%b : (tensor<%lldx%lldx%s>, tensor<%lldx%s>) -> tensor<%lldx%lldx%s>\n"
                       "  %%g = gelu %%s : (tensor<%lldx%lldx%s>) -> tensor<%lldx%lldx%s>\n"
                       "  return %%g : tensor<%lldx%lldx%s>\n}\n",
                       rows, cols, dt, cols, dt, rows, cols, dt, rows, cols, dt, cols, dt, rows, cols, dt,
                       rows, cols, dt, rows, cols, dt, rows, cols, dt);
        snprintf(label, sizeof label, "bias, gelu %lldx%lld, %s", rows, cols, dt);
        size_t esize = half ? 2 : 4;
        rc |= gpu ? bench_bw_case(ctx, label, text.buf, (size_t)n * 2 * esize + (size_t)cols * esize, repeat)
                  : check_on_emu(ctx, label, text.buf);
    }
    free(text.buf);
    rc |= bench_norms(ctx, gpu, repeat);
    rc |= bench_dynamic_norms(ctx, gpu, repeat);
    rc |= bench_row_chains(ctx, gpu, repeat);
    rc |= bench_cosine(ctx, gpu, repeat);
    rc |= bench_siblings(ctx, gpu, repeat);
    rc |= bench_batchnorm(ctx, gpu, repeat);
    rc |= bench_batchnorm_nchw(ctx, gpu, repeat);
    rc |= bench_instancenorm(ctx, gpu, repeat);
    rc |= bench_groupnorm(ctx, gpu, repeat);
    rc |= bench_layernorm_channels(ctx, gpu, repeat);
    rc |= bench_softmax_channels(ctx, gpu, repeat);
    rc |= bench_column_means(ctx, gpu, repeat);
    rc |= bench_total(ctx, gpu, repeat);
    rc |= bench_transposes(ctx, gpu, repeat);
    gpuir_ctx_destroy(ctx);
    int none = rows_pick_end(T);
    return none ? none : rc;
}


/* ---- host <-> device copies ---- */

/* Host-to-device through two pinned chunks: the host copies chunk i while
   the DMA engine moves chunk i-1. Returns the driver status. */
static int staged_htod(const gpuir__internal_cuda *C, gpuir__dptr dst, const char *src, size_t bytes, char *pin[2], size_t chunk,
                       gpuir__CUevent done[2]) {
    int rc = 0;
    for (size_t off = 0, i = 0; off < bytes && !rc; off += chunk, i++) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        if (i >= 2) rc = C->cu->cuEventSynchronize(done[i % 2]);
        memcpy(pin[i % 2], src + off, n);
        if (!rc) rc = C->cu->cuMemcpyHtoDAsync(dst + off, pin[i % 2], n, NULL);
        if (!rc) rc = C->cu->cuEventRecord(done[i % 2], NULL);
    }
    return rc ? rc : C->cu->cuCtxSynchronize();
}

/* Device-to-host through two pinned chunks: chunk i+1 is in flight while
   the host copies chunk i out. */
static int staged_dtoh(const gpuir__internal_cuda *C, char *dst, gpuir__dptr src, size_t bytes, char *pin[2], size_t chunk,
                       gpuir__CUevent done[2]) {
    size_t n_chunks = (bytes + chunk - 1) / chunk;
    int rc = 0;
    for (size_t i = 0; i < n_chunks && i < 2 && !rc; i++) {
        size_t off = i * chunk, n = bytes - off < chunk ? bytes - off : chunk;
        rc = C->cu->cuMemcpyDtoHAsync(pin[i % 2], src + off, n, NULL);
        if (!rc) rc = C->cu->cuEventRecord(done[i % 2], NULL);
    }
    for (size_t i = 0; i < n_chunks && !rc; i++) {
        size_t off = i * chunk, n = bytes - off < chunk ? bytes - off : chunk;
        rc = C->cu->cuEventSynchronize(done[i % 2]);
        if (!rc) memcpy(dst + off, pin[i % 2], n);
        size_t next = i + 2;
        if (!rc && next < n_chunks) {
            size_t o2 = next * chunk, n2 = bytes - o2 < chunk ? bytes - o2 : chunk;
            rc = C->cu->cuMemcpyDtoHAsync(pin[next % 2], src + o2, n2, NULL);
            if (!rc) rc = C->cu->cuEventRecord(done[next % 2], NULL);
        }
    }
    return rc;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median wall-clock ms of `repeat` runs of one copy variant (the calls are
   synchronous, so the host clock is right). */
static double time_copy(const gpuir__internal_cuda *C, int variant, gpuir__dptr dev, char *pageable, char *pinned, size_t bytes,
                        char *pin[2], size_t chunk, gpuir__CUevent done[2], int repeat) {
    double t[64];
    if (repeat > 64) repeat = 64;
    int rc = 0;
    for (int i = -2; i < repeat && !rc; i++) {
        double t0 = now_ms();
        switch (variant) {
        case 0: rc = C->cu->cuMemcpyHtoD(dev, pageable, bytes); break;
        case 1: rc = C->cu->cuMemcpyHtoD(dev, pinned, bytes); break;
        case 2: rc = staged_htod(C, dev, pageable, bytes, pin, chunk, done); break;
        case 6: rc = C->cu->cuMemHostRegister(pageable, bytes, 0);
                if (!rc) rc = C->cu->cuMemcpyHtoD(dev, pageable, bytes);
                if (!rc) rc = C->cu->cuMemHostUnregister(pageable);
                break;
        case 7: rc = C->cu->cuMemHostRegister(pageable, bytes, 0);
                if (!rc) rc = C->cu->cuMemcpyDtoH(pageable, dev, bytes);
                if (!rc) rc = C->cu->cuMemHostUnregister(pageable);
                break;
        case 3: rc = C->cu->cuMemcpyDtoH(pageable, dev, bytes); break;
        case 4: rc = C->cu->cuMemcpyDtoH(pinned, dev, bytes); break;
        default: rc = staged_dtoh(C, pageable, dev, bytes, pin, chunk, done); break;
        }
        if (i >= 0) t[i] = now_ms() - t0;
    }
    if (rc) { cli_err("gpuir-bench: copy variant %d failed with status %d\n", variant, rc); return NAN; }
    qsort(t, (size_t)repeat, sizeof t[0], cmp_double);
    return t[repeat / 2];
}

/* The staged copies move the right bytes: a size that is not a multiple
   of the chunk (the last chunk short) through staged_htod, read back
   plainly, and through staged_dtoh into a cleared buffer. 0 when both
   arrive intact. */
static int check_staged(const gpuir__internal_cuda *C, gpuir__dptr dev, char *pageable, char *pinned, size_t bytes, char *pin[2],
                        size_t chunk, gpuir__CUevent done[2]) {
    size_t n = bytes > chunk + 12345 ? bytes - 12345 : bytes;
    for (size_t i = 0; i < n; i++) pageable[i] = (char)(i * 131 + 7);
    int rc = staged_htod(C, dev, pageable, n, pin, chunk, done);
    if (!rc) rc = C->cu->cuMemcpyDtoH(pinned, dev, n);
    int bad = rc || memcmp(pinned, pageable, n) != 0;
    memset(pageable, 0, n);
    if (!rc) rc = staged_dtoh(C, pageable, dev, n, pin, chunk, done);
    bad |= rc || memcmp(pinned, pageable, n) != 0;
    printf("staged copies of %zu bytes (%zu chunks of %zu, the last short): %s\n", n, (n + chunk - 1) / chunk, chunk,
           bad ? "WRONG BYTES" : "arrive intact both ways");
    return bad;
}

static int bench_copy(int argc, char **argv) {
    long long mb = 256, chunk_mb = 8;
    int repeat = 10;
    static const cli_flag flags[] = {
        {"mb", required_argument, B_MB, "N", "megabytes to copy (default 256)"},
        {"chunk-mb", required_argument, B_CHUNK_MB, "C", "megabytes of each pinned staging chunk (default 8)"},
        B_REPEAT_FLAG("timed copies (default 10)"),
        B_HELP,
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *T = "gpuir-bench copy";
    int c;
    optind = 1;
    while ((c = sub_next(argc, argv, T, flags, nf)) != -1) {
        if (c == B_MB && cli_int(T, "--mb", optarg, 1, 1 << 20, &mb)) continue;
        if (c == B_CHUNK_MB && cli_int(T, "--chunk-mb", optarg, 1, 1 << 20, &chunk_mb)) continue;
        if (c == B_REPEAT && cli_int32(T, "--repeat", optarg, 1, 1000000, &repeat)) continue;
        int rc = sub_end(c, argc, argv, T, "usage: gpuir-bench copy [options]", flags, nf);
        return rc < 0 ? 0 : rc;
    }
    if (optind <= argc) return sub_end(-1, argc, argv, T, NULL, flags, nf);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_program_desc d;
    gpuir_program *p = cuda_probe(ctx, &d);
    if (!p) {
        printf("no GPU (%s): nothing to measure\n", gpuir_ctx_error(ctx));
        gpuir_ctx_destroy(ctx);
        return 0;
    }
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
    size_t bytes = (size_t)mb << 20, chunk = (size_t)chunk_mb << 20;
    C->cu->cuCtxPushCurrent(C->context);
    gpuir__dptr dev = 0;
    void *pinned = NULL, *pin[2] = {NULL, NULL};
    char *pageable = (char *)malloc(bytes);
    gpuir__CUevent done[2];
    int rc = C->cu->cuMemAlloc(&dev, bytes) || C->cu->cuMemAllocHost(&pinned, bytes) ||
             C->cu->cuMemAllocHost(&pin[0], chunk) || C->cu->cuMemAllocHost(&pin[1], chunk) ||
             C->cu->cuEventCreate(&done[0], 0) || C->cu->cuEventCreate(&done[1], 0) || !pageable;
    if (!rc) {
        memset(pageable, 0x5a, bytes);
        memset(pinned, 0x5a, bytes);
        static const char *const names[8] = {"H2D pageable (cuMemcpyHtoD)", "H2D pinned (cuMemcpyHtoD)",
                                             "H2D staged through pinned chunks", "D2H pageable (cuMemcpyDtoH)",
                                             "D2H pinned (cuMemcpyDtoH)", "D2H staged through pinned chunks",
                                             "H2D register, copy, unregister", "D2H register, copy, unregister"};
        double ms[8];
        for (int v = 0; v < 8; v++)
            ms[v] = time_copy(C, v, dev, pageable, (char *)pinned, bytes, (char **)pin, chunk, done, repeat);
        for (int v = 0; v < 8; v++) {
            double ref = ms[v < 3 || v == 6 ? 1 : 4];
            printf("%-34s %lld MB %8.3f ms %6.1f GB/s  at %5.1f %% of pinned\n", names[v], mb, ms[v],
                   bytes / (ms[v] * 1e6), 100.0 * ref / ms[v]);
            printf("bench copy variant=%d mb=%lld chunk_mb=%lld ms=%.4f gbps=%.2f\n", v, mb, chunk_mb, ms[v],
                   bytes / (ms[v] * 1e6));
            plot_add("bandwidth / pinned cuMemcpy bandwidth", names[v], ref / ms[v]);
            plot_from("cuda (GPU, wall clock)");
        }
        rc = check_staged(C, dev, pageable, (char *)pinned, bytes, (char **)pin, chunk, done);
    } else cli_err("gpuir-bench copy: allocation failed\n");
    if (dev) C->cu->cuMemFree(dev);
    if (pinned) C->cu->cuMemFreeHost(pinned);
    for (int i = 0; i < 2; i++) if (pin[i]) C->cu->cuMemFreeHost(pin[i]);
    free(pageable);
    gpuir__CUcontext popped;
    C->cu->cuCtxPopCurrent(&popped);
    gpuir_ctx_destroy(ctx);
    return rc;
}


/* ---- compile latency ---- */

/* One make of a program from text in a fresh context on `dir`: the whole
   time (parse to a loaded program), the parse measured here, the make's
   phases (gpuir_program_stats: the passes are the make's, none when it
   finds the lowered program in the cache) and the context's cache
   counters. */
typedef struct make_timing {
    double total, parse, passes;
    gpuir_program_stats st;
    gpuir_cache_stats cache;
    size_t source_bytes;
} make_timing;

/* A small program a context makes first, when timing a make in a context
   that is already up (its backend opened, its cache read, the emulator's
   compiler identified): what each further program of a process pays. */
static const char warmup_text[] =
    "func.func @warmup(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
    "  %y = exp %x : (tensor<8xf32>) -> tensor<8xf32>\n"
    "  return %y : tensor<8xf32>\n}\n";

/* What a context does before the timed make: nothing (a fresh context),
   makes another program (the context up), or makes this one (the same
   program again: what a second make in a process pays). */
enum { FRESH_CONTEXT, CONTEXT_UP, SAME_AGAIN };

static bool time_program(const char *file, const char *text, size_t len, const char *dir, gpuir_backend b,
                         int before_make, make_timing *t) {
    memset(t, 0, sizeof *t);
    gpuir_ctx_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.cache_dir = dir;
    gpuir_ctx *ctx = gpuir_ctx_make(&cd);
    gpuir_program_desc wd;
    memset(&wd, 0, sizeof wd);
    wd.backend = b;
    const char *first = before_make == CONTEXT_UP ? warmup_text : text;
    size_t first_len = before_make == CONTEXT_UP ? strlen(warmup_text) : len;
    if (before_make != FRESH_CONTEXT &&
        !gpuir_program_make(gpuir_module_parse(ctx, first, first_len, "warmup"), &wd))
        cli_err("gpuir-bench compile: warm-up program: %s\n", gpuir_ctx_error(ctx));
    gpuir_cache_stats before = gpuir_ctx_cache_stats(ctx);
    double t0 = now_ms();
    gpuir_module *m = gpuir_module_parse(ctx, text, len, file);
    double t1 = now_ms();               /* the make lowers it (or takes it lowered from the cache) */
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = b;
    gpuir_program *p = m ? gpuir_program_make(m, &d) : NULL;
    double t3 = now_ms();
    if (!p) cli_err("gpuir-bench compile: %s\n", gpuir_ctx_error(ctx));
    t->total = t3 - t0, t->parse = t1 - t0, t->passes = 0;
    if (p) t->st = gpuir_program_get_stats(p);
    t->source_bytes = p ? strlen(gpuir_program_source(p)) : 0;
    t->cache = gpuir_ctx_cache_stats(ctx);
    t->cache.mem_hits -= before.mem_hits, t->cache.disk_hits -= before.disk_hits;
    t->cache.misses -= before.misses, t->cache.compiles -= before.compiles;
    t->cache.lowered_hits -= before.lowered_hits;
    gpuir_ctx_destroy(ctx);
    return p != NULL;
}

static int cmp_timing(const void *a, const void *b) {
    double x = ((const make_timing *)a)->total, y = ((const make_timing *)b)->total;
    return x < y ? -1 : x > y;
}

static void print_make(const char *what, const make_timing *t) {
    const gpuir_program_stats *s = &t->st;
    double known = t->parse + t->passes + s->open_ms + s->lower_ms + s->codegen_ms + s->cache_ms + s->compile_ms +
                   s->load_ms;
    printf("  %s %9.3f ms to a loaded program: parse %.3f, passes %.3f, backend open %.3f, codegen %.3f, "
           "cache %.3f, compile %.3f, load %.3f, other %.3f (cache: misses %llu, disk hits %llu, compiles %llu, "
           "lowered-program hits %llu)\n",
           what, t->total, t->parse, t->passes + s->lower_ms, s->open_ms, s->codegen_ms, s->cache_ms,
           s->compile_ms, s->load_ms, t->total - known, (unsigned long long)t->cache.misses,
           (unsigned long long)t->cache.disk_hits, (unsigned long long)t->cache.compiles,
           (unsigned long long)t->cache.lowered_hits);
}

/* NVRTC's own phase times (--time=-: a CSV table in the log, "file, phase,
   value, ms"): the front end, the NVVM optimizer and PTX translation (ptxas;
   absent for a PTX target). */
typedef struct nvrtc_phases { double total, frontend, optimizer, ptxas; long spill; } nvrtc_phases;

static void nvrtc_read_phases(const char *log, nvrtc_phases *ph) {
    static const char *const names[3] = {"CUDA C++ Frontend", "NVVM Optimizer", "PTX Translation"};
    double *slots[3] = {&ph->frontend, &ph->optimizer, &ph->ptxas};
    for (int k = 0; k < 3; k++) {
        const char *at = strstr(log, names[k]);
        if (at) *slots[k] = strtod(at + strlen(names[k]) + 1, NULL);
    }
}

/* NVRTC on `source` for sm_<sm> (cubin), `reps` times, the run of least
   total time kept; its cache is off (gpuir always passes --no-cache). */
static bool nvrtc_time(gpuir_ctx *ctx, gpuir__nvrtc *nv, const char *source, int sm, bool wgmma, int reps,
                       nvrtc_phases *best) {
    /* NVRTC 13.0 leaves the table out of the log when ptxas is verbose
       (--time=-), so it goes to a file of its own. */
    char csv[] = "/tmp/gpuir-bench-nvrtc-time-XXXXXX", opt[64];
    int fd = mkstemp(csv);
    if (fd < 0) return false;
    close(fd);
    snprintf(opt, sizeof opt, "--time=%s", csv);
    memset(best, 0, sizeof *best);
    for (int i = 0; i < reps; i++) {
        unlink(csv);
        nvrtc_phases ph;
        memset(&ph, 0, sizeof ph);
        double t0 = now_ms();
        gpuir_result r = gpuir__internal_nvrtc_compile(ctx, nv, source, sm, wgmma, opt, &ph.spill);
        ph.total = now_ms() - t0;
        size_t table_len = 0;
        char *table = r ? NULL : read_text(csv, &table_len);
        if (table) nvrtc_read_phases(table, &ph);
        free(table);
        if (r) { unlink(csv); return false; }
        if (i == 0 || ph.total < best->total) *best = ph;
    }
    unlink(csv);
    return true;
}

/* NVRTC's phases for the module's CUDA C, sm_90 and sm_80 cubins. */
static void bench_nvrtc_phases(const char *file, const char *text, size_t len) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_parse(ctx, text, len, file);
    if (m) gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL);
    bool wgmma = false;
    char *source = m && !gpuir_ctx_result(ctx) ? gpuir__internal_cuda_source(m, &wgmma) : NULL;
    gpuir__nvrtc nv;
    double t0 = now_ms();
    gpuir_result r = source ? gpuir__internal_nvrtc_load(ctx, &nv) : gpuir_ctx_result(ctx);
    double t1 = now_ms();
    if (r) printf("  NVRTC: %s\n", gpuir_ctx_error(ctx));
    else printf("  NVRTC %d.%d library load %.1f ms; phases (NVRTC's --time, its cache off, best of 3):\n", nv.major,
                nv.minor, t1 - t0);
    static const int sms[2] = {90, 80};
    for (int i = 0; !r && i < 2; i++) {
        nvrtc_phases ph;
        if (!nvrtc_time(ctx, &nv, source, sms[i], wgmma, 3, &ph)) {
            printf("  NVRTC sm_%d: %s\n", sms[i], gpuir_ctx_error(ctx));
            break;
        }
        double other = ph.total - ph.frontend - ph.optimizer - ph.ptxas;
        printf("    sm_%d%s cubin %7.1f ms: front end %.0f, NVVM optimizer %.0f, ptxas %.0f, other %.0f; largest "
               "spill %ld bytes\n", sms[i], wgmma && sms[i] == 90 ? "a" : "", ph.total, ph.frontend, ph.optimizer,
               ph.ptxas, other, ph.spill);
        printf("bench compile %s nvrtc sm=%d total_ms=%.1f frontend_ms=%.0f nvvm_ms=%.0f ptxas_ms=%.0f other_ms=%.1f "
               "spill=%ld\n", file, sms[i], ph.total, ph.frontend, ph.optimizer, ph.ptxas, other, ph.spill);
    }
    if (!r) gpuir__internal_nvrtc_unload(&nv);
    free(source);
    gpuir_ctx_destroy(ctx);
}

/* Whether FILE's text parses and verifies; if not, its error (at its own
   file and line) is the command's only output: no timings of nothing, no
   parse error repeated as NVRTC's. */
static bool compile_input_parses(const char *file, const char *text, size_t len) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    bool ok = gpuir_module_parse(ctx, text, len, file) != NULL;
    if (!ok) cli_err("gpuir-bench compile: %s\n", gpuir_ctx_error(ctx));
    gpuir_ctx_destroy(ctx);
    return ok;
}

/* Cold (empty cache) and warm (a disk hit, median of 9: in a fresh
   context, and in a context that has made another program) time to a
   loaded program with its phases, on CUDA when there is a GPU,
   else on the emulator; and, anywhere NVRTC is, NVRTC's own phases for
   sm_90 and sm_80. NVRTC's cache is always off (gpuir passes --no-cache):
   with it, a "cold" make of a source NVRTC had compiled before in another
   process took 13.4 ms on an H100 machine, a hit gpuir could not see. */
static int bench_compile(int argc, char **argv) {
    if (argc == 1 && strcmp(argv[0], "--help") == 0) {
        printf("usage: gpuir-bench compile FILE\n\nTime to a loaded program from FILE's text, cold and warm, by "
               "phase; and NVRTC's own phases (front end, NVVM optimizer, ptxas) for sm_90 and sm_80.\n");
        return 0;
    }
    if (argc != 1 || argv[0][0] == '-') {
        cli_err("usage: gpuir-bench compile FILE (see gpuir-bench compile --help)\n");
        return 2;
    }
    size_t len;
    char *text = read_text(argv[0], &len);
    if (!text) { cli_err("gpuir-bench compile: cannot read %s\n", argv[0]); return 1; }
    if (!compile_input_parses(argv[0], text, len)) { free(text); return 1; }
    char dir[] = "/tmp/gpuir-bench-cache-XXXXXX";
    if (!mkdtemp(dir)) { free(text); return 1; }
    /* A context that keeps the device up while the others are timed, as an
       application that already runs something would: its start-up (driver
       initialization, the primary context) is reported on its own. */
    gpuir_ctx *keeper = gpuir_ctx_make(NULL);
    gpuir_program_desc kd;
    double k0 = now_ms();
    gpuir_program *kp = cuda_probe(keeper, &kd);
    double k1 = now_ms();
    gpuir_backend b = kp ? GPUIR_BACKEND_CUDA : GPUIR_BACKEND_EMU;
    make_timing cold, warm[9], up[9], again[9];
    bool ok = time_program(argv[0], text, len, dir, b, FRESH_CONTEXT, &cold);
    for (int i = 0; ok && i < 9; i++) ok = time_program(argv[0], text, len, dir, b, FRESH_CONTEXT, &warm[i]);
    for (int i = 0; ok && i < 9; i++) ok = time_program(argv[0], text, len, dir, b, CONTEXT_UP, &up[i]);
    for (int i = 0; ok && i < 9; i++) ok = time_program(argv[0], text, len, dir, b, SAME_AGAIN, &again[i]);
    qsort(warm, 9, sizeof warm[0], cmp_timing);
    qsort(up, 9, sizeof up[0], cmp_timing);
    qsort(again, 9, sizeof again[0], cmp_timing);
    printf("%s on %s: CUDA C %zu bytes\n", argv[0], gpuir_backend_name(b), cold.source_bytes);
    if (kp) printf("  device start-up (first program of the process, a 64x64 matmul): %.1f ms\n", k1 - k0);
    if (ok) {
        print_make("cold:", &cold);
        print_make("warm, fresh context:", &warm[4]);
        print_make("warm, context up:", &up[4]);
        print_make("warm, same program again:", &again[4]);
        printf("bench compile %s backend=%s cold_ms=%.2f warm_ms=%.3f warm_open_ms=%.3f warm_codegen_ms=%.3f "
               "warm_cache_ms=%.3f warm_load_ms=%.3f warm_compiles=%llu warm_up_ms=%.3f warm_up_cache_ms=%.3f "
               "warm_up_load_ms=%.3f warm_again_ms=%.3f warm_again_cache_ms=%.3f warm_again_load_ms=%.3f "
               "cold_compile_ms=%.2f source_bytes=%zu\n",
               argv[0], gpuir_backend_name(b), cold.total, warm[4].total, warm[4].st.open_ms, warm[4].st.codegen_ms,
               warm[4].st.cache_ms, warm[4].st.load_ms, (unsigned long long)warm[4].cache.compiles, up[4].total,
               up[4].st.cache_ms, up[4].st.load_ms, again[4].total, again[4].st.cache_ms, again[4].st.load_ms,
               cold.st.compile_ms, cold.source_bytes);
    }
    bench_nvrtc_phases(argv[0], text, len);
    gpuir_ctx_destroy(keeper);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    int rc = system(cmd);
    free(text);
    return ok && rc == 0 ? 0 : 1;
}

/* ---- passes: the pipeline's cost per op ---- */

/* A program of about n ops (*ops gets how many): blocks of eight (matmul,
   bias, relu, exp, row sum, divide, tanh, mul) on 16x16 tensors, each block
   feeding the next. */
static char *passes_program(long n, long *ops) {
    strbuf s = {NULL, 0, 0};
    strbuf_appendf(&s, "func.func @g(%%x: tensor<16x16xf32>, %%w: tensor<16x16xf32>, %%b: tensor<16xf32>)"
                           " -> tensor<16x16xf32> {\n");
    const char *h = "%x";
    char prev[32];
    long blocks = n / 8 > 0 ? n / 8 : 1;
    *ops = blocks * 8;
    for (long i = 0; i < blocks; i++) {
        const char *t = "tensor<16x16xf32>";
        strbuf_appendf(&s, "  %%m%ld = matmul %s, %%w : (%s, %s) -> %s\n", i, h, t, t, t);
        strbuf_appendf(&s, "  %%a%ld = add %%m%ld, %%b : (%s, tensor<16xf32>) -> %s\n", i, i, t, t);
        strbuf_appendf(&s, "  %%r%ld = relu %%a%ld : (%s) -> %s\n", i, i, t, t);
        strbuf_appendf(&s, "  %%e%ld = exp %%r%ld : (%s) -> %s\n", i, i, t, t);
        strbuf_appendf(&s, "  %%s%ld = reduce_sum %%e%ld {axes = [1], keepdims = true} : (%s) -> tensor<16x1xf32>\n",
                           i, i, t);
        strbuf_appendf(&s, "  %%d%ld = div %%e%ld, %%s%ld : (%s, tensor<16x1xf32>) -> %s\n", i, i, i, t, t);
        strbuf_appendf(&s, "  %%t%ld = tanh %%d%ld : (%s) -> %s\n", i, i, t, t);
        strbuf_appendf(&s, "  %%h%ld = mul %%t%ld, %%x : (%s, %s) -> %s\n", i, i, t, t, t);
        snprintf(prev, sizeof prev, "%%h%ld", i);
        h = prev;
    }
    strbuf_appendf(&s, "  return %s : tensor<16x16xf32>\n}\n", h);
    return s.buf;
}

/* Milliseconds to parse, then each pass of the default pipeline (out[0]:
   parse, out[1..]: the passes); false on any error. */
static bool passes_time(const char *text, double *out, int n_passes, char names[][32], bool verify) {
    gpuir_pass_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.disable_verify = !verify;
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    double t0 = now_ms();
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "generated");
    out[0] = now_ms() - t0;
    bool ok = m != NULL;
    for (int i = 0; ok && i < n_passes; i++) {
        t0 = now_ms();
        ok = gpuir_module_run_passes(m, names[i], &pd) == GPUIR_OK;
        out[i + 1] = now_ms() - t0;
    }
    if (!ok) cli_err("gpuir-bench passes: %s\n", gpuir_ctx_error(ctx));
    gpuir_ctx_destroy(ctx);
    return ok;
}

/* --ops=N,N,...: 1 to 8 sizes, each a count of 1 or more. */
static bool parse_sizes(const char *text, long sizes[8], int *n_sizes) {
    int n = 0;
    for (const char *p = text;; p++) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || *p < '0' || *p > '9' || errno || v < 1 || v > 100000000 || n == 8 || (*end && *end != ',')) {
            cli_err("gpuir-bench passes: --ops wants 1 to 8 counts of 1 or more, comma-separated, not '%s'\n",
                    text);
            return false;
        }
        sizes[n++] = v;
        p = end;
        if (!*p) break;
    }
    *n_sizes = n;
    return true;
}

static int bench_passes(int argc, char **argv) {
    long sizes[8] = {1000, 10000, 100000};
    int n_sizes = 3, repeat = 3;
    bool verify = true;
    static const cli_flag flags[] = {
        {"ops", required_argument, B_OPS, "N,N,...", "program sizes in ops (default 1000,10000,100000; at most 8)"},
        B_REPEAT_FLAG("runs per size, the best counts (default 3)"),
        {"no-verify", no_argument, B_NO_VERIFY, NULL, "do not run the verifier after each pass"},
        B_HELP,
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *T = "gpuir-bench passes";
    int c;
    optind = 1;
    while ((c = sub_next(argc, argv, T, flags, nf)) != -1) {
        if (c == B_OPS && parse_sizes(optarg, sizes, &n_sizes)) continue;
        if (c == B_REPEAT && cli_int32(T, "--repeat", optarg, 1, 1000000, &repeat)) continue;
        if (c == B_NO_VERIFY) { verify = false; continue; }
        int rc = sub_end(c, argc, argv, T, "usage: gpuir-bench passes [options]", flags, nf);
        return rc < 0 ? 0 : rc;
    }
    if (optind <= argc) return sub_end(-1, argc, argv, T, NULL, flags, nf);
    char names[16][32];
    int n_passes = 0;
    for (const char *p = GPUIR_DEFAULT_PIPELINE; *p && n_passes < 16;) {
        size_t len = strcspn(p, ",");
        snprintf(names[n_passes++], sizeof names[0], "%.*s", (int)len, p);
        p += len + (p[len] == ',');
    }
    printf("%-8s %9s", "ops", "parse");
    for (int i = 0; i < n_passes; i++) printf(" %*.*s", 9, 9, names[i]);
    printf(" %9s %9s %7s\n", "total ms", "us/op", "vs 1st");
    double first_per_op = 0;
    for (int k = 0; k < n_sizes; k++) {
        long ops;
        char *text = passes_program(sizes[k], &ops);
        double best[17], t[17];
        for (int i = 0; i <= n_passes; i++) best[i] = 1e300;
        for (int r = 0; r < repeat; r++) {
            if (!passes_time(text, t, n_passes, names, verify)) { free(text); return 1; }
            for (int i = 0; i <= n_passes; i++) if (t[i] < best[i]) best[i] = t[i];
        }
        free(text);
        double total = 0;
        for (int i = 1; i <= n_passes; i++) total += best[i];
        double per_op = total * 1e3 / (double)ops;
        if (k == 0) first_per_op = per_op;
        printf("%-8ld %9.2f", ops, best[0]);
        for (int i = 1; i <= n_passes; i++) printf(" %9.2f", best[i]);
        printf(" %9.2f %9.3f %7.2f\n", total, per_op, per_op / first_per_op);
        printf("bench passes ops=%ld verify=%d parse_ms=%.3f passes_ms=%.3f us_per_op=%.4f vs_smallest=%.3f\n", ops,
               verify, best[0], total, per_op, per_op / first_per_op);
        char label[64];
        snprintf(label, sizeof label, "%ld ops", ops);
        plot_add("time per op / that of the smallest program", label, per_op / first_per_op);
        plot_from("the host CPU (the pass pipeline; no device)");
    }
    return 0;
}

/* ---- launch: host overhead per kernel ---- */

/* N chained 16x16 matmuls: N kernels (matmuls never share one), one input
   upload per operand and one download. */
static char *launch_program(int n) {
    strbuf s = {NULL, 0, 0};
    const char *t = "tensor<16x16xf32>";
    strbuf_appendf(&s, "func.func @chain(%%x: %s, %%w: %s) -> %s {\n", t, t, t);
    strbuf_appendf(&s, "  %%h0 = matmul %%x, %%w : (%s, %s) -> %s\n", t, t, t);
    for (int i = 1; i < n; i++)
        strbuf_appendf(&s, "  %%h%d = matmul %%h%d, %%w : (%s, %s) -> %s\n", i, i - 1, t, t, t);
    strbuf_appendf(&s, "  return %%h%d : %s\n}\n", n - 1, t);
    return s.buf;
}

/* A device table that does nothing (allocations get distinct fake
   addresses): what is left of a run is gpuir's own host work. */
static unsigned long long null_next = 0x1000;
static int null_self(void *self) { (void)self; return 0; }
static int null_reserve(void *self, unsigned s, unsigned e) { (void)self; (void)s; (void)e; return 0; }
static int null_alloc(void *self, gpuir__dptr *p, size_t n, unsigned s) {
    (void)self; (void)s;
    *p = null_next += (n + 255) & ~(size_t)255;
    return 0;
}
static int null_free(void *self, gpuir__dptr p, unsigned s) { (void)self; (void)p; (void)s; return 0; }
static int null_htod(void *self, gpuir__dptr d, const void *h, size_t n, unsigned s) {
    (void)self; (void)d; (void)h; (void)n; (void)s; return 0;
}
static int null_dtoh(void *self, void *h, gpuir__dptr d, size_t n, unsigned s) {
    (void)self; (void)d; (void)s;
    memset(h, 0, n);            /* the outputs the caller gets are defined */
    return 0;
}
static int null_dtod(void *self, gpuir__dptr d, gpuir__dptr e, size_t n, unsigned s) {
    (void)self; (void)d; (void)e; (void)n; (void)s; return 0;
}
static int null_launch(void *self, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem,
                       void **params, unsigned n_params, unsigned s) {
    (void)self; (void)fn; (void)grid; (void)block; (void)smem; (void)params; (void)n_params; (void)s; return 0;
}
static int null_event(void *self, unsigned a, unsigned b) { (void)self; (void)a; (void)b; return 0; }
static int null_event_sync(void *self, unsigned e) { (void)self; (void)e; return 0; }
static int null_host_alloc(void *self, void **p, size_t n) {
    (void)self;
    *p = malloc(n ? n : 1);
    return *p ? 0 : 2;
}
static int null_host_free(void *self, void *p) { (void)self; free(p); return 0; }
static int null_capture_begin(void *self, unsigned streams) { (void)self; (void)streams; return 0; }
static int null_capture_end(void *self, void **graph) { (void)self; *graph = &null_next; return 0; }
static int null_graph(void *self, void *graph) { (void)self; (void)graph; return 0; }

static gpuir__drv null_table(const gpuir__drv *real) {
    gpuir__drv d = *real;
    d.enter = d.leave = d.synchronize = null_self;
    d.streams_reserve = null_reserve;
    d.mem_alloc = null_alloc;
    d.mem_free = null_free;
    d.copy_htod = null_htod;
    d.copy_dtoh = null_dtoh;
    d.copy_dtod = null_dtod;
    d.launch = null_launch;
    d.event_record = d.stream_wait = null_event;
    d.event_synchronize = null_event_sync;
    d.host_alloc = null_host_alloc;
    d.host_free = null_host_free;
    d.capture_begin = null_capture_begin;
    d.capture_end = null_capture_end;
    d.graph_launch = d.graph_destroy = null_graph;
    return d;
}

/* Median wall-clock ms of `repeat` runs of @chain (each ends synchronized). */
static double launch_time_runs(gpuir_program *p, const gpuir_array *in, int repeat) {
    double *t = (double *)calloc((size_t)repeat, sizeof *t);
    for (int r = -2; r < repeat; r++) {
        gpuir_array out;
        double t0 = now_ms();
        if (gpuir_program_run(p, NULL, 2, in, 1, &out) != GPUIR_OK) { free(t); return -1; }
        if (r >= 0) t[r] = now_ms() - t0;
        gpuir_array_release(&out);
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp_double);
    double med = t[repeat / 2];
    free(t);
    return med;
}

/* The same with the program's table swapped for one that does nothing;
   a graph program records again on it first (the old recording belongs to
   the real table) and is left with none. */
static double launch_time_host_only(gpuir_program *p, const gpuir_array *in, int repeat) {
    gpuir__drv real = *gpuir__internal_table(p), none = null_table(&real);
    gpuir__internal_set_table(p, &none);
    double ms = launch_time_runs(p, in, repeat);
    gpuir__internal_set_table(p, &real);
    return ms;
}

/* One launch as a hand-written host loop makes it: the program's first
   kernel, its launch configuration, three fresh device buffers. */
typedef struct raw_launch {
    void *fn;
    unsigned grid[3], block[3], smem;
    gpuir__dptr args[3];
    void *params[3];
} raw_launch;

/* Median wall-clock ms of `repeat` loops of n raw table launches of one
   kernel, then a synchronize: what a hand-written host loop costs. */
static double launch_time_raw(gpuir_program *p, int n, int repeat, char *why, size_t size) {
    raw_launch L;
    memset(&L, 0, sizeof L);
    gpuir__internal_plan plan;
    gpuir__internal_plan_make(p, NULL, &plan);
    for (size_t i = 0; i < stbds_arrlenu(plan.launches) && !L.fn; i++) {
        const gpuir__internal_launch *S = &plan.launches[i];
        if (S->n_args != 3) continue;
        memcpy(L.grid, S->grid, sizeof L.grid);
        memcpy(L.block, S->block, sizeof L.block);
        L.smem = S->smem;
        L.fn = S->fn;
    }
    gpuir__internal_plan_free(&plan);
    const gpuir__drv *d = gpuir__internal_table(p);
    int rc = L.fn ? d->enter(d->self) : -1;
    if (rc) { snprintf(why, size, "no launch to repeat"); return -1; }
    for (int i = 0; i < 3 && !rc; i++) {
        rc = d->mem_alloc(d->self, &L.args[i], 16 * 16 * sizeof(float), 0);
        L.params[i] = &L.args[i];
    }
    double *t = (double *)calloc((size_t)repeat, sizeof *t);
    for (int r = -2; r < repeat && !rc; r++) {
        double t0 = now_ms();
        for (int k = 0; k < n && !rc; k++) rc = d->launch(d->self, L.fn, L.grid, L.block, L.smem, L.params, 3, 0);
        if (!rc) rc = d->synchronize(d->self);
        if (r >= 0) t[r] = now_ms() - t0;
    }
    for (int i = 0; i < 3; i++) if (L.args[i]) d->mem_free(d->self, L.args[i], 0);
    d->leave(d->self);
    qsort(t, (size_t)repeat, sizeof *t, cmp_double);
    double med = rc ? -1 : t[repeat / 2];
    if (rc) snprintf(why, size, "a raw launch failed with status %d", rc);
    free(t);
    return med;
}

static int bench_launch(int argc, char **argv) {
    int n = 100, repeat = 30;
    static const cli_flag flags[] = {
        {"kernels", required_argument, B_KERNELS, "N", "kernels in the program (default 100; at most 100000)"},
        B_REPEAT_FLAG("timed runs (default 30)"),
        B_HELP,
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *T = "gpuir-bench launch";
    int c;
    optind = 1;
    while ((c = sub_next(argc, argv, T, flags, nf)) != -1) {
        if (c == B_KERNELS && cli_int32(T, "--kernels", optarg, 1, 100000, &n)) continue;
        if (c == B_REPEAT && cli_int32(T, "--repeat", optarg, 1, 1000000, &repeat)) continue;
        int rc = sub_end(c, argc, argv, T, "usage: gpuir-bench launch [options]", flags, nf);
        return rc < 0 ? 0 : rc;
    }
    if (optind <= argc) return sub_end(-1, argc, argv, T, NULL, flags, nf);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char *text = launch_program(n);
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "launch");
    gpuir_module *mg = gpuir_module_parse(ctx, text, strlen(text), "launch");
    free(text);
    gpuir_program_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.graphs = true;
    gpuir_program *p = m ? gpuir_program_make(m, NULL) : NULL;
    gpuir_program *pg = p && mg ? gpuir_program_make(mg, &gd) : NULL;
    gpuir_array in[2];
    memset(in, 0, sizeof in);
    int64_t dims[2] = {16, 16};
    for (int i = 0; p && i < 2; i++)
        if (gpuir_array_alloc(ctx, &in[i], GPUIR_F32, 2, dims) == GPUIR_OK) gpuir_array_fill_random(&in[i], 7 + i);
    if (!p || !pg || gpuir_ctx_result(ctx) != GPUIR_OK) {
        cli_err("gpuir-bench launch: %s\n", gpuir_ctx_error(ctx));
        gpuir_ctx_destroy(ctx);
        return 1;
    }
    const char *backend = gpuir_backend_name(gpuir_program_backend(p));
    bool gpu = gpuir_program_backend(p) == GPUIR_BACKEND_CUDA;
    size_t kernels = gpuir__internal_kernel_count(p);
    printf("launch: %d chained 16x16 matmuls (%zu kernels), %s backend, median of %d runs%s\n", n, kernels, backend,
           repeat, gpu ? "" : "\n  (no GPU: the emulator runs the kernels on the CPU; its times are not GPU times)");
    double plain = launch_time_runs(p, in, repeat), graph = launch_time_runs(pg, in, repeat);
    double host = launch_time_host_only(p, in, repeat), graph_host = launch_time_host_only(pg, in, repeat);
    char why[128] = "";
    double raw = launch_time_raw(p, n, repeat, why, sizeof why);
    int rc = plain < 0 || graph < 0 || host < 0 || graph_host < 0 || raw < 0;
    if (rc) cli_err("gpuir-bench launch: %s\n", raw >= 0 ? gpuir_ctx_error(ctx) : why);
    else {
        double us[5] = {plain, graph, raw, host, graph_host};
        static const char *const rows[5] = {
            "gpuir_program_run (whole run / kernels)", "the same with desc.graphs (replays)",
            "raw table launches of the same kernel", "gpuir's own host work (a table doing nothing)",
            "the same for a graph replay"};
        for (int i = 0; i < 5; i++) {
            us[i] *= 1e3 / n;
            printf("  %-46s %10.3f us/kernel\n", rows[i], us[i]);
        }
        printf("  ratio gpuir / raw launch: %.2f plain, %.2f graph replay\n", us[0] / us[2], us[1] / us[2]);
        printf("bench launch backend=%s kernels=%d gpuir_us=%.3f graph_us=%.3f raw_us=%.3f host_only_us=%.3f "
               "graph_host_only_us=%.3f ratio=%.3f graph_ratio=%.3f\n", backend, n, us[0], us[1], us[2], us[3], us[4],
               us[0] / us[2], us[1] / us[2]);
        plot_add("gpuir time per kernel / raw launch", "plain", us[0] / us[2]);
        plot_add("gpuir time per kernel / raw launch", "graph replay", us[1] / us[2]);
        plot_from(gpu ? "cuda (GPU)" : "emu (CPU emulator: not GPU times)");
    }
    for (int i = 0; i < 2; i++) gpuir_array_release(&in[i]);
    gpuir_program_destroy(pg);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
    return rc;
}

/* ---- end to end: where the arguments live ---- */

/* One program of the e2e bench: its text, inputs and the bytes it moves. */
typedef struct e2e_case {
    const char *name;
    char text[1024];
    int n_in;
    gpuir_array in[5];          /* pageable host inputs, random */
    gpuir_array out;            /* the shape of the one result */
} e2e_case;

static void e2e_array(gpuir_ctx *ctx, gpuir_array *a, int rank, int64_t d0, int64_t d1, uint64_t seed) {
    int64_t dims[2] = {d0, d1};
    gpuir_array_alloc(ctx, a, GPUIR_F32, rank, dims);
    if (seed) gpuir_array_fill_random(a, seed);
    for (size_t i = 0; seed && i < gpuir_array_count(a); i++) gpuir_array_set(a, i, gpuir_array_get(a, i) * 0.25);
}

/* The seed matmul (M x K · K x N) and a two-layer MLP y = relu(x·W1 + b1)·W2 + b2. */
static void e2e_cases(gpuir_ctx *ctx, bool small, e2e_case c[2]) {
    long long M = small ? 64 : 5376, K = small ? 48 : 2048, N = small ? 80 : 5376;
    long long B = small ? 16 : 4096, D = small ? 32 : 1024, H = small ? 64 : 4096, O = small ? 24 : 1024;
    memset(c, 0, 2 * sizeof *c);
    c[0].name = "seed";
    snprintf(c[0].text, sizeof c[0].text,
             "func.func @f(%%a: tensor<%lldx%lldxf32>, %%b: tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32> {\n"
             "  %%c = matmul %%a, %%b : (tensor<%lldx%lldxf32>, tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32>\n"
             "  return %%c : tensor<%lldx%lldxf32>\n}\n", M, K, K, N, M, N, M, K, K, N, M, N, M, N);
    c[0].n_in = 2;
    e2e_array(ctx, &c[0].in[0], 2, M, K, 1);
    e2e_array(ctx, &c[0].in[1], 2, K, N, 2);
    e2e_array(ctx, &c[0].out, 2, M, N, 0);
    c[1].name = "mlp";
    snprintf(c[1].text, sizeof c[1].text,
             "func.func @f(%%x: tensor<%lldx%lldxf32>, %%w1: tensor<%lldx%lldxf32>, %%b1: tensor<%lldxf32>, "
             "%%w2: tensor<%lldx%lldxf32>, %%b2: tensor<%lldxf32>) -> tensor<%lldx%lldxf32> {\n"
             "  %%h = matmul %%x, %%w1 : (tensor<%lldx%lldxf32>, tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32>\n"
             "  %%a = add %%h, %%b1 : (tensor<%lldx%lldxf32>, tensor<%lldxf32>) -> tensor<%lldx%lldxf32>\n"
             "  %%r = relu %%a : (tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32>\n"
             "  %%y = matmul %%r, %%w2 : (tensor<%lldx%lldxf32>, tensor<%lldx%lldxf32>) -> tensor<%lldx%lldxf32>\n"
             "  %%z = add %%y, %%b2 : (tensor<%lldx%lldxf32>, tensor<%lldxf32>) -> tensor<%lldx%lldxf32>\n"
             "  return %%z : tensor<%lldx%lldxf32>\n}\n",
             B, D, D, H, H, H, O, O, B, O, B, D, D, H, B, H, B, H, H, B, H, B, H, B, H, B, H, H, O, B, O, B, O, O, B,
             O, B, O);
    c[1].n_in = 5;
    e2e_array(ctx, &c[1].in[0], 2, B, D, 3);
    e2e_array(ctx, &c[1].in[1], 2, D, H, 4);
    e2e_array(ctx, &c[1].in[2], 1, H, 0, 5);
    e2e_array(ctx, &c[1].in[3], 2, H, O, 6);
    e2e_array(ctx, &c[1].in[4], 1, O, 0, 7);
    e2e_array(ctx, &c[1].out, 2, B, O, 0);
}

static size_t e2e_bytes(const gpuir_array *a) { return gpuir_array_count(a) * gpuir_dtype_size(a->dtype); }

static gpuir_buffer e2e_buffer(gpuir_ctx *ctx, gpuir_backend be, const gpuir_array *a) {
    gpuir_buffer_desc d;
    memset(&d, 0, sizeof d);
    d.backend = be;
    d.dtype = a->dtype;
    d.rank = a->rank;
    memcpy(d.dims, a->dims, sizeof d.dims);
    return gpuir_buffer_make(ctx, &d);
}

/* Median wall-clock ms of `repeat` complete runs (after one warm-up):
   run_args on the stream, then a wait for it when there is one; or, with
   a graph, its launch and a wait. */
static double e2e_time(gpuir_ctx *ctx, gpuir_program *p, gpuir_run_desc *rd, void *graph, int repeat) {
    double t[64];
    if (repeat > 64) repeat = 64;
    for (int i = -1; i < repeat; i++) {
        double t0 = now_ms();
        gpuir_result r = GPUIR_OK;
        if (graph) {
            gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
            C->cu->cuCtxPushCurrent(C->context);
            int rc = C->cu->cuGraphLaunch((gpuir__CUgraphExec)graph, (gpuir__CUstream)rd->stream);
            if (!rc) rc = C->cu->cuStreamSynchronize((gpuir__CUstream)rd->stream);
            gpuir__CUcontext popped;
            C->cu->cuCtxPopCurrent(&popped);
            if (rc) { cli_err("gpuir-bench e2e: graph launch failed (%d)\n", rc); return NAN; }
        } else {
            r = gpuir_program_run_args(p, rd);
            if (!r && rd->stream) r = gpuir_stream_synchronize(ctx, rd->stream);
        }
        if (r) { cli_err("gpuir-bench e2e: %s\n", gpuir_ctx_error(ctx)); return NAN; }
        if (i >= 0) t[i] = now_ms() - t0;
    }
    qsort(t, (size_t)repeat, sizeof t[0], cmp_double);
    return t[repeat / 2];
}

/* The kernels alone: the program's launches on device buffers of its own
   (one allocation each, random data), no copies, through its device table;
   median wall-clock ms of `repeat` replays each ended by a synchronize. */
static double e2e_kernel_ms(gpuir_program *p, int repeat) {
    gpuir__internal_plan plan;
    gpuir__internal_plan_make(p, "f", &plan);
    const gpuir__drv *d = gpuir__internal_table(p);
    gpuir__dptr *dev = (gpuir__dptr *)calloc(stbds_arrlenu(plan.buffers) + 1, sizeof *dev);
    replay_launch *L = NULL;
    int rc = d->enter(d->self);
    for (size_t i = 0; !rc && i < stbds_arrlenu(plan.buffers); i++) {
        size_t bytes = plan.buffers[i].bytes;
        rc = d->mem_alloc(d->self, &dev[i], bytes ? bytes : 1, 0);
        if (!rc) {
            void *zero = calloc(1, bytes ? bytes : 1);
            rc = d->copy_htod(d->self, dev[i], zero, bytes, 0);
            free(zero);
        }
    }
    for (size_t i = 0; i < stbds_arrlenu(plan.launches); i++) stbds_arrput(L, replay_launch_of(&plan.launches[i], dev));
    for (size_t i = 0; i < stbds_arrlenu(L); i++)
        for (int a = 0; a < GPUIR_MAX_OPERANDS; a++) L[i].params[a] = &L[i].args[a];
    double t[64];
    if (repeat > 64) repeat = 64;
    for (int i = -1; i < repeat && !rc; i++) {
        double t0 = now_ms();
        for (size_t k = 0; k < stbds_arrlenu(L) && !rc; k++)
            rc = d->launch(d->self, L[k].fn, L[k].grid, L[k].block, L[k].smem, L[k].params, L[k].n_args, 0);
        if (!rc) rc = d->synchronize(d->self);
        if (i >= 0) t[i] = now_ms() - t0;
    }
    for (size_t i = 0; i < stbds_arrlenu(plan.buffers); i++)
        if (dev[i]) d->mem_free(d->self, dev[i], 0);
    d->synchronize(d->self);
    d->leave(d->self);
    stbds_arrfree(L);
    free(dev);
    gpuir__internal_plan_free(&plan);
    if (rc) { cli_err("gpuir-bench e2e: a kernel-only launch failed (%d)\n", rc); return NAN; }
    qsort(t, (size_t)repeat, sizeof t[0], cmp_double);
    return t[repeat / 2];
}

/* The pinned-copy bound: the inputs' bytes in and the result's out from
   and to pinned memory (gpuir_buffer_upload/download on a stream). */
static double e2e_copy_ms(gpuir_ctx *ctx, gpuir_backend be, e2e_case *c, gpuir_array *pin, gpuir_buffer *buf,
                          gpuir_stream s, int repeat) {
    double t[64];
    if (repeat > 64) repeat = 64;
    gpuir_result r = GPUIR_OK;
    for (int i = -1; i < repeat && !r; i++) {
        double t0 = now_ms();
        for (int k = 0; k < c->n_in && !r; k++) r = gpuir_buffer_upload(ctx, buf[k], &pin[k], s);
        if (!r) r = gpuir_buffer_download(ctx, buf[c->n_in], &pin[c->n_in], s);
        if (!r) r = gpuir_stream_synchronize(ctx, s);
        if (i >= 0) t[i] = now_ms() - t0;
    }
    (void)be;
    if (r) { cli_err("gpuir-bench e2e: %s\n", gpuir_ctx_error(ctx)); return NAN; }
    qsort(t, (size_t)repeat, sizeof t[0], cmp_double);
    return t[repeat / 2];
}

/* device-graph: the device-mode run captured on the caller's stream into
   a CUDA graph (CUDA only: the emulator's streams are not captured). */
static void *e2e_capture(gpuir_ctx *ctx, gpuir_program *p, gpuir_run_desc *rd, const char *who) {
    if (gpuir_program_backend(p) != GPUIR_BACKEND_CUDA) return NULL;
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
    gpuir__CUgraph g = NULL;
    gpuir__CUgraphExec exec = NULL;
    C->cu->cuCtxPushCurrent(C->context);
    int rc = C->cu->cuStreamBeginCapture((gpuir__CUstream)rd->stream, GPUIR__CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    gpuir_result r = rc ? GPUIR_OK : gpuir_program_run_args(p, rd);
    int end = rc ? 0 : C->cu->cuStreamEndCapture((gpuir__CUstream)rd->stream, &g);
    if (!rc) rc = end;
    if (!rc && !r) rc = C->cu->cuGraphInstantiateWithFlags(&exec, g, 0);
    if (g) C->cu->cuGraphDestroy(g);
    gpuir__CUcontext popped;
    C->cu->cuCtxPopCurrent(&popped);
    if (r || rc) cli_err("%s: capture failed (%d): %s\n", who, rc, gpuir_ctx_error(ctx));
    if (r) gpuir_ctx_clear_error(ctx);
    return r || rc ? NULL : (void *)exec;
}

/* One program, four ways. Checks each mode's result (against the
   interpreter on the emulator; against the pageable run on a GPU, the
   same kernels) and prints a line per mode. */
static int e2e_program(gpuir_ctx *ctx, e2e_case *c, int repeat, bool check_ref) {
    gpuir_module *m = gpuir_module_parse(ctx, c->text, strlen(c->text), c->name);
    gpuir_program *p = m ? gpuir_program_make(m, NULL) : NULL;
    if (!p) { cli_err("gpuir-bench e2e: %s\n", gpuir_ctx_error(ctx)); return 1; }
    gpuir_backend be = gpuir_program_backend(p);
    int n = c->n_in, rc = 0;
    gpuir_array pin[6], want, got;
    gpuir_buffer buf[6];
    gpuir_arg in[5], out[1];
    size_t in_bytes = 0;
    for (int k = 0; k <= n; k++) {
        const gpuir_array *src = k < n ? &c->in[k] : &c->out;
        gpuir_array_alloc_pinned(ctx, be, &pin[k], src->dtype, src->rank, src->dims);
        if (k < n && pin[k].data) memcpy(pin[k].data, src->data, e2e_bytes(src));
        buf[k] = e2e_buffer(ctx, be, src);
        if (k < n) in_bytes += e2e_bytes(src);
    }
    gpuir_array_alloc(ctx, &got, GPUIR_F32, c->out.rank, c->out.dims);
    memset(&want, 0, sizeof want);
    if (check_ref) gpuir_ref_run(m, "f", (size_t)n, c->in, 1, &want);
    gpuir_stream s = gpuir_stream_make(ctx, be);
    for (int k = 0; k < n; k++) gpuir_buffer_upload(ctx, buf[k], &c->in[k], NULL);
    if (gpuir_ctx_result(ctx)) { cli_err("gpuir-bench e2e: %s\n", gpuir_ctx_error(ctx)); rc = 1; }
    double kernel = rc ? NAN : e2e_kernel_ms(p, repeat), copy = rc ? NAN : e2e_copy_ms(ctx, be, c, pin, buf, s, repeat);
    static const char *const modes[4] = {"pageable", "pinned", "device", "device-graph"};
    gpuir_run_desc rd;
    for (int mode = 0; mode < 4 && !rc; mode++) {
        memset(&rd, 0, sizeof rd);
        for (int k = 0; k < n; k++)
            in[k] = mode == 0 ? gpuir_arg_host(c->in[k]) : mode == 1 ? gpuir_arg_host(pin[k]) : gpuir_arg_buffer(buf[k]);
        out[0] = mode == 0 ? gpuir_arg_host(got) : mode == 1 ? gpuir_arg_host(pin[n]) : gpuir_arg_buffer(buf[n]);
        rd.inputs = in;
        rd.n_inputs = (size_t)n;
        rd.outputs = out;
        rd.n_outputs = 1;
        rd.stream = mode >= 1 ? s : NULL;
        void *graph = mode == 3 ? e2e_capture(ctx, p, &rd, "gpuir-bench e2e") : NULL;
        gpuir_program_stats s0 = gpuir_program_get_stats(p);
        double ms = mode == 3 && !graph ? NAN : e2e_time(ctx, p, &rd, graph, repeat);
        gpuir_program_stats s1 = gpuir_program_get_stats(p);
        uint64_t runs = s1.runs - s0.runs ? s1.runs - s0.runs : 1;
        if (graph) {
            gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
            C->cu->cuGraphExecDestroy((gpuir__CUgraphExec)graph);
        }
        /* the result of this mode, on the host */
        if (mode == 1) memcpy(got.data, pin[n].data, e2e_bytes(&got));
        if (mode >= 2 && gpuir_buffer_download(ctx, buf[n], &got, NULL)) rc = 1;
        if (mode == 0 && !check_ref) want = got, got.data = NULL, gpuir_array_alloc(ctx, &got, GPUIR_F32, c->out.rank, c->out.dims);
        const char *verdict = mode == 3 && !graph ? "not run: capturing a caller's stream needs CUDA"
                            : mode == 0 && !check_ref ? "the reference for the other modes"
                            : gpuir_array_compare(ctx, &got, &want, 1e-4, 1e-4) == GPUIR_OK ? "matches"
                            : "WRONG";
        if (!strcmp(verdict, "WRONG")) { cli_err("%s\n", gpuir_ctx_error(ctx)); gpuir_ctx_clear_error(ctx); rc = 1; }
        uint64_t h2d = mode == 3 ? 0 : (s1.h2d_bytes - s0.h2d_bytes) / runs, d2h = mode == 3 ? 0 : (s1.d2h_bytes - s0.d2h_bytes) / runs;
        printf("  %-8s %-12s %10.3f ms  kernels %9.3f ms  x%7.3f  pinned-copy bound %9.3f ms (%5.1f %%)  "
               "%llu B in, %llu B out per run: %s\n", c->name, modes[mode], ms, kernel, ms / kernel, copy + kernel,
               100.0 * (copy + kernel) / ms, (unsigned long long)h2d, (unsigned long long)d2h, verdict);
        printf("bench e2e program=%s mode=%s ms=%.4f kernel_ms=%.4f ratio=%.3f h2d_bytes=%llu d2h_bytes=%llu\n", c->name,
               modes[mode], ms, kernel, ms / kernel, (unsigned long long)h2d, (unsigned long long)d2h);
        plot_add("end-to-end time / kernel-only time", modes[mode], ms / kernel);
    }
    printf("bench e2e program=%s copy_ms=%.4f in_bytes=%zu out_bytes=%zu\n", c->name, copy, in_bytes, e2e_bytes(&c->out));
    gpuir_stream_destroy(ctx, s);
    for (int k = 0; k <= n; k++) {
        gpuir_array_release_pinned(ctx, &pin[k]);
        gpuir_buffer_destroy(ctx, buf[k]);
    }
    gpuir_array_release(&got);
    gpuir_array_release(&want);
    gpuir_program_destroy(p);
    gpuir_module_destroy(m);
    return rc;
}

static int bench_e2e(int argc, char **argv) {
    int repeat = 0;
    bool small = false;
    static const cli_flag flags[] = {
        {"small", no_argument, B_SMALL, NULL, "small shapes (always without a GPU: the emulator)"},
        B_REPEAT_FLAG("timed runs per mode, the median printed (default 20 on a GPU, 3 on the emulator; at most 64)"),
        B_HELP,
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *T = "gpuir-bench e2e";
    int o;
    optind = 1;
    while ((o = sub_next(argc, argv, T, flags, nf)) != -1) {
        if (o == B_SMALL) { small = true; continue; }
        if (o == B_REPEAT && cli_int32(T, "--repeat", optarg, 1, 64, &repeat)) continue;
        int rc = sub_end(o, argc, argv, T, "usage: gpuir-bench e2e [options]", flags, nf);
        return rc < 0 ? 0 : rc;
    }
    if (optind <= argc) return sub_end(-1, argc, argv, T, NULL, flags, nf);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char why[256] = "";
    bool gpu = gpuir_cuda_available(ctx, why, sizeof why);
    small = small || !gpu;
    if (!repeat) repeat = gpu ? 20 : 3;
    e2e_case c[2];
    e2e_cases(ctx, small, c);
    printf("e2e: the seed matmul and a two-layer MLP on %s, %s shapes, median of %d runs; modes: host pageable arrays, "
           "host pinned arrays, device buffers on a stream, the device run captured as a CUDA graph%s\n",
           gpu ? "CUDA" : "the emulator", small ? "small" : "full", repeat,
           gpu ? "" : "\n  (no GPU: the times are the emulator's; the copy counts are real)");
    int rc = 0;
    for (int i = 0; i < 2; i++) rc |= e2e_program(ctx, &c[i], repeat, small);
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < c[i].n_in; k++) gpuir_array_release(&c[i].in[k]);
        gpuir_array_release(&c[i].out);
    }
    gpuir_ctx_destroy(ctx);
    return rc;
}

/* ---- fused attention ---- */

/* The attention program as a user writes it (q k^T scaled, softmax over
   the last axis, times v), or, causal, the attention op with its causal
   attribute (the unfused program has no cheap causal form: a dense S x S
   mask constant). kv < h: grouped-query attention, h / kv query heads
   sharing each of kv key/value heads (q [b, kv, h / kv, s, d] against k
   and v [b, kv, 1, s, d]); kv == h: q, k and v [b, h, s, d]. With a
   kernel form (`form`: --form), the attention op too, carrying it. bshd:
   q, k, v and the result [b, s, h, d] (FlashAttention's layout; kv == h),
   the heads split by transposes and merged back by one (the attention op
   with seq_dim = 1 where it is written). */
static void attention_text(strbuf *text, long long b, long long h, long long kv, long long s, long long d,
                           const char *dt, bool causal, const char *form, bool bshd) {
    char q[96], k[96], sc[96];
    text->len = 0;
    if (bshd) {
        char qs[96], form_attr[96] = "";
        snprintf(qs, sizeof qs, "tensor<%lldx%lldx%lldx%lldx%s>", b, s, h, d, dt);
        snprintf(q, sizeof q, "tensor<%lldx%lldx%lldx%lldx%s>", b, h, s, d, dt);
        snprintf(sc, sizeof sc, "tensor<%lldx%lldx%lldx%lldx%s>", b, h, s, s, dt);
        if (form) snprintf(form_attr, sizeof form_attr, ", form = \"%s\"", form);
        strbuf_appendf(text, "func.func @f(%%q4: %s, %%k4: %s, %%v4: %s) -> %s {\n", qs, qs, qs, qs);
        if (causal || form) {
            strbuf_appendf(text, "  %%o = attention %%q4, %%k4, %%v4 {scale = %.9g%s, seq_dim = 1%s} : (%s, %s, %s) -> %s\n"
                           "  return %%o : %s\n}\n", 1.0 / sqrt((double)d), causal ? ", causal = true" : "", form_attr,
                           qs, qs, qs, qs, qs);
            return;
        }
        const char *names[3] = {"q", "k", "v"};
        for (int i = 0; i < 3; i++)
            strbuf_appendf(text, "  %%%s = transpose %%%s4 {perm = [0, 2, 1, 3]} : (%s) -> %s\n", names[i], names[i], qs, q);
        strbuf_appendf(text,
                      "  %%s = matmul %%q, %%k {transpose_b = true} : (%s, %s) -> %s\n"
                      "  %%c = constant {value = %.9g} : () -> tensor<%s>\n"
                      "  %%t = mul %%s, %%c : (%s, tensor<%s>) -> %s\n"
                      "  %%p = softmax %%t {axis = -1} : (%s) -> %s\n"
                      "  %%oh = matmul %%p, %%v : (%s, %s) -> %s\n"
                      "  %%o = transpose %%oh {perm = [0, 2, 1, 3]} : (%s) -> %s\n"
                      "  return %%o : %s\n}\n", q, q, sc, 1.0 / sqrt((double)d), dt, sc, dt, sc, sc, sc, sc, q, q, q, qs, qs);
        return;
    }
    if (kv == h) {
        snprintf(q, sizeof q, "tensor<%lldx%lldx%lldx%lldx%s>", b, h, s, d, dt);
        snprintf(k, sizeof k, "%s", q);
        snprintf(sc, sizeof sc, "tensor<%lldx%lldx%lldx%lldx%s>", b, h, s, s, dt);
    } else {
        snprintf(q, sizeof q, "tensor<%lldx%lldx%lldx%lldx%lldx%s>", b, kv, h / kv, s, d, dt);
        snprintf(k, sizeof k, "tensor<%lldx%lldx1x%lldx%lldx%s>", b, kv, s, d, dt);
        snprintf(sc, sizeof sc, "tensor<%lldx%lldx%lldx%lldx%lldx%s>", b, kv, h / kv, s, s, dt);
    }
    strbuf_appendf(text, "func.func @f(%%q: %s, %%k: %s, %%v: %s) -> %s {\n", q, k, k, q);
    char form_attr[96] = "";
    if (form) snprintf(form_attr, sizeof form_attr, ", form = \"%s\"", form);
    if (causal || form)
        strbuf_appendf(text, "  %%o = attention %%q, %%k, %%v {scale = %.9g%s%s} : "
                      "(%s, %s, %s) -> %s\n", 1.0 / sqrt((double)d), causal ? ", causal = true" : "", form_attr,
                      q, k, k, q);
    else
        strbuf_appendf(text,
                      "  %%s = matmul %%q, %%k {transpose_b = true} : (%s, %s) -> %s\n"
                      "  %%c = constant {value = %.9g} : () -> tensor<%s>\n"
                      "  %%t = mul %%s, %%c : (%s, tensor<%s>) -> %s\n"
                      "  %%p = softmax %%t {axis = -1} : (%s) -> %s\n"
                      "  %%o = matmul %%p, %%v : (%s, %s) -> %s\n", q, k, sc, 1.0 / sqrt((double)d), dt, sc, dt, sc,
                      sc, sc, sc, k, q);
    strbuf_appendf(text, "  return %%o : %s\n}\n", q);
}

/* A CUDA program of `text`: the default pipeline, or (unfused) the same
   without the attention pass (matmul, softmax, matmul: three kernels). */
static gpuir_program *attention_program(gpuir_ctx *ctx, const char *text, bool unfused) {
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_CUDA;
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "attention");
    if (m && unfused)       /* planned for an H100 (the default target): the default's matmuls, no attention pass */
        gpuir_module_run_passes(m, "decompose,canonicalize,split-k,stage-matmul,fuse,bufferize,outline,place,configure,"
                                   "plan-shared-memory", NULL);
    gpuir_program *p = gpuir_ctx_result(ctx) ? NULL : gpuir_program_make(m, &d);
    if (!p) cli_err("gpuir-bench attention: %s\n", gpuir_ctx_error(ctx));
    return p;
}

/* Median ms of a program's kernels (random inputs) and its kernel count. */
static float attention_time(gpuir_ctx *ctx, gpuir_program *p, int repeat, size_t *kernels) {
    gpuir__internal_cuda cuda, *C = &cuda;
    gpuir__internal_cuda_of(p, C);
    C->cu->cuCtxPushCurrent(C->context);
    replay rp;
    bool ok = replay_prepare(ctx, p, "f", &rp);
    float ms = ok ? time_replay(p, &rp, 0, 0, 0, repeat) : (float)NAN;
    *kernels = stbds_arrlenu(rp.launches);
    replay_free(p, &rp);
    gpuir__CUcontext popped;
    C->cu->cuCtxPopCurrent(&popped);
    return ms;
}

/* One row: the fused kernel against the unfused program (the non-causal
   one for both rows: the unfused program cannot skip masked tiles). */
static int attention_row(gpuir_ctx *ctx, long long b, long long h, long long kv, long long s, long long d,
                         const char *dt, bool causal, const char *form, bool bshd, int repeat) {
    strbuf text = {NULL, 0, 0};
    attention_text(&text, b, h, kv, s, d, dt, causal, form, bshd);
    gpuir_program *fused = attention_program(ctx, text.buf, false);
    attention_text(&text, b, h, kv, s, d, dt, false, NULL, bshd);
    gpuir_program *unfused = fused ? attention_program(ctx, text.buf, true) : NULL;
    free(text.buf);
    if (!fused || !unfused) { gpuir_program_destroy(fused); return 1; }
    size_t kf = 0, ku = 0;
    float tf = attention_time(ctx, fused, repeat, &kf), tu = attention_time(ctx, unfused, repeat, &ku);
    double flops = 4.0 * (double)(b * h) * (double)s * (double)s * (double)d * (causal ? 0.5 : 1.0);
    printf("attention %lldx%lldx%lldx%lld %s %-10s kv heads %lld  fused %zu kernel %8.3f ms %6.1f TFLOP/s   unfused "
           "%zu kernels %8.3f ms   %.2fx faster%s%s%s\n", b, h, s, d, dt, causal ? "causal" : "non-causal", kv, kf, tf,
           flops / (tf * 1e9), ku, tu, tu / tf, form ? "  form " : "", form ? form : "", bshd ? "  layout bshd" : "");
    printf("bench attention %s causal=%d kernels=%zu fused_ms=%.4f unfused_kernels=%zu unfused_ms=%.4f "
           "tflops=%.1f form=%s kv_heads=%lld layout=%s\n", dt, causal ? 1 : 0, kf, tf, ku, tu, flops / (tf * 1e9),
           form ? form : "default", kv, bshd ? "bshd" : "bhsd");
    plot_add("unfused time / fused time", causal ? "causal" : "non-causal", tu / tf);
    plot_from("cuda (GPU, CUDA events)");
    gpuir_program_destroy(fused);
    gpuir_program_destroy(unfused);
    return kf == 1 ? 0 : 1;
}

/* Without a GPU: a small attention on the emulator against the interpreter. */
static int attention_on_emu(gpuir_ctx *ctx, const char *dt, bool causal, bool grouped, long long hd, const char *form,
                            bool bshd) {
    strbuf text = {NULL, 0, 0};
    attention_text(&text, 1, 2, grouped ? 1 : 2, 130, hd, dt, causal, form, bshd);
    gpuir_module *ref = gpuir_module_parse(ctx, text.buf, text.len, "attention");
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_EMU;
    gpuir_program *p = gpuir_program_make(gpuir_module_parse(ctx, text.buf, text.len, "attention"), &d);
    free(text.buf);
    gpuir_array in[3], want, got;
    gpuir_dtype type = strcmp(dt, "f32") == 0 ? GPUIR_F32 : strcmp(dt, "f16") == 0 ? GPUIR_F16 : GPUIR_BF16;
    const int64_t qd[5] = {1, 1, 2, 130, hd}, kd[5] = {1, 1, 1, 130, hd};  /* grouped: one k, v for 2 heads */
    gpuir_type t = grouped ? gpuir_tensor_type(type, 5, qd)
                   : gpuir_tensor_type(type, 4, bshd ? (const int64_t[]){1, 130, 2, hd} : (const int64_t[]){1, 2, 130, hd});
    gpuir_result r = p ? GPUIR_OK : gpuir_ctx_result(ctx);
    for (int i = 0; i < 3 && !r; i++) {
        r = gpuir_array_alloc(ctx, &in[i], t.dtype, t.rank, grouped && i ? kd : t.dims);
        if (!r) gpuir_array_fill_random(&in[i], 7 + (uint64_t)i);
    }
    double rtol, atol;
    gpuir_backend_tolerance(GPUIR_BACKEND_EMU, t.dtype, &rtol, &atol);
    if (!r) r = gpuir_ref_run(ref, "f", 3, in, 1, &want);
    if (!r) r = gpuir_program_run(p, "f", 3, in, 1, &got);
    if (!r) r = gpuir_array_compare(ctx, &got, &want, rtol, atol);
    printf("attention 1x2x130x%lld %s %-10s%s%s%s%s emu: %s\n", hd, dt, causal ? "causal" : "non-causal",
           grouped ? " kv heads 1" : "", form ? " form " : "", form ? form : "", bshd ? " layout bshd" : "",
           r ? gpuir_ctx_error(ctx) : "matches the interpreter");
    if (!r) { for (int i = 0; i < 3; i++) gpuir_array_release(&in[i]); gpuir_array_release(&want); gpuir_array_release(&got); }
    gpuir_program_destroy(p);
    gpuir_ctx_clear_error(ctx);
    return r != GPUIR_OK;
}

static int bench_attention(int argc, char **argv) {
    int repeat = 20;
    long long seq = 4096, kv = 16, hd = 128;
    const char *dt = "bf16", *form = NULL;
    bool bshd = false;
    static const cli_flag flags[] = {
        {"seq", required_argument, B_SEQ, "S", "sequence length of queries and keys (default 4096)"},
        {"kv-heads", required_argument, B_KV_HEADS, "N",
         "key/value heads, dividing the 16 query heads (default 16; fewer: grouped-query attention)"},
        {"head-dim", required_argument, B_HEAD_DIM, "D",
         "head dim: f16 and bf16 a multiple of 8, f32 any, 1 to 256 (default 128; f16 and bf16 past 128 "
         "fuse with --form only)"},
        {"dtype", required_argument, B_DTYPE, "T", "bf16 (default), f16 or f32 (the f32 kernel, on the FMA units)"},
        {"form", required_argument, B_FORM, "NAME", "the fused kernel's form by name (e.g. attention.fa2_wgmma.m128)"},
        {"layout", required_argument, B_LAYOUT, "L",
         "bhsd (default: q, k, v [8, 16, S, D]) or bshd ([8, S, 16, D], heads split and merged by transposes)"},
        B_REPEAT_FLAG("timed replays (default 20)"),
        B_HELP,
    };
    const size_t nf = sizeof flags / sizeof flags[0];
    const char *T = "gpuir-bench attention";
    int c;
    optind = 1;
    while ((c = sub_next(argc, argv, T, flags, nf)) != -1) {
        if (c == B_REPEAT && cli_int32(T, "--repeat", optarg, 1, 1000000, &repeat)) continue;
        if (c == B_SEQ && cli_int(T, "--seq", optarg, 1, 1LL << 20, &seq)) continue;
        if (c == B_HEAD_DIM && cli_int(T, "--head-dim", optarg, 1, 256, &hd)) continue;
        if (c == B_KV_HEADS && cli_int(T, "--kv-heads", optarg, 1, 16, &kv)) {
            if (16 % kv == 0) continue;
            cli_err("%s: --kv-heads=%lld does not divide the 16 query heads (1, 2, 4, 8 or 16)\n", T, kv);
            return 2;
        }
        if (c == B_DTYPE && (strcmp(optarg, "bf16") == 0 || strcmp(optarg, "f16") == 0 || strcmp(optarg, "f32") == 0)) {
            dt = optarg;
            continue;
        }
        if (c == B_FORM && *optarg) { form = optarg; continue; }
        if (c == B_LAYOUT && (strcmp(optarg, "bshd") == 0 || strcmp(optarg, "bhsd") == 0)) {
            bshd = optarg[2] == 'h';
            continue;
        }
        const char *takes = c == B_DTYPE ? "bf16, f16 or f32" : c == B_LAYOUT ? "bhsd or bshd" :
                            c == B_FORM ? "an attention kernel form (attention.fa2.m64, ...)" : NULL;
        if (takes) {                     /* (a value refused above: said, not a bare status 2) */
            cli_err("%s: --%s='%s': it takes %s\n", T, c == B_DTYPE ? "dtype" : c == B_LAYOUT ? "layout" : "form",
                    optarg, takes);
            return 2;
        }
        int rc = sub_end(c, argc, argv, T, "usage: gpuir-bench attention [options]", flags, nf);
        return rc < 0 ? 0 : rc;
    }
    if (optind <= argc) return sub_end(-1, argc, argv, T, NULL, flags, nf);
    if (strcmp(dt, "f32") != 0 && hd % 8) {
        cli_err("%s: --head-dim=%lld: the %s kernel takes multiples of 8 up to 256 (f32: 1 to 256)\n", T, hd, dt);
        return 2;
    }
    if (bshd && kv != 16) {
        cli_err("%s: --layout=bshd takes no --kv-heads (its k and v have q's 16 heads)\n", T);
        return 2;
    }
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char why[512];
    int rc = 0;
    if (!gpuir_cuda_available(ctx, why, sizeof why)) {
        printf("no GPU (%s): attention 1x2x130x%lld runs on the emulator, for correctness only\n", why, hd);
        for (int causal = 0; causal < 2; causal++) rc |= attention_on_emu(ctx, dt, causal != 0, kv < 16, hd, form, bshd);
    } else {
        for (int causal = 0; causal < 2; causal++)
            rc |= attention_row(ctx, 8, 16, kv, seq, hd, dt, causal != 0, form, bshd, repeat);
    }
    gpuir_ctx_destroy(ctx);
    return rc;
}

static int usage(FILE *to, int rc) {
    fprintf(to, "usage: gpuir-bench matmul [--m=M --n=N --k=K] [--dtype=f32|tf32|f16|bf16]\n"
                "                          [--epilogue=bias,relu|gelu|silu,residual] [--repeat=R] [--wgmma | --no-wgmma]\n"
                "                          [--transpose-a] [--form=NAME] [--k-slices=S[,S..]]\n"
                "       gpuir-bench bandwidth [--elements=N] [--repeat=R] [--rows=PAT[,PAT..]]\n"
                "       gpuir-bench copy [--mb=N] [--chunk-mb=N] [--repeat=R]\n"
                "       gpuir-bench compile FILE\n"
                "       gpuir-bench passes [--ops=N,N,...] [--repeat=R] [--no-verify]\n"
                "       gpuir-bench launch [--kernels=N] [--repeat=R]\n"
                "       gpuir-bench e2e [--small] [--repeat=R]\n"
                "       gpuir-bench attention [--seq=S] [--kv-heads=N] [--head-dim=D] [--dtype=bf16|f16|f32] [--form=NAME]\n"
                "                             [--layout=bhsd|bshd] [--repeat=R]\n"
                "       any of them with --plot=FILE.png (draws its ratios; needs gnuplot)\n"
                "       gpuir-bench SUBCOMMAND --help: a line per option; gpuir-bench --version\n");
    return rc;
}

static int run_subcommand(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "matmul") == 0) return bench_matmul(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "bandwidth") == 0) return bench_bandwidth(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "copy") == 0) return bench_copy(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "compile") == 0) return bench_compile(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "passes") == 0) return bench_passes(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "launch") == 0) return bench_launch(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "e2e") == 0) return bench_e2e(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "attention") == 0) return bench_attention(argc - 2, argv + 2);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) return usage(stdout, 0);
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) return cli_version("gpuir-bench");
    if (argc >= 2) cli_err("gpuir-bench: unknown subcommand '%s'\n", argv[1]);
    return usage(stderr, 2);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);       /* each row as it is measured, even if the run is cut short */
    const char *png = NULL;
    int n = 0;
    for (int i = 0; i < argc; i++) {        /* --plot= is taken out before the subcommand sees its options */
        if (i >= 2 && strncmp(argv[i], "--plot=", 7) == 0) png = argv[i] + 7;
        else argv[n++] = argv[i];
    }
    argv[n] = NULL;
    int rc = run_subcommand(n, argv);
    if (png && rc == 0) rc = plot_draw(png, argc >= 2 ? argv[1] : "gpuir-bench");
    return rc;
}

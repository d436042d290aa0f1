/* fuzz_diff: the differential fuzzer. Generates random *valid* programs
   from a seed (tensor level: elementwise chains with broadcasting, matmuls
   with epilogues, split-K, reductions, softmax, transposes, reshapes,
   broadcasts, casts, constants, globals, and in a quarter of them `?`
   dims run at two sizes each; buffer level: hand-written kernels and host
   functions with explicit or placed copies), runs each function on
   the reference interpreter and through the whole lowering pipeline (the
   verifier after every pass) on the CPU emulator, and compares the results
   within the backend's tolerance (gpuir_backend_tolerance, its atol scaled
   by the error bound the generator tracks for each result).

   fuzz_diff [--seed=N] [--count=N] [--seconds=S] [--funcs=K] [--out=DIR]
             [--no=FEATURE,...] [--dynamic=P] [--print] [--quiet]
   fuzz_diff --replay FILE...

   Generation: modules from seeds N, N+1, ... (--count of them, or until
   --seconds have passed), K functions per module (one host compile each).
   --print writes the module of each seed to stdout instead of running it.
   Each module runs in a child process (a crash or a hang is a finding too);
   a failing module is minimized (its failing function alone, then only the
   ops the failing result depends on) and written to DIR (default build/)
   as fuzz-diff-SEED.gir. --no turns generator features off (dense, zero,
   matmul, splitk, wgmma, tf32, global, cast, softmax, reduce, buffer,
   graphs, int, motif, dynamic) to steer around a known open finding;
   --dynamic=P gives P % of the tensor functions `?` dims (default 25).
   Replay: each file is a module as written above; prints one PASS or FAIL
   line per file and exits 1 if any failed.
   The header comment `// fuzz-diff: sm=.. sm_count=.. sync=.. graphs=..
   emu_seed=..` gives the run's configuration, `// fuzz-diff-tol @f S` the
   tolerance scale of @f's results (1 if absent), each `// fuzz-diff-sizes
   @f 13x7 - 7` line one run of @f with its parameters of those dims (a
   `?` takes the size there; `-` a scalar): the runs go in order through
   one compiled program. Inputs and globals get
   gpuir_array_fill_random data seeded by a hash of their name, so a
   reproducer keeps its data when parameters are dropped. Linked with the
   implementation compiled once (examples/gpuir_impl.c). */
#define _POSIX_C_SOURCE 200809L
#include "../../gpuir.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define FD_MAX_VALS 48
#define FD_MAX_FUNCS 8
#define FD_MAX_ELEMS 12000
#define FD_MAX_SIZES 6
#define FD_TIMEOUT_S 900
#define FD_CPU_LIMIT_S 60

/* ---- small utilities --------------------------------------------------- */

typedef struct fd_rng { uint64_t s; } fd_rng;

static uint64_t fd_next(fd_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int fd_below(fd_rng *r, int n) { return n <= 1 ? 0 : (int)(fd_next(r) % (uint64_t)n); }
static bool fd_chance(fd_rng *r, int percent) { return fd_below(r, 100) < percent; }

static uint64_t fd_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

typedef struct fd_str { char *p; size_t len, cap; } fd_str;

#if defined(__GNUC__) || defined(__clang__)
#  define FD_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define FD_PRINTF(f, a)
#endif
#define FD_STR(x) #x
#define FD_XSTR(x) FD_STR(x)

static void fd_printf(fd_str *s, const char *fmt, ...) FD_PRINTF(2, 3);
static void fd_printf(fd_str *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (s->len + (size_t)n + 1 > s->cap) {
        size_t cap = (s->cap ? s->cap * 2 : 1024) + (size_t)n;
        char *p = (char *)realloc(s->p, cap);
        if (!p) abort();
        s->p = p;
        s->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(s->p + s->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

static char *fd_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = (char *)malloc(n);
    if (!p) abort();
    return memcpy(p, s, n);
}

static double fd_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- the generated program ---------------------------------------------
   A function is a list of values: parameters, then ops (each an IR line)
   that read earlier values. The printer emits the ops a chosen set of
   results depends on, so a failing result can be printed alone. */

typedef struct fd_val {
    gpuir_dtype dt;
    int rank;
    int64_t dims[GPUIR_MAX_RANK];   /* a dynamic dim: the larger of its two sizes */
    uint8_t sym[GPUIR_MAX_RANK];    /* 0: static; j + 1: `?`, the function's size j */
    double mag;      /* a bound on |element| (floats; ints are exact anyway) */
    double err;      /* a bound on |emu - ref| (absolute) */
    bool param;
    char *line;      /* the op (NULL for a parameter) */
    char *global;    /* the module-level declaration it reads, if any */
    int deps[3], n_deps;
} fd_val;

typedef struct fd_func {
    char name[16];
    fd_val v[FD_MAX_VALS];
    int n;
    int results[4], n_results;
    bool buffer;     /* a buffer-level function: printed verbatim from text */
    char *text;      /* buffer level: the host function */
    char *kernels;   /* buffer level: its kernels (gpu.func), or NULL */
    double err;      /* buffer level: the error bound of every result */
    gpuir_dtype dt;  /* buffer level: the dtype of every buffer */
    /* Dynamic sizes: the function runs twice, once at each size of every
       `?` (size j is sizes[j][0], then sizes[j][1]); one compiled program. */
    int n_sizes;
    int64_t sizes[FD_MAX_SIZES][2];
} fd_func;

typedef struct fd_config {
    int sm, sm_count;
    bool sync, graphs;
    uint64_t emu_seed;
} fd_config;

typedef struct fd_module {
    uint64_t seed;
    fd_config cfg;
    fd_func f[FD_MAX_FUNCS];
    int n;
} fd_module;

/* Generator features that --no turns off. */
enum { FD_DENSE, FD_ZERO, FD_MATMUL, FD_SPLITK, FD_WGMMA, FD_TF32, FD_GLOBAL, FD_CAST, FD_SOFTMAX,
       FD_REDUCE, FD_BUFFER, FD_GRAPHS, FD_INT, FD_MOTIF, FD_DYNAMIC, FD_FEATURES };
static const char *fd_feature_names[FD_FEATURES] = {"dense", "zero", "matmul", "splitk", "wgmma", "tf32",
                                                    "global", "cast", "softmax", "reduce", "buffer",
                                                    "graphs", "int", "motif", "dynamic"};
static bool fd_off[FD_FEATURES];
static int fd_dynamic_percent = 25;   /* of the tensor functions: `?` dims (--dynamic=P) */

typedef struct fd_gen {
    fd_rng rng;
    fd_func *f;
    int fi;          /* the function's index: names its globals */
    int n_globals;
    int sm;          /* the module's target: `wgmma = true` only where it runs */
    int dyn;         /* the percent of a new parameter's dims that are `?` (0: a static function) */
    int row_axes;    /* the trailing axes a motif's row reductions span (0: the last one) */
} fd_gen;

static int64_t fd_count(const fd_val *v) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= v->dims[i];
    return n;
}

static void fd_type(const fd_val *v, char *buf, size_t size) {
    int64_t dims[GPUIR_MAX_RANK];
    for (int i = 0; i < v->rank; i++) dims[i] = v->sym[i] ? GPUIR_DYN : v->dims[i];
    gpuir_type_str(gpuir_tensor_type(v->dt, v->rank, dims), buf, size);
}

/* ---- dynamic sizes ------------------------------------------------------
   A `?` stands for one of the function's sizes, which has two values (one
   a run). Two dims pair up (an elementwise op, a matmul's K) only when both
   are the same size or one is a static 1: a `?` is never broadcast. */

static bool fd_dynamic(const fd_val *v) {
    for (int i = 0; i < v->rank; i++)
        if (v->sym[i]) return true;
    return false;
}

static int fd_dynamic_count(const fd_val *v) {
    int n = 0;
    for (int i = 0; i < v->rank; i++) n += v->sym[i] != 0;
    return n;
}

/* Dim i of v at run `run` (0 or 1). */
static int64_t fd_dim_at(const fd_func *f, const fd_val *v, int i, int run) {
    return v->sym[i] ? f->sizes[v->sym[i] - 1][run] : v->dims[i];
}

/* A new size whose larger value is `max`, the other one of the edges
   below it (0, 1, 2, one less, half), in either order; 0 when the
   function has all it may. */
static int fd_size_new(fd_gen *g, int64_t max, int64_t other) {
    fd_func *f = g->f;
    if (f->n_sizes >= FD_MAX_SIZES) return 0;
    if (other < 0) {
        int64_t edges[5] = {0, 1, 2, max - 1, max / 2};
        other = edges[fd_below(&g->rng, 5)];
        if (other > max || other < 0) other = max;
    }
    bool swap = fd_chance(&g->rng, 50);
    f->sizes[f->n_sizes][swap] = max;
    f->sizes[f->n_sizes][!swap] = other;
    return ++f->n_sizes;
}

/* Makes some dims of v `?` (new sizes; g->dyn percent of them). */
static void fd_make_dynamic(fd_gen *g, fd_val *v) {
    for (int i = 0; i < v->rank && g->dyn; i++)
        if (!v->sym[i] && fd_chance(&g->rng, g->dyn)) v->sym[i] = (uint8_t)fd_size_new(g, v->dims[i], -1);
}

/* n dims of src from dim si to dst from dim di, sizes with them. */
static void fd_move_dims(fd_val *dst, int di, const fd_val *src, int si, int n) {
    if (n <= 0) return;
    memmove(dst->dims + di, src->dims + si, sizeof(int64_t) * (size_t)n);
    memmove(dst->sym + di, src->sym + si, (size_t)n);
}

static bool fd_same_shape(const fd_val *a, const fd_val *b) {
    return a->rank == b->rank && !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) &&
           !memcmp(a->sym, b->sym, (size_t)a->rank);
}

static bool fd_float(const fd_val *v) { return gpuir_dtype_is_float(v->dt); }

/* A dtype's unit in the last place at 1: what one rounding may change. */
static double fd_u(gpuir_dtype dt) {
    return dt == GPUIR_F32 ? 1.2e-7 : dt == GPUIR_F16 ? 9.8e-4 : dt == GPUIR_BF16 ? 7.9e-3 : 0;
}

/* The magnitude floats are kept under before an op that could grow them. */
static double fd_mag_limit(gpuir_dtype dt) { return dt == GPUIR_F32 ? 64 : 8; }

/* An edge-heavy dimension: 1, primes, tile sizes and their neighbours. */
static int64_t fd_dim(fd_gen *g) {
    static const int64_t d[] = {1, 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129};
    if (!fd_off[FD_ZERO] && fd_chance(&g->rng, 2)) return 0;
    return d[fd_below(&g->rng, (int)(sizeof d / sizeof d[0]))];
}

static gpuir_dtype fd_dtype(fd_gen *g) {
    static const gpuir_dtype d[] = {GPUIR_F32, GPUIR_F32, GPUIR_F32, GPUIR_F16, GPUIR_BF16, GPUIR_I32, GPUIR_I64};
    gpuir_dtype t;
    do t = d[fd_below(&g->rng, 7)];
    while (fd_off[FD_INT] && !gpuir_dtype_is_float(t));
    return t;
}

/* The element count with 0s counted as 1s: what the shape costs once an
   op (a reduction over the empty axis, a broadcast) drops its zero. */
static int64_t fd_span(const fd_val *v) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= v->dims[i] > 1 ? v->dims[i] : 1;
    return n;
}

/* Shrinks the largest dims until the shape spans at most `limit` elements. */
static void fd_cap(fd_val *v, int64_t limit) {
    while (fd_span(v) > limit) {
        int big = 0;
        for (int i = 1; i < v->rank; i++)
            if (v->dims[i] > v->dims[big]) big = i;
        v->dims[big] = (v->dims[big] + 1) / 2;
    }
}

static fd_val *fd_push(fd_gen *g) {
    fd_func *f = g->f;
    if (f->n >= FD_MAX_VALS) return NULL;
    fd_val *v = &f->v[f->n++];
    memset(v, 0, sizeof *v);
    return v;
}

/* A parameter of dtype dt and shape's dims (its `?`s too). */
static int fd_param_like(fd_gen *g, gpuir_dtype dt, const fd_val *shape) {
    fd_val *v = fd_push(g);
    if (!v) return -1;
    v->dt = dt;
    fd_move_dims(v, 0, shape, 0, shape->rank);
    v->rank = shape->rank;
    v->mag = gpuir_dtype_is_float(dt) ? 1 : 16;     /* gpuir_array_fill_random's ranges */
    v->param = true;
    if (!fd_off[FD_GLOBAL] && !fd_dynamic(v) && fd_chance(&g->rng, 8)) {   /* a module global instead */
        char decl[256], ty[128];
        fd_type(v, ty, sizeof ty);
        snprintf(decl, sizeof decl, "global @g%d_%d : %s", g->fi, g->n_globals, ty);
        v->global = fd_strdup(decl);
        snprintf(decl, sizeof decl, "%%v%d = get_global {name = @g%d_%d} : () -> %s", g->f->n - 1, g->fi,
                 g->n_globals++, ty);
        v->line = fd_strdup(decl);
        v->param = false;
    }
    return g->f->n - 1;
}

/* The shape [v's dim i, w's dim j] (a mask [Sq, Sk], a bias [N]: j < 0). */
static fd_val fd_shape_of(const fd_val *v, int i, const fd_val *w, int j) {
    fd_val s;
    memset(&s, 0, sizeof s);
    fd_move_dims(&s, 0, v, i, 1);
    s.rank = 1;
    if (j >= 0) fd_move_dims(&s, s.rank++, w, j, 1);
    return s;
}

/* Appends op `fmt` (after "%vN = ") with result shape `r` reading deps. */
static int fd_op(fd_gen *g, const fd_val *r, int a, int b, const char *fmt, ...) FD_PRINTF(5, 6);
static int fd_op(fd_gen *g, const fd_val *r, int a, int b, const char *fmt, ...) {
    fd_val *v = fd_push(g);
    if (!v) return -1;
    *v = *r;
    v->param = false;
    v->global = NULL;
    v->n_deps = 0;
    if (a >= 0) v->deps[v->n_deps++] = a;
    if (b >= 0) v->deps[v->n_deps++] = b;
    fd_str line = {0};    /* any length: a dense mask is one line */
    fd_printf(&line, "%%v%d = ", g->f->n - 1);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *body = (char *)malloc((size_t)(n > 0 ? n : 0) + 1);
    if (!body) abort();
    va_start(ap, fmt);
    vsnprintf(body, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
    va_end(ap);
    fd_printf(&line, "%s", body);
    free(body);
    v->line = line.p;
    if (v->mag > 1e300) v->mag = 1e300;
    return g->f->n - 1;
}

static const char *fd_t(const fd_val *v, char *buf) {   /* buf: 128 bytes */
    fd_type(v, buf, 128);
    return buf;
}

/* ---- tensor-level ops --------------------------------------------------- */

static int fd_unary_named(fd_gen *g, int a, const char *op, double mag, double err) {
    fd_val r = g->f->v[a];
    char ta[128];
    r.mag = mag;
    r.err = err;
    return fd_op(g, &r, a, -1, "%s %%v%d : (%s) -> %s", op, a, fd_t(&g->f->v[a], ta), ta);
}

/* tanh when a float value has grown past the dtype's limit. */
static int fd_tame(fd_gen *g, int a, double limit) {
    const fd_val *v = &g->f->v[a];
    if (!fd_float(v) || v->mag <= limit) return a;
    return fd_unary_named(g, a, "tanh", 1, v->err + fd_u(v->dt));
}

/* A splat constant of the last `rank` dims of shape (fewer when a `?` is
   among them: a constant's size is static). */
static int fd_splat(fd_gen *g, const fd_val *shape, int rank, double value) {
    fd_val r = *shape;
    for (int i = shape->rank - rank; i < shape->rank; i++)
        if (shape->sym[i]) rank = shape->rank - 1 - i;
    r.rank = rank;
    fd_move_dims(&r, 0, shape, shape->rank - rank, rank);
    r.mag = fabs(value);
    r.err = 0;
    char tr[128];
    if (fd_float(&r)) return fd_op(g, &r, -1, -1, "constant {value = %.6f} : () -> %s", value, fd_t(&r, tr));
    return fd_op(g, &r, -1, -1, "constant {value = %lld} : () -> %s", (long long)value, fd_t(&r, tr));
}

/* abs(x) + 0.5: a float operand away from 0 (log, sqrt, rsqrt, div, pow). */
static int fd_positive(fd_gen *g, int a, double limit) {
    a = fd_tame(g, a, limit);
    if (a < 0) return -1;
    int b = fd_unary_named(g, a, "abs", g->f->v[a].mag, g->f->v[a].err);
    int c = b < 0 ? -1 : fd_splat(g, &g->f->v[b], fd_below(&g->rng, g->f->v[b].rank + 1), 0.5);
    if (c < 0) return -1;
    fd_val r = g->f->v[b];
    char tb[128], tc[128];
    r.mag += 0.5;
    r.err += r.mag * fd_u(r.dt);
    return fd_op(g, &r, b, c, "add %%v%d, %%v%d : (%s, %s) -> %s", b, c, fd_t(&g->f->v[b], tb),
                 fd_t(&g->f->v[c], tc), tb);
}

static int fd_unary(fd_gen *g, int a) {
    static const char *any[] = {"neg", "abs", "relu"};
    static const char *flt[] = {"neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu",
                                "silu"};
    const fd_val *v = &g->f->v[a];
    if (!fd_float(v)) return fd_unary_named(g, a, any[fd_below(&g->rng, 3)], v->mag, v->err);
    const char *op = flt[fd_below(&g->rng, 11)];
    if (!strcmp(op, "exp")) {
        a = fd_tame(g, a, 3);
        if (a < 0) return -1;
        v = &g->f->v[a];
        return fd_unary_named(g, a, op, exp(v->mag), (v->err + fd_u(v->dt)) * exp(v->mag));
    }
    if (!strcmp(op, "log") || !strcmp(op, "sqrt") || !strcmp(op, "rsqrt")) {
        a = fd_positive(g, a, fd_mag_limit(v->dt));
        if (a < 0) return -1;
        v = &g->f->v[a];
        double mag = !strcmp(op, "log") ? fmax(1, log(v->mag)) : !strcmp(op, "sqrt") ? sqrt(v->mag) : 1.5;
        double slope = !strcmp(op, "log") ? 2 : !strcmp(op, "sqrt") ? 0.71 : 1.42;   /* at 0.5 */
        return fd_unary_named(g, a, op, mag, slope * v->err + mag * fd_u(v->dt));
    }
    bool bounded = !strcmp(op, "tanh") || !strcmp(op, "sigmoid");
    double mag = bounded ? 1 : v->mag;
    bool exact = !strcmp(op, "neg") || !strcmp(op, "abs") || !strcmp(op, "relu");
    return fd_unary_named(g, a, op, mag, v->err + (exact ? 0 : mag * fd_u(v->dt)));
}

/* A value broadcast-compatible with v: a suffix of its dims, some set to 1.
   An existing value of that shape when there is one, else a new parameter
   or a constant. */
static int fd_partner(fd_gen *g, int a) {
    fd_val s = g->f->v[a];
    int rank = fd_chance(&g->rng, 60) ? s.rank : fd_below(&g->rng, s.rank + 1);
    fd_move_dims(&s, 0, &s, s.rank - rank, rank);
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        if (fd_chance(&g->rng, 20)) s.dims[i] = 1, s.sym[i] = 0;
    if (fd_chance(&g->rng, 50))
        for (int i = g->f->n - 1; i >= 0; i--) {
            const fd_val *c = &g->f->v[i];
            if (i != a && c->dt == s.dt && fd_same_shape(c, &s)) return i;
        }
    int k = fd_below(&g->rng, 10);
    if (k == 0) return fd_splat(g, &s, s.rank, fd_float(&s) ? 0.75 : 3);
    if (k == 1 && !fd_off[FD_DENSE] && !fd_dynamic(&s) && fd_count(&s) <= 64) {
        fd_str d = {0};
        fd_val r = s;
        char tr[128];
        r.mag = fd_float(&s) ? 2 : 8;
        r.err = 0;
        fd_printf(&d, "constant {value = dense<[");
        for (int64_t i = 0; i < fd_count(&s); i++) {
            int x = fd_below(&g->rng, 17) - 8;
            if (fd_float(&s)) fd_printf(&d, "%s%.2f", i ? ", " : "", x / 4.0);
            else fd_printf(&d, "%s%d", i ? ", " : "", x);
        }
        fd_printf(&d, "]>} : () -> %s", fd_t(&r, tr));
        int v = fd_op(g, &r, -1, -1, "%s", d.p);
        free(d.p);
        return v;
    }
    return fd_param_like(g, s.dt, &s);
}

static void fd_broadcast_shape(const fd_val *a, const fd_val *b, fd_val *r) {
    const fd_val *big = a->rank >= b->rank ? a : b, *small = a->rank >= b->rank ? b : a;
    *r = *big;
    int off = big->rank - small->rank;
    for (int i = 0; i < small->rank; i++)
        if (big->dims[off + i] == 1 && !big->sym[off + i]) fd_move_dims(r, off + i, small, i, 1);
}

static int fd_binary(fd_gen *g, int a) {
    static const char *ops[] = {"add", "sub", "mul", "div", "max", "min", "pow"};
    const fd_val *v = &g->f->v[a];
    int k = fd_below(&g->rng, fd_float(v) ? 7 : 6);
    const char *op = ops[k];
    if (fd_float(v)) a = fd_tame(g, a, k == 6 ? 2 : k == 2 || k == 3 ? 8 : fd_mag_limit(v->dt));
    int b = a < 0 ? -1 : fd_partner(g, a);
    if (b < 0) return -1;
    if (fd_float(&g->f->v[a]) && (k == 3 || k == 6)) b = fd_positive(g, b, 2);  /* divisor, base */
    else if (fd_float(&g->f->v[a])) b = fd_tame(g, b, k == 2 ? 8 : fd_mag_limit(v->dt));
    if (b < 0) return -1;
    if (k == 6 || (k != 3 && fd_chance(&g->rng, 30))) {   /* pow's base first; div's divisor last */
        int t = a;
        a = b;
        b = t;
    }
    const fd_val *x = &g->f->v[a], *y = &g->f->v[b];
    fd_val r;
    fd_broadcast_shape(x, y, &r);
    r.dt = x->dt;
    double mx = x->mag, my = y->mag;
    switch (k) {
    case 0: case 1: r.mag = mx + my; r.err = x->err + y->err; break;
    case 2: r.mag = mx * my; r.err = x->err * my + y->err * mx; break;
    case 3: r.mag = mx * 2; r.err = 2 * (x->err + y->err * r.mag); break;
    case 6: r.mag = pow(mx, my); r.err = (x->err + y->err + fd_u(x->dt)) * r.mag * (2 + log(mx + 1)) * (my + 2); break;
    default: r.mag = fmax(mx, my); r.err = fmax(x->err, y->err); break;
    }
    if (x->err > 0 || y->err > 0 || (k == 3 || k == 6)) r.err += r.mag * fd_u(r.dt);  /* one rounding */
    char tx[128], ty[128], tr[128];
    return fd_op(g, &r, a, b, "%s %%v%d, %%v%d : (%s, %s) -> %s", op, a, b, fd_t(x, tx), fd_t(y, ty), fd_t(&r, tr));
}

static int fd_reshape(fd_gen *g, int a);

/* matmul of v (as [.., M, K], or [.., K, M] with transpose_a) by a new
   parameter, then an epilogue: bias, an activation, a residual; now and
   then after a reshape of the result (torch's linear over [B, S, H]: rows
   or heads split, dims merged), which canonicalize moves below them. */
static int fd_matmul(fd_gen *g, int a) {
    const fd_val *x = &g->f->v[a];
    if (x->rank < 2 || fd_off[FD_MATMUL]) return fd_unary(g, a);
    bool ta = fd_chance(&g->rng, 20), tb = fd_chance(&g->rng, 30);
    int im = x->rank - (ta ? 1 : 2), ik = x->rank - (ta ? 2 : 1);
    int64_t m = x->dims[im], k = x->dims[ik], n = fd_dim(g);
    int64_t batch = 1;
    for (int i = 0; i < x->rank - 2; i++) batch *= x->dims[i] > 1 ? x->dims[i] : 1;
    int64_t cm = m > 1 ? m : 1, ck = k > 1 ? k : 1;   /* the cost, as if 0s were 1s */
    while (n > 1 && batch * cm * n * (ck + 1) > 150000) n /= 2;
    if (batch * cm * (n > 1 ? n : 1) * (ck + 1) > 300000) return fd_unary(g, a);
    fd_val nv;                                        /* N: a new `?` now and then */
    memset(&nv, 0, sizeof nv);
    nv.rank = 1;
    nv.dims[0] = n;
    fd_make_dynamic(g, &nv);
    bool dynamic = fd_dynamic(x) || fd_dynamic(&nv);  /* the plain kernel's (no wgmma, form, split) */
    bool flt = fd_float(x);
    bool half = x->dt == GPUIR_F16 || x->dt == GPUIR_BF16;
    bool tf32 = x->dt == GPUIR_F32 && !fd_off[FD_TF32] && fd_chance(&g->rng, 10);
    bool wgmma = !fd_off[FD_WGMMA] && !dynamic && g->sm >= 90 && (half || tf32) && k % (half ? 8 : 4) == 0 && k > 0 &&
                 m > 0 && n > 0 && fd_chance(&g->rng, 25);    /* `wgmma = true` forces it: only where it runs */
    /* or a wgmma variant by name (128x256 tiles, a persistent grid: the
       module's sm_count is often 1..16, so blocks walk tiles; clusters of
       two blocks sharing B's tile) */
    static const char *const wgmma_forms[2][6] = {
        {"wgmma.128x128x64.s6", "wgmma.128x128x64.s6.persistent", "wgmma.128x256x64.s4", "wgmma.128x256x64.s4.persistent",
         "wgmma.128x128x64.s6.persistent.c2", "wgmma.128x256x64.s4.persistent.c2"},
        {"wgmma.128x128x32.s6", "wgmma.128x128x32.s6.persistent", "wgmma.128x256x32.s4", "wgmma.128x256x32.s4.persistent",
         "wgmma.128x256x32.s4.persistent.c2", NULL}};
    const char *form = wgmma && fd_chance(&g->rng, 50) ? wgmma_forms[tf32][fd_below(&g->rng, tf32 ? 5 : 6)] : NULL;
    if (wgmma && fd_chance(&g->rng, 50)) tb = true;   /* else B [K, N]: staged, or read N-major under a form */
    int slices = flt && !fd_off[FD_SPLITK] && (!wgmma || half) && !dynamic && k >= 4 && fd_chance(&g->rng, 12)
                     ? 2 + fd_below(&g->rng, 3) : 0;
    if (slices && k <= (slices - 1) * gpuir_matmul_k_slice_len(k, slices)) slices = 0;   /* no empty slice */
    if (slices && wgmma && gpuir_matmul_k_slice_len(k, slices) % 64) slices = 0;  /* wgmma: whole k tiles */
    if (slices) tf32 = false;
    if (flt) a = fd_tame(g, a, x->dt == GPUIR_F32 ? 4 : 2);
    if (a < 0) return -1;
    x = &g->f->v[a];
    fd_val bs = *x;                     /* B: [K, N] or [N, K], or batched like A */
    bs.rank = fd_chance(&g->rng, 70) ? 2 : x->rank;
    fd_move_dims(&bs, bs.rank - (tb ? 1 : 2), x, ik, 1);
    fd_move_dims(&bs, bs.rank - (tb ? 2 : 1), &nv, 0, 1);
    int b = fd_param_like(g, x->dt, &bs);
    if (b < 0) return -1;
    x = &g->f->v[a];
    const fd_val *y = &g->f->v[b];
    fd_val r = *x;
    fd_move_dims(&r, r.rank - 2, x, im, 1);
    fd_move_dims(&r, r.rank - 1, &nv, 0, 1);
    double kk = (double)(k > 0 ? k : 1);
    r.mag = kk * x->mag * y->mag;
    r.err = 4 * sqrt(kk) * x->mag * y->mag * fd_u(GPUIR_F32) + kk * (x->err * y->mag + y->err * x->mag) +
             r.mag * fd_u(slices ? GPUIR_F32 : x->dt);
    if (tf32 && (x->err > 0 || y->err > 0))   /* a 1-ulp f32 difference can round to the other TF32 value */
        r.err += kk * x->mag * y->mag * 4.9e-4;
    if (slices) {
        memmove(r.dims + 1, r.dims, sizeof(int64_t) * (size_t)r.rank);
        r.dims[0] = slices;
        r.rank++;
        r.dt = GPUIR_F32;
    }
    char attrs[160] = "", tx[128], ty[128], tr[128];
    size_t o = 0;
    if (ta) o += (size_t)snprintf(attrs + o, sizeof attrs - o, "%stranspose_a = true", o ? ", " : "");
    if (tb) o += (size_t)snprintf(attrs + o, sizeof attrs - o, "%stranspose_b = true", o ? ", " : "");
    if (tf32) o += (size_t)snprintf(attrs + o, sizeof attrs - o, "%stf32 = true", o ? ", " : "");
    if (!wgmma && !dynamic && x->dt == GPUIR_F32 && !tf32 && !ta && !tb && fd_chance(&g->rng, 10))
        form = "register_tiled.256x128x8.s2";    /* the f32 256x128 variant, by name (any shape it is given) */
    if (form) o += (size_t)snprintf(attrs + o, sizeof attrs - o, "%sform = \"%s\"", o ? ", " : "", form);
    else if (wgmma) o += (size_t)snprintf(attrs + o, sizeof attrs - o, "%swgmma = true", o ? ", " : "");
    if (slices) o += (size_t)snprintf(attrs + o, sizeof attrs - o, "%sk_slices = %d", o ? ", " : "", slices);
    char braces[200] = "";
    if (o) snprintf(braces, sizeof braces, " {%s}", attrs);
    int c = fd_op(g, &r, a, b, "matmul %%v%d, %%v%d%s : (%s, %s) -> %s", a, b, braces, fd_t(x, tx), fd_t(y, ty),
                  fd_t(&r, tr));
    if (c < 0) return -1;
    if (slices) {    /* sum the partials back: reduce_sum over the slices */
        fd_val s = g->f->v[c];
        memmove(s.dims, s.dims + 1, sizeof(int64_t) * (size_t)(s.rank - 1));
        s.rank--;
        s.err += s.mag * fd_u(GPUIR_F32) * slices;
        char tc[128];
        c = fd_op(g, &s, c, -1, "reduce_sum %%v%d {axes = [0]} : (%s) -> %s", c, fd_t(&g->f->v[c], tc), fd_t(&s, tr));
    }
    bool reshaped = c >= 0 && fd_chance(&g->rng, 15);
    if (reshaped) c = fd_reshape(g, c);
    if (c >= 0 && g->f->v[c].rank >= 1 && fd_chance(&g->rng, 60)) {   /* bias [N], or [H, D] after a reshape */
        const fd_val *cv = &g->f->v[c];
        fd_val bs2;
        memset(&bs2, 0, sizeof bs2);
        bs2.rank = reshaped && cv->rank >= 2 && fd_chance(&g->rng, 50) ? 2 : 1;
        fd_move_dims(&bs2, 0, cv, cv->rank - bs2.rank, bs2.rank);
        int bias = fd_param_like(g, cv->dt, &bs2);
        if (bias < 0) return c;
        fd_val s = g->f->v[c];
        s.mag += 1;
        s.err += s.mag * fd_u(s.dt);
        char tc[128], tbias[128];
        c = fd_op(g, &s, c, bias, "add %%v%d, %%v%d : (%s, %s) -> %s", c, bias, fd_t(&g->f->v[c], tc),
                  fd_t(&g->f->v[bias], tbias), tc);
    }
    if (c >= 0 && fd_float(&g->f->v[c]) && fd_chance(&g->rng, 60)) {
        static const char *act[] = {"relu", "gelu", "silu", "sigmoid", "tanh"};
        int k2 = fd_below(&g->rng, 5);
        c = fd_unary_named(g, c, act[k2], k2 >= 3 ? 1 : g->f->v[c].mag, g->f->v[c].err + g->f->v[c].mag * fd_u(g->f->v[c].dt));
    }
    if (c >= 0 && reshaped && fd_chance(&g->rng, 40)) c = fd_binary(g, c);   /* a residual, a scale */
    return c;
}

static int fd_reduce(fd_gen *g, int a) {
    static const char *ops[] = {"reduce_sum", "reduce_max", "reduce_mean"};
    const fd_val *x = &g->f->v[a];
    if (x->rank == 0 || fd_off[FD_REDUCE]) return fd_unary(g, a);
    int k = fd_below(&g->rng, 3);
    if (fd_float(x) && k != 1) a = fd_tame(g, a, x->dt == GPUIR_F32 ? 8 : 2);
    if (a < 0) return -1;
    x = &g->f->v[a];
    bool keep = fd_chance(&g->rng, 40), axis[GPUIR_MAX_RANK] = {false};
    int n_axes = 0;
    double reduced = 1;
    char axes[64] = "";
    size_t o = 0;
    for (int i = 0; i < x->rank; i++)
        if (fd_chance(&g->rng, 50) || (i == x->rank - 1 && n_axes == 0)) {
            axis[i] = true;
            reduced *= (double)x->dims[i];
            o += (size_t)snprintf(axes + o, sizeof axes - o, "%s%d", n_axes++ ? ", " : "", i);
        }
    fd_val r = *x;
    r.rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!axis[i]) fd_move_dims(&r, r.rank++, x, i, 1);
        else if (keep) r.sym[r.rank] = 0, r.dims[r.rank++] = 1;
    if (k == 0) { r.mag = x->mag * fmax(reduced, 1); r.err = x->err * reduced + 4 * sqrt(reduced) * x->mag * fd_u(GPUIR_F32) + r.mag * fd_u(r.dt); }
    else if (k == 2) r.err = x->err + 4 * x->mag * fd_u(x->dt);
    char tx[128], tr[128];
    return fd_op(g, &r, a, -1, "%s %%v%d {axes = [%s]%s} : (%s) -> %s", ops[k], a, axes,
                 keep ? ", keepdims = true" : "", fd_t(x, tx), fd_t(&r, tr));
}

static int fd_softmax(fd_gen *g, int a) {
    const fd_val *x = &g->f->v[a];
    if (!fd_float(x) || x->rank == 0 || fd_off[FD_SOFTMAX]) return fd_unary(g, a);
    a = fd_tame(g, a, 4);
    if (a < 0) return -1;
    x = &g->f->v[a];
    int axis = fd_below(&g->rng, 2 * x->rank) - x->rank;
    fd_val r = *x;
    r.mag = 1;
    r.err = 0.5 * x->err + 4 * fd_u(x->dt);   /* |d softmax| <= 1/2 per row */
    char tx[128];
    return fd_op(g, &r, a, -1, "softmax %%v%d {axis = %d} : (%s) -> %s", a, axis, fd_t(x, tx), tx);
}

static int fd_transpose(fd_gen *g, int a) {
    const fd_val *x = &g->f->v[a];
    if (x->rank < 2) return fd_unary(g, a);
    int perm[GPUIR_MAX_RANK];
    for (int i = 0; i < x->rank; i++) perm[i] = i;
    for (int i = x->rank - 1; i > 0; i--) {
        int j = fd_below(&g->rng, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    fd_val r = *x;
    char p[64] = "", tx[128], tr[128];
    size_t o = 0;
    for (int i = 0; i < x->rank; i++) {
        fd_move_dims(&r, i, x, perm[i], 1);
        o += (size_t)snprintf(p + o, sizeof p - o, "%s%d", i ? ", " : "", perm[i]);
    }
    return fd_op(g, &r, a, -1, "transpose %%v%d {perm = [%s]} : (%s) -> %s", a, p, fd_t(x, tx), fd_t(&r, tr));
}

/* The element count of v at run `run`. */
static int64_t fd_count_at(const fd_func *f, const fd_val *v, int run) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= fd_dim_at(f, v, i, run);
    return n;
}

/* A size with exactly these values (a reshape's `?`: what the other dims
   leave of the count); 0 when the function has all it may. */
static int fd_size_exact(fd_gen *g, int64_t run0, int64_t run1) {
    fd_func *f = g->f;
    if (f->n_sizes >= FD_MAX_SIZES) return 0;
    f->sizes[f->n_sizes][0] = run0;
    f->sizes[f->n_sizes][1] = run1;
    return ++f->n_sizes;
}

/* A reshape: the count split in two, two adjacent dims merged, a 1
   inserted, or one static dim split in two ([B*S, H] to [B, S, H]: a
   matmul's rows; [.., H*D] to [.., H, D]: heads). With `?`s the result has
   at most one (the rule of the op), its static dims are not 0 (a `?` is
   then what they leave of the count), and a `?` the dims change is a new
   size. */
static int fd_reshape(fd_gen *g, int a) {
    const fd_val *x = &g->f->v[a];
    fd_val r = *x;
    int64_t n = fd_count(x);
    int k = fd_below(&g->rng, 4);
    bool dynamic = fd_dynamic(x);
    if (n == 0) return fd_unary(g, a);
    if (k == 0 || x->rank < 2) {              /* split the element count in two */
        int64_t c0 = fd_count_at(g->f, x, 0), c1 = fd_count_at(g->f, x, 1), f = 1;
        for (int64_t d = 2; d <= 17 && d <= n; d++)
            if (n % d == 0 && c0 % d == 0 && c1 % d == 0 && fd_chance(&g->rng, 40)) f = d;
        memset(r.sym, 0, sizeof r.sym);
        r.rank = 2;
        r.dims[0] = f;
        r.dims[1] = n / f;
        if (dynamic && !(r.sym[1] = (uint8_t)fd_size_exact(g, c0 / f, c1 / f))) return fd_unary(g, a);
    } else if (k == 1) {                      /* merge two adjacent dims */
        int i = fd_below(&g->rng, x->rank - 1);
        r.dims[i] = x->dims[i] * x->dims[i + 1];
        r.sym[i] = 0;
        if ((x->sym[i] || x->sym[i + 1]) &&
            !(r.sym[i] = (uint8_t)fd_size_exact(g, fd_dim_at(g->f, x, i, 0) * fd_dim_at(g->f, x, i + 1, 0),
                                                fd_dim_at(g->f, x, i, 1) * fd_dim_at(g->f, x, i + 1, 1))))
            return fd_unary(g, a);
        fd_move_dims(&r, i + 1, x, i + 2, x->rank - i - 2);
        r.rank = x->rank - 1;
    } else if (k == 3 && x->rank >= 1 && x->rank < 5) {   /* split one static dim in two */
        int i = fd_below(&g->rng, x->rank);
        int64_t f = 1;
        for (int64_t d = 2; d <= 17 && d < x->dims[i]; d++)
            if (x->dims[i] % d == 0 && fd_chance(&g->rng, 40)) f = d;
        if (x->sym[i] || f == 1) return fd_unary(g, a);
        fd_move_dims(&r, i + 1, x, i, x->rank - i);
        r.dims[i] = f;
        r.dims[i + 1] = x->dims[i] / f;
        r.rank = x->rank + 1;
    } else {                                  /* insert a 1 */
        if (x->rank >= 5) return fd_unary(g, a);
        int i = fd_below(&g->rng, x->rank + 1);
        fd_move_dims(&r, i + 1, x, i, x->rank - i);
        r.dims[i] = 1;
        r.sym[i] = 0;
        r.rank = x->rank + 1;
    }
    if (fd_dynamic_count(&r) > 1) return fd_unary(g, a);
    for (int i = 0; dynamic && i < r.rank; i++)
        if (!r.sym[i] && r.dims[i] == 0) return fd_unary(g, a);
    char tx[128], tr[128];
    return fd_op(g, &r, a, -1, "reshape %%v%d : (%s) -> %s", a, fd_t(x, tx), fd_t(&r, tr));
}

static int fd_broadcast(fd_gen *g, int a) {
    const fd_val *x = &g->f->v[a];
    fd_val r = *x;
    int ones = -1;
    for (int i = 0; i < x->rank; i++)        /* (a `?` is never broadcast) */
        if (x->dims[i] == 1 && !x->sym[i] && fd_chance(&g->rng, 60)) ones = i;
    if (ones >= 0) r.dims[ones] = fd_dim(g);
    else if (x->rank < 4) {
        fd_move_dims(&r, 1, x, 0, x->rank);
        r.dims[0] = fd_dim(g);
        r.sym[0] = 0;
        r.rank++;
    } else return fd_unary(g, a);
    int grown = ones >= 0 ? ones : 0;
    while (r.dims[grown] > 1 && fd_span(&r) > FD_MAX_ELEMS) r.dims[grown] /= 2;
    char tx[128], tr[128];
    return fd_op(g, &r, a, -1, "broadcast %%v%d : (%s) -> %s", a, fd_t(x, tx), fd_t(&r, tr));
}

/* A cast; float to int only from exact values (the same bits on both
   sides), scaled by 8 so the ints are not all 0. */
static int fd_cast(fd_gen *g, int a) {
    const fd_val *x = &g->f->v[a];
    gpuir_dtype to = fd_dtype(g);
    if (to == x->dt || fd_off[FD_CAST]) return fd_unary(g, a);
    if (fd_float(x) && !gpuir_dtype_is_float(to)) {
        if (x->err > 0) return fd_unary(g, a);
        int c = fd_splat(g, x, 0, 8.0);
        if (c < 0) return -1;
        fd_val s = g->f->v[a];
        s.mag *= 8;
        char ts[128], tc[128];
        a = fd_op(g, &s, a, c, "mul %%v%d, %%v%d : (%s, %s) -> %s", a, c, fd_t(&s, ts), fd_t(&g->f->v[c], tc), ts);
        if (a < 0) return -1;
    } else if (fd_float(x)) a = fd_tame(g, a, 8);
    if (a < 0) return -1;
    x = &g->f->v[a];
    fd_val r = *x;
    r.dt = to;
    if (gpuir_dtype_is_float(to)) {
        if (!fd_float(x)) r.mag = fmin(r.mag, 1e6);
        r.err = x->err + r.mag * fd_u(to);
        if (!fd_float(x)) r.err = r.mag * fd_u(to);    /* ints round once */
    }
    if (!gpuir_dtype_is_float(to)) r.err = 0;
    char tx[128], tr[128];
    return fd_op(g, &r, a, -1, "cast %%v%d : (%s) -> %s", a, fd_t(x, tx), fd_t(&r, tr));
}

/* ---- motifs: the patterns the fusing passes look for -------------------
   Random chains seldom line up into a row group, a sibling group or an
   attention: these write them on purpose, over edge shapes (rows of 1,
   rows past a block, rows past what a thread holds in registers, sequence
   lengths around the 64-key tile), in variants that fuse and variants that
   must not. Error bounds follow the rules of the ops above, each op's
   rounding counted once. */

/* An edge-heavy row length: the tile and block sizes of the row kernels,
   lengths past what 256 threads hold in registers (8192 floats), and past
   what a block of sm_75 and sm_86 holds in shared memory (16,350 and
   25,300 f32: those rows stream, where sm_80 and sm_90 cache them). */
static int64_t fd_row_len(fd_gen *g) {
    static const int64_t d[] = {1, 2, 3, 5, 31, 32, 33, 127, 128, 129, 255, 256, 257, 1000, 1023, 1024, 1025,
                                4095, 4096, 4097, 8191, 8192, 8193, 9001, 16500, 25500, 30001};
    return d[fd_below(&g->rng, (int)(sizeof d / sizeof d[0]))];
}

/* `op a, b` with the broadcast shape and a's dtype, the caller's bounds. */
static int fd_bin_named(fd_gen *g, const char *op, int a, int b, double mag, double err) {
    if (a < 0 || b < 0) return -1;
    const fd_val *x = &g->f->v[a], *y = &g->f->v[b];
    fd_val r;
    fd_broadcast_shape(x, y, &r);
    r.dt = x->dt;
    r.mag = mag;
    r.err = err;
    char tx[128], ty[128], tr[128];
    return fd_op(g, &r, a, b, "%s %%v%d, %%v%d : (%s, %s) -> %s", op, a, b, fd_t(x, tx), fd_t(y, ty), fd_t(&r, tr));
}

/* A reduction of a over the axes in `axes` (a bit per axis). */
static int fd_reduce_axes(fd_gen *g, const char *op, int a, unsigned axes, bool keep) {
    if (a < 0) return -1;
    const fd_val *x = &g->f->v[a];
    fd_val r = *x;
    char list[64] = "", tx[128], tr[128];
    size_t o = 0;
    double reduced = 1;
    r.rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!(axes >> i & 1)) { fd_move_dims(&r, r.rank++, x, i, 1); continue; }
        if (keep) r.sym[r.rank] = 0, r.dims[r.rank++] = 1;
        reduced *= (double)x->dims[i];
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", o ? ", " : "", i);
    }
    if (!strcmp(op, "reduce_sum")) {
        r.mag = x->mag * fmax(reduced, 1);
        r.err = x->err * reduced + 4 * sqrt(reduced) * x->mag * fd_u(GPUIR_F32) + r.mag * fd_u(r.dt);
    } else if (!strcmp(op, "reduce_mean")) {
        r.err = x->err + 4 * x->mag * fd_u(x->dt);
    }
    bool zero = false;                           /* a `?` beside a 0 is no reshape's result */
    for (int i = 0; i < r.rank; i++) zero |= !r.sym[i] && r.dims[i] == 0;
    if (keep && fd_dynamic_count(&r) <= (zero ? 0 : 1) && fd_chance(&g->rng, 15)) {   /* numpy's way: x.sum(1).reshape(-1, 1),
                                                                          which canonicalize folds (one `?` at most) */
        fd_val flat = r;
        flat.rank = 0;
        for (int i = 0; i < x->rank; i++)
            if (!(axes >> i & 1)) fd_move_dims(&flat, flat.rank++, x, i, 1);
        char tf[128];
        int f = fd_op(g, &flat, a, -1, "%s %%v%d {axes = [%s]} : (%s) -> %s", op, a, list, fd_t(x, tx), fd_t(&flat, tf));
        return f < 0 ? -1 : fd_op(g, &r, f, -1, "reshape %%v%d : (%s) -> %s", f, tf, fd_t(&r, tr));
    }
    return fd_op(g, &r, a, -1, "%s %%v%d {axes = [%s]%s} : (%s) -> %s", op, a, list, keep ? ", keepdims = true" : "",
                 fd_t(x, tx), fd_t(&r, tr));
}

static int fd_reduce_rows(fd_gen *g, const char *op, int a, bool keep) {
    if (a < 0) return -1;
    int rank = g->f->v[a].rank, n = g->row_axes > 1 && g->row_axes < rank ? g->row_axes : 1;
    return fd_reduce_axes(g, op, a, ((1u << n) - 1) << (rank - n), keep);
}

/* A float value [.., C] to normalize: a recent value when it has rows,
   else a new parameter (long rows now and then). */
static int fd_rows_input(fd_gen *g, int a) {
    const fd_val *x = a >= 0 ? &g->f->v[a] : NULL;
    if (x && fd_float(x) && x->rank >= 1 && x->dims[x->rank - 1] > 1 && fd_chance(&g->rng, 50))
        return fd_tame(g, a, 4);
    fd_val s;
    memset(&s, 0, sizeof s);
    static const gpuir_dtype dts[] = {GPUIR_F32, GPUIR_F32, GPUIR_F16, GPUIR_BF16};
    s.dt = dts[fd_below(&g->rng, 4)];
    s.rank = fd_chance(&g->rng, 15) ? 4 : 1 + fd_below(&g->rng, 3);
    for (int i = 0; i < s.rank - 1; i++) s.dims[i] = fd_dim(g) + 1;
    s.dims[s.rank - 1] = fd_row_len(g);
    while (fd_span(&s) > FD_MAX_ELEMS && s.rank > 1) {   /* leading dims give way to the row */
        int big = 0;
        for (int i = 1; i < s.rank - 1; i++)
            if (s.dims[i] > s.dims[big]) big = i;
        if (s.dims[big] == 1) break;
        s.dims[big] = (s.dims[big] + 1) / 2;
    }
    fd_make_dynamic(g, &s);
    return fd_param_like(g, s.dt, &s);
}

/* A per-column weight [C] (or the row's shape): LayerNorm's scale/shift. */
static int fd_row_weight(fd_gen *g, int x) {
    const fd_val *v = &g->f->v[x];
    if (fd_chance(&g->rng, 20)) return fd_splat(g, v, 0, 0.75);
    int n = g->row_axes;
    if (n > 1 && n < v->rank && fd_chance(&g->rng, 70)) {  /* rows over n axes: the n dims, or [C, 1..] */
        fd_val w;
        memset(&w, 0, sizeof w);
        bool channel = fd_chance(&g->rng, 50);
        fd_move_dims(&w, 0, v, channel ? v->rank - n - 1 : v->rank - n, channel ? 1 : n);
        w.rank = channel ? 1 + n : n;
        for (int i = 1; channel && i <= n; i++) w.dims[i] = 1, w.sym[i] = 0;
        return fd_param_like(g, v->dt, &w);
    }
    fd_val c = fd_shape_of(v, v->rank - 1, NULL, -1);
    return fd_chance(&g->rng, 80) ? fd_param_like(g, v->dt, &c) : fd_param_like(g, v->dt, v);
}

/* y * w (+ b) for LayerNorm's and RMSNorm's affine tail. */
static int fd_affine(fd_gen *g, int y) {
    if (y < 0 || fd_chance(&g->rng, 30)) return y;
    int w = fd_row_weight(g, y);
    if (w < 0) return -1;
    const fd_val *v = &g->f->v[y];
    double u = fd_u(v->dt), mag = v->mag;
    y = fd_bin_named(g, "mul", y, w, mag, v->err + mag * u);
    if (y < 0 || fd_chance(&g->rng, 40)) return y;
    int b = fd_row_weight(g, y);
    v = &g->f->v[y];
    return fd_bin_named(g, "add", y, b, v->mag + 1, v->err + (v->mag + 1) * u);
}

/* rsqrt(v + eps): eps of 0.25-1 keeps the slope (and the bound) finite. */
static int fd_inv_std(fd_gen *g, int var) {
    double eps = fd_chance(&g->rng, 50) ? 0.5 : fd_chance(&g->rng, 50) ? 0.25 : 1.0;
    int c = var < 0 ? -1 : fd_splat(g, &g->f->v[var], 0, eps);
    if (c < 0) return -1;
    const fd_val *v = &g->f->v[var];
    double u = fd_u(v->dt);
    int ve = fd_bin_named(g, "add", var, c, v->mag + eps, v->err + (v->mag + eps) * u);
    if (ve < 0) return -1;
    v = &g->f->v[ve];
    double mag = 1 / sqrt(eps);
    return fd_unary_named(g, ve, "rsqrt", mag, 0.5 * pow(eps, -1.5) * v->err + mag * u);
}

static int fd_motif_layernorm(fd_gen *g, int x) {
    const fd_val *v = &g->f->v[x];
    double u = fd_u(v->dt), mx = v->mag, ex = v->err;
    int mean = fd_reduce_rows(g, "reduce_mean", x, true);
    if (mean < 0) return -1;
    double em = g->f->v[mean].err;
    int d = fd_bin_named(g, "sub", x, mean, 2 * mx, ex + em + 2 * mx * u);
    if (d < 0) return -1;
    double ed = g->f->v[d].err;
    int sq = fd_bin_named(g, "mul", d, d, 4 * mx * mx, 4 * mx * ed + 4 * mx * mx * u);
    int var = fd_reduce_rows(g, "reduce_mean", sq, true);
    int r = fd_inv_std(g, var);
    if (r < 0) return -1;
    const fd_val *rv = &g->f->v[r];
    double my = 2 * mx * rv->mag;
    return fd_affine(g, fd_bin_named(g, "mul", d, r, my, ed * rv->mag + rv->err * 2 * mx + my * u));
}

static int fd_motif_rmsnorm(fd_gen *g, int x) {
    if (fd_chance(&g->rng, 30)) {              /* a residual add first, normalized */
        int res = fd_param_like(g, g->f->v[x].dt, &g->f->v[x]);
        if (res < 0) return -1;
        const fd_val *v = &g->f->v[x];
        x = fd_bin_named(g, "add", x, res, v->mag + 1, v->err + (v->mag + 1) * fd_u(v->dt));
        if (x < 0) return -1;
    }
    const fd_val *v = &g->f->v[x];
    double u = fd_u(v->dt), mx = v->mag, ex = v->err;
    int sq = fd_bin_named(g, "mul", x, x, mx * mx, 2 * mx * ex + mx * mx * u);
    int ms = fd_reduce_rows(g, "reduce_mean", sq, true);
    int r = fd_inv_std(g, ms);
    if (r < 0) return -1;
    const fd_val *rv = &g->f->v[r];
    double my = mx * rv->mag;
    return fd_affine(g, fd_bin_named(g, "mul", x, r, my, ex * rv->mag + rv->err * mx + my * u));
}

/* The mean of GroupNorm's rows xg ([N, G, 1]) viewed as [N, G, 1, ..]
   of x's rank: its value, or -1. */
static int fd_group_mean_view(fd_gen *g, int xg, const fd_val *x, int64_t groups) {
    int mean = fd_reduce_rows(g, "reduce_mean", xg, true);
    if (mean < 0) return -1;
    fd_val m4 = *x;
    m4.dims[1] = groups;
    for (int i = 2; i < x->rank; i++) m4.dims[i] = 1;
    m4.mag = g->f->v[mean].mag;
    m4.err = g->f->v[mean].err;
    char tm[128], tv[128];
    return fd_op(g, &m4, mean, -1, "reshape %%v%d : (%s) -> %s", mean, fd_t(&g->f->v[mean], tm), fd_t(&m4, tv));
}

/* GroupNorm in torch's form: x [N, C, spatial..] viewed [N, G, C/G*HW]
   (static), LayerNorm's statistics and normalization over those rows, the
   view back, then a per-channel weight and bias [C, 1..] and now and then
   SiLU: the reshape and the ops after it join the row kernel. Sometimes
   an op after the view reads a row value instead (it must not join), and
   sometimes a mean of the rows is returned through a view to
   [N, G, 1, ..] first (saved statistics: the view closes no kernel). */
static int fd_motif_group_norm(fd_gen *g) {
    static const gpuir_dtype dts[] = {GPUIR_F32, GPUIR_F32, GPUIR_F16, GPUIR_BF16};
    static const int64_t spatial[] = {1, 2, 3, 5, 7, 8, 16, 33};
    fd_val x;
    memset(&x, 0, sizeof x);
    x.dt = dts[fd_below(&g->rng, 4)];
    int64_t groups = 1 + fd_below(&g->rng, 4), per = 1 + fd_below(&g->rng, 4);
    x.rank = 3 + fd_below(&g->rng, 2);
    x.dims[0] = 1 + fd_below(&g->rng, 3);
    x.dims[1] = groups * per;
    for (int i = 2; i < x.rank; i++) x.dims[i] = spatial[fd_below(&g->rng, 8)];
    int64_t hw = 1;
    for (int i = 2; i < x.rank; i++) hw *= x.dims[i];
    if (x.dims[0] * groups * per * hw < 2) x.dims[0] = 2;
    int in = fd_param_like(g, x.dt, &x);
    if (in < 0) return -1;
    fd_val rows;
    memset(&rows, 0, sizeof rows);
    rows.dt = x.dt;
    rows.rank = 3;
    rows.dims[0] = x.dims[0];
    rows.dims[1] = groups;
    rows.dims[2] = per * hw;
    rows.mag = g->f->v[in].mag;
    char tx[128], tr[128];
    int xg = fd_op(g, &rows, in, -1, "reshape %%v%d : (%s) -> %s", in, fd_t(&g->f->v[in], tx), fd_t(&rows, tr));
    if (xg < 0) return -1;
    if (fd_chance(&g->rng, 20) && fd_group_mean_view(g, xg, &x, groups) < 0)   /* saved statistics, returned */
        return -1;
    int n = fd_motif_layernorm(g, xg);
    if (n < 0) return -1;
    fd_val back = x;
    back.mag = g->f->v[n].mag;
    back.err = g->f->v[n].err;
    int y = fd_op(g, &back, n, -1, "reshape %%v%d : (%s) -> %s", n, fd_t(&g->f->v[n], tr), fd_t(&back, tx));
    if (y < 0) return -1;
    if ((per == 1 || groups == 1) && fd_chance(&g->rng, 15)) {   /* a row value after the view: must not join */
        int mv = fd_group_mean_view(g, xg, &x, groups);
        if (mv < 0) return -1;
        const fd_val *v = &g->f->v[y];
        return fd_bin_named(g, "sub", y, mv, v->mag + 1, v->err + g->f->v[mv].err + (v->mag + 1) * fd_u(v->dt));
    }
    for (int k = 0; k < 2 && y >= 0 && fd_chance(&g->rng, 70); k++) {   /* weight, then bias: [C, 1..] */
        fd_val w;
        memset(&w, 0, sizeof w);
        w.rank = x.rank - 1;
        w.dims[0] = x.dims[1];
        for (int i = 1; i < w.rank; i++) w.dims[i] = 1;
        int p = fd_param_like(g, x.dt, &w);
        const fd_val *v = &g->f->v[y];
        double mag = k ? v->mag + 1 : v->mag;
        y = p < 0 ? -1 : fd_bin_named(g, k ? "add" : "mul", y, p, mag, v->err + mag * fd_u(v->dt));
    }
    if (y >= 0 && fd_chance(&g->rng, 40)) {
        const fd_val *v = &g->f->v[y];
        y = fd_unary_named(g, y, "silu", v->mag, v->err + v->mag * fd_u(v->dt));
    }
    return y;
}

static int fd_softmax_written(fd_gen *g, int a, int axis, double err);

/* softmax over the rows (now and then over another axis), as the op or
   written out as ops, with a mask added first or a log after. */
static int fd_motif_softmax(fd_gen *g, int x) {
    const fd_val *v = &g->f->v[x];
    double u = fd_u(v->dt);
    if (fd_chance(&g->rng, 50)) {              /* masked: [C], the row's shape, or a splat */
        int k = fd_below(&g->rng, 3), m;
        fd_val c = fd_shape_of(v, v->rank - 1, NULL, -1);
        if (k == 0) m = fd_param_like(g, v->dt, &c);
        else if (k == 1) m = fd_param_like(g, v->dt, v);
        else m = fd_splat(g, v, 0, -0.5);
        v = &g->f->v[x];
        x = fd_chance(&g->rng, 50) ? fd_bin_named(g, "add", x, m, v->mag + 1, v->err + (v->mag + 1) * u)
                                   : fd_bin_named(g, "add", m, x, v->mag + 1, v->err + (v->mag + 1) * u);
        if (x < 0) return -1;
        v = &g->f->v[x];
    }
    int axis = -1;                             /* now and then over another axis (softmax.columns) */
    if (v->rank >= 2 && fd_chance(&g->rng, 30)) axis = -2 - fd_below(&g->rng, v->rank - 1);
    fd_val r = *v;
    r.mag = 1;
    r.err = 0.5 * v->err + 4 * u;
    char tx[128];
    int p = fd_chance(&g->rng, 35) ? fd_softmax_written(g, x, axis, v->err)    /* as ops: decompose's match */
                                   : fd_op(g, &r, x, -1, "softmax %%v%d {axis = %d} : (%s) -> %s", x, axis,
                                           fd_t(v, tx), tx);
    if (p < 0 || fd_chance(&g->rng, 50)) return p;
    v = &g->f->v[x];
    double mag = 2 * v->mag + log((double)v->dims[v->rank + axis]) + 1;   /* |log p| */
    return fd_unary_named(g, p, "log", mag, 2 * v->err + 8 * u * (1 + mag));
}

/* Cross-entropy against targets t: lse(x) - sum(x * t) per row. */
static int fd_motif_cross_entropy(fd_gen *g, int x) {
    const fd_val *v = &g->f->v[x];
    double u = fd_u(v->dt), mx = v->mag, ex = v->err, c = (double)v->dims[v->rank - 1];
    int t = fd_param_like(g, v->dt, v);
    int mxv = fd_reduce_rows(g, "reduce_max", x, true);
    int d = fd_bin_named(g, "sub", x, mxv, 2 * mx, 2 * ex + 2 * mx * u);
    if (d < 0 || t < 0) return -1;
    double ed = g->f->v[d].err;
    int e = fd_unary_named(g, d, "exp", 1, ed + u);        /* d <= 0 */
    int s = fd_reduce_rows(g, "reduce_sum", e, true);
    if (s < 0) return -1;
    double es = g->f->v[s].err, ml = log(c) + 1;
    int ls = fd_unary_named(g, s, "log", ml, es + ml * u);  /* s >= 1: slope <= 1 */
    int lse = fd_bin_named(g, "add", ls, mxv, ml + mx, es + ml * u + ex + (ml + mx) * u);
    int xt = fd_bin_named(g, "mul", x, t, mx, ex + mx * u);
    bool keep = fd_chance(&g->rng, 50);
    int tl = fd_reduce_rows(g, "reduce_sum", xt, true);
    if (lse < 0 || tl < 0) return -1;
    const fd_val *a = &g->f->v[lse], *b = &g->f->v[tl];
    int loss = fd_bin_named(g, "sub", lse, tl, a->mag + b->mag, a->err + b->err + (a->mag + b->mag) * u);
    if (loss < 0 || keep) return loss;
    return fd_unary_named(g, loss, "neg", g->f->v[loss].mag, g->f->v[loss].err);
}

/* Reductions of one static float matrix over axis 0, axis 1 and both, and
   elementwise ops of it: a sibling group (one kernel, one read); now and
   then a rank-3 tensor, its reductions over the dims before a split
   (columns), after it (rows), all, or the middle one (which must not join
   the group). A dependent op reading a result now and then (it must run
   after). */
static int fd_motif_siblings(fd_gen *g) {
    static const int64_t d[] = {1, 2, 3, 31, 63, 64, 65, 100, 129, 255, 256, 257, 300, 513, 1000};
    static const char *ops[] = {"reduce_sum", "reduce_max", "reduce_mean"};
    static const gpuir_dtype dts[] = {GPUIR_F32, GPUIR_F32, GPUIR_F16, GPUIR_BF16};
    fd_val s;
    memset(&s, 0, sizeof s);
    s.dt = dts[fd_below(&g->rng, 4)];
    s.rank = fd_chance(&g->rng, 30) ? 3 : 2;
    for (int i = 0; i < s.rank; i++) s.dims[i] = d[fd_below(&g->rng, 15)];
    fd_cap(&s, FD_MAX_ELEMS);
    fd_make_dynamic(g, &s);
    int x = fd_param_like(g, s.dt, &s), last = -1;
    unsigned split = 1 + (unsigned)fd_below(&g->rng, s.rank - 1), all = (1u << s.rank) - 1;
    unsigned views[4] = {(1u << split) - 1, all & ~((1u << split) - 1), all, 2u};   /* columns, rows, total, middle */
    int n = 2 + fd_below(&g->rng, 4);
    for (int i = 0; i < n && x >= 0; i++) {
        int k = fd_below(&g->rng, 6);
        if (k == 5) {                          /* an elementwise sibling */
            const fd_val *v = &g->f->v[x];
            last = fd_chance(&g->rng, 50) ? fd_bin_named(g, "mul", x, x, 1, 2 * fd_u(v->dt))
                                          : fd_unary_named(g, x, "exp", exp(1), 3 * fd_u(v->dt));
            continue;
        }
        unsigned axes = i == 0 ? views[fd_chance(&g->rng, 50) ? 0 : 2] : views[fd_below(&g->rng, s.rank == 3 ? 4 : 3)];
        last = fd_reduce_axes(g, ops[fd_below(&g->rng, 3)], x, axes, fd_chance(&g->rng, 40));
    }
    if (last >= 0 && fd_chance(&g->rng, 20)) {   /* a dependent op: reads a result */
        const fd_val *r = &g->f->v[last];
        if (r->rank == 0 || (r->rank == s.rank && fd_span(r) == 1))
            last = fd_bin_named(g, "mul", x, last, g->f->v[x].mag * r->mag,
                                r->err + g->f->v[x].mag * r->mag * 2 * fd_u(r->dt));
    }
    return last;
}

/* Normalization over the leading dims (BatchNorm's statistics per column:
   a matrix, or a rank-3 tensor split after its first dim or two; now and
   then over the outer and inner dims of a rank-3 one, NCHW's): the
   column mean, x - mean, the mean of its square (pass.fuse's one-pass
   column variance in a sibling kernel), rsqrt(var + eps) (its epilogue),
   the normalization; now and then a column max beside them, the variance
   returned as it is, or the running statistics' update (a momentum of
   the mean: an epilogue op with a parameter vector). bf16 now and then
   (the steps stay ops), dynamic now and then (no sibling kernel). Now
   and then over the middle axis of a rank-3 one alone (LayerNorm over the
   channels of NCHW, pass.fuse's column groups), with a per-channel scale
   [C, 1] after it. Now and then NCHW's over 2^18 values or more in rows
   of 256 or more (pass.decompose's split over the gap: the rows'
   statistics, then the law of total variance). */
static int fd_motif_column_norm(fd_gen *g) {
    static const int64_t d[] = {1, 2, 3, 31, 64, 65, 129, 257, 300, 1000};
    fd_val s;
    memset(&s, 0, sizeof s);
    s.dt = fd_chance(&g->rng, 80) ? GPUIR_F32 : GPUIR_BF16;
    s.rank = fd_chance(&g->rng, 30) ? 3 : 2;
    for (int i = 0; i < s.rank; i++) s.dims[i] = d[fd_below(&g->rng, 10)];
    bool gap = s.rank == 3 && fd_chance(&g->rng, 35);
    if (gap) {              /* [N, C, R] of 2^18 values or more, R >= 256: decompose's split over the gap */
        static const int64_t nc[] = {1, 2, 3, 7, 16};
        s.dims[0] = nc[fd_below(&g->rng, 5)] + 1;
        s.dims[1] = nc[fd_below(&g->rng, 5)];
        s.dims[2] = ((int64_t)1 << 18) / (s.dims[0] * s.dims[1]) + fd_below(&g->rng, 3);
    } else {
        fd_cap(&s, FD_MAX_ELEMS);
        if (fd_chance(&g->rng, 20)) fd_make_dynamic(g, &s);
    }
    int x = fd_param_like(g, s.dt, &s);
    if (x < 0) return -1;
    unsigned columns = (1u << (1 + fd_below(&g->rng, s.rank - 1))) - 1;
    if (s.rank == 3 && (gap || fd_chance(&g->rng, 30))) columns = 5u;     /* NCHW's: the middle dim kept */
    else if (s.rank == 3 && fd_chance(&g->rng, 40)) columns = 2u;    /* the channels alone: LayerNorm2d */
    bool keep = columns == 5u || columns == 2u || fd_chance(&g->rng, 60);   /* (a middle dim broadcasts back kept) */
    const fd_val *v = &g->f->v[x];
    double u = fd_u(v->dt), mx = v->mag, ex = v->err;
    int mean = fd_reduce_axes(g, "reduce_mean", x, columns, keep);
    if (mean >= 0 && fd_chance(&g->rng, 25)) (void)fd_reduce_axes(g, "reduce_max", x, columns, keep);
    if (mean < 0) return -1;
    double em = g->f->v[mean].err;
    int dv = fd_chance(&g->rng, 30) ? fd_bin_named(g, "sub", mean, x, 2 * mx, ex + em + 2 * mx * u)
                                    : fd_bin_named(g, "sub", x, mean, 2 * mx, ex + em + 2 * mx * u);
    if (dv < 0) return -1;
    double ed = g->f->v[dv].err;
    int sq = fd_bin_named(g, "mul", dv, dv, 4 * mx * mx, 4 * mx * ed + 4 * mx * mx * u);
    int var = fd_reduce_axes(g, fd_chance(&g->rng, 20) ? "reduce_sum" : "reduce_mean", sq, columns, keep);
    if (var < 0 || fd_chance(&g->rng, 15)) return var;
    if (fd_chance(&g->rng, 20)) {              /* the running mean: 0.9 of a vector's, 0.1 of the batch's */
        int run = fd_param_like(g, g->f->v[mean].dt, &g->f->v[mean]);
        int a = run < 0 ? -1 : fd_splat(g, &g->f->v[mean], 0, 0.1);
        const fd_val *mv = &g->f->v[mean];
        int b = a < 0 ? -1 : fd_bin_named(g, "mul", mean, a, 0.1 * mv->mag, 0.1 * mv->err + mv->mag * u);
        if (b >= 0) (void)fd_bin_named(g, "add", run, b, 1 + mv->mag, mv->err + (1 + mv->mag) * u);
    }
    int r = fd_inv_std(g, var);
    if (r < 0) return -1;
    const fd_val *rv = &g->f->v[r];
    double my = 2 * mx * rv->mag;
    int y = fd_bin_named(g, "mul", dv, r, my, ed * rv->mag + rv->err * 2 * mx + my * u);
    if (y < 0 || columns != 2u || fd_chance(&g->rng, 40)) return y;
    fd_val w;                                    /* LayerNorm2d's scale, a value per channel: [C, 1] */
    memset(&w, 0, sizeof w);
    fd_move_dims(&w, 0, &g->f->v[y], 1, 1);
    w.rank = 2;
    w.dims[1] = 1;
    int wi = fd_param_like(g, g->f->v[y].dt, &w);
    const fd_val *yv = &g->f->v[y];
    return wi < 0 ? -1 : fd_bin_named(g, "mul", y, wi, yv->mag, yv->err + yv->mag * u);
}

/* The causal mask as a dense constant: 0 on and below a diagonal (query i
   sees keys 0..i + off), -inf above: the main diagonal, now and then the
   bottom-right one (off = Sk - Sq, when that is not negative: every query
   sees a key) or one key further. */
static int fd_causal_mask(fd_gen *g, gpuir_dtype dt, int64_t sq, int64_t sk) {
    int64_t off = 0;
    if (fd_chance(&g->rng, 40)) off = sk > sq ? sk - sq : fd_below(&g->rng, 2);
    fd_val r;
    memset(&r, 0, sizeof r);
    r.dt = dt;
    r.rank = 2;
    r.dims[0] = sq;
    r.dims[1] = sk;
    r.mag = 0;
    fd_str text = {0};
    char tr[128];
    fd_printf(&text, "constant {value = dense<[");
    for (int64_t i = 0; i < sq; i++)
        for (int64_t j = 0; j < sk; j++) fd_printf(&text, "%s%s", i || j ? ", " : "", j <= i + off ? "0.0" : "-inf");
    fd_printf(&text, "]>} : () -> %s", fd_t(&r, tr));
    int m = fd_op(g, &r, -1, -1, "%s", text.p);
    free(text.p);
    return m;
}

/* The attention op written out (q, k, v parameters qi, ki, vi; causal now
   and then, a third of those aligned bottom-right by causal_bottom_right
   where every query then sees a key, at both sizes of a `?`): on wgmma by
   form (sm_90: its scores, and P V half the time; 64 or 128 query rows a
   block), else the target's own kernel; its error bound as the motif's
   unfused ops would have it. */
static int fd_attention_op(fd_gen *g, const fd_val *q, int qi, int ki, int vi, int64_t sk, int64_t dh, double u,
                           bool wgmma) {
    double scale = (fd_chance(&g->rng, 20) ? 8.0 : fd_chance(&g->rng, 50) ? 1.0 : 2.0) / (double)dh;
    bool causal = fd_chance(&g->rng, 40);
    const fd_val *kv = &g->f->v[ki];
    /* (sm_75's kernel has no tiles at head dim 128 in f16 and bf16, nor
       in f32 (its kernel's), those past 128 fit sm_90's shared memory
       alone here, and a causal mask of dynamic lengths has no unfused
       form: an error that says so) */
    if (((g->sm < 80 && dh >= 128) || (g->sm < 90 && dh > 128)) && (q->sym[q->rank - 2] || kv->sym[kv->rank - 2]))
        causal = false;
    bool bottom_right = causal && fd_chance(&g->rng, 33);   /* where every query sees a key, at both sizes */
    for (int run = 0; run < 2; run++)
        bottom_right &= fd_dim_at(g->f, kv, kv->rank - 2, run) >= fd_dim_at(g->f, q, q->rank - 2, run);
    static const char *const forms[4] = {"attention.fa2_wgmma.m64", "attention.fa2_wgmma.m128", "attention.wgmma.m64",
                                         "attention.wgmma.m128"};
    char form[64] = "";
    if (wgmma) snprintf(form, sizeof form, ", form = \"%s\"", forms[fd_below(&g->rng, 4)]);
    double mt = (double)dh * scale, et = (4 * sqrt((double)dh) * fd_u(GPUIR_F32) + (double)dh * u) * scale + 2 * mt * u;
    fd_val o = *q;
    o.dims[o.rank - 1] = g->f->v[vi].dims[g->f->v[vi].rank - 1];     /* v's head dim (f32: not always q's) */
    o.mag = 1;
    o.err = (2 * et + 3 * u) + 4 * sqrt((double)sk) * fd_u(GPUIR_F32) + u;
    char tq[128], tk[128], tv[128], to[128], line[768];
    snprintf(line, sizeof line, "attention %%v%d, %%v%d, %%v%d {scale = %.9g%s%s} : (%s, %s, %s) -> %s",
             qi, ki, vi, scale, bottom_right ? ", causal = true, causal_bottom_right = true" : causal ? ", causal = true" : "",
             form, fd_t(&g->f->v[qi], tq),
             fd_t(&g->f->v[ki], tk), fd_t(&g->f->v[vi], tv), fd_t(&o, to));
    int r = fd_op(g, &o, qi, ki, "%s", line);
    if (r >= 0) g->f->v[r].deps[g->f->v[r].n_deps++] = vi;
    return r;
}

/* Value a cast to dtype dt (one rounding more where it narrows). */
static int fd_cast_to(fd_gen *g, int a, gpuir_dtype dt) {
    fd_val r = g->f->v[a];
    r.dt = dt;
    r.err += r.mag * fd_u(dt);
    char ta[128], tr[128];
    return fd_op(g, &r, a, -1, "cast %%v%d : (%s) -> %s", a, fd_t(&g->f->v[a], ta), fd_t(&r, tr));
}

/* The softmax of a over `axis` written out as decompose writes it (max,
   shift, exp, sum, divide; each rounded to a's dtype), `err` the bound
   the scores bring (relative, over a row). -1 on failure. */
static int fd_softmax_written(fd_gen *g, int a, int axis, double err) {
    const fd_val *x = &g->f->v[a];
    double u = fd_u(x->dt);
    unsigned axes = 1u << (x->rank + axis);
    int mx = fd_reduce_axes(g, "reduce_max", a, axes, true);
    if (mx < 0) return -1;
    int d = fd_bin_named(g, "sub", a, mx, 2 * x->mag, g->f->v[a].err + u);
    if (d < 0) return -1;
    fd_val e = g->f->v[d];
    e.mag = 1;
    e.err = 2 * err + 2 * u;
    char td[128], te[128];
    int ei = fd_op(g, &e, d, -1, "exp %%v%d : (%s) -> %s", d, fd_t(&g->f->v[d], td), fd_t(&e, te));
    int z = ei < 0 ? -1 : fd_reduce_axes(g, "reduce_sum", ei, axes, true);
    return z < 0 ? -1 : fd_bin_named(g, "div", ei, z, 1, 2 * err + 6 * u);
}

/* The perm that moves dim s of rank r to r - 2 (the others in order):
   [B, S, H, D] to [B, H, S, D] at s = 1 (an attention's head split). */
static void fd_seq_perm(int s, int r, int *perm) {
    int j = 0;
    for (int i = 0; i < r - 1; i++)
        if (i != s) perm[j++] = i;
    perm[j++] = s;
    perm[j] = r - 1;
}

/* A parameter stored with its sequence at dim s, transposed to the
   logical [.., S, D] type *l (a head split); -1 on failure. */
static int fd_head_split_param(fd_gen *g, const fd_val *l, int s) {
    int perm[GPUIR_MAX_RANK], r = l->rank;
    fd_seq_perm(s, r, perm);
    fd_val stored = *l;
    for (int i = 0; i < r; i++) fd_move_dims(&stored, perm[i], l, i, 1);
    int p = fd_param_like(g, l->dt, &stored);
    if (p < 0) return -1;
    fd_val t = *l;
    t.mag = g->f->v[p].mag, t.err = 0;
    char list[64] = "", tp[128], tt[128];
    size_t o = 0;
    for (int i = 0; i < r; i++) o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", i ? ", " : "", perm[i]);
    return fd_op(g, &t, p, -1, "transpose %%v%d {perm = [%s]} : (%s) -> %s", p, list, fd_t(&g->f->v[p], tp), fd_t(&t, tt));
}

/* A parameter of one head ([.., 1, S, D]) repeated to the heads of *l
   ([.., H, S, D]) as repeat_kv writes it: reshaped to [.., 1, 1, S, D],
   broadcast to [.., 1, H, S, D], reshaped to *l; -1 on failure. */
static int fd_repeat_kv_param(fd_gen *g, const fd_val *l) {
    int r = l->rank;
    fd_val one = *l, five = *l, wide;
    one.dims[r - 3] = 1;
    int p = fd_param_like(g, l->dt, &one);
    if (p < 0) return -1;
    fd_move_dims(&five, r - 2, l, r - 3, 3);   /* (the heads are static) */
    five.rank = r + 1;
    five.dims[r - 3] = 1;               /* [.., 1 (Hkv), H (the group), S, D] */
    five.mag = g->f->v[p].mag, five.err = 0;
    wide = five;
    five.dims[r - 2] = 1;
    char tp[128], tf[128], tw[128], tl[128];
    int a = fd_op(g, &five, p, -1, "reshape %%v%d : (%s) -> %s", p, fd_t(&g->f->v[p], tp), fd_t(&five, tf));
    int b = a < 0 ? -1 : fd_op(g, &wide, a, -1, "broadcast %%v%d : (%s) -> %s", a, tf, fd_t(&wide, tw));
    fd_val out = *l;
    out.mag = wide.mag, out.err = 0;
    return b < 0 ? -1 : fd_op(g, &out, b, -1, "reshape %%v%d : (%s) -> %s", b, tw, fd_t(&out, tl));
}

/* Value a (logical [.., S, D]) moved back to its sequence at dim s. */
static int fd_head_merge(fd_gen *g, int a, int s) {
    const fd_val *x = &g->f->v[a];
    int perm[GPUIR_MAX_RANK], back[GPUIR_MAX_RANK], r = x->rank;
    fd_seq_perm(s, r, perm);
    for (int i = 0; i < r; i++) back[perm[i]] = i;
    fd_val t = *x;
    for (int i = 0; i < r; i++) fd_move_dims(&t, i, x, back[i], 1);
    char list[64] = "", tx[128], tt[128];
    size_t o = 0;
    for (int i = 0; i < r; i++) o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", i ? ", " : "", back[i]);
    return fd_op(g, &t, a, -1, "transpose %%v%d {perm = [%s]} : (%s) -> %s", a, list, fd_t(x, tx), fd_t(&t, tt));
}

/* q·kᵀ, a scale, a mask, softmax over the keys, ·v: one attention kernel
   where it fits (f16/bf16 at head dims 32, 40, 64, 72, 80 and 128; f32 at
   any; v's other than q's now and then; k and v shared by heads now and
   then, a causal constant or a mask that broadcasts to the scores: [Sq,
   Sk], the scores' shape, padding masks [1, Sk] and [B, 1.., 1, Sk]), the
   unfused ops elsewhere (f16/bf16 at head dim 20, a softmax over the
   queries). */
static int fd_motif_attention(fd_gen *g) {
    static const int64_t seqs[] = {1, 2, 16, 17, 63, 64, 65, 127, 128, 129, 130};
    static const int64_t heads[] = {64, 64, 64, 128, 128, 32, 80, 72, 40, 20, 160};
    fd_val q;
    memset(&q, 0, sizeof q);
    q.dt = fd_chance(&g->rng, 10) ? GPUIR_F32 : fd_chance(&g->rng, 50) ? GPUIR_F16 : GPUIR_BF16;
    int nb = fd_below(&g->rng, 3);
    int64_t sq = seqs[fd_below(&g->rng, 11)], sk = seqs[fd_below(&g->rng, 11)], dh = heads[fd_below(&g->rng, 11)];
    int64_t batch = 1;
    for (int i = 0; i < nb; i++) batch *= (q.dims[i] = 1 + fd_below(&g->rng, 3));
    while (batch * sq * sk * dh > 2500000 && (sq > 1 || sk > 1)) {   /* the interpreter's time */
        if (sq >= sk) sq = (sq + 1) / 2;
        else sk = (sk + 1) / 2;
    }
    q.rank = nb + 2;
    fd_val k = q, v = q;
    q.dims[nb] = sq;
    q.dims[nb + 1] = dh;
    k.dims[nb] = sk;
    k.dims[nb + 1] = dh;
    v.dims[nb] = sk;
    v.dims[nb + 1] = dh;
    static const int64_t dv_f32[] = {5, 24, 40, 96}, dv_half[] = {24, 40, 96};   /* f16, bf16: multiples of 8 */
    if (fd_chance(&g->rng, 30))
        v.dims[nb + 1] = q.dt == GPUIR_F32 ? dv_f32[fd_below(&g->rng, 4)] : dv_half[fd_below(&g->rng, 3)];
    for (int i = 0; i < nb; i++)                 /* keys and values shared by heads (grouped, multi-query) */
        if (fd_chance(&g->rng, 25)) {
            k.dims[i] = 1;
            if (fd_chance(&g->rng, 80)) v.dims[i] = 1;
        }
    /* now and then q, k and v stored sequence-major ([B, S, H, D]: the
       sequence before the last batch dim) and split into heads by
       transposes, which the attention then reads through (seq_dim) */
    int seq = nb >= 1 && fd_chance(&g->rng, 20) ? nb - 1 : -1;
    /* or k and v of one head repeated over q's heads (Llama's repeat_kv:
       reshape, broadcast, reshape), which the attention reads unrepeated */
    bool repeat = seq < 0 && nb >= 1 && q.dims[nb - 1] >= 2 && k.dims[nb - 1] == q.dims[nb - 1] &&
                  v.dims[nb - 1] == q.dims[nb - 1] && q.rank + 1 <= GPUIR_MAX_RANK && fd_chance(&g->rng, 15);
    /* dynamic lengths (a KV cache of any length) and batches now and then;
       the head dim picks the kernel, static. Under repeat_kv only the
       length: its reshapes hold one `?`. */
    if (g->dyn && fd_chance(&g->rng, g->dyn)) q.sym[nb] = (uint8_t)fd_size_new(g, sq, -1);
    if (g->dyn && fd_chance(&g->rng, g->dyn)) k.sym[nb] = v.sym[nb] = (uint8_t)fd_size_new(g, sk, -1);
    for (int i = 0; i < nb && g->dyn && !repeat; i++) {
        if (!fd_chance(&g->rng, g->dyn)) continue;
        uint8_t j = (uint8_t)fd_size_new(g, q.dims[i], -1);
        q.sym[i] = j;                            /* k's and v's: the same size, or a static 1 */
        if (k.dims[i] == q.dims[i] && !(k.dims[i] == 1 && fd_chance(&g->rng, 50))) k.sym[i] = j;
        if (v.dims[i] == q.dims[i] && !(v.dims[i] == 1 && fd_chance(&g->rng, 50))) v.sym[i] = j;
    }
    int qi = seq >= 0 ? fd_head_split_param(g, &q, seq) : fd_param_like(g, q.dt, &q);
    int ki = seq >= 0 ? fd_head_split_param(g, &k, seq) : repeat ? fd_repeat_kv_param(g, &k) : fd_param_like(g, k.dt, &k);
    int vi = seq >= 0 ? fd_head_split_param(g, &v, seq) : repeat ? fd_repeat_kv_param(g, &v) : fd_param_like(g, v.dt, &v);
    if (qi < 0 || ki < 0 || vi < 0) return -1;
    double u = fd_u(q.dt);
    if ((q.dt == GPUIR_F32 || dh % 8 == 0) && fd_chance(&g->rng, 25)) {   /* the op itself */
        bool wgmma = q.dt != GPUIR_F32 && dh % 16 == 0 && dh <= 128 && v.dims[nb + 1] == dh && g->sm >= 90 &&
                     !fd_off[FD_WGMMA] && fd_chance(&g->rng, 70);
        int o = fd_attention_op(g, &q, qi, ki, vi, sk, dh, u, wgmma);
        return o >= 0 && seq >= 0 && fd_chance(&g->rng, 50) ? fd_head_merge(g, o, seq) : o;
    }
    bool tb = fd_chance(&g->rng, 50);
    if (!tb) {                                   /* kᵀ as a transpose op */
        fd_val kt = g->f->v[ki];
        fd_move_dims(&kt, nb + 1, &g->f->v[ki], nb, 1);
        kt.dims[nb] = dh;
        kt.sym[nb] = 0;
        char perm[64] = "", tk[128], tt[128];
        size_t o = 0;
        for (int i = 0; i < nb + 2; i++)
            o += (size_t)snprintf(perm + o, sizeof perm - o, "%s%d", i ? ", " : "", i < nb ? i : i == nb ? nb + 1 : nb);
        ki = fd_op(g, &kt, ki, -1, "transpose %%v%d {perm = [%s]} : (%s) -> %s", ki, perm, fd_t(&g->f->v[ki], tk),
                   fd_t(&kt, tt));
        if (ki < 0) return -1;
    }
    fd_val s = q;
    fd_move_dims(&s, nb + 1, &k, nb, 1);
    s.mag = (double)dh;
    s.err = 4 * sqrt((double)dh) * fd_u(GPUIR_F32) + s.mag * u;
    char tq[128], tk[128], ts[128], tv[128], tm[128];
    int si = fd_op(g, &s, qi, ki, "matmul %%v%d, %%v%d%s : (%s, %s) -> %s", qi, ki, tb ? " {transpose_b = true}" : "",
                   fd_t(&g->f->v[qi], tq), fd_t(&g->f->v[ki], tk), fd_t(&s, ts));
    if (si < 0) return -1;
    /* |scores| <= 1 or 2, or 8 now and then: a peaked softmax, where a
       key read wrong changes the result */
    double scale = (fd_chance(&g->rng, 20) ? 8.0 : fd_chance(&g->rng, 50) ? 1.0 : 2.0) / (double)dh;
    int form = fd_below(&g->rng, 3), c;
    if (form == 2) c = fd_splat(g, &s, 0, 1 / scale);
    else c = fd_splat(g, &s, 0, scale);
    if (c < 0) return -1;
    double mt = s.mag * scale, et = s.err * scale + 2 * mt * u;
    int ti = form == 0 ? fd_bin_named(g, "mul", si, c, mt, et) : form == 1 ? fd_bin_named(g, "mul", c, si, mt, et)
                                                               : fd_bin_named(g, "div", si, c, mt, et);
    if (ti < 0) return -1;
    int mk = fd_below(&g->rng, 8), mi = -1;
    fd_val md = fd_shape_of(&q, nb, &k, nb);
    if (mk <= 1 && sq * sk <= 4096 && !md.sym[0] && !md.sym[1]) mi = fd_causal_mask(g, q.dt, sq, sk);
    else if (mk == 2) mi = fd_param_like(g, q.dt, &md);
    else if (mk == 3) mi = fd_param_like(g, q.dt, &s);
    else if (mk == 4) {                          /* a padding mask over the keys, shared by the rows */
        md.dims[0] = 1, md.sym[0] = 0;
        mi = fd_param_like(g, q.dt, &md);
    } else if (mk == 5 && nb > 0) {              /* [B, 1.., 1, Sk]: per batch, shared by heads and rows */
        fd_val pm = s;
        for (int i = 1; i < nb + 1; i++) pm.dims[i] = 1, pm.sym[i] = 0;
        mi = fd_param_like(g, q.dt, &pm);
    }
    if (mi >= 0) {
        mt += 1;
        et += mt * u;
        ti = fd_chance(&g->rng, 50) ? fd_bin_named(g, "add", ti, mi, mt, et) : fd_bin_named(g, "add", mi, ti, mt, et);
        if (ti < 0) return -1;
    }
    /* now and then a causal constant added after a mask operand (two
       masks in turn: the op's causal and its mask), where both lengths
       are static (md is the padding mask's shape by now) */
    if (mi >= 0 && mk >= 2 && sq * sk <= 4096 && !q.sym[nb] && !k.sym[nb] && fd_chance(&g->rng, 30)) {
        int ci = fd_causal_mask(g, q.dt, sq, sk);
        ti = ci < 0 ? -1 : fd_bin_named(g, "add", ti, ci, mt, et);
        if (ti < 0) return -1;
    }
    bool wide = q.dt != GPUIR_F32 && fd_chance(&g->rng, 25);   /* softmax(s.float()).to(v.dtype) */
    if (wide) ti = fd_cast_to(g, ti, GPUIR_F32);
    if (ti < 0) return -1;
    int axis = fd_chance(&g->rng, 8) ? -2 : -1;
    int pi = fd_chance(&g->rng, 25) ? fd_softmax_written(g, ti, axis, 2 * et) : -1;
    if (pi < 0) {
        fd_val p = g->f->v[ti];
        p.mag = 1;
        p.err = 2 * et + 2 * u;                  /* the sum over a row of |dp| (relative errors) */
        pi = fd_op(g, &p, ti, -1, "softmax %%v%d {axis = %d} : (%s) -> %s", ti, axis, fd_t(&g->f->v[ti], ts), ts);
    }
    if (wide && pi >= 0) pi = fd_cast_to(g, pi, q.dt);
    if (pi < 0) return -1;
    const fd_val p = g->f->v[pi];
    fd_val o = q;
    o.dims[nb + 1] = v.dims[nb + 1];
    o.mag = axis == -1 ? 1 : (double)sq;
    o.err = o.mag * (p.err + u) + 4 * sqrt((double)sk) * fd_u(GPUIR_F32) + o.mag * u;
    if (axis != -1) o.err = (double)sk * (p.err + 2 * u) + o.mag * u;   /* columns sum to 1, not rows */
    int oi = fd_op(g, &o, pi, vi, "matmul %%v%d, %%v%d : (%s, %s) -> %s", pi, vi, fd_t(&g->f->v[pi], ts),
                   fd_t(&g->f->v[vi], tv), fd_t(&o, tm));
    return oi >= 0 && seq >= 0 && fd_chance(&g->rng, 50) ? fd_head_merge(g, oi, seq) : oi;
}

/* One motif: a normalization over rows or columns (GroupNorm's through
   its views), a sibling group, an attention. */
static int fd_motif(fd_gen *g, int a) {
    int k = fd_below(&g->rng, 10);
    if (k == 9) return fd_motif_group_norm(g);
    if (k == 8) return fd_motif_column_norm(g);
    if (k == 5) return fd_motif_siblings(g);
    if (k >= 6) return fd_motif_attention(g);
    int x = fd_rows_input(g, a), y;
    if (x < 0) return -1;
    int rank = g->f->v[x].rank;
    if (k <= 1 && rank >= 3 && fd_chance(&g->rng, 30)) {   /* over the trailing 2.. axes: InstanceNorm */
        g->row_axes = 2 + fd_below(&g->rng, rank - 2);
        y = k == 0 ? fd_motif_layernorm(g, x) : fd_motif_rmsnorm(g, x);
        g->row_axes = 0;
        return y;
    }
    switch (k) {
    case 0: return fd_motif_layernorm(g, x);
    case 1: return fd_motif_rmsnorm(g, x);
    case 2: case 3: return fd_motif_softmax(g, x);
    default: return fd_motif_cross_entropy(g, x);
    }
}

/* One random op reading a recent value. */
static int fd_step(fd_gen *g) {
    fd_func *f = g->f;
    int a = f->n - 1 - fd_below(&g->rng, f->n < 3 ? f->n : 3);
    if (fd_span(&f->v[a]) > FD_MAX_ELEMS) a = f->n - 1;
    switch (fd_below(&g->rng, 20)) {
    case 0: case 1: case 2: case 3: return fd_unary(g, a);
    case 4: case 5: case 6: case 7: case 8: return fd_binary(g, a);
    case 9: case 10: return fd_matmul(g, a);
    case 11: case 12: return fd_reduce(g, a);
    case 13: return fd_softmax(g, a);
    case 14: return fd_transpose(g, a);
    case 15: return fd_reshape(g, a);
    case 16: return fd_broadcast(g, a);
    default: return fd_cast(g, a);
    }
}

static void fd_gen_tensor_func(fd_gen *g) {
    fd_func *f = g->f;
    fd_val s;
    memset(&s, 0, sizeof s);
    s.dt = fd_dtype(g);
    s.rank = fd_below(&g->rng, 5);
    if (s.rank == 0 && fd_chance(&g->rng, 70)) s.rank = 2;
    for (int i = 0; i < s.rank; i++) s.dims[i] = fd_dim(g);
    fd_cap(&s, FD_MAX_ELEMS / 2);
    fd_make_dynamic(g, &s);
    fd_param_like(g, s.dt, &s);
    int ops = 2 + fd_below(&g->rng, 9);
    if (!fd_off[FD_MOTIF] && fd_chance(&g->rng, 35)) {   /* a fusion pattern, then a few random ops */
        fd_motif(g, f->n - 1);
        ops = fd_below(&g->rng, 4);
    }
    for (int i = 0; i < ops && f->n < FD_MAX_VALS - 12; i++) fd_step(g);
    /* The results: the values nothing reads (the last one first), so no op
       is dead; now and then a parameter too (a function returning its
       argument). */
    bool used[FD_MAX_VALS] = {false};
    for (int i = 0; i < f->n; i++)
        for (int k = 0; k < f->v[i].n_deps; k++) used[f->v[i].deps[k]] = true;
    for (int i = f->n - 1; i >= 0 && f->n_results < 3; i--)
        if (!used[i] && !f->v[i].param) f->results[f->n_results++] = i;
    if (f->n_results < 3 && f->v[0].param && fd_chance(&g->rng, 5)) f->results[f->n_results++] = 0;
}

/* ---- printing ------------------------------------------------------------ */

static void fd_mark(const fd_func *f, int i, bool *need) {
    if (need[i]) return;
    need[i] = true;
    for (int k = 0; k < f->v[i].n_deps; k++) fd_mark(f, f->v[i].deps[k], need);
}

/* The tolerance scale of a result: its error bound over the backend's
   atol, times 2 for safety; at least 1. */
static double fd_scale(const fd_val *v) {
    double rtol, atol;
    gpuir_backend_tolerance(GPUIR_BACKEND_EMU, v->dt, &rtol, &atol);
    return atol > 0 ? fmax(1, 2 * v->err / atol) : 1;
}

/* A buffer-level function's scale: its chain's error bound, of its dtype. */
static double fd_buffer_scale(const fd_func *f) {
    fd_val v;
    memset(&v, 0, sizeof v);
    v.dt = f->dt;
    v.err = f->err;
    return fd_scale(&v);
}

/* For a function with `?` dims, a line a run: the dims of each parameter
   it prints, in order ("13x7", "-" for a scalar), at that run's sizes. */
static void fd_print_sizes(fd_str *out, const fd_func *f, const int *res, int n) {
    bool need[FD_MAX_VALS] = {false}, dynamic = false;
    for (int i = 0; i < n; i++) fd_mark(f, res[i], need);
    for (int i = 0; i < f->n; i++) dynamic |= need[i] && f->v[i].param && fd_dynamic(&f->v[i]);
    for (int run = 0; run < 2 && dynamic; run++) {
        fd_printf(out, "// fuzz-diff-sizes @%s", f->name);
        for (int i = 0; i < f->n; i++) {
            if (!need[i] || !f->v[i].param) continue;
            fd_printf(out, " %s", f->v[i].rank ? "" : "-");
            for (int d = 0; d < f->v[i].rank; d++)
                fd_printf(out, "%s%lld", d ? "x" : "", (long long)fd_dim_at(f, &f->v[i], d, run));
        }
        fd_printf(out, "\n");
    }
}

/* Prints function f returning results res[0..n) and what they need. */
static void fd_print_func(fd_str *out, const fd_func *f, const int *res, int n) {
    if (f->buffer) { fd_printf(out, "%s", f->text); return; }
    bool need[FD_MAX_VALS] = {false};
    char t[128];
    for (int i = 0; i < n; i++) fd_mark(f, res[i], need);
    fd_printf(out, "func.func @%s(", f->name);
    int np = 0;
    for (int i = 0; i < f->n; i++)
        if (need[i] && f->v[i].param) fd_printf(out, "%s%%v%d: %s", np++ ? ", " : "", i, fd_t(&f->v[i], t));
    fd_printf(out, ") -> ");
    if (n != 1) fd_printf(out, "(");
    for (int i = 0; i < n; i++) fd_printf(out, "%s%s", i ? ", " : "", fd_t(&f->v[res[i]], t));
    fd_printf(out, "%s {\n", n != 1 ? ")" : "");
    for (int i = 0; i < f->n; i++)
        if (need[i] && f->v[i].line) fd_printf(out, "  %s\n", f->v[i].line);
    fd_printf(out, "  return ");
    for (int i = 0; i < n; i++) fd_printf(out, "%s%%v%d", i ? ", " : "", res[i]);
    fd_printf(out, " : ");
    for (int i = 0; i < n; i++) fd_printf(out, "%s%s", i ? ", " : "", fd_t(&f->v[res[i]], t));
    fd_printf(out, "\n}\n");
}

/* A selection of a module: which functions, and for one of them (sel_func)
   a chosen result set (NULL: all results). */
typedef struct fd_sel {
    bool funcs[FD_MAX_FUNCS];
    int only_func, only_res[3], n_only_res;    /* only_func -1: none */
} fd_sel;

static char *fd_print_module(const fd_module *m, const fd_sel *sel, const char *why) {
    fd_str out = {0};
    fd_printf(&out, "// fuzz-diff reproducer, seed %llu (tests/fuzz/fuzz_diff.c --seed=%llu --count=1)\n",
              (unsigned long long)m->seed, (unsigned long long)m->seed);
    if (why) {
        fd_printf(&out, "// symptom: ");
        for (const char *p = why; *p && p - why < 600; p++) {
            if (*p == '\n') fd_printf(&out, "\n// ");
            else fd_printf(&out, "%c", *p);
        }
        fd_printf(&out, "\n");
    }
    fd_printf(&out, "// fuzz-diff: sm=%d sm_count=%d sync=%d graphs=%d emu_seed=%llu\n", m->cfg.sm, m->cfg.sm_count,
              m->cfg.sync, m->cfg.graphs, (unsigned long long)m->cfg.emu_seed);
    for (int fi = 0; fi < m->n; fi++) {
        if (!sel->funcs[fi]) continue;
        const fd_func *f = &m->f[fi];
        const int *res = sel->only_func == fi ? sel->only_res : f->results;
        int n = sel->only_func == fi ? sel->n_only_res : f->n_results;
        if (f->buffer) {
            fd_printf(&out, "// fuzz-diff-tol @%s %.4g %.4g %.4g %.4g\n", f->name, fd_buffer_scale(f), fd_buffer_scale(f),
                      fd_buffer_scale(f), fd_buffer_scale(f));
            continue;
        }
        fd_printf(&out, "// fuzz-diff-tol @%s", f->name);
        for (int i = 0; i < n; i++) fd_printf(&out, " %.4g", fd_scale(&f->v[res[i]]));
        fd_printf(&out, "\n");
        fd_print_sizes(&out, f, res, n);
    }
    bool kernels = false;
    for (int fi = 0; fi < m->n; fi++) kernels |= sel->funcs[fi] && m->f[fi].kernels;
    if (kernels) {                                 /* one kernel module, first */
        fd_printf(&out, "gpu.module @kernels {\n");
        for (int fi = 0; fi < m->n; fi++)
            if (sel->funcs[fi] && m->f[fi].kernels) fd_printf(&out, "%s", m->f[fi].kernels);
        fd_printf(&out, "}\n");
    }
    for (int fi = 0; fi < m->n; fi++) {            /* globals first */
        if (!sel->funcs[fi] || m->f[fi].buffer) continue;
        const fd_func *f = &m->f[fi];
        bool need[FD_MAX_VALS] = {false};
        const int *res = sel->only_func == fi ? sel->only_res : f->results;
        int n = sel->only_func == fi ? sel->n_only_res : f->n_results;
        for (int i = 0; i < n; i++) fd_mark(f, res[i], need);
        for (int i = 0; i < f->n; i++)
            if (need[i] && f->v[i].global) fd_printf(&out, "%s\n", f->v[i].global);
    }
    for (int fi = 0; fi < m->n; fi++) {
        if (!sel->funcs[fi]) continue;
        const fd_func *f = &m->f[fi];
        fd_printf(&out, "\n");
        if (sel->only_func == fi) fd_print_func(&out, f, sel->only_res, sel->n_only_res);
        else fd_print_func(&out, f, f->results, f->n_results);
    }
    return out.p;
}

static void fd_free_module(fd_module *m) {
    for (int fi = 0; fi < m->n; fi++) {
        for (int i = 0; i < m->f[fi].n; i++) {
            free(m->f[fi].v[i].line);
            free(m->f[fi].v[i].global);
        }
        free(m->f[fi].text);
        free(m->f[fi].kernels);
    }
}

/* ---- buffer-level functions -------------------------------------------- */

/* A chain of elementwise ops in buffer form over one static shape S,
   rendered one of three ways: host buffer ops the pipeline outlines (form
   0); hand-written kernels launched on host buffers, which `place` gives
   device twins and copies (form 1); the same kernels with the copies,
   device buffers and frees written out (form 2). The chain may be split
   over two kernels that pass a buffer; the result is returned or written
   into an out-parameter. */

#define FD_UNARY (-100)

typedef struct fd_bop {
    const char *name;
    int a, b;            /* operands: -1 - j is parameter j, i >= 0 op i; b FD_UNARY: none */
} fd_bop;

typedef struct fd_bchain {
    gpuir_dtype dt;
    int rank;
    int64_t dims[3];
    int n_params;
    int prank[3];
    int64_t pdims[3][3];
    fd_bop ops[8];
    int n_ops, split;    /* ops [0, split) in kernel 0, the rest in kernel 1 */
    int form;
    bool out_param;
    double err;
} fd_bchain;

static void fd_mt(gpuir_dtype dt, int rank, const int64_t *dims, int space, char *buf) {   /* 128 bytes */
    gpuir_type_str(gpuir_memref_type(dt, rank, dims, space), buf, 128);
}

static void fd_bchain_gen(fd_gen *g, fd_bchain *c) {
    memset(c, 0, sizeof *c);
    static const gpuir_dtype dts[] = {GPUIR_F32, GPUIR_F32, GPUIR_F16, GPUIR_BF16, GPUIR_I32, GPUIR_I64};
    do c->dt = dts[fd_below(&g->rng, 6)];
    while (fd_off[FD_INT] && !gpuir_dtype_is_float(c->dt));
    c->rank = 1 + fd_below(&g->rng, 3);
    fd_val s;
    memset(&s, 0, sizeof s);
    s.rank = c->rank;
    for (int i = 0; i < c->rank; i++) s.dims[i] = fd_dim(g);
    fd_cap(&s, 4096);
    memcpy(c->dims, s.dims, sizeof c->dims);
    c->n_params = 1 + fd_below(&g->rng, 3);
    for (int j = 0; j < c->n_params; j++) {     /* parameter 0 has shape S; others broadcast to it */
        c->prank[j] = j == 0 || fd_chance(&g->rng, 50) ? c->rank : fd_below(&g->rng, c->rank + 1);
        for (int i = 0; i < c->prank[j]; i++) {
            c->pdims[j][i] = c->dims[c->rank - c->prank[j] + i];
            if (j > 0 && fd_chance(&g->rng, 25)) c->pdims[j][i] = 1;
        }
    }
    static const char *un[] = {"neg", "abs", "relu", "tanh", "sigmoid", "silu", "gelu", "exp"};
    static const char *bin[] = {"add", "sub", "mul", "max", "min"};
    bool flt = gpuir_dtype_is_float(c->dt);
    double mag = 1;
    c->n_ops = 1 + fd_below(&g->rng, 6);
    for (int i = 0; i < c->n_ops; i++) {
        fd_bop *o = &c->ops[i];
        o->a = i == 0 ? -1 : i - 1;
        if (flt && mag > 4) { o->name = "tanh"; o->b = FD_UNARY; mag = 1; }
        else if (fd_chance(&g->rng, 45)) {
            o->name = un[fd_below(&g->rng, flt ? (mag <= 2 ? 8 : 7) : 3)];
            o->b = FD_UNARY;
            if (!strcmp(o->name, "exp")) mag = exp(mag);
            else if (!strcmp(o->name, "tanh") || !strcmp(o->name, "sigmoid")) mag = 1;
        } else {
            o->name = bin[fd_below(&g->rng, 5)];
            o->b = -1 - fd_below(&g->rng, c->n_params);
            if (fd_chance(&g->rng, 30) && i > 1) o->b = fd_below(&g->rng, i - 1);   /* an earlier result */
            mag = !strcmp(o->name, "mul") ? mag * mag : mag + mag;
        }
        c->err += 4 * mag * fd_u(c->dt);
    }
    c->split = c->n_ops >= 2 && fd_chance(&g->rng, 40) ? 1 + fd_below(&g->rng, c->n_ops - 1) : c->n_ops;
    c->form = fd_below(&g->rng, 3);
    if (c->form == 0) c->split = c->n_ops;      /* host ops: one segment */
    c->out_param = fd_chance(&g->rng, 40);
    /* A kernel's temporaries are shared memory (one of S a op): within what
       the target's GPU allows a block (64 KiB on sm_75), the dims give way. */
    int64_t limit = g->sm >= 90 ? 232448 : g->sm == 80 ? 166912 : g->sm >= 80 ? 101376 : 65536;
    fd_val v;
    memset(&v, 0, sizeof v);
    v.rank = c->rank;
    memcpy(v.dims, c->dims, sizeof c->dims);
    int64_t per = (int64_t)gpuir_dtype_size(c->dt) * c->n_ops;
    while (fd_span(&v) * per + 16 * c->n_ops > limit) {
        int big = 0;
        for (int i = 1; i < v.rank; i++)
            if (v.dims[i] > v.dims[big]) big = i;
        v.dims[big] = (v.dims[big] + 1) / 2;
    }
    for (int j = 0; j < c->n_params; j++)      /* the parameters keep their 1s */
        for (int i = 0; i < c->prank[j]; i++) {
            int at = c->rank - c->prank[j] + i;
            if (c->pdims[j][i] != 1 || c->dims[at] == 1) c->pdims[j][i] = v.dims[at];
        }
    memcpy(c->dims, v.dims, sizeof c->dims);
}

/* Ops [first, last) as buffer ops: temporaries in `space`, operands named
   by `pnames` (parameters, then %mid and %res as `mid`/`res`). */
static void fd_bops(fd_str *o, const fd_bchain *c, int first, int last, int space, int pspace,
                    const char *const *pnames, const char *mid, const char *res, const char *indent) {
    char tS[128], ta[128], tb[128], na[64], nb[64], nd[64];
    for (int i = first; i < last; i++) {
        const fd_bop *op = &c->ops[i];
        bool final = i == last - 1;
        if (!final) {
            fd_mt(c->dt, c->rank, c->dims, space, tS);
            fd_printf(o, "%s%%t%d = memref.alloc : () -> %s\n", indent, i, tS);
        }
        int xs[2] = {op->a, op->b};
        char *names[2] = {na, nb}, *types[2] = {ta, tb};
        for (int k = 0; k < (op->b == FD_UNARY ? 1 : 2); k++) {
            int x = xs[k];
            if (x < 0) {
                snprintf(names[k], 64, "%s", pnames[-1 - x]);
                fd_mt(c->dt, c->prank[-1 - x], c->pdims[-1 - x], pspace, types[k]);
            } else {
                bool is_mid = x == c->split - 1, is_res = x == c->n_ops - 1;
                bool here = x >= first && !(x == last - 1);
                if (here) snprintf(names[k], 64, "%%t%d", x);
                else snprintf(names[k], 64, "%s", is_res ? res : is_mid ? mid : "%BAD");
                fd_mt(c->dt, c->rank, c->dims, here ? space : pspace, types[k]);
            }
        }
        if (final) snprintf(nd, sizeof nd, "%s", last == c->split && c->split < c->n_ops ? mid : res);
        else snprintf(nd, sizeof nd, "%%t%d", i);
        fd_mt(c->dt, c->rank, c->dims, final ? pspace : space, tS);
        if (op->b == FD_UNARY) fd_printf(o, "%s%s %s, %s : (%s, %s) -> ()\n", indent, op->name, na, nd, ta, tS);
        else fd_printf(o, "%s%s %s, %s, %s : (%s, %s, %s) -> ()\n", indent, op->name, na, nb, nd, ta, tb, tS);
    }
}

/* Whether segment [first, last) reads parameter j, or an op result of an earlier segment. */
static bool fd_seg_reads(const fd_bchain *c, int first, int last, int x) {
    for (int i = first; i < last; i++)
        if (c->ops[i].a == x || c->ops[i].b == x) return true;
    return false;
}

static void fd_gen_buffer_func(fd_gen *g) {
    fd_func *f = g->f;
    fd_bchain c;
    fd_bchain_gen(g, &c);
    f->buffer = true;
    /* an op of segment 1 may read only the last result of segment 0 */
    for (int i = c.split; i < c.n_ops; i++) {
        if (c.ops[i].a >= 0 && c.ops[i].a < c.split) c.ops[i].a = c.split - 1;
        if (c.ops[i].b >= 0 && c.ops[i].b < c.split) c.ops[i].b = c.split - 1;
    }
    fd_str k = {0}, h = {0};
    const char *fn = f->name;
    const char *pn[3] = {"%p0", "%p1", "%p2"};
    char t[128], tS[128], tS1[128];
    fd_mt(c.dt, c.rank, c.dims, 0, tS);
    fd_mt(c.dt, c.rank, c.dims, 1, tS1);
    fd_printf(&h, "func.func @%s(", fn);
    for (int j = 0; j < c.n_params; j++) {
        fd_mt(c.dt, c.prank[j], c.pdims[j], 0, t);
        fd_printf(&h, "%s%s: %s", j ? ", " : "", pn[j], t);
    }
    if (c.out_param) fd_printf(&h, "%s%%res: %s) {\n", c.n_params ? ", " : "", tS);
    else fd_printf(&h, ") -> %s {\n", tS);
    if (!c.out_param) fd_printf(&h, "  %%res = memref.alloc : () -> %s\n", tS);
    if (c.split < c.n_ops) fd_printf(&h, "  %%mid = memref.alloc : () -> %s\n", tS);
    if (c.form == 0) fd_bops(&h, &c, 0, c.n_ops, 0, 0, pn, "%mid", "%res", "  ");
    else {
        int segs = c.split < c.n_ops ? 2 : 1;
        const char *dn[3] = {"%d0", "%d1", "%d2"};
        if (c.form == 2) {           /* device twins and copies in */
            for (int j = 0; j < c.n_params; j++) {
                fd_mt(c.dt, c.prank[j], c.pdims[j], 1, t);
                fd_mt(c.dt, c.prank[j], c.pdims[j], 0, tS);
                fd_printf(&h, "  %s = gpu.alloc : () -> %s\n  gpu.memcpy %s, %s : (%s, %s) -> ()\n", dn[j], t,
                          dn[j], pn[j], t, tS);
            }
            fd_printf(&h, "  %%dres = gpu.alloc : () -> %s\n", tS1);
            if (segs == 2) fd_printf(&h, "  %%dmid = gpu.alloc : () -> %s\n", tS1);
        }
        for (int sgi = 0; sgi < segs; sgi++) {
            int first = sgi ? c.split : 0, last = sgi ? c.n_ops : c.split;
            fd_str args = {0}, kargs = {0}, targs = {0};
            for (int j = 0; j < c.n_params; j++) {
                if (!fd_seg_reads(&c, first, last, -1 - j)) continue;
                fd_mt(c.dt, c.prank[j], c.pdims[j], c.form == 2 ? 1 : 0, t);
                fd_printf(&args, "%s%s", args.len ? ", " : "", c.form == 2 ? dn[j] : pn[j]);
                fd_printf(&targs, "%s%s", targs.len ? ", " : "", t);
                fd_mt(c.dt, c.prank[j], c.pdims[j], 1, t);
                fd_printf(&kargs, "%s%s: %s", kargs.len ? ", " : "", pn[j], t);
            }
            const char *bufs[2] = {"mid", "res"};
            for (int b = 0; b < 2; b++) {
                bool is_out = b == (sgi == 0 && segs == 2 ? 0 : 1);
                bool is_in = sgi == 1 && b == 0;
                if (!is_out && !is_in) continue;
                fd_printf(&args, "%s%%%s%s", args.len ? ", " : "", c.form == 2 ? "d" : "", bufs[b]);
                fd_printf(&targs, "%s%s", targs.len ? ", " : "", c.form == 2 ? tS1 : tS);
                fd_printf(&kargs, "%s%%%s: %s", kargs.len ? ", " : "", bufs[b], tS1);
            }
            fd_printf(&k, "  gpu.func @%s_h%d(%s) kernel {\n", fn, sgi, kargs.p);
            fd_bops(&k, &c, first, last, fd_chance(&g->rng, 80) ? 5 : 3, 1, pn, "%mid", "%res", "    ");
            fd_printf(&k, "    return\n  }\n");
            char geo[96] = "";
            if (c.form == 2 || fd_chance(&g->rng, 30))
                snprintf(geo, sizeof geo, ", grid = [%d, 1, 1], block = [%d, 1, 1]", 1 + fd_below(&g->rng, 4),
                         32 << fd_below(&g->rng, 4));
            fd_printf(&h, "  gpu.launch_func %s {kernel = @kernels::@%s_h%d%s} : (%s) -> ()\n", args.p, fn, sgi, geo,
                      targs.p);
            free(args.p);
            free(kargs.p);
            free(targs.p);
        }
        if (c.form == 2) {           /* the result back, frees */
            fd_mt(c.dt, c.rank, c.dims, 0, tS);
            fd_printf(&h, "  gpu.memcpy %%res, %%dres : (%s, %s) -> ()\n", tS, tS1);
            for (int j = 0; j < c.n_params; j++) {
                fd_mt(c.dt, c.prank[j], c.pdims[j], 1, t);
                fd_printf(&h, "  gpu.dealloc %s : (%s) -> ()\n", dn[j], t);
            }
            fd_printf(&h, "  gpu.dealloc %%dres : (%s) -> ()\n", tS1);
            if (segs == 2) fd_printf(&h, "  gpu.dealloc %%dmid : (%s) -> ()\n", tS1);
        }
    }
    fd_mt(c.dt, c.rank, c.dims, 0, tS);
    if (c.split < c.n_ops) fd_printf(&h, "  memref.dealloc %%mid : (%s) -> ()\n", tS);
    for (int i = 0; c.form == 0 && i < c.n_ops; i++)      /* host temporaries */
        if (i != c.split - 1 && i != c.n_ops - 1) fd_printf(&h, "  memref.dealloc %%t%d : (%s) -> ()\n", i, tS);
    if (c.out_param) fd_printf(&h, "  return\n}\n");
    else fd_printf(&h, "  return %%res : %s\n}\n", tS);
    f->text = h.p;
    f->kernels = k.p;
    f->err = c.err;
    f->dt = c.dt;
}

static void fd_gen_module(fd_module *m, uint64_t seed, int n_funcs) {
    memset(m, 0, sizeof *m);
    m->seed = seed;
    fd_gen g;
    memset(&g, 0, sizeof g);
    g.rng.s = seed * 0x2545f4914f6cdd1dull + 17;
    static const int sms[] = {90, 90, 80, 86, 75};
    m->cfg.sm = g.sm = sms[fd_below(&g.rng, 5)];
    m->cfg.sm_count = fd_chance(&g.rng, 50) ? 132 : 1 + fd_below(&g.rng, 16);
    m->cfg.sync = fd_chance(&g.rng, 30);
    m->cfg.graphs = !fd_off[FD_GRAPHS] && fd_chance(&g.rng, 25);
    m->cfg.emu_seed = fd_next(&g.rng) % 1000;
    m->n = n_funcs;
    for (int fi = 0; fi < n_funcs; fi++) {
        g.f = &m->f[fi];
        g.fi = fi;
        g.n_globals = 0;
        snprintf(g.f->name, sizeof g.f->name, "f%d", fi);
        /* a quarter of the tensor functions (--dynamic) have `?` dims: 30-70 %
           of their parameters' dims, a new size each */
        g.dyn = !fd_off[FD_DYNAMIC] && fd_chance(&g.rng, fd_dynamic_percent) ? 30 + fd_below(&g.rng, 41) : 0;
        if (!fd_off[FD_BUFFER] && fd_chance(&g.rng, 20)) fd_gen_buffer_func(&g);
        else fd_gen_tensor_func(&g);
    }
}

/* ---- checking one module ------------------------------------------------ */

typedef struct fd_meta {
    fd_config cfg;
    struct { char name[GPUIR_MAX_NAME]; double scale[4]; } tol[64];
    int n_tol;
    struct { char name[GPUIR_MAX_NAME]; char dims[1024]; } sizes[2 * FD_MAX_FUNCS];   /* a run each */
    int n_sizes;
} fd_meta;

static void fd_parse_meta(const char *text, fd_meta *meta) {
    memset(meta, 0, sizeof *meta);
    const char *p = strstr(text, "// fuzz-diff: ");
    if (p) {
        unsigned long long es = 0;
        int sync = 0, graphs = 0;
        sscanf(p, "// fuzz-diff: sm=%d sm_count=%d sync=%d graphs=%d emu_seed=%llu", &meta->cfg.sm,
               &meta->cfg.sm_count, &sync, &graphs, &es);
        meta->cfg.sync = sync;
        meta->cfg.graphs = graphs;
        meta->cfg.emu_seed = es;
    }
    for (p = strstr(text, "// fuzz-diff-tol @"); p && meta->n_tol < 64; p = strstr(p + 1, "// fuzz-diff-tol @")) {
        char name[GPUIR_MAX_NAME];
        double *sc = meta->tol[meta->n_tol].scale;
        sc[0] = sc[1] = sc[2] = sc[3] = 1;
        if (sscanf(p, "// fuzz-diff-tol @%127s %lf %lf %lf %lf", name, &sc[0], &sc[1], &sc[2], &sc[3]) >= 2)
            snprintf(meta->tol[meta->n_tol++].name, GPUIR_MAX_NAME, "%s", name);
    }
    const char *key = "// fuzz-diff-sizes @";
    for (p = strstr(text, key); p && meta->n_sizes < 2 * FD_MAX_FUNCS; p = strstr(p + 1, key)) {
        const char *name = p + strlen(key), *end = name;
        while (*end && *end != ' ' && *end != '\n') end++;
        const char *eol = strchr(end, '\n');
        if (!eol) eol = end + strlen(end);
        meta->sizes[meta->n_sizes].name[0] = '\0';
        snprintf(meta->sizes[meta->n_sizes].name, GPUIR_MAX_NAME, "%.*s", (int)(end - name), name);
        snprintf(meta->sizes[meta->n_sizes++].dims, sizeof meta->sizes[0].dims, "%.*s", (int)(eol - end), end);
    }
}

/* Parameter i's dims from a `// fuzz-diff-sizes` line (its i-th word:
   "13x7", "-" for a scalar) into t's `?`s; false (and why) when the word
   is missing or does not fit t. */
static bool fd_sized_type(const char *line, size_t i, gpuir_type *t, fd_str *why) {
    const char *w = line;
    for (size_t k = 0; k <= i; k++) {
        while (*w == ' ') w++;
        if (k < i) while (*w && *w != ' ') w++;
    }
    int rank = 0;
    int64_t dims[GPUIR_MAX_RANK];
    if (*w == '-') w++;
    else
        while (rank < GPUIR_MAX_RANK && *w >= '0' && *w <= '9') {
            char *e;
            dims[rank++] = strtoll(w, &e, 10);
            w = *e == 'x' ? e + 1 : e;
        }
    bool fits = (*w == ' ' || *w == '\0') && rank == t->rank;
    for (int d = 0; fits && d < rank; d++) fits = t->dims[d] == GPUIR_DYN || t->dims[d] == dims[d];
    if (!fits) { fd_printf(why, "fuzz-diff-sizes: parameter %zu: \"%.40s\" does not fit its type", i, line); return false; }
    for (int d = 0; d < rank; d++) t->dims[d] = dims[d];
    return true;
}

static double fd_meta_scale(const fd_meta *meta, const char *func, size_t result) {
    for (int i = 0; i < meta->n_tol; i++)
        if (!strcmp(meta->tol[i].name, func)) return result < 4 ? meta->tol[i].scale[result] : 1;
    return 1;
}

static gpuir_result fd_random_array(gpuir_ctx *ctx, gpuir_type t, const char *name, gpuir_array *out) {
    gpuir_result r = gpuir_array_alloc(ctx, out, t.dtype, t.rank, t.dims);
    if (r == GPUIR_OK) gpuir_array_fill_random(out, fd_hash(name));
    return r;
}

typedef struct fd_case {   /* one host function's inputs and expected outputs */
    char name[GPUIR_MAX_NAME];
    const char *sizes;     /* the dims of its `?`s (a `// fuzz-diff-sizes` line), or NULL */
    int run;               /* which of its lines (0 without one) */
    size_t n_in, n_out;
    gpuir_array in[GPUIR_MAX_OPERANDS], want[GPUIR_MAX_OPERANDS];
    bool writes_params;    /* buffer level: parameters are outputs too */
} fd_case;

static void fd_case_release(fd_case *c) {
    for (size_t i = 0; i < GPUIR_MAX_OPERANDS; i++) {
        gpuir_array_release(&c->in[i]);
        gpuir_array_release(&c->want[i]);
    }
}

/* The interpreter's results for host function f (which it runs on the
   unlowered module); the inputs are kept for the emulator run. Buffer-level
   functions may write their parameters: the interpreter's copies of the
   inputs are compared as results too (fresh copies go to the emulator). */
static gpuir_result fd_run_ref(gpuir_ctx *ctx, gpuir_module *m, gpuir_func f, fd_case *c, fd_str *why) {
    snprintf(c->name, sizeof c->name, "%s", gpuir_func_name(m, f));
    c->n_in = gpuir_func_param_count(m, f);
    c->n_out = gpuir_func_result_count(m, f);
    for (size_t i = 0; i < c->n_in; i++) {
        gpuir_type t = gpuir_func_param_type(m, f, i);
        if (c->sizes && !fd_sized_type(c->sizes, i, &t, why)) return GPUIR_ERR_SHAPE;
        char seedname[GPUIR_MAX_NAME + 64];
        snprintf(seedname, sizeof seedname, "%s/%zu", c->name, i);
        if (t.kind == GPUIR_TYPE_MEMREF) c->writes_params = true;
        gpuir_result r = fd_random_array(ctx, t, seedname, &c->in[i]);
        if (r) return r;
    }
    gpuir_array copies[GPUIR_MAX_OPERANDS];
    memset(copies, 0, sizeof copies);
    for (size_t i = 0; i < c->n_in; i++) {
        gpuir_array_alloc(ctx, &copies[i], c->in[i].dtype, c->in[i].rank, c->in[i].dims);
        if (copies[i].data) memcpy(copies[i].data, c->in[i].data, gpuir_array_count(&c->in[i]) * gpuir_dtype_size(c->in[i].dtype));
    }
    gpuir_result r = gpuir_ctx_result(ctx) ? gpuir_ctx_result(ctx) : gpuir_ref_run(m, c->name, c->n_in, copies, c->n_out, c->want);
    if (r) fd_printf(why, "ref @%s: %s", c->name, gpuir_ctx_error(ctx));
    for (size_t i = 0; i < c->n_in; i++) {
        if (c->writes_params && !r) c->want[c->n_out + i] = copies[i];   /* written parameters */
        else gpuir_array_release(&copies[i]);
    }
    return r;
}

static gpuir_result fd_compare(gpuir_ctx *ctx, const fd_case *c, const gpuir_array *got, size_t n,
                               const fd_meta *meta, const char *what, fd_str *why) {
    for (size_t k = 0; k < n; k++) {
        double rtol, atol, scale = fd_meta_scale(meta, c->name, k);
        gpuir_backend_tolerance(GPUIR_BACKEND_EMU, got[k].dtype, &rtol, &atol);
        gpuir_result r = gpuir_array_compare(ctx, &got[k], &c->want[k], rtol, atol * scale);
        if (r) {
            fd_printf(why, "mismatch: @%s %s %zu%s: %s", c->name, k < c->n_out ? "result" : "parameter",
                      k < c->n_out ? k : k - c->n_out, what, gpuir_ctx_error(ctx));
            return r;
        }
    }
    return GPUIR_OK;
}

/* Runs case c on program p (twice with graphs: record, then replay). */
static gpuir_result fd_run_emu(gpuir_ctx *ctx, gpuir_program *p, const fd_case *c, const fd_meta *meta,
                               fd_str *why) {
    for (int rep = 0; rep < (meta->cfg.graphs ? 2 : 1); rep++) {
        gpuir_array in[GPUIR_MAX_OPERANDS], got[2 * GPUIR_MAX_OPERANDS];
        memset(in, 0, sizeof in);
        memset(got, 0, sizeof got);
        gpuir_result r = GPUIR_OK;
        for (size_t i = 0; i < c->n_in && !r; i++) {
            r = gpuir_array_alloc(ctx, &in[i], c->in[i].dtype, c->in[i].rank, c->in[i].dims);
            if (!r) memcpy(in[i].data, c->in[i].data, gpuir_array_count(&c->in[i]) * gpuir_dtype_size(c->in[i].dtype));
        }
        char what[96];
        snprintf(what, sizeof what, "%s%s", rep ? " (graph replay)" : "",
                 c->sizes ? c->run ? " (the second sizes)" : " (the first sizes)" : "");
        if (!r) r = gpuir_program_run(p, c->name, c->n_in, in, c->n_out, got);
        if (r) fd_printf(why, "emu @%s%s: %s", c->name, what, gpuir_ctx_error(ctx));
        for (size_t i = 0; c->writes_params && !r && i < c->n_in; i++) got[c->n_out + i] = in[i], in[i].data = NULL;
        if (!r) r = fd_compare(ctx, c, got, c->n_out + (c->writes_params ? c->n_in : 0), meta, what, why);
        for (size_t i = 0; i < 2 * GPUIR_MAX_OPERANDS; i++) gpuir_array_release(&got[i]);
        for (size_t i = 0; i < GPUIR_MAX_OPERANDS; i++) gpuir_array_release(&in[i]);
        if (r) return r;
    }
    return GPUIR_OK;
}

static gpuir_result fd_bind_globals(gpuir_ctx *ctx, gpuir_module *m) {
    for (size_t i = 0; i < gpuir_module_global_count(m); i++) {
        gpuir_array w;
        gpuir_result r = fd_random_array(ctx, gpuir_module_global_type(m, i), gpuir_module_global_name(m, i), &w);
        if (!r) r = gpuir_module_bind_global(m, gpuir_module_global_name(m, i), &w);
        gpuir_array_release(&w);
        if (r) return r;
    }
    return GPUIR_OK;
}

/* Lowers with the verifier after every pass, checks the lowered module
   prints and parses back to the same text, and makes the program. */
static gpuir_program *fd_lower(gpuir_ctx *ctx, gpuir_module *m, const fd_meta *meta, fd_str *why) {
    gpuir_target t = {meta->cfg.sm, meta->cfg.sm_count};
    gpuir_module_set_target(m, t);
    gpuir_pass_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.disable_verify = false;
    gpuir_result r = gpuir_module_run_passes(m, meta->cfg.sync ? GPUIR_SYNC_PIPELINE : GPUIR_DEFAULT_PIPELINE, &pd);
    if (r) { fd_printf(why, "lower: %s", gpuir_ctx_error(ctx)); return NULL; }
    char *a = gpuir_module_print(m);
    gpuir_module *again = a ? gpuir_module_parse(ctx, a, strlen(a), "lowered") : NULL;
    char *b = again ? gpuir_module_print(again) : NULL;
    if (!a || !b || strcmp(a, b) != 0) {
        fd_printf(why, "lowered module: print -> parse -> print is not a fixed point: %s", gpuir_ctx_error(ctx));
        r = GPUIR_ERR_VERIFY;
    }
    gpuir_free(a);
    gpuir_free(b);
    gpuir_module_destroy(again);
    if (r) return NULL;
    gpuir_program_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.backend = GPUIR_BACKEND_EMU;
    desc.synchronous = meta->cfg.sync;
    desc.emu_seed = meta->cfg.emu_seed;
    desc.graphs = meta->cfg.graphs;
    gpuir_program *p = gpuir_program_make(m, &desc);
    if (!p) fd_printf(why, "program_make: %s", gpuir_ctx_error(ctx));
    return p;
}

/* Checks one module's text: every host function on ref and emu. Returns 0
   if all agree; the reason goes to `why`. `runs` counts compared runs. */
static int fd_check_text(const char *text, const char *filename, fd_str *why, long *runs) {
    fd_meta meta;
    fd_parse_meta(text, &meta);
    gpuir_ctx_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.cache_dir = "";                /* memory only: random modules are not worth a disk entry */
    gpuir_ctx *ctx = gpuir_ctx_make(&cd);
    if (!ctx) { fd_printf(why, "gpuir_ctx_make failed"); return 1; }
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), filename);
    static fd_case cases[FD_MAX_FUNCS * 4];
    size_t n_cases = 0;
    gpuir_result r = m ? GPUIR_OK : GPUIR_ERR_PARSE;
    if (!m) fd_printf(why, "parse: %s", gpuir_ctx_error(ctx));
    if (!r) r = fd_bind_globals(ctx, m);
    for (size_t i = 0; !r && i < gpuir_module_func_count(m); i++) {
        gpuir_func f = gpuir_module_func_at(m, i);
        if (gpuir_func_is_kernel(m, f)) continue;
        int runs_of_f = 0;            /* a case a sizes line (in order), or one */
        for (int s = -1; !r && s < meta.n_sizes && n_cases < sizeof cases / sizeof cases[0]; s++) {
            bool mine = s >= 0 && !strcmp(meta.sizes[s].name, gpuir_func_name(m, f));
            if (s >= 0 && !mine) continue;
            if (s < 0) {              /* without a sizes line: one case, its static types */
                bool sized = false;
                for (int k = 0; k < meta.n_sizes; k++) sized |= !strcmp(meta.sizes[k].name, gpuir_func_name(m, f));
                if (sized) continue;
            }
            memset(&cases[n_cases], 0, sizeof cases[n_cases]);
            cases[n_cases].sizes = s >= 0 ? meta.sizes[s].dims : NULL;
            cases[n_cases].run = s >= 0 ? runs_of_f++ : 0;
            r = fd_run_ref(ctx, m, f, &cases[n_cases++], why);
        }
    }
    gpuir_program *p = r ? NULL : fd_lower(ctx, m, &meta, why);
    if (!r && !p) r = GPUIR_ERR_COMPILE;
    for (size_t i = 0; !r && i < n_cases; i++) {
        r = fd_run_emu(ctx, p, &cases[i], &meta, why);
        if (!r) (*runs)++;
    }
    for (size_t i = 0; i < n_cases; i++) fd_case_release(&cases[i]);
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
    return r ? 1 : 0;
}

/* Runs fd_check_text in a child: a crash or a hang is a finding too.
   Returns 0 (agree), 1 (finding; `why` says what). */
static int fd_check_isolated(const char *text, fd_str *why, long *runs) {
    int pipefd[2];
    if (pipe(pipefd) != 0) return fd_check_text(text, "fuzz-diff", why, runs);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) { close(pipefd[0]); close(pipefd[1]); return fd_check_text(text, "fuzz-diff", why, runs); }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        close(pipefd[0]);
        struct rlimit cpu = {FD_CPU_LIMIT_S, FD_CPU_LIMIT_S + 5};
        setrlimit(RLIMIT_CPU, &cpu);     /* a hang: this much CPU time (SIGXCPU) */
        alarm(FD_TIMEOUT_S);             /* or, on a starved machine, this much wall time */
        fd_str w = {0};
        long n = 0;
        int bad = fd_check_text(text, "fuzz-diff", &w, &n);
        char head[32];
        snprintf(head, sizeof head, "%ld\n", n);
        if (write(pipefd[1], head, strlen(head)) < 0 || (w.p && write(pipefd[1], w.p, w.len) < 0)) bad = 1;
        _exit(bad);
    }
    close(pipefd[1]);
    fd_str got = {0};
    char buf[4096];
    ssize_t k;
    while ((k = read(pipefd[0], buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR))   /* SIGINT: go on */
        if (k > 0) fd_printf(&got, "%.*s", (int)k, buf);
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    const char *msg = got.p ? strchr(got.p, '\n') : NULL;
    if (got.p) *runs += atol(got.p);
    int bad;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        fd_printf(why, "%s (signal %d)%s%s", sig == SIGALRM ? "hang: no result in " FD_XSTR(FD_TIMEOUT_S) " s"
                                             : sig == SIGXCPU ? "hang: no result in " FD_XSTR(FD_CPU_LIMIT_S)
                                             " s of CPU" : "crash", sig, msg && msg[1] ? ": " : "", msg ? msg + 1 : "");
        bad = 1;
    } else {
        bad = WEXITSTATUS(status) != 0;
        if (bad) fd_printf(why, "%s", msg && msg[1] ? msg + 1 : "failed (no message)");
    }
    free(got.p);
    return bad;
}

/* ---- minimizing and saving a finding --------------------------------- */

static int fd_check_sel(const fd_module *m, const fd_sel *sel, fd_str *why) {
    char *text = fd_print_module(m, sel, NULL);
    long runs = 0;
    why->len = 0;
    if (why->p) why->p[0] = '\0';
    int bad = fd_check_isolated(text, why, &runs);
    free(text);
    return bad;
}

/* The failing function alone, then its smallest failing value: each
   value's dependency cone, in order, until one fails. */
static void fd_minimize(const fd_module *m, fd_sel *sel, fd_str *why) {
    fd_sel one;
    for (int fi = 0; fi < m->n; fi++) {
        memset(&one, 0, sizeof one);
        one.only_func = -1;
        one.funcs[fi] = true;
        if (fd_check_sel(m, &one, why)) { *sel = one; break; }
    }
    int fi = -1;
    for (int i = 0; i < m->n; i++)
        if (sel->funcs[i] && fi < 0) fi = i;
    int n_funcs = 0;
    for (int i = 0; i < m->n; i++) n_funcs += sel->funcs[i];
    if (n_funcs != 1 || m->f[fi].buffer) return;
    const fd_func *f = &m->f[fi];
    for (int v = 0; v < f->n; v++) {
        if (f->v[v].param) continue;
        one = *sel;
        one.only_func = fi;
        one.only_res[0] = v;
        one.n_only_res = 1;
        if (fd_check_sel(m, &one, why)) { *sel = one; return; }
    }
    fd_check_sel(m, sel, why);   /* only the whole result set fails: its message */
}

/* Findings of one kind are saved a few times, not a thousand: the kind is
   the message with its digits dropped, up to the first ':' after "@f". */
static int fd_seen(const char *why) {
    static char kinds[64][96];
    static int counts[64], n;
    char k[96];
    size_t o = 0;
    for (const char *p = why; *p && o + 1 < sizeof k; p++)
        if ((*p < '0' || *p > '9') && *p != '\n') k[o++] = *p;
    k[o] = '\0';
    if (o > 60) k[60] = '\0';
    for (int i = 0; i < n; i++)
        if (!strcmp(kinds[i], k)) return ++counts[i];
    if (n < 64) { snprintf(kinds[n], sizeof kinds[n], "%s", k); counts[n++] = 1; }
    return 1;
}

static void fd_save(const char *dir, const fd_module *m, const fd_sel *sel, const char *why, const char *suffix) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fuzz-diff-%llu%s.gir", dir, (unsigned long long)m->seed, suffix);
    char *text = fd_print_module(m, sel, why);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
        printf("fuzz-diff: wrote %s\n", path);
    } else fprintf(stderr, "fuzz-diff: cannot write %s\n", path);
    free(text);
}

/* ---- main --------------------------------------------------------------- */

static char *fd_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fd_str s = {0};
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) fd_printf(&s, "%.*s", (int)k, buf);
    fclose(f);
    return s.p ? s.p : fd_strdup("");
}

static int fd_replay(int argc, char **argv) {
    int failed = 0;
    for (int i = 0; i < argc; i++) {
        char *text = fd_read_file(argv[i]);
        fd_str why = {0};
        long runs = 0;
        int bad = text ? fd_check_isolated(text, &why, &runs) : 1;
        if (bad) printf("FAIL fuzz-diff: %s: %s\n", argv[i], text ? (why.p ? why.p : "?") : "cannot read");
        else printf("PASS fuzz-diff: %s (%ld functions agree)\n", argv[i], runs);
        failed += bad;
        free(text);
        free(why.p);
    }
    return failed ? 1 : 0;
}

static bool fd_parse_off(const char *list) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int k = 0;
        while (k < FD_FEATURES && strcmp(fd_feature_names[k], tok) != 0) k++;
        if (k == FD_FEATURES) { fprintf(stderr, "fuzz_diff: unknown feature '%s'\n", tok); return false; }
        fd_off[k] = true;
    }
    return true;
}

static volatile sig_atomic_t fd_stop;
static void fd_on_signal(int sig) { (void)sig; fd_stop = 1; }

int main(int argc, char **argv) {
    unsigned long long seed = 1;
    long count = -1;
    double seconds = -1;
    int funcs = 4;
    const char *out = "build";
    bool print = false, quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--replay")) return fd_replay(argc - i - 1, argv + i + 1);
        else if (!strncmp(a, "--seed=", 7)) seed = strtoull(a + 7, NULL, 10);
        else if (!strncmp(a, "--count=", 8)) count = atol(a + 8);
        else if (!strncmp(a, "--seconds=", 10)) seconds = atof(a + 10);
        else if (!strncmp(a, "--funcs=", 8)) funcs = atoi(a + 8);
        else if (!strncmp(a, "--out=", 6)) out = a + 6;
        else if (!strncmp(a, "--no=", 5)) { if (!fd_parse_off(a + 5)) return 2; }
        else if (!strncmp(a, "--dynamic=", 10)) fd_dynamic_percent = atoi(a + 10);
        else if (!strcmp(a, "--print")) print = true;
        else if (!strcmp(a, "--quiet")) quiet = true;
        else { fprintf(stderr, "usage: fuzz_diff [--seed=N] [--count=N] [--seconds=S] [--funcs=K] [--out=DIR] "
                               "[--no=F,...] [--dynamic=P] [--print] [--quiet] | --replay FILE...\n"); return 2; }
    }
    if (funcs < 1 || funcs > FD_MAX_FUNCS) funcs = 4;
    if (count < 0 && seconds < 0) count = 1;
    struct sigaction sa;              /* finish the module at hand, then report */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fd_on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    double t0 = fd_now();
    long modules = 0, runs = 0, findings = 0;
    for (unsigned long long s = seed; count < 0 || (long)(s - seed) < count; s++) {
        if (fd_stop || (seconds >= 0 && fd_now() - t0 >= seconds)) break;
        if (quiet && modules && modules % 100 == 0 && !print) {
            printf("fuzz-diff: seed %llu, %ld modules, %ld function runs, %ld findings, %.0f s\n", s, modules, runs,
                   findings, fd_now() - t0);
            fflush(stdout);
        }
        fd_module m;
        fd_gen_module(&m, s, funcs);
        fd_sel all;
        memset(&all, 0, sizeof all);
        all.only_func = -1;
        for (int i = 0; i < m.n; i++) all.funcs[i] = true;
        char *text = fd_print_module(&m, &all, NULL);
        if (print) {
            fputs(text, stdout);
            free(text);
            fd_free_module(&m);
            continue;
        }
        fd_str why = {0};
        modules++;
        if (fd_check_isolated(text, &why, &runs) && !fd_stop) {   /* (a stop may cut a child short) */
            findings++;
            printf("FINDING seed %llu: %s\n", s, why.p ? why.p : "?");
            fflush(stdout);
            if (fd_seen(why.p ? why.p : "") <= 3) {
                fd_save(out, &m, &all, why.p, "-full");
                fd_sel min = all;
                fd_minimize(&m, &min, &why);
                fd_save(out, &m, &min, why.p, "");
            }
        } else if (!quiet) {
            printf("seed %llu: ok\n", s);
            fflush(stdout);
        }
        free(why.p);
        free(text);
        fd_free_module(&m);
    }
    double dt = fd_now() - t0;
    if (!print)
        printf("fuzz-diff: %ld modules, %ld function runs compared, %ld findings, %.1f s wall, "
               "%.2f modules/s, %.2f runs/s\n", modules, runs, findings, dt, modules / (dt > 0 ? dt : 1),
               runs / (dt > 0 ? dt : 1));
    return findings ? 1 : 0;
}

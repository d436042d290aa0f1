/* gpuir-run: run a function of a gpuir module, in the manner of iree-run-module.

   gpuir-run FILE [--function=NAME] [--backend=ref|emu|cuda|auto] [--check]
             [--repeat=N] [--dump-cuda=FILE] [--input=@in.npy ...]
             [--global=NAME=@w.npy ...] [--output=@out.npy ...]
             [--expected_output=@want.npy ...] [--rtol=R] [--atol=A] [--seed=N]
             [--dynamic=N] [--sm-count=N] [--import-cache=BUNDLE] [--export-cache=BUNDLE]

   --backend  ref: the reference interpreter (default); emu: the generated
              CUDA C on the CPU; cuda: a GPU; auto: cuda if usable, else emu
   --check    also run ref and compare within the dtype's tolerance
   --repeat   run the compiled program N times (the last results count)
   --dynamic  random inputs get N for every dynamic dim (`?`) of their type
   --sm-count plan launches for N multiprocessors (matmul tiles, split-K)
   --dump-cuda  write the CUDA C the backend compiled to FILE
   --import-cache  add a bundle's compiled modules to the cache first
   --export-cache  write the CUDA modules compiled or loaded to a bundle after
                   (deploy it with --import-cache, or gpuir_ctx_cache_import;
                   emulator modules are host code and never travel)

   Parameters without --input, and globals without --global, get
   deterministic random data from the seed (default 1). Each result is
   printed with its type, min, max and mean, and its elements in row-major
   order (all of them up to 64, else the first 8), with %.9g. With --expected_output the results
   are compared within the dtype's tolerance (or --rtol/--atol); a mismatch
   exits with status 1. */
#define GPUIR_IMPLEMENTATION
#include "../gpuir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS GPUIR_MAX_OPERANDS

typedef struct run_args {
    const char *file, *function, *backend, *dump_cuda, *import_cache, *export_cache;
    bool check;
    int repeat;
    const char *inputs[MAX_ARGS], *outputs[MAX_ARGS], *expected[MAX_ARGS], *globals[MAX_ARGS];
    int n_inputs, n_outputs, n_expected, n_globals;
    double rtol, atol;
    bool have_rtol, have_atol;
    unsigned long long seed;
    long long dynamic;      /* the size random inputs give a `?`, or -1 */
    int sm_count;           /* the target's SM count (gpuir_module_set_target); 0: the default */
} run_args;

static int usage(const char *why) {
    if (why) fprintf(stderr, "gpuir-run: %s\n", why);
    fprintf(stderr, "usage: gpuir-run FILE [--function=NAME] [--backend=ref|emu|cuda|auto] [--check]\n"
                    "       [--repeat=N] [--dump-cuda=FILE] [--input=@a.npy ...]\n"
                    "       [--global=NAME=@w.npy ...] [--output=@out.npy ...]\n"
                    "       [--expected_output=@e.npy ...] [--rtol=R] [--atol=A] [--seed=N]\n"
                    "       [--dynamic=N] [--sm-count=N] [--import-cache=BUNDLE] [--export-cache=BUNDLE]\n");
    return 2;
}

/* "--name=value" -> value, or NULL if arg is not that option. */
static const char *opt(const char *arg, const char *name) {
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

/* "@path" -> path */
static const char *at_path(const char *v) { return v[0] == '@' ? v + 1 : v; }

static bool push(const char **list, int *n, const char *v) {
    if (*n >= MAX_ARGS) return false;
    list[(*n)++] = v;
    return true;
}

static int parse_args(int argc, char **argv, run_args *a) {
    memset(a, 0, sizeof *a);
    a->backend = "ref";
    a->seed = 1;
    a->dynamic = -1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v;
        bool ok = true;
        if ((v = opt(s, "--function"))) a->function = v;
        else if ((v = opt(s, "--backend"))) a->backend = v;
        else if (strcmp(s, "--check") == 0) a->check = true;
        else if ((v = opt(s, "--repeat"))) a->repeat = atoi(v);
        else if ((v = opt(s, "--dump-cuda"))) a->dump_cuda = v;
        else if ((v = opt(s, "--import-cache"))) a->import_cache = v;
        else if ((v = opt(s, "--export-cache"))) a->export_cache = v;
        else if ((v = opt(s, "--input"))) ok = push(a->inputs, &a->n_inputs, at_path(v));
        else if ((v = opt(s, "--output"))) ok = push(a->outputs, &a->n_outputs, at_path(v));
        else if ((v = opt(s, "--expected_output"))) ok = push(a->expected, &a->n_expected, at_path(v));
        else if ((v = opt(s, "--global"))) ok = push(a->globals, &a->n_globals, v);
        else if ((v = opt(s, "--rtol"))) { a->rtol = atof(v); a->have_rtol = true; }
        else if ((v = opt(s, "--atol"))) { a->atol = atof(v); a->have_atol = true; }
        else if ((v = opt(s, "--seed"))) a->seed = strtoull(v, NULL, 10);
        else if ((v = opt(s, "--dynamic"))) a->dynamic = strtoll(v, NULL, 10);
        else if ((v = opt(s, "--sm-count"))) {
            a->sm_count = atoi(v);
            if (a->sm_count < 1) return usage("--sm-count wants a count of multiprocessors (1 or more)");
        }
        else if (s[0] == '-' && s[1] != '\0') return usage("unknown option");
        else if (!a->file) a->file = s;
        else return usage("more than one FILE");
        if (!ok) return usage("too many arguments of one kind");
    }
    if (!a->file) return usage("no FILE");
    if (strcmp(a->backend, "ref") != 0 && strcmp(a->backend, "emu") != 0 && strcmp(a->backend, "cuda") != 0 &&
        strcmp(a->backend, "auto") != 0)
        return usage("--backend is ref, emu, cuda or auto");
    if (a->repeat < 0 || a->repeat > 1000000) return usage("--repeat wants 1..1000000");
    if (a->dynamic < -1 || a->dynamic > (1LL << 32)) return usage("--dynamic wants 0..2^32");
    return 0;
}

static bool is_static(gpuir_type t) {
    for (int i = 0; i < t.rank; i++)
        if (t.dims[i] == GPUIR_DYN) return false;
    return true;
}

/* A random array of type t, its dynamic dims `dynamic` long (an error when
   it has some and dynamic is -1). */
static gpuir_result random_array(gpuir_ctx *ctx, gpuir_type t, long long dynamic, unsigned long long seed,
                                 const char *what, gpuir_array *out) {
    char buf[128];
    if (!is_static(t) && dynamic < 0) {
        fprintf(stderr, "gpuir-run: %s has the dynamic type %s: give it with --input or --dynamic=N\n", what,
                gpuir_type_str(t, buf, sizeof buf));
        return GPUIR_ERR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < t.rank; i++)
        if (t.dims[i] == GPUIR_DYN) t.dims[i] = dynamic;
    gpuir_result r = gpuir_array_alloc(ctx, out, t.dtype, t.rank, t.dims);
    if (r == GPUIR_OK) gpuir_array_fill_random(out, seed);
    return r;
}

static gpuir_result bind_globals(gpuir_ctx *ctx, gpuir_module *m, const run_args *a) {
    for (int i = 0; i < a->n_globals; i++) {
        char name[GPUIR_MAX_NAME];
        const char *eq = strchr(a->globals[i], '=');
        size_t n = eq ? (size_t)(eq - a->globals[i]) : 0;
        if (!eq || n == 0 || n >= sizeof name) {
            fprintf(stderr, "gpuir-run: --global wants NAME=@file.npy, got '%s'\n", a->globals[i]);
            return GPUIR_ERR_INVALID_ARGUMENT;
        }
        memcpy(name, a->globals[i], n);
        name[n] = '\0';
        gpuir_array w;
        gpuir_result r = gpuir_npy_read(ctx, at_path(eq + 1), &w);
        if (r == GPUIR_OK) r = gpuir_module_bind_global(m, name[0] == '@' ? name + 1 : name, &w);
        gpuir_array_release(&w);
        if (r) return r;
    }
    return GPUIR_OK;
}

/* Globals that no --global named get random data. */
static gpuir_result bind_random_globals(gpuir_ctx *ctx, gpuir_module *m, unsigned long long seed) {
    for (size_t i = 0; i < gpuir_module_global_count(m); i++) {
        if (gpuir_module_global_bound(m, i)) continue;
        char what[GPUIR_MAX_NAME + 16];
        snprintf(what, sizeof what, "global @%s", gpuir_module_global_name(m, i));
        gpuir_array w;
        gpuir_result r = random_array(ctx, gpuir_module_global_type(m, i), -1, seed + 1000 + i, what, &w);
        if (r == GPUIR_OK) r = gpuir_module_bind_global(m, gpuir_module_global_name(m, i), &w);
        gpuir_array_release(&w);
        if (r) return r;
    }
    return GPUIR_OK;
}

/* %.9g, with NaN always written "nan" */
static const char *num(double v, char *buf) {
    if (v != v) return "nan";
    snprintf(buf, 64, "%.9g", v);
    return buf;
}

static void summarize(int i, const gpuir_array *a) {
    char buf[160];
    size_t n = gpuir_array_count(a);
    double lo = 0, hi = 0, sum = 0;
    for (size_t k = 0; k < n; k++) {
        double v = gpuir_array_get(a, k);
        lo = k == 0 || v < lo ? v : lo;
        hi = k == 0 || v > hi ? v : hi;
        sum += v;
    }
    printf("result[%d]: %s\n", i, gpuir_type_str(gpuir_tensor_type(a->dtype, a->rank, a->dims), buf, sizeof buf));
    printf("  min %s", num(lo, buf));
    printf("  max %s", num(hi, buf));
    printf("  mean %s\n  [", num(n ? sum / (double)n : 0.0, buf));
    size_t shown = n <= 64 ? n : 8;       /* small results in full, else a prefix */
    for (size_t k = 0; k < shown; k++) printf("%s%s", k ? ", " : "", num(gpuir_array_get(a, k), buf));
    printf("%s]\n", n > shown ? ", ..." : "");
}

/* The module in FILE, or on standard input for "-". */
static gpuir_module *read_module(gpuir_ctx *ctx, const char *file) {
    if (strcmp(file, "-") != 0) return gpuir_module_parse_file(ctx, file);
    size_t cap = 1 << 16, len = 0, got;
    char *text = (char *)malloc(cap);
    while (text && (got = fread(text + len, 1, cap - len, stdin)) > 0)
        if ((len += got) == cap) {
            char *bigger = (char *)realloc(text, cap *= 2);
            if (!bigger) { free(text); text = NULL; }
            else text = bigger;
        }
    gpuir_module *m = text ? gpuir_module_parse(ctx, text, len, "<stdin>") : NULL;
    free(text);
    return m;
}

/* Picks the function: --function, or the module's only host function. */
static const char *pick_function(gpuir_module *m, const run_args *a) {
    if (a->function) return a->function;
    const char *only = NULL;
    size_t hosts = 0;
    for (size_t i = 0; i < gpuir_module_func_count(m); i++) {
        gpuir_func f = gpuir_module_func_at(m, i);
        if (gpuir_func_is_kernel(m, f)) continue;
        hosts++;
        only = gpuir_func_name(m, f);
    }
    if (hosts == 1) return only;
    fprintf(stderr, "gpuir-run: the module has %zu host functions: choose one with --function=NAME\n",
            hosts);
    return NULL;
}

static gpuir_result load_inputs(gpuir_ctx *ctx, gpuir_module *m, gpuir_func f, const run_args *a,
                                gpuir_array *in) {
    size_t n = gpuir_func_param_count(m, f);
    if (a->n_inputs && (size_t)a->n_inputs != n) {
        fprintf(stderr, "gpuir-run: @%s takes %zu inputs, %d given\n", gpuir_func_name(m, f), n,
                a->n_inputs);
        return GPUIR_ERR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "input #%zu", i);
        gpuir_result r = a->n_inputs ? gpuir_npy_read(ctx, a->inputs[i], &in[i])
                                     : random_array(ctx, gpuir_func_param_type(m, f, i), a->dynamic, a->seed + i,
                                                    what, &in[i]);
        if (r) return r;
    }
    return GPUIR_OK;
}

/* Writes --output files and checks --expected_output ones. */
static gpuir_result finish_outputs(gpuir_ctx *ctx, const run_args *a, gpuir_array *out, size_t n) {
    gpuir_result r = GPUIR_OK;
    for (size_t i = 0; i < n; i++) summarize((int)i, &out[i]);
    for (int i = 0; i < a->n_outputs && (size_t)i < n && !r; i++) r = gpuir_npy_write(ctx, a->outputs[i], &out[i]);
    if ((size_t)a->n_expected > n) {
        fprintf(stderr, "gpuir-run: %d expected outputs for %zu results\n", a->n_expected, n);
        return GPUIR_ERR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < a->n_expected && !r; i++) {
        gpuir_array want;
        double rtol, atol;
        gpuir_dtype_tolerance(out[i].dtype, &rtol, &atol);
        if (a->have_rtol) rtol = a->rtol;
        if (a->have_atol) atol = a->atol;
        r = gpuir_npy_read(ctx, a->expected[i], &want);
        if (!r) r = gpuir_array_compare(ctx, &out[i], &want, rtol, atol);
        if (!r) printf("result[%d]: matches %s (rtol %g, atol %g)\n", i, a->expected[i], rtol, atol);
        gpuir_array_release(&want);
    }
    return r;
}


static gpuir_backend backend_of(const char *name) {
    return strcmp(name, "emu") == 0 ? GPUIR_BACKEND_EMU : strcmp(name, "cuda") == 0 ? GPUIR_BACKEND_CUDA :
           strcmp(name, "auto") == 0 ? GPUIR_BACKEND_AUTO : GPUIR_BACKEND_REF;
}

/* Runs the function on the chosen backend; with --check, the interpreter
   first (on the tensor-level module) and the results compared. */
static gpuir_result run(gpuir_ctx *ctx, gpuir_module *m, const char *func, const run_args *a, size_t n_in,
                        gpuir_array *in, size_t n_out, gpuir_array *out) {
    gpuir_backend b = backend_of(a->backend);
    char fname[GPUIR_MAX_NAME];            /* lowering moves the module's strings */
    snprintf(fname, sizeof fname, "%s", func);
    gpuir_array want[GPUIR_MAX_OPERANDS];
    memset(want, 0, sizeof want);
    gpuir_result r = GPUIR_OK;
    if (a->check) r = gpuir_ref_run(m, fname, n_in, in, n_out, want);
    gpuir_program_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.backend = b;
    gpuir_program *p = r ? NULL : gpuir_program_make(m, &desc);
    if (!r && !p) r = gpuir_ctx_result(ctx);
    if (p && b == GPUIR_BACKEND_AUTO && *gpuir_program_why_not_cuda(p))
        fprintf(stderr, "gpuir-run: running on the emulator: %s\n", gpuir_program_why_not_cuda(p));
    if (p && a->dump_cuda) {
        FILE *f = fopen(a->dump_cuda, "w");
        if (!f || fputs(gpuir_program_source(p), f) < 0) {
            fprintf(stderr, "gpuir-run: cannot write '%s'\n", a->dump_cuda);
            r = GPUIR_ERR_IO;
        }
        if (f) fclose(f);
    }
    for (int i = 0; p && !r && i < (a->repeat > 0 ? a->repeat : 1); i++) {
        for (size_t k = 0; k < n_out; k++) gpuir_array_release(&out[k]);
        r = gpuir_program_run(p, fname, n_in, in, n_out, out);
    }
    for (size_t k = 0; a->check && !r && k < n_out; k++) {
        double rtol, atol;
        gpuir_backend_tolerance(gpuir_program_backend(p), out[k].dtype, &rtol, &atol);
        if (a->have_rtol) rtol = a->rtol;
        if (a->have_atol) atol = a->atol;
        r = gpuir_array_compare(ctx, &out[k], &want[k], rtol, atol);
        if (!r) printf("result[%zu]: %s matches ref (rtol %g, atol %g)\n", k,
                       gpuir_backend_name(gpuir_program_backend(p)), rtol, atol);
    }
    for (size_t k = 0; k < GPUIR_MAX_OPERANDS; k++) gpuir_array_release(&want[k]);
    gpuir_program_destroy(p);
    return r;
}

int main(int argc, char **argv) {
    run_args a;
    int bad = parse_args(argc, argv, &a);
    if (bad) return bad;
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    if (!ctx) return 1;
    gpuir_array in[GPUIR_MAX_OPERANDS], out[GPUIR_MAX_OPERANDS];
    size_t n_in = 0, n_out = 0;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    gpuir_result r = GPUIR_ERR_INVALID_ARGUMENT;
    gpuir_module *m = read_module(ctx, a.file);
    if (m) {
        gpuir_target t = gpuir_module_target(m);
        if (a.sm_count > 0) t.sm_count = a.sm_count;
        gpuir_module_set_target(m, t);
    }
    const char *fname = m ? pick_function(m, &a) : NULL;
    gpuir_func f = {0};
    if (fname) f = gpuir_module_find_func(m, fname);
    if (fname && !f.id) fprintf(stderr, "gpuir-run: no function named @%s\n", fname);
    if (fname && f.id) {
        n_in = gpuir_func_param_count(m, f);
        n_out = gpuir_func_result_count(m, f);
        r = a.import_cache ? gpuir_ctx_cache_import(ctx, a.import_cache, NULL) : GPUIR_OK;
        if (!r) r = bind_globals(ctx, m, &a);
        if (!r) r = bind_random_globals(ctx, m, a.seed);
        if (!r) r = load_inputs(ctx, m, f, &a, in);
        if (!r) r = run(ctx, m, fname, &a, n_in, in, n_out, out);
        if (!r) r = finish_outputs(ctx, &a, out, n_out);
        if (!r && a.export_cache) r = gpuir_ctx_cache_export(ctx, a.export_cache, NULL);
    }
    if (gpuir_ctx_result(ctx) != GPUIR_OK) fprintf(stderr, "%s\n", gpuir_ctx_error(ctx));
    for (size_t i = 0; i < GPUIR_MAX_OPERANDS; i++) { gpuir_array_release(&in[i]); gpuir_array_release(&out[i]); }
    gpuir_ctx_destroy(ctx);
    return r == GPUIR_OK ? 0 : 1;
}

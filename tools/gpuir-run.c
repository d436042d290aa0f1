/* gpuir-run: run a function of a gpuir module, in the manner of iree-run-module.

   gpuir-run [options] FILE       (FILE may be - for standard input)
   gpuir-run --help lists the options, a line each.

   --backend  ref: the reference interpreter (default); emu: the generated
              CUDA C on the CPU; cuda: a GPU; auto: cuda if usable, else emu
   --check    also run ref and compare within the dtype's tolerance
   --input    one per parameter, in order: @file.npy (f32, f16, i32, i64;
              NumPy's default f64 and bool are converted to the parameter's
              dtype), or inline as iree-run-module writes them:
              --input=2x3xf32=1,2,3,4,5,6 (commas or spaces; one value fills
              the whole shape; a scalar is f32=1.5); text that looks
              inline and is no file is refused saying what is wrong
   --global   NAME=@w.npy binds a global; a global left unbound is an error
              unless --random-globals gives it random data
   --dynamic  random inputs get N for every dynamic dim (`?`) of their type
   --sm-count plan launches for N multiprocessors (matmul tiles, split-K)
   --dump-cuda  write the CUDA C the backend compiled to FILE
   --import-cache  add a bundle's compiled modules to the cache first
   --export-cache  write the CUDA modules compiled or loaded to a bundle after
                   (deploy it with --import-cache, or gpuir_ctx_cache_import;
                   emulator modules are host code and never travel)

   Parameters without --input get deterministic random data from the seed
   (default 1). Each result is printed with its type, min, max and mean,
   and its elements in row-major order (all of them up to 64, else the
   first 8), with %.9g (integers in full). --output writes them to .npy
   files, in order. With --expected_output the results are compared
   within the dtype's tolerance (or --rtol/--atol); a mismatch exits with
   status 1. More --output or --expected_output flags than results is an
   error (status 1) before the run. A bad command line (an unknown flag,
   a number that is not one) exits with status 2, naming the flag.
   Nothing here has a fixed count:
   a function may have as many parameters and results as the library takes. */
#include "../gpuir.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The largest input, result or global (the context's max_tensor_bytes,
   gpuir's default, here so that --input's messages can say it). */
#define RUN_MAX_TENSOR_BYTES ((uint64_t)1 << 34)

typedef struct arg_list { const char **v; int n; } arg_list;    /* grows as flags come */

typedef struct run_args {
    const char *file, *function, *backend, *dump_cuda, *import_cache, *export_cache;
    bool check, random_globals;
    int repeat;
    arg_list inputs, outputs, expected, globals;
    double rtol, atol;
    bool have_rtol, have_atol;
    unsigned long long seed;
    long long dynamic;      /* the size random inputs give a `?`, or -1 */
    int sm_count;           /* the target's SM count (gpuir_module_set_target); 0: the default */
} run_args;

enum { R_FUNCTION = 256, R_BACKEND, R_CHECK, R_REPEAT, R_DUMP_CUDA, R_INPUT, R_GLOBAL, R_RANDOM_GLOBALS, R_OUTPUT,
       R_EXPECTED, R_RTOL, R_ATOL, R_SEED, R_DYNAMIC, R_SM_COUNT, R_IMPORT_CACHE, R_EXPORT_CACHE };

static const cli_flag flags[] = {
    {"function", required_argument, R_FUNCTION, "NAME", "the function to run (default: the only host function)"},
    {"backend", required_argument, R_BACKEND, "B", "ref (default: the interpreter), emu, cuda, or auto"},
    {"check", no_argument, R_CHECK, NULL, "also run ref and compare within the dtype's tolerance"},
    {"repeat", required_argument, R_REPEAT, "N", "run the compiled program N times (1..1000000)"},
    {"dump-cuda", required_argument, R_DUMP_CUDA, "FILE", "write the CUDA C the backend compiled to FILE"},
    {"input", required_argument, R_INPUT, "IN", "a parameter, in order: @a.npy, or inline 2x3xf32=1,2,3,4,5,6"},
    {"global", required_argument, R_GLOBAL, "NAME=@w.npy", "bind a global to a .npy file"},
    {"random-globals", no_argument, R_RANDOM_GLOBALS, NULL, "give globals left unbound random data"},
    {"output", required_argument, R_OUTPUT, "@out.npy", "write a result to a .npy file, in order"},
    {"expected_output", required_argument, R_EXPECTED, "@e.npy", "compare a result with a .npy file, in order"},
    {"rtol", required_argument, R_RTOL, "R", "relative tolerance of the comparisons (default: the dtype's)"},
    {"atol", required_argument, R_ATOL, "A", "absolute tolerance of the comparisons (default: the dtype's)"},
    {"seed", required_argument, R_SEED, "N", "seed of the random inputs (default 1)"},
    {"dynamic", required_argument, R_DYNAMIC, "N", "random inputs get N for each dynamic dim (0..2^32)"},
    {"sm-count", required_argument, R_SM_COUNT, "N", "plan launches for N multiprocessors"},
    {"import-cache", required_argument, R_IMPORT_CACHE, "BUNDLE", "add a bundle's compiled modules to the cache first"},
    {"export-cache", required_argument, R_EXPORT_CACHE, "BUNDLE", "write the modules compiled or loaded to a bundle"},
    {"help", no_argument, CLI_HELP, NULL, "print this help and exit"},
    {"version", no_argument, CLI_VERSION, NULL, "print the version and exit"},
};
#define N_FLAGS (sizeof flags / sizeof flags[0])
static const char usage_line[] = "usage: gpuir-run [options] FILE   (FILE may be - for standard input)";

static int usage(const char *why) {
    if (why) cli_err("gpuir-run: %s\n", why);
    cli_err("%s\n(gpuir-run --help lists the options)\n", usage_line);
    return 2;
}

/* "@path" -> path */
static const char *at_path(const char *v) { return v[0] == '@' ? v + 1 : v; }

static bool push(arg_list *l, const char *v) {
    const char **bigger = (const char **)realloc(l->v, (size_t)(l->n + 1) * sizeof *bigger);
    if (!bigger) return false;
    l->v = bigger;
    l->v[l->n++] = v;
    return true;
}

static void free_args(run_args *a) {
    free(a->inputs.v);
    free(a->outputs.v);
    free(a->expected.v);
    free(a->globals.v);
}

/* One flag with its value; 0 or the exit status (2). */
static int take_flag(int c, const char *v, run_args *a) {
    const char *T = "gpuir-run";
    long long n;
    switch (c) {
    case R_FUNCTION: a->function = v; return 0;
    case R_BACKEND: a->backend = v; return 0;
    case R_CHECK: a->check = true; return 0;
    case R_RANDOM_GLOBALS: a->random_globals = true; return 0;
    case R_REPEAT: return cli_int32(T, "--repeat", v, 1, 1000000, &a->repeat) ? 0 : 2;
    case R_DUMP_CUDA: a->dump_cuda = v; return 0;
    case R_IMPORT_CACHE: a->import_cache = v; return 0;
    case R_EXPORT_CACHE: a->export_cache = v; return 0;
    case R_INPUT: return push(&a->inputs, v) ? 0 : usage("out of memory");
    case R_OUTPUT:
        if (!*at_path(v)) return usage("--output needs a file name (--output=@FILE.npy)");
        return push(&a->outputs, at_path(v)) ? 0 : usage("out of memory");
    case R_EXPECTED: return push(&a->expected, at_path(v)) ? 0 : usage("out of memory");
    case R_GLOBAL: return push(&a->globals, v) ? 0 : usage("out of memory");
    case R_RTOL: a->have_rtol = true; return cli_nonneg(T, "--rtol", v, &a->rtol) ? 0 : 2;
    case R_ATOL: a->have_atol = true; return cli_nonneg(T, "--atol", v, &a->atol) ? 0 : 2;
    case R_SEED: return cli_u64(T, "--seed", v, &a->seed) ? 0 : 2;
    case R_DYNAMIC:
        if (!cli_int(T, "--dynamic", v, 0, 1LL << 32, &n)) return 2;
        a->dynamic = n;
        return 0;
    case R_SM_COUNT: return cli_int32(T, "--sm-count", v, 1, 100000, &a->sm_count) ? 0 : 2;
    default: return 2;
    }
}

/* Reads the command line; 0, or the exit status to leave with (done: after
   --help or --version). */
static int parse_args(int argc, char **argv, run_args *a, bool *done) {
    memset(a, 0, sizeof *a);
    a->backend = "ref";
    a->seed = 1;
    a->dynamic = -1;
    *done = false;
    int c;
    while ((c = cli_next(argc, argv, "gpuir-run", "", flags, N_FLAGS)) != -1) {
        if (c == CLI_HELP || c == CLI_VERSION) {
            *done = true;
            return c == CLI_HELP ? cli_help(usage_line, flags, N_FLAGS, NULL) : cli_version("gpuir-run");
        }
        int bad = c == '?' ? 2 : take_flag(c, optarg, a);
        if (bad) return bad;
    }
    if (optind < argc) a->file = argv[optind++];
    if (optind < argc) return usage("more than one FILE");
    if (!a->file) return usage("no FILE");
    if (strcmp(a->backend, "ref") != 0 && strcmp(a->backend, "emu") != 0 && strcmp(a->backend, "cuda") != 0 &&
        strcmp(a->backend, "auto") != 0)
        return usage("--backend is ref, emu, cuda or auto");
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
        cli_err("gpuir-run: %s has the dynamic type %s: give it with --input or --dynamic=N\n", what,
                gpuir_type_str(t, buf, sizeof buf));
        return GPUIR_ERR_INVALID_ARGUMENT;
    }
    gpuir_type_str(t, buf, sizeof buf);      /* as written: the message names it if the size fails */
    for (int i = 0; i < t.rank; i++)
        if (t.dims[i] == GPUIR_DYN) t.dims[i] = dynamic;
    gpuir_result r = gpuir_array_alloc(ctx, out, t.dtype, t.rank, t.dims);
    if (r == GPUIR_OK) gpuir_array_fill_random(out, seed);
    else cli_err("gpuir-run: %s (%s, each ? %lld) cannot be made:\n", what, buf, dynamic);
    return r;
}

/* The index of the global called name (with or without '@'), or -1. */
static long find_global(gpuir_module *m, const char *name) {
    if (name[0] == '@') name++;
    for (size_t i = 0; i < gpuir_module_global_count(m); i++)
        if (strcmp(gpuir_module_global_name(m, i), name) == 0) return (long)i;
    return -1;
}

static gpuir_result bind_globals(gpuir_ctx *ctx, gpuir_module *m, const run_args *a) {
    for (int i = 0; i < a->globals.n; i++) {
        const char *spec = a->globals.v[i], *eq = strchr(spec, '=');
        size_t n = eq ? (size_t)(eq - spec) : 0;
        if (!eq || n == 0 || n >= GPUIR_MAX_NAME) {
            cli_err("gpuir-run: --global wants NAME=@file.npy, got '%s'\n", spec);
            return GPUIR_ERR_INVALID_ARGUMENT;
        }
        char name[GPUIR_MAX_NAME];
        memcpy(name, spec, n);
        name[n] = '\0';
        long g = find_global(m, name);
        if (g < 0) {
            cli_err("gpuir-run: --global: the module has no global @%s\n", name[0] == '@' ? name + 1 : name);
            return GPUIR_ERR_INVALID_ARGUMENT;
        }
        gpuir_array w;
        gpuir_result r = gpuir_npy_read_as(ctx, at_path(eq + 1), gpuir_module_global_type(m, (size_t)g).dtype, &w);
        if (r) cli_err("gpuir-run: --global=%s: the .npy file '%s' cannot be used:\n", spec, at_path(eq + 1));
        if (r == GPUIR_OK) r = gpuir_module_bind_global(m, gpuir_module_global_name(m, (size_t)g), &w);
        gpuir_array_release(&w);
        if (r) return r;
    }
    return GPUIR_OK;
}

/* Globals that no --global named: random data with --random-globals, else
   an error naming the first. */
static gpuir_result bind_random_globals(gpuir_ctx *ctx, gpuir_module *m, const run_args *a) {
    for (size_t i = 0; i < gpuir_module_global_count(m); i++) {
        if (gpuir_module_global_bound(m, i)) continue;
        const char *name = gpuir_module_global_name(m, i);
        if (!a->random_globals) {
            cli_err("gpuir-run: global @%s is not bound: give it with --global=%s=@file.npy, or "
                    "--random-globals for random data\n", name, name);
            return GPUIR_ERR_INVALID_ARGUMENT;
        }
        char what[GPUIR_MAX_NAME + 16];
        snprintf(what, sizeof what, "global @%s", name);
        gpuir_array w;
        gpuir_result r = random_array(ctx, gpuir_module_global_type(m, i), -1, a->seed + 1000 + i, what, &w);
        if (r == GPUIR_OK) r = gpuir_module_bind_global(m, name, &w);
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

/* Element k of an integer array, exact (a double holds an i64 only to 2^53). */
static long long int_at(const gpuir_array *a, size_t k) {
    if (gpuir_dtype_size(a->dtype) == 8) return (long long)((const int64_t *)a->data)[k];
    return (long long)gpuir_array_get(a, k);
}

/* Element k: %.9g (num), or an integer in full. */
static const char *elem(const gpuir_array *a, size_t k, char *buf) {
    if (gpuir_dtype_is_float(a->dtype)) return num(gpuir_array_get(a, k), buf);
    snprintf(buf, 64, "%lld", int_at(a, k));
    return buf;
}

static void summarize(int i, const gpuir_array *a) {
    char buf[160];
    size_t n = gpuir_array_count(a), lo = 0, hi = 0;        /* the elements that are least and greatest */
    bool ints = !gpuir_dtype_is_float(a->dtype);
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        double v = gpuir_array_get(a, k);
        if (ints ? int_at(a, k) < int_at(a, lo) : v < gpuir_array_get(a, lo)) lo = k;
        if (ints ? int_at(a, k) > int_at(a, hi) : v > gpuir_array_get(a, hi)) hi = k;
        sum += v;
    }
    printf("result[%d]: %s\n", i, gpuir_type_str(gpuir_tensor_type(a->dtype, a->rank, a->dims), buf, sizeof buf));
    printf("  min %s", n ? elem(a, lo, buf) : "0");
    printf("  max %s", n ? elem(a, hi, buf) : "0");
    printf("  mean %s\n  [", num(n ? sum / (double)n : 0.0, buf));
    size_t shown = n <= 64 ? n : 8;       /* small results in full, else a prefix */
    for (size_t k = 0; k < shown; k++) printf("%s%s", k ? ", " : "", elem(a, k, buf));
    printf("%s]\n", n > shown ? ", ..." : "");
}

/* The module in FILE, or on standard input for "-" (a bounded read of a
   regular file or a pipe). */
static gpuir_module *read_module(gpuir_ctx *ctx, const char *file) {
    size_t len;
    char *text = cli_read_text("gpuir-run", file, &len);
    gpuir_module *m = text ? gpuir_module_parse(ctx, text, len, strcmp(file, "-") == 0 ? "<stdin>" : file) : NULL;
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
    cli_err("gpuir-run: the module has %zu host functions: choose one with --function=NAME\n",
            hosts);
    return NULL;
}

/* The dtypes an input may have. */
static const gpuir_dtype input_dtypes[] = {GPUIR_F32, GPUIR_F16, GPUIR_BF16, GPUIR_I32, GPUIR_I64};
#define N_INPUT_DTYPES (sizeof input_dtypes / sizeof input_dtypes[0])

/* The dtype named by text[0..n), or 0. */
static gpuir_dtype dtype_named(const char *text, size_t n) {
    for (size_t i = 0; i < N_INPUT_DTYPES; i++) {
        const char *name = gpuir_dtype_name(input_dtypes[i]);
        if (strlen(name) == n && memcmp(name, text, n) == 0) return input_dtypes[i];
    }
    return GPUIR_DTYPE_INVALID;
}

/* The type part of an inline input, before the '=' (or the end): the dtype
   is what follows the last 'x' ("2x3xf32": "f32"). */
static const char *type_end(const char *spec) {
    const char *eq = strchr(spec, '=');
    return eq ? eq : spec + strlen(spec);
}

static const char *dtype_start(const char *spec) {
    const char *p = type_end(spec);
    while (p > spec && p[-1] != 'x') p--;
    return p;
}

/* Whether spec is inline, as iree-run-module writes it, [DxDx...]DTYPE=...,
   rather than a .npy file (@path, or a path that exists). Text that is no
   file and only looks inline (an unknown dtype: 4xf99=1; no '=values':
   4xf32) counts as inline too, so that inline_type says what is wrong
   with it: it was read as a file name, "cannot read the file". */
static bool is_inline(const char *spec) {
    if (spec[0] == '@') return false;
    const char *eq = strchr(spec, '='), *dt = dtype_start(spec), *end = type_end(spec);
    bool known = dtype_named(dt, (size_t)(end - dt)) != GPUIR_DTYPE_INVALID;
    struct stat st;
    if (known && eq) return true;
    if (stat(spec, &st) == 0) return false;
    if (eq || known) return true;
    if (dt == spec || dt == end || !isalpha((unsigned char)*dt)) return false;   /* DxDx...xNAME, else a file */
    for (const char *p = spec; p < dt; p++)
        if (!isdigit((unsigned char)*p) && *p != 'x') return false;
    for (const char *p = dt; p < end; p++)
        if (!isalnum((unsigned char)*p)) return false;
    return true;
}

/* Whether an inline input's dtype is known and the '=values' there; else
   a message saying which is wrong (and the dtypes there are). */
static bool inline_dtype(const char *spec, const char *what, gpuir_dtype *dtype) {
    const char *dt = dtype_start(spec), *end = type_end(spec);
    char names[64] = "";
    *dtype = dtype_named(dt, (size_t)(end - dt));
    for (size_t i = 0; i < N_INPUT_DTYPES; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 gpuir_dtype_name(input_dtypes[i]));
    if (*dtype == GPUIR_DTYPE_INVALID && dt == end)
        cli_err("gpuir-run: %s: no dtype in '%s' (%s; e.g. 4xf32=1,2,3,4)\n", what, spec, names);
    else if (*dtype == GPUIR_DTYPE_INVALID)
        cli_err("gpuir-run: %s: unknown dtype '%.*s' in '%s' (the dtypes: %s)\n", what, (int)(end - dt), dt, spec,
                names);
    else if (!*end)
        cli_err("gpuir-run: %s: '%s' has no '=values' (inline: %s=1,2,...; a file: @x.npy)\n", what, spec, spec);
    return *dtype != GPUIR_DTYPE_INVALID && *end;
}

/* The shape before the dtype: "2x3x" -> {2, 3}; false with a message (too
   many dimensions, one that is not a count or is past int64, or more
   elements than an input of the dtype may hold: max_elements; a dimension
   past that is fine in an empty shape, 9223372036854775807x0). */
static bool inline_dims(const char *spec, const char *what, int64_t max_elements, int *rank, int64_t *dims) {
    const char *dt = dtype_start(spec);
    int n = 0;
    for (const char *p = spec; p < dt; p++) n += *p == 'x';
    if (n > GPUIR_MAX_RANK) {
        cli_err("gpuir-run: %s: too many dimensions: %d > %d (in '%s')\n", what, n, GPUIR_MAX_RANK, spec);
        return false;
    }
    int64_t elements = 1;
    *rank = 0;
    for (const char *p = spec; p < dt;) {
        const char *x = strchr(p, 'x');
        char *end;
        errno = 0;
        long long d = isdigit((unsigned char)*p) ? strtoll(p, &end, 10) : -1;
        if (d < 0 || end != x) {
            cli_err("gpuir-run: %s: '%.*s' is not a dimension (a count: 0, 1, 2, ...) (in '%s')\n", what,
                    (int)(x - p), p, spec);
            return false;
        }
        if (errno == ERANGE) {
            cli_err("gpuir-run: %s: dimension %.*s is too large: past 2^63 - 1, and an input holds at most %lld "
                    "elements (in '%s')\n", what, (int)(x - p), p, (long long)max_elements, spec);
            return false;
        }
        elements = d && elements > max_elements / d ? max_elements + 1 : elements * d;
        dims[(*rank)++] = d;
        p = x + 1;
    }
    if (elements > max_elements) {
        cli_err("gpuir-run: %s: the shape %.*s has too many elements: the limit is %lld (in '%s')\n", what,
                (int)(dt - spec - 1), spec, (long long)max_elements, spec);
        return false;
    }
    return true;
}

/* The shape and dtype before the '=': "2x3xf32"; false with a message. */
static bool inline_type(const char *spec, const char *what, gpuir_dtype *dtype, int *rank, int64_t *dims) {
    if (!inline_dtype(spec, what, dtype)) return false;
    int64_t max_elements = (int64_t)(RUN_MAX_TENSOR_BYTES / gpuir_dtype_size(*dtype));
    return inline_dims(spec, what, max_elements, rank, dims);
}

/* The largest finite value of a float dtype, for messages (the library's
   gpuir__float_max, which a tool linked to the implementation's object
   cannot call); 0 for the others. */
static double float_max(gpuir_dtype dt) {
    if (dt == GPUIR_F32) return 3.4028234663852886e38;
    if (dt == GPUIR_F16) return 65504.0;
    return dt == GPUIR_BF16 ? 3.3895313892515355e38 : 0.0;
}

/* Skips the separators before the next value: spaces, tabs, brackets and
   at most one comma after a value. False, with a message, at a comma with
   no value before it ("1,,3", ",1"): the value at `position` is empty. */
static bool skip_separators(const char **p, bool after_value, size_t position, const char *spec, const char *what) {
    for (; **p == ',' || **p == ' ' || **p == '[' || **p == ']' || **p == '\t'; (*p)++) {
        if (**p != ',') continue;
        if (!after_value) {
            cli_err("gpuir-run: %s: an empty value at position %zu in '%s'\n", what, position, spec);
            return false;
        }
        after_value = false;
    }
    if (!**p && !after_value && position > 1) {       /* "1,2," */
        cli_err("gpuir-run: %s: an empty value at position %zu in '%s'\n", what, position, spec);
        return false;
    }
    return true;
}

/* Reads one value at *p into element `at` of out (past the end: read and
   checked only); false with a message where it is no number of the dtype
   or out of the dtype's range (a finite float that would become inf:
   1e400 as f32, 70000 as f16; inf and nan written so are kept). */
static bool read_value(const char **p, gpuir_array *out, size_t at, const char *spec, const char *what) {
    gpuir_dtype dt = out->dtype;
    bool ints = !gpuir_dtype_is_float(dt);
    char *end;
    errno = 0;
    long long iv = ints ? strtoll(*p, &end, 10) : 0;
    double v = ints ? 0 : strtod(*p, &end);
    if (end == *p || (*end && !strchr(", []\t", *end))) {
        cli_err("gpuir-run: %s: '%s' is not a list of %s numbers\n", what, spec, gpuir_dtype_name(dt));
        return false;
    }
    size_t size = gpuir_dtype_size(dt), count = gpuir_array_count(out);
    if (at < count && ints) {                  /* exactly: a double holds an i64 only to 2^53 */
        int64_t i64 = iv;
        int32_t i32 = (int32_t)iv;
        memcpy((char *)out->data + at * size, size == 8 ? (void *)&i64 : (void *)&i32, size);
    } else if (at < count) {
        gpuir_array_set(out, at, v);
    }
    bool int_range = ints && (errno == ERANGE || (size == 4 && (iv < INT32_MIN || iv > INT32_MAX)));
    bool float_range = !ints && ((errno == ERANGE && isinf(v)) ||
                                 (at < count && isinf(gpuir_array_get(out, at)) && isfinite(v)));
    if (int_range)
        cli_err("gpuir-run: %s: %.*s is out of %s's range (in '%s')\n", what, (int)(end - *p), *p,
                gpuir_dtype_name(dt), spec);
    if (float_range)
        cli_err("gpuir-run: %s: %.*s is out of %s's range, %.9g to %.9g (in '%s')\n", what, (int)(end - *p), *p,
                gpuir_dtype_name(dt), -float_max(dt), float_max(dt), spec);
    *p = end;
    return !int_range && !float_range;
}

/* Whether an inline input of dtype dt and shape dims[0, rank) fits the
   parameter type `param` (a `?` takes any size), as the run will check;
   else a message naming both. Checked before the array is made: 2^32
   elements given for a tensor<4xf32> were allocated and filled first
   (16 GiB and most of a minute). */
static bool fits_parameter(const char *spec, const char *what, gpuir_dtype dt, int rank, const int64_t *dims,
                           gpuir_type param) {
    bool fits = dt == param.dtype && rank == param.rank;
    for (int d = 0; fits && d < rank; d++) fits = param.dims[d] == GPUIR_DYN || param.dims[d] == dims[d];
    if (fits) return true;
    char given[160], wanted[160];
    gpuir_type_str(gpuir_tensor_type(dt, rank, dims), given, sizeof given);
    gpuir_type_str(param, wanted, sizeof wanted);
    cli_err("gpuir-run: %s: '%s' is %s, the parameter %s\n", what, spec, given, wanted);
    return false;
}

/* An inline input "2x3xf32=1,2,3,4,5,6" (commas or spaces, brackets
   ignored; one value fills the shape) for a parameter of type `param`. */
static gpuir_result inline_array(gpuir_ctx *ctx, const char *spec, const char *what, gpuir_type param,
                                 gpuir_array *out) {
    gpuir_dtype dt;
    int rank;
    int64_t dims[GPUIR_MAX_RANK];
    if (!inline_type(spec, what, &dt, &rank, dims) || !fits_parameter(spec, what, dt, rank, dims, param))
        return GPUIR_ERR_INVALID_ARGUMENT;
    gpuir_result r = gpuir_array_alloc(ctx, out, dt, rank, dims);
    if (r) return r;
    size_t count = gpuir_array_count(out), got = 0;
    const char *p = strchr(spec, '=') + 1;
    for (;;) {
        if (!skip_separators(&p, got > 0, got + 1, spec, what)) return GPUIR_ERR_INVALID_ARGUMENT;
        if (!*p) break;
        if (!read_value(&p, out, got, spec, what)) return GPUIR_ERR_INVALID_ARGUMENT;
        got++;
    }
    size_t size = gpuir_dtype_size(dt);
    if (got == 1)
        for (size_t k = 1; k < count; k++) memcpy((char *)out->data + k * size, out->data, size);
    if (got != count && !(got == 1 && count > 0)) {
        cli_err("gpuir-run: %s: '%s' gives %zu values for %zu elements\n", what, spec, got, count);
        return GPUIR_ERR_INVALID_ARGUMENT;
    }
    return GPUIR_OK;
}

static gpuir_result load_inputs(gpuir_ctx *ctx, gpuir_module *m, gpuir_func f, const run_args *a,
                                gpuir_array *in) {
    size_t n = gpuir_func_param_count(m, f);
    if (a->inputs.n && (size_t)a->inputs.n != n) {
        cli_err("gpuir-run: @%s takes %zu inputs, %d given\n", gpuir_func_name(m, f), n, a->inputs.n);
        return GPUIR_ERR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "input #%zu", i);
        gpuir_type t = gpuir_func_param_type(m, f, i);
        const char *spec = a->inputs.n ? a->inputs.v[i] : NULL;
        bool file = spec && !is_inline(spec);
        gpuir_result r = !spec ? random_array(ctx, t, a->dynamic, a->seed + i, what, &in[i])
                         : !file ? inline_array(ctx, spec, what, t, &in[i])
                                 : gpuir_npy_read_as(ctx, at_path(spec), t.dtype, &in[i]);
        if (r && file) cli_err("gpuir-run: %s: the .npy file '%s' cannot be used:\n", what, at_path(spec));
        if (r) return r;
    }
    return GPUIR_OK;
}

/* Whether list (the values of --`flag`) has no more entries than @fname
   has results; else a message naming the flag and both counts. Checked
   before the run: an --output past the last result was never written. */
static bool fits_results(const arg_list *list, const char *flag, const char *fname, size_t n_out) {
    if ((size_t)list->n <= n_out) return true;
    cli_err("gpuir-run: %d %s flags for %zu result%s of @%s\n", list->n, flag, n_out, n_out == 1 ? "" : "s",
            fname);
    return false;
}

/* Whether each --output file's directory exists (checked before the run:
   a result that could not be written was found only after it); else a
   message naming the flag. */
static bool outputs_writable(const arg_list *list) {
    for (int i = 0; i < list->n; i++) {
        const char *path = list->v[i], *slash = strrchr(path, '/');
        char dir[4096];
        if (!slash) snprintf(dir, sizeof dir, ".");
        else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
        struct stat st;
        int err = stat(dir, &st) != 0 ? errno : 0;
        if (err || !S_ISDIR(st.st_mode)) {
            cli_err("gpuir-run: --output=@%s: cannot write into %s: %s\n", path, dir,
                    err ? strerror(err) : "not a directory");
            return false;
        }
    }
    return true;
}

/* Writes --output files and checks --expected_output ones (no more of
   either than the n results: fits_results). */
static gpuir_result finish_outputs(gpuir_ctx *ctx, const run_args *a, gpuir_array *out, size_t n) {
    gpuir_result r = GPUIR_OK;
    for (size_t i = 0; i < n; i++) summarize((int)i, &out[i]);
    for (int i = 0; i < a->outputs.n && !r; i++) r = gpuir_npy_write(ctx, a->outputs.v[i], &out[i]);
    for (int i = 0; i < a->expected.n && !r; i++) {
        gpuir_array want;
        double rtol, atol;
        gpuir_dtype_tolerance(out[i].dtype, &rtol, &atol);
        if (a->have_rtol) rtol = a->rtol;
        if (a->have_atol) atol = a->atol;
        r = gpuir_npy_read_as(ctx, a->expected.v[i], out[i].dtype, &want);
        if (!r) r = gpuir_array_compare(ctx, &out[i], &want, rtol, atol);
        if (!r) printf("result[%d]: matches %s (rtol %g, atol %g)\n", i, a->expected.v[i], rtol, atol);
        gpuir_array_release(&want);
    }
    return r;
}


static gpuir_backend backend_of(const char *name) {
    return strcmp(name, "emu") == 0 ? GPUIR_BACKEND_EMU : strcmp(name, "cuda") == 0 ? GPUIR_BACKEND_CUDA :
           strcmp(name, "auto") == 0 ? GPUIR_BACKEND_AUTO : GPUIR_BACKEND_REF;
}

/* Whether function `func` of m takes a buffer (memref) parameter, which
   a run may write. */
static bool writes_parameters(gpuir_module *m, const char *func) {
    gpuir_func f = gpuir_module_find_func(m, func);
    for (size_t i = 0; i < gpuir_func_param_count(m, f); i++)
        if (gpuir_func_param_type(m, f, i).kind == GPUIR_TYPE_MEMREF) return true;
    return false;
}

/* Fresh copies of the n inputs into `copy` (released by the caller), for a
   run that may write them. */
static gpuir_result copy_inputs(gpuir_ctx *ctx, size_t n, const gpuir_array *in, gpuir_array *copy) {
    gpuir_result r = GPUIR_OK;
    memset(copy, 0, n * sizeof *copy);
    for (size_t i = 0; i < n && !r; i++) {
        r = gpuir_array_alloc(ctx, &copy[i], in[i].dtype, in[i].rank, in[i].dims);
        size_t bytes = gpuir_array_count(&in[i]) * gpuir_dtype_size(in[i].dtype);
        if (!r && bytes) memcpy(copy[i].data, in[i].data, bytes);
    }
    return r;
}

static void release_inputs(size_t n, gpuir_array *copy) {
    for (size_t i = 0; i < n; i++) gpuir_array_release(&copy[i]);
}

/* Runs the function on the chosen backend; with --check, the interpreter
   first (on the tensor-level module) and the results compared. A function
   with buffer parameters may write them: the interpreter's run and each
   repeated run but the last get copies, so that every run reads the
   inputs as given. */
static gpuir_result run(gpuir_ctx *ctx, gpuir_module *m, const char *func, const run_args *a, size_t n_in,
                        gpuir_array *in, size_t n_out, gpuir_array *out) {
    gpuir_backend b = backend_of(a->backend);
    char fname[GPUIR_MAX_NAME];            /* lowering moves the module's strings */
    snprintf(fname, sizeof fname, "%s", func);
    gpuir_array *want = (gpuir_array *)calloc(n_out ? n_out : 1, sizeof *want);
    gpuir_array *scratch = (gpuir_array *)calloc(n_in ? n_in : 1, sizeof *scratch);
    bool writes = writes_parameters(m, fname);
    gpuir_result r = want && scratch ? GPUIR_OK : GPUIR_ERR_OUT_OF_MEMORY;
    if (!r && a->check && writes) r = copy_inputs(ctx, n_in, in, scratch);
    if (!r && a->check) r = gpuir_ref_run(m, fname, n_in, writes ? scratch : in, n_out, want);
    if (scratch) release_inputs(n_in, scratch);
    gpuir_program_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.backend = b;
    gpuir_program *p = r ? NULL : gpuir_program_make(m, &desc);
    if (!r && !p) r = gpuir_ctx_result(ctx);
    if (p && b == GPUIR_BACKEND_AUTO && *gpuir_program_why_not_cuda(p))
        cli_err("gpuir-run: running on the emulator: %s\n", gpuir_program_why_not_cuda(p));
    if (p && a->dump_cuda) {
        FILE *f = fopen(a->dump_cuda, "w");
        if (!f || fputs(gpuir_program_source(p), f) < 0) {
            cli_err("gpuir-run: cannot write '%s'\n", a->dump_cuda);
            r = GPUIR_ERR_IO;
        }
        if (f) fclose(f);
    }
    int runs = a->repeat > 0 ? a->repeat : 1;
    for (int i = 0; p && !r && i < runs; i++) {
        bool copy = writes && i + 1 < runs;
        for (size_t k = 0; k < n_out; k++) gpuir_array_release(&out[k]);
        if (copy) r = copy_inputs(ctx, n_in, in, scratch);
        if (!r) r = gpuir_program_run(p, fname, n_in, copy ? scratch : in, n_out, out);
        if (copy) release_inputs(n_in, scratch);
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
    for (size_t k = 0; want && k < n_out; k++) gpuir_array_release(&want[k]);
    free(want);
    free(scratch);
    gpuir_program_destroy(p);
    return r;
}

/* Runs the chosen function of m with its inputs and globals; the arrays
   are as many as it has parameters and results. */
static gpuir_result run_function(gpuir_ctx *ctx, gpuir_module *m, const char *fname, gpuir_func f,
                                 const run_args *a) {
    size_t n_in = gpuir_func_param_count(m, f), n_out = gpuir_func_result_count(m, f);
    gpuir_array *in = (gpuir_array *)calloc(n_in ? n_in : 1, sizeof *in);
    gpuir_array *out = (gpuir_array *)calloc(n_out ? n_out : 1, sizeof *out);
    gpuir_result r = in && out ? GPUIR_OK : GPUIR_ERR_OUT_OF_MEMORY;
    if (!r && (!fits_results(&a->outputs, "--output", fname, n_out) ||
               !fits_results(&a->expected, "--expected_output", fname, n_out) || !outputs_writable(&a->outputs)))
        r = GPUIR_ERR_INVALID_ARGUMENT;
    if (!r && a->import_cache) r = gpuir_ctx_cache_import(ctx, a->import_cache, NULL);
    if (!r) r = bind_globals(ctx, m, a);
    if (!r) r = bind_random_globals(ctx, m, a);
    if (!r) r = load_inputs(ctx, m, f, a, in);
    if (!r) r = run(ctx, m, fname, a, n_in, in, n_out, out);
    if (!r) r = finish_outputs(ctx, a, out, n_out);
    if (!r && a->export_cache) r = gpuir_ctx_cache_export(ctx, a->export_cache, NULL);
    for (size_t i = 0; in && i < n_in; i++) gpuir_array_release(&in[i]);
    for (size_t i = 0; out && i < n_out; i++) gpuir_array_release(&out[i]);
    free(in);
    free(out);
    return r;
}

int main(int argc, char **argv) {
    run_args a;
    bool done;
    int bad = parse_args(argc, argv, &a, &done);
    if (bad || done) { free_args(&a); return bad; }
    gpuir_ctx_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.max_tensor_bytes = RUN_MAX_TENSOR_BYTES;
    gpuir_ctx *ctx = gpuir_ctx_make(&desc);
    if (!ctx) { free_args(&a); return 1; }
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
    if (fname && !f.id) cli_err("gpuir-run: no function named @%s\n", fname);
    if (fname && f.id) r = run_function(ctx, m, fname, f, &a);
    if (gpuir_ctx_result(ctx) != GPUIR_OK) cli_err("%s\n", gpuir_ctx_error(ctx));
    gpuir_ctx_destroy(ctx);
    free_args(&a);
    bool written = cli_close_output("gpuir-run", stdout, NULL);
    return r == GPUIR_OK && written ? 0 : 1;
}

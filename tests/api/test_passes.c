/* The pass manager (registry, pipelines, dumps, timing, errors) and a check
   that the passes keep meaning: every test program under tests/ir gives the
   same results on the reference interpreter before and after
   "decompose,canonicalize". */
#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static const char *softmax_text =
    "func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
    "  %a = constant {value = 1.0} : () -> tensor<2x3xf32>\n"
    "  %b = add %x, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>\n"
    "  %s = softmax %b {axis = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
    "  return %s : tensor<2x3xf32>\n"
    "}\n";

TEST(registry_lists_passes) {
    CHECK(gpuir_pass_count() >= 2);
    bool canon = false, decomp = false;
    for (size_t i = 0; i < gpuir_pass_count(); i++) {
        canon |= strcmp(gpuir_pass_name(i), "canonicalize") == 0;
        decomp |= strcmp(gpuir_pass_name(i), "decompose") == 0;
        CHECK(strlen(gpuir_pass_summary(i)) > 10);
    }
    CHECK(canon && decomp);
    CHECK(gpuir_pass_name(gpuir_pass_count()) == NULL);
}

TEST(unknown_pass_runs_nothing) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, softmax_text);
    char *before = gpuir_module_print(m);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "decompose,no-such-pass", NULL),
                 GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(ctx), "'no-such-pass'") != NULL);
    gpuir_ctx_clear_error(ctx);
    char *after = gpuir_module_print(m);
    CHECK(strcmp(before, after) == 0);        /* decompose did not run either */
    gpuir_free(before);
    gpuir_free(after);
    gpuir_ctx_destroy(ctx);
}

typedef struct captured { char text[1 << 14]; size_t len; } captured;

static void capture(void *user, const char *text) {
    captured *c = (captured *)user;
    size_t n = strlen(text);
    if (c->len + n < sizeof c->text) { memcpy(c->text + c->len, text, n + 1); c->len += n; }
}

TEST(dumps_and_timing_go_to_the_callback) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, softmax_text);
    static captured out;
    out.len = 0;
    out.text[0] = '\0';
    gpuir_pass_desc d;
    memset(&d, 0, sizeof d);
    d.print_ir_before = "decompose";
    d.print_ir_after = "*";
    d.timing = true;
    d.print = capture;
    d.print_user = &out;
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "decompose,canonicalize", &d), GPUIR_OK);
    const char *before = strstr(out.text, "IR Dump Before decompose");
    const char *after = strstr(out.text, "IR Dump After decompose");
    CHECK(before && after && before < after);
    CHECK(before && strstr(before, "softmax") != NULL && strstr(before, "softmax") < after);
    CHECK(strstr(out.text, "IR Dump After canonicalize") != NULL);
    CHECK(strstr(out.text, "IR Dump Before canonicalize") == NULL);
    CHECK(strstr(out.text, "// pass decompose") != NULL);
    CHECK(strstr(out.text, "// pass canonicalize") != NULL);
    gpuir_ctx_destroy(ctx);
}

/* A dump asked for at a pass that does not exist is refused, naming it
   (it used to be ignored silently). */
TEST(dumps_at_an_unknown_pass_are_refused) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, softmax_text);
    gpuir_pass_desc d = {.print_ir_after = "fusee"};
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "decompose", &d), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(ctx), "print_ir_after: there is no pass 'fusee' (the passes: canonicalize, "
                                       "decompose,") != NULL);
    gpuir_ctx_clear_error(ctx);
    memset(&d, 0, sizeof d);
    d.print_ir_before = "";
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "decompose", &d), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(ctx), "print_ir_before: there is no pass ''") != NULL);
    gpuir_ctx_destroy(ctx);
}

TEST(empty_pipeline_is_a_no_op) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, softmax_text);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "", NULL), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, NULL, NULL), GPUIR_OK);
    gpuir_ctx_destroy(ctx);
}

TEST(passes_are_idempotent) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, softmax_text);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "decompose,canonicalize", NULL), GPUIR_OK);
    char *once = gpuir_module_print(m);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "decompose,canonicalize", NULL), GPUIR_OK);
    char *twice = gpuir_module_print(m);
    CHECK(once && twice && strcmp(once, twice) == 0);
    CHECK(once && strstr(once, "softmax") == NULL && strstr(once, "reduce_max") != NULL);
    gpuir_free(once);
    gpuir_free(twice);
    gpuir_ctx_destroy(ctx);
}

/* The launch heuristics plan for the module's device: an f32 1024^2
   matmul has 64 tiles of 128x128, too few for the default 132
   multiprocessors (it takes 64x64 tiles: a 16x16 grid), enough for 64. */
static char *lowered_matmul(gpuir_ctx *ctx, int sm_count) {
    static const char *text =
        "func.func @f(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {\n"
        "  %c = matmul %a, %b : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>\n"
        "  return %c : tensor<1024x1024xf32>\n"
        "}\n";
    gpuir_module *m = parse(ctx, text);
    gpuir_target target = {0, sm_count};
    if (sm_count >= 0) gpuir_module_set_target(m, target);
    CHECK(gpuir_module_target(m).sm_count == (sm_count > 0 ? sm_count : 132));
    CHECK(gpuir_module_target(m).sm == 90);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, GPUIR_SYNC_PIPELINE, NULL), GPUIR_OK);
    char *printed = gpuir_module_print(m);
    gpuir_module_destroy(m);
    return printed;
}

TEST(the_matmul_heuristic_plans_for_the_module_sm_count) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char *h100 = lowered_matmul(ctx, -1), *unset = lowered_matmul(ctx, 0), *small = lowered_matmul(ctx, 64);
    CHECK(h100 && strstr(h100, "grid = [16, 16, 1]") != NULL);
    CHECK(unset && strcmp(unset, h100) == 0);
    CHECK(small && strstr(small, "grid = [8, 8, 1]") != NULL);
    CHECK(gpuir_module_target(NULL).sm_count == 0 && gpuir_module_target(NULL).sm == 0);
    gpuir_free(h100);
    gpuir_free(unset);
    gpuir_free(small);
    gpuir_ctx_destroy(ctx);
}

/* The runner skips its first verification only for a module that passed
   the verifier and has not changed since: a pass run without the verifier,
   or a function still open, and the module is checked again. */
TEST(runner_verifies_a_changed_module) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = parse(ctx, softmax_text);
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "canonicalize", NULL), GPUIR_OK);
    gpuir_pass_desc d = {.disable_verify = true};
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "configure", &d), GPUIR_OK);
    const gpuir__func *f = &m->funcs[0];          /* as if configure had broken it */
    gpuir__value *res = gpuir__value_at(m, gpuir__op_at(m, f->ops[0])->result);
    res->type.dims[0] += 1;
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "canonicalize", NULL), GPUIR_ERR_SHAPE);
    CHECK(strstr(gpuir_ctx_error(ctx), "after pass") == NULL);   /* caught before it */
    gpuir_ctx_clear_error(ctx);
    res->type.dims[0] -= 1;
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "canonicalize", NULL), GPUIR_OK);
    gpuir_func_begin(m, "g");                     /* left open */
    CHECK_RESULT(ctx, gpuir_module_run_passes(m, "canonicalize", NULL), GPUIR_ERR_VERIFY);
    CHECK(strstr(gpuir_ctx_error(ctx), "still open") != NULL);
    CHECK(strstr(gpuir_ctx_error(ctx), "after pass") == NULL);
    gpuir_ctx_destroy(ctx);
}

/* ---- the passes keep meaning, over the test corpus ---- */

/* The size every dynamic dim (`?`) of a parameter gets in these runs. */
#define DYNAMIC_SIZE 3

/* The most elements a compared function's parameter or result may have:
   65536, or $GPUIR_TEST_CORPUS_ELEMENTS (check-valgrind.sh gives fewer:
   the interpreter runs ~50x slower under valgrind, and what it checks
   there is the passes' and the interpreter's memory, not large sums). */
static double corpus_elements(void) {
    const char *v = getenv("GPUIR_TEST_CORPUS_ELEMENTS");
    return v && atof(v) > 0 ? atof(v) : 65536;
}

/* Small enough for the interpreter to run quickly (the seed matmul,
   5376x2048 by 2048x5376, is left to the text tests), `?` taken as
   DYNAMIC_SIZE. */
static bool small(gpuir_module *m, gpuir_func f) {
    double limit = corpus_elements();
    for (size_t i = 0; i < gpuir_func_param_count(m, f) + gpuir_func_result_count(m, f); i++) {
        size_t np = gpuir_func_param_count(m, f);
        gpuir_type t = i < np ? gpuir_func_param_type(m, f, i) : gpuir_func_result_type(m, f, i - np);
        double count = 1;
        for (int d = 0; d < t.rank; d++) count *= t.dims[d] == GPUIR_DYN ? DYNAMIC_SIZE : (double)t.dims[d];
        if (count > limit) return false;
    }
    return true;
}

/* Binds every global of m to random data from `seed`. */
static void bind_random_globals(gpuir_ctx *ctx, gpuir_module *m, uint64_t seed) {
    for (size_t i = 0; i < gpuir_module_global_count(m); i++) {
        gpuir_type t = gpuir_module_global_type(m, i);
        gpuir_array w;
        if (gpuir_array_alloc(ctx, &w, t.dtype, t.rank, t.dims) != GPUIR_OK) continue;
        gpuir_array_fill_random(&w, seed + i);
        gpuir_module_bind_global(m, gpuir_module_global_name(m, i), &w);
        gpuir_array_release(&w);
    }
}

/* Runs function `name` of both modules on the same random inputs; returns
   false if the results differ. A function the reference rejects is skipped. */
static bool same_results(gpuir_ctx *ctx, gpuir_module *a, gpuir_module *b, const char *name,
                         const char *file) {
    gpuir_func f = gpuir_module_find_func(a, name);
    size_t n_in = gpuir_func_param_count(a, f), n_out = gpuir_func_result_count(a, f);
    if (!small(a, f) || n_in > 16 || n_out > 16) return true;
    gpuir_array in[16], ra[16], rb[16];
    bool ok = true;
    for (size_t i = 0; i < n_in; i++) {
        gpuir_type t = gpuir_func_param_type(a, f, i);
        for (int d = 0; d < t.rank; d++)
            if (t.dims[d] == GPUIR_DYN) t.dims[d] = DYNAMIC_SIZE;
        gpuir_array_alloc(ctx, &in[i], t.dtype, t.rank, t.dims);
        gpuir_array_fill_random(&in[i], 7 + i);
    }
    if (gpuir_ref_run(a, name, n_in, in, n_out, ra) != GPUIR_OK) {
        gpuir_ctx_clear_error(ctx);             /* an expected-failure program */
    } else {
        if (gpuir_ref_run(b, name, n_in, in, n_out, rb) != GPUIR_OK) {
            fprintf(stderr, "%s: @%s fails after the passes: %s\n", file, name, gpuir_ctx_error(ctx));
            gpuir_ctx_clear_error(ctx);
            ok = false;
        } else {
            for (size_t i = 0; i < n_out; i++) {
                double rtol, atol;
                gpuir_dtype_tolerance(ra[i].dtype, &rtol, &atol);
                /* decompose rounds softmax's intermediates to the dtype */
                if (gpuir_array_compare(ctx, &rb[i], &ra[i], rtol * 4, atol * 4) != GPUIR_OK) {
                    fprintf(stderr, "%s: @%s result %zu changed: %s\n", file, name, i, gpuir_ctx_error(ctx));
                    gpuir_ctx_clear_error(ctx);
                    ok = false;
                }
                gpuir_array_release(&rb[i]);
            }
        }
        for (size_t i = 0; i < n_out; i++) gpuir_array_release(&ra[i]);
    }
    for (size_t i = 0; i < n_in; i++) gpuir_array_release(&in[i]);
    return ok;
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = (char *)malloc((size_t)size + 1);
    *n = text ? fread(text, 1, (size_t)size, f) : 0;
    if (text) text[*n] = '\0';
    fclose(f);
    return text;
}

/* Checks one `// -----` chunk through one pipeline: parsed twice, one copy
   through the passes, the same results from both. A pipeline that stops on
   what it does not support yet (dynamic shapes) is skipped. */
static bool check_chunk_with(const char *text, size_t len, const char *file, const char *pipeline) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *a = gpuir_module_parse(ctx, text, len, file);
    gpuir_module *b = a ? gpuir_module_parse(ctx, text, len, file) : NULL;
    bool ok = true;
    if (!a || !b) {                 /* not a valid program: nothing to compare */
        gpuir_ctx_destroy(ctx);
        return true;
    }
    bind_random_globals(ctx, a, 99);
    bind_random_globals(ctx, b, 99);
    if (gpuir_module_run_passes(b, pipeline, NULL) != GPUIR_OK) {
        if (strstr(gpuir_ctx_error(ctx), "not supported")) {     /* a known limitation */
            gpuir_ctx_destroy(ctx);
            return true;
        }
        fprintf(stderr, "%s: %s fails: %s\n", file, pipeline, gpuir_ctx_error(ctx));
        ok = false;
    }
    for (size_t i = 0; ok && i < gpuir_module_func_count(a); i++)
        ok = same_results(ctx, a, b, gpuir_func_name(a, gpuir_module_func_at(a, i)), file);
    gpuir_ctx_destroy(ctx);
    return ok;
}

static bool check_chunk(const char *text, size_t len, const char *file) {
    return check_chunk_with(text, len, file, "decompose,canonicalize") &&
           check_chunk_with(text, len, file, "decompose,canonicalize,fuse,bufferize,outline") &&
           check_chunk_with(text, len, file, "decompose,canonicalize,stage-matmul,fuse,bufferize,outline,place,"
                                            "configure,plan-shared-memory");
}

static int checked_files;

static void check_file(const char *path) {
    size_t n;
    char *text = slurp(path, &n);
    if (!text) { CHECK(!"cannot read a test file"); return; }
    if (strstr(text, "RUN: not ")) { free(text); return; }   /* expected-error files */
    checked_files++;
    char *p = text;
    for (;;) {
        char *sep = strstr(p, "\n// -----");
        size_t len = sep ? (size_t)(sep - p) : strlen(p);
        if (!check_chunk(p, len, path)) { CHECK(!"passes changed a result"); break; }
        if (!sep) break;
        p = sep + 9;
    }
    free(text);
}

static void walk(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = strlen(path);
        if (len > 4 && strcmp(path + len - 4, ".gir") == 0) check_file(path);
        else walk(path);
    }
    closedir(d);
}

TEST(passes_keep_results_on_the_corpus) {
    checked_files = 0;
    walk("tests/ir");
    CHECK(checked_files >= 2);
}

/* Every elementwise op (UNARY, BINARY) has its CUDA spelling in the op
   table, so adding an op is one row and a missing spelling fails here,
   not in a kernel that renders as another op. */
TEST(op_table_cuda_spellings) {
    for (int k = 1; k < GPUIR_OP_COUNT; k++) {
        const gpuir__op_info *info = gpuir__info((gpuir_op_kind)k);
        bool elementwise = info->cls == GPUIR__CLASS_UNARY || info->cls == GPUIR__CLASS_BINARY;
        if (elementwise && (!info->cuda || !*info->cuda)) fprintf(stderr, "%s has no cuda spelling\n", info->mnemonic);
        CHECK(!elementwise || (info->cuda && *info->cuda));
        CHECK(elementwise || !info->cuda);
    }
}

int main(void) {
    RUN(registry_lists_passes);
    RUN(unknown_pass_runs_nothing);
    RUN(dumps_and_timing_go_to_the_callback);
    RUN(dumps_at_an_unknown_pass_are_refused);
    RUN(empty_pipeline_is_a_no_op);
    RUN(passes_are_idempotent);
    RUN(the_matmul_heuristic_plans_for_the_module_sm_count);
    RUN(runner_verifies_a_changed_module);
    RUN(passes_keep_results_on_the_corpus);
    RUN(op_table_cuda_spellings);
    return CHECK_EXIT();
}

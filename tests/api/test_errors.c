/* Negative tests: every code of GPUIR_RESULT_TABLE is triggered through the
   public API and asserted, with the code, gpuir_ctx_result and a message that
   names the thing (op, operand, shape, file:line:col). Also: sticky errors,
   gpuir_ctx_clear_error, and bad input that must be refused without a crash,
   a leak or an absurd allocation. Tests that could crash or need a memory
   limit run in a child process (fork). */
#define _XOPEN_SOURCE 700
#include "../../gpuir.h"
#include "../check.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------ */

/* The code returned, the code kept in the context, and a message that says it. */
#define CHECK_FAILED(ctx, got, want)                                                   \
    do {                                                                               \
        CHECK_RESULT(ctx, (got), (want));                                              \
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), (want));                              \
        CHECK(gpuir_ctx_error(ctx)[0] != '\0');                                        \
    } while (0)

/* A text that must not parse: the code it fails with and a part of the
   message (file:line:col included). */
typedef struct parse_failure {
    const char *text, *path;
    gpuir_result code;
    const char *message;
} parse_failure;

/* Parses each text in one context, clearing the error between them. */
static void check_parse_failures(const parse_failure *cases, size_t n) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    for (size_t i = 0; i < n; i++) {
        CHECK(parse_as(ctx, cases[i].text, cases[i].path) == NULL);
        CHECK_FAILED(ctx, gpuir_ctx_result(ctx), cases[i].code);
        CHECK_MSG(ctx, cases[i].message);
        gpuir_ctx_clear_error(ctx);
    }
    gpuir_ctx_destroy(ctx);
}

static gpuir_type tt(gpuir_dtype dt, int rank, int64_t d0, int64_t d1) {
    int64_t dims[2] = {d0, d1};
    return gpuir_tensor_type(dt, rank, dims);
}

/* A module with an open function @f and one parameter %x of type t. */
static gpuir_module *open_func(gpuir_ctx *ctx, gpuir_type t, gpuir_value *x) {
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    *x = gpuir_param(m, "x", t);
    return m;
}


/* Runs fn in a child process with the address space limited to `limit`
   bytes (0: no limit). Returns the child's exit code, or 128 + the signal
   that ended it. The child's checks report on stderr. */
static int in_child(int (*fn)(void), rlim_t limit) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (limit) {
            struct rlimit rl = {limit, limit};
            if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(90);
        }
        int rc = fn();
        fflush(stderr);
        _exit(rc);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Builds a version 1.0 .npy image from a header dict and raw data. */
static size_t make_npy(unsigned char *buf, const char *dict, const void *data, size_t n) {
    size_t h = strlen(dict);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(h & 0xff);
    buf[9] = (unsigned char)(h >> 8);
    memcpy(buf + 10, dict, h);
    if (n) memcpy(buf + 10 + h, data, n);
    return 10 + h + n;
}

/* ---- every code has a name and a message --------------------------------- */

TEST(result_names_cover_the_table) {
    for (int r = 0; r < GPUIR_RESULT_COUNT; r++) {
        CHECK(strncmp(gpuir_result_name((gpuir_result)r), "GPUIR_", 6) == 0);
        CHECK(strcmp(gpuir_result_name((gpuir_result)r), "GPUIR_(unknown)") != 0);
        CHECK(gpuir_result_string((gpuir_result)r)[0] != '\0');
    }
    CHECK(strcmp(gpuir_result_name(GPUIR_ERR_MISMATCH), "GPUIR_ERR_MISMATCH") == 0);
    CHECK(strcmp(gpuir_result_name(GPUIR_RESULT_COUNT), "GPUIR_(unknown)") == 0);
    CHECK(strcmp(gpuir_result_name((gpuir_result)-1), "GPUIR_(unknown)") == 0);
}

TEST(a_fresh_context_has_no_error) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    CHECK(strcmp(gpuir_ctx_error(ctx), "") == 0);
    gpuir_ctx_destroy(ctx);
}

/* A name that is looked up (a function to run, a global to bind, a pass)
   and is not there is named in the error, clipped at the longest a name may
   be: a megabyte of name was echoed whole, twice for a pipeline. */
TEST(a_name_looked_up_in_vain_is_clipped_in_its_error) {
    static const char text[] =
        "global @G : tensor<4xf32>\n"
        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %g = get_global {name = @G} : () -> tensor<4xf32>\n"
        "  %y = add %x, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "  return %y : tensor<4xf32>\n}\n";
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "g.gir");
    size_t n = (size_t)1 << 20;
    char *big = (char *)malloc(n + 1);
    if (!big || !m) { free(big); gpuir_ctx_destroy(ctx); CHECK(m != NULL); return; }
    memset(big, 'z', n);
    big[n] = '\0';
    float zeros[4] = {0};
    gpuir_array g = {GPUIR_F32, 1, {4}, zeros}, out[1];
    gpuir_program *p = gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU});
    CHECK(p != NULL);
    gpuir_arg in = gpuir_arg_host(g), res = {GPUIR_ARG_NONE, {0}, {0}};
    gpuir_run_desc rd = {big, 1, &in, 1, &res, NULL};
    gpuir_pass_desc pd = {0};
    pd.print_ir_after = big;
    for (int call = 0; call < 7; call++) {
        gpuir_result r = call == 0 ? gpuir_module_bind_global(m, big, &g)
                       : call == 1 ? gpuir_ref_run(m, big, 1, &g, 1, out)
                       : call == 2 ? gpuir_program_run(p, big, 1, &g, 1, out)
                       : call == 3 ? gpuir_program_run_args(p, &rd)
                       : call == 4 ? gpuir_program_bind_global_buffer(p, big, (gpuir_buffer){0})
                       : call == 5 ? gpuir_module_run_passes(m, big, NULL)
                                   : gpuir_module_run_passes(m, "canonicalize", &pd);
        CHECK(r != GPUIR_OK);
        CHECK(strstr(gpuir_ctx_error(ctx), "zzzzzzzz...") != NULL);      /* named, clipped */
        if (strlen(gpuir_ctx_error(ctx)) >= 1000)
            fprintf(stderr, "call %d: an error of %zu bytes\n", call, strlen(gpuir_ctx_error(ctx)));
        CHECK(strlen(gpuir_ctx_error(ctx)) < 1000);
        gpuir_ctx_clear_error(ctx);
    }
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
    free(big);
}

/* A run given more or fewer outputs than its function returns is refused
   naming the function, before any of its work: it ran the whole function
   first and then said "the function returns 1 values, 2 outputs given",
   naming none. */
TEST(a_wrong_output_count_is_refused_before_the_run_naming_the_function) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    const char *text = NEG_TEXT;
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "f.gir");
    gpuir_program *p = gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU});
    CHECK(p != NULL);
    float x[4] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 1, {4}, x}, out[2];
    CHECK_FAILED(ctx, gpuir_ref_run(m, "f", 1, &in, 2, out), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "@f returns 1 values, 2 outputs given");
    gpuir_ctx_clear_error(ctx);
    CHECK_FAILED(ctx, gpuir_program_run(p, "f", 1, &in, 0, out), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "@f returns 1 values, 0 outputs given");
    gpuir_ctx_clear_error(ctx);
    gpuir_arg ia = gpuir_arg_host(in), oa[2] = {{GPUIR_ARG_NONE, {0}, {0}}, {GPUIR_ARG_NONE, {0}, {0}}};
    gpuir_run_desc rd = {"f", 1, &ia, 2, oa, NULL};
    CHECK_FAILED(ctx, gpuir_program_run_args(p, &rd), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "@f returns 1 values, 2 outputs given");
    gpuir_ctx_clear_error(ctx);
    gpuir_program_stats st = gpuir_program_get_stats(p);
    CHECK(st.launches == 0 && st.h2d_copies == 0);            /* nothing ran */
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
}

/* ---- GPUIR_ERR_INVALID_ARGUMENT ------------------------------------------ */

TEST(invalid_argument_param_without_open_function) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_value v = gpuir_param(m, "x", tt(GPUIR_F32, 1, 4, 0));
    CHECK(v.id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "param");
    CHECK_MSG(ctx, "no open function");
    gpuir_ctx_destroy(ctx);
}

TEST(invalid_argument_names_and_kinds) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    CHECK(gpuir_func_begin(m, "9lives").id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "'9lives' is not a valid name");
    gpuir_ctx_clear_error(ctx);
    char longest[GPUIR_MAX_NAME + 1];                /* one byte past the most a name may have */
    memset(longest, 'a', GPUIR_MAX_NAME);
    longest[GPUIR_MAX_NAME] = '\0';
    CHECK(gpuir_func_begin(m, longest).id == 0);
    CHECK_MSG(ctx, "is 128 bytes, more than the 127 a name may have");      /* it said "not a valid name" */
    CHECK(strlen(gpuir_ctx_error(ctx)) < 200);                                 /* the name clipped */
    gpuir_ctx_clear_error(ctx);
    longest[GPUIR_MAX_NAME - 1] = '\0';
    CHECK(gpuir_func_begin(gpuir_module_make(ctx), longest).id != 0);       /* 127 bytes: taken */

    CHECK(gpuir_func_begin(m, "f").id != 0);
    CHECK(gpuir_param(m, "a b", tt(GPUIR_F32, 1, 4, 0)).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "'a b'");
    gpuir_ctx_clear_error(ctx);

    gpuir_value x = gpuir_param(m, "x", tt(GPUIR_F32, 1, 4, 0));
    CHECK(gpuir_unary(m, GPUIR_OP_ADD, x).id == 0);          /* add is not unary */
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "not unary");
    gpuir_ctx_clear_error(ctx);

    gpuir_value bogus = {12345};
    CHECK(gpuir_neg(m, bogus).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "neg: operand #0 is not a value");
    gpuir_ctx_clear_error(ctx);

    CHECK(gpuir_constant_dense(m, tt(GPUIR_F32, 1, 4, 0), NULL).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "constant: data is NULL");
    gpuir_ctx_destroy(ctx);
}

TEST(invalid_argument_parse_null_text) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    CHECK(gpuir_module_parse(ctx, NULL, 10, "x.gir") == NULL);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "text is NULL");
    gpuir_ctx_destroy(ctx);
}

TEST(invalid_argument_ref_run_wrong_input_count) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_value x;
    gpuir_module *m = open_func(ctx, tt(GPUIR_F32, 1, 4, 0), &x);
    gpuir_value y = gpuir_neg(m, x);
    CHECK_RESULT(ctx, gpuir_func_return(m, 1, &y), GPUIR_OK);
    gpuir_array out[2];
    CHECK_FAILED(ctx, gpuir_ref_run(m, "f", 0, NULL, 1, out), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "@f takes 1 inputs, 0 given");
    gpuir_ctx_clear_error(ctx);

    float data[4] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 1, {4}, data};
    CHECK_FAILED(ctx, gpuir_ref_run(m, "f", 1, &in, 2, out), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "returns 1 values, 2 outputs given");
    CHECK(out[0].data == NULL && out[1].data == NULL);     /* nothing handed out */
    gpuir_ctx_clear_error(ctx);

    in.data = NULL;
    CHECK_FAILED(ctx, gpuir_ref_run(m, "f", 1, &in, 1, out), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "input #0 has no data");
    gpuir_ctx_destroy(ctx);
}

/* ---- GPUIR_ERR_OUT_OF_MEMORY ----------------------------------------------
   In a child with RLIMIT_AS at 1 GiB, ask for 4 GiB: within gpuir's limit
   (16 GiB by default), beyond what the process may map. */

#define OOM_LIMIT ((rlim_t)1 << 30)

static int child_array_alloc_oom(void) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_array a;
    int64_t dims[2] = {1 << 15, 1 << 15};                 /* 2^30 f32: 4 GiB */
    gpuir_result r = gpuir_array_alloc(ctx, &a, GPUIR_F32, 2, dims);
    int ok = r == GPUIR_ERR_OUT_OF_MEMORY && gpuir_ctx_result(ctx) == GPUIR_ERR_OUT_OF_MEMORY &&
             strstr(gpuir_ctx_error(ctx), "out of host memory") && a.data == NULL && a.rank == 0;
    if (!ok) fprintf(stderr, "array_alloc: got %s: %s\n", gpuir_result_name(r), gpuir_ctx_error(ctx));
    gpuir_ctx_destroy(ctx);
    return ok ? 0 : 1;
}

static int child_ref_run_oom(void) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "big");
    gpuir_value c = gpuir_constant_splat(m, tt(GPUIR_F32, 2, 1 << 15, 1 << 15), 1.0);
    gpuir_func_return(m, 1, &c);
    gpuir_array out;
    gpuir_result r = gpuir_ctx_result(ctx) ? gpuir_ctx_result(ctx) : gpuir_ref_run(m, "big", 0, NULL, 1, &out);
    int ok = r == GPUIR_ERR_OUT_OF_MEMORY && gpuir_ctx_result(ctx) == GPUIR_ERR_OUT_OF_MEMORY &&
             strstr(gpuir_ctx_error(ctx), "out of host memory") &&
             strstr(gpuir_ctx_error(ctx), "@big") && strstr(gpuir_ctx_error(ctx), "constant") &&
             out.data == NULL;
    if (!ok) fprintf(stderr, "ref_run: got %s: %s\n", gpuir_result_name(r), gpuir_ctx_error(ctx));
    gpuir_ctx_destroy(ctx);
    return ok ? 0 : 1;
}

/* Parsing describes a 16 GiB constant without allocating it. */
static int child_parse_does_not_allocate_constants(void) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *text = "func.func @f() -> tensor<65536x65536xf32> {\n"
                       "  %0 = constant {value = 1.0} : () -> tensor<65536x65536xf32>\n"
                       "  return %0 : tensor<65536x65536xf32>\n}\n";
    gpuir_module *m = parse_as(ctx, text, "big.gir");
    char *printed = m ? gpuir_module_print(m) : NULL;
    int ok = m && printed && gpuir_ctx_result(ctx) == GPUIR_OK;
    if (!ok) fprintf(stderr, "parse under a 1 GiB limit: %s\n", gpuir_ctx_error(ctx));
    gpuir_free(printed);
    gpuir_ctx_destroy(ctx);
    return ok ? 0 : 1;
}

TEST(out_of_memory_array_alloc) {
    if (TEST_ASAN) SKIP("AddressSanitizer reserves more address space than RLIMIT_AS allows");
    CHECK(in_child(child_array_alloc_oom, OOM_LIMIT) == 0);
}

TEST(out_of_memory_ref_run) {
    if (TEST_ASAN) SKIP("AddressSanitizer reserves more address space than RLIMIT_AS allows");
    CHECK(in_child(child_ref_run_oom, OOM_LIMIT) == 0);
}

TEST(parse_of_a_huge_constant_allocates_nothing) {
    if (TEST_ASAN) SKIP("AddressSanitizer reserves more address space than RLIMIT_AS allows");
    CHECK(in_child(child_parse_does_not_allocate_constants, OOM_LIMIT) == 0);
}

/* ---- GPUIR_ERR_LIMIT -------------------------------------------------------- */

TEST(limit_rank_above_8) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(gpuir_param(m, "x", gpuir_tensor_type(GPUIR_F32, 9, dims)).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "rank 9 is outside 0..8");
    gpuir_ctx_clear_error(ctx);

    gpuir_array a;
    CHECK_FAILED(ctx, gpuir_array_alloc(ctx, &a, GPUIR_F32, 9, dims), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "rank 9");
    CHECK(a.data == NULL);
    gpuir_ctx_clear_error(ctx);

    CHECK_FAILED(ctx, gpuir_array_alloc(ctx, &a, GPUIR_F32, -1, dims), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "rank -1");
    gpuir_ctx_destroy(ctx);
}

TEST(limit_dims_whose_product_overflows) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    CHECK(gpuir_param(m, "x", tt(GPUIR_F32, 2, (int64_t)1 << 32, (int64_t)1 << 32)).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "overflows 2^63");
    gpuir_ctx_clear_error(ctx);

    /* the count fits in int64, the byte size does not */
    CHECK(gpuir_param(m, "y", tt(GPUIR_F32, 2, (int64_t)1 << 31, (int64_t)1 << 31)).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "tensor<2147483648x2147483648xf32>");
    gpuir_ctx_clear_error(ctx);

    gpuir_array a;
    int64_t dims[3] = {INT64_MAX, 2, 2};
    CHECK_FAILED(ctx, gpuir_array_alloc(ctx, &a, GPUIR_I64, 3, dims), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "overflows 2^63");
    gpuir_ctx_destroy(ctx);
}

TEST(limit_max_tensor_bytes) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.max_tensor_bytes = 1024});
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    CHECK(gpuir_constant_splat(m, tt(GPUIR_F32, 1, 256, 0), 0.0).id != 0);  /* exactly 1024 */
    CHECK(gpuir_constant_splat(m, tt(GPUIR_F32, 1, 257, 0), 0.0).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "constant");
    CHECK_MSG(ctx, "tensor<257xf32>");
    CHECK_MSG(ctx, "1024 bytes");
    gpuir_ctx_clear_error(ctx);

    gpuir_array a;
    int64_t dims[1] = {1025};
    CHECK_FAILED(ctx, gpuir_array_alloc(ctx, &a, GPUIR_F16, 1, dims), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "tensor<1025xf16>");
    gpuir_ctx_clear_error(ctx);

    /* a huge splat in text: the default 16 GiB limit */
    gpuir_ctx *big = gpuir_ctx_make(NULL);
    const char *text = "func.func @f() {\n"
                       "  %0 = constant {value = 0.0} : () -> tensor<1000000x1000000xf32>\n"
                       "  return\n}\n";
    CHECK(parse_as(big, text, "splat.gir") == NULL);
    CHECK_FAILED(big, gpuir_ctx_result(big), GPUIR_ERR_LIMIT);
    CHECK_MSG(big, "splat.gir:2:39: error:");
    CHECK_MSG(big, "tensor<1000000x1000000xf32>");
    gpuir_ctx_destroy(big);
    gpuir_ctx_destroy(ctx);
}

TEST(limit_integer_literal_2_pow_63) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *text = "func.func @f() -> tensor<2xi64> {\n"
                       "  %0 = constant {value = 9223372036854775808} : () -> tensor<2xi64>\n"
                       "  return %0 : tensor<2xi64>\n}\n";
    CHECK(parse_as(ctx, text, "lit.gir") == NULL);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "lit.gir:2:26: error:");
    CHECK_MSG(ctx, "9223372036854775808");
    gpuir_ctx_clear_error(ctx);

    /* INT64_MIN itself is fine */
    const char *ok = "func.func @f() -> tensor<2xi64> {\n"
                     "  %0 = constant {value = -9223372036854775808} : () -> tensor<2xi64>\n"
                     "  return %0 : tensor<2xi64>\n}\n";
    gpuir_module *m = parse_as(ctx, ok, "lit.gir");
    CHECK(m != NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    gpuir_ctx_destroy(ctx);
}

TEST(limit_too_many_operands) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_value x;
    gpuir_module *m = open_func(ctx, tt(GPUIR_F32, 1, 4, 0), &x);
    gpuir_value many[GPUIR_MAX_OPERANDS + 1];
    for (int i = 0; i <= GPUIR_MAX_OPERANDS; i++) many[i] = x;
    CHECK_FAILED(ctx, gpuir_func_return(m, GPUIR_MAX_OPERANDS + 1, many), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "return: 65 results");
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_func_return(m, GPUIR_MAX_OPERANDS, many), GPUIR_OK);
    gpuir_ctx_destroy(ctx);
}

/* ---- GPUIR_ERR_PARSE -------------------------------------------------------- */

TEST(parse_error_names_file_line_col) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *text = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                       "  %0 = neg %a : (tensor<4xf32> -> tensor<4xf32>\n"
                       "  return %0 : tensor<4xf32>\n}\n";
    CHECK(parse_as(ctx, text, "dir/p.gir") == NULL);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_PARSE);
    CHECK_MSG(ctx, "dir/p.gir:2:32: error: expected ')'");
    gpuir_ctx_clear_error(ctx);

    CHECK(parse_as(ctx, "func.func @f() {\n  return\n}\n\xff", NULL) == NULL);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_PARSE);
    CHECK_MSG(ctx, "<input>:4:1: error:");
    CHECK_MSG(ctx, "byte 0xff");
    gpuir_ctx_clear_error(ctx);

    /* the length is honoured: the text need not be terminated */
    const char *good = "func.func @f() {\n  return\n}\nGARBAGE";
    CHECK(gpuir_module_parse(ctx, good, strlen(good) - 7, "n.gir") != NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    CHECK(gpuir_module_parse(ctx, good, strlen(good) - 3, "n.gir") == NULL);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_PARSE);
    CHECK_MSG(ctx, "n.gir:4:1: error:");
    CHECK_MSG(ctx, "'GARB'");
    gpuir_ctx_destroy(ctx);
}

TEST(parse_error_unknown_op_and_undefined_value) {
    static const parse_failure cases[] = {
        {"func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
         "  %0 = frob %a : (tensor<4xf32>) -> tensor<4xf32>\n"
         "  return %0 : tensor<4xf32>\n}\n",
         "u.gir", GPUIR_ERR_PARSE,
         "u.gir:2:3: error: unknown op 'frob'"},
        {"func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
         "  %0 = neg %b : (tensor<4xf32>) -> tensor<4xf32>\n"
         "  return %0 : tensor<4xf32>\n}\n",
         "u.gir", GPUIR_ERR_PARSE,
         "u.gir:2:12: error: use of undefined value %b"},
    };
    check_parse_failures(cases, sizeof cases / sizeof cases[0]);
}

/* ---- GPUIR_ERR_SHAPE -------------------------------------------------------- */

TEST(shape_builder_add_names_op_operands_and_shapes) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value a = gpuir_param(m, "a", tt(GPUIR_F32, 2, 4, 8));
    gpuir_value b = gpuir_param(m, "b", tt(GPUIR_F32, 2, 4, 7));
    CHECK(gpuir_add(m, a, b).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_SHAPE);
    CHECK_MSG(ctx, "add: operand #0 tensor<4x8xf32> and operand #1 tensor<4x7xf32> do not broadcast");
    CHECK_MSG(ctx, "(8 vs 7)");
    gpuir_ctx_destroy(ctx);
}

TEST(shape_builder_matmul_reshape_broadcast_cast) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value a = gpuir_param(m, "a", tt(GPUIR_F32, 2, 4, 8));
    gpuir_value b = gpuir_param(m, "b", tt(GPUIR_F32, 2, 7, 3));
    CHECK(gpuir_matmul(m, a, b, 0).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_SHAPE);
    CHECK_MSG(ctx, "matmul: contraction dims differ");
    CHECK_MSG(ctx, "tensor<4x8xf32> has K=8");
    CHECK_MSG(ctx, "tensor<7x3xf32> has K=7");
    gpuir_ctx_clear_error(ctx);

    int64_t d33[1] = {33};
    CHECK(gpuir_reshape(m, a, 1, d33).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_SHAPE);
    CHECK_MSG(ctx, "reshape: operand tensor<4x8xf32> has 32 elements, result tensor<33xf32> has 33");
    gpuir_ctx_clear_error(ctx);

    int64_t d49[2] = {4, 9};
    CHECK(gpuir_broadcast(m, a, 2, d49).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_SHAPE);
    CHECK_MSG(ctx, "broadcast: operand tensor<4x8xf32> does not broadcast to tensor<4x9xf32>");
    gpuir_ctx_clear_error(ctx);

    CHECK(gpuir_matmul(m, a, a, 0).id == 0);              /* 4x8 @ 4x8 */
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_SHAPE);
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_matmul(m, a, a, GPUIR_TRANSPOSE_B).id != 0); /* 4x8 @ (4x8)^T */
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    gpuir_value h = gpuir_cast(m, a, GPUIR_F16);
    CHECK(gpuir_matmul(m, h, h, GPUIR_TRANSPOSE_B | GPUIR_TF32).id == 0); /* tf32 needs f32 */
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_DTYPE);
    CHECK_MSG(ctx, "matmul: tf32 rounds f32 operands, got tensor<4x8xf16>");
    gpuir_ctx_clear_error(ctx);

    int64_t neg[2] = {4, -2};
    CHECK(gpuir_param(m, "n", gpuir_tensor_type(GPUIR_F32, 2, neg)).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_SHAPE);
    CHECK_MSG(ctx, "dimension 1 is -2");
    gpuir_ctx_destroy(ctx);
}

TEST(shape_ref_run_input_of_the_wrong_shape) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_value x;
    gpuir_module *m = open_func(ctx, tt(GPUIR_F32, 2, 2, 3), &x);
    gpuir_value y = gpuir_relu(m, x);
    gpuir_func_return(m, 1, &y);
    float data[6] = {0};
    gpuir_array in = {GPUIR_F32, 2, {3, 2}, data}, out;
    CHECK_FAILED(ctx, gpuir_ref_run(m, "f", 1, &in, 1, &out), GPUIR_ERR_SHAPE);
    CHECK_MSG(ctx, "input #0: parameter %x is tensor<2x3xf32>, the array is tensor<3x2xf32>");
    CHECK(out.data == NULL);
    gpuir_ctx_destroy(ctx);
}

/* ---- GPUIR_ERR_DTYPE -------------------------------------------------------- */

TEST(dtype_builder_mixed_and_float_only) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value a = gpuir_param(m, "a", tt(GPUIR_F32, 1, 4, 0));
    gpuir_value i = gpuir_param(m, "i", tt(GPUIR_I32, 1, 4, 0));
    CHECK(gpuir_add(m, a, i).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_DTYPE);
    CHECK_MSG(ctx, "add: operand #0 tensor<4xf32> and operand #1 tensor<4xi32> differ in element type");
    gpuir_ctx_clear_error(ctx);

    CHECK(gpuir_exp(m, i).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_DTYPE);
    CHECK_MSG(ctx, "exp: operand #0 is tensor<4xi32>; exp needs a float element type");
    gpuir_ctx_clear_error(ctx);

    CHECK(gpuir_param(m, "bad", tt((gpuir_dtype)77, 1, 4, 0)).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_DTYPE);
    CHECK_MSG(ctx, "invalid element type 77");
    gpuir_ctx_clear_error(ctx);

    CHECK(gpuir_cast(m, a, GPUIR_DTYPE_INVALID).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_DTYPE);
    CHECK_MSG(ctx, "cast");
    gpuir_ctx_destroy(ctx);
}

TEST(dtype_ref_run_and_bind_global) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value x = gpuir_param(m, "x", tt(GPUIR_F32, 1, 4, 0));
    gpuir_value w = gpuir_global(m, "W", tt(GPUIR_F32, 1, 4, 0));
    gpuir_value y = gpuir_add(m, x, w);
    gpuir_func_return(m, 1, &y);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);

    int32_t idata[4] = {0};
    gpuir_array in = {GPUIR_I32, 1, {4}, idata}, out;
    CHECK_FAILED(ctx, gpuir_ref_run(m, "f", 1, &in, 1, &out), GPUIR_ERR_DTYPE);
    CHECK_MSG(ctx, "parameter %x is tensor<4xf32>, the array is tensor<4xi32>");
    gpuir_ctx_clear_error(ctx);

    CHECK_FAILED(ctx, gpuir_module_bind_global(m, "W", &in), GPUIR_ERR_DTYPE);
    CHECK_MSG(ctx, "bind_global: @W is tensor<4xf32>, the array is tensor<4xi32>");
    CHECK(!gpuir_module_global_bound(m, 0));
    gpuir_ctx_destroy(ctx);
}

/* A result type that differs from the inferred one only in its element type
   is an element type disagreement: GPUIR_ERR_DTYPE, as for operand types
   (gpuir__type_mismatch). */
TEST(dtype_written_result_type_differs_only_in_dtype) {
    static const parse_failure cases[] = {
        {"func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
         "  %0 = neg %a : (tensor<4xf16>) -> tensor<4xf32>\n"
         "  return %0 : tensor<4xf32>\n}\n",
         "d.gir", GPUIR_ERR_DTYPE,
         "d.gir:2:18: error: the type of operand #0 is tensor<4xf16>"},
        {"func.func @f(%a: tensor<4xf32>) -> tensor<4xf16> {\n"
         "  %0 = neg %a : (tensor<4xf32>) -> tensor<4xf16>\n"
         "  return %0 : tensor<4xf16>\n}\n",
         "d.gir", GPUIR_ERR_DTYPE,
         "d.gir:2:3: error: neg: result type tensor<4xf16>"},
    };
    check_parse_failures(cases, sizeof cases / sizeof cases[0]);
}

/* ---- GPUIR_ERR_ATTRIBUTE ---------------------------------------------------- */

TEST(attribute_builder_axis_perm_axes_splat) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_value x;
    gpuir_module *m = open_func(ctx, tt(GPUIR_F32, 2, 4, 8), &x);
    CHECK(gpuir_softmax(m, x, 2).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "softmax: axis 2 is out of range for rank 2");
    gpuir_ctx_clear_error(ctx);

    CHECK(gpuir_softmax(m, x, INT64_MIN).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "axis -9223372036854775808");
    gpuir_ctx_clear_error(ctx);

    int64_t perm[2] = {0, 0};
    CHECK(gpuir_transpose(m, x, 2, perm).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "transpose: perm is not a permutation of 0..1 for operand tensor<4x8xf32>");
    gpuir_ctx_clear_error(ctx);

    int64_t perm9[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(gpuir_transpose(m, x, 9, perm9).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "transpose");
    gpuir_ctx_clear_error(ctx);

    int64_t axes[2] = {1, -1};
    CHECK(gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, x, 2, axes, false).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "reduce_sum: axis -1 is out of range or repeated for rank 2");
    gpuir_ctx_clear_error(ctx);

    CHECK(gpuir_reduce(m, GPUIR_OP_REDUCE_MAX, x, 0, axes, false).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "reduce_max: axes must list 1..2 axes, got 0");
    gpuir_ctx_clear_error(ctx);

    CHECK(gpuir_constant_splat(m, tt(GPUIR_I32, 1, 4, 0), 1.5).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "constant: value 1.5");
    CHECK_MSG(ctx, "i32");
    gpuir_ctx_destroy(ctx);
}

/* An integral splat out of the i32 range: the message should give the value
   as written and say it is out of range (once printed with %g, which hid
   the value: "value 4.29497e+09 is not a i32"). */
TEST(attribute_splat_out_of_range_names_the_value) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_value x;
    gpuir_module *m = open_func(ctx, tt(GPUIR_F32, 1, 4, 0), &x);
    CHECK(gpuir_constant_splat(m, tt(GPUIR_I32, 1, 4, 0), 4294967296.0).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "4294967296");
    CHECK_MSG(ctx, "out of range for i32");
    gpuir_ctx_destroy(ctx);
}

TEST(attribute_text_missing_and_duplicate) {
    static const parse_failure cases[] = {
        {"func.func @f(%a: tensor<4x8xf32>) -> tensor<4xf32> {\n"
         "  %0 = reduce_sum %a : (tensor<4x8xf32>) -> tensor<4xf32>\n"
         "  return %0 : tensor<4xf32>\n}\n",
         "a.gir", GPUIR_ERR_ATTRIBUTE,
         "a.gir:2:3: error: reduce_sum: missing attribute 'axes'"},
        {"func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
         "  %0 = softmax %a {axis = 1, axis = 1} : (tensor<4x8xf32>) -> tensor<4x8xf32>\n"
         "  return %0 : tensor<4x8xf32>\n}\n",
         "a.gir", GPUIR_ERR_ATTRIBUTE,
         "a.gir:2:3: error: softmax: attribute 'axis' given twice"},
    };
    check_parse_failures(cases, sizeof cases / sizeof cases[0]);
}

/* A bool attribute written as an integer must be refused like any other
   attribute of the wrong kind (once it was accepted, and shape inference
   and the interpreter disagreed on what it meant). */
TEST(attribute_bool_of_the_wrong_kind) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *text = "func.func @f(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>) -> tensor<2x2xf32> {\n"
                       "  %0 = matmul %a, %b {transpose_a = 1} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>\n"
                       "  return %0 : tensor<2x2xf32>\n}\n";
    gpuir_module *m = parse_as(ctx, text, "b.gir");
    CHECK(m == NULL);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "transpose_a");
    if (m) {   /* shows the disagreement: the result is a^T b, not a b */
        float a[4] = {1, 2, 3, 4}, id[4] = {1, 0, 0, 1};
        gpuir_array in[2] = {{GPUIR_F32, 2, {2, 2}, a}, {GPUIR_F32, 2, {2, 2}, id}}, out;
        if (gpuir_ref_run(m, "f", 2, in, 1, &out) == GPUIR_OK) {
            fprintf(stderr, "  a b with {transpose_a = 1} ran as: %g %g %g %g (a b = 1 2 3 4)\n",
                    gpuir_array_get(&out, 0), gpuir_array_get(&out, 1),
                    gpuir_array_get(&out, 2), gpuir_array_get(&out, 3));
            gpuir_array_release(&out);
        }
    }
    gpuir_ctx_clear_error(ctx);

    const char *keep = "func.func @f(%a: tensor<4x8xf32>) -> tensor<4xf32> {\n"
                       "  %0 = reduce_sum %a {axes = [1], keepdims = 1} : (tensor<4x8xf32>) -> tensor<4xf32>\n"
                       "  return %0 : tensor<4xf32>\n}\n";
    CHECK(parse_as(ctx, keep, "b.gir") == NULL);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_ATTRIBUTE);
    CHECK_MSG(ctx, "keepdims");
    gpuir_ctx_destroy(ctx);
}

/* ---- GPUIR_ERR_VERIFY ------------------------------------------------------- */

TEST(verify_builder_structure) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    CHECK(gpuir_func_begin(m, "g").id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "function @f is still open");
    gpuir_ctx_clear_error(ctx);

    CHECK_FAILED(ctx, gpuir_module_verify(m), GPUIR_ERR_VERIFY);
    CHECK_MSG(ctx, "verify: function @f is still open");
    gpuir_ctx_clear_error(ctx);

    gpuir_value x = gpuir_param(m, "x", tt(GPUIR_F32, 1, 4, 0));
    CHECK(gpuir_param(m, "x", tt(GPUIR_F32, 1, 4, 0)).id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_VERIFY);
    CHECK_MSG(ctx, "@f has two parameters named %x");
    gpuir_ctx_clear_error(ctx);

    CHECK_RESULT(ctx, gpuir_func_return(m, 1, &x), GPUIR_OK);
    CHECK(gpuir_func_begin(m, "f").id == 0);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_VERIFY);
    CHECK_MSG(ctx, "function @f is defined twice");
    gpuir_ctx_clear_error(ctx);

    gpuir_func_begin(m, "g");
    CHECK(gpuir_neg(m, x).id == 0);                       /* %x belongs to @f */
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_VERIFY);
    CHECK_MSG(ctx, "neg: operand #0 belongs to function @f, not to @g");
    gpuir_ctx_destroy(ctx);
}

TEST(verify_text_arity_and_return) {
    static const parse_failure cases[] = {
        {"func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
         "  %0 = add %a : (tensor<4xf32>) -> tensor<4xf32>\n"
         "  return %0 : tensor<4xf32>\n}\n",
         "v.gir", GPUIR_ERR_VERIFY,
         "v.gir:2:3: error: add: expected 2 operands, got 1"},
        {"func.func @f(%a: tensor<4xf32>) -> tensor<8xf32> {\n"
         "  return %a : tensor<4xf32>\n}\n",
         "v.gir", GPUIR_ERR_VERIFY,
         "result #0 is tensor<8xf32> in the signature but tensor<4xf32> in the return"},
        {"func.func @f(%a: tensor<4xf32>) {\n"
         "  %0 = neg %a : (tensor<4xf32>) -> tensor<4xf32>\n}\n",
         "v.gir", GPUIR_ERR_VERIFY,
         "v.gir:3:1: error: @f does not end with a return"},
    };
    check_parse_failures(cases, sizeof cases / sizeof cases[0]);
}

/* ---- GPUIR_ERR_NOT_FOUND ---------------------------------------------------- */

TEST(not_found_function_and_global) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value w = gpuir_global(m, "W", tt(GPUIR_F32, 1, 4, 0));
    gpuir_func_return(m, 1, &w);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);

    gpuir_array out;
    CHECK_FAILED(ctx, gpuir_ref_run(m, "nope", 0, NULL, 1, &out), GPUIR_ERR_NOT_FOUND);
    CHECK_MSG(ctx, "no function named @nope");
    gpuir_ctx_clear_error(ctx);

    CHECK_FAILED(ctx, gpuir_ref_run(m, "f", 0, NULL, 1, &out), GPUIR_ERR_NOT_FOUND);
    CHECK_MSG(ctx, "global @W is not bound");
    CHECK_MSG(ctx, "@f");
    CHECK(out.data == NULL);
    gpuir_ctx_clear_error(ctx);

    float data[4] = {0};
    gpuir_array a = {GPUIR_F32, 1, {4}, data};
    CHECK_FAILED(ctx, gpuir_module_bind_global(m, "V", &a), GPUIR_ERR_NOT_FOUND);
    CHECK_MSG(ctx, "no global named @V");
    gpuir_ctx_clear_error(ctx);

    const char *text = "func.func @f() -> tensor<4xf32> {\n"
                       "  %0 = get_global {name = @W} : () -> tensor<4xf32>\n"
                       "  return %0 : tensor<4xf32>\n}\n";
    CHECK(parse_as(ctx, text, "g.gir") == NULL);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_NOT_FOUND);
    CHECK_MSG(ctx, "g.gir:2:3: error: get_global: no global named @W");
    gpuir_ctx_destroy(ctx);
}

/* ---- GPUIR_ERR_IO ----------------------------------------------------------- */

TEST(io_missing_files) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *missing = "/nonexistent-gpuir-dir/missing.gir";
    CHECK(gpuir_module_parse_file(ctx, missing) == NULL);
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_IO);
    CHECK_MSG(ctx, missing);
    gpuir_ctx_clear_error(ctx);

    gpuir_array a;
    CHECK_FAILED(ctx, gpuir_npy_read(ctx, "/nonexistent-gpuir-dir/x.npy", &a), GPUIR_ERR_IO);
    CHECK_MSG(ctx, "/nonexistent-gpuir-dir/x.npy");
    CHECK(a.data == NULL);
    gpuir_ctx_clear_error(ctx);

    float data[2] = {1, 2};
    gpuir_array b = {GPUIR_F32, 1, {2}, data};
    CHECK_FAILED(ctx, gpuir_npy_write(ctx, "/nonexistent-gpuir-dir/y.npy", &b), GPUIR_ERR_IO);
    CHECK_MSG(ctx, "/nonexistent-gpuir-dir/y.npy");
    gpuir_ctx_clear_error(ctx);

    CHECK(gpuir_module_parse_file(ctx, "/") == NULL);     /* a directory */
    CHECK_FAILED(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_IO);
    gpuir_ctx_destroy(ctx);
}

/* ---- GPUIR_ERR_NPY ---------------------------------------------------------- */

TEST(npy_malformed_and_unsupported) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    unsigned char buf[512];
    gpuir_array a;
    float data[6] = {0};

    CHECK_FAILED(ctx, gpuir_npy_load(ctx, "not an npy file", 15, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "magic");
    gpuir_ctx_clear_error(ctx);

    size_t n = make_npy(buf, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data, 24);
    CHECK_FAILED(ctx, gpuir_npy_load(ctx, buf, n, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "Fortran");
    gpuir_ctx_clear_error(ctx);

    n = make_npy(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", data, 24);
    CHECK_FAILED(ctx, gpuir_npy_load(ctx, buf, n, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "'<f8'");
    gpuir_ctx_clear_error(ctx);

    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 20);
    CHECK_FAILED(ctx, gpuir_npy_load(ctx, buf, n, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "needs 24 data bytes, the file has 20");
    gpuir_ctx_clear_error(ctx);

    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", data, 24);
    CHECK_FAILED(ctx, gpuir_npy_load(ctx, buf, n, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "shape");
    gpuir_ctx_clear_error(ctx);

    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", data, 24);
    CHECK_FAILED(ctx, gpuir_npy_load(ctx, buf, n, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "unknown key 'extra'");
    gpuir_ctx_clear_error(ctx);

    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 24);
    buf[8] = 0xff;                                         /* header longer than the file */
    CHECK_FAILED(ctx, gpuir_npy_load(ctx, buf, n, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "header of");
    gpuir_ctx_clear_error(ctx);

    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 24);
    buf[6] = 9;                                            /* version 9.0 */
    CHECK_FAILED(ctx, gpuir_npy_load(ctx, buf, n, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "version 9");
    gpuir_ctx_clear_error(ctx);

    /* a huge shape with no data: refused before anything is allocated */
    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }", NULL, 0);
    CHECK_FAILED(ctx, gpuir_npy_load(ctx, buf, n, &a), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "needs 4000000000 data bytes, the file has 0");
    CHECK(a.data == NULL);
    gpuir_ctx_clear_error(ctx);

    n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", data, 4);
    CHECK_FAILED(ctx, gpuir_npy_load(ctx, buf, n, &a), GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "rank above the cap of 8");
    gpuir_ctx_clear_error(ctx);

    uint16_t bf[2] = {0, 0};
    gpuir_array b = {GPUIR_BF16, 1, {2}, bf};
    CHECK_FAILED(ctx, gpuir_npy_write(ctx, "/nonexistent-gpuir-dir/bf.npy", &b), GPUIR_ERR_NPY);
    CHECK_MSG(ctx, "bf16");
    gpuir_ctx_destroy(ctx);
}

/* ---- GPUIR_ERR_MISMATCH ----------------------------------------------------- */

TEST(mismatch_names_the_element_and_the_shapes) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    float g[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 2, 3, 4, 5, 7};
    gpuir_array got = {GPUIR_F32, 2, {2, 3}, g}, want = {GPUIR_F32, 2, {2, 3}, w};
    CHECK_FAILED(ctx, gpuir_array_compare(ctx, &got, &want, 1e-5, 1e-6), GPUIR_ERR_MISMATCH);
    CHECK_MSG(ctx, "element [1, 2]: got 6, expected 7");
    gpuir_ctx_clear_error(ctx);

    want.dims[0] = 3;
    want.dims[1] = 2;
    CHECK_FAILED(ctx, gpuir_array_compare(ctx, &got, &want, 0, 0), GPUIR_ERR_MISMATCH);
    CHECK_MSG(ctx, "got tensor<2x3xf32>, expected tensor<3x2xf32>");
    gpuir_ctx_clear_error(ctx);

    int32_t gi[2] = {1, 2}, wi[2] = {1, 3};
    gpuir_array a = {GPUIR_I32, 1, {2}, gi}, b = {GPUIR_I32, 1, {2}, wi};
    CHECK_FAILED(ctx, gpuir_array_compare(ctx, &a, &b, 1.0, 1.0), GPUIR_ERR_MISMATCH);  /* ints exact */
    CHECK_MSG(ctx, "element [1]");
    gpuir_ctx_destroy(ctx);
}

/* gpuir_array_compare must refuse arrays that no other call accepts, as
   gpuir__array_check does elsewhere, instead of reading out of bounds (a
   negative dim makes the count SIZE_MAX) or passing (a count that wraps to
   0, a rank above the cap). Run in a child, so a regression cannot take the
   whole test binary down. */
static int compare_bad(gpuir_array *a, gpuir_result want) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_result r = gpuir_array_compare(ctx, a, a, 0, 0);
    int ok = r == want && gpuir_ctx_result(ctx) == want;
    if (!ok) fprintf(stderr, "  compare: got %s, want %s: %s\n", gpuir_result_name(r),
                     gpuir_result_name(want), gpuir_ctx_error(ctx));
    gpuir_ctx_destroy(ctx);
    return ok ? 0 : 1;
}

static float compare_data[4];
static int child_compare_negative_dim(void) {
    gpuir_array a = {GPUIR_F32, 1, {-1}, compare_data};
    return compare_bad(&a, GPUIR_ERR_SHAPE);
}
static int child_compare_wrapping_count(void) {
    gpuir_array a = {GPUIR_F32, 2, {(int64_t)1 << 40, (int64_t)1 << 40}, compare_data};
    return compare_bad(&a, GPUIR_ERR_LIMIT);
}
static int child_compare_rank_9(void) {
    gpuir_array a = {GPUIR_F32, 9, {1, 1, 1, 1, 1, 1, 1, 1}, compare_data};
    return compare_bad(&a, GPUIR_ERR_LIMIT);
}

TEST(compare_refuses_invalid_arrays) {
    int rc = in_child(child_compare_negative_dim, 0);
    if (rc != 0) fprintf(stderr, "  negative dim: child ended with %d\n", rc);
    CHECK(rc == 0);
    CHECK(in_child(child_compare_wrapping_count, 0) == 0);
    CHECK(in_child(child_compare_rank_9, 0) == 0);
}

/* ---- sticky errors -------------------------------------------------------- */

TEST(sticky_errors_stop_every_call_until_cleared) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    gpuir_value a = gpuir_param(m, "a", tt(GPUIR_F32, 2, 4, 8));
    gpuir_value b = gpuir_param(m, "b", tt(GPUIR_F32, 2, 4, 7));
    CHECK(a.id != 0 && b.id != 0);
    gpuir_value bad = gpuir_add(m, a, b);
    CHECK(bad.id == 0);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_SHAPE);
    char first[512];
    snprintf(first, sizeof first, "%s", gpuir_ctx_error(ctx));

    /* every later call does nothing and returns id 0 or the first code */
    char *before = gpuir_module_print(m);
    CHECK(gpuir_neg(m, a).id == 0);
    CHECK(gpuir_add(m, a, a).id == 0);
    CHECK(gpuir_matmul(m, a, a, GPUIR_TRANSPOSE_B).id == 0);
    CHECK(gpuir_softmax(m, a, 0).id == 0);
    CHECK(gpuir_constant_splat(m, tt(GPUIR_F32, 1, 4, 0), 1.0).id == 0);
    CHECK(gpuir_global(m, "W", tt(GPUIR_F32, 1, 4, 0)).id == 0);
    CHECK(gpuir_param(m, "c", tt(GPUIR_F32, 1, 4, 0)).id == 0);
    CHECK(gpuir_cast(m, a, GPUIR_F16).id == 0);
    CHECK(gpuir_exp(m, b).id == 0);
    CHECK_RESULT(ctx, gpuir_func_return(m, 1, &a), GPUIR_ERR_SHAPE);
    CHECK(gpuir_func_begin(m, "g").id == 0);
    CHECK(gpuir_module_make(ctx) == NULL);
    CHECK(parse_as(ctx, "func.func @h() {\n  return\n}\n", "s.gir") == NULL);
    gpuir_array arr;
    int64_t dims[1] = {4};
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &arr, GPUIR_F32, 1, dims), GPUIR_ERR_SHAPE);
    CHECK(arr.data == NULL);
    CHECK_RESULT(ctx, gpuir_module_verify(m), GPUIR_ERR_SHAPE);
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 0, NULL, 0, NULL), GPUIR_ERR_SHAPE);
    /* a second, different failure does not replace the first */
    CHECK(gpuir_unary(m, GPUIR_OP_ADD, a).id == 0);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_SHAPE);
    CHECK(strcmp(gpuir_ctx_error(ctx), first) == 0);
    char *after = gpuir_module_print(m);
    CHECK(before && after && strcmp(before, after) == 0);  /* nothing was added */
    CHECK(gpuir_module_global_count(m) == 0);
    CHECK(gpuir_func_param_count(m, gpuir_module_find_func(m, "f")) == 2);
    gpuir_free(before);
    gpuir_free(after);

    /* cleared: the context works again, the open function is still open */
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    CHECK(strcmp(gpuir_ctx_error(ctx), "") == 0);
    gpuir_value y = gpuir_neg(m, a);
    CHECK(y.id != 0);
    CHECK_RESULT(ctx, gpuir_func_return(m, 1, &y), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_module_verify(m), GPUIR_OK);
    float data[32] = {0};
    gpuir_array in[2] = {{GPUIR_F32, 2, {4, 8}, data}, {GPUIR_F32, 2, {4, 7}, data}}, out;
    CHECK_RESULT(ctx, gpuir_ref_run(m, "f", 2, in, 1, &out), GPUIR_OK);
    gpuir_array_release(&out);
    gpuir_ctx_destroy(ctx);
}

static int log_calls;
static char log_last[512];
static void log_fn(void *user, const char *msg) {
    (void)user;
    log_calls++;
    snprintf(log_last, sizeof log_last, "%s", msg);
}

TEST(the_log_hears_the_first_error_once) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.log = log_fn});
    gpuir_value x;
    gpuir_module *m = open_func(ctx, tt(GPUIR_F32, 1, 4, 0), &x);
    log_calls = 0;
    CHECK(gpuir_softmax(m, x, 5).id == 0);
    CHECK(gpuir_softmax(m, x, 6).id == 0);
    CHECK(log_calls == 1);
    CHECK(strcmp(log_last, gpuir_ctx_error(ctx)) == 0);
    CHECK(strstr(log_last, "axis 5") != NULL);
    gpuir_ctx_destroy(ctx);
}

/* A message quotes the file name and the source line with each control
   byte written \xNN (ESC ] 0 ; title BEL and ESC [ 31 m reached the
   terminal), the log callback hears the same text, and a UTF-8 letter is
   kept. */
TEST(parse_error_escapes_control_bytes) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.log = log_fn});
    CHECK(parse_as(ctx, "func.func @f\x1b]0;title\x07\x1b[31m(", "e\x1b[2J\xc3\xa9.gir") == NULL);
    const char *msg = gpuir_ctx_error(ctx);
    CHECK_MSG(ctx, "e\\x1b[2J\xc3\xa9.gir:1:13: error: expected '(', found byte 0x1b\n"
                   "func.func @f\\x1b]0;title\\x07\\x1b[31m(\n            ^");
    for (const char *p = msg; *p; p++) CHECK(*p == '\n' || (unsigned char)*p >= 0x20);
    CHECK(strcmp(log_last, msg) == 0);
    gpuir_ctx_destroy(ctx);
}

/* A failed parse leaves nothing behind: no module in the context, no leak
   (the sanitized build checks the latter at exit). */
TEST(failed_parses_leave_nothing_behind) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *bad[] = {
        "global @W : tensor<4xf32>\nfunc.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = constant {value = dense<[1.0, 2.0]>} : () -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = neg %a {s = \"abc",
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = constant {value = dense<[1, 2.5]>} : () -> tensor<2xi32>\n",
        "func.func @f() {\n  return\n}\nfunc.func @f() {\n  return\n}\n",
        "global @W : tensor<4xf32>\nglobal @W : tensor<4xf32>\n",
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = neg %a : (tensor<4xf32>) -> tensor<4xf32>\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(parse_as(ctx, bad[i], "leak.gir") == NULL);
        CHECK(gpuir_ctx_result(ctx) != GPUIR_OK);
        CHECK(strstr(gpuir_ctx_error(ctx), "leak.gir:") == gpuir_ctx_error(ctx));
        gpuir_ctx_clear_error(ctx);
    }
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(result_names_cover_the_table);
    RUN(a_fresh_context_has_no_error);
    RUN(invalid_argument_param_without_open_function);
    RUN(invalid_argument_names_and_kinds);
    RUN(a_name_looked_up_in_vain_is_clipped_in_its_error);
    RUN(a_wrong_output_count_is_refused_before_the_run_naming_the_function);
    RUN(invalid_argument_parse_null_text);
    RUN(invalid_argument_ref_run_wrong_input_count);
    RUN(out_of_memory_array_alloc);
    RUN(out_of_memory_ref_run);
    RUN(parse_of_a_huge_constant_allocates_nothing);
    RUN(limit_rank_above_8);
    RUN(limit_dims_whose_product_overflows);
    RUN(limit_max_tensor_bytes);
    RUN(limit_integer_literal_2_pow_63);
    RUN(limit_too_many_operands);
    RUN(parse_error_names_file_line_col);
    RUN(parse_error_unknown_op_and_undefined_value);
    RUN(shape_builder_add_names_op_operands_and_shapes);
    RUN(shape_builder_matmul_reshape_broadcast_cast);
    RUN(shape_ref_run_input_of_the_wrong_shape);
    RUN(dtype_builder_mixed_and_float_only);
    RUN(dtype_ref_run_and_bind_global);
    RUN(dtype_written_result_type_differs_only_in_dtype);
    RUN(attribute_builder_axis_perm_axes_splat);
    RUN(attribute_splat_out_of_range_names_the_value);
    RUN(attribute_text_missing_and_duplicate);
    RUN(attribute_bool_of_the_wrong_kind);
    RUN(verify_builder_structure);
    RUN(verify_text_arity_and_return);
    RUN(not_found_function_and_global);
    RUN(io_missing_files);
    RUN(npy_malformed_and_unsupported);
    RUN(mismatch_names_the_element_and_the_shapes);
    RUN(compare_refuses_invalid_arrays);
    RUN(sticky_errors_stop_every_call_until_cleared);
    RUN(the_log_hears_the_first_error_once);
    RUN(parse_error_escapes_control_bytes);
    RUN(failed_parses_leave_nothing_behind);
    return CHECK_EXIT();
}

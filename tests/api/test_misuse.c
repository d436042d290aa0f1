/* API misuse: every public call takes the NULL a failed make returned
   (ctx, module, program) without a crash and keeps the first error; NULL
   dims/axes/perm/arrays are refused by name; a rank out of range reads no
   dims; a value handle of another module is refused; a bad backend is
   refused; a failed run (early or late) leaves its outputs empty and
   releasable. Each case runs in a child process, so a crash is a FAIL of
   that case, not of the whole file. */
#define _XOPEN_SOURCE 700
#include "../../gpuir.h"
#include "../check.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn in a child: its exit code, or 128 + the signal that ended it. */
static int in_child(void (*fn)(void)) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        check__failed = 0;
        fn();
        fflush(stderr);
        exit(check__failed ? 1 : 0);        /* exit: LeakSanitizer checks the child */
    }
    int status;
    if (waitpid(pid, &status, 0) < 0) return -1;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

#define CHILD_TEST(name)                                                              \
    static void name##_body(void);                                                    \
    TEST(name) {                                                                      \
        int rc = in_child(name##_body);                                               \
        if (rc != 0) {                                                                \
            fprintf(stderr, "%s: child ended with %d\n", #name, rc);                  \
            check__failed = 1;                                                        \
        }                                                                             \
    }                                                                                 \
    static void name##_body(void)

static gpuir_array garbage_array(void) {   /* what an uninitialized output holds */
    gpuir_array a;
    memset(&a, 0xA5, sizeof a);
    return a;
}

static bool array_empty(const gpuir_array *a) {
    return a->data == NULL && a->rank == 0 && a->dtype == GPUIR_DTYPE_INVALID;
}

/* ---- a NULL context (a failed gpuir_ctx_make) -------------------------- */

CHILD_TEST(null_ctx_is_accepted_by_every_call) {
    gpuir_ctx *ctx = NULL;
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_OUT_OF_MEMORY);
    CHECK(strstr(gpuir_ctx_error(ctx), "ctx is NULL") != NULL);
    gpuir_ctx_clear_error(ctx);
    gpuir_ctx_destroy(ctx);
    CHECK(gpuir_module_make(ctx) == NULL);
    CHECK(gpuir_module_parse(ctx, "func.func @f() {\n return\n}\n", 28, "x.gir") == NULL);
    CHECK(gpuir_module_parse_file(ctx, "x.gir") == NULL);
    gpuir_array a = garbage_array();
    int64_t dims[1] = {4};
    CHECK(gpuir_array_alloc(ctx, &a, GPUIR_F32, 1, dims) != GPUIR_OK);
    CHECK(array_empty(&a));
    CHECK(gpuir_array_compare(ctx, &a, &a, 0, 0) != GPUIR_OK);
    a = garbage_array();
    CHECK(gpuir_npy_load(ctx, "x", 1, &a) != GPUIR_OK);
    CHECK(array_empty(&a));
    a = garbage_array();
    CHECK(gpuir_npy_read(ctx, "/nonexistent.npy", &a) != GPUIR_OK);
    CHECK(array_empty(&a));
    CHECK(gpuir_npy_write(ctx, "/tmp/never.npy", &a) != GPUIR_OK);
    char why[128];
    CHECK(!gpuir_cuda_available(ctx, why, sizeof why));
    CHECK(why[0] != '\0');
    gpuir_cache_stats st = gpuir_ctx_cache_stats(ctx);
    CHECK(st.misses == 0 && st.writes == 0);
    CHECK(strcmp(gpuir_ctx_cache_dir(ctx), "") == 0);
    CHECK(gpuir_ctx_cache_status(ctx)[0] != '\0');
    CHECK(gpuir_ctx_cache_export(ctx, "/tmp/never.bundle", NULL) != GPUIR_OK);
    CHECK(gpuir_ctx_cache_import(ctx, "/tmp/never.bundle", NULL) != GPUIR_OK);
}

/* The device-buffer, pinned-memory and stream calls report a NULL context
   as every other call does: GPUIR_ERR_OUT_OF_MEMORY, the only way
   gpuir_ctx_make fails (they said GPUIR_ERR_INVALID_ARGUMENT), and a
   pinned array is left empty, as gpuir_array_alloc leaves one. */
CHILD_TEST(null_ctx_device_calls_report_out_of_memory) {
    gpuir_ctx *ctx = NULL;
    int64_t dims[1] = {4};
    float host[4] = {0};
    gpuir_array a = {GPUIR_F32, 1, {4}, host};
    gpuir_buffer_desc bd = {GPUIR_BACKEND_EMU, 0, GPUIR_F32, 1, {4}, 0};
    gpuir_buffer b = gpuir_buffer_make(ctx, &bd);
    CHECK(b.id == 0);
    CHECK(gpuir_buffer_upload(ctx, b, &a, NULL) == GPUIR_ERR_OUT_OF_MEMORY);
    CHECK(gpuir_buffer_download(ctx, b, &a, NULL) == GPUIR_ERR_OUT_OF_MEMORY);
    CHECK(gpuir_host_register(ctx, GPUIR_BACKEND_EMU, host, sizeof host) == GPUIR_ERR_OUT_OF_MEMORY);
    CHECK(gpuir_host_unregister(ctx, host) == GPUIR_ERR_OUT_OF_MEMORY);
    CHECK(gpuir_stream_synchronize(ctx, host) == GPUIR_ERR_OUT_OF_MEMORY);
    a = garbage_array();
    CHECK(gpuir_array_alloc_pinned(ctx, GPUIR_BACKEND_EMU, &a, GPUIR_F32, 1, dims) == GPUIR_ERR_OUT_OF_MEMORY);
    CHECK(array_empty(&a));
    gpuir_array_release_pinned(ctx, &a);
    CHECK(gpuir_host_alloc(ctx, GPUIR_BACKEND_EMU, 16) == NULL);
    CHECK(gpuir_stream_make(ctx, GPUIR_BACKEND_EMU) == NULL);
    CHECK(!gpuir_buffer_valid(ctx, b));
}

/* gpuir_array_get and _set check the index against the array's count: an
   index past the end read, and wrote, whatever memory lay there. */
CHILD_TEST(array_access_past_the_end_touches_nothing) {
    float mem[8] = {1, 2, 3, 4, 42, 42, 42, 42};
    gpuir_array a = {GPUIR_F32, 1, {4}, mem};         /* the first 4 are the array's */
    CHECK(gpuir_array_get(&a, 3) == 4);
    CHECK(gpuir_array_get(&a, 4) == 0);
    CHECK(gpuir_array_get(&a, (size_t)1 << 40) == 0);
    gpuir_array_set(&a, 5, 7);
    gpuir_array_set(&a, SIZE_MAX, 7);
    CHECK(mem[5] == 42);
    gpuir_array_set(&a, 0, 9);
    CHECK(mem[0] == 9);
    a.rank = GPUIR_MAX_RANK + 1;                     /* no array: no element */
    CHECK(gpuir_array_get(&a, 0) == 0);
    gpuir_array_set(&a, 0, 5);
    CHECK(mem[0] == 9);
    a.rank = 0;                                      /* a scalar: one element */
    CHECK(gpuir_array_get(&a, 0) == 9);
    CHECK(gpuir_array_get(&a, 1) == 0);
}

/* A failed cache export sets *count to 0, as a failed import does: it
   left the caller's value there, a count of modules never written. */
CHILD_TEST(a_failed_cache_export_counts_no_modules) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    size_t n = 99;
    CHECK_RESULT(ctx, gpuir_ctx_cache_export(ctx, "/nonexistent-dir/x.bundle", &n), GPUIR_ERR_IO);
    CHECK(n == 0);
    n = 99;
    CHECK_RESULT(ctx, gpuir_ctx_cache_export(ctx, "/tmp/x.bundle", &n), GPUIR_ERR_IO);   /* the first error kept */
    CHECK(n == 0);
    n = 99;
    CHECK_RESULT(ctx, gpuir_ctx_cache_import(ctx, "/nonexistent-dir/x.bundle", &n), GPUIR_ERR_IO);
    CHECK(n == 0);
    n = 99;
    CHECK(gpuir_ctx_cache_export(NULL, "/tmp/x.bundle", &n) == GPUIR_ERR_OUT_OF_MEMORY);
    CHECK(n == 0);
    gpuir_ctx_destroy(ctx);
}

/* A shape with a negative dim or no element type is the same error from
   every call that allocates: gpuir_array_alloc's GPUIR_ERR_SHAPE and
   GPUIR_ERR_DTYPE (the table in docs/using-the-header.md); the device
   buffer and pinned calls said GPUIR_ERR_LIMIT and _INVALID_ARGUMENT. */
CHILD_TEST(a_bad_shape_is_the_same_error_from_every_allocating_call) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    int64_t neg[2] = {4, -3}, ok[2] = {4, 4};
    gpuir_array a;
    for (int bad = 0; bad < 2; bad++) {                  /* 0: a negative dim, 1: no dtype */
        gpuir_dtype dt = bad ? GPUIR_DTYPE_INVALID : GPUIR_F32;
        const int64_t *dims = bad ? ok : neg;
        gpuir_result want = bad ? GPUIR_ERR_DTYPE : GPUIR_ERR_SHAPE;
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, dt, 2, dims), want);
        gpuir_ctx_clear_error(ctx);
        CHECK_RESULT(ctx, gpuir_array_alloc_pinned(ctx, GPUIR_BACKEND_EMU, &a, dt, 2, dims), want);
        CHECK_MSG(ctx, "gpuir_array_alloc_pinned: ");
        gpuir_ctx_clear_error(ctx);
        gpuir_buffer_desc bd = {.backend = GPUIR_BACKEND_EMU, .dtype = dt, .rank = 2, .dims = {dims[0], dims[1]}};
        CHECK(gpuir_buffer_make(ctx, &bd).id == 0);
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), want);
        CHECK_MSG(ctx, bad ? "invalid element type 0" : "dimension 1 is -3");
        gpuir_ctx_clear_error(ctx);
    }
    gpuir_ctx_destroy(ctx);
}

/* ---- a NULL module (a failed make or parse) ---------------------------- */

CHILD_TEST(null_module_is_accepted_by_every_call) {
    gpuir_module *m = NULL;
    gpuir_value none = {0};
    int64_t dims[1] = {4}, axes[1] = {0};
    gpuir_type t = gpuir_tensor_type(GPUIR_F32, 1, dims);
    gpuir_module_destroy(m);
    CHECK(gpuir_module_ctx(m) == NULL);
    CHECK(gpuir_module_print(m) == NULL);
    CHECK(gpuir_module_verify(m) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(gpuir_module_placement_report(m), "") == 0);
    CHECK(gpuir_module_print_dot(m) == NULL);
    CHECK(gpuir_module_emit_cuda(m) == NULL);
    CHECK(gpuir_module_func_count(m) == 0);
    CHECK(gpuir_module_func_at(m, 0).id == 0);
    CHECK(gpuir_module_find_func(m, "f").id == 0);
    gpuir_func f = {1};
    CHECK(strcmp(gpuir_func_name(m, f), "") == 0);
    CHECK(!gpuir_func_is_kernel(m, f));
    CHECK(gpuir_func_param_count(m, f) == 0);
    CHECK(gpuir_func_param_type(m, f, 0).kind == GPUIR_TYPE_INVALID);
    CHECK(gpuir_func_result_count(m, f) == 0);
    CHECK(gpuir_func_result_type(m, f, 0).kind == GPUIR_TYPE_INVALID);
    CHECK(gpuir_value_type(m, none).kind == GPUIR_TYPE_INVALID);
    CHECK(gpuir_module_global_count(m) == 0);
    CHECK(strcmp(gpuir_module_global_name(m, 0), "") == 0);
    CHECK(gpuir_module_global_type(m, 0).kind == GPUIR_TYPE_INVALID);
    CHECK(!gpuir_module_global_bound(m, 0));
    CHECK(gpuir_func_begin(m, "f").id == 0);
    CHECK(gpuir_param(m, "x", t).id == 0);
    CHECK(gpuir_func_return(m, 0, NULL) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(gpuir_unary(m, GPUIR_OP_NEG, none).id == 0);
    CHECK(gpuir_binary(m, GPUIR_OP_ADD, none, none).id == 0);
    CHECK(gpuir_neg(m, none).id == 0);
    CHECK(gpuir_add(m, none, none).id == 0);
    CHECK(gpuir_matmul(m, none, none, 0).id == 0);
    CHECK(gpuir_matmul_k_slices(m, none, none, 0, 2).id == 0);
    CHECK(gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, none, 1, axes, false).id == 0);
    CHECK(gpuir_transpose(m, none, 1, axes).id == 0);
    CHECK(gpuir_reshape(m, none, 1, dims).id == 0);
    CHECK(gpuir_broadcast(m, none, 1, dims).id == 0);
    CHECK(gpuir_cast(m, none, GPUIR_F16).id == 0);
    CHECK(gpuir_softmax(m, none, 0).id == 0);
    CHECK(gpuir_constant_splat(m, t, 1.0).id == 0);
    float data[4] = {0};
    CHECK(gpuir_constant_dense(m, t, data).id == 0);
    CHECK(gpuir_global(m, "w", t).id == 0);
    gpuir_array in = {GPUIR_F32, 1, {4}, data};
    CHECK(gpuir_module_bind_global(m, "w", &in) == GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_array out = garbage_array();
    CHECK(gpuir_ref_run(m, "f", 1, &in, 1, &out) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(array_empty(&out));
    gpuir_array_release(&out);
    CHECK(gpuir_module_run_passes(m, "canonicalize", NULL) == GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_target target = {80, 10};
    gpuir_module_set_target(m, target);
    CHECK(gpuir_module_target(m).sm == 0);
    long spilled = 7;
    char *ptx = (char *)&spilled;
    CHECK(gpuir_module_compile_cuda(m, 90, &spilled, &ptx) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(spilled == -1 && ptx == NULL);
    CHECK(gpuir_program_make(m, NULL) == NULL);
}

/* ---- a NULL program (a failed gpuir_program_make) ---------------------- */

CHILD_TEST(null_program_is_accepted_by_every_call) {
    gpuir_program *p = NULL;
    float data[4] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 1, {4}, data};
    gpuir_array out[2] = {garbage_array(), garbage_array()};
    CHECK(gpuir_program_run(p, NULL, 1, &in, 2, out) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(array_empty(&out[0]) && array_empty(&out[1]));
    gpuir_array_release(&out[0]);          /* releasable */
    CHECK(gpuir_program_backend(p) == GPUIR_BACKEND_AUTO);
    CHECK(gpuir_program_get_stats(p).runs == 0);
    CHECK(strcmp(gpuir_program_source(p), "") == 0);
    CHECK(strcmp(gpuir_program_why_not_cuda(p), "") == 0);
    gpuir_program_destroy(p);
}

/* The README's "check once at the end" path when parsing fails: every call
   after it is safe and the first error is the one reported. */
CHILD_TEST(a_failed_parse_flows_through_to_one_check_at_the_end) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *text = "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = nope %x\n}\n";
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "bad.gir");
    gpuir_program *p = gpuir_program_make(m, NULL);
    float data[4] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 1, {4}, data};
    gpuir_array out = garbage_array();
    gpuir_program_run(p, "f", 1, &in, 1, &out);
    gpuir_array_release(&out);
    gpuir_program_destroy(p);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_PARSE);
    CHECK_MSG(ctx, "bad.gir:2:");
    gpuir_ctx_destroy(ctx);
}

/* The README's example on a machine with no C compiler and no GPU: the
   make fails, and the run, the release and the one check at the end are
   safe; the error is the make's. */
CHILD_TEST(the_readme_path_without_a_compiler) {
    gpuir_ctx_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.cache_dir = "";                          /* memory only: nothing cached helps */
    gpuir_ctx *ctx = gpuir_ctx_make(&cd);
    const char *text = NEG_TEXT;
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "f.gir");
    gpuir_program_desc desc = {.backend = GPUIR_BACKEND_EMU, .cc = "/nonexistent/cc"};
    gpuir_program *p = gpuir_program_make(m, &desc);
    CHECK(p == NULL);
    float data[4] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 1, {4}, data};
    gpuir_array out = garbage_array();
    CHECK(gpuir_program_run(p, "f", 1, &in, 1, &out) != GPUIR_OK);
    gpuir_array_release(&out);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_COMPILE);
    gpuir_ctx_destroy(ctx);
}

/* ---- NULL and out-of-range shape arguments ------------------------------ */

CHILD_TEST(null_dims_axes_perm_and_ranks_out_of_range_are_refused) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    gpuir_func_begin(m, "f");
    int64_t d2[2] = {2, 3};
    gpuir_value x = gpuir_param(m, "x", gpuir_tensor_type(GPUIR_F32, 2, d2));
    CHECK(x.id != 0);
    CHECK(gpuir_param(m, "y", gpuir_tensor_type(GPUIR_F32, 2, NULL)).id == 0);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "dims is NULL");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_reshape(m, x, 1, NULL).id == 0);
    CHECK_MSG(ctx, "dims is NULL");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_broadcast(m, x, 3, NULL).id == 0);
    CHECK_MSG(ctx, "dims is NULL");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, x, 1, NULL, false).id == 0);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "reduce: axes is NULL");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_transpose(m, x, 2, NULL).id == 0);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "transpose: perm is NULL");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_func_return(m, 1, NULL) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "results is NULL");
    gpuir_ctx_clear_error(ctx);
    /* A rank out of range reads no dims (ASan sees an overread of d1). */
    int64_t *d1 = (int64_t *)malloc(sizeof *d1);
    d1[0] = 4;
    gpuir_type big = gpuir_tensor_type(GPUIR_F32, 100, d1);
    CHECK(big.rank == 100);
    CHECK(gpuir_memref_type(GPUIR_F32, 9, d1, 1).rank == 9);
    CHECK(gpuir_reshape(m, x, 100, d1).id == 0);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_LIMIT);
    gpuir_ctx_clear_error(ctx);
    gpuir_array a = garbage_array();
    CHECK(gpuir_array_alloc(ctx, &a, GPUIR_F32, 100, d1) == GPUIR_ERR_LIMIT);
    CHECK(array_empty(&a));
    CHECK_MSG(ctx, "rank 100");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_array_alloc(ctx, &a, GPUIR_F32, 2, NULL) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "dims is NULL");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_array_alloc(ctx, NULL, GPUIR_F32, 1, d1) == GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_clear_error(ctx);
    gpuir_array bad = {GPUIR_F32, 100, {4}, NULL};
    CHECK(gpuir_array_count(&bad) == 0);
    CHECK(gpuir_array_count(NULL) == 0);
    CHECK(gpuir_array_get(NULL, 0) == 0.0);
    gpuir_array_set(NULL, 0, 1.0);
    gpuir_array_fill_random(NULL, 1);
    gpuir_array_release(NULL);
    double tol;
    gpuir_dtype_tolerance(GPUIR_F32, NULL, NULL);
    gpuir_backend_tolerance(GPUIR_BACKEND_EMU, GPUIR_F32, &tol, NULL);
    gpuir_backend_tolerance(GPUIR_BACKEND_EMU, GPUIR_F32, NULL, NULL);
    CHECK(tol == 1e-5);
    double rtol_ref, atol_ref, rtol_odd, atol_odd;      /* AUTO and out of the enum: the compiled ones' */
    gpuir_backend_tolerance(GPUIR_BACKEND_REF, GPUIR_F32, &rtol_ref, &atol_ref);
    gpuir_backend_tolerance((gpuir_backend)99, GPUIR_F32, &rtol_odd, &atol_odd);
    CHECK(atol_odd == 1e-5 && rtol_odd == rtol_ref && atol_ref <= atol_odd);
    gpuir_backend_tolerance(GPUIR_BACKEND_AUTO, GPUIR_F32, &rtol_odd, &atol_odd);
    CHECK(atol_odd == 1e-5);
    free(d1);
    gpuir_ctx_destroy(ctx);
}

/* ---- value handles carry their module ----------------------------------- */

CHILD_TEST(a_value_of_another_module_is_refused) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    int64_t d[1] = {4};
    gpuir_type t = gpuir_tensor_type(GPUIR_F32, 1, d);
    gpuir_module *a = gpuir_module_make(ctx), *b = gpuir_module_make(ctx);
    gpuir_func_begin(a, "f");
    gpuir_func_begin(b, "g");
    gpuir_value xa = gpuir_param(a, "x", t);
    gpuir_value xb = gpuir_param(b, "x", t);
    CHECK(xa.id != 0 && xb.id != 0 && xa.id != xb.id);   /* same value number, other modules */
    CHECK(gpuir_value_type(a, xa).kind == GPUIR_TYPE_TENSOR);
    CHECK(gpuir_value_type(b, xa).kind == GPUIR_TYPE_INVALID);
    CHECK(gpuir_neg(b, xa).id == 0);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "neg: operand #0 is not a value of this module");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_add(b, xb, xa).id == 0);
    CHECK_MSG(ctx, "add: operand #1 is not a value of this module");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_matmul(b, xa, xb, 0).id == 0);
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_reshape(b, xa, 1, d).id == 0);
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_cast(b, xa, GPUIR_F16).id == 0);
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_func_return(b, 1, &xa) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "return: operand #0 is not a value of this module");
    gpuir_ctx_clear_error(ctx);
    /* The right handles still work, and ids the caller made up are refused. */
    gpuir_value yb = gpuir_neg(b, xb);
    CHECK(yb.id != 0);
    gpuir_value made_up = {2};
    CHECK(gpuir_neg(b, made_up).id == 0);
    CHECK_MSG(ctx, "is not a value");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_func_return(b, 1, &yb) == GPUIR_OK);
    char *text = gpuir_module_print(b);     /* the printed IR numbers values as before */
    CHECK(text && strstr(text, "%0 = neg %x : (tensor<4xf32>) -> tensor<4xf32>"));
    gpuir_free(text);
    gpuir_ctx_destroy(ctx);
}

/* A type of a rank no type has prints as invalid: rank 100 printed as
   tensor<4x0x0x0x0x0x0x0xf32>, its first eight dims. */
TEST(a_type_of_an_impossible_rank_prints_as_invalid) {
    char b[64];
    gpuir_type t = gpuir_tensor_type(GPUIR_F32, 1, (int64_t[]){4});
    CHECK(strcmp(gpuir_type_str(t, b, sizeof b), "tensor<4xf32>") == 0);
    t.rank = 100;
    CHECK(strcmp(gpuir_type_str(t, b, sizeof b), "<invalid type>") == 0);
    t.rank = -1;
    CHECK(strcmp(gpuir_type_str(t, b, sizeof b), "<invalid type>") == 0);
    t.rank = GPUIR_MAX_RANK;
    CHECK(strcmp(gpuir_type_str(t, b, sizeof b), "tensor<4x0x0x0x0x0x0x0xf32>") == 0);
}

/* ---- gpuir_program_make and run -------------------------------------------- */

CHILD_TEST(an_unknown_backend_is_refused) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *text = NEG_TEXT;
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "f.gir");
    gpuir_program_desc desc = {.backend = (gpuir_backend)42};
    CHECK(gpuir_program_make(m, &desc) == NULL);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "desc.backend 42");
    gpuir_ctx_clear_error(ctx);
    desc.backend = (gpuir_backend)-1;
    CHECK(gpuir_program_make(m, &desc) == NULL);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_INVALID_ARGUMENT);
    gpuir_ctx_destroy(ctx);
}

/* A backend with no device memory (the interpreter's, or no backend at
   all) given to a device-memory call names the call and the value: it
   said "backend invalid has no device memory", naming neither. */
CHILD_TEST(a_device_call_names_itself_and_the_backend_it_refuses) {
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    int64_t dims[1] = {4};
    float host[4];
    gpuir_array a;
    gpuir_buffer_desc bd = {.backend = (gpuir_backend)42, .dtype = GPUIR_F32, .rank = 1, .dims = {4}};
    CHECK(gpuir_buffer_make(ctx, &bd).id == 0);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "gpuir_buffer_make: backend 42 (invalid)");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_host_alloc(ctx, GPUIR_BACKEND_REF, 16) == NULL);
    CHECK_MSG(ctx, "gpuir_host_alloc: backend 3 (ref)");
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_host_register(ctx, (gpuir_backend)-1, host, sizeof host), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "gpuir_host_register: backend -1");
    gpuir_ctx_clear_error(ctx);
    CHECK_RESULT(ctx, gpuir_array_alloc_pinned(ctx, GPUIR_BACKEND_REF, &a, GPUIR_F32, 1, dims),
                 GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "gpuir_array_alloc_pinned: backend 3 (ref)");
    CHECK(array_empty(&a));
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_stream_make(ctx, (gpuir_backend)7) == NULL);
    CHECK_MSG(ctx, "gpuir_stream_make: backend 7");
    gpuir_ctx_destroy(ctx);
}

/* NEG_TEXT's module (*m) and a program of it on the interpreter. */
static gpuir_program *neg_on_the_interpreter(gpuir_ctx *ctx, gpuir_module **m) {
    *m = gpuir_module_parse(ctx, NEG_TEXT, strlen(NEG_TEXT), "f.gir");
    return gpuir_program_make(*m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_REF});
}

/* A context that already holds an error: runs hand out empty outputs. */
CHILD_TEST(a_run_after_an_error_leaves_outputs_empty) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m;
    gpuir_program *p = neg_on_the_interpreter(ctx, &m);
    CHECK(p != NULL);
    CHECK(gpuir_module_find_func(m, "nope").id == 0);
    gpuir_ref_run(m, "nope", 0, NULL, 0, NULL);             /* the first error */
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_NOT_FOUND);
    float data[4] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 1, {4}, data};
    gpuir_array out = garbage_array();
    CHECK(gpuir_ref_run(m, "f", 1, &in, 1, &out) == GPUIR_ERR_NOT_FOUND);
    CHECK(array_empty(&out));
    out = garbage_array();
    CHECK(gpuir_program_run(p, "f", 1, &in, 1, &out) == GPUIR_ERR_NOT_FOUND);
    CHECK(array_empty(&out));
    gpuir_array_release(&out);
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_program_run(p, "f", 1, NULL, 1, &out) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "inputs is NULL");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_program_run(p, "f", 1, &in, 1, NULL) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "outputs is NULL");
    gpuir_ctx_destroy(ctx);
}

/* A run on the emulator that fails after its outputs were handed out (a
   device buffer the program never frees, found as the run ends): the
   outputs are released and empty again. */
CHILD_TEST(a_run_that_fails_late_leaves_outputs_empty) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *text = "func.func @f(%a: memref<4xf32>) -> memref<4xf32> {\n"
                       "  %r = memref.alloc : () -> memref<4xf32>\n"
                       "  memref.copy %a, %r : (memref<4xf32>, memref<4xf32>) -> ()\n"
                       "  %d = gpu.alloc : () -> memref<4xf32, 1>\n"
                       "  gpu.memcpy %d, %a : (memref<4xf32, 1>, memref<4xf32>) -> ()\n"
                       "  return %r : memref<4xf32>\n}\n";
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "leak.gir");
    gpuir_program *p = gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU});
    if (!p) {
        fprintf(stderr, "skipped: %s\n", gpuir_ctx_error(ctx));
        gpuir_ctx_destroy(ctx);
        return;
    }
    float data[4] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 1, {4}, data};
    gpuir_array out = garbage_array();
    CHECK(gpuir_program_run(p, "f", 1, &in, 1, &out) == GPUIR_ERR_VERIFY);
    CHECK_MSG(ctx, "never freed");
    CHECK(array_empty(&out));
    gpuir_array_release(&out);
    gpuir_ctx_destroy(ctx);
}

/* A program whose module was destroyed first (the docs ask for the other
   order): a run, through either call, is an error naming that, where it
   read the freed module; destroying the program after is fine. On the
   interpreter's backend, which reads the module the same way. */
CHILD_TEST(a_program_run_after_its_module_is_destroyed_is_refused) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m;
    gpuir_program *p = neg_on_the_interpreter(ctx, &m);
    CHECK(p != NULL);
    gpuir_module_destroy(m);
    float data[4] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 1, {4}, data}, out = garbage_array();
    CHECK(gpuir_program_run(p, "f", 1, &in, 1, &out) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "the program's module was destroyed");
    CHECK(array_empty(&out));
    gpuir_ctx_clear_error(ctx);
    gpuir_arg a = gpuir_arg_host(in), o = gpuir_arg_host(out);
    gpuir_run_desc rd = {"f", 1, &a, 1, &o, (gpuir_stream){0}};
    CHECK(gpuir_program_run_args(p, &rd) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "program_run_args: the program's module was destroyed");
    gpuir_program_destroy(p);
    gpuir_ctx_destroy(ctx);
}

/* An array of some bytes whose data is NULL, given where gpuir reads it
   (a global's value, an array to write as .npy): refused by name, where
   both read through the NULL pointer. */
CHILD_TEST(an_array_with_null_data_is_refused_where_it_is_read) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *text = "global @w : tensor<4xf32>\n"
                       "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                       "  %w = get_global {name = @w} : () -> tensor<4xf32>\n"
                       "  %y = add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
                       "  return %y : tensor<4xf32>\n}\n";
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "g.gir");
    CHECK(m != NULL);
    gpuir_array none = {GPUIR_F32, 1, {4}, NULL};
    CHECK(gpuir_module_bind_global(m, "w", &none) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "bind_global has no data");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_npy_write(ctx, "/tmp/gpuir-never-written.npy", &none) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "npy_write has no data");
    gpuir_ctx_clear_error(ctx);
    gpuir_array empty = {GPUIR_F32, 1, {0}, NULL};     /* no bytes: nothing to read */
    CHECK(gpuir_npy_write(ctx, "/tmp/gpuir-misuse-empty.npy", &empty) == GPUIR_OK);
    remove("/tmp/gpuir-misuse-empty.npy");
    gpuir_ctx_destroy(ctx);
}

/* A FIFO or a device where a file is read (a module's text, a cache
   bundle): refused at once as no regular file, where a FIFO without a
   writer blocked for ever and /dev/zero was read until memory ran out. */
CHILD_TEST(a_fifo_or_device_is_refused_as_a_file) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    char fifo[64];
    snprintf(fifo, sizeof fifo, "/tmp/gpuir-misuse-fifo-%d", (int)getpid());
    CHECK(mkfifo(fifo, 0600) == 0);
    const char *paths[2] = {fifo, "/dev/zero"};
    for (int i = 0; i < 2; i++) {
        CHECK(gpuir_module_parse_file(ctx, paths[i]) == NULL);
        CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_IO);
        CHECK_MSG(ctx, "not a regular file (a FIFO, device or directory)");
        gpuir_ctx_clear_error(ctx);
        CHECK(gpuir_ctx_cache_import(ctx, paths[i], NULL) == GPUIR_ERR_IO);
        CHECK_MSG(ctx, "not a regular file");
        gpuir_ctx_clear_error(ctx);
    }
    unlink(fifo);
    gpuir_ctx_destroy(ctx);
}

/* A NULL function name runs the module's only host function, in the
   interpreter as in a program (on the interpreter's backend too: it said
   "no function named @(null)"); with two host functions it names none. */
CHILD_TEST(a_null_function_name_runs_the_only_host_function) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m;
    gpuir_program *p = neg_on_the_interpreter(ctx, &m);
    float data[4] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 1, {4}, data}, out = {GPUIR_F32, 0, {0}, NULL};
    CHECK(gpuir_ref_run(m, NULL, 1, &in, 1, &out) == GPUIR_OK);
    gpuir_array_release(&out);
    CHECK(gpuir_program_run(p, NULL, 1, &in, 1, &out) == GPUIR_OK);
    gpuir_array_release(&out);
    const char *two = "func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n"
                      "func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n";
    gpuir_module *m2 = gpuir_module_parse(ctx, two, strlen(two), "two.gir");
    CHECK(gpuir_ref_run(m2, NULL, 1, &in, 1, &out) == GPUIR_ERR_NOT_FOUND);
    CHECK_MSG(ctx, "ref_run: func is NULL, and the module has no one host function to take for it");
    gpuir_ctx_destroy(ctx);
}

/* What a call refuses is named as what it is: a reduction kind that is
   none, too many axes (one message blamed both), NULL bytes for a .npy
   (it said the magic was missing). */
CHILD_TEST(refusals_name_what_is_wrong) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    int64_t dims[1] = {4}, axes[1] = {0};
    gpuir_func_begin(m, "f");
    gpuir_value x = gpuir_param(m, "x", gpuir_tensor_type(GPUIR_F32, 1, dims));
    CHECK(gpuir_reduce(m, GPUIR_OP_REDUCE_SUM, x, (size_t)-1, axes, false).id == 0);
    CHECK_MSG(ctx, "reduce: 18446744073709551615 axes are more than a tensor of rank 8 has");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_reduce(m, GPUIR_OP_MATMUL, x, 1, axes, false).id == 0);
    CHECK_MSG(ctx, "(matmul) is not a reduction");
    gpuir_ctx_clear_error(ctx);
    gpuir_array a = garbage_array();
    CHECK(gpuir_npy_load(ctx, NULL, 100, &a) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "npy_load: bytes is NULL (100 bytes to read)");
    CHECK(array_empty(&a));
    gpuir_ctx_destroy(ctx);
}

/* A dim of -1 (GPUIR_DYN's value) in an input array is no size: refused
   by name on every backend, through program_run and run_args alike (it
   was taken for the `?` it stands for in types, and the run returned
   dims of -1). */
CHILD_TEST(a_negative_input_dim_is_refused_on_every_backend) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *text = "func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
                       "  %y = neg %x : (tensor<?x4xf32>) -> tensor<?x4xf32>\n"
                       "  return %y : tensor<?x4xf32>\n}\n";
    float data[16] = {1, 2, 3, 4};
    gpuir_array in = {GPUIR_F32, 2, {-1, 4}, data};
    const gpuir_backend backends[2] = {GPUIR_BACKEND_EMU, GPUIR_BACKEND_REF};
    for (int b = 0; b < 2; b++) {
        gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "f.gir");
        gpuir_program *p = gpuir_program_make(m, &(gpuir_program_desc){.backend = backends[b]});
        CHECK(p != NULL);
        gpuir_array out = garbage_array();
        CHECK(gpuir_program_run(p, "f", 1, &in, 1, &out) == GPUIR_ERR_SHAPE);
        CHECK_MSG(ctx, "input #0: dimension 0 is -1");
        CHECK(array_empty(&out));
        gpuir_ctx_clear_error(ctx);
        gpuir_arg arg_in = {GPUIR_ARG_HOST, in, {0}}, arg_out = {GPUIR_ARG_NONE, {0}, {0}};
        gpuir_run_desc run = {.func = "f", .n_inputs = 1, .inputs = &arg_in, .n_outputs = 1, .outputs = &arg_out};
        if (backends[b] != GPUIR_BACKEND_REF) {       /* the interpreter's runs take host arrays only */
            CHECK(gpuir_program_run_args(p, &run) == GPUIR_ERR_SHAPE);
            CHECK_MSG(ctx, "dimension 0 is -1");
            gpuir_array_release(&arg_out.host);
            gpuir_ctx_clear_error(ctx);
        }
        gpuir_program_destroy(p);
        gpuir_module_destroy(m);
    }
    gpuir_ctx_destroy(ctx);
}

/* An output that is an input's gpuir_array: refused before outputs are
   zeroed, so the input keeps its data (the run zeroed it, then blamed
   the input's dtype, and the caller's data leaked). */
CHILD_TEST(an_output_that_is_an_input_is_refused) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m;
    gpuir_program *p = neg_on_the_interpreter(ctx, &m);
    float data[4] = {1, 2, 3, 4};
    gpuir_array a = {GPUIR_F32, 1, {4}, data};
    CHECK(gpuir_ref_run(m, "f", 1, &a, 1, &a) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "ref_run: output #0 is the gpuir_array of input #0 (outputs receive new arrays");
    CHECK(a.data == data && a.dims[0] == 4 && data[3] == 4);
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_program_run(p, "f", 1, &a, 1, &a) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "program_run: output #0 is the gpuir_array of input #0");
    CHECK(a.data == data && a.rank == 1);
    gpuir_ctx_clear_error(ctx);
    gpuir_array out = {0};
    CHECK(gpuir_ref_run(m, "f", 1, &a, 1, &out) == GPUIR_OK);     /* another array: fine */
    gpuir_array_release(&out);
    gpuir_ctx_destroy(ctx);
}

/* Arguments no call can use: a NaN or negative tolerance (a mismatch at
   an element that matched), pinned memory past max_tensor_bytes (ASan
   aborted in malloc), a wrapped device range past the address space,
   flag bits no matmul flag has (dropped silently), an array count past
   2^63 (it wrapped). */
CHILD_TEST(arguments_no_call_can_use_are_refused) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    float x[2] = {0, 1};
    gpuir_array a = {GPUIR_F32, 1, {2}, x};
    CHECK(gpuir_array_compare(ctx, &a, &a, NAN, 0) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "compare: rtol is nan (a tolerance is 0 or more)");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_array_compare(ctx, &a, &a, 0, -1) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "compare: atol is -1");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_array_compare(ctx, &a, &a, 0, 0) == GPUIR_OK);
    CHECK(gpuir_host_alloc(ctx, GPUIR_BACKEND_EMU, SIZE_MAX) == NULL);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_LIMIT);
    CHECK_MSG(ctx, "gpuir_host_alloc: 18446744073709551615 bytes, more than max_tensor_bytes");
    gpuir_ctx_clear_error(ctx);
    gpuir_buffer_desc d = {.backend = GPUIR_BACKEND_EMU, .dtype = GPUIR_F32, .rank = 1, .dims = {16},
                           .device_ptr = UINT64_MAX - 15};
    CHECK(gpuir_buffer_make(ctx, &d).id == 0);
    CHECK_MSG(ctx, "gpuir_buffer_make: device_ptr 0xfffffffffffffff0 + 64 bytes is past the address space");
    gpuir_ctx_clear_error(ctx);
    gpuir_module *m = gpuir_module_make(ctx);
    int64_t dims[2] = {4, 4};
    gpuir_func_begin(m, "f");
    gpuir_value w = gpuir_param(m, "w", gpuir_tensor_type(GPUIR_F32, 2, dims));
    CHECK(gpuir_matmul(m, w, w, GPUIR_TRANSPOSE_B | (1u << 31)).id == 0);
    CHECK_MSG(ctx, "matmul: flags 0x80000002: bits 0x80000000 are no GPUIR_ matmul flag");
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_matmul_k_slices(m, w, w, 64u, 2).id == 0);
    CHECK_MSG(ctx, "matmul_k_slices: flags 0x40: bits 0x40 are no GPUIR_ matmul flag");
    gpuir_ctx_clear_error(ctx);
    gpuir_array big = {GPUIR_F32, 2, {INT64_MAX, 4}, NULL}, neg = {GPUIR_F32, 1, {-5}, NULL};
    CHECK(gpuir_array_count(&big) == 0 && gpuir_array_count(&neg) == 0);
    CHECK(gpuir_module_bind_global(m, NULL, &a) == GPUIR_ERR_INVALID_ARGUMENT);   /* was "no global @(null)" */
    CHECK_MSG(ctx, "bind_global: name is NULL");
    gpuir_ctx_clear_error(ctx);
    gpuir_module_set_target(m, (gpuir_target){80, -3});     /* was taken as 0: an H100's 132 */
    CHECK_MSG(ctx, "gpuir_module_set_target: sm_count -3 is negative");
    CHECK(gpuir_module_target(m).sm == 90 && gpuir_module_target(m).sm_count == 132);
    gpuir_ctx_destroy(ctx);
}

/* gpuir_matmul_k_slices takes the wgmma flags as gpuir_matmul does (it
   dropped them): the attribute `wgmma` is written. */
CHILD_TEST(k_slices_take_the_wgmma_flags) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = gpuir_module_make(ctx);
    int64_t da[2] = {16, 128}, db[2] = {128, 16};
    gpuir_func_begin(m, "f");
    gpuir_value a = gpuir_param(m, "a", gpuir_tensor_type(GPUIR_BF16, 2, da));
    gpuir_value b = gpuir_param(m, "b", gpuir_tensor_type(GPUIR_BF16, 2, db));
    gpuir_value s = gpuir_matmul_k_slices(m, a, b, GPUIR_NO_WGMMA, 2);
    CHECK(s.id != 0);
    CHECK(gpuir_func_return(m, 1, &s) == GPUIR_OK);
    char *text = gpuir_module_print(m);
    CHECK(text && strstr(text, "k_slices = 2") && strstr(text, "wgmma = false"));
    gpuir_free(text);
    gpuir_ctx_destroy(ctx);
}

/* A refusal names the call the user made: a NULL path of a cache bundle
   (it said "write:" and "read:"), a pinned array released twice (it named
   gpuir_host_free); a failed import counts 0 modules. */
CHILD_TEST(refusals_name_the_call_made) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    CHECK(gpuir_ctx_cache_export(ctx, NULL, NULL) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "cache_export: path is NULL");
    gpuir_ctx_clear_error(ctx);
    size_t count = 99;
    CHECK(gpuir_ctx_cache_import(ctx, NULL, &count) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "cache_import: path is NULL");
    CHECK(count == 0);
    gpuir_ctx_clear_error(ctx);
    gpuir_array a;
    CHECK(gpuir_array_alloc_pinned(ctx, GPUIR_BACKEND_EMU, &a, GPUIR_F32, 1, (int64_t[]){4}) == GPUIR_OK);
    gpuir_array copy = a;
    gpuir_array_release_pinned(ctx, &a);
    CHECK(a.data == NULL && gpuir_ctx_result(ctx) == GPUIR_OK);
    gpuir_array_release_pinned(ctx, &copy);
    CHECK(gpuir_ctx_result(ctx) == GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, "gpuir_array_release_pinned: ");
    CHECK_MSG(ctx, "is not memory gpuir_array_alloc_pinned gave this context (released already");
    gpuir_ctx_destroy(ctx);
}

/* The emulator's compiler named "" or one that exits 0 and writes nothing:
   errors about the compiler (they were "could not be started" with an
   empty name, and a CUDA driver error about an invalid image). */
CHILD_TEST(a_compiler_that_is_none_or_writes_nothing_is_named) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *ccs[2] = {"", "true"};
    const gpuir_result want[2] = {GPUIR_ERR_INVALID_ARGUMENT, GPUIR_ERR_COMPILE};
    const char *msg[2] = {"emu: desc.cc is \"\": name a C compiler", "emu: true exited 0 but wrote no shared object"};
    for (int i = 0; i < 2; i++) {
        gpuir_module *m = gpuir_module_parse(ctx, NEG_TEXT, strlen(NEG_TEXT), "f.gir");
        gpuir_program *p = gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU, .cc = ccs[i]});
        CHECK(p == NULL);
        CHECK(gpuir_ctx_result(ctx) == want[i]);
        CHECK_MSG(ctx, msg[i]);
        gpuir_ctx_clear_error(ctx);
        gpuir_module_destroy(m);
    }
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(null_ctx_is_accepted_by_every_call);
    RUN(null_ctx_device_calls_report_out_of_memory);
    RUN(array_access_past_the_end_touches_nothing);
    RUN(a_failed_cache_export_counts_no_modules);
    RUN(a_bad_shape_is_the_same_error_from_every_allocating_call);
    RUN(null_module_is_accepted_by_every_call);
    RUN(null_program_is_accepted_by_every_call);
    RUN(a_failed_parse_flows_through_to_one_check_at_the_end);
    RUN(the_readme_path_without_a_compiler);
    RUN(null_dims_axes_perm_and_ranks_out_of_range_are_refused);
    RUN(a_value_of_another_module_is_refused);
    RUN(an_unknown_backend_is_refused);
    RUN(a_type_of_an_impossible_rank_prints_as_invalid);
    RUN(a_device_call_names_itself_and_the_backend_it_refuses);
    RUN(a_run_after_an_error_leaves_outputs_empty);
    RUN(a_run_that_fails_late_leaves_outputs_empty);
    RUN(a_program_run_after_its_module_is_destroyed_is_refused);
    RUN(an_array_with_null_data_is_refused_where_it_is_read);
    RUN(a_fifo_or_device_is_refused_as_a_file);
    RUN(a_null_function_name_runs_the_only_host_function);
    RUN(refusals_name_what_is_wrong);
    RUN(a_negative_input_dim_is_refused_on_every_backend);
    RUN(an_output_that_is_an_input_is_refused);
    RUN(arguments_no_call_can_use_are_refused);
    RUN(k_slices_take_the_wgmma_flags);
    RUN(refusals_name_the_call_made);
    RUN(a_compiler_that_is_none_or_writes_nothing_is_named);
    return CHECK_EXIT();
}

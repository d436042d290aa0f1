/* The C test harness: TEST functions with CHECK lines, run by RUN in main.
   Each RUN prints "PASS name", "FAIL name" or "SKIP name (why)"; the runner
   counts those lines. main returns non-zero if anything failed. Below the
   harness, the helpers the tests share (parse, CHECK_MSG, TEST_ASAN). A
   test includes gpuir.h first (with GPUIR_IMPLEMENTATION where it compiles
   the implementation itself), then this file. */
#ifndef GPUIR_TESTS_CHECK_H
#define GPUIR_TESTS_CHECK_H
#include "../gpuir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check__failed, check__total_failed;
static const char *check__skip;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check__failed = 1;                                                       \
        }                                                                            \
    } while (0)

/* Checks a gpuir_result against the expected code, and prints the context
   error when they differ. */
#define CHECK_RESULT(ctx, got, want)                                                   \
    do {                                                                               \
        gpuir_result check__r = (got);                                                 \
        if (check__r != (want)) {                                                      \
            fprintf(stderr, "%s:%d: got %s, want %s: %s\n", __FILE__, __LINE__,        \
                    gpuir_result_name(check__r), gpuir_result_name(want),              \
                    gpuir_ctx_error(ctx));                                             \
            check__failed = 1;                                                         \
        }                                                                              \
    } while (0)

#define CHECK_NEAR(got, want, tol)                                                     \
    do {                                                                               \
        double check__g = (got), check__w = (want);                                    \
        if (!(fabs(check__g - check__w) <= (tol))) {                                   \
            fprintf(stderr, "%s:%d: got %.17g, want %.17g (tol %g)\n", __FILE__,       \
                    __LINE__, check__g, check__w, (double)(tol));                      \
            check__failed = 1;                                                         \
        }                                                                              \
    } while (0)

#define SKIP(why) do { check__skip = (why); return; } while (0)

#define TEST(name) static void name(void)

#define RUN(name)                                                                      \
    do {                                                                               \
        check__failed = 0;                                                             \
        check__skip = NULL;                                                            \
        name();                                                                        \
        if (check__skip && !check__failed) printf("SKIP %s (%s)\n", #name, check__skip); \
        else printf("%s %s\n", check__failed ? "FAIL" : "PASS", #name);                \
        fflush(stdout);                                                                \
        check__total_failed += check__failed;                                          \
    } while (0)

#define CHECK_EXIT() (check__total_failed ? 1 : 0)

/* ---- helpers shared by the tests --------------------------------------- */

/* The context's error message contains `part`; prints the message when not. */
#define CHECK_MSG(ctx, part)                                                           \
    do {                                                                               \
        if (!strstr(gpuir_ctx_error(ctx), (part))) {                                   \
            fprintf(stderr, "%s:%d: message lacks \"%s\": \"%s\"\n", __FILE__, __LINE__, \
                    (part), gpuir_ctx_error(ctx));                                     \
            check__failed = 1;                                                         \
        }                                                                              \
    } while (0)

/* 1 in a build with AddressSanitizer. */
#if defined(__SANITIZE_ADDRESS__)
#  define TEST_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define TEST_ASAN 1
#  endif
#endif
#ifndef TEST_ASAN
#  define TEST_ASAN 0
#endif

/* RUN in the plain build only: for a test whose time goes to NVRTC
   compiling whole test programs (seconds each). Under ASan it would check
   no more host code: the CUDA C is one text, rendered by the codegen that
   test_backends runs under ASan over every program of tests/ir/run, and
   NVRTC is not instrumented; the small NVRTC tests still run under ASan. */
#define RUN_PLAIN(name)              \
    do {                             \
        if (!TEST_ASAN) RUN(name);   \
    } while (0)

/* The first 20 bytes of a cubin as a bundle's import checks them: a 64-bit
   little-endian ELF executable for EM_CUDA (190); a test's module bytes
   follow it. */
#define CUDA_ELF_HEADER "\177ELF\2\1\1\0\0\0\0\0\0\0\0\0\2\0\276\0"

/* ---- programs several tests run ------------------------------------------ */

/* @f: an elementwise chain with a broadcast, and a row reduction. */
#define CHAIN_TEXT                                                                                  \
    "func.func @f(%x: tensor<5x7xf32>, %b: tensor<7xf32>) -> (tensor<5x7xf32>, tensor<5xf32>) {\n"  \
    "  %e = exp %x : (tensor<5x7xf32>) -> tensor<5x7xf32>\n"                                        \
    "  %a = add %e, %b : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>\n"                      \
    "  %s = reduce_sum %x {axes = [1]} : (tensor<5x7xf32>) -> tensor<5xf32>\n"                      \
    "  return %a, %s : tensor<5x7xf32>, tensor<5xf32>\n}\n"

/* @g: two independent matmuls, a reduction of a shared input and a value
   used by both: several streams with events between them. */
#define STREAMS_TEXT                                                                                         \
    "func.func @g(%a: tensor<32x48xf32>, %b: tensor<48x40xf32>, %c: tensor<32x48xf32>, %d: tensor<48x40xf32>)" \
    " -> (tensor<32x40xf32>, tensor<32x40xf32>, tensor<32xf32>) {\n"                                          \
    "  %x = matmul %a, %b : (tensor<32x48xf32>, tensor<48x40xf32>) -> tensor<32x40xf32>\n"                    \
    "  %y = matmul %c, %d : (tensor<32x48xf32>, tensor<48x40xf32>) -> tensor<32x40xf32>\n"                    \
    "  %s = reduce_sum %a {axes = [1]} : (tensor<32x48xf32>) -> tensor<32xf32>\n"                             \
    "  %t = add %x, %y : (tensor<32x40xf32>, tensor<32x40xf32>) -> tensor<32x40xf32>\n"                       \
    "  %r = relu %y : (tensor<32x40xf32>) -> tensor<32x40xf32>\n"                                             \
    "  return %t, %r, %s : tensor<32x40xf32>, tensor<32x40xf32>, tensor<32xf32>\n}\n"

/* @g: x (3x6) times the global @W (6x4). */
#define GLOBAL_MATMUL_TEXT                                                             \
    "global @W : tensor<6x4xf32>\n"                                                    \
    "func.func @g(%x: tensor<3x6xf32>) -> tensor<3x4xf32> {\n"                         \
    "  %w = get_global {name = @W} : () -> tensor<6x4xf32>\n"                          \
    "  %m = matmul %x, %w : (tensor<3x6xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>\n"   \
    "  return %m : tensor<3x4xf32>\n}\n"

/* @f: one neg of a tensor<4xf32>. */
#define NEG_TEXT                                                   \
    "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"         \
    "  %y = neg %x : (tensor<4xf32>) -> tensor<4xf32>\n"           \
    "  return %y : tensor<4xf32>\n}\n"

/* ---- parsing ----------------------------------------------------------- */

/* Parses text as a file named `name` (diagnostics say name:line:col). */
static inline gpuir_module *parse_as(gpuir_ctx *ctx, const char *text, const char *name) {
    return gpuir_module_parse(ctx, text, strlen(text), name);
}

/* Parses text as a file named "test"; says why on stderr when it fails. */
static inline gpuir_module *parse(gpuir_ctx *ctx, const char *text) {
    gpuir_module *m = parse_as(ctx, text, "test");
    if (!m) fprintf(stderr, "parse failed: %s\n", gpuir_ctx_error(ctx));
    return m;
}

#endif

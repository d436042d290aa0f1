/* The C test harness: TEST functions with CHECK lines, run by RUN in main.
   Each RUN prints "PASS name", "FAIL name" or "SKIP name (why)"; the runner
   counts those lines. main returns non-zero if anything failed. */
#ifndef GPUIR_TESTS_CHECK_H
#define GPUIR_TESTS_CHECK_H
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

#endif

/* gpuir's environment variables, read one strict way: a malformed value
   ("2 ", 0x2, -2, abc, a number too big to hold) is never taken for the
   default in silence, but is GPUIR_ERR_INVALID_ARGUMENT naming the variable
   and its value, from the call that reads it (gpuir_ctx_make for GPUIR_LOG
   and GPUIR_CACHE_DISABLE, an emulator program's make for GPUIR_CC_TIMEOUT,
   GPUIR_EMU_MAX_THREADS and GPUIR_EMU_SHUFFLE); a switch reads 0/1 and
   false/true, no/yes, off/on, each meaning what it says; the cache's status
   says why each variable that names a directory was passed over. */
#define _POSIX_C_SOURCE 200809L
#include "../../gpuir.h"
#include "../check.h"

#include <stdlib.h>
#include <unistd.h>

/* Makes an emulator program of NEG_TEXT in a context without a disk cache. */
static gpuir_program *make_emu(gpuir_ctx *ctx) {
    static const char text[] = NEG_TEXT;
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "neg");
    return m ? gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU}) : NULL;
}

/* Sets name=value, makes an emulator program, and checks that the make
   is refused naming the variable and the value (want: the message's text). */
static void check_refused(const char *name, const char *value, const char *want) {
    setenv(name, value, 1);
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    gpuir_program *p = make_emu(ctx);
    CHECK(p == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK_MSG(ctx, want);
    gpuir_ctx_destroy(ctx);
    unsetenv(name);
}

/* Sets name=value and checks that an emulator program is made. */
static void check_taken(const char *name, const char *value) {
    setenv(name, value, 1);
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
    gpuir_program *p = make_emu(ctx);
    CHECK(p != NULL);
    if (!p) fprintf(stderr, "  %s='%s': %s\n", name, value, gpuir_ctx_error(ctx));
    gpuir_ctx_destroy(ctx);
    unsetenv(name);
}

static const char *const malformed_counts[] = {"2 ", " 2", "0x2", "+2", "-2", "2e0", "abc", "2x",
                                               "99999999999999999999999"};

TEST(a_malformed_emulator_variable_fails_the_make_naming_it) {
    char want[128];
    for (size_t i = 0; i < sizeof malformed_counts / sizeof *malformed_counts; i++) {
        snprintf(want, sizeof want, "emu: GPUIR_EMU_MAX_THREADS='%s' is not a whole number", malformed_counts[i]);
        check_refused("GPUIR_EMU_MAX_THREADS", malformed_counts[i], want);
        snprintf(want, sizeof want, "emu: GPUIR_EMU_SHUFFLE='%s' is not a whole number", malformed_counts[i]);
        check_refused("GPUIR_EMU_SHUFFLE", malformed_counts[i], want);
    }
    check_refused("GPUIR_EMU_MAX_THREADS", "0", "GPUIR_EMU_MAX_THREADS='0' is not a whole number of threads above 0");
    for (const char *const *v = (const char *const[]){" 3", "0x3", "+3", "3s", "inf", "nan", "1e10", NULL}; *v; v++) {
        snprintf(want, sizeof want, "emu: GPUIR_CC_TIMEOUT='%s' is not a number of seconds", *v);
        check_refused("GPUIR_CC_TIMEOUT", *v, want);
    }
    check_taken("GPUIR_EMU_MAX_THREADS", "18446744073709551615");
    check_taken("GPUIR_EMU_SHUFFLE", "0");
    check_taken("GPUIR_EMU_SHUFFLE", "7");
    check_taken("GPUIR_CC_TIMEOUT", "2.5e2");
    check_taken("GPUIR_CC_TIMEOUT", "");
}

TEST(a_malformed_gpuir_log_is_the_new_contexts_error) {
    for (const char *const *v = (const char *const[]){"on", "10", "3", "1 ", "-1", NULL}; *v; v++) {
        setenv("GPUIR_LOG", *v, 1);
        gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = ""});
        CHECK(ctx != NULL);
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
        char want[64];
        snprintf(want, sizeof want, "GPUIR_LOG='%s' is not 0, 1 or 2", *v);
        CHECK_MSG(ctx, want);
        CHECK(make_emu(ctx) == NULL);                 /* nothing runs on it unseen */
        gpuir_ctx_destroy(ctx);
    }
    setenv("GPUIR_LOG", "0", 1);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    gpuir_ctx_destroy(ctx);
    unsetenv("GPUIR_LOG");
}

/* The disk cache's status after making a context with GPUIR_CACHE_DISABLE=value
   and the cache directory dir; its result in *result. */
static void cache_status(const char *value, const char *dir, char *out, size_t size, gpuir_result *result) {
    setenv("GPUIR_CACHE_DISABLE", value, 1);
    gpuir_ctx *ctx = gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = dir});
    *result = gpuir_ctx_result(ctx);
    snprintf(out, size, "%s", *result ? gpuir_ctx_error(ctx) : gpuir_ctx_cache_status(ctx));
    gpuir_ctx_destroy(ctx);
    unsetenv("GPUIR_CACHE_DISABLE");
}

TEST(gpuir_cache_disable_means_what_it_says) {
    char dir[] = "/tmp/gpuir-env-XXXXXX", status[512];
    CHECK(mkdtemp(dir) != NULL);
    gpuir_result r;
    for (const char *const *v = (const char *const[]){"0", "false", "FALSE", "no", "off", NULL}; *v; v++) {
        cache_status(*v, dir, status, sizeof status, &r);
        CHECK(r == GPUIR_OK && strcmp(status, "ok") == 0);
        if (strcmp(status, "ok") != 0) fprintf(stderr, "  GPUIR_CACHE_DISABLE=%s: %s\n", *v, status);
    }
    for (const char *const *v = (const char *const[]){"1", "true", "Yes", "on", NULL}; *v; v++) {
        cache_status(*v, dir, status, sizeof status, &r);
        CHECK(r == GPUIR_OK && strstr(status, "disk cache off: GPUIR_CACHE_DISABLE=") != NULL);
    }
    for (const char *const *v = (const char *const[]){"2", "maybe", "1 ", "disable", NULL}; *v; v++) {
        cache_status(*v, dir, status, sizeof status, &r);
        char want[128];
        snprintf(want, sizeof want, "GPUIR_CACHE_DISABLE='%s' is not 0 or 1 (or false/true, no/yes, off/on)", *v);
        CHECK(r == GPUIR_ERR_INVALID_ARGUMENT && strstr(status, want) != NULL);
        if (!strstr(status, want)) fprintf(stderr, "  %s\n", status);
    }
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

TEST(no_cache_directory_says_why_each_variable_was_passed_over) {
    const char *names[] = {"GPUIR_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    char *saved[3];
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        saved[i] = v ? strdup(v) : NULL;
    }
    unsetenv("GPUIR_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "relative", 1);
    setenv("HOME", "", 1);
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const char *status = gpuir_ctx_cache_status(ctx);
    CHECK(strstr(status, "GPUIR_CACHE_DIR is unset") != NULL);
    CHECK(strstr(status, "XDG_CACHE_HOME is relative") != NULL);
    CHECK(strstr(status, "HOME is empty") != NULL);
    if (!strstr(status, "HOME is empty")) fprintf(stderr, "  status: %s\n", status);
    gpuir_ctx_destroy(ctx);
    for (int i = 0; i < 3; i++) {
        if (saved[i]) setenv(names[i], saved[i], 1);
        else unsetenv(names[i]);
        free(saved[i]);
    }
}

int main(void) {
    RUN(a_malformed_emulator_variable_fails_the_make_naming_it);
    RUN(a_malformed_gpuir_log_is_the_new_contexts_error);
    RUN(gpuir_cache_disable_means_what_it_says);
    RUN(no_cache_directory_says_why_each_variable_was_passed_over);
    return CHECK_EXIT();
}

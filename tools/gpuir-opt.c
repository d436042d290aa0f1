/* gpuir-opt: parse, verify and print gpuir text, in the manner of mlir-opt.

   gpuir-opt [options] FILE       (FILE may be - for standard input)
     --passes=A,B,...     run these passes (verifying after each) before printing
     --lower              the default pipeline, tensor level to placed program:
                          decompose,canonicalize,split-k,fuse,bufferize,outline,place,
                          configure,plan-shared-memory,async
     --lower=sync         the same without async: one stream, program order
     --emit=ir|placement|dot|cuda  print the IR (default), the placement
                          report, a Graphviz graph of buffers, copies and
                          launches, or the kernels as CUDA C (after --lower)
     --print-ir-before=P  dump the IR to stderr before pass P ("*": every pass)
     --print-ir-after=P   dump the IR to stderr after pass P
     --print-ir-after-all the same as --print-ir-after='*'
     --timing             print each pass's CPU time to stderr
     --list-passes        list the passes and exit
     --split-input-file   treat each `// -----` separated chunk as a module
     --verify-roundtrip   also check that print(parse(print(m))) == print(m)
     --target=sm_XX       plan kernels for that architecture (default sm_90:
                          tensor cores from sm_75, wgmma only on sm_90)
     --sm-count=N         plan launches for a device of N multiprocessors
                          (default: an H100's 132; a matmul's tiles depend on it)
     -o FILE              write the output to FILE instead of standard output
   Exit status 0 on success; 1 with the diagnostic on standard error. */
#define GPUIR_IMPLEMENTATION
#include "../gpuir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct opt_args {
    const char *input, *output, *passes, *emit;
    gpuir_target target;    /* --target, --sm-count: the device the passes plan for */
    bool split, roundtrip;
    gpuir_pass_desc pass_desc;
} opt_args;

static int usage(void) {
    fprintf(stderr, "usage: gpuir-opt [--passes=A,B | --lower[=sync]] [--emit=ir|placement|dot|cuda]\n"
                    "                 [--print-ir-before=P] [--print-ir-after=P]\n"
                    "                 [--print-ir-after-all] [--timing] [--list-passes]\n"
                    "                 [--split-input-file] [--verify-roundtrip]\n"
                    "                 [--target=sm_XX] [--sm-count=N]\n"
                    "                 [-o OUT] FILE\n");
    return 2;
}

static int list_passes(void) {
    for (size_t i = 0; i < gpuir_pass_count(); i++)
        printf("  %-14s %s\n", gpuir_pass_name(i), gpuir_pass_summary(i));
    return 0;
}

/* "--name=value" -> value, or NULL if arg is not that option. */
static const char *opt(const char *arg, const char *name) {
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

/* A positive count from option `name`'s text, else a message and false. */
static bool count_option(const char *name, const char *text, const char *wants, int *out) {
    char *end;
    long n = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || n < 1 || n > 100000) {
        fprintf(stderr, "gpuir-opt: %s wants %s, not '%s'\n", name, wants, text);
        return false;
    }
    *out = (int)n;
    return true;
}

static char *read_all(FILE *f, size_t *n) {
    size_t cap = 1 << 16, len = 0;
    char *buf = (char *)malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *bigger = (char *)realloc(buf, cap *= 2);
            if (!bigger) { free(buf); return NULL; }
            buf = bigger;
        }
    }
    *n = len;
    return buf;
}

/* Parses one chunk, runs the passes and prints it to `out`; reports errors
   on stderr. */
static bool run_chunk(const char *text, size_t len, const char *name, const opt_args *a, FILE *out) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = ctx ? gpuir_module_parse(ctx, text, len, name) : NULL;
    if (m) gpuir_module_set_target(m, a->target);
    if (m && a->passes && gpuir_module_run_passes(m, a->passes, &a->pass_desc) != GPUIR_OK) m = NULL;
    char *printed = m ? gpuir_module_print(m) : NULL;
    bool ok = printed != NULL;
    if (ok && a->roundtrip) {
        gpuir_module *again = gpuir_module_parse(ctx, printed, strlen(printed), "<printed>");
        char *second = again ? gpuir_module_print(again) : NULL;
        ok = second && strcmp(second, printed) == 0;
        if (second && !ok) fprintf(stderr, "%s: error: print -> parse -> print is not a fixed point\n", name);
        gpuir_free(second);
    }
    if (ok && a->emit && strcmp(a->emit, "placement") == 0) fputs(gpuir_module_placement_report(m), out);
    else if (ok && a->emit && strcmp(a->emit, "dot") == 0) {
        char *dot = gpuir_module_print_dot(m);
        if (dot) fputs(dot, out);
        ok = dot != NULL;
        gpuir_free(dot);
    } else if (ok && a->emit && strcmp(a->emit, "cuda") == 0) {
        char *cuda = gpuir_module_emit_cuda(m);
        if (cuda) fputs(cuda, out);
        ok = cuda != NULL;
        gpuir_free(cuda);
    } else if (ok) fputs(printed, out);
    if (!ok && ctx && gpuir_ctx_result(ctx) != GPUIR_OK) fprintf(stderr, "%s\n", gpuir_ctx_error(ctx));
    gpuir_free(printed);
    gpuir_ctx_destroy(ctx);
    return ok;
}

/* Each chunk keeps its line numbers: the lines before it become blank. */
static bool run_split(const char *text, size_t len, const char *name, const opt_args *a, FILE *out) {
    const char *sep = "// -----";
    bool ok = true;
    size_t start = 0, newlines = 0, chunk = 0;
    while (start <= len) {
        size_t end = start;
        while (end < len) {
            bool at_line_start = end == 0 || text[end - 1] == '\n';
            if (at_line_start && len - end >= strlen(sep) && memcmp(text + end, sep, strlen(sep)) == 0)
                break;
            end++;
        }
        char *buf = (char *)malloc(newlines + (end - start) + 1);
        if (!buf) return false;
        memset(buf, '\n', newlines);
        memcpy(buf + newlines, text + start, end - start);
        if (chunk++) fprintf(out, "// -----\n");
        ok = run_chunk(buf, newlines + end - start, name, a, out) && ok;
        free(buf);
        for (size_t i = start; i < end; i++) newlines += text[i] == '\n';
        if (end >= len) break;
        while (end < len && text[end] != '\n') end++;   /* skip the separator line */
        newlines++;
        start = end + 1;
    }
    return ok;
}

int main(int argc, char **argv) {
    opt_args a;
    memset(&a, 0, sizeof a);
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = opt(argv[i], "--passes"))) a.passes = v;
        else if (strcmp(argv[i], "--lower") == 0) a.passes = GPUIR_DEFAULT_PIPELINE;
        else if (strcmp(argv[i], "--lower=sync") == 0) a.passes = GPUIR_SYNC_PIPELINE;
        else if ((v = opt(argv[i], "--emit"))) a.emit = v;
        else if ((v = opt(argv[i], "--sm-count"))) {
            if (!count_option("--sm-count", v, "a count of multiprocessors", &a.target.sm_count)) return 2;
        } else if ((v = opt(argv[i], "--target"))) {
            if (strncmp(v, "sm_", 3) != 0) {
                fprintf(stderr, "gpuir-opt: --target wants sm_XX (e.g. sm_90), not '%s'\n", v);
                return 2;
            }
            if (!count_option("--target", v + 3, "sm_XX (e.g. sm_90)", &a.target.sm)) return 2;
        }
        else if ((v = opt(argv[i], "--print-ir-before"))) a.pass_desc.print_ir_before = v;
        else if ((v = opt(argv[i], "--print-ir-after"))) a.pass_desc.print_ir_after = v;
        else if (strcmp(argv[i], "--print-ir-after-all") == 0) a.pass_desc.print_ir_after = "*";
        else if (strcmp(argv[i], "--timing") == 0) a.pass_desc.timing = true;
        else if (strcmp(argv[i], "--list-passes") == 0) return list_passes();
        else if (strcmp(argv[i], "--split-input-file") == 0) a.split = true;
        else if (strcmp(argv[i], "--verify-roundtrip") == 0) a.roundtrip = true;
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) a.output = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1] != '\0') return usage();
        else if (!a.input) a.input = argv[i];
        else return usage();
    }
    if (!a.input) return usage();
    if (a.emit && strcmp(a.emit, "ir") != 0 && strcmp(a.emit, "placement") != 0 &&
        strcmp(a.emit, "dot") != 0 && strcmp(a.emit, "cuda") != 0)
        return usage();
    FILE *in = strcmp(a.input, "-") == 0 ? stdin : fopen(a.input, "rb");
    if (!in) { fprintf(stderr, "gpuir-opt: cannot open '%s'\n", a.input); return 1; }
    size_t len;
    char *text = read_all(in, &len);
    if (in != stdin) fclose(in);
    if (!text) { fprintf(stderr, "gpuir-opt: cannot read '%s'\n", a.input); return 1; }
    FILE *out = a.output ? fopen(a.output, "w") : stdout;
    if (!out) { fprintf(stderr, "gpuir-opt: cannot create '%s'\n", a.output); free(text); return 1; }
    const char *name = strcmp(a.input, "-") == 0 ? "<stdin>" : a.input;
    bool ok = a.split ? run_split(text, len, name, &a, out) : run_chunk(text, len, name, &a, out);
    if (out != stdout) fclose(out);
    free(text);
    return ok ? 0 : 1;
}

/* gpuir-opt: parse, verify and print gpuir text, in the manner of mlir-opt.

   gpuir-opt [options] FILE       (FILE may be - for standard input)
     --passes=A,B,...     run these passes (verifying after each) before printing
     --lower              the default pipeline, tensor level to placed program:
                          decompose,canonicalize,attention,split-k,stage-matmul,fuse,bufferize,outline,
                          place,configure,plan-shared-memory,async
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
     --help, --version    a line per flag; the version (both to stdout, status 0)
   Options are read with getopt_long (tools/cli.h): an unknown flag is named
   in the error, numbers and pass names are checked. --emit=cuda lowers a
   tensor-level module itself. Exit status 0 on success; 1 with the
   diagnostic on standard error; 2 for a bad command line. */
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

#include "cli.h"

enum { O_PASSES = 256, O_LOWER, O_EMIT, O_PRINT_BEFORE, O_PRINT_AFTER, O_PRINT_AFTER_ALL, O_TIMING, O_LIST_PASSES,
       O_SPLIT, O_ROUNDTRIP, O_TARGET, O_SM_COUNT };

static const cli_flag flags[] = {
    {"passes", required_argument, O_PASSES, "A,B,...", "run these passes (verifying after each) before printing"},
    {"lower", optional_argument, O_LOWER, "sync", "the default pipeline to a placed program (=sync: one stream)"},
    {"emit", required_argument, O_EMIT, "KIND", "ir (default), placement, dot, or cuda (lowers first if needed)"},
    {"print-ir-before", required_argument, O_PRINT_BEFORE, "PASS", "dump the IR to stderr before PASS ('*': every pass)"},
    {"print-ir-after", required_argument, O_PRINT_AFTER, "PASS", "dump the IR to stderr after PASS ('*': every pass)"},
    {"print-ir-after-all", no_argument, O_PRINT_AFTER_ALL, NULL, "the same as --print-ir-after='*'"},
    {"timing", no_argument, O_TIMING, NULL, "print each pass's CPU time to stderr"},
    {"list-passes", no_argument, O_LIST_PASSES, NULL, "list the passes and exit"},
    {"split-input-file", no_argument, O_SPLIT, NULL, "treat each `// -----` separated chunk as a module"},
    {"verify-roundtrip", no_argument, O_ROUNDTRIP, NULL, "also check that print(parse(print(m))) == print(m)"},
    {"target", required_argument, O_TARGET, "sm_XX", "plan kernels for that architecture (default sm_90)"},
    {"sm-count", required_argument, O_SM_COUNT, "N", "plan launches for N multiprocessors (default 132)"},
    {"output", required_argument, 'o', "FILE", "write the output to FILE (also -o FILE)"},
    {"help", no_argument, CLI_HELP, NULL, "print this help and exit"},
    {"version", no_argument, CLI_VERSION, NULL, "print the version and exit"},
};
#define N_FLAGS (sizeof flags / sizeof flags[0])
static const char usage_line[] = "usage: gpuir-opt [options] FILE   (FILE may be - for standard input)";

static int usage(const char *why) {
    if (why) cli_err("gpuir-opt: %s\n", why);
    cli_err("%s\n(gpuir-opt --help lists the options)\n", usage_line);
    return 2;
}

static int list_passes(void) {
    for (size_t i = 0; i < gpuir_pass_count(); i++)
        printf("  %-14s %s\n", gpuir_pass_name(i), gpuir_pass_summary(i));
    return 0;
}

/* A positive count from option `name`'s text, else a message and false. */
static bool count_option(const char *name, const char *text, const char *wants, int *out) {
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (*text && *end == '\0' && errno == 0 && n >= 1 && n <= 100000) { *out = (int)n; return true; }
    cli_err("gpuir-opt: %s wants %s, not '%s'\n", name, wants, text);
    return false;
}

/* A pass name for --print-ir-before/after: '*' or a registered pass. */
static bool known_pass(const char *flag, const char *name) {
    if (strcmp(name, "*") == 0) return true;
    for (size_t i = 0; i < gpuir_pass_count(); i++)
        if (strcmp(gpuir_pass_name(i), name) == 0) return true;
    cli_err("gpuir-opt: %s: there is no pass '%s' (gpuir-opt --list-passes lists them)\n", flag, name);
    return false;
}

/* Reads the command line into a; 0, or the exit status to leave with
   (after --help, --version, --list-passes, or a message). */
static int parse_args(int argc, char **argv, opt_args *a, bool *done) {
    int c;
    *done = false;
    while ((c = cli_next(argc, argv, "gpuir-opt", "o:", flags, N_FLAGS)) != -1) {
        switch (c) {
        case O_PASSES: a->passes = optarg; break;
        case O_LOWER:
            if (optarg && strcmp(optarg, "sync") != 0) return usage("--lower takes no value or =sync");
            a->passes = optarg ? GPUIR_SYNC_PIPELINE : GPUIR_DEFAULT_PIPELINE;
            break;
        case O_EMIT: a->emit = optarg; break;
        case O_PRINT_BEFORE:
            if (!known_pass("--print-ir-before", optarg)) return 2;
            a->pass_desc.print_ir_before = optarg;
            break;
        case O_PRINT_AFTER:
            if (!known_pass("--print-ir-after", optarg)) return 2;
            a->pass_desc.print_ir_after = optarg;
            break;
        case O_PRINT_AFTER_ALL: a->pass_desc.print_ir_after = "*"; break;
        case O_TIMING: a->pass_desc.timing = true; break;
        case O_LIST_PASSES: *done = true; return list_passes();
        case O_SPLIT: a->split = true; break;
        case O_ROUNDTRIP: a->roundtrip = true; break;
        case O_SM_COUNT:
            if (!count_option("--sm-count", optarg, "a count of multiprocessors", &a->target.sm_count)) return 2;
            break;
        case O_TARGET:
            if (strncmp(optarg, "sm_", 3) != 0 || !count_option("--target", optarg + 3, "sm_XX (e.g. sm_90)", &a->target.sm)) {
                if (strncmp(optarg, "sm_", 3) != 0)
                    cli_err("gpuir-opt: --target wants sm_XX (e.g. sm_90), not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'o': a->output = optarg; break;
        case CLI_HELP:
            *done = true;
            return cli_help(usage_line, flags, N_FLAGS, "Exit status 0 on success; 1 with the diagnostic on "
                            "standard error; 2 for a bad command line.\n");
        case CLI_VERSION: *done = true; return cli_version("gpuir-opt");
        default: return 2;
        }
    }
    if (optind < argc) a->input = argv[optind++];
    if (optind < argc) return usage("more than one FILE");
    if (!a->input) return usage("no FILE");
    if (a->emit && strcmp(a->emit, "ir") != 0 && strcmp(a->emit, "placement") != 0 &&
        strcmp(a->emit, "dot") != 0 && strcmp(a->emit, "cuda") != 0)
        return usage("--emit is ir, placement, dot or cuda");
    return 0;
}

/* Parses one chunk, its first line numbered first_line in the file, runs
   the passes and prints it to `out`; reports errors on stderr. */
static bool run_chunk(const char *text, size_t len, uint32_t first_line, const char *name, const opt_args *a,
                      FILE *out) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    gpuir_module *m = ctx ? gpuir__module_parse_from_line(ctx, text, len, name, first_line) : NULL;
    if (m) gpuir_module_set_target(m, a->target);
    if (m && a->passes && gpuir_module_run_passes(m, a->passes, &a->pass_desc) != GPUIR_OK) m = NULL;
    bool cuda = a->emit && strcmp(a->emit, "cuda") == 0;
    if (m && cuda && !a->passes && gpuir__module_is_tensor_level(m) &&      /* kernels exist once lowered */
        gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, &a->pass_desc) != GPUIR_OK)
        m = NULL;
    if (m && cuda && gpuir__module_is_tensor_level(m)) {
        cli_err("%s: error: --emit=cuda needs a lowered module: these passes leave it at the tensor "
                "level (add --lower)\n", name);
        gpuir_ctx_destroy(ctx);
        return false;
    }
    char *printed = m ? gpuir_module_print(m) : NULL;
    bool ok = printed != NULL;
    if (ok && a->roundtrip) {
        gpuir_module *again = gpuir_module_parse(ctx, printed, strlen(printed), "<printed>");
        char *second = again ? gpuir_module_print(again) : NULL;
        ok = second && strcmp(second, printed) == 0;
        if (second && !ok) cli_err("%s: error: print -> parse -> print is not a fixed point\n", name);
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
    if (!ok && ctx && gpuir_ctx_result(ctx) != GPUIR_OK) cli_err("%s\n", gpuir_ctx_error(ctx));
    gpuir_free(printed);
    gpuir_ctx_destroy(ctx);
    return ok;
}

/* Each chunk keeps the line numbers of the file: it is parsed where it
   lies, its first line numbered (linear in the file's size: the lines
   before a chunk are counted once, not copied into it). */
static bool run_split(const char *text, size_t len, const char *name, const opt_args *a, FILE *out) {
    static const char sep[] = "// -----";
    const size_t sep_len = sizeof sep - 1;
    bool ok = true;
    size_t start = 0, chunk = 0;
    uint32_t line = 1;              /* the number of the line `start` is on (the text is at most 256 MiB) */
    while (start <= len) {
        size_t end = start;
        uint32_t lines = 0;         /* the newlines in text[start, end) */
        while (end < len) {
            bool at_line_start = end == 0 || text[end - 1] == '\n';
            if (at_line_start && len - end >= sep_len && memcmp(text + end, sep, sep_len) == 0) break;
            lines += text[end++] == '\n';
        }
        if (chunk++) fprintf(out, "// -----\n");
        ok = run_chunk(text + start, end - start, line, name, a, out) && ok;
        if (end >= len) break;
        while (end < len && text[end] != '\n') end++;   /* skip the separator line */
        line += lines + 1;
        start = end + 1;
    }
    return ok;
}

int main(int argc, char **argv) {
    opt_args a;
    memset(&a, 0, sizeof a);
    bool done;
    int rc = parse_args(argc, argv, &a, &done);
    if (rc || done) return rc;
    size_t len;
    char *text = cli_read_text("gpuir-opt", a.input, &len);
    if (!text) return 1;
    FILE *out = a.output ? fopen(a.output, "w") : stdout;
    if (!out) { cli_err("gpuir-opt: cannot create '%s'\n", a.output); free(text); return 1; }
    const char *name = strcmp(a.input, "-") == 0 ? "<stdin>" : a.input;
    bool ok = a.split ? run_split(text, len, name, &a, out) : run_chunk(text, len, 1, name, &a, out);
    ok &= cli_close_output("gpuir-opt", out, a.output);
    free(text);
    return ok ? 0 : 1;
}

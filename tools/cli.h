/* cli.h: what gpuir's tools share on their command lines: a table of long
   options that getopt_long (libc) reads and that --help prints a line per
   flag from, --version, and numbers that are checked whole (a flag given
   "abc", "12x", "nan" or a value out of range is refused with a message
   naming the flag). Include after gpuir.h (it needs GPUIR_VERSION_STRING).
   Exit statuses: 0 for --help and --version, 2 for a bad command line. */
#ifndef GPUIR_CLI_H
#define GPUIR_CLI_H

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One flag: its long name, getopt_long's no_argument / required_argument /
   optional_argument, the value getopt_long returns for it, the
   placeholder --help shows for its value, and one line of help. */
typedef struct cli_flag {
    const char *name;
    int has_arg;
    int id;
    const char *arg;
    const char *help;
} cli_flag;

enum { CLI_HELP = 1000, CLI_VERSION };

/* getopt_long over flags[0..n): the flag's id, -1 at the end, or '?' after
   printing what was wrong (naming the argument) to stderr. `shorts` are
   getopt's short options ("o:"). The options array is built on the heap
   from the table each call: a table has a few dozen rows. */
static inline int cli_next(int argc, char **argv, const char *tool, const char *shorts, const cli_flag *flags, size_t n) {
    struct option *o = (struct option *)calloc(n + 1, sizeof *o);
    if (!o) { fprintf(stderr, "%s: out of memory\n", tool); return '?'; }
    for (size_t i = 0; i < n; i++) {
        o[i].name = flags[i].name;
        o[i].has_arg = flags[i].has_arg;
        o[i].val = flags[i].id;
    }
    opterr = 0;
    int before = optind, c = getopt_long(argc, argv, shorts, o, NULL);
    free(o);
    if (c != '?' && c != ':') return c;
    const char *arg = optind > before && optind <= argc ? argv[optind - 1] : argv[before < argc ? before : argc - 1];
    if (optopt && strchr(shorts, optopt) && optopt != '?')
        fprintf(stderr, "%s: option '-%c' needs a value (see --help)\n", tool, optopt);
    else if (optopt && !strchr(shorts, optopt) && optopt < 256)
        fprintf(stderr, "%s: unknown option '-%c' (see --help)\n", tool, optopt);
    else if (optopt) {
        for (size_t i = 0; i < n; i++)
            if (flags[i].id == optopt) {
                fprintf(stderr, "%s: option '--%s' %s (see --help)\n", tool, flags[i].name,
                        flags[i].has_arg == no_argument ? "takes no value" : "needs a value");
                return '?';
            }
        fprintf(stderr, "%s: bad option '%s' (see --help)\n", tool, arg);
    } else fprintf(stderr, "%s: unknown option '%s' (see --help)\n", tool, arg);
    return '?';
}

/* --help: the usage line(s), then a line per flag, to stdout. */
static inline int cli_help(const char *usage, const cli_flag *flags, size_t n, const char *after) {
    printf("%s\n\noptions:\n", usage);
    for (size_t i = 0; i < n; i++) {
        char left[64];
        const char *a = flags[i].arg ? flags[i].arg : "X";
        if (flags[i].has_arg == required_argument) snprintf(left, sizeof left, "--%s=%s", flags[i].name, a);
        else if (flags[i].has_arg == optional_argument) snprintf(left, sizeof left, "--%s[=%s]", flags[i].name, a);
        else snprintf(left, sizeof left, "--%s", flags[i].name);
        printf("  %-26s %s\n", left, flags[i].help);
    }
    if (after) printf("\n%s", after);
    return 0;
}

static inline int cli_version(const char *tool) {
    printf("%s (gpuir) %s\n", tool, GPUIR_VERSION_STRING);
    return 0;
}

/* An integer in [lo, hi], the whole text; else a message naming the flag. */
static inline bool cli_int(const char *tool, const char *flag, const char *text, long long lo, long long hi,
                    long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "%s: %s wants an integer from %lld to %lld, not '%s'\n", tool, flag, lo, hi, text);
        return false;
    }
    *out = v;
    return true;
}

/* The same for an int. */
static inline bool cli_int32(const char *tool, const char *flag, const char *text, int lo, int hi, int *out) {
    long long v;
    if (!cli_int(tool, flag, text, lo, hi, &v)) return false;
    *out = (int)v;
    return true;
}

/* An unsigned 64-bit integer (a seed): digits only. */
static inline bool cli_u64(const char *tool, const char *flag, const char *text, unsigned long long *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*text < '0' || *text > '9' || *end != '\0' || errno == ERANGE) {
        fprintf(stderr, "%s: %s wants an unsigned integer, not '%s'\n", tool, flag, text);
        return false;
    }
    *out = v;
    return true;
}

/* A finite number, 0 or more. */
static inline bool cli_nonneg(const char *tool, const char *flag, const char *text, double *out) {
    char *end;
    double v = strtod(text, &end);
    if (*text == '\0' || *end != '\0' || !isfinite(v) || v < 0) {
        fprintf(stderr, "%s: %s wants a finite number, 0 or more, not '%s'\n", tool, flag, text);
        return false;
    }
    *out = v;
    return true;
}

/* The most module text a tool reads: a bound, so that a device that never
   ends (/dev/zero) is refused instead of filling memory. */
#define CLI_MAX_TEXT ((size_t)256 << 20)

/* Flushes and closes a tool's output `out` (stdout, or the file `path`
   names): false, after saying why on stderr, where a write failed (a full
   disk, /dev/full, a closed stdout: the tool exited 0, the output lost). */
static inline bool cli_close_output(const char *tool, FILE *out, const char *path) {
    bool ok = fflush(out) == 0 && !ferror(out);
    int err = ok ? 0 : errno;
    if (out != stdout && fclose(out) != 0 && ok) ok = false, err = errno;
    if (!ok) fprintf(stderr, "%s: cannot write %s%s%s: %s\n", tool, path ? "'" : "the output", path ? path : "",
                     path ? "'" : "", strerror(err ? err : EIO));
    return ok;
}

/* Reads a module's text: "-" is standard input; a path must be a regular
   file or a pipe (not a device or a directory), at most CLI_MAX_TEXT
   bytes. NULL after a message naming the tool and the path. */
static inline char *cli_read_text(const char *tool, const char *path, size_t *n) {
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY);
    struct stat st;
    const char *why = fd < 0 ? strerror(errno) : NULL;
    if (!why && fd != 0 && (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))))
        why = "not a regular file or a pipe";
    size_t cap = 1 << 16, len = 0;
    char *buf = why ? NULL : (char *)malloc(cap + 1);
    if (!why && !buf) why = "out of memory";
    while (!why) {
        ssize_t got = read(fd, buf + len, cap - len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { why = strerror(errno); break; }
        if (got == 0) break;
        if ((len += (size_t)got) < cap) continue;
        if (cap >= CLI_MAX_TEXT) { why = "more than 256 MiB of text"; break; }
        char *bigger = (char *)realloc(buf, (cap *= 2) + 1);
        if (!bigger) { why = "out of memory"; break; }
        buf = bigger;
    }
    if (fd > 0) close(fd);
    if (why) {
        fprintf(stderr, "%s: cannot read '%s': %s\n", tool, path, why);
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    *n = len;
    return buf;
}

#endif

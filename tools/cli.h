/* cli.h: what gpuir's tools share on their command lines: a table of long
   options that getopt_long (libc) reads and that --help prints a line per
   flag from, --version, and numbers that are checked whole (a flag given
   "abc", "12x", "nan" or a value out of range is refused with a message
   naming the flag). Include after gpuir.h (it needs GPUIR_VERSION_STRING).
   Diagnostics go through cli_err, which escapes control bytes (a file
   name or argument cannot send the terminal an escape sequence).
   Exit statuses: 0 for --help and --version, 2 for a bad command line. */
#ifndef GPUIR_CLI_H
#define GPUIR_CLI_H

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#  define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define CLI_PRINTF(f, a)
#endif

/* The length of the well-formed UTF-8 sequence at p (2 to 4 bytes) of a
   code point from U+00A0 on (not a C1 control, an overlong form or a
   surrogate), or 0: gpuir.h's gpuir__utf8_printable_len, which a tool
   that does not compile the implementation cannot call. */
static inline size_t cli_utf8_printable_len(const unsigned char *p) {
    unsigned c = p[0];
    size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)               /* stops at the terminator, which is no continuation */
        if ((p[i] & 0xC0) != 0x80) return 0;
    bool bad = (c == 0xC2 && p[1] < 0xA0) || (c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) ||
               (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F);
    return bad ? 0 : n;
}

/* Writes text to f as a diagnostic that quotes user text must reach a
   terminal: each control byte but tab and newline, DEL, and each byte
   outside printable UTF-8 as \xNN (ESC ] 0 ; title in a file name or an
   --input would retitle or recolour the terminal). */
static inline void cli_write_escaped(FILE *f, const char *text) {
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        size_t n = *p >= 0x80 ? cli_utf8_printable_len(p) : (*p >= 0x20 && *p < 0x7f) || *p == '\t' || *p == '\n';
        if (n) fwrite(p, 1, n, f);
        else fprintf(f, "\\x%02x", *p);
        p += n ? n : 1;
    }
}

/* A diagnostic on standard error: fprintf's format and arguments, the
   text written through cli_write_escaped. */
static inline void cli_err(const char *fmt, ...) CLI_PRINTF(1, 2);
static inline void cli_err(const char *fmt, ...) {
    char small[512], *text = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof small && (text = (char *)malloc((size_t)n + 1)) != NULL) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    cli_write_escaped(stderr, text ? text : small);     /* out of memory: the first 511 bytes */
    if (text != small) free(text);
}

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
    if (!o) { cli_err("%s: out of memory\n", tool); return '?'; }
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
        cli_err("%s: option '-%c' needs a value (see --help)\n", tool, optopt);
    else if (optopt && !strchr(shorts, optopt) && optopt < 256)
        cli_err("%s: unknown option '-%c' (see --help)\n", tool, optopt);
    else if (optopt) {
        for (size_t i = 0; i < n; i++)
            if (flags[i].id == optopt) {
                cli_err("%s: option '--%s' %s (see --help)\n", tool, flags[i].name,
                        flags[i].has_arg == no_argument ? "takes no value" : "needs a value");
                return '?';
            }
        cli_err("%s: bad option '%s' (see --help)\n", tool, arg);
    } else cli_err("%s: unknown option '%s' (see --help)\n", tool, arg);
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
        cli_err("%s: %s wants an integer from %lld to %lld, not '%s'\n", tool, flag, lo, hi, text);
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
        cli_err("%s: %s wants an unsigned integer, not '%s'\n", tool, flag, text);
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
        cli_err("%s: %s wants a finite number, 0 or more, not '%s'\n", tool, flag, text);
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
    if (!ok) cli_err("%s: cannot write %s%s%s: %s\n", tool, path ? "'" : "the output", path ? path : "",
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
        cli_err("%s: cannot read '%s': %s\n", tool, path, why);
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    *n = len;
    return buf;
}

#endif

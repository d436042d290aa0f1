/* The kernel cache as a trust boundary, and the emulator's compiles:
   a bundle never brings host code (a forged emulator bundle is refused, a
   CUDA bundle still travels); an entry planted in the cache directory with
   a recomputed digest is never dlopen'ed (it lacks the directory's tag);
   only a module that loaded is stored, one that fails to load is evicted
   and rebuilt once; the key names the compiler's identity (found once per
   context); the emulator's temporary files live in a private directory per
   context, whose stale siblings go on the next start; a hanging compiler
   is killed after a timeout; an unusable temporary directory is an error
   that names the path and the errno. */
#define _POSIX_C_SOURCE 200809L
#define GPUIR_IMPLEMENTATION
#include "../../gpuir.h"
#include "../check.h"

#include <dirent.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const chain_text = CHAIN_TEXT;

static gpuir_program *make(gpuir_ctx *ctx, const char *text, const char *cc) {
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "test");
    return m ? gpuir_program_make(m, &(gpuir_program_desc){.backend = GPUIR_BACKEND_EMU, .cc = cc}) : NULL;
}

/* Runs @f of chain_text on p and compares with the interpreter. */
static void check_runs(gpuir_ctx *ctx, gpuir_program *p) {
    CHECK(p != NULL);
    if (!p) return;
    gpuir_module *ref = gpuir_module_parse(ctx, chain_text, strlen(chain_text), "ref");
    gpuir_array in[2], want[2], got[2];
    int64_t xd[] = {5, 7}, bd[] = {7};
    memset(want, 0, sizeof want);
    memset(got, 0, sizeof got);
    gpuir_array_alloc(ctx, &in[0], GPUIR_F32, 2, xd);
    gpuir_array_alloc(ctx, &in[1], GPUIR_F32, 1, bd);
    gpuir_array_fill_random(&in[0], 3);
    gpuir_array_fill_random(&in[1], 4);
    CHECK_RESULT(ctx, gpuir_ref_run(ref, "f", 2, in, 2, want), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_program_run(p, "f", 2, in, 2, got), GPUIR_OK);
    for (int i = 0; i < 2; i++) CHECK_RESULT(ctx, gpuir_array_compare(ctx, &got[i], &want[i], 1e-5, 1e-6), GPUIR_OK);
    for (int i = 0; i < 2; i++) { gpuir_array_release(&in[i]); gpuir_array_release(&want[i]); gpuir_array_release(&got[i]); }
    gpuir_module_destroy(ref);
}

static gpuir_ctx *ctx_with_cache(const char *dir) {
    return gpuir_ctx_make(&(gpuir_ctx_desc){.cache_dir = dir});
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static void rm_rf(const char *path) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    CHECK(system(cmd) == 0);
}

static void write_text(const char *path, const char *text, mode_t mode) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

/* Compiles a shared object whose constructor creates `marker`: what an
   attacker would slip into a cache. Its bytes (malloc'd), or NULL. */
static char *evil_object(const char *dir, const char *marker, size_t *size) {
    char src[256], so[256], cmd[1024], text[512];
    snprintf(src, sizeof src, "%s/evil.c", dir);
    snprintf(so, sizeof so, "%s/evil.so", dir);
    snprintf(text, sizeof text,
             "#include <fcntl.h>\n#include <unistd.h>\n"
             "__attribute__((constructor)) static void evil(void) { close(open(\"%s\", O_CREAT | O_WRONLY, 0600)); }\n"
             "int gpuir_emu_kernels[4];\n", marker);
    write_text(src, text, 0600);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o %s %s", so, src);
    CHECK(system(cmd) == 0);
    char *bytes = gpuir__slurp(so, size);
    CHECK(bytes != NULL);
    return bytes;
}

/* The key of the only module of kind ext in ctx's memory cache ("" if none). */
static void only_key(gpuir_ctx *ctx, const char *ext, char key[65]) {
    gpuir__cache *c = gpuir__ctx_cache(ctx);
    key[0] = '\0';
    int n = 0;
    for (size_t i = 0; c && i < c->cap; i++)
        if (c->slots[i].bytes && strcmp(c->slots[i].ext, ext) == 0) memcpy(key, c->slots[i].key, 65), n++;
    CHECK(n == 1);
}

/* Writes a bundle of n modules, each with its true SHA-256. */
/* Two cache keys made from `what` (as CUDA modules' keys are made). */
static void two_keys(const char *what, char keys[2][65]) {
    const char *parts[] = {"cuda", what};
    gpuir__cache_key(parts, 2, keys[0]);
    gpuir__cache_key(parts, 1, keys[1]);
}

static void write_bundle(const char *path, size_t n, char keys[][65], const char *const *exts,
                         const char *const *bytes, const size_t *sizes) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    unsigned char word[32];
    fwrite("GPUIRBDL", 1, 8, f);
    gpuir__cache_put_u32(word, 1);
    gpuir__cache_put_u32(word + 4, (uint32_t)n);
    fwrite(word, 1, 8, f);
    for (size_t i = 0; i < n; i++) {
        unsigned char len = (unsigned char)strlen(exts[i]);
        fwrite(keys[i], 1, 64, f);
        fwrite(&len, 1, 1, f);
        fwrite(exts[i], 1, len, f);
        gpuir__cache_put_u64(word, sizes[i]);
        fwrite(word, 1, 8, f);
        gpuir__cache_sha256_buf(bytes[i], sizes[i], word);
        fwrite(word, 1, 32, f);
        fwrite(bytes[i], 1, sizes[i], f);
    }
    fclose(f);
}

/* A bundle whose emulator module was replaced by another shared object
   (its SHA-256 recomputed, under the real program's key) is refused whole:
   nothing is imported, the program compiles from source, and the forged
   object's code never runs. An emulator context exports no module. */
TEST(a_forged_emulator_bundle_is_refused) {
    char dir[] = "/tmp/gpuir-test-forge-XXXXXX", marker[96], path[96], warm[96];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(marker, sizeof marker, "%s/pwned", dir);
    snprintf(path, sizeof path, "%s/kernels.bundle", dir);
    snprintf(warm, sizeof warm, "%s/cache", dir);
    gpuir_ctx *a = ctx_with_cache("");
    CHECK(make(a, chain_text, NULL) != NULL);
    char keys[1][65];
    only_key(a, "so", keys[0]);
    size_t n = 99;
    CHECK_RESULT(a, gpuir_ctx_cache_export(a, path, &n), GPUIR_OK);
    CHECK(n == 0);                                  /* host code is never exported */
    gpuir_ctx_destroy(a);

    size_t size = 0;
    char *evil = evil_object(dir, marker, &size);
    const char *exts[] = {"so"};
    const char *bytes[] = {evil};
    write_bundle(path, 1, keys, exts, bytes, &size);
    gpuir_ctx *b = ctx_with_cache(warm);
    CHECK_RESULT(b, gpuir_ctx_cache_import(b, path, &n), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(b), "entry 1 of 1: an emulator module") &&
          strstr(gpuir_ctx_error(b), "host code") && strstr(gpuir_ctx_error(b), "nothing imported"));
    gpuir_ctx_clear_error(b);
    check_runs(b, make(b, chain_text, NULL));
    gpuir_cache_stats st = gpuir_ctx_cache_stats(b);
    CHECK(st.misses == 1 && st.mem_hits == 0 && st.writes == 1);
    CHECK(!exists(marker));
    gpuir_ctx_destroy(b);

    exts[0] = "elf";                                /* nor any other kind than cubin and ptx */
    write_bundle(path, 1, keys, exts, bytes, &size);
    b = ctx_with_cache("");
    CHECK_RESULT(b, gpuir_ctx_cache_import(b, path, &n), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(b), "a kind a bundle does not carry (only cubin and ptx)") != NULL);
    gpuir_ctx_destroy(b);
    free(evil);
    CHECK(!exists(marker));
    rm_rf(dir);
}

/* A bundle's modules are what their kinds say, and each key and kind comes
   once: a host x86-64 ELF labelled cubin, an empty cubin, a PTX without
   `.version` or with a NUL inside, two entries of one key and kind (the
   last had won), are refused whole, naming the entries; a file larger
   than any bundle (sparse, 5 GiB) or one without the magic is refused
   before it is read whole. A cache entry larger than any gpuir writes
   (a sparse 2 GiB file under an entry's name) is deleted unread, a miss. */
TEST(a_bundle_holds_what_its_kinds_say_once) {
    char dir[] = "/tmp/gpuir-test-kinds-XXXXXX", path[96], warm[96];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/b.bundle", dir);
    snprintf(warm, sizeof warm, "%s/cache", dir);
    char keys[2][65];
    two_keys("kinds", keys);
    static const char host[] = "\177ELF\2\1\1\0\0\0\0\0\0\0\0\0\3\0\76\0 x86-64 code",   /* EM_X86_64 */
                      cubin[] = CUDA_ELF_HEADER " device code",
                      ptx_nul[] = ".version 8.0\n\0.target sm_90\n", ptx_none[] = ".target sm_90\n";
    struct { const char *ext, *bytes; size_t size; const char *why; } bad[] = {
        {"cubin", host, sizeof host, "a cubin that is not a CUDA ELF image"},
        {"cubin", cubin, 0, "a cubin that is not a CUDA ELF image"},
        {"ptx", ptx_nul, sizeof ptx_nul, "a PTX module that is not PTX text"},
        {"ptx", ptx_none, sizeof ptx_none - 1, "a PTX module that is not PTX text"},
    };
    size_t n = 7;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *exts[] = {"cubin", bad[i].ext}, *bytes[] = {cubin, bad[i].bytes};
        size_t sizes[] = {sizeof cubin, bad[i].size};
        write_bundle(path, 2, keys, exts, bytes, sizes);
        gpuir_ctx *ctx = ctx_with_cache(warm);
        CHECK_RESULT(ctx, gpuir_ctx_cache_import(ctx, path, &n), GPUIR_ERR_IO);
        CHECK(n == 0 && strstr(gpuir_ctx_error(ctx), "entry 2 of 2") && strstr(gpuir_ctx_error(ctx), bad[i].why) &&
              strstr(gpuir_ctx_error(ctx), "nothing imported"));
        CHECK(gpuir_ctx_cache_stats(ctx).writes == 0);
        gpuir_ctx_destroy(ctx);
    }
    char twice[3][65];
    memcpy(twice[0], keys[0], 65);
    memcpy(twice[1], keys[1], 65);
    memcpy(twice[2], keys[0], 65);
    static const char other[] = CUDA_ELF_HEADER " other code";
    const char *exts[] = {"cubin", "cubin", "cubin"}, *bytes[] = {cubin, cubin, other};
    size_t sizes[] = {sizeof cubin, sizeof cubin, sizeof other};
    write_bundle(path, 3, twice, exts, bytes, sizes);
    gpuir_ctx *ctx = ctx_with_cache("");
    CHECK_RESULT(ctx, gpuir_ctx_cache_import(ctx, path, &n), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(ctx), "entries 1 and 3 of 3 have the same key and kind") != NULL);
    gpuir_ctx_clear_error(ctx);
    CHECK(truncate(path, (off_t)5 << 30) == 0);     /* sparse: never read */
    CHECK_RESULT(ctx, gpuir_ctx_cache_import(ctx, path, &n), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(ctx), "larger than any bundle gpuir reads") != NULL);
    gpuir_ctx_clear_error(ctx);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs("GPUIRBD", f) >= 0 && fclose(f) == 0 && truncate(path, (off_t)1 << 30) == 0);
    CHECK_RESULT(ctx, gpuir_ctx_cache_import(ctx, path, &n), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(ctx), "not a gpuir cache bundle") != NULL);
    gpuir_ctx_destroy(ctx);

    ctx = ctx_with_cache(warm);                     /* a cache entry past 1 GiB: deleted unread */
    char entry[192];
    snprintf(entry, sizeof entry, "%s/%s.cubin", gpuir_ctx_cache_dir(ctx), keys[0]);
    f = fopen(entry, "w");
    CHECK(f && fclose(f) == 0 && chmod(entry, 0600) == 0 && truncate(entry, (off_t)2 << 30) == 0);
    const void *got = NULL;
    size_t got_size = 0;
    CHECK(!gpuir__cache_get(gpuir__ctx_cache(ctx), keys[0], "cubin", &got, &got_size));
    CHECK(!exists(entry) && gpuir_ctx_cache_stats(ctx).corrupt == 1);
    CHECK(strstr(gpuir_ctx_cache_status(ctx), "larger than any entry gpuir writes") != NULL);
    gpuir_ctx_destroy(ctx);
    rm_rf(dir);
}

/* An export replaces a regular file only: a symbolic link, a FIFO, a
   directory (and a device: /dev/null run as root became a file) is
   refused by name and left as it was; a file replaced keeps its
   permission bits; a name of 250 bytes is written (the temporary file's
   name is short, in the same directory). */
TEST(an_export_replaces_regular_files_only) {
    char dir[] = "/tmp/gpuir-test-export-XXXXXX", link[96], target[96], fifo[96], sub[96], file[96], longname[400];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(link, sizeof link, "%s/link.bundle", dir);
    snprintf(target, sizeof target, "%s/target.txt", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(file, sizeof file, "%s/file.bundle", dir);
    FILE *t = fopen(target, "w");
    CHECK(t && fputs("keep", t) >= 0 && fclose(t) == 0);
    CHECK(symlink("target.txt", link) == 0 && mkfifo(fifo, 0600) == 0 && mkdir(sub, 0700) == 0);
    gpuir_ctx *ctx = ctx_with_cache("");
    size_t n = 0;
    const char *what[] = {"symbolic link", "FIFO", "directory"};
    const char *paths[] = {link, fifo, sub};
    for (int i = 0; i < 3; i++) {
        CHECK_RESULT(ctx, gpuir_ctx_cache_export(ctx, paths[i], &n), GPUIR_ERR_IO);
        CHECK(strstr(gpuir_ctx_error(ctx), paths[i]) && strstr(gpuir_ctx_error(ctx), "not a regular file") &&
              strstr(gpuir_ctx_error(ctx), what[i]));
        gpuir_ctx_clear_error(ctx);
    }
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    char buf[8] = {0};
    t = fopen(target, "r");
    CHECK(t && fread(buf, 1, sizeof buf - 1, t) == 4 && fclose(t) == 0 && strcmp(buf, "keep") == 0);
    t = fopen(file, "w");
    CHECK(t && fclose(t) == 0 && chmod(file, 0640) == 0);
    CHECK_RESULT(ctx, gpuir_ctx_cache_export(ctx, file, &n), GPUIR_OK);
    CHECK(stat(file, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0640 && st.st_size > 0);
    int at = snprintf(longname, sizeof longname, "%s/", dir);
    memset(longname + at, 'b', 250);
    longname[at + 250] = '\0';
    mode_t was = umask(027);                        /* a new file: 0666 less the umask, as fopen gives */
    CHECK_RESULT(ctx, gpuir_ctx_cache_export(ctx, longname, &n), GPUIR_OK);
    umask(was);
    CHECK(exists(longname) && stat(longname, &st) == 0 && (st.st_mode & 07777) == 0640);
    gpuir_ctx_destroy(ctx);
    DIR *d = opendir(dir);                          /* no temporary file left behind */
    for (struct dirent *e; d && (e = readdir(d));) CHECK(strncmp(e->d_name, ".gpuir-", 7) != 0);
    if (d) closedir(d);
    rm_rf(dir);
}

/* A bundle of CUDA modules (a cubin and a PTX text) imports into memory and
   disk as before: another context finds them on disk, and an export gives
   them back byte for byte. */
TEST(a_cuda_bundle_still_imports_and_exports) {
    char dir[] = "/tmp/gpuir-test-cubin-XXXXXX", path[96], back[96], warm[96];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/in.bundle", dir);
    snprintf(back, sizeof back, "%s/out.bundle", dir);
    snprintf(warm, sizeof warm, "%s/cache", dir);
    char keys[2][65];
    two_keys("source", keys);
    const char *exts[] = {"cubin", "ptx"};
    static const char cubin[] = CUDA_ELF_HEADER " a cubin's bytes",
                      ptx[] = ".version 8.0\n.target sm_90\n";
    const char *bytes[] = {cubin, ptx};
    size_t sizes[] = {sizeof cubin, sizeof ptx};
    write_bundle(path, 2, keys, exts, bytes, sizes);
    gpuir_ctx *a = ctx_with_cache(warm);
    size_t n = 0;
    CHECK_RESULT(a, gpuir_ctx_cache_import(a, path, &n), GPUIR_OK);
    CHECK(n == 2 && gpuir_ctx_cache_stats(a).writes == 2);
    gpuir_ctx_destroy(a);
    a = ctx_with_cache(warm);                       /* from disk, tag checked */
    const void *got = NULL;
    size_t got_size = 0;
    CHECK(gpuir__cache_get(gpuir__ctx_cache(a), keys[0], "cubin", &got, &got_size));
    CHECK(got_size == sizeof cubin && got && memcmp(got, cubin, sizeof cubin) == 0);
    CHECK(gpuir__cache_get(gpuir__ctx_cache(a), keys[1], "ptx", &got, &got_size));
    CHECK(gpuir_ctx_cache_stats(a).disk_hits == 2 && gpuir_ctx_cache_stats(a).corrupt == 0);
    CHECK(make(a, chain_text, NULL) != NULL);       /* an emulator module too: not exported */
    CHECK_RESULT(a, gpuir_ctx_cache_export(a, back, &n), GPUIR_OK);
    CHECK(n == 2);
    gpuir_ctx_destroy(a);
    size_t s1 = 0, s2 = 0;
    char *b1 = gpuir__slurp(path, &s1), *b2 = gpuir__slurp(back, &s2);
    CHECK(b1 && b2 && s1 == s2);
    gpuir_ctx *b = ctx_with_cache("");
    CHECK_RESULT(b, gpuir_ctx_cache_import(b, back, &n), GPUIR_OK);
    CHECK(n == 2);
    gpuir_ctx_destroy(b);
    free(b1);
    free(b2);
    rm_rf(dir);
}

/* The path of the only entry of kind ext in a cache directory. */
static void only_entry(const char *dir, const char *ext, char *path, size_t size) {
    DIR *d = opendir(dir);
    int n = 0;
    path[0] = '\0';
    size_t el = strlen(ext);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] != '.' && len > el + 1 && strcmp(e->d_name + len - el, ext) == 0 &&
            e->d_name[len - el - 1] == '.') {
            snprintf(path, size, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    if (d) closedir(d);
    CHECK(n == 1);
}

/* Removes dir's stored lowered programs: a make then reads the compiled
   module's own entry (a lowered program's entry holds a copy of it). */
static void drop_lowered(const char *dir) {
    char path[512];
    only_entry(dir, "lowered", path, sizeof path);
    CHECK(unlink(path) == 0);
}

/* The same, from ctx's memory too (and its disk cache, if any). */
static void drop_lowered_in(gpuir_ctx *ctx) {
    char key[65];
    only_key(ctx, "lowered", key);
    gpuir__cache *c = gpuir__ctx_cache(ctx);
    const void *bytes;
    size_t size;
    gpuir__cache_stats before = c->stats;          /* not a hit the test counts */
    if (gpuir__cache_get(c, key, "lowered", &bytes, &size)) gpuir__cache_evict(c, key, "lowered", bytes, size);
    c->stats = before;
}

/* Replaces the payload of the cache entry at path with bytes, fixing the
   header's size and SHA-256 as a forger would (the tag stays). */
static void forge_entry(const char *path, const char *bytes, size_t size) {
    size_t old = 0;
    char *data = gpuir__slurp(path, &old);
    CHECK(data != NULL && old > GPUIR__CACHE_HEADER);
    if (!data) return;
    unsigned char h[GPUIR__CACHE_HEADER];
    memcpy(h, data, sizeof h);
    gpuir__cache_put_u64(h + 16, size);
    gpuir__cache_sha256_buf(bytes, size, h + 24);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(h, 1, sizeof h, f) == sizeof h && fwrite(bytes, 1, size, f) == size);
    if (f) fclose(f);
    free(data);
}

/* An entry an older or newer gpuir wrote (another format version in its
   header) is a miss, as docs/cache.md says, not a corrupt entry: rebuilt
   and replaced, the status naming it so (it was counted corrupt). */
TEST(an_entry_of_another_format_version_is_a_miss) {
    char dir[] = "/tmp/gpuir-test-version-XXXXXX", entry[256];
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx *ctx = ctx_with_cache(dir);
    CHECK(make(ctx, chain_text, NULL) != NULL);
    gpuir_ctx_destroy(ctx);
    only_entry(dir, "so", entry, sizeof entry);
    FILE *f = fopen(entry, "r+b");
    unsigned char version[4] = {2, 0, 0, 0};          /* little-endian u32 at byte 8 */
    CHECK(f && fseek(f, 8, SEEK_SET) == 0 && fwrite(version, 1, 4, f) == 4);
    if (f) fclose(f);
    drop_lowered(dir);                              /* the make reads the module's entry */
    ctx = ctx_with_cache(dir);
    check_runs(ctx, make(ctx, chain_text, NULL));
    gpuir_cache_stats s = gpuir_ctx_cache_stats(ctx);
    CHECK(s.corrupt == 0 && s.disk_hits == 0 && s.misses == 1 && s.writes == 1);
    CHECK(strstr(gpuir_ctx_cache_status(ctx), "an entry of another format version (deleted)") != NULL);
    gpuir_ctx_destroy(ctx);
    ctx = ctx_with_cache(dir);                      /* replaced: the next make hits it */
    check_runs(ctx, make(ctx, chain_text, NULL));
    CHECK(gpuir_ctx_cache_stats(ctx).corrupt == 0 && gpuir_ctx_cache_stats(ctx).misses == 0);
    gpuir_ctx_destroy(ctx);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* A shared object planted in the cache directory under a real entry's name,
   with a well-formed header and a recomputed SHA-256, is not gpuir's: it
   fails the directory's tag, is counted corrupt, deleted and rebuilt, and
   its code never runs. So is a genuine entry copied in from another cache
   directory (another secret), and (as root) one owned by another user. */
TEST(a_planted_cache_entry_is_never_loaded) {
    char dir[] = "/tmp/gpuir-test-plant-XXXXXX", marker[96], one[96], two[96], entry[256], other[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(marker, sizeof marker, "%s/pwned", dir);
    snprintf(one, sizeof one, "%s/one", dir);
    snprintf(two, sizeof two, "%s/two", dir);
    gpuir_ctx *ctx = ctx_with_cache(one);
    CHECK(make(ctx, chain_text, NULL) != NULL);
    gpuir_ctx_destroy(ctx);
    only_entry(one, "so", entry, sizeof entry);
    struct stat st;
    CHECK(stat(entry, &st) == 0 && (st.st_mode & 077) == 0);
    char secret[128];
    snprintf(secret, sizeof secret, "%s/cache.key", one);
    CHECK(stat(secret, &st) == 0 && st.st_size == 32 && (st.st_mode & 0777) == 0600);

    size_t size = 0;
    char *evil = evil_object(dir, marker, &size);
    forge_entry(entry, evil, size);
    drop_lowered(one);                              /* the make reads the module's entry */
    ctx = ctx_with_cache(one);
    check_runs(ctx, make(ctx, chain_text, NULL));
    gpuir_cache_stats s = gpuir_ctx_cache_stats(ctx);
    CHECK(s.corrupt == 1 && s.disk_hits == 0 && s.misses == 1 && s.writes == 1);
    CHECK(strstr(gpuir_ctx_cache_status(ctx), "not written by gpuir for this directory") != NULL);
    gpuir_ctx_destroy(ctx);
    CHECK(!exists(marker));
    char lowered[256];                              /* the same, planted as a lowered program */
    only_entry(one, "lowered", lowered, sizeof lowered);
    forge_entry(lowered, evil, size);
    ctx = ctx_with_cache(one);
    check_runs(ctx, make(ctx, chain_text, NULL));
    s = gpuir_ctx_cache_stats(ctx);
    CHECK(s.corrupt == 1 && s.lowered_hits == 0 && s.compiles == 0);
    CHECK(strstr(gpuir_ctx_cache_status(ctx), "not written by gpuir for this directory") != NULL);
    gpuir_ctx_destroy(ctx);
    CHECK(!exists(marker));

    ctx = ctx_with_cache(two);                      /* a genuine entry of another directory */
    CHECK(strcmp(gpuir_ctx_cache_dir(ctx), two) == 0);
    gpuir_ctx_destroy(ctx);
    only_entry(one, "so", entry, sizeof entry);
    snprintf(other, sizeof other, "%s/%s", two, strrchr(entry, '/') + 1);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cp -p '%s' '%s'", entry, other);
    CHECK(system(cmd) == 0);
    ctx = ctx_with_cache(two);
    CHECK(make(ctx, chain_text, NULL) != NULL);
    CHECK(gpuir_ctx_cache_stats(ctx).corrupt == 1 && gpuir_ctx_cache_stats(ctx).disk_hits == 0);
    gpuir_ctx_destroy(ctx);

    if (geteuid() == 0) {                           /* someone else's file, with our tag */
        CHECK(chown(entry, 65534, 65534) == 0);
        drop_lowered(one);
        ctx = ctx_with_cache(one);
        CHECK(make(ctx, chain_text, NULL) != NULL);
        CHECK(gpuir_ctx_cache_stats(ctx).corrupt == 1 && gpuir_ctx_cache_stats(ctx).disk_hits == 0);
        CHECK(strstr(gpuir_ctx_cache_status(ctx), "owned by another user") != NULL);
        gpuir_ctx_destroy(ctx);
    }
    write_text(secret, "too short", 0600);          /* a damaged secret is replaced */
    ctx = ctx_with_cache(one);
    CHECK(strcmp(gpuir_ctx_cache_dir(ctx), one) == 0);
    CHECK(make(ctx, chain_text, NULL) != NULL);
    CHECK(gpuir_ctx_cache_stats(ctx).corrupt == 3);  /* its entries with it: the module's, the lowered program's, */
                                                     /* the compiler's remembered identity */
    gpuir_ctx_destroy(ctx);
    CHECK(stat(secret, &st) == 0 && st.st_size == 32);
    free(evil);
    rm_rf(dir);
}

/* Writes an executable shell script. */
static void write_script(const char *path, const char *body) {
    char text[2048];
    snprintf(text, sizeof text, "#!/bin/sh\n%s", body);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.new", path);      /* replaced whole, as an install would */
    write_text(tmp, text, 0755);
    CHECK(rename(tmp, path) == 0);
}

/* A fake compiler: says `version` to --version, else runs `action` (the
   arguments are cc's: "$out" is the -o file). */
static void fake_cc(const char *path, const char *version, const char *action) {
    char body[1536];
    snprintf(body, sizeof body,
             "if [ \"$1\" = --version ]; then echo '%s'; exit 0; fi\n"
             "out=; prev=; for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n%s\n", version, action);
    write_script(path, body);
}

static const char *const good_action = "exec cc \"$@\"";
static const char *const garbage_action = "printf 'this is no shared object' > \"$out\"; exit 0";

static size_t count_entries(const char *dir, const char *ext) {
    DIR *d = opendir(dir);
    size_t n = 0, el = strlen(ext);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        n += e->d_name[0] != '.' && len > el && strcmp(e->d_name + len - el, ext) == 0;
    }
    if (d) closedir(d);
    return n;
}

/* A compiler that exits 0 but writes garbage fails the make with an error
   saying the module was not cached, and nothing is stored (memory or disk):
   the same compiler fixed in place (same path, same context, so the same
   key) then compiles and runs. Before, the garbage was stored first and
   served until the cache was deleted by hand. */
TEST(a_compiler_that_writes_garbage_poisons_nothing) {
    char dir[] = "/tmp/gpuir-test-garbage-XXXXXX", cc[96], cache[96];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cc, sizeof cc, "%s/fakecc", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    fake_cc(cc, "fakecc 1.0", garbage_action);
    gpuir_ctx *ctx = ctx_with_cache(cache);
    CHECK(make(ctx, chain_text, cc) == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_CUDA);
    CHECK(strstr(gpuir_ctx_error(ctx), "cuModuleLoadData failed (CUDA_ERROR_INVALID_IMAGE") &&
          strstr(gpuir_ctx_error(ctx), "freshly compiled; not cached"));
    gpuir_ctx_clear_error(ctx);
    CHECK(gpuir_ctx_cache_stats(ctx).writes == 0 && count_entries(cache, ".so") == 0);
    fake_cc(cc, "fakecc 1.0", good_action);
    check_runs(ctx, make(ctx, chain_text, cc));
    gpuir_cache_stats st = gpuir_ctx_cache_stats(ctx);
    CHECK(st.mem_hits == 0 && st.misses == 2 && st.writes == 1);
    gpuir_ctx_destroy(ctx);
    CHECK(count_entries(cache, ".so") == 1);
    rm_rf(dir);
}

/* A module in the cache that fails to load (here garbage that gpuir itself
   stored, as a module built for another libc might be) is evicted from
   memory and disk and compiled again, once: the make succeeds and the cache
   status says what happened; a new context finds the good module on disk.
   When the module compiled again fails to load too, the error says the
   cached one was evicted. */
TEST(a_cached_module_that_fails_to_load_is_evicted_and_rebuilt) {
    char dir[] = "/tmp/gpuir-test-evict-XXXXXX", cc[96], cache[96];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cc, sizeof cc, "%s/fakecc", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    fake_cc(cc, "fakecc 2.0", good_action);
    gpuir_ctx *ctx = ctx_with_cache(cache);
    CHECK(make(ctx, chain_text, cc) != NULL);
    char key[65];
    only_key(ctx, "so", key);
    static const char garbage[] = "not a shared object";
    CHECK_RESULT(ctx, gpuir__cache_put(gpuir__ctx_cache(ctx), key, "so", garbage, sizeof garbage), GPUIR_OK);
    drop_lowered_in(ctx);                           /* the make reads the module's entry */
    check_runs(ctx, make(ctx, chain_text, cc));
    gpuir_cache_stats st = gpuir_ctx_cache_stats(ctx);
    CHECK(st.mem_hits == 1 && st.writes == 3);
    const char *status = gpuir_ctx_cache_status(ctx);
    CHECK(strstr(status, "the cached module") && strstr(status, key) && strstr(status, "failed to load") &&
          strstr(status, "evicted from the cache and compiled again"));
    gpuir_ctx_destroy(ctx);
    ctx = ctx_with_cache(cache);
    check_runs(ctx, make(ctx, chain_text, cc));
    CHECK(gpuir_ctx_cache_stats(ctx).disk_hits == 1 && gpuir_ctx_cache_stats(ctx).misses == 0);
    CHECK_RESULT(ctx, gpuir__cache_put(gpuir__ctx_cache(ctx), key, "so", garbage, sizeof garbage), GPUIR_OK);
    drop_lowered_in(ctx);
    fake_cc(cc, "fakecc 2.0", garbage_action);      /* same context: same identity, same key */
    CHECK(make(ctx, chain_text, cc) == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_CUDA);
    CHECK(strstr(gpuir_ctx_error(ctx), "compiled again after the cached module failed to load; it was evicted "
                                       "from the cache") != NULL);
    gpuir_ctx_destroy(ctx);
    CHECK(count_entries(cache, ".so") == 0);        /* the bad one is gone from disk too */
    rm_rf(dir);
}

/* The key names the compiler by what it is, not by what it is called: the
   same name with another version is another key (a miss, a second entry);
   and the identity is found once per context (`--version` runs once for
   three programs), not per compile. */
TEST(the_key_names_the_compiler_found_once_per_context) {
    char dir[] = "/tmp/gpuir-test-ident-XXXXXX", cc[96], cache[96], log[96], action[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cc, sizeof cc, "%s/fakecc", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(log, sizeof log, "%s/versions", dir);
    char body[512];
    snprintf(body, sizeof body, "if [ \"$1\" = --version ]; then echo asked >> %s; echo 'fakecc 3.0'; exit 0; fi\n%s\n",
             log, good_action);
    write_script(cc, body);
    gpuir_ctx *ctx = ctx_with_cache(cache);
    static const char *const more[] = {
        "func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
        "  %e = tanh %x : (tensor<8xf32>) -> tensor<8xf32>\n  return %e : tensor<8xf32>\n}\n",
        "func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
        "  %e = neg %x : (tensor<8xf32>) -> tensor<8xf32>\n  return %e : tensor<8xf32>\n}\n",
    };
    check_runs(ctx, make(ctx, chain_text, cc));
    CHECK(make(ctx, more[0], cc) != NULL && make(ctx, more[1], cc) != NULL);
    CHECK(gpuir_ctx_cache_stats(ctx).misses == 3);
    gpuir_ctx_destroy(ctx);
    size_t n = 0;
    char *asked = gpuir__slurp(log, &n);
    CHECK(asked && strcmp(asked, "asked\n") == 0);
    free(asked);
    snprintf(action, sizeof action, "%s", good_action);
    fake_cc(cc, "fakecc 3.1", action);              /* upgraded in place */
    ctx = ctx_with_cache(cache);
    check_runs(ctx, make(ctx, chain_text, cc));
    CHECK(gpuir_ctx_cache_stats(ctx).misses == 1 && gpuir_ctx_cache_stats(ctx).disk_hits == 0);
    gpuir_ctx_destroy(ctx);
    CHECK(count_entries(cache, ".so") == 4);
    rm_rf(dir);
}

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Whether process pid is gone (or a zombie nobody reaped yet). */
static bool process_gone(long pid) {
    char path[64], state = 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return kill((pid_t)pid, 0) != 0;
    bool read = fscanf(f, "%*d (%*[^)]) %c", &state) == 1;
    fclose(f);
    return read && state == 'Z';
}

/* A compiler that hangs (here it sleeps, with a child of its own) is killed
   with its whole process group after GPUIR_CC_TIMEOUT seconds, and the make
   fails with an error that says so and names the variable. One that
   compiles and exits, leaving a child that holds its standard error, is
   done when it is (gpuir polled the pipe until the child ended, at 100 %
   CPU, past the timeout). A malformed GPUIR_CC_TIMEOUT is refused by
   name. */
TEST(a_hanging_compiler_is_killed_after_the_timeout) {
    char dir[] = "/tmp/gpuir-test-hang-XXXXXX", cc[96], pidfile[96], action[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cc, sizeof cc, "%s/fakecc", dir);
    snprintf(pidfile, sizeof pidfile, "%s/pid", dir);
    snprintf(action, sizeof action, "sleep 5 & echo $! > %s; wait", pidfile);
    fake_cc(cc, "fakecc 4.0", action);
    setenv("GPUIR_CC_TIMEOUT", "0.5", 1);
    gpuir_ctx *ctx = ctx_with_cache("");
    double t0 = now_seconds();
    CHECK(make(ctx, chain_text, cc) == NULL);
    double took = now_seconds() - t0;
    CHECK(took >= 0.5 && took < 3);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_COMPILE);
    CHECK(strstr(gpuir_ctx_error(ctx), "did not finish compiling the kernels within 0.5 s") &&
          strstr(gpuir_ctx_error(ctx), "GPUIR_CC_TIMEOUT") && strstr(gpuir_ctx_error(ctx), "process group was killed"));
    size_t n = 0;
    char *pid = gpuir__slurp(pidfile, &n);
    CHECK(pid != NULL);
    for (int i = 0; pid && i < 100 && !process_gone(atol(pid)); i++) nap_ms(10);
    if (pid) CHECK(process_gone(atol(pid)));        /* the compiler's child too */
    free(pid);
    gpuir_ctx_destroy(ctx);
    snprintf(action, sizeof action, "sleep 30 >&2 & echo $! > %s; exec cc \"$@\"", pidfile);
    fake_cc(cc, "fakecc 4.1", action);             /* it compiles, leaving a child that holds its stderr */
    setenv("GPUIR_CC_TIMEOUT", "20", 1);
    ctx = ctx_with_cache("");
    t0 = now_seconds();
    check_runs(ctx, make(ctx, chain_text, cc));     /* done when the compiler is (it spun until the child's end) */
    CHECK(now_seconds() - t0 < 15);
    pid = gpuir__slurp(pidfile, &n);
    if (pid) kill((pid_t)atol(pid), SIGKILL);
    free(pid);
    gpuir_ctx_destroy(ctx);
    setenv("GPUIR_CC_TIMEOUT", "soon", 1);
    ctx = ctx_with_cache("");
    CHECK(make(ctx, chain_text, NULL) == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_INVALID_ARGUMENT);
    CHECK(strstr(gpuir_ctx_error(ctx), "GPUIR_CC_TIMEOUT='soon' is not a number of seconds above 0 and at most 1e9") != NULL);
    gpuir_ctx_destroy(ctx);
    unsetenv("GPUIR_CC_TIMEOUT");
    rm_rf(dir);
}

/* The entries of a directory other than . and .. */
static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

/* A process killed (SIGINT, SIGKILL) in the middle of an emulator compile
   leaves its private directory in $TMPDIR; the next process's first
   compile removes it (its owner is dead, its lock free and the compiler it
   started gone; while that compiler runs, the directory stays), and when
   that context goes $TMPDIR is empty again. Before, gpuir-src-*,
   gpuir-so-* and gpuir-log-* files piled up. */
TEST(a_killed_process_leaves_nothing_behind) {
    char dir[] = "/tmp/gpuir-test-killed-XXXXXX", tmp[96], cc[96], started[96], pidfile[96], action[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    snprintf(cc, sizeof cc, "%s/fakecc", dir);
    snprintf(started, sizeof started, "%s/started", dir);
    snprintf(pidfile, sizeof pidfile, "%s/pid", dir);
    CHECK(mkdir(tmp, 0700) == 0);
    snprintf(action, sizeof action, "echo $$ > %s; touch %s; exec sleep 30", pidfile, started);
    fake_cc(cc, "fakecc 5.0", action);
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", tmp, 1);
    const int sigs[] = {SIGINT, SIGKILL};
    for (int i = 0; i < 2; i++) {
        unlink(started);
        fflush(NULL);
        pid_t child = fork();
        if (child == 0) {
            signal(SIGINT, SIG_DFL);    /* a job started in the background inherits SIGINT ignored */
            gpuir_ctx *ctx = ctx_with_cache("");
            make(ctx, chain_text, cc);
            _exit(3);
        }
        for (int k = 0; k < 1000 && !exists(started); k++) nap_ms(10);
        CHECK(exists(started));
        kill(child, sigs[i]);
        int status = 0;
        CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status));
        size_t n = 0;
        char *pid = gpuir__slurp(pidfile, &n);
        if (i == 1) {                               /* its compiler still runs: the directory stays */
            gpuir_ctx *ctx = ctx_with_cache("");
            check_runs(ctx, make(ctx, chain_text, NULL));
            CHECK(count_files(tmp) == 2);
            gpuir_ctx_destroy(ctx);
        }
        if (pid) kill(-(pid_t)atol(pid), SIGKILL);  /* the compiler, in its own group, outlives it */
        for (int k = 0; pid && k < 500 && !process_gone(atol(pid)); k++) nap_ms(10);
        free(pid);
        CHECK(count_files(tmp) == 1);               /* its private directory */
    }
    gpuir_ctx *ctx = ctx_with_cache("");
    check_runs(ctx, make(ctx, chain_text, NULL));
    CHECK(count_files(tmp) == 1);                   /* ours, with the lock in it */
    gpuir_ctx_destroy(ctx);
    CHECK(count_files(tmp) == 0);
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
    rm_rf(dir);
}

/* Directories in $TMPDIR named like a private one of a dead process but
   that gpuir did not make are the user's: one without the lock file
   (`gpuir-2024-backup`), one of mode 0755, one with a name mkdtemp never
   makes; a make's sweep leaves them and their files alone (it deleted
   every file in the first). */
TEST(the_sweep_leaves_the_users_directories_alone) {
    char dir[] = "/tmp/gpuir-test-sweep-XXXXXX", tmp[96], path[160];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    CHECK(mkdir(tmp, 0700) == 0);
    const char *names[] = {"gpuir-2024-backup", "gpuir-2147483001-Abc123", "gpuir-2147483002-ab.c12"};
    const mode_t modes[] = {0700, 0755, 0700};
    const char *files[] = {"notes.txt", "lock", "lock"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp, names[i]);
        CHECK(mkdir(path, modes[i]) == 0 && chmod(path, modes[i]) == 0);
        snprintf(path, sizeof path, "%s/%s/%s", tmp, names[i], files[i]);
        FILE *f = fopen(path, "w");
        CHECK(f && fclose(f) == 0);
    }
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", tmp, 1);
    gpuir_ctx *ctx = ctx_with_cache("");
    check_runs(ctx, make(ctx, chain_text, NULL));
    gpuir_ctx_destroy(ctx);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s/%s", tmp, names[i], files[i]);
        CHECK(exists(path));
    }
    CHECK(count_files(tmp) == 3);                   /* the context's own went at its destroy */
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
    rm_rf(dir);
}

/* The context's private temporary directory removed from outside (a
   tmp cleaner, on a long-lived process): the next compile makes a new one
   (every later compile failed: "cannot create a temporary file"). */
TEST(a_private_directory_removed_from_outside_is_made_again) {
    char dir[] = "/tmp/gpuir-test-removed-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", dir, 1);
    gpuir_ctx *ctx = ctx_with_cache("");
    check_runs(ctx, make(ctx, chain_text, NULL));
    CHECK(count_files(dir) == 1);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s/gpuir-*", dir);
    CHECK(system(cmd) == 0 && count_files(dir) == 0);
    static const char other[] = "func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
                                "  %e = tanh %x : (tensor<8xf32>) -> tensor<8xf32>\n  return %e : tensor<8xf32>\n}\n";
    CHECK(make(ctx, other, NULL) != NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    CHECK(count_files(dir) == 1);
    gpuir_ctx_destroy(ctx);
    CHECK(count_files(dir) == 0);
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
    rm_rf(dir);
}

/* The cache directory removed while a context runs (`rm -rf` of the cache,
   its parent with it): the next entry makes it again, at its absolute
   path, with a new secret, and is written there and found by the next
   context. Before, every later entry failed to be written (a removed
   directory takes no new file) until the context ended. A relative cache directory is not made again (the working
   directory may have changed): the disk cache goes off, saying so, and
   nothing is written where the process now stands. */
TEST(a_removed_cache_directory_is_made_again) {
    char dir[] = "/tmp/gpuir-test-remade-XXXXXX", path[160], want[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/parent/cache", dir);
    static const char other[] = "func.func @g(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
                                "  %e = tanh %x : (tensor<8xf32>) -> tensor<8xf32>\n  return %e : tensor<8xf32>\n}\n";
    gpuir_ctx *ctx = ctx_with_cache(path);
    check_runs(ctx, make(ctx, chain_text, NULL));
    CHECK(count_files(path) >= 2);                  /* the secret and the entries */
    snprintf(want, sizeof want, "%s/parent", dir);
    rm_rf(want);
    CHECK(!exists(want));
    CHECK(make(ctx, other, NULL) != NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    CHECK(strcmp(gpuir_ctx_cache_status(ctx), "ok") == 0);
    CHECK(strcmp(gpuir_ctx_cache_dir(ctx), path) == 0);
    CHECK(gpuir_ctx_cache_stats(ctx).write_failures == 0);
    int remade = count_files(path);
    CHECK(remade >= 2);
    gpuir_ctx_destroy(ctx);
    ctx = ctx_with_cache(path);                     /* a new context finds what was written */
    CHECK(make(ctx, other, NULL) != NULL);
    CHECK(gpuir_ctx_cache_stats(ctx).disk_hits >= 1);
    gpuir_ctx_destroy(ctx);

    int home = open(".", O_RDONLY | O_DIRECTORY);
    CHECK(home >= 0 && chdir(dir) == 0);
    CHECK(mkdir("elsewhere", 0700) == 0);
    ctx = ctx_with_cache("relcache");
    check_runs(ctx, make(ctx, chain_text, NULL));
    CHECK(count_files("relcache") >= 2);
    rm_rf("relcache");
    CHECK(chdir("elsewhere") == 0);
    CHECK(make(ctx, other, NULL) != NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    const char *status = gpuir_ctx_cache_status(ctx);
    CHECK(strstr(status, "disk cache off: relcache was removed, and a relative path is not made again") != NULL);
    if (!strstr(status, "relcache was removed")) fprintf(stderr, "  status: %s\n", status);
    CHECK(strcmp(gpuir_ctx_cache_dir(ctx), "") == 0);
    CHECK(count_files(".") == 0 && !exists("../relcache"));
    gpuir_ctx_destroy(ctx);
    CHECK(home >= 0 && fchdir(home) == 0);
    if (home >= 0) close(home);
    rm_rf(dir);
}

/* Plants path (a regular file, or a directory or a symlink when kind says)
   with its modification time age seconds ago. */
static void plant(const char *path, char kind, long age) {
    if (kind == 'd') CHECK(mkdir(path, 0700) == 0);
    else if (kind == 'l') CHECK(symlink("/nonexistent", path) == 0);
    else write_text(path, "half an entry", 0600);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age;
    t[1] = t[0];
    CHECK(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW) == 0);
}

/* A pid no process has: a child's, reaped. */
static long dead_pid(void) {
    pid_t child = fork();
    if (child == 0) _exit(0);
    CHECK(child > 0 && waitpid(child, NULL, 0) == child);
    return (long)child;
}

/* A writer killed between its temp file and the rename leaves
   ".<key>.<pid>.<random>.tmp" in the cache directory; the next context's
   cache removes the ones of its exact form that are regular files of this
   user, untouched for an hour (whoever wrote them: the pid may be another
   machine's), or a minute when no process has their pid. A fresh one, a
   live pid's, a symlink, a directory and names of another form stay.
   Before, they were never removed. */
TEST(temp_files_of_killed_writers_are_reclaimed) {
    char dir[] = "/tmp/gpuir-test-temps-XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx *ctx = ctx_with_cache(dir);
    CHECK(strcmp(gpuir_ctx_cache_status(ctx), "ok") == 0);          /* makes the directory's secret */
    gpuir_ctx_destroy(ctx);
    const char *key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    long dead = dead_pid();
    struct { char name[128]; char kind; long age; bool gone; } files[12];
    int n = 0;
#define PLANT(kind_, age_, gone_, ...) \
    (snprintf(files[n].name, sizeof files[n].name, __VA_ARGS__), files[n].kind = (kind_), \
     files[n].age = (age_), files[n].gone = (gone_), n++)
    PLANT('f', 120, true, ".%s.%ld.0123456789abcdef.tmp", key, dead);        /* dead writer, a minute old */
    PLANT('f', 120, true, ".secret.%ld.fedcba9876543210.tmp", dead);        /* a secret's */
    PLANT('f', 7200, true, ".%s.1.0123456789abcdef.tmp", key);               /* an hour old: whoever wrote it */
    PLANT('f', 5, false, ".%s.%ld.1123456789abcdef.tmp", key, dead);         /* fresh */
    PLANT('f', 120, false, ".%s.1.1123456789abcdef.tmp", key);               /* a live pid's */
    PLANT('l', 7200, false, ".%s.%ld.2123456789abcdef.tmp", key, dead);      /* a symlink */
    PLANT('d', 7200, false, ".%s.%ld.3123456789abcdef.tmp", key, dead);      /* a directory */
    PLANT('f', 7200, false, ".%s.%ld.4123456789abcdef.tmp.keep", key, dead); /* other forms */
    PLANT('f', 7200, false, ".%.63s.%ld.4123456789abcdef.tmp", key, dead);
    PLANT('f', 7200, false, ".%s.%ld.4123456789ABCDEF.tmp", key, dead);
    PLANT('f', 7200, false, ".%s.0%ld.4123456789abcdef.tmp", key, dead);
    PLANT('f', 7200, false, "notes.%ld.4123456789abcdef.tmp", dead);
#undef PLANT
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%.127s", dir, files[i].name);
        plant(path, files[i].kind, files[i].age);
    }
    ctx = ctx_with_cache(dir);
    CHECK(strcmp(gpuir_ctx_cache_status(ctx), "ok") == 0);
    gpuir_ctx_destroy(ctx);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%.127s", dir, files[i].name);
        CHECK(exists(path) == !files[i].gone);
        if (exists(path) != !files[i].gone) fprintf(stderr, "  %s: %s\n", files[i].name, files[i].gone ? "kept" : "removed");
    }
    rm_rf(dir);
}

/* A directory where an entry goes: each make's write of it fails, and the
   status names the entry, not the temp file that is gone ("cannot rename
   <dir>/.<key>.<pid>.<random>.tmp: Is a directory"), and write_failures
   counts it (it counted only modules; a lowered program's failed write
   was invisible). */
TEST(a_directory_at_an_entrys_name_is_a_counted_write_failure_naming_it) {
    char dir[] = "/tmp/gpuir-test-entrydir-XXXXXX", path[512];
    CHECK(mkdtemp(dir) != NULL);
    gpuir_ctx *ctx = ctx_with_cache(dir);
    check_runs(ctx, make(ctx, chain_text, NULL));
    gpuir_ctx_destroy(ctx);
    only_entry(dir, "lowered", path, sizeof path);
    CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
    for (int run = 0; run < 2; run++) {
        ctx = ctx_with_cache(dir);
        check_runs(ctx, make(ctx, chain_text, NULL));
        const char *status = gpuir_ctx_cache_status(ctx);
        char want[600];
        snprintf(want, sizeof want, "cannot store %s: replacing it with its temporary file: Is a directory", path);
        CHECK(strstr(status, want) != NULL);
        CHECK(strstr(status, ".tmp") == NULL);
        if (!strstr(status, want)) fprintf(stderr, "  status: %s\n", status);
        CHECK(gpuir_ctx_cache_stats(ctx).write_failures == 1);
        gpuir_ctx_destroy(ctx);
    }
    rm_rf(dir);
}

/* A cache or temporary directory whose path is longer than the 1024-byte
   status (or the emulator's message buffer): the message loses the middle
   of the path, not the errno text at its end (it was cut after 1024 bytes,
   the reason gone). */
TEST(a_long_path_keeps_the_reason_in_the_message) {
    char dir[] = "/tmp/gpuir-test-longpath-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    size_t n = strlen(dir);
    char *longpath = (char *)malloc(n + 30 * 201 + 1);
    memcpy(longpath, dir, n + 1);
    for (int i = 0; i < 30; i++) {
        longpath[n++] = '/';
        memset(longpath + n, 'd', 200);
        n += 200;
    }
    longpath[n] = '\0';
    gpuir_ctx *ctx = ctx_with_cache(longpath);
    const char *status = gpuir_ctx_cache_status(ctx);
    CHECK(strlen(status) < 1024 && strstr(status, "disk cache off: cannot create /tmp/gpuir-test-longpath-") == status);
    CHECK(strstr(status, " ... ") != NULL);
    CHECK(strlen(status) > 20 && strcmp(status + strlen(status) - 20, ": File name too long") == 0);
    if (!strstr(status, "File name too long")) fprintf(stderr, "  status: ...%s\n", status + strlen(status) / 2);
    gpuir_ctx_destroy(ctx);
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", longpath, 1);
    ctx = ctx_with_cache("");
    CHECK(make(ctx, chain_text, NULL) == NULL);
    const char *error = gpuir_ctx_error(ctx);
    CHECK(strstr(error, "emu: cannot create a private temporary directory /tmp/gpuir-test-longpath-") != NULL);
    CHECK(strlen(error) > 20 && strcmp(error + strlen(error) - 20, ": File name too long") == 0);
    if (!strstr(error, "File name too long")) fprintf(stderr, "  error: ...%s\n", error + strlen(error) / 2);
    gpuir_ctx_destroy(ctx);
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
    free(longpath);
    rm_rf(dir);
}

/* The cache's status quotes its directory: a control byte in the path
   (a terminal's escape sequence) is written \xNN there, as in every other
   message (it was handed out as it was). */
TEST(the_cache_status_escapes_control_bytes) {
    char dir[] = "/tmp/gpuir-test-escape-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/dir\033]0;title\a", dir);
    CHECK(mkdir(path, 0700) == 0 && chmod(path, 0777) == 0);      /* refused: others may write it */
    gpuir_ctx *ctx = ctx_with_cache(path);
    (void)make(ctx, chain_text, NULL);
    const char *status = gpuir_ctx_cache_status(ctx);
    CHECK(strncmp(status, "disk cache off", 14) == 0);
    CHECK(strstr(status, "dir\\x1b]0;title\\x07") != NULL);
    for (const char *c = status; *c; c++) CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
    if (!strstr(status, "\\x1b")) fprintf(stderr, "  status: %s\n", status);
    gpuir_ctx_destroy(ctx);
    rm_rf(dir);
}

/* A relative $TMPDIR and an application that changes directory between
   makes: the private directory is made absolute when it is made, so the
   next compile still finds it and the context's destroy removes it (the
   second make failed, "cannot create a private temporary directory
   reltmp/gpuir-...: No such file or directory", and the directory was
   left behind). */
TEST(a_relative_tmpdir_survives_a_change_of_directory) {
    char dir[] = "/tmp/gpuir-test-reltmp-XXXXXX", path[160];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/reltmp", dir);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/other", dir);
    CHECK(mkdir(path, 0700) == 0);
    int home = open(".", O_RDONLY | O_DIRECTORY);
    CHECK(home >= 0 && chdir(dir) == 0);
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", "reltmp", 1);
    gpuir_ctx *ctx = ctx_with_cache("");
    check_runs(ctx, make(ctx, chain_text, NULL));
    CHECK(chdir("other") == 0);
    static const char other[] = "func.func @g(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
                                "  %e = tanh %x : (tensor<8xf32>) -> tensor<8xf32>\n  return %e : tensor<8xf32>\n}\n";
    CHECK(make(ctx, other, NULL) != NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_OK);
    snprintf(path, sizeof path, "%s/reltmp", dir);
    CHECK(count_files(path) == 1);                  /* one private directory, made once */
    CHECK(count_files(".") == 0);
    gpuir_ctx_destroy(ctx);
    CHECK(count_files(path) == 0);                  /* removed at destroy */
    CHECK(home >= 0 && fchdir(home) == 0);
    if (home >= 0) close(home);
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
    rm_rf(dir);
}

/* An emulator compile or module load that cannot use the temporary
   directory fails with an error naming the path and the errno: TMPDIR
   missing, not a directory, files it cannot grow (RLIMIT_FSIZE: the
   source, then a cached module written out to be dlopen'ed), and (as root,
   where tmpfs can be mounted) a full file system. */
TEST(an_unusable_temporary_directory_names_the_path_and_errno) {
    char dir[] = "/tmp/gpuir-test-tmpdir-XXXXXX", path[128];
    CHECK(mkdtemp(dir) != NULL);
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    static const struct { const char *sub; const char *says; } cases[] = {
        {"/missing", "No such file or directory"},
        {"/file", "Not a directory"},
    };
    snprintf(path, sizeof path, "%s/file", dir);
    write_text(path, "", 0600);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s%s", dir, cases[i].sub);
        setenv("TMPDIR", path, 1);
        gpuir_ctx *ctx = ctx_with_cache("");
        CHECK(make(ctx, chain_text, NULL) == NULL);
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_IO);
        CHECK(strstr(gpuir_ctx_error(ctx), "cannot create a private temporary directory") &&
              strstr(gpuir_ctx_error(ctx), path) && strstr(gpuir_ctx_error(ctx), cases[i].says));
        gpuir_ctx_destroy(ctx);
    }
    snprintf(path, sizeof path, "%s/tmp", dir);
    CHECK(mkdir(path, 0700) == 0);
    setenv("TMPDIR", path, 1);
    struct rlimit lim, small;
    CHECK(getrlimit(RLIMIT_FSIZE, &lim) == 0);
    small = lim;
    small.rlim_cur = 4096;                          /* the source is larger */
    signal(SIGXFSZ, SIG_IGN);
    char cache[160];                                /* warm: the module on disk, not yet loaded here */
    snprintf(cache, sizeof cache, "%s/cache", dir);
    gpuir_ctx *ctx = ctx_with_cache(cache);
    check_runs(ctx, make(ctx, chain_text, NULL));
    gpuir_ctx_destroy(ctx);
    ctx = ctx_with_cache(cache);
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    static const char other[] = "func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
                                "  %e = tanh %x : (tensor<8xf32>) -> tensor<8xf32>\n  return %e : tensor<8xf32>\n}\n";
    CHECK(make(ctx, other, NULL) == NULL);
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_IO);
    CHECK(strstr(gpuir_ctx_error(ctx), "cannot write the kernels' source to") &&
          strstr(gpuir_ctx_error(ctx), path) && strstr(gpuir_ctx_error(ctx), "File too large"));
    gpuir_ctx_clear_error(ctx);
    CHECK(make(ctx, chain_text, NULL) == NULL);      /* from the cache, but not written out */
    CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_CUDA);
    CHECK(strstr(gpuir_ctx_error(ctx), "CUDA_ERROR_OPERATING_SYSTEM") &&
          strstr(gpuir_ctx_error(ctx), "cannot write the module to") && strstr(gpuir_ctx_error(ctx), path) &&
          strstr(gpuir_ctx_error(ctx), "File too large") && strstr(gpuir_ctx_error(ctx), "a module from the cache"));
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    gpuir_ctx_clear_error(ctx);
    check_runs(ctx, make(ctx, chain_text, NULL));    /* not evicted: not the module's fault */
    gpuir_cache_stats st = gpuir_ctx_cache_stats(ctx);
    CHECK(st.disk_hits == 1 && st.mem_hits == 1 && st.misses == 1 && st.compiles == 1);   /* other's, only */
    gpuir_ctx_destroy(ctx);
    signal(SIGXFSZ, SIG_DFL);

    char cmd[512];
    snprintf(path, sizeof path, "%s/full", dir);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=64k tmpfs %s 2>/dev/null", path);
    if (geteuid() == 0 && system(cmd) == 0) {
        snprintf(cmd, sizeof cmd, "dd if=/dev/zero of=%s/fill bs=4k count=100 status=none 2>/dev/null; true", path);
        CHECK(system(cmd) == 0);
        setenv("TMPDIR", path, 1);
        ctx = ctx_with_cache("");
        CHECK(make(ctx, chain_text, NULL) == NULL);
        CHECK_RESULT(ctx, gpuir_ctx_result(ctx), GPUIR_ERR_IO);
        CHECK(strstr(gpuir_ctx_error(ctx), path) && strstr(gpuir_ctx_error(ctx), "No space left on device"));
        gpuir_ctx_destroy(ctx);
        snprintf(cmd, sizeof cmd, "umount %s", path);
        CHECK(system(cmd) == 0);
    }
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
    rm_rf(dir);
}

int main(void) {
    RUN(a_forged_emulator_bundle_is_refused);
    RUN(a_cuda_bundle_still_imports_and_exports);
    RUN(an_export_replaces_regular_files_only);
    RUN(a_bundle_holds_what_its_kinds_say_once);
    RUN(a_planted_cache_entry_is_never_loaded);
    RUN(an_entry_of_another_format_version_is_a_miss);
    RUN(a_compiler_that_writes_garbage_poisons_nothing);
    RUN(a_cached_module_that_fails_to_load_is_evicted_and_rebuilt);
    RUN(the_key_names_the_compiler_found_once_per_context);
    RUN(a_hanging_compiler_is_killed_after_the_timeout);
    RUN(a_killed_process_leaves_nothing_behind);
    RUN(the_sweep_leaves_the_users_directories_alone);
    RUN(a_private_directory_removed_from_outside_is_made_again);
    RUN(a_removed_cache_directory_is_made_again);
    RUN(an_unusable_temporary_directory_names_the_path_and_errno);
    RUN(temp_files_of_killed_writers_are_reclaimed);
    RUN(a_directory_at_an_entrys_name_is_a_counted_write_failure_naming_it);
    RUN(a_long_path_keeps_the_reason_in_the_message);
    RUN(the_cache_status_escapes_control_bytes);
    RUN(a_relative_tmpdir_survives_a_change_of_directory);
    return CHECK_EXIT();
}

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
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const chain_text =
    "func.func @f(%x: tensor<5x7xf32>, %b: tensor<7xf32>) -> (tensor<5x7xf32>, tensor<5xf32>) {\n"
    "  %e = exp %x : (tensor<5x7xf32>) -> tensor<5x7xf32>\n"
    "  %a = add %e, %b : (tensor<5x7xf32>, tensor<7xf32>) -> tensor<5x7xf32>\n"
    "  %s = reduce_sum %x {axes = [1]} : (tensor<5x7xf32>) -> tensor<5xf32>\n"
    "  return %a, %s : tensor<5x7xf32>, tensor<5xf32>\n}\n";

static gpuir_program *make(gpuir_ctx *ctx, const char *text, const char *cc) {
    gpuir_module *m = gpuir_module_parse(ctx, text, strlen(text), "test");
    gpuir_program_desc d;
    memset(&d, 0, sizeof d);
    d.backend = GPUIR_BACKEND_EMU;
    d.cc = cc;
    return m ? gpuir_program_make(m, &d) : NULL;
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
    gpuir_ctx_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.cache_dir = dir;
    return gpuir_ctx_make(&cd);
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
    const char *parts[] = {"cuda", "source"};
    gpuir__cache_key(parts, 2, keys[0]);
    gpuir__cache_key(parts, 1, keys[1]);
    const char *exts[] = {"cubin", "ptx"};
    static const char cubin[] = "\177ELF a cubin's bytes", ptx[] = ".version 8.0\n.target sm_90\n";
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
    ctx = ctx_with_cache(one);
    check_runs(ctx, make(ctx, chain_text, NULL));
    gpuir_cache_stats s = gpuir_ctx_cache_stats(ctx);
    CHECK(s.corrupt == 1 && s.disk_hits == 0 && s.misses == 1 && s.writes == 1);
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
    CHECK(gpuir_ctx_cache_stats(ctx).corrupt == 1);  /* its entries with it */
    gpuir_ctx_destroy(ctx);
    CHECK(stat(secret, &st) == 0 && st.st_size == 32);
    free(evil);
    rm_rf(dir);
}

int main(void) {
    RUN(a_forged_emulator_bundle_is_refused);
    RUN(a_cuda_bundle_still_imports_and_exports);
    RUN(a_planted_cache_entry_is_never_loaded);
    return CHECK_EXIT();
}

/* Fuzz harness: bytes -> builder calls. The bytes are a little program for
   the C builder API: each step takes an opcode byte and argument bytes and
   makes an op from the values made so far (unary, binary, matmul, reduce,
   transpose, reshape, broadcast, cast, softmax, splat and dense constants),
   whatever the shapes, so the builder's checks see every kind of wrong
   call; then the function returns a few values. A module that builds must
   verify, print to a fixed point, run on the interpreter (no parameters:
   constants only) before and after the default pipeline, and render as
   CUDA C. Built with clang's libFuzzer (`make fuzz-builder`), or with any
   compiler and -DGPUIR_FUZZ_REPLAY as a program that replays files
   (`make test` replays tests/fuzz/builder-corpus); either way linked with
   the implementation compiled once (examples/gpuir_impl.c). */
#define FUZZ_NAME "fuzz-builder"
#include "../../gpuir.h"
#include "fuzz_common.h"

#define MAX_VALUES 64

typedef struct reader { const uint8_t *p, *end; } reader;

static unsigned next(reader *r) { return r->p < r->end ? *r->p++ : 0; }

/* A value made so far, picked by the next byte. */
static gpuir_value pick(reader *r, const gpuir_value *vals, size_t n) {
    return n ? vals[next(r) % n] : (gpuir_value){0};
}

/* A small static shape: rank 0..3, dims 1..8. */
static int shape(reader *r, int64_t *dims) {
    int rank = (int)(next(r) % 4);
    for (int i = 0; i < rank; i++) dims[i] = 1 + next(r) % 8;
    return rank;
}

static const gpuir_op_kind unaries[] = {GPUIR_OP_NEG, GPUIR_OP_ABS, GPUIR_OP_EXP, GPUIR_OP_LOG, GPUIR_OP_SQRT,
                                        GPUIR_OP_RSQRT, GPUIR_OP_TANH, GPUIR_OP_SIGMOID, GPUIR_OP_RELU,
                                        GPUIR_OP_GELU, GPUIR_OP_SILU};
static const gpuir_op_kind binaries[] = {GPUIR_OP_ADD, GPUIR_OP_SUB, GPUIR_OP_MUL, GPUIR_OP_DIV,
                                         GPUIR_OP_MAX, GPUIR_OP_MIN, GPUIR_OP_POW};

/* One builder call from the bytes; an invalid value when the call fails. */
static gpuir_value step(gpuir_module *m, reader *r, const gpuir_value *vals, size_t n) {
    int64_t dims[GPUIR_MAX_RANK], axes[GPUIR_MAX_RANK];
    unsigned op = next(r) % 12;
    gpuir_dtype dt = (gpuir_dtype)(next(r) % GPUIR_DTYPE_COUNT);
    switch (op) {
    case 0: return gpuir_unary(m, unaries[next(r) % (sizeof unaries / sizeof unaries[0])], pick(r, vals, n));
    case 1: {
        gpuir_op_kind k = binaries[next(r) % (sizeof binaries / sizeof binaries[0])];
        gpuir_value a = pick(r, vals, n);
        return gpuir_binary(m, k, a, pick(r, vals, n));
    }
    case 2: {
        gpuir_value a = pick(r, vals, n);
        gpuir_value b = pick(r, vals, n);
        return gpuir_matmul(m, a, b, next(r) % 4);
    }
    case 3: {
        gpuir_value x = pick(r, vals, n);
        size_t k = next(r) % 3;
        for (size_t i = 0; i < k; i++) axes[i] = (int64_t)(next(r) % 7) - 3;
        gpuir_op_kind kind = next(r) % 3 == 0 ? GPUIR_OP_REDUCE_SUM : next(r) % 2 ? GPUIR_OP_REDUCE_MAX : GPUIR_OP_REDUCE_MEAN;
        return gpuir_reduce(m, kind, x, k, axes, next(r) & 1);
    }
    case 4: {
        gpuir_value x = pick(r, vals, n);
        size_t k = next(r) % 4;
        for (size_t i = 0; i < k; i++) axes[i] = next(r) % 4;
        return gpuir_transpose(m, x, k, axes);
    }
    case 5: {
        gpuir_value x = pick(r, vals, n);
        int rank = shape(r, dims);
        return gpuir_reshape(m, x, rank, dims);
    }
    case 6: {
        gpuir_value x = pick(r, vals, n);
        int rank = shape(r, dims);
        return gpuir_broadcast(m, x, rank, dims);
    }
    case 7: return gpuir_cast(m, pick(r, vals, n), dt);
    case 8: {
        gpuir_value x = pick(r, vals, n);
        return gpuir_softmax(m, x, (int64_t)(next(r) % 5) - 2);
    }
    case 9: case 10: {
        int rank = shape(r, dims);
        return gpuir_constant_splat(m, gpuir_tensor_type(dt, rank, dims), (double)(int)(next(r) % 17) - 8.0);
    }
    default: {
        int rank = shape(r, dims);
        gpuir_type t = gpuir_tensor_type(dt, rank, dims);
        int64_t count = 1;
        for (int i = 0; i < rank; i++) count *= dims[i];
        unsigned char data[8 * 512];
        for (int64_t i = 0; i < count * 8 && i < (int64_t)sizeof data; i++) data[i] = (unsigned char)next(r);
        if (dt == GPUIR_F16 || dt == GPUIR_BF16 || dt == GPUIR_F32)  /* keep the floats finite */
            for (int64_t i = 0; i < count; i++) {
                float f = (float)((int)(next(r) % 33) - 16) / 4.0f;
                if (dt == GPUIR_F32) memcpy(data + i * 4, &f, 4);
                else { uint16_t h = (uint16_t)(dt == GPUIR_F16 ? 0x3c00 : 0x3f80); memcpy(data + i * 2, &h, 2); }
            }
        return gpuir_constant_dense(m, t, data);
    }
    }
}

/* Runs the only function (no parameters) on the interpreter. */
static void run_ref(gpuir_module *m, size_t n_out) {
    gpuir_array out[4];
    if (gpuir_ref_run(m, "f", 0, NULL, n_out, out) == GPUIR_OK)
        for (size_t k = 0; k < n_out; k++) gpuir_array_release(&out[k]);
    gpuir_ctx_clear_error(gpuir_module_ctx(m));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpuir_ctx_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.max_tensor_bytes = 1 << 20;
    gpuir_ctx *ctx = gpuir_ctx_make(&desc);
    gpuir_module *m = gpuir_module_make(ctx);
    reader r = {data, data + size};
    gpuir_value vals[MAX_VALUES];
    size_t n = 0;
    gpuir_func_begin(m, "f");
    for (unsigned steps = next(&r) % 40; steps > 0 && r.p < r.end; steps--) {
        gpuir_value v = step(m, &r, vals, n);
        if (v.id && n < MAX_VALUES) vals[n++] = v;
        gpuir_ctx_clear_error(ctx);                   /* a refused call is fine; go on */
    }
    size_t n_out = n ? 1 + next(&r) % (n < 4 ? n : 4) : 0;
    gpuir_value outs[4];
    for (size_t i = 0; i < n_out; i++) outs[i] = vals[n - 1 - i];
    if (gpuir_func_return(m, n_out, outs) == GPUIR_OK && gpuir_module_verify(m) == GPUIR_OK) {
        fuzz_roundtrip(ctx, m, "built");
        run_ref(m, n_out);
        if (gpuir_module_run_passes(m, GPUIR_DEFAULT_PIPELINE, NULL) == GPUIR_OK) {
            run_ref(m, n_out);
            gpuir_free(gpuir_module_emit_cuda(m));
        }
    }
    gpuir_ctx_destroy(ctx);
    return 0;
}

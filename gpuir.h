/* gpuir.h — a tiny tensor compiler: IR, text format, verifier and a CPU
   reference interpreter, growing into CUDA codegen and a runtime.
   One header, stb style. MIT licensed (see LICENSE and the end of the file).

   USAGE
     In exactly one C or C++ file:
         #define GPUIR_IMPLEMENTATION
         #include "gpuir.h"
     Everywhere else just #include "gpuir.h". Link with stb_ds's
     implementation: Debian's libstb (`pkg-config --cflags --libs stb`), or
     define GPUIR_STB_DS_IMPLEMENTATION next to GPUIR_IMPLEMENTATION and gpuir
     compiles stb_ds itself (stb_ds.h must still be on the include path).

   COMPILE-TIME OPTIONS
     GPUIR_STATIC                  every public function becomes static
     GPUIR_ASSERT(c)               contract checks (default: assert)
     GPUIR_STB_DS_IMPLEMENTATION   compile stb_ds's implementation here

   TABLE OF CONTENTS (`grep -n '^// >>' gpuir.h` prints the same list)
     >>api      public types and functions: no stb_ds, no CUDA types
     >>util     errors, strings, checked arithmetic, f16/bf16 conversion
     >>ir       types, values, ops, functions, modules; the op table
     >>build    the public builder calls: shape inference and checks
     >>print    IR to text
     >>parse    text to IR
     >>verify   structural and type checks of a whole module
     >>array    host arrays: allocation, element access, random fill, compare
     >>ref      the reference interpreter of tensor-level IR (the oracle)
     >>npy      .npy reading and writing
     >>pass     the pass registry and the pipeline runner; rewriting helpers
     >>pass.canonicalize   constant folding, CSE, dead code removal
     >>pass.decompose      composites (softmax) into primitive ops
     >>pass.fuse           fusion groups: which ops share a kernel
     >>pass.bufferize      tensors to buffers in host functions
     >>pass.outline        fusion groups to kernels and launches
     >>pass.place          device memory and the copies between host and device
     >>pass.configure      launch configuration: grid and block per launch
     >>pass.plan-shared-memory   dynamic shared memory per launch
     >>codegen.cuda       kernels as CUDA C, one module per program

   CONVENTIONS
     Public names are gpuir_<noun>_<verb>, internal ones gpuir__<section>_<verb>.
     One gpuir_ctx owns everything; there is no global state. Fallible calls
     return a gpuir_result; the first failure is kept in the context
     (gpuir_ctx_result, gpuir_ctx_error) and later calls do nothing until
     gpuir_ctx_clear_error. Builder calls return an invalid handle (id 0)
     instead of a code, so a long build is checked once at the end.

   THREADS
     A context and everything made from it belong to one thread at a time.
     Separate contexts may be used from separate threads in parallel.
*/
/* ====================================================================== */
// >>api
// The public interface. Needs only <stddef.h>, <stdint.h>, <stdbool.h>.
// Everything here is C99 and C++ compatible; nothing here uses stb_ds.
#ifndef GPUIR_H_INCLUDED
#define GPUIR_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define GPUIR_VERSION_STRING "0.1.0"

#ifndef GPUIRDEF
#  if defined(GPUIR_STATIC) && (defined(__GNUC__) || defined(__clang__))
#    define GPUIRDEF __attribute__((unused)) static
#  elif defined(GPUIR_STATIC)
#    define GPUIRDEF static
#  else
#    define GPUIRDEF extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits ---------------------------------------------------------- */
#define GPUIR_MAX_RANK 8      /* dims per type */
#define GPUIR_DYN (-1)        /* a dynamic dimension, printed `?` */
#define GPUIR_MAX_OPERANDS 64 /* operands of one op (return included) */
#define GPUIR_MAX_NAME 128    /* bytes in a function, parameter or global name */

/* ---- results: one row per code ----------------------------------------
   X(name, default message). Tests assert codes; messages are for people. */
#define GPUIR_RESULT_TABLE(X)                                              \
    X(OK,                   "ok")                                          \
    X(ERR_INVALID_ARGUMENT, "invalid argument")                            \
    X(ERR_OUT_OF_MEMORY,    "out of host memory")                          \
    X(ERR_LIMIT,            "size or rank limit exceeded")                 \
    X(ERR_PARSE,            "syntax error")                                \
    X(ERR_SHAPE,            "shapes do not agree")                         \
    X(ERR_DTYPE,            "element types do not agree")                  \
    X(ERR_ATTRIBUTE,        "missing or invalid attribute")                \
    X(ERR_VERIFY,           "the IR is not well formed")                   \
    X(ERR_NOT_FOUND,        "no such function or global")                  \
    X(ERR_IO,               "file input/output failed")                    \
    X(ERR_NPY,              "malformed or unsupported .npy data")          \
    X(ERR_MISMATCH,         "results differ from the expected values")

typedef enum gpuir_result {
#define GPUIR__X(name, msg) GPUIR_##name,
    GPUIR_RESULT_TABLE(GPUIR__X)
#undef GPUIR__X
    GPUIR_RESULT_COUNT
} gpuir_result;

/* ---- element types: one row per dtype ----------------------------------
   X(name, spelling, bytes, is_float) */
#define GPUIR_DTYPE_TABLE(X) \
    X(F32,  "f32",  4, 1)    \
    X(F16,  "f16",  2, 1)    \
    X(BF16, "bf16", 2, 1)    \
    X(I32,  "i32",  4, 0)    \
    X(I64,  "i64",  8, 0)

typedef enum gpuir_dtype {
    GPUIR_DTYPE_INVALID = 0,
#define GPUIR__X(name, spelling, bytes, is_float) GPUIR_##name,
    GPUIR_DTYPE_TABLE(GPUIR__X)
#undef GPUIR__X
    GPUIR_DTYPE_COUNT
} gpuir_dtype;

/* ---- ops: one row per op -----------------------------------------------
   X(name, mnemonic, class, float_only). The class says which operands and
   attributes the op takes and how its result type is inferred:
     UNARY      1 operand, same type out
     BINARY     2 operands, NumPy broadcasting, same dtype out
     MATMUL     [..,M,K] x [..,K,N] -> [..,M,N]; attrs transpose_a/_b (bool)
     REDUCE     1 operand; attrs axes = [..] (required), keepdims (bool)
     TRANSPOSE  1 operand; attr perm = [..] (required)
     RESHAPE    1 operand; the result type is given, same element count
     BROADCAST  1 operand; the result type is given, NumPy compatible
     CAST       1 operand; the result type is given, same shape
     CONSTANT   no operand; attr value = number (splat) or dense<[...]>
     GLOBAL     no operand; attr name = @symbol of a module global
     SOFTMAX    1 operand; attr axis (int, required; negative counts back)
     RETURN     any operands, no result; ends a function
   Every op from UNARY to SOFTMAX (but GLOBAL) also has a buffer form, in
   destination-passing style: memref operands, the last one the output,
   and no result (`add %a, %b, %out : (memref<..>, memref<..>, memref<..>) -> ()`).
   The buffer-level ops:
     ALLOC      no operand; a memref result of the given static type
     DEALLOC    1 memref operand, no result
     COPY       2 memrefs of one shape and dtype (memref.copy: src, dst;
                gpu.memcpy: dst, src, as in MLIR), no result
     LAUNCH     memref operands: the kernel's parameters; attrs kernel =
                @kernels::@name, grid = [x, y, z], block = [x, y, z], smem
     WAIT       no operand, no result */
#define GPUIR_OP_TABLE(X)                              \
    X(NEG,        "neg",        UNARY,     0)          \
    X(ABS,        "abs",        UNARY,     0)          \
    X(EXP,        "exp",        UNARY,     1)          \
    X(LOG,        "log",        UNARY,     1)          \
    X(SQRT,       "sqrt",       UNARY,     1)          \
    X(RSQRT,      "rsqrt",      UNARY,     1)          \
    X(TANH,       "tanh",       UNARY,     1)          \
    X(SIGMOID,    "sigmoid",    UNARY,     1)          \
    X(RELU,       "relu",       UNARY,     0)          \
    X(GELU,       "gelu",       UNARY,     1)          \
    X(SILU,       "silu",       UNARY,     1)          \
    X(ADD,        "add",        BINARY,    0)          \
    X(SUB,        "sub",        BINARY,    0)          \
    X(MUL,        "mul",        BINARY,    0)          \
    X(DIV,        "div",        BINARY,    0)          \
    X(MAX,        "max",        BINARY,    0)          \
    X(MIN,        "min",        BINARY,    0)          \
    X(POW,        "pow",        BINARY,    1)          \
    X(MATMUL,     "matmul",     MATMUL,    0)          \
    X(REDUCE_SUM, "reduce_sum", REDUCE,    0)          \
    X(REDUCE_MAX, "reduce_max", REDUCE,    0)          \
    X(REDUCE_MEAN,"reduce_mean",REDUCE,    0)          \
    X(TRANSPOSE,  "transpose",  TRANSPOSE, 0)          \
    X(RESHAPE,    "reshape",    RESHAPE,   0)          \
    X(BROADCAST,  "broadcast",  BROADCAST, 0)          \
    X(CAST,       "cast",       CAST,      0)          \
    X(CONSTANT,   "constant",   CONSTANT,  0)          \
    X(GET_GLOBAL, "get_global", GLOBAL,    0)          \
    X(SOFTMAX,    "softmax",    SOFTMAX,   1)          \
    X(RETURN,     "return",     RETURN,    0)          \
    X(MEMREF_ALLOC,      "memref.alloc",      ALLOC,   0) \
    X(MEMREF_DEALLOC,    "memref.dealloc",    DEALLOC, 0) \
    X(MEMREF_COPY,       "memref.copy",       COPY,    0) \
    X(MEMREF_GET_GLOBAL, "memref.get_global", GLOBAL,  0) \
    X(GPU_ALLOC,         "gpu.alloc",         ALLOC,   0) \
    X(GPU_DEALLOC,       "gpu.dealloc",       DEALLOC, 0) \
    X(GPU_MEMCPY,        "gpu.memcpy",        COPY,    0) \
    X(GPU_LAUNCH_FUNC,   "gpu.launch_func",   LAUNCH,  0) \
    X(GPU_WAIT,          "gpu.wait",          WAIT,    0)

typedef enum gpuir_op_kind {
    GPUIR_OP_INVALID = 0,
#define GPUIR__X(name, mnemonic, cls, float_only) GPUIR_OP_##name,
    GPUIR_OP_TABLE(GPUIR__X)
#undef GPUIR__X
    GPUIR_OP_COUNT
} gpuir_op_kind;

/* ---- types ------------------------------------------------------------- */
typedef enum gpuir_type_kind {
    GPUIR_TYPE_INVALID = 0,
    GPUIR_TYPE_TENSOR,   /* tensor<4x?xf32>: a value */
    GPUIR_TYPE_MEMREF    /* memref<4x8xf32, 3>: a buffer in memory space 3 */
} gpuir_type_kind;

/* Memory spaces of memrefs (MLIR's GPU numbering). */
#define GPUIR_SPACE_HOST 0       /* host memory */
#define GPUIR_SPACE_DEVICE 1     /* device global memory */
#define GPUIR_SPACE_WORKGROUP 3  /* shared memory, owned by a kernel */

/* A type is a plain value. dims[i] >= 0, or GPUIR_DYN for `?`. */
typedef struct gpuir_type {
    gpuir_type_kind kind;
    gpuir_dtype dtype;
    int32_t rank;
    int32_t space;                  /* memref memory space; 0 for tensors */
    int64_t dims[GPUIR_MAX_RANK];
} gpuir_type;

GPUIRDEF gpuir_type gpuir_tensor_type(gpuir_dtype dtype, int rank, const int64_t *dims);
GPUIRDEF gpuir_type gpuir_memref_type(gpuir_dtype dtype, int rank, const int64_t *dims,
                                      int space);
GPUIRDEF bool gpuir_type_equal(gpuir_type a, gpuir_type b);
/* Writes e.g. "tensor<4x?xf32>" into buf (always terminated); returns buf. */
GPUIRDEF char *gpuir_type_str(gpuir_type t, char *buf, size_t size);
GPUIRDEF const char *gpuir_dtype_name(gpuir_dtype dtype);   /* "f32"; "invalid" */
GPUIRDEF size_t gpuir_dtype_size(gpuir_dtype dtype);        /* bytes; 0 if invalid */
GPUIRDEF bool gpuir_dtype_is_float(gpuir_dtype dtype);
GPUIRDEF const char *gpuir_op_name(gpuir_op_kind kind);     /* "add"; "invalid" */
GPUIRDEF const char *gpuir_result_name(gpuir_result r);     /* "GPUIR_ERR_PARSE" */
GPUIRDEF const char *gpuir_result_string(gpuir_result r);   /* "syntax error" */

/* ---- context ----------------------------------------------------------- */
typedef struct gpuir_ctx gpuir_ctx;

/* The default configuration is:
     max_tensor_bytes   1 << 34 (16 GiB): the largest tensor, constant or
                        array the context will describe or allocate
     log, log_user      NULL: gpuir prints nothing
     max_shared_bytes   232448 (227 KiB, H100's opt-in limit): the most
                        dynamic shared memory one launch may ask for */
typedef struct gpuir_ctx_desc {
    uint64_t max_tensor_bytes;
    void (*log)(void *user, const char *message);
    void *log_user;
    uint32_t max_shared_bytes;
} gpuir_ctx_desc;

GPUIRDEF gpuir_ctx *gpuir_ctx_make(const gpuir_ctx_desc *desc);  /* NULL desc: defaults */
GPUIRDEF void gpuir_ctx_destroy(gpuir_ctx *ctx);   /* also destroys its modules */
GPUIRDEF gpuir_result gpuir_ctx_result(const gpuir_ctx *ctx);  /* the first error */
GPUIRDEF const char *gpuir_ctx_error(const gpuir_ctx *ctx);   /* its message; "" if OK */
GPUIRDEF void gpuir_ctx_clear_error(gpuir_ctx *ctx);

/* ---- modules and functions --------------------------------------------- */
typedef struct gpuir_module gpuir_module;
typedef struct gpuir_func { uint32_t id; } gpuir_func;    /* 0: invalid */
typedef struct gpuir_value { uint32_t id; } gpuir_value;  /* 0: invalid */

GPUIRDEF gpuir_module *gpuir_module_make(gpuir_ctx *ctx);
GPUIRDEF void gpuir_module_destroy(gpuir_module *m);
GPUIRDEF gpuir_ctx *gpuir_module_ctx(const gpuir_module *m);
/* Parses text (len bytes; need not be terminated). `filename` names the
   source in diagnostics ("file:line:col: error: ..."). NULL on error. */
GPUIRDEF gpuir_module *gpuir_module_parse(gpuir_ctx *ctx, const char *text, size_t len,
                                          const char *filename);
GPUIRDEF gpuir_module *gpuir_module_parse_file(gpuir_ctx *ctx, const char *path);
/* Prints the module; the string is the caller's, freed with gpuir_free. */
GPUIRDEF char *gpuir_module_print(gpuir_module *m);
GPUIRDEF gpuir_result gpuir_module_verify(gpuir_module *m);
/* What the last run of the `place` pass did for each buffer and why ("" if
   it has not run); owned by the module. */
GPUIRDEF const char *gpuir_module_placement_report(const gpuir_module *m);
/* A Graphviz graph of the host functions' buffers (host blue, device
   orange), copies (H2D, D2H) and launches; freed with gpuir_free. */
GPUIRDEF char *gpuir_module_print_dot(gpuir_module *m);
/* The kernel module of a lowered module (after `gpuir-opt --lower`) as one
   CUDA C source, as NVRTC compiles it; freed with gpuir_free. Identical IR
   gives identical text. NULL on error (a kernel codegen cannot render). */
GPUIRDEF char *gpuir_module_emit_cuda(gpuir_module *m);
GPUIRDEF void gpuir_free(void *p);

GPUIRDEF size_t gpuir_module_func_count(const gpuir_module *m);
GPUIRDEF gpuir_func gpuir_module_func_at(const gpuir_module *m, size_t index);
GPUIRDEF gpuir_func gpuir_module_find_func(const gpuir_module *m, const char *name);
GPUIRDEF const char *gpuir_func_name(const gpuir_module *m, gpuir_func f);
GPUIRDEF bool gpuir_func_is_kernel(const gpuir_module *m, gpuir_func f);  /* a gpu.func */
GPUIRDEF size_t gpuir_func_param_count(const gpuir_module *m, gpuir_func f);
GPUIRDEF gpuir_type gpuir_func_param_type(const gpuir_module *m, gpuir_func f, size_t i);
GPUIRDEF size_t gpuir_func_result_count(const gpuir_module *m, gpuir_func f);
GPUIRDEF gpuir_type gpuir_func_result_type(const gpuir_module *m, gpuir_func f, size_t i);
GPUIRDEF gpuir_type gpuir_value_type(const gpuir_module *m, gpuir_value v);
GPUIRDEF size_t gpuir_module_global_count(const gpuir_module *m);
GPUIRDEF const char *gpuir_module_global_name(const gpuir_module *m, size_t index); /* "" if none */
GPUIRDEF gpuir_type gpuir_module_global_type(const gpuir_module *m, size_t index);
GPUIRDEF bool gpuir_module_global_bound(const gpuir_module *m, size_t index);

/* ---- builder -------------------------------------------------------------
   A function is built between gpuir_func_begin and gpuir_func_return; ops
   go into the open function. Each call infers the result type and checks
   its operands; on failure it records the error and returns id 0. */
GPUIRDEF gpuir_func gpuir_func_begin(gpuir_module *m, const char *name);
GPUIRDEF gpuir_value gpuir_param(gpuir_module *m, const char *name, gpuir_type type);
GPUIRDEF gpuir_result gpuir_func_return(gpuir_module *m, size_t n, const gpuir_value *results);

GPUIRDEF gpuir_value gpuir_unary(gpuir_module *m, gpuir_op_kind kind, gpuir_value x);
GPUIRDEF gpuir_value gpuir_binary(gpuir_module *m, gpuir_op_kind kind, gpuir_value a,
                                  gpuir_value b);
GPUIRDEF gpuir_value gpuir_neg(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_abs(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_exp(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_log(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_sqrt(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_rsqrt(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_tanh(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_sigmoid(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_relu(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_gelu(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_silu(gpuir_module *m, gpuir_value x);
GPUIRDEF gpuir_value gpuir_add(gpuir_module *m, gpuir_value a, gpuir_value b);
GPUIRDEF gpuir_value gpuir_sub(gpuir_module *m, gpuir_value a, gpuir_value b);
GPUIRDEF gpuir_value gpuir_mul(gpuir_module *m, gpuir_value a, gpuir_value b);
GPUIRDEF gpuir_value gpuir_div(gpuir_module *m, gpuir_value a, gpuir_value b);
GPUIRDEF gpuir_value gpuir_max(gpuir_module *m, gpuir_value a, gpuir_value b);
GPUIRDEF gpuir_value gpuir_min(gpuir_module *m, gpuir_value a, gpuir_value b);
GPUIRDEF gpuir_value gpuir_pow(gpuir_module *m, gpuir_value a, gpuir_value b);

#define GPUIR_TRANSPOSE_A 1u
#define GPUIR_TRANSPOSE_B 2u
/* a: [..., M, K] (or [..., K, M] with GPUIR_TRANSPOSE_A), b: [..., K, N]
   (or [..., N, K]); batch dims broadcast. The result has the input dtype;
   the reference interpreter accumulates in double (ints in 64 bits). */
GPUIRDEF gpuir_value gpuir_matmul(gpuir_module *m, gpuir_value a, gpuir_value b,
                                  unsigned flags);
/* kind: GPUIR_OP_REDUCE_SUM, _MAX or _MEAN; axes may be negative. */
GPUIRDEF gpuir_value gpuir_reduce(gpuir_module *m, gpuir_op_kind kind, gpuir_value x,
                                  size_t n_axes, const int64_t *axes, bool keepdims);
GPUIRDEF gpuir_value gpuir_transpose(gpuir_module *m, gpuir_value x, size_t n,
                                     const int64_t *perm);
GPUIRDEF gpuir_value gpuir_reshape(gpuir_module *m, gpuir_value x, int rank,
                                   const int64_t *dims);
GPUIRDEF gpuir_value gpuir_broadcast(gpuir_module *m, gpuir_value x, int rank,
                                     const int64_t *dims);
GPUIRDEF gpuir_value gpuir_cast(gpuir_module *m, gpuir_value x, gpuir_dtype dtype);
GPUIRDEF gpuir_value gpuir_softmax(gpuir_module *m, gpuir_value x, int64_t axis);
/* Every element equal to `value` (rounded to the dtype; integral for ints). */
GPUIRDEF gpuir_value gpuir_constant_splat(gpuir_module *m, gpuir_type type, double value);
/* Elements in row-major order, in the dtype's host format (f16/bf16 as
   uint16_t bits); the count comes from the static type. */
GPUIRDEF gpuir_value gpuir_constant_dense(gpuir_module *m, gpuir_type type, const void *data);
/* Declares module global `name` (or finds it; the types must agree) and
   reads it. The host binds its data with gpuir_module_bind_global. */
GPUIRDEF gpuir_value gpuir_global(gpuir_module *m, const char *name, gpuir_type type);

/* ---- host arrays -------------------------------------------------------- */
/* A dense row-major host array; `data` is malloc'd by gpuir when gpuir
   fills an array, and freed with gpuir_array_release. */
typedef struct gpuir_array {
    gpuir_dtype dtype;
    int32_t rank;
    int64_t dims[GPUIR_MAX_RANK];
    void *data;
} gpuir_array;

GPUIRDEF gpuir_result gpuir_array_alloc(gpuir_ctx *ctx, gpuir_array *a, gpuir_dtype dtype,
                                        int rank, const int64_t *dims);   /* zeroed */
GPUIRDEF void gpuir_array_release(gpuir_array *a);
GPUIRDEF size_t gpuir_array_count(const gpuir_array *a);   /* elements */
GPUIRDEF double gpuir_array_get(const gpuir_array *a, size_t i);
GPUIRDEF void gpuir_array_set(gpuir_array *a, size_t i, double v);  /* rounds to dtype */
/* Deterministic pseudo-random values: floats in [-1, 1), ints in [-16, 16]. */
GPUIRDEF void gpuir_array_fill_random(gpuir_array *a, uint64_t seed);
/* The documented tolerance of a dtype (README, "Tolerances"). */
GPUIRDEF void gpuir_dtype_tolerance(gpuir_dtype dtype, double *rtol, double *atol);
/* GPUIR_OK if shapes and dtypes agree and every element satisfies
   |got - want| <= atol + rtol * |want| (NaN matches NaN; ints exact);
   otherwise GPUIR_ERR_MISMATCH naming the first differing element. */
GPUIRDEF gpuir_result gpuir_array_compare(gpuir_ctx *ctx, const gpuir_array *got,
                                          const gpuir_array *want, double rtol, double atol);

/* f16 and bf16 bits <-> float, rounding to nearest even. */
GPUIRDEF uint16_t gpuir_f32_to_f16(float x);
GPUIRDEF float gpuir_f16_to_f32(uint16_t h);
GPUIRDEF uint16_t gpuir_f32_to_bf16(float x);
GPUIRDEF float gpuir_bf16_to_f32(uint16_t h);

/* ---- reference interpreter ---------------------------------------------- */
/* Copies `value` as the data of module global `name`. */
GPUIRDEF gpuir_result gpuir_module_bind_global(gpuir_module *m, const char *name,
                                               const gpuir_array *value);
/* Runs function `func` on the CPU. outputs[0..n_outputs) receive newly
   allocated arrays (release each with gpuir_array_release). */
GPUIRDEF gpuir_result gpuir_ref_run(gpuir_module *m, const char *func, size_t n_inputs,
                                    const gpuir_array *inputs, size_t n_outputs,
                                    gpuir_array *outputs);

/* ---- passes --------------------------------------------------------------
   A pipeline is a comma-separated list of pass names ("canonicalize,
   decompose"); gpuir_pass_count/_name/_summary list them. The module is
   verified after every pass; the first failure stops the pipeline with the
   pass name in the error.
   The default configuration is:
     print_ir_before, print_ir_after   NULL: no dumps ("*": every pass)
     timing                            false: no per-pass CPU times
     disable_verify                    false: verify after every pass
     print, print_user                 NULL: dumps and times go to stderr */
typedef struct gpuir_pass_desc {
    const char *print_ir_before;
    const char *print_ir_after;
    bool timing;
    bool disable_verify;
    void (*print)(void *user, const char *text);
    void *print_user;
} gpuir_pass_desc;

GPUIRDEF gpuir_result gpuir_module_run_passes(gpuir_module *m, const char *pipeline,
                                              const gpuir_pass_desc *desc);
GPUIRDEF size_t gpuir_pass_count(void);
GPUIRDEF const char *gpuir_pass_name(size_t index);     /* NULL past the end */
GPUIRDEF const char *gpuir_pass_summary(size_t index);

/* ---- .npy files (f32, f16, i32, i64; C order; little-endian) ----------- */
GPUIRDEF gpuir_result gpuir_npy_read(gpuir_ctx *ctx, const char *path, gpuir_array *out);
GPUIRDEF gpuir_result gpuir_npy_load(gpuir_ctx *ctx, const void *bytes, size_t size,
                                     gpuir_array *out);
GPUIRDEF gpuir_result gpuir_npy_write(gpuir_ctx *ctx, const char *path, const gpuir_array *a);

#ifdef __cplusplus
}
#endif
#endif /* GPUIR_H_INCLUDED */

/* ====================================================================== */
/* Implementation                                                         */
/* ====================================================================== */
#ifdef GPUIR_IMPLEMENTATION
#ifndef GPUIR_IMPLEMENTATION_DONE
#define GPUIR_IMPLEMENTATION_DONE

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GPUIR_STB_DS_IMPLEMENTATION
#  define STB_DS_IMPLEMENTATION
#endif
#ifndef STBDS_NO_SHORT_NAMES
#  define STBDS_NO_SHORT_NAMES
#endif
#include <stb_ds.h>

#ifndef GPUIR_ASSERT
#  include <assert.h>
#  define GPUIR_ASSERT(c) assert(c)
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define GPUIR__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define GPUIR__PRINTF(f, a)
#endif

/* ====================================================================== */
// >>util
// Errors, growable strings, checked size arithmetic, f16/bf16 rounding.
// Reads: nothing. Writes: the context's error slot. Every section uses it.

struct gpuir_ctx {
    gpuir_ctx_desc desc;       /* defaults filled in */
    gpuir_result result;       /* the first error, sticky */
    char *message;             /* its message (stb_ds char array, terminated) */
    gpuir_module **modules;    /* stb_ds array: live modules, destroyed with ctx */
    const char *loc_file;      /* set while a source location is current */
    uint32_t loc_line, loc_col;
    char loc_note[192];        /* else a prefix such as "in @f, op 3 (add)" */
};

/* A growable string: stb_ds char array, always terminated when non-empty. */
typedef struct gpuir__str { char *buf; } gpuir__str;

static void gpuir__str_vappend(gpuir__str *s, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    size_t len = stbds_arrlenu(s->buf);
    if (len > 0) len--;                         /* overwrite the terminator */
    stbds_arrsetlen(s->buf, len + (size_t)n + 1);
    vsnprintf(s->buf + len, (size_t)n + 1, fmt, ap);
}

static void gpuir__str_appendf(gpuir__str *s, const char *fmt, ...) GPUIR__PRINTF(2, 3);
static void gpuir__str_appendf(gpuir__str *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gpuir__str_vappend(s, fmt, ap);
    va_end(ap);
}

static const char *gpuir__str_cstr(const gpuir__str *s) { return s->buf ? s->buf : ""; }
static void gpuir__str_free(gpuir__str *s) { stbds_arrfree(s->buf); s->buf = NULL; }

/* Hands the text to the caller as a plain malloc'd string. */
static char *gpuir__str_detach(gpuir__str *s) {
    const char *src = gpuir__str_cstr(s);
    size_t n = strlen(src);
    char *out = (char *)malloc(n + 1);
    if (out) memcpy(out, src, n + 1);
    gpuir__str_free(s);
    return out;
}

static const char *const gpuir__result_names[] = {
#define GPUIR__X(name, msg) "GPUIR_" #name,
    GPUIR_RESULT_TABLE(GPUIR__X)
#undef GPUIR__X
};

static const char *const gpuir__result_messages[] = {
#define GPUIR__X(name, msg) msg,
    GPUIR_RESULT_TABLE(GPUIR__X)
#undef GPUIR__X
};

/* Records the first error of the context, prefixed with the current source
   location if there is one, and returns `code` (so callers can return it). */
static gpuir_result gpuir__fail(gpuir_ctx *ctx, gpuir_result code, const char *fmt, ...)
    GPUIR__PRINTF(3, 4);
static gpuir_result gpuir__fail(gpuir_ctx *ctx, gpuir_result code, const char *fmt, ...) {
    GPUIR_ASSERT(code != GPUIR_OK);
    if (ctx->result != GPUIR_OK) return code;
    gpuir__str s = {NULL};
    if (ctx->loc_file && ctx->loc_line)
        gpuir__str_appendf(&s, "%s:%u:%u: error: ", ctx->loc_file, ctx->loc_line, ctx->loc_col);
    else if (ctx->loc_note[0])
        gpuir__str_appendf(&s, "%s: ", ctx->loc_note);
    va_list ap;
    va_start(ap, fmt);
    gpuir__str_vappend(&s, fmt, ap);
    va_end(ap);
    ctx->result = code;
    stbds_arrfree(ctx->message);
    ctx->message = s.buf;
    if (ctx->desc.log) ctx->desc.log(ctx->desc.log_user, gpuir__str_cstr(&s));
    return code;
}

static gpuir_result gpuir__oom(gpuir_ctx *ctx, const char *what) {
    return gpuir__fail(ctx, GPUIR_ERR_OUT_OF_MEMORY, "out of host memory: %s", what);
}

/* Checked arithmetic on sizes: false on overflow or negative operands. */
static bool gpuir__mul_i64(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return false;
    if (a != 0 && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
}

static bool gpuir__is_ident_start(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool gpuir__is_ident_char(int c) {
    return gpuir__is_ident_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '$';
}

/* Names of functions, parameters and globals: [A-Za-z_][A-Za-z0-9_.$]*. */
static bool gpuir__valid_name(const char *name) {
    if (!name || !gpuir__is_ident_start((unsigned char)name[0])) return false;
    size_t n = 1;
    for (; name[n]; n++)
        if (!gpuir__is_ident_char((unsigned char)name[n])) return false;
    return n < GPUIR_MAX_NAME;
}

/* Rounds a double to a small float format (ebits exponent, mbits mantissa
   bits) with round-to-nearest-even; subnormals, overflow to inf, and NaN
   (made quiet, sign kept) included. Rounding from double directly avoids
   the double rounding of going through float. */
static uint16_t gpuir__round_small_float(double x, int ebits, int mbits) {
    uint32_t sign = signbit(x) ? 1u << (ebits + mbits) : 0u;
    uint32_t exp_all_ones = (1u << ebits) - 1u;
    int bias = (1 << (ebits - 1)) - 1;
    if (isnan(x)) return (uint16_t)(sign | exp_all_ones << mbits | 1u << (mbits - 1));
    x = fabs(x);
    if (isinf(x)) return (uint16_t)(sign | exp_all_ones << mbits);
    if (x == 0.0) return (uint16_t)sign;
    int e;
    (void)frexp(x, &e);
    int unbiased = e - 1;
    if (unbiased < 1 - bias) unbiased = 1 - bias;            /* subnormal range */
    if (unbiased > bias + 1) return (uint16_t)(sign | exp_all_ones << mbits);
    double q = rint(ldexp(x, mbits - unbiased));   /* exact scaling, then RNE */
    uint32_t mant = (uint32_t)q;
    if (mant >= 1u << (mbits + 1)) { mant >>= 1; unbiased++; }
    if (mant < 1u << mbits) return (uint16_t)(sign | mant);   /* subnormal */
    uint32_t field = (uint32_t)(unbiased + bias);
    if (field >= exp_all_ones) return (uint16_t)(sign | exp_all_ones << mbits);
    return (uint16_t)(sign | field << mbits | (mant & ((1u << mbits) - 1u)));
}

static double gpuir__expand_small_float(uint16_t h, int ebits, int mbits) {
    uint32_t mant = h & ((1u << mbits) - 1u);
    uint32_t field = (uint32_t)(h >> mbits) & ((1u << ebits) - 1u);
    int bias = (1 << (ebits - 1)) - 1;
    double sign = (h >> (ebits + mbits)) & 1u ? -1.0 : 1.0;
    if (field == (1u << ebits) - 1u) return mant ? copysign((double)NAN, sign) : sign * (double)INFINITY;
    if (field == 0) return sign * ldexp((double)mant, 1 - bias - mbits);
    return sign * ldexp((double)(mant | 1u << mbits), (int)field - bias - mbits);
}

/* An int64 as a double rounded to odd: exact below 2^53, and beyond it a
   value that rounds to any format of 51 or fewer significant bits exactly as
   v itself would, so converting it on rounds only once. */
static double gpuir__i64_to_f64_odd(int64_t v) {
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int shift = 0;
    while ((u >> shift) >= ((uint64_t)1 << 53)) shift++;
    uint64_t kept = u >> shift;
    if (shift && (u & (((uint64_t)1 << shift) - 1))) kept |= 1;
    double d = ldexp((double)kept, shift);
    return v < 0 ? -d : d;
}

static uint16_t gpuir__f64_to_f16(double x) { return gpuir__round_small_float(x, 5, 10); }
static uint16_t gpuir__f64_to_bf16(double x) { return gpuir__round_small_float(x, 8, 7); }
static double gpuir__f16_to_f64(uint16_t h) { return gpuir__expand_small_float(h, 5, 10); }
static double gpuir__bf16_to_f64(uint16_t h) { return gpuir__expand_small_float(h, 8, 7); }

GPUIRDEF uint16_t gpuir_f32_to_f16(float x) { return gpuir__f64_to_f16(x); }
GPUIRDEF float gpuir_f16_to_f32(uint16_t h) { return (float)gpuir__f16_to_f64(h); }
GPUIRDEF uint16_t gpuir_f32_to_bf16(float x) { return gpuir__f64_to_bf16(x); }
GPUIRDEF float gpuir_bf16_to_f32(uint16_t h) { return (float)gpuir__bf16_to_f64(h); }

GPUIRDEF const char *gpuir_result_name(gpuir_result r) {
    if ((int)r < 0 || r >= GPUIR_RESULT_COUNT) return "GPUIR_(unknown)";
    return gpuir__result_names[r];
}

GPUIRDEF const char *gpuir_result_string(gpuir_result r) {
    if ((int)r < 0 || r >= GPUIR_RESULT_COUNT) return "unknown result";
    return gpuir__result_messages[r];
}

GPUIRDEF gpuir_ctx *gpuir_ctx_make(const gpuir_ctx_desc *desc) {
    gpuir_ctx *ctx = (gpuir_ctx *)calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    if (desc) ctx->desc = *desc;
    if (ctx->desc.max_tensor_bytes == 0) ctx->desc.max_tensor_bytes = (uint64_t)1 << 34;
    if (ctx->desc.max_shared_bytes == 0) ctx->desc.max_shared_bytes = 232448;
    return ctx;
}

GPUIRDEF gpuir_result gpuir_ctx_result(const gpuir_ctx *ctx) { return ctx->result; }

GPUIRDEF const char *gpuir_ctx_error(const gpuir_ctx *ctx) {
    return ctx->message ? ctx->message : "";
}

GPUIRDEF void gpuir_ctx_clear_error(gpuir_ctx *ctx) {
    ctx->result = GPUIR_OK;
    stbds_arrfree(ctx->message);
    ctx->message = NULL;
}

GPUIRDEF void gpuir_free(void *p) { free(p); }

/* ====================================================================== */
// >>ir
// Types, values, ops, functions and modules, and the facts of the op table.
// Reads: util. Writes: modules. Everything is an id (index + 1) into a
// module array; never keep a pointer into one across a call that may grow it.

typedef enum gpuir__op_class {
    GPUIR__CLASS_UNARY, GPUIR__CLASS_BINARY, GPUIR__CLASS_MATMUL, GPUIR__CLASS_REDUCE,
    GPUIR__CLASS_TRANSPOSE, GPUIR__CLASS_RESHAPE, GPUIR__CLASS_BROADCAST, GPUIR__CLASS_CAST,
    GPUIR__CLASS_CONSTANT, GPUIR__CLASS_GLOBAL, GPUIR__CLASS_SOFTMAX, GPUIR__CLASS_RETURN,
    GPUIR__CLASS_ALLOC, GPUIR__CLASS_DEALLOC, GPUIR__CLASS_COPY, GPUIR__CLASS_LAUNCH,
    GPUIR__CLASS_WAIT
} gpuir__op_class;

/* Whether ops of a class compute values (and so have a buffer form). */
static bool gpuir__class_computes(gpuir__op_class c) {
    return c <= GPUIR__CLASS_SOFTMAX && c != GPUIR__CLASS_GLOBAL;
}

/* Whether an op of this class, as written, defines a value by default. */
static bool gpuir__class_has_result(gpuir__op_class c) {
    return c != GPUIR__CLASS_RETURN && c != GPUIR__CLASS_DEALLOC && c != GPUIR__CLASS_COPY &&
           c != GPUIR__CLASS_LAUNCH && c != GPUIR__CLASS_WAIT;
}

typedef struct gpuir__op_info {
    const char *mnemonic;
    gpuir__op_class cls;
    bool float_only;
} gpuir__op_info;

static const gpuir__op_info gpuir__op_infos[] = {
    {"invalid", GPUIR__CLASS_RETURN, false},
#define GPUIR__X(name, mnemonic, cls, float_only) {mnemonic, GPUIR__CLASS_##cls, float_only != 0},
    GPUIR_OP_TABLE(GPUIR__X)
#undef GPUIR__X
};

typedef struct gpuir__dtype_info { const char *name; size_t size; bool is_float; } gpuir__dtype_info;

static const gpuir__dtype_info gpuir__dtype_infos[] = {
    {"invalid", 0, false},
#define GPUIR__X(name, spelling, bytes, is_float) {spelling, bytes, is_float != 0},
    GPUIR_DTYPE_TABLE(GPUIR__X)
#undef GPUIR__X
};

/* Attribute values. Payloads of INTS live in module->ints, of STRING and
   SYMBOL in module->strings, of DENSE (raw elements of `dtype`) in
   module->bytes. */
typedef enum gpuir__attr_kind {
    GPUIR__ATTR_INT, GPUIR__ATTR_FLOAT, GPUIR__ATTR_BOOL, GPUIR__ATTR_STRING,
    GPUIR__ATTR_SYMBOL, GPUIR__ATTR_INTS, GPUIR__ATTR_DENSE
} gpuir__attr_kind;

typedef struct gpuir__attr {
    uint32_t name;          /* offset in module->strings */
    gpuir__attr_kind kind;
    int64_t i;              /* INT, BOOL; the dtype of DENSE */
    double f;               /* FLOAT */
    uint32_t off;           /* payload offset (ints, strings or bytes) */
    uint32_t n;             /* payload count: ints, or elements of DENSE */
} gpuir__attr;

typedef struct gpuir__op {
    gpuir_op_kind kind;
    uint32_t func;            /* owning function id */
    uint32_t operands;        /* first index in module->uses */
    uint32_t n_operands;
    uint32_t result;          /* result value id, 0 if none */
    uint32_t attrs;           /* first index in module->attrs */
    uint32_t n_attrs;
    uint32_t line, col;       /* source location; 0 when built through the API */
} gpuir__op;

typedef struct gpuir__value {
    gpuir_type type;
    uint32_t func;            /* owning function id */
    uint32_t def_op;          /* defining op id; 0 for a parameter */
    uint32_t name;            /* parameter name (module->strings); 0 for results */
} gpuir__value;

typedef struct gpuir__func {
    uint32_t name;            /* module->strings */
    uint32_t *params;         /* stb_ds array of value ids */
    uint32_t *ops;            /* stb_ds array of op ids, in order; return last */
    bool closed;              /* has its return op */
    bool kernel;              /* a gpu.func in the kernel module */
    uint32_t line, col;
} gpuir__func;

typedef struct gpuir__global {
    uint32_t name;            /* module->strings */
    gpuir_type type;
    void *data;               /* bound host data (malloc'd), NULL until bound */
} gpuir__global;

typedef struct gpuir__func_entry { char *key; uint32_t value; } gpuir__func_entry;

struct gpuir_module {
    gpuir_ctx *ctx;
    gpuir__func *funcs;       /* stb_ds arrays; an id is index + 1 */
    gpuir__op *ops;
    gpuir__value *values;
    gpuir__global *globals;
    gpuir__attr *attrs;       /* pools */
    uint32_t *uses;
    int64_t *ints;
    char *strings;            /* offset 0 holds "" */
    unsigned char *bytes;
    uint32_t building;        /* the open function's id, 0 if none */
    gpuir__func_entry *func_index;  /* stb_ds string map: function name -> id */
    char *placement_report;   /* stb_ds string: what place did and why */
    bool rewriting;           /* a pass is rebuilding `building`: new ops go to */
    uint32_t *rewrite_ops;    /*   this stb_ds list, which replaces its op list */
    const char *source_name;  /* for diagnostics of parsed modules */
    char *source_name_owned;
};

static const gpuir__op_info *gpuir__info(gpuir_op_kind k) {
    return &gpuir__op_infos[(int)k > 0 && k < GPUIR_OP_COUNT ? k : 0];
}
static bool gpuir__dtype_valid(gpuir_dtype d) { return (int)d > 0 && d < GPUIR_DTYPE_COUNT; }

GPUIRDEF const char *gpuir_op_name(gpuir_op_kind k) { return gpuir__info(k)->mnemonic; }
GPUIRDEF const char *gpuir_dtype_name(gpuir_dtype d) {
    return gpuir__dtype_infos[gpuir__dtype_valid(d) ? d : 0].name;
}
GPUIRDEF size_t gpuir_dtype_size(gpuir_dtype d) {
    return gpuir__dtype_infos[gpuir__dtype_valid(d) ? d : 0].size;
}
GPUIRDEF bool gpuir_dtype_is_float(gpuir_dtype d) {
    return gpuir__dtype_infos[gpuir__dtype_valid(d) ? d : 0].is_float;
}

/* ---- types ---- */

static gpuir_type gpuir__type_make(gpuir_type_kind kind, gpuir_dtype dtype, int rank,
                                   const int64_t *dims, int space) {
    gpuir_type t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.dtype = dtype;
    t.rank = rank;
    t.space = space;
    for (int i = 0; i < rank && i < GPUIR_MAX_RANK; i++) t.dims[i] = dims ? dims[i] : 0;
    return t;
}

GPUIRDEF gpuir_type gpuir_tensor_type(gpuir_dtype dtype, int rank, const int64_t *dims) {
    return gpuir__type_make(GPUIR_TYPE_TENSOR, dtype, rank, dims, 0);
}

GPUIRDEF gpuir_type gpuir_memref_type(gpuir_dtype dtype, int rank, const int64_t *dims,
                                      int space) {
    return gpuir__type_make(GPUIR_TYPE_MEMREF, dtype, rank, dims, space);
}

GPUIRDEF bool gpuir_type_equal(gpuir_type a, gpuir_type b) {
    if (a.kind != b.kind || a.dtype != b.dtype || a.rank != b.rank || a.space != b.space)
        return false;
    for (int i = 0; i < a.rank && i < GPUIR_MAX_RANK; i++)
        if (a.dims[i] != b.dims[i]) return false;
    return true;
}

static bool gpuir__type_is_static(const gpuir_type *t) {
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] == GPUIR_DYN) return false;
    return true;
}

GPUIRDEF char *gpuir_type_str(gpuir_type t, char *buf, size_t size) {
    if (!buf || size == 0) return buf;
    gpuir__str s = {NULL};
    if (t.kind != GPUIR_TYPE_TENSOR && t.kind != GPUIR_TYPE_MEMREF) {
        gpuir__str_appendf(&s, "<invalid type>");
    } else {
        gpuir__str_appendf(&s, "%s<", t.kind == GPUIR_TYPE_TENSOR ? "tensor" : "memref");
        for (int i = 0; i < t.rank && i < GPUIR_MAX_RANK; i++) {
            if (t.dims[i] == GPUIR_DYN) gpuir__str_appendf(&s, "?x");
            else gpuir__str_appendf(&s, "%lldx", (long long)t.dims[i]);
        }
        gpuir__str_appendf(&s, "%s", gpuir_dtype_name(t.dtype));
        if (t.kind == GPUIR_TYPE_MEMREF && t.space != 0) gpuir__str_appendf(&s, ", %d", (int)t.space);
        gpuir__str_appendf(&s, ">");
    }
    snprintf(buf, size, "%s", gpuir__str_cstr(&s));
    gpuir__str_free(&s);
    return buf;
}

/* A type as text in a caller-owned buffer, for messages. */
typedef struct gpuir__tbuf { char s[160]; } gpuir__tbuf;
static const char *gpuir__tstr(gpuir__tbuf *b, const gpuir_type *t) {
    return gpuir_type_str(*t, b->s, sizeof b->s);
}

/* Static element count; -1 if a dim is dynamic, -2 on overflow. */
static int64_t gpuir__type_count(const gpuir_type *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] == GPUIR_DYN) return -1;
        if (!gpuir__mul_i64(n, t->dims[i], &n)) return -2;
    }
    return n;
}

/* Checks a type against the context's limits: a known kind and dtype, rank
   0..GPUIR_MAX_RANK, dims >= 0 or `?`, and a static size that fits. */
static gpuir_result gpuir__type_check(gpuir_ctx *ctx, const gpuir_type *t, const char *what) {
    if (t->kind != GPUIR_TYPE_TENSOR && t->kind != GPUIR_TYPE_MEMREF)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: invalid type kind %d", what, (int)t->kind);
    if (!gpuir__dtype_valid(t->dtype))
        return gpuir__fail(ctx, GPUIR_ERR_DTYPE, "%s: invalid element type %d", what, (int)t->dtype);
    if (t->rank < 0 || t->rank > GPUIR_MAX_RANK)
        return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "%s: rank %d is outside 0..%d", what,
                           (int)t->rank, GPUIR_MAX_RANK);
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] < 0 && t->dims[i] != GPUIR_DYN)
            return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "%s: dimension %d is %lld; dims are >= 0 or ?",
                               what, i, (long long)t->dims[i]);
    int64_t count = 1, bytes;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] == GPUIR_DYN) continue;
        if (!gpuir__mul_i64(count, t->dims[i], &count))
            return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "%s: the element count overflows 2^63", what);
    }
    if (!gpuir__mul_i64(count, (int64_t)gpuir_dtype_size(t->dtype), &bytes) ||
        (uint64_t)bytes > ctx->desc.max_tensor_bytes) {
        gpuir__tbuf b;
        return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "%s: %s is larger than the limit of %llu bytes",
                           what, gpuir__tstr(&b, t), (unsigned long long)ctx->desc.max_tensor_bytes);
    }
    if (t->kind == GPUIR_TYPE_TENSOR && t->space != 0)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: a tensor has no memory space", what);
    if (t->space < 0 || t->space > 15)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: memory space %d is outside 0..15",
                           what, (int)t->space);
    return GPUIR_OK;
}

/* ---- module storage ---- */

static gpuir__func *gpuir__func_at(const gpuir_module *m, uint32_t id) {
    return id && id <= stbds_arrlenu(m->funcs) ? &m->funcs[id - 1] : NULL;
}
static gpuir__op *gpuir__op_at(const gpuir_module *m, uint32_t id) {
    return id && id <= stbds_arrlenu(m->ops) ? &m->ops[id - 1] : NULL;
}
static gpuir__value *gpuir__value_at(const gpuir_module *m, uint32_t id) {
    return id && id <= stbds_arrlenu(m->values) ? &m->values[id - 1] : NULL;
}
static const char *gpuir__string(const gpuir_module *m, uint32_t off) {
    return m->strings ? m->strings + off : "";
}
static uint32_t gpuir__op_operand(const gpuir_module *m, const gpuir__op *op, uint32_t i) {
    return m->uses[op->operands + i];
}

/* Payload pointers into the pools (NULL while a pool is still empty). */
static int64_t *gpuir__ints_at(const gpuir_module *m, uint32_t off) {
    return m->ints ? m->ints + off : NULL;
}
static unsigned char *gpuir__bytes_at(const gpuir_module *m, uint32_t off) {
    return m->bytes ? m->bytes + off : NULL;
}

/* Appends a string to the pool; returns its offset. */
static uint32_t gpuir__intern(gpuir_module *m, const char *s, size_t n) {
    uint32_t off = (uint32_t)stbds_arrlenu(m->strings);
    for (size_t i = 0; i < n; i++) stbds_arrput(m->strings, s[i]);
    stbds_arrput(m->strings, '\0');
    return off;
}

static gpuir_value gpuir__value_handle(uint32_t id) { gpuir_value v; v.id = id; return v; }
static gpuir_func gpuir__func_handle(uint32_t id) { gpuir_func f; f.id = id; return f; }

static uint32_t gpuir__find_func(const gpuir_module *m, const char *name) {
    gpuir__func_entry *index = m->func_index;   /* a lookup only reads the map */
    ptrdiff_t i = index ? stbds_shgeti(index, name) : -1;
    return i >= 0 ? index[i].value : 0;
}

static uint32_t gpuir__find_global(const gpuir_module *m, const char *name) {
    for (size_t i = 0; i < stbds_arrlenu(m->globals); i++)
        if (strcmp(gpuir__string(m, m->globals[i].name), name) == 0) return (uint32_t)i + 1;
    return 0;
}

static const gpuir__attr *gpuir__attr_find(const gpuir_module *m, const gpuir__op *op,
                                           const char *name) {
    for (uint32_t i = 0; i < op->n_attrs; i++) {
        const gpuir__attr *a = &m->attrs[op->attrs + i];
        if (strcmp(gpuir__string(m, a->name), name) == 0) return a;
    }
    return NULL;
}

/* A bool attribute of an op; false when absent (kinds are verified). */
static bool gpuir__op_flag(const gpuir_module *m, const gpuir__op *op, const char *name) {
    const gpuir__attr *a = gpuir__attr_find(m, op, name);
    return a && a->kind == GPUIR__ATTR_BOOL && a->i;
}

/* The last op of a function, if it is its return. */
static const gpuir__op *gpuir__func_return_op(const gpuir_module *m, const gpuir__func *f) {
    size_t n = stbds_arrlenu(f->ops);
    const gpuir__op *op = n ? gpuir__op_at(m, f->ops[n - 1]) : NULL;
    return op && op->kind == GPUIR_OP_RETURN ? op : NULL;
}

GPUIRDEF gpuir_module *gpuir_module_make(gpuir_ctx *ctx) {
    GPUIR_ASSERT(ctx);
    if (ctx->result != GPUIR_OK) return NULL;
    gpuir_module *m = (gpuir_module *)calloc(1, sizeof *m);
    if (!m) { gpuir__oom(ctx, "module"); return NULL; }
    m->ctx = ctx;
    stbds_arrput(m->strings, '\0');
    stbds_sh_new_strdup(m->func_index);
    stbds_arrput(ctx->modules, m);
    return m;
}

static void gpuir__module_free(gpuir_module *m) {
    for (size_t i = 0; i < stbds_arrlenu(m->funcs); i++) {
        stbds_arrfree(m->funcs[i].params);
        stbds_arrfree(m->funcs[i].ops);
    }
    for (size_t i = 0; i < stbds_arrlenu(m->globals); i++) free(m->globals[i].data);
    stbds_arrfree(m->funcs);
    stbds_arrfree(m->ops);
    stbds_arrfree(m->values);
    stbds_arrfree(m->globals);
    stbds_arrfree(m->attrs);
    stbds_arrfree(m->uses);
    stbds_arrfree(m->ints);
    stbds_arrfree(m->strings);
    stbds_arrfree(m->bytes);
    stbds_arrfree(m->rewrite_ops);
    stbds_arrfree(m->placement_report);
    stbds_shfree(m->func_index);
    free(m->source_name_owned);
    free(m);
}

GPUIRDEF void gpuir_module_destroy(gpuir_module *m) {
    if (!m) return;
    gpuir_ctx *ctx = m->ctx;
    for (size_t i = 0; i < stbds_arrlenu(ctx->modules); i++)
        if (ctx->modules[i] == m) { stbds_arrdel(ctx->modules, i); break; }
    gpuir__module_free(m);
}

GPUIRDEF void gpuir_ctx_destroy(gpuir_ctx *ctx) {
    if (!ctx) return;
    for (size_t i = 0; i < stbds_arrlenu(ctx->modules); i++) gpuir__module_free(ctx->modules[i]);
    stbds_arrfree(ctx->modules);
    stbds_arrfree(ctx->message);
    free(ctx);
}

GPUIRDEF gpuir_ctx *gpuir_module_ctx(const gpuir_module *m) { return m->ctx; }

/* ---- introspection ---- */

GPUIRDEF size_t gpuir_module_func_count(const gpuir_module *m) { return stbds_arrlenu(m->funcs); }

GPUIRDEF gpuir_func gpuir_module_func_at(const gpuir_module *m, size_t index) {
    return gpuir__func_handle(index < stbds_arrlenu(m->funcs) ? (uint32_t)index + 1 : 0);
}

GPUIRDEF gpuir_func gpuir_module_find_func(const gpuir_module *m, const char *name) {
    return gpuir__func_handle(name ? gpuir__find_func(m, name) : 0);
}

GPUIRDEF const char *gpuir_func_name(const gpuir_module *m, gpuir_func f) {
    const gpuir__func *fn = gpuir__func_at(m, f.id);
    return fn ? gpuir__string(m, fn->name) : "";
}

GPUIRDEF bool gpuir_func_is_kernel(const gpuir_module *m, gpuir_func f) {
    const gpuir__func *fn = gpuir__func_at(m, f.id);
    return fn && fn->kernel;
}

GPUIRDEF size_t gpuir_func_param_count(const gpuir_module *m, gpuir_func f) {
    const gpuir__func *fn = gpuir__func_at(m, f.id);
    return fn ? stbds_arrlenu(fn->params) : 0;
}

static gpuir_type gpuir__invalid_type(void) {
    gpuir_type t;
    memset(&t, 0, sizeof t);
    return t;
}

GPUIRDEF gpuir_type gpuir_func_param_type(const gpuir_module *m, gpuir_func f, size_t i) {
    const gpuir__func *fn = gpuir__func_at(m, f.id);
    if (!fn || i >= stbds_arrlenu(fn->params)) return gpuir__invalid_type();
    return gpuir__value_at(m, fn->params[i])->type;
}

GPUIRDEF size_t gpuir_func_result_count(const gpuir_module *m, gpuir_func f) {
    const gpuir__func *fn = gpuir__func_at(m, f.id);
    const gpuir__op *ret = fn ? gpuir__func_return_op(m, fn) : NULL;
    return ret ? ret->n_operands : 0;
}

GPUIRDEF gpuir_type gpuir_func_result_type(const gpuir_module *m, gpuir_func f, size_t i) {
    const gpuir__func *fn = gpuir__func_at(m, f.id);
    const gpuir__op *ret = fn ? gpuir__func_return_op(m, fn) : NULL;
    if (!ret || i >= ret->n_operands) return gpuir__invalid_type();
    return gpuir__value_at(m, gpuir__op_operand(m, ret, (uint32_t)i))->type;
}

GPUIRDEF gpuir_type gpuir_value_type(const gpuir_module *m, gpuir_value v) {
    const gpuir__value *val = gpuir__value_at(m, v.id);
    return val ? val->type : gpuir__invalid_type();
}

GPUIRDEF size_t gpuir_module_global_count(const gpuir_module *m) { return stbds_arrlenu(m->globals); }

GPUIRDEF const char *gpuir_module_global_name(const gpuir_module *m, size_t index) {
    return index < stbds_arrlenu(m->globals) ? gpuir__string(m, m->globals[index].name) : "";
}

GPUIRDEF gpuir_type gpuir_module_global_type(const gpuir_module *m, size_t index) {
    return index < stbds_arrlenu(m->globals) ? m->globals[index].type : gpuir__invalid_type();
}

GPUIRDEF bool gpuir_module_global_bound(const gpuir_module *m, size_t index) {
    return index < stbds_arrlenu(m->globals) && m->globals[index].data != NULL;
}

/* ====================================================================== */
// >>build
// The builder: one checked entry (gpuir__build_op) that the public calls and
// the parser share. Reads: ir. Writes: ir. Shape inference lives here and is
// reused by verify and ref (gpuir__infer).

/* ---- attribute pool ---- */

static uint32_t gpuir__attr_push(gpuir_module *m, const char *name, gpuir__attr_kind kind) {
    gpuir__attr a;
    memset(&a, 0, sizeof a);
    a.name = gpuir__intern(m, name, strlen(name));
    a.kind = kind;
    stbds_arrput(m->attrs, a);
    return (uint32_t)stbds_arrlenu(m->attrs) - 1;
}

static void gpuir__attr_push_int(gpuir_module *m, const char *name, gpuir__attr_kind kind,
                                 int64_t v) {
    uint32_t i = gpuir__attr_push(m, name, kind);
    m->attrs[i].i = v;
}

static void gpuir__attr_push_float(gpuir_module *m, const char *name, double v) {
    uint32_t i = gpuir__attr_push(m, name, GPUIR__ATTR_FLOAT);
    m->attrs[i].f = v;
}

static void gpuir__attr_push_ints(gpuir_module *m, const char *name, size_t n,
                                  const int64_t *v) {
    uint32_t i = gpuir__attr_push(m, name, GPUIR__ATTR_INTS);
    m->attrs[i].off = (uint32_t)stbds_arrlenu(m->ints);
    m->attrs[i].n = (uint32_t)n;
    for (size_t k = 0; k < n; k++) stbds_arrput(m->ints, v[k]);
}

static void gpuir__attr_push_symbol(gpuir_module *m, const char *name, const char *sym) {
    uint32_t i = gpuir__attr_push(m, name, GPUIR__ATTR_SYMBOL);
    m->attrs[i].off = gpuir__intern(m, sym, strlen(sym));
}

/* Copies `count` raw elements of `dtype`; fails beyond 4 GiB per module. */
static gpuir_result gpuir__attr_push_dense(gpuir_module *m, const char *name, gpuir_dtype dtype,
                                           const void *data, size_t count) {
    size_t bytes = count * gpuir_dtype_size(dtype), have = stbds_arrlenu(m->bytes);
    if (count > UINT32_MAX || bytes > (size_t)UINT32_MAX - have)
        return gpuir__fail(m->ctx, GPUIR_ERR_LIMIT,
                           "constant: dense data beyond 4 GiB per module (%zu elements)", count);
    uint32_t i = gpuir__attr_push(m, name, GPUIR__ATTR_DENSE);
    m->attrs[i].i = dtype;
    m->attrs[i].off = (uint32_t)have;
    m->attrs[i].n = (uint32_t)count;
    stbds_arrsetlen(m->bytes, have + bytes);
    if (bytes) memcpy(m->bytes + have, data, bytes);
    return GPUIR_OK;
}

/* ---- shape inference ---- */

/* The attributes of one op under construction: a range of the pool. */
typedef struct gpuir__attrs { gpuir_module *m; uint32_t first, n; } gpuir__attrs;

static gpuir__attr *gpuir__attrs_get(const gpuir__attrs *as, const char *name) {
    for (uint32_t i = 0; i < as->n; i++) {
        gpuir__attr *a = &as->m->attrs[as->first + i];
        if (strcmp(gpuir__string(as->m, a->name), name) == 0) return a;
    }
    return NULL;
}

/* Allowed attribute names per class, space separated ("" for none). */
static const char *gpuir__class_attrs(gpuir__op_class c) {
    switch (c) {
    case GPUIR__CLASS_MATMUL: return "transpose_a transpose_b";
    case GPUIR__CLASS_REDUCE: return "axes keepdims";
    case GPUIR__CLASS_TRANSPOSE: return "perm";
    case GPUIR__CLASS_CONSTANT: return "value";
    case GPUIR__CLASS_GLOBAL: return "name";
    case GPUIR__CLASS_SOFTMAX: return "axis";
    case GPUIR__CLASS_LAUNCH: return "kernel grid block smem";
    default: return "";
    }
}

static bool gpuir__word_in(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, word, n) == 0) return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

/* The kind an attribute must have; value (number or dense) is checked by
   the constant's inference. */
static bool gpuir__attr_kind_ok(const char *name, gpuir__attr_kind kind, const char **want) {
    *want = "";
    if (strcmp(name, "transpose_a") == 0 || strcmp(name, "transpose_b") == 0 ||
        strcmp(name, "keepdims") == 0) { *want = "a bool"; return kind == GPUIR__ATTR_BOOL; }
    if (strcmp(name, "axes") == 0 || strcmp(name, "perm") == 0) {
        *want = "an integer list";
        return kind == GPUIR__ATTR_INTS;
    }
    if (strcmp(name, "axis") == 0 || strcmp(name, "smem") == 0 || strcmp(name, "fusion") == 0) {
        *want = "an integer";
        return kind == GPUIR__ATTR_INT;
    }
    if (strcmp(name, "grid") == 0 || strcmp(name, "block") == 0) {
        *want = "an integer list";
        return kind == GPUIR__ATTR_INTS;
    }
    if (strcmp(name, "kernel") == 0) { *want = "a @symbol"; return kind == GPUIR__ATTR_SYMBOL; }
    if (strcmp(name, "name") == 0) { *want = "a @symbol"; return kind == GPUIR__ATTR_SYMBOL; }
    return true;
}

/* Every attribute is known to the op, appears once and has the right kind. */
static gpuir_result gpuir__check_attr_names(gpuir_ctx *ctx, gpuir_op_kind kind,
                                            const gpuir__attrs *as) {
    const char *allowed = gpuir__class_attrs(gpuir__info(kind)->cls);
    for (uint32_t i = 0; i < as->n; i++) {
        const gpuir__attr *a = &as->m->attrs[as->first + i];
        const char *name = gpuir__string(as->m, a->name);
        bool fusion = strcmp(name, "fusion") == 0 && gpuir__class_computes(gpuir__info(kind)->cls);
        if (!fusion && !gpuir__word_in(allowed, name))
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: unknown attribute '%s'%s%s%s",
                               gpuir_op_name(kind), name, *allowed ? " (expected one of: " : "",
                               allowed, *allowed ? ")" : "");
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(gpuir__string(as->m, as->m->attrs[as->first + j].name), name) == 0)
                return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: attribute '%s' given twice",
                                   gpuir_op_name(kind), name);
        const char *want;
        if (!gpuir__attr_kind_ok(name, a->kind, &want))
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: attribute '%s' must be %s",
                               gpuir_op_name(kind), name, want);
    }
    return GPUIR_OK;
}

/* Fetches attribute `name` of kind `want`; missing is an error if `required`. */
static gpuir_result gpuir__need_attr(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir__attrs *as,
                                     const char *name, gpuir__attr_kind want, bool required,
                                     gpuir__attr **out) {
    static const char *const kind_names[] = {"an integer", "a float", "a bool", "a string",
                                             "a @symbol", "an integer list", "dense data"};
    *out = gpuir__attrs_get(as, name);
    if (!*out && required)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: missing attribute '%s' (%s)",
                           gpuir_op_name(kind), name, kind_names[want]);
    if (*out && (*out)->kind != want)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: attribute '%s' must be %s",
                           gpuir_op_name(kind), name, kind_names[want]);
    return GPUIR_OK;
}

static bool gpuir__attr_flag(const gpuir__attrs *as, const char *name) {
    const gpuir__attr *a = gpuir__attrs_get(as, name);
    return a && a->kind == GPUIR__ATTR_BOOL && a->i;
}

/* Combines two dims under NumPy broadcasting; false if incompatible. */
static bool gpuir__broadcast_dim(int64_t a, int64_t b, int64_t *out) {
    if (a == b) *out = a;
    else if (a == 1) *out = b;
    else if (b == 1) *out = a;
    else if (a == GPUIR_DYN) *out = b;
    else if (b == GPUIR_DYN) *out = a;
    else return false;
    return true;
}

/* The NumPy broadcast of the leading `ra`/`rb` dims of a and b into out. */
static gpuir_result gpuir__broadcast_shapes(gpuir_ctx *ctx, const char *op, const gpuir_type *a,
                                            int ra, const gpuir_type *b, int rb, gpuir_type *out) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = ra - r + i, ib = rb - r + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (!gpuir__broadcast_dim(da, db, &out->dims[i])) {
            gpuir__tbuf ba, bb;
            return gpuir__fail(ctx, GPUIR_ERR_SHAPE,
                               "%s: operand #0 %s and operand #1 %s do not broadcast "
                               "(%lld vs %lld)", op, gpuir__tstr(&ba, a), gpuir__tstr(&bb, b),
                               (long long)da, (long long)db);
        }
    }
    out->rank = r;
    return GPUIR_OK;
}

static gpuir_result gpuir__same_dtype(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *a,
                                      const gpuir_type *b) {
    if (a->dtype == b->dtype) return GPUIR_OK;
    gpuir__tbuf ba, bb;
    return gpuir__fail(ctx, GPUIR_ERR_DTYPE, "%s: operand #0 %s and operand #1 %s differ in "
                       "element type", gpuir_op_name(kind), gpuir__tstr(&ba, a), gpuir__tstr(&bb, b));
}

static gpuir_result gpuir__infer_matmul(gpuir_ctx *ctx, const gpuir_type *in,
                                        const gpuir__attrs *as, gpuir_type *out) {
    const gpuir_type *a = &in[0], *b = &in[1];
    gpuir__tbuf ba, bb;
    if (a->rank < 2 || b->rank < 2)
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "matmul: operands need rank >= 2, got %s and %s",
                           gpuir__tstr(&ba, a), gpuir__tstr(&bb, b));
    gpuir_result r = gpuir__same_dtype(ctx, GPUIR_OP_MATMUL, a, b);
    if (r) return r;
    bool ta = gpuir__attr_flag(as, "transpose_a"), tb = gpuir__attr_flag(as, "transpose_b");
    int64_t m_ = a->dims[a->rank - (ta ? 1 : 2)], ka = a->dims[a->rank - (ta ? 2 : 1)];
    int64_t kb = b->dims[b->rank - (tb ? 1 : 2)], n_ = b->dims[b->rank - (tb ? 2 : 1)];
    int64_t k;
    if (!gpuir__broadcast_dim(ka, kb, &k) || (ka != kb && ka != GPUIR_DYN && kb != GPUIR_DYN))
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "matmul: contraction dims differ: operand #0 %s "
                           "has K=%lld, operand #1 %s has K=%lld", gpuir__tstr(&ba, a),
                           (long long)ka, gpuir__tstr(&bb, b), (long long)kb);
    *out = *a;
    r = gpuir__broadcast_shapes(ctx, "matmul (batch dims)", a, a->rank - 2, b, b->rank - 2, out);
    if (r) return r;
    out->dims[out->rank] = m_;
    out->dims[out->rank + 1] = n_;
    out->rank += 2;
    return GPUIR_OK;
}

/* Normalizes an axis in place: negative counts from the back. */
static bool gpuir__norm_axis(int64_t *axis, int rank) {
    if (*axis < 0) *axis += rank;
    return *axis >= 0 && *axis < rank;
}

static gpuir_result gpuir__infer_reduce(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *x,
                                        const gpuir__attrs *as, gpuir_type *out) {
    gpuir__attr *axes;
    gpuir_result r = gpuir__need_attr(ctx, kind, as, "axes", GPUIR__ATTR_INTS, true, &axes);
    if (r) return r;
    int64_t *ax = gpuir__ints_at(as->m, axes->off);
    if (axes->n == 0 || axes->n > (uint32_t)x->rank)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: axes must list 1..%d axes, got %u",
                           gpuir_op_name(kind), (int)x->rank, axes->n);
    bool reduced[GPUIR_MAX_RANK] = {false};
    for (uint32_t i = 0; i < axes->n; i++) {
        int64_t given = ax[i];
        if (!gpuir__norm_axis(&ax[i], x->rank) || reduced[ax[i]])
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: axis %lld is out of range or "
                               "repeated for rank %d", gpuir_op_name(kind), (long long)given,
                               (int)x->rank);
        reduced[ax[i]] = true;
    }
    for (uint32_t i = 0; i < axes->n; i++)      /* canonical order: ascending */
        for (uint32_t j = i + 1; j < axes->n; j++)
            if (ax[j] < ax[i]) { int64_t t = ax[i]; ax[i] = ax[j]; ax[j] = t; }
    bool keep = gpuir__attr_flag(as, "keepdims");
    *out = *x;
    out->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!reduced[i]) out->dims[out->rank++] = x->dims[i];
        else if (keep) out->dims[out->rank++] = 1;
    }
    for (int i = out->rank; i < GPUIR_MAX_RANK; i++) out->dims[i] = 0;
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_transpose(gpuir_ctx *ctx, const gpuir_type *x,
                                           const gpuir__attrs *as, gpuir_type *out) {
    gpuir__attr *perm;
    gpuir_result r = gpuir__need_attr(ctx, GPUIR_OP_TRANSPOSE, as, "perm", GPUIR__ATTR_INTS,
                                      true, &perm);
    if (r) return r;
    const int64_t *p = gpuir__ints_at(as->m, perm->off);
    bool seen[GPUIR_MAX_RANK] = {false};
    bool ok = perm->n == (uint32_t)x->rank;
    for (uint32_t i = 0; ok && i < perm->n; i++) {
        ok = p[i] >= 0 && p[i] < x->rank && !seen[p[i]];
        if (ok) seen[p[i]] = true;
    }
    if (!ok) {
        gpuir__tbuf b;
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "transpose: perm is not a permutation of "
                           "0..%d for operand %s", (int)x->rank - 1, gpuir__tstr(&b, x));
    }
    *out = *x;
    for (int i = 0; i < x->rank; i++) out->dims[i] = x->dims[p[i]];
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_reshape(gpuir_ctx *ctx, const gpuir_type *x,
                                         const gpuir_type *to) {
    gpuir__tbuf bx, bt;
    int dyn = 0;
    for (int i = 0; i < to->rank; i++) dyn += to->dims[i] == GPUIR_DYN;
    if (dyn > 1)
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "reshape: result %s has more than one ?",
                           gpuir__tstr(&bt, to));
    int64_t nx = gpuir__type_count(x), nt = gpuir__type_count(to);
    if (nx >= 0 && nt >= 0 && nx != nt)
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "reshape: operand %s has %lld elements, result "
                           "%s has %lld", gpuir__tstr(&bx, x), (long long)nx, gpuir__tstr(&bt, to),
                           (long long)nt);
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_broadcast(gpuir_ctx *ctx, const gpuir_type *x,
                                           const gpuir_type *to) {
    gpuir__tbuf bx, bt;
    if (to->rank < x->rank)
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "broadcast: result %s has lower rank than "
                           "operand %s", gpuir__tstr(&bt, to), gpuir__tstr(&bx, x));
    for (int i = 0; i < to->rank; i++) {
        int j = x->rank - to->rank + i;
        int64_t dx = j >= 0 ? x->dims[j] : 1, dt = to->dims[i];
        bool ok = dx == dt || dx == 1 || dx == GPUIR_DYN;
        if (dt == GPUIR_DYN) ok = dx != 1;   /* a ? result dim must come from the operand */
        if (!ok)
            return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "broadcast: operand %s does not broadcast "
                               "to %s (dim %d: %lld to %lld)", gpuir__tstr(&bx, x),
                               gpuir__tstr(&bt, to), i, (long long)dx, (long long)dt);
    }
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_cast(gpuir_ctx *ctx, const gpuir_type *x, const gpuir_type *to) {
    gpuir_type same = *x;
    same.dtype = to->dtype;
    if (gpuir_type_equal(same, *to)) return GPUIR_OK;
    gpuir__tbuf bx, bt;
    return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "cast: operand %s and result %s differ in shape",
                       gpuir__tstr(&bx, x), gpuir__tstr(&bt, to));
}

/* A splat value must be representable: integral and in range for ints. */
static gpuir_result gpuir__normalize_splat(gpuir_ctx *ctx, gpuir__attr *v, gpuir_dtype dt) {
    if (gpuir_dtype_is_float(dt)) {
        double x = v->kind == GPUIR__ATTR_INT ? gpuir__i64_to_f64_odd(v->i) : v->f;
        if (dt == GPUIR_F32) x = (double)(float)x;
        else if (dt == GPUIR_F16) x = gpuir__f16_to_f64(gpuir__f64_to_f16(x));
        else x = gpuir__bf16_to_f64(gpuir__f64_to_bf16(x));
        v->kind = GPUIR__ATTR_FLOAT;
        v->f = x;
        return GPUIR_OK;
    }
    double lo = dt == GPUIR_I32 ? (double)INT32_MIN : -9223372036854775808.0;
    double hi = dt == GPUIR_I32 ? (double)INT32_MAX : 9223372036854775807.0;
    if (v->kind == GPUIR__ATTR_FLOAT) {
        char text[40];
        snprintf(text, sizeof text, "%.17g", v->f);
        if (v->f != floor(v->f))            /* fractions, inf and nan */
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "constant: value %s is not an %s", text,
                               gpuir_dtype_name(dt));
        if (!(v->f >= lo && v->f < hi + 1.0))
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "constant: value %s is out of range "
                               "for %s", text, gpuir_dtype_name(dt));
        v->kind = GPUIR__ATTR_INT;
        v->i = (int64_t)v->f;
    }
    if (dt == GPUIR_I32 && (v->i < INT32_MIN || v->i > INT32_MAX))
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "constant: value %lld is out of range "
                           "for i32", (long long)v->i);
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_constant(gpuir_ctx *ctx, const gpuir__attrs *as,
                                          const gpuir_type *to) {
    gpuir__tbuf bt;
    gpuir__attr *v = gpuir__attrs_get(as, "value");
    if (!v)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "constant: missing attribute 'value'");
    int64_t count = gpuir__type_count(to);
    if (count < 0)
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "constant: type %s must be static",
                           gpuir__tstr(&bt, to));
    if (v->kind == GPUIR__ATTR_INT || v->kind == GPUIR__ATTR_FLOAT)
        return gpuir__normalize_splat(ctx, v, to->dtype);
    if (v->kind != GPUIR__ATTR_DENSE)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "constant: 'value' must be a number or "
                           "dense<[...]>");
    if ((gpuir_dtype)v->i != to->dtype || (int64_t)v->n != count)
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "constant: %u dense %s values for type %s",
                           v->n, gpuir_dtype_name((gpuir_dtype)v->i), gpuir__tstr(&bt, to));
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_global(gpuir_ctx *ctx, const gpuir__attrs *as,
                                        const gpuir_type *to) {
    gpuir__attr *sym;
    gpuir_result r = gpuir__need_attr(ctx, GPUIR_OP_GET_GLOBAL, as, "name", GPUIR__ATTR_SYMBOL,
                                      true, &sym);
    if (r) return r;
    const char *name = gpuir__string(as->m, sym->off);
    uint32_t g = gpuir__find_global(as->m, name);
    if (!g)
        return gpuir__fail(ctx, GPUIR_ERR_NOT_FOUND, "get_global: no global named @%s", name);
    if (!gpuir_type_equal(as->m->globals[g - 1].type, *to)) {
        gpuir__tbuf bg, bt;
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "get_global: @%s is %s, read as %s", name,
                           gpuir__tstr(&bg, &as->m->globals[g - 1].type), gpuir__tstr(&bt, to));
    }
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_softmax(gpuir_ctx *ctx, const gpuir_type *x,
                                         const gpuir__attrs *as, gpuir_type *out) {
    gpuir__attr *axis;
    gpuir_result r = gpuir__need_attr(ctx, GPUIR_OP_SOFTMAX, as, "axis", GPUIR__ATTR_INT, true,
                                      &axis);
    if (r) return r;
    int64_t given = axis->i;
    if (!gpuir__norm_axis(&axis->i, x->rank))
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "softmax: axis %lld is out of range for "
                           "rank %d", (long long)given, (int)x->rank);
    *out = *x;
    return GPUIR_OK;
}

/* Checks operand count, kinds and dtypes against the op's class. */
static gpuir_result gpuir__check_operands(gpuir_ctx *ctx, gpuir_op_kind kind,
                                          const gpuir_type *in, uint32_t n) {
    static const int arity[] = {1, 2, 2, 1, 1, 1, 1, 1, 0, 0, 1, -1, 0, 1, 2, -1, 0};
    const gpuir__op_info *info = gpuir__info(kind);
    int want = arity[info->cls];
    if (want >= 0 && (uint32_t)want != n)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: expected %d operand%s, got %u",
                           info->mnemonic, want, want == 1 ? "" : "s", n);
    gpuir_type_kind want_kind = gpuir__class_computes(info->cls) ? GPUIR_TYPE_TENSOR : GPUIR_TYPE_MEMREF;
    for (uint32_t i = 0; i < n && info->cls != GPUIR__CLASS_RETURN; i++) {
        gpuir__tbuf b;
        if (in[i].kind != want_kind)
            return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: operand #%u is %s, not a %s",
                               info->mnemonic, i, gpuir__tstr(&b, &in[i]),
                               want_kind == GPUIR_TYPE_TENSOR ? "tensor" : "memref");
        if (info->float_only && !gpuir_dtype_is_float(in[i].dtype))
            return gpuir__fail(ctx, GPUIR_ERR_DTYPE, "%s: operand #%u is %s; %s needs a float "
                               "element type", info->mnemonic, i, gpuir__tstr(&b, &in[i]),
                               info->mnemonic);
    }
    return GPUIR_OK;
}

/* Infers the result type of `kind` applied to operand types `in` with the
   attributes `as`. `given` is the written result type (required for the
   classes that take one; checked against the inference for the others).
   Used by the builder, the verifier and the interpreter (on concrete types). */
static gpuir_result gpuir__infer(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in,
                                 uint32_t n, const gpuir__attrs *as, const gpuir_type *given,
                                 gpuir_type *out) {
    gpuir_result r = gpuir__check_operands(ctx, kind, in, n);
    if (!r) r = gpuir__check_attr_names(ctx, kind, as);
    if (r) return r;
    gpuir__op_class cls = gpuir__info(kind)->cls;
    bool needs_given = cls == GPUIR__CLASS_RESHAPE || cls == GPUIR__CLASS_BROADCAST ||
                       cls == GPUIR__CLASS_CAST || cls == GPUIR__CLASS_CONSTANT ||
                       cls == GPUIR__CLASS_GLOBAL;
    if (needs_given && !given)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: the result type must be given",
                           gpuir_op_name(kind));
    if (given && (r = gpuir__type_check(ctx, given, gpuir_op_name(kind))) != GPUIR_OK) return r;
    if (given && given->kind != GPUIR_TYPE_TENSOR)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: the result must be a tensor",
                           gpuir_op_name(kind));
    if (needs_given && n == 1 && given->dtype != in[0].dtype && cls != GPUIR__CLASS_CAST) {
        gpuir__tbuf bx, bt;
        return gpuir__fail(ctx, GPUIR_ERR_DTYPE, "%s: operand %s and result %s differ in element "
                           "type", gpuir_op_name(kind), gpuir__tstr(&bx, &in[0]),
                           gpuir__tstr(&bt, given));
    }
    memset(out, 0, sizeof *out);
    switch (cls) {
    case GPUIR__CLASS_UNARY: *out = in[0]; break;
    case GPUIR__CLASS_BINARY:
        r = gpuir__same_dtype(ctx, kind, &in[0], &in[1]);
        *out = in[0];
        if (!r) r = gpuir__broadcast_shapes(ctx, gpuir_op_name(kind), &in[0], in[0].rank,
                                            &in[1], in[1].rank, out);
        break;
    case GPUIR__CLASS_MATMUL: r = gpuir__infer_matmul(ctx, in, as, out); break;
    case GPUIR__CLASS_REDUCE: r = gpuir__infer_reduce(ctx, kind, &in[0], as, out); break;
    case GPUIR__CLASS_TRANSPOSE: r = gpuir__infer_transpose(ctx, &in[0], as, out); break;
    case GPUIR__CLASS_RESHAPE: r = gpuir__infer_reshape(ctx, &in[0], given); *out = *given; break;
    case GPUIR__CLASS_BROADCAST: r = gpuir__infer_broadcast(ctx, &in[0], given); *out = *given; break;
    case GPUIR__CLASS_CAST: r = gpuir__infer_cast(ctx, &in[0], given); *out = *given; break;
    case GPUIR__CLASS_CONSTANT: r = gpuir__infer_constant(ctx, as, given); *out = *given; break;
    case GPUIR__CLASS_GLOBAL: r = gpuir__infer_global(ctx, as, given); *out = *given; break;
    case GPUIR__CLASS_SOFTMAX: r = gpuir__infer_softmax(ctx, &in[0], as, out); break;
    default: break;                 /* return; buffer ops go to gpuir__infer_buffer_op */
    }
    if (!r && given && !needs_given && !gpuir_type_equal(*given, *out)) {
        gpuir__tbuf bg, bo;
        gpuir_type same_dtype = *given;
        same_dtype.dtype = out->dtype;
        return gpuir__fail(ctx, gpuir_type_equal(same_dtype, *out) ? GPUIR_ERR_DTYPE : GPUIR_ERR_SHAPE,
                           "%s: result type %s does not match the inferred "
                           "%s", gpuir_op_name(kind), gpuir__tstr(&bg, given), gpuir__tstr(&bo, out));
    }
    return r;
}

/* The name of the kernel module in symbols such as @kernels::@k0. */
#define GPUIR__KERNEL_MODULE "kernels"

/* The kernel function a launch names (@kernels::@k), or 0. */
static uint32_t gpuir__launch_target(const gpuir_module *m, const char *symbol) {
    size_t n = strlen(GPUIR__KERNEL_MODULE);
    if (strncmp(symbol, GPUIR__KERNEL_MODULE "::", n + 2) != 0) return 0;
    uint32_t f = gpuir__find_func(m, symbol + n + 2);
    return f && m->funcs[f - 1].kernel ? f : 0;
}

/* Same dtype and dims, whatever the kinds and memory spaces. */
static bool gpuir__same_shape(const gpuir_type *a, const gpuir_type *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static gpuir_result gpuir__space_error(gpuir_ctx *ctx, gpuir_op_kind kind, const char *what,
                                       const gpuir_type *t, const char *rule) {
    gpuir__tbuf b;
    return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: %s %s %s", gpuir_op_name(kind), what,
                       gpuir__tstr(&b, t), rule);
}

static gpuir_result gpuir__infer_alloc(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *t) {
    gpuir__tbuf b;
    if (t->kind != GPUIR_TYPE_MEMREF || !gpuir__type_is_static(t))
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: the result %s must be a static memref "
                           "(dynamic sizes are not supported yet)", gpuir_op_name(kind), gpuir__tstr(&b, t));
    bool device = t->space == GPUIR_SPACE_DEVICE;
    if ((kind == GPUIR_OP_GPU_ALLOC) != device)
        return gpuir__space_error(ctx, kind, "result", t, kind == GPUIR_OP_GPU_ALLOC ?
                                  "must be in device memory (space 1)" : "may not be in device memory");
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_copy(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in) {
    gpuir__tbuf b0, b1;
    if (!gpuir__same_shape(&in[0], &in[1]))
        return gpuir__fail(ctx, in[0].dtype != in[1].dtype ? GPUIR_ERR_DTYPE : GPUIR_ERR_SHAPE,
                           "%s: operands %s and %s differ", gpuir_op_name(kind),
                           gpuir__tstr(&b0, &in[0]), gpuir__tstr(&b1, &in[1]));
    bool device = in[0].space == GPUIR_SPACE_DEVICE || in[1].space == GPUIR_SPACE_DEVICE;
    if ((kind == GPUIR_OP_GPU_MEMCPY) != device)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: %s", gpuir_op_name(kind),
                           device ? "device buffers are copied with gpu.memcpy"
                                  : "gpu.memcpy needs a device buffer on one side");
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_memref_global(gpuir_ctx *ctx, const gpuir__attrs *as,
                                               const gpuir_type *t) {
    gpuir_type as_tensor = *t;
    as_tensor.kind = GPUIR_TYPE_TENSOR;
    as_tensor.space = 0;
    if (t->kind != GPUIR_TYPE_MEMREF || t->space != GPUIR_SPACE_HOST)
        return gpuir__space_error(ctx, GPUIR_OP_MEMREF_GET_GLOBAL, "result", t, "must be a host memref");
    return gpuir__infer_global(ctx, as, &as_tensor);
}

/* grid and block: three sizes >= 1 (block at most 1024 threads); smem >= 0. */
static gpuir_result gpuir__check_launch_dims(gpuir_ctx *ctx, const gpuir__attrs *as) {
    const char *names[2] = {"grid", "block"};
    for (int k = 0; k < 2; k++) {
        const gpuir__attr *a = gpuir__attrs_get(as, names[k]);
        if (!a) continue;
        const int64_t *v = gpuir__ints_at(as->m, a->off);
        bool ok = a->n == 3 && v[0] >= 1 && v[1] >= 1 && v[2] >= 1 && v[0] <= INT32_MAX &&
                  v[1] <= 65535 && v[2] <= 65535;
        if (ok && k == 1) ok = v[0] * v[1] * v[2] <= 1024;
        if (!ok)
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "gpu.launch_func: %s must be [x, y, z] "
                               "with sizes >= 1%s", names[k], k ? " and at most 1024 threads" : "");
    }
    const gpuir__attr *smem = gpuir__attrs_get(as, "smem");
    if (smem && smem->i < 0)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "gpu.launch_func: smem is negative");
    return GPUIR_OK;
}

/* The operands match the kernel's parameters (memory spaces aside). */
static gpuir_result gpuir__infer_launch(gpuir_ctx *ctx, const gpuir_type *in, uint32_t n,
                                        const gpuir__attrs *as) {
    gpuir__attr *sym;
    gpuir_result r = gpuir__need_attr(ctx, GPUIR_OP_GPU_LAUNCH_FUNC, as, "kernel",
                                      GPUIR__ATTR_SYMBOL, true, &sym);
    if (r || (r = gpuir__check_launch_dims(ctx, as)) != GPUIR_OK) return r;
    const gpuir_module *m = as->m;
    const char *name = gpuir__string(m, sym->off);
    uint32_t fid = gpuir__launch_target(m, name);
    if (!fid)
        return gpuir__fail(ctx, GPUIR_ERR_NOT_FOUND, "gpu.launch_func: no kernel @%s::@%s",
                           GPUIR__KERNEL_MODULE, strstr(name, "::") ? strstr(name, "::") + 2 : name);
    const gpuir__func *k = &m->funcs[fid - 1];
    if (stbds_arrlenu(k->params) != n)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "gpu.launch_func: kernel @%s takes %zu buffers, "
                           "%u given", gpuir__string(m, k->name), stbds_arrlenu(k->params), n);
    for (uint32_t i = 0; i < n; i++) {
        const gpuir_type *p = &gpuir__value_at(m, k->params[i])->type;
        if (!gpuir__same_shape(p, &in[i])) {
            gpuir__tbuf bp, bi;
            return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "gpu.launch_func: operand #%u is %s, kernel "
                               "@%s's parameter is %s", i, gpuir__tstr(&bi, &in[i]),
                               gpuir__string(m, k->name), gpuir__tstr(&bp, p));
        }
    }
    return GPUIR_OK;
}

/* The buffer-level ops: allocation, deallocation, copies, launches. */
static gpuir_result gpuir__infer_buffer_op(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in,
                                           uint32_t n, const gpuir__attrs *as,
                                           const gpuir_type *given, gpuir_type *out) {
    gpuir__op_class cls = gpuir__info(kind)->cls;
    gpuir_result r = gpuir__check_operands(ctx, kind, in, n);
    if (!r) r = gpuir__check_attr_names(ctx, kind, as);
    if (!r && given) r = gpuir__type_check(ctx, given, gpuir_op_name(kind));
    if (r) return r;
    memset(out, 0, sizeof *out);
    if (gpuir__class_has_result(cls) && !given)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: the result type must be given", gpuir_op_name(kind));
    switch (cls) {
    case GPUIR__CLASS_ALLOC: r = gpuir__infer_alloc(ctx, kind, given); break;
    case GPUIR__CLASS_DEALLOC:
        if ((kind == GPUIR_OP_GPU_DEALLOC) != (in[0].space == GPUIR_SPACE_DEVICE))
            r = gpuir__space_error(ctx, kind, "operand", &in[0], kind == GPUIR_OP_GPU_DEALLOC ?
                                   "is not in device memory" : "is in device memory (gpu.dealloc)");
        break;
    case GPUIR__CLASS_COPY: r = gpuir__infer_copy(ctx, kind, in); break;
    case GPUIR__CLASS_GLOBAL: r = gpuir__infer_memref_global(ctx, as, given); break;
    case GPUIR__CLASS_LAUNCH: r = gpuir__infer_launch(ctx, in, n, as); break;
    default: break;
    }
    if (!r && given) *out = *given;
    return r;
}

/* The buffer form of a computing op: memref inputs and a destination,
   checked as the tensor op from the inputs to the destination's type. */
static gpuir_result gpuir__infer_dps(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in,
                                     uint32_t n, const gpuir__attrs *as) {
    gpuir_type ins[GPUIR_MAX_OPERANDS], out;
    if (n == 0)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: without a result it needs an output "
                           "buffer as its last operand", gpuir_op_name(kind));
    for (uint32_t i = 0; i < n; i++) {
        gpuir__tbuf b;
        if (in[i].kind != GPUIR_TYPE_MEMREF)
            return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: operand #%u is %s; the buffer form "
                               "takes memrefs", gpuir_op_name(kind), i, gpuir__tstr(&b, &in[i]));
        ins[i] = in[i];
        ins[i].kind = GPUIR_TYPE_TENSOR;
        ins[i].space = 0;
    }
    return gpuir__infer(ctx, kind, ins, n - 1, as, &ins[n - 1], &out);
}

/* Checks an op in any of its forms. `has_result` says whether it defines a
   value; out receives its type (kind INVALID when it has none). */
static gpuir_result gpuir__infer_op(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in,
                                    uint32_t n, const gpuir__attrs *as, const gpuir_type *given,
                                    bool has_result, gpuir_type *out) {
    gpuir__op_class cls = gpuir__info(kind)->cls;
    memset(out, 0, sizeof *out);
    if (gpuir__class_computes(cls) && !has_result) return gpuir__infer_dps(ctx, kind, in, n, as);
    if (has_result != gpuir__class_has_result(cls))
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s %s a result", gpuir_op_name(kind),
                           has_result ? "does not have" : "must have");
    if (gpuir__class_computes(cls) || kind == GPUIR_OP_GET_GLOBAL || kind == GPUIR_OP_RETURN)
        return gpuir__infer(ctx, kind, in, n, as, given, out);
    return gpuir__infer_buffer_op(ctx, kind, in, n, as, given, out);
}

/* ---- the builder's one entry ---- */

static gpuir_result gpuir__check_open(gpuir_module *m, const char *what) {
    if (m->ctx->result != GPUIR_OK) return m->ctx->result;
    if (!m->building)
        return gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: no open function (call "
                           "gpuir_func_begin first)", what);
    return GPUIR_OK;
}

/* Gathers operand types; each operand must be a value of the open function. */
static gpuir_result gpuir__operand_types(gpuir_module *m, gpuir_op_kind kind,
                                         const uint32_t *operands, uint32_t n, gpuir_type *in) {
    for (uint32_t i = 0; i < n; i++) {
        const gpuir__value *v = gpuir__value_at(m, operands[i]);
        if (!v)
            return gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: operand #%u is not a value "
                               "(id %u)", gpuir_op_name(kind), i, operands[i]);
        if (v->func != m->building)
            return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "%s: operand #%u belongs to function @%s, "
                               "not to @%s", gpuir_op_name(kind), i,
                               gpuir__string(m, gpuir__func_at(m, v->func)->name),
                               gpuir__string(m, gpuir__func_at(m, m->building)->name));
        in[i] = v->type;
    }
    return GPUIR_OK;
}

/* Checks and appends an op to the open function. The attributes are the
   pool range [attrs, attrs + n_attrs); `has_result` says whether the op
   defines a value (a computing op without one is in buffer form). Returns
   the op id, 0 on failure. */
static uint32_t gpuir__build_op_ex(gpuir_module *m, gpuir_op_kind kind, const uint32_t *operands,
                                   uint32_t n, uint32_t attrs, uint32_t n_attrs,
                                   const gpuir_type *given, bool has_result) {
    if (gpuir__check_open(m, gpuir_op_name(kind))) return 0;
    if (n > GPUIR_MAX_OPERANDS) {
        gpuir__fail(m->ctx, GPUIR_ERR_LIMIT, "%s: %u operands, more than %d",
                    gpuir_op_name(kind), n, GPUIR_MAX_OPERANDS);
        return 0;
    }
    gpuir_type in[GPUIR_MAX_OPERANDS], out;
    gpuir__attrs as = {m, attrs, n_attrs};
    if (gpuir__operand_types(m, kind, operands, n, in) ||
        gpuir__infer_op(m->ctx, kind, in, n, &as, given, has_result, &out))
        return 0;
    gpuir__op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    op.func = m->building;
    op.operands = (uint32_t)stbds_arrlenu(m->uses);
    op.n_operands = n;
    op.attrs = attrs;
    op.n_attrs = n_attrs;
    op.line = m->ctx->loc_line;
    op.col = m->ctx->loc_col;
    for (uint32_t i = 0; i < n; i++) stbds_arrput(m->uses, operands[i]);
    stbds_arrput(m->ops, op);
    uint32_t id = (uint32_t)stbds_arrlenu(m->ops);
    if (has_result) {
        gpuir__value v;
        memset(&v, 0, sizeof v);
        v.type = out;
        v.func = m->building;
        v.def_op = id;
        stbds_arrput(m->values, v);
        m->ops[id - 1].result = (uint32_t)stbds_arrlenu(m->values);
    }
    if (m->rewriting) stbds_arrput(m->rewrite_ops, id);
    else stbds_arrput(gpuir__func_at(m, m->building)->ops, id);
    return id;
}

/* The op in its usual form: with a result unless its class has none. */
static uint32_t gpuir__build_op(gpuir_module *m, gpuir_op_kind kind, const uint32_t *operands,
                                uint32_t n, uint32_t attrs, uint32_t n_attrs,
                                const gpuir_type *given) {
    return gpuir__build_op_ex(m, kind, operands, n, attrs, n_attrs, given,
                              gpuir__class_has_result(gpuir__info(kind)->cls));
}

static gpuir_value gpuir__build_value(gpuir_module *m, gpuir_op_kind kind,
                                      const uint32_t *operands, uint32_t n, uint32_t attrs,
                                      uint32_t n_attrs, const gpuir_type *given) {
    uint32_t op = gpuir__build_op(m, kind, operands, n, attrs, n_attrs, given);
    return gpuir__value_handle(op ? m->ops[op - 1].result : 0);
}

/* ---- functions ---- */

static uint32_t gpuir__func_begin(gpuir_module *m, const char *name) {
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return 0;
    if (m->building) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "func_begin: function @%s is still open",
                    gpuir__string(m, gpuir__func_at(m, m->building)->name));
        return 0;
    }
    if (!gpuir__valid_name(name)) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "func_begin: '%s' is not a valid name",
                    name ? name : "(null)");
        return 0;
    }
    if (gpuir__find_func(m, name)) {
        gpuir__fail(ctx, GPUIR_ERR_VERIFY, "func_begin: function @%s is defined twice", name);
        return 0;
    }
    gpuir__func f;
    memset(&f, 0, sizeof f);
    f.name = gpuir__intern(m, name, strlen(name));
    f.line = ctx->loc_line;
    f.col = ctx->loc_col;
    stbds_arrput(m->funcs, f);
    m->building = (uint32_t)stbds_arrlenu(m->funcs);
    stbds_shput(m->func_index, name, m->building);
    return m->building;
}

GPUIRDEF gpuir_func gpuir_func_begin(gpuir_module *m, const char *name) {
    return gpuir__func_handle(gpuir__func_begin(m, name));
}

GPUIRDEF gpuir_value gpuir_param(gpuir_module *m, const char *name, gpuir_type type) {
    if (gpuir__check_open(m, "param")) return gpuir__value_handle(0);
    gpuir__func *f = gpuir__func_at(m, m->building);
    if (!gpuir__valid_name(name)) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "param: '%s' is not a valid name "
                    "([A-Za-z_][A-Za-z0-9_.$]*)", name ? name : "(null)");
        return gpuir__value_handle(0);
    }
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++)
        if (strcmp(gpuir__string(m, m->values[f->params[i] - 1].name), name) == 0) {
            gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "param: @%s has two parameters named %%%s",
                        gpuir__string(m, f->name), name);
            return gpuir__value_handle(0);
        }
    if (gpuir__type_check(m->ctx, &type, "param")) return gpuir__value_handle(0);
    gpuir__value v;
    memset(&v, 0, sizeof v);
    v.type = type;
    v.func = m->building;
    v.name = gpuir__intern(m, name, strlen(name));
    stbds_arrput(m->values, v);
    uint32_t id = (uint32_t)stbds_arrlenu(m->values);
    stbds_arrput(gpuir__func_at(m, m->building)->params, id);
    return gpuir__value_handle(id);
}

GPUIRDEF gpuir_result gpuir_func_return(gpuir_module *m, size_t n, const gpuir_value *results) {
    gpuir_result r = gpuir__check_open(m, "return");
    if (r) return r;
    if (n > GPUIR_MAX_OPERANDS)
        return gpuir__fail(m->ctx, GPUIR_ERR_LIMIT, "return: %zu results, more than %d", n,
                           GPUIR_MAX_OPERANDS);
    uint32_t ids[GPUIR_MAX_OPERANDS];
    for (size_t i = 0; i < n; i++) ids[i] = results[i].id;
    if (!gpuir__build_op(m, GPUIR_OP_RETURN, ids, (uint32_t)n, 0, 0, NULL)) return m->ctx->result;
    gpuir__func_at(m, m->building)->closed = true;
    m->building = 0;
    return GPUIR_OK;
}

/* ---- op wrappers ---- */

GPUIRDEF gpuir_value gpuir_unary(gpuir_module *m, gpuir_op_kind kind, gpuir_value x) {
    if (gpuir__info(kind)->cls != GPUIR__CLASS_UNARY || kind == GPUIR_OP_INVALID) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "unary: op %d is not unary", (int)kind);
        return gpuir__value_handle(0);
    }
    return gpuir__build_value(m, kind, &x.id, 1, 0, 0, NULL);
}

GPUIRDEF gpuir_value gpuir_binary(gpuir_module *m, gpuir_op_kind kind, gpuir_value a,
                                  gpuir_value b) {
    if (gpuir__info(kind)->cls != GPUIR__CLASS_BINARY || kind == GPUIR_OP_INVALID) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "binary: op %d is not binary", (int)kind);
        return gpuir__value_handle(0);
    }
    uint32_t ids[2] = {a.id, b.id};
    return gpuir__build_value(m, kind, ids, 2, 0, 0, NULL);
}

GPUIRDEF gpuir_value gpuir_neg(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_NEG, x); }
GPUIRDEF gpuir_value gpuir_abs(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_ABS, x); }
GPUIRDEF gpuir_value gpuir_exp(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_EXP, x); }
GPUIRDEF gpuir_value gpuir_log(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_LOG, x); }
GPUIRDEF gpuir_value gpuir_sqrt(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_SQRT, x); }
GPUIRDEF gpuir_value gpuir_rsqrt(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_RSQRT, x); }
GPUIRDEF gpuir_value gpuir_tanh(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_TANH, x); }
GPUIRDEF gpuir_value gpuir_sigmoid(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_SIGMOID, x); }
GPUIRDEF gpuir_value gpuir_relu(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_RELU, x); }
GPUIRDEF gpuir_value gpuir_gelu(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_GELU, x); }
GPUIRDEF gpuir_value gpuir_silu(gpuir_module *m, gpuir_value x) { return gpuir_unary(m, GPUIR_OP_SILU, x); }
GPUIRDEF gpuir_value gpuir_add(gpuir_module *m, gpuir_value a, gpuir_value b) { return gpuir_binary(m, GPUIR_OP_ADD, a, b); }
GPUIRDEF gpuir_value gpuir_sub(gpuir_module *m, gpuir_value a, gpuir_value b) { return gpuir_binary(m, GPUIR_OP_SUB, a, b); }
GPUIRDEF gpuir_value gpuir_mul(gpuir_module *m, gpuir_value a, gpuir_value b) { return gpuir_binary(m, GPUIR_OP_MUL, a, b); }
GPUIRDEF gpuir_value gpuir_div(gpuir_module *m, gpuir_value a, gpuir_value b) { return gpuir_binary(m, GPUIR_OP_DIV, a, b); }
GPUIRDEF gpuir_value gpuir_max(gpuir_module *m, gpuir_value a, gpuir_value b) { return gpuir_binary(m, GPUIR_OP_MAX, a, b); }
GPUIRDEF gpuir_value gpuir_min(gpuir_module *m, gpuir_value a, gpuir_value b) { return gpuir_binary(m, GPUIR_OP_MIN, a, b); }
GPUIRDEF gpuir_value gpuir_pow(gpuir_module *m, gpuir_value a, gpuir_value b) { return gpuir_binary(m, GPUIR_OP_POW, a, b); }

GPUIRDEF gpuir_value gpuir_matmul(gpuir_module *m, gpuir_value a, gpuir_value b, unsigned flags) {
    if (gpuir__check_open(m, "matmul")) return gpuir__value_handle(0);
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs), n = 0;
    if (flags & GPUIR_TRANSPOSE_A) { gpuir__attr_push_int(m, "transpose_a", GPUIR__ATTR_BOOL, 1); n++; }
    if (flags & GPUIR_TRANSPOSE_B) { gpuir__attr_push_int(m, "transpose_b", GPUIR__ATTR_BOOL, 1); n++; }
    uint32_t ids[2] = {a.id, b.id};
    return gpuir__build_value(m, GPUIR_OP_MATMUL, ids, 2, first, n, NULL);
}

GPUIRDEF gpuir_value gpuir_reduce(gpuir_module *m, gpuir_op_kind kind, gpuir_value x,
                                  size_t n_axes, const int64_t *axes, bool keepdims) {
    if (gpuir__check_open(m, "reduce")) return gpuir__value_handle(0);
    if (gpuir__info(kind)->cls != GPUIR__CLASS_REDUCE || n_axes > GPUIR_MAX_RANK) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "reduce: op %d is not a reduction, or "
                    "%zu axes are too many", (int)kind, n_axes);
        return gpuir__value_handle(0);
    }
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_ints(m, "axes", n_axes, axes);
    if (keepdims) gpuir__attr_push_int(m, "keepdims", GPUIR__ATTR_BOOL, 1);
    return gpuir__build_value(m, kind, &x.id, 1, first, keepdims ? 2 : 1, NULL);
}

GPUIRDEF gpuir_value gpuir_transpose(gpuir_module *m, gpuir_value x, size_t n,
                                     const int64_t *perm) {
    if (gpuir__check_open(m, "transpose")) return gpuir__value_handle(0);
    if (n > GPUIR_MAX_RANK) {
        gpuir__fail(m->ctx, GPUIR_ERR_ATTRIBUTE, "transpose: perm has %zu entries, more than "
                    "rank %d", n, GPUIR_MAX_RANK);
        return gpuir__value_handle(0);
    }
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_ints(m, "perm", n, perm);
    return gpuir__build_value(m, GPUIR_OP_TRANSPOSE, &x.id, 1, first, 1, NULL);
}

/* The operand's dtype with a new shape; invalid kind if x is not a value. */
static gpuir_type gpuir__reshaped(gpuir_module *m, gpuir_value x, int rank, const int64_t *dims) {
    const gpuir__value *v = gpuir__value_at(m, x.id);
    return gpuir_tensor_type(v ? v->type.dtype : GPUIR_DTYPE_INVALID, rank, dims);
}

GPUIRDEF gpuir_value gpuir_reshape(gpuir_module *m, gpuir_value x, int rank, const int64_t *dims) {
    gpuir_type to = gpuir__reshaped(m, x, rank, dims);
    return gpuir__build_value(m, GPUIR_OP_RESHAPE, &x.id, 1, 0, 0, &to);
}

GPUIRDEF gpuir_value gpuir_broadcast(gpuir_module *m, gpuir_value x, int rank,
                                     const int64_t *dims) {
    gpuir_type to = gpuir__reshaped(m, x, rank, dims);
    return gpuir__build_value(m, GPUIR_OP_BROADCAST, &x.id, 1, 0, 0, &to);
}

GPUIRDEF gpuir_value gpuir_cast(gpuir_module *m, gpuir_value x, gpuir_dtype dtype) {
    const gpuir__value *v = gpuir__value_at(m, x.id);
    gpuir_type to = v ? v->type : gpuir__invalid_type();
    to.dtype = dtype;
    return gpuir__build_value(m, GPUIR_OP_CAST, &x.id, 1, 0, 0, &to);
}

GPUIRDEF gpuir_value gpuir_softmax(gpuir_module *m, gpuir_value x, int64_t axis) {
    if (gpuir__check_open(m, "softmax")) return gpuir__value_handle(0);
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_int(m, "axis", GPUIR__ATTR_INT, axis);
    return gpuir__build_value(m, GPUIR_OP_SOFTMAX, &x.id, 1, first, 1, NULL);
}

GPUIRDEF gpuir_value gpuir_constant_splat(gpuir_module *m, gpuir_type type, double value) {
    if (gpuir__check_open(m, "constant")) return gpuir__value_handle(0);
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_float(m, "value", value);
    return gpuir__build_value(m, GPUIR_OP_CONSTANT, NULL, 0, first, 1, &type);
}

GPUIRDEF gpuir_value gpuir_constant_dense(gpuir_module *m, gpuir_type type, const void *data) {
    if (gpuir__check_open(m, "constant") || gpuir__type_check(m->ctx, &type, "constant"))
        return gpuir__value_handle(0);
    int64_t count = gpuir__type_count(&type);
    if (count < 0) {
        gpuir__tbuf b;
        gpuir__fail(m->ctx, GPUIR_ERR_SHAPE, "constant: type %s must be static",
                    gpuir__tstr(&b, &type));
        return gpuir__value_handle(0);
    }
    if (!data && count > 0) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "constant: data is NULL");
        return gpuir__value_handle(0);
    }
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    if (gpuir__attr_push_dense(m, "value", type.dtype, data, (size_t)count))
        return gpuir__value_handle(0);
    return gpuir__build_value(m, GPUIR_OP_CONSTANT, NULL, 0, first, 1, &type);
}

/* Declares a module global, or checks that an existing one has this type. */
static gpuir_result gpuir__declare_global(gpuir_module *m, const char *name, const gpuir_type *t) {
    gpuir_ctx *ctx = m->ctx;
    if (!gpuir__valid_name(name))
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "global: '%s' is not a valid name",
                           name ? name : "(null)");
    gpuir_result r = gpuir__type_check(ctx, t, "global");
    if (r) return r;
    if (t->kind != GPUIR_TYPE_TENSOR || !gpuir__type_is_static(t)) {
        gpuir__tbuf b;
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "global @%s: type %s must be a static tensor",
                           name, gpuir__tstr(&b, t));
    }
    uint32_t g = gpuir__find_global(m, name);
    if (g && !gpuir_type_equal(m->globals[g - 1].type, *t)) {
        gpuir__tbuf b1, b2;
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "global @%s: declared as %s, used as %s", name,
                           gpuir__tstr(&b1, &m->globals[g - 1].type), gpuir__tstr(&b2, t));
    }
    if (g) return GPUIR_OK;
    gpuir__global gl;
    memset(&gl, 0, sizeof gl);
    gl.name = gpuir__intern(m, name, strlen(name));
    gl.type = *t;
    stbds_arrput(m->globals, gl);
    return GPUIR_OK;
}

GPUIRDEF gpuir_value gpuir_global(gpuir_module *m, const char *name, gpuir_type type) {
    if (gpuir__check_open(m, "global") || gpuir__declare_global(m, name, &type))
        return gpuir__value_handle(0);
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_symbol(m, "name", name);
    return gpuir__build_value(m, GPUIR_OP_GET_GLOBAL, NULL, 0, first, 1, &type);
}

/* ====================================================================== */
// >>print
// The textual form of a module (README, "Text format"); parse reads it back,
// and print(parse(print(m))) == print(m). Reads: ir. Writes: a string only.

typedef struct gpuir__printer {
    const gpuir_module *m;
    gpuir__str out;
    uint32_t *numbers;     /* value id - 1 -> printed number + 1 (0: a parameter) */
} gpuir__printer;

/* The shortest text that reads back as the same value: as the same float
   when v is one (every f32, f16 and bf16 value is; the parser rounds to the
   dtype), else as the same double. Always marked as a float (a '.', an
   exponent, inf or nan) so that it never reads back as an integer. */
static void gpuir__print_float(gpuir__str *s, double v) {
    if (isnan(v)) { gpuir__str_appendf(s, signbit(v) ? "-nan" : "nan"); return; }
    if (isinf(v)) { gpuir__str_appendf(s, v < 0 ? "-inf" : "inf"); return; }
    char b[40];
    bool is_f32 = (double)(float)v == v;
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(b, sizeof b, "%.*g", digits, v);
        double back = strtod(b, NULL);
        if (is_f32 ? (double)(float)back == v : back == v) break;
    }
    if (strchr(b, 'e') && fabs(v) >= 1.0 && fabs(v) < 1e16) {   /* 1e+01 reads better as 10.0 */
        char plain[40];
        snprintf(plain, sizeof plain, "%.1f", v);
        double back = strtod(plain, NULL);
        if (is_f32 ? (double)(float)back == v : back == v) memcpy(b, plain, strlen(plain) + 1);
    }
    gpuir__str_appendf(s, "%s%s", b, strpbrk(b, ".e") ? "" : ".0");
}

static void gpuir__print_type(gpuir__str *s, const gpuir_type *t) {
    gpuir__tbuf b;
    gpuir__str_appendf(s, "%s", gpuir__tstr(&b, t));
}

static void gpuir__print_value(gpuir__printer *p, uint32_t id) {
    const gpuir__value *v = gpuir__value_at(p->m, id);
    if (v->def_op == 0) gpuir__str_appendf(&p->out, "%%%s", gpuir__string(p->m, v->name));
    else gpuir__str_appendf(&p->out, "%%%u", p->numbers[id - 1] - 1);
}

/* One element of dense data, read from the pool in its dtype. */
static double gpuir__load_elem(const void *base, gpuir_dtype dt, size_t i);

static void gpuir__print_dense(gpuir__printer *p, const gpuir__attr *a) {
    gpuir_dtype dt = (gpuir_dtype)a->i;
    const unsigned char *base = gpuir__bytes_at(p->m, a->off);
    gpuir__str_appendf(&p->out, "dense<[");
    for (uint32_t k = 0; k < a->n; k++) {
        if (k) gpuir__str_appendf(&p->out, ", ");
        double v = gpuir__load_elem(base, dt, k);
        if (gpuir_dtype_is_float(dt)) gpuir__print_float(&p->out, v);
        else if (dt == GPUIR_I64) {
            int64_t x;
            memcpy(&x, base + (size_t)k * 8, 8);
            gpuir__str_appendf(&p->out, "%lld", (long long)x);
        } else gpuir__str_appendf(&p->out, "%lld", (long long)v);
    }
    gpuir__str_appendf(&p->out, "]>");
}

static bool gpuir__has_kernel(const gpuir_module *m) {
    for (size_t i = 0; i < stbds_arrlenu(m->funcs); i++)
        if (m->funcs[i].kernel) return true;
    return false;
}

/* "kernels::k0" prints as @kernels::@k0 */
static void gpuir__print_symbol(gpuir__str *s, const char *sym) {
    gpuir__str_appendf(s, "@");
    for (const char *sep; (sep = strstr(sym, "::")) != NULL; sym = sep + 2)
        gpuir__str_appendf(s, "%.*s::@", (int)(sep - sym), sym);
    gpuir__str_appendf(s, "%s", sym);
}

static void gpuir__print_attr(gpuir__printer *p, const gpuir__attr *a) {
    const gpuir_module *m = p->m;
    gpuir__str_appendf(&p->out, "%s = ", gpuir__string(m, a->name));
    switch (a->kind) {
    case GPUIR__ATTR_INT: gpuir__str_appendf(&p->out, "%lld", (long long)a->i); break;
    case GPUIR__ATTR_FLOAT: gpuir__print_float(&p->out, a->f); break;
    case GPUIR__ATTR_BOOL: gpuir__str_appendf(&p->out, "%s", a->i ? "true" : "false"); break;
    case GPUIR__ATTR_STRING: gpuir__str_appendf(&p->out, "\"%s\"", gpuir__string(m, a->off)); break;
    case GPUIR__ATTR_SYMBOL: gpuir__print_symbol(&p->out, gpuir__string(m, a->off)); break;
    case GPUIR__ATTR_INTS:
        gpuir__str_appendf(&p->out, "[");
        for (uint32_t k = 0; k < a->n; k++)
            gpuir__str_appendf(&p->out, "%s%lld", k ? ", " : "", (long long)m->ints[a->off + k]);
        gpuir__str_appendf(&p->out, "]");
        break;
    case GPUIR__ATTR_DENSE: gpuir__print_dense(p, a); break;
    }
}

/* %r = mnemonic %a, %b {attrs} : (types) -> type    (-> () without a result)
   return %a : type */
static void gpuir__print_op(gpuir__printer *p, const gpuir__op *op, uint32_t *counter,
                            const char *indent) {
    const gpuir_module *m = p->m;
    gpuir__str_appendf(&p->out, "%s", indent);
    if (op->result) {
        p->numbers[op->result - 1] = ++*counter;
        gpuir__print_value(p, op->result);
        gpuir__str_appendf(&p->out, " = ");
    }
    gpuir__str_appendf(&p->out, "%s", gpuir_op_name(op->kind));
    for (uint32_t i = 0; i < op->n_operands; i++) {
        gpuir__str_appendf(&p->out, i ? ", " : " ");
        gpuir__print_value(p, gpuir__op_operand(m, op, i));
    }
    if (op->n_attrs) {
        gpuir__str_appendf(&p->out, " {");
        for (uint32_t i = 0; i < op->n_attrs; i++) {
            if (i) gpuir__str_appendf(&p->out, ", ");
            gpuir__print_attr(p, &m->attrs[op->attrs + i]);
        }
        gpuir__str_appendf(&p->out, "}");
    }
    if (op->kind == GPUIR_OP_RETURN) {
        for (uint32_t i = 0; i < op->n_operands; i++) {
            gpuir__str_appendf(&p->out, i ? ", " : " : ");
            gpuir__print_type(&p->out, &gpuir__value_at(m, gpuir__op_operand(m, op, i))->type);
        }
    } else {
        gpuir__str_appendf(&p->out, " : (");
        for (uint32_t i = 0; i < op->n_operands; i++) {
            if (i) gpuir__str_appendf(&p->out, ", ");
            gpuir__print_type(&p->out, &gpuir__value_at(m, gpuir__op_operand(m, op, i))->type);
        }
        gpuir__str_appendf(&p->out, ") -> ");
        if (op->result) gpuir__print_type(&p->out, &gpuir__value_at(m, op->result)->type);
        else gpuir__str_appendf(&p->out, "()");
    }
    gpuir__str_appendf(&p->out, "\n");
}

/* func.func @name(%p: type, ...) -> type | (type, ...) { ops }
   gpu.func @name(%p: type, ...) kernel { ops }      (inside gpu.module) */
static void gpuir__print_func(gpuir__printer *p, uint32_t fid) {
    const gpuir_module *m = p->m;
    const gpuir__func *f = gpuir__func_at(m, fid);
    const char *indent = f->kernel ? "  " : "";
    gpuir__str_appendf(&p->out, "%s%s @%s(", indent, f->kernel ? "gpu.func" : "func.func",
                       gpuir__string(m, f->name));
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++) {
        if (i) gpuir__str_appendf(&p->out, ", ");
        gpuir__print_value(p, f->params[i]);
        gpuir__str_appendf(&p->out, ": ");
        gpuir__print_type(&p->out, &gpuir__value_at(m, f->params[i])->type);
    }
    gpuir__str_appendf(&p->out, ")");
    size_t n_results = gpuir_func_result_count(m, gpuir__func_handle(fid));
    if (n_results > 0) gpuir__str_appendf(&p->out, n_results == 1 ? " -> " : " -> (");
    for (size_t i = 0; i < n_results; i++) {
        gpuir_type t = gpuir_func_result_type(m, gpuir__func_handle(fid), i);
        if (i) gpuir__str_appendf(&p->out, ", ");
        gpuir__print_type(&p->out, &t);
    }
    gpuir__str_appendf(&p->out, "%s%s {\n", n_results > 1 ? ")" : "", f->kernel ? " kernel" : "");
    uint32_t counter = 0;
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++)
        gpuir__print_op(p, gpuir__op_at(m, f->ops[i]), &counter, f->kernel ? "    " : "  ");
    gpuir__str_appendf(&p->out, "%s}\n", indent);
}

GPUIRDEF char *gpuir_module_print(gpuir_module *m) {
    gpuir__printer p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.numbers = (uint32_t *)calloc(stbds_arrlenu(m->values) + 1, sizeof *p.numbers);
    if (!p.numbers) { gpuir__oom(m->ctx, "printing a module"); return NULL; }
    for (size_t i = 0; i < stbds_arrlenu(m->globals); i++) {
        gpuir__str_appendf(&p.out, "global @%s : ", gpuir__string(m, m->globals[i].name));
        gpuir__print_type(&p.out, &m->globals[i].type);
        gpuir__str_appendf(&p.out, "\n");
    }
    /* kernels come first, so that every symbol is defined before its use */
    bool first = stbds_arrlenu(m->globals) == 0;
    if (gpuir__has_kernel(m)) {
        gpuir__str_appendf(&p.out, "%sgpu.module @%s {\n", first ? "" : "\n", GPUIR__KERNEL_MODULE);
        for (size_t i = 0, k = 0; i < stbds_arrlenu(m->funcs); i++) {
            if (!m->funcs[i].kernel) continue;
            if (k++) gpuir__str_appendf(&p.out, "\n");
            gpuir__print_func(&p, (uint32_t)i + 1);
        }
        gpuir__str_appendf(&p.out, "}\n");
        first = false;
    }
    for (size_t i = 0; i < stbds_arrlenu(m->funcs); i++) {     /* then host functions */
        if (m->funcs[i].kernel) continue;
        if (!first) gpuir__str_appendf(&p.out, "\n");
        first = false;
        gpuir__print_func(&p, (uint32_t)i + 1);
    }
    free(p.numbers);
    char *text = gpuir__str_detach(&p.out);
    if (!text) gpuir__oom(m->ctx, "printing a module");
    return text;
}

/* ====================================================================== */
// >>parse
// Text to IR, by recursive descent over characters (README, "Text format").
// Reads: util. Writes: ir, through the same checked entry as the builder, so
// a parsed op gets exactly the checks of a built one, with file:line:col.

typedef struct gpuir__name_entry { char *key; uint32_t value; } gpuir__name_entry;

typedef struct gpuir__parser {
    gpuir_module *m;
    gpuir_ctx *ctx;
    const char *p, *end;        /* cursor and end of the text */
    const char *line_start;
    uint32_t line;
    gpuir__name_entry *names;   /* stb_ds string map: value names of the function */
    double *nums;               /* scratch: the numbers of a dense<[...]> */
    int64_t *inums;             /*          the same, read as integers */
    bool *is_float;             /*          whether each was written as a float */
    uint64_t *num_locs;         /*          line << 32 | col of each (for errors) */
    int64_t pending_dense;      /* attr index waiting for its dtype, or -1 */
} gpuir__parser;

static void gpuir__parse_skip_ws(gpuir__parser *P) {
    while (P->p < P->end) {
        char c = *P->p;
        if (c == '\n') { P->p++; P->line++; P->line_start = P->p; }
        else if (c == ' ' || c == '\t' || c == '\r') P->p++;
        else if (c == '/' && P->p + 1 < P->end && P->p[1] == '/')
            while (P->p < P->end && *P->p != '\n') P->p++;
        else break;
    }
}

/* Makes the cursor the location of the errors and ops that follow. */
static void gpuir__parse_mark(gpuir__parser *P) {
    gpuir__parse_skip_ws(P);
    P->ctx->loc_line = P->line;
    P->ctx->loc_col = (uint32_t)(P->p - P->line_start) + 1;
}

/* Describes the next token for "found ..." in a message. */
static void gpuir__parse_found(gpuir__parser *P, char *buf, size_t size) {
    gpuir__parse_skip_ws(P);
    if (P->p >= P->end) { snprintf(buf, size, "end of input"); return; }
    size_t n = P->p[0] == '%' || P->p[0] == '@' ? 1 : 0;   /* %name and @name whole */
    while (P->p + n < P->end && n < 24 &&
           (gpuir__is_ident_char((unsigned char)P->p[n]) || P->p[n] == '-'))
        n++;
    unsigned char c = (unsigned char)P->p[0];
    if (n == 0 && (c < 32 || c > 126)) snprintf(buf, size, "byte 0x%02x", c);
    else snprintf(buf, size, "'%.*s'", (int)(n ? n : 1), P->p);
}

static gpuir_result gpuir__parse_expected(gpuir__parser *P, const char *what) {
    char found[48];
    gpuir__parse_found(P, found, sizeof found);
    gpuir__parse_mark(P);
    return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "expected %s, found %s", what, found);
}

static bool gpuir__parse_accept(gpuir__parser *P, const char *punct) {
    gpuir__parse_skip_ws(P);
    size_t n = strlen(punct);
    if ((size_t)(P->end - P->p) < n || memcmp(P->p, punct, n) != 0) return false;
    P->p += n;
    return true;
}

static gpuir_result gpuir__parse_expect(gpuir__parser *P, const char *punct) {
    if (gpuir__parse_accept(P, punct)) return GPUIR_OK;
    char what[16];
    snprintf(what, sizeof what, "'%s'", punct);
    return gpuir__parse_expected(P, what);
}

/* ident := [A-Za-z_][A-Za-z0-9_.$]*   (digits first too when `digits_ok`) */
static gpuir_result gpuir__parse_ident(gpuir__parser *P, char *buf, bool digits_ok,
                                       const char *what) {
    gpuir__parse_skip_ws(P);
    const char *s = P->p;
    if (s >= P->end || !(gpuir__is_ident_start((unsigned char)*s) ||
                         (digits_ok && *s >= '0' && *s <= '9')))
        return gpuir__parse_expected(P, what);
    while (P->p < P->end && gpuir__is_ident_char((unsigned char)*P->p)) P->p++;
    size_t n = (size_t)(P->p - s);
    if (n >= GPUIR_MAX_NAME) {
        P->p = s;
        gpuir__parse_mark(P);
        return gpuir__fail(P->ctx, GPUIR_ERR_LIMIT, "%s is longer than %d bytes", what,
                           GPUIR_MAX_NAME - 1);
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    return GPUIR_OK;
}

/* A keyword: the word, not followed by an identifier character. */
static bool gpuir__parse_keyword(gpuir__parser *P, const char *kw) {
    gpuir__parse_skip_ws(P);
    size_t n = strlen(kw);
    if ((size_t)(P->end - P->p) < n || memcmp(P->p, kw, n) != 0) return false;
    if (P->p + n < P->end && gpuir__is_ident_char((unsigned char)P->p[n])) return false;
    P->p += n;
    return true;
}

/* int := "-"? [0-9]+   (fits in int64) */
static gpuir_result gpuir__parse_int(gpuir__parser *P, int64_t *out, const char *what) {
    gpuir__parse_skip_ws(P);
    const char *s = P->p;
    bool neg = s < P->end && *s == '-';
    const char *d = s + neg;
    if (d >= P->end || *d < '0' || *d > '9') return gpuir__parse_expected(P, what);
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; d < P->end && *d >= '0' && *d <= '9'; d++) {
        uint64_t digit = (uint64_t)(*d - '0');
        if (v > (limit - digit) / 10) {
            gpuir__parse_mark(P);
            return gpuir__fail(P->ctx, GPUIR_ERR_LIMIT, "integer %.*s... is out of range for "
                               "64 bits", (int)(d - s + 1), s);
        }
        v = v * 10 + digit;
    }
    P->p = d;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return GPUIR_OK;
}

/* number := int | "-"? [0-9]+ ("." [0-9]*)? ([eE] [+-]? [0-9]+)? | "-"? ("inf" | "nan") */
static gpuir_result gpuir__parse_number(gpuir__parser *P, double *f, int64_t *i, bool *is_float) {
    gpuir__parse_skip_ws(P);
    const char *s = P->p, *q = s + (s < P->end && *s == '-');
    size_t left = (size_t)(P->end - q);
    if ((left >= 3 && (memcmp(q, "inf", 3) == 0 || memcmp(q, "nan", 3) == 0)) &&
        !(left > 3 && gpuir__is_ident_char((unsigned char)q[3]))) {
        *f = q[0] == 'i' ? (double)INFINITY : (double)NAN;
        if (*s == '-') *f = -*f;
        P->p = q + 3;
        *is_float = true;
        return GPUIR_OK;
    }
    const char *e = q;
    while (e < P->end && *e >= '0' && *e <= '9') e++;
    bool frac = e < P->end && (*e == '.' || *e == 'e' || *e == 'E');
    if (!frac) {
        *is_float = false;
        gpuir_result r = gpuir__parse_int(P, i, "a number");
        *f = (double)*i;
        return r;
    }
    char buf[64];
    size_t n = 0;
    while (s + n < P->end && n < sizeof buf - 1 &&
           (strchr("0123456789.eE+-", s[n]) != NULL))
        n++;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *stop;
    *f = strtod(buf, &stop);
    if (stop == buf || q == e) return gpuir__parse_expected(P, "a number");
    P->p = s + (stop - buf);
    *is_float = true;
    return GPUIR_OK;
}

/* type := ("tensor" | "memref") "<" (dim "x")* dtype ("," space)? ">"
   dim  := [0-9]+ | "?" */
static gpuir_result gpuir__parse_type(gpuir__parser *P, gpuir_type *t) {
    const char *start;
    gpuir__parse_skip_ws(P);
    start = P->p;
    memset(t, 0, sizeof *t);
    if (gpuir__parse_keyword(P, "tensor")) t->kind = GPUIR_TYPE_TENSOR;
    else if (gpuir__parse_keyword(P, "memref")) t->kind = GPUIR_TYPE_MEMREF;
    else return gpuir__parse_expected(P, "a type");
    gpuir_result r = gpuir__parse_expect(P, "<");
    while (!r && P->p < P->end && ((*P->p >= '0' && *P->p <= '9') || *P->p == '?')) {
        int64_t d = GPUIR_DYN;
        if (t->rank == GPUIR_MAX_RANK) {
            gpuir__parse_mark(P);
            return gpuir__fail(P->ctx, GPUIR_ERR_LIMIT, "rank above the cap of %d", GPUIR_MAX_RANK);
        }
        if (*P->p == '?') P->p++;
        else if ((r = gpuir__parse_int(P, &d, "a dimension")) != GPUIR_OK) break;
        t->dims[t->rank++] = d;
        if (P->p < P->end && (*P->p == ' ' || *P->p == '\t')) {
            gpuir__parse_mark(P);
            return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "expected 'x' after a dimension, found a "
                               "space (types have none: tensor<4x8xf32>)");
        }
        if (P->p >= P->end || *P->p != 'x') return gpuir__parse_expected(P, "'x' after a dimension");
        P->p++;
    }
    char name[GPUIR_MAX_NAME];
    gpuir__parse_skip_ws(P);
    const char *dtype_at = P->p;
    if (!r) r = gpuir__parse_ident(P, name, false, "an element type");
    if (r) return r;
    for (int d = 1; d < GPUIR_DTYPE_COUNT; d++)
        if (strcmp(name, gpuir__dtype_infos[d].name) == 0) t->dtype = (gpuir_dtype)d;
    if (!t->dtype) {
        P->p = dtype_at;
        gpuir__parse_mark(P);
        return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "unknown element type '%s' (f32, f16, bf16, "
                           "i32 or i64)", name);
    }
    int64_t space = 0;
    if (t->kind == GPUIR_TYPE_MEMREF && gpuir__parse_accept(P, ",")) {
        gpuir__parse_mark(P);
        if ((r = gpuir__parse_int(P, &space, "a memory space")) != GPUIR_OK) return r;
        if (space < 0 || space > 15)
            return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "memory space %lld is outside 0..15",
                               (long long)space);
    }
    t->space = (int32_t)space;
    if ((r = gpuir__parse_expect(P, ">")) != GPUIR_OK) return r;
    const char *after = P->p;
    P->p = start;
    gpuir__parse_mark(P);
    P->p = after;
    return gpuir__type_check(P->ctx, t, "type");
}

/* dense := "dense" "<" "[" (number ("," number)*)? "]" ">"
   The numbers wait in scratch until the op's result type gives the dtype. */
static gpuir_result gpuir__parse_dense(gpuir__parser *P, uint32_t attr) {
    gpuir_result r = gpuir__parse_expect(P, "<");
    if (!r) r = gpuir__parse_expect(P, "[");
    if (r) return r;
    if (P->pending_dense >= 0) {
        gpuir__parse_mark(P);
        return gpuir__fail(P->ctx, GPUIR_ERR_ATTRIBUTE, "only one dense<...> per op");
    }
    if (P->nums) stbds_header(P->nums)->length = 0;
    if (P->inums) stbds_header(P->inums)->length = 0;
    if (P->is_float) stbds_header(P->is_float)->length = 0;
    if (P->num_locs) stbds_header(P->num_locs)->length = 0;
    if (!gpuir__parse_accept(P, "]")) {
        do {
            double f = 0;
            int64_t i = 0;
            bool isf = false;
            gpuir__parse_mark(P);
            stbds_arrput(P->num_locs, (uint64_t)P->ctx->loc_line << 32 | P->ctx->loc_col);
            if ((r = gpuir__parse_number(P, &f, &i, &isf)) != GPUIR_OK) return r;
            stbds_arrput(P->nums, f);
            stbds_arrput(P->inums, i);
            stbds_arrput(P->is_float, isf);
        } while (gpuir__parse_accept(P, ","));
        if ((r = gpuir__parse_expect(P, "]")) != GPUIR_OK) return r;
    }
    P->pending_dense = attr;
    P->m->attrs[attr].kind = GPUIR__ATTR_DENSE;
    return gpuir__parse_expect(P, ">");
}

/* ints := "[" (int ("," int)*)? "]" */
static gpuir_result gpuir__parse_int_list(gpuir__parser *P, uint32_t attr) {
    gpuir_module *m = P->m;
    m->attrs[attr].kind = GPUIR__ATTR_INTS;
    m->attrs[attr].off = (uint32_t)stbds_arrlenu(m->ints);
    gpuir_result r = GPUIR_OK;
    if (gpuir__parse_accept(P, "]")) return GPUIR_OK;
    do {
        int64_t v;
        if (m->attrs[attr].n == GPUIR_MAX_RANK * 8u) {
            gpuir__parse_mark(P);
            return gpuir__fail(P->ctx, GPUIR_ERR_LIMIT, "integer list longer than %d",
                               GPUIR_MAX_RANK * 8);
        }
        if ((r = gpuir__parse_int(P, &v, "an integer")) != GPUIR_OK) return r;
        stbds_arrput(m->ints, v);
        m->attrs[attr].n++;
    } while (gpuir__parse_accept(P, ","));
    return gpuir__parse_expect(P, "]");
}

/* symbol := ident ("::" "@" ident)?     (after the first "@"; kept as "a::b") */
static gpuir_result gpuir__parse_symbol(gpuir__parser *P, char *sym) {
    gpuir_result r = gpuir__parse_ident(P, sym, false, "a symbol name");
    if (r || (size_t)(P->end - P->p) < 3 || memcmp(P->p, "::@", 3) != 0) return r;
    P->p += 3;
    char inner[GPUIR_MAX_NAME];
    if ((r = gpuir__parse_ident(P, inner, false, "a symbol name")) != GPUIR_OK) return r;
    if (strlen(sym) + 2 + strlen(inner) >= GPUIR_MAX_NAME) {
        gpuir__parse_mark(P);
        return gpuir__fail(P->ctx, GPUIR_ERR_LIMIT, "symbol longer than %d bytes", GPUIR_MAX_NAME - 1);
    }
    strcat(sym, "::");
    strcat(sym, inner);
    return GPUIR_OK;
}

/* attr_value := number | "true" | "false" | "@" symbol | "\"" chars "\"" | ints | dense */
static gpuir_result gpuir__parse_attr_value(gpuir__parser *P, uint32_t attr) {
    gpuir_module *m = P->m;
    char sym[GPUIR_MAX_NAME];
    gpuir_result r;
    gpuir__parse_skip_ws(P);
    if (gpuir__parse_keyword(P, "true") || gpuir__parse_keyword(P, "false")) {
        m->attrs[attr].kind = GPUIR__ATTR_BOOL;
        m->attrs[attr].i = P->p[-1] == 'e' && P->p[-2] == 'u';
        return GPUIR_OK;
    }
    if (gpuir__parse_keyword(P, "dense")) return gpuir__parse_dense(P, attr);
    if (gpuir__parse_accept(P, "[")) return gpuir__parse_int_list(P, attr);
    if (gpuir__parse_accept(P, "@")) {
        if ((r = gpuir__parse_symbol(P, sym)) != GPUIR_OK) return r;
        m->attrs[attr].kind = GPUIR__ATTR_SYMBOL;
        m->attrs[attr].off = gpuir__intern(m, sym, strlen(sym));
        return GPUIR_OK;
    }
    if (P->p < P->end && *P->p == '"') {
        gpuir__parse_mark(P);                     /* errors point at the opening quote */
        const char *s = ++P->p;
        while (P->p < P->end && *P->p != '"' && *P->p != '\n' && *P->p != '\\') P->p++;
        if (P->p >= P->end || *P->p != '"')
            return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "unterminated string (strings end on "
                               "their line and have no escapes)");
        m->attrs[attr].kind = GPUIR__ATTR_STRING;
        m->attrs[attr].off = gpuir__intern(m, s, (size_t)(P->p - s));
        P->p++;
        return GPUIR_OK;
    }
    double f = 0;
    int64_t i = 0;
    bool isf = false;
    if (P->p >= P->end || !strchr("-0123456789in", *P->p))
        return gpuir__parse_expected(P, "an attribute value");
    if ((r = gpuir__parse_number(P, &f, &i, &isf)) != GPUIR_OK) return r;
    m->attrs[attr].kind = isf ? GPUIR__ATTR_FLOAT : GPUIR__ATTR_INT;
    m->attrs[attr].f = isf ? f : 0.0;       /* only the kind's field is set: */
    m->attrs[attr].i = isf ? 0 : i;         /* CSE hashes both */
    return GPUIR_OK;
}

/* attr_dict := "{" (ident "=" attr_value ("," ident "=" attr_value)*)? "}" */
static gpuir_result gpuir__parse_attr_dict(gpuir__parser *P, uint32_t *first, uint32_t *n) {
    *first = (uint32_t)stbds_arrlenu(P->m->attrs);
    *n = 0;
    if (!gpuir__parse_accept(P, "{")) return GPUIR_OK;
    if (gpuir__parse_accept(P, "}")) return GPUIR_OK;
    gpuir_result r;
    do {
        char name[GPUIR_MAX_NAME];
        if ((r = gpuir__parse_ident(P, name, false, "an attribute name")) != GPUIR_OK) return r;
        if ((r = gpuir__parse_expect(P, "=")) != GPUIR_OK) return r;
        uint32_t a = gpuir__attr_push(P->m, name, GPUIR__ATTR_INT);
        if ((r = gpuir__parse_attr_value(P, a)) != GPUIR_OK) return r;
        (*n)++;
    } while (gpuir__parse_accept(P, ","));
    return gpuir__parse_expect(P, "}");
}

/* Writes the pending dense numbers as raw elements of `dt` into the pool. */
static gpuir_result gpuir__parse_finish_dense(gpuir__parser *P, gpuir_dtype dt) {
    size_t n = stbds_arrlenu(P->nums), size = gpuir_dtype_size(dt);
    unsigned char *tmp = (unsigned char *)malloc(n * size + 1);
    if (!tmp) return gpuir__oom(P->ctx, "dense constant");
    gpuir_result r = GPUIR_OK;
    for (size_t k = 0; k < n && !r; k++) {
        gpuir__attr v;
        memset(&v, 0, sizeof v);
        v.kind = P->is_float[k] ? GPUIR__ATTR_FLOAT : GPUIR__ATTR_INT;
        v.f = P->nums[k];
        v.i = P->inums[k];
        P->ctx->loc_line = (uint32_t)(P->num_locs[k] >> 32);   /* errors point at the value */
        P->ctx->loc_col = (uint32_t)P->num_locs[k];
        r = gpuir__normalize_splat(P->ctx, &v, dt);
        gpuir_array one;
        memset(&one, 0, sizeof one);
        one.dtype = dt;
        one.data = tmp + k * size;
        if (dt == GPUIR_I64) memcpy(one.data, &v.i, 8);
        else gpuir_array_set(&one, 0, v.kind == GPUIR__ATTR_INT ? gpuir__i64_to_f64_odd(v.i) : v.f);
    }
    uint32_t a = (uint32_t)P->pending_dense;
    size_t have = stbds_arrlenu(P->m->bytes);
    if (!r && (n > UINT32_MAX || n * size > (size_t)UINT32_MAX - have))
        r = gpuir__fail(P->ctx, GPUIR_ERR_LIMIT, "dense data beyond 4 GiB per module");
    if (!r) {
        stbds_arrsetlen(P->m->bytes, have + n * size);
        if (n) memcpy(P->m->bytes + have, tmp, n * size);
        P->m->attrs[a].i = dt;
        P->m->attrs[a].off = (uint32_t)have;
        P->m->attrs[a].n = (uint32_t)n;
    }
    free(tmp);
    P->pending_dense = -1;
    return r;
}

/* value := "%" [A-Za-z0-9_.$]+, a name of the current function */
static gpuir_result gpuir__parse_use(gpuir__parser *P, uint32_t *id) {
    char name[GPUIR_MAX_NAME];
    gpuir_result r = gpuir__parse_expect(P, "%");
    if (!r) r = gpuir__parse_ident(P, name, true, "a value name");
    if (r) return r;
    ptrdiff_t i = stbds_shgeti(P->names, name);
    if (i < 0) {
        P->p -= strlen(name) + 1;
        gpuir__parse_mark(P);
        P->p += strlen(name) + 1;
        return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "use of undefined value %%%s", name);
    }
    *id = P->names[i].value;
    return GPUIR_OK;
}

static gpuir_result gpuir__type_mismatch(gpuir__parser *P, const char *what, const gpuir_type *want,
                                         const gpuir_type *got) {
    gpuir__tbuf bw, bg;
    return gpuir__fail(P->ctx, want->dtype != got->dtype ? GPUIR_ERR_DTYPE : GPUIR_ERR_SHAPE,
                       "%s is %s, but the value is %s", what, gpuir__tstr(&bw, want),
                       gpuir__tstr(&bg, got));
}

/* types := type ("," type)*   — checked against the operand values */
static gpuir_result gpuir__parse_operand_types(gpuir__parser *P, const uint32_t *ids, uint32_t n,
                                               bool parens) {
    gpuir_result r = GPUIR_OK;
    for (uint32_t i = 0; i < n; i++) {
        gpuir_type t;
        if (i && (r = gpuir__parse_expect(P, ",")) != GPUIR_OK) return r;
        if ((r = gpuir__parse_type(P, &t)) != GPUIR_OK) return r;
        const gpuir_type *vt = &gpuir__value_at(P->m, ids[i])->type;
        if (!gpuir_type_equal(t, *vt)) {
            char what[40];
            snprintf(what, sizeof what, "the type of operand #%u", i);
            return gpuir__type_mismatch(P, what, &t, vt);
        }
    }
    if (parens && gpuir__parse_accept(P, ",")) {     /* one type too many, or a stray ',' */
        gpuir__parse_skip_ws(P);
        return gpuir__parse_expected(P, P->p < P->end && *P->p == ')' ? "a type" :
                                        "')' after the operand types");
    }
    return r;
}

/* op := ("%" name "=")? mnemonic (value ("," value)*)? attr_dict?
         (":" "(" types? ")" "->" type  |  ":" types  for return) */
static gpuir_result gpuir__parse_op(gpuir__parser *P, bool *was_return) {
    char result[GPUIR_MAX_NAME] = "", mnemonic[GPUIR_MAX_NAME];
    gpuir_result r;
    gpuir__parse_mark(P);
    uint32_t line = P->ctx->loc_line, col = P->ctx->loc_col;
    if (gpuir__parse_accept(P, "%")) {
        if ((r = gpuir__parse_ident(P, result, true, "a value name")) != GPUIR_OK) return r;
        if (stbds_shgeti(P->names, result) >= 0) {
            P->ctx->loc_line = line;
            P->ctx->loc_col = col;
            return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "redefinition of %%%s", result);
        }
        if ((r = gpuir__parse_expect(P, "=")) != GPUIR_OK) return r;
    }
    if ((r = gpuir__parse_ident(P, mnemonic, false, "an op name")) != GPUIR_OK) return r;
    gpuir_op_kind kind = GPUIR_OP_INVALID;
    for (int k = 1; k < GPUIR_OP_COUNT; k++)
        if (strcmp(mnemonic, gpuir__op_infos[k].mnemonic) == 0) kind = (gpuir_op_kind)k;
    P->ctx->loc_line = line;
    P->ctx->loc_col = col;
    if (!kind) return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "unknown op '%s'", mnemonic);
    *was_return = kind == GPUIR_OP_RETURN;
    bool has_result = result[0] != '\0';
    if (*was_return && has_result) return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "return has no result");
    uint32_t ids[GPUIR_MAX_OPERANDS], n = 0, first, n_attrs;
    gpuir__parse_skip_ws(P);
    while (P->p < P->end && *P->p == '%') {
        if (n == GPUIR_MAX_OPERANDS) {
            gpuir__parse_mark(P);
            return gpuir__fail(P->ctx, GPUIR_ERR_LIMIT, "more than %d operands", GPUIR_MAX_OPERANDS);
        }
        if ((r = gpuir__parse_use(P, &ids[n++])) != GPUIR_OK) return r;
        if (!gpuir__parse_accept(P, ",")) break;
        gpuir__parse_skip_ws(P);
        if (P->p >= P->end || *P->p != '%') return gpuir__parse_expected(P, "an operand");
    }
    if ((r = gpuir__parse_attr_dict(P, &first, &n_attrs)) != GPUIR_OK) return r;
    gpuir_type given, *given_p = NULL;
    if (*was_return) {
        if (n && ((r = gpuir__parse_expect(P, ":")) != GPUIR_OK ||
                  (r = gpuir__parse_operand_types(P, ids, n, false)) != GPUIR_OK))
            return r;
    } else {
        if ((r = gpuir__parse_expect(P, ":")) || (r = gpuir__parse_expect(P, "(")) ||
            (r = gpuir__parse_operand_types(P, ids, n, true)) || (r = gpuir__parse_expect(P, ")")) ||
            (r = gpuir__parse_expect(P, "->")))
            return r;
        gpuir__parse_skip_ws(P);
        if (!has_result && (P->p >= P->end || *P->p != '(')) {
            P->ctx->loc_line = line;
            P->ctx->loc_col = col;
            return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "expected '%%name =' before '%s' (or "
                               "'-> ()' for an op without a result)", mnemonic);
        }
        if (!has_result && (r = gpuir__parse_expect(P, "(")) == GPUIR_OK)
            r = gpuir__parse_expect(P, ")");       /* an op without a result: -> () */
        if (has_result && (r = gpuir__parse_type(P, &given)) == GPUIR_OK) given_p = &given;
        if (r) return r;
        if (P->pending_dense >= 0) {      /* the dtype: the result's, or the destination's */
            gpuir_dtype dt = given_p ? given.dtype : n ? gpuir__value_at(P->m, ids[n - 1])->type.dtype
                                                      : GPUIR_F32;
            if ((r = gpuir__parse_finish_dense(P, dt)) != GPUIR_OK) return r;
        }
    }
    const char *after = P->p;
    P->ctx->loc_line = line;
    P->ctx->loc_col = col;
    uint32_t op = gpuir__build_op_ex(P->m, kind, ids, n, first, n_attrs, given_p, has_result);
    P->p = after;
    if (!op) return P->ctx->result;
    if (has_result) stbds_shput(P->names, result, P->m->ops[op - 1].result);
    return GPUIR_OK;
}

/* param := "%" ident ":" type */
static gpuir_result gpuir__parse_param(gpuir__parser *P) {
    char name[GPUIR_MAX_NAME];
    gpuir_type t;
    gpuir_result r = gpuir__parse_expect(P, "%");
    gpuir__parse_mark(P);
    uint32_t line = P->ctx->loc_line, col = P->ctx->loc_col;
    if (!r) r = gpuir__parse_ident(P, name, false, "a parameter name");
    if (!r) r = gpuir__parse_expect(P, ":");
    if (!r) r = gpuir__parse_type(P, &t);
    if (r) return r;
    P->ctx->loc_line = line;
    P->ctx->loc_col = col;
    gpuir_value v = gpuir_param(P->m, name, t);
    if (!v.id) return P->ctx->result;
    stbds_shput(P->names, name, v.id);
    return GPUIR_OK;
}

/* The return must match the written result types. */
static gpuir_result gpuir__parse_check_results(gpuir__parser *P, uint32_t fid,
                                               const gpuir_type *want, uint32_t n_want) {
    gpuir_func f = gpuir__func_handle(fid);
    size_t n = gpuir_func_result_count(P->m, f);
    if (n != n_want)
        return gpuir__fail(P->ctx, GPUIR_ERR_VERIFY, "@%s returns %zu values but its signature "
                           "lists %u", gpuir_func_name(P->m, f), n, n_want);
    for (uint32_t i = 0; i < n_want; i++) {
        gpuir_type got = gpuir_func_result_type(P->m, f, i);
        if (!gpuir_type_equal(got, want[i])) {
            gpuir__tbuf bw, bg;
            return gpuir__fail(P->ctx, GPUIR_ERR_VERIFY, "@%s: result #%u is %s in the signature "
                               "but %s in the return", gpuir_func_name(P->m, f), i,
                               gpuir__tstr(&bw, &want[i]), gpuir__tstr(&bg, &got));
        }
    }
    return GPUIR_OK;
}

/* results := type | "(" (type ("," type)*)? ")" */
static gpuir_result gpuir__parse_result_types(gpuir__parser *P, gpuir_type *types, uint32_t *n) {
    gpuir_result r = GPUIR_OK;
    *n = 0;
    if (!gpuir__parse_accept(P, "->")) return GPUIR_OK;
    bool parens = gpuir__parse_accept(P, "(");
    if (parens && gpuir__parse_accept(P, ")")) return GPUIR_OK;
    do {
        if (*n == GPUIR_MAX_OPERANDS) {
            gpuir__parse_mark(P);
            return gpuir__fail(P->ctx, GPUIR_ERR_LIMIT, "more than %d results", GPUIR_MAX_OPERANDS);
        }
        if ((r = gpuir__parse_type(P, &types[(*n)++])) != GPUIR_OK) return r;
    } while (parens && gpuir__parse_accept(P, ","));
    return parens ? gpuir__parse_expect(P, ")") : r;
}

/* func   := "func.func" "@" ident "(" (param ("," param)*)? ")" results? "{" op* "}"
   kernel := "gpu.func" "@" ident "(" (param ("," param)*)? ")" "kernel" "{" op* "}" */
static gpuir_result gpuir__parse_func(gpuir__parser *P, bool kernel) {
    char name[GPUIR_MAX_NAME];
    gpuir_type results[GPUIR_MAX_OPERANDS];
    uint32_t n_results;
    gpuir_result r = gpuir__parse_expect(P, "@");
    gpuir__parse_mark(P);
    if (!r) r = gpuir__parse_ident(P, name, false, "a function name");
    if (r) return r;
    uint32_t fid = gpuir__func_begin(P->m, name);
    if (!fid) return P->ctx->result;
    P->m->funcs[fid - 1].kernel = kernel;
    stbds_shfree(P->names);
    stbds_sh_new_strdup(P->names);
    if ((r = gpuir__parse_expect(P, "(")) != GPUIR_OK) return r;
    if (!gpuir__parse_accept(P, ")")) {
        do {
            if ((r = gpuir__parse_param(P)) != GPUIR_OK) return r;
        } while (gpuir__parse_accept(P, ","));
        if ((r = gpuir__parse_expect(P, ")")) != GPUIR_OK) return r;
    }
    if (!kernel && (r = gpuir__parse_result_types(P, results, &n_results)) != GPUIR_OK) return r;
    if (kernel && !gpuir__parse_keyword(P, "kernel")) return gpuir__parse_expected(P, "'kernel'");
    if (kernel) n_results = 0;
    if ((r = gpuir__parse_expect(P, "{")) != GPUIR_OK) return r;
    bool done = false;
    while (!done) {
        gpuir__parse_skip_ws(P);
        if (P->p < P->end && *P->p == '}') {
            gpuir__parse_mark(P);
            return gpuir__fail(P->ctx, GPUIR_ERR_VERIFY, "@%s does not end with a return", name);
        }
        if ((r = gpuir__parse_op(P, &done)) != GPUIR_OK) return r;
    }
    gpuir__func_at(P->m, fid)->closed = true;
    P->m->building = 0;
    gpuir__parse_mark(P);
    if ((r = gpuir__parse_check_results(P, fid, results, n_results)) != GPUIR_OK) return r;
    return gpuir__parse_expect(P, "}");
}

/* global := "global" "@" ident ":" type */
static gpuir_result gpuir__parse_global(gpuir__parser *P) {
    char name[GPUIR_MAX_NAME];
    gpuir_type t;
    gpuir_result r = gpuir__parse_expect(P, "@");
    gpuir__parse_mark(P);
    uint32_t line = P->ctx->loc_line, col = P->ctx->loc_col;
    if (!r) r = gpuir__parse_ident(P, name, false, "a global name");
    if (!r) r = gpuir__parse_expect(P, ":");
    if (!r) r = gpuir__parse_type(P, &t);
    if (r) return r;
    P->ctx->loc_line = line;
    P->ctx->loc_col = col;
    if (gpuir__find_global(P->m, name))
        return gpuir__fail(P->ctx, GPUIR_ERR_VERIFY, "global @%s is declared twice", name);
    return gpuir__declare_global(P->m, name, &t);
}

/* kernels := "gpu.module" "@" "kernels" "{" kernel* "}" */
static gpuir_result gpuir__parse_kernel_module(gpuir__parser *P) {
    char name[GPUIR_MAX_NAME];
    gpuir_result r = gpuir__parse_expect(P, "@");
    gpuir__parse_mark(P);
    if (!r) r = gpuir__parse_ident(P, name, false, "a module name");
    if (r) return r;
    if (strcmp(name, GPUIR__KERNEL_MODULE) != 0)
        return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "the kernel module is named @%s, not @%s",
                           GPUIR__KERNEL_MODULE, name);
    if ((r = gpuir__parse_expect(P, "{")) != GPUIR_OK) return r;
    while (!gpuir__parse_accept(P, "}")) {
        if (!gpuir__parse_keyword(P, "gpu.func")) return gpuir__parse_expected(P, "'gpu.func' or '}'");
        if ((r = gpuir__parse_func(P, true)) != GPUIR_OK) return r;
    }
    return GPUIR_OK;
}

/* module := (global | kernels | func)*     (symbols are defined before use) */
static gpuir_result gpuir__parse_module(gpuir__parser *P) {
    gpuir_result r = GPUIR_OK;
    for (;;) {
        gpuir__parse_skip_ws(P);
        if (P->p >= P->end) return GPUIR_OK;
        if (gpuir__parse_keyword(P, "func.func")) r = gpuir__parse_func(P, false);
        else if (gpuir__parse_keyword(P, "global")) r = gpuir__parse_global(P);
        else if (gpuir__parse_keyword(P, "gpu.module")) r = gpuir__parse_kernel_module(P);
        else r = gpuir__parse_expected(P, "'func.func', 'gpu.module' or 'global'");
        if (r) return r;
    }
}

GPUIRDEF gpuir_module *gpuir_module_parse(gpuir_ctx *ctx, const char *text, size_t len,
                                          const char *filename) {
    if (!text && len) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "parse: text is NULL");
        return NULL;
    }
    gpuir_module *m = gpuir_module_make(ctx);
    if (!m) return NULL;
    const char *name = filename ? filename : "<input>";
    m->source_name_owned = (char *)malloc(strlen(name) + 1);
    if (!m->source_name_owned) { gpuir__oom(ctx, "parse"); gpuir_module_destroy(m); return NULL; }
    memcpy(m->source_name_owned, name, strlen(name) + 1);
    m->source_name = m->source_name_owned;
    gpuir__parser P;
    memset(&P, 0, sizeof P);
    P.m = m;
    P.ctx = ctx;
    P.p = P.line_start = text ? text : "";
    P.end = P.p + len;
    P.line = 1;
    P.pending_dense = -1;
    stbds_sh_new_strdup(P.names);
    ctx->loc_file = m->source_name;
    gpuir_result r = gpuir__parse_module(&P);
    ctx->loc_file = NULL;
    ctx->loc_line = ctx->loc_col = 0;
    stbds_shfree(P.names);
    stbds_arrfree(P.nums);
    stbds_arrfree(P.inums);
    stbds_arrfree(P.is_float);
    stbds_arrfree(P.num_locs);
    if (r == GPUIR_OK) r = gpuir_module_verify(m);
    if (r != GPUIR_OK) { gpuir_module_destroy(m); return NULL; }
    return m;
}

/* Reads a whole file; the bytes are malloc'd. */
static gpuir_result gpuir__read_file(gpuir_ctx *ctx, const char *path, char **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return gpuir__fail(ctx, GPUIR_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    gpuir__str s = {NULL};
    char buf[65536];
    size_t n, total = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        stbds_arrsetlen(s.buf, total + n);
        memcpy(s.buf + total, buf, n);
        total += n;
    }
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed) {
        gpuir__str_free(&s);
        return gpuir__fail(ctx, GPUIR_ERR_IO, "cannot read '%s'", path);
    }
    *data = (char *)malloc(total + 1);
    if (!*data) { gpuir__str_free(&s); return gpuir__oom(ctx, path); }
    if (total) memcpy(*data, s.buf, total);
    (*data)[total] = '\0';
    *size = total;
    gpuir__str_free(&s);
    return GPUIR_OK;
}

GPUIRDEF gpuir_module *gpuir_module_parse_file(gpuir_ctx *ctx, const char *path) {
    char *text;
    size_t size;
    if (ctx->result != GPUIR_OK || gpuir__read_file(ctx, path, &text, &size)) return NULL;
    gpuir_module *m = gpuir_module_parse(ctx, text, size, path);
    free(text);
    return m;
}

/* ====================================================================== */
// >>verify
// Structural and type checks of a whole module: run after parsing and, later,
// after every pass. Reads: ir, build (gpuir__infer). Writes: nothing but the
// canonical form of attributes (sorted axes, normalized axis).

/* Points errors at the op: its source location, or its function and index. */
static void gpuir__verify_locate(gpuir_module *m, const gpuir__func *f, size_t index,
                                 const gpuir__op *op) {
    gpuir_ctx *ctx = m->ctx;
    ctx->loc_file = op && op->line ? m->source_name : NULL;
    ctx->loc_line = op ? op->line : 0;
    ctx->loc_col = op ? op->col : 0;
    snprintf(ctx->loc_note, sizeof ctx->loc_note, "in @%s, op %zu (%s)",
             gpuir__string(m, f->name), index, op ? gpuir_op_name(op->kind) : "?");
}

/* Operands exist, belong to the function and are defined before the op. */
static gpuir_result gpuir__verify_uses(gpuir_module *m, uint32_t fid, const gpuir__op *op,
                                       const uint32_t *defined, gpuir_type *in) {
    for (uint32_t i = 0; i < op->n_operands; i++) {
        uint32_t id = gpuir__op_operand(m, op, i);
        const gpuir__value *v = gpuir__value_at(m, id);
        if (!v || v->func != fid)
            return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "operand #%u (value %u) is not a value "
                               "of this function", i, id);
        if (!defined[id - 1])
            return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "operand #%u is used before it is "
                               "defined", i);
        in[i] = v->type;
    }
    return GPUIR_OK;
}

/* Kernels compute on buffers: no host ops, no launches, nothing returned;
   their parameters are device buffers. */
static gpuir_result gpuir__verify_kernel_op(gpuir_module *m, const gpuir__op *op) {
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    bool host_only = cls == GPUIR__CLASS_LAUNCH || cls == GPUIR__CLASS_COPY || cls == GPUIR__CLASS_WAIT ||
                     op->kind == GPUIR_OP_GPU_ALLOC || op->kind == GPUIR_OP_GPU_DEALLOC ||
                     op->kind == GPUIR_OP_MEMREF_GET_GLOBAL || op->kind == GPUIR_OP_GET_GLOBAL;
    if (host_only)
        return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "%s is a host op; a kernel cannot use it",
                           gpuir_op_name(op->kind));
    if (op->kind == GPUIR_OP_RETURN && op->n_operands)
        return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "a kernel returns nothing");
    if (op->result && gpuir__value_at(m, op->result)->type.kind == GPUIR_TYPE_TENSOR)
        return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "kernels compute on buffers: %s in buffer "
                           "form", gpuir_op_name(op->kind));
    return GPUIR_OK;
}

static gpuir_result gpuir__verify_op(gpuir_module *m, uint32_t fid, uint32_t op_id,
                                     bool last, uint32_t *defined) {
    const gpuir__op *op = gpuir__op_at(m, op_id);
    gpuir_ctx *ctx = m->ctx;
    if (!op || op->kind <= GPUIR_OP_INVALID || op->kind >= GPUIR_OP_COUNT || op->func != fid)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "op %u is not an op of this function", op_id);
    if (gpuir__func_at(m, fid)->kernel && gpuir__verify_kernel_op(m, op)) return ctx->result;
    if ((op->kind == GPUIR_OP_RETURN) != last)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, last ? "the function does not end with a "
                           "return" : "return before the end of the function");
    if (op->n_operands > GPUIR_MAX_OPERANDS)
        return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "%u operands", op->n_operands);
    gpuir_type in[GPUIR_MAX_OPERANDS], out;
    gpuir_result r = gpuir__verify_uses(m, fid, op, defined, in);
    if (r) return r;
    const gpuir__value *res = gpuir__value_at(m, op->result);
    if (res && (res->def_op != op_id || res->func != fid))
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "the result value does not belong to the op");
    if (res && defined[op->result - 1])
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "the result is defined twice");
    gpuir__attrs as = {m, op->attrs, op->n_attrs};
    r = gpuir__infer_op(ctx, op->kind, in, op->n_operands, &as, res ? &res->type : NULL,
                        res != NULL, &out);
    if (!r && res) defined[op->result - 1] = 1;
    return r;
}

static gpuir_result gpuir__verify_func(gpuir_module *m, uint32_t fid, uint32_t *defined) {
    const gpuir__func *f = gpuir__func_at(m, fid);
    gpuir__verify_locate(m, f, 0, NULL);
    if (!f->closed || stbds_arrlenu(f->ops) == 0)
        return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "function has no return");
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++) {
        const gpuir__value *v = gpuir__value_at(m, f->params[i]);
        gpuir_result r = v && v->func == fid && v->def_op == 0 ? gpuir__type_check(m->ctx, &v->type, "param")
                       : gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "parameter %zu is not a parameter", i);
        if (!r && f->kernel && (v->type.kind != GPUIR_TYPE_MEMREF || v->type.space != GPUIR_SPACE_DEVICE)) {
            gpuir__tbuf b;
            r = gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "kernel parameter %%%s is %s, not a device "
                            "buffer", gpuir__string(m, v->name), gpuir__tstr(&b, &v->type));
        }
        if (r) return r;
        defined[f->params[i] - 1] = 1;
    }
    size_t n = stbds_arrlenu(f->ops);
    for (size_t i = 0; i < n; i++) {
        gpuir__verify_locate(m, f, i, gpuir__op_at(m, f->ops[i]));
        gpuir_result r = gpuir__verify_op(m, fid, f->ops[i], i + 1 == n, defined);
        if (r) return r;
    }
    return GPUIR_OK;
}

GPUIRDEF gpuir_result gpuir_module_verify(gpuir_module *m) {
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    if (m->building)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "verify: function @%s is still open",
                           gpuir__string(m, gpuir__func_at(m, m->building)->name));
    uint32_t *defined = (uint32_t *)calloc(stbds_arrlenu(m->values) + 1, sizeof *defined);
    if (!defined) return gpuir__oom(ctx, "verify");
    gpuir_result r = GPUIR_OK;
    for (size_t i = 0; i < stbds_arrlenu(m->funcs) && !r; i++)
        r = gpuir__verify_func(m, (uint32_t)i + 1, defined);
    free(defined);
    ctx->loc_file = NULL;
    ctx->loc_line = ctx->loc_col = 0;
    ctx->loc_note[0] = '\0';
    return r;
}

/* ====================================================================== */
// >>array
// Host arrays: checks, allocation, element access in any dtype, random fill,
// comparison within a tolerance. Reads: util. Writes: arrays.

static double gpuir__load_elem(const void *base, gpuir_dtype dt, size_t i) {
    const unsigned char *p = (const unsigned char *)base;
    switch (dt) {
    case GPUIR_F32: { float v; memcpy(&v, p + i * 4, 4); return v; }
    case GPUIR_F16: { uint16_t v; memcpy(&v, p + i * 2, 2); return gpuir__f16_to_f64(v); }
    case GPUIR_BF16: { uint16_t v; memcpy(&v, p + i * 2, 2); return gpuir__bf16_to_f64(v); }
    case GPUIR_I32: { int32_t v; memcpy(&v, p + i * 4, 4); return v; }
    case GPUIR_I64: { int64_t v; memcpy(&v, p + i * 8, 8); return (double)v; }
    default: return 0.0;
    }
}

static int64_t gpuir__load_int(const gpuir_array *a, size_t i) {
    if (a->dtype == GPUIR_I64) { int64_t v; memcpy(&v, (char *)a->data + i * 8, 8); return v; }
    if (a->dtype == GPUIR_I32) { int32_t v; memcpy(&v, (char *)a->data + i * 4, 4); return v; }
    return (int64_t)gpuir__load_elem(a->data, a->dtype, i);
}

/* Stores an integer, wrapping it to the dtype's width as two's complement. */
static void gpuir__store_int(gpuir_array *a, size_t i, int64_t v) {
    if (a->dtype == GPUIR_I64) memcpy((char *)a->data + i * 8, &v, 8);
    else if (a->dtype == GPUIR_I32) {
        int32_t w = (int32_t)(uint32_t)(uint64_t)v;
        memcpy((char *)a->data + i * 4, &w, 4);
    } else gpuir_array_set(a, i, (double)v);
}

GPUIRDEF double gpuir_array_get(const gpuir_array *a, size_t i) {
    return gpuir__load_elem(a->data, a->dtype, i);
}

/* Float to integer conversion: truncation toward zero, saturating, NaN to 0. */
static int64_t gpuir__f64_to_int(double v, gpuir_dtype dt) {
    double lo = dt == GPUIR_I32 ? (double)INT32_MIN : -9223372036854775808.0;
    double hi = dt == GPUIR_I32 ? (double)INT32_MAX : 9223372036854775807.0;
    if (isnan(v)) return 0;
    if (v <= lo) return dt == GPUIR_I32 ? INT32_MIN : INT64_MIN;
    if (v >= hi) return dt == GPUIR_I32 ? INT32_MAX : INT64_MAX;
    return (int64_t)v;
}

GPUIRDEF void gpuir_array_set(gpuir_array *a, size_t i, double v) {
    unsigned char *p = (unsigned char *)a->data;
    switch (a->dtype) {
    case GPUIR_F32: { float x = (float)v; memcpy(p + i * 4, &x, 4); break; }
    case GPUIR_F16: { uint16_t x = gpuir__f64_to_f16(v); memcpy(p + i * 2, &x, 2); break; }
    case GPUIR_BF16: { uint16_t x = gpuir__f64_to_bf16(v); memcpy(p + i * 2, &x, 2); break; }
    case GPUIR_I32:
    case GPUIR_I64: gpuir__store_int(a, i, gpuir__f64_to_int(v, a->dtype)); break;
    default: break;
    }
}

GPUIRDEF size_t gpuir_array_count(const gpuir_array *a) {
    size_t n = 1;
    for (int i = 0; i < a->rank && i < GPUIR_MAX_RANK; i++) n *= (size_t)a->dims[i];
    return n;
}

static gpuir_type gpuir__array_type(const gpuir_array *a) {
    return gpuir_tensor_type(a->dtype, a->rank, a->dims);
}

/* An array's description is valid and within limits; its byte size out. */
static gpuir_result gpuir__array_check(gpuir_ctx *ctx, const gpuir_array *a, const char *what,
                                       size_t *bytes) {
    gpuir_type t = gpuir__array_type(a);
    if (a->rank < 0 || a->rank > GPUIR_MAX_RANK)
        return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "%s: rank %d is outside 0..%d", what,
                           (int)a->rank, GPUIR_MAX_RANK);
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] < 0)
            return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "%s: dimension %d is %lld", what, i,
                               (long long)a->dims[i]);
    gpuir_result r = gpuir__type_check(ctx, &t, what);
    if (r) return r;
    *bytes = (size_t)gpuir__type_count(&t) * gpuir_dtype_size(a->dtype);
    return GPUIR_OK;
}

GPUIRDEF gpuir_result gpuir_array_alloc(gpuir_ctx *ctx, gpuir_array *a, gpuir_dtype dtype,
                                        int rank, const int64_t *dims) {
    memset(a, 0, sizeof *a);
    if (ctx->result != GPUIR_OK) return ctx->result;
    a->dtype = dtype;
    a->rank = rank;
    for (int i = 0; i < rank && i < GPUIR_MAX_RANK; i++) a->dims[i] = dims[i];
    size_t bytes;
    gpuir_result r = gpuir__array_check(ctx, a, "array", &bytes);
    if (r) { memset(a, 0, sizeof *a); return r; }
    a->data = calloc(bytes ? bytes : 1, 1);
    if (!a->data) { memset(a, 0, sizeof *a); return gpuir__oom(ctx, "array data"); }
    return GPUIR_OK;
}

GPUIRDEF void gpuir_array_release(gpuir_array *a) {
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

static uint64_t gpuir__splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

GPUIRDEF void gpuir_array_fill_random(gpuir_array *a, uint64_t seed) {
    size_t n = gpuir_array_count(a);
    uint64_t state = gpuir__splitmix64(seed);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = gpuir__splitmix64(state + i);
        if (gpuir_dtype_is_float(a->dtype))
            gpuir_array_set(a, i, ldexp((double)(x >> 11), -52) - 1.0);
        else gpuir__store_int(a, i, (int64_t)(x % 33) - 16);
    }
}

GPUIRDEF void gpuir_dtype_tolerance(gpuir_dtype dtype, double *rtol, double *atol) {
    switch (dtype) {
    case GPUIR_F32: *rtol = 1e-5; *atol = 1e-6; break;
    case GPUIR_F16: *rtol = 1e-3; *atol = 1e-2; break;
    case GPUIR_BF16: *rtol = 1.6e-2; *atol = 1e-2; break;
    default: *rtol = 0; *atol = 0; break;
    }
}

/* Writes a linear index as [i, j, ...] for messages. */
static void gpuir__index_str(const gpuir_array *a, size_t linear, char *buf, size_t size) {
    int64_t idx[GPUIR_MAX_RANK];
    for (int i = a->rank - 1; i >= 0; i--) {
        idx[i] = a->dims[i] ? (int64_t)(linear % (size_t)a->dims[i]) : 0;
        linear = a->dims[i] ? linear / (size_t)a->dims[i] : 0;
    }
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < a->rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)idx[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

static bool gpuir__close(double got, double want, double rtol, double atol) {
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (isinf(got) || isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

GPUIRDEF gpuir_result gpuir_array_compare(gpuir_ctx *ctx, const gpuir_array *got,
                                          const gpuir_array *want, double rtol, double atol) {
    if (ctx->result != GPUIR_OK) return ctx->result;
    size_t bytes;
    gpuir_result r = gpuir__array_check(ctx, got, "compare: got", &bytes);
    if (!r) r = gpuir__array_check(ctx, want, "compare: expected", &bytes);
    if (r) return r;
    gpuir_type tg = gpuir__array_type(got), tw = gpuir__array_type(want);
    if (!gpuir_type_equal(tg, tw)) {
        gpuir__tbuf bg, bw;
        return gpuir__fail(ctx, GPUIR_ERR_MISMATCH, "got %s, expected %s", gpuir__tstr(&bg, &tg),
                           gpuir__tstr(&bw, &tw));
    }
    size_t n = gpuir_array_count(got);
    bool is_float = gpuir_dtype_is_float(got->dtype);
    for (size_t i = 0; i < n; i++) {
        bool ok = is_float ? gpuir__close(gpuir_array_get(got, i), gpuir_array_get(want, i), rtol, atol)
                           : gpuir__load_int(got, i) == gpuir__load_int(want, i);
        if (ok) continue;
        char idx[200];
        gpuir__index_str(got, i, idx, sizeof idx);
        return gpuir__fail(ctx, GPUIR_ERR_MISMATCH, "element %s: got %.9g, expected %.9g "
                           "(rtol %g, atol %g)", idx, gpuir_array_get(got, i),
                           gpuir_array_get(want, i), rtol, atol);
    }
    return GPUIR_OK;
}

/* ====================================================================== */
// >>ref
// The reference interpreter: runs tensor-level functions on the CPU, one op at
// a time, on concrete shapes. Floats compute in double and round once to the
// dtype; matmul and reductions accumulate in double (ints in 64 bits). It is
// the oracle every backend is compared with. Reads: ir, build, array.

/* A buffer behind memref values: allocated by the program (owned) or lent
   by the caller or a global. Freed buffers stay in the table, not live, so
   a later use is caught. */
typedef struct gpuir__ref_buffer {
    void *data;
    bool owned, live;
    int32_t space;
    uint32_t alloc_op;        /* the op that allocated it (0: lent) */
} gpuir__ref_buffer;

typedef struct gpuir__ref {
    gpuir_module *m;
    gpuir_ctx *ctx;
    gpuir_array *vals;        /* per value id - 1; for memrefs, a view of the buffer */
    bool *borrowed;           /* data owned by the caller, a global or a buffer */
    uint32_t *last_use;       /* per value: index of the op that reads it last */
    uint32_t *buf_of;         /* per memref value: buffer index + 1 */
    gpuir__ref_buffer *bufs;  /* stb_ds array */
} gpuir__ref;

/* Strides of `a` seen from an output of rank r with dims `dims`: right
   aligned, 0 along broadcast dims. */
static void gpuir__bcast_strides(const gpuir_array *a, int r, const int64_t *dims,
                                 int64_t *strides) {
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        int j = a->rank - r + i;
        strides[i] = j < 0 || (a->dims[j] == 1 && dims[i] != 1) ? 0 : s;
        if (j >= 0) s *= a->dims[j];
    }
}

/* Odometer over an index space: advances idx and the offsets of k arrays. */
static void gpuir__odometer_next(int r, const int64_t *dims, int64_t *idx, int k,
                                 int64_t strides[][GPUIR_MAX_RANK], int64_t *off) {
    for (int i = r - 1; i >= 0; i--) {
        idx[i]++;
        for (int j = 0; j < k; j++) off[j] += strides[j][i];
        if (idx[i] < dims[i]) return;
        for (int j = 0; j < k; j++) off[j] -= strides[j][i] * dims[i];
        idx[i] = 0;
    }
}

static double gpuir__ref_unary_f(gpuir_op_kind k, double x) {
    switch (k) {
    case GPUIR_OP_NEG: return -x;
    case GPUIR_OP_ABS: return fabs(x);
    case GPUIR_OP_EXP: return exp(x);
    case GPUIR_OP_LOG: return log(x);
    case GPUIR_OP_SQRT: return sqrt(x);
    case GPUIR_OP_RSQRT: return 1.0 / sqrt(x);
    case GPUIR_OP_TANH: return tanh(x);
    case GPUIR_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case GPUIR_OP_RELU: return x > 0 ? x : isnan(x) ? x : 0.0;
    case GPUIR_OP_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case GPUIR_OP_SILU: return x / (1.0 + exp(-x));
    default: return 0.0;
    }
}

static int64_t gpuir__ref_unary_i(gpuir_op_kind k, int64_t x) {
    switch (k) {
    case GPUIR_OP_NEG: return (int64_t)(0 - (uint64_t)x);
    case GPUIR_OP_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case GPUIR_OP_RELU: return x > 0 ? x : 0;
    default: return 0;
    }
}

static double gpuir__ref_binary_f(gpuir_op_kind k, double a, double b) {
    switch (k) {
    case GPUIR_OP_ADD: return a + b;
    case GPUIR_OP_SUB: return a - b;
    case GPUIR_OP_MUL: return a * b;
    case GPUIR_OP_DIV: return a / b;
    case GPUIR_OP_MAX: return isnan(a) || isnan(b) ? (double)NAN : a > b ? a : b;
    case GPUIR_OP_MIN: return isnan(a) || isnan(b) ? (double)NAN : a < b ? a : b;
    case GPUIR_OP_POW: return pow(a, b);
    default: return 0.0;
    }
}

/* Integer arithmetic wraps (stored truncated to the dtype); x / 0 is 0 and
   division truncates toward zero. */
static int64_t gpuir__ref_binary_i(gpuir_op_kind k, int64_t a, int64_t b, gpuir_dtype dt) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t min = dt == GPUIR_I32 ? INT32_MIN : INT64_MIN;
    switch (k) {
    case GPUIR_OP_ADD: return (int64_t)(ua + ub);
    case GPUIR_OP_SUB: return (int64_t)(ua - ub);
    case GPUIR_OP_MUL: return (int64_t)(ua * ub);
    case GPUIR_OP_DIV: return b == 0 ? 0 : (a == min && b == -1) ? min : a / b;
    case GPUIR_OP_MAX: return a > b ? a : b;
    case GPUIR_OP_MIN: return a < b ? a : b;
    default: return 0;
    }
}

static void gpuir__ref_unary(const gpuir_array *x, gpuir_array *out, gpuir_op_kind k) {
    size_t n = gpuir_array_count(out);
    bool is_float = gpuir_dtype_is_float(x->dtype);
    for (size_t i = 0; i < n; i++) {
        if (is_float) gpuir_array_set(out, i, gpuir__ref_unary_f(k, gpuir_array_get(x, i)));
        else gpuir__store_int(out, i, gpuir__ref_unary_i(k, gpuir__load_int(x, i)));
    }
}

static void gpuir__ref_binary(const gpuir_array *a, const gpuir_array *b, gpuir_array *out,
                              gpuir_op_kind k) {
    int64_t strides[2][GPUIR_MAX_RANK], idx[GPUIR_MAX_RANK] = {0}, off[2] = {0, 0};
    gpuir__bcast_strides(a, out->rank, out->dims, strides[0]);
    gpuir__bcast_strides(b, out->rank, out->dims, strides[1]);
    size_t n = gpuir_array_count(out);
    bool is_float = gpuir_dtype_is_float(out->dtype);
    for (size_t i = 0; i < n; i++) {
        if (is_float)
            gpuir_array_set(out, i, gpuir__ref_binary_f(k, gpuir_array_get(a, (size_t)off[0]),
                                                        gpuir_array_get(b, (size_t)off[1])));
        else
            gpuir__store_int(out, i, gpuir__ref_binary_i(k, gpuir__load_int(a, (size_t)off[0]),
                                                         gpuir__load_int(b, (size_t)off[1]), out->dtype));
        gpuir__odometer_next(out->rank, out->dims, idx, 2, strides, off);
    }
}

/* Copies x into out under NumPy broadcasting (also serves reshape: same rank
   and dims would make it a plain copy, so reshape uses memcpy instead). */
static void gpuir__ref_broadcast(const gpuir_array *x, gpuir_array *out) {
    int64_t strides[1][GPUIR_MAX_RANK], idx[GPUIR_MAX_RANK] = {0}, off[1] = {0};
    gpuir__bcast_strides(x, out->rank, out->dims, strides[0]);
    size_t n = gpuir_array_count(out), size = gpuir_dtype_size(out->dtype);
    for (size_t i = 0; i < n; i++) {
        memcpy((char *)out->data + i * size, (const char *)x->data + (size_t)off[0] * size, size);
        gpuir__odometer_next(out->rank, out->dims, idx, 1, strides, off);
    }
}

static void gpuir__ref_cast(const gpuir_array *x, gpuir_array *out) {
    size_t n = gpuir_array_count(out);
    for (size_t i = 0; i < n; i++) {
        if (gpuir_dtype_is_float(x->dtype)) gpuir_array_set(out, i, gpuir_array_get(x, i));
        else if (gpuir_dtype_is_float(out->dtype)) gpuir_array_set(out, i, gpuir__i64_to_f64_odd(gpuir__load_int(x, i)));
        else gpuir__store_int(out, i, gpuir__load_int(x, i));
    }
}

static void gpuir__ref_transpose(const gpuir_array *x, gpuir_array *out, const int64_t *perm) {
    int64_t in_strides[GPUIR_MAX_RANK], strides[1][GPUIR_MAX_RANK];
    int64_t idx[GPUIR_MAX_RANK] = {0}, off[1] = {0}, s = 1;
    for (int i = x->rank - 1; i >= 0; i--) { in_strides[i] = s; s *= x->dims[i]; }
    for (int i = 0; i < out->rank; i++) strides[0][i] = in_strides[perm[i]];
    size_t n = gpuir_array_count(out), size = gpuir_dtype_size(out->dtype);
    for (size_t i = 0; i < n; i++) {
        memcpy((char *)out->data + i * size, (const char *)x->data + (size_t)off[0] * size, size);
        gpuir__odometer_next(out->rank, out->dims, idx, 1, strides, off);
    }
}

/* out[..., m, n] = sum_k a[..., m, k] * b[..., k, n], batch dims broadcast. */
static void gpuir__ref_matmul(const gpuir_array *a, const gpuir_array *b, gpuir_array *out,
                              bool ta, bool tb) {
    int r = out->rank;
    int64_t M = out->dims[r - 2], N = out->dims[r - 1];
    int64_t K = a->dims[a->rank - (ta ? 2 : 1)];
    int64_t sam = ta ? 1 : K, sak = ta ? M : 1, sbk = tb ? 1 : N, sbn = tb ? K : 1;
    gpuir_array ab = *a, bb = *b, ob = *out;      /* batch-only views */
    ab.rank -= 2; bb.rank -= 2; ob.rank -= 2;
    int64_t strides[2][GPUIR_MAX_RANK], idx[GPUIR_MAX_RANK] = {0}, off[2] = {0, 0};
    gpuir__bcast_strides(&ab, ob.rank, ob.dims, strides[0]);
    gpuir__bcast_strides(&bb, ob.rank, ob.dims, strides[1]);
    size_t batches = gpuir_array_count(&ob);
    bool is_float = gpuir_dtype_is_float(out->dtype);
    for (size_t bi = 0; bi < batches; bi++) {
        size_t a0 = (size_t)(off[0] * M * K), b0 = (size_t)(off[1] * K * N), o0 = bi * (size_t)(M * N);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                uint64_t iacc = 0;
                for (int64_t k = 0; k < K; k++) {
                    size_t ia = a0 + (size_t)(i * sam + k * sak), ib = b0 + (size_t)(k * sbk + j * sbn);
                    if (is_float) acc += gpuir_array_get(a, ia) * gpuir_array_get(b, ib);
                    else iacc += (uint64_t)gpuir__load_int(a, ia) * (uint64_t)gpuir__load_int(b, ib);
                }
                if (is_float) gpuir_array_set(out, o0 + (size_t)(i * N + j), acc);
                else gpuir__store_int(out, o0 + (size_t)(i * N + j), (int64_t)iacc);
            }
        gpuir__odometer_next(ob.rank, ob.dims, idx, 2, strides, off);
    }
}

/* Reduces x over the marked axes into out (keepdims or not: same order). */
static gpuir_result gpuir__ref_reduce(gpuir_ctx *ctx, const gpuir_array *x, gpuir_array *out,
                                      gpuir_op_kind k, const bool *reduced) {
    size_t n_out = gpuir_array_count(out), n_in = gpuir_array_count(x);
    bool is_float = gpuir_dtype_is_float(x->dtype);
    double *acc = (double *)calloc(n_out + 1, sizeof *acc);
    int64_t *iacc = (int64_t *)calloc(n_out + 1, sizeof *iacc);
    bool *seen = (bool *)calloc(n_out + 1, sizeof *seen);
    int64_t strides[1][GPUIR_MAX_RANK], idx[GPUIR_MAX_RANK] = {0}, off[1] = {0}, s = 1;
    gpuir_result r = !acc || !iacc || !seen ? gpuir__oom(ctx, "reduction") : GPUIR_OK;
    for (int i = x->rank - 1; i >= 0; i--) {        /* output offset of each input dim */
        strides[0][i] = reduced[i] ? 0 : s;
        if (!reduced[i]) s *= x->dims[i];
    }
    for (size_t i = 0; i < n_in && !r; i++) {
        size_t o = (size_t)off[0];
        if (is_float) {
            double v = gpuir_array_get(x, i);
            if (k != GPUIR_OP_REDUCE_MAX) acc[o] += v;
            else if (!seen[o] || isnan(v) || (!isnan(acc[o]) && v > acc[o])) acc[o] = v;
        } else {
            int64_t v = gpuir__load_int(x, i);
            if (k != GPUIR_OP_REDUCE_MAX) iacc[o] = (int64_t)((uint64_t)iacc[o] + (uint64_t)v);
            else if (!seen[o] || v > iacc[o]) iacc[o] = v;
        }
        seen[o] = true;
        gpuir__odometer_next(x->rank, x->dims, idx, 1, strides, off);
    }
    size_t count = n_out ? n_in / n_out : 0;      /* elements per output (0: empty axes) */
    bool mean = k == GPUIR_OP_REDUCE_MEAN, max = k == GPUIR_OP_REDUCE_MAX;
    int64_t int_min = x->dtype == GPUIR_I32 ? INT32_MIN : INT64_MIN;
    for (size_t o = 0; o < n_out && !r; o++) {
        if (max && !seen[o]) {                    /* the identity of max */
            if (is_float) gpuir_array_set(out, o, -INFINITY);
            else gpuir__store_int(out, o, int_min);
        } else if (is_float) {
            gpuir_array_set(out, o, mean ? acc[o] / (double)count : acc[o]);   /* 0/0: NaN */
        } else {
            gpuir__store_int(out, o, mean ? (count ? iacc[o] / (int64_t)count : 0) : iacc[o]);
        }
    }
    free(acc);
    free(iacc);
    free(seen);
    return r;
}

/* softmax along `axis`: exp(x - max) / sum(exp(x - max)), in double. */
static void gpuir__ref_softmax(const gpuir_array *x, gpuir_array *out, int64_t axis) {
    size_t outer = 1, inner = 1, len = (size_t)x->dims[axis];
    for (int64_t i = 0; i < axis; i++) outer *= (size_t)x->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++) inner *= (size_t)x->dims[i];
    for (size_t o = 0; o < outer; o++)
        for (size_t in = 0; in < inner; in++) {
            size_t base = o * len * inner + in;
            double mx = -INFINITY, sum = 0;
            for (size_t l = 0; l < len; l++) {
                double v = gpuir_array_get(x, base + l * inner);
                mx = isnan(v) || v > mx ? v : mx;
            }
            for (size_t l = 0; l < len; l++) sum += exp(gpuir_array_get(x, base + l * inner) - mx);
            for (size_t l = 0; l < len; l++)
                gpuir_array_set(out, base + l * inner, exp(gpuir_array_get(x, base + l * inner) - mx) / sum);
        }
}

static void gpuir__ref_constant(const gpuir_module *m, const gpuir__attr *v, gpuir_array *out) {
    size_t n = gpuir_array_count(out), size = gpuir_dtype_size(out->dtype);
    if (v->kind == GPUIR__ATTR_DENSE) {
        if (n) memcpy(out->data, m->bytes + v->off, n * size);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (v->kind == GPUIR__ATTR_INT) gpuir__store_int(out, i, v->i);
        else gpuir_array_set(out, i, v->f);
    }
}

/* The declared result type with its ? dims filled in from the operands. */
static gpuir_result gpuir__ref_resolve(gpuir__ref *R, const gpuir__op *op, const gpuir_type *in,
                                       gpuir_type *given) {
    *given = gpuir__value_at(R->m, op->result)->type;
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    if (cls == GPUIR__CLASS_CAST) {
        gpuir_dtype dt = given->dtype;
        *given = in[0];
        given->dtype = dt;
    } else if (cls == GPUIR__CLASS_BROADCAST) {
        for (int i = 0; i < given->rank; i++) {
            int j = in[0].rank - given->rank + i;
            if (given->dims[i] == GPUIR_DYN && j >= 0) given->dims[i] = in[0].dims[j];
        }
    } else if (cls == GPUIR__CLASS_RESHAPE && !gpuir__type_is_static(given)) {
        int64_t known = 1, total = gpuir__type_count(&in[0]);
        int dyn = 0;
        for (int i = 0; i < given->rank; i++)
            if (given->dims[i] == GPUIR_DYN) dyn = i; else known *= given->dims[i];
        if (known == 0 || total % known != 0) {
            gpuir__tbuf bx, bt;
            return gpuir__fail(R->ctx, GPUIR_ERR_SHAPE, "reshape: %s does not fit %s",
                               gpuir__tstr(&bx, &in[0]), gpuir__tstr(&bt, given));
        }
        given->dims[dyn] = total / known;
    }
    return GPUIR_OK;
}

/* The concrete result type of an op on concrete operands. */
static gpuir_result gpuir__ref_result_type(gpuir__ref *R, const gpuir__op *op,
                                           const gpuir_type *in, gpuir_type *out) {
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    bool takes_given = cls == GPUIR__CLASS_RESHAPE || cls == GPUIR__CLASS_BROADCAST ||
                       cls == GPUIR__CLASS_CAST || cls == GPUIR__CLASS_CONSTANT ||
                       cls == GPUIR__CLASS_GLOBAL;
    gpuir_type given;
    gpuir_result r = gpuir__ref_resolve(R, op, in, &given);
    gpuir__attrs as = {R->m, op->attrs, op->n_attrs};
    if (!r) r = gpuir__infer(R->ctx, op->kind, in, op->n_operands, &as, takes_given ? &given : NULL, out);
    if (r) return r;
    const gpuir_type *declared = &gpuir__value_at(R->m, op->result)->type;
    bool fits = out->rank == declared->rank;
    for (int i = 0; fits && i < out->rank; i++)
        fits = declared->dims[i] == GPUIR_DYN || declared->dims[i] == out->dims[i];
    if (!fits) {
        gpuir__tbuf bo, bd;
        return gpuir__fail(R->ctx, GPUIR_ERR_SHAPE, "%s: the result is %s at run time, declared %s",
                           gpuir_op_name(op->kind), gpuir__tstr(&bo, out), gpuir__tstr(&bd, declared));
    }
    return GPUIR_OK;
}

static gpuir_result gpuir__ref_global(gpuir__ref *R, const gpuir__op *op, gpuir_array *out) {
    const gpuir__attr *sym = gpuir__attr_find(R->m, op, "name");
    const char *name = gpuir__string(R->m, sym->off);
    const gpuir__global *g = &R->m->globals[gpuir__find_global(R->m, name) - 1];
    if (!g->data)
        return gpuir__fail(R->ctx, GPUIR_ERR_NOT_FOUND, "global @%s is not bound (see "
                           "gpuir_module_bind_global)", name);
    out->data = g->data;
    R->borrowed[op->result - 1] = true;
    return GPUIR_OK;
}

/* Computes a computing op from its input arrays x into `out` (allocated). */
static gpuir_result gpuir__ref_compute(gpuir__ref *R, const gpuir__op *op,
                                       const gpuir_array *const *x, gpuir_array *out) {
    gpuir_result r = GPUIR_OK;
    const gpuir__attr *a;
    switch (gpuir__info(op->kind)->cls) {
    case GPUIR__CLASS_UNARY: gpuir__ref_unary(x[0], out, op->kind); break;
    case GPUIR__CLASS_BINARY: gpuir__ref_binary(x[0], x[1], out, op->kind); break;
    case GPUIR__CLASS_MATMUL:
        gpuir__ref_matmul(x[0], x[1], out, gpuir__op_flag(R->m, op, "transpose_a"),
                          gpuir__op_flag(R->m, op, "transpose_b"));
        break;
    case GPUIR__CLASS_REDUCE: {
        bool reduced[GPUIR_MAX_RANK] = {false};
        a = gpuir__attr_find(R->m, op, "axes");
        for (uint32_t i = 0; i < a->n; i++) reduced[R->m->ints[a->off + i]] = true;
        r = gpuir__ref_reduce(R->ctx, x[0], out, op->kind, reduced);
        break;
    }
    case GPUIR__CLASS_TRANSPOSE:
        gpuir__ref_transpose(x[0], out, gpuir__ints_at(R->m, gpuir__attr_find(R->m, op, "perm")->off));
        break;
    case GPUIR__CLASS_RESHAPE:
        if (gpuir_array_count(out))
            memcpy(out->data, x[0]->data, gpuir_array_count(out) * gpuir_dtype_size(out->dtype));
        break;
    case GPUIR__CLASS_BROADCAST: gpuir__ref_broadcast(x[0], out); break;
    case GPUIR__CLASS_CAST: gpuir__ref_cast(x[0], out); break;
    case GPUIR__CLASS_CONSTANT: gpuir__ref_constant(R->m, gpuir__attr_find(R->m, op, "value"), out); break;
    case GPUIR__CLASS_SOFTMAX: gpuir__ref_softmax(x[0], out, gpuir__attr_find(R->m, op, "axis")->i); break;
    default: break;
    }
    return r;
}

/* Computes one tensor op's result into R->vals. */
static gpuir_result gpuir__ref_exec(gpuir__ref *R, const gpuir__op *op) {
    const gpuir_array *x[GPUIR_MAX_OPERANDS];
    gpuir_type in[GPUIR_MAX_OPERANDS], t;
    for (uint32_t i = 0; i < op->n_operands; i++) {
        x[i] = &R->vals[gpuir__op_operand(R->m, op, i) - 1];
        in[i] = gpuir__array_type(x[i]);
    }
    gpuir_result r = gpuir__ref_result_type(R, op, in, &t);
    if (r) return r;
    gpuir_array *out = &R->vals[op->result - 1];
    if (op->kind == GPUIR_OP_GET_GLOBAL) {
        out->dtype = t.dtype;
        out->rank = t.rank;
        memcpy(out->dims, t.dims, sizeof out->dims);
        return gpuir__ref_global(R, op, out);
    }
    if ((r = gpuir_array_alloc(R->ctx, out, t.dtype, t.rank, t.dims)) != GPUIR_OK) return r;
    return gpuir__ref_compute(R, op, x, out);
}

/* ---- buffers ---- */

/* Registers a buffer and makes value v (of memref type t) a view of it. */
static void gpuir__ref_bind_buffer(gpuir__ref *R, uint32_t v, const gpuir_type *t, void *data,
                                   bool owned, uint32_t alloc_op) {
    gpuir__ref_buffer b;
    b.data = data;
    b.owned = owned;
    b.live = true;
    b.space = t->space;
    b.alloc_op = alloc_op;
    stbds_arrput(R->bufs, b);
    gpuir_array *a = &R->vals[v - 1];
    memset(a, 0, sizeof *a);
    a->dtype = t->dtype;
    a->rank = t->rank;
    memcpy(a->dims, t->dims, sizeof a->dims);
    a->data = data;
    R->borrowed[v - 1] = true;
    R->buf_of[v - 1] = (uint32_t)stbds_arrlenu(R->bufs);
}

/* Makes value `to` another view of the buffer behind `from`. */
static void gpuir__ref_alias(gpuir__ref *R, uint32_t to, uint32_t from) {
    R->vals[to - 1] = R->vals[from - 1];
    R->borrowed[to - 1] = true;
    R->buf_of[to - 1] = R->buf_of[from - 1];
}

/* The buffer behind a memref value; an error once it has been freed. */
static gpuir_result gpuir__ref_live(gpuir__ref *R, uint32_t v, gpuir__ref_buffer **out) {
    uint32_t b = R->buf_of[v - 1];
    if (!b)
        return gpuir__fail(R->ctx, GPUIR_ERR_VERIFY, "a memref operand has no buffer");
    *out = &R->bufs[b - 1];
    if (!(*out)->live)
        return gpuir__fail(R->ctx, GPUIR_ERR_VERIFY, "use of a buffer freed earlier (allocated "
                           "by op %u)", (*out)->alloc_op);
    return GPUIR_OK;
}

/* Fresh buffers hold a poison pattern (NaN for floats), so that a read of
   data that was never written or copied in shows in the results. */
static void gpuir__ref_poison(gpuir_array *a) {
    size_t n = gpuir_array_count(a);
    if (gpuir_dtype_is_float(a->dtype))
        for (size_t i = 0; i < n; i++) gpuir_array_set(a, i, (double)NAN);
    else
        memset(a->data, 0x5a, n * gpuir_dtype_size(a->dtype));
}

static gpuir_result gpuir__ref_alloc(gpuir__ref *R, const gpuir__op *op, uint32_t op_id) {
    const gpuir_type *t = &gpuir__value_at(R->m, op->result)->type;
    gpuir_array a;
    gpuir_result r = gpuir_array_alloc(R->ctx, &a, t->dtype, t->rank, t->dims);
    if (r) return r;
    gpuir__ref_poison(&a);
    gpuir__ref_bind_buffer(R, op->result, t, a.data, true, op_id);
    return GPUIR_OK;
}

static gpuir_result gpuir__ref_dealloc(gpuir__ref *R, const gpuir__op *op) {
    gpuir__ref_buffer *b;
    gpuir_result r = gpuir__ref_live(R, gpuir__op_operand(R->m, op, 0), &b);
    if (r) return r;
    if (!b->owned)
        return gpuir__fail(R->ctx, GPUIR_ERR_VERIFY, "%s of a buffer the program did not "
                           "allocate", gpuir_op_name(op->kind));
    free(b->data);
    b->data = NULL;
    b->live = false;
    return GPUIR_OK;
}

/* memref.copy %src, %dst and gpu.memcpy %dst, %src */
static gpuir_result gpuir__ref_copy(gpuir__ref *R, const gpuir__op *op) {
    uint32_t dst = gpuir__op_operand(R->m, op, op->kind == GPUIR_OP_GPU_MEMCPY ? 0 : 1);
    uint32_t src = gpuir__op_operand(R->m, op, op->kind == GPUIR_OP_GPU_MEMCPY ? 1 : 0);
    gpuir__ref_buffer *bd, *bs;
    gpuir_result r = gpuir__ref_live(R, dst, &bd);
    if (!r) r = gpuir__ref_live(R, src, &bs);
    if (r) return r;
    size_t bytes = gpuir_array_count(&R->vals[src - 1]) * gpuir_dtype_size(R->vals[src - 1].dtype);
    if (bytes) memmove(bd->data, bs->data, bytes);
    return GPUIR_OK;
}

static gpuir_result gpuir__ref_memref_global(gpuir__ref *R, const gpuir__op *op) {
    const gpuir__attr *sym = gpuir__attr_find(R->m, op, "name");
    const char *name = gpuir__string(R->m, sym->off);
    const gpuir__global *g = &R->m->globals[gpuir__find_global(R->m, name) - 1];
    if (!g->data)
        return gpuir__fail(R->ctx, GPUIR_ERR_NOT_FOUND, "global @%s is not bound (see "
                           "gpuir_module_bind_global)", name);
    gpuir__ref_bind_buffer(R, op->result, &gpuir__value_at(R->m, op->result)->type, g->data, false, 0);
    return GPUIR_OK;
}

/* A computing op in buffer form: computed from the inputs' buffers into a
   fresh array, then copied into the destination (which may alias an input). */
static gpuir_result gpuir__ref_exec_dps(gpuir__ref *R, const gpuir__op *op) {
    const gpuir_array *x[GPUIR_MAX_OPERANDS];
    gpuir__ref_buffer *b;
    gpuir_result r = GPUIR_OK;
    for (uint32_t i = 0; i < op->n_operands && !r; i++) {
        uint32_t v = gpuir__op_operand(R->m, op, i);
        r = gpuir__ref_live(R, v, &b);
        x[i] = &R->vals[v - 1];
    }
    if (r) return r;
    gpuir_array *dst = (gpuir_array *)x[op->n_operands - 1], tmp;
    if ((r = gpuir_array_alloc(R->ctx, &tmp, dst->dtype, dst->rank, dst->dims)) != GPUIR_OK) return r;
    r = gpuir__ref_compute(R, op, x, &tmp);
    size_t bytes = gpuir_array_count(dst) * gpuir_dtype_size(dst->dtype);
    if (!r && bytes) memcpy(dst->data, tmp.data, bytes);
    gpuir_array_release(&tmp);
    return r;
}

static gpuir_result gpuir__ref_exec_any(gpuir__ref *R, const gpuir__op *op, uint32_t op_id);

/* Runs a kernel's body on the launch's buffers; its temporaries die with it. */
static gpuir_result gpuir__ref_launch(gpuir__ref *R, const gpuir__op *op) {
    const gpuir__attr *sym = gpuir__attr_find(R->m, op, "kernel");
    const gpuir__func *k = gpuir__func_at(R->m, gpuir__launch_target(R->m, gpuir__string(R->m, sym->off)));
    gpuir__ref_buffer *b;
    gpuir_result r = GPUIR_OK;
    for (uint32_t i = 0; i < op->n_operands && !r; i++) {
        uint32_t v = gpuir__op_operand(R->m, op, i);
        if ((r = gpuir__ref_live(R, v, &b)) == GPUIR_OK) gpuir__ref_alias(R, k->params[i], v);
    }
    size_t first_temp = stbds_arrlenu(R->bufs);
    for (size_t i = 0; !r && i + 1 < stbds_arrlenu(k->ops); i++)
        r = gpuir__ref_exec_any(R, gpuir__op_at(R->m, k->ops[i]), k->ops[i]);
    for (size_t i = first_temp; i < stbds_arrlenu(R->bufs); i++)
        if (R->bufs[i].owned && R->bufs[i].live) {
            free(R->bufs[i].data);
            R->bufs[i].live = false;
        }
    return r;
}

/* Executes any op: tensor ops, their buffer form, and the buffer ops. */
static gpuir_result gpuir__ref_exec_any(gpuir__ref *R, const gpuir__op *op, uint32_t op_id) {
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    if (gpuir__class_computes(cls)) return op->result ? gpuir__ref_exec(R, op) : gpuir__ref_exec_dps(R, op);
    switch (cls) {
    case GPUIR__CLASS_GLOBAL:
        return op->kind == GPUIR_OP_GET_GLOBAL ? gpuir__ref_exec(R, op) : gpuir__ref_memref_global(R, op);
    case GPUIR__CLASS_ALLOC: return gpuir__ref_alloc(R, op, op_id);
    case GPUIR__CLASS_DEALLOC: return gpuir__ref_dealloc(R, op);
    case GPUIR__CLASS_COPY: return gpuir__ref_copy(R, op);
    case GPUIR__CLASS_LAUNCH: return gpuir__ref_launch(R, op);
    default: return GPUIR_OK;                   /* gpu.wait: everything is in order */
    }
}

/* Checks each input against its parameter and lends it to the run. */
static gpuir_result gpuir__ref_bind_inputs(gpuir__ref *R, const gpuir__func *f, size_t n,
                                           const gpuir_array *inputs) {
    size_t want = stbds_arrlenu(f->params);
    if (n != want)
        return gpuir__fail(R->ctx, GPUIR_ERR_INVALID_ARGUMENT, "@%s takes %zu inputs, %zu given",
                           gpuir__string(R->m, f->name), want, n);
    for (size_t i = 0; i < n; i++) {
        char what[48];
        size_t bytes;
        snprintf(what, sizeof what, "input #%zu", i);
        gpuir_result r = gpuir__array_check(R->ctx, &inputs[i], what, &bytes);
        if (r) return r;
        if (!inputs[i].data && bytes)
            return gpuir__fail(R->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s has no data", what);
        gpuir_type want_t = gpuir__value_at(R->m, f->params[i])->type, got = gpuir__array_type(&inputs[i]);
        bool fits = got.dtype == want_t.dtype && got.rank == want_t.rank;
        for (int d = 0; fits && d < got.rank; d++)
            fits = want_t.dims[d] == GPUIR_DYN || want_t.dims[d] == got.dims[d];
        if (!fits) {
            gpuir__tbuf bw, bg;
            return gpuir__fail(R->ctx, got.dtype != want_t.dtype ? GPUIR_ERR_DTYPE : GPUIR_ERR_SHAPE,
                               "%s: parameter %%%s is %s, the array is %s", what,
                               gpuir__string(R->m, gpuir__value_at(R->m, f->params[i])->name),
                               gpuir__tstr(&bw, &want_t), gpuir__tstr(&bg, &got));
        }
        if (want_t.kind == GPUIR_TYPE_MEMREF) {      /* the caller lends the buffer */
            gpuir_type t = want_t;
            memcpy(t.dims, got.dims, sizeof t.dims);
            gpuir__ref_bind_buffer(R, f->params[i], &t, inputs[i].data, false, 0);
            continue;
        }
        R->vals[f->params[i] - 1] = inputs[i];
        R->borrowed[f->params[i] - 1] = true;
    }
    return GPUIR_OK;
}

/* Hands the returned values to the caller: moved when owned, else copied. */
static gpuir_result gpuir__ref_take_outputs(gpuir__ref *R, const gpuir__op *ret, size_t n,
                                            gpuir_array *outputs) {
    if (n != ret->n_operands)
        return gpuir__fail(R->ctx, GPUIR_ERR_INVALID_ARGUMENT, "the function returns %u values, "
                           "%zu outputs given", ret->n_operands, n);
    for (size_t i = 0; i < n; i++) {
        uint32_t v = gpuir__op_operand(R->m, ret, (uint32_t)i) - 1;
        gpuir_array *src = &R->vals[v];
        gpuir__ref_buffer *b;
        if (R->buf_of[v] && gpuir__ref_live(R, v + 1, &b)) return R->ctx->result;
        if (!R->borrowed[v]) {
            outputs[i] = *src;
            R->borrowed[v] = true;       /* moved: a second return copies it */
            continue;
        }
        gpuir_result r = gpuir_array_alloc(R->ctx, &outputs[i], src->dtype, src->rank, src->dims);
        if (r) return r;
        size_t bytes = gpuir_array_count(src) * gpuir_dtype_size(src->dtype);
        if (bytes) memcpy(outputs[i].data, src->data, bytes);
    }
    return GPUIR_OK;
}

/* Every buffer the program allocated is freed (or returned) by its end. */
static gpuir_result gpuir__ref_check_leaks(gpuir__ref *R) {
    for (size_t i = 0; i < stbds_arrlenu(R->bufs); i++) {
        const gpuir__ref_buffer *b = &R->bufs[i];
        if (!b->owned || !b->live) continue;
        const gpuir__op *op = gpuir__op_at(R->m, b->alloc_op);
        return gpuir__fail(R->ctx, GPUIR_ERR_VERIFY, "the buffer allocated by op %u (%s) is "
                           "never freed", b->alloc_op, op ? gpuir_op_name(op->kind) : "?");
    }
    return GPUIR_OK;
}

static gpuir_result gpuir__ref_run_func(gpuir__ref *R, const gpuir__func *f, size_t n_out,
                                        gpuir_array *outputs) {
    size_t n_ops = stbds_arrlenu(f->ops);
    for (size_t i = 0; i < n_ops; i++) {
        const gpuir__op *op = gpuir__op_at(R->m, f->ops[i]);
        for (uint32_t k = 0; k < op->n_operands; k++)
            R->last_use[gpuir__op_operand(R->m, op, k) - 1] = (uint32_t)i + 1;
    }
    for (size_t i = 0; i + 1 < n_ops; i++) {
        const gpuir__op *op = gpuir__op_at(R->m, f->ops[i]);
        gpuir__verify_locate(R->m, f, i, op);
        gpuir_result r = gpuir__ref_exec_any(R, op, f->ops[i]);
        if (r) return r;
        for (uint32_t k = 0; k < op->n_operands; k++) {   /* free what is dead now */
            uint32_t v = gpuir__op_operand(R->m, op, k) - 1;
            if (R->last_use[v] == i + 1 && !R->borrowed[v]) gpuir_array_release(&R->vals[v]);
        }
    }
    R->ctx->loc_file = NULL;
    R->ctx->loc_line = R->ctx->loc_col = 0;
    R->ctx->loc_note[0] = '\0';
    const gpuir__op *ret = gpuir__op_at(R->m, f->ops[n_ops - 1]);
    gpuir_result r = gpuir__ref_take_outputs(R, ret, n_out, outputs);
    for (uint32_t i = 0; !r && i < ret->n_operands; i++) {   /* returned buffers: handed over */
        uint32_t b = R->buf_of[gpuir__op_operand(R->m, ret, i) - 1];
        if (b && R->bufs[b - 1].owned && R->bufs[b - 1].live) {
            free(R->bufs[b - 1].data);
            R->bufs[b - 1].live = false;
        }
    }
    snprintf(R->ctx->loc_note, sizeof R->ctx->loc_note, "in @%s", gpuir__string(R->m, f->name));
    if (!r) r = gpuir__ref_check_leaks(R);
    R->ctx->loc_note[0] = '\0';
    return r;
}

GPUIRDEF gpuir_result gpuir_ref_run(gpuir_module *m, const char *func, size_t n_inputs,
                                    const gpuir_array *inputs, size_t n_outputs,
                                    gpuir_array *outputs) {
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    if (n_outputs) memset(outputs, 0, n_outputs * sizeof *outputs);
    uint32_t fid = func ? gpuir__find_func(m, func) : 0;
    if (!fid) return gpuir__fail(ctx, GPUIR_ERR_NOT_FOUND, "no function named @%s", func ? func : "(null)");
    gpuir_result r = gpuir_module_verify(m);
    if (r) return r;
    size_t nv = stbds_arrlenu(m->values) + 1;
    gpuir__ref R;
    memset(&R, 0, sizeof R);
    R.m = m;
    R.ctx = ctx;
    R.vals = (gpuir_array *)calloc(nv, sizeof *R.vals);
    R.borrowed = (bool *)calloc(nv, sizeof *R.borrowed);
    R.last_use = (uint32_t *)calloc(nv, sizeof *R.last_use);
    R.buf_of = (uint32_t *)calloc(nv, sizeof *R.buf_of);
    const gpuir__func *f = gpuir__func_at(m, fid);
    if (!R.vals || !R.borrowed || !R.last_use || !R.buf_of) r = gpuir__oom(ctx, "interpreter state");
    if (!r && f->kernel)
        r = gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "@%s is a kernel: run the host function "
                        "that launches it", func);
    if (!r) r = gpuir__ref_bind_inputs(&R, f, n_inputs, inputs);
    if (!r) r = gpuir__ref_run_func(&R, f, n_outputs, outputs);
    for (size_t i = 0; R.vals && i < nv; i++)
        if (!R.borrowed[i]) free(R.vals[i].data);
    if (r)
        for (size_t i = 0; i < n_outputs; i++) gpuir_array_release(&outputs[i]);
    for (size_t i = 0; i < stbds_arrlenu(R.bufs); i++)
        if (R.bufs[i].owned && R.bufs[i].live) free(R.bufs[i].data);
    stbds_arrfree(R.bufs);
    free(R.vals);
    free(R.borrowed);
    free(R.last_use);
    free(R.buf_of);
    ctx->loc_file = NULL;
    ctx->loc_line = ctx->loc_col = 0;
    ctx->loc_note[0] = '\0';
    return r;
}

GPUIRDEF gpuir_result gpuir_module_bind_global(gpuir_module *m, const char *name,
                                               const gpuir_array *value) {
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    uint32_t g = name ? gpuir__find_global(m, name) : 0;
    if (!g) return gpuir__fail(ctx, GPUIR_ERR_NOT_FOUND, "no global named @%s", name ? name : "(null)");
    size_t bytes;
    gpuir_result r = gpuir__array_check(ctx, value, "bind_global", &bytes);
    if (r) return r;
    gpuir_type want = m->globals[g - 1].type, got = gpuir__array_type(value);
    if (!gpuir_type_equal(want, got)) {
        gpuir__tbuf bw, bg;
        return gpuir__fail(ctx, want.dtype != got.dtype ? GPUIR_ERR_DTYPE : GPUIR_ERR_SHAPE,
                           "bind_global: @%s is %s, the array is %s", name, gpuir__tstr(&bw, &want),
                           gpuir__tstr(&bg, &got));
    }
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy) return gpuir__oom(ctx, "global data");
    if (bytes) memcpy(copy, value->data, bytes);
    free(m->globals[g - 1].data);
    m->globals[g - 1].data = copy;
    return GPUIR_OK;
}

/* ====================================================================== */
// >>npy
// NumPy .npy files, versions 1.0, 2.0 and 3.0: little-endian f32, f16, i32 and
// i64 in C order. Everything else is refused with a message saying why.
// Reads: util, array. Writes: arrays and files.

typedef struct gpuir__npy_header {
    char descr[16];
    bool fortran;
    bool have_descr, have_fortran, have_shape;
    int rank;
    int64_t dims[GPUIR_MAX_RANK];
} gpuir__npy_header;

typedef struct gpuir__npy_cursor { const char *p, *end; gpuir_ctx *ctx; } gpuir__npy_cursor;

static void gpuir__npy_skip(gpuir__npy_cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool gpuir__npy_accept(gpuir__npy_cursor *c, char ch) {
    gpuir__npy_skip(c);
    if (c->p < c->end && *c->p == ch) { c->p++; return true; }
    return false;
}

static gpuir_result gpuir__npy_bad(gpuir__npy_cursor *c, const char *what) {
    return gpuir__fail(c->ctx, GPUIR_ERR_NPY, ".npy header: %s", what);
}

/* 'text' -> buf */
static gpuir_result gpuir__npy_string(gpuir__npy_cursor *c, char *buf, size_t size) {
    gpuir__npy_skip(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return gpuir__npy_bad(c, "expected a quoted string");
    char q = *c->p++;
    const char *s = c->p;
    while (c->p < c->end && *c->p != q) c->p++;
    if (c->p >= c->end) return gpuir__npy_bad(c, "unterminated string");
    size_t n = (size_t)(c->p - s);
    c->p++;
    if (n >= size) return gpuir__npy_bad(c, "string too long");
    memcpy(buf, s, n);
    buf[n] = '\0';
    return GPUIR_OK;
}

/* (d0, d1, ...) with an optional trailing comma; () is a scalar. */
static gpuir_result gpuir__npy_shape(gpuir__npy_cursor *c, gpuir__npy_header *h) {
    if (!gpuir__npy_accept(c, '(')) return gpuir__npy_bad(c, "expected '(' for the shape");
    h->rank = 0;
    while (!gpuir__npy_accept(c, ')')) {
        gpuir__npy_skip(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return gpuir__npy_bad(c, "bad shape");
        int64_t d = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (d > (INT64_MAX - 9) / 10)
                return gpuir__fail(c->ctx, GPUIR_ERR_LIMIT, ".npy header: a dimension overflows");
            d = d * 10 + (*c->p++ - '0');
        }
        if (h->rank == GPUIR_MAX_RANK)
            return gpuir__fail(c->ctx, GPUIR_ERR_LIMIT, ".npy header: rank above the cap of %d",
                               GPUIR_MAX_RANK);
        h->dims[h->rank++] = d;
        if (!gpuir__npy_accept(c, ',')) {
            if (!gpuir__npy_accept(c, ')')) return gpuir__npy_bad(c, "expected ',' or ')' in the shape");
            break;
        }
    }
    h->have_shape = true;
    return GPUIR_OK;
}

/* {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
static gpuir_result gpuir__npy_parse_header(gpuir_ctx *ctx, const char *text, size_t n,
                                            gpuir__npy_header *h) {
    gpuir__npy_cursor c = {text, text + n, ctx};
    gpuir_result r;
    memset(h, 0, sizeof *h);
    if (!gpuir__npy_accept(&c, '{')) return gpuir__npy_bad(&c, "expected '{'");
    while (!gpuir__npy_accept(&c, '}')) {
        char key[32];
        if ((r = gpuir__npy_string(&c, key, sizeof key)) != GPUIR_OK) return r;
        if (!gpuir__npy_accept(&c, ':')) return gpuir__npy_bad(&c, "expected ':'");
        gpuir__npy_skip(&c);
        if (strcmp(key, "descr") == 0) {
            if ((r = gpuir__npy_string(&c, h->descr, sizeof h->descr)) != GPUIR_OK) return r;
            h->have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            size_t left = (size_t)(c.end - c.p);
            if (left >= 4 && memcmp(c.p, "True", 4) == 0) { h->fortran = true; c.p += 4; }
            else if (left >= 5 && memcmp(c.p, "False", 5) == 0) c.p += 5;
            else return gpuir__npy_bad(&c, "fortran_order must be True or False");
            h->have_fortran = true;
        } else if (strcmp(key, "shape") == 0) {
            if ((r = gpuir__npy_shape(&c, h)) != GPUIR_OK) return r;
        } else {
            return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy header: unknown key '%s'", key);
        }
        if (!gpuir__npy_accept(&c, ',')) {
            if (!gpuir__npy_accept(&c, '}')) return gpuir__npy_bad(&c, "expected ',' or '}'");
            break;
        }
    }
    if (!h->have_descr || !h->have_fortran || !h->have_shape)
        return gpuir__npy_bad(&c, "needs 'descr', 'fortran_order' and 'shape'");
    return GPUIR_OK;
}

static gpuir_dtype gpuir__npy_dtype(const char *descr) {
    if (strcmp(descr, "<f4") == 0) return GPUIR_F32;
    if (strcmp(descr, "<f2") == 0) return GPUIR_F16;
    if (strcmp(descr, "<i4") == 0) return GPUIR_I32;
    if (strcmp(descr, "<i8") == 0) return GPUIR_I64;
    return GPUIR_DTYPE_INVALID;
}

static uint32_t gpuir__le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

GPUIRDEF gpuir_result gpuir_npy_load(gpuir_ctx *ctx, const void *bytes, size_t size,
                                     gpuir_array *out) {
    memset(out, 0, sizeof *out);
    if (ctx->result != GPUIR_OK) return ctx->result;
    const unsigned char *b = (const unsigned char *)bytes;
    if (!b || size < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: missing the \\x93NUMPY magic");
    unsigned major = b[6];
    if (major < 1 || major > 3)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: unsupported version %u.%u", major, b[7]);
    size_t pre = major == 1 ? 10 : 12;
    if (size < pre) return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: truncated header");
    size_t hlen = major == 1 ? (size_t)(b[8] | b[9] << 8) : (size_t)gpuir__le32(b + 8);
    if (hlen > size - pre)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: header of %zu bytes but only %zu follow",
                           hlen, size - pre);
    gpuir__npy_header h;
    gpuir_result r = gpuir__npy_parse_header(ctx, (const char *)b + pre, hlen, &h);
    if (r) return r;
    if (h.fortran)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: Fortran order is not supported (C order only)");
    gpuir_dtype dt = gpuir__npy_dtype(h.descr);
    if (!dt)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: dtype '%s' is not supported (<f4, <f2, "
                           "<i4, <i8)", h.descr);
    gpuir_array tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.dtype = dt;
    tmp.rank = h.rank;
    memcpy(tmp.dims, h.dims, sizeof h.dims);
    size_t data_bytes;
    if ((r = gpuir__array_check(ctx, &tmp, ".npy", &data_bytes)) != GPUIR_OK) return r;
    size_t have = size - pre - hlen;
    if (have != data_bytes)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: the shape needs %zu data bytes, the file "
                           "has %zu", data_bytes, have);
    if ((r = gpuir_array_alloc(ctx, out, dt, h.rank, h.dims)) != GPUIR_OK) return r;
    if (data_bytes) memcpy(out->data, b + pre + hlen, data_bytes);
    return GPUIR_OK;
}

GPUIRDEF gpuir_result gpuir_npy_read(gpuir_ctx *ctx, const char *path, gpuir_array *out) {
    memset(out, 0, sizeof *out);
    if (ctx->result != GPUIR_OK) return ctx->result;
    char *data;
    size_t size;
    gpuir_result r = gpuir__read_file(ctx, path, &data, &size);
    if (r) return r;
    r = gpuir_npy_load(ctx, data, size, out);
    free(data);
    return r;
}

GPUIRDEF gpuir_result gpuir_npy_write(gpuir_ctx *ctx, const char *path, const gpuir_array *a) {
    if (ctx->result != GPUIR_OK) return ctx->result;
    size_t bytes;
    gpuir_result r = gpuir__array_check(ctx, a, "npy_write", &bytes);
    if (r) return r;
    const char *descr = a->dtype == GPUIR_F32 ? "<f4" : a->dtype == GPUIR_F16 ? "<f2" :
                        a->dtype == GPUIR_I32 ? "<i4" : a->dtype == GPUIR_I64 ? "<i8" : NULL;
    if (!descr)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, "npy_write: %s has no .npy dtype",
                           gpuir_dtype_name(a->dtype));
    gpuir__str h = {NULL};
    gpuir__str_appendf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < a->rank; i++)
        gpuir__str_appendf(&h, "%lld%s", (long long)a->dims[i], a->rank == 1 ? "," : i + 1 < a->rank ? ", " : "");
    gpuir__str_appendf(&h, "), }");
    size_t len = strlen(gpuir__str_cstr(&h)), padded = (10 + len + 1 + 63) / 64 * 64 - 10;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    pre[8] = (unsigned char)(padded & 0xff);
    pre[9] = (unsigned char)(padded >> 8);
    FILE *f = fopen(path, "wb");
    if (!f) {
        gpuir__str_free(&h);
        return gpuir__fail(ctx, GPUIR_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    }
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(gpuir__str_cstr(&h), 1, len, f) == len;
    for (size_t i = len; ok && i + 1 < padded; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && (bytes == 0 || fwrite(a->data, 1, bytes, f) == bytes);
    ok = (fclose(f) == 0) && ok;
    gpuir__str_free(&h);
    return ok ? GPUIR_OK : gpuir__fail(ctx, GPUIR_ERR_IO, "cannot write '%s'", path);
}

/* ====================================================================== */
// >>pass
// The pass registry, the pipeline runner (verify after each pass, IR dumps,
// timing) and the helpers passes share to rebuild a function's op list.
// Reads: ir, build, print, verify. Writes: ir. Passes keep no state.

typedef gpuir_result (*gpuir__pass_fn)(gpuir_module *m);

/* Starts rebuilding function `fid`: ops built or kept go to a new list. */
static void gpuir__rewrite_begin(gpuir_module *m, uint32_t fid) {
    m->building = fid;
    m->rewriting = true;
    if (m->rewrite_ops) stbds_header(m->rewrite_ops)->length = 0;
}

static void gpuir__rewrite_keep(gpuir_module *m, uint32_t op) { stbds_arrput(m->rewrite_ops, op); }

/* Ends the rebuild; the new list replaces the function's ops if `commit`. */
static void gpuir__rewrite_end(gpuir_module *m, bool commit) {
    gpuir__func *f = gpuir__func_at(m, m->building);
    if (commit) {
        uint32_t *old = f->ops;
        f->ops = m->rewrite_ops;
        m->rewrite_ops = old;
    }
    if (m->rewrite_ops) stbds_header(m->rewrite_ops)->length = 0;
    m->building = 0;
    m->rewriting = false;
}

/* Rewrites an op's operands through `repl` (value id - 1 -> new id, 0: same). */
static void gpuir__remap_operands(gpuir_module *m, const gpuir__op *op, const uint32_t *repl) {
    for (uint32_t i = 0; i < op->n_operands; i++) {
        uint32_t *use = &m->uses[op->operands + i];
        if (repl[*use - 1]) *use = repl[*use - 1];
    }
}

/* An op that only defines its result: removable when unused. (Allocation
   counts: an unused buffer is never needed.) */
static bool gpuir__op_is_pure(const gpuir__op *op) {
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    return op->result && (gpuir__class_computes(cls) || cls == GPUIR__CLASS_GLOBAL ||
                          cls == GPUIR__CLASS_ALLOC);
}

/* Removes pure ops whose result nobody uses. */
static void gpuir__remove_dead_ops(gpuir_module *m, uint32_t fid) {
    gpuir__func *f = gpuir__func_at(m, fid);
    size_t n = stbds_arrlenu(f->ops), kept = n;
    uint32_t *uses = (uint32_t *)calloc(stbds_arrlenu(m->values) + 1, sizeof *uses);
    bool *dead = (bool *)calloc(n + 1, sizeof *dead);
    if (uses && dead) {
        for (size_t i = 0; i < n; i++) {
            const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
            for (uint32_t k = 0; k < op->n_operands; k++) uses[gpuir__op_operand(m, op, k) - 1]++;
        }
        for (size_t i = n; i-- > 0;) {
            const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
            if (!gpuir__op_is_pure(op) || uses[op->result - 1]) continue;
            dead[i] = true;
            kept--;
            for (uint32_t k = 0; k < op->n_operands; k++) uses[gpuir__op_operand(m, op, k) - 1]--;
        }
        size_t j = 0;
        for (size_t i = 0; i < n; i++)
            if (!dead[i]) f->ops[j++] = f->ops[i];
        stbds_header(f->ops)->length = kept;
    }
    free(uses);
    free(dead);
}

/* Runs fn on each host function; kernels a pass adds on the way are not
   visited. */
static gpuir_result gpuir__each_host_func(gpuir_module *m,
                                          gpuir_result (*fn)(gpuir_module *m, uint32_t fid)) {
    size_t n = stbds_arrlenu(m->funcs);
    for (size_t f = 0; f < n; f++) {
        gpuir_result r = m->funcs[f].kernel ? GPUIR_OK : fn(m, (uint32_t)f + 1);
        if (r) return r;
    }
    return GPUIR_OK;
}

static gpuir_result gpuir__pass_canonicalize(gpuir_module *m);
static gpuir_result gpuir__pass_decompose(gpuir_module *m);
static gpuir_result gpuir__pass_fuse(gpuir_module *m);
static gpuir_result gpuir__pass_bufferize(gpuir_module *m);
static gpuir_result gpuir__pass_outline(gpuir_module *m);
static gpuir_result gpuir__pass_place(gpuir_module *m);
static gpuir_result gpuir__pass_configure(gpuir_module *m);
static gpuir_result gpuir__pass_plan_shared_memory(gpuir_module *m);

typedef struct gpuir__pass_info {
    const char *name;
    const char *summary;
    gpuir__pass_fn run;
} gpuir__pass_info;

static const gpuir__pass_info gpuir__passes[] = {
    {"canonicalize", "fold constants, merge identical ops (CSE), remove dead ops",
     gpuir__pass_canonicalize},
    {"decompose", "rewrite composite ops (softmax) into primitive ops", gpuir__pass_decompose},
    {"fuse", "group ops into kernels: elementwise chains, into reductions, matmul epilogues",
     gpuir__pass_fuse},
    {"bufferize", "turn host functions' tensors into buffers, ops into their buffer form",
     gpuir__pass_bufferize},
    {"outline", "move each fusion group into a gpu.func kernel and launch it", gpuir__pass_outline},
    {"place", "device buffers, host<->device copies only where data must move, frees at last use",
     gpuir__pass_place},
    {"configure", "choose grid and block for each launch that has none", gpuir__pass_configure},
    {"plan-shared-memory", "size each launch's dynamic shared memory; check the device limit",
     gpuir__pass_plan_shared_memory},
};
#define GPUIR__PASS_COUNT (sizeof gpuir__passes / sizeof gpuir__passes[0])

GPUIRDEF size_t gpuir_pass_count(void) { return GPUIR__PASS_COUNT; }
GPUIRDEF const char *gpuir_pass_name(size_t i) { return i < GPUIR__PASS_COUNT ? gpuir__passes[i].name : NULL; }
GPUIRDEF const char *gpuir_pass_summary(size_t i) {
    return i < GPUIR__PASS_COUNT ? gpuir__passes[i].summary : NULL;
}

static const gpuir__pass_info *gpuir__find_pass(const char *name, size_t len) {
    for (size_t i = 0; i < GPUIR__PASS_COUNT; i++)
        if (strlen(gpuir__passes[i].name) == len && memcmp(gpuir__passes[i].name, name, len) == 0)
            return &gpuir__passes[i];
    return NULL;
}

static void gpuir__pass_print(const gpuir_pass_desc *d, const char *text) {
    if (d->print) d->print(d->print_user, text);
    else fputs(text, stderr);
}

static bool gpuir__pass_selected(const char *which, const char *name) {
    return which && (strcmp(which, "*") == 0 || strcmp(which, name) == 0);
}

static void gpuir__pass_dump(gpuir_module *m, const gpuir_pass_desc *d, const char *when,
                             const char *name) {
    char *text = gpuir_module_print(m);
    gpuir__str s = {NULL};
    gpuir__str_appendf(&s, "// -----// IR Dump %s %s //----- //\n%s", when, name, text ? text : "");
    gpuir__pass_print(d, gpuir__str_cstr(&s));
    gpuir__str_free(&s);
    gpuir_free(text);
}

/* Runs one pass with its dumps, timing and the verifier after it. */
static gpuir_result gpuir__pass_run_one(gpuir_module *m, const gpuir__pass_info *p,
                                        const gpuir_pass_desc *d) {
    if (gpuir__pass_selected(d->print_ir_before, p->name)) gpuir__pass_dump(m, d, "Before", p->name);
    clock_t start = clock();
    snprintf(m->ctx->loc_note, sizeof m->ctx->loc_note, "pass '%s'", p->name);
    gpuir_result r = p->run(m);
    m->ctx->loc_note[0] = '\0';
    double ms = 1000.0 * (double)(clock() - start) / CLOCKS_PER_SEC;
    if (!r && !d->disable_verify && gpuir_module_verify(m) != GPUIR_OK) {
        gpuir_ctx *ctx = m->ctx;
        gpuir__str s = {NULL};
        gpuir__str_appendf(&s, "after pass '%s': %s", p->name, gpuir_ctx_error(ctx));
        stbds_arrfree(ctx->message);
        ctx->message = s.buf;
        r = ctx->result;
    }
    if (!r && d->timing) {
        char line[160];
        snprintf(line, sizeof line, "// pass %-14s %9.3f ms (CPU)\n", p->name, ms);
        gpuir__pass_print(d, line);
    }
    if (!r && gpuir__pass_selected(d->print_ir_after, p->name)) gpuir__pass_dump(m, d, "After", p->name);
    return r;
}

GPUIRDEF gpuir_result gpuir_module_run_passes(gpuir_module *m, const char *pipeline,
                                              const gpuir_pass_desc *desc) {
    gpuir_ctx *ctx = m->ctx;
    gpuir_pass_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (ctx->result != GPUIR_OK) return ctx->result;
    gpuir_result r = gpuir_module_verify(m);
    const char *p = pipeline ? pipeline : "";
    while (!r && *p) {          /* check every name before running anything */
        size_t len = strcspn(p, ",");
        if (!gpuir__find_pass(p, len))
            return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "unknown pass '%.*s' in pipeline "
                               "'%s' (see gpuir_pass_name)", (int)len, p, pipeline);
        p += len + (p[len] == ',');
    }
    for (p = pipeline ? pipeline : ""; !r && *p;) {
        size_t len = strcspn(p, ",");
        r = gpuir__pass_run_one(m, gpuir__find_pass(p, len), &d);
        p += len + (p[len] == ',');
    }
    return r;
}

/* ====================================================================== */
// >>pass.canonicalize
// Folds ops on constants (splats stay splats; small dense results up to
// GPUIR__FOLD_MAX elements are computed by the reference interpreter), merges
// identical ops (CSE) and removes dead ops. Reads: ir, build, ref. Writes: ir.

#define GPUIR__FOLD_MAX 4096

/* Open addressing: op hash -> op id (0: empty slot). */
typedef struct gpuir__cse_map {
    uint64_t *keys;
    uint32_t *ops;
    size_t cap, count;
} gpuir__cse_map;

typedef struct gpuir__canon {
    gpuir_module *m;
    size_t cap;                   /* entries in the per-value arrays below */
    uint32_t *repl;               /* value id - 1 -> replacement id (0: none) */
    gpuir__cse_map cse;
    gpuir__ref ref;               /* interpreter state for dense folds */
} gpuir__canon;

/* Grows (zero-filled) one per-value array from `old` to `cap` entries. */
static bool gpuir__grow_zeroed(void **p, size_t old, size_t cap, size_t size) {
    void *q = realloc(*p, cap * size);
    if (!q) return false;
    memset((char *)q + old * size, 0, (cap - old) * size);
    *p = q;
    return true;
}

/* Keeps the per-value arrays as long as the module's value list, which
   grows as the pass builds constants. */
static gpuir_result gpuir__canon_fit(gpuir__canon *C) {
    size_t need = stbds_arrlenu(C->m->values) + 1;
    if (need <= C->cap) return GPUIR_OK;
    size_t cap = need * 2;
    bool ok = gpuir__grow_zeroed((void **)&C->repl, C->cap, cap, sizeof *C->repl) &&
              gpuir__grow_zeroed((void **)&C->ref.vals, C->cap, cap, sizeof *C->ref.vals) &&
              gpuir__grow_zeroed((void **)&C->ref.borrowed, C->cap, cap, sizeof *C->ref.borrowed);
    if (!ok) return gpuir__oom(C->m->ctx, "canonicalize");
    C->cap = cap;
    return GPUIR_OK;
}

static void gpuir__cse_free(gpuir__cse_map *t) {
    free(t->keys);
    free(t->ops);
    memset(t, 0, sizeof *t);
}

/* The slot of `key`: where it is, or the empty slot where it would go. */
static size_t gpuir__cse_slot(const gpuir__cse_map *t, uint64_t key) {
    size_t i = (size_t)(key ^ (key >> 29)) & (t->cap - 1);
    while (t->ops[i] && t->keys[i] != key) i = (i + 1) & (t->cap - 1);
    return i;
}

/* Keeps the table at most half full; false when out of memory. */
static bool gpuir__cse_reserve(gpuir__cse_map *t) {
    if (2 * (t->count + 1) <= t->cap) return true;
    gpuir__cse_map bigger = {NULL, NULL, t->cap ? 2 * t->cap : 64, t->count};
    bigger.keys = (uint64_t *)calloc(bigger.cap, sizeof *bigger.keys);
    bigger.ops = (uint32_t *)calloc(bigger.cap, sizeof *bigger.ops);
    if (!bigger.keys || !bigger.ops) { gpuir__cse_free(&bigger); return false; }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->ops[i]) continue;
        size_t j = gpuir__cse_slot(&bigger, t->keys[i]);
        bigger.keys[j] = t->keys[i];
        bigger.ops[j] = t->ops[i];
    }
    gpuir__cse_free(t);
    *t = bigger;
    return true;
}

static uint64_t gpuir__hash(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The payload bytes of an attribute (ints, string or dense data). */
static const void *gpuir__attr_payload(const gpuir_module *m, const gpuir__attr *a, size_t *n) {
    switch (a->kind) {
    case GPUIR__ATTR_INTS: *n = a->n * sizeof(int64_t); return gpuir__ints_at(m, a->off);
    case GPUIR__ATTR_STRING:
    case GPUIR__ATTR_SYMBOL: *n = strlen(m->strings + a->off); return m->strings + a->off;
    case GPUIR__ATTR_DENSE: *n = a->n * gpuir_dtype_size((gpuir_dtype)a->i); return gpuir__bytes_at(m, a->off);
    default: *n = 0; return NULL;
    }
}

static uint64_t gpuir__op_hash(const gpuir_module *m, const gpuir__op *op) {
    uint64_t h = gpuir__hash(0xcbf29ce484222325ull, &op->kind, sizeof op->kind);
    h = gpuir__hash(h, &gpuir__value_at(m, op->result)->type, sizeof(gpuir_type));
    h = gpuir__hash(h, m->uses + op->operands, op->n_operands * sizeof(uint32_t));
    for (uint32_t i = 0; i < op->n_attrs; i++) {
        const gpuir__attr *a = &m->attrs[op->attrs + i];
        size_t n;
        const void *payload = gpuir__attr_payload(m, a, &n);
        const char *name = gpuir__string(m, a->name);
        h = gpuir__hash(h, name, strlen(name));
        h = gpuir__hash(h, &a->kind, sizeof a->kind);
        h = gpuir__hash(h, &a->i, sizeof a->i);
        h = gpuir__hash(h, &a->f, sizeof a->f);
        if (n) h = gpuir__hash(h, payload, n);
    }
    return h;
}

static bool gpuir__attr_same(const gpuir_module *m, const gpuir__attr *a, const gpuir__attr *b) {
    size_t na, nb;
    const void *pa = gpuir__attr_payload(m, a, &na), *pb = gpuir__attr_payload(m, b, &nb);
    return strcmp(gpuir__string(m, a->name), gpuir__string(m, b->name)) == 0 &&
           a->kind == b->kind && a->i == b->i && memcmp(&a->f, &b->f, sizeof a->f) == 0 &&
           na == nb && (na == 0 || memcmp(pa, pb, na) == 0);
}

static bool gpuir__op_same(const gpuir_module *m, const gpuir__op *a, const gpuir__op *b) {
    if (a->kind != b->kind || a->n_operands != b->n_operands || a->n_attrs != b->n_attrs ||
        !gpuir_type_equal(gpuir__value_at(m, a->result)->type, gpuir__value_at(m, b->result)->type))
        return false;
    for (uint32_t i = 0; i < a->n_operands; i++)
        if (gpuir__op_operand(m, a, i) != gpuir__op_operand(m, b, i)) return false;
    for (uint32_t i = 0; i < a->n_attrs; i++)
        if (!gpuir__attr_same(m, &m->attrs[a->attrs + i], &m->attrs[b->attrs + i])) return false;
    return true;
}

/* CSE: the result of an identical earlier op, or 0 (and remembers this one;
   on a hash collision with a different op the new one is simply kept). */
static uint32_t gpuir__cse_lookup(gpuir__canon *C, uint32_t op_id) {
    const gpuir__op *op = gpuir__op_at(C->m, op_id);
    uint64_t key = gpuir__op_hash(C->m, op);
    if (!gpuir__cse_reserve(&C->cse)) return 0;
    size_t i = gpuir__cse_slot(&C->cse, key);
    if (C->cse.ops[i]) {
        const gpuir__op *prev = gpuir__op_at(C->m, C->cse.ops[i]);
        return gpuir__op_same(C->m, prev, op) ? prev->result : 0;
    }
    C->cse.keys[i] = key;
    C->cse.ops[i] = op_id;
    C->cse.count++;
    return 0;
}

/* The `value` attribute of the op defining v, if it is a constant. */
static const gpuir__attr *gpuir__constant_value(const gpuir_module *m, uint32_t v) {
    const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, v)->def_op);
    return def && def->kind == GPUIR_OP_CONSTANT ? gpuir__attr_find(m, def, "value") : NULL;
}

/* Appends `constant {value = ...}` of type t, taking the value from the
   one-element array `one` (already rounded to t's dtype). */
static uint32_t gpuir__build_splat(gpuir_module *m, const gpuir_type *t, const gpuir_array *one) {
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    if (gpuir_dtype_is_float(t->dtype)) gpuir__attr_push_float(m, "value", gpuir_array_get(one, 0));
    else gpuir__attr_push_int(m, "value", GPUIR__ATTR_INT, gpuir__load_int(one, 0));
    return gpuir__build_op(m, GPUIR_OP_CONSTANT, NULL, 0, first, 1, t);
}

/* Folds an elementwise or data-movement op whose operands are all splats. */
static uint32_t gpuir__fold_splats(gpuir__canon *C, const gpuir__op *op) {
    gpuir_module *m = C->m;
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    if (cls != GPUIR__CLASS_UNARY && cls != GPUIR__CLASS_BINARY && cls != GPUIR__CLASS_CAST &&
        cls != GPUIR__CLASS_BROADCAST && cls != GPUIR__CLASS_RESHAPE && cls != GPUIR__CLASS_TRANSPOSE)
        return 0;
    double f[2] = {0, 0};
    int64_t i[2] = {0, 0};
    for (uint32_t k = 0; k < op->n_operands; k++) {
        const gpuir__attr *v = gpuir__constant_value(m, gpuir__op_operand(m, op, k));
        if (!v || (v->kind != GPUIR__ATTR_FLOAT && v->kind != GPUIR__ATTR_INT)) return 0;
        f[k] = v->kind == GPUIR__ATTR_FLOAT ? v->f : (double)v->i;
        i[k] = v->kind == GPUIR__ATTR_INT ? v->i : 0;
    }
    gpuir_type t = gpuir__value_at(m, op->result)->type;
    gpuir_dtype src = gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type.dtype;
    if (!gpuir__type_is_static(&t)) return 0;       /* constants have static types */
    unsigned char bytes[8];
    gpuir_array one;
    memset(&one, 0, sizeof one);
    one.dtype = t.dtype;
    one.data = bytes;
    bool is_float = gpuir_dtype_is_float(src);
    if (cls == GPUIR__CLASS_UNARY) { f[0] = gpuir__ref_unary_f(op->kind, f[0]); i[0] = gpuir__ref_unary_i(op->kind, i[0]); }
    if (cls == GPUIR__CLASS_BINARY) {
        f[0] = gpuir__ref_binary_f(op->kind, f[0], f[1]);
        i[0] = gpuir__ref_binary_i(op->kind, i[0], i[1], src);
    }
    if (is_float) gpuir_array_set(&one, 0, f[0]);
    else if (gpuir_dtype_is_float(t.dtype)) gpuir_array_set(&one, 0, gpuir__i64_to_f64_odd(i[0]));
    else gpuir__store_int(&one, 0, i[0]);
    return gpuir__build_splat(m, &t, &one);
}

/* Whether every element has the same bytes as the first. */
static bool gpuir__array_uniform(const gpuir_array *a) {
    size_t n = gpuir_array_count(a), size = gpuir_dtype_size(a->dtype);
    for (size_t i = 1; i < n; i++)
        if (memcmp((const char *)a->data + i * size, a->data, size) != 0) return false;
    return true;
}

/* Folds a small op on constants by running it in the interpreter. */
static uint32_t gpuir__fold_dense(gpuir__canon *C, const gpuir__op *op) {
    gpuir_module *m = C->m;
    gpuir_type t = gpuir__value_at(m, op->result)->type;
    int64_t count = gpuir__type_count(&t);
    if (count < 0 || count > GPUIR__FOLD_MAX || op->kind == GPUIR_OP_CONSTANT ||
        op->kind == GPUIR_OP_GET_GLOBAL || op->kind == GPUIR_OP_RETURN)
        return 0;
    for (uint32_t k = 0; k < op->n_operands; k++) {
        uint32_t v = gpuir__op_operand(m, op, k);
        gpuir_type vt = gpuir__value_at(m, v)->type;
        if (!gpuir__constant_value(m, v) || gpuir__type_count(&vt) > GPUIR__FOLD_MAX) return 0;
    }
    gpuir__ref *R = &C->ref;
    uint32_t made = 0, n_operands = op->n_operands, operands[GPUIR_MAX_OPERANDS];
    gpuir_result r = GPUIR_OK;
    for (uint32_t k = 0; k < n_operands; k++) operands[k] = gpuir__op_operand(m, op, k);
    for (uint32_t k = 0; k < n_operands && !r; k++)
        if (!R->vals[operands[k] - 1].data)
            r = gpuir__ref_exec(R, gpuir__op_at(m, gpuir__value_at(m, operands[k])->def_op));
    if (!r) r = gpuir__ref_exec(R, op);
    gpuir_array *out = &R->vals[op->result - 1];   /* `op` is not used after the build below */
    if (!r && gpuir__array_uniform(out) && count > 0) {
        made = gpuir__build_splat(m, &t, out);
    } else if (!r) {
        uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
        if (!gpuir__attr_push_dense(m, "value", t.dtype, out->data, (size_t)count))
            made = gpuir__build_op(m, GPUIR_OP_CONSTANT, NULL, 0, first, 1, &t);
    }
    gpuir_array_release(out);
    for (uint32_t k = 0; k < n_operands; k++) gpuir_array_release(&R->vals[operands[k] - 1]);
    return made;
}

/* One op: remap its operands, then fold it, merge it, or keep it. */
static gpuir_result gpuir__canon_op(gpuir__canon *C, uint32_t op_id) {
    gpuir_module *m = C->m;
    gpuir_result r = gpuir__canon_fit(C);
    if (r) return r;
    gpuir__remap_operands(m, gpuir__op_at(m, op_id), C->repl);
    const gpuir__op *op = gpuir__op_at(m, op_id);
    if (!gpuir__op_is_pure(op) || gpuir__info(op->kind)->cls == GPUIR__CLASS_ALLOC) {
        gpuir__rewrite_keep(m, op_id);           /* effects, or a distinct buffer */
        return GPUIR_OK;
    }
    uint32_t result = op->result;
    uint32_t folded = op->n_operands ? gpuir__fold_splats(C, op) : 0;
    if (!folded && op->n_operands && m->ctx->result == GPUIR_OK) folded = gpuir__fold_dense(C, gpuir__op_at(m, op_id));
    if (m->ctx->result != GPUIR_OK) return m->ctx->result;
    if ((r = gpuir__canon_fit(C)) != GPUIR_OK) return r;
    uint32_t current = folded ? (uint32_t)stbds_arrpop(m->rewrite_ops) : op_id;  /* re-added below */
    uint32_t same = gpuir__cse_lookup(C, current);
    if (same) C->repl[result - 1] = same;
    else {
        gpuir__rewrite_keep(m, current);
        if (folded) C->repl[result - 1] = gpuir__op_at(m, current)->result;
    }
    return GPUIR_OK;
}

static gpuir_result gpuir__canon_func(gpuir__canon *C, uint32_t fid) {
    gpuir_module *m = C->m;
    gpuir__rewrite_begin(m, fid);
    size_t n = stbds_arrlenu(gpuir__func_at(m, fid)->ops);
    gpuir_result r = GPUIR_OK;
    for (size_t i = 0; i < n && !r; i++) r = gpuir__canon_op(C, gpuir__func_at(m, fid)->ops[i]);
    gpuir__rewrite_end(m, r == GPUIR_OK);
    gpuir__cse_free(&C->cse);
    if (!r) gpuir__remove_dead_ops(m, fid);
    return r;
}

static gpuir_result gpuir__pass_canonicalize(gpuir_module *m) {
    gpuir__canon C;
    memset(&C, 0, sizeof C);
    C.m = m;
    C.ref.m = m;
    C.ref.ctx = m->ctx;
    gpuir_result r = GPUIR_OK;
    for (size_t f = 0; f < stbds_arrlenu(m->funcs) && !r; f++) r = gpuir__canon_func(&C, (uint32_t)f + 1);
    free(C.repl);
    free(C.ref.vals);
    free(C.ref.borrowed);
    return r;
}

/* ====================================================================== */
// >>pass.decompose
// Rewrites composite ops into primitive ones: softmax(x, axis) becomes
// e = exp(x - reduce_max(x)), e / reduce_sum(e), both keeping the axis.
// Reads: ir, build. Writes: ir.

static uint32_t gpuir__decompose_softmax(gpuir_module *m, const gpuir__op *op) {
    uint32_t x = gpuir__op_operand(m, op, 0);
    int64_t axis = gpuir__attr_find(m, op, "axis")->i;
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_ints(m, "axes", 1, &axis);
    gpuir__attr_push_int(m, "keepdims", GPUIR__ATTR_BOOL, 1);
    gpuir_value mx = gpuir__build_value(m, GPUIR_OP_REDUCE_MAX, &x, 1, first, 2, NULL);
    uint32_t sub_in[2] = {x, mx.id};
    gpuir_value shifted = gpuir__build_value(m, GPUIR_OP_SUB, sub_in, 2, 0, 0, NULL);
    gpuir_value e = gpuir__build_value(m, GPUIR_OP_EXP, &shifted.id, 1, 0, 0, NULL);
    gpuir_value sum = gpuir__build_value(m, GPUIR_OP_REDUCE_SUM, &e.id, 1, first, 2, NULL);
    uint32_t div_in[2] = {e.id, sum.id};
    return gpuir__build_value(m, GPUIR_OP_DIV, div_in, 2, 0, 0, NULL).id;
}

static gpuir_result gpuir__pass_decompose(gpuir_module *m) {
    uint32_t *repl = (uint32_t *)calloc(stbds_arrlenu(m->values) + 1, sizeof *repl);
    if (!repl) return gpuir__oom(m->ctx, "decompose");
    gpuir_result r = GPUIR_OK;
    for (size_t f = 0; f < stbds_arrlenu(m->funcs) && !r; f++) {
        uint32_t fid = (uint32_t)f + 1;
        gpuir__rewrite_begin(m, fid);
        for (size_t i = 0; i < stbds_arrlenu(gpuir__func_at(m, fid)->ops) && !r; i++) {
            uint32_t op_id = gpuir__func_at(m, fid)->ops[i];
            gpuir__remap_operands(m, gpuir__op_at(m, op_id), repl);
            const gpuir__op *op = gpuir__op_at(m, op_id);
            if (op->kind != GPUIR_OP_SOFTMAX || !op->result) {    /* (not in buffer form) */
                gpuir__rewrite_keep(m, op_id);
                continue;
            }
            uint32_t result = op->result, y = gpuir__decompose_softmax(m, op);
            if (!y) r = m->ctx->result;
            else repl[result - 1] = y;
        }
        gpuir__rewrite_end(m, r == GPUIR_OK);
    }
    free(repl);
    return r;
}

/* ====================================================================== */
// >>pass.fuse
// Marks each computing op of a host function with `fusion = N`: ops with the
// same N become one kernel. An elementwise op joins the group of a producer
// that is elementwise or a matmul (its epilogue: bias, activation, residual)
// when it is that value's only user and the shapes agree; a reduction joins
// an elementwise producer's group the same way. A value used twice, or by the
// host, ends its group. Splat constants and globals join no group.
// Reads: ir. Writes: the `fusion` attribute.

typedef enum gpuir__group_kind {
    GPUIR__GROUP_ELEMENTWISE, GPUIR__GROUP_REDUCE, GPUIR__GROUP_MATMUL, GPUIR__GROUP_OTHER
} gpuir__group_kind;

static bool gpuir__is_elementwise(gpuir__op_class c) {
    return c == GPUIR__CLASS_UNARY || c == GPUIR__CLASS_BINARY || c == GPUIR__CLASS_CAST;
}

/* Gives op `op_id` the integer attribute `name` (replacing an old value):
   its attributes are copied to a new range of the pool with the new one. */
static void gpuir__set_int_attr(gpuir_module *m, uint32_t op_id, const char *name, int64_t v) {
    gpuir__op *op = gpuir__op_at(m, op_id);
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs), old = op->attrs, n = op->n_attrs, kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        gpuir__attr a = m->attrs[old + i];
        if (strcmp(gpuir__string(m, a.name), name) == 0) continue;
        stbds_arrput(m->attrs, a);
        kept++;
    }
    gpuir__attr_push_int(m, name, GPUIR__ATTR_INT, v);
    op = gpuir__op_at(m, op_id);
    op->attrs = first;
    op->n_attrs = kept + 1;
}

static int64_t gpuir__op_int_attr(const gpuir_module *m, const gpuir__op *op, const char *name,
                                  int64_t dflt) {
    const gpuir__attr *a = gpuir__attr_find(m, op, name);
    return a && a->kind == GPUIR__ATTR_INT ? a->i : dflt;
}

/* The group op `user` may join through its operand v, or 0. */
static int64_t gpuir__fuse_candidate(const gpuir_module *m, const gpuir__op *user, uint32_t v,
                                     const uint32_t *uses, const gpuir__group_kind *kinds) {
    const gpuir__value *val = gpuir__value_at(m, v);
    const gpuir__op *def = gpuir__op_at(m, val->def_op);
    if (!def || uses[v - 1] != 1) return 0;
    int64_t g = gpuir__op_int_attr(m, def, "fusion", 0);
    if (!g) return 0;
    const gpuir_type *out = &gpuir__value_at(m, user->result)->type;
    gpuir__op_class cls = gpuir__info(user->kind)->cls;
    if (gpuir__is_elementwise(cls)) {      /* same iteration space, not after a reduction */
        bool same_dims = val->type.rank == out->rank &&
                         memcmp(val->type.dims, out->dims, (size_t)out->rank * sizeof out->dims[0]) == 0;
        bool joinable = kinds[g] == GPUIR__GROUP_ELEMENTWISE || kinds[g] == GPUIR__GROUP_MATMUL;
        return same_dims && joinable ? g : 0;
    }
    if (cls == GPUIR__CLASS_REDUCE && kinds[g] == GPUIR__GROUP_ELEMENTWISE) return g;
    return 0;
}

/* The most buffers a group may read from outside: a kernel's parameters
   stay well below GPUIR_MAX_OPERANDS. */
#define GPUIR__MAX_GROUP_INPUTS 32

/* How many buffers op would add to group g's inputs if it joined it: its
   operands made outside the group, splat constants aside (they are copied
   into the kernel). */
static uint32_t gpuir__fuse_new_inputs(const gpuir_module *m, const gpuir__op *op, int64_t g) {
    uint32_t extra = 0;
    for (uint32_t k = 0; k < op->n_operands; k++) {
        const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, gpuir__op_operand(m, op, k))->def_op);
        const gpuir__attr *v = def && def->kind == GPUIR_OP_CONSTANT ? gpuir__attr_find(m, def, "value") : NULL;
        if (v && v->kind != GPUIR__ATTR_DENSE) continue;
        if (!def || gpuir__op_int_attr(m, def, "fusion", 0) != g) extra++;
    }
    return extra;
}

static gpuir_result gpuir__fuse_func(gpuir_module *m, uint32_t fid) {
    gpuir__func *f = gpuir__func_at(m, fid);
    size_t n = stbds_arrlenu(f->ops);
    uint32_t *uses = (uint32_t *)calloc(stbds_arrlenu(m->values) + 1, sizeof *uses);
    gpuir__group_kind *kinds = (gpuir__group_kind *)calloc(n + 2, sizeof *kinds);
    uint32_t *inputs = (uint32_t *)calloc(n + 2, sizeof *inputs);
    if (!uses || !kinds || !inputs) {
        free(uses);
        free(kinds);
        free(inputs);
        return gpuir__oom(m->ctx, "fuse");
    }
    for (size_t i = 0; i < n; i++) {          /* users, not operand slots: add %a, %a is one */
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t v = gpuir__op_operand(m, op, k);
            bool seen = false;
            for (uint32_t j = 0; j < k; j++) seen |= gpuir__op_operand(m, op, j) == v;
            if (!seen) uses[v - 1]++;
        }
    }
    int64_t next = 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t op_id = gpuir__func_at(m, fid)->ops[i];
        const gpuir__op *op = gpuir__op_at(m, op_id);
        gpuir__op_class cls = gpuir__info(op->kind)->cls;
        if (!op->result || !gpuir__class_computes(cls) || cls == GPUIR__CLASS_CONSTANT) continue;
        int64_t g = 0;
        for (uint32_t k = 0; k < op->n_operands && !g; k++)
            g = gpuir__fuse_candidate(m, op, gpuir__op_operand(m, op, k), uses, kinds);
        if (g && inputs[g] + gpuir__fuse_new_inputs(m, op, g) > GPUIR__MAX_GROUP_INPUTS) g = 0;
        if (g) inputs[g] += gpuir__fuse_new_inputs(m, op, g);
        if (!g) {
            g = next++;
            inputs[g] = gpuir__fuse_new_inputs(m, op, g);
            kinds[g] = gpuir__is_elementwise(cls) ? GPUIR__GROUP_ELEMENTWISE :
                       cls == GPUIR__CLASS_MATMUL ? GPUIR__GROUP_MATMUL :
                       cls == GPUIR__CLASS_REDUCE ? GPUIR__GROUP_REDUCE : GPUIR__GROUP_OTHER;
        } else if (cls == GPUIR__CLASS_REDUCE) {
            kinds[g] = GPUIR__GROUP_REDUCE;
        }
        gpuir__set_int_attr(m, op_id, "fusion", g);
    }
    free(uses);
    free(kinds);
    free(inputs);
    return GPUIR_OK;
}

static gpuir_result gpuir__pass_fuse(gpuir_module *m) { return gpuir__each_host_func(m, gpuir__fuse_func); }

/* ====================================================================== */
// >>pass.bufferize
// Host functions become buffer programs: tensor parameters become host
// memrefs; each computing op writes a buffer (memref.alloc, then the op in
// buffer form), in place when it is elementwise and an input buffer of the
// same type dies with it; globals are read through memref.get_global; every
// buffer allocated and not returned is freed after its last use. Static
// shapes only for now. Reads: ir, build. Writes: ir.

typedef struct gpuir__bufferizer {
    gpuir_module *m;
    uint32_t *buf;          /* value id - 1 -> the buffer that holds it */
    uint32_t *last_use;     /* tensor value id - 1 -> index of its last user */
    uint32_t *last_run;     /* tensor value id - 1 -> when its last reader runs */
    uint32_t *runs_at;      /* op index -> when it runs: outline launches a fusion
                               group where its last op is */
    bool *owned;            /* buffer value id - 1 -> allocated by this function */
} gpuir__bufferizer;

static gpuir_type gpuir__as_memref(gpuir_type t, int32_t space) {
    t.kind = GPUIR_TYPE_MEMREF;
    t.space = space;
    return t;
}

/* Whether the function is still at the tensor level, fit to bufferize
   (static shapes: parameters first, then results). */
static gpuir_result gpuir__bufferize_check(gpuir_module *m, const gpuir__func *f, bool *tensor_level) {
    *tensor_level = false;
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++)
        *tensor_level |= gpuir__value_at(m, f->params[i])->type.kind == GPUIR_TYPE_TENSOR;
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__value *v = gpuir__value_at(m, gpuir__op_at(m, f->ops[i])->result);
        *tensor_level |= v && v->type.kind == GPUIR_TYPE_TENSOR;
    }
    if (!*tensor_level) return GPUIR_OK;
    gpuir__tbuf b;
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++) {
        const gpuir__value *p = gpuir__value_at(m, f->params[i]);
        if (!gpuir__type_is_static(&p->type) || p->type.kind != GPUIR_TYPE_TENSOR)
            return gpuir__fail(m->ctx, GPUIR_ERR_SHAPE, "bufferize: @%s: parameter %%%s is %s "
                               "(dynamic sizes are not supported yet)", gpuir__string(m, f->name),
                               gpuir__string(m, p->name), gpuir__tstr(&b, &p->type));
    }
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        const gpuir__value *v = gpuir__value_at(m, op->result);
        if (v && !gpuir__type_is_static(&v->type))
            return gpuir__fail(m->ctx, GPUIR_ERR_SHAPE, "bufferize: @%s: %s has the dynamic type %s "
                               "(dynamic sizes are not supported yet)", gpuir__string(m, f->name),
                               gpuir_op_name(op->kind), gpuir__tstr(&b, &v->type));
    }
    return GPUIR_OK;
}

/* The buffer an op writes: an input buffer that dies here (elementwise, same
   type), or a fresh allocation. */
static uint32_t gpuir__bufferize_dest(gpuir__bufferizer *B, const gpuir__op *op, size_t index) {
    gpuir_module *m = B->m;
    gpuir_type want = gpuir__as_memref(gpuir__value_at(m, op->result)->type, GPUIR_SPACE_HOST);
    if (gpuir__is_elementwise(gpuir__info(op->kind)->cls))
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t v = gpuir__op_operand(m, op, k), b = B->buf[v - 1];
            const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, v)->def_op);
            if (def && def->kind == GPUIR_OP_CONSTANT) continue;   /* constants stay constant */
            /* in place only if every reader of the old value runs no later */
            if (B->owned[b - 1] && B->last_use[v - 1] == index + 1 &&
                B->last_run[v - 1] <= B->runs_at[index] &&
                gpuir_type_equal(gpuir__value_at(m, b)->type, want))
                return b;
        }
    gpuir_value out = gpuir__build_value(m, GPUIR_OP_MEMREF_ALLOC, NULL, 0, 0, 0, &want);
    if (out.id) B->owned[out.id - 1] = true;
    return out.id;
}

/* When each op will run once outline has launched each fusion group at its
   last op, and so when each value's last reader runs. */
static gpuir_result gpuir__bufferize_schedule(gpuir__bufferizer *B, uint32_t fid) {
    gpuir_module *m = B->m;
    const gpuir__func *f = gpuir__func_at(m, fid);
    size_t n = stbds_arrlenu(f->ops);
    uint32_t *group_end = (uint32_t *)calloc(n + 2, sizeof *group_end);
    if (!group_end) return gpuir__oom(m->ctx, "bufferize");
    for (size_t i = 0; i < n; i++) {
        int64_t g = gpuir__op_int_attr(m, gpuir__op_at(m, f->ops[i]), "fusion", 0);
        if (g > 0 && (size_t)g <= n) group_end[g] = (uint32_t)i + 1;
    }
    for (size_t i = 0; i < n; i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        int64_t g = gpuir__op_int_attr(m, op, "fusion", 0);
        B->runs_at[i] = (uint32_t)i + 1;
        if (g > 0 && (size_t)g <= n) B->runs_at[i] = group_end[g];
        else if (g)                        /* an unusual key: find the group's end */
            for (size_t j = i + 1; j < n; j++)
                if (gpuir__op_int_attr(m, gpuir__op_at(m, f->ops[j]), "fusion", 0) == g)
                    B->runs_at[i] = (uint32_t)j + 1;
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t v = gpuir__op_operand(m, op, k) - 1;
            B->last_use[v] = (uint32_t)i + 1;
            if (B->runs_at[i] > B->last_run[v]) B->last_run[v] = B->runs_at[i];
        }
    }
    free(group_end);
    return GPUIR_OK;
}

/* Rewrites one op; ops already at the buffer level are kept. */
static gpuir_result gpuir__bufferize_op(gpuir__bufferizer *B, uint32_t op_id, size_t index) {
    gpuir_module *m = B->m;
    const gpuir__op *op = gpuir__op_at(m, op_id);
    uint32_t ids[GPUIR_MAX_OPERANDS + 1], n = op->n_operands, result = op->result;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = gpuir__op_operand(m, op, k);
        ids[k] = B->buf[v - 1] ? B->buf[v - 1] : v;
    }
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    if (op->kind == GPUIR_OP_RETURN) {
        for (uint32_t k = 0; k < n; k++) m->uses[op->operands + k] = ids[k];
        gpuir__rewrite_keep(m, op_id);
        return GPUIR_OK;
    }
    if (op->kind == GPUIR_OP_GET_GLOBAL) {
        gpuir_type t = gpuir__as_memref(gpuir__value_at(m, result)->type, GPUIR_SPACE_HOST);
        gpuir_value g = gpuir__build_value(m, GPUIR_OP_MEMREF_GET_GLOBAL, NULL, 0, op->attrs, op->n_attrs, &t);
        B->buf[result - 1] = g.id;
        return g.id ? GPUIR_OK : m->ctx->result;
    }
    if (!result || !gpuir__class_computes(cls)) { gpuir__rewrite_keep(m, op_id); return GPUIR_OK; }
    uint32_t attrs = op->attrs, n_attrs = op->n_attrs;
    gpuir_op_kind kind = op->kind;
    uint32_t out = gpuir__bufferize_dest(B, op, index);
    if (!out) return m->ctx->result;
    ids[n] = out;
    if (!gpuir__build_op_ex(m, kind, ids, n + 1, attrs, n_attrs, NULL, false)) return m->ctx->result;
    B->buf[result - 1] = out;
    return GPUIR_OK;
}

/* Frees each buffer the function allocated after its last use, unless it
   is returned. */
static gpuir_result gpuir__insert_deallocs(gpuir_module *m, uint32_t fid, const bool *owned,
                                           gpuir_op_kind dealloc) {
    gpuir__func *f = gpuir__func_at(m, fid);
    size_t n = stbds_arrlenu(f->ops), nv = stbds_arrlenu(m->values) + 1;
    uint32_t *last = (uint32_t *)calloc(nv, sizeof *last);
    if (!last) return gpuir__oom(m->ctx, "placing deallocations");
    for (size_t i = 0; i < n; i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        bool ret = op->kind == GPUIR_OP_RETURN;
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t v = gpuir__op_operand(m, op, k);
            last[v - 1] = ret ? UINT32_MAX : (uint32_t)i + 1;
        }
    }
    gpuir__rewrite_begin(m, fid);
    for (size_t i = 0; i < n; i++) {
        uint32_t op_id = gpuir__func_at(m, fid)->ops[i];
        const gpuir__op *op = gpuir__op_at(m, op_id);
        uint32_t freed[GPUIR_MAX_OPERANDS], n_freed = 0;
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t v = gpuir__op_operand(m, op, k);
            bool dup = false;
            for (uint32_t j = 0; j < n_freed; j++) dup |= freed[j] == v;
            if (owned[v - 1] && last[v - 1] == i + 1 && !dup) freed[n_freed++] = v;
        }
        gpuir__rewrite_keep(m, op_id);
        for (uint32_t j = 0; j < n_freed; j++) gpuir__build_op(m, dealloc, &freed[j], 1, 0, 0, NULL);
    }
    gpuir__rewrite_end(m, true);
    free(last);
    return m->ctx->result;
}

static gpuir_result gpuir__bufferize_func(gpuir_module *m, uint32_t fid) {
    bool tensor_level;
    gpuir_result r = gpuir__bufferize_check(m, gpuir__func_at(m, fid), &tensor_level);
    if (r || !tensor_level) return r;
    size_t n = stbds_arrlenu(gpuir__func_at(m, fid)->ops), cap = stbds_arrlenu(m->values) + 2 * n + 2;
    gpuir__bufferizer B;
    memset(&B, 0, sizeof B);
    B.m = m;
    B.buf = (uint32_t *)calloc(cap, sizeof *B.buf);
    B.last_use = (uint32_t *)calloc(cap, sizeof *B.last_use);
    B.last_run = (uint32_t *)calloc(cap, sizeof *B.last_run);
    B.runs_at = (uint32_t *)calloc(n + 1, sizeof *B.runs_at);
    B.owned = (bool *)calloc(cap, sizeof *B.owned);
    if (!B.buf || !B.last_use || !B.last_run || !B.runs_at || !B.owned) r = gpuir__oom(m->ctx, "bufferize");
    if (!r) r = gpuir__bufferize_schedule(&B, fid);
    const gpuir__func *f = gpuir__func_at(m, fid);
    for (size_t i = 0; !r && i < stbds_arrlenu(f->params); i++) {
        gpuir__value *p = gpuir__value_at(m, f->params[i]);
        p->type = gpuir__as_memref(p->type, GPUIR_SPACE_HOST);
        B.buf[f->params[i] - 1] = f->params[i];
    }
    bool rewriting = r == GPUIR_OK;
    if (rewriting) gpuir__rewrite_begin(m, fid);
    for (size_t i = 0; !r && i < n; i++) r = gpuir__bufferize_op(&B, gpuir__func_at(m, fid)->ops[i], i);
    if (rewriting) gpuir__rewrite_end(m, r == GPUIR_OK);
    if (!r) r = gpuir__insert_deallocs(m, fid, B.owned, GPUIR_OP_MEMREF_DEALLOC);
    free(B.buf);
    free(B.last_use);
    free(B.last_run);
    free(B.runs_at);
    free(B.owned);
    return r;
}

static gpuir_result gpuir__pass_bufferize(gpuir_module *m) {
    return gpuir__each_host_func(m, gpuir__bufferize_func);
}

/* ====================================================================== */
// >>pass.outline
// Each fusion group of a bufferized host function becomes a kernel in
// gpu.module @kernels and a gpu.launch_func where the group's last op was.
// The kernel takes the buffers the group reads from outside (first) and the
// buffers it writes that are used outside it; buffers only the group uses
// become private temporaries of the kernel (their host allocation goes), and
// splat constants are copied into each kernel that reads them, so they stay
// compile-time constants. Reads: ir, build. Writes: ir.

typedef struct gpuir__group {
    int64_t key;            /* the fusion attribute, or a unique key */
    size_t last;            /* index of its last op in the host function */
    uint32_t *ops;          /* stb_ds arrays: op ids in order; buffer value ids */
    uint32_t *params;       /*   the kernel's parameters: inputs, then outputs */
    uint32_t *internal;     /*   written and read only inside the group */
    uint32_t *splats;       /*   splat constants it reads (copied in) */
    uint32_t kernel;        /* the kernel's func id */
} gpuir__group;

typedef struct gpuir__outliner {
    gpuir_module *m;
    uint32_t fid;
    gpuir__group *groups;   /* stb_ds */
    uint32_t *splat_of;     /* buffer value id - 1 -> op filling it with a splat */
    uint32_t *group_of;     /* op index + 1 -> group index + 1 */
    uint32_t *user_group;   /* buffer value id - 1 -> the group of its first group user */
    bool *many_groups;      /*                    -> used by two groups or more */
    bool *host_use;         /*                    -> used by a host op (frees, fills aside) */
    size_t *group_by_key;   /* fusion key (1..ops) -> group index + 1 */
    uint8_t *role;          /* buffer value id - 1 -> GPUIR__INTERNAL | GPUIR__PARAM */
} gpuir__outliner;

enum { GPUIR__INTERNAL = 1, GPUIR__PARAM = 2 };   /* what a buffer is to some kernel */

static bool gpuir__ids_have(const uint32_t *ids, uint32_t v) {
    for (size_t i = 0; i < stbds_arrlenu(ids); i++)
        if (ids[i] == v) return true;
    return false;
}

static bool gpuir__is_splat_fill(const gpuir_module *m, const gpuir__op *op) {
    const gpuir__attr *v = op->kind == GPUIR_OP_CONSTANT && !op->result ? gpuir__attr_find(m, op, "value") : NULL;
    return v && v->kind != GPUIR__ATTR_DENSE;
}

/* Groups the function's buffer-form computing ops by their fusion key. */
static void gpuir__outline_collect(gpuir__outliner *O) {
    gpuir_module *m = O->m;
    const gpuir__func *f = gpuir__func_at(m, O->fid);
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (op->result || !gpuir__class_computes(gpuir__info(op->kind)->cls)) continue;
        if (op->kind == GPUIR_OP_CONSTANT) {     /* fills stay on the host; splats are copied */
            if (gpuir__is_splat_fill(m, op)) O->splat_of[gpuir__op_operand(m, op, 0) - 1] = f->ops[i];
            continue;
        }
        int64_t key = gpuir__op_int_attr(m, op, "fusion", -1 - (int64_t)i);
        size_t g = 0, n_ops = stbds_arrlenu(f->ops);
        if (key >= 1 && (size_t)key <= n_ops && O->group_by_key[key])
            g = O->group_by_key[key] - 1;
        else if (key >= 1 && (size_t)key <= n_ops) g = stbds_arrlenu(O->groups);
        else
            while (g < stbds_arrlenu(O->groups) && O->groups[g].key != key) g++;
        if (key >= 1 && (size_t)key <= n_ops) O->group_by_key[key] = g + 1;
        if (g == stbds_arrlenu(O->groups)) {
            gpuir__group grp;
            memset(&grp, 0, sizeof grp);
            grp.key = key;
            stbds_arrput(O->groups, grp);
        }
        stbds_arrput(O->groups[g].ops, f->ops[i]);
        O->groups[g].last = i;
        O->group_of[i] = (uint32_t)g + 1;
    }
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {   /* a splat buffer written later */
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);  /* is an ordinary buffer */
        if (O->group_of[i]) O->splat_of[gpuir__op_operand(m, op, op->n_operands - 1) - 1] = 0;
    }
}

/* Who uses each buffer: host ops (frees and splat fills aside), and which
   groups. */
static void gpuir__outline_users(gpuir__outliner *O) {
    const gpuir__func *f = gpuir__func_at(O->m, O->fid);
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(O->m, f->ops[i]);
        uint32_t g = O->group_of[i];
        if (!g && (op->kind == GPUIR_OP_MEMREF_DEALLOC || gpuir__is_splat_fill(O->m, op))) continue;
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t b = gpuir__op_operand(O->m, op, k) - 1;
            if (!g) O->host_use[b] = true;
            else if (!O->user_group[b]) O->user_group[b] = g;
            else if (O->user_group[b] != g) O->many_groups[b] = true;
        }
    }
}

/* Whether buffer b is used outside group g (by a host op when g is
   SIZE_MAX), its deallocation and splat fills aside. */
static bool gpuir__used_outside(const gpuir__outliner *O, size_t g, uint32_t b) {
    if (O->host_use[b - 1]) return true;
    if (g == SIZE_MAX) return false;
    return O->many_groups[b - 1] || (O->user_group[b - 1] && O->user_group[b - 1] != g + 1);
}

/* Sorts a group's buffers into parameters, temporaries and splats. */
static void gpuir__outline_classify(gpuir__outliner *O, size_t g) {
    gpuir_module *m = O->m;
    gpuir__group *grp = &O->groups[g];
    uint32_t *written = NULL, *outs = NULL;
    for (size_t i = 0; i < stbds_arrlenu(grp->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, grp->ops[i]);
        for (uint32_t k = 0; k + 1 < op->n_operands; k++) {
            uint32_t b = gpuir__op_operand(m, op, k);
            if (gpuir__ids_have(written, b) || gpuir__ids_have(grp->params, b) ||
                gpuir__ids_have(grp->splats, b))
                continue;
            if (O->splat_of[b - 1]) stbds_arrput(grp->splats, b);
            else stbds_arrput(grp->params, b);
        }
        uint32_t dst = gpuir__op_operand(m, op, op->n_operands - 1);
        if (!gpuir__ids_have(written, dst)) stbds_arrput(written, dst);
    }
    for (size_t i = 0; i < stbds_arrlenu(written); i++) {
        uint32_t b = written[i];
        bool from_host = gpuir__op_at(m, gpuir__value_at(m, b)->def_op) == NULL ||
                         gpuir__op_at(m, gpuir__value_at(m, b)->def_op)->kind != GPUIR_OP_MEMREF_ALLOC;
        if (from_host || gpuir__used_outside(O, g, b)) {
            if (!gpuir__ids_have(grp->params, b)) stbds_arrput(outs, b);
        } else if (!gpuir__ids_have(grp->params, b)) {
            stbds_arrput(grp->internal, b);
        }
    }
    for (size_t i = 0; i < stbds_arrlenu(outs); i++) stbds_arrput(grp->params, outs[i]);
    stbds_arrfree(written);
    stbds_arrfree(outs);
}

/* Looks a host buffer up in a small map (host id -> kernel id). */
static uint32_t gpuir__map_get(const uint32_t *from, const uint32_t *to, uint32_t v) {
    for (size_t i = 0; i < stbds_arrlenu(from); i++)
        if (from[i] == v) return to[i];
    return v;
}

/* Builds kernel @<func>_k<g> from group g. */
static gpuir_result gpuir__outline_kernel(gpuir__outliner *O, size_t g) {
    gpuir_module *m = O->m;
    gpuir__group *grp = &O->groups[g];
    char name[GPUIR_MAX_NAME];
    snprintf(name, sizeof name, "%.100s_k%zu", gpuir__string(m, gpuir__func_at(m, O->fid)->name), g);
    uint32_t kid = gpuir__func_begin(m, name), *from = NULL, *to = NULL;
    if (!kid) return m->ctx->result;
    m->funcs[kid - 1].kernel = true;
    grp->kernel = kid;
    for (size_t i = 0; i < stbds_arrlenu(grp->params); i++) {
        char pname[32];
        snprintf(pname, sizeof pname, "arg%zu", i);
        gpuir_value p = gpuir_param(m, pname, gpuir__as_memref(gpuir__value_at(m, grp->params[i])->type,
                                                               GPUIR_SPACE_DEVICE));
        stbds_arrput(from, grp->params[i]);
        stbds_arrput(to, p.id);
    }
    uint32_t *temps[2] = {grp->internal, grp->splats};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < stbds_arrlenu(temps[t]); i++) {     /* private temporaries */
            gpuir_type ty = gpuir__as_memref(gpuir__value_at(m, temps[t][i])->type, 5);
            gpuir_value a = gpuir__build_value(m, GPUIR_OP_MEMREF_ALLOC, NULL, 0, 0, 0, &ty);
            stbds_arrput(from, temps[t][i]);
            stbds_arrput(to, a.id);
            if (t == 1 && a.id) {
                const gpuir__op *fill = gpuir__op_at(m, O->splat_of[temps[t][i] - 1]);
                gpuir__build_op_ex(m, GPUIR_OP_CONSTANT, &a.id, 1, fill->attrs, fill->n_attrs, NULL, false);
            }
        }
    for (size_t i = 0; i < stbds_arrlenu(grp->ops) && m->ctx->result == GPUIR_OK; i++) {
        const gpuir__op *op = gpuir__op_at(m, grp->ops[i]);
        uint32_t ids[GPUIR_MAX_OPERANDS];
        for (uint32_t k = 0; k < op->n_operands; k++) ids[k] = gpuir__map_get(from, to, gpuir__op_operand(m, op, k));
        gpuir__build_op_ex(m, op->kind, ids, op->n_operands, op->attrs, op->n_attrs, NULL, false);
    }
    stbds_arrfree(from);
    stbds_arrfree(to);
    if (m->ctx->result != GPUIR_OK) return m->ctx->result;
    return gpuir_func_return(m, 0, NULL);
}

/* Whether host op `op` goes: it serves only buffers that moved into kernels,
   or it is a deallocation (they are placed anew once the launches stand). */
static bool gpuir__outline_drops(const gpuir__outliner *O, const gpuir__op *op) {
    gpuir_module *m = O->m;
    uint32_t b = 0;
    if (op->kind == GPUIR_OP_MEMREF_DEALLOC) return true;
    if (op->kind == GPUIR_OP_MEMREF_ALLOC) b = op->result;
    else if (op->kind == GPUIR_OP_MEMREF_DEALLOC || gpuir__is_splat_fill(m, op)) b = gpuir__op_operand(m, op, 0);
    if (!b) return false;
    if (O->role[b - 1] & GPUIR__INTERNAL) return true;
    if (!O->splat_of[b - 1] || (O->role[b - 1] & GPUIR__PARAM)) return false;
    return !gpuir__used_outside(O, SIZE_MAX, b);                /* a splat nobody else reads */
}

/* Frees every buffer a function allocates with `alloc` after its last use
   (or never, when it is returned), with `dealloc`. */
static gpuir_result gpuir__free_allocs(gpuir_module *m, uint32_t fid, gpuir_op_kind alloc,
                                       gpuir_op_kind dealloc) {
    bool *owned = (bool *)calloc(stbds_arrlenu(m->values) + 1, sizeof *owned);
    if (!owned) return gpuir__oom(m->ctx, "placing deallocations");
    const gpuir__func *f = gpuir__func_at(m, fid);
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (op->kind == alloc) owned[op->result - 1] = true;
    }
    gpuir_result r = gpuir__insert_deallocs(m, fid, owned, dealloc);
    free(owned);
    return r;
}

static gpuir_result gpuir__outline_host(gpuir__outliner *O) {
    gpuir_module *m = O->m;
    size_t n = stbds_arrlenu(gpuir__func_at(m, O->fid)->ops);
    gpuir__rewrite_begin(m, O->fid);
    for (size_t i = 0; i < n && m->ctx->result == GPUIR_OK; i++) {
        uint32_t op_id = gpuir__func_at(m, O->fid)->ops[i];
        const gpuir__op *op = gpuir__op_at(m, op_id);
        uint32_t g = O->group_of[i];
        if (!g) {
            if (!gpuir__outline_drops(O, op)) gpuir__rewrite_keep(m, op_id);
            continue;
        }
        const gpuir__group *grp = &O->groups[g - 1];
        if (grp->last != i) continue;
        char sym[GPUIR_MAX_NAME + 16];
        snprintf(sym, sizeof sym, "%s::%s", GPUIR__KERNEL_MODULE, gpuir__string(m, m->funcs[grp->kernel - 1].name));
        uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
        gpuir__attr_push_symbol(m, "kernel", sym);
        gpuir__build_op(m, GPUIR_OP_GPU_LAUNCH_FUNC, grp->params, (uint32_t)stbds_arrlenu(grp->params),
                        first, 1, NULL);
    }
    gpuir_result r = m->ctx->result;
    gpuir__rewrite_end(m, r == GPUIR_OK);
    return r ? r : gpuir__free_allocs(m, O->fid, GPUIR_OP_MEMREF_ALLOC, GPUIR_OP_MEMREF_DEALLOC);
}

static gpuir_result gpuir__outline_func(gpuir_module *m, uint32_t fid) {
    const gpuir__func *fn = gpuir__func_at(m, fid);
    for (size_t i = 0; i < stbds_arrlenu(fn->params); i++)
        if (gpuir__value_at(m, fn->params[i])->type.kind == GPUIR_TYPE_TENSOR)
            return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "outline: @%s is not bufferized (run "
                               "bufferize first)", gpuir__string(m, fn->name));
    gpuir__outliner O;
    memset(&O, 0, sizeof O);
    O.m = m;
    O.fid = fid;
    size_t n = stbds_arrlenu(gpuir__func_at(m, fid)->ops);
    size_t nv = stbds_arrlenu(m->values) + 1;
    O.splat_of = (uint32_t *)calloc(nv, sizeof *O.splat_of);
    O.group_of = (uint32_t *)calloc(n + 1, sizeof *O.group_of);
    O.user_group = (uint32_t *)calloc(nv, sizeof *O.user_group);
    O.many_groups = (bool *)calloc(nv, sizeof *O.many_groups);
    O.host_use = (bool *)calloc(nv, sizeof *O.host_use);
    O.group_by_key = (size_t *)calloc(n + 2, sizeof *O.group_by_key);
    O.role = (uint8_t *)calloc(nv, sizeof *O.role);
    gpuir_result r = O.splat_of && O.group_of && O.user_group && O.many_groups && O.host_use &&
                     O.group_by_key && O.role ? GPUIR_OK : gpuir__oom(m->ctx, "outline");
    if (!r) gpuir__outline_collect(&O);
    if (!r) gpuir__outline_users(&O);
    for (size_t g = 0; !r && g < stbds_arrlenu(O.groups); g++) {
        gpuir__outline_classify(&O, g);
        for (size_t i = 0; i < stbds_arrlenu(O.groups[g].internal); i++) O.role[O.groups[g].internal[i] - 1] |= GPUIR__INTERNAL;
        for (size_t i = 0; i < stbds_arrlenu(O.groups[g].params); i++) O.role[O.groups[g].params[i] - 1] |= GPUIR__PARAM;
    }
    for (size_t g = 0; !r && g < stbds_arrlenu(O.groups); g++) r = gpuir__outline_kernel(&O, g);
    if (!r && stbds_arrlenu(O.groups)) r = gpuir__outline_host(&O);
    for (size_t g = 0; g < stbds_arrlenu(O.groups); g++) {
        stbds_arrfree(O.groups[g].ops);
        stbds_arrfree(O.groups[g].params);
        stbds_arrfree(O.groups[g].internal);
        stbds_arrfree(O.groups[g].splats);
    }
    stbds_arrfree(O.groups);
    free(O.splat_of);
    free(O.group_of);
    free(O.user_group);
    free(O.many_groups);
    free(O.host_use);
    free(O.group_by_key);
    free(O.role);
    return r;
}

static gpuir_result gpuir__pass_outline(gpuir_module *m) {
    return gpuir__each_host_func(m, gpuir__outline_func);
}

/* ====================================================================== */
// >>pass.place
// Device memory and copies for host functions after outline. Each host buffer
// a kernel touches gets a device twin (gpu.alloc) before its first launch;
// buffers only kernels touch live on the device alone; a twin gets its data
// (H2D) only before a kernel that reads it before writing it and only when
// the device copy is stale; the host gets data back (D2H) only before a host
// op or the return reads it, and for parameters a kernel wrote; every device
// buffer is freed after its last use. A parameter already in device memory is
// used as it is. The pass writes a report of each decision and its reason.
// Reads: ir, build. Writes: ir, the placement report.

enum { GPUIR__ON_HOST = 1, GPUIR__ON_DEVICE = 2 };   /* where a buffer's data is current */

typedef struct gpuir__placer {
    gpuir_module *m;
    uint32_t fid;
    uint32_t *twin;         /* host buffer id - 1 -> its device twin (0: none yet) */
    uint8_t *valid;         /* host buffer id - 1 -> GPUIR__ON_* bits */
    bool *device_only;      /* a memref.alloc no host op touches */
    bool *wrote_on_device;  /* a kernel has written it */
    gpuir__str report;
} gpuir__placer;

/* How kernel `k` uses its parameter i: reads it before writing it, writes it. */
static void gpuir__param_access(const gpuir_module *m, const gpuir__func *k, size_t i,
                                bool *reads_first, bool *writes) {
    uint32_t p = k->params[i];
    *reads_first = *writes = false;
    bool written = false;
    for (size_t j = 0; j < stbds_arrlenu(k->ops); j++) {
        const gpuir__op *op = gpuir__op_at(m, k->ops[j]);
        bool dps = !op->result && gpuir__class_computes(gpuir__info(op->kind)->cls);
        for (uint32_t a = 0; a < op->n_operands; a++) {
            if (gpuir__op_operand(m, op, a) != p) continue;
            bool is_dst = dps && a + 1 == op->n_operands;
            if (!is_dst && !written) *reads_first = true;
            if (is_dst) { *writes = true; }
        }
        if (dps && gpuir__op_operand(m, op, op->n_operands - 1) == p) written = true;
    }
}

static const char *gpuir__buffer_name(const gpuir__placer *P, uint32_t b, char *buf, size_t size) {
    const gpuir__value *v = gpuir__value_at(P->m, b);
    const gpuir__op *def = gpuir__op_at(P->m, v->def_op);
    if (!def) snprintf(buf, size, "%%%s", gpuir__string(P->m, v->name));
    else if (def->kind == GPUIR_OP_MEMREF_GET_GLOBAL)
        snprintf(buf, size, "@%s", gpuir__string(P->m, gpuir__attr_find(P->m, def, "name")->off));
    else snprintf(buf, size, "buffer of op %u (%s)", v->def_op, gpuir_op_name(def->kind));
    return buf;
}

static void gpuir__place_note(gpuir__placer *P, uint32_t b, const char *fmt, const char *kernel) {
    char name[GPUIR_MAX_NAME + 32];
    gpuir__str_appendf(&P->report, "@%s: %s: ", gpuir__string(P->m, gpuir__func_at(P->m, P->fid)->name),
                       gpuir__buffer_name(P, b, name, sizeof name));
    gpuir__str_appendf(&P->report, fmt, kernel);
    gpuir__str_appendf(&P->report, "\n");
}

/* Marks memref.allocs that only launches and frees touch: device-only. */
static void gpuir__place_find_device_only(gpuir__placer *P) {
    gpuir_module *m = P->m;
    const gpuir__func *f = gpuir__func_at(m, P->fid);
    bool *host_use = (bool *)calloc(stbds_arrlenu(m->values) + 1, sizeof *host_use);
    if (!host_use) return;
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (op->kind == GPUIR_OP_GPU_LAUNCH_FUNC || op->kind == GPUIR_OP_MEMREF_DEALLOC) continue;
        for (uint32_t k = 0; k < op->n_operands; k++) host_use[gpuir__op_operand(m, op, k) - 1] = true;
    }
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (op->kind == GPUIR_OP_MEMREF_ALLOC && op->result && !host_use[op->result - 1])
            P->device_only[op->result - 1] = true;
    }
    free(host_use);
}

/* The device buffer standing for host buffer b, allocated on first need. */
static uint32_t gpuir__place_twin(gpuir__placer *P, uint32_t b) {
    gpuir_module *m = P->m;
    if (P->twin[b - 1]) return P->twin[b - 1];
    gpuir_type t = gpuir__as_memref(gpuir__value_at(m, b)->type, GPUIR_SPACE_DEVICE);
    gpuir_value d = gpuir__build_value(m, GPUIR_OP_GPU_ALLOC, NULL, 0, 0, 0, &t);
    P->twin[b - 1] = d.id;
    return d.id;
}

static void gpuir__place_copy(gpuir__placer *P, uint32_t dst, uint32_t src) {
    uint32_t ids[2] = {dst, src};
    gpuir__build_op(P->m, GPUIR_OP_GPU_MEMCPY, ids, 2, 0, 0, NULL);
}

/* A launch: twins for its host buffers, H2D where the kernel reads stale data. */
static void gpuir__place_launch(gpuir__placer *P, const gpuir__op *op) {
    gpuir_module *m = P->m;
    const gpuir__attr *sym = gpuir__attr_find(m, op, "kernel");
    uint32_t kid = gpuir__launch_target(m, gpuir__string(m, sym->off));
    const char *kname = gpuir__string(m, gpuir__func_at(m, kid)->name);
    uint32_t host[GPUIR_MAX_OPERANDS] = {0}, dev[GPUIR_MAX_OPERANDS] = {0}, n = op->n_operands;
    uint32_t attrs = op->attrs, n_attrs = op->n_attrs;
    bool writes[GPUIR_MAX_OPERANDS] = {false};
    for (uint32_t i = 0; i < n; i++) host[i] = dev[i] = gpuir__op_operand(m, op, i);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t b = host[i];
        bool reads_first;
        gpuir__param_access(m, gpuir__func_at(m, kid), i, &reads_first, &writes[i]);
        if (gpuir__value_at(m, b)->type.space == GPUIR_SPACE_DEVICE) continue;   /* already there */
        bool fresh = !P->twin[b - 1];
        dev[i] = gpuir__place_twin(P, b);
        if (fresh && P->device_only[b - 1])
            gpuir__place_note(P, b, "device only: no host op touches it (first used by @%s)", kname);
        if (reads_first && !(P->valid[b - 1] & GPUIR__ON_DEVICE) && (P->valid[b - 1] & GPUIR__ON_HOST)) {
            gpuir__place_copy(P, dev[i], b);
            P->valid[b - 1] |= GPUIR__ON_DEVICE;
            gpuir__place_note(P, b, "H2D before @%s, which reads it", kname);
        } else if (fresh && !reads_first && !P->device_only[b - 1]) {
            gpuir__place_note(P, b, "no H2D: @%s writes all of it before any read", kname);
        }
    }
    gpuir__build_op(m, GPUIR_OP_GPU_LAUNCH_FUNC, dev, n, attrs, n_attrs, NULL);
    for (uint32_t i = 0; i < n; i++)
        if (writes[i] && gpuir__value_at(m, host[i])->type.space != GPUIR_SPACE_DEVICE) {
            P->valid[host[i] - 1] = GPUIR__ON_DEVICE;
            P->wrote_on_device[host[i] - 1] = true;
        }
}

/* D2H of b before a host op reads it, if the host copy is stale. */
static void gpuir__place_fetch(gpuir__placer *P, uint32_t b, const char *why) {
    if (!P->twin[b - 1] || (P->valid[b - 1] & GPUIR__ON_HOST) || !(P->valid[b - 1] & GPUIR__ON_DEVICE))
        return;
    gpuir__place_copy(P, b, P->twin[b - 1]);
    P->valid[b - 1] |= GPUIR__ON_HOST;
    gpuir__place_note(P, b, "D2H: %s", why);
}

/* memref.copy %src, %dst whose source is current only on the device: the
   copy happens there (gpu.memcpy between the twins) and nothing crosses. */
static bool gpuir__place_device_copy(gpuir__placer *P, const gpuir__op *op) {
    gpuir_module *m = P->m;
    if (op->kind != GPUIR_OP_MEMREF_COPY) return false;
    uint32_t src = gpuir__op_operand(m, op, 0), dst = gpuir__op_operand(m, op, 1);
    if (!P->twin[src - 1] || P->valid[src - 1] != GPUIR__ON_DEVICE) return false;
    uint32_t d = gpuir__place_twin(P, dst);
    gpuir__place_copy(P, d, P->twin[src - 1]);
    P->valid[dst - 1] = GPUIR__ON_DEVICE;
    P->wrote_on_device[dst - 1] = true;
    gpuir__place_note(P, dst, "%s: its source is current on the device, so the copy is device to "
                      "device", "memref.copy");
    return true;
}

/* A host op: fetch what it reads; what it writes is current on the host only. */
static void gpuir__place_host_op(gpuir__placer *P, uint32_t op_id) {
    gpuir_module *m = P->m;
    const gpuir__op *op = gpuir__op_at(m, op_id);
    if (gpuir__place_device_copy(P, op)) return;
    uint32_t n = op->n_operands, ids[GPUIR_MAX_OPERANDS];
    bool dps = !op->result && gpuir__class_computes(gpuir__info(op->kind)->cls);
    int written = dps ? (int)n - 1 : op->kind == GPUIR_OP_MEMREF_COPY ? 1 : -1;
    bool ret = op->kind == GPUIR_OP_RETURN;
    for (uint32_t i = 0; i < n; i++) ids[i] = gpuir__op_operand(m, op, i);
    bool reads = op->kind != GPUIR_OP_MEMREF_DEALLOC;      /* freeing reads nothing */
    for (uint32_t i = 0; i < n && reads; i++)
        if ((int)i != written) gpuir__place_fetch(P, ids[i], ret ? "it is returned" : "the host reads it");
    if (ret) {                       /* parameters kernels wrote go back to the caller */
        const gpuir__func *f = gpuir__func_at(m, P->fid);
        for (size_t i = 0; i < stbds_arrlenu(f->params); i++)
            if (P->wrote_on_device[f->params[i] - 1])
                gpuir__place_fetch(P, f->params[i], "an out-parameter a kernel wrote");
    }
    if (written >= 0) P->valid[ids[written] - 1] = GPUIR__ON_HOST;
    gpuir__rewrite_keep(m, op_id);
}

static bool gpuir__is_placed(const gpuir_module *m, const gpuir__func *f);

static gpuir_result gpuir__place_func(gpuir_module *m, uint32_t fid) {
    if (gpuir__is_placed(m, gpuir__func_at(m, fid))) return GPUIR_OK;   /* it manages its own */
    size_t nv = stbds_arrlenu(m->values) + 2 * stbds_arrlenu(gpuir__func_at(m, fid)->ops) + 2;
    gpuir__placer P;
    memset(&P, 0, sizeof P);
    P.m = m;
    P.fid = fid;
    P.twin = (uint32_t *)calloc(nv, sizeof *P.twin);
    P.valid = (uint8_t *)calloc(nv, sizeof *P.valid);
    P.device_only = (bool *)calloc(nv, sizeof *P.device_only);
    P.wrote_on_device = (bool *)calloc(nv, sizeof *P.wrote_on_device);
    gpuir_result r = P.twin && P.valid && P.device_only && P.wrote_on_device ? GPUIR_OK
                   : gpuir__oom(m->ctx, "place");
    const gpuir__func *f = gpuir__func_at(m, fid);
    for (size_t i = 0; !r && i < stbds_arrlenu(f->params); i++) P.valid[f->params[i] - 1] = GPUIR__ON_HOST;
    if (!r) gpuir__place_find_device_only(&P);
    size_t n = stbds_arrlenu(f->ops);
    bool rewriting = r == GPUIR_OK;
    if (rewriting) gpuir__rewrite_begin(m, fid);
    for (size_t i = 0; !r && i < n; i++) {
        uint32_t op_id = gpuir__func_at(m, fid)->ops[i];
        const gpuir__op *op = gpuir__op_at(m, op_id);
        if (op->kind == GPUIR_OP_GPU_LAUNCH_FUNC) gpuir__place_launch(&P, op);
        else if ((op->kind == GPUIR_OP_MEMREF_ALLOC || op->kind == GPUIR_OP_MEMREF_DEALLOC) &&
                 P.device_only[(op->result ? op->result : gpuir__op_operand(m, op, 0)) - 1])
            continue;                                /* lives on the device alone */
        else if (op->kind == GPUIR_OP_MEMREF_GET_GLOBAL) {
            P.valid[op->result - 1] = GPUIR__ON_HOST;
            gpuir__rewrite_keep(m, op_id);
        } else gpuir__place_host_op(&P, op_id);
        r = m->ctx->result;
    }
    if (rewriting) gpuir__rewrite_end(m, r == GPUIR_OK);
    if (!r) r = gpuir__free_allocs(m, fid, GPUIR_OP_GPU_ALLOC, GPUIR_OP_GPU_DEALLOC);
    const char *text = gpuir__str_cstr(&P.report);
    for (size_t i = 0; text[i]; i++) stbds_arrput(m->placement_report, text[i]);
    gpuir__str_free(&P.report);
    free(P.twin);
    free(P.valid);
    free(P.device_only);
    free(P.wrote_on_device);
    return r;
}

/* Whether a function already manages device memory itself. */
static bool gpuir__is_placed(const gpuir_module *m, const gpuir__func *f) {
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        gpuir_op_kind k = gpuir__op_at(m, f->ops[i])->kind;
        if (k == GPUIR_OP_GPU_ALLOC || k == GPUIR_OP_GPU_DEALLOC || k == GPUIR_OP_GPU_MEMCPY) return true;
    }
    return false;
}

static gpuir_result gpuir__pass_place(gpuir_module *m) {
    stbds_arrfree(m->placement_report);
    m->placement_report = NULL;
    gpuir_result r = gpuir__each_host_func(m, gpuir__place_func);
    stbds_arrput(m->placement_report, '\0');
    return r;
}

GPUIRDEF const char *gpuir_module_placement_report(const gpuir_module *m) {
    return m->placement_report ? m->placement_report : "";
}

/* ====================================================================== */
// >>pass.configure
// Gives each gpu.launch_func without grid and block a launch configuration
// from its kernel's shape: a thread per output element in blocks of 256 for
// elementwise kernels; a block per output element for reductions (block
// size from the reduced extent, 32..256); 64x64 output tiles on 16x16
// threads for matmuls, batches on z. A launch that has them keeps them (the
// text and the API override). Reads: ir. Writes: grid and block attributes.

static int64_t gpuir__ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The kernel's widest output: the destination with the most elements. */
static const gpuir_type *gpuir__kernel_output(const gpuir_module *m, const gpuir__func *k,
                                              gpuir_op_kind *kind_out, int64_t *reduced) {
    const gpuir_type *best = NULL;
    *kind_out = GPUIR_OP_INVALID;
    *reduced = 1;
    for (size_t i = 0; i < stbds_arrlenu(k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, k->ops[i]);
        if (op->result || !gpuir__class_computes(gpuir__info(op->kind)->cls)) continue;
        const gpuir_type *dst = &gpuir__value_at(m, gpuir__op_operand(m, op, op->n_operands - 1))->type;
        gpuir__op_class cls = gpuir__info(op->kind)->cls;
        if (cls == GPUIR__CLASS_MATMUL || cls == GPUIR__CLASS_REDUCE) {
            *kind_out = op->kind;
            best = dst;
            if (cls == GPUIR__CLASS_REDUCE) {
                const gpuir_type *src = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
                *reduced = gpuir__type_count(src) / (gpuir__type_count(dst) ? gpuir__type_count(dst) : 1);
            }
            return best;
        }
        if (!best || gpuir__type_count(dst) > gpuir__type_count(best)) best = dst;
    }
    return best;
}

static void gpuir__choose_launch(const gpuir_module *m, const gpuir__func *k, int64_t grid[3],
                                 int64_t block[3]) {
    gpuir_op_kind kind;
    int64_t reduced;
    const gpuir_type *out = gpuir__kernel_output(m, k, &kind, &reduced);
    int64_t count = out ? gpuir__type_count(out) : 1;
    grid[0] = grid[1] = grid[2] = block[0] = block[1] = block[2] = 1;
    if (count <= 0) return;
    if (kind == GPUIR_OP_MATMUL) {
        int64_t M = out->dims[out->rank - 2], N = out->dims[out->rank - 1];
        grid[0] = gpuir__ceil_div(N, 64);
        grid[1] = gpuir__ceil_div(M, 64);
        grid[2] = M > 0 && N > 0 ? count / (M * N) : 1;
        block[0] = block[1] = 16;
    } else if (gpuir__info(kind)->cls == GPUIR__CLASS_REDUCE) {
        block[0] = 32;
        while (block[0] < 256 && block[0] < reduced) block[0] *= 2;
        grid[0] = count;
    } else {
        block[0] = 256;
        grid[0] = gpuir__ceil_div(count, 256);
    }
    if (grid[0] > INT32_MAX) grid[0] = INT32_MAX;     /* the kernel loops over the rest */
    if (grid[1] > 65535) grid[1] = 65535;
    if (grid[2] > 65535) grid[2] = 65535;
}

static gpuir_result gpuir__pass_configure(gpuir_module *m) {
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++) {
        if (m->funcs[f].kernel) continue;
        for (size_t i = 0; i < stbds_arrlenu(m->funcs[f].ops); i++) {
            uint32_t op_id = m->funcs[f].ops[i];
            const gpuir__op *op = gpuir__op_at(m, op_id);
            if (op->kind != GPUIR_OP_GPU_LAUNCH_FUNC || gpuir__attr_find(m, op, "grid") ||
                gpuir__attr_find(m, op, "block"))
                continue;
            const gpuir__attr *sym = gpuir__attr_find(m, op, "kernel");
            const gpuir__func *k = gpuir__func_at(m, gpuir__launch_target(m, gpuir__string(m, sym->off)));
            int64_t grid[3], block[3];
            gpuir__choose_launch(m, k, grid, block);
            uint32_t first = (uint32_t)stbds_arrlenu(m->attrs), n = op->n_attrs, old = op->attrs;
            for (uint32_t a = 0; a < n; a++) {
                gpuir__attr copy = m->attrs[old + a];
                stbds_arrput(m->attrs, copy);
            }
            gpuir__attr_push_ints(m, "grid", 3, grid);
            gpuir__attr_push_ints(m, "block", 3, block);
            gpuir__op *w = gpuir__op_at(m, op_id);
            w->attrs = first;
            w->n_attrs = n + 2;
        }
    }
    return GPUIR_OK;
}

/* ====================================================================== */
// >>pass.plan-shared-memory
// Packs each kernel's workgroup buffers (memref.alloc in space 3) into one
// dynamic shared memory size, 16-byte aligned, carried on its launches as
// `smem`; above 48 KiB the runtime must raise the kernel's limit; above the
// context's max_shared_bytes it is an error naming the kernel.
// Reads: ir. Writes: smem attributes.

static gpuir_result gpuir__kernel_shared_bytes(gpuir_module *m, const gpuir__func *k, int64_t *bytes) {
    *bytes = 0;
    for (size_t i = 0; i < stbds_arrlenu(k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, k->ops[i]);
        if (op->kind != GPUIR_OP_MEMREF_ALLOC) continue;
        const gpuir_type *t = &gpuir__value_at(m, op->result)->type;
        if (t->space != GPUIR_SPACE_WORKGROUP) continue;
        int64_t size = gpuir__type_count(t) * (int64_t)gpuir_dtype_size(t->dtype);
        *bytes += (size + 15) / 16 * 16;
    }
    if (*bytes > (int64_t)m->ctx->desc.max_shared_bytes)
        return gpuir__fail(m->ctx, GPUIR_ERR_LIMIT, "kernel @%s needs %lld bytes "
                           "of shared memory, more than the limit of %u", gpuir__string(m, k->name),
                           (long long)*bytes, m->ctx->desc.max_shared_bytes);
    return GPUIR_OK;
}

static gpuir_result gpuir__pass_plan_shared_memory(gpuir_module *m) {
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++) {
        if (m->funcs[f].kernel) continue;
        for (size_t i = 0; i < stbds_arrlenu(m->funcs[f].ops); i++) {
            uint32_t op_id = m->funcs[f].ops[i];
            const gpuir__op *op = gpuir__op_at(m, op_id);
            if (op->kind != GPUIR_OP_GPU_LAUNCH_FUNC) continue;
            const gpuir__attr *sym = gpuir__attr_find(m, op, "kernel");
            int64_t bytes;
            gpuir_result r = gpuir__kernel_shared_bytes(
                m, gpuir__func_at(m, gpuir__launch_target(m, gpuir__string(m, sym->off))), &bytes);
            if (r) return r;
            if (bytes) gpuir__set_int_attr(m, op_id, "smem", bytes);
        }
    }
    return GPUIR_OK;
}

/* ---- the placed program as a graph (gpuir-opt --emit=dot) ---- */

static void gpuir__dot_buffer(gpuir__str *s, const gpuir_module *m, uint32_t v) {
    const gpuir__value *val = gpuir__value_at(m, v);
    gpuir__tbuf b;
    bool device = val->type.space == GPUIR_SPACE_DEVICE;
    const gpuir__op *def = gpuir__op_at(m, val->def_op);
    const char *name = !def ? gpuir__string(m, val->name) : "";
    char global[GPUIR_MAX_NAME + 1];
    if (def && def->kind == GPUIR_OP_MEMREF_GET_GLOBAL) {
        snprintf(global, sizeof global, "@%s", gpuir__string(m, gpuir__attr_find(m, def, "name")->off));
        name = global;
    }
    gpuir__str_appendf(s, "  v%u [shape=box, style=filled, fillcolor=%s, label=\"%s%s%s\"];\n", v,
                       device ? "orange" : "lightblue", name, *name ? "\\n" : "",
                       gpuir__tstr(&b, &val->type));
}

static void gpuir__dot_func(gpuir__str *s, gpuir_module *m, uint32_t fid) {
    const gpuir__func *f = gpuir__func_at(m, fid);
    gpuir__str_appendf(s, "subgraph cluster_%u {\n  label=\"@%s\";\n", fid, gpuir__string(m, f->name));
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++)
        if (gpuir__value_at(m, f->params[i])->type.kind == GPUIR_TYPE_MEMREF) gpuir__dot_buffer(s, m, f->params[i]);
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (op->result && gpuir__value_at(m, op->result)->type.kind == GPUIR_TYPE_MEMREF)
            gpuir__dot_buffer(s, m, op->result);
        if (op->kind == GPUIR_OP_GPU_MEMCPY) {
            uint32_t dst = gpuir__op_operand(m, op, 0), src = gpuir__op_operand(m, op, 1);
            bool h2d = gpuir__value_at(m, dst)->type.space == GPUIR_SPACE_DEVICE;
            gpuir__str_appendf(s, "  v%u -> v%u [label=\"%s\", color=%s];\n", src, dst,
                               h2d ? "H2D" : "D2H", h2d ? "blue" : "red");
        } else if (op->kind == GPUIR_OP_GPU_LAUNCH_FUNC) {
            const gpuir__attr *sym = gpuir__attr_find(m, op, "kernel");
            uint32_t kid = gpuir__launch_target(m, gpuir__string(m, sym->off));
            gpuir__str_appendf(s, "  op%u [shape=ellipse, label=\"@%s\"];\n", f->ops[i],
                               gpuir__string(m, gpuir__func_at(m, kid)->name));
            for (uint32_t k = 0; k < op->n_operands; k++) {
                bool reads, writes;
                gpuir__param_access(m, gpuir__func_at(m, kid), k, &reads, &writes);
                uint32_t b = gpuir__op_operand(m, op, k);
                if (reads || !writes) gpuir__str_appendf(s, "  v%u -> op%u;\n", b, f->ops[i]);
                if (writes) gpuir__str_appendf(s, "  op%u -> v%u;\n", f->ops[i], b);
            }
        }
    }
    gpuir__str_appendf(s, "}\n");
}

GPUIRDEF char *gpuir_module_print_dot(gpuir_module *m) {
    gpuir__str s = {NULL};
    gpuir__str_appendf(&s, "digraph gpuir {\nrankdir=LR;\nnode [fontname=\"monospace\"];\n");
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++)
        if (!m->funcs[f].kernel) gpuir__dot_func(&s, m, (uint32_t)f + 1);
    gpuir__str_appendf(&s, "}\n");
    char *text = gpuir__str_detach(&s);
    if (!text) gpuir__oom(m->ctx, "printing a graph");
    return text;
}

/* ====================================================================== */
// >>codegen.cuda
// Renders the kernel module of a lowered program as one CUDA C source. The
// kernels are written in a small portable dialect (GPUIR_* macros and
// gpuir_* helpers) that two preludes define: one for NVRTC, one for the CPU
// emulator (the host C compiler), so both compile the very same kernel text.
// Kernels: elementwise chains (a thread per element, grid-stride), a
// reduction fed by an elementwise chain (a block per output element), and a
// tiled matmul with its elementwise epilogue. The output is deterministic.
// Reads: ir. Writes: nothing.

/* The emulator's ABI, shared by rt.emu and the emulator prelude (which gets
   it as text, so the two cannot drift apart). */
#define GPUIR__STR(...) #__VA_ARGS__
#define GPUIR__XSTR(...) GPUIR__STR(__VA_ARGS__)
#define GPUIR__EMU_ABI                                                          \
    typedef struct gpuir_emu_dim3 { unsigned x, y, z; } gpuir_emu_dim3;         \
    typedef struct gpuir_emu_lane {                                             \
        gpuir_emu_dim3 thread_idx, block_idx, block_dim, grid_dim;              \
        unsigned lane_id, warp_id;                                              \
        unsigned char *shared;                                                  \
        unsigned long long *warp_slots;                                         \
        void (*sync_block)(struct gpuir_emu_lane *lane);                        \
        void (*sync_warp)(struct gpuir_emu_lane *lane);                         \
        void *engine;                                                           \
    } gpuir_emu_lane;                                                           \
    typedef struct gpuir_emu_kernel {                                           \
        const char *name;                                                       \
        void (*entry)(gpuir_emu_lane *lane, void **params);                     \
        unsigned shared_bytes;                                                  \
        int uses_barriers;                                                      \
    } gpuir_emu_kernel;

/* The helpers every kernel may use, in C that both CUDA C++ and C99 accept.
   Each prelude defines GPUIR_DEVICE, gpuir_as_uint and gpuir_as_float. */
static const char gpuir__cg_helpers[] =
    "GPUIR_DEVICE float gpuir_f16_to_f32(unsigned short h) {\n"
    "    unsigned sign = ((unsigned)h & 0x8000u) << 16, e = ((unsigned)h >> 10) & 0x1fu, m = (unsigned)h & 0x3ffu;\n"
    "    if (e == 0) { float v = (float)m * 5.9604644775390625e-8f; return sign ? -v : v; }\n"
    "    if (e == 31) return gpuir_as_float(sign | 0x7f800000u | (m << 13));\n"
    "    return gpuir_as_float(sign | ((e + 112u) << 23) | (m << 13));\n"
    "}\n"
    "GPUIR_DEVICE unsigned short gpuir_f32_to_f16(float f) {\n"
    "    unsigned x = gpuir_as_uint(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;\n"
    "    if (ax > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));\n"
    "    if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);\n"
    "    if (ax < 0x38800000u) return (unsigned short)(sign | (unsigned)rintf(gpuir_as_float(ax) * 16777216.0f));\n"
    "    ax -= 0x38000000u;\n"
    "    return (unsigned short)(sign | ((ax + 0x0fffu + ((ax >> 13) & 1u)) >> 13));\n"
    "}\n"
    "GPUIR_DEVICE float gpuir_bf16_to_f32(unsigned short h) { return gpuir_as_float((unsigned)h << 16); }\n"
    "GPUIR_DEVICE unsigned short gpuir_f32_to_bf16(float f) {\n"
    "    unsigned x = gpuir_as_uint(f);\n"
    "    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);\n"
    "    return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);\n"
    "}\n"
    "GPUIR_DEVICE float gpuir_round_f16(float x) { return gpuir_f16_to_f32(gpuir_f32_to_f16(x)); }\n"
    "GPUIR_DEVICE float gpuir_round_bf16(float x) { return gpuir_bf16_to_f32(gpuir_f32_to_bf16(x)); }\n"
    "GPUIR_DEVICE float gpuir_fmax(float a, float b) { return a != a || b != b ? a + b : a > b ? a : b; }\n"
    "GPUIR_DEVICE float gpuir_fmin(float a, float b) { return a != a || b != b ? a + b : a < b ? a : b; }\n"
    "GPUIR_DEVICE float gpuir_relu(float x) { return x > 0.0f || x != x ? x : 0.0f; }\n"
    "GPUIR_DEVICE float gpuir_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
    "GPUIR_DEVICE float gpuir_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.707106781186547524f)); }\n"
    "GPUIR_DEVICE float gpuir_silu(float x) { return x / (1.0f + expf(-x)); }\n"
    "GPUIR_DEVICE int gpuir_f2i32(float x) {\n"
    "    return x != x ? 0 : x >= 2147483648.0f ? 2147483647 : x <= -2147483648.0f ? -2147483647 - 1 : (int)x;\n"
    "}\n"
    "GPUIR_DEVICE long long gpuir_f2i64(float x) {\n"
    "    return x != x ? 0 : x >= 9223372036854775808.0f ? 9223372036854775807LL :\n"
    "           x <= -9223372036854775808.0f ? -9223372036854775807LL - 1 : (long long)x;\n"
    "}\n"
    "GPUIR_DEVICE int gpuir_div_i32(int a, int b) { return b == 0 ? 0 : (b == -1 ? (int)(0u - (unsigned)a) : a / b); }\n"
    "GPUIR_DEVICE long long gpuir_div_i64(long long a, long long b) {\n"
    "    return b == 0 ? 0 : (b == -1 ? (long long)(0ull - (unsigned long long)a) : a / b);\n"
    "}\n";

/* The NVRTC prelude: the dialect in CUDA C++ terms. No headers. */
static const char gpuir__cg_cuda_prelude[] =
    "/* gpuir CUDA prelude */\n"
    "#define GPUIR_DEVICE static __device__ __forceinline__\n"
    "#define GPUIR_KERNEL extern \"C\" __global__ void\n"
    "#define GPUIR_LANE\n"
    "#define GPUIR_LANE_ONLY\n"
    "#define GPUIR_SHARED(type, name, count, offset) __shared__ type name[count]\n"
    "#define GPUIR_SYNC() __syncthreads()\n"
    "#define GPUIR_SHFL_DOWN_F32(v, d) __shfl_down_sync(0xffffffffu, (v), (d))\n"
    "#define GPUIR_SHFL_DOWN_I64(v, d) __shfl_down_sync(0xffffffffu, (v), (d))\n"
    "#define GPUIR_INF __int_as_float(0x7f800000)\n"
    "#define GPUIR_NAN __int_as_float(0x7fc00000)\n"
    "#define gpuir_rsqrt(x) rsqrtf(x)\n"
    "GPUIR_DEVICE unsigned gpuir_as_uint(float x) { return __float_as_uint(x); }\n"
    "GPUIR_DEVICE float gpuir_as_float(unsigned x) { return __uint_as_float(x); }\n";

/* The common tail of both preludes: linear thread and block numbers. */
static const char gpuir__cg_ranks[] =
    "#define GPUIR_THREAD_RANK ((int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)))\n"
    "#define GPUIR_BLOCK_RANK ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z))\n"
    "#define GPUIR_GRID_BLOCKS ((long long)gridDim.x * gridDim.y * gridDim.z)\n"
    "#define GPUIR_BLOCK_THREADS ((int)(blockDim.x * blockDim.y * blockDim.z))\n";

/* The emulator prelude: the dialect in C, over gpuir_emu_lane (rt.emu). */
static const char gpuir__cg_emu_prelude[] =
    "/* gpuir emulator prelude */\n"
    "#include <math.h>\n"
    "#include <string.h>\n"
    "#define GPUIR_EMU 1\n"
    GPUIR__XSTR(GPUIR__EMU_ABI) "\n"
    "#define GPUIR_DEVICE static inline\n"
    "#define GPUIR_KERNEL static void\n"
    "#define GPUIR_LANE gpuir_emu_lane *gpuir__lane,\n"
    "#define GPUIR_LANE_ONLY gpuir_emu_lane *gpuir__lane\n"
    "#define GPUIR_SHARED(type, name, count, offset) type *name = (type *)(gpuir__lane->shared + (offset))\n"
    "#define GPUIR_SYNC() gpuir__lane->sync_block(gpuir__lane)\n"
    "#define GPUIR_SHFL_DOWN_F32(v, d) gpuir_emu_shfl_f32(gpuir__lane, (v), (d))\n"
    "#define GPUIR_SHFL_DOWN_I64(v, d) gpuir_emu_shfl_i64(gpuir__lane, (v), (d))\n"
    "#define GPUIR_INF __builtin_inff()\n"
    "#define GPUIR_NAN __builtin_nanf(\"\")\n"
    "#define threadIdx (gpuir__lane->thread_idx)\n"
    "#define blockIdx (gpuir__lane->block_idx)\n"
    "#define blockDim (gpuir__lane->block_dim)\n"
    "#define gridDim (gpuir__lane->grid_dim)\n"
    "#define gpuir_rsqrt(x) (1.0f / sqrtf(x))\n"
    "GPUIR_DEVICE unsigned gpuir_as_uint(float x) { unsigned u; memcpy(&u, &x, 4); return u; }\n"
    "GPUIR_DEVICE float gpuir_as_float(unsigned u) { float x; memcpy(&x, &u, 4); return x; }\n"
    "static unsigned long long gpuir_emu_shfl(gpuir_emu_lane *l, unsigned long long v, unsigned d) {\n"
    "    unsigned src = l->lane_id + d;\n"
    "    l->warp_slots[l->lane_id] = v;\n"
    "    l->sync_warp(l);\n"
    "    if (src < 32) v = l->warp_slots[src];\n"
    "    l->sync_warp(l);\n"
    "    return v;\n"
    "}\n"
    "static float gpuir_emu_shfl_f32(gpuir_emu_lane *l, float v, unsigned d) {\n"
    "    return gpuir_as_float((unsigned)gpuir_emu_shfl(l, gpuir_as_uint(v), d));\n"
    "}\n"
    "static long long gpuir_emu_shfl_i64(gpuir_emu_lane *l, long long v, unsigned d) {\n"
    "    return (long long)gpuir_emu_shfl(l, (unsigned long long)v, d);\n"
    "}\n";

/* ---- the generator's state ---- */

typedef struct gpuir__cg_var { gpuir_dtype dtype; } gpuir__cg_var;

typedef struct gpuir__cg {
    gpuir_module *m;
    gpuir__str *s;
    const gpuir__func *k;
    uint32_t *cur;          /* buffer value id - 1 -> var number + 1 of its value at
                               the current element (0: not in a register yet) */
    gpuir__cg_var *vars;    /* stb_ds: var number -> its dtype */
    int64_t threads;        /* threads per block of the kernel's launches */
    bool wide;              /* 64-bit indices */
    uint32_t shared_bytes;  /* static shared memory the kernel declares */
    bool barriers;          /* uses GPUIR_SYNC or shuffles */
    const char *ind;        /* indentation of per-element statements */
} gpuir__cg;

static const char *gpuir__cg_storage(gpuir_dtype d) {
    switch (d) {
    case GPUIR_F32: return "float";
    case GPUIR_F16: case GPUIR_BF16: return "unsigned short";
    case GPUIR_I32: return "int";
    default: return "long long";
    }
}

/* The type values of a dtype are computed in: float for all floats. */
static const char *gpuir__cg_ctype(gpuir_dtype d) {
    return gpuir_dtype_is_float(d) ? "float" : d == GPUIR_I32 ? "int" : "long long";
}

static const char *gpuir__cg_idx(const gpuir__cg *C) { return C->wide ? "long long" : "int"; }

static uint32_t gpuir__cg_new_var(gpuir__cg *C, gpuir_dtype d) {
    gpuir__cg_var v;
    v.dtype = d;
    stbds_arrput(C->vars, v);
    return (uint32_t)stbds_arrlenu(C->vars) - 1;
}

static gpuir_result gpuir__cg_fail(gpuir__cg *C, const gpuir__op *op, const char *why) {
    return gpuir__fail(C->m->ctx, GPUIR_ERR_VERIFY, "codegen: kernel @%s: %s%s%s", gpuir__string(C->m, C->k->name),
                       op ? gpuir_op_name(op->kind) : "", op ? ": " : "", why);
}

/* Index into the parameter list, or -1 for a kernel-private buffer. */
static int gpuir__cg_param_index(const gpuir__cg *C, uint32_t b) {
    for (size_t i = 0; i < stbds_arrlenu(C->k->params); i++)
        if (C->k->params[i] == b) return (int)i;
    return -1;
}

/* ---- index expressions ---- */

/* Appends the linear index, in an array of dims `td` (rank tr), of the
   element at linear index `ivar` of the space `sd` (rank sr), under NumPy
   broadcasting (right-aligned; size-1 dims repeat). */
static void gpuir__cg_bcast_index(gpuir__str *s, const int64_t *sd, int sr, const int64_t *td, int tr,
                                  const char *ivar) {
    int64_t tcount = 1, scount = 1;
    for (int i = 0; i < tr; i++) tcount *= td[i];
    for (int i = 0; i < sr; i++) scount *= sd[i];
    bool same = tr == sr && tcount == scount;
    for (int i = 0; same && i < tr; i++) same = td[i] == sd[i];
    if (same || (tcount == scount && tcount <= 1)) { gpuir__str_appendf(s, "%s", ivar); return; }
    if (tcount <= 1) { gpuir__str_appendf(s, "0"); return; }
    int64_t after = 1, tstride = 1;
    bool first = true;
    gpuir__str_appendf(s, "(");
    for (int d = sr - 1; d >= 0; d--) {
        int j = tr - sr + d;
        if (j >= 0 && td[j] != 1 && sd[d] != 1) {
            gpuir__str_appendf(s, "%s", first ? "" : " + ");
            if (after == 1) gpuir__str_appendf(s, "(%s %% %lld)", ivar, (long long)sd[d]);
            else if (d == 0) gpuir__str_appendf(s, "(%s / %lld)", ivar, (long long)after);
            else gpuir__str_appendf(s, "(%s / %lld %% %lld)", ivar, (long long)after, (long long)sd[d]);
            if (tstride != 1) gpuir__str_appendf(s, " * %lld", (long long)tstride);
            first = false;
        }
        if (j >= 0) tstride *= td[j];
        after *= sd[d];
    }
    gpuir__str_appendf(s, "%s)", first ? "0" : "");
}

static void gpuir__cg_type_index(gpuir__str *s, const gpuir_type *S, const gpuir_type *T, const char *ivar) {
    gpuir__cg_bcast_index(s, S->dims, S->rank, T->dims, T->rank, ivar);
}

/* ---- values ---- */

static void gpuir__cg_literal(gpuir__str *s, gpuir_dtype dt, const gpuir__attr *v) {
    if (!gpuir_dtype_is_float(dt)) {
        int64_t i = v->kind == GPUIR__ATTR_INT ? v->i : (int64_t)v->f;
        if (i == INT64_MIN) gpuir__str_appendf(s, "(-9223372036854775807LL - 1)");
        else gpuir__str_appendf(s, "%lldLL", (long long)i);
        return;
    }
    double f = v->kind == GPUIR__ATTR_INT ? (double)v->i : v->f;
    float x = (float)f;
    if (isnan(x)) gpuir__str_appendf(s, "GPUIR_NAN");
    else if (isinf(x)) gpuir__str_appendf(s, "%sGPUIR_INF", x < 0 ? "-" : "");
    else {
        char b[48];
        snprintf(b, sizeof b, "%.9g", (double)x);
        gpuir__str_appendf(s, "%s%sf", b, strpbrk(b, ".e") ? "" : ".0");
    }
}

/* Loads buffer b (a parameter) at the element of space S indexed by ivar. */
static uint32_t gpuir__cg_load(gpuir__cg *C, uint32_t b, const gpuir_type *S, const char *ivar) {
    gpuir_module *m = C->m;
    const gpuir_type *t = &gpuir__value_at(m, b)->type;
    uint32_t v = gpuir__cg_new_var(C, t->dtype);
    gpuir__str_appendf(C->s, "%s%s v%u = ", C->ind, gpuir__cg_ctype(t->dtype), v);
    if (t->dtype == GPUIR_F16) gpuir__str_appendf(C->s, "gpuir_f16_to_f32(");
    if (t->dtype == GPUIR_BF16) gpuir__str_appendf(C->s, "gpuir_bf16_to_f32(");
    gpuir__str_appendf(C->s, "p%d[", gpuir__cg_param_index(C, b));
    gpuir__cg_type_index(C->s, S, t, ivar);
    gpuir__str_appendf(C->s, "]%s;\n", t->dtype == GPUIR_F16 || t->dtype == GPUIR_BF16 ? ")" : "");
    C->cur[b - 1] = v + 1;
    return v;
}

/* The register holding operand b at the current element, loading it first
   if needed. */
static gpuir_result gpuir__cg_operand(gpuir__cg *C, const gpuir__op *op, uint32_t b, const gpuir_type *S,
                                      const char *ivar, uint32_t *var) {
    if (C->cur[b - 1]) { *var = C->cur[b - 1] - 1; return GPUIR_OK; }
    if (gpuir__cg_param_index(C, b) < 0)
        return gpuir__cg_fail(C, op, "reads a kernel-private buffer before anything writes it");
    *var = gpuir__cg_load(C, b, S, ivar);
    return GPUIR_OK;
}

/* Wraps a computed float expression so it is rounded to a narrow dtype. */
static const char *gpuir__cg_round_open(gpuir_dtype d) {
    return d == GPUIR_F16 ? "gpuir_round_f16(" : d == GPUIR_BF16 ? "gpuir_round_bf16(" : "(";
}

static void gpuir__cg_unary_expr(gpuir__str *s, gpuir_op_kind k, gpuir_dtype d, uint32_t x) {
    if (!gpuir_dtype_is_float(d)) {
        const char *u = d == GPUIR_I32 ? "unsigned" : "unsigned long long", *t = gpuir__cg_ctype(d);
        switch (k) {
        case GPUIR_OP_NEG: gpuir__str_appendf(s, "(%s)(0u - (%s)v%u)", t, u, x); return;
        case GPUIR_OP_ABS: gpuir__str_appendf(s, "(v%u < 0 ? (%s)(0u - (%s)v%u) : v%u)", x, t, u, x, x); return;
        default: gpuir__str_appendf(s, "(v%u > 0 ? v%u : 0)", x, x); return;     /* relu */
        }
    }
    static const char *const fn[GPUIR_OP_COUNT] = {
        [GPUIR_OP_ABS] = "fabsf", [GPUIR_OP_EXP] = "expf", [GPUIR_OP_LOG] = "logf",
        [GPUIR_OP_SQRT] = "sqrtf", [GPUIR_OP_RSQRT] = "gpuir_rsqrt", [GPUIR_OP_TANH] = "tanhf",
        [GPUIR_OP_SIGMOID] = "gpuir_sigmoid", [GPUIR_OP_RELU] = "gpuir_relu",
        [GPUIR_OP_GELU] = "gpuir_gelu", [GPUIR_OP_SILU] = "gpuir_silu"};
    if (k == GPUIR_OP_NEG) gpuir__str_appendf(s, "(-v%u)", x);
    else gpuir__str_appendf(s, "%s(v%u)", fn[k], x);
}

static void gpuir__cg_binary_expr(gpuir__str *s, gpuir_op_kind k, gpuir_dtype d, uint32_t a, uint32_t b) {
    static const char *const sym[GPUIR_OP_COUNT] = {
        [GPUIR_OP_ADD] = "+", [GPUIR_OP_SUB] = "-", [GPUIR_OP_MUL] = "*", [GPUIR_OP_DIV] = "/"};
    if (gpuir_dtype_is_float(d)) {
        if (k == GPUIR_OP_MAX || k == GPUIR_OP_MIN || k == GPUIR_OP_POW)
            gpuir__str_appendf(s, "%s(v%u, v%u)", k == GPUIR_OP_MAX ? "gpuir_fmax" : k == GPUIR_OP_MIN ?
                               "gpuir_fmin" : "powf", a, b);
        else gpuir__str_appendf(s, "(v%u %s v%u)", a, sym[k], b);
        return;
    }
    const char *u = d == GPUIR_I32 ? "unsigned" : "unsigned long long", *t = gpuir__cg_ctype(d);
    if (k == GPUIR_OP_DIV) gpuir__str_appendf(s, "gpuir_div_%s(v%u, v%u)", d == GPUIR_I32 ? "i32" : "i64", a, b);
    else if (k == GPUIR_OP_MAX || k == GPUIR_OP_MIN)
        gpuir__str_appendf(s, "(v%u %s v%u ? v%u : v%u)", a, k == GPUIR_OP_MAX ? ">" : "<", b, a, b);
    else gpuir__str_appendf(s, "(%s)((%s)v%u %s (%s)v%u)", t, u, a, sym[k], u, b);
}

static void gpuir__cg_cast_expr(gpuir__str *s, gpuir_dtype from, gpuir_dtype to, uint32_t x) {
    bool ff = gpuir_dtype_is_float(from), tf = gpuir_dtype_is_float(to);
    if (ff && !tf) gpuir__str_appendf(s, "gpuir_f2%s(v%u)", to == GPUIR_I32 ? "i32" : "i64", x);
    else if (!ff && tf) gpuir__str_appendf(s, "(float)v%u", x);
    else if (!ff && to == GPUIR_I32) gpuir__str_appendf(s, "(int)(unsigned)(unsigned long long)v%u", x);
    else if (!ff) gpuir__str_appendf(s, "(long long)v%u", x);
    else gpuir__str_appendf(s, "v%u", x);
}

/* Emits one elementwise-class op at the current element. */
static gpuir_result gpuir__cg_compute(gpuir__cg *C, const gpuir__op *op, const gpuir_type *S,
                                      const char *ivar) {
    gpuir_module *m = C->m;
    uint32_t dst = gpuir__op_operand(m, op, op->n_operands - 1), x = 0, y = 0;
    gpuir_dtype d = gpuir__value_at(m, dst)->type.dtype;
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    gpuir_result r = GPUIR_OK;
    if (op->n_operands > 1) r = gpuir__cg_operand(C, op, gpuir__op_operand(m, op, 0), S, ivar, &x);
    if (!r && op->n_operands > 2) r = gpuir__cg_operand(C, op, gpuir__op_operand(m, op, 1), S, ivar, &y);
    if (r) return r;
    uint32_t v = gpuir__cg_new_var(C, d);
    gpuir__str_appendf(C->s, "%s%s v%u = %s", C->ind, gpuir__cg_ctype(d), v, gpuir__cg_round_open(d));
    if (cls == GPUIR__CLASS_CONSTANT) gpuir__cg_literal(C->s, d, gpuir__attr_find(m, op, "value"));
    else if (cls == GPUIR__CLASS_UNARY) gpuir__cg_unary_expr(C->s, op->kind, d, x);
    else if (cls == GPUIR__CLASS_BINARY) gpuir__cg_binary_expr(C->s, op->kind, d, x, y);
    else gpuir__cg_cast_expr(C->s, C->vars[x].dtype, d, x);
    gpuir__str_appendf(C->s, ");\n");
    C->cur[dst - 1] = v + 1;
    return GPUIR_OK;
}

/* transpose, reshape and broadcast: the element of the destination at ivar
   is loaded from the source parameter at a computed index. */
static gpuir_result gpuir__cg_gather(gpuir__cg *C, const gpuir__op *op, const gpuir_type *S, const char *ivar) {
    gpuir_module *m = C->m;
    uint32_t src = gpuir__op_operand(m, op, 0), dst = gpuir__op_operand(m, op, 1);
    const gpuir_type *st = &gpuir__value_at(m, src)->type;
    int p = gpuir__cg_param_index(C, src);
    if (C->cur[src - 1] || p < 0) return gpuir__cg_fail(C, op, "reads a buffer this kernel computes (it must be a kernel of its own)");
    gpuir__str idx = {NULL};
    if (op->kind == GPUIR_OP_RESHAPE) gpuir__str_appendf(&idx, "%s", ivar);
    else if (op->kind == GPUIR_OP_BROADCAST) gpuir__cg_type_index(&idx, S, st, ivar);
    else {                                   /* out dim i is source dim perm[i] */
        const gpuir__attr *perm = gpuir__attr_find(m, op, "perm");
        const int64_t *pv = gpuir__ints_at(m, perm->off);
        int64_t in_stride[GPUIR_MAX_RANK], after = 1, sv = 1;
        for (int i = st->rank - 1; i >= 0; i--) { in_stride[i] = sv; sv *= st->dims[i]; }
        gpuir__str_appendf(&idx, "(0");
        for (int i = S->rank - 1; i >= 0; i--) {
            if (S->dims[i] != 1)
                gpuir__str_appendf(&idx, " + (%s / %lld %% %lld) * %lld", ivar, (long long)after,
                                   (long long)S->dims[i], (long long)in_stride[pv[i]]);
            after *= S->dims[i];
        }
        gpuir__str_appendf(&idx, ")");
    }
    uint32_t v = gpuir__cg_new_var(C, st->dtype);
    const char *wrap = st->dtype == GPUIR_F16 ? "gpuir_f16_to_f32" : st->dtype == GPUIR_BF16 ? "gpuir_bf16_to_f32" : "";
    gpuir__str_appendf(C->s, "%s%s v%u = %s(p%d[%s]);\n", C->ind, gpuir__cg_ctype(st->dtype), v, wrap, p,
                       gpuir__str_cstr(&idx));
    gpuir__str_free(&idx);
    C->cur[dst - 1] = v + 1;
    return GPUIR_OK;
}

static void gpuir__cg_comment(gpuir__cg *C, uint32_t op_id, const gpuir__op *op) {
    if (op->line) gpuir__str_appendf(C->s, "%s/* op %u: %s (line %u) */\n", C->ind, op_id, gpuir_op_name(op->kind), op->line);
    else gpuir__str_appendf(C->s, "%s/* op %u: %s */\n", C->ind, op_id, gpuir_op_name(op->kind));
}

/* Emits kernel ops [from, to) for one element of space S at index ivar;
   values stay in registers (C->cur). */
static gpuir_result gpuir__cg_chain(gpuir__cg *C, size_t from, size_t to, const gpuir_type *S, const char *ivar) {
    gpuir_module *m = C->m;
    for (size_t i = from; i < to; i++) {
        const gpuir__op *op = gpuir__op_at(m, C->k->ops[i]);
        gpuir__op_class cls = gpuir__info(op->kind)->cls;
        if (op->result || !gpuir__class_computes(cls)) continue;      /* allocs, return */
        uint32_t dst = gpuir__op_operand(m, op, op->n_operands - 1);
        const gpuir_type *dt = &gpuir__value_at(m, dst)->type;
        if (cls != GPUIR__CLASS_CONSTANT && gpuir__type_count(dt) != gpuir__type_count(S))
            return gpuir__cg_fail(C, op, "writes a buffer whose shape differs from the kernel's iteration space");
        gpuir__cg_comment(C, C->k->ops[i], op);
        gpuir_result r;
        if (cls == GPUIR__CLASS_TRANSPOSE || cls == GPUIR__CLASS_RESHAPE || cls == GPUIR__CLASS_BROADCAST)
            r = gpuir__cg_gather(C, op, S, ivar);
        else if (gpuir__is_elementwise(cls) || cls == GPUIR__CLASS_CONSTANT) {
            const gpuir__attr *v = gpuir__attr_find(m, op, "value");
            if (cls == GPUIR__CLASS_CONSTANT && (!v || v->kind == GPUIR__ATTR_DENSE))
                return gpuir__cg_fail(C, op, "dense constants inside kernels are not supported");
            r = gpuir__cg_compute(C, op, S, ivar);
        } else
            return gpuir__cg_fail(C, op, "cannot be fused into an elementwise chain");
        if (r) return r;
    }
    return GPUIR_OK;
}

/* Stores the registers of the parameters ops [from, to) wrote. */
static void gpuir__cg_store_outputs(gpuir__cg *C, size_t from, size_t to, const gpuir_type *S, const char *ivar) {
    gpuir_module *m = C->m;
    for (size_t i = from; i < to; i++) {
        const gpuir__op *op = gpuir__op_at(m, C->k->ops[i]);
        if (op->result || !gpuir__class_computes(gpuir__info(op->kind)->cls)) continue;
        uint32_t dst = gpuir__op_operand(m, op, op->n_operands - 1);
        int p = gpuir__cg_param_index(C, dst);
        bool last = true;                    /* store each buffer once, its final value */
        for (size_t j = i + 1; j < to && last; j++) {
            const gpuir__op *o2 = gpuir__op_at(m, C->k->ops[j]);
            last = o2->result || !gpuir__class_computes(gpuir__info(o2->kind)->cls) ||
                   gpuir__op_operand(m, o2, o2->n_operands - 1) != dst;
        }
        if (p < 0 || !last) continue;
        gpuir_dtype d = gpuir__value_at(m, dst)->type.dtype;
        const char *wrap = d == GPUIR_F16 ? "gpuir_f32_to_f16" : d == GPUIR_BF16 ? "gpuir_f32_to_bf16" : "";
        gpuir__str_appendf(C->s, "%sp%d[", C->ind, p);
        gpuir__cg_type_index(C->s, S, &gpuir__value_at(m, dst)->type, ivar);
        gpuir__str_appendf(C->s, "] = %s(v%u);\n", wrap, C->cur[dst - 1] - 1);
    }
}

/* ---- kernels ---- */

/* What the executor needs to know of each rendered kernel. */
typedef struct gpuir__cg_kernel_info {
    uint32_t func;          /* the kernel's function id */
    char cname[GPUIR_MAX_NAME + 16];  /* its name in the C source */
    bool barriers;          /* needs its threads to run as fibers in the emulator */
    uint32_t shared_bytes;  /* static shared memory it declares */
} gpuir__cg_kernel_info;

/* The kernel's name in C: gpuir_k_<name> when the IR name is a plain
   identifier, else gpuir_k<id>; both are unique and never clash with the
   dialect's own names. */
static void gpuir__cg_cname(const gpuir_module *m, uint32_t kid, char *out, size_t size) {
    const char *name = gpuir__string(m, gpuir__func_at(m, kid)->name);
    bool plain = *name != '\0';
    for (const char *c = name; *c; c++)
        plain &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
    if (plain) snprintf(out, size, "gpuir_k_%s", name);
    else snprintf(out, size, "gpuir_k%u", kid);
}

/* Threads per block of every launch of kernel kid (256 when none launches
   it); launches that disagree are an error, since kernels are specialized. */
static gpuir_result gpuir__cg_block_threads(gpuir__cg *C, uint32_t kid, int64_t *threads) {
    gpuir_module *m = C->m;
    *threads = 0;
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++) {
        if (m->funcs[f].kernel) continue;
        for (size_t i = 0; i < stbds_arrlenu(m->funcs[f].ops); i++) {
            const gpuir__op *op = gpuir__op_at(m, m->funcs[f].ops[i]);
            if (op->kind != GPUIR_OP_GPU_LAUNCH_FUNC) continue;
            const gpuir__attr *sym = gpuir__attr_find(m, op, "kernel"), *block = gpuir__attr_find(m, op, "block");
            if (gpuir__launch_target(m, gpuir__string(m, sym->off)) != kid) continue;
            if (!block) return gpuir__cg_fail(C, NULL, "a launch has no block size (run configure)");
            const int64_t *b = gpuir__ints_at(m, block->off);
            int64_t t = b[0] * b[1] * b[2];
            if (*threads && t != *threads)
                return gpuir__cg_fail(C, NULL, "launched with different block sizes");
            *threads = t;
        }
    }
    if (!*threads) *threads = 256;
    return GPUIR_OK;
}

/* The signature: parameters in order, const when the kernel never writes
   them. */
static void gpuir__cg_signature(gpuir__cg *C, const char *cname) {
    gpuir_module *m = C->m;
    size_t n = stbds_arrlenu(C->k->params);
    gpuir__str_appendf(C->s, "GPUIR_KERNEL %s(%s", cname, n ? "GPUIR_LANE " : "GPUIR_LANE_ONLY");
    for (size_t i = 0; i < n; i++) {
        bool reads, writes;
        gpuir__param_access(m, C->k, i, &reads, &writes);
        const gpuir_type *t = &gpuir__value_at(m, C->k->params[i])->type;
        gpuir__str_appendf(C->s, "%s%s%s *p%zu", i ? ", " : "", writes ? "" : "const ", gpuir__cg_storage(t->dtype), i);
    }
    gpuir__str_appendf(C->s, ") {\n");
}

static void gpuir__cg_reset_values(gpuir__cg *C) {
    memset(C->cur, 0, stbds_arrlenu(C->m->values) * sizeof *C->cur);
}

/* A thread per element of the widest destination, grid-stride. */
static gpuir_result gpuir__cg_elementwise(gpuir__cg *C, const gpuir_type *S) {
    size_t n = stbds_arrlenu(C->k->ops);
    gpuir__str_appendf(C->s, "    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; "
                       "ii < %lldLL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {\n"
                       "        %s i = (%s)ii;\n", (long long)gpuir__type_count(S), gpuir__cg_idx(C), gpuir__cg_idx(C));
    C->ind = "        ";
    gpuir_result r = gpuir__cg_chain(C, 0, n, S, "i");
    if (r) return r;
    gpuir__cg_store_outputs(C, 0, n, S, "i");
    gpuir__str_appendf(C->s, "    }\n");
    return GPUIR_OK;
}

/* The linear input index, in x's dims, of reduced element j of output o. */
static void gpuir__cg_reduce_index(gpuir__str *s, const gpuir_type *x, const bool *reduced) {
    int64_t after_o = 1, after_j = 1, stride = 1;
    gpuir__str_appendf(s, "(0");
    for (int d = x->rank - 1; d >= 0; d--) {
        const char *v = reduced[d] ? "j" : "o";
        int64_t *after = reduced[d] ? &after_j : &after_o;
        if (x->dims[d] != 1)
            gpuir__str_appendf(s, " + (%s / %lld %% %lld) * %lld", v, (long long)*after, (long long)x->dims[d],
                               (long long)stride);
        *after *= x->dims[d];
        stride *= x->dims[d];
    }
    gpuir__str_appendf(s, ")");
}

/* How a reduction combines two partial values a and b into a. */
static void gpuir__cg_combine(gpuir__str *s, gpuir_op_kind k, bool is_float, const char *a, const char *b) {
    if (k != GPUIR_OP_REDUCE_MAX) gpuir__str_appendf(s, "%s = %s + %s;", a, a, b);
    else if (is_float) gpuir__str_appendf(s, "%s = gpuir_fmax(%s, %s);", a, a, b);
    else gpuir__str_appendf(s, "%s = %s > %s ? %s : %s;", a, a, b, a, b);
}

/* The block's partial values combined into thread 0's acc: warp shuffles,
   then one shared slot per warp; a shared-memory tree when the block is not
   whole warps. */
static void gpuir__cg_block_reduce(gpuir__cg *C, gpuir_op_kind k, bool is_float, const char *acc_t,
                                   const char *init) {
    gpuir__str *s = C->s;
    const char *shfl = is_float ? "GPUIR_SHFL_DOWN_F32" : "GPUIR_SHFL_DOWN_I64";
    if (C->threads % 32 == 0) {
        gpuir__str_appendf(s, "        for (int d = 16; d > 0; d >>= 1) { %s other = %s(acc, d); ", acc_t, shfl);
        gpuir__cg_combine(s, k, is_float, "acc", "other");
        gpuir__str_appendf(s, " }\n        if ((t & 31) == 0) red[t >> 5] = acc;\n        GPUIR_SYNC();\n"
                           "        if (t < 32) {\n            acc = t < %lld ? red[t] : %s;\n"
                           "            for (int d = 16; d > 0; d >>= 1) { %s other = %s(acc, d); ",
                           (long long)(C->threads / 32), init, acc_t, shfl);
        gpuir__cg_combine(s, k, is_float, "acc", "other");
        gpuir__str_appendf(s, " }\n        }\n");
        return;
    }
    int64_t p = 1;
    while (p < C->threads) p *= 2;
    gpuir__str_appendf(s, "        red[t] = acc;\n        GPUIR_SYNC();\n"
                       "        for (int d = %lld; d > 0; d >>= 1) {\n"
                       "            if (t < d && t + d < %lld) { ", (long long)(p / 2), (long long)C->threads);
    gpuir__cg_combine(s, k, is_float, "red[t]", "red[t + d]");
    gpuir__str_appendf(s, " }\n            GPUIR_SYNC();\n        }\n        acc = red[0];\n");
}

/* A block per output element: its threads stride over the reduced elements,
   computing the fused elementwise producers on the way. */
static gpuir_result gpuir__cg_reduce(gpuir__cg *C, size_t at) {
    gpuir_module *m = C->m;
    const gpuir__op *op = gpuir__op_at(m, C->k->ops[at]);
    uint32_t src = gpuir__op_operand(m, op, 0), dst = gpuir__op_operand(m, op, 1);
    const gpuir_type *x = &gpuir__value_at(m, src)->type, *y = &gpuir__value_at(m, dst)->type;
    bool reduced[GPUIR_MAX_RANK] = {false};
    const gpuir__attr *axes = gpuir__attr_find(m, op, "axes");
    for (uint32_t a = 0; axes && a < axes->n; a++) {
        int64_t ax = gpuir__ints_at(m, axes->off)[a];
        if (gpuir__norm_axis(&ax, x->rank)) reduced[ax] = true;
    }
    int p = gpuir__cg_param_index(C, dst);
    if (p < 0) return gpuir__cg_fail(C, op, "writes a kernel-private buffer");
    for (size_t i = at + 1; i < stbds_arrlenu(C->k->ops); i++)
        if (gpuir__class_computes(gpuir__info(gpuir__op_at(m, C->k->ops[i])->kind)->cls))
            return gpuir__cg_fail(C, op, "ops after a reduction in one kernel are not supported");
    int64_t n_out = gpuir__type_count(y), n_in = gpuir__type_count(x), n_red = n_out ? n_in / n_out : 0;
    bool is_float = gpuir_dtype_is_float(y->dtype);
    const char *acc_t = is_float ? "float" : "long long";
    const char *init = op->kind != GPUIR_OP_REDUCE_MAX ? (is_float ? "0.0f" : "0LL") :
                       is_float ? "-GPUIR_INF" : y->dtype == GPUIR_I32 ? "(-2147483647LL - 1)" :
                       "(-9223372036854775807LL - 1)";
    int64_t slots = C->threads % 32 == 0 ? 32 : C->threads;
    C->shared_bytes = (uint32_t)(slots * (is_float ? 4 : 8));
    C->barriers = true;
    gpuir__str_appendf(C->s, "    GPUIR_SHARED(%s, red, %lld, 0);\n    int t = GPUIR_THREAD_RANK;\n"
                       "    for (long long o = GPUIR_BLOCK_RANK; o < %lldLL; o += GPUIR_GRID_BLOCKS) {\n"
                       "        %s acc = %s;\n"
                       "        for (long long j = t; j < %lldLL; j += %lld) {\n            %s i = (%s)",
                       acc_t, (long long)slots, (long long)n_out, acc_t, init, (long long)n_red,
                       (long long)C->threads, gpuir__cg_idx(C), gpuir__cg_idx(C));
    gpuir__cg_reduce_index(C->s, x, reduced);
    gpuir__str_appendf(C->s, ";\n");
    gpuir__cg_reset_values(C);
    C->ind = "            ";
    gpuir_result r = gpuir__cg_chain(C, 0, at, x, "i");
    uint32_t v = 0;
    if (!r) r = gpuir__cg_operand(C, op, src, x, "i", &v);
    if (r) return r;
    gpuir__cg_comment(C, C->k->ops[at], op);
    gpuir__str_appendf(C->s, "            ");
    char val[24];
    snprintf(val, sizeof val, "(%s)v%u", acc_t, v);
    gpuir__cg_combine(C->s, op->kind, is_float, "acc", val);
    gpuir__str_appendf(C->s, "\n        }\n");
    gpuir__cg_block_reduce(C, op->kind, is_float, acc_t, init);
    const char *wrap = y->dtype == GPUIR_F16 ? "gpuir_f32_to_f16" : y->dtype == GPUIR_BF16 ? "gpuir_f32_to_bf16" :
                       y->dtype == GPUIR_I32 ? "(int)(unsigned)(unsigned long long)" : "";
    gpuir__str_appendf(C->s, "        if (t == 0) p%d[o] = %s(", p, wrap);
    if (op->kind != GPUIR_OP_REDUCE_MEAN) gpuir__str_appendf(C->s, "acc");
    else if (is_float) gpuir__str_appendf(C->s, "acc / %lld.0f", (long long)n_red);
    else if (n_red) gpuir__str_appendf(C->s, "acc / %lldLL", (long long)n_red);
    else gpuir__str_appendf(C->s, "0LL");
    gpuir__str_appendf(C->s, ");\n        GPUIR_SYNC();\n    }\n");
    return GPUIR_OK;
}

/* Tile sizes of the plain shared-memory matmul (the correct one; fast
   configurations are chosen elsewhere). */
#define GPUIR__MM_BM 64
#define GPUIR__MM_BN 64
#define GPUIR__MM_BK 16

/* Loads element `idx` of parameter p as the compute type. */
static void gpuir__cg_load_expr(gpuir__str *s, gpuir_dtype d, int p, const char *idx) {
    const char *wrap = d == GPUIR_F16 ? "gpuir_f16_to_f32" : d == GPUIR_BF16 ? "gpuir_bf16_to_f32" : "";
    gpuir__str_appendf(s, "%s(p%d[%s])", wrap, p, idx);
}

/* Batch offset (in matrices) of operand t for output batch `batch`. */
static void gpuir__cg_batch_index(gpuir__str *s, const gpuir_type *out, const gpuir_type *t) {
    gpuir__cg_bcast_index(s, out->dims, out->rank - 2, t->dims, t->rank - 2, "batch");
}

/* The matmul's tiles: A and B staged through shared memory, one output
   tile per block (grid-stride over tiles), elements spread over threads. */
static void gpuir__cg_matmul_tiles(gpuir__cg *C, const gpuir__op *op, int pa, int pb, const char *ct) {
    gpuir_module *m = C->m;
    const gpuir_type *a = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
    const gpuir_type *b = &gpuir__value_at(m, gpuir__op_operand(m, op, 1))->type;
    const gpuir_type *o = &gpuir__value_at(m, gpuir__op_operand(m, op, 2))->type;
    bool ta = gpuir__op_flag(m, op, "transpose_a"), tb = gpuir__op_flag(m, op, "transpose_b");
    long long M = o->dims[o->rank - 2], N = o->dims[o->rank - 1], K = a->dims[a->rank - (ta ? 2 : 1)];
    gpuir__str *s = C->s;
    gpuir__str_appendf(s, "        long long a0 = ");
    gpuir__cg_batch_index(s, o, a);
    gpuir__str_appendf(s, " * %lldLL, b0 = ", M * K);
    gpuir__cg_batch_index(s, o, b);
    gpuir__str_appendf(s, " * %lldLL;\n", K * N);
    gpuir__str_appendf(s, "        for (long long k0 = 0; k0 < %lldLL; k0 += %d) {\n"
                       "            for (int e = t; e < %d; e += %lld) {\n"
                       "                long long gm = tm * %d + e / %d, gk = k0 + e %% %d;\n"
                       "                as[e] = gm < %lldLL && gk < %lldLL ? ",
                       K, GPUIR__MM_BK, GPUIR__MM_BM * GPUIR__MM_BK, (long long)C->threads, GPUIR__MM_BM,
                       GPUIR__MM_BK, GPUIR__MM_BK, M, K);
    char idx[96];
    snprintf(idx, sizeof idx, "a0 + gm * %lldLL + gk * %lldLL", ta ? 1LL : K, ta ? M : 1LL);
    gpuir__cg_load_expr(s, a->dtype, pa, idx);
    gpuir__str_appendf(s, " : (%s)0;\n            }\n"
                       "            for (int e = t; e < %d; e += %lld) {\n"
                       "                long long gk = k0 + e / %d, gn = tn * %d + e %% %d;\n"
                       "                bs[e] = gk < %lldLL && gn < %lldLL ? ",
                       ct, GPUIR__MM_BK * GPUIR__MM_BN, (long long)C->threads, GPUIR__MM_BN, GPUIR__MM_BN,
                       GPUIR__MM_BN, K, N);
    snprintf(idx, sizeof idx, "b0 + gk * %lldLL + gn * %lldLL", tb ? 1LL : N, tb ? K : 1LL);
    gpuir__cg_load_expr(s, b->dtype, pb, idx);
    bool fl = gpuir_dtype_is_float(o->dtype);
    gpuir__str_appendf(s, " : (%s)0;\n            }\n            GPUIR_SYNC();\n"
                       "            for (int r = 0; r < %lld; r++) {\n"
                       "                int e = t + r * %lld;\n"
                       "                if (e < %d)\n"
                       "                    for (int kk = 0; kk < %d; kk++) acc[r] += %s as[e / %d * %d + kk] * %sbs[kk * %d + e %% %d];\n"
                       "            }\n            GPUIR_SYNC();\n        }\n",
                       ct, (long long)((GPUIR__MM_BM * GPUIR__MM_BN + C->threads - 1) / C->threads), (long long)C->threads,
                       GPUIR__MM_BM * GPUIR__MM_BN, GPUIR__MM_BK, fl ? "" : "(unsigned long long)", GPUIR__MM_BN,
                       GPUIR__MM_BK, fl ? "" : "(unsigned long long)", GPUIR__MM_BN, GPUIR__MM_BN);
}

/* A matmul and its elementwise epilogue (bias, activation, residual). */
static gpuir_result gpuir__cg_matmul(gpuir__cg *C, size_t at) {
    gpuir_module *m = C->m;
    const gpuir__op *op = gpuir__op_at(m, C->k->ops[at]);
    uint32_t dst = gpuir__op_operand(m, op, 2);
    const gpuir_type *o = &gpuir__value_at(m, dst)->type;
    int pa = gpuir__cg_param_index(C, gpuir__op_operand(m, op, 0)), pb = gpuir__cg_param_index(C, gpuir__op_operand(m, op, 1));
    if (pa < 0 || pb < 0) return gpuir__cg_fail(C, op, "reads a buffer this kernel computes");
    for (size_t i = 0; i < at; i++) {
        const gpuir__op *pre = gpuir__op_at(m, C->k->ops[i]);
        if (gpuir__class_computes(gpuir__info(pre->kind)->cls) && pre->kind != GPUIR_OP_CONSTANT)
            return gpuir__cg_fail(C, op, "only constants may come before a matmul in its kernel");
    }
    long long M = o->dims[o->rank - 2], N = o->dims[o->rank - 1];
    long long tiles_n = (N + GPUIR__MM_BN - 1) / GPUIR__MM_BN, tiles_m = (M + GPUIR__MM_BM - 1) / GPUIR__MM_BM;
    long long batches = M && N ? gpuir__type_count(o) / (M * N) : 0;
    bool fl = gpuir_dtype_is_float(o->dtype);
    const char *ct = fl ? "float" : "long long", *acc_t = fl ? "float" : "unsigned long long";
    long long per_thread = (GPUIR__MM_BM * GPUIR__MM_BN + C->threads - 1) / C->threads;
    C->shared_bytes = (uint32_t)((GPUIR__MM_BM + GPUIR__MM_BN) * GPUIR__MM_BK * (fl ? 4 : 8));
    C->barriers = true;
    gpuir__str_appendf(C->s, "    GPUIR_SHARED(%s, as, %d, 0);\n    GPUIR_SHARED(%s, bs, %d, %d);\n"
                       "    int t = GPUIR_THREAD_RANK;\n"
                       "    for (long long tile = GPUIR_BLOCK_RANK; tile < %lldLL; tile += GPUIR_GRID_BLOCKS) {\n"
                       "        long long tn = tile %% %lldLL, tm = tile / %lldLL %% %lldLL, batch = tile / %lldLL;\n"
                       "        %s acc[%lld];\n        for (int r = 0; r < %lld; r++) acc[r] = 0;\n",
                       ct, GPUIR__MM_BM * GPUIR__MM_BK, ct, GPUIR__MM_BK * GPUIR__MM_BN,
                       GPUIR__MM_BM * GPUIR__MM_BK * (fl ? 4 : 8), tiles_n * tiles_m * batches, tiles_n, tiles_n,
                       tiles_m, tiles_n * tiles_m, acc_t, per_thread, per_thread);
    gpuir__cg_matmul_tiles(C, op, pa, pb, ct);
    gpuir__str_appendf(C->s, "        for (int r = 0; r < %lld; r++) {\n            int e = t + r * %lld;\n"
                       "            long long gm = tm * %d + e / %d, gn = tn * %d + e %% %d;\n"
                       "            if (e >= %d || gm >= %lldLL || gn >= %lldLL) continue;\n"
                       "            %s i = (%s)(batch * %lldLL + gm * %lldLL + gn);\n",
                       per_thread, (long long)C->threads, GPUIR__MM_BM, GPUIR__MM_BN, GPUIR__MM_BN, GPUIR__MM_BN,
                       GPUIR__MM_BM * GPUIR__MM_BN, M, N, gpuir__cg_idx(C), gpuir__cg_idx(C), M * N, N);
    gpuir__cg_reset_values(C);
    C->ind = "            ";
    uint32_t v = gpuir__cg_new_var(C, o->dtype);
    const char *round = o->dtype == GPUIR_F16 ? "gpuir_round_f16" : o->dtype == GPUIR_BF16 ? "gpuir_round_bf16" : "";
    gpuir__cg_comment(C, C->k->ops[at], op);
    gpuir__str_appendf(C->s, "            %s v%u = %s((%s)acc[r]);\n", gpuir__cg_ctype(o->dtype), v, round,
                       gpuir__cg_ctype(o->dtype));
    gpuir_result r = gpuir__cg_chain(C, 0, at, o, "i");
    C->cur[dst - 1] = v + 1;
    if (!r) r = gpuir__cg_chain(C, at + 1, stbds_arrlenu(C->k->ops), o, "i");
    if (r) return r;
    gpuir__cg_store_outputs(C, at, stbds_arrlenu(C->k->ops), o, "i");
    gpuir__str_appendf(C->s, "        }\n    }\n");
    return GPUIR_OK;
}

/* The kernel's form: the index of its matmul or reduction, if any. */
static gpuir_result gpuir__cg_body(gpuir__cg *C) {
    gpuir_module *m = C->m;
    const gpuir_type *widest = NULL;
    for (size_t i = 0; i < stbds_arrlenu(C->k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, C->k->ops[i]);
        gpuir__op_class cls = gpuir__info(op->kind)->cls;
        if (cls == GPUIR__CLASS_MATMUL) return gpuir__cg_matmul(C, i);
        if (cls == GPUIR__CLASS_REDUCE) return gpuir__cg_reduce(C, i);
        if (cls == GPUIR__CLASS_SOFTMAX) return gpuir__cg_fail(C, op, "composite op in a kernel (run decompose)");
        if (op->result || !gpuir__class_computes(cls) || cls == GPUIR__CLASS_CONSTANT) continue;
        const gpuir_type *d = &gpuir__value_at(m, gpuir__op_operand(m, op, op->n_operands - 1))->type;
        if (!widest || gpuir__type_count(d) > gpuir__type_count(widest)) widest = d;
    }
    if (!widest) return GPUIR_OK;                    /* nothing to compute */
    gpuir__cg_reset_values(C);
    return gpuir__cg_elementwise(C, widest);
}

/* Whether any buffer the kernel touches needs 64-bit indices. */
static bool gpuir__cg_needs_wide(const gpuir_module *m, const gpuir__func *k) {
    for (size_t i = 0; i < stbds_arrlenu(k->params); i++)
        if (gpuir__type_count(&gpuir__value_at(m, k->params[i])->type) > INT32_MAX) return true;
    for (size_t i = 0; i < stbds_arrlenu(k->ops); i++) {
        const gpuir__value *v = gpuir__value_at(m, gpuir__op_at(m, k->ops[i])->result);
        if (v && gpuir__type_count(&v->type) > INT32_MAX) return true;
    }
    return false;
}

/* Renders kernel kid; fills its info. */
static gpuir_result gpuir__cg_kernel(gpuir__cg *C, uint32_t kid, gpuir__cg_kernel_info *info) {
    gpuir_module *m = C->m;
    C->k = gpuir__func_at(m, kid);
    if (C->vars) stbds_header(C->vars)->length = 0;
    C->shared_bytes = 0;
    C->barriers = false;
    C->wide = gpuir__cg_needs_wide(m, C->k);
    for (size_t i = 0; i < stbds_arrlenu(C->k->params); i++)
        if (!gpuir__type_is_static(&gpuir__value_at(m, C->k->params[i])->type))
            return gpuir__cg_fail(C, NULL, "dynamic sizes are not supported by codegen yet");
    gpuir_result r = gpuir__cg_block_threads(C, kid, &C->threads);
    if (r) return r;
    memset(info, 0, sizeof *info);
    info->func = kid;
    gpuir__cg_cname(m, kid, info->cname, sizeof info->cname);
    gpuir__str_appendf(C->s, "\n/* @%s: %lld threads per block */\n", gpuir__string(m, C->k->name), (long long)C->threads);
    gpuir__cg_signature(C, info->cname);
    r = gpuir__cg_body(C);
    gpuir__str_appendf(C->s, "}\n");
    info->barriers = C->barriers;
    info->shared_bytes = C->shared_bytes;
    return r;
}

/* The emulator's entry points: one trampoline per kernel unpacks the
   launch's parameter array, and a table lists them. */
static void gpuir__cg_emu_table(gpuir__cg *C, const gpuir__cg_kernel_info *infos) {
    gpuir_module *m = C->m;
    gpuir__str_appendf(C->s, "\n#ifdef GPUIR_EMU\n");
    for (size_t i = 0; i < stbds_arrlenu(infos); i++) {
        const gpuir__func *k = gpuir__func_at(m, infos[i].func);
        gpuir__str_appendf(C->s, "static void %s_emu(gpuir_emu_lane *l, void **p) {\n    %s(l", infos[i].cname, infos[i].cname);
        for (size_t a = 0; a < stbds_arrlenu(k->params); a++)
            gpuir__str_appendf(C->s, ", *(%s **)p[%zu]", gpuir__cg_storage(gpuir__value_at(m, k->params[a])->type.dtype), a);
        gpuir__str_appendf(C->s, ");\n}\n");
    }
    gpuir__str_appendf(C->s, "const gpuir_emu_kernel gpuir_emu_kernels[] = {\n");
    for (size_t i = 0; i < stbds_arrlenu(infos); i++)
        gpuir__str_appendf(C->s, "    {\"%s\", %s_emu, %uu, %d},\n", infos[i].cname, infos[i].cname,
                           infos[i].shared_bytes, infos[i].barriers ? 1 : 0);
    gpuir__str_appendf(C->s, "    {0, 0, 0, 0}\n};\n#endif\n");
}

/* The module body shared by both targets (helpers, kernels, the emulator's
   table); *infos gets one entry per kernel (stb_ds, the caller frees). */
static char *gpuir__cg_module(gpuir_module *m, const char *prelude, gpuir__cg_kernel_info **infos) {
    gpuir__str s = {NULL};
    gpuir__cg C;
    memset(&C, 0, sizeof C);
    C.m = m;
    C.s = &s;
    *infos = NULL;
    C.cur = (uint32_t *)calloc(stbds_arrlenu(m->values) + 1, sizeof *C.cur);
    gpuir_result r = C.cur ? GPUIR_OK : gpuir__oom(m->ctx, "codegen");
    if (!r) gpuir__str_appendf(&s, "%s%s/* gpuir " GPUIR_VERSION_STRING " kernels */\n%s", prelude, gpuir__cg_ranks,
                               gpuir__cg_helpers);
    for (size_t f = 0; !r && f < stbds_arrlenu(m->funcs); f++) {
        if (!m->funcs[f].kernel) continue;
        gpuir__cg_kernel_info info;
        r = gpuir__cg_kernel(&C, (uint32_t)f + 1, &info);
        if (!r) stbds_arrput(*infos, info);
    }
    if (!r) gpuir__cg_emu_table(&C, *infos);
    free(C.cur);
    stbds_arrfree(C.vars);
    char *text = r ? NULL : gpuir__str_detach(&s);
    if (!r && !text) r = gpuir__oom(m->ctx, "codegen");
    gpuir__str_free(&s);
    if (r) { stbds_arrfree(*infos); *infos = NULL; }
    return text;
}

GPUIRDEF char *gpuir_module_emit_cuda(gpuir_module *m) {
    if (m->ctx->result != GPUIR_OK) return NULL;
    gpuir__cg_kernel_info *infos;
    char *text = gpuir__cg_module(m, gpuir__cg_cuda_prelude, &infos);
    stbds_arrfree(infos);
    return text;
}

#endif /* GPUIR_IMPLEMENTATION_DONE */
#endif /* GPUIR_IMPLEMENTATION */

/*
MIT License

Copyright (c) 2026 the gpuir authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
*/

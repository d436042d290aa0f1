/* gpuir.h — a tiny GPU compiler-runtime: a tensor IR (built through the C
   API or parsed from text), passes that fuse, outline and place memory,
   kernels rendered as CUDA C, compiled with NVRTC (cached) and run through
   the CUDA Driver API, or on the CPU by an emulator that compiles the same
   CUDA C with the host compiler; a reference interpreter is the oracle.
   One header, stb style. MIT licensed (see LICENSE and the end of the file).

   USAGE
     In exactly one C or C++ file:
         #define GPUIR_IMPLEMENTATION
         #include "gpuir.h"
     Everywhere else just #include "gpuir.h". Link with stb_ds's
     implementation: Debian's libstb (`pkg-config --cflags --libs stb`), or
     define GPUIR_STB_DS_IMPLEMENTATION next to GPUIR_IMPLEMENTATION and gpuir
     compiles stb_ds itself (stb_ds.h must still be on the include path).
     Also link -ldl (glibc before 2.34). The implementation needs POSIX.1-2008
     (dlopen, posix_spawn, mkstemp, the cache's file calls): it asks for it
     when gpuir.h is the file's first include; else define _POSIX_C_SOURCE
     200809L first (a strict -std=c99 with <stdio.h> first is one #error
     saying so). libcuda and libnvrtc are opened at run time: nothing of
     CUDA is needed to build.

   COMPILE-TIME OPTIONS
     GPUIR_STATIC                  every public function becomes static
     GPUIR_ASSERT(c)               contract checks (default: assert)
     GPUIR_STB_DS_IMPLEMENTATION   compile stb_ds's implementation here
     GPUIR_MALLOC(size), GPUIR_REALLOC(p, size), GPUIR_FREE(p)
                                   gpuir's host allocator (default: libc);
                                   define all three or none. Memory gpuir
                                   hands out is released with gpuir_free or
                                   gpuir_array_release, which use GPUIR_FREE.
                                   stb_ds arrays inside gpuir stay on libc,
                                   and stb_ds has no failure path. Any other
                                   failed allocation is GPUIR_ERR_OUT_OF_MEMORY,
                                   except a disk-cache entry that cannot be
                                   loaded: a miss (compiled again), noted in
                                   gpuir_ctx_cache_status. On the emulator,
                                   device memory is host memory: its failures
                                   are CUDA_ERROR_OUT_OF_MEMORY.

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
     >>pass.split-k        matmuls too small for the device: K in slices, then their sum
     >>pass.fuse           fusion groups: which ops share a kernel
     >>pass.bufferize      tensors to buffers in host functions
     >>pass.outline        fusion groups to kernels and launches
     >>pass.place          device memory and the copies between host and device
     >>pass.configure      launch configuration: grid and block per launch
     >>pass.plan-shared-memory   dynamic shared memory per launch
     >>pass.async         streams and events from the data flow; host waits
     >>codegen.cuda       kernels as CUDA C, one module per program
     >>rt.driver          libcuda and libnvrtc through dlopen; the CUDA device table
     >>rt.cache           compiled kernels in memory and on disk
     >>rt.exec            runs a placed program through a device table
     >>rt.emu             the CPU emulator behind the same table: cc, dlopen, fibers

   CONVENTIONS
     Public names are gpuir_<noun>_<verb>, internal ones gpuir__<section>_<verb>.
     One gpuir_ctx owns everything; there is no global state. Fallible calls
     return a gpuir_result; the first failure is kept in the context
     (gpuir_ctx_result, gpuir_ctx_error) and later calls do nothing until
     gpuir_ctx_clear_error. Builder calls return an invalid handle (id 0)
     instead of a code, so a long build is checked once at the end.

   THREADS
     A context and everything made from it (modules, programs, the kernel
     cache, its CUDA context handle) belong to one thread at a time.
     Separate contexts may be used from separate threads in parallel: each
     has its own cache object and driver handle (the disk cache is safe
     across threads and processes: entries are written atomically).
     tests/api/test_threads.c does that with four threads, under TSan too.
*/
/* The implementation uses POSIX.1-2008 (the runtime); ask for it before the
   first system header, unless the includer chose its own feature macros. */
#if defined(GPUIR_IMPLEMENTATION) && !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && \
    !defined(_XOPEN_SOURCE) && !defined(_DEFAULT_SOURCE)
#  define _POSIX_C_SOURCE 200809L
#endif
/* Too late when a system header came first and glibc settled the feature
   macros without POSIX.1-2008 (-std=c99 with <stdio.h> first): one error
   saying so, and the implementation is left out (no errors deep inside). */
#if defined(GPUIR_IMPLEMENTATION) && defined(_FEATURES_H) && !defined(__USE_XOPEN2K8)
#  define GPUIR__NO_POSIX
#  error "gpuir.h: the implementation needs POSIX.1-2008, but a system header included before gpuir.h settled the feature macros without it (e.g. -std=c99): #define _POSIX_C_SOURCE 200809L before the first #include, or include gpuir.h first"
#endif
/* ====================================================================== */
// >>api
// The public interface. Needs only <stddef.h>, <stdint.h>, <stdbool.h>.
// Everything here is C99 and C++ compatible; nothing here uses stb_ds.
#ifndef GPUIR_H_INCLUDED
#define GPUIR_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* The version: MAJOR.MINOR.PATCH; gpuir_version() returns the string the
   implementation was compiled with (the two agree when built together).
   ABI: before 1.0 a minor version may change the API and the ABI (struct
   fields, enum values, table order); a patch version changes neither. */
#define GPUIR_VERSION_MAJOR 0
#define GPUIR_VERSION_MINOR 2
#define GPUIR_VERSION_PATCH 0
#define GPUIR_VERSION_STRING "0.2.0"
#define GPUIR_VERSION_NUMBER (GPUIR_VERSION_MAJOR * 10000 + GPUIR_VERSION_MINOR * 100 + GPUIR_VERSION_PATCH)

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
#define GPUIR_MAX_STREAMS 64  /* streams of one host function (the async pass) */
#define GPUIR_MAX_EVENTS 65536  /* events of one host function */

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
    X(ERR_MISMATCH,         "results differ from the expected values")       \
    X(ERR_UNAVAILABLE,      "the backend is not available on this machine")  \
    X(ERR_COMPILE,          "compiling the kernels failed")                  \
    X(ERR_CUDA,             "a CUDA driver call failed")

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
     MATMUL     [..,M,K] x [..,K,N] -> [..,M,N]; attrs transpose_a/_b, tf32, wgmma (bool);
                k_slices = S (int >= 2, float operands): S partial products
                over consecutive K ranges of gpuir_matmul_k_slice_len(K, S)
                each (the last one shorter), out f32 [S,..,M,N] (split-K)
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
     ALLOC      a memref result of the given type; its dynamic dims (`?`)
                sized like dims of its operands: dims_of = [operand, axis,
                ...], one pair per `?` (a static result takes no operand)
     DEALLOC    1 memref operand, no result
     COPY       2 memrefs of one shape and dtype (memref.copy: src, dst;
                gpu.memcpy: dst, src, as in MLIR), no result
     LAUNCH     memref operands: the kernel's parameters; attrs kernel =
                @kernels::@name, grid = [x, y, z], block = [x, y, z], smem
     WAIT       no operand, no result
     VIEW       1 memref operand; a memref result of the given static type
                over the same memory (memref.reshape: same dtype, element
                count and memory space). A host op: kernels take views as
                parameters but do not make them. */
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
    X(GPU_WAIT,          "gpu.wait",          WAIT,    0) \
    X(MEMREF_RESHAPE,    "memref.reshape",    VIEW,    0)

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
GPUIRDEF const char *gpuir_version(void);                  /* "0.2.0": GPUIR_VERSION_STRING */

/* ---- context ----------------------------------------------------------- */
typedef struct gpuir_ctx gpuir_ctx;

/* The default configuration is:
     max_tensor_bytes   1 << 34 (16 GiB): the largest tensor, constant or
                        array the context will describe or allocate
     log, log_user      NULL: gpuir prints nothing (errors are passed to
                        it as they happen). With GPUIR_LOG=1 in the
                        environment, also each compile (its time and cache
                        outcome), kernel launch (grid, block, shared bytes)
                        and copy (bytes, direction); GPUIR_LOG=2 adds each
                        run's time. With GPUIR_LOG set and no callback,
                        lines go to stderr prefixed "gpuir: ".
                        GPUIR_DUMP_DIR=DIR writes each compiled module's
                        CUDA C (DIR/<hash>.cu) and its lowered IR
                        (DIR/<hash>.gir). Both are read once, here.
     max_shared_bytes   232448 (227 KiB, H100's opt-in limit): the most
                        dynamic shared memory one launch may ask for
     cache_dir          NULL: compiled kernels are cached in memory and in
                        $GPUIR_CACHE_DIR, else $XDG_CACHE_HOME/gpuir, else
                        ~/.cache/gpuir (created 0700; GPUIR_CACHE_DISABLE=1
                        turns the disk cache off); "": memory only
     max_device_bytes   0: a program may hold at most the device's memory
                        (CUDA; no cap on the emulator); else at most this
                        many bytes of device memory at once (its buffers
                        live at the same point of a function, as issued,
                        plus its resident globals), checked when it is made */
typedef struct gpuir_ctx_desc {
    uint64_t max_tensor_bytes;
    void (*log)(void *user, const char *message);
    void *log_user;
    uint32_t max_shared_bytes;
    const char *cache_dir;
    uint64_t max_device_bytes;
} gpuir_ctx_desc;

/* Failed calls are safe to continue from: every call accepts the NULL a
   failed make or parse returned (ctx, module, program) and does nothing
   (builder calls return id 0, runs GPUIR_ERR_INVALID_ARGUMENT; the context
   keeps its first error); a NULL ctx reports GPUIR_ERR_OUT_OF_MEMORY, the
   only way gpuir_ctx_make fails. A run that fails, early or late, leaves
   its outputs empty (zeroed: gpuir_array_release is safe on them). */
GPUIRDEF gpuir_ctx *gpuir_ctx_make(const gpuir_ctx_desc *desc);  /* NULL desc: defaults */
GPUIRDEF void gpuir_ctx_destroy(gpuir_ctx *ctx);   /* also destroys its modules */
GPUIRDEF gpuir_result gpuir_ctx_result(const gpuir_ctx *ctx);  /* the first error */
GPUIRDEF const char *gpuir_ctx_error(const gpuir_ctx *ctx);   /* its message; "" if OK */
GPUIRDEF void gpuir_ctx_clear_error(gpuir_ctx *ctx);

/* ---- modules and functions --------------------------------------------- */
typedef struct gpuir_module gpuir_module;
typedef struct gpuir_func { uint32_t id; } gpuir_func;    /* 0: invalid */
/* Value handles carry a tag of the module that made them in the id's
   high bits: a handle used in another module is refused (ERR_INVALID_ARGUMENT),
   not bound to that module's value of the same number. */
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
/* What the last run of the `place` pass did for each buffer and why, then
   each wait the `async` pass put in: who waits for which event, recorded
   after what on which stream ("" if neither ran); owned by the module. */
GPUIRDEF const char *gpuir_module_placement_report(const gpuir_module *m);
/* A Graphviz graph of the host functions' buffers (host blue, device
   orange), copies (H2D, D2H, D2D, with their stream) and launches (each
   kernel's fused ops, grid and block; the launches of a stream in a
   dashed cluster), with a legend; freed with gpuir_free. */
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
#define GPUIR_TF32 4u
#define GPUIR_WGMMA 8u
/* a: [..., M, K] (or [..., K, M] with GPUIR_TRANSPOSE_A), b: [..., K, N]
   (or [..., N, K]); batch dims broadcast. The result has the input dtype;
   the reference interpreter accumulates in double (ints in 64 bits).
   GPUIR_TF32 (f32 only; opt in, it changes results; attribute `tf32`):
   each operand element is first rounded to TF32 (10 mantissa bits, to
   nearest, ties away from zero), then multiplied on tensor cores.
   GPUIR_WGMMA (attribute `wgmma`; EXPERIMENTAL, off by default, not yet
   validated on hardware): asks for the Hopper kernel (TMA bulk tensor
   copies on mbarriers, warp-specialized, wgmma.mma_async, sm_90a) where
   it applies: f16 or bf16 with GPUIR_TRANSPOSE_B, static
   sizes, K a multiple of 8, a target of sm_90 (gpuir_module_set_target;
   a program plans for its device). Elsewhere the flag is ignored: other
   targets get the mma.sync tensor-core kernel. */
GPUIRDEF gpuir_value gpuir_matmul(gpuir_module *m, gpuir_value a, gpuir_value b,
                                  unsigned flags);
/* Split-K (attribute `k_slices`; the split-k pass makes these): S >= 2
   partial products of a matmul of float operands over consecutive K
   ranges: slice s sums k in [s * KS, min(K, (s + 1) * KS)) with KS =
   gpuir_matmul_k_slice_len(K, S), and no slice may be empty. The result
   is f32 [S, batch..., M, N] whatever the operands' dtype (TF32 products
   with GPUIR_TF32); reduce_sum over axis 0 gives the matmul. */
GPUIRDEF gpuir_value gpuir_matmul_k_slices(gpuir_module *m, gpuir_value a, gpuir_value b,
                                           unsigned flags, int64_t k_slices);
/* K a slice covers: ceil(K / S) rounded up to a multiple of 32 elements
   (every kernel's k-tile depth divides it); 0 when S < 1. */
GPUIRDEF int64_t gpuir_matmul_k_slice_len(int64_t K, int64_t S);
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
   verified before the first pass (unless unchanged since it last passed
   the verifier) and after every pass (its host functions only, after a
   pass that cannot change kernels); the first failure stops
   the pipeline with the pass name in the error.
   The default configuration is:
     print_ir_before, print_ir_after   NULL: no dumps ("*": every pass; a
                        name that is no pass is GPUIR_ERR_INVALID_ARGUMENT)
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
/* The device the passes plan a module's kernels for: which matmul kernel
   it can run (tensor cores from sm_75, wgmma only on sm_90) and how many
   tiles fill it. A field left 0 means an H100's value (sm 90, 132
   multiprocessors), also for modules never told. gpuir_program_make sets
   the CUDA device's before it lowers a tensor-level module; set it before
   running the passes by hand. gpuir_module_target returns the values the
   passes use (defaults filled in; zeros for a NULL module). */
typedef struct gpuir_target {
    int sm;                 /* compute capability, major * 10 + minor: 90 */
    int sm_count;           /* multiprocessors: 132 */
} gpuir_target;
GPUIRDEF void gpuir_module_set_target(gpuir_module *m, gpuir_target target);
GPUIRDEF gpuir_target gpuir_module_target(const gpuir_module *m);
GPUIRDEF size_t gpuir_pass_count(void);
GPUIRDEF const char *gpuir_pass_name(size_t index);     /* NULL past the end */
GPUIRDEF const char *gpuir_pass_summary(size_t index);

/* ---- .npy files (f32, f16, i32, i64; C order; little-endian) ----------- */
GPUIRDEF gpuir_result gpuir_npy_read(gpuir_ctx *ctx, const char *path, gpuir_array *out);
/* The same, converted to `dtype` (0: the file's own): NumPy's default `<f8`
   to a float dtype, `|b1` (bool) to any as 0 and 1; other dtypes must
   match. Errors name the file; only a regular file is read, and its size
   must be what its header says before its data is read. */
GPUIRDEF gpuir_result gpuir_npy_read_as(gpuir_ctx *ctx, const char *path, gpuir_dtype dtype,
                                        gpuir_array *out);
GPUIRDEF gpuir_result gpuir_npy_load(gpuir_ctx *ctx, const void *bytes, size_t size,
                                     gpuir_array *out);
GPUIRDEF gpuir_result gpuir_npy_write(gpuir_ctx *ctx, const char *path, const gpuir_array *a);


/* ---- running programs: CUDA, the CPU emulator, or the interpreter --------
   gpuir_program_make lowers the module (the default pipeline, when it is
   still at the tensor level: the module is changed in place, planned for
   the CUDA device, see gpuir_module_set_target; not
   for the interpreter, which runs the module as it is), renders its
   kernels as CUDA C, compiles them once (NVRTC for the GPU's exact
   architecture, or the host C compiler for the emulator; cached in memory
   and on disk) and loads them. The lowered module, keyed by the module's
   text, backend, target, options, compiler and gpuir version, is cached
   too: a later make of the same text takes it from there, running neither
   the passes nor codegen (gpuir_program_source then renders the CUDA C
   when asked, the same but for its comments). gpuir_program_run then runs a function as
   often as wanted. Inputs are lent: a parameter the function writes is
   written back into the caller's array. Destroy a program before its
   module (gpuir_ctx_destroy destroys what is left).
   The runtime needs POSIX (dlopen, posix_spawn, mkstemp); libcuda and
   libnvrtc are opened at run time, so nothing CUDA is needed to build.
   The default configuration is:
     backend        GPUIR_BACKEND_AUTO: CUDA when a device is usable, else
                    the emulator (gpuir_program_why_not_cuda says why)
     device         0: the CUDA device ordinal
     cc             NULL: the emulator's compiler is $GPUIR_CC, else "cc".
                    It runs in a private directory of the context
                    ($TMPDIR/gpuir-<pid>-XXXXXX, also its TMPDIR; removed
                    with the context, or by the next process when this
                    one was killed), in a process group of its own, for at
                    most $GPUIR_CC_TIMEOUT seconds (default 300; then the
                    group is killed: GPUIR_ERR_COMPILE). The cache key
                    names the compiler's identity (the file it resolves
                    to, its `--version` output), found once per context
     emu_sanitize   false: emulated kernels built with ASan+UBSan (only in
                    a process that is itself built with ASan)
     synchronous    false: lower with GPUIR_DEFAULT_PIPELINE (copies and
                    kernels on streams, see the async pass); true: with
                    GPUIR_SYNC_PIPELINE (one stream, program order)
     emu_seed       0: a fixed seed. The emulator holds work on streams
                    until the host waits for it and then runs the streams
                    in a pseudo-random interleaving from this seed (stream
                    order and event waits kept), so a missing wait shows
     graphs         false: each run issues its copies and launches one by
                    one; true: a host function's first run records them
                    as one graph (a CUDA graph; the emulator replays the
                    recorded calls) and later runs with the same parameter
                    sizes launch that graph (other sizes record again).
                    The graph keeps its device buffers, all of them at
                    once, and pinned staging for each copy with a host side
                    until the program is destroyed. A function whose host
                    ops touch a buffer after a device-to-host copy wrote it
                    runs op by op (rt.exec, "graphs"). */
typedef enum gpuir_backend {
    GPUIR_BACKEND_AUTO = 0,
    GPUIR_BACKEND_CUDA,     /* a GPU through libcuda and NVRTC */
    GPUIR_BACKEND_EMU,      /* the same CUDA C on the CPU, threads as fibers */
    GPUIR_BACKEND_REF       /* the reference interpreter */
} gpuir_backend;

typedef struct gpuir_program_desc {
    gpuir_backend backend;
    int device;
    const char *cc;
    bool emu_sanitize;
    bool synchronous;
    uint64_t emu_seed;
    bool graphs;
} gpuir_program_desc;

typedef struct gpuir_program gpuir_program;

/* The pipeline gpuir_program_make and `gpuir-opt --lower` run, and the
   same without the async pass (desc.synchronous, `--lower=sync`): one
   stream, everything in program order, copies done when they return. */
#define GPUIR_SYNC_PIPELINE \
    "decompose,canonicalize,split-k,fuse,bufferize,outline,place,configure,plan-shared-memory"
#define GPUIR_DEFAULT_PIPELINE GPUIR_SYNC_PIPELINE ",async"

GPUIRDEF gpuir_program *gpuir_program_make(gpuir_module *m, const gpuir_program_desc *desc);
GPUIRDEF void gpuir_program_destroy(gpuir_program *p);
/* Runs function `func` (NULL: the module's only host function); as
   gpuir_ref_run, outputs receive new arrays (gpuir_array_release). A
   parameter's dynamic dim (`?`) takes the input array's size: one program
   runs every size; sizes its ops pair up must agree (GPUIR_ERR_SHAPE).
   A run stops with GPUIR_ERR_VERIFY ("illegal address: ... already freed
   (by op N, ...)") when a buffer is used after its memref.dealloc or
   gpu.dealloc (a parameter's memory is the caller's: freeing it only ends
   its use). A launch may have at most 2^62 threads (kernels index threads
   in 64 bits; GPUIR_ERR_LIMIT); on the emulator at most 2^28, or
   $GPUIR_EMU_MAX_THREADS (its work bound: it runs the threads in turn).
   gpuir_program_make refuses (GPUIR_ERR_VERIFY, located) a host function
   that returns a device buffer or launches a kernel on a host buffer. */
GPUIRDEF gpuir_result gpuir_program_run(gpuir_program *p, const char *func, size_t n_inputs,
                                        const gpuir_array *inputs, size_t n_outputs,
                                        gpuir_array *outputs);
GPUIRDEF gpuir_backend gpuir_program_backend(const gpuir_program *p);
GPUIRDEF const char *gpuir_backend_name(gpuir_backend b);   /* "cuda", "emu", ... */
/* The tolerance a backend's results are held to against the interpreter:
   the dtype's (gpuir_dtype_tolerance) for the interpreter itself; for the
   compiled backends f32's atol is 1e-5, since they accumulate matmuls and
   reductions in f32 where the interpreter uses double. */
GPUIRDEF void gpuir_backend_tolerance(gpuir_backend b, gpuir_dtype dtype, double *rtol, double *atol);
/* The CUDA C the backend compiled (its prelude first); owned by p. */
GPUIRDEF const char *gpuir_program_source(const gpuir_program *p);
/* With GPUIR_BACKEND_AUTO on the emulator: why CUDA was not used. */
GPUIRDEF const char *gpuir_program_why_not_cuda(const gpuir_program *p);

/* What a program has moved and launched since it was made: host-to-device
   and device-to-host copies (gpu.memcpy), uploads of resident globals and
   constants (once per program, again after gpuir_module_bind_global), and
   kernel launches; and where gpuir_program_make's time went, in ms, by
   phase (docs/cache.md): open (CUDA: the driver, the device and its primary
   context, once per gpuir context), lower (the pass pipeline, when the
   module was not lowered yet), codegen (the CUDA C), cache (the key, and
   reading and checking an entry), compile (NVRTC or the emulator's host
   compiler; 0 on a cache hit) and load (the module and its kernels). */
typedef struct gpuir_program_stats {
    uint64_t runs, launches;
    uint64_t h2d_copies, h2d_bytes, d2h_copies, d2h_bytes;
    uint64_t uploads, upload_bytes;
    uint64_t peak_device_bytes;     /* planned: the most any function holds at once */
    uint64_t graph_records, graph_replays;  /* desc.graphs: runs that recorded, that replayed */
    double open_ms, lower_ms, codegen_ms, cache_ms, compile_ms, load_ms;   /* gpuir_program_make */
} gpuir_program_stats;
GPUIRDEF gpuir_program_stats gpuir_program_get_stats(const gpuir_program *p);

/* ---- device buffers, run arguments, caller streams, pinned memory ------
   Arguments live where the caller keeps them (docs/device-buffers.md). A
   device buffer is device memory of a dtype and shape: owned by gpuir
   (allocated by gpuir_buffer_make, freed by gpuir_buffer_destroy) or
   wrapping the caller's memory (desc.device_ptr: a CUdeviceptr as an
   integer, on the emulator a host address; gpuir never frees it). A handle
   is an id (sokol style): a destroyed buffer's or another context's id is
   an error naming the argument, never a crash. The default configuration is:
     backend     GPUIR_BACKEND_AUTO: CUDA when a device is usable, else the
                 emulator (a buffer runs only with programs of its backend)
     device      0: the CUDA device ordinal
     dtype, rank, dims   required: the buffer's element type and shape
     device_ptr  0: gpuir allocates (contents undefined until written);
                 else the caller's memory, at least the shape's bytes */
typedef struct gpuir_buffer { uint64_t id; } gpuir_buffer;   /* 0: invalid */
typedef struct gpuir_buffer_desc {
    gpuir_backend backend;
    int device;
    gpuir_dtype dtype;
    int rank;
    int64_t dims[GPUIR_MAX_RANK];
    uint64_t device_ptr;
} gpuir_buffer_desc;

/* A caller's stream: a CUstream on CUDA (made by the caller or by
   gpuir_stream_make), an emulator stream from gpuir_stream_make. NULL
   everywhere means "none": gpuir's own streams, synchronous calls. */
typedef void *gpuir_stream;

GPUIRDEF gpuir_buffer gpuir_buffer_make(gpuir_ctx *ctx, const gpuir_buffer_desc *desc);
GPUIRDEF void gpuir_buffer_destroy(gpuir_ctx *ctx, gpuir_buffer b);   /* frees owned memory */
GPUIRDEF bool gpuir_buffer_valid(gpuir_ctx *ctx, gpuir_buffer b);
GPUIRDEF uint64_t gpuir_buffer_device_ptr(gpuir_ctx *ctx, gpuir_buffer b);   /* 0 if invalid */
/* The buffer's shape and dtype as a memref type in device memory. */
GPUIRDEF gpuir_type gpuir_buffer_type(gpuir_ctx *ctx, gpuir_buffer b);
/* Copies a host array of the buffer's dtype and shape in or out. With a
   stream the copy is ordered on it, and is asynchronous when the array's
   memory is pinned (gpuir_host_alloc, gpuir_host_register): keep the array
   until the stream is synchronized; pageable memory is copied before the
   call returns. Without one it is done when the call returns. */
GPUIRDEF gpuir_result gpuir_buffer_upload(gpuir_ctx *ctx, gpuir_buffer b, const gpuir_array *src,
                                          gpuir_stream stream);
GPUIRDEF gpuir_result gpuir_buffer_download(gpuir_ctx *ctx, gpuir_buffer b, gpuir_array *dst,
                                            gpuir_stream stream);

/* Pinned (page-locked) host memory for the backend's device (AUTO: CUDA
   when usable): gpuir_host_alloc is cuMemHostAlloc (portable),
   gpuir_host_register pins the caller's memory in place
   (cuMemHostRegister). Copies from and to pinned memory are asynchronous.
   gpuir_array_alloc_pinned fills `a` with zeroed pinned memory; release it
   with gpuir_array_release_pinned (not gpuir_array_release). */
GPUIRDEF void *gpuir_host_alloc(gpuir_ctx *ctx, gpuir_backend backend, size_t bytes);
GPUIRDEF void gpuir_host_free(gpuir_ctx *ctx, void *p);
GPUIRDEF gpuir_result gpuir_host_register(gpuir_ctx *ctx, gpuir_backend backend, void *p, size_t bytes);
GPUIRDEF gpuir_result gpuir_host_unregister(gpuir_ctx *ctx, void *p);
GPUIRDEF bool gpuir_host_is_pinned(gpuir_ctx *ctx, const void *p, size_t bytes);
GPUIRDEF gpuir_result gpuir_array_alloc_pinned(gpuir_ctx *ctx, gpuir_backend backend, gpuir_array *a,
                                               gpuir_dtype dtype, int rank, const int64_t *dims);
GPUIRDEF void gpuir_array_release_pinned(gpuir_ctx *ctx, gpuir_array *a);

/* Streams for the backend's device: on CUDA a non-blocking CUstream in
   gpuir's context (the caller may use its own CUstream instead), on the
   emulator the only kind of stream it takes. synchronize waits for the
   stream's work and reports a failure of it (GPUIR_ERR_CUDA). */
GPUIRDEF gpuir_stream gpuir_stream_make(gpuir_ctx *ctx, gpuir_backend backend);
GPUIRDEF void gpuir_stream_destroy(gpuir_ctx *ctx, gpuir_stream stream);
GPUIRDEF gpuir_result gpuir_stream_synchronize(gpuir_ctx *ctx, gpuir_stream stream);

/* A run's argument: a host array or a device buffer. As an output,
   GPUIR_ARG_NONE receives a new host array (in .host; gpuir_array_release),
   GPUIR_ARG_HOST with data is written in place (dtype and shape must match),
   GPUIR_ARG_BUFFER receives the result on the device. */
typedef enum gpuir_arg_kind {
    GPUIR_ARG_NONE = 0,
    GPUIR_ARG_HOST,
    GPUIR_ARG_BUFFER
} gpuir_arg_kind;
typedef struct gpuir_arg {
    gpuir_arg_kind kind;
    gpuir_array host;           /* GPUIR_ARG_HOST (and a NONE output's result) */
    gpuir_buffer buffer;        /* GPUIR_ARG_BUFFER */
} gpuir_arg;
GPUIRDEF gpuir_arg gpuir_arg_host(gpuir_array a);
GPUIRDEF gpuir_arg gpuir_arg_buffer(gpuir_buffer b);

/* gpuir_program_run with arguments that are host arrays or device buffers.
   A device-resident input gets no host-to-device copy, a device-resident
   output receives the result with no copy back (the placement report says
   "device-resident: no copy"); where the program's host code reads or
   computes such an argument it is staged through the host instead (the
   report says so, the stats count the copies). The default configuration:
     func        NULL: the module's only host function
     inputs, outputs   n_inputs / n_outputs of them (outputs may be written)
     stream      NULL: gpuir's own streams; the run returns when done. Else
                 the caller's stream: the run's work is ordered after what
                 the stream holds and before what it gets later. When every
                 argument is a device buffer the run is asynchronous: it
                 returns once enqueued (gpuir_program_wait or a
                 synchronize of the stream completes it); a run issued
                 while the stream is captured into a CUDA graph goes into
                 that graph, or fails naming what cannot be captured. */
typedef struct gpuir_run_desc {
    const char *func;
    size_t n_inputs;
    const gpuir_arg *inputs;
    size_t n_outputs;
    gpuir_arg *outputs;
    gpuir_stream stream;
} gpuir_run_desc;
GPUIRDEF gpuir_result gpuir_program_run_args(gpuir_program *p, const gpuir_run_desc *desc);
/* Waits for the program's asynchronous runs; reports a failure of them. */
GPUIRDEF gpuir_result gpuir_program_wait(gpuir_program *p);
/* The program reads global `name` from a device buffer of its type (no
   upload, never freed by the program); an invalid buffer unbinds it. */
GPUIRDEF gpuir_result gpuir_program_bind_global_buffer(gpuir_program *p, const char *name, gpuir_buffer b);

/* Whether a CUDA device is usable here; `why` gets the reason if not. */
GPUIRDEF bool gpuir_cuda_available(gpuir_ctx *ctx, char *why, size_t size);

/* Compiles the kernels of a lowered module with NVRTC for sm_<sm> (e.g. 90;
   sm_90a when a matmul takes the experimental wgmma kernel)
   without running anything (no GPU needed): *spilled_bytes gets the largest
   register spill of any kernel (-1 if ptxas did not say), *ptx (if not
   NULL) the PTX, freed with gpuir_free. GPUIR_ERR_UNAVAILABLE without
   libnvrtc, GPUIR_ERR_COMPILE with NVRTC's log when it fails. */
GPUIRDEF gpuir_result gpuir_module_compile_cuda(gpuir_module *m, int sm, long *spilled_bytes,
                                                char **ptx);

/* The context's compiled-kernel cache (made on first use). compiles counts
   the modules this context compiled for its programs (NVRTC or the host
   compiler runs): none when every program was found in the cache. The
   hits, misses and writes count compiled modules; lowered_hits counts the
   makes that took their lowered program from the cache, and corrupt also
   counts the stored lowered programs refused (docs/cache.md). */
typedef struct gpuir_cache_stats {
    uint64_t mem_hits, disk_hits, misses, corrupt, writes, write_failures;
    uint64_t compiles;
    uint64_t lowered_hits;
} gpuir_cache_stats;
GPUIRDEF gpuir_cache_stats gpuir_ctx_cache_stats(gpuir_ctx *ctx);
GPUIRDEF const char *gpuir_ctx_cache_dir(gpuir_ctx *ctx);     /* "" without a disk cache */
/* "ok", why there is no disk cache, or the latest disk problem. */
GPUIRDEF const char *gpuir_ctx_cache_status(gpuir_ctx *ctx);
/* A bundle of compiled CUDA modules, to deploy with a warm cache: export
   writes every CUDA module (cubin, PTX) this context compiled or loaded
   (its memory cache) into one file, atomically; import checks a whole
   bundle (format, keys, each module's SHA-256, each module's kind) and only
   then adds every module to this context's cache, memory and disk. *count
   (may be NULL) gets the number of modules. A bundle never carries host
   code: emulator modules (shared objects) are not exported, a bundle with
   one is refused, and the emulator compiles them from source (see
   docs/cache.md for what a bundle is trusted with). GPUIR_ERR_IO names the
   file and what is wrong with it. */
GPUIRDEF gpuir_result gpuir_ctx_cache_export(gpuir_ctx *ctx, const char *path, size_t *count);
GPUIRDEF gpuir_result gpuir_ctx_cache_import(gpuir_ctx *ctx, const char *path, size_t *count);

#ifdef __cplusplus
}
#endif
#endif /* GPUIR_H_INCLUDED */

/* ====================================================================== */
/* Implementation                                                         */
/* ====================================================================== */
#if defined(GPUIR_IMPLEMENTATION) && !defined(GPUIR__NO_POSIX)
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

/* The runtime (rt.*) needs POSIX: dlopen for libcuda, libnvrtc and the
   emulator's modules, a thread that creates the CUDA context while NVRTC
   compiles (link with -pthread where libc lacks it), posix_spawn, poll, waitpid and kill for the host
   compiler, mkdtemp, mkstemp, opendir and fcntl locks for its private
   temporary directory, and the file calls of the disk cache. */
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GPUIR_NO_SHA_NI)
#include <cpuid.h>                /* the SHA extensions of the cache's hashes (rt.cache) */
#include <immintrin.h>
#endif
#include <unistd.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>

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

/* gpuir's own host allocations (not stb_ds's arrays: see the header). */
#if defined(GPUIR_MALLOC) && defined(GPUIR_REALLOC) && defined(GPUIR_FREE)
#elif defined(GPUIR_MALLOC) || defined(GPUIR_REALLOC) || defined(GPUIR_FREE)
#  error "gpuir.h: define all of GPUIR_MALLOC, GPUIR_REALLOC and GPUIR_FREE, or none"
#else
#  define GPUIR_MALLOC(size) malloc(size)
#  define GPUIR_REALLOC(p, size) realloc(p, size)
#  define GPUIR_FREE(p) free(p)
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

/* Tests only (rt.exec, fault injection): fail the k-th device-table call. */
struct gpuir__fault_plan {
    uint64_t fail_at;             /* 0: off (programs made then are not wrapped) */
    bool persistent;              /* and every call after it */
    int code;                     /* the CUresult to fail with; 0: one natural to the call */
    uint64_t calls, injected;     /* counted over wrapped programs; the test resets them */
};

struct gpuir_ctx {
    gpuir_ctx_desc desc;       /* defaults filled in */
    gpuir_result result;       /* the first error, sticky */
    char *message;             /* its message (stb_ds char array, terminated) */
    gpuir_module **modules;    /* stb_ds array: live modules, destroyed with ctx */
    const char *loc_file;      /* set while a source location is current */
    uint32_t loc_line, loc_col;
    const char *loc_src;       /* the text being parsed (for the source line and caret), or NULL */
    size_t loc_src_len;
    char loc_note[192];        /* else a prefix such as "pass 'fuse'" */
    const struct gpuir_module *loc_module;  /* else, set while verifying: "in @f, op 3 (add)" */
    uint32_t loc_func_name;    /* the function's name (loc_module's strings) */
    size_t loc_index;          /* the op's index in it */
    int loc_op_kind;           /* the op's kind, or 0 */
    struct gpuir__cache *cache;       /* compiled kernels (rt.cache), made on first use */
    char *cache_dir_copy;             /* desc.cache_dir points here */
    struct gpuir__cudart *cuda;       /* the driver, device and context its programs share */
    struct gpuir__emu_toolchain *emu_toolchain; /* the emulator's temp directory and compilers (rt.emu) */
    struct gpuir_program **programs;  /* stb_ds array: live programs, destroyed with ctx */
    struct gpuir__fault_plan fault;   /* tests only: fail the k-th device-table call */
    const char *test_version;         /* tests only: the gpuir version lowered programs are keyed
                                         by (NULL: GPUIR_VERSION_STRING; gpuir__lowered_key) */
    uint32_t module_tags;             /* the last module tag given (gpuir_module.tag) */
    int log_level;                    /* GPUIR_LOG at creation: 0, 1 or 2 */
    char *dump_dir;                   /* GPUIR_DUMP_DIR at creation, or NULL */
    struct gpuir__device *devices[2]; /* buffers, pinned memory, streams: CUDA's, the emulator's */
    int auto_backend;                 /* what AUTO means for them, once decided (0: not yet) */
    struct gpuir__bufslot *buffers;   /* stb_ds: device buffers; a gpuir_buffer id indexes it */
    struct gpuir__pinned *pinned;     /* stb_ds: pinned host ranges */
    struct gpuir__stream_entry *streams;  /* stb_ds: streams gpuir_stream_make made */
};

/* calloc through GPUIR_MALLOC: zeroed, NULL on overflow or failure. */
static void *gpuir__calloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    size_t bytes = count * size;
    void *p = GPUIR_MALLOC(bytes ? bytes : 1);
    if (p) memset(p, 0, bytes);
    return p;
}

/* A growable string: stb_ds char array, always terminated when non-empty. */
typedef struct gpuir__str { char *buf; } gpuir__str;

/* Formats straight into the spare room (grown geometrically), again only
   when the text does not fit: one vsnprintf for most appends. */
static void gpuir__str_vappend(gpuir__str *s, const char *fmt, va_list ap) {
    size_t len = stbds_arrlenu(s->buf);
    if (len > 0) len--;                         /* overwrite the terminator */
    if (stbds_arrcap(s->buf) < len + 64) stbds_arrsetcap(s->buf, len + 64);
    va_list ap2;
    va_copy(ap2, ap);
    size_t room = stbds_arrcap(s->buf) - len;
    int n = vsnprintf(s->buf + len, room, fmt, ap2);
    va_end(ap2);
    if (n < 0) { s->buf[len] = '\0'; return; }  /* as it was (or an empty string) */
    if ((size_t)n >= room) {
        stbds_arrsetcap(s->buf, len + (size_t)n + 1);
        vsnprintf(s->buf + len, (size_t)n + 1, fmt, ap);
    }
    stbds_arrsetlen(s->buf, len + (size_t)n + 1);
}

static void gpuir__str_appendf(gpuir__str *s, const char *fmt, ...) GPUIR__PRINTF(2, 3);
static void gpuir__str_appendf(gpuir__str *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gpuir__str_vappend(s, fmt, ap);
    va_end(ap);
}

static const char *gpuir__str_cstr(const gpuir__str *s) { return s->buf ? s->buf : ""; }

/* Appends n bytes of text (no formatting). */
static void gpuir__str_append(gpuir__str *s, const char *text, size_t n) {
    size_t len = stbds_arrlenu(s->buf);
    if (len > 0) len--;                         /* overwrite the terminator */
    stbds_arrsetlen(s->buf, len + n + 1);
    memcpy(s->buf + len, text, n);
    s->buf[len + n] = '\0';
}

static void gpuir__str_puts(gpuir__str *s, const char *text) { gpuir__str_append(s, text, strlen(text)); }

/* out = a, then b (at most max_a bytes of a), then n in decimal when
   n >= 0; truncated to size. The passes name things with it instead of
   snprintf, which costs about as much as the rest of naming a kernel. */
static void gpuir__join_name(char *out, size_t size, const char *a, size_t max_a, const char *b, int64_t n) {
    char digits[24];
    size_t nd = 0, at = 0;
    if (n >= 0)
        do digits[sizeof digits - 1 - nd++] = (char)('0' + n % 10); while ((n /= 10) > 0);
    const char *parts[3] = {a, b, digits + sizeof digits - nd};
    size_t lens[3] = {strlen(a), strlen(b), nd};
    if (lens[0] > max_a) lens[0] = max_a;
    for (int i = 0; i < 3 && size; i++) {
        size_t take = lens[i] < size - 1 - at ? lens[i] : size - 1 - at;
        memcpy(out + at, parts[i], take);
        at += take;
    }
    if (size) out[at] = 0;
}
static void gpuir__str_free(gpuir__str *s) { stbds_arrfree(s->buf); s->buf = NULL; }

/* Hands the text to the caller as a plain malloc'd string. */
static char *gpuir__str_detach(gpuir__str *s) {
    const char *src = gpuir__str_cstr(s);
    size_t n = strlen(src);
    char *out = (char *)GPUIR_MALLOC(n + 1);
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

static const char *gpuir__loc_func_name(const gpuir_ctx *ctx);

/* Forgets the current location: later errors carry none. */
static void gpuir__loc_clear(gpuir_ctx *ctx) {
    ctx->loc_file = NULL;
    ctx->loc_line = ctx->loc_col = 0;
    ctx->loc_note[0] = '\0';
    ctx->loc_module = NULL;
}

/* Appends the source line of the current location and a caret under its
   column, as clang and mlir-opt show them (tabs kept so the caret lines up). */
static void gpuir__loc_append_caret(const gpuir_ctx *ctx, gpuir__str *s) {
    const char *p = ctx->loc_src, *end = p + ctx->loc_src_len;
    for (uint32_t line = 1; line < ctx->loc_line && p < end; p++)
        if (*p == '\n') line++;
    const char *eol = p;
    while (eol < end && *eol != '\n' && *eol != '\r') eol++;
    size_t n = (size_t)(eol - p), col = ctx->loc_col ? ctx->loc_col - 1 : 0;
    if (p >= end && ctx->loc_line > 1 && n == 0 && col == 0) return;   /* past the text */
    if (n > 400 || col > n) return;                  /* a line too long to show, or a bad column */
    gpuir__str_appendf(s, "\n%.*s\n", (int)n, p);
    for (size_t i = 0; i < col; i++) gpuir__str_appendf(s, "%c", p[i] == '\t' ? '\t' : ' ');
    gpuir__str_appendf(s, "^");
}

/* Records the first error of the context, prefixed with the current source
   location if there is one, and returns `code` (so callers can return it). */
static gpuir_result gpuir__fail(gpuir_ctx *ctx, gpuir_result code, const char *fmt, ...)
    GPUIR__PRINTF(3, 4);
static gpuir_result gpuir__fail(gpuir_ctx *ctx, gpuir_result code, const char *fmt, ...) {
    GPUIR_ASSERT(code != GPUIR_OK);
    if (ctx->result != GPUIR_OK) return code;
    gpuir__str s = {NULL};
    if (ctx->loc_file && ctx->loc_line) {
        gpuir__str_appendf(&s, "%s:%u:%u: error: ", ctx->loc_file, ctx->loc_line, ctx->loc_col);
        if (ctx->loc_note[0]) gpuir__str_appendf(&s, "%s: ", ctx->loc_note);    /* a pass at an op */
    } else if (ctx->loc_module)
        gpuir__str_appendf(&s, "in @%s, op %zu (%s): ", gpuir__loc_func_name(ctx), ctx->loc_index,
                           ctx->loc_op_kind ? gpuir_op_name((gpuir_op_kind)ctx->loc_op_kind) : "?");
    else if (ctx->loc_note[0])
        gpuir__str_appendf(&s, "%s: ", ctx->loc_note);
    va_list ap;
    va_start(ap, fmt);
    gpuir__str_vappend(&s, fmt, ap);
    va_end(ap);
    if (ctx->loc_src && ctx->loc_file && ctx->loc_line) gpuir__loc_append_caret(ctx, &s);
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
#if defined(__GNUC__) || defined(__clang__)
    return !__builtin_mul_overflow(a, b, out);      /* no division: the verifier calls this per dim */
#else
    if (a != 0 && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
#endif
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

/* An f32 rounded to TF32: 10 mantissa bits, to nearest, ties away from
   zero (PTX cvt.rna.tf32.f32); NaN stays NaN. Kernels use the same bits
   (gpuir_tf32_round in codegen's helpers). */
static float gpuir__tf32_round(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x00400000u;
    else u += 0x1000u;
    u &= 0xffffe000u;
    memcpy(&x, &u, 4);
    return x;
}

GPUIRDEF const char *gpuir_result_name(gpuir_result r) {
    if ((int)r < 0 || r >= GPUIR_RESULT_COUNT) return "GPUIR_(unknown)";
    return gpuir__result_names[r];
}

GPUIRDEF const char *gpuir_result_string(gpuir_result r) {
    if ((int)r < 0 || r >= GPUIR_RESULT_COUNT) return "unknown result";
    return gpuir__result_messages[r];
}

GPUIRDEF const char *gpuir_version(void) { return GPUIR_VERSION_STRING; }

/* The default log callback when GPUIR_LOG asks for lines and the caller
   gave none: standard error. */
static void gpuir__log_stderr(void *user, const char *message) {
    (void)user;
    fprintf(stderr, "gpuir: %s\n", message);
}

/* GPUIR_LOG and GPUIR_DUMP_DIR, read once when the context is made; false
   when out of memory. */
static bool gpuir__ctx_read_env(gpuir_ctx *ctx) {
    const char *level = getenv("GPUIR_LOG"), *dir = getenv("GPUIR_DUMP_DIR");
    ctx->log_level = level && level[0] >= '1' && level[0] <= '9' && !level[1] ? (level[0] >= '2' ? 2 : 1) : 0;
    if (ctx->log_level && !ctx->desc.log) ctx->desc.log = gpuir__log_stderr;
    if (!dir || !*dir) return true;
    ctx->dump_dir = (char *)GPUIR_MALLOC(strlen(dir) + 1);
    if (ctx->dump_dir) memcpy(ctx->dump_dir, dir, strlen(dir) + 1);
    return ctx->dump_dir != NULL;
}

/* One line to the log callback when GPUIR_LOG is at least `level`. */
static void gpuir__logf(gpuir_ctx *ctx, int level, const char *fmt, ...) GPUIR__PRINTF(3, 4);
static void gpuir__logf(gpuir_ctx *ctx, int level, const char *fmt, ...) {
    if (ctx->log_level < level || !ctx->desc.log) return;
    gpuir__str s = {NULL};
    va_list ap;
    va_start(ap, fmt);
    gpuir__str_vappend(&s, fmt, ap);
    va_end(ap);
    ctx->desc.log(ctx->desc.log_user, gpuir__str_cstr(&s));
    gpuir__str_free(&s);
}

/* Milliseconds on a monotonic clock (for the log's timings). */
static double gpuir__now_ms(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

GPUIRDEF gpuir_ctx *gpuir_ctx_make(const gpuir_ctx_desc *desc) {
    gpuir_ctx *ctx = (gpuir_ctx *)gpuir__calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    if (desc) ctx->desc = *desc;
    /* Module tags start apart in each context, so a handle rarely passes
       for one of another context's modules either. */
    ctx->module_tags = (uint32_t)(((uintptr_t)ctx >> 4) * 2654435761u) % 255u;
    if (ctx->desc.max_tensor_bytes == 0) ctx->desc.max_tensor_bytes = (uint64_t)1 << 34;
    if (ctx->desc.max_shared_bytes == 0) ctx->desc.max_shared_bytes = 232448;
    if (ctx->desc.cache_dir) {               /* keep our own copy */
        size_t n = strlen(ctx->desc.cache_dir) + 1;
        ctx->cache_dir_copy = (char *)GPUIR_MALLOC(n);
        if (!ctx->cache_dir_copy) { GPUIR_FREE(ctx); return NULL; }
        memcpy(ctx->cache_dir_copy, ctx->desc.cache_dir, n);
        ctx->desc.cache_dir = ctx->cache_dir_copy;
    }
    if (!gpuir__ctx_read_env(ctx)) { GPUIR_FREE(ctx->cache_dir_copy); GPUIR_FREE(ctx); return NULL; }
    return ctx;
}

/* A NULL context is what a failed gpuir_ctx_make returned: it never has
   a place to keep an error, so it reports the only way make fails. */
GPUIRDEF gpuir_result gpuir_ctx_result(const gpuir_ctx *ctx) {
    return ctx ? ctx->result : GPUIR_ERR_OUT_OF_MEMORY;
}

GPUIRDEF const char *gpuir_ctx_error(const gpuir_ctx *ctx) {
    if (!ctx) return "ctx is NULL (gpuir_ctx_make failed: out of host memory)";
    return ctx->message ? ctx->message : "";
}

GPUIRDEF void gpuir_ctx_clear_error(gpuir_ctx *ctx) {
    if (!ctx) return;
    ctx->result = GPUIR_OK;
    stbds_arrfree(ctx->message);
    ctx->message = NULL;
}

GPUIRDEF void gpuir_free(void *p) { GPUIR_FREE(p); }

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
    GPUIR__CLASS_WAIT, GPUIR__CLASS_VIEW
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

/* The attribute names gpuir knows, as small numbers: an attribute carries
   its key (GPUIR__KEY_OTHER for any other name), so the checks and lookups
   compare numbers, not strings. The order is the order names are listed in
   messages. */
typedef enum gpuir__attr_key {
    GPUIR__KEY_OTHER,
    GPUIR__KEY_TRANSPOSE_A, GPUIR__KEY_TRANSPOSE_B, GPUIR__KEY_TF32, GPUIR__KEY_WGMMA, GPUIR__KEY_K_SLICES, GPUIR__KEY_AXES, GPUIR__KEY_KEEPDIMS,
    GPUIR__KEY_PERM, GPUIR__KEY_VALUE, GPUIR__KEY_NAME, GPUIR__KEY_AXIS, GPUIR__KEY_DIMS_OF, GPUIR__KEY_KERNEL,
    GPUIR__KEY_GRID, GPUIR__KEY_BLOCK, GPUIR__KEY_SMEM, GPUIR__KEY_STREAM, GPUIR__KEY_WAIT, GPUIR__KEY_EVENT,
    GPUIR__KEY_EVENTS, GPUIR__KEY_FUSION,
    GPUIR__KEY_COUNT
} gpuir__attr_key;

typedef struct gpuir__attr {
    uint32_t name;          /* offset in module->strings */
    uint8_t key;            /* gpuir__attr_key of the name */
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
    uint64_t generation;      /* counts bindings: device copies older than it are stale */
    bool initialized;         /* the data is part of the module (printed as = dense<[...]>) */
} gpuir__global;

typedef struct gpuir__func_entry { char *key; uint32_t value; } gpuir__func_entry;

#define GPUIR__POOLS 9        /* the stb_ds arrays of a module that hold its IR */

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
    uint32_t tag;             /* 1..255: in its value handles' high bits (GPUIR__HANDLE_BITS) */
    gpuir__func_entry *func_index;  /* stb_ds string map: function name -> id */
    char *placement_report;   /* stb_ds string: what place did and why */
    bool rewriting;           /* a pass is rebuilding `building`: new ops go to */
    uint32_t *rewrite_ops;    /*   this stb_ds list, which replaces its op list */
    const char *source_name;  /* for diagnostics of parsed modules */
    char *source_name_owned;
    uint32_t *kernel_refs;    /* stb_ds array: launch symbols' kernels (gpuir__launch_kernel) */
    size_t n_kernel_refs;
    uint32_t key_names[GPUIR__KEY_COUNT];  /* known attribute names in strings, 0 until used */
    struct gpuir__scratch *scratch;  /* stb_ds: blocks the verifier and passes reuse */
    bool verified;            /* passed the verifier, and unchanged since: */
    size_t verified_sizes[GPUIR__POOLS];  /*   its pools then (gpuir__module_still_verified) */
    gpuir_target target;      /* the device the passes plan for (gpuir__module_sm_count, _sm) */
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

/* The dims of a type made from a NULL dims pointer (a rank > 0): the
   checks name it. */
#define GPUIR__DIMS_NULL INT64_MIN

static gpuir_type gpuir__type_make(gpuir_type_kind kind, gpuir_dtype dtype, int rank,
                                   const int64_t *dims, int space) {
    gpuir_type t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.dtype = dtype;
    t.rank = rank;
    t.space = space;
    if (rank < 0 || rank > GPUIR_MAX_RANK) return t;     /* reads no dims; checks report it */
    for (int i = 0; i < rank; i++) t.dims[i] = dims ? dims[i] : GPUIR__DIMS_NULL;
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

/* gpuir_type_equal through pointers (no copies of the types). */
static bool gpuir__type_same(const gpuir_type *a, const gpuir_type *b) {
    if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank || a->space != b->space)
        return false;
    for (int i = 0; i < a->rank && i < GPUIR_MAX_RANK; i++)
        if (a->dims[i] != b->dims[i]) return false;
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
    int64_t count = 1, bytes;
    bool overflow = false;          /* reported after the dims are all checked */
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] == GPUIR__DIMS_NULL)
            return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: dims is NULL for rank %d",
                               what, (int)t->rank);
        if (t->dims[i] < 0 && t->dims[i] != GPUIR_DYN)
            return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "%s: dimension %d is %lld; dims are >= 0 or ?",
                               what, i, (long long)t->dims[i]);
        if (t->dims[i] != GPUIR_DYN && !overflow) overflow = !gpuir__mul_i64(count, t->dims[i], &count);
    }
    if (overflow) return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "%s: the element count overflows 2^63", what);
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

/* ---- scratch memory ----
   Zeroed arrays that the verifier and the passes use for one run (value id
   -> something, mostly) and give back. The blocks stay with the module for
   the next run: a fresh calloc of a large array costs a page fault per
   4 KiB touched (more than zeroing it) and passes make several per
   function. Freed with the module. */
typedef struct gpuir__scratch { void *p; size_t cap; bool used; } gpuir__scratch;

/* gpuir__calloc from the module's free blocks: the smallest that fits, else
   the largest grown (with room to spare: the value pool grows pass after
   pass), else a new one. NULL on overflow or when out of memory. */
static void *gpuir__scratch_calloc(gpuir_module *m, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    size_t bytes = count * size;
    if (!bytes) bytes = 1;
    gpuir__scratch *fit = NULL, *largest = NULL;
    for (size_t i = 0; i < stbds_arrlenu(m->scratch); i++) {
        gpuir__scratch *s = &m->scratch[i];
        if (s->used) continue;
        if (s->cap >= bytes && (!fit || s->cap < fit->cap)) fit = s;
        if (!largest || s->cap > largest->cap) largest = s;
    }
    if (!fit) {
        size_t cap = bytes <= SIZE_MAX / 5 * 4 ? bytes / 4 * 5 + 64 : bytes;
        void *p = GPUIR_MALLOC(cap);
        if (!p) return NULL;
        if (largest) GPUIR_FREE(largest->p);
        else {
            gpuir__scratch s = {NULL, 0, false};
            stbds_arrput(m->scratch, s);
            largest = &m->scratch[stbds_arrlenu(m->scratch) - 1];
        }
        largest->p = p;
        largest->cap = cap;
        fit = largest;
    }
    fit->used = true;
    memset(fit->p, 0, bytes);
    return fit->p;
}

/* Gives a block of gpuir__scratch_calloc back to the module (NULL: none). */
static void gpuir__scratch_free(gpuir_module *m, void *p) {
    if (!p) return;
    for (size_t i = 0; i < stbds_arrlenu(m->scratch); i++)
        if (m->scratch[i].p == p) { m->scratch[i].used = false; return; }
    GPUIR_ASSERT(!"gpuir__scratch_free: not a scratch block");
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

/* The buffer a memref value is a view of (memref.reshape, followed
   through views of views); the value itself when it is no view. */
static uint32_t gpuir__view_base(const gpuir_module *m, uint32_t v) {
    for (;;) {
        const gpuir__value *val = gpuir__value_at(m, v);
        const gpuir__op *def = val ? gpuir__op_at(m, val->def_op) : NULL;
        if (!def || def->kind != GPUIR_OP_MEMREF_RESHAPE) return v;
        v = gpuir__op_operand(m, def, 0);
    }
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
    stbds_arrsetlen(m->strings, off + n + 1);
    if (n) memcpy(m->strings + off, s, n);
    m->strings[off + n] = '\0';
    return off;
}

static gpuir_value gpuir__value_handle(uint32_t id) { gpuir_value v; v.id = id; return v; }

/* Public value handles: the value's id in the low GPUIR__HANDLE_BITS, the
   module's tag above (internally, handles hold plain ids). Id 0 stays 0. */
#define GPUIR__HANDLE_BITS 24
#define GPUIR__HANDLE_MASK ((1u << GPUIR__HANDLE_BITS) - 1u)
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

/* Whether s is name: the first bytes tell most attribute names apart, so
   the lookups the passes and the verifier make per op rarely call strcmp. */
static bool gpuir__name_is(const char *s, const char *name) {
    return s[0] == name[0] && strcmp(s, name) == 0;
}

/* The attribute of an op with a known name (key), or NULL. */
static const gpuir__attr *gpuir__attr_get(const gpuir_module *m, const gpuir__op *op, gpuir__attr_key key) {
    for (uint32_t i = 0; i < op->n_attrs; i++)
        if (m->attrs[op->attrs + i].key == key) return &m->attrs[op->attrs + i];
    return NULL;
}

/* A bool attribute of an op; false when absent (kinds are verified). */
static bool gpuir__op_flag(const gpuir_module *m, const gpuir__op *op, gpuir__attr_key key) {
    const gpuir__attr *a = gpuir__attr_get(m, op, key);
    return a && a->kind == GPUIR__ATTR_BOOL && a->i;
}

/* The last op of a function, if it is its return. */
static const gpuir__op *gpuir__func_return_op(const gpuir_module *m, const gpuir__func *f) {
    size_t n = stbds_arrlenu(f->ops);
    const gpuir__op *op = n ? gpuir__op_at(m, f->ops[n - 1]) : NULL;
    return op && op->kind == GPUIR_OP_RETURN ? op : NULL;
}

GPUIRDEF gpuir_module *gpuir_module_make(gpuir_ctx *ctx) {
    if (!ctx || ctx->result != GPUIR_OK) return NULL;
    gpuir_module *m = (gpuir_module *)gpuir__calloc(1, sizeof *m);
    if (!m) { gpuir__oom(ctx, "module"); return NULL; }
    m->ctx = ctx;
    ctx->module_tags = ctx->module_tags % 255u + 1u;      /* 1..255, in turn */
    m->tag = ctx->module_tags;
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
    for (size_t i = 0; i < stbds_arrlenu(m->globals); i++) GPUIR_FREE(m->globals[i].data);
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
    stbds_arrfree(m->kernel_refs);
    for (size_t i = 0; i < stbds_arrlenu(m->scratch); i++) GPUIR_FREE(m->scratch[i].p);
    stbds_arrfree(m->scratch);
    GPUIR_FREE(m->source_name_owned);
    GPUIR_FREE(m);
}

GPUIRDEF void gpuir_module_destroy(gpuir_module *m) {
    if (!m) return;
    gpuir_ctx *ctx = m->ctx;
    for (size_t i = 0; i < stbds_arrlenu(ctx->modules); i++)
        if (ctx->modules[i] == m) { stbds_arrdel(ctx->modules, i); break; }
    gpuir__module_free(m);
}

static void gpuir__runtime_free(gpuir_ctx *ctx);

GPUIRDEF void gpuir_ctx_destroy(gpuir_ctx *ctx) {
    if (!ctx) return;
    gpuir__runtime_free(ctx);
    for (size_t i = 0; i < stbds_arrlenu(ctx->modules); i++) gpuir__module_free(ctx->modules[i]);
    stbds_arrfree(ctx->modules);
    stbds_arrfree(ctx->message);
    GPUIR_FREE(ctx->dump_dir);
    GPUIR_FREE(ctx);
}

GPUIRDEF gpuir_ctx *gpuir_module_ctx(const gpuir_module *m) { return m ? m->ctx : NULL; }

/* ---- introspection ----
   A NULL module (a failed make or parse) has no functions and no globals. */

/* The function of a handle; NULL for a NULL module or an invalid id. */
static const gpuir__func *gpuir__func_of(const gpuir_module *m, gpuir_func f) {
    return m ? gpuir__func_at(m, f.id) : NULL;
}

GPUIRDEF size_t gpuir_module_func_count(const gpuir_module *m) { return m ? stbds_arrlenu(m->funcs) : 0; }

GPUIRDEF gpuir_func gpuir_module_func_at(const gpuir_module *m, size_t index) {
    return gpuir__func_handle(index < gpuir_module_func_count(m) ? (uint32_t)index + 1 : 0);
}

GPUIRDEF gpuir_func gpuir_module_find_func(const gpuir_module *m, const char *name) {
    return gpuir__func_handle(m && name ? gpuir__find_func(m, name) : 0);
}

GPUIRDEF const char *gpuir_func_name(const gpuir_module *m, gpuir_func f) {
    const gpuir__func *fn = gpuir__func_of(m, f);
    return fn ? gpuir__string(m, fn->name) : "";
}

GPUIRDEF bool gpuir_func_is_kernel(const gpuir_module *m, gpuir_func f) {
    const gpuir__func *fn = gpuir__func_of(m, f);
    return fn && fn->kernel;
}

GPUIRDEF size_t gpuir_func_param_count(const gpuir_module *m, gpuir_func f) {
    const gpuir__func *fn = gpuir__func_of(m, f);
    return fn ? stbds_arrlenu(fn->params) : 0;
}

static gpuir_type gpuir__invalid_type(void) {
    gpuir_type t;
    memset(&t, 0, sizeof t);
    return t;
}

GPUIRDEF gpuir_type gpuir_func_param_type(const gpuir_module *m, gpuir_func f, size_t i) {
    const gpuir__func *fn = gpuir__func_of(m, f);
    if (!fn || i >= stbds_arrlenu(fn->params)) return gpuir__invalid_type();
    return gpuir__value_at(m, fn->params[i])->type;
}

GPUIRDEF size_t gpuir_func_result_count(const gpuir_module *m, gpuir_func f) {
    const gpuir__func *fn = gpuir__func_of(m, f);
    const gpuir__op *ret = fn ? gpuir__func_return_op(m, fn) : NULL;
    return ret ? ret->n_operands : 0;
}

GPUIRDEF gpuir_type gpuir_func_result_type(const gpuir_module *m, gpuir_func f, size_t i) {
    const gpuir__func *fn = gpuir__func_of(m, f);
    const gpuir__op *ret = fn ? gpuir__func_return_op(m, fn) : NULL;
    if (!ret || i >= ret->n_operands) return gpuir__invalid_type();
    return gpuir__value_at(m, gpuir__op_operand(m, ret, (uint32_t)i))->type;
}

GPUIRDEF gpuir_type gpuir_value_type(const gpuir_module *m, gpuir_value v) {
    if (!m || v.id >> GPUIR__HANDLE_BITS != m->tag) return gpuir__invalid_type();
    const gpuir__value *val = gpuir__value_at(m, v.id & GPUIR__HANDLE_MASK);
    return val ? val->type : gpuir__invalid_type();
}

GPUIRDEF size_t gpuir_module_global_count(const gpuir_module *m) { return m ? stbds_arrlenu(m->globals) : 0; }

GPUIRDEF const char *gpuir_module_global_name(const gpuir_module *m, size_t index) {
    return index < gpuir_module_global_count(m) ? gpuir__string(m, m->globals[index].name) : "";
}

GPUIRDEF gpuir_type gpuir_module_global_type(const gpuir_module *m, size_t index) {
    return index < gpuir_module_global_count(m) ? m->globals[index].type : gpuir__invalid_type();
}

GPUIRDEF bool gpuir_module_global_bound(const gpuir_module *m, size_t index) {
    return index < gpuir_module_global_count(m) && m->globals[index].data != NULL;
}

/* ====================================================================== */
// >>build
// The builder: one checked entry (gpuir__build_op) that the public calls and
// the parser share. Reads: ir. Writes: ir. Shape inference lives here and is
// reused by verify and ref (gpuir__infer).

/* ---- attribute pool ---- */

/* Each key's name and the kind its value must have (VALUE: any; the
   constant's inference checks it), with the words for messages. */
static const struct gpuir__attr_key_info {
    const char *name;
    int kind;               /* a gpuir__attr_kind, or -1: any */
    const char *want;
} gpuir__attr_keys[GPUIR__KEY_COUNT] = {
    {"", -1, ""},
    {"transpose_a", GPUIR__ATTR_BOOL, "a bool"}, {"transpose_b", GPUIR__ATTR_BOOL, "a bool"},
    {"tf32", GPUIR__ATTR_BOOL, "a bool"}, {"wgmma", GPUIR__ATTR_BOOL, "a bool"},
    {"k_slices", GPUIR__ATTR_INT, "an integer"}, {"axes", GPUIR__ATTR_INTS, "an integer list"},
    {"keepdims", GPUIR__ATTR_BOOL, "a bool"}, {"perm", GPUIR__ATTR_INTS, "an integer list"},
    {"value", -1, ""}, {"name", GPUIR__ATTR_SYMBOL, "a @symbol"}, {"axis", GPUIR__ATTR_INT, "an integer"},
    {"dims_of", GPUIR__ATTR_INTS, "an integer list"}, {"kernel", GPUIR__ATTR_SYMBOL, "a @symbol"},
    {"grid", GPUIR__ATTR_INTS, "an integer list"}, {"block", GPUIR__ATTR_INTS, "an integer list"},
    {"smem", GPUIR__ATTR_INT, "an integer"}, {"stream", GPUIR__ATTR_INT, "an integer"},
    {"wait", GPUIR__ATTR_INTS, "an integer list"}, {"event", GPUIR__ATTR_INT, "an integer"},
    {"events", GPUIR__ATTR_INTS, "an integer list"}, {"fusion", GPUIR__ATTR_INT, "an integer"},
};

static gpuir__attr_key gpuir__attr_key_of(const char *name) {
    for (int k = 1; k < GPUIR__KEY_COUNT; k++)
        if (gpuir__name_is(name, gpuir__attr_keys[k].name)) return (gpuir__attr_key)k;
    return GPUIR__KEY_OTHER;
}

/* Appends an attribute of a known key (its name interned once per module:
   strings never change, so the attributes of a key share it). */
static uint32_t gpuir__attr_push_key(gpuir_module *m, gpuir__attr_key key, gpuir__attr_kind kind) {
    if (!m->key_names[key])
        m->key_names[key] = gpuir__intern(m, gpuir__attr_keys[key].name, strlen(gpuir__attr_keys[key].name));
    gpuir__attr a;
    memset(&a, 0, sizeof a);
    a.name = m->key_names[key];
    a.key = (uint8_t)key;
    a.kind = kind;
    stbds_arrput(m->attrs, a);
    return (uint32_t)stbds_arrlenu(m->attrs) - 1;
}

static uint32_t gpuir__attr_push(gpuir_module *m, const char *name, gpuir__attr_kind kind) {
    gpuir__attr_key key = gpuir__attr_key_of(name);
    if (key != GPUIR__KEY_OTHER) return gpuir__attr_push_key(m, key, kind);
    gpuir__attr a;
    memset(&a, 0, sizeof a);
    a.name = gpuir__intern(m, name, strlen(name));
    a.key = (uint8_t)key;
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

/* Gives attribute i the integer list v[0..n) (appended to the pool). */
static void gpuir__attr_set_ints(gpuir_module *m, uint32_t i, size_t n, const int64_t *v) {
    m->attrs[i].off = (uint32_t)stbds_arrlenu(m->ints);
    m->attrs[i].n = (uint32_t)n;
    for (size_t k = 0; k < n; k++) stbds_arrput(m->ints, v[k]);
}

static void gpuir__attr_push_ints(gpuir_module *m, const char *name, size_t n,
                                  const int64_t *v) {
    gpuir__attr_set_ints(m, gpuir__attr_push(m, name, GPUIR__ATTR_INTS), n, v);
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

static gpuir__attr *gpuir__attrs_key(const gpuir__attrs *as, gpuir__attr_key key) {
    for (uint32_t i = 0; i < as->n; i++)
        if (as->m->attrs[as->first + i].key == key) return &as->m->attrs[as->first + i];
    return NULL;
}

#define GPUIR__KEYS(k) (1u << GPUIR__KEY_##k)

/* Allowed attributes per class, as a set of keys. */
static uint32_t gpuir__class_attrs(gpuir__op_class c) {
    switch (c) {
    case GPUIR__CLASS_MATMUL:
        return GPUIR__KEYS(TRANSPOSE_A) | GPUIR__KEYS(TRANSPOSE_B) | GPUIR__KEYS(TF32) | GPUIR__KEYS(WGMMA) | GPUIR__KEYS(K_SLICES);
    case GPUIR__CLASS_REDUCE: return GPUIR__KEYS(AXES) | GPUIR__KEYS(KEEPDIMS);
    case GPUIR__CLASS_TRANSPOSE: return GPUIR__KEYS(PERM);
    case GPUIR__CLASS_CONSTANT: return GPUIR__KEYS(VALUE);
    case GPUIR__CLASS_GLOBAL: return GPUIR__KEYS(NAME);
    case GPUIR__CLASS_SOFTMAX: return GPUIR__KEYS(AXIS);
    default: return 0;
    }
}

/* Whether an op runs on a stream once the async pass has run: it may carry
   stream, wait and event attributes. */
static bool gpuir__op_is_stream_op(gpuir_op_kind k) {
    return k == GPUIR_OP_GPU_ALLOC || k == GPUIR_OP_GPU_DEALLOC || k == GPUIR_OP_GPU_MEMCPY ||
           k == GPUIR_OP_GPU_LAUNCH_FUNC;
}

/* Allowed attributes per op, as a set of keys (fusion marks on computing
   ops are allowed by gpuir__check_attr_names). */
static uint32_t gpuir__op_attrs(gpuir_op_kind k) {
    const uint32_t on_stream = GPUIR__KEYS(STREAM) | GPUIR__KEYS(WAIT) | GPUIR__KEYS(EVENT);
    switch (k) {
    case GPUIR_OP_GPU_ALLOC: return GPUIR__KEYS(DIMS_OF) | on_stream;
    case GPUIR_OP_MEMREF_ALLOC: return GPUIR__KEYS(DIMS_OF);
    case GPUIR_OP_GPU_DEALLOC: case GPUIR_OP_GPU_MEMCPY: return on_stream;
    case GPUIR_OP_GPU_LAUNCH_FUNC:
        return GPUIR__KEYS(KERNEL) | GPUIR__KEYS(GRID) | GPUIR__KEYS(BLOCK) | GPUIR__KEYS(SMEM) | on_stream;
    case GPUIR_OP_GPU_WAIT: return GPUIR__KEYS(EVENTS);
    default: break;
    }
    return gpuir__class_attrs(gpuir__info(k)->cls);
}

/* " (expected one of: a b c)" for a set of keys, or "" when it is empty. */
static void gpuir__attr_names_text(uint32_t keys, char *out, size_t size) {
    size_t n = 0;
    out[0] = 0;
    for (int k = 1; k < GPUIR__KEY_COUNT && n < size; k++) {
        if (!(keys & (1u << k))) continue;
        const char *lead = n ? " " : " (expected one of: ";
        n += (size_t)snprintf(out + n, size - n, "%s%s", lead, gpuir__attr_keys[k].name);
    }
    if (n && n < size) snprintf(out + n, size - n, ")");
}

/* Every attribute is known to the op, appears once and has the right kind. */
static gpuir_result gpuir__check_attr_names(gpuir_ctx *ctx, gpuir_op_kind kind,
                                            const gpuir__attrs *as) {
    uint32_t allowed = gpuir__op_attrs(kind), seen = 0;
    if (gpuir__class_computes(gpuir__info(kind)->cls)) allowed |= GPUIR__KEYS(FUSION);
    for (uint32_t i = 0; i < as->n; i++) {
        const gpuir__attr *a = &as->m->attrs[as->first + i];
        uint32_t bit = 1u << a->key;
        if (!a->key || !(allowed & bit)) {
            char expected[256];
            gpuir__attr_names_text(allowed & ~GPUIR__KEYS(FUSION), expected, sizeof expected);
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: unknown attribute '%s'%s", gpuir_op_name(kind),
                               gpuir__string(as->m, a->name), expected);
        }
        if (seen & bit)
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: attribute '%s' given twice",
                               gpuir_op_name(kind), gpuir__attr_keys[a->key].name);
        seen |= bit;
        const struct gpuir__attr_key_info *info = &gpuir__attr_keys[a->key];
        if (info->kind >= 0 && (int)a->kind != info->kind)
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: attribute '%s' must be %s",
                               gpuir_op_name(kind), info->name, info->want);
    }
    return GPUIR_OK;
}

/* Fetches attribute `key` of kind `want`; missing is an error if `required`. */
static gpuir_result gpuir__need_attr(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir__attrs *as,
                                     gpuir__attr_key key, gpuir__attr_kind want, bool required,
                                     gpuir__attr **out) {
    static const char *const kind_names[] = {"an integer", "a float", "a bool", "a string",
                                             "a @symbol", "an integer list", "dense data"};
    const char *name = gpuir__attr_keys[key].name;
    *out = gpuir__attrs_key(as, key);
    if (!*out && required)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: missing attribute '%s' (%s)",
                           gpuir_op_name(kind), name, kind_names[want]);
    if (*out && (*out)->kind != want)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: attribute '%s' must be %s",
                           gpuir_op_name(kind), name, kind_names[want]);
    return GPUIR_OK;
}

static bool gpuir__attr_flag(const gpuir__attrs *as, gpuir__attr_key key) {
    const gpuir__attr *a = gpuir__attrs_key(as, key);
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

GPUIRDEF int64_t gpuir_matmul_k_slice_len(int64_t K, int64_t S) {
    if (S < 1 || K < 0) return 0;
    int64_t per = K / S + (K % S != 0);
    return (per + 31) / 32 * 32;
}

/* A split-K matmul's result (the attribute k_slices = S on a matmul whose
   unsplit result is *out): f32 [S, batch..., M, N]; S >= 2, float
   operands, a static K that leaves no slice empty. */
static gpuir_result gpuir__infer_k_slices(gpuir_ctx *ctx, int64_t S, int64_t K, gpuir_type *out) {
    gpuir__tbuf bo;
    if (S < 2)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "matmul: k_slices must be at least 2, got %lld", (long long)S);
    if (!gpuir_dtype_is_float(out->dtype))
        return gpuir__fail(ctx, GPUIR_ERR_DTYPE, "matmul: k_slices needs float operands, got %s", gpuir__tstr(&bo, out));
    if (K == GPUIR_DYN)
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "matmul: k_slices needs a static K");
    if ((S - 1) * gpuir_matmul_k_slice_len(K, S) >= K)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "matmul: k_slices = %lld leaves a slice empty: K = %lld in "
                           "slices of %lld", (long long)S, (long long)K, (long long)gpuir_matmul_k_slice_len(K, S));
    if (out->rank + 1 > GPUIR_MAX_RANK)
        return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "matmul: k_slices adds a dim to %s: rank beyond %d",
                           gpuir__tstr(&bo, out), GPUIR_MAX_RANK);
    memmove(out->dims + 1, out->dims, (size_t)out->rank * sizeof out->dims[0]);
    out->dims[0] = S;
    out->rank++;
    out->dtype = GPUIR_F32;
    return GPUIR_OK;
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
    if (gpuir__attr_flag(as, GPUIR__KEY_TF32) && a->dtype != GPUIR_F32)
        return gpuir__fail(ctx, GPUIR_ERR_DTYPE, "matmul: tf32 rounds f32 operands, got %s", gpuir__tstr(&ba, a));
    bool ta = gpuir__attr_flag(as, GPUIR__KEY_TRANSPOSE_A), tb = gpuir__attr_flag(as, GPUIR__KEY_TRANSPOSE_B);
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
    const gpuir__attr *ks = gpuir__attrs_key(as, GPUIR__KEY_K_SLICES);
    return ks ? gpuir__infer_k_slices(ctx, ks->i, k, out) : GPUIR_OK;
}

/* Normalizes an axis in place: negative counts from the back. */
static bool gpuir__norm_axis(int64_t *axis, int rank) {
    if (*axis < 0) *axis += rank;
    return *axis >= 0 && *axis < rank;
}

static gpuir_result gpuir__infer_reduce(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *x,
                                        const gpuir__attrs *as, gpuir_type *out) {
    gpuir__attr *axes;
    gpuir_result r = gpuir__need_attr(ctx, kind, as, GPUIR__KEY_AXES, GPUIR__ATTR_INTS, true, &axes);
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
    bool keep = gpuir__attr_flag(as, GPUIR__KEY_KEEPDIMS);
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
    gpuir_result r = gpuir__need_attr(ctx, GPUIR_OP_TRANSPOSE, as, GPUIR__KEY_PERM, GPUIR__ATTR_INTS,
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
    gpuir__attr *v = gpuir__attrs_key(as, GPUIR__KEY_VALUE);
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
    gpuir_result r = gpuir__need_attr(ctx, GPUIR_OP_GET_GLOBAL, as, GPUIR__KEY_NAME, GPUIR__ATTR_SYMBOL,
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
    gpuir_result r = gpuir__need_attr(ctx, GPUIR_OP_SOFTMAX, as, GPUIR__KEY_AXIS, GPUIR__ATTR_INT, true,
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
    static const int arity[] = {1, 2, 2, 1, 1, 1, 1, 1, 0, 0, 1, -1, -1, 1, 2, -1, 0, 1};
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
static gpuir_result gpuir__infer_ex(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in,
                                    uint32_t n, const gpuir__attrs *as, const gpuir_type *given,
                                    bool given_checked, gpuir_type *out) {
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
    if (given && !given_checked && (r = gpuir__type_check(ctx, given, gpuir_op_name(kind))) != GPUIR_OK)
        return r;
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
    if (!r && given && !needs_given && !gpuir__type_same(given, out)) {
        gpuir__tbuf bg, bo;
        gpuir_type same_dtype = *given;
        same_dtype.dtype = out->dtype;
        return gpuir__fail(ctx, gpuir_type_equal(same_dtype, *out) ? GPUIR_ERR_DTYPE : GPUIR_ERR_SHAPE,
                           "%s: result type %s does not match the inferred "
                           "%s", gpuir_op_name(kind), gpuir__tstr(&bg, given), gpuir__tstr(&bo, out));
    }
    return r;
}

static gpuir_result gpuir__infer(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in,
                                 uint32_t n, const gpuir__attrs *as, const gpuir_type *given,
                                 gpuir_type *out) {
    return gpuir__infer_ex(ctx, kind, in, n, as, given, false, out);
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

/* The slot of symbol offset `sym` in the module's table of launch targets:
   (offset + 1, kernel) pairs, open addressing, a power of two long, at
   most half full; an empty slot (key 0) if it is not there. */
static uint32_t *gpuir__kernel_ref_slot(gpuir_module *m, uint32_t sym) {
    size_t slots = stbds_arrlenu(m->kernel_refs) / 2, mask = slots - 1;
    size_t h = ((uint32_t)(sym + 1) * 2654435761u) & mask;
    while (m->kernel_refs[2 * h] && m->kernel_refs[2 * h] != sym + 1) h = (h + 1) & mask;
    return &m->kernel_refs[2 * h];
}

/* Remembers that symbol offset `sym` names kernel f (the table doubles
   when half full). */
static void gpuir__kernel_ref_put(gpuir_module *m, uint32_t sym, uint32_t f) {
    size_t slots = stbds_arrlenu(m->kernel_refs) / 2;
    if (2 * (m->n_kernel_refs + 1) > slots) {
        uint32_t *old = m->kernel_refs;
        size_t n = slots ? 2 * slots : 64;
        m->kernel_refs = NULL;
        stbds_arrsetlen(m->kernel_refs, 2 * n);
        memset(m->kernel_refs, 0, 2 * n * sizeof *m->kernel_refs);
        for (size_t i = 0; i < slots; i++)
            if (old[2 * i]) memcpy(gpuir__kernel_ref_slot(m, old[2 * i] - 1), &old[2 * i], 2 * sizeof *old);
        stbds_arrfree(old);
    }
    uint32_t *slot = gpuir__kernel_ref_slot(m, sym);
    m->n_kernel_refs += !slot[0];
    slot[0] = sym + 1;
    slot[1] = f;
}

/* gpuir__launch_target of the symbol at string offset `sym`, remembered by
   that offset: the verifier and the passes resolve each launch several
   times, and a lookup by name costs a hash of the string. A remembered
   kernel is checked against the symbol before it is used (a stale entry
   is a miss), so the table needs no upkeep. Not for the runtime: it
   writes to the module. */
static uint32_t gpuir__launch_kernel(gpuir_module *m, uint32_t sym) {
    const char *symbol = gpuir__string(m, sym);
    size_t n = strlen(GPUIR__KERNEL_MODULE "::");
    if (m->kernel_refs) {
        const uint32_t *slot = gpuir__kernel_ref_slot(m, sym);
        const gpuir__func *k = slot[0] ? gpuir__func_at(m, slot[1]) : NULL;
        if (k && k->kernel && strncmp(symbol, GPUIR__KERNEL_MODULE "::", n) == 0 &&
            strcmp(gpuir__string(m, k->name), symbol + n) == 0)
            return slot[1];
    }
    uint32_t f = gpuir__launch_target(m, symbol);
    if (f) gpuir__kernel_ref_put(m, sym, f);
    return f;
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

/* The sizes of an allocation's dynamic dims: `dims_of = [operand, axis,
   ...]`, one pair per `?` of the result, in order; the operands are
   buffers whose sizes they are (nothing of their data is read). A static
   result takes neither. */
static gpuir_result gpuir__check_dims_of(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in, uint32_t n,
                                         const gpuir__attrs *as, const gpuir_type *t) {
    gpuir__tbuf b;
    int dynamic = 0;
    for (int i = 0; i < t->rank; i++) dynamic += t->dims[i] == GPUIR_DYN;
    const gpuir__attr *dims_of = gpuir__attrs_key(as, GPUIR__KEY_DIMS_OF);
    if (!dynamic && (n || dims_of))
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: the result %s is static: it takes no sizes "
                           "(operands, dims_of)", gpuir_op_name(kind), gpuir__tstr(&b, t));
    if (!dynamic) return GPUIR_OK;
    if (!dims_of || dims_of->n != 2u * (uint32_t)dynamic)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: the result %s has %d dynamic dim%s: dims_of must "
                           "give an (operand, axis) pair for each", gpuir_op_name(kind), gpuir__tstr(&b, t),
                           dynamic, dynamic == 1 ? "" : "s");
    const int64_t *pairs = gpuir__ints_at(as->m, dims_of->off);
    for (int k = 0; k < dynamic; k++) {
        int64_t o = pairs[2 * k], a = pairs[2 * k + 1];
        if (o < 0 || o >= (int64_t)n || a < 0 || a >= in[o].rank)
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "%s: dims_of pair %d (%lld, %lld) names no dim of an "
                               "operand (it has %u)", gpuir_op_name(kind), k, (long long)o, (long long)a, n);
    }
    return GPUIR_OK;
}

static gpuir_result gpuir__infer_alloc(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in, uint32_t n,
                                       const gpuir__attrs *as, const gpuir_type *t) {
    gpuir__tbuf b;
    if (t->kind != GPUIR_TYPE_MEMREF)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: the result %s must be a memref", gpuir_op_name(kind),
                           gpuir__tstr(&b, t));
    gpuir_result r = gpuir__check_dims_of(ctx, kind, in, n, as, t);
    if (r) return r;
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
    if (t->kind != GPUIR_TYPE_MEMREF || (t->space != GPUIR_SPACE_HOST && t->space != GPUIR_SPACE_DEVICE))
        return gpuir__space_error(ctx, GPUIR_OP_MEMREF_GET_GLOBAL, "result", t,
                                  "must be a host memref (or a device one: the resident copy)");
    return gpuir__infer_global(ctx, as, &as_tensor);
}

/* memref.reshape: the same memory seen with another static shape. */
static gpuir_result gpuir__infer_view(gpuir_ctx *ctx, gpuir_op_kind kind, const gpuir_type *in,
                                      const gpuir_type *t) {
    gpuir__tbuf bi, bt;
    if (t->kind != GPUIR_TYPE_MEMREF || !gpuir__type_is_static(t) || !gpuir__type_is_static(in))
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: %s -> %s: both must be static memrefs "
                           "(dynamic sizes are not supported yet)", gpuir_op_name(kind),
                           gpuir__tstr(&bi, in), gpuir__tstr(&bt, t));
    if (in->dtype != t->dtype || in->space != t->space)
        return gpuir__fail(ctx, in->dtype != t->dtype ? GPUIR_ERR_DTYPE : GPUIR_ERR_VERIFY,
                           "%s: %s -> %s: a view keeps the element type and the memory space",
                           gpuir_op_name(kind), gpuir__tstr(&bi, in), gpuir__tstr(&bt, t));
    if (gpuir__type_count(in) != gpuir__type_count(t))
        return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "%s: %s has %lld elements, %s has %lld",
                           gpuir_op_name(kind), gpuir__tstr(&bi, in), (long long)gpuir__type_count(in),
                           gpuir__tstr(&bt, t), (long long)gpuir__type_count(t));
    return GPUIR_OK;
}

/* The most threads one launch may have: kernels index threads (block rank
   times block size plus thread rank) and step by the grid's thread count in
   64-bit integers, so an index plus a step must not overflow. */
#define GPUIR__MAX_LAUNCH_THREADS ((uint64_t)1 << 62)

/* grid and block: three sizes >= 1 (block at most 1024 threads); smem >= 0;
   together at most GPUIR__MAX_LAUNCH_THREADS threads. */
static gpuir_result gpuir__check_launch_dims(gpuir_ctx *ctx, const gpuir__attrs *as) {
    const gpuir__attr_key keys[2] = {GPUIR__KEY_GRID, GPUIR__KEY_BLOCK};
    for (int k = 0; k < 2; k++) {
        const gpuir__attr *a = gpuir__attrs_key(as, keys[k]);
        if (!a) continue;
        const int64_t *v = gpuir__ints_at(as->m, a->off);
        bool ok = a->n == 3 && v[0] >= 1 && v[1] >= 1 && v[2] >= 1 && v[0] <= INT32_MAX &&
                  v[1] <= 65535 && v[2] <= 65535;
        if (ok && k == 1) ok = v[0] * v[1] * v[2] <= 1024;
        if (!ok)
            return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "gpu.launch_func: %s must be [x, y, z] "
                               "with sizes >= 1%s", gpuir__attr_keys[keys[k]].name, k ? " and at most 1024 threads" : "");
    }
    const gpuir__attr *grid = gpuir__attrs_key(as, GPUIR__KEY_GRID), *block = gpuir__attrs_key(as, GPUIR__KEY_BLOCK);
    if (grid && block) {
        const int64_t *g = gpuir__ints_at(as->m, grid->off), *b = gpuir__ints_at(as->m, block->off);
        uint64_t blocks = (uint64_t)g[0] * (uint64_t)g[1] * (uint64_t)g[2];    /* < 2^63 */
        uint64_t threads = (uint64_t)(b[0] * b[1] * b[2]);
        if (blocks > GPUIR__MAX_LAUNCH_THREADS / threads)
            return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "gpu.launch_func: grid [%lld, %lld, %lld] of %llu-thread blocks "
                               "is more than 2^62 threads (kernels index threads in 64 bits)", (long long)g[0],
                               (long long)g[1], (long long)g[2], (unsigned long long)threads);
    }
    const gpuir__attr *smem = gpuir__attrs_key(as, GPUIR__KEY_SMEM);
    if (smem && smem->i < 0)
        return gpuir__fail(ctx, GPUIR_ERR_ATTRIBUTE, "gpu.launch_func: smem is negative");
    return GPUIR_OK;
}

/* The operands match the kernel's parameters (memory spaces aside). */
static gpuir_result gpuir__infer_launch(gpuir_ctx *ctx, const gpuir_type *in, uint32_t n,
                                        const gpuir__attrs *as) {
    gpuir__attr *sym;
    gpuir_result r = gpuir__need_attr(ctx, GPUIR_OP_GPU_LAUNCH_FUNC, as, GPUIR__KEY_KERNEL,
                                      GPUIR__ATTR_SYMBOL, true, &sym);
    if (r || (r = gpuir__check_launch_dims(ctx, as)) != GPUIR_OK) return r;
    gpuir_module *m = as->m;
    const char *name = gpuir__string(m, sym->off);
    uint32_t fid = gpuir__launch_kernel(m, sym->off);
    if (!fid)
        return gpuir__fail(ctx, GPUIR_ERR_NOT_FOUND, "gpu.launch_func: no kernel @%s::@%s",
                           GPUIR__KERNEL_MODULE, strstr(name, "::") ? strstr(name, "::") + 2 : name);
    const gpuir__func *k = &m->funcs[fid - 1];
    if (stbds_arrlenu(k->params) != n)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "gpu.launch_func: kernel @%s takes %zu buffers, "
                           "%u given", gpuir__string(m, k->name), stbds_arrlenu(k->params), n);
    for (uint32_t i = 0; i < n; i++) {
        const gpuir_type *p = &gpuir__value_at(m, k->params[i])->type;
        if (in[i].space != GPUIR_SPACE_HOST && in[i].space != GPUIR_SPACE_DEVICE) {
            gpuir__tbuf bi;
            return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "gpu.launch_func: operand #%u is %s, in memory "
                               "space %d%s: kernel @%s's parameters are device buffers (space 1; a host "
                               "buffer, space 0, is placed)", i, gpuir__tstr(&bi, &in[i]), (int)in[i].space,
                               in[i].space == GPUIR_SPACE_WORKGROUP ? " (workgroup memory, a kernel's own)" : "",
                               gpuir__string(m, k->name));
        }
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
    case GPUIR__CLASS_ALLOC: r = gpuir__infer_alloc(ctx, kind, in, n, as, given); break;
    case GPUIR__CLASS_DEALLOC:
        if ((kind == GPUIR_OP_GPU_DEALLOC) != (in[0].space == GPUIR_SPACE_DEVICE))
            r = gpuir__space_error(ctx, kind, "operand", &in[0], kind == GPUIR_OP_GPU_DEALLOC ?
                                   "is not in device memory" : "is in device memory (gpu.dealloc)");
        break;
    case GPUIR__CLASS_COPY: r = gpuir__infer_copy(ctx, kind, in); break;
    case GPUIR__CLASS_GLOBAL: r = gpuir__infer_memref_global(ctx, as, given); break;
    case GPUIR__CLASS_LAUNCH: r = gpuir__infer_launch(ctx, in, n, as); break;
    case GPUIR__CLASS_VIEW: r = gpuir__infer_view(ctx, kind, &in[0], given); break;
    default: break;
    }
    if (!r && given) *out = *given;
    return r;
}

/* The buffer form of a computing op: memref inputs and a destination,
   checked as the tensor op from the inputs to the destination's type. */
static gpuir_result gpuir__infer_dps(gpuir_ctx *ctx, gpuir_op_kind kind, gpuir_type *in,
                                     uint32_t n, const gpuir__attrs *as, bool operands_checked) {
    gpuir_type out;
    if (n == 0)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: without a result it needs an output "
                           "buffer as its last operand", gpuir_op_name(kind));
    for (uint32_t i = 0; i < n; i++) {
        gpuir__tbuf b;
        if (in[i].kind != GPUIR_TYPE_MEMREF)
            return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s: operand #%u is %s; the buffer form "
                               "takes memrefs", gpuir_op_name(kind), i, gpuir__tstr(&b, &in[i]));
    }
    for (uint32_t i = 0; i < n; i++) {      /* as the tensor op: in place (a scratch copy) */
        in[i].kind = GPUIR_TYPE_TENSOR;
        in[i].space = 0;
    }
    return gpuir__infer_ex(ctx, kind, in, n - 1, as, &in[n - 1], operands_checked, &out);
}

/* Checks an op in any of its forms. `has_result` says whether it defines a
   value; out receives its type (kind INVALID when it has none). `in` is a
   scratch copy of the operand types (the buffer form rewrites it);
   `operands_checked`: each passed gpuir__type_check already (the verifier
   checks every value's type where it is defined, before its uses). */
static gpuir_result gpuir__infer_op(gpuir_ctx *ctx, gpuir_op_kind kind, gpuir_type *in,
                                    uint32_t n, const gpuir__attrs *as, const gpuir_type *given,
                                    bool has_result, bool operands_checked, gpuir_type *out) {
    gpuir__op_class cls = gpuir__info(kind)->cls;
    if ((gpuir__class_computes(cls) && !has_result) || has_result != gpuir__class_has_result(cls))
        memset(out, 0, sizeof *out);    /* the others clear it themselves */
    if (gpuir__class_computes(cls) && !has_result)
        return gpuir__infer_dps(ctx, kind, in, n, as, operands_checked);
    if (has_result != gpuir__class_has_result(cls))
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s %s a result", gpuir_op_name(kind),
                           has_result ? "does not have" : "must have");
    if (gpuir__class_computes(cls) || kind == GPUIR_OP_GET_GLOBAL || kind == GPUIR_OP_RETURN)
        return gpuir__infer(ctx, kind, in, n, as, given, out);
    return gpuir__infer_buffer_op(ctx, kind, in, n, as, given, out);
}

/* ---- the builder's one entry ---- */

static gpuir_result gpuir__check_open(gpuir_module *m, const char *what) {
    if (!m) return GPUIR_ERR_INVALID_ARGUMENT;      /* a failed make: its context has the error */
    if (m->ctx->result != GPUIR_OK) return m->ctx->result;
    if (!m->building)
        return gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: no open function (call "
                           "gpuir_func_begin first)", what);
    return GPUIR_OK;
}

/* An open function, and handles this module made (or id 0, which the op's
   checks refuse): a handle of another module is refused, not bound to
   this module's value of the same id. */
static gpuir_result gpuir__check_handles(gpuir_module *m, const char *what, const gpuir_value *v,
                                         size_t n, uint32_t *ids) {
    gpuir_result r = gpuir__check_open(m, what);
    for (size_t i = 0; !r && i < n; i++) {
        ids[i] = v[i].id & GPUIR__HANDLE_MASK;
        if (v[i].id && v[i].id >> GPUIR__HANDLE_BITS != m->tag)
            r = gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: operand #%zu is not a value of "
                            "this module (handle %#x%s)", what, i, v[i].id,
                            v[i].id >> GPUIR__HANDLE_BITS ? ": another module's" : "");
    }
    return r;
}

/* The public handle of a plain handle of m; 0 (with an error) if its id
   does not fit below the tag. */
static gpuir_value gpuir__value_pub(gpuir_module *m, gpuir_value v) {
    if (v.id > GPUIR__HANDLE_MASK) {
        gpuir__fail(m->ctx, GPUIR_ERR_LIMIT, "a module holds at most %u values that builder calls "
                    "can return", GPUIR__HANDLE_MASK);
        v.id = 0;
    }
    if (v.id) v.id |= m->tag << GPUIR__HANDLE_BITS;
    return v;
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
        gpuir__infer_op(m->ctx, kind, in, n, &as, given, has_result, false, &out))
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
    if (!m) return 0;
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

/* gpuir_param with a plain handle (the parser's and the passes'). */
static gpuir_value gpuir__param(gpuir_module *m, const char *name, gpuir_type type) {
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

GPUIRDEF gpuir_value gpuir_param(gpuir_module *m, const char *name, gpuir_type type) {
    gpuir_value v = gpuir__param(m, name, type);
    return v.id ? gpuir__value_pub(m, v) : v;
}

GPUIRDEF gpuir_result gpuir_func_return(gpuir_module *m, size_t n, const gpuir_value *results) {
    gpuir_result r = gpuir__check_open(m, "return");
    if (r) return r;
    if (!results && n)
        return gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "return: results is NULL");
    if (n > GPUIR_MAX_OPERANDS)
        return gpuir__fail(m->ctx, GPUIR_ERR_LIMIT, "return: %zu results, more than %d", n,
                           GPUIR_MAX_OPERANDS);
    uint32_t ids[GPUIR_MAX_OPERANDS];
    if ((r = gpuir__check_handles(m, "return", results, n, ids))) return r;
    if (!gpuir__build_op(m, GPUIR_OP_RETURN, ids, (uint32_t)n, 0, 0, NULL)) return m->ctx->result;
    gpuir__func_at(m, m->building)->closed = true;
    m->building = 0;
    return GPUIR_OK;
}

/* ---- op wrappers ---- */

GPUIRDEF gpuir_value gpuir_unary(gpuir_module *m, gpuir_op_kind kind, gpuir_value x) {
    uint32_t id;
    if (gpuir__check_handles(m, gpuir_op_name(kind), &x, 1, &id)) return gpuir__value_handle(0);
    if (gpuir__info(kind)->cls != GPUIR__CLASS_UNARY || kind == GPUIR_OP_INVALID) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "unary: op %d is not unary", (int)kind);
        return gpuir__value_handle(0);
    }
    return gpuir__value_pub(m, gpuir__build_value(m, kind, &id, 1, 0, 0, NULL));
}

GPUIRDEF gpuir_value gpuir_binary(gpuir_module *m, gpuir_op_kind kind, gpuir_value a,
                                  gpuir_value b) {
    gpuir_value ab[2] = {a, b};
    uint32_t ids[2];
    if (gpuir__check_handles(m, gpuir_op_name(kind), ab, 2, ids)) return gpuir__value_handle(0);
    if (gpuir__info(kind)->cls != GPUIR__CLASS_BINARY || kind == GPUIR_OP_INVALID) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "binary: op %d is not binary", (int)kind);
        return gpuir__value_handle(0);
    }
    return gpuir__value_pub(m, gpuir__build_value(m, kind, ids, 2, 0, 0, NULL));
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
    gpuir_value ab[2] = {a, b};
    uint32_t ids[2];
    if (gpuir__check_handles(m, "matmul", ab, 2, ids)) return gpuir__value_handle(0);
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs), n = 0;
    if (flags & GPUIR_TRANSPOSE_A) { gpuir__attr_push_int(m, "transpose_a", GPUIR__ATTR_BOOL, 1); n++; }
    if (flags & GPUIR_TRANSPOSE_B) { gpuir__attr_push_int(m, "transpose_b", GPUIR__ATTR_BOOL, 1); n++; }
    if (flags & GPUIR_TF32) { gpuir__attr_push_int(m, "tf32", GPUIR__ATTR_BOOL, 1); n++; }
    if (flags & GPUIR_WGMMA) { gpuir__attr_push_int(m, "wgmma", GPUIR__ATTR_BOOL, 1); n++; }
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_MATMUL, ids, 2, first, n, NULL));
}

GPUIRDEF gpuir_value gpuir_matmul_k_slices(gpuir_module *m, gpuir_value a, gpuir_value b, unsigned flags,
                                           int64_t k_slices) {
    gpuir_value ab[2] = {a, b};
    uint32_t ids[2];
    if (gpuir__check_handles(m, "matmul", ab, 2, ids)) return gpuir__value_handle(0);
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs), n = 0;
    if (flags & GPUIR_TRANSPOSE_A) { gpuir__attr_push_int(m, "transpose_a", GPUIR__ATTR_BOOL, 1); n++; }
    if (flags & GPUIR_TRANSPOSE_B) { gpuir__attr_push_int(m, "transpose_b", GPUIR__ATTR_BOOL, 1); n++; }
    if (flags & GPUIR_TF32) { gpuir__attr_push_int(m, "tf32", GPUIR__ATTR_BOOL, 1); n++; }
    gpuir__attr_push_int(m, "k_slices", GPUIR__ATTR_INT, k_slices);
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_MATMUL, ids, 2, first, n + 1, NULL));
}

GPUIRDEF gpuir_value gpuir_reduce(gpuir_module *m, gpuir_op_kind kind, gpuir_value x,
                                  size_t n_axes, const int64_t *axes, bool keepdims) {
    uint32_t id;
    if (gpuir__check_handles(m, "reduce", &x, 1, &id)) return gpuir__value_handle(0);
    if (!axes && n_axes) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "reduce: axes is NULL");
        return gpuir__value_handle(0);
    }
    if (gpuir__info(kind)->cls != GPUIR__CLASS_REDUCE || n_axes > GPUIR_MAX_RANK) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "reduce: op %d is not a reduction, or "
                    "%zu axes are too many", (int)kind, n_axes);
        return gpuir__value_handle(0);
    }
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_ints(m, "axes", n_axes, axes);
    if (keepdims) gpuir__attr_push_int(m, "keepdims", GPUIR__ATTR_BOOL, 1);
    return gpuir__value_pub(m, gpuir__build_value(m, kind, &id, 1, first, keepdims ? 2 : 1, NULL));
}

GPUIRDEF gpuir_value gpuir_transpose(gpuir_module *m, gpuir_value x, size_t n,
                                     const int64_t *perm) {
    uint32_t id;
    if (gpuir__check_handles(m, "transpose", &x, 1, &id)) return gpuir__value_handle(0);
    if (!perm && n) {
        gpuir__fail(m->ctx, GPUIR_ERR_INVALID_ARGUMENT, "transpose: perm is NULL");
        return gpuir__value_handle(0);
    }
    if (n > GPUIR_MAX_RANK) {
        gpuir__fail(m->ctx, GPUIR_ERR_ATTRIBUTE, "transpose: perm has %zu entries, more than "
                    "rank %d", n, GPUIR_MAX_RANK);
        return gpuir__value_handle(0);
    }
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_ints(m, "perm", n, perm);
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_TRANSPOSE, &id, 1, first, 1, NULL));
}

/* The operand's dtype with a new shape; invalid kind if x is not a value. */
static gpuir_type gpuir__reshaped(gpuir_module *m, uint32_t x, int rank, const int64_t *dims) {
    const gpuir__value *v = gpuir__value_at(m, x);
    return gpuir_tensor_type(v ? v->type.dtype : GPUIR_DTYPE_INVALID, rank, dims);
}

GPUIRDEF gpuir_value gpuir_reshape(gpuir_module *m, gpuir_value x, int rank, const int64_t *dims) {
    uint32_t id;
    if (gpuir__check_handles(m, "reshape", &x, 1, &id)) return gpuir__value_handle(0);
    gpuir_type to = gpuir__reshaped(m, id, rank, dims);
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_RESHAPE, &id, 1, 0, 0, &to));
}

GPUIRDEF gpuir_value gpuir_broadcast(gpuir_module *m, gpuir_value x, int rank,
                                     const int64_t *dims) {
    uint32_t id;
    if (gpuir__check_handles(m, "broadcast", &x, 1, &id)) return gpuir__value_handle(0);
    gpuir_type to = gpuir__reshaped(m, id, rank, dims);
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_BROADCAST, &id, 1, 0, 0, &to));
}

GPUIRDEF gpuir_value gpuir_cast(gpuir_module *m, gpuir_value x, gpuir_dtype dtype) {
    uint32_t id;
    if (gpuir__check_handles(m, "cast", &x, 1, &id)) return gpuir__value_handle(0);
    const gpuir__value *v = gpuir__value_at(m, id);
    gpuir_type to = v ? v->type : gpuir__invalid_type();
    to.dtype = dtype;
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_CAST, &id, 1, 0, 0, &to));
}

GPUIRDEF gpuir_value gpuir_softmax(gpuir_module *m, gpuir_value x, int64_t axis) {
    uint32_t id;
    if (gpuir__check_handles(m, "softmax", &x, 1, &id)) return gpuir__value_handle(0);
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_int(m, "axis", GPUIR__ATTR_INT, axis);
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_SOFTMAX, &id, 1, first, 1, NULL));
}

GPUIRDEF gpuir_value gpuir_constant_splat(gpuir_module *m, gpuir_type type, double value) {
    if (gpuir__check_open(m, "constant")) return gpuir__value_handle(0);
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_float(m, "value", value);
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_CONSTANT, NULL, 0, first, 1, &type));
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
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_CONSTANT, NULL, 0, first, 1, &type));
}

/* Copies `bytes` of data into global g (1-based); device copies of the old
   data become stale. */
static gpuir_result gpuir__global_set_data(gpuir_module *m, uint32_t g, const void *data, size_t bytes) {
    void *copy = GPUIR_MALLOC(bytes ? bytes : 1);
    if (!copy) return gpuir__oom(m->ctx, "global data");
    if (bytes) memcpy(copy, data, bytes);
    GPUIR_FREE(m->globals[g - 1].data);
    m->globals[g - 1].data = copy;
    m->globals[g - 1].generation++;
    return GPUIR_OK;
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
    return gpuir__value_pub(m, gpuir__build_value(m, GPUIR_OP_GET_GLOBAL, NULL, 0, first, 1, &type));
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

static void gpuir__print_dense_data(gpuir__str *out, gpuir_dtype dt, const unsigned char *base, size_t n) {
    gpuir__str_appendf(out, "dense<[");
    for (size_t k = 0; k < n; k++) {
        if (k) gpuir__str_appendf(out, ", ");
        double v = gpuir__load_elem(base, dt, k);
        if (gpuir_dtype_is_float(dt)) gpuir__print_float(out, v);
        else if (dt == GPUIR_I64) {
            int64_t x;
            memcpy(&x, base + k * 8, 8);
            gpuir__str_appendf(out, "%lld", (long long)x);
        } else gpuir__str_appendf(out, "%lld", (long long)v);
    }
    gpuir__str_appendf(out, "]>");
}

static void gpuir__print_dense(gpuir__printer *p, const gpuir__attr *a) {
    gpuir__print_dense_data(&p->out, (gpuir_dtype)a->i, gpuir__bytes_at(p->m, a->off), a->n);
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
    if (!m) return NULL;                       /* a failed make or parse */
    gpuir__printer p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.numbers = (uint32_t *)gpuir__calloc(stbds_arrlenu(m->values) + 1, sizeof *p.numbers);
    if (!p.numbers) { gpuir__oom(m->ctx, "printing a module"); return NULL; }
    for (size_t i = 0; i < stbds_arrlenu(m->globals); i++) {
        const gpuir__global *g = &m->globals[i];
        gpuir__str_appendf(&p.out, "global @%s : ", gpuir__string(m, g->name));
        gpuir__print_type(&p.out, &g->type);
        if (g->initialized && g->data) {
            gpuir__str_appendf(&p.out, " = ");
            gpuir__print_dense_data(&p.out, g->type.dtype, (const unsigned char *)g->data,
                                    (size_t)gpuir__type_count(&g->type));
        }
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
    GPUIR_FREE(p.numbers);
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
    unsigned char *tmp = (unsigned char *)GPUIR_MALLOC(n * size + 1);
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
    GPUIR_FREE(tmp);
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
    gpuir_value v = gpuir__param(P->m, name, t);
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

static gpuir_result gpuir__parse_finish_dense(gpuir__parser *P, gpuir_dtype dt);

/* The initializer of global g: "dense<[...]>" with one number per element. */
static gpuir_result gpuir__parse_global_init(gpuir__parser *P, uint32_t g) {
    gpuir_module *m = P->m;
    gpuir__parse_skip_ws(P);
    gpuir__parse_mark(P);
    uint32_t line = P->ctx->loc_line, col = P->ctx->loc_col;
    if (!gpuir__parse_keyword(P, "dense"))
        return gpuir__fail(P->ctx, GPUIR_ERR_PARSE, "expected dense<[...]> after '=' in a global");
    uint32_t a = gpuir__attr_push(m, "value", GPUIR__ATTR_DENSE);   /* scratch: the numbers' bytes */
    gpuir_type t = m->globals[g - 1].type;
    gpuir_result r = gpuir__parse_dense(P, a);
    if (!r) r = gpuir__parse_finish_dense(P, t.dtype);
    if (r) return r;
    int64_t want = gpuir__type_count(&t);
    if ((int64_t)m->attrs[a].n != want) {
        gpuir__tbuf b;
        P->ctx->loc_line = line;
        P->ctx->loc_col = col;
        return gpuir__fail(P->ctx, GPUIR_ERR_SHAPE, "global @%s: %u values for %s (%lld elements)",
                           gpuir__string(m, m->globals[g - 1].name), m->attrs[a].n, gpuir__tstr(&b, &t),
                           (long long)want);
    }
    r = gpuir__global_set_data(m, g, gpuir__bytes_at(m, m->attrs[a].off),
                               (size_t)want * gpuir_dtype_size(t.dtype));
    stbds_arrsetlen(m->bytes, m->attrs[a].off);      /* the scratch bytes go back */
    m->globals[g - 1].initialized = r == GPUIR_OK;
    return r;
}

/* global := "global" "@" ident ":" type ("=" dense)? */
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
    r = gpuir__declare_global(P->m, name, &t);
    if (!r && gpuir__parse_accept(P, "=")) r = gpuir__parse_global_init(P, gpuir__find_global(P->m, name));
    return r;
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
    if (!ctx || ctx->result != GPUIR_OK) return NULL;
    if (!text && len) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "parse: text is NULL");
        return NULL;
    }
    gpuir_module *m = gpuir_module_make(ctx);
    if (!m) return NULL;
    const char *name = filename ? filename : "<input>";
    m->source_name_owned = (char *)GPUIR_MALLOC(strlen(name) + 1);
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
    ctx->loc_src = P.p;
    ctx->loc_src_len = len;
    gpuir_result r = gpuir__parse_module(&P);
    ctx->loc_file = NULL;
    ctx->loc_line = ctx->loc_col = 0;
    stbds_shfree(P.names);
    stbds_arrfree(P.nums);
    stbds_arrfree(P.inums);
    stbds_arrfree(P.is_float);
    stbds_arrfree(P.num_locs);
    if (r == GPUIR_OK) r = gpuir_module_verify(m);
    ctx->loc_src = NULL;
    ctx->loc_src_len = 0;
    if (r != GPUIR_OK) { gpuir_module_destroy(m); return NULL; }
    return m;
}

/* Reads a whole file into malloc'd bytes, NUL-terminated; NULL with errno
   set when it cannot (no context: the emulator reads compiler logs with it). */
static char *gpuir__slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n + 65536 + 1 > cap) {
            char *bigger = (char *)GPUIR_REALLOC(buf, cap = cap * 2 + 65536 + 1);
            if (!bigger) { GPUIR_FREE(buf); fclose(f); errno = ENOMEM; return NULL; }
            buf = bigger;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed) { GPUIR_FREE(buf); errno = errno ? errno : EIO; return NULL; }
    buf[n] = '\0';
    if (size) *size = n;
    return buf;
}

/* Writes exactly n bytes to fd; false with errno on an error. */
static bool gpuir__write_all(int fd, const void *buf, size_t n) {
    const unsigned char *p = (const unsigned char *)buf;
    while (n > 0) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return false;
        if (r == 0) { errno = EIO; return false; }
        p += r, n -= (size_t)r;
    }
    return true;
}

/* Writes a whole file atomically: a private temporary file beside it,
   flushed, then renamed over `path`. */
static gpuir_result gpuir__write_file_atomic(gpuir_ctx *ctx, const char *path, const void *bytes, size_t size) {
    if (!path) return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "write: path is NULL");
    size_t len = strlen(path);
    char *tmp = (char *)GPUIR_MALLOC(len + 16);
    if (!tmp) return gpuir__oom(ctx, "a file name");
    snprintf(tmp, len + 16, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    bool ok = fd >= 0 && gpuir__write_all(fd, bytes, size);
    int err = ok ? 0 : errno;
    if (fd >= 0 && ok && fsync(fd) != 0) { ok = false; err = errno; }
    if (fd >= 0 && close(fd) != 0 && ok) { ok = false; err = errno; }
    if (ok && rename(tmp, path) != 0) { ok = false; err = errno; }
    if (!ok && fd >= 0) unlink(tmp);
    gpuir_result r = ok ? GPUIR_OK : gpuir__fail(ctx, GPUIR_ERR_IO, "cannot write '%s': %s", path,
                                                 strerror(err ? err : EIO));
    GPUIR_FREE(tmp);
    return r;
}

/* Reads a whole file; the bytes are malloc'd. */
static gpuir_result gpuir__read_file(gpuir_ctx *ctx, const char *path, char **data, size_t *size) {
    *data = NULL;
    if (!path) return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "read: path is NULL");
    errno = 0;
    *data = gpuir__slurp(path, size);
    if (*data) return GPUIR_OK;
    if (errno == ENOMEM) return gpuir__oom(ctx, path);
    return gpuir__fail(ctx, GPUIR_ERR_IO, "cannot read '%s': %s", path, strerror(errno ? errno : EIO));
}

GPUIRDEF gpuir_module *gpuir_module_parse_file(gpuir_ctx *ctx, const char *path) {
    char *text;
    size_t size;
    if (!ctx || ctx->result != GPUIR_OK) return NULL;
    if (!path) { gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "parse_file: path is NULL"); return NULL; }
    if (gpuir__read_file(ctx, path, &text, &size)) return NULL;
    gpuir_module *m = gpuir_module_parse(ctx, text, size, path);
    GPUIR_FREE(text);
    return m;
}

/* ====================================================================== */
// >>verify
// Structural and type checks of a whole module: run after parsing and, later,
// after every pass. Reads: ir, build (gpuir__infer). Writes: nothing but the
// canonical form of attributes (sorted axes, normalized axis).

/* Points errors at the op: its source location, or its function and index
   (formatted only if an error comes: this runs for every op). */
static void gpuir__verify_locate(gpuir_module *m, const gpuir__func *f, size_t index,
                                 const gpuir__op *op) {
    gpuir_ctx *ctx = m->ctx;
    ctx->loc_file = op && op->line ? m->source_name : NULL;
    ctx->loc_line = op ? op->line : 0;
    ctx->loc_col = op ? op->col : 0;
    ctx->loc_module = m;
    ctx->loc_func_name = f->name;
    ctx->loc_index = index;
    ctx->loc_op_kind = op ? (int)op->kind : 0;
}

static const char *gpuir__loc_func_name(const gpuir_ctx *ctx) {
    return gpuir__string(ctx->loc_module, ctx->loc_func_name);
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

/* Kernels compute on buffers: no host ops, no launches, nothing returned,
   static allocations; their parameters are device buffers. */
static gpuir_result gpuir__verify_kernel_op(gpuir_module *m, const gpuir__op *op) {
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    bool host_only = cls == GPUIR__CLASS_LAUNCH || cls == GPUIR__CLASS_COPY || cls == GPUIR__CLASS_WAIT ||
                     cls == GPUIR__CLASS_VIEW ||
                     op->kind == GPUIR_OP_GPU_ALLOC || op->kind == GPUIR_OP_GPU_DEALLOC ||
                     op->kind == GPUIR_OP_MEMREF_GET_GLOBAL || op->kind == GPUIR_OP_GET_GLOBAL;
    if (host_only)
        return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "%s is a host op; a kernel cannot use it",
                           gpuir_op_name(op->kind));
    if (op->kind == GPUIR_OP_RETURN && op->n_operands)
        return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "a kernel returns nothing");
    if (op->kind == GPUIR_OP_MEMREF_ALLOC && !gpuir__type_is_static(&gpuir__value_at(m, op->result)->type))
        return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "memref.alloc in a kernel: its size is fixed when the "
                           "kernel is compiled (no dynamic dims)");
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
                        res != NULL, true, &out);
    if (!r && gpuir__info(op->kind)->cls == GPUIR__CLASS_DEALLOC &&
        gpuir__view_base(m, gpuir__op_operand(m, op, 0)) != gpuir__op_operand(m, op, 0))
        r = gpuir__fail(ctx, GPUIR_ERR_VERIFY, "%s of a view (memref.reshape): free the buffer it views",
                        gpuir_op_name(op->kind));
    if (!r && res) defined[op->result - 1] = 1;
    return r;
}

/* Streams and events (the async pass): ids in range; wait and event only
   with a stream; every event waited for (by a stream or by gpu.wait) is
   recorded earlier in the function, and recorded once; a gpu.alloc and its
   gpu.dealloc are both on streams or both not. */
static gpuir_result gpuir__verify_streams(gpuir_module *m, uint32_t fid) {
    const gpuir__func *f = gpuir__func_at(m, fid);
    uint8_t *recorded = NULL;          /* stb_ds: event -> recorded yet */
    gpuir_result r = GPUIR_OK;
    for (size_t i = 0; !r && i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (!op->n_attrs && op->kind != GPUIR_OP_GPU_DEALLOC) continue;  /* nothing to check */
        gpuir__verify_locate(m, f, i, op);
        const gpuir__attr *stream = NULL, *event = NULL, *wait = NULL;   /* one walk: the first of each */
        gpuir__attr_key wait_key = op->kind == GPUIR_OP_GPU_WAIT ? GPUIR__KEY_EVENTS : GPUIR__KEY_WAIT;
        for (uint32_t a = op->n_attrs; a-- > 0;) {
            const gpuir__attr *at = &m->attrs[op->attrs + a];
            if (at->key == GPUIR__KEY_STREAM) stream = at;
            else if (at->key == GPUIR__KEY_EVENT) event = at;
            else if (at->key == wait_key) wait = at;
        }
        if (stream && (stream->i < 0 || stream->i >= GPUIR_MAX_STREAMS))
            r = gpuir__fail(m->ctx, GPUIR_ERR_ATTRIBUTE, "%s: stream %lld is out of range (0..%d)",
                            gpuir_op_name(op->kind), (long long)stream->i, GPUIR_MAX_STREAMS - 1);
        else if (!stream && op->kind != GPUIR_OP_GPU_WAIT && (wait || event))
            r = gpuir__fail(m->ctx, GPUIR_ERR_ATTRIBUTE, "%s: '%s' needs a 'stream'", gpuir_op_name(op->kind),
                            wait ? "wait" : "event");
        for (uint32_t k = 0; !r && wait && k < wait->n; k++) {
            int64_t e = gpuir__ints_at(m, wait->off)[k];
            if (e < 0 || (size_t)e >= stbds_arrlenu(recorded) || !recorded[e])
                r = gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "%s: waits for event %lld, which no earlier op records",
                                gpuir_op_name(op->kind), (long long)e);
        }
        if (!r && event) {
            if (event->i < 0 || event->i >= GPUIR_MAX_EVENTS)
                r = gpuir__fail(m->ctx, GPUIR_ERR_ATTRIBUTE, "%s: event %lld is out of range (0..%d)",
                                gpuir_op_name(op->kind), (long long)event->i, GPUIR_MAX_EVENTS - 1);
            else if ((size_t)event->i < stbds_arrlenu(recorded) && recorded[event->i])
                r = gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "%s: event %lld is recorded twice",
                                gpuir_op_name(op->kind), (long long)event->i);
            while (!r && stbds_arrlenu(recorded) <= (size_t)event->i) stbds_arrput(recorded, 0);
            if (!r) recorded[event->i] = 1;
        }
        if (!r && op->kind == GPUIR_OP_GPU_DEALLOC) {
            const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, gpuir__op_operand(m, op, 0))->def_op);
            if (def && def->kind == GPUIR_OP_GPU_ALLOC && !gpuir__attr_get(m, def, GPUIR__KEY_STREAM) != !stream)
                r = gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "%s is on a stream but its %s is not",
                                stream ? "gpu.dealloc" : "gpu.alloc", stream ? "gpu.alloc" : "gpu.dealloc");
        }
    }
    stbds_arrfree(recorded);
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
    return f->kernel ? GPUIR_OK : gpuir__verify_streams(m, fid);
}

/* The sizes of the pools that hold a module's IR. */
static void gpuir__module_sizes(const gpuir_module *m, size_t n[GPUIR__POOLS]) {
    n[0] = stbds_arrlenu(m->funcs);
    n[1] = stbds_arrlenu(m->ops);
    n[2] = stbds_arrlenu(m->values);
    n[3] = stbds_arrlenu(m->globals);
    n[4] = stbds_arrlenu(m->attrs);
    n[5] = stbds_arrlenu(m->uses);
    n[6] = stbds_arrlenu(m->ints);
    n[7] = stbds_arrlenu(m->strings);
    n[8] = stbds_arrlenu(m->bytes);
}

/* Remembers that the whole module, as it is now, passed the verifier. */
static void gpuir__module_mark_verified(gpuir_module *m) {
    m->verified = true;
    gpuir__module_sizes(m, m->verified_sizes);
}

/* Whether the module is the one that last passed the verifier. The API
   only adds to a module (functions, params, ops, values, attributes,
   globals: every call grows a pool) and never changes what is there;
   passes change IR in place, and the pass runner drops the mark before
   running one. So same sizes and no pass since: the same module. */
static bool gpuir__module_still_verified(const gpuir_module *m) {
    size_t n[GPUIR__POOLS];
    gpuir__module_sizes(m, n);
    return m->verified && !m->building && memcmp(n, m->verified_sizes, sizeof n) == 0;
}

/* Verifies every function, or (kernels false) the host functions only: the
   pass runner's check after a pass that leaves the kernels as they were
   (they were verified before the pipeline and after each pass that could
   change them). */
static gpuir_result gpuir__module_verify_funcs(gpuir_module *m, bool kernels) {
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    if (m->building)
        return gpuir__fail(ctx, GPUIR_ERR_VERIFY, "verify: function @%s is still open",
                           gpuir__string(m, gpuir__func_at(m, m->building)->name));
    uint32_t *defined = (uint32_t *)gpuir__scratch_calloc(m, stbds_arrlenu(m->values) + 1, sizeof *defined);
    if (!defined) return gpuir__oom(ctx, "verify");
    gpuir_result r = GPUIR_OK;
    for (size_t i = 0; i < stbds_arrlenu(m->funcs) && !r; i++)
        if (kernels || !m->funcs[i].kernel) r = gpuir__verify_func(m, (uint32_t)i + 1, defined);
    gpuir__scratch_free(m, defined);
    gpuir__loc_clear(ctx);
    return r;
}

/* Whether host function fid can run as it is (placed): every launch takes
   device buffers and every returned buffer is in host memory. Else an
   error located at the op that is not: the launch a `place` pass must
   still place (naming its kernel), or the return of a device buffer. */
static gpuir_result gpuir__verify_placed(gpuir_module *m, uint32_t fid) {
    const gpuir__func *f = gpuir__func_at(m, fid);
    gpuir_result r = GPUIR_OK;
    for (size_t i = 0; !r && i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        bool launch = op->kind == GPUIR_OP_GPU_LAUNCH_FUNC;
        if (!launch && op->kind != GPUIR_OP_RETURN) continue;
        for (uint32_t k = 0; !r && k < op->n_operands; k++) {
            const gpuir_type *t = &gpuir__value_at(m, gpuir__op_operand(m, op, k))->type;
            if (t->kind != GPUIR_TYPE_MEMREF || t->space == (launch ? GPUIR_SPACE_DEVICE : GPUIR_SPACE_HOST))
                continue;
            gpuir__tbuf b;
            gpuir__verify_locate(m, f, i, op);
            const gpuir__attr *sym = launch ? gpuir__attr_get(m, op, GPUIR__KEY_KERNEL) : NULL;
            const char *name = sym ? gpuir__string(m, sym->off) : "?";
            if (launch)
                r = gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "gpu.launch_func @%s::@%s is not placed: operand #%u is "
                                "%s, not a device buffer (a function with gpu.alloc, gpu.dealloc or gpu.memcpy "
                                "places its buffers itself; place every launch or none)", GPUIR__KERNEL_MODULE,
                                strstr(name, "::") ? strstr(name, "::") + 2 : name, k, gpuir__tstr(&b, t));
            else
                r = gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "return: result #%u is %s, in memory space %d: a "
                                "host function returns host buffers (copy it back with gpu.memcpy and "
                                "free it)", k, gpuir__tstr(&b, t), (int)t->space);
        }
    }
    gpuir__loc_clear(m->ctx);
    return r;
}

GPUIRDEF gpuir_result gpuir_module_verify(gpuir_module *m) {
    if (!m) return GPUIR_ERR_INVALID_ARGUMENT;  /* a failed make: its context has the error */
    gpuir_result r = gpuir__module_verify_funcs(m, true);
    if (!r) gpuir__module_mark_verified(m);
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
    if (!a || !a->data) return 0.0;
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
    if (!a || !a->data) return;
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
    if (!a || a->rank < 0 || a->rank > GPUIR_MAX_RANK) return 0;
    size_t n = 1;
    for (int i = 0; i < a->rank; i++) n *= a->dims[i] > 0 ? (size_t)a->dims[i] : 0;
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
    if (a) memset(a, 0, sizeof *a);
    if (!ctx) return gpuir_ctx_result(ctx);
    if (ctx->result != GPUIR_OK) return ctx->result;
    if (!a) return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "array_alloc: a is NULL");
    if (rank < 0 || rank > GPUIR_MAX_RANK)     /* before reading dims */
        return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "array: rank %d is outside 0..%d", rank, GPUIR_MAX_RANK);
    if (!dims && rank > 0)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "array: dims is NULL for rank %d", rank);
    a->dtype = dtype;
    a->rank = rank;
    for (int i = 0; i < rank; i++) a->dims[i] = dims[i];
    size_t bytes;
    gpuir_result r = gpuir__array_check(ctx, a, "array", &bytes);
    if (r) { memset(a, 0, sizeof *a); return r; }
    a->data = gpuir__calloc(bytes ? bytes : 1, 1);
    if (!a->data) { memset(a, 0, sizeof *a); return gpuir__oom(ctx, "array data"); }
    return GPUIR_OK;
}

GPUIRDEF void gpuir_array_release(gpuir_array *a) {
    if (!a) return;
    GPUIR_FREE(a->data);
    memset(a, 0, sizeof *a);
}

/* The array pointers of a run call: NULL only with a count of 0. */
static gpuir_result gpuir__run_args_check(gpuir_ctx *ctx, size_t n_inputs, const gpuir_array *inputs,
                                          size_t n_outputs, const gpuir_array *outputs) {
    if (!inputs && n_inputs)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "run: inputs is NULL, n_inputs %zu", n_inputs);
    if (!outputs && n_outputs)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "run: outputs is NULL, n_outputs %zu", n_outputs);
    return GPUIR_OK;
}

static uint64_t gpuir__splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

GPUIRDEF void gpuir_array_fill_random(gpuir_array *a, uint64_t seed) {
    if (!a || !a->data) return;
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
    double r_, a_;
    if (!rtol) rtol = &r_;
    if (!atol) atol = &a_;
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
    if (!ctx || ctx->result != GPUIR_OK) return gpuir_ctx_result(ctx);
    if (!got || !want)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "compare: %s is NULL", got ? "want" : "got");
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
    if (n && (!got->data || !want->data))
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "compare: %s has no data",
                           got->data ? "expected" : "got");
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

/* out[..., m, n] = sum_k a[..., m, k] * b[..., k, n] over k in [k0, k1),
   batch dims broadcast. */
static void gpuir__ref_matmul(const gpuir_array *a, const gpuir_array *b, gpuir_array *out,
                              bool ta, bool tb, bool tf32, int64_t k0, int64_t k1) {
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
                for (int64_t k = k0; k < k1; k++) {
                    size_t ia = a0 + (size_t)(i * sam + k * sak), ib = b0 + (size_t)(k * sbk + j * sbn);
                    if (tf32)
                        acc += (double)gpuir__tf32_round((float)gpuir_array_get(a, ia)) *
                               gpuir__tf32_round((float)gpuir_array_get(b, ib));
                    else if (is_float) acc += gpuir_array_get(a, ia) * gpuir_array_get(b, ib);
                    else iacc += (uint64_t)gpuir__load_int(a, ia) * (uint64_t)gpuir__load_int(b, ib);
                }
                if (is_float) gpuir_array_set(out, o0 + (size_t)(i * N + j), acc);
                else gpuir__store_int(out, o0 + (size_t)(i * N + j), (int64_t)iacc);
            }
        gpuir__odometer_next(ob.rank, ob.dims, idx, 2, strides, off);
    }
}

/* A matmul op: whole, or with k_slices = S each slice's partial product
   (in double, stored as f32) into out[s] (gpuir_matmul_k_slice_len). */
static void gpuir__ref_matmul_op(gpuir__ref *R, const gpuir__op *op, const gpuir_array *const *x, gpuir_array *out) {
    bool ta = gpuir__op_flag(R->m, op, GPUIR__KEY_TRANSPOSE_A), tb = gpuir__op_flag(R->m, op, GPUIR__KEY_TRANSPOSE_B);
    bool tf32 = gpuir__op_flag(R->m, op, GPUIR__KEY_TF32);
    int64_t K = x[0]->dims[x[0]->rank - (ta ? 2 : 1)];
    const gpuir__attr *ks = gpuir__attr_get(R->m, op, GPUIR__KEY_K_SLICES);
    if (!ks) {
        gpuir__ref_matmul(x[0], x[1], out, ta, tb, tf32, 0, K);
        return;
    }
    int64_t S = ks->i, len = gpuir_matmul_k_slice_len(K, S);
    gpuir_array slice = *out;                   /* out[s]: the dims after the first */
    slice.rank--;
    memmove(slice.dims, out->dims + 1, (size_t)slice.rank * sizeof slice.dims[0]);
    size_t per = gpuir_array_count(&slice) * gpuir_dtype_size(out->dtype);
    for (int64_t s = 0; s < S; s++) {
        slice.data = (char *)out->data + (size_t)s * per;
        int64_t k1 = (s + 1) * len < K ? (s + 1) * len : K;
        gpuir__ref_matmul(x[0], x[1], &slice, ta, tb, tf32, s * len, k1);
    }
}

/* Reduces x over the marked axes into out (keepdims or not: same order). */
static gpuir_result gpuir__ref_reduce(gpuir_ctx *ctx, const gpuir_array *x, gpuir_array *out,
                                      gpuir_op_kind k, const bool *reduced) {
    size_t n_out = gpuir_array_count(out), n_in = gpuir_array_count(x);
    bool is_float = gpuir_dtype_is_float(x->dtype);
    double *acc = (double *)gpuir__calloc(n_out + 1, sizeof *acc);
    int64_t *iacc = (int64_t *)gpuir__calloc(n_out + 1, sizeof *iacc);
    bool *seen = (bool *)gpuir__calloc(n_out + 1, sizeof *seen);
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
    GPUIR_FREE(acc);
    GPUIR_FREE(iacc);
    GPUIR_FREE(seen);
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
    const gpuir__attr *sym = gpuir__attr_get(R->m, op, GPUIR__KEY_NAME);
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
    case GPUIR__CLASS_MATMUL: gpuir__ref_matmul_op(R, op, x, out); break;
    case GPUIR__CLASS_REDUCE: {
        bool reduced[GPUIR_MAX_RANK] = {false};
        a = gpuir__attr_get(R->m, op, GPUIR__KEY_AXES);
        for (uint32_t i = 0; i < a->n; i++) reduced[R->m->ints[a->off + i]] = true;
        r = gpuir__ref_reduce(R->ctx, x[0], out, op->kind, reduced);
        break;
    }
    case GPUIR__CLASS_TRANSPOSE:
        gpuir__ref_transpose(x[0], out, gpuir__ints_at(R->m, gpuir__attr_get(R->m, op, GPUIR__KEY_PERM)->off));
        break;
    case GPUIR__CLASS_RESHAPE:
        if (gpuir_array_count(out))
            memcpy(out->data, x[0]->data, gpuir_array_count(out) * gpuir_dtype_size(out->dtype));
        break;
    case GPUIR__CLASS_BROADCAST: gpuir__ref_broadcast(x[0], out); break;
    case GPUIR__CLASS_CAST: gpuir__ref_cast(x[0], out); break;
    case GPUIR__CLASS_CONSTANT: gpuir__ref_constant(R->m, gpuir__attr_get(R->m, op, GPUIR__KEY_VALUE), out); break;
    case GPUIR__CLASS_SOFTMAX: gpuir__ref_softmax(x[0], out, gpuir__attr_get(R->m, op, GPUIR__KEY_AXIS)->i); break;
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

/* The type an allocation has in this run: its dynamic dims are those its
   dims_of names in the operands' buffers. */
static gpuir_type gpuir__ref_alloc_type(gpuir__ref *R, const gpuir__op *op) {
    gpuir_type t = gpuir__value_at(R->m, op->result)->type;
    const gpuir__attr *dims_of = gpuir__attr_get(R->m, op, GPUIR__KEY_DIMS_OF);
    const int64_t *pairs = dims_of ? gpuir__ints_at(R->m, dims_of->off) : NULL;
    for (int i = 0, k = 0; pairs && i < t.rank; i++)
        if (t.dims[i] == GPUIR_DYN) {
            t.dims[i] = R->vals[gpuir__op_operand(R->m, op, (uint32_t)pairs[2 * k]) - 1].dims[pairs[2 * k + 1]];
            k++;
        }
    return t;
}

static gpuir_result gpuir__ref_alloc(gpuir__ref *R, const gpuir__op *op, uint32_t op_id) {
    gpuir_type t = gpuir__ref_alloc_type(R, op);
    gpuir_array a;
    gpuir__ref_buffer *b;
    gpuir_result r = GPUIR_OK;
    for (uint32_t i = 0; i < op->n_operands && !r; i++) r = gpuir__ref_live(R, gpuir__op_operand(R->m, op, i), &b);
    if (!r) r = gpuir_array_alloc(R->ctx, &a, t.dtype, t.rank, t.dims);
    if (r) return r;
    gpuir__ref_poison(&a);
    gpuir__ref_bind_buffer(R, op->result, &t, a.data, true, op_id);
    return GPUIR_OK;
}

static gpuir_result gpuir__ref_dealloc(gpuir__ref *R, const gpuir__op *op) {
    gpuir__ref_buffer *b;
    gpuir_result r = gpuir__ref_live(R, gpuir__op_operand(R->m, op, 0), &b);
    if (r) return r;
    if (!b->owned)
        return gpuir__fail(R->ctx, GPUIR_ERR_VERIFY, "%s of a buffer the program did not "
                           "allocate", gpuir_op_name(op->kind));
    GPUIR_FREE(b->data);
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
    const gpuir__attr *sym = gpuir__attr_get(R->m, op, GPUIR__KEY_NAME);
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

/* memref.reshape: the operand's buffer seen with the result's shape. */
static gpuir_result gpuir__ref_view(gpuir__ref *R, const gpuir__op *op) {
    gpuir__ref_buffer *b;
    gpuir_result r = gpuir__ref_live(R, gpuir__op_operand(R->m, op, 0), &b);
    if (r) return r;
    gpuir__ref_alias(R, op->result, gpuir__op_operand(R->m, op, 0));
    const gpuir_type *t = &gpuir__value_at(R->m, op->result)->type;
    R->vals[op->result - 1].rank = t->rank;
    memcpy(R->vals[op->result - 1].dims, t->dims, sizeof t->dims);
    return GPUIR_OK;
}

static gpuir_result gpuir__ref_exec_any(gpuir__ref *R, const gpuir__op *op, uint32_t op_id);

/* Runs a kernel's body on the launch's buffers; its temporaries die with it. */
static gpuir_result gpuir__ref_launch(gpuir__ref *R, const gpuir__op *op) {
    const gpuir__attr *sym = gpuir__attr_get(R->m, op, GPUIR__KEY_KERNEL);
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
            GPUIR_FREE(R->bufs[i].data);
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
    case GPUIR__CLASS_VIEW: return gpuir__ref_view(R, op);
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
    gpuir__loc_clear(R->ctx);
    const gpuir__op *ret = gpuir__op_at(R->m, f->ops[n_ops - 1]);
    gpuir_result r = gpuir__ref_take_outputs(R, ret, n_out, outputs);
    for (uint32_t i = 0; !r && i < ret->n_operands; i++) {   /* returned buffers: handed over */
        uint32_t b = R->buf_of[gpuir__op_operand(R->m, ret, i) - 1];
        if (b && R->bufs[b - 1].owned && R->bufs[b - 1].live) {
            GPUIR_FREE(R->bufs[b - 1].data);
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
    if (outputs && n_outputs) memset(outputs, 0, n_outputs * sizeof *outputs);  /* releasable */
    if (!m) return GPUIR_ERR_INVALID_ARGUMENT;  /* a failed make: its context has the error */
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    gpuir_result r = gpuir__run_args_check(ctx, n_inputs, inputs, n_outputs, outputs);
    if (r) return r;
    uint32_t fid = func ? gpuir__find_func(m, func) : 0;
    if (!fid) return gpuir__fail(ctx, GPUIR_ERR_NOT_FOUND, "no function named @%s", func ? func : "(null)");
    r = gpuir_module_verify(m);
    if (r) return r;
    size_t nv = stbds_arrlenu(m->values) + 1;
    gpuir__ref R;
    memset(&R, 0, sizeof R);
    R.m = m;
    R.ctx = ctx;
    R.vals = (gpuir_array *)gpuir__calloc(nv, sizeof *R.vals);
    R.borrowed = (bool *)gpuir__calloc(nv, sizeof *R.borrowed);
    R.last_use = (uint32_t *)gpuir__calloc(nv, sizeof *R.last_use);
    R.buf_of = (uint32_t *)gpuir__calloc(nv, sizeof *R.buf_of);
    const gpuir__func *f = gpuir__func_at(m, fid);
    if (!R.vals || !R.borrowed || !R.last_use || !R.buf_of) r = gpuir__oom(ctx, "interpreter state");
    if (!r && f->kernel)
        r = gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "@%s is a kernel: run the host function "
                        "that launches it", func);
    if (!r) r = gpuir__ref_bind_inputs(&R, f, n_inputs, inputs);
    if (!r) r = gpuir__ref_run_func(&R, f, n_outputs, outputs);
    for (size_t i = 0; R.vals && R.borrowed && i < nv; i++)
        if (!R.borrowed[i]) GPUIR_FREE(R.vals[i].data);
    if (r)
        for (size_t i = 0; i < n_outputs; i++) gpuir_array_release(&outputs[i]);
    for (size_t i = 0; i < stbds_arrlenu(R.bufs); i++)
        if (R.bufs[i].owned && R.bufs[i].live) GPUIR_FREE(R.bufs[i].data);
    stbds_arrfree(R.bufs);
    GPUIR_FREE(R.vals);
    GPUIR_FREE(R.borrowed);
    GPUIR_FREE(R.last_use);
    GPUIR_FREE(R.buf_of);
    gpuir__loc_clear(ctx);
    return r;
}

GPUIRDEF gpuir_result gpuir_module_bind_global(gpuir_module *m, const char *name,
                                               const gpuir_array *value) {
    if (!m) return GPUIR_ERR_INVALID_ARGUMENT;  /* a failed make: its context has the error */
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    if (!value) return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "bind_global: value is NULL");
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
    return gpuir__global_set_data(m, g, value->data, bytes);
}

/* ====================================================================== */
// >>npy
// NumPy .npy files, versions 1.0, 2.0 and 3.0: little-endian f32, f16, i32 and
// i64 in C order; f64 and bool converted to a dtype asked for. Everything
// else is refused with a message saying why.
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
    while (c->p < c->end && *c->p != q) {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch < 32 || ch > 126) return gpuir__npy_bad(c, "a control or non-ASCII byte in a string");
    }
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
        if ((strcmp(key, "descr") == 0 && h->have_descr) || (strcmp(key, "shape") == 0 && h->have_shape) ||
            (strcmp(key, "fortran_order") == 0 && h->have_fortran))
            return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy header: the key '%s' appears twice", key);
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
    gpuir__npy_skip(&c);                     /* the padding: spaces and the final newline */
    if (c.p != c.end) return gpuir__npy_bad(&c, "text after the dict");
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

/* What the first bytes of a .npy file say: where the data starts, its
   dtype (the file's: `<f8` and `|b1` as their own codes), its shape and
   byte count. Needs only the magic and the header, not the data. */
typedef struct gpuir__npy_layout {
    size_t data_at, data_bytes;
    char descr[16];
    int rank;
    int64_t dims[GPUIR_MAX_RANK];
    size_t elem;                    /* bytes per element in the file */
} gpuir__npy_layout;

static gpuir_result gpuir__npy_layout_of(gpuir_ctx *ctx, const unsigned char *b, size_t size,
                                         gpuir__npy_layout *L) {
    memset(L, 0, sizeof *L);
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
    L->elem = dt ? gpuir_dtype_size(dt) : strcmp(h.descr, "<f8") == 0 ? 8 : strcmp(h.descr, "|b1") == 0 ? 1 : 0;
    if (!L->elem)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: dtype '%s' is not supported (<f4, <f2, "
                           "<i4, <i8; <f8 and |b1 converted to a dtype asked for)", h.descr);
    gpuir_array tmp;                         /* the shape's checks (|b1: as if 2 bytes each) */
    memset(&tmp, 0, sizeof tmp);
    tmp.dtype = L->elem == 8 ? GPUIR_I64 : L->elem == 4 ? GPUIR_F32 : GPUIR_F16;
    tmp.rank = h.rank;
    memcpy(tmp.dims, h.dims, sizeof h.dims);
    if ((r = gpuir__array_check(ctx, &tmp, ".npy", &L->data_bytes)) != GPUIR_OK) return r;
    if (L->elem == 1) L->data_bytes /= 2;
    L->data_at = pre + hlen;
    snprintf(L->descr, sizeof L->descr, "%s", h.descr);
    L->rank = h.rank;
    memcpy(L->dims, h.dims, sizeof h.dims);
    return GPUIR_OK;
}

/* The data of a laid-out file into out, as `want` (0: the file's own
   dtype; `<f8` to a float dtype and `|b1` to any need one asked for). */
static gpuir_result gpuir__npy_convert(gpuir_ctx *ctx, const gpuir__npy_layout *L, const unsigned char *data,
                                       gpuir_dtype want, gpuir_array *out) {
    gpuir_dtype own = gpuir__npy_dtype(L->descr);
    bool f8 = strcmp(L->descr, "<f8") == 0, b1 = strcmp(L->descr, "|b1") == 0;
    gpuir_dtype dt = want ? want : own;
    if (!dt)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: dtype '%s' has no gpuir dtype: read it with "
                           "gpuir_npy_read_as, naming the dtype to convert to", L->descr);
    if (own ? own != dt : f8 && !gpuir_dtype_is_float(dt))
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: the file holds '%s' (%s), %s is wanted", L->descr,
                           own ? gpuir_dtype_name(own) : "f64", gpuir_dtype_name(dt));
    gpuir_result r = gpuir_array_alloc(ctx, out, dt, L->rank, L->dims);
    if (r) return r;
    size_t n = gpuir_array_count(out);
    if (own) { if (L->data_bytes) memcpy(out->data, data, L->data_bytes); }
    else if (b1) for (size_t i = 0; i < n; i++) gpuir_array_set(out, i, data[i] != 0);
    else for (size_t i = 0; i < n; i++) {
        double v;
        memcpy(&v, data + i * 8, 8);
        gpuir_array_set(out, i, v);
    }
    return GPUIR_OK;
}

static gpuir_result gpuir__npy_load_as(gpuir_ctx *ctx, const void *bytes, size_t size, gpuir_dtype want,
                                       gpuir_array *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!ctx || ctx->result != GPUIR_OK) return gpuir_ctx_result(ctx);
    if (!out) return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "npy_load: out is NULL");
    const unsigned char *b = (const unsigned char *)bytes;
    gpuir__npy_layout L;
    gpuir_result r = gpuir__npy_layout_of(ctx, b, size, &L);
    if (r) return r;
    size_t have = size - L.data_at;
    if (have != L.data_bytes)
        return gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: the shape needs %zu data bytes, the file "
                           "has %zu", L.data_bytes, have);
    return gpuir__npy_convert(ctx, &L, b + L.data_at, want, out);
}

GPUIRDEF gpuir_result gpuir_npy_load(gpuir_ctx *ctx, const void *bytes, size_t size,
                                     gpuir_array *out) {
    return gpuir__npy_load_as(ctx, bytes, size, GPUIR_DTYPE_INVALID, out);
}

/* Reads up to n bytes at the file offset; false with errno. */
static bool gpuir__npy_pread(int fd, unsigned char *buf, size_t n, size_t at, size_t *got) {
    *got = 0;
    while (*got < n) {
        ssize_t k = pread(fd, buf + *got, n - *got, (off_t)(at + *got));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return false;
        if (k == 0) break;
        *got += (size_t)k;
    }
    return true;
}

/* A .npy file: a regular file only (not a device, FIFO or directory, which
   could block or never end), its size checked against its header before
   the data is read. */
static gpuir_result gpuir__npy_read_file(gpuir_ctx *ctx, const char *path, gpuir_dtype want, gpuir_array *out) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return gpuir__fail(ctx, GPUIR_ERR_IO, "cannot read the file: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return gpuir__fail(ctx, GPUIR_ERR_IO, "not a regular file (a .npy input must be one: no device, "
                           "FIFO or directory)");
    }
    size_t size = (size_t)st.st_size, head = size < 65536 + 12 ? size : 65536 + 12, got;
    unsigned char *buf = (unsigned char *)GPUIR_MALLOC(head ? head : 1);
    gpuir__npy_layout L;
    gpuir_result r = buf ? GPUIR_OK : gpuir__oom(ctx, path);
    if (!r && !gpuir__npy_pread(fd, buf, head, 0, &got))
        r = gpuir__fail(ctx, GPUIR_ERR_IO, "cannot read the file: %s", strerror(errno));
    if (!r) r = gpuir__npy_layout_of(ctx, buf, got, &L);
    if (!r && size - L.data_at != L.data_bytes)
        r = gpuir__fail(ctx, GPUIR_ERR_NPY, ".npy: the shape needs %zu data bytes, the file has %zu",
                        L.data_bytes, size - L.data_at);
    unsigned char *data = NULL;
    if (!r && !(data = (unsigned char *)GPUIR_MALLOC(L.data_bytes ? L.data_bytes : 1))) r = gpuir__oom(ctx, path);
    if (!r && (!gpuir__npy_pread(fd, data, L.data_bytes, L.data_at, &got) || got != L.data_bytes))
        r = gpuir__fail(ctx, GPUIR_ERR_IO, "cannot read the file: it changed while being read");
    if (!r) r = gpuir__npy_convert(ctx, &L, data, want, out);
    GPUIR_FREE(data);
    GPUIR_FREE(buf);
    close(fd);
    return r;
}

GPUIRDEF gpuir_result gpuir_npy_read_as(gpuir_ctx *ctx, const char *path, gpuir_dtype dtype, gpuir_array *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!ctx || ctx->result != GPUIR_OK) return gpuir_ctx_result(ctx);
    if (!out || !path)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "npy_read: %s is NULL", out ? "path" : "out");
    char note[sizeof ctx->loc_note];         /* errors name the file */
    memcpy(note, ctx->loc_note, sizeof note);
    snprintf(ctx->loc_note, sizeof ctx->loc_note, "%s", path);
    gpuir_result r = gpuir__npy_read_file(ctx, path, dtype, out);
    memcpy(ctx->loc_note, note, sizeof note);
    return r;
}

GPUIRDEF gpuir_result gpuir_npy_read(gpuir_ctx *ctx, const char *path, gpuir_array *out) {
    return gpuir_npy_read_as(ctx, path, GPUIR_DTYPE_INVALID, out);
}

GPUIRDEF gpuir_result gpuir_npy_write(gpuir_ctx *ctx, const char *path, const gpuir_array *a) {
    if (!ctx || ctx->result != GPUIR_OK) return gpuir_ctx_result(ctx);
    if (!a || !path)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "npy_write: %s is NULL", a ? "path" : "a");
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
// The pass registry, the pipeline runner (verify before the first pass
// unless the module is unchanged since it last passed, and after each pass:
// the host functions only after a pass marked host_only; IR dumps, timing) and the
// helpers passes share to rebuild a function's op list.
// Reads: ir, build, print, verify. Writes: ir. Passes keep no state.

typedef gpuir_result (*gpuir__pass_fn)(gpuir_module *m);

/* A pass's error about op: at the op's source location when it has one
   ("file:line:col: error: pass 'x': ..."). */
static gpuir_result gpuir__pass_fail(gpuir_module *m, const gpuir__op *op, gpuir_result code, const char *fmt, ...)
    GPUIR__PRINTF(4, 5);
static gpuir_result gpuir__pass_fail(gpuir_module *m, const gpuir__op *op, gpuir_result code, const char *fmt, ...) {
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return code;
    gpuir__str text = {NULL};
    va_list ap;
    va_start(ap, fmt);
    gpuir__str_vappend(&text, fmt, ap);
    va_end(ap);
    const char *file = ctx->loc_file;
    uint32_t line = ctx->loc_line, col = ctx->loc_col;
    if (op && op->line && m->source_name && !file) {
        ctx->loc_file = m->source_name;
        ctx->loc_line = op->line;
        ctx->loc_col = op->col;
    }
    gpuir__fail(ctx, code, "%s", gpuir__str_cstr(&text));
    ctx->loc_file = file;
    ctx->loc_line = line;
    ctx->loc_col = col;
    gpuir__str_free(&text);
    return code;
}

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
   counts: an unused buffer is never needed; so do views.) */
static bool gpuir__op_is_pure(const gpuir__op *op) {
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    return op->result && (gpuir__class_computes(cls) || cls == GPUIR__CLASS_GLOBAL ||
                          cls == GPUIR__CLASS_ALLOC || cls == GPUIR__CLASS_VIEW);
}

/* Removes pure ops whose result nobody uses. */
static gpuir_result gpuir__remove_dead_ops(gpuir_module *m, uint32_t fid) {
    gpuir__func *f = gpuir__func_at(m, fid);
    size_t n = stbds_arrlenu(f->ops), kept = n;
    uint32_t *uses = (uint32_t *)gpuir__scratch_calloc(m, stbds_arrlenu(m->values) + 1, sizeof *uses);
    bool *dead = (bool *)gpuir__scratch_calloc(m, n + 1, sizeof *dead);
    gpuir_result r = uses && dead ? GPUIR_OK : gpuir__oom(m->ctx, "dead code removal");
    if (!r) {
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
    gpuir__scratch_free(m, uses);
    gpuir__scratch_free(m, dead);
    return r;
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
static gpuir_result gpuir__pass_split_k(gpuir_module *m);
static gpuir_result gpuir__pass_fuse(gpuir_module *m);
static gpuir_result gpuir__pass_bufferize(gpuir_module *m);
static gpuir_result gpuir__pass_outline(gpuir_module *m);
static gpuir_result gpuir__pass_place(gpuir_module *m);
static gpuir_result gpuir__pass_configure(gpuir_module *m);
static gpuir_result gpuir__pass_plan_shared_memory(gpuir_module *m);
static gpuir_result gpuir__pass_async(gpuir_module *m);

typedef struct gpuir__pass_info {
    const char *name;
    const char *summary;
    gpuir__pass_fn run;
    bool host_only;         /* changes host functions only: the kernels stay as verified */
} gpuir__pass_info;

static const gpuir__pass_info gpuir__passes[] = {
    {"canonicalize", "fold constants, merge identical ops (CSE), remove dead ops",
     gpuir__pass_canonicalize, false},
    {"decompose", "rewrite composite ops (softmax) into primitive ops", gpuir__pass_decompose, false},
    {"split-k", "split the K of matmuls too small to fill the device: partial products, then their sum",
     gpuir__pass_split_k, true},
    {"fuse", "group ops into kernels: elementwise chains, into reductions, matmul epilogues",
     gpuir__pass_fuse, true},
    {"bufferize", "turn host functions' tensors into buffers, ops into their buffer form",
     gpuir__pass_bufferize, true},
    {"outline", "move each fusion group into a gpu.func kernel and launch it", gpuir__pass_outline, false},
    {"place", "device buffers, host<->device copies only where data must move, frees at last use",
     gpuir__pass_place, true},
    {"configure", "choose grid and block for each launch that has none", gpuir__pass_configure, true},
    {"plan-shared-memory", "size each launch's dynamic shared memory; check the device limit",
     gpuir__pass_plan_shared_memory, true},
    {"async", "put copies and kernels on streams with events from the data flow; host waits only to read",
     gpuir__pass_async, true},
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
    m->verified = false;
    gpuir_result r = p->run(m);
    m->ctx->loc_note[0] = '\0';
    double ms = 1000.0 * (double)(clock() - start) / CLOCKS_PER_SEC;
    if (!r && !d->disable_verify && gpuir__module_verify_funcs(m, !p->host_only) != GPUIR_OK) {
        gpuir_ctx *ctx = m->ctx;
        gpuir__str s = {NULL};
        gpuir__str_appendf(&s, "after pass '%s': %s", p->name, gpuir_ctx_error(ctx));
        stbds_arrfree(ctx->message);
        ctx->message = s.buf;
        r = ctx->result;
    } else if (!r && !d->disable_verify) {
        gpuir__module_mark_verified(m);     /* the kernels: before the pass, or just now */
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
    if (!m) return GPUIR_ERR_INVALID_ARGUMENT;  /* a failed make: its context has the error */
    gpuir_ctx *ctx = m->ctx;
    gpuir_pass_desc d;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (ctx->result != GPUIR_OK) return ctx->result;
    gpuir_result r = gpuir__module_still_verified(m) ? GPUIR_OK : gpuir_module_verify(m);
    const char *p = pipeline ? pipeline : "";
    while (!r && *p) {          /* check every name before running anything */
        size_t len = strcspn(p, ",");
        if (!gpuir__find_pass(p, len))
            return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "unknown pass '%.*s' in pipeline "
                               "'%s' (see gpuir_pass_name)", (int)len, p, pipeline);
        p += len + (p[len] == ',');
    }
    const char *dumps[2] = {d.print_ir_before, d.print_ir_after};   /* names to dump at: registered passes */
    for (int i = 0; !r && i < 2; i++)
        if (dumps[i] && strcmp(dumps[i], "*") != 0 && !gpuir__find_pass(dumps[i], strlen(dumps[i])))
            return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: there is no pass '%s' (see gpuir_pass_name)",
                               i ? "print_ir_after" : "print_ir_before", dumps[i]);
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
    void *q = GPUIR_REALLOC(*p, cap * size);
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
    GPUIR_FREE(t->keys);
    GPUIR_FREE(t->ops);
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
    bigger.keys = (uint64_t *)gpuir__calloc(bigger.cap, sizeof *bigger.keys);
    bigger.ops = (uint32_t *)gpuir__calloc(bigger.cap, sizeof *bigger.ops);
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

/* FNV-style, eight bytes a step (an op's type alone is 80 bytes): for a
   fixed length, inputs that differ in one word hash apart. */
static uint64_t gpuir__hash(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; n; n--, p++) h = (h ^ *p) * 0x100000001b3ull;
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
    h ^= h >> 33;                   /* bring the high bits down: the table */
    h *= 0xff51afd7ed558ccdull;     /* indexes by the low ones */
    return h ^ (h >> 33);
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
   on a hash collision with a different op the new one is simply kept); 0
   with the context's error set when out of memory. */
static uint32_t gpuir__cse_lookup(gpuir__canon *C, uint32_t op_id) {
    const gpuir__op *op = gpuir__op_at(C->m, op_id);
    uint64_t key = gpuir__op_hash(C->m, op);
    if (!gpuir__cse_reserve(&C->cse)) { gpuir__oom(C->m->ctx, "CSE"); return 0; }
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
    return def && def->kind == GPUIR_OP_CONSTANT ? gpuir__attr_get(m, def, GPUIR__KEY_VALUE) : NULL;
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
    if (m->ctx->result != GPUIR_OK) return m->ctx->result;
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
    if (!r) r = gpuir__remove_dead_ops(m, fid);
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
    GPUIR_FREE(C.repl);
    GPUIR_FREE(C.ref.vals);
    GPUIR_FREE(C.ref.borrowed);
    return r;
}

/* ====================================================================== */
// >>pass.decompose
// Rewrites composite ops into primitive ones: softmax(x, axis) becomes
// e = exp(x - reduce_max(x)), e / reduce_sum(e), both keeping the axis;
// a softmax over the innermost axis stays, since codegen has a one-pass
// kernel for it (rows in registers). Reads: ir, build. Writes: ir.

/* Whether codegen computes this softmax in one kernel: over the last axis. */
static bool gpuir__softmax_is_rowwise(const gpuir_module *m, const gpuir__op *op) {
    int64_t axis = gpuir__attr_get(m, op, GPUIR__KEY_AXIS)->i;
    int rank = gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type.rank;
    return gpuir__norm_axis(&axis, rank) && axis == rank - 1;
}

static uint32_t gpuir__decompose_softmax(gpuir_module *m, const gpuir__op *op) {
    uint32_t x = gpuir__op_operand(m, op, 0);
    int64_t axis = gpuir__attr_get(m, op, GPUIR__KEY_AXIS)->i;
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
    uint32_t *repl = (uint32_t *)gpuir__scratch_calloc(m, stbds_arrlenu(m->values) + 1, sizeof *repl);
    if (!repl) return gpuir__oom(m->ctx, "decompose");
    gpuir_result r = GPUIR_OK;
    for (size_t f = 0; f < stbds_arrlenu(m->funcs) && !r; f++) {
        uint32_t fid = (uint32_t)f + 1;
        gpuir__rewrite_begin(m, fid);
        for (size_t i = 0; i < stbds_arrlenu(gpuir__func_at(m, fid)->ops) && !r; i++) {
            uint32_t op_id = gpuir__func_at(m, fid)->ops[i];
            gpuir__remap_operands(m, gpuir__op_at(m, op_id), repl);
            const gpuir__op *op = gpuir__op_at(m, op_id);
            if (op->kind != GPUIR_OP_SOFTMAX || !op->result || gpuir__softmax_is_rowwise(m, op)) {
                gpuir__rewrite_keep(m, op_id);
                continue;
            }
            uint32_t result = op->result, y = gpuir__decompose_softmax(m, op);
            if (!y) r = m->ctx->result;
            else repl[result - 1] = y;
        }
        gpuir__rewrite_end(m, r == GPUIR_OK);
    }
    gpuir__scratch_free(m, repl);
    return r;
}

/* ====================================================================== */
// >>pass.split-k
// Split-K for matmuls whose output tiles cannot fill the device: a static
// matmul `%c = matmul %a, %b` with too few tiles and a long K becomes
// `%p = matmul %a, %b {k_slices = S}` (S partial products over consecutive
// K ranges, f32 [S, ..., M, N]), `reduce_sum %p {axes = [0]}` and, unless
// %c is f32, a `cast` to %c's dtype. fuse then puts %c's elementwise users
// (bias, activation, residual) into the reducing kernel, which codegen
// runs a thread per output (gpuir__reduce_is_columns). Planned for
// gpuir__module_sm_count's multiprocessors. Reads: ir, build, configure's
// tile choice. Writes: ir.

/* Elements of K each slice keeps at least: 8 k tiles of the tensor-core
   kernels (32 halves), 16 of the f32 ones (16 floats), so the k loop's
   prologue and the partials' extra traffic stay small next to the work. */
#define GPUIR__SPLIT_K_MIN 256
/* The most slices: the reduction reads S partials per output; past 16 the
   second kernel's traffic (S * M * N floats) outgrows what splitting saves. */
#define GPUIR__SPLIT_K_MAX 16

static int64_t gpuir__matmul_tile_for(const gpuir_module *m, const gpuir__op *op, const gpuir_type *a,
                                      const gpuir_type *o);
static int64_t gpuir__module_sm_count(const gpuir_module *m);
static void gpuir__attrs_copy_without(gpuir_module *m, uint32_t op_id, gpuir__attr_key key);

/* How many K slices a matmul gets, 0 for none. The heuristic: split when
   its output tiles (at the tile edge its kernel form takes; batches count)
   are fewer than half the multiprocessors, so that more than half the
   device would idle, and K holds at least two slices of
   GPUIR__SPLIT_K_MIN. S is about SMs / tiles (one wave of blocks),
   at most GPUIR__SPLIT_K_MAX and K / GPUIR__SPLIT_K_MIN, lowered until no
   slice is empty (slices are rounded up to 32 elements). Only static,
   float matmuls not already split and not asking for wgmma. */
static int64_t gpuir__split_k_slices(const gpuir_module *m, const gpuir__op *op) {
    const gpuir_type *a = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
    const gpuir_type *b = &gpuir__value_at(m, gpuir__op_operand(m, op, 1))->type;
    const gpuir_type *o = &gpuir__value_at(m, op->result)->type;
    if (!gpuir__type_is_static(a) || !gpuir__type_is_static(b) || !gpuir_dtype_is_float(o->dtype) ||
        gpuir__attr_get(m, op, GPUIR__KEY_K_SLICES) || gpuir__op_flag(m, op, GPUIR__KEY_WGMMA))
        return 0;
    int64_t M = o->dims[o->rank - 2], N = o->dims[o->rank - 1];
    int64_t K = a->dims[a->rank - (gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_A) ? 2 : 1)];
    if (M <= 0 || N <= 0 || K < 2 * GPUIR__SPLIT_K_MIN) return 0;
    int64_t tile = gpuir__matmul_tile_for(m, op, a, o), sms = gpuir__module_sm_count(m);
    int64_t tiles = ((M + tile - 1) / tile) * ((N + tile - 1) / tile) * (gpuir__type_count(o) / (M * N));
    if (tiles * 2 >= sms) return 0;
    int64_t S = sms / tiles;
    if (S > GPUIR__SPLIT_K_MAX) S = GPUIR__SPLIT_K_MAX;
    if (S > K / GPUIR__SPLIT_K_MIN) S = K / GPUIR__SPLIT_K_MIN;
    while (S >= 2 && (S - 1) * gpuir_matmul_k_slice_len(K, S) >= K) S--;
    return S >= 2 ? S : 0;
}

/* Builds the split form of matmul `op` with S slices; returns the value
   that replaces its result (0 on failure, the error in the context). */
static uint32_t gpuir__split_k_matmul(gpuir_module *m, uint32_t op_id, int64_t S) {
    const gpuir__op *op = gpuir__op_at(m, op_id);
    uint32_t ab[2] = {gpuir__op_operand(m, op, 0), gpuir__op_operand(m, op, 1)};
    gpuir_type c = gpuir__value_at(m, op->result)->type;
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attrs_copy_without(m, op_id, GPUIR__KEY_K_SLICES);
    gpuir__attr_push_int(m, "k_slices", GPUIR__ATTR_INT, S);
    uint32_t n_attrs = (uint32_t)stbds_arrlenu(m->attrs) - first;
    gpuir_value p = gpuir__build_value(m, GPUIR_OP_MATMUL, ab, 2, first, n_attrs, NULL);
    if (!p.id) return 0;
    int64_t axis = 0;
    first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_ints(m, "axes", 1, &axis);
    gpuir_value sum = gpuir__build_value(m, GPUIR_OP_REDUCE_SUM, &p.id, 1, first, 1, NULL);
    if (!sum.id || c.dtype == GPUIR_F32) return sum.id;
    return gpuir__build_value(m, GPUIR_OP_CAST, &sum.id, 1, 0, 0, &c).id;
}

static gpuir_result gpuir__split_k_func(gpuir_module *m, uint32_t fid) {
    uint32_t *repl = (uint32_t *)gpuir__scratch_calloc(m, stbds_arrlenu(m->values) + 1, sizeof *repl);
    if (!repl) return gpuir__oom(m->ctx, "split-k");
    gpuir_result r = GPUIR_OK;
    gpuir__rewrite_begin(m, fid);
    for (size_t i = 0; i < stbds_arrlenu(gpuir__func_at(m, fid)->ops) && !r; i++) {
        uint32_t op_id = gpuir__func_at(m, fid)->ops[i];
        gpuir__remap_operands(m, gpuir__op_at(m, op_id), repl);
        const gpuir__op *op = gpuir__op_at(m, op_id);
        int64_t S = op->kind == GPUIR_OP_MATMUL && op->result ? gpuir__split_k_slices(m, op) : 0;
        if (!S) {
            gpuir__rewrite_keep(m, op_id);
            continue;
        }
        uint32_t result = op->result, y = gpuir__split_k_matmul(m, op_id, S);
        if (!y) r = m->ctx->result;
        else repl[result - 1] = y;
    }
    gpuir__rewrite_end(m, r == GPUIR_OK);
    gpuir__scratch_free(m, repl);
    return r;
}

static gpuir_result gpuir__pass_split_k(gpuir_module *m) { return gpuir__each_host_func(m, gpuir__split_k_func); }

/* ====================================================================== */
// >>pass.fuse
// Marks each computing op of a host function with `fusion = N`: ops with the
// same N become one kernel. An elementwise op joins the group of a producer
// that is elementwise or a matmul (its epilogue: bias, activation, residual)
// when it is that value's only user and the shapes agree; a reduction joins
// an elementwise producer's group the same way, and elementwise users join
// a column reduction (over a short leading axis: split-K's sum) as they
// join a matmul. A value used twice, or by the host, ends its group. Splat constants, globals and reshapes join no group
// (bufferize makes a reshape a view: no kernel). Reads: ir. Writes: the
// `fusion` attribute.

typedef enum gpuir__group_kind {
    GPUIR__GROUP_ELEMENTWISE, GPUIR__GROUP_REDUCE, GPUIR__GROUP_MATMUL, GPUIR__GROUP_OTHER,
    GPUIR__GROUP_COLUMNS        /* a column reduction (gpuir__reduce_is_columns): takes users too */
} gpuir__group_kind;

/* The most elements a column reduction sums per output. */
#define GPUIR__COLUMNS_MAX 16

/* Whether a reduction (tensor or buffer form) sums columns: over the
   leading axis only, of a static extent from 2 to GPUIR__COLUMNS_MAX, of a
   static float tensor with at least one more axis (split-K's partials, S x
   M x N). Codegen gives it a thread per output that reads the S values of
   its column (coalesced across the threads: consecutive outputs are
   consecutive in every row), rather than a block per output; fuse lets
   its elementwise users join it, which then run on the sum in registers. */
static bool gpuir__reduce_is_columns(const gpuir_module *m, const gpuir__op *op) {
    if (gpuir__info(op->kind)->cls != GPUIR__CLASS_REDUCE) return false;
    const gpuir_type *x = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
    const gpuir__attr *axes = gpuir__attr_get(m, op, GPUIR__KEY_AXES);
    if (!axes || axes->n != 1 || x->rank < 2 || !gpuir__type_is_static(x) || !gpuir_dtype_is_float(x->dtype))
        return false;
    int64_t axis = gpuir__ints_at(m, axes->off)[0];
    return gpuir__norm_axis(&axis, x->rank) && axis == 0 && x->dims[0] >= 2 && x->dims[0] <= GPUIR__COLUMNS_MAX;
}

/* Whether every operand of op has a static type. */
static bool gpuir__operands_static(const gpuir_module *m, const gpuir__op *op) {
    for (uint32_t k = 0; k < op->n_operands; k++)
        if (!gpuir__type_is_static(&gpuir__value_at(m, gpuir__op_operand(m, op, k))->type)) return false;
    return true;
}

static bool gpuir__is_elementwise(gpuir__op_class c) {
    return c == GPUIR__CLASS_UNARY || c == GPUIR__CLASS_BINARY || c == GPUIR__CLASS_CAST;
}

/* Gives op `op_id` the integer attribute `name` (replacing an old value):
   its attributes are copied to a new range of the pool with the new one. */
/* Copies op_id's attributes but `name` to the end of the pool; the caller
   pushes the new `name` and gpuir__attrs_adopt points the op at them. */
static void gpuir__attrs_copy_without(gpuir_module *m, uint32_t op_id, gpuir__attr_key key) {
    const gpuir__op *op = gpuir__op_at(m, op_id);
    uint32_t old = op->attrs, n = op->n_attrs;
    for (uint32_t i = 0; i < n; i++) {
        gpuir__attr a = m->attrs[old + i];
        if (a.key != key) stbds_arrput(m->attrs, a);
    }
}

static void gpuir__attrs_adopt(gpuir_module *m, uint32_t op_id, uint32_t first) {
    gpuir__op *op = gpuir__op_at(m, op_id);
    op->attrs = first;
    op->n_attrs = (uint32_t)stbds_arrlenu(m->attrs) - first;
}

/* Sets (adds or replaces) an integer attribute of an op. */
static void gpuir__set_int_attr(gpuir_module *m, uint32_t op_id, gpuir__attr_key key, int64_t v) {
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attrs_copy_without(m, op_id, key);
    uint32_t a = gpuir__attr_push_key(m, key, GPUIR__ATTR_INT);   /* may move m->attrs */
    m->attrs[a].i = v;
    gpuir__attrs_adopt(m, op_id, first);
}

/* Sets (adds or replaces) an integer-list attribute of an op. */
static void gpuir__set_ints_attr(gpuir_module *m, uint32_t op_id, gpuir__attr_key key, size_t n, const int64_t *v) {
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attrs_copy_without(m, op_id, key);
    gpuir__attr_set_ints(m, gpuir__attr_push_key(m, key, GPUIR__ATTR_INTS), n, v);
    gpuir__attrs_adopt(m, op_id, first);
}

static int64_t gpuir__op_int_attr(const gpuir_module *m, const gpuir__op *op, gpuir__attr_key key,
                                  int64_t dflt) {
    const gpuir__attr *a = gpuir__attr_get(m, op, key);
    return a && a->kind == GPUIR__ATTR_INT ? a->i : dflt;
}

/* The group op `user` may join through its operand v, or 0. */
static int64_t gpuir__fuse_candidate(const gpuir_module *m, const gpuir__op *user, uint32_t v,
                                     const uint32_t *uses, const gpuir__group_kind *kinds) {
    const gpuir__value *val = gpuir__value_at(m, v);
    const gpuir__op *def = gpuir__op_at(m, val->def_op);
    if (!def || uses[v - 1] != 1) return 0;
    int64_t g = gpuir__op_int_attr(m, def, GPUIR__KEY_FUSION, 0);
    if (!g) return 0;
    const gpuir_type *out = &gpuir__value_at(m, user->result)->type;
    gpuir__op_class cls = gpuir__info(user->kind)->cls;
    if (gpuir__is_elementwise(cls)) {      /* same iteration space, not after a reduction */
        bool same_dims = val->type.rank == out->rank &&
                         memcmp(val->type.dims, out->dims, (size_t)out->rank * sizeof out->dims[0]) == 0;
        bool joinable = kinds[g] == GPUIR__GROUP_ELEMENTWISE || kinds[g] == GPUIR__GROUP_MATMUL ||
                        (kinds[g] == GPUIR__GROUP_COLUMNS && gpuir__operands_static(m, user));
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
        const gpuir__attr *v = def && def->kind == GPUIR_OP_CONSTANT ? gpuir__attr_get(m, def, GPUIR__KEY_VALUE) : NULL;
        if (v && v->kind != GPUIR__ATTR_DENSE) continue;
        if (!def || gpuir__op_int_attr(m, def, GPUIR__KEY_FUSION, 0) != g) extra++;
    }
    return extra;
}

static gpuir_result gpuir__fuse_func(gpuir_module *m, uint32_t fid) {
    gpuir__func *f = gpuir__func_at(m, fid);
    size_t n = stbds_arrlenu(f->ops);
    uint32_t *uses = (uint32_t *)gpuir__scratch_calloc(m, stbds_arrlenu(m->values) + 1, sizeof *uses);
    gpuir__group_kind *kinds = (gpuir__group_kind *)gpuir__scratch_calloc(m, n + 2, sizeof *kinds);
    uint32_t *inputs = (uint32_t *)gpuir__scratch_calloc(m, n + 2, sizeof *inputs);
    if (!uses || !kinds || !inputs) {
        gpuir__scratch_free(m, uses);
        gpuir__scratch_free(m, kinds);
        gpuir__scratch_free(m, inputs);
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
        if (!op->result || !gpuir__class_computes(cls) || cls == GPUIR__CLASS_CONSTANT ||
            cls == GPUIR__CLASS_RESHAPE)
            continue;
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
        }
        if (cls == GPUIR__CLASS_REDUCE)
            kinds[g] = gpuir__reduce_is_columns(m, op) ? GPUIR__GROUP_COLUMNS : GPUIR__GROUP_REDUCE;
        gpuir__set_int_attr(m, op_id, GPUIR__KEY_FUSION, g);
    }
    gpuir__scratch_free(m, uses);
    gpuir__scratch_free(m, kinds);
    gpuir__scratch_free(m, inputs);
    return GPUIR_OK;
}

static gpuir_result gpuir__pass_fuse(gpuir_module *m) { return gpuir__each_host_func(m, gpuir__fuse_func); }

/* ====================================================================== */
// >>pass.bufferize
// Host functions become buffer programs: tensor parameters become host
// memrefs; each computing op writes a buffer (memref.alloc, then the op in
// buffer form), in place when it is elementwise and an input buffer of the
// same type dies with it; globals are read through memref.get_global, and so
// are dense constants (made initialized globals: uploaded once); a reshape
// is a view of its operand's buffer (memref.reshape: no copy, no kernel);
// every buffer allocated and not returned is freed after the last use of it
// or of any view of it. Static shapes only for now. Reads: ir, build.
// Writes: ir.

typedef struct gpuir__bufferizer {
    gpuir_module *m;
    uint32_t *buf;          /* value id - 1 -> the buffer that holds it */
    uint32_t *root;         /* tensor value id - 1 -> the value whose buffer it views
                               (itself, or what reshapes started from) */
    uint32_t *last_use;     /* root value id - 1 -> index of the last user of it or a view */
    uint32_t *last_run;     /* root value id - 1 -> when that last reader runs */
    uint32_t *runs_at;      /* op index -> when it runs: outline launches a fusion
                               group where its last op is */
    bool *owned;            /* buffer value id - 1 -> allocated by this function */
    unsigned next_const;    /* dense constants' globals: no free name below __const_<this> */
} gpuir__bufferizer;

static gpuir_type gpuir__as_memref(gpuir_type t, int32_t space) {
    t.kind = GPUIR_TYPE_MEMREF;
    t.space = space;
    return t;
}

/* Whether the function is still at the tensor level, fit to bufferize
   (every parameter a tensor). */
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
        if (p->type.kind != GPUIR_TYPE_TENSOR)
            return gpuir__fail(m->ctx, GPUIR_ERR_VERIFY, "bufferize: @%s: parameter %%%s is %s, the "
                               "others tensors: a function is bufferized whole", gpuir__string(m, f->name),
                               gpuir__string(m, p->name), gpuir__tstr(&b, &p->type));
    }
    return GPUIR_OK;
}

/* Where dynamic dim d of op's result gets its size: an operand dim of the
   same size at run time (elementwise and broadcast operands aligned from
   the right, a reduction's kept axes, a transpose's permuted axis, a
   matmul's M, N and batch dims). False when no operand dim is dynamic
   there (a reshape's `?`, say). */
static bool gpuir__dim_source(const gpuir_module *m, const gpuir__op *op, int d, uint32_t *operand, int *axis) {
    const gpuir_type *out = &gpuir__value_at(m, op->result)->type;
    const gpuir_type *in[GPUIR_MAX_OPERANDS];
    for (uint32_t k = 0; k < op->n_operands; k++) in[k] = &gpuir__value_at(m, gpuir__op_operand(m, op, k))->type;
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    *operand = 0;
    if (cls == GPUIR__CLASS_RESHAPE || !op->n_operands) return false;
    if (cls == GPUIR__CLASS_REDUCE) {
        const gpuir__attr *axes = gpuir__attr_get(m, op, GPUIR__KEY_AXES);
        bool keep = gpuir__op_flag(m, op, GPUIR__KEY_KEEPDIMS);
        for (int i = 0, j = 0; i < in[0]->rank; i++) {
            bool reduced = false;
            for (uint32_t k = 0; axes && k < axes->n; k++) reduced |= gpuir__ints_at(m, axes->off)[k] == i;
            if (reduced && !keep) continue;
            if (j++ == d) { *axis = i; return !reduced && in[0]->dims[i] == GPUIR_DYN; }
        }
        return false;
    }
    if (cls == GPUIR__CLASS_TRANSPOSE) {
        *axis = (int)gpuir__ints_at(m, gpuir__attr_get(m, op, GPUIR__KEY_PERM)->off)[d];
        return in[0]->dims[*axis] == GPUIR_DYN;
    }
    int batch = 0;                              /* trailing dims not aligned */
    if (cls == GPUIR__CLASS_MATMUL) {
        bool ta = gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_A), tb = gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_B);
        if (d >= out->rank - 2) {
            *operand = d == out->rank - 2 ? 0 : 1;
            *axis = d == out->rank - 2 ? in[0]->rank - (ta ? 1 : 2) : in[1]->rank - (tb ? 2 : 1);
            return in[*operand]->dims[*axis] == GPUIR_DYN;
        }
        batch = 2;
    }
    for (uint32_t k = 0; k < op->n_operands; k++) {
        int a = d - out->rank + in[k]->rank;
        if (a >= 0 && a < in[k]->rank - batch && in[k]->dims[a] == GPUIR_DYN) {
            *operand = k;
            *axis = a;
            return true;
        }
    }
    return false;
}

/* A fresh host buffer of type `want` for op's result: its dynamic dims
   sized like the operand dims gpuir__dim_source finds (dims_of). */
static uint32_t gpuir__bufferize_alloc(gpuir__bufferizer *B, const gpuir__op *op, const gpuir_type *want) {
    gpuir_module *m = B->m;
    uint32_t sources[GPUIR_MAX_OPERANDS], n_sources = 0;
    int64_t pairs[2 * GPUIR_MAX_RANK];
    int n_pairs = 0;
    for (int d = 0; d < want->rank; d++) {
        if (want->dims[d] != GPUIR_DYN) continue;
        uint32_t k;
        int axis;
        if (!gpuir__dim_source(m, op, d, &k, &axis)) {
            gpuir__tbuf b;
            gpuir__pass_fail(m, op, GPUIR_ERR_SHAPE, "bufferize: @%s: %s has the dynamic type %s and no operand "
                        "dim to take the size of its dim %d from (a dynamic dim must be an operand's)",
                        gpuir__string(m, gpuir__func_at(m, op->func)->name), gpuir_op_name(op->kind),
                        gpuir__tstr(&b, want), d);
            return 0;
        }
        uint32_t src = B->buf[gpuir__op_operand(m, op, k) - 1], j = 0;
        while (j < n_sources && sources[j] != src) j++;
        if (j == n_sources) sources[n_sources++] = src;
        pairs[n_pairs++] = j;
        pairs[n_pairs++] = axis;
    }
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    if (n_pairs) gpuir__attr_push_ints(m, "dims_of", (size_t)n_pairs, pairs);
    gpuir_value out = gpuir__build_value(m, GPUIR_OP_MEMREF_ALLOC, sources, n_sources, first,
                                         n_pairs ? 1 : 0, want);
    return out.id;
}

/* The buffer an op writes: an input buffer (or a view of one) that dies
   here with every view of it (elementwise, same type), or a fresh
   allocation. */
static uint32_t gpuir__bufferize_dest(gpuir__bufferizer *B, const gpuir__op *op, size_t index) {
    gpuir_module *m = B->m;
    gpuir_type want = gpuir__as_memref(gpuir__value_at(m, op->result)->type, GPUIR_SPACE_HOST);
    if (gpuir__is_elementwise(gpuir__info(op->kind)->cls))
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t v = gpuir__op_operand(m, op, k), b = B->buf[v - 1], root = B->root[v - 1];
            const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, v)->def_op);
            if (def && def->kind == GPUIR_OP_CONSTANT) continue;   /* constants stay constant */
            /* in place only if every reader of the old value runs no later */
            if (B->owned[gpuir__view_base(m, b) - 1] && B->last_use[root - 1] == index + 1 &&
                B->last_run[root - 1] <= B->runs_at[index] &&
                gpuir_type_equal(gpuir__value_at(m, b)->type, want))
                return b;
        }
    uint32_t out = gpuir__bufferize_alloc(B, op, &want);
    if (out) B->owned[out - 1] = true;
    return out;
}

/* When each op will run once outline has launched each fusion group at its
   last op, and so when each value's last reader runs. */
static gpuir_result gpuir__bufferize_schedule(gpuir__bufferizer *B, uint32_t fid) {
    gpuir_module *m = B->m;
    const gpuir__func *f = gpuir__func_at(m, fid);
    size_t n = stbds_arrlenu(f->ops);
    uint32_t *group_end = (uint32_t *)gpuir__scratch_calloc(B->m, n + 2, sizeof *group_end);
    if (!group_end) return gpuir__oom(m->ctx, "bufferize");
    for (size_t i = 0; i < n; i++) {
        int64_t g = gpuir__op_int_attr(m, gpuir__op_at(m, f->ops[i]), GPUIR__KEY_FUSION, 0);
        if (g > 0 && (size_t)g <= n) group_end[g] = (uint32_t)i + 1;
    }
    for (size_t i = 0; i < n; i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        int64_t g = gpuir__op_int_attr(m, op, GPUIR__KEY_FUSION, 0);
        B->runs_at[i] = (uint32_t)i + 1;
        if (g > 0 && (size_t)g <= n) B->runs_at[i] = group_end[g];
        else if (g)                        /* an unusual key: find the group's end */
            for (size_t j = i + 1; j < n; j++)
                if (gpuir__op_int_attr(m, gpuir__op_at(m, f->ops[j]), GPUIR__KEY_FUSION, 0) == g)
                    B->runs_at[i] = (uint32_t)j + 1;
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t v = B->root[gpuir__op_operand(m, op, k) - 1] - 1;
            B->last_use[v] = (uint32_t)i + 1;
            if (B->runs_at[i] > B->last_run[v]) B->last_run[v] = B->runs_at[i];
        }
        if (op->result)             /* a reshape's uses are uses of what it views */
            B->root[op->result - 1] = op->kind == GPUIR_OP_RESHAPE ? B->root[gpuir__op_operand(m, op, 0) - 1]
                                                                  : op->result;
    }
    gpuir__scratch_free(B->m, group_end);
    return GPUIR_OK;
}

/* A dense constant becomes an initialized module global read through
   memref.get_global: nothing writes it, so place gives it a resident device
   copy, uploaded on a program's first run instead of filled and copied in
   every run. 0 when the constant is not dense. */
static uint32_t gpuir__bufferize_dense_constant(gpuir__bufferizer *B, const gpuir__op *op) {
    gpuir_module *m = B->m;
    const gpuir__attr *v = gpuir__attr_get(m, op, GPUIR__KEY_VALUE);
    gpuir_type t = gpuir__value_at(m, op->result)->type;
    if (!v || v->kind != GPUIR__ATTR_DENSE || (int64_t)v->n != gpuir__type_count(&t) || (gpuir_dtype)v->i != t.dtype)
        return 0;
    uint32_t data = v->off;
    char name[32];
    for (;; B->next_const++) {       /* the first free name; those below it are taken */
        snprintf(name, sizeof name, "__const_%u", B->next_const);
        if (!gpuir__find_global(m, name)) break;
    }
    if (gpuir__declare_global(m, name, &t)) return 0;
    uint32_t g = gpuir__find_global(m, name);
    size_t bytes = (size_t)gpuir__type_count(&t) * gpuir_dtype_size(t.dtype);
    if (gpuir__global_set_data(m, g, gpuir__bytes_at(m, data), bytes)) return 0;
    m->globals[g - 1].initialized = true;
    uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
    gpuir__attr_push_symbol(m, "name", name);
    gpuir_type mt = gpuir__as_memref(t, GPUIR_SPACE_HOST);
    return gpuir__build_value(m, GPUIR_OP_MEMREF_GET_GLOBAL, NULL, 0, first, 1, &mt).id;
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
    if (op->kind == GPUIR_OP_CONSTANT && (B->buf[result - 1] = gpuir__bufferize_dense_constant(B, op)) != 0)
        return GPUIR_OK;
    if (op->kind == GPUIR_OP_RESHAPE) {
        gpuir_type t = gpuir__value_at(m, result)->type;
        gpuir_type in_type = gpuir__value_at(m, ids[0])->type;   /* as the tensor it was */
        const gpuir_type *in = &in_type;
        in_type.kind = GPUIR_TYPE_TENSOR;
        in_type.space = GPUIR_SPACE_HOST;
        if (!gpuir__type_is_static(&t) || !gpuir__type_is_static(in)) {
            gpuir__tbuf bi, bt;
            return gpuir__pass_fail(m, op, GPUIR_ERR_SHAPE, "bufferize: @%s: reshape %s -> %s: dynamic dims in a "
                               "reshape are not supported (a reshape is a view of static shapes)",
                               gpuir__string(m, gpuir__func_at(m, op->func)->name), gpuir__tstr(&bi, in),
                               gpuir__tstr(&bt, &t));
        }
        t = gpuir__as_memref(t, gpuir__value_at(m, ids[0])->type.space);
        B->buf[result - 1] = gpuir__build_value(m, GPUIR_OP_MEMREF_RESHAPE, ids, 1, 0, 0, &t).id;
        return B->buf[result - 1] ? GPUIR_OK : m->ctx->result;
    }
    if (m->ctx->result) return m->ctx->result;
    uint32_t attrs = op->attrs, n_attrs = op->n_attrs;
    gpuir_op_kind kind = op->kind;
    uint32_t out = gpuir__bufferize_dest(B, op, index);
    if (!out) return m->ctx->result;
    ids[n] = out;
    if (!gpuir__build_op_ex(m, kind, ids, n + 1, attrs, n_attrs, NULL, false)) return m->ctx->result;
    B->buf[result - 1] = out;
    return GPUIR_OK;
}

/* Frees each buffer the function allocated after the last use of it or of
   a view of it, unless it (or a view) is returned. */
static gpuir_result gpuir__insert_deallocs(gpuir_module *m, uint32_t fid, const bool *owned,
                                           gpuir_op_kind dealloc) {
    gpuir__func *f = gpuir__func_at(m, fid);
    size_t n = stbds_arrlenu(f->ops), nv = stbds_arrlenu(m->values) + 1;
    uint32_t *last = (uint32_t *)gpuir__scratch_calloc(m, nv, sizeof *last);
    if (!last) return gpuir__oom(m->ctx, "placing deallocations");
    for (size_t i = 0; i < n; i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        bool ret = op->kind == GPUIR_OP_RETURN;
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t v = gpuir__view_base(m, gpuir__op_operand(m, op, k));
            if (last[v - 1] != UINT32_MAX) last[v - 1] = ret ? UINT32_MAX : (uint32_t)i + 1;
        }
    }
    gpuir__rewrite_begin(m, fid);
    for (size_t i = 0; i < n; i++) {
        uint32_t op_id = gpuir__func_at(m, fid)->ops[i];
        const gpuir__op *op = gpuir__op_at(m, op_id);
        uint32_t freed[GPUIR_MAX_OPERANDS], n_freed = 0;
        for (uint32_t k = 0; k < op->n_operands; k++) {
            uint32_t v = gpuir__view_base(m, gpuir__op_operand(m, op, k));
            bool dup = false;
            for (uint32_t j = 0; j < n_freed; j++) dup |= freed[j] == v;
            if (owned[v - 1] && last[v - 1] == i + 1 && !dup) freed[n_freed++] = v;
        }
        gpuir__rewrite_keep(m, op_id);
        for (uint32_t j = 0; j < n_freed; j++) gpuir__build_op(m, dealloc, &freed[j], 1, 0, 0, NULL);
    }
    gpuir__rewrite_end(m, true);
    gpuir__scratch_free(m, last);
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
    B.buf = (uint32_t *)gpuir__scratch_calloc(m, cap, sizeof *B.buf);
    B.root = (uint32_t *)gpuir__scratch_calloc(m, cap, sizeof *B.root);
    B.last_use = (uint32_t *)gpuir__scratch_calloc(m, cap, sizeof *B.last_use);
    B.last_run = (uint32_t *)gpuir__scratch_calloc(m, cap, sizeof *B.last_run);
    B.runs_at = (uint32_t *)gpuir__scratch_calloc(m, n + 1, sizeof *B.runs_at);
    B.owned = (bool *)gpuir__scratch_calloc(m, cap, sizeof *B.owned);
    if (!B.buf || !B.root || !B.last_use || !B.last_run || !B.runs_at || !B.owned) r = gpuir__oom(m->ctx, "bufferize");
    const gpuir__func *f = gpuir__func_at(m, fid);
    for (size_t i = 0; !r && i < stbds_arrlenu(f->params); i++) B.root[f->params[i] - 1] = f->params[i];
    if (!r) r = gpuir__bufferize_schedule(&B, fid);
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
    gpuir__scratch_free(m, B.buf);
    gpuir__scratch_free(m, B.root);
    gpuir__scratch_free(m, B.last_use);
    gpuir__scratch_free(m, B.last_run);
    gpuir__scratch_free(m, B.runs_at);
    gpuir__scratch_free(m, B.owned);
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
// compile-time constants. A buffer with dynamic dims is always a parameter:
// its size is known only where it is allocated, on the host, and it travels
// with the buffer (codegen passes a parameter's dynamic dims after the
// buffers). Reads: ir, build. Writes: ir.

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
    uint32_t *written, *outs, *from, *to;  /* stb_ds scratch of one group, reused: not a */
} gpuir__outliner;                         /* malloc per list per kernel */

/* Empties a scratch list, keeping its memory. */
static void gpuir__ids_clear(uint32_t *ids) {
    if (ids) stbds_header(ids)->length = 0;
}

enum { GPUIR__INTERNAL = 1, GPUIR__PARAM = 2 };   /* what a buffer is to some kernel */

static bool gpuir__ids_have(const uint32_t *ids, uint32_t v) {
    for (size_t i = 0; i < stbds_arrlenu(ids); i++)
        if (ids[i] == v) return true;
    return false;
}

static bool gpuir__is_splat_fill(const gpuir_module *m, const gpuir__op *op) {
    const gpuir__attr *v = op->kind == GPUIR_OP_CONSTANT && !op->result ? gpuir__attr_get(m, op, GPUIR__KEY_VALUE) : NULL;
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
        int64_t key = gpuir__op_int_attr(m, op, GPUIR__KEY_FUSION, -1 - (int64_t)i);
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

/* Whether op may read a splat as a private copy in its kernel: codegen
   loads the operands of a matmul and of a softmax, and the source of a
   transpose/reshape/broadcast, from kernel parameters, so a splat they
   read stays a host buffer (copied in). */
static bool gpuir__outline_reads_private(const gpuir__op *op) {
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    return cls != GPUIR__CLASS_MATMUL && cls != GPUIR__CLASS_SOFTMAX && cls != GPUIR__CLASS_TRANSPOSE &&
           cls != GPUIR__CLASS_RESHAPE && cls != GPUIR__CLASS_BROADCAST;
}

/* Sorts a group's buffers into parameters, temporaries and splats. */
static void gpuir__outline_classify(gpuir__outliner *O, size_t g) {
    gpuir_module *m = O->m;
    gpuir__group *grp = &O->groups[g];
    uint32_t *written = O->written, *outs = O->outs;
    gpuir__ids_clear(written);
    gpuir__ids_clear(outs);
    for (size_t i = 0; i < stbds_arrlenu(grp->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, grp->ops[i]);
        for (uint32_t k = 0; k + 1 < op->n_operands; k++) {
            uint32_t b = gpuir__op_operand(m, op, k);
            if (gpuir__ids_have(written, b) || gpuir__ids_have(grp->params, b) ||
                gpuir__ids_have(grp->splats, b))
                continue;
            if (O->splat_of[b - 1] && gpuir__type_is_static(&gpuir__value_at(m, b)->type) &&
                gpuir__outline_reads_private(op))
                stbds_arrput(grp->splats, b);
            else stbds_arrput(grp->params, b);
        }
        uint32_t dst = gpuir__op_operand(m, op, op->n_operands - 1);
        if (!gpuir__ids_have(written, dst)) stbds_arrput(written, dst);
    }
    for (size_t i = 0; i < stbds_arrlenu(written); i++) {
        uint32_t b = written[i];
        bool from_host = gpuir__op_at(m, gpuir__value_at(m, b)->def_op) == NULL ||
                         gpuir__op_at(m, gpuir__value_at(m, b)->def_op)->kind != GPUIR_OP_MEMREF_ALLOC;
        bool sized_at_run_time = !gpuir__type_is_static(&gpuir__value_at(m, b)->type);
        if (from_host || sized_at_run_time || gpuir__used_outside(O, g, b)) {
            if (!gpuir__ids_have(grp->params, b)) stbds_arrput(outs, b);
        } else if (!gpuir__ids_have(grp->params, b)) {
            stbds_arrput(grp->internal, b);
        }
    }
    for (size_t i = 0; i < stbds_arrlenu(outs); i++) stbds_arrput(grp->params, outs[i]);
    O->written = written;               /* kept (they may have moved) for the next group */
    O->outs = outs;
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
    gpuir__join_name(name, sizeof name, gpuir__string(m, gpuir__func_at(m, O->fid)->name), 100, "_k", (int64_t)g);
    uint32_t kid = gpuir__func_begin(m, name), *from = O->from, *to = O->to;
    gpuir__ids_clear(from);
    gpuir__ids_clear(to);
    if (!kid) return m->ctx->result;
    m->funcs[kid - 1].kernel = true;
    grp->kernel = kid;
    for (size_t i = 0; i < stbds_arrlenu(grp->params); i++) {
        char pname[32];
        gpuir__join_name(pname, sizeof pname, "arg", 3, "", (int64_t)i);
        gpuir_value p = gpuir__param(m, pname, gpuir__as_memref(gpuir__value_at(m, grp->params[i])->type,
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
    O->from = from;                     /* kept (they may have moved) for the next kernel */
    O->to = to;
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
    bool *owned = (bool *)gpuir__scratch_calloc(m, stbds_arrlenu(m->values) + 1, sizeof *owned);
    if (!owned) return gpuir__oom(m->ctx, "placing deallocations");
    const gpuir__func *f = gpuir__func_at(m, fid);
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (op->kind == alloc) owned[op->result - 1] = true;
    }
    gpuir_result r = gpuir__insert_deallocs(m, fid, owned, dealloc);
    gpuir__scratch_free(m, owned);
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
        gpuir__join_name(sym, sizeof sym, GPUIR__KERNEL_MODULE "::", sizeof GPUIR__KERNEL_MODULE + 1,
                         gpuir__string(m, m->funcs[grp->kernel - 1].name), -1);
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
    O.splat_of = (uint32_t *)gpuir__scratch_calloc(m, nv, sizeof *O.splat_of);
    O.group_of = (uint32_t *)gpuir__scratch_calloc(m, n + 1, sizeof *O.group_of);
    O.user_group = (uint32_t *)gpuir__scratch_calloc(m, nv, sizeof *O.user_group);
    O.many_groups = (bool *)gpuir__scratch_calloc(m, nv, sizeof *O.many_groups);
    O.host_use = (bool *)gpuir__scratch_calloc(m, nv, sizeof *O.host_use);
    O.group_by_key = (size_t *)gpuir__scratch_calloc(m, n + 2, sizeof *O.group_by_key);
    O.role = (uint8_t *)gpuir__scratch_calloc(m, nv, sizeof *O.role);
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
    stbds_arrfree(O.written);
    stbds_arrfree(O.outs);
    stbds_arrfree(O.from);
    stbds_arrfree(O.to);
    gpuir__scratch_free(m, O.splat_of);
    gpuir__scratch_free(m, O.group_of);
    gpuir__scratch_free(m, O.user_group);
    gpuir__scratch_free(m, O.many_groups);
    gpuir__scratch_free(m, O.host_use);
    gpuir__scratch_free(m, O.group_by_key);
    gpuir__scratch_free(m, O.role);
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
// used as it is. Views (memref.reshape) are followed to their base buffer:
// the analysis, the copies and the frees are the base's, and a kernel gets a
// view of the base's twin. The pass writes a report of each decision and
// its reason. Reads: ir, build, verify (gpuir__verify_placed: a function that
// places its own buffers must place them all). Writes: ir, the placement report.

enum { GPUIR__ON_HOST = 1, GPUIR__ON_DEVICE = 2 };   /* where a buffer's data is current */

typedef struct gpuir__placer {
    gpuir_module *m;
    uint32_t fid;
    uint32_t *twin;         /* host buffer id - 1 -> its device twin (0: none yet); of a
                               view, the same view of its base's twin */
    uint8_t *valid;         /* host base buffer id - 1 -> GPUIR__ON_* bits */
    bool *device_only;      /*      -> a memref.alloc no host op touches (nor a view's user) */
    bool *wrote_on_device;  /*      -> a kernel has written it */
    bool *written;          /*      -> some op of the function writes it */
    bool *launched;         /*      -> some launch of the function takes it (or a view of it) */
    char kernel_name[GPUIR_MAX_NAME];   /* the kernel of the launch being placed (a copy: the
                                           string pool grows as placement adds attributes) */
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

/* gpuir__param_access of parameters 0..n-1 of kernel k at once, in one
   walk over its ops (n <= GPUIR_MAX_OPERANDS, at most its parameters):
   place and async ask about every operand of every launch. */
static void gpuir__params_access(const gpuir_module *m, const gpuir__func *k, uint32_t n,
                                 bool *reads_first, bool *writes) {
    GPUIR_ASSERT(n <= GPUIR_MAX_OPERANDS && n <= stbds_arrlenu(k->params));
    bool written[GPUIR_MAX_OPERANDS] = {false};
    for (uint32_t i = 0; i < n; i++) reads_first[i] = writes[i] = false;
    for (size_t j = 0; j < stbds_arrlenu(k->ops); j++) {
        const gpuir__op *op = gpuir__op_at(m, k->ops[j]);
        bool dps = !op->result && gpuir__class_computes(gpuir__info(op->kind)->cls);
        int dst_param = -1;
        for (uint32_t a = 0; a < op->n_operands; a++) {
            uint32_t v = gpuir__op_operand(m, op, a);
            for (uint32_t i = 0; i < n; i++) {
                if (k->params[i] != v) continue;
                bool is_dst = dps && a + 1 == op->n_operands;
                if (!is_dst && !written[i]) reads_first[i] = true;
                if (is_dst) { writes[i] = true; dst_param = (int)i; }
            }
        }
        if (dst_param >= 0) written[dst_param] = true;
    }
}

/* How reports name a buffer: %param, @global, or "buffer of op N (kind)". */
static const char *gpuir__buffer_label(const gpuir_module *m, uint32_t b, char *buf, size_t size) {
    const gpuir__value *v = gpuir__value_at(m, b);
    const gpuir__op *def = gpuir__op_at(m, v->def_op);
    if (!def) snprintf(buf, size, "%%%s", gpuir__string(m, v->name));
    else if (def->kind == GPUIR_OP_MEMREF_GET_GLOBAL)
        snprintf(buf, size, "@%s", gpuir__string(m, gpuir__attr_get(m, def, GPUIR__KEY_NAME)->off));
    else {                      /* "buffer of op N (kind)", without snprintf: most buffers */
        char num[32];
        gpuir__join_name(num, sizeof num, "buffer of op ", SIZE_MAX, "", v->def_op);
        gpuir__join_name(buf, size, num, SIZE_MAX, " (", -1);
        size_t n = strlen(buf);
        gpuir__join_name(buf + n, size - n, gpuir_op_name(def->kind), SIZE_MAX, ")", -1);
    }
    return buf;
}

/* A report line about buffer b: fmt is text with one %s (no other
   conversion), which becomes arg (a kernel, a reason, a buffer). Built
   from plain appends: place writes a line for most buffers. */
static void gpuir__place_note(gpuir__placer *P, uint32_t b, const char *fmt, const char *arg) {
    char name[GPUIR_MAX_NAME + 32];
    gpuir__str *r = &P->report;
    const char *at = strstr(fmt, "%s");
    GPUIR_ASSERT(at && !strchr(at + 2, '%') && !memchr(fmt, '%', (size_t)(at - fmt)));
    gpuir__str_puts(r, "@");
    gpuir__str_puts(r, gpuir__string(P->m, gpuir__func_at(P->m, P->fid)->name));
    gpuir__str_puts(r, ": ");
    gpuir__str_puts(r, gpuir__buffer_label(P->m, b, name, sizeof name));
    gpuir__str_puts(r, ": ");
    gpuir__str_append(r, fmt, (size_t)(at - fmt));
    gpuir__str_puts(r, arg);
    gpuir__str_puts(r, at + 2);
    gpuir__str_puts(r, "\n");
}

/* Marks memref.allocs that only launches and frees touch: device-only. */
static gpuir_result gpuir__place_find_device_only(gpuir__placer *P) {
    gpuir_module *m = P->m;
    const gpuir__func *f = gpuir__func_at(m, P->fid);
    bool *host_use = (bool *)gpuir__scratch_calloc(m, stbds_arrlenu(m->values) + 1, sizeof *host_use);
    if (!host_use) return gpuir__oom(m->ctx, "place");
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (op->kind == GPUIR_OP_GPU_LAUNCH_FUNC || op->kind == GPUIR_OP_MEMREF_DEALLOC ||
            op->kind == GPUIR_OP_MEMREF_RESHAPE ||    /* making a view touches no data, */
            op->kind == GPUIR_OP_MEMREF_ALLOC)        /* nor does sizing a buffer like another */
            continue;
        for (uint32_t k = 0; k < op->n_operands; k++)
            host_use[gpuir__view_base(m, gpuir__op_operand(m, op, k)) - 1] = true;
    }
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (op->kind == GPUIR_OP_MEMREF_ALLOC && op->result && !host_use[op->result - 1])
            P->device_only[op->result - 1] = true;
    }
    gpuir__scratch_free(m, host_use);
    return GPUIR_OK;
}

/* Marks every buffer some op of the function writes: destinations of
   buffer-form ops and copies, and launch operands the kernel writes. */
static void gpuir__place_find_written(gpuir__placer *P) {
    gpuir_module *m = P->m;
    const gpuir__func *f = gpuir__func_at(m, P->fid);
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        bool dps = !op->result && gpuir__class_computes(gpuir__info(op->kind)->cls);
        int dst = dps ? (int)op->n_operands - 1 : op->kind == GPUIR_OP_MEMREF_COPY ? 1 :
                  op->kind == GPUIR_OP_GPU_MEMCPY ? 0 : -1;
        if (dst >= 0) P->written[gpuir__view_base(m, gpuir__op_operand(m, op, (uint32_t)dst)) - 1] = true;
        if (op->kind != GPUIR_OP_GPU_LAUNCH_FUNC) continue;
        const gpuir__attr *sym = gpuir__attr_get(m, op, GPUIR__KEY_KERNEL);
        const gpuir__func *k = gpuir__func_at(m, gpuir__launch_kernel(m, sym->off));
        bool reads[GPUIR_MAX_OPERANDS], writes[GPUIR_MAX_OPERANDS];
        gpuir__params_access(m, k, op->n_operands, reads, writes);
        for (uint32_t a = 0; a < op->n_operands; a++) {
            uint32_t b = gpuir__view_base(m, gpuir__op_operand(m, op, a));
            if (writes[a]) P->written[b - 1] = true;
            P->launched[b - 1] = true;
        }
    }
}

/* A global nothing in the function writes has a resident device copy: the
   runtime uploads it once and again only after it is rebound, so no copy
   and no free appear here. */
static uint32_t gpuir__place_resident(gpuir__placer *P, uint32_t b) {
    gpuir_module *m = P->m;
    const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, b)->def_op);
    if (!def || def->kind != GPUIR_OP_MEMREF_GET_GLOBAL || P->written[b - 1]) return 0;
    gpuir_type t = gpuir__as_memref(gpuir__value_at(m, b)->type, GPUIR_SPACE_DEVICE);
    gpuir_value d = gpuir__build_value(m, GPUIR_OP_MEMREF_GET_GLOBAL, NULL, 0, def->attrs, def->n_attrs, &t);
    P->twin[b - 1] = d.id;
    P->valid[b - 1] |= GPUIR__ON_DEVICE;
    gpuir__place_note(P, b, "resident on the device: uploaded once, reused by later runs (read first by @%s)",
                      P->kernel_name);
    return d.id;
}

static uint32_t gpuir__place_twin(gpuir__placer *P, uint32_t b);

/* Points the sizes of an allocation (its operands) that are device-only
   buffers at their twins: their host allocations go. */
static void gpuir__place_size_operands(gpuir__placer *P, uint32_t op_id) {
    gpuir_module *m = P->m;
    for (uint32_t k = 0; k < gpuir__op_at(m, op_id)->n_operands; k++) {
        uint32_t s = gpuir__op_operand(m, gpuir__op_at(m, op_id), k);
        if (P->device_only[s - 1]) {
            uint32_t twin = gpuir__place_twin(P, s);
            m->uses[gpuir__op_at(m, op_id)->operands + k] = twin;
        }
    }
}

/* The device buffer standing for host buffer b, allocated on first need:
   its dynamic dims sized like b's, or, when b lives on the device alone,
   like those b's allocation was sized from. */
static uint32_t gpuir__place_twin(gpuir__placer *P, uint32_t b) {
    gpuir_module *m = P->m;
    if (P->twin[b - 1]) return P->twin[b - 1];
    uint32_t resident = gpuir__place_resident(P, b);
    if (resident) return resident;
    gpuir_type t = gpuir__as_memref(gpuir__value_at(m, b)->type, GPUIR_SPACE_DEVICE);
    const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, b)->def_op);
    uint32_t d;
    if (gpuir__type_is_static(&t)) {
        d = gpuir__build_value(m, GPUIR_OP_GPU_ALLOC, NULL, 0, 0, 0, &t).id;
    } else if (P->device_only[b - 1] && def && def->kind == GPUIR_OP_MEMREF_ALLOC) {
        uint32_t def_id = gpuir__value_at(m, b)->def_op;
        gpuir__place_size_operands(P, def_id);
        def = gpuir__op_at(m, def_id);
        uint32_t sizes[GPUIR_MAX_OPERANDS];
        for (uint32_t k = 0; k < def->n_operands; k++) sizes[k] = gpuir__op_operand(m, def, k);
        d = gpuir__build_value(m, GPUIR_OP_GPU_ALLOC, sizes, def->n_operands, def->attrs, def->n_attrs, &t).id;
    } else {
        int64_t pairs[2 * GPUIR_MAX_RANK];
        size_t n = 0;
        for (int i = 0; i < t.rank; i++)
            if (t.dims[i] == GPUIR_DYN) { pairs[n++] = 0; pairs[n++] = i; }
        uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
        gpuir__attr_push_ints(m, "dims_of", n, pairs);
        d = gpuir__build_value(m, GPUIR_OP_GPU_ALLOC, &b, 1, first, 1, &t).id;
    }
    P->twin[b - 1] = d;
    return d;
}

/* The device memory standing for host buffer b: its twin, or, when b is a
   view, the same view of its base's twin (made once). */
static uint32_t gpuir__place_device_of(gpuir__placer *P, uint32_t b) {
    gpuir_module *m = P->m;
    const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, b)->def_op);
    if (!def || def->kind != GPUIR_OP_MEMREF_RESHAPE || P->twin[b - 1]) return gpuir__place_twin(P, b);
    uint32_t of = gpuir__op_operand(m, def, 0), src = gpuir__place_device_of(P, of);
    gpuir_type t = gpuir__as_memref(gpuir__value_at(m, b)->type, GPUIR_SPACE_DEVICE);
    P->twin[b - 1] = gpuir__build_value(m, GPUIR_OP_MEMREF_RESHAPE, &src, 1, 0, 0, &t).id;
    char name[GPUIR_MAX_NAME + 32];
    gpuir__place_note(P, b, "a view of %s: no copy of its own (the base's copies serve it)",
                      gpuir__buffer_label(m, gpuir__view_base(m, b), name, sizeof name));
    return P->twin[b - 1];
}

static void gpuir__place_copy(gpuir__placer *P, uint32_t dst, uint32_t src) {
    uint32_t ids[2] = {dst, src};
    gpuir__build_op(P->m, GPUIR_OP_GPU_MEMCPY, ids, 2, 0, 0, NULL);
}

/* A launch: twins for its host buffers, H2D where the kernel reads stale data. */
static void gpuir__place_launch(gpuir__placer *P, const gpuir__op *op) {
    gpuir_module *m = P->m;
    const gpuir__attr *sym = gpuir__attr_get(m, op, GPUIR__KEY_KERNEL);
    uint32_t kid = gpuir__launch_kernel(m, sym->off);
    gpuir__join_name(P->kernel_name, sizeof P->kernel_name, gpuir__string(m, gpuir__func_at(m, kid)->name),
                     SIZE_MAX, "", -1);
    const char *kname = P->kernel_name;
    uint32_t host[GPUIR_MAX_OPERANDS] = {0}, dev[GPUIR_MAX_OPERANDS] = {0}, n = op->n_operands;
    uint32_t attrs = op->attrs, n_attrs = op->n_attrs;
    bool writes[GPUIR_MAX_OPERANDS] = {false}, reads[GPUIR_MAX_OPERANDS];
    for (uint32_t i = 0; i < n; i++) host[i] = dev[i] = gpuir__op_operand(m, op, i);
    gpuir__params_access(m, gpuir__func_at(m, kid), n, reads, writes);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t b = gpuir__view_base(m, host[i]);
        bool reads_first = reads[i];
        if (gpuir__value_at(m, b)->type.space == GPUIR_SPACE_DEVICE) continue;   /* already there */
        bool fresh = !P->twin[b - 1];
        uint32_t twin = gpuir__place_twin(P, b);
        dev[i] = gpuir__place_device_of(P, host[i]);     /* the twin, or a view of it */
        if (fresh && P->device_only[b - 1])
            gpuir__place_note(P, b, "device only: no host op touches it (first used by @%s)", kname);
        if (reads_first && !(P->valid[b - 1] & GPUIR__ON_DEVICE) && (P->valid[b - 1] & GPUIR__ON_HOST)) {
            gpuir__place_copy(P, twin, b);
            P->valid[b - 1] |= GPUIR__ON_DEVICE;
            gpuir__place_note(P, b, "H2D before @%s, which reads it", kname);
        } else if (fresh && !reads_first && !P->device_only[b - 1]) {
            gpuir__place_note(P, b, writes[i] ? "no H2D: @%s writes all of it before any read"
                                              : "no H2D: @%s neither reads nor writes it", kname);
        }
    }
    gpuir__build_op(m, GPUIR_OP_GPU_LAUNCH_FUNC, dev, n, attrs, n_attrs, NULL);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t b = gpuir__view_base(m, host[i]);
        if (writes[i] && gpuir__value_at(m, b)->type.space != GPUIR_SPACE_DEVICE) {
            P->valid[b - 1] = GPUIR__ON_DEVICE;
            P->wrote_on_device[b - 1] = true;
        }
    }
}

/* D2H of b (the base of a view) before a host op reads it, if the host
   copy is stale. */
static void gpuir__place_fetch(gpuir__placer *P, uint32_t b, const char *why) {
    b = gpuir__view_base(P->m, b);
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
    uint32_t src_base = gpuir__view_base(m, src), dst_base = gpuir__view_base(m, dst);
    if (!P->twin[src_base - 1] || P->valid[src_base - 1] != GPUIR__ON_DEVICE) return false;
    if (!P->twin[dst_base - 1] && !P->launched[dst_base - 1]) {     /* no kernel uses dst: no twin */
        gpuir__place_copy(P, dst, gpuir__place_device_of(P, src));
        P->valid[dst_base - 1] = GPUIR__ON_HOST;
        gpuir__place_note(P, dst, "%s: its source is current on the device and no kernel uses this buffer, "
                          "so the copy is device to host", "memref.copy");
        return true;
    }
    gpuir__place_copy(P, gpuir__place_device_of(P, dst), gpuir__place_device_of(P, src));
    P->valid[dst_base - 1] = GPUIR__ON_DEVICE;
    P->wrote_on_device[dst_base - 1] = true;
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
    bool reads = op->kind != GPUIR_OP_MEMREF_DEALLOC &&    /* freeing reads nothing, */
                 op->kind != GPUIR_OP_MEMREF_RESHAPE;      /* nor does making a view */
    for (uint32_t i = 0; i < n && reads; i++)
        if ((int)i != written) gpuir__place_fetch(P, ids[i], ret ? "it is returned" : "the host reads it");
    if (ret) {                       /* parameters kernels wrote go back to the caller */
        const gpuir__func *f = gpuir__func_at(m, P->fid);
        for (size_t i = 0; i < stbds_arrlenu(f->params); i++)
            if (P->wrote_on_device[f->params[i] - 1])
                gpuir__place_fetch(P, f->params[i], "an out-parameter a kernel wrote");
    }
    if (written >= 0) P->valid[gpuir__view_base(m, ids[written]) - 1] = GPUIR__ON_HOST;
    gpuir__rewrite_keep(m, op_id);
}

static bool gpuir__is_placed(const gpuir_module *m, const gpuir__func *f);

static gpuir_result gpuir__place_func(gpuir_module *m, uint32_t fid) {
    if (gpuir__is_placed(m, gpuir__func_at(m, fid)))       /* it manages its own: all of them */
        return gpuir__verify_placed(m, fid);
    size_t nv = stbds_arrlenu(m->values) + 2 * stbds_arrlenu(gpuir__func_at(m, fid)->ops) + 2;
    gpuir__placer P;
    memset(&P, 0, sizeof P);
    P.m = m;
    P.fid = fid;
    P.twin = (uint32_t *)gpuir__scratch_calloc(m, nv, sizeof *P.twin);
    P.valid = (uint8_t *)gpuir__scratch_calloc(m, nv, sizeof *P.valid);
    P.device_only = (bool *)gpuir__scratch_calloc(m, nv, sizeof *P.device_only);
    P.wrote_on_device = (bool *)gpuir__scratch_calloc(m, nv, sizeof *P.wrote_on_device);
    P.written = (bool *)gpuir__scratch_calloc(m, nv, sizeof *P.written);
    P.launched = (bool *)gpuir__scratch_calloc(m, nv, sizeof *P.launched);
    gpuir_result r = P.twin && P.valid && P.device_only && P.wrote_on_device && P.written && P.launched ? GPUIR_OK
                   : gpuir__oom(m->ctx, "place");
    const gpuir__func *f = gpuir__func_at(m, fid);
    for (size_t i = 0; !r && i < stbds_arrlenu(f->params); i++) P.valid[f->params[i] - 1] = GPUIR__ON_HOST;
    if (!r) r = gpuir__place_find_device_only(&P);
    if (!r) gpuir__place_find_written(&P);
    size_t n = stbds_arrlenu(f->ops);
    bool rewriting = r == GPUIR_OK;
    if (rewriting) gpuir__rewrite_begin(m, fid);
    for (size_t i = 0; !r && i < n; i++) {
        uint32_t op_id = gpuir__func_at(m, fid)->ops[i];
        const gpuir__op *op = gpuir__op_at(m, op_id);
        if (op->kind == GPUIR_OP_GPU_LAUNCH_FUNC) gpuir__place_launch(&P, op);
        else if ((op->kind == GPUIR_OP_MEMREF_ALLOC || op->kind == GPUIR_OP_MEMREF_DEALLOC ||
                  op->kind == GPUIR_OP_MEMREF_RESHAPE) &&
                 P.device_only[gpuir__view_base(m, op->kind == GPUIR_OP_MEMREF_ALLOC ? op->result
                                                   : gpuir__op_operand(m, op, 0)) - 1])
            continue;                                /* lives on the device alone */
        else if (op->kind == GPUIR_OP_MEMREF_GET_GLOBAL) {
            P.valid[op->result - 1] = GPUIR__ON_HOST;
            gpuir__rewrite_keep(m, op_id);
        } else {
            if (op->kind == GPUIR_OP_MEMREF_ALLOC) gpuir__place_size_operands(&P, op_id);
            gpuir__place_host_op(&P, op_id);
        }
        r = m->ctx->result;
    }
    if (rewriting) gpuir__rewrite_end(m, r == GPUIR_OK);
    if (!r) r = gpuir__remove_dead_ops(m, fid);    /* host views of resident globals */
    if (!r) r = gpuir__free_allocs(m, fid, GPUIR_OP_GPU_ALLOC, GPUIR_OP_GPU_DEALLOC);
    const char *text = gpuir__str_cstr(&P.report);
    size_t at = stbds_arrlenu(m->placement_report), len = strlen(text);
    stbds_arrsetlen(m->placement_report, at + len);     /* appended in one copy */
    if (len) memcpy(m->placement_report + at, text, len);
    gpuir__str_free(&P.report);
    gpuir__scratch_free(m, P.twin);
    gpuir__scratch_free(m, P.valid);
    gpuir__scratch_free(m, P.device_only);
    gpuir__scratch_free(m, P.wrote_on_device);
    gpuir__scratch_free(m, P.written);
    gpuir__scratch_free(m, P.launched);
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
    return m && m->placement_report ? m->placement_report : "";
}

/* ====================================================================== */
// >>pass.configure
// Gives each gpu.launch_func without grid and block a launch configuration
// from its kernel's shape: a thread per output element in blocks of 256 for
// elementwise kernels; a block per output element for reductions (block
// size from the reduced extent, 32..256); 64x64 output tiles on 16x16
// threads for matmuls (128x128 for the tensor-core kernels and for f32
// register-tiled ones with at least one such tile per multiprocessor,
// 64x64 below that: gpuir__matmul_form_of), batches (and split-K's k
// slices) on z; a thread per output for a column reduction (split-K's
// sum: gpuir__reduce_is_columns). A launch that has them keeps them (the
// text and the API override). A kernel with dynamic sizes gets a block (256
// threads, or from a static reduced extent) and no grid: the runtime sizes
// the grid from the buffers it launches on (the kernel loops over what the
// grid does not cover).
// Reads: ir. Writes: grid and block attributes.

static int64_t gpuir__ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Whether a kernel has a parameter with a dynamic dim. */
static bool gpuir__kernel_is_dynamic(const gpuir_module *m, const gpuir__func *k) {
    for (size_t i = 0; i < stbds_arrlenu(k->params); i++)
        if (!gpuir__type_is_static(&gpuir__value_at(m, k->params[i])->type)) return true;
    return false;
}

/* The kernel a matmul gets. Codegen and configure agree through
   gpuir__matmul_form; every form handles edges that are not tile multiples.
   The module's target (gpuir_module_set_target) decides what the device
   can run and how many tiles fill it.
   - TENSOR_CORES (sm_75 and later): f16 or bf16 operands (mma.sync m16n8k16, fragments
     through ldmatrix), or f32 with `tf32` (m16n8k8), f32 accumulators,
     128x128 block tiles, three cp.async stages in dynamic shared memory,
     tiles in bands of 8 tile rows (A not transposed; K and, unless B is
     transposed, N multiples of 8 halves or 4 floats: tiles travel as
     16-byte rows). A `tf32` matmul that cannot takes the plain kernel,
     which rounds its operands the same way.
   - REGISTER_TILED: f32, A and B not transposed, M and N >= 128, at least
     as many 128x128 tiles (batches count) as the device has
     multiprocessors (gpuir__module_sm_count; with fewer, SMs would idle,
     and REGISTER_TILED_64's four times as many blocks fill them): 128x128 block
     tiles, 16-deep stages, 256 threads each computing 8x8 outputs as 2x2
     sub-tiles of 4x4 (warp tiles of 32x64, bank-conflict-free 16-byte
     shared reads, two shared-memory stages filled from registers, tiles in
     bands of 8 tile rows for L2 reuse; gpuir__cg_matmul_rt).
   - REGISTER_TILED_64: the same kernel with 64x64 block tiles, each thread
     computing 4x4 outputs, for f32 matmuls with M and N >= 64 that would
     get fewer 128x128 tiles: four times the blocks to fill the device.
   - WGMMA (EXPERIMENTAL, opt in with the matmul's `wgmma` attribute; not
     yet validated on hardware): f16 or bf16 with B transposed and K a
     multiple of 8 (rows of a multiple of 16 bytes: what a tensor map's
     global strides need): 128x128 tiles, GPUIR__WG_THREADS (384) threads,
     warp-specialized: a producer warpgroup copies the tiles with TMA bulk
     tensor copies into 128-byte-swizzled stages on mbarriers, two consumer
     warpgroups multiply 64 rows each with wgmma.mma_async m64n128k16 (sm_90a;
     gpuir__cg_matmul_wgmma). The kernel takes two tensor maps after its
     buffers, which the runtime encodes at launch (gpuir__launch_tensor_maps).
     Launched with another block size it takes PLAIN. Without the
     attribute, or for a target other than sm_90 (wgmma is Hopper's alone),
     such a matmul takes TENSOR_CORES.
   - PLAIN: 64x64 tiles, any dtype, transposes and dynamic sizes.
   Split-K (a matmul with k_slices = S, from the split-k pass, which asks
   gpuir__matmul_tile_for what tile an unsplit matmul would get): the form
   comes from the operands' dtype (the result is f32 partials), the S
   slices count as batches (the grid's z, and the tiles that decide
   REGISTER_TILED), and each form's k loop runs over the tile's slice
   (gpuir__cg_mm_krange); WGMMA is not split. */
/* The device the heuristics plan for when the module was not told its
   own (gpuir_module_set_target): an H100 SXM, sm_90 with 132
   multiprocessors. */
#define GPUIR__DEFAULT_SM 90
#define GPUIR__DEFAULT_SM_COUNT 132

static int64_t gpuir__module_sm_count(const gpuir_module *m) {
    return m->target.sm_count > 0 ? m->target.sm_count : GPUIR__DEFAULT_SM_COUNT;
}
static int gpuir__module_sm(const gpuir_module *m) { return m->target.sm > 0 ? m->target.sm : GPUIR__DEFAULT_SM; }

GPUIRDEF void gpuir_module_set_target(gpuir_module *m, gpuir_target target) {
    if (!m) return;
    m->target.sm = target.sm > 0 ? target.sm : 0;
    m->target.sm_count = target.sm_count > 0 ? target.sm_count : 0;
}
GPUIRDEF gpuir_target gpuir_module_target(const gpuir_module *m) {
    gpuir_target t = {0, 0};
    if (m) { t.sm = gpuir__module_sm(m); t.sm_count = (int)gpuir__module_sm_count(m); }
    return t;
}

/* The WGMMA kernel's block: a producer warpgroup and two consumers. */
#define GPUIR__WG_THREADS 384

typedef enum gpuir__matmul_form {
    GPUIR__MATMUL_PLAIN,
    GPUIR__MATMUL_REGISTER_TILED,
    GPUIR__MATMUL_REGISTER_TILED_64,
    GPUIR__MATMUL_TENSOR_CORES,
    GPUIR__MATMUL_WGMMA,
} gpuir__matmul_form;

/* The form of a static matmul op with operand A of type *a and result
   (or destination) *o: the operand dtype decides (a split-K matmul's
   result is f32 whatever its operands); the result's leading dims, k
   slices included, count as batches. */
static gpuir__matmul_form gpuir__matmul_form_for(const gpuir_module *m, const gpuir__op *op, const gpuir_type *a,
                                                 const gpuir_type *o) {
    bool ta = gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_A), tb = gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_B);
    int64_t M = o->dims[o->rank - 2], N = o->dims[o->rank - 1], K = a->dims[a->rank - 1];
    gpuir_dtype d = a->dtype;
    int64_t vec = 16 / (int64_t)gpuir_dtype_size(d);       /* elements in 16 bytes */
    bool tf32 = gpuir__op_flag(m, op, GPUIR__KEY_TF32), half = d == GPUIR_F16 || d == GPUIR_BF16;
    bool split = gpuir__attr_get(m, op, GPUIR__KEY_K_SLICES) != NULL;
    int sm = gpuir__module_sm(m);
    if (half && !split && gpuir__op_flag(m, op, GPUIR__KEY_WGMMA) && sm == 90 && !ta && tb && K % vec == 0)
        return GPUIR__MATMUL_WGMMA;
    if ((half || tf32) && sm >= 75 && !ta && K % vec == 0 && (tb || N % vec == 0)) return GPUIR__MATMUL_TENSOR_CORES;
    if (d != GPUIR_F32 || tf32 || ta || tb || M < 64 || N < 64) return GPUIR__MATMUL_PLAIN;
    int64_t tiles = gpuir__ceil_div(M, 128) * gpuir__ceil_div(N, 128) * (gpuir__type_count(o) / (M * N));
    return M >= 128 && N >= 128 && tiles >= gpuir__module_sm_count(m) ? GPUIR__MATMUL_REGISTER_TILED
                                                                  : GPUIR__MATMUL_REGISTER_TILED_64;
}

/* The tile edge of the form gpuir__matmul_form_for gives (64 or 128). */
static int64_t gpuir__matmul_tile_for(const gpuir_module *m, const gpuir__op *op, const gpuir_type *a,
                                      const gpuir_type *o) {
    gpuir__matmul_form form = gpuir__matmul_form_for(m, op, a, o);
    return form == GPUIR__MATMUL_PLAIN || form == GPUIR__MATMUL_REGISTER_TILED_64 ? 64 : 128;
}

static gpuir__matmul_form gpuir__matmul_form_of(const gpuir_module *m, const gpuir__func *k) {
    if (gpuir__kernel_is_dynamic(m, k)) return GPUIR__MATMUL_PLAIN;   /* the fast forms are specialized to the sizes */
    for (size_t i = 0; i < stbds_arrlenu(k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, k->ops[i]);
        if (op->kind != GPUIR_OP_MATMUL || op->result) continue;
        const gpuir_type *a = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
        const gpuir_type *o = &gpuir__value_at(m, gpuir__op_operand(m, op, 2))->type;
        return gpuir__matmul_form_for(m, op, a, o);
    }
    return GPUIR__MATMUL_PLAIN;
}

/* Whether any kernel of the module runs on tensor cores (its source then
   carries the mma and cp.async helpers). */
static bool gpuir__module_uses_tensor_cores(const gpuir_module *m) {
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++) {
        gpuir__matmul_form form = m->funcs[f].kernel ? gpuir__matmul_form_of(m, &m->funcs[f]) : GPUIR__MATMUL_PLAIN;
        if (form == GPUIR__MATMUL_TENSOR_CORES || form == GPUIR__MATMUL_WGMMA) return true;
    }
    return false;
}

/* Whether any kernel of the module uses wgmma (its source then carries the
   wgmma helpers, and NVRTC compiles it for sm_90a on an sm_90 device). */
static bool gpuir__module_uses_wgmma(const gpuir_module *m) {
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++)
        if (m->funcs[f].kernel && gpuir__matmul_form_of(m, &m->funcs[f]) == GPUIR__MATMUL_WGMMA) return true;
    return false;
}

/* The transpose a kernel consists of when it swaps the last two dims and
   keeps the leading ones (a batch of matrix transposes), or NULL: such a
   kernel goes through 32x32 shared-memory tiles. */
static const gpuir__op *gpuir__kernel_tiled_transpose(const gpuir_module *m, const gpuir__func *k) {
    const gpuir__op *found = NULL;
    if (gpuir__kernel_is_dynamic(m, k)) return NULL;    /* the tiles are laid out for static sizes */
    for (size_t i = 0; i < stbds_arrlenu(k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, k->ops[i]);
        if (op->result || !gpuir__class_computes(gpuir__info(op->kind)->cls)) continue;
        if (op->kind != GPUIR_OP_TRANSPOSE || found) return NULL;
        found = op;
    }
    if (!found) return NULL;
    const gpuir__attr *perm = gpuir__attr_get(m, found, GPUIR__KEY_PERM);
    const int64_t *pv = gpuir__ints_at(m, perm->off);
    int r = (int)perm->n;
    if (r < 2 || pv[r - 1] != r - 2 || pv[r - 2] != r - 1) return NULL;
    for (int i = 0; i + 2 < r; i++)
        if (pv[i] != i) return NULL;
    return found;
}

/* Elements per thread of an elementwise kernel: 4 (16-byte accesses) when
   every op is elementwise or a splat, every parameter is 4-byte (f32, i32)
   with the shape of the widest destination (no broadcasting) and the count
   is a multiple of 4; else 1. Codegen and configure agree through it. */
static int gpuir__kernel_vector_width(const gpuir_module *m, const gpuir__func *k) {
    const gpuir_type *S = NULL;
    for (size_t i = 0; i < stbds_arrlenu(k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, k->ops[i]);
        gpuir__op_class cls = gpuir__info(op->kind)->cls;
        if (op->result || !gpuir__class_computes(cls)) continue;
        if (!gpuir__is_elementwise(cls) && cls != GPUIR__CLASS_CONSTANT) return 1;
        const gpuir__attr *v = cls == GPUIR__CLASS_CONSTANT ? gpuir__attr_get(m, op, GPUIR__KEY_VALUE) : NULL;
        if (v && v->kind == GPUIR__ATTR_DENSE) return 1;
        const gpuir_type *d = &gpuir__value_at(m, gpuir__op_operand(m, op, op->n_operands - 1))->type;
        if (cls != GPUIR__CLASS_CONSTANT && (!S || gpuir__type_count(d) > gpuir__type_count(S))) S = d;
    }
    if (!S || gpuir__type_count(S) <= 0 || gpuir__type_count(S) % 4 != 0) return 1;
    for (size_t i = 0; i < stbds_arrlenu(k->params); i++) {
        const gpuir_type *t = &gpuir__value_at(m, k->params[i])->type;
        if ((t->dtype != GPUIR_F32 && t->dtype != GPUIR_I32) || t->rank != S->rank ||
            memcmp(t->dims, S->dims, (size_t)S->rank * sizeof S->dims[0]) != 0)
            return 1;
    }
    return 4;
}

/* The kernel's widest output: the destination with the most elements, or
   its reduction's, softmax's or matmul's; *reduced gets the elements
   reduced per output (-1 when that is dynamic). */
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
        if (cls == GPUIR__CLASS_SOFTMAX) {          /* a block per row, like a reduction */
            const gpuir_type *src = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
            *kind_out = op->kind;
            *reduced = src->rank ? src->dims[src->rank - 1] : 1;
            return dst;
        }
        if (cls == GPUIR__CLASS_MATMUL || cls == GPUIR__CLASS_REDUCE) {
            *kind_out = op->kind;
            best = dst;
            const gpuir__attr *axes = cls == GPUIR__CLASS_REDUCE ? gpuir__attr_get(m, op, GPUIR__KEY_AXES) : NULL;
            const gpuir_type *src = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
            for (uint32_t a = 0; axes && a < axes->n && *reduced >= 0; a++) {
                int64_t extent = src->dims[gpuir__ints_at(m, axes->off)[a]];
                *reduced = extent == GPUIR_DYN ? -1 : *reduced * extent;
            }
            return best;
        }
        if (!best || gpuir__type_count(dst) > gpuir__type_count(best)) best = dst;
    }
    return best;
}

/* Threads per block of a kernel that gives a block to each output of a
   reduction (32..256, enough for the reduced extent) or each row of a
   softmax (about 16 elements of the row per thread, up to 1024); 256 when
   the extent is dynamic, and for every other kernel. */
static int64_t gpuir__row_block(gpuir_op_kind kind, int64_t reduced) {
    bool reduction = gpuir__info(kind)->cls == GPUIR__CLASS_REDUCE;
    if ((!reduction && kind != GPUIR_OP_SOFTMAX) || reduced < 0) return 256;
    int64_t block = 32;
    while (reduction ? block < 256 && block < reduced : block < 1024 && block * 16 < reduced) block *= 2;
    return block;
}

/* Whether a (static) kernel's reduction is a column reduction: a thread
   per output (gpuir__cg_reduce_columns). */
static bool gpuir__kernel_reduces_columns(const gpuir_module *m, const gpuir__func *k) {
    for (size_t i = 0; i < stbds_arrlenu(k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, k->ops[i]);
        if (!op->result && gpuir__info(op->kind)->cls == GPUIR__CLASS_REDUCE) return gpuir__reduce_is_columns(m, op);
    }
    return false;
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
        gpuir__matmul_form form = gpuir__matmul_form_of(m, k);
        int64_t tile = form == GPUIR__MATMUL_PLAIN || form == GPUIR__MATMUL_REGISTER_TILED_64 ? 64 : 128;
        grid[0] = gpuir__ceil_div(N, tile);
        grid[1] = gpuir__ceil_div(M, tile);
        grid[2] = M > 0 && N > 0 ? count / (M * N) : 1;
        block[0] = block[1] = 16;
        if (form == GPUIR__MATMUL_WGMMA) block[0] = GPUIR__WG_THREADS, block[1] = 1;
    } else if (gpuir__info(kind)->cls == GPUIR__CLASS_REDUCE && gpuir__kernel_reduces_columns(m, k)) {
        block[0] = 256;
        grid[0] = gpuir__ceil_div(count, 256);
    } else if (gpuir__info(kind)->cls == GPUIR__CLASS_REDUCE) {
        block[0] = gpuir__row_block(kind, reduced);
        grid[0] = count;
    } else if (gpuir__kernel_tiled_transpose(m, k)) {   /* a 32x32 tile per block */
        const gpuir_type *src = &gpuir__value_at(m, gpuir__op_operand(m, gpuir__kernel_tiled_transpose(m, k), 0))->type;
        int64_t R = src->dims[src->rank - 2], Cc = src->dims[src->rank - 1];
        block[0] = 256;
        grid[0] = R && Cc ? gpuir__ceil_div(R, 32) * gpuir__ceil_div(Cc, 32) * (count / (R * Cc)) : 1;
    } else if (kind == GPUIR_OP_SOFTMAX) {
        block[0] = gpuir__row_block(kind, reduced);
        grid[0] = reduced ? count / reduced : 1;
        if (grid[0] < 1) grid[0] = 1;
    } else {
        block[0] = 256;
        grid[0] = gpuir__ceil_div(count / gpuir__kernel_vector_width(m, k), 256);
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
            if (op->kind != GPUIR_OP_GPU_LAUNCH_FUNC || gpuir__attr_get(m, op, GPUIR__KEY_GRID) ||
                gpuir__attr_get(m, op, GPUIR__KEY_BLOCK))
                continue;
            const gpuir__attr *sym = gpuir__attr_get(m, op, GPUIR__KEY_KERNEL);
            const gpuir__func *k = gpuir__func_at(m, gpuir__launch_kernel(m, sym->off));
            if (gpuir__kernel_is_dynamic(m, k)) {     /* the runtime gives the grid */
                gpuir_op_kind kind;
                int64_t reduced, block[3] = {256, 1, 1};
                gpuir__kernel_output(m, k, &kind, &reduced);
                block[0] = gpuir__row_block(kind, reduced);
                gpuir__set_ints_attr(m, op_id, GPUIR__KEY_BLOCK, 3, block);
                continue;
            }
            int64_t grid[3], block[3];
            gpuir__choose_launch(m, k, grid, block);
            gpuir__set_ints_attr(m, op_id, GPUIR__KEY_GRID, 3, grid);
            gpuir__set_ints_attr(m, op_id, GPUIR__KEY_BLOCK, 3, block);
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
            const gpuir__attr *sym = gpuir__attr_get(m, op, GPUIR__KEY_KERNEL);
            int64_t bytes;
            gpuir_result r = gpuir__kernel_shared_bytes(
                m, gpuir__func_at(m, gpuir__launch_kernel(m, sym->off)), &bytes);
            if (r) return r;
            if (bytes) gpuir__set_int_attr(m, op_id, GPUIR__KEY_SMEM, bytes);
        }
    }
    return GPUIR_OK;
}

/* ====================================================================== */
// >>pass.async
// Puts the device work of each placed host function on streams, from the
// data flow: every buffer's last writer and its readers since (host buffers
// too, for the copies; a view's accesses are its base buffer's). A stream op (gpu.alloc, gpu.memcpy,
// gpu.launch_func, gpu.dealloc) joins the stream whose latest op it
// depends on, so it adds no false dependency; else a new stream (at most
// GPUIR__ASYNC_STREAMS); else the stream idle longest. It waits for an event
// of another stream only when its stream does not already know that work is
// done (each stream and the host keep a vector clock: the latest op of each
// stream known finished). A gpu.alloc joins the stream of its buffer's first
// user. The host waits (gpu.wait {events = [...]}) only before a host op that
// touches memory a pending op reads or writes, and before the return (the
// caller's arrays). Without this pass everything runs in program order on
// one stream, and copies return when done.
// Reads: ir, pass.place (gpuir__param_access). Writes: stream, wait and
// event attributes; gpu.wait ops.

#define GPUIR__ASYNC_STREAMS 4        /* streams the pass opens per function, at most */

enum { GPUIR__ASYNC_HOST = -1, GPUIR__ASYNC_UNPLACED = -2 };  /* a host op; a gpu.alloc not yet on a stream */

/* The ops that touched a buffer last: its writer and the readers since
   (op positions, 1-based; 0: none). */
typedef struct gpuir__async_buffer {
    uint32_t writer;
    uint32_t *readers;                /* stb_ds */
} gpuir__async_buffer;

/* One buffer an op touches, and whether the op writes it. */
typedef struct gpuir__async_access {
    uint32_t value;
    bool writes;
} gpuir__async_access;

typedef struct gpuir__async {
    gpuir_module *m;
    uint32_t fid;
    int *stream;                      /* position - 1 -> stream, or GPUIR__ASYNC_HOST/_UNPLACED */
    int64_t *event;                   /* position - 1 -> the event recorded after it, or -1 */
    int64_t **waits;                  /* position - 1 -> stb_ds: events its stream waits for first */
    int64_t **host_waits;             /* position - 1 -> stb_ds: events the host waits for first */
    uint32_t (*known)[GPUIR__ASYNC_STREAMS];  /* position - 1 -> vector clock when it finished */
    uint32_t stream_known[GPUIR__ASYNC_STREAMS][GPUIR__ASYNC_STREAMS];
    uint32_t host_known[GPUIR__ASYNC_STREAMS];
    uint32_t tail[GPUIR__ASYNC_STREAMS];     /* the latest op on each stream */
    uint32_t busy_tail[GPUIR__ASYNC_STREAMS];  /* its latest copy or launch */
    int n_streams;
    int64_t n_events;
    gpuir__async_buffer *buffers;     /* value id - 1 */
    gpuir__async_access *accesses;    /* stb_ds: the current op's */
    uint32_t *deps;                   /* stb_ds: the current op's */
} gpuir__async;

/* A view's accesses are its base buffer's. */
static void gpuir__async_touch(gpuir__async *A, uint32_t value, bool writes) {
    gpuir__async_access a;
    a.value = gpuir__view_base(A->m, value);
    a.writes = writes;
    stbds_arrput(A->accesses, a);
}

/* The buffers an op touches. An allocation touches only its result (the
   buffers it is sized like lend their sizes, known on the host, not their
   data). The return ends the caller's loan of its arrays: it "writes"
   every host buffer of the function. */
static void gpuir__async_accesses(gpuir__async *A, const gpuir__op *op) {
    gpuir_module *m = A->m;
    if (A->accesses) stbds_header(A->accesses)->length = 0;
    gpuir__op_class cls = gpuir__info(op->kind)->cls;
    if (cls == GPUIR__CLASS_ALLOC || cls == GPUIR__CLASS_GLOBAL) {
        if (op->result) gpuir__async_touch(A, op->result, true);
    } else if (cls == GPUIR__CLASS_DEALLOC) {
        gpuir__async_touch(A, gpuir__op_operand(m, op, 0), true);
    } else if (cls == GPUIR__CLASS_COPY) {      /* gpu.memcpy dst, src; memref.copy src, dst */
        bool gpu = op->kind == GPUIR_OP_GPU_MEMCPY;
        gpuir__async_touch(A, gpuir__op_operand(m, op, gpu ? 1 : 0), false);
        gpuir__async_touch(A, gpuir__op_operand(m, op, gpu ? 0 : 1), true);
    } else if (cls == GPUIR__CLASS_LAUNCH) {
        const gpuir__attr *sym = gpuir__attr_get(m, op, GPUIR__KEY_KERNEL);
        const gpuir__func *k = gpuir__func_at(m, gpuir__launch_kernel(m, sym->off));
        bool reads[GPUIR_MAX_OPERANDS], writes[GPUIR_MAX_OPERANDS];
        gpuir__params_access(m, k, op->n_operands, reads, writes);
        for (uint32_t i = 0; i < op->n_operands; i++)
            gpuir__async_touch(A, gpuir__op_operand(m, op, i), writes[i]);
    } else if (cls == GPUIR__CLASS_RETURN) {
        for (size_t v = 1; v <= stbds_arrlenu(m->values); v++) {
            const gpuir__value *val = gpuir__value_at(m, (uint32_t)v);
            if (val->func == A->fid && val->type.kind == GPUIR_TYPE_MEMREF && val->type.space == GPUIR_SPACE_HOST)
                gpuir__async_touch(A, (uint32_t)v, true);
        }
    } else if (gpuir__class_computes(cls) && !op->result) {   /* a host op in buffer form */
        for (uint32_t i = 0; i < op->n_operands; i++)
            gpuir__async_touch(A, gpuir__op_operand(m, op, i), i + 1 == op->n_operands);
    }
}

/* The ops the op at `pos` must follow (into A->deps); then it is the latest
   user of what it touches. */
static void gpuir__async_depend(gpuir__async *A, uint32_t pos) {
    if (A->deps) stbds_header(A->deps)->length = 0;
    for (size_t i = 0; i < stbds_arrlenu(A->accesses); i++) {
        gpuir__async_buffer *b = &A->buffers[A->accesses[i].value - 1];
        if (b->writer) stbds_arrput(A->deps, b->writer);
        for (size_t r = 0; A->accesses[i].writes && r < stbds_arrlenu(b->readers); r++)
            stbds_arrput(A->deps, b->readers[r]);
    }
    for (int pass = 0; pass < 2; pass++)         /* reads first: a write of the same buffer wins */
        for (size_t i = 0; i < stbds_arrlenu(A->accesses); i++) {
            gpuir__async_buffer *b = &A->buffers[A->accesses[i].value - 1];
            if (A->accesses[i].writes != (pass == 1)) continue;
            if (pass == 1) {
                b->writer = pos;
                if (b->readers) stbds_header(b->readers)->length = 0;
            } else if (!stbds_arrlenu(b->readers) || stbds_arrlast(b->readers) != pos) {
                stbds_arrput(b->readers, pos);
            }
        }
}

static int64_t gpuir__async_event_of(gpuir__async *A, uint32_t pos) {
    if (A->event[pos - 1] < 0) A->event[pos - 1] = A->n_events++;
    return A->event[pos - 1];
}

/* The latest op in A->deps on each stream (0: none). */
static void gpuir__async_latest(const gpuir__async *A, uint32_t latest[GPUIR__ASYNC_STREAMS]) {
    memset(latest, 0, GPUIR__ASYNC_STREAMS * sizeof *latest);
    for (size_t i = 0; i < stbds_arrlenu(A->deps); i++) {
        uint32_t d = A->deps[i];
        int t = A->stream[d - 1];
        if (t >= 0 && d > latest[t]) latest[t] = d;
    }
}

/* Makes `clock` (a stream's or the host's) wait for the dependencies
   `latest` (gpuir__async_latest; consumed) it does not yet know finished;
   the events waited go to *events. */
static void gpuir__async_wait_for(gpuir__async *A, uint32_t latest[GPUIR__ASYNC_STREAMS],
                                  uint32_t clock[GPUIR__ASYNC_STREAMS], int self, int64_t **events) {
    if (self >= 0) latest[self] = 0;          /* stream order covers its own */
    for (;;) {                                 /* latest first: its clock may cover the others */
        int t = -1;
        for (int u = 0; u < A->n_streams; u++)
            if (latest[u] > clock[u] && (t < 0 || latest[u] > latest[t])) t = u;
        if (t < 0) return;
        stbds_arrput(*events, gpuir__async_event_of(A, latest[t]));
        for (int u = 0; u < GPUIR__ASYNC_STREAMS; u++)
            if (A->known[latest[t] - 1][u] > clock[u]) clock[u] = A->known[latest[t] - 1][u];
        latest[t] = 0;
    }
}

/* The stream for a stream op: among the streams whose latest copy or
   launch it depends on (allocations and frees cost nothing to wait
   behind), the one with its latest dependency; else a new stream; else the
   stream whose last copy or launch is oldest. */
static int gpuir__async_choose_stream(gpuir__async *A, const uint32_t latest[GPUIR__ASYNC_STREAMS]) {
    int s = -1;
    for (int t = 0; t < A->n_streams; t++)
        if (latest[t] && latest[t] >= A->busy_tail[t] && (s < 0 || latest[t] > latest[s])) s = t;
    if (s >= 0) return s;
    if (A->n_streams < GPUIR__ASYNC_STREAMS) return A->n_streams++;
    s = 0;
    for (int t = 1; t < A->n_streams; t++)
        if (A->busy_tail[t] < A->busy_tail[s]) s = t;
    return s;
}

static void gpuir__async_stream_op(gpuir__async *A, uint32_t pos, gpuir_op_kind kind) {
    uint32_t latest[GPUIR__ASYNC_STREAMS];
    gpuir__async_latest(A, latest);              /* gpu.allocs not yet placed do not count */
    int s = gpuir__async_choose_stream(A, latest);
    for (size_t i = 0; i < stbds_arrlenu(A->deps); i++) {
        uint32_t d = A->deps[i];
        if (A->stream[d - 1] != GPUIR__ASYNC_UNPLACED) continue;
        A->stream[d - 1] = s;               /* a gpu.alloc, issued earlier on this stream */
        A->known[d - 1][s] = d;
    }
    uint32_t *clock = A->stream_known[s];
    gpuir__async_wait_for(A, latest, clock, s, &A->waits[pos - 1]);
    clock[s] = pos;
    A->tail[s] = pos;
    if (kind == GPUIR_OP_GPU_MEMCPY || kind == GPUIR_OP_GPU_LAUNCH_FUNC) A->busy_tail[s] = pos;
    A->stream[pos - 1] = s;
    memcpy(A->known[pos - 1], clock, sizeof A->known[pos - 1]);
}

static void gpuir__sort_ints(int64_t *v, size_t n) {
    for (size_t i = 1; i < n; i++)            /* insertion sort: the lists are short */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

/* Renumbers events in the order of the ops that record them. */
static gpuir_result gpuir__async_number_events(gpuir__async *A, size_t n) {
    int64_t *order = (int64_t *)GPUIR_MALLOC(((size_t)A->n_events + 1) * sizeof *order), next = 0;
    if (!order) return gpuir__oom(A->m->ctx, "async");
    for (size_t i = 0; i < n; i++)
        if (A->event[i] >= 0) order[A->event[i]] = next, A->event[i] = next++;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < stbds_arrlenu(A->waits[i]); k++) A->waits[i][k] = order[A->waits[i][k]];
        for (size_t k = 0; k < stbds_arrlenu(A->host_waits[i]); k++) A->host_waits[i][k] = order[A->host_waits[i][k]];
        gpuir__sort_ints(A->waits[i], stbds_arrlenu(A->waits[i]));
        gpuir__sort_ints(A->host_waits[i], stbds_arrlenu(A->host_waits[i]));
    }
    GPUIR_FREE(order);
    return GPUIR_OK;
}

/* What a report calls a stream op: its kernel, or the op and its buffer. */
static const char *gpuir__async_op_label(const gpuir_module *m, const gpuir__op *op, char *buf, size_t size) {
    char b[GPUIR_MAX_NAME + 32];
    if (op->kind == GPUIR_OP_GPU_LAUNCH_FUNC)
        snprintf(buf, size, "@%s", gpuir__string(m, gpuir__func_at(m, gpuir__launch_target(
                                    m, gpuir__string(m, gpuir__attr_get(m, op, GPUIR__KEY_KERNEL)->off)))->name));
    else if (op->kind == GPUIR_OP_GPU_MEMCPY)
        snprintf(buf, size, "the copy into %s", gpuir__buffer_label(m, gpuir__op_operand(m, op, 0), b, sizeof b));
    else if (op->kind == GPUIR_OP_GPU_DEALLOC)
        snprintf(buf, size, "the free of %s", gpuir__buffer_label(m, gpuir__op_operand(m, op, 0), b, sizeof b));
    else snprintf(buf, size, "%s", gpuir_op_name(op->kind));
    return buf;
}

/* One report line per wait: who waits, for which event, recorded after
   what on which stream. */
static gpuir_result gpuir__async_report(gpuir__async *A, const uint32_t *ops, size_t n) {
    gpuir_module *m = A->m;
    uint32_t *recorder = (uint32_t *)gpuir__scratch_calloc(A->m, (size_t)A->n_events + 1, sizeof *recorder);
    if (!recorder) return gpuir__oom(m->ctx, "async");
    for (size_t i = 0; i < n; i++)
        if (A->event[i] >= 0) recorder[A->event[i]] = (uint32_t)i;
    gpuir__str s = {m->placement_report};       /* terminated: appends overwrite the terminator */
    const char *fname = gpuir__string(m, gpuir__func_at(m, A->fid)->name);
    char who[GPUIR_MAX_NAME + 64], what[GPUIR_MAX_NAME + 64];
    for (size_t i = 0; i < n; i++) {
        const gpuir__op *op = gpuir__op_at(m, ops[i]);
        for (int host = 0; host < 2; host++) {
            int64_t *list = host ? A->host_waits[i] : A->waits[i];
            if (!stbds_arrlenu(list)) continue;
            if (host) snprintf(who, sizeof who, "before %s, the host", gpuir_op_name(op->kind));
            else {
                char label[GPUIR_MAX_NAME + 48];
                snprintf(who, sizeof who, "%s on stream %d", gpuir__async_op_label(m, op, label, sizeof label),
                         A->stream[i]);
            }
            for (size_t k = 0; k < stbds_arrlenu(list); k++) {
                uint32_t at = recorder[list[k]];
                gpuir__str_appendf(&s, "@%s: %s waits for event %lld: %s on stream %d\n", fname, who,
                                   (long long)list[k], gpuir__async_op_label(m, gpuir__op_at(m, ops[at]), what,
                                                                             sizeof what), A->stream[at]);
            }
        }
    }
    m->placement_report = s.buf;
    gpuir__scratch_free(A->m, recorder);
    return GPUIR_OK;
}

/* Writes the analysis into the function: stream attributes and gpu.waits. */
static void gpuir__async_rewrite(gpuir__async *A) {
    gpuir_module *m = A->m;
    size_t n = stbds_arrlenu(gpuir__func_at(m, A->fid)->ops);
    uint32_t *ops = (uint32_t *)GPUIR_MALLOC(n * sizeof *ops);
    if (!ops) { gpuir__oom(m->ctx, "async"); return; }
    memcpy(ops, gpuir__func_at(m, A->fid)->ops, n * sizeof *ops);
    if (gpuir__async_number_events(A, n) || gpuir__async_report(A, ops, n)) { GPUIR_FREE(ops); return; }
    gpuir__rewrite_begin(m, A->fid);
    for (size_t i = 0; i < n; i++) {
        if (stbds_arrlenu(A->host_waits[i])) {
            uint32_t first = (uint32_t)stbds_arrlenu(m->attrs);
            gpuir__attr_push_ints(m, "events", stbds_arrlenu(A->host_waits[i]), A->host_waits[i]);
            gpuir__build_op(m, GPUIR_OP_GPU_WAIT, NULL, 0, first, 1, NULL);
        }
        if (A->stream[i] >= 0) {
            gpuir__set_int_attr(m, ops[i], GPUIR__KEY_STREAM, A->stream[i]);
            if (stbds_arrlenu(A->waits[i]))
                gpuir__set_ints_attr(m, ops[i], GPUIR__KEY_WAIT, stbds_arrlenu(A->waits[i]), A->waits[i]);
            if (A->event[i] >= 0) gpuir__set_int_attr(m, ops[i], GPUIR__KEY_EVENT, A->event[i]);
        }
        gpuir__rewrite_keep(m, ops[i]);
    }
    gpuir__rewrite_end(m, m->ctx->result == GPUIR_OK);
    GPUIR_FREE(ops);
}

/* Whether a function has stream ops, none of them on a stream yet. */
static bool gpuir__async_wanted(const gpuir_module *m, const gpuir__func *f) {
    bool any = false;
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (gpuir__attr_get(m, op, GPUIR__KEY_STREAM) || gpuir__attr_get(m, op, GPUIR__KEY_EVENTS)) return false;
        any = any || gpuir__op_is_stream_op(op->kind);
    }
    return any;
}

static void gpuir__async_free(gpuir__async *A, size_t n, size_t nv) {
    for (size_t i = 0; A->waits && i < n; i++) stbds_arrfree(A->waits[i]);
    for (size_t i = 0; A->host_waits && i < n; i++) stbds_arrfree(A->host_waits[i]);
    for (size_t i = 0; A->buffers && i < nv; i++) stbds_arrfree(A->buffers[i].readers);
    gpuir__scratch_free(A->m, A->stream);
    gpuir__scratch_free(A->m, A->event);
    gpuir__scratch_free(A->m, A->waits);
    gpuir__scratch_free(A->m, A->host_waits);
    gpuir__scratch_free(A->m, A->known);
    gpuir__scratch_free(A->m, A->buffers);
    stbds_arrfree(A->accesses);
    stbds_arrfree(A->deps);
}

static gpuir_result gpuir__async_func(gpuir_module *m, uint32_t fid) {
    if (!gpuir__async_wanted(m, gpuir__func_at(m, fid))) return GPUIR_OK;
    size_t n = stbds_arrlenu(gpuir__func_at(m, fid)->ops), nv = stbds_arrlenu(m->values);
    gpuir__async A;
    memset(&A, 0, sizeof A);
    A.m = m;
    A.fid = fid;
    A.stream = (int *)gpuir__scratch_calloc(m, n + 1, sizeof *A.stream);
    A.event = (int64_t *)gpuir__scratch_calloc(m, n + 1, sizeof *A.event);
    A.waits = (int64_t **)gpuir__scratch_calloc(m, n + 1, sizeof *A.waits);
    A.host_waits = (int64_t **)gpuir__scratch_calloc(m, n + 1, sizeof *A.host_waits);
    A.known = (uint32_t(*)[GPUIR__ASYNC_STREAMS])gpuir__scratch_calloc(m, n + 1, sizeof *A.known);
    A.buffers = (gpuir__async_buffer *)gpuir__scratch_calloc(m, nv + 1, sizeof *A.buffers);
    if (!A.stream || !A.event || !A.waits || !A.host_waits || !A.known || !A.buffers) {
        gpuir__async_free(&A, n, nv);
        return gpuir__oom(m->ctx, "async");
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t pos = (uint32_t)i + 1;
        const gpuir__op *op = gpuir__op_at(m, gpuir__func_at(m, fid)->ops[i]);
        A.event[i] = -1;
        A.stream[i] = GPUIR__ASYNC_HOST;
        gpuir__async_accesses(&A, op);
        gpuir__async_depend(&A, pos);
        if (op->kind == GPUIR_OP_GPU_ALLOC) A.stream[i] = GPUIR__ASYNC_UNPLACED;
        else if (gpuir__op_is_stream_op(op->kind)) gpuir__async_stream_op(&A, pos, op->kind);
        else if (op->kind == GPUIR_OP_GPU_WAIT)              /* a bare gpu.wait: the whole device */
            for (int t = 0; t < A.n_streams; t++) A.host_known[t] = A.tail[t];
        else {
            uint32_t latest[GPUIR__ASYNC_STREAMS];
            gpuir__async_latest(&A, latest);
            gpuir__async_wait_for(&A, latest, A.host_known, GPUIR__ASYNC_HOST, &A.host_waits[i]);
        }
    }
    gpuir__async_rewrite(&A);
    gpuir__async_free(&A, n, nv);
    return m->ctx->result;
}

static gpuir_result gpuir__pass_async(gpuir_module *m) {
    return gpuir__each_host_func(m, gpuir__async_func);
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
        snprintf(global, sizeof global, "@%s", gpuir__string(m, gpuir__attr_get(m, def, GPUIR__KEY_NAME)->off));
        name = global;
    }
    gpuir__str_appendf(s, "  v%u [shape=box, style=filled, fillcolor=%s, label=\"%s%s%s\"];\n", v,
                       device ? "orange" : "lightblue", name, *name ? "\\n" : "",
                       gpuir__tstr(&b, &val->type));
}

/* A launch's node: the kernel's name, the ops fused into it (up to 8) and
   its grid and block; inside its stream's cluster when it has a stream. */
static void gpuir__dot_launch(gpuir__str *s, gpuir_module *m, uint32_t fid, uint32_t op_id, uint32_t kid) {
    const gpuir__op *op = gpuir__op_at(m, op_id);
    const gpuir__func *k = gpuir__func_at(m, kid);
    int64_t stream = gpuir__op_int_attr(m, op, GPUIR__KEY_STREAM, -1);
    if (stream >= 0)
        gpuir__str_appendf(s, "  subgraph cluster_%u_s%lld {\n  label=\"stream %lld\"; style=dashed;\n", fid,
                           (long long)stream, (long long)stream);
    gpuir__str_appendf(s, "  op%u [shape=ellipse, label=\"@%s", op_id, gpuir__string(m, k->name));
    size_t shown = 0;
    for (size_t i = 0; i < stbds_arrlenu(k->ops); i++) {
        const gpuir__op *o = gpuir__op_at(m, k->ops[i]);
        if (o->kind == GPUIR_OP_RETURN) continue;
        if (shown++ < 8) gpuir__str_appendf(s, "%s%s", shown == 1 ? "\\n" : ", ", gpuir_op_name(o->kind));
    }
    if (shown > 8) gpuir__str_appendf(s, ", ... (%zu ops)", shown);
    const gpuir__attr *g = gpuir__attr_get(m, op, GPUIR__KEY_GRID), *b = gpuir__attr_get(m, op, GPUIR__KEY_BLOCK);
    if (g && b) {
        const int64_t *gi = gpuir__ints_at(m, g->off), *bi = gpuir__ints_at(m, b->off);
        gpuir__str_appendf(s, "\\ngrid %lldx%lldx%lld, block %lldx%lldx%lld", (long long)gi[0], (long long)gi[1],
                           (long long)gi[2], (long long)bi[0], (long long)bi[1], (long long)bi[2]);
    }
    gpuir__str_appendf(s, "\"];\n%s", stream >= 0 ? "  }\n" : "");
}

/* What the colours, shapes and edges mean. */
static void gpuir__dot_legend(gpuir__str *s) {
    gpuir__str_appendf(s, "subgraph cluster_legend {\n  label=\"legend\"; style=dotted;\n"
        "  legend_host [shape=box, style=filled, fillcolor=lightblue, label=\"host buffer\"];\n"
        "  legend_dev [shape=box, style=filled, fillcolor=orange, label=\"device buffer\"];\n"
        "  legend_view [shape=box, style=filled, fillcolor=orange, label=\"a view of it\"];\n"
        "  legend_launch [shape=ellipse, label=\"@kernel\\nits fused ops\\ngrid, block\"];\n"
        "  subgraph cluster_legend_stream {\n  label=\"stream N (dashed: the launches on it)\"; style=dashed;\n"
        "  legend_launch;\n  }\n"
        "  legend_host -> legend_dev [label=\"H2D copy\", color=blue];\n"
        "  legend_dev -> legend_launch [label=\"read\"];\n"
        "  legend_launch -> legend_view [label=\"write\"];\n"
        "  legend_dev -> legend_view [label=\"view\", style=dashed];\n"
        "  legend_view -> legend_host [label=\"D2H copy\", color=red];\n"
        "  legend_dev -> legend_dev [label=\"D2D copy\", color=purple];\n"
        "}\n");
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
        if (op->kind == GPUIR_OP_MEMREF_RESHAPE) {
            gpuir__str_appendf(s, "  v%u -> v%u [label=\"view\", style=dashed];\n", gpuir__op_operand(m, op, 0),
                               op->result);
        } else if (op->kind == GPUIR_OP_GPU_MEMCPY) {
            uint32_t dst = gpuir__op_operand(m, op, 0), src = gpuir__op_operand(m, op, 1);
            bool to_dev = gpuir__value_at(m, dst)->type.space == GPUIR_SPACE_DEVICE;
            bool from_dev = gpuir__value_at(m, src)->type.space == GPUIR_SPACE_DEVICE;
            int64_t stream = gpuir__op_int_attr(m, op, GPUIR__KEY_STREAM, -1);
            char on[40] = "";
            if (stream >= 0) snprintf(on, sizeof on, "\\nstream %lld", (long long)stream);
            gpuir__str_appendf(s, "  v%u -> v%u [label=\"%s%s\", color=%s];\n", src, dst,
                               to_dev && from_dev ? "D2D" : to_dev ? "H2D" : "D2H", on,
                               to_dev && from_dev ? "purple" : to_dev ? "blue" : "red");
        } else if (op->kind == GPUIR_OP_GPU_LAUNCH_FUNC) {
            const gpuir__attr *sym = gpuir__attr_get(m, op, GPUIR__KEY_KERNEL);
            uint32_t kid = gpuir__launch_target(m, gpuir__string(m, sym->off));
            gpuir__dot_launch(s, m, fid, f->ops[i], kid);
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
    if (!m || m->ctx->result != GPUIR_OK) return NULL;
    gpuir__str s = {NULL};
    gpuir__str_appendf(&s, "digraph gpuir {\nrankdir=LR;\nnode [fontname=\"monospace\"];\n");
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++)
        if (!m->funcs[f].kernel) gpuir__dot_func(&s, m, (uint32_t)f + 1);
    gpuir__dot_legend(&s);
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
// tiled matmul with its elementwise epilogue (plain, register-tiled f32, or
// on tensor cores for f16 and bf16: mma.sync, ldmatrix and cp.async behind
// helpers the emulator implements too). A kernel takes its buffers
// (p0, p1, ...), then each dynamic dim of each buffer as a long long
// (p<buffer>_d<axis>, in order): a dynamic kernel takes the general form
// (no register-tiled matmul, tiled transpose or 16-byte elementwise
// accesses). The output is deterministic. Reads: ir. Writes: nothing.

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
        void (*yield)(struct gpuir_emu_lane *lane); /* a spin saw no change */  \
        unsigned long long *progress; /* bumped by what can end a spin */       \
        void *engine;                                                           \
    } gpuir_emu_lane;                                                           \
    typedef struct gpuir_emu_kernel {                                           \
        const char *name;                                                       \
        void (*entry)(gpuir_emu_lane *lane, void **params);                     \
        unsigned shared_bytes;                                                  \
        unsigned dynamic_bytes; /* GPUIR_SHARED_DYNAMIC: what a launch must give */ \
        int uses_barriers;                                                      \
        unsigned n_buffers;     /* parameters that are device addresses */      \
        unsigned n_tensor_maps; /* then 128-byte tensor maps, by value */       \
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
    "GPUIR_DEVICE float gpuir_tf32_round(float x) {\n"
    "    unsigned u = gpuir_as_uint(x);\n"
    "    u = (u & 0x7fffffffu) > 0x7f800000u ? u | 0x00400000u : u + 0x1000u;\n"
    "    return gpuir_as_float(u & 0xffffe000u);\n"
    "}\n"
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
    "#define GPUIR_SHARED_DYNAMIC(type, name) extern __shared__ type name[]\n"
    "#define GPUIR_SYNC() __syncthreads()\n"
    "#define GPUIR_SHFL_DOWN_F32(v, d) __shfl_down_sync(0xffffffffu, (v), (d))\n"
    "#define GPUIR_SHFL_DOWN_I64(v, d) __shfl_down_sync(0xffffffffu, (v), (d))\n"
    "#define GPUIR_INF __int_as_float(0x7f800000)\n"
    "#define GPUIR_NAN __int_as_float(0x7fc00000)\n"
    "#define gpuir_rsqrt(x) rsqrtf(x)\n"
    "#define GPUIR_FLOAT4(a, b, c, d) make_float4(a, b, c, d)\n"
    "#define GPUIR_UNROLL _Pragma(\"unroll\")\n"
    "#define GPUIR_NO_UNROLL _Pragma(\"unroll 1\")\n"
    "#define GPUIR_INT4(a, b, c, d) make_int4(a, b, c, d)\n"
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
    "#define GPUIR_SHARED_DYNAMIC(type, name) type *name = (type *)gpuir__lane->shared\n"
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
    "typedef struct __attribute__((aligned(16))) float4 { float x, y, z, w; } float4;\n"
    "typedef struct __attribute__((aligned(16))) int4 { int x, y, z, w; } int4;\n"
    "#define GPUIR_FLOAT4(a, b, c, d) ((float4){a, b, c, d})\n"
    "#define GPUIR_UNROLL\n"
    "#define GPUIR_NO_UNROLL\n"
    "#define GPUIR_INT4(a, b, c, d) ((int4){a, b, c, d})\n"
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

/* Tensor-core helpers, in a module's source only when one of its kernels
   uses them (gpuir__module_uses_tensor_cores). GPUIR_MMA_F16/BF16(d, a, b)
   is mma.sync m16n8k16 row.col with f32 accumulators: D += A B for the
   warp's 16x16 A (4 registers of two halves a lane), 16x8 B (2 registers)
   and 16x8 D (4 floats a lane), in the PTX ISA's fragment layouts (lane l:
   g = l / 4, q = l % 4; a[0] holds A[g][2q..2q+1], a[1] A[g+8][..],
   a[2] and a[3] the same at k + 8; b[0] holds B[2q..2q+1][g], b[1] at
   k + 8; d[0..1] are D[g][2q..2q+1], d[2..3] D[g+8][..]). GPUIR_MMA_TF32 is
   m16n8k8 with one TF32 a register, at k = q and q + 4 instead
   (gpuir_tf32_bits rounds a float to it). Below sm_80 (but f16 on sm_75)
   and on the emulator it is gpuir_mma_portable: the same sums from
   shuffles. GPUIR_LDMATRIX_X4(r, p) and _TRANS are ldmatrix.sync.aligned
   .m8n8.x4(.trans).shared.b16: lane l gives p, the 16-byte row l % 8 of
   8x8 matrix l / 8, and gets in r[m] the halves (g, 2q) and (g, 2q + 1)
   of matrix m ((2q, g) and (2q + 1, g) transposed); the emulator's
   gpuir_emu_ldmatrix gathers the rows through the warp's slots.
   gpuir_cp_async16 copies 16 bytes from global to shared memory
   (zeros when !valid), asynchronously on sm_80+; gpuir_cp_async_wait(n)
   waits for all but the n newest committed groups (n a literal). The text
   shared by both targets (kind: 0 f16, 1 bf16, 2 tf32): */
static const char gpuir__cg_tc_helpers[] =
    "GPUIR_DEVICE float gpuir_mma_elem(unsigned reg, int h, int kind) {\n"
    "    if (kind == 2) return gpuir_as_float(reg);\n"
    "    unsigned short x = (unsigned short)(h ? reg >> 16 : reg & 0xffffu);\n"
    "    return kind ? gpuir_bf16_to_f32(x) : gpuir_f16_to_f32(x);\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_mma_portable(GPUIR_LANE float *d, const unsigned *a, const unsigned *b, int kind) {\n"
    "    int lane = GPUIR_LANE_ID, g = lane >> 2, q = lane & 3;\n"
    "    GPUIR_ROLLED\n"
    "    for (int kp = 0; kp < 8; kp++) {        /* a register column: k = kp (tf32) or 2 kp, 2 kp + 1 */\n"
    "        int src = kp & 3;\n"
    "        unsigned ag = GPUIR_SHFL_IDX_U32(kp < 4 ? a[0] : a[2], g * 4 + src);   /* A[g][k] */\n"
    "        unsigned ag8 = GPUIR_SHFL_IDX_U32(kp < 4 ? a[1] : a[3], g * 4 + src);  /* A[g + 8][k] */\n"
    "        unsigned bk = kp < 4 ? b[0] : b[1];\n"
    "        unsigned b0 = GPUIR_SHFL_IDX_U32(bk, q * 8 + src);                       /* B[k][2q] */\n"
    "        unsigned b1 = GPUIR_SHFL_IDX_U32(bk, q * 8 + 4 + src);                   /* B[k][2q + 1] */\n"
    "        for (int h = 0; h < (kind == 2 ? 1 : 2); h++) {\n"
    "            float x = gpuir_mma_elem(ag, h, kind), y = gpuir_mma_elem(ag8, h, kind);\n"
    "            float u = gpuir_mma_elem(b0, h, kind), v = gpuir_mma_elem(b1, h, kind);\n"
    "            d[0] += x * u; d[1] += x * v; d[2] += y * u; d[3] += y * v;\n"
    "        }\n"
    "    }\n"
    "}\n";

/* The tensor-core helpers for NVRTC: ldmatrix from sm_75, mma.sync and
   cp.async from sm_80. */
static const char gpuir__cg_tc_cuda[] =
    "#define GPUIR_LANE_ID ((int)(GPUIR_THREAD_RANK & 31))\n"
    "#define GPUIR_SHFL_IDX_U32(v, src) __shfl_sync(0xffffffffu, (v), (src))\n"
    "#define GPUIR_ROLLED _Pragma(\"unroll 1\")\n"
    "#define GPUIR_LDMATRIX_ASM(trans) asm volatile(\"ldmatrix.sync.aligned.m8n8.x4\" trans \".shared.b16 {%0, %1, %2, %3}, [%4];\" \\\n"
    "    : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"((unsigned)__cvta_generic_to_shared(p)))\n"
    "GPUIR_DEVICE void gpuir_ldmatrix_x4(unsigned *r, const void *p) { GPUIR_LDMATRIX_ASM(\"\"); }\n"
    "GPUIR_DEVICE void gpuir_ldmatrix_x4_trans(unsigned *r, const void *p) { GPUIR_LDMATRIX_ASM(\".trans\"); }\n"
    "#define GPUIR_LDMATRIX_X4(r, p) gpuir_ldmatrix_x4(r, p)\n"
    "#define GPUIR_LDMATRIX_X4_TRANS(r, p) gpuir_ldmatrix_x4_trans(r, p)\n"
    "#define GPUIR_MMA_ASM(shape, type, regs) asm(\"mma.sync.aligned.\" shape \".row.col.f32.\" type \".\" type \".f32 \" regs\n"
    "#define GPUIR_MMA_OUT : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "#define GPUIR_MMA_K16(type) GPUIR_MMA_ASM(\"m16n8k16\", type, \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\")\n"
    "GPUIR_DEVICE void gpuir_mma_f16(float *d, const unsigned *a, const unsigned *b) {\n"
    "    GPUIR_MMA_K16(\"f16\") GPUIR_MMA_OUT : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_mma_bf16(float *d, const unsigned *a, const unsigned *b) {\n"
    "    GPUIR_MMA_K16(\"bf16\") GPUIR_MMA_OUT : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_mma_tf32(float *d, const unsigned *a, const unsigned *b) {\n"
    "    GPUIR_MMA_ASM(\"m16n8k8\", \"tf32\", \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\")\n"
    "        GPUIR_MMA_OUT : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "GPUIR_DEVICE unsigned gpuir_tf32_bits(float x) { unsigned r; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x)); return r; }\n"
    "#define GPUIR_MMA_F16(d, a, b) gpuir_mma_f16(d, a, b)\n"
    "#define GPUIR_MMA_BF16(d, a, b) gpuir_mma_bf16(d, a, b)\n"
    "#define GPUIR_MMA_TF32(d, a, b) gpuir_mma_tf32(d, a, b)\n"
    "GPUIR_DEVICE void gpuir_cp_async16(void *dst, const void *src, int valid) {\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"((unsigned)__cvta_generic_to_shared(dst)),\n"
    "                 \"l\"(src), \"r\"(valid ? 16 : 0) : \"memory\");\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_cp_async_commit(void) { asm volatile(\"cp.async.commit_group;\" ::: \"memory\"); }\n"
    "#define gpuir_cp_async_wait(n) asm volatile(\"cp.async.wait_group \" #n \";\" ::: \"memory\")\n"
    "#else\n"
    "/* sm_75: two m16n8k8 for f16 (a k half each), shuffles for bf16 and tf32 */\n"
    "GPUIR_DEVICE void gpuir_mma_f16(float *d, const unsigned *a, const unsigned *b) {\n"
    "    GPUIR_UNROLL\n"
    "    for (int h = 0; h < 2; h++)\n"
    "        GPUIR_MMA_ASM(\"m16n8k8\", \"f16\", \"{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\")\n"
    "            GPUIR_MMA_OUT : \"r\"(a[2 * h]), \"r\"(a[2 * h + 1]), \"r\"(b[h]));\n"
    "}\n"
    "GPUIR_DEVICE unsigned gpuir_tf32_bits(float x) { return gpuir_as_uint(gpuir_tf32_round(x)); }\n"
    "#define GPUIR_MMA_F16(d, a, b) gpuir_mma_f16(d, a, b)\n"
    "#define GPUIR_MMA_BF16(d, a, b) gpuir_mma_portable(d, a, b, 1)\n"
    "#define GPUIR_MMA_TF32(d, a, b) gpuir_mma_portable(d, a, b, 2)\n"
    "GPUIR_DEVICE void gpuir_cp_async16(void *dst, const void *src, int valid) {\n"
    "    *(int4 *)dst = valid ? *(const int4 *)src : make_int4(0, 0, 0, 0);\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_cp_async_commit(void) {}\n"
    "#define gpuir_cp_async_wait(n)\n"
    "#endif\n";

/* The tensor-core helpers for the emulator: shuffles through the warp's
   slots, copies done at once. */
static const char gpuir__cg_tc_emu[] =
    "#define GPUIR_LANE_ID ((int)gpuir__lane->lane_id)\n"
    "#define GPUIR_SHFL_IDX_U32(v, src) gpuir_emu_shfl_idx(gpuir__lane, (v), (src))\n"
    "#define GPUIR_MMA_F16(d, a, b) gpuir_mma_portable(gpuir__lane, d, a, b, 0)\n"
    "#define GPUIR_MMA_BF16(d, a, b) gpuir_mma_portable(gpuir__lane, d, a, b, 1)\n"
    "#define GPUIR_MMA_TF32(d, a, b) gpuir_mma_portable(gpuir__lane, d, a, b, 2)\n"
    "#define GPUIR_LDMATRIX_X4(r, p) gpuir_emu_ldmatrix(gpuir__lane, r, p, 0)\n"
    "#define GPUIR_LDMATRIX_X4_TRANS(r, p) gpuir_emu_ldmatrix(gpuir__lane, r, p, 1)\n"
    "#define GPUIR_ROLLED\n"
    "#define gpuir_tf32_bits(x) gpuir_as_uint(gpuir_tf32_round(x))\n"
    "static unsigned gpuir_emu_shfl_idx(gpuir_emu_lane *l, unsigned v, int src) {\n"
    "    l->warp_slots[l->lane_id] = v;\n"
    "    l->sync_warp(l);\n"
    "    v = (unsigned)l->warp_slots[src & 31];\n"
    "    l->sync_warp(l);\n"
    "    return v;\n"
    "}\n"
    "static void gpuir_emu_ldmatrix(gpuir_emu_lane *l, unsigned *r, const void *p, int trans) {\n"
    "    int lane = (int)l->lane_id, g = lane >> 2, t = lane & 3;\n"
    "    int lo_row = trans ? 2 * t : g, hi_row = trans ? 2 * t + 1 : g, off = trans ? 2 * g : 4 * t, hi = trans ? 0 : 2;\n"
    "    l->warp_slots[lane] = (unsigned long long)(size_t)p;\n"
    "    l->sync_warp(l);\n"
    "    for (int m = 0; m < 4; m++) {      /* matrix m: its row addresses come from lanes 8 m .. 8 m + 7 */\n"
    "        unsigned short x, y;\n"
    "        memcpy(&x, (const unsigned char *)(size_t)l->warp_slots[8 * m + lo_row] + off, 2);\n"
    "        memcpy(&y, (const unsigned char *)(size_t)l->warp_slots[8 * m + hi_row] + off + hi, 2);\n"
    "        r[m] = (unsigned)x | (unsigned)y << 16;\n"
    "    }\n"
    "    l->sync_warp(l);\n"
    "}\n"
    "static void gpuir_cp_async16(void *dst, const void *src, int valid) {\n"
    "    if (valid) memcpy(dst, src, 16); else memset(dst, 0, 16);\n"
    "}\n"
    "#define gpuir_cp_async_commit()\n"
    "#define gpuir_cp_async_wait(n)\n";

/* wgmma helpers (EXPERIMENTAL, unvalidated on hardware), in a module's
   source only when one of its kernels uses them (gpuir__module_uses_wgmma).
   A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
   bits 0-13 the start address >> 4, 16-29 the leading byte offset >> 4,
   32-45 the stride byte offset >> 4, 49-51 the base offset (0), 62-63 the
   layout type (0: no swizzle, 1: 128-byte swizzle). For a K-major operand
   with the 128-byte swizzle (gpuir_wgmma_desc_sw128: what the kernel's
   bulk tensor copies write) row r of a group of 8 is 128 bytes at 128 r,
   the groups SBO (1024) apart, and byte b of a row lies at b ^ 16 (r % 8):
   the 16-byte chunks of a row XORed with its row in the 1024-byte atom
   (the address bits 4-6 ^= bits 7-9; atoms 1024-byte aligned); a k step of
   16 starts 32 bytes further in (the XOR applies to the final address, so
   the start may sit inside a row; LBO is unused). For a K-major operand without swizzle the
   matrix is made of core matrices of 8 rows x 16 bytes (8 halves), each
   stored contiguously (row r at 16 r); LBO is the distance between core
   matrices next to each other along K, SBO between those next to each
   other along M (or N). GPUIR_WGMMA_F16/BF16(d, da, db, base, addr) is
   wgmma.mma_async m64n128k16 with f32 accumulators, A (64 x 16) and B
   (128 x 16, B^T's rows: "K-major", imm-trans-b 0) from descriptors: D +=
   A B^T. Thread t of the warpgroup (w = t / 32, l = t % 32, g = l / 4,
   q = l % 4) holds d[f] = D[16 w + g + 8 (f / 2 % 2)][8 (f / 4) + 2 q +
   f % 2] (the m64nNk16 D fragment). gpuir_wgmma_portable computes the
   same from shared memory, each thread its own 64 elements (no thread
   talks to another: wgmma reads shared memory, not registers); `base` is
   the generic pointer to shared memory whose shared address is `addr`. It
   is the emulator's wgmma, and the CUDA one below sm_90a (slow, but
   correct). The portable mbarrier (gpuir_pmbar_*, the emulator's and the
   CUDA one below sm_90) is one 32-bit shared word: the transaction count
   in 16-byte units (bits 0-11), pending arrivals (12-22), the phase (31),
   then the expected arrivals in the next word; the arrival or copy that
   brings both counts to 0 flips the phase and re-arms the arrivals, with
   one atomic add; a wait spins on the phase bit (GPUIR_YIELD: the
   emulator's fibers yield). The portable bulk tensor copy gpuir_ptma_load
   reads gpuir's own tensor-map encoding (gpuir__tmap_encode), writes the
   box densely, innermost dim first, each address with the map's swizzle
   (bits 4.. ^= bits 7..: 16-byte chunks XORed with the row within a
   1024-byte atom for the 128-byte swizzle), zeros outside the tensor, and
   completes the mbarrier's transaction with the box's bytes, as TMA does.
   The text shared by both targets (kind: 0 f16, 1 bf16): */
static const char gpuir__cg_wgmma_helpers[] =
    "GPUIR_DEVICE unsigned long long gpuir_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo) {\n"
    "    return (unsigned long long)((addr >> 4) & 0x3fffu) | (unsigned long long)((lbo >> 4) & 0x3fffu) << 16 |\n"
    "           (unsigned long long)((sbo >> 4) & 0x3fffu) << 32;\n"
    "}\n"
    "GPUIR_DEVICE unsigned long long gpuir_wgmma_desc_sw128(unsigned addr) {\n"
    "    return gpuir_wgmma_desc(addr, 16u, 1024u) | 1ull << 62;\n"
    "}\n"
    "GPUIR_DEVICE float gpuir_wgmma_elem(const unsigned char *base, unsigned addr, unsigned long long desc, int r, int k,\n"
    "                                    int kind) {\n"
    "    unsigned start = (unsigned)(desc & 0x3fffu) << 4, lbo = (unsigned)(desc >> 16 & 0x3fffu) << 4;\n"
    "    unsigned sbo = (unsigned)(desc >> 32 & 0x3fffu) << 4, at;\n"
    "    if ((unsigned)(desc >> 62) == 1u) {\n"
    "        at = start + (unsigned)(r / 8) * sbo + (unsigned)(r % 8) * 128u + (unsigned)k * 2u;\n"
    "        at ^= (at >> 7 & 7u) << 4;\n"
    "    } else {\n"
    "        at = start + (unsigned)(r / 8) * sbo + (unsigned)(k / 8) * lbo + (unsigned)(r % 8) * 16u + (unsigned)(k % 8) * 2u;\n"
    "    }\n"
    "    unsigned short x = *(const unsigned short *)(base + (at - addr));\n"
    "    return kind ? gpuir_bf16_to_f32(x) : gpuir_f16_to_f32(x);\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_wgmma_portable(GPUIR_LANE float *d, unsigned long long da, unsigned long long db,\n"
    "                                      const void *base, unsigned addr, int kind) {\n"
    "    int t = GPUIR_THREAD_RANK % 128, g = t % 32 / 4, q = t % 4, row0 = t / 32 * 16 + g;\n"
    "    const unsigned char *b8 = (const unsigned char *)base;\n"
    "    GPUIR_ROLLED\n"
    "    for (int f = 0; f < 64; f++) {\n"
    "        int row = row0 + f / 2 % 2 * 8, col = f / 4 * 8 + q * 2 + f % 2;\n"
    "        float sum = 0.0f;\n"
    "        for (int k = 0; k < 16; k++)\n"
    "            sum += gpuir_wgmma_elem(b8, addr, da, row, k, kind) * gpuir_wgmma_elem(b8, addr, db, col, k, kind);\n"
    "        d[f] += sum;\n"
    "    }\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_pmbar_init(GPUIR_LANE unsigned bar, unsigned count) {\n"
    "    volatile unsigned *w = (volatile unsigned *)GPUIR_SMEM_PTR(bar);\n"
    "    w[0] = count << 12;\n"
    "    w[1] = count;\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_pmbar_add(GPUIR_LANE unsigned bar, unsigned delta) {\n"
    "    unsigned *w = (unsigned *)GPUIR_SMEM_PTR(bar), now = GPUIR_ATOMIC_ADD_U32(w, delta) + delta;\n"
    "    if ((now & 0x7fffffffu) == 0) GPUIR_ATOMIC_ADD_U32(w, ((volatile unsigned *)w)[1] << 12 | 0x80000000u);\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_pmbar_wait(GPUIR_LANE unsigned bar, unsigned parity) {\n"
    "    while ((*(volatile unsigned *)GPUIR_SMEM_PTR(bar) >> 31) == parity) GPUIR_YIELD();\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_ptma_load(GPUIR_LANE unsigned dst, const gpuir_tensor_map *map, int c0, int c1, int c2,\n"
    "                                 unsigned bar) {\n"
    "    const unsigned long long *w = map->words;\n"
    "    unsigned rank = (unsigned)(w[0] >> 32 & 0xffu), sw = (unsigned)(w[0] >> 40 & 0xffu), o = 0, i0, i1, i2;\n"
    "    const unsigned char *g = (const unsigned char *)(size_t)w[1];\n"
    "    long long c[3], dim[3], stride[3];\n"
    "    unsigned box[3];\n"
    "    for (unsigned i = 0; i < 3; i++) {\n"
    "        c[i] = i < rank ? (i == 0 ? c0 : i == 1 ? c1 : c2) : 0;\n"
    "        dim[i] = i < rank ? (long long)w[2 + i] : 1;\n"
    "        stride[i] = i == 0 ? 2 : i < rank ? (long long)w[6 + i] : 0;\n"
    "        box[i] = i < rank ? (unsigned)(w[11 + i / 2] >> (i % 2 * 32) & 0xffffffffu) : 1u;\n"
    "    }\n"
    "    for (i2 = 0; i2 < box[2]; i2++)\n"
    "        for (i1 = 0; i1 < box[1]; i1++)\n"
    "            for (i0 = 0; i0 < box[0]; i0++, o += 2) {\n"
    "                long long x = c[0] + i0, y = c[1] + i1, z = c[2] + i2;\n"
    "                unsigned a = dst + o;\n"
    "                if (sw) a ^= (a >> 7 & ((1u << sw) - 1u)) << 4;\n"
    "                *(unsigned short *)GPUIR_SMEM_PTR(a) = x >= 0 && x < dim[0] && y >= 0 && y < dim[1] && z >= 0 && z < dim[2]\n"
    "                    ? *(const unsigned short *)(g + x * stride[0] + y * stride[1] + z * stride[2]) : (unsigned short)0;\n"
    "            }\n"
    "    gpuir_pmbar_add(GPUIR_LANE_PASS bar, 0u - (o >> 4));\n"
    "}\n";

/* The wgmma helpers for NVRTC: the instructions on sm_90a (where NVRTC
   defines __CUDA_ARCH_FEAT_SM90_ALL), gpuir_wgmma_portable elsewhere.
   gpuir_wgmma_fence, _commit and _wait0 are wgmma.fence, commit_group and
   wait_group 0 (the TMA copies write through the async proxy that wgmma
   reads through: no proxy fence); GPUIR_WGMMA_KEEP(d) keeps the compiler from moving
   accesses of the accumulators across a wait. */
static const char gpuir__cg_wgmma_cuda[] =
    "#define GPUIR_SMEM_ADDR(p) ((unsigned)__cvta_generic_to_shared(p))\n"
    "#define GPUIR_SMEM_PTR(a) ((unsigned char *)__cvta_shared_to_generic(a))\n"
    "#define GPUIR_ATOMIC_ADD_U32(p, v) atomicAdd((unsigned *)(p), (v))\n"
    "#define GPUIR_YIELD()\n"
    "#define GPUIR_LANE_PASS\n"
    "#define GPUIR_LAUNCH_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)\n"
    "struct __align__(64) gpuir_tensor_map { unsigned long long words[16]; };\n"
    "#define GPUIR_TMAP_PARAM(name) const __grid_constant__ gpuir_tensor_map name\n"
    "#define GPUIR_TMAP(name) (&name)\n";

/* The bulk tensor copy and mbarrier helpers for NVRTC: the instructions
   from sm_90 (gpuir_mbar_*: mbarrier.init, arrive(.expect_tx),
   try_wait.parity; gpuir_tma_load_2d/3d: cp.async.bulk.tensor completing
   on an mbarrier), the portable ones below (gpuir_pmbar_*, gpuir_ptma_load
   in gpuir__cg_wgmma_helpers; the runtime then hands the kernel gpuir's
   own tensor-map encoding, which they read). */
static const char gpuir__cg_tma_cuda[] =
    "#if __CUDA_ARCH__ >= 900\n"
    "GPUIR_DEVICE void gpuir_mbar_init(unsigned bar, unsigned count) {\n"
    "    asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(bar), \"r\"(count) : \"memory\");\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_mbar_init_fence(void) { asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\"); }\n"
    "GPUIR_DEVICE void gpuir_mbar_expect_tx(unsigned bar, unsigned bytes) {\n"
    "    asm volatile(\"{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }\" :: \"r\"(bar), \"r\"(bytes) : \"memory\");\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_mbar_arrive(unsigned bar) {\n"
    "    asm volatile(\"{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }\" :: \"r\"(bar) : \"memory\");\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_mbar_wait(unsigned bar, unsigned parity) {\n"
    "    unsigned done;\n"
    "    do asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }\"\n"
    "                    : \"=r\"(done) : \"r\"(bar), \"r\"(parity) : \"memory\");\n"
    "    while (!done);\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_tma_load_2d(unsigned dst, const gpuir_tensor_map *map, int c0, int c1, int c2, unsigned bar) {\n"
    "    asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\"\n"
    "                 :: \"r\"(dst), \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(bar) : \"memory\");\n"
    "    (void)c2;\n"
    "}\n"
    "GPUIR_DEVICE void gpuir_tma_load_3d(unsigned dst, const gpuir_tensor_map *map, int c0, int c1, int c2, unsigned bar) {\n"
    "    asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\"\n"
    "                 :: \"r\"(dst), \"l\"(map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(bar) : \"memory\");\n"
    "}\n"
    "#else\n"
    "#define gpuir_mbar_init(bar, count) gpuir_pmbar_init(bar, count)\n"
    "#define gpuir_mbar_init_fence()\n"
    "#define gpuir_mbar_expect_tx(bar, bytes) gpuir_pmbar_add(bar, ((bytes) >> 4) - (1u << 12))\n"
    "#define gpuir_mbar_arrive(bar) gpuir_pmbar_add(bar, 0u - (1u << 12))\n"
    "#define gpuir_mbar_wait(bar, parity) gpuir_pmbar_wait(bar, parity)\n"
    "#define gpuir_tma_load_2d(dst, map, c0, c1, c2, bar) gpuir_ptma_load(dst, map, c0, c1, c2, bar)\n"
    "#define gpuir_tma_load_3d(dst, map, c0, c1, c2, bar) gpuir_ptma_load(dst, map, c0, c1, c2, bar)\n"
    "#endif\n";

static const char gpuir__cg_wgmma_cuda_mma[] =
    "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
    "#define GPUIR_WGMMA_D8(i) \"+f\"(d[i]), \"+f\"(d[i + 1]), \"+f\"(d[i + 2]), \"+f\"(d[i + 3]), \\\n"
    "    \"+f\"(d[i + 4]), \"+f\"(d[i + 5]), \"+f\"(d[i + 6]), \"+f\"(d[i + 7])\n"
    "#define GPUIR_WGMMA_ASM(type) asm volatile(\"wgmma.mma_async.sync.aligned.m64n128k16.f32.\" type \".\" type \" {\" \\\n"
    "    \"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, \" \\\n"
    "    \"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, \" \\\n"
    "    \"%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, \" \\\n"
    "    \"%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63\" \\\n"
    "    \"}, %64, %65, 1, 1, 1, 0, 0;\" : GPUIR_WGMMA_D8(0), GPUIR_WGMMA_D8(8), GPUIR_WGMMA_D8(16), GPUIR_WGMMA_D8(24), \\\n"
    "    GPUIR_WGMMA_D8(32), GPUIR_WGMMA_D8(40), GPUIR_WGMMA_D8(48), GPUIR_WGMMA_D8(56) : \"l\"(da), \"l\"(db) : \"memory\")\n"
    "GPUIR_DEVICE void gpuir_wgmma_f16(float *d, unsigned long long da, unsigned long long db) { GPUIR_WGMMA_ASM(\"f16\"); }\n"
    "GPUIR_DEVICE void gpuir_wgmma_bf16(float *d, unsigned long long da, unsigned long long db) { GPUIR_WGMMA_ASM(\"bf16\"); }\n"
    "#define GPUIR_WGMMA_F16(d, da, db, base, addr) gpuir_wgmma_f16(d, da, db)\n"
    "#define GPUIR_WGMMA_BF16(d, da, db, base, addr) gpuir_wgmma_bf16(d, da, db)\n"
    "GPUIR_DEVICE void gpuir_wgmma_fence(void) { asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\"); }\n"
    "GPUIR_DEVICE void gpuir_wgmma_commit(void) { asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\"); }\n"
    "GPUIR_DEVICE void gpuir_wgmma_wait0(void) { asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\"); }\n"
    "GPUIR_DEVICE void gpuir_wgmma_wait1(void) { asm volatile(\"wgmma.wait_group.sync.aligned 1;\" ::: \"memory\"); }\n"
    "#define gpuir_setmaxnreg_dec(n) asm volatile(\"setmaxnreg.dec.sync.aligned.u32 \" #n \";\")\n"
    "#define gpuir_setmaxnreg_inc(n) asm volatile(\"setmaxnreg.inc.sync.aligned.u32 \" #n \";\")\n"
    "#define GPUIR_WGMMA_KEEP(d) do { GPUIR_UNROLL for (int f_ = 0; f_ < 64; f_++) asm volatile(\"\" : \"+f\"(d[f_]) :: \"memory\"); } while (0)\n"
    "#else\n"
    "#define GPUIR_WGMMA_F16(d, da, db, base, addr) gpuir_wgmma_portable(d, da, db, base, addr, 0)\n"
    "#define GPUIR_WGMMA_BF16(d, da, db, base, addr) gpuir_wgmma_portable(d, da, db, base, addr, 1)\n"
    "GPUIR_DEVICE void gpuir_wgmma_fence(void) {}\n"
    "GPUIR_DEVICE void gpuir_wgmma_commit(void) {}\n"
    "GPUIR_DEVICE void gpuir_wgmma_wait0(void) {}\n"
    "GPUIR_DEVICE void gpuir_wgmma_wait1(void) {}\n"
    "#define gpuir_setmaxnreg_dec(n)\n"
    "#define gpuir_setmaxnreg_inc(n)\n"
    "#define GPUIR_WGMMA_KEEP(d)\n"
    "#endif\n";

/* The wgmma helpers for the emulator: shared addresses are offsets from
   the block's shared memory; fences, commits and waits have nothing to do
   (the block's barriers stay real); the bulk copies and mbarriers are the
   portable ones, their updates counted as progress for the scheduler, a
   kernel's tensor maps a pointer to the launch's copy of them. */
static const char gpuir__cg_wgmma_emu[] =
    "#define GPUIR_SMEM_ADDR(p) ((unsigned)((const unsigned char *)(p) - gpuir__lane->shared))\n"
    "#define GPUIR_SMEM_PTR(a) (gpuir__lane->shared + (a))\n"
    "#define GPUIR_ATOMIC_ADD_U32(p, v) gpuir_emu_add_u32(gpuir__lane, (unsigned *)(p), (v))\n"
    "#define GPUIR_YIELD() gpuir__lane->yield(gpuir__lane)\n"
    "#define GPUIR_LANE_PASS gpuir__lane,\n"
    "#define GPUIR_LAUNCH_BOUNDS(threads, blocks)\n"
    "typedef struct gpuir_tensor_map { unsigned long long words[16]; } gpuir_tensor_map;\n"
    "#define GPUIR_TMAP_PARAM(name) const gpuir_tensor_map *name\n"
    "#define GPUIR_TMAP(name) (name)\n"
    "static unsigned gpuir_emu_add_u32(gpuir_emu_lane *l, unsigned *p, unsigned v) {\n"
    "    unsigned old = *p;\n"
    "    *p = old + v;\n"
    "    ++*l->progress;\n"
    "    return old;\n"
    "}\n"
    "#define gpuir_mbar_init(bar, count) gpuir_pmbar_init(gpuir__lane, bar, count)\n"
    "#define gpuir_mbar_init_fence()\n"
    "#define gpuir_mbar_expect_tx(bar, bytes) gpuir_pmbar_add(gpuir__lane, bar, ((bytes) >> 4) - (1u << 12))\n"
    "#define gpuir_mbar_arrive(bar) gpuir_pmbar_add(gpuir__lane, bar, 0u - (1u << 12))\n"
    "#define gpuir_mbar_wait(bar, parity) gpuir_pmbar_wait(gpuir__lane, bar, parity)\n"
    "#define gpuir_tma_load_2d(dst, map, c0, c1, c2, bar) gpuir_ptma_load(gpuir__lane, dst, map, c0, c1, c2, bar)\n"
    "#define gpuir_tma_load_3d(dst, map, c0, c1, c2, bar) gpuir_ptma_load(gpuir__lane, dst, map, c0, c1, c2, bar)\n"
    "#define gpuir_wgmma_wait1()\n"
    "#define gpuir_setmaxnreg_dec(n)\n"
    "#define gpuir_setmaxnreg_inc(n)\n"
    "#define GPUIR_WGMMA_F16(d, da, db, base, addr) gpuir_wgmma_portable(gpuir__lane, d, da, db, base, addr, 0)\n"
    "#define GPUIR_WGMMA_BF16(d, da, db, base, addr) gpuir_wgmma_portable(gpuir__lane, d, da, db, base, addr, 1)\n"
    "#define gpuir_wgmma_fence()\n"
    "#define gpuir_wgmma_commit()\n"
    "#define gpuir_wgmma_wait0()\n"
    "#define GPUIR_WGMMA_KEEP(d)\n";

/* What codegen writes for a target: its prelude, tensor-core and wgmma helpers. */
typedef struct gpuir__cg_target {
    const char *prelude, *tensor_cores, *wgmma[3];
} gpuir__cg_target;

static const gpuir__cg_target gpuir__cg_cuda = {gpuir__cg_cuda_prelude, gpuir__cg_tc_cuda,
                                                {gpuir__cg_wgmma_cuda, gpuir__cg_tma_cuda, gpuir__cg_wgmma_cuda_mma}};
static const gpuir__cg_target gpuir__cg_emu = {gpuir__cg_emu_prelude, gpuir__cg_tc_emu, {gpuir__cg_wgmma_emu, "", ""}};

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
    bool dynamic;           /* some parameter has dynamic dims */
    uint32_t shared_bytes;  /* static shared memory the kernel declares */
    uint32_t dynamic_bytes; /* dynamic shared memory it needs (GPUIR_SHARED_DYNAMIC) */
    bool barriers;          /* uses GPUIR_SYNC or shuffles */
    const char *ind;        /* indentation of per-element statements */
    int lane;               /* vectorized kernels: the element of the quad (0..3), else -1 */
    bool *loaded4;          /* parameter index -> its quad is in register l<index> */
    bool tma;               /* the WGMMA kernel: takes tensor maps after its other parameters */
    struct gpuir__cg_kernel_info *info;   /* the kernel's, being filled */
    int depth;              /* the writer's indentation, in levels of 4 spaces */
} gpuir__cg;

/* ---- the writer: kernel text a line at a time, at an indentation depth ----
   gpuir__cg_line writes one line (no newline in fmt) indented to the depth;
   gpuir__cg_open writes a line that opens a brace and goes one level in,
   gpuir__cg_close comes out one level and writes the closing "}".
   New emitters write through these, never with literal indentation. */
static void gpuir__cg_vline(gpuir__cg *C, const char *fmt, va_list ap) {
    for (int i = 0; i < C->depth; i++) gpuir__str_puts(C->s, "    ");
    gpuir__str_vappend(C->s, fmt, ap);
    gpuir__str_puts(C->s, "\n");
}

static void gpuir__cg_line(gpuir__cg *C, const char *fmt, ...) GPUIR__PRINTF(2, 3);
static void gpuir__cg_line(gpuir__cg *C, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gpuir__cg_vline(C, fmt, ap);
    va_end(ap);
}

/* `fmt {` and one level in. */
static void gpuir__cg_open(gpuir__cg *C, const char *fmt, ...) GPUIR__PRINTF(2, 3);
static void gpuir__cg_open(gpuir__cg *C, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    for (int i = 0; i < C->depth; i++) gpuir__str_puts(C->s, "    ");
    gpuir__str_vappend(C->s, fmt, ap);
    gpuir__str_puts(C->s, " {\n");
    va_end(ap);
    C->depth++;
}

static void gpuir__cg_close(gpuir__cg *C) {
    C->depth--;
    gpuir__cg_line(C, "}");
}

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

/* A buffer's dims as codegen sees them: a static dim is its size, a
   dynamic one the kernel parameter p<param>_d<axis> that carries it. */
typedef struct gpuir__cg_dims {
    const int64_t *dims;
    int rank;
    int param;              /* the parameter whose dims they are, or -1 */
} gpuir__cg_dims;

/* A product of dims: a number times named dynamic dims. */
typedef struct gpuir__cg_prod {
    int64_t num;
    char sym[160];          /* "p0_d0 * p1_d2", or "" */
} gpuir__cg_prod;

static void gpuir__cg_prod_mul(gpuir__cg_prod *p, const gpuir__cg_dims *t, int a) {
    if (t->dims[a] != GPUIR_DYN) { p->num *= t->dims[a]; return; }
    size_t n = strlen(p->sym);
    snprintf(p->sym + n, sizeof p->sym - n, "%sp%d_d%d", n ? " * " : "", t->param, a);
}

static bool gpuir__cg_prod_is_one(const gpuir__cg_prod *p) { return p->num == 1 && !p->sym[0]; }

static void gpuir__cg_prod_print(gpuir__str *s, const gpuir__cg_prod *p) {
    if (!p->sym[0]) gpuir__str_appendf(s, "%lld", (long long)p->num);
    else if (p->num == 1) gpuir__str_appendf(s, "(%s)", p->sym);
    else gpuir__str_appendf(s, "(%lldLL * %s)", (long long)p->num, p->sym);
}

/* The same as an expression of type long long, into a buffer (a product
   of at most GPUIR_MAX_RANK dims fits in 200 bytes). */
static void gpuir__cg_prod_text(const gpuir__cg_prod *p, char *out, size_t size) {
    if (!p->sym[0]) snprintf(out, size, "%lldLL", (long long)p->num);
    else if (p->num == 1) snprintf(out, size, "(%s)", p->sym);
    else snprintf(out, size, "(%lldLL * %s)", (long long)p->num, p->sym);
}

static void gpuir__cg_dim(gpuir__str *s, const gpuir__cg_dims *t, int a) {
    gpuir__cg_prod p = {1, ""};
    gpuir__cg_prod_mul(&p, t, a);
    gpuir__cg_prod_print(s, &p);
}

/* Static element count, or -1 when a dim is dynamic. */
static int64_t gpuir__cg_static_count(const gpuir__cg_dims *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] == GPUIR_DYN) return -1;
        n *= t->dims[i];
    }
    return n;
}

/* Appends the linear index, in an array of dims T, of the element at linear
   index `ivar` of the space S, under NumPy broadcasting (right-aligned;
   size-1 dims repeat). A dynamic dim is never broadcast: it is as large
   as the dim it lines up with (the runtime checks that before a launch). */
static void gpuir__cg_bcast_index(gpuir__str *s, const gpuir__cg_dims *S, const gpuir__cg_dims *T, const char *ivar) {
    int sr = S->rank, tr = T->rank;
    const int64_t *sd = S->dims, *td = T->dims;
    int64_t tcount = gpuir__cg_static_count(T), scount = gpuir__cg_static_count(S);
    bool same = tr == sr && tcount == scount;
    for (int i = 0; same && i < tr; i++) same = td[i] == sd[i];
    if (same || (tcount == scount && tcount >= 0 && tcount <= 1)) { gpuir__str_appendf(s, "%s", ivar); return; }
    if (tcount >= 0 && tcount <= 1) { gpuir__str_appendf(s, "0"); return; }
    gpuir__cg_prod after = {1, ""}, tstride = {1, ""};
    bool first = true;
    gpuir__str_appendf(s, "(");
    for (int d = sr - 1; d >= 0; d--) {
        int j = tr - sr + d;
        if (j >= 0 && td[j] != 1 && sd[d] != 1) {
            gpuir__str_appendf(s, "%s(%s", first ? "" : " + ", ivar);
            if (!gpuir__cg_prod_is_one(&after)) {
                gpuir__str_appendf(s, " / ");
                gpuir__cg_prod_print(s, &after);
            }
            if (gpuir__cg_prod_is_one(&after) || d > 0) {
                gpuir__str_appendf(s, " %% ");
                gpuir__cg_dim(s, S, d);
            }
            gpuir__str_appendf(s, ")");
            if (!gpuir__cg_prod_is_one(&tstride)) {
                gpuir__str_appendf(s, " * ");
                gpuir__cg_prod_print(s, &tstride);
            }
            first = false;
        }
        if (j >= 0) gpuir__cg_prod_mul(&tstride, T, j);
        gpuir__cg_prod_mul(&after, S, d);
    }
    gpuir__str_appendf(s, "%s)", first ? "0" : "");
}

/* A size in generated code: a known number, or an expression of the
   kernel's dynamic dims; `text` is C of type long long either way. */
typedef struct gpuir__cg_size {
    bool known;
    int64_t n;
    char text[320];
} gpuir__cg_size;

static gpuir__cg_size gpuir__cg_size_of(const gpuir__cg_prod *p) {
    gpuir__cg_size z;
    z.known = !p->sym[0];
    z.n = p->num;
    gpuir__cg_prod_text(p, z.text, sizeof z.text);
    return z;
}

static gpuir__cg_size gpuir__cg_size_dim(const gpuir__cg_dims *t, int a) {
    gpuir__cg_prod p = {1, ""};
    gpuir__cg_prod_mul(&p, t, a);
    return gpuir__cg_size_of(&p);
}

static gpuir__cg_size gpuir__cg_size_mul(const gpuir__cg_size *a, const gpuir__cg_size *b) {
    if (a->known && a->n == 1) return *b;
    if (b->known && b->n == 1) return *a;
    gpuir__cg_size z;
    z.known = a->known && b->known;
    z.n = a->n * b->n;
    if (z.known) snprintf(z.text, sizeof z.text, "%lldLL", (long long)z.n);
    else {
        int n = snprintf(z.text, sizeof z.text, "(%s * %s)", a->text, b->text);
        GPUIR_ASSERT(n > 0 && (size_t)n < sizeof z.text);    /* products of a few dims */
    }
    return z;
}

/* How many tiles of `tile` cover a (rounded up). */
static gpuir__cg_size gpuir__cg_size_tiles(const gpuir__cg_size *a, int tile) {
    gpuir__cg_size z;
    z.known = a->known;
    z.n = (a->n + tile - 1) / tile;
    if (z.known) snprintf(z.text, sizeof z.text, "%lldLL", (long long)z.n);
    else {
        int n = snprintf(z.text, sizeof z.text, "((%s + %d) / %d)", a->text, tile - 1, tile);
        GPUIR_ASSERT(n > 0 && (size_t)n < sizeof z.text);
    }
    return z;
}

/* The dims of type t of the kernel: the parameter it belongs to names its
   dynamic dims. */
static gpuir__cg_dims gpuir__cg_dims_of(const gpuir__cg *C, const gpuir_type *t) {
    gpuir__cg_dims d = {t->dims, t->rank, -1};
    for (size_t i = 0; i < stbds_arrlenu(C->k->params); i++)
        if (&gpuir__value_at(C->m, C->k->params[i])->type == t) d.param = (int)i;
    return d;
}

static void gpuir__cg_type_index(const gpuir__cg *C, gpuir__str *s, const gpuir_type *S, const gpuir_type *T,
                                 const char *ivar) {
    gpuir__cg_dims sd = gpuir__cg_dims_of(C, S), td = gpuir__cg_dims_of(C, T);
    gpuir__cg_bcast_index(s, &sd, &td, ivar);
}

/* The element count of space S: a literal, or the product of its dims. */
static void gpuir__cg_count(const gpuir__cg *C, gpuir__str *s, const gpuir_type *S) {
    gpuir__cg_dims d = gpuir__cg_dims_of(C, S);
    gpuir__cg_prod p = {1, ""};
    for (int i = 0; i < d.rank; i++) gpuir__cg_prod_mul(&p, &d, i);
    char text[200];
    gpuir__cg_prod_text(&p, text, sizeof text);
    gpuir__str_appendf(s, "%s", text);
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
    if (C->lane >= 0) {                 /* one 16-byte load per quad, then its elements */
        int p = gpuir__cg_param_index(C, b);
        const char *vt = t->dtype == GPUIR_F32 ? "float4" : "int4";
        if (!C->loaded4[p])
            gpuir__str_appendf(C->s, "%s%s l%d = ((const %s *)p%d)[q];\n", C->ind, vt, p, vt, p);
        C->loaded4[p] = true;
        gpuir__str_appendf(C->s, "%s%s v%u = l%d.%c;\n", C->ind, gpuir__cg_ctype(t->dtype), v, p, "xyzw"[C->lane]);
        C->cur[b - 1] = v + 1;
        return v;
    }
    gpuir__str_appendf(C->s, "%s%s v%u = ", C->ind, gpuir__cg_ctype(t->dtype), v);
    if (t->dtype == GPUIR_F16) gpuir__str_appendf(C->s, "gpuir_f16_to_f32(");
    if (t->dtype == GPUIR_BF16) gpuir__str_appendf(C->s, "gpuir_bf16_to_f32(");
    gpuir__str_appendf(C->s, "p%d[", gpuir__cg_param_index(C, b));
    gpuir__cg_type_index(C, C->s, S, t, ivar);
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
    const char *fn = "";
    switch (k) {
    case GPUIR_OP_NEG: gpuir__str_appendf(s, "(-v%u)", x); return;
    case GPUIR_OP_ABS: fn = "fabsf"; break;
    case GPUIR_OP_EXP: fn = "expf"; break;
    case GPUIR_OP_LOG: fn = "logf"; break;
    case GPUIR_OP_SQRT: fn = "sqrtf"; break;
    case GPUIR_OP_RSQRT: fn = "gpuir_rsqrt"; break;
    case GPUIR_OP_TANH: fn = "tanhf"; break;
    case GPUIR_OP_SIGMOID: fn = "gpuir_sigmoid"; break;
    case GPUIR_OP_RELU: fn = "gpuir_relu"; break;
    case GPUIR_OP_GELU: fn = "gpuir_gelu"; break;
    default: fn = "gpuir_silu"; break;
    }
    gpuir__str_appendf(s, "%s(v%u)", fn, x);
}

static void gpuir__cg_binary_expr(gpuir__str *s, gpuir_op_kind k, gpuir_dtype d, uint32_t a, uint32_t b) {
    const char *sym = k == GPUIR_OP_ADD ? "+" : k == GPUIR_OP_SUB ? "-" : k == GPUIR_OP_MUL ? "*" : "/";
    if (gpuir_dtype_is_float(d)) {
        if (k == GPUIR_OP_MAX || k == GPUIR_OP_MIN || k == GPUIR_OP_POW)
            gpuir__str_appendf(s, "%s(v%u, v%u)", k == GPUIR_OP_MAX ? "gpuir_fmax" : k == GPUIR_OP_MIN ?
                               "gpuir_fmin" : "powf", a, b);
        else gpuir__str_appendf(s, "(v%u %s v%u)", a, sym, b);
        return;
    }
    const char *u = d == GPUIR_I32 ? "unsigned" : "unsigned long long", *t = gpuir__cg_ctype(d);
    if (k == GPUIR_OP_DIV) gpuir__str_appendf(s, "gpuir_div_%s(v%u, v%u)", d == GPUIR_I32 ? "i32" : "i64", a, b);
    else if (k == GPUIR_OP_MAX || k == GPUIR_OP_MIN)
        gpuir__str_appendf(s, "(v%u %s v%u ? v%u : v%u)", a, k == GPUIR_OP_MAX ? ">" : "<", b, a, b);
    else gpuir__str_appendf(s, "(%s)((%s)v%u %s (%s)v%u)", t, u, a, sym, u, b);
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
    const gpuir__attr *value = cls == GPUIR__CLASS_CONSTANT ? gpuir__attr_get(m, op, GPUIR__KEY_VALUE) : NULL;
    if (value && value->kind == GPUIR__ATTR_DENSE) {     /* its table (gpuir__cg_dense_tables) */
        gpuir__str_appendf(C->s, "gpuir_dense_%u[", (unsigned)(op - m->ops) + 1);
        gpuir__cg_type_index(C, C->s, S, &gpuir__value_at(m, dst)->type, ivar);
        gpuir__str_appendf(C->s, "]");
    } else if (value) gpuir__cg_literal(C->s, d, value);
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
    else if (op->kind == GPUIR_OP_BROADCAST) gpuir__cg_type_index(C, &idx, S, st, ivar);
    else {                                   /* out dim i is source dim perm[i] */
        const gpuir__attr *perm = gpuir__attr_get(m, op, GPUIR__KEY_PERM);
        const int64_t *pv = gpuir__ints_at(m, perm->off);
        gpuir__cg_dims sd = gpuir__cg_dims_of(C, st), od = gpuir__cg_dims_of(C, S);
        gpuir__cg_prod in_stride[GPUIR_MAX_RANK], after = {1, ""}, sv = {1, ""};
        for (int i = st->rank - 1; i >= 0; i--) {
            in_stride[i] = sv;
            gpuir__cg_prod_mul(&sv, &sd, i);
        }
        gpuir__str_appendf(&idx, "(0");
        for (int i = S->rank - 1; i >= 0; i--) {
            if (S->dims[i] != 1) {
                gpuir__str_appendf(&idx, " + (%s / ", ivar);
                gpuir__cg_prod_print(&idx, &after);
                gpuir__str_appendf(&idx, " %% ");
                gpuir__cg_dim(&idx, &od, i);
                gpuir__str_appendf(&idx, ") * ");
                gpuir__cg_prod_print(&idx, &in_stride[pv[i]]);
            }
            gpuir__cg_prod_mul(&after, &od, i);
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

/* Whether a destination covers space S: as many elements, or, with dynamic
   dims, the same dims. */
static bool gpuir__cg_same_space(const gpuir_type *d, const gpuir_type *S) {
    if (gpuir__type_is_static(d) && gpuir__type_is_static(S)) return gpuir__type_count(d) == gpuir__type_count(S);
    return d->rank == S->rank && memcmp(d->dims, S->dims, (size_t)d->rank * sizeof d->dims[0]) == 0;
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
        bool fill_private = cls == GPUIR__CLASS_CONSTANT && gpuir__cg_param_index(C, dst) < 0;  /* broadcast later */
        if (!fill_private && !gpuir__cg_same_space(dt, S))
            return gpuir__cg_fail(C, op, "writes a buffer whose shape differs from the kernel's iteration space");
        gpuir__cg_comment(C, C->k->ops[i], op);
        gpuir_result r;
        if (cls == GPUIR__CLASS_TRANSPOSE || cls == GPUIR__CLASS_RESHAPE || cls == GPUIR__CLASS_BROADCAST)
            r = gpuir__cg_gather(C, op, S, ivar);
        else if (gpuir__is_elementwise(cls) || cls == GPUIR__CLASS_CONSTANT) {
            if (cls == GPUIR__CLASS_CONSTANT && !gpuir__attr_get(m, op, GPUIR__KEY_VALUE))
                return gpuir__cg_fail(C, op, "has no value");
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
        gpuir__cg_type_index(C, C->s, S, &gpuir__value_at(m, dst)->type, ivar);
        gpuir__str_appendf(C->s, "] = %s(v%u);\n", wrap, C->cur[dst - 1] - 1);
    }
}

/* ---- kernels ---- */

/* What the executor needs to know of each rendered kernel. */
/* A tensor map a kernel takes (the WGMMA kernel's A and B^T): the tiled
   view of buffer parameter `param` that the runtime encodes at launch, once
   it knows the buffer's address: rank dims innermost first, the byte
   strides of dims 1.., a box of box[] elements, the 128-byte swizzle. */
typedef struct gpuir__cg_tmap {
    int param;
    unsigned dtype;         /* CUtensorMapDataType */
    unsigned rank;          /* 2, or 3 with a batch dim */
    unsigned long long dims[3], strides[2];
    unsigned box[3];
} gpuir__cg_tmap;

typedef struct gpuir__cg_kernel_info {
    uint32_t func;          /* the kernel's function id */
    unsigned n_tmaps;       /* tensor maps it takes after its other parameters */
    gpuir__cg_tmap tmaps[2];
    char cname[GPUIR_MAX_NAME + 16];  /* its name in the C source */
    bool barriers;          /* needs its threads to run as fibers in the emulator */
    uint32_t shared_bytes;  /* static shared memory it declares */
    uint32_t dynamic_bytes; /* dynamic shared memory its launches add to their smem */
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
            const gpuir__attr *sym = gpuir__attr_get(m, op, GPUIR__KEY_KERNEL), *block = gpuir__attr_get(m, op, GPUIR__KEY_BLOCK);
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

/* The signature: buffer parameters in order, const when the kernel never
   writes them, then each dynamic dim of each parameter as a long long
   (p<param>_d<axis>; the runtime passes them in that order). */
static void gpuir__cg_signature(gpuir__cg *C, const char *cname) {
    gpuir_module *m = C->m;
    size_t n = stbds_arrlenu(C->k->params);
    gpuir__str_appendf(C->s, "GPUIR_KERNEL %s%s(%s", C->tma ? "GPUIR_LAUNCH_BOUNDS(384, 1) " : "", cname,
                       n ? "GPUIR_LANE " : "GPUIR_LANE_ONLY");
    for (size_t i = 0; i < n; i++) {
        bool reads, writes;
        gpuir__param_access(m, C->k, i, &reads, &writes);
        const gpuir_type *t = &gpuir__value_at(m, C->k->params[i])->type;
        gpuir__str_appendf(C->s, "%s%s%s *p%zu", i ? ", " : "", writes ? "" : "const ", gpuir__cg_storage(t->dtype), i);
    }
    for (size_t i = 0; i < n; i++) {            /* then the dynamic dims, in order */
        const gpuir_type *t = &gpuir__value_at(m, C->k->params[i])->type;
        for (int a = 0; a < t->rank; a++)
            if (t->dims[a] == GPUIR_DYN) gpuir__str_appendf(C->s, ", long long p%zu_d%d", i, a);
    }
    if (C->tma) gpuir__str_appendf(C->s, ", GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)");
    gpuir__str_appendf(C->s, ") {\n");
}

static void gpuir__cg_reset_values(gpuir__cg *C) {
    memset(C->cur, 0, stbds_arrlenu(C->m->values) * sizeof *C->cur);
}

/* Four elements per thread through 16-byte loads and stores (see
   gpuir__kernel_vector_width): the chain runs once per element of the quad,
   in registers. */
/* Before an elementwise grid-stride loop: its grid covers the elements
   (gpuir__pass_configure: a block per 256 threads' worth), so each thread
   makes one pass, and an unrolled copy of the body that NVVM would build
   (4x plus the remainder) never runs but costs a third of the compile:
   the 3-op chain of tests/bench/elementwise.gir takes 50-55 ms of NVRTC
   CPU time instead of 78-89, 120 SASS instructions instead of 432, the
   same ones run (BENCHMARKS.md, compile latency). */
static void gpuir__cg_one_pass(gpuir__cg *C) {
    int depth = C->depth;
    C->depth = 1;                               /* the loop is at the kernel's top level */
    gpuir__cg_line(C, "GPUIR_NO_UNROLL");
    C->depth = depth;
}

static gpuir_result gpuir__cg_elementwise4(gpuir__cg *C, const gpuir_type *S) {
    gpuir_module *m = C->m;
    size_t n = stbds_arrlenu(C->k->ops), np = stbds_arrlenu(C->k->params);
    uint32_t out[GPUIR_MAX_OPERANDS][4];
    memset(out, 0, sizeof out);
    memset(C->loaded4, 0, np * sizeof *C->loaded4);
    gpuir__cg_one_pass(C);
    gpuir__str_appendf(C->s, "    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; "
                       "qq < %lldLL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {\n"
                       "        %s q = (%s)qq;\n", (long long)(gpuir__type_count(S) / 4), gpuir__cg_idx(C),
                       gpuir__cg_idx(C));
    C->ind = "        ";
    for (int lane = 0; lane < 4; lane++) {     /* every access goes through q */
        const char *ivar = "q";
        gpuir__cg_reset_values(C);
        C->lane = lane;
        gpuir_result r = gpuir__cg_chain(C, 0, n, S, ivar);
        C->lane = -1;
        if (r) return r;
        for (size_t p = 0; p < np; p++) out[p][lane] = C->cur[C->k->params[p] - 1];   /* its last value */
    }
    for (size_t p = 0; p < np; p++) {
        bool reads, writes;
        gpuir__param_access(m, C->k, p, &reads, &writes);
        if (!writes || !out[p][0]) continue;
        bool fl = gpuir__value_at(m, C->k->params[p])->type.dtype == GPUIR_F32;
        gpuir__str_appendf(C->s, "        ((%s *)p%zu)[q] = GPUIR_%s(v%u, v%u, v%u, v%u);\n", fl ? "float4" : "int4", p,
                           fl ? "FLOAT4" : "INT4", out[p][0] - 1, out[p][1] - 1, out[p][2] - 1, out[p][3] - 1);
    }
    gpuir__str_appendf(C->s, "    }\n");
    return GPUIR_OK;
}

/* A thread per element of the widest destination, grid-stride. */
static gpuir_result gpuir__cg_elementwise(gpuir__cg *C, const gpuir_type *S) {
    if (gpuir__kernel_vector_width(C->m, C->k) == 4) return gpuir__cg_elementwise4(C, S);
    size_t n = stbds_arrlenu(C->k->ops);
    gpuir__cg_one_pass(C);
    gpuir__str_appendf(C->s, "    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < ");
    gpuir__cg_count(C, C->s, S);
    gpuir__str_appendf(C->s, "; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {\n"
                       "        %s i = (%s)ii;\n", gpuir__cg_idx(C), gpuir__cg_idx(C));
    C->ind = "        ";
    gpuir_result r = gpuir__cg_chain(C, 0, n, S, "i");
    if (r) return r;
    gpuir__cg_store_outputs(C, 0, n, S, "i");
    gpuir__str_appendf(C->s, "    }\n");
    return GPUIR_OK;
}

/* The linear input index, in x's dims, of reduced element j of output o. */
static void gpuir__cg_reduce_index(gpuir__str *s, const gpuir__cg_dims *x, const bool *reduced) {
    gpuir__cg_prod after_o = {1, ""}, after_j = {1, ""}, stride = {1, ""};
    gpuir__str_appendf(s, "(0");
    for (int d = x->rank - 1; d >= 0; d--) {
        gpuir__cg_prod *after = reduced[d] ? &after_j : &after_o;
        if (x->dims[d] != 1) {
            gpuir__str_appendf(s, " + (%s / ", reduced[d] ? "j" : "o");
            gpuir__cg_prod_print(s, after);
            gpuir__str_appendf(s, " %% ");
            gpuir__cg_dim(s, x, d);
            gpuir__str_appendf(s, ") * ");
            gpuir__cg_prod_print(s, &stride);
        }
        gpuir__cg_prod_mul(after, x, d);
        gpuir__cg_prod_mul(&stride, x, d);
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

/* The body of a reduction's loop over its elements (at index `i`, in the
   loop's indentation): the fused producers, the reduced value, `acc`
   combined with it (converted by `cast`, e.g. "(float)"); closes the loop. */
static gpuir_result gpuir__cg_reduce_step(gpuir__cg *C, size_t at, const gpuir__op *op, const gpuir_type *x,
                                          const char *cast) {
    gpuir__cg_reset_values(C);
    C->ind = "            ";
    gpuir_result r = gpuir__cg_chain(C, 0, at, x, "i");
    uint32_t v = 0;
    if (!r) r = gpuir__cg_operand(C, op, gpuir__op_operand(C->m, op, 0), x, "i", &v);
    if (r) return r;
    gpuir__cg_comment(C, C->k->ops[at], op);
    gpuir__str_appendf(C->s, "            ");
    char val[40];
    snprintf(val, sizeof val, "%sv%u", cast, v);
    gpuir__cg_combine(C->s, op->kind, gpuir_dtype_is_float(gpuir__value_at(C->m, gpuir__op_operand(C->m, op, 1))->type.dtype),
                      "acc", val);
    gpuir__str_appendf(C->s, "\n        }\n");
    return GPUIR_OK;
}

/* A column reduction (gpuir__reduce_is_columns): a thread per output o,
   grid-stride, summing x[j * count + o] for j < the leading extent (the
   fused producers computed at each), then the fused users on the result
   in registers, and every output stored. */
static gpuir_result gpuir__cg_reduce_columns(gpuir__cg *C, size_t at) {
    gpuir_module *m = C->m;
    const gpuir__op *op = gpuir__op_at(m, C->k->ops[at]);
    uint32_t src = gpuir__op_operand(m, op, 0), dst = gpuir__op_operand(m, op, 1);
    const gpuir_type *x = &gpuir__value_at(m, src)->type, *y = &gpuir__value_at(m, dst)->type;
    long long rows = x->dims[0], count = gpuir__type_count(x) / rows;
    const char *init = op->kind == GPUIR_OP_REDUCE_MAX ? "-GPUIR_INF" : "0.0f";
    gpuir__str_appendf(C->s, "    for (long long o = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; o < %lldLL;"
                       " o += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {\n        float acc = %s;\n"
                       "        GPUIR_UNROLL\n        for (int j = 0; j < %lld; j++) {\n"
                       "            %s i = (%s)(j * %lldLL + o);\n",
                       count, init, rows, gpuir__cg_idx(C), gpuir__cg_idx(C), count);
    gpuir_result r = gpuir__cg_reduce_step(C, at, op, x, "");
    if (r) return r;
    gpuir__cg_reset_values(C);
    C->ind = "        ";
    uint32_t sum = gpuir__cg_new_var(C, y->dtype);
    const char *round = y->dtype == GPUIR_F16 ? "gpuir_round_f16" : y->dtype == GPUIR_BF16 ? "gpuir_round_bf16" : "";
    if (op->kind == GPUIR_OP_REDUCE_MEAN) gpuir__str_appendf(C->s, "        float v%u = %s(acc / %lld.0f);\n", sum, round, rows);
    else gpuir__str_appendf(C->s, "        float v%u = %s(acc);\n", sum, round);
    C->cur[dst - 1] = sum + 1;
    for (size_t i = 0; i < at && !r; i++)     /* the splats the fused users read, again */
        if (gpuir__op_at(m, C->k->ops[i])->kind == GPUIR_OP_CONSTANT) r = gpuir__cg_chain(C, i, i + 1, y, "o");
    if (!r) r = gpuir__cg_chain(C, at + 1, stbds_arrlenu(C->k->ops), y, "o");
    if (r) return r;
    gpuir__cg_store_outputs(C, at, stbds_arrlenu(C->k->ops), y, "o");
    gpuir__str_appendf(C->s, "    }\n");
    return GPUIR_OK;
}

/* A block per output element: its threads stride over the reduced elements,
   computing the fused elementwise producers on the way. */
static gpuir_result gpuir__cg_reduce(gpuir__cg *C, size_t at) {
    gpuir_module *m = C->m;
    const gpuir__op *op = gpuir__op_at(m, C->k->ops[at]);
    if (gpuir__reduce_is_columns(m, op) && !gpuir__kernel_is_dynamic(m, C->k)) return gpuir__cg_reduce_columns(C, at);
    uint32_t src = gpuir__op_operand(m, op, 0), dst = gpuir__op_operand(m, op, 1);
    const gpuir_type *x = &gpuir__value_at(m, src)->type, *y = &gpuir__value_at(m, dst)->type;
    bool reduced[GPUIR_MAX_RANK] = {false};
    const gpuir__attr *axes = gpuir__attr_get(m, op, GPUIR__KEY_AXES);
    for (uint32_t a = 0; axes && a < axes->n; a++) {
        int64_t ax = gpuir__ints_at(m, axes->off)[a];
        if (gpuir__norm_axis(&ax, x->rank)) reduced[ax] = true;
    }
    int p = gpuir__cg_param_index(C, dst);
    if (p < 0) return gpuir__cg_fail(C, op, "writes a kernel-private buffer");
    for (size_t i = at + 1; i < stbds_arrlenu(C->k->ops); i++)
        if (gpuir__class_computes(gpuir__info(gpuir__op_at(m, C->k->ops[i])->kind)->cls))
            return gpuir__cg_fail(C, op, "ops after a reduction in one kernel are not supported "
                                  "(but after a column reduction of static sizes)");
    gpuir__cg_dims xd = gpuir__cg_dims_of(C, x);
    gpuir__cg_prod n_red = {1, ""};                   /* elements per output */
    for (int d = 0; d < x->rank; d++)
        if (reduced[d]) gpuir__cg_prod_mul(&n_red, &xd, d);
    char count[200];
    gpuir__cg_prod_text(&n_red, count, sizeof count);
    bool is_float = gpuir_dtype_is_float(y->dtype);
    const char *acc_t = is_float ? "float" : "long long";
    const char *init = op->kind != GPUIR_OP_REDUCE_MAX ? (is_float ? "0.0f" : "0LL") :
                       is_float ? "-GPUIR_INF" : y->dtype == GPUIR_I32 ? "(-2147483647LL - 1)" :
                       "(-9223372036854775807LL - 1)";
    int64_t slots = C->threads % 32 == 0 ? 32 : C->threads;
    C->shared_bytes = (uint32_t)(slots * (is_float ? 4 : 8));
    C->barriers = true;
    gpuir__str_appendf(C->s, "    GPUIR_SHARED(%s, red, %lld, 0);\n    int t = GPUIR_THREAD_RANK;\n"
                       "    for (long long o = GPUIR_BLOCK_RANK; o < ", acc_t, (long long)slots);
    gpuir__cg_count(C, C->s, y);
    gpuir__str_appendf(C->s, "; o += GPUIR_GRID_BLOCKS) {\n        %s acc = %s;\n"
                       "        for (long long j = t; j < %s; j += %lld) {\n            %s i = (%s)",
                       acc_t, init, count, (long long)C->threads, gpuir__cg_idx(C),
                       gpuir__cg_idx(C));
    gpuir__cg_reduce_index(C->s, &xd, reduced);
    gpuir__str_appendf(C->s, ";\n");
    char cast[16];
    snprintf(cast, sizeof cast, "(%s)", acc_t);
    gpuir_result r = gpuir__cg_reduce_step(C, at, op, x, cast);
    if (r) return r;
    gpuir__cg_block_reduce(C, op->kind, is_float, acc_t, init);
    const char *wrap = y->dtype == GPUIR_F16 ? "gpuir_f32_to_f16" : y->dtype == GPUIR_BF16 ? "gpuir_f32_to_bf16" :
                       y->dtype == GPUIR_I32 ? "(int)(unsigned)(unsigned long long)" : "";
    gpuir__str_appendf(C->s, "        if (t == 0) p%d[o] = %s(", p, wrap);
    if (op->kind != GPUIR_OP_REDUCE_MEAN) gpuir__str_appendf(C->s, "acc");
    else if (is_float && !n_red.sym[0]) gpuir__str_appendf(C->s, "acc / %lld.0f", (long long)n_red.num);
    else if (is_float) gpuir__str_appendf(C->s, "acc / (float)%s", count);
    else if (n_red.sym[0]) gpuir__str_appendf(C->s, "(%s ? acc / %s : 0LL)", count, count);
    else if (n_red.num) gpuir__str_appendf(C->s, "acc / %lldLL", (long long)n_red.num);
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
static void gpuir__cg_batch_index(const gpuir__cg *C, gpuir__str *s, const gpuir_type *out, const gpuir_type *t) {
    gpuir__cg_dims od = gpuir__cg_dims_of(C, out), td = gpuir__cg_dims_of(C, t);
    od.rank -= 2;
    td.rank -= 2;
    gpuir__cg_bcast_index(s, &od, &td, "batch");
}

/* A matmul's sizes: M, N and K, as numbers or expressions. */
typedef struct gpuir__cg_mm_sizes { gpuir__cg_size M, N, K; } gpuir__cg_mm_sizes;

static gpuir__cg_mm_sizes gpuir__cg_mm_sizes_of(const gpuir__cg *C, const gpuir__op *op) {
    gpuir_module *m = C->m;
    const gpuir_type *a = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
    const gpuir_type *o = &gpuir__value_at(m, gpuir__op_operand(m, op, 2))->type;
    gpuir__cg_dims ad = gpuir__cg_dims_of(C, a), od = gpuir__cg_dims_of(C, o);
    gpuir__cg_mm_sizes z;
    z.M = gpuir__cg_size_dim(&od, o->rank - 2);
    z.N = gpuir__cg_size_dim(&od, o->rank - 1);
    z.K = gpuir__cg_size_dim(&ad, a->rank - (gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_A) ? 2 : 1));
    return z;
}

/* The K range a matmul tile sums, as C text for the kernel: `start` is
   where k tile 0 begins ("" or "kb + "), `bound` the end of the range (K,
   or ke) and `count` its k tiles of `depth` (none when depth is 0). For a split-K matmul
   (k_slices = S) the slice is the tile's batch / inner (inner: the
   matmul's own batches, an expression) and the kernel gets kb, ke and
   kn; A and B keep their rows of K elements, so the addresses stay
   `gk`-based and only the range moves. */
typedef struct gpuir__cg_krange { char start[16], bound[32], count[32]; } gpuir__cg_krange;

static gpuir__cg_krange gpuir__cg_mm_krange(gpuir__cg *C, const gpuir__op *op, long long K, int depth,
                                           const char *inner) {
    gpuir__cg_krange kr;
    const gpuir__attr *ks = gpuir__attr_get(C->m, op, GPUIR__KEY_K_SLICES);
    if (!ks) {
        snprintf(kr.start, sizeof kr.start, "%s", "");
        snprintf(kr.bound, sizeof kr.bound, "%lldLL", K);
        snprintf(kr.count, sizeof kr.count, "%lldLL", (K + depth - 1) / depth);
        return kr;
    }
    long long len = (long long)gpuir_matmul_k_slice_len(K, ks->i);
    gpuir__str_appendf(C->s, "        long long kb = batch / (%s) * %lldLL, ke = kb + %lldLL < %lldLL ? kb + %lldLL : %lldLL;"
                       "  /* k slice */\n", inner, len, len, K, len, K);
    if (depth) gpuir__str_appendf(C->s, "        long long kn = (ke - kb + %d) / %d;\n", depth - 1, depth);
    snprintf(kr.start, sizeof kr.start, "kb + ");
    snprintf(kr.bound, sizeof kr.bound, "ke");
    snprintf(kr.count, sizeof kr.count, "kn");
    return kr;
}

/* The matmul's own batches in a result of `count` elements: with
   k_slices = S, the result's leading S slices do not count. */
static long long gpuir__mm_inner_batches(const gpuir_module *m, const gpuir__op *op, const gpuir_type *o) {
    long long M = o->dims[o->rank - 2], N = o->dims[o->rank - 1];
    const gpuir__attr *ks = gpuir__attr_get(m, op, GPUIR__KEY_K_SLICES);
    return M && N ? gpuir__type_count(o) / (M * N) / (ks ? ks->i : 1) : 0;
}

/* The matmul's tiles: A and B staged through shared memory, one output
   tile per block (grid-stride over tiles), elements spread over threads. */
static void gpuir__cg_matmul_tiles(gpuir__cg *C, const gpuir__op *op, int pa, int pb, const char *ct,
                                   const char *inner) {
    gpuir_module *m = C->m;
    const gpuir_type *a = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
    const gpuir_type *b = &gpuir__value_at(m, gpuir__op_operand(m, op, 1))->type;
    const gpuir_type *o = &gpuir__value_at(m, gpuir__op_operand(m, op, 2))->type;
    bool ta = gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_A), tb = gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_B);
    gpuir__cg_mm_sizes z = gpuir__cg_mm_sizes_of(C, op);
    const char *M = z.M.text, *N = z.N.text, *K = z.K.text;
    gpuir__cg_size MK = gpuir__cg_size_mul(&z.M, &z.K), KN = gpuir__cg_size_mul(&z.K, &z.N);
    gpuir__str *s = C->s;
    gpuir__str_appendf(s, "        long long a0 = ");
    gpuir__cg_batch_index(C, s, o, a);
    gpuir__str_appendf(s, " * %s, b0 = ", MK.text);
    gpuir__cg_batch_index(C, s, o, b);
    gpuir__str_appendf(s, " * %s;\n", KN.text);
    const char *kb = "0", *ke = K;              /* the K range: all of it, or the k slice's */
    if (gpuir__attr_get(m, op, GPUIR__KEY_K_SLICES)) {
        gpuir__cg_mm_krange(C, op, z.K.n, 0, inner);   /* no kn: the loop runs to ke */
        kb = "kb";
        ke = "ke";
    }
    gpuir__str_appendf(s, "        for (long long k0 = %s; k0 < %s; k0 += %d) {\n"
                       "            for (int e = t; e < %d; e += %lld) {\n"
                       "                long long gm = tm * %d + e / %d, gk = k0 + e %% %d;\n"
                       "                as[e] = gm < %s && gk < %s ? ",
                       kb, ke, GPUIR__MM_BK, GPUIR__MM_BM * GPUIR__MM_BK, (long long)C->threads, GPUIR__MM_BM,
                       GPUIR__MM_BK, GPUIR__MM_BK, M, ke);
    char idx[720];
    bool tf32 = gpuir__op_flag(m, op, GPUIR__KEY_TF32);
    snprintf(idx, sizeof idx, "a0 + gm * %s + gk * %s", ta ? "1LL" : K, ta ? M : "1LL");
    gpuir__str_appendf(s, tf32 ? "gpuir_tf32_round(" : "");
    gpuir__cg_load_expr(s, a->dtype, pa, idx);
    gpuir__str_appendf(s, tf32 ? ")" : "");
    gpuir__str_appendf(s, " : (%s)0;\n            }\n"
                       "            for (int e = t; e < %d; e += %lld) {\n"
                       "                long long gk = k0 + e / %d, gn = tn * %d + e %% %d;\n"
                       "                bs[e] = gk < %s && gn < %s ? ",
                       ct, GPUIR__MM_BK * GPUIR__MM_BN, (long long)C->threads, GPUIR__MM_BN, GPUIR__MM_BN,
                       GPUIR__MM_BN, ke, N);
    snprintf(idx, sizeof idx, "b0 + gk * %s + gn * %s", tb ? "1LL" : N, tb ? K : "1LL");
    gpuir__str_appendf(s, tf32 ? "gpuir_tf32_round(" : "");
    gpuir__cg_load_expr(s, b->dtype, pb, idx);
    gpuir__str_appendf(s, tf32 ? ")" : "");
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


/* The end of a matmul kernel's output loop: `value` (of C type ctype) is
   the matmul's result for output index i, the epilogue ops run on it,
   every output is stored, and the tile and output loops close. */
static gpuir_result gpuir__cg_matmul_epilogue(gpuir__cg *C, size_t at, const char *ctype, const char *value) {
    const gpuir__op *op = gpuir__op_at(C->m, C->k->ops[at]);
    uint32_t dst = gpuir__op_operand(C->m, op, 2);
    const gpuir_type *o = &gpuir__value_at(C->m, dst)->type;
    gpuir__cg_reset_values(C);
    C->ind = "            ";
    uint32_t v = gpuir__cg_new_var(C, o->dtype);
    gpuir__cg_comment(C, C->k->ops[at], op);
    gpuir__str_appendf(C->s, "            %s v%u = %s;\n", ctype, v, value);
    gpuir_result r = gpuir__cg_chain(C, 0, at, o, "i");
    C->cur[dst - 1] = v + 1;
    if (!r) r = gpuir__cg_chain(C, at + 1, stbds_arrlenu(C->k->ops), o, "i");
    if (r) return r;
    gpuir__cg_store_outputs(C, at, stbds_arrlenu(C->k->ops), o, "i");
    gpuir__str_appendf(C->s, "        }\n    }\n");
    return GPUIR_OK;
}

/* Which tile a block of a fast matmul computes: tiles in order of block
   rank go down a band of GPUIR__MM_BAND tile rows before the next column
   (the last band has the rows left), band after band, batch after batch.
   Blocks that run together then share A's rows of one band and a few
   columns of B in L2, rather than one row of A and all of B. A bijection
   for any grid: blocks stride over the tiles. Sets tm, tn and batch. */
#define GPUIR__MM_BAND 8
static void gpuir__cg_mm_tile_order(gpuir__cg *C, long long tiles_m, long long tiles_n) {
    long long band = GPUIR__MM_BAND * tiles_n, mn = tiles_m * tiles_n;
    if (mn == 0) band = mn = 1;                 /* no tiles: the loop never runs; no division by 0 */
    gpuir__str_appendf(C->s, "        long long u = tile %% %lldLL, first = u / %lldLL * %d, rows = %lldLL - first;\n"
                       "        if (rows > %d) rows = %d;\n"
                       "        long long tm = first + u %% %lldLL %% rows, tn = u %% %lldLL / rows, batch = tile / %lldLL;\n",
                       mn, band, GPUIR__MM_BAND, tiles_m, GPUIR__MM_BAND, GPUIR__MM_BAND, band, band, mn);
}

/* The start of a fast matmul's tile: which one (gpuir__cg_mm_tile_order)
   and where its batch's A and B begin (a0, b0; static sizes). */
static void gpuir__cg_mm_tile_start(gpuir__cg *C, const gpuir_type *o, const gpuir_type *a, const gpuir_type *b,
                                    long long tiles_m, long long tiles_n, long long K) {
    long long M = o->dims[o->rank - 2], N = o->dims[o->rank - 1];
    gpuir__cg_mm_tile_order(C, tiles_m, tiles_n);
    gpuir__str_appendf(C->s, "        long long a0 = ");
    gpuir__cg_batch_index(C, C->s, o, a);
    gpuir__str_appendf(C->s, " * %lldLL, b0 = ", M * K);
    gpuir__cg_batch_index(C, C->s, o, b);
    gpuir__str_appendf(C->s, " * %lldLL;\n", K * N);
}

/* The register-tiled f32 matmuls (GPUIR__MATMUL_REGISTER_TILED: bm = 128;
   GPUIR__MATMUL_REGISTER_TILED_64: bm = 64): bm x bm block tiles, 16-deep
   k stages; 256 threads in 8 warps of 4 x 8 lanes, the warps 4 x 2 over the
   block tile, each thread holding ts x ts sub-tiles of 4x4 outputs at
   strides of 16 rows and 32 columns (ts = bm / 64), so a quarter warp's
   16-byte shared reads touch distinct banks or broadcast. A is stored
   transposed (as[k][m], rows padded to bm + 4 floats), B as is. Two
   shared-memory stages: while the block computes on one, each thread holds
   the next k-tile's global loads in registers and stores them into the
   other, one barrier a k-step. Blocks take the tiles of a matrix in bands
   (gpuir__cg_mm_tile_order). */
#define GPUIR__RT_BK 16
typedef struct gpuir__rt {
    int bm, ts, sa;         /* block tile, sub-tiles per dim, A row stride */
    int nf;                 /* floats of each operand tile a thread loads: bm * 16 / 256 */
    long long M, N, K;      /* K: the rows' length (and the range's end unless split) */
    const char *kend;       /* where the tile's K range ends: "<K>LL" or "ke" */
} gpuir__rt;

/* Global loads of the k-tile at k0 into registers (ra for A, rb for B):
   16-byte loads when rows are multiples of 4 floats, else scalars; zeros
   past the edges. */
static void gpuir__cg_rt_loads(gpuir__cg *C, const gpuir__rt *R, int pa, int pb) {
    gpuir__str *s = C->s;
    int bm = R->bm;
    if (R->K % 4 == 0)
        gpuir__str_appendf(s, "            GPUIR_UNROLL\n            for (int r = 0; r < %d; r++) {\n"
                           "                int e = t + r * 256, m = e / 4, kq = e %% 4 * 4;\n"
                           "                long long gm = tm * %d + m, gk = k0 + kq;\n"
                           "                ra[r] = gm < %lldLL && gk < %s ? *(const float4 *)(p%d + a0 + gm * %lldLL + gk)"
                           " : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);\n            }\n",
                           R->nf / 4, bm, R->M, R->kend, pa, R->K);
    else
        gpuir__str_appendf(s, "            GPUIR_UNROLL\n            for (int r = 0; r < %d; r++) {\n"
                           "                int e = t + r * 256, m = e / 16, kk = e %% 16;\n"
                           "                long long gm = tm * %d + m, gk = k0 + kk;\n"
                           "                ra[r] = gm < %lldLL && gk < %s ? p%d[a0 + gm * %lldLL + gk] : 0.0f;\n"
                           "            }\n", R->nf, bm, R->M, R->kend, pa, R->K);
    if (R->N % 4 == 0)
        gpuir__str_appendf(s, "            GPUIR_UNROLL\n            for (int r = 0; r < %d; r++) {\n"
                           "                int e = t + r * 256, kk = e / %d, nq = e %% %d * 4;\n"
                           "                long long gk = k0 + kk, gn = tn * %d + nq;\n"
                           "                rb[r] = gk < %s && gn < %lldLL ? *(const float4 *)(p%d + b0 + gk * %lldLL + gn)"
                           " : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);\n            }\n",
                           R->nf / 4, bm / 4, bm / 4, bm, R->kend, R->N, pb, R->N);
    else
        gpuir__str_appendf(s, "            GPUIR_UNROLL\n            for (int r = 0; r < %d; r++) {\n"
                           "                int e = t + r * 256, kk = e / %d, n = e %% %d;\n"
                           "                long long gk = k0 + kk, gn = tn * %d + n;\n"
                           "                rb[r] = gk < %s && gn < %lldLL ? p%d[b0 + gk * %lldLL + gn] : 0.0f;\n"
                           "            }\n", R->nf, bm, bm, bm, R->kend, R->N, pb, R->N);
}

/* Stores ra and rb into shared-memory stage `st` (an expression). */
static void gpuir__cg_rt_stores(gpuir__cg *C, const gpuir__rt *R, const char *st) {
    gpuir__str *s = C->s;
    int bm = R->bm, sa = R->sa;
    if (R->K % 4 == 0)
        gpuir__str_appendf(s, "            GPUIR_UNROLL\n            for (int r = 0; r < %d; r++) {\n"
                           "                int e = t + r * 256, m = e / 4, kq = e %% 4 * 4;\n"
                           "                float *d = as + (%s) * %d + kq * %d + m;\n"
                           "                d[0] = ra[r].x; d[%d] = ra[r].y; d[%d] = ra[r].z; d[%d] = ra[r].w;\n            }\n",
                           R->nf / 4, st, GPUIR__RT_BK * sa, sa, sa, 2 * sa, 3 * sa);
    else
        gpuir__str_appendf(s, "            GPUIR_UNROLL\n            for (int r = 0; r < %d; r++) {\n"
                           "                int e = t + r * 256;\n"
                           "                as[(%s) * %d + e %% 16 * %d + e / 16] = ra[r];\n            }\n",
                           R->nf, st, GPUIR__RT_BK * sa, sa);
    if (R->N % 4 == 0)
        gpuir__str_appendf(s, "            GPUIR_UNROLL\n            for (int r = 0; r < %d; r++)\n"
                           "                *(float4 *)(bs + (%s) * %d + (t + r * 256) * 4) = rb[r];\n",
                           R->nf / 4, st, GPUIR__RT_BK * bm);
    else
        gpuir__str_appendf(s, "            GPUIR_UNROLL\n            for (int r = 0; r < %d; r++) bs[(%s) * %d + t + r * 256] = rb[r];\n",
                           R->nf, st, GPUIR__RT_BK * bm);
}

/* The FMAs of shared-memory stage `st`: per k, ts 16-byte reads of A and of
   B, 16 * ts * ts FMAs. */
static void gpuir__cg_rt_compute(gpuir__cg *C, const gpuir__rt *R, const char *st) {
    int n = 4 * R->ts;
    gpuir__str_appendf(C->s, "            GPUIR_UNROLL\n            for (int kk = 0; kk < %d; kk++) {\n"
                       "                const float *x = as + ((%s) * %d + kk) * %d + rm, *y = bs + ((%s) * %d + kk) * %d + rn;\n"
                       "                float ar[%d], br[%d];\n"
                       "                GPUIR_UNROLL\n                for (int q = 0; q < %d; q++) {\n"
                       "                    float4 u = *(const float4 *)(x + q * 16), v = *(const float4 *)(y + q * 32);\n"
                       "                    ar[q * 4] = u.x; ar[q * 4 + 1] = u.y; ar[q * 4 + 2] = u.z; ar[q * 4 + 3] = u.w;\n"
                       "                    br[q * 4] = v.x; br[q * 4 + 1] = v.y; br[q * 4 + 2] = v.z; br[q * 4 + 3] = v.w;\n"
                       "                }\n"
                       "                GPUIR_UNROLL\n                for (int i = 0; i < %d; i++)\n"
                       "                    GPUIR_UNROLL\n                    for (int j = 0; j < %d; j++) acc[i][j] += ar[i] * br[j];\n"
                       "            }\n",
                       GPUIR__RT_BK, st, GPUIR__RT_BK, R->sa, st, GPUIR__RT_BK, R->bm, n, n, R->ts, n, n);
}

static gpuir_result gpuir__cg_matmul_rt(gpuir__cg *C, size_t at, int pa, int pb, int bm) {
    gpuir_module *m = C->m;
    const gpuir__op *op = gpuir__op_at(m, C->k->ops[at]);
    uint32_t dst = gpuir__op_operand(m, op, 2);
    const gpuir_type *a = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
    const gpuir_type *b = &gpuir__value_at(m, gpuir__op_operand(m, op, 1))->type;
    const gpuir_type *o = &gpuir__value_at(m, dst)->type;
    gpuir__rt R = {bm, bm / 64, bm + 4, bm * GPUIR__RT_BK / 256, o->dims[o->rank - 2], o->dims[o->rank - 1],
                   a->dims[a->rank - 1], NULL};
    long long M = R.M, N = R.N, K = R.K, n = 4 * R.ts;
    long long tiles_n = (N + bm - 1) / bm, tiles_m = (M + bm - 1) / bm, batches = gpuir__type_count(o) / (M * N);
    unsigned a_floats = 2 * GPUIR__RT_BK * (unsigned)R.sa, b_floats = 2 * GPUIR__RT_BK * (unsigned)bm;
    C->shared_bytes = (a_floats + b_floats) * 4;
    C->barriers = true;
    gpuir__str_appendf(C->s, "    GPUIR_SHARED(float, as, %u, 0);\n    GPUIR_SHARED(float, bs, %u, %u);\n"
                       "    int t = GPUIR_THREAD_RANK, w = t / 32, l = t %% 32;\n"
                       "    int rm = w / 2 * %d + l / 8 * 4, rn = w %% 2 * %d + l %% 8 * 4;\n"
                       "    for (long long tile = GPUIR_BLOCK_RANK; tile < %lldLL; tile += GPUIR_GRID_BLOCKS) {\n",
                       a_floats, b_floats, a_floats * 4, 16 * R.ts, 32 * R.ts, tiles_n * tiles_m * batches);
    gpuir__cg_mm_tile_start(C, o, a, b, tiles_m, tiles_n, K);
    char inner[32];
    snprintf(inner, sizeof inner, "%lldLL", gpuir__mm_inner_batches(m, op, o));
    gpuir__cg_krange kr = gpuir__cg_mm_krange(C, op, K, GPUIR__RT_BK, inner);
    R.kend = kr.bound;
    gpuir__str_appendf(C->s, "        float acc[%lld][%lld];\n"
                       "        GPUIR_UNROLL\n        for (int i = 0; i < %lld; i++)\n"
                       "            GPUIR_UNROLL\n            for (int j = 0; j < %lld; j++) acc[i][j] = 0.0f;\n"
                       "        %s ra[%d];\n        %s rb[%d];\n"
                       "        long long k0 = %s;\n        {\n",
                       n, n, n, n, K % 4 == 0 ? "float4" : "float", K % 4 == 0 ? R.nf / 4 : R.nf,
                       N % 4 == 0 ? "float4" : "float", N % 4 == 0 ? R.nf / 4 : R.nf, kr.start[0] ? "kb" : "0");
    gpuir__cg_rt_loads(C, &R, pa, pb);
    gpuir__cg_rt_stores(C, &R, "0");
    gpuir__str_appendf(C->s, "        }\n        GPUIR_SYNC();\n"
                       "        for (long long kt = 0; kt < %s; kt++) {\n"
                       "            int st = (int)(kt & 1);\n"
                       "            if (kt + 1 < %s) {\n            k0 = %s(kt + 1) * %d;\n",
                       kr.count, kr.count, kr.start, GPUIR__RT_BK);
    gpuir__cg_rt_loads(C, &R, pa, pb);
    gpuir__str_appendf(C->s, "            }\n");
    gpuir__cg_rt_compute(C, &R, "st");
    gpuir__str_appendf(C->s, "            if (kt + 1 < %s) {\n", kr.count);
    gpuir__cg_rt_stores(C, &R, "st ^ 1");
    gpuir__str_appendf(C->s, "            }\n            GPUIR_SYNC();\n        }\n"
                       "        GPUIR_UNROLL\n        for (int ii = 0; ii < %lld; ii++)\n"
                       "            GPUIR_UNROLL\n            for (int jj = 0; jj < %lld; jj++) {\n"
                       "            long long gm = tm * %d + rm + ii / 4 * 16 + ii %% 4, gn = tn * %d + rn + jj / 4 * 32 + jj %% 4;\n"
                       "            if (gm >= %lldLL || gn >= %lldLL) continue;\n"
                       "            %s i = (%s)(batch * %lldLL + gm * %lldLL + gn);\n",
                       n, n, bm, bm, M, N, gpuir__cg_idx(C), gpuir__cg_idx(C), M * N, N);
    return gpuir__cg_matmul_epilogue(C, at, "float", "acc[ii][jj]");
}

/* Tensor-core tiles (see gpuir__matmul_form_of): 128x128 block tiles, 64
   bytes of k a stage (32 halves or 16 floats), GPUIR__TC_STAGES (3)
   shared-memory stages in dynamic shared memory (55.5 KiB, 60 KiB with B
   transposed), filled by cp.async two k tiles ahead of the multiply; 8
   warps in 2 x 4, each computing 64x32 outputs as 4 x 4 mma tiles of 16x8
   (64 f32 accumulators a thread; 124-128 registers on sm_80/sm_90, two
   blocks an SM). f16 and bf16 fragments come through ldmatrix.x4 (.trans
   for B's k-major rows), TF32 ones a float at a time. Rows in shared
   memory are padded (A and B^T rows to 80 bytes, B rows to 272) so the 8
   rows of each ldmatrix phase, and the TF32 loads, hit distinct banks.
   Blocks take the tiles in bands of tile rows (gpuir__cg_mm_tile_order). */
typedef struct gpuir__tc {
    bool tf32;              /* f32 operands as TF32: m16n8k8, one element a register */
    bool tb;                /* B transposed: B^T's rows travel like A's */
    int es;                 /* element bytes: 2 or 4 */
    int bk;                 /* k a stage: 64 bytes of it */
    int a_row;              /* elements a row of A (and B^T) in shared memory */
    const char *elem;       /* the element's C type in shared memory */
    const char *mma;        /* which GPUIR_MMA_*: F16, BF16 or TF32 */
} gpuir__tc;

#define GPUIR__TC_BROW 136                  /* elements a row of B in shared memory */
#define GPUIR__TC_STAGES 3                  /* shared-memory stages in flight (at least 2) */

static gpuir__tc gpuir__tc_of(gpuir_dtype d, bool tf32, bool tb) {
    gpuir__tc t;
    t.tf32 = tf32;
    t.tb = tb;
    t.es = (int)gpuir_dtype_size(d);
    t.bk = 64 / t.es;
    t.a_row = t.bk + 16 / t.es;
    t.elem = tf32 ? "float" : "unsigned short";
    t.mma = tf32 ? "TF32" : d == GPUIR_BF16 ? "BF16" : "F16";
    return t;
}

/* Elements of one stage: A's 128 rows, then B's bk rows (or B^T's 128). */
static int gpuir__tc_stage(const gpuir__tc *t) {
    return 128 * t->a_row + (t->tb ? 128 * t->a_row : t->bk * GPUIR__TC_BROW);
}

/* cp.async of 512 16-byte pieces (two a thread): `coords` sets r, c and
   the global indices, `ok` says whether a piece is in range, `src` and
   `dst` are its element offsets in global and shared memory. */
static void gpuir__cg_tc_copy(gpuir__str *s, const char *coords, const char *ok, int p, const char *src,
                              const char *dst) {
    gpuir__str_appendf(s, "                for (int e = t; e < 512; e += 256) {\n"
                       "                    %s\n"
                       "                    int ok = %s;\n"
                       "                    gpuir_cp_async16(sm + %s, ok ? (const void *)(p%d + %s) : (const void *)p%d, ok);\n"
                       "                }\n", coords, ok, dst, p, src, p);
}

/* Fills stage `st` with the A and B tiles at k0. */
static void gpuir__cg_tc_loads(gpuir__cg *C, const gpuir__tc *t, int pa, int pb, long long M, long long N, long long K,
                               const char *kend) {
    char coords[160], ok[160], src[160], dst[160];
    int vec = 16 / t->es, pieces = t->bk / vec;         /* a row of A: pieces of vec elements */
    snprintf(coords, sizeof coords, "int r = e / %d, c = e %% %d * %d;\n"
             "                    long long gm = tm * 128 + r, gk = k0 + c;", pieces, pieces, vec);
    snprintf(ok, sizeof ok, "gm < %lldLL && gk < %s", M, kend);
    snprintf(src, sizeof src, "a0 + gm * %lldLL + gk", K);
    snprintf(dst, sizeof dst, "st * %d + r * %d + c", gpuir__tc_stage(t), t->a_row);
    gpuir__cg_tc_copy(C->s, coords, ok, pa, src, dst);
    if (t->tb) {
        snprintf(coords, sizeof coords, "int r = e / %d, c = e %% %d * %d;\n"
                 "                    long long gn = tn * 128 + r, gk = k0 + c;", pieces, pieces, vec);
        snprintf(ok, sizeof ok, "gn < %lldLL && gk < %s", N, kend);
        snprintf(src, sizeof src, "b0 + gn * %lldLL + gk", K);
        snprintf(dst, sizeof dst, "st * %d + %d + r * %d + c", gpuir__tc_stage(t), 128 * t->a_row, t->a_row);
    } else {
        snprintf(coords, sizeof coords, "int r = e / %d, c = e %% %d * %d;\n"
                 "                    long long gk = k0 + r, gn = tn * 128 + c;", 128 / vec, 128 / vec, vec);
        snprintf(ok, sizeof ok, "gk < %s && gn < %lldLL", kend, N);
        snprintf(src, sizeof src, "b0 + gk * %lldLL + gn", N);
        snprintf(dst, sizeof dst, "st * %d + %d + r * %d + c", gpuir__tc_stage(t), 128 * t->a_row, GPUIR__TC_BROW);
    }
    gpuir__cg_tc_copy(C->s, coords, ok, pb, src, dst);
}

/* One TF32 register of a fragment: base[off] rounded to TF32. */
static void gpuir__cg_tc_reg(gpuir__str *s, const char *reg, char base, int off) {
    gpuir__str_appendf(s, "%s = gpuir_tf32_bits(%c[%d]);", reg, base, off);
}

/* The TF32 fragments of k step kk, one float a register from shared
   memory (lane l: g = l / 4, q = l % 4; A's registers hold rows g and
   g + 8 at k = q, then the same at k + 4; B's hold column g at those k). */
static void gpuir__cg_tc_frags_tf32(gpuir__str *s, const gpuir__tc *t) {
    gpuir__str_appendf(s, "                unsigned af[4][4], bf[4][2];\n"
                       "                GPUIR_UNROLL\n                for (int i = 0; i < 4; i++) {\n"
                       "                    const float *x = sa + (wm + i * 16 + g) * %d + kk + q;\n                    ",
                       t->a_row);
    for (int r = 0; r < 4; r++) {
        char reg[32];
        snprintf(reg, sizeof reg, "af[i][%d]", r);
        gpuir__cg_tc_reg(s, reg, 'x', (r & 1) * 8 * t->a_row + (r >> 1) * 4);
        gpuir__str_appendf(s, r == 3 ? "\n" : r == 1 ? "\n                    " : " ");
    }
    gpuir__str_appendf(s, "                }\n                GPUIR_UNROLL\n                for (int j = 0; j < 4; j++) {\n");
    int row = t->tb ? t->a_row : GPUIR__TC_BROW;       /* elements from one k to the next */
    if (t->tb) gpuir__str_appendf(s, "                    const float *y = sb + (wn + j * 8 + g) * %d + kk + q;\n", t->a_row);
    else gpuir__str_appendf(s, "                    const float *y = sb + (kk + q) * %d + wn + j * 8 + g;\n", row);
    for (int r = 0; r < 2; r++) {
        char reg[32];
        snprintf(reg, sizeof reg, "bf[j][%d]", r);
        gpuir__str_appendf(s, r ? " " : "                    ");
        gpuir__cg_tc_reg(s, reg, 'y', r * 4 * (t->tb ? 1 : row));
    }
    gpuir__str_appendf(s, "\n                }\n");
}

/* The f16/bf16 fragments of k step kk through ldmatrix.x4, each lane
   giving the address of one 16-byte row (lane l: row l % 8 of matrix
   l / 8): A's four 8x8 matrices of an m tile are rows 0-7 and 8-15 at k
   and k + 8 (la: row l % 16, k + l / 16 * 8), so a register each is
   a[0..3]; B's come two n tiles at a time (b[0], b[1] of the first, then
   of the second): B^T's rows as A's (lb: n row l % 8 + l / 16 * 8, k +
   l / 8 % 2 * 8), or B's k rows transposed (lb: k row l % 16, n + l / 16
   * 8). */
static void gpuir__cg_tc_frags_ldmatrix(gpuir__str *s, const gpuir__tc *t) {
    gpuir__str_appendf(s, "                unsigned af[4][4], bf[2][4];\n"
                       "                GPUIR_UNROLL\n"
                       "                for (int i = 0; i < 4; i++) GPUIR_LDMATRIX_X4(af[i], sa + la + i * %d + kk);\n"
                       "                GPUIR_UNROLL\n"
                       "                for (int j = 0; j < 2; j++) GPUIR_LDMATRIX_X4%s(bf[j], sb + lb + j * %d%s);\n",
                       16 * t->a_row, t->tb ? "" : "_TRANS", t->tb ? 16 * t->a_row : 16,
                       t->tb ? " + kk" : " + kk * " GPUIR__XSTR(GPUIR__TC_BROW));
}

/* One stage's mma work: k steps of 16 (8 for TF32), each loading the
   warp's A fragments (4 m tiles) and B fragments (4 n tiles) from shared
   memory, then 16 mma. The fragment layouts are the PTX ISA's. */
static void gpuir__cg_tc_compute(gpuir__cg *C, const gpuir__tc *t) {
    gpuir__str *s = C->s;
    int kstep = t->tf32 ? 8 : 16;
    gpuir__str_appendf(s, "            const %s *sa = sm + rd * %d, *sb = sa + %d;\n"
                       "            GPUIR_UNROLL\n            for (int kk = 0; kk < %d; kk += %d) {\n",
                       t->elem, gpuir__tc_stage(t), 128 * t->a_row, t->bk, kstep);
    if (t->tf32) gpuir__cg_tc_frags_tf32(s, t);
    else gpuir__cg_tc_frags_ldmatrix(s, t);
    gpuir__str_appendf(s, "                GPUIR_UNROLL\n                for (int i = 0; i < 4; i++)\n"
                       "                    GPUIR_UNROLL\n"
                       "                    for (int j = 0; j < 4; j++) GPUIR_MMA_%s(acc + (i * 4 + j) * 4, af[i], %s);\n"
                       "            }\n", t->mma, t->tf32 ? "bf[j]" : "bf[j / 2] + j % 2 * 2");
}

/* The k loop of a tile: GPUIR__TC_STAGES stages in a ring. Step kt first
   copies k tile kt + STAGES - 1 into the stage k tile kt - 1 used (every
   warp is past it: the barrier that ends each step), then, from kt = 0,
   waits for k tile kt's copies (all but the STAGES - 2 newest groups) and
   multiplies it. Every step commits a group, empty or not, so the count of
   pending groups is the same at each wait. (The copies at the top of the
   step, apart from the multiply, keep ptxas at 128 registers or fewer:
   two blocks an SM.) */
static void gpuir__cg_tc_pipeline(gpuir__cg *C, const gpuir__tc *t, int pa, int pb, long long M, long long N,
                                  long long K, const gpuir__cg_krange *kr) {
    int ahead = GPUIR__TC_STAGES - 1;
    gpuir__str_appendf(C->s, "        for (long long kt = -%d; kt < %s; kt++) {\n"
                       "            if (kt + %d < %s) {\n"
                       "                int st = (int)((kt + %d) %% %d);\n"
                       "                long long k0 = %s(kt + %d) * %d;\n",
                       ahead, kr->count, ahead, kr->count, ahead, GPUIR__TC_STAGES, kr->start, ahead, t->bk);
    gpuir__cg_tc_loads(C, t, pa, pb, M, N, K, kr->bound);
    gpuir__str_appendf(C->s, "            }\n            gpuir_cp_async_commit();\n            if (kt < 0) continue;\n"
                       "            gpuir_cp_async_wait(%d);\n            GPUIR_SYNC();\n"
                       "            int rd = (int)(kt %% %d);\n", GPUIR__TC_STAGES - 2, GPUIR__TC_STAGES);
    gpuir__cg_tc_compute(C, t);
    gpuir__str_appendf(C->s, "            GPUIR_SYNC();\n        }\n");
}

/* The tensor-core matmul (GPUIR__MATMUL_TENSOR_CORES): the pipeline over
   k, then each thread's 64 accumulators through the epilogue. Its stages
   take more than the 48 KiB a kernel may declare statically: they are
   dynamic shared memory, which its launches add (the runtime raises the
   function's limit). */
static gpuir_result gpuir__cg_matmul_tc(gpuir__cg *C, size_t at, int pa, int pb) {
    gpuir_module *m = C->m;
    const gpuir__op *op = gpuir__op_at(m, C->k->ops[at]);
    const gpuir_type *a = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
    const gpuir_type *b = &gpuir__value_at(m, gpuir__op_operand(m, op, 1))->type;
    const gpuir_type *o = &gpuir__value_at(m, gpuir__op_operand(m, op, 2))->type;
    gpuir__tc t = gpuir__tc_of(a->dtype, gpuir__op_flag(m, op, GPUIR__KEY_TF32), gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_B));
    long long M = o->dims[o->rank - 2], N = o->dims[o->rank - 1], K = a->dims[a->rank - 1];
    long long tiles_n = (N + 127) / 128, tiles_m = (M + 127) / 128, batches = M && N ? gpuir__type_count(o) / (M * N) : 0;
    C->dynamic_bytes = (uint32_t)(GPUIR__TC_STAGES * gpuir__tc_stage(&t) * t.es);
    char lanes[200] = "";                   /* where the lane's ldmatrix rows start */
    if (!t.tf32 && t.tb)
        snprintf(lanes, sizeof lanes, "    int la = (wm + lane %% 16) * %d + lane / 16 * 8, "
                 "lb = (wn + lane %% 8 + lane / 16 * 8) * %d + lane / 8 %% 2 * 8;\n", t.a_row, t.a_row);
    else if (!t.tf32)
        snprintf(lanes, sizeof lanes, "    int la = (wm + lane %% 16) * %d + lane / 16 * 8, "
                 "lb = lane %% 16 * %d + wn + lane / 16 * 8;\n", t.a_row, GPUIR__TC_BROW);
    C->barriers = true;
    gpuir__str_appendf(C->s, "    GPUIR_SHARED_DYNAMIC(int4, smem);     /* %u bytes */\n    %s *sm = (%s *)smem;\n"
                       "    int t = GPUIR_THREAD_RANK, lane = t %% 32, warp = t / 32, g = lane / 4, q = lane %% 4;\n"
                       "    int wm = warp / 4 * 64, wn = warp %% 4 * 32;\n%s"
                       "    for (long long tile = GPUIR_BLOCK_RANK; tile < %lldLL; tile += GPUIR_GRID_BLOCKS) {\n",
                       C->dynamic_bytes, t.elem, t.elem, lanes, tiles_n * tiles_m * batches);
    gpuir__cg_mm_tile_start(C, o, a, b, tiles_m, tiles_n, K);
    char inner[32];
    snprintf(inner, sizeof inner, "%lldLL", gpuir__mm_inner_batches(m, op, o));
    gpuir__cg_krange kr = gpuir__cg_mm_krange(C, op, K, t.bk, inner);
    gpuir__str_appendf(C->s, "        float acc[64];\n"
                       "        GPUIR_UNROLL\n        for (int f = 0; f < 64; f++) acc[f] = 0.0f;\n");
    gpuir__cg_tc_pipeline(C, &t, pa, pb, M, N, K, &kr);
    gpuir__str_appendf(C->s, "        GPUIR_UNROLL\n        for (int f = 0; f < 64; f++) {\n"
                       "            long long gm = tm * 128 + wm + f / 16 * 16 + f %% 4 / 2 * 8 + g;\n"
                       "            long long gn = tn * 128 + wn + f / 4 %% 4 * 8 + q * 2 + f %% 2;\n"
                       "            if (gm >= %lldLL || gn >= %lldLL) continue;\n"
                       "            %s i = (%s)(batch * %lldLL + gm * %lldLL + gn);\n",
                       M, N, gpuir__cg_idx(C), gpuir__cg_idx(C), M * N, N);
    const char *value = o->dtype == GPUIR_BF16 ? "gpuir_round_bf16(acc[f])" : o->dtype == GPUIR_F16 ? "gpuir_round_f16(acc[f])"
                                                                                                   : "acc[f]";
    return gpuir__cg_matmul_epilogue(C, at, "float", value);
}

/* The wgmma matmul (GPUIR__MATMUL_WGMMA; EXPERIMENTAL, not yet validated
   on hardware): f16 or bf16, B transposed, 128x128 block tiles of 384
   threads as three warpgroups, warp-specialized. Warpgroup 0 is the
   producer: one thread of it copies each k tile (64 halves) of A's 128
   rows and of B^T's 128 rows into a stage of shared memory with two bulk
   tensor copies (cp.async.bulk.tensor 2d, 3d for a batched operand, from
   the tensor maps tma_a and tma_b the runtime encodes at launch:
   gpuir__cg_tmap); the copies write each 128-byte row with the 128-byte
   swizzle and zeros past the tensor's edges (ragged M, N and K), and
   complete the stage's `full` mbarrier with their bytes. Warpgroups 1
   and 2 are the consumers: warpgroup 1 + w computes rows 64 w .. 64 w + 63
   of the tile with four wgmma.mma_async m64n128k16 a stage (k steps of 16:
   32 bytes further into the swizzled rows, gpuir_wgmma_desc_sw128), keeps
   one wgmma group in flight (wait_group 1), and then releases the stage
   before it: each consumer thread arrives on that stage's `empty` mbarrier
   (256 arrivals), and the producer refills a stage only after its `empty`
   phase completed. GPUIR__WG_STAGES stages of 32 KiB (A's 128 x 64, then
   B^T's 128 x 64), 1024-byte aligned (the swizzle's atom), then the full
   and empty mbarriers, 8 bytes each: dynamic shared memory. Producer and
   consumers walk the same tiles (a persistent grid) and number their k
   tiles `it` across them: stage it % STAGES, phase parity it / STAGES % 2.
   Each role is one branch of an if/else that starts with its setmaxnreg. */
#define GPUIR__WG_STAGES 6
#define GPUIR__WG_STAGE_BYTES 32768u
/* setmaxnreg (sm_90a; the kernel's __launch_bounds__(384, 1) caps it at
   168 at entry): the producer gives registers up, the consumers (64
   accumulators a thread) take them: 128 x 40 + 256 x 232 <= 65536. */
#define GPUIR__WG_PRODUCER_REGS 40
#define GPUIR__WG_CONSUMER_REGS 232

/* The tensor map of a [..., rows, K] operand (A, or B^T) of a WGMMA
   kernel: a box of 64 k x 128 rows (x 1 batch); a batch dim only when the
   operand has more than one matrix. */
static gpuir__cg_tmap gpuir__cg_wgmma_tmap(const gpuir_type *t, int param) {
    long long rows = t->dims[t->rank - 2], K = t->dims[t->rank - 1], mats = rows > 0 && K > 0 ? gpuir__type_count(t) / (rows * K) : 1;
    gpuir__cg_tmap x;
    memset(&x, 0, sizeof x);
    x.param = param;
    x.dtype = t->dtype == GPUIR_BF16 ? 9u : 6u;        /* CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, _FLOAT16 */
    x.rank = mats > 1 ? 3 : 2;
    x.dims[0] = (unsigned long long)K, x.dims[1] = (unsigned long long)rows, x.dims[2] = (unsigned long long)mats;
    x.strides[0] = (unsigned long long)K * 2, x.strides[1] = (unsigned long long)(rows * K) * 2;
    x.box[0] = 64, x.box[1] = 128, x.box[2] = 1;
    return x;
}

/* The producer: thread 0 of warpgroup 0 fills the stages, each once the
   consumers released it (from the second round of the ring on). */
static void gpuir__cg_wgmma_producer(gpuir__cg *C, const gpuir_type *o, const gpuir_type *a, const gpuir_type *b,
                                     long long tiles, long long tiles_m, long long tiles_n, long long K) {
    long long M = o->dims[o->rank - 2], N = o->dims[o->rank - 1], k_tiles = (K + 63) / 64;
    gpuir__str_appendf(C->s, "    if (wg == 0) {\n        gpuir_setmaxnreg_dec(%d);\n        if (t == 0)\n"
                       "    for (long long tile = GPUIR_BLOCK_RANK; tile < %lldLL; tile += GPUIR_GRID_BLOCKS) {\n",
                       GPUIR__WG_PRODUCER_REGS, tiles);
    gpuir__cg_mm_tile_start(C, o, a, b, tiles_m, tiles_n, K);
    gpuir__str_appendf(C->s, "        int ca = (int)(a0 / %lldLL), cb = (int)(b0 / %lldLL);\n"
                       "        for (long long kt = 0; kt < %lldLL; kt++, it++) {\n"
                       "            unsigned st = (unsigned)(it %% %d), sa = sbase + st * %uu;\n"
                       "            if (it >= %d) gpuir_mbar_wait(empty + 8u * st, (unsigned)((it / %d - 1) & 1));\n"
                       "            gpuir_mbar_expect_tx(full + 8u * st, %uu);\n"
                       "            gpuir_tma_load_%dd(sa, GPUIR_TMAP(tma_a), (int)(kt * 64), (int)(tm * 128), ca, full + 8u * st);\n"
                       "            gpuir_tma_load_%dd(sa + %uu, GPUIR_TMAP(tma_b), (int)(kt * 64), (int)(tn * 128), cb, full + 8u * st);\n"
                       "        }\n    }\n    } else {\n    gpuir_setmaxnreg_inc(%d);\n",
                       M > 0 && K > 0 ? M * K : 1, N > 0 && K > 0 ? N * K : 1, k_tiles, GPUIR__WG_STAGES, GPUIR__WG_STAGE_BYTES,
                       GPUIR__WG_STAGES, GPUIR__WG_STAGES, GPUIR__WG_STAGE_BYTES, C->info->tmaps[0].rank,
                       C->info->tmaps[1].rank, GPUIR__WG_STAGE_BYTES / 2, GPUIR__WG_CONSUMER_REGS);
}

/* A consumer's k loop: wait for the stage, four wgmma on it, then (with
   this group in flight) release the stage before; the last one after
   all groups are done. */
static void gpuir__cg_wgmma_consumer(gpuir__cg *C, const char *mma, long long K) {
    long long k_tiles = (K + 63) / 64;
    gpuir__str_appendf(C->s, "        unsigned prev = 0;\n"
                       "        for (long long kt = 0; kt < %lldLL; kt++, it++) {\n"
                       "            unsigned st = (unsigned)(it %% %d), sb = sbase + st * %uu + %uu, sa = sbase + st * %uu + (unsigned)(wg - 1) * 8192u;\n"
                       "            gpuir_mbar_wait(full + 8u * st, (unsigned)(it / %d & 1));\n"
                       "            gpuir_wgmma_fence();\n"
                       "            GPUIR_UNROLL\n            for (int kk = 0; kk < 4; kk++)\n"
                       "                GPUIR_WGMMA_%s(acc, gpuir_wgmma_desc_sw128(sa + kk * 32u), gpuir_wgmma_desc_sw128(sb + kk * 32u),\n"
                       "                               smem, s0);\n"
                       "            gpuir_wgmma_commit();\n            gpuir_wgmma_wait1();\n"
                       "            if (kt > 0) gpuir_mbar_arrive(empty + 8u * prev);\n"
                       "            prev = st;\n        }\n"
                       "        gpuir_wgmma_wait0();\n        GPUIR_WGMMA_KEEP(acc);\n"
                       "        if (%lldLL > 0) gpuir_mbar_arrive(empty + 8u * prev);\n",
                       k_tiles, GPUIR__WG_STAGES, GPUIR__WG_STAGE_BYTES, GPUIR__WG_STAGE_BYTES / 2, GPUIR__WG_STAGE_BYTES,
                       GPUIR__WG_STAGES, mma, k_tiles);
}

static gpuir_result gpuir__cg_matmul_wgmma(gpuir__cg *C, size_t at, int pa, int pb) {
    gpuir_module *m = C->m;
    const gpuir__op *op = gpuir__op_at(m, C->k->ops[at]);
    const gpuir_type *a = &gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type;
    const gpuir_type *b = &gpuir__value_at(m, gpuir__op_operand(m, op, 1))->type;
    const gpuir_type *o = &gpuir__value_at(m, gpuir__op_operand(m, op, 2))->type;
    long long M = o->dims[o->rank - 2], N = o->dims[o->rank - 1], K = a->dims[a->rank - 1];
    long long tiles_n = (N + 127) / 128, tiles_m = (M + 127) / 128, batches = M && N ? gpuir__type_count(o) / (M * N) : 0;
    long long tiles = tiles_n * tiles_m * batches;
    C->info->n_tmaps = 2;
    C->info->tmaps[0] = gpuir__cg_wgmma_tmap(a, pa);
    C->info->tmaps[1] = gpuir__cg_wgmma_tmap(b, pb);
    C->dynamic_bytes = 1024u + GPUIR__WG_STAGES * (GPUIR__WG_STAGE_BYTES + 16u);
    C->barriers = true;
    gpuir__str_appendf(C->s, "    GPUIR_SHARED_DYNAMIC(int4, smem);     /* %u bytes */\n"
                       "    unsigned s0 = GPUIR_SMEM_ADDR(smem), sbase = (s0 + 1023u) & ~1023u;\n"
                       "    unsigned full = sbase + %uu, empty = full + %uu;\n"
                       "    int t = GPUIR_THREAD_RANK, lane = t %% 32, warp = t / 32, g = lane / 4, q = lane %% 4, wg = warp / 4;\n"
                       "    long long it = 0;                    /* k tiles so far, across tiles */\n"
                       "    if (t == 0) {\n"
                       "        for (unsigned st = 0; st < %du; st++) {\n"
                       "            gpuir_mbar_init(full + 8u * st, 1u);\n            gpuir_mbar_init(empty + 8u * st, 256u);\n"
                       "        }\n        gpuir_mbar_init_fence();\n    }\n    GPUIR_SYNC();\n",
                       C->dynamic_bytes, GPUIR__WG_STAGES * GPUIR__WG_STAGE_BYTES, 8u * GPUIR__WG_STAGES, GPUIR__WG_STAGES);
    gpuir__cg_wgmma_producer(C, o, a, b, tiles, tiles_m, tiles_n, K);
    gpuir__str_appendf(C->s, "    for (long long tile = GPUIR_BLOCK_RANK; tile < %lldLL; tile += GPUIR_GRID_BLOCKS) {\n", tiles);
    gpuir__cg_mm_tile_start(C, o, a, b, tiles_m, tiles_n, K);
    gpuir__str_appendf(C->s, "        (void)a0; (void)b0;\n        float acc[64];\n"
                       "        GPUIR_UNROLL\n        for (int f = 0; f < 64; f++) acc[f] = 0.0f;\n");
    gpuir__cg_wgmma_consumer(C, o->dtype == GPUIR_BF16 ? "BF16" : "F16", K);
    gpuir__str_appendf(C->s, "        GPUIR_UNROLL\n        for (int f = 0; f < 64; f++) {\n"
                       "            long long gm = tm * 128 + (warp - 4) * 16 + g + f / 2 %% 2 * 8;\n"
                       "            long long gn = tn * 128 + f / 4 * 8 + q * 2 + f %% 2;\n"
                       "            if (gm >= %lldLL || gn >= %lldLL) continue;\n"
                       "            %s i = (%s)(batch * %lldLL + gm * %lldLL + gn);\n",
                       M, N, gpuir__cg_idx(C), gpuir__cg_idx(C), M * N, N);
    const char *value = o->dtype == GPUIR_BF16 ? "gpuir_round_bf16(acc[f])" : "gpuir_round_f16(acc[f])";
    gpuir_result r = gpuir__cg_matmul_epilogue(C, at, "float", value);
    gpuir__str_appendf(C->s, "    }\n");               /* the consumers' branch */
    return r;
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
    gpuir__matmul_form form = gpuir__matmul_form_of(m, C->k);
    if (form == GPUIR__MATMUL_WGMMA ? !C->tma : C->threads != 256) form = GPUIR__MATMUL_PLAIN;
    if (form == GPUIR__MATMUL_REGISTER_TILED) return gpuir__cg_matmul_rt(C, at, pa, pb, 128);
    if (form == GPUIR__MATMUL_REGISTER_TILED_64) return gpuir__cg_matmul_rt(C, at, pa, pb, 64);
    if (form == GPUIR__MATMUL_TENSOR_CORES) return gpuir__cg_matmul_tc(C, at, pa, pb);
    if (form == GPUIR__MATMUL_WGMMA) return gpuir__cg_matmul_wgmma(C, at, pa, pb);
    gpuir__cg_mm_sizes z = gpuir__cg_mm_sizes_of(C, op);
    gpuir__cg_dims od = gpuir__cg_dims_of(C, o);
    gpuir__cg_prod batch_dims = {1, ""};
    for (int d = 0; d + 2 < o->rank; d++) gpuir__cg_prod_mul(&batch_dims, &od, d);
    gpuir__cg_size batches = gpuir__cg_size_of(&batch_dims);
    gpuir__cg_size tiles_n = gpuir__cg_size_tiles(&z.N, GPUIR__MM_BN), tiles_m = gpuir__cg_size_tiles(&z.M, GPUIR__MM_BM);
    gpuir__cg_size tiles_mn = gpuir__cg_size_mul(&tiles_n, &tiles_m), tiles = gpuir__cg_size_mul(&tiles_mn, &batches);
    gpuir__cg_size MN = gpuir__cg_size_mul(&z.M, &z.N);
    bool fl = gpuir_dtype_is_float(o->dtype);
    const char *ct = fl ? "float" : "long long", *acc_t = fl ? "float" : "unsigned long long";
    long long per_thread = (GPUIR__MM_BM * GPUIR__MM_BN + C->threads - 1) / C->threads;
    C->shared_bytes = (uint32_t)((GPUIR__MM_BM + GPUIR__MM_BN) * GPUIR__MM_BK * (fl ? 4 : 8));
    C->barriers = true;
    gpuir__str_appendf(C->s, "    GPUIR_SHARED(%s, as, %d, 0);\n    GPUIR_SHARED(%s, bs, %d, %d);\n"
                       "    int t = GPUIR_THREAD_RANK;\n"
                       "    for (long long tile = GPUIR_BLOCK_RANK; tile < %s; tile += GPUIR_GRID_BLOCKS) {\n"
                       "        long long tn = tile %% %s, tm = tile / %s %% %s, batch = tile / %s;\n"
                       "        %s acc[%lld];\n        for (int r = 0; r < %lld; r++) acc[r] = 0;\n",
                       ct, GPUIR__MM_BM * GPUIR__MM_BK, ct, GPUIR__MM_BK * GPUIR__MM_BN,
                       GPUIR__MM_BM * GPUIR__MM_BK * (fl ? 4 : 8), tiles.text, tiles_n.text, tiles_n.text,
                       tiles_m.text, tiles_mn.text, acc_t, per_thread, per_thread);
    const gpuir__attr *ks = gpuir__attr_get(m, op, GPUIR__KEY_K_SLICES);
    char inner[360];                    /* the matmul's own batches: all but the k slices */
    snprintf(inner, sizeof inner, "%s / %lldLL", batches.text, (long long)(ks ? ks->i : 1));
    gpuir__cg_matmul_tiles(C, op, pa, pb, ct, inner);
    gpuir__str_appendf(C->s, "        for (int r = 0; r < %lld; r++) {\n            int e = t + r * %lld;\n"
                       "            long long gm = tm * %d + e / %d, gn = tn * %d + e %% %d;\n"
                       "            if (e >= %d || gm >= %s || gn >= %s) continue;\n"
                       "            %s i = (%s)(batch * %s + gm * %s + gn);\n",
                       per_thread, (long long)C->threads, GPUIR__MM_BM, GPUIR__MM_BN, GPUIR__MM_BN, GPUIR__MM_BN,
                       GPUIR__MM_BM * GPUIR__MM_BN, z.M.text, z.N.text, gpuir__cg_idx(C), gpuir__cg_idx(C), MN.text,
                       z.N.text);
    const char *round = o->dtype == GPUIR_F16 ? "gpuir_round_f16" : o->dtype == GPUIR_BF16 ? "gpuir_round_bf16" : "";
    char acc[64];
    snprintf(acc, sizeof acc, "%s((%s)acc[r])", round, gpuir__cg_ctype(o->dtype));
    return gpuir__cg_matmul_epilogue(C, at, gpuir__cg_ctype(o->dtype), acc);
}


/* Reduces acc over the block and hands the result to every thread (one
   more shared slot, red[32], carries it). */
/* After a block-wide reduction into `acc` (at depth 2): every thread gets it. */
static void gpuir__cg_block_allreduce(gpuir__cg *C, gpuir_op_kind k, const char *init) {
    gpuir__cg_block_reduce(C, k, true, "float", init);
    long long slot = (long long)(C->threads % 32 == 0 ? 32 : C->threads);
    gpuir__cg_line(C, "if (t == 0) red[%lld] = acc;", slot);
    gpuir__cg_line(C, "GPUIR_SYNC();");
    gpuir__cg_line(C, "acc = red[%lld];", slot);
}

/* The three passes of a row held in registers as float4 quads, `per4` a thread. */
static void gpuir__cg_softmax_quads(gpuir__cg *C, long long per4, long long quads, int ps, int pd) {
    long long T = C->threads;
    gpuir__cg_line(C, "float4 v[%lld];", per4);
    gpuir__cg_open(C, "for (int r = 0; r < %lld; r++)", per4);
    gpuir__cg_line(C, "int c = t + r * %lld;", T);
    gpuir__cg_line(C, "v[r] = c < %lld ? ((const float4 *)(p%d + base))[c] : "
                   "GPUIR_FLOAT4(-GPUIR_INF, -GPUIR_INF, -GPUIR_INF, -GPUIR_INF);", quads, ps);
    gpuir__cg_line(C, "acc = gpuir_fmax(acc, gpuir_fmax(gpuir_fmax(v[r].x, v[r].y), gpuir_fmax(v[r].z, v[r].w)));");
    gpuir__cg_close(C);
    gpuir__cg_block_allreduce(C, GPUIR_OP_REDUCE_MAX, "-GPUIR_INF");
    gpuir__cg_line(C, "float mx = acc;");
    gpuir__cg_line(C, "acc = 0.0f;");
    gpuir__cg_open(C, "for (int r = 0; r < %lld; r++)", per4);
    gpuir__cg_open(C, "if (t + r * %lld < %lld)", T, quads);
    gpuir__cg_line(C, "v[r].x = expf(v[r].x - mx); v[r].y = expf(v[r].y - mx);");
    gpuir__cg_line(C, "v[r].z = expf(v[r].z - mx); v[r].w = expf(v[r].w - mx);");
    gpuir__cg_line(C, "acc += (v[r].x + v[r].y) + (v[r].z + v[r].w);");
    gpuir__cg_close(C);
    gpuir__cg_close(C);
    gpuir__cg_block_allreduce(C, GPUIR_OP_REDUCE_SUM, "0.0f");
    gpuir__cg_open(C, "for (int r = 0; r < %lld; r++)", per4);
    gpuir__cg_line(C, "int c = t + r * %lld;", T);
    gpuir__cg_line(C, "if (c < %lld) ((float4 *)(p%d + base))[c] = "
                   "GPUIR_FLOAT4(v[r].x / acc, v[r].y / acc, v[r].z / acc, v[r].w / acc);", quads, pd);
    gpuir__cg_close(C);
}

/* The three passes of a row held in registers, `per` elements a thread;
   `ld`/`st` convert storage to float and back. */
static void gpuir__cg_softmax_registers(gpuir__cg *C, long long per, long long cols, int ps, int pd,
                                        const char *ld, const char *st) {
    long long T = C->threads;
    gpuir__cg_line(C, "float v[%lld];", per);
    gpuir__cg_open(C, "for (int r = 0; r < %lld; r++)", per);
    gpuir__cg_line(C, "int c = t + r * %lld;", T);
    gpuir__cg_line(C, "v[r] = c < %lld ? %s(p%d[base + c]) : -GPUIR_INF;", cols, ld, ps);
    gpuir__cg_line(C, "acc = gpuir_fmax(acc, v[r]);");
    gpuir__cg_close(C);
    gpuir__cg_block_allreduce(C, GPUIR_OP_REDUCE_MAX, "-GPUIR_INF");
    gpuir__cg_line(C, "float mx = acc;");
    gpuir__cg_line(C, "acc = 0.0f;");
    gpuir__cg_open(C, "for (int r = 0; r < %lld; r++)", per);
    gpuir__cg_line(C, "if (t + r * %lld < %lld) { v[r] = expf(v[r] - mx); acc += v[r]; }", T, cols);
    gpuir__cg_close(C);
    gpuir__cg_block_allreduce(C, GPUIR_OP_REDUCE_SUM, "0.0f");
    gpuir__cg_open(C, "for (int r = 0; r < %lld; r++)", per);
    gpuir__cg_line(C, "int c = t + r * %lld;", T);
    gpuir__cg_line(C, "if (c < %lld) p%d[base + c] = %s(v[r] / acc);", cols, pd, st);
    gpuir__cg_close(C);
}

/* The three passes of a row too long for registers: it is read three times. */
static void gpuir__cg_softmax_streamed(gpuir__cg *C, const char *cols, int ps, int pd, const char *ld,
                                       const char *st) {
    long long T = C->threads;
    gpuir__cg_line(C, "for (long long c = t; c < %s; c += %lld) acc = gpuir_fmax(acc, %s(p%d[base + c]));",
                   cols, T, ld, ps);
    gpuir__cg_block_allreduce(C, GPUIR_OP_REDUCE_MAX, "-GPUIR_INF");
    gpuir__cg_line(C, "float mx = acc;");
    gpuir__cg_line(C, "acc = 0.0f;");
    gpuir__cg_line(C, "for (long long c = t; c < %s; c += %lld) acc += expf(%s(p%d[base + c]) - mx);",
                   cols, T, ld, ps);
    gpuir__cg_block_allreduce(C, GPUIR_OP_REDUCE_SUM, "0.0f");
    gpuir__cg_line(C, "for (long long c = t; c < %s; c += %lld)", cols, T);
    gpuir__cg_line(C, "    p%d[base + c] = %s(expf(%s(p%d[base + c]) - mx) / acc);", pd, st, ld, ps);
}

/* Softmax over the innermost axis: a block per row. When the row fits in
   registers (at most 32 elements per thread) it is read once, the max and
   the sum of exponentials reduced over the block, and written once;
   otherwise the row is read three times. */
static gpuir_result gpuir__cg_softmax(gpuir__cg *C, size_t at) {
    gpuir_module *m = C->m;
    const gpuir__op *op = gpuir__op_at(m, C->k->ops[at]);
    uint32_t src = gpuir__op_operand(m, op, 0), dst = gpuir__op_operand(m, op, 1);
    const gpuir_type *x = &gpuir__value_at(m, src)->type;
    int ps = gpuir__cg_param_index(C, src), pd = gpuir__cg_param_index(C, dst);
    if (ps < 0 || pd < 0 || !gpuir__softmax_is_rowwise(m, op))
        return gpuir__cg_fail(C, op, "only a softmax over the last axis of a parameter is a kernel (run decompose)");
    for (size_t i = 0; i < stbds_arrlenu(C->k->ops); i++)
        if (i != at && gpuir__class_computes(gpuir__info(gpuir__op_at(m, C->k->ops[i])->kind)->cls))
            return gpuir__cg_fail(C, op, "a softmax kernel computes nothing else");
    gpuir__cg_dims xd = gpuir__cg_dims_of(C, x);
    gpuir__cg_prod rows = {1, ""}, width = {1, ""};
    for (int d = 0; d + 1 < x->rank; d++) gpuir__cg_prod_mul(&rows, &xd, d);
    if (x->rank) gpuir__cg_prod_mul(&width, &xd, x->rank - 1);
    if (!rows.sym[0] && !width.num) rows.num = 0;     /* no row has elements: none to run */
    char rows_expr[200], cols_expr[200];
    gpuir__cg_prod_text(&rows, rows_expr, sizeof rows_expr);
    gpuir__cg_prod_text(&width, cols_expr, sizeof cols_expr);
    long long cols = width.num, T = C->threads, per = (cols + T - 1) / T;
    bool in_registers = !width.sym[0] && per <= 32;    /* else the row is read three times */
    const char *ld = x->dtype == GPUIR_F16 ? "gpuir_f16_to_f32" : x->dtype == GPUIR_BF16 ? "gpuir_bf16_to_f32" : "";
    const char *st = x->dtype == GPUIR_F16 ? "gpuir_f32_to_f16" : x->dtype == GPUIR_BF16 ? "gpuir_f32_to_bf16" : "";
    long long slots = (T % 32 == 0 ? 32 : T) + 1;
    C->shared_bytes = (uint32_t)(slots * 4);
    C->barriers = true;
    C->ind = "    ";
    gpuir__cg_comment(C, C->k->ops[at], op);
    C->depth = 1;
    gpuir__cg_line(C, "GPUIR_SHARED(float, red, %lld, 0);", slots);
    gpuir__cg_line(C, "int t = GPUIR_THREAD_RANK;");
    gpuir__cg_open(C, "for (long long row = GPUIR_BLOCK_RANK; row < %s; row += GPUIR_GRID_BLOCKS)", rows_expr);
    gpuir__cg_line(C, "long long base = row * %s;", cols_expr);
    gpuir__cg_line(C, "float acc = -GPUIR_INF;");
    if (in_registers && x->dtype == GPUIR_F32 && cols % 4 == 0)     /* 16-byte row accesses */
        gpuir__cg_softmax_quads(C, (cols / 4 + T - 1) / T, cols / 4, ps, pd);
    else if (in_registers)
        gpuir__cg_softmax_registers(C, per, cols, ps, pd, ld, st);
    else
        gpuir__cg_softmax_streamed(C, cols_expr, ps, pd, ld, st);
    gpuir__cg_close(C);
    C->depth = 0;
    return GPUIR_OK;
}


/* A batch of matrix transposes through 32x32 shared-memory tiles (a row of
   padding against bank conflicts): both the reads and the writes are
   coalesced. A copy: values keep their storage type. */
static gpuir_result gpuir__cg_transpose_tiled(gpuir__cg *C, const gpuir__op *op) {
    gpuir_module *m = C->m;
    uint32_t src = gpuir__op_operand(m, op, 0), dst = gpuir__op_operand(m, op, 1);
    const gpuir_type *x = &gpuir__value_at(m, src)->type;
    int ps = gpuir__cg_param_index(C, src), pd = gpuir__cg_param_index(C, dst);
    if (ps < 0 || pd < 0) return gpuir__cg_fail(C, op, "transposes a kernel-private buffer");
    long long R = x->dims[x->rank - 2], Cc = x->dims[x->rank - 1], count = gpuir__type_count(x);
    long long tr = (R + 31) / 32, tc = (Cc + 31) / 32, batches = R && Cc ? count / (R * Cc) : 0;
    const char *st = gpuir__cg_storage(x->dtype);
    C->shared_bytes = (uint32_t)(32 * 33 * gpuir_dtype_size(x->dtype));
    C->barriers = true;
    C->ind = "    ";
    gpuir__cg_comment(C, (uint32_t)(op - m->ops) + 1, op);
    gpuir__str_appendf(C->s, "    GPUIR_SHARED(%s, tile, %d, 0);\n    int t = GPUIR_THREAD_RANK, tx = t %% 32, ty = t / 32;\n"
                       "    for (long long blk = GPUIR_BLOCK_RANK; blk < %lldLL; blk += GPUIR_GRID_BLOCKS) {\n"
                       "        long long tc = blk %% %lldLL, tr = blk / %lldLL %% %lldLL, base = blk / %lldLL * %lldLL;\n"
                       "        for (int j = ty; j < 32; j += 8) {\n"
                       "            long long r = tr * 32 + j, c = tc * 32 + tx;\n"
                       "            if (r < %lldLL && c < %lldLL) tile[j * 33 + tx] = p%d[base + r * %lldLL + c];\n        }\n"
                       "        GPUIR_SYNC();\n"
                       "        for (int j = ty; j < 32; j += 8) {\n"
                       "            long long c = tc * 32 + j, r = tr * 32 + tx;\n"
                       "            if (r < %lldLL && c < %lldLL) p%d[base + c * %lldLL + r] = tile[tx * 33 + j];\n        }\n"
                       "        GPUIR_SYNC();\n    }\n",
                       st, 32 * 33, tr * tc * batches, tc, tc, tr, tc * tr, R * Cc, R, Cc, ps, Cc, R, Cc, pd, R);
    return GPUIR_OK;
}

/* Whether destination d spans more than the widest so far: a dynamic one
   wins over static ones (it is the kernel's real extent). */
static bool gpuir__cg_wider(const gpuir_type *d, const gpuir_type *widest) {
    if (!widest) return true;
    bool dd = !gpuir__type_is_static(d), wd = !gpuir__type_is_static(widest);
    if (dd || wd) return dd && !wd;
    return gpuir__type_count(d) > gpuir__type_count(widest);
}

/* The kernel's form: a matmul, a reduction, a softmax, a tiled transpose
   or an elementwise chain over its widest destination. */
static gpuir_result gpuir__cg_body(gpuir__cg *C) {
    gpuir_module *m = C->m;
    const gpuir_type *widest = NULL;
    for (size_t i = 0; i < stbds_arrlenu(C->k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, C->k->ops[i]);
        gpuir__op_class cls = gpuir__info(op->kind)->cls;
        if (cls == GPUIR__CLASS_MATMUL) return gpuir__cg_matmul(C, i);
        if (cls == GPUIR__CLASS_REDUCE) return gpuir__cg_reduce(C, i);
        if (cls == GPUIR__CLASS_SOFTMAX) return gpuir__cg_softmax(C, i);
        if (op->result || !gpuir__class_computes(cls)) continue;
        uint32_t dst = gpuir__op_operand(m, op, op->n_operands - 1);
        if (cls == GPUIR__CLASS_CONSTANT && gpuir__cg_param_index(C, dst) < 0) continue;  /* a broadcast operand */
        const gpuir_type *d = &gpuir__value_at(m, dst)->type;
        if (gpuir__cg_wider(d, widest)) widest = d;
    }
    if (!widest) return GPUIR_OK;                    /* nothing to compute */
    const gpuir__op *tr = gpuir__kernel_tiled_transpose(m, C->k);
    if (tr && C->threads == 256) return gpuir__cg_transpose_tiled(C, tr);
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

/* The most elements of a dense constant in a kernel (its table is in the
   source; a larger one belongs in a global). */
#define GPUIR__CG_MAX_DENSE 65536

/* One element of a dense constant as a C literal of the compute type. */
static void gpuir__cg_dense_literal(gpuir__str *s, const gpuir_module *m, const gpuir__attr *v, gpuir_dtype d,
                                    size_t i) {
    gpuir__attr one;
    memset(&one, 0, sizeof one);
    const unsigned char *bytes = gpuir__bytes_at(m, v->off);
    gpuir_dtype src = (gpuir_dtype)v->i;
    one.kind = gpuir_dtype_is_float(src) ? GPUIR__ATTR_FLOAT : GPUIR__ATTR_INT;
    if (src == GPUIR_I64) memcpy(&one.i, bytes + i * 8, 8);
    else if (src == GPUIR_I32) { int32_t x; memcpy(&x, bytes + i * 4, 4); one.i = x; }
    else one.f = gpuir__load_elem(bytes, src, i);
    gpuir__cg_literal(s, d, &one);
}

/* Before a kernel: a table (file scope, const) for each dense constant in
   it, gpuir_dense_<op>, read at the element a thread computes. */
static gpuir_result gpuir__cg_dense_tables(gpuir__cg *C) {
    gpuir_module *m = C->m;
    bool first = true;
    for (size_t i = 0; i < stbds_arrlenu(C->k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, C->k->ops[i]);
        const gpuir__attr *v = op->kind == GPUIR_OP_CONSTANT ? gpuir__attr_get(m, op, GPUIR__KEY_VALUE) : NULL;
        if (!v || v->kind != GPUIR__ATTR_DENSE) continue;
        if (v->n > GPUIR__CG_MAX_DENSE)
            return gpuir__cg_fail(C, op, "a dense constant of more than 65536 elements in a kernel (make it a global)");
        gpuir_dtype d = gpuir__value_at(m, gpuir__op_operand(m, op, op->n_operands - 1))->type.dtype;
        if (first)
            gpuir__str_appendf(C->s, "\n#ifndef GPUIR_TABLE\n#ifdef GPUIR_EMU\n#define GPUIR_TABLE static const\n"
                               "#else\n#define GPUIR_TABLE static __device__ const\n#endif\n#endif\n");
        first = false;
        gpuir__str_appendf(C->s, "GPUIR_TABLE %s gpuir_dense_%u[%u] = {", gpuir__cg_ctype(d), C->k->ops[i],
                           v->n ? v->n : 1u);
        for (uint32_t e = 0; e < v->n; e++) {
            gpuir__str_appendf(C->s, "%s", e ? (e % 8 ? ", " : ",\n    ") : "");
            gpuir__cg_dense_literal(C->s, m, v, d, e);
        }
        gpuir__str_appendf(C->s, "%s};\n", v->n ? "" : "0");
    }
    return GPUIR_OK;
}

/* Renders kernel kid; fills its info. */
static gpuir_result gpuir__cg_kernel(gpuir__cg *C, uint32_t kid, gpuir__cg_kernel_info *info) {
    gpuir_module *m = C->m;
    C->k = gpuir__func_at(m, kid);
    if (C->vars) stbds_header(C->vars)->length = 0;
    C->shared_bytes = C->dynamic_bytes = 0;
    C->barriers = false;
    C->dynamic = gpuir__kernel_is_dynamic(m, C->k);
    C->wide = C->dynamic || gpuir__cg_needs_wide(m, C->k);
    gpuir_result r = gpuir__cg_block_threads(C, kid, &C->threads);
    if (r) return r;
    C->tma = C->threads == GPUIR__WG_THREADS && gpuir__matmul_form_of(m, C->k) == GPUIR__MATMUL_WGMMA;
    C->info = info;
    memset(info, 0, sizeof *info);
    info->func = kid;
    gpuir__cg_cname(m, kid, info->cname, sizeof info->cname);
    r = gpuir__cg_dense_tables(C);
    if (r) return r;
    gpuir__str_appendf(C->s, "\n/* @%s: %lld threads per block */\n", gpuir__string(m, C->k->name), (long long)C->threads);
    gpuir__cg_signature(C, info->cname);
    r = gpuir__cg_body(C);
    gpuir__str_appendf(C->s, "}\n");
    info->barriers = C->barriers;
    info->shared_bytes = C->shared_bytes;
    info->dynamic_bytes = C->dynamic_bytes;
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
        size_t n = stbds_arrlenu(k->params), slot = n;
        for (size_t a = 0; a < n; a++)
            gpuir__str_appendf(C->s, ", *(%s **)p[%zu]", gpuir__cg_storage(gpuir__value_at(m, k->params[a])->type.dtype), a);
        for (size_t a = 0; a < n; a++) {
            const gpuir_type *t = &gpuir__value_at(m, k->params[a])->type;
            for (int d = 0; d < t->rank; d++)
                if (t->dims[d] == GPUIR_DYN) gpuir__str_appendf(C->s, ", *(long long *)p[%zu]", slot++);
        }
        for (unsigned t = 0; t < infos[i].n_tmaps; t++)
            gpuir__str_appendf(C->s, ", (const gpuir_tensor_map *)p[%zu]", slot++);
        gpuir__str_appendf(C->s, ");\n}\n");
    }
    gpuir__str_appendf(C->s, "const gpuir_emu_kernel gpuir_emu_kernels[] = {\n");
    for (size_t i = 0; i < stbds_arrlenu(infos); i++)
        gpuir__str_appendf(C->s, "    {\"%s\", %s_emu, %uu, %uu, %d, %zuu, %uu},\n", infos[i].cname, infos[i].cname,
                           infos[i].shared_bytes, infos[i].dynamic_bytes, infos[i].barriers ? 1 : 0,
                           stbds_arrlenu(gpuir__func_at(m, infos[i].func)->params), infos[i].n_tmaps);
    gpuir__str_appendf(C->s, "    {0, 0, 0, 0, 0, 0, 0}\n};\n#endif\n");
}

/* The module body shared by both targets (helpers, kernels, the emulator's
   table); *infos gets one entry per kernel (stb_ds, the caller frees). */
static char *gpuir__cg_module(gpuir_module *m, const gpuir__cg_target *target, gpuir__cg_kernel_info **infos) {
    gpuir__str s = {NULL};
    gpuir__cg C;
    memset(&C, 0, sizeof C);
    C.m = m;
    C.s = &s;
    *infos = NULL;
    C.cur = (uint32_t *)gpuir__calloc(stbds_arrlenu(m->values) + 1, sizeof *C.cur);
    C.loaded4 = (bool *)gpuir__calloc(GPUIR_MAX_OPERANDS + 1, sizeof *C.loaded4);
    C.lane = -1;
    gpuir_result r = C.cur && C.loaded4 ? GPUIR_OK : gpuir__oom(m->ctx, "codegen");
    if (!r) gpuir__str_appendf(&s, "%s%s/* gpuir " GPUIR_VERSION_STRING " kernels */\n%s", target->prelude,
                               gpuir__cg_ranks, gpuir__cg_helpers);
    if (!r && gpuir__module_uses_tensor_cores(m))
        gpuir__str_appendf(&s, "%s%s", target->tensor_cores, gpuir__cg_tc_helpers);
    if (!r && gpuir__module_uses_wgmma(m))
        gpuir__str_appendf(&s, "%s%s%s%s", target->wgmma[0], target->wgmma[1], target->wgmma[2], gpuir__cg_wgmma_helpers);
    for (size_t f = 0; !r && f < stbds_arrlenu(m->funcs); f++) {
        if (!m->funcs[f].kernel) continue;
        gpuir__cg_kernel_info info;
        r = gpuir__cg_kernel(&C, (uint32_t)f + 1, &info);
        if (!r) stbds_arrput(*infos, info);
    }
    if (!r) gpuir__cg_emu_table(&C, *infos);
    GPUIR_FREE(C.cur);
    GPUIR_FREE(C.loaded4);
    stbds_arrfree(C.vars);
    char *text = r ? NULL : gpuir__str_detach(&s);
    if (!r && !text) r = gpuir__oom(m->ctx, "codegen");
    gpuir__str_free(&s);
    if (r) { stbds_arrfree(*infos); *infos = NULL; }
    return text;
}

GPUIRDEF char *gpuir_module_emit_cuda(gpuir_module *m) {
    if (!m || m->ctx->result != GPUIR_OK) return NULL;
    gpuir__cg_kernel_info *infos;
    char *text = gpuir__cg_module(m, &gpuir__cg_cuda, &infos);
    stbds_arrfree(infos);
    return text;
}

/* ====================================================================== */
// >>rt.driver
// The CUDA Driver API and NVRTC, both opened with dlopen at run time, so the
// header builds and runs on machines with no CUDA at all.
// Reads: nothing. Writes: the context's error slot.
//
// No CUDA header is included: the few types and constants used are declared
// here with gpuir__ prefixes and were checked against CUDA 13.0's cuda.h,
// cudaTypedefs.h and nvrtc.h. Enum-typed parameters (CUresult,
// CUdevice_attribute, CUfunction_attribute, nvrtcResult) are declared as int,
// which has the same ABI.
//
// Driver entry points are resolved by base name through cuGetProcAddress at a
// pinned API version (GPUIR__CUDA_API_VERSION, 12000), so "cuMemAlloc" gives
// cuMemAlloc_v2, "cuCtxSynchronize" the argument-less 2000 ABI (not the 13000
// one taking a context) and "cuEventElapsedTime" the 2000 ABI (not _v2, which
// needs a 12.8 driver). Every entry point in GPUIR__CUDA_PROCS has the same
// ABI at any version from 11000 to 12000, so on an older driver the driver's
// own version is passed instead. LEGACY_STREAM is asked for explicitly: no
// per-thread-default-stream (_ptds/_ptsz) variants.
//
// Environment:
//   GPUIR_CUDA_LIBRARY   path of libcuda to load instead of libcuda.so.1
//   GPUIR_NVRTC_LIBRARY  path of libnvrtc to load instead of the search list


/* ---- CUDA driver types (cuda.h) ---------------------------------------- */

typedef int gpuir__CUresult;                      /* enum cudaError_enum */
typedef int gpuir__CUdevice;                      /* CUdevice_v1 */
typedef unsigned long long gpuir__CUdeviceptr;    /* CUdeviceptr_v2 */
typedef unsigned long long gpuir__cuuint64;       /* cuuint64_t */
typedef struct gpuir__CUctx_st *gpuir__CUcontext;
typedef struct gpuir__CUmod_st *gpuir__CUmodule;
typedef struct gpuir__CUfunc_st *gpuir__CUfunction;
typedef struct gpuir__CUstream_st *gpuir__CUstream;
typedef struct gpuir__CUevent_st *gpuir__CUevent;
typedef struct gpuir__CUgraph_st *gpuir__CUgraph;
typedef struct gpuir__CUgraphExec_st *gpuir__CUgraphExec;

/* CUresult values this file tests for. */
enum {
    GPUIR__CUDA_SUCCESS = 0,
    GPUIR__CUDA_ERROR_STUB_LIBRARY = 34,
    GPUIR__CUDA_ERROR_NO_DEVICE = 100
};

/* CUdevice_attribute values. */
enum {
    GPUIR__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    GPUIR__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    GPUIR__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    GPUIR__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    GPUIR__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    GPUIR__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    GPUIR__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    GPUIR__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    GPUIR__CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    GPUIR__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    GPUIR__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    GPUIR__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    GPUIR__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    GPUIR__CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115
};

/* CUfunction_attribute values. */
enum {
    GPUIR__CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    GPUIR__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    GPUIR__CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
    GPUIR__CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    GPUIR__CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    GPUIR__CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
    GPUIR__CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
    GPUIR__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
};

/* Stream, event and cuGetProcAddress flags. */
enum {
    GPUIR__CU_STREAM_DEFAULT = 0,
    GPUIR__CU_STREAM_NON_BLOCKING = 1,
    GPUIR__CU_EVENT_DEFAULT = 0,
    GPUIR__CU_EVENT_DISABLE_TIMING = 2,
    GPUIR__CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,
    GPUIR__CU_GET_PROC_ADDRESS_SUCCESS = 0,
    GPUIR__CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    GPUIR__CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
    GPUIR__CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1
};

/* The API version every entry point is resolved at (see the top). */
#define GPUIR__CUDA_API_VERSION 12000

/* The driver entry points: X(base name, parameter list). Each returns
   CUresult. The comment names the ABI cuGetProcAddress hands back at 12000. */
#define GPUIR__CUDA_PROCS(X)                                                         \
    X(cuInit, (unsigned int flags))                                   /* 2000  */    \
    X(cuDriverGetVersion, (int *version))                             /* 2020  */    \
    X(cuDeviceGetCount, (int *count))                                 /* 2000  */    \
    X(cuDeviceGet, (gpuir__CUdevice *dev, int ordinal))               /* 2000  */    \
    X(cuDeviceGetName, (char *name, int len, gpuir__CUdevice dev))    /* 2000  */    \
    X(cuDeviceGetAttribute, (int *value, int attrib, gpuir__CUdevice dev))           \
    X(cuDeviceTotalMem, (size_t *bytes, gpuir__CUdevice dev))         /* _v2   */    \
    X(cuDevicePrimaryCtxRetain, (gpuir__CUcontext *pctx, gpuir__CUdevice dev))       \
    X(cuDevicePrimaryCtxRelease, (gpuir__CUdevice dev))               /* _v2   */    \
    X(cuCtxPushCurrent, (gpuir__CUcontext pctx))                      /* _v2   */    \
    X(cuCtxPopCurrent, (gpuir__CUcontext *pctx))                      /* _v2   */    \
    X(cuCtxSynchronize, (void))                                       /* 2000  */    \
    X(cuMemAlloc, (gpuir__CUdeviceptr *dptr, size_t bytes))           /* _v2   */    \
    X(cuMemFree, (gpuir__CUdeviceptr dptr))                           /* _v2   */    \
    X(cuMemcpyHtoD, (gpuir__CUdeviceptr dst, const void *src, size_t bytes))         \
    X(cuMemcpyDtoH, (void *dst, gpuir__CUdeviceptr src, size_t bytes))               \
    X(cuMemcpyDtoD, (gpuir__CUdeviceptr dst, gpuir__CUdeviceptr src, size_t bytes))  \
    X(cuMemcpyHtoDAsync,                                                             \
      (gpuir__CUdeviceptr dst, const void *src, size_t bytes, gpuir__CUstream s))    \
    X(cuMemcpyDtoHAsync,                                                             \
      (void *dst, gpuir__CUdeviceptr src, size_t bytes, gpuir__CUstream s))          \
    X(cuMemcpyDtoDAsync,                                                             \
      (gpuir__CUdeviceptr dst, gpuir__CUdeviceptr src, size_t bytes,                 \
       gpuir__CUstream s))                                            /* _v2   */    \
    X(cuMemAllocAsync,                                                               \
      (gpuir__CUdeviceptr *dptr, size_t bytes, gpuir__CUstream s))    /* 11020 */    \
    X(cuMemFreeAsync, (gpuir__CUdeviceptr dptr, gpuir__CUstream s))   /* 11020 */    \
    X(cuMemAllocHost, (void **p, size_t bytes))                       /* _v2   */    \
    X(cuMemFreeHost, (void *p))                                       /* 2000  */    \
    X(cuMemHostRegister, (void *p, size_t bytes, unsigned int flags)) /* _v2   */    \
    X(cuMemHostUnregister, (void *p))                                 /* 4000  */    \
    X(cuMemHostAlloc, (void **p, size_t bytes, unsigned int flags))   /* 2020  */    \
    X(cuStreamIsCapturing, (gpuir__CUstream s, int *status))          /* 10000 */    \
    X(cuMemsetD8, (gpuir__CUdeviceptr dst, unsigned char value, size_t n))           \
    X(cuModuleLoadData, (gpuir__CUmodule *mod, const void *image))    /* 2000  */    \
    X(cuModuleUnload, (gpuir__CUmodule mod))                          /* 2000  */    \
    X(cuModuleGetFunction,                                                           \
      (gpuir__CUfunction *fn, gpuir__CUmodule mod, const char *name))                \
    X(cuFuncSetAttribute, (gpuir__CUfunction fn, int attrib, int value)) /* 9000 */  \
    X(cuFuncGetAttribute, (int *value, int attrib, gpuir__CUfunction fn))            \
    X(cuLaunchKernel,                                                                \
      (gpuir__CUfunction fn, unsigned int grid_x, unsigned int grid_y,               \
       unsigned int grid_z, unsigned int block_x, unsigned int block_y,              \
       unsigned int block_z, unsigned int shared_bytes, gpuir__CUstream s,           \
       void **params, void **extra))                                  /* 4000  */    \
    X(cuStreamCreate, (gpuir__CUstream *s, unsigned int flags))       /* 2000  */    \
    X(cuStreamDestroy, (gpuir__CUstream s))                           /* _v2   */    \
    X(cuStreamSynchronize, (gpuir__CUstream s))                       /* 2000  */    \
    X(cuEventCreate, (gpuir__CUevent *e, unsigned int flags))         /* 2000  */    \
    X(cuEventDestroy, (gpuir__CUevent e))                             /* _v2   */    \
    X(cuEventRecord, (gpuir__CUevent e, gpuir__CUstream s))           /* 2000  */    \
    X(cuEventSynchronize, (gpuir__CUevent e))                         /* 2000  */    \
    X(cuEventElapsedTime,                                                            \
      (float *ms, gpuir__CUevent start, gpuir__CUevent end))          /* 2000  */    \
    X(cuStreamWaitEvent,                                                             \
      (gpuir__CUstream s, gpuir__CUevent e, unsigned int flags))      /* 3020  */    \
    X(cuStreamBeginCapture, (gpuir__CUstream s, int mode))            /* 10010 */    \
    X(cuStreamEndCapture, (gpuir__CUstream s, gpuir__CUgraph *graph)) /* 10000 */    \
    X(cuGraphInstantiateWithFlags,                                                   \
      (gpuir__CUgraphExec *exec, gpuir__CUgraph graph,                               \
       unsigned long long flags))                                     /* 11040 */    \
    X(cuGraphLaunch, (gpuir__CUgraphExec exec, gpuir__CUstream s))    /* 10000 */    \
    X(cuGraphExecDestroy, (gpuir__CUgraphExec exec))                  /* 10000 */    \
    X(cuGraphDestroy, (gpuir__CUgraph graph))                         /* 10000 */

/* A loaded CUDA driver. All zero when not loaded. */
typedef struct gpuir__cuda {
    void *lib;                    /* dlopen handle */
    char library[512];            /* the name or path it was opened by */
    int driver_version;           /* cuDriverGetVersion, e.g. 13000 */
    int api_version;              /* what cuGetProcAddress was asked for */
    gpuir__CUresult (*cuGetProcAddress_v2)(const char *symbol, void **pfn, int version,
                                           gpuir__cuuint64 flags, int *status);
    gpuir__CUresult (*cuGetProcAddress)(const char *symbol, void **pfn, int version,
                                        gpuir__cuuint64 flags);
    gpuir__CUresult (*cuGetErrorName)(gpuir__CUresult r, const char **name);
    gpuir__CUresult (*cuGetErrorString)(gpuir__CUresult r, const char **text);
#define GPUIR__X(name, params) gpuir__CUresult (*name) params;
    GPUIR__CUDA_PROCS(GPUIR__X)
#undef GPUIR__X
    /* Optional (CUDA 12.0 drivers on): NULL when the driver lacks it, and
       only a kernel that takes a tensor map needs it. */
    gpuir__CUresult (*cuTensorMapEncodeTiled)(void *map, unsigned dtype, unsigned rank, void *base,
                                              const gpuir__cuuint64 *dims, const gpuir__cuuint64 *strides,
                                              const unsigned *box, const unsigned *element_strides,
                                              unsigned interleave, unsigned swizzle, unsigned l2_promotion,
                                              unsigned oob_fill);
} gpuir__cuda;

/* What gpuir__cuda_device_info reports about one device. */
typedef struct gpuir__cuda_device {
    int ordinal;
    gpuir__CUdevice device;
    char name[256];
    int cc_major, cc_minor;
    int sm;                          /* cc_major * 10 + cc_minor, e.g. 90 */
    int sm_count;
    int max_threads_per_block;
    int max_block_dim[3];
    int max_grid_dim[3];
    int max_shared_per_block;        /* bytes, without opting in */
    int max_shared_per_block_optin;  /* bytes, with cuFuncSetAttribute */
    int warp_size;
    int memory_pools;                /* cuMemAllocAsync/cuMemFreeAsync work */
    size_t total_mem;                /* bytes */
    int driver_version;              /* e.g. 13000 */
} gpuir__cuda_device;

/* ---- CUDA errors ------------------------------------------------------- */

/* Names and texts of common CUresult codes, for when the driver cannot say
   (the toolkit's stub library answers every call, cuGetErrorName included,
   with CUDA_ERROR_STUB_LIBRARY). */
static const struct { int code; const char *name, *text; } gpuir__cuda_error_table[] = {
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "the driver is too old for this call"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* Writes "NAME: text" for a CUresult into buf, asking the driver first and
   the table above when the driver cannot answer. */
static void gpuir__cuda_error_text(const gpuir__cuda *cu, gpuir__CUresult r, char *buf,
                                   size_t size) {
    const char *name = NULL, *text = NULL;
    if (cu && cu->cuGetErrorName && cu->cuGetErrorName(r, &name) != GPUIR__CUDA_SUCCESS)
        name = NULL;
    if (cu && cu->cuGetErrorString && cu->cuGetErrorString(r, &text) != GPUIR__CUDA_SUCCESS)
        text = NULL;
    size_t n = sizeof gpuir__cuda_error_table / sizeof gpuir__cuda_error_table[0];
    for (size_t i = 0; i < n && (!name || !text); i++) {
        if (gpuir__cuda_error_table[i].code != r) continue;
        if (!name) name = gpuir__cuda_error_table[i].name;
        if (!text) text = gpuir__cuda_error_table[i].text;
    }
    if (name)
        snprintf(buf, size, "%s: %s", name, text ? text : "no description");
    else
        snprintf(buf, size, "CUresult %d: %s", r, text ? text : "unknown CUDA error");
}

/* OK when r is CUDA_SUCCESS; otherwise records and returns GPUIR_ERR_CUDA
   with a message such as "cuMemAlloc failed (CUDA_ERROR_OUT_OF_MEMORY: out
   of memory) while allocating 64 bytes for %x". `what` may be NULL. */
static gpuir_result gpuir__cuda_check(gpuir_ctx *ctx, const gpuir__cuda *cu, gpuir__CUresult r,
                                      const char *call, const char *what) {
    if (r == GPUIR__CUDA_SUCCESS) return GPUIR_OK;
    char err[256];
    gpuir__cuda_error_text(cu, r, err, sizeof err);
    if (what && what[0])
        return gpuir__fail(ctx, GPUIR_ERR_CUDA, "%s failed (%s) while %s", call, err, what);
    return gpuir__fail(ctx, GPUIR_ERR_CUDA, "%s failed (%s)", call, err);
}

/* ---- loading the driver ------------------------------------------------ */

/* Closes the library and zeroes the struct. Safe on a zeroed struct. */
static void gpuir__cuda_unload(gpuir__cuda *cu) {
    if (cu->lib) dlclose(cu->lib);
    memset(cu, 0, sizeof *cu);
}

/* dlopens libcuda: $GPUIR_CUDA_LIBRARY if set, else libcuda.so.1, then
   libcuda.so. On failure records why, with every dlerror text. */
static gpuir_result gpuir__cuda_open(gpuir_ctx *ctx, gpuir__cuda *cu) {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
    const char *env = getenv("GPUIR_CUDA_LIBRARY");
    gpuir__str errs = {NULL};
    gpuir_result res = GPUIR_OK;
    if (env && env[0]) {
        snprintf(cu->library, sizeof cu->library, "%s", env);
        cu->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!cu->lib) {
            const char *e = dlerror();
            res = gpuir__fail(ctx, GPUIR_ERR_UNAVAILABLE,
                              "CUDA is unavailable: cannot load the CUDA driver library "
                              "GPUIR_CUDA_LIBRARY=%s (%s)", env, e ? e : "dlopen failed");
        }
        return res;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !cu->lib; i++) {
        cu->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (cu->lib) {
            snprintf(cu->library, sizeof cu->library, "%s", names[i]);
        } else {
            const char *e = dlerror();
            gpuir__str_appendf(&errs, "%s%s", i ? "; " : "", e ? e : names[i]);
        }
    }
    if (!cu->lib)
        res = gpuir__fail(ctx, GPUIR_ERR_UNAVAILABLE,
                          "CUDA is unavailable: cannot load the CUDA driver library "
                          "libcuda.so.1 (%s); is the NVIDIA driver installed? "
                          "GPUIR_CUDA_LIBRARY may name its path", gpuir__str_cstr(&errs));
    gpuir__str_free(&errs);
    return res;
}

/* Finds a plain exported symbol and stores it into the function pointer at
   fn (of size fn_size). A missing symbol is an error when `required`. */
static gpuir_result gpuir__cuda_sym(gpuir_ctx *ctx, gpuir__cuda *cu, const char *name, void *fn,
                                    size_t fn_size, bool required) {
    void *p = dlsym(cu->lib, name);
    if (!p && required)
        return gpuir__fail(ctx, GPUIR_ERR_UNAVAILABLE,
                           "CUDA is unavailable: the CUDA driver library %s has no symbol %s "
                           "(a driver older than CUDA 11.3?)", cu->library, name);
    if (p) memcpy(fn, &p, fn_size);   /* POSIX: void * and function pointers agree */
    return GPUIR_OK;
}

/* Resolves one entry point by base name through cuGetProcAddress at
   cu->api_version and stores it into the function pointer at fn. */
static gpuir_result gpuir__cuda_proc(gpuir_ctx *ctx, gpuir__cuda *cu, const char *name, void *fn,
                                     size_t fn_size) {
    void *p = NULL;
    int status = GPUIR__CU_GET_PROC_ADDRESS_SUCCESS;
    gpuir__CUresult r;
    if (cu->cuGetProcAddress_v2)
        r = cu->cuGetProcAddress_v2(name, &p, cu->api_version,
                                    GPUIR__CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
    else
        r = cu->cuGetProcAddress(name, &p, cu->api_version,
                                 GPUIR__CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    if (r != GPUIR__CUDA_SUCCESS) {
        char what[640];
        snprintf(what, sizeof what, "looking up %s (CUDA API %d) in %s%s", name,
                 cu->api_version, cu->library,
                 r == GPUIR__CUDA_ERROR_STUB_LIBRARY
                     ? ", which is the CUDA toolkit's stub library, not a driver: "
                       "CUDA is unavailable"
                     : ": CUDA is unavailable");
        return gpuir__cuda_check(ctx, cu, r, "cuGetProcAddress", what);
    }
    if (!p)
        return gpuir__fail(ctx, GPUIR_ERR_CUDA,
                           "CUDA is unavailable: the driver in %s has no %s for CUDA API %d (%s)",
                           cu->library, name, cu->api_version,
                           status == GPUIR__CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                               ? "version not sufficient" : "symbol not found");
    memcpy(fn, &p, fn_size);
    return GPUIR_OK;
}

/* Resolves an entry point the driver may lack (newer than the oldest
   driver gpuir runs on): the pointer stays NULL if it does. */
static void gpuir__cuda_proc_optional(gpuir__cuda *cu, const char *name, void *fn, size_t fn_size) {
    void *p = NULL;
    int status = 0;
    gpuir__CUresult r = cu->cuGetProcAddress_v2
                            ? cu->cuGetProcAddress_v2(name, &p, cu->api_version, GPUIR__CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                                      &status)
                            : cu->cuGetProcAddress(name, &p, cu->api_version, GPUIR__CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    if (r != GPUIR__CUDA_SUCCESS) p = NULL;
    memcpy(fn, &p, fn_size);
}

/* Reads the driver version (through cuGetProcAddress at the lowest version
   the lookup function exists at) and chooses cu->api_version. */
static gpuir_result gpuir__cuda_pick_api_version(gpuir_ctx *ctx, gpuir__cuda *cu) {
    cu->api_version = cu->cuGetProcAddress_v2 ? 12000 : 11030;
    gpuir_result res = gpuir__cuda_proc(ctx, cu, "cuDriverGetVersion", &cu->cuDriverGetVersion,
                                        sizeof cu->cuDriverGetVersion);
    if (res != GPUIR_OK) return res;
    char what[600];
    snprintf(what, sizeof what, "asking %s for its version", cu->library);
    res = gpuir__cuda_check(ctx, cu, cu->cuDriverGetVersion(&cu->driver_version),
                            "cuDriverGetVersion", what);
    if (res != GPUIR_OK) return res;
    cu->api_version = cu->driver_version < GPUIR__CUDA_API_VERSION ? cu->driver_version
                                                                   : GPUIR__CUDA_API_VERSION;
    return GPUIR_OK;
}

/* Finds the lookup and error functions by dlsym, every other entry point
   through cuGetProcAddress. */
static gpuir_result gpuir__cuda_resolve(gpuir_ctx *ctx, gpuir__cuda *cu) {
    gpuir_result res = GPUIR_OK;
    if (res == GPUIR_OK)
        res = gpuir__cuda_sym(ctx, cu, "cuGetErrorName", &cu->cuGetErrorName,
                              sizeof cu->cuGetErrorName, true);
    if (res == GPUIR_OK)
        res = gpuir__cuda_sym(ctx, cu, "cuGetErrorString", &cu->cuGetErrorString,
                              sizeof cu->cuGetErrorString, true);
    if (res == GPUIR_OK)
        res = gpuir__cuda_sym(ctx, cu, "cuGetProcAddress_v2", &cu->cuGetProcAddress_v2,
                              sizeof cu->cuGetProcAddress_v2, false);
    if (res == GPUIR_OK && !cu->cuGetProcAddress_v2)
        res = gpuir__cuda_sym(ctx, cu, "cuGetProcAddress", &cu->cuGetProcAddress,
                              sizeof cu->cuGetProcAddress, true);
    if (res == GPUIR_OK) res = gpuir__cuda_pick_api_version(ctx, cu);
#define GPUIR__X(name, params)                                                     \
    if (res == GPUIR_OK) res = gpuir__cuda_proc(ctx, cu, #name, &cu->name, sizeof cu->name);
    GPUIR__CUDA_PROCS(GPUIR__X)
#undef GPUIR__X
    if (res == GPUIR_OK) gpuir__cuda_proc_optional(cu, "cuTensorMapEncodeTiled", &cu->cuTensorMapEncodeTiled,
                                                   sizeof cu->cuTensorMapEncodeTiled);
    return res;
}

/* Loads the CUDA driver: dlopen, resolve every entry point, cuInit(0). On
   failure the struct is left zeroed, the library closed, and the error says
   why CUDA is unavailable (no library, a missing symbol, the toolkit's stub,
   CUDA_ERROR_NO_DEVICE from cuInit...). */
static gpuir_result gpuir__cuda_load(gpuir_ctx *ctx, gpuir__cuda *cu) {
    memset(cu, 0, sizeof *cu);
    gpuir_result res = gpuir__cuda_open(ctx, cu);
    if (res == GPUIR_OK) res = gpuir__cuda_resolve(ctx, cu);
    if (res == GPUIR_OK) {
        char what[640];
        snprintf(what, sizeof what, "initializing the CUDA driver %s (version %d): "
                 "CUDA is unavailable", cu->library, cu->driver_version);
        res = gpuir__cuda_check(ctx, cu, cu->cuInit(0), "cuInit", what);
    }
    if (res != GPUIR_OK) gpuir__cuda_unload(cu);
    return res;
}

/* ---- device information ------------------------------------------------ */

/* Fills *out for device `ordinal` (0-based). Needs a loaded driver but no
   context. */
static gpuir_result gpuir__cuda_device_info(gpuir_ctx *ctx, const gpuir__cuda *cu, int ordinal,
                                            gpuir__cuda_device *out) {
    memset(out, 0, sizeof *out);
    int count = 0;
    gpuir_result res = gpuir__cuda_check(ctx, cu, cu->cuDeviceGetCount(&count),
                                         "cuDeviceGetCount", "counting CUDA devices");
    if (res != GPUIR_OK) return res;
    if (ordinal < 0 || ordinal >= count)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT,
                           "no CUDA device %d: the driver sees %d device(s)", ordinal, count);
    char what[128];
    snprintf(what, sizeof what, "querying CUDA device %d", ordinal);
    out->ordinal = ordinal;
    out->driver_version = cu->driver_version;
    res = gpuir__cuda_check(ctx, cu, cu->cuDeviceGet(&out->device, ordinal), "cuDeviceGet", what);
    if (res == GPUIR_OK)
        res = gpuir__cuda_check(ctx, cu,
                                cu->cuDeviceGetName(out->name, (int)sizeof out->name - 1,
                                                    out->device),
                                "cuDeviceGetName", what);
    if (res == GPUIR_OK)
        res = gpuir__cuda_check(ctx, cu, cu->cuDeviceTotalMem(&out->total_mem, out->device),
                                "cuDeviceTotalMem", what);
    const struct { int attrib; int *dst; } attrs[] = {
        {GPUIR__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &out->cc_major},
        {GPUIR__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &out->cc_minor},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &out->sm_count},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &out->max_threads_per_block},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &out->max_block_dim[0]},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &out->max_block_dim[1]},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &out->max_block_dim[2]},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &out->max_grid_dim[0]},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &out->max_grid_dim[1]},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &out->max_grid_dim[2]},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &out->max_shared_per_block},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
         &out->max_shared_per_block_optin},
        {GPUIR__CU_DEVICE_ATTRIBUTE_WARP_SIZE, &out->warp_size},
        {GPUIR__CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, &out->memory_pools},
    };
    for (size_t i = 0; res == GPUIR_OK && i < sizeof attrs / sizeof attrs[0]; i++)
        res = gpuir__cuda_check(ctx, cu,
                                cu->cuDeviceGetAttribute(attrs[i].dst, attrs[i].attrib,
                                                         out->device),
                                "cuDeviceGetAttribute", what);
    out->name[sizeof out->name - 1] = '\0';
    out->sm = out->cc_major * 10 + out->cc_minor;
    return res;
}

/* ---- NVRTC types (nvrtc.h) --------------------------------------------- */

typedef int gpuir__nvrtcResult;                   /* enum nvrtcResult */
typedef struct gpuir__nvrtcProgram_st *gpuir__nvrtcProgram;

enum {
    GPUIR__NVRTC_SUCCESS = 0,
    GPUIR__NVRTC_ERROR_OUT_OF_MEMORY = 1,
    GPUIR__NVRTC_ERROR_COMPILATION = 6
};

/* The NVRTC functions: X(name, parameter list); each returns nvrtcResult.
   nvrtcGetErrorString (which returns a string) is declared on its own. */
#define GPUIR__NVRTC_PROCS(X)                                                        \
    X(nvrtcVersion, (int *major, int *minor))                                        \
    X(nvrtcGetNumSupportedArchs, (int *count))                                       \
    X(nvrtcGetSupportedArchs, (int *archs))                                          \
    X(nvrtcCreateProgram,                                                            \
      (gpuir__nvrtcProgram *prog, const char *source, const char *name,              \
       int n_headers, const char *const *headers, const char *const *include_names)) \
    X(nvrtcDestroyProgram, (gpuir__nvrtcProgram *prog))                              \
    X(nvrtcCompileProgram,                                                           \
      (gpuir__nvrtcProgram prog, int n_options, const char *const *options))         \
    X(nvrtcGetProgramLogSize, (gpuir__nvrtcProgram prog, size_t *size))              \
    X(nvrtcGetProgramLog, (gpuir__nvrtcProgram prog, char *log))                     \
    X(nvrtcGetPTXSize, (gpuir__nvrtcProgram prog, size_t *size))                     \
    X(nvrtcGetPTX, (gpuir__nvrtcProgram prog, char *ptx))                            \
    X(nvrtcGetCUBINSize, (gpuir__nvrtcProgram prog, size_t *size))                   \
    X(nvrtcGetCUBIN, (gpuir__nvrtcProgram prog, char *cubin))

/* A loaded NVRTC. All zero when not loaded. */
typedef struct gpuir__nvrtc {
    void *lib;                    /* dlopen handle */
    char library[512];            /* the name or path it was opened by */
    int major, minor;             /* nvrtcVersion, e.g. 13 0 */
    int *archs;                   /* supported sm numbers, ascending (malloc'd) */
    int n_archs;
    const char *(*nvrtcGetErrorString)(gpuir__nvrtcResult r);
#define GPUIR__X(name, params) gpuir__nvrtcResult (*name) params;
    GPUIR__NVRTC_PROCS(GPUIR__X)
#undef GPUIR__X
} gpuir__nvrtc;

/* The option that makes NVRTC run ptxas verbosely, so the log carries the
   per-kernel "N bytes spill stores, M bytes spill loads" lines read by
   gpuir__nvrtc_spilled_bytes. NVRTC 13.0 accepts every spelling
   ("--ptxas-options=-v", "-Xptxas=-v", and "-Xptxas" "-v" as two options);
   this one is the documented long form. Only with an sm_ (cubin) target:
   compute_ (PTX) targets do not run ptxas. gpuir__nvrtc_compile always adds
   --no-cache (see gpuir__nvrtc_has_cache), so ptxas runs and reports. */
#define GPUIR__NVRTC_OPT_PTXAS_VERBOSE "--ptxas-options=-v"

/* ---- NVRTC errors ------------------------------------------------------ */

/* NVRTC's name for a result, e.g. "NVRTC_ERROR_COMPILATION". */
static const char *gpuir__nvrtc_error_name(const gpuir__nvrtc *n, gpuir__nvrtcResult r) {
    const char *s = n->nvrtcGetErrorString ? n->nvrtcGetErrorString(r) : NULL;
    return s ? s : "unknown NVRTC error";
}

/* OK when r is NVRTC_SUCCESS; otherwise records GPUIR_ERR_COMPILE (host
   memory errors: GPUIR_ERR_OUT_OF_MEMORY) naming the call and `what`. */
static gpuir_result gpuir__nvrtc_check(gpuir_ctx *ctx, const gpuir__nvrtc *n, gpuir__nvrtcResult r,
                                       const char *call, const char *what) {
    if (r == GPUIR__NVRTC_SUCCESS) return GPUIR_OK;
    gpuir_result code = r == GPUIR__NVRTC_ERROR_OUT_OF_MEMORY ? GPUIR_ERR_OUT_OF_MEMORY
                                                              : GPUIR_ERR_COMPILE;
    return gpuir__fail(ctx, code, "%s failed (%s) while %s", call, gpuir__nvrtc_error_name(n, r),
                       what);
}

/* ---- loading NVRTC ----------------------------------------------------- */

/* Closes the library, frees the arch list and zeroes the struct. Safe on a
   zeroed struct. */
static void gpuir__nvrtc_unload(gpuir__nvrtc *n) {
    GPUIR_FREE(n->archs);
    if (n->lib) dlclose(n->lib);
    memset(n, 0, sizeof *n);
}

/* dlopens NVRTC: $GPUIR_NVRTC_LIBRARY alone if set, else the versioned
   sonames newest first (pip wheels ship only those), then libnvrtc.so. */
static gpuir_result gpuir__nvrtc_open(gpuir_ctx *ctx, gpuir__nvrtc *n) {
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                                        "libnvrtc.so"};
    const char *env = getenv("GPUIR_NVRTC_LIBRARY");
    if (env && env[0]) {
        snprintf(n->library, sizeof n->library, "%s", env);
        n->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (n->lib) return GPUIR_OK;
        const char *e = dlerror();
        return gpuir__fail(ctx, GPUIR_ERR_UNAVAILABLE,
                           "NVRTC is unavailable: cannot load GPUIR_NVRTC_LIBRARY=%s (%s)", env,
                           e ? e : "dlopen failed");
    }
    gpuir__str errs = {NULL};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !n->lib; i++) {
        n->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (n->lib) {
            snprintf(n->library, sizeof n->library, "%s", names[i]);
        } else {
            const char *e = dlerror();
            gpuir__str_appendf(&errs, "%s%s", i ? "; " : "", e ? e : names[i]);
        }
    }
    gpuir_result res = GPUIR_OK;
    if (!n->lib)
        res = gpuir__fail(ctx, GPUIR_ERR_UNAVAILABLE,
                          "NVRTC is unavailable: cannot load libnvrtc (%s); install the CUDA "
                          "toolkit or set GPUIR_NVRTC_LIBRARY to the library's path",
                          gpuir__str_cstr(&errs));
    gpuir__str_free(&errs);
    return res;
}

/* Finds one NVRTC function by dlsym and stores it into the function pointer
   at fn (of size fn_size). */
static gpuir_result gpuir__nvrtc_sym(gpuir_ctx *ctx, gpuir__nvrtc *n, const char *name, void *fn,
                                     size_t fn_size) {
    void *p = dlsym(n->lib, name);
    if (!p)
        return gpuir__fail(ctx, GPUIR_ERR_IO,
                           "NVRTC is unavailable: %s has no symbol %s (NVRTC older than 11.2?)",
                           n->library, name);
    memcpy(fn, &p, fn_size);   /* POSIX: void * and function pointers agree */
    return GPUIR_OK;
}

/* Asks NVRTC for its version and its supported architectures (sorted). */
static gpuir_result gpuir__nvrtc_query(gpuir_ctx *ctx, gpuir__nvrtc *n) {
    gpuir_result res = gpuir__nvrtc_check(ctx, n, n->nvrtcVersion(&n->major, &n->minor),
                                          "nvrtcVersion", "loading NVRTC");
    int count = 0;
    if (res == GPUIR_OK)
        res = gpuir__nvrtc_check(ctx, n, n->nvrtcGetNumSupportedArchs(&count),
                                 "nvrtcGetNumSupportedArchs", "loading NVRTC");
    if (res != GPUIR_OK) return res;
    if (count <= 0)
        return gpuir__fail(ctx, GPUIR_ERR_IO, "NVRTC is unavailable: %s supports no architecture",
                           n->library);
    n->archs = (int *)gpuir__calloc((size_t)count, sizeof *n->archs);
    if (!n->archs) return gpuir__oom(ctx, "NVRTC's architecture list");
    n->n_archs = count;
    res = gpuir__nvrtc_check(ctx, n, n->nvrtcGetSupportedArchs(n->archs),
                             "nvrtcGetSupportedArchs", "loading NVRTC");
    for (int i = 1; i < count; i++)   /* insertion sort: the list is short */
        for (int j = i; j > 0 && n->archs[j - 1] > n->archs[j]; j--) {
            int t = n->archs[j];
            n->archs[j] = n->archs[j - 1];
            n->archs[j - 1] = t;
        }
    return res;
}

/* Loads NVRTC: dlopen, every function by dlsym, version and archs. On
   failure the struct is left zeroed and the library closed. */
static gpuir_result gpuir__nvrtc_load(gpuir_ctx *ctx, gpuir__nvrtc *n) {
    memset(n, 0, sizeof *n);
    gpuir_result res = gpuir__nvrtc_open(ctx, n);
    if (res == GPUIR_OK)
        res = gpuir__nvrtc_sym(ctx, n, "nvrtcGetErrorString", &n->nvrtcGetErrorString,
                               sizeof n->nvrtcGetErrorString);
#define GPUIR__X(name, params)                                                     \
    if (res == GPUIR_OK) res = gpuir__nvrtc_sym(ctx, n, #name, &n->name, sizeof n->name);
    GPUIR__NVRTC_PROCS(GPUIR__X)
#undef GPUIR__X
    if (res == GPUIR_OK) res = gpuir__nvrtc_query(ctx, n);
    if (res != GPUIR_OK) gpuir__nvrtc_unload(n);
    return res;
}

/* ---- choosing a target ------------------------------------------------- */

/* The architecture to compile for on a device of compute capability `sm`
   (e.g. 90): sm itself, as a cubin, when NVRTC supports it. Otherwise the
   newest supported arch below sm, with *as_ptx set: PTX for compute_XX,
   which the driver JIT-compiles forward (a device newer than NVRTC, or one
   between two supported archs). 0 when sm is older than every supported
   arch. */
static int gpuir__nvrtc_pick_arch(const gpuir__nvrtc *n, int sm, bool *as_ptx) {
    int best = 0;
    *as_ptx = false;
    for (int i = 0; i < n->n_archs; i++) {
        if (n->archs[i] == sm) return sm;
        if (n->archs[i] < sm && n->archs[i] > best) best = n->archs[i];
    }
    *as_ptx = best != 0;
    return best;
}

/* True when NVRTC knows --minimal (added in CUDA 12.4), which leaves out
   textures, surfaces, the cudadevrt API, device-side launch and the runtime
   and driver types (cudaError_t...): generated code uses none of them, and
   small programs compile faster. */
static bool gpuir__nvrtc_has_minimal(const gpuir__nvrtc *n) {
    return n->major > 12 || (n->major == 12 && n->minor >= 4);
}

/* Writes the --gpu-architecture option: sm_90 (cubin) or compute_90 (PTX),
   with an "a" suffix for the arch-specific target (sm_90a: wgmma, setmaxnreg;
   runs only on exactly that arch). */
static void gpuir__nvrtc_arch_option(char *buf, size_t size, int sm, bool arch_specific,
                                     bool want_ptx) {
    snprintf(buf, size, "--gpu-architecture=%s_%d%s", want_ptx ? "compute" : "sm", sm,
             arch_specific ? "a" : "");
}

/* ---- compiling --------------------------------------------------------- */

/* The program's log as a malloc'd string (empty when there is none); NULL
   only when out of memory. */
static char *gpuir__nvrtc_take_log(const gpuir__nvrtc *n, gpuir__nvrtcProgram prog) {
    size_t size = 0;
    if (n->nvrtcGetProgramLogSize(prog, &size) != GPUIR__NVRTC_SUCCESS) size = 0;
    char *log = (char *)GPUIR_MALLOC(size + 1);
    if (!log) return NULL;
    log[0] = '\0';
    if (size > 0 && n->nvrtcGetProgramLog(prog, log) != GPUIR__NVRTC_SUCCESS) log[0] = '\0';
    log[size] = '\0';
    return log;
}

/* Copies the program's cubin, or its PTX text (NUL-terminated, the size
   counting the NUL), into a malloc'd buffer. */
static gpuir_result gpuir__nvrtc_take_image(gpuir_ctx *ctx, const gpuir__nvrtc *n,
                                            gpuir__nvrtcProgram prog, bool want_ptx,
                                            const char *what, char **image, size_t *image_size) {
    size_t size = 0;
    gpuir_result res = want_ptx
        ? gpuir__nvrtc_check(ctx, n, n->nvrtcGetPTXSize(prog, &size), "nvrtcGetPTXSize", what)
        : gpuir__nvrtc_check(ctx, n, n->nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize", what);
    if (res != GPUIR_OK) return res;
    if (size == 0)
        return gpuir__fail(ctx, GPUIR_ERR_COMPILE, "NVRTC produced an empty %s while %s",
                           want_ptx ? "PTX" : "cubin", what);
    char *buf = (char *)GPUIR_MALLOC(size + 1);
    if (!buf) return gpuir__oom(ctx, "a compiled kernel image");
    res = want_ptx
        ? gpuir__nvrtc_check(ctx, n, n->nvrtcGetPTX(prog, buf), "nvrtcGetPTX", what)
        : gpuir__nvrtc_check(ctx, n, n->nvrtcGetCUBIN(prog, buf), "nvrtcGetCUBIN", what);
    if (res != GPUIR_OK) {
        GPUIR_FREE(buf);
        return res;
    }
    buf[size] = '\0';   /* PTX already ends in NUL; a cubin gets a harmless one past its end */
    *image = buf;
    *image_size = size;
    return GPUIR_OK;
}

/* The line number of the first "NAME(LINE): ... error" diagnostic in the
   log, or 0 when there is none. */
static long gpuir__nvrtc_error_line(const char *log, const char *name) {
    size_t name_len = strlen(name);
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > name_len + 2 && strncmp(line, name, name_len) == 0 && line[name_len] == '(') {
            char *after = NULL;
            long number = strtol(line + name_len + 1, &after, 10);
            const char *err = strstr(after, "error");
            if (number > 0 && *after == ')' && err && err < line + len) return number;
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

/* Appends source line `number` (1-based), if it exists, to the message, and
   the kernel and IR op it was generated for (from codegen's comments). */
static void gpuir__nvrtc_append_source_line(gpuir__str *msg, const char *source, const char *name,
                                            long number) {
    const char *line = source, *kernel = NULL, *op = NULL;
    for (long i = 1; i < number && line; i++) {     /* codegen comments each kernel and op */
        const char *text = line + strspn(line, " ");
        if (strncmp(text, "/* @", 4) == 0) { kernel = text; op = NULL; }
        if (strncmp(text, "/* op ", 6) == 0) op = text;
        line = strchr(line, '\n');
        if (line) line++;
    }
    if (!line) return;
    size_t len = strcspn(line, "\r\n");
    gpuir__str_appendf(msg, "\n%s(%ld) reads: %.*s", name, number, (int)(len > 400 ? 400 : len), line);
    if (kernel) gpuir__str_appendf(msg, "\nin kernel %.*s", (int)strcspn(kernel + 3, ":*\n"), kernel + 3);
    if (op) gpuir__str_appendf(msg, ", from IR %.*s", (int)strcspn(op + 3, "*\n") - 1, op + 3);
}

/* Appends the first lines of the log (at most 12 lines, 2000 bytes). */
static void gpuir__nvrtc_append_log_head(gpuir__str *msg, const char *log) {
    size_t end = 0, lines = 0;
    while (log[end] && lines < 12 && end < 2000) {
        if (log[end] == '\n') lines++;
        end++;
    }
    while (end > 0 && (log[end - 1] == '\n' || log[end - 1] == '\r')) end--;
    if (end == 0) {
        gpuir__str_appendf(msg, "\n(the compiler log is empty)");
        return;
    }
    gpuir__str_appendf(msg, "\n%.*s", (int)end, log);
    if (log[end] && strspn(log + end, "\r\n") < strlen(log + end))
        gpuir__str_appendf(msg, "\n[... log truncated]");
}

/* Records the GPUIR_ERR_COMPILE of a failed nvrtcCompileProgram: the result
   name, the first lines of the log and the offending source line. */
static gpuir_result gpuir__nvrtc_compile_error(gpuir_ctx *ctx, const gpuir__nvrtc *n,
                                               gpuir__nvrtcResult r, const char *source,
                                               const char *name, const char *arch,
                                               const char *log) {
    gpuir__str msg = {NULL};
    gpuir__str_appendf(&msg, "nvrtcCompileProgram failed (%s) while compiling %s for %s:",
                       gpuir__nvrtc_error_name(n, r), name, arch);
    gpuir__nvrtc_append_log_head(&msg, log ? log : "");
    long line = log ? gpuir__nvrtc_error_line(log, name) : 0;
    if (line > 0) gpuir__nvrtc_append_source_line(&msg, source, name, line);
    gpuir_result res = gpuir__fail(ctx, GPUIR_ERR_COMPILE, "%s", gpuir__str_cstr(&msg));
    gpuir__str_free(&msg);
    return res;
}

/* True when NVRTC has its compile cache (12.9+) and so --no-cache. gpuir
   always passes it: gpuir's own cache (rt.cache) is the one cache, keyed by
   what gpuir knows and authenticated, so NVRTC's would only store every
   module twice, and its hits are invisible to gpuir: a "cold" compile that
   NVRTC answered from its cache took 13.4 ms for the seed matmul on an H100
   machine (the seed example had compiled the same source before), next to
   447 ms of real compiling; a hit also skips ptxas, so the log lacks the
   "ptxas info" lines that gpuir__nvrtc_spilled_bytes reads. */
static bool gpuir__nvrtc_has_cache(const gpuir__nvrtc *n) {
    return n->major > 12 || (n->major == 12 && n->minor >= 9);
}

/* Builds the option list: the arch, --std=c++17, --minimal and --no-cache
   where NVRTC has them, then the caller's. The array is malloc'd; NULL when
   out of memory. */
static const char **gpuir__nvrtc_options(const gpuir__nvrtc *n, const char *arch_option,
                                         const char *const *extra, size_t n_extra, int *count) {
    const char **opts = (const char **)GPUIR_MALLOC((n_extra + 4) * sizeof *opts);
    if (!opts) return NULL;
    int k = 0;
    opts[k++] = arch_option;
    opts[k++] = "--std=c++17";
    if (gpuir__nvrtc_has_minimal(n)) opts[k++] = "--minimal";
    if (gpuir__nvrtc_has_cache(n)) opts[k++] = "--no-cache";
    for (size_t i = 0; i < n_extra; i++) opts[k++] = extra[i];
    *count = k;
    return opts;
}

/* Compiles one CUDA C++ program for sm_<sm> (cubin) or compute_<sm> (PTX
   text, when want_ptx), with an "a" suffix when arch_specific. `name` is the
   file name in diagnostics (e.g. "gpuir_k.cu"). extra_options are appended
   (e.g. GPUIR__NVRTC_OPT_PTXAS_VERBOSE, "--fmad=false"). On success *image
   is a malloc'd cubin or NUL-terminated PTX and *image_size its size (the
   PTX's counting the NUL). When log is non-NULL, *log is always set to the
   malloc'd compiler log, success or not (possibly empty; NULL only when out
   of host memory); the caller frees it, and *image. On
   failure: GPUIR_ERR_COMPILE, with the first lines of the log and the
   offending source line in the message. */
static gpuir_result gpuir__nvrtc_compile(gpuir_ctx *ctx, const gpuir__nvrtc *n, const char *source,
                                         const char *name, int sm, bool arch_specific,
                                         bool want_ptx, const char *const *extra_options,
                                         size_t n_extra, char **image, size_t *image_size,
                                         char **log) {
    *image = NULL;
    *image_size = 0;
    if (log) *log = NULL;
    if (!name || !name[0]) name = "gpuir_kernel.cu";
    if (n_extra > 1000)
        return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "%zu NVRTC options (at most 1000)", n_extra);
    char arch[64], what[320];
    gpuir__nvrtc_arch_option(arch, sizeof arch, sm, arch_specific, want_ptx);
    snprintf(what, sizeof what, "compiling %s for %s", name, arch + strlen("--gpu-architecture="));
    int n_opts = 0;
    const char **opts = gpuir__nvrtc_options(n, arch, extra_options, n_extra, &n_opts);
    if (!opts) return gpuir__oom(ctx, "NVRTC options");
    gpuir__nvrtcProgram prog = NULL;
    gpuir_result res = gpuir__nvrtc_check(
        ctx, n, n->nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL), "nvrtcCreateProgram",
        what);
    if (res == GPUIR_OK) {
        gpuir__nvrtcResult r = n->nvrtcCompileProgram(prog, n_opts, opts);
        char *text = gpuir__nvrtc_take_log(n, prog);
        if (r != GPUIR__NVRTC_SUCCESS)
            res = gpuir__nvrtc_compile_error(ctx, n, r, source, name,
                                             arch + strlen("--gpu-architecture="), text);
        else
            res = gpuir__nvrtc_take_image(ctx, n, prog, want_ptx, what, image, image_size);
        if (log) *log = text;
        else GPUIR_FREE(text);
        n->nvrtcDestroyProgram(&prog);
    }
    GPUIR_FREE(opts);
    if (log && !*log) *log = (char *)gpuir__calloc(1, 1);   /* no program, no log: empty */
    return res;
}

/* ---- reading ptxas's report -------------------------------------------- */

/* The number written just before position `at` in `text` (skipping
   blanks), or -1 when there is none. */
static long gpuir__nvrtc_number_before(const char *text, const char *at) {
    const char *p = at;
    while (p > text && p[-1] == ' ') p--;
    const char *digits_end = p;
    while (p > text && p[-1] >= '0' && p[-1] <= '9') p--;
    if (p == digits_end) return -1;
    return strtol(p, NULL, 10);
}

/* The most bytes any kernel spills (the max over every "N bytes spill
   stores" and "M bytes spill loads" of ptxas -v in the log), or -1 when the
   log has no such line (ptxas was not verbose, or the target was PTX). */
static long gpuir__nvrtc_spilled_bytes(const char *log) {
    static const char *const keys[] = {"bytes spill stores", "bytes spill loads"};
    long most = -1;
    for (size_t k = 0; log && k < 2; k++)
        for (const char *p = strstr(log, keys[k]); p; p = strstr(p + 1, keys[k])) {
            long v = gpuir__nvrtc_number_before(log, p);
            if (v > most) most = v;
        }
    return most;
}

/* ---- the device table: what rt.exec runs a program through ---- */

typedef unsigned long long gpuir__dptr;   /* a device address */

/* A tiled tensor map's arguments (cuTensorMapEncodeTiled's, CUDA 12.0):
   a tensor of `rank` dims (innermost first) at `base`, each copy moving a
   `box` of it into shared memory, with element strides 1, no interleave,
   L2 promotion to 128 bytes, and out-of-bounds elements read as zeros. */
#define GPUIR__TMAP_MAX_RANK 5
#define GPUIR__TMAP_BYTES 128           /* sizeof(CUtensorMap); 64-byte aligned */
#define GPUIR__TMAP_F16 6               /* CU_TENSOR_MAP_DATA_TYPE_FLOAT16 */
#define GPUIR__TMAP_BF16 9              /* CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 */
#define GPUIR__TMAP_SWIZZLE_128B 3      /* CU_TENSOR_MAP_SWIZZLE_128B */
typedef struct gpuir__tmap_desc {
    unsigned dtype;                     /* CUtensorMapDataType: GPUIR__TMAP_F16 or _BF16 */
    unsigned rank;                      /* 1 .. GPUIR__TMAP_MAX_RANK */
    gpuir__dptr base;                   /* 16-byte aligned */
    unsigned long long dims[GPUIR__TMAP_MAX_RANK];        /* elements, innermost first */
    unsigned long long strides[GPUIR__TMAP_MAX_RANK - 1]; /* bytes from one index of dim i + 1 to the next */
    unsigned box[GPUIR__TMAP_MAX_RANK];                   /* elements a copy moves, each <= 256 */
    unsigned swizzle;                   /* CUtensorMapSwizzle: 0 none .. GPUIR__TMAP_SWIZZLE_128B */
} gpuir__tmap_desc;

/* A 128-byte tensor map, aligned as CUtensorMap is (the driver wants 64;
   an array of them, or one inside a struct, keeps that). */
#if defined(__GNUC__) || defined(__clang__)
#  define GPUIR__ALIGN64 __attribute__((aligned(64)))
#else
#  define GPUIR__ALIGN64
#endif
typedef struct GPUIR__ALIGN64 gpuir__tmap {
    unsigned long long words[GPUIR__TMAP_BYTES / 8];
} gpuir__tmap;

/* The portable encoding of a tensor map: what the emulator's table writes
   and the portable bulk tensor copy (gpuir_tma_load in
   gpuir__cg_tma_portable) reads, as 64-bit words: 0 the magic
   GPUIR__TMAP_MAGIC | rank << 32 | swizzle << 40 | element bytes << 48,
   1 the base address, 2-6 the dims, 7-10 the strides, 11-13 the box (two
   32-bit dims a word, the lower first). The rest is zero. */
#define GPUIR__TMAP_MAGIC 0x70616d74u   /* "tmap" */

/* Checks desc as cuTensorMapEncodeTiled does and writes the portable
   encoding: NULL, or what is wrong (map then untouched). */
static const char *gpuir__tmap_encode(gpuir__tmap *map, const gpuir__tmap_desc *d) {
    unsigned es = d->dtype == GPUIR__TMAP_F16 || d->dtype == GPUIR__TMAP_BF16 ? 2 : 0;
    if (!es) return "the data type is not f16 or bf16";
    if (d->rank < 1 || d->rank > GPUIR__TMAP_MAX_RANK) return "the rank is not 1 to 5";
    if (!d->base || d->base % 16) return "the global address is not 16-byte aligned";
    if (d->swizzle > GPUIR__TMAP_SWIZZLE_128B) return "unknown swizzle";
    for (unsigned i = 0; i < d->rank; i++) {
        if (d->dims[i] < 1 || d->dims[i] > (1ull << 32)) return "a dim is not 1 to 2^32";
        if (d->box[i] < 1 || d->box[i] > 256) return "a box dim is not 1 to 256";
        if (i && (d->strides[i - 1] % 16 || d->strides[i - 1] >= (1ull << 40)))
            return "a global stride is not a multiple of 16 below 2^40";
    }
    if (d->box[0] * es % 16) return "the box's inner dim is not a multiple of 16 bytes";
    if (d->swizzle && d->box[0] * es > (16u << d->swizzle)) return "the box's inner dim exceeds the swizzle span";
    memset(map, 0, sizeof *map);
    map->words[0] = GPUIR__TMAP_MAGIC | (unsigned long long)d->rank << 32 | (unsigned long long)d->swizzle << 40 |
                    (unsigned long long)es << 48;
    map->words[1] = d->base;
    for (unsigned i = 0; i < d->rank; i++) {
        map->words[2 + i] = d->dims[i];
        if (i) map->words[6 + i] = d->strides[i - 1];
        map->words[11 + i / 2] |= (unsigned long long)d->box[i] << (i % 2 * 32);
    }
    return NULL;
}

/* The device table: CUDA driver calls with an explicit `self`; each returns
   a CUresult (0: success). The emulator implements the same table.
   Streams and events are small numbers: stream 0 is synchronous (the
   legacy default stream: it waits for all other work, and a copy returns
   when done); streams 1..n and events 1..n are made by streams_reserve
   (the IR's stream s and event e are s + 1 and e + 1 here). On a stream
   >= 1, allocation, free, copies and launches are ordered on that stream
   only, and the host must wait (event_synchronize, synchronize) before it
   touches memory a pending copy reads or writes. */
typedef struct gpuir__drv {
    const char *name;       /* "cuda", "emu" */
    void *self;
    int (*enter)(void *self);            /* make the device current for this thread */
    int (*leave)(void *self);            /* and restore what was current */
    int (*streams_reserve)(void *self, unsigned streams, unsigned events);   /* at least these many */
    int (*mem_alloc)(void *self, gpuir__dptr *p, size_t bytes, unsigned stream);
    int (*mem_free)(void *self, gpuir__dptr p, unsigned stream);
    int (*copy_htod)(void *self, gpuir__dptr dst, const void *src, size_t bytes, unsigned stream);
    int (*copy_dtoh)(void *self, void *dst, gpuir__dptr src, size_t bytes, unsigned stream);
    int (*copy_dtod)(void *self, gpuir__dptr dst, gpuir__dptr src, size_t bytes, unsigned stream);
    int (*module_load)(void *self, void **module, const void *image, size_t size);
    int (*module_unload)(void *self, void *module);
    int (*function_get)(void *self, void **fn, void *module, const char *name);
    /* params[i] points at a device address or, after the kernel's buffers,
       at a long long size, then (the wgmma kernel) at 128-byte tensor maps;
       n_params of them (at most GPUIR__MAX_KERNEL_PARAMS) */
    int (*launch)(void *self, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem,
                  void **params, unsigned n_params, unsigned stream);
    int (*event_record)(void *self, unsigned event, unsigned stream);
    int (*stream_wait)(void *self, unsigned stream, unsigned event);   /* for the event's latest record */
    int (*event_synchronize)(void *self, unsigned event);              /* the host waits for it */
    int (*synchronize)(void *self);      /* the host waits for everything */
    /* The error's name and text; `detail` may add what the emulator knows. */
    void (*describe)(void *self, int code, const char **name, const char **text, const char **detail);
    /* Why the device context is lost (after an error CUDA reports as fatal
       to it: illegal address, launch failure, ...), "" while it is not;
       owned by self, shared by every program on that context. */
    char *lost;
    /* Graphs (desc.graphs). Pinned host memory, for the copies a graph
       makes. Between capture_begin and capture_end the table records the
       stream work it is given (copies, launches, event records and waits;
       stream 0 too) instead of doing it; allocations, frees and host waits
       are not allowed then. capture_begin gets the number of streams the
       work may use; capture_end always ends the capture and makes the
       recorded work one graph, launched whole after the work queued before
       it, and destroyed with graph_destroy. */
    int (*host_alloc)(void *self, void **p, size_t bytes);
    int (*host_free)(void *self, void *p);
    int (*capture_begin)(void *self, unsigned streams);
    int (*capture_end)(void *self, void **graph);
    int (*graph_launch)(void *self, void *graph);
    int (*graph_destroy)(void *self, void *graph);
    /* Encodes a tiled tensor map into *map (cuTensorMapEncodeTiled on
       CUDA; the emulator's own encoding, which its portable bulk tensor
       copy reads). Kernels take it by value (`__grid_constant__`). */
    int (*tensor_map_encode)(void *self, gpuir__tmap *map, const gpuir__tmap_desc *desc);
    /* Run arguments (gpuir_program_run_args). Pins the caller's host memory
       in place and unpins it (host_alloc pins new memory). A caller's
       stream: made and destroyed (CUDA: a non-blocking stream; emulator: a
       gpuir__xstream), the host waits for it; stream_bind sends the work
       of stream 0 to it (NULL: back to the table's own stream 0; `lane` is
       the table stream the emulator queues it on, reserved by the caller);
       stream_capturing says whether it is being captured into a graph. */
    int (*host_register)(void *self, void *p, size_t bytes);
    int (*host_unregister)(void *self, void *p);
    int (*stream_create)(void *self, void **stream);
    int (*stream_destroy)(void *self, void *stream);
    int (*stream_synchronize)(void *self, void *stream);
    int (*stream_bind)(void *self, void *stream, unsigned lane);
    int (*stream_capturing)(void *self, void *stream, int *capturing);
} gpuir__drv;

/* Errors after which CUDA's context is unusable (later calls fail too). */
static bool gpuir__cuda_error_is_fatal(int code) {
    return code == 700 || code == 702 || (code >= 714 && code <= 719);
}

#define GPUIR__LOST_SIZE 512      /* bytes of a drv's `lost` reason */

/* The kernel parameter bytes every CUDA device takes (more needs CUDA 12.1
   and Volta or newer). */
#define GPUIR__MAX_PARAM_BYTES 4096

/* A launch's parameters at most: its buffers and their dynamic dims. */
#define GPUIR__MAX_KERNEL_PARAMS (GPUIR_MAX_OPERANDS * (GPUIR_MAX_RANK + 1))

/* A global's device copy that stays across runs. */
typedef struct gpuir__resident {
    uint32_t global;        /* index + 1 in the module's globals */
    unsigned long long dev; /* its device memory */
    uint64_t uploaded;      /* the global's generation it holds */
    bool external;          /* the caller's device buffer (gpuir_program_bind_global_buffer) */
} gpuir__resident;

/* The limits a launch is checked against before it is made. */
typedef struct gpuir__limits {
    unsigned max_threads, max_block[3], max_grid[3], max_shared;
    uint64_t max_launch_threads;    /* threads in one launch (the emulator's work bound); 0: any */
} gpuir__limits;

struct gpuir_program {
    gpuir_ctx *ctx;
    gpuir_module *m;
    gpuir_program_desc desc;
    gpuir_backend backend;          /* what runs it: never AUTO */
    struct gpuir__drv drv;
    gpuir__limits limits;
    char *source;                   /* the module as the backend compiles it */
    bool wgmma;                     /* a kernel uses wgmma: sm_90a on an sm_90 device */
    gpuir__cg_kernel_info *kernels; /* stb_ds: one per kernel */
    void **functions;               /* stb_ds: their handles, in that order */
    void *module;                   /* the loaded module */
    struct gpuir__resident *resident;  /* stb_ds: device copies of globals, kept across runs */
    struct gpuir__graph *graphs;    /* stb_ds: desc.graphs: one per host function run so far */
    struct gpuir__slot *run_slots;  /* a run's buffers, one per module value (made on the first run);
                                       all zero between runs: a run clears the ones it set */
    size_t n_run_slots;
    uint32_t *launch_kernel;        /* op id - 1 -> index + 1 in kernels of the launch's kernel,
                                       0 until the op first runs (made with run_slots) */
    size_t n_launch_kernel;         /* the module's ops when it was made */
    char why_not_cuda[512];         /* AUTO: why CUDA was not used */
    gpuir_program_stats stats;
    struct gpuir__tmap_entry *tmaps; /* stb_ds: tensor maps encoded so far (gpuir__launch_tensor_maps) */
    uint64_t tmaps_encoded;         /* tests: encodings made through the table */
    unsigned n_streams, n_events;   /* what its host functions name (the async pass) */
    struct gpuir__fault *fault;     /* tests: the table wrapped to fail a call (ctx->fault) */
    bool owns_cuda;                 /* drv.self is this program's, not the context's */
    uint8_t *run_skip;              /* run arguments: op id - 1 -> this run skips it (a copy of
                                       a device-resident argument); cleared after each run */
    struct gpuir__argplan *argplans;  /* stb_ds: per host function, where arguments can stay */
    uint64_t args_sig;              /* the latest run's argument kinds, as reported */
};

typedef gpuir_result (*gpuir__compile_fn)(gpuir_program *p, void **image, size_t *size);

/* A program's compiled module, and where it came from (rt.cache): what
   gpuir__program_load loads, then stores only if it loaded. */
typedef struct gpuir__built {
    void *image;                    /* malloc'd */
    size_t size;
    char key[65];
    const char *ext;
    gpuir__compile_fn compile;      /* to build it again */
    bool cached;                    /* image came from the cache */
} gpuir__built;
static gpuir_result gpuir__cached_build(gpuir_program *p, const char *const *parts, size_t n, const char *ext,
                                        gpuir__compile_fn compile, gpuir__built *b);

/* ---- the CUDA device table over the loaded driver ---- */

#define GPUIR__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

/* A program's CUDA state: the driver, NVRTC (loaded only to compile), the
   device and its primary context. */
typedef struct gpuir__cudart {
    gpuir__cuda cu;
    gpuir__nvrtc nv;
    bool nv_loaded;
    gpuir__cuda_device dev;
    gpuir__CUcontext context;
    gpuir__CUstream *streams;       /* stb_ds: table stream s is streams[s - 1] */
    gpuir__CUevent *events;         /* stb_ds: table event e is events[e - 1] */
    char lost[GPUIR__LOST_SIZE];    /* why the context is lost, or "" */
    gpuir__CUstream origin;         /* graphs: captured on, and launched on (made on first use) */
    gpuir__CUevent fork;            /* graphs: ties the other streams to a capture */
    unsigned capturing;             /* while capturing: 1 + the streams the capture spans */
    gpuir__CUstream caller;         /* stream_bind: the caller's stream takes stream 0's work */
    pthread_t retainer;             /* retaining the primary context (gpuir__cudart_retain_start) */
    bool retaining;                 /*   its thread runs or has not been joined */
    bool retained;                  /*   the context is retained (released by close) */
    int retain_rc;                  /*   cuDevicePrimaryCtxRetain's result */
} gpuir__cudart;

static int gpuir__cudart_retain_wait(gpuir__cudart *C);
static int gpuir__cudart_enter(void *self) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    if (C->retaining || C->retain_rc) {          /* the context is not there yet, or never came */
        int rc = gpuir__cudart_retain_wait(C);
        if (rc) return rc;
    }
    return C->cu.cuCtxPushCurrent(C->context);
}
static int gpuir__cudart_leave(void *self) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    gpuir__CUcontext popped;
    return C->cu.cuCtxPopCurrent(&popped);
}
/* Streams are made blocking (they wait for the legacy default stream and
   it for them), so synchronous calls stay ordered with them. */
static int gpuir__cudart_streams_reserve(void *self, unsigned streams, unsigned events) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    while (stbds_arrlenu(C->streams) < streams) {
        gpuir__CUstream st;
        int rc = C->cu.cuStreamCreate(&st, GPUIR__CU_STREAM_DEFAULT);
        if (rc) return rc;
        stbds_arrput(C->streams, st);
    }
    while (stbds_arrlenu(C->events) < events) {
        gpuir__CUevent ev;
        int rc = C->cu.cuEventCreate(&ev, GPUIR__CU_EVENT_DISABLE_TIMING);
        if (rc) return rc;
        stbds_arrput(C->events, ev);
    }
    return 0;
}
/* Table stream s; stream 0 is the legacy stream, or the caller's stream
   while one is bound, or the origin of a capture while one is made (the
   legacy stream cannot be captured). */
static gpuir__CUstream gpuir__cudart_stream(const gpuir__cudart *C, unsigned s) {
    return s ? C->streams[s - 1] : C->caller ? C->caller : C->capturing ? C->origin : NULL;
}
/* Whether a copy on table stream s must be the stream-ordered call. */
static bool gpuir__cudart_async(const gpuir__cudart *C, unsigned s) { return s || C->capturing || C->caller; }
/* On a stream: stream-ordered (cuMemAllocAsync) where the device has
   memory pools; else cuMemAlloc, which may wait for the device. */
static int gpuir__cudart_alloc(void *self, gpuir__dptr *p, size_t bytes, unsigned s) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    if ((s || C->caller) && C->dev.memory_pools) return C->cu.cuMemAllocAsync(p, bytes, gpuir__cudart_stream(C, s));
    return C->cu.cuMemAlloc(p, bytes);
}
/* The pair of gpuir__cudart_alloc: on a stream, after that stream's work. */
static int gpuir__cudart_free(void *self, gpuir__dptr p, unsigned s) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    bool ordered = s || C->caller;
    if (ordered && C->dev.memory_pools) return C->cu.cuMemFreeAsync(p, gpuir__cudart_stream(C, s));
    int rc = ordered ? C->cu.cuStreamSynchronize(gpuir__cudart_stream(C, s)) : 0;
    return rc ? rc : C->cu.cuMemFree(p);
}
static int gpuir__cudart_htod(void *self, gpuir__dptr dst, const void *src, size_t n, unsigned s) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    return gpuir__cudart_async(C, s) ? C->cu.cuMemcpyHtoDAsync(dst, src, n, gpuir__cudart_stream(C, s))
                                     : C->cu.cuMemcpyHtoD(dst, src, n);
}
static int gpuir__cudart_dtoh(void *self, void *dst, gpuir__dptr src, size_t n, unsigned s) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    return gpuir__cudart_async(C, s) ? C->cu.cuMemcpyDtoHAsync(dst, src, n, gpuir__cudart_stream(C, s))
                                     : C->cu.cuMemcpyDtoH(dst, src, n);
}
static int gpuir__cudart_dtod(void *self, gpuir__dptr dst, gpuir__dptr src, size_t n, unsigned s) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    return gpuir__cudart_async(C, s) ? C->cu.cuMemcpyDtoDAsync(dst, src, n, gpuir__cudart_stream(C, s))
                                     : C->cu.cuMemcpyDtoD(dst, src, n);
}
static int gpuir__cudart_record(void *self, unsigned e, unsigned s) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    return C->cu.cuEventRecord(C->events[e - 1], gpuir__cudart_stream(C, s));
}
static int gpuir__cudart_wait(void *self, unsigned s, unsigned e) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    return C->cu.cuStreamWaitEvent(gpuir__cudart_stream(C, s), C->events[e - 1], 0);
}
static int gpuir__cudart_event_sync(void *self, unsigned e) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    return C->cu.cuEventSynchronize(C->events[e - 1]);
}
static int gpuir__cudart_load(void *self, void **module, const void *image, size_t size) {
    (void)size;
    return ((gpuir__cudart *)self)->cu.cuModuleLoadData((gpuir__CUmodule *)module, image);
}
static int gpuir__cudart_unload(void *self, void *module) {
    return ((gpuir__cudart *)self)->cu.cuModuleUnload((gpuir__CUmodule)module);
}
static int gpuir__cudart_function(void *self, void **fn, void *module, const char *name) {
    return ((gpuir__cudart *)self)->cu.cuModuleGetFunction((gpuir__CUfunction *)fn, (gpuir__CUmodule)module, name);
}

/* Launches on stream s (0: the default stream); dynamic shared memory past
   48 KiB raises the function's limit first. */
static int gpuir__cudart_launch(void *self, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem,
                                void **params, unsigned n_params, unsigned s) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    (void)n_params;
    if (smem > 48u * 1024u) {
        int rc = C->cu.cuFuncSetAttribute((gpuir__CUfunction)fn, GPUIR__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          (int)smem);
        if (rc) return rc;
    }
    return C->cu.cuLaunchKernel((gpuir__CUfunction)fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
                                gpuir__cudart_stream(C, s), params, NULL);
}
static int gpuir__cudart_sync(void *self) { return ((gpuir__cudart *)self)->cu.cuCtxSynchronize(); }

/* cuTensorMapEncodeTiled: element strides 1, no interleave, L2 promotion
   to 128 bytes (2), zeros out of bounds (0). A driver without it (before
   CUDA 12.0) answers CUDA_ERROR_NOT_SUPPORTED (801). Below sm_90 kernels
   copy tiles with the portable gpuir_ptma_load, which reads gpuir's own
   encoding (gpuir__tmap_encode). */
static int gpuir__cudart_tensor_map(void *self, gpuir__tmap *map, const gpuir__tmap_desc *d) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    if (C->dev.sm < 90) return gpuir__tmap_encode(map, d) ? 1 : 0;   /* the kernel's portable copy reads it */
    if (!C->cu.cuTensorMapEncodeTiled) return 801;
    const unsigned ones[GPUIR__TMAP_MAX_RANK] = {1, 1, 1, 1, 1};
    return C->cu.cuTensorMapEncodeTiled(map, d->dtype, d->rank, (void *)(uintptr_t)d->base, d->dims, d->strides,
                                        d->box, ones, 0, d->swizzle, 2, 0);
}

/* ---- graphs: stream capture of a run's device work ---- */

/* Portable pinned memory (CU_MEMHOSTALLOC_PORTABLE): usable from every
   context, as registered memory is (CU_MEMHOSTREGISTER_PORTABLE). */
static int gpuir__cudart_host_alloc(void *self, void **p, size_t bytes) {
    return ((gpuir__cudart *)self)->cu.cuMemHostAlloc(p, bytes ? bytes : 1, 1);
}
static int gpuir__cudart_host_register(void *self, void *p, size_t bytes) {
    return ((gpuir__cudart *)self)->cu.cuMemHostRegister(p, bytes, 1);
}
static int gpuir__cudart_host_unregister(void *self, void *p) {
    return ((gpuir__cudart *)self)->cu.cuMemHostUnregister(p);
}

/* ---- the caller's streams (gpuir_program_run_args) ---- */

/* Non-blocking: it does not wait for the legacy stream, nor it for it. */
static int gpuir__cudart_stream_create(void *self, void **stream) {
    return ((gpuir__cudart *)self)->cu.cuStreamCreate((gpuir__CUstream *)stream, GPUIR__CU_STREAM_NON_BLOCKING);
}
static int gpuir__cudart_stream_destroy(void *self, void *stream) {
    return ((gpuir__cudart *)self)->cu.cuStreamDestroy((gpuir__CUstream)stream);
}
static int gpuir__cudart_stream_sync(void *self, void *stream) {
    return ((gpuir__cudart *)self)->cu.cuStreamSynchronize((gpuir__CUstream)stream);
}
static int gpuir__cudart_stream_bind(void *self, void *stream, unsigned lane) {
    (void)lane;                          /* CUDA orders the caller's stream itself */
    ((gpuir__cudart *)self)->caller = (gpuir__CUstream)stream;
    return 0;
}
/* CU_STREAM_CAPTURE_STATUS_ACTIVE (1), or INVALIDATED (2): a capture whose
   next call fails; both count as capturing. */
static int gpuir__cudart_stream_capturing(void *self, void *stream, int *capturing) {
    int status = 0;
    int rc = ((gpuir__cudart *)self)->cu.cuStreamIsCapturing((gpuir__CUstream)stream, &status);
    *capturing = !rc && status != 0;
    return rc;
}
static int gpuir__cudart_host_free(void *self, void *p) { return ((gpuir__cudart *)self)->cu.cuMemFreeHost(p); }

/* Starts capturing on the origin stream (thread-local mode: another
   thread's CUDA calls are not disturbed) and forks the first `streams`
   streams from it, so their work joins the capture. */
static int gpuir__cudart_capture_begin(void *self, unsigned streams) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    int rc = C->origin ? 0 : C->cu.cuStreamCreate(&C->origin, GPUIR__CU_STREAM_NON_BLOCKING);
    if (!rc && !C->fork) rc = C->cu.cuEventCreate(&C->fork, GPUIR__CU_EVENT_DISABLE_TIMING);
    if (!rc && streams > stbds_arrlenu(C->streams)) rc = 1;            /* CUDA_ERROR_INVALID_VALUE */
    if (!rc) rc = C->cu.cuStreamBeginCapture(C->origin, GPUIR__CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (rc) return rc;
    C->capturing = 1 + streams;
    rc = C->cu.cuEventRecord(C->fork, C->origin);
    for (unsigned i = 0; i < streams && !rc; i++) rc = C->cu.cuStreamWaitEvent(C->streams[i], C->fork, 0);
    return rc;
}

/* Joins the forked streams back into the origin, ends the capture (even
   after a failure: the streams must leave capture mode) and instantiates
   the graph. */
static int gpuir__cudart_capture_end(void *self, void **graph) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    *graph = NULL;
    if (!C->capturing) return 1;                                           /* CUDA_ERROR_INVALID_VALUE */
    int rc = 0;
    for (unsigned i = 0; i + 1 < C->capturing && !rc; i++) {
        rc = C->cu.cuEventRecord(C->fork, C->streams[i]);
        if (!rc) rc = C->cu.cuStreamWaitEvent(C->origin, C->fork, 0);
    }
    gpuir__CUgraph g = NULL;
    int end = C->cu.cuStreamEndCapture(C->origin, &g);
    C->capturing = 0;
    gpuir__CUgraphExec exec = NULL;
    if (!rc) rc = end;
    if (!rc) rc = C->cu.cuGraphInstantiateWithFlags(&exec, g, 0);
    if (g) C->cu.cuGraphDestroy(g);
    *graph = rc ? NULL : (void *)exec;
    return rc;
}
static int gpuir__cudart_graph_launch(void *self, void *graph) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    return C->cu.cuGraphLaunch((gpuir__CUgraphExec)graph, C->origin);
}
static int gpuir__cudart_graph_destroy(void *self, void *graph) {
    return ((gpuir__cudart *)self)->cu.cuGraphExecDestroy((gpuir__CUgraphExec)graph);
}

/* Fills in the name and text of a CUresult the caller could not name from
   gpuir's table (both backends use it). */
static void gpuir__cuda_error_lookup(int code, const char **name, const char **text) {
    for (size_t i = 0; i < sizeof gpuir__cuda_error_table / sizeof gpuir__cuda_error_table[0]; i++)
        if (gpuir__cuda_error_table[i].code == code) {
            if (!*name) *name = gpuir__cuda_error_table[i].name;
            if (!*text) *text = gpuir__cuda_error_table[i].text;
        }
    if (!*name) *name = "CUDA_ERROR_UNKNOWN";
    if (!*text) *text = "unknown error";
}

static void gpuir__cudart_describe(void *self, int code, const char **name, const char **text, const char **detail) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    *name = *text = NULL;
    if (C->cu.cuGetErrorName && C->cu.cuGetErrorName(code, name) != 0) *name = NULL;
    if (C->cu.cuGetErrorString && C->cu.cuGetErrorString(code, text) != 0) *text = NULL;
    gpuir__cuda_error_lookup(code, name, text);
    *detail = "";
}

/* Releases what gpuir__cudart_open made. */
static void gpuir__cudart_close(gpuir__cudart *C) {
    if (!C) return;
    gpuir__cudart_retain_wait(C);                /* a failed make's context still being created */
    bool made = stbds_arrlenu(C->streams) || stbds_arrlenu(C->events) || C->origin || C->fork;
    if (made && C->cu.cuCtxPushCurrent(C->context) == 0) {
        gpuir__CUcontext popped;
        for (size_t i = 0; i < stbds_arrlenu(C->streams); i++) C->cu.cuStreamDestroy(C->streams[i]);
        for (size_t i = 0; i < stbds_arrlenu(C->events); i++) C->cu.cuEventDestroy(C->events[i]);
        if (C->origin) C->cu.cuStreamDestroy(C->origin);
        if (C->fork) C->cu.cuEventDestroy(C->fork);
        C->cu.cuCtxPopCurrent(&popped);
    }
    stbds_arrfree(C->streams);
    stbds_arrfree(C->events);
    if (C->retained) C->cu.cuDevicePrimaryCtxRelease(C->dev.device);
    if (C->nv_loaded) gpuir__nvrtc_unload(&C->nv);
    gpuir__cuda_unload(&C->cu);
    GPUIR_FREE(C);
}

/* ---- the primary context, created while the kernels compile ----
   cuDevicePrimaryCtxRetain creates the device's context on its first use
   in a process (the "device start-up": 213-528 ms on an H100 machine),
   and nothing needs the context before the compiled module is loaded. So
   gpuir__cudart_open_early starts it on a thread of its own and returns;
   the passes, code generation and NVRTC (~100-450 ms) run meanwhile on the
   caller's thread, and the first use of the context (gpuir__cudart_enter,
   gpuir__cudart_ready) waits for it. No state outside the gpuir__cudart:
   its close joins the thread, and releases the context only if it was
   retained, so a make that fails on either side leaks nothing. */

static void *gpuir__cudart_retain_main(void *self) {
    gpuir__cudart *C = (gpuir__cudart *)self;
    C->retain_rc = C->cu.cuDevicePrimaryCtxRetain(&C->context, C->dev.device);
    C->retained = C->retain_rc == 0;
    return NULL;
}

/* Starts retaining the context: on a thread, or here when none starts. */
static void gpuir__cudart_retain_start(gpuir__cudart *C) {
    C->retaining = pthread_create(&C->retainer, NULL, gpuir__cudart_retain_main, C) == 0;
    if (!C->retaining) gpuir__cudart_retain_main(C);
}

/* Waits for the retain (if still running): its result, 0 once retained. */
static int gpuir__cudart_retain_wait(gpuir__cudart *C) {
    if (C->retaining) {
        pthread_join(C->retainer, NULL);
        C->retaining = false;
    }
    return C->retain_rc;
}

/* The context is there: GPUIR_OK, or the retain's error, named. */
static gpuir_result gpuir__cudart_ready(gpuir_ctx *ctx, gpuir__cudart *C) {
    return gpuir__cuda_check(ctx, &C->cu, gpuir__cudart_retain_wait(C), "cuDevicePrimaryCtxRetain",
                             "opening the device's context");
}

/* Loads the driver, describes device `ordinal` and retains its primary
   context, there and then (`early` false) or on a thread while the caller
   goes on (gpuir__cudart_ready waits); NULL (the context holds why) when
   CUDA is unavailable. */
static gpuir__cudart *gpuir__cudart_open_early(gpuir_ctx *ctx, int ordinal, bool early) {
    gpuir__cudart *C = (gpuir__cudart *)gpuir__calloc(1, sizeof *C);
    if (!C) { gpuir__oom(ctx, "the CUDA runtime"); return NULL; }
    gpuir_result r = gpuir__cuda_load(ctx, &C->cu);
    if (!r) r = gpuir__cuda_device_info(ctx, &C->cu, ordinal, &C->dev);
    if (!r) gpuir__cudart_retain_start(C);
    if (!r && !early) r = gpuir__cudart_ready(ctx, C);
    if (r) {
        gpuir__cudart_retain_wait(C);
        if (C->retained) C->cu.cuDevicePrimaryCtxRelease(C->dev.device);
        if (C->cu.lib) gpuir__cuda_unload(&C->cu);
        GPUIR_FREE(C);
        return NULL;
    }
    return C;
}

/* Loads the driver, describes device `ordinal` and retains its primary
   context; NULL (the context holds why) when CUDA is unavailable. */
static gpuir__cudart *gpuir__cudart_open(gpuir_ctx *ctx, int ordinal) {
    return gpuir__cudart_open_early(ctx, ordinal, false);
}

/* The device table over a CUDA state. */
static gpuir__drv gpuir__cudart_table(gpuir__cudart *C) {
    gpuir__drv d = {"cuda", C, gpuir__cudart_enter, gpuir__cudart_leave, gpuir__cudart_streams_reserve,
                    gpuir__cudart_alloc, gpuir__cudart_free, gpuir__cudart_htod, gpuir__cudart_dtoh,
                    gpuir__cudart_dtod, gpuir__cudart_load, gpuir__cudart_unload, gpuir__cudart_function,
                    gpuir__cudart_launch, gpuir__cudart_record, gpuir__cudart_wait, gpuir__cudart_event_sync,
                    gpuir__cudart_sync, gpuir__cudart_describe, C->lost,
                    gpuir__cudart_host_alloc, gpuir__cudart_host_free, gpuir__cudart_capture_begin,
                    gpuir__cudart_capture_end, gpuir__cudart_graph_launch, gpuir__cudart_graph_destroy,
                    gpuir__cudart_tensor_map, gpuir__cudart_host_register, gpuir__cudart_host_unregister,
                    gpuir__cudart_stream_create, gpuir__cudart_stream_destroy, gpuir__cudart_stream_sync,
                    gpuir__cudart_stream_bind, gpuir__cudart_stream_capturing};
    return d;
}

/* The CUDA state of a program: the context's, made by its first CUDA
   program and kept until the context goes (the driver's start-up and the
   primary context cost about 100 ms, too much to pay per program), or its
   own for another device. */
static gpuir_result gpuir__cuda_backend_open(gpuir_program *p) {
    gpuir_ctx *ctx = p->ctx;
    gpuir__cudart *C = ctx->cuda && ctx->cuda->dev.ordinal == p->desc.device ? ctx->cuda : NULL;
    if (C && C->lost[0])
        return gpuir__fail(ctx, GPUIR_ERR_CUDA, "cuda: the device context is lost (make a new gpuir context; "
                           "for CUDA, a new process) after: %s", C->lost);
    if (!C) {
        /* Asked for CUDA: the context is created while the kernels compile
           (gpuir__cuda_build waits for it). AUTO creates it now, so that a
           device whose context cannot be made still falls back to the
           emulator. */
        C = gpuir__cudart_open_early(ctx, p->desc.device, p->desc.backend == GPUIR_BACKEND_CUDA);
        if (!C) return ctx->result;
        if (!ctx->cuda) ctx->cuda = C;
        else p->owns_cuda = true;
    }
    p->drv = gpuir__cudart_table(C);
    gpuir__limits lim = {(unsigned)C->dev.max_threads_per_block,
                         {(unsigned)C->dev.max_block_dim[0], (unsigned)C->dev.max_block_dim[1], (unsigned)C->dev.max_block_dim[2]},
                         {(unsigned)C->dev.max_grid_dim[0], (unsigned)C->dev.max_grid_dim[1], (unsigned)C->dev.max_grid_dim[2]},
                         (unsigned)C->dev.max_shared_per_block_optin, 0};
    p->limits = lim;
    return GPUIR_OK;
}

static void gpuir__cuda_backend_close(gpuir_program *p) {
    if (p->owns_cuda) gpuir__cudart_close((gpuir__cudart *)p->drv.self);
    p->drv.self = NULL;
}

/* Whether a module compiled for sm_<sm> (not PTX) takes the arch-specific
   target: sm_90a when a kernel uses wgmma (gpuir__module_uses_wgmma). */
static bool gpuir__nvrtc_arch_specific(bool wgmma, int sm, bool as_ptx) {
    return wgmma && sm == 90 && !as_ptx;
}

/* NVRTC for the device's exact architecture (PTX when the device is newer
   than NVRTC knows; sm_90a for wgmma); cubin bytes, or PTX text with its NUL. */
static gpuir_result gpuir__cuda_compile(gpuir_program *p, void **image, size_t *size) {
    gpuir__cudart *C = (gpuir__cudart *)p->drv.self;
    bool as_ptx = false;
    int sm = gpuir__nvrtc_pick_arch(&C->nv, C->dev.sm, &as_ptx);
    if (!sm)
        return gpuir__fail(p->ctx, GPUIR_ERR_COMPILE, "NVRTC %d.%d cannot compile for sm_%d (%s)", C->nv.major,
                           C->nv.minor, C->dev.sm, C->dev.name);
    char *img = NULL;
    gpuir_result r = gpuir__nvrtc_compile(p->ctx, &C->nv, p->source, "gpuir_kernels.cu", sm,
                                          gpuir__nvrtc_arch_specific(p->wgmma, sm, as_ptx), as_ptx, NULL, 0,
                                          &img, size, NULL);
    *image = img;
    return r;
}

static gpuir_result gpuir__cuda_build(gpuir_program *p, gpuir__built *b) {
    gpuir__cudart *C = (gpuir__cudart *)p->drv.self;
    if (!C->nv_loaded) {
        gpuir_result r = gpuir__nvrtc_load(p->ctx, &C->nv);
        if (r) return r;
        C->nv_loaded = true;
    }
    char arch[32], nvrtc[32];
    bool as_ptx = false;
    int sm = gpuir__nvrtc_pick_arch(&C->nv, C->dev.sm, &as_ptx);
    snprintf(arch, sizeof arch, "%s_%d%s", as_ptx ? "compute" : "sm", sm,
             gpuir__nvrtc_arch_specific(p->wgmma, sm, as_ptx) ? "a" : "");
    snprintf(nvrtc, sizeof nvrtc, "nvrtc %d.%d", C->nv.major, C->nv.minor);
    const char *parts[5] = {"cuda", p->source, arch, nvrtc, GPUIR_VERSION_STRING};
    gpuir_result r = gpuir__cached_build(p, parts, 5, as_ptx ? "ptx" : "cubin", gpuir__cuda_compile, b);
    double t0 = gpuir__now_ms();
    if (!r) r = gpuir__cudart_ready(p->ctx, C);     /* the context, created meanwhile (open_early) */
    p->stats.open_ms += gpuir__now_ms() - t0;
    if (r) { GPUIR_FREE(b->image); b->image = NULL; }
    return r;
}



/* Whether a CUDA device can be used: the driver loads, initializes and sees
   a device. `why` (if not NULL) gets the reason when not; the context's
   error is left as it was. */
GPUIRDEF bool gpuir_cuda_available(gpuir_ctx *ctx, char *why, size_t size) {
    if (why && size) why[0] = '\0';
    if (!ctx) {
        if (why && size) snprintf(why, size, "%s", gpuir_ctx_error(ctx));
        return false;
    }
    if (ctx->result != GPUIR_OK) {
        if (why && size) snprintf(why, size, "the context holds an error: %s", gpuir_ctx_error(ctx));
        return false;
    }
    gpuir__cuda cu;
    gpuir__cuda_device dev;
    gpuir_result r = gpuir__cuda_load(ctx, &cu);
    if (!r) r = gpuir__cuda_device_info(ctx, &cu, 0, &dev);
    if (r && why && size) snprintf(why, size, "%s", gpuir_ctx_error(ctx));
    gpuir__cuda_unload(&cu);
    if (r) gpuir_ctx_clear_error(ctx);
    return r == GPUIR_OK;
}

/* The CUDA C of a lowered module through NVRTC for sm_<sm>, without a GPU:
   the largest spill of any kernel and, if asked, the PTX. */
GPUIRDEF gpuir_result gpuir_module_compile_cuda(gpuir_module *m, int sm, long *spilled_bytes, char **ptx) {
    if (spilled_bytes) *spilled_bytes = -1;
    if (ptx) *ptx = NULL;
    if (!m) return GPUIR_ERR_INVALID_ARGUMENT;  /* a failed make: its context has the error */
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    gpuir__cg_kernel_info *infos = NULL;
    char *source = gpuir__cg_module(m, &gpuir__cg_cuda, &infos);
    stbds_arrfree(infos);
    if (!source) return ctx->result;
    gpuir__nvrtc nv;
    memset(&nv, 0, sizeof nv);
    gpuir_result r = gpuir__nvrtc_load(ctx, &nv);
    char *image = NULL, *log = NULL;
    size_t size = 0;
    const char *verbose = GPUIR__NVRTC_OPT_PTXAS_VERBOSE;
    bool specific = gpuir__nvrtc_arch_specific(gpuir__module_uses_wgmma(m), sm, false);
    if (!r) r = gpuir__nvrtc_compile(ctx, &nv, source, "gpuir_kernels.cu", sm, specific, false, &verbose, 1, &image,
                                     &size, &log);
    if (!r && spilled_bytes) *spilled_bytes = log ? gpuir__nvrtc_spilled_bytes(log) : -1;
    GPUIR_FREE(image);
    GPUIR_FREE(log);
    image = NULL;
    if (!r && ptx)
        r = gpuir__nvrtc_compile(ctx, &nv, source, "gpuir_kernels.cu", sm, specific, true, NULL, 0, ptx, &size, NULL);
    if (nv.lib) gpuir__nvrtc_unload(&nv);
    GPUIR_FREE(source);
    return r;
}

/* ====================================================================== */
// >>rt.cache
// The compiled-kernel cache: a map in memory, backed by a directory of files.
// Reads: the environment (GPUIR_CACHE_DIR, GPUIR_CACHE_DISABLE, XDG_CACHE_HOME,
// HOME) once, at make. Writes: files in the cache directory; the context's
// error slot only when memory runs out or an argument is invalid.
//
// KEYS are SHA-256 (implemented here) over length-prefixed parts: source,
// options, arch, compiler version, gpuir version, backend. The caller builds
// them with gpuir__cache_key; a key is 64 lowercase hex digits.
//
// ON DISK an entry is <dir>/<key>.<ext>: a 152-byte header, then the payload.
//     0  magic "GPUIRC1\0"           8 bytes
//     8  format version (2)          u32 little-endian
//    12  header size (152)           u32 little-endian
//    16  payload size                u64 little-endian
//    24  SHA-256 of the payload      32 bytes
//    56  the key, echoed             64 hex digits
//   120  HMAC-SHA256 tag             32 bytes (below)
//   152  payload
// Every header byte is checked on load, and the payload's digest too; an
// entry that fails (truncated, corrupted, other version, foreign file) is a
// miss, is counted in `corrupt`, and is deleted so the next put replaces it.
// Writes are atomic: a private temp file (O_EXCL, 0600) in the same
// directory, fsync, rename. A digest only protects against torn writes and
// bit rot, not against someone who can write the directory; that is why the
// directory must be ours (owner = euid, not group/world writable, not a
// symlink). It is checked at make and again before every disk access, and
// when it does not pass the disk cache is off, with the reason in
// gpuir__cache_disk_status. Disk problems never fail a compile.
//
// AUTHENTICITY. An emulator entry is a shared object gpuir dlopens, so an
// entry must have been written by gpuir, not merely be well formed: the tag
// is an HMAC-SHA256 of (key, extension, payload) under a 32-byte secret
// that the directory keeps in <dir>/cache.key (random, 0600, made once,
// atomically, by the first cache to need it). An entry copied in from
// another directory or machine, or planted with a recomputed digest by a
// writer who cannot read the secret, fails the tag and is deleted like a
// corrupt one. Trust model (docs/cache.md): the directory, its secret and
// so its entries are exactly as trusted as this user account; a copy of a
// whole directory (secret included) is trusted like its author. Bundles
// (gpuir_ctx_cache_import) carry only CUDA modules, never host code.
//
// POSIX.1-2008: open/openat with O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC;
// fstatat, unlinkat, renameat, linkat, mkdir, fsync, getpid, geteuid,
// clock_gettime; /dev/urandom for the secret.


/* ---- SHA-256 (FIPS 180-4) --------------------------------------------- */

typedef struct gpuir__cache_sha256 {
    uint32_t h[8];
    uint64_t bytes;            /* total bytes hashed so far */
    unsigned char buf[64];     /* a partial block */
    size_t n;                  /* bytes in buf */
    bool ni;                   /* whole blocks through the CPU's SHA instructions */
} gpuir__cache_sha256;

static const uint32_t gpuir__cache_sha256_k[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

/* Rotates a 32-bit word right by n (0 < n < 32). */
static uint32_t gpuir__cache_rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32u - n)); }

/* Reads a big-endian u32. */
static uint32_t gpuir__cache_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Compresses one 64-byte block into the state h. */
static void gpuir__cache_sha256_block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++) w[i] = gpuir__cache_be32(p + 4 * i);
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = gpuir__cache_rotr(w[i - 15], 7) ^ gpuir__cache_rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = gpuir__cache_rotr(w[i - 2], 17) ^ gpuir__cache_rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    /* The working variables a..h in locals, shifted by assignment (not a
       memmove of an array): twice the speed, and a warm cache hit hashes
       its whole entry (gpuir__cache_load_fd). */
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (gpuir__cache_rotr(e, 6) ^ gpuir__cache_rotr(e, 11) ^ gpuir__cache_rotr(e, 25))
                    + ((e & f) ^ (~e & g)) + gpuir__cache_sha256_k[i] + w[i];
        uint32_t t2 = (gpuir__cache_rotr(a, 2) ^ gpuir__cache_rotr(a, 13) ^ gpuir__cache_rotr(a, 22))
                    + ((a & b) ^ (a & c) ^ (b & c));
        hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

/* x86-64 SHA extensions (Intel since Goldmont and Ice Lake, AMD since Zen):
   about 8x the portable rounds, for the hashes of a warm cache hit (the
   key over the source, the entry's checksum). Asked of the CPU (cpuid) at
   each hash's start, so no state outside it; GPUIR_NO_SHA_NI builds
   without. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GPUIR_NO_SHA_NI)
#define GPUIR__SHA_NI 1
static bool gpuir__cache_cpu_has_sha(void) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    bool sha = (b >> 29) & 1u;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    return sha && (c >> 19) & 1u && (c >> 9) & 1u;        /* and SSE4.1, SSSE3 */
}

/* `count` whole blocks into h, with the SHA-NI round instructions (the
   state kept as ABEF/CDGH, 4 rounds of the schedule per step). */
__attribute__((target("sha,sse4.1,ssse3")))
static void gpuir__cache_sha256_blocks_ni(uint32_t h[8], const unsigned char *p, size_t count) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&h[0]), 0xB1);   /* CDAB */
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(const void *)&h[4]), 0x1B);  /* EFGH */
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);                                         /* ABEF */
    s1 = _mm_blend_epi16(s1, t, 0xF0);                                               /* CDGH */
    for (; count > 0; count--, p += 64) {
        __m128i abef = s0, cdgh = s1, w[4];
        for (int i = 0; i < 16; i++) {          /* w[i & 3]: words 4i..4i+3 of the schedule */
            __m128i x;
            if (i < 4) x = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)), swap);
            else {
                x = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
                x = _mm_add_epi32(x, _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
                x = _mm_sha256msg2_epu32(x, w[(i + 3) & 3]);
            }
            w[i & 3] = x;
            __m128i m = _mm_add_epi32(x, _mm_loadu_si128((const __m128i *)(const void *)&gpuir__cache_sha256_k[4 * i]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, m);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0E));
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    t = _mm_shuffle_epi32(s0, 0x1B);                                                 /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);                                                /* DCHG */
    _mm_storeu_si128((__m128i *)(void *)&h[0], _mm_blend_epi16(t, s1, 0xF0));       /* DCBA */
    _mm_storeu_si128((__m128i *)(void *)&h[4], _mm_alignr_epi8(s1, t, 8));          /* HGFE */
}
#endif

/* `count` whole blocks into s's state. */
static void gpuir__cache_sha256_blocks(gpuir__cache_sha256 *s, const unsigned char *p, size_t count) {
#ifdef GPUIR__SHA_NI
    if (s->ni) { gpuir__cache_sha256_blocks_ni(s->h, p, count); return; }
#endif
    for (; count > 0; count--, p += 64) gpuir__cache_sha256_block(s->h, p);
}

/* Starts a hash. */
static void gpuir__cache_sha256_init(gpuir__cache_sha256 *s) {
    static const uint32_t iv[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(s->h, iv, sizeof iv);
    s->bytes = 0;
    s->n = 0;
#ifdef GPUIR__SHA_NI
    s->ni = gpuir__cache_cpu_has_sha();
#else
    s->ni = false;
#endif
}

/* Hashes n more bytes. */
static void gpuir__cache_sha256_update(gpuir__cache_sha256 *s, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    s->bytes += n;
    while (n > 0) {
        if (s->n == 0 && n >= 64) {             /* whole blocks straight from the input */
            gpuir__cache_sha256_blocks(s, p, n / 64);
            p += n / 64 * 64, n %= 64;
            continue;
        }
        size_t take = 64 - s->n < n ? 64 - s->n : n;
        memcpy(s->buf + s->n, p, take);
        s->n += take, p += take, n -= take;
        if (s->n == 64) { gpuir__cache_sha256_blocks(s, s->buf, 1); s->n = 0; }
    }
}

/* Pads, finishes and writes the 32-byte digest. */
static void gpuir__cache_sha256_final(gpuir__cache_sha256 *s, unsigned char out[32]) {
    uint64_t bits = s->bytes * 8u;
    s->buf[s->n++] = 0x80;
    if (s->n > 56) {
        memset(s->buf + s->n, 0, 64 - s->n);
        gpuir__cache_sha256_block(s->h, s->buf);
        s->n = 0;
    }
    memset(s->buf + s->n, 0, 56 - s->n);
    for (int i = 0; i < 8; i++) s->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    gpuir__cache_sha256_block(s->h, s->buf);
    for (int i = 0; i < 32; i++) out[i] = (unsigned char)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}

/* The digest of one buffer. */
static void gpuir__cache_sha256_buf(const void *data, size_t n, unsigned char out[32]) {
    gpuir__cache_sha256 s;
    gpuir__cache_sha256_init(&s);
    gpuir__cache_sha256_update(&s, data, n);
    gpuir__cache_sha256_final(&s, out);
}

/* HMAC-SHA256 (RFC 2104) under a 32-byte secret of the n buffers parts[i]
   of sizes[i], hashed one after the other. */
static void gpuir__cache_hmac(const unsigned char secret[32], const void *const *parts, const size_t *sizes,
                              size_t n, unsigned char out[32]) {
    unsigned char pad[64], inner[32];
    gpuir__cache_sha256 s;
    memset(pad, 0x36, sizeof pad);
    for (int i = 0; i < 32; i++) pad[i] ^= secret[i];
    gpuir__cache_sha256_init(&s);
    gpuir__cache_sha256_update(&s, pad, sizeof pad);
    for (size_t i = 0; i < n; i++) gpuir__cache_sha256_update(&s, parts[i], sizes[i]);
    gpuir__cache_sha256_final(&s, inner);
    memset(pad, 0x5c, sizeof pad);
    for (int i = 0; i < 32; i++) pad[i] ^= secret[i];
    gpuir__cache_sha256_init(&s);
    gpuir__cache_sha256_update(&s, pad, sizeof pad);
    gpuir__cache_sha256_update(&s, inner, sizeof inner);
    gpuir__cache_sha256_final(&s, out);
}

/* Writes 32 bytes as 64 lowercase hex digits and a terminator. */
static void gpuir__cache_hex(const unsigned char d[32], char hex[65]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
}

/* Writes v as 8 little-endian bytes. */
static void gpuir__cache_put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Reads 8 little-endian bytes. */
static uint64_t gpuir__cache_get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Writes v as 4 little-endian bytes. */
static void gpuir__cache_put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Reads 4 little-endian bytes. */
static uint32_t gpuir__cache_get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The cache key of n strings (source, options, arch, compiler version, gpuir
   version, backend, in an order the caller keeps fixed): SHA-256 over a
   domain tag, the count, then each part as its u64 length and its bytes, so
   ("ab","c") and ("a","bc") differ. A NULL part hashes like "". */
static void gpuir__cache_key(const char *const *parts, size_t n, char hex[65]) {
    static const char tag[] = "gpuir.cache.key.v1";
    unsigned char len[8], digest[32];
    gpuir__cache_sha256 s;
    gpuir__cache_sha256_init(&s);
    gpuir__cache_sha256_update(&s, tag, sizeof tag);      /* with its NUL */
    gpuir__cache_put_u64(len, (uint64_t)n);
    gpuir__cache_sha256_update(&s, len, 8);
    for (size_t i = 0; i < n; i++) {
        size_t m = parts[i] ? strlen(parts[i]) : 0;
        gpuir__cache_put_u64(len, (uint64_t)m);
        gpuir__cache_sha256_update(&s, len, 8);
        if (m) gpuir__cache_sha256_update(&s, parts[i], m);
    }
    gpuir__cache_sha256_final(&s, digest);
    gpuir__cache_hex(digest, hex);
}

/* ---- the cache object --------------------------------------------------- */

#define GPUIR__CACHE_MAGIC "GPUIRC1"          /* 7 chars + NUL = 8 bytes */
#define GPUIR__CACHE_VERSION 3u             /* 3: the tag covers the payload's digest */
#define GPUIR__CACHE_HEADER 152u
#define GPUIR__CACHE_SECRET "cache.key"       /* the directory's HMAC secret */
#define GPUIR__CACHE_EXT_MAX 15               /* "cubin", "ptx", "so" */
#define GPUIR__CACHE_MSG 1024                 /* status and error text */

typedef struct gpuir__cache_stats {
    uint64_t mem_hits, disk_hits, misses, corrupt, writes, write_failures;
    uint64_t compiles;              /* programs' modules compiled (gpuir__cached_compile) */
    uint64_t lowered_hits;          /* lowered programs taken from the cache (gpuir__lowered_find) */
} gpuir__cache_stats;

/* One memory slot; bytes == NULL marks an empty slot. */
typedef struct gpuir__cache_entry {
    char key[65];
    char ext[GPUIR__CACHE_EXT_MAX + 1];
    unsigned char *bytes;
    size_t size;
} gpuir__cache_entry;

typedef struct gpuir__cache {
    gpuir_ctx *ctx;                 /* for out-of-memory and argument errors */
    gpuir__cache_entry *slots;      /* open addressing, cap a power of two */
    size_t cap, count;
    unsigned char **retired;        /* payloads replaced by a put: kept until
                                       destroy, since gets handed them out */
    size_t nretired, retired_cap;
    int dirfd;                      /* the open cache directory, or -1 */
    char *dir;                      /* its path; "" when there is none */
    uint64_t rng;                   /* temp-name randomness */
    unsigned char secret[32];       /* the directory's HMAC key (disk on) */
    gpuir__cache_stats stats;
    char status[GPUIR__CACHE_MSG];      /* "ok" or why there is no disk cache */
    char last_error[GPUIR__CACHE_MSG];  /* the latest disk problem, or "" */
} gpuir__cache;

/* Formats into one of the cache's message buffers (truncating). */
static void gpuir__cache_msg(char buf[GPUIR__CACHE_MSG], const char *fmt, ...) GPUIR__PRINTF(2, 3);
static void gpuir__cache_msg(char buf[GPUIR__CACHE_MSG], const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, GPUIR__CACHE_MSG, fmt, ap);
    va_end(ap);
}

/* True for exactly 64 lowercase hex digits (so a key is a safe file name). */
static bool gpuir__cache_valid_key(const char *key) {
    if (!key) return false;
    for (int i = 0; i < 64; i++)
        if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f'))) return false;
    return key[64] == '\0';
}

/* True for 1..15 characters of [a-z0-9] (a safe file extension). */
static bool gpuir__cache_valid_ext(const char *ext) {
    if (!ext) return false;
    size_t n = 0;
    for (; ext[n]; n++)
        if (n >= GPUIR__CACHE_EXT_MAX || !((ext[n] >= 'a' && ext[n] <= 'z') || (ext[n] >= '0' && ext[n] <= '9')))
            return false;
    return n > 0;
}

/* ---- memory map --------------------------------------------------------- */

/* The home slot of a key: its first 16 hex digits, which are already a hash. */
static size_t gpuir__cache_home(const char *key, size_t cap) {
    uint64_t h = 0;
    for (int i = 0; i < 16; i++) h = h << 4 | (uint64_t)(key[i] <= '9' ? key[i] - '0' : key[i] - 'a' + 10);
    return (size_t)h & (cap - 1);
}

/* The slot holding (key, ext), or the empty slot where it would go (NULL if
   the table has no slots yet). Linear probing; the table is never full. */
static gpuir__cache_entry *gpuir__cache_probe(const gpuir__cache *c, const char *key, const char *ext) {
    if (c->cap == 0) return NULL;
    for (size_t i = gpuir__cache_home(key, c->cap);; i = (i + 1) & (c->cap - 1)) {
        gpuir__cache_entry *e = &c->slots[i];
        if (!e->bytes || (memcmp(e->key, key, 64) == 0 && strcmp(e->ext, ext) == 0)) return e;
    }
}

/* The entry for (key, ext), or NULL. */
static gpuir__cache_entry *gpuir__cache_mem_find(const gpuir__cache *c, const char *key, const char *ext) {
    gpuir__cache_entry *e = gpuir__cache_probe(c, key, ext);
    return e && e->bytes ? e : NULL;
}

/* Doubles the table (or makes the first one); false when out of memory. */
static bool gpuir__cache_mem_grow(gpuir__cache *c) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    gpuir__cache_entry *old = c->slots;
    size_t old_cap = c->cap;
    if (cap < old_cap || cap > SIZE_MAX / sizeof *old) return false;
    gpuir__cache_entry *slots = (gpuir__cache_entry *)gpuir__calloc(cap, sizeof *slots);
    if (!slots) return false;
    c->slots = slots, c->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].bytes) *gpuir__cache_probe(c, old[i].key, old[i].ext) = old[i];
    GPUIR_FREE(old);
    return true;
}

/* Keeps a replaced payload alive until destroy; false when out of memory. */
static bool gpuir__cache_retire(gpuir__cache *c, unsigned char *bytes) {
    if (c->nretired == c->retired_cap) {
        size_t cap = c->retired_cap ? c->retired_cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof *c->retired) return false;
        unsigned char **r = (unsigned char **)GPUIR_REALLOC(c->retired, cap * sizeof *r);
        if (!r) return false;
        c->retired = r, c->retired_cap = cap;
    }
    c->retired[c->nretired++] = bytes;
    return true;
}

/* Maps (key, ext) to bytes, taking ownership of them; an equal payload
   already there is kept and the new one freed. False when out of memory
   (bytes are then still the caller's). */
static bool gpuir__cache_mem_insert(gpuir__cache *c, const char *key, const char *ext,
                                    unsigned char *bytes, size_t size) {
    gpuir__cache_entry *e = gpuir__cache_mem_find(c, key, ext);
    if (e) {
        if (e->size == size && memcmp(e->bytes, bytes, size) == 0) { GPUIR_FREE(bytes); return true; }
        if (!gpuir__cache_retire(c, e->bytes)) return false;
        e->bytes = bytes, e->size = size;
        return true;
    }
    if ((c->count + 1) * 2 > c->cap && !gpuir__cache_mem_grow(c)) return false;
    e = gpuir__cache_probe(c, key, ext);
    memcpy(e->key, key, 65);
    snprintf(e->ext, sizeof e->ext, "%s", ext);
    e->bytes = bytes, e->size = size;
    c->count++;
    return true;
}

/* A malloc'd copy of size bytes, or uninitialized room for them when bytes
   is NULL (at least one byte, so never NULL on success). */
static unsigned char *gpuir__cache_dup(const void *bytes, size_t size) {
    unsigned char *p = (unsigned char *)GPUIR_MALLOC(size ? size : 1);
    if (p && bytes && size) memcpy(p, bytes, size);
    return p;
}

/* ---- the directory ------------------------------------------------------ */

/* True when an environment variable is set to something other than "" or "0". */
static bool gpuir__cache_env_on(const char *name) {
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

/* A malloc'd "a" + "b" with trailing slashes of a removed (the root kept). */
static char *gpuir__cache_join(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    while (na > 1 && a[na - 1] == '/') na--;
    char *p = (char *)GPUIR_MALLOC(na + nb + 1);
    if (!p) return NULL;
    memcpy(p, a, na);
    memcpy(p + na, b, nb + 1);
    return p;
}

/* The directory to use, malloc'd: the explicit one, GPUIR_CACHE_DIR,
   $XDG_CACHE_HOME/gpuir (absolute only, as the XDG spec asks), or
   $HOME/.cache/gpuir. NULL with c->status set when there is none; NULL with
   *oom set when memory ran out. */
static char *gpuir__cache_pick_dir(gpuir__cache *c, const char *dir, bool *oom) {
    const char *env = getenv("GPUIR_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char *p = NULL;
    if (dir) p = gpuir__cache_join(dir, "");
    else if (env && env[0]) p = gpuir__cache_join(env, "");
    else if (xdg && xdg[0] == '/') p = gpuir__cache_join(xdg, "/gpuir");
    else if (home && home[0]) p = gpuir__cache_join(home, "/.cache/gpuir");
    else {
        gpuir__cache_msg(c->status, "disk cache off: no cache directory "
                         "(GPUIR_CACHE_DIR, XDG_CACHE_HOME and HOME are unset)");
        return NULL;
    }
    *oom = p == NULL;
    return p;
}

/* Creates each missing directory on path with mode 0700 (path is restored).
   0, or an errno with c->status naming the level that failed. */
static int gpuir__cache_mkdirs(gpuir__cache *c, char *path) {
    struct stat st;
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        int err = 0;
        if (stat(path, &st) == 0) err = S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
        else if (errno != ENOENT) err = errno;
        else if (mkdir(path, 0700) != 0 && errno != EEXIST) err = errno;
        if (err) gpuir__cache_msg(c->status, "disk cache off: cannot create %s: %s", path, strerror(err));
        *p = saved;
        if (err) return err;
        if (saved == '\0') return 0;
    }
}

/* Checks the stat of the open cache directory: ours, and writable by nobody
   else. True if fine, else false with c->status saying why. */
static bool gpuir__cache_dir_safe(gpuir__cache *c, const struct stat *st) {
    if (!S_ISDIR(st->st_mode)) {
        gpuir__cache_msg(c->status, "disk cache off: %s is not a directory", c->dir);
        return false;
    }
    if (st->st_uid != geteuid()) {
        gpuir__cache_msg(c->status, "disk cache off: %s is owned by uid %lu, not by this user (uid %lu)",
                         c->dir, (unsigned long)st->st_uid, (unsigned long)geteuid());
        return false;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        gpuir__cache_msg(c->status, "disk cache off: %s is group- or world-writable (mode %04o)",
                         c->dir, (unsigned)(st->st_mode & 07777));
        return false;
    }
    return true;
}

/* Opens c->dir without following a symlink in its last component and checks
   it. The fd, or -1 with c->status saying why. */
static int gpuir__cache_open_dir(gpuir__cache *c) {
    struct stat lst, st;
    if (lstat(c->dir, &lst) != 0) {
        gpuir__cache_msg(c->status, "disk cache off: cannot stat %s: %s", c->dir, strerror(errno));
        return -1;
    }
    if (S_ISLNK(lst.st_mode)) {
        gpuir__cache_msg(c->status, "disk cache off: %s is a symlink", c->dir);
        return -1;
    }
    if (!gpuir__cache_dir_safe(c, &lst)) return -1;
    int fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        gpuir__cache_msg(c->status, "disk cache off: cannot open %s: %s", c->dir, strerror(errno));
        return -1;
    }
    bool ok = fstat(fd, &st) == 0;
    if (!ok) gpuir__cache_msg(c->status, "disk cache off: cannot stat %s: %s", c->dir, strerror(errno));
    else if (st.st_dev != lst.st_dev || st.st_ino != lst.st_ino) {
        gpuir__cache_msg(c->status, "disk cache off: %s was replaced while being opened", c->dir);
        ok = false;
    } else ok = gpuir__cache_dir_safe(c, &st);
    if (!ok) { close(fd); return -1; }
    return fd;
}

/* Turns the disk cache off (the reason is already in c->status). */
static void gpuir__cache_disk_off(gpuir__cache *c) {
    if (c->dirfd >= 0) close(c->dirfd);
    c->dirfd = -1;
    if (c->dir) c->dir[0] = '\0';
}

/* True when the disk cache is on and its directory still passes the checks
   (its owner or mode may have changed since make); else turns it off. */
static bool gpuir__cache_disk_ok(gpuir__cache *c) {
    if (c->dirfd < 0) return false;
    struct stat st;
    if (fstat(c->dirfd, &st) != 0) {
        gpuir__cache_msg(c->status, "disk cache off: cannot stat %s: %s", c->dir, strerror(errno));
        gpuir__cache_disk_off(c);
        return false;
    }
    if (!gpuir__cache_dir_safe(c, &st)) { gpuir__cache_disk_off(c); return false; }
    return true;
}

static bool gpuir__cache_secret_get(gpuir__cache *c);

/* Sets up the disk side at make: picks, creates and checks the directory,
   and loads (or makes) its secret. False only when out of memory; a
   directory that cannot be used leaves the disk cache off with c->status
   saying why. */
static bool gpuir__cache_disk_init(gpuir__cache *c, const char *dir) {
    if (dir && !dir[0]) {
        gpuir__cache_msg(c->status, "disk cache off: disabled by the caller");
        return true;
    }
    if (gpuir__cache_env_on("GPUIR_CACHE_DISABLE")) {
        gpuir__cache_msg(c->status, "disk cache off: GPUIR_CACHE_DISABLE is set");
        return true;
    }
    bool oom = false;
    char *path = gpuir__cache_pick_dir(c, dir, &oom);
    if (!path) return !oom;
    GPUIR_FREE(c->dir);
    c->dir = path;
    if (gpuir__cache_mkdirs(c, path) == 0) c->dirfd = gpuir__cache_open_dir(c);
    if (c->dirfd >= 0 && !gpuir__cache_secret_get(c)) gpuir__cache_disk_off(c);
    if (c->dirfd < 0) c->dir[0] = '\0';
    else gpuir__cache_msg(c->status, "ok");
    return true;
}

/* ---- entry files -------------------------------------------------------- */

/* The next pseudo-random 64 bits for temp names (splitmix64, mixed with the
   pid so forked copies of a cache differ). Not secret: O_EXCL keeps the
   names safe; randomness only keeps retries rare. */
static uint64_t gpuir__cache_random(gpuir__cache *c) {
    uint64_t x = (c->rng += 0x9e3779b97f4a7c15ull) ^ (uint64_t)getpid() << 32;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Reads exactly n bytes; 0, -1 with errno on an error, or 1 at an early end. */
static int gpuir__cache_read_all(int fd, void *buf, size_t n) {
    unsigned char *p = (unsigned char *)buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return 1;
        p += r, n -= (size_t)r;
    }
    return 0;
}

/* Reads an entry's header into h and its n payload bytes into p with one
   readv (more only if the kernel returns less): 0, 1 when the file ends
   first, -1 with errno on a read error. */
static int gpuir__cache_read_entry(int fd, unsigned char h[GPUIR__CACHE_HEADER], unsigned char *p, size_t n) {
    struct iovec v[2] = {{h, GPUIR__CACHE_HEADER}, {p, n}};
    ssize_t r;
    do r = readv(fd, v, n ? 2 : 1);
    while (r < 0 && errno == EINTR);
    if (r < 0) return -1;
    if ((size_t)r < GPUIR__CACHE_HEADER) {
        if (r == 0) return 1;
        int more = gpuir__cache_read_all(fd, h + r, GPUIR__CACHE_HEADER - (size_t)r);
        return more ? more : gpuir__cache_read_all(fd, p, n);
    }
    size_t got = (size_t)r - GPUIR__CACHE_HEADER;
    return got < n ? gpuir__cache_read_all(fd, p + got, n - got) : 0;
}

/* An entry's tag: HMAC-SHA256 under the directory's secret of a domain
   string, the key, the extension (with its NUL) and the payload's SHA-256
   (the header's checksum, checked first): hash-then-MAC, so a hit hashes
   its payload once, not twice (format version 3; version 2 MACed the
   payload itself, and its entries are now refused and rebuilt). */
static void gpuir__cache_tag(const gpuir__cache *c, const char *key, const char *ext,
                             const unsigned char digest[32], unsigned char out[32]) {
    static const char domain[] = "gpuir.cache.entry.v3";
    const void *parts[4] = {domain, key, ext, digest};
    size_t sizes[4] = {sizeof domain, 64, strlen(ext) + 1, 32};
    gpuir__cache_hmac(c->secret, parts, sizes, 4, out);
}

/* Compares two 32-byte tags in time that does not depend on where they differ. */
static bool gpuir__cache_same_tag(const unsigned char *a, const unsigned char *b) {
    unsigned char d = 0;
    for (int i = 0; i < 32; i++) d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* Fills the header of an entry for (key, ext) holding bytes. */
static void gpuir__cache_header(const gpuir__cache *c, unsigned char h[GPUIR__CACHE_HEADER], const char *key,
                                const char *ext, const void *bytes, size_t size) {
    memcpy(h, GPUIR__CACHE_MAGIC, 8);
    gpuir__cache_put_u32(h + 8, GPUIR__CACHE_VERSION);
    gpuir__cache_put_u32(h + 12, GPUIR__CACHE_HEADER);
    gpuir__cache_put_u64(h + 16, (uint64_t)size);
    gpuir__cache_sha256_buf(bytes, size, h + 24);
    memcpy(h + 56, key, 64);
    gpuir__cache_tag(c, key, ext, h + 24, h + 120);
}

/* Checks a header against the key and the file size; NULL when it is
   consistent, else what is wrong. */
static const char *gpuir__cache_header_check(const unsigned char *h, const char *key, uint64_t file_size) {
    if (memcmp(h, GPUIR__CACHE_MAGIC, 8) != 0) return "not a gpuir cache file (bad magic)";
    if (gpuir__cache_get_u32(h + 8) != GPUIR__CACHE_VERSION) return "unsupported format version";
    if (gpuir__cache_get_u32(h + 12) != GPUIR__CACHE_HEADER) return "bad header size";
    if (gpuir__cache_get_u64(h + 16) != file_size - GPUIR__CACHE_HEADER)
        return "payload size does not match the file size";
    if (memcmp(h + 56, key, 64) != 0) return "the entry is for another key";
    return NULL;
}

enum { GPUIR__CACHE_MISS, GPUIR__CACHE_HIT, GPUIR__CACHE_BAD };

/* Checks the stat of an opened entry; NULL if it is a regular file of ours
   that nobody else can write, else what is wrong. */
static const char *gpuir__cache_entry_stat_check(const struct stat *st) {
    if (!S_ISREG(st->st_mode)) return "not a regular file";
    if (st->st_uid != geteuid()) return "owned by another user";
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "group- or world-writable";
    if (st->st_size < (off_t)GPUIR__CACHE_HEADER) return "truncated (shorter than the header)";
    if ((uint64_t)st->st_size - GPUIR__CACHE_HEADER > (uint64_t)SIZE_MAX) return "too large";
    return NULL;
}

/* Turns a read_all result into a load result: a read error is a MISS
   (recorded), an early end a BAD truncated entry. */
static int gpuir__cache_read_failed(gpuir__cache *c, int r, const char *name, const char **why) {
    if (r > 0) { *why = "truncated while reading"; return GPUIR__CACHE_BAD; }
    gpuir__cache_msg(c->last_error, "cannot read %s/%s: %s", c->dir, name, strerror(errno));
    return GPUIR__CACHE_MISS;
}

/* Reads and verifies the open entry fd for (key, ext): well formed, and
   written by gpuir with this directory's secret (its tag). HIT with a
   malloc'd payload in *out; BAD with *why set; MISS on a read error or out
   of memory. */
static int gpuir__cache_load_fd(gpuir__cache *c, int fd, const char *name, const char *key, const char *ext,
                                const struct stat *st, unsigned char **out, size_t *size, const char **why) {
    unsigned char h[GPUIR__CACHE_HEADER], digest[32];
    if ((*why = gpuir__cache_entry_stat_check(st)) != NULL) return GPUIR__CACHE_BAD;
    if ((uint64_t)st->st_size < GPUIR__CACHE_HEADER) { *why = "shorter than a header"; return GPUIR__CACHE_BAD; }
    size_t n = (size_t)((uint64_t)st->st_size - GPUIR__CACHE_HEADER);
    unsigned char *p = gpuir__cache_dup(NULL, n);
    if (!p) {
        gpuir__cache_msg(c->last_error, "cannot load %s/%s: out of memory", c->dir, name);
        return GPUIR__CACHE_MISS;
    }
    int r = gpuir__cache_read_entry(fd, h, p, n);     /* header and payload: one read */
    if (r != 0) {
        int err = errno;
        GPUIR_FREE(p);
        errno = err;
        return gpuir__cache_read_failed(c, r, name, why);
    }
    if ((*why = gpuir__cache_header_check(h, key, (uint64_t)st->st_size)) != NULL) {
        GPUIR_FREE(p);
        return GPUIR__CACHE_BAD;
    }
    gpuir__cache_sha256_buf(p, n, digest);
    if (memcmp(digest, h + 24, 32) != 0) { GPUIR_FREE(p); *why = "payload checksum mismatch"; return GPUIR__CACHE_BAD; }
    unsigned char tag[32];
    gpuir__cache_tag(c, key, ext, digest, tag);
    if (!gpuir__cache_same_tag(tag, h + 120)) {
        GPUIR_FREE(p);
        *why = "not written by gpuir for this directory (its tag does not match the directory's secret)";
        return GPUIR__CACHE_BAD;
    }
    *out = p, *size = n;
    return GPUIR__CACHE_HIT;
}

/* Opens and verifies <dir>/<name> for key. HIT with a malloc'd payload; MISS
   when it is absent or cannot be read; BAD when it is not a valid entry,
   with *why set and *bad the file's identity (for a safe delete). */
static int gpuir__cache_load(gpuir__cache *c, const char *name, const char *key, const char *ext,
                             unsigned char **out, size_t *size, struct stat *bad, const char **why) {
    /* O_NONBLOCK: a FIFO planted under an entry's name must not hang us. */
    int fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT) return GPUIR__CACHE_MISS;
        if (fstatat(c->dirfd, name, bad, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(bad->st_mode)) {
            *why = "a symlink";
            return GPUIR__CACHE_BAD;
        }
        gpuir__cache_msg(c->last_error, "cannot open %s/%s: %s", c->dir, name, strerror(err));
        return GPUIR__CACHE_MISS;
    }
    int r;
    if (fstat(fd, bad) != 0) {
        gpuir__cache_msg(c->last_error, "cannot stat %s/%s: %s", c->dir, name, strerror(errno));
        r = GPUIR__CACHE_MISS;
    } else r = gpuir__cache_load_fd(c, fd, name, key, ext, bad, out, size, why);
    close(fd);
    return r;
}

/* Deletes a bad entry, unless it was replaced (by a good one from another
   process) since it was examined. */
static void gpuir__cache_remove_bad(gpuir__cache *c, const char *name, const struct stat *bad) {
    struct stat now;
    if (fstatat(c->dirfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0) return;
    if (now.st_dev != bad->st_dev || now.st_ino != bad->st_ino) return;
    if (unlinkat(c->dirfd, name, 0) != 0)
        gpuir__cache_msg(c->last_error, "cannot remove bad entry %s/%s: %s", c->dir, name, strerror(errno));
}

/* Creates a fresh temp file ".<key>.<pid>.<random>.tmp" (O_EXCL, 0600); the
   fd, or -1 with errno. Its name is left in tmp. */
static int gpuir__cache_temp(gpuir__cache *c, const char *key, char tmp[128]) {
    for (int tries = 0; tries < 16; tries++) {
        snprintf(tmp, 128, ".%.64s.%ld.%016llx.tmp", key, (long)getpid(),
                 (unsigned long long)gpuir__cache_random(c));
        int fd = openat(c->dirfd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;                                  /* errno is EEXIST */
}

/* ---- the directory's secret ---------------------------------------------- */

/* Reads 32 random bytes from /dev/urandom; false with errno set. */
static bool gpuir__cache_urandom(unsigned char out[32]) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    int r = gpuir__cache_read_all(fd, out, 32);
    int err = r > 0 ? EIO : errno;
    close(fd);
    errno = err;
    return r == 0;
}

/* Reads the secret from its open file into c->secret: NULL, or what is
   wrong with the file. */
static const char *gpuir__cache_secret_read(gpuir__cache *c, int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return strerror(errno);
    if (!S_ISREG(st.st_mode)) return "not a regular file";
    if (st.st_uid != geteuid()) return "owned by another user";
    if (st.st_mode & 077) return "open to other users (mode is not 0600)";
    if (st.st_size != 32) return "not 32 bytes long";
    int r = gpuir__cache_read_all(fd, c->secret, 32);
    return r == 0 ? NULL : r > 0 ? "truncated" : strerror(errno);
}

/* Makes the directory's secret: random bytes into a private temp file
   (0600, fsync), linked to its name only if there is none (linkat never
   replaces: when another process wins the race, EEXIST and its secret
   stands). 0, or an errno with c->status saying what failed. */
static int gpuir__cache_secret_make(gpuir__cache *c) {
    unsigned char secret[32];
    char tmp[128];
    if (!gpuir__cache_urandom(secret)) {
        int err = errno;
        gpuir__cache_msg(c->status, "disk cache off: cannot read /dev/urandom: %s", strerror(err));
        return err;
    }
    int fd = gpuir__cache_temp(c, "secret", tmp), err = errno;
    bool ok = fd >= 0 && gpuir__write_all(fd, secret, 32) && fsync(fd) == 0;
    if (fd >= 0) err = errno;
    if (fd >= 0 && close(fd) != 0 && ok) ok = false, err = errno;
    if (ok && linkat(c->dirfd, tmp, c->dirfd, GPUIR__CACHE_SECRET, 0) != 0) ok = false, err = errno;
    if (fd >= 0) unlinkat(c->dirfd, tmp, 0);
    if (!ok && err != EEXIST)
        gpuir__cache_msg(c->status, "disk cache off: cannot make %s/%s: %s", c->dir, GPUIR__CACHE_SECRET,
                         strerror(err));
    return ok ? 0 : err;
}

/* Loads the directory's secret, making it when there is none and replacing
   a bad one (entries tagged under a lost secret then fail their tag and are
   rebuilt). False with c->status saying why. */
static bool gpuir__cache_secret_get(gpuir__cache *c) {
    for (int tries = 0; tries < 4; tries++) {
        int fd = openat(c->dirfd, GPUIR__CACHE_SECRET, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        int err = fd < 0 ? errno : 0;
        const char *why = fd >= 0 ? gpuir__cache_secret_read(c, fd) : err == ELOOP ? "a symlink" : NULL;
        if (fd >= 0) close(fd);
        if (fd >= 0 && !why) return true;
        if (why) {                              /* a bad one: replace it */
            gpuir__cache_msg(c->status, "disk cache off: %s/%s is %s", c->dir, GPUIR__CACHE_SECRET, why);
            if (unlinkat(c->dirfd, GPUIR__CACHE_SECRET, 0) != 0 && errno != ENOENT) return false;
            continue;
        }
        if (err != ENOENT) {
            gpuir__cache_msg(c->status, "disk cache off: cannot open %s/%s: %s", c->dir, GPUIR__CACHE_SECRET,
                             strerror(err));
            return false;
        }
        err = gpuir__cache_secret_make(c);
        if (err && err != EEXIST) return false;
    }
    return false;                               /* c->status says what went wrong last */
}

/* Writes header and payload to the temp file fd, then fsyncs and closes it
   (always). NULL, or the step that failed with errno set. */
static const char *gpuir__cache_fill(int fd, const unsigned char *h, const void *bytes, size_t size) {
    const char *step = NULL;
    if (!gpuir__write_all(fd, h, GPUIR__CACHE_HEADER) || !gpuir__write_all(fd, bytes, size))
        step = "write";
    else if (fsync(fd) != 0)
        step = "fsync";
    int err = errno;
    if (close(fd) != 0 && !step) return "close";
    errno = err;
    return step;
}

/* Writes <dir>/<name> atomically: temp file, header and payload, fsync,
   close, rename over the final name. False with c->last_error set (naming
   the step, the path and the errno text); the temp file is then gone. */
static bool gpuir__cache_write(gpuir__cache *c, const char *name, const char *key, const char *ext,
                               const void *bytes, size_t size) {
    unsigned char h[GPUIR__CACHE_HEADER];
    char tmp[128];
    gpuir__cache_header(c, h, key, ext, bytes, size);
    int fd = gpuir__cache_temp(c, key, tmp);
    if (fd < 0) {
        gpuir__cache_msg(c->last_error, "cannot create %s/%s: %s", c->dir, tmp, strerror(errno));
        return false;
    }
    const char *step = gpuir__cache_fill(fd, h, bytes, size);
    if (!step && renameat(c->dirfd, tmp, c->dirfd, name) != 0) step = "rename";
    if (!step) return true;
    int err = errno;
    unlinkat(c->dirfd, tmp, 0);
    gpuir__cache_msg(c->last_error, "cannot %s %s/%s: %s", step, c->dir, tmp, strerror(err));
    return false;
}

/* Removes (key, ext) from memory: its payload is retired (gets handed it
   out), and the rest of its probe cluster is placed again so that linear
   probing still finds it. False when out of memory (nothing removed). */
static bool gpuir__cache_mem_remove(gpuir__cache *c, const char *key, const char *ext) {
    gpuir__cache_entry *e = gpuir__cache_mem_find(c, key, ext);
    if (!e) return true;
    if (!gpuir__cache_retire(c, e->bytes)) return false;
    e->bytes = NULL;
    c->count--;
    for (size_t i = ((size_t)(e - c->slots) + 1) & (c->cap - 1); c->slots[i].bytes; i = (i + 1) & (c->cap - 1)) {
        gpuir__cache_entry moved = c->slots[i];
        c->slots[i].bytes = NULL;
        *gpuir__cache_probe(c, moved.key, moved.ext) = moved;
    }
    return true;
}

/* Evicts (key, ext), whose payload `bytes` turned out bad, from memory and
   from disk; the disk entry only while it still holds those bytes (another
   process may have replaced it with a good one). */
static void gpuir__cache_evict(gpuir__cache *c, const char *key, const char *ext, const void *bytes, size_t size) {
    if (!gpuir__cache_valid_key(key) || !gpuir__cache_valid_ext(ext)) return;
    gpuir__cache_mem_remove(c, key, ext);
    if (!gpuir__cache_disk_ok(c)) return;
    char name[96];
    snprintf(name, sizeof name, "%s.%s", key, ext);
    unsigned char *p = NULL;
    size_t n = 0;
    struct stat st;
    const char *why = NULL;
    int r = gpuir__cache_load(c, name, key, ext, &p, &n, &st, &why);
    if (r != GPUIR__CACHE_MISS && (r == GPUIR__CACHE_BAD || (n == size && memcmp(p, bytes, size) == 0)))
        gpuir__cache_remove_bad(c, name, &st);
    GPUIR_FREE(p);
}

/* ---- the API ------------------------------------------------------------ */

static void gpuir__cache_destroy(gpuir__cache *c);

/* Makes a cache. dir: the disk cache directory; NULL picks it from the
   environment (GPUIR_CACHE_DIR, $XDG_CACHE_HOME/gpuir, $HOME/.cache/gpuir);
   "" means memory only. GPUIR_CACHE_DISABLE set (not "0") turns the disk off
   in every case. NULL only when out of memory (recorded in ctx). */
static gpuir__cache *gpuir__cache_make(gpuir_ctx *ctx, const char *dir) {
    gpuir__cache *c = (gpuir__cache *)gpuir__calloc(1, sizeof *c);
    if (c) {
        struct timespec ts;
        c->ctx = ctx;
        c->dirfd = -1;
        c->dir = gpuir__cache_join("", "");
        if (clock_gettime(CLOCK_REALTIME, &ts) != 0) ts.tv_sec = 0, ts.tv_nsec = 0;
        c->rng = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)c;
        gpuir__cache_msg(c->status, "disk cache off");
    }
    if (!c || !c->dir || !gpuir__cache_disk_init(c, dir)) {
        gpuir__cache_destroy(c);
        if (ctx) gpuir__oom(ctx, "kernel cache");
        return NULL;
    }
    return c;
}

/* Frees the cache, every payload it handed out, and closes its directory. */
static void gpuir__cache_destroy(gpuir__cache *c) {
    if (!c) return;
    for (size_t i = 0; i < c->cap; i++) GPUIR_FREE(c->slots[i].bytes);
    for (size_t i = 0; i < c->nretired; i++) GPUIR_FREE(c->retired[i]);
    GPUIR_FREE(c->slots);
    GPUIR_FREE(c->retired);
    if (c->dirfd >= 0) close(c->dirfd);
    GPUIR_FREE(c->dir);
    GPUIR_FREE(c);
}

/* Looks (key, ext) up in memory, then on disk; a disk hit is kept in memory.
   On a hit *bytes points to cache-owned memory valid until destroy and the
   result is true. A bad disk entry is counted, deleted and is a miss. */
static bool gpuir__cache_get(gpuir__cache *c, const char *key, const char *ext,
                             const void **bytes, size_t *size) {
    if (!gpuir__cache_valid_key(key) || !gpuir__cache_valid_ext(ext)) { c->stats.misses++; return false; }
    gpuir__cache_entry *e = gpuir__cache_mem_find(c, key, ext);
    if (e) {
        c->stats.mem_hits++;
        *bytes = e->bytes, *size = e->size;
        return true;
    }
    if (!gpuir__cache_disk_ok(c)) { c->stats.misses++; return false; }
    char name[96];
    snprintf(name, sizeof name, "%s.%s", key, ext);
    unsigned char *p = NULL;
    size_t n = 0;
    struct stat bad;
    const char *why = NULL;
    int r = gpuir__cache_load(c, name, key, ext, &p, &n, &bad, &why);
    if (r == GPUIR__CACHE_BAD) {
        c->stats.corrupt++;
        gpuir__cache_msg(c->last_error, "bad cache entry %s/%s: %s (deleted)", c->dir, name, why);
        gpuir__cache_remove_bad(c, name, &bad);
    }
    if (r == GPUIR__CACHE_HIT && !gpuir__cache_mem_insert(c, key, ext, p, n)) {
        gpuir__cache_msg(c->last_error, "cannot keep %s/%s in memory: out of memory", c->dir, name);
        GPUIR_FREE(p);
        r = GPUIR__CACHE_MISS;
    }
    if (r != GPUIR__CACHE_HIT) { c->stats.misses++; return false; }
    e = gpuir__cache_mem_find(c, key, ext);
    c->stats.disk_hits++;
    *bytes = e->bytes, *size = e->size;
    return true;
}

/* Stores a copy of bytes under (key, ext) in memory and writes it to disk.
   A disk failure only counts write_failures (reason: gpuir__cache_last_error).
   Errors: GPUIR_ERR_OUT_OF_MEMORY, GPUIR_ERR_INVALID_ARGUMENT (bad key/ext). */
static gpuir_result gpuir__cache_put(gpuir__cache *c, const char *key, const char *ext,
                                     const void *bytes, size_t size) {
    if (!gpuir__cache_valid_key(key) || !gpuir__cache_valid_ext(ext) || (!bytes && size))
        return gpuir__fail(c->ctx, GPUIR_ERR_INVALID_ARGUMENT,
                           "kernel cache: bad key or extension (want 64 hex digits and [a-z0-9]{1,15})");
    unsigned char *p = gpuir__cache_dup(bytes, size);
    if (!p || !gpuir__cache_mem_insert(c, key, ext, p, size)) {
        GPUIR_FREE(p);
        return gpuir__oom(c->ctx, "kernel cache entry");
    }
    if (!gpuir__cache_disk_ok(c)) return GPUIR_OK;
    char name[96];
    snprintf(name, sizeof name, "%s.%s", key, ext);
    if (gpuir__cache_write(c, name, key, ext, bytes, size)) c->stats.writes++;
    else c->stats.write_failures++;
    return GPUIR_OK;
}

/* The disk cache directory, or "" when there is no disk cache. */
static const char *gpuir__cache_dir(const gpuir__cache *c) { return c->dirfd >= 0 ? c->dir : ""; }

/* "ok", or why there is no disk cache (naming the path and the errno text). */
static const char *gpuir__cache_disk_status(const gpuir__cache *c) { return c->status; }

/* The latest disk problem (a failed write, a bad entry deleted, a read
   error), or "" when there was none. */
static const char *gpuir__cache_last_error(const gpuir__cache *c) { return c->last_error; }

/* The counters. */
static gpuir__cache_stats gpuir__cache_get_stats(const gpuir__cache *c) { return c->stats; }

/* ---- programs' compiled modules through the cache ---- */

/* The context's kernel cache, made on first use from its desc.cache_dir. */
static gpuir__cache *gpuir__ctx_cache(gpuir_ctx *ctx) {
    if (!ctx) return NULL;                     /* a failed gpuir_ctx_make */
    if (!ctx->cache) ctx->cache = gpuir__cache_make(ctx, ctx->desc.cache_dir);
    return ctx->cache;
}

/* Runs b's compiler (counted in the cache's compiles, timed in the
   program's compile_ms); b->image is NULL on failure. */
static gpuir_result gpuir__cached_compile(gpuir_program *p, gpuir__built *b) {
    double t0 = gpuir__now_ms();
    gpuir__cache *c = gpuir__ctx_cache(p->ctx);
    if (c) c->stats.compiles++;
    gpuir_result r = b->compile(p, &b->image, &b->size);
    if (r) { GPUIR_FREE(b->image); b->image = NULL; }
    p->stats.compile_ms += gpuir__now_ms() - t0;
    return r;
}

/* The compiled image for key `parts`, into b: from the cache (b->cached),
   else compiled. Nothing is stored yet: gpuir__program_load stores only a
   module that loaded (gpuir__cached_store). */
static gpuir_result gpuir__cached_build(gpuir_program *p, const char *const *parts, size_t n, const char *ext,
                                        gpuir__compile_fn compile, gpuir__built *b) {
    double t0 = gpuir__now_ms();
    gpuir__cache *c = gpuir__ctx_cache(p->ctx);
    gpuir__cache_key(parts, n, b->key);
    b->ext = ext;
    b->compile = compile;
    const void *bytes;
    bool hit = c && gpuir__cache_get(c, b->key, ext, &bytes, &b->size);
    p->stats.cache_ms += gpuir__now_ms() - t0;
    if (hit) {
        b->image = GPUIR_MALLOC(b->size ? b->size : 1);
        if (!b->image) return gpuir__oom(p->ctx, "a compiled module");
        memcpy(b->image, bytes, b->size);
        b->cached = true;
        return GPUIR_OK;
    }
    b->cached = false;
    return gpuir__cached_compile(p, b);
}

/* Stores a module that was compiled and has loaded (a failed disk write
   only costs the next process a compile). */
static gpuir_result gpuir__cached_store(gpuir_program *p, const gpuir__built *b) {
    gpuir__cache *c = gpuir__ctx_cache(p->ctx);
    if (b->cached || !c) return GPUIR_OK;
    return gpuir__cache_put(c, b->key, b->ext, b->image, b->size);
}

/* Drops a cached module that failed to load (`why`) from memory and disk,
   so that it is compiled again, and says so in gpuir_ctx_cache_status. */
static void gpuir__cached_evict(gpuir_program *p, const gpuir__built *b, const char *why) {
    gpuir__cache *c = gpuir__ctx_cache(p->ctx);
    if (!c) return;
    gpuir__cache_evict(c, b->key, b->ext, b->image, b->size);
    gpuir__cache_msg(c->last_error, "the cached module %s%s%.64s.%s failed to load (%s); evicted from the cache "
                     "and compiled again", gpuir__cache_dir(c), *gpuir__cache_dir(c) ? "/" : "", b->key, b->ext, why);
}


GPUIRDEF gpuir_cache_stats gpuir_ctx_cache_stats(gpuir_ctx *ctx) {
    gpuir_cache_stats out;
    memset(&out, 0, sizeof out);
    gpuir__cache *c = gpuir__ctx_cache(ctx);
    if (!c) return out;
    gpuir__cache_stats st = gpuir__cache_get_stats(c);
    out.mem_hits = st.mem_hits;
    out.disk_hits = st.disk_hits;
    out.misses = st.misses;
    out.corrupt = st.corrupt;
    out.writes = st.writes;
    out.write_failures = st.write_failures;
    out.compiles = st.compiles;
    out.lowered_hits = st.lowered_hits;
    return out;
}

/* ---- bundles: the memory cache's CUDA modules in one file ----
   "GPUIRBDL" | u32 version | u32 count | count x (key[64] | u8 ext length |
   ext | u64 size | sha256[32] | size bytes); integers little-endian.
   A bundle is data from elsewhere: its SHA-256s catch damage, not forgery.
   So it carries only device code (cubin, PTX), which runs on the GPU and
   cannot run on the host; an emulator module (a shared object gpuir would
   dlopen) is never exported, and a bundle holding one, or any other kind,
   is refused whole: emulator modules are rebuilt from source. */

#define GPUIR__BUNDLE_MAGIC "GPUIRBDL"
#define GPUIR__BUNDLE_VERSION 1u

/* True for the kinds of module a bundle may carry: CUDA device code. */
static bool gpuir__bundle_kind_ok(const char *ext) {
    return strcmp(ext, "cubin") == 0 || strcmp(ext, "ptx") == 0;
}

static void gpuir__bytes_append(gpuir__str *out, const void *bytes, size_t n) {
    size_t at = stbds_arrlenu(out->buf);
    stbds_arrsetlen(out->buf, at + n);
    if (n) memcpy(out->buf + at, bytes, n);
}

GPUIRDEF gpuir_result gpuir_ctx_cache_export(gpuir_ctx *ctx, const char *path, size_t *count) {
    if (!ctx || ctx->result != GPUIR_OK) return gpuir_ctx_result(ctx);
    gpuir__cache *c = gpuir__ctx_cache(ctx);
    if (!c) return gpuir__oom(ctx, "the kernel cache");
    gpuir__str out = {NULL};
    unsigned char word[32];
    size_t n = 0;
    for (size_t i = 0; i < c->cap; i++) n += c->slots[i].bytes && gpuir__bundle_kind_ok(c->slots[i].ext);
    gpuir__bytes_append(&out, GPUIR__BUNDLE_MAGIC, 8);
    gpuir__cache_put_u32(word, GPUIR__BUNDLE_VERSION);
    gpuir__cache_put_u32(word + 4, (uint32_t)n);
    gpuir__bytes_append(&out, word, 8);
    for (size_t i = 0; i < c->cap; i++) {
        const gpuir__cache_entry *e = &c->slots[i];
        if (!e->bytes || !gpuir__bundle_kind_ok(e->ext)) continue;     /* host code stays home */
        word[0] = (unsigned char)strlen(e->ext);
        gpuir__bytes_append(&out, e->key, 64);
        gpuir__bytes_append(&out, word, 1);
        gpuir__bytes_append(&out, e->ext, word[0]);
        gpuir__cache_put_u64(word, (uint64_t)e->size);
        gpuir__bytes_append(&out, word, 8);
        gpuir__cache_sha256_buf(e->bytes, e->size, word);
        gpuir__bytes_append(&out, word, 32);
        gpuir__bytes_append(&out, e->bytes, e->size);
    }
    gpuir_result r = gpuir__write_file_atomic(ctx, path, out.buf, stbds_arrlenu(out.buf));
    stbds_arrfree(out.buf);
    if (!r && count) *count = n;
    return r;
}

/* One bundle entry, checked: its fields point into the bundle. */
typedef struct gpuir__bundle_entry {
    char key[65], ext[GPUIR__CACHE_EXT_MAX + 1];
    const unsigned char *bytes;
    size_t size;
} gpuir__bundle_entry;

/* Reads entry i at *at; NULL, or what is wrong with it. */
static const char *gpuir__bundle_entry_read(const unsigned char *data, size_t size, size_t *at,
                                            gpuir__bundle_entry *e) {
    size_t p = *at;
    if (size - p < 65) return "truncated (an entry's key)";
    memcpy(e->key, data + p, 64);
    e->key[64] = '\0';
    size_t ext = data[p + 64];
    p += 65;
    if (ext > GPUIR__CACHE_EXT_MAX || size - p < ext + 8) return "truncated or bad (an entry's extension)";
    memcpy(e->ext, data + p, ext);
    e->ext[ext] = '\0';
    p += ext;
    if (!gpuir__cache_valid_key(e->key) || !gpuir__cache_valid_ext(e->ext)) return "an entry's key or extension is malformed";
    if (!gpuir__bundle_kind_ok(e->ext))
        return strcmp(e->ext, "so") == 0 ? "an emulator module (a shared object: host code, which a bundle never "
                                           "carries; the emulator rebuilds it from source)"
                                         : "a module of a kind a bundle does not carry (only cubin and ptx)";
    uint64_t n = gpuir__cache_get_u64(data + p);
    p += 8;
    if (size - p < 32 || n > size - p - 32) return "truncated (an entry's module)";
    unsigned char digest[32];
    gpuir__cache_sha256_buf(data + p + 32, (size_t)n, digest);
    if (memcmp(digest, data + p, 32) != 0) return "an entry's module does not match its SHA-256";
    e->bytes = data + p + 32;
    e->size = (size_t)n;
    *at = p + 32 + (size_t)n;
    return NULL;
}

GPUIRDEF gpuir_result gpuir_ctx_cache_import(gpuir_ctx *ctx, const char *path, size_t *count) {
    if (!ctx || ctx->result != GPUIR_OK) return gpuir_ctx_result(ctx);
    gpuir__cache *c = gpuir__ctx_cache(ctx);
    if (!c) return gpuir__oom(ctx, "the kernel cache");
    char *text;
    size_t size;
    gpuir_result r = gpuir__read_file(ctx, path, &text, &size);
    if (r) return r;
    const unsigned char *data = (const unsigned char *)text;
    gpuir__bundle_entry *entries = NULL;
    const char *why = NULL;
    size_t n = 0, at = 16;
    if (size < 16 || memcmp(data, GPUIR__BUNDLE_MAGIC, 8) != 0) why = "not a gpuir cache bundle";
    else if (gpuir__cache_get_u32(data + 8) != GPUIR__BUNDLE_VERSION) why = "a bundle version this gpuir does not read";
    else n = gpuir__cache_get_u32(data + 12);
    if (why) r = gpuir__fail(ctx, GPUIR_ERR_IO, "cache bundle '%s': %s; nothing imported", path, why);
    for (size_t i = 0; !r && i < n; i++) {
        gpuir__bundle_entry e;
        if ((why = gpuir__bundle_entry_read(data, size, &at, &e)) != NULL)
            r = gpuir__fail(ctx, GPUIR_ERR_IO, "cache bundle '%s': entry %zu of %zu: %s; nothing imported", path,
                            i + 1, n, why);
        else stbds_arrput(entries, e);
    }
    if (!r && at != size)
        r = gpuir__fail(ctx, GPUIR_ERR_IO, "cache bundle '%s': %zu bytes after the last entry; nothing imported",
                        path, size - at);
    for (size_t i = 0; !r && i < stbds_arrlenu(entries); i++)
        r = gpuir__cache_put(c, entries[i].key, entries[i].ext, entries[i].bytes, entries[i].size);
    if (!r && count) *count = n;
    stbds_arrfree(entries);
    GPUIR_FREE(text);
    return r;
}

GPUIRDEF const char *gpuir_ctx_cache_dir(gpuir_ctx *ctx) {
    gpuir__cache *c = gpuir__ctx_cache(ctx);
    return c ? gpuir__cache_dir(c) : "";
}

GPUIRDEF const char *gpuir_ctx_cache_status(gpuir_ctx *ctx) {
    gpuir__cache *c = gpuir__ctx_cache(ctx);
    if (!c) return ctx ? "no cache (out of memory)" : gpuir_ctx_error(ctx);
    return *gpuir__cache_last_error(c) ? gpuir__cache_last_error(c) : gpuir__cache_disk_status(c);
}

/* ====================================================================== */
// >>rt.exec
// Runs a placed program through a device table (gpuir__drv): host buffers,
// device buffers, copies, launches and frees, issued in program order on the
// streams the async pass chose (waiting for the events it named), or on
// the synchronous stream 0 when it did not run. Each buffer's slot knows
// its dims in this run: a dynamic dim comes from the input array or, for an
// allocation, from the operand dim its dims_of names; a launch passes the
// dynamic dims after the buffers and, having no grid, gets one from its
// largest buffer. The table is
// the CUDA driver (rt.driver) or the emulator (rt.emu); everything here is
// the same for both. Reads: ir, verify (gpuir__verify_placed), codegen.cuda,
// rt.cache. Writes: the arrays
// the caller gets back.

/* The two backends (rt.driver, rt.emu) behind the table. */
static gpuir_result gpuir__cuda_backend_open(gpuir_program *p);
static void gpuir__cuda_backend_close(gpuir_program *p);
static gpuir_result gpuir__cuda_build(gpuir_program *p, gpuir__built *b);
static gpuir_result gpuir__emu_open(gpuir_program *p);
static void gpuir__emu_close(gpuir_program *p);
static gpuir_result gpuir__emu_build(gpuir_program *p, gpuir__built *b);
struct gpuir__emu_toolchain;
static void gpuir__emu_toolchain_free(struct gpuir__emu_toolchain *t);
static gpuir_result gpuir__fault_wrap(gpuir_program *p);
static void gpuir__fault_unwrap(gpuir_program *p);

/* Turns a failed table call into the context's error: the call, the CUDA
   error name and text, and what gpuir was doing. */
static gpuir_result gpuir__drv_check(gpuir_ctx *ctx, const gpuir__drv *d, int code, const char *call,
                                     const char *what) {
    if (code == 0) return GPUIR_OK;
    const char *name = "CUDA_ERROR_UNKNOWN", *text = "unknown error", *detail = "";
    if (d->describe) d->describe(d->self, code, &name, &text, &detail);
    gpuir_result r = gpuir__fail(ctx, GPUIR_ERR_CUDA, "%s: %s failed (%s: %s)%s%s while %s", d->name, call, name,
                                 text, *detail ? ": " : "", detail, what);
    if (d->lost && !d->lost[0] && gpuir__cuda_error_is_fatal(code))
        snprintf(d->lost, GPUIR__LOST_SIZE, "%s", gpuir_ctx_error(ctx));
    return r;
}

/* Fails fast once the device context is lost: its work cannot go on. */
static gpuir_result gpuir__drv_alive(gpuir_ctx *ctx, const gpuir__drv *d) {
    if (!d->lost || !d->lost[0]) return GPUIR_OK;
    return gpuir__fail(ctx, GPUIR_ERR_CUDA, "%s: the device context is lost (make a new gpuir context; for "
                       "CUDA, a new process) after: %s", d->name, d->lost);
}

/* One buffer's state during a run. */
typedef struct gpuir__slot {
    void *host;             /* host memory, or NULL */
    gpuir__dptr dev;        /* device memory, or 0 */
    size_t bytes;
    int64_t dims[GPUIR_MAX_RANK];   /* its dims in this run (a dynamic one's size) */
    bool owned;             /* host memory this run allocated (memref.alloc) */
    bool live;              /* device memory this run allocated and not freed */
    uint32_t freed_by;      /* the op that freed it (memref.dealloc, gpu.dealloc), or 0 */
    bool external;          /* run arguments: its memory is the caller's (no allocation, no free) */
    int arg;                /* then: input #arg - 1, or output #-arg - 1 */
    size_t ext_bytes;       /* then: the bytes the caller's memory has */
} gpuir__slot;

typedef struct gpuir__run {
    gpuir_program *p;
    const gpuir__func *f;   /* the host function running */
    gpuir__slot *slots;     /* value id - 1 -> slot: the program's run_slots */
    bool async;             /* run arguments: all on the device, on the caller's stream: no host waits */
    void *caller;           /* then the caller's stream, bound to the table's stream 0 */
    bool host_staged;       /* recording a graph: a copy's host side is its staging buffer, and
                               the function may free the buffer it stands for before this */
} gpuir__run;

/* What a run was doing, for an error message: a fixed text, or one made
   from the op (a launch, a copy) only when a message needs it; most runs
   never fail, and formatting it for every op was a fifth of a run's host
   work. */
typedef struct gpuir__doing {
    const char *fixed;      /* the text, or NULL: made from op */
    const gpuir__run *R;
    const gpuir__op *op;
    char text[GPUIR_MAX_NAME + 64];
} gpuir__doing;

static void gpuir__doing_op(gpuir__doing *w, const gpuir__run *R, const gpuir__op *op) {
    w->fixed = NULL;
    w->R = R;
    w->op = op;
    w->text[0] = 0;
}

static void gpuir__doing_fixed(gpuir__doing *w, const char *text) {
    gpuir__doing_op(w, NULL, NULL);
    w->fixed = text;
}

static uint32_t gpuir__launch_target(const gpuir_module *m, const char *symbol);

/* "launching @k", "copying 64 bytes (op 7, host to device)". */
static const char *gpuir__doing_text(gpuir__doing *w) {
    if (w->fixed) return w->fixed;
    if (w->text[0]) return w->text;
    const gpuir_module *m = w->R->p->m;
    const gpuir__op *op = w->op;
    if (op->kind == GPUIR_OP_GPU_LAUNCH_FUNC) {
        const char *symbol = gpuir__string(m, gpuir__attr_get(m, op, GPUIR__KEY_KERNEL)->off);
        const gpuir__func *kf = gpuir__func_at(m, gpuir__launch_target(m, symbol));
        snprintf(w->text, sizeof w->text, "launching @%s", kf ? gpuir__string(m, kf->name) : symbol);
        return w->text;
    }
    bool gpu = op->kind == GPUIR_OP_GPU_MEMCPY;
    uint32_t dst = gpuir__op_operand(m, op, gpu ? 0 : 1), src = gpuir__op_operand(m, op, gpu ? 1 : 0);
    bool dst_dev = gpuir__value_at(m, dst)->type.space == GPUIR_SPACE_DEVICE;
    bool src_dev = gpuir__value_at(m, src)->type.space == GPUIR_SPACE_DEVICE;
    snprintf(w->text, sizeof w->text, "copying %zu bytes (op %u, %s)", w->R->slots[dst - 1].bytes,
             (unsigned)(op - m->ops) + 1,
             dst_dev ? (src_dev ? "device to device" : "host to device") : (src_dev ? "device to host" : "host to host"));
    return w->text;
}

static gpuir_result gpuir__launch_check(const gpuir_program *p, const unsigned grid[3], const unsigned block[3],
                                        uint64_t shared_bytes, gpuir__doing *w);

/* A static buffer's bytes (0 when it has a dynamic dim: see the slot). */
static size_t gpuir__value_bytes(const gpuir_module *m, uint32_t v) {
    const gpuir_type *t = &gpuir__value_at(m, v)->type;
    int64_t n = gpuir__type_count(t);
    return n > 0 ? (size_t)n * gpuir_dtype_size(t->dtype) : 0;
}

/* Gives value v's slot its dims in this run and its byte size: its type's
   dims, the dynamic ones taken from `dims` (NULL for a static type). Fails
   when the bytes are more than the context's max_tensor_bytes. */
static gpuir_result gpuir__run_shape(gpuir__run *R, uint32_t v, const int64_t *dims) {
    const gpuir_type *t = &gpuir__value_at(R->p->m, v)->type;
    gpuir__slot *s = &R->slots[v - 1];
    int64_t n = gpuir_dtype_size(t->dtype);
    bool fits = true;
    for (int i = 0; i < t->rank; i++) {
        s->dims[i] = t->dims[i] == GPUIR_DYN ? dims[i] : t->dims[i];
        fits = fits && gpuir__mul_i64(n, s->dims[i], &n);
    }
    uint64_t cap = R->p->ctx->desc.max_tensor_bytes;
    if (!fits || (uint64_t)n > cap || (uint64_t)n > SIZE_MAX / 2) {
        gpuir__tbuf b;
        return gpuir__fail(R->p->ctx, GPUIR_ERR_LIMIT, "a %s buffer (value %u) with these dynamic sizes is "
                           "more than max_tensor_bytes (%llu)", gpuir__tstr(&b, t), v, (unsigned long long)cap);
    }
    s->bytes = (size_t)n;
    return GPUIR_OK;
}

/* The run-time dims of an allocation: its dynamic dims are the dims of its
   operands its dims_of names. */
static void gpuir__run_alloc_dims(gpuir__run *R, const gpuir__op *op, int64_t dims[GPUIR_MAX_RANK]) {
    gpuir_module *m = R->p->m;
    const gpuir_type *t = &gpuir__value_at(m, op->result)->type;
    const gpuir__attr *dims_of = gpuir__attr_get(m, op, GPUIR__KEY_DIMS_OF);
    const int64_t *pairs = dims_of ? gpuir__ints_at(m, dims_of->off) : NULL;
    for (int i = 0, k = 0; i < t->rank; i++) {
        dims[i] = t->dims[i];
        if (t->dims[i] != GPUIR_DYN || !pairs) continue;
        dims[i] = R->slots[gpuir__op_operand(m, op, (uint32_t)pairs[2 * k]) - 1].dims[pairs[2 * k + 1]];
        k++;
    }
}

/* The table's stream for an op: the IR's stream + 1, or 0 (synchronous). */
static unsigned gpuir__run_stream(const gpuir_module *m, const gpuir__op *op) {
    return (unsigned)(gpuir__op_int_attr(m, op, GPUIR__KEY_STREAM, -1) + 1);
}

/* Counts, once when the program is made, the streams and events its host
   functions name (the verifier bounds them). */
static void gpuir__program_count_streams(gpuir_program *p) {
    const gpuir_module *m = p->m;
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++)
        for (size_t i = 0; !m->funcs[f].kernel && i < stbds_arrlenu(m->funcs[f].ops); i++) {
            const gpuir__op *op = gpuir__op_at(m, m->funcs[f].ops[i]);
            int64_t s = gpuir__op_int_attr(m, op, GPUIR__KEY_STREAM, -1) + 1, e = gpuir__op_int_attr(m, op, GPUIR__KEY_EVENT, -1) + 1;
            if (s > (int64_t)p->n_streams) p->n_streams = (unsigned)s;
            if (e > (int64_t)p->n_events) p->n_events = (unsigned)e;
        }
}

/* Makes sure the device has the program's streams and events. */
static gpuir_result gpuir__run_reserve(gpuir__run *R) {
    gpuir_program *p = R->p;
    if (!p->n_streams && !p->n_events) return GPUIR_OK;
    return gpuir__drv_check(p->ctx, &p->drv, p->drv.streams_reserve(p->drv.self, p->n_streams, p->n_events),
                            "cuStreamCreate", "making the program's streams and events");
}

/* A buffer (or the base of a view) freed earlier in the run is an illegal
   address: an error naming the op that freed it, before any memory is
   touched (on the emulator, freed memory may be gone). */
static gpuir_result gpuir__run_check_freed(gpuir__run *R, uint32_t v, bool device, gpuir__doing *w) {
    gpuir_module *m = R->p->m;
    uint32_t by = R->slots[v - 1].freed_by;
    if (!by) by = R->slots[gpuir__view_base(m, v) - 1].freed_by;
    if (!by) return GPUIR_OK;
    return gpuir__fail(R->p->ctx, GPUIR_ERR_VERIFY, "%s: illegal address: %s memory that was already freed "
                       "(by op %u, %s)", gpuir__doing_text(w), device ? "device" : "host", by,
                       gpuir_op_name(gpuir__op_at(m, by)->kind));
}

/* The device address of a launch operand or copy side. */
static gpuir_result gpuir__run_dev(gpuir__run *R, uint32_t v, gpuir__dptr *out, gpuir__doing *w) {
    gpuir__slot *s = &R->slots[v - 1];
    if (gpuir__run_check_freed(R, v, true, w)) return R->p->ctx->result;
    if (!s->dev && s->bytes)
        return gpuir__fail(R->p->ctx, GPUIR_ERR_VERIFY, "%s: a device buffer is not allocated", gpuir__doing_text(w));
    *out = s->dev;
    return GPUIR_OK;
}

static gpuir_result gpuir__run_host(gpuir__run *R, uint32_t v, void **out, gpuir__doing *w) {
    gpuir__slot *s = &R->slots[v - 1];
    if (!R->host_staged && gpuir__run_check_freed(R, v, false, w)) return R->p->ctx->result;
    if (!s->host && s->bytes)
        return gpuir__fail(R->p->ctx, GPUIR_ERR_VERIFY, "%s: a host buffer has no memory", gpuir__doing_text(w));
    *out = s->host;
    return GPUIR_OK;
}

/* memref.copy (src, dst) between host buffers, gpu.memcpy (dst, src) in
   whichever direction the memory spaces say. */
static gpuir_result gpuir__run_copy(gpuir__run *R, const gpuir__op *op) {
    gpuir_program *p = R->p;
    gpuir_module *m = p->m;
    bool gpu = op->kind == GPUIR_OP_GPU_MEMCPY;
    uint32_t dst = gpuir__op_operand(m, op, gpu ? 0 : 1), src = gpuir__op_operand(m, op, gpu ? 1 : 0);
    bool dst_dev = gpuir__value_at(m, dst)->type.space == GPUIR_SPACE_DEVICE;
    bool src_dev = gpuir__value_at(m, src)->type.space == GPUIR_SPACE_DEVICE;
    size_t bytes = R->slots[dst - 1].bytes;
    if (p->run_skip && p->run_skip[op - m->ops]) return GPUIR_OK;    /* a device-resident argument's copy */
    gpuir__doing w;
    gpuir__doing_op(&w, R, op);
    if (R->slots[src - 1].bytes != bytes)
        return gpuir__fail(p->ctx, GPUIR_ERR_SHAPE, "%s: the source has %zu bytes (their dynamic sizes differ)",
                           gpuir__doing_text(&w), R->slots[src - 1].bytes);
    if (!bytes) return GPUIR_OK;
    gpuir__dptr dd = 0, sd = 0;
    void *dh = NULL, *sh = NULL;
    gpuir_result r = dst_dev ? gpuir__run_dev(R, dst, &dd, &w) : gpuir__run_host(R, dst, &dh, &w);
    if (!r) r = src_dev ? gpuir__run_dev(R, src, &sd, &w) : gpuir__run_host(R, src, &sh, &w);
    if (r) return r;
    const gpuir__drv *d = &p->drv;
    unsigned st = gpuir__run_stream(m, op);
    if (dst_dev != src_dev) {
        p->stats.h2d_copies += dst_dev;
        p->stats.h2d_bytes += dst_dev ? bytes : 0;
        p->stats.d2h_copies += src_dev;
        p->stats.d2h_bytes += src_dev ? bytes : 0;
    }
    if (p->ctx->log_level)
        gpuir__logf(p->ctx, 1, "copy: %zu bytes %s, stream %u", bytes, dst_dev && src_dev ? "device to device"
                    : dst_dev ? "host to device" : src_dev ? "device to host" : "host to host", st);
    if (!dst_dev && !src_dev) {
        memmove(dh, sh, bytes);
        return GPUIR_OK;
    }
    int code = dst_dev && src_dev ? d->copy_dtod(d->self, dd, sd, bytes, st)
             : dst_dev            ? d->copy_htod(d->self, dd, sh, bytes, st)
                                  : d->copy_dtoh(d->self, dh, sd, bytes, st);
    if (!code) return GPUIR_OK;
    const char *call = dst_dev && src_dev ? (st ? "cuMemcpyDtoDAsync" : "cuMemcpyDtoD")
                     : dst_dev            ? (st ? "cuMemcpyHtoDAsync" : "cuMemcpyHtoD")
                                          : (st ? "cuMemcpyDtoHAsync" : "cuMemcpyDtoH");
    return gpuir__drv_check(p->ctx, d, code, call, gpuir__doing_text(&w));
}

/* Dim `axis` of kernel value v in this launch: a parameter's is its
   operand's, a temporary's is static. */
static int64_t gpuir__run_kernel_dim(const gpuir__run *R, const gpuir__op *launch, const gpuir__func *k, uint32_t v,
                                     int axis) {
    const gpuir_module *m = R->p->m;
    for (size_t i = 0; i < stbds_arrlenu(k->params); i++)
        if (k->params[i] == v) return R->slots[gpuir__op_operand(m, launch, (uint32_t)i) - 1].dims[axis];
    return gpuir__value_at(m, v)->type.dims[axis];
}

/* Checks that dim `ua` of u and dim `va` of v, which one kernel op needs
   equal, are equal in this launch (they can differ only when one is
   dynamic). */
static gpuir_result gpuir__run_dims_agree(gpuir__run *R, const gpuir__op *launch, const gpuir__func *k,
                                          const gpuir__op *op, uint32_t u, int ua, uint32_t v, int va,
                                          const char *what) {
    int64_t x = gpuir__run_kernel_dim(R, launch, k, u, ua), y = gpuir__run_kernel_dim(R, launch, k, v, va);
    if (x == y) return GPUIR_OK;
    return gpuir__fail(R->p->ctx, GPUIR_ERR_SHAPE, "%s: dynamic sizes disagree: %s: dim %d of %%%s is %lld, dim %d "
                       "of %%%s is %lld (a dynamic dim is not broadcast)", what,
                       gpuir_op_name(op->kind), ua, gpuir__string(R->p->m, gpuir__value_at(R->p->m, u)->name),
                       (long long)x, va, gpuir__string(R->p->m, gpuir__value_at(R->p->m, v)->name), (long long)y);
}

/* A matmul's pairs: A's K with B's K, A's M and B's N with the output's,
   and the batch dims (right-aligned, static 1s broadcast). */
static gpuir_result gpuir__run_check_matmul(gpuir__run *R, const gpuir__op *launch, const gpuir__func *k,
                                            const gpuir__op *op, const char *what) {
    gpuir_module *m = R->p->m;
    uint32_t a = gpuir__op_operand(m, op, 0), b = gpuir__op_operand(m, op, 1), o = gpuir__op_operand(m, op, 2);
    int ra = gpuir__value_at(m, a)->type.rank, rb = gpuir__value_at(m, b)->type.rank;
    int ro = gpuir__value_at(m, o)->type.rank;
    bool ta = gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_A), tb = gpuir__op_flag(m, op, GPUIR__KEY_TRANSPOSE_B);
    gpuir_result r = gpuir__run_dims_agree(R, launch, k, op, a, ra - (ta ? 2 : 1), b, rb - (tb ? 1 : 2), what);
    if (!r) r = gpuir__run_dims_agree(R, launch, k, op, a, ra - (ta ? 1 : 2), o, ro - 2, what);
    if (!r) r = gpuir__run_dims_agree(R, launch, k, op, b, rb - (tb ? 2 : 1), o, ro - 1, what);
    for (int side = 0; side < 2 && !r; side++) {
        uint32_t v = side ? b : a;
        const gpuir_type *t = &gpuir__value_at(m, v)->type;
        for (int d = 0; d + 2 < t->rank && !r; d++)
            if (t->dims[d] != 1) r = gpuir__run_dims_agree(R, launch, k, op, v, d, o, d - t->rank + ro, what);
    }
    return r;
}

/* Checks, op by op, that the dims kernel k's ops pair up agree in this
   launch: a matmul's (above), an elementwise operand's with its
   destination's (right-aligned, static 1s broadcast), a reduction's kept
   axes, a transpose's permuted ones, a softmax's with its destination's. */
static gpuir_result gpuir__run_check_sizes(gpuir__run *R, const gpuir__op *launch, const gpuir__func *k,
                                           const char *what) {
    gpuir_module *m = R->p->m;
    for (size_t i = 0; i < stbds_arrlenu(k->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, k->ops[i]);
        gpuir__op_class cls = gpuir__info(op->kind)->cls;
        if (op->result || !gpuir__class_computes(cls) || op->n_operands < 2) continue;
        uint32_t dst = gpuir__op_operand(m, op, op->n_operands - 1);
        const gpuir_type *dt = &gpuir__value_at(m, dst)->type;
        if (cls == GPUIR__CLASS_MATMUL) {
            if (gpuir__run_check_matmul(R, launch, k, op, what)) return R->p->ctx->result;
            continue;
        }
        for (uint32_t o = 0; o + 1 < op->n_operands; o++) {
            uint32_t src = gpuir__op_operand(m, op, o);
            const gpuir_type *st = &gpuir__value_at(m, src)->type;
            gpuir_result r = GPUIR_OK;
            if (cls == GPUIR__CLASS_REDUCE) {
                const gpuir__attr *axes = gpuir__attr_get(m, op, GPUIR__KEY_AXES);
                bool keep = gpuir__op_flag(m, op, GPUIR__KEY_KEEPDIMS);
                for (int a = 0, j = 0; a < st->rank && !r; a++) {
                    bool reduced = false;
                    for (uint32_t q = 0; axes && q < axes->n; q++) reduced |= gpuir__ints_at(m, axes->off)[q] == a;
                    if (!reduced) r = gpuir__run_dims_agree(R, launch, k, op, src, a, dst, j, what);
                    if (!reduced || keep) j++;
                }
            } else if (cls == GPUIR__CLASS_TRANSPOSE) {    /* out dim i is source dim perm[i] */
                const int64_t *perm = gpuir__ints_at(m, gpuir__attr_get(m, op, GPUIR__KEY_PERM)->off);
                for (int a = 0; a < dt->rank && !r; a++)
                    r = gpuir__run_dims_agree(R, launch, k, op, src, (int)perm[a], dst, a, what);
            } else if (cls == GPUIR__CLASS_SOFTMAX || gpuir__is_elementwise(cls) || cls == GPUIR__CLASS_BROADCAST) {
                for (int a = 0; a < st->rank && !r; a++) {
                    int b = a - st->rank + dt->rank;
                    if (b >= 0 && st->dims[a] != 1) r = gpuir__run_dims_agree(R, launch, k, op, src, a, dst, b, what);
                }
            }
            if (r) return r;
        }
    }
    return GPUIR_OK;
}

/* The sizes a launch of kernel k passes after its buffers: each dynamic
   dim of each parameter, in order (codegen's signature), once the kernel's
   ops agree on them. */
static gpuir_result gpuir__run_launch_sizes(gpuir__run *R, const gpuir__op *op, const gpuir__func *k,
                                            long long *sizes, size_t *n_sizes, const char *what) {
    gpuir_module *m = R->p->m;
    *n_sizes = 0;
    if (gpuir__run_check_sizes(R, op, k, what)) return R->p->ctx->result;
    for (uint32_t i = 0; i < op->n_operands; i++) {
        const gpuir_type *t = &gpuir__value_at(m, k->params[i])->type;
        const gpuir__slot *s = &R->slots[gpuir__op_operand(m, op, i) - 1];
        for (int a = 0; a < t->rank; a++)
            if (t->dims[a] == GPUIR_DYN) sizes[(*n_sizes)++] = (long long)s->dims[a];
    }
    return GPUIR_OK;
}

/* The grid of a launch that has none (a kernel with dynamic sizes), as
   configure would choose it for these sizes: a block per output element of
   a reduction, row of a softmax or 64x64 tile of a matmul, else a thread
   per element of the largest operand; the kernels loop over what the grid
   does not cover. */
static void gpuir__run_launch_grid(gpuir__run *R, const gpuir__op *op, const gpuir__func *k, const unsigned block[3],
                                   unsigned grid[3]) {
    gpuir_module *m = R->p->m;
    gpuir_op_kind kind;
    int64_t reduced;
    const gpuir_type *out = gpuir__kernel_output(m, k, &kind, &reduced);
    uint64_t blocks = 1, most = 1, threads = (uint64_t)block[0] * block[1] * block[2];
    for (uint32_t i = 0; i < op->n_operands; i++) {
        const gpuir__slot *s = &R->slots[gpuir__op_operand(m, op, i) - 1];
        const gpuir_type *t = &gpuir__value_at(m, k->params[i])->type;
        uint64_t n = s->bytes / gpuir_dtype_size(t->dtype);
        if (kind == GPUIR_OP_SOFTMAX && t == out && t->rank && s->dims[t->rank - 1])
            blocks = n / (uint64_t)s->dims[t->rank - 1];
        else if (kind == GPUIR_OP_MATMUL && t == out && s->dims[t->rank - 2] && s->dims[t->rank - 1])
            blocks = n / (uint64_t)(s->dims[t->rank - 2] * s->dims[t->rank - 1]) *
                     (uint64_t)gpuir__ceil_div(s->dims[t->rank - 2], GPUIR__MM_BM) *
                     (uint64_t)gpuir__ceil_div(s->dims[t->rank - 1], GPUIR__MM_BN);
        else if (gpuir__info(kind)->cls == GPUIR__CLASS_REDUCE && t == out) blocks = n;
        if (n > most) most = n;
    }
    if (kind != GPUIR_OP_SOFTMAX && kind != GPUIR_OP_MATMUL && gpuir__info(kind)->cls != GPUIR__CLASS_REDUCE)
        blocks = threads ? (most + threads - 1) / threads : 1;
    grid[0] = (unsigned)(blocks < 1 ? 1 : blocks > INT32_MAX ? INT32_MAX : blocks);
    grid[1] = grid[2] = 1;
}

/* The index in p->kernels of the kernel a launch runs (their count when
   it has none), looked up by symbol on the op's first run only. */
static size_t gpuir__run_launch_kernel(const gpuir_program *p, const gpuir__op *op) {
    size_t at = (size_t)(op - p->m->ops);
    uint32_t *known = at < p->n_launch_kernel ? &p->launch_kernel[at] : NULL;
    if (known && *known) return *known - 1;
    const gpuir__attr *sym = gpuir__attr_get(p->m, op, GPUIR__KEY_KERNEL);
    uint32_t kid = gpuir__launch_target(p->m, gpuir__string(p->m, sym->off));
    size_t k = 0;
    while (k < stbds_arrlenu(p->kernels) && p->kernels[k].func != kid) k++;
    if (known) *known = (uint32_t)k + 1;
    return k;
}

/* The dynamic shared memory a launch of kernel k (an index in p->kernels:
   gpuir__run_launch_kernel) gets: its smem attribute and what the kernel's code declares
   (GPUIR_SHARED_DYNAMIC: the tensor-core stages). */
static int64_t gpuir__launch_kernel_smem(const gpuir_program *p, const gpuir__op *op, size_t k) {
    return gpuir__op_int_attr(p->m, op, GPUIR__KEY_SMEM, 0) +
           (k < stbds_arrlenu(p->kernels) ? p->kernels[k].dynamic_bytes : 0);
}

/* A tensor map encoded for a launch: which op and map, for what address. */
typedef struct gpuir__tmap_entry {
    size_t op;                      /* index in the module's ops */
    unsigned which;                 /* index in the kernel's tmaps */
    gpuir__dptr base;
    unsigned long long words[GPUIR__TMAP_BYTES / 8];
} gpuir__tmap_entry;

/* The tensor maps kernel k (an index in p->kernels) takes, for the launch
   op at index `op` whose buffer parameters have the device addresses
   args[]: encoded through the table on first use for an op and address
   (a repeated run finds them; a stale entry is re-encoded in place). `w`
   says what the caller was doing, formatted only for an error. */
static gpuir_result gpuir__launch_tensor_maps(gpuir_program *p, size_t op, size_t k, const gpuir__dptr *args,
                                              gpuir__tmap *maps, gpuir__doing *w) {
    const gpuir__cg_kernel_info *info = &p->kernels[k];
    for (unsigned i = 0; i < info->n_tmaps; i++) {
        const gpuir__cg_tmap *t = &info->tmaps[i];
        gpuir__dptr base = args[t->param];
        gpuir__tmap_entry *e = NULL;
        for (size_t j = 0; j < stbds_arrlenu(p->tmaps) && !e; j++)
            if (p->tmaps[j].op == op && p->tmaps[j].which == i) e = &p->tmaps[j];
        if (e && e->base == base) {
            memcpy(maps[i].words, e->words, sizeof e->words);
            continue;
        }
        gpuir__tmap_desc d;
        memset(&d, 0, sizeof d);
        d.dtype = t->dtype, d.rank = t->rank, d.base = base, d.swizzle = GPUIR__TMAP_SWIZZLE_128B;
        for (unsigned a = 0; a < t->rank; a++) {
            d.dims[a] = t->dims[a], d.box[a] = t->box[a];
            if (a) d.strides[a - 1] = t->strides[a - 1];
        }
        int code = p->drv.tensor_map_encode(p->drv.self, &maps[i], &d);
        if (code) return gpuir__drv_check(p->ctx, &p->drv, code, "cuTensorMapEncodeTiled", gpuir__doing_text(w));
        p->tmaps_encoded++;
        if (!e) {
            gpuir__tmap_entry fresh;
            memset(&fresh, 0, sizeof fresh);
            fresh.op = op, fresh.which = i;
            stbds_arrput(p->tmaps, fresh);
            e = &p->tmaps[stbds_arrlenu(p->tmaps) - 1];
        }
        e->base = base;
        memcpy(e->words, maps[i].words, sizeof e->words);
    }
    return GPUIR_OK;
}

/* gpu.launch_func: the kernel's function, its buffers' device addresses,
   then the sizes of their dynamic dims, then the tensor maps it takes. */
static gpuir_result gpuir__run_launch(gpuir__run *R, const gpuir__op *op) {
    gpuir_program *p = R->p;
    gpuir_module *m = p->m;
    gpuir__doing w;
    gpuir__doing_op(&w, R, op);
    size_t k = gpuir__run_launch_kernel(p, op);
    if (k == stbds_arrlenu(p->kernels))
        return gpuir__fail(p->ctx, GPUIR_ERR_VERIFY, "%s: its kernel was not compiled", gpuir__doing_text(&w));
    const gpuir__func *kf = gpuir__func_at(m, p->kernels[k].func);
    gpuir__dptr args[GPUIR_MAX_OPERANDS];
    long long sizes[GPUIR_MAX_OPERANDS * GPUIR_MAX_RANK];
    void *params[GPUIR__MAX_KERNEL_PARAMS];
    size_t n_sizes = 0;
    for (uint32_t i = 0; i < op->n_operands; i++) {
        gpuir_result r = gpuir__run_dev(R, gpuir__op_operand(m, op, i), &args[i], &w);
        if (r) return r;
        params[i] = &args[i];
    }
    const gpuir__attr *g = gpuir__attr_get(m, op, GPUIR__KEY_GRID), *b = gpuir__attr_get(m, op, GPUIR__KEY_BLOCK);
    bool dynamic = gpuir__kernel_is_dynamic(m, kf);
    if ((!g && !dynamic) || !b)
        return gpuir__fail(p->ctx, GPUIR_ERR_VERIFY, "%s: no grid or block (run configure)", gpuir__doing_text(&w));
    if (dynamic && gpuir__run_launch_sizes(R, op, kf, sizes, &n_sizes, gpuir__doing_text(&w))) return p->ctx->result;
    for (size_t i = 0; i < n_sizes; i++) params[op->n_operands + i] = &sizes[i];
    unsigned grid[3], block[3];
    for (int i = 0; i < 3; i++) {
        grid[i] = g ? (unsigned)gpuir__ints_at(m, g->off)[i] : 1;
        block[i] = (unsigned)gpuir__ints_at(m, b->off)[i];
    }
    if (!g) gpuir__run_launch_grid(R, op, kf, block, grid);
    int64_t smem = gpuir__launch_kernel_smem(p, op, k);
    gpuir__tmap maps[2];
    unsigned n_maps = p->kernels[k].n_tmaps;
    if (n_maps && gpuir__launch_tensor_maps(p, (size_t)(op - m->ops), k, args, maps, &w))
        return p->ctx->result;
    for (unsigned i = 0; i < n_maps; i++) params[op->n_operands + n_sizes + i] = &maps[i];
    size_t param_bytes = op->n_operands * sizeof(gpuir__dptr) + n_sizes * sizeof(long long) + n_maps * GPUIR__TMAP_BYTES;
    gpuir_result r = gpuir__launch_check(p, grid, block, (uint64_t)smem + p->kernels[k].shared_bytes, &w);
    if (!r && param_bytes > GPUIR__MAX_PARAM_BYTES)
        r = gpuir__fail(p->ctx, GPUIR_ERR_LIMIT, "%s: %zu bytes of kernel parameters; CUDA allows %d",
                        gpuir__doing_text(&w), param_bytes, GPUIR__MAX_PARAM_BYTES);
    if (r) return r;
    p->stats.launches++;
    if (p->ctx->log_level)
        gpuir__logf(p->ctx, 1, "launch %s: grid %ux%ux%u, block %ux%ux%u, %lld bytes of dynamic shared memory "
                    "(+%u static), stream %u", p->kernels[k].cname, grid[0], grid[1], grid[2], block[0], block[1],
                    block[2], (long long)smem, (unsigned)p->kernels[k].shared_bytes, gpuir__run_stream(m, op));
    int code = p->drv.launch(p->drv.self, p->functions[k], grid, block, (unsigned)smem, params,
                             op->n_operands + (uint32_t)n_sizes + n_maps, gpuir__run_stream(m, op));
    return code ? gpuir__drv_check(p->ctx, &p->drv, code, "cuLaunchKernel", gpuir__doing_text(&w)) : GPUIR_OK;
}

/* Host fills: a splat or dense constant written into a host buffer. */
static gpuir_result gpuir__run_fill(gpuir__run *R, const gpuir__op *op) {
    gpuir_module *m = R->p->m;
    uint32_t b = gpuir__op_operand(m, op, 0);
    gpuir_array view;
    gpuir_type t = gpuir__value_at(m, b)->type;
    if (t.space != GPUIR_SPACE_HOST)
        return gpuir__fail(R->p->ctx, GPUIR_ERR_VERIFY, "constant fill of a device buffer on the host (op %u)",
                           (unsigned)(op - m->ops) + 1);
    memset(&view, 0, sizeof view);
    view.dtype = t.dtype;
    view.rank = t.rank;
    memcpy(view.dims, R->slots[b - 1].dims, sizeof view.dims);
    gpuir__doing w;
    gpuir__doing_fixed(&w, "filling a constant");
    gpuir_result r = gpuir__run_host(R, b, &view.data, &w);
    if (!r) gpuir__ref_constant(m, gpuir__attr_get(m, op, GPUIR__KEY_VALUE), &view);
    return r;
}

/* A buffer the caller's argument stands in for: its size in this run must
   be the argument's. */
static gpuir_result gpuir__run_external_fits(gpuir__run *R, const gpuir__slot *s) {
    if (s->bytes == s->ext_bytes) return GPUIR_OK;
    return gpuir__fail(R->p->ctx, GPUIR_ERR_SHAPE, "%s #%d: the result has %zu bytes in this run, the argument %zu",
                       s->arg > 0 ? "input" : "output", s->arg > 0 ? s->arg - 1 : -s->arg - 1, s->bytes, s->ext_bytes);
}

static gpuir_result gpuir__run_alloc(gpuir__run *R, const gpuir__op *op) {
    gpuir_program *p = R->p;
    gpuir__slot *s = &R->slots[op->result - 1];
    int64_t dims[GPUIR_MAX_RANK];
    gpuir__run_alloc_dims(R, op, dims);
    if (gpuir__run_shape(R, op->result, dims)) return p->ctx->result;
    if (s->external) return gpuir__run_external_fits(R, s);
    if (op->kind == GPUIR_OP_MEMREF_ALLOC) {
        s->host = GPUIR_MALLOC(s->bytes ? s->bytes : 1);
        s->owned = s->host != NULL;
        return s->host ? GPUIR_OK : gpuir__oom(p->ctx, "a host buffer");
    }
    if (!s->bytes) return GPUIR_OK;
    unsigned st = gpuir__run_stream(p->m, op);
    int code = p->drv.mem_alloc(p->drv.self, &s->dev, s->bytes, st);
    s->live = code == 0;
    if (!code) return GPUIR_OK;
    char what[64];
    snprintf(what, sizeof what, "allocating %zu bytes of device memory", s->bytes);
    return gpuir__drv_check(p->ctx, &p->drv, code, st ? "cuMemAllocAsync" : "cuMemAlloc", what);
}

static gpuir_result gpuir__run_dealloc(gpuir__run *R, const gpuir__op *op) {
    gpuir_program *p = R->p;
    uint32_t v = gpuir__op_operand(p->m, op, 0);
    gpuir__slot *s = &R->slots[v - 1];
    gpuir__doing w;
    gpuir__doing_fixed(&w, "freeing a buffer");
    if (gpuir__run_check_freed(R, v, op->kind == GPUIR_OP_GPU_DEALLOC, &w)) return p->ctx->result;
    s->freed_by = (uint32_t)(op - p->m->ops) + 1;      /* later uses: illegal addresses */
    if (op->kind == GPUIR_OP_MEMREF_DEALLOC) {      /* a parameter's memory is the caller's */
        if (s->owned) GPUIR_FREE(s->host);
        s->host = NULL;
        s->owned = false;
        return GPUIR_OK;
    }
    if (!s->live) return GPUIR_OK;
    s->live = false;
    unsigned st = gpuir__run_stream(p->m, op);
    return gpuir__drv_check(p->ctx, &p->drv, p->drv.mem_free(p->drv.self, s->dev, st),
                            st ? "cuMemFreeAsync" : "cuMemFree", "freeing a device buffer");
}

/* The resident device copy of global g: allocated on first use, uploaded
   then and again whenever the global was rebound since. */
static gpuir_result gpuir__run_resident(gpuir__run *R, uint32_t g, size_t bytes, gpuir__dptr *out) {
    gpuir_program *p = R->p;
    const gpuir__global *glob = &p->m->globals[g - 1];
    size_t i = 0;
    while (i < stbds_arrlenu(p->resident) && p->resident[i].global != g) i++;
    if (i == stbds_arrlenu(p->resident)) {
        gpuir__resident fresh = {g, 0, 0, false};
        char what[GPUIR_MAX_NAME + 64];
        snprintf(what, sizeof what, "allocating the resident copy of @%s", gpuir__string(p->m, glob->name));
        /* kept for the program's life: not stream-ordered on a caller's stream */
        int rc = R->caller ? p->drv.stream_bind(p->drv.self, NULL, 0) : 0;
        if (!rc && bytes) rc = p->drv.mem_alloc(p->drv.self, &fresh.dev, bytes, 0);
        if (R->caller) {
            int brc = p->drv.stream_bind(p->drv.self, R->caller, p->n_streams + 1);
            if (!rc) rc = brc;
        }
        if (gpuir__drv_check(p->ctx, &p->drv, rc, "cuMemAlloc", what)) {
            if (fresh.dev) p->drv.mem_free(p->drv.self, fresh.dev, 0);
            return p->ctx->result;
        }
        stbds_arrput(p->resident, fresh);
    }
    gpuir__resident *res = &p->resident[i];
    if (res->external) {
        *out = res->dev;
        return GPUIR_OK;
    }
    if (res->uploaded != glob->generation && bytes) {
        char what[GPUIR_MAX_NAME + 64];
        snprintf(what, sizeof what, "uploading global @%s", gpuir__string(p->m, glob->name));
        if (gpuir__drv_check(p->ctx, &p->drv, p->drv.copy_htod(p->drv.self, res->dev, glob->data, bytes, 0),
                             "cuMemcpyHtoD", what))
            return p->ctx->result;
        p->stats.uploads++;
        p->stats.upload_bytes += bytes;
    }
    res->uploaded = glob->generation;
    *out = res->dev;
    return GPUIR_OK;
}

/* memref.get_global: the global's host data, or its resident device copy. */
static gpuir_result gpuir__run_global(gpuir__run *R, const gpuir__op *op) {
    gpuir_module *m = R->p->m;
    const char *name = gpuir__string(m, gpuir__attr_get(m, op, GPUIR__KEY_NAME)->off);
    uint32_t g = gpuir__find_global(m, name);
    bool external = false;
    for (size_t i = 0; g && i < stbds_arrlenu(R->p->resident); i++)
        external = external || (R->p->resident[i].global == g && R->p->resident[i].external);
    if (!g || (!m->globals[g - 1].data && !external))
        return gpuir__fail(R->p->ctx, GPUIR_ERR_NOT_FOUND, "global @%s has no data (gpuir_module_bind_global)", name);
    gpuir__slot *s = &R->slots[op->result - 1];
    if (gpuir__run_shape(R, op->result, NULL)) return R->p->ctx->result;
    if (gpuir__value_at(m, op->result)->type.space == GPUIR_SPACE_DEVICE)
        return gpuir__run_resident(R, g, s->bytes, &s->dev);
    if (external)
        return gpuir__fail(R->p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "global @%s is bound to a device buffer, "
                           "but the program reads or writes it on the host", name);
    s->host = m->globals[g - 1].data;
    return GPUIR_OK;
}

/* memref.reshape: the same host or device memory; the view owns nothing. */
static gpuir_result gpuir__run_view(gpuir__run *R, const gpuir__op *op) {
    gpuir__slot *s = &R->slots[op->result - 1];
    *s = R->slots[gpuir__op_operand(R->p->m, op, 0) - 1];
    s->owned = s->live = false;
    return gpuir__run_shape(R, op->result, NULL);       /* views are static */
}

/* gpu.wait: the host waits for the events it names, or for everything. */
static gpuir_result gpuir__run_wait(gpuir__run *R, const gpuir__op *op) {
    gpuir_program *p = R->p;
    const gpuir__attr *events = gpuir__attr_get(p->m, op, GPUIR__KEY_EVENTS);
    if (R->async) return GPUIR_OK;      /* nothing comes back to the host: the caller's stream orders it */
    if (!events) return gpuir__drv_check(p->ctx, &p->drv, p->drv.synchronize(p->drv.self), "cuCtxSynchronize", "gpu.wait");
    for (uint32_t i = 0; i < events->n; i++) {
        unsigned e = (unsigned)gpuir__ints_at(p->m, events->off)[i] + 1;
        if (gpuir__drv_check(p->ctx, &p->drv, p->drv.event_synchronize(p->drv.self, e), "cuEventSynchronize", "gpu.wait"))
            return p->ctx->result;
    }
    return GPUIR_OK;
}

/* A stream op: its stream waits for the events it names first, and it
   records its event after. */
static gpuir_result gpuir__run_stream_op(gpuir__run *R, const gpuir__op *op, gpuir_result (*run)(gpuir__run *, const gpuir__op *)) {
    gpuir_program *p = R->p;
    unsigned st = gpuir__run_stream(p->m, op);
    const gpuir__attr *wait = gpuir__attr_get(p->m, op, GPUIR__KEY_WAIT);
    for (uint32_t i = 0; st && wait && i < wait->n; i++) {
        unsigned e = (unsigned)gpuir__ints_at(p->m, wait->off)[i] + 1;
        if (gpuir__drv_check(p->ctx, &p->drv, p->drv.stream_wait(p->drv.self, st, e), "cuStreamWaitEvent",
                             gpuir_op_name(op->kind)))
            return p->ctx->result;
    }
    gpuir_result r = run(R, op);
    int64_t event = gpuir__op_int_attr(p->m, op, GPUIR__KEY_EVENT, -1);
    if (!r && st && event >= 0)
        r = gpuir__drv_check(p->ctx, &p->drv, p->drv.event_record(p->drv.self, (unsigned)event + 1, st), "cuEventRecord",
                             gpuir_op_name(op->kind));
    return r;
}

/* Executes one host op of a placed function. */
static gpuir_result gpuir__run_op(gpuir__run *R, const gpuir__op *op) {
    gpuir_program *p = R->p;
    switch (op->kind) {
    case GPUIR_OP_MEMREF_ALLOC: return gpuir__run_alloc(R, op);
    case GPUIR_OP_MEMREF_DEALLOC: return gpuir__run_dealloc(R, op);
    case GPUIR_OP_MEMREF_COPY: return gpuir__run_copy(R, op);
    case GPUIR_OP_GPU_ALLOC: return gpuir__run_stream_op(R, op, gpuir__run_alloc);
    case GPUIR_OP_GPU_DEALLOC: return gpuir__run_stream_op(R, op, gpuir__run_dealloc);
    case GPUIR_OP_GPU_MEMCPY: return gpuir__run_stream_op(R, op, gpuir__run_copy);
    case GPUIR_OP_GPU_LAUNCH_FUNC: return gpuir__run_stream_op(R, op, gpuir__run_launch);
    case GPUIR_OP_MEMREF_GET_GLOBAL: return gpuir__run_global(R, op);
    case GPUIR_OP_CONSTANT: return op->result ? GPUIR_OK : gpuir__run_fill(R, op);
    case GPUIR_OP_GPU_WAIT: return gpuir__run_wait(R, op);
    case GPUIR_OP_MEMREF_RESHAPE: return gpuir__run_view(R, op);
    case GPUIR_OP_RETURN: return GPUIR_OK;
    default:
        return gpuir__fail(p->ctx, GPUIR_ERR_VERIFY, "%s cannot run on the host in a placed program (op %u); "
                           "lower the program first", gpuir_op_name(op->kind), (unsigned)(op - p->m->ops) + 1);
    }
}

/* Every resource limit of a launch, checked before it is made. */
static gpuir_result gpuir__launch_check(const gpuir_program *p, const unsigned grid[3], const unsigned block[3],
                                        uint64_t shared_bytes, gpuir__doing *w) {
    static const char *const axis = "xyz";
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    for (int i = 0; i < 3; i++) {
        if (block[i] == 0 || block[i] > p->limits.max_block[i])
            return gpuir__fail(p->ctx, GPUIR_ERR_LIMIT, "%s: block.%c is %u; the device allows 1..%u",
                               gpuir__doing_text(w), axis[i], block[i], p->limits.max_block[i]);
        if (grid[i] == 0 || grid[i] > p->limits.max_grid[i])
            return gpuir__fail(p->ctx, GPUIR_ERR_LIMIT, "%s: grid.%c is %u; the device allows 1..%u",
                               gpuir__doing_text(w), axis[i], grid[i], p->limits.max_grid[i]);
    }
    if (threads > p->limits.max_threads)
        return gpuir__fail(p->ctx, GPUIR_ERR_LIMIT, "%s: %llu threads per block; the device allows %u",
                           gpuir__doing_text(w), (unsigned long long)threads, p->limits.max_threads);
    uint64_t blocks = (uint64_t)grid[0] * grid[1] * grid[2];        /* < 2^64 */
    if (blocks > GPUIR__MAX_LAUNCH_THREADS / threads)
        return gpuir__fail(p->ctx, GPUIR_ERR_LIMIT, "%s: grid [%u, %u, %u] of %llu-thread blocks is more than 2^62 "
                           "threads (kernels index threads in 64 bits)", gpuir__doing_text(w), grid[0], grid[1],
                           grid[2], (unsigned long long)threads);
    if (p->limits.max_launch_threads && blocks * threads > p->limits.max_launch_threads)
        return gpuir__fail(p->ctx, GPUIR_ERR_LIMIT, "%s: %llu threads (grid [%u, %u, %u]); the emulator runs at most "
                           "%llu threads per launch (GPUIR_EMU_MAX_THREADS)", gpuir__doing_text(w),
                           (unsigned long long)(blocks * threads), grid[0], grid[1], grid[2],
                           (unsigned long long)p->limits.max_launch_threads);
    if ((uint64_t)shared_bytes > p->limits.max_shared)
        return gpuir__fail(p->ctx, GPUIR_ERR_LIMIT, "%s: %llu bytes of shared memory; the device allows %u",
                           gpuir__doing_text(w), (unsigned long long)shared_bytes, p->limits.max_shared);
    return GPUIR_OK;
}

/* Checks each input against its parameter and lends it to the run: the
   program reads it and writes it when the function writes that parameter. */
static gpuir_result gpuir__run_bind_one(gpuir__run *R, const gpuir__func *f, size_t i, const gpuir_array *input);
static gpuir_result gpuir__run_bind(gpuir__run *R, const gpuir__func *f, size_t n, const gpuir_array *inputs) {
    gpuir_module *m = R->p->m;
    if (n != stbds_arrlenu(f->params))
        return gpuir__fail(R->p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "@%s takes %zu inputs, %zu given",
                           gpuir__string(m, f->name), stbds_arrlenu(f->params), n);
    for (size_t i = 0; i < n; i++)
        if (gpuir__run_bind_one(R, f, i, &inputs[i])) return R->p->ctx->result;
    return GPUIR_OK;
}

/* Input i: checked against its parameter and lent to the run. */
static gpuir_result gpuir__run_bind_one(gpuir__run *R, const gpuir__func *f, size_t i, const gpuir_array *input) {
    gpuir_module *m = R->p->m;
    {
        gpuir_type want = gpuir__value_at(m, f->params[i])->type, got = gpuir__array_type(input);
        if (want.space != GPUIR_SPACE_HOST)
            return gpuir__fail(R->p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "input #%zu: parameter %%%s is in device "
                               "memory; host arrays can only be passed to host parameters", i,
                               gpuir__string(m, gpuir__value_at(m, f->params[i])->name));
        bool fits = got.dtype == want.dtype && got.rank == want.rank;
        for (int d = 0; fits && d < got.rank; d++)
            fits = want.dims[d] == got.dims[d] || (want.dims[d] == GPUIR_DYN && got.dims[d] >= 0);
        if (!fits) {
            gpuir__tbuf bw, bg;
            return gpuir__fail(R->p->ctx, got.dtype != want.dtype ? GPUIR_ERR_DTYPE : GPUIR_ERR_SHAPE,
                               "input #%zu: parameter %%%s is %s, the array is %s", i,
                               gpuir__string(m, gpuir__value_at(m, f->params[i])->name), gpuir__tstr(&bw, &want),
                               gpuir__tstr(&bg, &got));
        }
        gpuir__slot *s = &R->slots[f->params[i] - 1];
        if (gpuir__run_shape(R, f->params[i], input->dims)) return R->p->ctx->result;
        s->host = input->data;
        if (!s->host && s->bytes)
            return gpuir__fail(R->p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "input #%zu has no data", i);
    }
    return GPUIR_OK;
}

static gpuir_result gpuir__run_outputs_one(gpuir__run *R, uint32_t v, gpuir_array *out);
/* Hands the returned buffers to the caller: moved when this run allocated
   them (once), else copied. */
static gpuir_result gpuir__run_outputs(gpuir__run *R, const gpuir__op *ret, size_t n, gpuir_array *out) {
    gpuir_module *m = R->p->m;
    if (n != ret->n_operands)
        return gpuir__fail(R->p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "the function returns %u values, %zu outputs given",
                           ret->n_operands, n);
    for (size_t i = 0; i < n; i++)
        if (gpuir__run_outputs_one(R, gpuir__op_operand(m, ret, (uint32_t)i), &out[i])) return R->p->ctx->result;
    return GPUIR_OK;
}

/* Result v as a host array of the caller's (moved or copied). */
static gpuir_result gpuir__run_outputs_one(gpuir__run *R, uint32_t v, gpuir_array *out) {
    gpuir_module *m = R->p->m;
    {
        gpuir__slot *s = &R->slots[v - 1];
        const gpuir_type *t = &gpuir__value_at(m, v)->type;
        gpuir__doing w;
        gpuir__doing_fixed(&w, "returning a result");
        if (gpuir__run_check_freed(R, v, t->space == GPUIR_SPACE_DEVICE, &w)) return R->p->ctx->result;
        gpuir_array a;
        memset(&a, 0, sizeof a);
        a.dtype = t->dtype;
        a.rank = t->rank;
        memcpy(a.dims, s->dims, sizeof a.dims);
        gpuir__slot *base = &R->slots[gpuir__view_base(m, v) - 1];
        if (!s->owned && base->owned && base->host == s->host) s = base;   /* a view of a buffer it may take */
        if (s->owned) {
            a.data = s->host;
            s->owned = false;
        } else {
            a.data = GPUIR_MALLOC(s->bytes ? s->bytes : 1);
            if (!a.data) return gpuir__oom(R->p->ctx, "an output array");
            if (s->bytes) memcpy(a.data, s->host, s->bytes);
        }
        *out = a;
    }
    return GPUIR_OK;
}

/* Frees what a run still holds; device buffers left live on success are a
   placement error. */
/* Frees what value v's slot still holds and zeroes it; counts a device
   buffer still live (the plan should have freed it). */
static void gpuir__run_release_slot(gpuir__run *R, uint32_t v, size_t *leaked) {
    gpuir__slot *s = &R->slots[v - 1];
    if (s->owned) GPUIR_FREE(s->host);
    if (s->live) {
        (*leaked)++;
        R->p->drv.mem_free(R->p->drv.self, s->dev, 0);
    }
    memset(s, 0, sizeof *s);
}

/* Ends a run: only the function's parameters and results have slots in
   use, so only those are released and cleared for the next run. */
static gpuir_result gpuir__run_release(gpuir__run *R, gpuir_result r) {
    gpuir_program *p = R->p;
    const gpuir__func *f = R->f;
    size_t leaked = 0;
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++) gpuir__run_release_slot(R, f->params[i], &leaked);
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        uint32_t v = gpuir__op_at(p->m, f->ops[i])->result;
        if (v) gpuir__run_release_slot(R, v, &leaked);
    }
    if (!r && leaked)
        r = gpuir__fail(p->ctx, GPUIR_ERR_VERIFY, "%zu device buffers were never freed (a placement error)", leaked);
    return r;
}

/* ---- graphs: a function's device work recorded once, replayed ----
   With desc.graphs, a host function's first run records its device work
   (copies, launches, the streams' event waits) as one graph through the
   table, and later runs with the same parameter sizes replay it: the host
   ops still run (host allocations, constant fills, resident uploads), each
   gpu.alloc gets the device buffer it had when recorded, copies with a host
   side go through pinned staging buffers the graph owns (inputs are copied
   in where the program copies them, results out after the graph ends), and
   the launches, copies and waits are one table call. Sizes that differ
   record again. A function whose host ops read or write a buffer after a
   device-to-host copy wrote it cannot be replayed this way (its results
   reach the host only at the end) and runs op by op. */

/* A pinned staging buffer of a copy with a host side. */
typedef struct gpuir__graph_stage {
    void *host;
    size_t bytes;
    uint32_t result;        /* device to host: the host buffer it fills after the graph; else 0 */
} gpuir__graph_stage;

typedef struct gpuir__graph_buffer {
    gpuir__dptr dev;
    size_t bytes;
} gpuir__graph_buffer;

typedef struct gpuir__graph {
    uint32_t func;
    bool eligible;                  /* see gpuir__graph_eligible; decided once */
    int64_t *key;                   /* stb_ds: every parameter's dims when it was recorded */
    void *exec;                     /* the table's graph; NULL until recorded */
    gpuir__graph_buffer *buffers;   /* stb_ds: each gpu.alloc's, in op order */
    gpuir__graph_stage *stages;     /* stb_ds: each host-side gpu.memcpy's, in op order */
    gpuir_program_stats once;       /* the launches and copies of one replay */
} gpuir__graph;

/* Whether no host op but a return, a free or a view touches a host buffer
   after a device-to-host copy wrote it (the rule above). */
static bool gpuir__graph_eligible(const gpuir_module *m, const gpuir__func *f) {
    bool *written = (bool *)gpuir__calloc(stbds_arrlenu(m->values) + 1, sizeof *written);
    bool ok = written != NULL;      /* without the memory to decide: op by op */
    for (size_t i = 0; ok && i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        bool to_host = op->kind == GPUIR_OP_GPU_MEMCPY &&
                       gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type.space == GPUIR_SPACE_HOST &&
                       gpuir__value_at(m, gpuir__op_operand(m, op, 1))->type.space == GPUIR_SPACE_DEVICE;
        if (to_host) written[gpuir__view_base(m, gpuir__op_operand(m, op, 0))] = true;
        bool touches = !to_host && op->kind != GPUIR_OP_RETURN && op->kind != GPUIR_OP_MEMREF_DEALLOC &&
                       op->kind != GPUIR_OP_MEMREF_RESHAPE;
        for (uint32_t o = 0; touches && ok && o < op->n_operands; o++) {
            uint32_t v = gpuir__op_operand(m, op, o);
            ok = !written[gpuir__view_base(m, v)];
        }
    }
    GPUIR_FREE(written);
    return ok;
}

/* Frees what a graph holds and forgets its recording (the device is idle). */
static void gpuir__graph_drop(gpuir_program *p, gpuir__graph *G) {
    const gpuir__drv *d = &p->drv;
    if (G->exec) d->graph_destroy(d->self, G->exec);
    for (size_t i = 0; i < stbds_arrlenu(G->buffers); i++)
        if (G->buffers[i].dev) d->mem_free(d->self, G->buffers[i].dev, 0);
    for (size_t i = 0; i < stbds_arrlenu(G->stages); i++) d->host_free(d->self, G->stages[i].host);
    stbds_arrfree(G->buffers);
    stbds_arrfree(G->stages);
    stbds_arrfree(G->key);
    G->exec = NULL;
}

/* The graph of host function fid, made (not yet recorded) on first use. */
static gpuir__graph *gpuir__graph_of(gpuir_program *p, uint32_t fid) {
    for (size_t i = 0; i < stbds_arrlenu(p->graphs); i++)
        if (p->graphs[i].func == fid) return &p->graphs[i];
    gpuir__graph G;
    memset(&G, 0, sizeof G);
    G.func = fid;
    G.eligible = gpuir__graph_eligible(p->m, gpuir__func_at(p->m, fid));
    stbds_arrput(p->graphs, G);
    return &stbds_arrlast(p->graphs);
}

/* Whether the graph was recorded with the sizes this run's parameters have. */
static bool gpuir__graph_fits(const gpuir__run *R, const gpuir__graph *G, const gpuir__func *f) {
    size_t k = 0;
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++) {
        const gpuir__slot *s = &R->slots[f->params[i] - 1];
        for (int a = 0; a < gpuir__value_at(R->p->m, f->params[i])->type.rank; a++, k++)
            if (k >= stbds_arrlenu(G->key) || G->key[k] != s->dims[a]) return false;
    }
    return k == stbds_arrlenu(G->key);
}

static void gpuir__graph_set_key(const gpuir__run *R, gpuir__graph *G, const gpuir__func *f) {
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++)
        for (int a = 0; a < gpuir__value_at(R->p->m, f->params[i])->type.rank; a++)
            stbds_arrput(G->key, R->slots[f->params[i] - 1].dims[a]);
}

/* gpu.alloc while preparing: a new buffer the graph keeps when recording,
   else the one it kept. */
static gpuir_result gpuir__graph_alloc(gpuir__run *R, gpuir__graph *G, const gpuir__op *op, bool record, size_t *next) {
    gpuir_program *p = R->p;
    int64_t dims[GPUIR_MAX_RANK];
    gpuir__run_alloc_dims(R, op, dims);
    if (gpuir__run_shape(R, op->result, dims)) return p->ctx->result;
    gpuir__slot *s = &R->slots[op->result - 1];
    if (!record) {
        if (*next >= stbds_arrlenu(G->buffers) || G->buffers[*next].bytes != s->bytes)
            return gpuir__fail(p->ctx, GPUIR_ERR_VERIFY, "a recorded graph does not match its function (op %u)",
                               (unsigned)(op - p->m->ops) + 1);
        s->dev = G->buffers[(*next)++].dev;
        return GPUIR_OK;
    }
    gpuir__graph_buffer b = {0, s->bytes};
    if (b.bytes && gpuir__drv_check(p->ctx, &p->drv, p->drv.mem_alloc(p->drv.self, &b.dev, b.bytes, 0), "cuMemAlloc",
                                    "allocating a device buffer for a graph"))
        return p->ctx->result;
    stbds_arrput(G->buffers, b);
    s->dev = b.dev;
    return GPUIR_OK;
}

/* The host side of a gpu.memcpy (0: device to device) and whether the
   copy goes to the host. */
static uint32_t gpuir__graph_host_side(const gpuir_module *m, const gpuir__op *op, bool *to_host) {
    uint32_t dst = gpuir__op_operand(m, op, 0), src = gpuir__op_operand(m, op, 1);
    *to_host = gpuir__value_at(m, dst)->type.space == GPUIR_SPACE_HOST;
    if (*to_host) return dst;
    return gpuir__value_at(m, src)->type.space == GPUIR_SPACE_HOST ? src : 0;
}

/* gpu.memcpy while preparing: its staging buffer (new when recording);
   a copy to the device takes its data now, where the program copies it. */
static gpuir_result gpuir__graph_stage_copy(gpuir__run *R, gpuir__graph *G, const gpuir__op *op, bool record,
                                            size_t *next) {
    gpuir_program *p = R->p;
    bool to_host;
    uint32_t hv = gpuir__graph_host_side(p->m, op, &to_host);
    if (!hv) return GPUIR_OK;
    uint32_t dev = gpuir__op_operand(p->m, op, to_host ? 1 : 0);
    size_t bytes = R->slots[hv - 1].bytes;
    if (R->slots[dev - 1].bytes != bytes)
        return gpuir__fail(p->ctx, GPUIR_ERR_SHAPE, "copying %zu bytes (op %u): the other side has %zu bytes (their "
                           "dynamic sizes differ)", bytes, (unsigned)(op - p->m->ops) + 1, R->slots[dev - 1].bytes);
    gpuir__graph_stage st = {NULL, bytes, to_host ? hv : 0};
    if (record) {
        if (gpuir__drv_check(p->ctx, &p->drv, p->drv.host_alloc(p->drv.self, &st.host, bytes), "cuMemAllocHost",
                             "allocating pinned staging memory for a graph"))
            return p->ctx->result;
        stbds_arrput(G->stages, st);
    } else if (*next >= stbds_arrlenu(G->stages) || G->stages[*next].bytes != bytes)
        return gpuir__fail(p->ctx, GPUIR_ERR_VERIFY, "a recorded graph does not match its function (op %u)",
                           (unsigned)(op - p->m->ops) + 1);
    void *staging = G->stages[(*next)++].host, *host = NULL;
    if (to_host || !bytes) return GPUIR_OK;
    gpuir__doing w;
    gpuir__doing_fixed(&w, "staging a copy to the device");
    if (gpuir__run_host(R, hv, &host, &w)) return p->ctx->result;
    memcpy(staging, host, bytes);
    return GPUIR_OK;
}

/* Runs the function's host ops and readies its device buffers and
   staging; the device work waits for the graph. */
static gpuir_result gpuir__graph_prepare(gpuir__run *R, gpuir__graph *G, const gpuir__func *f, bool record) {
    size_t next_buffer = 0, next_stage = 0;
    gpuir_result r = GPUIR_OK;
    for (size_t i = 0; !r && i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(R->p->m, f->ops[i]);
        switch (op->kind) {
        case GPUIR_OP_GPU_ALLOC: r = gpuir__graph_alloc(R, G, op, record, &next_buffer); break;
        case GPUIR_OP_GPU_MEMCPY: r = gpuir__graph_stage_copy(R, G, op, record, &next_stage); break;
        case GPUIR_OP_GPU_DEALLOC: case GPUIR_OP_GPU_LAUNCH_FUNC: case GPUIR_OP_GPU_WAIT: break;
        default: r = gpuir__run_op(R, op);
        }
    }
    return r;
}

/* For the allocations and frees a graph leaves out: their streams still
   wait and record as the async pass said. */
static gpuir_result gpuir__run_nothing(gpuir__run *R, const gpuir__op *op) {
    (void)R;
    (void)op;
    return GPUIR_OK;
}

/* A captured gpu.memcpy: its host side is its staging buffer. */
static gpuir_result gpuir__graph_capture_copy(gpuir__run *R, const gpuir__op *op, void *staging) {
    bool to_host;
    uint32_t hv = gpuir__graph_host_side(R->p->m, op, &to_host);
    void *host = hv ? R->slots[hv - 1].host : NULL;
    if (hv) R->slots[hv - 1].host = staging;
    R->host_staged = true;
    gpuir_result r = gpuir__run_stream_op(R, op, gpuir__run_copy);
    R->host_staged = false;
    if (hv) R->slots[hv - 1].host = host;
    return r;
}

/* Adds to `to` the launches and copies counted in `add` but not in `sub`. */
static void gpuir__stats_add_moves(gpuir_program_stats *to, const gpuir_program_stats *add,
                                   const gpuir_program_stats *sub) {
    to->launches += add->launches - sub->launches;
    to->h2d_copies += add->h2d_copies - sub->h2d_copies;
    to->h2d_bytes += add->h2d_bytes - sub->h2d_bytes;
    to->d2h_copies += add->d2h_copies - sub->d2h_copies;
    to->d2h_bytes += add->d2h_bytes - sub->d2h_bytes;
}

/* Records the function's device work as the graph (prepared first). */
static gpuir_result gpuir__graph_record(gpuir__run *R, gpuir__graph *G, const gpuir__func *f) {
    gpuir_program *p = R->p;
    const gpuir__drv *d = &p->drv;
    gpuir_program_stats before = p->stats;
    if (gpuir__drv_check(p->ctx, d, d->capture_begin(d->self, p->n_streams), "cuStreamBeginCapture",
                         "recording a graph"))
        return p->ctx->result;
    gpuir_result r = GPUIR_OK;
    for (size_t i = 0, stage = 0; !r && i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(p->m, f->ops[i]);
        bool to_host;
        switch (op->kind) {
        case GPUIR_OP_GPU_MEMCPY:
            r = gpuir__graph_capture_copy(R, op, gpuir__graph_host_side(p->m, op, &to_host) ? G->stages[stage++].host : NULL);
            break;
        case GPUIR_OP_GPU_LAUNCH_FUNC: r = gpuir__run_stream_op(R, op, gpuir__run_launch); break;
        case GPUIR_OP_GPU_ALLOC: case GPUIR_OP_GPU_DEALLOC: r = gpuir__run_stream_op(R, op, gpuir__run_nothing); break;
        default: break;
        }
    }
    int rc = d->capture_end(d->self, &G->exec);
    if (!r) r = gpuir__drv_check(p->ctx, d, rc, "cuStreamEndCapture", "recording a graph");
    if (r && G->exec) d->graph_destroy(d->self, G->exec);      /* a part of the work: never replayed */
    if (r) G->exec = NULL;
    memset(&G->once, 0, sizeof G->once);
    gpuir__stats_add_moves(&G->once, &p->stats, &before);
    return r;
}

/* Runs a function through its graph: recorded first when there is none
   for these sizes, then launched. The results reach the host in
   gpuir__graph_finish, after the device is done. */
static gpuir_result gpuir__graph_run(gpuir__run *R, gpuir__graph *G, const gpuir__func *f) {
    gpuir_program *p = R->p;
    bool record = !G->exec || !gpuir__graph_fits(R, G, f);
    if (record) {
        gpuir__graph_drop(p, G);
        gpuir__graph_set_key(R, G, f);
    }
    gpuir_result r = gpuir__graph_prepare(R, G, f, record);
    if (!r && record) r = gpuir__graph_record(R, G, f);
    if (r) return r;
    if (record) p->stats.graph_records++;
    else {
        gpuir_program_stats none;
        memset(&none, 0, sizeof none);
        p->stats.graph_replays++;
        gpuir__stats_add_moves(&p->stats, &G->once, &none);
    }
    return gpuir__drv_check(p->ctx, &p->drv, p->drv.graph_launch(p->drv.self, G->exec), "cuGraphLaunch",
                            "launching a recorded graph");
}

/* After the device is done: results from staging into their host buffers
   (those the function has not freed); a recording that failed is dropped. */
static void gpuir__graph_finish(gpuir__run *R, gpuir__graph *G, gpuir_result r) {
    if (r) {
        if (!G->exec) gpuir__graph_drop(R->p, G);
        return;
    }
    for (size_t i = 0; i < stbds_arrlenu(G->stages); i++) {
        const gpuir__graph_stage *st = &G->stages[i];
        void *host = st->result ? R->slots[st->result - 1].host : NULL;
        if (host && st->bytes) memcpy(host, st->host, st->bytes);
    }
}

/* Makes a program's run slots on its first run (one per module value). */
static gpuir_result gpuir__run_slots(gpuir_program *p) {
    size_t n_values = stbds_arrlenu(p->m->values);
    if (p->n_run_slots == n_values) return GPUIR_OK;
    GPUIR_FREE(p->run_slots);
    GPUIR_FREE(p->launch_kernel);
    GPUIR_FREE(p->run_skip);
    p->run_slots = (gpuir__slot *)gpuir__calloc(n_values + 1, sizeof *p->run_slots);
    p->launch_kernel = (uint32_t *)gpuir__calloc(stbds_arrlenu(p->m->ops) + 1, sizeof *p->launch_kernel);
    p->run_skip = (uint8_t *)gpuir__calloc(stbds_arrlenu(p->m->ops) + 1, 1);
    p->n_run_slots = p->run_slots && p->launch_kernel && p->run_skip ? n_values : 0;
    p->n_launch_kernel = p->n_run_slots ? stbds_arrlenu(p->m->ops) : 0;
    return p->n_run_slots ? GPUIR_OK : gpuir__oom(p->ctx, "a run");
}

/* The function a run names, or the module's only host function. */
static uint32_t gpuir__program_func(gpuir_program *p, const char *name) {
    gpuir_module *m = p->m;
    if (name) {
        uint32_t f = gpuir__find_func(m, name);
        if (f && !m->funcs[f - 1].kernel) return f;
        gpuir__fail(p->ctx, GPUIR_ERR_NOT_FOUND, "no host function @%s", name);
        return 0;
    }
    uint32_t found = 0, count = 0;
    for (size_t i = 0; i < stbds_arrlenu(m->funcs); i++)
        if (!m->funcs[i].kernel) { found = (uint32_t)i + 1; count++; }
    if (count == 1) return found;
    gpuir__fail(p->ctx, GPUIR_ERR_NOT_FOUND, "the module has %u host functions; name one", count);
    return 0;
}

GPUIRDEF gpuir_result gpuir_program_run(gpuir_program *p, const char *func, size_t n_inputs,
                                        const gpuir_array *inputs, size_t n_outputs, gpuir_array *outputs) {
    if (outputs && n_outputs) memset(outputs, 0, n_outputs * sizeof *outputs);  /* releasable */
    if (!p) return GPUIR_ERR_INVALID_ARGUMENT;  /* a failed make: its context has the error */
    gpuir_ctx *ctx = p->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    if (p->backend == GPUIR_BACKEND_REF) return gpuir_ref_run(p->m, func, n_inputs, inputs, n_outputs, outputs);
    if (gpuir__run_args_check(ctx, n_inputs, inputs, n_outputs, outputs)) return ctx->result;
    if (gpuir__drv_alive(ctx, &p->drv)) return ctx->result;
    uint32_t fid = gpuir__program_func(p, func);
    if (!fid) return ctx->result;
    const gpuir__func *f = gpuir__func_at(p->m, fid);
    if (gpuir__run_slots(p)) return ctx->result;
    gpuir__run R;
    R.p = p;
    R.f = f;
    R.slots = p->run_slots;
    R.async = false;
    R.caller = NULL;
    R.host_staged = false;
    p->stats.runs++;
    double t0 = ctx->log_level >= 2 ? gpuir__now_ms() : 0;
    gpuir_result r = gpuir__drv_check(ctx, &p->drv, p->drv.enter(p->drv.self), "cuCtxPushCurrent", "starting a run");
    bool entered = r == GPUIR_OK;
    if (!r) r = gpuir__run_bind(&R, f, n_inputs, inputs);
    if (!r) r = gpuir__run_reserve(&R);
    gpuir__graph *G = !r && p->desc.graphs ? gpuir__graph_of(p, fid) : NULL;
    if (G && !G->eligible) G = NULL;
    if (G) r = gpuir__graph_run(&R, G, f);
    for (size_t i = 0; !r && !G && i < stbds_arrlenu(f->ops); i++) r = gpuir__run_op(&R, gpuir__op_at(p->m, f->ops[i]));
    if (entered) {      /* queued work and frees finish even after a failure */
        int rc = p->drv.synchronize(p->drv.self);
        if (!r) r = gpuir__drv_check(ctx, &p->drv, rc, "cuCtxSynchronize", "finishing a run");
    }
    if (G) gpuir__graph_finish(&R, G, r);
    const gpuir__op *ret = stbds_arrlenu(f->ops) ? gpuir__op_at(p->m, stbds_arrlast(f->ops)) : NULL;
    if (ret && ret->kind != GPUIR_OP_RETURN) ret = NULL;
    if (!r && ret) r = gpuir__run_outputs(&R, ret, n_outputs, outputs);
    r = gpuir__run_release(&R, r);
    if (entered) {
        gpuir_result lr = gpuir__drv_check(ctx, &p->drv, p->drv.leave(p->drv.self), "cuCtxPopCurrent", "ending a run");
        if (!r) r = lr;
    }
    for (size_t i = 0; r && i < n_outputs; i++) gpuir_array_release(&outputs[i]);   /* a failed run: empty */
    if (ctx->log_level >= 2)
        gpuir__logf(ctx, 2, "run @%s on %s: %.3f ms%s%s", func, gpuir_backend_name(p->backend), gpuir__now_ms() - t0,
                    G ? " (graph replay)" : "", r ? " (failed)" : "");
    return r;
}

/* ---- the context's devices: device buffers, pinned memory, streams ----
   Buffers, pinned host memory and caller's streams belong to the context,
   not to a program: they go through a device table of the context's own
   (CUDA: over the context's CUDA state, shared with its programs; the
   emulator: one emulated device whose memory every emulated program can
   use, since emulated device memory is host memory). Ids of buffers carry
   the context's tag and a generation, so a stale or foreign id is caught. */

#define GPUIR__XSTREAM_MAGIC 0x78737472u    /* "xstr" */

/* An emulated caller's stream: which program holds its latest work (queued
   until the host waits), and the event recorded after that work. */
typedef struct gpuir__xstream {
    uint32_t magic;
    gpuir_program *tail;
    unsigned tail_event;
} gpuir__xstream;

typedef struct gpuir__device {
    gpuir_backend backend;
    gpuir__drv drv;
    struct gpuir__fault *fault;     /* tests: the table wrapped (ctx->fault) */
    struct gpuir__emu *emu;         /* the emulator's device, or NULL */
} gpuir__device;

typedef struct gpuir__bufslot {
    uint32_t gen;           /* bumped when destroyed: older ids are stale */
    bool live, owned;
    gpuir_backend backend;
    gpuir_type type;        /* a device memref */
    gpuir__dptr ptr;
    size_t bytes;
} gpuir__bufslot;

typedef struct gpuir__pinned {
    void *p;
    size_t bytes;
    gpuir_backend backend;
    bool registered;        /* the caller's memory (else gpuir_host_alloc's) */
} gpuir__pinned;

typedef struct gpuir__stream_entry {
    void *stream;
    gpuir_backend backend;
} gpuir__stream_entry;

static struct gpuir__emu *gpuir__emu_make(uint64_t seed, gpuir__drv *out);
static void gpuir__emu_free(struct gpuir__emu *E);
static gpuir__drv gpuir__cudart_table(gpuir__cudart *C);
static gpuir_result gpuir__fault_wrap_drv(gpuir_ctx *ctx, gpuir__drv *drv, struct gpuir__fault **out);

/* What AUTO means for the context's devices: CUDA when usable, decided once. */
static gpuir_backend gpuir__ctx_auto(gpuir_ctx *ctx, int device) {
    if (ctx->auto_backend) return (gpuir_backend)ctx->auto_backend;
    gpuir_result saved = ctx->result;
    if (!ctx->cuda && saved == GPUIR_OK) {
        ctx->cuda = gpuir__cudart_open(ctx, device);
        if (!ctx->cuda) gpuir_ctx_clear_error(ctx);
    }
    ctx->auto_backend = ctx->cuda ? GPUIR_BACKEND_CUDA : GPUIR_BACKEND_EMU;
    return (gpuir_backend)ctx->auto_backend;
}

/* The context's device of a backend (AUTO resolved), made on first use;
   NULL with the context's error when it cannot be. */
static gpuir__device *gpuir__ctx_device(gpuir_ctx *ctx, gpuir_backend backend, int device) {
    if (backend == GPUIR_BACKEND_AUTO) backend = gpuir__ctx_auto(ctx, device);
    if (backend != GPUIR_BACKEND_CUDA && backend != GPUIR_BACKEND_EMU) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "backend %s has no device memory (cuda or emu)",
                    gpuir_backend_name(backend));
        return NULL;
    }
    int k = backend == GPUIR_BACKEND_CUDA ? 0 : 1;
    if (ctx->devices[k]) {
        if (k == 0 && ctx->cuda->dev.ordinal != device) {
            gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "device %d: this context's buffers, pinned memory and "
                        "streams are on CUDA device %d", device, ctx->cuda->dev.ordinal);
            return NULL;
        }
        return ctx->devices[k];
    }
    gpuir__device *D = (gpuir__device *)gpuir__calloc(1, sizeof *D);
    if (!D) { gpuir__oom(ctx, "a device"); return NULL; }
    D->backend = backend;
    if (k == 0) {
        if (!ctx->cuda) ctx->cuda = gpuir__cudart_open(ctx, device);
        if (ctx->cuda) D->drv = gpuir__cudart_table(ctx->cuda);
    } else {
        D->emu = gpuir__emu_make(0, &D->drv);
        if (!D->emu) gpuir__oom(ctx, "the emulator");
    }
    if ((k == 0 && !ctx->cuda) || (k == 1 && !D->emu) ||
        (ctx->fault.fail_at && gpuir__fault_wrap_drv(ctx, &D->drv, &D->fault))) {
        if (D->emu) gpuir__emu_free(D->emu);
        GPUIR_FREE(D);
        return NULL;
    }
    ctx->devices[k] = D;
    return gpuir__ctx_device(ctx, backend, device);
}

/* A 32-bit tag of the context in every id it gives (never 0). */
static uint32_t gpuir__ctx_tag(const gpuir_ctx *ctx) {
    uint64_t x = (uint64_t)(uintptr_t)ctx * 0x9e3779b97f4a7c15ull;
    uint32_t tag = (uint32_t)(x >> 32);
    return tag ? tag : 1;
}

/* The live buffer slot of b, or NULL with an error naming `what`. */
static gpuir__bufslot *gpuir__buffer_get(gpuir_ctx *ctx, gpuir_buffer b, const char *what) {
    uint32_t index = (uint32_t)(b.id & 0xfffff), gen = (uint32_t)(b.id >> 20) & 0xfff;
    if (!b.id) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: no buffer (id 0: a failed gpuir_buffer_make?)", what);
        return NULL;
    }
    if ((uint32_t)(b.id >> 32) != gpuir__ctx_tag(ctx)) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: the buffer belongs to another context", what);
        return NULL;
    }
    gpuir__bufslot *B = index && index <= stbds_arrlenu(ctx->buffers) ? &ctx->buffers[index - 1] : NULL;
    if (!B || !B->live || (B->gen & 0xfff) != gen) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: the buffer was destroyed", what);
        return NULL;
    }
    return B;
}

/* Checks a buffer or array of type got against type want (dims exact,
   or any size for want's dynamic ones). */
static gpuir_result gpuir__type_fits(gpuir_ctx *ctx, gpuir_type want, gpuir_type got, const char *what) {
    bool fits = got.dtype == want.dtype && got.rank == want.rank;
    for (int d = 0; fits && d < got.rank; d++)
        fits = want.dims[d] == got.dims[d] || (want.dims[d] == GPUIR_DYN && got.dims[d] >= 0);
    if (fits) return GPUIR_OK;
    gpuir__tbuf bw, bg;
    return gpuir__fail(ctx, got.dtype != want.dtype ? GPUIR_ERR_DTYPE : GPUIR_ERR_SHAPE, "%s: %s is wanted, the "
                       "argument is %s", what, gpuir__tstr(&bw, &want), gpuir__tstr(&bg, &got));
}

/* The bytes of a dense array of this dtype and static shape; fails (naming
   `what`) on a bad dtype or rank, a negative dim or more than
   max_tensor_bytes. */
static gpuir_result gpuir__shape_bytes(gpuir_ctx *ctx, gpuir_dtype dtype, int rank, const int64_t *dims,
                                       uint64_t *bytes, const char *what) {
    if (rank < 0 || rank > GPUIR_MAX_RANK || !gpuir_dtype_size(dtype) || (rank && !dims))
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: the dtype, rank or dims are invalid", what);
    int64_t n = (int64_t)gpuir_dtype_size(dtype);
    bool fits = true;
    for (int i = 0; i < rank; i++) fits = fits && dims[i] >= 0 && gpuir__mul_i64(n, dims[i], &n);
    if (!fits || (uint64_t)n > ctx->desc.max_tensor_bytes || (uint64_t)n > SIZE_MAX / 2)
        return gpuir__fail(ctx, GPUIR_ERR_LIMIT, "%s: a negative dim, or more than max_tensor_bytes (%llu)", what,
                           (unsigned long long)ctx->desc.max_tensor_bytes);
    *bytes = (uint64_t)n;
    return GPUIR_OK;
}

GPUIRDEF gpuir_buffer gpuir_buffer_make(gpuir_ctx *ctx, const gpuir_buffer_desc *desc) {
    gpuir_buffer none = {0};
    if (!ctx || ctx->result != GPUIR_OK) return none;
    if (!desc) { gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_buffer_make: desc is NULL"); return none; }
    uint64_t bytes;
    if (gpuir__shape_bytes(ctx, desc->dtype, desc->rank, desc->dims, &bytes, "gpuir_buffer_make")) return none;
    gpuir_type t = gpuir_memref_type(desc->dtype, desc->rank, desc->dims, GPUIR_SPACE_DEVICE);
    if (stbds_arrlenu(ctx->buffers) >= 0xfffff) {
        gpuir__fail(ctx, GPUIR_ERR_LIMIT, "gpuir_buffer_make: more than %u buffers", 0xfffffu - 1);
        return none;
    }
    gpuir__device *D = gpuir__ctx_device(ctx, desc->backend, desc->device);
    if (!D) return none;
    gpuir__bufslot B;
    memset(&B, 0, sizeof B);
    B.backend = D->backend;
    B.type = t;
    B.bytes = (size_t)bytes;
    B.ptr = desc->device_ptr;
    B.owned = !desc->device_ptr;
    if (B.owned && bytes) {
        int rc = D->drv.enter(D->drv.self);
        if (!rc) {
            rc = D->drv.mem_alloc(D->drv.self, &B.ptr, B.bytes, 0);
            int lrc = D->drv.leave(D->drv.self);
            if (!rc && lrc) { D->drv.enter(D->drv.self); D->drv.mem_free(D->drv.self, B.ptr, 0); D->drv.leave(D->drv.self); }
            if (!rc) rc = lrc;
        }
        char what[96];
        snprintf(what, sizeof what, "allocating a device buffer of %zu bytes", B.bytes);
        if (gpuir__drv_check(ctx, &D->drv, rc, "cuMemAlloc", what)) return none;
    }
    B.live = true;
    size_t index = 0;
    while (index < stbds_arrlenu(ctx->buffers) && ctx->buffers[index].live) index++;
    if (index < stbds_arrlenu(ctx->buffers)) B.gen = ctx->buffers[index].gen;
    if (index == stbds_arrlenu(ctx->buffers)) stbds_arrput(ctx->buffers, B);
    else ctx->buffers[index] = B;
    gpuir_buffer b;
    b.id = (uint64_t)gpuir__ctx_tag(ctx) << 32 | (uint64_t)(B.gen & 0xfff) << 20 | (uint64_t)(index + 1);
    return b;
}

/* Frees a slot's owned memory and retires its id; the free's CUresult. */
static int gpuir__buffer_free(gpuir_ctx *ctx, gpuir__bufslot *B) {
    gpuir__device *D = ctx->devices[B->backend == GPUIR_BACKEND_CUDA ? 0 : 1];
    int rc = 0;
    if (B->owned && B->ptr && D) {          /* freed even when entering fails, as a dead context would */
        int erc = D->drv.enter(D->drv.self);
        rc = D->drv.mem_free(D->drv.self, B->ptr, 0);
        int lrc = erc ? 0 : D->drv.leave(D->drv.self);
        rc = erc ? erc : rc ? rc : lrc;
    }
    B->live = false;
    B->gen++;
    B->ptr = 0;
    return rc;
}

/* A destroyed buffer's id is stale at once; a failed free is reported (the
   memory is gone either way). After an error it still frees, quietly. */
GPUIRDEF void gpuir_buffer_destroy(gpuir_ctx *ctx, gpuir_buffer b) {
    if (!ctx || !b.id || !gpuir_buffer_valid(ctx, b)) {
        if (ctx && b.id && ctx->result == GPUIR_OK) gpuir__buffer_get(ctx, b, "gpuir_buffer_destroy");
        return;
    }
    gpuir__bufslot *B = &ctx->buffers[(b.id & 0xfffff) - 1];
    gpuir__device *D = ctx->devices[B->backend == GPUIR_BACKEND_CUDA ? 0 : 1];
    int rc = gpuir__buffer_free(ctx, B);
    if (rc && ctx->result == GPUIR_OK) gpuir__drv_check(ctx, &D->drv, rc, "cuMemFree", "destroying a device buffer");
}

GPUIRDEF bool gpuir_buffer_valid(gpuir_ctx *ctx, gpuir_buffer b) {
    if (!ctx || !b.id || (uint32_t)(b.id >> 32) != gpuir__ctx_tag(ctx)) return false;
    uint32_t index = (uint32_t)(b.id & 0xfffff), gen = (uint32_t)(b.id >> 20) & 0xfff;
    return index && index <= stbds_arrlenu(ctx->buffers) && ctx->buffers[index - 1].live &&
           (ctx->buffers[index - 1].gen & 0xfff) == gen;
}

GPUIRDEF uint64_t gpuir_buffer_device_ptr(gpuir_ctx *ctx, gpuir_buffer b) {
    return gpuir_buffer_valid(ctx, b) ? ctx->buffers[(b.id & 0xfffff) - 1].ptr : 0;
}

GPUIRDEF gpuir_type gpuir_buffer_type(gpuir_ctx *ctx, gpuir_buffer b) {
    gpuir_type none;
    memset(&none, 0, sizeof none);
    return gpuir_buffer_valid(ctx, b) ? ctx->buffers[(b.id & 0xfffff) - 1].type : none;
}

/* The pinned range holding [p, p + bytes), or NULL. */
static const gpuir__pinned *gpuir__pinned_find(const gpuir_ctx *ctx, const void *p, size_t bytes) {
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; p && i < stbds_arrlenu(ctx->pinned); i++) {
        uintptr_t lo = (uintptr_t)ctx->pinned[i].p;
        if (a >= lo && a - lo <= ctx->pinned[i].bytes && bytes <= ctx->pinned[i].bytes - (a - lo))
            return &ctx->pinned[i];
    }
    return NULL;
}

GPUIRDEF bool gpuir_host_is_pinned(gpuir_ctx *ctx, const void *p, size_t bytes) {
    return ctx && gpuir__pinned_find(ctx, p, bytes) != NULL;
}

GPUIRDEF void *gpuir_host_alloc(gpuir_ctx *ctx, gpuir_backend backend, size_t bytes) {
    if (!ctx || ctx->result != GPUIR_OK) return NULL;
    gpuir__device *D = gpuir__ctx_device(ctx, backend, 0);
    if (!D) return NULL;
    void *p = NULL;
    int rc = D->drv.enter(D->drv.self);
    if (!rc) {
        rc = D->drv.host_alloc(D->drv.self, &p, bytes ? bytes : 1);
        int lrc = D->drv.leave(D->drv.self);
        if (!rc && lrc) { D->drv.host_free(D->drv.self, p); p = NULL; }
        if (!rc) rc = lrc;
    }
    char what[80];
    snprintf(what, sizeof what, "allocating %zu bytes of pinned host memory", bytes);
    if (gpuir__drv_check(ctx, &D->drv, rc, "cuMemHostAlloc", what)) return NULL;
    gpuir__pinned e = {p, bytes, D->backend, false};
    stbds_arrput(ctx->pinned, e);
    return p;
}

/* Index of the pinned entry starting at p, or -1. */
static ptrdiff_t gpuir__pinned_index(const gpuir_ctx *ctx, const void *p) {
    for (size_t i = 0; p && i < stbds_arrlenu(ctx->pinned); i++)
        if (ctx->pinned[i].p == p) return (ptrdiff_t)i;
    return -1;
}

/* Unpins entry i (frees it when gpuir allocated it); drops it. */
static int gpuir__pinned_drop(gpuir_ctx *ctx, size_t i) {
    gpuir__pinned e = ctx->pinned[i];
    stbds_arrdel(ctx->pinned, i);
    gpuir__device *D = ctx->devices[e.backend == GPUIR_BACKEND_CUDA ? 0 : 1];
    if (!D) return 0;
    int erc = D->drv.enter(D->drv.self);     /* released even when entering fails */
    int rc = e.registered ? D->drv.host_unregister(D->drv.self, e.p) : D->drv.host_free(D->drv.self, e.p);
    int lrc = erc ? 0 : D->drv.leave(D->drv.self);
    return erc ? erc : rc ? rc : lrc;
}

GPUIRDEF void gpuir_host_free(gpuir_ctx *ctx, void *p) {
    if (!ctx || !p) return;
    ptrdiff_t i = gpuir__pinned_index(ctx, p);
    if (i < 0 || ctx->pinned[i].registered) {
        if (ctx->result == GPUIR_OK)
            gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_host_free: %p is not memory gpuir_host_alloc "
                        "gave%s", p, i >= 0 ? " (it is registered: gpuir_host_unregister)" : "");
        return;
    }
    gpuir__device *D = ctx->devices[ctx->pinned[i].backend == GPUIR_BACKEND_CUDA ? 0 : 1];
    int rc = gpuir__pinned_drop(ctx, (size_t)i);
    if (rc && D && ctx->result == GPUIR_OK) gpuir__drv_check(ctx, &D->drv, rc, "cuMemFreeHost", "freeing pinned memory");
}

GPUIRDEF gpuir_result gpuir_host_register(gpuir_ctx *ctx, gpuir_backend backend, void *p, size_t bytes) {
    if (!ctx) return GPUIR_ERR_INVALID_ARGUMENT;
    if (ctx->result != GPUIR_OK) return ctx->result;
    if (!p || !bytes)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_host_register: %s", !p ? "p is NULL" : "bytes is 0");
    if (gpuir__pinned_find(ctx, p, 1) || gpuir__pinned_find(ctx, (const char *)p + bytes - 1, 1))
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_host_register: %p (%zu bytes) overlaps memory "
                           "that is already pinned", p, bytes);
    gpuir__device *D = gpuir__ctx_device(ctx, backend, 0);
    if (!D) return ctx->result;
    int rc = D->drv.enter(D->drv.self);
    if (!rc) {
        rc = D->drv.host_register(D->drv.self, p, bytes);
        int lrc = D->drv.leave(D->drv.self);
        if (!rc && lrc) D->drv.host_unregister(D->drv.self, p);
        if (!rc) rc = lrc;
    }
    char what[96];
    snprintf(what, sizeof what, "pinning %zu bytes of host memory at %p", bytes, p);
    if (gpuir__drv_check(ctx, &D->drv, rc, "cuMemHostRegister", what)) return ctx->result;
    gpuir__pinned e = {p, bytes, D->backend, true};
    stbds_arrput(ctx->pinned, e);
    return GPUIR_OK;
}

/* A release: it unpins even after an error (keeping that error), so the
   caller can free the memory and never leaves a stale range behind. */
GPUIRDEF gpuir_result gpuir_host_unregister(gpuir_ctx *ctx, void *p) {
    if (!ctx) return GPUIR_ERR_INVALID_ARGUMENT;
    ptrdiff_t i = gpuir__pinned_index(ctx, p);
    if (i < 0 || !ctx->pinned[i].registered)
        return ctx->result ? ctx->result
                           : gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_host_unregister: %p is not "
                                         "registered memory", p);
    gpuir__device *D = ctx->devices[ctx->pinned[i].backend == GPUIR_BACKEND_CUDA ? 0 : 1];
    int rc = gpuir__pinned_drop(ctx, (size_t)i);
    if (ctx->result != GPUIR_OK) return ctx->result;
    return D ? gpuir__drv_check(ctx, &D->drv, rc, "cuMemHostUnregister", "unpinning host memory") : GPUIR_OK;
}

GPUIRDEF gpuir_result gpuir_array_alloc_pinned(gpuir_ctx *ctx, gpuir_backend backend, gpuir_array *a,
                                               gpuir_dtype dtype, int rank, const int64_t *dims) {
    if (!ctx || !a) return ctx ? gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_array_alloc_pinned: a is NULL")
                               : GPUIR_ERR_INVALID_ARGUMENT;
    memset(a, 0, sizeof *a);
    if (ctx->result != GPUIR_OK) return ctx->result;
    uint64_t bytes;
    if (gpuir__shape_bytes(ctx, dtype, rank, dims, &bytes, "gpuir_array_alloc_pinned")) return ctx->result;
    void *p = gpuir_host_alloc(ctx, backend, (size_t)bytes);
    if (!p) return ctx->result;
    memset(p, 0, (size_t)bytes);
    a->dtype = dtype;
    a->rank = rank;
    for (int i = 0; i < rank; i++) a->dims[i] = dims[i];
    a->data = p;
    return GPUIR_OK;
}

GPUIRDEF void gpuir_array_release_pinned(gpuir_ctx *ctx, gpuir_array *a) {
    if (!a) return;
    if (a->data) gpuir_host_free(ctx, a->data);
    a->data = NULL;
}

/* ---- the caller's streams ---- */

static gpuir__stream_entry *gpuir__stream_find(gpuir_ctx *ctx, const void *stream) {
    for (size_t i = 0; stream && i < stbds_arrlenu(ctx->streams); i++)
        if (ctx->streams[i].stream == stream) return &ctx->streams[i];
    return NULL;
}

/* Checks a caller's stream for a backend: the emulator takes only its own
   streams; CUDA takes any CUstream but the emulator's (the driver checks it). */
static gpuir_result gpuir__stream_check(gpuir_ctx *ctx, gpuir_backend backend, const void *stream, const char *what) {
    if (!stream) return GPUIR_OK;
    const gpuir__stream_entry *e = gpuir__stream_find(ctx, stream);
    if (backend == GPUIR_BACKEND_EMU && (!e || e->backend != GPUIR_BACKEND_EMU))
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: %p is not an emulator stream of this context "
                           "(gpuir_stream_make)", what, stream);
    if (backend == GPUIR_BACKEND_CUDA && e && e->backend != GPUIR_BACKEND_CUDA)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: an emulator stream, given to CUDA", what);
    return GPUIR_OK;
}

/* The host waits for an emulated stream's latest work (held by a program):
   for the event after it (`all`: for all that program's work). */
static gpuir_result gpuir__xstream_wait(gpuir_ctx *ctx, gpuir__xstream *x, bool all) {
    gpuir_program *t = x->tail;
    if (!t) return GPUIR_OK;
    x->tail = NULL;
    int rc = t->drv.enter(t->drv.self);
    if (!rc) rc = all ? t->drv.stream_synchronize(t->drv.self, x) : t->drv.event_synchronize(t->drv.self, x->tail_event);
    int lrc = t->drv.leave(t->drv.self);
    return gpuir__drv_check(ctx, &t->drv, rc ? rc : lrc, all ? "cuStreamSynchronize" : "cuEventSynchronize",
                            "waiting for the caller's stream");
}
static gpuir_result gpuir__xstream_drain(gpuir_ctx *ctx, gpuir__xstream *x) { return gpuir__xstream_wait(ctx, x, false); }

/* Forgets program p as the holder of emulated streams' work (it is done). */
static void gpuir__xstream_forget(gpuir_ctx *ctx, const gpuir_program *p) {
    for (size_t i = 0; i < stbds_arrlenu(ctx->streams); i++) {
        gpuir__xstream *x = ctx->streams[i].backend == GPUIR_BACKEND_EMU ? (gpuir__xstream *)ctx->streams[i].stream : NULL;
        if (x && x->tail == p) x->tail = NULL;
    }
}

GPUIRDEF gpuir_stream gpuir_stream_make(gpuir_ctx *ctx, gpuir_backend backend) {
    if (!ctx || ctx->result != GPUIR_OK) return NULL;
    gpuir__device *D = gpuir__ctx_device(ctx, backend, ctx->cuda ? ctx->cuda->dev.ordinal : 0);
    if (!D) return NULL;
    void *stream = NULL;
    int rc = D->drv.enter(D->drv.self);
    if (!rc) {
        rc = D->drv.stream_create(D->drv.self, &stream);
        int lrc = D->drv.leave(D->drv.self);
        if (!rc && lrc) D->drv.stream_destroy(D->drv.self, stream);
        if (!rc) rc = lrc;
    }
    if (gpuir__drv_check(ctx, &D->drv, rc, "cuStreamCreate", "making a stream")) return NULL;
    gpuir__stream_entry e = {stream, D->backend};
    stbds_arrput(ctx->streams, e);
    return stream;
}

/* Destroys entry i's stream (its work finished first on the emulator). */
static int gpuir__stream_drop(gpuir_ctx *ctx, size_t i) {
    gpuir__stream_entry e = ctx->streams[i];
    stbds_arrdel(ctx->streams, i);
    gpuir__device *D = ctx->devices[e.backend == GPUIR_BACKEND_CUDA ? 0 : 1];
    gpuir__xstream *x = e.backend == GPUIR_BACKEND_EMU ? (gpuir__xstream *)e.stream : NULL;
    if (x && x->tail) x->tail->drv.stream_synchronize(x->tail->drv.self, x);
    int erc = D->drv.enter(D->drv.self);     /* destroyed even when entering fails */
    int rc = D->drv.stream_destroy(D->drv.self, e.stream);
    int lrc = erc ? 0 : D->drv.leave(D->drv.self);
    return erc ? erc : rc ? rc : lrc;
}

GPUIRDEF void gpuir_stream_destroy(gpuir_ctx *ctx, gpuir_stream stream) {
    if (!ctx || !stream) return;
    gpuir__stream_entry *e = gpuir__stream_find(ctx, stream);
    if (!e) {
        if (ctx->result == GPUIR_OK)
            gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_stream_destroy: %p is not a stream "
                        "gpuir_stream_make made", stream);
        return;
    }
    gpuir__device *D = ctx->devices[e->backend == GPUIR_BACKEND_CUDA ? 0 : 1];
    int rc = gpuir__stream_drop(ctx, (size_t)(e - ctx->streams));
    if (ctx->result == GPUIR_OK) gpuir__drv_check(ctx, &D->drv, rc, "cuStreamDestroy", "destroying a stream");
}

GPUIRDEF gpuir_result gpuir_stream_synchronize(gpuir_ctx *ctx, gpuir_stream stream) {
    if (!ctx) return GPUIR_ERR_INVALID_ARGUMENT;
    if (ctx->result != GPUIR_OK) return ctx->result;
    if (!stream) return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_stream_synchronize: stream is NULL");
    const gpuir__stream_entry *e = gpuir__stream_find(ctx, stream);
    if (e && e->backend == GPUIR_BACKEND_EMU) return gpuir__xstream_wait(ctx, (gpuir__xstream *)stream, true);
    if (!e && !ctx->devices[0] && !ctx->cuda)
        return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_stream_synchronize: %p is not a stream of "
                           "this context (gpuir_stream_make), and it has no CUDA device", stream);
    gpuir__device *D = gpuir__ctx_device(ctx, GPUIR_BACKEND_CUDA, ctx->cuda ? ctx->cuda->dev.ordinal : 0);
    if (!D) return ctx->result;
    int rc = D->drv.enter(D->drv.self);
    if (!rc) {
        rc = D->drv.stream_synchronize(D->drv.self, stream);
        int lrc = D->drv.leave(D->drv.self);
        if (!rc) rc = lrc;
    }
    return gpuir__drv_check(ctx, &D->drv, rc, "cuStreamSynchronize", "waiting for a stream");
}

/* ---- uploads and downloads ---- */

/* A copy between buffer b and array a, on the caller's stream if given:
   asynchronous from and to pinned memory, else done before it returns. */
static gpuir_result gpuir__buffer_copy(gpuir_ctx *ctx, gpuir_buffer b, gpuir_array *a, gpuir_stream stream, bool up) {
    const char *fn = up ? "gpuir_buffer_upload" : "gpuir_buffer_download";
    if (!ctx) return GPUIR_ERR_INVALID_ARGUMENT;
    if (ctx->result != GPUIR_OK) return ctx->result;
    gpuir__bufslot *B = gpuir__buffer_get(ctx, b, fn);
    if (!B) return ctx->result;
    if (!a) return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: the array is NULL", fn);
    char what[64];
    snprintf(what, sizeof what, "%s: the array", fn);
    if (a->rank < 0 || a->rank > GPUIR_MAX_RANK) return gpuir__fail(ctx, GPUIR_ERR_SHAPE, "%s has rank %d", what, a->rank);
    if (gpuir__type_fits(ctx, B->type, gpuir_memref_type(a->dtype, a->rank, a->dims, GPUIR_SPACE_DEVICE), what))
        return ctx->result;
    if (!B->bytes) return GPUIR_OK;
    if (!a->data) return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s has no data", what);
    if (gpuir__stream_check(ctx, B->backend, stream, fn)) return ctx->result;
    if (stream && B->backend == GPUIR_BACKEND_EMU && gpuir__xstream_drain(ctx, (gpuir__xstream *)stream))
        return ctx->result;
    gpuir__device *D = ctx->devices[B->backend == GPUIR_BACKEND_CUDA ? 0 : 1];
    bool ordered = stream && B->backend == GPUIR_BACKEND_CUDA, pinned = gpuir__pinned_find(ctx, a->data, B->bytes);
    int rc = D->drv.enter(D->drv.self);
    if (rc) return gpuir__drv_check(ctx, &D->drv, rc, "cuCtxPushCurrent", fn);
    const char *call = ordered ? "cuStreamWaitEvent" : up ? "cuMemcpyHtoD" : "cuMemcpyDtoH";
    if (ordered) rc = D->drv.stream_bind(D->drv.self, stream, 0);
    if (!rc) {
        call = ordered ? (up ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync") : call;
        rc = up ? D->drv.copy_htod(D->drv.self, B->ptr, a->data, B->bytes, 0)
                : D->drv.copy_dtoh(D->drv.self, a->data, B->ptr, B->bytes, 0);
        int urc = ordered ? D->drv.stream_bind(D->drv.self, NULL, 0) : 0;
        if (!rc && urc) { rc = urc; call = "cuStreamWaitEvent"; }
    }
    if (!rc && ordered && !pinned) { rc = D->drv.stream_synchronize(D->drv.self, stream); call = "cuStreamSynchronize"; }
    int lrc = D->drv.leave(D->drv.self);
    if (!rc && lrc) { rc = lrc; call = "cuCtxPopCurrent"; }
    snprintf(what, sizeof what, "%s of %zu bytes", up ? "uploading a buffer" : "downloading a buffer", B->bytes);
    return gpuir__drv_check(ctx, &D->drv, rc, call, what);
}

GPUIRDEF gpuir_result gpuir_buffer_upload(gpuir_ctx *ctx, gpuir_buffer b, const gpuir_array *src, gpuir_stream stream) {
    return gpuir__buffer_copy(ctx, b, (gpuir_array *)(uintptr_t)src, stream, true);
}
GPUIRDEF gpuir_result gpuir_buffer_download(gpuir_ctx *ctx, gpuir_buffer b, gpuir_array *dst, gpuir_stream stream) {
    return gpuir__buffer_copy(ctx, b, dst, stream, false);
}

/* Everything the context's devices hold, at teardown. */
static void gpuir__devices_free(gpuir_ctx *ctx) {
    for (size_t i = 0; i < stbds_arrlenu(ctx->buffers); i++)
        if (ctx->buffers[i].live) gpuir__buffer_free(ctx, &ctx->buffers[i]);
    while (stbds_arrlenu(ctx->pinned)) gpuir__pinned_drop(ctx, stbds_arrlenu(ctx->pinned) - 1);
    while (stbds_arrlenu(ctx->streams)) gpuir__stream_drop(ctx, stbds_arrlenu(ctx->streams) - 1);
    stbds_arrfree(ctx->buffers);
    stbds_arrfree(ctx->pinned);
    stbds_arrfree(ctx->streams);
    for (int k = 0; k < 2; k++) {
        gpuir__device *D = ctx->devices[k];
        if (!D) continue;
        if (D->emu) gpuir__emu_free(D->emu);
        GPUIR_FREE(D->fault);
        GPUIR_FREE(D);
        ctx->devices[k] = NULL;
    }
}

GPUIRDEF gpuir_arg gpuir_arg_host(gpuir_array a) {
    gpuir_arg g;
    memset(&g, 0, sizeof g);
    g.kind = GPUIR_ARG_HOST;
    g.host = a;
    return g;
}
GPUIRDEF gpuir_arg gpuir_arg_buffer(gpuir_buffer b) {
    gpuir_arg g;
    memset(&g, 0, sizeof g);
    g.kind = GPUIR_ARG_BUFFER;
    g.buffer = b;
    return g;
}

/* ---- run arguments: where each argument can stay ----
   Per host function, once: a parameter whose only uses are one
   host-to-device copy into a gpu.alloc buffer D (and maybe the copy of D
   back, when the function writes the parameter) can be a device buffer
   standing in for D: the copies go, and D is neither allocated nor freed.
   Without the copy back, no op may write D (it would change the caller's
   input). A result that is a memref.alloc filled by one device-to-host
   copy from a gpu.alloc buffer D, and used by nothing else, can be a
   device buffer standing in for D (or preallocated host memory standing
   in for the result). Every other argument is staged through the host. */

typedef struct gpuir__argplan {
    uint32_t func;
    uint32_t *in_dev, *in_copy, *in_back;   /* stb_ds, per parameter: D, the copy in, the copy back (op index + 1) */
    bool *in_written;                       /* stb_ds, per parameter: some op writes it */
    uint32_t *out_dev, *out_copy;           /* stb_ds, per result: D, the copy out (op index + 1) */
    unsigned streams;                       /* the table streams 1..streams its ops use */
} gpuir__argplan;

static void gpuir__args_forget(gpuir_program *p) {
    for (size_t i = 0; i < stbds_arrlenu(p->argplans); i++) {
        gpuir__argplan *P = &p->argplans[i];
        stbds_arrfree(P->in_dev);
        stbds_arrfree(P->in_copy);
        stbds_arrfree(P->in_back);
        stbds_arrfree(P->in_written);
        stbds_arrfree(P->out_dev);
        stbds_arrfree(P->out_copy);
    }
    stbds_arrfree(p->argplans);
}

static bool gpuir__is_gpu_alloc(const gpuir_module *m, uint32_t v) {
    const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, v)->def_op);
    return def && def->kind == GPUIR_OP_GPU_ALLOC;
}

/* Whether an op of f other than op index `except` writes device buffer D
   (a copy into it or a view of it, a launch whose kernel writes it). */
static bool gpuir__args_device_written(gpuir_module *m, const gpuir__func *f, uint32_t D, size_t except) {
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if ((size_t)(op - m->ops) == except) continue;
        if (op->kind == GPUIR_OP_GPU_MEMCPY && gpuir__view_base(m, gpuir__op_operand(m, op, 0)) == D) return true;
        if (op->kind != GPUIR_OP_GPU_LAUNCH_FUNC) continue;
        const gpuir__func *k = gpuir__func_at(m, gpuir__launch_kernel(m, gpuir__attr_get(m, op, GPUIR__KEY_KERNEL)->off));
        bool reads[GPUIR_MAX_OPERANDS], writes[GPUIR_MAX_OPERANDS];
        gpuir__params_access(m, k, op->n_operands, reads, writes);
        for (uint32_t a = 0; a < op->n_operands; a++)
            if (writes[a] && gpuir__view_base(m, gpuir__op_operand(m, op, a)) == D) return true;
    }
    return false;
}

/* Parameter v's plan: D, the copy in and the copy back, or D = 0. */
static void gpuir__args_plan_input(gpuir_module *m, const gpuir__func *f, const uint32_t *uses, uint32_t v,
                                   gpuir__argplan *P) {
    uint32_t dev = 0, copy = 0, back = 0;
    bool written = false;
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        bool dps = !op->result && gpuir__class_computes(gpuir__info(op->kind)->cls) && op->n_operands;
        int dst = dps ? (int)op->n_operands - 1 : op->kind == GPUIR_OP_MEMREF_COPY ? 1 :
                  op->kind == GPUIR_OP_GPU_MEMCPY ? 0 : -1;
        if (dst >= 0 && gpuir__op_operand(m, op, (uint32_t)dst) == v) written = true;
        if (op->kind != GPUIR_OP_GPU_MEMCPY) continue;
        uint32_t d = gpuir__op_operand(m, op, 0), s = gpuir__op_operand(m, op, 1);
        if (s == v && !copy && gpuir__is_gpu_alloc(m, d)) { dev = d; copy = (uint32_t)(op - m->ops) + 1; }
        else if (d == v && dev && s == dev && !back) back = (uint32_t)(op - m->ops) + 1;
    }
    bool ok = dev && uses[v] == 1u + (back ? 1u : 0u) &&
              (back || !gpuir__args_device_written(m, f, dev, copy - 1));
    stbds_arrput(P->in_dev, ok ? dev : 0);
    stbds_arrput(P->in_copy, ok ? copy : 0);
    stbds_arrput(P->in_back, ok ? back : 0);
    stbds_arrput(P->in_written, written);
}

/* Result r's plan (the ret's operand j): D and the copy out, or D = 0. */
static void gpuir__args_plan_output(const gpuir_module *m, const gpuir__func *f, const uint32_t *uses,
                                    const gpuir__op *ret, uint32_t j, gpuir__argplan *P) {
    uint32_t r = gpuir__op_operand(m, ret, j), dev = 0, copy = 0, in_ret = 0;
    const gpuir__op *def = gpuir__op_at(m, gpuir__value_at(m, r)->def_op);
    for (uint32_t k = 0; k < ret->n_operands; k++) in_ret += gpuir__op_operand(m, ret, k) == r;
    for (size_t i = 0; def && def->kind == GPUIR_OP_MEMREF_ALLOC && i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        if (op->kind != GPUIR_OP_GPU_MEMCPY || gpuir__op_operand(m, op, 0) != r) continue;
        uint32_t s = gpuir__op_operand(m, op, 1);
        if (gpuir__is_gpu_alloc(m, s)) { dev = s; copy = (uint32_t)(op - m->ops) + 1; }
    }
    bool ok = dev && in_ret == 1 && uses[r] == 2;
    for (size_t i = 0; ok && i < stbds_arrlenu(P->in_dev); i++) ok = P->in_dev[i] != dev;
    for (size_t i = 0; ok && i < stbds_arrlenu(P->out_dev); i++) ok = P->out_dev[i] != dev;
    stbds_arrput(P->out_dev, ok ? dev : 0);
    stbds_arrput(P->out_copy, ok ? copy : 0);
}

/* The plan of host function fid, made on its first run with arguments. */
static const gpuir__argplan *gpuir__args_plan(gpuir_program *p, uint32_t fid) {
    for (size_t i = 0; i < stbds_arrlenu(p->argplans); i++)
        if (p->argplans[i].func == fid) return &p->argplans[i];
    gpuir_module *m = p->m;
    const gpuir__func *f = gpuir__func_at(m, fid);
    uint32_t *uses = (uint32_t *)gpuir__calloc(stbds_arrlenu(m->values) + 1, sizeof *uses);
    if (!uses) { gpuir__oom(p->ctx, "a run's argument plan"); return NULL; }
    gpuir__argplan P;
    memset(&P, 0, sizeof P);
    P.func = fid;
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        for (uint32_t k = 0; k < op->n_operands; k++) uses[gpuir__op_operand(m, op, k)]++;
        if (gpuir__run_stream(m, op) > P.streams) P.streams = gpuir__run_stream(m, op);
    }
    for (size_t i = 0; i < stbds_arrlenu(f->params); i++) gpuir__args_plan_input(m, f, uses, f->params[i], &P);
    const gpuir__op *ret = stbds_arrlenu(f->ops) ? gpuir__op_at(m, stbds_arrlast(f->ops)) : NULL;
    for (uint32_t j = 0; ret && ret->kind == GPUIR_OP_RETURN && j < ret->n_operands; j++)
        gpuir__args_plan_output(m, f, uses, ret, j, &P);
    GPUIR_FREE(uses);
    stbds_arrput(p->argplans, P);
    return &stbds_arrlast(p->argplans);
}

/* ---- run arguments: binding them to a run ---- */

/* What a run with arguments keeps besides its slots. */
typedef struct gpuir__args {
    const gpuir_run_desc *desc;
    const gpuir__argplan *plan;
    const gpuir__op *ret;
    bool all_device;        /* every argument is a buffer that needs no host copy */
    uint64_t sig;           /* 2 bits per argument: host, buffer in place, buffer staged */
} gpuir__args;

static const char *gpuir__args_name(const gpuir_module *m, uint32_t v, char *buf, size_t size) {
    return gpuir__buffer_label(m, v, buf, size);
}

/* Appends a line to the placement report, once. */
static void gpuir__args_report(gpuir_program *p, const gpuir__func *f, const char *label, const char *text) {
    char line[GPUIR_MAX_NAME * 2 + 200];
    snprintf(line, sizeof line, "@%s: %s: %s\n", gpuir__string(p->m, f->name), label, text);
    gpuir_module *m = p->m;
    if (m->placement_report && strstr(m->placement_report, line)) return;
    gpuir__str s = {m->placement_report};
    if (!s.buf) stbds_arrput(s.buf, '\0');
    gpuir__str_puts(&s, line);
    m->placement_report = s.buf;
}

/* The buffer of an argument, checked: this context, live, the program's
   backend, the wanted type. */
static gpuir__bufslot *gpuir__args_buffer(gpuir__run *R, gpuir_buffer b, gpuir_type want, const char *what) {
    gpuir_ctx *ctx = R->p->ctx;
    gpuir__bufslot *B = gpuir__buffer_get(ctx, b, what);
    if (!B) return NULL;
    if (B->backend != R->p->backend) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: the buffer is %s memory, the program runs on %s", what,
                    gpuir_backend_name(B->backend), gpuir_backend_name(R->p->backend));
        return NULL;
    }
    want.space = GPUIR_SPACE_DEVICE;
    return gpuir__type_fits(ctx, want, B->type, what) ? NULL : B;
}

/* Binds input i (parameter v): a host array as gpuir_program_run does, a
   device buffer in place of its device copy, or staged through the host. */
static gpuir_result gpuir__args_input(gpuir__run *R, gpuir__args *A, size_t i) {
    gpuir_program *p = R->p;
    const gpuir_module *m = p->m;
    const gpuir_arg *arg = &A->desc->inputs[i];
    uint32_t v = R->f->params[i];
    char what[GPUIR_MAX_NAME + 48], name[GPUIR_MAX_NAME + 32];
    snprintf(what, sizeof what, "input #%zu (%s)", i, gpuir__args_name(m, v, name, sizeof name));
    if (arg->kind == GPUIR_ARG_HOST) {
        A->all_device = false;
        return gpuir__run_bind_one(R, R->f, i, &arg->host);
    }
    if (arg->kind != GPUIR_ARG_BUFFER)
        return gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: no argument (kind %d)", what, (int)arg->kind);
    gpuir__bufslot *B = gpuir__args_buffer(R, arg->buffer, gpuir__value_at(m, v)->type, what);
    if (!B || gpuir__run_shape(R, v, B->type.dims)) return p->ctx->result;
    gpuir__slot *s = &R->slots[v - 1];
    uint32_t D = A->plan->in_dev[i];
    if (gpuir__value_at(m, v)->type.space == GPUIR_SPACE_DEVICE || D) {
        gpuir__slot *d = D ? &R->slots[D - 1] : s;
        d->dev = B->ptr;
        d->external = true;
        d->arg = (int)i + 1;
        d->ext_bytes = B->bytes;
        if (D) p->run_skip[A->plan->in_copy[i] - 1] = 1;
        if (D && A->plan->in_back[i]) p->run_skip[A->plan->in_back[i] - 1] = 1;
        A->sig |= (uint64_t)2 << (2 * (i % 32));
        return GPUIR_OK;
    }
    A->all_device = false;                   /* staged: the host code reads it (gpuir__args_stage) */
    A->sig |= (uint64_t)3 << (2 * (i % 32));
    s->host = GPUIR_MALLOC(s->bytes ? s->bytes : 1);
    if (!s->host) return gpuir__oom(p->ctx, "staging a device-resident input");
    s->owned = true;
    return GPUIR_OK;
}

/* Copies the staged inputs out of their buffers, once the caller's stream
   has been waited for. */
static gpuir_result gpuir__args_stage(gpuir__run *R, gpuir__args *A) {
    gpuir_program *p = R->p;
    for (size_t i = 0; i < A->desc->n_inputs; i++) {
        uint32_t v = R->f->params[i];
        gpuir__slot *s = &R->slots[v - 1];
        if (A->desc->inputs[i].kind != GPUIR_ARG_BUFFER || A->plan->in_dev[i] || !s->owned || !s->bytes) continue;
        p->stats.d2h_copies++;
        p->stats.d2h_bytes += s->bytes;
        gpuir__dptr src = p->ctx->buffers[(A->desc->inputs[i].buffer.id & 0xfffff) - 1].ptr;
        char what[64];
        snprintf(what, sizeof what, "staging input #%zu through the host", i);
        if (gpuir__drv_check(p->ctx, &p->drv, p->drv.copy_dtoh(p->drv.self, s->host, src, s->bytes, 0),
                             "cuMemcpyDtoH", what))
            return p->ctx->result;
    }
    return GPUIR_OK;
}

/* Binds output j: preallocated host memory or a device buffer in place of
   the result's buffer where the plan allows; checked either way. */
static gpuir_result gpuir__args_output(gpuir__run *R, gpuir__args *A, size_t j) {
    gpuir_program *p = R->p;
    const gpuir_module *m = p->m;
    const gpuir_arg *arg = &A->desc->outputs[j];
    uint32_t r = gpuir__op_operand(m, A->ret, (uint32_t)j), D = A->plan->out_dev[j];
    char what[GPUIR_MAX_NAME + 48];
    snprintf(what, sizeof what, "output #%zu", j);
    gpuir_type want = gpuir__value_at(m, r)->type;
    if (arg->kind == GPUIR_ARG_NONE || (arg->kind == GPUIR_ARG_HOST && !arg->host.data)) {
        A->all_device = false;
        return GPUIR_OK;
    }
    if (arg->kind == GPUIR_ARG_HOST) {
        A->all_device = false;
        if (arg->host.rank < 0 || arg->host.rank > GPUIR_MAX_RANK)
            return gpuir__fail(p->ctx, GPUIR_ERR_SHAPE, "%s: the array has rank %d", what, arg->host.rank);
        if (gpuir__type_fits(p->ctx, want, gpuir_memref_type(arg->host.dtype, arg->host.rank, arg->host.dims, want.space),
                             what))
            return p->ctx->result;
        gpuir__slot *s = &R->slots[r - 1];
        if (!D) return GPUIR_OK;             /* copied in after the run */
        s->host = arg->host.data;
        s->external = true;
        s->arg = -(int)j - 1;
        s->ext_bytes = gpuir_array_count(&arg->host) * gpuir_dtype_size(arg->host.dtype);
        return GPUIR_OK;
    }
    if (arg->kind != GPUIR_ARG_BUFFER)
        return gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s: no argument (kind %d)", what, (int)arg->kind);
    gpuir__bufslot *B = gpuir__args_buffer(R, arg->buffer, want, what);
    if (!B) return p->ctx->result;
    if (!D) {
        A->all_device = false;
        A->sig |= (uint64_t)3 << (2 * ((A->desc->n_inputs + j) % 32));
        return GPUIR_OK;                     /* uploaded after the run */
    }
    A->sig |= (uint64_t)2 << (2 * ((A->desc->n_inputs + j) % 32));
    gpuir__slot *d = &R->slots[D - 1], *s = &R->slots[r - 1];
    d->dev = B->ptr;
    d->external = true;
    d->arg = -(int)j - 1;
    d->ext_bytes = B->bytes;
    s->external = true;                      /* the host result is never made */
    s->arg = -(int)j - 1;
    s->ext_bytes = B->bytes;
    p->run_skip[A->plan->out_copy[j] - 1] = 1;
    return GPUIR_OK;
}

/* Output j after the run: a new host array, the result copied into
   preallocated memory (unless written in place), or into a device buffer
   (unless the kernel wrote it there). */
static gpuir_result gpuir__args_result(gpuir__run *R, gpuir__args *A, size_t j) {
    gpuir_program *p = R->p;
    gpuir_arg *arg = &A->desc->outputs[j];
    uint32_t r = gpuir__op_operand(p->m, A->ret, (uint32_t)j);
    gpuir__slot *s = &R->slots[r - 1];
    if (arg->kind == GPUIR_ARG_NONE || (arg->kind == GPUIR_ARG_HOST && !arg->host.data))
        return gpuir__run_outputs_one(R, r, &arg->host);
    char what[48];
    snprintf(what, sizeof what, "output #%zu", j);
    bool same = true;
    const int64_t *dims = arg->kind == GPUIR_ARG_HOST ? arg->host.dims
                                                      : p->ctx->buffers[(arg->buffer.id & 0xfffff) - 1].type.dims;
    for (int d = 0; d < gpuir__value_at(p->m, r)->type.rank; d++) same = same && dims[d] == s->dims[d];
    if (!same) return gpuir__fail(p->ctx, GPUIR_ERR_SHAPE, "%s: the result's dynamic sizes differ from the "
                                  "argument's", what);
    if (arg->kind == GPUIR_ARG_HOST) {
        if (s->host != arg->host.data && s->bytes) memcpy(arg->host.data, s->host, s->bytes);
        return GPUIR_OK;
    }
    if (A->plan->out_dev[j] || !s->bytes) return GPUIR_OK;
    p->stats.h2d_copies++;
    p->stats.h2d_bytes += s->bytes;
    gpuir__dptr dst = p->ctx->buffers[(arg->buffer.id & 0xfffff) - 1].ptr;
    return gpuir__drv_check(p->ctx, &p->drv, p->drv.copy_htod(p->drv.self, dst, s->host, s->bytes, 0), "cuMemcpyHtoD",
                            what);
}

/* After the run: staged inputs the function wrote go back to their
   buffers, then every output is delivered. */
static gpuir_result gpuir__args_finish(gpuir__run *R, gpuir__args *A) {
    gpuir_program *p = R->p;
    const gpuir_run_desc *desc = A->desc;
    for (size_t i = 0; i < desc->n_inputs; i++) {
        uint32_t v = R->f->params[i];
        gpuir__slot *s = &R->slots[v - 1];
        if (desc->inputs[i].kind != GPUIR_ARG_BUFFER || A->plan->in_dev[i] || !A->plan->in_written[i] || !s->owned ||
            !s->bytes)
            continue;
        p->stats.h2d_copies++;
        p->stats.h2d_bytes += s->bytes;
        gpuir__dptr dst = p->ctx->buffers[(desc->inputs[i].buffer.id & 0xfffff) - 1].ptr;
        if (gpuir__drv_check(p->ctx, &p->drv, p->drv.copy_htod(p->drv.self, dst, s->host, s->bytes, 0),
                             "cuMemcpyHtoD", "writing a staged input back"))
            return p->ctx->result;
    }
    if (!A->ret) return GPUIR_OK;
    if (desc->n_outputs != A->ret->n_operands)
        return gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "the function returns %u values, %zu outputs given",
                           A->ret->n_operands, desc->n_outputs);
    for (size_t j = 0; j < desc->n_outputs; j++)
        if (gpuir__args_result(R, A, j)) return p->ctx->result;
    return GPUIR_OK;
}

/* Two arguments that share memory: an output with an input, or two outputs. */
static gpuir_result gpuir__args_check_alias(gpuir_ctx *ctx, const gpuir_run_desc *desc) {
    size_t n = desc->n_inputs + desc->n_outputs;
    for (size_t a = desc->n_inputs; a < n; a++) {
        const gpuir_arg *x = &desc->outputs[a - desc->n_inputs];
        for (size_t b = 0; b < a; b++) {
            const gpuir_arg *y = b < desc->n_inputs ? &desc->inputs[b] : &desc->outputs[b - desc->n_inputs];
            bool same = x->kind == y->kind &&
                        ((x->kind == GPUIR_ARG_BUFFER && x->buffer.id == y->buffer.id) ||
                         (x->kind == GPUIR_ARG_HOST && x->host.data && x->host.data == y->host.data));
            if (x->kind == GPUIR_ARG_BUFFER && y->kind == GPUIR_ARG_BUFFER && !same) {
                uint64_t p = gpuir_buffer_device_ptr(ctx, x->buffer), q = gpuir_buffer_device_ptr(ctx, y->buffer);
                gpuir_type tp = gpuir_buffer_type(ctx, x->buffer), tq = gpuir_buffer_type(ctx, y->buffer);
                uint64_t np = (uint64_t)gpuir__type_count(&tp) * gpuir_dtype_size(tp.dtype);
                uint64_t nq = (uint64_t)gpuir__type_count(&tq) * gpuir_dtype_size(tq.dtype);
                same = p && q && np && nq && p < q + nq && q < p + np;
            }
            if (same)
                return gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "output #%zu aliases %s #%zu: a run's outputs "
                                   "must not share memory with its inputs or each other", a - desc->n_inputs,
                                   b < desc->n_inputs ? "input" : "output",
                                   b < desc->n_inputs ? b : b - desc->n_inputs);
        }
    }
    return GPUIR_OK;
}

/* Report lines for the arguments that are device buffers, when the kinds
   changed since the last run. */
static void gpuir__args_note(gpuir__run *R, gpuir__args *A) {
    gpuir_program *p = R->p;
    if (A->sig == p->args_sig) return;
    p->args_sig = A->sig;
    char label[GPUIR_MAX_NAME + 32];
    for (size_t i = 0; i < A->desc->n_inputs; i++) {
        uint64_t k = A->sig >> (2 * (i % 32)) & 3;
        gpuir__args_name(p->m, R->f->params[i], label, sizeof label);
        if (k == 2) gpuir__args_report(p, R->f, label, "device-resident: no copy (input, a device buffer)");
        if (k == 3) gpuir__args_report(p, R->f, label, "device-resident: staged through the host (input, a device "
                                       "buffer the host code reads)");
    }
    for (size_t j = 0; A->ret && j < A->desc->n_outputs && j < A->ret->n_operands; j++) {
        uint64_t k = A->sig >> (2 * ((A->desc->n_inputs + j) % 32)) & 3;
        snprintf(label, sizeof label, "result #%zu", j);
        if (k == 2) gpuir__args_report(p, R->f, label, "device-resident: no copy (written into the device buffer "
                                       "argument)");
        if (k == 3) gpuir__args_report(p, R->f, label, "device-resident: staged through the host (the host code "
                                       "computes it), then copied into the device buffer argument");
    }
}

/* Whether a host-side copy that is not skipped is left: the run then
   waits for the device before it returns. */
static bool gpuir__args_host_copies(const gpuir__run *R) {
    const gpuir_module *m = R->p->m;
    for (size_t i = 0; i < stbds_arrlenu(R->f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, R->f->ops[i]);
        if (op->kind != GPUIR_OP_GPU_MEMCPY || R->p->run_skip[op - m->ops]) continue;
        if (gpuir__value_at(m, gpuir__op_operand(m, op, 0))->type.space != GPUIR_SPACE_DEVICE ||
            gpuir__value_at(m, gpuir__op_operand(m, op, 1))->type.space != GPUIR_SPACE_DEVICE)
            return true;
    }
    return false;
}

/* An asynchronous run's entry: stream 0's work goes to the caller's stream
   (the emulator queues it on lane n_streams + 1), and every stream of the
   program waits for what the caller's stream held (event n_events + 1). */
static gpuir_result gpuir__args_enter_stream(gpuir__run *R, void *stream, unsigned streams) {
    gpuir_program *p = R->p;
    const gpuir__drv *d = &p->drv;
    if (gpuir__drv_check(p->ctx, d, d->stream_bind(d->self, stream, p->n_streams + 1), "cuStreamWaitEvent",
                         "ordering the run after desc.stream"))
        return p->ctx->result;
    unsigned entry = p->n_events + 1;
    int rc = streams ? d->event_record(d->self, entry, 0) : 0;    /* one stream: the caller's orders it */
    for (unsigned s = 1; !rc && s <= streams; s++) rc = d->stream_wait(d->self, s, entry);
    return gpuir__drv_check(p->ctx, d, rc, "cuEventRecord/cuStreamWaitEvent", "ordering the run after desc.stream");
}

/* A run into a graph being captured on the caller's stream: everything it
   issues must be capturable. Fails before anything is issued, naming what
   is not: a run that waits for the device (host arguments), a global not
   yet uploaded, device allocations without memory pools. */
static gpuir_result gpuir__args_capture_check(gpuir__run *R, bool async) {
    gpuir_program *p = R->p;
    const gpuir_module *m = p->m;
    const char *pre = "desc.stream is being captured into a graph, and";
    if (!async)
        return gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s this run has host arguments or host copies, so "
                           "it must wait for the device (a captured stream cannot): pass device buffers only", pre);
    for (size_t i = 0; i < stbds_arrlenu(R->f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, R->f->ops[i]);
        bool device = op->result && gpuir__value_at(m, op->result)->type.space == GPUIR_SPACE_DEVICE;
        if (op->kind == GPUIR_OP_MEMREF_GET_GLOBAL && device) {
            const char *name = gpuir__string(m, gpuir__attr_get(m, op, GPUIR__KEY_NAME)->off);
            uint32_t g = gpuir__find_global(m, name);
            bool ready = false;
            for (size_t k = 0; k < stbds_arrlenu(p->resident); k++)
                if (p->resident[k].global == g)
                    ready = p->resident[k].external || (g && p->resident[k].uploaded == m->globals[g - 1].generation);
            if (!ready)
                return gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s global @%s is not on the device yet "
                                   "(run once before capturing, or bind it to a buffer)", pre, name);
        }
        if (op->kind == GPUIR_OP_GPU_ALLOC && !R->slots[op->result - 1].external && p->backend == GPUIR_BACKEND_CUDA &&
            !((gpuir__cudart *)p->drv.self)->dev.memory_pools)
            return gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "%s the device has no memory pools for the run's "
                               "temporary buffers (cuMemAllocAsync)", pre);
    }
    return GPUIR_OK;
}

/* An asynchronous run's exit: the caller's stream waits for every stream
   of the program (event n_events + 2); on the emulator that event marks
   the stream's latest work. Unbinds the stream, also after a failure. */
static gpuir_result gpuir__args_leave_stream(gpuir__run *R, void *stream, unsigned streams, gpuir_result r) {
    gpuir_program *p = R->p;
    const gpuir__drv *d = &p->drv;
    unsigned exit_event = p->n_events + 2;
    int rc = 0;
    for (unsigned s = 1; !r && !rc && s <= streams; s++) {
        rc = d->event_record(d->self, exit_event, s);
        if (!rc) rc = d->stream_wait(d->self, 0, exit_event);
    }
    if (!r && !rc && p->backend == GPUIR_BACKEND_EMU) rc = d->event_record(d->self, exit_event, 0);  /* the tail */
    if (!r) r = gpuir__drv_check(p->ctx, d, rc, "cuEventRecord/cuStreamWaitEvent", "ordering desc.stream after the run");
    int urc = d->stream_bind(d->self, NULL, 0);
    if (!r) r = gpuir__drv_check(p->ctx, d, urc, "cuStreamWaitEvent", "unbinding desc.stream");
    if (!r && p->backend == GPUIR_BACKEND_EMU) {
        gpuir__xstream *x = (gpuir__xstream *)stream;
        x->tail = p;
        x->tail_event = exit_event;
    }
    return r;
}

/* Binds every argument of a run; *async when all are device buffers in
   place, on the caller's stream, with no host copy left. */
static gpuir_result gpuir__args_bind(gpuir__run *R, gpuir__args *A, bool *async) {
    gpuir_program *p = R->p;
    const gpuir_run_desc *desc = A->desc;
    if (desc->n_inputs != stbds_arrlenu(R->f->params))
        return gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "@%s takes %zu inputs, %zu given",
                           gpuir__string(p->m, R->f->name), stbds_arrlenu(R->f->params), desc->n_inputs);
    if (A->ret && desc->n_outputs != A->ret->n_operands)
        return gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "the function returns %u values, %zu outputs given",
                           A->ret->n_operands, desc->n_outputs);
    A->all_device = true;
    for (size_t i = 0; i < desc->n_inputs; i++)
        if (gpuir__args_input(R, A, i)) return p->ctx->result;
    for (size_t j = 0; A->ret && j < desc->n_outputs; j++)
        if (gpuir__args_output(R, A, j)) return p->ctx->result;
    *async = desc->stream && A->all_device && !gpuir__args_host_copies(R);
    return GPUIR_OK;
}

/* Clears what binding set for this run (skipped copies). */
static void gpuir__args_unbind(gpuir__run *R) {
    for (size_t i = 0; i < stbds_arrlenu(R->f->ops); i++)
        R->p->run_skip[gpuir__op_at(R->p->m, R->f->ops[i]) - R->p->m->ops] = 0;
}

/* The checks before anything runs: the desc, the function, the stream,
   aliasing. */
static uint32_t gpuir__args_check(gpuir_program *p, const gpuir_run_desc *desc) {
    gpuir_ctx *ctx = p->ctx;
    if (!desc) { gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_program_run_args: desc is NULL"); return 0; }
    if ((desc->n_inputs && !desc->inputs) || (desc->n_outputs && !desc->outputs)) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_program_run_args: desc.%s is NULL",
                    desc->n_inputs && !desc->inputs ? "inputs" : "outputs");
        return 0;
    }
    if (p->backend == GPUIR_BACKEND_REF) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "gpuir_program_run_args: the interpreter takes host arrays "
                    "only (gpuir_program_run)");
        return 0;
    }
    if (gpuir__drv_alive(ctx, &p->drv) || gpuir__stream_check(ctx, p->backend, desc->stream, "desc.stream") ||
        gpuir__args_check_alias(ctx, desc))
        return 0;
    return gpuir__program_func(p, desc->func);
}

/* Before the run's work: the caller's stream is checked (capturing?), and
   a run that will wait for the device waits for the stream first. */
static gpuir_result gpuir__args_stream_first(gpuir__run *R, void *stream, bool async, bool *captured) {
    gpuir_program *p = R->p;
    const gpuir__drv *d = &p->drv;
    if (!stream) return GPUIR_OK;
    int capturing = 0;
    if (gpuir__drv_check(p->ctx, d, d->stream_capturing(d->self, stream, &capturing), "cuStreamIsCapturing",
                         "checking desc.stream (a stream of this program's device?)"))
        return p->ctx->result;
    *captured = capturing != 0;
    if (capturing) return gpuir__args_capture_check(R, async);
    gpuir__xstream *x = p->backend == GPUIR_BACKEND_EMU ? (gpuir__xstream *)stream : NULL;
    if (x && (!async || x->tail != p)) return gpuir__xstream_drain(p->ctx, x);
    if (x || async) return GPUIR_OK;
    return gpuir__drv_check(p->ctx, d, d->stream_synchronize(d->self, stream), "cuStreamSynchronize",
                            "waiting for desc.stream before a run that waits for the device");
}

GPUIRDEF gpuir_result gpuir_program_run_args(gpuir_program *p, const gpuir_run_desc *desc) {
    for (size_t j = 0; desc && desc->outputs && j < desc->n_outputs; j++)   /* a failed run leaves them empty */
        if (desc->outputs[j].kind == GPUIR_ARG_NONE ||
            (desc->outputs[j].kind == GPUIR_ARG_HOST && !desc->outputs[j].host.data))
            memset(&desc->outputs[j].host, 0, sizeof desc->outputs[j].host);
    if (!p) return GPUIR_ERR_INVALID_ARGUMENT;
    gpuir_ctx *ctx = p->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    uint32_t fid = gpuir__args_check(p, desc);
    if (!fid || gpuir__run_slots(p)) return ctx->result;
    gpuir__run R;
    R.p = p;
    R.f = gpuir__func_at(p->m, fid);
    R.slots = p->run_slots;
    R.async = false;
    R.caller = NULL;
    R.host_staged = false;
    gpuir__args A;
    memset(&A, 0, sizeof A);
    A.desc = desc;
    A.plan = gpuir__args_plan(p, fid);
    A.ret = stbds_arrlenu(R.f->ops) ? gpuir__op_at(p->m, stbds_arrlast(R.f->ops)) : NULL;
    if (A.ret && A.ret->kind != GPUIR_OP_RETURN) A.ret = NULL;
    if (!A.plan) return ctx->result;
    p->stats.runs++;
    gpuir_result r = gpuir__drv_check(ctx, &p->drv, p->drv.enter(p->drv.self), "cuCtxPushCurrent", "starting a run");
    bool entered = r == GPUIR_OK, bound = false, captured = false;
    if (!r) r = gpuir__args_bind(&R, &A, &R.async);
    if (!r) gpuir__args_note(&R, &A);
    if (!r) r = gpuir__args_stream_first(&R, desc->stream, R.async, &captured);
    if (!r) r = gpuir__args_stage(&R, &A);
    unsigned lanes = R.async ? 1 : 0;
    if (!r && (p->n_streams || p->n_events || lanes))
        r = gpuir__drv_check(ctx, &p->drv, p->drv.streams_reserve(p->drv.self, p->n_streams + lanes, p->n_events + 2 * lanes),
                             "cuStreamCreate", "making the program's streams and events");
    if (!r && R.async) {
        r = gpuir__args_enter_stream(&R, desc->stream, A.plan->streams);
        bound = true;
        R.caller = desc->stream;
    }
    for (size_t i = 0; !r && i < stbds_arrlenu(R.f->ops); i++) r = gpuir__run_op(&R, gpuir__op_at(p->m, R.f->ops[i]));
    if (bound) r = gpuir__args_leave_stream(&R, desc->stream, A.plan->streams, r);
    if (entered && (!R.async || r) && !captured) {     /* queued work and frees finish even after a failure
                                                       (a capture holds them: no host wait may break it) */
        int rc = p->drv.synchronize(p->drv.self);
        if (!r) r = gpuir__drv_check(ctx, &p->drv, rc, "cuCtxSynchronize", "finishing a run");
        if (p->backend == GPUIR_BACKEND_EMU) gpuir__xstream_forget(ctx, p);
    }
    if (!r) r = gpuir__args_finish(&R, &A);
    gpuir__args_unbind(&R);
    r = gpuir__run_release(&R, r);
    if (entered) {
        gpuir_result lr = gpuir__drv_check(ctx, &p->drv, p->drv.leave(p->drv.self), "cuCtxPopCurrent", "ending a run");
        if (!r) r = lr;
    }
    return r;
}

GPUIRDEF gpuir_result gpuir_program_wait(gpuir_program *p) {
    if (!p) return GPUIR_ERR_INVALID_ARGUMENT;
    gpuir_ctx *ctx = p->ctx;
    if (ctx->result != GPUIR_OK || p->backend == GPUIR_BACKEND_REF) return ctx->result;
    gpuir_result r = gpuir__drv_check(ctx, &p->drv, p->drv.enter(p->drv.self), "cuCtxPushCurrent", "waiting");
    if (r) return r;
    r = gpuir__drv_check(ctx, &p->drv, p->drv.synchronize(p->drv.self), "cuCtxSynchronize",
                         "waiting for the program's asynchronous runs");
    gpuir__xstream_forget(ctx, p);
    gpuir_result lr = gpuir__drv_check(ctx, &p->drv, p->drv.leave(p->drv.self), "cuCtxPopCurrent", "waiting");
    return r ? r : lr;
}

GPUIRDEF gpuir_result gpuir_program_bind_global_buffer(gpuir_program *p, const char *name, gpuir_buffer b) {
    if (!p) return GPUIR_ERR_INVALID_ARGUMENT;
    gpuir_ctx *ctx = p->ctx;
    if (ctx->result != GPUIR_OK) return ctx->result;
    uint32_t g = name ? gpuir__find_global(p->m, name) : 0;
    if (!g) return gpuir__fail(ctx, GPUIR_ERR_NOT_FOUND, "gpuir_program_bind_global_buffer: no global @%s",
                               name ? name : "(NULL)");
    size_t i = 0;
    while (i < stbds_arrlenu(p->resident) && p->resident[i].global != g) i++;
    if (!b.id) {                         /* unbind: the next run uploads the module's data */
        if (i < stbds_arrlenu(p->resident) && p->resident[i].external) stbds_arrdel(p->resident, i);
        return GPUIR_OK;
    }
    char what[GPUIR_MAX_NAME + 48];
    snprintf(what, sizeof what, "global @%s", name);
    gpuir__run R;
    memset(&R, 0, sizeof R);
    R.p = p;
    gpuir__bufslot *B = gpuir__args_buffer(&R, b, p->m->globals[g - 1].type, what);
    if (!B) return ctx->result;
    if (i < stbds_arrlenu(p->resident) && !p->resident[i].external && p->resident[i].dev &&
        p->drv.enter(p->drv.self) == 0) {
        p->drv.mem_free(p->drv.self, p->resident[i].dev, 0);
        p->drv.leave(p->drv.self);
    }
    gpuir__resident res = {g, B->ptr, 0, true};
    if (i < stbds_arrlenu(p->resident)) p->resident[i] = res;
    else stbds_arrput(p->resident, res);
    return GPUIR_OK;
}


/* Whether a host function still has tensors: the program must be lowered. */
static bool gpuir__module_is_tensor_level(const gpuir_module *m) {
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++) {
        if (m->funcs[f].kernel) continue;
        for (size_t i = 0; i < stbds_arrlenu(m->funcs[f].params); i++)
            if (gpuir__value_at(m, m->funcs[f].params[i])->type.kind == GPUIR_TYPE_TENSOR) return true;
        for (size_t i = 0; i < stbds_arrlenu(m->funcs[f].ops); i++) {
            const gpuir__value *v = gpuir__value_at(m, gpuir__op_at(m, m->funcs[f].ops[i])->result);
            if (v && v->type.kind == GPUIR_TYPE_TENSOR) return true;
        }
    }
    return false;
}

/* The most device memory a host function holds at once as its ops are
   issued: its live gpu.alloc buffers plus the resident globals it reads
   (kept for the program's life); *where gets the op at the peak. */
static uint64_t gpuir__func_device_peak(const gpuir_module *m, const gpuir__func *f, size_t *where) {
    uint64_t live = 0, peak = 0;
    *where = 0;
    for (size_t i = 0; i < stbds_arrlenu(f->ops); i++) {
        const gpuir__op *op = gpuir__op_at(m, f->ops[i]);
        const gpuir__value *v = gpuir__value_at(m, op->result);
        bool device = v && v->type.kind == GPUIR_TYPE_MEMREF && v->type.space == GPUIR_SPACE_DEVICE;
        if ((op->kind == GPUIR_OP_GPU_ALLOC || op->kind == GPUIR_OP_MEMREF_GET_GLOBAL) && device)
            live += gpuir__value_bytes(m, op->result);
        else if (op->kind == GPUIR_OP_GPU_DEALLOC)
            live -= gpuir__value_bytes(m, gpuir__op_operand(m, op, 0));
        if (live > peak) { peak = live; *where = i + 1; }
    }
    return peak;
}

/* Checks every host function's peak against the context's cap (or the
   device's memory); records the largest in the stats. */
static gpuir_result gpuir__program_check_memory(gpuir_program *p) {
    gpuir_module *m = p->m;
    uint64_t cap = p->ctx->desc.max_device_bytes;
    if (!cap && p->backend == GPUIR_BACKEND_CUDA) cap = ((gpuir__cudart *)p->drv.self)->dev.total_mem;
    for (size_t f = 0; f < stbds_arrlenu(m->funcs); f++) {
        if (m->funcs[f].kernel) continue;
        size_t where;
        uint64_t peak = gpuir__func_device_peak(m, &m->funcs[f], &where);
        if (peak > p->stats.peak_device_bytes) p->stats.peak_device_bytes = peak;
        if (cap && peak > cap)
            return gpuir__fail(p->ctx, GPUIR_ERR_LIMIT, "@%s holds %llu bytes of device memory at once (at op %zu, "
                               "%s), more than the %s of %llu", gpuir__string(m, m->funcs[f].name),
                               (unsigned long long)peak, where,
                               gpuir_op_name(gpuir__op_at(m, m->funcs[f].ops[where - 1])->kind),
                               p->ctx->desc.max_device_bytes ? "context's max_device_bytes" : "device's memory",
                               (unsigned long long)cap);
    }
    return GPUIR_OK;
}

/* GPUIR_DUMP_DIR: the module's CUDA C and lowered IR as DIR/<hash>.cu and
   DIR/<hash>.gir (the hash: of the CUDA C; the directory made if missing). */
static gpuir_result gpuir__program_dump(gpuir_program *p) {
    gpuir_ctx *ctx = p->ctx;
    const char *parts[1] = {p->source};
    char key[65], *path = NULL, *ir = gpuir_module_print(p->m);
    gpuir__cache_key(parts, 1, key);
    size_t n = strlen(ctx->dump_dir) + 32;
    gpuir_result r = ir && (path = (char *)GPUIR_MALLOC(n)) ? GPUIR_OK : gpuir__oom(ctx, "GPUIR_DUMP_DIR");
    if (!r && mkdir(ctx->dump_dir, 0777) != 0 && errno != EEXIST)
        r = gpuir__fail(ctx, GPUIR_ERR_IO, "GPUIR_DUMP_DIR: cannot make '%s': %s", ctx->dump_dir, strerror(errno));
    if (!r) snprintf(path, n, "%s/%.16s.cu", ctx->dump_dir, key);
    if (!r) r = gpuir__write_file_atomic(ctx, path, p->source, strlen(p->source));
    if (!r) snprintf(path, n, "%s/%.16s.gir", ctx->dump_dir, key);
    if (!r) r = gpuir__write_file_atomic(ctx, path, ir, strlen(ir));
    if (!r) gpuir__logf(ctx, 1, "dump: %s/%.16s.cu and .gir", ctx->dump_dir, key);
    GPUIR_FREE(path);
    gpuir_free(ir);
    return r;
}

/* GPUIR_LOG: a compile's time and what the cache did. */
static void gpuir__program_log_compile(gpuir_program *p, double t0, gpuir__cache_stats before, size_t image) {
    gpuir__cache_stats now = p->ctx->cache ? gpuir__cache_get_stats(p->ctx->cache) : before;
    const char *how = now.mem_hits > before.mem_hits   ? "memory cache hit"
                    : now.disk_hits > before.disk_hits ? "disk cache hit"
                    : !p->ctx->cache || !*gpuir__cache_dir(p->ctx->cache) ? "compiled (no disk cache)"
                                                                          : "compiled (cache miss)";
    size_t n = stbds_arrlenu(p->kernels);
    gpuir__logf(p->ctx, 1, "compile: %s module of %zu kernel%s (%zu bytes of CUDA C, %zu bytes built): %.1f ms, %s",
                gpuir_backend_name(p->backend), n, n == 1 ? "" : "s", p->source ? strlen(p->source) : 0, image,
                gpuir__now_ms() - t0, how);
}

/* Loads b's image and looks up each kernel, recording no error: 0, or the
   failed call's code with *call and `what` naming it (a failed lookup
   unloads the module again). */
static int gpuir__program_load_image(gpuir_program *p, const gpuir__built *b, const char **call,
                                     char what[GPUIR_MAX_NAME + 48]) {
    *call = "cuModuleLoadData";
    snprintf(what, GPUIR_MAX_NAME + 48, "loading the compiled kernels");
    int rc = p->drv.module_load(p->drv.self, &p->module, b->image, b->size);
    bool loaded = rc == 0;
    for (size_t i = 0; !rc && i < stbds_arrlenu(p->kernels); i++) {
        void *fn = NULL;
        *call = "cuModuleGetFunction";
        snprintf(what, GPUIR_MAX_NAME + 48, "looking up kernel %s", p->kernels[i].cname);
        rc = p->drv.function_get(p->drv.self, &fn, p->module, p->kernels[i].cname);
        stbds_arrput(p->functions, fn);
    }
    if (rc && loaded) p->drv.module_unload(p->drv.self, p->module);
    if (rc) {
        p->module = NULL;
        stbds_arrfree(p->functions);
        p->functions = NULL;
    }
    return rc;
}

/* Whether a failed load is the image's fault (not the device's, memory's
   or the system's): a cached image that fails so is evicted and rebuilt. */
static bool gpuir__load_failure_is_the_image(int code) {
    return code == 200 || code == 209 || code == 218 || code == 222 || code == 500;
}

/* ---- lowered programs through the cache ----
   A warm make skips the pass pipeline and codegen: the lowered module
   (printed: print and parse are a fixed point), its kernels' infos and its
   compiled module's key are one cache entry, <key>.lowered, keyed by
   everything lowering and compiling read (gpuir__lowered_key). A hit parses
   and verifies the stored module, checks its kernels against the infos and
   finds the compiled module; an entry that fails any of this is refused
   (counted corrupt, evicted, noted in gpuir_ctx_cache_status) and the
   program is lowered again. The entry is text:
       gpuir-lowered 1
       object <ext> <key>                 the compiled module's cache entry
       kernels <n>
       <name> <cname> <barriers> <shared> <dynamic> <n_tmaps> [<tmap: 11 numbers>]...   n lines
   (a kernel by its IR name: a parsed module numbers its functions anew).
       report <bytes>                     the placement report, then its bytes
       ir <bytes>                         the lowered module's text, then its bytes */

#define GPUIR__LOWERED_EXT "lowered"
#define GPUIR__LOWERED_FORMAT "gpuir-lowered 1"

typedef struct gpuir__lowered {
    char key[65];                   /* the input module's key */
    bool hit;                       /* m is the stored lowered module, p->kernels its infos */
    char object_key[65];            /* the compiled module: found on a hit, stored after a miss */
    char object_ext[GPUIR__CACHE_EXT_MAX + 1];
    const void *object;             /* a hit's compiled module (cache-owned) */
    size_t object_size;
} gpuir__lowered;

static gpuir_result gpuir__emu_compile(gpuir_program *p, void **image, size_t *size);
static struct gpuir__emu_toolchain *gpuir__emu_toolchain_get(gpuir_ctx *ctx);
static const char *gpuir__emu_cc_identity(gpuir_program *p, struct gpuir__emu_toolchain *h, const char *cc);
static const char *gpuir__emu_cc(const gpuir_program *p);

/* Renders the (lowered) module as the backend compiles it, with its
   kernels' infos; timed in codegen_ms. */
static gpuir_result gpuir__program_codegen(gpuir_program *p) {
    double t0 = gpuir__now_ms();
    stbds_arrfree(p->kernels);
    p->kernels = NULL;
    GPUIR_FREE(p->source);
    p->source = gpuir__cg_module(p->m, p->backend == GPUIR_BACKEND_CUDA ? &gpuir__cg_cuda : &gpuir__cg_emu,
                                 &p->kernels);
    p->wgmma = gpuir__module_uses_wgmma(p->m);
    p->stats.codegen_ms += gpuir__now_ms() - t0;
    return p->source ? GPUIR_OK : p->ctx->result;
}

/* What compiles the kernels, as the key names it: NVRTC's version (loaded
   now if it is not yet) or the emulator's compiler identity. NULL with the
   context's error when it cannot be found. */
static const char *gpuir__lowered_compiler(gpuir_program *p, char buf[64]) {
    if (p->backend == GPUIR_BACKEND_CUDA) {
        gpuir__cudart *C = (gpuir__cudart *)p->drv.self;
        if (!C->nv_loaded && gpuir__nvrtc_load(p->ctx, &C->nv) != GPUIR_OK) return NULL;
        C->nv_loaded = true;
        snprintf(buf, 64, "nvrtc %d.%d", C->nv.major, C->nv.minor);
        return buf;
    }
    struct gpuir__emu_toolchain *h = gpuir__emu_toolchain_get(p->ctx);
    return h ? gpuir__emu_cc_identity(p, h, gpuir__emu_cc(p)) : NULL;
}

/* The lowered program's key: the input module's text, the backend, the
   target (sm, SM count) and every option lowering or compiling reads
   (desc.synchronous, desc.emu_sanitize, the context's max_shared_bytes),
   the compiler's identity, the gpuir version and the entry's format. */
static gpuir_result gpuir__lowered_key(gpuir_program *p, gpuir__lowered *L) {
    char compiler_buf[64], options[160];
    const char *compiler = gpuir__lowered_compiler(p, compiler_buf);
    if (!compiler) return p->ctx->result ? p->ctx->result : gpuir__oom(p->ctx, "the compiler's identity");
    char *text = gpuir_module_print(p->m);
    if (!text) return p->ctx->result ? p->ctx->result : gpuir__oom(p->ctx, "the lowered program's key");
    const gpuir_module *m = p->m;
    snprintf(options, sizeof options, "sm %d, %d SMs, max shared %u, %s, %s, cache format %u", m->target.sm,
             m->target.sm_count, (unsigned)p->ctx->desc.max_shared_bytes, p->desc.synchronous ? "sync" : "async",
             p->desc.emu_sanitize ? "asan" : "-", GPUIR__CACHE_VERSION);
    const char *version = p->ctx->test_version ? p->ctx->test_version : GPUIR_VERSION_STRING;
    const char *parts[7] = {GPUIR__LOWERED_FORMAT, gpuir_backend_name(p->backend), text, options, compiler,
                            version, "lowered program"};
    gpuir__cache_key(parts, 7, L->key);
    gpuir_free(text);
    return GPUIR_OK;
}

static bool gpuir__lowered_round_trips(gpuir_program *p, const char *ir);

/* The entry for p's lowered module (gpuir__program_make's, after a load
   that succeeded): see the section's comment. NULL when out of memory. */
static char *gpuir__lowered_encode(gpuir_program *p, const gpuir__lowered *L, size_t *size) {
    char *ir = gpuir_module_print(p->m);
    if (!ir) return NULL;
    if (!gpuir__lowered_round_trips(p, ir)) { gpuir_free(ir); *size = 0; return NULL; }
    const char *report = gpuir_module_placement_report(p->m);
    gpuir__str s = {NULL};
    gpuir__str_appendf(&s, GPUIR__LOWERED_FORMAT "\nobject %s %s\nkernels %zu\n", L->object_ext, L->object_key,
                       stbds_arrlenu(p->kernels));
    for (size_t i = 0; i < stbds_arrlenu(p->kernels); i++) {
        const gpuir__cg_kernel_info *k = &p->kernels[i];
        gpuir__str_appendf(&s, "%s %s %d %u %u %u", gpuir__string(p->m, gpuir__func_at(p->m, k->func)->name),
                           k->cname, k->barriers ? 1 : 0, k->shared_bytes, k->dynamic_bytes, k->n_tmaps);
        for (unsigned t = 0; t < k->n_tmaps && t < 2; t++) {
            const gpuir__cg_tmap *x = &k->tmaps[t];
            gpuir__str_appendf(&s, " %d %u %u %llu %llu %llu %llu %llu %u %u %u", x->param, x->dtype, x->rank,
                               x->dims[0], x->dims[1], x->dims[2], x->strides[0], x->strides[1], x->box[0],
                               x->box[1], x->box[2]);
        }
        gpuir__str_appendf(&s, "\n");
    }
    gpuir__str_appendf(&s, "report %zu\n%s\nir %zu\n%s", strlen(report), report, strlen(ir), ir);
    gpuir_free(ir);
    *size = stbds_arrlenu(s.buf) - 1;
    return s.buf ? gpuir__str_detach(&s) : NULL;
}

/* Whether every kernel's IR name can be stored as one word. (A module with
   globals is never stored: their data, bound or given, lives in the module,
   not in its text.) */
static bool gpuir__lowered_storable(const gpuir_program *p) {
    for (size_t i = 0; i < stbds_arrlenu(p->kernels); i++) {
        const char *name = gpuir__string(p->m, gpuir__func_at(p->m, p->kernels[i].func)->name);
        if (!*name || strlen(name) >= GPUIR_MAX_NAME) return false;
        for (; *name; name++)
            if (*name <= ' ' || *name == 0x7f) return false;
    }
    return true;
}

/* Reads one kernel's line at *at into k (its function found by name in
   m); false when malformed or when m has no such kernel. */
static bool gpuir__lowered_kernel(const char **at, const gpuir_module *m, gpuir__cg_kernel_info *k) {
    int n = 0, barriers = 0;
    char name[GPUIR_MAX_NAME];
    memset(k, 0, sizeof *k);
    if (sscanf(*at, "%127s %143s %d %u %u %u%n", name, k->cname, &barriers, &k->shared_bytes,
               &k->dynamic_bytes, &k->n_tmaps, &n) != 6 || k->n_tmaps > 2 || (barriers != 0 && barriers != 1))
        return false;
    k->func = gpuir_module_find_func(m, name).id;
    if (k->func == 0 || !gpuir__func_at(m, k->func)->kernel) return false;
    k->barriers = barriers == 1;
    *at += n;
    for (unsigned t = 0; t < k->n_tmaps; t++) {
        gpuir__cg_tmap *x = &k->tmaps[t];
        if (sscanf(*at, " %d %u %u %llu %llu %llu %llu %llu %u %u %u%n", &x->param, &x->dtype, &x->rank,
                   &x->dims[0], &x->dims[1], &x->dims[2], &x->strides[0], &x->strides[1], &x->box[0], &x->box[1],
                   &x->box[2], &n) != 11)
            return false;
        *at += n;
    }
    if (**at != '\n') return false;
    (*at)++;
    return true;
}

/* Reads "<word> <bytes>\n" and that many bytes at *at (in text of `end`);
   NULL when malformed. */
static const char *gpuir__lowered_blob(const char **at, const char *end, const char *word, size_t *len) {
    char fmt[32];
    int n = 0;
    snprintf(fmt, sizeof fmt, "%s %%zu%%n", word);
    if (sscanf(*at, fmt, len, &n) != 1 || (*at)[n] != '\n' || *len > (size_t)(end - *at - n - 1)) return NULL;
    const char *blob = *at + n + 1;
    *at = blob + *len;
    return blob;
}

/* Whether infos name each kernel of m exactly once, under the C name
   codegen gives it (gpuir_k<id> names, of kernels whose IR name is not an
   identifier, number the functions as they were: only their form is
   checked; loading finds each name in the compiled module or rebuilds). */
static bool gpuir__lowered_kernels_match(const gpuir_module *m, const gpuir__cg_kernel_info *infos) {
    size_t n = stbds_arrlenu(infos), kernels = 0, funcs = stbds_arrlenu(m->funcs);
    for (size_t f = 0; f < funcs; f++) kernels += m->funcs[f].kernel;
    if (n != kernels) return false;
    for (size_t i = 0; i < n; i++) {
        char cname[GPUIR_MAX_NAME + 16];
        for (size_t j = 0; j < i; j++)
            if (infos[j].func == infos[i].func || strcmp(infos[j].cname, infos[i].cname) == 0) return false;
        gpuir__cg_cname(m, infos[i].func, cname, sizeof cname);
        bool numbered = strncmp(cname, "gpuir_k_", 8) != 0 && strncmp(infos[i].cname, "gpuir_k_", 8) != 0 &&
                        strncmp(infos[i].cname, "gpuir_k", 7) == 0 &&
                        strspn(infos[i].cname + 7, "0123456789") == strlen(infos[i].cname + 7);
        if (strcmp(cname, infos[i].cname) != 0 && !numbered) return false;
    }
    return true;
}

/* Why a stored lowered program was not used that is not the entry's fault. */
static const char gpuir__lowered_oom[] = "out of memory";

/* Decodes a stored entry (text, NUL-terminated) into L's object, *out (the
   parsed and verified lowered module), *infos and *report; NULL, or why it
   is refused (the context's error left as it was). */
static const char *gpuir__lowered_decode(gpuir_program *p, const char *text, size_t size, gpuir__lowered *L,
                                         gpuir_module **out, gpuir__cg_kernel_info **infos, const char **report,
                                         size_t *report_len) {
    const char *at = text, *end = text + size, *ir;
    size_t count = 0, ir_len = 0;
    int n = 0;
    char ext[GPUIR__CACHE_EXT_MAX + 1], key[65];
    if (sscanf(at, GPUIR__LOWERED_FORMAT "\nobject %15[a-z0-9] %64[0-9a-f]\nkernels %zu%n", ext, key, &count,
               &n) != 3 || at[n] != '\n' || !gpuir__cache_valid_key(key) || count > size)
        return "its header is malformed";
    bool cuda = p->backend == GPUIR_BACKEND_CUDA;
    if (cuda ? !gpuir__bundle_kind_ok(ext) : strcmp(ext, "so") != 0)
        return "its compiled module is of another backend's kind";
    const char *lines = at + n + 1;
    at = lines;
    for (size_t i = 0; i < count && at; i++) at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL;
    if (!at || !(*report = gpuir__lowered_blob(&at, end, "report", report_len)) || *at++ != '\n' ||
        !(ir = gpuir__lowered_blob(&at, end, "ir", &ir_len)) || at != end)
        return "its layout is malformed";
    *out = gpuir_module_parse(p->ctx, ir, ir_len, "<lowered program from the cache>");
    if (!*out) {
        bool oom = p->ctx->result == GPUIR_ERR_OUT_OF_MEMORY;
        gpuir_ctx_clear_error(p->ctx);          /* the make was error-free when it started */
        return oom ? gpuir__lowered_oom : "its lowered module does not parse or verify";
    }
    for (size_t i = 0; i < count; i++) {
        gpuir__cg_kernel_info k;
        if (!gpuir__lowered_kernel(&lines, *out, &k)) return "a kernel's line is malformed or names no kernel";
        stbds_arrput(*infos, k);
    }
    if (!gpuir__lowered_kernels_match(*out, *infos)) return "its kernels do not match its lowered module";
    memcpy(L->object_key, key, sizeof key);
    memcpy(L->object_ext, ext, strlen(ext) + 1);
    return NULL;
}

/* m takes `from`'s contents (the stored lowered module) but keeps its own
   identity (tag, name, target); from, holding m's old contents, is freed. */
static void gpuir__module_adopt(gpuir_module *m, gpuir_module *from) {
    gpuir_module old = *m;
    *m = *from;
    m->tag = old.tag, m->target = old.target, m->source_name = old.source_name;
    char *name = m->source_name_owned;
    m->source_name_owned = old.source_name_owned;
    old.source_name_owned = name;
    *from = old;
    gpuir_module_destroy(from);
}

/* Refuses a stored lowered program: counted corrupt, evicted, noted. */
static void gpuir__lowered_refuse(gpuir__cache *c, const gpuir__lowered *L, const void *bytes, size_t size,
                                  const char *why) {
    c->stats.corrupt++;
    gpuir__cache_evict(c, L->key, GPUIR__LOWERED_EXT, bytes, size);
    gpuir__cache_msg(c->last_error, "the stored lowered program %s%s%.64s." GPUIR__LOWERED_EXT " was refused (%s); "
                     "evicted from the cache and lowered again", gpuir__cache_dir(c), *gpuir__cache_dir(c) ? "/" : "",
                     L->key, why);
}

/* Whether the compiled module a stored lowered program names is in the
   cache (a miss here is not counted: the make looks it up again). */
static bool gpuir__lowered_object_find(gpuir__cache *c, gpuir__lowered *L) {
    uint64_t misses = c->stats.misses;
    bool hit = gpuir__cache_get(c, L->object_key, L->object_ext, &L->object, &L->object_size);
    if (!hit) c->stats.misses = misses;
    return hit;
}

/* Takes the stored entry (bytes, size) for p if it is sound and its
   compiled module is cached: m becomes the lowered module, p->kernels its
   infos, L->hit true. */
static void gpuir__lowered_take(gpuir_program *p, gpuir__cache *c, gpuir__lowered *L, const void *bytes,
                                size_t size) {
    char *text = (char *)GPUIR_MALLOC(size + 1);
    if (!text) {                                 /* lowered again */
        gpuir__cache_msg(c->last_error, "cannot read the stored lowered program %.64s: out of memory", L->key);
        return;
    }
    memcpy(text, bytes, size);
    text[size] = '\0';
    gpuir_module *lowered = NULL;
    gpuir__cg_kernel_info *infos = NULL;
    const char *report = NULL;
    size_t report_len = 0;
    const char *why = gpuir__lowered_decode(p, text, size, L, &lowered, &infos, &report, &report_len);
    if (why == gpuir__lowered_oom)
        gpuir__cache_msg(c->last_error, "cannot read the stored lowered program %.64s: out of memory", L->key);
    else if (why) gpuir__lowered_refuse(c, L, bytes, size, why);
    if (!why && gpuir__lowered_object_find(c, L)) {
        gpuir__module_adopt(p->m, lowered);
        lowered = NULL;
        stbds_arrfree(p->m->placement_report);
        p->m->placement_report = NULL;
        stbds_arrsetlen(p->m->placement_report, report_len + 1);
        memcpy(p->m->placement_report, report, report_len);
        p->m->placement_report[report_len] = '\0';
        stbds_arrfree(p->kernels);
        p->kernels = infos;
        infos = NULL;
        p->wgmma = gpuir__module_uses_wgmma(p->m);
        L->hit = true;
        c->stats.lowered_hits++;
    }
    gpuir_module_destroy(lowered);
    stbds_arrfree(infos);
    GPUIR_FREE(text);
}

/* Keys p's module and looks its lowered program up (timed in cache_ms; the
   lookup is not counted in the hits and misses, which count compiled
   modules, but in lowered_hits). */
static gpuir_result gpuir__lowered_find(gpuir_program *p, gpuir__lowered *L) {
    if (stbds_arrlenu(p->m->globals)) return GPUIR_OK;   /* their data is the module's, not its text's */
    if (p->ctx->fault.fail_at) return GPUIR_OK;  /* KNOWN GAP: a hit whose module then fails to load
                                                    can fail to render (reductions); docs/cache.md */
    double t0 = gpuir__now_ms();
    gpuir_result r = gpuir__lowered_key(p, L);
    gpuir__cache *c = r ? NULL : gpuir__ctx_cache(p->ctx);
    if (!r && !c) r = p->ctx->result;
    if (r) return r;
    gpuir__cache_stats before = c->stats;
    const void *bytes;
    size_t size;
    bool found = gpuir__cache_get(c, L->key, GPUIR__LOWERED_EXT, &bytes, &size);
    c->stats.mem_hits = before.mem_hits, c->stats.disk_hits = before.disk_hits, c->stats.misses = before.misses;
    if (found) gpuir__lowered_take(p, c, L, bytes, size);
    p->stats.cache_ms += gpuir__now_ms() - t0;
    return GPUIR_OK;
}

/* A hit's compiled module, into b, as gpuir__cuda_build or gpuir__emu_build
   would give it from the cache (for CUDA, once the context is made). */
static gpuir_result gpuir__lowered_object(gpuir_program *p, gpuir__lowered *L, gpuir__built *b) {
    memcpy(b->key, L->object_key, sizeof b->key);
    b->ext = L->object_ext;
    b->compile = p->backend == GPUIR_BACKEND_CUDA ? gpuir__cuda_compile : gpuir__emu_compile;
    b->size = L->object_size;
    b->image = GPUIR_MALLOC(b->size ? b->size : 1);
    if (!b->image) return gpuir__oom(p->ctx, "a compiled module");
    memcpy(b->image, L->object, b->size);
    b->cached = true;
    if (p->backend != GPUIR_BACKEND_CUDA) return GPUIR_OK;
    double t0 = gpuir__now_ms();
    gpuir_result r = gpuir__cudart_ready(p->ctx, (gpuir__cudart *)p->drv.self);
    p->stats.open_ms += gpuir__now_ms() - t0;
    if (r) { GPUIR_FREE(b->image); b->image = NULL; }
    return r;
}

/* Whether two CUDA C sources are the same but for their comments. */
static bool gpuir__lowered_same_code(const char *a, const char *b) {
    for (;;) {
        while (a[0] == '/' && a[1] == '*') a = strstr(a + 2, "*/") ? strstr(a + 2, "*/") + 2 : a + strlen(a);
        while (b[0] == '/' && b[1] == '*') b = strstr(b + 2, "*/") ? strstr(b + 2, "*/") + 2 : b + strlen(b);
        if (*a != *b) return false;
        if (!*a) return true;
        a++, b++;
    }
}

/* Whether the printed lowered module `ir`, parsed back, renders the code p
   compiled (checked once, when storing: a module whose text loses what
   codegen reads is never stored). The context's error is left as it was. */
static bool gpuir__lowered_round_trips(gpuir_program *p, const char *ir) {
    gpuir_module *back = gpuir_module_parse(p->ctx, ir, strlen(ir), "<lowered program>");
    gpuir__cg_kernel_info *infos = NULL;
    char *source = back ? gpuir__cg_module(back, p->backend == GPUIR_BACKEND_CUDA ? &gpuir__cg_cuda : &gpuir__cg_emu,
                                           &infos) : NULL;
    bool same = source && p->source && gpuir__lowered_same_code(source, p->source);
    if (!source && p->ctx->result == GPUIR_ERR_OUT_OF_MEMORY && p->ctx->cache)
        gpuir__cache_msg(p->ctx->cache->last_error, "cannot store the lowered program: out of memory");
    if (!source) gpuir_ctx_clear_error(p->ctx);   /* the make succeeded: the context was clear */
    GPUIR_FREE(source);
    stbds_arrfree(infos);
    gpuir_module_destroy(back);
    return same;
}

/* Stores p's lowered program after a make that lowered it and loaded its
   module (not counted in the writes, which count compiled modules). */
static gpuir_result gpuir__lowered_store(gpuir_program *p, const gpuir__lowered *L) {
    gpuir__cache *c = gpuir__ctx_cache(p->ctx);
    if (!c || !*L->object_key || !*L->key || stbds_arrlenu(p->m->globals) || !gpuir__lowered_storable(p))
        return GPUIR_OK;
    size_t size = 0;
    size = 1;
    char *entry = gpuir__lowered_encode(p, L, &size);
    if (!entry && size == 0) return GPUIR_OK;    /* it does not round-trip: not stored */
    if (!entry) return gpuir__oom(p->ctx, "the lowered program's cache entry");
    gpuir__cache_stats before = c->stats;
    gpuir_result r = gpuir__cache_put(c, L->key, GPUIR__LOWERED_EXT, entry, size);
    c->stats.writes = before.writes, c->stats.write_failures = before.write_failures;
    GPUIR_FREE(entry);
    return r;
}

/* Compiles the source (or finds it in the cache; on a lowered-program hit,
   the module L names), loads it and looks up each kernel; stores in the
   cache only a module that loaded (and its key in L). A cached module that
   fails to load is evicted and compiled again, once. */
static gpuir_result gpuir__program_load(gpuir_program *p, gpuir__lowered *L) {
    gpuir__built b;
    memset(&b, 0, sizeof b);
    gpuir__cache_stats before;
    memset(&before, 0, sizeof before);
    if (p->ctx->cache) before = gpuir__cache_get_stats(p->ctx->cache);
    double t0 = gpuir__now_ms();
    gpuir_result r = p->ctx->dump_dir ? gpuir__program_dump(p) : GPUIR_OK;
    if (!r) r = L->hit ? gpuir__lowered_object(p, L, &b)
                : p->backend == GPUIR_BACKEND_CUDA ? gpuir__cuda_build(p, &b) : gpuir__emu_build(p, &b);
    if (r) return r;
    if (p->ctx->log_level) gpuir__program_log_compile(p, t0, before, b.size);
    r = gpuir__drv_check(p->ctx, &p->drv, p->drv.enter(p->drv.self), "cuCtxPushCurrent", "loading the module");
    if (r) { GPUIR_FREE(b.image); return r; }
    const char *call;
    char what[GPUIR_MAX_NAME + 48], doing[GPUIR_MAX_NAME + 400];
    double t1 = gpuir__now_ms();
    int rc = gpuir__program_load_image(p, &b, &call, what);
    p->stats.load_ms += gpuir__now_ms() - t1;
    bool rebuilt = rc && b.cached && gpuir__load_failure_is_the_image(rc);
    if (rebuilt) {
        const char *name = NULL, *text = NULL, *detail = "";
        if (p->drv.describe) p->drv.describe(p->drv.self, rc, &name, &text, &detail);
        snprintf(doing, sizeof doing, "%s failed (%.60s%s%.200s) while %s", call, name ? name : "error",
                 *detail ? ": " : "", detail, what);
        gpuir__cached_evict(p, &b, doing);
        GPUIR_FREE(b.image);
        b.image = NULL, b.size = 0, b.cached = false;
        r = p->source ? GPUIR_OK : gpuir__program_codegen(p);     /* a lowered-program hit has none yet */
        if (!r) r = gpuir__cached_compile(p, &b);
        if (!r) rc = gpuir__program_load_image(p, &b, &call, what);
    }
    snprintf(doing, sizeof doing, "%s (%s)", what, rebuilt ? "compiled again after the cached module failed to "
             "load; it was evicted from the cache" : b.cached ? "a module from the cache" : "freshly compiled; "
             "not cached");
    if (!r && rc) r = gpuir__drv_check(p->ctx, &p->drv, rc, call, doing);
    if (!r) r = gpuir__cached_store(p, &b);      /* only what loaded */
    if (!r) {
        memcpy(L->object_key, b.key, sizeof b.key);
        if (b.ext != L->object_ext) snprintf(L->object_ext, sizeof L->object_ext, "%s", b.ext);  /* a miss's */
    }
    GPUIR_FREE(b.image);
    rc = p->drv.leave(p->drv.self);
    if (!r) r = gpuir__drv_check(p->ctx, &p->drv, rc, "cuCtxPopCurrent", "loading the module");
    return r;
}

GPUIRDEF gpuir_program *gpuir_program_make(gpuir_module *m, const gpuir_program_desc *desc) {
    if (!m) return NULL;                       /* a failed parse: the context has the error */
    gpuir_ctx *ctx = m->ctx;
    if (ctx->result != GPUIR_OK) return NULL;
    if (desc && ((int)desc->backend < GPUIR_BACKEND_AUTO || desc->backend > GPUIR_BACKEND_REF)) {
        gpuir__fail(ctx, GPUIR_ERR_INVALID_ARGUMENT, "program_make: desc.backend %d is not a "
                    "gpuir_backend", (int)desc->backend);
        return NULL;
    }
    gpuir_program *p = (gpuir_program *)gpuir__calloc(1, sizeof *p);
    if (!p) { gpuir__oom(ctx, "a program"); return NULL; }
    if (desc) p->desc = *desc;
    p->ctx = ctx;
    p->m = m;
    p->backend = p->desc.backend;
    if (p->backend == GPUIR_BACKEND_REF) {      /* the interpreter runs the module as it is */
        stbds_arrput(ctx->programs, p);
        return p;
    }
    gpuir_result r = GPUIR_OK;
    double t0 = gpuir__now_ms();
    if (p->backend == GPUIR_BACKEND_AUTO || p->backend == GPUIR_BACKEND_CUDA) {
        r = gpuir__cuda_backend_open(p);
        if (!r) p->backend = GPUIR_BACKEND_CUDA;
        else if (p->backend == GPUIR_BACKEND_AUTO) {        /* remember why, then emulate */
            snprintf(p->why_not_cuda, sizeof p->why_not_cuda, "%s", gpuir_ctx_error(ctx));
            gpuir_ctx_clear_error(ctx);
            r = GPUIR_OK;
            p->backend = GPUIR_BACKEND_EMU;
        }
    }
    p->stats.open_ms = gpuir__now_ms() - t0;
    bool tensor_level = !r && gpuir__module_is_tensor_level(m);
    if (tensor_level && p->backend == GPUIR_BACKEND_CUDA) {    /* lowered for the device it will run on */
        const gpuir__cuda_device *dev = &((gpuir__cudart *)p->drv.self)->dev;
        m->target.sm = dev->sm;
        m->target.sm_count = dev->sm_count;
    }
    gpuir__lowered L;
    memset(&L, 0, sizeof L);
    if (!r) r = gpuir__lowered_find(p, &L);          /* a hit: m is lowered, no passes or codegen */
    if (!r && tensor_level && !L.hit) {
        double t1 = gpuir__now_ms();
        r = gpuir_module_run_passes(m, p->desc.synchronous ? GPUIR_SYNC_PIPELINE : GPUIR_DEFAULT_PIPELINE, NULL);
        p->stats.lower_ms = gpuir__now_ms() - t1;
    }
    if (!r && p->backend == GPUIR_BACKEND_EMU) {
        double t1 = gpuir__now_ms();
        r = gpuir__emu_open(p);
        p->stats.open_ms += gpuir__now_ms() - t1;
    }
    for (size_t f = 0; !r && f < stbds_arrlenu(m->funcs); f++)
        if (!m->funcs[f].kernel) r = gpuir__verify_placed(m, (uint32_t)f + 1);
    if (!r) r = gpuir__program_check_memory(p);
    if (!r) gpuir__program_count_streams(p);
    if (!r && ctx->fault.fail_at) r = gpuir__fault_wrap(p);
    if (!r && (!L.hit || ctx->dump_dir)) r = gpuir__program_codegen(p);
    if (!r) r = gpuir__program_load(p, &L);
    if (!r && !L.hit) r = gpuir__lowered_store(p, &L);
    stbds_arrput(ctx->programs, p);
    if (r) { gpuir_program_destroy(p); return NULL; }
    return p;
}

GPUIRDEF void gpuir_program_destroy(gpuir_program *p) {
    if (!p) return;
    gpuir_ctx *ctx = p->ctx;
    for (size_t i = 0; i < stbds_arrlenu(ctx->programs); i++)
        if (ctx->programs[i] == p) { stbds_arrdel(ctx->programs, i); break; }
    gpuir__fault_unwrap(p);                      /* teardown is not under test */
    gpuir__xstream_forget(ctx, p);               /* its queued work finishes in gpuir__emu_close */
    if ((p->module || stbds_arrlenu(p->resident) || stbds_arrlenu(p->graphs)) && p->drv.enter) {
        p->drv.enter(p->drv.self);
        p->drv.synchronize(p->drv.self);         /* an asynchronous run's work, before its kernels go */
        for (size_t i = 0; i < stbds_arrlenu(p->resident); i++)
            if (p->resident[i].dev && !p->resident[i].external) p->drv.mem_free(p->drv.self, p->resident[i].dev, 0);
        for (size_t i = 0; i < stbds_arrlenu(p->graphs); i++) gpuir__graph_drop(p, &p->graphs[i]);
        if (p->module) p->drv.module_unload(p->drv.self, p->module);
        p->drv.leave(p->drv.self);
    }
    stbds_arrfree(p->resident);
    stbds_arrfree(p->graphs);
    gpuir__args_forget(p);
    GPUIR_FREE(p->run_slots);
    GPUIR_FREE(p->launch_kernel);
    GPUIR_FREE(p->run_skip);
    if (p->backend == GPUIR_BACKEND_CUDA) gpuir__cuda_backend_close(p);
    if (p->backend == GPUIR_BACKEND_EMU) gpuir__emu_close(p);
    GPUIR_FREE(p->source);
    stbds_arrfree(p->kernels);
    stbds_arrfree(p->functions);
    stbds_arrfree(p->tmaps);
    GPUIR_FREE(p);
}

/* A NULL program (a failed make) answers: AUTO, no stats, "" and "". */
GPUIRDEF gpuir_backend gpuir_program_backend(const gpuir_program *p) { return p ? p->backend : GPUIR_BACKEND_AUTO; }

GPUIRDEF gpuir_program_stats gpuir_program_get_stats(const gpuir_program *p) {
    gpuir_program_stats none;
    memset(&none, 0, sizeof none);
    return p ? p->stats : none;
}
/* A program whose lowered program came from the cache renders its source
   only when asked (it did not need it). */
GPUIRDEF const char *gpuir_program_source(const gpuir_program *p) {
    if (p && !p->source && p->module) gpuir__program_codegen((gpuir_program *)(uintptr_t)p);
    return p && p->source ? p->source : "";
}
GPUIRDEF const char *gpuir_program_why_not_cuda(const gpuir_program *p) {
    return p ? p->why_not_cuda : "";
}


/* ---- fault injection: the device table, failing its k-th call ----
   Tests set ctx->fault (they include the implementation); programs made
   while fail_at is set count their table calls in ctx->fault.calls, and
   call number fail_at (and every later one if persistent) fails with
   fault.code, or with a code natural to the call. A failed free or unload
   still releases (as a driver whose context died would), so the loop can
   check that nothing leaks. */
typedef struct gpuir__fault {
    gpuir__drv inner;
    struct gpuir__fault_plan *plan;   /* the context's */
} gpuir__fault;

static int gpuir__fault_hit(gpuir__fault *F, int natural) {
    struct gpuir__fault_plan *P = F->plan;
    P->calls++;
    bool hit = P->fail_at && (P->calls == P->fail_at || (P->persistent && P->calls > P->fail_at));
    P->injected += hit;
    return hit ? (P->code ? P->code : natural) : 0;
}

#define GPUIR__FAULT_SELF gpuir__fault *F = (gpuir__fault *)self
static int gpuir__fault_enter(void *self) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 201);                  /* CUDA_ERROR_INVALID_CONTEXT */
    return rc ? rc : F->inner.enter(F->inner.self);
}
static int gpuir__fault_leave(void *self) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.leave(F->inner.self);
    int hit = gpuir__fault_hit(F, 201);
    return hit ? hit : rc;
}
static int gpuir__fault_reserve(void *self, unsigned streams, unsigned events) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 2);
    return rc ? rc : F->inner.streams_reserve(F->inner.self, streams, events);
}
static int gpuir__fault_alloc(void *self, gpuir__dptr *ptr, size_t bytes, unsigned stream) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 2);                    /* CUDA_ERROR_OUT_OF_MEMORY */
    return rc ? rc : F->inner.mem_alloc(F->inner.self, ptr, bytes, stream);
}
static int gpuir__fault_free(void *self, gpuir__dptr ptr, unsigned stream) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.mem_free(F->inner.self, ptr, stream);
    int hit = gpuir__fault_hit(F, 1);
    return hit ? hit : rc;
}
static int gpuir__fault_htod(void *self, gpuir__dptr dst, const void *src, size_t n, unsigned stream) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 1);
    return rc ? rc : F->inner.copy_htod(F->inner.self, dst, src, n, stream);
}
static int gpuir__fault_dtoh(void *self, void *dst, gpuir__dptr src, size_t n, unsigned stream) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 1);
    return rc ? rc : F->inner.copy_dtoh(F->inner.self, dst, src, n, stream);
}
static int gpuir__fault_dtod(void *self, gpuir__dptr dst, gpuir__dptr src, size_t n, unsigned stream) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 1);
    return rc ? rc : F->inner.copy_dtod(F->inner.self, dst, src, n, stream);
}
static int gpuir__fault_load(void *self, void **module, const void *image, size_t size) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 200);                  /* CUDA_ERROR_INVALID_IMAGE */
    return rc ? rc : F->inner.module_load(F->inner.self, module, image, size);
}
static int gpuir__fault_unload(void *self, void *module) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.module_unload(F->inner.self, module);
    int hit = gpuir__fault_hit(F, 1);
    return hit ? hit : rc;
}
static int gpuir__fault_function(void *self, void **fn, void *module, const char *name) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 500);                  /* CUDA_ERROR_NOT_FOUND */
    return rc ? rc : F->inner.function_get(F->inner.self, fn, module, name);
}
static int gpuir__fault_launch(void *self, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem,
                               void **params, unsigned n_params, unsigned stream) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 1);
    return rc ? rc : F->inner.launch(F->inner.self, fn, grid, block, smem, params, n_params, stream);
}
static int gpuir__fault_record(void *self, unsigned event, unsigned stream) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 1);
    return rc ? rc : F->inner.event_record(F->inner.self, event, stream);
}
static int gpuir__fault_wait(void *self, unsigned stream, unsigned event) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 1);
    return rc ? rc : F->inner.stream_wait(F->inner.self, stream, event);
}
/* A failed synchronize still lets the work finish (the run frees after it). */
static int gpuir__fault_event_sync(void *self, unsigned event) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.event_synchronize(F->inner.self, event);
    int hit = gpuir__fault_hit(F, 1);
    return hit ? hit : rc;
}
static int gpuir__fault_sync(void *self) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.synchronize(F->inner.self);
    int hit = gpuir__fault_hit(F, 1);
    return hit ? hit : rc;
}
static int gpuir__fault_host_alloc(void *self, void **ptr, size_t bytes) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 2);
    return rc ? rc : F->inner.host_alloc(F->inner.self, ptr, bytes);
}
static int gpuir__fault_host_free(void *self, void *ptr) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.host_free(F->inner.self, ptr);
    int hit = gpuir__fault_hit(F, 1);
    return hit ? hit : rc;
}
static int gpuir__fault_capture_begin(void *self, unsigned streams) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 900);                  /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
    return rc ? rc : F->inner.capture_begin(F->inner.self, streams);
}
/* A failed end still ends the capture and keeps no graph. */
static int gpuir__fault_capture_end(void *self, void **graph) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.capture_end(F->inner.self, graph);
    int hit = gpuir__fault_hit(F, 1);
    if (hit && *graph) F->inner.graph_destroy(F->inner.self, *graph);
    if (hit) *graph = NULL;
    return hit ? hit : rc;
}
static int gpuir__fault_graph_launch(void *self, void *graph) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 1);
    return rc ? rc : F->inner.graph_launch(F->inner.self, graph);
}
static int gpuir__fault_graph_destroy(void *self, void *graph) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.graph_destroy(F->inner.self, graph);
    int hit = gpuir__fault_hit(F, 1);
    return hit ? hit : rc;
}
static int gpuir__fault_tensor_map(void *self, gpuir__tmap *map, const gpuir__tmap_desc *desc) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 1);                    /* CUDA_ERROR_INVALID_VALUE */
    return rc ? rc : F->inner.tensor_map_encode(F->inner.self, map, desc);
}
static int gpuir__fault_host_register(void *self, void *ptr, size_t bytes) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 2);                    /* CUDA_ERROR_OUT_OF_MEMORY: cannot pin */
    return rc ? rc : F->inner.host_register(F->inner.self, ptr, bytes);
}
static int gpuir__fault_host_unregister(void *self, void *ptr) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.host_unregister(F->inner.self, ptr);
    int hit = gpuir__fault_hit(F, 713);                 /* CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED */
    return hit ? hit : rc;
}
static int gpuir__fault_stream_create(void *self, void **stream) {
    GPUIR__FAULT_SELF;
    int rc = gpuir__fault_hit(F, 2);
    return rc ? rc : F->inner.stream_create(F->inner.self, stream);
}
static int gpuir__fault_stream_destroy(void *self, void *stream) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.stream_destroy(F->inner.self, stream);
    int hit = gpuir__fault_hit(F, 400);                 /* CUDA_ERROR_INVALID_HANDLE */
    return hit ? hit : rc;
}
/* A failed wait still lets the work finish, as event_synchronize. */
static int gpuir__fault_stream_sync(void *self, void *stream) {
    GPUIR__FAULT_SELF;
    int rc = F->inner.stream_synchronize(F->inner.self, stream);
    int hit = gpuir__fault_hit(F, 400);
    return hit ? hit : rc;
}
/* Unbinding (NULL) always unbinds, so a failed run leaves no stream bound. */
static int gpuir__fault_stream_bind(void *self, void *stream, unsigned lane) {
    GPUIR__FAULT_SELF;
    if (!stream) {
        int rc = F->inner.stream_bind(F->inner.self, stream, lane);
        int hit = gpuir__fault_hit(F, 400);
        return hit ? hit : rc;
    }
    int rc = gpuir__fault_hit(F, 400);
    return rc ? rc : F->inner.stream_bind(F->inner.self, stream, lane);
}
static int gpuir__fault_stream_capturing(void *self, void *stream, int *capturing) {
    GPUIR__FAULT_SELF;
    *capturing = 0;
    int rc = gpuir__fault_hit(F, 400);
    return rc ? rc : F->inner.stream_capturing(F->inner.self, stream, capturing);
}
static void gpuir__fault_describe(void *self, int code, const char **name, const char **text, const char **detail) {
    GPUIR__FAULT_SELF;
    F->inner.describe(F->inner.self, code, name, text, detail);
    *detail = "injected by the fault test";
}
#undef GPUIR__FAULT_SELF

/* Wraps table *d (a program's, or the context's device's) in a fault
   table; *out gets the wrapper to free (gpuir__fault_unwrap_drv). */
static gpuir_result gpuir__fault_wrap_drv(gpuir_ctx *ctx, gpuir__drv *drv, struct gpuir__fault **out) {
    gpuir__fault *F = (gpuir__fault *)gpuir__calloc(1, sizeof *F);
    if (!F) return gpuir__oom(ctx, "fault injection");
    F->inner = *drv;
    F->plan = &ctx->fault;
    gpuir__drv d = {drv->name, F, gpuir__fault_enter, gpuir__fault_leave, gpuir__fault_reserve, gpuir__fault_alloc,
                    gpuir__fault_free, gpuir__fault_htod, gpuir__fault_dtoh, gpuir__fault_dtod, gpuir__fault_load,
                    gpuir__fault_unload, gpuir__fault_function, gpuir__fault_launch, gpuir__fault_record,
                    gpuir__fault_wait, gpuir__fault_event_sync, gpuir__fault_sync, gpuir__fault_describe,
                    drv->lost, gpuir__fault_host_alloc, gpuir__fault_host_free, gpuir__fault_capture_begin,
                    gpuir__fault_capture_end, gpuir__fault_graph_launch, gpuir__fault_graph_destroy,
                    gpuir__fault_tensor_map, gpuir__fault_host_register, gpuir__fault_host_unregister,
                    gpuir__fault_stream_create, gpuir__fault_stream_destroy, gpuir__fault_stream_sync,
                    gpuir__fault_stream_bind, gpuir__fault_stream_capturing};
    *drv = d;
    *out = F;
    return GPUIR_OK;
}

static gpuir_result gpuir__fault_wrap(gpuir_program *p) {
    return gpuir__fault_wrap_drv(p->ctx, &p->drv, &p->fault);
}

static void gpuir__fault_unwrap(gpuir_program *p) {
    if (!p->fault) return;
    p->drv = p->fault->inner;
    GPUIR_FREE(p->fault);
    p->fault = NULL;
}

/* Destroys the programs the caller left, and the kernel cache (at context
   teardown). */
static void gpuir__runtime_free(gpuir_ctx *ctx) {
    while (stbds_arrlenu(ctx->programs)) gpuir_program_destroy(ctx->programs[stbds_arrlenu(ctx->programs) - 1]);
    stbds_arrfree(ctx->programs);
    if (ctx->cache) gpuir__cache_destroy(ctx->cache);
    ctx->cache = NULL;
    gpuir__emu_toolchain_free(ctx->emu_toolchain);
    ctx->emu_toolchain = NULL;
    gpuir__devices_free(ctx);
    gpuir__cudart_close(ctx->cuda);
    ctx->cuda = NULL;
    GPUIR_FREE(ctx->cache_dir_copy);
}

GPUIRDEF void gpuir_backend_tolerance(gpuir_backend b, gpuir_dtype dtype, double *rtol, double *atol) {
    gpuir_dtype_tolerance(dtype, rtol, atol);
    if (atol && b != GPUIR_BACKEND_REF && dtype == GPUIR_F32) *atol = 1e-5;
}

GPUIRDEF const char *gpuir_backend_name(gpuir_backend b) {
    switch (b) {
    case GPUIR_BACKEND_AUTO: return "auto";
    case GPUIR_BACKEND_CUDA: return "cuda";
    case GPUIR_BACKEND_EMU: return "emu";
    case GPUIR_BACKEND_REF: return "ref";
    default: return "invalid";
    }
}

/* ====================================================================== */
// >>rt.emu
// The CPU implementation of the device table: device memory is host memory,
// a module is the same CUDA C compiled by the host C compiler (with the
// emulator prelude) into a shared object and dlopen'ed, and a launch runs
// each block's threads as fibers. Work on streams is queued and run only
// when the host waits, in a seeded interleaving of the streams, and freed
// memory is kept until they are idle: missing waits show. Reads:
// codegen.cuda, the environment (GPUIR_CC, GPUIR_CC_TIMEOUT, TMPDIR,
// GPUIR_EMU_MAX_THREADS: the work bound, threads per launch). Writes: files
// in the context's private temporary directory ($TMPDIR/gpuir-<pid>-XXXXXX,
// removed with the context; a dead process's is removed by the next one),
// nothing else.
/*
emu_fibers.h — gpuir CPU emulator: the fiber engine.

   Runs one CUDA grid launch on the host CPU. Blocks run one after another in
   (z, y, x) order; inside a block every CUDA thread is a fiber (a user-space
   coroutine on its own small stack) and fibers switch only at __syncthreads
   and at warp collectives (__syncwarp, which the prelude also uses for
   shuffles). Kernels launched without barriers run as plain sequential calls
   on the caller's stack, with no fibers at all.

   DESIGN
     - Context switch: inline assembly on x86-64 (System V) and aarch64 that
       saves only what the ABI says a callee must preserve; the asm clobbers
       every general register, so the compiler saves the callee-saved ones
       (rbx r12-r15 / x19-x30 d8-d15) in the switch function's prologue, and
       the asm itself saves rsp, rbp, the resume address, the x87 control word
       and MXCSR (x86-64) or sp, x29 and the resume address (aarch64). Other
       targets, or -DGPUIR_EMU_UCONTEXT, use makecontext/swapcontext.
     - Stacks: one malloc for all the fibers' stacks, each stack page aligned
       with a PROT_NONE guard page below it (an overflow faults at once
       instead of corrupting the heap), default 64 KiB, kept and reused
       across blocks and launches; the engine only grows it.
     - Scheduling: a FIFO run queue, round robin. A fiber that blocks switches
       straight to the next runnable fiber (one switch per hand-over); the
       last thread to arrive at a barrier opens it and carries on. When the
       queue runs dry control returns to the launching context: either every
       thread has exited, or the block is deadlocked (reported, not hung).
     - Barriers: __syncthreads waits for the threads of the block that have
       not exited, __syncwarp for the live lanes of one warp (warps of 32 by
       linear thread index; the last may be partial). A thread that exits
       re-checks both barriers. Barriers count generations and are reusable.
     - No global or static mutable state: several engines may run in
       parallel on different OS threads (one engine is one thread's at a time).
     - ASan: fiber switches are announced with __sanitizer_start_switch_fiber
       / __sanitizer_finish_switch_fiber and reused stacks are unpoisoned.
       Valgrind: each stack is registered with VALGRIND_STACK_REGISTER when
       <valgrind/valgrind.h> exists (define GPUIR_EMU_NO_VALGRIND to skip).

   LIMITS
     - Scheduling is cooperative: a thread that spins on memory written by
       another thread, with no barrier and no yield inside the loop, never
       yields and hangs the launch (as a livelock; it is not detected). The
       prelude's mbarrier waits call lane->yield: the thread goes to the back
       of the run queue; `progress` (barrier arrivals, exits, mbarrier
       updates) tells a spin that can end from one that cannot: two rounds
       of the queue of yields without progress are a deadlock, reported.
     - A kernel overflowing its fiber stack hits the guard page (SIGSEGV);
       raise stack_bytes for kernels with big local arrays. ASan builds use
       bigger frames, so they need more stack than plain builds.
     - Without <valgrind/valgrind.h>, valgrind cannot tell the fiber stacks
       from heap memory and reports false errors.

   Needs POSIX (<unistd.h>, <sys/mman.h>) and builds with -std=c99 without
   any feature-test macro (also as C11 and C++17). Windows is not supported. */

#include <sys/mman.h>
#include <unistd.h>

/* The ABI shared with the kernel prelude (codegen.cuda renders the same
   text into the emulator prelude). */
GPUIR__EMU_ABI
typedef void (*gpuir_emu_entry)(gpuir_emu_lane *lane, void **params);

/* ---------------------------------------------------------------------- */
/* Compile-time choices: switch backend, ASan, Valgrind.                   */

#if !defined(GPUIR_EMU_UCONTEXT) && defined(__x86_64__) && !defined(__ILP32__) && !defined(_WIN32)
#define GPUIR__EMU_X64 1
#elif !defined(GPUIR_EMU_UCONTEXT) && defined(__aarch64__) && !defined(__ILP32__) && !defined(_WIN32)
#define GPUIR__EMU_A64 1
#else
#define GPUIR__EMU_UCTX 1
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define GPUIR__EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUIR__EMU_ASAN 1
#endif
#endif
#ifdef GPUIR__EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define GPUIR__EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPUIR__EMU_TSAN 1
#endif
#endif
#ifdef GPUIR__EMU_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#if !defined(GPUIR_EMU_NO_VALGRIND) && defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define GPUIR__EMU_VALGRIND 1
#endif
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define GPUIR__EMU_NOIPA __attribute__((noinline, noipa))
#else
#define GPUIR__EMU_NOIPA __attribute__((noinline))
#endif

#define GPUIR__EMU_DEFAULT_STACK ((size_t)64 << 10)
#define GPUIR__EMU_MIN_STACK ((size_t)16 << 10)
#define GPUIR__EMU_MAX_THREADS 1024u
#define GPUIR__EMU_MAX_SHARED ((size_t)1 << 20)

/* ---------------------------------------------------------------------- */
/* Contexts and the raw switch.                                            */

struct gpuir__emu_ctx;
typedef void (*gpuir__emu_fn)(struct gpuir__emu_ctx *self);

/* A suspended execution context. The asm backends rely on the offsets of
   the first fields (checked below). */
typedef struct gpuir__emu_ctx {
#ifdef GPUIR__EMU_UCTX
    ucontext_t uc;
    gpuir__emu_fn fn;             /* what a fresh context runs */
#else
    void *sp;                     /* 0: stack pointer */
    void *fp;                     /* 8: frame pointer (rbp / x29) */
    gpuir__emu_fn pc;             /* 16: resume address, or the entry of a fresh context */
    unsigned short fpcw, pad;     /* 24: x87 control word (x86-64) */
    unsigned mxcsr;               /* 28: MXCSR (x86-64) */
#endif
    const void *stack_lo;         /* bounds of its stack, for ASan (learned for the launcher) */
    size_t stack_size;
    void *fake_stack;             /* ASan's fake stack while suspended */
    void *tsan_fiber;             /* TSan's fiber for it (the launcher's: the thread's current) */
} gpuir__emu_ctx;

#ifndef GPUIR__EMU_UCTX
typedef char gpuir__emu_ctx_layout_check[(offsetof(gpuir__emu_ctx, fp) == 8 && offsetof(gpuir__emu_ctx, pc) == 16
                                          && offsetof(gpuir__emu_ctx, fpcw) == 24
                                          && offsetof(gpuir__emu_ctx, mxcsr) == 28) ? 1 : -1];
#endif

#if defined(GPUIR__EMU_X64)
/* Saves the running context in *from and resumes *to. rbx, r12-r15 are
   saved by the compiler (they are clobbered); rsp, rbp, the resume address,
   the x87 control word and MXCSR by the asm. A fresh context receives `to`
   as its first argument (rdi). */
static GPUIR__EMU_NOIPA void gpuir__emu_switch_raw(gpuir__emu_ctx *from, gpuir__emu_ctx *to)
{
    __asm__ __volatile__(
        "leaq 1f(%%rip), %%rax\n\t"
        "movq %%rax, 16(%0)\n\t"
        "movq %%rsp, 0(%0)\n\t"
        "movq %%rbp, 8(%0)\n\t"
        "fnstcw 24(%0)\n\t"
        "stmxcsr 28(%0)\n\t"
        "fldcw 24(%1)\n\t"
        "ldmxcsr 28(%1)\n\t"
        "movq 0(%1), %%rsp\n\t"
        "movq 8(%1), %%rbp\n\t"
        "movq %1, %%rdi\n\t"
        "jmpq *16(%1)\n"
        "1:\n\t"
#if defined(__CET__) && (__CET__ & 1)
        "endbr64\n\t"
#endif
        : "+D"(from), "+S"(to)
        :
        : "rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
          "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
}

/* Records the current x87 control word and MXCSR in c (fresh contexts start with them). */
static void gpuir__emu_fpu_capture(gpuir__emu_ctx *c)
{
    __asm__ __volatile__("fnstcw %0\n\tstmxcsr %1" : "=m"(c->fpcw), "=m"(c->mxcsr));
}
#elif defined(GPUIR__EMU_A64)
/* Saves the running context in *from and resumes *to. x19-x28, x30 and
   d8-d15 are saved by the compiler (they are clobbered); sp, x29 and the
   resume address by the asm. A fresh context receives `to` in x0. The
   landing pad is a BTI "jc" hint, a no-op on cores without BTI. */
static GPUIR__EMU_NOIPA void gpuir__emu_switch_raw(gpuir__emu_ctx *from, gpuir__emu_ctx *to)
{
    register gpuir__emu_ctx *x0 __asm__("x0") = from;
    register gpuir__emu_ctx *x1 __asm__("x1") = to;
    __asm__ __volatile__(
        "adr x16, 1f\n\t"
        "mov x17, sp\n\t"
        "stp x17, x29, [x0, #0]\n\t"
        "str x16, [x0, #16]\n\t"
        "ldp x17, x29, [x1, #0]\n\t"
        "ldr x16, [x1, #16]\n\t"
        "mov sp, x17\n\t"
        "mov x0, x1\n\t"
        "br x16\n"
        "1:\n\t"
        "hint #38\n\t"
        : "+r"(x0), "+r"(x1)
        :
        : "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15",
          "x16", "x17", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x30",
          "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
          "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27",
          "v28", "v29", "v30", "v31", "memory", "cc");
}

/* Nothing to record on aarch64 (FPCR is left as it is). */
static void gpuir__emu_fpu_capture(gpuir__emu_ctx *c) { (void)c; }
#else
/* Saves the running context in *from and resumes *to with swapcontext. */
static void gpuir__emu_switch_raw(gpuir__emu_ctx *from, gpuir__emu_ctx *to)
{
    swapcontext(&from->uc, &to->uc);
}

/* Runs a fresh ucontext's function; the context's address comes in two halves. */
static void gpuir__emu_uctx_trampoline(unsigned lo, unsigned hi)
{
    uintptr_t p = (uintptr_t)lo | (((uintptr_t)hi << 16) << 16);
    gpuir__emu_ctx *c = (gpuir__emu_ctx *)p;
    c->fn(c);
}

/* Nothing to record: swapcontext saves the floating-point environment. */
static void gpuir__emu_fpu_capture(gpuir__emu_ctx *c) { (void)c; }
#endif

/* Makes c a fresh context that runs fn(c) on the stack [lo, lo+size), with
   the floating-point control state of env. Returns 0, or nonzero if the
   platform refused (ucontext only). */
static int gpuir__emu_ctx_init(gpuir__emu_ctx *c, unsigned char *lo, size_t size, gpuir__emu_fn fn,
                               const gpuir__emu_ctx *env)
{
#if defined(GPUIR__EMU_X64)
    void **top = (void **)(void *)(lo + size);
    top[-1] = NULL;               /* a null return address ends backtraces */
    c->sp = top - 1;              /* as just after a call: rsp + 8 is 16-aligned */
    c->fp = NULL;
    c->pc = fn;
    c->fpcw = env->fpcw;
    c->mxcsr = env->mxcsr;
#elif defined(GPUIR__EMU_A64)
    (void)env;
    c->sp = lo + size;
    c->fp = NULL;
    c->pc = fn;
#else
    uintptr_t p = (uintptr_t)c;
    (void)env;
    c->fn = fn;
    if (getcontext(&c->uc) != 0) return 1;
    c->uc.uc_stack.ss_sp = lo;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = NULL;
    makecontext(&c->uc, (void (*)(void))gpuir__emu_uctx_trampoline, 2, (unsigned)(p & 0xffffffffu),
                (unsigned)((p >> 16) >> 16));
#endif
    c->stack_lo = lo;
    c->stack_size = size;
    c->fake_stack = NULL;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The engine.                                                             */

enum { GPUIR__EMU_RUNNABLE, GPUIR__EMU_WAIT_BLOCK, GPUIR__EMU_WAIT_WARP, GPUIR__EMU_DONE };

/* One CUDA thread: its context (first member), its lane and its stack. */
typedef struct gpuir__emu_fiber {
    gpuir__emu_ctx ctx;
    gpuir_emu_lane lane;
    unsigned char *stack_lo;      /* usable stack, above its guard page */
    int state;
    unsigned vg_id;               /* Valgrind stack id */
} gpuir__emu_fiber;

/* The barrier of one warp: live lanes, lanes waiting, openings so far. */
typedef struct gpuir__emu_warp { unsigned live, waiting, gen; } gpuir__emu_warp;

typedef struct gpuir__emu_engine {
    size_t stack_bytes;           /* usable bytes per stack, a page multiple */
    size_t page;
    unsigned cap;                 /* fibers, queue slots and stacks allocated */
    gpuir__emu_fiber *fibers;
    gpuir__emu_fiber **queue;     /* run queue, a ring of cap slots */
    unsigned q_head, q_count;
    unsigned char *stack_raw;     /* one allocation holding every guard page and stack */
    unsigned char *shared_raw, *shared;
    size_t shared_cap;            /* bytes in shared_raw */
    size_t shared_bytes;          /* this launch's dynamic shared memory */
    unsigned long long slots[32 * 32];
    gpuir__emu_warp warps[32];
    unsigned nthreads, live, block_waiting, block_gen;
    unsigned long long progress;  /* events that can end a spin: barrier arrivals, exits, mbarrier updates */
    unsigned long long progress_seen;
    unsigned idle_yields;         /* yields in a row with no progress */
    gpuir_emu_dim3 block_dim, grid_dim, block_idx;
    gpuir__emu_ctx sched;         /* the launching context */
    gpuir_emu_lane plain;         /* the lane of launches without barriers */
    gpuir_emu_entry entry;
    void **params;
    int running, failed;
    int out_of_memory;            /* the failure was the host's memory (stacks, shared) */
    char *err;
    size_t err_size;
#ifdef GPUIR__EMU_ASAN
    gpuir__emu_ctx *asan_from;    /* the context being switched away from */
#endif
} gpuir__emu_engine;

/* Writes a formatted message into buf (when there is one). */
static void gpuir__emu_vmsg(char *buf, size_t size, const char *fmt, va_list ap)
{
    if (buf && size) vsnprintf(buf, size, fmt, ap);
}

/* Formats a message into a caller buffer directly (used before e is set up). */
static void __attribute__((format(printf, 3, 4))) gpuir__emu_msg(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpuir__emu_vmsg(buf, size, fmt, ap);
    va_end(ap);
}

/* Records the launch's first error: later ones are dropped. */
static void __attribute__((format(printf, 2, 3))) gpuir__emu_fail(gpuir__emu_engine *e, const char *fmt, ...)
{
    va_list ap;
    if (e->failed) return;
    e->failed = 1;
    va_start(ap, fmt);
    gpuir__emu_vmsg(e->err, e->err_size, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------------- */
/* Sanitizer-aware switching.                                              */

#ifdef GPUIR__EMU_ASAN
/* Tells ASan a switch into self finished; learns the bounds of the stack
   we came from (that is how the launcher's stack becomes known). */
static void gpuir__emu_asan_landed(gpuir__emu_engine *e, gpuir__emu_ctx *self)
{
    const void *lo = NULL;
    size_t size = 0;
    __sanitizer_finish_switch_fiber(self->fake_stack, &lo, &size);
    self->fake_stack = NULL;
    e->asan_from->stack_lo = lo;
    e->asan_from->stack_size = size;
}
#endif

/* Switches from the running context to `to`; from_done says `from` will
   never run again (ASan then frees its fake stack). Returns when something
   switches back to `from`. */
static void gpuir__emu_switch(gpuir__emu_engine *e, gpuir__emu_ctx *from, gpuir__emu_ctx *to, int from_done)
{
#ifdef GPUIR__EMU_TSAN
    __tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
#ifdef GPUIR__EMU_ASAN
    e->asan_from = from;
    __sanitizer_start_switch_fiber(from_done ? NULL : &from->fake_stack, to->stack_lo, to->stack_size);
    gpuir__emu_switch_raw(from, to);
    gpuir__emu_asan_landed(e, from);
#else
    (void)e;
    (void)from_done;
    gpuir__emu_switch_raw(from, to);
#endif
}

/* ---------------------------------------------------------------------- */
/* Run queue and barriers.                                                 */

/* Appends a runnable fiber to the run queue. */
static void gpuir__emu_queue_push(gpuir__emu_engine *e, gpuir__emu_fiber *f)
{
    unsigned i = e->q_head + e->q_count++;
    if (i >= e->cap) i -= e->cap;
    e->queue[i] = f;
}

/* Takes the next runnable fiber, or NULL when none is left. */
static gpuir__emu_fiber *gpuir__emu_queue_pop(gpuir__emu_engine *e)
{
    gpuir__emu_fiber *f;
    if (!e->q_count) return NULL;
    f = e->queue[e->q_head];
    if (++e->q_head == e->cap) e->q_head = 0;
    e->q_count--;
    return f;
}

/* The fiber whose lane this is (the lane is embedded in the fiber). */
static gpuir__emu_fiber *gpuir__emu_fiber_of(gpuir_emu_lane *lane)
{
    return (gpuir__emu_fiber *)(void *)((char *)lane - offsetof(gpuir__emu_fiber, lane));
}

/* Suspends f (already marked waiting or done) and runs the next runnable
   fiber, or returns to the launcher when there is none. */
static void gpuir__emu_hand_over(gpuir__emu_engine *e, gpuir__emu_fiber *f, int done)
{
    gpuir__emu_fiber *next = gpuir__emu_queue_pop(e);
    gpuir__emu_switch(e, &f->ctx, next ? &next->ctx : &e->sched, done);
}

/* Opens the block barrier: every waiting thread becomes runnable, in thread order. */
static void gpuir__emu_open_block(gpuir__emu_engine *e)
{
    unsigned i;
    for (i = 0; i < e->nthreads; i++) {
        gpuir__emu_fiber *f = &e->fibers[i];
        if (f->state != GPUIR__EMU_WAIT_BLOCK) continue;
        f->state = GPUIR__EMU_RUNNABLE;
        gpuir__emu_queue_push(e, f);
    }
    e->block_waiting = 0;
    e->block_gen++;
}

/* Opens warp w's barrier: its waiting lanes become runnable, in lane order. */
static void gpuir__emu_open_warp(gpuir__emu_engine *e, unsigned w)
{
    unsigned i, end = (w + 1) * 32 < e->nthreads ? (w + 1) * 32 : e->nthreads;
    for (i = w * 32; i < end; i++) {
        gpuir__emu_fiber *f = &e->fibers[i];
        if (f->state != GPUIR__EMU_WAIT_WARP) continue;
        f->state = GPUIR__EMU_RUNNABLE;
        gpuir__emu_queue_push(e, f);
    }
    e->warps[w].waiting = 0;
    e->warps[w].gen++;
}

/* __syncthreads: waits until every thread of the block that has not exited
   arrives. The last to arrive opens the barrier and goes on. */
static void gpuir__emu_sync_block(gpuir_emu_lane *lane)
{
    gpuir__emu_engine *e = (gpuir__emu_engine *)lane->engine;
    gpuir__emu_fiber *f = gpuir__emu_fiber_of(lane);
    e->progress++;
    if (++e->block_waiting == e->live) {
        gpuir__emu_open_block(e);
        return;
    }
    f->state = GPUIR__EMU_WAIT_BLOCK;
    gpuir__emu_hand_over(e, f, 0);
}

/* __syncwarp: waits until every live lane of this lane's warp arrives. */
static void gpuir__emu_sync_warp(gpuir_emu_lane *lane)
{
    gpuir__emu_engine *e = (gpuir__emu_engine *)lane->engine;
    gpuir__emu_fiber *f = gpuir__emu_fiber_of(lane);
    gpuir__emu_warp *w = &e->warps[lane->warp_id];
    e->progress++;
    if (++w->waiting == w->live) {
        gpuir__emu_open_warp(e, lane->warp_id);
        return;
    }
    f->state = GPUIR__EMU_WAIT_WARP;
    gpuir__emu_hand_over(e, f, 0);
}

/* A thread whose spin (an mbarrier wait) found nothing changed: it goes to
   the back of the run queue and the next fiber runs, so the thread it
   waits for gets its turn. Spins end only through `progress` (mbarrier
   updates, barrier arrivals, exits): when the queue has gone round twice
   with yields and no progress, every runnable thread spins on something no
   thread will change, and the block is deadlocked (reported, not hung). */
static void gpuir__emu_yield(gpuir_emu_lane *lane)
{
    gpuir__emu_engine *e = (gpuir__emu_engine *)lane->engine;
    gpuir__emu_fiber *f = gpuir__emu_fiber_of(lane);
    if (e->progress != e->progress_seen) {
        e->progress_seen = e->progress;
        e->idle_yields = 0;
    }
    if (++e->idle_yields > 2 * (e->q_count + 1)) {
        gpuir__emu_fail(e,
                        "gpuir emulator: deadlock in block (%u,%u,%u): linear thread %u and %u other runnable "
                        "thread(s) spin on mbarrier waits that no thread can complete, %u exited",
                        e->block_idx.x, e->block_idx.y, e->block_idx.z,
                        (unsigned)(f - e->fibers), e->q_count, e->nthreads - e->live);
        e->q_count = 0;                   /* abandon the block: back to the launching context */
        gpuir__emu_switch(e, &f->ctx, &e->sched, 0);
        return;
    }
    gpuir__emu_queue_push(e, f);
    gpuir__emu_hand_over(e, f, 0);
}

/* A thread returned from the kernel: it stops counting for both barriers,
   which may open them, and the next fiber runs. Never returns. */
static void gpuir__emu_fiber_exit(gpuir__emu_engine *e, gpuir__emu_fiber *f)
{
    gpuir__emu_warp *w = &e->warps[f->lane.warp_id];
    f->state = GPUIR__EMU_DONE;
    e->progress++;
    e->live--;
    w->live--;
    if (e->block_waiting && e->block_waiting == e->live) gpuir__emu_open_block(e);
    if (w->waiting && w->waiting == w->live) gpuir__emu_open_warp(e, f->lane.warp_id);
    gpuir__emu_hand_over(e, f, 1);
}

/* The body of every fiber: run the kernel for this thread, then exit. */
static void gpuir__emu_fiber_main(gpuir__emu_ctx *self)
{
    gpuir__emu_fiber *f = (gpuir__emu_fiber *)(void *)self;
    gpuir__emu_engine *e = (gpuir__emu_engine *)f->lane.engine;
#ifdef GPUIR__EMU_ASAN
    gpuir__emu_asan_landed(e, self);
#endif
    e->entry(&f->lane, e->params);
    gpuir__emu_fiber_exit(e, f);
}

/* A barrier called by a kernel launched without barriers: records which. */
static void gpuir__emu_forbidden(gpuir_emu_lane *l, const char *what)
{
    gpuir__emu_fail((gpuir__emu_engine *)l->engine,
                    "gpuir emulator: block (%u,%u,%u) thread (%u,%u,%u): kernel called %s but was "
                    "launched without barriers",
                    l->block_idx.x, l->block_idx.y, l->block_idx.z, l->thread_idx.x, l->thread_idx.y,
                    l->thread_idx.z, what);
}

/* sync_block and sync_warp of launches without barriers. */
static void gpuir__emu_forbidden_block(gpuir_emu_lane *l) { gpuir__emu_forbidden(l, "__syncthreads"); }
static void gpuir__emu_forbidden_warp(gpuir_emu_lane *l)
{
    gpuir__emu_forbidden(l, "__syncwarp (or a warp shuffle)");
}
/* yield of such a launch: a spin there could never end. */
static void gpuir__emu_forbidden_yield(gpuir_emu_lane *l) { gpuir__emu_forbidden(l, "an mbarrier wait"); }

/* ---------------------------------------------------------------------- */
/* Memory: stacks and shared memory.                                       */

/* Gives back every stack, fiber and queue slot (guards re-opened first). */
static void gpuir__emu_release_fibers(gpuir__emu_engine *e)
{
    unsigned i;
    for (i = 0; i < e->cap && e->fibers; i++) {
        gpuir__emu_fiber *f = &e->fibers[i];
#ifdef GPUIR__EMU_VALGRIND
        VALGRIND_STACK_DEREGISTER(f->vg_id);
#endif
#ifdef GPUIR__EMU_TSAN
        if (f->ctx.tsan_fiber) __tsan_destroy_fiber(f->ctx.tsan_fiber);
#endif
        mprotect(f->stack_lo - e->page, e->page, PROT_READ | PROT_WRITE); /* harmless if never guarded */
    }
    GPUIR_FREE(e->stack_raw);
    GPUIR_FREE(e->fibers);
    GPUIR_FREE(e->queue);
    e->stack_raw = NULL;
    e->fibers = NULL;
    e->queue = NULL;
    e->cap = 0;
}

/* Carves cap stacks out of stack_raw, each above a PROT_NONE guard page.
   If the system refuses a guard (mprotect on heap memory is not POSIX), the
   stacks are still usable, just unguarded. */
static void gpuir__emu_carve_stacks(gpuir__emu_engine *e, unsigned cap)
{
    size_t stride = e->page + e->stack_bytes;
    uintptr_t raw = (uintptr_t)e->stack_raw;
    unsigned char *base = e->stack_raw + ((e->page - raw % e->page) % e->page);
    unsigned i;
    int guard = 1;
    for (i = 0; i < cap; i++) {
        gpuir__emu_fiber *f = &e->fibers[i];
        f->stack_lo = base + (size_t)i * stride + e->page;
        if (guard && mprotect(f->stack_lo - e->page, e->page, PROT_NONE) != 0) guard = 0;
#ifdef GPUIR__EMU_VALGRIND
        f->vg_id = VALGRIND_STACK_REGISTER(f->stack_lo, f->stack_lo + e->stack_bytes);
#endif
    }
}

/* Makes room for n fibers: if the engine holds fewer, everything is given
   back and reallocated at the new size (a warp multiple, at least double).
   Returns 0, or nonzero on out of memory (the engine then holds nothing). */
static int gpuir__emu_reserve(gpuir__emu_engine *e, unsigned n)
{
    unsigned cap = (n + 31) / 32 * 32;
    size_t stride = e->page + e->stack_bytes, total;
    if (n <= e->cap) return 0;
    if (cap < 2 * e->cap) cap = 2 * e->cap;
    if (cap > GPUIR__EMU_MAX_THREADS) cap = GPUIR__EMU_MAX_THREADS;
    gpuir__emu_release_fibers(e);
    if (stride < e->stack_bytes || stride > (SIZE_MAX - e->page) / cap) goto oom;
    total = (size_t)cap * stride + e->page;
    e->fibers = (gpuir__emu_fiber *)gpuir__calloc(cap, sizeof *e->fibers);
    e->queue = (gpuir__emu_fiber **)GPUIR_MALLOC(cap * sizeof *e->queue);
    e->stack_raw = (unsigned char *)GPUIR_MALLOC(total);
    if (!e->fibers || !e->queue || !e->stack_raw) goto oom;
    gpuir__emu_carve_stacks(e, cap);
    e->cap = cap;
    return 0;
oom:
    gpuir__emu_release_fibers(e);
    gpuir__emu_fail(e, "gpuir emulator: out of memory for %u fiber stacks of %zu bytes", cap, e->stack_bytes);
    e->out_of_memory = 1;
    return 1;
}

/* Makes room for this launch's dynamic shared memory (16-byte aligned,
   never NULL). Under ASan the bytes past shared_bytes are poisoned. */
static int gpuir__emu_reserve_shared(gpuir__emu_engine *e, size_t shared_bytes)
{
    size_t need = shared_bytes + 32;
    if (need > e->shared_cap) {
#ifdef GPUIR__EMU_ASAN
        if (e->shared_raw) ASAN_UNPOISON_MEMORY_REGION(e->shared_raw, e->shared_cap);
#endif
        GPUIR_FREE(e->shared_raw);
        e->shared_cap = 0;
        e->shared_raw = (unsigned char *)GPUIR_MALLOC(need);
        if (!e->shared_raw) {
            gpuir__emu_fail(e, "gpuir emulator: out of memory for %zu bytes of shared memory", shared_bytes);
            e->out_of_memory = 1;
            return 1;
        }
        e->shared_cap = need;
    }
    e->shared = e->shared_raw + (16 - (uintptr_t)e->shared_raw % 16) % 16;
    e->shared_bytes = shared_bytes;
#ifdef GPUIR__EMU_ASAN
    ASAN_UNPOISON_MEMORY_REGION(e->shared_raw, e->shared_cap);
    ASAN_POISON_MEMORY_REGION(e->shared + shared_bytes, e->shared_raw + e->shared_cap - (e->shared + shared_bytes));
#endif
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Engine lifetime.                                                        */

/* Makes an engine whose fibers get stack_bytes each (0: 64 KiB; rounded up
   to a page, at least 16 KiB). Returns NULL when out of memory. */
static gpuir__emu_engine *gpuir__emu_engine_make(size_t stack_bytes)
{
    gpuir__emu_engine *e = (gpuir__emu_engine *)gpuir__calloc(1, sizeof *e);
    long page = sysconf(_SC_PAGESIZE);
    if (!e) return NULL;
    e->page = page > 0 ? (size_t)page : 4096;
    if (stack_bytes == 0) stack_bytes = GPUIR__EMU_DEFAULT_STACK;
    if (stack_bytes < GPUIR__EMU_MIN_STACK) stack_bytes = GPUIR__EMU_MIN_STACK;
    if (stack_bytes > SIZE_MAX - e->page) stack_bytes = SIZE_MAX - e->page; /* fails at launch */
    e->stack_bytes = (stack_bytes + e->page - 1) / e->page * e->page;
    return e;
}

/* Frees an engine and everything it holds (NULL is fine). */
static void gpuir__emu_engine_destroy(gpuir__emu_engine *e)
{
    if (!e) return;
    gpuir__emu_release_fibers(e);
#ifdef GPUIR__EMU_ASAN
    if (e->shared_raw) ASAN_UNPOISON_MEMORY_REGION(e->shared_raw, e->shared_cap);
#endif
    GPUIR_FREE(e->shared_raw);
    GPUIR_FREE(e);
}

/* ---------------------------------------------------------------------- */
/* Launch.                                                                 */

/* Checks a launch configuration against CUDA's limits. Returns 0 or nonzero
   with the error recorded. */
static int gpuir__emu_check_launch(gpuir__emu_engine *e, gpuir_emu_entry entry, const unsigned grid[3],
                                   const unsigned block[3], size_t shared_bytes)
{
    if (!entry || !grid || !block)
        gpuir__emu_fail(e, "gpuir emulator: launch needs a kernel entry, a grid and a block");
    else if (!block[0] || !block[1] || !block[2])
        gpuir__emu_fail(e, "gpuir emulator: block (%u,%u,%u) has a zero dimension", block[0], block[1], block[2]);
    else if (!grid[0] || !grid[1] || !grid[2])
        gpuir__emu_fail(e, "gpuir emulator: grid (%u,%u,%u) has a zero dimension", grid[0], grid[1], grid[2]);
    else if (block[0] > 1024 || block[1] > 1024 || block[2] > 64)
        gpuir__emu_fail(e, "gpuir emulator: block (%u,%u,%u) exceeds the per-dimension limits (1024,1024,64)",
                        block[0], block[1], block[2]);
    else if ((unsigned long long)block[0] * block[1] * block[2] > GPUIR__EMU_MAX_THREADS)
        gpuir__emu_fail(e, "gpuir emulator: block (%u,%u,%u) has %llu threads, more than %u", block[0], block[1],
                        block[2], (unsigned long long)block[0] * block[1] * block[2], GPUIR__EMU_MAX_THREADS);
    else if (grid[0] > 0x7fffffffu || grid[1] > 65535 || grid[2] > 65535)
        gpuir__emu_fail(e, "gpuir emulator: grid (%u,%u,%u) exceeds the limits (2147483647,65535,65535)", grid[0],
                        grid[1], grid[2]);
    else if (shared_bytes > GPUIR__EMU_MAX_SHARED)
        gpuir__emu_fail(e, "gpuir emulator: %zu bytes of shared memory requested, the limit is %zu", shared_bytes,
                        GPUIR__EMU_MAX_SHARED);
    return e->failed;
}

/* Fills in the lane of linear thread i of the current block. */
static void gpuir__emu_lane_init(gpuir__emu_engine *e, gpuir_emu_lane *l, unsigned i, int barriers)
{
    unsigned bx = e->block_dim.x, by = e->block_dim.y;
    l->thread_idx.x = i % bx;
    l->thread_idx.y = i / bx % by;
    l->thread_idx.z = i / (bx * by);
    l->block_idx = e->block_idx;
    l->block_dim = e->block_dim;
    l->grid_dim = e->grid_dim;
    l->lane_id = i % 32;
    l->warp_id = i / 32;
    l->shared = e->shared;
    l->warp_slots = e->slots + (i / 32) * 32;
    l->sync_block = barriers ? gpuir__emu_sync_block : gpuir__emu_forbidden_block;
    l->sync_warp = barriers ? gpuir__emu_sync_warp : gpuir__emu_forbidden_warp;
    l->yield = barriers ? gpuir__emu_yield : gpuir__emu_forbidden_yield;
    l->progress = &e->progress;
    l->engine = e;
}

/* Resets block-wide state: shared memory poison, live counts, barriers. */
static void gpuir__emu_block_begin(gpuir__emu_engine *e)
{
    unsigned w, nwarps = (e->nthreads + 31) / 32;
    memset(e->shared, 0xFF, e->shared_bytes);
    e->live = e->nthreads;
    e->block_waiting = 0;
    e->block_gen = 0;
    e->progress = e->progress_seen = 0;
    e->idle_yields = 0;
    e->q_head = e->q_count = 0;
    for (w = 0; w < nwarps; w++) {
        e->warps[w].live = (w + 1) * 32 <= e->nthreads ? 32 : e->nthreads - w * 32;
        e->warps[w].waiting = 0;
        e->warps[w].gen = 0;
    }
}

/* Reports a block whose live threads all wait on barriers that cannot open. */
static void gpuir__emu_report_deadlock(gpuir__emu_engine *e)
{
    unsigned i, nblock = 0, nwarp = 0, first_block = 0, first_warp = 0;
    for (i = e->nthreads; i-- > 0;) {
        int s = e->fibers[i].state;
        if (s == GPUIR__EMU_WAIT_BLOCK) nblock++, first_block = i;
        if (s == GPUIR__EMU_WAIT_WARP) nwarp++, first_warp = i;
    }
    gpuir__emu_fail(e,
                    "gpuir emulator: deadlock in block (%u,%u,%u) after %u completed __syncthreads: "
                    "%u thread(s) wait at __syncthreads (first: linear thread %u), %u at __syncwarp "
                    "(first: linear thread %u), %u exited",
                    e->block_idx.x, e->block_idx.y, e->block_idx.z, e->block_gen, nblock, nblock ? first_block : 0,
                    nwarp, nwarp ? first_warp : 0, e->nthreads - e->live);
}

/* Runs the current block with one fiber per thread. */
static void gpuir__emu_run_block_fibers(gpuir__emu_engine *e)
{
    unsigned i;
    gpuir__emu_block_begin(e);
    for (i = 0; i < e->nthreads; i++) {
        gpuir__emu_fiber *f = &e->fibers[i];
#ifdef GPUIR__EMU_ASAN
        ASAN_UNPOISON_MEMORY_REGION(f->stack_lo, e->stack_bytes);
#endif
        gpuir__emu_lane_init(e, &f->lane, i, 1);
#ifdef GPUIR__EMU_TSAN
        if (!f->ctx.tsan_fiber) f->ctx.tsan_fiber = __tsan_create_fiber(0);
#endif
        if (gpuir__emu_ctx_init(&f->ctx, f->stack_lo, e->stack_bytes, gpuir__emu_fiber_main, &e->sched)) {
            gpuir__emu_fail(e, "gpuir emulator: could not make a fiber context");
            return;
        }
        f->state = GPUIR__EMU_RUNNABLE;
        gpuir__emu_queue_push(e, f);
    }
    gpuir__emu_switch(e, &e->sched, &gpuir__emu_queue_pop(e)->ctx, 0);
    if (e->live) gpuir__emu_report_deadlock(e);
}

/* Runs the current block's threads one after another as plain calls. */
static void gpuir__emu_run_block_plain(gpuir__emu_engine *e)
{
    unsigned i;
    gpuir__emu_block_begin(e);
    for (i = 0; i < e->nthreads && !e->failed; i++) {
        gpuir__emu_lane_init(e, &e->plain, i, 0);
        e->entry(&e->plain, e->params);
    }
}

/* Runs every block of the grid in (z, y, x) order until one fails. */
static void gpuir__emu_run_grid(gpuir__emu_engine *e, const unsigned grid[3], int barriers)
{
    unsigned x, y, z;
    for (z = 0; z < grid[2] && !e->failed; z++)
        for (y = 0; y < grid[1] && !e->failed; y++)
            for (x = 0; x < grid[0] && !e->failed; x++) {
                e->block_idx.x = x;
                e->block_idx.y = y;
                e->block_idx.z = z;
                if (barriers) gpuir__emu_run_block_fibers(e);
                else gpuir__emu_run_block_plain(e);
            }
}

/* Runs a whole grid. uses_barriers: threads run as fibers and may call
   sync_block/sync_warp; otherwise they run as plain calls and a call to
   either is an error. Returns 0, or nonzero with a message in err. */
static int gpuir__emu_engine_launch(gpuir__emu_engine *e, gpuir_emu_entry entry, void **params, const unsigned grid[3],
                                    const unsigned block[3], size_t shared_bytes, int uses_barriers, char *err,
                                    size_t err_size)
{
    if (err && err_size) err[0] = 0;
    if (!e) {
        gpuir__emu_msg(err, err_size, "gpuir emulator: launch without an engine");
        return 1;
    }
    if (e->running) {
        gpuir__emu_msg(err, err_size, "gpuir emulator: launch from inside a running launch of the same engine");
        return 1;
    }
    e->err = err;
    e->err_size = err_size;
    e->failed = 0;
    e->out_of_memory = 0;
    if (gpuir__emu_check_launch(e, entry, grid, block, shared_bytes)) return 1;
    e->nthreads = block[0] * block[1] * block[2];
    if (gpuir__emu_reserve_shared(e, shared_bytes)) return 1;
    if (uses_barriers && gpuir__emu_reserve(e, e->nthreads)) return 1;
    e->entry = entry;
    e->params = params;
    e->block_dim.x = block[0], e->block_dim.y = block[1], e->block_dim.z = block[2];
    e->grid_dim.x = grid[0], e->grid_dim.y = grid[1], e->grid_dim.z = grid[2];
    gpuir__emu_fpu_capture(&e->sched);
#ifdef GPUIR__EMU_TSAN
    e->sched.tsan_fiber = __tsan_get_current_fiber();
#endif
    e->running = 1;
    gpuir__emu_run_grid(e, grid, uses_barriers);
    e->running = 0;
    e->err = NULL;
    return e->failed;
}

/* ---- the emulator's device table ---- */

enum {                       /* the CUresult values the emulator returns */
    GPUIR__CU_INVALID_VALUE = 1, GPUIR__CU_OUT_OF_MEMORY = 2, GPUIR__CU_INVALID_IMAGE = 200,
    GPUIR__CU_OPERATING_SYSTEM = 304,
    GPUIR__CU_NOT_FOUND = 500, GPUIR__CU_ILLEGAL_ADDRESS = 700, GPUIR__CU_LAUNCH_FAILED = 719,
    GPUIR__CU_CAPTURE_UNSUPPORTED = 900
};

/* Work queued on an emulated stream. */
typedef enum gpuir__emu_cmd_kind {
    GPUIR__EMU_FREE, GPUIR__EMU_HTOD, GPUIR__EMU_DTOH, GPUIR__EMU_DTOD, GPUIR__EMU_LAUNCH,
    GPUIR__EMU_RECORD, GPUIR__EMU_WAIT
} gpuir__emu_cmd_kind;

typedef struct gpuir__emu_cmd {
    gpuir__emu_cmd_kind kind;
    gpuir__dptr dev, dev2;              /* FREE: dev; copies: dev is the destination if on the device */
    void *host;                         /* HTOD: source; DTOH: destination */
    size_t bytes;
    const gpuir_emu_kernel *kernel;     /* LAUNCH */
    unsigned grid[3], block[3], smem, n_args;
    gpuir__dptr *args;                  /* LAUNCH: the parameters' values, copied at the launch */
    unsigned event;                     /* RECORD, WAIT */
    uint64_t ticket;                    /* RECORD: this record; WAIT: the record waited for */
} gpuir__emu_cmd;

/* The 8-byte slots a launch's copied parameters take: one each, but 16
   for each 128-byte tensor map (the kernel's last parameters). */
static size_t gpuir__emu_arg_slots(const gpuir__emu_cmd *c) {
    return c->n_args + 15 * (size_t)c->kernel->n_tensor_maps;
}

typedef struct gpuir__emu_stream {
    gpuir__emu_cmd *cmds;               /* stb_ds: the queue, from head */
    size_t head;
} gpuir__emu_stream;

/* A table call recorded while capturing: replayed as the same call. */
typedef struct gpuir__emu_call {
    unsigned stream;
    gpuir__emu_cmd cmd;                 /* RECORD and WAIT: only the event counts */
} gpuir__emu_call;

typedef struct gpuir__emu_graph {
    gpuir__emu_call *calls;             /* stb_ds, in the order they were made */
} gpuir__emu_graph;

/* An emulated device allocation. A freed one stays (unused) until every
   stream is idle, so queued work that still touches it is caught; then it
   moves to a quarantine that still holds its memory (the last
   GPUIR__EMU_GONE allocations, at most GPUIR__EMU_GONE_BYTES together), so
   later work on it is an illegal address too, not a write to freed host
   memory. Holding the memory is what makes the check sound: no other
   allocation (this emulator's, another program's, a caller's buffer) can
   take an address the quarantine remembers. Memory leaving the quarantine
   goes back and is no longer checked. */
#define GPUIR__EMU_GONE 256
#define GPUIR__EMU_GONE_BYTES ((size_t)256 << 20)
typedef struct gpuir__emu_alloc {
    uintptr_t base;
    size_t bytes;
    bool freed;
} gpuir__emu_alloc;

typedef struct gpuir__emu_event {
    uint64_t recorded;                  /* the ticket of its latest record (0: never) */
    uint64_t done;                      /* the ticket of its latest record that ran */
} gpuir__emu_event;

/* The emulator's device. Work on a stream >= 1 is queued and runs only when
   the host must see it (an event or full synchronize, or work on stream 0),
   streams in a seeded pseudo-random interleaving that respects stream order
   and event waits: a missing wait shows as stale data, not luck. */
typedef struct gpuir__emu {
    gpuir__emu_engine *engine;
    size_t live_allocs;     /* device buffers not yet freed */
    size_t live_modules;
    gpuir__emu_alloc *allocs;     /* stb_ds: live ones, and freed ones until the streams are idle */
    gpuir__emu_stream *streams;   /* stb_ds: stream s is streams[s - 1] */
    gpuir__emu_event *events;     /* stb_ds: event e is events[e - 1] */
    uint64_t tickets;             /* records made so far */
    uint64_t rng;                 /* xorshift state: which ready stream runs next */
    int failed;                   /* the first queued command that failed (a CUresult), kept until a sync */
    bool capturing;               /* calls go to `captured` instead of running */
    gpuir__emu_call *captured;    /* stb_ds: the capture being made */
    size_t live_graphs, live_host;  /* graphs and pinned host buffers not yet released */
    char detail[1024];      /* what went wrong in the last failed call */
    char lost[GPUIR__LOST_SIZE];  /* why the emulated context is lost, or "" */
    gpuir__emu_alloc gone[GPUIR__EMU_GONE];  /* the quarantine: freed memory still held (a ring) */
    size_t n_gone, gone_held;     /* allocations quarantined so far; how many the ring holds now */
    size_t gone_bytes;            /* the bytes it holds */
    struct gpuir__emu_toolchain *host; /* the context's: where modules are written to be dlopen'ed */
    unsigned lane;                /* stream_bind: stream 0's work is queued on this stream (0: none) */
    size_t live_registered;       /* host ranges registered (pinned in place) */
} gpuir__emu;

typedef struct gpuir__emu_module {
    void *dl;
    const gpuir_emu_kernel *table;
} gpuir__emu_module;

static int gpuir__emu_nop(void *self) { (void)self; return 0; }

/* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED for a call a capture cannot hold. */
static int gpuir__emu_not_while_capturing(gpuir__emu *E, const char *call) {
    if (!E->capturing) return 0;
    snprintf(E->detail, sizeof E->detail, "%s while a graph is being captured", call);
    return GPUIR__CU_CAPTURE_UNSUPPORTED;
}

static int gpuir__emu_mem_alloc(void *self, gpuir__dptr *p, size_t bytes, unsigned stream) {
    gpuir__emu *E = (gpuir__emu *)self;
    (void)stream;                        /* usable in stream order at once */
    int busy = gpuir__emu_not_while_capturing(E, "an allocation");
    if (busy) return busy;
    void *mem = GPUIR_MALLOC(bytes ? bytes : 1);
    if (!mem) return GPUIR__CU_OUT_OF_MEMORY;
    memset(mem, 0xff, bytes);            /* poison: reads of unwritten data show (NaN) */
    *p = (gpuir__dptr)(uintptr_t)mem;
    gpuir__emu_alloc a = {(uintptr_t)mem, bytes, false};
    stbds_arrput(E->allocs, a);
    E->live_allocs++;
    return 0;
}

/* The allocation holding device address p, or NULL. */
static gpuir__emu_alloc *gpuir__emu_find(gpuir__emu *E, gpuir__dptr p) {
    for (size_t i = 0; i < stbds_arrlenu(E->allocs); i++) {
        gpuir__emu_alloc *a = &E->allocs[i];
        if (p >= a->base && p < a->base + (a->bytes ? a->bytes : 1)) return a;
    }
    return NULL;
}

/* 0, or CUDA_ERROR_ILLEGAL_ADDRESS when queued work touches memory freed
   before it ran (a missing wait). */
static int gpuir__emu_check_live(gpuir__emu *E, gpuir__dptr p, const char *what) {
    const gpuir__emu_alloc *a = gpuir__emu_find(E, p);
    if (!a && p) {                      /* memory already given back? */
        for (size_t i = 0; i < E->gone_held; i++) {
            const gpuir__emu_alloc *g = &E->gone[(E->n_gone - 1 - i) % GPUIR__EMU_GONE];
            if (p < g->base || p >= g->base + (g->bytes ? g->bytes : 1)) continue;
            snprintf(E->detail, sizeof E->detail, "%s device memory that was already freed (and given back; "
                     "%zu bytes at %#llx)", what, g->bytes, (unsigned long long)g->base);
            return GPUIR__CU_ILLEGAL_ADDRESS;
        }
    }
    if (!a || !a->freed) return 0;
    snprintf(E->detail, sizeof E->detail, "%s device memory that was already freed (freed on another stream "
             "without waiting for this work)", what);
    return GPUIR__CU_ILLEGAL_ADDRESS;
}

/* Gives the oldest quarantined allocation back to the host. */
static void gpuir__emu_gone_drop_oldest(gpuir__emu *E) {
    gpuir__emu_alloc *g = &E->gone[(E->n_gone - E->gone_held) % GPUIR__EMU_GONE];
    GPUIR_FREE((void *)g->base);
    E->gone_bytes -= g->bytes;
    E->gone_held--;
}

/* Moves a freed allocation into the quarantine (what does not fit goes
   back at once, unremembered). */
static void gpuir__emu_gone_add(gpuir__emu *E, gpuir__emu_alloc a) {
    if (a.bytes > GPUIR__EMU_GONE_BYTES) { GPUIR_FREE((void *)a.base); return; }
    while (E->gone_held && (E->gone_held == GPUIR__EMU_GONE || E->gone_bytes + a.bytes > GPUIR__EMU_GONE_BYTES))
        gpuir__emu_gone_drop_oldest(E);
    E->gone[E->n_gone++ % GPUIR__EMU_GONE] = a;
    E->gone_held++;
    E->gone_bytes += a.bytes;
}

/* Quarantines what was freed, once no queued work can touch it. */
static void gpuir__emu_release_freed(gpuir__emu *E) {
    size_t j = 0;
    for (size_t i = 0; i < stbds_arrlenu(E->allocs); i++) {
        if (!E->allocs[i].freed) { E->allocs[j++] = E->allocs[i]; continue; }
        gpuir__emu_gone_add(E, E->allocs[i]);
        E->live_allocs--;
    }
    if (E->allocs) stbds_header(E->allocs)->length = j;
}

static int gpuir__emu_launch_now(gpuir__emu *E, const gpuir_emu_kernel *k, const unsigned grid[3],
                                 const unsigned block[3], unsigned smem, void **params) {
    E->detail[0] = '\0';
    if (smem < k->dynamic_bytes) {      /* on a GPU: shared accesses out of bounds */
        snprintf(E->detail, sizeof E->detail, "@%s declares %u bytes of dynamic shared memory, the launch gave %u",
                 k->name, k->dynamic_bytes, smem);
        return GPUIR__CU_LAUNCH_FAILED;
    }
    int rc = gpuir__emu_engine_launch(E->engine, k->entry, params, grid, block, (size_t)k->shared_bytes + smem,
                                      k->uses_barriers, E->detail, sizeof E->detail);
    if (!rc) return 0;
    return E->engine->out_of_memory ? GPUIR__CU_OUT_OF_MEMORY : GPUIR__CU_LAUNCH_FAILED;
}

/* Runs one queued command. After a failure only frees and records run, so
   memory goes back and waits end; the failure is reported at the next sync. */
static int gpuir__emu_exec(gpuir__emu *E, gpuir__emu_cmd *c) {
    int rc = 0;
    bool skip = E->failed != 0;
    switch (c->kind) {
    case GPUIR__EMU_FREE: {
        gpuir__emu_alloc *a = gpuir__emu_find(E, c->dev);
        if (!a || a->base != c->dev || a->freed) {
            snprintf(E->detail, sizeof E->detail, "freeing device memory that is not a live allocation");
            rc = GPUIR__CU_INVALID_VALUE;
        } else a->freed = true;
        break;
    }
    case GPUIR__EMU_HTOD:
        if (!skip && !(rc = gpuir__emu_check_live(E, c->dev, "a host-to-device copy writes")))
            memcpy((void *)(uintptr_t)c->dev, c->host, c->bytes);
        break;
    case GPUIR__EMU_DTOH:
        if (!skip && !(rc = gpuir__emu_check_live(E, c->dev, "a device-to-host copy reads")))
            memcpy(c->host, (const void *)(uintptr_t)c->dev, c->bytes);
        break;
    case GPUIR__EMU_DTOD:
        if (!skip && !(rc = gpuir__emu_check_live(E, c->dev, "a device-to-device copy writes")) &&
            !(rc = gpuir__emu_check_live(E, c->dev2, "a device-to-device copy reads")))
            memmove((void *)(uintptr_t)c->dev, (const void *)(uintptr_t)c->dev2, c->bytes);
        break;
    case GPUIR__EMU_LAUNCH: {
        void *params[GPUIR__MAX_KERNEL_PARAMS];
        unsigned plain = c->n_args - c->kernel->n_tensor_maps;
        for (unsigned i = 0; i < c->n_args && i < GPUIR__MAX_KERNEL_PARAMS; i++) {
            params[i] = &c->args[i < plain ? i : plain + 16 * (i - plain)];
            if (!skip && !rc && i < c->kernel->n_buffers)       /* then sizes, then tensor maps */
                rc = gpuir__emu_check_live(E, c->args[i], "a kernel's parameter points at");
            if (!skip && !rc && i >= plain)                      /* word 1: the map's base */
                rc = gpuir__emu_check_live(E, c->args[plain + 16 * (i - plain) + 1], "a tensor map points at");
        }
        if (!skip && !rc) rc = gpuir__emu_launch_now(E, c->kernel, c->grid, c->block, c->smem, params);
        GPUIR_FREE(c->args);
        break;
    }
    case GPUIR__EMU_RECORD:
        if (E->events[c->event - 1].done < c->ticket) E->events[c->event - 1].done = c->ticket;
        break;
    case GPUIR__EMU_WAIT: break;
    }
    if (rc && !E->failed) E->failed = rc;
    return rc;
}

static bool gpuir__emu_ready(const gpuir__emu *E, const gpuir__emu_stream *st) {
    if (st->head == stbds_arrlenu(st->cmds)) return false;
    const gpuir__emu_cmd *c = &st->cmds[st->head];
    return c->kind != GPUIR__EMU_WAIT || E->events[c->event - 1].done >= c->ticket;
}

/* Runs the head of one ready stream, chosen at random; 1 when none is ready. */
static int gpuir__emu_step(gpuir__emu *E) {
    unsigned ready[GPUIR_MAX_STREAMS + 1], n = 0;
    for (unsigned s = 0; s < stbds_arrlenu(E->streams) && n < GPUIR_MAX_STREAMS + 1; s++)
        if (gpuir__emu_ready(E, &E->streams[s])) ready[n++] = s;
    if (!n) return 1;
    E->rng ^= E->rng << 13;
    E->rng ^= E->rng >> 7;
    E->rng ^= E->rng << 17;
    gpuir__emu_stream *st = &E->streams[ready[E->rng % n]];
    gpuir__emu_exec(E, &st->cmds[st->head++]);
    if (st->head == stbds_arrlenu(st->cmds)) {
        stbds_header(st->cmds)->length = 0;
        st->head = 0;
    }
    return 0;
}

static bool gpuir__emu_idle(const gpuir__emu *E) {
    for (size_t s = 0; s < stbds_arrlenu(E->streams); s++)
        if (E->streams[s].head < stbds_arrlenu(E->streams[s].cmds)) return false;
    return true;
}

/* Runs queued work until event e (0: everything) is done; then reports the
   first failure since the last report. */
static int gpuir__emu_drain(gpuir__emu *E, unsigned e) {
    while (e ? E->events[e - 1].done < E->events[e - 1].recorded : !gpuir__emu_idle(E))
        if (gpuir__emu_step(E)) {
            snprintf(E->detail, sizeof E->detail, "the streams wait for each other: nothing can run");
            return GPUIR__CU_LAUNCH_FAILED;      /* unreachable: waits name earlier records */
        }
    if (!e) gpuir__emu_release_freed(E);
    int rc = E->failed;
    E->failed = 0;
    return rc;
}

static int gpuir__emu_enqueue(gpuir__emu *E, unsigned stream, gpuir__emu_cmd *c) {
    if (stream > stbds_arrlenu(E->streams)) return GPUIR__CU_INVALID_VALUE;
    stbds_arrput(E->streams[stream - 1].cmds, *c);
    return 0;
}

/* While capturing: keeps the call (a launch's arguments go with it). */
static int gpuir__emu_capture(gpuir__emu *E, unsigned stream, const gpuir__emu_cmd *c) {
    if (stream > stbds_arrlenu(E->streams)) return GPUIR__CU_INVALID_VALUE;
    gpuir__emu_call call = {stream, *c};
    stbds_arrput(E->captured, call);
    return 0;
}

/* Stream 0 work runs now, after everything queued (the legacy stream),
   unless a caller's stream is bound: then it is queued on its lane. */
static int gpuir__emu_submit(gpuir__emu *E, unsigned stream, gpuir__emu_cmd *c) {
    if (!stream) stream = E->lane;
    if (E->capturing) return gpuir__emu_capture(E, stream, c);
    if (stream) return gpuir__emu_enqueue(E, stream, c);
    int rc = gpuir__emu_drain(E, 0);
    int rc2 = gpuir__emu_exec(E, c);
    E->failed = 0;
    gpuir__emu_release_freed(E);
    return rc ? rc : rc2;
}

static int gpuir__emu_streams_reserve(void *self, unsigned streams, unsigned events) {
    gpuir__emu *E = (gpuir__emu *)self;
    gpuir__emu_stream st = {NULL, 0};
    gpuir__emu_event ev = {0, 0};
    while (stbds_arrlenu(E->streams) < streams) stbds_arrput(E->streams, st);
    while (stbds_arrlenu(E->events) < events) stbds_arrput(E->events, ev);
    return 0;
}

static int gpuir__emu_mem_free(void *self, gpuir__dptr p, unsigned stream) {
    int busy = gpuir__emu_not_while_capturing((gpuir__emu *)self, "a free");
    if (busy) return busy;
    if (!p) return GPUIR__CU_INVALID_VALUE;
    gpuir__emu_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = GPUIR__EMU_FREE;
    c.dev = p;
    return gpuir__emu_submit((gpuir__emu *)self, stream, &c);
}

/* Queues (or, on stream 0, runs) a copy; host is read or written when it runs. */
static int gpuir__emu_copy(void *self, gpuir__emu_cmd_kind kind, gpuir__dptr dev, gpuir__dptr dev2, void *host,
                           size_t n, unsigned stream) {
    gpuir__emu_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.dev = dev;
    c.dev2 = dev2;
    c.host = host;
    c.bytes = n;
    return gpuir__emu_submit((gpuir__emu *)self, stream, &c);
}
static int gpuir__emu_htod(void *self, gpuir__dptr dst, const void *src, size_t n, unsigned stream) {
    return gpuir__emu_copy(self, GPUIR__EMU_HTOD, dst, 0, (void *)(uintptr_t)src, n, stream);  /* as from pinned memory */
}
static int gpuir__emu_dtoh(void *self, void *dst, gpuir__dptr src, size_t n, unsigned stream) {
    return gpuir__emu_copy(self, GPUIR__EMU_DTOH, src, 0, dst, n, stream);
}
static int gpuir__emu_dtod(void *self, gpuir__dptr dst, gpuir__dptr src, size_t n, unsigned stream) {
    return gpuir__emu_copy(self, GPUIR__EMU_DTOD, dst, src, NULL, n, stream);
}

static int gpuir__emu_event_record(void *self, unsigned e, unsigned stream) {
    gpuir__emu *E = (gpuir__emu *)self;
    if (!e || e > stbds_arrlenu(E->events)) return GPUIR__CU_INVALID_VALUE;
    gpuir__emu_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = GPUIR__EMU_RECORD;
    c.event = e;
    if (E->capturing) return gpuir__emu_capture(E, stream, &c);       /* its ticket comes at each replay */
    c.ticket = ++E->tickets;
    E->events[e - 1].recorded = c.ticket;
    return gpuir__emu_submit(E, stream, &c);
}

static int gpuir__emu_stream_wait(void *self, unsigned stream, unsigned e) {
    gpuir__emu *E = (gpuir__emu *)self;
    if (!e || e > stbds_arrlenu(E->events)) return GPUIR__CU_INVALID_VALUE;
    gpuir__emu_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = GPUIR__EMU_WAIT;
    c.event = e;
    if (!stream) stream = E->lane;
    if (E->capturing) return gpuir__emu_capture(E, stream, &c);
    if (!stream) return gpuir__emu_drain(E, e);
    c.ticket = E->events[e - 1].recorded;      /* never recorded: 0, done at once (as CUDA) */
    return gpuir__emu_enqueue(E, stream, &c);
}

static int gpuir__emu_event_sync(void *self, unsigned e) {
    gpuir__emu *E = (gpuir__emu *)self;
    if (!e || e > stbds_arrlenu(E->events)) return GPUIR__CU_INVALID_VALUE;
    int busy = gpuir__emu_not_while_capturing(E, "a host wait for an event");
    return busy ? busy : gpuir__emu_drain(E, e);
}

static int gpuir__emu_sync(void *self) {
    gpuir__emu *E = (gpuir__emu *)self;
    int busy = gpuir__emu_not_while_capturing(E, "a synchronize");
    return busy ? busy : gpuir__emu_drain(E, 0);
}

/* ---- graphs: captured calls, replayed in order ---- */

static int gpuir__emu_host_alloc(void *self, void **p, size_t bytes) {
    gpuir__emu *E = (gpuir__emu *)self;
    *p = GPUIR_MALLOC(bytes ? bytes : 1);
    if (!*p) return GPUIR__CU_OUT_OF_MEMORY;
    E->live_host++;
    return 0;
}
static int gpuir__emu_host_free(void *self, void *p) {
    gpuir__emu *E = (gpuir__emu *)self;
    if (!p) return GPUIR__CU_INVALID_VALUE;
    GPUIR_FREE(p);
    E->live_host--;
    return 0;
}

static int gpuir__emu_capture_begin(void *self, unsigned streams) {
    gpuir__emu *E = (gpuir__emu *)self;
    if (E->capturing || streams > stbds_arrlenu(E->streams)) return GPUIR__CU_INVALID_VALUE;
    E->capturing = true;
    return 0;
}

/* Frees what a list of captured calls holds (launch arguments). */
static void gpuir__emu_calls_free(gpuir__emu_call *calls) {
    for (size_t i = 0; i < stbds_arrlenu(calls); i++)
        if (calls[i].cmd.kind == GPUIR__EMU_LAUNCH) GPUIR_FREE(calls[i].cmd.args);
    stbds_arrfree(calls);
}

static int gpuir__emu_capture_end(void *self, void **graph) {
    gpuir__emu *E = (gpuir__emu *)self;
    *graph = NULL;
    if (!E->capturing) return GPUIR__CU_INVALID_VALUE;
    E->capturing = false;
    gpuir__emu_graph *g = (gpuir__emu_graph *)gpuir__calloc(1, sizeof *g);
    if (!g) {
        gpuir__emu_calls_free(E->captured);
        E->captured = NULL;
        return GPUIR__CU_OUT_OF_MEMORY;
    }
    g->calls = E->captured;
    E->captured = NULL;
    E->live_graphs++;
    *graph = g;
    return 0;
}

/* Makes each captured call again, in order (a launch with a copy of its
   arguments: running it frees them). */
static int gpuir__emu_graph_launch(void *self, void *graph) {
    gpuir__emu *E = (gpuir__emu *)self;
    const gpuir__emu_graph *g = (const gpuir__emu_graph *)graph;
    if (!g || E->capturing) return GPUIR__CU_INVALID_VALUE;
    int rc = 0;
    for (size_t i = 0; i < stbds_arrlenu(g->calls) && !rc; i++) {
        const gpuir__emu_call *call = &g->calls[i];
        gpuir__emu_cmd c = call->cmd;
        if (c.kind == GPUIR__EMU_RECORD) rc = gpuir__emu_event_record(E, c.event, call->stream);
        else if (c.kind == GPUIR__EMU_WAIT) rc = gpuir__emu_stream_wait(E, call->stream, c.event);
        else {
            if (c.kind == GPUIR__EMU_LAUNCH) {
                c.args = (gpuir__dptr *)GPUIR_MALLOC((c.n_args ? gpuir__emu_arg_slots(&c) : 1) * sizeof *c.args);
                if (!c.args) return GPUIR__CU_OUT_OF_MEMORY;
                memcpy(c.args, call->cmd.args, gpuir__emu_arg_slots(&c) * sizeof *c.args);
            }
            rc = gpuir__emu_submit(E, call->stream, &c);
        }
    }
    return rc;
}

static int gpuir__emu_graph_destroy(void *self, void *graph) {
    gpuir__emu *E = (gpuir__emu *)self;
    gpuir__emu_graph *g = (gpuir__emu_graph *)graph;
    if (!g) return GPUIR__CU_INVALID_VALUE;
    gpuir__emu_calls_free(g->calls);
    GPUIR_FREE(g);
    E->live_graphs--;
    return 0;
}

/* ---- run arguments: pinning in place, the caller's streams ---- */

/* Emulated memory is host memory: registering only counts (and refuses
   what CUDA refuses: no memory). */
static int gpuir__emu_host_register(void *self, void *p, size_t bytes) {
    gpuir__emu *E = (gpuir__emu *)self;
    if (!p || !bytes) return GPUIR__CU_INVALID_VALUE;
    E->live_registered++;
    return 0;
}
static int gpuir__emu_host_unregister(void *self, void *p) {
    gpuir__emu *E = (gpuir__emu *)self;
    if (!p || !E->live_registered) return GPUIR__CU_INVALID_VALUE;
    E->live_registered--;
    return 0;
}
/* An emulated caller's stream is a gpuir__xstream (rt.exec): the program
   that last queued work for it keeps that work until the host waits. */
static int gpuir__emu_stream_create(void *self, void **stream) {
    (void)self;
    gpuir__xstream *x = (gpuir__xstream *)gpuir__calloc(1, sizeof *x);
    if (!x) return GPUIR__CU_OUT_OF_MEMORY;
    x->magic = GPUIR__XSTREAM_MAGIC;
    *stream = x;
    return 0;
}
static int gpuir__emu_stream_destroy(void *self, void *stream) {
    (void)self;
    if (!stream) return GPUIR__CU_INVALID_VALUE;
    ((gpuir__xstream *)stream)->magic = 0;
    GPUIR_FREE(stream);
    return 0;
}
/* The host waits for everything this emulator holds (the caller's stream
   is one of its lanes). */
static int gpuir__emu_stream_sync(void *self, void *stream) {
    (void)stream;
    return gpuir__emu_sync(self);
}
static int gpuir__emu_stream_bind(void *self, void *stream, unsigned lane) {
    gpuir__emu *E = (gpuir__emu *)self;
    if (stream && (!lane || lane > stbds_arrlenu(E->streams))) return GPUIR__CU_INVALID_VALUE;
    E->lane = stream ? lane : 0;
    return 0;
}
/* Emulated streams are never captured: graphs record the table's calls. */
static int gpuir__emu_stream_capturing(void *self, void *stream, int *capturing) {
    (void)self;
    *capturing = 0;
    return stream ? 0 : GPUIR__CU_INVALID_VALUE;
}

/* ---- the context's private temporary directory ---- */

/* A compiler the context used, and its identity for the cache key. */
typedef struct gpuir__emu_cc_id {
    char *cc;                   /* as asked: desc.cc, $GPUIR_CC or "cc" */
    char *id;                   /* its resolved path, size, mtime and --version output */
} gpuir__emu_cc_id;

/* The emulator's host side of one context: a private temporary directory
   for sources, shared objects and the compiler's own temporary files,
   locked (fcntl) while the context lives so that other processes know it
   is in use, and the identities of the compilers it ran. */
typedef struct gpuir__emu_toolchain {
    char *dir;                  /* $TMPDIR/gpuir-<pid>-XXXXXX, or NULL before the first use */
    int lock;                   /* <dir>/lock, locked; -1 */
    gpuir__emu_cc_id *ccs;      /* stb_ds */
} gpuir__emu_toolchain;

/* The context's emulator host state, made on first use; NULL when out of
   memory (recorded in the context). */
static gpuir__emu_toolchain *gpuir__emu_toolchain_get(gpuir_ctx *ctx) {
    if (!ctx->emu_toolchain) {
        gpuir__emu_toolchain *h = (gpuir__emu_toolchain *)gpuir__calloc(1, sizeof *h);
        if (!h) { gpuir__oom(ctx, "the emulator's host state"); return NULL; }
        h->lock = -1;
        ctx->emu_toolchain = h;
    }
    return ctx->emu_toolchain;
}

/* Removes the directory `name` under the directory fd `at` with every file
   in it (one level: gpuir and the compiler make no subdirectories). */
static void gpuir__emu_rmdir(int at, const char *name) {
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (fd >= 0 && !d) close(fd);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && unlinkat(dirfd(d), e->d_name, 0) != 0)
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    if (d) closedir(d);
    unlinkat(at, name, AT_REMOVEDIR);
}

/* Whether process pid is running: it exists (kill 0) and, where /proc
   says, is not a zombie (a killed process whose parent is gone waits for
   init to reap it; in a container, init may never). */
static bool gpuir__emu_pid_alive(long pid) {
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return false;
    char path[64], text[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) return true;
    text[n] = '\0';
    const char *state = strrchr(text, ')');     /* "pid (comm) S ..." */
    return !(state && state[1] == ' ' && state[2] == 'Z');
}

/* Whether the compiler whose process group <name>/compiler records is
   still running (it outlives a killed gpuir, being in a group of its own,
   and may still write into the directory). */
static bool gpuir__emu_tmp_compiler_alive(int at, const char *name) {
    char path[NAME_MAX + 16], text[32];
    snprintf(path, sizeof path, "%s/compiler", name);
    int fd = openat(at, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    long pgid = n > 0 ? (text[n] = '\0', strtol(text, NULL, 10)) : 0;
    return pgid > 0 && gpuir__emu_pid_alive(pgid);    /* its leader, the driver, waits for the rest */
}

/* Whether `name` in the directory fd `at` is a private directory
   (gpuir-<pid>-XXXXXX) of ours whose process is gone: not this process, no
   process has its pid, its lock is free (a live owner holds it, even from
   another pid namespace sharing the directory), and no compiler it started
   is still running. */
static bool gpuir__emu_tmp_is_stale(int at, const char *name) {
    char *end;
    long pid = strtol(name + 6, &end, 10);
    if (end == name + 6 || *end != '-' || strlen(end) != 7 || pid <= 0 || pid == (long)getpid()) return false;
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return false;
    if (gpuir__emu_pid_alive(pid)) return false;
    char lock[NAME_MAX + 8];
    snprintf(lock, sizeof lock, "%s/lock", name);
    int fd = openat(at, lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT && !gpuir__emu_tmp_compiler_alive(at, name);   /* killed early */
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    bool free_lock = fcntl(fd, F_SETLK, &fl) == 0;
    close(fd);
    return free_lock && !gpuir__emu_tmp_compiler_alive(at, name);
}

/* Removes the private directories that killed processes left in tmp. */
static void gpuir__emu_tmp_sweep(const char *tmp) {
    int at = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = at >= 0 ? fdopendir(at) : NULL;
    if (at >= 0 && !d) close(at);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "gpuir-", 6) == 0 && gpuir__emu_tmp_is_stale(dirfd(d), e->d_name))
            gpuir__emu_rmdir(dirfd(d), e->d_name);
    if (d) closedir(d);
}

/* Creates and locks <dir>/lock; the fd, or -1 with errno. */
static int gpuir__emu_tmp_lock(const char *dir) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fd >= 0 && fcntl(fd, F_SETLK, &fl) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* The context's private temporary directory: made on first use (0700, in
   $TMPDIR, else /tmp), after removing those of dead processes. NULL with
   *err_no and err (naming the path and the errno text) when it cannot be. */
static const char *gpuir__emu_tmp_dir(gpuir__emu_toolchain *h, char *err, size_t size, int *err_no) {
    if (h->dir) return h->dir;
    const char *env = getenv("TMPDIR");
    const char *tmp = env && *env ? env : "/tmp";
    size_t n = strlen(tmp) + 48;
    char *dir = (char *)GPUIR_MALLOC(n);
    if (!dir) { *err_no = ENOMEM; snprintf(err, size, "out of memory"); return NULL; }
    gpuir__emu_tmp_sweep(tmp);
    snprintf(dir, n, "%s/gpuir-%ld-XXXXXX", tmp, (long)getpid());
    int fd = -1;
    const char *step = !mkdtemp(dir) ? "create" : (fd = gpuir__emu_tmp_lock(dir)) < 0 ? "lock" : NULL;
    if (step) {
        *err_no = errno;
        snprintf(err, size, "cannot %s a private temporary directory %s%s: %s", step, dir,
                 env && *env ? " (in $TMPDIR)" : "", strerror(*err_no));
        if (fd < 0 && strcmp(step, "lock") == 0) gpuir__emu_rmdir(AT_FDCWD, dir);
        GPUIR_FREE(dir);
        return NULL;
    }
    h->dir = dir, h->lock = fd;
    return dir;
}

/* A new file <private dir>/<stem>-XXXXXX (0600, exclusive); the fd, or -1
   with *err_no and err naming the path and the errno text. */
static int gpuir__emu_temp_file(gpuir__emu_toolchain *h, char path[PATH_MAX], const char *stem, char *err, size_t size,
                                int *err_no) {
    const char *dir = gpuir__emu_tmp_dir(h, err, size, err_no);
    if (!dir) return -1;
    snprintf(path, PATH_MAX, "%s/%s-XXXXXX", dir, stem);
    int fd = mkstemp(path);
    if (fd < 0) {
        *err_no = errno;
        snprintf(err, size, "cannot create a temporary file %s: %s", path, strerror(*err_no));
    }
    return fd;
}

/* Removes the private directory (with whatever a killed compiler left in
   it) and frees the host state. */
static void gpuir__emu_toolchain_free(gpuir__emu_toolchain *h) {
    if (!h) return;
    if (h->dir) gpuir__emu_rmdir(AT_FDCWD, h->dir);
    if (h->lock >= 0) close(h->lock);
    for (size_t i = 0; i < stbds_arrlenu(h->ccs); i++) {
        GPUIR_FREE(h->ccs[i].cc);
        GPUIR_FREE(h->ccs[i].id);
    }
    stbds_arrfree(h->ccs);
    GPUIR_FREE(h->dir);
    GPUIR_FREE(h);
}

/* Loads a shared object from its bytes: written to a file in the context's
   private directory, dlopen'ed, and the file removed at once. A file that
   cannot be written is an OS error naming the path and the errno. */
static int gpuir__emu_module_load(void *self, void **module, const void *image, size_t size) {
    gpuir__emu *E = (gpuir__emu *)self;
    char path[PATH_MAX];
    int err = 0;
    int fd = gpuir__emu_temp_file(E->host, path, "module", E->detail, sizeof E->detail, &err);
    if (fd < 0) return err == ENOMEM ? GPUIR__CU_OUT_OF_MEMORY : GPUIR__CU_OPERATING_SYSTEM;
    bool written = gpuir__write_all(fd, image, size);
    err = errno;
    if (close(fd) != 0 && written) written = false, err = errno;
    if (!written) {
        snprintf(E->detail, sizeof E->detail, "cannot write the module to %.900s: %s", path, strerror(err));
        unlink(path);
        return GPUIR__CU_OPERATING_SYSTEM;
    }
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) snprintf(E->detail, sizeof E->detail, "%s", dlerror());
    unlink(path);
    gpuir__emu_module *mod = dl ? (gpuir__emu_module *)gpuir__calloc(1, sizeof *mod) : NULL;
    const gpuir_emu_kernel *table = dl ? (const gpuir_emu_kernel *)dlsym(dl, "gpuir_emu_kernels") : NULL;
    if (!mod || !table) {
        if (dl && !table) snprintf(E->detail, sizeof E->detail, "the module has no gpuir_emu_kernels table");
        GPUIR_FREE(mod);
        if (dl) dlclose(dl);
        return dl && table ? GPUIR__CU_OUT_OF_MEMORY : GPUIR__CU_INVALID_IMAGE;
    }
    mod->dl = dl;
    mod->table = table;
    *module = mod;
    E->live_modules++;
    return 0;
}

static int gpuir__emu_module_unload(void *self, void *module) {
    gpuir__emu *E = (gpuir__emu *)self;
    gpuir__emu_module *mod = (gpuir__emu_module *)module;
    if (!mod) return GPUIR__CU_INVALID_VALUE;
    dlclose(mod->dl);
    GPUIR_FREE(mod);
    E->live_modules--;
    return 0;
}

static int gpuir__emu_function_get(void *self, void **fn, void *module, const char *name) {
    gpuir__emu *E = (gpuir__emu *)self;
    const gpuir__emu_module *mod = (const gpuir__emu_module *)module;
    for (const gpuir_emu_kernel *k = mod->table; k->name; k++)
        if (strcmp(k->name, name) == 0) { *fn = (void *)k; return 0; }
    snprintf(E->detail, sizeof E->detail, "no kernel named %s", name);
    return GPUIR__CU_NOT_FOUND;
}

static int gpuir__emu_launch(void *self, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem,
                             void **params, unsigned n_params, unsigned stream) {
    gpuir__emu *E = (gpuir__emu *)self;
    if (n_params > GPUIR__MAX_KERNEL_PARAMS || stream > stbds_arrlenu(E->streams)) return GPUIR__CU_INVALID_VALUE;
    gpuir__emu_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = GPUIR__EMU_LAUNCH;
    c.kernel = (const gpuir_emu_kernel *)fn;
    memcpy(c.grid, grid, sizeof c.grid);
    memcpy(c.block, block, sizeof c.block);
    c.smem = smem;
    c.n_args = n_params;
    unsigned maps = c.kernel->n_tensor_maps, plain = n_params - maps;
    if (maps > n_params) return GPUIR__CU_INVALID_VALUE;
    c.args = (gpuir__dptr *)GPUIR_MALLOC((n_params ? gpuir__emu_arg_slots(&c) : 1) * sizeof *c.args);
    if (!c.args) return GPUIR__CU_OUT_OF_MEMORY;
    for (unsigned i = 0; i < plain; i++) memcpy(&c.args[i], params[i], sizeof c.args[i]);
    for (unsigned i = 0; i < maps; i++) memcpy(&c.args[plain + 16 * i], params[plain + i], GPUIR__TMAP_BYTES);
    return gpuir__emu_submit(E, stream, &c);    /* running it frees args */
}

/* The emulator's tensor map: gpuir__tmap_encode's portable encoding, which
   the emulator prelude's bulk tensor copy (gpuir_tma_load) reads. */
static int gpuir__emu_tensor_map(void *self, gpuir__tmap *map, const gpuir__tmap_desc *desc) {
    gpuir__emu *E = (gpuir__emu *)self;
    const char *why = gpuir__tmap_encode(map, desc);
    if (why) snprintf(E->detail, sizeof E->detail, "tensor map: %s", why);
    return why ? GPUIR__CU_INVALID_VALUE : 0;
}

static void gpuir__emu_describe(void *self, int code, const char **name, const char **text, const char **detail) {
    *name = *text = NULL;
    gpuir__cuda_error_lookup(code, name, text);
    *detail = ((gpuir__emu *)self)->detail;
}

/* ---- building emulated modules: the host C compiler, no shell ---- */

#define GPUIR__EMU_LOG_MAX 65536        /* the compiler's messages kept */

/* The compiler's time limit in seconds: $GPUIR_CC_TIMEOUT (a positive
   number), else 300; 0 when the variable is malformed. */
static double gpuir__emu_cc_timeout(void) {
    const char *v = getenv("GPUIR_CC_TIMEOUT");
    if (!v || !*v) return 300;
    char *end;
    double t = strtod(v, &end);
    return *end == '\0' && t > 0 && t <= 1e9 ? t : 0;
}

/* The compiler's environment: this process's, with TMPDIR set to the
   private directory (so its own temporary files land there too). A
   malloc'd array whose new entry is *var (malloc'd); NULL when out of
   memory. */
static char **gpuir__emu_child_env(const char *dir, char **var) {
    extern char **environ;
    size_t n = 0, k = 0, len = strlen(dir) + 8;
    while (environ[n]) n++;
    char **envp = (char **)gpuir__calloc(n + 2, sizeof *envp);
    *var = (char *)GPUIR_MALLOC(len);
    if (!envp || !*var) {
        GPUIR_FREE(envp);
        GPUIR_FREE(*var);
        *var = NULL;
        return NULL;
    }
    snprintf(*var, len, "TMPDIR=%s", dir);
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "TMPDIR=", 7) != 0) envp[k++] = environ[i];
    envp[k++] = *var;
    envp[k] = NULL;
    return envp;
}

/* Starts argv (no shell) in a process group of its own (so a timeout can
   kill the compiler with everything it started), standard input and output
   on /dev/null, standard error into a pipe whose read end is *out. 0, or an
   errno. */
static int gpuir__emu_spawn(char *const *argv, const char *dir, pid_t *pid, int *out) {
    int fds[2];
    if (pipe(fds) != 0) return errno;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    char *var = NULL, **envp = gpuir__emu_child_env(dir, &var);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int rc = envp ? posix_spawn_file_actions_init(&fa) : ENOMEM;
    if (!rc && (rc = posix_spawnattr_init(&at)) != 0) posix_spawn_file_actions_destroy(&fa);
    if (!rc) {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&at, 0);
        rc = posix_spawnp(pid, argv[0], &fa, &at, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
    }
    GPUIR_FREE(envp);
    GPUIR_FREE(var);
    close(fds[1]);
    if (rc) close(fds[0]);
    else *out = fds[0];
    return rc;
}

/* Seconds since t0 (CLOCK_MONOTONIC). */
static double gpuir__emu_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Reads what is ready on the pipe fd into log (up to GPUIR__EMU_LOG_MAX
   bytes kept, the rest read and dropped), waiting at most ms; false at its
   end (or an error). */
static bool gpuir__emu_log_read(int fd, char *log, size_t *n, int ms) {
    struct pollfd pf;
    pf.fd = fd, pf.events = POLLIN, pf.revents = 0;
    int k = poll(&pf, 1, ms);
    if (k <= 0) return k == 0 || errno == EINTR;
    char buf[4096];
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0) return errno == EINTR || errno == EAGAIN;
    size_t keep = (size_t)r < GPUIR__EMU_LOG_MAX - *n ? (size_t)r : GPUIR__EMU_LOG_MAX - *n;
    memcpy(log + *n, buf, keep);
    *n += keep;
    return r > 0;
}

/* Waits for the compiler pid, collecting its standard error (the pipe fd,
   closed here) into log, NUL-terminated; after `timeout` seconds kills its
   process group. The exit status, 128 + the signal that killed it, or -2
   when it ran out of time. */
static int gpuir__emu_wait(pid_t pid, int fd, double timeout, char *log) {
    struct timespec t0, nap = {0, 2000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t n = 0;
    int status = 0;
    for (;;) {
        double left = timeout - gpuir__emu_since(&t0);
        if (left <= 0) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            status = -2;
            break;
        }
        if (fd >= 0 && !gpuir__emu_log_read(fd, log, &n, left > 0.1 ? 100 : (int)(left * 1000) + 1))
            close(fd), fd = -1;
        if (fd < 0) nanosleep(&nap, NULL);
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) {
            status = w < 0 ? 127 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
    }
    while (fd >= 0 && gpuir__emu_log_read(fd, log, &n, 0) && n < GPUIR__EMU_LOG_MAX) {}
    if (fd >= 0) close(fd);
    log[n] = '\0';
    return status;
}

/* Runs argv in the private directory dir with a time limit; its standard
   error into *log (malloc'd). The exit status (see gpuir__emu_wait), or -1
   when it could not start (*err_no), -3 when out of memory. */
static int gpuir__emu_run(char *const *argv, const char *dir, double timeout, char **log, int *err_no) {
    *log = (char *)GPUIR_MALLOC(GPUIR__EMU_LOG_MAX + 1);
    if (!*log) return -3;
    (*log)[0] = '\0';
    pid_t pid;
    int fd = -1;
    *err_no = gpuir__emu_spawn(argv, dir, &pid, &fd);
    if (*err_no) return *err_no == ENOMEM ? -3 : -1;
    char note[PATH_MAX], text[32];                /* for a sweeper, should this process be killed */
    snprintf(note, sizeof note, "%s/compiler", dir);
    int nf = open(note, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (nf >= 0) {
        snprintf(text, sizeof text, "%ld\n", (long)pid);
        if (!gpuir__write_all(nf, text, strlen(text))) {}     /* best effort */
        close(nf);
    }
    int rc = gpuir__emu_wait(pid, fd, timeout, *log);
    unlink(note);
    return rc;
}

/* The emulator's compiler: desc.cc, else $GPUIR_CC, else cc. */
static const char *gpuir__emu_cc(const gpuir_program *p) {
    const char *env = getenv("GPUIR_CC");
    return p->desc.cc ? p->desc.cc : env && *env ? env : "cc";
}

/* Where posix_spawnp finds cc: cc itself when it holds a '/', else the
   first executable regular file named cc in $PATH; its path into buf and
   the file it names (symlinks followed) into *st, or "" when there is none. */
static void gpuir__emu_cc_path(const char *cc, char buf[PATH_MAX], struct stat *st) {
    const char *path = getenv("PATH");
    for (const char *p = strchr(cc, '/') ? "" : path ? path : "/usr/bin:/bin";;) {
        const char *colon = strchr(p, ':');
        int n = colon ? (int)(colon - p) : (int)strlen(p);
        if (strchr(cc, '/')) snprintf(buf, PATH_MAX, "%s", cc);
        else snprintf(buf, PATH_MAX, "%.*s/%s", n ? n : 1, n ? p : ".", cc);
        if (stat(buf, st) == 0 && S_ISREG(st->st_mode) && access(buf, X_OK) == 0) return;
        buf[0] = '\0';
        memset(st, 0, sizeof *st);
        if (!colon || strchr(cc, '/')) return;
        p = colon + 1;
    }
}

/* What the cache key says of compiler cc: the path it resolves to, the
   file there (device, inode, size, modification time), and what
   `cc --version` prints (its exit status too); malloc'd, NULL with the
   context's error set. */
static char *gpuir__emu_cc_describe(gpuir_program *p, const char *dir, const char *cc, double timeout) {
    char path[PATH_MAX], *log = NULL;
    struct stat st;
    gpuir__emu_cc_path(cc, path, &st);
    char *argv[3] = {(char *)cc, (char *)"--version", NULL};
    int err = 0, rc = gpuir__emu_run(argv, dir, timeout, &log, &err);
    size_t size = strlen(path) + (log ? strlen(log) : 0) + strlen(cc) + 200;
    char *id = rc == -3 ? NULL : (char *)GPUIR_MALLOC(size);
    if (id)
        snprintf(id, size, "%s: %s, file %llu:%llu, %lld bytes, modified %lld.%09ld; --version: exit %d: %s", cc,
                 *path ? path : "not found", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                 (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, rc, log ? log : "");
    GPUIR_FREE(log);
    if (!id) gpuir__oom(p->ctx, "the compiler's identity");
    return id;
}

/* The identity of compiler cc for the cache key, found once per context
   (a compiler replaced in place, or upgraded, gets a new key). NULL with
   the context's error set. */
static const char *gpuir__emu_cc_identity(gpuir_program *p, gpuir__emu_toolchain *h, const char *cc) {
    for (size_t i = 0; i < stbds_arrlenu(h->ccs); i++)
        if (strcmp(h->ccs[i].cc, cc) == 0) return h->ccs[i].id;
    char err[PATH_MAX + 128];
    int err_no = 0;
    const char *dir = gpuir__emu_tmp_dir(h, err, sizeof err, &err_no);
    double timeout = gpuir__emu_cc_timeout();
    if (!dir) {
        if (err_no == ENOMEM) gpuir__oom(p->ctx, "a temporary directory's name");
        else gpuir__fail(p->ctx, GPUIR_ERR_IO, "emu: %s", err);
        return NULL;
    }
    if (!timeout) {
        gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "emu: GPUIR_CC_TIMEOUT='%s' is not a positive number of "
                    "seconds", getenv("GPUIR_CC_TIMEOUT"));
        return NULL;
    }
    gpuir__emu_cc_id e;
    size_t len = strlen(cc) + 1;
    e.cc = (char *)GPUIR_MALLOC(len);
    if (e.cc) memcpy(e.cc, cc, len);
    e.id = e.cc ? gpuir__emu_cc_describe(p, dir, cc, timeout) : NULL;
    if (!e.id) {
        if (!e.cc) gpuir__oom(p->ctx, "the compiler's name");
        GPUIR_FREE(e.cc);
        return NULL;
    }
    stbds_arrput(h->ccs, e);
    return e.id;
}

/* Writes the source into a new file of the private directory (its path in
   src). GPUIR_OK, or the error (recorded; no file is left). */
static gpuir_result gpuir__emu_write_source(gpuir_program *p, gpuir__emu_toolchain *h, char src[PATH_MAX]) {
    char err[PATH_MAX + 128];
    int err_no = 0, fd = gpuir__emu_temp_file(h, src, "src", err, sizeof err, &err_no);
    if (fd < 0) return err_no == ENOMEM ? gpuir__oom(p->ctx, "a temporary file's name")
                                        : gpuir__fail(p->ctx, GPUIR_ERR_IO, "emu: %s", err);
    bool ok = gpuir__write_all(fd, p->source, strlen(p->source));
    err_no = errno;
    if (close(fd) != 0 && ok) ok = false, err_no = errno;
    if (ok) return GPUIR_OK;
    unlink(src);
    return gpuir__fail(p->ctx, GPUIR_ERR_IO, "emu: cannot write the kernels' source to %s: %s", src,
                       strerror(err_no));
}

/* The error for a compiler run that did not succeed (rc from gpuir__emu_run). */
static gpuir_result gpuir__emu_cc_failed(gpuir_program *p, const char *cc, int rc, int err_no, double timeout,
                                         const char *log) {
    const char *sep = *log ? ":\n" : "";
    if (rc == -3) return gpuir__oom(p->ctx, "the compiler's log");
    if (rc == -1)
        return gpuir__fail(p->ctx, GPUIR_ERR_COMPILE, "emu: %s could not be started: %s", cc, strerror(err_no));
    if (rc == -2)
        return gpuir__fail(p->ctx, GPUIR_ERR_COMPILE, "emu: %s did not finish compiling the kernels within %g s "
                           "(GPUIR_CC_TIMEOUT sets the limit); its process group was killed%s%.2000s", cc,
                           timeout, sep, log);
    char how[64];
    if (rc > 128) snprintf(how, sizeof how, "killed by signal %d", rc - 128);
    else snprintf(how, sizeof how, "exit %d", rc);
    return gpuir__fail(p->ctx, GPUIR_ERR_COMPILE, "emu: %s failed to compile the kernels (%s%s)%s%.2000s", cc,
                       how, *log ? "" : ", no output", sep, log);
}

/* Compiles the emulator source to a shared object's bytes, in the
   context's private temporary directory, within the time limit. */
static gpuir_result gpuir__emu_compile(gpuir_program *p, void **image, size_t *size) {
    gpuir__emu_toolchain *h = gpuir__emu_toolchain_get(p->ctx);
    if (!h) return p->ctx->result;
    double timeout = gpuir__emu_cc_timeout();
    char src[PATH_MAX], so[PATH_MAX], err[PATH_MAX + 128], *log = NULL;
    int err_no = 0, fo = -1;
    gpuir_result r = gpuir__emu_write_source(p, h, src);
    bool have_src = r == GPUIR_OK;
    if (!r && (fo = gpuir__emu_temp_file(h, so, "so", err, sizeof err, &err_no)) < 0)
        r = err_no == ENOMEM ? gpuir__oom(p->ctx, "a temporary file's name")
                             : gpuir__fail(p->ctx, GPUIR_ERR_IO, "emu: %s", err);
    if (fo >= 0) close(fo);
    if (!r && !timeout) r = gpuir__fail(p->ctx, GPUIR_ERR_INVALID_ARGUMENT, "emu: GPUIR_CC_TIMEOUT='%s' is not a "
                                        "positive number of seconds", getenv("GPUIR_CC_TIMEOUT"));
    if (!r) {
        char *argv[16];
        int n = 0;
        argv[n++] = (char *)gpuir__emu_cc(p);
        argv[n++] = (char *)"-x"; argv[n++] = (char *)"c"; argv[n++] = (char *)"-std=gnu11";
        argv[n++] = (char *)"-O2"; argv[n++] = (char *)"-fPIC"; argv[n++] = (char *)"-shared";
        if (p->desc.emu_sanitize) argv[n++] = (char *)"-fsanitize=address,undefined";
        argv[n++] = (char *)"-o"; argv[n++] = so; argv[n++] = src; argv[n++] = (char *)"-lm";
        argv[n] = NULL;
        int rc = gpuir__emu_run(argv, h->dir, timeout, &log, &err_no);
        if (rc != 0) r = gpuir__emu_cc_failed(p, argv[0], rc, err_no, timeout, log ? log : "");
    }
    GPUIR_FREE(log);
    char *bytes = NULL;
    if (!r) r = gpuir__read_file(p->ctx, so, &bytes, size);
    *image = bytes;
    if (have_src) unlink(src);
    if (fo >= 0) unlink(so);
    return r;
}

static gpuir_result gpuir__emu_build(gpuir_program *p, gpuir__built *b) {
    gpuir__emu_toolchain *h = gpuir__emu_toolchain_get(p->ctx);
    const char *id = h ? gpuir__emu_cc_identity(p, h, gpuir__emu_cc(p)) : NULL;
    if (!id) return p->ctx->result;
    const char *parts[5] = {"emu", p->source, id, p->desc.emu_sanitize ? "asan" : "-", GPUIR_VERSION_STRING};
    return gpuir__cached_build(p, parts, 5, "so", gpuir__emu_compile, b);
}

/* The emulator's work bound: the most threads one launch may run (it runs
   them one after another on the calling thread), $GPUIR_EMU_MAX_THREADS if
   it is a positive count, else GPUIR__EMU_WORK_BOUND. */
#define GPUIR__EMU_WORK_BOUND ((uint64_t)1 << 28)
static uint64_t gpuir__emu_max_threads(void) {
    const char *env = getenv("GPUIR_EMU_MAX_THREADS");
    char *end = NULL;
    unsigned long long v = env && *env >= '0' && *env <= '9' ? strtoull(env, &end, 10) : 0;
    return v && end && *end == '\0' ? (uint64_t)v : GPUIR__EMU_WORK_BOUND;
}

/* A new emulated device with its table; NULL when out of memory. */
static struct gpuir__emu *gpuir__emu_make(uint64_t seed, gpuir__drv *out) {
    gpuir__emu *E = (gpuir__emu *)gpuir__calloc(1, sizeof *E);
    if (!E) return NULL;
    E->engine = gpuir__emu_engine_make(0);
    if (!E->engine) { GPUIR_FREE(E); return NULL; }
    E->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
    gpuir__drv d = {"emu", E, gpuir__emu_nop, gpuir__emu_nop, gpuir__emu_streams_reserve, gpuir__emu_mem_alloc,
                    gpuir__emu_mem_free, gpuir__emu_htod, gpuir__emu_dtoh, gpuir__emu_dtod, gpuir__emu_module_load,
                    gpuir__emu_module_unload, gpuir__emu_function_get, gpuir__emu_launch, gpuir__emu_event_record,
                    gpuir__emu_stream_wait, gpuir__emu_event_sync, gpuir__emu_sync, gpuir__emu_describe,
                    E->lost, gpuir__emu_host_alloc, gpuir__emu_host_free, gpuir__emu_capture_begin,
                    gpuir__emu_capture_end, gpuir__emu_graph_launch, gpuir__emu_graph_destroy,
                    gpuir__emu_tensor_map, gpuir__emu_host_register, gpuir__emu_host_unregister,
                    gpuir__emu_stream_create, gpuir__emu_stream_destroy, gpuir__emu_stream_sync,
                    gpuir__emu_stream_bind, gpuir__emu_stream_capturing};
    *out = d;
    return E;
}

/* Releases an emulated device (its queued work done first). */
static void gpuir__emu_free(struct gpuir__emu *E) {
    gpuir__emu_drain(E, 0);
    gpuir__emu_calls_free(E->captured);
    for (size_t s = 0; s < stbds_arrlenu(E->streams); s++) stbds_arrfree(E->streams[s].cmds);
    stbds_arrfree(E->streams);
    for (size_t i = 0; i < stbds_arrlenu(E->allocs); i++) GPUIR_FREE((void *)E->allocs[i].base);
    stbds_arrfree(E->allocs);
    while (E->gone_held) gpuir__emu_gone_drop_oldest(E);
    stbds_arrfree(E->events);
    gpuir__emu_engine_destroy(E->engine);
    GPUIR_FREE(E);
}

static gpuir_result gpuir__emu_open(gpuir_program *p) {
    gpuir__drv d;
    gpuir__emu *E = gpuir__emu_make(p->desc.emu_seed, &d);
    if (!E) return gpuir__oom(p->ctx, "the emulator");
    E->host = gpuir__emu_toolchain_get(p->ctx);        /* where its modules are written */
    if (!E->host) { gpuir__emu_free(E); return p->ctx->result; }
    p->drv = d;
    gpuir__limits lim = {1024, {1024, 1024, 64}, {2147483647u, 65535, 65535}, 1u << 20, 0};
    lim.max_launch_threads = gpuir__emu_max_threads();
    p->limits = lim;
    return GPUIR_OK;
}

static void gpuir__emu_close(gpuir_program *p) {
    gpuir__emu *E = (gpuir__emu *)p->drv.self;
    if (!E) return;
    /* Runs free what they allocate and destroy frees resident copies and the
       module first: anything still live here is a gpuir bug. */
    gpuir__emu_drain(E, 0);
    GPUIR_ASSERT(E->live_allocs == 0 && E->live_modules == 0 && E->live_graphs == 0 && E->live_host == 0);
    gpuir__emu_free(E);
    p->drv.self = NULL;
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

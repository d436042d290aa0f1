/* @splat: 256 threads per block */
GPUIR_KERNEL gpuir_k_splat(GPUIR_LANE float *o_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 16LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 1: constant (line 7) */
        float v0 = 2.5f;
        o_[i] = v0;
    }
}

#ifndef GPUIR_TABLE
#ifdef GPUIR_EMU
#define GPUIR_TABLE static const
#else
#define GPUIR_TABLE static __device__ const
#endif
#endif
GPUIR_TABLE float gpuir_dense_3[6] = {1.0f, -2.0f, 3.0f, 4.5f, 0.0f, -0.25f};

/* @dense: 256 threads per block */
GPUIR_KERNEL gpuir_k_dense(GPUIR_LANE float *o_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 6LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 3: constant (line 11) */
        float v0 = gpuir_dense_3[i];
        o_[i] = v0;
    }
}

#ifndef GPUIR_TABLE
#ifdef GPUIR_EMU
#define GPUIR_TABLE static const
#else
#define GPUIR_TABLE static __device__ const
#endif
#endif
GPUIR_TABLE float gpuir_dense_6[8] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.5f};

/* @add: 256 threads per block */
GPUIR_KERNEL gpuir_k_add(GPUIR_LANE const float *a_, float *o_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 8LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 6: constant (line 16) */
        float v0 = gpuir_dense_6[i];
        /* op 7: add (line 17) */
        float v1 = a_[i];
        float v2 = v1 + v0;
        o_[i] = v2;
    }
}

#ifndef GPUIR_TABLE
#ifdef GPUIR_EMU
#define GPUIR_TABLE static const
#else
#define GPUIR_TABLE static __device__ const
#endif
#endif
GPUIR_TABLE float gpuir_dense_10[4] = {10.0f, 20.0f, 30.0f, 40.0f};

/* @bcast: 256 threads per block */
GPUIR_KERNEL gpuir_k_bcast(GPUIR_LANE const float *a_, float *o_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 12LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 10: constant (line 22) */
        float v0 = gpuir_dense_10[(i % 4)];
        /* op 11: mul (line 23) */
        float v1 = a_[i];
        float v2 = GPUIR_FMUL(v1, v0);
        o_[i] = v2;
    }
}

#ifndef GPUIR_TABLE
#ifdef GPUIR_EMU
#define GPUIR_TABLE static const
#else
#define GPUIR_TABLE static __device__ const
#endif
#endif
GPUIR_TABLE float gpuir_dense_14[20] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.5f,
    9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f, 16.0f,
    17.0f, 18.0f, 19.0f, 20.0f};

/* @long: 256 threads per block */
GPUIR_KERNEL gpuir_k_long(GPUIR_LANE const float *a_, float *o_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 20LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 14: constant (line 28) */
        float v0 = gpuir_dense_14[i];
        /* op 15: add (line 29) */
        float v1 = a_[i];
        float v2 = v1 + v0;
        o_[i] = v2;
    }
}

#ifndef GPUIR_TABLE
#ifdef GPUIR_EMU
#define GPUIR_TABLE static const
#else
#define GPUIR_TABLE static __device__ const
#endif
#endif
GPUIR_TABLE int gpuir_dense_18[5] = {1LL, -2LL, 2147483647LL, 0LL, 7LL};

/* @ints: 256 threads per block */
GPUIR_KERNEL gpuir_k_ints(GPUIR_LANE const int *a_, int *o_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 5LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 18: constant (line 34) */
        int v0 = gpuir_dense_18[i];
        /* op 19: sub (line 35) */
        int v1 = a_[i];
        int v2 = (int)((unsigned)v1 - (unsigned)v0);
        o_[i] = v2;
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_splat_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_splat(l, *(float **)p[0]);
}
static void gpuir_k_dense_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_dense(l, *(float **)p[0]);
}
static void gpuir_k_add_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_add(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_bcast_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_bcast(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_long_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_long(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_ints_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_ints(l, *(int **)p[0], *(int **)p[1]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_splat", gpuir_k_splat_emu, 0u, 0u, 0, 1u, 0u, 0u},
    {"gpuir_k_dense", gpuir_k_dense_emu, 0u, 0u, 0, 1u, 0u, 0u},
    {"gpuir_k_add", gpuir_k_add_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_bcast", gpuir_k_bcast_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_long", gpuir_k_long_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_ints", gpuir_k_ints_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

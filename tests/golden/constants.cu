/* @table_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_table_k0(GPUIR_LANE const float *x_, const float *p_const_0_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 8LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 27: mul (line 5) */
        float v0 = x_[i];
        float v1 = p_const_0_[i % 4];
        float v2 = v0 * v1;
        out0_[i] = v2;
    }
}

/* @ints_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_ints_k0(GPUIR_LANE const long long *x_, const long long *p_const_1_, long long *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 3LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 30: add (line 11) */
        long long v0 = x_[i];
        long long v1 = p_const_1_[i];
        long long v2 = (long long)((unsigned long long)v0 + (unsigned long long)v1);
        out0_[i] = v2;
    }
}

/* @fill_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_fill_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 128LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 34: constant */
        float v0 = gpuir_round_bf16(0.125f);
        /* op 36: constant */
        float v1 = gpuir_round_bf16(-1.0f);
        /* op 37: mul (line 17) */
        float v2 = gpuir_bf16_to_f32(x_[i]);
        float v3 = gpuir_round_bf16(v2 * v0);
        /* op 38: max (line 19) */
        float v4 = gpuir_round_bf16(gpuir_fmax(v3, v1));
        out0_[i] = gpuir_f32_to_bf16(v4);
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_table_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_table_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_ints_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_ints_k0(l, *(long long **)p[0], *(long long **)p[1], *(long long **)p[2]);
}
static void gpuir_k_fill_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_fill_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_table_k0", gpuir_k_table_k0_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_ints_k0", gpuir_k_ints_k0_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_fill_k0", gpuir_k_fill_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

/* @table_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_table_k0(GPUIR_LANE const float *x_, const float *p_const_0_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 2LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        int i0 = q * 4 + 0;
        /* op 27: mul (line 5) */
        float4 l0 = ((const float4 *)x_)[q];
        float v0 = l0.x;
        float v1 = p_const_0_[i0 % 4];
        float v2 = GPUIR_FMUL(v0, v1);
        int i1 = q * 4 + 1;
        /* op 27: mul (line 5) */
        float v3 = l0.y;
        float v4 = p_const_0_[i1 % 4];
        float v5 = GPUIR_FMUL(v3, v4);
        int i2 = q * 4 + 2;
        /* op 27: mul (line 5) */
        float v6 = l0.z;
        float v7 = p_const_0_[i2 % 4];
        float v8 = GPUIR_FMUL(v6, v7);
        int i3 = q * 4 + 3;
        /* op 27: mul (line 5) */
        float v9 = l0.w;
        float v10 = p_const_0_[i3 % 4];
        float v11 = GPUIR_FMUL(v9, v10);
        ((float4 *)out0_)[q] = GPUIR_FLOAT4(v2, v5, v8, v11);
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
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 32LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        /* op 34: constant */
        float v0 = gpuir_round_bf16(0.125f);
        /* op 36: constant */
        float v1 = gpuir_round_bf16(-1.0f);
        /* op 37: mul (line 17) */
        unsigned long long l0 = ((const unsigned long long *)x_)[q];
        float v2 = gpuir_bf16_to_f32((unsigned short)(l0 >> 0));
        float v3 = gpuir_round_bf16(v2 * v0);
        /* op 38: max (line 19) */
        float v4 = gpuir_round_bf16(gpuir_fmax(v3, v1));
        /* op 34: constant */
        float v5 = gpuir_round_bf16(0.125f);
        /* op 36: constant */
        float v6 = gpuir_round_bf16(-1.0f);
        /* op 37: mul (line 17) */
        float v7 = gpuir_bf16_to_f32((unsigned short)(l0 >> 16));
        float v8 = gpuir_round_bf16(v7 * v5);
        /* op 38: max (line 19) */
        float v9 = gpuir_round_bf16(gpuir_fmax(v8, v6));
        /* op 34: constant */
        float v10 = gpuir_round_bf16(0.125f);
        /* op 36: constant */
        float v11 = gpuir_round_bf16(-1.0f);
        /* op 37: mul (line 17) */
        float v12 = gpuir_bf16_to_f32((unsigned short)(l0 >> 32));
        float v13 = gpuir_round_bf16(v12 * v10);
        /* op 38: max (line 19) */
        float v14 = gpuir_round_bf16(gpuir_fmax(v13, v11));
        /* op 34: constant */
        float v15 = gpuir_round_bf16(0.125f);
        /* op 36: constant */
        float v16 = gpuir_round_bf16(-1.0f);
        /* op 37: mul (line 17) */
        float v17 = gpuir_bf16_to_f32((unsigned short)(l0 >> 48));
        float v18 = gpuir_round_bf16(v17 * v15);
        /* op 38: max (line 19) */
        float v19 = gpuir_round_bf16(gpuir_fmax(v18, v16));
        ((unsigned long long *)out0_)[q] = (unsigned long long)gpuir_f32_to_bf16(v4) |
            (unsigned long long)gpuir_f32_to_bf16(v9) << 16 | (unsigned long long)gpuir_f32_to_bf16(v14) << 32 |
            (unsigned long long)gpuir_f32_to_bf16(v19) << 48;
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

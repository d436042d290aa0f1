/* @chain_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_chain_k0(GPUIR_LANE const float *x_, const float *b_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 128LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        int i0 = q * 4 + 0;
        /* op 76: exp (line 5) */
        float4 l0 = ((const float4 *)x_)[q];
        float v0 = l0.x;
        float v1 = expf(v0);
        /* op 77: add (line 6) */
        float v2 = b_[i0 % 16];
        float v3 = v1 + v2;
        /* op 78: relu (line 7) */
        float v4 = gpuir_relu(v3);
        int i1 = q * 4 + 1;
        /* op 76: exp (line 5) */
        float v5 = l0.y;
        float v6 = expf(v5);
        /* op 77: add (line 6) */
        float v7 = b_[i1 % 16];
        float v8 = v6 + v7;
        /* op 78: relu (line 7) */
        float v9 = gpuir_relu(v8);
        int i2 = q * 4 + 2;
        /* op 76: exp (line 5) */
        float v10 = l0.z;
        float v11 = expf(v10);
        /* op 77: add (line 6) */
        float v12 = b_[i2 % 16];
        float v13 = v11 + v12;
        /* op 78: relu (line 7) */
        float v14 = gpuir_relu(v13);
        int i3 = q * 4 + 3;
        /* op 76: exp (line 5) */
        float v15 = l0.w;
        float v16 = expf(v15);
        /* op 77: add (line 6) */
        float v17 = b_[i3 % 16];
        float v18 = v16 + v17;
        /* op 78: relu (line 7) */
        float v19 = gpuir_relu(v18);
        ((float4 *)out0_)[q] = GPUIR_FLOAT4(v4, v9, v14, v19);
    }
}

/* @half_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_half_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    GPUIR_NO_UNROLL
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 2LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        /* op 82: constant */
        float v0 = gpuir_round_f16(0.5f);
        /* op 83: mul (line 13) */
        unsigned long long l0 = ((const unsigned long long *)x_)[q];
        float v1 = gpuir_f16_to_f32((unsigned short)(l0 >> 0));
        float v2 = gpuir_round_f16(v1 * v0);
        /* op 84: tanh (line 14) */
        float v3 = gpuir_round_f16(tanhf(v2));
        /* op 82: constant */
        float v4 = gpuir_round_f16(0.5f);
        /* op 83: mul (line 13) */
        float v5 = gpuir_f16_to_f32((unsigned short)(l0 >> 16));
        float v6 = gpuir_round_f16(v5 * v4);
        /* op 84: tanh (line 14) */
        float v7 = gpuir_round_f16(tanhf(v6));
        /* op 82: constant */
        float v8 = gpuir_round_f16(0.5f);
        /* op 83: mul (line 13) */
        float v9 = gpuir_f16_to_f32((unsigned short)(l0 >> 32));
        float v10 = gpuir_round_f16(v9 * v8);
        /* op 84: tanh (line 14) */
        float v11 = gpuir_round_f16(tanhf(v10));
        /* op 82: constant */
        float v12 = gpuir_round_f16(0.5f);
        /* op 83: mul (line 13) */
        float v13 = gpuir_f16_to_f32((unsigned short)(l0 >> 48));
        float v14 = gpuir_round_f16(v13 * v12);
        /* op 84: tanh (line 14) */
        float v15 = gpuir_round_f16(tanhf(v14));
        ((unsigned long long *)out0_)[q] = (unsigned long long)gpuir_f32_to_f16(v3) |
            (unsigned long long)gpuir_f32_to_f16(v7) << 16 | (unsigned long long)gpuir_f32_to_f16(v11) << 32 |
            (unsigned long long)gpuir_f32_to_f16(v15) << 48;
    }
}

/* @quad_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_quad_k0(GPUIR_LANE const float *x_, const float *y_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 128LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        /* op 87: mul (line 19) */
        float4 l0 = ((const float4 *)x_)[q];
        float v0 = l0.x;
        float4 l1 = ((const float4 *)y_)[q];
        float v1 = l1.x;
        float v2 = GPUIR_FMUL(v0, v1);
        /* op 88: relu (line 20) */
        float v3 = gpuir_relu(v2);
        /* op 87: mul (line 19) */
        float v4 = l0.y;
        float v5 = l1.y;
        float v6 = GPUIR_FMUL(v4, v5);
        /* op 88: relu (line 20) */
        float v7 = gpuir_relu(v6);
        /* op 87: mul (line 19) */
        float v8 = l0.z;
        float v9 = l1.z;
        float v10 = GPUIR_FMUL(v8, v9);
        /* op 88: relu (line 20) */
        float v11 = gpuir_relu(v10);
        /* op 87: mul (line 19) */
        float v12 = l0.w;
        float v13 = l1.w;
        float v14 = GPUIR_FMUL(v12, v13);
        /* op 88: relu (line 20) */
        float v15 = gpuir_relu(v14);
        ((float4 *)out0_)[q] = GPUIR_FLOAT4(v3, v7, v11, v15);
    }
}

/* @add_bf16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_add_bf16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, const unsigned short *c_, unsigned short *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 231LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 91: add (line 25) */
        float v0 = gpuir_bf16_to_f32(a_[i]);
        float v1 = gpuir_bf16_to_f32(b_[i % 33]);
        float v2 = gpuir_round_bf16(v0 + v1);
        /* op 92: add (line 26) */
        float v3 = gpuir_bf16_to_f32(c_[i / 33]);
        float v4 = gpuir_round_bf16(v3 + v2);
        out0_[i] = gpuir_f32_to_bf16(v4);
    }
}

/* @gelu_f16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_gelu_f16_k0(GPUIR_LANE const unsigned short *x_, const unsigned short *y_, unsigned short *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 231LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 95: gelu (line 31) */
        float v0 = gpuir_f16_to_f32(x_[i]);
        float v1 = gpuir_round_f16(gpuir_gelu(v0));
        /* op 96: add (line 32) */
        float v2 = gpuir_f16_to_f32(y_[i]);
        float v3 = gpuir_round_f16(v1 + v2);
        out0_[i] = gpuir_f32_to_f16(v3);
    }
}

/* @quad_i32_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_quad_i32_k0(GPUIR_LANE const int *x_, const int *y_, int *out0_, float *out1_) {
    GPUIR_NO_UNROLL
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 12LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        /* op 99: mul (line 37) */
        int4 l0 = ((const int4 *)x_)[q];
        int v0 = l0.x;
        int4 l1 = ((const int4 *)y_)[q];
        int v1 = l1.x;
        int v2 = (int)((unsigned)v0 * (unsigned)v1);
        /* op 100: div (line 38) */
        int v3 = gpuir_div_i32(v2, v0);
        /* op 101: cast (line 39) */
        float v4 = (float)v0;
        /* op 99: mul (line 37) */
        int v5 = l0.y;
        int v6 = l1.y;
        int v7 = (int)((unsigned)v5 * (unsigned)v6);
        /* op 100: div (line 38) */
        int v8 = gpuir_div_i32(v7, v5);
        /* op 101: cast (line 39) */
        float v9 = (float)v5;
        /* op 99: mul (line 37) */
        int v10 = l0.z;
        int v11 = l1.z;
        int v12 = (int)((unsigned)v10 * (unsigned)v11);
        /* op 100: div (line 38) */
        int v13 = gpuir_div_i32(v12, v10);
        /* op 101: cast (line 39) */
        float v14 = (float)v10;
        /* op 99: mul (line 37) */
        int v15 = l0.w;
        int v16 = l1.w;
        int v17 = (int)((unsigned)v15 * (unsigned)v16);
        /* op 100: div (line 38) */
        int v18 = gpuir_div_i32(v17, v15);
        /* op 101: cast (line 39) */
        float v19 = (float)v15;
        ((int4 *)out0_)[q] = GPUIR_INT4(v3, v8, v13, v18);
        ((float4 *)out1_)[q] = GPUIR_FLOAT4(v4, v9, v14, v19);
    }
}

/* @cast_f32_bf16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_cast_f32_bf16_k0(GPUIR_LANE const float *x_, unsigned short *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 45LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 104: cast (line 44) */
        float v0 = x_[i];
        float v1 = gpuir_round_bf16(v0);
        out0_[i] = gpuir_f32_to_bf16(v1);
    }
}

/* @cast_i64_f16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_cast_i64_f16_k0(GPUIR_LANE const long long *x_, unsigned short *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 45LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 107: cast (line 49) */
        long long v0 = x_[i];
        float v1 = gpuir_round_f16((float)v0);
        out0_[i] = gpuir_f32_to_f16(v1);
    }
}

/* @broadcast_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_broadcast_k0(GPUIR_LANE const int *x_, int *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 126LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 110: broadcast (line 54) */
        int v0 = x_[i / 7 % 6];
        out0_[i] = v0;
    }
}

/* @reshape_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_reshape_k0(GPUIR_LANE const float *in0_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 30LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        /* op 113: exp (line 60) */
        float4 l0 = ((const float4 *)in0_)[q];
        float v0 = l0.x;
        float v1 = expf(v0);
        /* op 113: exp (line 60) */
        float v2 = l0.y;
        float v3 = expf(v2);
        /* op 113: exp (line 60) */
        float v4 = l0.z;
        float v5 = expf(v4);
        /* op 113: exp (line 60) */
        float v6 = l0.w;
        float v7 = expf(v6);
        ((float4 *)out0_)[q] = GPUIR_FLOAT4(v1, v3, v5, v7);
    }
}

/* @neg_i64_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_neg_i64_k0(GPUIR_LANE const long long *x_, const long long *y_, long long *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 231LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 116: neg (line 65) */
        long long v0 = x_[i];
        long long v1 = (long long)(0u - (unsigned long long)v0);
        /* op 117: add (line 66) */
        long long v2 = y_[i];
        long long v3 = (long long)((unsigned long long)v1 + (unsigned long long)v2);
        out0_[i] = v3;
    }
}

/* @pow_f32_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_pow_f32_k0(GPUIR_LANE const float *a_, const float *b_, const float *c_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 231LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 120: pow (line 71) */
        float v0 = a_[i];
        float v1 = b_[i % 33];
        float v2 = powf(v0, v1);
        /* op 121: pow (line 72) */
        float v3 = c_[i / 33];
        float v4 = powf(v3, v2);
        out0_[i] = v4;
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_chain_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_chain_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_half_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_half_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_quad_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_quad_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_add_bf16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_add_bf16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2], *(unsigned short **)p[3]);
}
static void gpuir_k_gelu_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_gelu_f16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2]);
}
static void gpuir_k_quad_i32_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_quad_i32_k0(l, *(int **)p[0], *(int **)p[1], *(int **)p[2], *(float **)p[3]);
}
static void gpuir_k_cast_f32_bf16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_cast_f32_bf16_k0(l, *(float **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_cast_i64_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_cast_i64_f16_k0(l, *(long long **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_broadcast_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_broadcast_k0(l, *(int **)p[0], *(int **)p[1]);
}
static void gpuir_k_reshape_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_reshape_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_neg_i64_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_neg_i64_k0(l, *(long long **)p[0], *(long long **)p[1], *(long long **)p[2]);
}
static void gpuir_k_pow_f32_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_pow_f32_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_chain_k0", gpuir_k_chain_k0_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_half_k0", gpuir_k_half_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_quad_k0", gpuir_k_quad_k0_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_add_bf16_k0", gpuir_k_add_bf16_k0_emu, 0u, 0u, 0, 4u, 0u, 0u},
    {"gpuir_k_gelu_f16_k0", gpuir_k_gelu_f16_k0_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_quad_i32_k0", gpuir_k_quad_i32_k0_emu, 0u, 0u, 0, 4u, 0u, 0u},
    {"gpuir_k_cast_f32_bf16_k0", gpuir_k_cast_f32_bf16_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_cast_i64_f16_k0", gpuir_k_cast_i64_f16_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_broadcast_k0", gpuir_k_broadcast_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_reshape_k0", gpuir_k_reshape_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_neg_i64_k0", gpuir_k_neg_i64_k0_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_pow_f32_k0", gpuir_k_pow_f32_k0_emu, 0u, 0u, 0, 4u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

/* @rowmax_k0: 128 threads per block */
GPUIR_KERNEL gpuir_k_rowmax_k0(GPUIR_LANE const float *x_, float *out0_) {
    GPUIR_SHARED(float, red, 32, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long o = GPUIR_BLOCK_RANK; o < 6LL; o += GPUIR_GRID_BLOCKS) {
        float acc = -GPUIR_INF;
        for (long long j = t; j < 100LL; j += 128) {
            int i = (int)((j % 100) + (o % 6) * 100);
            /* op 63: exp (line 5) */
            float v0 = x_[i];
            float v1 = expf(v0);
            /* op 64: reduce_max (line 6) */
            acc = gpuir_fmax(acc, (float)v1);
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 4 ? red[t] : -GPUIR_INF;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        }
        if (t == 0) out0_[o] = acc;
        GPUIR_SYNC();
    }
}

/* @reduce_sum_f32_1_k0: 64 threads per block */
GPUIR_KERNEL gpuir_k_reduce_sum_f32_1_k0(GPUIR_LANE const float *x_, float *out0_) {
    GPUIR_SHARED(double, dred, 32, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long o = GPUIR_BLOCK_RANK; o < 30LL; o += GPUIR_GRID_BLOCKS) {
        double dacc = 0.0;
        for (long long j = t; j < 37LL; j += 64) {
            int i = (int)((o % 5) + (j % 37) * 5 + (o / 5 % 6) * 185);
            /* op 68: abs (line 11) */
            float v0 = x_[i];
            float v1 = fabsf(v0);
            /* op 69: reduce_sum (line 12) */
            dacc += (double)(float)v1;
        }
        for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        if ((t & 31) == 0) dred[t >> 5] = dacc;
        GPUIR_SYNC();
        if (t < 32) {
            dacc = t < 2 ? dred[t] : 0.0;
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        }
        if (t == 0) out0_[o] = (float)dacc;
        GPUIR_SYNC();
    }
}

/* @reduce_sum_f32_0_2_k0: 32 threads per block */
GPUIR_KERNEL gpuir_k_reduce_sum_f32_0_2_k0(GPUIR_LANE const float *x_, float *out0_) {
    GPUIR_SHARED(double, dred, 32, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long o = GPUIR_BLOCK_RANK; o < 37LL; o += GPUIR_GRID_BLOCKS) {
        double dacc = 0.0;
        for (long long j = t; j < 30LL; j += 32) {
            int i = (int)((j % 5) + (o % 37) * 5 + (j / 5 % 6) * 185);
            /* op 73: abs (line 17) */
            float v0 = x_[i];
            float v1 = fabsf(v0);
            /* op 74: reduce_sum (line 18) */
            dacc += (double)(float)v1;
        }
        for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        if ((t & 31) == 0) dred[t >> 5] = dacc;
        GPUIR_SYNC();
        if (t < 32) {
            dacc = t < 1 ? dred[t] : 0.0;
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        }
        if (t == 0) out0_[o] = (float)dacc;
        GPUIR_SYNC();
    }
}

/* @reduce_max_f16_2_k_k0: 32 threads per block */
GPUIR_KERNEL gpuir_k_reduce_max_f16_2_k_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    GPUIR_SHARED(float, red, 32, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long o = GPUIR_BLOCK_RANK; o < 222LL; o += GPUIR_GRID_BLOCKS) {
        float acc = -GPUIR_INF;
        for (long long j = t; j < 5LL; j += 32) {
            int i = (int)((j % 5) + (o % 37) * 5 + (o / 37 % 6) * 185);
            /* op 78: abs (line 23) */
            float v0 = gpuir_f16_to_f32(x_[i]);
            float v1 = gpuir_round_f16(fabsf(v0));
            /* op 79: reduce_max (line 24) */
            acc = gpuir_fmax(acc, (float)v1);
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : -GPUIR_INF;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        }
        if (t == 0) out0_[o] = gpuir_f32_to_f16(acc);
        GPUIR_SYNC();
    }
}

/* @reduce_mean_i32_0_1_2_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_reduce_mean_i32_0_1_2_k0(GPUIR_LANE const int *x_, int *out0_) {
    GPUIR_SHARED(long long, red, 32, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long o = GPUIR_BLOCK_RANK; o < 1LL; o += GPUIR_GRID_BLOCKS) {
        long long acc = 0LL;
        {
            long long j0 = t;
            for (; j0 + 768LL < 1110LL; j0 += 1024LL) {
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) {
                    long long j = j0 + u * 256LL;
                    int i = (int)((j % 5) + (j / 5 % 37) * 5 + (j / 185 % 6) * 185);
                    /* op 83: abs (line 29) */
                    int v0 = x_[i];
                    int v1 = v0 < 0 ? (int)(0u - (unsigned)v0) : v0;
                    /* op 84: reduce_mean (line 30) */
                    acc = (long long)((unsigned long long)acc + (unsigned long long)(long long)v1);
                }
            }
            for (long long j = j0; j < 1110LL; j += 256) {
                int i = (int)((j % 5) + (j / 5 % 37) * 5 + (j / 185 % 6) * 185);
                /* op 83: abs (line 29) */
                int v2 = x_[i];
                int v3 = v2 < 0 ? (int)(0u - (unsigned)v2) : v2;
                /* op 84: reduce_mean (line 30) */
                acc = (long long)((unsigned long long)acc + (unsigned long long)(long long)v3);
            }
        }
        for (int d = 16; d > 0; d >>= 1) { long long other = GPUIR_SHFL_DOWN_I64(acc, d); acc = (long long)((unsigned long long)acc + (unsigned long long)other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 8 ? red[t] : 0LL;
            for (int d = 16; d > 0; d >>= 1) { long long other = GPUIR_SHFL_DOWN_I64(acc, d); acc = (long long)((unsigned long long)acc + (unsigned long long)other); }
        }
        if (t == 0) out0_[o] = (int)(unsigned)(unsigned long long)(acc / 1110LL);
        GPUIR_SYNC();
    }
}

/* @reduce_sum_i64_1_k0: 64 threads per block */
GPUIR_KERNEL gpuir_k_reduce_sum_i64_1_k0(GPUIR_LANE const long long *x_, long long *out0_) {
    GPUIR_SHARED(long long, red, 32, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long o = GPUIR_BLOCK_RANK; o < 30LL; o += GPUIR_GRID_BLOCKS) {
        long long acc = 0LL;
        for (long long j = t; j < 37LL; j += 64) {
            int i = (int)((o % 5) + (j % 37) * 5 + (o / 5 % 6) * 185);
            /* op 88: abs (line 35) */
            long long v0 = x_[i];
            long long v1 = v0 < 0 ? (long long)(0u - (unsigned long long)v0) : v0;
            /* op 89: reduce_sum (line 36) */
            acc = (long long)((unsigned long long)acc + (unsigned long long)(long long)v1);
        }
        for (int d = 16; d > 0; d >>= 1) { long long other = GPUIR_SHFL_DOWN_I64(acc, d); acc = (long long)((unsigned long long)acc + (unsigned long long)other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 2 ? red[t] : 0LL;
            for (int d = 16; d > 0; d >>= 1) { long long other = GPUIR_SHFL_DOWN_I64(acc, d); acc = (long long)((unsigned long long)acc + (unsigned long long)other); }
        }
        if (t == 0) out0_[o] = acc;
        GPUIR_SYNC();
    }
}

/* @mlp_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mlp_k0(GPUIR_LANE const float *x_, const float *w_, const float *b_, float *out1_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 1LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 1LL, tm = tile / 1LL % 1LL, batch = tile / 1LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * 384LL, b0 = batch * 960LL;
        for (long long k0 = 0; k0 < 24LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 16LL && gk < 24LL ? x_[a0 + gm * 24LL + gk * 1LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 24LL && gn < 40LL ? w_[b0 + gk * 40LL + gn * 1LL] : (float)0;
            }
            GPUIR_SYNC();
            GPUIR_UNROLL
            for (int r = 0; r < 16; r++) {
                int e = t + r * 256;
                if (e < 4096) {
                    for (int kk = 0; kk < 16; kk++) acc[r] += as[e / 64 * 16 + kk] * bs[kk * 64 + e % 64];
                }
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) {
            int e = t + r * 256;
            long long gm = tm * 64 + e / 64, gn = tn * 64 + e % 64;
            if (e >= 4096 || gm >= 16LL || gn >= 40LL) continue;
            int i = (int)(batch * 640LL + gm * 40LL + gn);
            /* op 92: matmul (line 41) */
            float v0 = (float)acc[r];
            /* op 93: add (line 42) */
            float v1 = b_[i % 40];
            float v2 = v0 + v1;
            /* op 94: relu (line 43) */
            float v3 = gpuir_relu(v2);
            out1_[i] = v3;
        }
    }
}

/* @mlp_k1: 64 threads per block */
GPUIR_KERNEL gpuir_k_mlp_k1(GPUIR_LANE float *out1_, float *out0_) {
    GPUIR_SHARED(double, dred, 33, 0);
    GPUIR_SHARED(float, red, 33, 264);
    int t = GPUIR_THREAD_RANK;
    for (long long row = GPUIR_BLOCK_RANK; row < 16LL; row += GPUIR_GRID_BLOCKS) {
        long long base = row * 40LL;
        float acc = 0.0f;
        double dacc = 0.0;
        float x0[4] = {0.0f};
        GPUIR_UNROLL
        for (int r = 0; r < 1; r++) {
            long long q = t + r * 64LL;
            if (q >= 10LL) break;
            float4 l = ((const float4 *)(out1_ + base))[q];
            x0[r * 4] = l.x; x0[r * 4 + 1] = l.y; x0[r * 4 + 2] = l.z; x0[r * 4 + 3] = l.w;
        }
        double acc0 = 0.0;
        GPUIR_UNROLL
        for (int r = 0; r < 1; r++) {
            long long q = t + r * 64LL;
            if (q >= 10LL) break;
            int i0 = (int)(base + q * 4 + 0);
            float v0 = x0[r * 4 + 0];
            acc0 += v0;
            /* op 97: tanh (line 45) */
            float v1 = tanhf(v0);
            int i1 = (int)(base + q * 4 + 1);
            float v2 = x0[r * 4 + 1];
            acc0 += v2;
            /* op 97: tanh (line 45) */
            float v3 = tanhf(v2);
            int i2 = (int)(base + q * 4 + 2);
            float v4 = x0[r * 4 + 2];
            acc0 += v4;
            /* op 97: tanh (line 45) */
            float v5 = tanhf(v4);
            int i3 = (int)(base + q * 4 + 3);
            float v6 = x0[r * 4 + 3];
            acc0 += v6;
            /* op 97: tanh (line 45) */
            float v7 = tanhf(v6);
        }
        dacc = acc0;
        for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        if ((t & 31) == 0) dred[t >> 5] = dacc;
        GPUIR_SYNC();
        if (t < 32) {
            dacc = t < 2 ? dred[t] : 0.0;
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        }
        if (t == 0) dred[32] = dacc;
        GPUIR_SYNC();
        acc = (float)(dred[32]);
        float v8 = acc;
        GPUIR_UNROLL
        for (int r = 0; r < 1; r++) {
            long long q = t + r * 64LL;
            if (q >= 10LL) break;
            int i0 = (int)(base + q * 4 + 0);
            float v9 = x0[r * 4 + 0];
            /* op 97: tanh (line 45) */
            float v10 = tanhf(v9);
            int i1 = (int)(base + q * 4 + 1);
            float v11 = x0[r * 4 + 1];
            /* op 97: tanh (line 45) */
            float v12 = tanhf(v11);
            int i2 = (int)(base + q * 4 + 2);
            float v13 = x0[r * 4 + 2];
            /* op 97: tanh (line 45) */
            float v14 = tanhf(v13);
            int i3 = (int)(base + q * 4 + 3);
            float v15 = x0[r * 4 + 3];
            /* op 97: tanh (line 45) */
            float v16 = tanhf(v15);
            ((float4 *)(out1_ + base))[q] = GPUIR_FLOAT4(v10, v12, v14, v16);
        }
        GPUIR_SYNC();
        if (t == 0) out0_[row] = v8;
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_rowmax_k0_emu(gpuir_emu_lane *l, void **p) {
gpuir_k_rowmax_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_reduce_sum_f32_1_k0_emu(gpuir_emu_lane *l, void **p) {
gpuir_k_reduce_sum_f32_1_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_reduce_sum_f32_0_2_k0_emu(gpuir_emu_lane *l, void **p) {
gpuir_k_reduce_sum_f32_0_2_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_reduce_max_f16_2_k_k0_emu(gpuir_emu_lane *l, void **p) {
gpuir_k_reduce_max_f16_2_k_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_reduce_mean_i32_0_1_2_k0_emu(gpuir_emu_lane *l, void **p) {
gpuir_k_reduce_mean_i32_0_1_2_k0(l, *(int **)p[0], *(int **)p[1]);
}
static void gpuir_k_reduce_sum_i64_1_k0_emu(gpuir_emu_lane *l, void **p) {
gpuir_k_reduce_sum_i64_1_k0(l, *(long long **)p[0], *(long long **)p[1]);
}
static void gpuir_k_mlp_k0_emu(gpuir_emu_lane *l, void **p) {
gpuir_k_mlp_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3]);
}
static void gpuir_k_mlp_k1_emu(gpuir_emu_lane *l, void **p) {
gpuir_k_mlp_k1(l, *(float **)p[0], *(float **)p[1]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
{"gpuir_k_rowmax_k0", gpuir_k_rowmax_k0_emu, 128u, 0u, 1, 2u, 0u, 0u},
{"gpuir_k_reduce_sum_f32_1_k0", gpuir_k_reduce_sum_f32_1_k0_emu, 256u, 0u, 1, 2u, 0u, 0u},
{"gpuir_k_reduce_sum_f32_0_2_k0", gpuir_k_reduce_sum_f32_0_2_k0_emu, 256u, 0u, 1, 2u, 0u, 0u},
{"gpuir_k_reduce_max_f16_2_k_k0", gpuir_k_reduce_max_f16_2_k_k0_emu, 128u, 0u, 1, 2u, 0u, 0u},
{"gpuir_k_reduce_mean_i32_0_1_2_k0", gpuir_k_reduce_mean_i32_0_1_2_k0_emu, 256u, 0u, 1, 2u, 0u, 0u},
{"gpuir_k_reduce_sum_i64_1_k0", gpuir_k_reduce_sum_i64_1_k0_emu, 256u, 0u, 1, 2u, 0u, 0u},
{"gpuir_k_mlp_k0", gpuir_k_mlp_k0_emu, 8192u, 0u, 1, 4u, 0u, 0u},
{"gpuir_k_mlp_k1", gpuir_k_mlp_k1_emu, 396u, 0u, 1, 2u, 0u, 0u},
{0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

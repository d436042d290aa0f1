/* @rows_k0: 32 threads per block */
GPUIR_KERNEL gpuir_k_rows_k0(GPUIR_LANE const float *x_, float *out0_) {
    /* op 25: softmax (line 4) */
    GPUIR_SHARED(float, red, 33, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long row = GPUIR_BLOCK_RANK; row < 5LL; row += GPUIR_GRID_BLOCKS) {
        long long base = row * 37LL;
        float acc = -GPUIR_INF;
        float v[2];
        for (int r = 0; r < 2; r++) {
            int c = t + r * 32;
            v[r] = c < 37 ? x_[base + c] : -GPUIR_INF;
            acc = gpuir_fmax(acc, v[r]);
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : -GPUIR_INF;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        }
        if (t == 0) red[32] = acc;
        GPUIR_SYNC();
        acc = red[32];
        float mx = acc;
        acc = 0.0f;
        for (int r = 0; r < 2; r++) {
            if (t + r * 32 < 37) { v[r] = expf(v[r] - mx); acc += v[r]; }
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = acc + other; }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : 0.0f;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = acc + other; }
        }
        if (t == 0) red[32] = acc;
        GPUIR_SYNC();
        acc = red[32];
        for (int r = 0; r < 2; r++) {
            int c = t + r * 32;
            if (c < 37) out0_[base + c] = v[r] / acc;
        }
    }
}

/* @wide_k0: 1024 threads per block */
GPUIR_KERNEL gpuir_k_wide_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    /* op 28: softmax (line 9) */
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 80272 bytes: the slots, then the row */
    float *red = (float *)smem;
    unsigned short *srow = (unsigned short *)((unsigned char *)smem + 272);
    int t = GPUIR_THREAD_RANK;
    for (long long row = GPUIR_BLOCK_RANK; row < 2LL; row += GPUIR_GRID_BLOCKS) {
        long long base = row * 40000LL;
        float acc = -GPUIR_INF;
        GPUIR_SYNC();
        for (long long q0 = t; q0 < 5000LL; q0 += 8192LL) {
            int4 w[8];
            GPUIR_UNROLL
            for (int u = 0; u < 8; u++) if (q0 + u * 1024LL < 5000LL) w[u] = ((const int4 *)(x_ + base))[q0 + u * 1024LL];
            GPUIR_UNROLL
            for (int u = 0; u < 8; u++) if (q0 + u * 1024LL < 5000LL) ((int4 *)srow)[q0 + u * 1024LL] = w[u];
        }
        GPUIR_SYNC();
        float om0 = -GPUIR_INF, os0 = 0.0f;
        {
            long long c0 = t;
            for (; c0 + 3072LL < 40000LL; c0 += 4096LL) {
                float w[4];
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) { long long c = c0 + u * 1024LL; w[u] = gpuir_f16_to_f32(srow[c]); }
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) {
                    long long c = c0 + u * 1024LL;
                    float x = w[u];
                    if (x != -GPUIR_INF) { float nm = gpuir_fmax(om0, x); if (nm != om0) os0 *= expf(om0 - nm); om0 = nm; os0 += expf(x - om0); }
                }
            }
            for (long long c = c0; c < 40000LL; c += 1024) {
                float x = gpuir_f16_to_f32(srow[c]);
                if (x != -GPUIR_INF) { float nm = gpuir_fmax(om0, x); if (nm != om0) os0 *= expf(om0 - nm); om0 = nm; os0 += expf(x - om0); }
            }
        }
        for (int d = 16; d > 0; d >>= 1) { float o0 = GPUIR_SHFL_DOWN_F32(om0, d); float o1 = GPUIR_SHFL_DOWN_F32(os0, d); { float nm = gpuir_fmax(om0, o0); os0 = (om0 == nm ? os0 : os0 * expf(om0 - nm)) + (o0 == nm ? o1 : o1 * expf(o0 - nm)); om0 = nm; } }
        if ((t & 31) == 0) {
            red[t >> 5] = om0;
            red[33 + (t >> 5)] = os0;
        }
        GPUIR_SYNC();
        if (t < 32) {
            om0 = t < 32 ? red[t] : -GPUIR_INF;
            os0 = t < 32 ? red[33 + t] : 0.0f;
            for (int d = 16; d > 0; d >>= 1) { float o0 = GPUIR_SHFL_DOWN_F32(om0, d); float o1 = GPUIR_SHFL_DOWN_F32(os0, d); { float nm = gpuir_fmax(om0, o0); os0 = (om0 == nm ? os0 : os0 * expf(om0 - nm)) + (o0 == nm ? o1 : o1 * expf(o0 - nm)); om0 = nm; } }
            if (t == 0) red[32] = om0;
            if (t == 0) red[65] = os0;
        }
        GPUIR_SYNC();
        om0 = red[32];
        os0 = red[65];
        float mx = om0;
        acc = om0 == -GPUIR_INF ? GPUIR_NAN : os0;
        {
            long long c0 = t;
            for (; c0 + 3072LL < 40000LL; c0 += 4096LL) {
                float w[4];
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) { long long c = c0 + u * 1024LL; w[u] = gpuir_f16_to_f32(srow[c]); }
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) {
                    long long c = c0 + u * 1024LL;
                    float x = w[u];
                    out0_[base + c] = gpuir_f32_to_f16(expf(x - mx) / acc);
                }
            }
            for (long long c = c0; c < 40000LL; c += 1024) {
                float x = gpuir_f16_to_f32(srow[c]);
                out0_[base + c] = gpuir_f32_to_f16(expf(x - mx) / acc);
            }
        }
    }
}

/* @softmax_f16_k0: 32 threads per block */
GPUIR_KERNEL gpuir_k_softmax_f16_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    /* op 31: softmax (line 14) */
    GPUIR_SHARED(float, red, 33, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long row = GPUIR_BLOCK_RANK; row < 5LL; row += GPUIR_GRID_BLOCKS) {
        long long base = row * 37LL;
        float acc = -GPUIR_INF;
        float v[2];
        for (int r = 0; r < 2; r++) {
            int c = t + r * 32;
            v[r] = c < 37 ? gpuir_f16_to_f32(x_[base + c]) : -GPUIR_INF;
            acc = gpuir_fmax(acc, v[r]);
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : -GPUIR_INF;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        }
        if (t == 0) red[32] = acc;
        GPUIR_SYNC();
        acc = red[32];
        float mx = acc;
        acc = 0.0f;
        for (int r = 0; r < 2; r++) {
            if (t + r * 32 < 37) { v[r] = expf(v[r] - mx); acc += v[r]; }
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = acc + other; }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : 0.0f;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = acc + other; }
        }
        if (t == 0) red[32] = acc;
        GPUIR_SYNC();
        acc = red[32];
        for (int r = 0; r < 2; r++) {
            int c = t + r * 32;
            if (c < 37) out0_[base + c] = gpuir_f32_to_f16(v[r] / acc);
        }
    }
}

/* @softmax_rows_quads_k0: 32 threads per block */
GPUIR_KERNEL gpuir_k_softmax_rows_quads_k0(GPUIR_LANE const float *x_, float *out0_) {
    /* op 34: softmax (line 19) */
    GPUIR_SHARED(float, red, 33, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long row = GPUIR_BLOCK_RANK; row < 6LL; row += GPUIR_GRID_BLOCKS) {
        long long base = row * 48LL;
        float acc = -GPUIR_INF;
        float4 v[1];
        for (int r = 0; r < 1; r++) {
            int c = t + r * 32;
            v[r] = c < 12 ? ((const float4 *)(x_ + base))[c] : GPUIR_FLOAT4(-GPUIR_INF, -GPUIR_INF, -GPUIR_INF, -GPUIR_INF);
            acc = gpuir_fmax(acc, gpuir_fmax(gpuir_fmax(v[r].x, v[r].y), gpuir_fmax(v[r].z, v[r].w)));
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : -GPUIR_INF;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        }
        if (t == 0) red[32] = acc;
        GPUIR_SYNC();
        acc = red[32];
        float mx = acc;
        acc = 0.0f;
        for (int r = 0; r < 1; r++) {
            if (t + r * 32 < 12) {
                v[r].x = expf(v[r].x - mx); v[r].y = expf(v[r].y - mx);
                v[r].z = expf(v[r].z - mx); v[r].w = expf(v[r].w - mx);
                acc += (v[r].x + v[r].y) + (v[r].z + v[r].w);
            }
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = acc + other; }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : 0.0f;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = acc + other; }
        }
        if (t == 0) red[32] = acc;
        GPUIR_SYNC();
        acc = red[32];
        for (int r = 0; r < 1; r++) {
            int c = t + r * 32;
            if (c < 12) ((float4 *)(out0_ + base))[c] = GPUIR_FLOAT4(v[r].x / acc, v[r].y / acc, v[r].z / acc, v[r].w / acc);
        }
    }
}

/* @softmax_axis0_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_softmax_axis0_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    /* op 37: softmax (line 24) */
    for (long long o = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; o < 5LL; o += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long base = (o / 5LL) * 30LL + o % 5LL;
        float om0 = -GPUIR_INF, os0 = 0.0f;
        float v[6];
        GPUIR_UNROLL
        for (long long r = 0; r < 6LL; r++) {
            long long e = base + r * 5LL;
            float v0 = gpuir_bf16_to_f32(x_[e]);
            float x = v0;
            v[r] = x;
            if (x != -GPUIR_INF) { float nm = gpuir_fmax(om0, x); if (nm != om0) os0 *= expf(om0 - nm); om0 = nm; os0 += expf(x - om0); }
        }
        float mx = om0, sum = om0 == -GPUIR_INF ? GPUIR_NAN : os0;
        GPUIR_UNROLL
        for (long long r = 0; r < 6LL; r++) {
            long long e = base + r * 5LL;
            float v1 = gpuir_round_bf16(expf(v[r] - mx) / sum);
            out0_[e] = gpuir_f32_to_bf16(v1);
        }
    }
}

/* @softmax_wide_f32_k0: 1024 threads per block */
GPUIR_KERNEL gpuir_k_softmax_wide_f32_k0(GPUIR_LANE const float *x_, float *out0_) {
    /* op 40: softmax (line 29) */
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 160272 bytes: the slots, then the row */
    float *red = (float *)smem;
    float *srow = (float *)((unsigned char *)smem + 272);
    int t = GPUIR_THREAD_RANK;
    for (long long row = GPUIR_BLOCK_RANK; row < 2LL; row += GPUIR_GRID_BLOCKS) {
        long long base = row * 40000LL;
        float acc = -GPUIR_INF;
        GPUIR_SYNC();
        for (long long q0 = t; q0 < 10000LL; q0 += 8192LL) {
            int4 w[8];
            GPUIR_UNROLL
            for (int u = 0; u < 8; u++) if (q0 + u * 1024LL < 10000LL) w[u] = ((const int4 *)(x_ + base))[q0 + u * 1024LL];
            GPUIR_UNROLL
            for (int u = 0; u < 8; u++) if (q0 + u * 1024LL < 10000LL) ((int4 *)srow)[q0 + u * 1024LL] = w[u];
        }
        GPUIR_SYNC();
        float om0 = -GPUIR_INF, os0 = 0.0f;
        {
            long long c0 = t;
            for (; c0 + 3072LL < 40000LL; c0 += 4096LL) {
                float w[4];
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) { long long c = c0 + u * 1024LL; w[u] = srow[c]; }
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) {
                    long long c = c0 + u * 1024LL;
                    float x = w[u];
                    if (x != -GPUIR_INF) { float nm = gpuir_fmax(om0, x); if (nm != om0) os0 *= expf(om0 - nm); om0 = nm; os0 += expf(x - om0); }
                }
            }
            for (long long c = c0; c < 40000LL; c += 1024) {
                float x = srow[c];
                if (x != -GPUIR_INF) { float nm = gpuir_fmax(om0, x); if (nm != om0) os0 *= expf(om0 - nm); om0 = nm; os0 += expf(x - om0); }
            }
        }
        for (int d = 16; d > 0; d >>= 1) { float o0 = GPUIR_SHFL_DOWN_F32(om0, d); float o1 = GPUIR_SHFL_DOWN_F32(os0, d); { float nm = gpuir_fmax(om0, o0); os0 = (om0 == nm ? os0 : os0 * expf(om0 - nm)) + (o0 == nm ? o1 : o1 * expf(o0 - nm)); om0 = nm; } }
        if ((t & 31) == 0) {
            red[t >> 5] = om0;
            red[33 + (t >> 5)] = os0;
        }
        GPUIR_SYNC();
        if (t < 32) {
            om0 = t < 32 ? red[t] : -GPUIR_INF;
            os0 = t < 32 ? red[33 + t] : 0.0f;
            for (int d = 16; d > 0; d >>= 1) { float o0 = GPUIR_SHFL_DOWN_F32(om0, d); float o1 = GPUIR_SHFL_DOWN_F32(os0, d); { float nm = gpuir_fmax(om0, o0); os0 = (om0 == nm ? os0 : os0 * expf(om0 - nm)) + (o0 == nm ? o1 : o1 * expf(o0 - nm)); om0 = nm; } }
            if (t == 0) red[32] = om0;
            if (t == 0) red[65] = os0;
        }
        GPUIR_SYNC();
        om0 = red[32];
        os0 = red[65];
        float mx = om0;
        acc = om0 == -GPUIR_INF ? GPUIR_NAN : os0;
        {
            long long c0 = t;
            for (; c0 + 3072LL < 40000LL; c0 += 4096LL) {
                float w[4];
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) { long long c = c0 + u * 1024LL; w[u] = srow[c]; }
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) {
                    long long c = c0 + u * 1024LL;
                    float x = w[u];
                    out0_[base + c] = expf(x - mx) / acc;
                }
            }
            for (long long c = c0; c < 40000LL; c += 1024) {
                float x = srow[c];
                out0_[base + c] = expf(x - mx) / acc;
            }
        }
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_rows_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_rows_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_wide_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_wide_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_softmax_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_softmax_f16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_softmax_rows_quads_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_softmax_rows_quads_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_softmax_axis0_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_softmax_axis0_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_softmax_wide_f32_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_softmax_wide_f32_k0(l, *(float **)p[0], *(float **)p[1]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_rows_k0", gpuir_k_rows_k0_emu, 132u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_wide_k0", gpuir_k_wide_k0_emu, 0u, 80272u, 1, 2u, 0u, 0u},
    {"gpuir_k_softmax_f16_k0", gpuir_k_softmax_f16_k0_emu, 132u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_softmax_rows_quads_k0", gpuir_k_softmax_rows_quads_k0_emu, 132u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_softmax_axis0_k0", gpuir_k_softmax_axis0_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_softmax_wide_f32_k0", gpuir_k_softmax_wide_f32_k0_emu, 0u, 160272u, 1, 2u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

/* @mm_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_k0(GPUIR_LANE const float *a_, const float *b_, const float *bias_, float *out0_) {
    GPUIR_SHARED(float, as, 2176, 0);
    GPUIR_SHARED(float, bs, 2048, 8704);
    int t = GPUIR_THREAD_RANK, warp = t / 32, lane = t % 32;
    int rm = warp / 2 * 16 + lane / 8 * 4, rn = warp % 2 * 32 + lane % 8 * 4;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
        long long a0 = batch * 2310LL, b0 = batch * 2145LL;
        float acc[4][4];
        GPUIR_UNROLL
        for (int i = 0; i < 4; i++)
            GPUIR_UNROLL
            for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
        float ra[4];
        float rb[4];
        long long k0 = 0;
        {
            GPUIR_UNROLL
            for (int r = 0; r < 4; r++) {
                int e = t + r * 256, m = e / 16, kk = e % 16;
                long long gm = tm * 64 + m, gk = k0 + kk;
                ra[r] = gm < 70LL && gk < 33LL ? a_[a0 + gm * 33LL + gk] : 0.0f;
            }
            GPUIR_UNROLL
            for (int r = 0; r < 4; r++) {
                int e = t + r * 256, kk = e / 64, n = e % 64;
                long long gk = k0 + kk, gn = tn * 64 + n;
                rb[r] = gk < 33LL && gn < 65LL ? b_[b0 + gk * 65LL + gn] : 0.0f;
            }
            GPUIR_UNROLL
            for (int r = 0; r < 4; r++) {
                int e = t + r * 256;
                as[0 * 1088 + e % 16 * 68 + e / 16] = ra[r];
            }
            GPUIR_UNROLL
            for (int r = 0; r < 4; r++) bs[0 * 1024 + t + r * 256] = rb[r];
        }
        GPUIR_SYNC();
        for (long long kt = 0; kt < 3LL; kt++) {
            int st = (int)(kt & 1);
            if (kt + 1 < 3LL) {
                k0 = (kt + 1) * 16;
                GPUIR_UNROLL
                for (int r = 0; r < 4; r++) {
                    int e = t + r * 256, m = e / 16, kk = e % 16;
                    long long gm = tm * 64 + m, gk = k0 + kk;
                    ra[r] = gm < 70LL && gk < 33LL ? a_[a0 + gm * 33LL + gk] : 0.0f;
                }
                GPUIR_UNROLL
                for (int r = 0; r < 4; r++) {
                    int e = t + r * 256, kk = e / 64, n = e % 64;
                    long long gk = k0 + kk, gn = tn * 64 + n;
                    rb[r] = gk < 33LL && gn < 65LL ? b_[b0 + gk * 65LL + gn] : 0.0f;
                }
            }
            GPUIR_UNROLL
            for (int kk = 0; kk < 16; kk++) {
                const float *ap = as + (st * 16 + kk) * 68 + rm, *bp = bs + (st * 16 + kk) * 64 + rn;
                float ar[4], br[4];
                GPUIR_UNROLL
                for (int q = 0; q < 1; q++) {
                    float4 u = *(const float4 *)(ap + q * 16), v = *(const float4 *)(bp + q * 32);
                    ar[q * 4] = u.x; ar[q * 4 + 1] = u.y; ar[q * 4 + 2] = u.z; ar[q * 4 + 3] = u.w;
                    br[q * 4] = v.x; br[q * 4 + 1] = v.y; br[q * 4 + 2] = v.z; br[q * 4 + 3] = v.w;
                }
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++)
                    GPUIR_UNROLL
                    for (int j = 0; j < 4; j++) acc[i][j] += ar[i] * br[j];
            }
            if (kt + 1 < 3LL) {
                GPUIR_UNROLL
                for (int r = 0; r < 4; r++) {
                    int e = t + r * 256;
                    as[(st ^ 1) * 1088 + e % 16 * 68 + e / 16] = ra[r];
                }
                GPUIR_UNROLL
                for (int r = 0; r < 4; r++) bs[(st ^ 1) * 1024 + t + r * 256] = rb[r];
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int ii = 0; ii < 4; ii++) {
            GPUIR_UNROLL
            for (int jj = 0; jj < 4; jj++) {
                long long gm = tm * 64 + rm + ii / 4 * 16 + ii % 4, gn = tn * 64 + rn + jj / 4 * 32 + jj % 4;
                if (gm >= 70LL || gn >= 65LL) continue;
                int i = (int)(batch * 4550LL + gm * 65LL + gn);
                /* op 67: matmul (line 5) */
                float v0 = acc[ii][jj];
                /* op 68: add (line 6) */
                float v1 = bias_[i % 65];
                float v2 = v0 + v1;
                out0_[i] = v2;
            }
        }
    }
}

/* @mm_i32_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_i32_k0(GPUIR_LANE const int *a_, const int *b_, const int *bias_, int *out0_) {
    GPUIR_SHARED(long long, as, 1024, 0);
    GPUIR_SHARED(long long, bs, 1024, 8192);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 2LL, tm = tile / 2LL % 2LL, batch = tile / 4LL;
        unsigned long long acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * 2310LL, b0 = batch * 2145LL;
        for (long long k0 = 0; k0 < 33LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 70LL && gk < 33LL ? a_[a0 + gm * 33LL + gk * 1LL] : (long long)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 33LL && gn < 65LL ? b_[b0 + gk * 65LL + gn * 1LL] : (long long)0;
            }
            GPUIR_SYNC();
            GPUIR_UNROLL
            for (int r = 0; r < 16; r++) {
                int e = t + r * 256;
                if (e < 4096) {
                    for (int kk = 0; kk < 16; kk++) acc[r] += (unsigned long long)as[e / 64 * 16 + kk] * (unsigned long long)bs[kk * 64 + e % 64];
                }
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) {
            int e = t + r * 256;
            long long gm = tm * 64 + e / 64, gn = tn * 64 + e % 64;
            if (e >= 4096 || gm >= 70LL || gn >= 65LL) continue;
            int i = (int)(batch * 4550LL + gm * 65LL + gn);
            /* op 71: matmul (line 11) */
            int v0 = (int)acc[r];
            /* op 72: add (line 12) */
            int v1 = bias_[i % 65];
            int v2 = (int)((unsigned)v0 + (unsigned)v1);
            out0_[i] = v2;
        }
    }
}

/* @mm_ta_f32_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_ta_f32_k0(GPUIR_LANE const float *a_, const float *b_, float *out0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 2LL, tm = tile / 2LL % 2LL, batch = tile / 4LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * 2310LL, b0 = batch * 2145LL;
        for (long long k0 = 0; k0 < 33LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 70LL && gk < 33LL ? a_[a0 + gm * 1LL + gk * 70LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 33LL && gn < 65LL ? b_[b0 + gk * 65LL + gn * 1LL] : (float)0;
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
            if (e >= 4096 || gm >= 70LL || gn >= 65LL) continue;
            int i = (int)(batch * 4550LL + gm * 65LL + gn);
            /* op 75: matmul (line 17) */
            float v0 = (float)acc[r];
            out0_[i] = v0;
        }
    }
}

/* @mm_tb_i64_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_tb_i64_k0(GPUIR_LANE const long long *a_, const long long *b_, long long *out0_) {
    GPUIR_SHARED(long long, as, 1024, 0);
    GPUIR_SHARED(long long, bs, 1024, 8192);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 2LL, tm = tile / 2LL % 2LL, batch = tile / 4LL;
        unsigned long long acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * 2310LL, b0 = batch * 2145LL;
        for (long long k0 = 0; k0 < 33LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 70LL && gk < 33LL ? a_[a0 + gm * 33LL + gk * 1LL] : (long long)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 33LL && gn < 65LL ? b_[b0 + gk * 1LL + gn * 33LL] : (long long)0;
            }
            GPUIR_SYNC();
            GPUIR_UNROLL
            for (int r = 0; r < 16; r++) {
                int e = t + r * 256;
                if (e < 4096) {
                    for (int kk = 0; kk < 16; kk++) acc[r] += (unsigned long long)as[e / 64 * 16 + kk] * (unsigned long long)bs[kk * 64 + e % 64];
                }
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) {
            int e = t + r * 256;
            long long gm = tm * 64 + e / 64, gn = tn * 64 + e % 64;
            if (e >= 4096 || gm >= 70LL || gn >= 65LL) continue;
            int i = (int)(batch * 4550LL + gm * 65LL + gn);
            /* op 78: matmul (line 22) */
            long long v0 = (long long)acc[r];
            out0_[i] = v0;
        }
    }
}

/* @mm_1x1x1_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_1x1x1_k0(GPUIR_LANE const float *a_, const float *b_, float *out0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 1LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 1LL, tm = tile / 1LL % 1LL, batch = tile / 1LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * 1LL, b0 = batch * 1LL;
        for (long long k0 = 0; k0 < 1LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 1LL && gk < 1LL ? a_[a0 + gm * 1LL + gk * 1LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 1LL && gn < 1LL ? b_[b0 + gk * 1LL + gn * 1LL] : (float)0;
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
            if (e >= 4096 || gm >= 1LL || gn >= 1LL) continue;
            int i = (int)(batch * 1LL + gm * 1LL + gn);
            /* op 81: matmul (line 27) */
            float v0 = (float)acc[r];
            out0_[i] = v0;
        }
    }
}

/* @mm_n1_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_n1_k0(GPUIR_LANE const float *a_, const float *b_, const float *bias_, float *out0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 1LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 1LL, tm = tile / 1LL % 1LL, batch = tile / 1LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * 650LL, b0 = batch * 130LL;
        for (long long k0 = 0; k0 < 130LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 5LL && gk < 130LL ? a_[a0 + gm * 130LL + gk * 1LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 130LL && gn < 1LL ? b_[b0 + gk * 1LL + gn * 1LL] : (float)0;
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
            if (e >= 4096 || gm >= 5LL || gn >= 1LL) continue;
            int i = (int)(batch * 5LL + gm * 1LL + gn);
            /* op 84: matmul (line 32) */
            float v0 = (float)acc[r];
            /* op 85: add (line 33) */
            float v1 = bias_[i];
            float v2 = v0 + v1;
            /* op 86: relu (line 34) */
            float v3 = gpuir_relu(v2);
            out0_[i] = v3;
        }
    }
}

/* @mm_bcast_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_bcast_k0(GPUIR_LANE const float *a_, const float *b_, float *out0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 6LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 1LL, tm = tile / 1LL % 1LL, batch = tile / 1LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = (batch / 3) * 340LL, b0 = (batch % 3) * 153LL;
        for (long long k0 = 0; k0 < 17LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 20LL && gk < 17LL ? a_[a0 + gm * 17LL + gk * 1LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 17LL && gn < 9LL ? b_[b0 + gk * 9LL + gn * 1LL] : (float)0;
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
            if (e >= 4096 || gm >= 20LL || gn >= 9LL) continue;
            int i = (int)(batch * 180LL + gm * 9LL + gn);
            /* op 89: matmul (line 39) */
            float v0 = (float)acc[r];
            out0_[i] = v0;
        }
    }
}

/* @mm128_edges_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm128_edges_k0(GPUIR_LANE const float *a_, const float *b_, const float *bias_, float *out0_) {
    GPUIR_SHARED(float, as, 2176, 0);
    GPUIR_SHARED(float, bs, 2048, 8704);
    int t = GPUIR_THREAD_RANK, warp = t / 32, lane = t % 32;
    int rm = warp / 2 * 16 + lane / 8 * 4, rn = warp % 2 * 32 + lane % 8 * 4;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 9LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 9LL, first = u / 24LL * 8, rows = 3LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 24LL % rows, tn = u % 24LL / rows, batch = tile / 9LL;
        long long a0 = batch * 1703LL, b0 = batch * 1729LL;
        float acc[4][4];
        GPUIR_UNROLL
        for (int i = 0; i < 4; i++)
            GPUIR_UNROLL
            for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
        float ra[4];
        float rb[4];
        long long k0 = 0;
        {
            GPUIR_UNROLL
            for (int r = 0; r < 4; r++) {
                int e = t + r * 256, m = e / 16, kk = e % 16;
                long long gm = tm * 64 + m, gk = k0 + kk;
                ra[r] = gm < 131LL && gk < 13LL ? a_[a0 + gm * 13LL + gk] : 0.0f;
            }
            GPUIR_UNROLL
            for (int r = 0; r < 4; r++) {
                int e = t + r * 256, kk = e / 64, n = e % 64;
                long long gk = k0 + kk, gn = tn * 64 + n;
                rb[r] = gk < 13LL && gn < 133LL ? b_[b0 + gk * 133LL + gn] : 0.0f;
            }
            GPUIR_UNROLL
            for (int r = 0; r < 4; r++) {
                int e = t + r * 256;
                as[0 * 1088 + e % 16 * 68 + e / 16] = ra[r];
            }
            GPUIR_UNROLL
            for (int r = 0; r < 4; r++) bs[0 * 1024 + t + r * 256] = rb[r];
        }
        GPUIR_SYNC();
        for (long long kt = 0; kt < 1LL; kt++) {
            int st = (int)(kt & 1);
            if (kt + 1 < 1LL) {
                k0 = (kt + 1) * 16;
                GPUIR_UNROLL
                for (int r = 0; r < 4; r++) {
                    int e = t + r * 256, m = e / 16, kk = e % 16;
                    long long gm = tm * 64 + m, gk = k0 + kk;
                    ra[r] = gm < 131LL && gk < 13LL ? a_[a0 + gm * 13LL + gk] : 0.0f;
                }
                GPUIR_UNROLL
                for (int r = 0; r < 4; r++) {
                    int e = t + r * 256, kk = e / 64, n = e % 64;
                    long long gk = k0 + kk, gn = tn * 64 + n;
                    rb[r] = gk < 13LL && gn < 133LL ? b_[b0 + gk * 133LL + gn] : 0.0f;
                }
            }
            GPUIR_UNROLL
            for (int kk = 0; kk < 16; kk++) {
                const float *ap = as + (st * 16 + kk) * 68 + rm, *bp = bs + (st * 16 + kk) * 64 + rn;
                float ar[4], br[4];
                GPUIR_UNROLL
                for (int q = 0; q < 1; q++) {
                    float4 u = *(const float4 *)(ap + q * 16), v = *(const float4 *)(bp + q * 32);
                    ar[q * 4] = u.x; ar[q * 4 + 1] = u.y; ar[q * 4 + 2] = u.z; ar[q * 4 + 3] = u.w;
                    br[q * 4] = v.x; br[q * 4 + 1] = v.y; br[q * 4 + 2] = v.z; br[q * 4 + 3] = v.w;
                }
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++)
                    GPUIR_UNROLL
                    for (int j = 0; j < 4; j++) acc[i][j] += ar[i] * br[j];
            }
            if (kt + 1 < 1LL) {
                GPUIR_UNROLL
                for (int r = 0; r < 4; r++) {
                    int e = t + r * 256;
                    as[(st ^ 1) * 1088 + e % 16 * 68 + e / 16] = ra[r];
                }
                GPUIR_UNROLL
                for (int r = 0; r < 4; r++) bs[(st ^ 1) * 1024 + t + r * 256] = rb[r];
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int ii = 0; ii < 4; ii++) {
            GPUIR_UNROLL
            for (int jj = 0; jj < 4; jj++) {
                long long gm = tm * 64 + rm + ii / 4 * 16 + ii % 4, gn = tn * 64 + rn + jj / 4 * 32 + jj % 4;
                if (gm >= 131LL || gn >= 133LL) continue;
                int i = (int)(batch * 17423LL + gm * 133LL + gn);
                /* op 92: matmul (line 44) */
                float v0 = acc[ii][jj];
                /* op 93: add (line 45) */
                float v1 = bias_[i % 133];
                float v2 = v0 + v1;
                /* op 94: gelu (line 46) */
                float v3 = gpuir_gelu(v2);
                out0_[i] = v3;
            }
        }
    }
}

/* @small_silu_residual_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_small_silu_residual_k0(GPUIR_LANE const float *a_, const float *b_, const float *x_, float *out0_) {
    GPUIR_SHARED(float, as, 2176, 0);
    GPUIR_SHARED(float, bs, 2048, 8704);
    int t = GPUIR_THREAD_RANK, warp = t / 32, lane = t % 32;
    int rm = warp / 2 * 16 + lane / 8 * 4, rn = warp % 2 * 32 + lane % 8 * 4;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
        long long a0 = batch * 3880LL, b0 = batch * 2880LL;
        float acc[4][4];
        GPUIR_UNROLL
        for (int i = 0; i < 4; i++)
            GPUIR_UNROLL
            for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
        float4 ra[1];
        float4 rb[1];
        long long k0 = 0;
        {
            GPUIR_UNROLL
            for (int r = 0; r < 1; r++) {
                int e = t + r * 256, m = e / 4, kq = e % 4 * 4;
                long long gm = tm * 64 + m, gk = k0 + kq;
                ra[r] = gm < 97LL && gk < 40LL ? *(const float4 *)(a_ + a0 + gm * 40LL + gk) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            GPUIR_UNROLL
            for (int r = 0; r < 1; r++) {
                int e = t + r * 256, kk = e / 16, nq = e % 16 * 4;
                long long gk = k0 + kk, gn = tn * 64 + nq;
                rb[r] = gk < 40LL && gn < 72LL ? *(const float4 *)(b_ + b0 + gk * 72LL + gn) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            GPUIR_UNROLL
            for (int r = 0; r < 1; r++) {
                int e = t + r * 256, m = e / 4, kq = e % 4 * 4;
                float *d = as + 0 * 1088 + kq * 68 + m;
                d[0] = ra[r].x; d[68] = ra[r].y; d[136] = ra[r].z; d[204] = ra[r].w;
            }
            GPUIR_UNROLL
            for (int r = 0; r < 1; r++)
                *(float4 *)(bs + 0 * 1024 + (t + r * 256) * 4) = rb[r];
        }
        GPUIR_SYNC();
        for (long long kt = 0; kt < 3LL; kt++) {
            int st = (int)(kt & 1);
            if (kt + 1 < 3LL) {
                k0 = (kt + 1) * 16;
                GPUIR_UNROLL
                for (int r = 0; r < 1; r++) {
                    int e = t + r * 256, m = e / 4, kq = e % 4 * 4;
                    long long gm = tm * 64 + m, gk = k0 + kq;
                    ra[r] = gm < 97LL && gk < 40LL ? *(const float4 *)(a_ + a0 + gm * 40LL + gk) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
                }
                GPUIR_UNROLL
                for (int r = 0; r < 1; r++) {
                    int e = t + r * 256, kk = e / 16, nq = e % 16 * 4;
                    long long gk = k0 + kk, gn = tn * 64 + nq;
                    rb[r] = gk < 40LL && gn < 72LL ? *(const float4 *)(b_ + b0 + gk * 72LL + gn) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
                }
            }
            GPUIR_UNROLL
            for (int kk = 0; kk < 16; kk++) {
                const float *ap = as + (st * 16 + kk) * 68 + rm, *bp = bs + (st * 16 + kk) * 64 + rn;
                float ar[4], br[4];
                GPUIR_UNROLL
                for (int q = 0; q < 1; q++) {
                    float4 u = *(const float4 *)(ap + q * 16), v = *(const float4 *)(bp + q * 32);
                    ar[q * 4] = u.x; ar[q * 4 + 1] = u.y; ar[q * 4 + 2] = u.z; ar[q * 4 + 3] = u.w;
                    br[q * 4] = v.x; br[q * 4 + 1] = v.y; br[q * 4 + 2] = v.z; br[q * 4 + 3] = v.w;
                }
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++)
                    GPUIR_UNROLL
                    for (int j = 0; j < 4; j++) acc[i][j] += ar[i] * br[j];
            }
            if (kt + 1 < 3LL) {
                GPUIR_UNROLL
                for (int r = 0; r < 1; r++) {
                    int e = t + r * 256, m = e / 4, kq = e % 4 * 4;
                    float *d = as + (st ^ 1) * 1088 + kq * 68 + m;
                    d[0] = ra[r].x; d[68] = ra[r].y; d[136] = ra[r].z; d[204] = ra[r].w;
                }
                GPUIR_UNROLL
                for (int r = 0; r < 1; r++)
                    *(float4 *)(bs + (st ^ 1) * 1024 + (t + r * 256) * 4) = rb[r];
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int ii = 0; ii < 4; ii++) {
            GPUIR_UNROLL
            for (int jj = 0; jj < 4; jj++) {
                long long gm = tm * 64 + rm + ii / 4 * 16 + ii % 4, gn = tn * 64 + rn + jj / 4 * 32 + jj % 4;
                if (gm >= 97LL || gn >= 72LL) continue;
                int i = (int)(batch * 6984LL + gm * 72LL + gn);
                /* op 97: matmul (line 51) */
                float v0 = acc[ii][jj];
                /* op 98: silu (line 52) */
                float v1 = gpuir_silu(v0);
                /* op 99: add (line 53) */
                float v2 = x_[i];
                float v3 = v1 + v2;
                out0_[i] = v3;
            }
        }
    }
}

/* @big_bands_gelu_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_big_bands_gelu_k0(GPUIR_LANE const float *a_, const float *b_, const float *c_, float *out0_) {
    GPUIR_SHARED(float, as, 4160, 0);
    GPUIR_SHARED(float, bs, 2048, 16640);
    int t = GPUIR_THREAD_RANK, warp = t / 32, lane = t % 32;
    int rm = warp / 2 * 64 + lane / 8 * 4, rn = warp % 2 * 64 + lane % 8 * 4;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 70LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 10LL, first = u / 16LL * 8, rows = 5LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 10LL;
        long long a0 = batch * 41508LL, b0 = batch * 4752LL;
        float acc[16][8];
        GPUIR_UNROLL
        for (int i = 0; i < 16; i++)
            GPUIR_UNROLL
            for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
        float4 ra[2];
        float4 rb[1];
        long long k0 = 0;
        {
            GPUIR_UNROLL
            for (int r = 0; r < 2; r++) {
                int e = t + r * 256, m = e / 2, kq = e % 2 * 4;
                long long gm = tm * 256 + m, gk = k0 + kq;
                ra[r] = gm < 1153LL && gk < 36LL ? *(const float4 *)(a_ + a0 + gm * 36LL + gk) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            GPUIR_UNROLL
            for (int r = 0; r < 1; r++) {
                int e = t + r * 256, kk = e / 32, nq = e % 32 * 4;
                long long gk = k0 + kk, gn = tn * 128 + nq;
                rb[r] = gk < 36LL && gn < 132LL ? *(const float4 *)(b_ + b0 + gk * 132LL + gn) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            GPUIR_UNROLL
            for (int r = 0; r < 2; r++) {
                int e = t + r * 256, m = e / 2, kq = e % 2 * 4;
                float *d = as + 0 * 2080 + kq * 260 + m;
                d[0] = ra[r].x; d[260] = ra[r].y; d[520] = ra[r].z; d[780] = ra[r].w;
            }
            GPUIR_UNROLL
            for (int r = 0; r < 1; r++)
                *(float4 *)(bs + 0 * 1024 + (t + r * 256) * 4) = rb[r];
        }
        GPUIR_SYNC();
        for (long long kt = 0; kt < 5LL; kt++) {
            int st = (int)(kt & 1);
            if (kt + 1 < 5LL) {
                k0 = (kt + 1) * 8;
                GPUIR_UNROLL
                for (int r = 0; r < 2; r++) {
                    int e = t + r * 256, m = e / 2, kq = e % 2 * 4;
                    long long gm = tm * 256 + m, gk = k0 + kq;
                    ra[r] = gm < 1153LL && gk < 36LL ? *(const float4 *)(a_ + a0 + gm * 36LL + gk) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
                }
                GPUIR_UNROLL
                for (int r = 0; r < 1; r++) {
                    int e = t + r * 256, kk = e / 32, nq = e % 32 * 4;
                    long long gk = k0 + kk, gn = tn * 128 + nq;
                    rb[r] = gk < 36LL && gn < 132LL ? *(const float4 *)(b_ + b0 + gk * 132LL + gn) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
                }
            }
            GPUIR_UNROLL
            for (int kk = 0; kk < 8; kk++) {
                const float *ap = as + (st * 8 + kk) * 260 + rm, *bp = bs + (st * 8 + kk) * 128 + rn;
                float ar[16], br[8];
                GPUIR_UNROLL
                for (int q = 0; q < 4; q++) {
                    float4 u = *(const float4 *)(ap + q * 16);
                    ar[q * 4] = u.x; ar[q * 4 + 1] = u.y; ar[q * 4 + 2] = u.z; ar[q * 4 + 3] = u.w;
                }
                GPUIR_UNROLL
                for (int q = 0; q < 2; q++) {
                    float4 v = *(const float4 *)(bp + q * 32);
                    br[q * 4] = v.x; br[q * 4 + 1] = v.y; br[q * 4 + 2] = v.z; br[q * 4 + 3] = v.w;
                }
                GPUIR_UNROLL
                for (int i = 0; i < 16; i++)
                    GPUIR_UNROLL
                    for (int j = 0; j < 8; j++) acc[i][j] += ar[i] * br[j];
            }
            if (kt + 1 < 5LL) {
                GPUIR_UNROLL
                for (int r = 0; r < 2; r++) {
                    int e = t + r * 256, m = e / 2, kq = e % 2 * 4;
                    float *d = as + (st ^ 1) * 2080 + kq * 260 + m;
                    d[0] = ra[r].x; d[260] = ra[r].y; d[520] = ra[r].z; d[780] = ra[r].w;
                }
                GPUIR_UNROLL
                for (int r = 0; r < 1; r++)
                    *(float4 *)(bs + (st ^ 1) * 1024 + (t + r * 256) * 4) = rb[r];
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int ii = 0; ii < 16; ii++) {
            GPUIR_UNROLL
            for (int jj = 0; jj < 8; jj++) {
                long long gm = tm * 256 + rm + ii / 4 * 16 + ii % 4, gn = tn * 128 + rn + jj / 4 * 32 + jj % 4;
                if (gm >= 1153LL || gn >= 132LL) continue;
                int i = (int)(batch * 152196LL + gm * 132LL + gn);
                /* op 102: matmul (line 58) */
                float v0 = acc[ii][jj];
                /* op 103: add (line 59) */
                float v1 = c_[i % 132];
                float v2 = v0 + v1;
                /* op 104: gelu (line 60) */
                float v3 = gpuir_gelu(v2);
                out0_[i] = v3;
            }
        }
    }
}

/* @big_k1_residual_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_big_k1_residual_k0(GPUIR_LANE const float *a_, const float *b_, const float *x_, float *out0_) {
    GPUIR_SHARED(float, as, 4224, 0);
    GPUIR_SHARED(float, bs, 4096, 16896);
    int t = GPUIR_THREAD_RANK, warp = t / 32, lane = t % 32;
    int rm = warp / 2 * 32 + lane / 8 * 4, rn = warp % 2 * 64 + lane % 8 * 4;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 264LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
        long long a0 = batch * 129LL, b0 = 0 * 132LL;
        float acc[8][8];
        GPUIR_UNROLL
        for (int i = 0; i < 8; i++)
            GPUIR_UNROLL
            for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
        float ra[8];
        float4 rb[2];
        long long k0 = 0;
        {
            GPUIR_UNROLL
            for (int r = 0; r < 8; r++) {
                int e = t + r * 256, m = e / 16, kk = e % 16;
                long long gm = tm * 128 + m, gk = k0 + kk;
                ra[r] = gm < 129LL && gk < 1LL ? a_[a0 + gm * 1LL + gk] : 0.0f;
            }
            GPUIR_UNROLL
            for (int r = 0; r < 2; r++) {
                int e = t + r * 256, kk = e / 32, nq = e % 32 * 4;
                long long gk = k0 + kk, gn = tn * 128 + nq;
                rb[r] = gk < 1LL && gn < 132LL ? *(const float4 *)(b_ + b0 + gk * 132LL + gn) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            GPUIR_UNROLL
            for (int r = 0; r < 8; r++) {
                int e = t + r * 256;
                as[0 * 2112 + e % 16 * 132 + e / 16] = ra[r];
            }
            GPUIR_UNROLL
            for (int r = 0; r < 2; r++)
                *(float4 *)(bs + 0 * 2048 + (t + r * 256) * 4) = rb[r];
        }
        GPUIR_SYNC();
        for (long long kt = 0; kt < 1LL; kt++) {
            int st = (int)(kt & 1);
            if (kt + 1 < 1LL) {
                k0 = (kt + 1) * 16;
                GPUIR_UNROLL
                for (int r = 0; r < 8; r++) {
                    int e = t + r * 256, m = e / 16, kk = e % 16;
                    long long gm = tm * 128 + m, gk = k0 + kk;
                    ra[r] = gm < 129LL && gk < 1LL ? a_[a0 + gm * 1LL + gk] : 0.0f;
                }
                GPUIR_UNROLL
                for (int r = 0; r < 2; r++) {
                    int e = t + r * 256, kk = e / 32, nq = e % 32 * 4;
                    long long gk = k0 + kk, gn = tn * 128 + nq;
                    rb[r] = gk < 1LL && gn < 132LL ? *(const float4 *)(b_ + b0 + gk * 132LL + gn) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
                }
            }
            GPUIR_UNROLL
            for (int kk = 0; kk < 16; kk++) {
                const float *ap = as + (st * 16 + kk) * 132 + rm, *bp = bs + (st * 16 + kk) * 128 + rn;
                float ar[8], br[8];
                GPUIR_UNROLL
                for (int q = 0; q < 2; q++) {
                    float4 u = *(const float4 *)(ap + q * 16), v = *(const float4 *)(bp + q * 32);
                    ar[q * 4] = u.x; ar[q * 4 + 1] = u.y; ar[q * 4 + 2] = u.z; ar[q * 4 + 3] = u.w;
                    br[q * 4] = v.x; br[q * 4 + 1] = v.y; br[q * 4 + 2] = v.z; br[q * 4 + 3] = v.w;
                }
                GPUIR_UNROLL
                for (int i = 0; i < 8; i++)
                    GPUIR_UNROLL
                    for (int j = 0; j < 8; j++) acc[i][j] += ar[i] * br[j];
            }
            if (kt + 1 < 1LL) {
                GPUIR_UNROLL
                for (int r = 0; r < 8; r++) {
                    int e = t + r * 256;
                    as[(st ^ 1) * 2112 + e % 16 * 132 + e / 16] = ra[r];
                }
                GPUIR_UNROLL
                for (int r = 0; r < 2; r++)
                    *(float4 *)(bs + (st ^ 1) * 2048 + (t + r * 256) * 4) = rb[r];
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int ii = 0; ii < 8; ii++) {
            GPUIR_UNROLL
            for (int jj = 0; jj < 8; jj++) {
                long long gm = tm * 128 + rm + ii / 4 * 16 + ii % 4, gn = tn * 128 + rn + jj / 4 * 32 + jj % 4;
                if (gm >= 129LL || gn >= 132LL) continue;
                int i = (int)(batch * 17028LL + gm * 132LL + gn);
                /* op 107: matmul (line 65) */
                float v0 = acc[ii][jj];
                /* op 108: add (line 66) */
                float v1 = x_[i];
                float v2 = v0 + v1;
                out0_[i] = v2;
            }
        }
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_mm_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3]);
}
static void gpuir_k_mm_i32_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_i32_k0(l, *(int **)p[0], *(int **)p[1], *(int **)p[2], *(int **)p[3]);
}
static void gpuir_k_mm_ta_f32_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_ta_f32_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_mm_tb_i64_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_tb_i64_k0(l, *(long long **)p[0], *(long long **)p[1], *(long long **)p[2]);
}
static void gpuir_k_mm_1x1x1_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_1x1x1_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_mm_n1_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_n1_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3]);
}
static void gpuir_k_mm_bcast_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_bcast_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_mm128_edges_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm128_edges_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3]);
}
static void gpuir_k_small_silu_residual_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_small_silu_residual_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3]);
}
static void gpuir_k_big_bands_gelu_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_big_bands_gelu_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3]);
}
static void gpuir_k_big_k1_residual_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_big_k1_residual_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_mm_k0", gpuir_k_mm_k0_emu, 16896u, 0u, 1, 4u, 0u, 0u},
    {"gpuir_k_mm_i32_k0", gpuir_k_mm_i32_k0_emu, 16384u, 0u, 1, 4u, 0u, 0u},
    {"gpuir_k_mm_ta_f32_k0", gpuir_k_mm_ta_f32_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_mm_tb_i64_k0", gpuir_k_mm_tb_i64_k0_emu, 16384u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_mm_1x1x1_k0", gpuir_k_mm_1x1x1_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_mm_n1_k0", gpuir_k_mm_n1_k0_emu, 8192u, 0u, 1, 4u, 0u, 0u},
    {"gpuir_k_mm_bcast_k0", gpuir_k_mm_bcast_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_mm128_edges_k0", gpuir_k_mm128_edges_k0_emu, 16896u, 0u, 1, 4u, 0u, 0u},
    {"gpuir_k_small_silu_residual_k0", gpuir_k_small_silu_residual_k0_emu, 16896u, 0u, 1, 4u, 0u, 0u},
    {"gpuir_k_big_bands_gelu_k0", gpuir_k_big_bands_gelu_k0_emu, 24832u, 0u, 1, 4u, 0u, 0u},
    {"gpuir_k_big_k1_residual_k0", gpuir_k_big_k1_residual_k0_emu, 33280u, 0u, 1, 4u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

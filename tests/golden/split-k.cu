/* @f32_plain_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_f32_plain_k0(GPUIR_LANE const float *a_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 10000LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        /* op 100: constant */
        float v0 = 0.125f;
        /* op 101: mul (line 5) */
        float4 l0 = ((const float4 *)a_)[q];
        float v1 = l0.x;
        float v2 = GPUIR_FMUL(v1, v0);
        /* op 100: constant */
        float v3 = 0.125f;
        /* op 101: mul (line 5) */
        float v4 = l0.y;
        float v5 = GPUIR_FMUL(v4, v3);
        /* op 100: constant */
        float v6 = 0.125f;
        /* op 101: mul (line 5) */
        float v7 = l0.z;
        float v8 = GPUIR_FMUL(v7, v6);
        /* op 100: constant */
        float v9 = 0.125f;
        /* op 101: mul (line 5) */
        float v10 = l0.w;
        float v11 = GPUIR_FMUL(v10, v9);
        ((float4 *)out0_)[q] = GPUIR_FLOAT4(v2, v5, v8, v11);
    }
}

/* @f32_plain_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_f32_plain_k1(GPUIR_LANE const float *in0_, const float *b_, float *out0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 6LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 1LL, tm = tile / 1LL % 1LL, batch = tile / 1LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = (batch % 2) * 20000LL, b0 = 0 * 24000LL;
        long long kb = batch / (6LL / 3LL) * 352LL, ke = kb + 352LL < 1000LL ? kb + 352LL : 1000LL;  /* k slice */
        for (long long k0 = kb; k0 < ke; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 20LL && gk < ke ? in0_[a0 + gm * 1000LL + gk * 1LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < ke && gn < 24LL ? b_[b0 + gk * 24LL + gn * 1LL] : (float)0;
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
            if (e >= 4096 || gm >= 20LL || gn >= 24LL) continue;
            int i = (int)(batch * 480LL + gm * 24LL + gn);
            /* op 103: matmul (line 6) */
            float v0 = (float)acc[r];
            out0_[i] = v0;
        }
    }
}

/* @f32_plain_k2: 256 threads per block */
GPUIR_KERNEL gpuir_k_f32_plain_k2(GPUIR_LANE const float *in0_, float *out0_) {
    for (long long o = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; o < 960LL; o += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        double dacc = 0.0;
        GPUIR_UNROLL
        for (int j = 0; j < 3; j++) {
            int i = (int)(j * 960LL + o);
            float v0 = in0_[i];
            /* op 105: reduce_sum (line 6) */
            dacc += (double)v0;
        }
        float v1 = (float)dacc;
        out0_[o] = v1;
    }
}

/* @f32_register_tiled_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_f32_register_tiled_k0(GPUIR_LANE const float *a_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 16000LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        /* op 113: constant */
        float v0 = 0.125f;
        /* op 114: mul (line 12) */
        float4 l0 = ((const float4 *)a_)[q];
        float v1 = l0.x;
        float v2 = GPUIR_FMUL(v1, v0);
        /* op 113: constant */
        float v3 = 0.125f;
        /* op 114: mul (line 12) */
        float v4 = l0.y;
        float v5 = GPUIR_FMUL(v4, v3);
        /* op 113: constant */
        float v6 = 0.125f;
        /* op 114: mul (line 12) */
        float v7 = l0.z;
        float v8 = GPUIR_FMUL(v7, v6);
        /* op 113: constant */
        float v9 = 0.125f;
        /* op 114: mul (line 12) */
        float v10 = l0.w;
        float v11 = GPUIR_FMUL(v10, v9);
        ((float4 *)out0_)[q] = GPUIR_FLOAT4(v2, v5, v8, v11);
    }
}

/* @f32_register_tiled_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_f32_register_tiled_k1(GPUIR_LANE const float *in0_, const float *b_, float *out0_) {
    GPUIR_SHARED(float, as, 2176, 0);
    GPUIR_SHARED(float, bs, 2048, 8704);
    int t = GPUIR_THREAD_RANK, warp = t / 32, lane = t % 32;
    int rm = warp / 2 * 16 + lane / 8 * 4, rn = warp % 2 * 32 + lane % 8 * 4;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 6LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 2LL, first = u / 16LL * 8, rows = 1LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 2LL;
        long long a0 = 0 * 64000LL, b0 = 0 * 72000LL;
        long long kb = batch / (1LL) * 352LL, ke = kb + 352LL < 1000LL ? kb + 352LL : 1000LL;  /* k slice */
        long long kn = (ke - kb + 15) / 16;
        float acc[4][4];
        GPUIR_UNROLL
        for (int i = 0; i < 4; i++)
            GPUIR_UNROLL
            for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
        float4 ra[1];
        float4 rb[1];
        long long k0 = kb;
        {
            GPUIR_UNROLL
            for (int r = 0; r < 1; r++) {
                int e = t + r * 256, m = e / 4, kq = e % 4 * 4;
                long long gm = tm * 64 + m, gk = k0 + kq;
                ra[r] = gm < 64LL && gk < ke ? *(const float4 *)(in0_ + a0 + gm * 1000LL + gk) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            GPUIR_UNROLL
            for (int r = 0; r < 1; r++) {
                int e = t + r * 256, kk = e / 16, nq = e % 16 * 4;
                long long gk = k0 + kk, gn = tn * 64 + nq;
                rb[r] = gk < ke && gn < 72LL ? *(const float4 *)(b_ + b0 + gk * 72LL + gn) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
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
        for (long long kt = 0; kt < kn; kt++) {
            int st = (int)(kt & 1);
            if (kt + 1 < kn) {
                k0 = kb + (kt + 1) * 16;
                GPUIR_UNROLL
                for (int r = 0; r < 1; r++) {
                    int e = t + r * 256, m = e / 4, kq = e % 4 * 4;
                    long long gm = tm * 64 + m, gk = k0 + kq;
                    ra[r] = gm < 64LL && gk < ke ? *(const float4 *)(in0_ + a0 + gm * 1000LL + gk) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
                }
                GPUIR_UNROLL
                for (int r = 0; r < 1; r++) {
                    int e = t + r * 256, kk = e / 16, nq = e % 16 * 4;
                    long long gk = k0 + kk, gn = tn * 64 + nq;
                    rb[r] = gk < ke && gn < 72LL ? *(const float4 *)(b_ + b0 + gk * 72LL + gn) : GPUIR_FLOAT4(0.0f, 0.0f, 0.0f, 0.0f);
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
            if (kt + 1 < kn) {
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
                if (gm >= 64LL || gn >= 72LL) continue;
                int i = (int)(batch * 4608LL + gm * 72LL + gn);
                /* op 116: matmul (line 13) */
                float v0 = acc[ii][jj];
                out0_[i] = v0;
            }
        }
    }
}

/* @f32_register_tiled_k2: 256 threads per block */
GPUIR_KERNEL gpuir_k_f32_register_tiled_k2(GPUIR_LANE const float *in0_, const float *bias_, float *out0_) {
    for (long long o = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; o < 4608LL; o += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        double dacc = 0.0;
        GPUIR_UNROLL
        for (int j = 0; j < 3; j++) {
            int i = (int)(j * 4608LL + o);
            float v0 = in0_[i];
            /* op 118: reduce_sum (line 13) */
            dacc += (double)v0;
        }
        float v1 = (float)dacc;
        /* op 119: add (line 14) */
        float v2 = bias_[o % 72];
        float v3 = v1 + v2;
        /* op 120: relu (line 15) */
        float v4 = gpuir_relu(v3);
        out0_[o] = v4;
    }
}

/* @bf16_bias_gelu_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_bf16_bias_gelu_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, float *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 56832 bytes */
    unsigned short *sm = (unsigned short *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    int la = (wm + lane % 16) * 40 + lane / 16 * 8, lb = lane % 16 * 136 + wn + lane / 16 * 8;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 6LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
        long long a0 = (batch % 3) * 10400LL, b0 = 0 * 12480LL;
        long long kb = batch / (3LL) * 288LL, ke = kb + 288LL < 520LL ? kb + 288LL : 520LL;  /* k slice */
        long long kn = (ke - kb + 31) / 32;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < kn; kt++) {
            if (kt + 2 < kn) {
                int st = (int)((kt + 2) % 3);
                long long k0 = kb + (kt + 2) * 32;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 8;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 20LL && gk < ke;
                    gpuir_cp_async16(sm + st * 9472 + r * 40 + c, ok ? (const void *)(a_ + a0 + gm * 520LL + gk) : (const void *)a_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 16, c = e % 16 * 8;
                    long long gk = k0 + r, gn = tn * 128 + c;
                    int ok = gk < ke && gn < 24LL;
                    gpuir_cp_async16(sm + st * 9472 + 5120 + r * 136 + c, ok ? (const void *)(b_ + b0 + gk * 24LL + gn) : (const void *)b_, ok);
                }
            }
            gpuir_cp_async_commit();
            if (kt < 0) continue;
            gpuir_cp_async_wait(1);
            GPUIR_SYNC();
            int rd = (int)(kt % 3);
            const unsigned short *sa = sm + rd * 9472, *sb = sa + 5120;
            GPUIR_UNROLL
            for (int kk = 0; kk < 32; kk += 16) {
                unsigned af[4][4], bf[2][4];
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++) GPUIR_LDMATRIX_X4(af[i], sa + la + i * 640 + kk);
                GPUIR_UNROLL
                for (int j = 0; j < 2; j++) GPUIR_LDMATRIX_X4_TRANS(bf[j], sb + lb + j * 16 + kk * 136);
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++)
                    GPUIR_UNROLL
                    for (int j = 0; j < 4; j++) GPUIR_MMA_BF16(acc + (i * 4 + j) * 4, af[i], bf[j / 2] + j % 2 * 2);
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) {
            long long gm = tm * 128 + wm + f / 16 * 16 + f % 4 / 2 * 8 + g;
            long long gn = tn * 128 + wn + f / 4 % 4 * 8 + q * 2 + f % 2;
            if (gm >= 20LL || gn >= 24LL) continue;
            int i = (int)(batch * 480LL + gm * 24LL + gn);
            /* op 127: matmul (line 20) */
            float v0 = acc[f];
            out0_[i] = v0;
        }
    }
}

/* @bf16_bias_gelu_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_bf16_bias_gelu_k1(GPUIR_LANE const float *in0_, const unsigned short *bias_, unsigned short *out0_) {
    for (long long o = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; o < 1440LL; o += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        double dacc = 0.0;
        GPUIR_UNROLL
        for (int j = 0; j < 2; j++) {
            int i = (int)(j * 1440LL + o);
            float v0 = in0_[i];
            /* op 130: reduce_sum (line 20) */
            dacc += (double)v0;
        }
        float v1 = (float)dacc;
        /* op 131: cast (line 20) */
        float v2 = gpuir_round_bf16(v1);
        /* op 132: add (line 21) */
        float v3 = gpuir_bf16_to_f32(bias_[o % 24]);
        float v4 = gpuir_round_bf16(v2 + v3);
        /* op 133: gelu (line 22) */
        float v5 = gpuir_round_bf16(gpuir_gelu(v4));
        out0_[o] = gpuir_f32_to_bf16(v5);
    }
}

/* @f16_row_silu_residual_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_f16_row_silu_residual_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, float *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 56832 bytes */
    unsigned short *sm = (unsigned short *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    int la = (wm + lane % 16) * 40 + lane / 16 * 8, lb = lane % 16 * 136 + wn + lane / 16 * 8;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 3LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
        long long a0 = 0 * 800LL, b0 = 0 * 32000LL;
        long long kb = batch / (1LL) * 288LL, ke = kb + 288LL < 800LL ? kb + 288LL : 800LL;  /* k slice */
        long long kn = (ke - kb + 31) / 32;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < kn; kt++) {
            if (kt + 2 < kn) {
                int st = (int)((kt + 2) % 3);
                long long k0 = kb + (kt + 2) * 32;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 8;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 1LL && gk < ke;
                    gpuir_cp_async16(sm + st * 9472 + r * 40 + c, ok ? (const void *)(a_ + a0 + gm * 800LL + gk) : (const void *)a_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 16, c = e % 16 * 8;
                    long long gk = k0 + r, gn = tn * 128 + c;
                    int ok = gk < ke && gn < 40LL;
                    gpuir_cp_async16(sm + st * 9472 + 5120 + r * 136 + c, ok ? (const void *)(b_ + b0 + gk * 40LL + gn) : (const void *)b_, ok);
                }
            }
            gpuir_cp_async_commit();
            if (kt < 0) continue;
            gpuir_cp_async_wait(1);
            GPUIR_SYNC();
            int rd = (int)(kt % 3);
            const unsigned short *sa = sm + rd * 9472, *sb = sa + 5120;
            GPUIR_UNROLL
            for (int kk = 0; kk < 32; kk += 16) {
                unsigned af[4][4], bf[2][4];
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++) GPUIR_LDMATRIX_X4(af[i], sa + la + i * 640 + kk);
                GPUIR_UNROLL
                for (int j = 0; j < 2; j++) GPUIR_LDMATRIX_X4_TRANS(bf[j], sb + lb + j * 16 + kk * 136);
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++)
                    GPUIR_UNROLL
                    for (int j = 0; j < 4; j++) GPUIR_MMA_F16(acc + (i * 4 + j) * 4, af[i], bf[j / 2] + j % 2 * 2);
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) {
            long long gm = tm * 128 + wm + f / 16 * 16 + f % 4 / 2 * 8 + g;
            long long gn = tn * 128 + wn + f / 4 % 4 * 8 + q * 2 + f % 2;
            if (gm >= 1LL || gn >= 40LL) continue;
            int i = (int)(batch * 40LL + gm * 40LL + gn);
            /* op 138: matmul (line 27) */
            float v0 = acc[f];
            out0_[i] = v0;
        }
    }
}

/* @f16_row_silu_residual_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_f16_row_silu_residual_k1(GPUIR_LANE const float *in0_, const unsigned short *r_, unsigned short *out0_) {
    for (long long o = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; o < 40LL; o += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        double dacc = 0.0;
        GPUIR_UNROLL
        for (int j = 0; j < 3; j++) {
            int i = (int)(j * 40LL + o);
            float v0 = in0_[i];
            /* op 141: reduce_sum (line 27) */
            dacc += (double)v0;
        }
        float v1 = (float)dacc;
        /* op 142: cast (line 27) */
        float v2 = gpuir_round_f16(v1);
        /* op 143: silu (line 28) */
        float v3 = gpuir_round_f16(gpuir_silu(v2));
        /* op 144: add (line 29) */
        float v4 = gpuir_f16_to_f32(r_[o]);
        float v5 = gpuir_round_f16(v3 + v4);
        out0_[o] = gpuir_f32_to_f16(v5);
    }
}

/* @tf32_column_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_tf32_column_k0(GPUIR_LANE const float *a_, const float *b_, float *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 61440 bytes */
    float *sm = (float *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 2LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
        long long a0 = 0 * 9600LL, b0 = 0 * 600LL;
        long long kb = batch / (1LL) * 320LL, ke = kb + 320LL < 600LL ? kb + 320LL : 600LL;  /* k slice */
        long long kn = (ke - kb + 15) / 16;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < kn; kt++) {
            if (kt + 2 < kn) {
                int st = (int)((kt + 2) % 3);
                long long k0 = kb + (kt + 2) * 16;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 4;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 16LL && gk < ke;
                    gpuir_cp_async16(sm + st * 5120 + r * 20 + c, ok ? (const void *)(a_ + a0 + gm * 600LL + gk) : (const void *)a_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 4;
                    long long gn = tn * 128 + r, gk = k0 + c;
                    int ok = gn < 1LL && gk < ke;
                    gpuir_cp_async16(sm + st * 5120 + 2560 + r * 20 + c, ok ? (const void *)(b_ + b0 + gn * 600LL + gk) : (const void *)b_, ok);
                }
            }
            gpuir_cp_async_commit();
            if (kt < 0) continue;
            gpuir_cp_async_wait(1);
            GPUIR_SYNC();
            int rd = (int)(kt % 3);
            const float *sa = sm + rd * 5120, *sb = sa + 2560;
            GPUIR_UNROLL
            for (int kk = 0; kk < 16; kk += 8) {
                unsigned af[4][4], bf[4][2];
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++) {
                    const float *ap = sa + (wm + i * 16 + g) * 20 + kk + q;
                    af[i][0] = gpuir_tf32_bits(ap[0]); af[i][1] = gpuir_tf32_bits(ap[160]);
                    af[i][2] = gpuir_tf32_bits(ap[4]); af[i][3] = gpuir_tf32_bits(ap[164]);
                }
                GPUIR_UNROLL
                for (int j = 0; j < 4; j++) {
                    const float *bp = sb + (wn + j * 8 + g) * 20 + kk + q;
                    bf[j][0] = gpuir_tf32_bits(bp[0]); bf[j][1] = gpuir_tf32_bits(bp[4]);
                }
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++)
                    GPUIR_UNROLL
                    for (int j = 0; j < 4; j++) GPUIR_MMA_TF32(acc + (i * 4 + j) * 4, af[i], bf[j]);
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) {
            long long gm = tm * 128 + wm + f / 16 * 16 + f % 4 / 2 * 8 + g;
            long long gn = tn * 128 + wn + f / 4 % 4 * 8 + q * 2 + f % 2;
            if (gm >= 16LL || gn >= 1LL) continue;
            int i = (int)(batch * 16LL + gm * 1LL + gn);
            /* op 149: matmul (line 34) */
            float v0 = acc[f];
            out0_[i] = v0;
        }
    }
}

/* @tf32_column_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_tf32_column_k1(GPUIR_LANE const float *in0_, float *out0_) {
    for (long long o = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; o < 16LL; o += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        double dacc = 0.0;
        GPUIR_UNROLL
        for (int j = 0; j < 2; j++) {
            int i = (int)(j * 16LL + o);
            float v0 = in0_[i];
            /* op 151: reduce_sum (line 34) */
            dacc += (double)v0;
        }
        float v1 = (float)dacc;
        out0_[o] = v1;
    }
}

/* @dot_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_dot_k0(GPUIR_LANE const float *a_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long qq = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; qq < 512LL; qq += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int q = (int)qq;
        /* op 157: constant */
        float v0 = 0.125f;
        /* op 158: mul (line 40) */
        float4 l0 = ((const float4 *)a_)[q];
        float v1 = l0.x;
        float v2 = GPUIR_FMUL(v1, v0);
        /* op 157: constant */
        float v3 = 0.125f;
        /* op 158: mul (line 40) */
        float v4 = l0.y;
        float v5 = GPUIR_FMUL(v4, v3);
        /* op 157: constant */
        float v6 = 0.125f;
        /* op 158: mul (line 40) */
        float v7 = l0.z;
        float v8 = GPUIR_FMUL(v7, v6);
        /* op 157: constant */
        float v9 = 0.125f;
        /* op 158: mul (line 40) */
        float v10 = l0.w;
        float v11 = GPUIR_FMUL(v10, v9);
        ((float4 *)out0_)[q] = GPUIR_FLOAT4(v2, v5, v8, v11);
    }
}

/* @dot_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_dot_k1(GPUIR_LANE const float *in0_, const float *b_, float *out0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 8LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 1LL, tm = tile / 1LL % 1LL, batch = tile / 1LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = 0 * 2048LL, b0 = 0 * 2048LL;
        long long kb = batch / (8LL / 8LL) * 256LL, ke = kb + 256LL < 2048LL ? kb + 256LL : 2048LL;  /* k slice */
        for (long long k0 = kb; k0 < ke; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 1LL && gk < ke ? in0_[a0 + gm * 2048LL + gk * 1LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < ke && gn < 1LL ? b_[b0 + gk * 1LL + gn * 1LL] : (float)0;
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
            /* op 160: matmul (line 41) */
            float v0 = (float)acc[r];
            out0_[i] = v0;
        }
    }
}

/* @dot_k2: 256 threads per block */
GPUIR_KERNEL gpuir_k_dot_k2(GPUIR_LANE const float *in0_, float *out0_) {
    for (long long o = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; o < 1LL; o += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        double dacc = 0.0;
        GPUIR_UNROLL
        for (int j = 0; j < 8; j++) {
            int i = (int)(j * 1LL + o);
            float v0 = in0_[i];
            /* op 162: reduce_sum (line 41) */
            dacc += (double)v0;
        }
        float v1 = (float)dacc;
        out0_[o] = v1;
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_f32_plain_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_f32_plain_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_f32_plain_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_f32_plain_k1(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_f32_plain_k2_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_f32_plain_k2(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_f32_register_tiled_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_f32_register_tiled_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_f32_register_tiled_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_f32_register_tiled_k1(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_f32_register_tiled_k2_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_f32_register_tiled_k2(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_bf16_bias_gelu_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_bf16_bias_gelu_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(float **)p[2]);
}
static void gpuir_k_bf16_bias_gelu_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_bf16_bias_gelu_k1(l, *(float **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2]);
}
static void gpuir_k_f16_row_silu_residual_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_f16_row_silu_residual_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(float **)p[2]);
}
static void gpuir_k_f16_row_silu_residual_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_f16_row_silu_residual_k1(l, *(float **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2]);
}
static void gpuir_k_tf32_column_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_tf32_column_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_tf32_column_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_tf32_column_k1(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_dot_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_dot_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_dot_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_dot_k1(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_dot_k2_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_dot_k2(l, *(float **)p[0], *(float **)p[1]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_f32_plain_k0", gpuir_k_f32_plain_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_f32_plain_k1", gpuir_k_f32_plain_k1_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_f32_plain_k2", gpuir_k_f32_plain_k2_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_f32_register_tiled_k0", gpuir_k_f32_register_tiled_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_f32_register_tiled_k1", gpuir_k_f32_register_tiled_k1_emu, 16896u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_f32_register_tiled_k2", gpuir_k_f32_register_tiled_k2_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_bf16_bias_gelu_k0", gpuir_k_bf16_bias_gelu_k0_emu, 0u, 56832u, 1, 3u, 0u, 0u},
    {"gpuir_k_bf16_bias_gelu_k1", gpuir_k_bf16_bias_gelu_k1_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_f16_row_silu_residual_k0", gpuir_k_f16_row_silu_residual_k0_emu, 0u, 56832u, 1, 3u, 0u, 0u},
    {"gpuir_k_f16_row_silu_residual_k1", gpuir_k_f16_row_silu_residual_k1_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_tf32_column_k0", gpuir_k_tf32_column_k0_emu, 0u, 61440u, 1, 3u, 0u, 0u},
    {"gpuir_k_tf32_column_k1", gpuir_k_tf32_column_k1_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_dot_k0", gpuir_k_dot_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_dot_k1", gpuir_k_dot_k1_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_dot_k2", gpuir_k_dot_k2_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

/* @edges_f16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_edges_f16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 56832 bytes */
    unsigned short *sm = (unsigned short *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    int la = (wm + lane % 16) * 40 + lane / 16 * 8, lb = lane % 16 * 136 + wn + lane / 16 * 8;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
        long long a0 = batch * 5200LL, b0 = batch * 5440LL;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < 2LL; kt++) {
            if (kt + 2 < 2LL) {
                int st = (int)((kt + 2) % 3);
                long long k0 = (kt + 2) * 32;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 8;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 130LL && gk < 40LL;
                    gpuir_cp_async16(sm + st * 9472 + r * 40 + c, ok ? (const void *)(a_ + a0 + gm * 40LL + gk) : (const void *)a_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 16, c = e % 16 * 8;
                    long long gk = k0 + r, gn = tn * 128 + c;
                    int ok = gk < 40LL && gn < 136LL;
                    gpuir_cp_async16(sm + st * 9472 + 5120 + r * 136 + c, ok ? (const void *)(b_ + b0 + gk * 136LL + gn) : (const void *)b_, ok);
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
            if (gm >= 130LL || gn >= 136LL) continue;
            int i = (int)(batch * 17680LL + gm * 136LL + gn);
            /* op 49: matmul (line 6) */
            float v0 = gpuir_round_f16(acc[f]);
            out0_[i] = gpuir_f32_to_f16(v0);
        }
    }
}

/* @layer_bf16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_layer_bf16_k0(GPUIR_LANE const unsigned short *x_, const unsigned short *w_, const unsigned short *bias_, const unsigned short *res_, unsigned short *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 56832 bytes */
    unsigned short *sm = (unsigned short *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    int la = (wm + lane % 16) * 40 + lane / 16 * 8, lb = lane % 16 * 136 + wn + lane / 16 * 8;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 2LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 2LL, first = u / 8LL * 8, rows = 2LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 2LL;
        long long a0 = batch * 12800LL, b0 = batch * 4608LL;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < 2LL; kt++) {
            if (kt + 2 < 2LL) {
                int st = (int)((kt + 2) % 3);
                long long k0 = (kt + 2) * 32;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 8;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 200LL && gk < 64LL;
                    gpuir_cp_async16(sm + st * 9472 + r * 40 + c, ok ? (const void *)(x_ + a0 + gm * 64LL + gk) : (const void *)x_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 16, c = e % 16 * 8;
                    long long gk = k0 + r, gn = tn * 128 + c;
                    int ok = gk < 64LL && gn < 72LL;
                    gpuir_cp_async16(sm + st * 9472 + 5120 + r * 136 + c, ok ? (const void *)(w_ + b0 + gk * 72LL + gn) : (const void *)w_, ok);
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
            if (gm >= 200LL || gn >= 72LL) continue;
            int i = (int)(batch * 14400LL + gm * 72LL + gn);
            /* op 52: matmul (line 11) */
            float v0 = gpuir_round_bf16(acc[f]);
            /* op 53: add (line 12) */
            float v1 = gpuir_bf16_to_f32(bias_[i % 72]);
            float v2 = gpuir_round_bf16(v0 + v1);
            /* op 54: gelu (line 13) */
            float v3 = gpuir_round_bf16(gpuir_gelu(v2));
            /* op 55: add (line 14) */
            float v4 = gpuir_bf16_to_f32(res_[i]);
            float v5 = gpuir_round_bf16(v3 + v4);
            out0_[i] = gpuir_f32_to_bf16(v5);
        }
    }
}

/* @weights_t_f16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_weights_t_f16_k0(GPUIR_LANE const unsigned short *x_, const unsigned short *w_, unsigned short *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 61440 bytes */
    unsigned short *sm = (unsigned short *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    int la = (wm + lane % 16) * 40 + lane / 16 * 8, lb = (wn + lane % 8 + lane / 16 * 8) * 40 + lane / 8 % 2 * 8;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 1LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
        long long a0 = batch * 3360LL, b0 = batch * 3120LL;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < 2LL; kt++) {
            if (kt + 2 < 2LL) {
                int st = (int)((kt + 2) % 3);
                long long k0 = (kt + 2) * 32;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 8;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 70LL && gk < 48LL;
                    gpuir_cp_async16(sm + st * 10240 + r * 40 + c, ok ? (const void *)(x_ + a0 + gm * 48LL + gk) : (const void *)x_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 8;
                    long long gn = tn * 128 + r, gk = k0 + c;
                    int ok = gn < 65LL && gk < 48LL;
                    gpuir_cp_async16(sm + st * 10240 + 5120 + r * 40 + c, ok ? (const void *)(w_ + b0 + gn * 48LL + gk) : (const void *)w_, ok);
                }
            }
            gpuir_cp_async_commit();
            if (kt < 0) continue;
            gpuir_cp_async_wait(1);
            GPUIR_SYNC();
            int rd = (int)(kt % 3);
            const unsigned short *sa = sm + rd * 10240, *sb = sa + 5120;
            GPUIR_UNROLL
            for (int kk = 0; kk < 32; kk += 16) {
                unsigned af[4][4], bf[2][4];
                GPUIR_UNROLL
                for (int i = 0; i < 4; i++) GPUIR_LDMATRIX_X4(af[i], sa + la + i * 640 + kk);
                GPUIR_UNROLL
                for (int j = 0; j < 2; j++) GPUIR_LDMATRIX_X4(bf[j], sb + lb + j * 640 + kk);
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
            if (gm >= 70LL || gn >= 65LL) continue;
            int i = (int)(batch * 4550LL + gm * 65LL + gn);
            /* op 58: matmul (line 19) */
            float v0 = gpuir_round_f16(acc[f]);
            out0_[i] = gpuir_f32_to_f16(v0);
        }
    }
}

/* @batch_bf16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_batch_bf16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, float *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 56832 bytes */
    unsigned short *sm = (unsigned short *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    int la = (wm + lane % 16) * 40 + lane / 16 * 8, lb = lane % 16 * 136 + wn + lane / 16 * 8;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 3LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
        long long a0 = batch * 528LL, b0 = 0 * 384LL;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < 1LL; kt++) {
            if (kt + 2 < 1LL) {
                int st = (int)((kt + 2) % 3);
                long long k0 = (kt + 2) * 32;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 8;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 33LL && gk < 16LL;
                    gpuir_cp_async16(sm + st * 9472 + r * 40 + c, ok ? (const void *)(a_ + a0 + gm * 16LL + gk) : (const void *)a_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 16, c = e % 16 * 8;
                    long long gk = k0 + r, gn = tn * 128 + c;
                    int ok = gk < 16LL && gn < 24LL;
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
            if (gm >= 33LL || gn >= 24LL) continue;
            int i = (int)(batch * 792LL + gm * 24LL + gn);
            /* op 62: matmul (line 24) */
            float v0 = gpuir_round_bf16(acc[f]);
            /* op 63: relu (line 25) */
            float v1 = gpuir_round_bf16(gpuir_relu(v0));
            /* op 64: cast (line 26) */
            float v2 = v1;
            out0_[i] = v2;
        }
    }
}

/* @edges_tf32_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_edges_tf32_k0(GPUIR_LANE const float *a_, const float *b_, float *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 56832 bytes */
    float *sm = (float *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
        long long a0 = batch * 5720LL, b0 = batch * 5984LL;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < 3LL; kt++) {
            if (kt + 2 < 3LL) {
                int st = (int)((kt + 2) % 3);
                long long k0 = (kt + 2) * 16;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 4;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 130LL && gk < 44LL;
                    gpuir_cp_async16(sm + st * 4736 + r * 20 + c, ok ? (const void *)(a_ + a0 + gm * 44LL + gk) : (const void *)a_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 32, c = e % 32 * 4;
                    long long gk = k0 + r, gn = tn * 128 + c;
                    int ok = gk < 44LL && gn < 136LL;
                    gpuir_cp_async16(sm + st * 4736 + 2560 + r * 136 + c, ok ? (const void *)(b_ + b0 + gk * 136LL + gn) : (const void *)b_, ok);
                }
            }
            gpuir_cp_async_commit();
            if (kt < 0) continue;
            gpuir_cp_async_wait(1);
            GPUIR_SYNC();
            int rd = (int)(kt % 3);
            const float *sa = sm + rd * 4736, *sb = sa + 2560;
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
                    const float *bp = sb + (kk + q) * 136 + wn + j * 8 + g;
                    bf[j][0] = gpuir_tf32_bits(bp[0]); bf[j][1] = gpuir_tf32_bits(bp[544]);
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
            if (gm >= 130LL || gn >= 136LL) continue;
            int i = (int)(batch * 17680LL + gm * 136LL + gn);
            /* op 67: matmul (line 31) */
            float v0 = acc[f];
            out0_[i] = v0;
        }
    }
}

/* @weights_t_tf32_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_weights_t_tf32_k0(GPUIR_LANE const float *x_, const float *w_, const float *bias_, float *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 61440 bytes */
    float *sm = (float *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 3LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
        long long a0 = batch * 1120LL, b0 = 0 * 1040LL;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < 1LL; kt++) {
            if (kt + 2 < 1LL) {
                int st = (int)((kt + 2) % 3);
                long long k0 = (kt + 2) * 16;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 4;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 70LL && gk < 16LL;
                    gpuir_cp_async16(sm + st * 5120 + r * 20 + c, ok ? (const void *)(x_ + a0 + gm * 16LL + gk) : (const void *)x_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 4;
                    long long gn = tn * 128 + r, gk = k0 + c;
                    int ok = gn < 65LL && gk < 16LL;
                    gpuir_cp_async16(sm + st * 5120 + 2560 + r * 20 + c, ok ? (const void *)(w_ + b0 + gn * 16LL + gk) : (const void *)w_, ok);
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
            if (gm >= 70LL || gn >= 65LL) continue;
            int i = (int)(batch * 4550LL + gm * 65LL + gn);
            /* op 70: matmul (line 36) */
            float v0 = acc[f];
            /* op 71: add (line 37) */
            float v1 = bias_[i % 65];
            float v2 = v0 + v1;
            /* op 72: silu (line 38) */
            float v3 = gpuir_silu(v2);
            out0_[i] = v3;
        }
    }
}

/* @odd_k_f16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_odd_k_f16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 2LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 1LL, tm = tile / 1LL % 2LL, batch = tile / 2LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * 2310LL, b0 = batch * 2112LL;
        for (long long k0 = 0; k0 < 33LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 70LL && gk < 33LL ? gpuir_f16_to_f32(a_[a0 + gm * 33LL + gk * 1LL]) : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 33LL && gn < 64LL ? gpuir_f16_to_f32(b_[b0 + gk * 64LL + gn * 1LL]) : (float)0;
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
            if (e >= 4096 || gm >= 70LL || gn >= 64LL) continue;
            int i = (int)(batch * 4480LL + gm * 64LL + gn);
            /* op 75: matmul (line 43) */
            float v0 = gpuir_round_f16((float)acc[r]);
            out0_[i] = gpuir_f32_to_f16(v0);
        }
    }
}

/* @ta_tf32_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_ta_tf32_k0(GPUIR_LANE const float *a_, const float *b_, float *out0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 6LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 2LL, tm = tile / 2LL % 3LL, batch = tile / 6LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * 4480LL, b0 = batch * 4096LL;
        for (long long k0 = 0; k0 < 32LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 140LL && gk < 32LL ? gpuir_tf32_round(a_[a0 + gm * 1LL + gk * 140LL]) : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 32LL && gn < 128LL ? gpuir_tf32_round(b_[b0 + gk * 128LL + gn * 1LL]) : (float)0;
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
            if (e >= 4096 || gm >= 140LL || gn >= 128LL) continue;
            int i = (int)(batch * 17920LL + gm * 128LL + gn);
            /* op 78: matmul (line 48) */
            float v0 = (float)acc[r];
            out0_[i] = v0;
        }
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_edges_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_edges_f16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2]);
}
static void gpuir_k_layer_bf16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_layer_bf16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2], *(unsigned short **)p[3], *(unsigned short **)p[4]);
}
static void gpuir_k_weights_t_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_weights_t_f16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2]);
}
static void gpuir_k_batch_bf16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_batch_bf16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(float **)p[2]);
}
static void gpuir_k_edges_tf32_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_edges_tf32_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
static void gpuir_k_weights_t_tf32_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_weights_t_tf32_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3]);
}
static void gpuir_k_odd_k_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_odd_k_f16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2]);
}
static void gpuir_k_ta_tf32_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_ta_tf32_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_edges_f16_k0", gpuir_k_edges_f16_k0_emu, 0u, 56832u, 1, 3u, 0u, 0u},
    {"gpuir_k_layer_bf16_k0", gpuir_k_layer_bf16_k0_emu, 0u, 56832u, 1, 5u, 0u, 0u},
    {"gpuir_k_weights_t_f16_k0", gpuir_k_weights_t_f16_k0_emu, 0u, 61440u, 1, 3u, 0u, 0u},
    {"gpuir_k_batch_bf16_k0", gpuir_k_batch_bf16_k0_emu, 0u, 56832u, 1, 3u, 0u, 0u},
    {"gpuir_k_edges_tf32_k0", gpuir_k_edges_tf32_k0_emu, 0u, 56832u, 1, 3u, 0u, 0u},
    {"gpuir_k_weights_t_tf32_k0", gpuir_k_weights_t_tf32_k0_emu, 0u, 61440u, 1, 4u, 0u, 0u},
    {"gpuir_k_odd_k_f16_k0", gpuir_k_odd_k_f16_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_ta_tf32_k0", gpuir_k_ta_tf32_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

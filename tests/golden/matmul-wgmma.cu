/* @edges_bf16_k0: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_edges_bf16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 230528 bytes */
    unsigned s0 = GPUIR_SMEM_ADDR(smem), sbase = (s0 + 1023u) & ~1023u;
    unsigned full = sbase + 196608u, empty = full + 48u;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4, wg = warp / 4;
    long long it = 0;                    /* k tiles so far, across tiles */
    if (t == 0) {
        for (unsigned st = 0; st < 6u; st++) {
            gpuir_mbar_init(full + 8u * st, 1u);
            gpuir_mbar_init(empty + 8u * st, 256u);
        }
        gpuir_mbar_init_fence();
    }
    GPUIR_SYNC();
    if (wg == 0) {
        gpuir_setmaxnreg_dec(40);
        if (t == 0) {
            for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
                long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
                if (rows > 8) rows = 8;
                long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
                long long a0 = batch * 9360LL, b0 = batch * 9792LL;
                int ca = (int)(a0 / 9360LL), cb = (int)(b0 / 9792LL);
                for (long long kt = 0; kt < 2LL; kt++, it++) {
                    unsigned st = (unsigned)(it % 6), sa = sbase + st * 32768u;
                    if (it >= 6) gpuir_mbar_wait(empty + 8u * st, (unsigned)((it / 6 - 1) & 1));
                    gpuir_mbar_expect_tx(full + 8u * st, 32768u);
                    gpuir_tma_load_2d(sa, GPUIR_TMAP(tma_a), (int)(kt * 64), (int)(tm * 128), ca, full + 8u * st);
                    gpuir_tma_load_2d(sa + 16384u, GPUIR_TMAP(tma_b), (int)(kt * 64), (int)(tn * 128), cb, full + 8u * st);
                }
            }
        }
    } else {
        gpuir_setmaxnreg_inc(232);
        unsigned char *stg = GPUIR_SMEM_PTR(sbase + 196736u + (unsigned)(warp - 4) * 4096u);
        for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
            long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
            if (rows > 8) rows = 8;
            long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
            float acc[64];
            GPUIR_UNROLL
            for (int f = 0; f < 64; f++) acc[f] = 0.0f;
            unsigned prev = 0;
            for (long long kt = 0; kt < 2LL; kt++, it++) {
                unsigned st = (unsigned)(it % 6), sb = sbase + st * 32768u + 16384u, sa = sbase + st * 32768u + (unsigned)(wg - 1) * 8192u;
                gpuir_mbar_wait(full + 8u * st, (unsigned)(it / 6 & 1));
                gpuir_wgmma_fence();
                GPUIR_UNROLL
                for (int kk = 0; kk < 4; kk++)
                    GPUIR_WGMMA_BF16(acc, gpuir_wgmma_desc_sw128(sa + kk * 32u), gpuir_wgmma_desc_sw128(sb + kk * 32u), smem, s0);
                gpuir_wgmma_commit();
                gpuir_wgmma_wait1();
                if (kt > 0) gpuir_mbar_arrive(empty + 8u * prev);
                prev = st;
            }
            gpuir_wgmma_wait0();
            GPUIR_WGMMA_KEEP(acc, 64);
            gpuir_mbar_arrive(empty + 8u * prev);
            GPUIR_SYNC_WARP();                  /* the warp is done with the last tile's rows */
            GPUIR_UNROLL
            for (int f = 0; f < 64; f += 2)
                *(unsigned *)(stg + (g + f / 2 % 2 * 8) * 256 + ((f / 4 ^ g) << 4) + q * 4) = (unsigned)gpuir_f32_to_bf16(acc[f]) | (unsigned)gpuir_f32_to_bf16(acc[f + 1]) << 16;
            GPUIR_SYNC_WARP();
            GPUIR_NO_UNROLL
            for (int s = 0; s < 8; s++) {
                int k = lane + s * 32, r = k / 16, cc = k % 16;
                long long gm = tm * 128 + (warp - 4) * 16 + r, gn = tn * 128 + cc * 8;
                if (gm >= 130LL || gn >= 136LL) continue;
                int4 ch = *(const int4 *)(stg + r * 256 + ((cc ^ (r & 7)) << 4));
                int ie0 = (int)(batch * 17680LL + gm * 136LL + gn);
                int ie1 = ie0 + 1;
                int ie2 = ie0 + 2;
                int ie3 = ie0 + 3;
                int ie4 = ie0 + 4;
                int ie5 = ie0 + 5;
                int ie6 = ie0 + 6;
                int ie7 = ie0 + 7;
                /* op 23: matmul (line 4) */
                float v0 = gpuir_bf16_to_f32((unsigned short)ch.x);
                float v1 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.x >> 16));
                float v2 = gpuir_bf16_to_f32((unsigned short)ch.y);
                float v3 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.y >> 16));
                float v4 = gpuir_bf16_to_f32((unsigned short)ch.z);
                float v5 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.z >> 16));
                float v6 = gpuir_bf16_to_f32((unsigned short)ch.w);
                float v7 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.w >> 16));
                *(int4 *)(out0_ + ie0) = GPUIR_INT4((int)((unsigned)gpuir_f32_to_bf16(v0) | (unsigned)gpuir_f32_to_bf16(v1) << 16),
                                                   (int)((unsigned)gpuir_f32_to_bf16(v2) | (unsigned)gpuir_f32_to_bf16(v3) << 16),
                                                   (int)((unsigned)gpuir_f32_to_bf16(v4) | (unsigned)gpuir_f32_to_bf16(v5) << 16),
                                                   (int)((unsigned)gpuir_f32_to_bf16(v6) | (unsigned)gpuir_f32_to_bf16(v7) << 16));
            }
        }
    }
}

/* @k8_f16_k0: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_k8_f16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 230528 bytes */
    unsigned s0 = GPUIR_SMEM_ADDR(smem), sbase = (s0 + 1023u) & ~1023u;
    unsigned full = sbase + 196608u, empty = full + 48u;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4, wg = warp / 4;
    long long it = 0;                    /* k tiles so far, across tiles */
    if (t == 0) {
        for (unsigned st = 0; st < 6u; st++) {
            gpuir_mbar_init(full + 8u * st, 1u);
            gpuir_mbar_init(empty + 8u * st, 256u);
        }
        gpuir_mbar_init_fence();
    }
    GPUIR_SYNC();
    if (wg == 0) {
        gpuir_setmaxnreg_dec(40);
        if (t == 0) {
            for (long long tile = GPUIR_BLOCK_RANK; tile < 1LL; tile += GPUIR_GRID_BLOCKS) {
                long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
                if (rows > 8) rows = 8;
                long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
                long long a0 = batch * 40LL, b0 = batch * 192LL;
                int ca = (int)(a0 / 40LL), cb = (int)(b0 / 192LL);
                for (long long kt = 0; kt < 1LL; kt++, it++) {
                    unsigned st = (unsigned)(it % 6), sa = sbase + st * 32768u;
                    if (it >= 6) gpuir_mbar_wait(empty + 8u * st, (unsigned)((it / 6 - 1) & 1));
                    gpuir_mbar_expect_tx(full + 8u * st, 32768u);
                    gpuir_tma_load_2d(sa, GPUIR_TMAP(tma_a), (int)(kt * 64), (int)(tm * 128), ca, full + 8u * st);
                    gpuir_tma_load_2d(sa + 16384u, GPUIR_TMAP(tma_b), (int)(kt * 64), (int)(tn * 128), cb, full + 8u * st);
                }
            }
        }
    } else {
        gpuir_setmaxnreg_inc(232);
        unsigned char *stg = GPUIR_SMEM_PTR(sbase + 196736u + (unsigned)(warp - 4) * 4096u);
        for (long long tile = GPUIR_BLOCK_RANK; tile < 1LL; tile += GPUIR_GRID_BLOCKS) {
            long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
            if (rows > 8) rows = 8;
            long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
            float acc[64];
            GPUIR_UNROLL
            for (int f = 0; f < 64; f++) acc[f] = 0.0f;
            unsigned prev = 0;
            for (long long kt = 0; kt < 1LL; kt++, it++) {
                unsigned st = (unsigned)(it % 6), sb = sbase + st * 32768u + 16384u, sa = sbase + st * 32768u + (unsigned)(wg - 1) * 8192u;
                gpuir_mbar_wait(full + 8u * st, (unsigned)(it / 6 & 1));
                gpuir_wgmma_fence();
                GPUIR_UNROLL
                for (int kk = 0; kk < 4; kk++)
                    GPUIR_WGMMA_F16(acc, gpuir_wgmma_desc_sw128(sa + kk * 32u), gpuir_wgmma_desc_sw128(sb + kk * 32u), smem, s0);
                gpuir_wgmma_commit();
                gpuir_wgmma_wait1();
                if (kt > 0) gpuir_mbar_arrive(empty + 8u * prev);
                prev = st;
            }
            gpuir_wgmma_wait0();
            GPUIR_WGMMA_KEEP(acc, 64);
            gpuir_mbar_arrive(empty + 8u * prev);
            GPUIR_SYNC_WARP();                  /* the warp is done with the last tile's rows */
            GPUIR_UNROLL
            for (int f = 0; f < 64; f += 2)
                *(unsigned *)(stg + (g + f / 2 % 2 * 8) * 256 + ((f / 4 ^ g) << 4) + q * 4) = (unsigned)gpuir_f32_to_f16(acc[f]) | (unsigned)gpuir_f32_to_f16(acc[f + 1]) << 16;
            GPUIR_SYNC_WARP();
            GPUIR_NO_UNROLL
            for (int s = 0; s < 8; s++) {
                int k = lane + s * 32, r = k / 16, cc = k % 16;
                long long gm = tm * 128 + (warp - 4) * 16 + r, gn = tn * 128 + cc * 8;
                if (gm >= 5LL || gn >= 24LL) continue;
                int4 ch = *(const int4 *)(stg + r * 256 + ((cc ^ (r & 7)) << 4));
                int ie0 = (int)(batch * 120LL + gm * 24LL + gn);
                int ie1 = ie0 + 1;
                int ie2 = ie0 + 2;
                int ie3 = ie0 + 3;
                int ie4 = ie0 + 4;
                int ie5 = ie0 + 5;
                int ie6 = ie0 + 6;
                int ie7 = ie0 + 7;
                /* op 26: matmul (line 9) */
                float v0 = gpuir_f16_to_f32((unsigned short)ch.x);
                float v1 = gpuir_f16_to_f32((unsigned short)((unsigned)ch.x >> 16));
                float v2 = gpuir_f16_to_f32((unsigned short)ch.y);
                float v3 = gpuir_f16_to_f32((unsigned short)((unsigned)ch.y >> 16));
                float v4 = gpuir_f16_to_f32((unsigned short)ch.z);
                float v5 = gpuir_f16_to_f32((unsigned short)((unsigned)ch.z >> 16));
                float v6 = gpuir_f16_to_f32((unsigned short)ch.w);
                float v7 = gpuir_f16_to_f32((unsigned short)((unsigned)ch.w >> 16));
                *(int4 *)(out0_ + ie0) = GPUIR_INT4((int)((unsigned)gpuir_f32_to_f16(v0) | (unsigned)gpuir_f32_to_f16(v1) << 16),
                                                   (int)((unsigned)gpuir_f32_to_f16(v2) | (unsigned)gpuir_f32_to_f16(v3) << 16),
                                                   (int)((unsigned)gpuir_f32_to_f16(v4) | (unsigned)gpuir_f32_to_f16(v5) << 16),
                                                   (int)((unsigned)gpuir_f32_to_f16(v6) | (unsigned)gpuir_f32_to_f16(v7) << 16));
            }
        }
    }
}

/* @long_k_batch_bf16_k0: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_long_k_batch_bf16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 230528 bytes */
    unsigned s0 = GPUIR_SMEM_ADDR(smem), sbase = (s0 + 1023u) & ~1023u;
    unsigned full = sbase + 196608u, empty = full + 48u;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4, wg = warp / 4;
    long long it = 0;                    /* k tiles so far, across tiles */
    if (t == 0) {
        for (unsigned st = 0; st < 6u; st++) {
            gpuir_mbar_init(full + 8u * st, 1u);
            gpuir_mbar_init(empty + 8u * st, 256u);
        }
        gpuir_mbar_init_fence();
    }
    GPUIR_SYNC();
    if (wg == 0) {
        gpuir_setmaxnreg_dec(40);
        if (t == 0) {
            for (long long tile = GPUIR_BLOCK_RANK; tile < 2LL; tile += GPUIR_GRID_BLOCKS) {
                long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
                if (rows > 8) rows = 8;
                long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
                long long a0 = batch * 17688LL, b0 = 0 * 21120LL;
                int ca = (int)(a0 / 17688LL), cb = (int)(b0 / 21120LL);
                for (long long kt = 0; kt < 5LL; kt++, it++) {
                    unsigned st = (unsigned)(it % 6), sa = sbase + st * 32768u;
                    if (it >= 6) gpuir_mbar_wait(empty + 8u * st, (unsigned)((it / 6 - 1) & 1));
                    gpuir_mbar_expect_tx(full + 8u * st, 32768u);
                    gpuir_tma_load_3d(sa, GPUIR_TMAP(tma_a), (int)(kt * 64), (int)(tm * 128), ca, full + 8u * st);
                    gpuir_tma_load_2d(sa + 16384u, GPUIR_TMAP(tma_b), (int)(kt * 64), (int)(tn * 128), cb, full + 8u * st);
                }
            }
        }
    } else {
        gpuir_setmaxnreg_inc(232);
        unsigned char *stg = GPUIR_SMEM_PTR(sbase + 196736u + (unsigned)(warp - 4) * 4096u);
        for (long long tile = GPUIR_BLOCK_RANK; tile < 2LL; tile += GPUIR_GRID_BLOCKS) {
            long long u = tile % 1LL, first = u / 8LL * 8, rows = 1LL - first;
            if (rows > 8) rows = 8;
            long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 1LL;
            float acc[64];
            GPUIR_UNROLL
            for (int f = 0; f < 64; f++) acc[f] = 0.0f;
            unsigned prev = 0;
            for (long long kt = 0; kt < 5LL; kt++, it++) {
                unsigned st = (unsigned)(it % 6), sb = sbase + st * 32768u + 16384u, sa = sbase + st * 32768u + (unsigned)(wg - 1) * 8192u;
                gpuir_mbar_wait(full + 8u * st, (unsigned)(it / 6 & 1));
                gpuir_wgmma_fence();
                GPUIR_UNROLL
                for (int kk = 0; kk < 4; kk++)
                    GPUIR_WGMMA_BF16(acc, gpuir_wgmma_desc_sw128(sa + kk * 32u), gpuir_wgmma_desc_sw128(sb + kk * 32u), smem, s0);
                gpuir_wgmma_commit();
                gpuir_wgmma_wait1();
                if (kt > 0) gpuir_mbar_arrive(empty + 8u * prev);
                prev = st;
            }
            gpuir_wgmma_wait0();
            GPUIR_WGMMA_KEEP(acc, 64);
            gpuir_mbar_arrive(empty + 8u * prev);
            GPUIR_SYNC_WARP();                  /* the warp is done with the last tile's rows */
            GPUIR_UNROLL
            for (int f = 0; f < 64; f += 2)
                *(unsigned *)(stg + (g + f / 2 % 2 * 8) * 256 + ((f / 4 ^ g) << 4) + q * 4) = (unsigned)gpuir_f32_to_bf16(acc[f]) | (unsigned)gpuir_f32_to_bf16(acc[f + 1]) << 16;
            GPUIR_SYNC_WARP();
            GPUIR_NO_UNROLL
            for (int s = 0; s < 8; s++) {
                int k = lane + s * 32, r = k / 16, cc = k % 16;
                long long gm = tm * 128 + (warp - 4) * 16 + r, gn = tn * 128 + cc * 8;
                if (gm >= 67LL || gn >= 80LL) continue;
                int4 ch = *(const int4 *)(stg + r * 256 + ((cc ^ (r & 7)) << 4));
                int ie0 = (int)(batch * 5360LL + gm * 80LL + gn);
                int ie1 = ie0 + 1;
                int ie2 = ie0 + 2;
                int ie3 = ie0 + 3;
                int ie4 = ie0 + 4;
                int ie5 = ie0 + 5;
                int ie6 = ie0 + 6;
                int ie7 = ie0 + 7;
                /* op 29: matmul (line 14) */
                float v0 = gpuir_bf16_to_f32((unsigned short)ch.x);
                float v1 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.x >> 16));
                float v2 = gpuir_bf16_to_f32((unsigned short)ch.y);
                float v3 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.y >> 16));
                float v4 = gpuir_bf16_to_f32((unsigned short)ch.z);
                float v5 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.z >> 16));
                float v6 = gpuir_bf16_to_f32((unsigned short)ch.w);
                float v7 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.w >> 16));
                *(int4 *)(out0_ + ie0) = GPUIR_INT4((int)((unsigned)gpuir_f32_to_bf16(v0) | (unsigned)gpuir_f32_to_bf16(v1) << 16),
                                                   (int)((unsigned)gpuir_f32_to_bf16(v2) | (unsigned)gpuir_f32_to_bf16(v3) << 16),
                                                   (int)((unsigned)gpuir_f32_to_bf16(v4) | (unsigned)gpuir_f32_to_bf16(v5) << 16),
                                                   (int)((unsigned)gpuir_f32_to_bf16(v6) | (unsigned)gpuir_f32_to_bf16(v7) << 16));
            }
        }
    }
}

/* @layer_f16_k0: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_layer_f16_k0(GPUIR_LANE const unsigned short *x_, const unsigned short *w_, const unsigned short *bias_, const unsigned short *res_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 230528 bytes */
    unsigned s0 = GPUIR_SMEM_ADDR(smem), sbase = (s0 + 1023u) & ~1023u;
    unsigned full = sbase + 196608u, empty = full + 48u;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4, wg = warp / 4;
    long long it = 0;                    /* k tiles so far, across tiles */
    if (t == 0) {
        for (unsigned st = 0; st < 6u; st++) {
            gpuir_mbar_init(full + 8u * st, 1u);
            gpuir_mbar_init(empty + 8u * st, 256u);
        }
        gpuir_mbar_init_fence();
    }
    GPUIR_SYNC();
    if (wg == 0) {
        gpuir_setmaxnreg_dec(40);
        if (t == 0) {
            for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
                long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
                if (rows > 8) rows = 8;
                long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
                long long a0 = batch * 7200LL, b0 = batch * 9600LL;
                int ca = (int)(a0 / 7200LL), cb = (int)(b0 / 9600LL);
                for (long long kt = 0; kt < 1LL; kt++, it++) {
                    unsigned st = (unsigned)(it % 6), sa = sbase + st * 32768u;
                    if (it >= 6) gpuir_mbar_wait(empty + 8u * st, (unsigned)((it / 6 - 1) & 1));
                    gpuir_mbar_expect_tx(full + 8u * st, 32768u);
                    gpuir_tma_load_2d(sa, GPUIR_TMAP(tma_a), (int)(kt * 64), (int)(tm * 128), ca, full + 8u * st);
                    gpuir_tma_load_2d(sa + 16384u, GPUIR_TMAP(tma_b), (int)(kt * 64), (int)(tn * 128), cb, full + 8u * st);
                }
            }
        }
    } else {
        gpuir_setmaxnreg_inc(232);
        unsigned char *stg = GPUIR_SMEM_PTR(sbase + 196736u + (unsigned)(warp - 4) * 4096u);
        for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
            long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
            if (rows > 8) rows = 8;
            long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
            float acc[64];
            GPUIR_UNROLL
            for (int f = 0; f < 64; f++) acc[f] = 0.0f;
            unsigned prev = 0;
            for (long long kt = 0; kt < 1LL; kt++, it++) {
                unsigned st = (unsigned)(it % 6), sb = sbase + st * 32768u + 16384u, sa = sbase + st * 32768u + (unsigned)(wg - 1) * 8192u;
                gpuir_mbar_wait(full + 8u * st, (unsigned)(it / 6 & 1));
                gpuir_wgmma_fence();
                GPUIR_UNROLL
                for (int kk = 0; kk < 4; kk++)
                    GPUIR_WGMMA_F16(acc, gpuir_wgmma_desc_sw128(sa + kk * 32u), gpuir_wgmma_desc_sw128(sb + kk * 32u), smem, s0);
                gpuir_wgmma_commit();
                gpuir_wgmma_wait1();
                if (kt > 0) gpuir_mbar_arrive(empty + 8u * prev);
                prev = st;
            }
            gpuir_wgmma_wait0();
            GPUIR_WGMMA_KEEP(acc, 64);
            gpuir_mbar_arrive(empty + 8u * prev);
            GPUIR_SYNC_WARP();                  /* the warp is done with the last tile's rows */
            GPUIR_UNROLL
            for (int f = 0; f < 64; f += 2)
                *(unsigned *)(stg + (g + f / 2 % 2 * 8) * 256 + ((f / 4 ^ g) << 4) + q * 4) = (unsigned)gpuir_f32_to_f16(acc[f]) | (unsigned)gpuir_f32_to_f16(acc[f + 1]) << 16;
            GPUIR_SYNC_WARP();
            GPUIR_NO_UNROLL
            for (int s = 0; s < 8; s++) {
                int k = lane + s * 32, r = k / 16, cc = k % 16;
                long long gm = tm * 128 + (warp - 4) * 16 + r, gn = tn * 128 + cc * 8;
                if (gm >= 150LL || gn >= 200LL) continue;
                int4 ch = *(const int4 *)(stg + r * 256 + ((cc ^ (r & 7)) << 4));
                int ie0 = (int)(batch * 30000LL + gm * 200LL + gn);
                int ie1 = ie0 + 1;
                int ie2 = ie0 + 2;
                int ie3 = ie0 + 3;
                int ie4 = ie0 + 4;
                int ie5 = ie0 + 5;
                int ie6 = ie0 + 6;
                int ie7 = ie0 + 7;
                int4 l2 = *(const int4 *)(bias_ + ie0 % 200);
                int4 l3 = *(const int4 *)(res_ + ie0);
                /* op 32: matmul (line 19) */
                float v0 = gpuir_f16_to_f32((unsigned short)l2.x);
                float v1 = gpuir_f16_to_f32((unsigned short)l3.x);
                float v2 = gpuir_f16_to_f32((unsigned short)ch.x);
                /* op 33: add (line 20) */
                float v3 = gpuir_round_f16(v2 + v0);
                /* op 34: gelu (line 21) */
                float v4 = gpuir_round_f16(gpuir_gelu(v3));
                /* op 35: add (line 22) */
                float v5 = gpuir_round_f16(v4 + v1);
                float v6 = gpuir_f16_to_f32((unsigned short)((unsigned)l2.x >> 16));
                float v7 = gpuir_f16_to_f32((unsigned short)((unsigned)l3.x >> 16));
                float v8 = gpuir_f16_to_f32((unsigned short)((unsigned)ch.x >> 16));
                /* op 33: add (line 20) */
                float v9 = gpuir_round_f16(v8 + v6);
                /* op 34: gelu (line 21) */
                float v10 = gpuir_round_f16(gpuir_gelu(v9));
                /* op 35: add (line 22) */
                float v11 = gpuir_round_f16(v10 + v7);
                float v12 = gpuir_f16_to_f32((unsigned short)l2.y);
                float v13 = gpuir_f16_to_f32((unsigned short)l3.y);
                float v14 = gpuir_f16_to_f32((unsigned short)ch.y);
                /* op 33: add (line 20) */
                float v15 = gpuir_round_f16(v14 + v12);
                /* op 34: gelu (line 21) */
                float v16 = gpuir_round_f16(gpuir_gelu(v15));
                /* op 35: add (line 22) */
                float v17 = gpuir_round_f16(v16 + v13);
                float v18 = gpuir_f16_to_f32((unsigned short)((unsigned)l2.y >> 16));
                float v19 = gpuir_f16_to_f32((unsigned short)((unsigned)l3.y >> 16));
                float v20 = gpuir_f16_to_f32((unsigned short)((unsigned)ch.y >> 16));
                /* op 33: add (line 20) */
                float v21 = gpuir_round_f16(v20 + v18);
                /* op 34: gelu (line 21) */
                float v22 = gpuir_round_f16(gpuir_gelu(v21));
                /* op 35: add (line 22) */
                float v23 = gpuir_round_f16(v22 + v19);
                float v24 = gpuir_f16_to_f32((unsigned short)l2.z);
                float v25 = gpuir_f16_to_f32((unsigned short)l3.z);
                float v26 = gpuir_f16_to_f32((unsigned short)ch.z);
                /* op 33: add (line 20) */
                float v27 = gpuir_round_f16(v26 + v24);
                /* op 34: gelu (line 21) */
                float v28 = gpuir_round_f16(gpuir_gelu(v27));
                /* op 35: add (line 22) */
                float v29 = gpuir_round_f16(v28 + v25);
                float v30 = gpuir_f16_to_f32((unsigned short)((unsigned)l2.z >> 16));
                float v31 = gpuir_f16_to_f32((unsigned short)((unsigned)l3.z >> 16));
                float v32 = gpuir_f16_to_f32((unsigned short)((unsigned)ch.z >> 16));
                /* op 33: add (line 20) */
                float v33 = gpuir_round_f16(v32 + v30);
                /* op 34: gelu (line 21) */
                float v34 = gpuir_round_f16(gpuir_gelu(v33));
                /* op 35: add (line 22) */
                float v35 = gpuir_round_f16(v34 + v31);
                float v36 = gpuir_f16_to_f32((unsigned short)l2.w);
                float v37 = gpuir_f16_to_f32((unsigned short)l3.w);
                float v38 = gpuir_f16_to_f32((unsigned short)ch.w);
                /* op 33: add (line 20) */
                float v39 = gpuir_round_f16(v38 + v36);
                /* op 34: gelu (line 21) */
                float v40 = gpuir_round_f16(gpuir_gelu(v39));
                /* op 35: add (line 22) */
                float v41 = gpuir_round_f16(v40 + v37);
                float v42 = gpuir_f16_to_f32((unsigned short)((unsigned)l2.w >> 16));
                float v43 = gpuir_f16_to_f32((unsigned short)((unsigned)l3.w >> 16));
                float v44 = gpuir_f16_to_f32((unsigned short)((unsigned)ch.w >> 16));
                /* op 33: add (line 20) */
                float v45 = gpuir_round_f16(v44 + v42);
                /* op 34: gelu (line 21) */
                float v46 = gpuir_round_f16(gpuir_gelu(v45));
                /* op 35: add (line 22) */
                float v47 = gpuir_round_f16(v46 + v43);
                *(int4 *)(out0_ + ie0) = GPUIR_INT4((int)((unsigned)gpuir_f32_to_f16(v5) | (unsigned)gpuir_f32_to_f16(v11) << 16),
                                                   (int)((unsigned)gpuir_f32_to_f16(v17) | (unsigned)gpuir_f32_to_f16(v23) << 16),
                                                   (int)((unsigned)gpuir_f32_to_f16(v29) | (unsigned)gpuir_f32_to_f16(v35) << 16),
                                                   (int)((unsigned)gpuir_f32_to_f16(v41) | (unsigned)gpuir_f32_to_f16(v47) << 16));
            }
        }
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_edges_bf16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_edges_bf16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2], (const gpuir_tensor_map *)p[3], (const gpuir_tensor_map *)p[4]);
}
static void gpuir_k_k8_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_k8_f16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2], (const gpuir_tensor_map *)p[3], (const gpuir_tensor_map *)p[4]);
}
static void gpuir_k_long_k_batch_bf16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_long_k_batch_bf16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2], (const gpuir_tensor_map *)p[3], (const gpuir_tensor_map *)p[4]);
}
static void gpuir_k_layer_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_layer_f16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2], *(unsigned short **)p[3], *(unsigned short **)p[4], (const gpuir_tensor_map *)p[5], (const gpuir_tensor_map *)p[6]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_edges_bf16_k0", gpuir_k_edges_bf16_k0_emu, 0u, 230528u, 1, 3u, 2u, 0u},
    {"gpuir_k_k8_f16_k0", gpuir_k_k8_f16_k0_emu, 0u, 230528u, 1, 3u, 2u, 0u},
    {"gpuir_k_long_k_batch_bf16_k0", gpuir_k_long_k_batch_bf16_k0_emu, 0u, 230528u, 1, 3u, 2u, 0u},
    {"gpuir_k_layer_f16_k0", gpuir_k_layer_f16_k0_emu, 0u, 230528u, 1, 5u, 2u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

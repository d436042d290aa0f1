/* @edges_bf16_k0: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_edges_bf16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 197728 bytes */
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
            GPUIR_WGMMA_KEEP(acc);
            gpuir_mbar_arrive(empty + 8u * prev);
            GPUIR_UNROLL
            for (int f = 0; f < 64; f++) {
                long long gm = tm * 128 + (warp - 4) * 16 + g + f / 2 % 2 * 8;
                long long gn = tn * 128 + f / 4 * 8 + q * 2 + f % 2;
                if (gm >= 130LL || gn >= 136LL) continue;
                int i = (int)(batch * 17680LL + gm * 136LL + gn);
                /* op 23: matmul */
                float v0 = gpuir_round_bf16(acc[f]);
                out0_[i] = gpuir_f32_to_bf16(v0);
            }
        }
    }
}

/* @k8_f16_k0: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_k8_f16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 197728 bytes */
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
            GPUIR_WGMMA_KEEP(acc);
            gpuir_mbar_arrive(empty + 8u * prev);
            GPUIR_UNROLL
            for (int f = 0; f < 64; f++) {
                long long gm = tm * 128 + (warp - 4) * 16 + g + f / 2 % 2 * 8;
                long long gn = tn * 128 + f / 4 * 8 + q * 2 + f % 2;
                if (gm >= 5LL || gn >= 24LL) continue;
                int i = (int)(batch * 120LL + gm * 24LL + gn);
                /* op 26: matmul */
                float v0 = gpuir_round_f16(acc[f]);
                out0_[i] = gpuir_f32_to_f16(v0);
            }
        }
    }
}

/* @long_k_batch_bf16_k0: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_long_k_batch_bf16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 197728 bytes */
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
            GPUIR_WGMMA_KEEP(acc);
            gpuir_mbar_arrive(empty + 8u * prev);
            GPUIR_UNROLL
            for (int f = 0; f < 64; f++) {
                long long gm = tm * 128 + (warp - 4) * 16 + g + f / 2 % 2 * 8;
                long long gn = tn * 128 + f / 4 * 8 + q * 2 + f % 2;
                if (gm >= 67LL || gn >= 80LL) continue;
                int i = (int)(batch * 5360LL + gm * 80LL + gn);
                /* op 29: matmul */
                float v0 = gpuir_round_bf16(acc[f]);
                out0_[i] = gpuir_f32_to_bf16(v0);
            }
        }
    }
}

/* @layer_f16_k0: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_layer_f16_k0(GPUIR_LANE const unsigned short *x_, const unsigned short *w_, const unsigned short *bias_, const unsigned short *res_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 197728 bytes */
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
            GPUIR_WGMMA_KEEP(acc);
            gpuir_mbar_arrive(empty + 8u * prev);
            GPUIR_UNROLL
            for (int f = 0; f < 64; f++) {
                long long gm = tm * 128 + (warp - 4) * 16 + g + f / 2 % 2 * 8;
                long long gn = tn * 128 + f / 4 * 8 + q * 2 + f % 2;
                if (gm >= 150LL || gn >= 200LL) continue;
                int i = (int)(batch * 30000LL + gm * 200LL + gn);
                /* op 32: matmul */
                float v0 = gpuir_round_f16(acc[f]);
                /* op 33: add */
                float v1 = gpuir_f16_to_f32(bias_[i % 200]);
                float v2 = gpuir_round_f16(v0 + v1);
                /* op 34: gelu */
                float v3 = gpuir_round_f16(gpuir_gelu(v2));
                /* op 35: add */
                float v4 = gpuir_f16_to_f32(res_[i]);
                float v5 = gpuir_round_f16(v3 + v4);
                out0_[i] = gpuir_f32_to_f16(v5);
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
    {"gpuir_k_edges_bf16_k0", gpuir_k_edges_bf16_k0_emu, 0u, 197728u, 1, 3u, 2u},
    {"gpuir_k_k8_f16_k0", gpuir_k_k8_f16_k0_emu, 0u, 197728u, 1, 3u, 2u},
    {"gpuir_k_long_k_batch_bf16_k0", gpuir_k_long_k_batch_bf16_k0_emu, 0u, 197728u, 1, 3u, 2u},
    {"gpuir_k_layer_f16_k0", gpuir_k_layer_f16_k0_emu, 0u, 197728u, 1, 5u, 2u},
    {0, 0, 0, 0, 0, 0, 0}
};
#endif

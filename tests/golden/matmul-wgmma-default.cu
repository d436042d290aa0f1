/* @linear_k0: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_linear_k0(GPUIR_LANE const unsigned short *x_, const unsigned short *w_, const unsigned short *bias_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
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
                long long u = tile % 2LL, first = u / 8LL * 8, rows = 2LL - first;
                if (rows > 8) rows = 8;
                long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 2LL;
                long long a0 = batch * 12800LL, b0 = batch * 4608LL;
                int ca = (int)(a0 / 12800LL), cb = (int)(b0 / 4608LL);
                for (long long kt = 0; kt < 1LL; kt++, it++) {
                    unsigned st = (unsigned)(it % 6), sa = sbase + st * 32768u;
                    if (it >= 6) gpuir_mbar_wait(empty + 8u * st, (unsigned)((it / 6 - 1) & 1));
                    gpuir_mbar_expect_tx(full + 8u * st, 32768u);
                    gpuir_tma_load_2d(sa, GPUIR_TMAP(tma_a), (int)(kt * 64), (int)(tm * 128), ca, full + 8u * st);
                    for (int j = 0; j < 2; j++) gpuir_tma_load_2d(sa + 16384u + (unsigned)j * 8192u, GPUIR_TMAP(tma_b), (int)(tn * 128 + j * 64), (int)(kt * 64), cb, full + 8u * st);
                }
            }
        }
    } else {
        gpuir_setmaxnreg_inc(232);
        unsigned char *stg = GPUIR_SMEM_PTR(sbase + 196736u + (unsigned)(warp - 4) * 4096u);
        for (long long tile = GPUIR_BLOCK_RANK; tile < 2LL; tile += GPUIR_GRID_BLOCKS) {
            long long u = tile % 2LL, first = u / 8LL * 8, rows = 2LL - first;
            if (rows > 8) rows = 8;
            long long tm = first + u % 8LL % rows, tn = u % 8LL / rows, batch = tile / 2LL;
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
                    GPUIR_WGMMA_BF16_BMN(acc, gpuir_wgmma_desc_sw128(sa + kk * 32u), gpuir_wgmma_desc(sb + kk * 2048u, 8192u, 1024u) | 1ull << 62, smem, s0);
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
                if (gm >= 200LL || gn >= 72LL) continue;
                int4 ch = *(const int4 *)(stg + r * 256 + ((cc ^ (r & 7)) << 4));
                int ie0 = (int)(batch * 14400LL + gm * 72LL + gn);
                int ie1 = ie0 + 1;
                int ie2 = ie0 + 2;
                int ie3 = ie0 + 3;
                int ie4 = ie0 + 4;
                int ie5 = ie0 + 5;
                int ie6 = ie0 + 6;
                int ie7 = ie0 + 7;
                int4 l2 = *(const int4 *)(bias_ + ie0 % 72);
                /* op 7: matmul (line 5) */
                float v0 = gpuir_bf16_to_f32((unsigned short)l2.x);
                float v1 = gpuir_bf16_to_f32((unsigned short)ch.x);
                /* op 8: add (line 6) */
                float v2 = gpuir_round_bf16(v1 + v0);
                float v3 = gpuir_bf16_to_f32((unsigned short)((unsigned)l2.x >> 16));
                float v4 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.x >> 16));
                /* op 8: add (line 6) */
                float v5 = gpuir_round_bf16(v4 + v3);
                float v6 = gpuir_bf16_to_f32((unsigned short)l2.y);
                float v7 = gpuir_bf16_to_f32((unsigned short)ch.y);
                /* op 8: add (line 6) */
                float v8 = gpuir_round_bf16(v7 + v6);
                float v9 = gpuir_bf16_to_f32((unsigned short)((unsigned)l2.y >> 16));
                float v10 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.y >> 16));
                /* op 8: add (line 6) */
                float v11 = gpuir_round_bf16(v10 + v9);
                float v12 = gpuir_bf16_to_f32((unsigned short)l2.z);
                float v13 = gpuir_bf16_to_f32((unsigned short)ch.z);
                /* op 8: add (line 6) */
                float v14 = gpuir_round_bf16(v13 + v12);
                float v15 = gpuir_bf16_to_f32((unsigned short)((unsigned)l2.z >> 16));
                float v16 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.z >> 16));
                /* op 8: add (line 6) */
                float v17 = gpuir_round_bf16(v16 + v15);
                float v18 = gpuir_bf16_to_f32((unsigned short)l2.w);
                float v19 = gpuir_bf16_to_f32((unsigned short)ch.w);
                /* op 8: add (line 6) */
                float v20 = gpuir_round_bf16(v19 + v18);
                float v21 = gpuir_bf16_to_f32((unsigned short)((unsigned)l2.w >> 16));
                float v22 = gpuir_bf16_to_f32((unsigned short)((unsigned)ch.w >> 16));
                /* op 8: add (line 6) */
                float v23 = gpuir_round_bf16(v22 + v21);
                *(int4 *)(out0_ + ie0) = GPUIR_INT4((int)((unsigned)gpuir_f32_to_bf16(v2) | (unsigned)gpuir_f32_to_bf16(v5) << 16),
                                                   (int)((unsigned)gpuir_f32_to_bf16(v8) | (unsigned)gpuir_f32_to_bf16(v11) << 16),
                                                   (int)((unsigned)gpuir_f32_to_bf16(v14) | (unsigned)gpuir_f32_to_bf16(v17) << 16),
                                                   (int)((unsigned)gpuir_f32_to_bf16(v20) | (unsigned)gpuir_f32_to_bf16(v23) << 16));
            }
        }
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_linear_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_linear_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2], *(unsigned short **)p[3], (const gpuir_tensor_map *)p[4], (const gpuir_tensor_map *)p[5]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_linear_k0", gpuir_k_linear_k0_emu, 0u, 230528u, 1, 4u, 2u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

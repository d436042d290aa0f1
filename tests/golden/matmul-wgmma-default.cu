/* @linear_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_linear_k0(GPUIR_LANE const unsigned short *w_, unsigned short *out0_) {
    /* op 12: transpose */
    GPUIR_SHARED(unsigned short, tile, 1056, 0);
    int t = GPUIR_THREAD_RANK, tx = t % 32, ty = t / 32;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 6LL; blk += GPUIR_GRID_BLOCKS) {
        long long tc = blk % 3LL, tr = blk / 3LL % 2LL, base = blk / 6LL * 4608LL;
        for (int j = ty; j < 32; j += 8) {
            long long r = tr * 32 + j, c = tc * 32 + tx;
            if (r < 64LL && c < 72LL) tile[j * 33 + tx] = w_[base + r * 72LL + c];
        }
        GPUIR_SYNC();
        for (int j = ty; j < 32; j += 8) {
            long long c = tc * 32 + j, r = tr * 32 + tx;
            if (r < 64LL && c < 72LL) out0_[base + c * 64LL + r] = tile[tx * 33 + j];
        }
        GPUIR_SYNC();
    }
}

/* @linear_k1: 384 threads per block */
GPUIR_KERNEL GPUIR_LAUNCH_BOUNDS(384, 1) gpuir_k_linear_k1(GPUIR_LANE const unsigned short *x_, const unsigned short *in0_, const unsigned short *bias_, unsigned short *out0_, GPUIR_TMAP_PARAM(tma_a), GPUIR_TMAP_PARAM(tma_b)) {
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
                    gpuir_tma_load_2d(sa + 16384u, GPUIR_TMAP(tma_b), (int)(kt * 64), (int)(tn * 128), cb, full + 8u * st);
                }
            }
        }
    } else {
        gpuir_setmaxnreg_inc(232);
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
                if (gm >= 200LL || gn >= 72LL) continue;
                int i = (int)(batch * 14400LL + gm * 72LL + gn);
                /* op 14: matmul */
                float v0 = gpuir_round_bf16(acc[f]);
                /* op 15: add */
                float v1 = gpuir_bf16_to_f32(bias_[i % 72]);
                float v2 = gpuir_round_bf16(v0 + v1);
                out0_[i] = gpuir_f32_to_bf16(v2);
            }
        }
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_linear_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_linear_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_linear_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_linear_k1(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2], *(unsigned short **)p[3], (const gpuir_tensor_map *)p[4], (const gpuir_tensor_map *)p[5]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_linear_k0", gpuir_k_linear_k0_emu, 2112u, 0u, 1, 2u, 0u},
    {"gpuir_k_linear_k1", gpuir_k_linear_k1_emu, 0u, 197728u, 1, 4u, 2u},
    {0, 0, 0, 0, 0, 0, 0}
};
#endif

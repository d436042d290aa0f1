/* @mm_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_) {
    GPUIR_SHARED_DYNAMIC(int4, smem);     /* 61440 bytes */
    unsigned short *sm = (unsigned short *)smem;
    int t = GPUIR_THREAD_RANK, lane = t % 32, warp = t / 32, g = lane / 4, q = lane % 4;
    int wm = warp / 4 * 64, wn = warp % 4 * 32;
    int la = (wm + lane % 16) * 40 + lane / 16 * 8, lb = (wn + lane % 8 + lane / 16 * 8) * 40 + lane / 8 % 2 * 8;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 4LL; tile += GPUIR_GRID_BLOCKS) {
        long long u = tile % 4LL, first = u / 16LL * 8, rows = 2LL - first;
        if (rows > 8) rows = 8;
        long long tm = first + u % 16LL % rows, tn = u % 16LL / rows, batch = tile / 4LL;
        long long a0 = batch * 32768LL, b0 = batch * 32768LL;
        float acc[64];
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) acc[f] = 0.0f;
        for (long long kt = -2; kt < 4LL; kt++) {
            if (kt + 2 < 4LL) {
                int st = (int)((kt + 2) % 3);
                long long k0 = (kt + 2) * 32;
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 8;
                    long long gm = tm * 128 + r, gk = k0 + c;
                    int ok = gm < 256LL && gk < 128LL;
                    gpuir_cp_async16(sm + st * 10240 + r * 40 + c, ok ? (const void *)(a_ + a0 + gm * 128LL + gk) : (const void *)a_, ok);
                }
                for (int e = t; e < 512; e += 256) {
                    int r = e / 4, c = e % 4 * 8;
                    long long gn = tn * 128 + r, gk = k0 + c;
                    int ok = gn < 256LL && gk < 128LL;
                    gpuir_cp_async16(sm + st * 10240 + 5120 + r * 40 + c, ok ? (const void *)(b_ + b0 + gn * 128LL + gk) : (const void *)b_, ok);
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
                    for (int j = 0; j < 4; j++) GPUIR_MMA_BF16(acc + (i * 4 + j) * 4, af[i], bf[j / 2] + j % 2 * 2);
            }
            GPUIR_SYNC();
        }
        GPUIR_UNROLL
        for (int f = 0; f < 64; f++) {
            long long gm = tm * 128 + wm + f / 16 * 16 + f % 4 / 2 * 8 + g;
            long long gn = tn * 128 + wn + f / 4 % 4 * 8 + q * 2 + f % 2;
            if (gm >= 256LL || gn >= 256LL) continue;
            int i = (int)(batch * 65536LL + gm * 256LL + gn);
            /* op 9: matmul (line 5) */
            float v0 = gpuir_round_bf16(acc[f]);
            out0_[i] = gpuir_f32_to_bf16(v0);
        }
    }
}

/* @mm_f16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_f16_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_) {
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
                as[e] = gm < 70LL && gk < 33LL ? gpuir_f16_to_f32(a_[a0 + gm * 33LL + gk * 1LL]) : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 33LL && gn < 65LL ? gpuir_f16_to_f32(b_[b0 + gk * 65LL + gn * 1LL]) : (float)0;
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
            /* op 12: matmul (line 10) */
            float v0 = gpuir_round_f16((float)acc[r]);
            out0_[i] = gpuir_f32_to_f16(v0);
        }
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_mm_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2]);
}
static void gpuir_k_mm_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_f16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_mm_k0", gpuir_k_mm_k0_emu, 0u, 61440u, 1, 3u, 0u, 0u},
    {"gpuir_k_mm_f16_k0", gpuir_k_mm_f16_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

/* @mm_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_k0(GPUIR_LANE const unsigned short *a_, const unsigned short *b_, unsigned short *out0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 16LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 4LL, tm = tile / 4LL % 4LL, batch = tile / 16LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * 32768LL, b0 = batch * 32768LL;
        for (long long k0 = 0; k0 < 128LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 256LL && gk < 128LL ? gpuir_bf16_to_f32(a_[a0 + gm * 128LL + gk * 1LL]) : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 128LL && gn < 256LL ? gpuir_bf16_to_f32(b_[b0 + gk * 1LL + gn * 128LL]) : (float)0;
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
            if (e >= 4096 || gm >= 256LL || gn >= 256LL) continue;
            int i = (int)(batch * 65536LL + gm * 256LL + gn);
            /* op 9: matmul (line 5) */
            float v0 = gpuir_round_bf16((float)acc[r]);
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
    {"gpuir_k_mm_k0", gpuir_k_mm_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_mm_f16_k0", gpuir_k_mm_f16_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

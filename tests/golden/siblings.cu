#ifndef GPUIR_WS_TICKET
#ifdef GPUIR_EMU
#define GPUIR_WS_FENCE()
#define GPUIR_WS_TICKET(p) ((*(p))++)
#define GPUIR_WS_UNROLL4
#else
#define GPUIR_WS_FENCE() __threadfence()
#define GPUIR_WS_TICKET(p) atomicAdd((unsigned *)(p), 1u)
#define GPUIR_WS_UNROLL4 _Pragma("unroll 4")
#endif
#endif

/* @siblings_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_siblings_k0(GPUIR_LANE const float *x_, float *out0_, float *out1_, float *out2_, float *partials_, int *counters_) {
    GPUIR_SHARED(float, red, 32, 0);
    GPUIR_SHARED(unsigned, ticket, 1, 128);
    GPUIR_SHARED(double, dred, 32, 144);
    GPUIR_SHARED(double, srow, 8, 400);
    int t = GPUIR_THREAD_RANK, lane = t & 31, warp = t >> 5;
    long long blk = GPUIR_BLOCK_RANK, r0 = blk * 1LL;
    long long rn = r0 + 1LL < 70LL ? r0 + 1LL : 70LL;
    double cacc[1], tacc[1];        /* a sum's terms in double, a max's value */
    float e, acc;
    double dacc;
    for (int q = t; q < 8; q += 256) srow[q] = 0.0f;
    tacc[0] = 0.0f;
    GPUIR_SYNC();
    for (long long jj = 0; jj < 2LL; jj++) {
        long long j = (jj + blk) % 2LL, c = j * 256 + t;
        cacc[0] = -GPUIR_INF;
        GPUIR_WS_UNROLL4
        for (long long r = r0; r < rn; r++) {
            int i = (int)(r * 300LL + (c < 300LL ? c : 0));
            float v0 = x_[i];
            e = c < 300LL ? v0 : -GPUIR_INF;
            cacc[0] = gpuir_fmax((float)cacc[0], e);
            e = c < 300LL ? v0 : 0.0f;
            dacc = e;
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
            if (lane == 0) srow[(r - r0) * 8 + warp] += dacc;
            e = c < 300LL ? v0 : 0.0f;
            tacc[0] += (double)e;
        }
        if (c < 300LL) gpuir_put2(&partials_[2 * (0LL + blk * 300LL + c)], cacc[0]);
        long long g = blk / 16, blocks = 70LL;
        long long q0 = g * 16, q1 = q0 + 16 < blocks ? q0 + 16 : blocks;
        GPUIR_WS_FENCE();
        GPUIR_SYNC();
        if (t == 0) ticket[0] = (unsigned)GPUIR_WS_TICKET(&counters_[3LL + j * 5LL + g]);
        GPUIR_SYNC();
        if (ticket[0] == (unsigned)(q1 - q0 - 1)) {
            GPUIR_WS_FENCE();
            if (c < 300LL) {
                acc = -GPUIR_INF;
                GPUIR_WS_UNROLL4
                for (long long q = q0; q < q1; q++) acc = gpuir_fmax(acc, (float)gpuir_get2(&((volatile float *)partials_)[2 * (0LL + q * 300LL + c)]));
                gpuir_put2(&partials_[2 * (0LL + (blocks + g) * 300LL + c)], (double)acc);
            }
            GPUIR_WS_FENCE();
            GPUIR_SYNC();
            if (t == 0) ticket[0] = (unsigned)GPUIR_WS_TICKET(&counters_[j]);
            GPUIR_SYNC();
            if (ticket[0] == 4u) {
                GPUIR_WS_FENCE();
                q0 = blocks; q1 = blocks + 5LL;
                if (c < 300LL) {
                    acc = -GPUIR_INF;
                    GPUIR_WS_UNROLL4
                    for (long long q = q0; q < q1; q++) acc = gpuir_fmax(acc, (float)gpuir_get2(&((volatile float *)partials_)[2 * (0LL + q * 300LL + c)]));
                    out0_[c] = acc;
                }
            }
        }
    }
    GPUIR_SYNC();
    for (long long q = t; q < rn - r0; q += 256) {
        dacc = srow[q * 8];
        for (int d = 1; d < 8; d++) {
            dacc += srow[q * 8 + d];
        }
        acc = (float)dacc;
        out1_[r0 + q] = acc;
    }
    dacc = tacc[0];
    for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
    if ((t & 31) == 0) dred[t >> 5] = dacc;
    GPUIR_SYNC();
    if (t < 32) {
        dacc = t < 8 ? dred[t] : 0.0;
        for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
    }
    if (t == 0) gpuir_put2(&partials_[2 * (22500LL + blk)], dacc);
    GPUIR_SYNC();
    GPUIR_WS_FENCE();
    GPUIR_SYNC();
    if (t == 0) ticket[0] = (unsigned)GPUIR_WS_TICKET(&counters_[2]);
    GPUIR_SYNC();
    if (ticket[0] == 69u) {
        GPUIR_WS_FENCE();
        dacc = 0.0;
        for (long long q = t; q < 70LL; q += 256) dacc += gpuir_get2(&((volatile float *)partials_)[2 * (22500LL + q)]);
        for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        if ((t & 31) == 0) dred[t >> 5] = dacc;
        GPUIR_SYNC();
        if (t < 32) {
            dacc = t < 8 ? dred[t] : 0.0;
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        }
        acc = (float)dacc;
        if (t == 0) {
            out2_[0] = acc;
        }
        GPUIR_SYNC();
    }
}

/* @siblings_k0_zero: 256 threads per block */
GPUIR_KERNEL gpuir_k_siblings_k0_zero(GPUIR_LANE int *counters_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 13LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 15: constant */
        int v0 = 0LL;
        counters_[i] = v0;
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_siblings_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_siblings_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3], *(float **)p[4], *(int **)p[5]);
}
static void gpuir_k_siblings_k0_zero_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_siblings_k0_zero(l, *(int **)p[0]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_siblings_k0", gpuir_k_siblings_k0_emu, 464u, 0u, 1, 6u, 0u, 0u},
    {"gpuir_k_siblings_k0_zero", gpuir_k_siblings_k0_zero_emu, 0u, 0u, 0, 1u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

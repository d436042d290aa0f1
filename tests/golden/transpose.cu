/* @tr_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_tr_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    /* op 24: transpose (line 4) */
    GPUIR_SHARED(unsigned short, tile, 1056, 0);
    int t = GPUIR_THREAD_RANK, tx = t % 32, ty = t / 32;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 12LL; blk += GPUIR_GRID_BLOCKS) {
        long long tc = blk % 3LL, tr = blk / 3LL % 2LL, base = blk / 6LL * 2800LL;
        for (int j = ty; j < 32; j += 8) {
            long long r = tr * 32 + j, c = tc * 32 + tx;
            if (r < 40LL && c < 70LL) tile[j * 33 + tx] = x_[base + r * 70LL + c];
        }
        GPUIR_SYNC();
        for (int j = ty; j < 32; j += 8) {
            long long c = tc * 32 + j, r = tr * 32 + tx;
            if (r < 40LL && c < 70LL) out0_[base + c * 40LL + r] = tile[tx * 33 + j];
        }
        GPUIR_SYNC();
    }
}

/* @tr_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_tr_k1(GPUIR_LANE const unsigned short *x_, unsigned short *out1_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 5600LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 26: transpose (line 5) */
        float v0 = gpuir_f16_to_f32(x_[(i % 40) * 70 + (i / 40 % 2) * 2800 + (i / 80 % 70)]);
        out1_[i] = gpuir_f32_to_f16(v0);
    }
}

/* @transpose_3d_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_transpose_3d_k0(GPUIR_LANE const float *x_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 120LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 30: transpose (line 10) */
        float v0 = x_[(i % 6) * 5 + (i / 6 % 4) * 30 + (i / 24 % 5)];
        out0_[i] = v0;
    }
}

/* @transpose_f16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_transpose_f16_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    /* op 33: transpose (line 15) */
    GPUIR_SHARED(unsigned short, tile, 1056, 0);
    int t = GPUIR_THREAD_RANK, tx = t % 32, ty = t / 32;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 6LL; blk += GPUIR_GRID_BLOCKS) {
        long long tc = blk % 3LL, tr = blk / 3LL % 2LL, base = blk / 6LL * 2145LL;
        for (int j = ty; j < 32; j += 8) {
            long long r = tr * 32 + j, c = tc * 32 + tx;
            if (r < 33LL && c < 65LL) tile[j * 33 + tx] = x_[base + r * 65LL + c];
        }
        GPUIR_SYNC();
        for (int j = ty; j < 32; j += 8) {
            long long c = tc * 32 + j, r = tr * 32 + tx;
            if (r < 33LL && c < 65LL) out0_[base + c * 33LL + r] = tile[tx * 33 + j];
        }
        GPUIR_SYNC();
    }
}

/* @transpose_batched_i64_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_transpose_batched_i64_k0(GPUIR_LANE const long long *x_, long long *out0_) {
    /* op 36: transpose (line 20) */
    GPUIR_SHARED(long long, tile, 1056, 0);
    int t = GPUIR_THREAD_RANK, tx = t % 32, ty = t / 32;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 18LL; blk += GPUIR_GRID_BLOCKS) {
        long long tc = blk % 3LL, tr = blk / 3LL % 2LL, base = blk / 6LL * 2800LL;
        for (int j = ty; j < 32; j += 8) {
            long long r = tr * 32 + j, c = tc * 32 + tx;
            if (r < 40LL && c < 70LL) tile[j * 33 + tx] = x_[base + r * 70LL + c];
        }
        GPUIR_SYNC();
        for (int j = ty; j < 32; j += 8) {
            long long c = tc * 32 + j, r = tr * 32 + tx;
            if (r < 40LL && c < 70LL) out0_[base + c * 40LL + r] = tile[tx * 33 + j];
        }
        GPUIR_SYNC();
    }
}

/* @transpose_bf16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_transpose_bf16_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    /* op 39: transpose (line 25) */
    GPUIR_SHARED(unsigned short, tile, 1056, 0);
    int t = GPUIR_THREAD_RANK, tx = t % 32, ty = t / 32;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 1LL; blk += GPUIR_GRID_BLOCKS) {
        long long tc = blk % 1LL, tr = blk / 1LL % 1LL, base = blk / 1LL * 31LL;
        for (int j = ty; j < 32; j += 8) {
            long long r = tr * 32 + j, c = tc * 32 + tx;
            if (r < 1LL && c < 31LL) tile[j * 33 + tx] = x_[base + r * 31LL + c];
        }
        GPUIR_SYNC();
        for (int j = ty; j < 32; j += 8) {
            long long c = tc * 32 + j, r = tr * 32 + tx;
            if (r < 1LL && c < 31LL) out0_[base + c * 1LL + r] = tile[tx * 33 + j];
        }
        GPUIR_SYNC();
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_tr_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_tr_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_tr_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_tr_k1(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_transpose_3d_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_transpose_3d_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_transpose_f16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_transpose_f16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
static void gpuir_k_transpose_batched_i64_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_transpose_batched_i64_k0(l, *(long long **)p[0], *(long long **)p[1]);
}
static void gpuir_k_transpose_bf16_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_transpose_bf16_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_tr_k0", gpuir_k_tr_k0_emu, 2112u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_tr_k1", gpuir_k_tr_k1_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_transpose_3d_k0", gpuir_k_transpose_3d_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_transpose_f16_k0", gpuir_k_transpose_f16_k0_emu, 2112u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_transpose_batched_i64_k0", gpuir_k_transpose_batched_i64_k0_emu, 8448u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_transpose_bf16_k0", gpuir_k_transpose_bf16_k0_emu, 2112u, 0u, 1, 2u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

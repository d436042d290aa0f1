/* @tr_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_tr_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    /* op 32: transpose (line 6) */
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
    /* op 34: transpose (line 7) */
    GPUIR_SHARED(unsigned short, tile, 1056, 0);
    int t = GPUIR_THREAD_RANK, tx = t % 32, ty = t / 32;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 9LL; blk += GPUIR_GRID_BLOCKS) {
        long long tc = blk % 3LL, tr = blk / 3LL % 3LL, base = blk / 9LL * 5600LL;
        for (int j = ty; j < 32; j += 8) {
            long long r = tr * 32 + j, c = tc * 32 + tx;
            if (r < 80LL && c < 70LL) tile[j * 33 + tx] = x_[base + r * 70LL + c];
        }
        GPUIR_SYNC();
        for (int j = ty; j < 32; j += 8) {
            long long c = tc * 32 + j, r = tr * 32 + tx;
            if (r < 80LL && c < 70LL) out1_[base + c * 80LL + r] = tile[tx * 33 + j];
        }
        GPUIR_SYNC();
    }
}

/* @transpose_3d_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_transpose_3d_k0(GPUIR_LANE const float *x_, float *out0_) {
    /* op 38: transpose (line 12) */
    GPUIR_SHARED(float, tile, 1056, 0);
    int t = GPUIR_THREAD_RANK, tx = t % 32, ty = t / 32;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 1LL; blk += GPUIR_GRID_BLOCKS) {
        long long tc = blk % 1LL, tr = blk / 1LL % 1LL, base = blk / 1LL * 120LL;
        for (int j = ty; j < 32; j += 8) {
            long long r = tr * 32 + j, c = tc * 32 + tx;
            if (r < 24LL && c < 5LL) tile[j * 33 + tx] = x_[base + r * 5LL + c];
        }
        GPUIR_SYNC();
        for (int j = ty; j < 32; j += 8) {
            long long c = tc * 32 + j, r = tr * 32 + tx;
            if (r < 24LL && c < 5LL) out0_[base + c * 24LL + r] = tile[tx * 33 + j];
        }
        GPUIR_SYNC();
    }
}

/* @transpose_f16_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_transpose_f16_k0(GPUIR_LANE const unsigned short *x_, unsigned short *out0_) {
    /* op 41: transpose (line 17) */
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
    /* op 44: transpose (line 22) */
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
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 31LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 47: transpose (line 27) */
        float v0 = gpuir_bf16_to_f32(x_[i % 31]);
        out0_[i] = gpuir_f32_to_bf16(v0);
    }
}

/* @transpose_reversed_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_transpose_reversed_k0(GPUIR_LANE const float *x_, float *out0_) {
    /* op 50: transpose (line 33) */
    GPUIR_SHARED(float, tile, 1056, 0);
    int t = GPUIR_THREAD_RANK, tx = t % 32, ty = t / 32;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 8LL; blk += GPUIR_GRID_BLOCKS) {
        long long tc = blk % 2LL, tr = blk / 2LL % 1LL, bt = blk / 2LL;
        long long ib = bt * 35LL, ob = bt * 3LL;
        for (int j = ty; j < 32; j += 8) {
            long long r = tr * 32 + j, c = tc * 32 + tx;
            if (r < 3LL && c < 35LL) tile[j * 33 + tx] = x_[ib + r * 140LL + c];
        }
        GPUIR_SYNC();
        for (int j = ty; j < 32; j += 8) {
            long long c = tc * 32 + j, r = tr * 32 + tx;
            if (r < 3LL && c < 35LL) out0_[ob + c * 12LL + r] = tile[tx * 33 + j];
        }
        GPUIR_SYNC();
    }
}

/* @transpose_keeps_last_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_transpose_keeps_last_k0(GPUIR_LANE const float *x_, float *out0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 120LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 53: transpose (line 38) */
        float v0 = x_[(i % 5) + (i / 5 % 4) * 30 + (i / 20 % 6) * 5];
        out0_[i] = v0;
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
static void gpuir_k_transpose_reversed_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_transpose_reversed_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_transpose_keeps_last_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_transpose_keeps_last_k0(l, *(float **)p[0], *(float **)p[1]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_tr_k0", gpuir_k_tr_k0_emu, 2112u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_tr_k1", gpuir_k_tr_k1_emu, 2112u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_transpose_3d_k0", gpuir_k_transpose_3d_k0_emu, 4224u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_transpose_f16_k0", gpuir_k_transpose_f16_k0_emu, 2112u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_transpose_batched_i64_k0", gpuir_k_transpose_batched_i64_k0_emu, 8448u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_transpose_bf16_k0", gpuir_k_transpose_bf16_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_transpose_reversed_k0", gpuir_k_transpose_reversed_k0_emu, 4224u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_transpose_keeps_last_k0", gpuir_k_transpose_keeps_last_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

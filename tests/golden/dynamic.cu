/* @chain_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_chain_k0(GPUIR_LANE const float *x_, const float *b_, const float *y_, float *out0_, long long x_d0_, long long y_d0_, long long out0_d0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < (8LL * out0_d0_); ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long i = (long long)ii;
        /* op 114: exp (line 4) */
        float v0 = x_[i];
        float v1 = expf(v0);
        /* op 115: add (line 5) */
        float v2 = b_[i % 8];
        float v3 = v1 + v2;
        /* op 116: mul (line 6) */
        float v4 = y_[i];
        float v5 = GPUIR_FMUL(v3, v4);
        out0_[i] = v5;
    }
}

/* @square_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_square_k0(GPUIR_LANE const float *x_, const float *c_, float *out0_, long long x_d0_, long long x_d1_, long long c_d0_, long long out0_d0_, long long out0_d1_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < (out0_d0_ * out0_d1_); ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long i = (long long)ii;
        /* op 120: constant */
        float v0 = 2.0f;
        /* op 121: sub (line 12) */
        float v1 = x_[i];
        float v2 = c_[i / out0_d1_];
        float v3 = v1 - v2;
        /* op 122: mul (line 13) */
        float v4 = GPUIR_FMUL(v3, v0);
        /* op 123: relu (line 14) */
        float v5 = gpuir_relu(v4);
        out0_[i] = v5;
    }
}

/* @half_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_half_k0(GPUIR_LANE const unsigned short *x_, const unsigned short *y_, unsigned short *out0_, long long x_d0_, long long out0_d0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < (5LL * out0_d0_); ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long i = (long long)ii;
        /* op 126: add (line 19) */
        float v0 = gpuir_f16_to_f32(x_[i]);
        float v1 = gpuir_f16_to_f32(y_[i % 5]);
        float v2 = gpuir_round_f16(v0 + v1);
        /* op 127: tanh (line 20) */
        float v3 = gpuir_round_f16(tanhf(v2));
        out0_[i] = gpuir_f32_to_f16(v3);
    }
}

/* @ints_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_ints_k0(GPUIR_LANE const int *x_, const int *y_, int *out0_, long long x_d0_, long long y_d0_, long long out0_d0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < out0_d0_; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long i = (long long)ii;
        /* op 130: max (line 25) */
        int v0 = x_[i];
        int v1 = y_[i];
        int v2 = v0 > v1 ? v0 : v1;
        /* op 131: neg (line 26) */
        int v3 = (int)(0u - (unsigned)v2);
        out0_[i] = v3;
    }
}

/* @mixed_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mixed_k0(GPUIR_LANE const float *w_, float *out0_) {
    for (long long o = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; o < 4LL; o += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        double dacc = 0.0;
        GPUIR_UNROLL
        for (int j = 0; j < 4; j++) {
            int i = (int)(j * 4LL + o);
            float v0 = w_[i];
            /* op 134: reduce_sum (line 31) */
            dacc += (double)v0;
        }
        float v1 = (float)dacc;
        out0_[o] = v1;
    }
}

/* @mixed_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_mixed_k1(GPUIR_LANE const float *x_, const float *out0_, float *out1_, long long x_d0_, long long out1_d0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < (4LL * out1_d0_); ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long i = (long long)ii;
        /* op 136: add (line 32) */
        float v0 = x_[i];
        float v1 = out0_[i % 4];
        float v2 = v0 + v1;
        out1_[i] = v2;
    }
}

/* @rows_k0: 32 threads per block */
GPUIR_KERNEL gpuir_k_rows_k0(GPUIR_LANE const float *x_, float *out0_, float *out1_, long long x_d0_, long long out0_d0_, long long out1_d0_) {
    GPUIR_SHARED(double, dred, 33, 0);
    GPUIR_SHARED(float, red, 33, 264);
    int t = GPUIR_THREAD_RANK;
    for (long long row = GPUIR_BLOCK_RANK; row < x_d0_; row += GPUIR_GRID_BLOCKS) {
        long long base = row * 8LL;
        float acc = 0.0f;
        double dacc = 0.0;
        float x0[4] = {0.0f};
        GPUIR_UNROLL
        for (int r = 0; r < 1; r++) {
            long long q = t + r * 32LL;
            if (q >= 2LL) break;
            float4 l = ((const float4 *)(x_ + base))[q];
            x0[r * 4] = l.x; x0[r * 4 + 1] = l.y; x0[r * 4 + 2] = l.z; x0[r * 4 + 3] = l.w;
        }
        double acc2 = 0.0;
        float acc3 = -GPUIR_INF;
        GPUIR_UNROLL
        for (int r = 0; r < 1; r++) {
            long long q = t + r * 32LL;
            if (q >= 2LL) break;
            long long i0 = (long long)(base + q * 4 + 0);
            float v0 = x0[r * 4 + 0];
            /* op 141: exp (line 37) */
            float v1 = expf(v0);
            acc2 += v1;
            acc3 = gpuir_fmax(acc3, v0);
            long long i1 = (long long)(base + q * 4 + 1);
            float v2 = x0[r * 4 + 1];
            /* op 141: exp (line 37) */
            float v3 = expf(v2);
            acc2 += v3;
            acc3 = gpuir_fmax(acc3, v2);
            long long i2 = (long long)(base + q * 4 + 2);
            float v4 = x0[r * 4 + 2];
            /* op 141: exp (line 37) */
            float v5 = expf(v4);
            acc2 += v5;
            acc3 = gpuir_fmax(acc3, v4);
            long long i3 = (long long)(base + q * 4 + 3);
            float v6 = x0[r * 4 + 3];
            /* op 141: exp (line 37) */
            float v7 = expf(v6);
            acc2 += v7;
            acc3 = gpuir_fmax(acc3, v6);
        }
        dacc = acc2;
        for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        if ((t & 31) == 0) dred[t >> 5] = dacc;
        GPUIR_SYNC();
        if (t < 32) {
            dacc = t < 1 ? dred[t] : 0.0;
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        }
        if (t == 0) dred[32] = dacc;
        GPUIR_SYNC();
        acc = (float)(dred[32]);
        float v8 = acc;
        acc = acc3;
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : -GPUIR_INF;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        }
        if (t == 0) red[32] = acc;
        GPUIR_SYNC();
        acc = red[32];
        float v9 = acc;
        GPUIR_SYNC();
        if (t == 0) out0_[row] = v8;
        if (t == 0) out1_[row] = v9;
    }
}

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

/* @rows_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_rows_k1(GPUIR_LANE const float *y_, float *out2_, float *out0_, float *partials_, int *counters_, long long y_d1_) {
    GPUIR_SHARED(double, dred, 32, 0);
    GPUIR_SHARED(float, red, 32, 256);
    GPUIR_SHARED(unsigned, ticket, 1, 384);
    int t = GPUIR_THREAD_RANK;
    long long n = y_d1_, g = (n + 4095LL) / 4096LL;
    g = g < 1 ? 1 : g > 211LL ? 211LL : g;   /* the shares of a row: at most G / R, of 4096 or more */
    long long per = (n + g - 1) / g;
    double dacc0;
    float acc1;
    double dacc;
    float acc;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 5LL * g; blk += GPUIR_GRID_BLOCKS) {
        long long o = blk / g, j0 = o * n + (blk - o * g) * per, je = o * n + n;
        long long jn = j0 + per < je ? j0 + per : je, share = jn > j0 ? jn - j0 : 0;
        dacc0 = 0.0;
        acc1 = -GPUIR_INF;
        {
            long long jj0 = t;
            for (; jj0 + 768LL < share; jj0 += 1024LL) {
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) {
                    long long jj = jj0 + u * 256LL;
                    long long i = (long long)(j0 + jj);
                    float v0 = y_[i];
                    /* op 145: reduce_mean (line 40) */
                    dacc0 += (double)(float)v0;
                    /* op 146: reduce_max (line 42) */
                    acc1 = gpuir_fmax(acc1, (float)v0);
                }
            }
            for (long long jj = jj0; jj < share; jj += 256) {
                long long i = (long long)(j0 + jj);
                float v1 = y_[i];
                /* op 145: reduce_mean (line 40) */
                dacc0 += (double)(float)v1;
                /* op 146: reduce_max (line 42) */
                acc1 = gpuir_fmax(acc1, (float)v1);
            }
        }
        dacc = dacc0;
        for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        if ((t & 31) == 0) dred[t >> 5] = dacc;
        GPUIR_SYNC();
        if (t < 32) {
            dacc = t < 8 ? dred[t] : 0.0;
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        }
        if (t == 0) gpuir_put2(&partials_[2 * (0LL + blk)], dacc);
        GPUIR_SYNC();
        acc = acc1;
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 8 ? red[t] : -GPUIR_INF;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        }
        if (t == 0) gpuir_put2(&partials_[2 * (1056LL + blk)], (double)acc);
        GPUIR_SYNC();
        GPUIR_WS_FENCE();
        GPUIR_SYNC();
        if (t == 0) ticket[0] = (unsigned)GPUIR_WS_TICKET(&counters_[o]);
        GPUIR_SYNC();
        if (ticket[0] == (unsigned)(g - 1)) {
            GPUIR_WS_FENCE();
            dacc = 0.0;
            for (long long q = t; q < g; q += 256) dacc += gpuir_get2(&((volatile float *)partials_)[2 * (0LL + o * g + q)]);
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
            if ((t & 31) == 0) dred[t >> 5] = dacc;
            GPUIR_SYNC();
            if (t < 32) {
                dacc = t < 8 ? dred[t] : 0.0;
                for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
            }
            float v2 = (float)(dacc / (double)y_d1_);     /* thread 0's */
            GPUIR_SYNC();
            acc = -GPUIR_INF;
            for (long long q = t; q < g; q += 256) acc = gpuir_fmax(acc, (float)gpuir_get2(&((volatile float *)partials_)[2 * (1056LL + o * g + q)]));
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
            if ((t & 31) == 0) red[t >> 5] = acc;
            GPUIR_SYNC();
            if (t < 32) {
                acc = t < 8 ? red[t] : -GPUIR_INF;
                for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
            }
            float v3 = acc;     /* thread 0's */
            GPUIR_SYNC();
            if (t == 0) {
                out2_[o] = v2;
                out0_[o] = v3;
            }
        }
        GPUIR_SYNC();
    }
}

/* @rows_k1_zero: 256 threads per block */
GPUIR_KERNEL gpuir_k_rows_k1_zero(GPUIR_LANE int *counters_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 5LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 148: constant */
        int v0 = 0LL;
        counters_[i] = v0;
    }
}

/* @rows_k2: 32 threads per block */
GPUIR_KERNEL gpuir_k_rows_k2(GPUIR_LANE const float *y_, float *out3_, long long y_d1_, long long out3_d0_) {
    GPUIR_SHARED(double, dred, 32, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long o = GPUIR_BLOCK_RANK; o < out3_d0_; o += GPUIR_GRID_BLOCKS) {
        double dacc = 0.0;
        for (long long j = t; j < 5LL; j += 32) {
            long long i = (long long)((o % y_d1_) + (j % 5) * y_d1_);
            float v0 = y_[i];
            /* op 150: reduce_mean (line 41) */
            dacc += (double)(float)v0;
        }
        for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        if ((t & 31) == 0) dred[t >> 5] = dacc;
        GPUIR_SYNC();
        if (t < 32) {
            dacc = t < 1 ? dred[t] : 0.0;
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        }
        if (t == 0) out3_[o] = (float)(dacc / 5.0);
        GPUIR_SYNC();
    }
}

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

/* @rows_k3: 256 threads per block */
GPUIR_KERNEL gpuir_k_rows_k3(GPUIR_LANE const float *y_, const float *in0_, float *out0_, float *partials_, int *counters_, long long y_d1_) {
    GPUIR_SHARED(double, dred, 32, 0);
    GPUIR_SHARED(float, red, 32, 256);
    GPUIR_SHARED(unsigned, ticket, 1, 384);
    int t = GPUIR_THREAD_RANK;
    long long n = y_d1_, g = (n + 4095LL) / 4096LL;
    g = g < 1 ? 1 : g > 211LL ? 211LL : g;   /* the shares of a row: at most G / R, of 4096 or more */
    long long per = (n + g - 1) / g;
    double dacc0;
    double dacc;
    for (long long blk = GPUIR_BLOCK_RANK; blk < 5LL * g; blk += GPUIR_GRID_BLOCKS) {
        long long o = blk / g, j0 = o * n + (blk - o * g) * per, je = o * n + n;
        long long jn = j0 + per < je ? j0 + per : je, share = jn > j0 ? jn - j0 : 0;
        dacc0 = 0.0;
        {
            long long jj0 = t;
            for (; jj0 + 768LL < share; jj0 += 1024LL) {
                GPUIR_UNROLL
                for (int u = 0; u < 4; u++) {
                    long long jj = jj0 + u * 256LL;
                    long long i = (long long)(j0 + jj);
                    /* op 153: sub (line 42) */
                    float v0 = y_[i];
                    float v1 = in0_[i / y_d1_];
                    float v2 = v0 - v1;
                    /* op 154: exp (line 42) */
                    float v3 = expf(v2);
                    /* op 155: reduce_sum (line 42) */
                    dacc0 += (double)(float)v3;
                }
            }
            for (long long jj = jj0; jj < share; jj += 256) {
                long long i = (long long)(j0 + jj);
                /* op 153: sub (line 42) */
                float v4 = y_[i];
                float v5 = in0_[i / y_d1_];
                float v6 = v4 - v5;
                /* op 154: exp (line 42) */
                float v7 = expf(v6);
                /* op 155: reduce_sum (line 42) */
                dacc0 += (double)(float)v7;
            }
        }
        dacc = dacc0;
        for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        if ((t & 31) == 0) dred[t >> 5] = dacc;
        GPUIR_SYNC();
        if (t < 32) {
            dacc = t < 8 ? dred[t] : 0.0;
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
        }
        if (t == 0) gpuir_put2(&partials_[2 * (0LL + blk)], dacc);
        GPUIR_SYNC();
        GPUIR_WS_FENCE();
        GPUIR_SYNC();
        if (t == 0) ticket[0] = (unsigned)GPUIR_WS_TICKET(&counters_[o]);
        GPUIR_SYNC();
        if (ticket[0] == (unsigned)(g - 1)) {
            GPUIR_WS_FENCE();
            dacc = 0.0;
            for (long long q = t; q < g; q += 256) dacc += gpuir_get2(&((volatile float *)partials_)[2 * (0LL + o * g + q)]);
            for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
            if ((t & 31) == 0) dred[t >> 5] = dacc;
            GPUIR_SYNC();
            if (t < 32) {
                dacc = t < 8 ? dred[t] : 0.0;
                for (int d = 16; d > 0; d >>= 1) dacc += GPUIR_SHFL_DOWN_F64(dacc, d);
            }
            float v8 = (float)dacc;     /* thread 0's */
            GPUIR_SYNC();
            if (t == 0) {
                out0_[o] = v8;
            }
        }
        GPUIR_SYNC();
    }
}

/* @rows_k3_zero: 256 threads per block */
GPUIR_KERNEL gpuir_k_rows_k3_zero(GPUIR_LANE int *counters_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < 5LL; ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        int i = (int)ii;
        /* op 157: constant */
        int v0 = 0LL;
        counters_[i] = v0;
    }
}

/* @rows_k4: 256 threads per block */
GPUIR_KERNEL gpuir_k_rows_k4(GPUIR_LANE const float *y_, const float *in0_, const float *in1_, float *out4_, long long y_d1_, long long out4_d1_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < (5LL * out4_d1_); ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long i = (long long)ii;
        /* op 159: sub (line 42) */
        float v0 = y_[i];
        float v1 = in0_[i / out4_d1_];
        float v2 = v0 - v1;
        /* op 160: exp (line 42) */
        float v3 = expf(v2);
        /* op 161: div (line 42) */
        float v4 = in1_[i / out4_d1_];
        float v5 = v3 / v4;
        out4_[i] = v5;
    }
}

/* @int_rows_k0: 32 threads per block */
GPUIR_KERNEL gpuir_k_int_rows_k0(GPUIR_LANE const int *x_, int *out0_, long long x_d0_, long long out0_d0_) {
    GPUIR_SHARED(long long, red, 32, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long o = GPUIR_BLOCK_RANK; o < out0_d0_; o += GPUIR_GRID_BLOCKS) {
        long long acc = 0LL;
        for (long long j = t; j < 6LL; j += 32) {
            long long i = (long long)((j % 6) + (o % x_d0_) * 6);
            int v0 = x_[i];
            /* op 180: reduce_sum (line 47) */
            acc = (long long)((unsigned long long)acc + (unsigned long long)(long long)v0);
        }
        for (int d = 16; d > 0; d >>= 1) { long long other = GPUIR_SHFL_DOWN_I64(acc, d); acc = (long long)((unsigned long long)acc + (unsigned long long)other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : 0LL;
            for (int d = 16; d > 0; d >>= 1) { long long other = GPUIR_SHFL_DOWN_I64(acc, d); acc = (long long)((unsigned long long)acc + (unsigned long long)other); }
        }
        if (t == 0) out0_[o] = (int)(unsigned)(unsigned long long)(acc);
        GPUIR_SYNC();
    }
}

/* @int_rows_k1: 32 threads per block */
GPUIR_KERNEL gpuir_k_int_rows_k1(GPUIR_LANE const int *x_, int *out1_, long long x_d0_, long long out1_d0_) {
    GPUIR_SHARED(long long, red, 32, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long o = GPUIR_BLOCK_RANK; o < out1_d0_; o += GPUIR_GRID_BLOCKS) {
        long long acc = 0LL;
        for (long long j = t; j < 6LL; j += 32) {
            long long i = (long long)((j % 6) + (o % x_d0_) * 6);
            int v0 = x_[i];
            /* op 182: reduce_mean (line 48) */
            acc = (long long)((unsigned long long)acc + (unsigned long long)(long long)v0);
        }
        for (int d = 16; d > 0; d >>= 1) { long long other = GPUIR_SHFL_DOWN_I64(acc, d); acc = (long long)((unsigned long long)acc + (unsigned long long)other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : 0LL;
            for (int d = 16; d > 0; d >>= 1) { long long other = GPUIR_SHFL_DOWN_I64(acc, d); acc = (long long)((unsigned long long)acc + (unsigned long long)other); }
        }
        if (t == 0) out1_[o] = (int)(unsigned)(unsigned long long)(acc / 6LL);
        GPUIR_SYNC();
    }
}

/* @int_rows_k2: 32 threads per block */
GPUIR_KERNEL gpuir_k_int_rows_k2(GPUIR_LANE const float *z_, float *out2_, long long z_d0_, long long out2_d0_) {
    /* op 184: softmax (line 49) */
    GPUIR_SHARED(float, red, 33, 0);
    int t = GPUIR_THREAD_RANK;
    for (long long row = GPUIR_BLOCK_RANK; row < z_d0_; row += GPUIR_GRID_BLOCKS) {
        long long base = row * 64LL;
        float acc = -GPUIR_INF;
        float4 v[1];
        for (int r = 0; r < 1; r++) {
            int c = t + r * 32;
            v[r] = c < 16 ? ((const float4 *)(z_ + base))[c] : GPUIR_FLOAT4(-GPUIR_INF, -GPUIR_INF, -GPUIR_INF, -GPUIR_INF);
            acc = gpuir_fmax(acc, gpuir_fmax(gpuir_fmax(v[r].x, v[r].y), gpuir_fmax(v[r].z, v[r].w)));
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : -GPUIR_INF;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = gpuir_fmax(acc, other); }
        }
        if (t == 0) red[32] = acc;
        GPUIR_SYNC();
        acc = red[32];
        float mx = acc;
        acc = 0.0f;
        for (int r = 0; r < 1; r++) {
            if (t + r * 32 < 16) {
                v[r].x = expf(v[r].x - mx); v[r].y = expf(v[r].y - mx);
                v[r].z = expf(v[r].z - mx); v[r].w = expf(v[r].w - mx);
                acc += (v[r].x + v[r].y) + (v[r].z + v[r].w);
            }
        }
        for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = acc + other; }
        if ((t & 31) == 0) red[t >> 5] = acc;
        GPUIR_SYNC();
        if (t < 32) {
            acc = t < 1 ? red[t] : 0.0f;
            for (int d = 16; d > 0; d >>= 1) { float other = GPUIR_SHFL_DOWN_F32(acc, d); acc = acc + other; }
        }
        if (t == 0) red[32] = acc;
        GPUIR_SYNC();
        acc = red[32];
        for (int r = 0; r < 1; r++) {
            int c = t + r * 32;
            if (c < 16) ((float4 *)(out2_ + base))[c] = GPUIR_FLOAT4(v[r].x / acc, v[r].y / acc, v[r].z / acc, v[r].w / acc);
        }
    }
}

/* @mm_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_mm_k0(GPUIR_LANE const float *x_, const float *w_, const float *b_, float *out0_, long long x_d0_, long long w_d1_, long long b_d0_, long long out0_d0_, long long out0_d1_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < (((out0_d1_ + 63) / 64) * ((out0_d0_ + 63) / 64)); tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % ((out0_d1_ + 63) / 64), tm = tile / ((out0_d1_ + 63) / 64) % ((out0_d0_ + 63) / 64), batch = tile / (((out0_d1_ + 63) / 64) * ((out0_d0_ + 63) / 64));
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * (out0_d0_ * 8LL), b0 = batch * (8LL * out0_d1_);
        for (long long k0 = 0; k0 < 8LL; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < out0_d0_ && gk < 8LL ? x_[a0 + gm * 8LL + gk * 1LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < 8LL && gn < out0_d1_ ? w_[b0 + gk * out0_d1_ + gn * 1LL] : (float)0;
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
            if (e >= 4096 || gm >= out0_d0_ || gn >= out0_d1_) continue;
            long long i = (long long)(batch * (out0_d0_ * out0_d1_) + gm * out0_d1_ + gn);
            /* op 189: matmul (line 54) */
            float v0 = (float)acc[r];
            /* op 190: add (line 55) */
            float v1 = b_[i % out0_d1_];
            float v2 = v0 + v1;
            /* op 191: gelu (line 56) */
            float v3 = gpuir_gelu(v2);
            out0_[i] = v3;
        }
    }
}

/* @bmm_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_bmm_k0(GPUIR_LANE const float *x_, const float *w_, float *out0_, long long x_d0_, long long x_d2_, long long w_d0_, long long w_d1_, long long out0_d0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < out0_d0_; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 1LL, tm = tile / 1LL % 1LL, batch = tile / 1LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * (3LL * x_d2_), b0 = batch * (x_d2_ * 5LL);
        for (long long k0 = 0; k0 < x_d2_; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 3LL && gk < x_d2_ ? x_[a0 + gm * x_d2_ + gk * 1LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < x_d2_ && gn < 5LL ? w_[b0 + gk * 5LL + gn * 1LL] : (float)0;
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
            if (e >= 4096 || gm >= 3LL || gn >= 5LL) continue;
            long long i = (long long)(batch * 15LL + gm * 5LL + gn);
            /* op 194: matmul (line 61) */
            float v0 = (float)acc[r];
            out0_[i] = v0;
        }
    }
}

/* @tmm_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_tmm_k0(GPUIR_LANE const float *x_, const float *w_, float *out0_, long long x_d0_, long long w_d0_) {
    GPUIR_SHARED(float, as, 1024, 0);
    GPUIR_SHARED(float, bs, 1024, 4096);
    int t = GPUIR_THREAD_RANK;
    for (long long tile = GPUIR_BLOCK_RANK; tile < 1LL; tile += GPUIR_GRID_BLOCKS) {
        long long tn = tile % 1LL, tm = tile / 1LL % 1LL, batch = tile / 1LL;
        float acc[16];
        GPUIR_UNROLL
        for (int r = 0; r < 16; r++) acc[r] = 0;
        long long a0 = batch * (8LL * x_d0_), b0 = batch * (x_d0_ * 8LL);
        for (long long k0 = 0; k0 < x_d0_; k0 += 16) {
            for (int e = t; e < 1024; e += 256) {
                long long gm = tm * 64 + e / 16, gk = k0 + e % 16;
                as[e] = gm < 8LL && gk < x_d0_ ? x_[a0 + gm * 1LL + gk * 8LL] : (float)0;
            }
            for (int e = t; e < 1024; e += 256) {
                long long gk = k0 + e / 64, gn = tn * 64 + e % 64;
                bs[e] = gk < x_d0_ && gn < 8LL ? w_[b0 + gk * 8LL + gn * 1LL] : (float)0;
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
            if (e >= 4096 || gm >= 8LL || gn >= 8LL) continue;
            long long i = (long long)(batch * 64LL + gm * 8LL + gn);
            /* op 197: matmul (line 66) */
            float v0 = (float)acc[r];
            out0_[i] = v0;
        }
    }
}

/* @tr_k0: 256 threads per block */
GPUIR_KERNEL gpuir_k_tr_k0(GPUIR_LANE const float *x_, float *out0_, long long x_d0_, long long out0_d1_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < (8LL * out0_d1_); ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long i = (long long)ii;
        /* op 200: transpose (line 71) */
        float v0 = x_[(i % out0_d1_) * 8 + (i / out0_d1_ % 8)];
        out0_[i] = v0;
    }
}

/* @tr_k1: 256 threads per block */
GPUIR_KERNEL gpuir_k_tr_k1(GPUIR_LANE float *out0_, long long out0_d1_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < (8LL * out0_d1_); ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long i = (long long)ii;
        /* op 202: exp (line 72) */
        float v0 = out0_[i];
        float v1 = expf(v0);
        out0_[i] = v1;
    }
}

/* @tr_k2: 256 threads per block */
GPUIR_KERNEL gpuir_k_tr_k2(GPUIR_LANE const float *y_, float *out1_, long long y_d1_, long long out1_d0_) {
    GPUIR_NO_UNROLL
    for (long long ii = GPUIR_BLOCK_RANK * GPUIR_BLOCK_THREADS + GPUIR_THREAD_RANK; ii < (6LL * out1_d0_); ii += GPUIR_GRID_BLOCKS * GPUIR_BLOCK_THREADS) {
        long long i = (long long)ii;
        /* op 204: transpose (line 73) */
        float v0 = y_[(i % 2) * (3LL * y_d1_) + (i / 2 % 3) + (i / 6 % out1_d0_) * 3];
        out1_[i] = v0;
    }
}

#ifdef GPUIR_EMU
static void gpuir_k_chain_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_chain_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3], *(long long *)p[4], *(long long *)p[5], *(long long *)p[6]);
}
static void gpuir_k_square_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_square_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(long long *)p[3], *(long long *)p[4], *(long long *)p[5], *(long long *)p[6], *(long long *)p[7]);
}
static void gpuir_k_half_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_half_k0(l, *(unsigned short **)p[0], *(unsigned short **)p[1], *(unsigned short **)p[2], *(long long *)p[3], *(long long *)p[4]);
}
static void gpuir_k_ints_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_ints_k0(l, *(int **)p[0], *(int **)p[1], *(int **)p[2], *(long long *)p[3], *(long long *)p[4], *(long long *)p[5]);
}
static void gpuir_k_mixed_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mixed_k0(l, *(float **)p[0], *(float **)p[1]);
}
static void gpuir_k_mixed_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mixed_k1(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(long long *)p[3], *(long long *)p[4]);
}
static void gpuir_k_rows_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_rows_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(long long *)p[3], *(long long *)p[4], *(long long *)p[5]);
}
static void gpuir_k_rows_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_rows_k1(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3], *(int **)p[4], *(long long *)p[5]);
}
static void gpuir_k_rows_k1_zero_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_rows_k1_zero(l, *(int **)p[0]);
}
static void gpuir_k_rows_k2_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_rows_k2(l, *(float **)p[0], *(float **)p[1], *(long long *)p[2], *(long long *)p[3]);
}
static void gpuir_k_rows_k3_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_rows_k3(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3], *(int **)p[4], *(long long *)p[5]);
}
static void gpuir_k_rows_k3_zero_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_rows_k3_zero(l, *(int **)p[0]);
}
static void gpuir_k_rows_k4_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_rows_k4(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3], *(long long *)p[4], *(long long *)p[5]);
}
static void gpuir_k_int_rows_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_int_rows_k0(l, *(int **)p[0], *(int **)p[1], *(long long *)p[2], *(long long *)p[3]);
}
static void gpuir_k_int_rows_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_int_rows_k1(l, *(int **)p[0], *(int **)p[1], *(long long *)p[2], *(long long *)p[3]);
}
static void gpuir_k_int_rows_k2_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_int_rows_k2(l, *(float **)p[0], *(float **)p[1], *(long long *)p[2], *(long long *)p[3]);
}
static void gpuir_k_mm_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_mm_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(float **)p[3], *(long long *)p[4], *(long long *)p[5], *(long long *)p[6], *(long long *)p[7], *(long long *)p[8]);
}
static void gpuir_k_bmm_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_bmm_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(long long *)p[3], *(long long *)p[4], *(long long *)p[5], *(long long *)p[6], *(long long *)p[7]);
}
static void gpuir_k_tmm_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_tmm_k0(l, *(float **)p[0], *(float **)p[1], *(float **)p[2], *(long long *)p[3], *(long long *)p[4]);
}
static void gpuir_k_tr_k0_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_tr_k0(l, *(float **)p[0], *(float **)p[1], *(long long *)p[2], *(long long *)p[3]);
}
static void gpuir_k_tr_k1_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_tr_k1(l, *(float **)p[0], *(long long *)p[1]);
}
static void gpuir_k_tr_k2_emu(gpuir_emu_lane *l, void **p) {
    gpuir_k_tr_k2(l, *(float **)p[0], *(float **)p[1], *(long long *)p[2], *(long long *)p[3]);
}
const gpuir_emu_kernel gpuir_emu_kernels[] = {
    {"gpuir_k_chain_k0", gpuir_k_chain_k0_emu, 0u, 0u, 0, 4u, 0u, 0u},
    {"gpuir_k_square_k0", gpuir_k_square_k0_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_half_k0", gpuir_k_half_k0_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_ints_k0", gpuir_k_ints_k0_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_mixed_k0", gpuir_k_mixed_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_mixed_k1", gpuir_k_mixed_k1_emu, 0u, 0u, 0, 3u, 0u, 0u},
    {"gpuir_k_rows_k0", gpuir_k_rows_k0_emu, 396u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_rows_k1", gpuir_k_rows_k1_emu, 388u, 0u, 1, 5u, 0u, 0u},
    {"gpuir_k_rows_k1_zero", gpuir_k_rows_k1_zero_emu, 0u, 0u, 0, 1u, 0u, 0u},
    {"gpuir_k_rows_k2", gpuir_k_rows_k2_emu, 256u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_rows_k3", gpuir_k_rows_k3_emu, 388u, 0u, 1, 5u, 0u, 0u},
    {"gpuir_k_rows_k3_zero", gpuir_k_rows_k3_zero_emu, 0u, 0u, 0, 1u, 0u, 0u},
    {"gpuir_k_rows_k4", gpuir_k_rows_k4_emu, 0u, 0u, 0, 4u, 0u, 0u},
    {"gpuir_k_int_rows_k0", gpuir_k_int_rows_k0_emu, 256u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_int_rows_k1", gpuir_k_int_rows_k1_emu, 256u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_int_rows_k2", gpuir_k_int_rows_k2_emu, 132u, 0u, 1, 2u, 0u, 0u},
    {"gpuir_k_mm_k0", gpuir_k_mm_k0_emu, 8192u, 0u, 1, 4u, 0u, 0u},
    {"gpuir_k_bmm_k0", gpuir_k_bmm_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_tmm_k0", gpuir_k_tmm_k0_emu, 8192u, 0u, 1, 3u, 0u, 0u},
    {"gpuir_k_tr_k0", gpuir_k_tr_k0_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {"gpuir_k_tr_k1", gpuir_k_tr_k1_emu, 0u, 0u, 0, 1u, 0u, 0u},
    {"gpuir_k_tr_k2", gpuir_k_tr_k2_emu, 0u, 0u, 0, 2u, 0u, 0u},
    {0, 0, 0, 0, 0, 0, 0, 0}
};
#endif

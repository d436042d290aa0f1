/* f16 / bf16 conversions: round to nearest even against hand-written bit
   patterns, exhaustive round trips and midpoint checks, and the rounding of
   gpuir_array_set (directly from double, never through float). */
#include "../../gpuir.h"
#include "../check.h"

#include <float.h>
#include <stdint.h>

static float f_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t bits_f(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

#define CHECK_H(got, want)                                                              \
    do {                                                                                \
        unsigned check__g = (got), check__w = (want);                                   \
        if (check__g != check__w) {                                                     \
            fprintf(stderr, "%s:%d: %s: got 0x%04x, want 0x%04x\n", __FILE__, __LINE__, \
                    #got, check__g, check__w);                                          \
            check__failed = 1;                                                          \
        }                                                                               \
    } while (0)

/* Exact float equality including the sign of zero. */
#define CHECK_F(got, want)                                                                 \
    do {                                                                                   \
        float check__g = (got), check__w = (want);                                         \
        if (bits_f(check__g) != bits_f(check__w)) {                                        \
            fprintf(stderr, "%s:%d: %s: got %.9g (0x%08x), want %.9g (0x%08x)\n", __FILE__, \
                    __LINE__, #got, check__g, (unsigned)bits_f(check__g), check__w,        \
                    (unsigned)bits_f(check__w));                                           \
            check__failed = 1;                                                             \
        }                                                                                  \
    } while (0)

static bool f16_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x03FF); }
static bool bf16_is_nan(uint16_t h) { return (h & 0x7F80) == 0x7F80 && (h & 0x007F); }

/* ---- f16 ---- */

TEST(f16_zero_and_sign) {
    CHECK_H(gpuir_f32_to_f16(0.0f), 0x0000);
    CHECK_H(gpuir_f32_to_f16(-0.0f), 0x8000);
    CHECK_F(gpuir_f16_to_f32(0x0000), 0.0f);
    CHECK_F(gpuir_f16_to_f32(0x8000), -0.0f);
    CHECK(signbit(gpuir_f16_to_f32(0x8000)));
    /* far below the smallest subnormal: zero, sign kept */
    CHECK_H(gpuir_f32_to_f16(1e-30f), 0x0000);
    CHECK_H(gpuir_f32_to_f16(-1e-30f), 0x8000);
    CHECK_H(gpuir_f32_to_f16(f_bits(0x00000001)), 0x0000);   /* float's smallest subnormal */
    CHECK_H(gpuir_f32_to_f16(ldexpf(1.0f, -26)), 0x0000);
}

TEST(f16_ordinary_values) {
    CHECK_H(gpuir_f32_to_f16(1.0f), 0x3C00);
    CHECK_H(gpuir_f32_to_f16(-2.0f), 0xC000);
    CHECK_H(gpuir_f32_to_f16(0.5f), 0x3800);
    CHECK_H(gpuir_f32_to_f16(1.5f), 0x3E00);
    CHECK_H(gpuir_f32_to_f16(1024.0f), 0x6400);
    CHECK_H(gpuir_f32_to_f16(2048.0f + 1.0f), 0x6800);   /* 2049: tie, even is 2048 */
    CHECK_H(gpuir_f32_to_f16(2048.0f + 3.0f), 0x6802);   /* 2051: tie, even is 2052 */
    CHECK_H(gpuir_f32_to_f16(0.1f), 0x2E66);
    CHECK_H(gpuir_f32_to_f16(1.0f / 3.0f), 0x3555);
    CHECK_F(gpuir_f16_to_f32(0x3C00), 1.0f);
    CHECK_F(gpuir_f16_to_f32(0xC000), -2.0f);
    CHECK_F(gpuir_f16_to_f32(0x3555), 0.333251953125f);
    CHECK_F(gpuir_f16_to_f32(0x2E66), 0.0999755859375f);
    CHECK_F(gpuir_f16_to_f32(0x3C01), 1.0009765625f);
}

TEST(f16_subnormals_and_smallest_normal) {
    float tiny = ldexpf(1.0f, -24);                      /* smallest subnormal */
    CHECK_H(gpuir_f32_to_f16(tiny), 0x0001);
    CHECK_H(gpuir_f32_to_f16(-tiny), 0x8001);
    CHECK_H(gpuir_f32_to_f16(1023.0f * tiny), 0x03FF);   /* largest subnormal */
    CHECK_H(gpuir_f32_to_f16(ldexpf(1.0f, -14)), 0x0400); /* smallest normal */
    CHECK_H(gpuir_f32_to_f16(-ldexpf(1.0f, -14)), 0x8400);
    CHECK_F(gpuir_f16_to_f32(0x0001), ldexpf(1.0f, -24));
    CHECK_F(gpuir_f16_to_f32(0x8001), -ldexpf(1.0f, -24));
    CHECK_F(gpuir_f16_to_f32(0x03FF), 1023.0f * ldexpf(1.0f, -24));
    CHECK_F(gpuir_f16_to_f32(0x0400), ldexpf(1.0f, -14));
    CHECK_F(gpuir_f16_to_f32(0x0200), ldexpf(1.0f, -15));
}

TEST(f16_rounding_into_subnormals) {
    float tiny = ldexpf(1.0f, -24);
    /* half the smallest subnormal: a tie between 0 and 0x0001, even is 0 */
    CHECK_H(gpuir_f32_to_f16(0.5f * tiny), 0x0000);
    CHECK_H(gpuir_f32_to_f16(-0.5f * tiny), 0x8000);
    /* just above half: up to the smallest subnormal */
    CHECK_H(gpuir_f32_to_f16(nextafterf(0.5f * tiny, 1.0f)), 0x0001);
    CHECK_H(gpuir_f32_to_f16(nextafterf(0.5f * tiny, 0.0f)), 0x0000);
    /* 1.5 ulps: tie between 1 and 2, even is 2; 2.5: tie, even is 2 */
    CHECK_H(gpuir_f32_to_f16(1.5f * tiny), 0x0002);
    CHECK_H(gpuir_f32_to_f16(2.5f * tiny), 0x0002);
    CHECK_H(gpuir_f32_to_f16(3.5f * tiny), 0x0004);
    CHECK_H(gpuir_f32_to_f16(nextafterf(2.5f * tiny, 1.0f)), 0x0003);
    /* a normal float that becomes a subnormal f16 */
    CHECK_H(gpuir_f32_to_f16(ldexpf(1.0f, -20)), 0x0010);
    CHECK_H(gpuir_f32_to_f16(ldexpf(1.0f, -20) * 1.03125f), 0x0010);  /* 16.5 ulps: tie, 16 */
    CHECK_H(gpuir_f32_to_f16(ldexpf(1.0f, -20) * 1.09375f), 0x0012);  /* 17.5 ulps: tie, 18 */
}

TEST(f16_subnormal_up_to_smallest_normal) {
    float tiny = ldexpf(1.0f, -24);
    /* between the largest subnormal 0x03FF and the smallest normal 0x0400:
       the midpoint is a tie and the even one is 0x0400 */
    CHECK_H(gpuir_f32_to_f16(1023.5f * tiny), 0x0400);
    CHECK_H(gpuir_f32_to_f16(nextafterf(1023.5f * tiny, 0.0f)), 0x03FF);
    CHECK_H(gpuir_f32_to_f16(nextafterf(1023.5f * tiny, 1.0f)), 0x0400);
    /* just under the smallest normal rounds up to it */
    CHECK_H(gpuir_f32_to_f16(nextafterf(ldexpf(1.0f, -14), 0.0f)), 0x0400);
    CHECK_H(gpuir_f32_to_f16(-nextafterf(ldexpf(1.0f, -14), 0.0f)), 0x8400);
    /* 1022.5 ulps: tie between 0x03FE and 0x03FF, even is 0x03FE */
    CHECK_H(gpuir_f32_to_f16(1022.5f * tiny), 0x03FE);
}

TEST(f16_max_and_overflow) {
    CHECK_H(gpuir_f32_to_f16(65504.0f), 0x7BFF);
    CHECK_H(gpuir_f32_to_f16(-65504.0f), 0xFBFF);
    CHECK_F(gpuir_f16_to_f32(0x7BFF), 65504.0f);
    CHECK_F(gpuir_f16_to_f32(0xFBFF), -65504.0f);
    /* 65520 is the midpoint of 65504 and 65536 (= inf): even is inf */
    CHECK_H(gpuir_f32_to_f16(65520.0f), 0x7C00);
    CHECK_H(gpuir_f32_to_f16(-65520.0f), 0xFC00);
    CHECK_H(gpuir_f32_to_f16(65519.99f), 0x7BFF);
    CHECK_H(gpuir_f32_to_f16(nextafterf(65520.0f, 0.0f)), 0x7BFF);
    CHECK_H(gpuir_f32_to_f16(-nextafterf(65520.0f, 0.0f)), 0xFBFF);
    CHECK_H(gpuir_f32_to_f16(65512.0f), 0x7BFF);
    CHECK_H(gpuir_f32_to_f16(65536.0f), 0x7C00);
    CHECK_H(gpuir_f32_to_f16(1e10f), 0x7C00);
    CHECK_H(gpuir_f32_to_f16(FLT_MAX), 0x7C00);
    CHECK_H(gpuir_f32_to_f16(-FLT_MAX), 0xFC00);
}

TEST(f16_inf_nan) {
    CHECK_H(gpuir_f32_to_f16(INFINITY), 0x7C00);
    CHECK_H(gpuir_f32_to_f16(-INFINITY), 0xFC00);
    CHECK_F(gpuir_f16_to_f32(0x7C00), INFINITY);
    CHECK_F(gpuir_f16_to_f32(0xFC00), -INFINITY);
    uint16_t n = gpuir_f32_to_f16(NAN);
    CHECK(f16_is_nan(n));
    CHECK((n & 0x0200) != 0);          /* quiet */
    CHECK((n & 0x8000) == 0);
    uint16_t nn = gpuir_f32_to_f16(-NAN);
    CHECK(f16_is_nan(nn));
    CHECK((nn & 0x0200) != 0);
    CHECK((nn & 0x8000) != 0);         /* sign kept */
    /* a signalling float NaN whose payload lives only in the low bits must
       not become inf */
    uint16_t s = gpuir_f32_to_f16(f_bits(0x7F800001));
    CHECK(f16_is_nan(s));
    CHECK((s & 0x0200) != 0);
    CHECK(isnan(gpuir_f16_to_f32(0x7E00)));
    CHECK(isnan(gpuir_f16_to_f32(0x7C01)));   /* signalling f16 NaN */
    CHECK(isnan(gpuir_f16_to_f32(0xFFFF)));
}

TEST(f16_ties_to_even) {
    /* 1 + 2^-11 is half an ulp above 1: even is 1.0 */
    CHECK_H(gpuir_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3C00);
    /* 1 + 3*2^-11 is between 1+2^-10 (odd) and 1+2^-9 (even) */
    CHECK_H(gpuir_f32_to_f16(1.0f + 3.0f * ldexpf(1.0f, -11)), 0x3C02);
    /* a hair above the tie goes up */
    CHECK_H(gpuir_f32_to_f16(1.0f + ldexpf(1.0f, -11) + ldexpf(1.0f, -23)), 0x3C01);
    CHECK_H(gpuir_f32_to_f16(1.0f + ldexpf(1.0f, -11) - ldexpf(1.0f, -24)), 0x3C00);
    CHECK_H(gpuir_f32_to_f16(-(1.0f + ldexpf(1.0f, -11))), 0xBC00);
    CHECK_H(gpuir_f32_to_f16(-(1.0f + 3.0f * ldexpf(1.0f, -11))), 0xBC02);
    /* a tie that carries into the next binade: 2 - 2^-11 -> 2.0 */
    CHECK_H(gpuir_f32_to_f16(2.0f - ldexpf(1.0f, -11)), 0x4000);
    CHECK_H(gpuir_f32_to_f16(2.0f - ldexpf(1.0f, -11) - ldexpf(1.0f, -23)), 0x3FFF);
}

/* Every f16 that is not NaN survives f16 -> f32 -> f16. */
TEST(f16_exhaustive_roundtrip) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        if (f16_is_nan((uint16_t)h)) {
            if (!isnan(gpuir_f16_to_f32((uint16_t)h))) bad++;
            continue;
        }
        uint16_t back = gpuir_f32_to_f16(gpuir_f16_to_f32((uint16_t)h));
        if (back != h) {
            if (bad++ < 5) fprintf(stderr, "f16 0x%04x -> %.9g -> 0x%04x\n", (unsigned)h,
                                   gpuir_f16_to_f32((uint16_t)h), (unsigned)back);
        }
    }
    CHECK(bad == 0);
}

/* For each pair of neighbouring finite f16 values a < b (and b = inf above
   65504): the midpoint rounds to the even one, and the floats on either
   side of it round to the nearer one. Both signs. */
TEST(f16_exhaustive_midpoints) {
    int bad = 0;
    for (uint32_t h = 0; h < 0x7C00; h++) {
        double a = (double)gpuir_f16_to_f32((uint16_t)h);
        double b = h + 1 == 0x7C00 ? 65536.0 : (double)gpuir_f16_to_f32((uint16_t)(h + 1));
        float mid = (float)((a + b) / 2);          /* exact: 12 significant bits */
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        for (int s = 0; s < 2; s++) {
            float sg = s ? -1.0f : 1.0f;
            uint16_t sb = s ? 0x8000 : 0;
            uint16_t got_mid = gpuir_f32_to_f16(sg * mid);
            uint16_t got_lo = gpuir_f32_to_f16(sg * nextafterf(mid, 0.0f));
            uint16_t got_hi = gpuir_f32_to_f16(sg * nextafterf(mid, INFINITY));
            uint16_t got_a = gpuir_f32_to_f16(sg * (float)a);
            if (got_mid != (even | sb) || got_lo != (h | sb) || got_hi != ((h + 1) | sb) ||
                got_a != (h | sb)) {
                if (bad++ < 5)
                    fprintf(stderr, "f16 pair 0x%04x sign %d: mid 0x%04x lo 0x%04x hi 0x%04x a 0x%04x\n",
                            (unsigned)h, s, got_mid, got_lo, got_hi, got_a);
            }
        }
    }
    CHECK(bad == 0);
}

/* ---- bf16 ---- */

TEST(bf16_basic_values) {
    CHECK_H(gpuir_f32_to_bf16(0.0f), 0x0000);
    CHECK_H(gpuir_f32_to_bf16(-0.0f), 0x8000);
    CHECK_F(gpuir_bf16_to_f32(0x8000), -0.0f);
    CHECK_H(gpuir_f32_to_bf16(1.0f), 0x3F80);
    CHECK_H(gpuir_f32_to_bf16(-2.0f), 0xC000);
    CHECK_H(gpuir_f32_to_bf16(0.1f), 0x3DCD);          /* 0x3DCCCCCD rounds up */
    CHECK_H(gpuir_f32_to_bf16(1.0f / 3.0f), 0x3EAB);   /* 0x3EAAAAAB rounds up */
    CHECK_F(gpuir_bf16_to_f32(0x3F80), 1.0f);
    CHECK_F(gpuir_bf16_to_f32(0x3DCD), f_bits(0x3DCD0000));
    CHECK_F(gpuir_bf16_to_f32(0x4049), 3.140625f);
    CHECK_H(gpuir_f32_to_bf16(3.14159265f), 0x4049);
}

TEST(bf16_ties_to_even) {
    CHECK_H(gpuir_f32_to_bf16(1.0f + ldexpf(1.0f, -8)), 0x3F80);
    CHECK_H(gpuir_f32_to_bf16(1.0f + 3.0f * ldexpf(1.0f, -8)), 0x3F82);
    CHECK_H(gpuir_f32_to_bf16(1.0f + ldexpf(1.0f, -8) + ldexpf(1.0f, -23)), 0x3F81);
    CHECK_H(gpuir_f32_to_bf16(1.0f + ldexpf(1.0f, -8) - ldexpf(1.0f, -24)), 0x3F80);
    CHECK_H(gpuir_f32_to_bf16(-(1.0f + 3.0f * ldexpf(1.0f, -8))), 0xBF82);
    CHECK_H(gpuir_f32_to_bf16(2.0f - ldexpf(1.0f, -8)), 0x4000);   /* carries into 2.0 */
}

TEST(bf16_subnormals_max_overflow) {
    /* smallest bf16 subnormal 2^-133, largest 127 * 2^-133, smallest normal 2^-126 */
    CHECK_H(gpuir_f32_to_bf16(ldexpf(1.0f, -133)), 0x0001);
    CHECK_H(gpuir_f32_to_bf16(127.0f * ldexpf(1.0f, -133)), 0x007F);
    CHECK_H(gpuir_f32_to_bf16(ldexpf(1.0f, -126)), 0x0080);
    CHECK_F(gpuir_bf16_to_f32(0x0001), ldexpf(1.0f, -133));
    CHECK_F(gpuir_bf16_to_f32(0x007F), 127.0f * ldexpf(1.0f, -133));
    CHECK_F(gpuir_bf16_to_f32(0x0080), ldexpf(1.0f, -126));
    CHECK_F(gpuir_bf16_to_f32(0x8001), -ldexpf(1.0f, -133));
    /* float subnormals below half the smallest bf16 subnormal vanish */
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x00000001)), 0x0000);
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x80000001)), 0x8000);
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x00008000)), 0x0000);   /* tie -> 0 */
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x00008001)), 0x0001);
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x00018000)), 0x0002);   /* tie -> even */
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x007F8000)), 0x0080);   /* up to the smallest normal */
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x007F7FFF)), 0x007F);
    /* max finite (2 - 2^-7) * 2^127 */
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x7F7F0000)), 0x7F7F);
    CHECK_F(gpuir_bf16_to_f32(0x7F7F), f_bits(0x7F7F0000));
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x7F7F7FFF)), 0x7F7F);
    CHECK_H(gpuir_f32_to_bf16(f_bits(0x7F7F8000)), 0x7F80);   /* tie: even is inf */
    CHECK_H(gpuir_f32_to_bf16(FLT_MAX), 0x7F80);
    CHECK_H(gpuir_f32_to_bf16(-FLT_MAX), 0xFF80);
    CHECK_H(gpuir_f32_to_bf16(INFINITY), 0x7F80);
    CHECK_H(gpuir_f32_to_bf16(-INFINITY), 0xFF80);
    CHECK_F(gpuir_bf16_to_f32(0x7F80), INFINITY);
    CHECK_F(gpuir_bf16_to_f32(0xFF80), -INFINITY);
}

TEST(bf16_nan) {
    uint16_t n = gpuir_f32_to_bf16(NAN), nn = gpuir_f32_to_bf16(-NAN);
    CHECK(bf16_is_nan(n) && (n & 0x0040) && !(n & 0x8000));
    CHECK(bf16_is_nan(nn) && (nn & 0x0040) && (nn & 0x8000));
    /* payload only in the low 16 bits: truncation would give inf */
    uint16_t s = gpuir_f32_to_bf16(f_bits(0x7F800001));
    CHECK(bf16_is_nan(s) && (s & 0x0040));
    uint16_t s2 = gpuir_f32_to_bf16(f_bits(0xFFFFFFFF));
    CHECK(bf16_is_nan(s2) && (s2 & 0x8000));
    CHECK(isnan(gpuir_bf16_to_f32(0x7FC0)));
    CHECK(isnan(gpuir_bf16_to_f32(0x7F81)));
}

/* Widening a NaN keeps its sign (as every IEEE conversion does), so that
   -NaN survives f32 -> f16 -> f32. */
TEST(nan_sign_kept_on_widen) {
    CHECK(isnan(gpuir_f16_to_f32(0xFE00)) && signbit(gpuir_f16_to_f32(0xFE00)));
    CHECK(isnan(gpuir_f16_to_f32(0x7E00)) && !signbit(gpuir_f16_to_f32(0x7E00)));
    CHECK(isnan(gpuir_bf16_to_f32(0xFFC0)) && signbit(gpuir_bf16_to_f32(0xFFC0)));
    CHECK(isnan(gpuir_bf16_to_f32(0x7FC0)) && !signbit(gpuir_bf16_to_f32(0x7FC0)));
}

TEST(bf16_exhaustive_roundtrip) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        if (bf16_is_nan((uint16_t)h)) {
            if (!isnan(gpuir_bf16_to_f32((uint16_t)h))) bad++;
            continue;
        }
        float f = gpuir_bf16_to_f32((uint16_t)h);
        if (bits_f(f) != h << 16) bad++;          /* bf16 is the top half of an f32 */
        uint16_t back = gpuir_f32_to_bf16(f);
        if (back != h && bad++ < 5)
            fprintf(stderr, "bf16 0x%04x -> %.9g -> 0x%04x\n", (unsigned)h, f, (unsigned)back);
    }
    CHECK(bad == 0);
}

/* bf16 rounding of an f32 is RNE of its top 16 bits; check that reference
   around every bf16 value (the low halves that decide rounding) and on a
   sparse sweep of all floats. */
static uint16_t bf16_ref(uint32_t u) {
    uint32_t r = u + 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(r >> 16);
}

TEST(bf16_against_bit_reference) {
    static const uint32_t lows[] = {0x0000, 0x0001, 0x3FFF, 0x7FFF, 0x8000, 0x8001, 0xC000, 0xFFFF};
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        for (size_t k = 0; k < sizeof lows / sizeof lows[0]; k++) {
            uint32_t u = h << 16 | lows[k];
            if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) continue;  /* NaN */
            uint16_t got = gpuir_f32_to_bf16(f_bits(u)), want = bf16_ref(u);
            if (got != want && bad++ < 5)
                fprintf(stderr, "bf16(0x%08x): got 0x%04x, want 0x%04x\n", (unsigned)u, got, want);
        }
    }
    for (uint64_t u = 0; u < 0x100000000ull; u += 65521) {   /* a prime stride */
        uint32_t v = (uint32_t)u;
        if ((v & 0x7F800000u) == 0x7F800000u && (v & 0x007FFFFFu)) continue;
        uint16_t got = gpuir_f32_to_bf16(f_bits(v)), want = bf16_ref(v);
        if (got != want && bad++ < 5)
            fprintf(stderr, "bf16(0x%08x): got 0x%04x, want 0x%04x\n", (unsigned)v, got, want);
    }
    CHECK(bad == 0);
}

/* ---- arrays: f16/bf16 stores round once, from double ---- */

static uint16_t elem16(const gpuir_array *a, size_t i) {
    uint16_t v;
    memcpy(&v, (const char *)a->data + 2 * i, 2);
    return v;
}

TEST(array_set_rounds_directly_from_double) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    int64_t dims[1] = {8};
    gpuir_array h, b;
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &h, GPUIR_F16, 1, dims), GPUIR_OK);
    CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &b, GPUIR_BF16, 1, dims), GPUIR_OK);
    if (!h.data || !b.data) { gpuir_ctx_destroy(ctx); CHECK(0); return; }

    /* Through float, 1 + 2^-11 + 2^-40 becomes the tie 1 + 2^-11 and then
       1.0; rounded directly it is above the tie and goes up. */
    double x = 1.0 + ldexp(1.0, -11) + ldexp(1.0, -40);
    CHECK_H(gpuir_f32_to_f16((float)x), 0x3C00);   /* the double-rounded answer */
    gpuir_array_set(&h, 0, x);
    CHECK_H(elem16(&h, 0), 0x3C01);
    CHECK(gpuir_array_get(&h, 0) == 1.0 + ldexp(1.0, -10));
    gpuir_array_set(&h, 1, -x);
    CHECK_H(elem16(&h, 1), 0xBC01);
    /* just below the tie: down */
    gpuir_array_set(&h, 2, 1.0 + ldexp(1.0, -11) - ldexp(1.0, -40));
    CHECK_H(elem16(&h, 2), 0x3C00);
    /* a subnormal tie made non-tie by bits float cannot hold */
    gpuir_array_set(&h, 3, ldexp(1.0, -25) + ldexp(1.0, -60));
    CHECK_H(elem16(&h, 3), 0x0001);
    gpuir_array_set(&h, 4, ldexp(1.0, -25));
    CHECK_H(elem16(&h, 4), 0x0000);
    /* overflow threshold from double */
    gpuir_array_set(&h, 5, 65520.0 - ldexp(1.0, -30));
    CHECK_H(elem16(&h, 5), 0x7BFF);
    gpuir_array_set(&h, 6, 65520.0);
    CHECK_H(elem16(&h, 6), 0x7C00);
    gpuir_array_set(&h, 7, 1e300);
    CHECK_H(elem16(&h, 7), 0x7C00);
    CHECK(gpuir_array_get(&h, 7) == INFINITY);

    double y = 1.0 + ldexp(1.0, -8) + ldexp(1.0, -40);
    CHECK_H(gpuir_f32_to_bf16((float)y), 0x3F80);
    gpuir_array_set(&b, 0, y);
    CHECK_H(elem16(&b, 0), 0x3F81);
    CHECK(gpuir_array_get(&b, 0) == 1.0 + ldexp(1.0, -7));
    gpuir_array_set(&b, 1, 1.0 + ldexp(1.0, -8));
    CHECK_H(elem16(&b, 1), 0x3F80);
    gpuir_array_set(&b, 2, 1.0 + 3 * ldexp(1.0, -8));
    CHECK_H(elem16(&b, 2), 0x3F82);
    gpuir_array_set(&b, 3, 1e300);                /* beyond float: inf, not UB */
    CHECK_H(elem16(&b, 3), 0x7F80);
    gpuir_array_set(&b, 4, -1e300);
    CHECK_H(elem16(&b, 4), 0xFF80);
    gpuir_array_set(&b, 5, ldexp(1.0, -134) + ldexp(1.0, -170));  /* above the subnormal tie */
    CHECK_H(elem16(&b, 5), 0x0001);
    gpuir_array_set(&b, 6, ldexp(1.0, -200));     /* below float's range: +0 */
    CHECK_H(elem16(&b, 6), 0x0000);
    gpuir_array_set(&b, 7, -ldexp(1.0, -200));
    CHECK_H(elem16(&b, 7), 0x8000);
    /* the bf16 overflow threshold in double: (2 - 2^-8) * 2^127 is a tie */
    gpuir_array_set(&b, 0, ldexp(2.0 - ldexp(1.0, -8), 127));
    CHECK_H(elem16(&b, 0), 0x7F80);
    gpuir_array_set(&b, 0, ldexp(2.0 - ldexp(1.0, -8), 127) * (1 - ldexp(1.0, -40)));
    CHECK_H(elem16(&b, 0), 0x7F7F);

    /* NaN through arrays */
    gpuir_array_set(&h, 0, NAN);
    CHECK(f16_is_nan(elem16(&h, 0)) && isnan(gpuir_array_get(&h, 0)));
    gpuir_array_set(&b, 0, -NAN);
    CHECK(bf16_is_nan(elem16(&b, 0)) && (elem16(&b, 0) & 0x8000));

    gpuir_array_release(&h);
    gpuir_array_release(&b);
    gpuir_ctx_destroy(ctx);
}

/* gpuir_array_fill_random's range as gpuir.h states it: [-1, 1] for floats
   (it said [-1, 1), but f16 and bf16 round the values nearest 1 to 1:
   about 1 in 8000 and 1 in 1000), [-16, 16] for ints. */
TEST(fill_random_stays_in_its_stated_range) {
    gpuir_ctx *ctx = gpuir_ctx_make(NULL);
    const gpuir_dtype dts[] = {GPUIR_F32, GPUIR_F16, GPUIR_BF16, GPUIR_I32, GPUIR_I64};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        gpuir_array a;
        int64_t n[1] = {100000};
        CHECK_RESULT(ctx, gpuir_array_alloc(ctx, &a, dts[k], 1, n), GPUIR_OK);
        gpuir_array_fill_random(&a, 7);
        double lim = gpuir_dtype_is_float(dts[k]) ? 1 : 16, lo = lim, hi = -lim;
        size_t ones = 0;
        for (size_t i = 0; i < (size_t)n[0]; i++) {
            double v = gpuir_array_get(&a, i);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            ones += gpuir_dtype_is_float(dts[k]) && v == 1.0;
        }
        CHECK(lo >= -lim && hi <= lim);
        if (dts[k] == GPUIR_BF16) CHECK(ones > 0);           /* 1 itself occurs: the range is closed */
        gpuir_array_release(&a);
    }
    gpuir_ctx_destroy(ctx);
}

int main(void) {
    RUN(f16_zero_and_sign);
    RUN(fill_random_stays_in_its_stated_range);
    RUN(f16_ordinary_values);
    RUN(f16_subnormals_and_smallest_normal);
    RUN(f16_rounding_into_subnormals);
    RUN(f16_subnormal_up_to_smallest_normal);
    RUN(f16_max_and_overflow);
    RUN(f16_inf_nan);
    RUN(f16_ties_to_even);
    RUN(f16_exhaustive_roundtrip);
    RUN(f16_exhaustive_midpoints);
    RUN(bf16_basic_values);
    RUN(bf16_ties_to_even);
    RUN(bf16_subnormals_max_overflow);
    RUN(bf16_nan);
    RUN(nan_sign_kept_on_widen);
    RUN(bf16_exhaustive_roundtrip);
    RUN(bf16_against_bit_reference);
    RUN(array_set_rounds_directly_from_double);
    return CHECK_EXIT();
}

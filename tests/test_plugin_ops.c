/*
 * test_plugin_ops.c - dlaccel/plugin_ops.h (the unary and binary ops'
 * arithmetic, shared by device kernels written in C, CUDA and NVRTC) gives
 * the bits of the cpu plugin's reference expressions
 * (plugins/cpu/elementwise_ops.h) for every op, both float types, and
 * many operands: signed zeros, infinities, NaN, denormals, the extremes
 * and a pseudo-random sweep. Both sides call the same libm here, so the
 * library functions must agree bit for bit too.
 *
 * Built with only api/ on the include path (as an installed plugin kit
 * header must stand alone) and without contraction.
 */
#include <dlaccel/plugin.h>
#include <dlaccel/plugin_ops.h>

#include "../plugins/cpu/elementwise_ops.h"

#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* ------------------------------------------------ the reference side */

typedef float (*ref_u32)(float, float, float);
typedef double (*ref_u64)(double, double, double);
typedef float (*ref_b32)(float, float);
typedef double (*ref_b64)(double, double);

/* Each expression's value converted to T, as the cpu plugin stores it. */
#define REF_UNARY(name, EXPR)                                                                      \
    static float ref_u32_##name(float x, float al, float be)                                       \
    {                                                                                              \
        return (float)(EXPR(x, al, be));                                                           \
    }                                                                                              \
    static double ref_u64_##name(double x, double al, double be)                                   \
    {                                                                                              \
        return (double)(EXPR(x, al, be));                                                          \
    }
UNARY_OPS(REF_UNARY)

/* A comparison stores a logical byte: 1 or 0. */
#define REF_BINARY(name, EXPR, KIND)                                                               \
    static float ref_b32_##name(float a, float b)                                                  \
    {                                                                                              \
        return (float)(EXPR(a, b));                                                                \
    }                                                                                              \
    static double ref_b64_##name(double a, double b)                                               \
    {                                                                                              \
        return (double)(EXPR(a, b));                                                               \
    }
BINARY_OPS(REF_BINARY)

static const struct {
    const char *name;
    ref_u32 f32;
    ref_u64 f64;
} unary_ref[] = {
#define U_ROW(name, EXPR) {#name, ref_u32_##name, ref_u64_##name},
    UNARY_OPS(U_ROW)
#undef U_ROW
};

static const struct {
    const char *name;
    ref_b32 f32;
    ref_b64 f64;
    int cmp;
} binary_ref[] = {
#define KIND_ARITH 0
#define KIND_CMP 1
#define B_ROW(name, EXPR, KIND) {#name, ref_b32_##name, ref_b64_##name, KIND_##KIND},
    BINARY_OPS(B_ROW)
#undef B_ROW
};

/* ------------------------------------------------------- the operands */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rng(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static float f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double f64_of_bits(uint64_t u)
{
    double f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static const double special[] = {
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 0.25, 1.5, -2.5, 10.0, -10.0,
    1e-3, -1e-3, 1e-8, -1e-8, 1e-20, -1e-20, 0.1, -0.1, 0.7, 20.0, -20.0, 88.7, -88.7, 89.5,
    -104.0, 709.0, -745.0, 1e30, -1e30, 1e300, -1e300, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN,
    DBL_MAX, -DBL_MAX, DBL_MIN, -DBL_MIN, 1e-40 /* float denormal */, -1e-40, 1.4e-45, -1.4e-45,
    4.9e-324 /* double denormal */, -4.9e-324, 1e-310, -1e-310, INFINITY, -INFINITY, NAN, -NAN,
    3.14159265358979, -3.14159265358979, 1e6, 12345.678, 0.999999, 1.000001};
#define NSPECIAL (sizeof special / sizeof special[0])

/* The alphas (and betas) the unary ops are tried with. */
static const double params[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 0.01, -0.3, 3.0, 0.2,
                                1e-40, INFINITY, -INFINITY, NAN};
#define NPARAMS (sizeof params / sizeof params[0])

#define NRANDOM 3000

/* Operand k: the specials, then random bits (every class: denormals, NaN
 * payloads, infinities), then random moderate values. */
static float operand32(size_t k)
{
    if (k < NSPECIAL)
        return (float)special[k];
    if (k < NSPECIAL + NRANDOM)
        return f32_of_bits((uint32_t)rng());
    return (float)((double)(int64_t)(rng() % 2000001) / 100000.0 - 10.0);
}

static double operand64(size_t k)
{
    if (k < NSPECIAL)
        return special[k];
    if (k < NSPECIAL + NRANDOM)
        return f64_of_bits(rng());
    return (double)(int64_t)(rng() % 2000001) / 100000.0 - 10.0;
}

#define NOPERANDS (NSPECIAL + 2 * NRANDOM)

static int same32(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static int same64(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Where IEEE 754 leaves a NaN result's sign and payload open (an
 * arithmetic op with a NaN operand: which one's payload, in which order
 * the compiler put the operands), any NaN is that result; neg, abs and
 * the ops that pass x through (sign) or replace NaN (relu) are bits. */
static int nan_bits_matter(int unary_op)
{
    return unary_op == DLA_UNARY_NEG || unary_op == DLA_UNARY_ABS ||
           unary_op == DLA_UNARY_SIGN || unary_op == DLA_UNARY_RELU;
}

static int agree32(int unary_op, float want, float got)
{
    if (want != want && !nan_bits_matter(unary_op))
        return got != got;
    return same32(want, got);
}

static int agree64(int unary_op, double want, double got)
{
    if (want != want && !nan_bits_matter(unary_op))
        return got != got;
    return same64(want, got);
}

/* ------------------------------------------------------------ the tests */

static void op_numbers_are_the_abis(void **state)
{
    (void)state;
    assert_int_equal(DLA_OPS_U_COUNT, DLA_UNARY_COUNT);
    assert_int_equal(DLA_OPS_B_COUNT, DLA_BINARY_COUNT);
    assert_int_equal(sizeof unary_ref / sizeof unary_ref[0], DLA_UNARY_COUNT);
    assert_int_equal(sizeof binary_ref / sizeof binary_ref[0], DLA_BINARY_COUNT);
#define CHECK_U(id, str) assert_string_equal(unary_ref[id].name, str);
    DLA_UNARY_LIST(CHECK_U)
#undef CHECK_U
#define CHECK_B(id, str) assert_string_equal(binary_ref[id].name, str);
    DLA_BINARY_LIST(CHECK_B)
#undef CHECK_B
    assert_int_equal(DLA_OPS_U_NEG, DLA_UNARY_NEG);
    assert_int_equal(DLA_OPS_U_EXP, DLA_UNARY_EXP);
    assert_int_equal(DLA_OPS_U_LOG, DLA_UNARY_LOG);
    assert_int_equal(DLA_OPS_U_SQRT, DLA_UNARY_SQRT);
    assert_int_equal(DLA_OPS_U_ABS, DLA_UNARY_ABS);
    assert_int_equal(DLA_OPS_U_SIN, DLA_UNARY_SIN);
    assert_int_equal(DLA_OPS_U_COS, DLA_UNARY_COS);
    assert_int_equal(DLA_OPS_U_TANH, DLA_UNARY_TANH);
    assert_int_equal(DLA_OPS_U_SIGMOID, DLA_UNARY_SIGMOID);
    assert_int_equal(DLA_OPS_U_RELU, DLA_UNARY_RELU);
    assert_int_equal(DLA_OPS_U_AFFINE, DLA_UNARY_AFFINE);
    assert_int_equal(DLA_OPS_U_ERF, DLA_UNARY_ERF);
    assert_int_equal(DLA_OPS_U_SIGN, DLA_UNARY_SIGN);
    assert_int_equal(DLA_OPS_U_POWS, DLA_UNARY_POWS);
    assert_int_equal(DLA_OPS_U_LEAKY_RELU, DLA_UNARY_LEAKY_RELU);
    assert_int_equal(DLA_OPS_U_ELU, DLA_UNARY_ELU);
    assert_int_equal(DLA_OPS_U_STEP, DLA_UNARY_STEP);
    assert_int_equal(DLA_OPS_U_RECIPROCAL, DLA_UNARY_RECIPROCAL);
    assert_int_equal(DLA_OPS_U_SQUARE, DLA_UNARY_SQUARE);
    assert_int_equal(DLA_OPS_B_ADD, DLA_BINARY_ADD);
    assert_int_equal(DLA_OPS_B_SUB, DLA_BINARY_SUB);
    assert_int_equal(DLA_OPS_B_MUL, DLA_BINARY_MUL);
    assert_int_equal(DLA_OPS_B_DIV, DLA_BINARY_DIV);
    assert_int_equal(DLA_OPS_B_MAX, DLA_BINARY_MAX);
    assert_int_equal(DLA_OPS_B_MIN, DLA_BINARY_MIN);
    assert_int_equal(DLA_OPS_B_POW, DLA_BINARY_POW);
    assert_int_equal(DLA_OPS_B_EQ, DLA_BINARY_EQ);
    assert_int_equal(DLA_OPS_B_NE, DLA_BINARY_NE);
    assert_int_equal(DLA_OPS_B_LT, DLA_BINARY_LT);
    assert_int_equal(DLA_OPS_B_LE, DLA_BINARY_LE);
    assert_int_equal(DLA_OPS_B_GT, DLA_BINARY_GT);
    assert_int_equal(DLA_OPS_B_GE, DLA_BINARY_GE);
    for (int op = 0; op < DLA_BINARY_COUNT; op++)
        assert_int_equal(!!dla_ops_binary_is_cmp(op), binary_ref[op].cmp);
}

static void unary_f32_is_the_cpu_plugins(void **state)
{
    (void)state;
    rng_state = 1;
    for (int op = 0; op < DLA_UNARY_COUNT; op++) {
        long bad = 0;
        for (size_t k = 0; k < NOPERANDS; k++) {
            const float x = operand32(k);
            for (size_t p = 0; p < NPARAMS; p++) {
                const float al = (float)params[p], be = (float)params[(p * 7 + 3) % NPARAMS];
                const float want = unary_ref[op].f32(x, al, be);
                const float got = dla_ops_unary_f32(op, x, al, be);
                if (!agree32(op, want, got) && bad++ < 3)
                    print_error("unary %s f32 (%a, alpha %a, beta %a): %a, want %a\n",
                                unary_ref[op].name, (double)x, (double)al, (double)be,
                                (double)got, (double)want);
            }
        }
        assert_int_equal(bad, 0);
    }
}

static void unary_f64_is_the_cpu_plugins(void **state)
{
    (void)state;
    rng_state = 2;
    for (int op = 0; op < DLA_UNARY_COUNT; op++) {
        long bad = 0;
        for (size_t k = 0; k < NOPERANDS; k++) {
            const double x = operand64(k);
            for (size_t p = 0; p < NPARAMS; p++) {
                const double al = params[p], be = params[(p * 7 + 3) % NPARAMS];
                const double want = unary_ref[op].f64(x, al, be);
                const double got = dla_ops_unary_f64(op, x, al, be);
                if (!agree64(op, want, got) && bad++ < 3)
                    print_error("unary %s f64 (%a, alpha %a, beta %a): %a, want %a\n",
                                unary_ref[op].name, x, al, be, got, want);
            }
        }
        assert_int_equal(bad, 0);
    }
}

/* All pairs of the specials, then random pairs. */
static void binary_f32_is_the_cpu_plugins(void **state)
{
    (void)state;
    rng_state = 3;
    for (int op = 0; op < DLA_BINARY_COUNT; op++) {
        long bad = 0;
        for (size_t i = 0; i < NSPECIAL + 2 * NRANDOM; i++) {
            const size_t nj = i < NSPECIAL ? NSPECIAL : 4;
            for (size_t j = 0; j < nj; j++) {
                const float a = operand32(i);
                const float b = i < NSPECIAL ? (float)special[j] : operand32(i);
                const float want = binary_ref[op].f32(a, b);
                const float got = dla_ops_binary_f32(op, a, b);
                if (!agree32(-1, want, got) && bad++ < 3)
                    print_error("binary %s f32 (%a, %a): %a, want %a\n", binary_ref[op].name,
                                (double)a, (double)b, (double)got, (double)want);
                if (binary_ref[op].cmp)
                    assert_true(got == 0.0f || got == 1.0f);
            }
        }
        assert_int_equal(bad, 0);
    }
}

static void binary_f64_is_the_cpu_plugins(void **state)
{
    (void)state;
    rng_state = 4;
    for (int op = 0; op < DLA_BINARY_COUNT; op++) {
        long bad = 0;
        for (size_t i = 0; i < NSPECIAL + 2 * NRANDOM; i++) {
            const size_t nj = i < NSPECIAL ? NSPECIAL : 4;
            for (size_t j = 0; j < nj; j++) {
                const double a = operand64(i);
                const double b = i < NSPECIAL ? special[j] : operand64(i);
                const double want = binary_ref[op].f64(a, b);
                const double got = dla_ops_binary_f64(op, a, b);
                if (!agree64(-1, want, got) && bad++ < 3)
                    print_error("binary %s f64 (%a, %a): %a, want %a\n", binary_ref[op].name, a,
                                b, got, want);
                if (binary_ref[op].cmp)
                    assert_true(got == 0.0 || got == 1.0);
            }
        }
        assert_int_equal(bad, 0);
    }
}

/* What the ABI states outright, independent of the reference. */
static void abi_rules_hold(void **state)
{
    (void)state;
    const float nan32 = NAN;
    const float z32 = dla_ops_unary_f32(DLA_UNARY_RELU, nan32, 0, 0);
    assert_true(same32(z32, 0.0f));
    assert_true(same32(dla_ops_unary_f32(DLA_UNARY_RELU, -0.0f, 0, 0), 0.0f));
    assert_true(same64(dla_ops_unary_f64(DLA_UNARY_SIGN, -0.0, 0, 0), 0.0));
    assert_true(isnan(dla_ops_unary_f64(DLA_UNARY_SIGN, NAN, 0, 0)));
    assert_true(same32(dla_ops_binary_f32(DLA_BINARY_MAX, nan32, 2.0f), 2.0f));
    assert_true(same32(dla_ops_binary_f32(DLA_BINARY_MAX, 2.0f, nan32), 2.0f));
    assert_true(same64(dla_ops_binary_f64(DLA_BINARY_MIN, NAN, -2.0), -2.0));
    assert_true(same64(dla_ops_binary_f64(DLA_BINARY_MIN, -2.0, NAN), -2.0));
    assert_true(isnan(dla_ops_binary_f64(DLA_BINARY_MAX, NAN, NAN)));
    assert_true(same64(dla_ops_binary_f64(DLA_BINARY_NE, NAN, NAN), 1.0));
    assert_true(same64(dla_ops_binary_f64(DLA_BINARY_EQ, NAN, NAN), 0.0));
    assert_true(same32(dla_ops_unary_f32(DLA_UNARY_STEP, 0.5f, 0.5f, 0), 0.0f));
    assert_true(same32(dla_ops_unary_f32(DLA_UNARY_LEAKY_RELU, -2.0f, 0.25f, 0), -0.5f));
    /* affine rounds twice: no fma. */
    const double x = 1.0 + 0x1p-30, al = 1.0 - 0x1p-30, be = -1.0;
    assert_true(same64(dla_ops_unary_f64(DLA_UNARY_AFFINE, x, al, be), 0.0));
    /* An unknown op is NaN. */
    assert_true(isnan(dla_ops_unary_f32(DLA_UNARY_COUNT, 1.0f, 0, 0)));
    assert_true(isnan(dla_ops_unary_f64(-1, 1.0, 0, 0)));
    assert_true(isnan(dla_ops_binary_f32(DLA_BINARY_COUNT, 1.0f, 1.0f)));
    assert_true(isnan(dla_ops_binary_f64(99, 1.0, 1.0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(op_numbers_are_the_abis),
        cmocka_unit_test(unary_f32_is_the_cpu_plugins),
        cmocka_unit_test(unary_f64_is_the_cpu_plugins),
        cmocka_unit_test(binary_f32_is_the_cpu_plugins),
        cmocka_unit_test(binary_f64_is_the_cpu_plugins),
        cmocka_unit_test(abi_rules_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * ops.cl - what each unary and binary op computes, one expression per op
 * for both float types, as the cpu plugin's elementwise_ops.h writes them
 * (the header's semantics: max/min ignore a NaN operand, relu(NaN) = 0,
 * sign keeps NaN, elu through expm1). The one-op kernels (elementwise.cl)
 * and the fused programs (fused.cl) both use these, so a program gives the
 * bits of its steps launched one by one.
 *
 * Integer literals, never double ones: a double literal would promote a
 * float expression to double.
 *
 * Every float result is stored through DLA_CANON: a NaN becomes the one
 * quiet NaN. The sign and payload of a NaN differ between a device's
 * vector and scalar math (PoCL's vectorized exp of a NaN is not its scalar
 * one), and a one-op kernel is vectorized where a program's step may not
 * be; canonical NaNs keep the two bit for bit.
 */
#define DLA_CANON(T, v) (isnan(v) ? (T)NAN : (v))
#define U_NEG(x, al, be) (-(x))
#define U_EXP(x, al, be) exp(x)
#define U_LOG(x, al, be) log(x)
#define U_SQRT(x, al, be) sqrt(x)
#define U_ABS(x, al, be) fabs(x)
#define U_SIN(x, al, be) sin(x)
#define U_COS(x, al, be) cos(x)
/* Past |x| of 9.1 (single; 20 for double) tanh rounds to +-1 in the type,
 * and tanh(+-Inf) is +-1 (OpenCL's edge cases, as C's); PoCL's single
 * tanh stops at 0.99999994 there, Inf included, which left the derivative
 * 1 - tanh^2 at 1.2e-7 on saturated units where the cpu plugin's is 0.
 * sign(x) gives the +-1; a NaN fails the test and keeps tanh's NaN. */
#define U_TANH(x, al, be) (fabs(x) >= (sizeof(x) == 4 ? (float)91 / 10 : 20) ? sign(x) : tanh(x))
#define U_SIGMOID(x, al, be) (1 / (1 + exp(-(x))))
#define U_RELU(x, al, be) ((x) > 0 ? (x) : 0)
#define U_AFFINE(x, al, be) ((x) * (al) + (be))
#define U_ERF(x, al, be) erf(x)
#define U_SIGN(x, al, be) ((x) > 0 ? 1 : (x) < 0 ? -1 : (x) == 0 ? 0 : (x))
#define U_POWS(x, al, be) pow(x, al)
#define U_LEAKY_RELU(x, al, be) ((x) > 0 ? (x) : (al) * (x))
#define U_ELU(x, al, be) ((x) > 0 ? (x) : (al) * expm1(x))
#define U_STEP(x, al, be) ((x) > (al) ? 1 : 0)
#define U_RECIPROCAL(x, al, be) (1 / (x))
#define U_SQUARE(x, al, be) ((x) * (x))

/* In DLA_UNARY_LIST order (the host checks the count). */
#define DLA_UNARY_OPS(X)                                                       \
    X(neg, U_NEG)                                                              \
    X(exp, U_EXP)                                                              \
    X(log, U_LOG)                                                              \
    X(sqrt, U_SQRT)                                                            \
    X(abs, U_ABS)                                                              \
    X(sin, U_SIN)                                                              \
    X(cos, U_COS)                                                              \
    X(tanh, U_TANH)                                                            \
    X(sigmoid, U_SIGMOID)                                                      \
    X(relu, U_RELU)                                                            \
    X(affine, U_AFFINE)                                                        \
    X(erf, U_ERF)                                                              \
    X(sign, U_SIGN)                                                            \
    X(pows, U_POWS)                                                            \
    X(leaky_relu, U_LEAKY_RELU)                                                \
    X(elu, U_ELU)                                                              \
    X(step, U_STEP)                                                            \
    X(reciprocal, U_RECIPROCAL)                                                \
    X(square, U_SQUARE)

#define B_ADD(a, b) ((a) + (b))
#define B_SUB(a, b) ((a) - (b))
#define B_MUL(a, b) ((a) * (b))
#define B_DIV(a, b) ((a) / (b))
#define B_MAX(a, b) ((a) > (b) || (b) != (b) ? (a) : (b))
#define B_MIN(a, b) ((a) < (b) || (b) != (b) ? (a) : (b))
#define B_POW(a, b) pow(a, b)
#define B_EQ(a, b) ((a) == (b))
#define B_NE(a, b) ((a) != (b))
#define B_LT(a, b) ((a) < (b))
#define B_LE(a, b) ((a) <= (b))
#define B_GT(a, b) ((a) > (b))
#define B_GE(a, b) ((a) >= (b))

/* In DLA_BINARY_LIST order; ARITH writes T, CMP a logical byte. */
#define DLA_BINARY_OPS(X)                                                      \
    X(add, B_ADD, ARITH)                                                       \
    X(sub, B_SUB, ARITH)                                                       \
    X(mul, B_MUL, ARITH)                                                       \
    X(div, B_DIV, ARITH)                                                       \
    X(max, B_MAX, ARITH)                                                       \
    X(min, B_MIN, ARITH)                                                       \
    X(pow, B_POW, ARITH)                                                       \
    X(eq, B_EQ, CMP)                                                           \
    X(ne, B_NE, CMP)                                                           \
    X(lt, B_LT, CMP)                                                           \
    X(le, B_LE, CMP)                                                           \
    X(gt, B_GT, CMP)                                                           \
    X(ge, B_GE, CMP)

/*
 * tu_assert.h - checks that fail the running cmocka test, shared by the op
 * suites (include after cmocka.h and testutil.h; testutil.h itself stays
 * free of cmocka, which some suites include after it).
 */
#ifndef DLA_TU_ASSERT_H
#define DLA_TU_ASSERT_H

#include "testutil.h"

/* t is an error tensor of this status whose message contains text. */
TU_UNUSED static void tu_expect_error(dla_tensor *t, dla_status status, const char *text)
{
    assert_int_equal(dla_tensor_status(t), status);
    if (!strstr(dla_tensor_error(t), text))
        fail_msg("message \"%s\" lacks \"%s\"", dla_tensor_error(t), text);
}

/* Call `call` of fn on in[] accelerated (af) gives eager's bits in all nout
 * outputs (tu_replay_differs); label (or NULL) leads the failure. */
TU_UNUSED static void tu_expect_replay_bits(dla_accel *af, dla_function fn, void *ctx, int nin,
                                            dla_tensor *const *in, int nout, const char *label,
                                            int call)
{
    const int differs = tu_replay_differs(af, fn, ctx, nin, in, nout);
    const char *sep = label ? ", " : "";
    if (differs == -2)
        fail_msg("%s%scall %d: %s", label ? label : "", sep, call, dla_last_error());
    if (differs >= 0)
        fail_msg("%s%scall %d, output %d: the replay differs from eager", label ? label : "", sep,
                 call, differs);
}

/* |a - b| <= eps in double, a NaN on either side failing. For cmocka's
 * assert_float_equal a NaN equals anything (its test is fabs(a - b) > eps,
 * false for a NaN), and it compares in float. */
#define tu_assert_near(a, b, eps) tu_assert_near_at((a), (b), (eps), #a, __FILE__, __LINE__)
TU_UNUSED static void tu_assert_near_at(double a, double b, double eps, const char *what,
                                        const char *file, int line)
{
    if (!(fabs(a - b) <= eps))
        fail_msg("%s:%d: %s is %.17g, want %.17g within %g", file, line, what, a, b, eps);
}

#endif

/*
 * accelerate_check.c - MATLAB's "Check Accelerated Deep Learning Function
 * Outputs" example in C: random numbers from dla_rand inside an accelerated
 * function are baked into its trace, and CheckMode "tolerance" says so;
 * random numbers drawn like a traced tensor (dla_rand_like) are drawn anew
 * on every call, and the check stays quiet.
 *
 * The warning comes from the library on stderr (DLACCEL_LOG=warn, the
 * default); the program also asks each function for its last check, and
 * exits with 1 unless exactly the unsupported one warned.
 */
#include <dlaccel.h>
#include <stdio.h>

#include "example_args.h"

/* function out = myUnsupportedFun(dlX)
 *     sz = size(dlX); noise = rand(sz); out = dlX + noise; end */
static dla_status my_unsupported_fun(void *ctx, int nin, dla_tensor *const *in, int nout,
                                     dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    int64_t sz[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(in[0], sz);
    dla_tensor *noise = dla_rand(dla_tensor_dtype(in[0]), "", nd, sz);
    out[0] = dla_add(in[0], noise);
    return dla_tensor_status(out[0]);
}

/* function out = mySupportedFun(dlX)
 *     sz = size(dlX); noise = rand(sz, like=dlX); out = dlX + noise; end */
static dla_status my_supported_fun(void *ctx, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_add(in[0], dla_rand_like(in[0]));
    return dla_tensor_status(out[0]);
}

static void show_function(const char *var, const dla_accel *af)
{
    char buf[512];
    dla_accel_describe(af, buf, sizeof buf);
    printf("%s =\n\n%s\n", var, buf);
}

/* dlY = accfun(dlX), displayed as MATLAB shows a 3x3 dlarray. */
static int call_and_show(dla_accel *af, dla_tensor *x)
{
    fflush(stdout); /* the library's warning goes to stderr, in order */
    dla_tensor *y;
    if (dla_accel_call(af, NULL, 1, &x, 1, &y) != DLA_OK) {
        fprintf(stderr, "accelerate_check: %s\n", dla_last_error());
        return 1;
    }
    printf("dlY =\n\n  3x3 dlarray\n\n");
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++)
            printf("    %.4f", dla_tensor_item(y, r + 3 * c));
        printf("\n");
    }
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    const int rc = example_plain_args(argc, argv, "", 0);
    if (rc >= 0)
        return rc;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(3, 3)); /* dlX = dlarray(ones(3,3)) */
    if (dla_tensor_status(x) != DLA_OK) {
        fprintf(stderr, "accelerate_check: %s\n", dla_last_error());
        return 1;
    }

    /* accfun = dlaccelerate(@myUnsupportedFun) */
    dla_accel *accfun = dla_accelerate(my_unsupported_fun, &(dla_accel_options){.name = "myUnsupportedFun"});
    show_function("accfun", accfun);
    dla_accel_clear(accfun); /* clearCache(accfun) */
    dla_accel_set_check_mode(accfun, "tolerance");
    show_function("accfun", accfun);
    /* The first call records; the second replays the recorded noise, which
     * the check compares with a fresh run of the function: it warns. */
    int failed = call_and_show(accfun, x) || call_and_show(accfun, x);

    /* accfun2 = dlaccelerate(@mySupportedFun) */
    dla_accel *accfun2 = dla_accelerate(my_supported_fun, &(dla_accel_options){.name = "mySupportedFun"});
    dla_accel_clear(accfun2);
    dla_accel_set_check_mode(accfun2, "tolerance");
    /* New noise on every call, recorded or replayed: no warning. */
    failed = failed || call_and_show(accfun2, x) || call_and_show(accfun2, x);

    int warned1 = dla_accel_last_check(accfun)[0] != '\0';
    int warned2 = dla_accel_last_check(accfun2)[0] != '\0';
    printf("myUnsupportedFun: %s\nmySupportedFun: %s\n",
           warned1 ? "the tolerance check warned (baked random numbers)" : "no warning",
           warned2 ? "the tolerance check warned" : "no warning (an RNG slot)");

    /* accfun.CheckMode = "none"; accfun2.CheckMode = "none"; */
    dla_accel_set_check_mode(accfun, "none");
    dla_accel_set_check_mode(accfun2, "none");
    dla_accel_free(accfun);
    dla_accel_free(accfun2);
    dla_scope_end();
    return failed || !warned1 || warned2;
}

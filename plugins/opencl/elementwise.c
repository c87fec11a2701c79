/*
 * elementwise.c - unary, binary and ternary (where) on OpenCL devices: the
 * plugin kit's argument checks, then one kernel of elementwise.cl per op
 * and float type over the coalesced space of the views.
 */
#include "plugins/opencl/ocl.h"

static const char *float_type(dla_dtype t)
{
    return t == DLA_F64 ? "double" : "float";
}

dla_status dla__ocl_unary(void *dev, const dla_unary_args *args)
{
    dla__ocl_device *d = dev;
    const dla_view *y = &args->y, *x = &args->x;
    dla_status s = dla_kit_check_unary(&d->kit, args);
    if (s != DLA_OK)
        return s;
    if (dla_kit_numel(y) == 0)
        return DLA_OK;
    const int f64 = x->dtype == DLA_F64;
    const dla_view *views[] = {y, x};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_ELEMENTWISE, DLA__OCL_K_UNARY + 2 * args->op + f64, &k,
                        "unary_%s_%s", dla_kit_unary_name(args->op), float_type(x->dtype));
    if (s == DLA_OK) {
        if (f64) {
            const cl_double al = args->alpha, be = args->beta;
            if ((s = DLA__OCL_ARG(k, 5, al, "unary")) == DLA_OK)
                s = DLA__OCL_ARG(k, 6, be, "unary");
        } else {
            const cl_float al = (cl_float)args->alpha, be = (cl_float)args->beta;
            if ((s = DLA__OCL_ARG(k, 5, al, "unary")) == DLA_OK)
                s = DLA__OCL_ARG(k, 6, be, "unary");
        }
    }
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 2, views, 0, "unary");
    pthread_mutex_unlock(&d->lock);
    return s;
}

dla_status dla__ocl_binary(void *dev, const dla_binary_args *args)
{
    dla__ocl_device *d = dev;
    const dla_view *z = &args->z, *a = &args->a, *b = &args->b;
    dla_status s = dla_kit_check_binary(&d->kit, args);
    if (s != DLA_OK)
        return s;
    if (dla_kit_numel(z) == 0)
        return DLA_OK;
    const int f64 = a->dtype == DLA_F64;
    const dla_view *views[] = {z, a, b};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_ELEMENTWISE, DLA__OCL_K_BINARY + 2 * args->op + f64, &k,
                        "binary_%s_%s", dla_kit_binary_name(args->op), float_type(a->dtype));
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 3, views, 0, "binary");
    pthread_mutex_unlock(&d->lock);
    return s;
}

dla_status dla__ocl_ternary(void *dev, const dla_ternary_args *args)
{
    dla__ocl_device *d = dev;
    const dla_view *z = &args->z, *cond = &args->cond, *a = &args->a, *b = &args->b;
    dla_status s = dla_kit_check_ternary(&d->kit, args);
    if (s != DLA_OK)
        return s;
    if (dla_kit_numel(z) == 0)
        return DLA_OK;
    const int f64 = z->dtype == DLA_F64;
    const dla_view *views[] = {z, cond, a, b};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_ELEMENTWISE, DLA__OCL_K_WHERE + f64, &k, "where_%s",
                        float_type(z->dtype));
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 4, views, 0, "ternary where");
    pthread_mutex_unlock(&d->lock);
    return s;
}

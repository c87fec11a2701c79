/*
 * elementwise.c - unary, binary and ternary (where) on OpenCL devices: the
 * cpu plugin's argument rules, then one kernel of elementwise.cl per op
 * and float type over the coalesced space of the views.
 */
#include "plugins/opencl/ocl.h"

static const char *const unary_names[] = {
#define NAME(name, str) str,
    DLA_UNARY_LIST(NAME)
#undef NAME
};
static const char *const binary_names[] = {
#define NAME(name, str) str,
    DLA_BINARY_LIST(NAME)
#undef NAME
};
_Static_assert(sizeof unary_names / sizeof unary_names[0] == DLA_UNARY_COUNT, "unary names");
_Static_assert(sizeof binary_names / sizeof binary_names[0] == DLA_BINARY_COUNT, "binary names");

static const char *float_type(dla_dtype t)
{
    return t == DLA_F64 ? "double" : "float";
}

dla_status dla__ocl_unary(void *dev, const dla_unary_args *args)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla__ocl_device *d = dev;
    if (args->struct_size < sizeof(dla_unary_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl unary: args struct_size %zu is smaller than ABI 1.0's %zu",
                        args->struct_size, sizeof(dla_unary_args));
    if ((unsigned)args->op >= DLA_UNARY_COUNT)
        return h->error(DLA_ERR_UNSUPPORTED, "opencl unary: argument op: unknown op %d",
                        (int)args->op);
    const dla_view *y = &args->y, *x = &args->x;
    dla_status s;
    if ((s = dla__ocl_check_view("unary", "y", y)) != DLA_OK ||
        (s = dla__ocl_check_view("unary", "x", x)) != DLA_OK ||
        (s = dla__ocl_check_same_dims("unary", "x", x, "y", y)) != DLA_OK ||
        (s = dla__ocl_check_float(d, "unary", "x", x)) != DLA_OK)
        return s;
    if (y->dtype != x->dtype) {
        char buf[DLA__OCL_DIMS_BUF];
        return h->error(DLA_ERR_DTYPE,
                        "opencl unary: argument y (dims %s): dtype %s differs from x's %s",
                        dla__ocl_dims_str(buf, sizeof buf, y->ndims, y->dims),
                        dla__ocl_dtype_name(y->dtype), dla__ocl_dtype_name(x->dtype));
    }
    if (dla__ocl_numel(y) == 0)
        return DLA_OK;
    const int f64 = x->dtype == DLA_F64;
    const dla_view *views[] = {y, x};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_ELEMENTWISE, DLA__OCL_K_UNARY + 2 * args->op + f64, &k,
                        "unary_%s_%s", unary_names[args->op], float_type(x->dtype));
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

static int is_comparison(dla_binary_op op)
{
    return op >= DLA_BINARY_EQ;
}

dla_status dla__ocl_binary(void *dev, const dla_binary_args *args)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla__ocl_device *d = dev;
    if (args->struct_size < sizeof(dla_binary_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl binary: args struct_size %zu is smaller than ABI 1.0's %zu",
                        args->struct_size, sizeof(dla_binary_args));
    if ((unsigned)args->op >= DLA_BINARY_COUNT)
        return h->error(DLA_ERR_UNSUPPORTED, "opencl binary: argument op: unknown op %d",
                        (int)args->op);
    const dla_view *z = &args->z, *a = &args->a, *b = &args->b;
    const char *name = binary_names[args->op];
    dla_status s;
    if ((s = dla__ocl_check_view("binary", "z", z)) != DLA_OK ||
        (s = dla__ocl_check_view("binary", "a", a)) != DLA_OK ||
        (s = dla__ocl_check_view("binary", "b", b)) != DLA_OK ||
        (s = dla__ocl_check_same_dims("binary", "a", a, "z", z)) != DLA_OK ||
        (s = dla__ocl_check_same_dims("binary", "b", b, "z", z)) != DLA_OK ||
        (s = dla__ocl_check_float(d, "binary", "a", a)) != DLA_OK)
        return s;
    char buf[DLA__OCL_DIMS_BUF];
    if (b->dtype != a->dtype)
        return h->error(DLA_ERR_DTYPE,
                        "opencl binary %s: argument b (dims %s): dtype %s differs from a's %s",
                        name, dla__ocl_dims_str(buf, sizeof buf, b->ndims, b->dims),
                        dla__ocl_dtype_name(b->dtype), dla__ocl_dtype_name(a->dtype));
    const int cmp = is_comparison(args->op);
    const dla_dtype want = cmp ? DLA_BOOL : a->dtype;
    if (z->dtype != want)
        return h->error(DLA_ERR_DTYPE,
                        "opencl binary %s: argument z (dims %s): dtype %s, expected %s", name,
                        dla__ocl_dims_str(buf, sizeof buf, z->ndims, z->dims),
                        dla__ocl_dtype_name(z->dtype), dla__ocl_dtype_name(want));
    /* A logical z is narrower than its operands: sharing memory with one
     * would overwrite elements other work-items still have to read. */
    if (cmp && (dla__ocl_views_overlap(z, a) || dla__ocl_views_overlap(z, b)))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl binary %s: argument z (dims %s): shares memory with operand %s, "
                        "which a logical result cannot",
                        name, dla__ocl_dims_str(buf, sizeof buf, z->ndims, z->dims),
                        dla__ocl_views_overlap(z, a) ? "a" : "b");
    if (dla__ocl_numel(z) == 0)
        return DLA_OK;
    const int f64 = a->dtype == DLA_F64;
    const dla_view *views[] = {z, a, b};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_ELEMENTWISE, DLA__OCL_K_BINARY + 2 * args->op + f64, &k,
                        "binary_%s_%s", name, float_type(a->dtype));
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 3, views, 0, "binary");
    pthread_mutex_unlock(&d->lock);
    return s;
}

dla_status dla__ocl_ternary(void *dev, const dla_ternary_args *args)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla__ocl_device *d = dev;
    if (args->struct_size < sizeof(dla_ternary_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl ternary: args struct_size %zu is smaller than ABI 1.1's %zu",
                        args->struct_size, sizeof(dla_ternary_args));
    if (args->op != DLA_TERNARY_WHERE)
        return h->error(DLA_ERR_UNSUPPORTED, "opencl ternary: argument op: unknown op %d",
                        (int)args->op);
    const dla_view *z = &args->z, *cond = &args->cond, *a = &args->a, *b = &args->b;
    const char *k_name = "ternary where";
    dla_status s;
    if ((s = dla__ocl_check_view(k_name, "z", z)) != DLA_OK ||
        (s = dla__ocl_check_view(k_name, "cond", cond)) != DLA_OK ||
        (s = dla__ocl_check_view(k_name, "a", a)) != DLA_OK ||
        (s = dla__ocl_check_view(k_name, "b", b)) != DLA_OK ||
        (s = dla__ocl_check_same_dims(k_name, "cond", cond, "z", z)) != DLA_OK ||
        (s = dla__ocl_check_same_dims(k_name, "a", a, "z", z)) != DLA_OK ||
        (s = dla__ocl_check_same_dims(k_name, "b", b, "z", z)) != DLA_OK ||
        (s = dla__ocl_check_float(d, k_name, "z", z)) != DLA_OK)
        return s;
    char buf[DLA__OCL_DIMS_BUF];
    if (cond->dtype != DLA_BOOL)
        return h->error(DLA_ERR_DTYPE,
                        "opencl ternary where: argument cond (dims %s): dtype %s, expected logical",
                        dla__ocl_dims_str(buf, sizeof buf, cond->ndims, cond->dims),
                        dla__ocl_dtype_name(cond->dtype));
    if (a->dtype != z->dtype || b->dtype != z->dtype) {
        const dla_view *odd = a->dtype != z->dtype ? a : b;
        return h->error(DLA_ERR_DTYPE,
                        "opencl ternary where: argument %s (dims %s): dtype %s differs from z's %s",
                        odd == a ? "a" : "b",
                        dla__ocl_dims_str(buf, sizeof buf, odd->ndims, odd->dims),
                        dla__ocl_dtype_name(odd->dtype), dla__ocl_dtype_name(z->dtype));
    }
    if (dla__ocl_views_overlap(z, cond))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl ternary where: argument z (dims %s): shares memory with cond",
                        dla__ocl_dims_str(buf, sizeof buf, z->ndims, z->dims));
    if (dla__ocl_numel(z) == 0)
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

/*
 * fused.c - the fused elementwise kernel (ABI 1.2) on OpenCL devices.
 *
 * A program first runs on the interpreter of fused.cl: one work-item per
 * element walks the instruction list, so a program costs no compilation.
 * When the same instruction list (ops and operands; alpha and beta are
 * arguments, so they may change) comes back, as it does on every replay
 * of a dla_accelerate plan, it is compiled into a kernel of its own, the
 * steps written out as one expression each: no dispatch per step, and the
 * compiler keeps the registers in registers. Both run the expressions of
 * ops.cl and store every step as T, so they give the same bits, which are
 * the bits of the steps launched one by one.
 *
 * DLACCEL_OPENCL_FUSED=interpret never compiles a program,
 * DLACCEL_OPENCL_FUSED=compile compiles each one the first time (tests
 * use both to check the two against each other). Compiled programs are
 * kept per device, at most KEEP of them, the least recently used one
 * dropped first. fused_reduce.c's sums (ABI 1.3) go through the same
 * interpreter (fused.cl's fused_eval_T), cache and policy: their key says
 * which kernel a program was compiled into, and write_source writes the
 * steps into fused_reduce.cl's sum instead; a pair's key (ABI 1.4) also
 * holds the second register summed, which the sum's source reads.
 *
 * fused_multi (ABI 1.8) is the same program with extra results: register
 * extra_reg[k] also stored into extra[k]. It takes the same path as fused
 * (launch below): interpreted by fused.cl's fused_multi_T, whose seven
 * extra slots come after y, and compiled as fused is, the key holding the
 * extras' registers and the kernel taking exactly nextra extra views after
 * y, each stored after y. A program without extras writes the same source
 * as before 1.8 and launches as it did.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "core/env_choice.h"
#include "plugins/opencl/ocl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP 64
/* Runs of one program before it is compiled. */
#define COMPILE_AFTER 2

/* y, the extras, the inputs. */
#define NOPS (1 + DLA_FUSED_MAX_EXTRA + DLA_FUSED_MAX_INPUTS)

/* The extra results of a fused_multi call: register reg[k] into view[k]
 * for k < n. n 0: plain fused. */
typedef struct extras {
    int n;
    const int32_t *reg;
    const dla_view *view;
} extras;

/* What a compiled program is found by: everything but alpha and beta,
 * whether it is the elementwise kernel or the sum (fused_reduce.cl), the
 * pair's second register summed (-1: none), and the registers the
 * elementwise kernel also stores (fused_multi; nextra 0: none). */
typedef struct key {
    int32_t reduce, reg2, f64, ninputs, ninsns;
    int32_t code[DLA_FUSED_MAX_INSNS][5];
    int32_t nextra, extra_reg[DLA_FUSED_MAX_EXTRA];
} key;

struct dla__ocl_fused_entry {
    key k;
    int runs;
    cl_program program;
    cl_kernel kernel;
    dla__ocl_fused_entry *next;
};

/* The program as fused.cl's dla_prog_float / dla_prog_double lay it out. */
typedef struct prog_f32 {
    cl_float al[DLA_FUSED_MAX_INSNS], be[DLA_FUSED_MAX_INSNS];
    cl_int ninsns, ninputs;
    cl_int code[DLA_FUSED_MAX_INSNS][5];
} prog_f32;
typedef struct prog_f64 {
    cl_double al[DLA_FUSED_MAX_INSNS], be[DLA_FUSED_MAX_INSNS];
    cl_int ninsns, ninputs;
    cl_int code[DLA_FUSED_MAX_INSNS][5];
} prog_f64;

static const char *const unary_macros[] = {
    "U_NEG",  "U_EXP",   "U_LOG",  "U_SQRT", "U_ABS",        "U_SIN",  "U_COS",
    "U_TANH", "U_SIGMOID", "U_RELU", "U_AFFINE", "U_ERF",     "U_SIGN", "U_POWS",
    "U_LEAKY_RELU", "U_ELU", "U_STEP", "U_RECIPROCAL", "U_SQUARE"};
static const char *const binary_macros[] = {"B_ADD", "B_SUB", "B_MUL", "B_DIV", "B_MAX",
                                            "B_MIN", "B_POW", "B_EQ",  "B_NE",  "B_LT",
                                            "B_LE",  "B_GT",  "B_GE"};
_Static_assert(sizeof unary_macros / sizeof unary_macros[0] == DLA_UNARY_COUNT,
               "a macro of ops.cl per unary op");
_Static_assert(sizeof binary_macros / sizeof binary_macros[0] == DLA_BINARY_COUNT,
               "a macro of ops.cl per binary op");

/* ---------------------------------------------------- compiled programs */

static void make_key(const dla_fused_args *a, int reduce, int reg2, const extras *ex, key *k)
{
    memset(k, 0, sizeof *k);
    k->reduce = reduce;
    k->reg2 = reg2;
    k->f64 = a->dtype == DLA_F64;
    k->ninputs = a->ninputs;
    k->ninsns = a->ninsns;
    dla_kit_fused_code(a, k->code);
    k->nextra = ex ? ex->n : 0;
    for (int e = 0; e < k->nextra; e++)
        k->extra_reg[e] = ex->reg[e];
}

/* Appends to src (size bytes, n used), cutting at the end. */
#define PUT(...) n += (size_t)snprintf(src + n, n < size ? size - n : 0, __VA_ARGS__)

/* The steps of a compiled program, each ending with eol: r0 .. r<n-1> of
 * type T from the inputs' values i0 .. i<ninputs-1>. */
static size_t write_steps(const key *k, const char *T, const char *eol, char *src, size_t n,
                          size_t size)
{
    char opnd[3][8];
    for (int j = 0; j < k->ninsns; j++) {
        for (int s = 0; s < dla_kit_fused_nsrc(k->code[j][0]); s++) {
            const int v = k->code[j][2 + s];
            snprintf(opnd[s], sizeof opnd[s], v >= 0 ? "r%d" : "i%d", v >= 0 ? v : -1 - v);
        }
        if (k->code[j][0] == DLA_FUSED_UNARY)
            PUT("    %s r%d = %s(%s, p.al[%d], p.be[%d]);%s", T, j, unary_macros[k->code[j][1]],
                opnd[0], j, j, eol);
        else if (k->code[j][0] == DLA_FUSED_BINARY)
            PUT("    %s r%d = %s(%s, %s);%s", T, j, binary_macros[k->code[j][1]], opnd[0],
                opnd[1], eol);
        else
            PUT("    %s r%d = %s != 0 ? %s : %s;%s", T, j, opnd[0], opnd[1], opnd[2], eol);
        PUT("    r%d = DLA_CANON(%s, r%d);%s", j, T, j, eol);
    }
    return n;
}

/* The OpenCL C of a compiled program. The elementwise kernel has
 * fused.cl's signature with the steps written out, and with extras
 * (fused_multi) their views after y's, each stored after y; the sum is
 * fused_reduce.cl's DLA_FR_KERNEL with the steps as its VALUE (a macro,
 * hence the line ends), a pair's with register reg2 as its second value. */
static void write_source(const key *k, char *src, size_t size)
{
    const char *T = k->f64 ? "double" : "float";
    size_t n = 0;
    if (k->reduce) {
        PUT("#define DLA_FR_PROGRAM(T, v, v2, at, ist, ii) { \\\n");
        for (int i = 0; i < k->ninputs; i++)
            PUT("    const %s i%d = in%d[at[%d] + ii * ist[%d]]; \\\n", T, i, i, i, i);
        n = write_steps(k, T, " \\\n", src, n, size);
        if (k->reg2 >= 0)
            PUT("    v = r%d; v2 = r%d; }\n", k->ninsns - 1, (int)k->reg2);
        else
            PUT("    v = r%d; v2 = 0; }\n", k->ninsns - 1);
        PUT("DLA_FR_KERNEL(%s, fused_reduce_program, %d, DLA_FR_PROGRAM, %d)\n", T,
            (int)k->ninputs, k->reg2 >= 0);
        return;
    }
    PUT("__kernel void fused_program(dla_shape sh, __global %s *y, dla_vw vy", T);
    for (int e = 0; e < k->nextra; e++)
        PUT(", __global %s *x%d, dla_vw vx%d", T, e, e);
    for (int i = 0; i < DLA_FUSED_MAX_INPUTS; i++)
        PUT(", __global const %s *in%d, dla_vw v%d", T, i, i);
    PUT(", dla_prog_%s p)\n{\n    DLA_ELEMENT(sh, c);\n", T);
    for (int i = 0; i < k->ninputs; i++)
        PUT("    const %s i%d = in%d[dla_at(&v%d, c)];\n", T, i, i, i);
    n = write_steps(k, T, "\n", src, n, size);
    PUT("    y[dla_at(&vy, c)] = r%d;\n", k->ninsns - 1);
    for (int e = 0; e < k->nextra; e++)
        PUT("    x%d[dla_at(&vx%d, c)] = r%d;\n", e, e, (int)k->extra_reg[e]);
    PUT("}\n");
}
#undef PUT

static void entry_free(dla__ocl_fused_entry *e)
{
    if (e->kernel)
        clReleaseKernel(e->kernel);
    if (e->program)
        clReleaseProgram(e->program);
    dla__ocl_host->free(e);
}

void dla__ocl_fused_release(dla__ocl_device *d)
{
    while (d->fused) {
        dla__ocl_fused_entry *e = d->fused;
        d->fused = e->next;
        entry_free(e);
    }
}

/* When programs are compiled: 0 never, 1 the first time, else after
 * COMPILE_AFTER runs. */
static int compile_policy(void)
{
    static const char *const values[] = {"interpret", "compile", NULL};
    static atomic_int warned;
    const int v = dla__env_choice("DLACCEL_OPENCL_FUSED", values, &warned, dla__ocl_host->log);
    return v < 0 ? COMPILE_AFTER : v;
}

/* The compiled kernel of k, or NULL to interpret (not yet seen enough, or
 * not compilable: that is logged once and the program interpreted).
 * Called with d->lock held. */
static cl_kernel compiled(dla__ocl_device *d, const key *k)
{
    const dla_plugin_host *h = dla__ocl_host;
    const int after = compile_policy();
    if (after == 0)
        return NULL;
    dla__ocl_fused_entry **at = &d->fused, *e = NULL;
    int count = 0;
    for (; *at; at = &(*at)->next, count++)
        if (memcmp(&(*at)->k, k, sizeof *k) == 0) {
            e = *at;
            *at = e->next; /* moved to the front below */
            break;
        }
    if (!e) {
        if (count >= KEEP) { /* drop the least recently used */
            dla__ocl_fused_entry **last = &d->fused;
            while ((*last)->next)
                last = &(*last)->next;
            entry_free(*last);
            *last = NULL;
        }
        e = h->alloc(sizeof *e, 0);
        if (!e)
            return NULL; /* interpreting needs no memory */
        memset(e, 0, sizeof *e);
        e->k = *k;
    }
    e->next = d->fused;
    d->fused = e;
    if (e->kernel || ++e->runs < after || e->runs > after)
        return e->kernel;
    char body[8192];
    write_source(k, body, sizeof body);
    /* The sum's build leaves out the interpreted kernels of both files. */
    static const char no_fused_kernel[] = "#define DLA_FUSED_NO_KERNEL 1\n",
                      fr_compiled[] = "#define DLA_FR_COMPILED 1\n";
    const char *elementwise[] = {dla__ocl_src_ops, dla__ocl_src_fused, body};
    const char *sum[] = {dla__ocl_src_ops,         no_fused_kernel, dla__ocl_src_fused,
                         fr_compiled, dla__ocl_src_fused_reduce, body};
    const char *kind = k->reduce ? "fused_reduce" : k->nextra ? "fused_multi" : "fused";
    char what[48];
    snprintf(what, sizeof what, "%s (compiled program)", kind);
    if ((k->reduce ? dla__ocl_build(d, what, 6, sum, &e->program)
                   : dla__ocl_build(d, what, 3, elementwise, &e->program)) != DLA_OK) {
        h->log(DLA_LOG_WARN, "opencl:%d: a %s program does not compile, it stays "
               "interpreted (DLACCEL_LOG=debug shows the build log)", d->index, kind);
        e->program = NULL;
        return NULL;
    }
    cl_int err;
    e->kernel = clCreateKernel(e->program, k->reduce ? "fused_reduce_program" : "fused_program",
                               &err);
    if (err != CL_SUCCESS) {
        h->log(DLA_LOG_WARN, "opencl:%d: clCreateKernel of a compiled %s program: %s", d->index,
               kind, DLA__OCL_ERR(err));
        e->kernel = NULL;
        return NULL;
    }
    /* Launches take work-groups of d->local, which the interpreted kernels
     * fit (program.c); a compiled program needing more registers may allow
     * fewer on a GPU, and its launch would fail (CL_INVALID_WORK_GROUP_SIZE)
     * where the interpreter runs: it stays interpreted. */
    size_t wg = 0;
    if (clGetKernelWorkGroupInfo(e->kernel, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg,
                                 NULL) == CL_SUCCESS &&
        wg > 0 && wg < d->local) {
        h->log(DLA_LOG_INFO, "opencl:%d: a compiled %s program allows work-groups of %zu, "
               "fewer than the %zu launches take: it stays interpreted", d->index, kind, wg,
               d->local);
        clReleaseKernel(e->kernel);
        e->kernel = NULL;
    }
    return e->kernel;
}

cl_kernel dla__ocl_fused_compiled(dla__ocl_device *d, const dla_fused_args *a, int reduce,
                                  int reg2)
{
    key k;
    make_key(a, reduce, reduce ? reg2 : -1, NULL, &k);
    return compiled(d, &k);
}

dla_status dla__ocl_fused_prog_arg(cl_kernel kern, cl_uint index, const dla_fused_args *a,
                                   const char *kernel)
{
    key k;
    make_key(a, 0, -1, NULL, &k);
    if (a->dtype == DLA_F64) {
        prog_f64 p;
        memset(&p, 0, sizeof p);
        p.ninsns = a->ninsns;
        p.ninputs = a->ninputs;
        memcpy(p.code, k.code, sizeof p.code);
        for (int j = 0; j < a->ninsns; j++) {
            p.al[j] = a->insns[j].alpha;
            p.be[j] = a->insns[j].beta;
        }
        return DLA__OCL_ARG(kern, index, p, kernel);
    }
    prog_f32 p;
    memset(&p, 0, sizeof p);
    p.ninsns = a->ninsns;
    p.ninputs = a->ninputs;
    memcpy(p.code, k.code, sizeof p.code);
    for (int j = 0; j < a->ninsns; j++) {
        p.al[j] = (cl_float)a->insns[j].alpha;
        p.be[j] = (cl_float)a->insns[j].beta;
    }
    return DLA__OCL_ARG(kern, index, p, kernel);
}

/* --------------------------------------------------------------- launch */

/* The kernel's arguments: 0 the space, then y (1, 2), the extra views (a
 * compiled program's nextra of them, the interpreter's DLA_FUSED_MAX_EXTRA
 * with fused_multi, none with fused), the DLA_FUSED_MAX_INPUTS inputs, the
 * program, and the interpreted fused_multi's packed registers. */
static dla_status launch(dla__ocl_device *d, const dla_fused_args *a, const extras *ex,
                         const char *what)
{
    const int f64 = a->dtype == DLA_F64;
    pthread_mutex_lock(&d->lock);
    key k;
    make_key(a, 0, -1, ex, &k);
    dla_status s = DLA_OK;
    cl_kernel kern = compiled(d, &k);
    const int interpret_multi = !kern && ex->n > 0;
    const int nx = interpret_multi ? DLA_FUSED_MAX_EXTRA : ex->n; /* extra slots */
    if (!kern) {
        s = ex->n ? dla__ocl_kernel(d, DLA__OCL_PROG_FUSED, DLA__OCL_K_FUSED_MULTI + f64, &kern,
                                    "fused_multi_%s", f64 ? "double" : "float")
                  : dla__ocl_kernel(d, DLA__OCL_PROG_FUSED, DLA__OCL_K_FUSED + f64, &kern,
                                    "fused_%s", f64 ? "double" : "float");
    }
    /* The views run_space binds: y, the extra slots (past n, y again, never
     * written), the inputs the program reads. */
    const dla_view *v[NOPS];
    int nv = 0;
    v[nv++] = &a->y;
    for (int e = 0; e < nx; e++)
        v[nv++] = e < ex->n ? &ex->view[e] : &a->y;
    for (int i = 0; i < a->ninputs; i++)
        v[nv++] = &a->inputs[i];
    /* Inputs past ninputs are bound to y and never read. */
    const cl_mem ybuf = dla__ocl_buf(a->y.mem);
    const dla__ocl_vw zero = {0};
    const cl_uint in0 = (cl_uint)(3 + 2 * nx), prog = in0 + 2 * DLA_FUSED_MAX_INPUTS;
    for (int i = a->ninputs; i < DLA_FUSED_MAX_INPUTS && s == DLA_OK; i++) {
        if ((s = DLA__OCL_ARG(kern, in0 + (cl_uint)(2 * i), ybuf, what)) == DLA_OK)
            s = DLA__OCL_ARG(kern, in0 + (cl_uint)(2 * i + 1), zero, what);
    }
    if (s == DLA_OK)
        s = dla__ocl_fused_prog_arg(kern, prog, a, what);
    if (s == DLA_OK && interpret_multi) { /* the registers, packed as fused.cl says */
        cl_uint m = (cl_uint)ex->n;
        for (int e = 0; e < ex->n; e++)
            m |= (cl_uint)ex->reg[e] << (4 + 4 * e);
        s = DLA__OCL_ARG(kern, prog + 1, m, what);
    }
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, kern, nv, v, 0, what);
    pthread_mutex_unlock(&d->lock);
    return s;
}

dla_status dla__ocl_fused(void *dev, const dla_fused_args *args)
{
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_fused(&d->kit, args);
    if (s != DLA_OK || dla_kit_numel(&args->y) == 0)
        return s;
    const extras none = {0, NULL, NULL};
    return launch(d, args, &none, "fused");
}

dla_status dla__ocl_fused_multi(void *dev, const dla_fused_multi_args *args)
{
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_fused_multi(&d->kit, args);
    if (s != DLA_OK || dla_kit_numel(&args->program.y) == 0)
        return s;
    const extras ex = {args->nextra, args->extra_reg, args->extra};
    return launch(d, &args->program, &ex, "fused_multi");
}

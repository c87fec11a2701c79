/*
 * init.c - MATLAB's initializers for learnable parameters: Glorot, He,
 * narrow-normal, zeros, ones, orthogonal. Random ones draw from the
 * thread's Philox stream on the current device, so dla_rng_seed makes a
 * network's initial values the same everywhere.
 */
#include "nn/nn.h"

#include <math.h>
#include <string.h>

static const char *const known[] = {"glorot", "he", "narrow-normal", "zeros", "ones"};
static const char *const lstm_known[] = {"orthogonal", "unit-forget-gate"};

int dla__init_known(const char *name, int lstm)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(name, known[i]))
            return 1;
    for (size_t i = 0; lstm && i < sizeof lstm_known / sizeof lstm_known[0]; i++)
        if (!strcmp(name, lstm_known[i]))
            return 1;
    return 0;
}

/* The Q factor (orthonormal columns) of a rows x cols standard normal
 * matrix, by modified Gram-Schmidt in double on the host; rows >= cols. */
static dla_tensor *orthogonal(dla_dtype dtype, int64_t rows, int64_t cols)
{
    dla_scope_begin();
    dla_tensor *z = dla_randn(DLA_F64, "", DLA_DIMS(rows, cols));
    double *a = dla__nn_malloc(sizeof(double) * (size_t)(rows * cols));
    dla_tensor *out = NULL;
    if (a && dla_tensor_to_host(z, a, sizeof(double) * (size_t)(rows * cols)) == DLA_OK) {
        for (int64_t j = 0; j < cols; j++) {
            double *q = a + j * rows;
            for (int64_t k = 0; k < j; k++) {
                const double *p = a + k * rows;
                double dot = 0;
                for (int64_t i = 0; i < rows; i++)
                    dot += p[i] * q[i];
                for (int64_t i = 0; i < rows; i++)
                    q[i] -= dot * p[i];
            }
            double norm = 0;
            for (int64_t i = 0; i < rows; i++)
                norm += q[i] * q[i];
            norm = sqrt(norm);
            for (int64_t i = 0; i < rows; i++)
                q[i] = norm > 0 ? q[i] / norm : 0;
        }
        out = dla_cast(dla_tensor_from_host(a, DLA_F64, "", DLA_DIMS(rows, cols)), dtype);
    } else if (!a) {
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "orthogonal initializer: %lldx%lld", (long long)rows,
                     (long long)cols);
        out = dla__nn_error_tensor();
    } else {
        out = z;
    }
    dla_tensor_retain(out);
    dla__nn_free(a);
    dla_scope_end();
    return dla__nn_return(out);
}

dla_tensor *dla__init_tensor(const char *init, const dla__param_sink *sink, int ndims,
                             const int64_t *dims, double fan_in, double fan_out)
{
    dla_dtype dt = dla__param_dtype(sink);
    if (dla__param_loading(sink))
        return NULL; /* the sink takes the saved value */
    if (!strcmp(init, "zeros"))
        return dla_zeros(dt, "", ndims, dims);
    if (!strcmp(init, "ones"))
        return dla_ones(dt, "", ndims, dims);
    if (!strcmp(init, "glorot")) {
        double bound = sqrt(6.0 / (fan_in + fan_out));
        return dla_affine(dla_rand(dt, "", ndims, dims), 2 * bound, -bound);
    }
    if (!strcmp(init, "he"))
        return dla_affine(dla_randn(dt, "", ndims, dims), sqrt(2.0 / fan_in), 0);
    if (!strcmp(init, "narrow-normal"))
        return dla_affine(dla_randn(dt, "", ndims, dims), 0.01, 0);
    /* A wide matrix (an LSTM's input weights 4H x C with C > 4H) has
     * orthonormal rows: the transpose of a tall one's Q. */
    if (!strcmp(init, "orthogonal") && ndims == 2 && dims[0] >= dims[1])
        return orthogonal(dt, dims[0], dims[1]);
    if (!strcmp(init, "orthogonal") && ndims == 2)
        return dla_permute(orthogonal(dt, dims[1], dims[0]), 2, (const int64_t[]){2, 1});
    dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "initializer \"%s\" is unknown here", init);
    return dla__nn_error_tensor();
}

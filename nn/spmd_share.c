/*
 * spmd_share.c - each worker's share of a global mini-batch (MATLAB's
 * workerMiniBatchSize): the global size divided among the workers, the
 * remainder one each to the first ones, so that shares differ by at most
 * one and add up to the global size.
 */
#include <dlaccel.h>

DLA_API dla_status dla_spmd_shares(int64_t global, int size, int64_t *shares)
{
    if (!shares)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_spmd_shares: argument shares is NULL");
    if (size < 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_spmd_shares: size %d: there must be at least one worker", size);
    if (global < 0)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_spmd_shares: global mini-batch %lld is negative", (long long)global);
    int64_t each = global / size, rest = global % size;
    for (int r = 0; r < size; r++)
        shares[r] = each + (r < rest);
    return DLA_OK;
}

DLA_API int64_t dla_spmd_share(int64_t global)
{
    if (global < 0) {
        dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                      "dla_spmd_share: global mini-batch %lld is negative", (long long)global);
        return -1;
    }
    int64_t size = dla_spmd_size(), rank = dla_spmd_rank();
    return global / size + (rank < global % size);
}

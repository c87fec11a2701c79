/*
 * allreduce_bench.c - dla_allreduce against a plain MPI_Allreduce loop, in
 * the same run, on the same ranks (bench/parallel.sh runs it):
 *
 *     mpirun -np 2 build/bench/allreduce_bench [--rounds R] [--quick]
 *
 * For each size, R rounds; each round times K reductions of a single-
 * precision cpu tensor through dla_allreduce (argument check, the
 * non-blocking reduction, polling) and K MPI_Allreduce calls in place on a
 * malloc'd buffer of the same size, the two in alternating order. Printed
 * per size: the median time per call and the bus bandwidth,
 * 2 (n - 1) / n * bytes / time (NCCL's convention: what each rank's links
 * carry in a ring), and the ratio dla / MPI (target >= 0.8 at >= 4 MiB).
 *
 * The program starts MPI itself, so this also runs the path where the
 * library finds MPI started and leaves finalizing to the program.
 */
#include <dlaccel.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    int rounds = 7, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: allreduce_bench [--rounds R] [--quick]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 1000)
        rounds = 7;
    if (quick)
        rounds = 3;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (dla_spmd_size() != size || strcmp(dla_spmd_backend(), "mpi") != 0) {
        if (rank == 0)
            fprintf(stderr,
                    "allreduce_bench: dlaccel sees a world of %d (%s), MPI one of %d: is "
                    "DLACCEL_PLUGIN_PATH set to the build's plugins.d?\n",
                    dla_spmd_size(), dla_spmd_backend(), size);
        MPI_Finalize();
        return 1;
    }
    static const int64_t sizes[] = {64 << 10, 4 << 20, 16 << 20, 64 << 20};
    int nsizes = quick ? 2 : 4;
    if (rank == 0) {
        printf("allreduce, %d ranks, single precision, %d rounds (median); %s\n", size, rounds,
               dla_spmd_backend());
        printf("%-10s %12s %12s %12s %12s %8s\n", "bytes", "dla us", "dla GB/s", "MPI us",
               "MPI GB/s", "dla/MPI");
    }
    int status = 0;
    for (int s = 0; s < nsizes; s++) {
        int64_t n = sizes[s] / 4;
        int iters = sizes[s] >= (16 << 20) ? 5 : sizes[s] >= (4 << 20) ? 10 : 100;
        if (quick)
            iters = iters / 5 + 1;
        dla_tensor *t = dla_ones(DLA_F32, "", 1, &n);
        float *buf = malloc((size_t)sizes[s]);
        if (!t || dla_tensor_status(t) != DLA_OK || !buf) {
            fprintf(stderr, "rank %d: out of memory for %lld bytes\n", rank, (long long)sizes[s]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int64_t i = 0; i < n; i++)
            buf[i] = 1.0f;
        double *td = malloc((size_t)rounds * sizeof *td), *tm = malloc((size_t)rounds * sizeof *tm);
        /* One of each first, unmeasured: connections and buffers. */
        if (dla_allreduce(1, &t, DLA_REDUCE_SUM) != DLA_OK) {
            fprintf(stderr, "rank %d: %s\n", rank, dla_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (int r = 0; r < rounds; r++) {
            for (int pass = 0; pass < 2; pass++) {
                int dla_turn = (pass == 0) == (r % 2 == 0);
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int i = 0; i < iters; i++) {
                    if (dla_turn) {
                        if (dla_allreduce(1, &t, DLA_REDUCE_SUM) != DLA_OK) {
                            fprintf(stderr, "rank %d: %s\n", rank, dla_last_error());
                            MPI_Abort(MPI_COMM_WORLD, 1);
                        }
                    } else {
                        MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM,
                                      MPI_COMM_WORLD);
                    }
                }
                double dt = (MPI_Wtime() - t0) / iters;
                /* The slowest rank's time is the collective's. */
                MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                (dla_turn ? td : tm)[r] = dt;
            }
        }
        double md = median(td, rounds), mm = median(tm, rounds);
        double factor = 2.0 * (size - 1) / size * (double)sizes[s] / 1e9;
        if (rank == 0)
            printf("%-10lld %12.1f %12.2f %12.1f %12.2f %8.2f\n", (long long)sizes[s], md * 1e6,
                   factor / md, mm * 1e6, factor / mm, mm / md);
        dla_tensor_release(t);
        free(buf);
        free(td);
        free(tm);
    }
    if (rank == 0)
        printf("target: dla/MPI >= 0.80 at >= 4 MiB (bus bandwidth; 1.00 is MPI's own speed)\n");
    MPI_Finalize();
    return status;
}

/* Hybrid MPI + OpenMP halo exchange (issue 19, must-show 3): P ranks on a line, each
 * with 2 OpenMP threads that relax its own half of the rank's array. Every step rank r
 * exchanges a halo of HALO doubles with r-1 and r+1 (non-periodic) through
 * MPI_Sendrecv: small messages, which both Open MPI (vader) and MPICH (nemesis) copy
 * through their shared-memory eager buffers, so the ranks r, r±1 share pages of those
 * segments. Rank 0 prints a checksum that is the same for every run, then every rank
 * exits with the code given as second argument (0 by default), to check that it passes
 * through the launcher and tdmap.
 * Usage: hybrid_halo [STEPS [EXIT_CODE]] (STEPS default 200). */
#include <mpi.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 65536 /* doubles per rank: 512 KiB, 256 KiB per thread */
#define HALO 128 /* doubles per halo message: 1 KiB, under every eager limit */

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int steps = argc > 1 ? atoi(argv[1]) : 200;
    int code = argc > 2 ? atoi(argv[2]) : 0;
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < p - 1 ? rank + 1 : MPI_PROC_NULL;
    /* u[0..HALO) and u[HALO+N..) are the halos received from left and right. */
    double *u = calloc(N + 2 * HALO, sizeof *u);
    double *v = calloc(N + 2 * HALO, sizeof *v);
    if (!u || !v) {
        fprintf(stderr, "hybrid_halo: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#pragma omp parallel num_threads(2)
    {
        /* Each thread first touches its own half. */
#pragma omp for schedule(static)
        for (int i = HALO; i < HALO + N; i++)
            u[i] = v[i] = (double)(rank * N + i);
    }
    for (int s = 0; s < steps; s++) {
        MPI_Sendrecv(&u[HALO], HALO, MPI_DOUBLE, left, 0, &u[HALO + N], HALO, MPI_DOUBLE,
                     right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[N], HALO, MPI_DOUBLE, right, 1, &u[0], HALO, MPI_DOUBLE, left, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#pragma omp parallel for num_threads(2) schedule(static)
        for (int i = HALO; i < HALO + N; i++)
            v[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
        double *t = u;
        u = v;
        v = t;
    }
    /* An exact checksum: the bits of every value, summed as integers. */
    uint64_t mine = 0, all = 0;
    for (int i = HALO; i < HALO + N; i++) {
        union { double d; uint64_t b; } x = {u[i]};
        mine += x.b;
    }
    MPI_Reduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("hybrid_halo %d ranks x %d threads, checksum %016llx\n", p, 2,
               (unsigned long long)all);
    free(u);
    free(v);
    MPI_Finalize();
    return code;
}

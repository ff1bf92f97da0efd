/* A ring whose traffic is known by construction (tests/mpi_comm.rs checks it exactly).
 * Rank r sends ITER messages of (100 + r) doubles to rank r + 1 (mod p), each round
 * through another call: Sendrecv on MPI_COMM_WORLD; Isend on a communicator whose ranks
 * are reversed (so the library must translate them to world ranks); Ssend; and a
 * persistent Send_init/Start. Usage: ring [ITER] (default 20). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iter = argc > 1 ? atoi(argv[1]) : 20;
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, p - r, &rev);
    int next = (r + 1) % p, prev = (r - 1 + p) % p;
    int n = 100 + r, nprev = 100 + prev;
    double *out = calloc(200, sizeof(double)), *in = calloc(200, sizeof(double));
    MPI_Request ps;
    MPI_Send_init(out, n, MPI_DOUBLE, next, 9, MPI_COMM_WORLD, &ps);
    for (int i = 0; i < iter; i++) {
        MPI_Request rq[2];
        switch (i % 4) {
        case 0:
            MPI_Sendrecv(out, n, MPI_DOUBLE, next, 1, in, nprev, MPI_DOUBLE, prev, 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case 1: /* in rev, world rank w is p - 1 - w */
            MPI_Irecv(in, nprev, MPI_DOUBLE, p - 1 - prev, 2, rev, &rq[0]);
            MPI_Isend(out, n, MPI_DOUBLE, p - 1 - next, 2, rev, &rq[1]);
            MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            break;
        case 2:
            MPI_Irecv(in, nprev, MPI_DOUBLE, prev, 3, MPI_COMM_WORLD, &rq[0]);
            MPI_Ssend(out, n, MPI_DOUBLE, next, 3, MPI_COMM_WORLD);
            MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
            break;
        default:
            MPI_Irecv(in, nprev, MPI_DOUBLE, prev, 9, MPI_COMM_WORLD, &rq[0]);
            MPI_Start(&ps);
            MPI_Waitall(1, rq, MPI_STATUSES_IGNORE);
            MPI_Wait(&ps, MPI_STATUS_IGNORE);
        }
    }
    MPI_Request_free(&ps);
    MPI_Comm_free(&rev);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}

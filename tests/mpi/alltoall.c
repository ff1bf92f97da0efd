/* All-to-all traffic. Each step rank r sends every other rank j (r * 10 + j + 1) bytes
 * point-to-point (Isend of MPI_BYTE), then calls MPI_Alltoall with 3 ints per pair and
 * MPI_Alltoallv with r + j + 1 ints from r to j. Usage: alltoall [ITER] (default 10). */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iter = argc > 1 ? atoi(argv[1]) : 10;
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    char *out = calloc(128 * p, 1), *in = calloc(128 * p, 1);
    int *a = calloc(3 * p, sizeof(int)), *b = calloc(3 * p, sizeof(int));
    int *sc = calloc(p, sizeof(int)), *sd = calloc(p, sizeof(int));
    int *rc = calloc(p, sizeof(int)), *rd = calloc(p, sizeof(int));
    int stot = 0, rtot = 0;
    for (int j = 0; j < p; j++) {
        sc[j] = r + j + 1, sd[j] = stot, stot += sc[j];
        rc[j] = j + r + 1, rd[j] = rtot, rtot += rc[j];
    }
    int *vs = calloc(stot, sizeof(int)), *vr = calloc(rtot, sizeof(int));
    MPI_Request *rq = calloc(2 * p, sizeof(MPI_Request));
    for (int i = 0; i < iter; i++) {
        int k = 0;
        for (int j = 0; j < p; j++) {
            if (j == r)
                continue;
            MPI_Irecv(in + 128 * j, j * 10 + r + 1, MPI_BYTE, j, 0, MPI_COMM_WORLD, &rq[k++]);
            MPI_Isend(out + 128 * j, r * 10 + j + 1, MPI_BYTE, j, 0, MPI_COMM_WORLD, &rq[k++]);
        }
        MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
        MPI_Alltoall(a, 3, MPI_INT, b, 3, MPI_INT, MPI_COMM_WORLD);
        MPI_Alltoallv(vs, sc, sd, MPI_INT, vr, rc, rd, MPI_INT, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}

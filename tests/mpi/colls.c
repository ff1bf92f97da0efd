/* Collectives on a communicator of 6 of the 8 world ranks (1..6), numbered in reverse
 * (comm rank c = 6 - world rank): a size that is no power of two, roots other than 0,
 * and ranks the library must translate. ITER times: Bcast of 2 doubles from c = 3,
 * Reduce of 3 ints to c = 2, Allreduce of 1 double, Allgather of 1 int, Allgatherv of
 * j + 1 ints from each c = j, Gather of 4 bytes to c = 1, Scatter of 5 bytes from c = 4,
 * Scatterv of j + 1 ints to each c = j from c = 0. World ranks 0 and 7 only send a
 * Barrier (not charged). Usage: colls [ITER] (default 10). */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iter = argc > 1 ? atoi(argv[1]) : 10;
    int w;
    MPI_Comm_rank(MPI_COMM_WORLD, &w);
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, w >= 1 && w <= 6 ? 1 : MPI_UNDEFINED, 6 - w, &sub);
    double d[2] = {0}, x = w, s;
    int i3[3] = {0}, o3[3], one = w, all[6], big[64], counts[6], displs[6], mine[8];
    char b4[4] = {0}, g[64], b5[5], sc[64] = {0};
    for (int j = 0, t = 0; j < 6; j++)
        counts[j] = j + 1, displs[j] = t, t += j + 1;
    for (int i = 0; i < iter; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (sub == MPI_COMM_NULL)
            continue;
        int c;
        MPI_Comm_rank(sub, &c);
        MPI_Bcast(d, 2, MPI_DOUBLE, 3, sub);
        MPI_Reduce(i3, o3, 3, MPI_INT, MPI_SUM, 2, sub);
        MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, sub);
        MPI_Allgather(&one, 1, MPI_INT, all, 1, MPI_INT, sub);
        MPI_Allgatherv(mine, c + 1, MPI_INT, big, counts, displs, MPI_INT, sub);
        MPI_Gather(b4, 4, MPI_CHAR, g, 4, MPI_CHAR, 1, sub);
        MPI_Scatter(sc, 5, MPI_CHAR, b5, 5, MPI_CHAR, 4, sub);
        MPI_Scatterv(big, counts, displs, MPI_INT, mine, c + 1, MPI_INT, 0, sub);
    }
    if (sub != MPI_COMM_NULL)
        MPI_Comm_free(&sub);
    MPI_Finalize();
    return 0;
}

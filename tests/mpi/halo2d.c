/* A 2-D halo exchange on a 4 x (p/4) non-periodic Cartesian grid (reorder 0, so cart
 * rank = world rank, row-major: rank = x * (p/4) + y). Each step a rank sends a row of
 * NY = 5 doubles (contiguous) to each x-neighbour and a column of NX = 6 doubles (an
 * MPI_Type_vector) to each y-neighbour with Isend/Irecv on the Cartesian communicator,
 * then an Allreduce of one double. Usage: halo2d [ITER] (default 20). */
#include <mpi.h>
#include <stdlib.h>

#define NX 6
#define NY 5

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iter = argc > 1 ? atoi(argv[1]) : 20;
    int p;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int dims[2] = {4, p / 4}, periods[2] = {0, 0};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    if (cart == MPI_COMM_NULL) { /* p not a multiple of 4: extra ranks idle */
        MPI_Finalize();
        return 0;
    }
    double u[NX + 2][NY + 2] = {{0}};
    MPI_Datatype row, col;
    MPI_Type_contiguous(NY, MPI_DOUBLE, &row);
    MPI_Type_vector(NX, 1, NY + 2, MPI_DOUBLE, &col);
    MPI_Type_commit(&row);
    MPI_Type_commit(&col);
    int up, down, left, right;
    MPI_Cart_shift(cart, 0, 1, &up, &down);
    MPI_Cart_shift(cart, 1, 1, &left, &right);
    for (int i = 0; i < iter; i++) {
        MPI_Request rq[8];
        MPI_Irecv(&u[0][1], 1, row, up, 0, cart, &rq[0]);
        MPI_Irecv(&u[NX + 1][1], 1, row, down, 1, cart, &rq[1]);
        MPI_Irecv(&u[1][0], 1, col, left, 2, cart, &rq[2]);
        MPI_Irecv(&u[1][NY + 1], 1, col, right, 3, cart, &rq[3]);
        MPI_Isend(&u[1][1], 1, row, up, 1, cart, &rq[4]);
        MPI_Isend(&u[NX][1], 1, row, down, 0, cart, &rq[5]);
        MPI_Isend(&u[1][1], 1, col, left, 3, cart, &rq[6]);
        MPI_Isend(&u[1][NY], 1, col, right, 2, cart, &rq[7]);
        MPI_Waitall(8, rq, MPI_STATUSES_IGNORE);
        double local = u[1][1], sum;
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, cart);
    }
    MPI_Type_free(&row);
    MPI_Type_free(&col);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}

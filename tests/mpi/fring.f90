! The Fortran test program (mpif.h): rank r sends ITER messages of 50 + r double
! precision values to r + 1 with MPI_SENDRECV, and ITER messages of 30 integers to r - 1
! with MPI_ISEND; then per step an MPI_ALLREDUCE of one double precision, an MPI_BCAST of
! 4 integers from rank 0 and an MPI_ALLTOALL of 2 integers per pair.
program fring
  implicit none
  include 'mpif.h'
  integer, parameter :: iter = 20
  integer :: ierr, r, p, i, nxt, prv, req
  integer :: st(MPI_STATUS_SIZE)
  double precision :: dout(100), din(100), x, s
  integer :: iout(30), iin(30), b(4), ta(64), tb(64)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, r, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, p, ierr)
  nxt = mod(r + 1, p)
  prv = mod(r - 1 + p, p)
  dout = 1.0d0
  iout = r
  do i = 1, iter
    call MPI_SENDRECV(dout, 50 + r, MPI_DOUBLE_PRECISION, nxt, 1, din, 50 + prv, &
                      MPI_DOUBLE_PRECISION, prv, 1, MPI_COMM_WORLD, st, ierr)
    call MPI_ISEND(iout, 30, MPI_INTEGER, prv, 2, MPI_COMM_WORLD, req, ierr)
    call MPI_RECV(iin, 30, MPI_INTEGER, nxt, 2, MPI_COMM_WORLD, st, ierr)
    call MPI_WAIT(req, st, ierr)
    x = r
    call MPI_ALLREDUCE(x, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_BCAST(b, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_ALLTOALL(ta, 2, MPI_INTEGER, tb, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  end do
  call MPI_FINALIZE(ierr)
end program fring

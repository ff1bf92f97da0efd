! The Fortran test program (mpif.h): rank r sends ITER messages of 50 + r double
! precision values to r + 1 with MPI_SENDRECV, and ITER messages of 30 integers to r - 1
! with MPI_ISEND, and 10 integers to r + 1 with a persistent MPI_SEND_INIT/MPI_START;
! then per step an MPI_ALLREDUCE of one double precision, an MPI_BCAST of
! 4 integers from rank 0 and an MPI_ALLTOALL of 2 integers per pair.
program fring
  implicit none
  include 'mpif.h'
  integer, parameter :: iter = 20
  integer :: ierr, r, p, i, nxt, prv, req, preq, rreq
  integer :: st(MPI_STATUS_SIZE)
  double precision :: dout(100), din(100), x, s
  integer :: iout(30), iin(30), b(4), ta(64), tb(64), pout(10), pin(10)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, r, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, p, ierr)
  nxt = mod(r + 1, p)
  prv = mod(r - 1 + p, p)
  dout = 1.0d0
  iout = r
  pout = r
  call MPI_SEND_INIT(pout, 10, MPI_INTEGER, nxt, 3, MPI_COMM_WORLD, preq, ierr)
  do i = 1, iter
    call MPI_SENDRECV(dout, 50 + r, MPI_DOUBLE_PRECISION, nxt, 1, din, 50 + prv, &
                      MPI_DOUBLE_PRECISION, prv, 1, MPI_COMM_WORLD, st, ierr)
    call MPI_ISEND(iout, 30, MPI_INTEGER, prv, 2, MPI_COMM_WORLD, req, ierr)
    call MPI_RECV(iin, 30, MPI_INTEGER, nxt, 2, MPI_COMM_WORLD, st, ierr)
    call MPI_WAIT(req, st, ierr)
    call MPI_IRECV(pin, 10, MPI_INTEGER, prv, 3, MPI_COMM_WORLD, rreq, ierr)
    call MPI_START(preq, ierr)
    call MPI_WAIT(rreq, st, ierr)
    call MPI_WAIT(preq, st, ierr)
    x = r
    call MPI_ALLREDUCE(x, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_BCAST(b, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_ALLTOALL(ta, 2, MPI_INTEGER, tb, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  end do
  call MPI_REQUEST_FREE(preq, ierr)
  call MPI_FINALIZE(ierr)
end program fring

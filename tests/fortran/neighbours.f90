! Neighbours, in Fortran with OpenMP: each thread owns a contiguous slice of two shared
! arrays and, at every step, reads a halo of HALO elements from the slices of threads
! t-1 and t+1 (no wrap-around). Threads t and t+1 share the halo lines; no other pair
! shares anything but the few lines OpenMP itself passes to every thread (the shared
! variables' addresses, the reduction). Usage: neighbours [THREADS]
program neighbours
  use omp_lib
  implicit none
  integer, parameter :: slice = 8192, halo = 512, steps = 4
  real(8), allocatable :: a(:), b(:)
  integer :: nt, t, lo, hi, i, s
  real(8) :: total
  character(len=16) :: arg

  nt = 8
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) nt
  end if
  call omp_set_dynamic(.false.)
  call omp_set_num_threads(nt)
  allocate (a(slice * nt), b(slice * nt))
  total = 0
  !$omp parallel private(t, lo, hi, i, s) reduction(+:total)
  t = omp_get_thread_num()
  lo = t * slice + 1
  hi = lo + slice - 1
  do i = lo, hi
    a(i) = i
    b(i) = 0
  end do
  !$omp barrier
  do s = 1, steps
    do i = lo, hi
      b(i) = a(i)
    end do
    if (t > 0) then
      do i = lo - halo, lo - 1
        b(lo) = b(lo) + a(i)
      end do
    end if
    if (t < nt - 1) then
      do i = hi + 1, hi + halo
        b(hi) = b(hi) + a(i)
      end do
    end if
    !$omp barrier
    do i = lo, hi
      a(i) = 0.5d0 * b(i)
    end do
    !$omp barrier
  end do
  do i = lo, hi
    total = total + a(i)
  end do
  !$omp end parallel
  print '(a, es23.16)', 'checksum ', total
end program neighbours

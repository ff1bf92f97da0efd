! Calls libmai from Fortran through include/mai.f90: allocate a 2-D array, apply cyclic
! and bind_block, write through the Fortran view, check the policy code, free.
program fortran_mai
  use mai
  implicit none
  type(c_ptr) :: p
  real(c_double), pointer :: a(:, :)
  integer :: ok
  ok = 1
  if (mai_get_num_nodes() < 1) ok = 0
  p = mai_alloc_2D(100_c_size_t, 1000_c_size_t, 8_c_size_t)
  if (.not. c_associated(p)) ok = 0
  call c_f_pointer(p, a, [1000, 100])
  a = 1.5d0
  if (mai_cyclic(p) /= 0) ok = 0
  if (mai_bind_block(p) /= 0) ok = 0
  if (mai_mempol(p) /= MAI_POL_BIND_BLOCK) ok = 0
  if (sum(a) /= 1.5d0 * 100000) ok = 0
  if (mai_cyclic_block(p, 0_c_long) /= -1) ok = 0
  if (mai_free_array(p) /= 0) ok = 0
  if (ok == 1) then
    print '(a, i0, a)', 'fortran_mai: ok (', mai_get_num_nodes(), ' nodes)'
  else
    print '(a)', 'fortran_mai: FAILED'
  end if
end program fortran_mai

! mai.f90 - Fortran interface to libmai (include/mai.h), with ISO_C_BINDING.
!
!   gfortran -c include/mai.f90 && gfortran prog.f90 -L target/release -lmai
!
! Arrays: allocate with mai_alloc_1D/2D/3D (a type(c_ptr)) and view them with
! c_f_pointer; mind that mai.h's dimensions are C's (row-major), so a Fortran
! a(nx, ny) is mai_alloc_2D(ny, nx, 8) and mai_bind_rows splits Fortran's last index.
! Return codes and errno are as in mai.h (-1 on error; c_null_ptr for allocations).
! Fortran names are case-blind, so mai.h's policy codes are MAI_POL_* here.
module mai
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int), parameter :: MAI_POL_FIRST_TOUCH = 0, MAI_POL_CYCLIC = 1, MAI_POL_CYCLIC_BLOCK = 2, &
    MAI_POL_SKEW_MAPP = 3, MAI_POL_PRIME_MAPP = 4, MAI_POL_BIND_ALL = 5, MAI_POL_BIND_BLOCK = 6, &
    MAI_POL_RANDOM = 7, MAI_POL_NEXT_TOUCH = 8, MAI_POL_MIGRATED = 9
  interface
    integer(c_int) function mai_init(config) bind(C, name="mai_init")
      import :: c_int, c_char
      character(kind=c_char), dimension(*), intent(in) :: config
    end function
    integer(c_int) function mai_final() bind(C, name="mai_final")
      import :: c_int
    end function
    type(c_ptr) function mai_alloc_1D(nx, item) bind(C, name="mai_alloc_1D")
      import :: c_ptr, c_size_t
      integer(c_size_t), value :: nx, item
    end function
    type(c_ptr) function mai_alloc_2D(nx, ny, item) bind(C, name="mai_alloc_2D")
      import :: c_ptr, c_size_t
      integer(c_size_t), value :: nx, ny, item
    end function
    type(c_ptr) function mai_alloc_3D(nx, ny, nz, item) bind(C, name="mai_alloc_3D")
      import :: c_ptr, c_size_t
      integer(c_size_t), value :: nx, ny, nz, item
    end function
    integer(c_int) function mai_free_array(p) bind(C, name="mai_free_array")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    integer(c_int) function mai_cyclic(p) bind(C, name="mai_cyclic")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    integer(c_int) function mai_cyclic_block(p, block) bind(C, name="mai_cyclic_block")
      import :: c_int, c_ptr, c_long
      type(c_ptr), value :: p
      integer(c_long), value :: block
    end function
    integer(c_int) function mai_skew_mapp(p) bind(C, name="mai_skew_mapp")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    integer(c_int) function mai_prime_mapp(p, prime) bind(C, name="mai_prime_mapp")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
      integer(c_int), value :: prime
    end function
    integer(c_int) function mai_bind_all(p, nodes, n) bind(C, name="mai_bind_all")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
      integer(c_int), dimension(*), intent(in) :: nodes
      integer(c_int), value :: n
    end function
    integer(c_int) function mai_bind_block(p) bind(C, name="mai_bind_block")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    integer(c_int) function mai_bind_rows(p) bind(C, name="mai_bind_rows")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    integer(c_int) function mai_bind_columns(p) bind(C, name="mai_bind_columns")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    integer(c_int) function mai_bind_planes(p) bind(C, name="mai_bind_planes")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    integer(c_int) function mai_random(p, seed) bind(C, name="mai_random")
      import :: c_int, c_ptr, c_long
      type(c_ptr), value :: p
      integer(c_long), value :: seed
    end function
    integer(c_int) function mai_next_touch(p) bind(C, name="mai_next_touch")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    integer(c_int) function mai_migrate_rows(p, node, start, n) bind(C, name="mai_migrate_rows")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_int), value :: node
      integer(c_size_t), value :: start, n
    end function
    integer(c_int) function mai_migrate_columns(p, node, start, n) bind(C, name="mai_migrate_columns")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_int), value :: node
      integer(c_size_t), value :: start, n
    end function
    integer(c_int) function mai_migrate_scatter(p, nodes) bind(C, name="mai_migrate_scatter")
      import :: c_int, c_ptr, c_long
      type(c_ptr), value :: p
      integer(c_long), value :: nodes
    end function
    integer(c_int) function mai_migrate_gather(p, node) bind(C, name="mai_migrate_gather")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
      integer(c_int), value :: node
    end function
    integer(c_int) function mai_set_threads(n) bind(C, name="mai_set_threads")
      import :: c_int
      integer(c_int), value :: n
    end function
    integer(c_int) function mai_bind_threads_file(path) bind(C, name="mai_bind_threads_file")
      import :: c_int, c_char
      character(kind=c_char), dimension(*), intent(in) :: path
    end function
    integer(c_int) function mai_bind_thread(t) bind(C, name="mai_bind_thread")
      import :: c_int
      integer(c_int), value :: t
    end function
    integer(c_int) function mai_get_num_nodes() bind(C, name="mai_get_num_nodes")
      import :: c_int
    end function
    integer(c_int) function mai_get_num_cpu() bind(C, name="mai_get_num_cpu")
      import :: c_int
    end function
    integer(c_int) function mai_cpu_node(cpu) bind(C, name="mai_cpu_node")
      import :: c_int
      integer(c_int), value :: cpu
    end function
    integer(c_long_long) function mai_cache_size(level) bind(C, name="mai_cache_size")
      import :: c_int, c_long_long
      integer(c_int), value :: level
    end function
    integer(c_long_long) function mai_node_free_memory(node) bind(C, name="mai_node_free_memory")
      import :: c_int, c_long_long
      integer(c_int), value :: node
    end function
    real(c_double) function mai_numa_factor() bind(C, name="mai_numa_factor")
      import :: c_double
    end function
    integer(c_int) function mai_mempol(p) bind(C, name="mai_mempol")
      import :: c_int, c_ptr
      type(c_ptr), value :: p
    end function
    real(c_double) function mai_get_time_pmigration() bind(C, name="mai_get_time_pmigration")
      import :: c_double
    end function
  end interface
end module mai

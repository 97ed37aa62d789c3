# SP_CHECK_MPI: --with-mpi[=DIR]; default "use if found", error if asked for
# and missing.  Finds an MPI C compiler wrapper (mpicc) and the launcher
# (mpirun/mpiexec) used by the tests.  Sets HAVE_MPI, MPICC, MPIRUN,
# MPI_CFLAGS, MPI_LIBS (from the wrapper's -showme/-show).
AC_DEFUN([SP_CHECK_MPI], [
  AC_ARG_WITH([mpi], [AS_HELP_STRING([--with-mpi@<:@=DIR@:>@],
              [build the MPI backend and the launcher bootstrap (default: check)])],
              [], [with_mpi=check])
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper])
  AC_ARG_VAR([MPIRUN], [MPI launcher used by the tests])
  sp_mpi_happy=no
  AS_IF([test "x$with_mpi" != xno], [
    AS_CASE([$with_mpi], [yes|check], [sp_mpi_path=$PATH], [sp_mpi_path=$with_mpi/bin:$PATH])
    AC_PATH_PROGS([MPICC], [mpicc], [], [$sp_mpi_path])
    AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [], [$sp_mpi_path])
    AS_IF([test -n "$MPICC"], [
      MPI_CFLAGS=`$MPICC -showme:compile 2>/dev/null || $MPICC -compile_info 2>/dev/null | cut -d' ' -f2-`
      MPI_LIBS=`$MPICC -showme:link 2>/dev/null || $MPICC -link_info 2>/dev/null | cut -d' ' -f2-`
      sp_save_CFLAGS=$CFLAGS; sp_save_LIBS=$LIBS
      CFLAGS="$CFLAGS $MPI_CFLAGS"; LIBS="$LIBS $MPI_LIBS"
      AC_MSG_CHECKING([whether MPI programs link])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[MPI_Init(0, 0); MPI_Finalize();]])],
        [sp_mpi_happy=yes], [sp_mpi_happy=no])
      AC_MSG_RESULT([$sp_mpi_happy])
      CFLAGS=$sp_save_CFLAGS; LIBS=$sp_save_LIBS])
    AS_IF([test $sp_mpi_happy = no && test "x$with_mpi" != xcheck],
          [AC_MSG_ERROR([--with-mpi given but no working mpicc found])])])
  AS_IF([test $sp_mpi_happy = yes], [AC_DEFINE([HAVE_MPI], [1], [MPI backend built])])
  AC_SUBST([MPI_CFLAGS]) AC_SUBST([MPI_LIBS])
  AM_CONDITIONAL([HAVE_MPI], [test $sp_mpi_happy = yes])
])

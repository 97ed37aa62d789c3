# SP_CHECK_NCCL: --with-nccl[=DIR]; default "use if found", error if asked
# for and missing.  The NCCL backend also needs CUDA and MPI (its bootstrap),
# so it is built only when all three are present.  Sets HAVE_NCCL,
# NCCL_CPPFLAGS, NCCL_LDFLAGS, NCCL_LIBS, sp_nccl_version.
AC_DEFUN([SP_CHECK_NCCL], [
  AC_REQUIRE([SP_CHECK_CUDA])
  AC_ARG_WITH([nccl], [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@],
              [build the NCCL backend (default: check)])], [], [with_nccl=check])
  sp_nccl_happy=no
  sp_nccl_version=
  AS_IF([test "x$with_nccl" != xno], [
    AS_CASE([$with_nccl], [yes|check], [sp_nccl_dirs="/usr/local/cuda /usr"], [sp_nccl_dirs=$with_nccl])
    for sp_d in $sp_nccl_dirs; do
      AS_IF([test -f "$sp_d/include/nccl.h"], [
        NCCL_CPPFLAGS="-I$sp_d/include"
        AS_IF([test -d "$sp_d/lib64"], [sp_nccl_libdir=$sp_d/lib64], [sp_nccl_libdir=$sp_d/lib])
        AS_IF([test -d "$sp_d/lib/x86_64-linux-gnu" && test ! -e "$sp_nccl_libdir/libnccl.so"],
              [sp_nccl_libdir=$sp_d/lib/x86_64-linux-gnu])
        NCCL_LDFLAGS="-L$sp_nccl_libdir -Wl,-rpath,$sp_nccl_libdir"
        break])
    done
    sp_save_CPPFLAGS=$CPPFLAGS; sp_save_LDFLAGS=$LDFLAGS; sp_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $NCCL_CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS -L$sp_nccl_libdir"
    AC_CHECK_HEADER([nccl.h],
      [AC_CHECK_LIB([nccl], [ncclCommInitRank], [NCCL_LIBS=-lnccl; sp_nccl_happy=yes], [], [$CUDART_LIBS])])
    AS_IF([test $sp_nccl_happy = yes], [
      AC_COMPUTE_INT([sp_nccl_major], [NCCL_MAJOR], [#include <nccl.h>])
      AC_COMPUTE_INT([sp_nccl_minor], [NCCL_MINOR], [#include <nccl.h>])
      sp_nccl_version="$sp_nccl_major.$sp_nccl_minor"])
    CPPFLAGS=$sp_save_CPPFLAGS; LDFLAGS=$sp_save_LDFLAGS; LIBS=$sp_save_LIBS
    AS_IF([test $sp_nccl_happy = yes && test $sp_cuda_happy != yes],
          [AC_MSG_WARN([NCCL found but CUDA is not: NCCL backend disabled]); sp_nccl_happy=no])
    AS_IF([test $sp_nccl_happy = no && test "x$with_nccl" != xcheck],
          [AC_MSG_ERROR([--with-nccl given but nccl.h/libnccl (with CUDA) not found])])])
  AS_IF([test $sp_nccl_happy = yes], [AC_DEFINE([HAVE_NCCL], [1], [NCCL backend built])])
  AC_SUBST([NCCL_CPPFLAGS]) AC_SUBST([NCCL_LDFLAGS]) AC_SUBST([NCCL_LIBS])
  AM_CONDITIONAL([HAVE_NCCL], [test $sp_nccl_happy = yes])
])

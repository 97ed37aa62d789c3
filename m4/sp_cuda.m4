# SP_CHECK_CUDA: --with-cuda[=DIR]; default "use if found", error if asked
# for and missing.  Never runs a GPU program.  Sets HAVE_CUDA (define and
# AM_CONDITIONAL, evaluated on every path), NVCC, CUDA_CPPFLAGS,
# CUDA_LDFLAGS, CUDART_LIBS, NVCC_GENCODE.
AC_DEFUN([SP_CHECK_CUDA], [
  AC_ARG_WITH([cuda], [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
              [build the CUDA kernels (default: check)])], [], [with_cuda=check])
  AC_ARG_VAR([NVCC], [CUDA compiler])
  AC_ARG_VAR([NVCCFLAGS], [extra flags for NVCC])
  AC_ARG_WITH([cuda-arch], [AS_HELP_STRING([--with-cuda-arch=LIST],
              [compute capabilities to build for (default: "80 90")])],
              [], [with_cuda_arch="80 90"])
  sp_cuda_happy=no
  AS_IF([test "x$with_cuda" != xno], [
    AS_CASE([$with_cuda], [yes|check], [sp_cuda_dir=/usr/local/cuda], [sp_cuda_dir=$with_cuda])
    AC_PATH_PROG([NVCC], [nvcc], [], [$sp_cuda_dir/bin:$PATH])
    AS_IF([test -d "$sp_cuda_dir/lib64"], [sp_cuda_libdir=$sp_cuda_dir/lib64], [sp_cuda_libdir=$sp_cuda_dir/lib])
    CUDA_CPPFLAGS="-I$sp_cuda_dir/include"
    CUDA_LDFLAGS="-L$sp_cuda_libdir -Wl,-rpath,$sp_cuda_libdir"
    sp_save_CPPFLAGS=$CPPFLAGS; sp_save_LDFLAGS=$LDFLAGS; sp_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS -L$sp_cuda_libdir"
    AC_CHECK_HEADER([cuda_runtime_api.h],
      [AC_CHECK_LIB([cudart], [cudaGetDeviceCount],
         [CUDART_LIBS=-lcudart; AS_IF([test -n "$NVCC"], [sp_cuda_happy=yes])])])
    CPPFLAGS=$sp_save_CPPFLAGS; LDFLAGS=$sp_save_LDFLAGS; LIBS=$sp_save_LIBS
    AS_IF([test $sp_cuda_happy = no && test "x$with_cuda" != xcheck],
          [AC_MSG_ERROR([--with-cuda given but nvcc/cudart not found under $sp_cuda_dir])])
    AS_IF([test $sp_cuda_happy = no], [AC_MSG_WARN([CUDA not found; CPU kernels only])])])
  NVCC_GENCODE=
  sp_last_arch=
  for sp_cc in $with_cuda_arch; do
    NVCC_GENCODE="$NVCC_GENCODE -gencode=arch=compute_$sp_cc,code=sm_$sp_cc"; sp_last_arch=$sp_cc
  done
  AS_IF([test -n "$sp_last_arch"],
        [NVCC_GENCODE="$NVCC_GENCODE -gencode=arch=compute_$sp_last_arch,code=compute_$sp_last_arch"])
  AS_IF([test $sp_cuda_happy = yes], [AC_DEFINE([HAVE_CUDA], [1], [CUDA kernels built])])
  AC_SUBST([CUDA_CPPFLAGS]) AC_SUBST([CUDA_LDFLAGS]) AC_SUBST([CUDART_LIBS])
  AC_SUBST([NVCC_GENCODE])
  AM_CONDITIONAL([HAVE_CUDA], [test $sp_cuda_happy = yes])
])

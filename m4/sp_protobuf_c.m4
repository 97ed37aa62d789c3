# SP_CHECK_PROTOBUF_C: --with-protobuf-c; default "use if found", error if
# asked for and missing.  Needs both the library (pkg-config libprotobuf-c)
# and the code generator (protoc-c, Debian protobuf-c-compiler): the Chakra
# ET reader and writer (tools/chakra/) are generated from tools/chakra/et_def.proto
# at build time.  Sets HAVE_PROTOBUF_C, PROTOC_C, PROTOBUF_C_CFLAGS/LIBS.
AC_DEFUN([SP_CHECK_PROTOBUF_C], [
  AC_ARG_WITH([protobuf-c], [AS_HELP_STRING([--with-protobuf-c],
              [Chakra execution-trace export and import (default: check)])],
              [], [with_protobuf_c=check])
  AC_ARG_VAR([PROTOC_C], [protobuf-c code generator])
  sp_protobuf_c_happy=no
  AS_IF([test "x$with_protobuf_c" != xno], [
    AC_PATH_PROGS([PROTOC_C], [protoc-c protoc-gen-c], [])
    PKG_CHECK_MODULES([PROTOBUF_C], [libprotobuf-c >= 1.3],
      [AS_IF([test -n "$PROTOC_C"], [sp_protobuf_c_happy=yes])], [:])
    AS_IF([test $sp_protobuf_c_happy = no && test "x$with_protobuf_c" = xyes],
          [AC_MSG_ERROR([--with-protobuf-c given but libprotobuf-c (>= 1.3) or protoc-c not found])])])
  AS_IF([test $sp_protobuf_c_happy = yes], [AC_DEFINE([HAVE_PROTOBUF_C], [1], [Chakra ET export/import built])])
  AM_CONDITIONAL([HAVE_PROTOBUF_C], [test $sp_protobuf_c_happy = yes])
])

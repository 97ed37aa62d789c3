/* exec/mpi/boot.c — the process bootstrap over MPI: rank, size, clock,
 * a deadline-polled barrier that carries failure flags, byte gathers and
 * the clock-offset estimate.  The driver reaches MPI only through this
 * table.  The bootstrap uses its own duplicate of MPI_COMM_WORLD with
 * MPI_ERRORS_RETURN so that a dead peer gives an error or a timeout rather
 * than an abort. */
#include "config.h"
#include "exec-internal.h"
#include "mpi/mpi-internal.h"

#include <mpi.h>
#include <unistd.h>

static MPI_Comm boot_comm = MPI_COMM_NULL;
static int boot_rank, boot_size;

MPI_Comm
sp_exec_mpi_world (void)
{
  return boot_comm;
}

gboolean
sp_exec_mpi_check (int rc, const char *what, GError **error)
{
  if (rc == MPI_SUCCESS)
    return TRUE;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string (rc, msg, &len);
  g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "%s failed: %.*s", what, len, msg);
  return FALSE;
}

static gboolean
boot_init (gboolean *out_owned, GError **error)
{
  int inited = 0;
  MPI_Initialized (&inited);
  *out_owned = FALSE;
  if (!inited)
    {
      /* FUNNELED: the driver's watchdog thread (exec/exec-loop.c) makes no
       * MPI call, only the main thread does. */
      int provided;
      if (!sp_exec_mpi_check (MPI_Init_thread (NULL, NULL, MPI_THREAD_FUNNELED, &provided), "MPI_Init", error))
        return FALSE;
      *out_owned = TRUE;
    }
  MPI_Comm_set_errhandler (MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  /* A second run in the same process (bench-exec) keeps the first's duplicate. */
  if (boot_comm == MPI_COMM_NULL &&
      !sp_exec_mpi_check (MPI_Comm_dup (MPI_COMM_WORLD, &boot_comm), "MPI_Comm_dup", error))
    return FALSE;
  MPI_Comm_set_errhandler (boot_comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank (boot_comm, &boot_rank);
  MPI_Comm_size (boot_comm, &boot_size);
  return TRUE;
}

static void
boot_finalize (void)
{
  if (boot_comm != MPI_COMM_NULL)
    MPI_Comm_free (&boot_comm);
  int fin = 0;
  MPI_Finalized (&fin);
  if (!fin)
    MPI_Finalize ();
}

static guint32
boot_get_rank (void)
{
  return (guint32) boot_rank;
}

static guint32
boot_get_size (void)
{
  return (guint32) boot_size;
}

static gint64
boot_now_ns (void)
{
  return (gint64) (MPI_Wtime () * 1e9);
}

/* Poll one request until it completes or the deadline passes. */
SpExecStatus
sp_exec_mpi_wait (MPI_Request *req, gint64 deadline_ns)
{
  for (;;)
    {
      int flag = 0;
      if (MPI_Test (req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return SP_EXEC_ERROR;
      if (flag)
        return SP_EXEC_OK;
      if (boot_now_ns () > deadline_ns)
        return SP_EXEC_TIMEOUT;
    }
}

static SpExecStatus
boot_sync (guint32 *inout_flags, gint64 deadline_ns)
{
  guint32 in = *inout_flags;
  MPI_Request req;
  if (MPI_Iallreduce (&in, inout_flags, 1, MPI_UINT32_T, MPI_BOR, boot_comm, &req) != MPI_SUCCESS)
    return SP_EXEC_ERROR;
  return sp_exec_mpi_wait (&req, deadline_ns);
}

static gboolean
boot_allgather (const void *in, gsize bytes, void *out, GError **error)
{
  return sp_exec_mpi_check (MPI_Allgather (in, (int) bytes, MPI_BYTE, out, (int) bytes, MPI_BYTE, boot_comm),
                   "MPI_Allgather", error);
}

static gboolean
boot_gatherv (const void *in, gsize bytes, guint8 **out_data, guint64 **out_lengths, GError **error)
{
  *out_data = NULL;
  *out_lengths = NULL;
  guint64 len = bytes;
  g_autofree guint64 *lens = boot_rank == 0 ? g_new0 (guint64, boot_size) : NULL;
  if (!sp_exec_mpi_check (MPI_Gather (&len, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T, 0, boot_comm),
                 "MPI_Gather", error))
    return FALSE;
  /* Rank 0 takes the rows only where it could allocate them all: it says
   * so first (a rank sending to a rank 0 that posts no receive would wait
   * forever, with no deadline). */
  guint64 total = 0;
  g_autofree guint8 *data = NULL;
  if (boot_rank == 0)
    {
      for (int r = 0; r < boot_size; r++)
        total += lens[r];
      data = g_try_malloc (total ? total : 1);
    }
  guint8 go = data != NULL;
  if (!sp_exec_mpi_check (MPI_Bcast (&go, 1, MPI_BYTE, 0, boot_comm), "MPI_Bcast", error))
    return FALSE;
  if (!go)
    {
      if (boot_rank == 0)
        g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "cannot allocate %" G_GUINT64_FORMAT
                     " bytes for the gathered trace rows", total);
      else
        g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "rank 0 cannot hold the gathered trace "
                     "rows (out of memory)");
      return FALSE;
    }
  /* Large payloads go in 1 GiB pieces (int counts), one rank at a time. */
  const guint64 piece = 1u << 30;
  if (boot_rank != 0)
    {
      for (guint64 off = 0; off < len; off += piece)
        {
          int n = (int) MIN (piece, len - off);
          if (!sp_exec_mpi_check (MPI_Send ((const guint8 *) in + off, n, MPI_BYTE, 0, 77, boot_comm),
                         "MPI_Send", error))
            return FALSE;
        }
      return TRUE;
    }
  guint64 at = 0;
  for (int r = 0; r < boot_size; r++)
    {
      if (r == 0)
        memcpy (data, in, bytes);
      else
        for (guint64 off = 0; off < lens[r]; off += piece)
          {
            int n = (int) MIN (piece, lens[r] - off);
            if (!sp_exec_mpi_check (MPI_Recv (data + at + off, n, MPI_BYTE, r, 77, boot_comm,
                                     MPI_STATUS_IGNORE), "MPI_Recv", error))
              return FALSE;
          }
      at += lens[r];
    }
  *out_data = g_steal_pointer (&data);
  *out_lengths = g_steal_pointer (&lens);
  return TRUE;
}

static gboolean
boot_bcast (void *buf, gsize bytes, guint32 root, GError **error)
{
  return sp_exec_mpi_check (MPI_Bcast (buf, (int) bytes, MPI_BYTE, (int) root, boot_comm), "MPI_Bcast", error);
}

/* Cristian's method against rank 0, one rank at a time: the offset from the
 * exchange with the smallest round trip (assumes symmetric latency). */
static gboolean
boot_clock_offset (gint64 *out_offset_ns, GError **error)
{
  const int rounds = 20;
  gint64 offset = 0;
  for (int r = 1; r < boot_size; r++)
    {
      if (boot_rank == 0)
        for (int i = 0; i < rounds; i++)
          {
            gint64 dummy, now;
            if (!sp_exec_mpi_check (MPI_Recv (&dummy, 1, MPI_INT64_T, r, 78, boot_comm, MPI_STATUS_IGNORE),
                           "MPI_Recv", error))
              return FALSE;
            now = boot_now_ns ();
            if (!sp_exec_mpi_check (MPI_Send (&now, 1, MPI_INT64_T, r, 79, boot_comm), "MPI_Send", error))
              return FALSE;
          }
      else if (boot_rank == r)
        {
          gint64 best_rtt = G_MAXINT64;
          for (int i = 0; i < rounds; i++)
            {
              gint64 t0 = boot_now_ns (), remote, t1;
              if (!sp_exec_mpi_check (MPI_Send (&t0, 1, MPI_INT64_T, 0, 78, boot_comm), "MPI_Send", error) ||
                  !sp_exec_mpi_check (MPI_Recv (&remote, 1, MPI_INT64_T, 0, 79, boot_comm, MPI_STATUS_IGNORE),
                             "MPI_Recv", error))
                return FALSE;
              t1 = boot_now_ns ();
              if (t1 - t0 < best_rtt)
                {
                  best_rtt = t1 - t0;
                  offset = (t0 + (t1 - t0) / 2) - remote;
                }
            }
        }
    }
  *out_offset_ns = offset;
  return TRUE;
}

static gboolean
boot_local_rank (guint32 *out_local, guint32 *out_local_size, GError **error)
{
  MPI_Comm node;
  if (!sp_exec_mpi_check (MPI_Comm_split_type (boot_comm, MPI_COMM_TYPE_SHARED, boot_rank, MPI_INFO_NULL,
                                      &node), "MPI_Comm_split_type", error))
    return FALSE;
  int lr, ls;
  MPI_Comm_rank (node, &lr);
  MPI_Comm_size (node, &ls);
  MPI_Comm_free (&node);
  *out_local = (guint32) lr;
  *out_local_size = (guint32) ls;
  return TRUE;
}

static char *
boot_hostname (void)
{
  char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
  int len = 0;
  if (MPI_Get_processor_name (name, &len) != MPI_SUCCESS)
    return g_strdup (g_get_host_name ());
  return g_strndup (name, (gsize) len);
}

static char *
boot_library_version (void)
{
  char v[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
  int len = 0;
  MPI_Get_library_version (v, &len);
  /* Open MPI appends a newline and the release date; keep the first line. */
  char *nl = strchr (v, '\n');
  if (nl)
    *nl = '\0';
  return g_strstrip (g_strdup (v));
}

static void
boot_abort (int code)
{
  MPI_Abort (MPI_COMM_WORLD, code);
  _exit (code);
}

const SpExecBoot sp_exec_boot_mpi = {
  .name = "mpi",
  .init = boot_init,
  .finalize = boot_finalize,
  .rank = boot_get_rank,
  .size = boot_get_size,
  .now_ns = boot_now_ns,
  .sync = boot_sync,
  .allgather = boot_allgather,
  .gatherv = boot_gatherv,
  .bcast = boot_bcast,
  .clock_offset = boot_clock_offset,
  .local_rank = boot_local_rank,
  .hostname = boot_hostname,
  .library_version = boot_library_version,
  .abort = boot_abort,
};

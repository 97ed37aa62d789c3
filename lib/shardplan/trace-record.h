/* shardplan/trace-record.h — the trace records, each defined ONCE.
 *
 * Every table below is an X-macro: X (KIND, CTYPE, NAME, SINCE, DOC) per
 * field, in file order.  One expansion declares the C struct (trace.h),
 * another builds the HDF5 compound types (memory and file), the reader's
 * field checks and the CSV/JSON field formatting (lib/trace-*.c).  Adding a
 * field is one line here, at the END of its table, with SINCE = the new
 * minor schema version (and SP_TRACE_SCHEMA_MINOR bumped in trace.h).
 * A reader fills a field an older file lacks with its sp_trace_row_init()
 * value.
 *
 * History: 1.0 the first schema; 1.1 added nccl_est_ns to /ops/ops (NCCL's
 * own estimate of each op, -1 where there is none: every producer but the
 * NCCL backend, and 1.0 files); 1.2 added the optional root attribute
 * check_policy (no table changed); 1.3 added the value p2p = 18 to the coll
 * enum (a one-way point-to-point op: rows on its sender and receiver only;
 * no table changed).
 *
 * KIND (C type → HDF5 file type):
 *   U8 (guint8 → H5T_STD_U8LE), U32, I32, U64, I64 (likewise), F64 (double →
 *   H5T_IEEE_F64LE), STR (const char * → variable-length UTF-8 string),
 *   COLL (SpColl), DTYPE (SpDtype), REDOP (SpRedop), STATUS (SpTraceStatus):
 *   HDF5 enum types on an 8-bit unsigned base whose member names are
 *   sp_coll_name() / sp_dtype_name() / sp_redop_name() /
 *   sp_trace_status_name() and whose values are the C enum values.
 */
#pragma once

/* /ops/ops: one row per (op instance, iteration, rank).  SpTraceRow. */
#define SP_TRACE_ROW_FIELDS(X)                                                              \
  X (U32, guint32, op_id, 0, "the op's id in the plan")                                    \
  X (I64, gint64, parent_op_id, 0, "id of the composite op this is a sub-op of, or -1")   \
  X (I32, gint32, iter, 0, "timed iteration 0..iters-1 (warm-up iterations are not stored)") \
  X (U32, guint32, rank, 0, "global rank")                                                 \
  X (U32, guint32, group_id, 0, "/groups/groups row of the op's group (SP_TRACE_NO_GROUP: none)") \
  X (U32, guint32, group_rank, 0, "rank within the group")                                 \
  X (U32, guint32, group_size, 0, "ranks in the group (n of the bandwidth formulas)")      \
  X (U32, guint32, seq_in_group, 0, "sequence number of the op on the group's communicator") \
  X (COLL, SpColl, coll, 0, "op kind")                                                     \
  X (DTYPE, SpDtype, dtype, 0, "element type")                                             \
  X (REDOP, SpRedop, redop, 0, "reduction")                                                \
  X (U32, guint32, flags, 0, "SP_TRACE_FLAG_* bits")                                       \
  X (STATUS, SpTraceStatus, status, 0, "outcome")                                          \
  X (U64, guint64, count, 0, "elements (nccl-tests convention)")                           \
  X (U64, guint64, bytes, 0, "bytes (nccl-tests convention)")                              \
  X (I64, gint64, t_enqueue_ns, 0, "ns since the run epoch: op handed to the backend")     \
  X (I64, gint64, t_start_ns, 0, "ns since the run epoch: op started")                     \
  X (I64, gint64, t_end_ns, 0, "ns since the run epoch: op finished")                      \
  X (I64, gint64, dur_ns, 0, "duration in ns as timed by the run's timing mode")           \
  X (F64, double, algbw_gbs, 0, "nccl-tests algbw, GB/s = 1e9 B/s")                        \
  X (F64, double, busbw_gbs, 0, "nccl-tests busbw, GB/s = 1e9 B/s")                        \
  X (I64, gint64, nccl_est_ns, 1, "NCCL's own estimate of the op's time (ncclGroupSimulateEnd), ns; -1: none")

/* /meta/cluster/nodes.  SpTraceNode. */
#define SP_TRACE_NODE_FIELDS(X)                                     \
  X (U32, guint32, node_id, 0, "node index 0..")                   \
  X (STR, const char *, hostname, 0, "host name")                  \
  X (U32, guint32, n_gpus, 0, "GPUs used on the node (0: CPU run)") \
  X (STR, const char *, gpu_model, 0, "GPU model, \"\" for none")

/* /meta/cluster/ranks.  SpTraceRank. */
#define SP_TRACE_RANK_FIELDS(X)                                                   \
  X (U32, guint32, rank, 0, "global rank")                                       \
  X (U32, guint32, node_id, 0, "node the rank ran on")                           \
  X (U32, guint32, local_rank, 0, "rank within its node")                        \
  X (I32, gint32, device, 0, "GPU ordinal, -1 for a CPU rank")                  \
  X (I64, gint64, clock_offset_ns, 0, "this rank's clock minus the reference clock, ns")

/* /meta/env.  SpTraceEnv. */
#define SP_TRACE_ENV_FIELDS(X)                   \
  X (STR, const char *, key, 0, "variable name") \
  X (STR, const char *, value, 0, "its value")

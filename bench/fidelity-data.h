/* bench/fidelity-data.h — the data files of the fidelity benchmark
 * (published nccl-tests runs: bench/data/nccl-tests/README.md), read for
 * bench/fidelity and for its fuzz target (tests/fuzz/fuzz-fidelity.c).
 *
 * A data file is a JSON array of datasets.  Each dataset has an `id`, a
 * `collective` (allreduce, allgather, reducescatter, alltoall, broadcast),
 * `rows` (each timed row: `bytes`, `time_us`; a row without `time_us` or
 * with `time_derived` true is not a timing and is left out), and its
 * cluster as a `topology_ini` — or, where the file predates a topology key
 * (shared/data/nccl-tests/nvl72.json), as a `datasheet` block, turned into
 * the same INI by sp_fid_datasheet_ini.  `core` (default true: only a
 * `false` leaves a dataset out of the headline figures) and
 * `ranks_per_node` (default: every GPU of a node) are optional.  A dataset
 * with neither a topology nor a datasheet is skipped and counted.  Every
 * other departure from this is an error naming the file, the dataset and
 * the row: these files come from other people. */
#pragma once
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define SP_FID_MODELS_MAX 3
/* The largest data file read (the development set is 165 kB; json-glib's
 * tree costs ~20× the text). */
#define SP_FID_MAX_FILE ((gsize) 64 << 20)
/* A row's size: a whole number of bytes up to 2^53 (a double holds it
 * exactly); its time: at least a nanosecond (nccl-tests prints 0.1 µs). */
#define SP_FID_MAX_ROW_BYTES 9007199254740992.0
#define SP_FID_MIN_TIME_US 1e-3

typedef struct {
  char *set;       /* the data file's base name */
  char *dataset;
  char *coll;
  char *transport;
  guint32 nodes;
  gboolean core;
  guint64 bytes;
  double measured_us;
  double sim_us[SP_FID_MODELS_MAX];
  char *choice[SP_FID_MODELS_MAX];
} SpFidRow;

void sp_fid_row_free (gpointer row);

/* The topology INI of dataset `id` from its datasheet block: [cluster]
 * name = id (where it can stand in an INI), nodes = hosts, gpus_per_node =
 * gpus_per_host, nvlink_domain = nvlink_domain_gpus (when given); [gpu]
 * model = gpu, memory_gib, tflops = tflops_bf16_dense; [intra] kind =
 * intra_kind, else nvswitch where the NVLink domain spans hosts
 * (rack-scale NVLink runs through NVLink switch trays; with neither the
 * block is refused), bandwidth_gbs = nvlink_gbs_per_gpu_one_direction;
 * [inter] (required with more than one host) nics_per_node =
 * nics_per_host, nic_gbps, fabric (given, else rail where the domain
 * spans hosts: the GB200 SuperPOD layout, as bench/data/nccl-tests/
 * nvl72.json assumes; it carries no traffic inside one domain), transport.
 * Counts are whole numbers (2 or 2.0), rates positive numbers.  Datasheet
 * numbers only, as the data set's README scores.  NULL with an error
 * naming the datasheet key when one is missing, of the wrong type, not
 * positive, or a string that cannot stand as one INI value (1-200
 * printable characters, none of # ; [ ] = \); a value the topology reader
 * then refuses (out of its range) is named by sp_fid_load with the INI key
 * it went to. */
char *sp_fid_datasheet_ini (JsonObject *sheet, const char *id, GError **error);

/* Read the data file `text` (`length` bytes) named `set`, appending one
 * SpFidRow per timed row to `rows`, estimated with each of `models`
 * (none when n_models is 0: the fuzz target reads without simulating).
 * `skipped` (g_free'd strings) gets the id of each dataset without a
 * topology or a datasheet; `inis`, when not NULL, each scored dataset's
 * topology as "# ID: topology_ini | datasheet" and the INI text. */
gboolean sp_fid_load (const char *set, const char *text, gsize length, const SpSimModel *models,
                      guint n_models, GPtrArray *rows, GPtrArray *skipped, GString *inis,
                      GError **error);

G_END_DECLS

/* tools/groups-output.h — the printers of `shardplan groups`.
 *
 * JSON follows the DESIGN.md contract exactly:
 *   {"world_size": W, "families": {"<family>": [[rank, …], …], …},
 *    "creation_order": [["<family>", index], …]}
 * Families appear in one fixed key order (shard, replicate, shard_intra_node,
 * shard_inter_node, tensor, data, expert, expert_data, zero_param,
 * local_all_to_all), only those that were built.  The library's two families
 * local_all_to_all.local and .global are printed as the one family
 * "local_all_to_all": the local groups first, then the global groups, with
 * indices continuing (global_i has index n_local + i), in creation_order too.
 * The world family is never printed.  When S == W, DeepSpeed's replicate list
 * is W singletons [[0], [1], …]: they are printed, but no communicator is
 * created for them, so they are not in creation_order.
 *
 * Both printers write through one large private buffer with a hand-written
 * integer formatter: a million-rank layout is ~30 MB of JSON and must print
 * in well under a second (bench/bench-groups.sh).
 */
#pragma once
#include <glib.h>
#include <stdio.h>

#include "shardplan/groups.h"

G_BEGIN_DECLS

/* Print `groups` as the JSON object above (one line plus '\n') on `out`.
 * Fails with SP_ERROR_IO if writing fails. */
gboolean sp_groups_print_json (const SpGroups *groups, FILE *out, GError **error);

/* Print a readable table: family, group index, DeepSpeed's label (or "-"),
 * size and members as "rank(nNODE)" with node = rank / devices_per_node;
 * long member lists wrap at about 100 columns under the members column.
 * Then, per family, how many of its groups stay inside one node and inside
 * one NVLink domain of `nvlink_domain` consecutive ranks (0: the domain is
 * the node), i.e. whether its collectives ride the node's link — `link`,
 * as sp_topo_spec_local_fabric names it ("nvlink", "pcie", "shm"; NULL:
 * nvlink) — or the network.  Fails with SP_ERROR_IO if writing fails. */
gboolean sp_groups_print_text (const SpGroups *groups, guint32 nvlink_domain, const char *link,
                               FILE *out, GError **error);

G_END_DECLS

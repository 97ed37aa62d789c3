/* lib/groups-internal.h — the storage behind SpGroups, shared by groups.c
 * (storage, accessors, validation, orchestration) and the family builders
 * (groups-mics.c, groups-expert.c, groups-misc.c).  Not installed.
 *
 * A family is CSR: one members array (every group's ranks, concatenated in
 * DeepSpeed's order) plus n_groups + 1 offsets, and two per-rank lookups
 * (group index, rank inside the group) so sp_groups_find is O(1).  No
 * per-group allocation: a 2^20-rank MiCS layout is a handful of arrays. */
#pragma once
#include "shardplan/error.h"
#include "shardplan/groups.h"

#define SP_NO_GROUP G_MAXUINT32     /* lookup value of a rank in no group */
#define SP_GROUPS_MAX_SIZE (G_GUINT64_CONSTANT (1) << 31) /* largest size accepted */

typedef struct {
  gboolean built;
  guint32 n_groups;      /* groups closed so far / in total */
  guint32 n_announced;   /* groups announced by sp_fam_begin */
  guint32 n_members;     /* members filled so far / in total */
  guint32 cap_members;   /* members allocated */
  guint32 *members;      /* cap_members ranks */
  guint32 *offsets;      /* n_groups + 1 (group k = members[offsets[k] .. offsets[k+1])) */
  guint32 *group_of;     /* world_size entries, SP_NO_GROUP if the rank is in no group */
  guint32 *rank_in;      /* world_size entries: index inside its group */
  char *label_shared;    /* one label for every group ("ep_size_4"), or NULL */
  char *label_arena;     /* labels "<prefix><index>", label_stride bytes each, or NULL */
  gsize label_stride;
} SpFamilyData;

typedef struct {
  guint32 family;
  guint32 index;
} SpCreated;

struct _SpGroups {
  SpGroupsOptions opts;
  SpFamilyData fam[SP_FAMILY_N];
  SpCreated *created;
  guint32 n_created;
  guint32 cap_created;
  GPtrArray *warnings; /* char *, NULL-terminated */
};

/* Allocate family `f` for `n_groups` groups holding `n_members` ranks in
 * all (FALSE with SP_ERROR_UNSUPPORTED if memory runs out). */
G_GNUC_INTERNAL gboolean sp_fam_begin (SpGroups *g, SpFamily f, guint32 n_groups,
                                       guint32 n_members, GError **error);

/* Append one rank to the group being filled; close the group. */
static inline void
sp_fam_push (SpFamilyData *d, guint32 rank)
{
  d->members[d->n_members++] = rank;
}
G_GNUC_INTERNAL void sp_fam_end_group (SpFamilyData *d);

/* Check that every group was filled and the groups are disjoint ranks
 * < world size, then build the per-rank lookups. */
G_GNUC_INTERNAL gboolean sp_fam_finish (SpGroups *g, SpFamily f, GError **error);

/* Labels: every group "label", or group i "<prefix><i>". */
G_GNUC_INTERNAL void sp_fam_label_shared (SpFamilyData *d, const char *label);
G_GNUC_INTERNAL gboolean sp_fam_label_prefix (SpFamilyData *d, const char *prefix,
                                              GError **error);

/* Append groups [first, first + count) of `f` to the creation order. */
G_GNUC_INTERNAL gboolean sp_groups_create (SpGroups *g, SpFamily f, guint32 first,
                                           guint32 count, GError **error);

G_GNUC_INTERNAL void sp_groups_warn (SpGroups *g, const char *format, ...) G_GNUC_PRINTF (2, 3);

/* The family builders: check the options (SP_ERROR_INVALID_GROUPS, before
 * anything is allocated), then build and record creation order. */
G_GNUC_INTERNAL gboolean sp_groups_check_tp (const SpGroupsOptions *o, GError **error);
G_GNUC_INTERNAL gboolean sp_groups_build_tp (SpGroups *g, GError **error);
G_GNUC_INTERNAL gboolean sp_groups_check_expert (const SpGroupsOptions *o, GError **error);
G_GNUC_INTERNAL gboolean sp_groups_build_expert (SpGroups *g, GError **error);
G_GNUC_INTERNAL gboolean sp_groups_check_zero_param (const SpGroupsOptions *o, GError **error);
G_GNUC_INTERNAL gboolean sp_groups_build_zero_param (SpGroups *g, GError **error);
G_GNUC_INTERNAL gboolean sp_groups_check_mics (const SpGroupsOptions *o, GError **error);
G_GNUC_INTERNAL gboolean sp_groups_build_mics (SpGroups *g, GError **error);
G_GNUC_INTERNAL gboolean sp_groups_check_a2a (const SpGroupsOptions *o, GError **error);
G_GNUC_INTERNAL gboolean sp_groups_build_a2a (SpGroups *g, GError **error);

/* tests/lib/groups-testutil.h — helpers shared by the groups suites:
 * render a family / the creation order as text so that expectations can
 * be written as the reference document writes them ("[0,2] [1,3]"). */
#pragma once
#include "testutil.h"
#include "shardplan/error.h"
#include "shardplan/groups.h"

#include <string.h>

/* "[0,1,2,3] [4,5,6,7]" (g_free). */
static inline char *
gt_family_str (const SpGroups *g, SpFamily f)
{
  GString *s = g_string_new (NULL);
  guint32 n = sp_groups_n_groups (g, f);
  for (guint32 k = 0; k < n; k++)
    {
      guint32 size = 0;
      const guint32 *m = sp_groups_members (g, f, k, &size);
      g_string_append (s, k ? " [" : "[");
      for (guint32 i = 0; i < size; i++)
        g_string_append_printf (s, i ? ",%u" : "%u", m[i]);
      g_string_append_c (s, ']');
    }
  return g_string_free (s, FALSE);
}

/* Creation order with runs merged: "shard[0..1] replicate[0..7]"; a run of
 * one index prints as "shard[3]" (g_free). */
static inline char *
gt_created_str (const SpGroups *g)
{
  GString *s = g_string_new (NULL);
  guint32 n = sp_groups_n_created (g);
  for (guint32 i = 0; i < n;)
    {
      SpFamily f0, f;
      guint32 first, idx;
      sp_groups_created (g, i, &f0, &first);
      guint32 j = i + 1;
      for (; j < n; j++)
        {
          sp_groups_created (g, j, &f, &idx);
          if (f != f0 || idx != first + (j - i))
            break;
        }
      if (s->len)
        g_string_append_c (s, ' ');
      if (j - i == 1)
        g_string_append_printf (s, "%s[%u]", sp_family_name (f0), first);
      else
        g_string_append_printf (s, "%s[%u..%u]", sp_family_name (f0), first, first + (j - i) - 1);
      i = j;
    }
  return g_string_free (s, FALSE);
}

static inline guint
gt_n_warnings (const SpGroups *g)
{
  guint n = 0;
  for (const char *const *w = sp_groups_warnings (g); *w; w++)
    n++;
  return n;
}

#define GT_ASSERT_FAMILY(g, f, expected) \
  do { g_autofree char *got_ = gt_family_str ((g), (f)); \
       ck_assert_msg (strcmp (got_, (expected)) == 0, "family %s:\n  got      %s\n  expected %s", \
                      sp_family_name (f), got_, (expected)); } while (0)

#define GT_ASSERT_CREATED(g, expected) \
  do { g_autofree char *got_ = gt_created_str (g); \
       ck_assert_msg (strcmp (got_, (expected)) == 0, "creation order:\n  got      %s\n  expected %s", \
                      got_, (expected)); } while (0)

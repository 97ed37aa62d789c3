/* Layouts against reference/deepspeed-semantics.md §1.3, §3 and §4: the
 * worked examples verbatim, then properties over grids of sizes. */
#include "config.h"
#include "shardplan/layout.h"
#include "shardplan/error.h"
#include "testutil.h"

/* ---- MiCS partition (§1.3) ------------------------------------------------ */

START_TEST (test_mics_example)
{
  /* numel=10, S=4 gives P=3; rank 3 copies 1 element and has 2 garbage */
  SpMicsPartition p;
  ck_assert (sp_layout_mics_partition (10, 4, &p, NULL));
  ck_assert_uint_eq (p.pad, 2);
  ck_assert_uint_eq (p.aligned, 12);
  ck_assert_uint_eq (p.partition, 3);
  static const guint64 starts[] = { 0, 3, 6, 9 }, reals[] = { 3, 3, 3, 1 };
  for (guint32 k = 0; k < 4; k++)
    {
      guint64 start, end, real;
      sp_layout_mics_rank_range (&p, k, &start, &end, &real);
      ck_assert_uint_eq (start, starts[k]);
      ck_assert_uint_eq (end, starts[k] + 3);
      ck_assert_uint_eq (real, reals[k]);
    }

  /* one element over 8 ranks: only rank 0 holds real data */
  ck_assert (sp_layout_mics_partition (1, 8, &p, NULL));
  ck_assert_uint_eq (p.partition, 1);
  ck_assert_uint_eq (p.pad, 7);
  guint64 real;
  sp_layout_mics_rank_range (&p, 0, NULL, NULL, &real);
  ck_assert_uint_eq (real, 1);
  sp_layout_mics_rank_range (&p, 7, NULL, NULL, &real);
  ck_assert_uint_eq (real, 0);

  /* divisible: no padding */
  ck_assert (sp_layout_mics_partition (4096, 8, &p, NULL));
  ck_assert_uint_eq (p.pad, 0);
  ck_assert_uint_eq (p.partition, 512);
}
END_TEST

START_TEST (test_mics_errors)
{
  SpMicsPartition p;
  g_autoptr (GError) error = NULL;
  ck_assert (!sp_layout_mics_partition (10, 0, &p, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  /* 2^64 - 1 ≡ 1 (mod 7): padding to 7 overflows */
  ck_assert (!sp_layout_mics_partition (G_MAXUINT64, 7, &p, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  /* 2^64 - 1 ≡ 0 (mod 3): fits */
  ck_assert (sp_layout_mics_partition (G_MAXUINT64, 3, &p, NULL));
  ck_assert_uint_eq (p.partition, G_MAXUINT64 / 3);
}
END_TEST

START_TEST (test_mics_grid)
{
  for (guint64 numel = 0; numel <= 70; numel++)
    for (guint32 s = 1; s <= 17; s++)
      {
        SpMicsPartition p;
        ck_assert (sp_layout_mics_partition (numel, s, &p, NULL));
        ck_assert_uint_lt (p.pad, s);
        ck_assert_uint_eq (p.aligned, p.partition * s);
        ck_assert_uint_eq ((numel + s - 1) / s, p.partition);
        guint64 total = 0, prev_end = 0;
        for (guint32 k = 0; k < s; k++)
          {
            guint64 start, end, real;
            sp_layout_mics_rank_range (&p, k, &start, &end, &real);
            ck_assert_uint_eq (start, prev_end);
            ck_assert_uint_le (real, end - start);
            total += real;
            prev_end = end;
          }
        ck_assert_uint_eq (total, numel);
        ck_assert_uint_eq (prev_end, p.aligned);
      }
}
END_TEST

/* ---- reduce_scatter_coalesced (§3) ---------------------------------------- */

static void
assert_slice (const SpRsCoalescedLayout *l, guint32 t, guint32 q, guint64 start, guint64 len)
{
  guint64 s, n;
  sp_layout_rs_coalesced_slice (l, t, q, &s, &n);
  ck_assert_msg (n == len && (len == 0 || s == start),
                 "tensor %u rank %u: [%" G_GUINT64_FORMAT ", +%" G_GUINT64_FORMAT
                 "), expected [%" G_GUINT64_FORMAT ", +%" G_GUINT64_FORMAT ")",
                 t, q, s, n, start, len);
}

START_TEST (test_rs_example_w3)
{
  /* W=3 with numels [5,3,1] (c = [2,1,1]): rank 0 gets [0,2)/[0,1)/[0,1);
   * rank 1 [2,4)/[1,2)/empty; rank 2 [4,5)/[2,3)/empty */
  const guint64 numels[] = { 5, 3, 1 };
  g_autoptr (SpRsCoalescedLayout) l = sp_layout_rs_coalesced_new (3, numels, 3, NULL);
  ck_assert_ptr_nonnull (l);
  ck_assert_uint_eq (l->chunk[0], 2);
  ck_assert_uint_eq (l->chunk[1], 1);
  ck_assert_uint_eq (l->chunk[2], 1);
  ck_assert_uint_eq (l->segment, 4);
  ck_assert_uint_eq (l->buffer, 12);
  ck_assert_uint_eq (l->offset[0], 0);
  ck_assert_uint_eq (l->offset[1], 2);
  ck_assert_uint_eq (l->offset[2], 3);
  ck_assert (!l->in_place);
  assert_slice (l, 0, 0, 0, 2);
  assert_slice (l, 1, 0, 0, 1);
  assert_slice (l, 2, 0, 0, 1);
  assert_slice (l, 0, 1, 2, 2);
  assert_slice (l, 1, 1, 1, 1);
  assert_slice (l, 2, 1, 0, 0);
  assert_slice (l, 0, 2, 4, 1);
  assert_slice (l, 1, 2, 2, 1);
  assert_slice (l, 2, 2, 0, 0);
}
END_TEST

START_TEST (test_rs_unit_tests_w2)
{
  /* DeepSpeed's unit tests, W=2: (6,) gives 3+3 (in place) */
  guint64 six[] = { 6, 3 };
  g_autoptr (SpRsCoalescedLayout) a = sp_layout_rs_coalesced_new (2, six, 1, NULL);
  ck_assert (a->in_place);
  ck_assert_uint_eq (a->buffer, 6);
  assert_slice (a, 0, 0, 0, 3);
  assert_slice (a, 0, 1, 3, 3);

  /* (6,)+(3,): rank0 (3),(2); rank1 (3),(1) */
  g_autoptr (SpRsCoalescedLayout) b = sp_layout_rs_coalesced_new (2, six, 2, NULL);
  ck_assert (!b->in_place);
  ck_assert_uint_eq (b->segment, 5);
  ck_assert_uint_eq (b->buffer, 10);
  assert_slice (b, 0, 0, 0, 3);
  assert_slice (b, 1, 0, 0, 2);
  assert_slice (b, 0, 1, 3, 3);
  assert_slice (b, 1, 1, 2, 1);

  /* (1,): rank0 (1), rank1 (0) */
  guint64 one = 1;
  g_autoptr (SpRsCoalescedLayout) c = sp_layout_rs_coalesced_new (2, &one, 1, NULL);
  ck_assert (!c->in_place);
  ck_assert_uint_eq (c->buffer, 2);
  assert_slice (c, 0, 0, 0, 1);
  assert_slice (c, 0, 1, 0, 0);

  /* the qgZ fallbacks: (10,) gives 5/5, (7,7) = 49 elements gives 25/24 */
  guint64 ten = 10, fortynine = 49;
  g_autoptr (SpRsCoalescedLayout) d = sp_layout_rs_coalesced_new (2, &ten, 1, NULL);
  assert_slice (d, 0, 0, 0, 5);
  assert_slice (d, 0, 1, 5, 5);
  g_autoptr (SpRsCoalescedLayout) e = sp_layout_rs_coalesced_new (2, &fortynine, 1, NULL);
  ck_assert (!e->in_place);
  assert_slice (e, 0, 0, 0, 25);
  assert_slice (e, 0, 1, 25, 24);
  ck_assert_uint_eq (e->buffer, 50);
}
END_TEST

START_TEST (test_rs_zero_length)
{
  const guint64 numels[] = { 0, 4, 0, 2 };
  g_autoptr (SpRsCoalescedLayout) l = sp_layout_rs_coalesced_new (4, numels, 4, NULL);
  ck_assert_uint_eq (l->chunk[0], 0);
  ck_assert_uint_eq (l->chunk[2], 0);
  ck_assert_uint_eq (l->segment, 2);
  ck_assert_uint_eq (l->offset[3], 1);
  ck_assert_uint_eq (l->buffer, 8);
  for (guint32 q = 0; q < 4; q++)
    {
      assert_slice (l, 0, q, 0, 0);
      assert_slice (l, 1, q, q, 1);
      assert_slice (l, 3, q, q, q < 2 ? 1 : 0);
    }
  /* a single empty tensor divides W: DeepSpeed's in-place branch */
  const guint64 zero = 0;
  g_autoptr (SpRsCoalescedLayout) z = sp_layout_rs_coalesced_new (4, &zero, 1, NULL);
  ck_assert (z->in_place);
  ck_assert_uint_eq (z->buffer, 0);
  g_autoptr (SpRsCoalescedLayout) none = sp_layout_rs_coalesced_new (4, NULL, 0, NULL);
  ck_assert (!none->in_place);
  ck_assert_uint_eq (none->buffer, 0);

  g_autoptr (GError) error = NULL;
  ck_assert_ptr_null (sp_layout_rs_coalesced_new (0, numels, 4, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  /* Σ c_t overflows (W = 1), or W · Σ c_t does (W = 3) */
  const guint64 huge[] = { G_MAXUINT64 / 2, G_MAXUINT64 / 2, G_MAXUINT64 / 2 };
  ck_assert_ptr_null (sp_layout_rs_coalesced_new (1, huge, 3, NULL));
  g_autoptr (SpRsCoalescedLayout) fits = sp_layout_rs_coalesced_new (1, huge, 2, NULL);
  ck_assert_ptr_nonnull (fits);
  ck_assert_ptr_null (sp_layout_rs_coalesced_new (3, huge, 3, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* The 65-case grid of the reference: W ∈ {1,2,3,4,8}, numel patterns with
 * zero-length tensors.  Every element of every tensor reaches exactly one
 * rank, in order, and each slice fits its padded chunk. */
START_TEST (test_rs_grid)
{
  static const guint32 worlds[] = { 1, 2, 3, 4, 8 };
  GRand *rng = g_rand_new_with_seed (3);
  for (guint wi = 0; wi < G_N_ELEMENTS (worlds); wi++)
    for (int trial = 0; trial < 40; trial++)
      {
        guint32 w = worlds[wi];
        guint32 n = g_rand_int_range (rng, 1, 6);
        guint64 numels[6];
        for (guint32 t = 0; t < n; t++)
          numels[t] = g_rand_int_range (rng, 0, 4) == 0 ? 0 : g_rand_int_range (rng, 1, 40);
        g_autoptr (SpRsCoalescedLayout) l = sp_layout_rs_coalesced_new (w, numels, n, NULL);
        guint64 seg = 0;
        for (guint32 t = 0; t < n; t++)
          {
            ck_assert_uint_eq (l->offset[t], seg);
            ck_assert_uint_eq (l->chunk[t] * w >= numels[t], TRUE);
            ck_assert_uint_lt (l->chunk[t] * w, numels[t] + w);
            seg += l->chunk[t];
            guint64 next = 0;
            for (guint32 q = 0; q < w; q++)
              {
                guint64 s, len;
                sp_layout_rs_coalesced_slice (l, t, q, &s, &len);
                ck_assert_uint_le (len, l->chunk[t]);
                if (len)
                  ck_assert_uint_eq (s, next);
                next += len;
              }
            ck_assert_uint_eq (next, numels[t]);
          }
        ck_assert_uint_eq (l->segment, seg);
        ck_assert_uint_eq (l->buffer, seg * w);
        ck_assert_int_eq (l->in_place, n == 1 && numels[0] % w == 0);
      }
  g_rand_free (rng);
}
END_TEST

/* ---- qgZ swizzle (§4 stage A) ---------------------------------------------- */

START_TEST (test_swizzle_example)
{
  /* N=2, D=4: partitions appear as 0,4,1,5,2,6,3,7 */
  SpQgzSwizzle s;
  ck_assert (sp_layout_qgz_swizzle_init (8, 2, 4, 1, &s, NULL));
  static const guint64 order[] = { 0, 4, 1, 5, 2, 6, 3, 7 };
  for (guint64 slot = 0; slot < 8; slot++)
    ck_assert_uint_eq (sp_layout_qgz_swizzle_slot (&s, order[slot]), slot);

  /* C = 3 groups per rank: group z·C + x goes to ((z % D)·N + z / D)·C + x */
  ck_assert (sp_layout_qgz_swizzle_init (24, 2, 4, 1, &s, NULL));
  ck_assert_uint_eq (s.per_rank, 3);
  ck_assert_uint_eq (sp_layout_qgz_swizzle_slot (&s, 4 * 3 + 2), 1 * 3 + 2);  /* z=4 → slot 1 */
  ck_assert_uint_eq (sp_layout_qgz_swizzle_slot (&s, 1 * 3 + 0), 2 * 3 + 0);  /* z=1 → slot 2 */
  ck_assert_uint_eq (sp_layout_qgz_swizzle_slot (&s, 7 * 3 + 1), 7 * 3 + 1);  /* z=7 → slot 7 */

  /* pipelining: N=2, D=2, C=4, P=2 (slices of 2 groups).  g = z·4 + y·2 + x
   * goes to (y·4 + (z % 2)·2 + z / 2)·2 + x */
  ck_assert (sp_layout_qgz_swizzle_init (16, 2, 2, 2, &s, NULL));
  ck_assert_uint_eq (s.per_slice, 2);
  ck_assert_uint_eq (sp_layout_qgz_swizzle_slot (&s, 6), 12);   /* z=1 y=1 x=0 */
  ck_assert_uint_eq (sp_layout_qgz_swizzle_slot (&s, 9), 3);    /* z=2 y=0 x=1 */
  ck_assert_uint_eq (sp_layout_qgz_swizzle_slot (&s, 15), 15);  /* z=3 y=1 x=1 */
  ck_assert_uint_eq (sp_layout_qgz_swizzle_slot (&s, 0), 0);
}
END_TEST

START_TEST (test_swizzle_grid)
{
  static const guint32 nodes[] = { 1, 2, 3, 4 }, devs[] = { 1, 2, 4, 8 }, pipes[] = { 1, 2, 4 };
  for (guint a = 0; a < G_N_ELEMENTS (nodes); a++)
    for (guint b = 0; b < G_N_ELEMENTS (devs); b++)
      for (guint c = 0; c < G_N_ELEMENTS (pipes); c++)
        for (guint64 mult = 1; mult <= 3; mult++)
          {
            guint32 n = nodes[a], d = devs[b], p = pipes[c];
            guint64 per_rank = p * mult, w = (guint64) n * d, g = per_rank * w;
            SpQgzSwizzle s;
            ck_assert (sp_layout_qgz_swizzle_init (g, n, d, p, &s, NULL));
            g_autofree guint8 *seen = g_new0 (guint8, g);
            guint64 slice_len = w * (per_rank / p);
            for (guint64 i = 0; i < g; i++)
              {
                guint64 slot = sp_layout_qgz_swizzle_slot (&s, i);
                ck_assert_uint_lt (slot, g);
                ck_assert_msg (!seen[slot], "N%u D%u P%u: slot %" G_GUINT64_FORMAT " twice", n, d, p,
                               slot);
                seen[slot] = 1;
                guint64 z = i / per_rank, y = (i % per_rank) / (per_rank / p);
                /* slice y of every partition comes before slice y + 1 */
                ck_assert_uint_eq (slot / slice_len, y);
                if (p == 1)
                  ck_assert_uint_eq (slot, ((z % d) * n + z / d) * per_rank + i % per_rank);
              }
          }
}
END_TEST

START_TEST (test_swizzle_errors)
{
  SpQgzSwizzle s;
  g_autoptr (GError) error = NULL;
  ck_assert (!sp_layout_qgz_swizzle_init (12, 2, 4, 1, &s, &error));  /* 12 % 8 */
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  ck_assert (!sp_layout_qgz_swizzle_init (24, 2, 4, 2, &s, &error));  /* C=3, P=2 */
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  ck_assert (!sp_layout_qgz_swizzle_init (8, 0, 4, 1, &s, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* ---- qgZ sizes (§4) ---------------------------------------------------------- */

START_TEST (test_qgz_sizes)
{
  /* 2 nodes × 8: a (4096, 1024) fp16 gradient.  numel 4194304, G = 4096,
   * E = 1024, C = 256; int4 payload 2 MiB, 4096 fp32 scales; after the
   * intra-node reduction 1/8 of both; each rank ends with numel/16. */
  const guint64 shape[] = { 4096, 1024 };
  SpQgzSizes z;
  ck_assert (sp_layout_qgz_sizes (shape, 2, 16, 8, &z, NULL));
  ck_assert_int_eq (z.path, SP_QGZ_QUANTIZED);
  ck_assert_uint_eq (z.numel, 4194304);
  ck_assert_uint_eq (z.nodes, 2);
  ck_assert_uint_eq (z.groups, 4096);
  ck_assert_uint_eq (z.group_elems, 1024);
  ck_assert_uint_eq (z.per_rank, 256);
  ck_assert_uint_eq (z.quant_bytes, 2097152);
  ck_assert_uint_eq (z.scale_bytes, 16384);
  ck_assert_uint_eq (z.reduced_bytes, 262144);
  ck_assert_uint_eq (z.reduced_scale_bytes, 2048);
  ck_assert_uint_eq (z.out_numel, 262144);
  ck_assert (z.kernel_preconditions);

  /* G = max(shape0, shape1, W): a (8, 64) tensor on 64 ranks uses G = W */
  const guint64 small[] = { 8, 64 };
  ck_assert (sp_layout_qgz_sizes (small, 2, 64, 8, &z, NULL));
  ck_assert_uint_eq (z.groups, 64);
  ck_assert_uint_eq (z.group_elems, 8);
  ck_assert_uint_eq (z.per_rank, 1);
  ck_assert_uint_eq (z.reduced_scale_bytes, 8 * 4);
  ck_assert_uint_eq (z.out_numel, 8);
  ck_assert (z.kernel_preconditions);

  /* E = 3 is not a multiple of 8: DeepSpeed's kernels misbehave silently */
  const guint64 odd[] = { 3, 32 };
  ck_assert (sp_layout_qgz_sizes (odd, 2, 16, 8, &z, NULL));
  ck_assert_int_eq (z.path, SP_QGZ_QUANTIZED);
  ck_assert_uint_eq (z.groups, 32);
  ck_assert_uint_eq (z.group_elems, 3);
  ck_assert (!z.kernel_preconditions);
}
END_TEST

START_TEST (test_qgz_fallbacks)
{
  SpQgzSizes z;
  const guint64 one_dim[] = { 4096 };
  ck_assert (sp_layout_qgz_sizes (one_dim, 1, 16, 8, &z, NULL));
  ck_assert_int_eq (z.path, SP_QGZ_FALLBACK_ONE_DIM);
  ck_assert_uint_eq (z.numel, 4096);
  ck_assert_uint_eq (z.quant_bytes, 0);

  const guint64 seven[] = { 7, 7 };  /* 49 % 32 != 0 */
  ck_assert (sp_layout_qgz_sizes (seven, 2, 16, 8, &z, NULL));
  ck_assert_int_eq (z.path, SP_QGZ_FALLBACK_NOT_DIVISIBLE);
  ck_assert_uint_eq (z.numel, 49);

  const guint64 three_d[] = { 2, 4, 8 };  /* 64 % 32 == 0, G = max(2, 4, 16) */
  ck_assert (sp_layout_qgz_sizes (three_d, 3, 16, 8, &z, NULL));
  ck_assert_int_eq (z.path, SP_QGZ_QUANTIZED);
  ck_assert_uint_eq (z.groups, 16);

  g_autoptr (GError) error = NULL;
  const guint64 shape[] = { 64, 64 };
  ck_assert (!sp_layout_qgz_sizes (shape, 2, 8, 8, &z, &error));   /* one node */
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  g_clear_error (&error);
  ck_assert (!sp_layout_qgz_sizes (shape, 2, 12, 8, &z, &error));  /* 12 ranks, 8 per node */
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  ck_assert (!sp_layout_qgz_sizes (shape, 0, 16, 8, &z, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST (test_qgz_sizes_consistent)
{
  /* per-stage sizes agree with each other and with the swizzle */
  for (guint32 nodes = 2; nodes <= 4; nodes++)
    for (guint32 d = 1; d <= 8; d *= 2)
      for (guint64 k = 1; k <= 64; k *= 4)
        {
          /* rows a multiple of W, so G = max(rows, 16W) is one too */
          guint32 w = nodes * d;
          const guint64 shape[] = { k * w, 16 * (guint64) w };
          SpQgzSizes z;
          ck_assert (sp_layout_qgz_sizes (shape, 2, w, d, &z, NULL));
          ck_assert_int_eq (z.path, SP_QGZ_QUANTIZED);
          ck_assert_uint_eq (z.quant_bytes * 2, z.numel);
          ck_assert_uint_eq (z.reduced_bytes * d, z.quant_bytes);
          ck_assert_uint_eq (z.out_numel * w, z.numel);
          ck_assert_uint_eq (z.per_rank * w, z.groups);
          ck_assert_uint_eq (z.reduced_scale_bytes * d, z.scale_bytes);
          SpQgzSwizzle s;
          ck_assert (sp_layout_qgz_swizzle_init (z.groups, nodes, d, 1, &s, NULL));
          ck_assert_uint_eq (s.per_rank, z.per_rank);
        }
}
END_TEST

static Suite *
layout_suite (void)
{
  Suite *s = suite_create ("layout");
  TCase *tc = tcase_create ("mics");
  tcase_add_test (tc, test_mics_example);
  tcase_add_test (tc, test_mics_errors);
  tcase_add_test (tc, test_mics_grid);
  suite_add_tcase (s, tc);
  tc = tcase_create ("reduce_scatter_coalesced");
  tcase_add_test (tc, test_rs_example_w3);
  tcase_add_test (tc, test_rs_unit_tests_w2);
  tcase_add_test (tc, test_rs_zero_length);
  tcase_add_test (tc, test_rs_grid);
  suite_add_tcase (s, tc);
  tc = tcase_create ("qgz");
  tcase_add_test (tc, test_swizzle_example);
  tcase_add_test (tc, test_swizzle_grid);
  tcase_add_test (tc, test_swizzle_errors);
  tcase_add_test (tc, test_qgz_sizes);
  tcase_add_test (tc, test_qgz_fallbacks);
  tcase_add_test (tc, test_qgz_sizes_consistent);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (layout_suite ());
}

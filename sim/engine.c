/* The flow engine: jobs made of phases, phases made of flows, flows sharing
 * links by weighted max-min fairness.  Time is integer ns; rates are
 * recomputed (progressive filling) whenever a flow starts or ends.
 *
 * Progressive filling freezes, in each round, every flow that crosses a
 * link whose fair share equals the lowest one (or whose own cap is that
 * low) — a whole class of equivalent flows at once — so a symmetric
 * pattern (every ring edge alike, every group alike) needs as many rounds
 * as it has distinct rates, not as many as it has flows.
 *
 * A flow may stand for `mult` equal member flows (sp_engine_add_flow_class):
 * each member carries `bytes` with `weight` and `cap`, and link l is crossed
 * by share(l) of them, so l sees weight × share(l) and loses rate × share(l)
 * when the class freezes.  Every member gets the same rate, which is exactly
 * the per-member max-min answer when the members are equal under a symmetry
 * of everything that shares their links (des.c builds them that way for
 * all-to-all; README-model §5).  Members with one path (share = mult on up
 * to SP_PATH_MAX links) are exact under any contention. */
#include "config.h"
#include "sim-internal.h"
#include "sim-testing.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

SpSimFault sp_sim_testing_fault = SP_SIM_FAULT_NONE;

typedef struct {
  guint32 job;
  guint8 n_links;     /* inline links (!pooled) */
  guint8 pooled;      /* links and shares in the engine's pool */
  gboolean frozen;
  union {
    guint32 links[SP_PATH_MAX];
    struct {
      guint32 off, n;
    } pool;
  } u;
  double mult;        /* member flows this entry stands for (≥ 1) */
  double bytes, remaining, weight, cap, rate; /* per member */
} Flow;

typedef struct {
  guint64 start, end;
  guint32 phase, n_phases;
  guint64 *delay;
  SpJobPhaseFn fn;
  gpointer data;
  char *label;
  guint32 outstanding;
  double sent, delivered, expected;
  gboolean expect_set, done, in_phase;
  double lb_ns, phase_lb_ns;
} Job;

typedef struct {
  guint64 time, seq;
  guint32 job;
} Timer;

struct _SpEngine {
  const SpNet *net;
  SpJobDoneFn done;
  gpointer done_data;
  guint64 now, seq;
  GArray *jobs;   /* Job */
  GArray *flows;  /* Flow, the active ones */
  GArray *timers; /* Timer, a binary heap */
  GArray *pool_links;  /* guint32: links of class flows */
  GArray *pool_share;  /* double: members crossing each of them */
  guint64 pool_live;   /* pool entries still referenced by active flows */
  double *rem, *wsum;
  guint32 *nact;       /* unfrozen flows on each link during a solve */
  guint8 *bottleneck;
  guint32 *touched;
  guint32 n_touched;
  gboolean dirty;
  guint32 adding_job; /* job whose phase is being filled, or G_MAXUINT32 */
  GError *error;
  guint64 events, solves, peak_flows;
};

SpEngine *
sp_engine_new (const SpNet *net, SpJobDoneFn done, gpointer done_data)
{
  SpEngine *e = g_new0 (SpEngine, 1);
  e->net = net;
  e->done = done;
  e->done_data = done_data;
  e->jobs = g_array_new (FALSE, TRUE, sizeof (Job));
  e->flows = g_array_new (FALSE, FALSE, sizeof (Flow));
  e->timers = g_array_new (FALSE, FALSE, sizeof (Timer));
  e->pool_links = g_array_new (FALSE, FALSE, sizeof (guint32));
  e->pool_share = g_array_new (FALSE, FALSE, sizeof (double));
  guint32 nl = sp_net_n_links (net);
  e->rem = g_new0 (double, nl);
  e->wsum = g_new0 (double, nl);
  e->nact = g_new0 (guint32, nl);
  e->bottleneck = g_new0 (guint8, nl);
  e->touched = g_new (guint32, nl);
  e->adding_job = G_MAXUINT32;
  return e;
}

void
sp_engine_free (SpEngine *e)
{
  if (e == NULL)
    return;
  for (guint i = 0; i < e->jobs->len; i++)
    {
      Job *j = &g_array_index (e->jobs, Job, i);
      g_free (j->delay);
      g_free (j->label);
    }
  g_array_free (e->jobs, TRUE);
  g_array_free (e->flows, TRUE);
  g_array_free (e->timers, TRUE);
  g_array_free (e->pool_links, TRUE);
  g_array_free (e->pool_share, TRUE);
  g_free (e->rem);
  g_free (e->wsum);
  g_free (e->nact);
  g_free (e->bottleneck);
  g_free (e->touched);
  g_clear_error (&e->error);
  g_free (e);
}

guint64
sp_engine_now (const SpEngine *e)
{
  return e->now;
}

static gboolean
timer_less (const Timer *a, const Timer *b)
{
  return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void
timer_push (SpEngine *e, guint64 time, guint32 job)
{
  Timer t = { time, e->seq++, job };
  g_array_append_val (e->timers, t);
  Timer *h = (Timer *) e->timers->data;
  guint i = e->timers->len - 1;
  while (i > 0)
    {
      guint p = (i - 1) / 2;
      if (!timer_less (&h[i], &h[p]))
        break;
      Timer tmp = h[i];
      h[i] = h[p];
      h[p] = tmp;
      i = p;
    }
}

static Timer
timer_pop (SpEngine *e)
{
  Timer *h = (Timer *) e->timers->data;
  Timer top = h[0];
  guint n = e->timers->len - 1;
  h[0] = h[n];
  g_array_set_size (e->timers, n);
  guint i = 0;
  for (;;)
    {
      guint l = 2 * i + 1, r = l + 1, m = i;
      if (l < n && timer_less (&h[l], &h[m]))
        m = l;
      if (r < n && timer_less (&h[r], &h[m]))
        m = r;
      if (m == i)
        break;
      Timer tmp = h[i];
      h[i] = h[m];
      h[m] = tmp;
      i = m;
    }
  return top;
}

/* a + b, or past the horizon (SP_SIM_HORIZON_NS + 1) when either or the
 * sum is: a timer there fails the run when it comes next */
static guint64
horizon_add (guint64 a, guint64 b)
{
  if (a > SP_SIM_HORIZON_NS || b > SP_SIM_HORIZON_NS)
    return SP_SIM_HORIZON_NS + 1;
  return MIN (a + b, SP_SIM_HORIZON_NS + 1);
}

guint32
sp_engine_add_job (SpEngine *e, guint64 start_ns, guint32 n_phases, const guint64 *delay_ns,
                   SpJobPhaseFn fn, gpointer data, const char *label)
{
  Job j = { 0 };
  j.start = MAX (start_ns, e->now);
  j.n_phases = n_phases;
  j.delay = g_memdup2 (delay_ns, sizeof (guint64) * MAX (n_phases, 1));
  j.fn = fn;
  j.data = data;
  j.label = g_strdup (label ? label : "job");
  g_array_append_val (e->jobs, j);
  guint32 id = e->jobs->len - 1;
  timer_push (e, horizon_add (j.start, n_phases ? delay_ns[0] : 0), id);
  return id;
}

/* The links of flow f: links and shares (NULL: every member crosses every
 * link, share = mult). */
static inline const guint32 *
flow_links (const SpEngine *e, const Flow *f, const double **out_share, guint *out_n)
{
  if (!f->pooled)
    {
      *out_share = NULL;
      *out_n = f->n_links;
      return f->u.links;
    }
  *out_share = &g_array_index (e->pool_share, double, f->u.pool.off);
  *out_n = f->u.pool.n;
  return &g_array_index (e->pool_links, guint32, f->u.pool.off);
}

static void
add_flow (SpEngine *e, guint32 job, double mult, double bytes, const guint32 *links,
          const double *share, guint n_links, double weight, double cap)
{
  Job *j = &g_array_index (e->jobs, Job, job);
  j->sent += mult * bytes;
  double slowest = cap;
  for (guint i = 0; i < n_links; i++)
    slowest = MIN (slowest, sp_net_link_capacity (e->net, links[i]));
  if (bytes > 0)
    j->phase_lb_ns = MAX (j->phase_lb_ns, bytes / slowest);
  if (bytes <= 0 || mult <= 0)
    return;
  Flow f = { 0 };
  f.job = job;
  f.mult = mult;
  if (share == NULL)
    {
      f.n_links = (guint8) n_links;
      memcpy (f.u.links, links, n_links * sizeof *links);
    }
  else
    {
      f.pooled = TRUE;
      f.u.pool.off = e->pool_links->len;
      f.u.pool.n = n_links;
      g_array_append_vals (e->pool_links, links, n_links);
      g_array_append_vals (e->pool_share, share, n_links);
      e->pool_live += n_links;
    }
  f.bytes = f.remaining = bytes;
  f.weight = weight;
  f.cap = cap;
  g_array_append_val (e->flows, f);
  j->outstanding++;
  e->dirty = TRUE;
  e->peak_flows = MAX (e->peak_flows, e->flows->len);
}

void
sp_engine_add_flow (SpEngine *e, guint32 job, double bytes, const guint32 *links, guint n_links,
                    double weight, double cap)
{
  g_return_if_fail (job == e->adding_job && n_links <= SP_PATH_MAX && weight > 0);
  add_flow (e, job, 1.0, bytes, links, NULL, n_links, weight, cap);
}

void
sp_engine_add_flow_class (SpEngine *e, guint32 job, double mult, double bytes,
                          const guint32 *links, const double *share, guint n_links, double weight,
                          double cap)
{
  g_return_if_fail (job == e->adding_job && weight > 0 && mult >= 1);
  g_return_if_fail (share != NULL || n_links <= SP_PATH_MAX);
  add_flow (e, job, mult, bytes, links, share, n_links, weight, cap);
}

/* Drop the pool entries of finished class flows once they dominate. */
static void
pool_compact (SpEngine *e)
{
  guint64 len = e->pool_links->len;
  if (len < 4096 || len < 2 * e->pool_live)
    return;
  Flow *fl = (Flow *) e->flows->data;
  guint32 *pl = (guint32 *) e->pool_links->data;
  double *ps = (double *) e->pool_share->data;
  guint64 w = 0;
  for (guint i = 0; i < e->flows->len; i++)
    if (fl[i].pooled)
      {
        memmove (pl + w, pl + fl[i].u.pool.off, fl[i].u.pool.n * sizeof *pl);
        memmove (ps + w, ps + fl[i].u.pool.off, fl[i].u.pool.n * sizeof *ps);
        fl[i].u.pool.off = (guint32) w;
        w += fl[i].u.pool.n;
      }
  g_array_set_size (e->pool_links, w);
  g_array_set_size (e->pool_share, w);
  e->pool_live = w;
}

void
sp_engine_expect_bytes (SpEngine *e, guint32 job, double bytes)
{
  Job *j = &g_array_index (e->jobs, Job, job);
  j->expected = bytes;
  j->expect_set = TRUE;
}

/* Weighted max-min fair rates by progressive filling. */
static void
solve (SpEngine *e)
{
  Flow *fl = (Flow *) e->flows->data;
  guint nf = e->flows->len;
  e->solves++;
  e->n_touched = 0;
  for (guint i = 0; i < nf; i++)
    {
      fl[i].frozen = FALSE;
      fl[i].rate = 0;
      const double *sh;
      guint n;
      const guint32 *lk = flow_links (e, &fl[i], &sh, &n);
      for (guint k = 0; k < n; k++)
        {
          guint32 l = lk[k];
          if (e->wsum[l] == 0 && !e->bottleneck[l])
            {
              e->touched[e->n_touched++] = l;
              e->rem[l] = sp_net_link_capacity (e->net, l);
              e->bottleneck[l] = 2; /* marks "touched" until reset */
            }
          double wm = fl[i].weight * (sh ? sh[k] : fl[i].mult);
          if (wm > 0)
            {
              e->wsum[l] += wm;
              e->nact[l]++;
            }
        }
    }
  guint left = nf;
  while (left > 0)
    {
      double level = INFINITY;
      for (guint t = 0; t < e->n_touched; t++)
        {
          guint32 l = e->touched[t];
          if (e->nact[l] > 0)
            level = MIN (level, e->rem[l] / e->wsum[l]);
        }
      for (guint i = 0; i < nf; i++)
        if (!fl[i].frozen)
          level = MIN (level, fl[i].cap / fl[i].weight);
      double thresh = level * (1 + 1e-9);
      for (guint t = 0; t < e->n_touched; t++)
        {
          guint32 l = e->touched[t];
          e->bottleneck[l] = (e->nact[l] > 0 && e->rem[l] / e->wsum[l] <= thresh) ? 1 : 2;
        }
      guint frozen_now = 0;
      for (guint i = 0; i < nf; i++)
        {
          if (fl[i].frozen)
            continue;
          const double *sh;
          guint n;
          const guint32 *lk = flow_links (e, &fl[i], &sh, &n);
          gboolean freeze = fl[i].cap / fl[i].weight <= thresh;
          for (guint k = 0; k < n && !freeze; k++)
            freeze = e->bottleneck[lk[k]] == 1;
          if (!freeze)
            continue;
          fl[i].frozen = TRUE;
          fl[i].rate = fl[i].weight * level;
          frozen_now++;
          for (guint k = 0; k < n; k++)
            {
              guint32 l = lk[k];
              double m = sh ? sh[k] : fl[i].mult;
              if (fl[i].weight * m <= 0)
                continue;
              e->rem[l] = MAX (0.0, e->rem[l] - fl[i].rate * m);
              /* a link whose last flow froze is done: no rounding residue
               * of its weight sum may pose as a bottleneck (that froze
               * nothing and stopped the fill) */
              if (--e->nact[l] == 0)
                e->wsum[l] = 0;
              else
                e->wsum[l] = MAX (e->wsum[l] - fl[i].weight * m, DBL_MIN);
            }
        }
      g_assert (frozen_now > 0); /* the minimum always freezes something */
      left -= frozen_now;
    }
  for (guint t = 0; t < e->n_touched; t++)
    {
      guint32 l = e->touched[t];
      e->wsum[l] = 0;
      e->nact[l] = 0;
      e->bottleneck[l] = 0;
    }
  if (sp_sim_testing_fault == SP_SIM_FAULT_OVERSPEED)
    for (guint i = 0; i < nf; i++)
      fl[i].rate *= 2;
  e->dirty = FALSE;
}

static void
fail (SpEngine *e, const char *fmt, ...) G_GNUC_PRINTF (2, 3);
static void
fail (SpEngine *e, const char *fmt, ...)
{
  if (e->error)
    return;
  va_list ap;
  va_start (ap, fmt);
  char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error_literal (&e->error, SP_ERROR, SP_ERROR_SIMULATION, msg);
  g_free (msg);
}

static void
job_finish (SpEngine *e, guint32 id)
{
  Job *j = &g_array_index (e->jobs, Job, id);
  if (sp_sim_testing_fault == SP_SIM_FAULT_DROP_JOB && id == 0)
    return; /* testing: the job never reports its end */
  j->done = TRUE;
  j->end = e->now;
  double tol = 1e-6 * j->sent + 1e-3;
  if (fabs (j->sent - j->delivered) > tol)
    fail (e, "%s: %.0f bytes sent but %.0f received", j->label, j->sent, j->delivered);
  else if (j->expect_set && fabs (j->sent - j->expected) > 1e-6 * j->expected + 1)
    fail (e, "%s: the algorithm put %.0f bytes on the wire, its closed form says %.0f", j->label,
          j->sent, j->expected);
  else if ((double) (j->end - j->start) < j->lb_ns * (1 - 1e-9) - 1)
    fail (e, "%s: finished in %" G_GUINT64_FORMAT " ns, below its alpha-beta lower bound of %.0f ns",
          j->label, j->end - j->start, j->lb_ns);
  if (e->done && e->error == NULL)
    e->done (e, id, e->done_data);
}

static void
phase_end (SpEngine *e, guint32 id)
{
  Job *j = &g_array_index (e->jobs, Job, id);
  j->in_phase = FALSE;
  j->lb_ns += j->phase_lb_ns;
  j->phase++;
  if (j->phase < j->n_phases)
    {
      j->lb_ns += (double) j->delay[j->phase];
      timer_push (e, horizon_add (e->now, j->delay[j->phase]), id);
    }
  else
    job_finish (e, id);
}

static void
phase_start (SpEngine *e, guint32 id)
{
  Job *j = &g_array_index (e->jobs, Job, id);
  if (j->phase == 0)
    j->lb_ns = (double) (j->n_phases ? j->delay[0] : 0);
  if (j->n_phases == 0)
    {
      job_finish (e, id);
      return;
    }
  j->in_phase = TRUE;
  j->phase_lb_ns = 0;
  e->adding_job = id;
  j->fn (e, id, j->phase, j->data);
  e->adding_job = G_MAXUINT32;
  j = &g_array_index (e->jobs, Job, id); /* fn may not add jobs, but be safe */
  if (j->outstanding == 0)
    phase_end (e, id);
}

gboolean
sp_engine_run (SpEngine *e, GError **error)
{
  gboolean lost = FALSE;
  while (e->error == NULL)
    {
      while (e->timers->len > 0 && g_array_index (e->timers, Timer, 0).time <= e->now
             && e->error == NULL)
        {
          Timer t = timer_pop (e);
          e->events++;
          phase_start (e, t.job);
        }
      if (e->error || (e->flows->len == 0 && e->timers->len == 0))
        break;
      if (e->dirty)
        solve (e);
      Flow *fl = (Flow *) e->flows->data;
      guint nf = e->flows->len;
      guint64 next = G_MAXUINT64;
      if (e->timers->len > 0)
        next = g_array_index (e->timers, Timer, 0).time;
      for (guint i = 0; i < nf; i++)
        {
          double dt = ceil (fl[i].remaining / fl[i].rate * (1 - 1e-12));
          if (!(dt < (double) SP_SIM_HORIZON_NS)) /* NaN too: fails below */
            dt = (double) SP_SIM_HORIZON_NS;
          guint64 t = e->now + (guint64) MAX (dt, 1.0);
          next = MIN (next, t);
        }
      if (next > SP_SIM_HORIZON_NS)
        {
          /* the input's doing, not a failed check: as bad input (exit 2) */
          g_set_error (&e->error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                       "simulated time passes the horizon of " SP_SIM_HORIZON_TEXT);
          break;
        }
      double dt = (double) (next - e->now);
      e->now = next;
      e->events++;
      /* advance; collect completions in flow order (deterministic) */
      guint w = 0;
      for (guint i = 0; i < nf; i++)
        {
          Flow f = fl[i];
          double moved = f.rate * dt;
          Job *j = &g_array_index (e->jobs, Job, f.job);
          if (moved >= f.remaining * (1 - 1e-12) || f.remaining - moved < 1e-6)
            {
              double got = f.remaining;
              if (sp_sim_testing_fault == SP_SIM_FAULT_LOSE_BYTES && !lost)
                {
                  got *= 0.5;
                  lost = TRUE;
                }
              j->delivered += f.mult * got;
              e->pool_live -= f.pooled ? f.u.pool.n : 0;
              j->outstanding--;
              e->dirty = TRUE;
              if (j->outstanding == 0)
                phase_end (e, f.job);
              continue;
            }
          f.remaining -= moved;
          j->delivered += f.mult * moved;
          fl[w++] = f;
        }
      g_array_set_size (e->flows, w);
      pool_compact (e);
    }
  if (e->error == NULL)
    for (guint i = 0; i < e->jobs->len; i++)
      {
        Job *j = &g_array_index (e->jobs, Job, i);
        if (!j->done)
          {
            fail (e, "%s did not finish (phase %u of %u, %u flows outstanding)", j->label,
                  j->phase, j->n_phases, j->outstanding);
            break;
          }
      }
  if (e->error)
    {
      g_propagate_error (error, e->error);
      e->error = NULL;
      return FALSE;
    }
  return TRUE;
}

guint64
sp_engine_job_start (const SpEngine *e, guint32 job)
{
  return g_array_index (e->jobs, Job, job).start;
}

guint64
sp_engine_job_end (const SpEngine *e, guint32 job)
{
  return g_array_index (e->jobs, Job, job).end;
}

gboolean
sp_engine_job_done (const SpEngine *e, guint32 job)
{
  return g_array_index (e->jobs, Job, job).done;
}

void
sp_engine_stats (const SpEngine *e, guint64 *out_events, guint64 *out_solves,
                 guint64 *out_peak_flows)
{
  if (out_events)
    *out_events = e->events;
  if (out_solves)
    *out_solves = e->solves;
  if (out_peak_flows)
    *out_peak_flows = e->peak_flows;
}

/* sim/sim-testing.h — a fault switch for the tests of the simulator's own
 * checks (tests/sim).  Not a user feature, not installed: with a fault set
 * the engine misbehaves on purpose so a test can see the check fire. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  SP_SIM_FAULT_NONE = 0,
  SP_SIM_FAULT_DROP_JOB,   /* the first job never reports its end */
  SP_SIM_FAULT_LOSE_BYTES, /* the first completed flow delivers half its bytes */
  SP_SIM_FAULT_OVERSPEED,  /* every rate doubled after the max-min solve (and
                              analytic bandwidths doubled) */
} SpSimFault;

/* Process-global; tests set it and reset it to SP_SIM_FAULT_NONE. */
extern SpSimFault sp_sim_testing_fault;

/* The flow limit of the step-wide plan simulation (contention step) when
 * not 0, instead of SP_DES_MAX_FLOWS, so a test can reach its fallback with
 * a small plan.  Process-global; tests reset it to 0. */
extern guint64 sp_sim_testing_max_flows;

/* How des.c lays out a direct all-to-all (sim/des-a2a.c): AUTO (what the
 * simulator does), PAIRS (one flow per ordered pair and NIC: the original
 * enumeration, kept as the reference), PATHS (pairs with one path merged),
 * CLASSES (symmetry classes with per-link shares).  Process-global; tests
 * reset it to SP_SIM_A2A_AUTO. */
typedef enum {
  SP_SIM_A2A_AUTO = 0,
  SP_SIM_A2A_PAIRS,
  SP_SIM_A2A_PATHS,
  SP_SIM_A2A_CLASSES,
} SpSimA2aMode;
extern SpSimA2aMode sp_sim_testing_a2a;

G_END_DECLS

/* shardplan/shardplan.h — everything libshardplan installs, and the version. */
#pragma once
#include "shardplan/error.h"
#include "shardplan/types.h"
#include "shardplan/file.h"
#include "shardplan/topo.h"
#include "shardplan/groups.h"
#include "shardplan/plan.h"
#include "shardplan/layout.h"
#include "shardplan/workload.h"
#include "shardplan/memory.h"
#include "shardplan/trace.h"
#include "shardplan/compare.h"
#include "shardplan/nccltests.h"
#include "shardplan/calibrate.h"

G_BEGIN_DECLS
/* "0.1.0" (static string). */
const char *sp_version (void);
/* What configure found: "cuda=yes nccl=yes mpi=yes …" (static string). */
const char *sp_build_config (void);
G_END_DECLS

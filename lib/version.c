#include "config.h"
#include "shardplan/shardplan.h"

const char *
sp_version (void)
{
  return PACKAGE_VERSION;
}

const char *
sp_build_config (void)
{
  return SP_BUILD_CONFIG;
}

/* tools/commands.h — one entry point per subcommand, one file per subcommand
 * (tools/cmd-<name>.c).  Add the declaration here and the table line in
 * main.c. */
#pragma once

int sp_cmd_info (int argc, char **argv);
int sp_cmd_groups (int argc, char **argv);
int sp_cmd_estimate (int argc, char **argv);
int sp_cmd_plan (int argc, char **argv);
int sp_cmd_trace (int argc, char **argv);
int sp_cmd_run (int argc, char **argv);
int sp_cmd_compare (int argc, char **argv);
int sp_cmd_sweep (int argc, char **argv);
int sp_cmd_sim (int argc, char **argv);
/* `shardplan trace import-nccl-tests` (tools/cmd-trace-import.c) */
int sp_cmd_trace_import_nccl_tests (int argc, char **argv);
/* `shardplan trace recover` (tools/trace-recover.c) */
int sp_cmd_trace_recover (int argc, char **argv);
/* `shardplan calibrate` (tools/cmd-calibrate.c) */
int sp_cmd_calibrate (int argc, char **argv);
/* `shardplan chakra export|import` (tools/cmd-chakra.c) */
int sp_cmd_chakra (int argc, char **argv);

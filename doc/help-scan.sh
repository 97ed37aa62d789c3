#!/bin/sh
# doc/help-scan.sh BIN: every `--help` text of the shardplan binary BIN, as
# one stream for gen-man.sh and gen-completion.sh (so the man page and the
# completion are made from the help text itself, never a copy of it):
#
#   @top                      then `BIN --help`
#   @cmd PATH<TAB>SUMMARY     then `BIN PATH --help`, for every subcommand
#                             (PATH "plan") and every subcommand of a command
#                             that dispatches further (PATH "trace export")
#   @group PATH<TAB>SUMMARY   then the help of such a dispatching command
#   @topology-presets         then one "NAME<TAB>DESCRIPTION" per preset of
#                             `BIN info` (--topology PRESET)
#
# Subcommands are the lines "  NAME  SUMMARY" under "Subcommands:" of the
# top help; a subcommand whose help is not GLib's (first line "Usage:"
# alone) dispatches, and its own lines "  NAME  SUMMARY" are its commands.
# The help is read in a UTF-8 locale when one exists (GLib writes "…" and
# "×" as "?" in the C locale), then in C.
set -eu
bin=${1:?usage: help-scan.sh BIN}

LC_ALL=C
for loc in C.UTF-8 C.utf8 en_US.UTF-8 en_US.utf8; do
  if [ "$(LC_ALL=$loc "$bin" --help 2>/dev/null | head -n 1)" = "Usage: shardplan <subcommand> [options]" ] &&
    (LC_ALL=$loc locale charmap 2>/dev/null | grep -qi 'utf-\{0,1\}8'); then
    LC_ALL=$loc
    break
  fi
done
export LC_ALL

tab=$(printf '\t')
top=$("$bin" --help)
echo "@top"
printf '%s\n' "$top"

# NAME<TAB>SUMMARY lines: "  name   summary" (two or more spaces).
list_commands () {
  awk '/^  [a-z][a-z0-9-]* +[^ ]/ { name = $1; sub(/^  [a-z][a-z0-9-]* +/, ""); print name "\t" $0 }'
}

printf '%s\n' "$top" | sed -n '/^Subcommands:/,/^$/p' | list_commands |
  while IFS=$tab read -r name summary; do
    help=$("$bin" "$name" --help)
    if [ "$(printf '%s\n' "$help" | head -n 1)" = "Usage:" ]; then
      printf '@cmd %s\t%s\n%s\n' "$name" "$summary" "$help"
      continue
    fi
    printf '@group %s\t%s\n%s\n' "$name" "$summary" "$help"
    printf '%s\n' "$help" | list_commands | while IFS=$tab read -r sub subsummary; do
      printf '@cmd %s %s\t%s\n' "$name" "$sub" "$subsummary"
      "$bin" "$name" "$sub" --help
    done
  done

echo "@topology-presets"
"$bin" info | sed -n '/^topology presets/,/^$/p' |
  awk '/^  [a-z0-9][a-z0-9.-]* +[^ ]/ { name = $1; sub(/^  [a-z0-9][a-z0-9.-]* +/, ""); print name "\t" $0 }'

/* The prof subcommands, one file each (collector/cmd_*.c). Each returns the exit status. */
#ifndef PROF_COLLECTOR_COMMANDS_H
#define PROF_COLLECTOR_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_collect(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_clean(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_html(int argc, char **argv);

/* The version prof reports, and records in the summaries it makes. */
#define PROF_VERSION "0.1.0"

#endif

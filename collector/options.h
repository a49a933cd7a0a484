/* The option parser every prof command shares. A command declares its options as a table
 * (long name, short letter, value kind, help) and its usage line; opt_parse reads argv by
 * it and opt_help writes --help from it, so what --help shows is what the command
 * accepts. Hand-made rather than getopt_long so that every problem is one line
 * "prof <command>: ..." and exit status 2. */
#ifndef PROF_COLLECTOR_OPTIONS_H
#define PROF_COLLECTOR_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifndef ARRAY_LEN
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#endif

enum opt_kind {
	OPT_FLAG,     /* no value: *(int *)dest = 1 */
	OPT_FLAG_OFF, /* no value: *(int *)dest = 0 (--no-memory) */
	OPT_TEXT,     /* a non-empty value: *(const char **)dest */
	OPT_NUMBER,   /* a whole decimal number in [min, max]: *(uint64_t *)dest */
	OPT_CHOICE,   /* one of choices: *(int *)dest = its index */
	OPT_CALL,     /* call(o, value, dest); value is NULL for a flag (o->value NULL) */
};

struct opt {
	const char *name;  /* long name without the dashes: "output" for --output */
	char letter;       /* short name ('o' for -o), or 0 */
	enum opt_kind kind;
	const char *value; /* the value's name in --help ("OUT"); NULL: a flag (OPT_CHOICE:
			    * NULL shows the choices, "text|csv|json") */
	const char *help;  /* '\n' starts another line, indented under the first */
	const char *needs; /* what a refused value should be: "--top needs <needs> (got 'x')"
			    * (OPT_CHOICE: made from the choices when NULL) */
	void *dest;
	uint64_t min, max;          /* OPT_NUMBER: the range (set max) */
	const char *const *choices; /* OPT_CHOICE */
	size_t nchoices;
	/* OPT_CALL: 0; -1 when value is refused (the parser says what it needs); 2 after a
	 * line of its own (opt_error) */
	int (*call)(const struct opt *o, const char *value, void *dest);
	const void *data; /* what call needs besides dest (a settings key...) */
};

/* A table of options that grows: a command's own, then any appended at run time (settings
 * flags from the settings table). The parser only sees a pointer and a count. */
struct opt_list {
	struct opt *v;
	size_t n, cap;
};
/* Appends n options; 0, or -1 out of memory. */
int opt_list_add(struct opt_list *l, const struct opt *o, size_t n);
void opt_list_free(struct opt_list *l);

struct opt_command {
	const char *name;  /* "report": messages begin "prof report: " */
	const char *usage; /* after "usage: prof ": the synopsis; '\n' starts another line */
	const char *about; /* text between the usage and the options, or NULL */
	const char *after; /* text after the options, or NULL */
	const struct opt *opts;
	size_t nopts;
	/* the first positional argument ends the options: it and all after it are left as
	 * they are (prof record's command and its arguments) */
	int stop_at_arg;
};

#define OPT_HELP (-1)

/* Reads argv[1..argc-1] (argv[0] is the command's name) in order: "--name VALUE",
 * "--name=VALUE", "-l VALUE", "-l=VALUE", flags "--name" and "-l", -h/--help, and "--",
 * after which everything is positional ("-" alone is positional too). The positional
 * arguments are gathered, in order, at *pos (inside argv), *npos of them. Returns 0 to
 * go on, OPT_HELP after printing the help on standard output, or 2 after one line on
 * standard error (unknown option, missing or refused value). */
int opt_parse(const struct opt_command *c, int argc, char **argv, char ***pos, int *npos);

/* The --help text: usage, about, the options (then -h, --help), after. */
void opt_help(const struct opt_command *c, FILE *f);

/* One item of a help listing: "  head" and text from column (from the next line when
 * head is too wide), each '\n' of text starting a line at column. */
void opt_print_item(FILE *f, const char *head, const char *text, int column);

/* "prof <cmd>: message" on standard error; returns 2, the exit status of bad usage. */
int opt_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The one capture file a command reads (prof report, prof export) among its positional
 * arguments: 0 with *capture set, or 2 after one line (none, or more than one). */
int opt_one_capture(const struct opt_command *c, char **pos, int npos, const char **capture);
/* Positional arguments that must be session ids (prof clean, prof dump): 0, or 2 after
 * one line naming the first that is not. */
int opt_session_ids(const struct opt_command *c, char **ids, int n);
/* The same where several files or directories may be given: the parts of one capture
 * in parts (PROFILER_ROTATE), in their order; captures of several sessions (the ranks of
 * a job), read as one (formats/model/model_sources.c); a directory of parts, or of
 * captures (NAME.prof, in natural order) and their directories of parts. Several are
 * read as one through a temporary directory of links to them (removed at exit). */
int opt_capture_parts(const struct opt_command *c, char **pos, int npos, const char **capture);
/* What opt_capture_parts read, for messages: the capture, or "FIRST and N more". */
extern const char *opt_capture_shown;

/* A whole decimal number in [min, max]; 0, or -1 when v is not one. */
int opt_number(const char *v, uint64_t min, uint64_t max, uint64_t *out);

#endif

/* The option parser every prof command shares; see options.h. */
#define _GNU_SOURCE /* strverscmp, reallocarray, asprintf */
#include "collector/options.h"
#include "formats/capture/capture.h"
#include "preload/common/config.h"
#include "preload/common/session.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Option heads wider than this have their help on the next line, and do not push the
 * help column of the others to the right. */
#define OPT_HEAD_WIDE 19

int opt_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int saved = errno; /* for a %m in fmt */

	fprintf(stderr, "prof %s: ", cmd);
	errno = saved;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

int opt_number(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t x;

	if (prof_parse_uint(v, &x) || x < min || x > max)
		return -1;
	*out = x;
	return 0;
}

int opt_list_add(struct opt_list *l, const struct opt *o, size_t n)
{
	if (l->n + n > l->cap) {
		size_t cap = l->cap ? l->cap : 16;
		struct opt *v;

		while (cap < l->n + n)
			cap *= 2;
		v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	memcpy(l->v + l->n, o, n * sizeof(*o));
	l->n += n;
	return 0;
}

void opt_list_free(struct opt_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

static int takes_value(const struct opt *o)
{
	switch (o->kind) {
	case OPT_FLAG:
	case OPT_FLAG_OFF:
		return 0;
	case OPT_CALL:
		return o->value != NULL;
	default:
		return 1;
	}
}

/* "a, b or c" */
static void join_choices(const struct opt *o, const char *sep, const char *last, char *buf,
			 size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < o->nchoices && at < len; k++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s",
				       k == 0 ? "" : k + 1 == o->nchoices ? last : sep,
				       o->choices[k]);
}

/* The head of an option in --help: "-o, --output OUT". */
static void head(const struct opt *o, char *buf, size_t len)
{
	char choices[256];
	const char *value = o->value;
	int at;

	if (o->letter && o->name)
		at = snprintf(buf, len, "-%c, --%s", o->letter, o->name);
	else if (o->letter)
		at = snprintf(buf, len, "-%c", o->letter);
	else
		at = snprintf(buf, len, "--%s", o->name);
	if (!value && o->kind == OPT_CHOICE) {
		join_choices(o, "|", "|", choices, sizeof(choices));
		value = choices;
	}
	if (value && takes_value(o) && at >= 0 && (size_t)at < len)
		snprintf(buf + at, len - at, " %s", value);
}

void opt_print_item(FILE *f, const char *head, const char *text, int column)
{
	int w = fprintf(f, "  %s", head);

	if (w + 2 > column) { /* too wide: the text starts on the next line */
		fputc('\n', f);
		w = 0;
	}
	fprintf(f, "%*s", column - w, "");
	for (const char *p = text; *p; p++) {
		fputc(*p, f);
		if (*p == '\n')
			fprintf(f, "%*s", column, "");
	}
	fputc('\n', f);
}

static const struct opt help_opt = { .name = "help", .letter = 'h', .kind = OPT_FLAG,
				     .help = "this text" };

void opt_help(const struct opt_command *c, FILE *f)
{
	char h[512];
	int column = 0;

	for (size_t k = 0; k <= c->nopts; k++) {
		int n;

		head(k < c->nopts ? &c->opts[k] : &help_opt, h, sizeof(h));
		n = (int)strlen(h);
		if (n <= OPT_HEAD_WIDE && n + 4 > column)
			column = n + 4;
	}
	fprintf(f, "usage: %s\n", c->usage);
	if (c->about)
		fprintf(f, "\n%s", c->about);
	fputc('\n', f);
	for (size_t k = 0; k <= c->nopts; k++) {
		const struct opt *o = k < c->nopts ? &c->opts[k] : &help_opt;

		head(o, h, sizeof(h));
		opt_print_item(f, h, o->help ? o->help : "", column);
	}
	if (c->after)
		fprintf(f, "\n%s", c->after);
}

static const struct opt *find(const struct opt_command *c, const char *name, size_t len,
			      char letter)
{
	for (size_t k = 0; k < c->nopts; k++) {
		const struct opt *o = &c->opts[k];

		if (letter ? o->letter == letter
			   : o->name && strlen(o->name) == len && !strncmp(o->name, name, len))
			return o;
	}
	return NULL;
}

/* What a refused or missing value of o should be. */
static const char *needs(const struct opt *o, char *buf, size_t len)
{
	if (o->needs)
		return o->needs;
	if (o->kind == OPT_CHOICE) {
		join_choices(o, ", ", " or ", buf, len);
		return buf;
	}
	if (o->kind == OPT_NUMBER)
		return "a number";
	return "a value";
}

/* Sets o from value (NULL: missing, or a flag). 0, or 2 after one line. */
static int apply(const struct opt_command *c, const struct opt *o, const char *spelled,
		 const char *value)
{
	char buf[256];
	int rc = 0;

	if (takes_value(o) && (!value || !*value)) /* an empty value is none */
		return opt_error(c->name, "%s needs %s", spelled, needs(o, buf, sizeof(buf)));
	switch (o->kind) {
	case OPT_FLAG:
		*(int *)o->dest = 1;
		break;
	case OPT_FLAG_OFF:
		*(int *)o->dest = 0;
		break;
	case OPT_TEXT:
		*(const char **)o->dest = value;
		break;
	case OPT_NUMBER:
		rc = opt_number(value, o->min, o->max, o->dest);
		break;
	case OPT_CHOICE:
		rc = -1;
		for (size_t k = 0; k < o->nchoices; k++) {
			if (!strcmp(value, o->choices[k])) {
				*(int *)o->dest = (int)k;
				rc = 0;
				break;
			}
		}
		break;
	case OPT_CALL:
		rc = o->call(o, value, o->dest);
		break;
	}
	if (rc == -1)
		return opt_error(c->name, "%s needs %s (got '%s')", spelled,
				 needs(o, buf, sizeof(buf)), value);
	return rc ? 2 : 0;
}

/* argv[*i] starts with '-' and is not "-", "--", "-h" or "--help". */
static int one_option(const struct opt_command *c, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *eq = strchr(a, '='), *value = NULL;
	const struct opt *o;
	char spelled[128];

	if (a[1] == '-')
		o = find(c, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2), 0);
	else
		o = a[2] == '\0' || a[2] == '=' ? find(c, NULL, 0, a[1]) : NULL;
	if (!o)
		return opt_error(c->name, "unknown option '%s' (see prof %s --help)", a, c->name);
	snprintf(spelled, sizeof(spelled), "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
	if (!takes_value(o)) {
		if (eq)
			return opt_error(c->name, "%s takes no value (got '%s')", spelled, eq + 1);
	} else if (eq) {
		value = eq + 1;
	} else if (*i + 1 < argc) {
		value = argv[++*i];
	}
	return apply(c, o, spelled, value);
}

int opt_parse(const struct opt_command *c, int argc, char **argv, char ***pos, int *npos)
{
	int i, n = 0, rc;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1]) {
			if (c->stop_at_arg)
				break;
			argv[1 + n++] = argv[i]; /* 1 + n <= i: nothing unread is overwritten */
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			opt_help(c, stdout);
			return OPT_HELP;
		}
		if ((rc = one_option(c, argc, argv, &i)))
			return rc;
	}
	if (c->stop_at_arg) {
		*pos = argv + i;
		*npos = argc - i;
		return 0;
	}
	for (; i < argc; i++)
		argv[1 + n++] = argv[i];
	*pos = argv + 1;
	*npos = n;
	return 0;
}

/* Whether name here is a capture: a file beginning with the capture's magic, or a
 * directory of parts. */
static int is_capture_here(const char *name, const struct stat *st)
{
	if (S_ISDIR(st->st_mode)) {
		char **parts;
		size_t n;
		if (cap_parts(name, &parts, &n))
			return 0;
		cap_parts_free(parts, n);
		return n > 0;
	}
	char magic[8];
	int fd = S_ISREG(st->st_mode) ? open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	int ok = fd >= 0 && read(fd, magic, sizeof magic) == (ssize_t)sizeof magic &&
		 !memcmp(magic, CAP_FILE_MAGIC, sizeof magic);
	if (fd >= 0)
		close(fd);
	return ok;
}

/* The newest capture in the current directory (NAME.prof, a file or parts), as nsys and
 * perf read theirs without a name; NULL when there is none. */
static const char *newest_capture_here(void)
{
	static char best[PATH_MAX];
	struct timespec best_t = {0, 0};
	DIR *d = opendir(".");
	best[0] = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t n = strlen(e->d_name);
		struct stat st;
		if (n <= 5 || strcmp(e->d_name + n - 5, ".prof") || stat(e->d_name, &st) ||
		    !is_capture_here(e->d_name, &st))
			continue;
		if (!best[0] || st.st_mtim.tv_sec > best_t.tv_sec ||
		    (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec > best_t.tv_nsec)) {
			snprintf(best, sizeof best, "%s", e->d_name);
			best_t = st.st_mtim;
		}
	}
	if (d)
		closedir(d);
	return best[0] ? best : NULL;
}

int opt_one_capture(const struct opt_command *c, char **pos, int npos, const char **capture)
{
	if (npos > 1)
		return opt_error(c->name, "more than one capture given ('%s', '%s')", pos[0],
				 pos[1]);
	if (npos == 0) {
		const char *here = newest_capture_here();
		if (!here)
			return opt_error(c->name, "no capture file given, and none here (NAME.prof; "
					 "see prof %s --help)", c->name);
		fprintf(stderr, "prof %s: reading %s (the newest capture here)\n", c->name, here);
		*capture = here;
		return 0;
	}
	*capture = pos[0];
	return 0;
}

int opt_session_ids(const struct opt_command *c, char **ids, int n)
{
	for (int i = 0; i < n; i++)
		if (strlen(ids[i]) != PROF_SID_LEN ||
		    strspn(ids[i], "0123456789abcdef") != PROF_SID_LEN)
			return opt_error(c->name, "unexpected argument '%s' (see --help)", ids[i]);
	return 0;
}

/* The links made by opt_capture_parts, removed at exit. */
static char parts_dir[PATH_MAX];
static int parts_made;
static char shown_name[PATH_MAX + 64];
const char *opt_capture_shown = "";

static void remove_parts_dir(void)
{
	char link[PATH_MAX + 32];
	for (int i = 1; i <= parts_made; i++) {
		snprintf(link, sizeof link, "%s/part-%06d.prof", parts_dir, i);
		unlink(link);
	}
	rmdir(parts_dir);
}

static int add_link(const struct opt_command *c, const char *file)
{
	char full[PATH_MAX], link[PATH_MAX + 32];
	if (!realpath(file, full))
		return opt_error(c->name, "%s: %s", file, strerror(errno));
	snprintf(link, sizeof link, "%s/part-%06d.prof", parts_dir, parts_made + 1);
	if (symlink(full, link))
		return opt_error(c->name, "%s: %s", link, strerror(errno));
	parts_made++;
	return 0;
}

static int by_version(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* A directory: its parts (a capture in parts), else its captures (rank-0.prof,
 * rank-1.prof, ...: files ending in .prof, in natural order) and those of its
 * directories (their parts, or their .prof files: per-rank captures rotated, or kept one
 * folder a host); a folder beside them holding neither (an export) is passed over. */
static int add_dir(const struct opt_command *c, const char *dir, int depth)
{
	char **names;
	size_t n;
	int before = parts_made;
	if (cap_parts(dir, &names, &n))
		return opt_error(c->name, "%s: %s", dir, strerror(errno));
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = add_link(c, names[i]);
	cap_parts_free(names, n);
	if (n || rc)
		return rc;
	DIR *d = opendir(dir);
	if (!d)
		return opt_error(c->name, "%s: %s", dir, strerror(errno));
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	for (struct dirent *e; (e = readdir(d)) && !rc;) {
		size_t len = strlen(e->d_name);
		int prof = len > 5 && !strcmp(e->d_name + len - 5, ".prof");
		char *path;
		struct stat st;
		if (e->d_name[0] == '.' || asprintf(&path, "%s/%s", dir, e->d_name) < 0)
			continue;
		int wanted = prof || (!depth && !stat(path, &st) && S_ISDIR(st.st_mode));
		if (wanted && cnt == cap) {
			char **nv = reallocarray(v, cap ? 2 * cap : 16, sizeof *v);
			if (!nv) {
				free(path);
				rc = opt_error(c->name, "out of memory");
				break;
			}
			v = nv;
			cap = cap ? 2 * cap : 16;
		}
		if (wanted)
			v[cnt++] = path;
		else
			free(path);
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof *v, by_version);
	for (size_t i = 0; i < cnt; i++) {
		struct stat st;
		if (!rc && stat(v[i], &st))
			rc = opt_error(c->name, "%s: %s", v[i], strerror(errno));
		else if (!rc)
			rc = S_ISDIR(st.st_mode) ? add_dir(c, v[i], depth + 1) : add_link(c, v[i]);
		free(v[i]);
	}
	free(v);
	if (!rc && !depth && parts_made == before)
		rc = opt_error(c->name, "%s: a directory with no capture in it (neither parts "
				 "part-N.prof nor captures NAME.prof)", dir);
	return rc;
}

int opt_capture_parts(const struct opt_command *c, char **pos, int npos, const char **capture)
{
	struct stat st;
	if (npos <= 1) {
		int rc = opt_one_capture(c, pos, npos, capture);
		opt_capture_shown = rc ? "" : *capture;
		/* one file, or one capture's parts: read as they are */
		if (rc || stat(*capture, &st) || !S_ISDIR(st.st_mode))
			return rc;
		char **names;
		size_t n;
		if (!cap_parts(*capture, &names, &n)) {
			cap_parts_free(names, n);
			if (n)
				return 0;
		}
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(parts_dir, sizeof parts_dir, "%s/prof-parts-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(parts_dir))
		return opt_error(c->name, "cannot make a directory for the parts (%s: %s)",
				 parts_dir, strerror(errno));
	atexit(remove_parts_dir);
	for (int i = 0; i < npos; i++) {
		if (stat(pos[i], &st))
			return opt_error(c->name, "%s: %s", pos[i], strerror(errno));
		int rc = S_ISDIR(st.st_mode) ? add_dir(c, pos[i], 0)
		       : S_ISREG(st.st_mode) ? add_link(c, pos[i])
					     : opt_error(c->name, "%s: not a capture file", pos[i]);
		if (rc)
			return rc;
	}
	if (npos == 1)
		snprintf(shown_name, sizeof shown_name, "%s", pos[0]);
	else
		snprintf(shown_name, sizeof shown_name, "%s and %d more", pos[0], npos - 1);
	opt_capture_shown = shown_name;
	*capture = parts_dir;
	return 0;
}

/* The settings table (preload/common/settings.c): every row is consistent, parses from the
 * environment and from prof_config_set alike, refuses bad values alike, and README.md's
 * settings table is exactly the one the table makes.
 *
 *   build/test/test_settings                 the checks (run from the repository root)
 *   build/test/test_settings --markdown      README's settings table, from the table
 *   build/test/test_settings --write-readme  puts it into README.md between its markers */
#include <ctype.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/settings_doc.h"
#include "formats/model/outputs.h"
#include "preload/common/config.h"
#include "preload/common/schedule.h"
#include "preload/common/span.h"

static char warned[4][1024];
static int nwarn;
static void warn(const char *line)
{
	if (nwarn < 4)
		snprintf(warned[nwarn], sizeof warned[0], "%s", line);
	nwarn++;
}

/* The field a row writes (an alias: the first row it sets). */
static const struct prof_setting *field_row(const struct prof_setting *s)
{
	if (!s->sets)
		return s;
	char name[64];
	snprintf(name, sizeof name, "%.*s", (int)strcspn(s->sets, ","), s->sets);
	return prof_setting_find(name);
}

static int env_from(char *var, size_t len, const struct prof_setting *s, const char *value,
		    struct prof_config *c)
{
	snprintf(var, len, "%s=%s", s->env, value);
	char *env[] = {"PATH=/bin", var, 0};
	nwarn = 0;
	return prof_config_from_env(c, env, warn);
}

static void table_rows_consistent(void **state)
{
	(void)state;
	struct prof_config defaults, c;
	char err[1024], env[128];
	prof_config_defaults(&defaults);
	assert_true(prof_nsettings > 0);
	for (size_t i = 0; i < prof_nsettings; i++) {
		const struct prof_setting *s = &prof_settings[i];
		print_message("  %s\n", s->name);
		/* the variable is PROFILER_ and the key in capitals */
		snprintf(env, sizeof env, "PROFILER_%s", s->name);
		for (char *p = env; *p; p++)
			*p = (char)toupper((unsigned char)*p);
		assert_string_equal(s->env, env);
		for (const char *p = s->name; *p; p++)
			assert_true(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_');
		assert_ptr_equal(prof_setting_find(s->name), s); /* names are unique */
		/* a help text that fits in one markdown cell */
		assert_non_null(s->help);
		assert_true(strlen(s->help) > 10);
		assert_null(strpbrk(s->help, "|\n"));
		assert_true(s->when <= PROF_WHEN_LOAD);
		if (s->type == PROF_SETTING_ENUM || s->type == PROF_SETTING_LIST)
			assert_true(s->values && *s->values);
		if (s->type == PROF_SETTING_UINT || s->type == PROF_SETTING_SIZE)
			assert_true(s->min <= s->max);
		if (s->sets) {
			/* an alias has no field or default of its own; what it sets exists */
			assert_null(s->def);
			for (const char *p = s->sets; *p;) {
				size_t l = strcspn(p, ",");
				char name[64];
				snprintf(name, sizeof name, "%.*s", (int)l, p);
				assert_non_null(prof_setting_find(name));
				assert_null(prof_setting_find(name)->sets);
				p += l + (p[l] == ',');
			}
		} else {
			assert_true(s->size > 0 && s->off + s->size <= sizeof(struct prof_config));
		}
		if (s->def) {
			/* the default parses, and is what prof_config_defaults gives */
			memcpy(&c, &defaults, sizeof c);
			assert_int_equal(prof_config_set(&c, s->name, s->def, err, sizeof err), 0);
			assert_memory_equal(&c, &defaults, sizeof c);
			assert_null(s->shown_default);
		} else if (!s->sets) {
			/* unset: the field stays zero */
			static const char zero[PROF_TRACE_MAX];
			assert_memory_equal((char *)&defaults + s->off, zero, s->size);
		}
		/* prof record's option: a --flag, and a switch sets a value that parses */
		if (s->record_flag) {
			assert_true(!strncmp(s->record_flag, "--", 2) && strlen(s->record_flag) > 3);
			assert_true(!s->record_arg != !s->record_value);
			memcpy(&c, &defaults, sizeof c);
			if (s->record_value)
				assert_int_equal(prof_config_set(&c, s->name, s->record_value, err,
								 sizeof err), 0);
			for (size_t j = 0; j < i; j++)
				if (prof_settings[j].record_flag) {
					assert_string_not_equal(prof_settings[j].record_flag, s->record_flag);
					if (s->record_short)
						assert_int_not_equal(prof_settings[j].record_short,
								     s->record_short);
				}
		} else {
			assert_true(!s->record_arg && !s->record_value && !s->record_short);
		}
	}
	/* the exporter's own default, which 0 stood for before */
	uint64_t v = 0;
	assert_int_equal(prof_parse_size(prof_setting_find("trace_max_events")->def, &v), 0);
	assert_int_equal(v, CHROME_DEFAULT_MAX_EVENTS);
	assert_int_equal(defaults.max_json_events, CHROME_DEFAULT_MAX_EVENTS);
}

/* A valid value of a row, different from its default. */
static const char *sample(const struct prof_setting *s, char *buf, size_t len)
{
	const char *def = s->def ? s->def : s->shown_default;
	switch (s->type) {
	case PROF_SETTING_BOOL:
		return def && !strcmp(def, "1") ? "0" : "1";
	case PROF_SETTING_UINT:
		snprintf(buf, len, "%llu",
			 (unsigned long long)(s->max == UINT64_MAX ? s->min + 4 : s->max));
		return buf;
	case PROF_SETTING_SIZE:
		snprintf(buf, len, "%llu", (unsigned long long)s->max);
		return buf;
	case PROF_SETTING_SECONDS:
		return "0.5";
	case PROF_SETTING_ENUM:
		snprintf(buf, len, "%s", strrchr(s->values, ',') ? strrchr(s->values, ',') + 1
								  : s->values);
		return buf;
	case PROF_SETTING_STRING:
		/* a string with its own form (a check): a well-formed one */
		return s->check == prof_schedule_check ? "wait=1,active=2"
		       : s->check == prof_span_check   ? "90s"
						       : "sample-%p.json";
	case PROF_SETTING_LIST:
		snprintf(buf, len, "%.*s%s", (int)strcspn(s->values, ","), s->values,
			 strrchr(s->values, ','));
		return buf;
	}
	return "";
}

static void every_setting_both_ways(void **state)
{
	(void)state;
	struct prof_config defaults, by_key, by_env;
	char err[1024], buf[128], var[256];
	prof_config_defaults(&defaults);
	for (size_t i = 0; i < prof_nsettings; i++) {
		const struct prof_setting *s = &prof_settings[i];
		const char *v = sample(s, buf, sizeof buf);
		print_message("  %s=%s\n", s->name, v);
		memcpy(&by_key, &defaults, sizeof by_key);
		memcpy(&by_env, &defaults, sizeof by_env);
		assert_int_equal(prof_config_set(&by_key, s->name, v, err, sizeof err), 0);
		assert_int_equal(env_from(var, sizeof var, s, v, &by_env), 0);
		assert_int_equal(nwarn, 0);
		assert_memory_equal(&by_key, &by_env, sizeof by_key);
		/* the value was stored: the row's field moved off its default */
		const struct prof_setting *f = field_row(s);
		assert_memory_not_equal((char *)&by_key + f->off, (char *)&defaults + f->off,
					f->size);
	}
	/* the values stored, for each kind */
	struct prof_config c;
	memcpy(&c, &defaults, sizeof c);
	assert_int_equal(prof_config_set(&c, "trace", "work_*,lib=api_*", err, sizeof err), 0);
	assert_string_equal(c.trace, "work_*,lib=api_*");
	assert_int_equal(prof_config_set(&c, "debug", "got,trace,drain,cupti,shm,alloc", err,
					 sizeof err), 0);
	assert_string_equal(c.debug, "got,trace,drain,cupti,shm,alloc");
	assert_int_equal(prof_config_set(&c, "profile_all", "0", err, sizeof err), 0);
	assert_true(c.profile_memory == 0 && c.profile_api == 0);
	assert_int_equal(prof_config_set(&c, "cuda", "0", err, sizeof err), 0);
	assert_int_equal(c.no_cuda, 1);
	assert_int_equal(prof_config_set(&c, "stack_min_us", "7", err, sizeof err), 0);
	assert_int_equal(c.stack_min_ns, 7000);
	assert_int_equal(prof_config_set(&c, "filename", "mx.json", err, sizeof err), 0);
	assert_string_equal(c.output, "mx");
}

/* Values a row must refuse, by its type. */
static int bad_samples(const struct prof_setting *s, char out[][PROF_TRACE_MAX + 8])
{
	int n = 0;
	const struct prof_setting *f = field_row(s);
	switch (s->type) {
	case PROF_SETTING_BOOL:
		strcpy(out[n++], "maybe");
		strcpy(out[n++], "2");
		break;
	case PROF_SETTING_UINT:
		strcpy(out[n++], "x");
		strcpy(out[n++], "-1");
		if (s->max < UINT64_MAX)
			sprintf(out[n++], "%llu", (unsigned long long)s->max + 1);
		if (s->min > 0)
			sprintf(out[n++], "%llu", (unsigned long long)s->min - 1);
		break;
	case PROF_SETTING_SIZE:
		strcpy(out[n++], "lots");
		sprintf(out[n++], "%llu", (unsigned long long)s->min - 1);
		sprintf(out[n++], "%llu", (unsigned long long)s->max * 2);
		break;
	case PROF_SETTING_SECONDS:
		strcpy(out[n++], "-1");
		if (!(s->flags & PROF_SETTING_ZERO_OK))
			strcpy(out[n++], "0");
		strcpy(out[n++], "1.5s");
		sprintf(out[n++], "%llu", (unsigned long long)s->max + 1);
		break;
	case PROF_SETTING_ENUM:
		strcpy(out[n++], "nonsense");
		strcpy(out[n++], "");
		break;
	case PROF_SETTING_LIST:
		strcpy(out[n++], "bogus");
		strcpy(out[n++], "got,");
		strcpy(out[n++], ",got");
		strcpy(out[n++], "got,,shm");
		break;
	case PROF_SETTING_STRING:
		if ((s->flags | f->flags) & PROF_SETTING_NONEMPTY)
			strcpy(out[n++], "");
		if (s->check == prof_schedule_check) { /* ill-formed */
			strcpy(out[n++], "active=0");
			strcpy(out[n++], "wait=1");
			strcpy(out[n++], "active=2,");
			strcpy(out[n++], "active=1,nope=2");
		} else if (s->check == prof_span_check) { /* no unit, too small, unknown */
			strcpy(out[n++], "60");
			strcpy(out[n++], "0.5s");
			strcpy(out[n++], "512K");
			strcpy(out[n++], "5x");
			strcpy(out[n++], "1.2345s");
		}
		break;
	}
	if (s->type == PROF_SETTING_STRING) {
		/* longer than the field */
		memset(out[n], 'a', f->size);
		out[n++][f->size] = 0;
	} else if (s->type == PROF_SETTING_LIST) {
		/* known values, but more than the field holds */
		size_t l = strcspn(s->values, ",");
		out[n][0] = 0;
		while (strlen(out[n]) < f->size)
			sprintf(out[n] + strlen(out[n]), "%s%.*s", out[n][0] ? "," : "", (int)l,
				s->values);
		n++;
	}
	return n;
}

static void bad_values_refused_alike(void **state)
{
	(void)state;
	static char bad[8][PROF_TRACE_MAX + 8];
	static char var[PROF_TRACE_MAX + 64];
	struct prof_config defaults, c;
	char err[512], want[640];
	prof_config_defaults(&defaults);
	for (size_t i = 0; i < prof_nsettings; i++) {
		const struct prof_setting *s = &prof_settings[i];
		int n = bad_samples(s, bad);
		assert_true(n > 0);
		for (int k = 0; k < n; k++) {
			print_message("  %s=%.20s\n", s->name, bad[k]);
			memcpy(&c, &defaults, sizeof c);
			assert_int_equal(prof_config_set(&c, s->name, bad[k], err, sizeof err), -1);
			assert_memory_equal(&c, &defaults, sizeof c);
			/* one line naming the key and value (a long one elided) */
			assert_null(strchr(err, '\n'));
			snprintf(want, sizeof want, "%s=%s: ", s->name,
				 strlen(bad[k]) >= 64 ? "..." : bad[k]);
			assert_true(!strncmp(err, want, strlen(want)));
			/* the environment: the same line under the variable's name */
			assert_int_equal(env_from(var, sizeof var, s, bad[k], &c), 1);
			assert_int_equal(nwarn, 1);
			assert_memory_equal(&c, &defaults, sizeof c);
			snprintf(want, sizeof want, "%s%s, ignored", s->env, strchr(err, '='));
			assert_string_equal(warned[0], want);
		}
	}
	/* an unknown key names itself and lists every setting */
	assert_int_equal(prof_config_set(&c, "nonsense", "1", err, sizeof err), -1);
	assert_non_null(strstr(err, "unknown setting 'nonsense'"));
	for (size_t i = 0; i < prof_nsettings; i++)
		assert_non_null(strstr(err, prof_settings[i].name));
	char *env[] = {"PROFILER_NONSENSE=1", "PROFILER_SESSION=x", "PROFILER_LIBRARY=/l.so", 0};
	nwarn = 0;
	assert_int_equal(prof_config_from_env(&c, env, warn), 1);
	assert_string_equal(warned[0], "unknown variable PROFILER_NONSENSE, ignored");
	/* the debug channel's domains: an unknown one is one line saying which are known */
	assert_int_equal(prof_config_set(&c, "debug", "got,nope", err, sizeof err), -1);
	assert_string_equal(err, "debug=got,nope: use a comma list of got, trace, drain, cupti, "
				 "shm, alloc, stack, all");
}

/* ---- README.md ---- */

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char *text = 0;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, n, m);
	fclose(m);
	fclose(f);
	return text;
}

/* README.md of the repository: the working directory is its root under `make unit`; else
 * two folders above this binary (build/test/). */
static const char *readme_path(void)
{
	static char path[PATH_MAX];
	if (access("README.md", R_OK) == 0)
		return "README.md";
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
	if (n > 0) {
		path[n] = 0;
		*strrchr(path, '/') = 0;
		strcat(path, "/../../README.md");
		if (access(path, R_OK) == 0)
			return path;
	}
	return 0;
}

static char *generated_table(void)
{
	char *text = 0;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	settings_markdown(m);
	fclose(m);
	return text;
}

/* The variables README's table lists, in order, each as "\n`PROFILER_X`" into names. */
static int readme_variables(const char *table, char names[][64], int max)
{
	int n = 0;
	for (const char *l = table; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : 0) {
		if (strncmp(l, "| `", 3) || n == max)
			continue;
		size_t len = strcspn(l + 3, "`");
		snprintf(names[n++], 64, "%.*s", (int)len, l + 3);
	}
	return n;
}

static void readme_lists_exactly_the_table(void **state)
{
	(void)state;
	const char *path = readme_path();
	if (!path)
		fail_msg("README.md not found (run from the repository root)");
	char *readme = read_all(path);
	assert_non_null(readme);
	char *begin = strstr(readme, SETTINGS_DOC_BEGIN "\n");
	char *end = begin ? strstr(begin, "\n" SETTINGS_DOC_END) : 0;
	if (!begin || !end)
		fail_msg("%s has no settings table between the lines\n  %s\n  %s", path,
			 SETTINGS_DOC_BEGIN, SETTINGS_DOC_END);
	begin += strlen(SETTINGS_DOC_BEGIN "\n");
	end[1] = 0; /* the table, its last newline included */
	static char names[256][64];
	int n = readme_variables(begin, names, 256), problems = 0;
	for (size_t i = 0; i < prof_nsettings; i++) {
		int found = 0;
		for (int k = 0; k < n; k++)
			found += !strcmp(names[k], prof_settings[i].env);
		if (found != 1) {
			print_error("README.md lists %s %d times (the table has it once)\n",
				    prof_settings[i].env, found);
			problems++;
		}
	}
	for (int k = 0; k < n; k++) {
		int known = 0;
		for (size_t i = 0; i < prof_nsettings; i++)
			known |= !strcmp(names[k], prof_settings[i].env);
		if (!known) {
			print_error("README.md lists %s, which is no setting of the table\n", names[k]);
			problems++;
		}
	}
	if (problems)
		fail_msg("README.md's settings table and preload/common/settings.c differ: "
			 "run build/test/test_settings --write-readme");
	char *made = generated_table();
	if (strcmp(begin, made))
		fail_msg("README.md's settings table is not the one preload/common/settings.c makes "
			 "(a help text, default or range changed): run "
			 "build/test/test_settings --write-readme");
	free(made);
	free(readme);
}

static int write_readme(void)
{
	const char *path = readme_path();
	char *readme = path ? read_all(path) : 0;
	char *begin = readme ? strstr(readme, SETTINGS_DOC_BEGIN "\n") : 0;
	char *end = begin ? strstr(begin, "\n" SETTINGS_DOC_END) : 0;
	if (!begin || !end) {
		fprintf(stderr, "test_settings: no README.md with the lines %s ... %s\n",
			SETTINGS_DOC_BEGIN, SETTINGS_DOC_END);
		return 1;
	}
	begin += strlen(SETTINGS_DOC_BEGIN "\n");
	FILE *f = fopen(path, "w");
	if (!f)
		return perror(path), 1;
	fwrite(readme, 1, (size_t)(begin - readme), f);
	settings_markdown(f);
	fputs(end + 1, f);
	free(readme);
	return fclose(f) ? (perror(path), 1) : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--markdown"))
		return settings_markdown(stdout), 0;
	if (argc > 1 && !strcmp(argv[1], "--write-readme"))
		return write_readme();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_rows_consistent),
		cmocka_unit_test(every_setting_both_ways),
		cmocka_unit_test(bad_values_refused_alike),
		cmocka_unit_test(readme_lists_exactly_the_table),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}

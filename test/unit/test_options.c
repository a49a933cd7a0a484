/* The option parser of the prof commands (collector/options.c): every spelling of an
 * option, '--', positional arguments, prof record's stop at the program, options
 * appended at run time, one-line errors with exit status 2, and --help made from the
 * table. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/options.h"

struct vals {
	int flag, off, choice, called;
	const char *text, *got;
	uint64_t number;
};

static const char *const colors[] = { "red", "green", "blue" };

static int remember(const struct opt *o, const char *value, void *dest)
{
	struct vals *v = dest;

	if (value && !strcmp(value, "bad"))
		return -1;
	v->called++;
	v->got = value ? value : o->data;
	return 0;
}

#define OPTS(v)                                                                             \
	{ .name = "flag", .letter = 'f', .kind = OPT_FLAG, .dest = &(v)->flag,                 \
	  .help = "a flag" },                                                                  \
	{ .name = "no-off", .kind = OPT_FLAG_OFF, .dest = &(v)->off, .help = "clears" },       \
	{ .name = "text", .letter = 't', .kind = OPT_TEXT, .value = "T", .dest = &(v)->text,    \
	  .needs = "some text", .help = "two lines\nof help" },                                \
	{ .name = "number", .kind = OPT_NUMBER, .value = "N", .dest = &(v)->number, .min = 1,  \
	  .max = 10, .needs = "a number from 1 to 10", .help = "n" },                          \
	{ .name = "color", .kind = OPT_CHOICE, .dest = &(v)->choice, .choices = colors,        \
	  .nchoices = ARRAY_LEN(colors), .help = "c" },                                        \
	{ .name = "call", .kind = OPT_CALL, .value = "V", .call = remember, .dest = (v),       \
	  .help = "k" }

/* Runs opt_parse on a copy of args; its standard error goes to err. */
static int parse(const struct opt_command *c, const char *const *args, int n, char ***pos,
		 int *npos, char *err, size_t errlen)
{
	static char *argv[32];
	FILE *tmp = tmpfile();
	int saved = dup(2), rc;
	size_t got;

	assert_true(n < (int)ARRAY_LEN(argv));
	for (int i = 0; i < n; i++)
		argv[i] = (char *)args[i];
	argv[n] = NULL;
	fflush(stderr);
	dup2(fileno(tmp), 2);
	rc = opt_parse(c, n, argv, pos, npos);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	got = fread(err, 1, errlen - 1, tmp);
	err[got] = '\0';
	fclose(tmp);
	return rc;
}

#define PARSE(c, ...)                                                                        \
	({                                                                                       \
		const char *const args_[] = { __VA_ARGS__ };                                     \
		parse((c), args_, (int)ARRAY_LEN(args_), &pos, &npos, err, sizeof(err));        \
	})

static void test_spellings(void **state)
{
	struct vals v = { .off = 1 };
	const struct opt opts[] = { OPTS(&v) };
	const struct opt_command c = { .name = "t", .usage = "prof t", .opts = opts,
				       .nopts = ARRAY_LEN(opts) };
	char **pos, err[512];
	int npos;

	(void)state;
	assert_int_equal(PARSE(&c, "t", "a", "--flag", "--text", "x y", "b", "--number=7",
			       "--no-off", "--color", "blue", "--call=q", "--", "--flag", "-"),
			 0);
	assert_int_equal(v.flag, 1);
	assert_int_equal(v.off, 0);
	assert_string_equal(v.text, "x y");
	assert_int_equal(v.number, 7);
	assert_int_equal(v.choice, 2);
	assert_int_equal(v.called, 1);
	assert_string_equal(v.got, "q");
	assert_int_equal(npos, 4);
	assert_string_equal(pos[0], "a");
	assert_string_equal(pos[1], "b");
	assert_string_equal(pos[2], "--flag"); /* after "--": an argument */
	assert_string_equal(pos[3], "-");
	assert_string_equal(err, "");

	v = (struct vals){ 0 };
	assert_int_equal(PARSE(&c, "t", "-f", "-t", "short", "-t=eq", "--text=a=b"), 0);
	assert_int_equal(v.flag, 1);
	assert_string_equal(v.text, "a=b");
	assert_int_equal(npos, 0);
	/* a value may start with '-': it is the option's */
	assert_int_equal(PARSE(&c, "t", "--text", "-f"), 0);
	assert_string_equal(v.text, "-f");
}

static void test_errors(void **state)
{
	struct vals v = { 0 };
	const struct opt opts[] = { OPTS(&v) };
	const struct opt_command c = { .name = "t", .usage = "prof t", .opts = opts,
				       .nopts = ARRAY_LEN(opts) };
	char **pos, err[512];
	int npos;
	static const struct {
		const char *args[3];
		const char *line;
	} bad[] = {
		{ { "--bogus" }, "prof t: unknown option '--bogus' (see prof t --help)\n" },
		{ { "-x" }, "prof t: unknown option '-x' (see prof t --help)\n" },
		{ { "-fx" }, "prof t: unknown option '-fx' (see prof t --help)\n" },
		{ { "--fla" }, "prof t: unknown option '--fla' (see prof t --help)\n" },
		{ { "--text" }, "prof t: --text needs some text\n" },
		{ { "--text=" }, "prof t: --text needs some text\n" },
		{ { "-t" }, "prof t: -t needs some text\n" },
		{ { "--number", "0" }, "prof t: --number needs a number from 1 to 10 (got '0')\n" },
		{ { "--number", "11" }, "prof t: --number needs a number from 1 to 10 (got '11')\n" },
		{ { "--number", "1x" }, "prof t: --number needs a number from 1 to 10 (got '1x')\n" },
		{ { "--color", "pink" }, "prof t: --color needs red, green or blue (got 'pink')\n" },
		{ { "--color" }, "prof t: --color needs red, green or blue\n" },
		{ { "--call", "bad" }, "prof t: --call needs a value (got 'bad')\n" },
		{ { "--flag=1" }, "prof t: --flag takes no value (got '1')\n" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		const char *args[4] = { "t" };
		int n = 1;

		for (; n <= 3 && bad[i].args[n - 1]; n++)
			args[n] = bad[i].args[n - 1];
		assert_int_equal(parse(&c, args, n, &pos, &npos, err, sizeof(err)), 2);
		assert_string_equal(err, bad[i].line);
	}
}

static void test_stop_at_arg(void **state)
{
	struct vals v = { 0 };
	const struct opt opts[] = { OPTS(&v) };
	const struct opt_command c = { .name = "t", .usage = "prof t", .opts = opts,
				       .nopts = ARRAY_LEN(opts), .stop_at_arg = 1 };
	char **pos, err[512];
	int npos;

	(void)state;
	assert_int_equal(PARSE(&c, "t", "-f", "prog", "--text", "x", "--", "-h"), 0);
	assert_int_equal(v.flag, 1);
	assert_null(v.text); /* the program's */
	assert_int_equal(npos, 5);
	assert_string_equal(pos[0], "prog");
	assert_string_equal(pos[1], "--text");
	assert_string_equal(pos[4], "-h");
	assert_int_equal(PARSE(&c, "t", "--text", "y", "--", "--flag", "z"), 0);
	assert_string_equal(v.text, "y");
	assert_int_equal(npos, 2);
	assert_string_equal(pos[0], "--flag");
	assert_int_equal(PARSE(&c, "t", "-f", "--"), 0);
	assert_int_equal(npos, 0);
}

/* Options appended at run time are parsed and shown like the command's own. */
static void test_appended(void **state)
{
	struct vals v = { 0 };
	const struct opt opts[] = { OPTS(&v) };
	struct opt_list list = { 0 };
	char **pos, err[512];
	int npos;

	(void)state;
	assert_int_equal(opt_list_add(&list, opts, ARRAY_LEN(opts)), 0);
	for (int i = 0; i < 40; i++) {
		char *name;
		struct opt o = { .kind = OPT_CALL, .call = remember, .dest = &v,
				 .help = "appended" };

		assert_true(asprintf(&name, "extra-%d", i) > 0);
		o.name = name;
		o.data = name;
		assert_int_equal(opt_list_add(&list, &o, 1), 0);
	}
	const struct opt_command c = { .name = "t", .usage = "prof t", .opts = list.v,
				       .nopts = list.n };
	assert_int_equal(PARSE(&c, "t", "--extra-39", "--flag"), 0);
	assert_int_equal(v.called, 1);
	assert_string_equal(v.got, "extra-39");
	assert_int_equal(v.flag, 1);
	for (size_t i = ARRAY_LEN(opts); i < list.n; i++)
		free((char *)list.v[i].name);
	opt_list_free(&list);
}

/* one number parser for options and settings: digits only, no overflow */
static void test_numbers(void **state)
{
	(void)state;
	uint64_t v = 7;
	assert_int_equal(opt_number("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(opt_number("18446744073709551616", 0, UINT64_MAX, &v), -1);
	assert_int_equal(opt_number("-1", 0, UINT64_MAX, &v), -1);
	assert_int_equal(opt_number(" 1", 0, UINT64_MAX, &v), -1);
	assert_int_equal(opt_number("12x", 0, UINT64_MAX, &v), -1);
	assert_int_equal(opt_number("5", 6, 9, &v), -1);
	assert_int_equal(opt_number("6", 6, 9, &v), 0);
	assert_true(v == 6);
}

static void test_help(void **state)
{
	struct vals v = { 0 };
	const struct opt opts[] = { OPTS(&v) };
	const struct opt_command c = { .name = "t", .usage = "prof t [options] FILE",
				       .about = "About it.\n", .after = "After.\n", .opts = opts,
				       .nopts = ARRAY_LEN(opts) };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	opt_help(&c, f);
	fclose(f);
	assert_string_equal(buf, "usage: prof t [options] FILE\n"
				 "\n"
				 "About it.\n"
				 "\n"
				 "  -f, --flag    a flag\n"
				 "  --no-off      clears\n"
				 "  -t, --text T  two lines\n"
				 "                of help\n"
				 "  --number N    n\n"
				 "  --color red|green|blue\n" /* too wide: the next line */
				 "                c\n"
				 "  --call V      k\n"
				 "  -h, --help    this text\n"
				 "\n"
				 "After.\n");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spellings), cmocka_unit_test(test_errors),
		cmocka_unit_test(test_stop_at_arg), cmocka_unit_test(test_appended),
		cmocka_unit_test(test_help), cmocka_unit_test(test_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

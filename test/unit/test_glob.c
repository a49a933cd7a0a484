/* preload/trace/glob.c against glibc's fnmatch in the C locale: the same answer for the
 * presets' and users' pattern shapes, and for random patterns over a small alphabet that
 * exercises every special character. */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "preload/trace/glob.c"

static void agrees(const char *pattern, const char *name)
{
	int want = fnmatch(pattern, name, 0) == 0;
	if (prof_glob(pattern, name) != want)
		fail_msg("pattern \"%s\" name \"%s\": fnmatch says %d", pattern, name, want);
}

static void known_shapes(void **state)
{
	(void)state;
	static const char *patterns[] = {
		"exec[lv]*", "fexecve", "_Unwind_*", "__cxa_*", "MX*", "TF_*", "TFE_*",
		"at::_ops::*::call", "*::forward*", "bench_fn", "cuda*Async", "a?c", "[!_]*",
		"[^a-z]x", "[]]", "[!]]", "[a-]", "[", "x[", "\\*", "a\\", "**b", "*", "",
		"[[:alpha:]]*", "ncclAll*",
	};
	static const char *names[] = {
		"execlp", "execvpe", "execle", "fexecve", "_Unwind_Resume", "__cxa_throw",
		"MXNDArrayCreate", "TF_NewSession", "TFE_Execute", "at::_ops::add_Tensor::call",
		"Net::forward(int)", "bench_fn", "cudaMemcpyAsync", "abc", "a", "", "]", "-",
		"[", "x[", "*", "a\\", "b", "ab", "zx", "Ax", "ncclAllReduce", "_Z3fooi",
	};
	for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++)
		for (size_t j = 0; j < sizeof names / sizeof *names; j++)
			agrees(patterns[i], names[j]);
}

static void random_patterns(void **state)
{
	(void)state;
	static const char pat_chars[] = "ab*?[]!^-\\";
	static const char name_chars[] = "ab[]!-\\*";
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int round = 0; round < 300000; round++) {
		char pattern[10], name[10];
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		int pn = (int)(x >> 60) % 9, nn = (int)(x >> 56 & 7);
		for (int i = 0; i < pn; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			pattern[i] = pat_chars[(x >> 33) % (sizeof pat_chars - 1)];
		}
		pattern[pn] = 0;
		for (int i = 0; i < nn; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			name[i] = name_chars[(x >> 33) % (sizeof name_chars - 1)];
		}
		name[nn] = 0;
		agrees(pattern, name);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_shapes),
		cmocka_unit_test(random_patterns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

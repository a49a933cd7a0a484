/* collector/output/capture_own.c: a capture whose name another session took over is found out
 * by device and inode, read through its descriptor, and kept under the next suffix. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/output/capture_own.h"
#include "collector/output/outfile.h"

static char dir[] = "/tmp/test_capture_own.XXXXXX";

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
}

static void test_replaced_capture_is_kept_elsewhere(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	char prefix[4096], path[4200], other[4200], src[64], buf[64], err[512];
	snprintf(prefix, sizeof prefix, "%s/P", dir);
	int fd = outfile_claim(prefix, sizeof prefix, 1, err, sizeof err);
	assert_true(fd >= 0);
	snprintf(path, sizeof path, "%s.prof", prefix);
	assert_int_equal(write(fd, "ours", 4), 4);
	assert_true(capture_is_ours(fd, path));
	assert_string_equal(capture_source(fd, path, src, sizeof src), path);
	/* another session with the same prefix and PROFILER_OVERWRITE renames its own over */
	snprintf(other, sizeof other, "%s/other", dir);
	put(other, "theirs");
	assert_int_equal(rename(other, path), 0);
	assert_false(capture_is_ours(fd, path));
	const char *s = capture_source(fd, path, src, sizeof src);
	assert_string_not_equal(s, path);
	slurp(s, buf, sizeof buf);
	assert_string_equal(buf, "ours");
	char kept[4200];
	snprintf(kept, sizeof kept, "%s", path);
	assert_int_equal(capture_keep_elsewhere(fd, prefix, sizeof prefix, kept, sizeof kept, err,
						sizeof err), 0);
	snprintf(other, sizeof other, "%s/P-2.prof", dir);
	assert_string_equal(kept, other);
	slurp(kept, buf, sizeof buf);
	assert_string_equal(buf, "ours");
	slurp(path, buf, sizeof buf);
	assert_string_equal(buf, "theirs"); /* the other session's is left alone */
	close(fd);
	unlink(kept);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replaced_capture_is_kept_elsewhere),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}

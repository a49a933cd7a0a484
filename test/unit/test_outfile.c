/* Output file creation (collector/output/outfile.c): nothing at an output name is opened or
 * followed, temporary names are new and unpredictable, a taken name is not replaced
 * unless asked, and sessions claiming one prefix at the same moment get distinct ones. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/output/outfile.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/libprof-outfile-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *at(const char *name)
{
	static char p[4][128];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
	return p[k];
}

static void put(const char *name, const char *text)
{
	FILE *f = fopen(at(name), "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static char *slurp(const char *name)
{
	static char buf[256];
	FILE *f = fopen(at(name), "r");
	size_t n;
	assert_non_null(f);
	n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
	closedir(d);
	return n;
}

static void test_probe_kinds(void **state)
{
	char err[256], want[256];
	(void)state;
	assert_int_equal(outfile_probe(at("none"), err, sizeof err), 0);
	put("file", "x");
	assert_int_equal(outfile_probe(at("file"), err, sizeof err), 1);
	assert_int_equal(mkfifo(at("fifo"), 0600), 0);
	assert_int_equal(outfile_probe(at("fifo"), err, sizeof err), -1);
	snprintf(want, sizeof want, "%s is a FIFO", at("fifo"));
	assert_string_equal(err, want);
	assert_int_equal(symlink("/nonexistent", at("dangling")), 0);
	assert_int_equal(outfile_probe(at("dangling"), err, sizeof err), -1);
	snprintf(want, sizeof want, "%s is a symbolic link", at("dangling"));
	assert_string_equal(err, want);
	assert_int_equal(mkdir(at("adir"), 0700), 0);
	assert_int_equal(outfile_probe(at("adir"), err, sizeof err), -1);
	snprintf(want, sizeof want, "%s is a directory", at("adir"));
	assert_string_equal(err, want);
}

static void test_temp_names(void **state)
{
	char a[256], b[256];
	struct stat st;
	mode_t old = umask(022);
	(void)state;
	int fa = outfile_temp(at("out.json"), a, sizeof a);
	int fb = outfile_temp(at("out.json"), b, sizeof b);
	umask(old);
	assert_true(fa >= 0 && fb >= 0);
	assert_string_not_equal(a, b);
	assert_non_null(strstr(a, "/.out.json."));
	assert_int_equal(strlen(strrchr(a, '/')), strlen("/.out.json.0123456789abcdef.tmp"));
	assert_int_equal(fstat(fa, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	close(fa);
	close(fb);
	unlink(a);
	unlink(b);
}

static void test_place_never_replaces_unless_asked(void **state)
{
	char tmp[256];
	(void)state;
	put("taken", "theirs");
	int fd = outfile_temp(at("taken"), tmp, sizeof tmp);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "ours", 4), 4);
	close(fd);
	assert_int_equal(outfile_place(tmp, at("taken"), 0), 1);
	assert_string_equal(slurp("taken"), "theirs");
	assert_int_equal(outfile_place(tmp, at("free"), 0), 0);
	assert_string_equal(slurp("free"), "ours");
	/* replace: a regular file yes, a link never (the link stays, its target too) */
	assert_int_equal(outfile_save(at("taken"), "new", 3, 1), 0);
	assert_string_equal(slurp("taken"), "new");
	put("target", "precious");
	assert_int_equal(symlink(at("target"), at("link2")), 0);
	assert_int_equal(outfile_save(at("link2"), "evil", 4, 1), 1);
	assert_string_equal(slurp("target"), "precious");
	assert_int_equal(outfile_save(at("taken"), "again", 5, 0), 1);
	assert_string_equal(slurp("taken"), "new");
}

static void test_claim(void **state)
{
	char prefix[256], err[512];
	struct stat st;
	(void)state;
	snprintf(prefix, sizeof prefix, "%s", at("p"));
	int fd = outfile_claim(prefix, sizeof prefix, 0, err, sizeof err);
	assert_true(fd >= 0);
	close(fd);
	assert_string_equal(prefix, at("p"));
	/* p.prof is now taken; q.txt exists; r.prof is a FIFO (never opened: no hang) */
	snprintf(prefix, sizeof prefix, "%s", at("p"));
	fd = outfile_claim(prefix, sizeof prefix, 0, err, sizeof err);
	assert_true(fd >= 0);
	close(fd);
	assert_string_equal(prefix, at("p-2"));
	put("q.txt", "old");
	snprintf(prefix, sizeof prefix, "%s", at("q"));
	fd = outfile_claim(prefix, sizeof prefix, 0, err, sizeof err);
	close(fd);
	assert_string_equal(prefix, at("q-2"));
	assert_int_equal(mkfifo(at("r.prof"), 0600), 0);
	snprintf(prefix, sizeof prefix, "%s", at("r"));
	fd = outfile_claim(prefix, sizeof prefix, 0, err, sizeof err);
	close(fd);
	assert_string_equal(prefix, at("r-2"));
	/* overwrite: a regular file is replaced by a new one (the old one never opened),
	 * a link is still skipped */
	put("s.prof", "old capture");
	assert_int_equal(stat(at("s.prof"), &st), 0);
	ino_t old = st.st_ino;
	snprintf(prefix, sizeof prefix, "%s", at("s"));
	fd = outfile_claim(prefix, sizeof prefix, 1, err, sizeof err);
	assert_true(fd >= 0);
	close(fd);
	assert_string_equal(prefix, at("s"));
	assert_int_equal(stat(at("s.prof"), &st), 0);
	assert_true(st.st_ino != old);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(symlink(at("q.txt"), at("t.json")), 0);
	snprintf(prefix, sizeof prefix, "%s", at("t"));
	fd = outfile_claim(prefix, sizeof prefix, 1, err, sizeof err);
	close(fd);
	assert_string_equal(prefix, at("t-2"));
	assert_string_equal(slurp("q.txt"), "old");
}

/* An output in directories that do not exist yet: made, as mkdir -p would; one that
 * cannot be made (a file stands in the way) is an error naming it. */
static void test_claim_makes_directories(void **state)
{
	char prefix[256], err[512];
	struct stat st;
	(void)state;
	snprintf(prefix, sizeof prefix, "%s", at("runs/job/x"));
	int fd = outfile_claim(prefix, sizeof prefix, 0, err, sizeof err);
	assert_true(fd >= 0);
	close(fd);
	assert_string_equal(prefix, at("runs/job/x"));
	assert_int_equal(stat(at("runs/job/x.prof"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	put("plain", "a file");
	snprintf(prefix, sizeof prefix, "%s", at("plain/sub/x"));
	fd = outfile_claim(prefix, sizeof prefix, 0, err, sizeof err);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(err, "cannot create the output directory"));
	assert_non_null(strstr(err, "plain"));
}

/* A capture in parts: PREFIX.prof a new directory; taken ones skipped; with overwrite a
 * regular file replaced, a directory never. */
static void test_claim_parts(void **state)
{
	char prefix[256], err[512];
	struct stat st;
	(void)state;
	snprintf(prefix, sizeof prefix, "%s", at("d"));
	int fd = outfile_claim_parts(prefix, sizeof prefix, 0, err, sizeof err);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	close(fd);
	assert_string_equal(prefix, at("d"));
	put("d.prof/part-000001.prof", "part");
	snprintf(prefix, sizeof prefix, "%s", at("d"));
	fd = outfile_claim_parts(prefix, sizeof prefix, 0, err, sizeof err);
	close(fd);
	assert_string_equal(prefix, at("d-2"));
	/* overwrite: a directory is never emptied (another session's parts, a user's
	 * files): the next free name */
	put("d.prof/notes.txt", "mine");
	snprintf(prefix, sizeof prefix, "%s", at("d"));
	fd = outfile_claim_parts(prefix, sizeof prefix, 1, err, sizeof err);
	assert_true(fd >= 0);
	close(fd);
	assert_string_equal(prefix, at("d-3"));
	assert_string_equal(slurp("d.prof/part-000001.prof"), "part");
	assert_string_equal(slurp("d.prof/notes.txt"), "mine");
	/* a regular capture at the name, overwritten: a directory now */
	put("e.prof", "old capture");
	snprintf(prefix, sizeof prefix, "%s", at("e"));
	fd = outfile_claim_parts(prefix, sizeof prefix, 1, err, sizeof err);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(stat(at("e.prof"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
}

/* Sessions started at the same moment: every one gets its own prefix. */
static void test_claim_race(void **state)
{
	enum { N = 12 };
	char (*got)[256] = mmap(NULL, N * 256, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				-1, 0);
	volatile int *go = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	(void)state;
	assert_true(got != MAP_FAILED && go != MAP_FAILED);
	int before = entries();
	for (int i = 0; i < N; i++) {
		if (fork() == 0) {
			char prefix[256], err[512];
			while (!*go)
				;
			snprintf(prefix, sizeof prefix, "%s", at("race"));
			int fd = outfile_claim(prefix, sizeof prefix, 0, err, sizeof err);
			snprintf(got[i], 256, "%.255s", fd >= 0 ? prefix : err);
			_exit(fd >= 0 ? 0 : 1);
		}
	}
	*go = 1;
	for (int i = 0; i < N; i++) {
		int st;
		assert_true(wait(&st) > 0);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			assert_string_not_equal(got[i], got[j]);
	assert_int_equal(entries(), before + N);
	munmap(got, N * 256);
	munmap((void *)go, sizeof(int));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_kinds),
		cmocka_unit_test(test_temp_names),
		cmocka_unit_test(test_place_never_replaces_unless_asked),
		cmocka_unit_test(test_claim),
		cmocka_unit_test(test_claim_parts),
		cmocka_unit_test(test_claim_makes_directories),
		cmocka_unit_test(test_claim_race),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* The one writer of GOT entries (preload/trace/got_write.c): a read-only RELRO page is written
 * and put back as it was, exec bit included; a RELRO page still writable (the loader is
 * relocating its object) is left alone; two threads writing entries of one page never
 * fault. Compiled in here: a libprof.so source, not part of libprofcore. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

/* counted: a pass over many entries of one page makes the page writable once, and reads
 * the map once */
static int mprotect_calls, maps_opens;
static int counted_mprotect(void *addr, size_t len, int prot)
{
	mprotect_calls++;
	return mprotect(addr, len, prot);
}
static int counted_open(const char *path, int flags)
{
	maps_opens++;
	return open(path, flags);
}
#define mprotect counted_mprotect
#define open counted_open
#include "preload/trace/got_write.c"
#undef open
#undef mprotect

static size_t pagesize(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Three pages: the middle one stands for a GOT in RELRO. */
static char *three_pages(void)
{
	char *p = mmap(0, 3 * pagesize(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	assert_true(p != MAP_FAILED);
	return p;
}

static void restores_protection(void **state)
{
	(void)state;
	static const int prots[] = {PROT_READ, PROT_READ | PROT_EXEC};
	for (size_t i = 0; i < sizeof prots / sizeof *prots; i++) {
		char *p = three_pages();
		char *got = p + pagesize();
		assert_int_equal(mprotect(got, pagesize(), prots[i]), 0);
		struct prof_got_object o = {.relro_lo = (uintptr_t)got,
					    .relro_hi = (uintptr_t)got + pagesize()};
		void **slot = (void **)(got + 64);
		assert_int_equal(prof_got_write(&o, slot, (void *)0x1234), 0);
		assert_ptr_equal(*slot, (void *)0x1234);
		prof_got_write_done();
		assert_int_equal(page_prot((uintptr_t)got), prots[i]);
		/* outside RELRO: written as it is */
		assert_int_equal(prof_got_write(&o, (void **)p, (void *)0x99), 0);
		assert_ptr_equal(*(void **)p, (void *)0x99);
		munmap(p, 3 * pagesize());
	}
}

static void relocating_object_left_alone(void **state)
{
	(void)state;
	char *p = three_pages();
	char *got = p + pagesize();
	struct prof_got_object o = {.relro_lo = (uintptr_t)got,
				    .relro_hi = (uintptr_t)got + pagesize()};
	void **slot = (void **)(got + 64);
	assert_int_equal(prof_got_write(&o, slot, (void *)0x1234), -1);
	assert_null(*slot);
	assert_int_equal(page_prot((uintptr_t)got), PROT_READ | PROT_WRITE);
	/* RELRO's last partial page is never made read-only by the loader: written */
	o = (struct prof_got_object){.relro_lo = (uintptr_t)got,
				     .relro_hi = (uintptr_t)got + pagesize() / 2};
	assert_int_equal(prof_got_write(&o, slot, (void *)0x1234), 0);
	assert_ptr_equal(*slot, (void *)0x1234);
	munmap(p, 3 * pagesize());
}

static char *shared_got;

static void *writer(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	for (int i = 0; i < 3000; i++) {
		struct prof_got_object o = {.relro_lo = (uintptr_t)shared_got,
					    .relro_hi = (uintptr_t)shared_got + pagesize()};
		if (prof_got_write(&o, (void **)shared_got + k, (void *)(uintptr_t)i))
			return (void *)1;
		prof_got_write_done();
	}
	return 0;
}

/* Before the one lock, got.c and alloc_got.c each made the page writable and read-only
 * again under their own: A writable, B writable, A read-only, B's store faulted. */
static void two_writers_one_page(void **state)
{
	(void)state;
	char *p = three_pages();
	shared_got = p + pagesize();
	assert_int_equal(mprotect(shared_got, pagesize(), PROT_READ), 0);
	pthread_t t[4];
	for (uintptr_t k = 0; k < 4; k++)
		assert_int_equal(pthread_create(&t[k], 0, writer, (void *)k), 0);
	for (int k = 0; k < 4; k++) {
		void *rc;
		pthread_join(t[k], &rc);
		assert_null(rc);
	}
	for (int k = 0; k < 4; k++)
		assert_ptr_equal(((void **)shared_got)[k], (void *)2999);
	assert_int_equal(page_prot((uintptr_t)shared_got), PROT_READ);
	munmap(p, 3 * pagesize());
}

/* libtorch's thousands of entries: one map read and one opening per page and pass, every
 * entry written, the pages read-only again after */
static void one_opening_per_page(void **state)
{
	(void)state;
	char *p = three_pages();
	char *got = p + pagesize();
	assert_int_equal(mprotect(p, 3 * pagesize(), PROT_READ), 0);
	struct prof_got_object o = {.relro_lo = (uintptr_t)p,
				    .relro_hi = (uintptr_t)p + 3 * pagesize()};
	size_t per_page = pagesize() / sizeof(void *);
	mprotect_calls = maps_opens = 0;
	for (size_t k = 0; k < 3 * per_page; k++)
		assert_int_equal(prof_got_write(&o, (void **)p + k, (void *)(k + 1)), 0);
	prof_got_write_done();
	assert_int_equal(maps_opens, 1);
	assert_int_equal(mprotect_calls, 6); /* each page: opened, put back */
	for (size_t k = 0; k < 3 * per_page; k++)
		assert_ptr_equal(((void **)p)[k], (void *)(k + 1));
	for (int i = 0; i < 3; i++)
		assert_int_equal(page_prot((uintptr_t)p + (uintptr_t)i * pagesize()), PROT_READ);
	(void)got;
	munmap(p, 3 * pagesize());
}

/* A page left open by one object's pass is put back before another object's map is read:
 * that object must see read-only (the loader done), not "still being relocated", and so
 * write its other pages too. */
static void open_page_not_mistaken_for_relocation(void **state)
{
	(void)state;
	char *p = three_pages();
	char *got = p + pagesize();
	assert_int_equal(mprotect(got, 2 * pagesize(), PROT_READ), 0);
	struct prof_got_object a = {.relro_lo = (uintptr_t)got,
				    .relro_hi = (uintptr_t)got + pagesize()};
	struct prof_got_object b = {.relro_lo = (uintptr_t)got,
				    .relro_hi = (uintptr_t)got + 2 * pagesize()};
	void **second = (void **)(got + pagesize());
	assert_int_equal(prof_got_write(&a, (void **)got, (void *)1), 0);
	assert_int_equal(prof_got_write(&b, (void **)got + 1, (void *)2), 0);
	assert_int_equal(prof_got_write(&b, second, (void *)3), 0);
	prof_got_write_done();
	assert_ptr_equal(((void **)got)[0], (void *)1);
	assert_ptr_equal(((void **)got)[1], (void *)2);
	assert_ptr_equal(*second, (void *)3);
	assert_int_equal(page_prot((uintptr_t)got), PROT_READ);
	assert_int_equal(page_prot((uintptr_t)second), PROT_READ);
	munmap(p, 3 * pagesize());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(restores_protection),
		cmocka_unit_test(relocating_object_left_alone),
		cmocka_unit_test(two_writers_one_page),
		cmocka_unit_test(one_opening_per_page),
		cmocka_unit_test(open_page_not_mistaken_for_relocation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

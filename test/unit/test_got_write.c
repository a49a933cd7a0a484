/* The one writer of GOT entries (preload/trace/got_write.c): a read-only RELRO page is written
 * and put back as it was, exec bit included; a RELRO page still writable (the loader is
 * relocating its object) is left alone; two threads writing entries of one page never
 * fault. Compiled in here: a libprof.so source, not part of libprofcore. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "preload/trace/got_write.c"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(restores_protection),
		cmocka_unit_test(relocating_object_left_alone),
		cmocka_unit_test(two_writers_one_page),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The frame-pointer walk's verdicts per return address (preload/stacks/fp_walk.c,
 * compiled in here, with a fake libunwind): an address confirmed once is believed
 * without asking libunwind again, however many addresses came before it. A fixed table
 * filled during `import torch`, after which no address of the training loop could be
 * confirmed and every stack went to libunwind (issue 29). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "preload/stacks/fp_walk.c"

/* One "function" with the standard prologue, as large as the addresses we need. */
#define CODE_BYTES (1u << 20)
static unsigned char code[CODE_BYTES];
static unsigned proc_info_calls;

static int fake_proc_info(void *as, uint64_t ip, struct proc_bounds *pi, void *arg)
{
	(void)as;
	(void)arg;
	proc_info_calls++;
	if (ip < (uint64_t)code || ip >= (uint64_t)code + CODE_BYTES)
		return -1;
	pi->start_ip = (uint64_t)code;
	pi->end_ip = (uint64_t)code + CODE_BYTES;
	return 0;
}

static int fake_address_space;
static void *fake_as_var = &fake_address_space;

void *prof_real_dlsym(void *handle, const char *name)
{
	(void)handle;
	if (!strcmp(name, "_ULx86_64_local_addr_space"))
		return &fake_as_var;
	if (!strcmp(name, "_ULx86_64_get_proc_info_by_ip"))
		return (void *)fake_proc_info;
	return 0;
}

/* A one-frame stack: the frame's base at stack[2], no caller (return address 0). */
static struct fp_walk walk_once(uint64_t ra)
{
	static uint64_t stack[8];
	static struct fp_last none;
	uint64_t f[4], sps[4];
	stack[2] = 0;
	stack[3] = 0;
	struct fp_walk w = prof_fp_walk(f, sps, 4, ra, (uint64_t)&stack[0], (uint64_t)&stack[2],
					0, 0, &none);
	assert_int_equal(w.status, FP_WALK_END);
	assert_int_equal(w.n, 1);
	return w;
}

static void confirmed_addresses_stay_believed(void **state)
{
	(void)state;
	code[0] = 0x55; /* push %rbp; mov %rsp,%rbp */
	code[1] = 0x48;
	code[2] = 0x89;
	code[3] = 0xe5;
	assert_int_equal(prof_fp_setup((void *)1), 0);
	/* four times the first table's 65,536 slots */
	const uint64_t n = 4u << 16;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t ra = (uint64_t)code + 16 + i;
		struct fp_walk w = walk_once(ra);
		assert_true(w.unchecked);
		prof_fp_checked(&ra, 1);
	}
	unsigned asked = proc_info_calls;
	assert_int_equal(asked, n);
	/* every one, the first and the last included, believed without libunwind */
	for (uint64_t i = 0; i < n; i++) {
		struct fp_walk w = walk_once((uint64_t)code + 16 + i);
		if (w.unchecked)
			fail_msg("address %llu of %llu not believed", (unsigned long long)i,
				 (unsigned long long)n);
	}
	assert_int_equal(proc_info_calls, asked);
	/* one distrusted after its growth stays distrusted */
	uint64_t first = (uint64_t)code + 16;
	prof_fp_distrust(first);
	uint64_t f[4], sps[4];
	static uint64_t stack[8];
	static struct fp_last none;
	struct fp_walk w = prof_fp_walk(f, sps, 4, first, (uint64_t)&stack[0],
					(uint64_t)&stack[2], 0, 0, &none);
	assert_int_equal(w.status, FP_WALK_OTHER_CODE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(confirmed_addresses_stay_believed),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}

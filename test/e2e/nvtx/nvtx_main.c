/* NVTX v3 (header-only) in a program and in two shared objects, each its own NVTX
 * instance; never changed for libprof. Prints key=value lines for the test to check.
 *
 *   nvtx_main [R]      everything below; R ranges "with_alloc" (default 5)
 *   nvtx_main child    one range "child_range": what an exec'd child with an empty
 *                      environment records
 *
 * libprof's own API is weak: without libprof the program runs the same (the NVTX calls
 * then do nothing: no tool). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "prof.h"

#pragma weak prof_range_push
#pragma weak prof_range_pop
#pragma weak prof_pause
#pragma weak prof_resume

void lib_a_init(void);
void lib_b_init(void);
int lib_a_work(int n);
int lib_b_work(int n);

#define ALLOC 200000

static void allocs(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(ALLOC + i);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
}

static nvtxEventAttributes_t ascii(const char *m)
{
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = 0xff00ff00;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = m;
	return a;
}

static nvtxEventAttributes_t registered(nvtxStringHandle_t s)
{
	nvtxEventAttributes_t a = ascii(0);
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = s;
	return a;
}

static nvtxEventAttributes_t unicode(const wchar_t *m)
{
	nvtxEventAttributes_t a = ascii(0);
	a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
	a.message.unicode = m;
	return a;
}

static void print_env(const char *key)
{
	const char *v = getenv("NVTX_INJECTION64_PATH");
	printf("%s=%s\n", key, v ? v : "(unset)");
}

static void *worker(void *arg)
{
	nvtxRangeId_t id = *(nvtxRangeId_t *)arg;
	printf("worker_tid=%ld\n", (long)syscall(SYS_gettid));
	nvtxMarkA("worker_mark");
	nvtxRangeEnd(id); /* started on the main thread */
	lib_a_work(3);
	lib_b_work(3);
	return 0;
}

static int child(void)
{
	print_env("child_env");
	printf("child_pid=%d\n", (int)getpid());
	nvtxRangePushA("child_range");
	allocs(2);
	nvtxRangePop();
	return 0;
}

/* The same program again, exec'd with nothing in its environment. */
static void run_child(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = { "nvtx_main", "child", 0 };
		char *envp[] = { 0 };
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		printf("child_failed=%d\n", st);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child"))
		return child();
	int R = argc > 1 ? atoi(argv[1]) : 5;
	printf("pid=%d\nmain_tid=%ld\n", (int)getpid(), (long)syscall(SYS_gettid));
	print_env("nvtx_env");
	lib_a_init();
	lib_b_init();

	/* default domain: nesting and what push/pop return */
	int l0 = nvtxRangePushA("outer");
	int l1 = nvtxRangePushA("inner");
	nvtxMarkA("inner_mark");
	int p1 = nvtxRangePop();
	int p0 = nvtxRangePop();
	printf("levels=%d,%d,%d,%d\n", l0, l1, p1, p0);

	/* a named domain: registered and ASCII messages, a mark */
	nvtxDomainHandle_t dom = nvtxDomainCreateA("MyDomain");
	nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered_range");
	nvtxEventAttributes_t a = registered(reg);
	int d0 = nvtxDomainRangePushEx(dom, &a);
	a = ascii("ascii_in_domain");
	int d1 = nvtxDomainRangePushEx(dom, &a);
	nvtxDomainRangePop(dom);
	nvtxDomainRangePop(dom);
	a = ascii("domain_mark");
	nvtxDomainMarkEx(dom, &a);
	printf("domain_levels=%d,%d\n", d0, d1);
	/* a string registered in the default domain */
	nvtxStringHandle_t dreg = nvtxDomainRegisterStringA(0, "default_registered");
	a = registered(dreg);
	nvtxRangePushEx(&a);
	nvtxRangePop();
	/* wide strings */
	nvtxRangePushW(L"wide_\u00fc\u20ac");
	nvtxRangePop();
	nvtxMarkW(L"wide_mark");
	a = unicode(L"wide_in_domain");
	nvtxDomainRangePushEx(dom, &a);
	nvtxDomainRangePop(dom);

	/* allocations inside a range are its children */
	for (int i = 0; i < R; i++) {
		nvtxRangePushA("with_alloc");
		allocs(20);
		nvtxRangePop();
	}

	/* stacks are per domain: the default pop ends cross_default, opened first */
	nvtxRangePushA("cross_default");
	a = ascii("cross_domain");
	nvtxDomainRangePushEx(dom, &a);
	nvtxRangePop();
	nvtxDomainRangePop(dom);
	nvtxRangePushA("after_cross");
	allocs(10);
	nvtxRangePop();

	/* libprof's own ranges and NVTX ranges nest in one another */
	if (prof_range_push) {
		prof_range_push("prof_outer");
		nvtxRangePushA("nvtx_in_prof");
		prof_range_push("prof_in_nvtx");
		allocs(5);
		prof_range_pop();
		nvtxRangePop();
		prof_range_pop();
	}

	/* start/end ranges: same thread, ended twice, an unknown id, a registered name in
	 * a domain, overlapping a push/pop range, ended on another thread */
	nvtxRangeId_t id = nvtxRangeStartA("se_same");
	nvtxMarkA("se_mark");
	nvtxRangeEnd(id);
	nvtxRangeEnd(id);
	nvtxRangeEnd(123456789);
	nvtxStringHandle_t sreg = nvtxDomainRegisterStringA(dom, "se_registered");
	a = registered(sreg);
	id = nvtxDomainRangeStartEx(dom, &a);
	nvtxDomainRangeEnd(dom, id);
	id = nvtxRangeStartA("se_overlap");
	nvtxRangePushA("pp_overlap");
	nvtxRangeEnd(id);
	nvtxRangePop();
	nvtxRangeId_t cross = nvtxRangeStartA("se_cross");
	nvtxMarkA("before_thread");
	pthread_t th;
	if (pthread_create(&th, 0, worker, &cross))
		return 98;
	pthread_join(th, 0);

	/* two more NVTX instances, one per shared object */
	printf("lib_levels=%d,%d\n", lib_a_work(2), lib_b_work(2));

	/* paused: a range pushed then is not recorded, and what runs inside it after the
	 * resume nests one level up; a range popped while paused is not recorded either */
	if (prof_pause && prof_resume) {
		prof_pause();
		nvtxRangePushA("paused_outer");
		prof_resume();
		nvtxRangePushA("resumed_inner");
		allocs(10);
		nvtxRangePop();
		nvtxRangePop();
		nvtxRangePushA("popped_paused");
		prof_pause();
		nvtxRangePop();
		prof_resume();
	}
	nvtxRangePushA("final");
	allocs(10);
	nvtxRangePop();
	run_child();
	printf("done=1\n");
	return 0;
}

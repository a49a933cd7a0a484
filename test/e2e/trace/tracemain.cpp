// Drives tracelib through the PLT, plugin.so through dlopen+dlsym, from several threads.
// Checks every result itself: tracing must never change what a function computes.
// usage: tracemain PLUGIN_PATH N_ADDS THREADS
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <pthread.h>
#include <stdexcept>

extern "C" {
int tl_add(int, int);
long tl_sum(int, ...);
double tl_avg(int, ...);
double tl_mix(double, int, double, long, double, int, double, long, double, int, double, long,
	      double, long);
long tl_fact(long);
int tl_throw(int);
void tl_jump(jmp_buf *, int);
int tl_raise(int);
int tl_tail1(int, int);
int tl_tail2(int, int);
int tl_tail_throw(int);
struct pair {
	long a, b, c;
};
struct pair tl_pair(long);
}
namespace tl {
int scaled(int, int);
}

static int failures;
#define CHECK(cond)                                                                         \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "tracemain: %s failed at line %d\n", #cond, __LINE__); \
			failures++;                                                         \
		}                                                                           \
	} while (0)

static long adds_per_thread;
static volatile int handler_sum;

static void on_usr1(int)
{
	handler_sum = tl_add(20, 22); /* a traced call on the alternate stack */
}

static void *adder(void *)
{
	long s = 0;
	for (long i = 0; i < adds_per_thread; i++)
		s += tl_add((int)i, 1);
	CHECK(s == adds_per_thread * (adds_per_thread - 1) / 2 + adds_per_thread);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	adds_per_thread = atol(argv[2]);
	int threads = atoi(argv[3]);
	CHECK(tl_add(2, 3) == 5);
	CHECK(tl_sum(5, 1L, 2L, 3L, 4L, 5L) == 15);
	CHECK(tl_avg(4, 1.0, 2.0, 3.0, 6.0) == 3.0);
	CHECK(tl_mix(1.5, 2, 3.5, 4, 5.5, 6, 7.5, 8, 9.5, 10, 11.5, 12, 13.5, 14) == 108.5);
	CHECK(tl_fact(10) == 3628800);
	struct pair p = tl_pair(5);
	CHECK(p.a == 5 && p.b == 10 && p.c == 15);
	CHECK(tl::scaled(6, 7) == 42);
	int caught = 0;
	try {
		tl_throw(3);
	} catch (const std::runtime_error &e) {
		caught = 1;
	}
	CHECK(caught);
	CHECK(tl_add(1, 1) == 2); /* the shadow stack is sane after the exception */
	CHECK(tl_tail2(40, 2) == 42); /* a chain of tail calls sharing one return slot */
	caught = 0;
	try {
		tl_tail_throw(1); /* tail call into a thrower */
	} catch (const std::runtime_error &e) {
		caught = 1;
	}
	CHECK(caught);
	CHECK(tl_tail1(1, 2) == 3);
	jmp_buf env;
	int jumped = setjmp(env);
	if (!jumped)
		tl_jump(&env, 4);
	CHECK(jumped == 7);
	CHECK(tl_add(2, 2) == 4); /* and after the longjmp */
	stack_t ss = {};
	ss.ss_sp = malloc(1 << 16);
	ss.ss_size = 1 << 16;
	sigaltstack(&ss, 0);
	struct sigaction sa = {};
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, 0);
	CHECK(tl_raise(SIGUSR1) == 0);
	CHECK(handler_sum == 42);
	CHECK(tl_add(3, 3) == 6); /* and after the handler */
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	CHECK(h);
	int (*mul)(int, int) = h ? (int (*)(int, int))dlsym(h, "t2_mul") : 0;
	CHECK(mul && mul(6, 7) == 42 && mul(2, 3) == 6);
	pthread_t th[16];
	for (int i = 0; i < threads && i < 16; i++)
		pthread_create(&th[i], 0, adder, 0);
	for (int i = 0; i < threads && i < 16; i++)
		pthread_join(th[i], 0);
	printf("tracemain: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

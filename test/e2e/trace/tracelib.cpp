// A library whose exported functions the tracing tests trace: called through the PLT by
// the program and by the library itself (recursion), with varargs, stack arguments,
// doubles, a C++ exception thrown through traced frames, and a longjmp out of them.
#include <csetjmp>
#include <cstdarg>
#include <csignal>
#include <stdexcept>

extern "C" {
int tl_add(int a, int b)
{
	return a + b;
}

long tl_sum(int n, ...)
{
	va_list ap;
	va_start(ap, n);
	long s = 0;
	for (int i = 0; i < n; i++)
		s += va_arg(ap, long);
	va_end(ap);
	return s;
}

double tl_avg(int n, ...)
{
	va_list ap;
	va_start(ap, n);
	double s = 0;
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double);
	va_end(ap);
	return s / n;
}

/* 14 arguments: some integer and some double ones land on the stack */
double tl_mix(double a, int b, double c, long d, double e, int f, double g, long h, double i,
	      int j, double k, long l, double m, long n)
{
	return a + b + c + d + e + f + g + h + i + j + k + l + m + n;
}

/* Recursion goes through tracelib_b.cpp, so every level is a call through the PLT (a
 * compiler binds a direct self-call locally). */
long tl_fact_b(long n);
int tl_throw_b(int n);
void tl_jump_b(jmp_buf *env, int n);

long tl_fact(long n)
{
	return n <= 1 ? 1 : n * tl_fact_b(n - 1);
}

int tl_throw(int n)
{
	if (n == 0)
		throw std::runtime_error("boom");
	return tl_throw_b(n - 1) + 1;
}

void tl_jump(jmp_buf *env, int n)
{
	if (n == 0)
		longjmp(*env, 7);
	tl_jump_b(env, n - 1);
}

/* raises a signal inside a traced frame; its handler (on an alternate stack) makes
 * traced calls too */
int tl_raise(int sig)
{
	return raise(sig);
}

struct pair {
	long a, b, c;
};

/* returned in memory (hidden pointer in rdi) */
struct pair tl_pair(long x)
{
	return pair{x, x * 2, x * 3};
}
}

namespace tl {
int scaled(int x, int k)
{
	return x * k;
}
} // namespace tl

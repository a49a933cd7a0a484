// The other half of tracelib's recursions (see tracelib.cpp).
#include <csetjmp>

extern "C" {
long tl_fact(long n);
int tl_throw(int n);
void tl_jump(jmp_buf *env, int n);

long tl_fact_b(long n)
{
	return tl_fact(n);
}

int tl_throw_b(int n)
{
	return tl_throw(n);
}

void tl_jump_b(jmp_buf *env, int n)
{
	tl_jump(env, n);
}
}

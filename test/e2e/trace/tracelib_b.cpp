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

/* Tail calls through the PLT, as optimised C API wrappers make them (TensorFlow's TF_*
 * do): each traced function jumps to the next with the caller's return slot, so
 * tl_tail2 -> tl_tail1 -> tl_add share one slot, and tl_tail_throw's callee throws
 * through it. Written in assembly so no compiler setting can turn them into calls. */
asm(".text\n"
    ".globl tl_tail1\n.type tl_tail1, @function\ntl_tail1:\n\tjmp tl_add@PLT\n"
    ".size tl_tail1, .-tl_tail1\n"
    ".globl tl_tail2\n.type tl_tail2, @function\ntl_tail2:\n\tjmp tl_tail1@PLT\n"
    ".size tl_tail2, .-tl_tail2\n"
    ".globl tl_tail_throw\n.type tl_tail_throw, @function\ntl_tail_throw:\n\tjmp tl_throw@PLT\n"
    ".size tl_tail_throw, .-tl_tail_throw\n");

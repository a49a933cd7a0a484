/* One of two libraries of the same layout (reload_a.c, reload_b.c): loaded one after the
 * other at the same address, each must be traced under its own names. */
__attribute__((noinline)) int inner_b(int x)
{
	return x * 3;
}

/* calls inner_b through the PLT (an exported function may be interposed) */
int entry_b(int x)
{
	return inner_b(x) + 1;
}

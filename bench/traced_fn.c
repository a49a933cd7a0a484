/* The function the traced-call benchmark calls through the PLT. */
int bench_fn(int x)
{
	return x + 1;
}

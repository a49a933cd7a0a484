/* Loaded with dlopen and called through dlsym'd pointers only. */
int t2_mul(int a, int b)
{
	return a * b;
}

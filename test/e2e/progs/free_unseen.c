/* K blocks of SIZE allocated while libprof is paused and freed after it resumes: their
 * releases are of blocks libprof never saw allocated. Then K pairs recorded whole.
 * usage: free_unseen K SIZE */
#include "e2e.h"

int main(int argc, char **argv)
{
	long k = arg(argc, argv, 1, 20), size = arg(argc, argv, 2, 3217);
	void *b[256];
	if (!prof_pause || k > 256)
		return 2;
	prof_pause();
	for (long i = 0; i < k; i++)
		keep(b[i] = malloc((size_t)size));
	prof_resume();
	for (long i = 0; i < k; i++)
		free(b[i]);
	many((size_t)size, k);
	printf("pid=%d\n", (int)getpid());
	return 0;
}

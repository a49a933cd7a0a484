/* K blocks of S bytes live at once, then all freed, then K/2 again and freed: the peak of
 * live heap bytes is K*S plus whatever else the process holds at that moment.
 * usage: peak K S */
#include "e2e.h"

int main(int argc, char **argv)
{
	long K = arg(argc, argv, 1, 40), S = arg(argc, argv, 2, 100003);
	void *b[1024];
	if (K > 1024)
		return 2;
	for (long i = 0; i < K; i++)
		keep(b[i] = malloc((size_t)S));
	for (long i = 0; i < K; i++)
		free(b[i]);
	for (long i = 0; i < K / 2; i++)
		keep(b[i] = malloc((size_t)S));
	for (long i = 0; i < K / 2; i++)
		free(b[i]);
	printf("pid=%d\n", (int)getpid());
	return 0;
}

/* Fresh names all the time: T threads, each N ranges named "t<i>-<n>" (every name new, so
 * each event refers to a string interned just before it) and N marks "m<i>-<n>".
 * usage: names T N */
#include "e2e.h"

static long N;

static void *work(void *arg)
{
	long me = (long)arg;
	char name[64];
	for (long n = 0; n < N; n++) {
		snprintf(name, sizeof name, "t%ld-%ld", me, n);
		prof_range_push(name);
		prof_range_pop();
		snprintf(name, sizeof name, "m%ld-%ld", me, n);
		prof_mark(name);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long T = arg(argc, argv, 1, 2);
	N = arg(argc, argv, 2, 2000);
	pthread_t th[16];
	if (!prof_range_push || T > 16)
		return 2;
	for (long i = 0; i < T; i++)
		if (pthread_create(&th[i], 0, work, (void *)i))
			die("pthread_create");
	for (long i = 0; i < T; i++)
		pthread_join(th[i], 0);
	printf("pid=%d\n", (int)getpid());
	return 0;
}

/* exec_fifo PATH: makes a FIFO at PATH and execve()s it, then a script whose #! names
 * it; prints "fifo errno=N" and "script errno=N" (EACCES natively, at once). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *fifo = argv[1];
	char script[4096];
	snprintf(script, sizeof script, "%s.sh", fifo);
	if (mkfifo(fifo, 0755))
		return 3;
	FILE *f = fopen(script, "w");
	if (!f)
		return 4;
	fprintf(f, "#!%s\n", fifo);
	fclose(f);
	chmod(script, 0755);
	char *args[] = {(char *)fifo, 0};
	execve(fifo, args, environ);
	printf("fifo errno=%d\n", errno);
	args[0] = script;
	execve(script, args, environ);
	printf("script errno=%d\n", errno);
	return 0;
}

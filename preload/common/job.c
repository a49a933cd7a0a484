/* The launchers' variables. The innermost launcher wins: torchrun under srun gives the
 * training rank (RANK), not Slurm's task number; so does a bare RANK with WORLD_SIZE
 * (DeepSpeed's launcher, a script's own spawner) under srun or mpirun. Values that are
 * not plain non-negative numbers are left out rather than shown wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/common/job.h"
#include "preload/common/env.h"

struct launcher {
	const char *name;
	const char *detect, *detect2; /* both set in every process the launcher starts */
	const char *rank, *local_rank, *world_size, *job;
};

static const struct launcher launchers[] = {
	{"torchrun", "TORCHELASTIC_RUN_ID", NULL, "RANK", "LOCAL_RANK", "WORLD_SIZE",
	 "TORCHELASTIC_RUN_ID"},
	/* torch.distributed's env:// without torchrun (DeepSpeed, a script's own spawner) */
	{"torch.distributed", "RANK", "WORLD_SIZE", "RANK", "LOCAL_RANK", "WORLD_SIZE", NULL},
	{"Open MPI", "OMPI_COMM_WORLD_RANK", NULL, "OMPI_COMM_WORLD_RANK",
	 "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid"},
	{"MPICH", "PMI_RANK", NULL, "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", NULL},
	{"PMIx", "PMIX_RANK", NULL, "PMIX_RANK", NULL, NULL, "PMIX_NAMESPACE"},
	{"Slurm", "SLURM_PROCID", NULL, "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
	 "SLURM_JOB_ID"},
	/* a bare RANK, as %r always read it */
	{"torch.distributed", "RANK", NULL, "RANK", "LOCAL_RANK", "WORLD_SIZE", NULL},
};

static const char *number(const char *var)
{
	const char *v = var ? prof_getenv(var) : NULL;
	if (!v || !*v || strlen(v) > 9)
		return NULL;
	for (const char *p = v; *p; p++)
		if (*p < '0' || *p > '9')
			return NULL;
	return v;
}

static const struct launcher *launcher(void)
{
	for (size_t i = 0; i < sizeof launchers / sizeof *launchers; i++) {
		const char *d = prof_getenv(launchers[i].detect);
		const char *d2 = launchers[i].detect2 ? prof_getenv(launchers[i].detect2) : "set";
		if (d && *d && d2 && *d2)
			return &launchers[i];
	}
	return NULL;
}

const char *prof_job_rank(void)
{
	const struct launcher *l = launcher();
	return l ? number(l->rank) : NULL;
}

/* a job id printable on one line, or NULL */
static const char *text(const char *var)
{
	const char *v = var ? prof_getenv(var) : NULL;
	if (!v || !*v || strlen(v) > 100)
		return NULL;
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return NULL;
	return v;
}

size_t prof_job_describe(char *out, size_t len)
{
	const struct launcher *l = launcher();
	size_t n = 0;

	if (len)
		out[0] = 0;
	if (!l || !len)
		return 0;
	/* the host per process: captures of several hosts are read as one */
	char host[65] = "";
	if (gethostname(host, sizeof host - 1) || strpbrk(host, "\n="))
		host[0] = 0;
	const char *keys[] = {"launcher", "rank", "local_rank", "world_size", "job", "host"};
	const char *vals[] = {l->name, number(l->rank), number(l->local_rank),
			      number(l->world_size), text(l->job ? l->job : "SLURM_JOB_ID"),
			      host[0] ? host : NULL};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		if (!vals[i])
			continue;
		int k = snprintf(out + n, len - n, "%s=%s\n", keys[i], vals[i]);
		if (k < 0 || (size_t)k >= len - n) {
			out[n] = 0; /* whole lines only */
			break;
		}
		n += (size_t)k;
	}
	return n;
}

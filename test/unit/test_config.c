/* Settings: keys, values, environment variables, bad input, prefix expansion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "preload/common/config.h"
#include "preload/common/job.h"
#include "preload/common/shm_layout.h"

static char warnings[8][700];
static int nwarn;
static void warn(const char *line)
{
	if (nwarn < 8)
		strncpy(warnings[nwarn++], line, sizeof warnings[0] - 1);
}

static void mxnet_keys(void **state)
{
	(void)state;
	struct prof_config c;
	char err[512];
	prof_config_defaults(&c);
	assert_int_equal(prof_config_set(&c, "profile_all", "0", err, sizeof err), 0);
	assert_int_equal(c.profile_memory, 0);
	assert_int_equal(c.profile_api, 0);
	assert_int_equal(prof_config_set(&c, "profile_memory", "true", err, sizeof err), 0);
	assert_int_equal(c.profile_memory, 1);
	assert_int_equal(prof_config_set(&c, "filename", "profile_output.json", err, sizeof err), 0);
	assert_string_equal(c.output, "profile_output");
	assert_int_equal(prof_config_set(&c, "aggregate_stats", "1", err, sizeof err), 0);
	assert_int_equal(prof_config_set(&c, "continuous_dump", "1", err, sizeof err), 0);
	assert_int_equal(prof_config_set(&c, "dump_period", "0.25", err, sizeof err), 0);
	assert_int_equal(c.dump_period_ms, 250);
}

static void bad_values_leave_config_alone(void **state)
{
	(void)state;
	struct prof_config c, before;
	char err[512];
	prof_config_defaults(&c);
	before = c;
	assert_int_equal(prof_config_set(&c, "profile_memory", "maybe", err, sizeof err), -1);
	assert_non_null(strstr(err, "profile_memory=maybe"));
	assert_int_equal(prof_config_set(&c, "ring_size", "lots", err, sizeof err), -1);
	assert_int_equal(prof_config_set(&c, "ring_size", "1", err, sizeof err), -1);
	assert_int_equal(prof_config_set(&c, "dump_period", "-1", err, sizeof err), -1);
	assert_int_equal(prof_config_set(&c, "no_such_key", "1", err, sizeof err), -1);
	assert_non_null(strstr(err, "unknown setting 'no_such_key'"));
	assert_memory_equal(&c, &before, sizeof c);
}

static void sizes(void **state)
{
	(void)state;
	uint64_t v;
	assert_int_equal(prof_parse_size("4M", &v), 0);
	assert_int_equal(v, 4u << 20);
	assert_int_equal(prof_parse_size("64KiB", &v), 0);
	assert_int_equal(v, 64u << 10);
	assert_int_equal(prof_parse_size("1g", &v), 0);
	assert_int_equal(v, 1u << 30);
	assert_int_equal(prof_parse_size("x", &v), -1);
	assert_int_equal(prof_parse_size("4Q", &v), -1);
	struct prof_config c;
	char err[256];
	prof_config_defaults(&c);
	assert_int_equal(prof_config_set(&c, "ring_size", "100000", err, sizeof err), 0);
	assert_int_equal(c.ring_bytes, 65536); /* rounded down to a power of two */
}

static void environment(void **state)
{
	(void)state;
	char *env[] = {"PATH=/bin", "PROFILER_AUTOSTART=1", "PROFILER_RING_SIZE=abc",
		       "PROFILER_FOO=1", "PROFILER_OUTPUT=run-%p", "PROFILER_SESSION=0123",
		       "PROFILER_PROFILE_MEMORY=0", 0};
	struct prof_config c;
	prof_config_defaults(&c);
	nwarn = 0;
	assert_int_equal(prof_config_from_env(&c, env, warn), 2);
	assert_int_equal(c.autostart, 1);
	assert_int_equal(c.profile_memory, 0);
	assert_int_equal(c.ring_bytes, PROF_DEFAULT_RING_BYTES);
	assert_string_equal(c.output, "run-%p");
	assert_int_equal(nwarn, 2);
	assert_non_null(strstr(warnings[0], "PROFILER_RING_SIZE=abc"));
	assert_non_null(strstr(warnings[1], "unknown variable PROFILER_FOO"));
}

static void prefix_expansion(void **state)
{
	(void)state;
	char out[256], err[256];
	setenv("RANK", "3", 1);
	assert_int_equal(prof_expand_prefix("p-%p-r%r-%%", out, sizeof out, 42, 0, err, sizeof err), 0);
	assert_string_equal(out, "p-42-r3-%");
	assert_int_equal(prof_expand_prefix("x%z", out, sizeof out, 1, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "%z"));
	assert_int_equal(prof_expand_prefix("%t", out, sizeof out, 1, 0, err, sizeof err), 0);
	assert_int_equal(strlen(out), 15); /* YYYYmmdd-HHMMSS */
	char host[128] = "";
	gethostname(host, sizeof host);
	assert_int_equal(prof_expand_prefix("%h", out, sizeof out, 1, 0, err, sizeof err), 0);
	assert_string_equal(out, host);
}

static const char *const launcher_vars[] = {
	"TORCHELASTIC_RUN_ID", "RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
	"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid",
	"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMIX_RANK", "PMIX_NAMESPACE",
	"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_JOB_ID"};

static void clear_launcher_vars(void)
{
	for (size_t i = 0; i < sizeof launcher_vars / sizeof *launcher_vars; i++)
		unsetenv(launcher_vars[i]);
}

/* lines, then "host=<this host>\n" */
static const char *with_host(const char *lines)
{
	static char buf[PROF_JOB_MAX];
	char host[65] = "";
	gethostname(host, sizeof host - 1);
	snprintf(buf, sizeof buf, "%shost=%s\n", lines, host);
	return buf;
}

/* The innermost launcher names the rank; bad values are left out, not shown wrong. */
static void job_facts(void **state)
{
	(void)state;
	char out[PROF_JOB_MAX], err[256];
	clear_launcher_vars();
	assert_int_equal(prof_job_describe(out, sizeof out), 0);
	assert_string_equal(out, "");
	assert_null(prof_job_rank());
	assert_int_equal(prof_expand_prefix("r%r", out, sizeof out, 1, 0, err, sizeof err), 0);
	assert_string_equal(out, "r0");

	setenv("SLURM_PROCID", "5", 1);
	setenv("SLURM_LOCALID", "1", 1);
	setenv("SLURM_NTASKS", "8", 1);
	setenv("SLURM_JOB_ID", "4242", 1);
	prof_job_describe(out, sizeof out);
	assert_string_equal(out, with_host("launcher=Slurm\nrank=5\nlocal_rank=1\nworld_size=8\n"
					   "job=4242\n"));
	/* torchrun inside the allocation: the training rank, Slurm's job id kept apart */
	setenv("TORCHELASTIC_RUN_ID", "none", 1);
	setenv("RANK", "3", 1);
	setenv("LOCAL_RANK", "x1", 1); /* not a number: left out */
	setenv("WORLD_SIZE", "4", 1);
	prof_job_describe(out, sizeof out);
	assert_string_equal(out, with_host("launcher=torchrun\nrank=3\nworld_size=4\njob=none\n"));
	assert_string_equal(prof_job_rank(), "3");
	/* a bare RANK with WORLD_SIZE (DeepSpeed, mp.spawn) under srun: the inner one */
	unsetenv("TORCHELASTIC_RUN_ID");
	prof_job_describe(out, sizeof out);
	assert_string_equal(out, with_host("launcher=torch.distributed\nrank=3\nworld_size=4\n"
					   "job=4242\n"));
	unsetenv("WORLD_SIZE"); /* RANK alone: Slurm's */
	assert_string_equal(prof_job_rank(), "5");
	clear_launcher_vars();

	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
	prof_job_describe(out, sizeof out);
	assert_string_equal(out, with_host("launcher=Open MPI\nrank=1\nlocal_rank=1\nworld_size=2\n"));
	assert_int_equal(prof_expand_prefix("r%r", out, sizeof out, 1, 0, err, sizeof err), 0);
	assert_string_equal(out, "r1");
	/* a job id with a line break would forge a line: left out */
	setenv("OMPI_MCA_ess_base_jobid", "12\nrank=7", 1);
	prof_job_describe(out, sizeof out);
	assert_null(strstr(out, "rank=7"));
	/* too small a buffer: whole lines only */
	char small[20];
	assert_int_equal(prof_job_describe(small, sizeof small), strlen("launcher=Open MPI\n"));
	assert_string_equal(small, "launcher=Open MPI\n");
	clear_launcher_vars();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mxnet_keys),
		cmocka_unit_test(bad_values_leave_config_alone),
		cmocka_unit_test(sizes),
		cmocka_unit_test(environment),
		cmocka_unit_test(prefix_expansion),
		cmocka_unit_test(job_facts),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}

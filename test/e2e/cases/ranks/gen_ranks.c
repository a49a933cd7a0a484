/* Writes one synthetic capture per rank of a data-parallel job, as libprof's collector
 * would on each rank's host: the session's facts (host, boot, clock anchors), the rank's
 * launcher facts (CAP_JOB), and per step a mark, some compute, FILLER short calls and an
 * all-reduce that ends when the last rank arrives. Ranks run on HOSTS hosts (consecutive
 * ranks share one), each host with its own CLOCK_MONOTONIC zero and pids that clash with
 * the other hosts'; host h's realtime clock is off by h x SKEW_US (imperfect time sync),
 * which the readers' alignment from collectives must undo. Rank SLOW_RANK computes SLOW_US
 * longer in every step: the others wait that long in each all-reduce.
 *
 * With LATE, the ranks of hosts other than the first record from step LATE on (they
 * started late): the readers must not pair their calls with the first host's by count.
 *
 * usage: gen_ranks DIR RANKS HOSTS STEPS FILLER SKEW_US SLOW_RANK SLOW_US [LATE]
 * writes DIR/rank-R.prof and prints each host's true clock offset to host 0's, in ns:
 * "offset host-H NS". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/capture/capture.h"
#include "test/unit/capture_fixture.h" /* fx_ev */

#define TRUE_START 1000000000000ull   /* 1000 s: when every rank's session starts */
#define EPOCH 1700000000000000000ull  /* realtime at true time 0 */
#define COMPUTE_NS 2000000ull         /* 2 ms of compute per step */
#define REDUCE_NS 100000ull           /* 100 us: an all-reduce once every rank is in */

enum { NAME_COMPUTE = 1, NAME_ALLREDUCE, NAME_FILLER };
enum { CAT_COLLECTIVE = PROF_CAT_FIRST_DYNAMIC, CAT_OPERATOR };

static uint64_t boot_of(unsigned host) { return 1500000000ull * host + 250000000ull; }

/* host h's monotonic time at true time t */
static uint64_t mono(unsigned host, uint64_t t) { return t - boot_of(host); }

static struct cap_writer *w;

static void out(uint32_t type, const void *head, size_t hlen, const void *tail, size_t tlen)
{
	if ((tail ? cap_write2(w, type, head, hlen, tail, tlen) : cap_write(w, type, head, hlen))) {
		fprintf(stderr, "gen_ranks: %s\n", cap_writer_error(w));
		exit(1);
	}
}

static void string(uint32_t type, uint32_t pid, uint32_t id, const char *s)
{
	struct cap_string h = {pid, id};
	out(type, &h, sizeof h, s, strlen(s));
}

/* When rank r arrives at step s's all-reduce (true time). */
static uint64_t arrival(unsigned r, unsigned s, unsigned slow_rank, uint64_t slow_ns,
			uint64_t step_ns)
{
	uint64_t t = TRUE_START + 1000000ull + s * step_ns + COMPUTE_NS + (r % 7) * 3000ull;
	return r == slow_rank ? t + slow_ns : t;
}

int main(int argc, char **argv)
{
	if (argc != 9 && argc != 10) {
		fprintf(stderr, "usage: gen_ranks DIR RANKS HOSTS STEPS FILLER SKEW_US SLOW_RANK "
				"SLOW_US [LATE]\n");
		return 2;
	}
	unsigned late = argc == 10 ? (unsigned)atoi(argv[9]) : 0;
	const char *dir = argv[1];
	unsigned ranks = (unsigned)atoi(argv[2]), hosts = (unsigned)atoi(argv[3]);
	unsigned steps = (unsigned)atoi(argv[4]), filler = (unsigned)atoi(argv[5]);
	int64_t skew_ns = (int64_t)atoll(argv[6]) * 1000;
	unsigned slow_rank = (unsigned)atoi(argv[7]);
	uint64_t slow_ns = (uint64_t)atoll(argv[8]) * 1000;
	if (!ranks || !hosts || hosts > ranks || !steps) {
		fprintf(stderr, "gen_ranks: RANKS, HOSTS and STEPS must be positive, HOSTS <= RANKS\n");
		return 2;
	}
	uint64_t step_ns = COMPUTE_NS + slow_ns + REDUCE_NS + 1000000ull;
	unsigned per_host = (ranks + hosts - 1) / hosts;
	for (unsigned h = 0; h < hosts; h++)
		printf("offset host-%u %" PRId64 "\n", h, (int64_t)boot_of(h) - (int64_t)boot_of(0));
	struct prof_event *buf = malloc((filler + 4) * sizeof *buf);
	if (!buf)
		return 1;
	for (unsigned r = 0; r < ranks; r++) {
		unsigned host = r / per_host, local = r % per_host;
		uint32_t pid = 100 + local, tid = pid;
		char path[4096], err[512], text[1024];
		snprintf(path, sizeof path, "%s/rank-%u.prof", dir, r);
		if (!(w = cap_writer_open_workers(path, 0, err, sizeof err))) {
			fprintf(stderr, "gen_ranks: %s\n", err);
			return 1;
		}
		uint64_t start = TRUE_START + r * 10000ull, end = TRUE_START + (steps + 2) * step_ns;
		int64_t real_err = skew_ns * host;
		snprintf(text, sizeof text,
			 "command=train.py\nhost=host-%u\nclock=monotonic\nstart_ns=%" PRIu64
			 "\nroot_pid=%u\nring_bytes=4194304\nblock=65536\nversion=1\n"
			 "anchor_monotonic_ns=%" PRIu64 "\nanchor_realtime_ns=%" PRIu64
			 "\nboot_id=boot-of-host-%u\n",
			 host, mono(host, start), pid, mono(host, start),
			 (uint64_t)((int64_t)(EPOCH + start) + real_err), host);
		out(CAP_SESSION, text, strlen(text), NULL, 0);
		struct cap_process cp = {.pid = pid, .ppid = 1, .start_ns = mono(host, start)};
		static const char cmd[] = "python3\0train.py";
		out(CAP_PROCESS, &cp, sizeof cp, cmd, sizeof cmd);
		struct cap_job cj = {.pid = pid, .exec_seq = 0};
		snprintf(text, sizeof text,
			 "launcher=torchrun\njob=gen\nhost=host-%u\nrank=%u\nlocal_rank=%u\n"
			 "world_size=%u\n", host, r, local, ranks);
		out(CAP_JOB, &cj, sizeof cj, text, strlen(text));
		struct cap_thread ct = {pid, tid};
		out(CAP_THREAD, &ct, sizeof ct, "MainThread", 10);
		string(CAP_CATEGORY, pid, CAT_COLLECTIVE, "collective");
		string(CAP_CATEGORY, pid, CAT_OPERATOR, "operator");
		string(CAP_STRING, pid, NAME_COMPUTE, "compute");
		string(CAP_STRING, pid, NAME_ALLREDUCE, "allreduce");
		string(CAP_STRING, pid, NAME_FILLER, "aten::add");
		for (unsigned s = host ? late : 0; s < steps; s++) {
			uint64_t t = TRUE_START + 1000000ull + s * step_ns, last = 0;
			for (unsigned q = 0; q < ranks; q++) {
				uint64_t a = arrival(q, s, slow_rank, slow_ns, step_ns);
				last = a > last ? a : last;
			}
			uint64_t arrive = arrival(r, s, slow_rank, slow_ns, step_ns);
			/* every rank leaves within a few microseconds of the others */
			uint64_t leave = last + REDUCE_NS + (r % 5) * 1000ull;
			unsigned n = 0;
			buf[n++] = fx_ev(mono(host, t), mono(host, t), 0, PROF_CAT_STEP, PROF_EV_INSTANT,
					 0);
			buf[n++] = fx_ev(mono(host, t), mono(host, arrive), NAME_COMPUTE, PROF_CAT_USER,
					 PROF_EV_COMPLETE, 0);
			uint64_t gap = filler ? (arrive - t) / (filler + 1) : 0;
			for (unsigned f = 0; f < filler; f++)
				buf[n++] = fx_ev(mono(host, t + f * gap + 1),
						 mono(host, t + f * gap + gap / 2), NAME_FILLER,
						 CAT_OPERATOR, PROF_EV_COMPLETE, 1);
			buf[n++] = fx_ev(mono(host, arrive), mono(host, leave), NAME_ALLREDUCE,
					 CAT_COLLECTIVE, PROF_EV_COMPLETE, 0);
			struct cap_events ce = {pid, tid, n, 0};
			out(CAP_EVENTS, &ce, sizeof ce, buf, n * sizeof *buf);
		}
		struct cap_process_end pe = {.pid = pid, .status = 0, .end_ns = mono(host, end)};
		out(CAP_PROCESS_END, &pe, sizeof pe, NULL, 0);
		snprintf(text, sizeof text, "end_ns=%" PRIu64 "\nevents=%u\nlost=0\n",
			 mono(host, end), steps * (filler + 3));
		out(CAP_SESSION_END, text, strlen(text), NULL, 0);
		/* the collector's fold record, alone in the last frame: nothing folded */
		struct cap_fold cf = {.n = 1};
		static const uint8_t shown = 0;
		if (cap_flush(w)) {
			fprintf(stderr, "gen_ranks: %s\n", cap_writer_error(w));
			return 1;
		}
		out(CAP_FOLD, &cf, sizeof cf, &shown, 1);
		if (cap_writer_close(w)) {
			fprintf(stderr, "gen_ranks: %s: cannot write\n", path);
			return 1;
		}
	}
	free(buf);
	return 0;
}

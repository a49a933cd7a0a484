/* An image's CAP_JOB record: the launcher's facts (rank, local rank, world size, launcher,
 * job id), kept on the image, and its label prefixed "rank R (host) " so that the ranks
 * of one job, all "python train.py", are told apart in the trace and the tables. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/model/model_internal.h"

/* a value of at most 9 digits, or -1 */
static int32_t number(const char *v, size_t n)
{
	int32_t x = 0;
	if (!n || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	return x;
}

static int relabel(struct model *m, struct image *im)
{
	/* its own host (a capture of another host may be read with this one), else its
	 * capture's */
	uint32_t src_host = m->sources.n > im->source ? m->src[im->source].host : STR_NONE;
	const char *host = im->host != STR_NONE   ? strtab_get(&m->str, im->host, NULL)
			 : src_host != STR_NONE ? strtab_get(&m->str, src_host, NULL)
						: model_fact(m, "host");
	const char *old = im->label != STR_NONE ? strtab_get(&m->str, im->label, NULL) : "";
	char buf[200];
	int n = host && *host ? snprintf(buf, sizeof buf, "rank %d (%.60s) %s", (int)im->rank, host,
					 old)
			      : snprintf(buf, sizeof buf, "rank %d %s", (int)im->rank, old);
	if (n < 0)
		return 0;
	size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
	while (len && buf[len - 1] == ' ')
		len--;
	return strtab_intern(&m->str, buf, len, &im->label);
}

int model_job_record(struct model *m, const void *payload, uint32_t len)
{
	struct cap_job cj;
	if (len < sizeof cj)
		return 0;
	memcpy(&cj, payload, sizeof cj);
	const uint64_t *seq = model_exec_find(m, cj.pid, cj.exec_seq);
	if (!seq)
		return 0; /* no such image: damaged, skipped */
	struct image *im = &m->img[*seq - 1];
	if (im->launcher != STR_NONE)
		return 0; /* a later part's repeat */
	const char *p = (const char *)payload + sizeof cj, *end = p + (len - sizeof cj);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(eol - p));
		if (eq) {
			size_t k = (size_t)(eq - p), vn = (size_t)(eol - eq - 1);
			const char *v = eq + 1;
			int rc = 0;
			if (k == 8 && !memcmp(p, "launcher", 8))
				rc = strtab_intern(&m->str, v, vn, &im->launcher);
			else if (k == 3 && !memcmp(p, "job", 3))
				rc = strtab_intern(&m->str, v, vn, &im->job);
			else if (k == 4 && !memcmp(p, "host", 4) && vn)
				rc = strtab_intern(&m->str, v, vn, &im->host);
			else if (k == 4 && !memcmp(p, "rank", 4))
				im->rank = number(v, vn);
			else if (k == 10 && !memcmp(p, "local_rank", 10))
				im->local_rank = number(v, vn);
			else if (k == 10 && !memcmp(p, "world_size", 10))
				im->world_size = number(v, vn);
			if (rc)
				return -1;
		}
		p = nl ? nl + 1 : end;
	}
	if (im->launcher == STR_NONE && strtab_intern_str(&m->str, "", &im->launcher))
		return -1;
	return im->rank >= 0 ? relabel(m, im) : 0;
}

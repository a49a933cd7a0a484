/* Building the model from the capture's structural records (session, processes,
 * threads, strings, categories); events go to model_events.c. */
#include "formats/symbols/aten_names.h"
#include "formats/symbols/demangle.h"
#include "formats/model/memcurve.h"
#include "formats/model/memtrack.h"
#include "formats/model/model.h"
#include "preload/common/event.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/model/model_internal.h"
#include "formats/util/vec.h"

#define VISIT_OOM 3

void model_init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	strtab_init(&m->str);
	u64map_init(&m->names);
	u64map_init(&m->pid_image);
	u64map_init(&m->pid_exec);
	u64map_init(&m->mod_seen);
	u64map_init(&m->thread_ix);
	u64map_init(&m->stack_ix);
	u64map_init(&m->frame_names);
	u64map_init(&m->gpu_blocks);
	u64map_init(&m->gpu_cupti_blocks);
	u64map_init(&m->mxnet_blocks);
	u64map_init(&m->tpids);
	cap_sources_init(&m->sources);
	m->first_t = UINT64_MAX;
}

const struct mem_image model_no_gpu[MODEL_DEVICES];

static void mem_image_free(struct mem_image *mi)
{
	memtrack_free(mi);
	memcurve_free(mi->curve);
	free(mi->sites);
}

void model_free_gpu(struct mem_image *gpu)
{
	if (gpu == model_no_gpu)
		return;
	for (size_t d = 0; d < MODEL_DEVICES; d++)
		mem_image_free(&gpu[d]);
	free(gpu);
}

void model_free(struct model *m)
{
	size_t i;

	for (i = 0; i < m->nimg; i++) {
		mem_image_free(&m->img[i].mem);
		model_free_gpu(m->img[i].gpu);
		model_free_gpu(m->img[i].gpu_cupti);
	}
	u64map_free(&m->gpu_blocks);
	u64map_free(&m->gpu_cupti_blocks);
	u64map_free(&m->mxnet_blocks);
	strtab_free(&m->str);
	u64map_free(&m->names);
	u64map_free(&m->pid_image);
	u64map_free(&m->pid_exec);
	u64map_free(&m->mod_seen);
	free(m->keep_buf);
	u64map_free(&m->thread_ix);
	free(m->img);
	for (i = 0; i < m->nthr; i++) {
		free(m->thr[i].child);
		free(m->thr[i].mem_direct);
		free(m->thr[i].mem_nested);
		free(m->thr[i].kids);
		free(m->thr[i].cat_time);
	}
	free(m->thr);
	free(m->gaps);
	free(m->session);
	free(m->session_end);
	cap_sources_free(&m->sources);
	free(m->src);
	u64map_free(&m->tpids);
	free(m->shift_buf);
	model_stacks_free(m);
	memset(m, 0, sizeof(*m));
}

static uint64_t pid_key(const struct model *m, uint32_t pid)
{
	return (uint64_t)m->sources.cur << 32 | pid;
}

/* pid itself, unless an earlier capture's process has it: trace viewers key processes
 * by pid alone. */
static int trace_pid(struct model *m, uint32_t pid, uint32_t *tpid)
{
	int created;
	uint32_t t = pid;
	for (uint32_t next = MODEL_TPID_FIRST + (uint32_t)m->tpids.len;; t = next++) {
		uint64_t *v = u64map_upsert(&m->tpids, t, &created);
		if (!v)
			return -1;
		if (created)
			break;
	}
	*tpid = t;
	return 0;
}

static int64_t new_image(struct model *m, uint32_t pid)
{
	struct image *im;
	uint64_t *slot;
	int created;
	uint32_t tpid = 0;

	if (m->nimg >= UINT32_MAX || VEC_RESERVE(m->img, m->img_cap, m->nimg + 1))
		return -1;
	slot = u64map_upsert(&m->pid_image, pid_key(m, pid), &created);
	if (!slot)
		return -1;
	if (created ? trace_pid(m, pid, &tpid) : (tpid = m->img[*slot].tpid, 0))
		return -1;
	im = &m->img[m->nimg];
	memset(im, 0, sizeof(*im));
	im->pid = pid;
	im->tpid = tpid;
	im->source = m->sources.cur;
	im->command = im->label = im->launcher = im->job = im->host = STR_NONE;
	im->rank = im->local_rank = im->world_size = -1;
	im->status = INT32_MIN;
	memset(im->cat, 0xff, sizeof(im->cat));
	im->gpu = im->gpu_cupti = (struct mem_image *)model_no_gpu;
	im->gpu_cat = -1;
	im->mxnet_cat = -1;
	im->pid_order = created ? (uint32_t)m->pid_image.len - 1 : m->img[*slot].pid_order;
	*slot = m->nimg;
	return (int64_t)m->nimg++;
}

int64_t model_image_of(struct model *m, uint32_t pid)
{
	uint64_t *v = u64map_find(&m->pid_image, pid_key(m, pid));

	return v ? (int64_t)*v : new_image(m, pid);
}

static uint64_t exec_key(uint32_t pid_order, uint32_t exec_seq)
{
	return (uint64_t)pid_order << 32 | exec_seq;
}

const uint64_t *model_exec_find(const struct model *m, uint32_t pid, uint32_t exec_seq)
{
	const uint64_t *cur = u64map_find(&m->pid_image, pid_key(m, pid));
	return cur ? u64map_find(&m->pid_exec, exec_key(m->img[*cur].pid_order, exec_seq)) : NULL;
}

int64_t model_thread_of(struct model *m, uint32_t image, uint32_t tid)
{
	uint64_t *slot;
	struct thread *t;
	int created;

	slot = u64map_upsert(&m->thread_ix, (uint64_t)image << 32 | tid, &created);
	if (!slot)
		return -1;
	if (!created)
		return (int64_t)*slot;
	if (VEC_RESERVE(m->thr, m->thr_cap, m->nthr + 1)) {
		u64map_remove(&m->thread_ix, (uint64_t)image << 32 | tid, NULL);
		return -1;
	}
	t = &m->thr[m->nthr];
	memset(t, 0, sizeof(*t));
	t->image = image;
	t->tid = tid;
	t->name = STR_NONE;
	*slot = m->nthr;
	return (int64_t)m->nthr++;
}

uint32_t model_name(struct model *m, uint32_t image, uint32_t id)
{
	uint64_t key = (uint64_t)image << 32 | id;
	size_t c = (id * 2654435761u ^ image) & 255;
	if (m->name_cache[c].key == key + 1)
		return m->name_cache[c].gid;
	uint64_t *v = u64map_find(&m->names, key);
	char buf[32];
	uint32_t gid;

	if (v) {
		m->name_cache[c].key = key + 1;
		m->name_cache[c].gid = (uint32_t)*v;
		return (uint32_t)*v;
	}
	/* Not remembered: a later CAP_STRING for this id still takes effect. */
	snprintf(buf, sizeof(buf), "<unknown:%u>", id);
	return strtab_intern_str(&m->str, buf, &gid) ? STR_NONE : gid;
}

uint32_t model_category(struct model *m, uint32_t image, unsigned cat)
{
	struct image *im = &m->img[image];
	char buf[32];

	if (im->cat[cat & 255] != STR_NONE)
		return im->cat[cat & 255];
	const char *fixed = prof_fixed_category_name(cat);
	if (!fixed) {
		snprintf(buf, sizeof(buf), "<category:%u>", cat);
		fixed = buf;
	}
	if (strtab_intern_str(&m->str, fixed, &im->cat[cat & 255]))
		return STR_NONE;
	return im->cat[cat & 255];
}

static int key_is(const char *k, size_t klen, const char *want)
{
	return klen == strlen(want) && !memcmp(k, want, klen);
}


static void known_fact(struct model *m, const char *k, size_t klen, const char *v, size_t vlen,
		       int end)
{
	if (!end && key_is(k, klen, "start_ns")) {
		m->start_ns = model_decimal(v, vlen);
		m->have_start = 1;
	} else if (end && key_is(k, klen, "end_ns")) {
		uint64_t e = model_decimal(v, vlen);
		if (!m->have_end || e > m->end_ns) /* a later capture's may have come first */
			m->end_ns = e;
		m->have_end = 1;
	} else if (end && key_is(k, klen, "events")) {
		m->end_events = model_decimal(v, vlen);
	} else if (end && key_is(k, klen, "lost")) {
		m->end_lost = model_decimal(v, vlen);
	}
}

/* "key=value\n" lines into gid pairs; the known keys also into fields. */
static int parse_facts(struct model *m, const char *p, uint32_t len, int end)
{
	const char *q = p + len;

	while (p < q) {
		const char *nl = memchr(p, '\n', (size_t)(q - p)), *eq;
		struct session_kv kv;
		size_t n = nl ? (size_t)(nl - p) : (size_t)(q - p);
		size_t *cnt = end ? &m->nsession_end : &m->nsession;
		size_t *cap = end ? &m->session_end_cap : &m->session_cap;
		struct session_kv **arr = end ? &m->session_end : &m->session;

		eq = memchr(p, '=', n);
		if (eq) {
			if (strtab_intern(&m->str, p, (size_t)(eq - p), &kv.key) ||
			    strtab_intern(&m->str, eq + 1, n - (size_t)(eq - p) - 1, &kv.val) ||
			    vec_grow(arr, cap, *cnt + 1, sizeof(kv)))
				return -1;
			(*arr)[(*cnt)++] = kv;
			known_fact(m, p, (size_t)(eq - p), eq + 1, n - (size_t)(eq - p) - 1, end);
		}
		p += n + 1;
	}
	return 0;
}

/* Builds "arg0 arg1 ..." and the short label "basename(arg0) arg1 ...". */
static int command_line(struct model *m, struct image *im, const char *p, size_t n)
{
	char *buf, *base, *s;
	size_t i, lab;
	int rc;

	while (n > 0 && p[n - 1] == '\0')
		n--;
	buf = malloc(n + 4);
	if (!buf)
		return -1;
	for (i = 0; i < n; i++)
		buf[i] = p[i] ? p[i] : ' ';
	buf[n] = '\0';
	rc = strtab_intern(&m->str, buf, n, &im->command);
	/* basename of arg0 only: "/usr/bin/python3 a/b.py" -> "python3 a/b.py" */
	s = memchr(p, '\0', n);
	base = buf;
	for (i = 0; i < (s ? (size_t)(s - p) : n); i++)
		if (buf[i] == '/')
			base = buf + i + 1;
	lab = strlen(base);
	if (lab > 60) {
		lab = 57;
		while (lab > 0 && ((unsigned char)base[lab] & 0xc0) == 0x80)
			lab--; /* never cut a UTF-8 sequence */
		memcpy(base + lab, "...", 3);
		lab += 3;
	}
	if (!rc)
		rc = strtab_intern(&m->str, base, lab, &im->label);
	free(buf);
	return rc;
}

static int process(struct model *m, const unsigned char *p, uint32_t len)
{
	struct cap_process cp;
	int64_t ix;

	memcpy(&cp, p, sizeof(cp));
	/* A later part's repeat of an image read already: nothing new */
	if (cp.flags & CAP_PROCESS_CONTINUED) {
		const uint64_t *seq = model_exec_find(m, cp.pid, cp.exec_seq);
		if (seq && !m->img[*seq - 1].ended && model_image_of(m, cp.pid) == (int64_t)*seq - 1)
			return 0;
	}
	/* Otherwise a new image: for a pid seen before this is an exec, whose names replace
	 * the old image's (the collector writes all of the old image's records first). */
	ix = new_image(m, cp.pid);
	if (ix < 0)
		return -1;
	m->img[ix].ppid = cp.ppid;
	m->img[ix].exec_seq = cp.exec_seq;
	m->img[ix].start_ns = model_source_time(m, cp.start_ns);
	m->img[ix].announced = 1;
	m->img[ix].folded = m->fold && m->nannounced < m->fold->n && m->fold->folded[m->nannounced];
	m->nannounced++;
	int created;
	uint64_t *seq = u64map_upsert(&m->pid_exec, exec_key(m->img[ix].pid_order, cp.exec_seq),
				      &created);
	if (!seq)
		return -1;
	*seq = (uint64_t)ix + 1;
	return command_line(m, &m->img[ix], (const char *)p + sizeof(cp), len - sizeof(cp));
}

static int process_end(struct model *m, const unsigned char *p, uint32_t len)
{
	struct cap_process_end pe = {0};
	int64_t ix;

	memcpy(&pe, p, len < sizeof(pe) ? len : sizeof(pe));
	ix = model_image_of(m, pe.pid);
	if (ix < 0)
		return -1;
	m->img[ix].ended = 1;
	m->img[ix].status = pe.status;
	m->img[ix].end_ns = model_source_time(m, pe.end_ns);
	m->img[ix].lost_reported = pe.lost;
	m->img[ix].cpu_ns = pe.cpu_ns;
	return 0;
}

int model_thread_record_of(struct model *m, int64_t im, const void *payload, uint32_t len)
{
	const unsigned char *p = payload;
	int64_t t;

	if (im >= 0 && m->img[im].folded)
		return 0; /* no thread row for a folded launcher */
	struct cap_thread ct;
	memcpy(&ct, p, sizeof(ct));
	if (im < 0 || (t = model_thread_of(m, (uint32_t)im, ct.tid)) < 0)
		return -1;
	return strtab_intern(&m->str, p + sizeof(ct), len - sizeof(ct), &m->thr[t].name);
}

static int thread(struct model *m, const unsigned char *p, uint32_t len)
{
	struct cap_thread ct;
	memcpy(&ct, p, sizeof(ct));
	return model_thread_record_of(m, model_image_of(m, ct.pid), p, len);
}

static int string(struct model *m, const unsigned char *p, uint32_t len, int category)
{
	struct cap_string cs;
	uint32_t gid;
	uint64_t *slot;
	int64_t im;
	int created;

	memcpy(&cs, p, sizeof(cs));
	im = model_image_of(m, cs.pid);
	/* an id names one string for good (an offset in an append-only area): a later
	 * part's repeat is not read again, nor believed if the program has since written
	 * over its strings */
	if (!category && im >= 0 && u64map_find(&m->names, (uint64_t)im << 32 | cs.id))
		return 0;
	char *readable = category ? 0 : demangle_name((const char *)p + sizeof(cs),
							len - sizeof(cs));
	char *op = readable ? aten_display_name(readable) : 0;
	if (op) {
		free(readable);
		readable = op;
	}
	int bad = im < 0 || (readable ? strtab_intern_str(&m->str, readable, &gid)
				      : strtab_intern(&m->str, p + sizeof(cs), len - sizeof(cs), &gid));
	free(readable);
	if (bad)
		return -1;
	if (category) {
		if (cs.id < 256) {
			m->img[im].cat[cs.id] = gid;
			if (len - sizeof(cs) == strlen(PROF_CATNAME_GPU_MEMORY) &&
			    !memcmp(p + sizeof(cs), PROF_CATNAME_GPU_MEMORY, len - sizeof(cs)))
				m->img[im].gpu_cat = (int)cs.id;
			if (len - sizeof(cs) == strlen(PROF_CATNAME_MXNET_MEMORY) &&
			    !memcmp(p + sizeof(cs), PROF_CATNAME_MXNET_MEMORY, len - sizeof(cs)))
				m->img[im].mxnet_cat = (int)cs.id;
		}
		return 0;
	}
	slot = u64map_upsert(&m->names, (uint64_t)im << 32 | cs.id, &created);
	if (!slot)
		return -1;
	*slot = gid;
	return 0;
}

/* "part=N\n...": which parts were read */
static int part_record(struct model *m, const char *p, uint32_t len)
{
	if (len < 6 || memcmp(p, "part=", 5))
		return 0;
	uint32_t n = (uint32_t)model_decimal(p + 5, len - 5);
	if (!m->parts++)
		m->part_first = n;
	m->part_last = n;
	return 0;
}

int model_record(struct model *m, uint32_t type, const void *p, uint32_t len)
{
	switch (type) {
	case CAP_SESSION: {
		/* each part of a capture in parts repeats it; a later capture's is its own */
		int fresh = model_source_session(m, p, len);
		if (fresh <= 0 || m->sources.cur > 0)
			return fresh < 0 ? -1 : 0;
		m->have_session = 1;
		return parse_facts(m, p, len, 0);
	}
	case CAP_PART:
		return part_record(m, p, len);
	case CAP_SESSION_END:
		if (m->sources.cur > 0) {
			model_source_end(m, p, len);
			return 0;
		}
		m->have_session_end = 1;
		return parse_facts(m, p, len, 1);
	case CAP_PROCESS:
		return process(m, p, len);
	case CAP_PROCESS_END:
		return process_end(m, p, len);
	case CAP_THREAD:
		return thread(m, p, len);
	case CAP_STRING:
		return string(m, p, len, 0);
	case CAP_CATEGORY:
		return string(m, p, len, 1);
	case CAP_EVENTS:
		return model_events(m, p, len);
	case CAP_STACK:
		return model_stack_record(m, p, len);
	case CAP_MODULE:
		return model_module_record(m, p, len);
	case CAP_FRAME_NAME:
		return model_frame_name_record(m, p, len);
	case CAP_JOB:
		return model_job_record(m, p, len);
	case CAP_DRAINED:
		return model_drained(m, p, len);
	default:
		return 0; /* a newer record type: skipped */
	}
}

static int visit(void *ctx, uint32_t type, const void *payload, uint32_t len)
{
	return model_record(ctx, type, payload, len) ? VISIT_OOM : 0;
}

/* One source of device memory per process, never both (where both see a block they see
 * the same one): the wrapped CUDA calls, which know the calling thread and nest in its
 * events, unless CUPTI's memory records saw more allocations. They do where allocations
 * reach the driver some way libprof does not wrap: on a real GPU, cuBLAS's own
 * cuMemAlloc_v2 through a driver table fetched while PROFILER_CUDA=0 left the getters
 * unwrapped (7 wrapped cudaMalloc against 17 records; docs/GPU.md). A partial count
 * would be a wrong peak, so the complete source wins and the outputs say so. */
static void pick_gpu_source(struct model *m)
{
	for (size_t i = 0; i < m->nimg; i++) {
		struct image *im = &m->img[i];
		uint64_t wrapped = 0, recorded = 0;
		/* MXNet's storage domains are neither: they stay whichever is kept */
		for (size_t d = 0; d < MODEL_MXNET_CPU; d++) {
			wrapped += im->gpu[d].allocs + im->gpu[d].frees;
			recorded += im->gpu_cupti[d].allocs + im->gpu_cupti[d].frees;
		}
		int use_cupti = recorded > wrapped;
		if (use_cupti) {
			for (size_t d = MODEL_MXNET_CPU; im->gpu != model_no_gpu && d < MODEL_DEVICES;
			     d++) {
				struct mem_image swap = im->gpu_cupti[d];
				im->gpu_cupti[d] = im->gpu[d];
				im->gpu[d] = swap;
			}
			model_free_gpu(im->gpu);
			im->gpu = im->gpu_cupti;
		} else {
			model_free_gpu(im->gpu_cupti);
		}
		im->gpu_cupti = (struct mem_image *)model_no_gpu;
		im->gpu_from_cupti = use_cupti;
		im->gpu_wrapped_calls = use_cupti ? wrapped : 0;
	}
}

const char *model_device_name(int d, char *buf, size_t len)
{
	if (d == MODEL_PINNED)
		snprintf(buf, len, "cpu_pinned/0");
	else if (d == MODEL_MXNET_CPU)
		snprintf(buf, len, "mxnet/cpu");
	else if (d == MODEL_MXNET_GPU)
		snprintf(buf, len, "mxnet/gpu");
	else
		snprintf(buf, len, "gpu/%d", d);
	return buf;
}

/* The live-heap analysis of every domain, once every operation was read. */
static int finish_memory(struct model *m)
{
	for (size_t i = 0; i < m->nimg; i++) {
		struct image *im = &m->img[i];
		if (memtrack_finish(&im->mem))
			return -1;
		for (size_t d = 0; d < MODEL_DEVICES; d++) {
			if (im->gpu != model_no_gpu && memtrack_finish(&im->gpu[d]))
				return -1;
			if (im->gpu_cupti != model_no_gpu && memtrack_finish(&im->gpu_cupti[d]))
				return -1;
		}
	}
	return 0;
}

/* The flight recorder's window, from the last part of a capture in parts: its session's
 * flight_ns before its end (the session end, else its last event). */
struct flight_scan {
	uint64_t flight_ns, end_ns, last_t;
	struct cap_sources sessions; /* the sessions seen: one, or several captures */
};

/* The first record of a part: its session, counted in f->sessions. */
static int session_visit(void *ctx, uint32_t type, const void *p, uint32_t len)
{
	struct flight_scan *f = ctx;
	if (type == CAP_SESSION && cap_sources_session(&f->sessions, p, len) < 0)
		return VISIT_OOM;
	return 1; /* done */
}


static int flight_visit(void *ctx, uint32_t type, const void *p, uint32_t len)
{
	struct flight_scan *f = ctx;
	if (type == CAP_SESSION) {
		f->flight_ns = model_text_number(p, len, "flight_ns");
		if (!f->flight_ns)
			return 1; /* not a flight recorder's: done */
	} else if (type == CAP_SESSION_END) {
		f->end_ns = model_text_number(p, len, "end_ns");
	} else if (type == CAP_PART) {
		/* an idle program: the part's start is later than its last event */
		uint64_t start = model_text_number(p, len, "start_ns");
		if (start > f->last_t)
			f->last_t = start;
	} else if (type == CAP_EVENTS) {
		struct cap_events ce;
		memcpy(&ce, p, sizeof ce);
		const struct prof_event *ev = (const void *)((const char *)p + sizeof ce);
		for (uint32_t i = 0; i < ce.count; i++)
			if (ev[i].t1 > f->last_t && ev[i].type != PROF_EV_LOST)
				f->last_t = ev[i].t1;
	}
	return 0;
}

static void flight_window(struct model *m, const char *path)
{
	char **parts, err[512];
	size_t n;
	if (m->keep_from || !cap_is_parts(path) || cap_parts(path, &parts, &n))
		return;
	struct flight_scan f;
	memset(&f, 0, sizeof f);
	cap_sources_init(&f.sessions);
	/* several captures read as one (a list, a directory of ranks' captures): the window
	 * of one would cut the others, on another clock; each keeps what its parts hold */
	if (n > 1) {
		cap_read_file(parts[0], session_visit, &f, err, sizeof err);
		cap_read_file(parts[n - 1], session_visit, &f, err, sizeof err);
	}
	/* the last part still there (a flight recorder drops old ones meanwhile) */
	for (size_t i = n; f.sessions.n < 2 && i-- > 0;) {
		int rc = cap_read_file(parts[i], flight_visit, &f, err, sizeof err);
		/* not a flight recorder's, or its end found */
		if (rc != CAP_READ_UNUSABLE && (!f.flight_ns || f.end_ns || f.last_t))
			break;
	}
	cap_parts_free(parts, n);
	int several = f.sessions.n > 1;
	cap_sources_free(&f.sessions);
	if (several)
		return;
	uint64_t end = f.end_ns ? f.end_ns : f.last_t;
	if (f.flight_ns && end > f.flight_ns)
		m->keep_from = end - f.flight_ns;
}

int model_read(struct model *m, const char *path, char *err, size_t errlen)
{
	flight_window(m, path);
	return model_read_finish(m, cap_read(path, visit, m, err, errlen), path, err, errlen);
}

/* Gaps in time order (then pid, tid): the tables name the first, and list them all. */
static int by_gap_time(const void *a, const void *b)
{
	const struct lost_gap *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->t1 != y->t1)
		return x->t1 < y->t1 ? -1 : 1;
	return (x->count > y->count) - (x->count < y->count);
}

int model_read_finish(struct model *m, int rc, const char *path, char *err, size_t errlen)
{
	if (m->ngaps > 1)
		qsort(m->gaps, m->ngaps, sizeof *m->gaps, by_gap_time);
	if (rc != VISIT_OOM && finish_memory(m))
		rc = VISIT_OOM;
	if (rc == VISIT_OOM) {
		snprintf(err, errlen, "%s: out of memory while reading the capture", path);
		return CAP_READ_UNUSABLE;
	}
	pick_gpu_source(m);
	if (model_modules_index(m)) {
		snprintf(err, errlen, "%s: out of memory while reading the capture", path);
		return CAP_READ_UNUSABLE;
	}
	return rc;
}

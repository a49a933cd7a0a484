/* The Chrome trace in the PyTorch profiler's (Kineto's) flavor, for the tools made for
 * torch.profiler's traces (TensorBoard's PyTorch profiler plugin, Holistic Trace
 * Analysis): Kineto's categories (cpu_op, user_annotation, cuda_runtime, kernel,
 * gpu_memcpy, gpu_memset), allocator calls as "[memory]" instants with PyTorch's fields,
 * a ProfilerStep#N slice per step libprof saw, GPU work on pid = device and tid = stream,
 * launch arrows as Kineto's ac2g flows, and the head fields those tools read
 * (schemaVersion, deviceProperties, distributedInfo). docs/FORMATS.md, "Kineto". */
#include <string.h>

#include "formats/export/chrome.h"

static int is(const char *quoted, size_t len, const char *word)
{
	size_t n = strlen(word);
	return len == n + 2 && !memcmp(quoted + 1, word, n);
}

const char *kineto_cat(const char *cat, size_t clen, const char *name, size_t nlen)
{
	if (is(cat, clen, PROF_CATNAME_OPERATOR))
		return "\"cpu_op\"";
	if (is(cat, clen, PROF_CATNAME_USER) || is(cat, clen, PROF_CATNAME_COLLECTIVE) ||
	    is(cat, clen, PROF_CATNAME_NVTX))
		return "\"user_annotation\"";
	if (is(cat, clen, PROF_CATNAME_CUDA_API)) /* cudaX: the runtime; cuX: the driver */
		return nlen > 5 && !memcmp(name, "\"cuda", 5) ? "\"cuda_runtime\""
							       : "\"cuda_driver\"";
	if (is(cat, clen, PROF_CATNAME_CUDA_KERNEL))
		return "\"kernel\"";
	if (is(cat, clen, PROF_CATNAME_CUDA_MEMCPY))
		return "\"gpu_memcpy\"";
	if (is(cat, clen, PROF_CATNAME_CUDA_MEMSET))
		return "\"gpu_memset\"";
	return NULL;
}

/* ,"pid":DEVICE,"tid":STREAM of GPU work, into out (64 bytes): its length. */
size_t kineto_gpu_row(char *out, uint64_t where)
{
	size_t k = 0;
	memcpy(out, ",\"pid\":", 7);
	k = 7 + fmt_u64(out + 7, prof_gpu_device(where));
	memcpy(out + k, ",\"tid\":", 7);
	k += 7;
	return k + fmt_u64(out + k, prof_gpu_stream(where));
}

int kineto_note_gpu_row(struct chrome *c, uint64_t where)
{
	int created;
	uint64_t key = (uint64_t)prof_gpu_device(where) << 32 | prof_gpu_stream(where);
	return u64map_upsert(&c->kineto.gpu_rows, key, &created) ? 0 : -1;
}

/* Whether a detail string is a list of shapes Kineto writes as JSON ("[[128, 500], []]"),
 * so it can be given as such rather than as a string. */
int kineto_dims(const char *s, size_t n)
{
	if (n < 2 || s[0] != '[' || s[n - 1] != ']')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!strchr("[], -0123456789", s[i]))
			return 0;
	return 1;
}

void kineto_plan(struct chrome *c, struct model *m, uint32_t image, const struct prof_event *e)
{
	if ((e->flags & PROF_EVF_GPU) && prof_gpu_device(e->c) < MODEL_GPUS)
		c->kineto.devices |= 1ull << prof_gpu_device(e->c);
	if (c->kineto.backend[0] || e->type != PROF_EV_COMPLETE || e->cat < PROF_CAT_FIRST_DYNAMIC)
		return;
	size_t len;
	const char *cat = model_str(m, model_category(m, image, e->cat), &len);
	if (len != strlen(PROF_CATNAME_COLLECTIVE) || memcmp(cat, PROF_CATNAME_COLLECTIVE, len))
		return;
	const char *name = model_str(m, model_name(m, image, e->name), &len);
	static const char *const libs[] = {"nccl", "gloo", "mpi", "ucc"};
	for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) {
		size_t n = strlen(libs[i]);
		if (len > n && !memcmp(name, libs[i], n) && (name[n] == ':' || name[n] == '_')) {
			memcpy(c->kineto.backend, libs[i], n + 1);
			return;
		}
	}
	if (len > 4 && !memcmp(name, "MPI_", 4))
		memcpy(c->kineto.backend, "mpi", 4);
}

/* A thread's place in the step spans: when its first event came, and its last step. */
static uint64_t *span_start(struct chrome *c, uint32_t image, uint32_t thread, uint64_t t)
{
	int created;
	uint64_t *v = u64map_upsert(&c->kineto.step_start, (uint64_t)image << 32 | thread,
				    &created);
	if (v && created)
		*v = t;
	return v;
}

int kineto_note_thread(struct chrome *c, uint32_t image, uint32_t thread, uint64_t t0)
{
	return span_start(c, image, thread, t0) ? 0 : -1;
}

int kineto_step(struct chrome *c, const char *pidtid, size_t pidtid_len, uint32_t image,
		uint32_t thread, const struct prof_event *e)
{
	uint64_t *start = span_start(c, image, thread, e->t0);
	if (!start)
		return -1;
	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"X\",\"name\":\"ProfilerStep#");
	jw_u64(&c->w, e->a);
	jw_lit(&c->w, "\",\"cat\":\"user_annotation\"");
	jw_raw(&c->w, pidtid, pidtid_len);
	jw_lit(&c->w, ",\"ts\":");
	jw_us(&c->w, (int64_t)(*start - c->origin));
	jw_lit(&c->w, ",\"dur\":");
	jw_us(&c->w, (int64_t)(e->t0 > *start ? e->t0 - *start : 0));
	jw_lit(&c->w, "}");
	*start = e->t0;
	c->written++;
	return 0;
}

int kineto_memory(struct chrome *c, const char *pidtid, size_t pidtid_len, uint32_t image,
		  const struct prof_event *e, int device)
{
	int frees = (e->flags & PROF_EVF_FREES) && e->c, allocs = (e->flags & PROF_EVF_ALLOCS) &&
								  e->a;
	for (int k = 0; k < 2; k++) {
		/* realloc: its release, then its allocation */
		if (!(k ? allocs : frees))
			continue;
		int64_t bytes = k ? (int64_t)(e->b > INT64_MAX ? INT64_MAX : e->b) : 0;
		uint64_t at = k ? e->t1 : e->t0;
		if (!k) { /* the size of the block released, when its allocation was seen */
			uint64_t size;
			if (u64map_remove(&c->kineto.blocks, (uint64_t)image << 47 ^ e->c, &size))
				bytes = -(int64_t)size;
		} else {
			int created;
			uint64_t *v = u64map_upsert(&c->kineto.blocks, (uint64_t)image << 47 ^ e->a,
						    &created);
			if (!v)
				return -1;
			*v = (uint64_t)bytes;
		}
		uint64_t live = heap_live_at(&c->heap, c->pm->img[image].tpid, device, at);
		chrome_sep(c);
		jw_lit(&c->w, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"[memory]\","
			      "\"cat\":\"cpu_instant_event\"");
		jw_raw(&c->w, pidtid, pidtid_len);
		jw_lit(&c->w, ",\"ts\":");
		jw_us(&c->w, (int64_t)(at - c->origin));
		jw_lit(&c->w, ",\"args\":{\"Device Type\":");
		jw_u64(&c->w, device < 0 ? 0 : 1);
		jw_lit(&c->w, ",\"Device Id\":");
		jw_i64(&c->w, device);
		jw_lit(&c->w, ",\"Addr\":");
		jw_u64(&c->w, k ? e->a : e->c);
		jw_lit(&c->w, ",\"Bytes\":");
		jw_i64(&c->w, bytes);
		jw_lit(&c->w, ",\"Total Allocated\":");
		jw_u64(&c->w, live);
		jw_lit(&c->w, ",\"Total Reserved\":");
		jw_u64(&c->w, live);
		jw_lit(&c->w, "}}");
		c->written++;
	}
	return 0;
}

/* The first image with a rank: the capture's place in its job. */
static const struct image *ranked(const struct model *m)
{
	for (size_t i = 0; i < m->nimg; i++)
		if (m->img[i].rank >= 0 && !m->img[i].folded)
			return &m->img[i];
	return NULL;
}

void kineto_head(struct chrome *c)
{
	jw_lit(&c->w, "{\"schemaVersion\":1,\n\"deviceProperties\":[");
	/* what CUDA would say of each device is not recorded: its id and a name */
	for (uint64_t d = 0, n = 0; d < MODEL_GPUS; d++)
		if (c->kineto.devices >> d & 1) {
			jw_text(&c->w, n++ ? ",{\"id\":" : "{\"id\":");
			jw_u64(&c->w, d);
			jw_lit(&c->w, ",\"name\":\"GPU ");
			jw_u64(&c->w, d);
			jw_lit(&c->w, "\"}");
		}
	jw_lit(&c->w, "],\n");
	const struct image *r = ranked(c->pm);
	if (r) {
		jw_lit(&c->w, "\"distributedInfo\":{\"backend\":");
		jw_cstr(&c->w, c->kineto.backend[0] ? c->kineto.backend : "gloo");
		jw_lit(&c->w, ",\"rank\":");
		jw_u64(&c->w, (uint64_t)r->rank);
		jw_lit(&c->w, ",\"world_size\":");
		jw_u64(&c->w, r->world_size > 0 ? (uint64_t)r->world_size : 1);
		jw_lit(&c->w, "},\n");
	}
	jw_lit(&c->w, "\"traceEvents\":[");
}

/* Rows of GPU work, named as Kineto names them. */
static void gpu_row_names(void *ctx, uint64_t key, uint64_t *val)
{
	struct chrome *c = ctx;
	(void)val;
	uint64_t device = key >> 32, stream = key & 0xffffffffu;
	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
	jw_u64(&c->w, device);
	jw_lit(&c->w, ",\"args\":{\"name\":\"GPU ");
	jw_u64(&c->w, device);
	jw_lit(&c->w, "\"}}");
	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
	jw_u64(&c->w, device);
	jw_lit(&c->w, ",\"tid\":");
	jw_u64(&c->w, stream);
	jw_lit(&c->w, ",\"args\":{\"name\":\"stream ");
	jw_u64(&c->w, stream);
	jw_lit(&c->w, "\"}}");
}

void kineto_events_end(struct chrome *c)
{
	u64map_each(&c->kineto.gpu_rows, gpu_row_names, c);
	/* the span the tools take for the profiled one */
	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"X\",\"name\":\"PyTorch Profiler (0)\",\"cat\":\"Trace\","
		      "\"pid\":\"Spans\",\"tid\":\"PyTorch Profiler\",\"ts\":0.000,\"dur\":");
	uint64_t end = c->pm->last_t > c->origin ? c->pm->last_t - c->origin : 0;
	jw_us(&c->w, (int64_t)end);
	jw_lit(&c->w, "}");
}

void kineto_tail(struct chrome *c)
{
	jw_lit(&c->w, ",\n\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":");
	jw_u64(&c->w, c->origin);
	jw_lit(&c->w, ",\"traceName\":");
	jw_cstr(&c->w, model_command(c->pm));
}

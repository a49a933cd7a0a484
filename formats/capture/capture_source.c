/* Sources of a multi-capture read (capture_source.h). */
#include "formats/capture/capture_source.h"

void cap_sources_init(struct cap_sources *s)
{
	u64map_init(&s->by_text);
	s->n = s->cur = 0;
}

void cap_sources_free(struct cap_sources *s)
{
	u64map_free(&s->by_text);
	s->n = s->cur = 0;
}

/* FNV-1a, finished by u64_hash: 64 bits make two sessions' texts meeting unlikely
 * beyond concern (they differ in start time and anchors anyway). */
static uint64_t text_hash(const unsigned char *p, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return u64_hash(h);
}

int cap_sources_session(struct cap_sources *s, const void *text, uint32_t len)
{
	int created;
	uint64_t *v = u64map_upsert(&s->by_text, text_hash(text, len), &created);
	if (!v)
		return -1;
	if (created)
		*v = ++s->n;
	s->cur = (uint32_t)(*v - 1);
	return created;
}

/* Functions shared by the files that build a struct model. */
#ifndef PROF_FORMATS_MODEL_INTERNAL_H
#define PROF_FORMATS_MODEL_INTERNAL_H

#include "formats/model/model.h"

/* The current image of pid, made up (unannounced) when none was seen; -1 when out of
 * memory. */
int64_t model_image_of(struct model *m, uint32_t pid);
/* The thread (image, tid), created when new; -1 when out of memory. */
int64_t model_thread_of(struct model *m, uint32_t image, uint32_t tid);
/* CAP_STACK and CAP_MODULE records (model_stacks.c). 0 or -1 (out of memory). */
int model_stack_record(struct model *m, const void *payload, uint32_t len);
int model_module_record(struct model *m, const void *payload, uint32_t len);
int model_frame_name_record(struct model *m, const void *payload, uint32_t len);
int model_job_record(struct model *m, const void *payload, uint32_t len); /* model_job.c */
/* The stack index + 1 of an image's stack id, or 0 when unknown. */
uint32_t model_stack_index(const struct model *m, uint32_t image, uint32_t id);
void model_stacks_free(struct model *m);
/* Sorts the modules for model_module_of, once every record is read. 0 or -1. */
int model_modules_index(struct model *m);
/* Frees an image's device memory array (nothing for model_no_gpu). */
void model_free_gpu(struct mem_image *gpu);
/* Bookkeeping for one CAP_EVENTS payload, then the on_events hook. */
int model_events(struct model *m, const void *payload, uint32_t len);
/* A CAP_DRAINED record: the allocator calls of this capture's images stamped before it,
 * applied to their live heaps (memtrack_drained). */
int model_drained(struct model *m, const void *payload, uint32_t len);
/* The same for image im, whatever image its pid has now (model_live.c gives an image's
 * records later, when the pid may have exec'd or been reused). */
int model_events_of(struct model *m, int64_t im, const void *payload, uint32_t len);
/* A CAP_THREAD record of image im. */
int model_thread_record_of(struct model *m, int64_t im, const void *payload, uint32_t len);
/* One record of any type (model_read's visitor). 0 or -1 (out of memory). */
int model_record(struct model *m, uint32_t type, const void *payload, uint32_t len);
/* What model_read does once cap_read returned rc: the memory analysis finished, the
 * GPU memory's source picked, the modules indexed. model_read's result. */
int model_read_finish(struct model *m, int rc, const char *path, char *err, size_t errlen);

/* A decimal number of at most n bytes (a value in a record's text: not NUL-terminated). */
uint64_t model_decimal(const char *v, size_t n);
/* The number key has in "key=value\n" text (a session's facts), 0 when it has none. */
uint64_t model_text_number(const char *p, uint32_t len, const char *key);
/* model_sources.c: at a CAP_SESSION record, its source made current: 1 when it is new,
 * 0 when a part's repeat, -1 when out of memory. */
int model_source_session(struct model *m, const char *p, uint32_t len);
/* A later source's CAP_SESSION_END: its end, events and losses. */
void model_source_end(struct model *m, const char *p, uint32_t len);
/* What the current source's times are moved by; a time of it moved (0 stays 0). */
int64_t model_source_shift(const struct model *m);
uint64_t model_source_time(const struct model *m, uint64_t t);
/* The latest image + 1 of (current source, pid, exec_seq), or NULL. */
const uint64_t *model_exec_find(const struct model *m, uint32_t pid, uint32_t exec_seq);

#endif

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

#endif

/* TensorFlow's eager operators named after the op (see tf.c). */
#ifndef PROF_PRELOAD_TF_H
#define PROF_PRELOAD_TF_H

#include <stdint.h>

/* A prof_trace_hook for TFE_Execute: the op's name id + 1, or 0. */
uint32_t prof_tf_execute_hook(const uint64_t *args);

#endif

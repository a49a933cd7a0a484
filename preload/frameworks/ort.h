/* ONNX Runtime's C API: its one export, OrtGetApiBase, handed back as a wrapper whose
 * GetApi returns a copy of the OrtApi table with traced entries (category ORT_API). */
#ifndef PROF_PRELOAD_ORT_H
#define PROF_PRELOAD_ORT_H

/* The wrapper that stands for OrtGetApiBase; it calls real (the function or its stub).
 * NULL when a different OrtGetApiBase was wrapped already. */
void *prof_ort_wrap_get_api_base(void *real);

#endif

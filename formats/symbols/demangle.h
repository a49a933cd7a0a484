#ifndef PROF_FORMATS_DEMANGLE_H
#define PROF_FORMATS_DEMANGLE_H
#include <stddef.h>
/* The demangled form of a mangled C++ name (malloc'd), or NULL when it is not one. */
char *demangle_name(const char *name, size_t n);
#endif

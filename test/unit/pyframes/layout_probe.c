/* Prints the CPython struct offsets preload/stacks/pyframes.c hard-codes, taken from the
 * headers of the Python it is compiled against (Py_BUILD_CORE for the internal ones):
 * run.sh compares this with the table compiled into pyframes.c. Not part of the build:
 * libprof needs no Python headers.
 *   cc -DPy_BUILD_CORE $(python3.X-config --includes) -I<incdir>/internal layout_probe.c */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"

static int bit_of(int compact)
{
	PyASCIIObject s;
	memset(&s, 0, sizeof s);
	if (compact)
		s.state.compact = 1;
	else
		s.state.ascii = 1;
	uint32_t w;
	memcpy(&w, (char *)&s + offsetof(PyASCIIObject, state), 4);
	return __builtin_ctz(w);
}

int main(void)
{
	printf("minor=%d", PY_MINOR_VERSION);
#if PY_MINOR_VERSION <= 12
	printf(" ts_cframe=%zu cf_current_frame=%zu", offsetof(PyThreadState, cframe),
	       offsetof(_PyCFrame, current_frame));
	printf(" fr_code=%zu fr_instr=%zu", offsetof(_PyInterpreterFrame, f_code),
	       offsetof(_PyInterpreterFrame, prev_instr));
#else
	printf(" ts_current_frame=%zu", offsetof(PyThreadState, current_frame));
	printf(" fr_code=%zu fr_instr=%zu", offsetof(_PyInterpreterFrame, f_executable),
	       offsetof(_PyInterpreterFrame, instr_ptr));
#endif
	printf(" fr_previous=%zu fr_owner=%zu", offsetof(_PyInterpreterFrame, previous),
	       offsetof(_PyInterpreterFrame, owner));
	printf(" ob_type=%zu co_size=%zu co_firstlineno=%zu co_firsttraceable=%zu",
	       offsetof(PyObject, ob_type), offsetof(PyVarObject, ob_size),
	       offsetof(PyCodeObject, co_firstlineno), offsetof(PyCodeObject, _co_firsttraceable));
	printf(" co_filename=%zu co_qualname=%zu co_code=%zu", offsetof(PyCodeObject, co_filename),
	       offsetof(PyCodeObject, co_qualname), offsetof(PyCodeObject, co_code_adaptive));
	printf(" str_length=%zu str_state=%zu str_data=%zu compact_bit=%d ascii_bit=%d",
	       offsetof(PyASCIIObject, length), offsetof(PyASCIIObject, state),
	       sizeof(PyASCIIObject), bit_of(1), bit_of(0));
	printf(" owner_cstack=%d owner_generator=%d\n",
#if PY_MINOR_VERSION >= 12
	       FRAME_OWNED_BY_CSTACK,
#else
	       -1,
#endif
	       FRAME_OWNED_BY_GENERATOR);
	return 0;
}

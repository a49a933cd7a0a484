/* Native code a Python program calls through ctypes.CDLL (the GIL given up around each
 * call), allocating before and after it calls back into Python: once through a ctypes
 * callback (its PyGILState_Ensure is _ctypes' own GOT entry, which libprof redirects),
 * once through CPython functions looked up with dlsym (calls libprof cannot see). Each
 * allocation comes from a function of its own, so that a stack names where it was made.
 * Built as a shared object by the stacks case python_frames_in_gil_releases; no Python
 * headers: the few CPython functions it calls are declared here. */
#include <dlfcn.h>
#include <stdlib.h>

static void keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

__attribute__((noinline)) void made_before_callback(void)
{
	keep(malloc(4001));
}

__attribute__((noinline)) void made_after_callback(void)
{
	keep(malloc(4002));
}

/* called from the Python callback, through ctypes.PyDLL (the GIL kept) */
__attribute__((noinline)) void made_in_callback(void)
{
	keep(malloc(4003));
}

void around_callback(int n, void (*callback)(void))
{
	for (int i = 0; i < n; i++)
		made_before_callback();
	callback();
	for (int i = 0; i < n; i++)
		made_after_callback();
}

/* callable: a Python object (ctypes.py_object) called with no arguments */
void around_unseen_callback(int n, void *callable)
{
	int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
	void (*release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
	void *(*call)(void *, void *) =
		(void *(*)(void *, void *))dlsym(RTLD_DEFAULT, "PyObject_CallObject");
	void (*decref)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef");
	for (int i = 0; i < n; i++)
		made_before_callback();
	if (ensure && release && call && decref) {
		int state = ensure();
		void *result = call(callable, 0);
		if (result)
			decref(result);
		release(state);
	}
	for (int i = 0; i < n; i++)
		made_after_callback();
}

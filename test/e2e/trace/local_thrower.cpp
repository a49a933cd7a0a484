// A C++ library that a C program loads RTLD_LOCAL (as Python loads extensions): its
// libstdc++ and libgcc_s are then outside the global scope, while its throws still go
// through libprof's unwinder wrappers.
#include <stdexcept>

extern "C" int thrower_run(int n)
{
	int caught = 0;
	for (int i = 0; i < n; i++) {
		try {
			throw std::runtime_error("x");
		} catch (const std::exception &) {
			caught++;
		}
	}
	return caught;
}

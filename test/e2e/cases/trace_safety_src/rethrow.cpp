// C++ exceptions for PROFILER_TRACE='*': each is thrown, unwound through a frame with a
// destructor (its landing pad ends in _Unwind_Resume, called through the PLT), caught
// with catch (...) and rethrown (__cxa_rethrow), and caught again in main.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

struct Guard {
	int id;
	~Guard() { std::printf("unwound %d\n", id); }
};

__attribute__((noinline)) static void thrower(int i)
{
	if (i >= 0)
		throw std::runtime_error("error " + std::to_string(i));
}

__attribute__((noinline)) static int middle(int i)
{
	Guard g{i};
	thrower(i);
	return 0;
}

__attribute__((noinline)) static int rethrower(int i)
{
	try {
		return middle(i);
	} catch (...) {
		std::printf("rethrow %d\n", i);
		throw;
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 5, caught = 0;
	for (int i = 0; i < n; i++) {
		try {
			rethrower(i);
		} catch (const std::exception &e) {
			std::printf("caught %s\n", e.what());
			caught++;
		}
	}
	std::printf("caught=%d\n", caught);
	return 0;
}

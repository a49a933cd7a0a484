// A C++ program (libstdc++'s emergency exception pool is allocated by its constructor,
// before libprof's runs) whose peak is one marked block of MARK bytes, freed at once.
// usage: cxx_peak MARK
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t mark = argc > 1 ? std::strtoul(argv[1], 0, 0) : 1000003;
	{
		std::vector<char> v(mark);
		v[mark / 2] = 1;
		std::string s(100, 'x');
		if (v[mark / 2] != 1 || s.size() != 100)
			return 1;
	}
	std::printf("pid=%d\n", (int)getpid());
	std::fflush(stdout);
	return 0;
}

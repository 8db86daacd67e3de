// SPDX-License-Identifier: GPL-2.0-or-later
// C++ names for the demangling tests: a template's member function in a
// namespace is the hot one, under a free function of the namespace.
//   names [ROUNDS]   prints "names ROUNDS RESULT"
#include <cstdio>
#include <cstdlib>

namespace shapes {

template <typename T> struct Accum {
	T total;
	__attribute__((noinline)) void add(T v)
	{
		for (int i = 0; i < 100; i++)
			total += v * 3 ^ (total >> 7);
	}
};

__attribute__((noinline)) unsigned long spin(unsigned long n)
{
	Accum<unsigned long> a{0};

	for (unsigned long i = 0; i < n; i++)
		a.add(i);
	return a.total;
}

} // namespace shapes

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], nullptr, 10) : 1000000;

	printf("names %lu %lx\n", n, shapes::spin(n));
	return 0;
}

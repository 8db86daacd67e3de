// A C++ exception thrown four nl_deep() frames down and caught in
// nl_catch(), for comparing --uftrace with native uftrace record of the
// -pg build.  Prints "throw 1".
#include <cstdio>
#include <stdexcept>
extern "C" {
void __attribute__((noinline)) nl_after(void) { __asm__ volatile("" ::: "memory"); }
void __attribute__((noinline)) nl_deep(int n)
{
	if (n == 0)
		throw std::runtime_error("deep");
	nl_deep(n - 1);
	nl_after();
}
void __attribute__((noinline)) nl_catch(void)
{
	try {
		nl_deep(3);
	} catch (const std::exception &) {
		nl_after();
	}
	nl_after();
}
}
int main()
{
	nl_catch();
	nl_after();
	std::puts("throw 1");
	return 0;
}

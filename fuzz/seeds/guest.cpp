#include <cstdio>
namespace ns { template <class T> struct Acc { T v{}; __attribute__((noinline)) void add(T x) { v += x; } }; }
int main() { ns::Acc<long> a; for (int i = 0; i < 10; i++) a.add(i); std::printf("%ld\n", a.v); }

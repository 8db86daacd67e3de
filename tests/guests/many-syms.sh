#!/bin/sh
# A static x86_64 guest with a million function symbols: many-syms.sh OUT.
# main() runs through all of them (a million one-byte functions, each a
# nop falling into the next), then spins: "many N CHECKSUM".
set -eu
out=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk 'BEGIN {
	print "\t.section .note.GNU-stack,\"\",@progbits\n\t.text"
	for (i = 0; i < 1000000; i++)
		printf "\t.globl f%d\n\t.type f%d,@function\nf%d:\tnop\n\t.size f%d,1\n", i, i, i, i
	print "\tret"
}' >"$tmp/many.S"
cat >"$tmp/main.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
void f0(void);
static unsigned long __attribute__((noinline)) spin(unsigned long x, long n)
{
	while (n--)
		x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;

	f0();
	printf("many %ld %lx\n", n, spin(7, n * 1000000));
	return 0;
}
C
gcc -static -g -O1 -fno-omit-frame-pointer -o "$out" "$tmp/main.c" "$tmp/many.S"

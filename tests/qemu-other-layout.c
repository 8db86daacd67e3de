/*
 * Stands for a stock QEMU of another version than the degraded mode
 * knows: its USDT probes are named and shaped like QEMU's own dtrace trace
 * events (translate_block(tb, pc, tb_code), tb_flush, target_mmap,
 * target_mmap_complete), but its TB keeps the code pointer 8 bytes
 * further on.  The tool must refuse it, not read sizes from the wrong
 * field.  Usage: qemu-other-layout [TBS]; prints how many it "translated".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sdt.h>
#include <unistd.h>

struct other_tb {
	uint64_t pc;
	uint64_t cs_base;
	uint32_t flags, cflags;
	uint16_t size, icount;
	uint32_t pad;
	uint64_t added; /* the field a newer QEMU put in front */
	const void *ptr;
	size_t code_size;
};

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	unsigned char *code = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct other_tb *tb = malloc(sizeof(*tb));

	if (code == MAP_FAILED || !tb)
		return 1;
	DTRACE_PROBE6(qemu, target_mmap, 0x400000ull, 4096ull, 5, 2, 3, 0ull);
	DTRACE_PROBE1(qemu, target_mmap_complete, 0x400000ull);
	for (long i = 0; i < n; i++) {
		tb->pc = 0x401000 + 16 * (i % 256);
		tb->added = 0x1234;
		tb->ptr = code + 64 * (i % 4096);
		tb->code_size = 0;
		DTRACE_PROBE3(qemu, translate_block, tb, tb->pc, tb->ptr);
		tb->code_size = 48;
		tb->size = 16;
		usleep(1000);
	}
	DTRACE_PROBE(qemu, tb_flush);
	printf("translated %ld\n", n);
	return 0;
}

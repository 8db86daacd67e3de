/* SPDX-License-Identifier: GPL-2.0 */
/* How every USDT program reads its arguments.  Include after usdt.bpf.h. */
#ifndef QJ_USDT_ARGS_BPF_H
#define QJ_USDT_ARGS_BPF_H

/*
 * usdt.bpf.h's bpf_usdt_arg() is static, so the verifier checks it again at
 * every call: ~200 instructions per argument of every program (3.2 ms of
 * each start of qemu-jitbpf.bpf.c's, 1.8 ms with this).  A global function
 * is checked once per program; BPF_USDT() calls it through the macro below.
 */
__noinline long qj_usdt_arg(struct pt_regs *ctx, __u64 n)
{
	long x = 0;

	bpf_usdt_arg(ctx, n, &x);
	return x;
}
#define bpf_usdt_arg(ctx, n, res) (*(res) = qj_usdt_arg(ctx, n), 0)

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The profiler's BPF side (bpf/sample.bpf.c): loaded into the ring buffer
 * of the main BPF object, attached to the CPU clock of every CPU at
 * FREQ Hz and to QEMU's jit_vcpu probe.
 */
#ifndef QJ_SAMPLER_H
#define QJ_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sampler;
struct bpf_program;
struct bpf_link;
struct bpf_object;
struct qj_pidns;
struct qj_vcpu;
struct qj_off;
struct qj_proc;

/*
 * Open and load into the main object's ring buffer and process map;
 * OFF_CPU samples vCPU threads' waits too (--off-cpu);
 * STACK_BYTES 0 walks guest frame pointers, with the WALKERS given
 * (QJ_WALK_*, sample.h), for up to THREADS vCPU threads at once; tasks
 * numbered as in PIDNS (the main object's).
 */
struct sampler *sampler_open(int ringbuf_fd, int procs_fd, const struct qj_pidns *pidns,
			     unsigned int freq, bool off_cpu, unsigned int stack_bytes,
			     unsigned int walkers, unsigned int threads);
/* The walkers the guests of QEMU binary PATH need, by its name
 * (qemu-aarch64, qemu-system-riscv64, qemu-arm-static): all if unknown. */
unsigned int sampler_walkers(const char *path);
/* Attach to the jit_vcpu probe of BINARY in PID (-1: every process of it);
 * NULL with the reason printed. */
struct bpf_link *sampler_attach_probe(struct sampler *sm, pid_t pid, const char *binary);
/* Attach to the jit_vcpu_thread probe of BINARY in PID, which reports
 * every vCPU thread at a handshake, blocked ones too; NULL with the
 * reason printed. */
struct bpf_link *sampler_attach_threads(struct sampler *sm, pid_t pid, const char *binary);
/* What the BPF side keeps of process PID: its guest base, a VM's RAM. */
bool sampler_proc(const struct sampler *sm, pid_t pid, struct qj_proc *p);
/* Where thread QEMU_TID (as PID's QEMU numbers it) keeps its registers,
 * as the last handshake said: false if it did not. */
bool sampler_vcpu_thread(const struct sampler *sm, pid_t pid, pid_t qemu_tid, struct qj_vcpu *v);
/* --off-cpu: ns per tick of off-CPU time (0: not asked for). */
uint64_t sampler_off_period(const struct sampler *sm);
/* Thread TID's wait, as the BPF side keeps it: false if it keeps none. */
bool sampler_wait(const struct sampler *sm, pid_t tid, struct qj_off *o);
/*
 * Thread TID, not seen leaving its CPU, waits since TS in STATE (QJ_OFF_*)
 * as far as we know: BPF counts its wait from TS when it ends, unless it
 * has seen the thread meanwhile.  0 or -errno.
 */
int sampler_wait_since(struct sampler *sm, pid_t tid, uint64_t ts, uint32_t state);
/* Start the CPU clocks, and with OFF_CPU the context-switch probes;
 * -errno with the reason printed. */
int sampler_start(struct sampler *sm);
/* The loaded object, for its programs' names and BTF. */
const struct bpf_object *sampler_object(const struct sampler *sm);
uint64_t sampler_lost(const struct sampler *sm);
/* The BPF programs, for detach.c. */
int sampler_prog_fds(const struct sampler *sm, int *fds, int max);
/* Drop the CPU clocks and the context-switch probes. */
void sampler_stop(struct sampler *sm);
void sampler_free(struct sampler *sm);

#endif

// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/sampler.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "qemu-jitbpf.h"
#include "sample.h"
#include "sample.skel.h"

struct sampler {
	struct sample_bpf *skel;
	unsigned int freq;
	bool off_cpu;
	struct bpf_link **clocks; /* one per CPU */
	int nclocks;
	struct bpf_link *switches[2]; /* --off-cpu: out of and into a CPU */
};

/* The main programs' wake threshold: see qj_submit(). */
static __u64 ring_wake_bytes(int ringbuf_fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_map_get_info_by_fd(ringbuf_fd, &info, &len))
		return 1 << 20;
	return QJ_WAKE_BYTES(info.max_entries);
}

unsigned int sampler_walkers(const char *path)
{
	static const struct {
		const char *arch;
		unsigned int walkers;
	} arches[] = {
		{"x86_64", QJ_WALK_RECORD64},  {"i386", QJ_WALK_RECORD64},
		{"aarch64", QJ_WALK_RECORD64}, {"aarch64_be", QJ_WALK_RECORD64},
		{"riscv64", QJ_WALK_RISCV},    {"riscv32", QJ_WALK_RISCV},
		{"arm", QJ_WALK_ARM},	       {"armeb", QJ_WALK_ARM},
		{"ppc64", QJ_WALK_BACKCHAIN},  {"ppc64le", QJ_WALK_BACKCHAIN},
		{"s390x", QJ_WALK_BACKCHAIN},
	};
	size_t len;
	const char *arch = qemu_arch(path, &len);

	if (!arch)
		return QJ_WALK_ALL;
	for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
		if (strlen(arches[i].arch) == len && !strncmp(arch, arches[i].arch, len))
			return arches[i].walkers;
	return QJ_WALK_ALL;
}

struct sampler *sampler_open(int ringbuf_fd, int procs_fd, const struct qj_pidns *pidns,
			     unsigned int freq, bool off_cpu, unsigned int stack_bytes,
			     unsigned int walkers, unsigned int threads)
{
	struct sampler *sm = xcalloc(1, sizeof(*sm));
	int err;

	sm->freq = freq;
	sm->off_cpu = off_cpu;
	sm->skel = sample_bpf__open();
	if (!sm->skel) {
		pr_err("cannot open the profiler's BPF programs: %s", strerror(errno));
		free(sm);
		return NULL;
	}
	sm->skel->rodata->stack_bytes = stack_bytes;
	sm->skel->rodata->walkers = walkers;
	sm->skel->rodata->pidns = *pidns;
	sm->skel->rodata->wake_bytes = ring_wake_bytes(ringbuf_fd);
	/* A tick of wall-clock time as long as the CPU clock's period. */
	sm->skel->rodata->off_period = off_cpu ? 1000000000ull / freq : 0;
	sm->skel->rodata->off_stack_bytes = stack_bytes > QJ_OFF_STACK ? stack_bytes : QJ_OFF_STACK;
	bpf_program__set_autoload(sm->skel->progs.switch_cpu, off_cpu);
	bpf_program__set_autoload(sm->skel->progs.wait_end, off_cpu);
	err = bpf_map__set_max_entries(sm->skel->maps.vcpus, threads);
	if (!err)
		err = bpf_map__reuse_fd(sm->skel->maps.events, ringbuf_fd);
	if (!err)
		err = bpf_map__reuse_fd(sm->skel->maps.procs, procs_fd);
	if (!err)
		err = sample_bpf__load(sm->skel);
	if (err) {
		pr_err("cannot load the profiler's BPF programs: %s", strerror(-err));
		sampler_free(sm);
		return NULL;
	}
	return sm;
}

/* PROG on QEMU's probe NAME in BINARY in PID; NULL with the reason said. */
static struct bpf_link *attach_probe(struct bpf_program *prog, pid_t pid, const char *binary,
				     const char *name, const char *hint)
{
	struct bpf_link *l = bpf_program__attach_usdt(prog, pid, binary, "qemu", name, NULL);

	if (!l)
		pr_err("cannot attach to qemu:%s in %s: %s%s", name, binary, strerror(errno), hint);
	return l;
}

struct bpf_link *sampler_attach_probe(struct sampler *sm, pid_t pid, const char *binary)
{
	return attach_probe(sm->skel->progs.jit_vcpu, pid, binary, "jit_vcpu",
			    " (a QEMU from before the profiler's probe?)");
}

struct bpf_link *sampler_attach_threads(struct sampler *sm, pid_t pid, const char *binary)
{
	return attach_probe(sm->skel->progs.jit_vcpu_thread, pid, binary, "jit_vcpu_thread", "");
}

bool sampler_proc(const struct sampler *sm, pid_t pid, struct qj_proc *p)
{
	__u32 key = pid;

	return !bpf_map__lookup_elem(sm->skel->maps.procs, &key, sizeof(key), p, sizeof(*p), 0);
}

bool sampler_vcpu_thread(const struct sampler *sm, pid_t pid, pid_t qemu_tid, struct qj_vcpu *v)
{
	__u64 key = (__u64)(uint32_t)pid << 32 | (uint32_t)qemu_tid;

	return !bpf_map__lookup_elem(sm->skel->maps.vcpu_threads, &key, sizeof(key), v, sizeof(*v),
				     0);
}

/* --off-cpu: the programs on threads leaving and entering a CPU. */
static int attach_switches(struct sampler *sm)
{
	sm->switches[0] = bpf_program__attach_trace(sm->skel->progs.switch_cpu);
	if (!sm->switches[0]) {
		pr_err("--off-cpu: cannot attach to the sched_switch tracepoint: %s",
		       strerror(errno));
		return -errno;
	}
	sm->switches[1] = bpf_program__attach_trace(sm->skel->progs.wait_end);
	if (!sm->switches[1]) {
		pr_err("--off-cpu: cannot attach to the sys_exit tracepoint: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

uint64_t sampler_off_period(const struct sampler *sm)
{
	return sm->skel->rodata->off_period;
}

/* A pidfd of thread TID (PIDFD_THREAD), the key of a task storage. */
static int thread_pidfd(pid_t tid)
{
	return (int)syscall(SYS_pidfd_open, tid, O_EXCL /* PIDFD_THREAD */);
}

bool sampler_wait(const struct sampler *sm, pid_t tid, struct qj_off *o)
{
	int fd = thread_pidfd(tid);
	bool ok;

	if (fd < 0)
		return false;
	ok = !bpf_map__lookup_elem(sm->skel->maps.offcpu, &fd, sizeof(fd), o, sizeof(*o), 0);
	close(fd);
	return ok;
}

int sampler_wait_since(struct sampler *sm, pid_t tid, uint64_t ts, uint32_t state)
{
	struct qj_off o = {.ts = ts, .leaving = state};
	int fd = thread_pidfd(tid), err;

	if (fd < 0)
		return -errno;
	/* (Only where there is nothing: BPF's own state is never written.) */
	err = bpf_map__update_elem(sm->skel->maps.offcpu, &fd, sizeof(fd), &o, sizeof(o),
				   BPF_NOEXIST);
	close(fd);
	return err;
}

int sampler_start(struct sampler *sm)
{
	int ncpus = libbpf_num_possible_cpus();

	if (ncpus <= 0) {
		pr_err("cannot count the CPUs: %s", strerror(-ncpus));
		return ncpus ? ncpus : -EINVAL;
	}
	sm->clocks = xcalloc(ncpus, sizeof(*sm->clocks));
	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(attr),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.freq = 1,
			.sample_freq = sm->freq,
		};
		int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		struct bpf_link *l;

		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline */
			pr_err("cannot sample CPU %d at %u Hz: %s", cpu, sm->freq, strerror(errno));
			return -errno;
		}
		l = bpf_program__attach_perf_event(sm->skel->progs.sample, fd);
		if (!l) {
			int err = -errno;

			close(fd);
			pr_err("cannot attach the sampler to CPU %d: %s", cpu, strerror(-err));
			return err;
		}
		sm->clocks[sm->nclocks++] = l;
	}
	return sm->off_cpu ? attach_switches(sm) : 0;
}

const struct bpf_object *sampler_object(const struct sampler *sm)
{
	return sm->skel->obj;
}

uint64_t sampler_lost(const struct sampler *sm)
{
	return sm->skel->bss->lost_samples;
}

int sampler_prog_fds(const struct sampler *sm, int *fds, int max)
{
	int n = 0;

	if (n < max)
		fds[n++] = bpf_program__fd(sm->skel->progs.sample);
	if (n < max)
		fds[n++] = bpf_program__fd(sm->skel->progs.jit_vcpu);
	if (n < max)
		fds[n++] = bpf_program__fd(sm->skel->progs.jit_vcpu_thread);
	if (sm->off_cpu && n + 1 < max) {
		fds[n++] = bpf_program__fd(sm->skel->progs.switch_cpu);
		fds[n++] = bpf_program__fd(sm->skel->progs.wait_end);
	}
	return n;
}

void sampler_stop(struct sampler *sm)
{
	for (int i = 0; i < sm->nclocks; i++)
		bpf_link__destroy(sm->clocks[i]);
	sm->nclocks = 0;
	for (int i = 0; i < 2; i++) {
		bpf_link__destroy(sm->switches[i]);
		sm->switches[i] = NULL;
	}
}

void sampler_free(struct sampler *sm)
{
	if (!sm)
		return;
	if (sm->skel)
		sampler_stop(sm);
	free(sm->clocks);
	sample_bpf__destroy(sm->skel);
	free(sm);
}

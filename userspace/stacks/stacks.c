// SPDX-License-Identifier: GPL-2.0-or-later
#include "stacks/stacks.h"
#include "naming/symbols.h"
#include "naming/syscalls.h"
#include "profiler/sampler.h"
#include "profiler/unwind.h"
#include "util/procfile.h"
#include "util/util.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The guest register at OFF in env, SIZE bytes wide, zero-extended. */
static bool reg(pid_t pid, const struct qj_vcpu *v, int32_t off, uint64_t *val)
{
	uint32_t w;

	if (off < 0)
		return false;
	if (v->size == 4) {
		if (!proc_mem_read(pid, v->env + off, &w, 4))
			return false;
		*val = w;
		return true;
	}
	return proc_mem_read(pid, v->env + off, val, 8);
}

/*
 * Where a system call's arguments are in env: the first's offset and
 * the distance between them, or for x86_64 (rdi, rsi, rdx, r10, r8, r9
 * out of order in regs[]) each one.  From the offsets the probe gave:
 * rsp is regs[4]; AArch64's x29 the frame pointer; Arm's r13, RISC-V's
 * x2, POWER's r1 and s390x's r15 the stack pointer.
 */
static bool arg_offsets(const struct qj_vcpu *v, int32_t off[6])
{
	static const int x86[6] = {7, 6, 2, 10, 8, 9};
	int32_t sp = v->off[QJ_SP], fp = v->off[QJ_FP], first, size = v->size;

	switch (v->machine) {
	case QJ_EM_X86_64:
		for (int i = 0; i < 6; i++)
			off[i] = sp - 4 * 8 + x86[i] * 8;
		return sp >= 0;
	case QJ_EM_AARCH64:
		first = fp - 29 * size;
		break;
	case QJ_EM_ARM:
		first = sp - 13 * size;
		break;
	case QJ_EM_RISCV:
		first = sp + 8 * size;
		break;
	case QJ_EM_PPC64:
		first = sp + 2 * size;
		break;
	case QJ_EM_S390:
		first = sp - 13 * size;
		break;
	default:
		return false;
	}
	for (int i = 0; i < 6; i++)
		off[i] = first + i * size;
	return sp >= 0 && fp >= 0;
}

/*
 * Is the guest in a system call: does the instruction before its pc make
 * one (QEMU moves the pc on before it emulates the call)?  s390x
 * names the call in its svc; its number is then that, or r1's for svc 0.
 */
static bool at_syscall(pid_t pid, uint64_t base, const struct qj_vcpu *v, uint64_t pc, uint64_t *nr)
{
	uint8_t b[4];
	uint32_t w;

	switch (v->machine) {
	case QJ_EM_X86_64:
		return proc_mem_read(pid, base + pc - 2, b, 2) && b[0] == 0x0f && b[1] == 0x05;
	case QJ_EM_AARCH64:
		return proc_mem_read(pid, base + pc - 4, &w, 4) && w == 0xd4000001;
	case QJ_EM_ARM:
		/* svc #0, as A32 and as Thumb. */
		return (proc_mem_read(pid, base + pc - 4, &w, 4) && w == 0xef000000) ||
		       (proc_mem_read(pid, base + pc - 2, b, 2) && b[0] == 0x00 && b[1] == 0xdf);
	case QJ_EM_RISCV:
		return proc_mem_read(pid, base + pc - 4, &w, 4) && w == 0x00000073;
	case QJ_EM_PPC64:
		if (!proc_mem_read(pid, base + pc - 4, &w, 4))
			return false;
		return (v->big_endian ? __builtin_bswap32(w) : w) == 0x44000002;
	case QJ_EM_S390:
		if (!proc_mem_read(pid, base + pc - 2, b, 2) || b[0] != 0x0a)
			return false;
		if (b[1])
			*nr = b[1];
		else if (!reg(pid, v, v->off[QJ_SP] - 14 * 8, nr))
			return false;
		return true;
	default:
		return false;
	}
}

/* Name PC (a return address, but for the first frame) into F. */
static void name_frame(struct guest *g, uint64_t pc, bool ret, struct stack_frame *f)
{
	struct guest_loc loc;
	uint64_t at = ret ? pc - 1 : pc;

	guest_lookup(g, at, &loc);
	*f = (struct stack_frame){
		.pc = pc,
		.name = guest_loc_name(g, &loc, at),
		.off = loc.name ? pc - loc.sym_start : 0,
	};
	if (loc.img && loc.img->elf && !elf_file_line(loc.img->elf, loc.link, &f->file, &f->line))
		f->file = NULL;
}

bool stacks_guest_sample(pid_t pid, uint64_t g_base, const struct qj_vcpu *v, struct qj_sample *r,
			 uint32_t bytes)
{
	uint64_t regs[QJ_NREGS] = {0}, nr;

	for (int i = 0; i < QJ_NREGS; i++)
		if (!reg(pid, v, v->off[i], &regs[i]) && (i == QJ_PC || i == QJ_SP))
			return false;
	for (int i = 0; i < QJ_NREGS; i++)
		r->gregs[i] = regs[i];
	r->gnr = v->off_nr >= 0 && reg(pid, v, v->off_nr, &nr) ? nr : QJ_NR_UNKNOWN;
	r->flags |= QJ_SAMPLE_VCPU;
	r->cpu_index = v->cpu_index;
	r->machine = v->machine;
	r->size = v->size;
	r->big_endian = v->big_endian;
	/* The guest's stack from sp, as much of BYTES as is mapped. */
	for (uint32_t len = bytes; len >= 64 && !r->stack_len; len >>= 1)
		if (proc_mem_read(pid, g_base + r->gregs[QJ_SP], r->stack, len))
			r->stack_len = len;
	return true;
}

/*
 * The frame records of R's stack copy from its frame pointer on, as the
 * sampler walks them (sample.bpf.c): {caller's fp, return address} at fp
 * (x86_64, AArch64), or just below it (RISC-V); their return addresses
 * into R's gstack, for unwind_fp() to name as the profiler does.  For
 * code without CFI (a bare-metal program).
 */
static void walk_records(struct qj_sample *r)
{
	uint64_t sp = r->gregs[QJ_SP], fp = r->gregs[QJ_FP], rec[2];
	int64_t at = r->machine == QJ_EM_RISCV ? -16 : 0;

	r->nguest = 0;
	if (r->size != 8 || r->big_endian ||
	    (r->machine != QJ_EM_X86_64 && r->machine != QJ_EM_AARCH64 &&
	     r->machine != QJ_EM_RISCV))
		return;
	while (r->nguest < QJ_GSTACK_MAX && fp + at >= sp && fp + at + 16 <= sp + r->stack_len &&
	       !(fp & 7)) {
		memcpy(rec, r->stack + (fp + at - sp), sizeof(rec));
		/* (A start-up routine's record may point at itself.) */
		if (!rec[1] || (r->nguest && rec[1] == r->gstack[r->nguest - 1]))
			break;
		r->gstack[r->nguest++] = rec[1];
		if (rec[0] <= fp)
			break;
		fp = rec[0];
	}
}

bool stacks_read_guest(pid_t pid, struct guest *g, const struct qj_vcpu *v,
		       const struct qj_proc *mem, struct thread_stack *t)
{
	uint64_t pcs[UNWIND_MAX], lr, nr, regs[QJ_NREGS] = {0};
	uint8_t how[UNWIND_MAX] = {0};
	struct qj_sample *r = xcalloc(1, sizeof(*r) + QJ_STACK_MAX);
	bool system = mem && mem->hi;
	uint32_t bytes = QJ_STACK_MAX;
	int32_t off[6];
	size_t n;

	t->cpu_index = v->cpu_index;
	/*
	 * A VM: its RAM serves guest addresses as they are only while its MMU
	 * is off (the profiler's rule, sample.bpf.c): else the leaf, and the
	 * link register, alone.
	 */
	for (int i = 0; system && i < QJ_NREGS; i++)
		reg(pid, v, v->off[i], &regs[i]);
	if (system && (regs[QJ_PC] < mem->lo || regs[QJ_PC] >= mem->hi || regs[QJ_SP] < mem->lo ||
		       regs[QJ_SP] >= mem->hi))
		bytes = 0;
	else if (system && mem->hi - regs[QJ_SP] < bytes)
		bytes = mem->hi - regs[QJ_SP];
	/* (A VM's guest addresses are its RAM's, where QEMU maps it.) */
	if (!stacks_guest_sample(pid, system ? mem->guest_base : g->base, v, r, bytes)) {
		free(r);
		return false;
	}
	t->pc = r->gregs[QJ_PC];
	t->sp = r->gregs[QJ_SP];
	t->fp = r->gregs[QJ_FP];
	lr = r->gregs[QJ_LR];
	nr = r->gnr == QJ_NR_UNKNOWN ? 0 : r->gnr;
	t->regs = true;
	if (system) {
		/* Its frame records, as the profiler walks a VM's (bare-metal
		 * code often has no CFI). */
		if (r->stack_len) {
			walk_records(r);
			n = unwind_fp(g, r, t->pc, pcs, UNWIND_MAX);
		} else {
			pcs[0] = t->pc;
			n = 1;
			if (lr && v->machine != QJ_EM_X86_64)
				pcs[n++] = lr;
		}
		free(r);
		for (size_t i = 0; i < n && t->nframes < STACK_FRAMES_MAX; i++)
			name_frame(g, pcs[i], i > 0, &t->frames[t->nframes++]);
		return true;
	}
	if (at_syscall(pid, g->base, v, t->pc, &nr) && arg_offsets(v, off)) {
		t->in_syscall = true;
		t->nr = nr;
		t->syscall = syscall_name(v->machine, nr);
		for (int i = 0; i < 6; i++)
			reg(pid, v, off[i], &t->args[i]);
	}
	/* By CFI, and by the code of functions without (naming/prologue.c). */
	n = unwind_dwarf_how(g, r, t->pc, pcs, how, UNWIND_MAX);
	/*
	 * A leaf whose code does not tell either, that keeps its return
	 * address in the link register and its caller's stack: on from there.
	 */
	if (n <= 1 && lr && v->machine != QJ_EM_X86_64) {
		r->gregs[QJ_PC] = lr;
		n = 1 + unwind_dwarf_how(g, r, lr, pcs + 1, how + 1, UNWIND_MAX - 1);
	}
	if (n <= 1)
		pcs[0] = t->pc, n = 1;
	free(r);
	for (size_t i = 0; i < n && t->nframes < STACK_FRAMES_MAX; i++) {
		name_frame(g, pcs[i], i > 0, &t->frames[t->nframes]);
		t->frames[t->nframes++].by_prologue = how[i] == UNWIND_PROLOGUE;
	}
	return true;
}

void stacks_sample(struct thread_sample *s, pid_t tid, enum sample_where where, const char *work,
		   const uint64_t *pcs, size_t n)
{
	static const char *const doing[IN_MAX] = {
		[IN_GUEST] = "running guest code",
		[IN_HELPER] = "running a helper of QEMU's for guest code",
		[IN_TRANSLATION] = "running in QEMU, translating guest code",
		[IN_QEMU] = "running in QEMU",
		[IN_KERNEL] = "running in the host kernel",
		[IN_OFFCPU] = "waiting",
	};

	s->tid = tid;
	s->in_qemu = where == IN_QEMU || where == IN_KERNEL;
	/* (A helper's or QEMU's own work, named: [helper: fp], [lookup].) */
	if ((where == IN_HELPER || where == IN_QEMU) && work && strcmp(work, "[helper]") &&
	    strcmp(work, "[qemu]"))
		snprintf(s->doing, sizeof(s->doing), "%s: %s", doing[where], work);
	else
		snprintf(s->doing, sizeof(s->doing), "%s",
			 where < IN_MAX ? doing[where] : "running");
	s->n = 0;
	for (size_t i = 0; i < n && s->n < STACK_FRAMES_MAX; i++)
		s->pcs[s->n++] = pcs[i];
}

void stacks_running(struct guest *g, const struct thread_sample *s, struct thread_stack *t)
{
	/*
	 * The instruction before the pc makes a system call: in one only if
	 * QEMU is out of translated code; else env holds what the last call
	 * left (its result where its number was).
	 */
	if (!s || !s->in_qemu)
		t->in_syscall = false;
	if (!s)
		return;
	t->doing = s->doing;
	t->nframes = 0;
	for (int i = 0; i < s->n && t->nframes < STACK_FRAMES_MAX; i++)
		name_frame(g, s->pcs[i], i > 0, &t->frames[t->nframes++]);
}

void stacks_waits(pid_t pid, uint64_t g_base, struct thread_stack *v, int n)
{
	for (int i = 0; i < n; i++) {
		struct thread_stack *t = &v[i];
		int32_t owner;
		int op;

		t->owner = -1;
		if (!t->in_syscall || !t->syscall || strncmp(t->syscall, "futex", 5))
			continue;
		/* FUTEX_WAIT, FUTEX_LOCK_PI, FUTEX_WAIT_BITSET, whatever the flags. */
		op = t->args[1] & 0x7f;
		if (op != 0 && op != 6 && op != 9)
			continue;
		t->futex = t->args[0];
		if (!proc_mem_read(pid, g_base + t->futex + 8, &owner, sizeof(owner)) || owner <= 0)
			continue;
		for (int k = 0; k < n; k++)
			if (k != i && v[k].qemu_tid == owner)
				t->owner = k;
	}
}

/*
 * The cycle of owners thread I's wait leads into, if it is one that I
 * starts (and I the least index on it, so that each is told once): its
 * length, its members in CYCLE; else 0.
 */
static int wait_cycle(const struct thread_stack *v, int n, int i, int *cycle)
{
	int len = 0, k = i;

	while (len < n && v[k].owner >= 0) {
		cycle[len++] = k;
		k = v[k].owner;
		if (k == i)
			break;
		if (k < i)
			return 0;
	}
	return k == i && len > 1 ? len : 0;
}

/* The first line of /proc/PID/task/TID/NAME into BUF, without its newline. */
static bool task_line(pid_t pid, pid_t tid, const char *name, char *buf, size_t size)
{
	char path[96];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(buf, size, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

void stacks_read_host(pid_t pid, pid_t tid, struct thread_stack *t)
{
	char buf[512], path[96], *p;
	FILE *f;

	t->tid = t->qemu_tid = tid;
	t->host_nr = -1;
	t->state = '?';
	if (task_line(pid, tid, "comm", buf, sizeof(buf)))
		snprintf(t->comm, sizeof(t->comm), "%.31s", buf);
	if (task_line(pid, tid, "stat", buf, sizeof(buf)) && (p = strrchr(buf, ')')) && p[1])
		t->state = p[2];
	/* "running", or the call's number, its arguments, sp and pc: blocked
	 * in it. */
	if (task_line(pid, tid, "syscall", buf, sizeof(buf)) && isdigit((unsigned char)buf[0])) {
		t->host_nr = strtol(buf, NULL, 10);
		p = strrchr(buf, ' ');
		t->host_pc = p ? strtoull(p + 1, NULL, 0) : 0;
	}
	if (task_line(pid, tid, "wchan", buf, sizeof(buf)) && strcmp(buf, "0"))
		snprintf(t->wchan, sizeof(t->wchan), "%.63s", buf);
	/* The thread's id in the innermost pid namespace: the guest's. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	f = fopen(path, "re");
	while (f && fgets(buf, sizeof(buf), f))
		if (!strncmp(buf, "NSpid:", 6) && (p = strrchr(buf, '\t')))
			t->qemu_tid = atoi(p + 1);
	if (f)
		fclose(f);
	/* "[<0>] futex_wait_queue+0x63/0xb0": the function. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)pid, (int)tid);
	f = fopen(path, "re");
	while (f && t->nkstack < STACK_KFRAMES_MAX && fgets(buf, sizeof(buf), f)) {
		p = strchr(buf, ' ');
		if (!p)
			continue;
		p[strcspn(p, "+\n")] = 0;
		snprintf(t->kstack[t->nkstack++], sizeof(t->kstack[0]), "%s", p + 1);
	}
	if (f)
		fclose(f);
}

int stacks_each_vcpu(const struct sampler *sm, pid_t pid,
		     bool (*fn)(void *ctx, struct thread_stack *t, const struct qj_vcpu *v),
		     void *ctx)
{
	char path[64];
	struct dirent *d;
	int others = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		struct thread_stack t = {0};
		struct qj_vcpu v;

		if (atoi(d->d_name) <= 0)
			continue;
		stacks_read_host(pid, atoi(d->d_name), &t);
		if (!sampler_vcpu_thread(sm, pid, t.qemu_tid, &v))
			others++;
		else if (!fn(ctx, &t, &v))
			break;
	}
	if (dir)
		closedir(dir);
	return others;
}

/* "futex(0x4a0c10, 0x80, 0x2, ...)" or "syscall 4321(...)": T's call. */
static void put_call(FILE *f, const struct thread_stack *t)
{
	if (t->syscall)
		fputs(t->syscall, f);
	else
		fprintf(f, "syscall %" PRIu64, t->nr);
	for (int i = 0; i < 6; i++)
		fprintf(f, "%s0x%" PRIx64, i ? ", " : "(", t->args[i]);
	fputc(')', f);
}

/* What T does, in words. */
static void put_doing(FILE *f, const struct thread_stack *t)
{
	if (t->doing) {
		fprintf(f, "%s (sampled)", t->doing);
		if (t->in_syscall) {
			fputs(", in ", f);
			put_call(f, t);
		}
		return;
	}
	if (t->host_nr < 0 && (t->state == 'R' || t->state == '?')) {
		fputs("running", f);
		if (t->in_syscall) {
			fputs(" in ", f);
			put_call(f, t);
		}
		return;
	}
	if (t->in_syscall) {
		fputs("blocked in ", f);
		put_call(f, t);
	} else {
		fputs("blocked in QEMU", f);
	}
	if (t->wchan[0])
		fprintf(f, "; the host kernel waits in %s", t->wchan);
}

/* "Deadlock: ..." for each cycle of owners, once. */
static void put_cycles(FILE *f, const struct thread_stack *v, int n)
{
	int *cycle = xcalloc(n ? n : 1, sizeof(*cycle));

	for (int i = 0; i < n; i++) {
		int len = wait_cycle(v, n, i, cycle);

		if (!len)
			continue;
		fputs("Deadlock:", f);
		for (int k = 0; k < len; k++) {
			const struct thread_stack *t = &v[cycle[k]];

			fprintf(f, " TID %d %s waits for the lock at 0x%" PRIx64 " held by",
				(int)t->qemu_tid, t->comm, t->futex);
		}
		fprintf(f, " TID %d %s\n", (int)v[cycle[0]].qemu_tid, v[cycle[0]].comm);
	}
	free(cycle);
}

/* JSON: the cycles of owners, each a list of thread ids. */
static void put_json_cycles(FILE *f, const struct thread_stack *v, int n)
{
	int *cycle = xcalloc(n ? n : 1, sizeof(*cycle)), m = 0;

	fputs(", \"deadlocks\": [", f);
	for (int i = 0; i < n; i++) {
		int len = wait_cycle(v, n, i, cycle);

		if (!len)
			continue;
		fputs(m++ ? ", [" : "[", f);
		for (int k = 0; k < len; k++)
			fprintf(f, "%s%d", k ? ", " : "", (int)v[cycle[k]].qemu_tid);
		fputc(']', f);
	}
	fputc(']', f);
	free(cycle);
}

void stacks_write_text(FILE *f, pid_t pid, const char *command, const struct thread_stack *v, int n,
		       int others)
{
	fprintf(f, "PID %d: %s (%d guest thread%s, %d of QEMU's own)\n", (int)pid,
		command ? command : "?", n, n == 1 ? "" : "s", others);
	put_cycles(f, v, n);
	for (int i = 0; i < n; i++) {
		const struct thread_stack *t = &v[i];

		fprintf(f, "TID %d", (int)t->qemu_tid);
		if (t->tid != t->qemu_tid)
			fprintf(f, " (host %d)", (int)t->tid);
		fprintf(f, " %s cpu %d: ", t->comm, t->cpu_index);
		put_doing(f, t);
		fputc('\n', f);
		if (t->owner >= 0)
			fprintf(f,
				"  waits for TID %d %s: the owner of the lock at 0x%" PRIx64 "\n",
				(int)v[t->owner].qemu_tid, v[t->owner].comm, t->futex);
		if (!t->regs)
			fputs("  (its registers could not be read)\n", f);
		for (int k = 0; k < t->nframes; k++) {
			const struct stack_frame *fr = &t->frames[k];

			fprintf(f, "  #%-2d 0x%016" PRIx64 " %s", k, fr->pc, fr->name);
			if (fr->off)
				fprintf(f, "+0x%" PRIx64, fr->off);
			if (fr->file)
				fprintf(f, " at %s:%d", fr->file, fr->line);
			if (fr->by_prologue)
				fputs(" (found by its callee's prologue: no CFI)", f);
			fputc('\n', f);
		}
		if (t->nkstack && t->host_nr >= 0) {
			fputs("  host kernel:", f);
			for (int k = 0; k < t->nkstack; k++)
				fprintf(f, "%s %s", k ? " <-" : "", t->kstack[k]);
			fputc('\n', f);
		}
	}
}

void stacks_write_json(FILE *f, bool first, pid_t pid, const char *command,
		       const struct thread_stack *v, int n, int others)
{
	fprintf(f, "%s\n  {\"pid\": %d, \"command\": ", first ? "" : ",", (int)pid);
	json_put_string(f, command ? command : "");
	fprintf(f, ", \"qemu_threads\": %d", others);
	put_json_cycles(f, v, n);
	fprintf(f, ", \"threads\": [");
	for (int i = 0; i < n; i++) {
		const struct thread_stack *t = &v[i];
		char state[2] = {t->state, 0};

		fprintf(f, "%s\n    {\"tid\": %d, \"host_tid\": %d, \"cpu\": %d, \"state\": ",
			i ? "," : "", (int)t->qemu_tid, (int)t->tid, t->cpu_index);
		json_put_string(f, state);
		fprintf(f, ", \"running\": %s, \"name\": ",
			t->host_nr < 0 && (t->state == 'R' || t->state == '?') ? "true" : "false");
		json_put_string(f, t->comm);
		if (t->doing) {
			fputs(", \"sampled\": ", f);
			json_put_string(f, t->doing);
		}
		if (t->in_syscall) {
			fprintf(f, ", \"syscall\": {\"nr\": %" PRIu64 ", \"name\": ", t->nr);
			json_put_string(f, t->syscall ? t->syscall : "");
			fprintf(f, ", \"args\": [");
			for (int k = 0; k < 6; k++)
				fprintf(f, "%s%" PRIu64, k ? ", " : "", t->args[k]);
			fprintf(f, "]}");
		}
		if (t->futex) {
			fprintf(f, ", \"futex\": {\"word\": %" PRIu64 ", \"owner\": ", t->futex);
			if (t->owner >= 0)
				fprintf(f, "%d}", (int)v[t->owner].qemu_tid);
			else
				fputs("null}", f);
		}
		fprintf(f, ", \"host_syscall\": %ld, \"wchan\": ", t->host_nr);
		json_put_string(f, t->wchan);
		fprintf(f, ", \"kernel_stack\": [");
		for (int k = 0; k < t->nkstack; k++) {
			fputs(k ? ", " : "", f);
			json_put_string(f, t->kstack[k]);
		}
		fprintf(f, "], \"frames\": [");
		for (int k = 0; k < t->nframes; k++) {
			const struct stack_frame *fr = &t->frames[k];

			fprintf(f, "%s{\"pc\": %" PRIu64 ", \"function\": ", k ? ", " : "", fr->pc);
			json_put_string(f, fr->name);
			fprintf(f, ", \"offset\": %" PRIu64 ", \"file\": ", fr->off);
			json_put_string(f, fr->file ? fr->file : "");
			fprintf(f, ", \"line\": %d, \"found_by\": \"%s\"}", fr->line,
				fr->by_prologue ? "prologue" : "cfi");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}");
}

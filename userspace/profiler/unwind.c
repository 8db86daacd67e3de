// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/unwind.h"
#include "util/util.h"

#include <elf.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <string.h>
#include <unistd.h>

/* DWARF register numbers of the guest's sp, fp and return address. */
struct guest_abi {
	int sp, fp, ra;
	bool ra_in_lr; /* the return address arrives in a register (AArch64) */
};

static bool guest_abi(uint16_t machine, struct guest_abi *abi)
{
	switch (machine) {
	case EM_X86_64:
		*abi = (struct guest_abi){7, 6, 16, false};
		return true;
	case EM_AARCH64:
		*abi = (struct guest_abi){31, 29, 30, true};
		return true;
	}
	return false;
}

/*
 * The caller of a leaf whose frame record the frame-pointer chain does
 * not hold: a function without one, or one that has not pushed it yet.
 * Its return address is in the link register, or on the stack where the
 * CFI says.  0 when the chain holds it, or nobody knows.
 */
static uint64_t frameless_caller(struct guest *g, const struct qj_sample *r, uint64_t leaf)
{
	uint64_t sp = r->gregs[QJ_SP], fp = r->gregs[QJ_FP], at;
	struct frame_rule rule;
	struct guest_abi abi;
	struct guest_loc loc;

	guest_lookup(g, leaf, &loc);
	if (!loc.img || !loc.img->elf || !guest_abi(elf_file_machine(loc.img->elf), &abi) ||
	    !elf_file_frame_rule(loc.img->elf, loc.link, abi.ra, &rule))
		return 0;
	if (rule.ra == RA_IN_REG)
		return abi.ra_in_lr ? r->gregs[QJ_LR] : 0;
	if (rule.ra != RA_AT_CFA || (rule.cfa_reg != abi.sp && rule.cfa_reg != abi.fp))
		return 0;
	at = (rule.cfa_reg == abi.sp ? sp : fp) + rule.cfa_off + rule.ra_off;
	/* Saved in the frame record at fp: the chain starts with it. */
	if (at == fp + 8)
		return 0;
	if (at < sp || (at - sp) % 8 || (at - sp) / 8 >= r->nwords)
		return 0;
	return r->words[(at - sp) / 8];
}

size_t unwind_fp(struct guest *g, const struct qj_sample *r, uint64_t leaf, uint64_t *pcs,
		 size_t max)
{
	size_t n = 0;
	uint64_t caller;

	if (!max)
		return 0;
	pcs[n++] = leaf;
	caller = frameless_caller(g, r, leaf);
	if (caller && n < max)
		pcs[n++] = caller;
	for (uint32_t i = 0; i < r->nguest && i < QJ_GSTACK_MAX && n < max; i++)
		pcs[n++] = r->gstack[i];
	return n;
}

/*
 * --call-graph=dwarf: libdwfl's unwinder on a copy of the guest's stack,
 * as perf's --call-graph dwarf does for native code.  One Dwfl per guest
 * address space, rebuilt when its images change (libdwfl cannot forget a
 * module), with every guest image reported at its load bias; the
 * backend follows the images' machine, so an x86_64 host unwinds an
 * AArch64 guest too.  Memory reads are served from the copied stack.
 */
struct dwarf_unwinder {
	struct guest *g;
	unsigned int version;
	Dwfl *dwfl;
	bool attached;
	struct guest_abi abi; /* of the images' machine */
	/* The sample being unwound. */
	const struct qj_sample *r;
	uint64_t leaf;
	uint64_t *pcs;
	size_t n, max;
};

static struct dwarf_unwinder dw;

static const Dwfl_Callbacks dwfl_offline = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
	(void)dwfl;
	(void)arg;
	if (*thread_arg)
		return 0;
	*thread_arg = (void *)1;
	return dw.r->hdr.tid;
}

static bool dw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg)
{
	(void)dwfl;
	(void)arg;
	(void)tid;
	*thread_arg = (void *)1;
	return true;
}

static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	uint64_t sp = dw.r->gregs[QJ_SP];

	(void)dwfl;
	(void)arg;
	if (addr < sp || addr + 8 > sp + dw.r->stack_len || addr + 8 < addr)
		return false;
	memcpy(result, dw.r->stack + (addr - sp), 8);
	return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct qj_sample *r = dw.r;
	struct guest_abi abi = dw.abi;
	Dwarf_Word regs[3];

	(void)arg;
	if (abi.ra_in_lr) {
		/* x29, x30, sp: DWARF 29 to 31 on AArch64. */
		regs[0] = r->gregs[QJ_FP];
		regs[1] = r->gregs[QJ_LR];
		regs[2] = r->gregs[QJ_SP];
		if (!dwfl_thread_state_registers(thread, abi.fp, 3, regs))
			return false;
	} else {
		/* rbp, rsp: DWARF 6 and 7 on x86_64. */
		regs[0] = r->gregs[QJ_FP];
		regs[1] = r->gregs[QJ_SP];
		if (!dwfl_thread_state_registers(thread, abi.fp, 2, regs))
			return false;
	}
	dwfl_thread_state_register_pc(thread, dw.leaf);
	return true;
}

static const Dwfl_Thread_Callbacks dw_callbacks = {
	.next_thread = dw_next_thread,
	.get_thread = dw_get_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_initial_registers,
};

static int dw_frame(Dwfl_Frame *state, void *arg)
{
	Dwarf_Addr pc;
	bool activation;

	(void)arg;
	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	dw.pcs[dw.n] = dw.n ? pc : dw.leaf;
	dw.n++;
	return dw.n < dw.max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* The Dwfl of G's images as they are now. */
static bool dw_prepare(struct guest *g)
{
	uint16_t machine = 0;

	if (dw.dwfl && dw.g == g && dw.version == g->version)
		return dw.attached;
	if (dw.dwfl)
		dwfl_end(dw.dwfl);
	dw.g = g;
	dw.version = g->version;
	dw.attached = false;
	dw.dwfl = dwfl_begin(&dwfl_offline);
	if (!dw.dwfl)
		return false;
	dwfl_report_begin(dw.dwfl);
	for (size_t i = 0; i < g->nimgs; i++) {
		const struct guest_image *img = &g->imgs[i];

		int fd;

		if (!img->elf || elf_file_fd(img->elf) < 0)
			continue;
		if (!machine)
			machine = elf_file_machine(img->elf);
		/* The file we read, not the path (a container's); libdwfl
		 * closes the copy. */
		fd = dup(elf_file_fd(img->elf));
		if (fd >= 0 &&
		    !dwfl_report_elf(dw.dwfl, img->path, img->path, fd, img->bias, false))
			pr_dbg("libdwfl: %s: %s", img->path, dwfl_errmsg(-1));
	}
	dwfl_report_end(dw.dwfl, NULL, NULL);
	/* The registers are those of the first image's machine. */
	if (!guest_abi(machine, &dw.abi))
		return false;
	/* A pid of our own: the thread callbacks serve the samples. */
	dw.attached = dwfl_attach_state(dw.dwfl, NULL, 1, &dw_callbacks, NULL);
	if (!dw.attached)
		pr_dbg("libdwfl cannot unwind the guest: %s", dwfl_errmsg(-1));
	return dw.attached;
}

size_t unwind_dwarf(struct guest *g, const struct qj_sample *r, uint64_t leaf, uint64_t *pcs,
		    size_t max)
{
	if (!max)
		return 0;
	pcs[0] = leaf;
	if (!dw_prepare(g))
		return 1;
	dw.r = r;
	dw.leaf = leaf;
	dw.pcs = pcs;
	dw.n = 0;
	dw.max = max;
	dwfl_getthread_frames(dw.dwfl, r->hdr.tid, dw_frame, NULL);
	return dw.n ? dw.n : 1;
}

void unwind_free(void)
{
	if (dw.dwfl)
		dwfl_end(dw.dwfl);
	memset(&dw, 0, sizeof(dw));
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/unwind.h"
#include "naming/prologue.h"
#include "util/util.h"

#include <elf.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <string.h>
#include <unistd.h>

/*
 * What the unwinders need to know of a guest's ABI: the DWARF numbers of
 * its sp, fp and return-address column, and where the frame chain that
 * sample.bpf.c walked keeps the first return address it reports.
 */
struct guest_abi {
	int sp, fp, ra;
	bool ra_in_lr; /* the return address arrives in a register */
	/*
	 * Records at fp (x86_64, AArch64, RISC-V, Arm): the first record's
	 * return address is at fp + chain_ra[0] or fp + chain_ra[1] (Arm:
	 * GCC's frames and APCS frames).  Back chains (ppc64, s390x): at
	 * chain_ra[0] in the caller's frame, whose address is at sp.
	 */
	int chain_ra[2];
	bool backchain;
	/* Back chains: the CFA's offset from sp in a function that has not
	 * made a frame of its own (s390x keeps a 160-byte save area). */
	int cfa_base;
};

static bool guest_abi(uint16_t machine, struct guest_abi *abi)
{
	switch (machine) {
	case EM_X86_64:
		*abi = (struct guest_abi){7, 6, 16, false, {8, 8}, false, 0};
		return true;
	case EM_AARCH64:
		*abi = (struct guest_abi){31, 29, 30, true, {8, 8}, false, 0};
		return true;
	case EM_RISCV:
		*abi = (struct guest_abi){2, 8, 1, true, {-8, -8}, false, 0};
		return true;
	case EM_ARM:
		*abi = (struct guest_abi){13, 11, 14, true, {0, -4}, false, 0};
		return true;
	case EM_PPC64:
		/* LR is DWARF 65 in GCC's CFI. */
		*abi = (struct guest_abi){1, 31, 65, true, {16, 16}, true, 0};
		return true;
	case EM_S390:
		*abi = (struct guest_abi){15, 11, 14, true, {112, 112}, true, 160};
		return true;
	}
	return false;
}

/* The guest word at guest address AT, if the sample copied it: from
 * words[] (fp walks) or stack[] (dwarf), both guest memory from sp on. */
static bool sample_word(const struct qj_sample *r, uint64_t at, uint64_t *val)
{
	uint64_t sp = r->gregs[QJ_SP], off = at - sp;
	unsigned int size = r->size == 4 ? 4 : 8;
	const uint8_t *mem;
	size_t len;
	uint64_t v = 0;

	if (r->stack_len) {
		mem = r->stack;
		len = r->stack_len;
	} else {
		/* No more than words[] holds, whatever the record says. */
		mem = (const uint8_t *)r->words;
		len = (size_t)(r->nwords < QJ_GWORDS ? r->nwords : QJ_GWORDS) * 8;
	}
	if (at < sp || off % size || off > len || len - off < size)
		return false;
	if (size == 4) {
		uint32_t w;

		memcpy(&w, mem + off, 4);
		v = r->big_endian ? __builtin_bswap32(w) : w;
	} else {
		memcpy(&v, mem + off, 8);
		if (r->big_endian)
			v = __builtin_bswap64(v);
	}
	*val = v;
	return true;
}

/*
 * The caller of a leaf whose frame record the frame chain does not hold:
 * a function without one, or one that has not saved its return address
 * there yet.  Its return address is in the link register, or on the
 * stack where the CFI says.  0 when the chain holds it, or nobody knows.
 * *SKIP: how many of the chain's first addresses are not callers (a back
 * chain's first slot, when the leaf made a frame but left its return
 * address in the link register).
 */
static uint64_t frameless_caller(struct guest *g, const struct qj_sample *r, uint64_t leaf,
				 size_t *skip)
{
	uint64_t sp = r->gregs[QJ_SP], fp = r->gregs[QJ_FP], at, val, base = fp, cfa;
	struct frame_rule rule;
	struct guest_abi abi;
	struct guest_loc loc;
	bool known;

	*skip = 0;
	guest_lookup(g, leaf, &loc);
	if (!loc.img || !loc.img->elf || !guest_abi(elf_file_machine(loc.img->elf), &abi) ||
	    !elf_file_frame_rule(loc.img->elf, loc.link, abi.ra, &rule))
		return 0;
	if (abi.backchain && !sample_word(r, sp, &base))
		base = 0;
	known = rule.cfa_reg == abi.sp || rule.cfa_reg == abi.fp;
	cfa = (rule.cfa_reg == abi.sp ? sp : fp) + rule.cfa_off;
	if (rule.ra == RA_IN_REG) {
		/* A frame of its own (the CFA is not where the caller's sp
		 * puts it), so the chain's first slot, in its caller's frame,
		 * was not written by it.  (s390x leaves copy sp to fp without
		 * making a frame: the CFA's value tells, not its register.) */
		if (abi.backchain && known && cfa != sp + abi.cfa_base)
			*skip = 1;
		return abi.ra_in_lr ? r->gregs[QJ_LR] : 0;
	}
	if (rule.ra != RA_AT_CFA || !known)
		return 0;
	at = cfa + rule.ra_off;
	/* Saved where the chain's first return address is: it starts with it. */
	if (base && (at == base + abi.chain_ra[0] || at == base + abi.chain_ra[1]))
		return 0;
	return sample_word(r, at, &val) ? val : 0;
}

size_t unwind_fp(struct guest *g, const struct qj_sample *r, uint64_t leaf, uint64_t *pcs,
		 size_t max)
{
	size_t n = 0, skip;
	uint64_t caller;

	if (!max)
		return 0;
	pcs[n++] = leaf;
	caller = frameless_caller(g, r, leaf, &skip);
	if (caller && n < max)
		pcs[n++] = caller;
	for (uint32_t i = skip; i < r->nguest && i < QJ_GSTACK_MAX && n < max; i++)
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
	uint8_t *how;
	size_t n, max;
	/* Where libdwfl starts: the sample's registers, or a frame found by
	 * its function's prologue (LR 0: unknown). */
	uint64_t pc, sp, fp, lr;
	bool restart; /* PC is a return address: pcs[] has it already */
	/* The last frame libdwfl gave: its registers, where it knew them. */
	uint64_t last_sp, last_fp;
	bool last_sp_ok, last_fp_ok, last_activation;
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
	uint64_t val;

	(void)dwfl;
	(void)arg;
	if (!sample_word(dw.r, addr, &val))
		return false;
	*result = val;
	return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct guest_abi *abi = &dw.abi;
	Dwarf_Word sp = dw.sp, fp = dw.fp, lr = dw.lr;

	(void)arg;
	if (!dwfl_thread_state_registers(thread, abi->sp, 1, &sp) ||
	    !dwfl_thread_state_registers(thread, abi->fp, 1, &fp) ||
	    (abi->ra_in_lr && lr && !dwfl_thread_state_registers(thread, abi->ra, 1, &lr)))
		return false;
	dwfl_thread_state_register_pc(thread, dw.pc);
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
	Dwarf_Word v;
	bool activation, first = dw.restart;

	(void)arg;
	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	dw.restart = false;
	dw.last_sp_ok = !dwfl_frame_reg(state, dw.abi.sp, &v);
	if (dw.last_sp_ok)
		dw.last_sp = v;
	dw.last_fp_ok = !dwfl_frame_reg(state, dw.abi.fp, &v);
	if (dw.last_fp_ok)
		dw.last_fp = v;
	dw.last_activation = activation && !first;
	/* A frame found by its prologue is in pcs[] already. */
	if (first)
		return DWARF_CB_OK;
	if (dw.how)
		dw.how[dw.n] = UNWIND_CFI;
	dw.pcs[dw.n] = dw.n ? pc : dw.leaf;
	dw.n++;
	return dw.n < dw.max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/*
 * Rules found from code, by file and link address: a profile meets the same
 * pcs again and again, and reading a function's code costs 6-30 us.
 */
#define RULES_CACHED 512
static struct cached_rule {
	const struct elf_file *elf;
	uint64_t id; /* its build id's first bytes: a file freed and another read
			at the same address is not taken for it */
	uint64_t link;
	bool ok;
	struct prologue_rule r;
} rules[RULES_CACHED];

/* Does the guest's EM_ARM code at link address LINK of E look like A32?
 * GCC's A32 functions begin with an unconditional instruction (cond 0xe),
 * which Thumb code's first two halfwords seldom make. */
static bool arm_code_is_a32(struct elf_file *e, uint64_t link)
{
	uint8_t b[4];

	return elf_file_read(e, link, b, sizeof(b)) == sizeof(b) && (b[3] >> 4) == 0xe;
}

/*
 * The frame that called the one at PC (where it runs if ACTIVATION, else a
 * return address), whose function has no CFI: found by reading the
 * function's code from its start (naming/prologue.c), from the frame's SP,
 * FP and LR (0: unknown).  Its pc, sp and fp into *CALLER.  False when the
 * function is not known by name, has CFI (libdwfl's to follow, or the end
 * of the stack), or its code does not tell.
 */
static bool prologue_caller(struct guest *g, uint64_t pc, bool activation, uint64_t sp, uint64_t fp,
			    uint64_t lr, uint64_t caller[3])
{
	uint64_t at = activation ? pc : pc - 1, func, len, cfa, ra, word;
	struct prologue_rule pr = {0};
	const unsigned char *id = NULL;
	struct cached_rule *c;
	uint64_t key = 0;
	size_t id_len;
	struct frame_rule rule;
	struct guest_abi abi;
	struct guest_loc loc;
	uint16_t machine;
	uint8_t *code;
	bool ok, thumb;

	guest_lookup(g, at, &loc);
	if (!loc.name || !loc.img || !loc.img->elf || at < loc.sym_start)
		return false;
	machine = elf_file_machine(loc.img->elf);
	if (!guest_abi(machine, &abi) || elf_file_frame_rule(loc.img->elf, loc.link, abi.ra, &rule))
		return false;
	func = loc.link - (at - loc.sym_start);
	len = loc.until > loc.sym_start ? loc.until - loc.sym_start : 0;
	if (len > (256u << 10))
		len = 256u << 10;
	if (pc - loc.sym_start >= len)
		return false;
	thumb = machine == EM_ARM && ((pc & 1) || !arm_code_is_a32(loc.img->elf, func));
	id_len = elf_file_build_id(loc.img->elf, &id);
	memcpy(&key, id, id_len < sizeof(key) ? id_len : sizeof(key));
	c = &rules[(loc.link * 0x9e3779b97f4a7c15ull >> 55) % RULES_CACHED];
	if (c->elf == loc.img->elf && c->id == key && c->link == (loc.link | thumb)) {
		ok = c->ok;
		pr = c->r;
	} else {
		code = xmalloc(len);
		len = elf_file_read(loc.img->elf, func, code, len);
		ok = len && prologue_rule(machine, thumb, code, len, func,
					  func + (pc & ~(uint64_t)1) - loc.sym_start, &pr);
		free(code);
		*c = (struct cached_rule){loc.img->elf, key, loc.link | thumb, ok, pr};
	}
	if (!ok || (pr.cfa_reg != abi.sp && pr.cfa_reg != abi.fp))
		return false;
	cfa = (pr.cfa_reg == abi.sp ? sp : fp) + (uint64_t)pr.cfa_off;
	if (pr.ra_saved && sample_word(dw.r, cfa + (uint64_t)pr.ra_off, &word))
		ra = word;
	else if (!pr.ra_saved && abi.ra_in_lr)
		ra = lr;
	else
		return false;
	/* A return address signed by PACIASP: its bits above the 48 of the
	 * address space are the code. */
	if (machine == EM_AARCH64)
		ra &= (1ull << 48) - 1;
	if (!ra || cfa <= sp)
		return false;
	caller[0] = ra;
	caller[1] = cfa;
	caller[2] = fp;
	if (pr.fp_saved && pr.fp_reg == abi.fp &&
	    !sample_word(dw.r, cfa + (uint64_t)pr.fp_off, &caller[2]))
		return false;
	return true;
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

size_t unwind_dwarf_how(struct guest *g, const struct qj_sample *r, uint64_t leaf, uint64_t *pcs,
			uint8_t *how, size_t max)
{
	uint64_t caller[3];
	bool activation = true;

	if (!max)
		return 0;
	pcs[0] = leaf;
	if (how)
		how[0] = UNWIND_CFI;
	if (!dw_prepare(g))
		return 1;
	dw.r = r;
	dw.leaf = leaf;
	dw.pcs = pcs;
	dw.how = how;
	dw.n = 0;
	dw.max = max;
	dw.pc = leaf;
	dw.sp = r->gregs[QJ_SP];
	dw.fp = r->gregs[QJ_FP];
	dw.lr = r->gregs[QJ_LR];
	dw.restart = false;
	dw.last_sp_ok = dw.last_fp_ok = false;
	dwfl_getthread_frames(dw.dwfl, r->hdr.tid, dw_frame, NULL);
	/* Code without CFI at the bottom (a bare-metal _start): libdwfl
	 * gives its frame twice, then stops. */
	if (dw.n > 2 && pcs[dw.n - 1] == pcs[dw.n - 2])
		dw.n--;
	/*
	 * libdwfl stops at a function without CFI (much of Debian's static
	 * riscv64 and Arm glibc): its caller from the function's code, as
	 * gdb's prologue analyzers find it, and libdwfl on from there.
	 */
	while (dw.n && dw.n < max) {
		uint64_t pc = pcs[dw.n - 1], sp, fp, lr = 0;

		if (dw.n == 1) {
			/* The leaf: the sample's registers. */
			sp = r->gregs[QJ_SP];
			fp = r->gregs[QJ_FP];
			lr = r->gregs[QJ_LR];
		} else if (dw.last_sp_ok) {
			sp = dw.last_sp;
			fp = dw.last_fp_ok ? dw.last_fp : 0;
			activation = dw.last_activation;
		} else {
			break;
		}
		if (dw.n == 1)
			activation = true;
		if (!prologue_caller(g, pc, activation, sp, fp, lr, caller))
			break;
		if (how)
			how[dw.n] = UNWIND_PROLOGUE;
		pcs[dw.n++] = caller[0];
		/* libdwfl from the caller: at its call instruction. */
		dw.pc = (caller[0] & ~(uint64_t)1) - 1;
		dw.sp = caller[1];
		dw.fp = caller[2];
		dw.lr = 0;
		dw.restart = true;
		dw.last_sp_ok = dw.last_fp_ok = false;
		dw.last_sp = caller[1];
		dw.last_fp = caller[2];
		dwfl_getthread_frames(dw.dwfl, r->hdr.tid, dw_frame, NULL);
		if (dw.restart || !dw.last_sp_ok) {
			/* libdwfl could not even start there: on from the caller's
			 * registers, as prologue analysis found them. */
			dw.last_sp_ok = true;
			dw.last_fp_ok = true;
		}
		activation = false;
	}
	return dw.n ? dw.n : 1;
}

size_t unwind_dwarf(struct guest *g, const struct qj_sample *r, uint64_t leaf, uint64_t *pcs,
		    size_t max)
{
	return unwind_dwarf_how(g, r, leaf, pcs, NULL, max);
}

void unwind_free(void)
{
	memset(rules, 0, sizeof(rules));
	if (dw.dwfl)
		dwfl_end(dw.dwfl);
	memset(&dw, 0, sizeof(dw));
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine/probes.h"
#include "engine/detach.h"
#include "engine/target.h"
#include "naming/ksyms.h"
#include "naming/elfnotes.h"
#include "profiler/sampler.h"
#include "util/procfile.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "qemu-jitbpf.h"
#include "sample.h"
#include "qemu-jitbpf.skel.h"

/* Most programs of ours, the sampler's included. */
#define MAX_PROGS 32

bool binary_is_stock(const char *path)
{
	static const char *const needed[] = {"translate_block", "tb_flush", "target_mmap",
					     "target_mmap_complete"};

	/* (Ours has those too: its own batches say which it is.) */
	if (elf_has_usdt(path, "qemu", "tb_gen_code_batch"))
		return false;
	for (size_t i = 0; i < sizeof(needed) / sizeof(*needed); i++)
		if (!elf_has_usdt(path, "qemu", needed[i]))
			return false;
	/* (A system emulator's target_mmap would be no guest's.) */
	return !elf_has_usdt(path, "qemu", "loader_write_rom");
}

int binary_init(struct binary *b, const char *path)
{
	struct stat st;

	memset(b, 0, sizeof(*b));
	if (stat(path, &st))
		return -errno;
	if (!elf_has_usdt(path, "qemu", "tb_gen_code_batch") ||
	    !elf_has_usdt(path, "qemu", "jit_attach_request")) {
		if (!binary_is_stock(path))
			return -ENOTSUP;
		b->stock = true;
		b->stock_overflow = elf_has_usdt(path, "qemu", "tb_gen_code_buffer_overflow");
	}
	b->path = xstrdup(path);
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	b->system = elf_has_usdt(path, "qemu", "loader_elf_image");
	b->fork_wait = elf_has_usdt(path, "qemu", "jit_fork_wait");
	b->guest_mmap = elf_has_usdt(path, "qemu", "linux_user_guest_mmap");
	b->calls_wait = elf_has_usdt(path, "qemu", "jit_calls_wait");
	b->counts = elf_has_usdt(path, "qemu", "jit_counts");
	b->vcpu_threads = elf_has_usdt(path, "qemu", "jit_vcpu_thread");
	return 0;
}

void binary_free(struct binary *b)
{
	free(b->path);
	b->path = NULL;
}

void linkset_add(struct linkset *ls, struct bpf_link *l)
{
	grow(&ls->v, &ls->cap, ls->n + 1, sizeof(*ls->v));
	ls->v[ls->n++] = l;
}

void linkset_clear(struct linkset *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		bpf_link__destroy(ls->v[i]);
	ls->n = 0;
}

/* Load, and so verify, only the programs this run attaches. */
static void choose_programs(struct qemu_jitbpf_bpf *skel, const struct probe_opts *o)
{
	bpf_program__set_autoload(skel->progs.tcg_prologue, o->code);
	bpf_program__set_autoload(skel->progs.tb_flush, o->code);
	bpf_program__set_autoload(skel->progs.tb_gen_code_batch, o->code);
	bpf_program__set_autoload(skel->progs.jitdump_marker, o->jitdump);
	bpf_program__set_autoload(skel->progs.jit_calls, o->calls);
	bpf_program__set_autoload(skel->progs.jit_calls_wait, o->calls);
	bpf_program__set_autoload(skel->progs.jit_counts, o->counts);
	/* Where guest images come from: linux-user's ELF loader, or the
	 * system emulator's (-kernel, -device loader). */
	bpf_program__set_autoload(skel->progs.linux_user_elf_image, o->linux_user);
	bpf_program__set_autoload(skel->progs.linux_user_guest_base, o->linux_user);
	bpf_program__set_autoload(skel->progs.linux_user_guest_mmap, o->linux_user);
	bpf_program__set_autoload(skel->progs.loader_elf_image, o->system);
	bpf_program__set_autoload(skel->progs.jit_guest_ram, o->system && o->profile);
	bpf_program__set_autoload(skel->progs.jit_fork_wait, o->tree);
	bpf_program__set_autoload(skel->progs.translate_block, o->stock && o->code);
	bpf_program__set_autoload(skel->progs.tb_gen_code_buffer_overflow, o->stock && o->code);
	bpf_program__set_autoload(skel->progs.target_mmap, o->stock);
	bpf_program__set_autoload(skel->progs.target_mmap_complete, o->stock);
}

int probes_load(struct probes *p, const struct probe_opts *o)
{
	int err;

	p->o = *o;
	p->skel = qemu_jitbpf_bpf__open();
	if (!p->skel) {
		err = -errno;
		pr_err("cannot open the BPF programs: %s", strerror(-err));
		return err;
	}
	choose_programs(p->skel, o);
	/*
	 * The process maps are preallocated (an element the fork program
	 * allocated on the spot could fail), and preallocating 16 384
	 * elements costs ~5 ms a map: a tree's live processes fit in 4 096,
	 * and -a leaves the tree map empty.
	 */
	err = bpf_map__set_max_entries(p->skel->maps.events, o->ring_bytes);
	if (!err)
		err = bpf_map__set_max_entries(p->skel->maps.procs,
					       o->tree ? QJ_TREE_PROCS_MAX : QJ_PROCS_MAX);
	if (!err)
		err = bpf_map__set_max_entries(p->skel->maps.tree, o->tree ? QJ_TREE_PROCS_MAX : 1);
	/* (An LRU map is preallocated too: 1.3 ms for nothing without calls.) */
	if (!err && !o->calls)
		err = bpf_map__set_max_entries(p->skel->maps.calls_lost, 1);
	p->skel->rodata->wake_bytes = QJ_WAKE_BYTES(o->ring_bytes);
	p->skel->rodata->follow_tree = o->tree;
	p->skel->rodata->stock = o->stock;
	/* QEMU 10.2.2's TranslationBlock, checked at every translate_block. */
	p->skel->rodata->tb_layout.ptr_off = QJ_STOCK_TB_PTR;
	p->skel->rodata->tb_layout.size_off = QJ_STOCK_TB_PTR + 8;
	p->skel->rodata->tb_layout.guest_size_off = QJ_STOCK_TB_GUEST_SIZE;
	p->skel->rodata->task_pid_off = o->layout.task_pid;
	p->skel->rodata->task_tgid_off = o->layout.task_tgid;
	p->skel->rodata->task_signal_off = o->layout.task_signal;
	p->skel->rodata->signal_live_off = o->layout.signal_live;
	p->skel->rodata->signal_runtime_off = o->layout.signal_runtime;
	p->skel->rodata->task_runtime_off = o->layout.task_se + o->layout.se_runtime;
	p->skel->rodata->task_start_off = o->layout.task_start;
	p->skel->rodata->task_leader_off = o->layout.task_group_leader;
	p->skel->rodata->bprm_interp_off = o->layout.bprm_interp;
	p->skel->rodata->task_mm_off = o->layout.task_mm;
	p->skel->rodata->mm_arg_start_off = o->layout.mm_arg_start;
	p->skel->rodata->mm_arg_end_off = o->layout.mm_arg_end;
	p->skel->rodata->pidns = o->layout.pidns;
	if (!err)
		err = qemu_jitbpf_bpf__load(p->skel);
	if (err)
		pr_err("cannot load the BPF programs: %s", strerror(-err));
	return err;
}

int probes_ring_fd(const struct probes *p)
{
	return bpf_map__fd(p->skel->maps.events);
}

int probes_procs_fd(const struct probes *p)
{
	return bpf_map__fd(p->skel->maps.procs);
}

static int add_link(struct linkset *ls, struct bpf_link *l, const char *what, const char *binary)
{
	if (!l) {
		int err = -errno;

		pr_err("cannot attach to qemu:%s in %s: %s", what, binary, strerror(-err));
		return err;
	}
	linkset_add(ls, l);
	return 0;
}

void probes_stock_sweep(struct probes *p, uint64_t now, uint64_t age_ns,
			void (*fn)(void *ctx, const struct qj_block *r), void *ctx)
{
	int fd = bpf_map__fd(p->skel->maps.stock_blocks);
	struct qj_stock_key key, next, old[64];
	struct qj_stock_block b;
	size_t n = 0;
	void *prev = NULL;

	if (!p->o.stock)
		return;
	while (n < sizeof(old) / sizeof(*old) && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (!bpf_map_lookup_elem(fd, &key, &b) && b.ts + age_ns < now)
			old[n++] = key;
	}
	for (size_t i = 0; i < n; i++) {
		struct qj_block r = {.hdr = {.type = QJ_EV_BLOCK, .pid = old[i].pid}};
		/* The TB from its guest size on: size, icount, tc.ptr, tc.size. */
		struct {
			__u16 guest_size, icount;
			__u32 pad;
			__u64 ptr, size;
		} tb;

		_Static_assert(QJ_STOCK_TB_PTR - QJ_STOCK_TB_GUEST_SIZE == 8, "TB layout");
		/* Looked up again: the BPF side may have finished it since. */
		if (bpf_map_lookup_elem(fd, &old[i], &b) || bpf_map_delete_elem(fd, &old[i]))
			continue;
		if (!proc_mem_read(old[i].pid, old[i].tb + QJ_STOCK_TB_GUEST_SIZE, &tb,
				   sizeof(tb)) ||
		    tb.ptr != b.code || !tb.size || tb.size > QJ_TB_MAX_CODE)
			continue;
		r.hdr.tid = b.tid;
		r.hdr.ts = b.ts;
		r.pc = b.pc;
		r.host = tb.ptr;
		r.size = tb.size;
		r.guest_size = tb.guest_size;
		fn(ctx, &r);
	}
}

/* Does binary B have the probe PROG is named after? */
static bool has_probe(const struct probes *p, const struct binary *b,
		      const struct bpf_program *prog)
{
	const struct qemu_jitbpf_bpf *s = p->skel;
	bool stock_prog = prog == s->progs.translate_block ||
			  prog == s->progs.tb_gen_code_buffer_overflow ||
			  prog == s->progs.target_mmap || prog == s->progs.target_mmap_complete;

	/* A stock QEMU: those, and the flush. */
	if (prog == s->progs.tb_gen_code_buffer_overflow)
		return b->stock_overflow;
	if (b->stock || stock_prog)
		return b->stock && (stock_prog || prog == s->progs.tb_flush);
	if (prog == s->progs.linux_user_elf_image || prog == s->progs.linux_user_guest_base)
		return !b->system;
	if (prog == s->progs.loader_elf_image || prog == s->progs.jit_guest_ram)
		return b->system;
	if (prog == s->progs.jit_fork_wait)
		return b->fork_wait;
	if (prog == s->progs.linux_user_guest_mmap)
		return b->guest_mmap;
	if (prog == s->progs.jit_calls_wait)
		return b->calls_wait;
	if (prog == s->progs.jit_counts)
		return b->counts;
	return true;
}

int probes_attach_follow(struct probes *p, const struct binary *b, pid_t pid, struct linkset *ls)
{
	struct bpf_program *prog = p->skel->progs.jit_fork_wait;

	if (!bpf_program__autoload(prog) || !has_probe(p, b, prog))
		return 0;
	return add_link(ls,
			bpf_program__attach_usdt(prog, pid, b->path, "qemu", "jit_fork_wait", NULL),
			"jit_fork_wait", b->path);
}

int probes_attach(struct probes *p, const struct binary *b, pid_t pid, struct linkset *ls)
{
	struct bpf_program *prog, *attach = p->skel->progs.jit_attach;
	int err;

	bpf_object__for_each_program(prog, p->skel->obj)
	{
		const char *name = bpf_program__name(prog);

		if (!bpf_program__autoload(prog) ||
		    strncmp(bpf_program__section_name(prog), "usdt", 4) || prog == attach ||
		    prog == p->skel->progs.jit_fork_wait || !has_probe(p, b, prog))
			continue;
		err = add_link(ls, bpf_program__attach_usdt(prog, pid, b->path, "qemu", name, NULL),
			       name, b->path);
		if (err == -EINVAL && b->stock)
			pr_err("%s: its probe's arguments are in a form libbpf cannot read (a QEMU "
			       "built with STAP_SDT_ARG_CONSTRAINT=g?): use one built with our "
			       "probes (make qemu)",
			       b->path);
		if (err)
			return err;
	}
	/* (A stock QEMU has no handshake: what it translates from now on is
	 * all we see.) */
	if (b->stock)
		return 0;
	return add_link(ls,
			bpf_program__attach_usdt(attach, pid, b->path, "qemu", "jit_attach", NULL),
			"jit_attach", b->path);
}

int probes_attach_tasks(struct probes *p, struct linkset *ls)
{
	struct bpf_program *progs[] = {p->skel->progs.qemu_fork, p->skel->progs.qemu_exec,
				       p->skel->progs.qemu_exit};

	for (size_t i = 0; i < sizeof(progs) / sizeof(*progs); i++) {
		struct bpf_link *l = bpf_program__attach(progs[i]);

		if (!l) {
			int err = -errno;

			pr_err("cannot attach %s: %s", bpf_program__name(progs[i]), strerror(-err));
			return err;
		}
		linkset_add(ls, l);
	}
	return 0;
}

int probes_known(struct probes *p, pid_t pid, uint64_t guest_base)
{
	struct qj_proc v = {.guest_base = guest_base};
	__u32 key = pid;

	if (bpf_map__update_elem(p->skel->maps.procs, &key, sizeof(key), &v, sizeof(v),
				 BPF_NOEXIST) &&
	    errno != EEXIST)
		return -errno;
	return 0;
}

int probes_follow(struct probes *p, pid_t pid)
{
	__u32 key = pid, one = 1;

	if (bpf_map__update_elem(p->skel->maps.tree, &key, sizeof(key), &one, sizeof(one),
				 BPF_ANY)) {
		pr_err("cannot follow pid %d: %s", pid, strerror(errno));
		return -errno;
	}
	return 0;
}

unsigned long long probes_lost(const struct probes *p)
{
	return p->skel->bss->counters[QJ_LOST_RECORDS] + p->skel->bss->counters[QJ_LOST_CALLS] +
	       p->skel->bss->counters[QJ_LOST_COUNTS];
}

unsigned long long probes_lost_tbs(const struct probes *p)
{
	return p->skel->bss->counters[QJ_LOST_TBS];
}

unsigned long long probes_lost_calls(const struct probes *p)
{
	return p->skel->bss->counters[QJ_LOST_CALLS];
}

unsigned long long probes_lost_counts(const struct probes *p)
{
	return p->skel->bss->counters[QJ_LOST_COUNTS];
}

int probes_collect(struct probes *p, const struct sampler *sm, int **fds)
{
	int progs[MAX_PROGS], n = detach_prog_fds(p->skel->obj, sm, progs, MAX_PROGS);

	return detach_collect(progs, n, 0, NULL, fds, NULL);
}

void probes_note(struct probes *p, const struct sampler *sm, pid_t pid, struct linkset *ls)
{
	int progs[MAX_PROGS], n = detach_prog_fds(p->skel->obj, sm, progs, MAX_PROGS), *fds;
	__u32 *ids;

	n = detach_collect(progs, n, pid, &p->link_cursor, &fds, &ids);
	ls->ids = xrealloc(ls->ids, (ls->nids + n + 1) * sizeof(*ls->ids));
	for (int i = 0; i < n; i++) {
		close(fds[i]);
		ls->ids[ls->nids++] = ids[i];
	}
	free(fds);
	free(ids);
}

void probes_release(struct probes *p, const struct sampler *sm, struct linkset *ls)
{
	int progs[MAX_PROGS], n = detach_prog_fds(p->skel->obj, sm, progs, MAX_PROGS), *fds;

	n = detach_reopen(progs, n, ls->ids, ls->nids, &fds);
	linkset_clear(ls);
	free(ls->ids);
	ls->ids = NULL;
	ls->nids = 0;
	probes_drop(fds, n, true);
}

void probes_drop(int *fds, int n, bool background)
{
	if (background)
		detach_handoff(fds, n);
	else
		detach_close(fds, n);
	free(fds);
}

void probes_report_time(const struct probes *p, const struct sampler *sm)
{
	int fds[MAX_PROGS], n = detach_prog_fds(p->skel->obj, sm, fds, MAX_PROGS);
	uint64_t ns = 0, runs = 0;

	for (int i = 0; i < n; i++) {
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);

		if (bpf_prog_get_info_by_fd(fds[i], &info, &len) || !info.run_cnt)
			continue;
		pr_dbg("BPF program %s: %.3f ms in %llu runs", info.name, info.run_time_ns / 1e6,
		       (unsigned long long)info.run_cnt);
		ns += info.run_time_ns;
		runs += info.run_cnt;
	}
	pr_dbg("BPF programs: %.3f ms in %" PRIu64 " runs", ns / 1e6, runs);
}

/*
 * One program's functions, named as /proc/kallsyms names them; BTF names
 * the functions: for ours, their object's (the kernel's copy has the same
 * type ids, and reading it back is a syscall valgrind does not know).
 * The program's id, or 0.
 */
static __u32 name_prog(int fd, const struct btf *btf)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info), nsyms, nlens, ntags, nfuncs, recsz;
	__u64 *syms = NULL;
	__u32 *lens = NULL;
	unsigned char(*tags)[BPF_TAG_SIZE] = NULL;
	char *funcs = NULL;

	if (bpf_prog_get_info_by_fd(fd, &info, &len) || !info.nr_jited_ksyms)
		return 0;
	nsyms = info.nr_jited_ksyms;
	nlens = info.nr_jited_func_lens;
	ntags = info.nr_prog_tags;
	nfuncs = info.nr_func_info;
	recsz = info.func_info_rec_size;
	syms = xcalloc(nsyms, sizeof(*syms));
	lens = xcalloc(nlens ? nlens : 1, sizeof(*lens));
	tags = xcalloc(ntags ? ntags : 1, sizeof(*tags));
	funcs = xcalloc(nfuncs ? nfuncs : 1, recsz ? recsz : 1);
	memset(&info, 0, sizeof(info));
	info.nr_jited_ksyms = nsyms;
	info.jited_ksyms = (__u64)(uintptr_t)syms;
	info.nr_jited_func_lens = nlens;
	info.jited_func_lens = (__u64)(uintptr_t)lens;
	info.nr_prog_tags = ntags;
	info.prog_tags = (__u64)(uintptr_t)tags;
	info.nr_func_info = nfuncs;
	info.func_info_rec_size = recsz;
	info.func_info = (__u64)(uintptr_t)funcs;
	len = sizeof(info);
	if (bpf_prog_get_info_by_fd(fd, &info, &len))
		goto out;
	for (__u32 i = 0; i < nsyms && i < nlens; i++) {
		char name[128], *p = name;
		const char *fn = info.name;

		if (!syms[i]) /* addresses hidden (kptr_restrict) */
			continue;
		p += sprintf(p, "bpf_prog_");
		/* The program is listed with its own tag, its subprograms with
		 * theirs. */
		for (int b = 0; b < BPF_TAG_SIZE; b++)
			p += sprintf(p, "%02x", !i ? info.tag[b] : i < ntags ? tags[i][b] : 0);
		if (btf && i < nfuncs) {
			const struct bpf_func_info *f = (const void *)(funcs + (size_t)i * recsz);
			const struct btf_type *t = btf__type_by_id(btf, f->type_id);

			if (t)
				fn = btf__name_by_offset(btf, t->name_off);
		}
		if (fn && *fn)
			snprintf(p, name + sizeof(name) - p, "_%s", fn);
		ksym_add(syms[i], lens[i], name);
	}
out:
	free(syms);
	free(lens);
	free(tags);
	free(funcs);
	return info.id;
}

static bool has_id(const __u32 *ids, size_t n, __u32 id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/*
 * Every other program on the host, named with the kernel's copy of its
 * BTF: a sampled QEMU thread is also in the uprobe programs of another
 * qemu-jitbpf (one attached to the same binary, or an earlier run whose
 * detach helper still closes its links), and these, loaded in module
 * space, are outside the cached kernel text.
 */
static void name_others(const __u32 *ours, size_t nours)
{
	struct btf *btf = NULL;
	__u32 id = 0, btf_id = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		int fd;

		if (has_id(ours, nours, id))
			continue;
		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;
		/* An object's programs share its BTF, and come one after another. */
		if (bpf_prog_get_info_by_fd(fd, &info, &len)) {
			close(fd);
			continue;
		}
		if (info.btf_id != btf_id) {
			btf__free(btf);
			btf_id = info.btf_id;
			btf = btf_id ? btf__load_from_kernel_by_id(btf_id) : NULL;
		}
		name_prog(fd, btf);
		close(fd);
	}
	btf__free(btf);
}

void probes_name_progs(const struct probes *p, const struct sampler *sm)
{
	const struct bpf_object *objs[] = {p->skel->obj, sm ? sampler_object(sm) : NULL};
	size_t nours = 0, cap = 0;
	__u32 *ours = NULL;

	for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		struct bpf_program *prog;

		if (!objs[i])
			continue;
		bpf_object__for_each_program(prog, objs[i])
		{
			if (bpf_program__fd(prog) < 0)
				continue;
			grow(&ours, &cap, nours + 1, sizeof(*ours));
			ours[nours++] = name_prog(bpf_program__fd(prog), bpf_object__btf(objs[i]));
		}
	}
	name_others(ours, nours);
	free(ours);
}

void probes_free(struct probes *p)
{
	qemu_jitbpf_bpf__destroy(p->skel);
	p->skel = NULL;
}

void probes_each_calls_lost(struct probes *p, bool (*fn)(void *ctx, uint32_t tid, uint64_t lost),
			    void *ctx)
{
	int fd = bpf_map__fd(p->skel->maps.calls_lost);
	__u32 key, next, *prev = NULL, *done = NULL;
	size_t ndone = 0;
	__u64 lost;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &lost) && lost && fn(ctx, next, lost)) {
			done = xrealloc(done, (ndone + 1) * sizeof(*done));
			done[ndone++] = next;
		}
		key = next;
		prev = &key;
	}
	/* Marked: not to be marked again by a later tree's end. */
	for (size_t i = 0; i < ndone; i++)
		bpf_map_delete_elem(fd, &done[i]);
	free(done);
}

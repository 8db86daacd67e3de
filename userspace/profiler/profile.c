// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/profile.h"
#include "util/strtab.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A process followed now; its strings are its own. */
struct proc_name {
	pid_t pid;
	char *root;    /* COMM-PID, after its parents' if known */
	char *parents; /* PARENT-ROOT;... (profile_set_parent()), or NULL */
	struct proc_labels labels;
};

static void proc_name_free(struct proc_name *n)
{
	free(n->root);
	free(n->parents);
	free((char *)n->labels.qemu);
	free((char *)n->labels.arch);
	free((char *)n->labels.command);
	free((char *)n->labels.cgroup);
}

void profile_init(struct profile *p, unsigned int freq)
{
	memset(p, 0, sizeof(*p));
	p->freq = freq;
}

static uint64_t hash_stack(pid_t tid, const struct frame *f, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)tid;

	for (size_t i = 0; i < n; i++) {
		h = (h ^ (uintptr_t)f[i].name) * 0x100000001b3ull;
		h = (h ^ f[i].addr ^ ((uint64_t)f[i].kind << 56)) * 0x100000001b3ull;
	}
	return h | 1;
}

static bool same(const struct stack *s, const char *root, pid_t tid, enum sample_where where,
		 const struct frame *f, size_t n)
{
	if (s->root != root || s->tid != tid || s->where != where || s->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s->frames[i].name != f[i].name || s->frames[i].addr != f[i].addr ||
		    s->frames[i].kind != f[i].kind)
			return false;
	return true;
}

static void rehash(struct profile *p)
{
	size_t cap = p->cap ? p->cap * 2 : 1024;
	struct stack **t = xcalloc(cap, sizeof(*t));

	for (size_t i = 0; i < p->n; i++) {
		size_t k = p->v[i]->hash & (cap - 1);

		while (t[k])
			k = (k + 1) & (cap - 1);
		t[k] = p->v[i];
	}
	free(p->tab);
	p->tab = t;
	p->cap = cap;
}

static const char *keep(struct profile *p, const char *s)
{
	return s ? strtab_add(&p->names, s) : NULL;
}

static const struct proc_name *proc_of(const struct profile *p, pid_t pid)
{
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == pid)
			return &p->procs[i];
	return NULL;
}

/* F as a profile keeps it: what the writers need of its file, copied. */
static struct frame described(struct profile *p, const struct frame *f)
{
	struct frame d = *f;
	const unsigned char *id;
	char hex[129];
	size_t n;

	d.elf = NULL;
	if (!f->elf)
		return d;
	n = elf_file_build_id(f->elf, &id);
	for (size_t i = 0; i < n && i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	hex[2 * (n < 64 ? n : 64)] = 0;
	elf_file_range(f->elf, &d.img.lo, &d.img.hi);
	d.img.lo += f->bias;
	d.img.hi += f->bias;
	d.img.path = keep(p, elf_file_path(f->elf));
	d.img.build_id = keep(p, hex);
	d.file = NULL;
	d.line = 0;
	if (f->kind == FRAME_GUEST && elf_file_line(f->elf, f->addr - f->bias, &d.file, &d.line))
		d.file = keep(p, d.file);
	return d;
}

void profile_add(struct profile *p, pid_t pid, pid_t tid, enum sample_where where,
		 const struct frame *frames, size_t n, uint64_t ns, uint64_t ts)
{
	const struct proc_name *proc = proc_of(p, pid);
	struct frame f[n ? n : 1];
	char buf[32];
	const char *root;
	uint64_t h;
	struct stack *s;
	size_t k;

	if (p->after && ts >= p->split_ns)
		p = p->after;
	/* The profile's own copies of the names: their holders (a process's
	 * guest, an ELF file) may be gone by the time it is written. */
	root = keep(p, proc ? proc->root : profile_root(p, pid, buf));
	for (size_t i = 0; i < n; i++) {
		f[i] = frames[i];
		f[i].name = keep(p, frames[i].name);
	}
	h = hash_stack(tid, f, n) ^ where ^ ((uintptr_t)root << 8);
	if ((p->n + 1) * 2 > p->cap)
		rehash(p);
	for (k = h & (p->cap - 1); (s = p->tab[k]); k = (k + 1) & (p->cap - 1))
		if (s->hash == h && same(s, root, tid, where, f, n))
			break;
	if (!s) {
		s = xcalloc(1, sizeof(*s));
		s->root = root;
		if (proc)
			s->labels = (struct proc_labels){
				keep(p, proc->labels.qemu), keep(p, proc->labels.arch),
				keep(p, proc->labels.cgroup), keep(p, proc->labels.command)};
		s->pid = pid;
		s->tid = tid;
		s->where = where;
		s->n = n;
		s->hash = h;
		s->frames = xmalloc((n ? n : 1) * sizeof(*f));
		for (size_t i = 0; i < n; i++)
			s->frames[i] = described(p, &f[i]);
		p->tab[k] = s;
		grow(&p->v, &p->vcap, p->n + 1, sizeof(*p->v));
		p->v[p->n++] = s;
	}
	s->count++;
	s->ns += ns;
	p->samples++;
	p->ns += ns;
	if (where == IN_OFFCPU)
		p->off_ns += ns;
	if (!p->start_ns || ts < p->start_ns)
		p->start_ns = ts;
	if (ts > p->end_ns)
		p->end_ns = ts;
}

/* PID's binary and cgroup, while /proc says them. */
static struct proc_labels labels_of(pid_t pid)
{
	struct proc_labels l = {0};
	char path[64], exe[4096], *cg, *line;
	const char *arch;
	size_t len;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		text_clean(exe, n);
		l.qemu = xstrdup(path_base(exe));
		arch = qemu_arch(exe, &len);
		if (arch && len < 32)
			l.arch = xasprintf("%.*s", (int)len, arch);
	}
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	cg = read_all(path, &len, 512);
	/* cgroup v2: "0::/system.slice/docker-ID.scope". */
	for (line = cg; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, "0::", 3)) {
			len = strcspn(line + 3, "\n");
			text_clean(line + 3, len);
			l.cgroup = xasprintf("%.*s", (int)len, line + 3);
			break;
		}
	free(cg);
	return l;
}

void profile_see_process(struct profile *p, pid_t pid)
{
	char path[64], comm[64] = "", *parents = NULL;
	struct proc_name *n = (struct proc_name *)proc_of(p, pid);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	/* flamegraph.pl splits on ';' and the count on the last space. */
	for (char *c = comm; *c; c++)
		if (*c == ';' || *c == ' ')
			*c = '_';
	/* After an exec, the pid's stacks from then on are the new program's
	 * (its parents are the same). */
	if (n) {
		parents = n->parents;
		n->parents = NULL;
		proc_name_free(n);
	} else {
		grow(&p->procs, &p->procs_cap, p->nprocs + 1, sizeof(*p->procs));
		n = &p->procs[p->nprocs++];
	}
	*n = (struct proc_name){
		.pid = pid,
		.root = parents ? xasprintf("%s;%s-%d", parents, comm[0] ? comm : "qemu", pid)
				: xasprintf("%s-%d", comm[0] ? comm : "qemu", pid),
		.parents = parents,
		.labels = labels_of(pid),
	};
}

const char *profile_root_next(const char **at, char *buf, size_t size)
{
	const char *r = *at, *end;

	if (!r)
		return NULL;
	end = r + strcspn(r, ";");
	snprintf(buf, size, "%.*s", (int)(end - r), r);
	*at = *end ? end + 1 : NULL;
	return buf;
}

void profile_set_command(struct profile *p, pid_t pid, const char *command)
{
	struct proc_name *n = (struct proc_name *)proc_of(p, pid);

	if (n && !n->labels.command && command && *command)
		n->labels.command = xstrdup(command);
}

void profile_set_parent(struct profile *p, pid_t pid, pid_t ppid)
{
	struct proc_name *n = (struct proc_name *)proc_of(p, pid);
	const struct proc_name *up = proc_of(p, ppid);
	const char *own;
	char *root;

	if (!n || !up || ppid == pid || n->parents)
		return;
	own = strrchr(n->root, ';');
	own = own ? own + 1 : n->root;
	root = xasprintf("%s;%s", up->root, own);
	n->parents = xstrdup(up->root);
	free(n->root);
	n->root = root;
}

void profile_forget_process(struct profile *p, pid_t pid)
{
	struct proc_name *n = (struct proc_name *)proc_of(p, pid);

	if (n) {
		proc_name_free(n);
		*n = p->procs[--p->nprocs];
	}
}

const char *profile_root(const struct profile *p, pid_t pid, char buf[32])
{
	const struct proc_name *n = proc_of(p, pid);

	if (n)
		return n->root;
	snprintf(buf, 32, "qemu-%d", pid);
	return buf;
}

void profile_reset(struct profile *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i]->frames);
		free(p->v[i]);
	}
	strtab_free(&p->names);
	if (p->tab)
		memset(p->tab, 0, p->cap * sizeof(*p->tab));
	p->n = 0;
	p->samples = p->ns = p->off_ns = 0;
	p->start_ns = p->end_ns = 0;
}

void profile_take(struct profile *dst, struct profile *src)
{
	profile_reset(dst);
	free(dst->tab);
	free(dst->v);
	dst->tab = src->tab;
	dst->cap = src->cap;
	dst->n = src->n;
	dst->v = src->v;
	dst->vcap = src->vcap;
	dst->samples = src->samples;
	dst->ns = src->ns;
	dst->off_ns = src->off_ns;
	dst->start_ns = src->start_ns;
	dst->end_ns = src->end_ns;
	strtab_swap(&dst->names, &src->names);
	src->tab = NULL;
	src->v = NULL;
	src->cap = src->vcap = src->n = 0;
	src->samples = src->ns = src->start_ns = src->end_ns = 0;
}

void profile_free(struct profile *p)
{
	profile_reset(p);
	free(p->tab);
	free(p->v);
	for (size_t i = 0; i < p->nprocs; i++)
		proc_name_free(&p->procs[i]);
	free(p->procs);
	memset(p, 0, sizeof(*p));
}

uint64_t profile_weight(const struct profile *p, const struct stack *s)
{
	return p->wall ? s->ns : s->count;
}

const char *frame_label(const struct frame *f, char *buf, size_t size)
{
	static const char *const mark[] = {
		[FRAME_GUEST] = "",
		[FRAME_QEMU] = "_[q]",
		[FRAME_KERNEL] = "_[k]",
	};

	snprintf(buf, size, "%s%s", f->name, mark[f->kind]);
	/* A ';' would split the frame in two. */
	for (char *c = buf; *c; c++)
		if (*c == ';')
			*c = ':';
	return buf;
}

int profile_write(const struct profile *p, const char *path, uid_t uid, gid_t gid, uint64_t *bytes)
{
	struct safe_file sf;
	long size;
	int err;

	err = safe_file_create(&sf, path, 0644, uid, gid);
	if (err)
		return err;
	if (before_suffix(path, ".pb.gz"))
		err = pprof_write(p, sf.f);
	else if (before_suffix(path, ".svg"))
		err = flamegraph_write(p, sf.f, path_base(path));
	else
		err = folded_write(p, sf.f);
	if (!err && fflush(sf.f))
		err = -errno;
	size = ftell(sf.f);
	if (err) {
		pr_err("writing %s: %s", path, strerror(-err));
		safe_file_abort(&sf);
		return err;
	}
	err = safe_file_commit(&sf);
	if (err)
		return err;
	if (size > 0)
		*bytes += size;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/guest.h"
#include "naming/codemap.h"
#include "util/strtab.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A page that /proc/PID/maps did not cover is not looked up again soon. */
#define MISS_RETRY_NS 1000000000ull
#define MISS_SLOTS    1024

/*
 * The names a guest makes (image base names, guest-0xPC): a forked
 * process's guest shares its parent's, since the code map it copies names
 * code with them.
 */
struct guest_names {
	struct strtab t;
	unsigned int refs;
};

static void names_put(struct guest_names *n)
{
	if (n && !--n->refs) {
		strtab_free(&n->t);
		free(n);
	}
}

void guest_init(struct guest *g, pid_t pid)
{
	memset(g, 0, sizeof(*g));
	g->pid = pid;
	g->names = xcalloc(1, sizeof(*g->names));
	g->names->refs = 1;
	proc_view_open(&g->view, pid);
	g->miss_pages = xcalloc(MISS_SLOTS, sizeof(*g->miss_pages));
	g->miss_time = xcalloc(MISS_SLOTS, sizeof(*g->miss_time));
}

static void image_free(struct guest_image *img)
{
	elf_file_put(img->elf);
	free(img->path);
}

void guest_free(struct guest *g)
{
	for (size_t i = 0; i < g->nimgs; i++)
		image_free(&g->imgs[i]);
	for (size_t i = 0; i < g->nretired; i++)
		image_free(&g->retired[i]);
	free(g->imgs);
	free(g->retired);
	names_put(g->names);
	proc_view_close(&g->view);
	free(g->miss_pages);
	free(g->miss_time);
	free(g->seen);
}

void guest_set_base(struct guest *g, uint64_t base)
{
	g->base = base;
	g->base_known = true;
}

static const struct guest_image *find(const struct guest *g, uint64_t pc)
{
	size_t lo = count_le(g->imgs, g->nimgs, sizeof(*g->imgs),
			     offsetof(struct guest_image, start), pc);

	if (lo && pc < g->imgs[lo - 1].end)
		return &g->imgs[lo - 1];
	return NULL;
}

/* Is KEPT, an image's path (text_clean()ed), that of PATH? */
static bool same_path(const char *kept, const char *path)
{
	for (;; kept++, path++) {
		if (*kept != *path && !(*kept == '?' && text_ctl(*path)))
			return false;
		if (!*kept)
			return true;
	}
}

static unsigned int versions; /* of all guests */

/* IMG (its path and hold) is no longer mapped, but is kept while G lives:
 * its code map may still name code with the image's symbols. */
static void retire(struct guest *g, const struct guest_image *img)
{
	grow(&g->retired, &g->retired_cap, g->nretired + 1, sizeof(*g->retired));
	g->retired[g->nretired++] = *img;
}

/* Add an image, which holds ELF (the caller's hold passes to it). */
static void add(struct guest *g, const char *path, struct elf_file *elf, uint64_t bias,
		uint64_t start, uint64_t end, bool user)
{
	struct guest_image img;
	size_t i, j;

	if (end <= start) {
		elf_file_put(elf);
		return;
	}
	for (i = 0; i < g->nimgs; i++) {
		bool overlap = g->imgs[i].start < end && start < g->imgs[i].end;

		/* Already known as it is (the handshake reports images
		 * again), or covered by what the user said? */
		if ((overlap && g->imgs[i].user && !user) ||
		    (g->imgs[i].start == start && g->imgs[i].end == end &&
		     g->imgs[i].bias == bias && same_path(g->imgs[i].path, path))) {
			elf_file_put(elf);
			return;
		}
	}
	img = (struct guest_image){
		.start = start,
		.end = end,
		.bias = bias,
		.elf = elf,
		.path = xstrdup_clean(path), /* for names */
		.user = user,
	};
	img.base = strtab_add(&g->names->t, path_base(img.path));
	/* A new mapping replaces whatever it overlaps. */
	for (i = j = 0; i < g->nimgs; i++) {
		if (g->imgs[i].start < end && start < g->imgs[i].end)
			retire(g, &g->imgs[i]);
		else
			g->imgs[j++] = g->imgs[i];
	}
	g->nimgs = j;
	grow(&g->imgs, &g->cap, g->nimgs + 1, sizeof(*g->imgs));
	for (i = g->nimgs; i > 0 && g->imgs[i - 1].start > start; i--)
		g->imgs[i] = g->imgs[i - 1];
	g->imgs[i] = img;
	g->nimgs++;
	/*
	 * Never one another guest had: the dwarf unwinder keeps its Dwfl by
	 * guest and version, and a guest freed (an exec) is often made again
	 * at the same address, with as many images.
	 */
	g->version = ++versions;
	pr_dbg("guest image %s at 0x%" PRIx64 "-0x%" PRIx64 " bias 0x%" PRIx64 "%s", path, start,
	       end, bias, img.elf ? "" : " (no symbols)");
}

struct mapped_query {
	const char *path;
	uint64_t host;
	int fd;
	pid_t pid;
};

/*
 * The mapping that holds q->host, if it maps q->path: open its file.  (Our
 * /proc shows a path from our root: a chrooted QEMU's has its root before.)
 */
static bool mapping_of(const struct map_entry *m, void *ctx)
{
	struct mapped_query *q = ctx;
	size_t n = before_suffix(m->path, " (deleted)"), k = strlen(q->path);

	if (q->host < m->start || q->host >= m->end)
		return false;
	if (!n)
		n = strlen(m->path);
	if (n >= k && !strncmp(m->path + n - k, q->path, k))
		q->fd = mapped_open(q->pid, m->start, m->end, O_RDONLY);
	return true;
}

/*
 * The file of an image QEMU reports at guest address START: the one its
 * mapping holds (even if the path now names another), else the path in
 * QEMU's root.
 */
static int image_fd(struct guest *g, const char *path, uint64_t start)
{
	struct mapped_query q = {path, g->base + start, -1, g->pid};

	if (g->pid && g->base_known)
		maps_find(g->pid, mapping_of, &q);
	return q.fd >= 0 ? q.fd : view_open(&g->view, path, O_RDONLY);
}

/* E, PATH's ELF file (or NULL), has its bytes at OFFSET mapped at guest
 * address START: add its image, biased by its PT_LOAD segment there. */
static void add_mapping(struct guest *g, const char *path, struct elf_file *e, uint64_t start,
			uint64_t offset)
{
	const struct load_seg *seg = e ? elf_file_seg_at_offset(e, offset) : NULL;
	uint64_t lo, hi, bias;

	if (!seg) {
		elf_file_put(e);
		return;
	}
	bias = start - offset - seg->vaddr + seg->offset;
	elf_file_range(e, &lo, &hi);
	add(g, path, e, bias, lo + bias, hi + bias, false);
}

void guest_add_image(struct guest *g, const char *path, uint64_t bias, uint64_t start, uint64_t end,
		     bool user)
{
	struct elf_file *e = NULL;

	if (path[0] == '/') {
		int fd = image_fd(g, path, start);

		if (fd < 0)
			pr_dbg("cannot open %s: %s", path, strerror(-fd));
		e = elf_file_open(fd, path, &g->view);
	}
	add(g, path, e, bias, start, end, user);
}

void guest_add_mmap(struct guest *g, const char *path, uint64_t start, uint64_t end,
		    uint64_t offset)
{
	const struct guest_image *img = find(g, start);

	if (path[0] != '/' || (img && end <= img->end && same_path(img->path, path)))
		return;
	add_mapping(g, path, elf_file_open(image_fd(g, path, start), path, &g->view), start,
		    offset);
}

/*
 * OPT PATH[:BIAS]: the file (ELF, or symbol map if MAP), loaded, and BIAS;
 * NULL with the reason printed for bad input.
 */
static struct elf_file *parse_spec(const char *opt, const char *spec, bool map, uint64_t *bias)
{
	char *path = xstrdup(spec), *colon = strrchr(path, ':'), *end, why[128];
	struct elf_file *e;

	*bias = 0;
	if (colon) {
		errno = 0;
		*bias = strtoull(colon + 1, &end, 0);
		if (errno || end == colon + 1 || *end) {
			pr_err("%s %s: bias '%s' is not a number", opt, spec, colon + 1);
			free(path);
			return NULL;
		}
		*colon = 0;
	}
	e = map ? symbol_map_get(path, why, sizeof(why)) : elf_file_get(path);
	if (!e)
		pr_err("%s %s: %s", opt, path, map ? why : "not a readable ELF file");
	free(path);
	return e;
}

int guest_check_spec(const char *spec, bool map)
{
	uint64_t bias;
	struct elf_file *e = parse_spec(map ? "--guest-symbols" : "--guest-elf", spec, map, &bias);

	elf_file_put(e);
	return e ? 0 : -EINVAL;
}

/* Add file E as PATH with BIAS, over the range of its addresses. */
static void add_file(struct guest *g, const char *path, struct elf_file *e, uint64_t bias,
		     bool user)
{
	uint64_t lo, hi;

	elf_file_range(e, &lo, &hi);
	add(g, path, e, bias, lo + bias, hi + bias, user);
}

static int add_spec(struct guest *g, const char *opt, const char *spec, bool map)
{
	uint64_t bias;
	struct elf_file *e = parse_spec(opt, spec, map, &bias);

	if (!e)
		return -EINVAL;
	add_file(g, elf_file_path(e), e, bias, true);
	return 0;
}

int guest_add_elf_spec(struct guest *g, const char *spec)
{
	return add_spec(g, "--guest-elf", spec, false);
}

int guest_add_symbols_spec(struct guest *g, const char *spec)
{
	return add_spec(g, "--guest-symbols", spec, true);
}

void guest_add_loaded(struct guest *g, const char *path)
{
	struct elf_file *e = NULL;

	if (path[0] == '/')
		e = elf_file_open(view_open(&g->view, path, O_RDONLY), path, &g->view);

	if (e)
		add_file(g, path, e, 0, false);
}

struct maps_pc {
	struct guest *g;
	uint64_t host;
};

/* The file mapping that holds the host address: add its image. */
static bool image_at(const struct map_entry *m, void *ctx)
{
	struct maps_pc *q = ctx;
	struct guest *g = q->g;
	size_t len;
	char *path;

	if (q->host < m->start || q->host >= m->end)
		return false;
	if (m->path[0] != '/')
		return true;
	/* A deleted file is still there, through the mapping. */
	len = before_suffix(m->path, " (deleted)");
	if (!len)
		len = strlen(m->path);
	path = xasprintf("%.*s", (int)len, m->path);
	add_mapping(g, path,
		    elf_file_open(mapped_open(g->pid, m->start, m->end, O_RDONLY), path, &g->view),
		    m->start - g->base, m->offset);
	free(path);
	return true;
}

/* Look for the file mapping that holds guest address PC in QEMU's maps. */
static void scan_maps(struct guest *g, uint64_t pc)
{
	struct maps_pc q = {g, pc + g->base};

	g->maps_scans++;
	maps_find(g->pid, image_at, &q);
}

/* Each file mapping in the guest's space (none of QEMU's own below it). */
static bool image_any(const struct map_entry *m, void *ctx)
{
	struct maps_pc q = {ctx, m->start};

	if (m->start >= q.g->base)
		image_at(m, &q);
	return false;
}

void guest_add_mapped(struct guest *g)
{
	g->maps_scans++;
	maps_find(g->pid, image_any, g);
}

void guest_lookup(struct guest *g, uint64_t pc, struct guest_loc *loc)
{
	const struct guest_image *img = find(g, pc);
	const struct sym *s;
	uint64_t until;

	memset(loc, 0, sizeof(*loc));
	if (!img && g->pid && g->base_known) {
		uint64_t page = pc >> 12, now = mono_ns();
		size_t slot = (page * 0x9e3779b97f4a7c15ull) >> 54;

		if (g->miss_pages[slot] != page + 1 || now - g->miss_time[slot] > MISS_RETRY_NS) {
			scan_maps(g, pc);
			img = find(g, pc);
			if (!img) {
				g->miss_pages[slot] = page + 1;
				g->miss_time[slot] = now;
			}
		}
	}
	if (!img)
		return;
	loc->img = img;
	loc->link = pc - img->bias;
	loc->until = img->end;
	if (!img->elf)
		return;
	s = elf_file_sym_until(img->elf, loc->link, &until);
	if (until - loc->link < img->end - pc)
		loc->until = pc + (until - loc->link);
	if (!s)
		return;
	loc->name = elf_file_sym_name(img->elf, s);
	loc->raw = s->name;
	loc->sym_start = s->addr + img->bias;
}

void guest_lookup_next(struct guest *g, uint64_t pc, const struct guest_loc *prev,
		       struct guest_loc *loc)
{
	if (prev->img && pc >= prev->link + prev->img->bias && pc < prev->until) {
		*loc = *prev;
		loc->link = pc - prev->img->bias;
		return;
	}
	guest_lookup(g, pc, loc);
}

static uint32_t le32(const unsigned char *b)
{
	return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint32_t be32(const unsigned char *b)
{
	return (uint32_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
}

static int64_t sext(uint64_t v, int bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/*
 * Where the code at link address LINK of E goes if it is a thunk: no-ops
 * or landing pads, then an unconditional branch that does not return.
 * Direct branches, and s390x's load of a GOT slot that the file holds
 * (a static program's __wrap_main).
 */
static bool thunk_branch(const struct elf_file *e, uint64_t link, uint64_t *to)
{
	unsigned char b[24];
	size_t n = elf_file_read(e, link, b, sizeof(b)), i = 0;
	uint32_t w;

	switch (elf_file_machine(e)) {
	case EM_X86_64:
		if (n >= 4 && !memcmp(b, "\xf3\x0f\x1e\xfa", 4)) /* endbr64 */
			i = 4;
		while (i < n && b[i] == 0x90) /* nop */
			i++;
		if (i + 5 <= n && b[i] == 0xe9) { /* jmp rel32 */
			*to = link + i + 5 + (int32_t)le32(b + i + 1);
			return true;
		}
		if (i + 2 <= n && b[i] == 0xeb) { /* jmp rel8 */
			*to = link + i + 2 + (int8_t)b[i + 1];
			return true;
		}
		return false;
	case EM_AARCH64:
		/* nop, bti: hint instructions */
		for (; i + 4 <= n && i < 8 && (le32(b + i) & 0xfffff01f) == 0xd503201f; i += 4)
			;
		w = i + 4 <= n ? le32(b + i) : 0;
		if ((w & 0xfc000000) != 0x14000000) /* b imm26 */
			return false;
		*to = link + i + sext(w & 0x3ffffff, 26) * 4;
		return true;
	case EM_RISCV:
		w = n >= 4 ? le32(b) : 0;
		if ((w & 0xfff) != 0x06f) /* jal x0, imm */
			return false;
		*to = link + sext(((w >> 31) & 1) << 20 | ((w >> 12) & 0xff) << 12 |
					  ((w >> 20) & 1) << 11 | ((w >> 21) & 0x3ff) << 1,
				  21);
		return true;
	case EM_ARM:
		w = n >= 4 ? le32(b) : 0;
		if ((w & 0xff000000) != 0xea000000) /* b, always, A32 */
			return false;
		*to = link + 8 + sext(w & 0xffffff, 24) * 4;
		return true;
	case EM_PPC64:
		w = n >= 4 ? le32(b) : 0;
		if ((w & 0xfc000003) != 0x48000000) /* b, neither AA nor LK */
			return false;
		*to = link + sext(w & 0x03fffffc, 26);
		return true;
	case EM_S390:
		if (n >= 6 && b[0] == 0xc0 && b[1] == 0xf4) { /* brcl 15 */
			*to = link + sext(be32(b + 2), 32) * 2;
			return true;
		}
		/* larl %rX, slot; lg %rX, 0(%rX); br %rX */
		if (n >= 14 && b[0] == 0xc0 && (b[1] & 0x0f) == 0 && b[6] == 0xe3 && b[7] == b[1] &&
		    b[8] == b[1] && !b[9] && !b[10] && b[11] == 0x04 && b[12] == 0x07 &&
		    b[13] == (0xf0 | b[1] >> 4)) {
			unsigned char slot[8];
			uint64_t a = link + sext(be32(b + 2), 32) * 2;

			if (elf_file_read(e, a, slot, 8) != 8)
				return false;
			*to = (uint64_t)be32(slot) << 32 | be32(slot + 4);
			return true;
		}
		return false;
	}
	return false;
}

uint64_t guest_call_target(struct guest *g, uint64_t addr, struct guest_loc *loc)
{
	for (int hop = 0;; hop++) {
		const struct guest_image *img;
		const struct sym *s;
		uint64_t to;

		guest_lookup(g, addr, loc); /* finds a library mapped since */
		img = loc->img;
		if (hop == 4 || !img || !img->elf || !thunk_branch(img->elf, loc->link, &to))
			break;
		/* Only a branch to the start of a function of the same file. */
		s = elf_file_sym(img->elf, to);
		if (!s || s->addr != to || to == loc->link)
			break;
		addr = to + img->bias;
	}
	return addr;
}

const char *guest_loc_text(const struct guest_loc *loc, uint64_t pc, char *buf)
{
	if (loc->name)
		return loc->name;
	if (!loc->img || !loc->img->path) {
		snprintf(buf, NAME_OFF_MAX, "guest-0x%" PRIx64, pc);
		return buf;
	}
	return name_off(buf, loc->img->base, loc->link);
}

const char *guest_loc_name(struct guest *g, const struct guest_loc *loc, uint64_t pc)
{
	char buf[NAME_OFF_MAX];

	if (loc->name)
		return loc->name;
	return strtab_add(&g->names->t, guest_loc_text(loc, pc, buf));
}

void guest_see_new(struct guest *g, uint64_t addr)
{
	uint64_t key = addr | 1;
	struct guest_loc loc;
	size_t i;

	g->recent[(addr >> 2) & 255] = key;
	if (g->nseen * 2 >= g->seen_cap) {
		size_t cap = g->seen_cap ? g->seen_cap * 2 : 4096;
		uint64_t *t = xcalloc(cap, sizeof(*t));

		for (i = 0; i < g->seen_cap; i++) {
			size_t k;

			if (!g->seen[i])
				continue;
			for (k = (g->seen[i] * 0x9e3779b97f4a7c15ull) & (cap - 1); t[k];
			     k = (k + 1) & (cap - 1))
				;
			t[k] = g->seen[i];
		}
		free(g->seen);
		g->seen = t;
		g->seen_cap = cap;
	}
	for (i = (key * 0x9e3779b97f4a7c15ull) & (g->seen_cap - 1); g->seen[i];
	     i = (i + 1) & (g->seen_cap - 1))
		if (g->seen[i] == key)
			return;
	g->seen[i] = key;
	g->nseen++;
	guest_lookup(g, addr, &loc);
}

void guest_copy(struct guest *dst, const struct guest *src)
{
	/* DST's code map is a copy of SRC's: it names code with SRC's
	 * names, and with the symbols of SRC's old images. */
	names_put(dst->names);
	dst->names = src->names;
	dst->names->refs++;
	for (size_t i = 0; i < src->nretired; i++) {
		struct guest_image img = src->retired[i];

		img.path = xstrdup(img.path);
		elf_file_ref(img.elf);
		retire(dst, &img);
	}
	for (size_t i = 0; i < src->nimgs; i++) {
		const struct guest_image *img = &src->imgs[i];

		add(dst, img->path, elf_file_ref(img->elf), img->bias, img->start, img->end,
		    img->user);
	}
	if (src->base_known)
		guest_set_base(dst, src->base);
}

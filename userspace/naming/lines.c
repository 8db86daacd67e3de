// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/lines.h"
#include "naming/dwarfbytes.h"
#include "naming/dwarfsec.h"
#include "util/util.h"

#include <dwarf.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

/* No sequence is decoded into more rows (a damaged one: 256 MB of them). */
#define LT_ROWS_MAX (1u << 24)

/* What each special opcode of a header does, computed once, not divided
 * out per opcode (6 % of opening libc6-dbg's table). */
struct lt_special {
	uint8_t opcode_base, line_range;
	int8_t line_base;
	uint8_t ops[256];  /* operation advance */
	int16_t line[256]; /* line advance */
};

/* One unit of .debug_line: a header and its line program. */
struct lt_unit {
	const uint8_t *tables; /* the directory and file tables */
	const uint8_t *prog, *end;
	const uint8_t *std_len; /* operand counts of opcodes 1 .. opcode_base - 1 */
	uint8_t offset_size, addr_size, min_inst, max_ops, opcode_base, line_range;
	int8_t line_base;
	bool default_stmt;
	uint32_t special; /* index in line_table.specials */
	bool files_read;  /* files is what could be read, maybe nothing */
	char **files;
	size_t nfiles;
};

struct lt_row {
	uint64_t addr;
	uint32_t line;
	uint32_t file; /* and LT_STMT */
};

/* A row that is a recommended breakpoint location (is_stmt): a line's. */
#define LT_STMT	    (1u << 31)
#define LT_FILE_MAX (LT_STMT - 1)

/* A sequence of rows, [lo, hi) of the code; rows decoded on first use. */
struct lt_seq {
	uint64_t lo, hi;
	const uint8_t *start;
	uint32_t unit;
	uint32_t nrows;
	struct lt_row *rows;
};

struct line_table {
	Elf *elf;
	struct dwarf_sec line;
	struct lt_unit *units;
	size_t nunits, units_cap;
	struct lt_seq *seqs;
	size_t nseqs, seqs_cap;
	struct lt_special *specials;
	size_t nspecials, specials_cap;
	struct dwarf_sec line_str, str; /* read when a name needs them */
	bool big;			/* big-endian */
	/* The last answer, for [hit_lo, hit_hi): often a TB's next insn's. */
	uint64_t hit_lo, hit_hi;
	const char *hit_file;
	int hit_line;
};

/* The registers of the line-number state machine this reader needs. */
struct lt_state {
	uint64_t addr;
	uint64_t op_index;
	uint32_t file;
	uint32_t line; /* wraps, as libdw's does */
	bool stmt;
};

typedef void (*row_fn)(void *ctx, const struct lt_state *s, bool end);

static void advance(const struct lt_unit *u, struct lt_state *s, uint64_t ops)
{
	if (u->max_ops == 1) {
		s->addr += u->min_inst * ops;
	} else {
		uint64_t n = s->op_index + ops;

		s->addr += u->min_inst * (n / u->max_ops);
		s->op_index = n % u->max_ops;
	}
}

/*
 * Run the line program of U from P, a sequence's first opcode, to its
 * end_sequence, calling ROW for each row: the first opcode after it, or
 * NULL if the sequence is damaged or never ends.
 */
static inline __attribute__((always_inline)) const uint8_t *run_seq(const struct line_table *t,
								    const struct lt_unit *u,
								    const uint8_t *p, row_fn row,
								    void *ctx)
{
	const struct lt_special *sp = &t->specials[u->special];
	struct lt_state s = {.file = 1, .line = 1, .stmt = u->default_stmt};
	const uint8_t *end = u->end;
	uint64_t v;
	int64_t sv;

	while (p < end) {
		uint8_t op = *p++;

		if (op >= u->opcode_base) {
			advance(u, &s, sp->ops[op]);
			s.line += (uint32_t)sp->line[op];
			row(ctx, &s, false);
			continue;
		}
		switch (op) {
		case 0: { /* extended: length, sub-opcode, operands */
			const uint8_t *next;

			if (!uleb(&p, end, &v) || !v || v > (uint64_t)(end - p))
				return NULL;
			next = p + v;
			switch (*p++) {
			case DW_LNE_end_sequence:
				row(ctx, &s, true);
				return next;
			case DW_LNE_set_address:
				if (v - 1 != u->addr_size ||
				    !fixed(t->big, &p, next, u->addr_size, &s.addr))
					return NULL;
				s.op_index = 0;
				break;
			default: /* set_discriminator, vendor: nothing a line needs */
				break;
			}
			p = next;
			break;
		}
		case DW_LNS_copy:
			row(ctx, &s, false);
			break;
		case DW_LNS_advance_pc:
			if (!uleb(&p, end, &v))
				return NULL;
			advance(u, &s, v);
			break;
		case DW_LNS_advance_line:
			if (!sleb(&p, end, &sv))
				return NULL;
			s.line += (uint32_t)sv;
			break;
		case DW_LNS_set_file:
			if (!uleb(&p, end, &v))
				return NULL;
			s.file = v > LT_FILE_MAX ? LT_FILE_MAX : (uint32_t)v;
			break;
		case DW_LNS_const_add_pc: /* advances as special opcode 255 would */
			advance(u, &s, sp->ops[255]);
			break;
		case DW_LNS_fixed_advance_pc:
			if (!fixed(t->big, &p, end, 2, &v))
				return NULL;
			s.addr += v;
			s.op_index = 0;
			break;
		case DW_LNS_negate_stmt:
			s.stmt = !s.stmt;
			break;
		case DW_LNS_set_basic_block:
		case DW_LNS_set_prologue_end:
		case DW_LNS_set_epilogue_begin:
			break;
		default: { /* set_column, set_isa, unknown: skip their operands */
			unsigned n = op == DW_LNS_set_column || op == DW_LNS_set_isa
					     ? 1
					     : u->std_len[op - 1];

			while (n--)
				if (!uleb(&p, end, &v))
					return NULL;
		}
		}
	}
	return NULL;
}

/* Pass 1: where each sequence starts and ends. */
struct bounds {
	bool any;
	uint64_t lo, hi;
};

static void bound_row(void *ctx, const struct lt_state *s, bool end)
{
	struct bounds *b = ctx;

	if (!b->any) {
		b->any = true;
		b->lo = s->addr;
	}
	if (end)
		b->hi = s->addr;
}

/*
 * The header of the unit at *P into U, and *P moved past the unit once its
 * length is read: LINES_OTHER for DWARF 2-4, LINES_NONE for a damaged unit
 * (U->end NULL when not even its length could be read).
 */
static enum lines_found read_unit(struct line_table *t, const uint8_t **p, struct lt_unit *u)
{
	const uint8_t *q = *p, *end = t->line.p + t->line.n, *hdr_end;
	uint64_t len, hlen, version;
	uint8_t seg;

	memset(u, 0, sizeof(*u));
	if (!fixed(t->big, &q, end, 4, &len))
		return LINES_NONE;
	u->offset_size = 4;
	if (len == 0xffffffff) {
		u->offset_size = 8;
		if (!fixed(t->big, &q, end, 8, &len))
			return LINES_NONE;
	} else if (len >= 0xfffffff0) {
		return LINES_NONE;
	}
	if (len > (uint64_t)(end - q))
		return LINES_NONE;
	u->end = q + len;
	*p = u->end;
	if (!fixed(t->big, &q, u->end, 2, &version))
		return LINES_NONE;
	if (version >= 2 && version <= 4)
		return LINES_OTHER;
	if (version != 5 || u->end - q < 2)
		return LINES_NONE;
	u->addr_size = *q++;
	seg = *q++;
	if ((u->addr_size != 4 && u->addr_size != 8) || seg ||
	    !fixed(t->big, &q, u->end, u->offset_size, &hlen) || hlen > (uint64_t)(u->end - q))
		return LINES_NONE;
	hdr_end = q + hlen;
	if (hdr_end - q < 6)
		return LINES_NONE;
	u->min_inst = *q++;
	u->max_ops = *q++;
	u->default_stmt = *q++ != 0;
	u->line_base = (int8_t)*q++;
	u->line_range = *q++;
	u->opcode_base = *q++;
	if (!u->max_ops || !u->line_range || !u->opcode_base || u->opcode_base - 1 > hdr_end - q)
		return LINES_NONE;
	u->std_len = q;
	u->tables = q + u->opcode_base - 1;
	u->prog = hdr_end;
	return LINES_READ;
}

/* The special opcodes of U's header: those of the unit before, mostly. */
static uint32_t special_of(struct line_table *t, const struct lt_unit *u)
{
	struct lt_special *sp;

	for (size_t i = t->nspecials; i-- > 0;) {
		sp = &t->specials[i];
		if (sp->opcode_base == u->opcode_base && sp->line_range == u->line_range &&
		    sp->line_base == u->line_base)
			return (uint32_t)i;
		if (t->nspecials - i >= 4)
			break;
	}
	grow(&t->specials, &t->specials_cap, t->nspecials + 1, sizeof(*t->specials));
	sp = &t->specials[t->nspecials];
	*sp = (struct lt_special){u->opcode_base, u->line_range, u->line_base, {0}, {0}};
	for (unsigned op = u->opcode_base; op < 256; op++) {
		sp->ops[op] = (uint8_t)((op - u->opcode_base) / u->line_range);
		sp->line[op] =
			(int16_t)(u->line_base + (int)((op - u->opcode_base) % u->line_range));
	}
	return (uint32_t)t->nspecials++;
}

static void add_unit_seqs(struct line_table *t, const struct lt_unit *u)
{
	const uint8_t *p = u->prog;

	while (p && p < u->end) {
		struct bounds b = {0};
		const uint8_t *start = p;

		p = run_seq(t, u, p, bound_row, &b);
		if (!p || !b.any || b.hi <= b.lo)
			continue; /* nothing, or a sequence at a discarded function */
		grow(&t->seqs, &t->seqs_cap, t->nseqs + 1, sizeof(*t->seqs));
		t->seqs[t->nseqs++] =
			(struct lt_seq){b.lo, b.hi, start, (uint32_t)t->nunits, 0, NULL};
	}
}

static int seq_cmp(const void *a, const void *b)
{
	const struct lt_seq *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

bool line_table_present(Elf *elf)
{
	bool gnu = false;

	return dwarf_find_section(elf, ".debug_line", &gnu) || gnu;
}

enum lines_found line_table_open(Elf *elf, struct line_table **tp)
{
	struct line_table *t;
	const uint8_t *p;
	struct dwarf_sec line = {0};
	bool gnu = false;

	if (!dwarf_section(elf, ".debug_line", &gnu, &line) || !line.n) {
		free(line.own);
		return gnu ? LINES_OTHER : LINES_NONE;
	}
	t = xcalloc(1, sizeof(*t));
	t->elf = elf;
	t->big = elf_getident(elf, NULL)[EI_DATA] == ELFDATA2MSB;
	t->line = line;
	for (p = line.p; p < line.p + line.n;) {
		struct lt_unit u;
		enum lines_found f = read_unit(t, &p, &u);

		if (f == LINES_OTHER) {
			line_table_free(t);
			return LINES_OTHER;
		}
		if (f != LINES_READ) {
			if (!u.end)
				break; /* no length to step over: the rest is lost */
			continue;
		}
		u.special = special_of(t, &u);
		add_unit_seqs(t, &u);
		grow(&t->units, &t->units_cap, t->nunits + 1, sizeof(*t->units));
		t->units[t->nunits++] = u;
	}
	sort_by_key(t->seqs, t->nseqs, sizeof(*t->seqs), offsetof(struct lt_seq, lo), seq_cmp);
	*tp = t;
	return LINES_READ;
}

/* A string of FORM at *P, advanced past it; NULL if not a string form. */
static const char *str_form(struct line_table *t, const struct lt_unit *u, uint64_t form,
			    const uint8_t **p)
{
	struct dwarf_sec *d;
	uint64_t off;
	const char *s;

	switch (form) {
	case DW_FORM_string:
		s = (const char *)*p;
		*p = memchr(*p, 0, u->prog - *p);
		if (!*p)
			return NULL;
		(*p)++;
		return s;
	case DW_FORM_line_strp:
	case DW_FORM_strp:
		if (!fixed(t->big, p, u->prog, u->offset_size, &off))
			return NULL;
		d = form == DW_FORM_line_strp ? &t->line_str : &t->str;
		if (!d->tried)
			dwarf_section(t->elf,
				      form == DW_FORM_line_strp ? ".debug_line_str" : ".debug_str",
				      NULL, d);
		if (!d->p || off >= d->n || !memchr(d->p + off, 0, d->n - off))
			return NULL;
		return (const char *)d->p + off;
	}
	return NULL;
}

/* Step over a value of FORM at *P, or read it as a number into *V. */
static bool skip_form(struct line_table *t, const struct lt_unit *u, uint64_t form,
		      const uint8_t **p, uint64_t *v)
{
	uint64_t n = 0;

	switch (form) {
	case DW_FORM_udata:
		return uleb(p, u->prog, v);
	case DW_FORM_sdata:
		return sleb(p, u->prog, (int64_t *)v);
	case DW_FORM_data1:
		return fixed(t->big, p, u->prog, 1, v);
	case DW_FORM_data2:
		return fixed(t->big, p, u->prog, 2, v);
	case DW_FORM_data4:
		return fixed(t->big, p, u->prog, 4, v);
	case DW_FORM_data8:
		return fixed(t->big, p, u->prog, 8, v);
	case DW_FORM_data16:
		n = 16;
		break;
	case DW_FORM_block1:
		if (!fixed(t->big, p, u->prog, 1, &n))
			return false;
		break;
	case DW_FORM_block:
		if (!uleb(p, u->prog, &n))
			return false;
		break;
	default:
		return str_form(t, u, form, p) != NULL;
	}
	if (n > (uint64_t)(u->prog - *p))
		return false;
	*p += n;
	return true;
}

/*
 * One table of entries (directories or files) at *P: for each, its path
 * and directory index.  Calls ENTRY with them; false if damaged.
 */
static bool read_entries(struct line_table *t, const struct lt_unit *u, const uint8_t **p,
			 bool (*entry)(void *ctx, const char *path, uint64_t dir), void *ctx)
{
	uint64_t forms[2 * 16], count;
	unsigned nformats;

	if (*p >= u->prog)
		return false;
	nformats = *(*p)++;
	if (nformats > 16)
		return false;
	for (unsigned i = 0; i < 2 * nformats; i++)
		if (!uleb(p, u->prog, &forms[i]))
			return false;
	if (!uleb(p, u->prog, &count) || (count && !nformats) || count > (uint64_t)(u->prog - *p))
		return false;
	for (uint64_t n = 0; n < count; n++) {
		const char *path = NULL;
		uint64_t dir = UINT64_MAX, v = 0;

		for (unsigned i = 0; i < nformats; i++) {
			uint64_t type = forms[2 * i], form = forms[2 * i + 1];

			if (type == DW_LNCT_path) {
				path = str_form(t, u, form, p);
				if (!path)
					return false;
			} else if (!skip_form(t, u, form, p, &v)) {
				return false;
			} else if (type == DW_LNCT_directory_index) {
				dir = v;
			}
		}
		if (!entry(ctx, path, dir))
			return false;
	}
	return true;
}

struct names {
	const char **dirs;
	size_t ndirs, dirs_cap;
	char **files;
	size_t nfiles, files_cap;
};

static bool add_dir(void *ctx, const char *path, uint64_t dir)
{
	struct names *n = ctx;

	(void)dir;
	if (!path)
		return false;
	grow(&n->dirs, &n->dirs_cap, n->ndirs + 1, sizeof(*n->dirs));
	n->dirs[n->ndirs++] = path;
	return true;
}

static bool add_file(void *ctx, const char *path, uint64_t dir)
{
	struct names *n = ctx;

	if (!path || (path[0] != '/' && dir >= n->ndirs))
		return false;
	grow(&n->files, &n->files_cap, n->nfiles + 1, sizeof(*n->files));
	if (path[0] == '/')
		n->files[n->nfiles++] = xstrdup(path);
	else if (n->dirs[dir][0] != '/' && dir && n->dirs[0][0] == '/')
		/* A directory relative to the compilation's (directory 0), which
		 * libdw puts in front too. */
		n->files[n->nfiles++] = xasprintf("%s/%s/%s", n->dirs[0], n->dirs[dir], path);
	else
		n->files[n->nfiles++] = xasprintf("%s/%s", n->dirs[dir], path);
	return true;
}

/* The file names of U, read on first use: none if they are damaged. */
static void read_files(struct line_table *t, struct lt_unit *u)
{
	struct names n = {0};
	const uint8_t *p = u->tables;

	u->files_read = true;
	if (read_entries(t, u, &p, add_dir, &n) && read_entries(t, u, &p, add_file, &n)) {
		u->files = n.files;
		u->nfiles = n.nfiles;
	} else {
		for (size_t i = 0; i < n.nfiles; i++)
			free(n.files[i]);
		free(n.files);
	}
	free(n.dirs);
}

struct rows {
	struct lt_row *v;
	size_t n, cap;
	bool over; /* more than LT_ROWS_MAX */
};

static void add_row(void *ctx, const struct lt_state *s, bool end)
{
	struct rows *r = ctx;

	if (end || r->over)
		return;
	if (r->n == LT_ROWS_MAX) {
		r->over = true;
		return;
	}
	grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v));
	r->v[r->n++] = (struct lt_row){s->addr, s->line, s->file | (s->stmt ? LT_STMT : 0)};
}

/* Q's rows, decoded on first use; false if it has none. */
static bool seq_rows(struct line_table *t, struct lt_seq *q)
{
	struct rows rs = {0};

	if (q->rows)
		return true;
	if (q->hi == q->lo)
		return false;
	run_seq(t, &t->units[q->unit], q->start, add_row, &rs);
	if (rs.over || !rs.n) {
		free(rs.v);
		q->hi = q->lo; /* no line, and not decoded again */
		return false;
	}
	q->rows = rs.v;
	q->nrows = (uint32_t)rs.n;
	return true;
}

/* The file of row R of unit U, or NULL. */
static const char *row_file(struct line_table *t, struct lt_unit *u, const struct lt_row *r)
{
	uint32_t f = r->file & LT_FILE_MAX;

	if (!u->files_read)
		read_files(t, u);
	return f < u->nfiles && (int)r->line > 0 ? u->files[f] : NULL;
}

void line_table_each(struct line_table *t, line_fn fn, void *ctx)
{
	for (size_t i = 0; i < t->nseqs; i++) {
		struct lt_seq *q = &t->seqs[i];

		if (!seq_rows(t, q))
			continue;
		for (uint32_t k = 0, j = 0; k < q->nrows; k++) {
			const struct lt_row *r = &q->rows[k];
			uint64_t hi;
			const char *file;

			/* To the next row at a higher address: rows at one
			 * address (views) describe the same instructions. */
			if (j <= k)
				for (j = k + 1; j < q->nrows && q->rows[j].addr == r->addr; j++)
					;
			hi = j < q->nrows ? q->rows[j].addr : q->hi;

			if ((r->file & LT_STMT) && hi > r->addr &&
			    (file = row_file(t, &t->units[q->unit], r)))
				fn(ctx, r->addr, hi, file, (int)r->line);
		}
	}
}

bool line_table_find(struct line_table *t, uint64_t addr, const char **file, int *line)
{
	struct lt_seq *q;
	struct lt_unit *u;
	const struct lt_row *r;
	size_t i, next_seq;

	if (addr >= t->hit_lo && addr < t->hit_hi) {
		*file = t->hit_file;
		*line = t->hit_line;
		return true;
	}
	i = count_le(t->seqs, t->nseqs, sizeof(*t->seqs), offsetof(struct lt_seq, lo), addr);
	if (!i || addr >= t->seqs[i - 1].hi)
		return false;
	next_seq = i;
	q = &t->seqs[i - 1];
	u = &t->units[q->unit];
	if (!seq_rows(t, q))
		return false;
	/* Rows are in address order within a sequence: the last at or below. */
	i = count_le(q->rows, q->nrows, sizeof(*q->rows), offsetof(struct lt_row, addr), addr);
	if (!i)
		return false;
	r = &q->rows[i - 1];
	if (!(*file = row_file(t, u, r)))
		return false;
	*line = (int)r->line;
	/* Until the next row, the sequence's end or the next's start. */
	t->hit_lo = r->addr;
	t->hit_hi = i < q->nrows ? q->rows[i].addr : q->hi;
	if (next_seq < t->nseqs && t->seqs[next_seq].lo < t->hit_hi)
		t->hit_hi = t->seqs[next_seq].lo;
	t->hit_file = *file;
	t->hit_line = *line;
	return true;
}

void line_table_free(struct line_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nseqs; i++)
		free(t->seqs[i].rows);
	for (size_t i = 0; i < t->nunits; i++) {
		for (size_t f = 0; f < t->units[i].nfiles; f++)
			free(t->units[i].files[f]);
		free(t->units[i].files);
	}
	free(t->seqs);
	free(t->units);
	free(t->specials);
	free(t->line.own);
	free(t->line_str.own);
	free(t->str.own);
	free(t);
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/codemap.h"
#include "util/util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void codemap_add_insn(struct codemap *m, uint64_t host, uint64_t size, const char *name,
		      uint64_t guest, bool tb_end)
{
	/* Perf never matches an empty symbol.  A range past the end of the
	 * address space is no code, and its end would wrap in the overlap
	 * checks (a prologue there went into the map again at each look). */
	if (!size || host + size < host)
		return;
	grow(&m->v, &m->cap, m->n + 1, sizeof(*m->v));
	m->v[m->n++] = (struct code_range){.host = host,
					   .size = size,
					   .tb_end = tb_end,
					   .seq = ++m->seq,
					   .name = name,
					   .guest = guest};
	m->live = false;
}

void codemap_add(struct codemap *m, uint64_t host, uint64_t size, const char *name)
{
	codemap_add_insn(m, host, size, name, 0, false);
}

void codemap_add_off(struct codemap *m, uint64_t host, uint64_t size, const char *name,
		     uint64_t off)
{
	size_t n = m->n;

	codemap_add_insn(m, host, size, name, 0, false);
	if (m->n > n) {
		m->v[n].plus_off = true;
		m->v[n].off = off;
	}
}

const struct code_range *codemap_find(struct codemap *m, uint64_t host)
{
	size_t i;

	if (!m->live) {
		codemap_live(m);
		m->live = true;
	}
	i = count_le(m->v, m->n, sizeof(*m->v), offsetof(struct code_range, host), host);
	if (i && host < m->v[i - 1].host + m->v[i - 1].size)
		return &m->v[i - 1];
	return NULL;
}

void codemap_flush(struct codemap *m)
{
	m->n = 0;
	m->checked = 0;
	m->live = false;
}

void codemap_set_prologue(struct codemap *m, uint64_t host, uint64_t size)
{
	/* (None past the end of the address space, as in codemap_add_insn().) */
	if (host + size < host)
		size = 0;
	m->prologue = (struct code_range){.host = host, .size = size, .name = "qemu-tcg-prologue"};
}

static int cmp_range(const void *a, const void *b)
{
	const struct code_range *x = a, *y = b;

	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	return x->seq < y->seq ? 1 : -1; /* newest first */
}

/*
 * Are the ranges in increasing order, none overlapping the next?  Only
 * those added since the last check are looked at.
 */
static bool ordered(struct codemap *m)
{
	for (size_t i = m->checked ? m->checked : 1; i < m->n; i++)
		if (m->v[i].host < m->v[i - 1].host + m->v[i - 1].size)
			return false;
	m->checked = m->n;
	return true;
}

size_t codemap_live(struct codemap *m)
{
	size_t i, j;
	bool changed;

	/*
	 * QEMU hands out code space in increasing order, so between flushes
	 * the ranges of one translating thread usually arrive sorted: then
	 * the prologue only has to go in its place.
	 */
	if (ordered(m)) {
		if (!m->prologue.size)
			return m->n;
		i = count_le(m->v, m->n, sizeof(*m->v), offsetof(struct code_range, host),
			     m->prologue.host);
		if ((!i || m->v[i - 1].host + m->v[i - 1].size <= m->prologue.host) &&
		    (i == m->n || m->prologue.host + m->prologue.size <= m->v[i].host)) {
			grow(&m->v, &m->cap, m->n + 1, sizeof(*m->v));
			memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(*m->v));
			m->v[i] = m->prologue;
			m->checked = ++m->n;
			return m->n;
		}
	}
	if (m->prologue.size)
		codemap_add(m, m->prologue.host, m->prologue.size, m->prologue.name);
	/*
	 * Overlaps only arise when code was reused without a flush we saw;
	 * keep the newest range at each address, then drop any older range
	 * that a newer neighbour overlaps.
	 */
	do {
		changed = false;
		sort_by_key(m->v, m->n, sizeof(*m->v), offsetof(struct code_range, host),
			    cmp_range);
		for (i = j = 0; i < m->n; i++) {
			if (j && m->v[i].host < m->v[j - 1].host + m->v[j - 1].size) {
				changed = true;
				if (m->v[i].seq > m->v[j - 1].seq)
					m->v[j - 1] = m->v[i];
				continue;
			}
			m->v[j++] = m->v[i];
		}
		m->n = j;
	} while (changed);
	m->checked = m->n;
	return m->n;
}

void codemap_free(struct codemap *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

const char *name_off(char buf[NAME_OFF_MAX], const char *base, uint64_t off)
{
	size_t len = strnlen(base, NAME_OFF_MAX - 20);
	int shift = 60;
	char *p;

	memcpy(buf, base, len);
	p = buf + len;
	*p++ = '+';
	*p++ = '0';
	*p++ = 'x';
	while (shift > 0 && !(off >> shift))
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		*p++ = "0123456789abcdef"[(off >> shift) & 15];
	*p = 0;
	return buf;
}

void codemap_copy(struct codemap *dst, const struct codemap *src)
{
	codemap_free(dst);
	*dst = *src;
	dst->v = NULL;
	dst->cap = 0;
	if (src->n) {
		dst->v = xmalloc(src->n * sizeof(*dst->v));
		memcpy(dst->v, src->v, src->n * sizeof(*dst->v));
		dst->cap = src->n;
	}
}

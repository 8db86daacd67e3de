// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/pbwire.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define WIRE_VARINT 0
#define WIRE_LEN    2

static void put(struct pbuf *b, const void *p, size_t n)
{
	grow(&b->p, &b->cap, b->len + n, 1);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void raw_varint(struct pbuf *b, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	do {
		buf[n++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	put(b, buf, n);
}

void pb_varint(struct pbuf *b, unsigned int field, uint64_t v)
{
	raw_varint(b, (uint64_t)field << 3 | WIRE_VARINT);
	raw_varint(b, v);
}

void pb_bytes(struct pbuf *b, unsigned int field, const void *p, size_t n)
{
	raw_varint(b, (uint64_t)field << 3 | WIRE_LEN);
	raw_varint(b, n);
	if (n)
		put(b, p, n);
}

void pb_string(struct pbuf *b, unsigned int field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void pb_message(struct pbuf *b, unsigned int field, const struct pbuf *m)
{
	pb_bytes(b, field, m->p, m->len);
}

void pb_free(struct pbuf *b)
{
	free(b->p);
	*b = (struct pbuf){0};
}

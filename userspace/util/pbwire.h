/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Protocol buffers' wire format, for the few small messages the tool sends
 * that are not pprof (the push APIs' requests): varints and length-
 * delimited fields into a growing buffer.  A nested message is built in a
 * buffer of its own and added as bytes.
 */
#ifndef QJ_PBWIRE_H
#define QJ_PBWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pbuf {
	uint8_t *p;
	size_t len, cap;
};

void pb_varint(struct pbuf *b, unsigned int field, uint64_t v);
void pb_bytes(struct pbuf *b, unsigned int field, const void *p, size_t n);
void pb_string(struct pbuf *b, unsigned int field, const char *s);
/* Add message M as FIELD of B. */
void pb_message(struct pbuf *b, unsigned int field, const struct pbuf *m);
void pb_free(struct pbuf *b);

#endif

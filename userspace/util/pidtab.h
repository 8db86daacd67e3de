/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A table of things by process id: each thing holds a struct pidtab_node
 * (its pid and the link), and is found from it with container_of().  The
 * table owns nothing: its users allocate and free what they put in it.
 */
#ifndef QJ_PIDTAB_H
#define QJ_PIDTAB_H

#include <stddef.h>
#include <sys/types.h>

#define PIDTAB_BUCKETS 1024

struct pidtab_node {
	pid_t pid;
	struct pidtab_node *next;
};

struct pidtab {
	struct pidtab_node *b[PIDTAB_BUCKETS];
	size_t n;
};

/* Where PID's node is, or would be put: *slot is NULL when it is not there. */
struct pidtab_node **pidtab_slot(struct pidtab *t, pid_t pid);
struct pidtab_node *pidtab_find(struct pidtab *t, pid_t pid);
/* Put N (its pid set, not in the table) in T. */
void pidtab_add(struct pidtab *t, struct pidtab_node *n);
/* Take the node at SLOT (a pidtab_slot() or a walk's) out of T. */
struct pidtab_node *pidtab_remove(struct pidtab *t, struct pidtab_node **slot);

/* Each node N of T, none of them removed meanwhile. */
#define pidtab_for_each(t, n)                                                  \
	for (size_t n##_bucket = 0; n##_bucket < PIDTAB_BUCKETS; n##_bucket++) \
		for (struct pidtab_node *n = (t)->b[n##_bucket]; n; n = n->next)

#endif

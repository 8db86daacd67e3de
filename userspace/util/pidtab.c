// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/pidtab.h"

struct pidtab_node **pidtab_slot(struct pidtab *t, pid_t pid)
{
	struct pidtab_node **pp = &t->b[(unsigned)pid % PIDTAB_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

struct pidtab_node *pidtab_find(struct pidtab *t, pid_t pid)
{
	return *pidtab_slot(t, pid);
}

void pidtab_add(struct pidtab *t, struct pidtab_node *n)
{
	struct pidtab_node **pp = &t->b[(unsigned)n->pid % PIDTAB_BUCKETS];

	n->next = *pp;
	*pp = n;
	t->n++;
}

struct pidtab_node *pidtab_remove(struct pidtab *t, struct pidtab_node **slot)
{
	struct pidtab_node *n = *slot;

	*slot = n->next;
	n->next = NULL;
	t->n--;
	return n;
}

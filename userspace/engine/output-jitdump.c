// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --jitdump: each process's jitdump, written into the marker file QEMU
 * mapped (the session fills it as TB reports come), completed when its
 * program ends, or dropped when it never got a marker or a handshake.
 */
#include "engine/engine.h"
#include "engine/output.h"
#include "util/util.h"
#include "writers/jitdump.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool wanted(const struct engine_opts *o)
{
	return o->jitdump;
}

static void proc_end(struct engine *e, struct proc_end *pe)
{
	struct proc *p = pe->p;
	struct session *s = &p->s;
	int err;

	if (!s->jd)
		return;
	/* (A refused marker has had its warning.) */
	if (!pe->named || s->marker_refused) {
		jitdump_discard(s->jd);
		s->jd = NULL;
		return;
	}
	err = jitdump_close(s->jd, &s->bytes);
	s->jd = NULL;
	if (!err) {
		e->jitdumps++;
		if (pe->root)
			e->root_marker = xstrdup(s->marker_path);
		pr_dbg("pid %d: wrote %s", p->t->pid, s->marker_path);
		/* --keep-exited: its marker, as it names it (QEMU makes it by
		 * an absolute path, in its view). */
		if (pe->k && s->marker_path[0] == '/')
			retention_add(&e->ret, pe->k, &p->t->view, s->marker_path, false);
		return;
	}
	/* A fork's child that never got a marker of its own has none. */
	if (!pe->root)
		return;
	if (err == -ENOENT)
		pr_err("QEMU (pid %d) never reported a jitdump marker", p->t->pid);
	else
		pr_err("writing the jitdump: %s", strerror(-err));
	e->err = e->err ? e->err : err;
}

const struct output output_jitdump = {
	.name = "jitdump",
	.wanted = wanted,
	.proc_end = proc_end,
};

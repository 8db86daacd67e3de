// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --perfmap: /tmp/perf-PID.map of each process, written when its program
 * ends, from the host code it has live; a containerized process's own
 * /tmp gets one too, for the pid it has there.
 */
#include "engine/engine.h"
#include "engine/output.h"
#include "util/util.h"
#include "writers/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool wanted(const struct engine_opts *o)
{
	return o->perfmap;
}

/*
 * perf looks in a containerized process's own /tmp, for the pid it has
 * there, before the host's /tmp/perf-PID.map: write that one too, inside
 * the container's root (a link planted there is replaced, never followed).
 */
static void container_perfmap(struct engine *e, struct proc *p, struct kept *k)
{
	const struct proc_view *v = &p->t->view;
	int dir = view_open_tmp(v);
	uint64_t bytes = 0;
	char name[64];

	if (dir == -ESTALE) {
		/* Its container is gone, and no perf can read the map there. */
		pr_dbg("pid %d: its /tmp went with its mount namespace; no perf-%d.map there",
		       p->t->pid, v->nspid);
		return;
	}
	if (dir < 0) {
		pr_warn("pid %d: cannot open its /tmp: %s; perf reads /tmp/perf-%d.map", p->t->pid,
			strerror(-dir), p->t->pid);
		return;
	}
	snprintf(name, sizeof(name), "perf-%d.map", v->nspid);
	if (!perfmap_write(&p->s.jm.code, dir, name, p->t->uid, p->t->gid, &bytes)) {
		pr_dbg("pid %d: wrote its /tmp/%s", p->t->pid, name);
		if (k)
			retention_add_at(&e->ret, k, dir, name, false);
	}
	close(dir);
}

static void proc_end(struct engine *e, struct proc_end *pe)
{
	struct proc *p = pe->p;
	char path[64];

	if (!pe->named)
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", p->t->pid);
	if (p->t->view.foreign)
		container_perfmap(e, p, pe->k);
	if (!perfmap_write(&p->s.jm.code, AT_FDCWD, path, p->t->uid, p->t->gid, &p->s.bytes)) {
		e->maps++;
		if (pe->k)
			retention_add(&e->ret, pe->k, NULL, path, false);
		if (pe->root)
			e->root_map = xstrdup(path);
		pr_dbg("pid %d (%s): wrote %s", p->t->pid, pe->why, path);
	} else if (pe->root && !e->err) {
		e->err = -EIO;
	}
}

const struct output output_perfmap = {
	.name = "perf map",
	.wanted = wanted,
	.proc_end = proc_end,
};

// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * An interactive flame graph in one self-contained SVG: one box per frame,
 * its width the frame's share of the samples, the root at the bottom.
 * Guest, QEMU and kernel frames have colours of their own.  A script in
 * the file shows a frame's details on hover, zooms into it on click and
 * searches frames by regular expression; a link to the file can zoom
 * (#z=FRAME) and search (#s=REGEX) on opening.
 */
#include "profiler/profile.h"
#include "util/strtab.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH	     1200
#define FRAME_H	     16
#define PAD_TOP	     40
#define PAD_BOTTOM   30
#define PAD_SIDE     10
#define CHAR_W	     7.0
#define MIN_WIDTH_PX 0.1

enum { KIND_ROOT = 3 }; /* the process frames, beside enum frame_kind */

struct node {
	const char *name;
	int kind;
	uint64_t count;
	struct node *child, *next; /* children in order of first sight */
};

static struct node *child(struct node *n, const char *name, int kind)
{
	struct node **pp;

	for (pp = &n->child; *pp; pp = &(*pp)->next)
		if ((*pp)->name == name && (*pp)->kind == kind)
			return *pp;
	*pp = xcalloc(1, sizeof(**pp));
	(*pp)->name = name;
	(*pp)->kind = kind;
	return *pp;
}

static int depth(const struct node *n)
{
	int d = 0;

	for (const struct node *c = n->child; c; c = c->next) {
		int cd = depth(c);

		if (cd > d)
			d = cd;
	}
	return d + 1;
}

static void free_tree(struct node *n)
{
	while (n->child) {
		struct node *c = n->child;

		n->child = c->next;
		free_tree(c);
		free(c);
	}
}

/* A colour per kind, varied by name so that neighbours differ. */
static void colour(const char *name, int kind, char *buf, size_t size)
{
	unsigned int h = 0;

	for (const char *c = name; *c; c++)
		h = h * 31 + (unsigned char)*c;
	switch (kind) {
	case FRAME_GUEST: /* warm: the program's own code */
		snprintf(buf, size, "rgb(%u,%u,%u)", 225 + h % 30, 80 + (h >> 8) % 120,
			 40 + (h >> 16) % 40);
		break;
	case FRAME_QEMU: /* blue */
		snprintf(buf, size, "rgb(%u,%u,%u)", 80 + h % 50, 140 + (h >> 8) % 50,
			 215 + (h >> 16) % 40);
		break;
	case FRAME_KERNEL: /* green */
		snprintf(buf, size, "rgb(%u,%u,%u)", 80 + h % 50, 190 + (h >> 8) % 50,
			 80 + (h >> 16) % 50);
		break;
	default:
		snprintf(buf, size, "rgb(%u,%u,%u)", 190, 190, 190);
	}
}

struct layout {
	FILE *f;
	uint64_t total;
	int height;
	bool wall; /* counts are ns */
};

static const char *const kind_name[] = {"guest", "QEMU", "kernel", "process"};

static void draw(struct layout *l, const struct node *n, uint64_t x, int d)
{
	double scale = (double)(WIDTH - 2 * PAD_SIDE) / l->total;
	double px = PAD_SIDE + x * scale, pw = n->count * scale;
	int py = l->height - PAD_BOTTOM - (d + 1) * FRAME_H;
	size_t len = strlen(n->name), fit;
	char fill[32];

	if (pw < MIN_WIDTH_PX)
		return;
	colour(n->name, n->kind, fill, sizeof(fill));
	fprintf(l->f, "<g class=\"f\" data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-k=\"%s\">",
		x, n->count, kind_name[n->kind]);
	fputs("<title>", l->f);
	put_xml(l->f, n->name);
	if (l->wall)
		fprintf(l->f, " (%s, %.3f s, %.2f%%)</title>", kind_name[n->kind], n->count / 1e9,
			100.0 * n->count / l->total);
	else
		fprintf(l->f, " (%s, %" PRIu64 " samples, %.2f%%)</title>", kind_name[n->kind],
			n->count, 100.0 * n->count / l->total);
	fprintf(l->f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>", px,
		py, pw, FRAME_H - 1, fill);
	fprintf(l->f, "<text x=\"%.2f\" y=\"%d\">", px + 3, py + FRAME_H - 4);
	fit = pw > 3 * CHAR_W ? (size_t)((pw - 6) / CHAR_W) : 0;
	if (fit >= len) {
		put_xml(l->f, n->name);
	} else if (fit > 2) {
		char *t = xstrdup(n->name);

		strcpy(t + fit - 2, "..");
		put_xml(l->f, t);
		free(t);
	}
	fputs("</text></g>\n", l->f);
	for (const struct node *c = n->child; c; c = c->next) {
		draw(l, c, x, d + 1);
		x += c->count;
	}
}

/* The script: hover details, click to zoom, search, reset. */
static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var W, frames, details, matched, zoomed = null;\n"
	"function init() {\n"
	"  W = +document.documentElement.getAttribute('width');\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  details = document.getElementById('details');\n"
	"  matched = document.getElementById('matched');\n"
	"  frames.forEach(function (g) {\n"
	"    var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"    g.fx = +g.getAttribute('data-x'); g.fw = +g.getAttribute('data-w');\n"
	"    g.fy = +r.getAttribute('y'); g.name = g.querySelector('title').textContent;\n"
	"    g.label = g.name.replace(/ \\([^()]*\\)$/, ''); g.fill = r.getAttribute('fill');\n"
	"    g.onmouseover = function () { details.textContent = g.name; };\n"
	"    g.onmouseout = function () { details.textContent = ' '; };\n"
	"    g.onclick = function () { zoom(g); };\n"
	"  });\n"
	"  document.getElementById('reset').onclick = function () { zoom(null); };\n"
	"  document.getElementById('search').onclick = search;\n"
	"  document.getElementById('clear').onclick = function () { mark(null); };\n"
	"  /* A link can say where to look: #z=FRAME zooms, #s=REGEX searches. */\n"
	"  location.hash.substr(1).split('&').forEach(function (kv) {\n"
	"    var k = kv.split('=')[0], v = decodeURIComponent(kv.substr(k.length + 1));\n"
	"    if (k === 'z') frames.some(function (g) { return g.label === v && (zoom(g), true); "
	"});\n"
	"    if (k === 's' && v) mark(new RegExp(v));\n"
	"  });\n"
	"}\n"
	"function place(g, x, w) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"  r.setAttribute('x', x); r.setAttribute('width', w); t.setAttribute('x', x + 3);\n"
	"  var n = Math.floor((w - 6) / 7);\n"
	"  t.textContent = w < 21 ? '' : n >= g.label.length ? g.label : g.label.substr(0, n - 2) "
	"+ '..';\n"
	"}\n"
	"/* Zoom into Z: its descendants fill the width, its ancestors span it, dimmed. */\n"
	"function zoom(z) {\n"
	"  var x0 = z ? z.fx : 0, w0 = z ? z.fw : total(), s = (W - 20) / w0;\n"
	"  zoomed = z;\n"
	"  frames.forEach(function (g) {\n"
	"    var anc = z && g.fy > z.fy && g.fx <= x0 && g.fx + g.fw >= x0 + w0;\n"
	"    var desc = !z || (g.fy <= z.fy && g.fx >= x0 && g.fx + g.fw <= x0 + w0);\n"
	"    g.style.display = anc || desc ? '' : 'none';\n"
	"    g.style.opacity = anc ? 0.6 : 1;\n"
	"    if (anc) place(g, 10, W - 20);\n"
	"    else if (desc) place(g, 10 + (g.fx - x0) * s, g.fw * s);\n"
	"  });\n"
	"  document.getElementById('reset').style.opacity = z ? 1 : 0.3;\n"
	"}\n"
	"function total() { var t = 0; frames.forEach(function (g) { if (g.fw > t) t = g.fw; }); "
	"return t; }\n"
	"function mark(re) {\n"
	"  var hits = {}, sum = 0;\n"
	"  frames.forEach(function (g) {\n"
	"    var hit = re && re.test(g.label);\n"
	"    g.querySelector('rect').setAttribute('fill', hit ? 'rgb(230,0,230)' : g.fill);\n"
	"    if (hit && !hits[g.fx]) { hits[g.fx] = 1; sum += g.fw; }\n"
	"  });\n"
	"  matched.textContent = re ? 'Matched: ' + (100 * sum / total()).toFixed(1) + '%' : ' ';\n"
	"}\n"
	"function search() {\n"
	"  var s = prompt('Search frames (regular expression):', '');\n"
	"  if (s) { try { mark(new RegExp(s)); } catch (e) { alert(e); } }\n"
	"}\n"
	"window.addEventListener('load', init);\n"
	"]]></script>\n";

int flamegraph_write(const struct profile *p, FILE *f, const char *title)
{
	struct node root = {.name = "all", .kind = KIND_ROOT};
	struct layout l = {.f = f, .wall = p->wall};
	struct strtab labels = {0}; /* frames merge by label: one copy of each */
	char buf[1024];
	int d;

	/* One tree over all threads: frames merge by label. */
	for (size_t i = 0; i < p->n; i++) {
		const struct stack *s = p->v[i];
		uint64_t w = profile_weight(p, s);
		struct node *n = &root;

		/* The root: a process, or the chain of programs it descends
		 * from, one frame each. */
		for (const char *r = s->root; profile_root_next(&r, buf, sizeof(buf));) {
			n = child(n, strtab_add(&labels, buf), KIND_ROOT);
			n->count += w;
		}
		for (uint32_t k = 0; k < s->n; k++) {
			n = child(n,
				  strtab_add(&labels, frame_label(&s->frames[k], buf, sizeof(buf))),
				  s->frames[k].kind);
			n->count += w;
		}
		root.count += w;
	}
	d = depth(&root);
	l.total = root.count ? root.count : 1;
	l.height = PAD_TOP + d * FRAME_H + PAD_BOTTOM;
	fprintf(f,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n",
		WIDTH, l.height);
	fputs("<style>text { font-family: monospace; font-size: 12px; fill: #000; }\n"
	      "g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
	      "#title { font-size: 17px; } .button { cursor: pointer; fill: #336; }\n"
	      "</style>\n",
	      f);
	fputs(script, f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(248,248,240)\"/>\n",
		WIDTH, l.height);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">", WIDTH / 2);
	put_xml(f, title);
	if (p->wall)
		fprintf(f,
			" (%.3f s of wall-clock time at %u Hz, %.1f%% off-CPU; guest, QEMU [q], "
			"kernel [k])</text>\n",
			root.count / 1e9, p->freq, p->ns ? 100.0 * p->off_ns / p->ns : 0.0);
	else
		fprintf(f, " (%" PRIu64 " samples at %u Hz; guest, QEMU [q], kernel [k])</text>\n",
			root.count, p->freq);
	fprintf(f,
		"<text id=\"reset\" class=\"button\" x=\"%d\" y=\"22\" style=\"opacity:0.3\">"
		"Reset Zoom</text>\n",
		PAD_SIDE);
	fprintf(f, "<text id=\"search\" class=\"button\" x=\"%d\" y=\"22\">Search</text>\n",
		WIDTH - PAD_SIDE - 110);
	fprintf(f, "<text id=\"clear\" class=\"button\" x=\"%d\" y=\"22\">Clear</text>\n",
		WIDTH - PAD_SIDE - 50);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD_SIDE, l.height - 10);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		WIDTH - PAD_SIDE, l.height - 10);
	draw(&l, &root, 0, -1);
	fputs("</svg>\n", f);
	free_tree(&root);
	strtab_free(&labels);
	return ferror(f) ? -EIO : 0;
}

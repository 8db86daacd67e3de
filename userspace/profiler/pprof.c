// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pprof's profile.proto (github.com/google/pprof), gzip-compressed, as
 * `go tool pprof`, Pyroscope and Parca read it.  The message types come
 * from protoc-c at build time, from Debian's copy of the upstream
 * profile.proto.  Ids are 1-based and unique, string_table[0] is "".
 */
#include "profiler/profile.h"
#include "util/strtab.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__ValueType ValueType;

/* An open-addressing index of keys of up to four words, to 1-based ids. */
struct index {
	uint64_t (*keys)[4];
	uint64_t *ids;
	size_t cap, n;
};

static uint64_t key_hash(const uint64_t *k)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 4; i++)
		h = (h ^ k[i]) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

/* The id of KEY; *NEW says it was just given (the next one, n + 1). */
static uint64_t index_get(struct index *x, const uint64_t *key, bool *new)
{
	size_t i;

	if ((x->n + 1) * 2 > x->cap) {
		struct index y = {xcalloc(x->cap ? x->cap * 2 : 256, sizeof(*y.keys)),
				  xcalloc(x->cap ? x->cap * 2 : 256, sizeof(*y.ids)),
				  x->cap ? x->cap * 2 : 256, x->n};

		for (i = 0; i < x->cap; i++) {
			size_t k;

			if (!x->ids[i])
				continue;
			for (k = key_hash(x->keys[i]) & (y.cap - 1); y.ids[k];
			     k = (k + 1) & (y.cap - 1))
				;
			memcpy(y.keys[k], x->keys[i], sizeof(y.keys[k]));
			y.ids[k] = x->ids[i];
		}
		free(x->keys);
		free(x->ids);
		*x = y;
	}
	for (i = key_hash(key) & (x->cap - 1); x->ids[i]; i = (i + 1) & (x->cap - 1))
		if (!memcmp(x->keys[i], key, sizeof(x->keys[i]))) {
			*new = false;
			return x->ids[i];
		}
	memcpy(x->keys[i], key, sizeof(x->keys[i]));
	x->ids[i] = ++x->n;
	*new = true;
	return x->ids[i];
}

static void index_free(struct index *x)
{
	free(x->keys);
	free(x->ids);
}

struct builder {
	Profile p;
	struct strtab names; /* one copy of each string, for the keys */
	struct index strings, functions, locations, mappings;
	size_t strings_cap, functions_cap, locations_cap, mappings_cap;
};

/* Index of S in the string table. */
static int64_t str(struct builder *b, const char *s)
{
	uint64_t key[4] = {(uintptr_t)strtab_add(&b->names, s ? s : "")};
	bool new;
	uint64_t id = index_get(&b->strings, key, &new);

	if (new) {
		grow(&b->p.string_table, &b->strings_cap, id, sizeof(char *));
		b->p.string_table[id - 1] = (char *)(uintptr_t)key[0];
		b->p.n_string_table = id;
	}
	return id - 1; /* the first string, "", is at 0 */
}

static uint64_t mapping(struct builder *b, const struct frame *f)
{
	static const char kernel[] = "[kernel.kallsyms]";
	uint64_t key[4] = {f->kind == FRAME_KERNEL ? 1 : (uintptr_t)f->img.path, f->img.lo};
	bool new;
	uint64_t id;
	Mapping *m;

	if (f->kind != FRAME_KERNEL && !f->img.path)
		return 0;
	id = index_get(&b->mappings, key, &new);
	if (!new)
		return id;
	m = xmalloc(sizeof(*m));
	perftools__profiles__mapping__init(m);
	m->id = id;
	m->has_functions = true;
	if (f->kind == FRAME_KERNEL) {
		m->memory_limit = UINT64_MAX;
		m->filename = str(b, kernel);
	} else {
		m->memory_start = f->img.lo;
		m->memory_limit = f->img.hi;
		m->filename = str(b, f->img.path);
		m->build_id = str(b, f->img.build_id);
		m->has_filenames = m->has_line_numbers = true;
	}
	grow(&b->p.mapping, &b->mappings_cap, id, sizeof(Mapping *));
	b->p.mapping[id - 1] = m;
	b->p.n_mapping = id;
	return id;
}

static uint64_t function(struct builder *b, const char *name, const char *file)
{
	uint64_t key[4] = {(uintptr_t)strtab_add(&b->names, name),
			   (uintptr_t)strtab_add(&b->names, file ? file : "")};
	bool new;
	uint64_t id = index_get(&b->functions, key, &new);
	Function *fn;

	if (!new)
		return id;
	fn = xmalloc(sizeof(*fn));
	perftools__profiles__function__init(fn);
	fn->id = id;
	fn->name = fn->system_name = str(b, name);
	fn->filename = str(b, file);
	grow(&b->p.function, &b->functions_cap, id, sizeof(Function *));
	b->p.function[id - 1] = fn;
	b->p.n_function = id;
	return id;
}

/* A Location per distinct frame: its address, mapping, function and line. */
static uint64_t location(struct builder *b, const struct frame *f)
{
	uint64_t key[4] = {f->kind, f->addr, (uintptr_t)f->name, (uintptr_t)f->img.path};
	bool new;
	uint64_t id = index_get(&b->locations, key, &new);
	Location *loc;
	Line *l;

	if (!new)
		return id;
	loc = xmalloc(sizeof(*loc));
	perftools__profiles__location__init(loc);
	loc->id = id;
	loc->mapping_id = mapping(b, f);
	loc->address = f->addr;
	l = xmalloc(sizeof(*l));
	perftools__profiles__line__init(l);
	l->function_id = function(b, f->name, f->file);
	l->line = f->line;
	loc->line = xmalloc(sizeof(*loc->line));
	loc->line[0] = l;
	loc->n_line = 1;
	grow(&b->p.location, &b->locations_cap, id, sizeof(Location *));
	b->p.location[id - 1] = loc;
	b->p.n_location = id;
	return id;
}

static ValueType *value_type(struct builder *b, const char *type, const char *unit)
{
	ValueType *v = xmalloc(sizeof(*v));

	perftools__profiles__value_type__init(v);
	v->type = str(b, type);
	v->unit = str(b, unit);
	return v;
}

static Label *label(struct builder *b, const char *key, const char *s, int64_t num)
{
	Label *l = xmalloc(sizeof(*l));

	perftools__profiles__label__init(l);
	l->key = str(b, key);
	if (s)
		l->str = str(b, s);
	else
		l->num = num;
	return l;
}

static Sample *sample(struct builder *b, const struct stack *s, bool cgroup_root, bool wall)
{
	Sample *smp = xmalloc(sizeof(*smp));
	const char *comm = strrchr(s->root, ';') ? strrchr(s->root, ';') + 1 : s->root;
	struct frame cg = {.name = s->labels.cgroup, .kind = FRAME_GUEST};
	size_t nroot = 1, k;
	char buf[64], name[256];

	for (const char *c = s->root; *c; c++)
		nroot += *c == ';';
	cgroup_root = cgroup_root && s->labels.cgroup;
	perftools__profiles__sample__init(smp);
	smp->n_location_id = s->n + nroot + cgroup_root;
	smp->location_id = xmalloc(smp->n_location_id * sizeof(uint64_t));
	/* Leaf first; the root frame COMM-PID, the programs it descends from
	 * (a chain, ';' between), or the cgroup above them last. */
	for (uint32_t i = 0; i < s->n; i++)
		smp->location_id[i] = location(b, &s->frames[s->n - 1 - i]);
	k = s->n + nroot;
	for (const char *r = s->root; profile_root_next(&r, name, sizeof(name));) {
		struct frame root = {.name = strtab_add(&b->names, name), .kind = FRAME_GUEST};

		smp->location_id[--k] = location(b, &root);
	}
	if (cgroup_root)
		smp->location_id[s->n + nroot] = location(b, &cg);
	smp->n_value = wall ? 4 : 2;
	smp->value = xmalloc(smp->n_value * sizeof(int64_t));
	smp->value[0] = s->count;
	smp->value[1] = s->ns;
	if (wall) {
		/* wall, then its parts: cpu and off_cpu. */
		smp->value[3] = s->where == IN_OFFCPU ? s->ns : 0;
		smp->value[2] = s->ns - smp->value[3];
	}
	/* comm is COMM-PID without its -PID. */
	snprintf(buf, sizeof(buf), "%s", comm);
	if (strrchr(buf, '-'))
		*strrchr(buf, '-') = 0;
	smp->label = xmalloc(7 * sizeof(Label *));
	smp->label[0] = label(b, "pid", NULL, s->pid);
	smp->label[1] = label(b, "tid", NULL, s->tid);
	smp->label[2] = label(b, "comm", buf, 0);
	smp->n_label = 3;
	/* What a fleet filters by: the emulator, the guest, the container. */
	if (s->labels.qemu)
		smp->label[smp->n_label++] = label(b, "qemu", s->labels.qemu, 0);
	if (s->labels.arch)
		smp->label[smp->n_label++] = label(b, "arch", s->labels.arch, 0);
	if (s->labels.command)
		smp->label[smp->n_label++] = label(b, "command", s->labels.command, 0);
	if (s->labels.cgroup && !cgroup_root)
		smp->label[smp->n_label++] = label(b, "cgroup", s->labels.cgroup, 0);
	return smp;
}

static void free_profile(struct builder *b)
{
	Profile *p = &b->p;

	for (size_t i = 0; i < p->n_sample; i++) {
		for (size_t k = 0; k < p->sample[i]->n_label; k++)
			free(p->sample[i]->label[k]);
		free(p->sample[i]->label);
		free(p->sample[i]->location_id);
		free(p->sample[i]->value);
		free(p->sample[i]);
	}
	for (size_t i = 0; i < p->n_location; i++) {
		free(p->location[i]->line[0]);
		free(p->location[i]->line);
		free(p->location[i]);
	}
	for (size_t i = 0; i < p->n_function; i++)
		free(p->function[i]);
	for (size_t i = 0; i < p->n_mapping; i++)
		free(p->mapping[i]);
	for (size_t i = 0; i < p->n_sample_type; i++)
		free(p->sample_type[i]);
	free(p->sample_type);
	free(p->period_type);
	free(p->sample);
	free(p->location);
	free(p->function);
	free(p->mapping);
	free(p->string_table);
	index_free(&b->strings);
	index_free(&b->functions);
	index_free(&b->locations);
	index_free(&b->mappings);
}

/* gzip LEN bytes of BUF to F. */
static int gzip_to(FILE *f, const uint8_t *buf, size_t len)
{
	z_stream z = {0};
	uint8_t out[65536];
	int ret;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)buf;
	z.avail_in = len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		ret = deflate(&z, Z_FINISH);
		if (ret == Z_STREAM_ERROR ||
		    fwrite(out, 1, sizeof(out) - z.avail_out, f) != sizeof(out) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (ret != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

/*
 * pprof takes the first mapping for the main binary (its "File:" and
 * "Build ID:"): make it the guest image of the hottest stack's innermost
 * guest frame, whatever stack comes first.
 */
static void main_mapping(struct builder *b, const struct profile *prof)
{
	const struct stack *hot = NULL;

	for (size_t i = 0; i < prof->n; i++)
		if (!hot || prof->v[i]->count > hot->count)
			hot = prof->v[i];
	for (uint32_t i = hot ? hot->n : 0; i > 0; i--) {
		const struct frame *f = &hot->frames[i - 1];

		if (f->kind == FRAME_GUEST && f->img.path) {
			mapping(b, f);
			return;
		}
	}
}

int64_t profile_time_nanos(const struct profile *prof)
{
	struct timespec rt, mono;

	if (!prof->start_ns)
		return 0;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	return rt.tv_sec * 1000000000ll + rt.tv_nsec -
	       (mono.tv_sec * 1000000000ll + mono.tv_nsec - (int64_t)prof->start_ns);
}

int pprof_write(const struct profile *prof, FILE *f)
{
	return pprof_write_opts(prof, NULL, f);
}

int pprof_write_opts(const struct profile *prof, const struct pprof_opts *o, FILE *f)
{
	struct builder b = {0};
	Profile *p = &b.p;
	uint8_t *buf;
	size_t len;
	int err;

	perftools__profiles__profile__init(p);
	str(&b, ""); /* index 0 */
	/*
	 * A wall-clock profile (--off-cpu): wall time, then its two parts,
	 * each its own sample type; Pyroscope files a profile with a "wall"
	 * type under that name (pkg/og/convert/pprof/profile.go metricName).
	 */
	p->n_sample_type = prof->wall ? 4 : 2;
	p->sample_type = xmalloc(p->n_sample_type * sizeof(ValueType *));
	p->sample_type[0] = value_type(&b, "samples", "count");
	p->sample_type[1] = value_type(&b, prof->wall ? "wall" : "cpu", "nanoseconds");
	if (prof->wall) {
		p->sample_type[2] = value_type(&b, "cpu", "nanoseconds");
		p->sample_type[3] = value_type(&b, "off_cpu", "nanoseconds");
	}
	p->period_type = value_type(&b, prof->wall ? "wall" : "cpu", "nanoseconds");
	p->period = prof->freq ? 1000000000ll / prof->freq : 0;
	p->default_sample_type = str(&b, prof->wall ? "wall" : "cpu");
	p->n_sample = prof->n;
	p->sample = xmalloc((prof->n ? prof->n : 1) * sizeof(Sample *));
	main_mapping(&b, prof);
	for (size_t i = 0; i < prof->n; i++)
		p->sample[i] = sample(&b, prof->v[i], o && o->cgroup_root, prof->wall);
	if (prof->start_ns) {
		p->time_nanos = o && o->time_nanos ? o->time_nanos : profile_time_nanos(prof);
		p->duration_nanos = prof->end_ns - prof->start_ns;
	}
	len = perftools__profiles__profile__get_packed_size(p);
	buf = xmalloc(len ? len : 1);
	perftools__profiles__profile__pack(p, buf);
	if (o && o->raw_len)
		*o->raw_len = len;
	err = gzip_to(f, buf, len);
	free(buf);
	free_profile(&b);
	strtab_free(&b.names);
	return err;
}

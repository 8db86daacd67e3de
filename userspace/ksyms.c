// SPDX-License-Identifier: GPL-2.0-or-later
#include "ksyms.h"
#include "codemap.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

struct ksym {
	uint64_t addr;
	const char *name;
};

static struct ksym *ksyms;
static size_t nksyms;
static int loaded;

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], name[256], type;
	unsigned long long addr;
	size_t cap = 0;

	loaded = 1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		if (type != 't' && type != 'T')
			continue;
		grow(&ksyms, &cap, nksyms + 1, sizeof(*ksyms));
		ksyms[nksyms++] = (struct ksym){addr, intern(name)};
	}
	fclose(f);
	qsort(ksyms, nksyms, sizeof(*ksyms), cmp_ksym);
	if (!nksyms)
		pr_dbg("no kernel symbols in /proc/kallsyms (kptr_restrict?)");
}

const char *ksym_name(uint64_t addr)
{
	size_t i;

	if (!loaded)
		load();
	i = count_le(ksyms, nksyms, sizeof(*ksyms), offsetof(struct ksym, addr), addr);
	return i ? ksyms[i - 1].name : NULL;
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/config.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *config_path(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strncmp(argv[i], "--config=", 9))
			return argv[i] + 9;
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			return argv[i + 1];
	}
	return NULL;
}

/* LINE without the blanks around it. */
static char *trim(char *line)
{
	char *end = line + strlen(line);

	while (*line == ' ' || *line == '\t')
		line++;
	while (end > line &&
	       (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		*--end = 0;
	return line;
}

bool config_cmdline(struct config_cmdline *c, int *argc, char ***argv,
		    bool (*known)(const char *name))
{
	const char *path = config_path(*argc, *argv);
	char *line = NULL, **v;
	size_t cap = 0;
	int n = 1, lineno = 0;
	bool bad = false;
	FILE *f;

	if (!path)
		return true;
	f = fopen(path, "re");
	if (!f) {
		pr_err("cannot read the configuration %s: %s", path, strerror(errno));
		return false;
	}
	v = xcalloc(*argc + 2, sizeof(*v));
	v[0] = (*argv)[0];
	while (getline(&line, &cap, f) > 0) {
		char *t = trim(line), *eq = strchr(t, '=');

		lineno++;
		if (!*t || *t == '#')
			continue;
		if (*t == '-' || (eq && eq == t)) {
			pr_err("%s:%d: '%s' is not 'option' or 'option = value'", path, lineno, t);
			bad = true;
			break;
		}
		if (eq)
			*eq = 0;
		if (!known(trim(t))) {
			pr_err("%s:%d: unrecognized option '--%s' (the keys are the long options "
			       "of "
			       "--help, but config)",
			       path, lineno, trim(t));
			bad = true;
			break;
		}
		if (eq)
			t = xasprintf("--%s=%s", trim(t), trim(eq + 1));
		else
			t = xasprintf("--%s", t);
		v = xrealloc(v, (n + *argc + 1) * sizeof(*v));
		v[n++] = t;
	}
	fclose(f);
	free(line);
	if (bad) {
		for (int i = 1; i < n; i++)
			free(v[i]);
		free(v);
		return false;
	}
	c->v = v;
	c->n = n;
	for (int i = 1; i < *argc; i++)
		v[n++] = (*argv)[i];
	v[n] = NULL;
	*argc = n;
	*argv = v;
	return true;
}

void config_free(struct config_cmdline *c)
{
	for (int i = 1; c->v && i < c->n; i++)
		free(c->v[i]);
	free(c->v);
	*c = (struct config_cmdline){0};
}

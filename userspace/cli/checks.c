// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What can be checked before anything runs: the output directory, the
 * files to write, the listing cache, the guest files named, --top's
 * terminal and the capabilities the run needs.  Each failure is one line.
 */
#include "cli/checks.h"
#include "coverage/listcache.h"
#include "engine/privileges.h"
#include "naming/guest.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Can the profiles be written?  Said before anything runs, not after. */
static int check_paths(const char *what, const char *const *files, int n)
{
	for (int i = 0; i < n; i++) {
		char *dir, *slash;
		int err;

		/* (A report's "-" is stderr.) */
		if (!strcmp(files[i], "-"))
			continue;
		dir = xstrdup(files[i]);
		slash = strrchr(dir, '/');

		if (slash)
			*slash = 0;
		/* As the tool will write: its effective ids and capabilities. */
		err = faccessat(AT_FDCWD, slash ? (*dir ? dir : "/") : ".", W_OK | X_OK, AT_EACCESS)
			      ? -errno
			      : 0;
		if (err)
			pr_err("cannot write the %s %s: %s", what, files[i], strerror(-err));
		free(dir);
		if (err)
			return err;
	}
	return 0;
}

static int check_outdir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		pr_err("output directory %s does not exist", dir);
		return -ENOENT;
	}
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS)) {
		pr_err("output directory %s is not writable", dir);
		return -EACCES;
	}
	return 0;
}

/* Bad input is an error before any QEMU starts, with one line. */
int check_input(const struct engine_opts *o)
{
	struct privilege_needs needs = {
		.ptrace = o->pid || o->all,
		.perfmap = o->perfmap,
		.jitdump = o->jitdump,
		.remove = o->keep_exited.on,
	};

	if (o->outdir && check_outdir(o->outdir))
		return -EINVAL;
	if (o->top && !isatty(STDOUT_FILENO)) {
		pr_err("--top needs a terminal on standard output");
		return -EINVAL;
	}
	if (check_paths("profile", o->prof.files, o->prof.nfiles) ||
	    check_paths("coverage", o->cov.files, o->cov.nfiles) ||
	    check_paths("report", o->reports, o->nreports) ||
	    (o->timeline && check_paths("timeline", &o->timeline, 1)))
		return -EINVAL;
	if (o->cov.cache_dir && listcache_check(o->cov.cache_dir))
		return -EINVAL;
	for (int i = 0; i < o->nguest_elves; i++)
		if (guest_check_spec(o->guest_elves[i], false))
			return -EINVAL;
	for (int i = 0; i < o->nguest_syms; i++)
		if (guest_check_spec(o->guest_syms[i], true))
			return -EINVAL;
	return check_privileges(&needs);
}

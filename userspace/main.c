// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qemu-jitbpf: name the code QEMU's TCG JIT generates, for perf.
 *
 * main() reads the options (cli/options.c), checks what can be checked
 * before anything runs (cli/checks.c) and hands them to the engine
 * (engine/engine.c), which attaches BPF programs to the USDT probes of a
 * patched QEMU (a running one, or one it launches, and the processes it
 * forks; or every QEMU of the host), follows every translated block,
 * names the guest code with the guest's own ELF files and writes perf
 * maps, jitdumps, uftrace data, profiles and coverage.
 */
#include <errno.h>
#include <gelf.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/checks.h"
#include "cli/options.h"
#include "cli/values.h"
#include "coverage/listcache.h"
#include "engine/detach.h"
#include "engine/engine.h"
#include "util/config.h"
#include "util/util.h"

static volatile sig_atomic_t exiting, reload;

static void sig_handler(int sig)
{
	if (sig == SIGHUP)
		reload = 1;
	exiting = 1;
}

int main(int argc, char **argv)
{
	char *outdir = NULL, *spool = NULL, *cache, **orig = argv;
	struct config_cmdline cfg = {0};
	struct engine_opts o = {0};
	int code;

	if (detach_helper_asked(argc, argv))
		return detach_helper_main(argv);
	if (!config_cmdline(&cfg, &argc, &argv, options_config_key))
		return 2;
	if (!options_parse(&o, argc, argv))
		return 2;
	elf_version(EV_CURRENT);
	if (check_input(&o))
		return 1;
	o.cov.cache_dir = cache = options_no_cache() ? NULL : listcache_dir(o.cov.cache_dir);
	if (o.outdir)
		o.outdir = outdir = realpath(o.outdir, NULL);
	if (o.push.url && !o.push.spool)
		o.push.spool = spool =
			xasprintf("%s%spush-spool", o.outdir ? o.outdir : "", o.outdir ? "/" : "");
	signal(SIGINT, sig_handler);
	signal(SIGTERM, sig_handler);
	/* A hang-up completes the files too; with --config it reloads. */
	signal(SIGHUP, sig_handler);
	code = engine_run(&o, &exiting);
	if (reload && !code && config_path(argc, argv)) {
		/* A service's reload: every file is complete; the same command,
		 * which reads the configuration again. */
		pr_err("SIGHUP: files complete; starting again with %s", config_path(argc, argv));
		execv("/proc/self/exe", orig);
		pr_err("cannot start again: %s", strerror(errno));
		return 1;
	}
	/* The ELF/DWARF cache and the interned names stay reachable from
	 * globals: freeing libdw's line tables takes longer than exiting. */
	options_free(&o);
	free(outdir);
	free(spool);
	free(cache);
	config_free(&cfg);
	return code;
}

// SPDX-License-Identifier: GPL-2.0-or-later
/* What a run did, said at its end; and -p's status line on a terminal. */
#include "engine/engine.h"
#include "naming/symbols.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static uint64_t tbs_so_far(struct engine *e, uint64_t *flushes)
{
	uint64_t tbs = e->tbs;

	*flushes = e->flushes;
	pidtab_for_each(&e->procs, n)
	{
		tbs += proc_of(n)->s.jm.tbs;
		*flushes += proc_of(n)->s.jm.flushes;
	}
	return tbs;
}

void engine_status_line(struct engine *e)
{
	uint64_t flushes, tbs = tbs_so_far(e, &flushes);

	fprintf(stderr, "\rqemu-jitbpf: pid %d: %" PRIu64 " TBs, %" PRIu64 " flushes, %llu lost  ",
		e->root.pid, tbs, flushes, probes_lost(&e->probes));
}

void engine_summary(struct engine *e)
{
	const struct engine_opts *o = e->o;
	char lost[96] = "", keep[48];
	unsigned long long calls, counts, tbs;
	struct rusage ru;
	struct elf_cache_stats files = elf_cache_stats();

	if (e->tbs_early)
		pr_dbg("%" PRIu64 " TB reports predate the handshake (QEMU translates "
		       "again what still runs)",
		       e->tbs_early);
	if (e->tbs_kept)
		pr_dbg("%" PRIu64
		       " TB reports came before the handshake's prologue: kept, and read "
		       "once it came",
		       e->tbs_kept);
	if (e->tbs_held && e->stock_noted)
		pr_dbg("%" PRIu64 " TB reports from before the handshake (a stock QEMU's: before "
		       "its guest_base was known), kept until it came",
		       e->tbs_held);
	else if (e->tbs_held)
		pr_dbg("%" PRIu64 " TB reports from before the handshake (QEMU held them while we "
		       "attached)",
		       e->tbs_held);
	if (e->tbs_cached)
		pr_dbg("%" PRIu64 " TB reports of QEMU's code cache at the handshake (what ran "
		       "before we came)",
		       e->tbs_cached);
	if (e->calls_waits)
		pr_dbg("QEMU waited %" PRIu64 " times for us to read its calls", e->calls_waits);
	if (!getrusage(RUSAGE_SELF, &ru))
		pr_dbg("peak RSS %ld KiB, %.3f s of CPU", ru.ru_maxrss,
		       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	pr_dbg("ELF files: %" PRIu64 " read, %" PRIu64 " freed, %zu in memory (%zu idle)",
	       files.loaded, files.freed, files.files, files.idle);
	if (e->profiling)
		fprintf(stderr,
			"qemu-jitbpf: %" PRIu64 " samples at %u Hz, %" PRIu64 " samples lost\n",
			profiler_samples(&e->prof), o->prof.freq, profiler_lost(&e->prof));
	if (e->ret.keep.on)
		fprintf(stderr,
			"qemu-jitbpf: %" PRIu64 " files of exited processes removed, those of %zu "
			"kept (--keep-exited=%s)\n",
			e->ret.removed, e->ret.n, keep_str(&o->keep_exited, keep, sizeof(keep)));
	if (e->root.native && !e->seen)
		pr_warn("%s ran no QEMU with the qemu-jitbpf probes", e->root.exe);
	fprintf(stderr,
		"qemu-jitbpf: %" PRIu64 " QEMU processes (%" PRIu64 " forked), %" PRIu64
		" perf maps, %" PRIu64 " jitdumps, %" PRIu64 " uftrace, %" PRIu64
		" without a handshake\n",
		e->seen, e->forks, e->maps, e->jitdumps, e->uftraces, e->unnamed);
	if (e->unfollowed)
		fprintf(stderr,
			"qemu-jitbpf: %" PRIu64 " forked while we attached to their parent, gone "
			"before we could attach to them (-v names them)\n",
			e->unfollowed);
	calls = probes_lost_calls(&e->probes);
	counts = probes_lost_counts(&e->probes);
	tbs = probes_lost_tbs(&e->probes) + e->tbs_incomplete;
	/* Which kinds of events were lost, where any were. */
	for (int i = 0; i < 3; i++) {
		static const char *const kinds[] = {"TB reports", "calls", "counts"};
		unsigned long long n = i == 0 ? tbs : i == 1 ? calls : counts;
		size_t at = strlen(lost);

		if (n)
			snprintf(lost + at, sizeof(lost) - at, "%s%llu %s", at ? ", " : " (", n,
				 kinds[i]);
	}
	if (lost[0])
		strncat(lost, ")", sizeof(lost) - strlen(lost) - 1);
	fprintf(stderr,
		"qemu-jitbpf: %" PRIu64 " TBs, %" PRIu64 " flushes, %" PRIu64
		" bytes written, %llu events lost%s%s\n",
		e->tbs, e->flushes, e->bytes, probes_lost(&e->probes) + tbs, lost,
		e->nameless ? "; no files written: no complete handshake" : "");
	if (e->root_map)
		fprintf(stderr, "qemu-jitbpf: perf map: %s\n", e->root_map);
	if (e->root_marker)
		fprintf(stderr, "qemu-jitbpf: jitdump: %s\n", e->root_marker);
	if (e->uft_records >= 0)
		fprintf(stderr, "qemu-jitbpf: uftrace: %s (%lld records)\n", o->uftrace,
			e->uft_records);
	for (int i = 0; e->profiling && !e->nameless && i < o->prof.nfiles; i++)
		fprintf(stderr, "qemu-jitbpf: profile: %s\n", o->prof.files[i]);
}

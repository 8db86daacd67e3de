// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine/target.h"
#include "engine/probes.h"
#include "naming/elfnotes.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static uint16_t elf_machine(const char *path)
{
	GElf_Ehdr eh;
	uint16_t m = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (elf && gelf_getehdr(elf, &eh))
		m = eh.e_machine;
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return m;
}

/*
 * Fill in exe; check it is a QEMU with our probes.  -EINVAL for a program
 * that is no QEMU at all, said only unless QUIET.
 */
static int inspect_probes(struct target *t, bool quiet)
{
	char link[64], comm[64] = "", *base;
	ssize_t n;
	FILE *f;

	snprintf(link, sizeof(link), "/proc/%d/exe", t->pid);
	n = readlink(link, t->exe, sizeof(t->exe) - 1);
	if (n < 0) {
		pr_err("cannot read %s: %s", link, strerror(errno));
		return -errno;
	}
	t->exe[n] = 0;
	/*
	 * The file itself, by its probes: in a container its path may name
	 * another file here, or none ("/" for an emulator binfmt_misc opened
	 * in a namespace that has gone).
	 */
	if (elf_has_usdt(link, "qemu", "tb_gen_code_batch"))
		return 0;
	if (binary_is_stock(link)) {
		t->stock = true;
		return 0;
	}
	base = basename(t->exe);
	if (strstr(base, "qemu")) {
		pr_err("%s (pid %d) has no USDT probes: it works with a QEMU built with ours "
		       "(make qemu, see README.md), or, degraded, with a linux-user QEMU built "
		       "with the dtrace trace backend (Fedora's, RHEL's, Azure Linux's)",
		       t->exe, t->pid);
		return -ENOTSUP;
	}
	if (!quiet) {
		snprintf(link, sizeof(link), "/proc/%d/comm", t->pid);
		f = fopen(link, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		pr_err("process %d (%s, %s) is not a QEMU", t->pid, comm, t->exe);
	}
	return -EINVAL;
}

/* Its user and group, and how it sees files. */
static int inspect_owner(struct target *t)
{
	char link[64];
	struct stat st;

	snprintf(link, sizeof(link), "/proc/%d", t->pid);
	if (stat(link, &st))
		return -errno;
	t->uid = st.st_uid;
	t->gid = st.st_gid;
	proc_view_open(&t->view, t->pid);
	if (t->view.foreign)
		pr_dbg("pid %d: in a container (pid %d there)", t->pid, t->view.nspid);
	return 0;
}

/* The rest of what we know of a QEMU (inspect_probes() said it is one). */
static int inspect_rest(struct target *t)
{
	char link[64];
	int err = inspect_owner(t);

	if (err)
		return err;
	snprintf(link, sizeof(link), "/proc/%d/exe", t->pid);
	t->system = elf_has_usdt(link, "qemu", "loader_elf_image");
	t->host_machine = elf_machine(link);
	t->pidfd = syscall(SYS_pidfd_open, t->pid, 0);
	return 0;
}

static int inspect(struct target *t, bool quiet)
{
	int err = inspect_probes(t, quiet);

	return err ? err : inspect_rest(t);
}

static void init(struct target *t, pid_t pid)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->pidfd = -1;
	t->view.root_fd = -1;
}

int target_observe(struct target *t, pid_t pid)
{
	char link[64];
	struct stat st;
	ssize_t n;

	init(t, pid);
	t->exited = true; /* not ours to wait for: -a learns of exits from BPF */
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, t->exe, sizeof(t->exe) - 1);
	snprintf(link, sizeof(link), "/proc/%d", pid);
	if (n < 0 || stat(link, &st))
		return -errno;
	t->exe[n] = 0;
	t->uid = st.st_uid;
	t->gid = st.st_gid;
	proc_view_open(&t->view, pid);
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	t->host_machine = elf_machine(link);
	t->system = elf_has_usdt(link, "qemu", "loader_elf_image");
	t->stock = binary_is_stock(link);
	return 0;
}

int target_attach(struct target *t, pid_t pid)
{
	init(t, pid);
	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH)) {
		pr_err("process %d is not running", pid);
		return -ESRCH;
	}
	return inspect(t, false);
}

/* Room for a pid's digits in an environment string the child completes. */
#define PID_DIGITS 10

/*
 * The command's environment: ours, without the variables we set (and any
 * stale QEMU_JIT_* naming another tracer), then theirs.  Those naming the
 * child's pid end in PID_DIGITS spaces that the child fills in
 * (fill_pid()): it is vfork()ed, and may not allocate.
 */
static char **launch_env(const char *jitdump_dir, enum target_hold hold, bool counts, size_t *ours,
			 size_t *pids)
{
	static const char *const names[] = {
		"QEMU_JITDUMP_DIR=",	       "QEMU_JIT_ATTACH_WAIT=", "QEMU_JIT_ATTACH_HOLD=",
		"QEMU_JIT_ATTACH_HOLD_CALLS=", "QEMU_JIT_COUNTS=",	"QEMU_JIT_TRACER="};
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = xcalloc(n + 7, sizeof(*env));
	/* (The user's QEMU_JITDUMP_DIR stays unless we give one.) */
	for (size_t i = 0; i < n; i++) {
		bool mine = false;

		for (size_t j = jitdump_dir ? 0 : 1; j < sizeof(names) / sizeof(names[0]); j++)
			mine |= !strncmp(environ[i], names[j], strlen(names[j]));
		if (!mine)
			env[k++] = environ[i];
	}
	*ours = k;
	if (jitdump_dir)
		env[k++] = xasprintf("QEMU_JITDUMP_DIR=%s", jitdump_dir);
	/* Every QEMU the tree execs waits at its start until we have attached
	 * to it, while we live: a short one is not gone before (patch 0034). */
	env[k++] = xasprintf("QEMU_JIT_TRACER=%d", (int)getpid());
	*pids = k;
	/* Ask QEMU to wait for our probes after its initialization (exec
	 * keeps the pid). */
	env[k++] = xasprintf("QEMU_JIT_ATTACH_WAIT=%*s", PID_DIGITS, "");
	/* A QEMU that knows how holds instead of waiting. */
	if (hold == HOLD_REPORTS)
		env[k++] = xasprintf("QEMU_JIT_ATTACH_HOLD=%*s", PID_DIGITS, "");
	else if (hold == HOLD_CALLS)
		env[k++] = xasprintf("QEMU_JIT_ATTACH_HOLD_CALLS=%*s", PID_DIGITS, "");
	/* Counts from its first block on, not from a flush later. */
	if (counts)
		env[k++] = xasprintf("QEMU_JIT_COUNTS=%*s", PID_DIGITS, "");
	return env;
}

/* In the vfork()ed child: its PID into the spaces that end ENV[FROM...]. */
static void fill_pid(char **env, size_t from, pid_t pid)
{
	for (char **e = env + from; *e; e++)
		*sput_dec(*e + strlen(*e) - PID_DIGITS, (uint64_t)pid, false) = 0;
}

int target_launch(struct target *t, char **argv, const char *jitdump_dir, enum target_hold hold,
		  bool counts)
{
	size_t ours, pids;
	char **env = launch_env(jitdump_dir, hold, counts, &ours, &pids);
	volatile int exec_errno = 0;
	char exe[64];
	int status, err;
	pid_t pid;

	init(t, 0);
	/*
	 * vfork: none of our memory is copied, and we go on as soon as the
	 * command has exec'd (a fork cost 0.3 ms more).  The child makes
	 * system calls only, and writes its pid into ENV, made for it.
	 */
	pid = vfork();
	if (pid == 0) {
		fill_pid(env, pids, getpid());
		/* A tool given capabilities (not root) runs the command with
		 * its user's rights only. */
		prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
		/* Stop at exec: QEMU is checked before it runs. */
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvpe(argv[0], argv, env);
		exec_errno = errno;
		_exit(127);
	}
	err = pid < 0 ? -errno : 0;
	for (size_t i = ours; env[i]; i++)
		free(env[i]);
	free(env);
	if (err)
		return err;
	if (exec_errno)
		fprintf(stderr, "qemu-jitbpf: cannot run %s: %s\n", argv[0], strerror(exec_errno));
	t->pid = pid;
	t->launched = true;
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		t->exited = t->reaped = true;
		t->status = status;
		return -ECHILD;
	}
	t->stopped = true;
	t->held = true;
	err = inspect_probes(t, true);
	if (err == -EINVAL) {
		/* Not a QEMU: a command whose tree runs them (unshare into a
		 * container, a build); it stays stopped until we follow it. */
		t->native = true;
		err = inspect_owner(t);
		if (!err)
			return 0;
	}
	/*
	 * A QEMU that waits for its tracer (QEMU_JIT_ATTACH_WAIT) can
	 * initialize while we load and attach, and while we learn the rest.
	 */
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	if (!err && elf_has_usdt(exe, "qemu", "jit_attach_wait")) {
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		t->stopped = false;
		/* Woken on our CPU, QEMU would wait for a time slice of our
		 * loading (up to 4 ms here): it goes first. */
		sched_yield();
	}
	if (!err)
		err = inspect_rest(t);
	if (err) {
		kill(pid, SIGKILL);
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		waitpid(pid, &status, 0);
		t->exited = true;
		t->stopped = false;
		t->held = false;
	}
	return err;
}

void target_resume(struct target *t)
{
	if (t->stopped && !t->exited)
		ptrace(PTRACE_DETACH, t->pid, NULL, NULL);
	t->stopped = false;
	t->held = false;
}

void target_kill(struct target *t)
{
	if (!target_alive(t))
		return; /* it ended on its own: its status stands */
	kill(t->pid, SIGKILL);
	target_resume(t);
	t->exited = true; /* by us: its wait status is not a result */
}

/* Collect a launched QEMU's exit (WAIT_FLAGS: WNOHANG or 0); has it? */
static bool collect(struct target *t, int wait_flags)
{
	struct rusage ru;
	pid_t r;

	while ((r = wait4(t->pid, &t->status, wait_flags, &ru)) == t->pid ||
	       (r < 0 && errno == EINTR && !wait_flags)) {
		if (r != t->pid || !(WIFEXITED(t->status) || WIFSIGNALED(t->status)))
			continue;
		t->exited = t->reaped = true;
		t->cpu_s = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
		t->maxrss_kib = ru.ru_maxrss;
		return true;
	}
	return false;
}

bool target_alive(struct target *t)
{
	if (t->exited)
		return false;
	if (t->launched)
		collect(t, WNOHANG);
	else if (kill(t->pid, 0) && errno == ESRCH)
		t->exited = true;
	return !t->exited;
}

void target_reap(struct target *t)
{
	if (t->launched && t->ended && !t->exited)
		collect(t, 0);
}

void target_wait(struct target *t, int fd, int timeout_ms)
{
	struct pollfd p[2] = {{fd, POLLIN, 0}, {t->exited ? -1 : t->pidfd, POLLIN, 0}};

	poll(p, 2, timeout_ms);
}

int target_exit_code(const struct target *t)
{
	if (!t->launched || !t->reaped)
		return -1;
	if (WIFEXITED(t->status))
		return WEXITSTATUS(t->status);
	if (WIFSIGNALED(t->status))
		return 128 + WTERMSIG(t->status);
	return -1;
}

void target_free(struct target *t)
{
	proc_view_close(&t->view);
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}

char *target_cmdline(const struct target *t)
{
	char path[64], buf[4096];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", t->pid);
	f = fopen(path, "re");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	args_line(buf, n);
	return xstrdup(n ? buf : t->exe);
}

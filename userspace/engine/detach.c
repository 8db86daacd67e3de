// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Detaching without waiting, and without piling up.
 *
 * Releasing a uprobe link makes the kernel wait for RCU grace periods,
 * 50-100 ms here, whoever drops the last reference.  Releases that run at
 * the same time share their grace periods, so links are closed in
 * parallel threads: a run's links cost about one wait, not one per link.
 *
 * Once QEMU has exited nothing depends on our links, and that wait need
 * not delay our exit: the links go to a helper process, one per host
 * (an abstract unix socket names it), which closes in parallel whatever
 * tools hand it and exits when idle.  A tool that finds no helper starts
 * one: itself, run anew (detach_helper_main()).  So back-to-back runs
 * never wait for each other, and at most one process of ours is left
 * behind.
 */
#include "engine/detach.h"
#include "profiler/sampler.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* The helper exits when no tool has come for this long. */
#define HELPER_IDLE_MS 500

static const char helper_name[] = "qemu-jitbpf-detach";

static void *close_one(void *arg)
{
	close((int)(intptr_t)arg);
	return NULL;
}

void detach_close(int *fds, int n)
{
	pthread_t *th = xcalloc(n ? n : 1, sizeof(*th));
	bool *started = xcalloc(n ? n : 1, sizeof(*started));

	for (int i = 0; i < n; i++)
		started[i] = !pthread_create(&th[i], NULL, close_one, (void *)(intptr_t)fds[i]);
	for (int i = 0; i < n; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		else
			close(fds[i]);
	}
	free(started);
	free(th);
}

int detach_prog_fds(struct bpf_object *obj, const struct sampler *sm, int *fds, int max)
{
	struct bpf_program *p;
	int n = 0;

	bpf_object__for_each_program(p, obj)
	{
		if (bpf_program__fd(p) >= 0 && n < max)
			fds[n++] = bpf_program__fd(p);
	}
	if (sm)
		n += sampler_prog_fds(sm, fds + n, max - n);
	return n;
}

/* The ids of the programs PROG_FDS (0 where unknown); free it. */
static __u32 *prog_ids(const int *prog_fds, int nprogs)
{
	__u32 *ids = xcalloc(nprogs ? nprogs : 1, sizeof(*ids));

	for (int i = 0; i < nprogs; i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (prog_fds[i] >= 0 && !bpf_prog_get_info_by_fd(prog_fds[i], &info, &len))
			ids[i] = info.id;
	}
	return ids;
}

/* A new fd for link ID if it runs one of PROGS (and PID's, if not 0), else -1. */
static int open_ours(__u32 id, const __u32 *progs, int nprogs, pid_t pid)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_link_get_fd_by_id(id);
	bool ours = false;

	if (fd < 0)
		return -1;
	if (!bpf_link_get_info_by_fd(fd, &info, &len))
		for (int i = 0; i < nprogs; i++)
			ours |= progs[i] && info.prog_id == progs[i];
	/* Of PID alone: a USDT program attached to that process. */
	if (pid && (info.type != BPF_LINK_TYPE_UPROBE_MULTI || info.uprobe_multi.pid != (__u32)pid))
		ours = false;
	if (!ours) {
		close(fd);
		return -1;
	}
	return fd;
}

static void push(void *array, int *n, int *cap, const void *v, size_t size)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*(void **)array = xrealloc(*(void **)array, *cap * size);
	}
	memcpy((char *)*(void **)array + *n * size, v, size);
	(*n)++;
}

int detach_collect(const int *prog_fds, int nprogs, pid_t pid, __u32 *from, int **fds, __u32 **ids)
{
	__u32 *progs = prog_ids(prog_fds, nprogs), id = from ? *from : 0;
	int n = 0, cap = 0, nids = 0, ids_cap = 0;

	*fds = NULL;
	if (ids)
		*ids = NULL;
	while (!bpf_link_get_next_id(id, &id)) {
		int fd = open_ours(id, progs, nprogs, pid);

		if (from && id > *from)
			*from = id;
		if (fd < 0)
			continue;
		push(fds, &n, &cap, &fd, sizeof(fd));
		if (ids)
			push(ids, &nids, &ids_cap, &id, sizeof(id));
	}
	free(progs);
	return n;
}

int detach_reopen(const int *prog_fds, int nprogs, const __u32 *ids, size_t nids, int **fds)
{
	__u32 *progs = prog_ids(prog_fds, nprogs);
	int n = 0, cap = 0;

	*fds = NULL;
	for (size_t i = 0; i < nids; i++) {
		int fd = open_ours(ids[i], progs, nprogs, 0);

		if (fd >= 0)
			push(fds, &n, &cap, &fd, sizeof(fd));
	}
	free(progs);
	return n;
}

static socklen_t helper_addr(struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* Abstract: sun_path[0] is 0, and no file is left behind. */
	memcpy(a->sun_path + 1, helper_name, sizeof(helper_name) - 1);
	return offsetof(struct sockaddr_un, sun_path) + 1 + sizeof(helper_name) - 1;
}

/*
 * Hand FDS to a running helper: the connected socket, to be closed once
 * our own fds are (the helper waits for that), or -1 if there is none.
 */
static int send_to_helper(const int *fds, int n)
{
	char ctl[CMSG_SPACE(sizeof(int) * DETACH_MAX_FDS)] = {0};
	char byte = 0;
	struct iovec iov = {&byte, 1};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl,
		.msg_controllen = CMSG_SPACE(sizeof(int) * n),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	struct sockaddr_un a;
	socklen_t alen = helper_addr(&a);
	int s;

	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&a, alen)) {
		close(s);
		return -1;
	}
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	/* Once sent, the message holds the links: the helper closes them,
	 * or, if it is just leaving, its socket's release does. */
	if (sendmsg(s, &msg, MSG_NOSIGNAL) != 1) {
		close(s);
		return -1;
	}
	return s;
}

/*
 * Wait until the tool on the other end of FD has closed its own copies of
 * the links (it closes FD then): whoever drops the last reference pays the
 * kernel's wait, and that must be us.
 */
static void wait_for_eof(int fd)
{
	char byte;

	while (read(fd, &byte, 1) > 0 || errno == EINTR)
		errno = 0;
}

/* Take the links of every tool that is waiting to hand some over. */
static int receive_all(int ls, int *fds, int cap)
{
	int n = 0, c;

	while (n + DETACH_MAX_FDS <= cap && (c = accept4(ls, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		char ctl[CMSG_SPACE(sizeof(int) * DETACH_MAX_FDS)];
		char byte;
		struct iovec iov = {&byte, 1};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl,
				     .msg_controllen = sizeof(ctl)};
		struct cmsghdr *cm;

		if (recvmsg(c, &msg, MSG_CMSG_CLOEXEC) > 0)
			for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
				if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
					int k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

					memcpy(fds + n, CMSG_DATA(cm), sizeof(int) * k);
					n += k;
				}
		wait_for_eof(c);
		close(c);
	}
	return n;
}

bool detach_helper_asked(int argc, char **argv)
{
	return argc == 2 && !strcmp(argv[0], helper_name);
}

int detach_helper_main(char **argv)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct none[2] = {0};
	struct sched_param idle = {0};
	int batch[16 * DETACH_MAX_FDS], ls = atoi(argv[1]), on = 0;
	socklen_t len = sizeof(on);

	if (ls < 3 || getsockopt(ls, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) || !on) {
		fprintf(stderr, "qemu-jitbpf: %s is started by qemu-jitbpf itself\n", helper_name);
		return 2;
	}
	/* Named as the tool (ps, pgrep), not as /proc/self/exe. It only
	 * closes what it is given: no privilege, and no Ctrl-C.  It runs on
	 * CPUs nothing else wants (SCHED_IDLE): its closes must not slow the
	 * end of the run that started it, or the next run, on a small host. */
	prctl(PR_SET_NAME, "qemu-jitbpf", 0, 0, 0);
	sched_setscheduler(0, SCHED_IDLE, &idle);
	signal(SIGINT, SIG_IGN);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	syscall(SYS_capset, &h, none);
	for (;;) {
		struct pollfd p = {ls, POLLIN, 0};
		int n;

		if (poll(&p, 1, HELPER_IDLE_MS) <= 0)
			break;
		n = receive_all(ls, batch, sizeof(batch) / sizeof(batch[0]));
		detach_close(batch, n);
	}
	/* Leaving: a tool that connects from now on starts a new helper.
	 * What was queued and not accepted is released with the socket. */
	close(ls);
	return 0;
}

/* The helpers we started, reaped once they leave (they are our children). */
static pid_t helpers[8];

void detach_reap(void)
{
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (helpers[i] > 0 && waitpid(helpers[i], NULL, WNOHANG) == helpers[i])
			helpers[i] = 0;
}

/*
 * Become the host's helper: bind its name, then run ourselves anew as it,
 * with the listening socket LS its one fd besides /dev/null.  Exec, not
 * fork: a fork would copy our memory, tens of MiB once the files are read,
 * and we would wait for that; the exec is all we wait for.  Returns 0 if a
 * helper now listens (maybe another tool's), -1 if none can be had.
 */
static int start_helper(void)
{
	struct sockaddr_un a;
	socklen_t alen = helper_addr(&a);
	char *args[] = {(char *)helper_name, "3", NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	int ls, err;
	pid_t pid;

	detach_reap();
	ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ls < 0)
		return -1;
	/* Non-blocking: the helper accepts until none is waiting. */
	if (bind(ls, (struct sockaddr *)&a, alen) || listen(ls, 64)) {
		/* Another tool became the helper just now? */
		err = errno;
		close(ls);
		return err == EADDRINUSE ? 0 : -1;
	}
	sigemptyset(&none);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	/* Its fds: the socket as 3 (dup2 first: the socket may be 0, 1 or
	 * 2 if we were started without them), /dev/null as 0 to 2, and
	 * nothing else: an fd we inherited, such as a pipe our caller
	 * reads to its end, must not stay open in it. */
	posix_spawn_file_actions_adddup2(&fa, ls, 3);
	for (int i = 0; i < 3; i++)
		posix_spawn_file_actions_addopen(&fa, i, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, 4);
	/* Out of our session and process group: Ctrl-C and a terminal's
	 * hang-up are not for it. */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setsigmask(&at, &none);
	err = posix_spawn(&pid, "/proc/self/exe", &fa, &at, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(ls);
	if (err)
		return -1;
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (helpers[i] <= 0) {
			helpers[i] = pid;
			break;
		}
	return 0;
}

void detach_handoff(int *fds, int n)
{
	int done = -1;

	if (n > DETACH_MAX_FDS) {
		detach_close(fds, n);
		return;
	}
	for (int tries = 0; tries < 3 && done < 0; tries++) {
		done = send_to_helper(fds, n);
		if (done < 0 && start_helper())
			break;
	}
	if (done < 0) {
		/* No helper to be had: close them here. */
		detach_close(fds, n);
		return;
	}
	/* The helper holds the links: our closes cost nothing, and when it
	 * sees DONE closed, its own are the last. */
	for (int i = 0; i < n; i++)
		close(fds[i]);
	close(done);
}

// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine/handshake.h"
#include "naming/elfnotes.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

struct offset_query {
	struct stat exe;
	uint64_t off, addr;
};

static bool maps_offset(const struct map_entry *m, void *ctx)
{
	struct offset_query *q = ctx;

	if (m->ino != q->exe.st_ino || m->dev != q->exe.st_dev || q->off < m->offset ||
	    q->off + 2 > m->offset + (m->end - m->start))
		return false;
	q->addr = m->start + (q->off - m->offset);
	return true;
}

/* Address of file offset OFF of QEMU's binary in its address space. */
static int file_to_addr(pid_t pid, uint64_t off, uint64_t *addr)
{
	char *path = xasprintf("/proc/%d/exe", pid);
	struct offset_query q = {.off = off};
	int err = stat(path, &q.exe) ? -errno : maps_find(pid, maps_offset, &q);

	free(path);
	if (!err)
		*addr = q.addr;
	return err;
}

int handshake_init(struct handshake *h, const struct target *t)
{
	char exe[64];
	uint64_t off;
	int err;

	memset(h, 0, sizeof(*h));
	h->pid = t->pid;
	h->stock = t->stock;
	if (h->stock)
		return 0;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", t->pid);
	err = elf_usdt_semaphore(exe, "qemu", "jit_attach_request", &off);
	if (err && access(exe, F_OK)) {
		/* Gone before we could ask (its end says what it left). */
		pr_dbg("pid %d: gone before we could ask for its handshake", t->pid);
		return -ESRCH;
	}
	if (err) {
		pr_err("%s (pid %d) has an older qemu-jitbpf series without "
		       "qemu:jit_attach_request; rebuild it: make qemu",
		       t->exe, t->pid);
		return err;
	}
	err = file_to_addr(t->pid, off, &h->addr);
	if (err)
		pr_err("cannot find QEMU's request counter in /proc/%d/maps: %s", t->pid,
		       strerror(-err));
	return err;
}

/* Add STEP to the counter.  Another tool may add at the same time and an
 * increase be lost: the retry in handshake_poll() covers it. */
static int ask(struct handshake *h, uint16_t step)
{
	uint16_t v;
	struct iovec local = {&v, sizeof(v)}, remote = {(void *)(uintptr_t)h->addr, sizeof(v)};

	if (process_vm_readv(h->pid, &local, 1, &remote, 1, 0) != sizeof(v))
		return -errno;
	v += step;
	if (process_vm_writev(h->pid, &local, 1, &remote, 1, 0) != sizeof(v))
		return -errno;
	h->asked_ns = mono_ns();
	h->asks++;
	pr_dbg("attach request %u (counter %u)", h->asks, v);
	return 0;
}

int handshake_start(struct handshake *h, uint16_t step)
{
	int err;

	h->attached_ns = mono_ns();
	if (h->stock)
		return 0;
	err = ask(h, step);
	if (err && err != -ESRCH)
		pr_err("cannot ask QEMU (pid %d) for its handshake: %s", h->pid, strerror(-err));
	return err == -ESRCH ? 0 : err;
}

void handshake_event(struct handshake *h, uint64_t poll_ns)
{
	h->handshakes++;
	/* Seen by QEMU after our probes were in place: all of it reached us. */
	if (!h->answered && poll_ns >= h->attached_ns) {
		h->answered = true;
		pr_dbg("handshake after %.1f ms, %u request(s)", (mono_ns() - h->attached_ns) / 1e6,
		       h->asks);
	}
}

int handshake_poll(struct handshake *h, uint64_t now)
{
	if (h->answered || !h->attached_ns)
		return 0;
	if (now - h->attached_ns >= QJ_HANDSHAKE_TIMEOUT_NS)
		return -ETIMEDOUT;
	if (h->stock)
		return 0;
	if (now - h->asked_ns >= QJ_HANDSHAKE_RETRY_NS) {
		int err = ask(h, 1);

		if (err && err != -ESRCH)
			return err;
	}
	return 0;
}

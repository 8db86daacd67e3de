// SPDX-License-Identifier: GPL-2.0-or-later
#include "writers/jitdump.h"
#include "util/procfile.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define JITDUMP_MAGIC	    0x4A695444u
#define JITDUMP_VERSION	    1
#define JIT_CODE_LOAD	    0
#define JIT_CODE_DEBUG_INFO 2

struct jitdump {
	pid_t pid;
	uid_t uid;    /* QEMU's */
	bool foreign; /* QEMU's files are another mount namespace's */
	uint32_t elf_mach;
	uint64_t code_index; /* unique over the whole run */
	/* Records, in memory until the marker is known, then the file. */
	char *mem;
	size_t memlen;
	FILE *memf;
	FILE *f;
	char *buf; /* F's: with setvbuf(f, NULL, ...) glibc keeps 4 KiB */
	char *path;
	uint64_t written;
	int err;
};

struct jitdump *jitdump_new(pid_t pid, uid_t uid, uint32_t elf_mach, bool foreign)
{
	struct jitdump *j = xcalloc(1, sizeof(*j));

	j->pid = pid;
	j->uid = uid;
	j->foreign = foreign;
	j->elf_mach = elf_mach;
	j->memf = open_memstream(&j->mem, &j->memlen);
	if (!j->memf) {
		free(j);
		return NULL;
	}
	return j;
}

static FILE *out(struct jitdump *j)
{
	return j->f ? j->f : j->memf;
}

/* One thread writes a jitdump: stdio's lock is not needed (the tool has
 * other threads, so stdio would take it for every piece of a record). */
static void put(struct jitdump *j, const void *p, size_t n)
{
	if (fwrite_unlocked(p, 1, n, out(j)) != n && !j->err)
		j->err = -EIO;
	j->written += n;
}

struct mapped_query {
	uint64_t addr, end;
	const char *path;
	bool match;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * The mapping at the marker's address is the marker if it is a file of the
 * marker's name.  Its directory is not compared: the kernel prints the
 * path as it resolved it, from our root, while QEMU reports it as it spelt
 * it, from its own root and working directory ("//jit-1.dump" from "/", a
 * link, a chroot).  Which file it is, is asked of the mapping itself.
 */
static bool mapping_at(const struct map_entry *m, void *ctx)
{
	struct mapped_query *q = ctx;

	if (m->start != q->addr)
		return false;
	q->match = m->path[0] == '/' && !strcmp(base_name(m->path), base_name(q->path));
	q->end = m->end;
	return true;
}

/*
 * The marker QEMU mapped at ADDR, for writing: the very file, through
 * /proc/PID/map_files, whatever its path names now (a link, another file,
 * and in a container another namespace's file).  A QEMU that has exited
 * (a short run) shows no mapping: then, if it ran in our mount namespace,
 * the file at PATH if it is what QEMU created, an empty regular file of
 * QEMU's user with no other name.
 */
static int open_marker(struct jitdump *j, const char *path, uint64_t addr)
{
	struct mapped_query q = {.addr = addr, .path = path};
	int err, fd = -ENOENT;
	struct stat st;

	/*
	 * A QEMU that held its reports hands them over just before it exits,
	 * and one that is exiting can still show mappings, though not its
	 * marker's, or lose the marker between the map and the open, until it
	 * is a zombie (no map: -ESRCH).  Look again for up to 40 ms.
	 */
	for (int i = 0;; i++) {
		q.match = false;
		err = maps_find(j->pid, mapping_at, &q);
		if (!err && q.match)
			fd = mapped_open(j->pid, addr, q.end, O_WRONLY);
		if (i == 20 || !(err == -ENOENT || (q.match && fd < 0)))
			break;
		usleep(2000);
	}
	if (err == -ESRCH && !j->foreign) {
		fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) || st.st_size)) {
			close(fd);
			fd = -EPERM;
		}
	} else if (err || !q.match) {
		pr_warn("pid %d: jitdump marker %s is not the file QEMU mapped; no jitdump", j->pid,
			path);
		return -ENOENT;
	}
	if (fd >= 0 &&
	    (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != j->uid)) {
		close(fd);
		fd = -EPERM;
	}
	if (fd < 0)
		pr_warn("pid %d: jitdump marker %s was replaced; no jitdump", j->pid, path);
	return fd;
}

int jitdump_open(struct jitdump *j, const char *path, uint64_t addr)
{
	struct {
		uint32_t magic, version, total_size, elf_mach, pad1, pid;
		uint64_t timestamp, flags;
	} hdr = {JITDUMP_MAGIC, JITDUMP_VERSION, sizeof(hdr), j->elf_mach, 0, j->pid, mono_ns(), 0};
	struct stat st;
	int fd, err;

	if (j->f)
		return 0; /* a later handshake reports the same marker */
	fd = open_marker(j, path, addr);
	if (fd < 0)
		return fd;
	/* A QEMU process has one marker: one tool at a time writes it. */
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		pr_err("jitdump %s is being written by another qemu-jitbpf; "
		       "a QEMU process has one jitdump",
		       path);
		close(fd);
		return -EBUSY;
	}
	/*
	 * QEMU's marker is empty: truncating it anyway would make ext4 write
	 * back what we write when QEMU closes it, in QEMU's exit
	 * (auto_da_alloc, for files truncated to 0 and rewritten).
	 */
	if (fstat(fd, &st) || (st.st_size && ftruncate(fd, 0)) || !(j->f = fdopen(fd, "w"))) {
		err = -errno;
		pr_err("cannot write %s: %s", path, strerror(errno));
		close(fd);
		return err;
	}
	j->buf = xmalloc(1 << 20);
	setvbuf(j->f, j->buf, _IOFBF, 1 << 20);
	j->path = xstrdup(path);
	put(j, &hdr, sizeof(hdr));
	/* Then what arrived before the marker. */
	fflush(j->memf);
	if (j->memlen && fwrite(j->mem, 1, j->memlen, j->f) != j->memlen)
		j->err = -EIO;
	fclose(j->memf);
	free(j->mem);
	j->memf = NULL;
	j->mem = NULL;
	return 0;
}

bool jitdump_is_open(const struct jitdump *j)
{
	return j->f;
}

const char *jitdump_path(const struct jitdump *j)
{
	return j->path;
}

void jitdump_load(struct jitdump *j, uint64_t ts, uint32_t tid, uint64_t addr, const uint8_t *code,
		  uint64_t size, const char *name, const struct jd_line *lines, size_t nlines)
{
	size_t namelen = strlen(name) + 1;

	if (nlines) {
		struct {
			uint32_t id, total_size;
			uint64_t timestamp, code_addr, nr_entry;
		} d = {JIT_CODE_DEBUG_INFO, sizeof(d), ts, addr, nlines};

		for (size_t i = 0; i < nlines; i++)
			d.total_size += 16 + strlen(lines[i].file) + 1;
		put(j, &d, sizeof(d));
		for (size_t i = 0; i < nlines; i++) {
			struct {
				uint64_t addr;
				int32_t line;
				uint32_t discrim;
			} e = {lines[i].addr, lines[i].line, 0};

			put(j, &e, sizeof(e));
			put(j, lines[i].file, strlen(lines[i].file) + 1);
		}
	}

	struct {
		uint32_t id, total_size;
		uint64_t timestamp;
		uint32_t pid, tid;
		uint64_t vma, code_addr, code_size, code_index;
	} l = {JIT_CODE_LOAD,  sizeof(l) + namelen + size, ts, j->pid, tid, addr, addr, size,
	       j->code_index++};

	put(j, &l, sizeof(l));
	put(j, name, namelen);
	put(j, code, size);
}

void jitdump_discard(struct jitdump *j)
{
	if (j->f) {
		/* Leave the marker as QEMU made it: empty. */
		fflush(j->f);
		if (ftruncate(fileno(j->f), 0))
			pr_warn("cannot empty %s: %s", j->path, strerror(errno));
		fclose(j->f);
		free(j->buf);
	} else {
		fclose(j->memf);
		free(j->mem);
	}
	free(j->path);
	free(j);
}

int jitdump_close(struct jitdump *j, uint64_t *bytes)
{
	int err = j->err;

	if (j->f) {
		if (fclose(j->f) && !err)
			err = -errno;
		free(j->buf);
		*bytes += j->written;
	} else {
		fclose(j->memf);
		free(j->mem);
		err = -ENOENT;
	}
	free(j->path);
	free(j);
	return err;
}

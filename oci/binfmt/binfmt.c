// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emulator image's entrypoint: registers its static QEMUs with
 * binfmt_misc as the tonistiigi/binfmt image's does, so that
 * docker/setup-qemu-action takes this image in its place.  Its behaviour
 * is ported from that image's cmd/binfmt/main.go and config.go
 * (github.com/tonistiigi/binfmt, commit e41434fefad6aee7b01fbe5efc1c4b6f6c735fff),
 * and the platforms it says are supported are found as buildkit's
 * util/archutil finds them (github.com/moby/buildkit, commit
 * 73ed6825c4b7569379ef89df0aedcdbe64473d31): by running a tiny program of
 * each architecture.
 *
 *   binfmt [--mount DIR] [--uninstall CSV] [--install CSV|all] [--version]
 *
 * Flags are Go's: -x and --x, a value after = or as the next argument.
 * Uninstall, install, then the status, {"supported":[...],"emulators":[...]},
 * on stdout; every other line on stderr; the exit status 0 but for bad
 * usage (2).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef BINFMT_VERSION
#define BINFMT_VERSION "unknown"
#endif
#ifndef QEMU_VERSION
#define QEMU_VERSION "unknown"
#endif

#define LIST_MAX 64

/* The tiny programs of checks.S. */
#define CHECK_DECL(a) extern const unsigned char check_##a[], check_##a##_end[]
CHECK_DECL(arm64);
CHECK_DECL(riscv64);
CHECK_DECL(ppc64le);
CHECK_DECL(s390x);
CHECK_DECL(i386);
CHECK_DECL(arm);

/* An architecture as binfmt names it: its emulator, and the ELF header
 * bytes 0-19 of its executables with the mask binfmt_misc applies (QEMU's
 * scripts/qemu-binfmt-conf.sh), as the register line spells them. */
struct arch {
	const char *name, *binary, *magic, *mask;
};

static const struct arch arches[] = {
	{"amd64", "qemu-x86_64",
	 "\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x3e\\x00",
	 "\\xff\\xff\\xff\\xff\\xff\\xfe\\xfe\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xf"
	 "f\\xff\\xff"},
	{"arm64", "qemu-aarch64",
	 "\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00",
	 "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xf"
	 "f\\xff\\xff"},
	{"arm", "qemu-arm",
	 "\\x7fELF\\x01\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x28\\x00",
	 "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xf"
	 "f\\xff\\xff"},
	{"s390x", "qemu-s390x",
	 "\\x7fELF\\x02\\x02\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x16",
	 "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xf"
	 "e\\xff\\xff"},
	{"ppc64le", "qemu-ppc64le",
	 "\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x15\\x00",
	 "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xf"
	 "f\\xff\\x00"},
	{"riscv64", "qemu-riscv64",
	 "\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xf3\\x00",
	 "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xf"
	 "f\\xff\\xff"},
	{"386", "qemu-i386",
	 "\\x7fELF\\x01\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x03\\x00",
	 "\\xff\\xff\\xff\\xff\\xff\\xfe\\xfe\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xf"
	 "f\\xff\\xff"},
	{"mips64le", "qemu-mips64el",
	 "\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x08\\x00",
	 "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xf"
	 "f\\xff\\xff"},
	{"mips64", "qemu-mips64",
	 "\\x7fELF\\x02\\x02\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x08",
	 "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xf"
	 "e\\xff\\xff"},
	{"loong64", "qemu-loongarch64",
	 "\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x02\\x01",
	 "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfc\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xf"
	 "f\\xff\\xff"},
};

#define NARCHES (sizeof(arches) / sizeof(arches[0]))

/* The architectures whose tiny program we carry, in archutil's order of
 * checking (it also checks ppc64, mips64le, mips64 and loong64, for which
 * no toolchain builds one here: they are never said to be supported). */
static const struct check {
	const char *arch, *platform, *also;
	const unsigned char *start, *end;
} checks[] = {
	{"arm64", "linux/arm64", NULL, check_arm64, check_arm64_end},
	{"riscv64", "linux/riscv64", NULL, check_riscv64, check_riscv64_end},
	{"ppc64le", "linux/ppc64le", NULL, check_ppc64le, check_ppc64le_end},
	{"s390x", "linux/s390x", NULL, check_s390x, check_s390x_end},
	{"386", "linux/386", NULL, check_i386, check_i386_end},
	{"arm", "linux/arm/v7", "linux/arm/v6", check_arm, check_arm_end},
};

static const char *mount_dir = "/proc/sys/fs/binfmt_misc";

/* A list of strings, as the Go code's slices. */
struct list {
	char *v[LIST_MAX];
	size_t n;
	bool made; /* an empty slice ([]), not a nil one (null) */
};

static void list_add(struct list *l, const char *s)
{
	if (l->n < LIST_MAX)
		l->v[l->n++] = strdup(s);
	l->made = true;
}

static void list_free(struct list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

static const struct arch *arch_find(const char *name)
{
	for (size_t i = 0; i < NARCHES; i++)
		if (!strcmp(arches[i].name, name))
			return &arches[i];
	return NULL;
}

/* containerd's platforms: is S an operating system's name? */
static bool is_os(const char *s)
{
	static const char *const oses[] = {"aix",    "android", "darwin",  "dragonfly", "freebsd",
					   "hurd",   "illumos", "ios",	   "js",	"linux",
					   "nacl",   "netbsd",	"openbsd", "plan9",	"solaris",
					   "wasip1", "windows", "zos"};

	for (size_t i = 0; i < sizeof(oses) / sizeof(oses[0]); i++)
		if (!strcmp(s, oses[i]))
			return true;
	return false;
}

/* containerd's platforms: the architecture as normalized. */
static const char *normalize_arch(const char *a)
{
	if (!strcmp(a, "i386"))
		return "386";
	if (!strcmp(a, "x86_64") || !strcmp(a, "x86-64") || !strcmp(a, "amd64"))
		return "amd64";
	if (!strcmp(a, "aarch64") || !strcmp(a, "arm64"))
		return "arm64";
	if (!strcmp(a, "armhf") || !strcmp(a, "armel") || !strcmp(a, "arm"))
		return "arm";
	return a;
}

/* The architecture this machine runs natively, normalized. */
static const char *native_arch(void)
{
	static char machine[sizeof(((struct utsname *)0)->machine)];
	struct utsname u;

	if (uname(&u))
		return "amd64";
	snprintf(machine, sizeof(machine), "%s", u.machine);
	if (!strncmp(machine, "armv", 4))
		return "arm";
	if (!strcmp(machine, "ppc64le"))
		return "ppc64le";
	return normalize_arch(machine);
}

/*
 * containerd's platforms.Parse, for its architecture: "os", "arch",
 * "os/arch", "arch/variant" or "os/arch/variant", each part of letters,
 * digits, '_' and '-' (case ignored).  Into ARCH; false if IN is no
 * platform.
 */
static bool parse_platform(const char *in, char *arch, size_t size)
{
	char buf[256], *part[3];
	size_t n = 0;

	if (!*in || strlen(in) >= sizeof(buf))
		return false;
	for (size_t i = 0; in[i]; i++) {
		unsigned char c = in[i];

		if (!isalnum(c) && c != '_' && c != '-' && c != '/')
			return false;
		buf[i] = tolower(c);
		buf[i + 1] = 0;
	}
	for (char *s = buf, *save = NULL, *t; (t = strtok_r(s, "/", &save)); s = NULL) {
		if (n == 3)
			return false;
		part[n++] = t;
	}
	if (!n || strstr(in, "//") || in[0] == '/' || in[strlen(in) - 1] == '/')
		return false;
	if (n == 1)
		snprintf(arch, size, "%s",
			 is_os(part[0]) ? native_arch() : normalize_arch(part[0]));
	else if (n == 2)
		snprintf(arch, size, "%s", normalize_arch(is_os(part[0]) ? part[1] : part[0]));
	else if (is_os(part[0]))
		snprintf(arch, size, "%s", normalize_arch(part[1]));
	else
		return false;
	return true;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Entry names under the mount, as Go's os.ReadDir gives them: sorted. */
static int read_entries(struct list *out)
{
	struct dirent **names;
	int n = scandir(mount_dir, &names, NULL, alphasort);

	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
			list_add(out, names[i]->d_name);
		free(names[i]);
	}
	free(names);
	return 0;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t w;
	int err;

	if (fd < 0)
		return -errno;
	w = write(fd, s, strlen(s));
	err = w < 0 ? -errno : 0;
	close(fd);
	return err;
}

/* main.go's uninstall(): the first entry named ARCH or ending in -ARCH. */
static void uninstall(const char *arch)
{
	struct list e = {0};
	size_t alen = strlen(arch);
	int err = read_entries(&e);

	for (size_t i = 0; !err && i < e.n; i++) {
		const char *name = e.v[i];
		size_t len = strlen(name);
		char path[4096];

		if (!strcmp(name, "register") || !strcmp(name, "status") ||
		    !strcmp(name, "WSLInterop"))
			continue;
		if (strcmp(name, arch) && !(len > alen && name[len - alen - 1] == '-' &&
					    !strcmp(name + len - alen, arch)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", mount_dir, name);
		err = write_file(path, "-1");
		if (err)
			logf_("uninstalling: %s write %s: %s", arch, path, strerror(-err));
		else
			logf_("uninstalling: %s OK", arch);
		list_free(&e);
		return;
	}
	if (err)
		logf_("uninstalling: %s open %s: %s", arch, mount_dir, strerror(-err));
	else
		logf_("uninstalling: %s not found", arch);
	list_free(&e);
}

/* main.go's parseUninstall(): platforms to their emulators' suffixes,
 * each item a glob of entries under the mount. */
static void parse_uninstall(const char *in, struct list *out)
{
	char *copy = strdup(in), *save = NULL;

	for (char *v = strtok_r(copy, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
		char arch[64], pattern[4096];
		const struct arch *a;
		glob_t g;

		if (parse_platform(v, arch, sizeof(arch)) && (a = arch_find(arch)))
			v = (char *)a->binary + strlen("qemu-");
		snprintf(pattern, sizeof(pattern), "%s/%s", mount_dir, v);
		if (glob(pattern, 0, NULL, &g) || !g.gl_pathc) {
			list_add(out, v);
		} else {
			for (size_t i = 0; i < g.gl_pathc; i++) {
				const char *slash = strrchr(g.gl_pathv[i], '/');

				list_add(out, slash ? slash + 1 : g.gl_pathv[i]);
			}
		}
		globfree(&g);
	}
	free(copy);
}

/* main.go's getBinaryNames(): QEMU_BINARY_PATH and QEMU_BINARY_PREFIX. */
static int binary_names(const struct arch *a, char *base, size_t bsize, char *full, size_t fsize)
{
	const char *dir = getenv("QEMU_BINARY_PATH"), *prefix = getenv("QEMU_BINARY_PREFIX");

	if (!dir || !*dir)
		dir = "/usr/bin";
	if (prefix && strchr(prefix, '/')) {
		logf_("installing: %s binary prefix must not contain path separator (Hint: set "
		      "$QEMU_BINARY_PATH to specify the directory)",
		      a->name);
		return -EINVAL;
	}
	snprintf(base, bsize, "%s%s", prefix ? prefix : "", a->binary);
	snprintf(full, fsize, "%s/%s", dir, base);
	return 0;
}

/* main.go's install(). */
static void install(const char *arch)
{
	const struct arch *a = arch_find(arch);
	char reg[4096], base[256], full[4096], line[8192];
	const char *p0 = getenv("QEMU_PRESERVE_ARGV0");
	int fd;

	if (!a) {
		logf_("installing: %s unsupported architecture: %s", arch, arch);
		return;
	}
	snprintf(reg, sizeof(reg), "%s/register", mount_dir);
	fd = open(reg, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			logf_("installing: %s ENOENT opening %s is it mounted?", arch, reg);
		else if (errno == EPERM)
			logf_("installing: %s EPERM opening %s check permissions?", arch, reg);
		else
			logf_("installing: %s Cannot open %s: open %s: %s", arch, reg, reg,
			      strerror(errno));
		return;
	}
	if (binary_names(a, base, sizeof(base), full, sizeof(full))) {
		close(fd);
		return;
	}
	snprintf(line, sizeof(line), ":%s:M:0:%s:%s:%s:CF%s", base, a->magic, a->mask, full,
		 p0 && *p0 ? "P" : "");
	if (write(fd, line, strlen(line)) < 0) {
		if (errno == EEXIST)
			logf_("installing: %s %s already registered", arch, base);
		else
			logf_("installing: %s cannot register \"%s\" to %s: write %s: %s", arch,
			      full, reg, reg, strerror(errno));
	} else {
		logf_("installing: %s OK", arch);
	}
	close(fd);
}

/* archutil's check(): CHECK's program, alone in a new directory, run as
 * its root (binfmt_misc's F flag: the emulator was opened at
 * registration); true if it exits 0. */
static bool runs(const struct check *c)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], path[4200];
	size_t size = (size_t)(c->end - c->start);
	bool ok = false;
	int fd, status;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/qemu-checkXXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return false;
	snprintf(path, sizeof(path), "%s/check", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (fd >= 0 && write(fd, c->start, size) == (ssize_t)size && !close(fd)) {
		fd = -1;
		pid = fork();
		if (pid == 0) {
			char *argv[] = {"/check", NULL}, *envp[] = {NULL};
			int null = open("/dev/null", O_RDWR);

			if (null >= 0) {
				dup2(null, 0);
				dup2(null, 1);
				dup2(null, 2);
			}
			if (!chroot(dir) && !chdir("/"))
				execve("/check", argv, envp);
			_exit(127);
		}
		ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		     !WEXITSTATUS(status);
	}
	if (fd >= 0)
		close(fd);
	unlink(path);
	rmdir(dir);
	return ok;
}

/* archutil's SupportedPlatforms(): the native platform (with amd64's
 * micro-architecture levels), then each whose program runs. */
static void supported(struct list *out)
{
	const char *native = native_arch();
	char def[64];

	out->made = true;
	snprintf(def, sizeof(def), "linux/%s", native);
	list_add(out, def);
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("x86-64-v2"))
		list_add(out, "linux/amd64/v2");
	if (__builtin_cpu_supports("x86-64-v3"))
		list_add(out, "linux/amd64/v3");
	if (__builtin_cpu_supports("x86-64-v4"))
		list_add(out, "linux/amd64/v4");
#endif
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		const struct check *c = &checks[i];

		if (!strcmp(c->arch, native) || !runs(c))
			continue;
		list_add(out, c->platform);
		if (c->also)
			list_add(out, c->also);
	}
}

/* main.go's allArch(): every architecture not supported yet whose
 * emulator is there. */
static void all_arches(struct list *out)
{
	struct list sup = {0};

	supported(&sup);
	for (size_t i = 0; i < NARCHES; i++) {
		const struct arch *a = &arches[i];
		char base[256], full[4096], plat[80];
		bool have = false;

		snprintf(plat, sizeof(plat), "linux/%s", a->name);
		for (size_t k = 0; k < sup.n; k++)
			have |= !strncmp(sup.v[k], plat, strlen(plat)) &&
				(!sup.v[k][strlen(plat)] || sup.v[k][strlen(plat)] == '/');
		if (have)
			continue;
		if (binary_names(a, base, sizeof(base), full, sizeof(full)) || !access(full, F_OK))
			list_add(out, a->name);
	}
	list_free(&sup);
}

/* A JSON string as Go's encoding/json writes it (HTML characters escaped). */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\r')
			fputs("\\r", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_list(const char *key, const struct list *l, bool last)
{
	printf("  \"%s\": ", key);
	if (!l->made) {
		fputs("null", stdout);
	} else if (!l->n) {
		fputs("[]", stdout);
	} else {
		fputs("[\n", stdout);
		for (size_t i = 0; i < l->n; i++) {
			fputs("    ", stdout);
			json_string(l->v[i]);
			fputs(i + 1 < l->n ? ",\n" : "\n", stdout);
		}
		fputs("  ]", stdout);
	}
	fputs(last ? "\n" : ",\n", stdout);
}

/* main.go's printStatus(). */
static int print_status(void)
{
	struct list e = {0}, emulators = {0}, sup = {0};
	int err = read_entries(&e);

	for (size_t i = 0; !err && i < e.n; i++) {
		char path[4096], head[8] = "";
		ssize_t n;
		int fd;

		if (!strcmp(e.v[i], "register") || !strcmp(e.v[i], "status"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", mount_dir, e.v[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			break;
		}
		n = read(fd, head, 7);
		close(fd);
		if (n == 7 && !memcmp(head, "enabled", 7))
			list_add(&emulators, e.v[i]);
	}
	if (err) {
		logf_("error: open %s: %s", mount_dir, strerror(-err));
	} else {
		supported(&sup);
		fputs("{\n", stdout);
		json_list("supported", &sup, false);
		json_list("emulators", &emulators, true);
		fputs("}\n", stdout);
	}
	list_free(&e);
	list_free(&emulators);
	list_free(&sup);
	return err;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage of binfmt:\n"
		   "  -install string\n"
		   "    \tarchitectures to install\n"
		   "  -mount string\n"
		   "    \tbinfmt_misc mount point (default \"/proc/sys/fs/binfmt_misc\")\n"
		   "  -uninstall string\n"
		   "    \tarchitectures to uninstall\n"
		   "  -version\n"
		   "    \tdisplay version\n");
}

struct opts {
	const char *install, *uninstall;
	bool version;
};

/* Go's flag package: 0, or the exit status of a usage error (2) or of
 * -h (0, as -1). */
static int parse_flags(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *name, *value;
		char key[64];
		size_t len;

		if (arg[0] != '-' || !arg[1])
			break; /* the first non-flag ends the flags */
		name = arg + 1 + (arg[1] == '-');
		if (arg[1] == '-' && !arg[2])
			break; /* "--" */
		if (!*name || *name == '-' || *name == '=') {
			fprintf(stderr, "bad flag syntax: %s\n", arg);
			usage(stderr);
			return 2;
		}
		value = strchr(name, '=');
		len = value ? (size_t)(value - name) : strlen(name);
		snprintf(key, sizeof(key), "%.*s", (int)(len < sizeof(key) ? len : sizeof(key) - 1),
			 name);
		if (value)
			value++;
		if (!strcmp(key, "h") || !strcmp(key, "help")) {
			usage(stderr);
			return -1;
		}
		if (!strcmp(key, "version")) {
			if (!value || !strcmp(value, "1") || !strcasecmp(value, "t") ||
			    !strcasecmp(value, "true")) {
				o->version = true;
			} else if (!strcmp(value, "0") || !strcasecmp(value, "f") ||
				   !strcasecmp(value, "false")) {
				o->version = false;
			} else {
				fprintf(stderr,
					"invalid boolean value \"%s\" for -version: parse error\n",
					value);
				usage(stderr);
				return 2;
			}
			continue;
		}
		if (strcmp(key, "mount") && strcmp(key, "install") && strcmp(key, "uninstall")) {
			fprintf(stderr, "flag provided but not defined: -%s\n", key);
			usage(stderr);
			return 2;
		}
		if (!value) {
			if (i + 1 >= argc) {
				fprintf(stderr, "flag needs an argument: -%s\n", key);
				usage(stderr);
				return 2;
			}
			value = argv[++i];
		}
		if (!strcmp(key, "mount"))
			mount_dir = value;
		else if (!strcmp(key, "install"))
			o->install = value;
		else
			o->uninstall = value;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {"", "", false};
	struct list names = {0};
	bool mounted = false;
	char status[4096];
	struct stat st;
	int ret = parse_flags(argc, argv, &o);

	if (ret)
		return ret < 0 ? 0 : ret;
	if (o.version) {
		logf_("binfmt/qemu-jitbpf-%s qemu/%s", BINFMT_VERSION, QEMU_VERSION);
		return 0;
	}
	snprintf(status, sizeof(status), "%s/status", mount_dir);
	if (stat(status, &st)) {
		if (mount("binfmt_misc", mount_dir, "binfmt_misc", 0, "")) {
			logf_("error: cannot mount binfmt_misc filesystem at %s: %s", mount_dir,
			      strerror(errno));
			return 0;
		}
		mounted = true;
	}
	parse_uninstall(o.uninstall, &names);
	for (size_t i = 0; i < names.n; i++)
		uninstall(names.v[i]);
	list_free(&names);
	if (!strcmp(o.install, "all")) {
		all_arches(&names);
	} else {
		char *copy = strdup(o.install), *save = NULL;

		for (char *v = strtok_r(copy, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
			char arch[64];

			list_add(&names, parse_platform(v, arch, sizeof(arch)) ? arch : v);
		}
		free(copy);
	}
	/* Some kernels show new entries only once the mount point is touched. */
	if (names.n)
		utimensat(AT_FDCWD, mount_dir, NULL, 0);
	for (size_t i = 0; i < names.n; i++)
		install(names.v[i]);
	list_free(&names);
	print_status();
	fflush(stdout);
	if (mounted)
		umount(mount_dir);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the uftrace writer (writers/uftrace*.c only): the data directory
 * and the records of each task.  uftrace.c makes the directory and its
 * files (info, task.txt, maps, symbols); uftrace-records.c turns each
 * thread's call events into ENTRY, EXIT and LOST records through a
 * shadow stack, applies the record filters, and buffers <tid>.dat.
 */
#ifndef QJ_UFTRACE_RECORDS_H
#define QJ_UFTRACE_RECORDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct callfilter;

/* uftrace's record: type in bits 0-1, magic 5 in 3-5, depth 6-15, addr 16-63. */
#define REC_ENTRY 0
#define REC_EXIT  1
#define REC_LOST  2
#define REC_MAGIC 5
#define MAX_STACK 1024
#define ADDR_MASK UINT64_C(0xffffffffffff)

/* A guest function entered and not left yet. */
struct frame {
	uint64_t addr;
	uint64_t sp;
	uint64_t ts;	 /* of its entry */
	uint32_t level;	 /* for -D: from the top, or from the outermost -F function */
	uint16_t rdepth; /* the depth of its records: recorded frames below it,
			  * at most MAX_STACK */
	uint8_t flags;	 /* FR_* */
};
#define FR_IN	   1  /* inside an -F function, or no -F */
#define FR_NOTRACE 2  /* inside an -N function */
#define FR_REC	   4  /* recorded */
#define FR_WRITTEN 8  /* its entry is written (-t holds entries back) */
#define FR_PLT	   16 /* a PLT entry: the function it jumps to is its own */
/* Switched from to another context (a return into a function's start):
 * calls there, on another stack, do not end it. */
#define FR_SWITCHED 32

#define OUTBUF (1 << 20)

struct uthread {
	uint32_t tid;
	pid_t pid;
	int fd;	       /* <tid>.dat, from its first record on */
	uint64_t *out; /* records not yet written, OUTBUF bytes */
	size_t nout;   /* u64 words in out */
	struct frame *stack;
	size_t depth, cap;
	size_t written;	   /* frames below this have their entries written */
	uint64_t first_ts; /* of its first record */
	uint64_t last_ts;  /* of its latest record */
	uint64_t records;
};

/* A program a process runs: from its start, or from an exec. */
struct usession {
	pid_t pid;
	uint64_t sid;
	uint64_t ts; /* SESS: no later than its first record */
	char *exename;
	bool ended; /* map and symbols written */
};

struct ufork {
	pid_t pid, child;
	uint64_t ts;
};

struct uftrace {
	char *dir;
	bool created; /* by uftrace_open(): discard removes it */
	bool moved;   /* earlier data went to DIR.old: discard brings it back */
	struct uthread *threads;
	size_t nthreads, cap;
	size_t last; /* index of the last thread used */
	struct usession *sess;
	size_t nsess, sess_cap;
	struct ufork *forks;
	size_t nforks, forks_cap;
	char **syms; /* basenames whose .sym is written */
	size_t nsyms, syms_cap;
	uint64_t records;
	uint64_t bytes;
	uint64_t first_ts;
	uint64_t last_ts;
	uint64_t start_ns; /* CLOCK_REALTIME at open, for record_date */
	int err;
	const struct callfilter *filter; /* NULL: record everything */
	/* What each address called runs (open addressing; key 0 is free). */
	struct callee *callees;
	size_t ncallees, callees_cap;
	const struct callee *last_callee; /* the slot callee() found last, or NULL */
};

/* A call target: the function it runs (past a thunk), its filter bits. */
struct callee {
	uint64_t key; /* address + 1 */
	uint64_t func;
	unsigned int verdict; /* CALLFILTER_* */
	bool start;	      /* func is the first instruction of a named function */
	bool hold;	      /* no named start: a stub, a trampoline; its entry
			       * waits for the jump it may make (QJ_CALL_JUMP) */
	bool plt;	      /* a PLT entry (NAME@plt, pltsyms.h) */
	uint8_t ret_pop;      /* what a return pops (x86-64: its address) */
};

/* The running session of PID (the last one begun), or NULL. */
struct usession *uftrace_session_of(struct uftrace *u, pid_t pid);
/* The thread TID, or NULL. */
struct uthread *uftrace_find_thread(struct uftrace *u, uint32_t tid);
/* Write T's buffered records to <tid>.dat (created at its first). */
void uftrace_flush_thread(struct uftrace *u, struct uthread *t);

#endif

# qemu-jitbpf: top-level build.  `make help` lists the targets.

QEMU_VERSION ?= 10.2.2
QEMU_VERSIONS := 10.2.2 7.2
QEMU_BUILDS := $(addprefix qemu-build-,$(QEMU_VERSIONS)) qemu-build-static qemu-build-stock
# Guests of both QEMU versions (and of system mode), and those of 10.2.2
# only (linux-user).
LAB_ARCHES := x86_64 aarch64
MORE_ARCHES := riscv64 arm ppc64le s390x
GUEST_ARCHES := $(LAB_ARCHES) $(MORE_ARCHES)
# Coverage is checked against gcov on these.
COV_ARCHES := x86_64 aarch64 riscv64 arm
# The test matrix: VERSION:ARCH.
MATRIX := $(foreach v,$(QEMU_VERSIONS),$(foreach a,$(LAB_ARCHES),$(v):$(a))) \
	$(foreach a,$(MORE_ARCHES),10.2.2:$(a))
# Pairs that run every test of the matrix; the others leave out the tests
# that exercise nothing of their own per architecture (tests/gen-matrix.sh).
MATRIX_PRIMARY := 10.2.2:x86_64 10.2.2:aarch64 7.2:x86_64
PREFIX ?= /usr/local

BUILD := build
GUEST_NAMES := hot spin fib flush calls threads smc tree forker forktree forkrain exectree \
	nonlocal fpu atomics remap hang progress waits
GUEST_CFLAGS := -static -g -O1 -fno-inline -fno-omit-frame-pointer
CC_x86_64 := gcc
CC_aarch64 := aarch64-linux-gnu-gcc
CC_riscv64 := riscv64-linux-gnu-gcc
CC_arm := arm-linux-gnueabihf-gcc
CC_ppc64le := powerpc64le-linux-gnu-gcc
CC_s390x := s390x-linux-gnu-gcc
CXX_x86_64 := g++
CXX_aarch64 := aarch64-linux-gnu-g++
# Debian's rustc (the tests' Rust guest is x86_64 only: no other std).
RUSTC ?= /usr/bin/rustc
# Frame chains the profiler walks (--call-graph=fp): Arm code as A32
# (Thumb-2, Debian's default, keeps no chain), s390x with its back chain.
ARCH_CFLAGS_arm := -marm
ARCH_CFLAGS_s390x := -mbackchain
# Debian's names of the architectures, for busybox-static.
DEB_ARCH_aarch64 := arm64
DEB_ARCH_riscv64 := riscv64
DEB_ARCH_arm := armhf
DEB_ARCH_ppc64le := ppc64el
DEB_ARCH_s390x := s390x

# The tool: BPF object -> skeleton -> userspace binary.
TOOL := $(BUILD)/bin/qemu-jitbpf
TOOL_OBJ := $(BUILD)/tool
BPF_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
CLANG ?= clang
BPFTOOL ?= bpftool
CFLAGS ?= -g -O2
# A private static libbpf 1.7 (scripts/libbpf-build.sh): its USDT attach
# uses multi-uprobe links.  Its headers, and the UAPI headers it comes with,
# are system headers to us.
LIBBPF := $(BUILD)/libbpf
LIBBPF_A := $(LIBBPF)/lib/libbpf.a
TOOL_CFLAGS := $(CFLAGS) -Wall -Wextra -Werror -D_GNU_SOURCE -isystem $(LIBBPF)/include \
	-I$(TOOL_OBJ) -Ibpf -Iuserspace
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Wextra -Werror \
	-Wno-unused-parameter -isystem $(LIBBPF)/include
# BPF_USDT() declares a ctx parameter that programs need not use.
CLANG_BPF_SYS_INCLUDES = $(shell $(CLANG) -v -E - </dev/null 2>&1 | sed -n \
	'/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
# userspace/ is grouped by layer (docs/design/README.md): util, naming, writers,
# profiler and coverage, report and stacks and push, engine, cli (the command
# line), main.c on top.
TOOL_LAYERS := util naming writers profiler coverage report stacks push engine cli
TOOL_SRCS := $(foreach l,$(TOOL_LAYERS),$(wildcard userspace/$(l)/*.c)) userspace/main.c
TOOL_OBJS := $(patsubst userspace/%.c,$(TOOL_OBJ)/%.o,$(TOOL_SRCS)) $(TOOL_OBJ)/profile.pb-c.o
TOOL_LIBS := $(LIBBPF_A) -lelf -ldw -ldeflate -lz -lpthread -lprotobuf-c -liberty
# The tool itself links elfutils and its compressors statically: each run
# starts without loading six libraries (0.65 ms of a launched run's start,
# and again for the detach helper it execs; docs/design/engine.md, "Starting").
TOOL_LINK := $(LIBBPF_A) -Wl,-Bstatic -ldw -lelf -ldeflate -lz -llzma -lbz2 -lprotobuf-c \
	-liberty -Wl,-Bdynamic -lpthread
# pprof's message types, from Debian's copy of the upstream profile.proto.
PROFILE_PROTO ?= /usr/share/gocode/src/github.com/google/pprof/proto/profile.proto

# System mode: a bare-metal aarch64 program, and Debian's Linux kernels
# with a busybox initramfs that runs the static hot workload.
SYSTEM_GUESTS := $(BUILD)/guests/bare/aarch64/bare \
	$(foreach a,$(LAB_ARCHES),$(BUILD)/guests/linux/$(a)/vmlinuz \
		$(BUILD)/guests/linux/$(a)/initramfs.cpio.gz)
GUESTS := $(foreach a,$(GUEST_ARCHES),$(foreach g,$(GUEST_NAMES),$(BUILD)/guests/$(a)/$(g))) \
	$(foreach a,$(GUEST_ARCHES),$(BUILD)/guests/$(a)/calls-o2-fp $(BUILD)/guests/$(a)/calls-o2-nofp) \
	$(foreach a,$(GUEST_ARCHES),$(BUILD)/guests/$(a)/tree-o2-nofp) \
	$(foreach a,$(GUEST_ARCHES),$(BUILD)/guests/$(a)/decoy) \
	$(foreach a,$(LAB_ARCHES),$(BUILD)/guests/$(a)/names-cpp $(BUILD)/guests/$(a)/throw) \
	$(BUILD)/guests/x86_64/names-rust $(BUILD)/guests/native/throw-pg \
	$(foreach a,$(LAB_ARCHES),$(BUILD)/guests/$(a)/nonlocal-dyn $(BUILD)/guests/$(a)/hostile) \
	$(BUILD)/guests/x86_64/many-syms \
	$(BUILD)/guests/native/calls-pg $(BUILD)/guests/native/calls \
	$(BUILD)/guests/native/forktree-pg $(BUILD)/guests/native/exectree-pg \
	$(BUILD)/guests/native/nonlocal-pg \
	$(foreach a,aarch64 $(MORE_ARCHES),$(BUILD)/guests/$(a)/busybox) \
	$(BUILD)/guests/arm/calls-thumb $(BUILD)/guests/arm/tree-apcs \
	$(BUILD)/guests/aarch64/fib-pac $(BUILD)/guests/x86_64/fpu-double \
	$(BUILD)/guests/aarch64/atomics-lse $(BUILD)/guests/aarch64/hang-go \
	$(foreach a,$(COV_ARCHES),$(BUILD)/guests/$(a)/cov) \
	$(foreach a,$(LAB_ARCHES),$(BUILD)/guests/$(a)/names-cpp-o0) $(SYSTEM_GUESTS)

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: FORCE dist all tool help deps oci oci-entry qemu qemu-all $(QEMU_BUILDS) qemu-ref qemu-stock binfmt-install binfmt-uninstall deb guests tests check check-stress check-asan test bench demo fuzz fuzzers \
	format install clean distclean

all: tool guests

tool: $(TOOL)

$(LIBBPF_A): scripts/libbpf-build.sh
	@scripts/libbpf-build.sh

$(TOOL_OBJ)/%.bpf.o: bpf/%.bpf.c $(LIBBPF_A)
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -Ibpf $(CLANG_BPF_SYS_INCLUDES) -MMD -MP -c $< -o $@
	llvm-strip -g $@

# The headers the tool's sources include that the build makes.
SKELS := $(TOOL_OBJ)/qemu-jitbpf.skel.h $(TOOL_OBJ)/sample.skel.h
GEN_HDRS := $(SKELS) $(TOOL_OBJ)/profile.pb-c.h $(TOOL_OBJ)/version.h

# The version (scripts/version.sh: a tag's, or VERSION's and the commit's)
# and where to report bugs, rewritten only when they change.
VERSION_STR := $(shell scripts/version.sh)
BUG_URL := https://github.com/qemu-jitbpf/qemu-jitbpf/issues
$(TOOL_OBJ)/version.h: FORCE
	@mkdir -p $(dir $@)
	@printf '#define QJ_VERSION "%s"\n#define QJ_BUG_URL "%s"\n' '$(VERSION_STR)' '$(BUG_URL)' \
		>$@.tmp && if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi
FORCE:

$(SKELS): $(TOOL_OBJ)/%.skel.h: $(TOOL_OBJ)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf >$@.tmp && mv $@.tmp $@

$(TOOL_OBJ)/profile.pb-c.c $(TOOL_OBJ)/profile.pb-c.h: $(PROFILE_PROTO)
	@mkdir -p $(TOOL_OBJ)
	cd $(dir $(PROFILE_PROTO)) && protoc-c --c_out=$(CURDIR)/$(TOOL_OBJ) profile.proto

$(TOOL): $(TOOL_OBJS) $(LIBBPF_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(TOOL_OBJS) $(TOOL_LINK)

# Fuzz targets (fuzz/*.c): libFuzzer harnesses around the parsers that
# read what others control, linked with the tool's objects built again by
# clang with ASan and UBSan.  make fuzz runs each for FUZZ_TIME seconds,
# from its checked-in seeds and what earlier runs kept; make test replays
# the seeds and fuzzes each target briefly (tests/fuzz.bats).
FUZZ_TARGETS := $(basename $(notdir $(wildcard fuzz/*.c)))
FUZZ_OBJ := $(BUILD)/fuzz
FUZZ_TIME ?= 300
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN) -Wall -Wextra -Werror -D_GNU_SOURCE \
	-isystem $(LIBBPF)/include -I$(TOOL_OBJ) -Ibpf -Iuserspace
FUZZ_TOOL_OBJS := $(patsubst userspace/%.c,$(FUZZ_OBJ)/tool/%.o,$(filter-out userspace/main.c,$(TOOL_SRCS))) \
	$(FUZZ_OBJ)/tool/profile.pb-c.o
FUZZERS := $(addprefix $(FUZZ_OBJ)/bin/,$(FUZZ_TARGETS))

$(FUZZ_OBJ)/bin/%: fuzz/%.c $(FUZZ_TOOL_OBJS) $(LIBBPF_A)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP -o $@ $< $(FUZZ_TOOL_OBJS) $(TOOL_LIBS)

# The tool under AddressSanitizer and UBSan, for make check-asan.
ASAN_TOOL := $(BUILD)/asan/bin/qemu-jitbpf
ASAN_OBJS := $(patsubst $(TOOL_OBJ)/%,$(BUILD)/asan/tool/%,$(TOOL_OBJS))
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

# One compile rule for the tool's objects, built three ways: OBJDIR,
# compiler, flags for our sources, flags for protoc-c's.  Each object's
# headers come from the compiler (-MMD); the generated headers must exist
# before the first compile says it needs them.
define compile_rules
$(1)/%.o: userspace/%.c | $(GEN_HDRS)
	@mkdir -p $$(dir $$@)
	$(2) $(3) -MMD -MP -c $$< -o $$@

$(1)/profile.pb-c.o: $(TOOL_OBJ)/profile.pb-c.c
	@mkdir -p $$(dir $$@)
	$(2) $(4) -I$(TOOL_OBJ) -c $$< -o $$@
endef
$(eval $(call compile_rules,$(TOOL_OBJ),$(CC),$(TOOL_CFLAGS),$(CFLAGS)))
$(eval $(call compile_rules,$(FUZZ_OBJ)/tool,$(CLANG),$(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,-g -O1 $(FUZZ_SAN)))
$(eval $(call compile_rules,$(BUILD)/asan/tool,$(CC),$(TOOL_CFLAGS) $(ASAN_FLAGS),$(CFLAGS) $(ASAN_FLAGS)))
-include $(patsubst %.o,%.d,$(TOOL_OBJS) $(FUZZ_TOOL_OBJS) $(ASAN_OBJS)) \
	$(TOOL_OBJ)/qemu-jitbpf.bpf.d $(TOOL_OBJ)/sample.bpf.d $(addsuffix .d,$(FUZZERS))

$(ASAN_TOOL): $(ASAN_OBJS) $(LIBBPF_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ASAN_FLAGS) -o $@ $(ASAN_OBJS) $(TOOL_LIBS)

fuzzers: $(FUZZERS)

fuzz: $(FUZZERS)
	@FUZZ_TIME=$(FUZZ_TIME) fuzz/run.sh $(FUZZ_OBJ) $(FUZZ_TARGETS)

FORMATTED = $(wildcard userspace/*.[ch] userspace/*/*.[ch] bpf/*.[ch] fuzz/*.[ch] fuzz/seeds/*.c \
	oci/*/*.c)

format:
	clang-format --style=file -i $(FORMATTED)

help:
	@echo "make demo        attach late to a running guest; perf names its functions"
	@echo "make check       install deps, build QEMU 10.2.2 and 7.2, run all tests"
	@echo "make deps        install the Debian packages the project needs (root)"
	@echo "make qemu        build the patched QEMU (QEMU_VERSION=10.2.2|7.2, or QEMU_SRC=dir);"
	@echo "                 10.2.2 also as qemu-x86_64-static and qemu-aarch64-static"
	@echo "make qemu-ref    build unpatched QEMU 10.2.2, same configuration"
	@echo "make qemu-stock  build unpatched QEMU 10.2.2 as Fedora's qemu-user-static (degraded mode)"
	@echo "make dist        the release tarball, build/qemu-jitbpf-VERSION.tar.gz"
	@echo "make deb         Debian packages of the tool and of our static emulators, in build/deb"
	@echo "make oci         the emulator image (a drop-in for tonistiigi/binfmt) and the tool's"
	@echo "                 image, as archives for docker load: build/oci/*.tar"
	@echo "make binfmt-install    run foreign executables (containers too) with our static"
	@echo "                 emulators through binfmt_misc; make binfmt-uninstall undoes it"
	@echo "make bench       overhead detached (vs qemu-ref) and attached (vs QEMU's own)"
	@echo "make tool        build/bin/qemu-jitbpf; make install PREFIX=... installs it and tools/"
	@echo "make test        run the bats suite on what is built"
	@echo "make check-stress  the suite STRESS_PASSES times (3) under a CPU hog with cold"
	@echo "                 caches, each test's failures (STRESS_FILES=tests/x.bats: some)"
	@echo "make check-asan  the suite again on the tool built with ASan and UBSan"
	@echo "make fuzz        run each fuzz target FUZZ_TIME seconds (300); build/fuzz keeps finds"
	@echo "make format      clang-format the C sources in place (tests/build.bats checks them)"

deps:
	@scripts/deps.sh

ifdef QEMU_SRC
qemu:
	@scripts/qemu-build.sh custom
else
# 10.2.2 comes with static emulators too (containers, binfmt_misc).
qemu:
	@scripts/qemu-build.sh $(QEMU_VERSION)
	@[ "$(QEMU_VERSION)" != 10.2.2 ] || scripts/qemu-build.sh 10.2.2 static
endif

# Each QEMU a make target of its own, so that make -j builds them side by
# side (make check): configure, linking and downloads leave a core idle.
qemu-all: $(QEMU_BUILDS)
$(addprefix qemu-build-,$(QEMU_VERSIONS)): qemu-build-%:
	@scripts/qemu-build.sh $*
qemu-build-static:
	@scripts/qemu-build.sh 10.2.2 static
qemu-build-stock qemu-stock:
	@scripts/qemu-build.sh 10.2.2 stock

qemu-ref:
	@scripts/qemu-build.sh 10.2.2 ref

# Foreign executables (in containers too) run by our static emulators.
binfmt-install:
	@scripts/qemu-build.sh 10.2.2 static
	@scripts/binfmt.sh install

binfmt-uninstall:
	@scripts/binfmt.sh uninstall

# The release tarball, build/qemu-jitbpf-VERSION.tar.gz (scripts/dist.sh):
# it builds and tests from its own directory as that version.
dist:
	@scripts/dist.sh $(BUILD)

# Debian packages of the tool and of our static emulators (scripts/deb.sh).
deb: tool
	@scripts/qemu-build.sh 10.2.2 static
	@scripts/deb.sh

guests: $(GUESTS) $(BUILD)/host/qemu-other-layout $(BUILD)/debian-qemu/usr/bin/qemu-x86_64-static

# The degraded mode's tests (tests/stock.bats): a stand-in for a stock QEMU
# of an unknown layout, and Debian's own emulators, which have no probes.
$(BUILD)/host/qemu-other-layout: tests/qemu-other-layout.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $<
$(BUILD)/debian-qemu/usr/bin/qemu-x86_64-static: scripts/debian-qemu.sh
	@scripts/debian-qemu.sh

define GUEST_RULE
$(BUILD)/guests/$(1)/%: tests/guests/%.c
	@mkdir -p $$(dir $$@)
	$$(CC_$(1)) $$(GUEST_CFLAGS) $$(ARCH_CFLAGS_$(1)) -o $$@ $$< -lpthread
endef
$(foreach a,$(GUEST_ARCHES),$(eval $(call GUEST_RULE,$(a))))
$(BUILD)/guests/x86_64/many-syms: tests/guests/many-syms.sh
	@mkdir -p $(dir $@)
	tests/guests/many-syms.sh $@

# Coverage's oracle guest at -O0, as gcov's build of it (tests/coverage.bats).
$(BUILD)/guests/%/cov: GUEST_CFLAGS = -static -g -O0

# nonlocal.c's nested function has its trampoline on the stack.
$(BUILD)/guests/%/nonlocal: GUEST_CFLAGS += -Wl,-z,execstack

# Arm's calls.c as Thumb-2 too, for --uftrace in both instruction sets,
# and tree.c with APCS frames, the other chain --call-graph=fp follows.
$(BUILD)/guests/arm/calls-thumb: tests/guests/calls.c
	@mkdir -p $(dir $@)
	$(CC_arm) $(GUEST_CFLAGS) -mthumb -o $@ $<

$(BUILD)/guests/arm/tree-apcs: tests/guests/tree.c
	@mkdir -p $(dir $@)
	$(CC_arm) -static -g -O1 -fno-inline -marm -mapcs-frame -o $@ $<

# fib.c signing its return addresses (PACIASP/AUTIASP), as distributions
# build aarch64 code: QEMU's pointer authentication helpers (--report).
$(BUILD)/guests/aarch64/fib-pac: tests/guests/fib.c
	@mkdir -p $(dir $@)
	$(CC_aarch64) $(GUEST_CFLAGS) -mbranch-protection=pac-ret -o $@ $<

# fpu.c in double: SSE, which QEMU computes with the host FPU.
$(BUILD)/guests/x86_64/fpu-double: tests/guests/fpu.c
	@mkdir -p $(dir $@)
	$(CC_x86_64) $(GUEST_CFLAGS) -DREAL=double -o $@ $<

# atomics.c for ARMv8.0 (load/store-exclusive loops), as code built for the
# oldest aarch64 CPUs is, and for ARMv8.1 (LSE: LDADD, CAS).
$(BUILD)/guests/aarch64/atomics: GUEST_CFLAGS += -march=armv8-a -mno-outline-atomics
$(BUILD)/guests/aarch64/atomics-lse: tests/guests/atomics.c
	@mkdir -p $(dir $@)
	$(CC_aarch64) $(GUEST_CFLAGS) -march=armv8.1-a -o $@ $< -lpthread

# A real program nobody here wrote the runtime of: Go, cross-compiled for
# arm64 by Debian's Go (its build cache in build/, not the user's home).
$(BUILD)/guests/aarch64/hang-go: tests/guests/hang.go
	@mkdir -p $(dir $@) $(BUILD)/go-cache
	cd $(dir $<) && GOCACHE=$(abspath $(BUILD))/go-cache GOARCH=arm64 CGO_ENABLED=0 \
		go build -o $(abspath $@) hang.go

# The same calls.c at -O2, with and without frame pointers.
$(BUILD)/guests/%/calls-o2-fp: tests/guests/calls.c
	@mkdir -p $(dir $@)
	$(CC_$*) -static -g -O2 -fno-inline -fno-omit-frame-pointer $(ARCH_CFLAGS_$*) -o $@ $<

$(BUILD)/guests/%/calls-o2-nofp: tests/guests/calls.c
	@mkdir -p $(dir $@)
	$(CC_$*) -static -g -O2 -fno-inline -fomit-frame-pointer -o $@ $<

# The known call tree without frame pointers, for --call-graph=dwarf.
$(BUILD)/guests/%/tree-o2-nofp: tests/guests/tree.c
	@mkdir -p $(dir $@)
	$(CC_$*) -static -g -O2 -fno-inline -fomit-frame-pointer -o $@ $<

# The container tests' decoy: hot.c with other names, put on the host at
# the path where a container has the real hot.
$(BUILD)/guests/%/decoy: tests/guests/hot.c
	@mkdir -p $(dir $@)
	$(CC_$*) $(GUEST_CFLAGS) $(ARCH_CFLAGS_$*) -Dhot_main=decoy_alpha -Dhot_side=decoy_beta -o $@ $<

# Mangled names: C++, and Rust (v0 for its own code, legacy in its std).
$(BUILD)/guests/%/names-cpp: tests/guests/names.cpp
	@mkdir -p $(dir $@)
	$(CXX_$*) $(GUEST_CFLAGS) -o $@ $<

$(BUILD)/guests/x86_64/names-rust: tests/guests/names.rs
	@mkdir -p $(dir $@)
	$(RUSTC) -g -C opt-level=1 -C force-frame-pointers=yes -C symbol-mangling-version=v0 \
		-C target-feature=+crt-static -o $@ $<

# The oracle: calls.c for native uftrace record on the host.
$(BUILD)/guests/native/calls-pg: tests/guests/calls.c
	@mkdir -p $(dir $@)
	gcc -g -O1 -fno-inline -pg -o $@ $<

# The oracle of the process-tree tests: a forking program, and the program
# its child execs, for native uftrace record.
# nonlocal.c linked dynamically: its library calls go through the PLT.
$(BUILD)/guests/%/nonlocal-dyn: tests/guests/nonlocal.c
	@mkdir -p $(dir $@)
	$(CC_$*) -g -O1 -fno-inline -Wl,-z,execstack -o $@ $<

# names.cpp at -O0, for coverage against gcov's build of it.
$(BUILD)/guests/%/names-cpp-o0: tests/guests/names.cpp
	@mkdir -p $(dir $@)
	$(CXX_$*) -static -g -O0 -o $@ $<

# C++ exceptions, as a guest and for native uftrace record.
$(BUILD)/guests/%/throw: tests/guests/throw.cpp
	@mkdir -p $(dir $@)
	$(CXX_$*) $(GUEST_CFLAGS) -o $@ $<

$(BUILD)/guests/native/throw-pg: tests/guests/throw.cpp
	@mkdir -p $(dir $@)
	g++ -g -O1 -fno-inline -pg -o $@ $<

$(BUILD)/guests/native/nonlocal-pg: tests/guests/nonlocal.c
	@mkdir -p $(dir $@)
	gcc -g -O1 -fno-inline -pg -Wl,-z,execstack -o $@ $<

$(BUILD)/guests/native/%tree-pg: tests/guests/%tree.c
	@mkdir -p $(dir $@)
	gcc -g -O1 -fno-inline -pg -o $@ $<

# The same, plain: what the guest must print.
$(BUILD)/guests/native/calls: tests/guests/calls.c
	@mkdir -p $(dir $@)
	gcc -O1 -fno-inline -o $@ $<

# Debian's busybox-static of each foreign architecture: a program nobody
# here built (the binfmt_misc tests, and the named samples of each arch).
$(BUILD)/guests/%/busybox: scripts/foreign-busybox.sh
	@scripts/foreign-busybox.sh $@ $(DEB_ARCH_$*)

$(BUILD)/guests/bare/aarch64/bare: tests/guests/bare/start-aarch64.S tests/guests/bare/bare.c \
		tests/guests/bare/bare.ld
	@mkdir -p $(dir $@)
	$(CC_aarch64) -ffreestanding -nostdlib -static -no-pie -fno-pic -mgeneral-regs-only \
		-g -O1 -fno-inline -fno-omit-frame-pointer -Wall -Wextra -Werror \
		-Wl,--build-id=none -Wl,--no-warn-rwx-segments -Wl,-T,tests/guests/bare/bare.ld \
		-o $@ tests/guests/bare/start-aarch64.S tests/guests/bare/bare.c

# Debian 12's cloud kernels, cached (scripts/guest-linux.sh).
$(BUILD)/guests/linux/x86_64/vmlinuz: scripts/guest-linux.sh
	@scripts/guest-linux.sh amd64 $(dir $@)
$(BUILD)/guests/linux/aarch64/vmlinuz: scripts/guest-linux.sh
	@scripts/guest-linux.sh arm64 $(dir $@)

$(BUILD)/guests/linux/x86_64/initramfs.cpio.gz: scripts/guest-initramfs.sh \
		tests/guests/linux-init.sh $(BUILD)/guests/x86_64/hot
	@scripts/guest-initramfs.sh /bin/busybox tests/guests/linux-init.sh \
		$(BUILD)/guests/x86_64/hot $@
$(BUILD)/guests/linux/aarch64/initramfs.cpio.gz: scripts/guest-initramfs.sh \
		tests/guests/linux-init.sh $(BUILD)/guests/aarch64/hot $(BUILD)/guests/aarch64/busybox
	@scripts/guest-initramfs.sh $(BUILD)/guests/aarch64/busybox tests/guests/linux-init.sh \
		$(BUILD)/guests/aarch64/hot $@

# tests/matrix/X.bats.in -> build/tests/X-<version>-<arch>.bats
tests:
	@tests/gen-matrix.sh $(BUILD)/tests "$(MATRIX)" "$(MATRIX_PRIMARY)"

test: tool guests tests fuzzers oci
	@tests/run.sh tests/*.bats $(BUILD)/tests/*.bats

# The QEMUs, the tool, the guests and the fuzzers are built side by side:
# a cold run's downloads and single-threaded steps then overlap others'
# compiling (docs/design/build-and-tests.md, "CI's time").
check: deps
	@$(MAKE) --no-print-directory -j4 qemu-all tool guests tests fuzzers oci-entry
	@$(MAKE) --no-print-directory oci
	@$(MAKE) --no-print-directory test

# Tests that fail now and then, found before CI does: the suite (or
# STRESS_FILES) STRESS_PASSES times, each with a CPU hog on one core and
# cold caches; each test's failure count (tests/stress.sh).
STRESS_PASSES ?= 3
check-stress: deps
	@$(MAKE) --no-print-directory -j4 qemu-all tool guests tests fuzzers oci-entry
	@$(MAKE) --no-print-directory oci
	@tests/stress.sh -n $(STRESS_PASSES) $(STRESS_FILES)

# The whole suite once more, on the tool built with ASan and UBSan: any
# report fails the test that ran it (halt_on_error, exit code 23).
check-asan: deps
	@$(MAKE) --no-print-directory qemu-all
	@$(MAKE) --no-print-directory tool guests tests fuzzers oci $(ASAN_TOOL)
	@QEMU_JITBPF_TEST=$(CURDIR)/$(ASAN_TOOL) \
		ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:exitcode=23:$(ASAN_OPTIONS) \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=23 \
		tests/run.sh tests/*.bats $(BUILD)/tests/*.bats

bench: tool guests qemu qemu-ref qemu-stock
	@bench/overhead.sh
	@bench/attached.sh
	@bench/backtoback.sh
	@bench/uftrace.sh
	@bench/uftrace-growth.sh
	@bench/profile.sh
	@bench/startup.sh
	@bench/offcpu.sh
	@bench/soak.sh
	@bench/system.sh
	@bench/tree.sh
	@bench/coverage.sh
	@bench/fleet-series.py
	@scripts/chroot-build.sh root >/dev/null && bench/build-report.sh
	@bench/stacks.sh
	@bench/stock.sh

# The emulator image's entrypoint (oci/binfmt/), static, with a tiny exit(0)
# program of each architecture whose support it checks, each built by that
# architecture's binutils (386's by the host's).
OCI := $(BUILD)/oci
BINFMT_ENTRY := $(OCI)/binfmt
OCI_CHECK_ARCHES := arm64 riscv64 ppc64le s390x 386 arm
CHECK_TARGET_arm64 := aarch64-linux-gnu-
CHECK_TARGET_riscv64 := riscv64-linux-gnu-
CHECK_TARGET_ppc64le := powerpc64le-linux-gnu-
CHECK_TARGET_s390x := s390x-linux-gnu-
CHECK_TARGET_arm := arm-linux-gnueabihf-
CHECK_AS_386 := as --32
CHECK_LD_386 := ld -m elf_i386
OCI_CHECKS := $(foreach a,$(OCI_CHECK_ARCHES),$(OCI)/checks/exit-$(a))

$(OCI)/checks/exit-%: oci/binfmt/checks/exit-%.S
	@mkdir -p $(dir $@)
	$(or $(CHECK_AS_$*),$(CHECK_TARGET_$*)as) -o $@.o $<
	$(or $(CHECK_LD_$*),$(CHECK_TARGET_$*)ld) -s -n -static -o $@ $@.o
	@rm -f $@.o

oci-entry: $(BINFMT_ENTRY)
$(BINFMT_ENTRY): oci/binfmt/binfmt.c oci/binfmt/checks.S $(OCI_CHECKS) $(TOOL_OBJ)/version.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -static -Wall -Wextra -Werror -D_GNU_SOURCE \
		-DBINFMT_VERSION='"$(VERSION_STR)"' -DQEMU_VERSION='"$(QEMU_VERSION)"' \
		-Wa,-I,$(OCI)/checks -o $@ oci/binfmt/binfmt.c oci/binfmt/checks.S

# The images, as archives (scripts/oci-build.sh): docker load -i FILE.
oci: $(BINFMT_ENTRY) $(TOOL) qemu-build-static
	@scripts/oci-build.sh $(BUILD) '$(VERSION_STR)' 10.2.2

# A newcomer's first command: packages, QEMU, tool and guest, then the demo.
demo:
	@[ "$$(id -u)" = 0 ] || { echo "demo: needs root for BPF and perf (sudo make demo)" >&2; exit 1; }
	@scripts/deps.sh
	@$(MAKE) --no-print-directory qemu tool $(BUILD)/guests/x86_64/hot
	@tools/demo.sh

# Every tool: qemu-jitbpf and its man page; the bpftrace front ends live in
# share/qemu-jitbpf/tools (with the library and .bt programs they read)
# and are linked into bin.
BPFTRACE_TOOLS := qemu-jit-events qemu-tbstat
TOOLS_DIR := $(PREFIX)/share/qemu-jitbpf/tools

# The service (service/): what it may do, and nothing more
# (docs/design/production.md, "Least privilege"; tests/production.bats runs
# the suite's scenarios with the set the installed unit names).
SERVICE_CAPS := CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_CHECKPOINT_RESTORE CAP_CHOWN CAP_FOWNER
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(if $(filter /usr/local,$(PREFIX)),/etc,$(PREFIX)/etc))
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d

install: $(TOOL)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(TOOLS_DIR) \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(SYSCONFDIR) \
		$(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/doc/qemu-jitbpf
	install -m 0755 $(TOOL) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 docs/qemu-jitbpf.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 0644 $(addprefix docs/,$(addsuffix .1,$(BPFTRACE_TOOLS))) \
		$(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 docs/one-liners.md docs/probes.md $(DESTDIR)$(PREFIX)/share/doc/qemu-jitbpf/
	install -d $(DESTDIR)$(PREFIX)/share/doc/qemu-jitbpf/service.d
	install -m 0644 service/dropins/*.conf $(DESTDIR)$(PREFIX)/share/doc/qemu-jitbpf/service.d/
	install -m 0644 tools/qemu-jit-lib.sh tools/*.bt $(DESTDIR)$(TOOLS_DIR)/
	for t in $(BPFTRACE_TOOLS); do \
		install -m 0755 tools/$$t $(DESTDIR)$(TOOLS_DIR)/ && \
		ln -sf ../share/qemu-jitbpf/tools/$$t $(DESTDIR)$(PREFIX)/bin/$$t || exit 1; \
	done
	sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		-e 's|@CAPS@|$(SERVICE_CAPS)|g' service/qemu-jitbpf.service.in \
		>$(DESTDIR)$(UNITDIR)/qemu-jitbpf.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/qemu-jitbpf.service
	install -m 0644 service/qemu-jitbpf.sysusers $(DESTDIR)$(SYSUSERSDIR)/qemu-jitbpf.conf
	@# An edited configuration stays; the default goes beside it.
	if [ -e $(DESTDIR)$(SYSCONFDIR)/qemu-jitbpf.conf ]; then \
		install -m 0644 service/qemu-jitbpf.conf $(DESTDIR)$(SYSCONFDIR)/qemu-jitbpf.conf.default; \
	else \
		install -m 0644 service/qemu-jitbpf.conf $(DESTDIR)$(SYSCONFDIR)/qemu-jitbpf.conf; \
	fi
	@# The service's user, on this machine (not when packaging).
	[ -n "$(DESTDIR)" ] || ! command -v systemd-sysusers >/dev/null || \
		systemd-sysusers $(SYSUSERSDIR)/qemu-jitbpf.conf
	[ -n "$(DESTDIR)" ] || ! command -v systemctl >/dev/null || \
		systemctl daemon-reload 2>/dev/null || true

clean:
	rm -rf $(BUILD)/guests $(BUILD)/tests $(BUILD)/work $(BUILD)/tool $(BUILD)/bin

distclean:
	rm -rf $(BUILD)

# qemu-jitbpf: top-level build.  `make help` lists the targets.

QEMU_VERSION ?= 10.2.2
QEMU_VERSIONS := 10.2.2 7.2
GUEST_ARCHES := x86_64 aarch64
PREFIX ?= /usr/local

BUILD := build
GUEST_NAMES := hot spin fib flush
GUEST_CFLAGS := -static -g -O1 -fno-inline -fno-omit-frame-pointer
CC_x86_64 := gcc
CC_aarch64 := aarch64-linux-gnu-gcc

GUESTS := $(foreach a,$(GUEST_ARCHES),$(foreach g,$(GUEST_NAMES),$(BUILD)/guests/$(a)/$(g)))

.PHONY: all help deps qemu qemu-all qemu-ref guests tests check test bench demo \
	install clean distclean

all: guests

help:
	@echo "make demo        late attach to a running guest, shown with bpftrace"
	@echo "make check       install deps, build QEMU 10.2.2 and 7.2, run all tests"
	@echo "make deps        install the Debian packages the project needs (root)"
	@echo "make qemu        build the patched QEMU (QEMU_VERSION=10.2.2|7.2, or QEMU_SRC=dir)"
	@echo "make qemu-ref    build unpatched QEMU 10.2.2, same configuration"
	@echo "make bench       detached-overhead benchmark, patched vs qemu-ref"
	@echo "make test        run the bats suite on what is built"

deps:
	@scripts/deps.sh

ifdef QEMU_SRC
qemu:
	@scripts/qemu-build.sh custom
else
qemu:
	@scripts/qemu-build.sh $(QEMU_VERSION)
endif

qemu-all:
	@for v in $(QEMU_VERSIONS); do scripts/qemu-build.sh $$v || exit 1; done

qemu-ref:
	@scripts/qemu-build.sh 10.2.2 ref

guests: $(GUESTS)

$(BUILD)/guests/x86_64/%: tests/guests/%.c
	@mkdir -p $(dir $@)
	$(CC_x86_64) $(GUEST_CFLAGS) -o $@ $< -lpthread

$(BUILD)/guests/aarch64/%: tests/guests/%.c
	@mkdir -p $(dir $@)
	$(CC_aarch64) $(GUEST_CFLAGS) -o $@ $< -lpthread

# tests/matrix/X.bats.in -> build/tests/X-<version>-<arch>.bats
tests:
	@tests/gen-matrix.sh $(BUILD)/tests "$(QEMU_VERSIONS)" "$(GUEST_ARCHES)"

test: guests tests
	@tests/run.sh tests/*.bats $(BUILD)/tests/*.bats

check: deps
	@$(MAKE) --no-print-directory qemu-all
	@$(MAKE) --no-print-directory test

bench: guests qemu qemu-ref
	@bench/overhead.sh

demo: guests qemu
	@tools/demo.sh

install:
	install -d $(DESTDIR)$(PREFIX)/share/qemu-jitbpf/tools
	install -m 0755 tools/qemu-jit-events $(DESTDIR)$(PREFIX)/share/qemu-jitbpf/tools/

clean:
	rm -rf $(BUILD)/guests $(BUILD)/tests $(BUILD)/work

distclean:
	rm -rf $(BUILD)

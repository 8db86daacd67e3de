#!/bin/bash
# Run the bats suite as root (the probes need BPF), TAP output, so that
# the last lines say how many tests passed.
set -eu
if [ "$(id -u)" != 0 ]; then
	echo "tests need root for BPF: sudo make test" >&2
	exit 1
fi
export BATS_LIB_PATH=${BATS_LIB_PATH:-/usr/lib/bats}
exec bats --tap "$@"

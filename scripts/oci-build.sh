#!/bin/bash
# make oci: the two images, amd64, FROM scratch, as archives that docker load
# and podman load take (scripts/oci-image.py writes them):
#
#   BUILD/oci/qemu-jitbpf-binfmt.tar  qemu-jitbpf/binfmt:VERSION and :latest,
#       a drop-in for tonistiigi/binfmt: the entrypoint oci/binfmt/binfmt.c
#       and our static emulators as /usr/bin/qemu-ARCH
#   BUILD/oci/qemu-jitbpf.tar         qemu-jitbpf/qemu-jitbpf:VERSION and
#       :latest, the tool, with the C library it links
#
#   oci-build.sh BUILD VERSION QEMU_VERSION
set -euo pipefail
[ $# = 3 ] || { echo "usage: oci-build.sh BUILD VERSION QEMU_VERSION" >&2; exit 2; }
BUILD=$1 VERSION=$2 QV=$3
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$BUILD/oci
STATIC=$BUILD/qemu-$QV-static/bin
# A tag may not hold '+' (the version of an untagged commit does).
TAG=${VERSION//+/-}
LABELS='"org.opencontainers.image.source": "https://github.com/qemu-jitbpf/qemu-jitbpf",
	"org.opencontainers.image.version": "'"$VERSION"'",
	"org.opencontainers.image.licenses": "GPL-2.0-or-later"'
mkdir -p "$OUT"

emulators=
for a in aarch64 arm riscv64 ppc64le s390x; do
	[ -x "$STATIC/qemu-$a-static" ] || { echo "oci: $STATIC/qemu-$a-static missing (make qemu)" >&2; exit 1; }
	emulators+=", [\"/usr/bin/qemu-$a\", \"$STATIC/qemu-$a-static\", \"0755\"]"
done
cat >"$OUT/binfmt.json" <<EOF
{
	"name": "qemu-jitbpf/binfmt",
	"tags": ["$TAG", "latest"],
	"files": [["/usr/bin/binfmt", "$OUT/binfmt", "0755"]$emulators],
	"dirs": [["/tmp", "1777"]],
	"config": {
		"Entrypoint": ["/usr/bin/binfmt"],
		"Env": ["PATH=/usr/bin", "QEMU_PRESERVE_ARGV0=1"],
		"Volumes": {"/tmp": {}}
	},
	"labels": {$LABELS,
		"org.opencontainers.image.title": "qemu-jitbpf binfmt: QEMU user emulators with the qemu-jitbpf probes"}
}
EOF
"$ROOT/scripts/oci-image.py" "$OUT/qemu-jitbpf-binfmt.tar" "$OUT/binfmt.json"

# The tool and what the dynamic linker loads for it, where it looks.
libs=
while read -r lib; do
	libs+=", [\"$lib\", \"$lib\", \"0755\"]"
done < <(ldd "$BUILD/bin/qemu-jitbpf" | sed -nE 's|.*=> (/[^ ]+) .*|\1|p; s|^\s*(/[^ ]+) .*|\1|p' | sort -u)
cat >"$OUT/tool.json" <<EOF
{
	"name": "qemu-jitbpf/qemu-jitbpf",
	"tags": ["$TAG", "latest"],
	"files": [["/usr/bin/qemu-jitbpf", "$BUILD/bin/qemu-jitbpf", "0755"]$libs],
	"dirs": [["/tmp", "1777"], ["/out", "0755"]],
	"config": {
		"Entrypoint": ["/usr/bin/qemu-jitbpf"],
		"Env": ["PATH=/usr/bin"],
		"Volumes": {"/out": {}},
		"StopSignal": "SIGINT"
	},
	"labels": {$LABELS,
		"org.opencontainers.image.title": "qemu-jitbpf: profiles of the programs QEMU emulates, from outside"}
}
EOF
"$ROOT/scripts/oci-image.py" "$OUT/qemu-jitbpf.tar" "$OUT/tool.json"

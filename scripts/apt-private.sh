# shellcheck shell=bash
# apt against a private configuration kept in the build cache, so that the
# machine's own apt sources and lists stay as they are.  Sourced by the
# build scripts; needs CACHE and MIRROR.
#
#   apt_private SUITE APT-GET-ARGS...
apt_private() {
	local suite=$1
	shift
	local d=$CACHE/apt-$suite
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	local kr=/usr/share/keyrings/debian-archive-keyring.gpg tmp
	# Written beside it and renamed: a build side by side may be reading
	# it (an apt-get that found it cut short saw no deb-src line).
	tmp=$(mktemp "$d/sources.list.XXXXXX")
	printf 'deb [signed-by=%s] %s %s main\ndeb-src [signed-by=%s] %s %s main\n' \
		"$kr" "$MIRROR" "$suite" "$kr" "$MIRROR" "$suite" >"$tmp"
	chmod 644 "$tmp"
	mv -f "$tmp" "$d/sources.list"
	# The builds run side by side (make check): one apt at a time per
	# folder, since apt itself is told not to lock it.
	flock "$d/.lock" apt-get -q -o Dir::Etc::SourceList="$d/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" \
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root "$@"
}

# The archive the machine's own apt configuration uses.
MIRROR=${DEBIAN_MIRROR:-$(awk '/^URIs:/ {print $2; exit}' \
	/etc/apt/sources.list.d/debian.sources 2>/dev/null || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
CACHE=${QEMU_JITBPF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qemu-jitbpf}

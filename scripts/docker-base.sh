#!/bin/bash
# docker-base.sh - the base image of docker/Dockerfile from Debian's packages
# alone, for machines that reach Debian's mirror but no image registry:
# debootstrap --variant=minbase bookworm into a folder under /var/tmp, made a
# little more like Debian's official images (no services started by package
# scripts, no recommends, no documentation, empty apt caches), then
# `docker import` as one layer.
#
#   scripts/docker-base.sh [--force] [IMAGE]    # IMAGE: terrain-base:bookworm
#   scripts/docker-base.sh --rootfs DIR         # only the root, into DIR (new)
#
# An IMAGE that exists already is kept (--force rebuilds it). Needs root
# (debootstrap) and, but for --rootfs, a Docker daemon: without one it says
# so and exits with status 2 before doing anything. The mirror is the one apt
# uses here, or DEBIAN_MIRROR; security updates come from DEBIAN_SECURITY
# (http://deb.debian.org/debian-security). About a minute; about 100 MB.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
force=0 rootfs=
case "${1:-}" in
--force) force=1; shift ;;
--rootfs)
	[ $# -eq 2 ] || { echo "usage: $0 --rootfs DIR" >&2; exit 2; }
	rootfs=$(realpath -m "$2")
	shift 2
	;;
esac
image=${1:-terrain-base:bookworm}
say() { echo "docker-base: $*" >&2; }

if [ -z "$rootfs" ]; then
	if ! command -v docker >/dev/null; then
		say "no Docker daemon: the docker command is missing (Debian: apt-get install docker.io)"
		exit 2
	fi
	if ! err=$(docker info 2>&1 >/dev/null); then
		say "no Docker daemon: $(printf '%s\n' "$err" | grep . | tail -n 1)"
		exit 2
	fi
	if [ "$force" = 0 ] && docker image inspect "$image" >/dev/null 2>&1; then
		say "$image exists (--force makes it again)"
		exit 0
	fi
elif [ -e "$rootfs" ] && [ -n "$(ls -A "$rootfs")" ]; then
	say "$rootfs exists and is not empty"
	exit 1
fi
[ "$(id -u)" = 0 ] || { say "debootstrap needs root"; exit 1; }
command -v debootstrap >/dev/null || "$ROOT/scripts/deps.sh" container

mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -m1 '/debian/\?$' || true)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY:-http://deb.debian.org/debian-security}

dir=$(mktemp -d /var/tmp/terrain-base.XXXXXX)
trap 'rm -rf --one-file-system "$dir"' EXIT
r=${rootfs:-$dir/root}
t0=$SECONDS
say "debootstrap bookworm minbase from $mirror into $r"
debootstrap --variant=minbase bookworm "$r" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
	{ tail -n 20 "$dir/debootstrap.log" >&2; exit 1; }
cat >"$r/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
# Package scripts must not start services while an image is built.
printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
chmod 755 "$r/usr/sbin/policy-rc.d"
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
	>"$r/etc/apt/apt.conf.d/90terrain-no-recommends"
# Keep no downloaded packages and no package caches (75 MB) in the layers
# built on top, and no documentation, manual pages or translations.
{
	echo 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };'
	echo 'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };'
	echo 'Dir::Cache::pkgcache "";'
	echo 'Dir::Cache::srcpkgcache "";'
} >"$r/etc/apt/apt.conf.d/90terrain-clean"
{
	echo 'path-exclude /usr/share/doc/*'
	echo 'path-include /usr/share/doc/*/copyright'
	echo 'path-exclude /usr/share/man/*'
	echo 'path-exclude /usr/share/info/*'
	echo 'path-exclude /usr/share/locale/*'
} >"$r/etc/dpkg/dpkg.cfg.d/90terrain-excludes"
chroot "$r" apt-get clean
[ -d "$r/usr/share/doc" ] && [ "$r" != / ] # never the host's
find "$r/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
rm -rf "${r:?}"/usr/share/man/* "${r:?}"/usr/share/info/* "${r:?}"/usr/share/locale/* \
	"${r:?}"/var/lib/apt/lists/* "${r:?}"/var/cache/apt/*.bin "${r:?}"/var/log/*.log \
	"${r:?}"/var/log/apt/* "${r:?}"/tmp/* "${r:?}"/root/.cache
: >"$r/etc/hostname"
: >"$r/etc/resolv.conf"
if [ -n "$rootfs" ]; then
	say "$rootfs: $(du -sh "$rootfs" | cut -f1), $((SECONDS - t0)) s"
	exit 0
fi
say "importing $image"
tar --numeric-owner --xattrs -C "$r" -c . |
	docker import --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' \
		--message "debootstrap --variant=minbase bookworm $mirror" - "$image" >/dev/null
size=$(docker image inspect -f '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }')
say "$image: $size, $((SECONDS - t0)) s"

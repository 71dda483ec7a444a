#!/bin/bash
# docker-images.sh - the four images of docker/Dockerfile, compiled once:
# terrain-server, terrain-client, terrain-front and terrain-redis, all
# tagged :local (the names the compose files use).
#
#   scripts/docker-images.sh [--no-cache]
#
# Docker 20.10's classic builder builds every stage before the target, so
# building the server (the last stage) builds all of them, the compiler run
# included; the three other targets then come from that build's layers.
# --no-cache makes that first build from nothing (the base image aside:
# scripts/docker-base.sh). Prints each image's size and the time taken;
# BASE is TERRAIN_BASE_IMAGE (terrain-base:bookworm). The build's output goes
# to LOG (default a temporary file), its tail to stderr when it fails.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
say() { echo "docker-images: $*" >&2; }
nocache=
case "${1:-}" in
--no-cache) nocache=--no-cache ;;
"") ;;
*) echo "usage: $0 [--no-cache]" >&2; exit 2 ;;
esac
base=${TERRAIN_BASE_IMAGE:-terrain-base:bookworm}
log=${LOG:-$(mktemp /tmp/terrain-images.XXXXXX)}
t0=$SECONDS
build() { # TARGET [OPTION...]
	local target=$1
	shift
	docker build -f docker/Dockerfile --build-arg BASE="$base" --target "$target" \
		-t "terrain-$target:local" "$@" . >>"$log" 2>&1 ||
		{ say "building $target failed; the end of $log:"; tail -n 30 "$log" >&2; exit 1; }
}
: >"$log"
build server $nocache
t1=$SECONDS
for t in client front redis; do build "$t"; done
for t in server client front redis; do
	say "terrain-$t:local $(docker image inspect -f '{{.Size}}' "terrain-$t:local" |
		awk '{ printf "%.0f MB", $1 / 1e6 }')"
done
say "built in $((SECONDS - t0)) s${nocache:+ without cache} (every stage: $((t1 - t0)) s; the other targets from its layers: $((SECONDS - t1)) s)"
[ -n "${LOG:-}" ] || rm -f "$log"

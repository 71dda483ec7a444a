#!/bin/bash
# first_run.sh - `make run` as on a fresh machine: the packages, here the
# llhttp sources and header, appear only when the deps step of `make run`
# has run, in the same `make run`. A make that read the file system before
# that step misses them ("No rule to make target .../llhttp/api.o"); the
# Makefile builds in a new make process after deps. Checked with llhttp in
# scratch folders that a deps hook (DEPS=) creates by copying Debian's, into
# a scratch BUILD (the order of steps is what is tested),
# then the server must answer /healthz. Needs Debian's node-llhttp. Tests
# the Makefile, so runs in the gcc suite only (skips under CC=clang, SAN=1).
# The scratch BUILD starts with $BUILD's objects but llhttp's (make test's
# builds are shared): what is tested is that llhttp's sources, which
# appear only after the deps step, are found and compiled in that run.
. "$(dirname "$0")/../lib/lib.sh"

case "${CC:-cc}:${SAN:-}" in
	cc: | gcc:) ;;
	*) echo "skip: CC=${CC:-} SAN=${SAN:-}: this checks the Makefile, in the gcc suite"; exit 0 ;;
esac

[ -f /usr/share/llhttp/api.c ] || { echo "skip: Debian's node-llhttp is not installed"; exit 0; }
src=$TMP/llhttp-src inc=$TMP/llhttp-inc build=$TMP/build hook=$TMP/deps-hook
cat >"$hook" <<HOOK
#!/bin/sh
echo "\$1" >>"$TMP/deps-args"
mkdir -p "$src" "$inc"
cp /usr/share/llhttp/*.c "$src/"
cp /usr/share/include/llhttp/llhttp.h "$inc/"
HOOK
chmod +x "$hook"

mkdir -p "$build"
for d in common server client-sample tools gen; do
	[ -d "$BUILD/$d" ] && cp -a "$BUILD/$d" "$build/"
done
find "$build" -name '*.d' -delete
cp -a "$BUILD"/libcommon.a "$build/" 2>/dev/null

# The make of a user's shell: none of the flags of the make that runs us.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CFLAGS -u BUILD make -C "$(dirname "$0")/../.." --no-print-directory run \
	BUILD="$build" DEPS="$hook" LLHTTP_SRC="$src" LLHTTP_INC="$inc" \
	RUN_ARGS="--bind 127.0.0.1 --port 0 --data-dir $TMP/data" >"$TMP/make.log" 2>&1 &
make_pid=$!

# The server is a child of make (perhaps through a shell).
server_pid() {
	local p=$1 c
	for c in $(pgrep -P "$p"); do
		[ "$(cat /proc/$c/comm 2>/dev/null)" = terrain-server ] && { echo "$c"; return; }
		server_pid "$c"
	done
}

port=""
for i in $(seq 1 1200); do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TMP/make.log")
	[ -n "$port" ] && break
	kill -0 "$make_pid" 2>/dev/null || break
	sleep 0.25
done
check "make run built and started the server in one make invocation" test -n "$port"
[ -n "$port" ] || { tail -n 30 "$TMP/make.log"; finish; }
check "the deps hook ran once, for the build packages" eq "$(cat "$TMP/deps-args")" build
check "the build used the llhttp sources the hook made" test -f "$build/llhttp/api.o"
echo "  ($(grep -c '^  CC ' "$TMP/make.log") files compiled, $(grep -c '^  CC .*/llhttp/' "$TMP/make.log") of them llhttp's; the rest came from $BUILD)"
check "GET /healthz answers 200" \
	eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" 200

pid=$(server_pid "$make_pid")
check "the server runs under make" test -n "$pid"
[ -n "$pid" ] && kill -TERM "$pid"
wait "$make_pid"
check "make run ends when the server stops" not kill -0 "$make_pid" 2>/dev/null
finish

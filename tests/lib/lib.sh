#!/bin/bash
# lib.sh - helpers for the shell integration tests (source it; not a test).
#
# server_start [ARGS...]   start $BUILD/terrain-server serve on a free
#                          127.0.0.1 port (under timeout(1)) with its edit log
#                          in $TMP/data unless ARGS name another --data-dir;
#                          sets SERVER_PID, SERVER_LOG, PORT and BASE.
#                          Servers die on exit.
# server_stop              SIGTERM the last server; returns its exit status.
# check MSG CMD [ARGS...]  run CMD; report "ok: MSG" or "FAIL: MSG".
# finish                   exit 1 if any check failed.
# wait_until SECS CMD...   run CMD every 0.05 s until it succeeds; fails
#                          (status 1) once SECS of wall-clock time, scaled,
#                          have passed without it.
# scaled SECS              SECS times TEST_TIMEOUT_SCALE.
# "${CURL[@]}" ARGS...     curl with errors shown and a bound (60 s, scaled)
#                          on each request.
# nginx_up DIR RENDER...   a loopback nginx ($NGINX) front on a port of its
#                          own: RENDER writes its config with FPORT set; sets
#                          NGINX_PID; nginx_down stops it (below).
#
# Tests wait on conditions, never on fixed durations, and their bounds are
# generous: a machine with other work running (load 20 to 48 on 2 cores)
# makes everything many times slower, and a bound is only for a test that
# hangs. TEST_TIMEOUT_SCALE (a whole number, default 1) multiplies every
# bound that goes through scaled or wait_until, and run.sh's per-suite one,
# for machines slower still.
set -u
BUILD=${BUILD:-build}
SERVER_BIN=$BUILD/terrain-server
TMP=$(mktemp -d /tmp/terrain-test.XXXXXX)
SERVERS=()
FAILED=0
TEST_TIMEOUT_SCALE=${TEST_TIMEOUT_SCALE:-1}

scaled() { echo $(($1 * TEST_TIMEOUT_SCALE)); }
CURL=(curl -sS --max-time "$(scaled 60)")
wait_until() {
	local end=$((SECONDS + $(scaled "$1")))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.05
	done
}

# ours PID: PID is still a child of this script, not yet reaped. A pid
# saved earlier may belong to another program by now (pids wrap at
# /proc/sys/kernel/pid_max, 32768 on some machines, within minutes of a
# parallel make test), so every kill of a saved pid at cleanup asks first.
ours() { [ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$$" ]; }
# kill_ours SIGNAL PID...: send SIGNAL to those of PIDs that are ours.
kill_ours() {
	local sig=$1 p
	shift
	for p in "$@"; do ours "$p" && kill "-$sig" "$p" 2>/dev/null; done
	return 0
}

cleanup() {
	local p
	for p in "${SERVERS[@]}"; do
		ours "$p" || continue
		# the server under timeout(1) first: killing timeout alone orphans it
		kill -KILL $(pgrep -P "$p" 2>/dev/null) "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# For scripts whose last server should stop cleanly (trap stop_all EXIT):
# SIGTERM it first (timeout(1) passes that on; cleanup's SIGKILL would not
# let it drain), wait for it, then clean up as usual.
stop_all() {
	if [ -n "${SERVER_PID:-}" ] && ours "$SERVER_PID"; then
		kill -TERM "$SERVER_PID" 2>/dev/null
		wait_until 60 not kill -0 "$SERVER_PID" 2>/dev/null
	fi
	cleanup
}

# nginx_down: stop the nginx of nginx_up, if it runs (scripts call it in
# their EXIT trap before cleanup)
NGINX_PID=
nginx_down() {
	[ -n "$NGINX_PID" ] || return 0
	kill -TERM "$NGINX_PID" 2>/dev/null
	wait "$NGINX_PID" 2>/dev/null
	NGINX_PID=
}

# nginx_up DIR RENDER...: nginx ($NGINX) in front, on a port of its own.
# Picks FPORT, has `RENDER...` write DIR/nginx.conf to stdout with FPORT set
# (its plain HTTP listener on 127.0.0.1:$FPORT), starts nginx in the foreground and waits
# for /healthz through that port; a port taken meanwhile is tried again
# elsewhere (5 tries). Sets NGINX_PID; stops the script (FAIL and nginx's
# errors) when nginx does not start. The script stops it (kill -TERM).
nginx_up() {
	local dir=$1 try
	shift
	mkdir -p "$dir"
	for try in 1 2 3 4 5; do
		FPORT=$((20000 + RANDOM % 30000))
		"$@" >"$dir/nginx.conf" || { echo "FAIL: $* did not write nginx.conf"; exit 1; }
		"$NGINX" -e stderr -p "$dir/" -c nginx.conf -g 'daemon off;' 2>>"$dir/error.log" &
		NGINX_PID=$!
		front_up() { curl -s -o /dev/null "http://127.0.0.1:$FPORT/healthz" || ! kill -0 "$NGINX_PID" 2>/dev/null; }
		wait_until 60 front_up && kill -0 "$NGINX_PID" 2>/dev/null && return 0
		kill -TERM "$NGINX_PID" 2>/dev/null
		wait "$NGINX_PID" 2>/dev/null
		NGINX_PID=
	done
	echo "FAIL: nginx did not start"
	cat "$dir/error.log"
	exit 1
}

check() {
	local msg=$1
	shift
	if "$@"; then
		echo "ok: $msg"
	else
		echo "FAIL: $msg"
		FAILED=$((FAILED + 1))
	fi
}

# not CMD...: invert.
not() { ! "$@"; }
# has FILE REGEX: a line of FILE matches REGEX (grep -E, any case).
has() { grep -qiE -- "$2" "$1"; }
# contains TEXT SUBSTRING
contains() { [[ $1 == *"$2"* ]]; }
eq() { [ "$1" = "$2" ] || { echo "  got '$1', want '$2'"; return 1; }; }

finish() {
	if [ "$FAILED" != 0 ]; then
		echo "$FAILED failed"
		exit 1
	fi
	echo "all passed"
}

# (the server's own bound, 1200 s scaled, is run.sh's for the whole suite)
server_start() {
	local log="$TMP/server.$RANDOM.log"
	: >"$log" # there before started() reads it, whenever the child opens it
	timeout --foreground -k 5 "$(scaled 1200)" "$SERVER_BIN" serve --bind 127.0.0.1 --port 0 \
		--data-dir "$TMP/data" "$@" 2>"$log" &
	SERVER_PID=$!
	SERVER_LOG=$log
	SERVERS+=("$SERVER_PID")
	wait_until 120 started "$log"
	if [ -n "$PORT" ]; then
		BASE="http://127.0.0.1:$PORT"
		return 0
	fi
	echo "server did not start:"
	cat "$log"
	exit 1
}
# started LOG: sets PORT to the port LOG says the server listens on; fails
# while there is none and the server still runs
started() {
	PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1")
	[ -n "$PORT" ] || ! kill -0 "$SERVER_PID" 2>/dev/null
}

server_stop() {
	local status
	kill -TERM "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID"
	status=$?
	[ "$status" = 0 ] || { echo "server exit $status; log:"; cat "$SERVER_LOG"; }
	return "$status"
}

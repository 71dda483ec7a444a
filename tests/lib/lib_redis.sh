# lib_redis.sh - Redis, Sentinels and nodes of one shared edit log for the
# cluster tests, sourced after lib.sh: Debian's redis-server on loopback
# ports of this test's own, killed by their pids at the end.
#
#	. "$(dirname "$0")/../lib/lib.sh"; . "$(dirname "$0")/../lib/lib_redis.sh"
#	redis_up r1; redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
#	sentinel_up s1; sentinel_up s2; sentinel_up s3   # monitor r1 as "m"
#	node_up a [?URL-OPTIONS | URL] [--snapshot-every 5 ...]  # NPORT[a], NLOG[a], NPID[a]
#
# A script changes what it needs by defining, after sourcing this:
#   redis_conf NAME     prints more lines for NAME's redis.conf (users,
#                       masterauth...)
#   sentinel_conf NAME  the same for a Sentinel's
#   rcli PORT ARGS...   redis-cli on a data node (e.g. as a user of its own)
#   scli PORT ARGS...   redis-cli on a Sentinel (rcli unless redefined)
# and KEEP_LOGS=NAME copies the Redis and node logs to
# $BUILD/test-logs/NAME/ at the end when a check failed or CLUSTER_KEEP is
# set. BG holds the script's own background pids, killed at the end too.
for b in redis-server redis-cli python3; do
	command -v "$b" >/dev/null || { echo "skip: $b missing (scripts/deps.sh test)"; exit 0; }
done
declare -A RPID RPORT NPORT NPID NLOG
BG=()
redis_down() {
	kill_ours CONT "${RPID[@]}" "${BG[@]}"
	kill_ours KILL "${RPID[@]}" "${BG[@]}"
	if [ -n "${KEEP_LOGS:-}" ] && { [ "$FAILED" != 0 ] || [ -n "${CLUSTER_KEEP:-}" ]; }; then
		mkdir -p "$BUILD/test-logs/$KEEP_LOGS" && cp "$TMP"/*.log "$BUILD/test-logs/$KEEP_LOGS/"
	fi
}
trap 'redis_down; cleanup' EXIT
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# wait_for SECS CMD...: until CMD succeeds; SECS is the time it takes an
# idle machine at most, the bound four times that, scaled (a busy one is
# many times slower: lib.sh)
wait_for() {
	local secs=$1
	shift
	wait_until $((secs * 4)) "$@"
}
rcli() { redis-cli -p "$1" "${@:2}" 2>/dev/null; }
scli() { rcli "$@"; }
pong() { [ "$(rcli "$1" PING)" = PONG ]; }
spong() { [ "$(scli "$1" PING)" = PONG ]; }
# redis_up NAME [ARGS...]: a Redis that fsyncs every write, from
# $TMP/NAME.conf, data in $TMP/NAME, log $TMP/NAME.log; on its own port,
# the same one when NAME comes up again; ARGS after the file (--replicaof)
redis_up() {
	local name=$1
	shift
	[ -n "${RPORT[$name]:-}" ] || RPORT[$name]=$(free_port)
	mkdir -p "$TMP/$name"
	{
		printf '%s\n' "port ${RPORT[$name]}" "bind 127.0.0.1" "dir $TMP/$name" \
			"logfile $TMP/$name.log" "appendonly yes" "appendfsync always" 'save ""' \
			"repl-diskless-sync-delay 0" "replica-serve-stale-data no"
		[ "$(type -t redis_conf)" != function ] || redis_conf "$name"
	} >"$TMP/$name.conf"
	redis-server "$TMP/$name.conf" "$@" &
	RPID[$name]=$!
	wait_for 5 pong "${RPORT[$name]}" || { echo "redis $name did not start"; cat "$TMP/$name.log"; exit 1; }
}
# sentinel_up NAME: a Sentinel watching r1 as "m" (quorum 2, down after
# 1 s, failover timeout 2 s), log $TMP/NAME.log
sentinel_up() {
	local name=$1
	RPORT[$name]=$(free_port)
	{
		printf '%s\n' "port ${RPORT[$name]}" "bind 127.0.0.1" "dir $TMP" "logfile $TMP/$name.log" \
			"sentinel monitor m 127.0.0.1 ${RPORT[r1]} 2" "sentinel down-after-milliseconds m 1000" \
			"sentinel failover-timeout m 2000" "sentinel parallel-syncs m 1"
		[ "$(type -t sentinel_conf)" != function ] || sentinel_conf "$name"
	} >"$TMP/$name.conf"
	redis-server "$TMP/$name.conf" --sentinel &
	RPID[$name]=$!
	wait_for 5 spong "${RPORT[$name]}" || { echo "sentinel $name did not start"; exit 1; }
}
# master: the name (r1 or r2) of the primary the Sentinels name; r1 without
# Sentinels
master() {
	local p
	[ -n "${RPORT[s1]:-}" ] || { echo r1; return; }
	p=$(scli "${RPORT[s1]}" SENTINEL get-master-addr-by-name m | sed -n 2p)
	[ "$p" = "${RPORT[r1]}" ] && echo r1 || echo r2
}
other() { [ "$1" = r1 ] && echo r2 || echo r1; }
online_replica() { rcli "${RPORT[$(master)]}" INFO replication | grep -q 'state=online'; }
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/readyz")" = 200 ]; }
# node_up NAME [?URL-OPTIONS | URL] [SERVER OPTIONS...]: a node of the log
# in r1 (the URL's options, e.g. ?timeout=20000, after it), or of the log
# URL given whole (sentinel://...); data in $TMP/NAME; ready for edits
# (/readyz) before it returns
node_up() {
	local name=$1 url="redis://127.0.0.1:${RPORT[r1]:-}"
	shift
	if [[ ${1:-} == \?* ]]; then
		url=$url$1
		shift
	elif [[ ${1:-} == *://* ]]; then
		url=$1
		shift
	fi
	server_start --data-dir "$TMP/$name" --edit-log "$url" "$@"
	NPORT[$name]=$PORT NLOG[$name]=$SERVER_LOG
	NPID[$name]=$(pgrep -P "$SERVER_PID") # the server, not timeout(1)
	wait_for 10 ready "$PORT" || { echo "node $name not ready"; cat "$SERVER_LOG"; exit 1; }
}

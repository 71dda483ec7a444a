# lib_redis.sh - Redis and nodes of one shared edit log for the cluster
# tests, sourced after lib.sh: Debian's redis-server on loopback ports of
# this test's own, killed by their pids at the end.
#
#	. "$(dirname "$0")/lib.sh"; . "$(dirname "$0")/lib_redis.sh"
#	redis_up r1; redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
#	node_up a [--snapshot-every 5 ...]    # NPORT[a], NLOG[a], NPID[a]
for b in redis-server redis-cli python3; do
	command -v "$b" >/dev/null || { echo "skip: $b missing (scripts/deps.sh test)"; exit 0; }
done
declare -A RPID RPORT NPORT NPID NLOG
BG=()
trap 'kill_ours CONT "${RPID[@]}"; kill_ours KILL "${RPID[@]}" "${BG[@]}"; cleanup' EXIT
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
rcli() { redis-cli -p "$1" "${@:2}" 2>/dev/null; }
pong() { [ "$(rcli "$1" PING)" = PONG ]; }
# redis_up NAME [ARGS...]: a Redis that fsyncs every write
redis_up() {
	local name=$1
	shift
	RPORT[$name]=$(free_port)
	mkdir -p "$TMP/$name"
	redis-server --port "${RPORT[$name]}" --bind 127.0.0.1 --dir "$TMP/$name" \
		--appendonly yes --appendfsync always --save "" --repl-diskless-sync-delay 0 \
		--replica-serve-stale-data no --logfile "$TMP/$name.log" "$@" &
	RPID[$name]=$!
	wait_until 20 pong "${RPORT[$name]}" || { echo "redis $name did not start"; exit 1; }
}
online_replica() { rcli "${RPORT[r1]}" INFO replication | grep -q 'state=online'; }
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/readyz")" = 200 ]; }
# node_up NAME [?URL-OPTIONS] [SERVER OPTIONS...]: a node of the log in r1
# (the URL's options, e.g. ?timeout=20000, after it), data in $TMP/NAME
node_up() {
	local name=$1 spec=
	shift
	[[ ${1:-} == \?* ]] && { spec=$1; shift; }
	server_start --data-dir "$TMP/$name" --edit-log "redis://127.0.0.1:${RPORT[r1]}$spec" "$@"
	NPORT[$name]=$PORT NLOG[$name]=$SERVER_LOG
	NPID[$name]=$(pgrep -P "$SERVER_PID") # the server, not timeout(1)
	wait_until 40 ready "$PORT" || { echo "node $name not ready"; cat "$SERVER_LOG"; exit 1; }
}

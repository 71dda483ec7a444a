#!/bin/sh
# redis-node.sh - how each Redis of docker/compose.cluster.yaml finds its
# role, so that no container names the primary and any order of failures
# and restarts ends with one primary and its replicas (docs/cluster.md,
# "The Redis topology").
#
#   redis-node.sh data [redis-server OPTION...]   a data node (docker/redis.conf)
#   redis-node.sh sentinel                        a Sentinel (docker/sentinel.conf)
#   redis-node.sh health | sentinel-health        the compose health checks
#   redis-node.sh cli ARG... | scli ARG...        redis-cli on this data node (as
#                                                 its user topology) or Sentinel
#
# Credentials (docs/cluster.md, "Credentials"), all from the environment and
# never on a command line: the data nodes' default user is off; they have the
# users terrain (the nodes': TERRAIN_REDIS_PASSWORD, exactly the rules
# docs/cluster.md lists), replica (replicas on their primary), sentinel (the
# Sentinels on the data nodes) and topology (this script and the health
# checks), the last three with TERRAIN_REDIS_ADMIN_PASSWORD; the Sentinels
# have requirepass TERRAIN_SENTINEL_PASSWORD, which the nodes and this
# script use on them. Each may come from a file instead, its first line:
# TERRAIN_REDIS_PASSWORD_FILE and so on (Swarm secrets, docker/stack.yaml).
# The users are written at each start to a file of mode 600 in the
# container (the passwords hashed), read by redis-server.
#
# A data node asks the Sentinels who the primary is before it starts:
#   - a quorum names another: it starts as that one's replica;
#   - a quorum names itself (it was the primary and came back before a
#     failover, or during one): it starts read-only on its own AOF (a
#     replica of nothing) and takes writes again (REPLICAOF NO ONE) only
#     once a quorum of Sentinels sees it up with no failover under way; if
#     they fail over meanwhile it replicates the new primary, so nothing it
#     took can be dropped by a failover it raced. With a new data folder (a
#     lost volume) it waits for the failover instead of offering an empty
#     log to the replicas;
#   - a quorum answers that they know none (a new cluster, or Sentinels that
#     lost their state): it starts undecided, a primary nobody writes to
#     (the terrain nodes find the primary only through the Sentinels); the
#     peer with the newest stream (last-generated-id of the log, ties to the
#     first in TERRAIN_REDIS_PEERS) registers itself with SENTINEL MONITOR,
#     and the others turn into its replicas once the Sentinels name it. The
#     peers compare only when every one answers, or a majority after
#     TERRAIN_ELECT_WAIT seconds: an acknowledged edit is on the primary and
#     a replica, so any majority of three holds it;
#   - no quorum answers: it waits and asks again.
# A watcher stays behind: whenever the Sentinels know no primary and this
# node would win the comparison (a running primary whose Sentinels were
# re-created), it registers itself again.
# A Sentinel keeps its state in its volume; one that knows no primary while
# another Sentinel does monitors that one (it was down at registration).
#
# Environment: TERRAIN_REDIS_NAME (this node's name, default the host name),
# TERRAIN_REDIS_PEERS (every data node, in order of preference),
# TERRAIN_SENTINELS (host names, port 26379), TERRAIN_REDIS_MASTER
# (terrain), TERRAIN_SENTINEL_QUORUM (2), TERRAIN_SENTINEL_DOWN_MS (2000),
# TERRAIN_SENTINEL_FAILOVER_MS (10000), TERRAIN_ELECT_WAIT (30),
# TERRAIN_REDIS_DB (0) and TERRAIN_REDIS_LOG_KEY (terrain:log): where the
# edit log's stream is.
set -eu
mode=${1:-data}
[ $# -gt 0 ] && shift
ME=${TERRAIN_REDIS_NAME:-$(cat /proc/sys/kernel/hostname)}
PEERS=${TERRAIN_REDIS_PEERS:-}
SENTINELS=${TERRAIN_SENTINELS:-}
MASTER=${TERRAIN_REDIS_MASTER:-terrain}
QUORUM=${TERRAIN_SENTINEL_QUORUM:-2}
DOWN_MS=${TERRAIN_SENTINEL_DOWN_MS:-2000}
FAILOVER_MS=${TERRAIN_SENTINEL_FAILOVER_MS:-10000}
ELECT_WAIT=${TERRAIN_ELECT_WAIT:-30}
DB=${TERRAIN_REDIS_DB:-0}
LOG_KEY=${TERRAIN_REDIS_LOG_KEY:-terrain:log}
DATA=/var/lib/terrain/redis
# VAR_FILE: a file whose first line is VAR (a Docker or Swarm secret,
# /run/secrets/NAME); both set is refused.
for v in TERRAIN_REDIS_PASSWORD TERRAIN_REDIS_ADMIN_PASSWORD TERRAIN_SENTINEL_PASSWORD; do
	eval "f=\${${v}_FILE:-} val=\${$v:-}"
	[ -n "$f" ] || continue
	[ -z "$val" ] || { echo "redis-node $ME: both $v and ${v}_FILE are set: give it once" >&2; exit 2; }
	[ -r "$f" ] || { echo "redis-node $ME: ${v}_FILE $f: cannot read it" >&2; exit 2; }
	val=$(head -n 1 "$f" | tr -d '\r')
	eval "$v=\$val"
done
REDIS_PW=${TERRAIN_REDIS_PASSWORD:-}
ADMIN_PW=${TERRAIN_REDIS_ADMIN_PASSWORD:-}
SENT_PW=${TERRAIN_SENTINEL_PASSWORD:-}
# The nodes' user: docs/cluster.md, "The ACL rules a node needs" (the
# container test checks that the two agree).
TERRAIN_RULES='resetkeys ~terrain:* resetchannels -@all +select +role +script|load +evalsha +eval +xadd +xrange +xread +xlen +xtrim +hget +hset +hmget +hlen +get +set +expire +pexpire +persist +del +unlink +wait'
REPLICA_RULES='+psync +replconf +ping'
SENTINEL_RULES='allchannels +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish +info +client|setname +client|kill +script|kill'
TOPOLOGY_RULES='resetkeys ~terrain:* resetchannels -@all +select +ping +role +info +type +xinfo|stream +replicaof'

say() { echo "redis-node $ME: $*" >&2; }
# One command, at most 2 s (a paused peer never answers); error replies
# fail. cli talks to a data node (as topology), scli to a Sentinel (port
# 26379); both take -h HOST.
cli() { REDISCLI_AUTH=$ADMIN_PW timeout 2 redis-cli --user topology --raw -e "$@" 2>/dev/null; }
scli() { REDISCLI_AUTH=$SENT_PW timeout 2 redis-cli -p 26379 --raw -e "$@" 2>/dev/null; }

# What a quorum of the Sentinels says the primary is: "HOST PORT", or
# "none" when a quorum answers that it knows none; nothing without a quorum.
sentinels_say() {
	for s in $SENTINELS; do
		a=$(scli -h "$s" SENTINEL get-master-addr-by-name "$MASTER" | tr '\n' ' ') ||
			continue
		a=${a% }
		echo "${a:-none}"
	done | sort | uniq -c | awk -v q="$QUORUM" '$1 >= q { print $2 ($3 ? " " $3 : ""); exit }'
}

# The last id ever added to the log's stream on peer $1 ("0-0" without
# one); fails when the peer does not answer or cannot read (loading).
last_id() {
	t=$(cli -h "$1" -n "$DB" TYPE "$LOG_KEY") || return 1
	[ "$t" = stream ] || { echo 0-0; return 0; }
	cli -h "$1" -n "$DB" XINFO STREAM "$LOG_KEY" | awk 'p { print; exit } $0 == "last-generated-id" { p = 1 }'
}

# Whether stream id $1 is newer than $2 (MS-SEQ, compared as numbers).
newer() {
	echo "$1 $2" | awk '{ split($1, a, "-"); split($2, b, "-");
		exit !(a[1] + 0 > b[1] + 0 || (a[1] + 0 == b[1] + 0 && a[2] + 0 > b[2] + 0)) }'
}

# The peer that should be primary, printed: of the peers that answer as
# primaries, the one with the newest stream, ties to the first named.
# Fails until every peer answers, or a majority once $1 s have passed.
elect() {
	n=0 answered=0 best= best_id=
	for peer in $PEERS; do
		n=$((n + 1))
		role=$(cli -h "$peer" ROLE) || continue
		role=${role%%[!a-z]*}
		[ -n "$role" ] || continue
		if [ "$role" = master ]; then
			id=$(last_id "$peer") || continue
			if [ -z "$best" ] || newer "$id" "$best_id"; then best=$peer best_id=$id; fi
		fi
		answered=$((answered + 1))
	done
	[ -n "$best" ] || return 1
	[ "$answered" = "$n" ] || { [ $((answered * 2)) -gt "$n" ] && [ "$1" -ge "$ELECT_WAIT" ]; } ||
		return 1
	echo "$best $best_id"
}

# Tell Sentinel ($1: -h HOST, or nothing for this one) to monitor $2 $3 with
# the cluster's settings and the credentials of the data nodes' user sentinel.
monitor() {
	scli $1 SENTINEL MONITOR "$MASTER" "$2" "$3" "$QUORUM" >/dev/null &&
		scli $1 SENTINEL SET "$MASTER" down-after-milliseconds "$DOWN_MS" \
			failover-timeout "$FAILOVER_MS" parallel-syncs 1 \
			auth-user sentinel auth-pass "$ADMIN_PW" >/dev/null
}

# SENTINEL MONITOR this node on every Sentinel that knows no primary.
register() {
	for s in $SENTINELS; do
		k=$(scli -h "$s" SENTINEL get-master-addr-by-name "$MASTER") || continue
		[ -z "$k" ] || continue
		monitor "-h $s" "$ME" 6379 && say "registered as primary with Sentinel $s"
	done
}

# Whether a quorum of the Sentinels sees their primary up with no failover
# under way (no s_down, o_down, failover or disconnected flag).
primary_settled() {
	ok=0
	for s in $SENTINELS; do
		f=$(scli -h "$s" SENTINEL master "$MASTER" |
			awk 'p { print; exit } $0 == "flags" { p = 1 }') || continue
		case ",$f," in
		*,s_down,* | *,o_down,* | *failover* | *,disconnected,* | *promoted*) ;;
		*) ok=$((ok + 1)) ;;
		esac
	done
	[ "$ok" -ge "$QUORUM" ]
}

# The data node's watcher. $1 is how it started: undecided (the Sentinels
# knew no primary), rejoin (they named this node: it runs read-only until
# they see it up with no failover under way, then takes writes again; if
# they fail over meanwhile it replicates the new primary), or settled.
# Then, whenever the Sentinels know none and this node would win, it
# registers itself.
watch_data() {
	state=$1 t0=$(date +%s)
	until cli ROLE >/dev/null; do sleep 0.2; done # PING is refused while stale
	while :; do
		p=$(sentinels_say)
		case $p in
		none)
			if w=$(elect $(($(date +%s) - t0))) && [ "${w% *}" = "$ME" ]; then
				say "the Sentinels know no primary; the newest data of the peers is here (${w#* }): primary"
				[ "$state" = rejoin ] && cli REPLICAOF NO ONE >/dev/null
				register
				state=settled
			fi
			;;
		"$ME "*)
			if [ "$state" = rejoin ] && primary_settled; then
				cli REPLICAOF NO ONE >/dev/null &&
					say "the Sentinels see this node up as primary, no failover under way: taking writes" &&
					state=settled
			elif [ "$state" = undecided ]; then
				state=settled
			fi
			;;
		?*)
			if [ "$state" != settled ]; then
				say "the Sentinels name $p: replicating it"
				cli REPLICAOF ${p% *} ${p#* } >/dev/null || true
				state=settled
			fi
			;;
		esac
		sleep "$([ "$state" = settled ] && echo 1 || echo 0.2)"
	done
}

# The data node's configuration: docker/redis.conf and the users, in a
# file only this user reads. Prints its path.
data_conf() {
	conf=/tmp/redis-node.conf
	(
		umask 077
		cat >"$conf" <<EOF
include /etc/terrain/redis.conf
replica-announce-ip $ME
# The default user off, its permissions left on (redis/redis#14541: AOF
# transactions are replayed with them; docs/cluster.md, "Credentials").
user default off resetpass ~* &* +@all
user terrain on #$(hash "$REDIS_PW") $TERRAIN_RULES
user replica on #$(hash "$ADMIN_PW") $REPLICA_RULES
user sentinel on #$(hash "$ADMIN_PW") $SENTINEL_RULES
user topology on #$(hash "$ADMIN_PW") $TOPOLOGY_RULES
masteruser replica
masterauth "$ADMIN_PW"
EOF
	)
	echo "$conf"
}
hash() { printf '%s' "$1" | sha256sum | cut -c1-64; }

data() {
	conf=$(data_conf)
	i=0
	while :; do
		p=$(sentinels_say)
		case $p in
		none)
			say "the Sentinels know no primary: starting undecided (the peer with the newest data becomes primary)"
			watch_data undecided &
			exec redis-server "$conf" "$@"
			;;
		"$ME "*)
			if [ -d "$DATA/appendonlydir" ]; then
				# Not writable yet: the Sentinels may be failing over to a
				# replica this very moment, and what this node took
				# meanwhile would be lost with the failover. A replica of
				# nothing keeps its AOF's data and takes no writes.
				say "the Sentinels name this node primary: starting read-only on its AOF until they see it up"
				watch_data rejoin &
				exec redis-server "$conf" --replicaof 127.0.0.1 1 "$@"
			fi
			[ $((i % 10)) = 0 ] && say "the Sentinels name this node primary but its data folder is new: waiting for them to fail over"
			;;
		?*)
			say "the Sentinels name $p primary: starting as its replica"
			watch_data settled &
			exec redis-server "$conf" --replicaof ${p% *} ${p#* } "$@"
			;;
		*) [ $((i % 10)) = 0 ] && say "no quorum of Sentinels ($SENTINELS) answers yet; asking again" ;;
		esac
		i=$((i + 1))
		sleep 1
	done
}

# The Sentinel's follower: knowing no primary while another Sentinel does,
# monitor that one.
follow_sentinels() {
	until scli PING >/dev/null; do sleep 0.2; done
	while sleep 2; do
		k=$(scli SENTINEL get-master-addr-by-name "$MASTER") || continue
		[ -z "$k" ] || continue
		for s in $SENTINELS; do
			[ "$s" = "$ME" ] && continue
			a=$(scli -h "$s" SENTINEL get-master-addr-by-name "$MASTER" | tr '\n' ' ') ||
				continue
			set -- $a
			[ $# = 2 ] || continue
			monitor "" "$1" "$2" && say "Sentinel $s names $1 $2: monitoring it"
			break
		done
	done
}

sentinel() {
	conf=$DATA/sentinel.conf
	(
		umask 077
		if [ ! -s "$conf" ]; then
			cp /etc/terrain/sentinel.conf "$conf"
			echo "sentinel announce-ip $ME" >>"$conf"
		fi
		# the password of this start (Sentinel rewrites it as a user line)
		grep -v '^requirepass \|^user default ' "$conf" >"$conf.new" || true
		printf 'requirepass "%s"\n' "$SENT_PW" >>"$conf.new"
		mv "$conf.new" "$conf"
	)
	follow_sentinels &
	exec redis-server "$conf" --sentinel
}

case $mode in
health) cli ROLE | grep -q "^master$\|^slave$"; exit ;; # answers while stale, unlike PING
sentinel-health) scli SENTINEL get-master-addr-by-name "$MASTER" | grep -q . ; exit ;;
cli) REDISCLI_AUTH=$ADMIN_PW exec redis-cli --user topology "$@" ;;
scli) REDISCLI_AUTH=$SENT_PW exec redis-cli -p 26379 "$@" ;;
esac
[ -n "$PEERS" ] && [ -n "$SENTINELS" ] ||
	{ say "set TERRAIN_REDIS_PEERS and TERRAIN_SENTINELS"; exit 2; }
for v in TERRAIN_REDIS_PASSWORD TERRAIN_REDIS_ADMIN_PASSWORD TERRAIN_SENTINEL_PASSWORD; do
	eval "[ -n \"\${$v:-}\" ]" ||
		{ say "refusing to start: $v is not set (docs/cluster-front.md, \"The cluster\")"; exit 2; }
done
case $mode in
data) data "$@" ;;
sentinel) sentinel ;;
*) echo "usage: $0 data|sentinel|health|sentinel-health|cli|scli [ARG...]" >&2; exit 2 ;;
esac

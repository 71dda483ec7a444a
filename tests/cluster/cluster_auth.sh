#!/bin/bash
# run: once
# cluster_auth.sh - the shared edit log with credentials, on real
# redis-server processes on 127.0.0.1: a primary and a replica with ACL
# users only (default user off; the replica logs in with masteruser),
# three Sentinels with requirepass that log in on the data nodes with
# `sentinel auth-user`/`auth-pass`, and three nodes whose Redis user is
# limited to exactly the ACL rules docs/cluster.md gives (read from that
# page). The passwords come from the environment, a file and the spec; the
# ones given apart never show in the node's command line. Checked: the
# nodes serve and converge; a Sentinel failover under credentials (kill -9
# of the primary) brings edits back; a wrong password, a missing one, a
# wrong Sentinel password and a user without a permission the node needs
# each refuse to start at once, saying why. Every process is killed by
# pid. About 30 s.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lib_redis.sh"

LOAD=$BUILD/bench/cluster_load # make tests
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
unset TERRAIN_REDIS_PASSWORD TERRAIN_SENTINEL_PASSWORD TERRAIN_REDIS_PASSWORD_FILE \
	TERRAIN_SENTINEL_PASSWORD_FILE
KEEP_LOGS=cluster_auth

# the node's ACL line, exactly as the documentation gives it
RULES=$(grep -m1 '^user terrain on >PASSWORD ' "$(dirname "$0")/../../docs/cluster.md")
[ -n "$RULES" ] || { echo "docs/cluster.md has no 'user terrain on >PASSWORD' line"; exit 1; }
RULES=${RULES#user terrain on >PASSWORD }
NODE_PW='n0de:p@ss/w%rd'       # needs percent-encoding in a spec
NODE_PW_URL='n0de%3Ap%40ss%2Fw%25rd'
ADMIN_PW=adm1n REPL_PW=repl1ca SENT_USER_PW=sent1nel SENT_PW='s3nt pass'

# redis-cli as the admin user, or as Sentinel's default user
rcli() { redis-cli --no-auth-warning --user admin --pass "$ADMIN_PW" -p "$1" "${@:2}" 2>/dev/null; }
scli() { redis-cli --no-auth-warning -a "$SENT_PW" -p "$1" "${@:2}" 2>/dev/null; }
# the data nodes' only users are the ACL ones (redis_up, lib_redis.sh)
redis_conf() {
	cat <<-EOF
	masteruser replica
	masterauth $REPL_PW
	user default off resetpass ~* &* +@all
	user admin on >$ADMIN_PW ~* &* +@all
	user terrain on >$NODE_PW $RULES
	user nosnap on >lim1ted ${RULES/+xrange /}
	user replica on >$REPL_PW +psync +replconf +ping
	user sentinel on >$SENT_USER_PW allchannels +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish +info +client|setname +client|kill +script|kill
	EOF
}
# the Sentinels want a password and log in on the data nodes as "sentinel"
sentinel_conf() {
	cat <<-EOF
	requirepass "$SENT_PW"
	user nodes on >n0des -@all +sentinel|get-master-addr-by-name
	sentinel auth-user m sentinel
	sentinel auth-pass m $SENT_USER_PW
	EOF
}
# (node_up, lib_redis.sh, with the caller's environment: the passwords)
all_ready() { local i; for i in 1 2 3; do ready "${NPORT[$i]}" || return 1; done; }
state() {
	curl -s "http://127.0.0.1:$1/v1/worlds/$2" |
		sed -n 's/.*"edit_seq":\([0-9]*\),"world_hash":"\([0-9a-f]*\)".*/\1 \2/p'
}
converged() {
	local s1 s2 s3
	s1=$(state "${NPORT[1]}" "$1") s2=$(state "${NPORT[2]}" "$1") s3=$(state "${NPORT[3]}" "$1")
	[ -n "$s1" ] && [ "${s1%% *}" -gt 0 ] && [ "$s1" = "$s2" ] && [ "$s2" = "$s3" ]
}
post() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Content-Type: application/json' \
		-d '{"edits":[{"op":"raise","x":1,"z":2,"radius":3,"strength":0.5}]}' \
		"http://127.0.0.1:$1/v1/worlds/$2/edits"
}
# edit_ok: every node takes an edit (each finds the new primary on its own)
edit_ok() {
	local i
	for i in 1 2 3; do [ "$(post "${NPORT[$i]}" probe)" = 200 ] || return 1; done
}
# refused [VAR=VALUE...] SPEC REGEX [ARGS...]: a node on SPEC (with those
# environment variables) exits 1 within 10 s, its stderr matching REGEX
refused() {
	local envs=() log="$TMP/refused.$RANDOM.log" t0=$SECONDS
	while [[ $1 =~ ^[A-Z_]+= ]]; do envs+=("$1"); shift; done
	local spec=$1 want=$2
	shift 2
	env "${envs[@]}" timeout 20 "$SERVER_BIN" serve --bind 127.0.0.1 --port 0 \
		--data-dir "$TMP/refused" --edit-log "$spec" "$@" >"$log" 2>&1
	local rc=$?
	[ "$rc" = 1 ] && [ $((SECONDS - t0)) -le 10 ] && grep -qE -- "$want" "$log" ||
		{ echo "  exit $rc after $((SECONDS - t0)) s:"; cat "$log"; return 1; }
}

# ---------------------------------------------------------------- Redis with credentials
redis_up r1
redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
wait_for 10 online_replica || { echo "replica did not sync with masteruser"; cat "$TMP/r2.log"; exit 1; }
check "the default user is off: no password, no way in" \
	has <(redis-cli -p "${RPORT[r1]}" GET terrain:log 2>&1) 'NOAUTH'
sentinel_up s1
sentinel_up s2
sentinel_up s3
check "the Sentinels want their password" has <(redis-cli -p "${RPORT[s1]}" PING 2>&1) 'NOAUTH'
HOSTS="127.0.0.1:${RPORT[s1]},127.0.0.1:${RPORT[s2]},127.0.0.1:${RPORT[s3]}"

# node 1: the passwords from the environment; node 2: from files, the
# Sentinels logged in as an ACL user; node 3: the data password in the spec
echo "$NODE_PW" >"$TMP/redis.pw"
printf 'n0des\n' >"$TMP/sentinel.pw"
chmod 600 "$TMP/redis.pw" "$TMP/sentinel.pw"
TERRAIN_REDIS_PASSWORD=$NODE_PW TERRAIN_SENTINEL_PASSWORD=$SENT_PW node_up 1 "sentinel://terrain@$HOSTS/m" --snapshot-every 150
node_up 2 "sentinel://terrain@$HOSTS/m?sentinel_user=nodes" --snapshot-every 150 --redis-password-file "$TMP/redis.pw" \
	--sentinel-password-file "$TMP/sentinel.pw"
TERRAIN_SENTINEL_PASSWORD=$SENT_PW node_up 3 "sentinel://terrain:$NODE_PW_URL@$HOSTS/m" --snapshot-every 150
check "three nodes with a user limited to the documented rules are healthy" all_ready
check "node 1's command line holds no password" not grep -qaF "$NODE_PW" "/proc/${NPID[1]}/cmdline"
check "... nor node 2's" not grep -qaF "n0de" "/proc/${NPID[2]}/cmdline"
check "node 3 names its spec with the password hidden" not has "${NLOG[3]}" 'n0de%3A|n0de:'

"$LOAD" -n 600 "${NPORT[1]},${NPORT[2]},${NPORT[3]}" 8 auth >"$TMP/load.auth"
cat "$TMP/load.auth"
check "edits through the three nodes are acknowledged" has "$TMP/load.auth" ' ok 600 '
check "... and every node converges on one world hash" wait_for 10 converged auth

# a failover: Sentinel logs in on the replica (auth-user) and promotes it
m=$(master)
kill -KILL "${RPID[$m]}"
wait "${RPID[$m]}" 2>/dev/null
check "primary kill -9: the Sentinels, logged in as their ACL user, fail over" \
	wait_for 15 sh -c "[ \"\$(redis-cli --no-auth-warning -a '$SENT_PW' -p ${RPORT[s1]} SENTINEL get-master-addr-by-name m | sed -n 2p)\" != ${RPORT[$m]} ]"
other=$([ "$m" = r1 ] && echo r2 || echo r1)
redis_up "$m" --replicaof 127.0.0.1 "${RPORT[$other]}"
check "... the old primary comes back as a replica (masteruser)" wait_for 20 online_replica
check "... and the nodes take edits again" wait_for 20 edit_ok
wait_for 10 all_ready
"$LOAD" -n 300 "${NPORT[1]},${NPORT[2]},${NPORT[3]}" 8 auth >"$TMP/load.auth2"
cat "$TMP/load.auth2"
check "... on every node" has "$TMP/load.auth2" ' ok 300 '
check "... converging" wait_for 10 converged auth

# snapshots shared and the log trimmed under the limited user; a late joiner takes one
shared_twice() { [ "$(cat "${NLOG[@]}" | grep -c 'snapshot shared')" -ge 2 ]; }
check "snapshots are shared and the log trimmed as the limited user" wait_for 90 shared_twice
check "... no command of theirs refused (but CONFIG GET, which is not in the rules)" \
	not has <(cat "${NLOG[@]}" | grep -v "'config|get'") 'NOPERM'
check "... the log was trimmed" test -n "$(rcli "${RPORT[$(master)]}" HGET terrain:snapshot:meta trim)"
TERRAIN_REDIS_PASSWORD=$NODE_PW TERRAIN_SENTINEL_PASSWORD=$SENT_PW node_up 4 "sentinel://terrain@$HOSTS/m" --snapshot-every 150
check "a late joiner takes the shared snapshot as the limited user" has "${NLOG[4]}" 'took the shared snapshot'

# the primary's AOF alone holds every edit: Redis replays the scripts'
# transactions with the default user's permissions (docs/cluster.md)
P=$(master)
before=$(rcli "${RPORT[$P]}" XLEN terrain:log)
kill -STOP "${RPID[s1]}" "${RPID[s2]}" "${RPID[s3]}"
kill -KILL "${RPID[$P]}"
wait "${RPID[$P]}" 2>/dev/null
cp -a "$TMP/$P" "$TMP/aofcopy"
RPORT[aofcopy]=$(free_port)
sed -e "s|^port .*|port ${RPORT[aofcopy]}|" -e "s|^dir .*|dir $TMP/aofcopy|" \
	-e "s|^logfile .*|logfile $TMP/aofcopy.log|" "$TMP/$P.conf" >"$TMP/aofcopy.conf"
redis-server "$TMP/aofcopy.conf" &
RPID[aofcopy]=$!
wait_for 5 pong "${RPORT[aofcopy]}"
check "a primary restarted from its AOF holds all $before entries (no transaction refused)" \
	eq "$(rcli "${RPORT[aofcopy]}" XLEN terrain:log)" "$before"
check "... and its log says nothing was refused" not has "$TMP/aofcopy.log" 'CRITICAL'
kill -KILL "${RPID[aofcopy]}"
redis_up "$P" # the primary again, its replica still attached
kill -CONT "${RPID[s1]}" "${RPID[s2]}" "${RPID[s3]}"
wait_for 10 online_replica

# ---------------------------------------------------------------- refusals
P=$(master)
R="127.0.0.1:${RPORT[$P]}"
check "a wrong password refuses to start at once, saying why" \
	refused "redis://terrain:wrong@$R" 'refusing to start: .*AUTH as terrain: WRONGPASS.*check the user and password'
check "no password refuses to start at once: NOAUTH" \
	refused "redis://$R" 'refusing to start: .*NOAUTH.*it wants a password'
check "a wrong Sentinel password refuses to start" \
	refused TERRAIN_REDIS_PASSWORD="$NODE_PW" TERRAIN_SENTINEL_PASSWORD=nope \
	"sentinel://terrain@$HOSTS/m" 'refusing to start: .*sentinel 127.0.0.1:[0-9]+: AUTH: WRONGPASS'
check "no Sentinel password: NOAUTH, naming the Sentinel's password" \
	refused TERRAIN_REDIS_PASSWORD="$NODE_PW" "sentinel://terrain@$HOSTS/m" \
	'refusing to start: .*NOAUTH.*sentinel_password'
check "the Sentinels' password for a data node user: refused there" \
	refused TERRAIN_REDIS_PASSWORD=wrong TERRAIN_SENTINEL_PASSWORD="$SENT_PW" \
	"sentinel://terrain@$HOSTS/m" 'refusing to start: .*AUTH as terrain: WRONGPASS'

check "a user without a permission the node needs (XRANGE) refuses, naming it" \
	refused "redis://nosnap:lim1ted@$R" "refusing to start: .*NOPERM.*'xrange'"
check "a password given twice is refused" refused TERRAIN_REDIS_PASSWORD=x "redis://terrain:y@$R" 'given twice'
check "a user without a password is refused" refused "redis://terrain@$R" 'user terrain has no password'
: >"$TMP/empty.pw"
check "an empty password file is refused" has <(timeout 10 "$SERVER_BIN" serve --port 0 \
	--data-dir "$TMP/refused" --edit-log "redis://terrain@$R" --redis-password-file "$TMP/empty.pw" 2>&1) \
	'first line is empty'
finish

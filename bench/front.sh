#!/usr/bin/env bash
# bench/front.sh BUILD_DIR - make bench, section 11: the swarm (terrain-client
# swarm) through nginx in front of terrain-server nodes, with
# docker/nginx.conf on 127.0.0.1 (scripts/nginx-loopback.sh). Four runs, each
# with fresh nodes and the same players:
#   one node, direct          --cache-mb 3C
#   nginx, one node           --cache-mb 3C
#   nginx, 3 nodes, hash      --cache-mb C each (consistent hashing on the path)
#   nginx, 3 nodes, rr        --cache-mb C each (round robin: the hash line dropped)
# and prints the nodes' cache hit ratio (X-Cache as the swarm counts it;
# the swarm's URLs are unversioned, so nginx caches none of them), requests
# and tiles per second, p50/p99 latency, and CPU per answered request of the
# nodes, of nginx (utime + stime from /proc over the run) and of the swarm
# client (its shell's `times`). Figures are
# printed, never asserted. About 1 minute.
#
# Env: FRONT_PLAYERS (500), FRONT_S (10 s per run), FRONT_CACHE_MB (C, 40:
# the 3C of one node hold about two thirds of the tiles 500 players fetch in
# 10 s, about 170 MB, so the caches' capacity matters), NGINX (nginx binary).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/front.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
players="${FRONT_PLAYERS:-500}"
dur="${FRONT_S:-10}"
cmb="${FRONT_CACHE_MB:-40}"
nginx="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
out="$build/bench"
mkdir -p "$out"
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/front-bench.XXXXXX")"
npid=
# nginx first, gently (cleanup runs this before it kills the nodes)
# shellcheck disable=SC2317  # run by cleanup
cleanup_first() { [ -z "$npid" ] || { kill -TERM "$npid" 2>/dev/null; wait "$npid" 2>/dev/null || true; }; }
trap cleanup EXIT
hz=$(getconf CLK_TCK)

echo "## 11. The swarm through nginx: consistent hashing, round robin, one node"
echo
if [ ! -x "$nginx" ]; then
	echo "nginx not installed (scripts/deps.sh bench installs nginx-light): skipped"
	exit 0
fi

nodes=() ports=()
start_node() { # CACHE_MB NAME: a fresh node; appends its pid and port
	local log="$tmp/$2.log" p
	"$build/terrain-server" serve --bind 127.0.0.1 --port 0 --data-dir "$tmp/data-$2-$RANDOM" \
		--cache-mb "$1" --node-name "$2" 2>"$log" &
	nodes+=($!)
	pids+=($!)
	for _ in $(seq 3000); do  # 60 s: a loaded machine's start-up self-check
		p=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
		[ -n "$p" ] && { ports+=("$p"); return 0; }
		sleep 0.02
	done
	say "node $2 did not start"
	cat "$log" >&2
	exit 1
}
stop_all() {
	local p
	# a process already gone is not an error (set -e)
	[ -z "$npid" ] || { kill -TERM "$npid" 2>/dev/null || true; wait "$npid" 2>/dev/null || true; }
	npid=
	for p in "${nodes[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	nodes=() ports=()
}
start_nginx() { # [--round-robin]: nginx over ports[]; sets front
	local fport
	mkdir -p "$tmp/nginx"
	for _ in 1 2 3 4 5; do
		fport=$((20000 + RANDOM % 30000))
		"$root/scripts/nginx-loopback.sh" "$@" "$fport" "${ports[@]}" >"$tmp/nginx/nginx.conf"
		"$nginx" -e stderr -p "$tmp/nginx/" -c nginx.conf -g 'daemon off;' 2>>"$tmp/nginx/error.log" &
		npid=$!
		for _ in $(seq 100); do
			if curl -s -o /dev/null "http://127.0.0.1:$fport/healthz"; then
				front="http://127.0.0.1:$fport"
				return 0
			fi
			kill -0 "$npid" 2>/dev/null || break
			sleep 0.05
		done
		kill -TERM "$npid" 2>/dev/null
		wait "$npid" 2>/dev/null || true
		npid=
	done
	say "nginx did not start"
	cat "$tmp/nginx/error.log" >&2
	exit 1
}
ticks() { # PID...: utime + stime of each process (and of nginx's workers)
	local p t=0 c
	for p in "$@"; do
		for c in "$p" $(pgrep -P "$p" || true); do
			[ -r "/proc/$c/stat" ] || continue
			t=$((t + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$c/stat")))
		done
	done
	echo "$t"
}
# run LABEL NODES CACHE_MB_EACH FRONT(direct|hash|rr): one row of results.tsv
run() {
	local label=$1 n=$2 mb=$3 mode=$4 k url n0 x0 n1 x1 cs log="$tmp/swarm.$RANDOM"
	for k in $(seq "$n"); do start_node "$mb" "node$k"; done
	case $mode in
	direct) url="http://127.0.0.1:${ports[0]}" ;;
	hash) start_nginx; url=$front ;;
	rr) start_nginx --round-robin; url=$front ;;
	esac
	say "section 11: $label ($players players, $dur s)"
	n0=$(ticks "${nodes[@]}")
	x0=$([ -n "$npid" ] && ticks "$npid" || echo 0)
	# the client's own CPU: the subshell's children times (bash `times`)
	( "$build/terrain-client" swarm --server "$url" --players "$players" --duration "$dur" \
		>"$log" 2>&1 || true; times >"$log.times" )
	n1=$(ticks "${nodes[@]}")
	x1=$([ -n "$npid" ] && ticks "$npid" || echo 0)
	cs=$(tail -n 1 "$log.times" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } print t }')
	awk -v label="$label" -v nodes="$n" -v mb="$mb" -v hz="$hz" -v dn=$((n1 - n0)) \
		-v dx=$((x1 - x0)) -v front="$mode" -v cs="$cs" '
	# swarm: R requests, A answered (X/s), T tiles (Y/s), ...
	/ answered \(/ { ans = $4; tps = substr($9, 2) + 0 }
	/cache hits/ { hit = $4 }
	/^swarm: latency/ { p50 = $4; p99 = $10 }
	/errors,/ { err = $2 }
	END {
		us = ans ? 1e6 / hz / ans : 0
		printf "%s\t%d x %d MB\t%s\t%.0f\t%s\t%s\t%.0f\t%s\t%.0f\t%.0f\t%s\n", label, nodes, mb,
		       hit, tps, p50, p99, dn * us, front == "direct" ? "n/a" : sprintf("%.0f", dx * us),
		       (dn + dx) * us, ans ? cs * 1e6 / ans : 0, err
	}' "$log" >>"$tmp/results.tsv"
	cp "$log" "$out/front-swarm-$mode-$n.log"
	stop_all
}

printf 'path\tnodes x cache\tnode cache hits\ttiles/s\tp50 ms\tp99 ms\tnode CPU us/req\tnginx CPU us/req\tservers us/req\tswarm client us/req\terrors\n' \
	>"$tmp/results.tsv"
run "one node, direct" 1 $((3 * cmb)) direct
run "nginx, one node" 1 $((3 * cmb)) hash
run "nginx, 3 nodes, consistent hash" 3 "$cmb" hash
run "nginx, 3 nodes, round robin" 3 "$cmb" rr
{
	cat "$tmp/results.tsv"
	echo "note: $players players in 10 worlds, $dur s per run, fresh nodes each run; the swarm's unversioned" \
		"tile URLs are never kept by nginx, so every hit is a node's (X-Cache)"
	echo "note: the same total cache ($((3 * cmb)) MB) everywhere: hashing gives each node its share of" \
		"the tiles, round robin sends every tile to every node, which each generate and keep it"
	echo "note: CPU (user + system) per answered request over the whole run, generation included (most" \
		"requests of a fresh swarm are cold); servers = nodes + nginx; the swarm client (which decodes" \
		"every tile) shares the same CPUs"
	echo "note: $(nproc) cores: three nodes and nginx on the same cores as one node show the overhead" \
		"of the front and of more processes, not scaling"
	echo "note: swarm outputs in ${out#"$root"/}/front-swarm-*.log"
} | awk -F '\t' '
	/^note: / { notes[++nn] = substr($0, 7); next }
	{ nr++; for (i = 1; i <= NF; i++) { c[nr, i] = $i; if (length($i) > w[i]) w[i] = length($i) } nf = NF }
	END {
		for (r = 1; r <= nr; r++) {
			line = "|"
			for (i = 1; i <= nf; i++) line = line sprintf(" %-" w[i] "s |", c[r, i])
			print line
			if (r == 1) { line = "|"; for (i = 1; i <= nf; i++) { s = ""; for (k = 0; k < w[i]; k++) s = s "-"; line = line " " s " |" }; print line }
		}
		print ""
		for (k = 1; k <= nn; k++) print "- " notes[k]
	}'

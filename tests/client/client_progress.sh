#!/bin/bash
# client_progress.sh - the progress lines of terrain-client's long commands
# (fetch, export, swarm; client-sample/progress.h) against the real server.
# On a terminal (stderr on a pseudo-terminal, tests/lib/pty_run.py) each shows
# its stages redrawn in place: done/total, the share, a rate and the time
# left, ending with the stage's total (fetch: tiles, rows drawn, rows of the
# PNG written; export: tiles, rows of the PNG; swarm: seconds walked with
# the answers so far). With stderr on a file, or with --quiet on the
# terminal, stderr has none of it. stdout (the summaries) is the same
# either way.
. "$(dirname "$0")/../lib/lib.sh"

CLIENT=$BUILD/terrain-client
PTY="python3 $(dirname "$0")/../lib/pty_run.py"
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 0; }
server_start

# run NAME ARGS...: the command three ways: on a pty ($TMP/NAME.tty.*),
# on files ($TMP/NAME.file.*) and on a pty with --quiet ($TMP/NAME.quiet.*)
run() {
	local name=$1
	shift
	check "$name on a terminal exits 0" $PTY "$TMP/$name.tty.out" "$TMP/$name.tty.err" -- "$CLIENT" "$@"
	check "$name with stderr on a file exits 0" \
		to "$TMP/$name.file.out" "$TMP/$name.file.err" timeout -k 5 300 "$CLIENT" "$@"
	check "$name --quiet on a terminal exits 0" \
		$PTY "$TMP/$name.quiet.out" "$TMP/$name.quiet.err" -- "$CLIENT" "$@" --quiet
}

# to OUT ERR CMD...: CMD with stdout on OUT and stderr on ERR
to() { local o=$1 e=$2; shift 2; "$@" >"$o" 2>"$e"; }
# has_line FILE REGEX: a progress line (between carriage returns) matches
has_line() { tr '\r' '\n' <"$1" | grep -Eq "$2"; }
# quiet FILE: no progress line at all (no carriage return, no "N/M")
quiet() { ! grep -q $'\r' "$1" && ! grep -Eq '[0-9]+/[0-9.]+ \(' "$1"; }
# redrawn FILE WHAT: WHAT shown at least twice, ending in place (\r ... erase)
redrawn() { [ "$(tr '\r' '\n' <"$1" | grep -c "$2")" -ge 2 ] && grep -q $'\r'"terrain-client: " "$1"; }

# ---- fetch: 8 x 8 chunks (LOD 0 near, coarser far), a 2048 x 2048 map -------------------
run fetch fetch --server "$BASE" --seed 42 --radius 1024 --d0 512 -o "$TMP/map.png"
tiles=$(sed -n 's/^fetch: \([0-9]*\) chunks.*/\1/p' "$TMP/fetch.file.out")
check "fetch reports its chunks" test -n "$tiles"
check "fetch on a terminal: the tiles, done/total with the share" \
	has_line "$TMP/fetch.tty.err" "^terrain-client: fetch: tiles $tiles/$tiles \(100%\), [0-9]+/s, in [0-9.]+ (s|min)"
check "fetch on a terminal: a rate and the time left while it goes" \
	has_line "$TMP/fetch.tty.err" "^terrain-client: fetch: (tiles|drawing, rows) [0-9]+/[0-9]+ \([0-9]+%\), [0-9]+/s, [0-9.]+ s left"
check "fetch on a terminal: the rows drawn, then the rows of the PNG written" \
	has_line "$TMP/fetch.tty.err" "^terrain-client: fetch: drawing, rows 2048/2048 \(100%\)" &&
	check "(the PNG's rows)" has_line "$TMP/fetch.tty.err" \
		"^terrain-client: fetch: writing $TMP/map.png, rows 2048/2048 \(100%\)"
check "fetch on a terminal redraws its line in place" redrawn "$TMP/fetch.tty.err" "fetch: tiles"
check "fetch with stderr on a file prints no progress" quiet "$TMP/fetch.file.err"
check "fetch --quiet on a terminal prints no progress" quiet "$TMP/fetch.quiet.err"
check "fetch prints the same summary lines either way" \
	cmp -s <(sed 's/[0-9.]\+//g' "$TMP/fetch.tty.out") <(sed 's/[0-9.]\+//g' "$TMP/fetch.file.out")

# ---- export: 3 x 2 chunks at LOD 1 -------------------------------------------------
run export export --server "$BASE" --seed 42 --lod 1 --cx0 0 --cz0 0 --cx1 2 --cz1 1 -o "$TMP/ex"
check "export on a terminal: its 6 tiles" \
	has_line "$TMP/export.tty.err" "^terrain-client: export: tiles 6/6 \(100%\), [0-9]+/s, in "
check "export on a terminal: the 257 rows of the PNG" \
	has_line "$TMP/export.tty.err" "^terrain-client: export: writing $TMP/ex.png, rows 257/257 \(100%\)"
check "export with stderr on a file prints no progress" quiet "$TMP/export.file.err"
check "export --quiet on a terminal prints no progress" quiet "$TMP/export.quiet.err"
check "export's summary on a terminal still names its 4 files" eq "$(grep -c '^export: wrote' "$TMP/export.tty.out")" 4

# ---- swarm: 4 players for 2 s ----------------------------------------------------
run swarm swarm --server "$BASE" --players 4 --duration 2 --worlds 2 --radius 300
check "swarm on a terminal: the seconds walked of 2, with the answers so far" \
	has_line "$TMP/swarm.tty.err" "^terrain-client: swarm: s of walking [0-9.]+/2.0 \([0-9]+%\), [0-9]+ answers \([0-9]+/s\), 0 errors, [0-9.]+ s left"
check "swarm on a terminal: ends at 2.0/2.0" \
	has_line "$TMP/swarm.tty.err" "^terrain-client: swarm: s of walking 2.0/2.0 \(100%\), [1-9][0-9]* answers"
check "swarm with stderr on a file prints no progress" quiet "$TMP/swarm.file.err"
check "swarm --quiet on a terminal prints no progress" quiet "$TMP/swarm.quiet.err"
check "swarm reports its totals on stdout" grep -q '^swarm: .* requests, ' "$TMP/swarm.tty.out"
finish

#!/bin/bash
# run.sh - run test suites, several at once: the cmocka binaries and the
# tests/*.sh integration scripts of one build or of several, printing one
# line per suite as it ends and a final "N passed, N failed".
#
#   tests/run.sh [BINARY...]              one build ($BUILD): the binaries
#                                         given (make check), then every script
#   tests/run.sh --pass DIR[:MODE[:ENV]] ... [--cross DIR_A,DIR_B]
#                                         several builds in one pool (make test)
#
# A pass is a build folder, a MODE and the environment its suites run with
# (ENV: VAR=VALUE pairs joined by commas, e.g. SAN=1 or CC=clang; scripts
# that test the Makefile skip themselves under CC or SAN). MODE:
#   all       every test binary of DIR/tests/ and every script (default)
#   binaries  the binaries only (a second compiler, whose scripts would
#             repeat the first build's; its tiles are compared by --cross)
#   repeat    the binaries and the scripts without "# run: once"
# --cross DIR_A,DIR_B also runs tests/cross-compiler.sh on the two builds.
# A test binary is DIR/tests/test_NAME for a tests/test_NAME.c; a script is
# any executable tests/*.sh but this one, lib.sh and cross-compiler.sh, so
# new ones are picked up as they are added.
#
# Markers, in the first 20 lines of a script or of a binary's tests/NAME.c
# (as a line "# run: WORD" in a script, " * run: WORD" in C):
#   run: once   only in the first pass (RUN_ONCE=1 in the old interface):
#               browser tests and slow fault scripts (kill -9, full disks,
#               the cluster), whose subject is not what the other builds
#               change
#   run: alone  never beside another suite: it measures time or load, or
#               holds a fixed resource. Alone suites run one by one after
#               the others.
# Everything else runs JOBS at a time (default: the number of cores). The
# longest suites start first, by the times of the last run kept in
# DIR/test-logs/times (scripts before binaries when there is none). Each
# suite has a 600 s timeout; its output is in DIR/test-logs/NAME.log.
# Old interface: BUILD, RUN_ONCE=0 (mode repeat), SCRIPTS=0 (mode binaries).
set -u
cd "$(dirname "$0")/.." || exit 1
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
start_all=$SECONDS

# ---- what to run ---------------------------------------------------------------
# One line per suite: "PASS_INDEX KIND PATH" (KIND bin, sh or cross).
items=()
pass_dir=() pass_env=()

marker() { # FILE WORD: the file has the marker near its top
	[ -f "$1" ] && head -n 20 "$1" | grep -qxE "(#| \*) run: $2"
}
source_of() { # ITEM: the file whose markers count
	case $2 in
		bin) echo "tests/$(basename "$3").c" ;;
		*) echo "$3" ;;
	esac
}
add_pass() { # DIR MODE ENV [BINARY...]
	local dir=$1 mode=$2 env=$3 p=${#pass_dir[@]} t s
	shift 3
	pass_dir+=("$dir")
	pass_env+=("$env")
	if [ $# -eq 0 ]; then
		for t in tests/test_*.c; do
			t="$dir/tests/$(basename "$t" .c)"
			[ -x "$t" ] && set -- "$@" "$t"
		done
	fi
	for t in "$@"; do items+=("$p bin $t"); done
	[ "$mode" = binaries ] && return
	for s in tests/*.sh; do
		case $s in tests/run.sh | tests/cross-compiler.sh | tests/lib.sh) continue ;; esac
		[ -x "$s" ] || continue
		if [ "$mode" = repeat ] && marker "$s" once; then
			skipped+=("$dir $(basename "$s")")
			continue
		fi
		items+=("$p sh $s")
	done
}

skipped=()
if [ "${1:-}" = --pass ]; then
	while [ $# -gt 0 ]; do
		case $1 in
			--pass)
				IFS=: read -r d m e <<< "$2"
				add_pass "$d" "${m:-all}" "${e:-}"
				shift 2 ;;
			--cross)
				items+=("0 cross ${2/,/ }")
				shift 2 ;;
			*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
		esac
	done
else
	BUILD=${BUILD:-build}
	mode=all
	[ "${RUN_ONCE:-1}" != 1 ] && mode=repeat
	[ "${SCRIPTS:-1}" = 0 ] && mode=binaries
	# the old interface runs the given binaries, with the caller's environment
	if [ $# -eq 0 ]; then add_pass "$BUILD" "$mode" ""; else add_pass "$BUILD" "$mode" "" "$@"; fi
fi

# ---- order: the longest first ------------------------------------------------------
name_of() { # ITEM: its name in the output and the logs
	local p kind path
	read -r p kind path _ <<< "$1"
	case $kind in
		cross) echo "cross-compiler" ;;
		*) echo "$(basename "$path")" ;;
	esac
}
last_time() { # ITEM: seconds it took last time in its build, or a guess
	local p kind path n t
	read -r p kind path _ <<< "$1"
	n=$(name_of "$1")
	t=$(awk -v n="$n" '$1 == n { t = $2 } END { print t }' "${pass_dir[$p]}/test-logs/times" 2>/dev/null)
	[ -n "$t" ] && { echo "$t"; return; }
	case $kind in sh) echo 10 ;; cross) echo 30 ;; *) echo 2 ;; esac
}
parallel=() alone=()
while read -r _ i; do
	read -r p kind path _ <<< "${items[$i]}"
	if marker "$(source_of "$p" "$kind" "$path")" alone; then alone+=("$i"); else parallel+=("$i"); fi
done < <(for i in "${!items[@]}"; do echo "$(last_time "${items[$i]}") $i"; done | sort -k1,1nr -k2,2n)

# ---- running ------------------------------------------------------------------------------
for d in "${pass_dir[@]}"; do mkdir -p "$d/test-logs"; : > "$d/test-logs/times.new"; done
pass=0 fail=0 failed=()
declare -A running=() started=()

launch() { # INDEX: start the suite in the background
	local i=$1 p kind path a b n log env=()
	read -r p kind path b <<< "${items[$i]}"
	n=$(name_of "${items[$i]}")
	log="${pass_dir[$p]}/test-logs/$n.log"
	[ -n "${pass_env[$p]}" ] && IFS=, read -r -a env <<< "${pass_env[$p]}"
	(
		export BUILD="${pass_dir[$p]}"
		case $kind in
			cross) exec env "${env[@]}" timeout 600 tests/cross-compiler.sh "$path" "$b" ;;
			*) exec env "${env[@]}" timeout 600 "$path" ;;
		esac
	) >"$log" 2>&1 &
	running[$!]=$i
	started[$i]=$SECONDS
}
report() { # PID STATUS
	local i=${running[$1]} p kind path n log dt
	read -r p kind path _ <<< "${items[$i]}"
	n=$(name_of "${items[$i]}")
	log="${pass_dir[$p]}/test-logs/$n.log"
	dt=$((SECONDS - started[$i]))
	unset "running[$1]"
	echo "$n $dt" >> "${pass_dir[$p]}/test-logs/times.new"
	if [ "$2" = 0 ]; then
		pass=$((pass + 1))
		printf '  ok    %-14s %-28s %3ss\n' "${pass_dir[$p]}" "$n" "$dt"
	else
		fail=$((fail + 1)); failed+=("${pass_dir[$p]}/$n")
		printf '  FAIL  %-14s %-28s (log: %s)\n' "${pass_dir[$p]}" "$n" "$log"
		tail -n 40 "$log" | sed 's/^/        /'
	fi
}
reap() { # wait for one suite to end and report it
	local pid st
	wait -n -p pid "${!running[@]}"
	st=$?
	report "$pid" "$st"
}
for s in "${skipped[@]}"; do
	printf '  skip  %-14s %-28s (run: once; it ran in the first pass)\n' ${s% *} "${s#* }"
done
for i in "${parallel[@]}"; do
	while [ ${#running[@]} -ge "$JOBS" ]; do reap; done
	launch "$i"
done
while [ ${#running[@]} -gt 0 ]; do reap; done
for i in "${alone[@]}"; do
	launch "$i"
	reap
done
for d in "${pass_dir[@]}"; do mv -f "$d/test-logs/times.new" "$d/test-logs/times"; done

dirs=$(printf '%s ' "${pass_dir[@]}")
echo "${dirs% }: $pass passed, $fail failed ($((SECONDS - start_all)) s, $JOBS at a time)"
[ "$fail" = 0 ] || printf '  failed: %s\n' "${failed[*]}"
[ "$fail" = 0 ]

#!/bin/bash
# run.sh - run test suites, several at once: the cmocka binaries and the
# tests/DIR/*.sh integration scripts of one build or of several, printing
# one line per suite as it ends and a final "N passed, N failed".
#
#   tests/run.sh [BINARY...]              one build ($BUILD): the binaries
#                                         given (make check), then every script
#   tests/run.sh --pass DIR[:MODE[:ENV]] [--prepare CMD] ... [--cross DIR_A,DIR_B]
#                                         several builds in one pool (make test)
#
# A pass is a build folder, a MODE and the environment its suites run with
# (ENV: VAR=VALUE pairs joined by commas, e.g. SAN=1 or CC=clang; scripts
# that test the Makefile skip themselves under CC or SAN). MODE:
#   all       every test binary of DIR/tests/ and every script (default)
#   binaries  the binaries only (a second compiler, whose scripts would
#             repeat the first build's; its tiles are compared by --cross)
#   repeat    the binaries and the scripts without "# run: once"
# --prepare CMD after a --pass: a shell command that makes that build (make
# test's clang and ASan builds); it runs in the pool, beside the suites of
# the passes that are ready, and its pass's suites start once it is done
# (a failed build fails the pass). --cross DIR_A,DIR_B also runs
# tests/platform/cross-compiler.sh once both builds are ready. A test binary
# is DIR/tests/test_NAME for a tests/unit/test_NAME.c, looked for when its
# pass is ready; a script is any executable tests/SUBJECT/*.sh (one folder
# down) but those of tests/lib/ and cross-compiler.sh, so new ones are
# picked up as they are added (tests/README.md: where a test goes).
#
# Markers, in the first 20 lines of a script or of a binary's tests/unit/NAME.c
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
# suite has a 1200 s timeout (times TEST_TIMEOUT_SCALE, a whole number,
# default 1: tests/lib/lib.sh), far above what any takes on an idle machine:
# under load the browser tests take minutes; its output is in
# DIR/test-logs/NAME.log.
# Old interface: BUILD, RUN_ONCE=0 (mode repeat), SCRIPTS=0 (mode binaries).
set -u
cd "$(dirname "$0")/.." || exit 1
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
SUITE_TIMEOUT=$((1200 * ${TEST_TIMEOUT_SCALE:-1}))
start_all=$SECONDS

# ---- what to run ---------------------------------------------------------------
# items[i] = "PASS KIND PATH [ARG]", KIND one of bin, sh, cross (PATH and
# ARG its two builds' passes), prep (the pass's --prepare command).
items=() skipped=()
pass_dir=() pass_mode=() pass_env=() pass_prep=() pass_ready=()

marker() { # FILE WORD: the file has the marker near its top
	[ -f "$1" ] && head -n 20 "$1" | grep -qxE "(#| \*) run: $2"
}
pass_of_dir() { # DIR: its pass, or -1
	local p
	for p in "${!pass_dir[@]}"; do [ "${pass_dir[$p]}" = "$1" ] && { echo "$p"; return; }; done
	echo -1
}
# The suites of pass P (its binaries as they are now, unless given).
add_suites() { # P [BINARY...]
	local p=$1 dir=${pass_dir[$1]} t s
	shift
	if [ $# -eq 0 ]; then
		for t in tests/unit/test_*.c; do
			t="$dir/tests/$(basename "$t" .c)"
			[ -x "$t" ] && set -- "$@" "$t"
		done
	fi
	for t in "$@"; do items+=("$p bin $t"); done
	[ "${pass_mode[$p]}" = binaries ] && return
	for s in tests/*/*.sh; do
		case $s in tests/lib/* | tests/platform/cross-compiler.sh) continue ;; esac
		[ -x "$s" ] || continue
		if [ "${pass_mode[$p]}" = repeat ] && marker "$s" once; then
			skipped+=("$dir $(basename "$s")")
			continue
		fi
		items+=("$p sh $s")
	done
}
new_pass() { # DIR MODE ENV
	pass_dir+=("$1") pass_mode+=("$2") pass_env+=("$3") pass_prep+=("") pass_ready+=(0)
}

cross=""
if [ "${1:-}" = --pass ]; then
	while [ $# -gt 0 ]; do
		case $1 in
			--pass)
				IFS=: read -r d m e <<< "$2"
				new_pass "$d" "${m:-all}" "${e:-}"
				shift 2 ;;
			--prepare)
				pass_prep[$(( ${#pass_dir[@]} - 1 ))]=$2
				shift 2 ;;
			--cross) cross=$2; shift 2 ;;
			*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
		esac
	done
	for p in "${!pass_dir[@]}"; do
		if [ -n "${pass_prep[$p]}" ]; then
			items+=("$p prep")
		else
			pass_ready[$p]=1
			add_suites "$p"
		fi
	done
	if [ -n "$cross" ]; then
		a=$(pass_of_dir "${cross%,*}") b=$(pass_of_dir "${cross#*,}")
		[ "$a" -ge 0 ] && [ "$b" -ge 0 ] || { echo "run.sh: --cross $cross: not passes" >&2; exit 2; }
		items+=("$a cross $a $b")
	fi
else
	mode=all
	[ "${RUN_ONCE:-1}" != 1 ] && mode=repeat
	[ "${SCRIPTS:-1}" = 0 ] && mode=binaries
	new_pass "${BUILD:-build}" "$mode" ""
	pass_ready[0]=1
	add_suites 0 "$@" # the old interface: the binaries given, if any
fi

# ---- order: the longest first ------------------------------------------------------
name_of() { # ITEM: its name in the output and the logs
	local p kind path
	read -r p kind path _ <<< "$1"
	case $kind in
		cross) echo "cross-compiler" ;;
		prep) echo "build" ;;
		*) basename "$path" ;;
	esac
}
last_time() { # ITEM: seconds it took last time in its build, or a guess
	local p kind n t
	read -r p kind _ <<< "$1"
	[ "$kind" = prep ] && { echo 100000; return; } # builds first
	n=$(name_of "$1")
	t=$(awk -v n="$n" '$1 == n { t = $2 } END { print t }' "${pass_dir[$p]}/test-logs/times" 2>/dev/null)
	[ -n "$t" ] && { echo "$t"; return; }
	case $kind in sh) echo 10 ;; cross) echo 30 ;; *) echo 2 ;; esac
}
source_of() { # ITEM: the file whose markers count
	local p kind path
	read -r p kind path _ <<< "$1"
	case $kind in
		bin) echo "tests/unit/$(basename "$path").c" ;;
		sh) echo "$path" ;;
	esac
}
queue=() alone=() # indices into items, waiting
order() { # items FIRST..: into queue (longest first) or alone
	local i
	while read -r _ i; do
		if marker "$(source_of "${items[$i]}")" alone; then alone+=("$i"); else queue+=("$i"); fi
	done < <(for ((i = $1; i < ${#items[@]}; i++)); do echo "$(last_time "${items[$i]}") $i"; done |
		sort -k1,1nr -k2,2n)
	# keep the whole queue longest first
	mapfile -t queue < <(for i in "${queue[@]}"; do echo "$(last_time "${items[$i]}") $i"; done |
		sort -k1,1nr -k2,2n | awk '{ print $2 }')
}

# ---- running ------------------------------------------------------------------------------
for d in "${pass_dir[@]}"; do mkdir -p "$d/test-logs"; : > "$d/test-logs/times.new"; done
pass=0 fail=0 failed=()
declare -A running=() started=()

ready() { # ITEM: whether its builds are made
	local p kind a b
	read -r p kind a b <<< "$1"
	case $kind in
		cross) [ "${pass_ready[$a]}" = 1 ] && [ "${pass_ready[$b]}" = 1 ] ;;
		*) [ "${pass_ready[$p]}" = 1 ] || [ "$kind" = prep ] ;;
	esac
}
launch() { # INDEX: start the suite in the background
	local i=$1 p kind path b n log env=()
	read -r p kind path b <<< "${items[$i]}"
	n=$(name_of "${items[$i]}")
	log="${pass_dir[$p]}/test-logs/$n.log"
	[ -n "${pass_env[$p]}" ] && IFS=, read -r -a env <<< "${pass_env[$p]}"
	(
		export BUILD="${pass_dir[$p]}"
		case $kind in
			prep) exec bash -c "${pass_prep[$p]}" ;;
			cross) exec env "${env[@]}" timeout "$SUITE_TIMEOUT" tests/platform/cross-compiler.sh \
				"${pass_dir[$path]}" "${pass_dir[$b]}" ;;
			*) exec env "${env[@]}" timeout "$SUITE_TIMEOUT" "$path" ;;
		esac
	) >"$log" 2>&1 &
	running[$!]=$i
	started[$i]=$SECONDS
}
report() { # PID STATUS
	local i=${running[$1]} p kind n log dt first
	read -r p kind _ <<< "${items[$i]}"
	n=$(name_of "${items[$i]}")
	log="${pass_dir[$p]}/test-logs/$n.log"
	dt=$((SECONDS - started[$i]))
	unset "running[$1]"
	[ "$kind" = prep ] || echo "$n $dt" >> "${pass_dir[$p]}/test-logs/times.new"
	if [ "$2" = 0 ]; then
		[ "$kind" = prep ] || pass=$((pass + 1))
		printf '  ok    %-14s %-28s %3ss\n' "${pass_dir[$p]}" "$n" "$dt"
	else
		fail=$((fail + 1)); failed+=("${pass_dir[$p]}/$n")
		printf '  FAIL  %-14s %-28s (log: %s)\n' "${pass_dir[$p]}" "$n" "$log"
		tail -n 40 "$log" | sed 's/^/        /'
	fi
	if [ "$kind" = prep ]; then # the build is made: its suites join the queue
		pass_ready[$p]=$([ "$2" = 0 ] && echo 1 || echo 2)
		first=${#items[@]}
		if [ "$2" = 0 ]; then
			add_suites "$p"
			order "$first"
		fi
	fi
}
reap() { # wait for one suite to end and report it
	local pid st
	wait -n -p pid "${!running[@]}"
	st=$?
	report "$pid" "$st"
}
next() { # the first queued suite whose builds are made, or ""
	local k
	for k in "${!queue[@]}"; do
		if ready "${items[${queue[$k]}]}"; then
			echo "$k"
			return
		fi
	done
}
order 0
for s in "${skipped[@]}"; do
	printf '  skip  %-14s %-28s (run: once; it ran in the first pass)\n' ${s% *} "${s#* }"
done
while [ ${#queue[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
	k=""
	[ ${#running[@]} -lt "$JOBS" ] && k=$(next)
	if [ -n "$k" ]; then
		launch "${queue[$k]}"
		unset "queue[$k]"
		queue=("${queue[@]}")
	elif [ ${#running[@]} -gt 0 ]; then
		reap
	else # queued suites whose build failed
		for i in "${queue[@]}"; do
			fail=$((fail + 1)); failed+=("$(name_of "${items[$i]}") (no build)")
		done
		queue=()
	fi
done
for i in "${alone[@]}"; do
	ready "${items[$i]}" || { fail=$((fail + 1)); failed+=("$(name_of "${items[$i]}") (no build)"); continue; }
	launch "$i"
	reap
done
for d in "${pass_dir[@]}"; do mv -f "$d/test-logs/times.new" "$d/test-logs/times"; done

dirs=$(printf '%s ' "${pass_dir[@]}")
echo "${dirs% }: $pass passed, $fail failed ($((SECONDS - start_all)) s, $JOBS at a time)"
[ "$fail" = 0 ] || printf '  failed: %s\n' "${failed[*]}"
[ "$fail" = 0 ]

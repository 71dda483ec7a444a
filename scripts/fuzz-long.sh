#!/bin/bash
# fuzz-long.sh - run every libFuzzer target of a build for a set time, all
# at once, each under nice, each with its corpus kept between runs.
# Usage: scripts/fuzz-long.sh [BUILD_DIR [CORPUS_DIR]]   (make fuzz-long)
#   FUZZ_TIME   seconds per target (default 3600)
#   FUZZ_RUNS   also stop a target after this many executions (default: none)
#   FUZZ_NICE   nice level (default 19: the machine is shared)
#   FUZZ_ONLY   space-separated target names to run (default: every
#               BUILD_DIR/fuzz_* binary)
# Target NAME (BUILD_DIR/fuzz_NAME) grows CORPUS_DIR/NAME, starting from the
# seeds in tests/fuzz_NAME/ when that folder exists, with the dictionary
# tests/fuzz_NAME.dict when it exists. Its log is CORPUS_DIR/NAME.log; a
# crash is saved as CORPUS_DIR/NAME-crash-*. Each run adds one line per
# target to CORPUS_DIR/runs.log: date, target, seconds, executions this
# run, executions over every run so far, corpus size, exit status. Exits 1
# when a target found something.
set -u
build=${1:-build-fuzz}
corpus=${2:-fuzz-corpus}
time=${FUZZ_TIME:-3600}
nice=${FUZZ_NICE:-19}
mkdir -p "$corpus"

names=()
for bin in "$build"/fuzz_*; do
	[ -x "$bin" ] && [ -f "$bin" ] || continue
	names+=("${bin##*/fuzz_}")
done
[ -n "${FUZZ_ONLY:-}" ] && read -r -a names <<< "$FUZZ_ONLY"
[ ${#names[@]} -gt 0 ] || { echo "fuzz-long: no $build/fuzz_* (make fuzz first)" >&2; exit 2; }

pids=()
for n in "${names[@]}"; do
	args=(-max_total_time="$time" -print_final_stats=1 -artifact_prefix="$corpus/$n-crash-")
	[ -n "${FUZZ_RUNS:-}" ] && args+=(-runs="$FUZZ_RUNS")
	[ -f "tests/fuzz_$n.dict" ] && args+=(-dict="tests/fuzz_$n.dict")
	mkdir -p "$corpus/$n"
	seeds=()
	[ -d "tests/fuzz_$n" ] && seeds=("tests/fuzz_$n")
	echo "fuzz-long: $n for ${time}s under nice $nice (log: $corpus/$n.log)"
	# With the kernel's autogroups, nice orders threads only inside their
	# session: the target gets a session of its own (setsid) and gives it
	# the nice level too, from inside it, before it starts.
	setsid sh -c 'echo "$1" > /proc/self/autogroup 2>/dev/null; shift; exec nice -n "$0" "$@"' \
		"$nice" "$nice" "$build/fuzz_$n" "${args[@]}" "$corpus/$n" "${seeds[@]}" \
		> "$corpus/$n.log" 2>&1 &
	pids+=($!)
done

status=0
for i in "${!names[@]}"; do
	n=${names[$i]}
	wait "${pids[$i]}"
	rc=$?
	[ "$rc" = 0 ] || status=1
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$corpus/$n.log" | tail -n 1)
	# no final stats (fuzz_http's server stops on SIGINT first): the last
	# status line's count
	[ -n "$execs" ] || execs=$(grep -ao '^#[0-9]*' "$corpus/$n.log" | tail -n 1 | tr -d '#')
	prev=$(awk -v n="$n" '$2 == n { s = $5 } END { print s + 0 }' "$corpus/runs.log" 2>/dev/null)
	total=$((prev + ${execs:-0}))
	size=$(find "$corpus/$n" -type f | wc -l)
	echo "$(date -u +%FT%TZ) $n ${time}s ${execs:-0} $total $size rc=$rc" >> "$corpus/runs.log"
	printf 'fuzz-long: %-6s %12s executions this run, %12s over all runs, corpus %s files, exit %s\n' \
		"$n" "${execs:-0}" "$total" "$size" "$rc"
	[ "$rc" = 0 ] || tail -n 30 "$corpus/$n.log"
done
exit "$status"

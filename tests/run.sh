#!/bin/bash
# run.sh - run every test binary given and every tests/*.sh integration script
# against $BUILD; print one line per suite and a final "N passed, N failed".
# A script with a line "# run: once" near its top (browser tests: what they
# test is not the build's C) runs only when RUN_ONCE=1, which `make test`
# sets for its first build; the others are listed as skipped. SCRIPTS=0
# runs the test binaries only (make test's clang build, whose scripts would
# repeat the gcc build's; its tiles are compared by tests/cross-compiler.sh).
set -u
BUILD=${BUILD:-build}
export BUILD
pass=0 fail=0 failed=()
logdir="$BUILD/test-logs"; mkdir -p "$logdir"
run_one() {
	local name=$1; shift
	local log="$logdir/$name.log" start=$SECONDS
	if timeout 600 "$@" >"$log" 2>&1; then
		pass=$((pass + 1)); printf '  ok    %-28s %3ss\n' "$name" $((SECONDS - start))
	else
		fail=$((fail + 1)); failed+=("$name")
		printf '  FAIL  %-28s (log: %s)\n' "$name" "$log"; tail -n 40 "$log" | sed 's/^/        /'
	fi
}
for t in "$@"; do run_one "$(basename "$t")" "$t"; done
for s in tests/*.sh; do
	[ "${SCRIPTS:-1}" = 0 ] && break
	case $s in tests/run.sh|tests/cross-compiler.sh|tests/lib.sh) continue ;; esac
	[ -x "$s" ] || continue
	if [ "${RUN_ONCE:-1}" != 1 ] && head -n 20 "$s" | grep -qx '# run: once'; then
		printf '  skip  %-28s (run: once; it ran with the first build)\n' "$(basename "$s")"
		continue
	fi
	run_one "$(basename "$s")" "$s"
done
echo "$BUILD: $pass passed, $fail failed"
[ "$fail" = 0 ]

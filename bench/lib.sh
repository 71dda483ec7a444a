# shellcheck shell=bash
# bench/lib.sh - what the bench scripts share; sourced, never run:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   trap cleanup EXIT
#
# The programs the scripts run (load generators, the bench programs) are
# built by the Makefile, never here: bench_make asks make for them, into
# the build folder under test ($(BUILD)/bench/NAME, `make bench-programs`).
# Everything else a script keeps to itself.

# bench_root: the repository (make runs there).
bench_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# say TEXT: one line of progress on stderr, "bench: TEXT" (SAY_AS="cold
# bench" names another prefix).
say() { echo "${SAY_AS:-bench}: $*" >&2; }

# bench_make BUILD_DIR TARGET...: make in the repository with BUILD=BUILD_DIR
# (relative to the repository when it is inside it, as `make bench` names
# it, so make's dependency files match) and OPT=$BENCH_OPT (-O3, as `make
# bench` builds). Targets may name BUILD_DIR's files by their absolute
# path or as "bench/NAME" (BUILD_DIR/bench/NAME). A make run by make
# inherits nothing of its caller's (MAKEFLAGS). Its output goes to stderr.
bench_make() {
	local dir="$1" rel t targets=()
	shift
	dir="$(cd "$dir" && pwd)"
	rel="${dir#"$bench_root"/}"
	for t in "$@"; do
		case "$t" in
		"$dir"/*) targets+=("$rel/${t#"$dir"/}") ;;
		bench/*) targets+=("$rel/$t") ;;
		*) targets+=("$t") ;;
		esac
	done
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$bench_root" --no-print-directory \
		-j"${BENCH_JOBS:-2}" BUILD="$rel" OPT="${BENCH_OPT:--O3}" "${targets[@]}" >&2
}

# What cleanup stops and removes: pids (started in the background), spid
# (the one server of scripts that run one at a time), tmp and the folders
# in tmp_dirs.
pids=()
spid=""
tmp=""
tmp_dirs=()

# cleanup: the EXIT trap. Runs the script's cleanup_first when it defines
# one (front.sh stops nginx gently), then KILLs and reaps every process of
# pids and spid, then removes tmp and tmp_dirs.
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
	local p
	if declare -F cleanup_first >/dev/null; then cleanup_first || true; fi
	for p in "${pids[@]}" ${spid:+"$spid"}; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf ${tmp:+"$tmp"} "${tmp_dirs[@]}"
}

# median N...: the middle of the numbers; of an even count, the lower of
# the two middles.
median() { printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }

# median_mean [N...]: the middle of the numbers (of stdin's lines when none
# are given); of an even count, the mean of the two middles.
median_mean() {
	if [ $# -gt 0 ]; then printf '%s\n' "$@"; else cat; fi |
		sort -g | awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# free_port: a port the kernel hands out as free (probing with connect
# misses bound ones).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

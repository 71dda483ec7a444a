#!/bin/bash
# newcomer.sh - what a newcomer meets on a fresh machine (beside
# first_run.sh): plain `make` without the build's packages stops before
# compiling anything, naming the missing Debian packages and the command
# that installs them (checked through pkg-config, made to miss some), and
# scripts/deps.sh waits, saying so, while another apt-get or dpkg holds the
# dpkg lock, then runs apt-get with DPkg::Lock::Timeout (a lock file of the
# test's held by a real POSIX lock; apt-get replaced by a recorder). Tests
# the Makefile and a script, so runs in the gcc suite only.
. "$(dirname "$0")/../lib/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

case "${CC:-cc}:${SAN:-}" in
	cc: | gcc:) ;;
	*) echo "skip: CC=${CC:-} SAN=${SAN:-}: this checks the Makefile, in the gcc suite"; exit 0 ;;
esac
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CFLAGS -u BUILD make -C "$ROOT" --no-print-directory "$@"; }

# ---- plain make without the packages ------------------------------------------------
cat > "$TMP/pkg-config" <<'PC'
#!/bin/sh
# pkg-config as on a machine without libcjson-dev and libhiredis-dev
for a; do case $a in libcjson|hiredis) exit 1 ;; esac; done
exec pkg-config "$@"
PC
chmod +x "$TMP/pkg-config"
mk BUILD="$TMP/b1" PKG_CONFIG="$TMP/pkg-config" >"$TMP/m1.log" 2>&1
check "plain make without libcjson and hiredis stops (exit 2)" eq "$?" 2
check "  naming their Debian packages" has "$TMP/m1.log" "missing packages: libcjson-dev libhiredis-dev\."
check "  and the command that installs them" has "$TMP/m1.log" 'Install them with `sudo scripts/deps.sh build`'
check "  before compiling anything (not cjson/cJSON.h: No such file)" not has "$TMP/m1.log" "No such file|CC "
check "  nothing was built" not test -e "$TMP/b1"
mk BUILD="$TMP/b2" PKG_CONFIG=/nonexistent/pkg-config >"$TMP/m2.log" 2>&1
check "without pkg-config at all it names pkg-config" has "$TMP/m2.log" "missing packages: pkg-config\."
mk BUILD="$TMP/b3" LLHTTP_INC="$TMP/none" >"$TMP/m3.log" 2>&1
check "without llhttp's header it names node-llhttp" has "$TMP/m3.log" "missing packages: node-llhttp\."
mk BUILD="$TMP/b4" PKG_CONFIG="$TMP/pkg-config" help >"$TMP/m4.log" 2>&1
check "make help works without the packages" has "$TMP/m4.log" "make test"
mk -n BUILD="$TMP/b5" PKG_CONFIG="$TMP/pkg-config" test >"$TMP/m5.log" 2>&1
check "make test is not stopped by the check (it installs first)" has "$TMP/m5.log" "deps.sh test"
mk -n BUILD="$TMP/b6" all >"$TMP/m6.log" 2>&1
check "with the packages, make goes on to compile" has "$TMP/m6.log" "-c common/noise.c"

# ---- deps.sh and the dpkg lock ------------------------------------------------------------
if [ "$(id -u)" != 0 ]; then
	echo "skip: deps.sh installs only as root"
	finish
fi
cat > "$TMP/apt-get" <<APT
#!/bin/sh
echo "\$(date +%s.%N) \$*" >> "$TMP/apt.log"
APT
chmod +x "$TMP/apt-get"
: > "$TMP/lock"
# a POSIX lock, as apt-get and dpkg take theirs, held until deps.sh says
# it waits for it (bounded), and 1 s more: not for a fixed time, which a
# slow start of deps.sh on a busy machine could outlast
python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.lockf(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").write("held\n")
end = time.time() + int(sys.argv[4])
while time.time() < end:
    try:
        if "waiting for the dpkg lock" in open(sys.argv[3]).read():
            break
    except OSError:
        pass
    time.sleep(0.05)
time.sleep(1)
open(sys.argv[2], "w").write("%f\n" % time.time())
' "$TMP/lock" "$TMP/released" "$TMP/deps.err" "$(scaled 120)" &
holder=$!
wait_until 60 test -s "$TMP/released"
DEPS_LOCKS="$TMP/lock" APT_GET="$TMP/apt-get" DPKG_QUERY=false \
	"$ROOT/scripts/deps.sh" build 2>"$TMP/deps.err"
check "deps.sh succeeds once the lock is free" eq "$?" 0
wait "$holder"
check "  it said that it waits, and for whom" \
	has "$TMP/deps.err" "deps: waiting for the dpkg lock \($TMP/lock is held by pid $holder, python3: another apt-get or dpkg is running; up to 600s\)"
check "  and when the lock was free" has "$TMP/deps.err" "deps: the dpkg lock is free after [0-9]+s"
check "  apt-get ran only after the lock was released" \
	python3 -c 'import sys; a = float(open(sys.argv[1]).read().split()[0]); r = float(open(sys.argv[2]).read()); sys.exit(a < r)' \
	"$TMP/apt.log" "$TMP/released"
check "  apt-get update, then install, each with DPkg::Lock::Timeout" eq \
	"$(cut -d' ' -f2-4 "$TMP/apt.log" | tr '\n' '|')" \
	"-o DPkg::Lock::Timeout=600 update|-o DPkg::Lock::Timeout=600 install|"
check "  installing the build's packages" has "$TMP/apt.log" "install -y -qq --no-install-recommends make gcc pkg-config libuv1-dev node-llhttp"
: > "$TMP/apt.log"
DEPS_LOCKS="$TMP/lock" APT_GET="$TMP/apt-get" DPKG_QUERY=false \
	"$ROOT/scripts/deps.sh" build 2>"$TMP/deps2.err"
check "with the lock free it does not wait or say so" not has "$TMP/deps2.err" "waiting"
: > "$TMP/apt.log"
DEPS_LOCKS="$TMP/lock" APT_GET="$TMP/apt-get" "$ROOT/scripts/deps.sh" build 2>"$TMP/deps3.err"
check "with every package installed it runs no apt-get" not test -s "$TMP/apt.log"
finish

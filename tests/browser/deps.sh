# deps.sh - source it (after tests/lib/lib.sh): browser_deps, for the tests that
# drive pages in headless Chromium (tests/browser/maps_browser.sh, tests/client/js_client.sh).
#
# browser_deps      Debian's chromium (apt-get when missing and root), Node.js
#                   20+ and npm, every package of tests/browser/package.json
#                   (playwright-core) at its version in tests/browser/node_modules
#                   and every package of clients/web/package.json (the pages'
#                   libraries: what `make web` installs) in clients/web/node_modules
#                   (npm ci from the lockfile when one is missing or another
#                   version; both folders are outside git). Calls skip REASON
#                   (the caller's) when one of them cannot be had.
# node_ok MAJOR     Node.js MAJOR or later is installed.

node_ok() {
	local major
	command -v node >/dev/null || return 1
	major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
	[ "$major" -ge "$1" ] 2>/dev/null
}

# Whether DIR/node_modules holds every dependency of DIR/package.json at its version.
npm_packages_ok() {
	node -e '
		const dir = process.argv[1], want = require(dir + "/package.json").dependencies;
		for (const [name, v] of Object.entries(want)) {
			let have = null;
			try { have = require(`${dir}/node_modules/${name}/package.json`).version; } catch {}
			if (have !== v) { console.log(`${name} ${have || "missing"}, want ${v}`); process.exit(1); }
		}' "$1"
}

# npm ci in DIR when its node_modules is not what its package.json names
# (under a lock: tests run side by side share the folders).
npm_dir() {
	local dir=$1
	npm_packages_ok "$dir" >/dev/null && return 0
	exec 9>"$dir/.npm-install.lock"
	flock -w 600 9 || skip "waited 10 minutes for another npm install in $dir"
	if ! npm_packages_ok "$dir" >"$TMP/npm-want.txt"; then
		echo "installing from npm into $dir/node_modules ($(cat "$TMP/npm-want.txt"))..."
		(cd "$dir" && timeout 300 npm ci --no-audit --no-fund) >"$TMP/npm.log" 2>&1 ||
			skip "npm ci in $dir failed (is the npm registry reachable?): $(tail -n 3 "$TMP/npm.log" | tr '\n' ' ')"
		npm_packages_ok "$dir" || skip "npm ci left $dir/node_modules incomplete"
	fi
	exec 9>&-
}

browser_deps() {
	if [ ! -x /usr/bin/chromium ]; then
		[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
			skip "no /usr/bin/chromium, and not root with apt-get to install it (apt-get install chromium)"
		echo "installing Debian's chromium (once)..."
		export DEBIAN_FRONTEND=noninteractive
		if ! timeout 600 apt-get install -y -qq chromium >"$TMP/apt.log" 2>&1; then
			timeout 300 apt-get update -qq >>"$TMP/apt.log" 2>&1
			timeout 600 apt-get install -y -qq chromium >>"$TMP/apt.log" 2>&1 ||
				skip "apt-get install chromium failed: $(tail -n 2 "$TMP/apt.log" | tr '\n' ' ')"
		fi
		[ -x /usr/bin/chromium ] || skip "chromium installed but /usr/bin/chromium is missing"
	fi
	command -v node >/dev/null && command -v npm >/dev/null || skip "Node.js and npm are not installed"
	node_ok 20 || skip "playwright-core needs Node.js 20 or later, this is $(node --version)"
	npm_dir "$BROWSER_DIR"
	npm_dir "$BROWSER_DIR/../../clients/web"
}

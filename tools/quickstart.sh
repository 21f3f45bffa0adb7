#!/bin/sh
# The README's quick start: install what is missing, build, then
#   tools/quickstart.sh demo      run the seed's 2x4 example (main job)
#   tools/quickstart.sh test      run the whole test suite
#   tools/quickstart.sh sanitize  run the suite under address,undefined
#   tools/quickstart.sh oom       out of memory at every allocation point
# Works on a fresh Debian 12 machine, as root or with sudo.
set -eu

cd "$(dirname "$0")/.."
packages="gcc check libcjson-dev libxxhash-dev meson ninja-build pkg-config python3-jsonschema"
# tpsim view's browser tests: Debian's chromium, node and npm.
packages="$packages chromium nodejs npm"
# The fuzz harnesses (tools/fuzz.sh, .ci/run): clang's libFuzzer.
packages="$packages clang"

install_missing() {
	missing=""
	for p in $packages; do
		# A node from elsewhere (NodeSource's nodejs bundles npm and
		# conflicts with Debian's npm) is as good as Debian's.
		case $p in
		nodejs) command -v node >/dev/null && continue ;;
		npm) command -v npm >/dev/null && continue ;;
		esac
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "quickstart: installing$missing" >&2
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing \
		>/dev/null
}

# build DIR [meson options...]: configure once, then build.
build() {
	dir=$1
	shift
	[ -f "$dir/build.ninja" ] || meson setup "$dir" "$@" >/dev/null
	ninja -C "$dir" >/dev/null
}

# The browser tests' puppeteer-core, as tests/browser/package-lock.json
# pins it; only when node_modules is missing, so a machine that has it
# needs no network.
browser_deps() {
	[ -d tests/browser/node_modules/puppeteer-core ] ||
		npm ci --prefix tests/browser --no-audit --no-fund >/dev/null
}

install_missing
case "${1:-demo}" in
demo)
	build build
	example=fixtures/seed_2x4_rowwise_after_reduce
	./build/src/tpsim run "$example/config.json" -o trace.json
	./build/src/tpsim explain trace.json
	./build/src/tpsim check trace.json "$example/fixture.json"
	echo "quickstart: the full trace is in trace.json;" \
		"the derivation by hand in $example/DERIVATION.md" >&2
	;;
test)
	build build --werror
	browser_deps
	meson test -C build --print-errorlogs
	;;
sanitize)
	build build-asan --werror --buildtype=debug \
		-Db_sanitize=address,undefined \
		-Db_lundef=false
	browser_deps
	# No fork: the leak checker then sees every test's allocations.
	CK_FORK=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C build-asan --print-errorlogs
	;;
oom)
	# Out of memory at every allocation point of five whole runs, in a
	# build whose allocator fails on demand (docs/reliability.md).
	build build-fault --werror --buildtype=debug -Dtests=disabled \
		-Dfault_injection=true -Db_sanitize=address,undefined \
		-Db_lundef=false
	meson test -C build-fault oom --print-errorlogs
	;;
*)
	echo "usage: tools/quickstart.sh [demo|test|sanitize|oom]" >&2
	exit 2
	;;
esac

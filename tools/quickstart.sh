#!/bin/sh
# The README's quick start: install what is missing, build, then
#   tools/quickstart.sh demo      run the 2x4 example (the main job)
#   tools/quickstart.sh test      run the whole test suite, warnings as errors
#   tools/quickstart.sh sanitize  run the suite under address,undefined
#   tools/quickstart.sh tsan      run the suite under ThreadSanitizer
#   tools/quickstart.sh oom       out of memory at every allocation point
#   tools/quickstart.sh packages JOB   print what JOB installs, and stop
# Works on a fresh Debian 12 machine, as root or with sudo. Each job
# installs only what it needs: demo the compiler and the build's
# libraries, the others the test tools too.
set -eu

cd "$(dirname "$0")/.."
# The main job: build tpsim and run it.
main_packages="gcc meson ninja-build pkg-config libcjson-dev libxxhash-dev"
# The test suite: Check (the C suites), python3-jsonschema (the schema
# test), cmark-gfm (md_tables: every Markdown table renders), Debian's
# chromium, node and npm (tpsim view's browser test), clang's libFuzzer
# (tools/fuzz.sh, which CI runs after the suite), help2man (tpsim(1),
# which the install test checks), g++ (tpsim.h as C++17) and locales (an
# 8-bit locale the config test builds with localedef), and the Python
# package's (below).
test_packages="$main_packages check python3-jsonschema cmark-gfm"
test_packages="$test_packages chromium nodejs npm clang help2man g++"
test_packages="$test_packages locales"
# The Python package and its tests (python/, docs/python.md): Debian's
# interpreter with numpy, cffi, pytest and torch (the gloo examples).
test_packages="$test_packages python3-numpy python3-cffi python3-pytest"
test_packages="$test_packages python3-torch"
# The MPI backend (docs/mpi.md) and its test: Open MPI.
test_packages="$test_packages libopenmpi-dev openmpi-bin"
# The out-of-memory sweep builds without the Check suites.
oom_packages="$main_packages"

# packages_of JOB: the packages JOB installs.
packages_of() {
	case $1 in
	demo) echo "$main_packages" ;;
	test | sanitize | tsan) echo "$test_packages" ;;
	oom) echo "$oom_packages" ;;
	*) return 1 ;;
	esac
}

# install_missing PACKAGE...: apt-get install those not installed yet.
install_missing() {
	missing=""
	for p in "$@"; do
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

# build DIR [meson options...]: configure DIR with the options, whatever
# configured it before (a `demo` build without --werror, say: setup alone
# would keep its options), then build.
build() {
	dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
	ninja -C "$dir" >/dev/null
}

# The browser tests' puppeteer-core, as tests/browser/package-lock.json
# pins it; only when node_modules is missing, so a machine that has it
# needs no network.
browser_deps() {
	[ -d tests/browser/node_modules/puppeteer-core ] ||
		npm ci --prefix tests/browser --no-audit --no-fund >/dev/null
}

usage() {
	echo "usage: tools/quickstart.sh [demo|test|sanitize|tsan|oom|packages JOB]" >&2
	exit 2
}

job=${1:-demo}
if [ "$job" = packages ]; then
	[ $# -eq 2 ] || usage
	packages_of "$2" || usage
	exit 0
fi
packages=$(packages_of "$job") || usage
# shellcheck disable=SC2086
install_missing $packages
case $job in
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
	# -Dtests=enabled: a build dir that demo configured before Check
	# was installed must find it now, or fail, not drop the C suites.
	build build --werror -Dtests=enabled
	browser_deps
	meson test -C build --print-errorlogs
	;;
sanitize)
	build build-asan --werror -Dtests=enabled --buildtype=debug \
		-Db_sanitize=address,undefined \
		-Db_lundef=false
	browser_deps
	# No fork: the leak checker then sees every test's allocations.
	CK_FORK=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C build-asan --print-errorlogs
	;;
tsan)
	# ThreadSanitizer (docs/reliability.md): every suite, above all
	# `concurrent` (four runs at once in one process) and those whose
	# ranks run on the pool. Optimised, or the slowdown (5-15x) would
	# pass the tests' time limits; halt and abort at the first report, so
	# that a race fails the test whose process it is in. test_numfmt's
	# oracle sample runs on one thread: a tenth of it, as under ASan.
	# Without MPI: the build that has no backend passes every other
	# test (Open MPI's own threads are not instrumented).
	build build-tsan --werror -Dtests=enabled -Dmpi=disabled \
		--buildtype=debugoptimized -Db_sanitize=thread \
		-Db_lundef=false
	browser_deps
	TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:second_deadlock_stack=1 \
		TPSIM_NUMFMT_SAMPLES=200000 \
		meson test -C build-tsan --print-errorlogs \
		--timeout-multiplier 3
	;;
oom)
	# Out of memory at every allocation point of five whole runs, in a
	# build whose allocator fails on demand (docs/reliability.md).
	build build-fault --werror --buildtype=debug -Dtests=disabled \
		-Dfault_injection=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dmpi=disabled
	meson test -C build-fault oom --print-errorlogs
	;;
esac

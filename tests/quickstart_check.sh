#!/bin/sh
# tools/quickstart.sh's logic, with fake apt-get, dpkg-query, meson,
# ninja and npm first on PATH, on a copy of the script in a scratch tree:
#   - demo installs the main job's packages only (no test tool, no
#     browser, no clang, no help2man or g++), test installs the rest;
#   - test after demo still configures the build dir with --werror (and
#     -Dtests=enabled), rather than keeping demo's options;
#   - tsan installs the test packages and runs the suite in its own
#     ThreadSanitizer build dir, with --werror.
#   quickstart_check.sh SOURCE_ROOT
set -eu

root=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "quickstart_check: $*" >&2
	exit 1
}

mkdir -p "$tmp/tree/tools" "$tmp/tree/build/src" "$tmp/bin"
cp "$root/tools/quickstart.sh" "$tmp/tree/tools/"
log=$tmp/log
: >"$log"
# Nothing is installed; every command records its arguments.
for cmd in apt-get meson ninja npm sudo; do
	cat >"$tmp/bin/$cmd" <<EOF
#!/bin/sh
echo "$cmd \$*" >>"$log"
EOF
	chmod +x "$tmp/bin/$cmd"
done
# meson setup DIR makes DIR/build.ninja, as the real one does.
cat >>"$tmp/bin/meson" <<'EOF'
if [ "$1" = setup ]; then
	for a in "$@"; do
		case $a in -* | setup) ;; *) dir=$a ;; esac
	done
	mkdir -p "$dir" && : >"$dir/build.ninja"
fi
EOF
printf '#!/bin/sh\nexit 1\n' >"$tmp/bin/dpkg-query"
printf '#!/bin/sh\nexit 0\n' >"$tmp/tree/build/src/tpsim"
chmod +x "$tmp/bin/dpkg-query" "$tmp/tree/build/src/tpsim"
# No node or npm of the machine's may stand in for Debian's: a PATH of
# the fakes and the shell's own tools only.
tools=$tmp/tools
mkdir -p "$tools"
for t in sh cat grep id mkdir dirname; do
	ln -s "$(command -v "$t")" "$tools/$t"
done
run() {
	PATH="$tmp/bin:$tools" sh "$tmp/tree/tools/quickstart.sh" "$@" \
		>/dev/null 2>&1
}

run demo || fail "demo failed: $(cat "$log")"
installed=$(grep '^apt-get install' "$log") ||
	fail "demo installed nothing: $(cat "$log")"
for p in gcc meson libcjson-dev libxxhash-dev; do
	echo "$installed" | grep -q " $p\( \|$\)" ||
		fail "demo does not install $p: $installed"
done
for p in check python3-jsonschema cmark-gfm chromium nodejs npm clang \
	python3-numpy python3-cffi python3-pytest python3-torch \
	help2man g++ locales; do
	echo "$installed" | grep -q " $p\( \|$\)" &&
		fail "demo installs $p, which only the tests need: $installed"
done
grep -q '^meson setup build$' "$log" ||
	fail "demo did not set up build: $(cat "$log")"

: >"$log"
run test || fail "test failed: $(cat "$log")"
installed=$(grep '^apt-get install' "$log") ||
	fail "test installed nothing: $(cat "$log")"
# (npm is not asked for: the fake npm on PATH stands for one installed.)
for p in check python3-jsonschema cmark-gfm chromium nodejs clang help2man \
	python3-numpy python3-cffi python3-pytest python3-torch \
	g++ locales; do
	echo "$installed" | grep -q " $p\( \|$\)" ||
		fail "test does not install $p: $installed"
done
setup=$(grep '^meson setup' "$log") || fail "test did not configure build"
echo "$setup" | grep -q -- '--werror' ||
	fail "test after demo builds without --werror: $setup"
echo "$setup" | grep -q -- '-Dtests=enabled' ||
	fail "test after demo may drop the Check suites: $setup"
grep -q '^meson test -C build' "$log" || fail "test ran no tests"

: >"$log"
run tsan || fail "tsan failed: $(cat "$log")"
installed=$(grep '^apt-get install' "$log") ||
	fail "tsan installed nothing: $(cat "$log")"
for p in check python3-jsonschema cmark-gfm chromium nodejs clang; do
	echo "$installed" | grep -q " $p\( \|$\)" ||
		fail "tsan does not install $p: $installed"
done
setup=$(grep '^meson setup' "$log") || fail "tsan did not configure"
for opt in build-tsan --werror -Dtests=enabled -Db_sanitize=thread; do
	echo "$setup" | grep -q -- " $opt\( \|$\)" ||
		fail "tsan does not set up with $opt: $setup"
done
grep -q '^meson test -C build-tsan' "$log" ||
	fail "tsan ran no tests: $(cat "$log")"
echo "quickstart_check: demo installs the main job's packages; test the" \
	"rest, and configures build with --werror after demo; tsan runs the" \
	"suite under ThreadSanitizer"

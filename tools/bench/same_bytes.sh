#!/bin/sh
# Whether two tpsim binaries write the same bytes: a speed-up must never
# change a trace, a timeline or a page (issue 22). For every config given
# (default: the fixtures, the examples, tools/bench's configs and
# tests/mpi's), both run it at --threads 1 and 8; then both lay the first
# trace out as a timeline and render it as a view page. Every output is
# compared with cmp; the first difference fails (exit 1).
#
#   tools/bench/same_bytes.sh OLD_TPSIM NEW_TPSIM [CONFIG...]
#
# A run may exit 1 (differs from its reference beyond the tolerance): the
# bytes must agree all the same; a timeline or page that both refuse (a
# trace without what it needs) must be refused with the same message. Big outputs (GPT-3's 2 GB timeline) are
# compared by their SHA-256 and deleted at once.
set -eu
[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
old=$1 new=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -gt 0 ] || set -- "$root"/fixtures/*/config.json \
	"$root"/examples/*/config*.json "$root"/tools/bench/*.json \
	"$root"/tests/mpi/*.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run BINARY OUT COMMAND ARGS...: its exit code and stderr go to
# OUT.rc, its output to OUT (none when it fails).
run() {
	exe=$1 out=$2
	shift 2
	rc=0
	"$exe" "$@" -o "$out" 2>"$out.rc" || rc=$?
	echo "exit $rc" >>"$out.rc"
	[ -e "$out" ] || : >"$out"
}

# same NAME A B: the same exit code and messages (a trace that a command
# refuses is refused alike), and the same output: cmp (small) or SHA-256
# (over 256 MB); then both are deleted.
same() {
	cmp "$2.rc" "$3.rc" >/dev/null ||
		{ echo "same_bytes: $1 exits differently" >&2; exit 1; }
	if [ "$(wc -c <"$2")" -gt 268435456 ]; then
		a=$(sha256sum <"$2") b=$(sha256sum <"$3")
		[ "$a" = "$b" ] || { echo "same_bytes: $1 differs" >&2; exit 1; }
	else
		cmp "$2" "$3" >/dev/null ||
			{ echo "same_bytes: $1 differs" >&2; exit 1; }
	fi
	rm -f "$2" "$3" "$2.rc" "$3.rc"
}

n=0
for cfg in "$@"; do
	name=$(basename "$(dirname "$cfg")")_$(basename "$cfg" .json)
	refused=
	for threads in 1 8; do
		run "$old" "$work/a.json" run "$cfg" --threads "$threads"
		run "$new" "$work/b.json" run "$cfg" --threads "$threads"
		[ "$threads" = 8 ] || cp "$work/a.json" "$work/trace.json"
		grep -q "^exit [01]$" "$work/a.json.rc" || refused=yes
		same "$name trace (threads $threads)" "$work/a.json" "$work/b.json"
		n=$((n + 1))
	done
	# A config both refuse (comm_sweep's is too big to run with values)
	# has no trace to lay out.
	[ -z "$refused" ] || continue
	run "$old" "$work/a.json" timeline "$work/trace.json"
	run "$new" "$work/b.json" timeline "$work/trace.json"
	same "$name timeline" "$work/a.json" "$work/b.json"
	run "$old" "$work/a.html" view "$work/trace.json"
	run "$new" "$work/b.html" view "$work/trace.json"
	same "$name page" "$work/a.html" "$work/b.html"
	n=$((n + 2))
done
echo "same_bytes: $n outputs of $# configs byte-identical"

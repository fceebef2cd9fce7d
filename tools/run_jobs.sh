#!/bin/bash
# run_jobs.sh: runs shell commands JOBS at a time and reports them in their
# given order, as if run one after another (make valgrind: the suites under
# valgrind two at a time on two cores, about half the wall time).
#
# usage: tools/run_jobs.sh JOBS OUTDIR LABEL NAME CMD [NAME CMD ...]
# Command N is written to OUTDIR/N.sh and its output to OUTDIR/N.log; then
# each log is printed under "== LABEL NAME", and "LABEL: P passed, F failed"
# with the names that failed, then the last lines of each failed log again.
# Exits 1 if any command failed.
set -u
jobs=$1 out=$2 label=$3
shift 3
mkdir -p "$out"
rm -f "$out"/*.sh "$out"/*.log "$out"/*.rc
names=()
n=0
while [ $# -ge 2 ]; do
	names+=("$1")
	printf '%s\n' "$2" >"$out/$n.sh"
	n=$((n + 1))
	shift 2
done
seq 0 $((n - 1)) | xargs -P "$jobs" -I{} \
	sh -c 'bash "$0/{}.sh" >"$0/{}.log" 2>&1; echo $? >"$0/{}.rc"' "$out"
pass=0 fail=0 failed=""
for i in $(seq 0 $((n - 1))); do
	echo "== $label ${names[$i]}"
	cat "$out/$i.log"
	if [ "$(cat "$out/$i.rc" 2>/dev/null)" = 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		failed="$failed${names[$i]}; "
	fi
done
# a long run's output is often read from its end: the failures' last lines again
for i in $(seq 0 $((n - 1))); do
	[ "$(cat "$out/$i.rc" 2>/dev/null)" = 0 ] && continue
	echo "== $label ${names[$i]} failed; its last lines:"
	tail -n 30 "$out/$i.log"
done
echo "$label: $pass passed, $fail failed"
[ -z "$failed" ] || echo "failed: $failed"
[ "$fail" -eq 0 ]

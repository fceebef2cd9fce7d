#!/bin/bash
# run_jobs.sh: runs shell commands JOBS at a time (make check, make test's C
# suites, make valgrind: two at a time on two cores, about half the wall time
# of one after another).
#
# usage: tools/run_jobs.sh JOBS OUTDIR LABEL NAME CMD [NAME CMD ...]
#        tools/run_jobs.sh JOBS OUTDIR LABEL --named-by-command CMD [CMD ...]
# Command N is written to OUTDIR/N.sh and its output to OUTDIR/N.log. As each
# ends, its log is printed whole under "== LABEL NAME" and closed by
# "-- LABEL NAME: ok, T s" (or FAILED), one command's block at a time, in the
# order they end; RUN_JOBS_LOGS=failed prints only "ok   NAME (T s)" for the
# ones that pass. At the end: the failures' last lines again, then
# "LABEL: P passed, F failed" and the names that failed, also written to
# OUTDIR/summary (a caller that runs several groups repeats them last, where
# a long run's output is read). Exits 1 if any command failed.
set -u
jobs=$1 out=$2 label=$3
shift 3
mkdir -p "$out"
rm -f "$out"/*.sh "$out"/*.log "$out"/*.rc "$out"/*.name "$out"/summary
step=2
if [ "${1:-}" = --named-by-command ]; then
	step=1
	shift
fi
n=0
while [ $# -ge "$step" ]; do
	printf '%s\n' "$1" >"$out/$n.name"
	printf '%s\n' "${@:$step:1}" >"$out/$n.sh"
	n=$((n + 1))
	shift $step
done

# one_job DIR LABEL N: runs command N, then prints its block under DIR/lock
one_job() {
	local dir=$1 label=$2 i=$3 t0=$SECONDS rc name secs
	bash "$dir/$i.sh" >"$dir/$i.log" 2>&1
	rc=$?
	echo "$rc" >"$dir/$i.rc"
	name=$(cat "$dir/$i.name") secs=$((SECONDS - t0))
	{
		flock 9
		if [ "$rc" = 0 ] && [ "${RUN_JOBS_LOGS:-all}" = failed ]; then
			echo "ok   $name ($secs s)"
		else
			echo "== $label $name"
			cat "$dir/$i.log"
			echo "-- $label $name: $([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)"), $secs s"
		fi
	} 9>>"$dir/lock"
}
export -f one_job

[ "$n" -gt 0 ] && seq 0 $((n - 1)) | xargs -P "$jobs" -I{} bash -c 'one_job "$@"' _ "$out" "$label" {}

pass=0 fail=0 failed=""
for ((i = 0; i < n; i++)); do
	if [ "$(cat "$out/$i.rc" 2>/dev/null)" = 0 ]; then
		pass=$((pass + 1))
		continue
	fi
	fail=$((fail + 1))
	failed="$failed$(cat "$out/$i.name"); "
	echo "== $label $(cat "$out/$i.name") failed; its last lines:"
	tail -n 30 "$out/$i.log"
done
{
	echo "$label: $pass passed, $fail failed"
	[ -z "$failed" ] || echo "failed: $failed"
} | tee "$out/summary"
[ "$fail" -eq 0 ]

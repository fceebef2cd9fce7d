#!/usr/bin/env bash
# load.sh: `make load`. Starts build/attnd on loopback (--port 0), runs the
# wrk scenarios of bench/wrk/ at a concurrency it sustains, then the seeds'
# scenario far beyond it (-c 512), and checks what the overload must leave:
#
#   sustained   each scenario for $LOAD_SECONDS (10): zero non-2xx, zero
#               socket errors (seeds -c 4 x CPUs, the heavy two -c 2 x CPUs:
#               what threads + queue hold at the defaults)
#   overload    seeds at -c $LOAD_OVERLOAD_CONNECTIONS (512) for
#               $LOAD_OVERLOAD_SECONDS (15): every non-2xx is a 503 with
#               Retry-After; /healthz, probed by curl every 0.2 s alongside,
#               answers 200 every time (the max latency is printed); attnd
#               is alive afterwards and still computes; its RSS
#               (/proc/PID/status VmRSS) 3 s after the run is back within
#               10% + 8 MiB of the RSS before it.
#
# The whole run takes about a minute and stops by itself. Prints one row per
# scenario (requests/s and per core, p50/p99, non-2xx, socket errors) and
# `load: N passed, M failed`; exits 1 on any failed check.
#
# attnd runs with --per-ip-limit 0 here: every wrk connection comes from
# 127.0.0.1, where 512 real clients would come from many addresses.
#
# ATTND_URL=http://127.0.0.1:PORT runs the same against an instance already
# listening there (a container, or a cluster through `kubectl port-forward`);
# the memory and liveness checks need the process and are skipped; set
# LOAD_SERVER_CPUS to its CPU limit. Only loopback addresses are accepted.
set -euo pipefail
cd "$(dirname "$0")/.."

WRK=${WRK:-wrk}
SECONDS_EACH=${LOAD_SECONDS:-10}
OVER_SECONDS=${LOAD_OVERLOAD_SECONDS:-15}
OVER_CONNS=${LOAD_OVERLOAD_CONNECTIONS:-512}
# the server's CPUs: this machine's, or LOAD_SERVER_CPUS for an ATTND_URL
# instance (its CPU limit); the sustained concurrency and "per core" use it
cpus=${LOAD_SERVER_CPUS:-$(nproc)}
conn_seeds=$((4 * cpus < 32 ? 4 * cpus : 32))
conn_heavy=$((2 * cpus < 8 ? 2 * cpus : 8))
((conn_seeds >= 2)) || conn_seeds=2
((conn_heavy >= 2)) || conn_heavy=2

work=$(mktemp -d "${TMPDIR:-/tmp}/attnd-load.XXXXXX")
apid="" probe_pid=""
cleanup() {
	local pid
	for pid in $probe_pid $apid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
	echo "load: $*" >&2
	exit 1
}

passed=0 failed=0
check() {
	if [[ $2 == 1 ]]; then
		echo "ok   $1"
		passed=$((passed + 1))
	else
		echo "FAIL $1${3:+: $3}"
		failed=$((failed + 1))
	fi
}

for tool in "$WRK" curl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "load: installing $tool"
		SUDO=""
		[[ $(id -u) -eq 0 ]] || SUDO=sudo
		$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$tool" >/dev/null
	fi
done

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# ---- the server -------------------------------------------------------------
if [[ -n ${ATTND_URL:-} ]]; then
	url=${ATTND_URL%/}
	[[ $url =~ ^http://(127\.[0-9]+\.[0-9]+\.[0-9]+|localhost|\[::1\])(:[0-9]+)?$ ]] ||
		die "ATTND_URL must be http://127.x.x.x:PORT, http://localhost:PORT or http://[::1]:PORT"
	echo "load: against $url (ATTND_URL): memory and liveness checks skipped"
else
	[[ -x build/attnd ]] || die "build build/attnd first (make)"
	: >"$work/attnd.out"
	build/attnd --host 127.0.0.1 --port 0 --per-ip-limit 0 >"$work/attnd.out" 2>"$work/attnd.err" &
	apid=$!
	for ((i = 0; i < 200; i++)); do
		port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$work/attnd.out")
		[[ -n $port ]] && break
		kill -0 "$apid" 2>/dev/null || break
		sleep 0.1
	done
	[[ -n ${port:-} ]] || { tail -n 5 "$work/attnd.err" >&2; die "attnd did not start"; }
	url="http://127.0.0.1:$port"
	echo "load: attnd pid $apid on $url, $cpus CPUs, defaults (threads = CPUs, queue = 4 x threads)"
fi

# ---- wrk --------------------------------------------------------------------
# The overload script: seeds.lua with the 503s and their Retry-After counted
# per thread (wrk hands header names as sent; attnd sends "Retry-After").
# bench/wrk/common.lua defines done() alone (no response(): see its header),
# so a setup or response it may define is called only when there is one.
cat >"$work/overload.lua" <<EOF
dofile("$PWD/bench/wrk/seeds.lua")
local threads = {}
local common_setup, common_response, common_done = setup, response, done
s503 = 0
retry_after = 0
function setup(thread)
	table.insert(threads, thread)
	if common_setup then common_setup(thread) end
end
function response(status, headers, body)
	if status == 503 then
		s503 = s503 + 1
		if headers["Retry-After"] or headers["retry-after"] then
			retry_after = retry_after + 1
		end
	end
	if common_response then common_response(status, headers, body) end
end
function done(summary, latency, requests)
	if common_done then common_done(summary, latency, requests) end
	local a, b = 0, 0
	for _, t in ipairs(threads) do
		a = a + (t:get("s503") or 0)
		b = b + (t:get("retry_after") or 0)
	end
	io.write(string.format("attnd-overload: s503=%d retry_after=%d\n", a, b))
end
EOF

# run NAME SCRIPT CONNS SECONDS: one wrk run; appends a row to $work/rows:
#   name conns seconds rps p50 p99 non2xx socket_errors
run() {
	local name=$1 script=$2 conns=$3 seconds=$4 out="$work/$1.out" rps p50 p99 counts
	"$WRK" -t2 -c"$conns" -d"${seconds}s" --timeout 10s --latency -s "$script" "$url" >"$out" 2>&1 ||
		die "wrk failed on $name: $(tail -n 3 "$out")"
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
	p50=$(awk '$1 == "50%" { print $2 }' "$out")
	p99=$(awk '$1 == "99%" { print $2 }' "$out")
	counts=$(sed -n 's/^attnd-bench: non2xx=\([0-9]*\) status_errors=[0-9]* socket_errors=\([0-9]*\).*/\1 \2/p' "$out")
	[[ -n $rps && -n $p50 && -n $p99 && -n $counts ]] || die "cannot read wrk's output for $name: $(cat "$out")"
	echo "$name $conns $seconds $rps $p50 $p99 $counts" >>"$work/rows"
}

for s in seeds l128_noweights l256_weights; do
	conns=$conn_heavy
	[[ $s != seeds ]] || conns=$conn_seeds
	run "$s" "bench/wrk/$s.lua" "$conns" "$SECONDS_EACH"
	read -r _ _ _ _ _ _ n2 se < <(tail -n 1 "$work/rows")
	check "$s at -c $conns: zero non-2xx, zero socket errors" \
		$((n2 == 0 && se == 0)) "non-2xx $n2, socket errors $se"
done

# ---- overload ---------------------------------------------------------------
# /healthz every 0.2 s while wrk runs: "status seconds" per probe; the peak RSS
# is sampled alongside.
probe_health() {
	local t_end=$((SECONDS + OVER_SECONDS + 1))
	while ((SECONDS < t_end)); do
		curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}\n' "$url/healthz" \
			>>"$work/health" 2>/dev/null || echo "000 5" >>"$work/health"
		[[ -z $apid ]] || rss_kib "$apid" >>"$work/rss" 2>/dev/null || true
		sleep 0.2
	done
}

[[ -z $apid ]] || rss_before=$(rss_kib "$apid")
: >"$work/health"
: >"$work/rss"
probe_health &
probe_pid=$!
run overload "$work/overload.lua" "$OVER_CONNS" "$OVER_SECONDS"
wait "$probe_pid" || true
probe_pid=""

read -r _ _ _ _ _ _ n2 se < <(tail -n 1 "$work/rows")
read -r s503 retry < <(sed -n 's/^attnd-overload: s503=\([0-9]*\) retry_after=\([0-9]*\)$/\1 \2/p' "$work/overload.out")
check "overload -c $OVER_CONNS: every non-2xx is a 503 with Retry-After" \
	$((n2 == s503 && s503 == retry)) "non-2xx $n2, 503 $s503, with Retry-After $retry"
check "overload: no socket errors" $((se == 0)) "$se socket errors"
read -r probes ok hmax < <(awk '{ n++; if ($1 == 200) ok++; if ($2 > m) m = $2 }
	END { printf "%d %d %.1f\n", n, ok, m * 1000 }' "$work/health")
check "overload: /healthz answered 200 to $ok of $probes probes, max ${hmax} ms" \
	$((probes > 0 && ok == probes))

if [[ -n $apid ]]; then
	sleep 3
	alive=0
	kill -0 "$apid" 2>/dev/null && alive=1
	code=$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' "$url/v1/attention" \
		-H 'Content-Type: application/json' -d '{"model":"tiny","text":"나는 맛있는 사과를 먹었다"}' || true)
	computing=0
	[[ $alive == 1 && $code == 200 ]] && computing=1
	check "after: attnd alive and computing (POST /v1/attention -> $code)" "$computing"
	rss_after=$(rss_kib "$apid")
	rss_peak=$(sort -n "$work/rss" | tail -n 1)
	limit=$((rss_before + rss_before / 10 + 8192))
	check "memory: VmRSS before $((rss_before / 1024)) MiB, peak $((${rss_peak:-0} / 1024)) MiB, after $((rss_after / 1024)) MiB (limit $((limit / 1024)) MiB)" \
		$((rss_after <= limit))
fi

# ---- table ------------------------------------------------------------------
echo
awk -v cpus="$cpus" 'BEGIN {
	printf "%-15s | %5s | %4s | %10s | %8s | %9s | %9s | %7s | %6s\n",
	       "scenario", "conns", "secs", "requests/s", "per core", "p50", "p99", "non-2xx", "socket"
}
{ printf "%-15s | %5d | %4d | %10.0f | %8.0f | %9s | %9s | %7d | %6d\n",
	 $1, $2, $3, $4, $4 / cpus, $5, $6, $7, $8 }' "$work/rows"
echo "(per core: requests/s / $cpus CPUs, with wrk sharing them; overload non-2xx: $s503 of them 503 with Retry-After $retry)"
echo "load: $passed passed, $failed failed"
((failed == 0))

#!/usr/bin/env bash
# http_bench.sh: the HTTP table of `make bench` (issues 3 and 4).
#
# Starts build/attnd and build/bench/bare_server (libmicrohttpd run the same
# way, answering a fixed body) on 127.0.0.1 with ephemeral ports, runs wrk
# with the scripts of bench/wrk/ against each, and prints one row per
# scenario and server:
#
#   seeds_c8        the seeds' four-word request (model tiny), 8 connections
#   seeds_c32       the same, 32 connections
#   l128_noweights  model base, embeddings [128, 512], "weights": "none"
#   l256_weights    model base, embeddings [256, 512], per-head weights
#
# For the seeds' scenarios a third server runs: "answer", the bare server
# sending attnd's own answer to the seeds' request (its headers and body,
# taken with curl from the attnd started here; bare_server --answer). So the
# gap splits in two: bare -> answer is what the answer's bytes cost on this
# machine, answer -> attnd is attnd's own work per request (information
# lines under the targets). Without curl it is left out. And a fourth,
# "fixed": build/bench/attnd_fixed_reply, attnd itself with the API's work
# on a repeated request replaced by a copy of its first reply
# (bench/fixed_reply/fixed_reply.c), which splits attnd's own work again:
# answer -> fixed is attnd's transport (routing, headers, metrics, the access
# log), fixed -> attnd the API's decoding, engine and encoding. Left out when
# it is not built.
#
# Columns: requests/s, p50 and p99 latency (wrk --latency), non-2xx answers
# (attnd's own count: the change in its /metrics attnd_http_requests_total
# outside code 2xx over the run, but 499 and 0, requests whose client left
# first (metrics_non2xx); for the bare server, which answers 200 only,
# wrk's count of answers >= 400; no Lua response() callback counts them, as
# that makes wrk copy every answer's headers and body into Lua: on the
# 0.8 MB answers of bench/path_bench.py it cost wrk 1.3 ms of CPU a request
# on the cores the server runs on), socket errors (connect, read,
# write, timeout); "other CPU": the busy time of every process except the
# server and wrk during the run, in % of all cores (from /proc/stat), so a
# row with a large value was measured on a busy machine; "server CPU": the
# server process's CPU time per request, which load elsewhere disturbs far
# less than requests/s. Both are "-" with ATTND_URL.
#
# Target (issue 15, after issue 3's 60% with one I/O thread): on the seeds'
# request attnd reaches >= 80% of the bare server's requests/s at -c8 and at
# -c32 with zero non-2xx; both servers run one I/O thread per CPU (attnd's
# --io-threads default, bare_server's). PASS / MISS is information only:
# the exit status is 0 unless the bench itself fails (a server that does not
# start, wrk output it cannot read).
#
# Concurrency stays within what attnd accepts at its defaults (threads = CPUs,
# queue = 4 x threads; beyond that it answers 503 by design):
#   seeds_cN     -t2 -cN for $HTTP_BENCH_SECONDS (5) per round,
#                $HTTP_BENCH_ROUNDS (3) rounds alternating bare / attnd;
#                the row shows the round of median requests/s (small requests
#                never queue: the I/O threads answer them)
#   heavy ones   -t2 -c(2 x CPUs, at most 8)  for $HTTP_BENCH_HEAVY_SECONDS (5)
# HTTP_BENCH_HEAVY_CONNECTIONS overrides the heavy count.
# HTTP_BENCH_SCENARIOS="seeds_c8 seeds_c32" runs only those (any of the four
# names above, in the order given); the default is all four.
#
# ATTND_URL=http://127.0.0.1:PORT measures an instance already running there
# instead (every scenario, no bare server, nothing started or stopped). Only
# loopback addresses are accepted: this is not a tool to load other hosts.
set -euo pipefail

cd "$(dirname "$0")/.."

WRK=${WRK:-wrk}
SECONDS_SEEDS=${HTTP_BENCH_SECONDS:-5}
ROUNDS=${HTTP_BENCH_ROUNDS:-3}
SECONDS_HEAVY=${HTTP_BENCH_HEAVY_SECONDS:-5}
TARGET_PCT=80
SCENARIOS=(seeds_c8 seeds_c32 l128_noweights l256_weights)
if [[ -n ${HTTP_BENCH_SCENARIOS:-} ]]; then
	read -r -a wanted <<<"$HTTP_BENCH_SCENARIOS"
	for s in "${wanted[@]}"; do
		[[ " ${SCENARIOS[*]} " == *" $s "* ]] || {
			echo "http_bench: unknown scenario '$s' (HTTP_BENCH_SCENARIOS: ${SCENARIOS[*]})" >&2
			exit 1
		}
	done
	SCENARIOS=("${wanted[@]}")
fi

cpus=$(nproc)
conn_heavy=${HTTP_BENCH_HEAVY_CONNECTIONS:-$((2 * cpus < 8 ? 2 * cpus : 8))}
# wrk needs at least one connection per thread
((conn_heavy >= 2)) || conn_heavy=2

if ! command -v "$WRK" >/dev/null 2>&1; then
	echo "bench: wrk not installed (apt-get install wrk), HTTP bench skipped"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/http_bench.XXXXXX")
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
	echo "http_bench: $*" >&2
	exit 1
}

# start NAME CMD...: runs CMD in the background, waits up to 20 s for its
# `listening on HOST:PORT` line, and sets $port and $pid.
start() {
	local name=$1 out="$work/$1.out" err="$work/$1.err" i
	shift
	: >"$out" # made here: the child's own redirection may come after our first read
	"$@" >"$out" 2>"$err" &
	pid=$!
	pids+=("$pid")
	for ((i = 0; i < 200; i++)); do
		port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$out")
		[[ -n $port ]] && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	tail -n 5 "$err" >&2
	die "$name did not start"
}

# cpu_jiffies PID: user + system time of PID so far, in clock ticks (0 when
# there is no such process).
cpu_jiffies() {
	local stat
	if [[ -z $1 ]] || ! stat=$(cat "/proc/$1/stat" 2>/dev/null); then
		echo 0
		return
	fi
	# fields after the ")" that ends the command name: utime is the 12th, stime the 13th
	stat=${stat##*) }
	awk '{ print $12 + $13 }' <<<"$stat"
}

# metrics_non2xx URL: the answers outside 2xx attnd at URL has sent so far
# (every route and code of attnd_http_requests_total but 499 and 0, requests
# whose client left before their answer, as wrk's connections do when its
# time is up: wrk's own timeouts show as socket errors); empty without curl
# or /metrics, as for the bare server
metrics_non2xx() {
	command -v curl >/dev/null 2>&1 || return 0
	{ curl -sf --max-time 5 "$1/metrics" 2>/dev/null || true; } |
		awk '/^# TYPE attnd_http_requests_total / { seen = 1 }
		     /^attnd_http_requests_total[{]/ && !/code="(2[0-9][0-9]|499|0)"/ { n += $NF }
		     END { if (seen) print n + 0 }'
}

# busy and total clock ticks of all cores: "busy total"
cpu_totals() {
	awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; print busy, busy + $5 + $6; exit }' /proc/stat
}

# run SCENARIO SERVER URL PID: one wrk run; appends a row to $work/rows:
#   scenario server rps p50 p99 non2xx socket_errors other cpu_us_per_request conns/seconds
run() {
	local scenario=$1 server=$2 url=$3 spid=$4 seconds conns out="$work/wrk.out"
	local s0 s1 t0 t1 wrk_s rps p50 p99 n counts other=- cpu=- script=$scenario m0 m1
	if [[ $scenario == seeds_c* ]]; then
		seconds=$SECONDS_SEEDS conns=${scenario#seeds_c} script=seeds
	else
		seconds=$SECONDS_HEAVY conns=$conn_heavy
	fi
	m0=$(metrics_non2xx "$url")
	s0=$(cpu_jiffies "$spid")
	t0=$(cpu_totals)
	TIMEFORMAT='%U %S'
	{ time "$WRK" -t2 -c"$conns" -d"${seconds}s" --timeout 10s --latency \
		-s "bench/wrk/$script.lua" "$url" >"$out"; } 2>"$work/wrk.time" ||
		die "wrk failed on $scenario / $server: $(tail -n 3 "$out")"
	t1=$(cpu_totals)
	s1=$(cpu_jiffies "$spid")
	wrk_s=$(awk 'END { print $1 + $2 }' "$work/wrk.time")
	m1=$(metrics_non2xx "$url")

	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
	p50=$(awk '$1 == "50%" { print $2 }' "$out")
	p99=$(awk '$1 == "99%" { print $2 }' "$out")
	n=$(awk '/ requests in / { print $1 }' "$out")
	counts=$(sed -n 's/^attnd-bench: non2xx=\([0-9]*\) status_errors=[0-9]* socket_errors=\([0-9]*\).*/\1 \2/p' "$out")
	[[ -n $rps && -n $p50 && -n $p99 && -n $n && -n $counts ]] ||
		die "cannot read wrk's output for $scenario / $server: $(cat "$out")"
	# the server's own count, where it keeps one, replaces wrk's (>= 400 only)
	if [[ -n $m0 && -n $m1 ]]; then
		counts="$((m1 - m0)) ${counts#* }"
	fi
	# other CPU = (all busy ticks - server ticks - wrk ticks) / all ticks, and
	# the server's CPU time per request; both unknown for an ATTND_URL
	# instance, whose process is not ours to read
	if [[ -n $spid ]]; then
		read -r other cpu < <(awk -v a="$t0" -v b="$t1" -v s=$((s1 - s0)) -v w="$wrk_s" \
			-v hz="$(getconf CLK_TCK)" -v n="$n" '
			BEGIN { split(a, x, " "); split(b, y, " ")
				busy = y[1] - x[1]; total = y[2] - x[2]
				o = total > 0 ? 100 * (busy - s - w * hz) / total : 0
				us = n > 0 ? 1e6 * s / hz / n : 0
				if (o < 0) o = 0
				if (us < 1000) printf "%.0f%% %.1fus\n", o, us
				else printf "%.0f%% %.1fms\n", o, us / 1000 }')
	fi
	echo "$scenario $server $rps $p50 $p99 $counts $other $cpu -c$conns/${seconds}s" >>"$work/rows"
}

# rounds SCENARIO: ROUNDS runs of SCENARIO against each server started here,
# alternating, so that a burst of load elsewhere hits them alike.
rounds() {
	local r count=1
	[[ $1 != seeds_c* ]] || count=$ROUNDS
	for ((r = 0; r < count; r++)); do
		run "$1" bare "http://127.0.0.1:$bare_port" "$bare_pid"
		if [[ $1 == seeds_c* && -n $answer_port ]]; then
			run "$1" answer "http://127.0.0.1:$answer_port" "$answer_pid"
		fi
		if [[ $1 == seeds_c* && -n $fixed_port ]]; then
			run "$1" fixed "http://127.0.0.1:$fixed_port" "$fixed_pid"
		fi
		run "$1" attnd "http://127.0.0.1:$attnd_port" "$attnd_pid"
	done
}

# start_answer: saves attnd's answer to the seeds' request (the path and body
# of bench/wrk/seeds.lua) with its headers and starts a bare server sending
# it; sets answer_port and answer_pid, or leaves answer_port empty without
# curl or an answer (that row is information: the bench goes on without it).
start_answer() {
	local path body
	command -v curl >/dev/null 2>&1 || return 0
	path=$(sed -n "s/^common.post(\"\([^\"]*\)\", '.*')\$/\1/p" bench/wrk/seeds.lua)
	body=$(sed -n "s/^common.post(\"[^\"]*\", '\(.*\)')\$/\1/p" bench/wrk/seeds.lua)
	[[ -n $path && -n $body ]] || die "cannot read the request of bench/wrk/seeds.lua"
	if ! curl -sfi --max-time 10 -X POST -H 'Content-Type: application/json' \
		--data-binary "$body" "http://127.0.0.1:$attnd_port$path" >"$work/answer.http"; then
		echo "http_bench: attnd did not answer the seeds' request; no answer row" >&2
		return 0
	fi
	start bare_answer build/bench/bare_server --port 0 --answer "$work/answer.http"
	answer_port=$port answer_pid=$pid
}

if [[ -n ${ATTND_URL:-} ]]; then
	url=${ATTND_URL%/}
	[[ $url =~ ^http://(127\.[0-9]+\.[0-9]+\.[0-9]+|localhost|\[::1\])(:[0-9]+)?$ ]] ||
		die "ATTND_URL must be http://127.x.x.x:PORT, http://localhost:PORT or http://[::1]:PORT"
	echo "HTTP bench against $url (ATTND_URL; bare server not run)"
	for s in "${SCENARIOS[@]}"; do
		run "$s" attnd "$url" ""
	done
else
	[[ -x build/attnd && -x build/bench/bare_server ]] ||
		die "build build/attnd and build/bench/bare_server first (make)"
	start attnd build/attnd --host 127.0.0.1 --port 0
	attnd_port=$port attnd_pid=$pid
	start bare_server build/bench/bare_server --port 0
	bare_port=$port bare_pid=$pid
	answer_port='' fixed_port=''
	if [[ " ${SCENARIOS[*]} " == *" seeds_c"* ]]; then
		start_answer
		if [[ -x build/bench/attnd_fixed_reply ]]; then
			start fixed build/bench/attnd_fixed_reply --host 127.0.0.1 --port 0
			fixed_port=$port fixed_pid=$pid
		fi
	fi
	echo "HTTP bench on loopback, $cpus CPUs, wrk $("$WRK" -v 2>&1 | awk 'NR == 1 { print $2 }')," \
		"seeds: median of $ROUNDS alternating rounds"
	for s in "${SCENARIOS[@]}"; do
		rounds "$s"
	done
fi

# One line per scenario and server: the round of median requests/s; non-2xx
# and socket errors summed over all its rounds (zero must hold for every one).
for s in "${SCENARIOS[@]}"; do
	for server in bare answer fixed attnd; do
		awk -v s="$s" -v v="$server" '$1 == s && $2 == v' "$work/rows" | sort -g -k3 >"$work/one"
		[[ -s $work/one ]] || continue
		awk -v mid=$((($(wc -l <"$work/one") + 1) / 2)) '
			{ non2xx += $6; sock += $7 }
			NR == mid { row = $0 }
			END { $0 = row; $6 = non2xx; $7 = sock; print }' "$work/one"
	done
done >"$work/table"

awk 'BEGIN {
	printf "%-15s | %-6s | %10s | %9s | %9s | %7s | %13s | %9s | %14s | %s\n",
	       "scenario", "server", "requests/s", "p50", "p99", "non-2xx",
	       "socket errors", "other CPU", "server CPU/req", "wrk"
}
{ printf "%-15s | %-6s | %10.0f | %9s | %9s | %7d | %13d | %9s | %14s | %s\n",
	 $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }' "$work/table"

# the target lines: attnd against the bare server on the seeds' request; then,
# for information, the same gap split at the bare server sending attnd's answer
# and at attnd answering without its API's work
for s in seeds_c8 seeds_c32; do
	awk -v s="$s" -v target="$TARGET_PCT" '
	$1 == s && $2 == "bare" { bare = $3 }
	$1 == s && $2 == "answer" { answer = $3 }
	$1 == s && $2 == "fixed" { fixed = $3 }
	$1 == s && $2 == "attnd" { attnd = $3; non2xx = $6 }
	END {
		if (bare == "" || attnd == "" || bare <= 0)
			exit
		pct = 100 * attnd / bare
		printf "%s: attnd %.0f req/s = %.0f%% of the bare server'"'"'s %.0f req/s, %d non-2xx " \
		       "(target >= %d%%, zero non-2xx): %s\n", s, attnd, pct, bare, non2xx, target,
		       (pct >= target && non2xx == 0) ? "PASS" : "MISS"
		if (answer != "" && answer > 0)
			printf "%s: the bare server sending attnd'"'"'s answer %.0f req/s = %.0f%% of " \
			       "the bare server; attnd = %.0f%% of it (information)\n", s, answer,
			       100 * answer / bare, 100 * attnd / answer
		if (fixed != "" && fixed > 0)
			printf "%s: attnd with its API'"'"'s work replaced by a copy of its answer %.0f " \
			       "req/s = %.0f%% of the bare server; attnd = %.0f%% of it (information)\n",
			       s, fixed, 100 * fixed / bare, 100 * attnd / fixed
	}' "$work/table"
done

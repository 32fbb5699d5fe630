#!/usr/bin/env bash
# The lean engine side by side with the anchors of the field (issue 19):
# Debian's wrk (REST) and h2load (gRPC) and `meteorbench run --engine lean`
# against the same meteorbench server, pinned to one CPU, each tool pinned to
# another, interleaved: in each round and scenario BLOCKS times the anchor,
# lean, lean and the anchor again (ABBA), DURATION seconds each, so that a
# machine whose speed drifts during the round weighs on both alike (wrk
# alone went from 23,000 to 44,000 calls/s between rounds here, and from
# 38,000 to 45,000 between three 5 s runs with the server's CPU busy
# throughout and 0.4% stolen); ROUNDS rounds, small and
# large calls, 16 in flight (wrk: 16 connections; h2load and run's gRPC: one
# connection x 16 streams). wrk and h2load send the headers lean's requests
# carry (User-Agent and Accept; grpc-go's user-agent and a grpc-timeout, for
# which the server arms a timer), so that the server has the same work. For each it prints calls/s, the client's CPU per
# call and the server's CPU per call (from the server's getrusage counter,
# meteorbench_cpu_seconds_total, read before and after each tool).
#
# Client CPU: wrk's and h2load's is their whole process (user + system from
# /usr/bin/time: they do nothing but the load); run's is its measured window
# only (the cell's client_cpu_us_per_call: getrusage deltas around the
# window, without its start-up, health check, probe and warm-up).
#
# After each round it prints lean's calls/s as a ratio of wrk's (REST) and
# h2load's (gRPC), scenario by scenario, two ways: the ratio of the means of
# all runs, and the median of the blocks' ratios (each block's two lean runs
# over its two anchor runs) with their quartiles. The machine's speed can
# halve from one run to the next (wrk made 48,430 and 25,047 calls/s in
# adjacent blocks here), so a ratio of means weighs most the blocks whose runs
# straddled such a change; the median of the paired blocks does not, and the
# last line says whether it reached MIN_RATIO (0.95) in every round, issue
# 40's bar. Every tool is bounded in time (timeout), and everything targets
# 127.0.0.1.
#
# Figures need a quiet machine: run nothing else meanwhile (the load
# average is printed with each round).
#
#   apt-get install -y wrk nghttp2-client jq
#   bash tools/anchors.sh                       # 5 s per tool, 2 rounds
#   DURATION=2 ROUNDS=1 SCENARIOS=small bash tools/anchors.sh   # a quick look
#   DURATION=1 BLOCKS=15 ROUNDS=2 SCENARIOS=small bash tools/anchors.sh  # issue 40's check, twice in a row
#   SERVER_CPU=0 CLIENT_CPU=1 bash tools/anchors.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-500ms} # lean's warm-up before its window; wrk and h2load have none
ROUNDS=${ROUNDS:-2}
BLOCKS=${BLOCKS:-1}
SCENARIOS=${SCENARIOS:-small large}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
INFLIGHT=${INFLIGHT:-16}
MIN_RATIO=${MIN_RATIO:-0.95}
OUT=${OUT:-$(mktemp -d /tmp/meteorbench-anchors.XXXXXX)}
for tool in wrk h2load jq taskset; do
	command -v "$tool" >/dev/null || { echo "anchors: $tool not found (apt-get install -y wrk nghttp2-client jq util-linux)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "anchors: /usr/bin/time not found (apt-get install -y time)" >&2; exit 2; }

bin="$OUT/meteorbench"
go build -o "$bin" ./cmd/meteorbench
"$bin" serve --addr 127.0.0.1:0 --addr-file "$OUT/addr" --cpus "$SERVER_CPU" 2>"$OUT/serve.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$OUT/addr" ] && break; sleep 0.1; done
addr=$(cat "$OUT/addr")
printf '\0\0\0\0\0' >"$OUT/empty.grpc" # the 5-byte gRPC prefix of an empty request
# The anchors send the headers the lean engine's requests carry, so that the
# server parses the same request from every tool (net/http parses and keeps
# every header: wrk's bare request, Host alone, cost it 2-3 us less a call).
grpcversion=$(go list -m -f '{{.Version}}' google.golang.org/grpc | sed 's/^v//')

server_cpu() { curl -s "http://$addr/metrics" | awk '$1 == "meteorbench_cpu_seconds_total" { print $2 }'; }
# Each tool is killed past its duration plus 30 s: no run hangs.
bound() { timeout -k 5 $((DURATION + 30)) "$@"; }
client() { bound taskset -c "$CLIENT_CPU" /usr/bin/time -f '%U %S' -o "$OUT/time" "$@"; }
# report TOOL SCENARIO CALLS SECONDS CLIENT_CPU_S SERVER_CPU_S; the calls/s
# are added to $OUT/rate-TOOL-SCENARIO for the round's ratios.
report() {
	awk -v n="$3" -v d="$4" 'BEGIN { print (n > 0 ? n / d : 0) }' >>"$OUT/rate-${1// /_}-$2"
	awk -v t="$1" -v s="$2" -v n="$3" -v d="$4" -v c="$5" -v sv="$6" 'BEGIN {
		if (n <= 0) { printf "%-22s %-6s no successful calls\n", t, s; exit }
		printf "%-22s %-6s %10.0f calls/s   client %7.1f us/call   server %7.1f us/call\n", t, s, n / d, c * 1e6 / n, sv * 1e6 / n }'
}
time_cpu() { awk '{ print $1 + $2 }' "$OUT/time"; }

path_rest() { case $1 in small) echo /api/MeteoriteLandings ;; large) echo /api/MeteoriteLandings/LargePayload ;; esac; }
method_grpc() { case $1 in small) echo GetVersion ;; large) echo GetLargePayloadAsList ;; esac; }

run_wrk() {
	local before after
	before=$(server_cpu)
	client wrk -t1 -c"$INFLIGHT" -d"${DURATION}s" -H 'User-Agent: Go-http-client/1.1' -H 'Accept: application/json' \
		"http://$addr$(path_rest "$1")" >"$OUT/wrk-$1.txt"
	after=$(server_cpu)
	local n non2xx elapsed
	n=$(awk '/requests in/ { print $1 }' "$OUT/wrk-$1.txt")
	non2xx=$(awk '/Non-2xx/ { print $NF }' "$OUT/wrk-$1.txt")
	# wrk's own window (its Requests/sec is every answer over it), not the
	# nominal DURATION: it ran 2.0018 s of a 2 s test here.
	elapsed=$(awk -v n="$n" '/^Requests\/sec:/ { if ($2 > 0) print n / $2 }' "$OUT/wrk-$1.txt")
	report "wrk REST" "$1" $((n - ${non2xx:-0})) "${elapsed:-$DURATION}" "$(time_cpu)" "$(echo "$after - $before" | bc -l)"
}

run_h2load() {
	local before after
	before=$(server_cpu)
	client h2load -c1 -m"$INFLIGHT" -D "$DURATION" -d "$OUT/empty.grpc" -H 'content-type: application/grpc' -H 'te: trailers' -H 'grpc-timeout: 10S' \
		-H "user-agent: grpc-go/$grpcversion" \
		"http://$addr/MeteoriteLandingsService.MeteoriteLandingsService/$(method_grpc "$1")" >"$OUT/h2load-$1.txt"
	after=$(server_cpu)
	# h2load counts HTTP 2xx: a gRPC error would still count (NOTES.md).
	local n elapsed
	n=$(awk '/^requests:/ { print $8 }' "$OUT/h2load-$1.txt")
	# Its window, in the unit it picks: "1.00s", but "999.84ms" for a run
	# that ended a hair short of 1 s (read as 999.84 s, that run once made
	# 47 calls/s here).
	elapsed=$(awk '/^finished in/ { v = $3; sub(/,$/, "", v); f = 1
		if (v ~ /us$/) { sub(/us$/, "", v); f = 1e-6 } else if (v ~ /ms$/) { sub(/ms$/, "", v); f = 1e-3 } else if (v ~ /s$/) sub(/s$/, "", v)
		else { print "anchors: h2load window " $3 " in no unit known" > "/dev/stderr"; exit 1 }
		print v * f }' "$OUT/h2load-$1.txt")
	report "h2load gRPC" "$1" "$n" "${elapsed:-$DURATION}" "$(time_cpu)" "$(echo "$after - $before" | bc -l)"
}

run_lean() { # PROTOCOL SCENARIO
	local extra=(--concurrency "$INFLIGHT")
	[ "$1" = grpc ] && extra+=(--connections 1)
	bound taskset -c "$CLIENT_CPU" "$bin" run --target "$addr" --engine lean --proto "$1" --scenario "$2" "${extra[@]}" \
		--batch 1 --duration "${DURATION}s" --warmup "$WARMUP" --repeat 1 --format json --quiet >"$OUT/lean-$1-$2.json" || true
	local n d c sv
	read -r n d c sv < <(jq -r '.cells[0] | "\(.calls) \(.duration_s) \(.client_cpu_us_per_call * .calls / 1e6) \((.server_cpu_us_per_call // 0) * .calls / 1e6)"' "$OUT/lean-$1-$2.json")
	report "run --engine lean $1" "$2" "$n" "$d" "$c" "$sv"
}

# mean FILE: the mean of the calls/s in FILE, 0 when it is missing.
mean() { awk '{ s += $1; n++ } END { print (n > 0 ? s / n : 0) }' "$1" 2>/dev/null || echo 0; }
# ratio NUM DEN: lean's mean calls/s over the anchor's, 0 when either is missing.
ratio() { awk -v a="$(mean "$OUT/rate-$1")" -v b="$(mean "$OUT/rate-$2")" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
# blocks NUM DEN: each block's ratio (its two lean runs over its two anchor
# runs, lines 2k-1 and 2k of each file), one a line; a block where either
# made no call gives 0.
blocks() {
	paste "$OUT/rate-$1" "$OUT/rate-$2" 2>/dev/null | awk 'NR % 2 == 1 { a = $1; b = $2; next }
		{ a += $1; b += $2; printf "%.3f\n", (a > 0 && b > 0 ? a / b : 0) }'
}
# median: the median of the numbers on standard input, then their first and
# third quartiles (nearest rank), or 0 0 0 when there are none.
median() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "0 0 0"; exit }
		m = (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)
		q1 = int((NR + 3) / 4); q3 = NR + 1 - q1
		printf "%.3f %.3f %.3f\n", m, v[q1], v[q3] }'
}

echo "server $addr on CPU $SERVER_CPU, tools on CPU $CLIENT_CPU, $INFLIGHT in flight, ${DURATION}s each, load $(cut -d' ' -f1-3 /proc/loadavg); logs in $OUT"
met=yes
for round in $(seq "$ROUNDS"); do
	echo "== round $round (load $(cut -d' ' -f1-3 /proc/loadavg))"
	for sc in $SCENARIOS; do
		rm -f "$OUT"/rate-*
		for _ in $(seq "$BLOCKS"); do
			run_wrk "$sc"
			run_lean rest "$sc"
			run_lean rest "$sc"
			run_wrk "$sc"
		done
		for _ in $(seq "$BLOCKS"); do
			run_h2load "$sc"
			run_lean grpc "$sc"
			run_lean grpc "$sc"
			run_h2load "$sc"
		done
		for p in "REST run_--engine_lean_rest wrk_REST wrk" "gRPC run_--engine_lean_grpc h2load_gRPC h2load"; do
			read -r proto lean anchor tool <<<"$p" # the rate files' names (report)
			bl="$OUT/blocks-$proto-$sc-$round"
			blocks "$lean-$sc" "$anchor-$sc" >"$bl"
			read -r med q1 q3 < <(median <"$bl")
			printf '   %s %s: lean/%s median of %d blocks %sx (quartiles %s-%s), ratio of means %sx; blocks: %s\n' \
				"$sc" "$proto" "$tool" "$(wc -l <"$bl")" "$med" "$q1" "$q3" "$(ratio "$lean-$sc" "$anchor-$sc")" "$(paste -sd' ' "$bl")"
			awk -v r="$med" -v m="$MIN_RATIO" 'BEGIN { exit !(r >= m) }' || met=no
		done
	done
done
echo "lean >= ${MIN_RATIO}x wrk (REST) and h2load (gRPC), median of the blocks, in every round: $met"

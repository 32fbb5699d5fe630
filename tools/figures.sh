#!/usr/bin/env bash
# Regenerates every figure the README and docs/ publish, from fresh runs on
# this machine: the documents in docs/ (JSON, Markdown, charts) and, in
# $OUT (default /tmp/meteorbench-figures), the logs the README's text is
# read from. It takes about 30 minutes on a 2-core VM. Timing figures need a
# quiet machine: run nothing else meanwhile. NICE=-19 (as root) gives these
# runs the CPU over whatever else runs, when the machine cannot be quiet.
#
#   bash tools/figures.sh            # everything
#   bash tools/figures.sh default    # one part: default openloop gzip tlsgzip vps example capvps cappost
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/meteorbench-figures}
mkdir -p "$OUT"
bin="$OUT/meteorbench"
go build -o "$bin" ./cmd/meteorbench
mb() { nice -n "${NICE:-0}" "$bin" "$@"; }
stamp() { printf '\n== %s (%s; load %s)\n' "$1" "$(date -u +%H:%M:%S)" "$(cut -d' ' -f1-3 /proc/loadavg)"; }
parts=${*:-default openloop gzip tlsgzip vps example capvps cappost}

for part in $parts; do
	case $part in
	default) # the README's first command, five times
		for i in 1 2 3 4 5; do
			stamp "default run $i"
			mb run --format json,table --out "$OUT/default-$i" --quiet || true
			jq -r '.verdicts[].summary' "$OUT/default-$i.json"
		done ;;
	openloop) # issue 15's check: 1,024 workers against 4 at 2,000 small calls/s
		for i in 1 2 3 4 5; do
			for w in 4 1024; do
				stamp "open loop $i, $w workers"
				mb run --server-cpus 1 --scenario small --proto rest,grpc --rate 2000 --concurrency "$w" \
					--duration 3s --repeat 1 --warmup 1s --format json --out "$OUT/openloop-$i-$w" --quiet || true
				jq -r '.cells[] | "\(.protocol) p50 \(.latency_us.p50) us, p99 \(.latency_us.p99) us, wake p50 \(.generator_delay_us.wake.p50) us, suspect \(.suspect)"' "$OUT/openloop-$i-$w.json"
			done
		done ;;
	gzip)
		stamp gzip
		mb run --compress none,gzip --concurrency 1,8 --scenario large,post --proto rest,grpc \
			--format json,table --out "$OUT/gzip" --quiet || true
		jq -r '.verdicts[].summary' "$OUT/gzip.json" ;;
	tlsgzip)
		stamp "tls x gzip"
		mb run --scenario small,large --proto rest,grpc --tls both --compress none,gzip \
			--format json,markdown --out docs/tls-gzip --quiet || true
		jq -r '.verdicts[].summary' docs/tls-gzip.json ;;
	vps)
		stamp vps
		mb run --server-cpus 1 --scenario small,large --proto rest,rest-protobuf,grpc \
			--link none,100mbit/20ms --records 10,100,1000 --concurrency 8 \
			--format json,markdown --out docs/vps --report docs/vps.png --quiet || true
		jq -r '.verdicts[].summary' docs/vps.json ;;
	example)
		stamp example
		mb run --format json,markdown --out docs/example --report docs/example.png --quiet || true ;;
	capvps)
		stamp "capacity over a VPS link, 3 searches"
		mb capacity --scenario large --link 100mbit/20ms --server-cpus 1 --slo p99=200ms --repeat 3 \
			--format json,markdown,png --out docs/capacity-vps --quiet || true
		jq -r '.verdicts[].summary' docs/capacity-vps.json ;;
	cappost)
		stamp "capacity of post on one CPU, 3 searches"
		mb capacity --scenario post --server-cpus 1 --slo p99=50ms --repeat 3 --max-time 15m \
			--format json,markdown --out docs/capacity-post --quiet || true
		jq -r '.verdicts[].summary' docs/capacity-post.json ;;
	*) echo "unknown part $part" >&2; exit 2 ;;
	esac
done
stamp done

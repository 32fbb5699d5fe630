#!/usr/bin/env bash
# deploy/swarm/run.sh: one measurement on a Docker Swarm with stack.yml.
# Run it on a manager node:
#   1. deploy the stack with a shared start time ($METEORBENCH_LEAD seconds
#      ahead),
#   2. wait until every generator task has ended,
#   3. gather each task's document from its log (docker service logs --raw
#      TASK: no volume shared between hosts) into $METEORBENCH_OUT/gen-<slot>.jsonl,
#      merge them (meteorbench merge - in the image, no network) into
#      $METEORBENCH_OUT/merged.json and merged.txt, and remove the stack.
# A generator that did not complete is a missing segment: merge names it,
# and run.sh exits 1 after writing what was measured.
#
# Settings (environment): METEORBENCH_IMAGE (meteorbench), METEORBENCH_STACK
# (meteorbench), METEORBENCH_OUT (./out), METEORBENCH_LEAD (60 s from deploy
# to the start: pulling the image on every node fits in it),
# METEORBENCH_TIMEOUT (3600 s for the generators to end), METEORBENCH_KEEP=1
# (leave the stack deployed), METEORBENCH_RESOLVE_IMAGE (always: docker
# stack deploy --resolve-image; never for an image that is on no registry),
# and stack.yml's: METEORBENCH_GENERATORS (3), METEORBENCH_GENERATORS_ON,
# METEORBENCH_SCENARIO, METEORBENCH_PROTO, METEORBENCH_CONCURRENCY, METEORBENCH_RATE,
# METEORBENCH_DURATION, METEORBENCH_WARMUP, METEORBENCH_REPEAT.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
stack=${METEORBENCH_STACK:-meteorbench}
image=${METEORBENCH_IMAGE:-meteorbench}
out=${METEORBENCH_OUT:-./out}
lead=${METEORBENCH_LEAD:-60}
timeout=${METEORBENCH_TIMEOUT:-3600}
n=${METEORBENCH_GENERATORS:-3}
export METEORBENCH_IMAGE=$image METEORBENCH_GENERATORS=$n

say() { echo "run.sh: $*" >&2; }

if [ "$(docker info --format '{{.Swarm.ControlAvailable}}')" != true ]; then
	say "this engine is no Swarm manager: docker swarm init (or run this on a manager node)"
	exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/gen-*.jsonl "$out"/gen-*.err

# 1. Deploy, the start time shared by every generator.
METEORBENCH_START_AT=$(date -u -d "+${lead} sec" +%Y-%m-%dT%H:%M:%SZ)
export METEORBENCH_START_AT
say "deploying stack $stack: $n generators, start at $METEORBENCH_START_AT"
docker stack deploy --resolve-image "${METEORBENCH_RESOLVE_IMAGE:-always}" -c "$here/stack.yml" "$stack" >&2
if [ "${METEORBENCH_KEEP:-}" != 1 ]; then
	trap 'say "removing stack $stack"; docker stack rm "$stack" >&2 || true' EXIT
fi

# 2. Wait until every generator task is in a final state (restart
# condition none: one task per slot).
svc=${stack}_generator
tasks() { docker service ps --no-trunc --format '{{.ID}}' "$svc"; }
state() { docker inspect --format '{{.Slot}} {{.Status.State}} {{.Status.Err}}' "$1"; }
deadline=$((SECONDS + timeout))
while :; do
	ended=0 pending=0 total=0
	for t in $(tasks); do
		total=$((total + 1))
		read -r _ st _ < <(state "$t")
		case $st in
		complete | failed | shutdown | rejected | orphaned | remove) ended=$((ended + 1)) ;;
		new | pending | assigned) pending=$((pending + 1)) ;;
		esac
	done
	[ "$total" -ge "$n" ] && [ "$ended" -eq "$total" ] && break
	if [ "$SECONDS" -ge "$deadline" ]; then
		say "the generators did not end within ${timeout}s ($ended of $total ended)"
		exit 1
	fi
	if [ "$pending" -gt 0 ] && [ -z "${warned:-}" ] && [ "$(date -u +%s)" -gt "$(date -u -d "$METEORBENCH_START_AT" +%s)" ]; then
		say "$pending generator task(s) still not placed after the start time: no node matches their placement? (docker service ps $svc)"
		warned=1
	fi
	sleep 2
done

# 3. Gather each task's document (stdout only: docker service logs sends a
# task's stderr to its own stderr) and merge.
failed=0
for t in $(tasks); do
	read -r slot st err < <(state "$t")
	docker service logs --raw "$t" >"$out/gen-$slot.jsonl" 2>"$out/gen-$slot.err" || true
	if [ "$st" != complete ]; then
		failed=$((failed + 1))
		say "segment $slot/$n: task $t $st${err:+ ($err)}$([ -s "$out/gen-$slot.err" ] && printf ': %s' "$(tail -n 3 "$out/gen-$slot.err")")"
		# A run that failed mid-way still writes what it measured, a whole
		# line; a generator killed while writing leaves no newline.
		if [ -s "$out/gen-$slot.jsonl" ] && [ "$(tail -c 1 "$out/gen-$slot.jsonl" | od -An -c | tr -d ' ')" = '\n' ]; then
			say "segment $slot/$n: its partial result is merged"
		else
			rm -f "$out/gen-$slot.jsonl"
		fi
	fi
	[ -s "$out/gen-$slot.err" ] || rm -f "$out/gen-$slot.err"
done
if ! ls "$out"/gen-*.jsonl >/dev/null 2>&1; then
	say "no generator completed: nothing to merge"
	exit 1
fi
say "merging $((n - failed)) of $n segments into $out/merged.json"
cat "$out"/gen-*.jsonl | docker run --rm -i --network none --user "$(id -u):$(id -g)" \
	-v "$out:/out" "$image" merge - --out /out/merged --format json,table
cat "$out/merged.txt"
[ "$failed" -eq 0 ] || exit 1

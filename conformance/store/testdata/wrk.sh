#!/usr/bin/env bash
# The cost of a global rate limit, on loopback: the same sluice binary
# serves a rate-limited route with local buckets and, in a second
# process, with the buckets in Redis (store "redis"); wrk drives both in
# turns, in the same run. The servers are pinned to CPU 0, wrk and
# redis-server to CPU 1. The rate is high enough that nothing is refused.
#
#   conformance/store/testdata/wrk.sh [SECONDS [RUNS]]     (make bench-store)
#
# Scenarios: "hot" is one client (one bucket; with Redis, one round trip
# per allowance of 100 requests); "spread" gives every request its own key
# (header X-Key), so with Redis every request is a round trip.
set -euo pipefail
cd "$(dirname "$0")/../../.."
secs=${1:-5}
runs=${2:-3}
for t in wrk taskset redis-server; do
  command -v "$t" >/dev/null || { echo "wrk.sh: needs $t" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-wrk.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/sluice" ./cmd/sluice

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rport=$(port)
taskset -c 1 redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" --daemonize no >"$work/redis.log" 2>&1 &
pids+=($!)

site() {
  cat <<HCL
site "_" {
  listen = ["127.0.0.1:$1"]
  route "/hot" {
    rate_limit {
      rate = "100000000/s"
    }
    respond {
      body = "ok"
    }
  }
  route "/spread" {
    rate_limit {
      rate = "100000000/s"
      key  = "header:X-Key"
    }
    respond {
      body = "ok"
    }
  }
}
HCL
}
lport=$(port)
gport=$(port)
site "$lport" >"$work/local.hcl"
{ printf 'store "redis" {\n  address = "127.0.0.1:%s"\n}\n' "$rport"; site "$gport"; } >"$work/redis.hcl"
for c in local redis; do
  taskset -c 0 "$work/sluice" serve -c "$work/$c.hcl" >"$work/$c.log" 2>&1 &
  pids+=($!)
done
cat >"$work/spread.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "/spread", { ["X-Key"] = tostring(math.random(1, 1000000000)) .. "-" .. n })
end
LUA
for p in "$lport" "$gport"; do
  for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$p/hot" >/dev/null 2>&1 && break; sleep 0.1; done
done

declare -A rps lat
for r in $(seq "$runs"); do
  for scen in hot spread; do
    for c in local redis; do
      p=$lport; [ "$c" = redis ] && p=$gport
      args=(-t1 -c32 -d"${secs}s" --latency)
      if [ "$scen" = spread ]; then args+=(-s "$work/spread.lua"); fi
      out=$(taskset -c 1 wrk "${args[@]}" "http://127.0.0.1:$p/$scen" 2>&1)
      if grep -q "cannot open" <<<"$out"; then echo "wrk.sh: wrk failed: $out" >&2; exit 1; fi
      if grep -q "Non-2xx" <<<"$out"; then echo "wrk.sh: $c $scen had refusals:" >&2; echo "$out" >&2; exit 1; fi
      rps[$scen,$c]+="$(awk '/Requests\/sec/ {print $2}' <<<"$out") "
      lat[$scen,$c]+="$(awk '$1=="99%" {print $2}' <<<"$out") "
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| scenario | buckets | req/s (median of $runs × ${secs}s) | p99 latency (median) | all req/s |"
echo "|---|---|---|---|---|"
for scen in hot spread; do
  for c in local redis; do
    echo "| $scen | $c | $(median <<<"${rps[$scen,$c]}") | $(median <<<"${lat[$scen,$c]}" ) | ${rps[$scen,$c]}|"
  done
done

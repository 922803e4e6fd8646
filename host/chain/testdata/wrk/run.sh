#!/usr/bin/env bash
# A route with the shipped headers filter (filters/headers, setting one
# response header) beside the same route without it, in one server:
#   wrk --HTTP/1.1--> sluice (one core) --> static 3.4 KB file
# The server runs on CPU 0, wrk on CPU 1 (with 2+ CPUs). Each round runs
# both routes against the same process (plain first in odd rounds,
# filtered first in even ones, so that a drifting load cancels); the
# table gives medians of requests per second and of the server's CPU time
# per request (utime+stime from /proc), and the ratio filtered/plain
# (issue 13: at least 0.90). PROFILE=PREFIX also records `perf` samples
# of the server during each run into PREFIX.ROUTE.ROUND.data (needs perf;
# the sampling costs CPU, so compare samples per request, not the ratio).
#
#   host/chain/testdata/wrk/run.sh [ROUNDS [SECONDS]]   (or: make bench-filter-route)
set -euo pipefail
rounds=${1:-4}; secs=${2:-5}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../../.." && pwd)
for t in wrk taskset curl; do command -v $t >/dev/null || { echo "filter-route: $t not found" >&2; exit 3; }; done
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
pin_server=(taskset -c 0); pin_load=(taskset -c 1)
if [ "$(nproc)" -lt 2 ]; then pin_server=(); pin_load=(); fi
port=${PORT:-19012}

if [ -n "${SLUICE_BIN:-}" ]; then # another build, e.g. main's before a change
  cp "$SLUICE_BIN" "$work/sluice"
else
  (cd "$root" && go build -o "$work/sluice" ./cmd/sluice)
fi
mkdir -p "$work/www"
head -c 3400 /dev/zero | tr '\0' 'a' | fold -w 68 >"$work/www/index.html" # 3.4 KB, 50 lines
cat >"$work/sluice.hcl" <<EOC
listener "127.0.0.1:$port" {
  max_conns = 0
}
filter "headers" {
  module = "$root/filters/headers/headers.wasm"
  config = {
    response = {
      set = { "X-Frame-Options" = "DENY" }
    }
  }
}
site "*" {
  listen = ["127.0.0.1:$port"]
  route "/plain/" {
    static {
      root = "$work/www"
    }
  }
  route "/filtered/" {
    filters = ["headers"]
    static {
      root = "$work/www"
    }
  }
}
EOC
# A route's prefix is not part of the file's path: both serve www/index.html.
# host/static caches a file once its ctime is 2 s old.
sleep 2.1

"${pin_server[@]}" "$work/sluice" serve -c "$work/sluice.hcl" --log-level warn >"$work/sluice.log" 2>&1 &
pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
url() { echo "http://127.0.0.1:$port/$1/index.html"; }
hdr=$(curl -sS -D - -o /dev/null "$(url filtered)")
grep -qi '^X-Frame-Options: DENY' <<<"$hdr" || { echo "filter-route: the filtered route did not set the header:" >&2; echo "$hdr" >&2; cat "$work/sluice.log" >&2; exit 1; }
curl -sS -D - -o /dev/null "$(url plain)" | grep -qi '^X-Frame-Options' && { echo "filter-route: the plain route has the header" >&2; exit 1; }
size=$(curl -sS "$(url plain)" | wc -c)
echo "filter-route: $size bytes, $rounds rounds of ${secs}s, server on CPU ${pin_server[*]:+0}" >&2

one() { # one measured run of route $1: prints "RPS CPU_US"
	"${pin_load[@]}" wrk -t1 -c100 -d1s "$(url "$1")" >/dev/null
	local prof=()
	if [ -n "${PROFILE:-}" ]; then
		perf record -F 999 -g -p "$pid" -o "$PROFILE.$1.$i.data" -- sleep "$secs" >/dev/null 2>&1 &
		prof=($!)
	fi
	read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
	"${pin_load[@]}" wrk -t1 -c100 -d"${secs}s" "$(url "$1")" >"$work/wrk.out"
	read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
	[ ${#prof[@]} -eq 0 ] || wait "${prof[0]}" || true
	if grep -q 'Non-2xx\|Socket errors' "$work/wrk.out"; then echo "filter-route: $1 answered with errors:" >&2; cat "$work/wrk.out" >&2; exit 1; fi
	local req rps tck
	req=$(awk '/requests in/{print $1}' "$work/wrk.out"); rps=$(awk '/Requests\/sec/{print $2}' "$work/wrk.out")
	tck=$(getconf CLK_TCK)
	awk -v r="$rps" -v n="$req" -v t=$((u1 - u0 + s1 - s0)) -v hz="$tck" 'BEGIN{printf "%s %.2f\n", r, t / hz * 1e6 / n}'
}

: >"$work/results"
for i in $(seq "$rounds"); do
	order="plain filtered"
	if [ $((i % 2)) = 0 ]; then order="filtered plain"; fi # ABBA: drift in the load cancels
	for r in $order; do
		echo "$i $r $(one $r)" >>"$work/results"
		echo "filter-route: round $i $r: $(tail -1 "$work/results" | cut -d' ' -f3-) (req/s, CPU us/req)" >&2
	done
done
kill "$pid"; wait "$pid" 2>/dev/null || true
awk '
function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ rounds = $1 > rounds ? $1 : rounds; rps[$2, $1] = $3; cpu[$2, $1] = $4 }
END {
	for (i = 1; i <= rounds; i++) {
		p[i] = rps["plain", i]; f[i] = rps["filtered", i]; cp[i] = cpu["plain", i]; cf[i] = cpu["filtered", i]
		q[i] = f[i] / p[i]; line = line sprintf(" %.2f", q[i])
	}
	mp = median(p, rounds); mf = median(f, rounds); mcp = median(cp, rounds); mcf = median(cf, rounds)
	print "| route | req/s (median) | CPU per request (median) | req/s x plain |"
	print "|---|--:|--:|--:|"
	printf "| plain | %.0f | %.2f us | 1.00 |\n", mp, mcp
	printf "| headers filter | %.0f | %.2f us | %.2f |\n", mf, mcf, mf / mp
	printf "filtered/plain per round:%s (median %.2f); CPU per request %.2f us more, %.2f x\n", line, median(q, rounds), mcf - mcp, mcf / mcp
}' "$work/results"

#!/usr/bin/env bash
# The waf benchmark, in one run: Coraza v3 + CRS as native Go middleware
# (native.go) beside sluice with filters/waf, in front of the same 12 KB
# HTML page, 100 connections. Each server runs on CPU 0, wrk on CPU 1
# (with 2+ CPUs). Two set-ups: CRS paranoia 1 blocking, and paranoia 4 in
# detection mode. Each row: requests per second, the server's CPU time
# per request (utime+stime from /proc), p99 latency (wrk --latency) and
# its peak RSS (VmHWM). Needs wrk and taskset.
#
#   filters/waf/bench/run.sh [SECONDS]          (or: make bench-waf)
set -euo pipefail
secs=${1:-10}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
for t in wrk taskset; do command -v $t >/dev/null || { echo "bench-waf: $t not found" >&2; exit 3; }; done
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
pin_server=(taskset -c 0); pin_load=(taskset -c 1)
if [ "$(nproc)" -lt 2 ]; then pin_server=(); pin_load=(); fi
port=19101
# Compiled modules are kept across runs: compiling the waf takes minutes.
cache=${XDG_CACHE_HOME:-$HOME/.cache}/sluice-bench-waf

(cd "$root" && go build -o "$work/sluice" ./cmd/sluice)
(cd "$root/filters/waf" && go build -o "$work/native" ./bench)

# A 12 KB HTML page.
{
	echo '<!doctype html><html><head><meta charset="utf-8"><title>Catalogue</title></head><body><h1>Catalogue</h1><ul>'
	for i in $(seq 1 200); do printf '<li><a href="/item/%d">Item %d</a> in stock</li>\n' "$i" "$i"; done
	echo '</ul></body></html>'
} | head -c 12288 >"$work/page.html"

sluice_config() { # paranoia mode
	cat >"$work/sluice.hcl" <<EOC
server {
  cache_dir = "$cache"
}
listener "127.0.0.1:$port" {
  max_conns = 0
}
filter "waf" {
  module       = "$root/filters/waf/waf.wasm"
  memory       = "256MiB"
  timeout      = "10s"
  init_timeout = "5m"
  max_buffer   = "128KiB"
  config = {
    mode     = "$2"
    paranoia = $1
  }
}
site "*" {
  listen = ["127.0.0.1:$port"]
  route "/" {
    filters = ["waf"]
    static {
      root  = "$work"
      index = ["page.html"]
    }
  }
}
EOC
}

one() { # server paranoia mode: prints "RPS CPU_US P99_MS RSS_MIB"
	if [ "$1" = native ]; then
		"${pin_server[@]}" "$work/native" -addr 127.0.0.1:$port -file "$work/page.html" -paranoia "$2" -mode "$3" >"$work/server.log" 2>&1 &
	else
		sluice_config "$2" "$3"
		"${pin_server[@]}" "$work/sluice" serve -c "$work/sluice.hcl" >"$work/server.log" 2>&1 &
	fi
	local pid=$!
	local ok=
	for _ in $(seq 600); do
		if curl -s -o /dev/null -H 'Host: bench.example' "http://127.0.0.1:$port/page.html"; then ok=1; break; fi
		sleep 0.5
	done
	[ -n "$ok" ] || { echo "bench-waf: $1 did not start:" >&2; tail -5 "$work/server.log" >&2; exit 1; }
	local hdr=(-H 'Host: bench.example' -H 'User-Agent: Mozilla/5.0 (X11; Linux x86_64) wrk' -H 'Accept: text/html' -H 'Accept-Language: en')
	"${pin_load[@]}" wrk -t1 -c100 -d2s "${hdr[@]}" "http://127.0.0.1:$port/page.html" >/dev/null
	read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
	"${pin_load[@]}" wrk -t1 -c100 -d"${secs}s" --timeout 10s --latency "${hdr[@]}" "http://127.0.0.1:$port/page.html" >"$work/wrk.out"
	read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
	local rss
	rss=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
	kill "$pid"; wait "$pid" 2>/dev/null || true
	if grep -q 'Non-2xx\|Socket errors' "$work/wrk.out"; then echo "bench-waf: $1 answered with errors:" >&2; cat "$work/wrk.out" >&2; fi
	local req rps p99 tck
	req=$(awk '/requests in/{print $1}' "$work/wrk.out"); rps=$(awk '/Requests\/sec/{print $2}' "$work/wrk.out")
	p99=$(awk '$1=="99%"{v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' "$work/wrk.out")
	tck=$(getconf CLK_TCK)
	awk -v r="$rps" -v n="$req" -v t=$((u1 - u0 + s1 - s0)) -v hz="$tck" -v p="$p99" -v m="$rss" 'BEGIN{printf "%s %.2f %s %.0f\n", r, t / hz * 1e3 / n, p, m / 1024}'
}

echo "| set-up | server | req/s | CPU per request | p99 | peak RSS |"
echo "|---|---|--:|--:|--:|--:|"
for setup in "1 block" "4 detect"; do
	set -- $setup
	declare -A res=()
	for s in native sluice; do
		res[$s]=$(one "$s" "$1" "$2")
		read -r rps cpu p99 rss <<<"${res[$s]}"
		echo "| paranoia $1, $2 | $s | $rps | $cpu ms | $p99 ms | $rss MiB |"
	done
	read -r _ ncpu np99 _ <<<"${res[native]}"; read -r _ scpu sp99 _ <<<"${res[sluice]}"
	awk -v a="$scpu" -v b="$ncpu" -v c="$sp99" -v d="$np99" -v s="$1 $2" 'BEGIN{printf "| paranoia %s | sluice / native | | %.2f x | %.2f x | |\n", s, a / b, c / d}'
done

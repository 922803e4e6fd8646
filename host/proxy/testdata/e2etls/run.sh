#!/usr/bin/env bash
# End-to-end TLS reverse proxy benchmark, sluice beside nginx:
#   wrk --HTTPS--> proxy --HTTPS (verified, keep-alive)--> Go backend
# The proxy runs on CPU 0, wrk and the backend on CPU 1 (with 2+ CPUs), as
# in ../shared/bench/peers. Each round runs sluice then nginx; the table
# gives medians of requests per second and of the proxy's CPU time per
# request (utime+stime from /proc). Needs nginx, wrk and taskset.
#
#   host/proxy/testdata/e2etls/run.sh [ROUNDS [SECONDS]]   (or: make bench-proxy-tls)
set -euo pipefail
rounds=${1:-3}; secs=${2:-8}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../../.." && pwd)
export PATH="$PATH:/usr/sbin:/sbin"
for t in nginx wrk taskset; do command -v $t >/dev/null || { echo "e2etls: $t not found" >&2; exit 3; }; done
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
pin_server=(taskset -c 0); pin_load=(taskset -c 1)
if [ "$(nproc)" -lt 2 ]; then pin_server=(); pin_load=(); fi

(cd "$root" && go build -o "$work/sluice" ./cmd/sluice && go build -o "$work/backend" "$here/backend.go")
"$work/backend" -gen -dir "$work"
cat > "$work/sluice.hcl" <<EOC
listener "127.0.0.1:19001" {
  max_conns = 0
}
site "*" {
  listen = ["127.0.0.1:19001"]
  tls {
    cert = "$work/cert.pem"
    key  = "$work/key.pem"
  }
  route "/" {
    proxy {
      upstreams = ["https://127.0.0.1:19443"]
      tls {
        ca = "$work/cert.pem"
      }
    }
  }
}
EOC
cat > "$work/nginx.conf" <<EOC
worker_processes 1;
daemon off;
master_process off;
error_log $work/nginx-error.log warn;
pid $work/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  ssl_session_cache shared:SSL:10m;
  upstream up { server 127.0.0.1:19443; keepalive 1024; }
  server {
    listen 127.0.0.1:19001 ssl;
    ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {
      proxy_pass https://up; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_ssl_session_reuse on; proxy_ssl_verify on; proxy_ssl_trusted_certificate $work/cert.pem;
      proxy_ssl_name localhost; proxy_ssl_server_name on;
    }
  }
}
EOC

"${pin_load[@]}" "$work/backend" -addr 127.0.0.1:19443 -dir "$work" 2>"$work/backend.log" &
sleep 0.5

one() { # one server, one measured run: prints "RPS CPU_US"
	if [ "$1" = nginx ]; then
		"${pin_server[@]}" nginx -c "$work/nginx.conf" -p "$work" >"$work/nginx.log" 2>&1 &
	else
		"${pin_server[@]}" "$work/sluice" serve -c "$work/sluice.hcl" --log-level warn >"$work/sluice.log" 2>&1 &
	fi
	local pid=$!
	for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/19001) 2>/dev/null && break; sleep 0.1; done
	"${pin_load[@]}" wrk -t1 -c100 -d2s https://127.0.0.1:19001/ >/dev/null
	read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
	"${pin_load[@]}" wrk -t1 -c100 -d"${secs}s" https://127.0.0.1:19001/ >"$work/wrk.out"
	read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
	kill "$pid"; wait "$pid" 2>/dev/null || true
	if grep -q 'Non-2xx\|Socket errors' "$work/wrk.out"; then echo "e2etls: $1 answered with errors:" >&2; cat "$work/wrk.out" >&2; exit 1; fi
	local req rps tck
	req=$(awk '/requests in/{print $1}' "$work/wrk.out"); rps=$(awk '/Requests\/sec/{print $2}' "$work/wrk.out")
	tck=$(getconf CLK_TCK)
	awk -v r="$rps" -v n="$req" -v t=$((u1 - u0 + s1 - s0)) -v hz="$tck" 'BEGIN{printf "%s %.1f\n", r, t / hz * 1e6 / n}'
}

: >"$work/results"
for i in $(seq "$rounds"); do
	for s in sluice nginx; do echo "$s $(one $s)" >>"$work/results"; echo "e2etls: round $i $s: $(tail -1 "$work/results")" >&2; done
done
awk '
function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ n[$1]++; rps[$1, n[$1]] = $2; cpu[$1, n[$1]] = $3 }
END {
	for (s in n) { for (i = 1; i <= n[s]; i++) { r[i] = rps[s, i]; c[i] = cpu[s, i] }; mr[s] = median(r, n[s]); mc[s] = median(c, n[s]) }
	print "| server | req/s | x nginx | CPU per request | x nginx |"
	print "|---|--:|--:|--:|--:|"
	printf "| sluice | %.0f | %.2f | %.1f us | %.2f |\n", mr["sluice"], mr["sluice"] / mr["nginx"], mc["sluice"], mc["sluice"] / mc["nginx"]
	printf "| nginx | %.0f | 1.00 | %.1f us | 1.00 |\n", mr["nginx"], mc["nginx"]
}' "$work/results"

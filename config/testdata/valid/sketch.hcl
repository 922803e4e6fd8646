admin {
  listen = "127.0.0.1:2019"                  # /metrics, /healthz, /readyz, POST /reload, /config, /filters
}

telemetry {
  service_name = "sluice"
  traces {
    endpoint     = "http://127.0.0.1:4318"
    sample_ratio = 0.1
  }
  metrics {
    prometheus = true                        # served on admin /metrics
  }
  access_log {
    format = "json"                          # or "clf"
    output = "stderr"                        # or a file path
  }
}

filter "apikey" {
  module  = "filters/keyauth.wasm"           # hot-swapped when the file changes
  config  = { header = "apikey", keys = [env("API_KEY")] }
  timeout = "10ms"                           # per invocation
  memory  = "16MiB"                          # per instance
}

site "example.com" {
  aliases        = ["www.example.com"]
  listen         = [":8443"]
  https_redirect = [":8080"]                 # plain listeners that redirect to https
  tls {
    cert = "cert.pem"
    key  = "key.pem"
  }                                          # or: tls { acme { email = "ops@example.com" } }

  route "/api/" {
    filters = ["apikey"]
    proxy {
      upstreams = ["http://127.0.0.1:9001", "http://127.0.0.1:9002"]
      balance   = "least_conn"               # round_robin, least_conn, random_two, ip_hash, header_hash, cookie
      timeout   = "30s"                      # whole request; dial_timeout etc. for the parts
      health {
        path     = "/health"
        interval = "5s"
      }
    }
  }

  route "/" {
    static {
      root          = "./public"
      browse        = true
      precompressed = ["br", "zstd", "gzip"]
      compress      = ["zstd", "br", "gzip"]
      fallback      = "/index.html"          # single-page apps
    }
  }
}

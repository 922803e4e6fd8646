// Every telemetry setting.
telemetry {
  service_name = "edge-eu-1"

  traces {
    endpoint     = "https://otel.example.com:4317"
    protocol     = "grpc"
    headers      = { "x-honeycomb-team" = "not-a-real-key" }
    sample_ratio = 0.25
  }

  metrics {
    prometheus = false
    endpoint   = "https://otel.example.com:4318"
    protocol   = "http/protobuf"
    headers    = { "x-honeycomb-team" = "not-a-real-key" }
    interval   = "15s"
  }

  logs {
    endpoint = "https://otel.example.com:4317"
    protocol = "grpc"
    headers  = { "x-honeycomb-team" = "not-a-real-key" }
    level    = "warn"
  }

  access_log {
    format = "clf"
    output = "logs/access.log"
    fields = ["host", "site", "route", "duration", "trace_id", "span_id", "request_id", "consumer",
    "upstream_addr", "upstream_status", "upstream_duration", "tls_version", "tls_cipher", "tls_server_name"]
  }
}

site "*" {
  route "/" {
    static {
      root = "public"
    }
  }
}

# Several instances share one Redis: rate limits count across all of
# them, and ACME certificates are ordered once for all.
store "redis" {
  address  = "redis.internal:6379"
  username = "sluice"
  password = "literal-store-password"
  prefix   = "edge:"
  timeout  = "100ms"
  required = true
  tls {
    ca          = "cert.pem"
    server_name = "redis.internal"
  }
}

site "_" {
  listen = [":9090"]

  route "/api/" {
    rate_limit {
      rate           = "100/s"
      on_store_error = "deny"
    }
    respond {
      body = "api"
    }
  }

  route "/" {
    rate_limit {
      rate = "10/s"
    }
    respond {
      body = "elsewhere"
    }
  }
}

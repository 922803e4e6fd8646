# Every proxy attribute and block.
site "api.example.com" {
  route "/v1" {
    proxy {
      upstreams = ["http://127.0.0.1:9001", "h2c://127.0.0.1:9003"]
      upstream "https://backend.internal:8443" {
        weight = 3
      }

      balance                 = "cookie"
      cookie                  = "pin"
      timeout                 = "2m"
      dial_timeout            = "1s"
      tls_handshake_timeout   = "2s"
      response_header_timeout = "10s"
      idle_timeout            = "30s"
      max_idle_conns          = 64
      max_conns               = 1000
      tries                   = 2
      try_duration            = "500ms"
      buffering               = true
      max_body                = "100MB"
      strip_prefix            = "/v1"
      host_header             = "keep"
      trusted_proxies         = ["10.0.0.0/8", "192.168.1.1", "2001:db8::/32"]

      health {
        path          = "/healthz"
        interval      = "10s"
        timeout       = "1s"
        expect_status = 204
        rise          = 1
        fall          = 5
      }

      passive_health {
        max_fails    = 5
        fail_timeout = "1m"
      }

      tls {
        ca          = "certs/ca.pem"
        server_name = "backend.internal"
        cert        = "cert.pem"
        key         = "key.pem"
      }

      header_up {
        set    = { "X-Real-IP" = "{client_ip}", "Authorization" = "Bearer not-a-real-token" }
        add    = { "X-Via" = "sluice" }
        remove = ["Cookie"]
      }

      header_down {
        remove = ["Server", "X-Powered-By"]
      }
    }
  }

  route "/v2/" {
    proxy {
      upstreams   = ["http://127.0.0.1:9101"]
      balance     = "header_hash"
      hash_header = "X-Tenant"
      host_header = "v2.backend.internal"
    }
  }
}

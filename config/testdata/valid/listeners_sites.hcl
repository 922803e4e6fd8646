# Server and listener settings, an admin token, several sites on one
# listener with aliases and an explicit default.
admin {
  listen = "127.0.0.1:2020"
  token  = env("SLUICE_TEST_ADMIN_TOKEN", "changeme")
}

server {
  shutdown_timeout = "10s"
  shutdown_delay   = "3s"
  cache_dir        = "cache"
}

listener ":8080" {
  read_timeout        = "30s"
  read_header_timeout = "5s"
  write_timeout       = "0s"
  idle_timeout        = "5m"
  max_header_bytes    = "32KiB"
  max_request_body    = "0B"
  max_conns           = 0
  h2c                 = true
  http2_engine        = "std"
}

site "a.example" {
  aliases = ["A.example.org", "*.a.example"]

  route "/" {
    static {
      root = "public"
    }
  }
}

site "b.example" {
  listen  = [":8080", "[::1]:8081"]
  default = true

  route "/" {
    respond {
      body = "b"
    }
  }
}

site "localhost" {
  listen = ["localhost:8082"]

  route "/" {
    respond {
      body = "local"
    }
  }
}

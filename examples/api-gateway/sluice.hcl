# An API gateway on http://127.0.0.1:8080 in front of one backend on
# 127.0.0.1:9000 (start any HTTP server there): API keys on /api/keys/,
# JSON Web Tokens on /api/jwt/, a per-consumer rate limit, and an admin
# path open only to some addresses.
#
#   python3 -m http.server 9000 &
#   sluice serve -c sluice.hcl
#   curl -i -H 'X-API-Key: dev-key-alice' http://127.0.0.1:8080/api/keys/

admin {
  listen = "127.0.0.1:2019"
}

# API keys, one per consumer. The consumer's name goes upstream in
# X-Consumer; the key itself does not (hide_credentials).
filter "keyauth" {
  module = "../../filters/keyauth/keyauth.wasm"
  config = {
    keys = {
      alice = env("ALICE_API_KEY", "dev-key-alice")
      bob   = env("BOB_API_KEY", "dev-key-bob")
    }
    hide_credentials = true
  }
}

# HS256 tokens from an identity provider that shares the secret. The
# subject and roles go upstream in X-User and X-Roles.
filter "jwt" {
  module = "../../filters/jwt/jwt.wasm"
  memory = "32MiB"
  config = {
    keys     = [{ secret = env("JWT_SECRET", "dev-secret-change-me") }]
    issuer   = "https://auth.example.com/"
    audience = "api"
    claims_to_headers = {
      sub   = "X-User"
      roles = "X-Roles"
    }
  }
  pool {
    size = 4
  }
}

site "localhost" {
  aliases = ["127.0.0.1"]
  listen  = ["127.0.0.1:8080"]

  route "/api/keys/" {
    filters = ["keyauth"]
    # After the filter, so each consumer has a bucket of its own.
    rate_limit {
      rate  = "60/m"
      burst = 5
      key   = "consumer"
    }
    proxy {
      upstreams    = ["http://127.0.0.1:9000"]
      strip_prefix = "/api/keys"
    }
  }

  route "/api/jwt/" {
    filters = ["jwt"]
    proxy {
      upstreams    = ["http://127.0.0.1:9000"]
      strip_prefix = "/api/jwt"
    }
  }

  # The backend's own admin pages: this machine and the office network,
  # less its guest Wi-Fi. Anyone else gets 403.
  route "/admin/" {
    allow = ["127.0.0.1", "::1", "10.1.0.0/16"]
    deny  = ["10.1.99.0/24"]
    proxy {
      upstreams = ["http://127.0.0.1:9000"]
    }
  }

  route "/" {
    respond {
      status  = 404
      body    = "{\"error\":\"no such API\"}\n"
      headers = { "Content-Type" = "application/json" }
    }
  }
}

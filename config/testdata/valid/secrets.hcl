# Secrets: /config shows none of them (see TestSecretsRedacted). Values
# from env() and file(), whole or in part, a key in the query of the
# traces endpoint, user info in the ACME directory, credentials in
# header_up, a key in a health check's query. The env() defaults are for sluice validate (cmd/sluice).
admin {
  token = env("SLUICE_TEST_ADMIN_SECRET", "default-admin-token")
}

telemetry {
  traces {
    endpoint = "https://collector.example.com:4318/v1/traces?api_key=query-secret-key"
    headers  = { "x-api-key" = env("SLUICE_TEST_API_KEY", "default-api-key") }
  }
}

site "api.example.com" {
  tls {
    acme {
      email     = "ops@example.com"
      directory = "https://acme-user:acme-secret-password@acme.example.com/directory"
    }
  }
  route "/" {
    proxy {
      upstreams   = ["http://127.0.0.1:9000"]
      host_header = env("SLUICE_TEST_UPSTREAM_HOST", "default.internal")
      header_up {
        set = {
          "Authorization" = "Bearer ${trimspace(file("secret-token.txt"))}"
          "X-Tenant"      = "plain-header-value"
        }
      }
      health {
        path = "/healthz?key=health-secret-key"
      }
    }
  }
  route "/hello" {
    respond {
      body = "hello ${env("SLUICE_TEST_API_KEY", "default-api-key")}"
    }
  }
}

# ACME certificates, client certificates, HSTS, redirects and HTTP/3.
listener ":8443" {
  http3 = true
}

site "shop.example.com" {
  aliases        = ["www.shop.example.com"]
  https_redirect = [":8080"]
  hsts           = "max-age=63072000; includeSubDomains"

  tls {
    min_version = "1.3"
    acme {
      email      = "ops@example.com"
      directory  = "https://acme-staging-v02.api.letsencrypt.org/directory"
      challenges = ["http-01"]
      storage    = "acme"
    }
  }

  route "/" {
    static {
      root = "public"
    }
  }
}

site "admin.example.com" {
  tls {
    cert        = "cert.pem"
    key         = "key.pem"
    client_auth = "require"
    client_ca   = "certs/ca.pem"
  }

  route "/" {
    proxy {
      upstreams = ["http://127.0.0.1:7000"]
    }
  }
}

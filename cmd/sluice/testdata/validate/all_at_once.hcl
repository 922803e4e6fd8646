/* Every problem is reported at once, not the first one only: a module
   that does not compile, a `ca` that is not PEM, and a key that is not
   its certificate's. */
filter "broken" {
  module = "broken.wasm"
}

site "secure.test" {
  listen = ["127.0.0.1:8443"]
  tls {
    cert = "cert.pem"
    key  = "other-key.pem"
  }
  route "/" {
    filters = ["broken"]
    proxy {
      upstreams = ["https://127.0.0.1:9443"]
      tls {
        ca = "not-pem.txt"
      }
    }
  }
}

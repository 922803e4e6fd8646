/* Certificates that do not match their keys, on a site and on a proxy's
   client certificate: both are reported, each at its `key`. */
site "secure.test" {
  listen = ["127.0.0.1:8443"]
  tls {
    cert = "cert.pem"
    key  = "other-key.pem"
  }
  route "/" {
    proxy {
      upstreams = ["https://127.0.0.1:9443"]
      tls {
        cert = "cert.pem"
        key  = "other-key.pem"
      }
    }
  }
}

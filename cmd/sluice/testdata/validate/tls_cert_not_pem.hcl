/* A site's `cert` that is not PEM is reported at `cert`. */
site "secure.test" {
  listen = ["127.0.0.1:8443"]
  tls {
    cert = "not-pem.txt"
    key  = "key.pem"
  }
  route "/" {
    respond {}
  }
}

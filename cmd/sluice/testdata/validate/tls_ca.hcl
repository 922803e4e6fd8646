/* A proxy's `ca` that holds no PEM certificate: validate builds the
   proxy as serve would and points at the attribute. */
site "*" {
  route "/" {
    proxy {
      upstreams = ["https://127.0.0.1:9443"]
      tls {
        ca = "not-pem.txt"
      }
    }
  }
}

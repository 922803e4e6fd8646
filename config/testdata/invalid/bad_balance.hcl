site "*" {
  route "/" {
    proxy {
      upstreams = ["http://127.0.0.1:9000"]
      balance   = "least_connections"
    }
  }
}

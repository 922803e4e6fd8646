site "*" {
  route "/" {
    proxy {
      upstreams    = ["http://127.0.0.1:9000"]
      dial_timeout = "5 seconds"
    }
  }
}

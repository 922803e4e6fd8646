site "*" {
  route "/" {
    proxy {
      upstreams = ["ftp://127.0.0.1:21", "127.0.0.1:9000", "http://127.0.0.1:9000/app"]
      upstream "ws://127.0.0.1:9001" {
        weight = 0
      }
    }
  }
}

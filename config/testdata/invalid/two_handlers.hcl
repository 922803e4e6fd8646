site "*" {
  route "/" {
    static {
      root = "."
    }
    proxy {
      upstreams = ["http://127.0.0.1:9000"]
    }
  }
}

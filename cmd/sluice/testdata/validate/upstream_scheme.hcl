/* An upstream URL whose scheme the proxy does not speak. */
site "*" {
  route "/" {
    proxy {
      upstreams = ["ftp://127.0.0.1:21"]
    }
  }
}

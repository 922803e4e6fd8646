site "*" {
  route "/" {
    static {
      root   = "."
      browse = "yes"
      index  = "index.html"
    }
  }
}

site "*" {
  route "/" {
    static {
      root     = "."
      fallback = "/index.html"
    }
  }
}

site "*" {
  route "/" {
    static {
      root = "."
    }
  }

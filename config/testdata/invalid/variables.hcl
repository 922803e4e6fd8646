site "*" {
  route "/" {
    static {
      root = var.root
    }
  }
}

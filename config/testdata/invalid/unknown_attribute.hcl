site "*" {
  route "/" {
    static {
      rooot = "."
    }
  }
}

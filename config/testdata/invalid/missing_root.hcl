site "*" {
  route "/" {
    static {
      root = "./public-does-not-exist"
    }
  }
}

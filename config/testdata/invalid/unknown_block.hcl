sites "example.com" {
  route "/" {
    static {
      root = "."
    }
  }
}

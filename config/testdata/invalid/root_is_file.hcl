site "*" {
  route "/" {
    static {
      root = "afile.txt"
    }
  }
}

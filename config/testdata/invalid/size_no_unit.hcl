site "*" {
  route "/" {
    static {
      root              = "."
      compress_min_size = "1024"
    }
  }
}

# The smallest useful config: every name, port 8080, files from public/.
site "*" {
  route "/" {
    static {
      root = "public"
    }
  }
}

site "*" {
  listen = ["8080", "localhost"]
  route "/" {
    respond {}
  }
}

site "*" {
  listen = [":0", "127.0.0.1:70000"]
  route "/" {
    respond {}
  }
}

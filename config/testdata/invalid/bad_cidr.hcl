site "*" {
  route "/" {
    allow = ["10.0.0.0/33", "localhost"]
    respond {}
  }
}

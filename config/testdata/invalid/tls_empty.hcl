site "example.com" {
  tls {}
  route "/" {
    respond {}
  }
}

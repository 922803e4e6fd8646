site "*" {
  tls {
    acme {
      email = "ops@example.com"
    }
  }
  route "/" {
    respond {}
  }
}

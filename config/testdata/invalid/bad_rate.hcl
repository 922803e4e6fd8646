site "*" {
  route "/a" {
    rate_limit {
      rate = "100/sec"
    }
    respond {}
  }
  route "/b" {
    rate_limit {
      rate = 100
      key  = "client-ip"
    }
    respond {}
  }
}

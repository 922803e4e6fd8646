site "*" {
  route "api/" {
    respond {}
  }
}

listener ":8080" {
  http3 = true
}

site "*" {
  route "/" {
    respond {}
  }
}

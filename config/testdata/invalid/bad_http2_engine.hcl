listener ":8080" {
  http2_engine = "fast"
}
site "*" {
  route "/" {
    respond {}
  }
}

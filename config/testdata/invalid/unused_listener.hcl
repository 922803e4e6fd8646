listener ":8081" {
  idle_timeout = "30s"
}

site "*" {
  route "/" {
    respond {}
  }
}

server {
  shutdown_timeout = "30"
}

site "*" {
  route "/" {
    respond {}
  }
}

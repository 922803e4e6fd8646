admin {
  listen      = "unix/"
  socket_mode = "0600"
}

site "*" {
  route "/" {
    respond {}
  }
}

admin {
  listen      = "127.0.0.1:2019"
  socket_mode = "0600"
}

site "*" {
  route "/" {
    respond {}
  }
}

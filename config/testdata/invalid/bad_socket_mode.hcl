admin {
  listen      = "unix//run/sluice/admin.sock"
  socket_mode = "0999"
}

site "*" {
  route "/" {
    respond {}
  }
}

admin {
  listen      = "unix//run/sluice/admin.sock"
  socket_mode = "0660"
}

site "*" {
  route "/" {
    respond {}
  }
}

admin {}

admin {
  listen = "127.0.0.1:2020"
}

site "*" {
  route "/" {
    respond {}
  }
}

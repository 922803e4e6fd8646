admin {
  listen = "127.0.0.1:2019"
}

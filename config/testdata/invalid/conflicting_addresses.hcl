admin {
  listen = ":8080"
}

site "*" {
  listen = ["127.0.0.1:8080"]
  route "/" {
    respond {}
  }
}

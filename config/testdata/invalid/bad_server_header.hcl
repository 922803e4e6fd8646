server {
  server_header = "sluice\r\nX-Evil: 1"
}

site "a.test" {
  listen = ["127.0.0.1:8080"]
  route "/" {
    respond {}
  }
}

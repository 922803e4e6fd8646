listener ":8080" {
  idle_timeout     = "-5s"
  max_header_bytes = "-1KiB"
}

site "*" {
  route "/" {
    respond {}
  }
}

listener ":8080" {
  max_request_body = "16mb"
}

site "*" {
  route "/" {
    respond {}
  }
}

site "example.com" {
  https_redirect = [":8080"]
  listen         = [":8081"]
  route "/" {
    respond {}
  }
}

site "example.com" {
  listen = [":8080"]
}

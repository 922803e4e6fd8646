site "example.com:8080" {
  route "/" {
    respond {}
  }
}

site "https://example.org" {
  route "/" {
    respond {}
  }
}

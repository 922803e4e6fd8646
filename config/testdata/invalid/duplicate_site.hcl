site "example.com" {
  route "/" {
    respond {}
  }
}

site "Example.COM" {
  route "/" {
    respond {}
  }
}

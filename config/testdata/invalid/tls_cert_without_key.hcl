site "example.com" {
  tls {
    cert = "afile.txt"
  }
  route "/" {
    respond {}
  }
}

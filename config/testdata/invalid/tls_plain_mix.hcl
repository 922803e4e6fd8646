site "secure.example" {
  tls {
    cert = "afile.txt"
    key  = "afile.txt"
  }
  route "/" {
    respond {}
  }
}

site "plain.example" {
  listen = [":8443"]
  route "/" {
    respond {}
  }
}

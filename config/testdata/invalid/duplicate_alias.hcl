site "example.com" {
  aliases = ["www.example.com"]
  route "/" {
    respond {}
  }
}

site "other.example" {
  aliases = ["static.example.com", "WWW.example.com"]
  route "/" {
    respond {}
  }
}

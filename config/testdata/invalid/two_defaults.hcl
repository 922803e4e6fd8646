site "a.example" {
  default = true
  route "/" {
    respond {}
  }
}

site "b.example" {
  default = true
  route "/" {
    respond {}
  }
}

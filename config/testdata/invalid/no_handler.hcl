site "*" {
  route "/" {
    filters = []
  }
}

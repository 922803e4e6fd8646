site "*" {
  route "/" {
    respond {
      body = file("missing.txt")
    }
  }
}

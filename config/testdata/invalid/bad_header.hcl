site "*" {
  route "/" {
    respond {
      headers = { "Bad Header" = "x" }
    }
  }
}

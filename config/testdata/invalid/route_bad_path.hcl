site "*" {
  route "/a/../b" {
    respond {}
  }
  route "/c//d" {
    respond {}
  }
  route "/e?x=1" {
    respond {}
  }
}

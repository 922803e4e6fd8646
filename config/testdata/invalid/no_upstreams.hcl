site "*" {
  route "/" {
    proxy {
      balance = "random_two"
    }
  }
}

filter "auth" {
  timeout = "10ms"
}

site "*" {
  route "/" {
    filters = ["auth"]
    static {
      browse = true
    }
  }
}

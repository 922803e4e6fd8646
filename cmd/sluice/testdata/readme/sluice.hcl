site "example.com" {
  listen = [":8080"]

  route "/" {
    static {
      browse = true
      roots  = "./public"
    }
  }
}

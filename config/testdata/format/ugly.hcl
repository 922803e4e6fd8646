site "*" {
listen=[":8080"]
    route "/" {
  static {
        root="public"
   browse   =   true
  }
    }
}

filter "auth" {
  module = "filters/keyauth.wasm"
  memory = 16777216
}

site "*" {
  route "/" {
    filters = ["auth"]
    respond {}
  }
}

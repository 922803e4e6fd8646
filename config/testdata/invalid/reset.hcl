filter "fresh" {
  module = "filters/keyauth.wasm"
  reset  = "requests"
}

site "*" {
  route "/" {
    filters = ["fresh"]
    respond {}
  }
}

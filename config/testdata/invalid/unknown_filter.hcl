filter "apikey" {
  module = "filters/keyauth.wasm"
}

filter "cors" {
  module = "filters/keyauth.wasm"
}

site "*" {
  route "/" {
    filters = ["cors", "api_key", "nope"]
    respond {}
  }
}

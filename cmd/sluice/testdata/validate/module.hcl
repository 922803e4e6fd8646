/* A filter module that is not WebAssembly: reported at `module`. */
filter "broken" {
  module = "broken.wasm"
}

site "*" {
  route "/" {
    filters = ["broken"]
    respond {}
  }
}

/* A filter module that is not WebAssembly (broken.wasm is a line of
   text): reported at `module`. */
filter "broken" {
  module = "broken.wasm"
}

site "*" {
  route "/" {
    filters = ["broken"]
    respond {}
  }
}

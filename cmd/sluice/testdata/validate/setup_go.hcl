/* A Go filter rejects an unknown config field: the guest's message is the
   error, followed once by what it wrote to stderr (its panic). */
filter "debug-gate" {
  module = "../../../../filters/basicauth/basicauth.wasm"
  config = {
    tokn = "x"
  }
  pool {
    size = 4
  }
}

site "*" {
  route "/" {
    filters = ["debug-gate"]
    respond {}
  }
}

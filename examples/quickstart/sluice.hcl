# The quickstart: a static site on http://127.0.0.1:8080.
#   make run            (from the repository root)
#   sluice serve -c sluice.hcl

admin {
  listen = "127.0.0.1:2019"
}

site "localhost" {
  aliases = ["127.0.0.1"]
  listen  = ["127.0.0.1:8080"]

  route "/" {
    static {
      root     = "./public"
      compress = ["zstd", "br", "gzip"]
    }
  }
}

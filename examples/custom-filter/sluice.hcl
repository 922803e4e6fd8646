# The custom-filter example: one small filter (add a header from config,
# answer 403 under a path prefix) written in Go, C, AssemblyScript and
# Rust. Each route runs one of them in front of the same upstream.
#
#   make wasm                      (rebuild the four filter.wasm)
#   python3 -m http.server 9000 &  (any upstream on :9000)
#   sluice serve -c sluice.hcl
#   curl -i localhost:8080/c/hello          # upstream sees X-Example: from c
#   curl -i localhost:8080/c/private/x      # 403 from the filter

filter "example-go" {
  module = "go/filter.wasm"
  config = { header = "X-Example", value = "from go", deny_prefix = "/go/private/" }
}

filter "example-c" {
  module = "c/filter.wasm"
  config = { header = "X-Example", value = "from c", deny_prefix = "/c/private/" }
}

filter "example-assemblyscript" {
  module = "assemblyscript/filter.wasm"
  config = { header = "X-Example", value = "from assemblyscript", deny_prefix = "/as/private/" }
}

filter "example-rust" {
  module = "rust/filter.wasm"
  config = { header = "X-Example", value = "from rust", deny_prefix = "/rust/private/" }
}

site "localhost" {
  aliases = ["127.0.0.1"]
  listen  = ["127.0.0.1:8080"]

  route "/go/" {
    filters = ["example-go"]
    proxy {
      upstreams = ["http://127.0.0.1:9000"]
    }
  }

  route "/c/" {
    filters = ["example-c"]
    proxy {
      upstreams = ["http://127.0.0.1:9000"]
    }
  }

  route "/as/" {
    filters = ["example-assemblyscript"]
    proxy {
      upstreams = ["http://127.0.0.1:9000"]
    }
  }

  route "/rust/" {
    filters = ["example-rust"]
    proxy {
      upstreams = ["http://127.0.0.1:9000"]
    }
  }

  route "/" {
    respond {
      status = 200
      body   = "ok"
    }
  }
}

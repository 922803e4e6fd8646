store "memcached" {
  address = "127.0.0.1"
  timeout = "0s"
  passwd  = "x"
}

store "redis" {
  address = "127.0.0.1:6379"
}

site "_" {
  route "/" {
    rate_limit {
      rate           = "1/s"
      on_store_error = "fail"
    }
    respond {}
  }
}

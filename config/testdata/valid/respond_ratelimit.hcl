# Fixed responses, rate limits and IP allow/deny lists.
site "_" {
  listen = [":9090"]

  route "/healthz" {
    respond {
      status  = 200
      body    = "ok\n"
      headers = { "Content-Type" = "text/plain; charset=utf-8" }
    }
  }

  route "/internal/" {
    allow = ["10.0.0.0/8", "127.0.0.1", "::1"]
    deny  = ["10.0.0.13"]
    respond {
      status = 204
    }
  }

  route "/" {
    rate_limit {
      rate     = "6000/m"
      burst    = 50
      key      = "header:X-Api-Key"
      max_keys = 5000
    }
    respond {
      status = 404
      body   = "nothing here"
    }
  }

  route "/slow" {
    rate_limit {
      rate = "0.5/s"
    }
    respond {
      body = "slow down"
    }
  }
}

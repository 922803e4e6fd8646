site "*" {
  route "/api/" {
    respond {
      body = "one"
    }
  }

  route "/api/" {
    respond {
      body = "two"
    }
  }
}

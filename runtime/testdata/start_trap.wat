;; start_trap traps in _start, so no instance of it can ever start.
(module
  (memory (export "memory") 1)
  (func (export "_start") (unreachable))
  (func (export "handle_request") (result i64) (i64.const 1))
  (func (export "handle_response") (param i32 i32)))

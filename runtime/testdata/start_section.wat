;; start_section has a Wasm start function, which runs while the module is
;; instantiated, and loops forever in handle_request like loop.
(module
  (memory (export "memory") 1)
  (func $init)
  (start $init)
  (func (export "handle_request") (result i64)
    (loop $forever (br $forever))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)))

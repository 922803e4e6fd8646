;; wasifile opens the file "f" in the preopened directory (fd 3) with
;; WASI path_open in its start-up, when its config is 4 bytes long
;; ("open"), and keeps it open. handle_request sets the response header "x-errno" to '0'+ the
;; errno path_open returned, or 'n' when the start-up did not open it.
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "http_handler" "get_config" (func $get_config (param i32 i32) (result i32)))
  (import "http_handler" "set_header_value" (func $set_header_value (param i32 i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "x-errno")
  (data (i32.const 16) "f")
  (data (i32.const 32) "n")
  (func (export "_initialize")
    (if (i32.eq (call $get_config (i32.const 64) (i32.const 8)) (i32.const 4))
      (then
        (i32.store8 (i32.const 32)
          (i32.add (i32.const 48)
            (call $path_open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 1)
              (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 48)))))))
  (func (export "handle_request") (result i64)
    (call $set_header_value (i32.const 1) (i32.const 0) (i32.const 7) (i32.const 32) (i32.const 1))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)))

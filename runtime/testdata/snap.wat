;; snap keeps state the way real guests do, for the tests of instance
;; snapshots. Its start-up (_initialize) copies the config (get_config)
;; to memory at 1024, sets the global $seed, which it does not export, to
;; 7, and zeroes the data segment "dirty" at 4096. handle_request traps
;; when the URI is "/trap" and grows memory by a page when it is "/grow";
;; then it counts the request in a global and in memory and sets the
;; response header "x-state" to five characters: the seed, the count in
;; the global and the count in memory (each as '0'+n%10), 'z' when the byte
;; at 4096 is zero ('d' when not), and the first byte of the config. It
;; continues to the next handler.
(module
  (import "http_handler" "get_config" (func $get_config (param i32 i32) (result i32)))
  (import "http_handler" "get_uri" (func $get_uri (param i32 i32) (result i32)))
  (import "http_handler" "set_header_value" (func $set_header_value (param i32 i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (global $seed (mut i32) (i32.const 0))
  (global $count (mut i32) (i32.const 0))
  (data (i32.const 0) "x-state")
  (data (i32.const 4096) "dirty")
  (func (export "_initialize")
    (global.set $seed (i32.const 7))
    (i64.store (i32.const 4096) (i64.const 0))
    (drop (call $get_config (i32.const 1024) (i32.const 64))))
  (func $uri (param $c i32) (result i32) ;; the URI is "/" followed by $c and 3 more bytes
    (i32.and
      (i32.eq (call $get_uri (i32.const 2048) (i32.const 64)) (i32.const 5))
      (i32.eq (i32.load8_u (i32.const 2049)) (local.get $c))))
  (func (export "handle_request") (result i64)
    (if (call $uri (i32.const 116)) (then unreachable)) ;; "/trap"
    (if (call $uri (i32.const 103)) (then (drop (memory.grow (i32.const 1))))) ;; "/grow"
    (global.set $count (i32.add (global.get $count) (i32.const 1)))
    (i32.store (i32.const 512) (i32.add (i32.load (i32.const 512)) (i32.const 1)))
    (i32.store8 (i32.const 16) (i32.add (global.get $seed) (i32.const 48)))
    (i32.store8 (i32.const 17) (i32.add (i32.rem_u (global.get $count) (i32.const 10)) (i32.const 48)))
    (i32.store8 (i32.const 18) (i32.add (i32.rem_u (i32.load (i32.const 512)) (i32.const 10)) (i32.const 48)))
    (i32.store8 (i32.const 19) (select (i32.const 122) (i32.const 100) (i32.eqz (i32.load8_u (i32.const 4096)))))
    (i32.store8 (i32.const 20) (i32.load8_u (i32.const 1024)))
    (call $set_header_value (i32.const 1) (i32.const 0) (i32.const 7) (i32.const 16) (i32.const 5))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)))

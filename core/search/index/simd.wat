;; WebAssembly SIMD kernels for the vector scan over int8 rows (see simd.ts). Built into simd.wasm.ts by
;; `deno task wasm:build`; `deno task wasm:build --check` (also a test) fails when that file is not the
;; build of this one. The build also makes a second module whose memory import is shared (threads
;; proposal), so a helper thread can scan part of the same rows: the one `(memory 1)` import below
;; becomes `(memory 1 65536 shared)`.
(module
  (type $scan (func (param i32 i32 i32 i32 i32 i32 i32 f32 f32)))
  (type $blockMax (func (param i32 i32 i32)))
  (import "env" "memory" (memory 1))
  (func (export "scan") (type $scan)
    ;; For each of n rows of `stride` int8 components at m: the exact integer dot product with the
    ;; int16 query at q (sixteen components per step), then out[r] = dot * a[r] * alpha - b[r] * beta.
    ;; `stride` is a multiple of 16 (callers pad rows with zeros). No overflow: each i32 lane sums
    ;; stride / 4 products of at most 127 x 32767.
    (param $q i32) (param $m i32) (param $n i32) (param $stride i32)
    (param $a i32) (param $b i32) (param $out i32) (param $alpha f32) (param $beta f32)
    (local $r i32) (local $j i32) (local $acc v128) (local $v v128)
    block $rows_done
      loop $rows
        ;; if r >= n: done
        local.get $r
        local.get $n
        i32.ge_u
        br_if $rows_done
        v128.const i32x4 0 0 0 0
        local.set $acc
        i32.const 0
        local.set $j
        block $row_done
          loop $steps
            ;; if j >= stride: the row is done
            local.get $j
            local.get $stride
            i32.ge_u
            br_if $row_done
            ;; v = 16 x i8 of the row, at m + j
            local.get $m
            local.get $j
            i32.add
            v128.load
            local.set $v
            ;; acc += dot(extend_low(v), 8 x i16 of the query at q + 2j)
            local.get $acc
            local.get $v
            i16x8.extend_low_i8x16_s
            local.get $q
            local.get $j
            i32.const 1
            i32.shl
            i32.add
            v128.load
            i32x4.dot_i16x8_s
            i32x4.add
            local.set $acc
            ;; acc += dot(extend_high(v), 8 x i16 of the query at q + 2j + 16)
            local.get $acc
            local.get $v
            i16x8.extend_high_i8x16_s
            local.get $q
            local.get $j
            i32.const 1
            i32.shl
            i32.add
            v128.load offset=16
            i32x4.dot_i16x8_s
            i32x4.add
            local.set $acc
            ;; j += 16
            local.get $j
            i32.const 16
            i32.add
            local.set $j
            br $steps
          end
        end
        ;; out[r] = f32(sum of acc's lanes) * a[r] * alpha - b[r] * beta
        local.get $out
        local.get $r
        i32.const 2
        i32.shl
        i32.add
        local.get $acc
        i32x4.extract_lane 0
        local.get $acc
        i32x4.extract_lane 1
        i32.add
        local.get $acc
        i32x4.extract_lane 2
        i32.add
        local.get $acc
        i32x4.extract_lane 3
        i32.add
        f32.convert_i32_s
        local.get $a
        local.get $r
        i32.const 2
        i32.shl
        i32.add
        f32.load
        f32.mul
        local.get $alpha
        f32.mul
        local.get $b
        local.get $r
        i32.const 2
        i32.shl
        i32.add
        f32.load
        local.get $beta
        f32.mul
        f32.sub
        f32.store
        ;; m += stride; r += 1
        local.get $m
        local.get $stride
        i32.add
        local.set $m
        local.get $r
        i32.const 1
        i32.add
        local.set $r
        br $rows
      end
    end
  )
  (func (export "blockMax") (type $blockMax)
    ;; The maximum of each of `blocks` blocks of 64 floats at src (the scan's cosines), written to dst:
    ;; sixteen f32x4 loads and maxima per block, then the maximum of the four lanes.
    (param $src i32) (param $blocks i32) (param $dst i32)
    (local $i i32) (local $acc v128)
    block $done
      loop $blocks
        ;; if i >= blocks: done
        local.get $i
        local.get $blocks
        i32.ge_u
        br_if $done
        ;; acc = lane-wise maximum of the block's sixteen f32x4
        local.get $src
        v128.load
        local.get $src
        v128.load offset=16
        f32x4.max
        local.get $src
        v128.load offset=32
        f32x4.max
        local.get $src
        v128.load offset=48
        f32x4.max
        local.get $src
        v128.load offset=64
        f32x4.max
        local.get $src
        v128.load offset=80
        f32x4.max
        local.get $src
        v128.load offset=96
        f32x4.max
        local.get $src
        v128.load offset=112
        f32x4.max
        local.get $src
        v128.load offset=128
        f32x4.max
        local.get $src
        v128.load offset=144
        f32x4.max
        local.get $src
        v128.load offset=160
        f32x4.max
        local.get $src
        v128.load offset=176
        f32x4.max
        local.get $src
        v128.load offset=192
        f32x4.max
        local.get $src
        v128.load offset=208
        f32x4.max
        local.get $src
        v128.load offset=224
        f32x4.max
        local.get $src
        v128.load offset=240
        f32x4.max
        local.set $acc
        ;; dst[i] = maximum of acc's lanes
        local.get $dst
        local.get $acc
        f32x4.extract_lane 0
        local.get $acc
        f32x4.extract_lane 1
        f32.max
        local.get $acc
        f32x4.extract_lane 2
        f32.max
        local.get $acc
        f32x4.extract_lane 3
        f32.max
        f32.store
        ;; src += 256 (one block); dst += 4; i += 1
        local.get $src
        i32.const 256
        i32.add
        local.set $src
        local.get $dst
        i32.const 4
        i32.add
        local.set $dst
        local.get $i
        i32.const 1
        i32.add
        local.set $i
        br $blocks
      end
    end
  )
)

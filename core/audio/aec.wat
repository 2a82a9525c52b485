;; Partitioned complex loops of the echo canceller's adaptive filter (core/audio/aec_mdf.ts), four
;; bins per instruction (WebAssembly SIMD, f32x4). Source of core/audio/aec_wasm.ts: `deno task
;; wasm` rebuilds it and tests/aec_kernel_test.ts fails when the two drift apart.
;;
;; Memory is imported: each filter owns one (core/audio/aec_kernel.ts lays it out), so its state
;; stays in place between blocks and nothing is copied in or out. Spectra are rows of `stride`
;; f32 (the bins padded with zeros to a multiple of 4, every row 16-byte aligned); a ring of `k`
;; rows holds the reference spectra, newest at row `head`, and filter partition p pairs with the
;; reference p blocks back, row (head - p) mod k. All addresses are in bytes, counts in rows or
;; floats.
(module
  (import "env" "memory" (memory 1))

  ;; Byte offset of the reference row that pairs with partition $p.
  (func $ring (param $head i32) (param $p i32) (param $k i32) (param $rowBytes i32) (result i32)
    (local $r i32)
    (local.set $r (i32.sub (local.get $head) (local.get $p)))
    (if (i32.lt_s (local.get $r) (i32.const 0))
      (then (local.set $r (i32.add (local.get $r) (local.get $k)))))
    (i32.mul (local.get $r) (local.get $rowBytes)))

  ;; y = sum over partitions p of W_p x X_(head-p), complex, per bin.
  (func (export "estimate")
    (param $wr i32) (param $wi i32) (param $xr i32) (param $xi i32) (param $head i32)
    (param $k i32) (param $stride i32) (param $yr i32) (param $yi i32)
    (local $rowBytes i32) (local $p i32) (local $j i32) (local $xo i32) (local $wo i32)
    (local $ar v128) (local $ai v128) (local $br v128) (local $bi v128)
    (local.set $rowBytes (i32.shl (local.get $stride) (i32.const 2)))
    (local.set $j (i32.const 0))
    (block $z_done
      (loop $z
        (br_if $z_done (i32.ge_u (local.get $j) (local.get $rowBytes)))
        (v128.store (i32.add (local.get $yr) (local.get $j)) (v128.const f32x4 0 0 0 0))
        (v128.store (i32.add (local.get $yi) (local.get $j)) (v128.const f32x4 0 0 0 0))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br $z)))
    (block $p_done
      (loop $parts
        (br_if $p_done (i32.ge_u (local.get $p) (local.get $k)))
        (local.set $xo
          (call $ring (local.get $head) (local.get $p) (local.get $k) (local.get $rowBytes)))
        (local.set $wo (i32.mul (local.get $p) (local.get $rowBytes)))
        (local.set $j (i32.const 0))
        (block $j_done
          (loop $bins
            (br_if $j_done (i32.ge_u (local.get $j) (local.get $rowBytes)))
            (local.set $ar (v128.load (i32.add (local.get $wr) (i32.add (local.get $wo) (local.get $j)))))
            (local.set $ai (v128.load (i32.add (local.get $wi) (i32.add (local.get $wo) (local.get $j)))))
            (local.set $br (v128.load (i32.add (local.get $xr) (i32.add (local.get $xo) (local.get $j)))))
            (local.set $bi (v128.load (i32.add (local.get $xi) (i32.add (local.get $xo) (local.get $j)))))
            (v128.store (i32.add (local.get $yr) (local.get $j))
              (f32x4.add (v128.load (i32.add (local.get $yr) (local.get $j)))
                (f32x4.sub (f32x4.mul (local.get $ar) (local.get $br))
                  (f32x4.mul (local.get $ai) (local.get $bi)))))
            (v128.store (i32.add (local.get $yi) (local.get $j))
              (f32x4.add (v128.load (i32.add (local.get $yi) (local.get $j)))
                (f32x4.add (f32x4.mul (local.get $ar) (local.get $bi))
                  (f32x4.mul (local.get $ai) (local.get $br)))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $bins)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $parts))))

  ;; W_p += g[p] * conj(X_(head-p)) x E for every partition p (the NLMS step; g holds k f32).
  (func (export "adapt")
    (param $wr i32) (param $wi i32) (param $xr i32) (param $xi i32) (param $head i32)
    (param $k i32) (param $stride i32) (param $er i32) (param $ei i32) (param $g i32)
    (local $rowBytes i32) (local $p i32) (local $j i32) (local $xo i32) (local $wo i32)
    (local $gp v128) (local $ar v128) (local $ai v128) (local $e_r v128) (local $e_i v128)
    (local $a i32)
    (local.set $rowBytes (i32.shl (local.get $stride) (i32.const 2)))
    (block $p_done
      (loop $parts
        (br_if $p_done (i32.ge_u (local.get $p) (local.get $k)))
        (local.set $gp (f32x4.splat
          (f32.load (i32.add (local.get $g) (i32.shl (local.get $p) (i32.const 2))))))
        (local.set $xo
          (call $ring (local.get $head) (local.get $p) (local.get $k) (local.get $rowBytes)))
        (local.set $wo (i32.mul (local.get $p) (local.get $rowBytes)))
        (local.set $j (i32.const 0))
        (block $j_done
          (loop $bins
            (br_if $j_done (i32.ge_u (local.get $j) (local.get $rowBytes)))
            (local.set $ar (v128.load (i32.add (local.get $xr) (i32.add (local.get $xo) (local.get $j)))))
            (local.set $ai (v128.load (i32.add (local.get $xi) (i32.add (local.get $xo) (local.get $j)))))
            (local.set $e_r (v128.load (i32.add (local.get $er) (local.get $j))))
            (local.set $e_i (v128.load (i32.add (local.get $ei) (local.get $j))))
            ;; conj(X) x E = (xr er + xi ei) + i (xr ei - xi er)
            (local.set $a (i32.add (local.get $wr) (i32.add (local.get $wo) (local.get $j))))
            (v128.store (local.get $a) (f32x4.add (v128.load (local.get $a))
              (f32x4.mul (local.get $gp)
                (f32x4.add (f32x4.mul (local.get $ar) (local.get $e_r))
                  (f32x4.mul (local.get $ai) (local.get $e_i))))))
            (local.set $a (i32.add (local.get $wi) (i32.add (local.get $wo) (local.get $j))))
            (v128.store (local.get $a) (f32x4.add (v128.load (local.get $a))
              (f32x4.mul (local.get $gp)
                (f32x4.sub (f32x4.mul (local.get $ar) (local.get $e_i))
                  (f32x4.mul (local.get $ai) (local.get $e_r))))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $bins)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $parts))))

  ;; out[p] = sum over bins of |W_p|^2, for each of the k rows (f32 each).
  (func (export "energies")
    (param $wr i32) (param $wi i32) (param $k i32) (param $stride i32) (param $out i32)
    (local $rowBytes i32) (local $p i32) (local $j i32) (local $o i32)
    (local $acc v128) (local $v v128) (local $w v128)
    (local.set $rowBytes (i32.shl (local.get $stride) (i32.const 2)))
    (block $p_done
      (loop $parts
        (br_if $p_done (i32.ge_u (local.get $p) (local.get $k)))
        (local.set $o (i32.mul (local.get $p) (local.get $rowBytes)))
        (local.set $acc (v128.const f32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (block $j_done
          (loop $bins
            (br_if $j_done (i32.ge_u (local.get $j) (local.get $rowBytes)))
            (local.set $v (v128.load (i32.add (local.get $wr) (i32.add (local.get $o) (local.get $j)))))
            (local.set $w (v128.load (i32.add (local.get $wi) (i32.add (local.get $o) (local.get $j)))))
            (local.set $acc (f32x4.add (local.get $acc)
              (f32x4.add (f32x4.mul (local.get $v) (local.get $v))
                (f32x4.mul (local.get $w) (local.get $w)))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $bins)))
        (f32.store (i32.add (local.get $out) (i32.shl (local.get $p) (i32.const 2)))
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
            (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $parts))))

  ;; Every one of $rows rows of re/im times the row rr/ri, complex, per bin (a phase rotation).
  (func (export "rotate")
    (param $re i32) (param $im i32) (param $rows i32) (param $stride i32) (param $rr i32)
    (param $ri i32)
    (local $rowBytes i32) (local $end i32) (local $o i32) (local $j i32)
    (local $a v128) (local $b v128) (local $c v128) (local $s v128)
    (local.set $rowBytes (i32.shl (local.get $stride) (i32.const 2)))
    (local.set $end (i32.mul (local.get $rows) (local.get $rowBytes)))
    (block $o_done
      (loop $rows_loop
        (br_if $o_done (i32.ge_u (local.get $o) (local.get $end)))
        (local.set $j (i32.const 0))
        (block $j_done
          (loop $bins
            (br_if $j_done (i32.ge_u (local.get $j) (local.get $rowBytes)))
            (local.set $a (v128.load (i32.add (local.get $re) (i32.add (local.get $o) (local.get $j)))))
            (local.set $b (v128.load (i32.add (local.get $im) (i32.add (local.get $o) (local.get $j)))))
            (local.set $c (v128.load (i32.add (local.get $rr) (local.get $j))))
            (local.set $s (v128.load (i32.add (local.get $ri) (local.get $j))))
            (v128.store (i32.add (local.get $re) (i32.add (local.get $o) (local.get $j)))
              (f32x4.sub (f32x4.mul (local.get $a) (local.get $c))
                (f32x4.mul (local.get $b) (local.get $s))))
            (v128.store (i32.add (local.get $im) (i32.add (local.get $o) (local.get $j)))
              (f32x4.add (f32x4.mul (local.get $a) (local.get $s))
                (f32x4.mul (local.get $b) (local.get $c))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $bins)))
        (local.set $o (i32.add (local.get $o) (local.get $rowBytes)))
        (br $rows_loop)))))

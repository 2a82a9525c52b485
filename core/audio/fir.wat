;; Polyphase FIR kernel of the Resampler (core/audio/resample.ts), four taps per instruction
;; (WebAssembly SIMD, f32x4). Source of core/audio/fir_wasm.ts: `deno task wasm` rebuilds it and
;; tests/fir_kernel_test.ts fails when the two drift apart.
;;
;; Memory is owned by core/audio/fir_kernel.ts. Per call:
;;   c     f32[up * taps4]  coefficients, phase-major, each phase padded with zeros to taps4
;;   se    i32[2 * up]      per phase: first and end tap to run, multiples of 4 apart; end =
;;                          first + 1 marks a phase with a single tap (no vector loop for it)
;;   buf   f32[...]         history then input, with 4 spare zeros after it ("widen" writes the
;;                          input from int16 and the zeros)
;;   out   i16[n]           results, rounded to nearest and clamped to int16
;; Output o reads buf[x + k] * c[phase * taps4 + k] for k in [first, end); x and phase start at
;; the given values and step by down / up input samples per output.
(module
  (memory (export "memory") 1)
  ;; int16 samples at $src -> float32 at $dst ($n of them), then four zeros after them (read by
  ;; the padded taps, multiplied by zero). Eight samples per step.
  (func (export "widen") (param $src i32) (param $dst i32) (param $n i32)
    (local $i i32) (local $v v128)
    (block $simd_done
      (loop $simd
        (br_if $simd_done (i32.gt_u (i32.add (local.get $i) (i32.const 8)) (local.get $n)))
        (local.set $v (v128.load align=2
          (i32.add (local.get $src) (i32.shl (local.get $i) (i32.const 1)))))
        (v128.store align=4 (i32.add (local.get $dst) (i32.shl (local.get $i) (i32.const 2)))
          (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $v))))
        (v128.store offset=16 align=4
          (i32.add (local.get $dst) (i32.shl (local.get $i) (i32.const 2)))
          (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $v))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $simd)))
    (block $done
      (loop $rest
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (f32.store (i32.add (local.get $dst) (i32.shl (local.get $i) (i32.const 2)))
          (f32.convert_i32_s (i32.load16_s
            (i32.add (local.get $src) (i32.shl (local.get $i) (i32.const 1))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rest)))
    (v128.store align=4 (i32.add (local.get $dst) (i32.shl (local.get $n) (i32.const 2)))
      (v128.const f32x4 0 0 0 0)))

  (func (export "fir")
    (param $c i32) (param $se i32) (param $taps4 i32) (param $up i32) (param $down i32)
    (param $x i32) (param $phase i32) (param $n i32) (param $buf i32) (param $out i32)
    (local $o i32) (local $stepX i32) (local $stepPhase i32)
    (local $k i32) (local $end i32) (local $cp i32) (local $bp i32)
    (local $p i32) (local $pend i32) (local $delta i32)
    (local $acc v128) (local $acc1 v128) (local $sum f32)
    (local.set $stepX (i32.div_u (local.get $down) (local.get $up)))
    (local.set $stepPhase (i32.rem_u (local.get $down) (local.get $up)))
    (block $done
      (loop $outputs
        (br_if $done (i32.ge_u (local.get $o) (local.get $n)))
        ;; cp, bp: byte addresses of tap 0 of this phase and of input x
        (local.set $cp (i32.add (local.get $c)
          (i32.shl (i32.mul (local.get $phase) (local.get $taps4)) (i32.const 2))))
        (local.set $bp (i32.add (local.get $buf) (i32.shl (local.get $x) (i32.const 2))))
        (local.set $k (i32.load (i32.add (local.get $se) (i32.shl (local.get $phase) (i32.const 3)))))
        (local.set $end (i32.load offset=4
          (i32.add (local.get $se) (i32.shl (local.get $phase) (i32.const 3)))))
        (if (i32.eq (i32.sub (local.get $end) (local.get $k)) (i32.const 1))
          (then
            ;; a phase with a single tap (the centre of a centered design): one multiply
            (local.set $sum (f32.mul
              (f32.load (i32.add (local.get $cp) (i32.shl (local.get $k) (i32.const 2))))
              (f32.load (i32.add (local.get $bp) (i32.shl (local.get $k) (i32.const 2)))))))
          (else
            ;; p walks the coefficients, p + delta the input; two running sums hide the add latency
            (local.set $p (i32.add (local.get $cp) (i32.shl (local.get $k) (i32.const 2))))
            (local.set $pend (i32.add (local.get $cp) (i32.shl (local.get $end) (i32.const 2))))
            (local.set $delta (i32.sub (local.get $bp) (local.get $cp)))
            (local.set $acc (v128.const f32x4 0 0 0 0))
            (local.set $acc1 (v128.const f32x4 0 0 0 0))
            (block $pairs_done
              (loop $pairs
                (br_if $pairs_done
                  (i32.gt_u (i32.add (local.get $p) (i32.const 32)) (local.get $pend)))
                (local.set $acc (f32x4.add (local.get $acc)
                  (f32x4.mul (v128.load align=4 (local.get $p))
                    (v128.load align=4 (i32.add (local.get $p) (local.get $delta))))))
                (local.set $acc1 (f32x4.add (local.get $acc1)
                  (f32x4.mul (v128.load offset=16 align=4 (local.get $p))
                    (v128.load offset=16 align=4 (i32.add (local.get $p) (local.get $delta))))))
                (local.set $p (i32.add (local.get $p) (i32.const 32)))
                (br $pairs)))
            (if (i32.lt_u (local.get $p) (local.get $pend))
              (then
                (local.set $acc (f32x4.add (local.get $acc)
                  (f32x4.mul (v128.load align=4 (local.get $p))
                    (v128.load align=4 (i32.add (local.get $p) (local.get $delta))))))))
            (local.set $acc (f32x4.add (local.get $acc) (local.get $acc1)))
            (local.set $sum (f32.add
              (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
              (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))))
        (i32.store16
          (i32.add (local.get $out) (i32.shl (local.get $o) (i32.const 1)))
          (i32.trunc_sat_f32_s
            (f32.min (f32.const 32767) (f32.max (f32.const -32768) (f32.nearest (local.get $sum))))))
        (local.set $x (i32.add (local.get $x) (local.get $stepX)))
        (local.set $phase (i32.add (local.get $phase) (local.get $stepPhase)))
        (if (i32.ge_u (local.get $phase) (local.get $up))
          (then
            (local.set $phase (i32.sub (local.get $phase) (local.get $up)))
            (local.set $x (i32.add (local.get $x) (i32.const 1)))))
        (local.set $o (i32.add (local.get $o) (i32.const 1)))
        (br $outputs)))))

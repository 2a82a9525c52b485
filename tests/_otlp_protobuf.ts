/**
 * Decoding of OTLP metrics in the protobuf encoding (`application/x-protobuf`, what Deno sends by
 * default with `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`) into the protobuf JSON mapping the
 * receiver already reads, so one reader serves both encodings. Field numbers from
 * opentelemetry-proto: collector/metrics/v1/metrics_service.proto, metrics/v1/metrics.proto,
 * common/v1/common.proto, resource/v1/resource.proto.
 */

/** One field of a message: its number, wire type and raw value. */
interface Field {
  no: number;
  wire: number;
  /** Varint value (wire 0). */
  varint?: bigint;
  /** 8 bytes (wire 1) or 4 bytes (wire 5), little endian. */
  fixed?: DataView;
  /** Length-delimited bytes (wire 2). */
  bytes?: Uint8Array;
}

function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++];
      if (b === undefined) throw new Error("truncated varint");
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ no, wire, varint: varint() });
    else if (wire === 1 || wire === 5) {
      const n = wire === 1 ? 8 : 4;
      out.push({ no, wire, fixed: new DataView(buf.buffer, buf.byteOffset + i, n) });
      i += n;
    } else if (wire === 2) {
      const n = Number(varint());
      out.push({ no, wire, bytes: buf.subarray(i, i + n) });
      i += n;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b ?? new Uint8Array());
const u64 = (f: Field) => f.fixed!.getBigUint64(0, true);
const f64 = (f: Field) => f.fixed!.getFloat64(0, true);
const all = (fs: Field[], no: number) => fs.filter((f) => f.no === no);
const one = (fs: Field[], no: number) => fs.find((f) => f.no === no);

/** Packed (or repeated) fixed64 / double values of field `no`. */
function packed(fs: Field[], no: number, read: (v: DataView, at: number) => number): number[] {
  const out: number[] = [];
  for (const f of all(fs, no)) {
    if (f.fixed) out.push(read(f.fixed, 0));
    else if (f.bytes) {
      const v = new DataView(f.bytes.buffer, f.bytes.byteOffset, f.bytes.length);
      for (let at = 0; at + 8 <= f.bytes.length; at += 8) out.push(read(v, at));
    }
  }
  return out;
}

function anyValue(buf: Uint8Array): Record<string, unknown> {
  const fs = fields(buf);
  const f = fs[0];
  if (f === undefined) return {};
  switch (f.no) {
    case 1:
      return { stringValue: text(f.bytes) };
    case 2:
      return { boolValue: f.varint !== 0n };
    case 3:
      return { intValue: String(BigInt.asIntN(64, f.varint!)) };
    case 4:
      return { doubleValue: f64(f) };
    case 5:
      return { arrayValue: { values: all(fields(f.bytes!), 1).map((v) => anyValue(v.bytes!)) } };
    default:
      return {};
  }
}

function keyValues(fs: Field[], no: number) {
  return all(fs, no).map((kv) => {
    const k = fields(kv.bytes!);
    return { key: text(one(k, 1)?.bytes), value: anyValue(one(k, 2)?.bytes ?? new Uint8Array()) };
  });
}

function numberPoint(buf: Uint8Array) {
  const fs = fields(buf);
  const dbl = one(fs, 4);
  const int = one(fs, 6);
  return {
    attributes: keyValues(fs, 7),
    timeUnixNano: String(u64(one(fs, 3)!)),
    ...(dbl ? { asDouble: f64(dbl) } : {}),
    ...(int ? { asInt: String(int.fixed!.getBigInt64(0, true)) } : {}),
  };
}

function histogramPoint(buf: Uint8Array) {
  const fs = fields(buf);
  const sum = one(fs, 5);
  return {
    attributes: keyValues(fs, 9),
    timeUnixNano: String(u64(one(fs, 3)!)),
    count: String(u64(one(fs, 4)!)),
    ...(sum ? { sum: f64(sum) } : {}),
    bucketCounts: packed(fs, 6, (v, at) => Number(v.getBigUint64(at, true))),
    explicitBounds: packed(fs, 7, (v, at) => v.getFloat64(at, true)),
  };
}

function metric(buf: Uint8Array) {
  const fs = fields(buf);
  const out: Record<string, unknown> = {
    name: text(one(fs, 1)?.bytes),
    description: text(one(fs, 2)?.bytes),
    unit: text(one(fs, 3)?.bytes),
  };
  const gauge = one(fs, 5);
  const sum = one(fs, 7);
  const hist = one(fs, 9);
  if (gauge) {
    out.gauge = { dataPoints: all(fields(gauge.bytes!), 1).map((p) => numberPoint(p.bytes!)) };
  }
  if (sum) {
    const s = fields(sum.bytes!);
    out.sum = {
      dataPoints: all(s, 1).map((p) => numberPoint(p.bytes!)),
      aggregationTemporality: Number(one(s, 2)?.varint ?? 0n),
      isMonotonic: one(s, 3)?.varint === 1n,
    };
  }
  if (hist) {
    const h = fields(hist.bytes!);
    out.histogram = {
      dataPoints: all(h, 1).map((p) => histogramPoint(p.bytes!)),
      aggregationTemporality: Number(one(h, 2)?.varint ?? 0n),
    };
  }
  return out;
}

/** An ExportMetricsServiceRequest in protobuf, as its protobuf JSON mapping. */
export function decodeMetricsRequest(body: Uint8Array): unknown {
  return {
    resourceMetrics: all(fields(body), 1).map((rm) => {
      const r = fields(rm.bytes!);
      const resource = one(r, 1);
      return {
        resource: { attributes: resource ? keyValues(fields(resource.bytes!), 1) : [] },
        scopeMetrics: all(r, 2).map((sm) => {
          const s = fields(sm.bytes!);
          const scope = one(s, 1);
          return {
            scope: { name: scope ? text(one(fields(scope.bytes!), 1)?.bytes) : "" },
            metrics: all(s, 2).map((m) => metric(m.bytes!)),
          };
        }),
      };
    }),
  };
}

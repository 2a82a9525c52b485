/**
 * The server worker as the offline bench pack bundles it (tools/bench_pack.ts -> `worker.js`):
 * the probe first (its timer count must wrap the timers before the server makes any), then the
 * worker itself. The bundled capacity server names this same file as the workers' instrument, so
 * the probe's trace patches the classes this bundle's server runs (a separate bundle of the probe
 * would carry copies of them).
 * @module
 */

export { probe } from "./capacity_worker_probe.ts";
import "../server/worker.ts";

/**
 * Reading a cascaded provider's options from the config with clear errors: a wrong type names
 * the provider and the option, a missing key names the variable that should hold it.
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import type { ServiceOptions } from "./service_options.ts";

/** A non-negative number of ms from the config's options, or `fallback`. */
export function msOption(
  provider: string,
  o: Record<string, unknown>,
  key: string,
  fallback: number,
): number {
  const v = o[key];
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !(v >= 0)) {
    throw new FlowcatError("config", `${provider}: options.${key} must be a number of ms >= 0`);
  }
  return v;
}

/** The API key, or a `config` error naming the variable that should hold it. */
export function requireKey(opts: ServiceOptions, envName: string): string {
  if (!opts.apiKey) {
    throw new FlowcatError("config", `${opts.provider}: missing API key (${envName})`);
  }
  return opts.apiKey;
}

/** A string option from the config, or `undefined`; anything else is a `config` error. */
export function stringOption(opts: ServiceOptions, key: string): string | undefined {
  const v = opts.options?.[key];
  if (v === undefined) return undefined;
  if (typeof v !== "string") {
    throw new FlowcatError("config", `${opts.provider}: options.${key} must be a string`);
  }
  return v;
}

/** A number option from the config, or `undefined`; anything else is a `config` error. */
export function numberOption(opts: ServiceOptions, key: string): number | undefined {
  const v = opts.options?.[key];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw new FlowcatError("config", `${opts.provider}: options.${key} must be a number`);
  }
  return v;
}

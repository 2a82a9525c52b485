/**
 * What the registry and the AWS clients agree on: the operator's variables (credentials and
 * region), each service's signing name, endpoint and defaults. A leaf module with no client
 * code, so the registry can import it without loading any AWS client.
 *
 * The region comes from the provider's `options.region` in the config, else `AWS_REGION`, else
 * `us-east-1`; permissions are derived from the same rule, so the server may dial exactly the
 * region's host.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { EnvReader, ProviderEnvVar } from "../provider_types.ts";
import type { ServiceOptions } from "../service_options.ts";
import type { AwsCredentials } from "./sigv4.ts";

/** Access key id variable. */
export const AWS_ACCESS_KEY_ID_ENV = "AWS_ACCESS_KEY_ID";
/** Secret access key variable. */
export const AWS_SECRET_ACCESS_KEY_ENV = "AWS_SECRET_ACCESS_KEY";
/** Session token variable (temporary credentials). */
export const AWS_SESSION_TOKEN_ENV = "AWS_SESSION_TOKEN";
/** Region variable. */
export const AWS_REGION_ENV = "AWS_REGION";
/** Region used when neither the config nor `AWS_REGION` names one. */
export const AWS_DEFAULT_REGION = "us-east-1";

/** The variables every AWS provider reads, as the AWS SDKs name them. */
export const AWS_ENV: readonly ProviderEnvVar[] = Object.freeze([
  { name: AWS_ACCESS_KEY_ID_ENV, required: true, why: "AWS access key id" },
  { name: AWS_SECRET_ACCESS_KEY_ENV, required: true, why: "AWS secret access key" },
  { name: AWS_SESSION_TOKEN_ENV, required: false, why: "session token of temporary credentials" },
  { name: AWS_REGION_ENV, required: false, why: "AWS region when the config names none" },
]);

/** One AWS service as a client dials it. */
export interface AwsService {
  /** Name in SigV4 credential scopes. */
  signingName: string;
  /** `host:port` of the service in `region`. */
  host(region: string): string;
}

/** Amazon Transcribe streaming (WebSocket on port 8443). */
export const TRANSCRIBE: AwsService = {
  signingName: "transcribe",
  host: (r) => `transcribestreaming.${r}.amazonaws.com:8443`,
};
/** Amazon Bedrock runtime (Converse, ConverseStream). */
export const BEDROCK: AwsService = {
  signingName: "bedrock",
  host: (r) => `bedrock-runtime.${r}.amazonaws.com:443`,
};
/** Amazon Polly. */
export const POLLY: AwsService = {
  signingName: "polly",
  host: (r) => `polly.${r}.amazonaws.com:443`,
};

/** Nova Sonic model when the config names none (speech to speech). */
export const NOVA_SONIC_DEFAULT_MODEL = "amazon.nova-2-sonic-v1:0";
/** Nova Sonic voice when the config names none. */
export const NOVA_SONIC_DEFAULT_VOICE = "matthew";

/** Bedrock model when the config names none: fast and text-only, as a voice turn wants. */
export const BEDROCK_DEFAULT_MODEL = "amazon.nova-lite-v1:0";
/** Polly voice when the config names none. */
export const POLLY_DEFAULT_VOICE = "Joanna";
/** Polly engine when the config names none. */
export const POLLY_DEFAULT_ENGINE = "neural";
/** Transcribe language when the config names none. */
export const TRANSCRIBE_DEFAULT_LANGUAGE = "en-US";

const REGION_PATTERN = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/;

/**
 * The region for provider `options` and the environment (see the module doc). A value that is
 * not a region name is a `config` error: it becomes part of a host name.
 */
export function awsRegion(options: Readonly<Record<string, unknown>>, env: EnvReader): string {
  const configured = options.region;
  const region = typeof configured === "string" && configured !== ""
    ? configured
    : env(AWS_REGION_ENV) || AWS_DEFAULT_REGION;
  if (!REGION_PATTERN.test(region)) {
    throw new FlowcatError("config", `AWS region "${region}" is not a region name (us-east-1)`);
  }
  return region;
}

/** `hostsFor` of a registry row: the service's host in the configured region. */
export function awsHostsFor(
  service: AwsService,
): (options: Readonly<Record<string, unknown>>, env: EnvReader) => string[] {
  return (options, env) => [service.host(awsRegion(options, env))];
}

/** What an AWS client needs from its options: credentials and region. */
export interface AwsAccess {
  /** The signing credentials. */
  credentials: AwsCredentials;
  /** The region. */
  region: string;
}

/**
 * Credentials and region from service options (`credentials` holds the operator's `AWS_*`
 * variables); missing keys are a `config` error naming the variables, never a value.
 */
export function awsAccess(opts: ServiceOptions): AwsAccess {
  const vars = opts.credentials ?? {};
  const accessKeyId = vars[AWS_ACCESS_KEY_ID_ENV];
  const secretAccessKey = vars[AWS_SECRET_ACCESS_KEY_ENV];
  if (!accessKeyId || !secretAccessKey) {
    throw new FlowcatError(
      "config",
      `${opts.provider}: missing AWS credentials (${AWS_ACCESS_KEY_ID_ENV}, ` +
        `${AWS_SECRET_ACCESS_KEY_ENV})`,
    );
  }
  const sessionToken = vars[AWS_SESSION_TOKEN_ENV];
  return {
    credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) },
    region: awsRegion(opts.options ?? {}, (n) => vars[n]),
  };
}

/**
 * RFC 3261 §17 transaction timers (Table 4) and the pure retransmission schedules the
 * transaction layer follows over UDP. No clocks here: callers turn delays into timeouts.
 *
 * @example
 * ```ts
 * const t = timerValues();
 * retransmitSchedule("invite-client"); // [500, 1500, 3500, 7500, 15500, 31500]; Timer B at 32000
 * ```
 * @module
 */

/** RTT estimate, ms. */
export const T1 = 500;
/** Maximum retransmit interval for non-INVITE requests and INVITE responses, ms. */
export const T2 = 4000;
/** Maximum time a message stays in the network, ms. */
export const T4 = 5000;

/** Base timer values (tunable for tests or high-latency links). */
export interface BaseTimers {
  /** RTT estimate, ms (default 500). */
  T1: number;
  /** Maximum retransmit interval for non-INVITE requests and INVITE responses, ms (default 4000). */
  T2: number;
  /** Maximum time a message stays in the network, ms (default 5000). */
  T4: number;
}

/** The defaults of RFC 3261 Table 4. */
export const DEFAULT_TIMERS: Readonly<BaseTimers> = Object.freeze({ T1, T2, T4 });

/** Every timer of RFC 3261 Table 4, in ms (0 means "fires at once" on reliable transports). */
export interface TimerValues extends BaseTimers {
  /** INVITE client: first retransmit interval (doubles each time). */
  A: number;
  /** INVITE client: transaction timeout. */
  B: number;
  /** INVITE client: wait time in Completed for response retransmissions (>= 32 s on UDP). */
  D: number;
  /** Non-INVITE client: first retransmit interval (doubles up to T2). */
  E: number;
  /** Non-INVITE client: transaction timeout. */
  F: number;
  /** INVITE server: first final-response retransmit interval (doubles up to T2). */
  G: number;
  /** INVITE server: wait for ACK. */
  H: number;
  /** INVITE server: wait in Confirmed for ACK retransmissions. */
  I: number;
  /** Non-INVITE server: wait in Completed for request retransmissions. */
  J: number;
  /** Non-INVITE client: wait in Completed for response retransmissions. */
  K: number;
}

/**
 * All Table 4 timers from the base values. `reliable` (TCP/TLS) zeroes D, I, J and K, and
 * retransmissions (A, E, G) do not apply there.
 *
 * @example
 * ```ts
 * timerValues().B; // 32000 (64*T1)
 * ```
 */
export function timerValues(base: BaseTimers = DEFAULT_TIMERS, reliable = false): TimerValues {
  const { T1, T2, T4 } = base;
  return {
    T1,
    T2,
    T4,
    A: T1,
    B: 64 * T1,
    D: reliable ? 0 : Math.max(32000, 64 * T1),
    E: T1,
    F: 64 * T1,
    G: T1,
    H: 64 * T1,
    I: reliable ? 0 : T4,
    J: reliable ? 0 : 64 * T1,
    K: reliable ? 0 : T4,
  };
}

/**
 * Who retransmits:
 * - `invite-client`: Timer A, T1 doubling without cap, until any response (timeout Timer B);
 * - `non-invite-client`: Timer E, T1 doubling capped at T2 (timeout Timer F);
 * - `non-invite-proceeding`: Timer E after a provisional response, every T2;
 * - `invite-server`: Timer G for a non-2xx final response, doubling capped at T2 (Timer H);
 * - `2xx`: the UAS core re-sending 200 OK until ACK, same as Timer G (gives up at 64*T1).
 */
export type RetransmitKind =
  | "invite-client"
  | "non-invite-client"
  | "non-invite-proceeding"
  | "invite-server"
  | "2xx";

/** The first retransmit interval of `kind`. */
export function firstInterval(kind: RetransmitKind, base: BaseTimers = DEFAULT_TIMERS): number {
  return kind === "non-invite-proceeding" ? base.T2 : base.T1;
}

/**
 * The interval after `current` (the doubling rule): INVITE client doubles without cap; the
 * others double up to T2; a non-INVITE transaction in Proceeding stays at T2.
 *
 * @example
 * ```ts
 * nextInterval("non-invite-client", 4000); // 4000
 * nextInterval("invite-client", 4000); // 8000
 * ```
 */
export function nextInterval(
  kind: RetransmitKind,
  current: number,
  base: BaseTimers = DEFAULT_TIMERS,
): number {
  if (kind === "invite-client") return current * 2;
  if (kind === "non-invite-proceeding") return base.T2;
  return Math.min(current * 2, base.T2);
}

/** How long `kind` keeps retransmitting before the transaction times out (64*T1). */
export function giveUpAfter(_kind: RetransmitKind, base: BaseTimers = DEFAULT_TIMERS): number {
  return 64 * base.T1;
}

/**
 * Times (ms after the first transmission) of every retransmission of `kind` that happens
 * before the 64*T1 timeout.
 *
 * @example
 * ```ts
 * retransmitSchedule("non-invite-client").length; // 10 (11 transmissions in total)
 * ```
 */
export function retransmitSchedule(
  kind: RetransmitKind,
  base: BaseTimers = DEFAULT_TIMERS,
): number[] {
  const out: number[] = [];
  const limit = giveUpAfter(kind, base);
  let interval = firstInterval(kind, base);
  for (let at = interval; at < limit; at += interval) {
    out.push(at);
    interval = nextInterval(kind, interval, base);
  }
  return out;
}

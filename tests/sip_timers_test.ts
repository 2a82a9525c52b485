import assert from "node:assert/strict";
import {
  firstInterval,
  nextInterval,
  retransmitSchedule,
  T1,
  T2,
  T4,
  timerValues,
} from "../telephony/sip/txn_timers.ts";

Deno.test("RFC 3261 Table 4 values over UDP and reliable transports", () => {
  assert.deepEqual([T1, T2, T4], [500, 4000, 5000]);
  const t = timerValues();
  assert.deepEqual(
    [t.A, t.B, t.D, t.E, t.F, t.G, t.H, t.I, t.J, t.K],
    [500, 32000, 32000, 500, 32000, 500, 32000, 5000, 32000, 5000],
  );
  const r = timerValues(undefined, true);
  assert.deepEqual([r.D, r.I, r.J, r.K], [0, 0, 0, 0]);
  assert.equal(r.B, 32000, "Timer B does not depend on the transport");
  const fast = timerValues({ T1: 100, T2: 800, T4: 1000 });
  assert.deepEqual([fast.B, fast.D, fast.H], [6400, 32000, 6400], "Timer D stays >= 32 s on UDP");
});

Deno.test("doubling rule: INVITE uncapped, the rest capped at T2, Proceeding stays at T2", () => {
  assert.equal(nextInterval("invite-client", 4000), 8000);
  assert.equal(nextInterval("non-invite-client", 2000), 4000);
  assert.equal(nextInterval("non-invite-client", 4000), 4000);
  assert.equal(nextInterval("invite-server", 4000), 4000);
  assert.equal(nextInterval("2xx", 1000), 2000);
  assert.equal(firstInterval("non-invite-proceeding"), 4000);
  assert.equal(nextInterval("non-invite-proceeding", 4000), 4000);
});

Deno.test("retransmission schedules until 64*T1", () => {
  // INVITE: T1, 2T1, 4T1 ... -> sent at 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s; Timer B at 32 s.
  assert.deepEqual(retransmitSchedule("invite-client"), [500, 1500, 3500, 7500, 15500, 31500]);
  // Non-INVITE: 500, 1000, 2000, 4000, 4000, ... -> 11 transmissions in all.
  assert.deepEqual(
    retransmitSchedule("non-invite-client"),
    [500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500],
  );
  assert.deepEqual(retransmitSchedule("2xx"), retransmitSchedule("invite-server"));
  assert.deepEqual(retransmitSchedule("non-invite-proceeding").slice(0, 3), [4000, 8000, 12000]);
  const scaled = retransmitSchedule("invite-client", { T1: 50, T2: 400, T4: 500 });
  assert.deepEqual(scaled, [50, 150, 350, 750, 1550, 3150]);
});

/** The playground's transcript event: the line's index as its id, and the interruption mark. */

import assert from "node:assert/strict";
import { transcriptEvent } from "../server/transcript_event.ts";

Deno.test("a transcript event names its line by index and marks a cut line", () => {
  assert.deepEqual(transcriptEvent({ role: "user", text: "Hi", atMs: 10 }, 1), {
    type: "transcript",
    id: 1,
    role: "user",
    text: "Hi",
    final: true,
  });
  assert.deepEqual(
    transcriptEvent({ role: "bot", text: "Sure, let me", atMs: 900, interrupted: true }, 2),
    {
      type: "transcript",
      id: 2,
      role: "bot",
      text: "Sure, let me",
      final: true,
      interrupted: true,
    },
  );
});

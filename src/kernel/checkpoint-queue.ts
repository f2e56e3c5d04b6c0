// How the kernel hands its checkpoints to the observer: serialized once, one write at a time, latest wins.
//
// A resume needs the newest state, not every state in between: while one checkpoint is being written, the
// ones taken meanwhile wait, and each new one replaces the one waiting. The kernel awaits `written()` where a
// checkpoint must be durable before it goes on (the write-ahead one, before any tool acts on the model's
// decision); elsewhere writes overlap with the run.
import type { ChatMessage } from './messages.js';
import type { Checkpoint, RunState } from './types.js';

/** The state as JSON, taken when the checkpoint was made; `state` parses it only for whoever asks. */
class SerializedCheckpoint implements Checkpoint {
  private parsed: RunState | undefined;
  constructor(readonly json: string) {}
  get state(): RunState {
    this.parsed ??= JSON.parse(this.json) as RunState;
    return this.parsed;
  }
}

export class CheckpointQueue {
  private readonly serializer = new StateSerializer();
  private waiting: Checkpoint | null = null;
  private writing: Promise<void> | null = null;

  /** `write` must not throw (the kernel logs and swallows an observer's failure). */
  constructor(private readonly write: (checkpoint: Checkpoint) => Promise<void>) {}

  /** Takes a checkpoint of `state` now (the JSON is the snapshot: later changes to the state do not leak in). */
  push(state: RunState): void {
    this.waiting = new SerializedCheckpoint(this.serializer.json(state));
    this.writing ??= this.drain();
  }

  /** Resolves once every checkpoint pushed so far is written or replaced by a newer one that is. */
  async written(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    for (let next = this.waiting; next; next = this.waiting) {
      this.waiting = null;
      await this.write(next);
    }
    this.writing = null;
  }
}

/**
 * `JSON.stringify(state)` for the successive states of one run, each message of the transcript serialized once: every
 * checkpoint holds the whole transcript, so serializing it anew each time made a run's checkpoints cost the square
 * of its length. The messages of the last state serialized are remembered with their JSON; a message is never
 * changed in place (a cleared result is a new message), so the same message at the same place has the same JSON.
 * The transcript goes last in the object, which only its key order tells.
 */
export class StateSerializer {
  private messages: readonly ChatMessage[] = [];
  private parts: readonly string[] = [];

  json(state: RunState): string {
    const { history, ...rest } = state;
    const parts = history.map((message, i) =>
      this.messages[i] === message ? this.parts[i]! : JSON.stringify(message),
    );
    // A copy: the kernel appends to its transcript in place, and may replace a message at its place.
    this.messages = [...history];
    this.parts = parts;
    const transcript = `"history":[${parts.join(',')}]`;
    const head = JSON.stringify(rest);
    return head === '{}' ? `{${transcript}}` : `${head.slice(0, -1)},${transcript}}`;
  }
}

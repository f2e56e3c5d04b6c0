// A side effect whose outcome cannot be known (an email that may or may not have gone out): what a run's result
// lists, and what a tool's UncertainOutcome reports. Its own module, so the tool port and the runner need not
// import the result types (which import the protocols, which import the runner).
/** A side effect of a tool call that may or may not have happened. */
export interface UncertainEffect {
  tool: string;
  /** The call's stable key (run id, step, position). */
  callKey: string;
  /** What the effect was, e.g. `email to ada@example.com (message-id <…>)`. */
  what: string;
  /** Why its outcome is not known. */
  why: string;
}

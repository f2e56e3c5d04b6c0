// Settles the one question exactly-once email cannot answer on its own: did a send that crashed midway reach
// the mail system? The Message-ID of every attempt of a call is the same, so a mail system that can be
// searched by Message-ID (a provider's message API, or the demo's sink) answers it. Without one, the tool
// does not resend: at most once wins.
export interface DeliveryLookup {
  /** True when the mail system has a message with this Message-ID. Throws when it cannot tell. */
  delivered(messageId: string, signal?: AbortSignal): Promise<boolean>;
}

/** Asks `GET <url>?message-id=<id>`, which answers `{"delivered": true|false}` (the demo's sink does). */
export function httpDeliveryLookup(url: string, timeoutMs = 5_000): DeliveryLookup {
  return {
    async delivered(messageId, signal) {
      const target = new URL(url);
      target.searchParams.set('message-id', messageId);
      const timeout = AbortSignal.timeout(timeoutMs);
      const response = await fetch(target, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
      if (!response.ok) throw new Error(`the delivery lookup answered ${response.status}`);
      const body = (await response.json()) as { delivered?: unknown };
      if (typeof body.delivered !== 'boolean') throw new Error('the delivery lookup gave no answer');
      return body.delivered;
    },
  };
}
